"""The codegen route on ROCm (the lane route of transforms/codegen_script.py): its refusals, its verifier, and its
kernels' numbers on the CPU emulator against float64."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import flow
from pipelines.inspect import inspect_dump
from pipelines.routes import route_for
from pipelines.emulator import emulate_gemm
from pipelines.named import get_pipeline
from pipelines.targets import get_target
from pipelines.verify import FallbackError
from transforms import codegen_script
from transforms.problem import Gemm
from pipelines.routes.lanes import LanesRoute

LANES = LanesRoute.name  # the route's name, as a job names it


def verify_job(job: flow.Job, dump: Path, stats) -> None:
    """The job's route checks a compiled dump (the source and library are not read by the check)."""
    route_for(job).verify(flow.Prepared(job, "", None, (None,)), dump, stats)

REPO = Path(__file__).resolve().parents[2]
SHAPE = (256, 384, 192)  # 2x3 blocks of 128x128, K a multiple of 32 but not of 128


def pipelines(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})


@pytest.mark.parametrize("args, message", [
    (["--prefetch", "2"], "reads A and B straight from global memory into each lane (prefetch 1, lds none)"),
    (["--lds", "xor"], "it has no LDS staging yet"),
    (["--mma", "MFMA_F32_16x16x16_BF16"], "MFMA_F32_16x16x16_BF16 does not take f16 on gfx942"),
    (["--tile", "128x128x24"], "K step 24 is not a multiple of MFMA_F32_16x16x16_F16's K=16"),
    (["--shape", "256x384x200"], "is not a whole number of 128x128x32 tiles"),
])
def test_refusals_are_one_sentence(tmp_path, args, message):
    shape = [] if "--shape" in args else ["--shape", "x".join(map(str, SHAPE))]
    done = pipelines("compile", "--target", "gfx942", "--pipeline", "codegen", "--dtype", "f16", *shape, *args,
                     "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def _compile(tmp_path, target: str, dtype: str, layout: str):
    gemm, target = Gemm(*SHAPE, dtype, layout), get_target(target)
    schedule = get_pipeline("codegen").choose(gemm, target)
    out = tmp_path / f"{target.name}_{dtype}_{layout}"
    report = flow.compile_job(flow.prepare(flow.Job(target, "codegen", (gemm,), (schedule,), route=LANES)), out)
    return out, report, gemm, schedule, target


# One case per target, the three layouts and both input types between them (tools/emulate_kernels.py-style sweep
# of all 18 in the closing note); gfx1151 NT uses the gfx11 true16 moves and 24-bit multiplies.
@pytest.mark.parametrize("target, dtype, layout, opcode", [
    ("gfx942", "f16", "nn", "v_mfma_f32_16x16x16_f16"),
    ("gfx950", "bf16", "tn", "v_mfma_f32_16x16x16_bf16"),
    ("gfx1151", "bf16", "nt", "v_wmma_f32_16x16x16_bf16"),
])
def test_lane_route_matches_float64(tmp_path, target, dtype, layout, opcode):
    out, report, *_ = _compile(tmp_path, target, dtype, layout)
    assert report["verified"] and list(report["mma"]) == [opcode]
    assert report["lds_bytes"] == 0 and report["spill_count"] == 0
    assert report["grid"] == [384 // 128, 256 // 128, 1]
    result = emulate_gemm(out)
    assert result.passed, result.summary()
    assert result.unwritten == 0 and result.max_rel_error < 1e-6


def test_lds_in_the_kernel_is_named(tmp_path):
    """A lane route kernel that touches LDS (a lane-private tensor turned into a shared buffer) is refused."""
    out, _, gemm, schedule, target = _compile(tmp_path, "gfx942", "f16", "nn")
    kernel, = inspect_dump(out / "dump", target)
    job = flow.Job(target, "codegen", (gemm,), (schedule,), route=LANES)
    with pytest.raises(FallbackError, match="fragments read per lane from global memory"):
        verify_job(job, out / "dump", [dataclasses.replace(kernel, lds_bytes=16384, lds_writes=32)])
    other = dataclasses.replace(schedule, tile=dataclasses.replace(schedule.tile, mma="MFMA_F32_32x32x8_F16"))
    with pytest.raises(FallbackError, match="MMA intrinsic MFMA_F32_32x32x8_F16"):
        verify_job(flow.Job(target, "codegen", (gemm,), (other,), route=LANES), out / "dump", [kernel])


def test_k_loop_step():
    schedule = get_pipeline("codegen").choose(Gemm(*SHAPE, "f16"), get_target("gfx942"))
    assert codegen_script.lane_k_tiles(schedule) == 2 and schedule.tile.k == 32
