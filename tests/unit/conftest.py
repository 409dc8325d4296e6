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
