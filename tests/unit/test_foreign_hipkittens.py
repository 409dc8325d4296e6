"""Foreign kernels: HipKittens' MI355X bf16 GEMM (`micro_tk`) on the emulator and the timing model.

The kernels under tests/data/hipkittens/ were compiled by tools/hipkittens_kernels.py with Debian clang 22 from
HazyResearch/HipKittens f09e9685 (each hipkittens.json holds the command); CI has no clang, so they are committed.
What is checked comes from outside the loader: C against float64 (C = A·B^T) of the same seeded inputs, the MFMA
work against M·N·K, the kernarg offsets the listing's own scalar loads read against HipKittens' `gl` layout
(include/types/global/gl.cuh: a pointer, then four 8-byte dimensions, 48 bytes a tensor), planted faults (a store
of the wrong half, a wrong row pitch in the struct) that must produce wrong outputs, every malformed hipkittens.json
refused in one sentence with exit code 2, and a positive prediction.

The unedited kernel matches float64 but its verdict is FAIL: the emulator's ISA checks find what LLVM cannot see
through HipKittens' inline assembly (an `s_mov_b32 m0` right before each direct-to-LDS load; `ds_read_b128` right
after MFMAs) and one read of an LDS tile before the `s_waitcnt vmcnt` that retires its loads. Three mechanical edits
of the listing (results/hipkittens/README.md) remove exactly those, and then it passes.
"""

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.emulator import emulate_gemm
from tools import hipkittens_kernels  # the repository root is on sys.path (conftest.py)
from pipelines.emulator import run as emulator_run
from pipelines.emulator.foreign import load_foreign
from pipelines.timing.predict import predict

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "hipkittens"
SMALL = DATA / "gfx950_bf16_nt_256x512x512"  # 2 workgroups: M != N, so swapped dimensions show
LARGE = DATA / "gfx950_bf16_nt_8192"  # the published shape: 8192^3, 1024 workgroups
FILE = "hipkittens.json"
GL_BYTES = 48  # sizeof(gl<bf16,-1,-1,-1,-1>): T* raw_ptr, size_t batch, depth, rows, cols, an empty struct (+pad)


def launch(folder: Path) -> dict:
    return json.loads((folder / FILE).read_text())


def copy_of(folder: Path, tmp_path: Path, change=None) -> Path:
    """The kernel folder copied, its hipkittens.json passed through `change(launch)` (in place)."""
    copied = tmp_path / folder.name
    shutil.copytree(folder, copied)
    if change is not None:
        described = launch(folder)
        change(described)
        (copied / FILE).write_text(json.dumps(described))
    return copied


def field(described: dict, name: str) -> dict:
    return next(f for f in described["arguments"][0]["fields"] if f["name"] == name)


@pytest.fixture(scope="module")
def small_result():
    return emulate_gemm(SMALL)


def fixed(text: str) -> str:
    """The listing with what LLVM's hazard recognizer would have inserted had it seen HipKittens' inline assembly,
    and with every direct-to-LDS load retired before the barrier after it: one wait state after each `s_mov_b32 m0`
    (the M0 -> LDS DMA rule), `s_waitcnt vmcnt(0)` before each `s_barrier`, and eight wait states after it (MFMA
    result -> the `ds_read_b128` that overwrites it)."""
    text = re.sub(r"(\n\ts_mov_b32 m0, s\d+\n)", r"\1\ts_nop 0\n", text)
    return re.sub(r"\n\ts_barrier\n", "\n\ts_waitcnt vmcnt(0)\n\ts_barrier\n\ts_nop 7\n", text)


# ---------------------------------------------------------------------------------------------------- numerics

def test_the_committed_kernels_are_the_published_source_at_two_shapes():
    for folder, shape in ((SMALL, (256, 512, 512)), (LARGE, (8192, 8192, 8192))):
        described = launch(folder)
        m, n, k = shape
        assert (described["problem"]["m"], described["problem"]["n"], described["problem"]["k"]) == shape
        assert described["hipkittens"]["defines"] == {"M": m, "N": n, "K": k}
        assert described["hipkittens"]["source"] == "analysis/bf16_gemm/mi350x/kernel_8192.cpp"
        assert described["grid"] == [(m // 256) * (n // 256), 1, 1] and described["workgroup_size"] == [512, 1, 1]
        assert described["shared_bytes"] == 160000  # MAX_SHARED_MEMORY of include/common/util.cuh


def test_the_small_kernel_matches_float64_and_does_all_the_work_once(small_result):
    result = small_result
    assert result.wrong == 0 and result.unwritten == 0, result.summary()
    assert result.max_rel_error <= result.tolerance
    assert result.workgroups == 2 and result.output.shape == (256, 512)
    work = sum(count * int(m) * int(n) * int(k) for op, count in result.mix.items()
               for m, n, k in re.findall(r"v_mfma_f32_(\d+)x(\d+)x(\d+)", op))
    assert work == 256 * 512 * 512  # no tile of C computed twice or skipped


def test_its_hazards_are_hipkittens_inline_assembly_and_an_early_read(small_result):
    """What makes the verdict FAIL: each a wait-state rule broken next to an instruction HipKittens writes in inline
    assembly, or an LDS race between a direct-to-LDS load and a ds_read_b128."""
    assert not small_result.passed and small_result.hazards
    for hazard in small_result.hazards:
        if hazard.kind == "lds-race":
            assert "offen lds'" in hazard.message and "ds_read_b128" in hazard.message, hazard.message
        else:
            assert hazard.kind == "wait-states", hazard.message
            assert re.search(r"'s_mov_b32 m0, s\d+' .* then 'buffer_load_dwordx4 .* lds'", hazard.message) or \
                re.search(r"'v_mfma_.*' .* then 'ds_read_b128 ", hazard.message), hazard.message
    assert {h.kind for h in small_result.hazards} == {"lds-race", "wait-states"}


def test_the_hazards_are_all_there_is_and_mechanical_edits_pass(monkeypatch):
    monkeypatch.setattr(emulator_run, "MAX_HAZARD_REPORTS", 10_000)
    text = (SMALL / "kernel.amdgcn").read_text()
    every = emulate_gemm(SMALL).hazards
    races = [h for h in every if h.kind == "lds-race"]
    m0 = [h for h in every if "salu-write-m0-lds-dma" in h.message]
    # the races: each pass of the (unrolled) K loop reads Bs[1][0] into B_tile_0 before the s_waitcnt vmcnt(6)
    # that retires the two direct-to-LDS loads of it: two load lines per pass, three passes (K = 512: 8 steps of 64,
    # two per pass, the last two outside the loop)
    loads = {int(re.search(r"'buffer_load_dwordx4[^']*' \(line (\d+)\)", h.message)[1]) for h in races}
    assert len(loads) == 6
    writes = sum(1 for line in text.splitlines() if re.fullmatch(r"\ts_mov_b32 m0, s\d+", line))
    assert 0 < len(m0) <= writes == 64  # HipKittens' inline `s_mov_b32 m0`: one per direct-to-LDS load
    result = emulate_gemm(SMALL, kernel_text=fixed(text))
    assert result.passed and not result.hazards and result.wrong == 0, result.summary()


# ---------------------------------------------------------------------------------------------------- faults

def test_storing_the_low_half_of_the_accumulator_fails(tmp_path):
    """C is bf16 by truncation: HipKittens stores bits 31:16 of each f32 (global_store_short_d16_hi); the low half
    of one of them is garbage."""
    text = (SMALL / "kernel.amdgcn").read_text()
    edited = re.sub(r"global_store_short_d16_hi", "global_store_short", text, count=1)
    result = emulate_gemm(copy_of(SMALL, tmp_path), kernel_text=fixed(edited))
    assert not result.passed and 0 < result.wrong, result.summary()
    assert result.mismatches[0]["instruction"].startswith("global_store_short ")


def test_a_wrong_row_pitch_in_the_struct_fails(tmp_path):
    """A's `cols` is the row pitch the kernel reads (gl::stride<2>); half of it reads the wrong rows of A."""
    def halve(described):
        field(described, "a.cols")["value"] //= 2
    result = emulate_gemm(copy_of(SMALL, tmp_path, halve), kernel_text=fixed((SMALL / "kernel.amdgcn").read_text()))
    assert not result.passed and result.wrong > 0


# ---------------------------------------------------------------------------------------------------- the struct

def scalar_kernarg_loads(text: str) -> set[tuple[int, int]]:
    """(offset, bytes) of each s_load_dword* from s[0:1], the kernarg pointer (the only user SGPRs it asks for)."""
    bytes_of = {"": 4, "x2": 8, "x4": 16}
    return {(int(offset, 16), bytes_of[width]) for width, offset in
            re.findall(r"s_load_dword(x\d)? s\[\d+:\d+\], s\[0:1\], 0x([0-9a-f]+)", text)}


@pytest.mark.parametrize("folder", [SMALL, LARGE], ids=["small", "8192"])
def test_kernarg_offsets_are_the_gl_layout_and_the_isa_reads_them(folder):
    """The listing loads each tensor's pointer and cols (its row pitch) at 48-byte steps, and the two hidden block
    counts after the 152-byte struct: exactly the fields hipkittens.json places there."""
    described, text = launch(folder), (folder / "kernel.amdgcn").read_text()
    loads = scalar_kernarg_loads(text)
    pointer, cols = 0, 32  # gl: raw_ptr first; cols the fourth size_t after it
    want = {(t * GL_BYTES + pointer, 8) for t in range(3)} | {(t * GL_BYTES + cols, 8) for t in range(3)}
    assert loads == want | {(152, 8)}
    names = {f["offset"]: f["name"] for f in described["arguments"][0]["fields"]}
    assert [names[offset] for offset, _ in sorted(want)] == ["a.raw_ptr", "a.cols", "b.raw_ptr", "b.cols",
                                                             "c.raw_ptr", "c.cols"]
    hidden = {a["offset"]: a["value_kind"] for a in described["arguments"][1:]}
    assert (hidden[152], hidden[156]) == ("hidden_block_count_x", "hidden_block_count_y")
    foreign = load_foreign(folder)
    p = described["problem"]
    pitch = {"a": p["strides"]["a"][0], "b": p["strides"]["b"][1], "c": p["strides"]["c"][0]}  # B is stored N×K
    assert {f.name: f.value for f in foreign.arguments[0].fields if f.name.endswith(".cols")} == \
        {f"{t}.cols": pitch[t] for t in "abc"}
    assert described["kernarg_loads"] == [list(x) for x in sorted(loads)]


def test_the_tool_describes_the_committed_arguments_without_clang():
    hk = hipkittens_kernels
    for folder in (SMALL, LARGE):
        described = launch(folder)
        p = described["problem"]
        assert hk.arguments((folder / "kernel.amdgcn").read_text(), p["m"], p["n"], p["k"]) == described["arguments"]


@pytest.mark.parametrize("m, n", [(256, 256), (256, 512), (512, 512), (1536, 4096), (4096, 4096), (6144, 6144),
                                  (8192, 8192)])
def test_the_tile_order_is_a_permutation(m, n):
    """HipKittens' chiplet swizzle (8 XCDs, chunks of 64) and WGM = 8 grouping give each tile to one workgroup,
    also on grids below one chunk (the small kernel's 2) and with a partial last block (6144^2: 576 = 512 + 64)."""
    order = hipkittens_kernels.tile_order(m, n)
    assert sorted(order) == [(i, j) for i in range(m // 256) for j in range(n // 256)]


def test_the_committed_order_is_the_tools_and_predict_replays_it():
    """Each committed description states the tile of each workgroup id as the tool computes it, and predict's
    traffic is that order's (HipKittens' ids are not row-major: 8192^3 gives workgroup 1 the tile (0, 8))."""
    from pipelines.timing.predict import record
    hk = hipkittens_kernels
    for folder in (SMALL, DATA / "gfx950_bf16_nt_4096", LARGE):
        p = launch(folder)["problem"]
        assert [tuple(t) for t in launch(folder)["order"]] == hk.tile_order(p["m"], p["n"])
    assert launch(LARGE)["order"][1] == [0, 8]
    rec = record(SMALL)
    assert rec.tile_order == ((256, 256), ((0, 0), (0, 1)))


@pytest.mark.parametrize("shape, message", [("300", "not a multiple of the kernel's 256-wide tile"),
                                            ("256x256", "is not N or MxNxK"), ("0", "is not N or MxNxK"),
                                            ("256x512x384", "K = 384")])
def test_the_tool_refuses_a_bad_shape_in_one_sentence(capsys, tmp_path, shape, message):
    assert hipkittens_kernels.main(["--shape", shape, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hipkittens_kernels.py: error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_the_tool_sets_the_three_defines_and_asserts_the_layout():
    hk = hipkittens_kernels
    source = "#include \"kittens.cuh\"\n#define M 8192\n#define K 8192\n#define N 8192\nint x;\n"
    text = hk.kernel_source(source, 256, 512, 1024)
    assert text.startswith("#include \"kittens.cuh\"\n#define M 256\n#define K 1024\n#define N 512\nint x;\n")
    assert "static_assert(offsetof(_gl_B, cols_internal) == 32" in text
    assert "static_assert(offsetof(micro_globals, c) == 96" in text
    with pytest.raises(hk.ToolError, match="does not define M, N and K once each"):
        hk.kernel_source(source.replace("#define N 8192\n", ""), 256, 256, 256)


def test_the_tool_names_a_missing_toolchain_in_one_sentence(capsys, tmp_path):
    missing = str(tmp_path / "no-clang")
    assert hipkittens_kernels.main(["--shape", "512", "--clang", missing, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "does not exist; tools/hipkittens_toolchain.sh prepares it." in err and err.count("\n") == 1, err


# ---------------------------------------------------------------------------------------------------- bad input

def _set(path: str, value):
    def change(described):
        keys = path.split(".")
        table = described
        for key in keys[:-1]:
            table = table[int(key)] if isinstance(table, list) else table[key]
        last = keys[-1]
        if value is KeyError:
            del table[last]
        elif isinstance(table, list):
            table[int(last)] = value
        else:
            table[last] = value
    return change


BAD = [
    ("not JSON", None, "is not JSON"),
    ("Triton's format", _set("format", "triton-kernel/1"), "reads 'hipkittens-kernel/1' (written by tools/hipkittens"),
    ("a struct without fields", _set("arguments.0.fields", KeyError), "is a struct with no list of byte 'fields'"),
    ("a field past the struct", _set("arguments.0.fields.15.offset", 148), "past the struct's 152"),
    ("overlapping fields", _set("arguments.0.fields.1.offset", 4), "overlaps the field before it"),
    ("a scratch field", _set("arguments.0.fields.1.kind", "scratch"), "the emulator takes buffer, int"),
    ("a 4-byte pointer", _set("arguments.0.fields.0.size", 4), "a pointer of 4 bytes, not 8"),
    ("a buffer twice", _set("arguments.0.fields.5.buffer", "a"), "exactly once"),
    ("a value too large", _set("arguments.0.fields.4.size", 1), "does not fit its 1 bytes"),
    ("a struct of another size", _set("arguments.0.size", 144), "ends at byte 152, past the struct's 144"),
    ("a struct not by value", _set("arguments.0.value_kind", "global_buffer"), "not 'by_value'"),
    ("a shifted hidden argument", _set("arguments.1.offset", 156), "the kernel's metadata has offset 152"),
    ("another kernel name", _set("kernel", "micro_tk"), "not micro_tk"),
    ("more LDS than the chip", _set("shared_bytes", 163841), "of LDS per workgroup"),
    ("an order of another length", _set("order", [[0, 0]]), "not one [tile row, tile column] pair per workgroup (2)"),
    ("an order that repeats a tile", _set("order", [[0, 0], [0, 0]]), "does not name each tile of the 1x2 grid once"),
    ("an order past the grid", _set("order", [[0, 0], [1, 0]]), "does not name each tile of the 1x2 grid once"),
    ("an order of strings", _set("order", [["0", "0"], [0, 1]]), "not one [tile row, tile column] pair"),
    ("an order without a tile", _set("tile", KeyError), "states an order of tiles but not the tile"),
]


@pytest.mark.parametrize("command", ["emulate", "predict"])
@pytest.mark.parametrize("what, change, message", BAD, ids=[b[0] for b in BAD])
def test_bad_hipkittens_json_is_one_sentence(tmp_path, capsys, command, what, change, message):
    folder = copy_of(SMALL, tmp_path)
    if change is None:
        (folder / FILE).write_text("{not json")
    else:
        described = copy.deepcopy(launch(SMALL))
        change(described)
        (folder / FILE).write_text(json.dumps(described))
    assert cli.main([command, str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pipelines: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err, err


def test_a_folder_with_two_launch_descriptions_is_refused(tmp_path, capsys):
    folder = copy_of(SMALL, tmp_path)
    (folder / "triton.json").write_text("{}")
    assert cli.main(["emulate", str(folder)]) == 2
    assert "holds both triton.json and hipkittens.json" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- the CLI and timing

def test_emulate_and_predict_through_the_command_line(capsys):
    assert cli.main(["emulate", str(SMALL)]) == 1  # matches float64, FAILs on the hazards
    out = capsys.readouterr().out
    assert "_Z8micro_tk13micro_globals (HipKittens f09e9685) on gfx950: gemm 256x512x512 bf16 nt -> bf16" in out
    assert ": match" in out and out.rstrip().endswith("FAIL")
    assert cli.main(["predict", str(SMALL)]) == 0
    assert "(PREDICTED, not measured)" in capsys.readouterr().out.splitlines()[0]


def test_predict_gives_a_positive_time():
    prediction = predict(SMALL)
    assert prediction.microseconds > prediction.launch_us > 0
    assert prediction.workgroups == 2 and prediction.resident == 1  # 160000 B of LDS: one workgroup per CU
    assert prediction.instructions > 0



# HipKittens' published MI355X times of this kernel (analysis/bf16_gemm/mi350x/mi355x_bf16_gemm.json @ f09e9685).
PUBLISHED_US = {"gfx950_bf16_nt_8192": 682.7, "gfx950_bf16_nt_4096": 97.3}


@pytest.mark.slow
@pytest.mark.parametrize("name, within", [("gfx950_bf16_nt_8192", 0.01), ("gfx950_bf16_nt_4096", 0.15)])
def test_the_matrix_clock_fitted_at_8192_holds_at_4096(name, within):
    """gfx950's matrix_clock_mhz was fitted to the 8192^3 time (so it must reproduce it); 4096^3 was held out: it
    came within 8 % (29 % fast at a constant 2400 MHz), and a change of the model that loses that fails here."""
    prediction = predict(DATA / name)
    published = PUBLISHED_US[name]
    assert abs(prediction.microseconds - published) / published <= within, prediction.summary()
    assert prediction.clock_mhz is not None and prediction.clock_mhz < 2400


@pytest.mark.parametrize("value, fits", [(2 ** 64 - 1, True), (2 ** 64, False), (-2 ** 63, True),
                                         (-2 ** 63 - 1, False)])
def test_an_int_field_holds_exactly_what_its_bytes_hold(tmp_path, value, fits):
    """The 8-byte stream field at both ends of what 8 bytes hold (unsigned top, signed bottom): one past either
    end is refused, never wrapped."""
    from pipelines.emulator.foreign import ForeignError, load_foreign

    folder = copy_of(SMALL, tmp_path, lambda described: field(described, "stream").update(value=value))
    if fits:
        load_foreign(folder)
    else:
        with pytest.raises(ForeignError, match=f"holds {value}, which does not fit its 8 bytes"):
            load_foreign(folder)


def test_the_tool_describes_b_as_n_rows_of_k_for_a_shape_with_n_not_k():
    """NT: B is N×K row-major, so its gl has N rows of K columns (A: M×K, C: M×N); the committed kernels have
    N = K, where a swap would not show."""
    described = hipkittens_kernels.arguments((SMALL / "kernel.amdgcn").read_text(), 256, 512, 768)
    dims = {f["name"]: f["value"] for f in described[0]["fields"] if f["name"].endswith((".rows", ".cols"))}
    assert dims == {"a.rows": 256, "a.cols": 768, "b.rows": 512, "b.cols": 768, "c.rows": 256, "c.cols": 512}
