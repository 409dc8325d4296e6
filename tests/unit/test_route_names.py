"""Outside the target table and the route modules no code tests a target, backend or route by name: per-target
facts are fields of `Target`, per-route behaviour is a method of the route. Read from the syntax tree, so
docstrings and comments may name targets (their evidence does) while code may not."""

import ast
from pathlib import Path

from pipelines.routes import ROUTES
from pipelines.targets import ISA_FAMILIES, TARGETS

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {REPO / "pipelines" / "targets.py", *(REPO / "pipelines" / "routes").glob("*.py")}
NAMES = set(TARGETS) | {t.backend for t in TARGETS.values()} | set(ROUTES) | set(ISA_FAMILIES)
# Strings that spell a backend's name but mean something else there, with the reason.
SAME_WORD = {("pipelines/runner.py", "cuda"): "IREE's runtime driver and torch's device are called cuda too",
             ("pipelines/model_runner.py", "cuda"): "IREE's runtime driver, whose own flags (cached allocations) the "
                                                    "table keys",
             ("pipelines/named.py", "ukernel"): "the pipeline of IREE's own tensor ukernels (issue 15 names it so); "
                                                "the route of generated ukernels is another thing",
             ("transforms/kernels.py", "wave_size"): "a generated kernel's own wave size picks its variant's name "
                                                     "(interleave is the wave32 build of interleave4)"}
# Attributes that say which route a job takes; the driver reads none of them.
ROUTE_FLAGS = {"backend", "codegen", "ukernel", "schedule_route", "codegen_route"}


def _sources() -> list[Path]:
    files = sorted((REPO / "pipelines").rglob("*.py")) + sorted((REPO / "transforms").rglob("*.py"))
    return [f for f in files if f not in ALLOWED]


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(REPO)

    def _named(node: ast.AST) -> list[str]:
        """Target, backend or route names spelled as string constants in `node` (or in a tuple, list or set)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
            return [] if (str(where), node.value) in SAME_WORD else [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [name for element in node.elts for name in _named(element)]
        return []

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            names = [n for operand in operands for n in _named(operand)]
            flags = [o.attr for o in operands if isinstance(o, ast.Attribute) and o.attr == "backend"]
            # a wave size compared with a number stands in for an ISA (the target table says what differs)
            if any(isinstance(o, ast.Attribute) and o.attr == "wave_size" for o in operands) and any(
                    isinstance(o, ast.Constant) and isinstance(o.value, int) for o in operands) \
                    and (str(where), "wave_size") not in SAME_WORD:
                flags.append("wave_size")
            if names or flags:
                found.append(f"{where}:{node.lineno} compares with {', '.join(names + flags)}")
        elif isinstance(node, ast.Dict):
            names = [n for key in node.keys if key is not None for n in _named(key)]
            if names:
                found.append(f"{where}:{node.lineno} keys a table on {', '.join(names)}")
        elif isinstance(node, ast.Subscript) and _named(node.slice):
            found.append(f"{where}:{node.lineno} looks up {', '.join(_named(node.slice))}")
        elif isinstance(node, ast.Call) and any(_named(a) for a in node.args):
            found.append(f"{where}:{node.lineno} passes {', '.join(n for a in node.args for n in _named(a))}")
    return found


def test_no_code_outside_targets_and_routes_names_a_target_backend_or_route():
    found = [line for path in _sources() for line in offences(path)]
    assert not found, "\n".join(found)


def test_the_driver_never_asks_which_route_it_holds():
    tree = ast.parse((REPO / "pipelines" / "flow.py").read_text())
    read = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in ROUTE_FLAGS})
    assert not read, f"pipelines/flow.py reads {', '.join(read)}"


def test_the_check_finds_what_it_forbids(tmp_path):
    """The rule itself: each spelling it forbids is found in a sample, the sanctioned ones are not."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""gfx942 in a docstring is fine."""\n'
                      'if target.name == "gfx950": pass\n'
                      'if target.backend != other: pass\n'
                      'RULES = {"sm_80": 1}\n'
                      'x = TARGETS["gfx1151"]\n'
                      'y = get_target("cpu")\n'
                      'z = name in ("rocm", "cuda")\n'
                      'w = ROUTES["lanes"]\n'
                      'if family == "cdna4": pass\n'
                      'if target.wave_size == 64: pass\n'
                      'if target.wave_size == other.wave_size: pass\n')
    found = offences_at(sample)
    assert [line.split(" ", 1)[0] for line in found] == ["2", "3", "4", "5", "6", "7", "8", "9", "10"], found


def offences_at(path: Path) -> list[str]:
    """`offences` for a file outside the repository: line numbers only."""
    global REPO
    saved, REPO = REPO, path.parent
    try:
        return [line.split(":", 1)[1] for line in offences(path)]
    finally:
        REPO = saved
