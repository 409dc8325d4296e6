"""Split-K with our kernels (`--pipeline split-k`, and `auto` where its rule splits): the program, the rule, the
checks in the compiled output, and emulated results against float64.

The float64 check keeps the unsplit bound, relative_tolerance(K): each output is still K products summed in f32,
now as S chains of K/S and a chain of S, whose worst-case error (γ_{K/S+S}) is below that of one chain of K.
"""

import json

import pytest
from iree.compiler import ir

from pipelines import flow
from pipelines.cli import main
from pipelines.emulator import emulate_gemm
from pipelines.inspect import inspect_dump
from pipelines.named import plan_for, split_plan
from pipelines.routes import route_for
from pipelines.targets import get_target
from pipelines.verify import FallbackError
from transforms.problem import Gemm
from transforms.split_k import SplitK, Streaming, build_split_module, streaming_info
from transforms.schedule import Schedule
from pipelines.routes.split import SplitReductionRoute

SPLIT = SplitReductionRoute.name  # the route's name, as a job names it

SM80 = get_target("sm_80")


def gemm(shape, layout="nn", dtype="bf16"):
    m, n, k = (int(v) for v in shape.split("x"))
    return Gemm(m=m, n=n, k=k, dtype=dtype, layout=layout)


@pytest.mark.parametrize("shape, splits, kernel", [
    ("1x4096x4096", 64, Streaming), ("1x8192x8192", 64, Streaming), ("16x4096x4096", 16, Schedule),
    ("16x14336x4096", 8, Schedule), ("64x4096x14336", 16, Schedule), ("128x14336x4096", 4, Schedule),
    ("1024x1024x65536", 4, Schedule), ("24x4096x4096", 16, Schedule)])
def test_the_rule_splits_skinny_and_long_k_problems(shape, splits, kernel):
    split, why = split_plan(gemm(shape), SM80)
    assert isinstance(split, SplitK) and split.splits == splits and isinstance(split.partial, kernel), why
    assert why.startswith(f"split-K {splits}: ")


@pytest.mark.parametrize("problem, reason", [
    (gemm("4096x4096x4096"), "data-parallel: 1024 tiles of 128x128 give each of the 108 compute units"),
    (gemm("1x4096x4096", layout="nt"), "IREE's own matrix-vector kernel"),
    (gemm("16x4096x4096", dtype="f8E4M3FN"), "split-K takes plain f16/bf16 GEMMs"),
    (gemm("16x4096x256"), "K = 256 is too short to split"),
    (gemm("1x4000x4096"), "no split-K kernel fits")])
def test_the_rule_leaves_other_problems_data_parallel_and_says_why(problem, reason):
    split, why = split_plan(problem, SM80)
    assert split is None and reason in why


def test_auto_splits_a_decode_gemm_and_keeps_square_ones():
    assert isinstance(plan_for("auto", gemm("16x8192x8192"), SM80), SplitK)
    assert isinstance(plan_for("auto", gemm("4096x4096x4096"), SM80), Schedule)


def test_unit_m_is_left_out_of_the_partial_op():
    """IREE folds a unit M away and rebuilds the op without our configuration: the program never has one."""
    problem = gemm("1x4096x4096")
    with ir.Context(), ir.Location.unknown():
        split = SplitK(64, Streaming(256, 8))
        module = build_split_module(problem, split, streaming_info(problem, split.partial, 32))
        module.operation.verify()
        text = str(module)
    assert "tensor<64x4096xf32>" in text and "tensor<64x1x4096xf32>" not in text
    assert "reduction = [0, 0, 8], thread = [1, 8, 0], workgroup = [1, 256, 0]" in text


@pytest.mark.parametrize("target, shape, layout, kernel", [
    ("sm_80", "1x4096x4096", "nn", "streaming"), ("sm_80", "64x4096x4096", "nt", "tile"),
    ("gfx942", "16x4096x4096", "nt", "tile"), ("gfx1151", "4x4096x4096", "tn", "streaming")])
def test_split_kernels_compile_and_are_verified(tmp_path, target, shape, layout, kernel):
    out = tmp_path / "out"
    assert main(["compile", "--target", target, "--shape", shape, "--layout", layout, "--pipeline", "split-k",
                 "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["verified"] and report["split_k"]["partial_kernel"] == kernel
    assert len(report["dispatches"]) == 2
    partial = report["dispatches"][0]
    assert bool(partial["mma"]) == (kernel == "tile")


def test_a_configuration_that_did_not_take_effect_is_an_error(tmp_path):
    """The output is checked against what was asked: a request for 512 columns per workgroup is not found in a
    kernel compiled with 256."""
    job = flow.Job(SM80, "split-k", (gemm("1x4096x4096"),), (None,), route=SPLIT, plan=SplitK(64, Streaming(256, 8)))
    prepared = flow.prepare(job)
    flow.compile_job(prepared, tmp_path / "out")
    asked = flow.prepare(flow.Job(SM80, "split-k", job.gemms, (None,), route=SPLIT, plan=SplitK(64, Streaming(512, 8))))
    stats = inspect_dump(tmp_path / "out" / "dump", SM80)
    with pytest.raises(FallbackError, match="no dispatch computes the partial products"):
        route_for(asked.job).verify(asked, tmp_path / "out" / "dump", stats)


def test_split_k_flag_sets_s_of_the_split_pipeline(tmp_path):
    out = tmp_path / "out"
    assert main(["compile", "--target", "sm_80", "--shape", "16x4096x4096", "--pipeline", "split-k", "--split-k", "4",
                 "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["split_k"]["splits"] == 4 and report["split_k"]["why"] == "split-K 4: asked for with --split-k"


def test_split_pipeline_refuses_a_problem_it_does_not_split(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", "--target", "sm_80", "--shape", "4096x4096x4096", "--pipeline", "split-k",
                 "-o", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "pipeline 'split-k' does not split 4096x4096x4096" in err and "Traceback" not in err


@pytest.mark.parametrize("target, shape", [
    pytest.param(t, s, marks=[pytest.mark.slow] if s == "512x512x16384" else [])
    for t in ("gfx942", "gfx950", "gfx1151") for s in ("16x4096x4096", "512x512x16384", "1x4096x4096")])
def test_split_kernels_match_float64_on_every_amd_target(tmp_path, target, shape):
    """The partial products and IREE's sum of them, emulated in order through one memory."""
    out = tmp_path / "out"
    assert main(["compile", "--target", target, "--shape", shape, "--pipeline", "split-k", "-o", str(out)]) == 0
    result = emulate_gemm(out)
    assert result.passed, result.summary()


def test_tune_searches_split_plans_and_searched_serves_the_winner(tmp_path, monkeypatch):
    """`tune --route split` plans the rule's choice first; its winner is cached apart and `searched` serves it
    where it beat the searched schedule."""
    from dataclasses import asdict

    from pipelines.named import SPLIT_CANDIDATE, split_candidates
    from pipelines.tune import finalize

    problem = gemm("16x4096x4096")
    found = split_candidates(problem, SM80)
    assert found[0] == split_plan(problem, SM80)[0] and len(found) > 5
    out = tmp_path / "plan"
    assert main(["tune", "--target", "sm_80", "--shape", "16x4096x4096", "--route", "split", "--limit", "1",
                 "--compile-only", "--cache", str(tmp_path / "c.json"), "-o", str(out)]) == 0
    cases = json.loads((out / "plan.json").read_text())["cases"]
    assert [c["pipeline"] for c in cases] == ["default", SPLIT_CANDIDATE] and cases[1]["status"] == "ok"
    # The runner's rows, written by hand: the second candidate is the faster one.
    slow, fast = found[0], found[1]
    cases = [dict(cases[0]), dict(cases[1], id="slow"), dict(cases[1], id="fast", schedule=fast.describe(),
                                                               schedule_fields=asdict(fast))]
    cases[1]["schedule_fields"] = asdict(slow)
    (out / "plan.json").write_text(json.dumps({"target": "sm_80", "cases": cases}))
    rows = [dict({k: v for k, v in c.items() if k != "vendor"}, status="ok", correct=True, device_name="test GPU",
                 tflops=t) for c, t in zip(cases, (1.0, 2.0, 3.0))]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cache = tmp_path / "c.json"
    summary = finalize(problem, SM80, out, cache)
    assert summary["route"] == "split-k" and summary["tflops"] == 3.0
    monkeypatch.setenv("PIPELINES_TUNE_CACHE", str(cache))
    assert plan_for("searched", problem, SM80) == fast


def test_a_missing_sum_dispatch_is_an_error(tmp_path):
    """The partial products alone are not the GEMM: without a dispatch summing the S slices, the check fails."""
    from pipelines.inspect import inspect_dump as stats_of

    job = flow.Job(SM80, "split-k", (gemm("1x4096x4096"),), (None,), route=SPLIT, plan=SplitK(64, Streaming(256, 8)))
    prepared = flow.prepare(job)
    flow.compile_job(prepared, tmp_path / "out")
    stats = [s for s in stats_of(tmp_path / "out" / "dump", SM80) if "dispatch_0" in s.dispatch]
    with pytest.raises(FallbackError, match="no dispatch sums the 64 partial products"):
        route_for(job).verify(prepared, tmp_path / "out" / "dump", stats)


def test_the_reference_bound_of_a_sum_counts_its_terms():
    """The float64 reference of the slice sum: its value, and its bound = the inputs' bounds summed plus f32
    accumulation over the summed terms (relative_tolerance(4096) is twice relative_tolerance(1024))."""
    import numpy as np

    from pipelines.emulator.interpret import Interpreter
    from pipelines.reference import relative_tolerance

    text = """func.func @f(%x: tensor<4096x4xf32>) -> tensor<4xf32> {
      %z = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<4xf32>
      %i = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
      %r = linalg.generic {indexing_maps = [affine_map<(n, s) -> (s, n)>, affine_map<(n, s) -> (n)>],
                           iterator_types = ["parallel", "reduction"]}
          ins(%x : tensor<4096x4xf32>) outs(%i : tensor<4xf32>) {
      ^bb0(%a: f32, %acc: f32):
        %s = arith.addf %acc, %a : f32
        linalg.yield %s : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }"""
    x = np.random.default_rng(0).standard_normal((4096, 4))
    with ir.Context(), ir.Location.unknown():
        (value, bound), = Interpreter(ir.Module.parse(text), "f").run([x])
    assert np.allclose(value, x.sum(axis=0))
    assert np.allclose(bound, relative_tolerance(4096) * np.abs(x).sum(axis=0).max())
