"""The code passes ruff (configured in pyproject.toml: unused and undefined names, syntax errors, lines over 120).
ruff comes with the test extra that tools/test.sh installs."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "pipelines",
                           "transforms", "tools", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in done.stderr, "install the test extra: pip install -e '.[test]'"
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_would_find_an_unused_import(tmp_path):
    """The lint test can fail: the same configuration flags a planted unused import."""
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"),
                           str(planted)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "F401" in done.stdout
