import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipelines.cli import main  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    """Lists what the named-pipeline sweep refused (one sentence each, before compiling), per test."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        refused = dict(report.user_properties).get("refused") if report.when == "call" else None
        if refused:
            terminalreporter.write_sep("-", f"refused before compiling: {report.nodeid} ({len(refused)})")
            for line in refused:
                terminalreporter.write_line(line)


@pytest.fixture(scope="session", autouse=True)
def _pick_cache(tmp_path_factory):
    """The timing model's choices (`pipelines.pick`) are cached in one file the session's workers share, never in
    the user's ~/.cache."""
    root = tmp_path_factory.getbasetemp()
    root = root.parent if root.name.startswith("popen-gw") else root
    saved = os.environ.get("PIPELINES_PICK_CACHE")
    os.environ["PIPELINES_PICK_CACHE"] = str(root / "picks.json")
    yield
    if saved is None:
        os.environ.pop("PIPELINES_PICK_CACHE", None)
    else:
        os.environ["PIPELINES_PICK_CACHE"] = saved


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """compiled(*flags) -> folder of `pipelines compile *flags`, compiled once per session (shared by the emulator
    tests; a test file may define its own `compiled`)."""
    cache: dict[tuple, Path] = {}

    def compile_(*flags: str) -> Path:
        if flags not in cache:
            folder = tmp_path_factory.mktemp("kernel")
            assert main(["compile", *flags, "-o", str(folder)]) == 0
            cache[flags] = folder
        return cache[flags]
    return compile_
