"""The gfx1151 (RDNA3.5, wave32, WMMA) double-buffered GEMM kernels as MLIR ukernels, built with the bindings.

The body follows `warpgroups.DoubleBuffered(register_prefetch=True)`, which `hazards.check` proves race-free:
8 waves of 32 on a 128×64 block tile (a 4×2 wave grid, 2×2 WMMA tiles of 16×16 per wave), two padded LDS
stages, one barrier per K step. gfx1151 has no direct-to-LDS loads, so the next K tile is fetched into
registers while the current stage is read and multiplied, then stored into the other stage before the barrier.
`fetch_slices` > 1 is the interleave variant: the fetch is split into pieces issued between groups of WMMAs,
and `rocdl.sched.group.barrier` asks LLVM to keep that order (VMEM read, then WMMAs, per piece).

Fragments follow IREE's WMMAR3 layout (row-major accumulator): a lane holds one row of A (lane % 16) and one
column of B over all 16 K values, lanes 16-31 repeating lanes 0-15, and accumulator element e of lane l is row
2e + l / 16, column l % 16. B sits in LDS N-major (K contiguous) in both layouts: in NN each thread writes its
16 bytes along N down an LDS column. Not yet run anywhere: numerics await the emulator.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import arith, memref, rocdl, scf, tensor, util, vector

from .schedule import LDS_ACCESS_BYTES, element_bytes
from .ukernel import KernelBuilder, inner_tiled
from .warpgroups import DoubleBuffered

TILE_M, TILE_N, WAVE_SIZE = 128, 64, 32
WAVES_M, WAVES_N = 4, 2
FRAGMENT = 16  # WMMA M = N = K
LDS_PAD = 8  # elements per LDS row: a 16-byte shift per row, so the 16 rows of a fragment read spread over banks


def wmma_schedule(dtype: str, fetch_slices: int = 1) -> DoubleBuffered:
    """The shipped gfx1151 kernels: 128x64x32 (seed 002's fastest tile), 8 waves, register prefetch."""
    return DoubleBuffered(tile=(TILE_M, TILE_N, 32), element_bytes=element_bytes(dtype), wave_size=WAVE_SIZE,
                          waves=WAVES_M * WAVES_N, register_prefetch=True, fetch_slices=fetch_slices,
                          lds_pad=LDS_PAD, mma_k=FRAGMENT)


def build_double_buffered(schedule: DoubleBuffered, dtype: str, mma: str, layout: str, name: str) -> None:
    """Emit `util.func private @<name>` at the current insertion point."""
    m_tile, n_tile, k_tile = schedule.tile
    slices = k_tile // FRAGMENT
    row = k_tile + schedule.lds_pad
    copy = LDS_ACCESS_BYTES // element_bytes(dtype)  # elements per 16-byte load / store
    threads = schedule.waves * WAVE_SIZE
    element, f32 = ir.Type.parse(dtype), ir.F32Type.get()
    dynamic = ir.ShapedType.get_dynamic_size()
    lhs_type = ir.RankedTensorType.get([m_tile, dynamic], element)
    rhs_type = (ir.RankedTensorType.get([n_tile, dynamic], element) if layout == "nt" else
                ir.RankedTensorType.get([dynamic, n_tile], element))
    result = ir.RankedTensorType.get([m_tile, n_tile], f32)
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    # LDS as (stage, 16-row tile, row in tile, padded K): a fragment read takes one row of every tile it needs.
    lds_type = {"a": ir.MemRefType.get([2, m_tile // FRAGMENT, FRAGMENT, row], element, memory_space=workgroup),
                "b": ir.MemRefType.get([2, n_tile // FRAGMENT, FRAGMENT, row], element, memory_space=workgroup)}
    tiles_per_wave = (m_tile // WAVES_M // FRAGMENT, n_tile // WAVES_N // FRAGMENT)  # (2, 2)
    acc_type = ir.VectorType.get([*tiles_per_wave, 8], f32)
    # The output tile as (wave row, M tile, acc element, lane half, wave column, N tile, column).
    out_shape = [WAVES_M, tiles_per_wave[0], 8, 2, WAVES_N, tiles_per_wave[1], FRAGMENT]

    fn = util.FuncOp(name, ir.TypeAttr.get(ir.FunctionType.get([lhs_type, rhs_type, result], [result])),
                     sym_visibility="private")
    entry = fn.regions[0].blocks.append(lhs_type, rhs_type, result)
    b = KernelBuilder(element, entry)
    with ir.InsertionPoint(entry):
        lhs, rhs = entry.arguments[0], entry.arguments[1]
        zero = arith.ConstantOp(element, 0.0).result
        k_size = tensor.DimOp(lhs, b.c(1)).result
        lds = {key: memref.AllocOp(t, [], []).result for key, t in lds_type.items()}
        forall = scf.ForallOp([0], [threads], [1], shared_outs=[tensor.EmptyOp(out_shape, f32).result],
                              mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
        with ir.InsertionPoint(forall.body):
            tid, out = forall.body.arguments[0], forall.body.arguments[1]
            wave_m, wave_n, half, lane_row = b.delinearize(tid, [WAVES_M, WAVES_N, 2, FRAGMENT])

            # Copies: one 16-byte vector per thread and pass; K-contiguous rows of A (and of B in NT).
            col_groups = k_tile // copy
            rows_per_pass = threads // col_groups
            copy_row, col_group = b.delinearize(tid, [rows_per_pass, col_groups])
            col = b.mul(col_group, copy)
            a_rows = [b.add(copy_row, b.c(p * rows_per_pass)) for p in range(m_tile // rows_per_pass)]
            b_rows = [b.add(copy_row, b.c(p * rows_per_pass)) for p in range(n_tile // rows_per_pass)]
            # B in NN: 16 bytes along N of one K row per thread.
            n_groups = n_tile // copy
            k_row, n_group = b.delinearize(tid, [threads // n_groups, n_groups])
            n_col = b.mul(n_group, copy)

            def load(source: ir.Value, offsets: list[ir.Value]) -> ir.Value:
                piece = tensor.ExtractSliceOp(ir.RankedTensorType.get([1, copy], element), source, offsets, [], [],
                                              [dynamic] * 2, [1, copy], [1, 1]).result
                return b.read(piece, [b.c(0), b.c(0)], [1, copy], zero)

            def fetches(k_base: ir.Value) -> list[tuple[str, list[ir.Value], ir.Value | None]]:
                """The global loads of one K tile, in issue order: (operand, LDS position, loaded vector)."""
                k_col = b.add(k_base, col)
                plan = [("a", r, lambda r=r: load(lhs, [r, k_col])) for r in a_rows]
                if layout == "nt":
                    plan += [("b", r, lambda r=r: load(rhs, [r, k_col])) for r in b_rows]
                else:
                    plan += [("b", None, lambda: load(rhs, [b.add(k_base, k_row), n_col]))]
                return plan

            def store(stage: ir.Value, fetched: list[tuple[str, ir.Value | None, ir.Value]]) -> None:
                for operand, r, value in fetched:
                    if r is not None:
                        tile, in_tile = _split_row(b, r)
                        b.write(value, lds[operand], [stage, tile, in_tile, col])
                    else:  # NN B: the K row's N values go down the LDS column (one element per N row)
                        tile, in_tile = _split_row(b, n_col)
                        b.write(value, lds["b"], [stage, tile, in_tile, k_row], transposed=True)

            def fragments(stage: ir.Value) -> tuple[ir.Value, ir.Value]:
                """This lane's A and B fragments of the whole K tile: (tiles, K slices, 16) each."""
                def read(operand: str, first_tile: ir.Value, tiles: int) -> ir.Value:
                    raw = b.read(lds[operand], [stage, first_tile, lane_row, b.c(0)], [tiles, 1, k_tile], zero)
                    return vector.ShapeCastOp(ir.VectorType.get([tiles, slices, FRAGMENT], element), raw).result
                return (read("a", b.mul(wave_m, tiles_per_wave[0]), tiles_per_wave[0]),
                        read("b", b.mul(wave_n, tiles_per_wave[1]), tiles_per_wave[1]))

            def multiply(acc: ir.Value, a_frag: ir.Value, b_frag: ir.Value, plan) -> ir.Value:
                """All WMMAs of the K tile; with fetches to spread, one K slice per piece, each piece's loads
                issued before its WMMAs."""
                pieces = _pieces(plan, slices if schedule.fetch_slices > 1 else 1)
                issued = []
                for s, piece in enumerate(pieces):
                    issued += [(operand, r, make()) for operand, r, make in piece]
                    if schedule.fetch_slices > 1:
                        rocdl.SchedGroupBarrier(ir.Attribute.parse("#rocdl.sched_group_mask<vmem_read>"), len(piece), 0)
                    span = slices // len(pieces)
                    a_part = _slice(a_frag, s * span, span)
                    b_part = _slice(b_frag, s * span, span)
                    acc = inner_tiled(mma, acc, (a_part, b_part), acc_type, col_major=False)
                    if schedule.fetch_slices > 1:
                        rocdl.SchedGroupBarrier(ir.Attribute.parse("#rocdl.sched_group_mask<mfma_wmma>"),
                                                span * tiles_per_wave[0] * tiles_per_wave[1], 0)
                return acc, issued

            # Prologue: K tile 0 into stage 0.
            store(b.c(0), [(o, r, make()) for o, r, make in fetches(b.c(0))])
            b.barrier()
            zeros = arith.ConstantOp(acc_type, ir.DenseElementsAttr.get_splat(
                acc_type, ir.FloatAttr.get(f32, 0.0))).result
            loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [zeros])
            with ir.InsertionPoint(loop.body):
                step = arith.DivUIOp(loop.induction_variable, b.c(k_tile)).result
                upcoming = arith.RemUIOp(step, b.c(2)).result  # the stage K tile `step` goes to
                current = arith.SubIOp(b.c(1), upcoming).result
                plan = fetches(loop.induction_variable)
                if schedule.fetch_slices == 1:
                    # the whole next tile goes out first, then the LDS reads; the fences keep LLVM from sinking
                    # the loads to their stores or hoisting the stores above the WMMAs
                    fetched = [(o, r, make()) for o, r, make in plan]
                    a_frag, b_frag = fragments(current)
                    _fence()
                    acc, _ = multiply(loop.inner_iter_args[0], a_frag, b_frag, [])
                else:
                    a_frag, b_frag = fragments(current)
                    acc, fetched = multiply(loop.inner_iter_args[0], a_frag, b_frag, plan)
                _fence()
                store(upcoming, fetched)
                b.barrier()
                scf.YieldOp([acc])
            last_step = arith.DivUIOp(k_size, b.c(k_tile)).result
            last_stage = arith.RemUIOp(arith.AddIOp(last_step, b.c(1)).result, b.c(2)).result
            a_frag, b_frag = fragments(last_stage)
            final, _ = multiply(loop.results[0], a_frag, b_frag, [])
            # (M tile, N tile, e) -> (M tile, e, N tile), placed at (wave_m, :, :, half, wave_n, :, lane_row).
            rows_first = vector.TransposeOp(ir.VectorType.get([tiles_per_wave[0], 8, tiles_per_wave[1]], f32),
                                            final, [0, 2, 1]).result
            piece_shape = [1, tiles_per_wave[0], 8, 1, 1, tiles_per_wave[1], 1]
            shaped = vector.ShapeCastOp(ir.VectorType.get(piece_shape, f32), rows_first).result
            empty = tensor.EmptyOp(piece_shape, f32).result
            written = vector.TransferWriteOp(ir.RankedTensorType.get(piece_shape, f32), shaped, empty,
                                             [b.c(0)] * 7, ir.AffineMap.get_identity(7), [True] * 7).result
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.regions[0].blocks[0]):
                zero_index = b.c(0)
                tensor.ParallelInsertSliceOp(written, out, [wave_m, zero_index, zero_index, half, wave_n,
                                                            zero_index, lane_row], [], [], [dynamic] * 7,
                                             piece_shape, [1] * 7)
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], _output_groups()).result])


def _fence() -> None:
    """Nothing moves across this point when LLVM schedules the loop body."""
    rocdl.SchedBarrier(ir.Attribute.parse("#rocdl.sched_group_mask<none>"))


def _split_row(b: KernelBuilder, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    tile, in_tile = b.delinearize(r, [TILE_M // FRAGMENT, FRAGMENT])
    return tile, in_tile


def _pieces(plan: list, count: int) -> list[list]:
    """`plan` in `count` consecutive pieces (the last ones may be empty when the plan is short)."""
    size = -(-len(plan) // count) if plan else 0
    return [plan[i * size:(i + 1) * size] for i in range(count)]


def _slice(fragment: ir.Value, first: int, count: int) -> ir.Value:
    shape = ir.VectorType(fragment.type).shape
    if count == shape[1]:
        return fragment
    return vector.ExtractStridedSliceOp(ir.VectorType.get([shape[0], count, shape[2]],
                                                          ir.VectorType(fragment.type).element_type),
                                        fragment, [0, first, 0], [shape[0], count, shape[2]], [1, 1, 1]).result


def _output_groups() -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in dims])
                             for dims in ([0, 1, 2, 3], [4, 5, 6])])
