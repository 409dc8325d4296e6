"""The full transform-dialect codegen route: a schedule becomes a whole `TransformDialectCodegen` library, for CUDA
(below) and, as the lane route, for ROCm (last paragraph).

`codegen_library` builds, with the MLIR Python bindings, the file passed to
`iree-compile --iree-codegen-transform-dialect-library=FILE@__kernel_config`: `@__kernel_config` finds the GEMM's
contraction (element types, indexing maps and sizes) and gives its function a `translation_info` naming the
`@codegen` sequence, which then lowers the dispatch by itself, in phases that each run in their own
`transform.include` scope (so no handle outlives an op a later phase replaces):

- `tile`: block tile as an `scf.forall` over workgroups, the fill fused into it, the K loop, A and B promoted to
  shared memory, the warp grid as an `scf.forall` over warps (linearly mapped, see `_WARP_MAPPING`), vectorize,
  bufferize, map the foralls to workgroups and threads, and spread the global->shared copies over all threads.
- `accumulate`: unroll the warp contraction into native 16x8x16 pieces, then hoist the accumulator's reads and
  writes out of the K loop and forward the fill into it, so the accumulator lives in registers for the whole K
  loop and is stored once.
- `stage`: multi-buffer the shared tiles (one buffer per pipeline stage) and pad their rows against bank
  conflicts; `mma`: contraction -> `mma.sync`, shared reads -> `ldmatrix`; `pipeline`: global->shared copies ->
  `cp.async` groups, software-pipelined `stages` deep, and from 3 stages on the `ldmatrix` fragments too (one
  barrier per K step, see `prefetches_fragments`).

- `raster` (raster order only): the block ids become the tile of a grouped launch order (`raster_tile`), through
  private functions imported from this library into the dispatch and inlined there.

bf16 runs the f16 kernel on the same 16-bit words. IREE 3.13's vector->nvgpu conversion has no bf16 fragment type
(upstream `nvgpu::getMmaSyncRegisterType`), but `cp.async` and `ldmatrix` move b16 words whatever they hold and the
bf16 `mma.sync` takes its operands in the same registers as the f16 one. So the program bitcasts A and B to f16
(`flow.tensor.bitcast`, no copy), this library compiles that f16 GEMM, and `retype_mma` turns every f16 `mma.sync`
of the resulting PTX into the bf16 one, which the second compile links in its place
(`--iree-hal-substitute-executable-object`, pipelines/flow.py). Nothing else in the kernel reads the element type:
the accumulator and the output are f32. NT and TN reach the same NN kernel through a transpose dispatch
(`kernel_gemm`).

`model_library` puts several GEMMs of one program, each with its own schedule, into one library: their phases,
codegen sequences, matchers and raster functions are named apart (`g<i>_`), and the one `@__kernel_config` points
each matched dispatch at its GEMM's sequence. Its matchers take a contraction only when it writes the dispatch's
output itself: a dispatch where IREE fused an elementwise consumer (e.g. a truncf to f16) keeps IREE's pipeline,
since the plain kernel has no epilogue.

The schedule is the same `Schedule` dataclass the other routes read (block tile, K step, warp grid, stages,
padding, workgroup order); `check` says in one sentence what this route cannot do (batches, epilogues).
Problems that are not whole tiles are compiled as `padded_gemm`: the route's program zero-pads the operands.
On ROCm targets the library is the lane route instead (`check_lanes`, `_lanes_tile`, `_lanes_lower`).
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import affine, func
from iree.compiler.dialects import preprocessing_transform as match
from iree.compiler.dialects import transform
from iree.compiler.dialects.transform import loop, structured

from .problem import ACC_DTYPE, Gemm
from .schedule import Schedule, ScheduleError, check_raster_rows, element_bytes, mma_shape
from .tuning_spec import ENTRY_POINT

CODEGEN_SEQUENCE = "codegen"
PHASES = ("tile", "accumulate", "stage", "synchronize", "mma", "pipeline", "cleanup")
# The raster order replaces the block ids (hal.interface.workgroup.id[0] over N tiles, [1] over M tiles) with calls
# to these functions, imported from the library into the dispatch and inlined there.
RASTER_FUNCTIONS = ("__codegen_raster_tile_n", "__codegen_raster_tile_m")
# The one intrinsic the upstream vector->nvgpu conversion emits for f16 (m16n8k16 mma.sync, f32 accumulator).
CODEGEN_MMA = "NV_MMA_SYNC_F32_16x8x16_F16"
# The intrinsic each input type ends up on, and the type the library compiles it as (see the module docstring).
CODEGEN_MMAS = {"f16": CODEGEN_MMA, "bf16": "NV_MMA_SYNC_F32_16x8x16_BF16"}
KERNEL_DTYPE = "f16"
# Shared-memory rows are padded by this many bits (IREE's reduce_shared_memory_bank_conflicts).
ROW_PADDING_BITS = 128
MAX_STAGES = 4
# Registers per thread kept free of the accumulator for fragments, addresses and copies. The sm_80 sweep on an H100
# (results/h100/tune_codegen_sm80_f16_8192.md) ran 256x256 tiles on 512 threads, where 64K registers leave 128 per
# thread for a 128-register accumulator, at 9-78 TFLOP/s against 260-273 for tiles that left this much room.
SPARE_REGISTERS = 64
# Warps are mapped linearly (workgroup = [threads, 1, 1]) so that the fill and the contraction compute their
# warp offsets with identical index expressions: with 2-D thread ids they differed in operand order, store-to-load
# forwarding could not match them, and every lane wrote the whole warp tile of zeros to global memory.
_WARP_MAPPING = ("#gpu.warp<linear_dim_1>", "#gpu.warp<linear_dim_0>")


def codegen_mma(dtype: str) -> str:
    """The MMA intrinsic of the route's kernel for input type `dtype` (f16 when the route does not take it)."""
    return CODEGEN_MMAS.get(dtype, CODEGEN_MMA)


def retyped(gemm: Gemm) -> bool:
    """Whether `gemm` runs the f16 kernel with its mma.sync retyped (bf16)."""
    return gemm.dtype != KERNEL_DTYPE


def kernel_gemm(gemm: Gemm) -> Gemm:
    """The GEMM the library compiles: f16 (see `retype_mma`) and NN. NT and TN problems reach it with the
    transposed operand rewritten row-major by a separate dispatch (`transforms.problem.build_module`): the upstream
    conversion reads a K-contiguous B as 16x16 ldmatrix.x4 blocks and hands each n8 mma.sync two N blocks instead
    of two K halves (wrong results on an H100), and cp.async cannot transpose while it copies."""
    return gemm.with_(dtype=KERNEL_DTYPE, layout="nn")


def transposed_operands(gemm: Gemm) -> tuple[str, ...]:
    """The operands the program transposes before the kernel: ('A',) for TN, ('B',) for NT."""
    return {"nn": (), "nt": ("B",), "tn": ("A",)}[gemm.layout]


def retype_mma(ptx: str, gemm: Gemm, target) -> str:
    """The f16 kernel's PTX with each f16 mma.sync replaced by the one of `gemm`'s input type (same operands)."""
    f16, wanted = (target.mma[codegen_mma(dtype)].opcode for dtype in (KERNEL_DTYPE, gemm.dtype))
    count = ptx.count(f16)
    if count == 0:
        raise ScheduleError(f"the f16 kernel compiled for {gemm.dtype} has no {f16} to retype.")
    return ptx.replace(f16, wanted)


def operand_note(gemm: Gemm) -> str:
    """How `gemm`'s operands reach the route's f16 NN kernel, for reports ('' when directly)."""
    notes = [f"{name} transposed into row-major by its own dispatch" for name in transposed_operands(gemm)]
    if retyped(gemm):
        notes.append(f"{gemm.dtype} words run the f16 kernel with its mma.sync retyped to {gemm.dtype}")
    return "; ".join(notes)


def warp_tile(schedule: Schedule) -> tuple[int, int]:
    (bm, bn), (wm, wn) = schedule.tile.workgroup, schedule.tile.warps
    return bm // wm, bn // wn


def threads(schedule: Schedule, wave_size: int = 32) -> int:
    return schedule.waves * wave_size


def shared_bytes(schedule: Schedule, gemm: Gemm) -> int:
    """Shared memory of the plan: A (BM×BK) and B (BK×BN) tiles, rows padded, one per stage."""
    (bm, bn), bk, eb = schedule.tile.workgroup, schedule.tile.k, element_bytes(gemm.dtype)
    pad = ROW_PADDING_BITS // 8 // eb if schedule.swizzle.lds == "pad" else 0
    per_stage = bm * (bk + pad) + bk * (bn + pad)  # the kernel is NN (`kernel_gemm`)
    return per_stage * eb * max(1, schedule.staging.prefetch_stages)


def mma_per_k_step(schedule: Schedule) -> int:
    """mma.sync instructions one warp issues per K step."""
    mm, mn, mk = mma_shape(CODEGEN_MMA)
    (tm, tn), bk = warp_tile(schedule), schedule.tile.k
    return (tm // mm) * (tn // mn) * (bk // mk)


def prefetches_fragments(schedule: Schedule) -> bool:
    """Whether the K loop also software-pipelines the ldmatrix fragments (`pipeline_shared_memory_copies
    <{use_mma_sync}>`): the next step's first k16 fragments are loaded right after the step's only barrier, before
    the mma.sync that finish the current step. With 2 stages that schedule waits for the copy it has just
    committed (`cp.async.wait_group 0`), so 2 stages pipeline the copies only, with two barriers per step."""
    return schedule.staging.prefetch_stages >= 3


def copy_groups_in_flight(schedule: Schedule) -> int:
    """The N of the K loop's `cp.async.wait_group N`: copy groups still in flight while a step computes."""
    stages = schedule.staging.prefetch_stages
    return max(0, stages - 2 if prefetches_fragments(schedule) else stages - 1)


def barriers_per_k_step(schedule: Schedule) -> int:
    """Workgroup barriers in the K loop: one after the copy wait when the fragments are prefetched; otherwise also
    one before the copies that refill the buffer the step has just read."""
    return 1 if prefetches_fragments(schedule) else 2


def padded_gemm(schedule: Schedule, gemm: Gemm) -> Gemm:
    """The problem the kernel computes: M, N and K rounded up to whole block tiles and K steps. The route's program
    zero-pads A and B to it and slices the result back (`problem.build_module(..., padded=)`); equal to `gemm`
    when the tiles divide it."""
    (bm, bn), bk = schedule.tile.workgroup, schedule.tile.k
    up = lambda size, tile: -(-size // tile) * tile  # noqa: E731
    return gemm.with_(m=up(gemm.m, bm), n=up(gemm.n, bn), k=up(gemm.k, bk))


def tile_grid(schedule: Schedule, gemm: Gemm) -> tuple[int, int]:
    """Block tiles along M and N of the (padded) problem: the launch grid is N tiles wide (x) and M tiles high (y)."""
    padded, (bm, bn) = padded_gemm(schedule, gemm), schedule.tile.workgroup
    return padded.m // bm, padded.n // bn


def raster_tile(schedule: Schedule, gemm: Gemm, x: int, y: int) -> tuple[int, int]:
    """(M tile, N tile) that block (x, y) computes. Row order: (y, x). Raster order: the launch order
    (linear id y·Nt + x) walks groups of `group_rows` rows of tiles, each column by column, so the blocks that run
    together read few A row panels and B column panels (`check` asks for groups that divide the rows)."""
    if schedule.swizzle.workgroup_order != "raster":
        return y, x
    nt, rows = tile_grid(schedule, gemm)[1], schedule.swizzle.group_rows
    group, within = divmod(y * nt + x, rows * nt)
    return group * rows + within % rows, within // rows


def tile_block_ids(schedule: Schedule, gemm: Gemm) -> tuple[frozenset[str], frozenset[str]]:
    """Which block ids (`x`, `y`) the M tile and the N tile of a block depend on in the schedule's launch order,
    found by walking the grid. Row order: ({y}, {x}). Raster order usually needs both for both, but where the
    groups span whole powers of two the N tile of 8 rows × 8 columns of tiles is y mod 8: it depends on y alone."""
    mt, nt = tile_grid(schedule, gemm)
    tiles = {(x, y): raster_tile(schedule, gemm, x, y) for x in range(nt) for y in range(mt)}
    ids = []
    for axis in (0, 1):
        on_x = any(tiles[x, y][axis] != tiles[0, y][axis] for x in range(nt) for y in range(mt))
        on_y = any(tiles[x, y][axis] != tiles[x, 0][axis] for x in range(nt) for y in range(mt))
        ids.append(frozenset("x" * on_x + "y" * on_y))
    return ids[0], ids[1]


def raster_block(schedule: Schedule, gemm: Gemm, m: int, n: int) -> tuple[int, int]:
    """The inverse of `raster_tile`: the block (x, y) that computes tile (m, n)."""
    if schedule.swizzle.workgroup_order != "raster":
        return n, m
    nt, rows = tile_grid(schedule, gemm)[1], schedule.swizzle.group_rows
    group, row = divmod(m, rows)
    y, x = divmod(group * rows * nt + n * rows + row, nt)
    return x, y


def _check_plain(gemm: Gemm) -> None:
    if gemm.batched or gemm.epilogue.kind != "none":
        raise ScheduleError("the codegen pipeline compiles plain GEMMs only (no batch, no epilogue); use 'tuned' for "
                            "this problem.")


def _check_split(schedule: Schedule, unit: tuple[int, int, int], k_name: str, k_of: str) -> None:
    """The block tile splits over the warp grid into warp tiles of whole `unit` (M, N, K) tiles, and the K step
    into whole `unit` K steps (`k_name` and `k_of` word the second refusal)."""
    (bm, bn), bk, (wm, wn), (um, un, uk) = schedule.tile.workgroup, schedule.tile.k, schedule.tile.warps, unit
    if wm <= 0 or wn <= 0 or bm % (wm * um) or bn % (wn * un):
        raise ScheduleError(f"block tile {bm}x{bn} does not split into {wm}x{wn} warp tiles that are multiples of "
                            f"{um}x{un}.")
    if bk <= 0 or bk % uk:
        raise ScheduleError(f"{k_name} {bk} is not a multiple of {k_of}'s K={uk}.")


def check(schedule: Schedule, gemm: Gemm, target) -> None:
    """Raise ScheduleError with one sentence if the CUDA library route cannot compile `gemm` with `schedule` on
    `target` (the ROCm lane route: `check_lanes`)."""
    tile, name = schedule.tile, target.name
    if gemm.dtype not in CODEGEN_MMAS or CODEGEN_MMAS[gemm.dtype] not in target.mma:
        raise ScheduleError(f"the codegen pipeline runs {' and '.join(CODEGEN_MMAS)} (m16n8k16 mma.sync), not "
                            f"{gemm.dtype} on {name}; use 'tuned'.")
    _check_plain(gemm)
    if tile.mma != codegen_mma(gemm.dtype):
        raise ScheduleError(f"the codegen pipeline emits {codegen_mma(gemm.dtype)} for {gemm.dtype}, not {tile.mma}.")
    # Warp tiles of whole 16x16 ldmatrix.x4 fragments (two m16n8 mma.sync tiles side by side).
    _check_split(schedule, (16, 16, 16), "K tile", "mma.sync")
    (bm, bn), bk, (wm, wn) = tile.workgroup, tile.k, tile.warps
    count = threads(schedule, target.wave_size)
    if count > target.max_workgroup_threads:
        raise ScheduleError(f"{wm}x{wn} warps make {count} threads; {name} allows at most "
                            f"{target.max_workgroup_threads}.")
    stages = schedule.staging.prefetch_stages
    if not 1 <= stages <= MAX_STAGES:
        raise ScheduleError(f"pipeline stages {stages} is outside 1..{MAX_STAGES} for the codegen pipeline.")
    k_steps = padded_gemm(schedule, gemm).k // bk
    if k_steps < stages:
        raise ScheduleError(f"K={gemm.k} has {k_steps} K steps of {bk}, fewer than the {stages} pipeline stages.")
    if schedule.swizzle.lds not in ("pad", "none"):
        raise ScheduleError(f"the codegen pipeline pads shared-memory rows ('pad') or not ('none'); "
                            f"'{schedule.swizzle.lds}' is not available on this route.")
    order = schedule.swizzle.workgroup_order
    if order not in ("row", "raster"):
        raise ScheduleError(f"the codegen pipeline launches workgroups in row or raster order, not '{order}'.")
    check_raster_rows(schedule)
    rows, (mt, nt) = schedule.swizzle.group_rows, tile_grid(schedule, gemm)
    if order == "raster" and nt < 2:
        raise ScheduleError(f"raster order over a single column of {bn}-column tiles ({gemm.shape_name}) is row "
                            "order; use --order row.")
    if order == "raster" and (rows >= mt or mt % rows):
        raise ScheduleError(f"raster groups of {rows} rows of tiles must divide the {mt} rows of {bm}-row tiles of "
                            f"{gemm.shape_name} into at least two groups; give a divisor of {mt} below it or use "
                            "--order row.")
    if schedule.warp_groups.waves_per_eu is not None:
        raise ScheduleError(f"waves per EU is an AMDGPU attribute; {name} does not take it.")
    if schedule.warp_groups.workgroup_size not in (None, count):
        raise ScheduleError(f"workgroup size {schedule.warp_groups.workgroup_size} does not match the {wm}x{wn} "
                            f"warp grid, which needs {count} threads.")
    shared = shared_bytes(schedule, gemm)
    if shared > target.lds_bytes:
        raise ScheduleError(f"tile {bm}x{bn}x{bk} with {stages} stages needs {shared} B of shared memory; {name} "
                            f"has {target.lds_bytes}.")
    registers = bm * bn // count
    per_thread = min(target.vgprs_per_lane, target.vgpr_file_per_lane * target.wave_size // count)
    if registers > per_thread - SPARE_REGISTERS:
        raise ScheduleError(f"each of the {count} threads would hold {registers} accumulator registers; {name} "
                            f"gives it {per_thread} and the codegen pipeline keeps {SPARE_REGISTERS} free (use a "
                            "smaller tile).")


def lane_k_tiles(schedule: Schedule) -> int:
    """Intrinsic K steps per iteration of the lane route's K loop."""
    return schedule.tile.k // mma_shape(schedule.tile.mma)[2]


def grid(schedule: Schedule, gemm: Gemm) -> tuple[int, int, int]:
    """Workgroups (x, y, z) of the lane route's launch: blocks along N on x, along M on y."""
    mt, nt = tile_grid(schedule, gemm)
    return nt, mt, 1


def check_lanes(schedule: Schedule, gemm: Gemm, target) -> None:
    """The ROCm lane route (`_lanes_tile`, `_lanes_lower`): what it cannot do, in one sentence."""
    tile, name = schedule.tile, target.name
    _check_plain(gemm)
    mma = target.mma.get(tile.mma)
    if mma is None or mma.operand != gemm.dtype:
        raise ScheduleError(f"MMA intrinsic {tile.mma} does not take {gemm.dtype} on {name}; it has "
                            f"{', '.join(k for k, v in target.mma.items() if v.operand == gemm.dtype) or 'none'}.")
    _check_split(schedule, mma_shape(tile.mma), "K step", tile.mma)
    (bm, bn), bk, (wm, wn) = tile.workgroup, tile.k, tile.warps
    if gemm.m % bm or gemm.n % bn or gemm.k % bk:
        raise ScheduleError(f"{gemm.shape_name} is not a whole number of {bm}x{bn}x{bk} tiles and the codegen "
                            "pipeline does not pad; use 'tuned' (it pads) or a tile that divides the problem.")
    count = threads(schedule, target.wave_size)
    if count > target.max_workgroup_threads:
        raise ScheduleError(f"{wm}x{wn} waves make {count} threads; {name} allows at most "
                            f"{target.max_workgroup_threads}.")
    if schedule.staging.prefetch_stages != 1 or schedule.staging.direct_to_lds or schedule.swizzle.lds != "none":
        raise ScheduleError(f"the codegen pipeline on {name} reads A and B straight from global memory into each "
                            "lane (prefetch 1, lds none): it has no LDS staging yet.")
    if schedule.swizzle.workgroup_order != "row":
        raise ScheduleError("the codegen pipeline launches workgroups in row order only.")
    if schedule.warp_groups.waves_per_eu is not None or schedule.warp_groups.workgroup_size not in (None, count):
        raise ScheduleError(f"the codegen pipeline on {name} takes neither waves per EU nor a workgroup size other "
                            f"than the {count} threads of its wave grid.")
    registers = bm * bn // count
    if registers > target.vgprs_per_lane // 2:
        raise ScheduleError(f"each of the {count} threads would hold {registers} accumulator registers; the codegen "
                            f"pipeline keeps them under half of {name}'s {target.vgprs_per_lane} (use a smaller tile).")


# --- IR building helpers -----------------------------------------------------------------------------------

def _any_op() -> ir.Type:
    return transform.AnyOpType.get()


def _op(name: str, *operands: ir.Value, results: int = 0, result_type: ir.Type | None = None,
        **attributes: ir.Attribute) -> ir.Operation:
    """A transform op created generically: IREE's transform extensions have no Python builders."""
    return ir.Operation.create(name, results=[result_type or _any_op()] * results, operands=list(operands),
                               attributes=attributes)


def _unit() -> ir.Attribute:
    return ir.UnitAttr.get()


def _i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _match(root: ir.Value, op_name: str, result_type: ir.Type | None = None) -> ir.Value:
    return structured.MatchOp(result_type or _any_op(), root, ops=ir.ArrayAttr.get([ir.StringAttr.get(op_name)])
                              ).result


def _function(root: ir.Value) -> ir.Value:
    return _match(root, "func.func")


def _patterns(target: ir.Value, *pattern_ops: str | tuple[str, dict]) -> None:
    """transform.apply_patterns with the named pattern-set ops (name, or (name, attributes))."""
    apply = transform.ApplyPatternsOp(target)
    with ir.InsertionPoint(apply.patterns):
        for entry in pattern_ops:
            name, attributes = entry if isinstance(entry, tuple) else (entry, {})
            ir.Operation.create(name, attributes=attributes)


def _cse(target: ir.Value) -> None:
    transform.ApplyCommonSubexpressionEliminationOp(target)


def _canonicalize(target: ir.Value, *more: str) -> None:
    _patterns(target, "transform.apply_patterns.canonicalization", *more)
    _cse(target)


def _sequences(builders: dict, prefix: str = "") -> None:
    """One named sequence per phase and the codegen sequence that includes them in order, all named `prefix` +
    their name."""
    for name, build in builders.items():
        _phase(prefix + name, build)
    codegen = transform.NamedSequenceOp(prefix + CODEGEN_SEQUENCE, [_any_op()], [],
                                        arg_attrs=[{"transform.readonly": _unit()}])
    with ir.InsertionPoint(codegen.body):
        for name in builders:
            transform.IncludeOp([], ir.FlatSymbolRefAttr.get(prefix + name),
                                transform.FailurePropagationMode.Propagate, [codegen.bodyTarget])
        transform.YieldOp([])


def _phase(name: str, build) -> None:
    sequence = transform.NamedSequenceOp(name, [_any_op()], [], arg_attrs=[{"transform.readonly": _unit()}])
    with ir.InsertionPoint(sequence.body):
        build(sequence.bodyTarget)
        transform.YieldOp([])


# --- phases ------------------------------------------------------------------------------------------------

def _blocks(root: ir.Value, bm: int, bn: int):
    """The GEMM tiled into a workgroup forall of bm×bn blocks (M on block y, N on x) with the fill fused in."""
    any_op = _any_op()
    fill, matmul = _match(root, "linalg.fill"), _match(root, "linalg.generic")
    blocks = structured.TileUsingForallOp(any_op, any_op, matmul, tile_sizes=[bm, bn],
                                          mapping=ir.Attribute.parse("[#gpu.block<y>, #gpu.block<x>]"))
    _op("transform.iree.populate_workgroup_count_region_using_num_threads_slice", blocks.forall_op)
    return blocks, structured.FuseIntoContainingOp(any_op, any_op, fill, blocks.forall_op)


def _tile(schedule: Schedule):
    tile = schedule.tile
    (bm, bn), bk, (wm, wn) = tile.workgroup, tile.k, tile.warps

    def build(root: ir.Value) -> None:
        any_op = _any_op()
        blocks, fused = _blocks(root, bm, bn)
        k_loop = structured.TileUsingForOp([any_op], blocks.tiled_op, sizes=[0, 0, bk])
        promoted = _op("transform.iree.promote_operands", k_loop.tiled_linalg_op, results=3,
                       indices=ir.DenseI64ArrayAttr.get([0, 1]))
        warps = ir.Attribute.parse(f"[{', '.join(_WARP_MAPPING)}]")
        structured.TileUsingForallOp(any_op, any_op, promoted.results[0], num_threads=[wm, wn], mapping=warps)
        structured.TileUsingForallOp(any_op, any_op, fused.fused_op, num_threads=[wm, wn], mapping=warps)
        function = _function(root)
        _patterns(function, "transform.apply_patterns.linalg.tiling_canonicalization",
                  "transform.apply_patterns.scf.for_loop_canonicalization",
                  "transform.apply_patterns.canonicalization")
        _cse(function)
        vectorized = structured.VectorizeChildrenAndApplyPatternsOp(function).result
        _canonicalize(vectorized, "transform.apply_patterns.vector.fold_arith_extension")
        _op("transform.iree.eliminate_empty_tensors", vectorized)
        buffers = _op("transform.iree.bufferize", vectorized, results=1, target_gpu=_unit()).result
        _op("transform.iree.forall_to_workgroup", buffers)
        # No barrier after the distributed warp forall: the shared-memory copies bring their own barriers before
        # and after them, and the extra one ended up back to back with the pre-copy barrier of the pipelined K loop
        # (three barriers per K step instead of two, tests/lit/isa/codegen_f16_sm80.test).
        _op("transform.iree.map_nested_forall_to_gpu_threads", buffers,
            workgroup_dims=ir.DenseI64ArrayAttr.get([threads(schedule), 1, 1]), subgroup_size=_i64(32),
            sync_after_distribution=ir.BoolAttr.get(False))
        _op("transform.iree.gpu_distribute_shared_memory_copy", buffers)
        _op("transform.iree.hoist_static_alloc", buffers)
        _canonicalize(buffers, "transform.apply_patterns.memref.fold_memref_alias_ops")

    return build


def _raster(names: tuple[str, str] = RASTER_FUNCTIONS):
    """Replace each block id by a call to its raster function (`names`), imported into the dispatch, then inline
    the calls. Exactly one id op per dimension must be found: the phase fails rather than leave the order as it
    was."""
    return lambda root: _raster_ids(root, names)


def _raster_ids(root: ir.Value, names: tuple[str, str]) -> None:
    function = _function(root)
    table = _op("transform.util.get_nearest_symbol_table", function, results=1).result
    count_type = transform.ParamType.get(ir.IntegerType.get_signless(64))
    one = transform.ParamConstantOp(count_type, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)).result
    for dimension, name in enumerate(names):
        ids = structured.MatchOp(_any_op(), function, ops=["hal.interface.workgroup.id"],
                                 op_attrs={"dimension": ir.IntegerAttr.get(ir.IndexType.get(), dimension)}).result
        found = transform.NumAssociationsOp(count_type, ids).num
        transform.MatchParamCmpIOp(found, one, transform.MatchCmpIPredicate.eq)
        _op("transform.util.import_symbol", table, results=1, symbol=ir.FlatSymbolRefAttr.get(name),
            if_undefined=_unit())
        replace = structured.ReplaceOp(_any_op(), ids)
        with ir.InsertionPoint(replace.bodyRegion.blocks.append()):
            func.CallOp([ir.IndexType.get()], ir.FlatSymbolRefAttr.get(name), [])
    transform.ApplyRegisteredPassOp(_any_op(), table, "inline")


def _raster_functions(schedule: Schedule, gemm: Gemm, names: tuple[str, str] = RASTER_FUNCTIONS) -> None:
    """`raster_tile` as IR: one private function per block id, each an affine map of both hardware ids (y, x) with
    the static grid folded in. Affine maps, not arith ops: IREE's vector->nvgpu conversion rejected arith index
    ops (and their constants) that it found next to the mma.sync operands."""
    (_, nt), rows = tile_grid(schedule, gemm), schedule.swizzle.group_rows
    y, x = ir.AffineSymbolExpr.get(0), ir.AffineSymbolExpr.get(1)
    span = rows * nt
    linear = y * nt + x
    within = linear % span
    floordiv = lambda expr, by: ir.AffineFloorDivExpr.get(expr, ir.AffineConstantExpr.get(by))  # noqa: E731
    tiles = (floordiv(within, rows), floordiv(linear, span) * rows + within % rows)
    index = ir.IndexType.get()
    for name, tile in zip(names, tiles):
        function = func.FuncOp(name, ([], [index]), visibility="private")
        with ir.InsertionPoint(function.add_entry_block()):
            ids = [_op("hal.interface.workgroup.id", results=1, result_type=index,
                       dimension=ir.IntegerAttr.get(index, d)).result for d in (1, 0)]
            func.ReturnOp([affine.AffineApplyOp(ir.AffineMap.get(0, 2, [tile]), ids).result])


def _accumulate(root: ir.Value) -> None:
    function = _function(root)
    _patterns(function, ("transform.apply_patterns.iree.prepare_vector_to_mma", {"useNvGpu": ir.BoolAttr.get(True)}))
    _patterns(function, "transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync")
    # Bufferization left self-copies of the C tiles (subview into the same subview); they must go before the
    # hoisting, which refuses memrefs with view-like users.
    _canonicalize(function)
    _op("transform.iree.apply_licm", function)
    _cse(function)
    hoisted = structured.HoistRedundantVectorTransfersOp(_any_op(), function).transformed
    # Store-to-load forwarding turns the loop's initial accumulator read into the fill's zeros; the zero
    # stores are then dead (the final store overwrites them).
    _op("transform.memref.erase_dead_alloc_and_stores", hoisted)


def _stage(schedule: Schedule):
    def build(root: ir.Value) -> None:
        function = _function(root)
        stages = schedule.staging.prefetch_stages
        if stages > 1:
            allocs = _match(function, "memref.alloc", transform.OperationType.get("memref.alloc"))
            _op("transform.memref.multibuffer", allocs, results=1, factor=_i64(stages), skip_analysis=_unit())
        if schedule.swizzle.lds == "pad":
            _op("transform.iree.reduce_shared_memory_bank_conflicts", function,
                padding_size_bits=_i64(ROW_PADDING_BITS))

    return build


def _synchronize(root: ir.Value) -> None:
    function = _function(root)
    _op("transform.iree.synchronize_loop", _match(function, "scf.for"))
    _canonicalize(function)
    _op("transform.memref.erase_dead_alloc_and_stores", function)


def _mma(root: ir.Value) -> None:
    _op("transform.iree.vector.vector_to_mma_conversion", _function(root), use_mma_sync=_unit())


def _pipeline(schedule: Schedule):
    def build(root: ir.Value) -> None:
        function = _function(root)
        _patterns(function, ("transform.apply_patterns.vector.transfer_to_scf", {"full_unroll": ir.BoolAttr.get(True)}))
        _canonicalize(function, "transform.apply_patterns.memref.fold_memref_alias_ops")
        _op("transform.iree.create_async_groups", function, use_mma_sync=_unit())
        _canonicalize(function)
        if schedule.staging.prefetch_stages > 1:
            fragments = {"use_mma_sync": _unit()} if prefetches_fragments(schedule) else {}
            _op("transform.iree.pipeline_shared_memory_copies", _match(function, "scf.for"), results=1,
                depth=_i64(schedule.staging.prefetch_stages), **fragments)
        _patterns(function, "transform.apply_patterns.vector.lower_masks",
                  "transform.apply_patterns.vector.materialize_masks")

    return build


def _cleanup(root: ir.Value) -> None:
    function = _function(root)
    _patterns(function, "transform.apply_patterns.canonicalization",
              "transform.apply_patterns.memref.fold_memref_alias_ops")
    _op("transform.iree.apply_licm", function)
    _cse(function)


# --- the ROCm lane route ------------------------------------------------------------------------------------
# Blocks and waves as on CUDA, then IREE's MMA ops instead of the vector->nvgpu conversion: the wave's GEMM is
# packed into intrinsic tiles, the packs are lowered to expand_shape + transpose, the packed contraction becomes an
# `iree_codegen.inner_tiled` on the target's MMA intrinsic, and that op is distributed over the wave's lanes
# (`distribute_inner_tiled`). The transposes (A, B and C's layout changes) are fused into the lane loop, so each
# lane reads its own fragments from global memory and writes its own accumulator back through an expanded view of
# the output; a K loop inside each lane carries the accumulator as vectors (registers) from start to end.

_LANES = "[#iree_gpu.lane_id<0>]"


def _lane_forall(root: ir.Value) -> ir.Value:
    return structured.MatchOp(_any_op(), root, ops=["scf.forall"],
                              op_attrs={"mapping": ir.Attribute.parse(_LANES)}).result


def _registered_pass(target: ir.Value, name: str) -> ir.Value:
    return transform.ApplyRegisteredPassOp(_any_op(), target, name).result


def _lanes_tile(schedule: Schedule):
    tile = schedule.tile
    (bm, bn), (wm, wn) = tile.workgroup, tile.warps
    mm, mn, mk = mma_shape(tile.mma)

    def build(root: ir.Value) -> None:
        any_op = _any_op()
        blocks, fill = _blocks(root, bm, bn)
        fill = fill.fused_op
        warps = ir.Attribute.parse(f"[{', '.join(_WARP_MAPPING)}]")
        waves = structured.TileUsingForallOp(any_op, any_op, blocks.tiled_op, num_threads=[wm, wn], mapping=warps)
        structured.FuseIntoContainingOp(any_op, any_op, fill, waves.forall_op)
        packed = structured.PackOp(any_op, waves.tiled_op, [], static_packed_sizes=[mm, mn, mk]).result
        function = _function(root)
        _canonicalize(function, "transform.apply_patterns.tensor.fold_into_pack_and_unpack")
        pack_type = transform.OperationType.get("linalg.pack")
        operand_packs = transform.SplitHandleOp([pack_type, pack_type], _match(root, "linalg.pack", pack_type))
        for pack in operand_packs.results:
            structured.LowerPackOp(*(transform.OperationType.get(name) for name in (
                "tensor.pad", "tensor.expand_shape", "linalg.transpose")), pack)
        structured.LowerUnPackOp(*(transform.OperationType.get(name) for name in (
            "tensor.empty", "linalg.transpose", "tensor.collapse_shape", "tensor.extract_slice", "linalg.copy")),
            _match(root, "linalg.unpack", transform.OperationType.get("linalg.unpack")))
        _canonicalize(function)
        _op("transform.iree.convert_to_multi_mma", packed, results=1,
            intrinsic_kind=ir.Attribute.parse(f"#iree_gpu.mma_layout<{tile.mma}>"))
        # WMMA's accumulator layout cannot be distributed before its inner tiles are expanded (MFMA does not mind).
        _registered_pass(_function(root), "iree-gpu-expand-undistributed-inner-tiles")
        _op("transform.iree.distribute_inner_tiled", _match(root, "iree_codegen.inner_tiled"), results=1)
        _canonicalize(_function(root))
        # Each lane transposes its own A and B fragments and zeroes its own accumulator (A's and B's transposes
        # come first in the function, C's after the lane loop).
        a, b, _ = transform.SplitHandleOp([any_op] * 3, _match(root, "linalg.transpose")).results
        lanes = _lane_forall(root)
        for producer in (a, b, _match(root, "linalg.fill")):
            lanes = structured.FuseIntoContainingOp(any_op, any_op, producer, lanes).new_containing_op
        # ... and writes its accumulator back itself: C's transpose, then (once the collapse of the wave tile has
        # become an expanded view of the output) the copy into that view.
        # (Reshapes between them, from the expanded inner tiles of WMMA, are first moved past them.)
        for _ in range(2):
            _canonicalize(_registered_pass(_function(root), "iree-codegen-propagate-reshapes-by-expansion"))
            lanes = _lane_forall(root)
            _op("transform.iree.fuse_consumer", _match(lanes, "tensor.parallel_insert_slice"), lanes, results=2)
        _canonicalize(_registered_pass(_function(root), "iree-codegen-propagate-reshapes-by-expansion"))
        # The K loop inside each lane, a few intrinsic K steps per iteration, reading the fragments it needs.
        k_loop = structured.TileUsingForOp([any_op], _match(root, "iree_codegen.inner_tiled"),
                                           sizes=[0, 0, lane_k_tiles(schedule)]).loops[0]
        lane_transposes = transform.SplitHandleOp([any_op] * 3, _match(_lane_forall(root), "linalg.transpose"))
        for producer in lane_transposes.results[:2]:
            k_loop = structured.FuseIntoContainingOp(any_op, any_op, producer, k_loop).new_containing_op
        _canonicalize(_function(root))

    return build


def _lanes_lower(schedule: Schedule, wave_size: int):
    def build(root: ir.Value) -> None:
        any_op = _any_op()
        function = _registered_pass(_function(root), "iree-codegen-generic-vectorization")
        _canonicalize(function)
        # The accumulator's read and write leave the K loop: the loop carries it as vectors.
        loop.HoistLoopInvariantSubsetsOp(_match(function, "scf.for", transform.OperationType.get("scf.for")))
        _canonicalize(function)
        func_type = transform.OperationType.get("func.func")
        typed = transform.CastOp(func_type, function).result
        for patterns in ("unroll_multi_mma", "drop_inner_tiled_unit_dims", "lower_inner_tiled"):
            _patterns(typed, f"transform.apply_patterns.iree.{patterns}")
        _patterns(typed, "transform.apply_patterns.canonicalization")
        typed = _op("transform.util.eliminate_hoistable_conversions", typed, results=1, result_type=func_type).result
        function = transform.CastOp(any_op, typed).result
        # The lane's slice of C's layout change starts as a slice of a wave-wide empty tensor; folded to a lane-sized
        # one it is eliminated into the output view (left wave-wide, it became an LDS buffer every wave wrote).
        _canonicalize(function, "transform.apply_patterns.tensor.fold_tensor_empty")
        _op("transform.iree.eliminate_empty_tensors", function)
        buffers = _op("transform.iree.bufferize", function, results=1, target_gpu=_unit()).result
        _op("transform.iree.forall_to_workgroup", buffers)
        _op("transform.iree.forall_to_lanes", buffers)
        _op("transform.iree.map_nested_forall_to_gpu_threads", buffers,
            workgroup_dims=ir.DenseI64ArrayAttr.get([threads(schedule, wave_size), 1, 1]),
            subgroup_size=_i64(wave_size),
            sync_after_distribution=ir.BoolAttr.get(False))
        _canonicalize(buffers, "transform.apply_patterns.memref.fold_memref_alias_ops")
        _op("transform.iree.apply_licm", buffers)
        _cse(buffers)

    return build


def _kernel_config(gemm: Gemm) -> None:
    """Match the GEMM's contraction (types, maps, sizes) and point its function at `@codegen` (`gemm` is the GEMM
    the library compiles: `kernel_gemm` of the problem)."""
    _matcher("match_gemm", gemm)
    entry = transform.NamedSequenceOp(ENTRY_POINT, [_any_op()], [], arg_attrs=[{"transform.readonly": _unit()}])
    with ir.InsertionPoint(entry.body):
        _configure(entry.bodyTarget, "match_gemm", CODEGEN_SEQUENCE)
        transform.YieldOp([])


def _matcher(name: str, gemm: Gemm, stored: bool = False) -> None:
    """The named sequence `name` that matches `gemm`'s contraction (element types, maps, sizes). With `stored`,
    only a contraction whose result goes straight to the dispatch's output, not into a fused consumer (an
    elementwise linalg.generic that IREE put into the same dispatch): the plain kernel computes no epilogue."""
    any_op = _any_op()
    matcher = transform.NamedSequenceOp(name, [any_op], [any_op], arg_attrs=[{"transform.readonly": _unit()}])
    with ir.InsertionPoint(matcher.body):
        op = matcher.bodyTarget
        elem = ir.Type.parse(gemm.dtype)
        contraction = match.MatchContractionOp(op, elem, elem, ir.Type.parse(ACC_DTYPE),
                                               indexing_maps=gemm.indexing_maps())
        _, m, n, k = contraction.results
        for dims, size in ((m, gemm.m), (n, gemm.n), (k, gemm.k)):
            match.MatchDimsEqualOp(dims, [size])
        if stored:
            structured_match = ir.Operation.create("transform.match.structured", results=[any_op], operands=[op],
                                                   regions=1)
            body = structured_match.regions[0].blocks.append(any_op)
            with ir.InsertionPoint(body):
                user = _op("transform.match.structured.result", body.arguments[0], results=1, position=_i64(0),
                           single=_unit()).result
                _op("transform.match.structured.yield", user)
            transform.MatchOperationNameOp(structured_match.result, list(_OUTPUT_STORES))
        transform.YieldOp([op])


# The ops through which a dispatch writes a tensor to its output binding (before and after IREE's
# bufferization-ready rewrite of the dispatch).
_OUTPUT_STORES = ("iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer")


def _configure(root: ir.Value, matcher: str, sequence: str) -> None:
    """Give the function of each op that `matcher` finds in `root` a translation_info naming `sequence`."""
    any_op = _any_op()
    found = transform.CollectMatchingOp([any_op], root, matcher)
    function = transform.GetParentOp(any_op, found.results[0], op_name="func.func", deduplicate=True).result
    info = transform.ParamConstantOp(transform.AnyParamType.get(), ir.Attribute.parse(
        "#iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen "
        f"codegen_spec = @{sequence}>"))
    transform.AnnotateOp(function, "translation_info", param=info.result)


def phases_of(schedule: Schedule) -> tuple[str, ...]:
    """PHASES, with `raster` right after `tile` (which maps the blocks) when the schedule asks for that order."""
    if schedule.swizzle.workgroup_order != "raster":
        return PHASES
    return PHASES[:1] + ("raster",) + PHASES[1:]


def _builders(schedule: Schedule, raster_names: tuple[str, str] = RASTER_FUNCTIONS) -> dict:
    """The phase builders of the CUDA kernel for `schedule`, in order (`phases_of`)."""
    builders = {"tile": _tile(schedule), "raster": _raster(raster_names), "accumulate": _accumulate,
                "stage": _stage(schedule), "synchronize": _synchronize, "mma": _mma,
                "pipeline": _pipeline(schedule), "cleanup": _cleanup}
    return {name: builders[name] for name in phases_of(schedule)}


def codegen_library(schedule: Schedule, gemm: Gemm) -> ir.Module:
    """The CUDA route's transform library for `gemm` (whole tiles: `padded_gemm` of the problem) under `schedule`
    (call `check` first), built in the caller's context."""
    raster = schedule.swizzle.workgroup_order == "raster"
    return _library(_builders(schedule), kernel_gemm(gemm),
                    lambda: _raster_functions(schedule, gemm) if raster else None)


def _model_prefix(index: int) -> str:
    return f"g{index}_"


def model_sequence(index: int) -> str:
    """The codegen sequence of GEMM `index` of a `model_library`: the name its dispatch's translation_info shows."""
    return _model_prefix(index) + CODEGEN_SEQUENCE


@dataclass(frozen=True)
class ConsumerConfig:
    """IREE's TileAndFuse configuration that the model library gives the elementwise consumer of an isolated
    contraction (a rank-1 generic, 32-bit in, 16-bit out, as IREE collapses it): `threads` threads a workgroup, each
    `per_thread` adjacent elements (8: one 16-byte f16 store, two 16-byte f32 loads). IREE's own choice for such a
    dispatch (32 threads, 4 elements each) moved 48 MB in 41.7 us on an H100; this one in 14.8 us
    (results/h100/model)."""

    threads: int = 256
    per_thread: int = 8

    @property
    def elements(self) -> int:
        return self.threads * self.per_thread

    def translation_info(self) -> str:
        return (f"#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = "
                f"[{self.threads}, 1, 1] subgroup_size = 32>")

    def lowering_config(self) -> str:
        return f"#iree_gpu.lowering_config<{{thread = [{self.per_thread}], workgroup = [{self.elements}]}}>"


CONSUMER = ConsumerConfig()


def _consumer_matcher(name: str, size: int) -> None:
    """The named sequence `name` that matches a rank-1 linalg.generic of `size` elements, every loop parallel, its
    first input 32-bit and its result 16-bit: the elementwise consumer of an isolated contraction as IREE
    dispatches it (the element types' kinds are not matched: an int32 -> int16 generic of that size would match)."""
    any_op, i64 = _any_op(), transform.ParamType.get(ir.IntegerType.get_signless(64))
    matcher = transform.NamedSequenceOp(name, [any_op], [any_op], arg_attrs=[{"transform.readonly": _unit()}])
    with ir.InsertionPoint(matcher.body):
        op = matcher.bodyTarget
        transform.MatchOperationNameOp(op, ["linalg.generic"])
        structured_match = ir.Operation.create("transform.match.structured", operands=[op], regions=1)
        body = structured_match.regions[0].blocks.append(any_op)
        with ir.InsertionPoint(body):
            target = body.arguments[0]
            _op("transform.match.structured.dim", target, raw_dim_list=ir.DenseI64ArrayAttr.get([]), is_all=_unit(),
                parallel=_unit())
            checks = [(_op("transform.match.structured.rank", target, results=1, result_type=i64).result, 1),
                      (_op("transform.match.structured.dim", target, results=1, result_type=i64,
                           raw_dim_list=ir.DenseI64ArrayAttr.get([0])).result, size)]
            value = transform.AnyValueType.get()
            for kind, bits in (("input", 32), ("init", 16)):
                operand = _op(f"transform.match.structured.{kind}", target, results=1, result_type=value,
                              raw_position_list=ir.DenseI64ArrayAttr.get([0])).result
                checks.append((_op("transform.match.structured.elemental_bitwidth", operand, results=1,
                                   result_type=i64).result, bits))
            for param, wanted in checks:
                constant = transform.ParamConstantOp(i64, ir.IntegerAttr.get(ir.IntegerType.get_signless(64), wanted))
                transform.MatchParamCmpIOp(param, constant.result, transform.MatchCmpIPredicate.eq)
            _op("transform.match.structured.yield")
        transform.YieldOp([op])


def _configure_consumers(root: ir.Value, matcher: str, config: ConsumerConfig) -> None:
    any_op = _any_op()
    found = transform.CollectMatchingOp([any_op], root, matcher).results[0]
    function = transform.GetParentOp(any_op, found, op_name="func.func", deduplicate=True).result
    for target, name, text in ((function, "translation_info", config.translation_info()),
                               (found, "lowering_config", config.lowering_config())):
        param = transform.ParamConstantOp(transform.AnyParamType.get(), ir.Attribute.parse(text))
        transform.AnnotateOp(target, name, param=param.result)


def model_library(kernels: list[tuple[Schedule, Gemm]], consumer_sizes: tuple[int, ...] = ()) -> ir.Module:
    """One CUDA library for several GEMMs of a model, each under its own schedule (call `check` for each first):
    per GEMM `i` a matcher `g<i>_match_gemm`, the phases and the `g<i>_codegen` sequence (and raster functions)
    named apart, and one `@__kernel_config` that gives each matched dispatch function the translation_info naming
    its GEMM's sequence. Contractions of other sizes, types or maps, and those with a fused consumer (the plain
    kernel has no epilogue), keep IREE's own configuration. `consumer_sizes`: the element counts of the elementwise
    consumers split out of the GEMMs (`problem.isolate_contractions`), which get `CONSUMER`'s configuration (sizes
    that are not whole workgroups of it are left to IREE)."""
    keys = [kernel_gemm(gemm) for _, gemm in kernels]
    repeated = next((key for i, key in enumerate(keys) if key in keys[:i]), None)
    if repeated is not None:
        raise ScheduleError(f"GEMM {repeated.shape_name} {repeated.dtype} {repeated.layout} appears twice in the model "
                            "library; one dispatch takes one schedule.")
    for _, gemm in kernels:
        _check_plain(gemm)
    module = ir.Module.create()
    module.operation.attributes["transform.with_named_sequence"] = _unit()
    with ir.InsertionPoint(module.body):
        for i, ((schedule, gemm), key) in enumerate(zip(kernels, keys)):
            prefix = _model_prefix(i)
            names = (prefix + RASTER_FUNCTIONS[0], prefix + RASTER_FUNCTIONS[1])
            _sequences(_builders(schedule, names), prefix)
            _matcher(f"{prefix}match_gemm", key, stored=True)
            if schedule.swizzle.workgroup_order == "raster":
                _raster_functions(schedule, gemm, names)
        sizes = sorted({size for size in consumer_sizes if size % CONSUMER.elements == 0})
        for size in sizes:
            _consumer_matcher(f"match_consumer_{size}", size)
        entry = transform.NamedSequenceOp(ENTRY_POINT, [_any_op()], [], arg_attrs=[{"transform.readonly": _unit()}])
        with ir.InsertionPoint(entry.body):
            for i in range(len(kernels)):
                _configure(entry.bodyTarget, f"{_model_prefix(i)}match_gemm", model_sequence(i))
            for size in sizes:
                _configure_consumers(entry.bodyTarget, f"match_consumer_{size}", CONSUMER)
            transform.YieldOp([])
    module.operation.verify()
    return module


def lanes_library(schedule: Schedule, gemm: Gemm, target) -> ir.Module:
    """The ROCm lane route's transform library for `gemm` under `schedule` (call `check_lanes` first)."""
    return _library({"tile": _lanes_tile(schedule), "lower": _lanes_lower(schedule, target.wave_size)}, gemm,
                    lambda: None)


def _library(builders: dict, configured: Gemm, more) -> ir.Module:
    """A module of one named sequence per phase, the entry sequence that includes them in order, the kernel
    config matcher for `configured` and whatever `more` adds."""
    module = ir.Module.create()
    module.operation.attributes["transform.with_named_sequence"] = _unit()
    with ir.InsertionPoint(module.body):
        _sequences(builders)
        _kernel_config(configured)
        more()
    module.operation.verify()
    return module
