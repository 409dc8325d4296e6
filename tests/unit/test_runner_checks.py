"""The runner's verdicts at their boundaries, with the device call replaced by a result we control: a result off
by just more than the tolerance is a wrong result, just less is correct; the float64 reference follows each
operand layout on non-square shapes; TFLOP/s come from the median time."""

import json
import subprocess
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
import pytest

from pipelines.reference import relative_tolerance
from pipelines import runner
from transforms.problem import Epilogue, Gemm, input_shapes


def case_for(gemm: Gemm) -> dict:
    shapes = input_shapes(gemm)
    return {"id": "c", "label": "l", "problem": asdict(gemm), "pipeline": "default", "schedule": "s", "target": "cpu",
            "flops": gemm.flops, "repeat": 1, "function": "gemm", "vmfb": "gemm.vmfb", "status": "ok",
            "input_shapes": [list(s) for s in shapes],
            "input_dtypes": [gemm.dtype, gemm.dtype] + ["f32"] * (len(shapes) - 2)}


@pytest.mark.parametrize("k, tolerance", [(1, 1e-4), (1024, 1e-4), (4096, 2e-4), (16384, 4e-4)])
def test_tolerance_grows_with_sqrt_k_above_1024(k, tolerance):
    assert relative_tolerance(k) == pytest.approx(tolerance)


@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
def test_reference_follows_the_layout_on_a_non_square_problem(layout):
    gemm = Gemm(3, 5, 7, "f16", layout)
    case = case_for(gemm)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(gemm.a_shape).astype(np.float16)
    b = rng.standard_normal(gemm.b_shape).astype(np.float16)
    a_mk = a.T if layout == "tn" else a
    b_kn = b.T if layout == "nt" else b
    got = runner.reference(case, [a, b])
    assert got.shape == (3, 5)
    np.testing.assert_allclose(got, a_mk.astype(np.float64) @ b_kn.astype(np.float64), rtol=1e-12)


def test_reference_epilogues():
    gemm = Gemm(2, 3, 4, "f16", "nn", epilogue=Epilogue("alpha-beta", alpha=2.0, beta=-0.5))
    a, b, c = np.ones((2, 4), np.float16), np.ones((4, 3), np.float16), np.full((2, 3), 3.0, np.float32)
    np.testing.assert_allclose(runner.reference(case_for(gemm), [a, b, c]), np.full((2, 3), 2 * 4 - 1.5))
    relu = gemm.with_(epilogue=Epilogue("bias-relu"))
    bias = np.array([-5.0, 0.0, 1.0], np.float32)
    np.testing.assert_allclose(runner.reference(case_for(relu), [a, b, bias]), [[0.0, 4.0, 5.0]] * 2)
    gelu = gemm.with_(epilogue=Epilogue("bias-gelu"))
    bias = np.array([-3.0, -4.0, -5.0], np.float32)  # x = 1, 0, -1: GELU(x) = x·Φ(x)
    np.testing.assert_allclose(runner.reference(case_for(gelu), [a, b, bias]),
                               [[0.8413447460685429, 0.0, -0.15865525393145707]] * 2, rtol=1e-12)


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """run_case with the device replaced: the kernel returns the reference scaled by (1 + offset) in its
    largest element, and each repetition takes the given milliseconds."""
    def run(gemm: Gemm, offset: float, times_ms=(2.0, 1.0, 4.0)) -> dict:
        def fake_run_once(case, vmfb, device, arrays):
            want = runner.reference(case, arrays)
            got = want.copy()
            index = np.unravel_index(np.argmax(np.abs(want)), want.shape)
            got[index] += offset * max(1.0, abs(want[index]))
            return got.astype(np.float32) if offset else want.astype(np.float64)
        monkeypatch.setattr(runner, "run_once", fake_run_once)
        monkeypatch.setattr(runner, "time_iree", lambda *args: list(times_ms))
        env = {"device_name": "test", "device": "local-task"}
        return runner.run_case(case_for(gemm), tmp_path, "local-task", 3, env, runner.ProblemData(tmp_path))
    return run


def test_result_just_inside_the_tolerance_is_correct(measured):
    gemm = Gemm(16, 8, 4096, "f16", "nn")
    row = measured(gemm, 0.9 * relative_tolerance(4096))
    assert row["status"] == "ok" and row["correct"] and row["max_rel_error"] <= row["tolerance"]


def test_result_just_outside_the_tolerance_is_a_wrong_result(measured):
    gemm = Gemm(16, 8, 4096, "f16", "nn")
    row = measured(gemm, 1.5 * relative_tolerance(4096))
    assert row["status"] == "wrong-result" and row["correct"] is False
    assert row["max_rel_error"] > row["tolerance"] == pytest.approx(2e-4)


def test_tflops_from_the_median_time(measured):
    gemm = Gemm(16, 8, 64, "f16", "nn")
    row = measured(gemm, 0.0, times_ms=(2.0, 1.0, 4.0))
    assert row["median_ms"] == 2.0 and row["min_ms"] == 1.0 and row["max_ms"] == 4.0 and row["samples"] == 3
    assert row["tflops"] == pytest.approx(gemm.flops / 2e-3 / 1e12)


def test_compile_failure_recorded_by_the_planner_is_not_run(measured, tmp_path):
    case = dict(case_for(Gemm(16, 8, 64, "f16", "nn")), status="compile-failed", error="no")
    row = runner.run_case(case, tmp_path, "local-task", 3, {"device_name": "t"}, runner.ProblemData(tmp_path))
    assert row["status"] == "compile-failed" and "tflops" not in row


def test_error_is_relative_to_the_largest_result(measured):
    # At K=64 the largest |C| is ~20 (standard-normal inputs): the error is divided by it, not by a floor above it,
    # so an error just over the tolerance relative to the result is a wrong result.
    gemm = Gemm(16, 8, 64, "f16", "nn")
    row = measured(gemm, 1.5 * relative_tolerance(64))
    assert row["status"] == "wrong-result"
    assert row["max_rel_error"] == pytest.approx(1.5 * relative_tolerance(64), rel=1e-2)


def test_a_benchmark_of_a_repeated_dispatch_is_divided_into_gemms(monkeypatch, tmp_path):
    """iree-benchmark-module times one call of the function, which runs the dispatch `repeat` times: 300 µs a
    call of 3 repeats is 0.1 ms a GEMM, whatever unit the tool reports in; the aggregate rows are not timings."""
    def report(unit, value):
        benchmarks = [{"run_type": "iteration", "real_time": value, "time_unit": unit}] * 2 + [
            {"run_type": "aggregate", "aggregate_name": "mean", "real_time": 99 * value, "time_unit": unit}]
        return SimpleNamespace(returncode=0, stdout=json.dumps({"benchmarks": benchmarks}), stderr="")

    for unit, value in (("us", 300.0), ("ns", 300000.0), ("ms", 0.3)):
        monkeypatch.setattr(subprocess, "run", lambda *a, report=report(unit, value), **k: report)
        got = runner.time_iree({"function": "f", "repeat": 3}, tmp_path / "m.vmfb", "local-task",
                               SimpleNamespace(files=[]), repetitions=2)
        assert got == pytest.approx([0.1, 0.1]), (unit, got)
