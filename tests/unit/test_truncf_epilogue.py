"""The truncf epilogue (issue 33): C stored rounded to the input type, as a library GEMM writes it by default.

Oracles: the float64 product (the stored C is within half a unit in the last place of the stored type, and further
than f32 rounding would be), the ulp of bf16 and f16 from their bit widths, PTX's `cvt.rn.{bf16,f16}x2.f32 d, a, b`
(a goes to d's upper half, the higher address), and the PTX's own stores counted here."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pipelines import cli, runner
from pipelines.reference import relative_tolerance, result_tolerance
from transforms import hopper
from transforms.problem import Epilogue, Gemm

from test_bad_input import assert_one_sentence, run_main


def _problem(dtype: str, kind: str, k: int = 4096) -> dict:
    return {"m": 64, "n": 64, "k": k, "dtype": dtype, "layout": "nn", "batch": None,
            "epilogue": {"kind": kind, "alpha": 1.0, "beta": 1.0}}


@pytest.mark.parametrize("dtype, bits", [("bf16", 8), ("f16", 11)])
def test_the_tolerance_adds_half_an_ulp_of_the_stored_type(dtype, bits):
    """bf16 keeps 8 significant bits and f16 11: rounding to nearest is off by at most 2^-bits of the value."""
    assert result_tolerance(_problem(dtype, "truncf")) == pytest.approx(relative_tolerance(4096) + 2.0 ** -bits)
    assert result_tolerance(_problem(dtype, "none")) == relative_tolerance(4096)


def test_a_truncf_gemm_runs_stored_in_the_input_type_and_is_checked_as_such(tmp_path):
    """On the CPU runtime: IREE's default with the truncf consumer returns bf16; its error against float64 is that
    of bf16 rounding (far more than f32 would show, within half a bf16 ulp of the largest value)."""
    out = tmp_path / "bench"
    assert cli.main(["bench", "--target", "cpu", "--shape", "64x96x256", "--epilogue", "truncf", "--pipelines",
                     "default", "--device", "local-task", "-o", str(out)]) == 0
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["correct"] is True and row["tolerance"] == pytest.approx(relative_tolerance(256) + 2.0 ** -8)
    assert 2.0 ** -14 < row["max_rel_error"] <= 2.0 ** -8
    plan = json.loads((out / "plan.json").read_text())
    case = plan["cases"][0]
    (tmp_path / "data").mkdir()
    inputs, want = runner.ProblemData(tmp_path / "data").get(case)
    got = runner.run_once(case, out / case["vmfb"], "local-task", inputs.arrays)
    assert got.dtype == np.dtype(runner.NUMPY_TYPES["bf16"]) and got.shape == (64, 96)
    # round to nearest: every element within half a bf16 ulp of its own float64 value (plus f32 accumulation)
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - 7)
    assert np.all(np.abs(got.astype(np.float64) - want) <= 0.5 * ulp + 1e-5 * np.abs(want).max())


@pytest.mark.parametrize("argv, message", [
    (["--pipeline", "codegen"], "the codegen pipeline compiles plain GEMMs only"),
    (["--split-k", "2"], "splits plain GEMMs"),
])
def test_routes_that_store_f32_only_refuse_truncf_in_one_sentence(argv, message, tmp_path, capsys):
    code = run_main(["compile", "--target", "sm_80", "--shape", "512x512x4096", "--epilogue", "truncf", *argv,
                     "-o", str(tmp_path / "out")])
    assert_one_sentence(code, capsys.readouterr().err, message)
    assert not (tmp_path / "out").exists()


def _pairs(program: str) -> list[tuple[int, int]]:
    """For each packed store of the program: the accumulator indices of the values given as cvt's a and b."""
    source = dict(re.findall(r"(%\w+) = llvm\.extractvalue %\w+\[(\d+)\]", program))
    found = re.findall(r'"cvt\.rn\.\w+x2\.f32 \$0, \$1, \$2;", "=r,f,f" (%\w+), (%\w+)', program)
    return [(int(source[a]), int(source[b])) for a, b in found]


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_the_packed_pair_puts_the_lower_column_at_the_lower_address(dtype):
    """The m64nNk16 accumulator holds a thread's two neighbouring columns at indices 2i and 2i+1; cvt's a is the
    upper half (the higher address, the higher column): a = 2i+1, b = 2i."""
    program = hopper.program(Gemm(256, 512, 128, dtype, "nt", epilogue=Epilogue("truncf")), hopper.DEFAULT)
    pairs = _pairs(program)
    assert pairs and all(a == b + 1 and b % 2 == 0 for a, b in pairs)
    assert f"tensor<256x512x{dtype}>" in program and "tensor<256x512xf32>" not in program


@pytest.mark.parametrize("dtype, layout, n", [("bf16", "nt", 512), ("f16", "nn", 512), ("bf16", "nt", 520),
                                             ("f16", "nt", 510), ("bf16", "nt", 509)])
def test_the_kernel_stores_c_in_the_input_type(dtype, layout, n, tmp_path):
    out = tmp_path / "c"
    assert cli.main(["compile", "--target", "sm_90a", "--pipeline", "hopper", "--shape", f"256x{n}x128",
                     "--dtype", dtype, "--layout", layout, "--epilogue", "truncf", "-o", str(out)]) == 0
    ptx = next(p.read_text() for p in (out / "dump").glob("*.ptx") if ".entry gemm(" in p.read_text())
    gemm = hopper.ptx_kernel(ptx, "gemm")
    staged = "stmatrix.sync.aligned.m8n8.x4.shared.b16" in gemm and "st.global.v4.b32" in gemm
    if n % 8 == 0:  # pairs rounded together; whole tiles in 16-byte rows through the warps' staging areas, pairs
        # (4 bytes a store) only at the edge tiles (N 520: the third block column)
        assert len(re.findall(rf"cvt\.rn\.{dtype}x2\.f32", gemm)) >= 1 and staged
        assert ("st.global.b32" in gemm) == (n % hopper.DEFAULT.block_n != 0)
    elif n % 2 == 0:  # rows not of whole 16 bytes: the pairs everywhere
        assert len(re.findall(rf"cvt\.rn\.{dtype}x2\.f32", gemm)) >= 1 and "st.global.b32" in gemm and not staged
    else:  # one element a store at the right edge
        assert re.search(rf"cvt\.rn\.{dtype}\.f32", gemm) and "st.global.b16" in gemm
    assert not re.search(r"st\.global(\.v2)?\.f32", gemm)


def test_the_ptx_check_tells_the_stored_types_apart(tmp_path):
    """A kernel that stores f32 where truncf is asked, or the other way round, fails check_ptx's C's type."""
    f32 = tmp_path / "f32"
    assert cli.main(["compile", "--target", "sm_90a", "--pipeline", "hopper", "--shape", "256x512x128",
                     "--layout", "nt", "-o", str(f32)]) == 0
    ptx = next(p.read_text() for p in (f32 / "dump").glob("*.ptx") if ".entry gemm(" in p.read_text())
    plain = Gemm(256, 512, 128, "bf16", "nt")
    hopper.check_ptx(ptx, plain, hopper.DEFAULT)
    with pytest.raises(hopper.HopperError, match="C's type"):
        hopper.check_ptx(ptx, plain.with_(epilogue=Epilogue("truncf")), hopper.DEFAULT)
    narrow = ptx.replace("st.global.v2.f32", "st.global.b32")
    with pytest.raises(hopper.HopperError, match="C's type"):
        hopper.check_ptx(narrow, plain, hopper.DEFAULT)


def _tail_pairs(program: str) -> list[tuple[int, int]]:
    """For each pair packed after a fused consumer: (the accumulator index in the upper half, in the lower half),
    traced back through the program's def chain (each op's first %operand) to its llvm.extractvalue."""
    defs = dict(re.findall(r"(%[\w#]+) = (.*)", program))

    def index(value: str) -> int:
        while True:
            rhs = defs[value]
            extract = re.match(r"llvm\.extractvalue %[\w#]+\[(\d+)\]", rhs)
            if extract:
                return int(extract.group(1))
            value = re.search(r"(%[\w#]+)", rhs.split(" ", 1)[1]).group(1)
            if rhs.startswith("llvm.inline_asm"):  # cvt.rn of one element: its operand after the constraints
                value = re.search(r'"=h,f" (%[\w#]+)', rhs).group(1)
    found = re.findall(r"(%\w+) = arith\.ori (%\w+), (%\w+) : i32", program)
    shifted = dict(re.findall(r"(%\w+) = arith\.shli (%\w+), %\w+ : i32", program))
    return [(index(shifted[high]), index(low)) for _, high, low in found if high in shifted]


def test_with_a_fused_consumer_the_lower_column_still_goes_to_the_lower_half():
    """The tail path packs each rounded element after its consumer's ops: the higher column (index 2i+1) shifted
    into the upper 16 bits, the lower (2i) in the lower 16 (the lower address), as the cvt pairs pack them."""
    tail = hopper.Elementwise((("arith.negf", ("in",), "f16"),))
    text = hopper.executable(Gemm(256, 512, 128, "f16", "nt", epilogue=Epilogue("truncf")), hopper.DEFAULT, "h",
                             tail=tail)
    pairs = _tail_pairs(text)
    assert pairs and all(a == b + 1 and b % 2 == 0 for a, b in pairs)
