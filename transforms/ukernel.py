"""The one-LDS-stage ping-pong as an MLIR ukernel (`util.func`), built with the Python bindings.

IREE inlines a ukernel in place of a matched contraction when the tuning spec imports it and tags the op with
`iree_codegen.ukernel` (compile with `--iree-rocm-enable-tensor-ukernels`). The body follows the program of
`warpgroups.PingPong8(lds_stages=1)`, which `hazards.check` proves race-free: a prologue fills the LDS tile,
the second group of four waves is staggered by one conditional barrier, and each K step has four barrier
phases: (1) LDS reads of every K slice into registers, (2) global fetch of the next tile into registers under
the first MFMA cluster at raised priority, (3) stores of the fetched tile into LDS, (4) the second MFMA cluster;
the first group re-aligns after the loop. Scope: NT layout (B stored N×K, K contiguous in both operands),
f16/bf16 with the 16x16x16 MFMA of gfx942, block tile 256×256×K. The per-lane fragment layout is the one IREE
defines for the intrinsic (`col_major` accumulator). Not yet run anywhere: numerics await the emulator.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import affine, arith, gpu, iree_codegen, memref, rocdl, scf, tensor, util, vector

from .warpgroups import PingPong8

THREADS = 512  # 8 waves of 64
ROWS = 256  # block tile M = N
MFMA_K = 16


class UkernelError(ValueError):
    """A ukernel request outside what the generator covers; the message is one sentence."""


def ukernel_name(schedule: PingPong8, dtype: str) -> str:
    return f"pingpong8_{dtype}_k{schedule.tile[2]}"


def check_problem(schedule: PingPong8, gemm, target) -> None:
    """One sentence for anything the generated ukernel cannot do for `gemm` on `target`."""
    from .hazards import check
    from .warpgroups import check_lds

    if target.name != "gfx942":
        raise UkernelError(f"the pingpong8 ukernel is generated for gfx942's 16x16x16 MFMA; {target.name} is not "
                           "covered yet.")
    check_supported(schedule, gemm.dtype, gemm.layout, f"MFMA_F32_16x16x16_{gemm.dtype.upper()}")
    k_tile = schedule.tile[2]
    if gemm.batched or gemm.m % ROWS or gemm.n % ROWS or gemm.k % k_tile or gemm.k < 2 * k_tile:
        raise UkernelError(f"the pingpong8 ukernel needs M and N multiples of {ROWS}, K a multiple of {k_tile} "
                           f"(at least {2 * k_tile}) and no batch; {gemm.shape_name} is not (use --pipeline auto).")
    if gemm.epilogue.kind != "none":
        raise UkernelError("the pingpong8 ukernel replaces the contraction only; epilogues are not fused into it.")
    check_lds(schedule, target.lds_bytes, target.name)
    check(schedule.program(4))  # the schedule the body follows must be race-free


def check_supported(schedule: PingPong8, dtype: str, layout: str, mma: str) -> None:
    m, n, k = schedule.tile
    if layout != "nt":
        raise UkernelError(f"the pingpong8 ukernel covers the NT layout (B stored N×K); {layout.upper()} is not "
                           "generated yet.")
    if dtype not in ("f16", "bf16") or mma != f"MFMA_F32_16x16x16_{dtype.upper()}":
        raise UkernelError(f"the pingpong8 ukernel uses MFMA_F32_16x16x16 on f16/bf16; {mma} on {dtype} is not "
                           "generated yet.")
    if (m, n) != (ROWS, ROWS) or k % (2 * MFMA_K) or schedule.lds_stages != 1 or schedule.stagger != 1:
        raise UkernelError(f"the pingpong8 ukernel takes a 256x256xK tile with K a multiple of 32, one LDS stage "
                           f"and a one-phase stagger, not {m}x{n}x{k} with {schedule.lds_stages} stage(s).")


class _Builder:
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

    def write(self, value: ir.Value, dest: ir.Value, indices: list[ir.Value]) -> None:
        rank = len(indices)
        identity = ir.AffineMap.get_minor_identity(rank, ir.VectorType(value.type).rank)
        vector.TransferWriteOp(None, value, dest, indices, identity, [True] * ir.VectorType(value.type).rank)

    def barrier(self) -> None:
        """A workgroup barrier with LDS fence, and a scheduling fence so LLVM keeps the phases apart."""
        gpu.BarrierOp(address_spaces=ir.Attribute.parse("[#gpu.address_space<workgroup>]"))
        rocdl.SchedBarrier(ir.Attribute.parse("#rocdl.sched_group_mask<none>"))

    def priority(self, level: int) -> None:
        op = rocdl.SetPrioOp(level)
        if level:  # raise priority only once the first MFMA of the cluster has issued
            op.operation.attributes["iree_gpu.swap_mfma"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)


def build_pingpong8(schedule: PingPong8, dtype: str) -> None:
    """Emit `util.func private @<ukernel_name>` at the current insertion point."""
    k_tile = schedule.tile[2]
    slices = k_tile // MFMA_K
    element = ir.Type.parse(dtype)
    f32 = ir.F32Type.get()
    operand = ir.RankedTensorType.get([ROWS, ir.ShapedType.get_dynamic_size()], element)
    result = ir.RankedTensorType.get([ROWS, ROWS], f32)
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    lds_type = ir.MemRefType.get([ROWS, k_tile], element, memory_space=workgroup)
    lds_tiles = ir.MemRefType.get([16, 16, slices, MFMA_K], element, memory_space=workgroup)
    acc_type = ir.VectorType.get([8, 4, 1, 4], f32)
    name = ukernel_name(schedule, dtype)

    fn = util.FuncOp(name, ir.TypeAttr.get(ir.FunctionType.get([operand, operand, result], [result])),
                     sym_visibility="private")
    entry = fn.regions[0].blocks.append(operand, operand, result)
    b = _Builder(element, entry)
    with ir.InsertionPoint(entry):
        lhs, rhs = entry.arguments[0], entry.arguments[1]
        zero = arith.ConstantOp(element, 0.0).result
        k_size = tensor.DimOp(lhs, b.c(1)).result
        lds = {"a": memref.AllocOp(lds_type, [], []).result, "b": memref.AllocOp(lds_type, [], []).result}
        reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)
                                                            for d in dims]) for dims in ([0, 1], [2, 3])])
        tiles = {key: memref.ExpandShapeOp(lds_tiles, value, reassociation, [], [16, 16, slices, MFMA_K]).result
                 for key, value in lds.items()}
        init = tensor.EmptyOp([16, 16, 16, 16], f32).result
        forall = scf.ForallOp([0], [THREADS], [1], shared_outs=[init],
                              mapping=ir.Attribute.parse("[#gpu.thread<linear_dim_0>]"))
        with ir.InsertionPoint(forall.body):
            tid, out = forall.body.arguments[0], forall.body.arguments[1]
            wave_m, wave_n, lane_group, lane_row = b.delinearize(tid, [2, 4, 4, 16])
            inner = b.mul(lane_group, 4)
            m_outer, n_outer = b.mul(wave_m, 8), b.mul(wave_n, 4)
            # Copies: each group moves its 128 rows of A and of B, 8 elements per thread and pass.
            group, in_group = b.delinearize(tid, [2, 256])
            col_groups = k_tile // 8
            rows_per_pass = 256 // col_groups
            row, col_group = b.delinearize(in_group, [rows_per_pass, col_groups])
            col = b.mul(col_group, 8)
            first_row = b.add(b.mul(group, 128), row)
            rows = [b.add(first_row, b.c(p * rows_per_pass)) for p in range(128 // rows_per_pass)]

            def fetch(k_offset: ir.Value) -> dict[str, list[ir.Value]]:
                fetched = {}
                for key, source in (("a", lhs), ("b", rhs)):
                    fetched[key] = []
                    for r in rows:
                        piece = tensor.ExtractSliceOp(ir.RankedTensorType.get([1, 8], element), source, [r, k_offset],
                                                      [], [], [ir.ShapedType.get_dynamic_size()] * 2, [1, 8],
                                                      [1, 1]).result
                        fetched[key].append(b.read(piece, [b.c(0), b.c(0)], [1, 8], zero))
                return fetched

            def store(fetched: dict[str, list[ir.Value]]) -> None:
                for key, values in fetched.items():
                    for r, value in zip(rows, values):
                        b.write(value, lds[key], [r, col])

            def fragments() -> list[tuple[ir.Value, ir.Value]]:
                return [(b.read(tiles["a"], [m_outer, lane_row, b.c(s), inner], [8, 1, 1, 4], zero),
                         b.read(tiles["b"], [n_outer, lane_row, b.c(s), inner], [4, 1, 1, 4], zero))
                        for s in range(slices)]

            def mfma(acc: ir.Value, operands: tuple[ir.Value, ir.Value]) -> ir.Value:
                return iree_codegen.InnerTiledOp(
                    list(operands), [acc], _contraction(), _iterators(),
                    ir.Attribute.parse(f"#iree_gpu.mma_layout<MFMA_F32_16x16x16_{dtype.upper()}, col_major = true>"),
                    ir.Attribute.parse("#iree_gpu.mma_semantics<distributed = true, opaque = false>"),
                    results=[acc_type]).results[0]

            # Prologue: fill the LDS tile, then stagger the second group by one barrier.
            store(fetch(col))
            leading = arith.CmpIOp(arith.CmpIPredicate.slt, tid, b.c(THREADS // 2)).result
            lagging = arith.CmpIOp(arith.CmpIPredicate.sge, tid, b.c(THREADS // 2)).result
            _conditional_barrier(lagging)
            b.barrier()
            acc0 = arith.ConstantOp(acc_type, ir.DenseElementsAttr.get_splat(
                acc_type, ir.FloatAttr.get(f32, 0.0))).result
            loop = scf.ForOp(b.c(k_tile), k_size, b.c(k_tile), [acc0])
            with ir.InsertionPoint(loop.body):
                acc = loop.inner_iter_args[0]
                current = fragments()  # phase 1: every K slice of this tile into registers
                b.barrier()
                upcoming = fetch(b.add(loop.induction_variable, col))  # phase 2: next tile under the MFMAs
                b.priority(1)
                for operands in current[: slices // 2]:
                    acc = mfma(acc, operands)
                b.priority(0)
                b.barrier()
                store(upcoming)  # phase 3: both groups have read this tile; overwrite it
                b.barrier()
                b.priority(1)  # phase 4
                for operands in current[slices // 2:]:
                    acc = mfma(acc, operands)
                b.priority(0)
                b.barrier()
                scf.YieldOp([acc])
            _conditional_barrier(leading)  # re-align: the leading group waits for the lagging one
            acc = loop.results[0]
            for operands in fragments():  # the last tile
                acc = mfma(acc, operands)
            rows_first = vector.TransposeOp(ir.VectorType.get([8, 1, 4, 4], f32), acc, [0, 2, 1, 3]).result
            empty = tensor.EmptyOp([8, 1, 4, 4], f32).result
            tile = vector.TransferWriteOp(ir.RankedTensorType.get([8, 1, 4, 4], f32), rows_first, empty,
                                          [b.c(0)] * 4, ir.AffineMap.get_identity(4), [True] * 4).result
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.regions[0].blocks[0]):
                dynamic = ir.ShapedType.get_dynamic_size()
                tensor.ParallelInsertSliceOp(tile, out, [m_outer, lane_row, n_outer, inner], [], [],
                                             [dynamic] * 4, [8, 1, 4, 4], [1, 1, 1, 1])
        collapse = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)
                                                       for d in dims]) for dims in ([0, 1], [2, 3])])
        util.ReturnOp([tensor.CollapseShapeOp(result, forall.results[0], collapse).result])


def _conditional_barrier(condition: ir.Value) -> None:
    branch = scf.IfOp(condition)
    with ir.InsertionPoint(branch.then_block):
        rocdl.SBarrierOp()
        scf.YieldOp([])


def _contraction() -> ir.ArrayAttr:
    i, j, k = (ir.AffineDimExpr.get(d) for d in range(3))
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(3, 0, exprs)) for exprs in ([i, k], [j, k], [i, j])])


def _iterators() -> ir.ArrayAttr:
    return ir.Attribute.parse("[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, "
                              "#linalg.iterator_type<reduction>]")
