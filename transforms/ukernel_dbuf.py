"""Double-buffered GEMM kernels with register prefetch as MLIR ukernels, for WMMA (gfx1151) and MFMA (gfx942,
gfx950) targets, built with the bindings.

The body follows `warpgroups.DoubleBuffered(register_prefetch=True)`, which `hazards.check` proves race-free:
one group of waves on a block tile, two padded LDS stages, one barrier per K step. The next K tile is fetched
into registers while the current stage is read and multiplied, then stored into the other stage before the
barrier (these kernels do not use direct-to-LDS loads, which gfx1151 lacks). Shipped shapes (`dbuf_schedule`):

- gfx1151: 128×64×32 on 8 waves of 32 in a 4×2 grid, 2×2 WMMA tiles of 16×16 per wave (seed 002's fastest);
- gfx942 / gfx950: 128×128 with 64 bytes of K on 4 waves of 64 in a 2×2 grid, 4×4 MFMA tiles of 16×16 per wave.

`fetch_slices` = 1 issues the whole next tile's loads first, then the LDS reads, the MMAs and the stores, with
`rocdl.sched.barrier` fences so LLVM keeps that order; `fetch_slices` > 1 (the interleave variants) spreads the
loads over that many groups of MMAs and pins the pattern with `rocdl.sched.group.barrier`.

Fragments follow IREE's layouts. WMMAR3 (row-major accumulator): a lane holds one row of A (lane % 16) and one
column of B over all 16 K values, lanes 16-31 repeating lanes 0-15; accumulator element e of lane l is row
2e + l / 16, column l % 16. MFMA 16x16xK with `col_major`: lane l holds K values (l / 16)·K/4 … of row l % 16 of
A and of column l % 16 of B; accumulator element e is row l % 16, column 4(l / 16) + e. B sits in LDS N-major
(K contiguous) in both layouts: in NN each thread writes its 16 bytes along N down an LDS column. Not yet run
anywhere: numerics await the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith, memref, rocdl, scf, tensor, util, vector

from .schedule import LDS_ACCESS_BYTES, element_bytes, mma_shape
from .ukernel import KernelBuilder, inner_tiled
from .warpgroups import DoubleBuffered

FRAGMENT = 16  # M = N of every intrinsic used here
LDS_PAD = 8  # elements per LDS row: shifts each row's banks so the 16 rows of a fragment read spread out
CHUNK_BYTES = 16  # the unit an XOR swizzle permutes: one 16-byte global load / LDS store


@dataclass(frozen=True)
class XorSwizzle:
    """The 16-byte chunks of an LDS row permuted by XOR with a mask that changes every `rows_per_line` rows.

    Derived from the access geometry: a row holds `chunks` chunks, and `rows_per_line` rows fill one line of the
    LDS banks (banks × 4 bytes), so rows a whole line apart start on the same bank. A fragment read takes the
    same K chunk of 16 consecutive rows; the mask moves the rows of each line-sized group to different chunks.
    XOR is its own inverse: the reader applies the same function to find what the writer put where."""

    chunk_elements: int
    chunks: int
    rows_per_line: int

    def mask(self, row: int) -> int:
        return (row // self.rows_per_line) % self.chunks

    def column(self, row: int, k: int) -> int:
        """The physical column of logical element `k` of `row`."""
        return ((k // self.chunk_elements) ^ self.mask(row)) * self.chunk_elements + k % self.chunk_elements

    def inverse(self, row: int, column: int) -> int:
        return ((column // self.chunk_elements) ^ self.mask(row)) * self.chunk_elements + column % self.chunk_elements

    def check(self, rows: int) -> None:
        """Every row's columns are permuted, and the inverse undoes them; raises ValueError otherwise."""
        width = self.chunks * self.chunk_elements
        for row in range(rows):
            placed = [self.column(row, k) for k in range(width)]
            if sorted(placed) != list(range(width)) or any(self.inverse(row, c) != k for k, c in enumerate(placed)):
                raise ValueError(f"XOR swizzle {self} is not a permutation with inverse on row {row}.")

    def emit(self, b: KernelBuilder, row: ir.Value, k: ir.Value) -> ir.Value:
        """`column` in IR: the same formula on index values."""
        chunk = arith.DivUIOp(k, b.c(self.chunk_elements)).result
        mask = arith.RemUIOp(arith.DivUIOp(row, b.c(self.rows_per_line)).result, b.c(self.chunks)).result
        moved = arith.MulIOp(arith.XOrIOp(chunk, mask).result, b.c(self.chunk_elements)).result
        return b.add(moved, arith.RemUIOp(k, b.c(self.chunk_elements)).result)


def lds_swizzle(schedule: DoubleBuffered) -> XorSwizzle | None:
    if not schedule.xor_rows:
        return None
    chunk_elements = CHUNK_BYTES // schedule.element_bytes
    return XorSwizzle(chunk_elements, schedule.tile[2] // chunk_elements, schedule.xor_rows)


@dataclass(frozen=True)
class _Shape:
    """How one target's kernel lays waves and fragments out."""
    waves_m: int
    waves_n: int
    wmma: bool  # WMMAR3 (wave32, replicated A/B lanes, row-major accumulator) or MFMA (wave64, col_major)


_SHAPES = {32: _Shape(4, 2, wmma=True), 64: _Shape(2, 2, wmma=False)}


def dbuf_schedule(dtype: str, wave_size: int, mma_k: int, fetch_slices: int = 1, lds_banks: int = 32
                  ) -> DoubleBuffered:
    """The shipped tile for a target's wave size: 128x64x32 on 8 waves of 32 (WMMA, padded LDS rows, seed 002's
    choice), 128x128 with 64 bytes of K on 4 waves of 64 (MFMA, XOR-swizzled LDS, which needs no padding and so
    leaves room for two workgroups per CU on gfx942)."""
    shape = _SHAPES[wave_size]
    eb = element_bytes(dtype)
    tile = (128, 64, 32) if shape.wmma else (128, 128, 64 // eb)
    if shape.wmma:
        layout = {"lds_pad": LDS_PAD}
    else:
        layout = {"xor_rows": max(1, lds_banks * 4 // (tile[2] * eb))}  # rows of one line of the LDS banks
    return DoubleBuffered(tile=tile, element_bytes=eb, wave_size=wave_size, waves=shape.waves_m * shape.waves_n,
                          register_prefetch=True, fetch_slices=fetch_slices, mma_k=mma_k, **layout)


def build_double_buffered(schedule: DoubleBuffered, dtype: str, mma: str, layout: str, name: str) -> None:
    """Emit `util.func private @<name>` at the current insertion point."""
    shape = _SHAPES[schedule.wave_size]
    m_tile, n_tile, k_tile = schedule.tile
    mma_k = mma_shape(mma)[2]
    slices = k_tile // mma_k
    lane_groups = schedule.wave_size // FRAGMENT  # 2 (WMMA: replicas) or 4 (MFMA: K groups)
    per_lane = mma_k if shape.wmma else mma_k // lane_groups  # K values of one fragment a lane holds
    acc_elements = 8 if shape.wmma else 4
    row = k_tile + schedule.lds_pad
    swizzle = lds_swizzle(schedule)
    copy = LDS_ACCESS_BYTES // element_bytes(dtype)  # elements per 16-byte load / store
    threads = schedule.waves * schedule.wave_size
    tiles_m, tiles_n = m_tile // shape.waves_m // FRAGMENT, n_tile // shape.waves_n // FRAGMENT
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
    column_type = ir.VectorType.get([tiles_m, 1, acc_elements], f32)  # one N tile's accumulators
    if shape.wmma:  # (wave row, M tile, acc element, lane half, wave column, N tile, column)
        out_shape = [shape.waves_m, tiles_m, acc_elements, lane_groups, shape.waves_n, tiles_n, FRAGMENT]
    else:  # (wave row, M tile, row, wave column, N tile, lane group, acc element)
        out_shape = [shape.waves_m, tiles_m, FRAGMENT, shape.waves_n, tiles_n, lane_groups, acc_elements]

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
            wave_m, wave_n, lane_group, lane_row = b.delinearize(tid, [shape.waves_m, shape.waves_n, lane_groups,
                                                                       FRAGMENT])
            k_in_slice = b.c(0) if shape.wmma else b.mul(lane_group, per_lane)

            # Copies: one 16-byte vector per thread and pass; K-contiguous rows of A (and of B in NT).
            col_groups = k_tile // copy
            rows_per_pass = threads // col_groups
            copy_row, col_group = b.delinearize(tid, [rows_per_pass, col_groups])
            col = b.mul(col_group, copy)
            a_rows = [b.add(copy_row, b.c(p * rows_per_pass)) for p in range(m_tile // rows_per_pass)]
            b_rows = [b.add(copy_row, b.c(p * rows_per_pass)) for p in range(n_tile // rows_per_pass)]
            # B in NN: 16 bytes along N of one K row per thread, for as many passes as the K tile needs.
            n_groups = n_tile // copy
            k_rows_per_pass = threads // n_groups
            k_row, n_group = b.delinearize(tid, [k_rows_per_pass, n_groups])
            n_col = b.mul(n_group, copy)
            k_rows = [b.add(k_row, b.c(p * k_rows_per_pass)) for p in range(k_tile // k_rows_per_pass)]

            def load(source: ir.Value, offsets: list[ir.Value]) -> ir.Value:
                piece = tensor.ExtractSliceOp(ir.RankedTensorType.get([1, copy], element), source, offsets, [], [],
                                              [dynamic] * 2, [1, copy], [1, 1]).result
                return b.read(piece, [b.c(0), b.c(0)], [1, copy], zero)

            def fetches(k_base: ir.Value) -> list:
                """The global loads of one K tile in issue order: (operand, LDS row or K row, how to load)."""
                k_col = b.add(k_base, col)
                plan = [("a", r, lambda r=r: load(lhs, [r, k_col])) for r in a_rows]
                if layout == "nt":
                    return plan + [("b", r, lambda r=r: load(rhs, [r, k_col])) for r in b_rows]
                return plan + [("bT", kr, lambda kr=kr: load(rhs, [b.add(k_base, kr), n_col])) for kr in k_rows]

            def store(stage: ir.Value, fetched: list) -> None:
                for operand, r, value in fetched:
                    if operand == "bT" and swizzle is None:  # NN B: the K row's N values go down an LDS column
                        tile, in_tile = b.delinearize(n_col, [n_tile // FRAGMENT, FRAGMENT])
                        b.write(value, lds["b"], [stage, tile, in_tile, r], transposed=True)
                    elif operand == "bT":  # ... each to the column its own row's swizzle gives it
                        for i in range(copy):
                            tile, in_tile = b.delinearize(b.add(n_col, b.c(i)), [n_tile // FRAGMENT, FRAGMENT])
                            element_value = vector.ExtractOp(value, [], [0, i]).result
                            memref.StoreOp(element_value, lds["b"], [stage, tile, in_tile,
                                                                     write_column(b, swizzle, in_tile, r)])
                    else:
                        rows = m_tile if operand == "a" else n_tile
                        tile, in_tile = b.delinearize(r, [rows // FRAGMENT, FRAGMENT])
                        column = col if swizzle is None else write_column(b, swizzle, in_tile, col)
                        b.write(value, lds[operand], [stage, tile, in_tile, column])

            def fragments(stage: ir.Value) -> tuple[list[ir.Value], list[list[ir.Value]]]:
                """Per K slice: this lane's A fragments of its M tiles (tiles_m, 1, per_lane), and its B fragment
                of each of its N tiles (1, 1, per_lane)."""
                def read(operand: str, first_tile: ir.Value, tiles: int, s: int) -> ir.Value:
                    k = b.add(b.c(s * mma_k), k_in_slice)
                    if swizzle is None:
                        return b.read(lds[operand], [stage, first_tile, lane_row, k], [tiles, 1, per_lane], zero)
                    # swizzled: one read per 16-byte chunk the fragment spans, each at its own row's column
                    width = min(per_lane, swizzle.chunk_elements)
                    whole = arith.ConstantOp(ir.VectorType.get([tiles, 1, per_lane], element),
                                             ir.DenseElementsAttr.get_splat(ir.VectorType.get(
                                                 [tiles, 1, per_lane], element), ir.FloatAttr.get(element, 0.0))
                                             ).result
                    for start in range(0, per_lane, width):
                        column = read_column(b, swizzle, lane_row, b.add(k, b.c(start)))
                        part = b.read(lds[operand], [stage, first_tile, lane_row, column], [tiles, 1, width], zero)
                        if width == per_lane:
                            return part
                        whole = vector.InsertStridedSliceOp(part, whole, [0, 0, start], [1, 1, 1]).result
                    return whole
                a_first, b_first = b.mul(wave_m, tiles_m), b.mul(wave_n, tiles_n)
                a_frags = [read("a", a_first, tiles_m, s) for s in range(slices)]
                b_frags = [[read("b", b.add(b_first, b.c(j)), 1, s) for j in range(tiles_n)] for s in range(slices)]
                return a_frags, b_frags

            def multiply(accs: list[ir.Value], frags, plan: list) -> tuple[list[ir.Value], list]:
                """Every MMA of the K tile, one group per (K slice, N tile); with loads to spread, the groups go
                in `fetch_slices` chunks, each chunk's loads issued before its MMAs."""
                a_frags, b_frags = frags
                groups = [(s, j) for s in range(slices) for j in range(tiles_n)]
                spread = bool(plan) and schedule.fetch_slices > 1
                chunks = _chunks(groups, schedule.fetch_slices if spread else 1)
                loads = _chunks(plan, len(chunks)) if spread else [[] for _ in chunks]
                accs, issued = list(accs), []
                for chunk, chunk_loads in zip(chunks, loads):
                    issued += [(operand, r, make()) for operand, r, make in chunk_loads]
                    if spread:
                        rocdl.SchedGroupBarrier(_mask("vmem_read"), len(chunk_loads), 0)
                    for s, j in chunk:
                        accs[j] = inner_tiled(mma, accs[j], (a_frags[s], b_frags[s][j]), column_type,
                                              col_major=not shape.wmma)
                    if spread:
                        rocdl.SchedGroupBarrier(_mask("mfma_wmma"), len(chunk) * tiles_m, 0)
                return accs, issued

            # Prologue: K tile 0 into stage 0.
            store(b.c(0), [(o, r, make()) for o, r, make in fetches(b.c(0))])
            b.barrier()
            zeros = arith.ConstantOp(column_type, ir.DenseElementsAttr.get_splat(
                column_type, ir.FloatAttr.get(f32, 0.0))).result
            loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [zeros] * tiles_n)
            with ir.InsertionPoint(loop.body):
                step = arith.DivUIOp(loop.induction_variable, b.c(k_tile)).result
                upcoming = arith.RemUIOp(step, b.c(2)).result  # the stage K tile `step` goes to
                current = arith.SubIOp(b.c(1), upcoming).result
                plan = fetches(loop.induction_variable)
                accs = list(loop.inner_iter_args)
                if schedule.fetch_slices == 1:
                    # the whole next tile goes out first, then the LDS reads; the fences keep LLVM from sinking
                    # the loads to their stores or hoisting the stores above the MMAs
                    fetched = [(o, r, make()) for o, r, make in plan]
                    frags = fragments(current)
                    _fence()
                    accs, _ = multiply(accs, frags, [])
                else:
                    accs, fetched = multiply(accs, fragments(current), plan)
                _fence()
                store(upcoming, fetched)
                b.barrier()
                scf.YieldOp(accs)
            last_step = arith.DivUIOp(k_size, b.c(k_tile)).result
            last_stage = arith.RemUIOp(arith.AddIOp(last_step, b.c(1)).result, b.c(2)).result
            finals, _ = multiply(list(loop.results), fragments(last_stage), [])
            tile_type = ir.VectorType.get([tiles_m, tiles_n, acc_elements], f32)
            whole = arith.ConstantOp(tile_type, ir.DenseElementsAttr.get_splat(
                tile_type, ir.FloatAttr.get(f32, 0.0))).result
            for j, acc in enumerate(finals):
                whole = vector.InsertStridedSliceOp(acc, whole, [0, j, 0], [1, 1, 1]).result
            if shape.wmma:  # (M tile, N tile, e) -> (1, M tile, e, 1, 1, N tile, 1) at (wave_m, 0, 0, half, wave_n, 0, row)
                whole = vector.TransposeOp(ir.VectorType.get([tiles_m, acc_elements, tiles_n], f32), whole,
                                           [0, 2, 1]).result
                piece_shape = [1, tiles_m, acc_elements, 1, 1, tiles_n, 1]
                offsets = [wave_m, b.c(0), b.c(0), lane_group, wave_n, b.c(0), lane_row]
            else:  # (M tile, N tile, e) -> (1, M tile, 1, 1, N tile, 1, e) at (wave_m, 0, row, wave_n, 0, group, 0)
                piece_shape = [1, tiles_m, 1, 1, tiles_n, 1, acc_elements]
                offsets = [wave_m, b.c(0), lane_row, wave_n, b.c(0), lane_group, b.c(0)]
            shaped = vector.ShapeCastOp(ir.VectorType.get(piece_shape, f32), whole).result
            written = vector.TransferWriteOp(ir.RankedTensorType.get(piece_shape, f32), shaped,
                                             tensor.EmptyOp(piece_shape, f32).result, [b.c(0)] * 7,
                                             ir.AffineMap.get_identity(7), [True] * 7).result
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.regions[0].blocks[0]):
                tensor.ParallelInsertSliceOp(written, out, offsets, [], [], [dynamic] * 7, piece_shape, [1] * 7)
        groups = ([0, 1, 2, 3], [4, 5, 6]) if shape.wmma else ([0, 1, 2], [3, 4, 5, 6])
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], _groups(groups)).result])


def write_column(b: KernelBuilder, swizzle: XorSwizzle, row: ir.Value, k: ir.Value) -> ir.Value:
    """Where a store puts logical column `k` of `row` (the writer's side of the swizzle)."""
    return swizzle.emit(b, row, k)


def read_column(b: KernelBuilder, swizzle: XorSwizzle, row: ir.Value, k: ir.Value) -> ir.Value:
    """Where a fragment read finds logical column `k` of `row` (the reader's side: the same XOR)."""
    return swizzle.emit(b, row, k)


def _fence() -> None:
    """Nothing moves across this point when LLVM schedules the loop body."""
    rocdl.SchedBarrier(_mask("none"))


def _mask(kind: str) -> ir.Attribute:
    return ir.Attribute.parse(f"#rocdl.sched_group_mask<{kind}>")


def _chunks(items: list, count: int) -> list[list]:
    """`items` in `count` consecutive chunks of nearly equal size (the first ones one longer)."""
    count = max(1, count)
    size, extra = divmod(len(items), count)
    chunks, start = [], 0
    for i in range(count):
        end = start + size + (i < extra)
        chunks.append(items[start:end])
        start = end
    return chunks


def _groups(dims: tuple[list[int], ...]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in group]) for group in dims])
