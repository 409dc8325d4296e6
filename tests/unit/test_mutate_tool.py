"""tools/mutate.py's harness: its test processes get a working Ctrl-C even when it was started in the background."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A parent that starts with SIGINT ignored (as `cmd &` leaves it), optionally calls restore_sigint, then asks a child
# Python what its SIGINT handler is.
PROBE = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
sys.path.insert(0, {repo!r})
from tools.mutate import restore_sigint
if {restore}:
    restore_sigint()
child = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout.strip())
"""


def _child_handles_sigint(restore: bool) -> str:
    code = PROBE.format(repo=str(REPO), restore=restore)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()


def test_a_background_harness_gives_its_test_processes_back_their_ctrl_c():
    assert _child_handles_sigint(restore=False) == "False"  # the inherited ignore: the false kills it caused
    assert _child_handles_sigint(restore=True) == "True"


def test_every_mutant_names_code_that_is_there_once():
    """A mutant whose original text has left its file (the code was rewritten) would plant nothing: each one's
    original occurs exactly once in its file, and its mutation changes it."""
    sys.path.insert(0, str(REPO))
    from tools.mutate import MUTANTS

    stale = [(m.id, (REPO / m.file).read_text().count(m.original)) for m in MUTANTS
             if (REPO / m.file).read_text().count(m.original) != 1 or m.original == m.mutated]
    assert not stale, f"mutants whose original text is not in their file exactly once: {stale}"
