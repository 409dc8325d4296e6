"""The code passes ruff (configured in pyproject.toml: unused and undefined names, syntax errors, lines over 120).
ruff comes with the test extra that tools/test.sh installs."""

import re
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


ABSOLUTE_IMPORT = re.compile(r"sys\.path\.(?:insert|append)\([^)]*['\"]/|['\"]/work/|/\.venv/bin/")


def absolute_paths(root: Path) -> list[str]:
    """Lines of the scripts under `root` that import from, or run tools at, an absolute path of one machine."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sh") and path.is_file():
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if ABSOLUTE_IMPORT.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:100]}")
    return found


def test_nothing_under_results_imports_from_an_absolute_path():
    """The recorded experiments run from a clean checkout anywhere: no sys.path entry, interpreter or tool at a
    path of the machine they were first run on."""
    assert absolute_paths(ROOT / "results") == []


def test_the_absolute_path_check_can_fail(tmp_path):
    (tmp_path / "a.py").write_text("import sys\nsys.path.insert(0, '/work/main')\n")
    (tmp_path / "b.sh").write_text("/work/main/.venv/bin/python x.py\n")
    (tmp_path / "c.py").write_text("import sys\nsys.path.insert(0, str(ROOT))\n")
    assert [line.split(":")[0] for line in absolute_paths(tmp_path)] == ["a.py", "b.sh"]
