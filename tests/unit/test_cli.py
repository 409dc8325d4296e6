"""The command line: bad input is one sentence, exit code 2, no traceback and no output folder; good input
compiles for every target kind."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pipelines(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})


@pytest.mark.parametrize("args, message", [
    (["--target", "gfx900", "--shape", "64x64x64"], "unknown target 'gfx900'"),
    (["--target", "gfx1151", "--shape", "64x64x64", "--dtype", "f8e4m3fnuz"], "gfx1151 has no fp8 matrix"),
    (["--target", "gfx942", "--shape", "4096x4096x4096", "--tile", "256x256x128", "--warps", "2x4", "--mma",
      "MFMA_F32_16x16x16_BF16"], "needs 134144 B of LDS; gfx942 has 65536"),
    (["--target", "gfx942", "--shape", "0x64x64"], "size M=0 must be a positive integer"),
    (["--target", "gfx942", "--shape=-5x64x64"], "size M=-5 must be a positive integer"),
    (["--target", "gfx942", "--input", "BAD"], "is not valid MLIR"),
    (["--target", "gfx942", "--shape", "512x512x512", "--pipeline", "tuned", "--warps", "2x2",
      "--workgroup-size", "512"], "workgroup size 512 does not match the 2x2 wave grid"),
    (["--target", "gfx942", "--shape", "512x512x512", "--dtype", "f8e4m3fn"], "gfx942 runs fp8 as"),
    (["--target", "gfx942", "--shape", "64xfoo"], "must be integers of the form"),
    (["--target", "cpu", "--shape", "64x64x64", "--pipeline", "tuned"], "only the 'default' pipeline"),
])
def test_bad_input_is_one_sentence_and_leaves_nothing(tmp_path, args, message):
    (tmp_path / "bad.mlir").write_text("func.func @f(%a: tensor<4x4xf32>\n")
    args = [str(tmp_path / "bad.mlir") if a == "BAD" else a for a in args]
    done = pipelines("compile", *args, "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir"]


def test_usage_mistake_is_one_line(tmp_path):
    done = pipelines("compile", "--shape", "64x64x64", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--target" in done.stderr


@pytest.mark.parametrize("target, expect", [
    ("gfx942", "v_mfma_f32_16x16x16_bf16"), ("gfx950", "v_mfma_f32_16x16x32_bf16"),
    ("gfx1151", "v_wmma_f32_16x16x16_bf16"), ("sm_89", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("cpu", None),
])
def test_compile_every_target_kind(tmp_path, target, expect):
    done = pipelines("compile", "--target", target, "--shape", "256x256x256", "--json", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["target"] == target and (tmp_path / "out" / "gemm.vmfb").stat().st_size > 0
    for key in ("lds_bytes", "vgpr_count", "spill_count", "mma_count"):
        assert key in report
    if expect:
        assert report["mma"].get(expect, 0) > 0


def test_spec_is_accepted_by_plain_iree_compile(tmp_path):
    assert pipelines("spec", "--target", "gfx942", "--shape", "1024x1024x1024", "--layout", "nt", "--pipeline",
                     "tuned", "-o", "spec.mlir", cwd=tmp_path).returncode == 0
    assert pipelines("compile", "--target", "gfx942", "--shape", "1024x1024x1024", "--layout", "nt", "-o", "src",
                     cwd=tmp_path).returncode == 0
    iree = Path(sys.executable).parent / "iree-compile"
    done = subprocess.run([str(iree), "src/gemm.mlir", "--iree-hal-target-device=hip", "--iree-rocm-target=gfx942",
                           "--iree-codegen-tuning-spec-path=spec.mlir", "-o", "x.vmfb",
                           "--iree-hal-dump-executable-files-to=dump"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    configured = (tmp_path / "dump" / "configured_module_gemm_dispatch_0.mlir").read_text()
    assert "__tuning_spec_applied__" in configured


def test_inspect_reads_a_compiled_folder(tmp_path):
    assert pipelines("compile", "--target", "gfx942", "--shape", "512x512x512", "--pipeline", "auto", "-o", "out",
                     cwd=tmp_path).returncode == 0
    done = pipelines("inspect", "out", "--json", cwd=tmp_path)
    assert done.returncode == 0
    kernel = json.loads(done.stdout)["dispatches"][0]
    assert kernel["lds_bytes"] > 0 and kernel["spill_count"] == 0 and kernel["occupancy"] >= 1
