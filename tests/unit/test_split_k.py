"""Split-K through IREE (`compile --split-k S`): verified in the compiled dispatches, emulated against float64.

IREE's dispatch creation splits an M×N×K GEMM into S partial GEMMs of K/S (one dispatch, `matmul_like`) and their
sum (a `reduction` dispatch); the compile checks both are there, and the emulator runs both dispatches in order
through one memory and compares the result with float64 of the unsplit GEMM. The bound is the unsplit one: each
output is still K products summed in f32, now in chains of K/S and then S, no longer than K (test_emulator_host's
bound, relative_tolerance(K), covers any order of the K additions).
"""

import json

import pytest

from pipelines.cli import main
from pipelines.emulator import emulate_gemm


def compile_split(tmp_path, target, shape, split=8, layout="nt"):
    out = tmp_path / f"{target}_{shape}_{split}"
    assert main(["compile", "--target", target, "--shape", shape, "--dtype", "bf16", "--layout", layout,
                 "--split-k", str(split), "-o", str(out)]) == 0
    return out


def test_split_k_is_two_dispatches_and_matches_float64(tmp_path):
    folder = compile_split(tmp_path, "gfx942", "16x4096x4096")
    report = json.loads((folder / "report.json").read_text())
    assert len(report["dispatches"]) == 2 and report["verified"]
    assert "split 8 ways" in report["schedule_summary"][0]
    configured = "".join(p.read_text() for p in sorted((folder / "dump").glob("configured_*.mlir")))
    assert "matmul_like_8x16x4096x512_" in configured and "reduction_65536x8_" in configured
    result = emulate_gemm(folder)
    assert result.passed, result.summary()
    assert result.mma_count == 16 * 4096 * 4096 // (16 * 16 * 16)  # every product, in the partial-GEMM dispatch


def test_a_split_that_iree_does_not_take_is_an_error(tmp_path, capsys):
    """K = 4100 is not a multiple of 8: IREE leaves the GEMM whole, and the compile says so instead of passing."""
    out = tmp_path / "out"
    code = main(["compile", "--target", "gfx942", "--shape", "16x256x4100", "--split-k", "8", "-o", str(out)])
    assert code == 2 and not out.exists()
    assert "split-K 8 did not take effect for GEMM 16x256x4100" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("target, shape", [(t, s) for t in ("gfx942", "gfx950", "gfx1151")
                                           for s in ("16x4096x4096", "512x512x16384")
                                           if (t, s) != ("gfx942", "16x4096x4096")])
def test_split_k_matches_float64_on_every_amd_target(tmp_path, target, shape):
    result = emulate_gemm(compile_split(tmp_path, target, shape))
    assert result.passed, result.summary()


def test_out_of_range_reads_name_the_kernel_that_made_them(tmp_path):
    """M = 17 leaves edge tiles in the partial-GEMM dispatch, whose buffer loads read past num_records (0 on
    hardware); the two kernels of the program share one memory, and each reported load is the line of the listing
    that holds it (not a pc of the other kernel)."""
    folder = compile_split(tmp_path, "gfx942", "17x4096x4096")
    result = emulate_gemm(folder)
    assert result.passed, result.summary()
    listing = next((folder / "dump").glob("*.rocmasm")).read_text().splitlines()
    assert result.out_of_range_reads
    for read in result.out_of_range_reads:
        assert listing[read["line"] - 1].strip() == read["instruction"] and read["instruction"].startswith("buffer_")


def test_split_k_is_verified_on_cuda_too(tmp_path):
    """The CUDA route passes the same flag and checks the same two dispatches (no emulator there: compile only)."""
    folder = compile_split(tmp_path, "sm_80", "16x4096x4096")
    report = json.loads((folder / "report.json").read_text())
    assert len(report["dispatches"]) == 2 and report["verified"]


def test_a_split_matvec_is_recognised_and_matches(tmp_path):
    """With M = 1 IREE names the partial GEMMs a matvec (`matvec_like_4x1x4096x1024`); the check accepts that name
    and the emulated result matches float64."""
    folder = compile_split(tmp_path, "gfx942", "1x4096x4096", split=4)
    configured = "".join(p.read_text() for p in sorted((folder / "dump").glob("configured_*.mlir")))
    assert "matvec_like_4x1x4096x1024_" in configured
    result = emulate_gemm(folder)
    assert result.passed, result.summary()
