"""The modules of the project import one way: a walk of the import graph (every `import` and `from ... import`,
at module level or inside a function) finds no cycle. Layers: transforms (MLIR, schedules) below pipelines
(targets, routes, compiler, runner, CLI); leaf modules (errors, reference, tune cache, output) below both."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("transforms", "pipelines")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                out.add(target if target in modules else base)
    return {m for m in out if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_imports_have_no_cycle():
    edges = graph()
    assert len(edges) > 30 and "pipelines.tune_cache" in edges["pipelines.named"]
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle)


def test_transforms_never_imports_pipelines():
    edges = graph()
    upward = sorted((a, b) for a, bs in edges.items() for b in bs if a.startswith("transforms") and
                    b.startswith("pipelines"))
    assert not upward, upward


def test_the_cycle_finder_finds_a_planted_cycle():
    """The walk that guards the layering can fail: the old named -> tune -> bench -> named loop is found."""
    edges = {m: set(bs) for m, bs in graph().items()}
    edges["pipelines.named"].add("pipelines.tune")
    cycle = find_cycle(edges)
    assert cycle and cycle[0] == cycle[-1] and "pipelines.named" in cycle and "pipelines.tune" in cycle


@pytest.mark.parametrize("module", ["pipelines.runner", "pipelines.inspect"])
def test_the_runner_imports_without_the_compiler(module):
    """A plan runs on a GPU machine that has only iree-base-runtime: importing the runner must not reach
    iree.compiler (it did, through the target table, until the family of an input type moved to reference.py);
    nor must the PTX reading that `results/h100/hopper/hopper_gemm.py inspect` does there."""
    import subprocess
    import sys

    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.startswith('iree.compiler'): raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            f"import {module}\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
