"""Messages that tell the truth: the pipelines and devices a target has, a tile that is invalid rather than a
hazard, a spec CUDA would never read, a folder without its dump, an elementwise consumer of an input GEMM, and
the largest problem any target can hold. Each test runs in-process through `pipelines.cli.main`."""

import json
from pathlib import Path

import pytest
from iree.compiler import ir

from pipelines import cli
from transforms.problem import MAX_PROBLEM_BYTES, Epilogue, Gemm, ProblemError, gemms_from_mlir, parse_module
from transforms.schedule import ScheduleError
from transforms.warpgroups import SCHEDULES, DoubleBuffered, Interleave4, PingPong8, ProducerConsumer

REPO = Path(__file__).resolve().parents[2]


def run(argv, capsys):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bench_on_cpu_without_pipelines_compiles_the_pipelines_cpu_has(tmp_path, capsys):
    code, out, err = run(["bench", "--target", "cpu", "--shape", "64x64x64", "--compile-only", "-o",
                          tmp_path / "plan"], capsys)
    assert code == 0, err
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert [case["pipeline"] for case in plan["cases"]] == ["default"]
    assert "--device local-task" in out and "--device cuda" not in out


def test_a_pipeline_the_target_lacks_is_named_with_the_ones_it_has(tmp_path, capsys):
    code, _, err = run(["bench", "--target", "gfx942", "--shape", "64x64x64", "--pipelines", "default,codegen-raster",
                        "--compile-only", "-o", tmp_path / "plan"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert ("'codegen-raster' does not run on gfx942; choose one of default, tuned, auto, searched, ukernel, "
            "codegen, split-k.") in err
    assert not (tmp_path / "plan").exists()


def test_tune_on_cpu_says_there_is_nothing_to_search(tmp_path, capsys):
    code, _, err = run(["tune", "--target", "cpu", "--shape", "64x64x64", "--compile-only", "-o", tmp_path / "t"],
                       capsys)
    assert code == 2 and "tune searches GPU schedules" in err and "--pipelines default" in err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("command, target, device", [
    ("bench", "gfx942", "hip"), ("bench", "gfx1151", "hip"), ("bench", "sm_80", "cuda"), ("bench", "cpu", "local-task"),
    ("tune", "gfx942", "hip"), ("tune", "gfx1151", "hip"), ("tune", "sm_80", "cuda"),  # tune refuses cpu
])
def test_compile_only_hint_names_the_targets_device(command, target, device, tmp_path, monkeypatch, capsys):
    # the hint, not the compiling
    monkeypatch.setattr(cli, "build_plan", lambda target, cases, folder, force=False, keep=(), **_: folder)
    monkeypatch.setattr(cli, "plan_search",
                        lambda gemm, target, folder, *_, **__: folder)
    extra = ["--pipelines", "default"] if command == "bench" else ["--cache", tmp_path / "cache.json"]
    code, out, err = run([command, "--target", target, "--shape", "256x256x256", "--dtype", "f16", "--compile-only",
                          *extra, "-o", tmp_path / "plan"], capsys)
    assert code == 0, err
    assert f"python -m pipelines.runner {tmp_path / 'plan'} --device {device}\n" in out, out


@pytest.mark.parametrize("command", ["bench", "tune"])
@pytest.mark.parametrize("target, device, wanted", [("gfx942", "local-task", "hip"), ("gfx950", "cuda", "hip"),
                                                    ("sm_89", "hip://0", "cuda"), ("cpu", "cuda://1", "local-task")])
def test_a_device_that_cannot_run_the_target_is_refused_before_compiling(command, target, device, wanted, tmp_path,
                                                                         monkeypatch, capsys):
    def compiled(*args, **kwargs):
        raise AssertionError("compiled before refusing the device")

    monkeypatch.setattr(cli, "build_plan", compiled)
    monkeypatch.setattr(cli, "plan_search", compiled)
    monkeypatch.setattr(cli, "device_or_error", compiled)
    code, _, err = run([command, "--target", target, "--shape", "256x256x256", "--device", device, "-o",
                        tmp_path / "out", "--cache" if command == "tune" else "--repetitions",
                        tmp_path / "cache.json" if command == "tune" else "1"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    if command == "tune" and target == "cpu":
        assert "tune searches GPU schedules" in err
    else:
        assert f"--device {device} cannot run {target} executables; use --device {wanted}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tile", ["100x100x7", "256x256x8", "48x256x64", "16x16x16"])
def test_explain_says_a_tile_is_invalid_instead_of_reporting_a_hazard(tile, capsys):
    code, out, err = run(["explain", "--schedule", "pingpong8", "--tile", tile], capsys)
    assert code == 2 and f"pingpong8 tile {tile} is invalid" in err and "hazard" not in err
    assert out == ""  # refused before the table is printed


def test_explain_still_draws_a_valid_tile(capsys):
    code, out, _ = run(["explain", "--schedule", "pingpong8", "--tile", "128x128x32"], capsys)
    assert code == 0 and "hazard check: no LDS race" in out


@pytest.mark.parametrize("schedule, good, bad", [
    # pingpong8: each group's half of M in 16-row fragments, (M/32)(N/16)(K/16) MMAs over 4 waves
    (PingPong8, (32, 64, 32), (32, 16, 16)),
    (PingPong8, (64, 32, 32), (48, 32, 32)),
    # interleave4: (M/16)(N/16)(K/16) MMAs in two halves over 4 waves
    (Interleave4, (32, 32, 32), (32, 32, 16)),
    # double_buffered: over `waves` waves, K in the intrinsic's K
    (DoubleBuffered, (32, 32, 16), (16, 32, 16)),
    (DoubleBuffered, (32, 32, 16), (32, 32, 24)),
    # producer_consumer: only the 8 consumers multiply
    (ProducerConsumer, (64, 32, 16), (32, 32, 16)),
])
def test_check_tile_boundaries(schedule, good, bad):
    schedule(tile=good).check_tile()
    with pytest.raises(ScheduleError, match="is invalid"):
        schedule(tile=bad).check_tile()


def test_every_default_warp_group_schedule_has_a_valid_tile():
    for cls in SCHEDULES.values():
        cls().check_tile()


def test_spec_for_cuda_points_at_compile_and_writes_nothing(tmp_path, capsys):
    code, out, err = run(["spec", "--target", "sm_80", "--shape", "512x512x512", "--dtype", "f16", "--pipeline",
                          "tuned", "-o", tmp_path / "spec.mlir"], capsys)
    assert code == 2 and "reads no tuning spec for CUDA" in err and "`pipelines compile`" in err
    assert "compilation_info" in err and out == "" and not (tmp_path / "spec.mlir").exists()


def test_spec_for_the_cuda_codegen_route_is_its_library(tmp_path, capsys):
    """The codegen route's spec is the transform library CUDA does read (with the library flag): not refused."""
    code, _, err = run(["spec", "--target", "sm_80", "--shape", "512x512x512", "--dtype", "f16", "--pipeline",
                        "codegen", "-o", tmp_path / "library.mlir"], capsys)
    assert code == 0, err
    assert "@__kernel_config" in (tmp_path / "library.mlir").read_text()


def test_inspect_without_dump_says_so(tmp_path, capsys):
    folder = tmp_path / "k"
    code, _, err = run(["compile", "--target", "cpu", "--shape", "64x64x64", "-o", folder], capsys)
    assert code == 0, err
    code, out, _ = run(["inspect", folder], capsys)
    assert code == 0 and "module_gemm_dispatch_0" in out
    for path in sorted((folder / "dump").iterdir()):
        path.unlink()
    code, out, err = run(["inspect", folder], capsys)
    assert code == 2 and "holds no compiled dispatch" in err and out == ""
    (folder / "dump").rmdir()
    code, out, err = run(["inspect", folder], capsys)
    assert code == 2 and f"{folder} has report.json but no dump/ folder" in err and out == ""


GENERIC_CONSUMER = """
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (m)>
func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x64xbf16>) -> (tensor<64x64xf32>, tensor<64xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %p = linalg.matmul ins(%a, %b : tensor<64x32xbf16>, tensor<32x64xbf16>) outs(%f : tensor<64x64xf32>)
      -> tensor<64x64xf32>
  %q = linalg.matmul ins(%a, %b : tensor<64x32xbf16>, tensor<32x64xbf16>) outs(%f : tensor<64x64xf32>)
      -> tensor<64x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.maximumf %x, %z : f32
      linalg.yield %r : f32
  } -> tensor<64x64xf32>
  %re = tensor.empty() : tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%q : tensor<64x64xf32>) outs(%re : tensor<64xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.addf %x, %o : f32
      linalg.yield %r : f32
  } -> tensor<64xf32>
  return %relu, %sum : tensor<64x64xf32>, tensor<64xf32>
}
"""


@pytest.mark.parametrize("source, kinds", [
    ((REPO / "mlir" / "examples" / "mlp_bf16_nt.mlir").read_text(), ["arith.truncf", "none"]),
    (GENERIC_CONSUMER, ["linalg.generic", "none"]),  # a reduction is not an elementwise epilogue
])
def test_an_elementwise_consumer_of_an_input_contraction_is_its_epilogue(source, kinds):
    with ir.Context(), ir.Location.unknown():
        gemms = [g for _, g in gemms_from_mlir(parse_module(source, "input"), "input")]
    assert [g.epilogue.kind for g in gemms] == kinds


def test_the_report_names_the_fused_consumer(tmp_path, capsys):
    code, out, err = run(["compile", "--target", "cpu", "--input", REPO / "mlir" / "examples" / "mlp_bf16_nt.mlir",
                          "-o", tmp_path / "mlp"], capsys)
    assert code == 0, err
    assert "gemm 512x2048x1024 bf16 nt epilogue fused elementwise (arith.truncf):" in out
    assert "gemm 512x1024x2048 bf16 nt epilogue none:" in out


def test_problems_larger_than_any_device_memory_are_refused_at_the_limit():
    k = (MAX_PROBLEM_BYTES - 4) // 4  # 1x1xK bf16: A and B 2K bytes each, the f32 result 4 bytes
    assert Gemm(1, 1, k).footprint_bytes == MAX_PROBLEM_BYTES
    with pytest.raises(ProblemError, match=r"needs 2\.88e\+11 B .* no target has more than 2\.88e\+11 B"):
        Gemm(1, 1, k + 1)
    # batch 2 of half the K holds the same A and B; C of alpha-beta adds its 4 bytes per batch
    assert Gemm(1, 1, k // 2, batch=2).footprint_bytes <= MAX_PROBLEM_BYTES
    with pytest.raises(ProblemError, match="no target has more than"):
        Gemm(1, 1, k // 2, batch=2, epilogue=Epilogue("alpha-beta"))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_an_epilogue_with_a_non_finite_scale_is_refused(value):
    with pytest.raises(ProblemError, match="must be a finite number"):
        Epilogue("alpha-beta", alpha=value)
    with pytest.raises(ProblemError, match="must be a finite number"):
        Epilogue("alpha-beta", beta=value)


@pytest.mark.parametrize("shape, refused", [((4, 4096, 4096), True), ((4096, 1, 4096), True),
                                            ((5, 4096, 4096), False), ((4096, 5, 4096), False)])
def test_fp8_gemms_iree_cannot_compile_for_sm89_are_refused_before_compiling(shape, refused):
    """iree-compile 3.13 stops on fp8 GEMMs with M or N of 1-4 for sm_89 (default pipeline included)."""
    from pipelines import flow
    from pipelines.targets import TARGETS, TargetError
    from transforms.problem import Gemm

    job = flow.Job(TARGETS["sm_89"], "default", (Gemm(*shape, "f8E4M3FN", "nn"),), (None,))
    if refused:
        with pytest.raises(TargetError, match=r"iree-compile 3.13 stops in LLVM translation .* (M|N) of 1-4 for sm_89"):
            flow.prepare(job)
    else:
        flow.prepare(job)
    flow.prepare(flow.Job(TARGETS["sm_89"], "default", (Gemm(*shape, "bf16", "nn"),), (None,)))  # 16-bit compiles


@pytest.mark.parametrize("m, layout, dtype, refused", [(4, "nn", "bf16", False), (5, "nn", "bf16", True),
                                                       (8, "nt", "f16", True), (9, "nn", "bf16", False),
                                                       (8, "tn", "bf16", False), (8, "nn", "f8E4M3FN", False)])
def test_gemms_iree_crashes_on_for_gfx950_are_refused_before_compiling(m, layout, dtype, refused):
    """iree-compile 3.13 crashes on gfx950 16-bit NN/NT GEMMs with M of 5-8, IREE's default included."""
    from pipelines import flow
    from pipelines.targets import TARGETS, TargetError
    from transforms.problem import Gemm

    job = flow.Job(TARGETS["gfx950"], "default", (Gemm(m, 4096, 4096, dtype, layout),), (None,))
    if refused:
        with pytest.raises(TargetError, match=r"crashes .* M of 5-8 for gfx950"):
            flow.prepare(job)
    else:
        flow.prepare(job)


@pytest.mark.parametrize("hangs, compiled", [(1, True), (2, False)])
def test_a_hung_compile_runs_once_more_then_is_one_sentence(hangs, compiled, tmp_path, monkeypatch, capsys):
    """A timed-out iree-compile (once in the 4560 compiles of the full sweep) is run again; twice is an error."""
    import subprocess

    from pipelines import compiler
    from pipelines.compiler import CompileError, run_iree_compile
    from pipelines.targets import TARGETS

    real, calls = compiler.run_watched, []

    def run(command, **kwargs):
        calls.append(command)
        if len(calls) <= hangs:
            raise subprocess.TimeoutExpired(command, 31.0, output="no CPU used for 30 s")
        return real(command, **kwargs)

    monkeypatch.setattr(compiler, "run_watched", run)
    source = tmp_path / "gemm.mlir"
    source.write_text("func.func @gemm(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }\n")
    if compiled:
        done = run_iree_compile(source, tmp_path, TARGETS["cpu"])
        assert done.vmfb.is_file() and len(calls) == 2
        assert capsys.readouterr().err.count("compiling once more") == 1
    else:
        with pytest.raises(CompileError, match=r"hung \(no CPU for 30 s\) or ran past 300 s for cpu, 2 times\.$"):
            run_iree_compile(source, tmp_path, TARGETS["cpu"])
        assert len(calls) == 2
