"""The README's "How the code is laid out" names every module of the package and every tool, and names no file the
tree does not hold."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the package's modules, as the section names them: `name.py`, or `name` for the modules of a sub-package it lists
PACKAGES = ("pipelines", "pipelines/routes", "pipelines/emulator", "pipelines/timing", "transforms")


def section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## How the code is laid out")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def named(text: str, stem: str, suffix: str = ".py") -> bool:
    return re.search(rf"(?<![\w/]){re.escape(stem)}(?:{re.escape(suffix)})?`", text) is not None or \
        re.search(rf"\b{re.escape(stem + suffix)}\b", text) is not None


def modules() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((REPO / package).glob("*.py")) if p.name != "__init__.py"
            and p.name != "__main__.py"]


def test_every_module_and_tool_is_named():
    text = section()
    missing = [str(p.relative_to(REPO)) for p in modules() if not named(text, p.stem)]
    missing += [f"tools/{p.name}" for p in sorted((REPO / "tools").iterdir()) if p.is_file()
                and not named(text, p.stem, p.suffix)]
    assert not missing, f"the README's layout section does not name: {', '.join(missing)}"


def test_every_file_it_names_exists():
    text = section()
    files = {p.name for p in REPO.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts}
    ghosts = sorted({name for name in re.findall(r"\b([\w-]+\.(?:py|sh))\b", text) if name not in files})
    assert not ghosts, f"the README's layout section names files the tree does not hold: {', '.join(ghosts)}"


def test_the_check_finds_an_unnamed_module():
    """The rule itself: a name missing from a sample section is found, a named one is not."""
    sample = "- `pipelines/flow.py`: the driver; `emulator/` (`isa`, `machine`)"
    assert named(sample, "flow") and named(sample, "isa") and not named(sample, "cli_args")
