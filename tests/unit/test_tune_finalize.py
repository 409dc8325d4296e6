"""`tune`'s choice and cache on measured rows written by hand (no compile, no device): the faster of two correct
candidates wins over a slower one and over a faster one that failed; cache entries of two element types (and of
two layouts, targets and routes) of one shape stay apart."""

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from pipelines.targets import TARGETS
from pipelines.tune import finalize
from pipelines.tune_cache import Search, TuneError, cached
from transforms.problem import Gemm
from transforms.schedule import Schedule, Staging, Swizzle, Tile

GFX942 = TARGETS["gfx942"]
GEMM = Gemm(512, 256, 128, "bf16", "nn")


def fields(sched: Schedule) -> dict:
    """A schedule's fields as the plan and the cache store them (JSON: tuples become lists)."""
    return json.loads(json.dumps(asdict(sched)))


def schedule(tile_m: int, mma: str = "MFMA_F32_16x16x16_BF16") -> Schedule:
    return Schedule(Tile((tile_m, 64), 32, (2, 2), mma), Staging(2), Swizzle("pad"))


def measured_plan(folder: Path, gemm: Gemm, rows: list[tuple[str, Schedule | None, dict]],
                  label: str = "candidate") -> Path:
    """A plan folder as `tune` leaves it after the runner: plan.json with one case per row and results.jsonl.
    Each row is (pipeline, schedule, measured fields)."""
    folder.mkdir(parents=True)
    cases, results = [], []
    for number, (pipeline, sched, measured) in enumerate(rows):
        ident = f"case{number}"
        pipeline = label if pipeline == "candidate" else pipeline
        (folder / "cases" / ident).mkdir(parents=True)
        (folder / "cases" / ident / "spec.mlir").write_text(f"// spec of {ident}\n")
        cases.append({"id": ident, "pipeline": pipeline, "problem": asdict(gemm), "vmfb": f"cases/{ident}/gemm.vmfb",
                      "schedule": sched.describe() if sched else "IREE default heuristic",
                      "schedule_fields": asdict(sched) if sched else None, "status": "ok"})
        row = {"id": ident, "pipeline": pipeline, "problem": asdict(gemm), "status": "ok", "correct": True,
               "schedule": cases[-1]["schedule"], "device_name": "test GPU"}
        row.update(measured)
        results.append(row)
    (folder / "plan.json").write_text(json.dumps({"target": "gfx942", "cases": cases}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    return folder


def test_faster_correct_candidate_wins(tmp_path):
    slow, fast, broken = schedule(128), schedule(256), schedule(64)
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", slow, {"tflops": 100.0}),
        ("candidate", broken, {"tflops": 400.0, "correct": False, "status": "wrong-result"}),
        ("candidate", fast, {"tflops": 200.0}),
        ("candidate", schedule(32), {"tflops": 900.0, "correct": False, "status": "run-failed"}),
    ])
    summary = finalize(GEMM, GFX942, plan, tmp_path / "cache.json")
    assert summary["tflops"] == 200.0 and summary["schedule"] == fields(fast)
    assert summary["speedup_over_default"] == pytest.approx(4.0)
    assert (plan / "best" / "spec.mlir").read_text() == "// spec of case3\n"
    assert cached(GEMM, GFX942, tmp_path / "cache.json")["schedule"] == fields(fast)


def test_order_of_rows_does_not_decide(tmp_path):
    fast, slow = schedule(256), schedule(128)
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", fast, {"tflops": 200.0}),
        ("candidate", slow, {"tflops": 199.0}),
    ])
    assert finalize(GEMM, GFX942, plan, tmp_path / "cache.json")["schedule"] == fields(fast)


def test_candidate_correct_but_not_ok_is_not_chosen(tmp_path):
    """A row whose status is not ok (e.g. a later timing failure) never wins, even if it says correct."""
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", schedule(128), {"tflops": 100.0}),
        ("candidate", schedule(256), {"tflops": 300.0, "status": "run-failed"}),
    ])
    assert finalize(GEMM, GFX942, plan, tmp_path / "cache.json")["tflops"] == 100.0


def test_only_wrong_candidates_is_one_sentence(tmp_path):
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", schedule(128), {"tflops": 100.0, "correct": False, "status": "wrong-result"}),
    ])
    with pytest.raises(TuneError, match="no candidate in .* compiled, ran and gave correct results"):
        finalize(GEMM, GFX942, plan, tmp_path / "cache.json")


def test_default_is_never_the_candidate(tmp_path):
    """IREE's default row is the baseline, not a candidate, however fast it is."""
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 500.0}),
        ("candidate", schedule(128), {"tflops": 100.0}),
    ])
    summary = finalize(GEMM, GFX942, plan, tmp_path / "cache.json")
    assert summary["tflops"] == 100.0 and summary["default_tflops"] == 500.0


@pytest.mark.parametrize("other", [
    GEMM.with_(dtype="f16"), GEMM.with_(layout="nt"), GEMM.with_(m=256, n=512), GEMM.with_(batch=2),
])
def test_cache_keeps_problems_that_differ_in_one_field_apart(tmp_path, other):
    cache = tmp_path / "cache.json"
    mma = "MFMA_F32_16x16x16_F16" if other.dtype == "f16" else "MFMA_F32_16x16x16_BF16"
    first, second = schedule(128), schedule(256, mma)
    finalize(GEMM, GFX942, measured_plan(tmp_path / "a", GEMM, [("default", None, {"tflops": 1.0}),
                                                                   ("candidate", first, {"tflops": 1.0})]), cache)
    finalize(other, GFX942, measured_plan(tmp_path / "b", other, [("default", None, {"tflops": 1.0}),
                                                                      ("candidate", second, {"tflops": 2.0})]), cache)
    assert cached(GEMM, GFX942, cache)["schedule"] == fields(first)
    assert cached(other, GFX942, cache)["schedule"] == fields(second)
    assert len(json.loads(cache.read_text())) == 2


def test_cache_keeps_targets_and_routes_apart(tmp_path):
    cache = tmp_path / "cache.json"
    finalize(GEMM, GFX942, measured_plan(tmp_path / "a", GEMM, [("default", None, {"tflops": 1.0}),
                                                          ("candidate", schedule(128), {"tflops": 1.0})]), cache)
    assert cached(GEMM, TARGETS["gfx950"], cache) is None
    assert cached(GEMM, GFX942, cache, Search("codegen")) is None
    assert cached(GEMM, GFX942, cache, Search("split-k")) is None
    assert cached(GEMM.with_(dtype="f16"), GFX942, cache) is None
    assert cached(GEMM, GFX942, cache)["tflops"] == 1.0


def test_failed_default_still_ranks_the_candidates(tmp_path):
    """IREE's default can fail to compile on a shape the candidates handle: the search still finishes, with no
    speedup to report and a ranking that says so."""
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"status": "compile-failed", "correct": False}),
        ("candidate", schedule(128), {"tflops": 100.0}),
    ])
    summary = finalize(GEMM, GFX942, plan, tmp_path / "cache.json")
    assert summary["tflops"] == 100.0 and summary["default_tflops"] is None
    assert summary["speedup_over_default"] is None
    ranking = (plan / "best" / "ranking.md").read_text()
    assert "| 1 | candidate |" in ranking and "| 100.0 | – |" in ranking and "compile-failed" in ranking


def test_one_unmeasured_case_stops_finalize(tmp_path):
    """The plan has three cases, the results two: the missing one might be the fastest."""
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", schedule(128), {"tflops": 100.0}),
        ("candidate", schedule(256), {"tflops": 200.0}),
    ])
    rows = (plan / "results.jsonl").read_text().splitlines()
    (plan / "results.jsonl").write_text("\n".join(rows[:2]) + "\n")
    with pytest.raises(TuneError, match="1 of 3 cases in .* are not measured yet"):
        finalize(GEMM, GFX942, plan, tmp_path / "cache.json")
    assert not (tmp_path / "cache.json").exists()


def test_row_marked_ok_but_incorrect_is_not_chosen(tmp_path):
    """finalize's contract is the fastest *correct* candidate, whatever the status field says."""
    plan = measured_plan(tmp_path / "plan", GEMM, [
        ("default", None, {"tflops": 50.0}),
        ("candidate", schedule(128), {"tflops": 100.0}),
        ("candidate", schedule(256), {"tflops": 300.0, "correct": False}),
    ])
    assert finalize(GEMM, GFX942, plan, tmp_path / "cache.json")["tflops"] == 100.0


def test_the_searched_pipeline_is_served_the_latest_measured_winner_never_a_prediction(tmp_path):
    """`cached` without a device (what `searched` asks) skips the timing model's entries, even one written after
    the measured one: a predicted schedule was never checked on a GPU."""
    from pipelines.tune_cache import MODEL, cache_key

    cache = tmp_path / "cache.json"
    measured = {"schedule": {"tile": "measured"}}
    predicted = {"schedule": {"tile": "predicted"}}
    entries = {cache_key(GEMM, GFX942, Search(device="nvidia")): measured,
               cache_key(GEMM, GFX942, Search(device=MODEL)): predicted}  # written last
    cache.write_text(json.dumps(entries))
    assert cached(GEMM, GFX942, cache) == measured
    cache.write_text(json.dumps({cache_key(GEMM, GFX942, Search(device=MODEL)): predicted}))
    assert cached(GEMM, GFX942, cache) is None
    assert cached(GEMM, GFX942, cache, Search(device=MODEL)) == predicted  # asked for by name, it answers
