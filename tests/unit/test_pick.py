"""The timing model's choice of `auto` and `tuned` on AMD targets (`pipelines.pick`): the margin rule on both sides
of its boundary, a target whose model has no measured error, the prediction cache, and the whole choice through
`pipelines compile` judged against kernels compiled and predicted on their own."""

import dataclasses
import json

import pytest

from pipelines import cli, pick
from pipelines.job import Job, Option, Row
from pipelines.named import get_pipeline, model_choice, plan_for, rule_plan, schedule_for
from pipelines.report import describe_choice
from pipelines.targets import TARGETS
from pipelines.timing.predict import predict
from transforms.kernels import kernel_schedule
from transforms.problem import Gemm
from transforms.warpgroups import PingPong8

RULE, K1, K2 = Option("tile ladder", "rule plan"), Option("pingpong8", "k1"), Option("pingpong8_dma", "k2")


def rows(**times) -> dict:
    return {name: Row(name, t, "bound by test") for name, t in times.items()}


@pytest.mark.parametrize("ladder, chosen", [(849.9, "tile ladder"), (850.0, "default"), (900.0, "default")])
def test_auto_leaves_the_default_only_by_more_than_the_error(ladder, chosen):
    # 15 % below 1000 us is 850 us: only a time below it is taken.
    option, why = pick.decide("auto", RULE, [], rows(default=1000.0, **{"tile ladder": ladder}), 0.15)
    assert option.name == chosen
    assert ("15 %" in why) and ("1000.0 us" in why)


def test_auto_takes_the_fastest_of_its_options():
    got = rows(default=1000.0, **{"tile ladder": 800.0, "pingpong8": 700.0, "pingpong8_dma": None})
    assert pick.decide("auto", RULE, [K1, K2], got, 0.15)[0] is K1
    got = rows(default=1000.0, **{"tile ladder": 600.0, "pingpong8": 700.0, "pingpong8_dma": 650.0})
    assert pick.decide("auto", RULE, [K1, K2], got, 0.15)[0] is RULE
    got = rows(default=1000.0, pingpong8=900.0, pingpong8_dma=500.0)
    assert pick.decide("auto", None, [K1, K2], got, 0.15)[0] is K2  # a rule that is IREE's default has no row


def test_auto_with_nothing_predicted_keeps_the_default():
    option, why = pick.decide("auto", RULE, [K1], rows(default=1000.0, **{"tile ladder": None, "pingpong8": None}),
                              0.15)
    assert option.name == "default" and "could be predicted" in why


def test_without_a_predicted_default_the_rule_stands():
    option, why = pick.decide("auto", RULE, [K1], rows(default=None, **{"tile ladder": 10.0, "pingpong8": 5.0}), 0.1)
    assert option is RULE and "could not be predicted" in why


@pytest.mark.parametrize("tuned, kernel, default, chosen", [
    (800.0, 790.0, 1000.0, "pingpong8"),      # faster than the tuned schedule and 21 % below the default
    (800.0, 810.0, 1000.0, "tile ladder"),    # slower than the tuned schedule
    (800.0, 700.0, 800.0, "tile ladder"),     # faster than both, but only 12.5 % below the default
    (800.0, 679.0, 800.0, "pingpong8"),       # 15.1 % below the default
    (None, 840.0, 1000.0, "pingpong8"),       # the tuned schedule not predicted: the margin alone decides
    (1200.0, 900.0, 1000.0, "tile ladder"),   # the tuned schedule stays even where it is slower than the default
])
def test_tuned_takes_a_kernel_only_past_its_schedule_and_the_margin(tuned, kernel, default, chosen):
    got = rows(default=default, **{"tile ladder": tuned, "pingpong8": kernel})
    assert pick.decide("tuned", RULE, [K1], got, 0.15)[0].name == chosen


def _no_prediction(*args, **kwargs):
    raise AssertionError("nothing may be predicted here")


def test_a_target_without_a_measured_error_keeps_the_default_unpredicted(monkeypatch):
    monkeypatch.setattr(pick, "_predict", _no_prediction)
    target = TARGETS["gfx1151"]
    assert target.timing is not None and target.timing.error is None
    gemm = Gemm(4096, 4096, 4096, "f16", "nt")
    auto = model_choice("auto", gemm, target)
    assert auto.chosen.name == "default" and auto.rows == () and "not been judged" in auto.why
    assert plan_for("auto", gemm, target) is None and rule_plan("auto", gemm, target) is not None
    tuned = model_choice("tuned", gemm, target)
    assert tuned.chosen.plan == rule_plan("tuned", gemm, target) is not None


def test_targets_without_a_timing_model_keep_their_rule():
    gemm = Gemm(4096, 4096, 4096, "bf16", "nt")
    assert model_choice("auto", gemm, TARGETS["sm_80"]) is None
    assert plan_for("auto", gemm, TARGETS["sm_80"]) == rule_plan("auto", gemm, TARGETS["sm_80"]) is not None


def test_kernels_are_offered_only_where_they_take_the_problem():
    gfx950 = TARGETS["gfx950"]
    names = {o.name for o in pick.kernel_options(Gemm(1024, 1024, 1024, "bf16", "nt"), gfx950)}
    assert {"pingpong8", "pingpong8_dma", "double_buffered_dma"} <= names
    nn = {o.name for o in pick.kernel_options(Gemm(1024, 1024, 1024, "bf16", "nn"), gfx950)}
    assert {"pingpong8", "pingpong8_dma"} <= nn and "double_buffered_dma" not in nn  # it reads B as stored: NT only
    fp8 = {o.name for o in pick.kernel_options(Gemm(1024, 1024, 1024, "f8E4M3FN", "nn"), gfx950)}
    assert {"pingpong8", "pingpong8_dma"} <= fp8 and "double_buffered_dma" not in fp8
    nn942 = {o.name for o in pick.kernel_options(Gemm(1024, 1024, 1024, "bf16", "nn"), TARGETS["gfx942"])}
    assert "pingpong8" in nn942 and "pingpong8_dma" not in nn942  # gfx942 has no direct-to-LDS copies
    assert pick.kernel_options(Gemm(1000, 1024, 1024, "bf16", "nt"), gfx950) == []  # M not a multiple of 256
    assert pick.kernel_options(Gemm(1024, 1024, 1024, "bf16", "nt", batch=2), gfx950) == []
    assert pick.kernel_options(Gemm(1024, 1024, 32, "bf16", "nt"), gfx950) == []  # K below two steps of any


def test_a_contraction_of_a_program_never_gets_a_kernel(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(pick, "_predict", lambda option, job: calls.append(option.name) or Row(
        option.name, {"default": 1000.0}.get(option.name, 10.0), "bound by test"))
    monkeypatch.setenv("PIPELINES_PICK_CACHE", str(tmp_path / "picks.json"))
    model_choice.cache_clear()
    gemm = Gemm(1024, 1024, 512, "bf16", "nt")
    assert schedule_for("auto", gemm, TARGETS["gfx950"]) == rule_plan("auto", gemm, TARGETS["gfx950"])
    assert calls == ["default", "tile ladder", "tuned schedule"]  # schedules only, no kernel
    model_choice.cache_clear()


def _counting(monkeypatch, times: dict):
    calls = []

    def fake(option, job):
        calls.append(option.name)
        return Row(option.name, times[option.name], "bound by test")
    monkeypatch.setattr(pick, "_predict", fake)
    return calls


def _job_of(option):
    return Job(TARGETS["gfx950"], "auto", (Gemm(512, 512, 512),), (None,))


def test_predictions_are_cached_and_a_cached_answer_says_so(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "picks.json"
    monkeypatch.setenv("PIPELINES_PICK_CACHE", str(cache))
    calls = _counting(monkeypatch, {"default": 1000.0, "tile ladder": 700.0})
    gemm, target = Gemm(512, 512, 512, "bf16", "nn"), TARGETS["gfx942"]
    first = pick.pick("auto", gemm, target, RULE, _job_of, kernels=False)
    assert first.chosen is RULE and first.cached == "" and calls == ["default", "tile ladder"]
    second = pick.pick("auto", gemm, target, RULE, _job_of, kernels=False)
    assert second.chosen is RULE and str(cache) in second.cached and len(calls) == 2
    assert second.rows == first.rows
    assert sorted(p.name for p in cache.parent.iterdir()) == ["picks.json"]  # no scratch left beside it
    # Another problem, another rule, another code fingerprint: predicted afresh.
    pick.pick("auto", Gemm(512, 512, 256, "bf16", "nn"), target, RULE, _job_of, kernels=False)
    assert len(calls) == 4
    pick.pick("auto", gemm, target, Option("tile ladder", "another plan"), _job_of, kernels=False)
    assert len(calls) == 6
    monkeypatch.setattr(pick, "fingerprint", lambda: "changed")
    assert pick.pick("auto", gemm, target, RULE, _job_of, kernels=False).cached == "" and len(calls) == 8


def _cache_at(tmp_path, monkeypatch) -> tuple:
    """A cache file path in $PIPELINES_PICK_CACHE, the problem and target the cache tests use, and its key."""
    cache = tmp_path / "picks.json"
    monkeypatch.setenv("PIPELINES_PICK_CACHE", str(cache))
    gemm, target = Gemm(512, 512, 512, "bf16", "nn"), TARGETS["gfx942"]
    return cache, gemm, target, pick._key("auto", gemm, target, [Option("default", None), RULE], None)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"KEY": {"rows": []}}', '{"user": 1}', "",
                                     '{"format": "something else", "entries": {}}'])
def test_a_file_the_tool_did_not_write_is_never_read_or_replaced(tmp_path, monkeypatch, content):
    cache, gemm, target, key = _cache_at(tmp_path, monkeypatch)
    cache.write_text(content.replace("KEY", key))
    calls = _counting(monkeypatch, {"default": 1000.0, "tile ladder": 950.0})  # within gfx942's 9 %
    for _ in range(2):
        got = pick.pick("auto", gemm, target, RULE, _job_of, kernels=False)
        assert got.cached == "" and got.chosen.name == "default" and "left alone" in got.cache_note
    assert len(calls) == 4 and cache.read_text() == content.replace("KEY", key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["picks.json"]
    assert "left alone" in describe_choice(got.as_dict())


@pytest.mark.parametrize("entry", ['{"rows": [{"name": "default"}]}', '"text"',
                                   '{"rows": [{"name": "default", "microseconds": 1.0, "note": ""}]}'])
def test_a_damaged_entry_of_the_tools_cache_is_predicted_afresh_and_rewritten(tmp_path, monkeypatch, entry):
    cache, gemm, target, key = _cache_at(tmp_path, monkeypatch)
    cache.write_text(f'{{"format": "{pick.CACHE_FORMAT}", "entries": {{"{key}": {entry}, "other": 1}}}}')
    calls = _counting(monkeypatch, {"default": 1000.0, "tile ladder": 950.0})
    got = pick.pick("auto", gemm, target, RULE, _job_of, kernels=False)
    assert got.cached == "" and got.cache_note == "" and calls == ["default", "tile ladder"]
    data = json.loads(cache.read_text())
    assert data["format"] == pick.CACHE_FORMAT and data["entries"]["other"] == 1
    assert [r["microseconds"] for r in data["entries"][key]["rows"]] == [1000.0, 950.0]


def test_a_cache_from_before_the_mark_is_taken_and_rewritten_with_it(tmp_path, monkeypatch):
    cache, gemm, target, key = _cache_at(tmp_path, monkeypatch)
    rows = [{"name": "default", "microseconds": 1000.0, "note": ""}, {"name": "tile ladder", "microseconds": 500.0,
                                                                      "note": ""}]
    old = "b" * 64
    cache.write_text(json.dumps({key: {"written": "then", "rows": rows}, old: {"written": "then", "rows": []}}))
    calls = _counting(monkeypatch, {"default": 1000.0, "tile ladder": 950.0})
    got = pick.pick("auto", gemm, target, RULE, _job_of, kernels=False)
    assert calls == [] and got.chosen is RULE and "then" in got.cached and got.cache_note == ""
    pick.pick("auto", Gemm(512, 512, 256, "bf16", "nn"), target, RULE, _job_of, kernels=False)
    data = json.loads(cache.read_text())
    assert data["format"] == pick.CACHE_FORMAT and {key, old} < set(data["entries"]) and len(calls) == 2


def test_an_unwritable_cache_costs_only_the_next_runs_predictions(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PIPELINES_PICK_CACHE", str(blocker / "picks.json"))
    calls = _counting(monkeypatch, {"default": 1000.0, "tile ladder": 950.0})
    gemm = Gemm(512, 512, 512, "bf16", "nn")
    for _ in range(2):
        got = pick.pick("auto", gemm, TARGETS["gfx942"], RULE, _job_of, kernels=False)
        assert got.chosen.name == "default" and "cannot write the pick cache" in got.cache_note
    assert len(calls) == 4 and blocker.read_text() == ""


def _compile(tmp_path, name, *flags) -> tuple[dict, float]:
    out = tmp_path / name
    assert cli.main(["compile", "--target", "gfx950", "--shape", "4096x4096x4096", "--layout", "nt", *flags, "-o",
                     str(out)]) == 0
    return json.loads((out / "report.json").read_text()), predict(out).microseconds


@pytest.mark.slow
def test_auto_compiles_the_kernel_the_model_predicts_fastest_past_its_error(tmp_path, capsys):
    """Oracle: the kernel and IREE's default compiled and predicted on their own, not the choice's rows."""
    auto, auto_us = _compile(tmp_path, "auto", "--pipeline", "auto")
    out = capsys.readouterr().out
    kernel, kernel_us = _compile(tmp_path, "kernel", "--schedule", "pingpong8_dma")
    _, default_us = _compile(tmp_path, "default")
    assert kernel_us < default_us * (1 - TARGETS["gfx950"].timing.error)  # the premise: the kernel is past the margin
    assert auto["choice"]["chosen"] == "pingpong8_dma" and auto["schedule_summary"] == kernel["schedule_summary"]
    assert auto_us == pytest.approx(kernel_us) and auto_us < default_us
    assert "chose pingpong8_dma" in out and "<- chosen" in out and "PREDICTED" in out
    chosen = {r["name"]: r["microseconds"] for r in auto["choice"]["rows"]}
    assert chosen["pingpong8_dma"] == pytest.approx(kernel_us, abs=0.1)
    assert chosen["default"] == pytest.approx(default_us, abs=0.1)
    assert isinstance(plan_for("auto", Gemm(4096, 4096, 4096, "bf16", "nt"), TARGETS["gfx950"]), PingPong8)


@pytest.mark.slow
@pytest.mark.parametrize("target, shape, layout", [("gfx942", "512x512x512", "nt"), ("gfx950", "1000x1000x1000", "nn"),
                                                   ("gfx942", "256x1024x512", "nn")])
def test_auto_is_never_predicted_slower_than_the_default(tmp_path, target, shape, layout):
    """Each output predicted on its own: auto's at most IREE's default's time."""
    times = {}
    for name in ("default", "auto"):
        out = tmp_path / name
        assert cli.main(["compile", "--target", target, "--shape", shape, "--layout", layout, "--pipeline", name,
                         "-o", str(out)]) == 0
        times[name] = predict(out).microseconds
    assert times["auto"] <= times["default"] + 0.05


def test_schedule_flags_override_the_rule_not_the_models_choice(tmp_path):
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "gfx942", "--shape", "1024x1024x1024", "--layout", "nt", "--pipeline",
                     "auto", "--prefetch", "1", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    base = get_pipeline("auto").choose(Gemm(1024, 1024, 1024, "bf16", "nt"), TARGETS["gfx942"])
    assert "choice" not in report and report["pipeline"] == "auto+flags"
    assert report["schedules"][0]["tile"] == json.loads(json.dumps(dataclasses.asdict(base.tile)))
    assert report["schedules"][0]["staging"]["prefetch_stages"] == 1


def test_the_kernel_the_model_offers_is_the_shipped_one():
    options = {o.name: o.plan for o in pick.kernel_options(Gemm(1024, 1024, 1024, "bf16", "nt"), TARGETS["gfx950"])}
    assert options["pingpong8_dma"] == kernel_schedule("pingpong8_dma", "bf16", TARGETS["gfx950"])


def _fake_model(monkeypatch, tmp_path, times: dict, otherwise: float) -> None:
    """The timing model replaced by fixed times (`otherwise` for any option not in `times`), a cache of the test's
    own, and no choice remembered from another test."""
    monkeypatch.setattr(pick, "_predict", lambda option, job: Row(
        option.name, times.get(option.name, otherwise), "bound by test"))
    monkeypatch.setenv("PIPELINES_PICK_CACHE", str(tmp_path / "picks.json"))
    model_choice.cache_clear()


def test_a_contraction_the_model_leaves_to_iree_gets_no_schedule(tmp_path, monkeypatch):
    _fake_model(monkeypatch, tmp_path, {"default": 100.0}, 200.0)
    gemm = Gemm(1024, 1024, 512, "bf16", "nt")
    assert get_pipeline("auto").choose(gemm, TARGETS["gfx950"]) is not None
    assert schedule_for("auto", gemm, TARGETS["gfx950"]) is None
    assert schedule_for("auto", Gemm(4096, 4096, 4096, "f16", "nt"), TARGETS["gfx1151"]) is None  # not judged
    model_choice.cache_clear()


def _fake_compile(tmp_path, capsys, monkeypatch, target: str, shape: str) -> tuple[dict, str]:
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", target, "--shape", shape, "--dtype", "f16", "--layout", "nt",
                     "--pipeline", "auto", "--force", "-o", str(out)]) == 0
    return json.loads((out / "report.json").read_text()), capsys.readouterr().out


def test_a_cached_choice_says_so_in_the_report_and_the_printout(tmp_path, capsys, monkeypatch):
    _fake_model(monkeypatch, tmp_path, {"default": 100.0}, 200.0)
    first, printed = _fake_compile(tmp_path, capsys, monkeypatch, "gfx942", "512x512x512")
    assert first["choice"]["cached"] == "" and "not made now" not in printed
    model_choice.cache_clear()  # a new run: only the file remembers
    second, printed = _fake_compile(tmp_path, capsys, monkeypatch, "gfx942", "512x512x512")
    assert str(tmp_path / "picks.json") in second["choice"]["cached"]
    assert f"(predictions read from {tmp_path / 'picks.json'}" in printed and "not made now" in printed
    assert second["choice"]["rows"] == first["choice"]["rows"] and second["choice"]["chosen"] == "default"
    model_choice.cache_clear()


def test_a_choice_made_without_predicting_is_reported_with_its_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pick, "_predict", _no_prediction)
    report, printed = _fake_compile(tmp_path, capsys, monkeypatch, "gfx1151", "1024x1024x1024")
    assert report["choice"]["chosen"] == "default" and report["choice"]["rows"] == []
    assert report["choice"]["error"] is None and report["schedules"] == [None]
    assert "chose default: the timing model of gfx1151 has not been judged on published times" in printed
    # gfx942, a matrix-vector product: no kernel takes it and the rule leaves it to IREE; reported, nothing predicted
    report, printed = _fake_compile(tmp_path, capsys, monkeypatch, "gfx942", "1x4096x4096")
    assert report["choice"]["chosen"] == "default" and report["choice"]["rows"] == []
    assert report["choice"]["error"] == TARGETS["gfx942"].timing.error
    assert "chose default: no warp-group kernel takes this problem, no other schedule is offered and the pipeline's " \
        "rule leaves it" in printed


def test_auto_weighs_tuneds_schedule_too(tmp_path, monkeypatch):
    _fake_model(monkeypatch, tmp_path, {"default": 1000.0, "tuned schedule": 700.0}, 900.0)
    gemm, gfx950 = Gemm(8192, 8192, 8192, "bf16", "nn"), TARGETS["gfx950"]
    tuned = get_pipeline("tuned").choose(gemm, gfx950)
    assert tuned != rule_plan("auto", gemm, gfx950)
    assert plan_for("auto", gemm, gfx950) == tuned
    assert plan_for("tuned", gemm, gfx950) == tuned  # tuned weighs kernels only against its own
    model_choice.cache_clear()


def test_schedule_flags_apply_to_the_rule_when_the_model_keeps_the_default(tmp_path, monkeypatch):
    _fake_model(monkeypatch, tmp_path, {"default": 100.0}, 200.0)
    gemm = Gemm(1024, 1024, 1024, "bf16", "nt")
    assert plan_for("auto", gemm, TARGETS["gfx942"]) is None  # the model keeps IREE's default...
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "gfx942", "--shape", "1024x1024x1024", "--layout", "nt", "--pipeline",
                     "auto", "--prefetch", "1", "-o", str(out)]) == 0  # ...and the flags still have a schedule
    report = json.loads((out / "report.json").read_text())
    base = get_pipeline("auto").choose(gemm, TARGETS["gfx942"])
    assert report["schedules"][0]["tile"]["workgroup"] == list(base.tile.workgroup)
    model_choice.cache_clear()


def test_a_bench_plan_names_each_case_by_what_it_compiles(tmp_path):
    """A split-K plan, a generated kernel and IREE's default, as the plan.json of `bench --compile-only` lists them."""
    from pipelines.bench import Refused, _describe

    split = rule_plan("split-k", Gemm(16, 8192, 8192, "bf16", "nt"), TARGETS["sm_80"])
    assert _describe(split) == split.describe() and _describe(split).startswith("split-K ")
    kernel = kernel_schedule("pingpong8_dma", "bf16", TARGETS["gfx950"])
    assert _describe(kernel) == "pingpong8_dma (generated warp-group kernel)"
    assert _describe(None) == "IREE default heuristic" and _describe(Refused("no.")) == Refused("no.").describe()
    out = tmp_path / "plan"
    assert cli.main(["bench", "--target", "sm_80", "--shape", "16x8192x8192", "--layout", "nt", "--pipelines",
                     "split-k", "--compile-only", "-o", str(out)]) == 0
    case, = json.loads((out / "plan.json").read_text())["cases"]
    assert case["schedule"].startswith("split-K ") and case["status"] == "ok"
