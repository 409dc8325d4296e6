"""`pipelines calibrate` before anything compiles: the CSV's refusals (one sentence naming the row, its line and
the file; exit 2; nothing written), the workers sized by the memory available (both sides of each boundary), a
worker that dies, and the shipped CSV of published rows. The recording's memory (it compiles) is a slow test."""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.timing import calibrate
from pipelines.timing.calibrate import (FIELDS, PUBLISHED, ROW_BASE_BYTES, CalibrationError, choose_workers, gather,
                                        mem_available, read_rows, row_peak_bytes)

REPO = Path(__file__).resolve().parents[2]
HEAD = ",".join(FIELDS)
GOOD = "s,MI355X,gfx950,mm,64,64,64,NN,bf16,dma_off,10"
GiB = 2**30


def _refusal(capsys, argv: list[str]) -> str:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pipelines: error: "), captured.err
    return lines[0]


# Each bad time as written in the CSV; float() reads every one of them (or fails), and none is a time.
BAD_TIMES = ["nan", "NaN", "inf", "-inf", "1e400", "0", "0.0", "-0.0", "-5", "-1e-9", "fast", ""]


@pytest.mark.parametrize("time_us", BAD_TIMES)
def test_a_row_without_a_positive_finite_time_is_refused(tmp_path, capsys, time_us):
    """Two comment lines, the header, a good row, then the bad one: row 2 of the file, on line 5."""
    csv = tmp_path / "published.csv"
    csv.write_text(f"# a source\n# another\n{HEAD}\n{GOOD}\n{GOOD.rsplit(',', 1)[0]},{time_us}\n")
    keep = tmp_path / "keep"
    line = _refusal(capsys, ["calibrate", "--csv", str(csv), "--keep", str(keep)])
    assert f"row 2 of {csv} (line 5)" in line and "positive time_us" in line and f"'{time_us}'" in line
    assert "median" not in line and not keep.exists()  # refused before --keep was made


@pytest.mark.parametrize("time_us", ["1e-9", "5e-324", "1e300", "12.5", " 7"])
def test_a_positive_finite_time_is_read(time_us):
    """The other side of the boundary: the smallest and largest finite positive times are times."""
    rows = read_rows(f"{HEAD}\n{GOOD.rsplit(',', 1)[0]},{time_us}\n", "x.csv")
    assert float(rows[0]["time_us"]) == float(time_us)


@pytest.mark.parametrize("dims", ["0,64,64", "64,-1,64", "64,64,1.5", "64,64,"])
def test_a_row_without_positive_integer_sizes_is_refused(dims):
    row = GOOD.replace("64,64,64", dims)
    with pytest.raises(CalibrationError, match=r"^row 1 of x.csv \(line 2\) needs positive integers M, N, K"):
        read_rows(f"{HEAD}\n{row}\n", "x.csv")


@pytest.mark.parametrize("row, fields", [(GOOD.rsplit(",", 1)[0], 10), (GOOD + ",extra", 12), ("s,MI355X", 2)])
def test_a_row_with_too_few_or_too_many_fields_is_refused(row, fields):
    with pytest.raises(CalibrationError, match=rf"^row 1 of x.csv \(line 2\) has {fields} fields; the header names 11"):
        read_rows(f"{HEAD}\n{row}\n", "x.csv")


def test_a_folder_given_as_the_csv_is_called_a_folder(tmp_path, capsys):
    line = _refusal(capsys, ["calibrate", "--csv", str(tmp_path)])
    assert "is a folder" in line and "does not exist" not in line


def test_a_missing_csv_still_does_not_exist(tmp_path, capsys):
    line = _refusal(capsys, ["calibrate", "--csv", str(tmp_path / "missing.csv")])
    assert "does not exist" in line


def test_the_published_csv_ships_with_the_package_and_parses():
    """The file the README names is in the repository, installed with the package (pyproject's package-data), and
    holds the 42 published rows with their sources."""
    assert PUBLISHED.is_file() and PUBLISHED.is_relative_to(REPO / "pipelines")
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pipelines"]
    relative = PUBLISHED.relative_to(REPO / "pipelines").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in data), (relative, data)
    text = PUBLISHED.read_text()
    rows = read_rows(text, str(PUBLISHED))
    assert len(rows) == 42 and {r["target"] for r in rows} == {"gfx950"}
    assert "iree-org/iree pull request 24117" in text and "iree-org/iree issue 22457" in text
    readme = (REPO / "README.md").read_text()
    assert f"pipelines calibrate --csv {PUBLISHED.relative_to(REPO).as_posix()}" in readme


# ---- workers sized by the memory available

def _largest_fit(available: int, peak: int, cap: int) -> int:
    """Reference: count up while this process and one more worker on the largest row still fit."""
    count = 0
    while count < cap and ROW_BASE_BYTES + (count + 1) * peak <= available:
        count += 1
    return count


@pytest.mark.parametrize("extra", [-1, 0])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_default_workers_fit_the_memory_at_each_boundary(workers, extra):
    """MemAvailable exactly this process plus `workers` largest rows holds `workers`; one byte less, one fewer."""
    peaks = [row_peak_bytes({"M": 16384, "N": 4096}), row_peak_bytes({"M": 64, "N": 64})] * 4
    available = ROW_BASE_BYTES + workers * max(peaks) + extra
    expected = _largest_fit(available, max(peaks), cap=16)
    assert expected == workers + min(extra, 0)  # the reference agrees with the boundary it was placed at
    if expected == 0:
        with pytest.raises(CalibrationError, match="the largest row needs about .* free memory first"):
            choose_workers(None, 16, available, peaks)
    else:
        assert choose_workers(None, 16, available, peaks).count == expected


@pytest.mark.parametrize("extra", [-1, 0])
def test_an_explicit_request_beyond_the_memory_is_refused(extra):
    peaks = [row_peak_bytes({"M": 4096, "N": 4096})] * 8
    available = ROW_BASE_BYTES + 3 * max(peaks) + extra
    if extra < 0:
        with pytest.raises(CalibrationError, match=r"^--workers 3 needs about .* use --workers 2 or fewer\.$"):
            choose_workers(3, 2, available, peaks)
    else:
        assert choose_workers(3, 2, available, peaks).count == 3  # more than the cores, if the user asks and it fits


def test_the_default_is_one_worker_per_core_and_no_more_than_rows():
    peaks = [row_peak_bytes({"M": 64, "N": 64})] * 5
    assert choose_workers(None, 2, 64 * GiB, peaks).count == 2
    assert choose_workers(None, 16, 64 * GiB, peaks).count == 5
    unknown = choose_workers(None, 2, None, peaks)
    assert unknown.count == 2 and "unknown" in unknown.note


def test_the_estimate_covers_the_measured_peak():
    """Measured on this 2-core machine (2026-11-26, the worker and its iree-compile sampled with psutil): 0.45 GiB
    compiling a row, 0.57 GiB at most for a pool worker over the shipped CSV (largest output 16384x4096); before
    the recording stopped touching the inputs, 8.47 GiB for 16384x4096x150000 (the issue's 11-13 GB per worker)."""
    assert 0.57 * GiB <= row_peak_bytes({"M": 16384, "N": 4096}) < 8.47 * GiB / 4
    assert 0.45 * GiB <= row_peak_bytes({"M": 1, "N": 1})
    assert row_peak_bytes({"M": 2048, "N": 2048}) < row_peak_bytes({"M": 4096, "N": 2048})


def test_mem_available_reads_proc_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684000 kB\nMemFree:         1000 kB\nMemAvailable:   22000000 kB\n")
    assert mem_available(meminfo) == 22000000 * 1024
    meminfo.write_text("MemTotal:       24684000 kB\n")
    assert mem_available(meminfo) is None
    assert mem_available(tmp_path / "none") is None


def test_a_request_beyond_the_memory_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "rows.csv"
    csv.write_text(f"{HEAD}\n{GOOD}\n")
    monkeypatch.setattr(calibrate, "mem_available", lambda: ROW_BASE_BYTES + 2 * row_peak_bytes({"M": 64, "N": 64}))
    line = _refusal(capsys, ["calibrate", "--csv", str(csv), "--workers", "3", "--keep", str(tmp_path / "keep")])
    assert "--workers 3 needs about" in line and "--workers 2 or fewer" in line
    assert not (tmp_path / "keep").exists()


# ---- a worker that dies

def test_a_dead_worker_is_one_sentence():
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(CalibrationError, match=r"^a calibration worker process died \(2 ran at once; .*"
                                                   r"run again with --workers 1\.$"):
            gather(pool, 2, os._exit, [9])


def _killed(fields: dict, root: str):
    os.kill(os.getpid(), 9)  # as the kernel's out-of-memory killer does


def test_the_cli_says_a_worker_died_in_one_sentence(tmp_path, capsys, monkeypatch):
    """The recording worker killed (SIGKILL): exit 2, one sentence, no BrokenProcessPool traceback. Forked workers
    inherit the patched recorder."""
    csv = tmp_path / "rows.csv"
    csv.write_text(f"{HEAD}\n{GOOD}\n")
    fork = multiprocessing.get_context("fork")
    monkeypatch.setattr(calibrate, "multiprocessing", type("M", (), {"get_context": staticmethod(lambda _: fork)}))
    monkeypatch.setattr(calibrate, "_record", _killed)
    assert cli.main(["calibrate", "--csv", str(csv), "--workers", "1"]) == 2
    captured = capsys.readouterr()
    note, line = captured.err.strip().splitlines()  # the workers chosen, then the one sentence
    assert note.startswith("calibrate: 1 worker(s)") and captured.out == "" and "Traceback" not in captured.err
    assert line == ("pipelines: error: a calibration worker process died (1 ran at once; the system may have killed "
                    "it for memory): free memory and run again.")


# ---- the recording's memory

@pytest.mark.slow
def test_recording_a_long_k_problem_leaves_its_inputs_untouched(tmp_path):
    """512x512x524288 bf16: A and B are 1 GiB together, the output 1 MiB. The recorded workgroups read a window of
    16 K steps, so a worker's peak must stay far below the inputs' size (it was their size and more when the
    emulator's memory grew by copying them whole)."""
    folder = tmp_path / "long_k"
    assert cli.main(["compile", "--target", "gfx950", "--shape", "512x512x524288", "--layout", "tn",
                     "--pipeline", "default", "-o", str(folder)]) == 0
    probe = ("import resource, sys; from pipelines.timing.predict import record; "
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; record(sys.argv[1]); "
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)")
    done = subprocess.run([sys.executable, "-c", probe, str(folder)], cwd=REPO, capture_output=True, text=True,
                          check=True)
    grown_kib = int(done.stdout.split()[-1])
    assert grown_kib * 1024 < 0.25 * GiB, done.stdout


@pytest.mark.parametrize("ours", [False, True])
def test_a_kept_row_is_reused_only_where_the_tool_wrote_it(ours, tmp_path, monkeypatch):
    """A --keep folder resumes: a row folder compiled before is recorded again without compiling, but a
    report.json the tool did not write (no manifest listing it) is never taken for a compiled row."""
    from pipelines.output import output_folder

    compiled, recorded = [], []
    monkeypatch.setattr(calibrate.flow, "compile_job", lambda prepared, folder, **kw: compiled.append(folder))
    monkeypatch.setattr(calibrate, "dma_loads", lambda folder: True)
    monkeypatch.setattr(calibrate, "record", lambda folder: recorded.append(folder) or "recording")
    fields = dict(zip(FIELDS, GOOD.split(",")))
    folder = tmp_path / "gfx950_64x64x64_nn_bf16_dma_off"
    if ours:
        with output_folder(folder, "compile") as scratch:
            (scratch / "report.json").write_text("{}")
    else:
        folder.mkdir()
        (folder / "report.json").write_text("{}")
    row, recording = calibrate._record(fields, str(tmp_path))
    assert recording == "recording" and recorded == [folder]
    assert compiled == ([] if ours else [folder])
