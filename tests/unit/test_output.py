"""Outputs never cost the user a file: every command that writes refuses a folder (or file) it did not write
unless --force, and then leaves the user's files in place; a compile killed mid-way leaves the old output or
none, and no scratch; output permissions follow the umask; the tune cache and results.jsonl fail in one
sentence."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
                                "256x256x256", "--pipeline", "tuned", "-o", out], cwd=tmp_path, text=True,
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


def fake_plan(folder: Path, statuses: dict[str, str]) -> Path:
    """A plan of cases named by id; a status other than "ok" is a compile failure recorded by the planner."""
    folder.mkdir()
    cases = [dict(ROW, id=ident, status=status, vmfb=None if status != "ok" else f"cases/{ident}/gemm.vmfb",
                  function="gemm", input_shapes=[[64, 64], [64, 64]], input_dtypes=["bf16", "bf16"])
             for ident, status in statuses.items()]
    (folder / "plan.json").write_text(json.dumps({"target": "cpu", "cases": cases}))
    return folder


def test_resume_reruns_failed_and_torn_rows_only(tmp_path, capsys, monkeypatch):
    plan = fake_plan(tmp_path / "plan", {"good": "ok", "wrong": "ok", "crashed": "ok", "torn": "ok", "new": "ok",
                                         "unverified": "ok", "nocompile": "compile-failed"})
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
    folder = fake_plan(tmp_path / "plan", {"a": "ok", "b": "ok"})
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
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json", "results.jsonl"]


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
