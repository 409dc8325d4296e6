"""Register-prefetch GEMM kernels as MLIR ukernels, for WMMA (gfx1151) and MFMA (gfx942, gfx950) targets,
built with the bindings: the double-buffered kernels and the producer-consumer kernel.

Both follow a program `hazards.check` proves race-free: two LDS stages, one barrier per K step; the next K tile
goes from global memory into registers and from there into the stage nobody reads in this step (these kernels do
not use direct-to-LDS loads, which gfx1151 lacks).

- `build_double_buffered` (`warpgroups.DoubleBuffered(register_prefetch=True)`): every wave loads and computes.
  gfx1151: 128×64×32 on 8 waves of 32 in a 4×2 grid, 2×2 WMMA tiles of 16×16 per wave (seed 002's fastest);
  gfx942 / gfx950: 128×128 with 64 bytes of K on 4 waves of 64 in a 2×2 grid, 4×4 MFMA tiles per wave.
  `fetch_slices` = 1 issues the whole next tile's loads first, then the LDS reads, the MMAs and the stores,
  with `rocdl.sched.barrier` fences so LLVM keeps that order; `fetch_slices` > 1 (the interleave variants)
  spreads the loads over that many groups of MMAs, pinned with `rocdl.sched.group.barrier`.
- `build_producer_consumer` (`warpgroups.ProducerConsumer(register_prefetch=True)`, gfx942 / gfx950): 8 consumer
  waves (a 2×4 grid of 64×64) only read and multiply a 128×256 tile; 4 producer waves only load the next tile
  and store it. The two roles branch on the wave index and meet at the same barriers.

Fragments follow IREE's layouts. WMMAR3 (row-major accumulator): a lane holds one row of A (lane % 16) and one
column of B over all 16 K values, lanes 16-31 repeating lanes 0-15; accumulator element e of lane l is row
2e + l / 16, column l % 16. MFMA 16x16xK with `col_major`: lane l holds K values (l / 16)·K/4 … of row l % 16 of
A and of column l % 16 of B; accumulator element e is row l % 16, column 4(l / 16) + e. A and B sit in LDS
K-contiguous (M- and N-major) in every layout: an operand stored K-major in global memory (B in NN, A and B in
TN) is loaded 16 bytes along M or N and written down LDS columns. On CDNA the LDS rows are XOR-swizzled; on
gfx1151 padded. Numerics checked on the CPU emulator (tests/unit/test_emulator.py); not run on AMD hardware.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import amdgpu, arith, memref, rocdl, scf, tensor, util, vector

from .schedule import LDS_ACCESS_BYTES, element_bytes, mma_shape
from .lds_swizzle import XorSwizzle, lds_swizzle, xor_rows
from .ukernel import KernelBuilder, zero_vector, fat_buffer, fence, inner_tiled
from .warpgroups import DoubleBuffered, ProducerConsumer

FRAGMENT = 16  # M = N of every intrinsic used here
LDS_PAD = 8  # elements per LDS row: shifts each row's banks so the 16 rows of a fragment read spread out


@dataclass(frozen=True)
class _Shape:
    """How a kernel lays its computing waves and their fragments out."""
    waves_m: int
    waves_n: int
    wmma: bool  # WMMAR3 (wave32, replicated A/B lanes, row-major accumulator) or MFMA (wave64, col_major)


_SHAPES = {32: _Shape(4, 2, wmma=True), 64: _Shape(2, 2, wmma=False)}
_CONSUMERS = _Shape(2, 4, wmma=False)


def dbuf_schedule(dtype: str, wave_size: int, mma_k: int, fetch_slices: int = 1, lds_banks: int = 32,
                  dma: bool = False, padded: bool = False) -> DoubleBuffered:
    """The shipped tile for a target's wave size: 128x64x32 on 8 waves of 32 (WMMA, padded LDS rows, seed 002's
    choice), 128x128 with 64 bytes of K on 4 waves of 64 (MFMA, XOR-swizzled LDS, which needs no padding and so
    leaves room for two workgroups per CU on gfx942). `padded`: padded LDS rows on MFMA too, where the target
    says so (`Target.padded_kernels`)."""
    shape = _SHAPES[wave_size]
    eb = element_bytes(dtype)
    tile = (128, 64, 32) if shape.wmma else (128, 128, 64 // eb)
    pad = shape.wmma or padded  # padded rows, or else XOR-swizzled ones
    return DoubleBuffered(tile=tile, element_bytes=eb, wave_size=wave_size, waves=shape.waves_m * shape.waves_n,
                          register_prefetch=not dma, fetch_slices=fetch_slices, mma_k=mma_k,
                          lds_pad=LDS_PAD if pad else 0, xor_rows=0 if pad else xor_rows(lds_banks, tile[2], eb))


def pc_schedule(dtype: str, mma_k: int, lds_banks: int) -> ProducerConsumer:
    """The shipped producer-consumer tile: 128x256 with 64 bytes of K, 4 producers and 8 consumers of 64 lanes,
    XOR-swizzled LDS (2 stages: 48 KiB)."""
    eb = element_bytes(dtype)
    k = 64 // eb
    return ProducerConsumer(tile=(128, 256, k), element_bytes=eb, wave_size=64, register_prefetch=True,
                            mma_k=mma_k, xor_rows=xor_rows(lds_banks, k, eb))


class _Tiles:
    """The LDS tiles of one kernel and the code that moves data through them: global loads of a K tile into
    registers (`fetches`), their stores into an LDS stage (`store`), this lane's fragments of a stage
    (`fragments`) and the MMAs over them (`multiply`). Built inside the forall, from the thread's indices."""

    def __init__(self, b: KernelBuilder, schedule, shape: _Shape, dtype: str, mma: str, layout: str,
                 operands: tuple[ir.Value, ir.Value]):
        self.b, self.shape, self.mma, self.layout = b, shape, mma, layout
        self.m_tile, self.n_tile, self.k_tile = schedule.tile
        self.lhs, self.rhs = operands
        self.element = ir.Type.parse(dtype)
        self.zero = arith.ConstantOp(self.element, 0.0).result
        self.copy = LDS_ACCESS_BYTES // element_bytes(dtype)  # elements per 16-byte load / store
        self.swizzle = lds_swizzle(schedule)
        self.mma_k = mma_shape(mma)[2]
        self.slices = self.k_tile // self.mma_k
        self.lane_groups = (32 if shape.wmma else 64) // FRAGMENT  # 2 (WMMA: replicas) or 4 (MFMA: K groups)
        self.per_lane = self.mma_k if shape.wmma else self.mma_k // self.lane_groups
        self.acc_elements = 8 if shape.wmma else 4
        self.tiles_m = self.m_tile // shape.waves_m // FRAGMENT
        self.tiles_n = self.n_tile // shape.waves_n // FRAGMENT
        self.column_type = ir.VectorType.get([self.tiles_m, 1, self.acc_elements], ir.F32Type.get())
        self.fetch_slices = getattr(schedule, "fetch_slices", 1)

    @staticmethod
    def lds(schedule, dtype: str) -> dict[str, ir.Value]:
        """(stage, 16-row tile, row in tile, padded K) for A and B: a fragment read takes one row of each tile."""
        m_tile, n_tile, k_tile = schedule.tile
        element, row = ir.Type.parse(dtype), k_tile + schedule.lds_pad
        workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
        return {key: memref.AllocOp(ir.MemRefType.get([2, rows // FRAGMENT, FRAGMENT, row], element,
                                                      memory_space=workgroup), [], []).result
                for key, rows in (("a", m_tile), ("b", n_tile))}

    def set_copier(self, tid: ir.Value, threads: int) -> None:
        """Which 16-byte pieces thread `tid` of `threads` loads and stores."""
        b = self.b
        # K-contiguous operands: rows of K, `col_groups` 16-byte pieces per row
        col_groups = self.k_tile // self.copy
        rows_per_pass = threads // col_groups
        row, col_group = b.delinearize(tid, [rows_per_pass, col_groups])
        self.col = b.mul(col_group, self.copy)
        self.rows = {op: [b.add(row, b.c(p * rows_per_pass)) for p in range(size // rows_per_pass)]
                     for op, size in (("a", self.m_tile), ("b", self.n_tile))}
        # K-major operands: 16 bytes along M or N of one K row
        self.k_major = {}
        for op, size in (("a", self.m_tile), ("b", self.n_tile)):
            groups = size // self.copy
            k_rows_per_pass = threads // groups
            k_row, group = b.delinearize(tid, [k_rows_per_pass, groups])
            self.k_major[op] = (b.mul(group, self.copy),
                                [b.add(k_row, b.c(p * k_rows_per_pass)) for p in range(self.k_tile // k_rows_per_pass)])

    def k_contiguous(self, op: str) -> bool:
        return {"nt": True, "nn": op == "a", "tn": False}[self.layout]

    def k_size(self) -> ir.Value:
        return tensor.DimOp(self.lhs, self.b.c(1 if self.k_contiguous("a") else 0)).result

    def _load(self, source: ir.Value, offsets: list[ir.Value]) -> ir.Value:
        b, dynamic = self.b, ir.ShapedType.get_dynamic_size()
        piece = tensor.ExtractSliceOp(ir.RankedTensorType.get([1, self.copy], self.element), source, offsets, [],
                                      [], [dynamic] * 2, [1, self.copy], [1, 1]).result
        return b.read(piece, [b.c(0), b.c(0)], [1, self.copy], self.zero)

    def fetches(self, k_base: ir.Value) -> list:
        """The global loads of one K tile in issue order: (operand, K-major?, row, how to load)."""
        b, plan = self.b, []
        for op, source in (("a", self.lhs), ("b", self.rhs)):
            if self.k_contiguous(op):
                k_col = b.add(k_base, self.col)
                plan += [(op, False, r, lambda s=source, r=r, k=k_col: self._load(s, [r, k])) for r in self.rows[op]]
            else:
                m_col, k_rows = self.k_major[op]
                plan += [(op, True, kr, lambda s=source, kr=kr, m=m_col: self._load(s, [b.add(k_base, kr), m]))
                         for kr in k_rows]
        return plan

    @staticmethod
    def issue(plan: list) -> list:
        return [(op, k_major, r, make()) for op, k_major, r, make in plan]

    def store(self, stage: ir.Value, lds: dict[str, ir.Value], fetched: list) -> None:
        b, swizzle = self.b, self.swizzle
        for op, k_major, r, value in fetched:
            tiles = (self.m_tile if op == "a" else self.n_tile) // FRAGMENT
            if not k_major:
                tile, in_tile = b.delinearize(r, [tiles, FRAGMENT])
                column = self.col if swizzle is None else write_column(b, swizzle, in_tile, self.col)
                b.write(value, lds[op], [stage, tile, in_tile, column])
            elif swizzle is None:  # a K row's M or N values go down an LDS column
                tile, in_tile = b.delinearize(self.k_major[op][0], [tiles, FRAGMENT])
                b.write(value, lds[op], [stage, tile, in_tile, r], transposed=True)
            else:  # ... each to the column its own row's swizzle gives it
                for i in range(self.copy):
                    tile, in_tile = b.delinearize(b.add(self.k_major[op][0], b.c(i)), [tiles, FRAGMENT])
                    element_value = vector.ExtractOp(value, [], [0, i]).result
                    memref.StoreOp(element_value, lds[op], [stage, tile, in_tile, write_column(b, swizzle, in_tile, r)])

    def set_dma(self, tid: ir.Value, waves: int, wave_size: int, sources: dict[str, ir.Value]) -> None:
        """Direct global-to-LDS copies: each wave moves whole 16-row tiles of A and B, a lane 16 bytes into the
        slot after its predecessor's (the LDS side of one copy is contiguous, so the swizzle is applied to what
        each lane fetches)."""
        b = self.b
        chunks = self.k_tile // self.copy
        if wave_size // chunks != FRAGMENT:
            raise ValueError(f"a direct-to-LDS copy of {wave_size} lanes fills {wave_size // chunks} rows of "
                             f"{chunks} 16-byte pieces, not one {FRAGMENT}-row tile.")
        self.dma_wave, lane = b.delinearize(tid, [waves, wave_size])
        self.dma_row, slot = b.delinearize(lane, [FRAGMENT, chunks])
        self.dma_slot = b.mul(slot, self.copy)
        self.dma_waves, self.sources = waves, sources

    def dma(self, k_base: ir.Value, stage: ir.Value, lds: dict[str, ir.Value]) -> None:
        b = self.b
        # slot c of a row holds logical column c XOR mask: the swizzle is its own inverse
        column = self.dma_slot if self.swizzle is None else read_column(b, self.swizzle, self.dma_row, self.dma_slot)
        for op, rows in (("a", self.m_tile), ("b", self.n_tile)):
            per_wave = rows // FRAGMENT // self.dma_waves
            for i in range(per_wave):
                tile = b.add(b.mul(self.dma_wave, per_wave), b.c(i))
                source_row = b.add(b.mul(tile, FRAGMENT), self.dma_row)
                amdgpu.GatherToLDSOp(self.sources[op], [source_row, b.add(k_base, column)], lds[op],
                                     [stage, tile, b.c(0), b.c(0)], ir.VectorType.get([self.copy], self.element),
                                     async_=True)

    def set_lanes(self, wave_m: ir.Value, wave_n: ir.Value, lane_group: ir.Value, lane_row: ir.Value) -> None:
        self.wave_m, self.wave_n, self.lane_group, self.lane_row = wave_m, wave_n, lane_group, lane_row
        self.k_in_slice = self.b.c(0) if self.shape.wmma else self.b.mul(lane_group, self.per_lane)

    def fragments(self, stage: ir.Value, lds: dict[str, ir.Value]) -> tuple[list, list]:
        """Per K slice: this lane's A fragments of its M tiles (tiles_m, 1, per_lane), and its B fragment of each
        of its N tiles (1, 1, per_lane)."""
        b, swizzle, per_lane = self.b, self.swizzle, self.per_lane

        def read(op: str, first_tile: ir.Value, tiles: int, s: int) -> ir.Value:
            k = b.add(b.c(s * self.mma_k), self.k_in_slice)
            if swizzle is None:
                return b.read(lds[op], [stage, first_tile, self.lane_row, k], [tiles, 1, per_lane], self.zero)
            # swizzled: one read per 16-byte chunk the fragment spans, each at its own row's column
            width = min(per_lane, swizzle.chunk_elements)
            whole_type = ir.VectorType.get([tiles, 1, per_lane], self.element)
            whole = zero_vector(whole_type)
            for start in range(0, per_lane, width):
                column = read_column(b, swizzle, self.lane_row, b.add(k, b.c(start)))
                part = b.read(lds[op], [stage, first_tile, self.lane_row, column], [tiles, 1, width], self.zero)
                if width == per_lane:
                    return part
                whole = vector.InsertStridedSliceOp(part, whole, [0, 0, start], [1, 1, 1]).result
            return whole

        a_first, b_first = b.mul(self.wave_m, self.tiles_m), b.mul(self.wave_n, self.tiles_n)
        a_frags = [read("a", a_first, self.tiles_m, s) for s in range(self.slices)]
        b_frags = [[read("b", b.add(b_first, b.c(j)), 1, s) for j in range(self.tiles_n)] for s in range(self.slices)]
        return a_frags, b_frags

    def multiply(self, accs: list[ir.Value], frags, plan: list) -> tuple[list[ir.Value], list]:
        """Every MMA of the K tile, one group per (K slice, N tile); with loads to spread, the groups go in
        `fetch_slices` chunks, each chunk's loads issued before its MMAs."""
        a_frags, b_frags = frags
        groups = [(s, j) for s in range(self.slices) for j in range(self.tiles_n)]
        spread = bool(plan) and self.fetch_slices > 1
        chunks = _chunks(groups, self.fetch_slices if spread else 1)
        loads = _chunks(plan, len(chunks)) if spread else [[] for _ in chunks]
        accs, issued = list(accs), []
        for chunk, chunk_loads in zip(chunks, loads):
            issued += self.issue(chunk_loads)
            if spread:
                rocdl.SchedGroupBarrier(_mask("vmem_read"), len(chunk_loads), 0)
            for s, j in chunk:
                accs[j] = inner_tiled(self.mma, accs[j], (a_frags[s], b_frags[s][j]), self.column_type,
                                      col_major=not self.shape.wmma)
            if spread:
                rocdl.SchedGroupBarrier(_mask("mfma_wmma"), len(chunk) * self.tiles_m, 0)
        return accs, issued

    def out_shape(self) -> list[int]:
        s = self.shape
        if s.wmma:  # (wave row, M tile, acc element, lane half, wave column, N tile, column)
            return [s.waves_m, self.tiles_m, self.acc_elements, self.lane_groups, s.waves_n, self.tiles_n, FRAGMENT]
        # (wave row, M tile, row, wave column, N tile, lane group, acc element)
        return [s.waves_m, self.tiles_m, FRAGMENT, s.waves_n, self.tiles_n, self.lane_groups, self.acc_elements]

    def result_piece(self, accs: list[ir.Value]) -> tuple[ir.Value, list[ir.Value], list[int]]:
        """This lane's accumulators as one slice of the output (`out_shape`): value, offsets, sizes."""
        b, f32 = self.b, ir.F32Type.get()
        tile_type = ir.VectorType.get([self.tiles_m, self.tiles_n, self.acc_elements], f32)
        whole = zero_vector(tile_type)
        for j, acc in enumerate(accs):
            whole = vector.InsertStridedSliceOp(acc, whole, [0, j, 0], [1, 1, 1]).result
        if self.shape.wmma:  # (M tile, N tile, e) -> (1, M tile, e, 1, 1, N tile, 1)
            whole = vector.TransposeOp(ir.VectorType.get([self.tiles_m, self.acc_elements, self.tiles_n], f32),
                                       whole, [0, 2, 1]).result
            sizes = [1, self.tiles_m, self.acc_elements, 1, 1, self.tiles_n, 1]
            offsets = [self.wave_m, b.c(0), b.c(0), self.lane_group, self.wave_n, b.c(0), self.lane_row]
        else:  # (M tile, N tile, e) -> (1, M tile, 1, 1, N tile, 1, e)
            sizes = [1, self.tiles_m, 1, 1, self.tiles_n, 1, self.acc_elements]
            offsets = [self.wave_m, b.c(0), self.lane_row, self.wave_n, b.c(0), self.lane_group, b.c(0)]
        shaped = vector.ShapeCastOp(ir.VectorType.get(sizes, f32), whole).result
        return shaped, offsets, sizes

    def output_groups(self) -> ir.ArrayAttr:
        return _groups(([0, 1, 2, 3], [4, 5, 6]) if self.shape.wmma else ([0, 1, 2], [3, 4, 5, 6]))


def _tiles(b: KernelBuilder, entry: ir.Block, schedule, shape: _Shape, dtype: str, mma: str, layout: str):
    """(LDS buffers, the tile mover, K) at the top of a kernel body."""
    t = _Tiles(b, schedule, shape, dtype, mma, layout, (entry.arguments[0], entry.arguments[1]))
    return _Tiles.lds(schedule, dtype), t, t.k_size()


def _function(name: str, schedule, dtype: str, layout: str) -> tuple[ir.Block, KernelBuilder]:
    m_tile, n_tile, _ = schedule.tile
    element, dynamic = ir.Type.parse(dtype), ir.ShapedType.get_dynamic_size()
    def operand(rows: int, k_contiguous: bool) -> ir.Type:
        return ir.RankedTensorType.get([rows, dynamic] if k_contiguous else [dynamic, rows], element)
    lhs = operand(m_tile, layout != "tn")
    rhs = operand(n_tile, layout == "nt")
    result = ir.RankedTensorType.get([m_tile, n_tile], ir.F32Type.get())
    fn = util.FuncOp(name, ir.TypeAttr.get(ir.FunctionType.get([lhs, rhs, result], [result])),
                     sym_visibility="private")
    entry = fn.regions[0].blocks.append(lhs, rhs, result)
    return entry, KernelBuilder(ir.Type.parse(dtype), entry)


def _write_result(t: _Tiles, out: ir.Value, piece: tuple, m_tiles: ir.Value | None = None) -> None:
    """The forall terminator: insert this lane's piece into the shared output. With `m_tiles`, only that many
    of the piece's M tiles (dimension 1) are written: the write is masked and the inserted slice that long."""
    value, offsets, sizes = piece
    f32, dynamic, b = ir.F32Type.get(), ir.ShapedType.get_dynamic_size(), t.b
    if m_tiles is None:
        written = vector.TransferWriteOp(ir.RankedTensorType.get(sizes, f32), value,
                                         tensor.EmptyOp(sizes, f32).result, [b.c(0)] * 7,
                                         ir.AffineMap.get_identity(7), [True] * 7).result
        dynamic_sizes, static_sizes = [], sizes
    else:
        static_sizes = [sizes[0], dynamic, *sizes[2:]]
        written = vector.TransferWriteOp(ir.RankedTensorType.get(static_sizes, f32), value,
                                         tensor.EmptyOp([sizes[0], m_tiles, *sizes[2:]], f32).result, [b.c(0)] * 7,
                                         ir.AffineMap.get_identity(7), [True, False] + [True] * 5).result
        dynamic_sizes = [m_tiles]
    terminator = scf.InParallelOp()
    with ir.InsertionPoint(terminator.regions[0].blocks[0]):
        tensor.ParallelInsertSliceOp(written, out, offsets, dynamic_sizes, [], [dynamic] * 7, static_sizes, [1] * 7)


def build_double_buffered(schedule: DoubleBuffered, dtype: str, mma: str, layout: str, name: str) -> None:
    """Emit `util.func private @<name>` at the current insertion point. Without `register_prefetch` (gfx950) the
    next tile goes straight into LDS with direct-to-LDS loads (`amdgpu.gather_to_lds`, async: LLVM adds no wait
    for them of its own), retired by a load-counter wait before the step's barrier."""
    threads = schedule.waves * schedule.wave_size
    k_tile = schedule.tile[2]
    entry, b = _function(name, schedule, dtype, layout)
    with ir.InsertionPoint(entry):
        lds, t, k_size = _tiles(b, entry, schedule, _SHAPES[schedule.wave_size], dtype, mma, layout)
        if not schedule.register_prefetch:
            return _build_dma_body(schedule, t, b, lds, k_size, threads, entry)
        forall = scf.ForallOp([0], [threads], [1],
                              shared_outs=[tensor.EmptyOp(t.out_shape(), ir.F32Type.get()).result],
                              mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
        with ir.InsertionPoint(forall.body):
            tid, out = forall.body.arguments[0], forall.body.arguments[1]
            t.set_lanes(*b.delinearize(tid, [t.shape.waves_m, t.shape.waves_n, t.lane_groups, FRAGMENT]))
            t.set_copier(tid, threads)
            t.store(b.c(0), lds, t.issue(t.fetches(b.c(0))))  # prologue: K tile 0 into stage 0
            b.barrier()
            loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [zero_vector(t.column_type)] * t.tiles_n)
            with ir.InsertionPoint(loop.body):
                upcoming, current = _stages(b, loop.induction_variable, k_tile)
                plan = t.fetches(loop.induction_variable)
                accs = list(loop.inner_iter_args)
                if schedule.fetch_slices == 1:
                    # the whole next tile goes out first, then the LDS reads; the fences keep LLVM from sinking
                    # the loads to their stores or hoisting the stores above the MMAs
                    fetched = t.issue(plan)
                    frags = t.fragments(current, lds)
                    fence()
                    accs, _ = t.multiply(accs, frags, [])
                else:
                    accs, fetched = t.multiply(accs, t.fragments(current, lds), plan)
                fence()
                t.store(upcoming, lds, fetched)
                b.barrier()
                scf.YieldOp(accs)
            finals, _ = t.multiply(list(loop.results), t.fragments(_last_stage(b, k_size, k_tile), lds), [])
            _write_result(t, out, t.result_piece(finals))
        result = ir.RankedTensorType.get(schedule.tile[:2], ir.F32Type.get())
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], t.output_groups()).result])


def _build_dma_body(schedule: DoubleBuffered, t: _Tiles, b: KernelBuilder, lds: dict, k_size: ir.Value,
                    threads: int, entry: ir.Block) -> None:
    k_tile, f32 = schedule.tile[2], ir.F32Type.get()
    sources = {"a": fat_buffer(entry.arguments[0]), "b": fat_buffer(entry.arguments[1])}
    forall = scf.ForallOp([0], [threads], [1], shared_outs=[tensor.EmptyOp(t.out_shape(), f32).result],
                          mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
    with ir.InsertionPoint(forall.body):
        tid, out = forall.body.arguments[0], forall.body.arguments[1]
        t.set_lanes(*b.delinearize(tid, [t.shape.waves_m, t.shape.waves_n, t.lane_groups, FRAGMENT]))
        t.set_dma(tid, schedule.waves, schedule.wave_size, sources)
        t.dma(b.c(0), b.c(0), lds)  # prologue: K tile 0 into stage 0
        amdgpu.MemoryCounterWaitOp(load=0)
        b.barrier()
        loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [zero_vector(t.column_type)] * t.tiles_n)
        with ir.InsertionPoint(loop.body):
            upcoming, current = _stages(b, loop.induction_variable, k_tile)
            t.dma(loop.induction_variable, upcoming, lds)  # the next tile into the other stage, in flight ...
            frags = t.fragments(current, lds)
            fence()
            accs, _ = t.multiply(list(loop.inner_iter_args), frags, [])  # ... under this one's MMAs
            fence()
            amdgpu.MemoryCounterWaitOp(load=0)
            b.barrier()
            scf.YieldOp(accs)
        finals, _ = t.multiply(list(loop.results), t.fragments(_last_stage(b, k_size, k_tile), lds), [])
        _write_result(t, out, t.result_piece(finals))
    result = ir.RankedTensorType.get(schedule.tile[:2], f32)
    util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], t.output_groups()).result])


def build_producer_consumer(schedule: ProducerConsumer, dtype: str, mma: str, layout: str, name: str) -> None:
    """Emit `util.func private @<name>`: consumers are waves 0-7, producers waves 8-11, in one forall (IREE
    accepts LDS writes only inside one). Each role runs its own loop with one barrier per K step, so the barriers
    of the two code paths meet one to one. Every lane inserts an output slice; a producer's is empty: its M-tile
    extent is 0, masked in the write (a masked unit dimension would not do: IREE's vector-transfer optimisation
    drops unit dimensions together with their mask, which the emulator caught as zeros in the output)."""
    consumers = schedule.consumers * schedule.wave_size
    threads = consumers + schedule.producers * schedule.wave_size
    k_tile = schedule.tile[2]
    f32 = ir.F32Type.get()
    entry, b = _function(name, schedule, dtype, layout)
    with ir.InsertionPoint(entry):
        lds, t, k_size = _tiles(b, entry, schedule, _CONSUMERS, dtype, mma, layout)
        forall = scf.ForallOp([0], [threads], [1], shared_outs=[tensor.EmptyOp(t.out_shape(), f32).result],
                              mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
        with ir.InsertionPoint(forall.body):
            tid, out = forall.body.arguments[0], forall.body.arguments[1]
            producer = arith.CmpIOp(arith.CmpIPredicate.uge, tid, b.c(consumers)).result
            # producers index the copies from 0; every lane gets (wrapped) consumer indices for its output slice
            t.set_copier(arith.SubIOp(tid, b.c(consumers)).result, threads - consumers)
            t.set_lanes(*b.delinearize(arith.RemUIOp(tid, b.c(consumers)).result,
                                       [_CONSUMERS.waves_m, _CONSUMERS.waves_n, t.lane_groups, FRAGMENT]))
            prologue = scf.IfOp(producer)
            with ir.InsertionPoint(prologue.then_block):
                t.store(b.c(0), lds, t.issue(t.fetches(b.c(0))))
                scf.YieldOp([])
            b.barrier()
            zeros = zero_vector(t.column_type)
            roles = scf.IfOp(producer, [t.column_type] * t.tiles_n, has_else=True)
            with ir.InsertionPoint(roles.then_block):  # producers: load the next tile into the other stage
                loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile))
                with ir.InsertionPoint(loop.body):
                    upcoming, _ = _stages(b, loop.induction_variable, k_tile)
                    t.store(upcoming, lds, t.issue(t.fetches(loop.induction_variable)))
                    b.barrier()
                    scf.YieldOp([])
                scf.YieldOp([zeros] * t.tiles_n)
            with ir.InsertionPoint(roles.else_block):  # consumers: read and multiply the current stage
                loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [zeros] * t.tiles_n)
                with ir.InsertionPoint(loop.body):
                    _, current = _stages(b, loop.induction_variable, k_tile)
                    accs, _ = t.multiply(list(loop.inner_iter_args), t.fragments(current, lds), [])
                    fence()  # the step's MMAs stay in its barrier phase
                    b.barrier()
                    scf.YieldOp(accs)
                finals, _ = t.multiply(list(loop.results), t.fragments(_last_stage(b, k_size, k_tile), lds), [])
                scf.YieldOp(finals)
            owned = arith.SelectOp(producer, b.c(0), b.c(t.tiles_m)).result
            _write_result(t, out, t.result_piece(list(roles.results)), owned)
        result = ir.RankedTensorType.get(schedule.tile[:2], f32)
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], t.output_groups()).result])


def _stages(b: KernelBuilder, k: ir.Value, k_tile: int) -> tuple[ir.Value, ir.Value]:
    """(the stage K tile k / k_tile goes to, the stage of the tile before it)."""
    upcoming = b.stage_of(k, k_tile)
    return upcoming, arith.SubIOp(b.c(1), upcoming).result


def _last_stage(b: KernelBuilder, k_size: ir.Value, k_tile: int) -> ir.Value:
    steps = arith.DivUIOp(k_size, b.c(k_tile)).result
    return arith.RemUIOp(arith.AddIOp(steps, b.c(1)).result, b.c(2)).result


def write_column(b: KernelBuilder, swizzle: XorSwizzle, row: ir.Value, k: ir.Value) -> ir.Value:
    """Where a store puts logical column `k` of `row` (the writer's side of the swizzle)."""
    return swizzle.emit(b, row, k)


def read_column(b: KernelBuilder, swizzle: XorSwizzle, row: ir.Value, k: ir.Value) -> ir.Value:
    """Where a fragment read finds logical column `k` of `row` (the reader's side: the same XOR)."""
    return swizzle.emit(b, row, k)


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
