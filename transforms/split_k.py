"""Split-K in the linalg program: the reduction cut into S slices whose partial products are computed by one
dispatch and summed by a second, each with a configuration of ours.

`build_split_module` states C = A·B as

    P[s, m, n] = Σ_{k < K/S} A[m, s·K/S + k] · B[s·K/S + k, n]     (one linalg.generic, our compilation_info)
    C[m, n]    = Σ_s P[s, m, n]                                    (a second linalg.generic, IREE's configuration)

with A and B reshaped (no copy) to expose the slice index. The partial products are computed either by a tensor
core tile (`Schedule`: IREE's TileAndFuse with an MMA intrinsic, the operands staged in shared memory) or by the
small-M streaming kernel (`Streaming`: no MMA and no shared memory; each thread owns `thread_n` adjacent columns of
B, one 16-byte load per K row, and every row of A). For M = 1 the unit dimension is left out of the partial op,
since IREE folds unit dimensions away and the rebuilt op would lose the configuration.

Numerics: each output is a sum of K products accumulated in f32 in a different order than the unsplit kernel:
S partial sums of K/S terms, then a sum of S terms. The standard bound for recursive summation of n terms is
γ_n = n·u/(1 − n·u) times the sum of magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, §4.2),
so splitting lowers the worst-case bound from γ_K to γ_{K/S + S}; the check against float64 keeps the unsplit
tolerance, which therefore also covers the split kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith, func, iree_codegen, iree_gpu, linalg, tensor

from .errors import UserError
from .problem import Gemm
from .schedule import Schedule, schedule_from_dict


class SplitError(UserError, ValueError):
    """A split-K request this problem or kernel cannot take; the message is one sentence."""


@dataclass(frozen=True)
class Streaming:
    """The small-M partial-product kernel: SIMT FMAs, no shared memory, B read once in 16-byte rows."""

    workgroup_n: int  # columns of B per workgroup
    k_step: int  # K rows each thread walks per loop iteration
    thread_n: int = 8  # adjacent columns per thread (8 × 16 bit = one 16-byte load)

    def describe(self) -> str:
        return (f"streaming (no MMA, no shared memory): {self.workgroup_n} columns per workgroup, "
                f"{self.thread_n} per thread, {self.k_step} K rows per step")


@dataclass(frozen=True)
class SplitK:
    """The reduction split `splits` ways; `partial` computes each slice's product."""

    splits: int
    partial: Schedule | Streaming

    def describe(self) -> str:
        return f"split-K {self.splits}: partial products by {self.partial.describe()}, then their sum"


def split_from_dict(fields: dict) -> SplitK:
    """Inverse of dataclasses.asdict(split), for plans stored as JSON (tuning results)."""
    partial = fields["partial"]
    kernel = Streaming(**partial) if "workgroup_n" in partial else schedule_from_dict(partial)
    return SplitK(fields["splits"], kernel)


def partial_gemm(gemm: Gemm, split: SplitK) -> Gemm:
    """The partial-product contraction as IREE sees it: a batch of `splits` GEMMs over K/S."""
    return gemm.with_(batch=split.splits, k=gemm.k // split.splits)


def check_split(gemm: Gemm, split: SplitK) -> None:
    """The problem can take this split and kernel; else one sentence saying why not."""
    s = split.splits
    if gemm.batched or gemm.epilogue.kind != "none":
        raise SplitError(f"split-K splits plain GEMMs; {gemm.shape_name} with batch or epilogue is not split.")
    if gemm.dtype not in ("f16", "bf16"):
        raise SplitError(f"split-K kernels take f16 and bf16 inputs, not {gemm.dtype}.")
    if s < 2 or gemm.k % s:
        raise SplitError(f"split-K {s} needs at least 2 slices that divide K = {gemm.k}.")
    kernel = split.partial
    if isinstance(kernel, Streaming):
        if gemm.layout == "nt":
            raise SplitError("the streaming kernel reads B in rows of adjacent columns; B stored N×K (layout nt) "
                             "has none, so it takes nn and tn.")
        if gemm.n % kernel.workgroup_n or kernel.workgroup_n % kernel.thread_n or (gemm.k // s) % kernel.k_step:
            raise SplitError(f"the streaming kernel needs N = {gemm.n} a multiple of its {kernel.workgroup_n} "
                             f"columns and K/S = {gemm.k // s} a multiple of its {kernel.k_step}-row step.")
        if kernel.thread_n * gemm.m > 128:
            raise SplitError(f"the streaming kernel keeps {kernel.thread_n}×M accumulators per thread; M = {gemm.m} "
                             "would hold more than 128.")
        return
    tile = kernel.tile
    # M and N need not be whole tiles: the last row and column of tiles are zero-padded, as `transforms.config` asks
    # of IREE's TileAndFuse for any unaligned problem. K is not padded: a slice is whole K steps of the tile.
    if (gemm.k // s) % tile.k:
        raise SplitError(f"split-K {s} with a {tile.workgroup[0]}x{tile.workgroup[1]}x{tile.k} tile needs slices of "
                         f"whole {tile.k}-row K steps: K/S = {gemm.k // s} of {gemm.shape_name} is not.")


def streaming_info(gemm: Gemm, kernel: Streaming, wave_size: int) -> ir.Attribute:
    """The partial op's compilation_info for the streaming kernel (loops (s, n, k), or (s, m, n, k) for M > 1)."""
    lead = [1] if gemm.m == 1 else [1, gemm.m]
    entries = {"workgroup": [*lead, kernel.workgroup_n, 0], "thread": [*lead, kernel.thread_n, 0],
               "reduction": [0] * len(lead) + [0, kernel.k_step]}
    i64 = ir.IntegerType.get_signless(64)
    lowering = iree_gpu.LoweringConfigAttr.get(ir.DictAttr.get({
        key: ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in values]) for key, values in entries.items()}))
    translation = iree_codegen.TranslationInfoAttr.get(
        iree_gpu.PipelineAttr.get(iree_gpu.LoweringPipeline.TileAndFuse),
        workgroup_size=[kernel.workgroup_n // kernel.thread_n, 1, 1], subgroup_size=wave_size)
    return iree_codegen.CompilationInfoAttr.get(lowering, translation)


def _map(dims: int, results: list[int]) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(ir.AffineMap.get(dims, 0, [ir.AffineDimExpr.get(d) for d in results]))


def _reshaped(value: ir.Value, shape: list[int], groups: list[list[int]]) -> ir.Value:
    """`value` viewed with `shape` (a tensor.expand_shape or collapse_shape, no copy)."""
    source = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(shape, source.element_type)
    if len(shape) < len(source.shape):
        return tensor.CollapseShapeOp(result, value, groups).result
    return tensor.ExpandShapeOp(result, value, groups, [], shape).result


def build_split_module(gemm: Gemm, split: SplitK, info: ir.Attribute) -> ir.Module:
    """`func.func @gemm` with `gemm`'s signature computing it as S partial products (the op carrying `info`) and
    their sum. Loops of the partial op: (s, m, n, k), or (s, n, k) when M = 1."""
    s, kc = split.splits, gemm.k // split.splits
    m, n = gemm.m, gemm.n
    f32 = ir.F32Type.get()
    elem = ir.Type.parse(gemm.dtype)
    unit_m = m == 1
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        @func.FuncOp.from_py_func(ir.RankedTensorType.get(list(gemm.a_shape), elem),
                                  ir.RankedTensorType.get(list(gemm.b_shape), elem), name="gemm")
        def gemm_fn(a, b):
            # Loop positions in the partial op.
            ls, lm, ln, lk = (0, None, 1, 2) if unit_m else (0, 1, 2, 3)
            dims = 3 if unit_m else 4
            if unit_m:  # A[1, K] (or A[K, 1]) as [S, K/S]
                flat = _reshaped(a, [gemm.k], [[0, 1]])
                a_view, a_map = _reshaped(flat, [s, kc], [[0, 1]]), [ls, lk]
            elif gemm.layout == "tn":  # A stored K×M
                a_view, a_map = _reshaped(a, [s, kc, m], [[0, 1], [2]]), [ls, lk, lm]
            else:
                a_view, a_map = _reshaped(a, [m, s, kc], [[0], [1, 2]]), [lm, ls, lk]
            if gemm.layout == "nt":  # B stored N×K
                b_view, b_map = _reshaped(b, [n, s, kc], [[0], [1, 2]]), [ln, ls, lk]
            else:
                b_view, b_map = _reshaped(b, [s, kc, n], [[0, 1], [2]]), [ls, lk, ln]
            p_shape = [s, n] if unit_m else [s, m, n]
            p_map = [ls, ln] if unit_m else [ls, lm, ln]
            zero = arith.ConstantOp(f32, 0.0).result
            p_init = linalg.fill(zero, outs=[tensor.EmptyOp(p_shape, f32)])
            parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
            reduction = ir.Attribute.parse("#linalg.iterator_type<reduction>")
            partial = linalg.GenericOp(
                result_tensors=[ir.RankedTensorType.get(p_shape, f32)], inputs=[a_view, b_view], outputs=[p_init],
                indexing_maps=ir.ArrayAttr.get([_map(dims, a_map), _map(dims, b_map), _map(dims, p_map)]),
                iterator_types=ir.ArrayAttr.get([parallel] * (dims - 1) + [reduction]))
            block = partial.regions[0].blocks.append(elem, elem, f32)
            with ir.InsertionPoint(block):
                x, y, acc = block.arguments
                product = arith.MulFOp(arith.ExtFOp(f32, x).result, arith.ExtFOp(f32, y).result).result
                linalg.YieldOp([arith.AddFOp(acc, product).result])
            partial.attributes["compilation_info"] = info
            c_init = linalg.fill(zero, outs=[tensor.EmptyOp([m, n], f32)])
            # The sum over slices: loops (m, n, s).
            total = linalg.GenericOp(
                result_tensors=[ir.RankedTensorType.get([m, n], f32)], inputs=[partial.result], outputs=[c_init],
                indexing_maps=ir.ArrayAttr.get([_map(3, [2, 1] if unit_m else [2, 0, 1]), _map(3, [0, 1])]),
                iterator_types=ir.ArrayAttr.get([parallel, parallel, reduction]))
            block = total.regions[0].blocks.append(f32, f32)
            with ir.InsertionPoint(block):
                value, acc = block.arguments
                linalg.YieldOp([arith.AddFOp(acc, value).result])
            return total.result

    return module
