"""Flags that would be ignored, contradict each other or answer silently: each is one sentence, exit code 2, before
any work, and no file changes; and the answers that used to be silent (the tune cache, a search whose best lost to
IREE's default, a run where every case failed) now say so.

The parametrized cases run through the harness of `test_bad_input` (its fixture folder `{F}`, `run_main`,
`assert_one_sentence`); `{G}` is this module's own folder of fixtures (a tune cache that holds an answer for the
searches below, so a flag checked only after the cache would pass unnoticed; a kernel listing cut short; a folder
compiled with IREE's own split-K) and `{OUT}` an output path in the test's folder.
"""

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from iree.compiler import version as iree_version

from pipelines import cli, runner
from pipelines.named import plan_for, why_default
from pipelines.targets import TARGETS
from pipelines.output import work_folder
from pipelines.tune import candidates, finalize
from pipelines.tune_cache import MODEL, Search, cache_key, cached
from transforms.problem import Gemm

import test_bad_input
from test_bad_input import PLAN_CASE, REPORT, _tree, assert_one_sentence, run_main

fixture_dir = test_bad_input.fixture_dir  # the harness's folder of corrupt and odd files, `{F}`, a fixture here too

GFX942 = TARGETS["gfx942"]
SEARCHED = Gemm(256, 256, 256, "bf16", "nn")  # the problem the cache below answers for (420 candidates on gfx942)
TUNE = "tune --target gfx942 --shape 256x256x256 --device model --limit 1 --cache {G}/cache.json"


def _entry(schedule) -> dict:
    fields = json.loads(json.dumps(asdict(schedule)))
    return {"route": "compilation_info", "schedule": fields, "schedule_summary": schedule.describe(), "tflops": 2.0,
            "default_tflops": 1.0, "speedup_over_default": 2.0, "device": "timing model", "predicted": True}


def _cache() -> dict:
    """Answers for `SEARCHED` on gfx942: the whole search and the one of --limit 1 (both predicted), and an entry
    an older version wrote (its key had no device or limit), which answers no search of this one."""
    best = candidates(SEARCHED, GFX942)[0]
    older = json.dumps(["gfx942", asdict(SEARCHED), iree_version.VERSION, "predicted"], sort_keys=True)
    return {cache_key(SEARCHED, GFX942, Search("compilation_info", MODEL, None)): _entry(best),
            cache_key(SEARCHED, GFX942, Search("compilation_info", MODEL, 1)): _entry(best),
            older: _entry(best)}


def _broken_cache() -> dict:
    """An answer for `SEARCHED` whose schedule no longer builds (edited by hand, or written by an older tool)."""
    return {cache_key(SEARCHED, GFX942, Search("compilation_info", MODEL, None)): dict(
        _entry(candidates(SEARCHED, GFX942)[0]), schedule={"tile": "256x128x64"})}


LISTING_CUT_SHORT = "\t.text\n\t.amdhsa_code_object_version 5\n\t.amdhsa_kernel gemm_dispatch_0\n"
G_FILES = {
    "cache.json": _cache,  # (written by the fixture, as JSON)
    "cache_broken.json": _broken_cache,
    "rep_cut_isa/report.json": json.dumps(REPORT),
    "rep_cut_isa/dump/k.rocmasm": LISTING_CUT_SHORT,
    # what `compile --split-k 4` writes: two dispatches, the split only in the command
    "rep_iree_split/report.json": json.dumps(dict(
        REPORT, dispatches=[{"isa_file": "a.rocmasm", "dispatch": "d0"}, {"isa_file": "b.rocmasm", "dispatch": "d1"}],
        command="iree-compile gemm.mlir --iree-dispatch-creation-split-matmul-reduction=4 -o gemm.vmfb")),
    # a plan as `bench --compile-only` wrote it before problems carried their epilogue
    "plan_no_epilogue/plan.json": json.dumps({"target": "cpu", "cases": [dict(
        PLAN_CASE, problem={k: v for k, v in PLAN_CASE["problem"].items() if k != "epilogue"})]}),
    # a plan whose cases do not say what they compile or for which target (an older bench's)
    "plan_no_target/plan.json": json.dumps({"target": "cpu", "cases": [
        {k: v for k, v in PLAN_CASE.items() if k not in ("schedule", "target")}]}),
    "plan_no_target/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "bench",
                                                         "outputs": {"plan": ["plan.json", "results.jsonl",
                                                                              "cases/"]}}),
    "plan_no_epilogue/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "bench",
                                                           "outputs": {"plan": ["plan.json", "results.jsonl",
                                                                                "cases/"]}}),
    "model_a.vmfb": "not a module, but a file\n",
    "model_b.vmfb": "not a module, but a file\n",
}


@pytest.fixture(scope="module")
def flags_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad_flags")
    for name, content in G_FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content(), indent=1) if callable(content) else content)
    return folder


def _bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# (command line, what the sentence must say)
CASES = [
    # --alpha and --beta mean something only with the alpha-beta epilogue, on every verb that takes them
    ("compile --target gfx942 --shape 64x64x64 --alpha 2.0 -o {OUT}", "--alpha scales the alpha-beta epilogue"),
    ("compile --target gfx942 --shape 64x64x64 --beta 0.5 -o {OUT}", "--beta scales the alpha-beta epilogue"),
    ("compile --target gfx942 --shape 64x64x64 --alpha 2 --beta 3 -o {OUT}", "--alpha and --beta scale"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue bias-relu --alpha 2 -o {OUT}", "the epilogue is bias-relu"),
    ("compile --target cpu --shape 64x64x64 --beta=-1 -o {OUT}", "add --epilogue alpha-beta"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned --beta 2", "add --epilogue alpha-beta"),
    ("spec --target gfx942 --shape 512x512x512 --epilogue bias-gelu --alpha 0.5 --pipeline tuned",
     "the epilogue is bias-gelu"),
    ("bench --target cpu --shape 64x64x64 --alpha 2 --compile-only -o {OUT}", "add --epilogue alpha-beta"),
    (f"{TUNE} --alpha 2 -o {{OUT}}", "add --epilogue alpha-beta"),
    # an --input file states its problem: every problem flag given with it, even at its default value, is refused
    ("compile --target gfx942 --input {F}/ok.mlir --alpha 2 -o {OUT}", "--alpha describes a --shape problem"),
    ("compile --target gfx942 --input {F}/ok.mlir --dtype bf16 -o {OUT}", "--dtype describes a --shape problem"),
    ("compile --target gfx942 --input {F}/ok.mlir --layout nn -o {OUT}", "--layout describes a --shape problem"),
    ("compile --target gfx942 --input {F}/ok.mlir --epilogue none --beta 1 -o {OUT}",
     "--epilogue, --beta describe a --shape problem"),
    ("spec --target gfx942 --input {F}/ok.mlir --pipeline tuned --alpha 1", "--alpha describes a --shape problem"),
    # bench: a suite states its problems; a plan was compiled already
    ("bench --target cpu --shape 64x64x64 --suite smoke --compile-only -o {OUT}",
     "--suite smoke states each problem's shape, layout and epilogue; --shape would be ignored"),
    ("bench --target cpu --suite smoke --layout nt --compile-only -o {OUT}", "--layout would be ignored"),
    ("bench --target cpu --suite smoke --epilogue bias-relu --compile-only -o {OUT}", "--epilogue would be ignored"),
    ("bench --target cpu --suite smoke --epilogue alpha-beta --alpha 2 --beta 0 --compile-only -o {OUT}",
     "--epilogue, --alpha and --beta would be ignored"),
    ("bench --plan {F}/plan_cpu --target cpu --device local-task", "--target would be ignored with it"),
    ("bench --plan {F}/plan_cpu --device local-task -o {OUT}", "-o would be ignored with it"),
    ("bench --plan {F}/plan_cpu --device local-task --compile-only", "--compile-only would be ignored"),
    ("bench --plan {F}/plan_cpu --device local-task --suite smoke", "--suite would be ignored"),
    ("bench --plan {F}/plan_cpu --device local-task --shape 64x64x64 --pipelines default",
     "--shape and --pipelines would be ignored"),
    ("bench --plan {F}/plan_cpu --device local-task --dtype f16", "--dtype would be ignored"),
    ("bench --plan {F}/plan_cpu --device local-task --force", "--force would be ignored"),
    # a list flag that names one thing twice would plan and time it twice
    ("bench --target cpu --suite smoke --dtype bf16,BF16 --compile-only -o {OUT}",
     "--dtype names the input type 'bf16' twice"),
    ("bench --target cpu --shape 64x64x64 --pipelines default,default --compile-only -o {OUT}",
     "--pipelines names the pipeline 'default' twice"),
    ("bench --target gfx942 --shape 64x64x64 --device hip --device hip://0 -o {OUT}",
     "--device hip://0 and --device hip are the same device"),
    (f"{TUNE.replace('model', 'hip')} --device hip://0 -o {{OUT}}", "are the same device"),
    ("bench --target cpu --shape 64x64x64 --compile-only --repetitions 3 -o {OUT}",
     "--compile-only runs nothing, so nothing is repeated"),
    ("bench --target cpu --shape 64x64x64 --compile-only --device local-task -o {OUT}",
     "--device local-task would not be used"),
    ("bench --target gfx942 --shape 256x256x256 --device model --repetitions 2 -o {OUT}",
     "--device model predicts each case once, so --repetitions would not be used"),
    # tune: every flag is checked before the cache ({G}/cache.json answers these searches) may answer
    ("tune --target gfx942 --shape 256x256x256 --device model --cache {G}/cache_broken.json -o {OUT}",
     "answers this search with a schedule that does not build"),
    (f"{TUNE} --workers -1 -o {{OUT}}", "argument --workers: -1 must be at least 1"),
    (f"{TUNE} --workers 0 -o {{OUT}}", "argument --workers: 0 must be at least 1"),
    (f"{TUNE} --gpus 0 -o {{OUT}}", "argument --gpus: 0 must be at least 1"),
    (f"{TUNE} --gpus 1 -o {{OUT}}", "--gpus starts GPU workers that benchmark"),
    (f"{TUNE} --scheduler garbage -o {{OUT}}", "--scheduler 'garbage' is not a scheduler address"),
    (f"{TUNE} --scheduler tcp://127.0.0.1:99999 -o {{OUT}}", "is not a scheduler address"),
    (f"{TUNE} --scheduler tcp://127.0.0.1 -o {{OUT}}", "is not a scheduler address"),
    (f"{TUNE} --scheduler tcp://127.0.0.1:8786 --workers 2 -o {{OUT}}", "give one or the other"),
    (f"{TUNE} --repetitions 3 -o {{OUT}}", "--repetitions would not be used"),
    (f"{TUNE} --epilogue bias-relu --beta 2 -o {{OUT}}", "the epilogue is bias-relu"),
    ("tune --target gfx942 --shape 256x256x256 --limit 1 --compile-only --repetitions 5 -o {OUT}",
     "--compile-only runs nothing, so nothing is repeated"),
    ("tune --target gfx942 --shape 256x256x256 --limit 1 --compile-only --device hip -o {OUT}",
     "--device hip would not be used"),
    ("tune --target gfx942 --shape 256x256x256 --limit 1 --compile-only --workers 0 -o {OUT}", "0 must be at least 1"),
    # tune-model: an explicit 0 is refused (as for tune and the runner); the cluster flags need --search
    ("tune-model {F}/ok.mlir --target gfx942 --search 0 -o {OUT}", "argument --search: 0 must be at least 1"),
    ("tune-model {F}/ok.mlir --target gfx942 --search=-2 -o {OUT}", "argument --search: -2 must be at least 1"),
    ("tune-model {F}/ok.mlir --target gfx942 --search 2 --workers 0 -o {OUT}", "argument --workers: 0 must be"),
    ("tune-model {F}/ok.mlir --target gfx942 --workers 2 -o {OUT}",
     "--workers runs --search on a local cluster; give --search too"),
    ("tune-model {F}/ok.mlir --target gfx942 --scheduler tcp://127.0.0.1:8786 -o {OUT}",
     "--scheduler runs --search on a cluster; give --search too"),
    ("tune-model {F}/ok.mlir --target gfx942 --search 2 --scheduler garbage -o {OUT}", "not a scheduler address"),
    ("tune-model {F}/ok.mlir --target gfx942 --search 2 --scheduler tcp://127.0.0.1:8786 --workers 2 -o {OUT}",
     "give one or the other"),
    # spec: why a pipeline leaves the problem to IREE's default, and flags without their partner
    ("spec --target gfx942 --shape 1x1x1 --pipeline tuned",
     "pipeline 'tuned' leaves 1x1x1 nn bf16 to IREE's default heuristic: its 256x256x32 tile is for whole multiples"),
    ("spec --target gfx942 --shape 8x4096x4096 --pipeline tuned", "M or N is below 64"),
    ("spec --target gfx942 --shape 1x1x1 --pipeline auto", "pipeline 'auto' leaves 1x1x1 nn bf16"),
    ("spec --target gfx942 --shape 1000x1000x1000 --dtype f8e4m3fnuz --pipeline auto",
     "every tile of auto's ladder spills registers"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline ukernel", "IREE's own heuristic with its ROCm tensor"),
    ("spec --target gfx942 --shape 1x1x1", "pipeline 'default' leaves 1x1x1 nn bf16 to IREE's default heuristic"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned --force", "--force lets -o overwrite a file; give -o"),
    # explain
    ("explain --schedule interleave4 --lds-stages 2", "--lds-stages chooses pingpong8's LDS stages"),
    ("explain --schedule double_buffered --lds-stages 1", "double_buffered has a fixed number of its own"),
    ("explain --schedule producer_consumer --lds-stages 1", "producer_consumer has a fixed number"),
    ("explain --schedule pingpong8 --force", "--force lets -o overwrite a picture; give -o too"),
    ("explain --schedule hopper-pingpong --force", "--force lets -o overwrite a picture"),
    # predict and emulate: what they cannot do, naming the file
    ("predict {F}/rep_bad_isa --force", "--force lets --timeline overwrite a picture; give --timeline too"),
    ("predict {G}/rep_iree_split", "holds IREE's own split-K (--split-k 4) of 2 dispatches"),
    ("predict {G}/rep_cut_isa", "the kernel listing {G}/rep_cut_isa/dump/k.rocmasm cannot be read"),
    ("emulate {G}/rep_cut_isa", "the kernel listing {G}/rep_cut_isa/dump/k.rocmasm cannot be read"),
    ("emulate {F}/rep_bad_isa --workgroups 0", "argument --workgroups: 0 must be at least 1"),
]

# `python -m pipelines.runner` (in-process through `runner.main`): its plan and flags checked before any case runs.
RUNNER_CASES = [
    ("{F}/plan_gfx942 --device hip --gpus 2", "the IREE runtime cannot open device 'hip'"),  # no GPU here
    ("{F}/plan_cpu --device local-task --gpus 0", "argument --gpus: 0 must be at least 1"),
    ("{F}/plan_cpu --device local-task --repetitions 0", "argument --repetitions: 0 must be at least 1"),
    ("{F}/plan_cpu --device local-task --scheduler garbage", "is not a scheduler address"),
    ("{F}/plan_cpu", "the following arguments are required: --device"),
    ("{F}/plan_cpu --device local-task --device local-task://0", "are the same device"),
    ("{F}/plan_empty --device local-task", "has no plan.json"),
    ("{F}/plan_truncated --device local-task", "is not valid JSON"),
    ("{F}/plan_case_missing --device local-task", "(a case without function)"),
    ("{G}/plan_no_target --device local-task", "(a case without schedule, target)"),
    ("{G}/plan_no_epilogue --device local-task", "wrong or missing problem epilogue"),
]


def test_cases_are_distinct_from_each_other_and_from_test_bad_input():
    lines = [line for line, _ in CASES]
    assert len(set(lines)) == len(lines) >= 60 and not set(lines) & {line for line, _ in test_bad_input.CASES}
    assert all("  " not in line for line in lines + [line for line, _ in RUNNER_CASES])


def _argv(line: str, fixtures: Path, flags: Path, out: Path) -> list[str]:
    return [a.replace("{F}", str(fixtures)).replace("{G}", str(flags)).replace("{OUT}", str(out))
            for a in line.split(" ")]


@pytest.mark.parametrize("line, message", CASES, ids=[line for line, _ in CASES])
def test_a_flag_that_would_be_ignored_is_one_sentence_and_changes_nothing(line, message, fixture_dir, flags_dir,
                                                                          tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "DEFAULT_CACHE", fixture_dir / "no_tune_cache.json")  # not the user's cache
    monkeypatch.setenv("PIPELINES_TUNE_CACHE", str(fixture_dir / "no_tune_cache.json"))
    out = tmp_path / "out"
    argv = _argv(line, fixture_dir, flags_dir, out)
    before = (_tree(tmp_path), _bytes(fixture_dir), _bytes(flags_dir))
    print("input:", " ".join(argv))
    code = run_main(argv)
    message = message.replace("{G}", str(flags_dir))
    assert_one_sentence(code, capsys.readouterr().err, message)
    assert not out.exists() and (_tree(tmp_path), _bytes(fixture_dir), _bytes(flags_dir)) == before


@pytest.mark.parametrize("line, message", RUNNER_CASES, ids=[line for line, _ in RUNNER_CASES])
def test_the_runner_checks_before_it_runs(line, message, fixture_dir, flags_dir, capsys):
    if "hip" in line:
        try:
            runner.device_or_error("hip")
            pytest.skip("this machine has a HIP GPU")
        except runner.RunError:
            pass
    before = _bytes(fixture_dir)
    code = run_main_runner(_argv(line, fixture_dir, flags_dir, Path("unused")))
    assert_one_sentence(code, capsys.readouterr().err, message)
    assert _bytes(fixture_dir) == before


def run_main_runner(argv: list[str]) -> int:
    try:
        return runner.main(argv)
    except SystemExit as exit:  # argparse's usage errors
        return exit.code


# ---- the --help of verbs that take no --input file does not offer it; compile's and spec's do


@pytest.mark.parametrize("verb, offered", [("tune", False), ("bench", False), ("compile", True), ("spec", True)])
def test_help_offers_input_only_where_it_is_taken(verb, offered, capsys):
    assert run_main([verb, "--help"]) == 0
    assert ("--input" in capsys.readouterr().out) == offered


# ---- the tune cache: announced, -o filled, never the answer of another search


def _tune(argv: list[str], cache: Path, out: Path) -> int:
    return run_main(["tune", "--target", "gfx942", "--shape", "256x256x256", "--device", "model", *argv,
                     "--cache", str(cache), "-o", str(out)])


def test_a_cache_answer_is_announced_and_leaves_the_winner_in_o(flags_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "plan_search", _no_search)
    cache = tmp_path / "cache.json"
    cache.write_bytes((flags_dir / "cache.json").read_bytes())
    out = tmp_path / "out"
    assert _tune([], cache, out) == 0
    captured = capsys.readouterr()
    announced = captured.err.splitlines()[0]
    assert f"answered from the tune cache {cache}" in announced and "--force" in announced
    entry = json.loads(captured.out)
    best = json.loads((out / "best" / "best.json").read_text())
    assert best == dict(entry, answered_from_cache=str(cache))
    tile = entry["schedule"]["tile"]
    spec = (out / "best" / "spec.mlir").read_text()
    assert tile["mma"] in spec and f"workgroup = [{tile['workgroup'][0]}, {tile['workgroup'][1]}, 0]" in spec
    assert (out / "best" / "gemm.mlir").is_file()
    assert cache.read_bytes() == (flags_dir / "cache.json").read_bytes()  # an answer does not rewrite the cache


def _no_search(*args, **kwargs):
    raise AssertionError("searched although the cache holds the answer of this search")


def test_a_limit_that_keeps_every_candidate_is_the_whole_search(flags_dir, tmp_path, monkeypatch, capsys):
    """--limit 420 of 420 candidates is the whole search, which the cache answers (the other side of the boundary,
    --limit 419, is a search of its own: `test_a_limited_search_is_cached_apart_from_the_whole_search`)."""
    monkeypatch.setattr(cli, "plan_search", _no_search)
    assert len(candidates(SEARCHED, GFX942)) == 420
    assert _tune(["--limit", "420"], flags_dir / "cache.json", tmp_path / "out") == 0
    assert "answered from the tune cache" in capsys.readouterr().err


def test_compile_only_never_asks_the_cache(flags_dir, tmp_path, monkeypatch, capsys):
    """--compile-only asks for a plan to run elsewhere: the cache, which holds this search, does not answer it."""
    planned = []
    monkeypatch.setattr(cli, "plan_search", lambda gemm, target, folder, *args: planned.append(folder) or folder)
    assert _tune(["--limit", "1", "--compile-only"], flags_dir / "cache.json", tmp_path / "out") == 0
    captured = capsys.readouterr()
    assert planned == [tmp_path / "out"] and "answered from the tune cache" not in captured.err
    assert f"wrote {tmp_path / 'out'}/plan.json" in captured.out


@pytest.mark.slow
def test_a_cache_answer_leaves_what_the_search_left(tmp_path, capsys):
    """The oracle is the search itself: a --limit 1 search (2 compiles, predicted), then the same command answered
    by the cache leaves the same spec.mlir and gemm.mlir in another folder."""
    cache = tmp_path / "cache.json"
    assert _tune(["--limit", "1"], cache, tmp_path / "searched") == 0
    assert "answered from the tune cache" not in capsys.readouterr().err
    assert _tune(["--limit", "1"], cache, tmp_path / "answered") == 0
    assert "answered from the tune cache" in capsys.readouterr().err
    for name in ("spec.mlir", "gemm.mlir"):
        assert (tmp_path / "answered" / "best" / name).read_bytes() == (tmp_path / "searched" / "best" / name
                                                                          ).read_bytes()


def _measured_plan(folder: Path, gemm: Gemm, schedules: list, tflops: list[float], default: float | None,
                   device: str = "test GPU") -> Path:
    """A tune plan folder as the runner leaves it: IREE's default (None: failed) and one candidate per schedule."""
    folder.mkdir(parents=True)
    cases, rows = [], []
    for number, (pipeline, schedule, speed) in enumerate([("default", None, default)] + [
            ("candidate", s, t) for s, t in zip(schedules, tflops)]):
        ident = f"case{number}"
        (folder / "cases" / ident).mkdir(parents=True)
        cases.append({"id": ident, "pipeline": pipeline, "problem": asdict(gemm), "vmfb": f"cases/{ident}/gemm.vmfb",
                      "schedule": schedule.describe() if schedule else "IREE default heuristic",
                      "schedule_fields": asdict(schedule) if schedule else None, "status": "ok"})
        rows.append({"id": ident, "pipeline": pipeline, "problem": asdict(gemm), "correct": speed is not None,
                     "status": "ok" if speed is not None else "compile-failed", "tflops": speed,
                     "schedule": cases[-1]["schedule"], "device_name": device})
    (folder / "plan.json").write_text(json.dumps({"target": "gfx942", "cases": cases}))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


GEMM = Gemm(512, 256, 128, "bf16", "nn")


@pytest.mark.parametrize("planned", ["all", "all but one"])
def test_a_limited_search_is_cached_apart_from_the_whole_search(planned, tmp_path):
    """Both sides of the boundary: a plan of every candidate is the whole search; one fewer is a --limit'ed one,
    which answers only the same limit."""
    found = candidates(GEMM, GFX942)
    kept = found if planned == "all" else found[:-1]
    cache = tmp_path / "cache.json"
    finalize(GEMM, GFX942, _measured_plan(tmp_path / "plan", GEMM, kept, [1.0] * len(kept), 0.5), cache)
    whole = cached(GEMM, GFX942, cache, Search("compilation_info", "test GPU", None))
    limited = cached(GEMM, GFX942, cache, Search("compilation_info", "test GPU", len(found) - 1))
    assert (whole is not None, limited is not None) == ((True, False) if planned == "all" else (False, True))


def test_the_device_is_part_of_the_key(tmp_path):
    cache = tmp_path / "cache.json"
    schedules = candidates(GEMM, GFX942)[:2]
    finalize(GEMM, GFX942, _measured_plan(tmp_path / "a", GEMM, schedules, [2.0, 1.0], 1.0,
                                          device="NVIDIA H100 80GB HBM3"), cache)
    finalize(GEMM, GFX942, _measured_plan(tmp_path / "b", GEMM, schedules, [1.0, 3.0], 1.0, device="cuda://1"),
             cache)
    h100 = cached(GEMM, GFX942, cache, Search("compilation_info", "NVIDIA H100 80GB HBM3", 2))
    other = cached(GEMM, GFX942, cache, Search("compilation_info", "cuda", 2))  # cuda://1 is a cuda device
    assert h100["tflops"] == 2.0 and other["tflops"] == 3.0
    assert cached(GEMM, GFX942, cache, Search("compilation_info", "NVIDIA A100-SXM4-80GB", 2)) is None
    assert cached(GEMM, GFX942, cache, Search("compilation_info", MODEL, 2)) is None
    assert cached(GEMM, GFX942, cache)["tflops"] == 3.0  # `searched`: the latest measured search


@pytest.mark.parametrize("ratio, served", [(0.8, False), (1.0, False), (1.01, True)])
def test_a_best_slower_than_the_default_says_so_and_searched_serves_the_default(ratio, served, tmp_path,
                                                                                monkeypatch):
    schedules = candidates(GEMM, GFX942)[:2]
    cache = tmp_path / "cache.json"
    plan = _measured_plan(tmp_path / "plan", GEMM, schedules, [100.0 * ratio, 50.0], 100.0)
    summary = finalize(GEMM, GFX942, plan, cache)
    assert summary["beats_default"] is served and summary["tflops"] == 100.0 * ratio
    lost = "no candidate beat iree's default"
    assert (lost in summary["verdict"].lower()) is not served and f"{ratio:.2f}x" in summary["verdict"]
    assert (lost in (plan / "best" / "ranking.md").read_text().lower()) is not served
    monkeypatch.setenv("PIPELINES_TUNE_CACHE", str(cache))
    assert plan_for("searched", GEMM, GFX942) == (schedules[0] if served else None)
    if not served:
        assert f"ran at {ratio:.2f}x IREE's default" in why_default("searched", GEMM, GFX942)


def test_a_search_whose_default_failed_is_served_and_says_it_was_not_compared(tmp_path, monkeypatch):
    schedules = candidates(GEMM, GFX942)[:1]
    cache = tmp_path / "cache.json"
    summary = finalize(GEMM, GFX942, _measured_plan(tmp_path / "plan", GEMM, schedules, [10.0], None), cache)
    assert summary["beats_default"] is None and "was not compared with it" in summary["verdict"]
    monkeypatch.setenv("PIPELINES_TUNE_CACHE", str(cache))
    assert plan_for("searched", GEMM, GFX942) == schedules[0]


# ---- a run where every case failed does not exit 0


def test_a_run_where_every_case_failed_exits_1_and_says_so(fixture_dir, tmp_path, capsys):
    plan = work_folder(tmp_path / "plan", "bench")  # a plan folder of the tool's, as bench --compile-only makes it
    meta = json.loads((fixture_dir / "plan_cpu" / "plan.json").read_text())
    for case in meta["cases"]:
        case.update(problem=dict(case["problem"], epilogue={"kind": "none", "alpha": 1.0, "beta": 1.0}),
                    schedule="IREE default heuristic", target="cpu")
    (plan / "plan.json").write_text(json.dumps(meta))  # its gemm.vmfb is not there: the case fails to run
    assert run_main_runner([str(plan), "--device", "local-task"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("pipelines: error: every one of the 1 cases of") and "1 run-failed" in err
    assert json.loads((plan / "results.jsonl").read_text().splitlines()[-1])["status"] == "run-failed"


# ---- emulate: the numbers printed agree with the verdict


@pytest.mark.parametrize("error, tolerance", [(2.07e-4, 2.0e-4), (2.004e-4, 2.0e-4), (1.996e-4, 2.0e-4),
                                              (2.0e-4, 2.0e-4), (1.28e-7, 1e-4), (0.0, 1e-4), (2.0000001e-4, 2e-4),
                                              (float("nan"), 1e-4)])
def test_the_printed_error_and_tolerance_compare_as_the_verdict_says(error, tolerance):
    from pipelines.emulator.run import compared

    text = compared(error, tolerance)
    words = text.split()
    shown, relation, bound = float(words[3]), words[4], float(words[6])
    within = error <= tolerance
    assert relation == ("<=" if within else ">") and (shown <= bound) == within
    assert shown != bound or error == tolerance  # never "2.0e-04 > tolerance 2.0e-04"


# ---- model_runner: two modules of one name would time one of them


def test_model_runner_refuses_two_modules_of_one_name(flags_dir, tmp_path, capsys):
    from pipelines import model_runner

    code = model_runner.main([f"a={flags_dir / 'model_a.vmfb'}", f"a={flags_dir / 'model_b.vmfb'}", "--function",
                              "f", "--inputs", str(tmp_path), "-o", str(tmp_path / "rows.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "two modules are named 'a'" in err
    assert list(tmp_path.iterdir()) == []


# ---- real compiles: IREE's own split-K, as predict and emulate see it


@pytest.mark.slow
def test_iree_split_k_is_named_by_predict_and_emulated_with_agreeing_numbers(tmp_path):
    folder = tmp_path / "sk"
    assert run_main(["compile", "--target", "gfx942", "--shape", "16x256x1024", "--split-k", "4", "-o",
                     str(folder)]) == 0
    done = subprocess.run([sys.executable, "-m", "pipelines", "predict", str(folder)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert_one_sentence(done.returncode, done.stderr, "holds IREE's own split-K (--split-k 4) of 2 dispatches")
    done = subprocess.run([sys.executable, "-m", "pipelines", "emulate", str(folder)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)
    line = next(x for x in done.stdout.splitlines() if "tolerance" in x)
    words = line.split()
    assert done.returncode == 0 and line.endswith(": match") and words[4] == "<="
    assert float(words[3]) <= float(words[6])
