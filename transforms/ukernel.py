"""The one-LDS-stage ping-pong as an MLIR ukernel (`util.func`), built with the Python bindings.

IREE inlines a ukernel in place of a matched contraction when the tuning spec imports it and tags the op with
`iree_codegen.ukernel` (compile with `--iree-rocm-enable-tensor-ukernels`). The body follows the program of
`warpgroups.PingPong8(lds_stages=1)`, which `hazards.check` proves race-free: a prologue fills the LDS tile,
the second group of four waves is staggered by one conditional barrier, and each K step has four barrier
phases: (1) LDS reads of every K slice into registers, (2) global fetch of the next tile into registers under
the first MFMA cluster at raised priority, (3) stores of the fetched tile into LDS, (4) the second MFMA cluster;
the first group re-aligns after the loop. Scope: NT layout (B stored N×K, K contiguous in both operands),
f16/bf16/fp8 with the 16x16 MFMAs of gfx942 and gfx950 (`UKERNEL_MMA`), block tile 256×256×K. The per-lane
fragment layout is the one IREE
defines for the intrinsic (`col_major` accumulator). Its numerics are checked on the CPU emulator
(tests/unit/test_emulator.py), which found two defects in its first version (see `conditional_barrier` and the
accumulator column); it has not run on AMD hardware.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import affine, amdgpu, arith, gpu, iree_codegen, iree_gpu, llvm, memref, rocdl, scf, \
    tensor, util, vector

from .errors import UserError
from .schedule import LDS_ACCESS_BYTES, element_bytes, fragment_blocks, mma_shape
from .hazards import ProgramBuilder, check
from .lds_swizzle import XorSwizzle, lds_swizzle, transposed_swizzle, xor_rows
from .warpgroups import PingPong8, check_lds

THREADS = 512  # 8 waves of 64
ROWS = 256  # block tile M = N


class UkernelError(UserError, ValueError):
    """A ukernel request outside what the generator covers; the message is one sentence."""


def ukernel_name(schedule: PingPong8, dtype: str, layout: str = "nt") -> str:
    dma = "_dma" if schedule.lds_stages == 2 else ""
    return f"pingpong8{dma}_{layout}_{dtype}_k{schedule.tile[2]}"


def ukernel_schedule(dtype: str, lds_banks: int = 32, lds_stages: int = 1) -> PingPong8:
    """The shipped tile: 256x256 with 64 B of K per row (K 32 for 16-bit, 64 for fp8), XOR-swizzled LDS for the
    target's banks. K 64 at 16-bit compiles on gfx942 but spills 11 VGPRs: the accumulator (128), every
    fragment of the step and the prefetched tile exceed the 256 registers a wave has when two share a SIMD.
    `lds_stages` 2 (`pingpong8_dma`, gfx950): 128 B of K per row (HipKittens' 256x256x64 at 16-bit) in two LDS
    stages filled by direct-to-LDS copies, which stage nothing in registers."""
    eb = element_bytes(dtype)
    k = 64 * lds_stages // eb
    name = "pingpong8_dma" if lds_stages == 2 else "pingpong8"
    return PingPong8(tile=(ROWS, ROWS, k), element_bytes=eb, lds_stages=lds_stages,
                     xor_rows=xor_rows(lds_banks, k, eb), name=name)


def ukernel_mma(target, dtype: str, label: str = "pingpong8") -> str:
    """The intrinsic kernel `label` uses on `target` for `dtype` (`Target.ukernel_mma`: by (kernel, input element
    bytes), else by input element bytes: 16x16 output tiles, so the accumulator layout is the same for all of
    them; only the K depth and the elements per lane differ)."""
    eb = element_bytes(dtype)
    pattern = target.ukernel_mma.get((label, eb), target.ukernel_mma.get(eb))
    if pattern is None:
        raise UkernelError(f"the {label} kernel has no intrinsic for {dtype} on {target.name}.")
    return pattern.format(T=dtype.upper())


def check_problem(schedule: PingPong8, gemm, target) -> None:
    """One sentence for anything the generated ukernel cannot do for `gemm` on `target`."""
    mma = ukernel_mma(target, gemm.dtype, schedule.name)
    if mma not in target.mma or target.mma[mma].operand != gemm.dtype:
        raise UkernelError(f"{target.name} has no {mma} for {gemm.dtype}.")
    check_supported(schedule, gemm.layout, mma, target)
    k_tile = schedule.tile[2]
    if gemm.batched or gemm.m % ROWS or gemm.n % ROWS or gemm.k % k_tile or gemm.k < 2 * k_tile:
        raise UkernelError(f"the {schedule.name} ukernel needs M and N multiples of {ROWS}, K a multiple of {k_tile} "
                           f"(at least {2 * k_tile}) and no batch; {gemm.shape_name} is not (use --pipeline auto).")
    if gemm.epilogue.kind != "none":
        raise UkernelError(f"the {schedule.name} ukernel replaces the contraction only; epilogues are not fused into "
                           "it.")
    if schedule.lds_stages == 2 and not target.dma:
        raise UkernelError(f"the two-stage pingpong8 fills LDS by direct-to-LDS loads, which {target.name} does not "
                           "have (gfx950 does); use one LDS stage.")
    check_lds(schedule, target.lds_bytes, target.name)
    check(schedule.program(4))  # the schedule the body follows must be race-free
    swizzle = lds_swizzle(schedule)
    if swizzle is not None:
        swizzle.check(ROWS)
        # fragment reads compute the mask from the row within a 16-row tile; writes from the LDS row
        if any(swizzle.mask(r) != swizzle.mask(r % 16) for r in range(ROWS)):
            raise UkernelError(f"the XOR swizzle {swizzle} does not repeat every 16 rows.")


def check_supported(schedule: PingPong8, layout: str, mma: str, target) -> None:
    m, n, k = schedule.tile
    if layout not in ("nt", "nn"):
        raise UkernelError(f"the pingpong8 ukernel covers the NT and NN layouts (A stored M×K); {layout.upper()} is "
                           "not generated yet.")
    if (m, n) != (ROWS, ROWS) or k % mma_shape(mma)[2] or schedule.lds_stages not in (1, 2) or schedule.stagger != 1:
        raise UkernelError(f"the pingpong8 ukernel takes a 256x256xK tile with K a multiple of {mma}'s K, one or two "
                           f"LDS stages and a one-phase stagger, not {m}x{n}x{k} with {schedule.lds_stages} stage(s).")
    if schedule.lds_stages == 2 and layout == "nn" and not target.lds_transpose_reads:
        raise UkernelError("the two-stage pingpong8 copies B straight into LDS as it is stored; in the NN layout it "
                           f"reads it back with transposing LDS reads, which {target.name} does not have (use "
                           "--schedule pingpong8).")


class KernelBuilder:
    """Small helpers over the bindings for index arithmetic and the ops the body repeats."""

    def __init__(self, element: ir.Type, entry: ir.Block):
        self.element = element
        self.index = ir.IndexType.get()
        self.entry = entry
        self._constants: dict[int, ir.Value] = {}

    def c(self, value: int) -> ir.Value:
        """An index constant, created once at the top of the function so every region may use it."""
        if value not in self._constants:
            with ir.InsertionPoint.at_block_begin(self.entry):
                self._constants[value] = arith.ConstantOp(self.index, value).result
        return self._constants[value]

    def mul(self, a: ir.Value, b: int) -> ir.Value:
        return arith.MulIOp(a, self.c(b)).result

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.AddIOp(a, b).result

    def delinearize(self, value: ir.Value, basis: list[int]) -> list[ir.Value]:
        op = affine.AffineDelinearizeIndexOp([self.index] * len(basis), value, [], basis)
        return list(op.results)

    def read(self, source: ir.Value, indices: list[ir.Value], shape: list[int], padding: ir.Value) -> ir.Value:
        rank = len(indices)
        vec = ir.VectorType.get(shape, self.element)
        identity = ir.AffineMap.get_minor_identity(rank, len(shape))
        return vector.TransferReadOp(vec, source, indices, identity, padding, [True] * len(shape)).result

    def write(self, value: ir.Value, dest: ir.Value, indices: list[ir.Value], transposed: bool = False) -> None:
        """Store a vector at `indices`; `transposed` writes a row vector down a column (the buffer's last two
        dimensions swapped)."""
        rank = len(indices)
        layout = (ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1), ir.AffineDimExpr.get(rank - 2)])
                  if transposed else ir.AffineMap.get_minor_identity(rank, ir.VectorType(value.type).rank))
        vector.TransferWriteOp(None, value, dest, indices, layout, [True] * ir.VectorType(value.type).rank)

    def opaque(self, value: ir.Value) -> ir.Value:
        """`value` (an index) hidden from LLVM's constant folding by an empty inline asm, which emits no
        instruction: a loop bounded by it is not unrolled for its trip count."""
        i32 = ir.IntegerType.get_signless(32)
        narrow = arith.IndexCastOp(i32, value).result
        hidden = llvm.inline_asm(i32, [narrow], "", "=s,0")
        return arith.IndexCastOp(self.index, hidden).result

    def barrier(self) -> None:
        """A workgroup barrier with LDS fence, and a scheduling fence so LLVM keeps the phases apart."""
        gpu.BarrierOp(address_spaces=ir.Attribute.parse("[#gpu.address_space<workgroup>]"))
        fence()

    def stage_of(self, k: ir.Value, k_tile: int) -> ir.Value:
        """The LDS stage (of two) that holds the K tile starting at offset `k`."""
        return arith.RemUIOp(arith.DivUIOp(k, self.c(k_tile)).result, self.c(2)).result

    def priority(self, level: int) -> None:
        op = rocdl.SetPrioOp(level)
        if level:  # raise priority only once the first MFMA of the cluster has issued
            op.operation.attributes["iree_gpu.swap_mfma"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)


def build_pingpong8(schedule: PingPong8, dtype: str, mma: str, layout: str = "nt", lds_banks: int = 64) -> None:
    """Emit `util.func private @<ukernel_name>` at the current insertion point.

    In the NN layout B arrives K×N and LDS keeps it so, 16 bytes a write. With one LDS stage a lane reads 4 adjacent
    N values of each of its K rows and transposes them in registers (byte permutes): the wave's 64 N columns are
    taken in a permuted order (tile t's column c is column 4c + t), which leaves each lane's accumulators holding
    16 adjacent N columns of its row, stored as one run. (Writing B down the columns of an N-major tile instead,
    2 bytes a store, made the kernel wait on its LDS stores: 410 TFLOP/s PREDICTED at gfx942 8192³.) With two LDS
    stages (direct-to-LDS copies, nothing in registers to transpose) LDS holds B as stored, K rows of N, XOR-swizzled
    by 32-byte chunks (`transposed_swizzle`), and the fragments are read with transposing reads
    (`amdgpu.transpose_load`, ds_read_b64_tr_b16): 4 K values of one N column per lane and read, two per fragment.

    Each wave owns 8×4 output tiles of 16×16, held as two accumulators of 4 M tiles each: the first MFMA cluster
    of a K step updates the upper one over every K slice, the second cluster the lower one, so the two clusters
    stay equal whatever the number of K slices (one, for gfx950's 16x16x32 at K 32)."""
    k_tile = schedule.tile[2]
    mma_k = mma_shape(mma)[2]
    slices = k_tile // mma_k
    per_lane = mma_k // 4  # A and B elements one lane holds for one 16x16xK intrinsic
    blocks = fragment_blocks(mma)  # ... in this many runs along K, mma_k // blocks apart
    run = per_lane // blocks
    copy = LDS_ACCESS_BYTES // element_bytes(dtype)  # elements per 16-byte global load / LDS store
    swizzle = lds_swizzle(schedule)
    element = ir.Type.parse(dtype)
    f32 = ir.F32Type.get()
    operand = ir.RankedTensorType.get([ROWS, ir.ShapedType.get_dynamic_size()], element)
    b_operand = operand if layout == "nt" else ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size(), ROWS],
                                                                       element)
    result = ir.RankedTensorType.get([ROWS, ROWS], f32)
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    dma = schedule.lds_stages == 2  # two LDS stages filled by direct-to-LDS copies, no register staging
    staged = [2] if dma else []
    lds_type = ir.MemRefType.get([*staged, ROWS, k_tile], element, memory_space=workgroup)
    b_as_stored = dma and layout == "nn"  # B in LDS as K rows of N, read by transposing reads
    # One stage, NN: B in LDS as K rows of N too, each lane reading 4 adjacent N values per K (the N order permuted)
    b_rows = not dma and layout == "nn"
    b_lds_type = ir.MemRefType.get([*staged, k_tile, ROWS], element, memory_space=workgroup) \
        if b_as_stored or b_rows else lds_type
    b_swizzle = transposed_swizzle(ROWS, element_bytes(dtype), lds_banks, run) if b_as_stored else None
    lds_tiles = ir.MemRefType.get([*staged, 16, 16, slices, mma_k], element, memory_space=workgroup)
    acc_type = ir.VectorType.get([4, 4, 1, 4], f32)
    name = ukernel_name(schedule, dtype, layout)

    fn = util.FuncOp(name, ir.TypeAttr.get(ir.FunctionType.get([operand, b_operand, result], [result])),
                     sym_visibility="private")
    entry = fn.regions[0].blocks.append(operand, b_operand, result)
    b = KernelBuilder(element, entry)
    with ir.InsertionPoint(entry):
        lhs, rhs = entry.arguments[0], entry.arguments[1]
        zero = arith.ConstantOp(element, 0.0).result
        k_size = tensor.DimOp(lhs, b.c(1)).result
        lds = {"a": memref.AllocOp(lds_type, [], []).result, "b": memref.AllocOp(b_lds_type, [], []).result}
        tiles = {key: memref.ExpandShapeOp(lds_tiles, value, reassociation(dma), [], [*staged, 16, 16, slices, mma_k])
                 .result for key, value in lds.items() if key == "a" or not (b_as_stored or b_rows)}
        sources = {"a": fat_buffer(lhs), "b": fat_buffer(rhs)} if dma else {}
        init = tensor.EmptyOp([16, 16, 16, 16], f32).result
        forall = scf.ForallOp([0], [THREADS], [1], shared_outs=[init],
                              mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
        with ir.InsertionPoint(forall.body):
            tid, out = forall.body.arguments[0], forall.body.arguments[1]
            wave_m, wave_n, lane_group, lane_row = b.delinearize(tid, [2, 4, 4, 16])
            inner = b.mul(lane_group, run)  # the lane's (first run of) K values within a slice
            acc_column = b.mul(lane_group, 4)  # the lane's 4 accumulator columns (col_major 16x16 layout)
            m_upper = b.mul(wave_m, 8)
            m_lower = b.add(m_upper, b.c(4))
            n_outer = b.mul(wave_n, 4)
            # Copies: each group moves its 128 rows of A and of B, one 16-byte vector per thread and pass.
            group, in_group = b.delinearize(tid, [2, 256])
            col_groups = k_tile // copy
            rows_per_pass = 256 // col_groups
            row, col_group = b.delinearize(in_group, [rows_per_pass, col_groups])
            col = b.mul(col_group, copy)
            first_row = b.add(b.mul(group, 128), row)
            rows = [b.add(first_row, b.c(p * rows_per_pass)) for p in range(128 // rows_per_pass)]

            # B in NN: each group moves its 128 columns of the K×N tile, 16 bytes along N per thread and pass.
            b_col_groups = 128 // copy
            b_rows_per_pass = 256 // b_col_groups
            k_row, b_col_group = b.delinearize(in_group, [b_rows_per_pass, b_col_groups])
            n_col = b.add(b.mul(group, 128), b.mul(b_col_group, copy))
            k_rows = [b.add(k_row, b.c(p * b_rows_per_pass)) for p in range(k_tile // b_rows_per_pass)]

            def load(source: ir.Value, offsets: list[ir.Value]) -> ir.Value:
                piece = tensor.ExtractSliceOp(ir.RankedTensorType.get([1, copy], element), source, offsets, [], [],
                                              [ir.ShapedType.get_dynamic_size()] * 2, [1, copy], [1, 1]).result
                return b.read(piece, [b.c(0), b.c(0)], [1, copy], zero)

            def fetch(k_base: ir.Value) -> dict[str, list[ir.Value]]:
                k_col = b.add(k_base, col)
                fetched = {"a": [load(lhs, [r, k_col]) for r in rows]}
                if layout == "nt":
                    fetched["b"] = [load(rhs, [r, k_col]) for r in rows]
                else:
                    fetched["b"] = [load(rhs, [b.add(k_base, kr), n_col]) for kr in k_rows]
                return fetched

            def column(row: ir.Value, k: ir.Value) -> ir.Value:
                return k if swizzle is None else swizzle.emit(b, row, k)

            def store(fetched: dict[str, list[ir.Value]]) -> None:
                for r, value in zip(rows, fetched["a"]):
                    b.write(value, lds["a"], [r, column(r, col)])
                if layout == "nt":
                    for r, value in zip(rows, fetched["b"]):
                        b.write(value, lds["b"], [r, column(r, col)])
                else:  # K rows of N as stored, 16 bytes a write
                    for kr, value in zip(k_rows, fetched["b"]):
                        b.write(value, lds["b"], [kr, n_col])

            def fragment_position(s: int, r: int = 0) -> list[ir.Value]:
                """(K slice, offset in it) of this lane's run `r` of slice `s`, after the swizzle."""
                start = b.add(b.c(r * (mma_k // blocks)), inner)
                if swizzle is None:
                    return [b.c(s), start]
                return b.delinearize(column(lane_row, b.add(b.c(s * mma_k), start)), [slices, mma_k])

            def transposed_b(stage: ir.Value, s: int) -> ir.Value:
                """This lane's B fragments of K slice `s` (4 N tiles) from B stored K×N, by transposing reads of
                `per_read` K values each (4 at 16 bits, 8 at 8): lane L of a 16-lane block reads `per_read` N values
                of K row L // (16 / per_read) of the block's rows at column per_read·(L % (16 / per_read)) of the
                tile, and the read hands lane L the values of column L from the rows its block read. A lane's run
                of K values takes run / per_read reads; its fragment, `blocks` runs."""
                assert b_swizzle is not None  # B is stored as in memory only with its transposed swizzle
                per_read = 8 // element_bytes(dtype)
                row_in_block, col_in_block = b.delinearize(lane_row, [per_read, 16 // per_read])
                piece_type = ir.VectorType.get([per_read], element)
                whole = ir.VectorType.get([4, 1, 1, per_lane], element)
                value = zero_vector(whole)
                columns = [b.add(b.mul(b.add(n_outer, b.c(t)), 16), b.mul(col_in_block, per_read)) for t in range(4)]
                for r in range(blocks):
                    for h in range(run // per_read):
                        first = s * mma_k + r * (mma_k // blocks) + h * per_read
                        k_row = b.add(b.add(b.c(first), inner), row_in_block)
                        for t, n in enumerate(columns):
                            piece = amdgpu.TransposeLoadOp(piece_type, lds["b"],
                                                           [stage, k_row, b_swizzle.emit(b, k_row, n)]).result
                            value = vector.InsertStridedSliceOp(piece, value, [t, 0, 0, r * run + h * per_read],
                                                                [1]).result
                return value

            def b_of_rows(s: int) -> ir.Value:
                """This lane's B fragments of K slice `s` from B stored K×N, with the wave's 64 N columns permuted:
                tile t's column c is N column 4c + t of the wave's, so one read of 4 adjacent N values of a K row
                gives the lane's value of that K for all 4 tiles; a 4×K transpose in registers (byte permutes)
                makes the fragments. The accumulators then hold 16 adjacent N columns a lane (see the output write)."""
                reads = ir.VectorType.get([per_lane, 4], element)
                stacked = zero_vector(reads)
                n_first = b.add(b.mul(wave_n, 64), b.mul(lane_row, 4))
                for r in range(blocks):
                    for e in range(run):
                        k_row = b.add(b.c(s * mma_k + r * (mma_k // blocks) + e), inner)
                        piece = b.read(lds["b"], [k_row, n_first], [4], zero)
                        stacked = vector.InsertOp(piece, stacked, [], [r * run + e]).result
                by_tile = vector.TransposeOp(ir.VectorType.get([4, per_lane], element), stacked, [1, 0]).result
                return vector.ShapeCastOp(ir.VectorType.get([4, 1, 1, per_lane], element), by_tile).result

            def fragments(stage: ir.Value | None = None, parts: str = "ulb") -> list[tuple]:
                """Per K slice: upper A tiles, lower A tiles, B tiles (of LDS stage `stage` when there are two);
                `parts` names those read ("u", "l", "b"), the others are None."""
                at = [] if stage is None else [stage]
                starts = {"u": ("a", m_upper), "l": ("a", m_lower), "b": ("b", n_outer)}

                def read(p: str, s: int) -> ir.Value | None:
                    if p not in parts:
                        return None
                    if p == "b" and b_as_stored:
                        return transposed_b(stage, s)
                    if p == "b" and b_rows:
                        return b_of_rows(s)
                    runs = [b.read(tiles[starts[p][0]], [*at, starts[p][1], lane_row, *fragment_position(s, r)],
                                   [4, 1, 1, run], zero) for r in range(blocks)]
                    if blocks == 1:
                        return runs[0]
                    # tile t's runs side by side: flat, shuffled, and back (one shuffle of two flat runs)
                    assert blocks == 2
                    flat = [vector.ShapeCastOp(ir.VectorType.get([4 * run], element), piece).result for piece in runs]
                    order = [r * 4 * run + t * run + e for t in range(4) for r in range(2) for e in range(run)]
                    both = vector.ShuffleOp(flat[0], flat[1], order).result
                    return vector.ShapeCastOp(ir.VectorType.get([4, 1, 1, per_lane], element), both).result
                return [tuple(read(p, s) for p in "ulb") for s in range(slices)]

            def cluster(acc: ir.Value, current, half: int) -> ir.Value:
                for upper, lower, b_tiles in current:
                    acc = inner_tiled(mma, acc, (upper if half == 0 else lower, b_tiles), acc_type)
                return acc

            if dma:
                finals = _pingpong8_dma_steps(b, schedule, tid, group, lds, sources, fragments, cluster, column, k_size,
                                              element, copy, b_swizzle)
            else:
                finals = _register_prefetch_steps(b, k_tile, tid, fetch, store, fragments, cluster, k_size, acc_type)
            # A lane holds, per M tile, row lane_row of 4 N tiles × its 4 accumulator columns. With B's N order
            # permuted (b_rows) tile t's column c is the wave's N column 4c + t, so the lane's 16 values (c, t) are
            # 16 adjacent N columns, stored as one run; the upper and lower M tiles are adjacent (m_lower = m_upper
            # + 4) and go out as one slice of 8 (as two, IREE's bufferization could not tell them apart at some
            # shapes and staged one in LDS).
            if b_rows:  # (m, t, 1, c) -> (m, 1, c, t), then c and t as one run
                piece, at = [8, 1, 1, 16], [m_upper, lane_row, b.add(n_outer, lane_group), b.c(0)]
                runs = [vector.ShapeCastOp(ir.VectorType.get([4 * 16], f32), vector.TransposeOp(
                    ir.VectorType.get([4, 1, 4, 4], f32), acc, [0, 2, 3, 1]).result).result for acc in finals]
                both = vector.ShuffleOp(runs[0], runs[1], list(range(2 * 4 * 16))).result
                ordered = [vector.ShapeCastOp(ir.VectorType.get(piece, f32), both).result]
                places = [at]
            else:
                piece = [4, 1, 4, 4]
                ordered = [vector.TransposeOp(ir.VectorType.get(piece, f32), acc, [0, 2, 1, 3]).result
                           for acc in finals]
                places = [[m_outer, lane_row, n_outer, acc_column] for m_outer in (m_upper, m_lower)]
            results = []
            for value in ordered:
                empty = tensor.EmptyOp(piece, f32).result
                results.append(vector.TransferWriteOp(ir.RankedTensorType.get(piece, f32), value, empty,
                                                      [b.c(0)] * 4, ir.AffineMap.get_identity(4), [True] * 4).result)
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.regions[0].blocks[0]):
                for tile, place in zip(results, places):
                    tensor.ParallelInsertSliceOp(tile, out, place, [], [], [ir.ShapedType.get_dynamic_size()] * 4,
                                                 piece, [1, 1, 1, 1])
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], reassociation()).result])


def _register_prefetch_steps(b: KernelBuilder, k_tile: int, tid: ir.Value, fetch, store, fragments, cluster,
                             k_size: ir.Value, acc_type: ir.Type) -> list[ir.Value]:
    """The one-stage K loop (`PingPong8(lds_stages=1).program`); returns the upper and lower accumulators.

    The loop runs at least once (K is at least two tiles) and is built as a do-while (`scf.while`, the body in
    its condition region) whose bound LLVM cannot fold (`KernelBuilder.opaque`): with a folded bound LLVM unrolled
    a loop of two trips fully and spilled (fp8 NN at K of 3 tiles), and a plain loop over a hidden bound gets a
    zero-trip guard, whose second copy of the epilogue merged the two conditional barriers."""
    # Prologue: fill the LDS tile, then stagger the second group by one barrier.
    store(fetch(b.c(0)))
    leading = _stagger(b, tid)
    zeros = zero_vector(acc_type)
    bound = b.opaque(k_size)
    carried = [b.index, acc_type, acc_type]  # K offset, upper and lower accumulators
    loop = scf.WhileOp(carried, [b.c(k_tile), zeros, zeros])
    body = loop.before.blocks.append(*carried)
    with ir.InsertionPoint(body):
        k, upper_acc, lower_acc = body.arguments
        upcoming = fetch(k)  # the next tile, in flight under the reads and the first MFMA cluster
        current = fragments()  # phase 1: every K slice of this tile into registers
        b.barrier()
        b.priority(1)  # phase 2
        upper_acc = cluster(upper_acc, current, 0)
        b.priority(0)
        b.barrier()
        store(upcoming)  # phase 3: both groups have read this tile; overwrite it
        b.barrier()
        b.priority(1)  # phase 4
        lower_acc = cluster(lower_acc, current, 1)
        b.priority(0)
        b.barrier()
        following = b.add(k, b.c(k_tile))
        more = arith.CmpIOp(arith.CmpIPredicate.slt, following, bound).result
        scf.ConditionOp(more, [following, upper_acc, lower_acc])
    after = loop.after.blocks.append(*carried)
    with ir.InsertionPoint(after):
        scf.YieldOp(list(after.arguments))
    conditional_barrier(leading)  # re-align: the leading group waits for the lagging one
    last = fragments()  # the last tile
    return [cluster(loop.results[1], last, 0), cluster(loop.results[2], last, 1)]


def _pingpong8_dma_steps(b: KernelBuilder, schedule: PingPong8, tid: ir.Value, group: ir.Value, lds: dict,
                         sources: dict, fragments, cluster, column, k_size: ir.Value, element: ir.Type,
                         copy: int, b_swizzle: XorSwizzle | None = None) -> list[ir.Value]:
    """The two-stage K loop (`PingPong8(lds_stages=2).program`, gfx950), four phases a K step: (1) read B and the
    upper rows of this group's A half, (2) their MFMA cluster, (3) read the lower rows, (4) their cluster; the
    groups, one barrier apart, alternate memory and MFMA phases. Each part of a stage is refilled by
    direct-to-LDS copies in this group's next memory phase after its last reader: B's half and the upper A rows
    (for the step two on) in phase 3, the lower A rows (for the next step) in the next phase 1. A copy is waited
    for (by count: the copies are async, `gather_to_lds async`, so LLVM leaves their waits to these) at the end of
    the MFMA phase before its first reader, so the barrier after the wait makes every wave's copies land: the next
    step's B half at the end of phase 2, the lower rows at the end of phase 2, the next step's upper rows at the end
    of phase 4. The counts come from a ledger of the copies in flight (`ProgramBuilder`, as the program derives
    them), in the steady state for the loop body: its youngest copies are the same whatever came before, so a count
    that waits for the right copy there waits for it in the first iterations too.

    Each group copies its own 128 rows of A and of B: a wave's copy fills `rows` whole LDS rows, lane after lane,
    so the XOR swizzle is applied to the column each lane fetches (XOR is its own inverse). With `b_swizzle` (NN: B
    stored K×N in LDS as in memory), each group copies its half of B's K rows (all N). Returns the upper and lower
    accumulators."""
    k_tile = schedule.tile[2]
    wave, lane = b.delinearize(tid, [2, 4, 64])[1:]
    acc_type = ir.VectorType.get([4, 4, 1, 4], ir.F32Type.get())

    def copies_of(op: str) -> tuple:
        """(LDS rows a group copies, row width in elements, the global indices of a row's element at K offset
        k_base): a wave's copy fills whole LDS rows, lane after lane, and each lane fetches the element its slot
        holds under the swizzle (XOR is its own inverse)."""
        if op == "b" and b_swizzle is not None:  # K rows of N
            return k_tile // 2, ROWS, lambda k_base, row, col: [b.add(k_base, row), b_swizzle.emit(b, row, col)]
        return 128, k_tile, lambda k_base, row, col: [row, b.add(k_base, column(row, col))]  # rows of K

    def passes(part: str) -> list[int]:
        """The copy passes of `part` ("b": B's half; "au", "al": the upper and lower 64 rows of A's half)."""
        group_rows, width, _ = copies_of(part[0])
        every = list(range(group_rows // (4 * (64 // (width // copy)))))
        return every if part == "b" else every[:len(every) // 2] if part == "au" else every[len(every) // 2:]

    ledger = ProgramBuilder()  # copies in flight per wave, labelled (part, tile relative to the current step)

    def refill(part: str, tile: int, k: ir.Value) -> None:
        """Copy `part` of the K tile `tile` steps after the one at offset `k` into that tile's stage."""
        k_base = b.add(k, b.c(tile * k_tile))
        stage = b.stage_of(k_base, k_tile)
        group_rows, width, source_of = copies_of(part[0])
        rows = 64 // (width // copy)  # LDS rows one wave's copy fills
        row_in_copy, slot = b.delinearize(lane, [rows, width // copy])
        for p in passes(part):  # a group's 4 waves move its rows, 4·rows a pass
            first = b.add(b.mul(group, group_rows), b.mul(b.add(b.c(p * 4), wave), rows))
            amdgpu.GatherToLDSOp(sources[part[0]], source_of(k_base, b.add(first, row_in_copy), b.mul(slot, copy)),
                                 lds[part[0]], [stage, first, b.c(0)], ir.VectorType.get([copy], element),
                                 async_=True)
        ledger.load(f"{part}{tile:+d}", len(passes(part)))

    def wait_for(*labels: str) -> None:
        before = len(ledger.ops)
        ledger.wait_writes(*labels)
        if len(ledger.ops) > before:
            amdgpu.MemoryCounterWaitOp(load=ledger.ops[-1].value)

    def mfma_phase(acc: ir.Value, parts, half: int, *waits: str) -> ir.Value:
        b.priority(1)
        acc = cluster(acc, parts, half)
        b.priority(0)
        wait_for(*waits)
        rocdl.SBarrierOp()  # no LDS access in this phase to fence
        fence()
        return acc

    def step(accs: list[ir.Value], k: ir.Value, lower_next: bool, refills: bool) -> list[ir.Value]:
        """One K step on the stage holding K offset `k`; `lower_next`: the next step exists (its lower A rows are
        copied now); `refills`: so does the one after (its B half and upper rows are copied in phase 3)."""
        stage = b.stage_of(k, k_tile)
        if lower_next:
            refill("al", 1, k)  # phase 1; this group read those rows in the step before's phase 3
        current = fragments(stage, "ub")
        b.barrier()
        upper = mfma_phase(accs[0], current, 0, "al+0", *(("b+1",) if lower_next else ()))
        if refills:  # phase 3: both groups read this stage's B in their phase 1, this group its upper rows
            refill("b", 2, k)
            refill("au", 2, k)
        lower = fragments(stage, "l")
        b.barrier()
        lower_parts = [(None, low, bt) for (_, low, _), (_, _, bt) in zip(lower, current)]
        accs = [upper, mfma_phase(accs[1], lower_parts, 1, *(("au+1",) if lower_next else ()))]
        ledger.vm = [shifted(label) for label in ledger.vm]  # the next step's view
        return accs

    def shifted(label: str) -> str:
        part, tile = label.rstrip("+-0123456789"), int(label.lstrip("abdlu"))
        return f"{part}{tile - 1:+d}"

    # Prologue: tile 0 whole, tile 1 but its lower A rows (step 0 copies those), all landed before the stagger.
    zero = b.c(0)
    for part in ("b", "au", "al"):
        refill(part, 0, zero)
    for part in ("b", "au"):
        refill(part, 1, zero)
    amdgpu.MemoryCounterWaitOp(load=0)  # the ledger's prologue entries retire here; the loop assumes its own
    leading = _stagger(b, tid)
    zeros = zero_vector(acc_type)
    last_refill = arith.SubIOp(k_size, b.c(2 * k_tile)).result
    # The loop body's ledger in the steady state, entering step j: the lower rows of j, the B half and upper rows
    # of j + 1 (the upper rows of j were waited for at the end of step j - 1).
    ledger.vm = ["al+0"] * len(passes("al")) + ["b+1"] * len(passes("b")) + ["au+1"] * len(passes("au"))
    steady = list(ledger.vm)
    loop = scf.ForOp(b.c(0), last_refill, b.c(k_tile), [zeros, zeros])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(step(list(loop.inner_iter_args), loop.induction_variable, True, True))
    assert ledger.vm == steady, (ledger.vm, steady)  # the body leaves the state it assumed
    accs = step(list(loop.results), last_refill, True, False)  # the last two steps refill no B or upper rows
    accs = step(accs, arith.AddIOp(last_refill, b.c(k_tile)).result, False, False)
    conditional_barrier(leading)  # re-align: the leading group waits for the lagging one
    return accs


def fat_buffer(operand: ir.Value) -> ir.Value:
    """`operand` (K-contiguous rows) as a buffer-resource memref, the source a direct-to-LDS load reads."""
    tensor_type = ir.RankedTensorType(operand.type)
    cast = iree_gpu.BufferResourceCastOp(tensor_type, operand).result
    dynamic = ir.ShapedType.get_dynamic_size()
    memref_type = ir.MemRefType.get(list(tensor_type.shape), tensor_type.element_type,
                                    ir.Attribute.parse("strided<[?, 1], offset: ?>"),
                                    ir.Attribute.parse("#amdgpu.address_space<fat_raw_buffer>"))
    assert dynamic in tensor_type.shape  # K
    return ir.Operation.create("bufferization.to_buffer", results=[memref_type], operands=[cast],
                               attributes={"read_only": ir.UnitAttr.get()}).result


def reassociation(staged: bool = False) -> ir.ArrayAttr:
    """[ROWS, K] (after a leading stage dimension, if `staged`) as [16, 16, slices, MMA K]."""
    i64 = ir.IntegerType.get_signless(64)
    groups = ([0], [1, 2], [3, 4]) if staged else ([0, 1], [2, 3])
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in dims]) for dims in groups])


def inner_tiled(mma: str, acc: ir.Value, operands: tuple[ir.Value, ir.Value], acc_type: ir.Type,
                col_major: bool = True) -> ir.Value:
    """One distributed intrinsic: `operands` hold this lane's fragments. `col_major` transposes the accumulator
    layout; IREE implements it by swapping the MFMA operands, and for WMMA not at all, so WMMA kernels pass
    False."""
    layout = f"#iree_gpu.mma_layout<{mma}, col_major = true>" if col_major else f"#iree_gpu.mma_layout<{mma}>"
    return iree_codegen.InnerTiledOp(
        list(operands), [acc], _contraction(), _iterators(),
        ir.Attribute.parse(layout),
        ir.Attribute.parse("#iree_gpu.mma_semantics<distributed = true, opaque = false>"),
        results=[acc_type]).results[0]


def fence() -> None:
    """A scheduling barrier LLVM moves no instruction across."""
    rocdl.SchedBarrier(ir.Attribute.parse("#rocdl.sched_group_mask<none>"))


def zero_vector(vec_type: ir.Type) -> ir.Value:
    """A vector of zeros of its element type (accumulators, and vectors built up piece by piece)."""
    zero = ir.FloatAttr.get(ir.VectorType(vec_type).element_type, 0.0)
    return arith.ConstantOp(vec_type, ir.DenseElementsAttr.get_splat(vec_type, zero)).result


def _stagger(b: KernelBuilder, tid: ir.Value) -> ir.Value:
    """The lagging group (waves 4-7) meets one barrier more before the K loop; returns the condition "in the
    leading group", for the barrier that re-aligns the groups after it."""
    leading = arith.CmpIOp(arith.CmpIPredicate.slt, tid, b.c(THREADS // 2)).result
    lagging = arith.CmpIOp(arith.CmpIPredicate.sge, tid, b.c(THREADS // 2)).result
    conditional_barrier(lagging)
    b.barrier()
    return leading


def conditional_barrier(condition: ir.Value) -> None:
    """A barrier only the waves where `condition` holds execute. It is a full workgroup barrier with its LDS
    fence (`s_waitcnt lgkmcnt(0)` first): the stagger barrier is where the lagging group's prologue stores must
    have landed before the leading group, meeting it at its own barrier, reads them. (A bare `s_barrier` here
    raced: found by the emulator, not by the schedule model, which had the wait.)"""
    branch = scf.IfOp(condition)
    with ir.InsertionPoint(branch.then_block):
        amdgpu.MemoryCounterWaitOp(ds=0)  # this group's LDS stores and reads have completed
        rocdl.SBarrierOp()  # not gpu.barrier: IREE folds that into the unconditional one after it
        scf.YieldOp([])


def _contraction() -> ir.ArrayAttr:
    i, j, k = (ir.AffineDimExpr.get(d) for d in range(3))
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(3, 0, exprs)) for exprs in ([i, k], [j, k], [i, j])])


def _iterators() -> ir.ArrayAttr:
    return ir.Attribute.parse("[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, "
                              "#linalg.iterator_type<reduction>]")
