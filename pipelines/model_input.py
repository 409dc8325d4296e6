"""Models as importers write them, and the contractions IREE actually dispatches from them.

- `read_model`: a `.onnx` file goes through IREE's ONNX importer (`iree.compiler.tools.import_onnx`, which needs the
  `onnx` package: the project's `onnx` extra); an `.mlir` file is read as text.
- `to_linalg`: a module in the torch dialects the importers produce (`torch.operator "onnx.*"`, `torch.aten.*`) is
  lowered by IREE's own input conversion (`iree-compile --compile-to=input`) to the linalg program the rest of the
  project reads; a linalg module is returned as it is.
- `dispatched_contractions`: the contractions as IREE's dispatches hold them (the program compiled to the flow phase:
  after global optimization, which folds transposes into indexing maps, and dispatch formation), each once. A
  schedule delivered by a tuning spec is matched against these, not against the source's ops.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from iree.compiler import ir

from transforms.errors import UserError
from transforms.problem import Gemm, contraction_ops, gemms_from_mlir, parse_module

from .compiler import COMPILE_TIMEOUT_S, iree_compile_path
from .job import contraction_key
from .routes import schedule_route
from .targets import Target

TORCH_DIALECT = re.compile(r"\btorch\.(?:operator|aten|prim|constant)\b|!torch\.")


class ModelError(UserError, ValueError):
    """A model file the project cannot read or lower; the message is one sentence."""


def read_model(path: Path) -> str:
    """The MLIR text of `path`: an .onnx file imported by IREE's ONNX importer, any other file read as text."""
    if path.suffix.lower() != ".onnx":
        try:
            return path.read_text()
        except UnicodeDecodeError as err:
            raise ModelError(f"input file {path} is not MLIR text (byte {err.object[err.start]:#04x} at offset "
                             f"{err.start} is not UTF-8); give .mlir, or .onnx for an ONNX model.") from None
    try:
        import onnx  # noqa: F401  (the importer needs it)
    except ImportError:
        raise ModelError(f"reading {path} needs the onnx package: pip install -e '.[onnx]'.") from None
    with tempfile.TemporaryDirectory(prefix="pipelines-onnx-") as scratch:
        out = Path(scratch) / "model.mlir"
        done = _run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(path), "-o", str(out)])
        if done.returncode != 0 or not out.is_file():
            raise ModelError(f"IREE's ONNX importer could not read {path}: {_last_line(done.stderr)}.")
        return out.read_text()


def to_linalg(text: str, target: Target, source: str) -> str:
    """`text` as a linalg program: torch-dialect modules lowered by `iree-compile --compile-to=input`."""
    if not TORCH_DIALECT.search(text):
        return text
    return _compile_to(text, target, "input", source)


def dispatched_contractions(text: str, target: Target, source: str, skipped: list[str] | None = None) -> list[Gemm]:
    """Each distinct contraction (sizes, types, layout; the epilogue set aside) of the dispatches IREE forms from the
    linalg program `text`, in program order. With `skipped`, contractions with dynamic sizes are described there
    instead of refused."""
    return contractions_at_flow(_compile_to(text, target, "flow", source), source, skipped)


def contractions_at_flow(flow: str, source: str, skipped: list[str] | None = None) -> list[Gemm]:
    """`dispatched_contractions` of a program already at IREE's flow phase. A horizontally fused dispatch (several
    products sharing an operand in one multi-result linalg.generic, which IREE forms with
    --iree-dispatch-creation-enable-fuse-horizontal-contractions) is no single contraction a schedule describes: it
    is described in `skipped` and left to IREE."""
    with ir.Context(), ir.Location.unknown():
        module = parse_module(flow, f"{source} at IREE's flow phase")
        fused = horizontally_fused(module)
        if skipped is not None:
            skipped.extend(fused)
        if not contraction_ops(module):
            raise ModelError(f"{source} holds no contraction once IREE has formed its dispatches"
                             + (f" that the project schedules ({fused[0]})." if fused else "."))
        found: dict[Gemm, Gemm] = {}  # contraction (epilogue set aside) -> its first dispatch's GEMM
        for _, gemm in gemms_from_mlir(module, f"{source} (as IREE dispatches it)", skipped):
            found.setdefault(contraction_key(gemm), gemm)
    return list(found.values())


def horizontally_fused(module: ir.Module) -> list[str]:
    """A sentence per multi-result linalg.generic with a reduction loop and a multiplication in its body (products
    that share an operand, fused into one op), naming its dispatch."""
    found = []

    def visit(op):
        if op.name == "linalg.generic" and len(op.results) > 1 and "reduction" in str(op.attributes["iterator_types"]):
            body = [inner.name for inner in op.regions[0].blocks[0].operations]
            if "arith.mulf" in body or "arith.muli" in body:
                function = op.parent
                while function is not None and function.name != "func.func":
                    function = function.parent
                where = function.attributes["sym_name"].value if function is not None else "?"
                types = ", ".join(str(r.type) for r in op.results)
                found.append(f"{where}: {len(op.results)} contractions fused into one linalg.generic ({types}), "
                             "horizontally fused: left to IREE")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def dispatch_launches(text: str, target: Target, source: str) -> dict[str, int]:
    """How many times the program launches each dispatch (by executable name, e.g. `block$async_dispatch_0`): the
    flow.dispatch ops of the program at IREE's flow phase."""
    flow = _compile_to(text, target, "flow", source)
    counts: dict[str, int] = {}
    for name in re.findall(r"flow\.dispatch @([^:\s]+)::", flow):
        counts[name.strip('"')] = counts.get(name.strip('"'), 0) + 1
    return counts


def spec_reads_dispatches(target: Target) -> bool:
    """Whether the target's schedules reach IREE through a tuning spec, which matches the contractions IREE
    dispatches (ROCm), rather than as compilation_info on the source's ops (CUDA)."""
    return target.gpu and not getattr(schedule_route(target), "on_op", True)


def schedulable_contractions(text: str, target: Target, source: str, by_dispatch: bool,
                             skipped: list[str] | None = None) -> list[Gemm]:
    """The contractions that get schedules: as IREE dispatches them, each once (`by_dispatch`: a tuning spec matches
    those), or the source's own contraction ops in program order, one per op (compilation_info goes on them). The
    source is read first either way, so that what it holds that is not supported is named in its own terms."""
    with ir.Context(), ir.Location.unknown():
        own = [g for _, g in gemms_from_mlir(parse_module(text, source), source, [] if by_dispatch else skipped)]
    return dispatched_contractions(text, target, source, skipped) if by_dispatch else own


def _compile_to(text: str, target: Target, phase: str, source: str) -> str:
    with tempfile.TemporaryDirectory(prefix="pipelines-phase-") as scratch:
        path = Path(scratch) / "model.mlir"
        path.write_text(text)
        done = _run([iree_compile_path(), str(path), *target.compile_flags, f"--compile-to={phase}", "-o", "-"])
    if done.returncode != 0:
        raise ModelError(f"iree-compile could not bring {source} to its {phase} phase: {_last_line(done.stderr)}.")
    return done.stdout


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ModelError(f"{Path(command[0]).name} did not finish within {COMPILE_TIMEOUT_S} s.") from None


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if "error" in line.lower()] or stderr.strip().splitlines()
    return (lines[0] if lines else "no message").rstrip(".")[:300]
