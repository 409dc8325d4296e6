"""Outputs never cost the user a file: every command that writes refuses a folder (or file) it did not write
unless --force, and then leaves the user's files in place; a compile killed mid-way leaves the old output or
none, and no scratch; output permissions follow the umask; the tune cache and results.jsonl fail in one
sentence."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipelines import cli, runner
from pipelines.output import MANIFEST, SCRATCH_TAG
from pipelines.report import load_rows
from pipelines.runner import RunError, append_line, read_results, run_plan
from pipelines.targets import TARGETS
from pipelines.tune import finalize
from transforms.problem import Gemm

REPO = Path(__file__).resolve().parents[2]
ROW = {"label": "bf16 64x64x64 nn default", "problem": {"m": 64, "n": 64, "k": 64, "dtype": "bf16", "layout": "nn",
       "batch": None, "epilogue": {"kind": "none", "alpha": 1.0, "beta": 1.0}}, "pipeline": "default",
       "schedule": "IREE default heuristic", "target": "cpu", "flops": 2 * 64 ** 3, "repeat": 1, "status": "ok",
       "correct": True, "tflops": 1.0, "max_rel_error": 0.0}


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


def plant(folder: Path) -> dict:
    (folder / "sub").mkdir(parents=True)
    (folder / "mine.txt").write_text("the user's notes")
    (folder / "sub" / "data.bin").write_bytes(b"\x00user")
    return snapshot(folder)


def results_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text(json.dumps(dict(ROW, id="a")) + "\n")
    return folder


# Each writing command, aimed at a folder (or, for single-file outputs, a file in it) that the user owns, and the
# files the command writes there.
FOLDER_COMMANDS = {
    "compile": (["compile", "--target", "cpu", "--shape", "64x64x64", "-o", "OUT"],
                ["gemm.mlir", "gemm.vmfb", "report.json", "compile_command.txt"]),
    "bench": (["bench", "--target", "cpu", "--shape", "64x64x64", "--pipelines", "default", "--compile-only",
               "-o", "OUT"], ["plan.json"]),
    "tune": (["tune", "--target", "gfx942", "--shape", "256x256x256", "--limit", "1", "--compile-only",
              "--cache", "CACHE", "-o", "OUT"], ["plan.json"]),
    "report": (["report", "RESULTS", "-o", "OUT"], ["results.csv", "results.md", "results.png"]),
}
FILE_COMMANDS = {
    "spec": ["spec", "--target", "gfx942", "--shape", "256x256x256", "--pipeline", "tuned", "-o", "OUT/spec.mlir"],
    "explain": ["explain", "--schedule", "pingpong8", "-o", "OUT/timeline.png"],
}


def run(args: list[str], tmp_path: Path, out: Path, capsys) -> tuple[int, str]:
    subs = {"OUT": str(out), "CACHE": str(tmp_path / "cache.json"), "RESULTS": str(tmp_path / "results")}
    code = cli.main([subs.get(a, a.replace("OUT", str(out))) for a in args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", [*FOLDER_COMMANDS, *FILE_COMMANDS])
def test_every_writing_command_refuses_the_users_files_and_forces_beside_them(tmp_path, capsys, name):
    out = tmp_path / "users"
    before = plant(out)
    if name == "report":
        results_folder(tmp_path / "results")
    if name in FILE_COMMANDS:
        args, written = FILE_COMMANDS[name], [Path(FILE_COMMANDS[name][-1]).name]
        (out / written[0]).write_text("the user's own file of that name")
        before = snapshot(out)
    else:
        args, written = FOLDER_COMMANDS[name]
    code, err = run(args, tmp_path, out, capsys)
    assert code == 2 and err.count("\n") == 1 and "--force" in err and str(out) in err, err
    assert snapshot(out) == before  # nothing written, nothing removed
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["users"] + (["results"] if name == "report" else []))

    code, err = run([*args, "--force"], tmp_path, out, capsys)
    assert code == 0, err
    after = snapshot(out)
    for path in ("mine.txt", "sub", "sub/data.bin"):
        assert after[path] == before[path]
    for path in written:
        assert after[path] and after[path] != before.get(path)
    assert not [p for p in tmp_path.rglob(f"*{SCRATCH_TAG}*")]


@pytest.mark.parametrize("name", [*FOLDER_COMMANDS, *FILE_COMMANDS])
def test_output_naming_the_wrong_kind_of_path_is_one_sentence(tmp_path, capsys, name):
    if name == "report":
        results_folder(tmp_path / "results")
    if name in FILE_COMMANDS:  # a folder where a file is wanted, even with --force
        args = FILE_COMMANDS[name]
        (tmp_path / "users" / Path(args[-1]).name).mkdir(parents=True)
        expected = "is a folder"
    else:
        args = FOLDER_COMMANDS[name][0]
        (tmp_path / "users").write_text("a file, not a folder")
        expected = "is a file, not a folder"
    before = snapshot(tmp_path)
    code, err = run([*args, "--force"], tmp_path, tmp_path / "users", capsys)
    assert code == 2 and err.count("\n") == 1 and expected in err, err
    assert snapshot(tmp_path) == before


def test_rerun_keeps_user_files_and_removes_only_its_own_stale_files(tmp_path, capsys):
    args = ["compile", "--target", "cpu", "--shape", "64x64x64", "-o", str(tmp_path / "out" / "a")]
    assert cli.main(args) == 0
    folder = tmp_path / "out" / "a"
    (folder / "notes.txt").write_text("mine")
    # A file the previous compile wrote and the next one does not: it must go, or `inspect` would count it.
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["outputs"]["compile"].append("dump/module_gemm_dispatch_9_stale.s")
    (folder / MANIFEST).write_text(json.dumps(manifest))
    (folder / "dump" / "module_gemm_dispatch_9_stale.s").write_text("old")
    old_vmfb = (folder / "gemm.vmfb").stat().st_mtime_ns
    assert cli.main(args) == 0, capsys.readouterr().err  # its own output: no --force needed
    assert (folder / "notes.txt").read_text() == "mine"
    assert not (folder / "dump" / "module_gemm_dispatch_9_stale.s").exists()
    assert (folder / "gemm.vmfb").stat().st_mtime_ns > old_vmfb
    assert sorted(json.loads((folder / MANIFEST).read_text())["outputs"]["compile"]) == \
        sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name not in
               (MANIFEST, "notes.txt"))
    report = json.loads((folder / "report.json").read_text())
    assert f"-o {folder}/gemm.vmfb" in report["command"] and SCRATCH_TAG not in report["command"]
    assert (folder / "compile_command.txt").read_text().strip() == report["command"]


def test_outputs_follow_the_umask(tmp_path, capsys):
    previous = os.umask(0o022)
    try:
        assert cli.main(["compile", "--target", "cpu", "--shape", "64x64x64", "-o", str(tmp_path / "c")]) == 0
        assert cli.main(["spec", "--target", "gfx942", "--shape", "256x256x256", "--pipeline", "tuned", "-o",
                         str(tmp_path / "spec.mlir")]) == 0
        assert cli.main(["explain", "--schedule", "pingpong8", "-o", str(tmp_path / "t.png")]) == 0
        append_line(tmp_path / "results.jsonl", {"id": "a"})
    finally:
        os.umask(previous)
    capsys.readouterr()
    modes = {str(p.relative_to(tmp_path)): p.stat().st_mode & 0o777 for p in [tmp_path / "c", *tmp_path.rglob("*")]}
    assert {p: m for p, m in modes.items() if (tmp_path / p).is_dir() and m != 0o755} == {}
    assert {p: m for p, m in modes.items() if (tmp_path / p).is_file() and m != 0o644} == {}
    assert len(modes) > 10


def test_single_files_rewrite_their_own_output(tmp_path, capsys):
    spec = ["spec", "--target", "gfx942", "--shape", "256x256x256", "--pipeline", "tuned", "-o", str(tmp_path / "s")]
    assert cli.main(spec) == 0 and cli.main(spec) == 0
    assert cli.main(["explain", "--schedule", "pingpong8", "-o", str(tmp_path / "t.png")]) == 0
    assert cli.main(["explain", "--schedule", "interleave4", "-o", str(tmp_path / "t.png")]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s", "t.png"]


def runs_iree_compile(pid: int) -> bool:
    """Whether a child of `pid` is iree-compile (read from /proc: the test must hit the compile itself)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid and \
                    "iree-compile" in (stat.parent / "cmdline").read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def compile_until_iree_runs(tmp_path: Path, out: str) -> subprocess.Popen:
    """A ROCm compile (with its single-threaded IR printing, the slow part) started in its own session, returned
    once iree-compile is running."""
    process = subprocess.Popen([sys.executable, "-m", "pipelines", "compile", "--target", "gfx942", "--shape",
                                "256x256x256", "--pipeline", "default", "-o", out], cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})
    deadline = time.time() + 60
    while not runs_iree_compile(process.pid):
        assert process.poll() is None and time.time() < deadline, process.communicate()
        time.sleep(0.02)
    return process


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_interrupted_compile_leaves_nothing(tmp_path, signum, code):
    process = compile_until_iree_runs(tmp_path, "out")
    assert any(SCRATCH_TAG in p.name for p in tmp_path.iterdir())  # the compile is writing its scratch now
    os.killpg(process.pid, signum)  # what Ctrl-C (or a job scheduler) sends
    _, err = process.communicate(timeout=60)
    assert process.returncode == code and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_killed_compile_keeps_the_old_output_and_the_next_run_sweeps_its_scratch(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "cpu", "--shape", "64x64x64", "-o", str(out)]) == 0
    old = snapshot(out)
    process = compile_until_iree_runs(tmp_path, "out")
    os.killpg(process.pid, signal.SIGKILL)  # nothing can clean up after this
    process.communicate(timeout=60)
    assert snapshot(out) == old
    left = [p for p in tmp_path.iterdir() if SCRATCH_TAG in p.name]
    assert len(left) == 1 and f"{SCRATCH_TAG}{process.pid}-" in left[0].name
    # A scratch of a run still alive (the test's parent stands in for it) is not touched.
    alive = tmp_path / f".out{SCRATCH_TAG}{os.getppid()}-0000"
    alive.mkdir()
    assert cli.main(["compile", "--target", "cpu", "--shape", "64x64x64", "--dtype", "f16", "-o", str(out)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", alive.name])
    assert snapshot(out) != old


def fake_plan(folder: Path, statuses: dict[str, str], kind: str | None = None) -> Path:
    """A plan of cases named by id; a status other than "ok" is a compile failure recorded by the planner. With
    `kind`, the plan is the tool's: a manifest of that kind lists its files."""
    folder.mkdir()
    if kind is not None:
        (folder / MANIFEST).write_text(json.dumps({"written_by": "amd-gemm-pipelines", "kind": kind, "outputs": {
            "plan": ["plan.json", "results.jsonl", "cases/"]}}))
    cases = [dict(ROW, id=ident, status=status, vmfb=None if status != "ok" else f"cases/{ident}/gemm.vmfb",
                  function="gemm", input_shapes=[[64, 64], [64, 64]], input_dtypes=["bf16", "bf16"])
             for ident, status in statuses.items()]
    (folder / "plan.json").write_text(json.dumps({"target": "cpu", "cases": cases}))
    return folder


def test_resume_reruns_failed_and_torn_rows_only(tmp_path, capsys, monkeypatch):
    plan = fake_plan(tmp_path / "plan", {"good": "ok", "wrong": "ok", "crashed": "ok", "torn": "ok", "new": "ok",
                                         "unverified": "ok", "nocompile": "compile-failed"}, kind="bench")
    results = plan / "results.jsonl"
    rows = [dict(ROW, id="good", marker="kept"), dict(ROW, id="wrong", status="wrong-result", correct=False),
            dict(ROW, id="crashed", status="run-failed", correct=False),
            dict(ROW, id="nocompile", status="compile-failed"),
            {k: v for k, v in dict(ROW, id="unverified").items() if k != "correct"}]  # ok, but never checked
    results.write_text("".join(json.dumps(r) + "\n" for r in rows) + json.dumps(dict(ROW, id="torn"))[:40])
    ran = []

    def run_case(case, *_):
        ran.append(case["id"])
        return dict(ROW, id=case["id"], marker="rerun")

    monkeypatch.setattr(runner, "run_case", run_case)
    run_plan(plan, ["local-task"], repetitions=1)
    err = capsys.readouterr().err
    assert sorted(ran) == ["crashed", "new", "torn", "unverified", "wrong"]
    assert "warning: skipping the last line (6)" in err and str(results) in err
    lines = results.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["good", "wrong", "crashed", "nocompile", "unverified", *ran]
    latest = {r["id"]: r for r in load_rows(results)}
    assert latest["good"]["marker"] == "kept" and latest["nocompile"]["status"] == "compile-failed"
    assert all(latest[i]["marker"] == "rerun" for i in ran)
    run_plan(plan, ["local-task"], repetitions=1)
    assert len(ran) == 5  # everything settled: a second resume runs nothing


def test_each_row_is_one_synced_append(tmp_path, monkeypatch):
    calls = []
    real_write, real_fsync = os.write, os.fsync
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append("write") or real_write(fd, data))
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    append_line(tmp_path / "results.jsonl", {"id": "a"})
    append_line(tmp_path / "results.jsonl", {"id": "b"})
    assert calls == ["write", "fsync"] * 2
    assert [r["id"] for r in read_results(tmp_path / "results.jsonl")] == ["a", "b"]


@pytest.mark.parametrize("command", ["report", "tune"])
def test_corrupt_middle_row_is_one_sentence(tmp_path, capsys, command):
    folder = fake_plan(tmp_path / "plan", {"a": "ok", "b": "ok"}, kind="tune" if command == "tune" else "bench")
    (folder / "results.jsonl").write_text(json.dumps(dict(ROW, id="a")) + "\n{not json\n" +
                                          json.dumps(dict(ROW, id="b")) + "\n")
    with pytest.raises(RunError, match=r"line 2 of .*results.jsonl is not a JSON row"):
        read_results(folder / "results.jsonl")
    args = (["report", str(folder)] if command == "report" else
            ["tune", "--target", "sm_80", "--shape", "64x64x64", "--cache", str(tmp_path / "c.json"), "-o",
             str(folder)])
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2 of" in err and "results.jsonl" in err, err
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST, "plan.json", "results.jsonl"]


@pytest.mark.parametrize("text, expected", [("{oops", "is not valid JSON"), ("[]", "is not a map"),
                                            ('{"k": {"tflops": 1}}', "is not a map")])
def test_corrupt_tune_cache_is_one_sentence_and_kept(tmp_path, capsys, text, expected):
    cache = tmp_path / "cache.json"
    cache.write_text(text)
    assert cli.main(["tune", "--target", "gfx942", "--shape", "256x256x256", "--cache", str(cache), "-o",
                     str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(cache) in err and expected in err and "delete it or pass --cache" in err
    assert cache.read_text() == text and not (tmp_path / "t").exists()


def test_finalize_keeps_user_files_in_best(tmp_path):
    plan = fake_plan(tmp_path / "plan", {"d": "ok", "c": "ok"})
    meta = json.loads((plan / "plan.json").read_text())
    meta["cases"][1].update(pipeline="candidate", schedule_fields={"tile": "t"})
    (plan / "plan.json").write_text(json.dumps(meta))
    (plan / "results.jsonl").write_text(json.dumps(dict(ROW, id="d")) + "\n" +
                                        json.dumps(dict(ROW, id="c", pipeline="candidate", tflops=2.0)) + "\n")
    (plan / "best").mkdir()
    (plan / "best" / "mine.md").write_text("notes")
    (plan / "best" / "best.json").write_text("{}")
    summary = finalize(Gemm(64, 64, 64, "bf16", "nn"), TARGETS["cpu"], plan, tmp_path / "cache.json")
    assert (plan / "best" / "mine.md").read_text() == "notes"
    assert json.loads((plan / "best" / "best.json").read_text())["tflops"] == summary["tflops"] == 2.0


def test_ctrl_c_while_the_output_moves_in_waits_until_it_is_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "cpu", "--shape", "64x64x64", "-o", str(out)]) == 0
    real_replace, moved = os.replace, []

    def replace_and_interrupt(source, target):  # Ctrl-C arrives after the first file has moved in
        moved.append(target)
        real_replace(source, target)
        if len(moved) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_and_interrupt)
    assert cli.main(["compile", "--target", "cpu", "--shape", "64x64x64", "--dtype", "f16", "-o", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err and len(moved) > 4
    assert "f16" in (out / "gemm.mlir").read_text() and json.loads((out / "report.json").read_text())[
        "problems"][0]["dtype"] == "f16"
    assert not [p for p in tmp_path.iterdir() if SCRATCH_TAG in p.name]


def test_report_renders_the_whole_rows_of_a_torn_file_with_one_warning(tmp_path, capsys):
    folder = tmp_path / "res"
    folder.mkdir()
    rows = [dict(ROW, id="a", pipeline="default"), dict(ROW, id="b", pipeline="tuned")]
    (folder / "results.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1])[:30])
    assert cli.main(["report", str(folder), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: skipping the last line (2)") == 1, err
    table = (tmp_path / "out" / "results.md").read_text()
    assert "default TFLOP/s" in table and "tuned" not in table


# ---- issue 29: one admission rule. A folder is the tool's only if its manifest says so and lists the file; an
# output never is or holds an input; a folder of one kind never takes another kind's files; nothing is written
# before every check has passed. Each refusal leaves every byte as it was; each allowed side still writes.

def digest(folder: Path) -> dict:
    """Every path under `folder` with the hash of its bytes (None for a folder): what "unchanged" means here."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


def ours(folder: Path, kind: str, **outputs: list[str]) -> Path:
    """A folder of the tool's, its manifest written by hand (not by the code under test)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(json.dumps({"written_by": "amd-gemm-pipelines", "kind": kind,
                                               "outputs": outputs}))
    return folder


def refused(argv: list[str], capsys, words: str, root: Path) -> None:
    """`argv` is one sentence with exit 2, prints nothing on stdout, and leaves every byte under `root` as it was."""
    before = digest(root)
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert code == 2 and captured.err.count("\n") == 1 and words in captured.err, captured.err
    assert captured.out == ""
    assert digest(root) == before


BENCH = ["bench", "--target", "cpu", "--shape", "64x64x64", "--pipelines", "default", "--compile-only"]
TUNE = ["tune", "--target", "gfx942", "--shape", "256x256x256", "--limit", "1", "--compile-only"]
COMPILE = ["compile", "--target", "cpu", "--shape", "64x64x64"]
# The files that made a folder "the tool's" before manifests (plan and compile folders): a user's files like them
# make it no such thing.
LEGACY_SIGNS = {"plan.json": json.dumps({"target": "cpu", "cases": []}), "results.jsonl": json.dumps(ROW) + "\n",
                "report.json": json.dumps({"files": {"all": ["gemm.mlir", "notes.txt"]}})}


@pytest.mark.parametrize("sign", LEGACY_SIGNS)
@pytest.mark.parametrize("command", ["bench", "tune", "compile"])
def test_a_users_plan_or_report_file_does_not_make_the_folder_the_tools(tmp_path, capsys, command, sign):
    out = tmp_path / "users"
    out.mkdir()
    (out / sign).write_text(LEGACY_SIGNS[sign])
    (out / "notes.txt").write_text("the user's notes")
    argv = {"bench": BENCH, "tune": [*TUNE, "--cache", str(tmp_path / "c.json")], "compile": COMPILE}[command]
    refused([*argv, "-o", str(out)], capsys, "pass --force", tmp_path)


def test_bench_with_force_replaces_a_users_plan_files_and_never_resumes_their_rows(tmp_path, capsys, monkeypatch):
    mine = tmp_path / "mine"
    assert cli.main([*BENCH, "-o", str(mine)]) == 0  # to learn the case's id
    capsys.readouterr()
    ident = json.loads((mine / "plan.json").read_text())["cases"][0]["id"]
    out = tmp_path / "users"
    out.mkdir()
    (out / "plan.json").write_text("the user's plan")
    # A settled row of that very case: resumed from, it would stand for the measurement.
    (out / "results.jsonl").write_text(json.dumps(dict(ROW, id=ident, marker="the user's")) + "\n")
    (out / "notes.txt").write_text("the user's notes")
    before = digest(out)
    ran = []
    monkeypatch.setattr(runner, "run_case", lambda case, *_: ran.append(case["id"]) or dict(ROW, id=case["id"]))
    argv = ["bench", "--target", "cpu", "--shape", "64x64x64", "--pipelines", "default", "--device", "local-task",
            "--repetitions", "1", "-o", str(out)]
    refused(argv, capsys, "pass --force", tmp_path)
    assert cli.main([*argv, "--force"]) == 0, capsys.readouterr().err
    assert ran == [ident]
    assert [r["id"] for r in read_results(out / "results.jsonl")] == [ident]
    assert "marker" not in (out / "results.jsonl").read_text()
    assert json.loads((out / "plan.json").read_text())["cases"][0]["id"] == ident
    assert digest(out)["notes.txt"] == before["notes.txt"]
    assert {"results.csv", "results.md", "results.png"} <= set(digest(out))


def test_tune_with_force_never_finalizes_a_users_results(tmp_path, capsys):
    out = tmp_path / "users"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps(dict(ROW, pipeline="candidate")) + "\n")
    (out / "plan.json").write_text(json.dumps({"target": "gfx942", "cases": []}))
    argv = ["tune", "--target", "gfx942", "--shape", "256x256x256", "--limit", "1", "--cache",
            str(tmp_path / "c.json"), "-o", str(out)]
    refused(argv, capsys, "pass --force", tmp_path)
    assert cli.main([*argv, "--compile-only", "--force"]) == 0, capsys.readouterr().err
    plan = json.loads((out / "plan.json").read_text())
    assert [c["pipeline"] for c in plan["cases"]] == ["default", "candidate"]
    assert not (out / "results.jsonl").exists() and not (tmp_path / "c.json").exists()


MATMUL = """func.func @f(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<64x64xf32>)
    -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
"""
CSV = "source,gpu,target,op,M,N,K,layout,dtype,variant,time_us\ns,MI355X,gfx950,mm,64,64,64,NN,bf16,nope,10\n"
SPEC = ["spec", "--target", "gfx942", "--pipeline", "tuned"]


# An output that is, or holds, an input: refused even with --force. {D}: a folder of the user's holding the inputs.
@pytest.mark.parametrize("argv, words", [
    ([*COMPILE[:3], "--input", "{D}/gemm.mlir", "-o", "{D}"], "holds the input"),
    ([*COMPILE[:3], "--input", "{D}/sub/gemm.mlir", "-o", "{D}"], "holds the input"),
    ([*SPEC, "--input", "{D}/gemm.mlir", "-o", "{D}/gemm.mlir"], "is the input"),
    ([*SPEC, "--input", "{D}/gemm.mlir", "-o", "{D}/link.mlir"], "is the input"),  # a symbolic link to it
    ([*SPEC, "--input", "{D}/gemm.mlir", "-o", "{D}/hard.mlir"], "is the input"),  # a hard link to it
    (["tune-model", "{D}/gemm.mlir", "--target", "gfx942", "-o", "{D}"], "holds the input"),
    (["tune-model", "{D}/sub/gemm.mlir", "--target", "gfx942", "--with-spec", "{D}/gemm.mlir", "-o", "{D}"],
     "holds the input"),
    (["bench", "--target", "cpu", "--pipelines", "default", "--suite", "{D}/suite.json", "--compile-only", "-o",
      "{D}"], "holds the input"),
    (["bench", "--target", "cpu", "--suite", "{D}/suite.json", "--compile-only", "-o", "{D}/.."], "holds the input"),
    ([*TUNE, "--cache", "{D}/cache.json", "-o", "{D}"], "holds the input"),
    (["calibrate", "--csv", "{D}/rows.csv", "--keep", "{D}"], "holds the input"),
], ids=lambda v: " ".join(v).replace("{D}/", "") if isinstance(v, list) else None)
def test_an_output_that_is_or_holds_an_input_is_refused_even_with_force(argv, words, tmp_path, capsys):
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    for name in ("gemm.mlir", "sub/gemm.mlir"):
        (folder / name).write_text(MATMUL)
    (folder / "link.mlir").symlink_to(folder / "gemm.mlir")
    os.link(folder / "gemm.mlir", folder / "hard.mlir")
    (folder / "suite.json").write_text(json.dumps({"problems": [{"shape": "64x64x64"}]}))
    (folder / "cache.json").write_text("{}")
    (folder / "rows.csv").write_text(CSV)
    refused([a.replace("{D}", str(folder)) for a in [*argv, "--force"]], capsys, words, tmp_path)


def test_the_same_inputs_beside_the_output_are_read_and_the_output_written(tmp_path, capsys):
    """The other side of the refusals above: an input outside -o, and -o beside it."""
    (tmp_path / "in.mlir").write_text(MATMUL)
    out = tmp_path / "out"
    out.mkdir()
    (out / "gemm.mlir").write_text("the user's gemm.mlir")
    assert cli.main([*COMPILE[:3], "--input", str(tmp_path / "in.mlir"), "-o", str(out), "--force"]) == 0
    assert "linalg.matmul" in (out / "gemm.mlir").read_text()  # --force replaced the user's file of that name
    spec = tmp_path / "spec.mlir"
    assert cli.main([*SPEC, "--input", str(tmp_path / "in.mlir"), "-o", str(spec)]) == 0
    assert (tmp_path / "in.mlir").read_text() == MATMUL and "transform" in spec.read_text()
    capsys.readouterr()


PLAN = {"plan": ["plan.json", "results.jsonl", "cases/"]}


# A folder of one kind never takes another kind's files, --force or not (--force is about the user's files).
@pytest.mark.parametrize("kind, argv", [
    ("tune", BENCH),
    ("bench", [*TUNE, "--cache", "CACHE"]),
    ("calibrate", BENCH),
    ("bench", ["calibrate", "--csv", "CSV", "--keep"]),
    ("tune", ["calibrate", "--csv", "CSV", "--keep"]),
    ("tune", COMPILE),
    ("compile", BENCH),
    ("report", BENCH),
    ("compile", ["report", "RESULTS", "-o"]),
    ("bench", ["tune-model", "MODEL", "--target", "gfx942", "-o"]),
], ids=lambda v: v if isinstance(v, str) else v[0])
def test_a_folder_of_one_kind_never_takes_another_kinds_files(kind, argv, tmp_path, capsys):
    folder = ours(tmp_path / "folder", kind, **PLAN)
    (folder / "plan.json").write_text(json.dumps({"target": "cpu", "cases": []}))
    (folder / "results.jsonl").write_text(json.dumps(dict(ROW, id="theirs")) + "\n")
    results_folder(tmp_path / "results")
    (tmp_path / "rows.csv").write_text(CSV)
    (tmp_path / "model.mlir").write_text(MATMUL)
    subs = {"CACHE": str(tmp_path / "c.json"), "CSV": str(tmp_path / "rows.csv"),
            "RESULTS": str(tmp_path / "results"), "MODEL": str(tmp_path / "model.mlir")}
    argv = [subs.get(a, a) for a in argv]
    if argv[-1] not in ("-o", "--keep"):
        argv.append("-o")
    refused([*argv, str(folder), "--force"], capsys, f"is a {kind} folder of pipelines", tmp_path)


def test_a_plan_folder_takes_its_own_kind_and_its_reports(tmp_path, capsys):
    """The other side: bench into its own plan folder (no --force), report into a tune plan."""
    bench = ours(tmp_path / "bench", "bench", **PLAN)
    (bench / "plan.json").write_text("{}")
    assert cli.main([*BENCH, "-o", str(bench)]) == 0
    assert json.loads((bench / "plan.json").read_text())["target"] == "cpu"
    tune = ours(tmp_path / "tune", "tune", **PLAN)
    (tune / "results.jsonl").write_text(json.dumps(dict(ROW, id="a")) + "\n")
    assert cli.main(["report", str(tune)]) == 0
    assert "default TFLOP/s" in (tune / "results.md").read_text()
    assert json.loads((tune / MANIFEST).read_text())["kind"] == "tune"
    capsys.readouterr()


def test_a_file_the_manifest_does_not_list_is_the_users(tmp_path, capsys):
    """A folder of the tool's where the user put a file named like one the command writes: refused without
    --force (nothing written: the plan's other files too), replaced with it."""
    plan = ours(tmp_path / "plan", "bench", **PLAN)
    (plan / "results.jsonl").write_text(json.dumps(dict(ROW, id="a")) + "\n")
    (plan / "results.md").write_text("the user's results.md")
    refused(["report", str(plan)], capsys, f"{plan / 'results.md'} was not written by pipelines", tmp_path)
    assert cli.main(["report", str(plan), "--force"]) == 0
    assert "default TFLOP/s" in (plan / "results.md").read_text()
    assert cli.main(["report", str(plan)]) == 0  # listed now: the tool's own, rewritten without --force
    capsys.readouterr()


@pytest.mark.parametrize("manifest", [
    {"written_by": "someone else", "kind": "bench", "outputs": {"plan": ["plan.json"]}},
    {"kind": "bench", "outputs": {"plan": ["plan.json"]}},
    {"written_by": "amd-gemm-pipelines", "kind": "bench", "outputs": ["plan.json"]},
    {"written_by": "amd-gemm-pipelines", "kind": "bench", "outputs": {"plan": "plan.json"}},
    {"written_by": "amd-gemm-pipelines", "kind": 5, "outputs": {"plan": ["plan.json"]}},
    "[]",
    "{not json",
], ids=["other-owner", "no-owner", "outputs-list", "names-string", "kind-number", "list", "garbage"])
def test_a_manifest_that_is_not_the_tools_admits_nothing(manifest, tmp_path, capsys):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / MANIFEST).write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    (folder / "plan.json").write_text(json.dumps({"target": "cpu", "cases": []}))
    refused([*BENCH, "-o", str(folder)], capsys, "pass --force", tmp_path)
    from pipelines.output import owned

    assert not owned(folder / "plan.json")


def test_owned_is_what_the_nearest_manifest_lists(tmp_path):
    from pipelines.output import owned

    plan = ours(tmp_path / "plan", "bench", **PLAN, report=["results.md"])
    names = ("plan.json", "results.md", "cases/a/gemm.vmfb", "notes.txt", "casesx/gemm.vmfb", "plan.json.old")
    for name in names:
        (plan / name).parent.mkdir(parents=True, exist_ok=True)
        (plan / name).write_text("x")
    assert [owned(plan / n) for n in (*names, "results.jsonl")] == [True, True, True, False, False, False, False]
    # A case folder with a manifest of its own answers for what is in it.
    ours(plan / "cases" / "a", "compile", compile=["gemm.mlir"])
    (plan / "cases" / "a" / "gemm.mlir").write_text("x")
    assert owned(plan / "cases" / "a" / "gemm.mlir") and not owned(plan / "cases" / "a" / "gemm.vmfb")


@pytest.mark.parametrize("argv", [
    ["explain", "--schedule", "pingpong8", "-o", "PNG"],
    ["explain", "--schedule", "hopper-pingpong", "-o", "PNG"],
    ["predict", "MISSING", "--timeline", "PNG"],
], ids=lambda v: " ".join(v[:2]))
def test_a_single_file_output_is_refused_before_any_work_or_print(argv, tmp_path, capsys, monkeypatch):
    png = tmp_path / "users.png"
    png.write_bytes(b"\x89PNG the user's picture")
    monkeypatch.setattr(cli, "predict", lambda *a, **k: pytest.fail("predict ran before its output was checked"))
    argv = [{"PNG": str(png), "MISSING": str(tmp_path / "missing")}.get(a, a) for a in argv]
    refused(argv, capsys, "exists and was not written by pipelines", tmp_path)
    if argv[0] == "explain":
        assert cli.main([*argv, "--force"]) == 0 and b"the user's" not in png.read_bytes()
        capsys.readouterr()


class FakeCalibration:
    """`Calibration` without compiling: when it would compile, it records the folder it was given and whether that
    folder was admitted (carries its manifest) by then."""

    seen: list = []
    workers = SimpleNamespace(note="one worker")

    def __init__(self, csv, workers=None, folder=None, *args, **kwargs):
        self.folder = folder

    def rows(self, timings=None):
        FakeCalibration.seen.append((self.folder, (Path(self.folder) / MANIFEST).is_file()))
        return []

    def close(self):
        pass


def test_calibrate_keep_is_admitted_like_every_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "Calibration", FakeCalibration)
    monkeypatch.setattr(cli, "calibration_table", lambda rows: "table")
    FakeCalibration.seen = []
    (tmp_path / "rows.csv").write_text(CSV)
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("the user's notes")
    argv = ["calibrate", "--csv", str(tmp_path / "rows.csv"), "--keep", str(keep)]
    refused(argv, capsys, "pass --force", tmp_path)
    assert FakeCalibration.seen == []
    assert cli.main([*argv, "--force"]) == 0
    assert FakeCalibration.seen == [(keep, True)] and (keep / "notes.txt").read_text() == "the user's notes"
    assert cli.main(argv) == 0  # its own keep folder now: reused without --force
    new = tmp_path / "new"
    assert cli.main(["calibrate", "--csv", str(tmp_path / "rows.csv"), "--keep", str(new)]) == 0
    assert FakeCalibration.seen[-1] == (new, True)
    capsys.readouterr()
    monkeypatch.undo()  # the real Calibration checks the CSV (and runs nothing) before --keep is made
    (tmp_path / "bad.csv").write_text("source,M\n1,2\n")
    refused(["calibrate", "--csv", str(tmp_path / "bad.csv"), "--keep", str(tmp_path / "never")], capsys,
            "must have the columns", tmp_path)


@pytest.mark.parametrize("target", ["module", "inputs"])
def test_model_runner_never_writes_over_what_it_reads(target, tmp_path, capsys):
    from pipelines import model_runner

    files = {"module": tmp_path / "a.vmfb", "inputs": tmp_path / "inputs.npz"}
    files["module"].write_bytes(b"a compiled module")
    files["inputs"].write_bytes(b"the inputs")
    argv = [f"a={files['module']}", "--function", "f", "--inputs", str(files["inputs"]), "-o", str(files[target]),
            "--force"]
    before = digest(tmp_path)
    assert model_runner.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"-o {files[target]} is the input" in err, err
    assert digest(tmp_path) == before


def test_a_users_plan_file_beside_a_report_of_pipelines_is_replaced_with_force_never_resumed(tmp_path):
    """A folder that holds a report pipelines wrote under a manifest without a kind (as manifests were before
    kinds) and a user's results.jsonl: bench with --force takes the folder, but the user's rows are not the plan's;
    they go, and the manifest lists the plan's files from then on."""
    from pipelines.output import work_folder

    folder = tmp_path / "f"
    folder.mkdir()
    (folder / MANIFEST).write_text(json.dumps({"written_by": "amd-gemm-pipelines",
                                               "outputs": {"report": ["results.md"]}}))
    (folder / "results.md").write_text("# a report\n")
    (folder / "results.jsonl").write_text('{"id": "the user\'s row"}\n')
    work_folder(folder, "bench", force=True)
    assert not (folder / "results.jsonl").exists()  # not resumed from as if the tool had written it
    listed = json.loads((folder / MANIFEST).read_text())["outputs"]
    assert "results.jsonl" in listed["plan"] and listed["report"] == ["results.md"]
    assert (folder / "results.md").read_text() == "# a report\n"
