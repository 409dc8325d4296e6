import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def pytest_terminal_summary(terminalreporter):
    """Lists what the named-pipeline sweep refused (one sentence each, before compiling), per test."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        refused = dict(report.user_properties).get("refused") if report.when == "call" else None
        if refused:
            terminalreporter.write_sep("-", f"refused before compiling: {report.nodeid} ({len(refused)})")
            for line in refused:
                terminalreporter.write_line(line)
