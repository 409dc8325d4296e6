"""`pipelines bench`, `report` and `tune` on this CPU machine: real runs on local-task, with correctness."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.bench import Refused, build_plan, suite_cases
from pipelines.report import tables
from pipelines.runner import run_plan
from pipelines.targets import TARGETS
from pipelines.tune import candidates, finalize
from pipelines.tune_cache import TuneError, cached
from transforms.problem import Gemm
from transforms.schedule import check

REPO = Path(__file__).resolve().parents[2]


def pipelines(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent),
                               "HOME": str(cwd)})


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_bench_local_task_suite(tmp_path):
    done = pipelines("bench", "--target", "cpu", "--suite", "smoke", "--dtype", "bf16,f8e4m3fnuz", "--pipelines",
                     "default", "--device", "local-task", "--repetitions", "2", "-o", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    for row in rows:
        assert row["status"] == "ok" and row["correct"] and row["max_rel_error"] <= row["tolerance"]
        assert row["samples"] == 2 and row["min_ms"] <= row["median_ms"] <= row["max_ms"] and row["tflops"] > 0
    table = (tmp_path / "run" / "results.md").read_text()
    assert "f8E4M3FNUZ 96x80x72 NT" in table and "| yes |" in table
    assert (tmp_path / "run" / "results.png").stat().st_size > 0
    assert (tmp_path / "run" / "results.csv").read_text().startswith("# device")


def test_hip_without_amd_gpu_is_one_sentence(tmp_path):
    done = pipelines("bench", "--target", "gfx942", "--suite", "smoke", "--device", "hip", "-o", "run", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "cannot open device 'hip'" in done.stderr and "AMD GPU" in done.stderr
    assert not (tmp_path / "run").exists()


def test_interrupted_run_resumes(tmp_path):
    gemm = Gemm(64, 64, 64, "bf16", "nn")
    plan = build_plan(TARGETS["cpu"], [(gemm, "default", None), (gemm.with_(layout="nt"), "default", None)],
                      tmp_path / "plan")
    results = plan / "results.jsonl"
    first_case = json.loads((plan / "plan.json").read_text())["cases"][0]
    results.write_text(json.dumps({"id": first_case["id"], "status": "ok", "correct": True, "marker": "kept"}) + "\n")
    run_plan(plan, ["local-task"], repetitions=1)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 2 and rows[0].get("marker") == "kept" and rows[1]["status"] == "ok"


def test_candidates_pass_checks_and_fit_registers():
    gemm = Gemm(8192, 8192, 8192, "bf16", "nn")
    for name in ("sm_89", "gfx942", "gfx950"):
        found = candidates(gemm, TARGETS[name])
        assert len(found) > 5 and len(set(found)) == len(found)
        for schedule in found:
            check(schedule, gemm, TARGETS[name])
    assert all(s.staging.direct_to_lds for s in candidates(gemm, TARGETS["gfx950"]))


def test_finalize_picks_fastest_correct_and_caches(tmp_path):
    gemm = Gemm(64, 64, 64, "bf16", "nn")
    target = TARGETS["cpu"]
    plan = build_plan(target, [(gemm, "default", None), (gemm, "candidate", None)], tmp_path / "plan")
    cases = json.loads((plan / "plan.json").read_text())["cases"]
    # Measured rows are written by hand: a fast candidate whose result was wrong must not be chosen.
    rows = [{"id": cases[0]["id"], "pipeline": "default", "status": "ok", "tflops": 1.0, "schedule": "d"},
            {"id": cases[1]["id"], "pipeline": "candidate", "status": "wrong-result", "correct": False,
             "tflops": 9.0, "schedule": "c"}]
    (plan / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(TuneError, match="no candidate"):
        finalize(gemm, target, plan, tmp_path / "cache.json")
    rows[1].update(status="ok", correct=True)
    (plan / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = finalize(gemm, target, plan, tmp_path / "cache.json")
    assert summary["tflops"] == 9.0 and summary["speedup_over_default"] == 9.0
    assert cached(gemm, target, tmp_path / "cache.json")["tflops"] == 9.0
    assert (plan / "best" / "best.json").exists()


def test_malformed_suite_shape_is_one_sentence(tmp_path):
    (tmp_path / "suite.json").write_text('{"problems": [{"shape": "64x64"}]}')
    done = pipelines("bench", "--target", "cpu", "--suite", str(tmp_path / "suite.json"), "--device", "local-task",
                     "-o", "run", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "shape '64x64' must have the form NxNxN or NxNxNxN" in done.stderr


def test_a_refused_suite_case_is_recorded_with_its_sentence_and_runs_nothing(tmp_path):
    """codegen refuses 16x8192x8192 NT (its transpose dispatch outweighs the GEMM): the suite goes on, the plan
    holds the refusal, the runner records it without running, and the report's correctness ignores it."""
    gemm = Gemm(16, 8192, 8192, "bf16", "nt")
    cases = suite_cases(TARGETS["sm_80"], [{"shape": "16x8192x8192", "layout": "nt"}], ["bf16"],
                        ["codegen", "default"])
    assert [(g, name) for g, name, _ in cases] == [(gemm, "codegen"), (gemm, "default")]
    assert isinstance(cases[0][2], Refused) and "transposes B" in cases[0][2].reason and cases[1][2] is None
    small = Gemm(64, 64, 64, "bf16", "nn")
    plan = build_plan(TARGETS["cpu"], [(small, "default", None), (small, "tuned", Refused("no tile."))],
                      tmp_path / "plan")
    entries = json.loads((plan / "plan.json").read_text())["cases"]
    assert [e["status"] for e in entries] == ["ok", "refused"] and entries[1]["vmfb"] is None
    assert not (plan / "cases" / entries[1]["id"]).exists()
    run_plan(plan, ["local-task"], repetitions=1)
    rows = [json.loads(line) for line in (plan / "results.jsonl").read_text().splitlines()]
    assert [(r["pipeline"], r["status"], r.get("error")) for r in rows] == [
        ("default", "ok", None), ("tuned", "refused", "no tile.")]
    header, body = tables(rows)
    assert body[0][header.index("tuned TFLOP/s")] == "refused" and body[0][header.index("all correct")] == "yes"
    rows[0]["correct"] = False
    assert tables(rows)[1][0][header.index("all correct")] == "NO"


def test_pipelines_that_leave_a_problem_to_iree_share_one_compile_and_one_measurement(tmp_path):
    """tuned and auto defer 64x64x64 to IREE's heuristic on CUDA: the same kernel as default, which is compiled and
    timed once; their rows carry default's measurement, say so, and are marked in the report. A measured row is
    never copied when the shared case failed: then the case is timed itself."""
    gemm = Gemm(64, 64, 64, "bf16", "nn")
    plan = build_plan(TARGETS["cpu"], [(gemm, "default", None), (gemm, "tuned", None),
                                       (gemm.with_(layout="nt"), "default", None)], tmp_path / "plan")
    entries = json.loads((plan / "plan.json").read_text())["cases"]
    assert entries[1]["same_kernel_as"] == entries[0]["id"] and entries[1]["vmfb"] == entries[0]["vmfb"]
    assert "same_kernel_as" not in entries[2]  # another problem
    assert not (plan / "cases" / entries[1]["id"]).exists()
    run_plan(plan, ["local-task"], repetitions=1)
    rows = [json.loads(line) for line in (plan / "results.jsonl").read_text().splitlines()]
    assert rows[1]["measured_as"] == rows[0]["id"] and rows[1]["median_ms"] == rows[0]["median_ms"]
    assert rows[1]["pipeline"] == "tuned" and rows[1]["id"] == entries[1]["id"] and "measured_as" not in rows[0]
    header, body = tables(rows)
    assert body[0][header.index("tuned TFLOP/s")].endswith("*")
    # the shared case failed: the copy is refused and the case runs on its own
    failed = dict(rows[0], status="run-failed", correct=False)
    from pipelines.runner import ProblemData, environment, run_case
    row = run_case(entries[1], plan, "local-task", 1, environment("local-task"), ProblemData(tmp_path),
                   {rows[0]["id"]: failed})
    assert "measured_as" not in row and row["status"] == "ok" and row["correct"] is True


@pytest.mark.parametrize("target, pipeline", [("sm_80", "split-k"), ("sm_90a", "hopper"), ("sm_90a", "split-k")])
def test_a_pipeline_that_always_has_a_plan_is_refused_without_one(tmp_path, target, pipeline):
    """A case of split-k or the target's kernel with no plan would run IREE's heuristic under that name (a script
    wrote such cases once and measured IREE's kernel as split-k's): refused before the folder exists."""
    from pipelines.bench import PlanError
    out = tmp_path / "plan"
    gemm = Gemm(16, 4096, 4096, "bf16", "nn")
    with pytest.raises(PlanError, match=f"the {pipeline} case of 16x4096x4096 has no plan"):
        build_plan(TARGETS[target], [(gemm, "default", None), (gemm, pipeline, None)], out)
    assert not out.exists()


def test_pipelines_whose_rule_may_leave_a_problem_to_iree_take_no_plan():
    from pipelines.named import PIPELINES
    assert {name for name, p in PIPELINES.items() if p.always_planned} == {"split-k", "hopper"}
