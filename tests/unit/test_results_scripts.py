"""The scripts of the recorded experiments under results/ run from a clean checkout: none names an absolute path of
this machine, and every module a Python script imports is found the way `python results/.../x.py` finds it (the
script's own folder, then the installed packages; not the working directory), the GPU machine's own packages
aside."""

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"
# installed only where the GPU is (the runner's machine) or in a separate environment (triton)
DEVICE_ONLY = {"torch", "triton", "cuda", "dask", "distributed"}
MACHINE_PATHS = ("/work/", "/home/", "/root/", "/Users/")


def scripts(suffixes=(".py", ".sh")) -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.suffix in suffixes and p.is_file())


def imported(path: Path) -> set[str]:
    """The top-level modules a script imports (relative imports aside)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


# Run in a child whose working directory is not the checkout: sys.path[0] is each script's folder in turn, the rest
# is the interpreter's own path (the installed packages), as for `python results/.../x.py`.
FIND = """
import importlib.util, json, sys
cases = json.loads(sys.stdin.read())
base = [p for p in sys.path if p not in ("", ".", sys.argv[1])]
missing = []
for folder, names in cases:
    sys.path[:] = [folder] + base
    for name in names:
        if name not in sys.builtin_module_names and importlib.util.find_spec(name) is None:
            missing.append(folder + ": " + name)
print(json.dumps(missing))
"""


def missing_imports(cases: list[tuple[str, list[str]]]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", FIND, str(REPO)], input=json.dumps(cases), capture_output=True,
                         text=True, cwd="/", check=True).stdout
    return json.loads(out)


def test_there_are_scripts_to_check():
    assert len(scripts((".py",))) >= 10 and len(scripts((".sh",))) >= 4


def test_no_script_names_a_path_of_this_machine():
    named = [f"{p.relative_to(REPO)}: {where}" for p in scripts() for where in MACHINE_PATHS if where in p.read_text()]
    assert not named, f"results/ scripts name absolute paths: {named}"


def test_every_import_of_every_script_is_found_from_a_clean_checkout():
    cases = []
    for path in scripts((".py",)):
        names = imported(path) - DEVICE_ONLY - set(sys.stdlib_module_names)
        cases.append((str(path.parent), sorted(names)))
    missing = missing_imports(cases)
    assert not missing, f"imports not found: {missing}"


def test_the_check_finds_a_missing_import_and_a_present_one(tmp_path):
    """The rule itself: a module beside the script is found, `tools` (not installed) and a made-up one are not."""
    (tmp_path / "helper.py").write_text("")
    assert missing_imports([(str(tmp_path), ["helper", "pipelines", "numpy"])]) == []
    assert missing_imports([(str(tmp_path), ["tools", "no_such_module_here"])]) == [
        f"{tmp_path}: tools", f"{tmp_path}: no_such_module_here"]
