"""Whole models on the Hopper kernels (sm_90a): each contraction of a linalg program that the kernels take becomes a
call of one `transforms.hopper` dispatch, its consumer fused where the kernel has that epilogue, and IREE compiles
the rest of the program (softmax, transposes, elementwise ops) as it would.

What is taken: a `linalg.matmul` of two 16-bit operands into an f32 accumulator that a `linalg.fill` of 0.0 started,
with B read as stored: K×N (NN), or N×K when B is a `linalg.transpose` [1, 0] of a N×K tensor (NT: the kernel reads
that tensor, and the transpose is left without a user). Its consumer is fused when it is the only user and is the
importer's rounding to the input type (an elementwise `linalg.generic` whose body is one `arith.truncf`): the kernel
then stores C in that type (the truncf epilogue). Everything else, and any contraction the kernel refuses (`K` not
a multiple of 8, say), stays as it was, with the reason in `HopperModel.left`.

The rewrite is on the MLIR module (IREE's Python bindings): a `func.call` of a private function per distinct
contraction replaces the contraction (and its fused consumer); each function holds the one `flow.dispatch` of its
executable (`transforms.hopper.executable`), and the module's device target is the Hopper kernels' sm_90a target,
which IREE's own pipelines compile the other dispatches for.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from transforms import hopper
from transforms.problem import Epilogue, Gemm, ProblemError, contraction_ops, parse_module, _gemm_of

FUNCTION_PREFIX = "hopper_gemm_"
EXECUTABLE_PREFIX = "hopper_"


@dataclass(frozen=True)
class HopperCall:
    """One contraction of the model as the Hopper kernel runs it: `gemm`'s layout is how the kernel reads B (nt when
    the model transposed an N×K tensor), its epilogue `truncf` when the model's rounding was fused."""

    gemm: Gemm
    schedule: hopper.HopperSchedule
    function: str  # the private function (and, with EXECUTABLE_PREFIX, the executable) it calls

    @property
    def executable(self) -> str:
        return EXECUTABLE_PREFIX + self.function.removeprefix(FUNCTION_PREFIX)


@dataclass(frozen=True)
class HopperModel:
    text: str  # the rewritten program
    calls: tuple[HopperCall, ...]  # one per contraction taken, in program order (equal ones share a function)
    left: tuple[str, ...]  # each contraction left to IREE, with the reason


def rewrite(text: str, source: str, schedule: hopper.HopperSchedule = hopper.DEFAULT) -> HopperModel:
    """The linalg program `text` with every contraction the Hopper kernels take replaced by a call of one."""
    with ir.Context(), ir.Location.unknown():
        module = parse_module(text, source)
        calls: list[HopperCall] = []
        functions: dict[Gemm, str] = {}
        left: list[str] = []
        for op in contraction_ops(module):
            op = op.operation
            taken = _take(op, source, schedule)
            if isinstance(taken, str):
                left.append(taken)
                continue
            gemm, a, b, replaced = taken
            name = functions.setdefault(gemm, f"{FUNCTION_PREFIX}{len(functions)}")
            calls.append(HopperCall(gemm, schedule, name))
            with ir.InsertionPoint(replaced[-1]):
                call = ir.Operation.create("func.call", results=[replaced[-1].results[0].type], operands=[a, b],
                                           attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
            replaced[-1].results[0].replace_all_uses_with(call.results[0])
            for done in reversed(replaced):
                done.erase()
        if not calls:
            raise ProblemError(f"{source}: the Hopper kernels take none of its contractions ("
                               f"{'; '.join(left) or 'it has none'}).")
        module.operation.attributes["hal.device.targets"] = ir.Attribute.parse(
            f'[#hal.device.target<"cuda", [{hopper.TARGET}]> : !hal.device]')
        # printed before the called functions exist (they are added as text below): unverified, in pretty form
        body = module.operation.get_asm(assume_verified=True).rstrip()
    added = [_function(gemm, schedule, name) for gemm, name in functions.items()]
    added += [hopper.executable(gemm, schedule, EXECUTABLE_PREFIX + name.removeprefix(FUNCTION_PREFIX), name)
              for gemm, name in functions.items()]
    if not body.endswith("}"):
        raise ProblemError(f"{source}: the printed module does not end its body with '}}'.")
    return HopperModel(body[:-1] + "\n".join(added) + "\n}\n", tuple(calls), tuple(left))


def _take(op: ir.Operation, source: str, schedule: hopper.HopperSchedule):
    """(the kernel's Gemm, A, B as the kernel reads it, the ops it replaces: the contraction and its fused consumer)
    or the sentence saying why the contraction stays with IREE."""
    where = f"{op.name} {', '.join(str(v.type) for v in list(op.operands)[:3])}"
    if op.name != "linalg.matmul":
        return f"{where}: the Hopper kernels take linalg.matmul (no batch, no transposed A)"
    try:
        gemm = _gemm_of(op, source)
    except ProblemError as err:
        return f"{where}: {err}"
    a, b, init = list(op.operands)[:3]
    if not _zero_fill(init):
        return f"{where}: its accumulator does not start from a fill of 0.0 (the kernels compute C = A·B)"
    if _transposed(b):
        b = b.owner.operands[0]
        gemm = gemm.with_(layout="nt")
    replaced = [op]
    consumer = _rounding(op, gemm.dtype)
    if consumer is not None:
        gemm = gemm.with_(epilogue=Epilogue("truncf"))
        replaced.append(consumer)
    try:
        hopper.check_problem(gemm, schedule)
    except hopper.HopperError as err:
        return f"{where}: {err}"
    return gemm, a, b, replaced


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner if isinstance(owner, ir.Operation) else getattr(owner, "operation", None)


def _zero_fill(value: ir.Value) -> bool:
    fill = _owner(value)
    if fill is None or fill.name != "linalg.fill":
        return False
    constant = _owner(fill.operands[0])
    return constant is not None and constant.name == "arith.constant" and \
        float(ir.FloatAttr(constant.attributes["value"]).value) == 0.0


def _transposed(value: ir.Value) -> bool:
    """B is `linalg.transpose` [1, 0] of a 2-D tensor."""
    op = _owner(value)
    return op is not None and op.name == "linalg.transpose" and \
        list(ir.DenseI64ArrayAttr(op.attributes["permutation"])) == [1, 0]


def _rounding(op: ir.Operation, dtype: str) -> ir.Operation | None:
    """The contraction's only user when it is an elementwise `linalg.generic` rounding f32 to `dtype` (its body one
    arith.truncf and the yield, identity maps)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    if user.name != "linalg.generic" or len(user.operands) != 2 or len(user.results) != 1:
        return None
    maps = [str(m) for m in ir.ArrayAttr(user.attributes["indexing_maps"])]
    if set(maps) != {"affine_map<(d0, d1) -> (d0, d1)>"}:
        return None
    body = [o.operation.name for o in user.regions[0].blocks[0].operations]
    out = ir.RankedTensorType(user.results[0].type)
    return user if body == ["arith.truncf", "linalg.yield"] and str(out.element_type) == dtype else None


def _function(gemm: Gemm, schedule: hopper.HopperSchedule, name: str) -> str:
    ta, tb, tc, _ = hopper.tensor_types(gemm, schedule)
    executable = EXECUTABLE_PREFIX + name.removeprefix(FUNCTION_PREFIX)
    return f"""  func.func private @{name}(%a: {ta}, %b: {tb}) -> {tc} {{
    {hopper.dispatch(gemm, schedule, executable, "%a", "%b", "%c", name)}
    return %c : {tc}
  }}"""
