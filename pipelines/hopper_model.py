"""Whole models on the Hopper kernels (sm_90a): each contraction of a linalg program that the kernels take becomes a
call of one `transforms.hopper` dispatch, its consumer fused where the kernel has that epilogue, each softmax of a
16-bit tensor along its rows a call of the row softmax kernel (`transforms.softmax`), and IREE compiles the rest of
the program (transposes, other elementwise ops, any softmax in another form) as it would.

What is taken: a `linalg.matmul` or `linalg.batch_matmul` of two 16-bit operands into an f32 accumulator that a
`linalg.fill` of 0.0 started, with B read as stored: K×N (NN), or N×K when B is a `linalg.transpose` of an N×K
tensor ([1, 0]; [0, 2, 1] in a batch) (NT: the kernel reads that tensor, and the transpose is left without a user).
Its consumer is fused when it is the only user and is the importer's rounding to the input type (an elementwise
`linalg.generic` whose body is one `arith.truncf`): the kernel then stores C in that type (the truncf epilogue).
Everything else, and any contraction the kernel refuses (`K` not a multiple of 8, say), stays as it was, with the
reason in `HopperModel.left`. A product whose store applies an elementwise tail after the rounding (a Gelu; not in a
batch, whose tails stay IREE's) runs on the shipped cooperative kernel; any other, on `product_schedule`'s
(ping-pong where K is short; a batch by the `hopper` pipeline's batch rule). A batch's call collapses its rank-3
operands to the kernel's stacked rows and expands C after (`hopper.batch_function`).

The rewrite is on the MLIR module (IREE's Python bindings): a `func.call` of a private function per distinct
contraction replaces the contraction (and its fused consumer); each function holds the one `flow.dispatch` of its
executable (`transforms.hopper.executable`), and the module's device target is the Hopper kernels' sm_90a target,
which IREE's own pipelines compile the other dispatches for.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

from iree.compiler import ir
from iree.compiler.dialects import linalg, tensor

from transforms import hopper, softmax as row_softmax
from transforms.problem import Epilogue, Gemm, ProblemError, contraction_ops, parse_module, _gemm_of

FUNCTION_PREFIX = "hopper_gemm_"
EXECUTABLE_PREFIX = "hopper_"
SOFTMAX_PREFIX = "row_softmax_"  # a softmax kernel's function and entry: row_softmax_N, its executable softmax_N


@dataclass(frozen=True)
class HopperCall:
    """One contraction of the model as the Hopper kernel runs it: `gemm`'s layout is how the kernel reads B (nt when
    the model transposed an N×K tensor), its epilogue `truncf` when the model's rounding was fused."""

    gemm: Gemm
    schedule: hopper.HopperSchedule
    function: str  # the private function (and, with EXECUTABLE_PREFIX, the executable) it calls
    tail: hopper.Elementwise | None = None  # the model's elementwise consumers after the rounding, fused

    @property
    def executable(self) -> str:
        return _executable(self.function)


def _executable(function: str) -> str:
    """The executable a Hopper call's private function dispatches (its entry is named as the function)."""
    return EXECUTABLE_PREFIX + function.removeprefix(FUNCTION_PREFIX)


@dataclass(frozen=True)
class SoftmaxCall:
    """One softmax of the model (the importer's chain from its 16-bit input to the rounded result) as the row
    softmax kernel runs it."""

    softmax: row_softmax.RowSoftmax
    function: str  # the private function and the kernel's entry

    @property
    def executable(self) -> str:
        return _softmax_executable(self.function)


def _softmax_executable(function: str) -> str:
    return function.removeprefix("row_")


@dataclass(frozen=True)
class HopperModel:
    text: str  # the rewritten program
    calls: tuple[HopperCall, ...]  # one per contraction taken, in program order (equal ones share a function)
    left: tuple[str, ...]  # each contraction left to IREE, with the reason
    softmaxes: tuple[SoftmaxCall, ...] = ()  # one per softmax taken, in program order (equal ones share a function)
    softmax_left: tuple[str, ...] = ()  # each softmax left to IREE, with the reason

    @property
    def functions(self) -> tuple[HopperCall, ...]:
        """The first call of each function: one per kernel the program holds."""
        return tuple({c.function: c for c in self.calls}.values())

    @property
    def softmax_functions(self) -> tuple[SoftmaxCall, ...]:
        return tuple({c.function: c for c in self.softmaxes}.values())


# A contraction whose store runs a fused consumer keeps the shipped cooperative kernel. Measured on an H100
# (results/h100/hopper-model/probe/), the block's W1 product with the importer's Gelu in its store, the Gelu's ops
# lowered by `transforms.tail_math` (the erf a polynomial of 12 fused multiply-adds, the division by sqrt(2) a
# product: the same bits), took 264 µs cooperative and 335 µs ping-pong, against 218 µs for the product and 101 µs
# for the Gelu's own dispatch (IREE's erf in the store: 638 and 611 µs). So consumers are fused unless asked not to.
TAIL_SCHEDULE = hopper.DEFAULT
# A product with no fused consumer and K ≤ SMALL_K runs on the ping-pong kernel (128x128: one consumer's store under
# the other's products), the others on the shipped cooperative one. Measured on an H200 in the transformer blocks
# (results/h200/softmax/pingpong/): at K = 1024 ping-pong took 29.5 µs where cooperative took 32 (8192x1024x1024)
# and 215 against 226 µs (8192x8192x1024 NT), the block 1.027 against 1.049 ms; at K = 2048 it was no faster.
SMALL_K = 1024
SMALL_K_SCHEDULE = hopper.named_schedule("hopper-pingpong")


# A batch of products (linalg.batch_matmul) runs on the `hopper` pipeline's batch rule (`routes.hopper.fitted`: the
# shipped tile, 128 columns where N ≤ 128), the one its first GPU run measured (results/h200/batch/run1, H200, f16
# NN with a 16-bit C: the multi-head block's 16x4096x4096x128 in 289 µs and 16x4096x128x4096 in 182 µs, IREE's
# default 699 and 531; all 40 cases float64-checked).
TAKEN = ("linalg.matmul", "linalg.batch_matmul")


def product_schedule(gemm: Gemm) -> hopper.HopperSchedule:
    """The rule's schedule for a product with no fused consumer: a batch's by `routes.hopper.fitted`;
    `SMALL_K_SCHEDULE` for K ≤ SMALL_K where the ping-pong kernel takes the problem, else the shipped one; C stored
    by TMA where `routes.hopper.store_rule` says so."""
    from .routes.hopper import fitted, store_rule
    if gemm.batched:
        return fitted(gemm)
    if gemm.k <= SMALL_K:
        try:
            hopper.check_problem(gemm, SMALL_K_SCHEDULE)
            return store_rule(gemm, SMALL_K_SCHEDULE)
        except hopper.HopperError:
            pass
    return store_rule(gemm, hopper.DEFAULT)


def tail_schedule_for(gemm: Gemm) -> hopper.HopperSchedule:
    """The rule's schedule for a product whose store applies a fused consumer: TAIL_SCHEDULE, C stored by TMA where
    `routes.hopper.store_rule` says so."""
    from .routes.hopper import store_rule
    return store_rule(gemm, TAIL_SCHEDULE)


def rewrite(text: str, source: str, schedule: hopper.HopperSchedule | None = None, fuse_tail: bool = True,
            tail_schedule: hopper.HopperSchedule | None = None, softmax: bool = True,
            head_stores: bool = False) -> HopperModel:
    """The linalg program `text` with every contraction the Hopper kernels take replaced by a call of one with
    `schedule` (default: `product_schedule`'s rule), the importer's rounding fused. `fuse_tail` (default):
    elementwise consumers after the rounding (a Gelu) run in the kernel's store too, with `tail_schedule`
    (default: `tail_schedule_for`); without it they stay IREE's dispatches. `softmax` (default): each softmax of a
    16-bit tensor along its rows, as the importer writes it (`_softmax_chain`), becomes a call of the row softmax
    kernel (`transforms.softmax`); without it IREE compiles it. `head_stores`: a product whose rounded C the
    program splits into attention's heads (`_head_chain`), or a batch of heads' products whose C it joins back,
    stores C in that layout itself (`HopperSchedule.store_heads`), and the program's reshapes and transposes around
    it go."""
    with ir.Context(), ir.Location.unknown():
        module = parse_module(text, source)
        calls: list[HopperCall] = []
        functions: dict[tuple, str] = {}
        left: list[str] = []
        for op in contraction_ops(module):
            op = op.operation
            taken = _take(op, source, schedule, fuse_tail, tail_schedule)
            if isinstance(taken, str):
                left.append(taken)
                continue
            gemm, tail, chosen, a, b, replaced = taken
            chain = _head_chain(replaced[-1], gemm, tail, chosen) if head_stores else None
            moved, permutation = [], None
            if chain is not None:
                chosen, moved, result_type, permutation = chain
            name = functions.setdefault((gemm, tail, chosen), f"{FUNCTION_PREFIX}{len(functions)}")
            calls.append(HopperCall(gemm, chosen, name, tail))
            last = moved[-1] if moved else replaced[-1]
            with ir.InsertionPoint(last):
                call = ir.Operation.create("func.call", results=[result_type if chain else last.results[0].type],
                                           operands=[a, b], attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
                value = call.results[0]
                if permutation is not None:  # K's heads as the program read them, H×w×S: a transpose of H×S×w
                    shape = ir.RankedTensorType(last.results[0].type)
                    empty = tensor.EmptyOp(list(shape.shape), shape.element_type).result
                    value = _result(linalg.transpose(value, outs=[empty], permutation=permutation))
            last.results[0].replace_all_uses_with(value)
            for done in [*reversed(moved), *reversed(replaced)]:
                done.erase()
        if not calls:
            raise ProblemError(f"{source}: the Hopper kernels take none of its contractions ("
                               f"{'; '.join(left) or 'it has none'}).")
        softmaxes: list[SoftmaxCall] = []
        softmax_functions: dict[row_softmax.RowSoftmax, str] = {}
        softmax_left: list[str] = []
        for op in _extensions(module) if softmax else []:
            taken = _softmax_chain(op)
            if taken is None:
                continue  # not the start of a softmax
            if isinstance(taken, str):
                softmax_left.append(taken)
                continue
            spec, x, replaced = taken
            name = softmax_functions.setdefault(spec, f"{SOFTMAX_PREFIX}{len(softmax_functions)}")
            softmaxes.append(SoftmaxCall(spec, name))
            last = replaced[-1]
            with ir.InsertionPoint(last):
                result = _rows_call(x, spec, name)
            last.results[0].replace_all_uses_with(result)
            for done in reversed(replaced):
                done.erase()
        module.operation.attributes["hal.device.targets"] = ir.Attribute.parse(
            f'[#hal.device.target<"cuda", [{hopper.TARGET}]> : !hal.device]')
        # printed before the called functions exist (they are added as text below): unverified, in pretty form
        body = module.operation.get_asm(assume_verified=True).rstrip()
    added = [hopper.heads_function(gemm, chosen, name, _executable(name)) if chosen.store_heads
             else _function(gemm, chosen, name) for (gemm, _, chosen), name in functions.items()]
    added += [hopper.executable(gemm, chosen, _executable(name), name, tail)
              for (gemm, tail, chosen), name in functions.items()]
    added += [row_softmax.function(spec, name, _softmax_executable(name)) for spec, name in softmax_functions.items()]
    added += [row_softmax.executable(spec, _softmax_executable(name), name) for spec, name in softmax_functions.items()]
    if not body.endswith("}"):
        raise ProblemError(f"{source}: the printed module does not end its body with '}}'.")
    return HopperModel(body[:-1] + "\n".join(added) + "\n}\n", tuple(calls), tuple(left), tuple(softmaxes),
                       tuple(softmax_left))


def _take(op: ir.Operation, source: str, schedule: hopper.HopperSchedule | None, fuse_tail: bool,
          tail_schedule: hopper.HopperSchedule | None):
    """(the kernel's Gemm, its fused tail, its schedule, A, B as the kernel reads it, the ops it replaces: the
    contraction and its fused consumers) or the sentence saying why the contraction stays with IREE."""
    where = f"{op.name} {', '.join(str(v.type) for v in list(op.operands)[:3])}"
    if op.name not in TAKEN:
        return f"{where}: the Hopper kernels take {' and '.join(TAKEN)} (no transposed A)"
    try:
        gemm = _gemm_of(op, source)
    except ProblemError as err:
        return f"{where}: {err}"
    a, b, init = list(op.operands)[:3]
    if _fill_of(init) != 0.0:
        return f"{where}: its accumulator does not start from a fill of 0.0 (the kernels compute C = A·B)"
    if gemm.layout == "nn" and _transposed(b):  # (a TN or NT matmul reading a transpose is not read as stored)
        b = b.owner.operands[0]
        gemm = gemm.with_(layout="nt")
    replaced, tail = [op], None
    consumer = _rounding(op, gemm.dtype)
    if consumer is not None:
        gemm = gemm.with_(epilogue=Epilogue("truncf"))
        replaced.append(consumer)
        ops: list = []
        while fuse_tail and not gemm.batched and \
                (after := _elementwise(replaced[-1], gemm.dtype, ops)) is not None:  # Gelu, ReLU, ...
            replaced.append(after)
        tail = hopper.Elementwise(tuple(ops)) if ops else None
    if tail is not None:
        chosen = tail_schedule or tail_schedule_for(gemm)
    else:
        chosen = schedule or product_schedule(gemm)
    try:
        hopper.check_problem(gemm, chosen)
    except hopper.HopperError as err:
        return f"{where}: {err}"
    return gemm, tail, chosen, a, b, replaced


def _head_chain(rounding: ir.Operation, gemm: Gemm, tail, chosen: hopper.HopperSchedule):
    """Where the program moves a product's rounded C into attention's heads or back, the schedule storing it so
    itself: (the schedule with `store_heads`, the ops it replaces, the type of what the call then gives, and for K's
    H×w×S the permutation that still makes it from H×S×w), or None. The chains, as IREE's ONNX importer writes a
    Reshape and Transpose, each op the only user of the one before:

        split: C (M×N) -> expand_shape [[0], [1, 2]] to M×H×w -> transpose [1, 0, 2] (H×M×w) or [1, 2, 0] (H×w×M)
        join:  C (H×M×w, a batch of H products) -> transpose [1, 0, 2] (M×H×w) -> collapse_shape [[0], [1, 2]]

    None where the kernels cannot store it so (`hopper.check_problem`: by TMA, whole tiles, heads of whole 32-column
    boxes) or C is not rounded to the input type, or a consumer is fused."""
    if tail is not None or gemm.epilogue.kind != "truncf":
        return None
    first = _only_user(rounding)
    second = _only_user(first) if first is not None else None
    if first is None or second is None:
        return None
    if not gemm.batched:
        if first.name != "tensor.expand_shape" or _reassociation(first) != "[[0], [1, 2]]" or \
                second.name != "linalg.transpose":
            return None
        heads = ir.RankedTensorType(first.results[0].type).shape[1]
        permutation = _permutation(second)
        if permutation not in ([1, 0, 2], [1, 2, 0]):
            return None
        result = ir.RankedTensorType.get([heads, gemm.m, gemm.n // heads], ir.RankedTensorType(
            first.results[0].type).element_type)
        after = [0, 2, 1] if permutation == [1, 2, 0] else None
    else:
        if first.name != "linalg.transpose" or _permutation(first) != [1, 0, 2] or \
                second.name != "tensor.collapse_shape" or _reassociation(second) != "[[0], [1, 2]]":
            return None
        heads, result, after = gemm.batch, second.results[0].type, None
    headed = replace(chosen, tma_store=True, store_heads=heads)
    try:
        headed.check()
        hopper.check_problem(gemm, headed)
    except hopper.HopperError:
        return None
    return headed, [first, second], result, after


def _result(built) -> ir.Value:
    """The one result of what a dialect builder gave (a value, or an op holding it)."""
    if isinstance(built, ir.Value):
        return built
    return built.results[0] if hasattr(built, "results") else built.result


def _only_user(op: ir.Operation) -> ir.Operation | None:
    """The one op using `op`'s result, or None (no result, as a return has, or not exactly one user)."""
    if len(op.results) == 0:
        return None
    users = _users(op.results[0])
    return users[0] if len(users) == 1 else None


def _reassociation(op: ir.Operation) -> str:
    return str(op.attributes["reassociation"])


def _permutation(op: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner if isinstance(owner, ir.Operation) else getattr(owner, "operation", None)


def _transposed(value: ir.Value) -> bool:
    """B is a `linalg.transpose` swapping the last two dimensions of its input ([1, 0]; [0, 2, 1] in a batch)."""
    op = _owner(value)
    if op is None or op.name != "linalg.transpose":
        return False
    rank = ir.RankedTensorType(value.type).rank
    return _permutation(op) == [*range(rank - 2), rank - 1, rank - 2]


def _map_user(op: ir.Operation) -> ir.Operation | None:
    """`op`'s only user when it is an elementwise `linalg.generic` of one input and one output (identity maps of
    `op`'s rank)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    if user.name != "linalg.generic" or len(user.operands) != 2 or len(user.results) != 1:
        return None
    return user if set(_maps(user)) == {_identity(ir.RankedTensorType(op.results[0].type).rank)} else None


def _rounding(op: ir.Operation, dtype: str) -> ir.Operation | None:
    """The contraction's only user when it rounds f32 to `dtype` (`_map_user`, its body one arith.truncf and the
    yield)."""
    user = _map_user(op)
    if user is None:
        return None
    out = ir.RankedTensorType(user.results[0].type)
    return user if _body_names(user) == ["arith.truncf", "linalg.yield"] and str(out.element_type) == dtype else None


def _elementwise(op: ir.Operation, dtype: str, ops: list) -> ir.Operation | None:
    """`op`'s only user when it is an elementwise `linalg.generic` from `dtype` to `dtype` (identity maps, its
    output operand unread) whose body the Hopper epilogue can apply (`hopper.ELEMENTWISE_OPS`, constants defined
    outside): its ops are appended to `ops` (chained after those already there)."""
    user = _only_elementwise_user(op, dtype)
    if user is None:
        return None
    block = user.regions[0].blocks[0]
    inside = [o.operation for o in block.operations]
    base = len(ops)
    mine: list = []
    refer: dict[int, object] = {}  # a body op's index -> how a later op names its result
    for position, body_op in enumerate(inside[:-1]):
        if body_op.name == "arith.constant":  # a constant in the body: an immediate of the ops that read it
            refer[position] = ("const", str(body_op.attributes["value"]))
            continue
        operands: list = []
        for value in body_op.operands:
            if value == block.arguments[0]:
                operands.append("in" if base == 0 else base - 1)
            elif value == block.arguments[1]:
                return None  # reads its output operand: not a plain map of its input
            elif (index := next((i for i, o in enumerate(inside) if o.results and o.results[0] == value),
                                None)) is not None:
                operands.append(refer[index])
            else:
                owner = _owner(value)
                if owner is None or owner.name != "arith.constant":
                    return None
                operands.append(("const", str(owner.attributes["value"])))
        if len(body_op.results) != 1 or hopper.ELEMENTWISE_OPS.get(body_op.name) != len(operands):
            return None
        refer[position] = base + len(mine)
        mine.append((body_op.name, tuple(operands), str(body_op.results[0].type)))
    last = inside[-1]
    if last.name != "linalg.yield" or not mine or refer.get(len(inside) - 2) != base + len(mine) - 1 \
            or last.operands[0] != inside[-2].results[0]:
        return None
    ops.extend(mine)
    return user


def _only_elementwise_user(op: ir.Operation, dtype: str) -> ir.Operation | None:
    """`_map_user` from `dtype` to `dtype`."""
    user = _map_user(op)
    if user is None:
        return None
    types = [ir.RankedTensorType(v.type) for v in (user.operands[0], user.results[0])]
    return user if all(str(t.element_type) == dtype for t in types) else None


def _extensions(module) -> list[ir.Operation]:
    """The program's elementwise `linalg.generic`s whose body is one `arith.extf` to f32: where an importer's softmax
    of a 16-bit tensor starts."""
    found = []

    def visit(op):
        if op.name == "linalg.generic" and _body_names(op) == ["arith.extf", "linalg.yield"] and \
                str(ir.RankedTensorType(op.results[0].type).element_type) == "f32":
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _body_names(op: ir.Operation) -> list[str]:
    return [o.operation.name for o in op.regions[0].blocks[0].operations]


def _maps(op: ir.Operation) -> list[str]:
    return [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op: ir.Operation) -> list[str]:
    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner for use in value.uses]


def _fill_of(value: ir.Value) -> float | None:
    """The constant a `linalg.fill` writes into `value`, or None."""
    fill = _owner(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    constant = _owner(fill.operands[0])
    if constant is None or constant.name != "arith.constant":
        return None
    return float(ir.FloatAttr(constant.attributes["value"]).value)


def _rows_call(x: ir.Value, spec: row_softmax.RowSoftmax, name: str) -> ir.Value:
    """The call of the kernel's function `name` on `x` (at the insertion point): a tensor of rank above 2 collapsed to
    rows × columns around it (its rows are contiguous), the result expanded back."""
    shape = list(ir.RankedTensorType(x.type).shape)
    rows_type = ir.RankedTensorType.get([spec.rows, spec.cols], ir.RankedTensorType(x.type).element_type)
    i64 = ir.IntegerType.get_signless(64)
    groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in range(len(shape) - 1)]),
                               ir.ArrayAttr.get([ir.IntegerAttr.get(i64, len(shape) - 1)])])
    if len(shape) > 2:
        x = ir.Operation.create("tensor.collapse_shape", results=[rows_type], operands=[x],
                                attributes={"reassociation": groups}).results[0]
    call = ir.Operation.create("func.call", results=[rows_type], operands=[x],
                               attributes={"callee": ir.FlatSymbolRefAttr.get(name)})
    if len(shape) == 2:
        return call.results[0]
    return ir.Operation.create("tensor.expand_shape", results=[ir.RankedTensorType.get(shape, rows_type.element_type)],
                               operands=[call.results[0]],
                               attributes={"reassociation": groups,
                                           "static_output_shape": ir.DenseI64ArrayAttr.get(shape)}).results[0]


def _identity(rank: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({dims})>"


def _row(rank: int, kept: bool) -> str:
    """A row's value: the leading dimensions (rank - 1 of them), and a last of size 1 when `kept`."""
    dims = [f"d{i}" for i in range(rank)]
    return f"affine_map<({', '.join(dims)}) -> ({', '.join(dims[:-1] + (['0'] if kept else []))})>"


def _combines(op: ir.Operation, name: str, result: int = 0) -> bool:
    """`op`'s body yields, as its result `result`, `name` applied to its input element and its running value."""
    block = op.regions[0].blocks[0]
    inputs = len(list(op.operands)) - len(list(op.results))
    value = list(block.operations)[-1].operands[result]
    owner = _owner(value)
    if owner is None or owner.name != name:
        return False
    operands = set(map(str, (owner.operands[0].get_name(), owner.operands[1].get_name())))
    wanted = {block.arguments[0].get_name(), block.arguments[inputs + result].get_name()}
    return operands == wanted


def _softmax_chain(extension: ir.Operation):
    """None when `extension` (`_extensions`) starts no softmax; else (the kernel's RowSoftmax, the 16-bit input, the
    ops it replaces in program order) or a sentence saying why the row softmax kernel does not take it. The chain,
    as IREE's ONNX importer writes a Softmax along the last axis of a 16-bit tensor (R×N here; of rank r > 2, its
    rows are every index but the last, and the maps the same on r dimensions; each op a one-result
    `linalg.generic` whose body is the one op shown, on its block arguments in this order; every later step the only
    user of the one before, but for the extension, which may have other users and then stays):

        e = extf(x)                     f32, R×N
        m = max over each row of e      from a fill of -inf (an argmax beside it, unused)
        d = e - m                       (m expanded to R×1)
        p = exp(d)
        s = sum over each row of p      from a fill of 0.0, R×1
        q = p / s
        y = truncf(q)                   x's type
    """
    x = extension.operands[0]
    x_type = ir.RankedTensorType(x.type)
    dtype = str(x_type.element_type)
    users = _users(extension.results[0])
    reductions = [u for u in users if u.name == "linalg.generic" and "#linalg.iterator_type<reduction>"
                  in _iterators(u) and len(list(u.operands)) - len(list(u.results)) == 1]
    maxes = [(u, op) for u in reductions if (op := _max_op(u)) and _fill_of(u.operands[1]) == float("-inf")]
    if not _body(extension, "arith.extf", (0,)) or len(maxes) != 1:
        return None
    high, max_op = maxes[0]
    where = f"softmax of {x.type}"
    if not x_type.has_static_shape:
        return f"{where}: the row softmax kernel takes static sizes."
    rank = x_type.rank
    full, row, row1 = _identity(rank), _row(rank, False), _row(rank, True)
    if rank < 2 or _maps(extension) != [full, full] or _maps(high)[:2] != [full, row]:
        return f"{where}: the row softmax kernel takes a tensor of rank 2 or more reduced along its last axis."
    if any(list(r.uses) for r in list(high.results)[1:]):
        return None  # the argmax is used
    expanded = _users(high.results[0])
    if len(expanded) != 1 or expanded[0].name != "tensor.expand_shape" or len(_users(expanded[0].results[0])) != 1:
        return None
    shift = _users(expanded[0].results[0])[0]
    if shift not in users or shift.name != "linalg.generic" or _maps(shift) != [full, row1, full] or \
            not _body(shift, "arith.subf", (0, 1)) or \
            list(shift.operands)[:2] != [extension.results[0], expanded[0].results[0]]:
        return None
    exp = _single_user(shift)
    if exp is None or not _body(exp, "math.exp", (0,)) or _maps(exp) != [full, full]:
        return None
    exp_users = _users(exp.results[0])
    total = next((u for u in exp_users if u.name == "linalg.generic" and "#linalg.iterator_type<reduction>"
                  in _iterators(u)), None)
    quotient = next((u for u in exp_users if u != total), None)
    if len(exp_users) != 2 or total is None or quotient is None or not _combines(total, "arith.addf") or \
            len(list(total.results)) != 1 or _maps(total) != [full, row1] or _fill_of(total.operands[1]) != 0.0:
        return None
    if _users(total.results[0]) != [quotient] or quotient.name != "linalg.generic" or \
            _maps(quotient) != [full, row1, full] or not _body(quotient, "arith.divf", (0, 1)) or \
            list(quotient.operands)[:2] != [exp.results[0], total.results[0]]:
        return None
    rounding = _single_user(quotient)
    if rounding is None or not _body(rounding, "arith.truncf", (0,)) or _maps(rounding) != [full, full] or \
            str(ir.RankedTensorType(rounding.results[0].type).element_type) != dtype:
        return None
    spec = row_softmax.RowSoftmax(math.prod(x_type.shape[:-1]), x_type.shape[-1], dtype, max_op)
    try:
        spec.check()
    except row_softmax.SoftmaxError as err:
        return f"{where}: {err}"
    chain = [high, expanded[0], shift, exp, total, quotient, rounding]
    kept = len(users) > 2  # e has users beside m and d: it stays for them
    return spec, x, chain if kept else [extension, *chain]


def _max_op(op: ir.Operation) -> str | None:
    """The op of `MAX_OPS` whose running value `op`'s body yields (`_combines`), or None."""
    return next((name for name in row_softmax.MAX_OPS if _combines(op, name)), None)


def _body(op: ir.Operation, name: str, arguments: tuple[int, ...]) -> bool:
    """`op` is a one-result `linalg.generic` whose body is `name` on its block arguments `arguments`, in that order,
    yielded."""
    if op.name != "linalg.generic" or len(list(op.results)) != 1 or _body_names(op) != [name, "linalg.yield"]:
        return False
    block = op.regions[0].blocks[0]
    inner, done = list(block.operations)
    return [str(v.get_name()) for v in inner.operands] == [block.arguments[i].get_name() for i in arguments] and \
        list(done.operands) == [inner.results[0]]


def _single_user(op: ir.Operation) -> ir.Operation | None:
    """`op`'s only user when it is a `linalg.generic` (of any maps)."""
    users = _users(op.results[0])
    return users[0] if len(users) == 1 and users[0].name == "linalg.generic" else None


def _function(gemm: Gemm, schedule: hopper.HopperSchedule, name: str) -> str:
    if gemm.batched:
        return hopper.batch_function(gemm, schedule, name, _executable(name))
    ta, tb, tc, _ = hopper.tensor_types(gemm, schedule)
    return f"""  func.func private @{name}(%a: {ta}, %b: {tb}) -> {tc} {{
    {hopper.dispatch(gemm, schedule, _executable(name), "%a", "%b", "%c", name)}
    return %c : {tc}
  }}"""


def tune_model_hopper(model, target, out, force: bool = False, fuse_tail: bool = True, softmax: bool = True,
                      head_stores: bool = True) -> dict:
    """`pipelines tune-model MODEL --target sm_90a --pipeline hopper`: the model compiled twice into `out`, with
    every contraction the Hopper kernels take as one of their dispatches (`tuned/`) and as IREE compiles it
    (`default/`), each a folder with `gemm.mlir` (the program compiled), `gemm.vmfb` and `dump/`; then each distinct
    call's kernel proven in the tuned PTX (`hopper.check_ptx` on its entry) and no product left to IREE but those
    `left` names. `model.json` and `model.md` say per kernel what runs it."""
    from pathlib import Path

    from .compiler import DUMP_DIR, run_iree_compile
    from .model_input import ModelError, read_model, to_linalg
    from .output import output_folder
    from .tune_model import _named

    model = Path(model)
    text = to_linalg(read_model(model), target, str(model))
    try:
        rewritten = rewrite(text, str(model), fuse_tail=fuse_tail, softmax=softmax, head_stores=head_stores)
    except (ProblemError, hopper.HopperError) as err:
        raise ModelError(str(err)) from None
    with output_folder(out, "tune-model", force) as folder:
        compiled = {}
        for name, source in (("tuned", rewritten.text), ("default", text)):
            (folder / name).mkdir()
            (folder / name / "gemm.mlir").write_text(source)
            compiled[name] = run_iree_compile(folder / name / "gemm.mlir", folder / name, target,
                                              moved_to=(folder, Path(out)))
        ptx = "\n".join(p.read_text() for p in sorted((folder / "tuned" / DUMP_DIR).glob("*.ptx")))
        for call in rewritten.functions:
            try:
                hopper.check_ptx(ptx, call.gemm, call.schedule, entry=call.function, tail=call.tail)
            except hopper.HopperError as err:
                raise ModelError(f"{call.function} in the compiled {model.name}: {err}") from None
        for softmax_call in rewritten.softmax_functions:
            try:
                row_softmax.check_ptx(ptx, softmax_call.softmax, softmax_call.function)
            except row_softmax.SoftmaxError as err:
                raise ModelError(f"{softmax_call.function} in the compiled {model.name}: {err}") from None
        rows = _dispatch_rows(folder / "tuned" / DUMP_DIR, rewritten.functions, rewritten.softmax_functions)
        ours = len(rewritten.functions) + len(rewritten.softmax_functions)
        iree_rows = rows[ours:]  # IREE's own dispatches, after the kernels'
        products = [r["dispatch"] for r in iree_rows if r["contraction"]]
        if len(products) > len(rewritten.left):
            raise ModelError(f"the compiled {model.name} still computes {products[0]} with IREE's kernel, which the "
                             "rewrite should have taken.")
        summary = {
            "model": str(model), "target": target.name, "pipeline": "hopper", "fuse_tail": fuse_tail,
            "head_stores": head_stores,
            "softmax_kernel": softmax,
            # per dispatch, as `pipelines report --table model` pairs a run's launches with the default's
            "dispatches": rows, "default_dispatches": _dispatch_rows(folder / "default" / DUMP_DIR, ()),
            "calls": [{"function": c.function, "contraction": _named(c.gemm),
                       "epilogue": c.gemm.epilogue.kind,
                       "fused_ops": [op[0] for op in c.tail.ops] if c.tail else [],
                       "schedule": c.schedule.describe()} for c in rewritten.calls],
            "softmaxes": [{"function": c.function, "softmax": f"{c.softmax.rows}x{c.softmax.cols} {c.softmax.dtype}",
                           "kernel": c.softmax.describe()} for c in rewritten.softmaxes],
            "softmax_left": list(rewritten.softmax_left),
            "left": list(rewritten.left), "verified": True,
            "iree_dispatches": [r["dispatch"] for r in iree_rows],
            "split_out_consumers": [r["dispatch"] for r in iree_rows if r.get("split_consumer")],
            "command": list(compiled["tuned"].command)}
        (folder / "model.json").write_text(json.dumps(summary, indent=1) + "\n")
        (folder / "model.md").write_text(markdown(summary))
    return summary


def _dispatch_rows(dump, calls: tuple[HopperCall, ...], softmaxes: tuple[SoftmaxCall, ...] = ()) -> list[dict]:
    """One row per dispatch of a compiled model: each Hopper function's own entry (its contraction and kernel;
    `calls` holds one call per function), each softmax kernel's, and each of IREE's dispatches with the contraction
    its configured IR computes; an elementwise dispatch of the Hopper model is a consumer split out of a product
    (`split_consumer`: the default compile fuses it)."""
    from .tune_model import _elementwise, _held, _named

    rows: list[dict] = [{"dispatch": c.function, "contraction": _named(c.gemm), "schedule": c.schedule.describe()}
                        for c in calls]
    rows += [{"dispatch": c.function, "contraction": None, "schedule": c.softmax.describe()} for c in softmaxes]
    ours = {f"module_{c.executable}" for c in calls} | {f"module_{c.executable}" for c in softmaxes}
    for path in sorted(dump.glob("configured_module_*.mlir")):
        name = path.name.removeprefix("configured_").removesuffix(".mlir")
        if name in ours:
            continue  # a kernel of ours: its row is its call's
        text = path.read_text()
        held = _held(text, name)
        row = {"dispatch": name, "contraction": _named(held[0]) if held else None,
               "schedule": "IREE default heuristic" if held else None}
        if calls and not held and _elementwise(text):
            row.update(split_consumer=True, schedule="split out (a consumer the kernel's store does not apply): "
                       "IREE default")
        rows.append(row)
    return rows


def markdown(summary: dict) -> str:
    lines = [f"# tune-model: {summary['model']} on {summary['target']} (Hopper kernels)", "",
             f"{len(summary['calls'])} contractions on the Hopper kernels, each verified in the compiled PTX; "
             f"{len(summary['left'])} left to IREE. {len(summary.get('softmaxes', []))} softmaxes on the row softmax "
             f"kernel, each verified likewise; {len(summary.get('softmax_left', []))} left to IREE. Compile-only: no "
             "times (measure with `python -m "
             "pipelines.model_runner ... hopper=tuned/gemm.vmfb default=default/gemm.vmfb`).", "",
             "| call | contraction | epilogue | kernel |", "|---|---|---|---|"]
    for call in summary["calls"]:
        epilogue = " + ".join([call["epilogue"], *call["fused_ops"]])
        lines.append(f"| {call['function']} | {call['contraction']} | {epilogue} | {call['schedule']} |")
    for call in summary.get("softmaxes", []):
        lines.append(f"| {call['function']} | softmax {call['softmax']} | | {call['kernel']} |")
    lines += ["", "IREE's own dispatches beside them: " + (", ".join(summary["iree_dispatches"]) or "none") + "."]
    if summary["split_out_consumers"]:
        lines.append("Consumers left as dispatches of their own: " + ", ".join(summary["split_out_consumers"]) + ".")
    for reason in [*summary["left"], *summary.get("softmax_left", [])]:
        lines.append(f"- left to IREE: {reason}")
    return "\n".join(lines) + "\n"
