"""The committed opcode coverage table (results/emulator/opcode-coverage.json, written by tools/opcode_coverage.py)
against the emulator as it is now: every opcode IREE 3.13 emitted over the grid decodes or is refused with a
reason, the table's statuses agree with the decoders (a removed decoder or a newly refused opcode shows up here
until the table is regenerated), it holds the tool's whole grid, and no point of it FAILs. No compile, no
emulation: reading one file.
"""

import json
from pathlib import Path

import pytest

import pipelines.emulator  # noqa: F401  (registers every instruction family's decoders)
from pipelines.emulator.machine import DECODERS, REFUSED
from tools.opcode_coverage import grid

TABLE = Path(__file__).resolve().parents[2] / "results" / "emulator" / "opcode-coverage.json"


@pytest.fixture(scope="module")
def table() -> dict:
    return json.loads(TABLE.read_text())


def decodes(opcode: str) -> bool:
    """A decoder exists; a gfx11 dual-issue half ('v_dual_add_f32') decodes as its e32 VALU form."""
    if opcode.startswith("v_dual_"):
        return "v_dual" in DECODERS and f"v_{opcode.removeprefix('v_dual_')}_e32" in DECODERS
    return opcode in DECODERS


def test_every_opcode_decodes_or_is_refused_with_a_reason(table):
    unaccounted = [op for op in table["opcodes"] if not decodes(op) and not REFUSED.get(op, "").strip()]
    assert not unaccounted, f"opcodes IREE emits that neither decode nor are refused: {unaccounted}"


def test_the_table_agrees_with_the_decoders(table):
    for opcode, entry in table["opcodes"].items():
        status = "refused" if opcode in REFUSED else "implemented" if decodes(opcode) else "missing"
        assert entry["status"] == status, (f"{opcode} is {status} now but the table says {entry['status']}; "
                                           "regenerate it with tools/opcode_coverage.py")
        assert entry["points"], opcode


def test_the_table_holds_the_whole_grid(table):
    assert [row["name"] for row in table["points"]] == [p.name for p in grid()]
    assert table["command"].startswith("python tools/opcode_coverage.py")


def test_no_point_fails_and_each_refusal_is_one_sentence(table):
    for row in table["points"]:
        assert row["compile"] in ("ok", "refused"), (row["name"], row["compile_message"])
        assert row["emulation"] != "FAIL", (row["name"], row["message"])
        if row["compile"] == "ok":
            assert row["emulation"] in ("PASS", "REFUSED"), row["name"]
        refusal = row["message"] if row["emulation"] == "REFUSED" else row["compile_message"] \
            if row["compile"] == "refused" else None
        if refusal is not None:
            assert refusal.endswith(".") and "\n" not in refusal and "Traceback" not in refusal, (row["name"], refusal)
    assert table["counts"]["FAIL"] == 0 and table["counts"]["PASS"] > 0


def test_the_grid_holds_the_held_out_skinny_kernels(table):
    """Decode sizes (M = 1-32, NN, NT and TN, every input type) are in the grid, and what IREE's default emits there
    is covered: its sparse MFMAs (VDMFMA, M = 5-8 with N and K multiples of 256) on gfx942 and on gfx950 (TN), on
    points that PASS."""
    skinny = {name for name, (_, m, _, _) in table["shapes"].items() if m <= 32}
    assert len(skinny) >= 5 and any(table["shapes"][s][1] == 32 for s in skinny)
    sparse = {op: entry for op, entry in table["opcodes"].items() if op.startswith("v_smfmac_")}
    assert {"v_smfmac_f32_16x16x32_bf16", "v_smfmac_f32_16x16x32_f16"} <= set(sparse)
    assert {"gfx942", "gfx950"} <= set(sparse["v_smfmac_f32_16x16x32_bf16"]["targets"])
    rows = {row["name"]: row for row in table["points"]}
    for entry in sparse.values():
        assert entry["status"] == "implemented" and all(rows[p]["emulation"] == "PASS" for p in entry["points"])
