"""The CPU emulator of AMD kernels: compiled GEMMs match float64, planted concurrency faults are caught, the LDS
bank-conflict counter sees the swizzle, and the CLI reports all of it.

Kernels are compiled once per session into a temporary folder (about a second each) and emulated with seeded
inputs. IREE's own kernels are correct on hardware, so a match here also validates the emulator's lane layouts.
"""

import dataclasses
import re
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.emulator import EmulatorError, emulate_gemm
from pipelines.emulator.isa import Reg, parse_instruction
from pipelines.routes.ukernel import UkernelRoute

UKERNEL = UkernelRoute.name  # the route's name, as a job names it


def gemm(target, dtype, shape, pipeline="default", *extra):
    return ("--target", target, "--dtype", dtype, "--shape", shape, "--pipeline", pipeline, *extra)


def isa_text(folder: Path) -> str:
    files = list((folder / "dump").glob("*.rocmasm"))
    assert len(files) == 1
    return files[0].read_text()


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected exactly one {old!r} in the kernel"
    return text.replace(old, new)


def assert_matches(result):
    assert result.unwritten == 0
    assert result.max_rel_error <= result.tolerance, result.summary()
    assert not result.hazards, result.summary()


DEFAULTS = [(t, d) for t, dtypes in (("gfx942", ("bf16", "f16", "f8e4m3fnuz")), ("gfx950", ("bf16", "f16", "f8e4m3fn")),
                                     ("gfx1151", ("bf16", "f16"))) for d in dtypes]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["256x256x256", "320x448x192"])
@pytest.mark.parametrize("target, dtype", DEFAULTS)
def test_iree_default_matches_float64(compiled, target, dtype, shape):
    result = emulate_gemm(compiled(*gemm(target, dtype, shape)), seed=1)
    assert_matches(result)
    assert result.mma_count > 0 and result.barrier_count > 0


@pytest.mark.slow
@pytest.mark.parametrize("flags", [
    gemm("gfx942", "bf16", "256x256x256", "default", "--layout", "nt"),
    gemm("gfx942", "bf16", "256x256x256", "default", "--layout", "tn"),
    gemm("gfx942", "f8e5m2fnuz", "320x448x192"),                                     # bf8 MFMA, FNUZ
    gemm("gfx950", "f8e5m2", "320x448x192"),                                         # 32x32x64 f8f6f4, OCP bf8
    gemm("gfx942", "bf16", "512x512x512", "tuned", "--mma", "MFMA_F32_32x32x8_BF16"),
    gemm("gfx942", "bf16", "2x256x256x128"),                                         # batch_matmul
], ids=["gfx942-nt", "gfx942-tn", "gfx942-bf8", "gfx950-bf8-32x32", "gfx942-32x32x8", "gfx942-batch"])
def test_layouts_and_intrinsics_match_float64(compiled, flags):
    assert_matches(emulate_gemm(compiled(*flags)))


@pytest.mark.slow
@pytest.mark.parametrize("flags", [
    gemm("gfx942", "bf16", "512x512x512", "tuned"),
    gemm("gfx942", "f8e4m3fnuz", "512x512x512", "tuned"),
    gemm("gfx950", "bf16", "512x512x512", "tuned"),        # direct-to-LDS loads (buffer_load ... lds, M0)
    gemm("gfx950", "f8e4m3fn", "512x512x512", "tuned"),
    gemm("gfx1151", "bf16", "256x256x256", "tuned"),
], ids=["gfx942-bf16", "gfx942-fp8", "gfx950-bf16-dma", "gfx950-fp8-dma", "gfx1151-bf16"])
def test_tuned_matches_float64(compiled, flags):
    result = emulate_gemm(compiled(*flags))
    assert_matches(result)
    if "gfx950" in flags:
        assert result.mix.get("buffer_load_dwordx4", 0) > 0 and "ds_write_b128" not in result.mix


@pytest.mark.slow
@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1151"])
def test_auto_on_an_unaligned_shape_matches_float64(compiled, target):
    """`auto` pads 320x448x192 to its tile. On gfx1151 its K step of 16 makes LLVM fold a negative scalar into
    the buffer offset of row 0's loads, which only the hardware's 32-bit offset arithmetic brings back in range
    (the emulator first read zeros there)."""
    assert_matches(emulate_gemm(compiled(*gemm(target, "bf16", "320x448x192", "auto"))))


def test_bf16_256_cubed_emulates_within_a_minute(compiled):
    result = emulate_gemm(compiled(*gemm("gfx942", "bf16", "256x256x256")))
    assert_matches(result)
    assert result.seconds < 60
    assert result.mma_count == 4096  # 256³ / (16·16·16)
    assert len(result.mix_per_wave) == 4
    assert all(wave["v_mfma_f32_16x16x16_bf16"] == 128 for wave in result.mix_per_wave)


# ---------------------------------------------------------------------------------------------------- faults
# The loop of IREE's default gfx942 bf16 kernel: global loads, `s_waitcnt vmcnt(n)` before each ds_write2_b64,
# `s_waitcnt lgkmcnt(0)` + `s_barrier`, then the LDS reads of the MFMA operands.
AFTER_WRITES = "\ts_waitcnt lgkmcnt(0)\n\ts_barrier\n\tds_read2_b64"
LAST_WRITE = "\ts_waitcnt vmcnt(0)\n\tds_write2_b64"


@pytest.fixture(scope="module")
def default_kernel(compiled):
    folder = compiled(*gemm("gfx942", "bf16", "256x256x256"))
    return folder, isa_text(folder)


def test_removed_barrier_is_an_lds_race(default_kernel):
    folder, text = default_kernel
    faulty = replace_once(text, AFTER_WRITES, "\ts_waitcnt lgkmcnt(0)\n\tds_read2_b64")
    result = emulate_gemm(folder, kernel_text=faulty)
    assert not result.passed
    race = result.hazards[0]
    assert race.kind == "lds-race"
    assert re.search(r"wave \d+ 'ds_read\S+ .*' \(line \d+\) reads byte \d+ that wave \d+ 'ds_write2_b64 .*' "
                     r"\(line \d+\) wrote with no barrier between them", race.message)
    # one seed, one report; another interleaving still finds the race (the wording says who came first)
    assert emulate_gemm(folder, kernel_text=faulty).hazards == result.hazards
    other = emulate_gemm(folder, kernel_text=faulty, seed=7).hazards
    assert other[0].kind == "lds-race" and "ds_write2_b64" in other[0].message and "ds_read" in other[0].message


@pytest.mark.parametrize("old, new, kind, names", [
    # LDS writes still in flight at the barrier: their window reaches into the readers' epoch
    (AFTER_WRITES, "\ts_waitcnt lgkmcnt(8)\n\ts_barrier\n\tds_read2_b64", "lds-race", "ds_write2_b64"),
    # the last global load has not landed when its data is stored to LDS
    (LAST_WRITE, "\ts_waitcnt vmcnt(1)\n\tds_write2_b64", "pending-read", "ds_write2_b64 v62"),
], ids=["lgkmcnt", "vmcnt"])
def test_loosened_waitcnt_is_caught(default_kernel, old, new, kind, names):
    folder, text = default_kernel
    result = emulate_gemm(folder, kernel_text=replace_once(text, old, new))
    assert not result.passed and not result.matches
    assert result.hazards[0].kind == kind
    assert names in result.hazards[0].message


def test_a_loosened_wait_is_traced_to_the_first_instruction_it_misleads(default_kernel):
    """The LDS reads of the first K step waited for with lgkmcnt(3) instead of 0: re-executing the first wrong
    output's workgroup as a reference (memory operations complete at issue, one wave at a time) finds the first
    instruction whose values differ, an MFMA after that wait, in the kernel's text order."""
    folder, text = default_kernel
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "s_waitcnt lgkmcnt(0)"
              and any("v_mfma" in later for later in lines[i + 1:i + 4]))
    faulty = "\n".join(lines[:at] + [lines[at].replace("lgkmcnt(0)", "lgkmcnt(3)")] + lines[at + 1:])
    result = emulate_gemm(folder, kernel_text=faulty)
    divergence = result.first_divergence
    assert not result.matches and divergence["kind"] == "diverges" and divergence["line"] > at + 1
    # it reads a register that one of the LDS reads left in flight by the loosened wait writes
    in_flight = [parse_instruction(line, i + 1) for i, line in enumerate(lines[at - 12:at], at - 11)
                 if line.strip().startswith("ds_read")][-3:]
    written = {(r.kind, i) for inst in in_flight for r in inst.operands[:1] for i in range(r.index, r.index + r.count)}
    read = parse_instruction(divergence["instruction"], divergence["line"]).operands[1:]
    assert any((r.kind, i) in written for r in read if isinstance(r, Reg) for i in range(r.index, r.index + r.count))
    assert f"line {divergence['line']}: {divergence['instruction']}" in result.summary()


def test_swizzle_whose_read_does_not_invert_its_write_is_a_mismatch(compiled):
    """XOR one more bit (16 bytes) into the address of the first ds_write_b128 of the tuned `--lds xor` kernel, on
    the write side only: the reads still invert the original swizzle, so operands land in the wrong K slots."""
    folder = compiled(*gemm("gfx942", "bf16", "512x512x512", "tuned", "--lds", "xor"))
    text = isa_text(folder)
    assert_matches(emulate_gemm(folder))
    write = re.search(r"\tds_write_b128 (v\d+), .*\n", text)
    reg = write[1]
    flip = f"\tv_xor_b32_e32 {reg}, 16, {reg}\n"
    faulty = text[:write.start()] + flip + write[0] + flip + text[write.end():]
    result = emulate_gemm(folder, kernel_text=faulty)
    assert result.unwritten == 0 and not result.hazards
    assert result.max_rel_error > 100 * result.tolerance


def test_unimplemented_instruction_stops_with_its_name(default_kernel):
    folder, text = default_kernel
    faulty = replace_once(text, "\ts_mov_b32 s10, 0x5040100\n", "\tv_sin_f32_e32 v1, v2\n")
    with pytest.raises(EmulatorError, match=r"instruction v_sin_f32_e32 \(line \d+: 'v_sin_f32_e32 v1, v2'\) is not "
                                            "implemented"):
        emulate_gemm(folder, kernel_text=faulty)


# ---------------------------------------------------------------------------------------------------- counters


def test_bank_conflicts_see_the_swizzle(compiled):
    """gfx950 tuned (direct-to-LDS, 64 banks): the XOR swizzle removes most conflict cycles of the operand reads."""
    xor = emulate_gemm(compiled(*gemm("gfx950", "bf16", "512x512x512", "tuned", "--lds", "xor")))
    flat = emulate_gemm(compiled(*gemm("gfx950", "bf16", "512x512x512", "tuned", "--lds", "none")))
    assert_matches(xor)
    assert_matches(flat)
    assert xor.lds_banks == flat.lds_banks == 64
    assert xor.lds_conflict_cycles * 2 < flat.lds_conflict_cycles
    assert xor.mma_count == flat.mma_count


def test_bank_model_counts_broadcast_and_conflicts():
    from pipelines.emulator.memory import bank_cycles
    import numpy as np

    lanes = np.arange(64, dtype=np.int64)
    assert bank_cycles(lanes * 4, 4, 32, 64) == (2, 2)          # 32 lanes a cycle, one dword per bank
    assert bank_cycles(np.zeros(64, np.int64), 4, 32, 64) == (2, 2)  # broadcast of one dword
    assert bank_cycles(lanes * 128, 4, 32, 64) == (64, 2)       # every lane in bank 0: 32-way conflict
    assert bank_cycles(lanes * 16, 16, 64, 64) == (4, 4)        # b128 on 64 banks: 16 lanes a cycle


def test_parse_dual_issue_and_modifiers():
    dual = parse_instruction("v_dual_mov_b32 v4, 0 :: v_dual_and_b32 v3, 0x78, v5", 1)
    assert dual.opcode == "v_dual" and [h.opcode for h in dual.operands] == ["v_dual_mov_b32", "v_dual_and_b32"]
    ds = parse_instruction("ds_read2_b64 v[76:79], v74 offset0:128 offset1:132", 2)
    assert ds.modifiers == {"offset0": "128", "offset1": "132"}
    assert ds.operands[0].count == 4


# ------------------------------------------------------------------------------------------ generated kernels

def kernel(target, dtype, layout, schedule, shape="256x256x256"):
    return ("--target", target, "--dtype", dtype, "--shape", shape, "--layout", layout, "--schedule", schedule)


GENERATED = [
    ("gfx942", "bf16", "nt", "pingpong8"), ("gfx942", "bf16", "nn", "pingpong8"),
    ("gfx942", "f8e4m3fnuz", "nt", "pingpong8"), ("gfx950", "bf16", "nt", "pingpong8"),
    ("gfx950", "f8e4m3fn", "nn", "pingpong8"),
    ("gfx942", "bf16", "nt", "double_buffered"), ("gfx950", "f16", "tn", "double_buffered"),
    ("gfx1151", "bf16", "nt", "double_buffered"), ("gfx1151", "f16", "tn", "double_buffered"),
    ("gfx942", "bf16", "nn", "interleave4"), ("gfx950", "f8e4m3fn", "nt", "interleave4"),
    ("gfx1151", "f16", "nn", "interleave"),
    ("gfx942", "bf16", "nt", "producer_consumer"), ("gfx950", "bf16", "nn", "producer_consumer"),
    ("gfx942", "f16", "tn", "producer_consumer"),
    ("gfx950", "bf16", "nt", "double_buffered_dma"), ("gfx950", "f8e4m3fn", "nt", "double_buffered_dma"),
    ("gfx950", "bf16", "nt", "pingpong8_dma"), ("gfx950", "f8e4m3fn", "nt", "pingpong8_dma"),
    ("gfx950", "bf16", "nn", "pingpong8_dma"), ("gfx950", "f16", "nn", "pingpong8_dma"),
    ("gfx950", "f8e5m2", "nn", "pingpong8_dma"),
]


@pytest.mark.slow
@pytest.mark.parametrize("target, dtype, layout, schedule", GENERATED)
def test_generated_kernels_match_float64(compiled, target, dtype, layout, schedule):
    """Every generated warp-group kernel, on each target it is generated for, with each operand layout and input
    type family at least once: right numbers, no hazard."""
    assert_matches(emulate_gemm(compiled(*kernel(target, dtype, layout, schedule))))


@pytest.mark.slow
def test_generated_kernel_with_a_longer_k_loop(compiled):
    """gfx1151 interleave at 1024x1024x512: LLVM computes the LDS stage offset with s_mulk_i32 there."""
    assert_matches(emulate_gemm(compiled(*kernel("gfx1151", "bf16", "nt", "interleave", "1024x1024x512"))))


STAGGER_WAIT = "\ts_cbranch_execz .LBB0_2\n\ts_waitcnt lgkmcnt(0)\n\ts_barrier\n"


def test_pingpong8_without_its_stagger_wait_races(compiled):
    """The defect the emulator found in the first pingpong8: without the lgkmcnt wait before the lagging group's
    stagger barrier, its prologue LDS stores are still in flight in the epoch the leading group reads them."""
    folder = compiled(*kernel("gfx942", "bf16", "nt", "pingpong8"))
    racy = replace_once(isa_text(folder), STAGGER_WAIT, "\ts_cbranch_execz .LBB0_2\n\ts_barrier\n")
    result = emulate_gemm(folder, kernel_text=racy)
    assert result.hazards and all(h.kind == "lds-race" and "barrier epoch 1:" in h.message
                                  for h in result.hazards)


def test_swizzle_whose_read_side_does_not_invert_its_write_side(tmp_path, monkeypatch):
    """Our own XOR-swizzled kernel, built with a reader that XORs one mask bit too many: no hazard (every access
    is ordered), but wrong numbers; the right reader matches."""
    import transforms.ukernel_dbuf as dbuf
    from transforms.lds_swizzle import XorSwizzle

    def off_by_one_mask(b, swizzle, row, k):
        return XorSwizzle(swizzle.chunk_elements, swizzle.chunks, swizzle.rows_per_line * 2).emit(b, row, k)
    monkeypatch.setattr(dbuf, "read_column", off_by_one_mask)
    assert main(["compile", *kernel("gfx942", "bf16", "nt", "double_buffered"), "-o", str(tmp_path / "k")]) == 0
    result = emulate_gemm(tmp_path / "k")
    assert not result.hazards and result.unwritten == 0 and result.max_rel_error > 0.1


def test_bank_conflicts_of_pingpong8_with_and_without_its_swizzle(tmp_path, compiled):
    """The same pingpong8 schedule with unswizzled LDS rows: the counter sees the conflicts the XOR removes."""
    from pipelines import flow
    from pipelines.targets import TARGETS
    from transforms.problem import Gemm
    from transforms.ukernel import ukernel_schedule
    swizzled = emulate_gemm(compiled(*kernel("gfx942", "bf16", "nt", "pingpong8")))
    plain = dataclasses.replace(ukernel_schedule("bf16", 32), xor_rows=0)
    gemm = Gemm(256, 256, 256, "bf16", "nt")
    job = flow.Job(TARGETS["gfx942"], "pingpong8", (gemm,), (None,), route=UKERNEL, plan=plain)
    flow.compile_job(flow.prepare(job), tmp_path / "plain")
    unswizzled = emulate_gemm(tmp_path / "plain")
    assert_matches(unswizzled)
    assert swizzled.lds_conflict_cycles * 4 < unswizzled.lds_conflict_cycles


# ---------------------------------------------------------------------------------------------------- CLI


def test_cli_emulate(compiled, capsys):
    folder = compiled(*gemm("gfx942", "bf16", "256x256x256"))
    assert main(["emulate", str(folder), "--shape", "256x256x256"]) == 0
    out = capsys.readouterr().out
    assert "match" in out and "hazards: none" in out and out.rstrip().endswith("PASS")
    assert main(["emulate", str(folder), "--shape", "128x128x128"]) == 2
    assert "compiled for 256x256x256, not 128x128x128" in capsys.readouterr().err
    assert main(["emulate", str(folder.parent / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_emulate_exits_1_on_a_failing_kernel(compiled, tmp_path, capsys):
    import shutil
    folder = tmp_path / "racy"
    shutil.copytree(compiled(*kernel("gfx942", "bf16", "nt", "pingpong8")), folder)
    isa = next((folder / "dump").glob("*.rocmasm"))
    isa.write_text(replace_once(isa.read_text(), STAGGER_WAIT, "\ts_cbranch_execz .LBB0_2\n\ts_barrier\n"))
    assert main(["emulate", str(folder), "--json"]) == 1
    assert '"passed": false' in capsys.readouterr().out


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_loosened_wait_for_direct_to_lds_loads_is_a_race(compiled):
    """gfx950 tuned: the DMA loads (`buffer_load_dwordx4 ... lds`) of the next tile are counted by vmcnt; waiting
    for fewer of them before the barrier leaves their LDS writes open in the epoch where other waves read."""
    folder = compiled(*gemm("gfx950", "bf16", "512x512x512", "tuned"))
    faulty = replace_once(isa_text(folder), "\ts_waitcnt vmcnt(8)\n\ts_barrier\n",
                          "\ts_waitcnt vmcnt(12)\n\ts_barrier\n")
    result = emulate_gemm(folder, kernel_text=faulty)
    assert not result.matches
    assert result.hazards[0].kind == "lds-race"
    assert re.search(r"'ds_read_b64_tr_b16 .*' \(line \d+\) reads byte \d+ that wave \d+ 'buffer_load_dwordx4 v\d+, "
                     r"s\[\d+:\d+\], 0 offen lds'", result.hazards[0].message)


def test_a_planted_wrong_opcode_is_localised(compiled):
    """The first MFMA of IREE's gfx942 bf16 kernel read as f16: the report counts the wrong outputs and names, for
    the first ones, the element, its value against float64, and the workgroup, wave and store instruction that
    wrote it."""
    folder = compiled("--target", "gfx942", "--shape", "256x256x256", "--layout", "nt")
    text = next((folder / "dump").glob("*.rocmasm")).read_text()
    faulty = text.replace("v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x16_f16", 1)
    assert faulty != text
    result = emulate_gemm(folder, kernel_text=faulty)
    assert not result.matches and 0 < result.wrong < 256 * 256
    first = result.mismatches[0]
    assert len(first["element"]) == 2 and first["got"] is not None and first["got"] != first["want"]
    assert first["workgroup"] is not None and first["wave"] is not None and "store" in first["instruction"]
    summary = result.summary()
    assert f"{result.wrong} wrong output(s)" in summary and f"stored by wave {first['wave']} of workgroup" in summary
    # the values do not depend on latency or wave order: the re-execution agrees and names the last writer of the
    # stored register, an MFMA of the accumulation the wrong opcode fed
    divergence = result.first_divergence
    assert divergence["kind"] == "computed" and divergence["instruction"].startswith("v_mfma_f32_16x16x16")
    correct = emulate_gemm(folder)
    assert correct.wrong == 0 and correct.first_divergence is None


def test_sampled_workgroups_check_what_they_store(compiled):
    """--workgroups 3 of IREE's 8: only those run; their outputs are checked against float64 computed for them
    alone, and a deleted store (a tile left partly unwritten) or a wrong MFMA opcode still fails."""
    folder = compiled("--target", "gfx942", "--shape", "256x256x256", "--layout", "nt")
    result = emulate_gemm(folder, workgroups=3)
    assert result.passed and result.sampled == 3 and result.workgroups == 8
    text = next((folder / "dump").glob("*.rocmasm")).read_text()
    lines = text.splitlines(keepends=True)
    last_store = max(i for i, line in enumerate(lines) if line.lstrip().startswith("buffer_store_dword"))
    dropped = emulate_gemm(folder, workgroups=3, kernel_text="".join(lines[:last_store] + lines[last_store + 1:]))
    assert dropped.unwritten > 0 and not dropped.matches
    wrong = emulate_gemm(folder, workgroups=3,
                         kernel_text=text.replace("v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x16_f16", 1))
    assert wrong.wrong > 0 and not wrong.matches


def test_a_batch_forks_where_its_workgroups_branch_apart_and_matches_one_by_one(compiled, monkeypatch):
    """IREE's gfx942 kernel for 130x70x96 guards its edge tiles with scalar branches: a batch of its 9 workgroups
    forks where they disagree, and the batched run stores exactly what running them one at a time stores, with the
    same counters."""
    import pipelines.emulator.run as run

    folder = compiled(*gemm("gfx942", "bf16", "130x70x96", "default", "--layout", "nt"))
    forks = []
    original = run.fork
    monkeypatch.setattr(run, "fork", lambda wg, chosen: forks.append(len(chosen)) or original(wg, chosen))
    batched = emulate_gemm(folder)
    assert forks and forks[0] == batched.workgroups
    forked = len(forks)
    one_by_one = emulate_gemm(folder, batch=1)
    assert len(forks) == forked  # a workgroup alone has nobody to disagree with
    assert_matches(batched)
    assert batched.output.tobytes() == one_by_one.output.tobytes()
    for field in ("instructions", "mma_count", "barrier_count", "mix", "lds_accesses"):
        assert getattr(batched, field) == getattr(one_by_one, field), field
