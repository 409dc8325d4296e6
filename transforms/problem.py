"""GEMM problems and the linalg IR that states them.

A `Gemm` is plain data: sizes, element type, operand layout, optional batch and epilogue. `build_module` turns it
into a `func.func @gemm` made of `linalg.fill` + `linalg.matmul` (or `linalg.batch_matmul`) + at most one
elementwise `linalg.generic` epilogue, which IREE fuses into the GEMM dispatch. `gemms_from_mlir` goes the other
way for user files: it reads every linalg contraction of a module back into `Gemm`s so that schedules can be
chosen and checked for them. IR is built with the MLIR Python bindings inside the caller's `ir.Context`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith, flow, func, linalg, math as math_d, tensor, util

from .errors import UserError

# Element types of A and B, spelled as MLIR spells them. Accumulation is always f32.
DTYPES = ("f16", "bf16", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3FN", "f8E5M2")
# Short names accepted on the command line.
DTYPE_ALIASES = {
    "f16": "f16", "bf16": "bf16",
    "f8e4m3fnuz": "f8E4M3FNUZ", "f8e5m2fnuz": "f8E5M2FNUZ", "f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2",
}
ACC_DTYPE = "f32"
# Operand layouts: the first letter says whether A is stored M×K (n) or K×M (t), the second whether B is stored
# K×N (n) or N×K (t, as LLM weights are).
LAYOUTS = ("nn", "nt", "tn")
EPILOGUES = ("none", "alpha-beta", "bias-relu", "bias-gelu", "truncf")
# The epilogues that read no extra input: the product alone, or rounded to the input type
PLAIN_EPILOGUES = ("none", "truncf")
# A GEMM read from a user file names its elementwise consumer by the op (e.g. "linalg.generic", "arith.truncf"):
# IREE fuses it into the contraction's dispatch, but what it computes is the file's business.
ELEMENTWISE_DIALECTS = ("linalg.", "arith.", "math.")
# The largest device memory among the targets: MI355X (gfx950) carries 288 GB of HBM3E (AMD Instinct MI355X data
# sheet). A problem whose A, B and f32 result do not fit in it cannot run on any of them.
MAX_PROBLEM_BYTES = 288 * 10**9


class ProblemError(UserError, ValueError):
    """A GEMM problem or input file that cannot be expressed; the message is one sentence for the user."""


@dataclass(frozen=True)
class Epilogue:
    """What happens to the f32 accumulator before it is stored.

    alpha-beta: D = alpha·AB + beta·C with C an extra f32 input; bias-relu / bias-gelu: D = act(AB + bias[n]);
    truncf: D = AB rounded to the input type (round to nearest even), as a library GEMM writes it by default.
    """

    kind: str = "none"
    alpha: float = 1.0
    beta: float = 1.0

    def __post_init__(self):
        if self.kind not in EPILOGUES and not self.kind.startswith(ELEMENTWISE_DIALECTS):
            raise ProblemError(f"unknown epilogue '{self.kind}'; choose one of {', '.join(EPILOGUES)}.")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ProblemError(f"epilogue {name} {value} must be a finite number.")


def describe_epilogue(kind: str) -> str:
    """How a report names an epilogue: a built one by its kind, one read from a file by its op."""
    return kind if kind in EPILOGUES else f"fused elementwise ({kind})"


@dataclass(frozen=True)
class Gemm:
    """D[b?, m, n] (f32) = epilogue(A · B) for static sizes."""

    m: int
    n: int
    k: int
    dtype: str = "bf16"
    layout: str = "nn"
    batch: int | None = None
    epilogue: Epilogue = Epilogue()

    def __post_init__(self):
        for name in ("m", "n", "k") + (("batch",) if self.batch is not None else ()):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ProblemError(f"size {name.upper()}={value} must be a positive integer.")
        if self.dtype not in DTYPES:
            raise ProblemError(f"unknown element type '{self.dtype}'; choose one of {', '.join(DTYPES)}.")
        if self.layout not in LAYOUTS:
            raise ProblemError(f"unknown layout '{self.layout}'; choose one of {', '.join(LAYOUTS)}.")
        if self.footprint_bytes > MAX_PROBLEM_BYTES:
            raise ProblemError(f"gemm {self.shape_name} {self.dtype} needs {self.footprint_bytes:.3g} B for A, B and "
                               f"the f32 result; no target has more than {MAX_PROBLEM_BYTES:.3g} B of device memory.")

    @property
    def footprint_bytes(self) -> int:
        """Bytes of A, B and the f32 result (and C for alpha-beta), the least the device must hold."""
        lead = self.batch or 1
        inputs = lead * (self.m + self.n) * self.k * (1 if self.dtype.startswith("f8") else 2)
        return inputs + lead * self.m * self.n * 4 * (2 if self.epilogue.kind == "alpha-beta" else 1)

    @property
    def out_dtype(self) -> str:
        """The element type D is stored in: f32, or the input type for the truncf epilogue."""
        return self.dtype if self.epilogue.kind == "truncf" else ACC_DTYPE

    @property
    def batched(self) -> bool:
        return self.batch is not None

    @property
    def flops(self) -> int:
        return 2 * (self.batch or 1) * self.m * self.n * self.k

    @property
    def shape_name(self) -> str:
        mnk = f"{self.m}x{self.n}x{self.k}"
        return f"{self.batch}x{mnk}" if self.batched else mnk

    @property
    def loop_sizes(self) -> tuple[int, ...]:
        """Sizes of the contraction's loops in iteration order: (batch,) m, n, k."""
        return self._lead() + (self.m, self.n, self.k)

    @property
    def a_shape(self) -> tuple[int, ...]:
        return self._lead() + ((self.k, self.m) if self.layout == "tn" else (self.m, self.k))

    @property
    def b_shape(self) -> tuple[int, ...]:
        return self._lead() + ((self.n, self.k) if self.layout == "nt" else (self.k, self.n))

    @property
    def c_shape(self) -> tuple[int, ...]:
        return self._lead() + (self.m, self.n)

    def _lead(self) -> tuple[int, ...]:
        return (self.batch,) if self.batch is not None and self.batched else ()

    def operand_dims(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Loop positions read by A, B and the result, i.e. the indexing maps as tuples of dimension indices."""
        lead = (0,) if self.batched else ()
        m, n, k = (d + len(lead) for d in (0, 1, 2))
        a = lead + ((k, m) if self.layout == "tn" else (m, k))
        b = lead + ((n, k) if self.layout == "nt" else (k, n))
        return a, b, lead + (m, n)

    def indexing_maps(self) -> list[ir.AffineMap]:
        rank = len(self.loop_sizes)
        return [ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in dims]) for dims in self.operand_dims()]

    def with_(self, **changes) -> Gemm:
        return dataclasses.replace(self, **changes)


def parse_shape(text: str) -> tuple[int | None, int, int, int]:
    """'MxNxK' or 'BxMxNxK' (batch matmul) as (batch or None, M, N, K)."""
    try:
        dims = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ProblemError(f"shape '{text}' must be integers of the form NxNxN or NxNxNxN.") from None
    if len(dims) not in (3, 4):
        raise ProblemError(f"shape '{text}' must have the form NxNxN or NxNxNxN.")
    if len(dims) == 4:
        return dims[0], dims[1], dims[2], dims[3]
    return None, dims[0], dims[1], dims[2]


def input_shapes(gemm: Gemm) -> list[tuple[int, ...]]:
    """Shapes of the arguments of `@gemm`, in order: A, B, then C (alpha-beta) or bias (bias-*)."""
    shapes = [gemm.a_shape, gemm.b_shape]
    if gemm.epilogue.kind == "alpha-beta":
        shapes.append(gemm.c_shape)
    elif gemm.epilogue.kind not in PLAIN_EPILOGUES:
        shapes.append((gemm.n,))
    return shapes


def build_module(gemm: Gemm, compilation_info: ir.Attribute | None = None, kernel: Gemm | None = None,
                 padded: Gemm | None = None) -> ir.Module:
    """`func.func @gemm` computing `gemm`; `compilation_info` (if given) is attached to the contraction. The
    function's signature is always `gemm`'s.

    With `kernel` (the same sizes, another 16-bit input type and/or layout), the contraction is `kernel`'s: A and B
    are reinterpreted as `kernel.dtype` (`flow.tensor.bitcast`, no copy) and transposed into `kernel.layout`
    (`linalg.transpose`, kept out of the contraction's dispatch by `util.optimization_barrier`, so IREE cannot fold
    it back into the contraction's indexing maps).

    With `padded` (the same problem with M, N, K rounded up), A and B are then zero-padded to its operand shapes,
    the contraction computes the padded product and the result is its leading M×N slice: the zeros add nothing to
    the sums, and the contraction that reaches codegen has whole-tile sizes."""
    if padded is not None and (gemm.batched or gemm.epilogue.kind != "none" or padded.with_(
            m=gemm.m, n=gemm.n, k=gemm.k) != gemm or min(padded.m - gemm.m, padded.n - gemm.n, padded.k - gemm.k) < 0):
        raise ProblemError(f"{gemm.shape_name} can only be padded to a larger plain GEMM of the same type and "
                           f"layout, not to {padded.shape_name}.")
    kernel = kernel or gemm
    computed = kernel.with_(m=padded.m, n=padded.n, k=padded.k) if padded is not None else kernel
    acc = ir.F32Type.get()
    arg_types = [ir.RankedTensorType.get(shape, ir.Type.parse(gemm.dtype)) for shape in (gemm.a_shape, gemm.b_shape)]
    arg_types += [ir.RankedTensorType.get(shape, acc) for shape in input_shapes(gemm)[2:]]
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):

        @func.FuncOp.from_py_func(*arg_types, name="gemm")
        def gemm_fn(*args):
            flips = ((gemm.layout == "tn") != (kernel.layout == "tn"), (gemm.layout == "nt") != (kernel.layout == "nt"))
            operands = [_pad(_as_operand(arg, shape, kernel.dtype, flip), padded_shape)
                        for arg, shape, flip, padded_shape in zip(args[:2], (kernel.a_shape, kernel.b_shape), flips,
                                                                  (computed.a_shape, computed.b_shape))]
            zero = arith.ConstantOp(acc, 0.0)
            init = linalg.fill(zero, outs=[tensor.EmptyOp(list(computed.c_shape), acc)])
            contract = linalg.batch_matmul if gemm.batched else linalg.matmul
            product = contract(*operands, outs=[init], indexing_maps=kernel.indexing_maps())
            if compilation_info is not None:
                product.owner.attributes["compilation_info"] = compilation_info
            if computed.c_shape != gemm.c_shape:
                return tensor.extract_slice(ir.RankedTensorType.get(list(gemm.c_shape), acc), product, [], [], [],
                                            [0, 0], list(gemm.c_shape), [1, 1])
            if gemm.epilogue.kind == "none":
                return product
            if gemm.epilogue.kind == "truncf":
                return _truncated(gemm, product)
            return _epilogue(gemm, product, args[2])

    return module


def _as_operand(value: ir.Value, shape: tuple[int, ...], dtype: str, transpose: bool) -> ir.Value:
    """`value` as a tensor of `shape` and `dtype`: bitcast if the element type differs, and its last two
    dimensions transposed behind an optimization barrier if `transpose`."""
    elem = ir.Type.parse(dtype)
    source = ir.RankedTensorType(value.type)
    if source.element_type != elem:
        value = flow.TensorBitCastOp(ir.RankedTensorType.get(source.shape, elem), value, [], []).result
    if transpose:
        rank = len(shape)
        transposed = linalg.transpose(value, outs=[tensor.EmptyOp(list(shape), elem)],
                                      permutation=[*range(rank - 2), rank - 1, rank - 2])
        result = transposed.results[0]
        value = util.OptimizationBarrierOp([result.type], [result]).results[0]
    return value


def _pad(operand: ir.Value, shape: tuple[int, ...]) -> ir.Value:
    """`operand` zero-padded at the high end of each dimension to `shape`."""
    source = ir.RankedTensorType(operand.type)
    high = [size - have for size, have in zip(shape, source.shape)]
    if not any(high):
        return operand
    pad = tensor.PadOp(ir.RankedTensorType.get(list(shape), source.element_type), operand, [], [],
                       [0] * len(shape), high)
    block = pad.region.blocks.append(*([ir.IndexType.get()] * len(shape)))
    with ir.InsertionPoint(block):
        tensor.YieldOp(arith.ConstantOp(source.element_type, 0.0).result)
    return pad.result


def _truncated(gemm: Gemm, product: ir.Value) -> ir.Value:
    """The accumulator rounded to the input type in one elementwise linalg.generic (IREE fuses it into the GEMM
    dispatch)."""
    f32, elem = ir.F32Type.get(), ir.Type.parse(gemm.out_dtype)
    rank = len(gemm.c_shape)
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    out = tensor.EmptyOp(list(gemm.c_shape), elem)
    op = linalg.GenericOp(
        result_tensors=[out.result.type], inputs=[product], outputs=[out.result],
        indexing_maps=ir.ArrayAttr.get([identity, identity]), iterator_types=ir.ArrayAttr.get([parallel] * rank))
    block = op.regions[0].blocks.append(f32, elem)
    with ir.InsertionPoint(block):
        linalg.YieldOp([arith.TruncFOp(elem, block.arguments[0]).result])
    return op.result


def _epilogue(gemm: Gemm, product: ir.Value, extra: ir.Value) -> ir.Value:
    """One elementwise linalg.generic over the accumulator, so IREE fuses it into the GEMM dispatch."""
    f32 = ir.F32Type.get()
    rank = len(gemm.c_shape)
    identity = ir.AffineMap.get_identity(rank)
    extra_map = identity if gemm.epilogue.kind == "alpha-beta" else ir.AffineMap.get(
        rank, 0, [ir.AffineDimExpr.get(rank - 1)])
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    out = tensor.EmptyOp(list(gemm.c_shape), f32)
    op = linalg.GenericOp(
        result_tensors=[product.type], inputs=[product, extra], outputs=[out.result],
        indexing_maps=ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in (identity, extra_map, identity)]),
        iterator_types=ir.ArrayAttr.get([parallel] * rank))
    block = op.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(block):
        acc, other = block.arguments[0], block.arguments[1]
        const = lambda value: arith.ConstantOp(f32, float(value)).result  # noqa: E731
        if gemm.epilogue.kind == "alpha-beta":
            scaled = arith.MulFOp(const(gemm.epilogue.alpha), acc).result
            result = arith.AddFOp(scaled, arith.MulFOp(const(gemm.epilogue.beta), other).result).result
        else:
            x = arith.AddFOp(acc, other).result
            if gemm.epilogue.kind == "bias-relu":
                result = arith.MaximumFOp(x, const(0.0)).result
            else:  # bias-gelu, the erf form: x/2 · (1 + erf(x/√2))
                erf = math_d.ErfOp(arith.MulFOp(x, const(1 / math.sqrt(2))).result).result
                result = arith.MulFOp(arith.MulFOp(x, const(0.5)).result,
                                      arith.AddFOp(erf, const(1.0)).result).result
        linalg.YieldOp([result])
    return op.result


# --- Reading user files ------------------------------------------------------------------------------------


def parse_module(text: str, source: str) -> ir.Module:
    """Parse `text` in the current context, turning MLIR diagnostics into one sentence."""
    with ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as err:
            first = err.error_diagnostics[0].message if err.error_diagnostics else str(err)
            raise ProblemError(f"{source} is not valid MLIR: {first.splitlines()[0]}.") from None
    return module


def contraction_ops(module: ir.Module) -> list[ir.Operation]:
    found = []

    def visit(op):
        if op.name.startswith("linalg.") and linalg.isa_contraction_op(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def gemms_from_mlir(module: ir.Module, source: str, skipped: list[str] | None = None
                    ) -> list[tuple[ir.Operation, Gemm]]:
    """Every linalg contraction of `module` as a `Gemm` (its epilogue the elementwise op that consumes its
    result, if one does), or a ProblemError naming what is not supported. With `skipped`, a contraction with
    dynamic sizes is described there (op and types) instead of refused."""
    ops = contraction_ops(module)
    if not ops:
        raise ProblemError(f"{source} holds no linalg contraction (linalg.matmul, batch_matmul or a contraction "
                           "generic).")
    found = []
    for op in ops:
        types = [v.type for v in list(op.operands)[:3]]
        if skipped is not None and all(isinstance(t, ir.RankedTensorType) for t in types) and not all(
                ir.RankedTensorType(t).has_static_shape for t in types):
            skipped.append(f"{op.name} on {', '.join(str(t) for t in types)}: dynamic sizes")
            continue
        found.append((op, _gemm_of(op, source).with_(epilogue=Epilogue(_consumer(op)))))
    return found


def isolate_contractions(module: ir.Module, keep: "set[Gemm]", source: str) -> int:
    """Wrap each contraction op of `module` whose GEMM (epilogue set aside) is in `keep` in a `flow.dispatch.region`
    of its own, so that IREE dispatches it alone: the consumer it would fuse into the dispatch (an importer's truncf,
    a Gelu) then gets a dispatch of its own, and the contraction's dispatch stores its f32 result as it is. IREE
    clones the fill of the accumulator into the region. Returns how many were wrapped. A region, unlike a
    util.optimization_barrier, keeps the program one stream of work (barriers left it split into separately
    awaited parts, 2.3x slower end to end on an H100)."""
    wrapped = 0
    for op in contraction_ops(module):
        if _gemm_of(op, source).with_(epilogue=Epilogue()) not in keep:
            continue
        op = op.operation
        if op.parent is not None and op.parent.name == "flow.dispatch.region":
            continue
        result = op.results[0]
        region = flow.DispatchRegionOp([result.type], [], [], ip=ir.InsertionPoint(op))
        body = region.regions[0].blocks.append()
        result.replace_all_uses_with(region.results[0])
        op.detach_from_parent()
        ir.InsertionPoint(body).insert(op)
        with ir.InsertionPoint(body):
            flow.ReturnOp([result])
        wrapped += 1
    return wrapped


# linalg's named elementwise ops (a generic qualifies when all its loops are parallel).
_LINALG_ELEMENTWISE = {f"linalg.{n}" for n in (
    "add", "sub", "mul", "div", "div_unsigned", "max", "min", "powf", "exp", "log", "abs", "ceil", "floor", "negf",
    "reciprocal", "round", "sqrt", "rsqrt", "square", "tanh", "erf", "select", "elementwise", "map")}


def _consumer(op: ir.Operation) -> str:
    """The name of the elementwise op that consumes the contraction's result, or "none": a linalg.generic whose
    loops are all parallel, a named linalg elementwise op, or an arith/math op on tensors."""
    for use in op.results[0].uses:
        user = use.owner
        name = user.name
        if name == "linalg.generic":
            iterators = [str(t) for t in ir.ArrayAttr(user.attributes["iterator_types"])]
            elementwise = all("parallel" in t for t in iterators)
        elif name.startswith(("arith.", "math.")):
            elementwise = all(isinstance(r.type, ir.RankedTensorType) for r in user.results)
        else:
            elementwise = name in _LINALG_ELEMENTWISE
        if elementwise:
            return name
    return "none"


def _gemm_of(op: ir.Operation, source: str) -> Gemm:
    a, b, c = (v.type for v in list(op.operands)[:3])
    if not all(isinstance(t, ir.RankedTensorType) for t in (a, b, c)):
        raise ProblemError(f"{op.name} in {source} works on {', '.join(str(t) for t in (a, b, c))}; only ranked "
                           "tensors are supported (linalg before bufferization).")
    types = [ir.RankedTensorType(t) for t in (a, b, c)]
    if any(not t.has_static_shape for t in types):
        raise ProblemError(f"{op.name} in {source} has dynamic sizes; only static shapes are supported.")
    if str(types[0].element_type) != str(types[1].element_type):
        raise ProblemError(f"{op.name} in {source} mixes element types {types[0].element_type} and "
                           f"{types[1].element_type}; A and B must match.")
    if str(types[2].element_type) != ACC_DTYPE:
        raise ProblemError(f"{op.name} in {source} accumulates in {types[2].element_type}; only f32 is supported.")
    if str(types[0].element_type) not in DTYPES:
        raise ProblemError(f"{op.name} in {source} multiplies {types[0].element_type} inputs; the project schedules "
                           f"{', '.join(DTYPES)}.")
    maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]  # named ops may not spell them
    dims = linalg.infer_contraction_dimensions(op)
    if dims is None or len(dims.m) != 1 or len(dims.n) != 1 or len(dims.k) != 1 or len(dims.batch) > 1:
        raise ProblemError(f"{op.name} in {source} is not a single-M, single-N, single-K contraction.")
    sizes = _loop_sizes(maps, types)
    batch = sizes[dims.batch[0]] if dims.batch else None
    base = dict(m=sizes[dims.m[0]], n=sizes[dims.n[0]], k=sizes[dims.k[0]], batch=batch,
                dtype=str(types[0].element_type))
    for layout in LAYOUTS:
        candidate = Gemm(layout=layout, **base)
        if [str(m) for m in candidate.indexing_maps()] == [str(m) for m in maps]:
            return candidate
    raise ProblemError(f"{op.name} in {source} has indexing maps {', '.join(str(m) for m in maps)}, which are "
                       "not an NN, NT or TN (batch) matmul.")


def _loop_sizes(maps: list[ir.AffineMap], types: list[ir.RankedTensorType]) -> list[int]:
    sizes = [0] * maps[0].n_dims
    for amap, ttype in zip(maps, types):
        for expr, size in zip(amap.results, ttype.shape):
            sizes[ir.AffineDimExpr(expr).position] = size
    return sizes
