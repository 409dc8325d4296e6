"""An iree-compile that hangs (no CPU) is killed and run again long before the time limit; one that works is left
alone however long it works; what a finished one printed and its exit status come back as subprocess.run's."""

import subprocess
import sys
import time

import pytest

from pipelines import compiler

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]
BUSY = [sys.executable, "-c", "import time\nend = time.time() + 2.5\nwhile time.time() < end: pass\nprint('done')"]


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(compiler, "HUNG_IDLE_S", 1.0)
    monkeypatch.setattr(compiler, "POLL_S", 0.2)


def test_a_process_using_no_cpu_is_killed_as_hung(quick):
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as hung:
        compiler.run_watched(SLEEP, capture_output=True, text=True)
    assert time.monotonic() - started < 10 and "no CPU" in hung.value.output


def test_a_working_process_outlives_the_idle_limit(quick):
    done = compiler.run_watched(BUSY, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "done\n"


def test_the_time_limit_still_holds_for_a_working_process(quick, monkeypatch):
    monkeypatch.setattr(compiler, "COMPILE_TIMEOUT_S", 1)
    with pytest.raises(subprocess.TimeoutExpired) as late:
        compiler.run_watched(BUSY, capture_output=True)
    assert "time limit" in late.value.output


def test_a_hung_compile_is_run_once_more_then_raised(quick, capsys):
    with pytest.raises(subprocess.TimeoutExpired):
        compiler.run_patiently(SLEEP)
    assert capsys.readouterr().err.count("compiling once more") == compiler.COMPILE_ATTEMPTS - 1


def test_check_and_exit_status_as_subprocess_run():
    failing = [sys.executable, "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"]
    done = compiler.run_watched(failing, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (3, "bad")
    with pytest.raises(subprocess.CalledProcessError):
        compiler.run_watched(failing, capture_output=True, check=True)
