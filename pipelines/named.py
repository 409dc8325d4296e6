"""Named pipelines: which schedule a target uses for a problem when the user names a pipeline, not a schedule.

- `default`: IREE's own heuristic (no schedule, no tuning spec): the baseline every other pipeline is compared to.
- `tuned`: one schedule per target and input-type family, taken from the kernels the seed documents describe
  (HipKittens' 256×256 8-wave tile with swizzled, unpadded LDS on CDNA; the 128×64 tile that was fastest on
  gfx1151; the 128×128×64 tile measured best on an H200 for the CUDA route). Problems that are not whole
  multiples of that tile get `auto`'s choice. Not measured on AMD hardware: chosen from the seeds and checked
  for zero spills and the planned LDS in the ISA.
- `codegen`: the whole kernel from a transform-dialect codegen library generated from the schedule
  (`transforms.codegen_script`). CUDA: 128×256×32 block tile on 2×4 warps with as many cp.async stages (4..2) as
  the target's shared memory holds, padded shared rows (the fastest in `tune --route codegen` on an H100);
  128×128 on 2×2 warps for problems that are not multiples of 256 in N; problems no tile divides are zero-padded
  to whole tiles (the smaller padding of the two is not sought); f16 and bf16, NN/NT/TN. `codegen-raster` (CUDA):
  the same schedule with the workgroups launched in raster order (groups of up to 8 rows of tiles walked column by
  column; 7–9 % faster on an H200, results/h200/codegen_all). ROCm: the lane route's 128×128 blocks on 2×2 waves
  (`_codegen_lanes`).
- `auto`: the largest tile of a ladder that still gives every compute unit a workgroup, so small problems are
  not left with a handful of huge tiles (the adaptive selection of seed 002); skinny (decode) problems, where
  IREE's own heuristic measured 2× faster than our tiles, are left to it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from transforms.problem import Gemm
from transforms.schedule import DEFAULT_RASTER_ROWS, Schedule, ScheduleError, Staging, Swizzle, Tile, WarpGroups, \
    aligned, k_contiguous, mma_shape, schedule_from_dict, workgroup_grid, worth_trying

from transforms import codegen_script
from transforms.codegen_script import codegen_mma

from .targets import Target, TargetError, dtype_family
from .tune_cache import cached, tune_cache

CODEGEN_CANDIDATE = "codegen-candidate"  # tune's label for a searched schedule of the codegen route


@dataclass(frozen=True)
class Pipeline:
    name: str
    summary: str
    choose: Callable[[Gemm, Target], Schedule | None]  # None: leave the op to IREE's heuristic
    codegen: bool = False  # the schedule is delivered as a full transform-dialect codegen library


def _intrinsic(pattern: str, dtype: str) -> str:
    return pattern.format(T=dtype.upper())


# (target, input family) -> (intrinsic pattern, schedule without its intrinsic)
_TUNED: dict[tuple[str, str], tuple[str, Schedule]] = {
    # 256×256×64 spills 4 VGPRs for NN on gfx942 (LLVM keeps the accumulator out of AGPRs); K 32 does not.
    ("gfx942", "16bit"): ("MFMA_F32_16x16x16_{T}", Schedule(
        Tile((256, 256), 32, (2, 4), ""), Staging(2), Swizzle("xor", "xcd"), WarpGroups(waves_per_eu=2))),
    ("gfx942", "fp8"): ("MFMA_F32_16x16x32_{T}", Schedule(
        Tile((256, 256), 64, (2, 4), ""), Staging(2), Swizzle("xor", "xcd"), WarpGroups(waves_per_eu=2))),
    ("gfx950", "16bit"): ("MFMA_F32_16x16x32_{T}", Schedule(
        Tile((256, 256), 64, (2, 4), ""), Staging(2, direct_to_lds=True), Swizzle("xor", "xcd"))),
    # The 16x16x128 fp8 intrinsic spills 30 VGPRs for NN at this tile; 32x32x64 needs fewer fragment registers.
    ("gfx950", "fp8"): ("MFMA_F32_32x32x64_{T}", Schedule(
        Tile((256, 256), 128, (2, 4), ""), Staging(2, direct_to_lds=True), Swizzle("xor", "xcd"))),
    ("gfx1151", "16bit"): ("WMMAR3_F32_16x16x16_{T}", Schedule(
        Tile((128, 64), 32, (4, 2), ""), Staging(2), Swizzle("pad"))),
    # IREE 3.13 does not pipeline shared memory on CUDA (see transforms.schedule.check), hence prefetch 0.
    ("sm_80", "16bit"): ("NV_MMA_SYNC_F32_16x8x16_{T}", Schedule(Tile((128, 128), 64, (2, 2), ""), Staging(0))),
    ("sm_89", "16bit"): ("NV_MMA_SYNC_F32_16x8x16_{T}", Schedule(Tile((128, 128), 64, (2, 2), ""), Staging(0))),
    ("sm_89", "fp8"): ("NV_MMA_SYNC_F32_16x8x32_{T}", Schedule(Tile((128, 128), 128, (2, 2), ""), Staging(0))),
}

# Intrinsics per target and family for `auto`, smallest first (small tiles need small intrinsics); auto takes the
# first whose K the problem's K reaches (gfx950 fp8: 32x32x64 for K of 64-127).
_AUTO_INTRINSICS = {
    ("gfx942", "16bit"): ("MFMA_F32_16x16x16_{T}",), ("gfx942", "fp8"): ("MFMA_F32_16x16x32_{T}",),
    ("gfx950", "16bit"): ("MFMA_F32_16x16x32_{T}",),
    ("gfx950", "fp8"): ("MFMA_F32_16x16x128_{T}", "MFMA_F32_32x32x64_{T}"),
    ("gfx1151", "16bit"): ("WMMAR3_F32_16x16x16_{T}",),
    ("sm_80", "16bit"): ("NV_MMA_SYNC_F32_16x8x16_{T}",), ("sm_89", "16bit"): ("NV_MMA_SYNC_F32_16x8x16_{T}",),
    ("sm_89", "fp8"): ("NV_MMA_SYNC_F32_16x8x32_{T}",),
}

# (workgroup tile M×N, wave grid), largest first.
_AUTO_LADDER = [((256, 256), (2, 4)), ((256, 128), (2, 2)), ((128, 128), (2, 2)), ((128, 64), (2, 2)),
                ((64, 64), (2, 2)), ((32, 64), (1, 2)), ((16, 64), (1, 2))]


SKINNY = 64  # M or N below this is a decode-style GEMM


def _tuned(gemm: Gemm, target: Target) -> Schedule | None:
    key = (target.name, dtype_family(gemm.dtype))
    if key not in _TUNED:
        raise TargetError(f"pipeline 'tuned' has no schedule for {gemm.dtype} on {target.name}.")
    pattern, schedule = _TUNED[key]
    schedule = _with_mma(schedule, _intrinsic(pattern, gemm.dtype))
    if schedule.swizzle.lds in ("xor", "rotate") and not any(k_contiguous(gemm)):
        # TN stores neither operand K-contiguous: nothing to swizzle, so the rows stay unpadded (DMA) or padded.
        schedule = dataclasses.replace(schedule, swizzle=Swizzle(
            "none" if schedule.staging.direct_to_lds else "pad", schedule.swizzle.workgroup_order))
    if schedule.swizzle.workgroup_order == "xcd" and (gemm.batched or min(workgroup_grid(schedule, gemm)) < 2):
        schedule = dataclasses.replace(schedule, swizzle=Swizzle(schedule.swizzle.lds, "row"))
    if (not aligned(schedule, gemm) or not worth_trying(schedule, gemm, target)
            or _spills(schedule.tile.workgroup, schedule.tile.k, gemm, target)
            or (target.backend == "cuda" and math.prod(workgroup_grid(schedule, gemm)) * (gemm.batch or 1)
                < target.compute_units)):
        # The tuned tiles are for whole multiples with a K loop long enough to pipeline, in the layouts they fit
        # (and on CUDA, enough of them to fill the SMs); padded ones spill (gfx1151, and gfx950 256x256 NT at
        # 4000³), and short loops keep one stage: `auto` sizes the tile to the problem.
        return _auto(gemm, target)
    return schedule


def _auto(gemm: Gemm, target: Target) -> Schedule | None:
    """The largest ladder tile that fits the problem, passes `check` with the accumulator in at most half of
    the registers, and still gives every compute unit a workgroup; else the smallest valid one."""
    key = (target.name, dtype_family(gemm.dtype))
    if key not in _AUTO_INTRINSICS:
        raise TargetError(f"pipeline 'auto' has no schedule for {gemm.dtype} on {target.name}.")
    if min(gemm.m, gemm.n) < SKINNY:
        # Decode-style GEMMs: IREE's own heuristic ran 16x8192x8192 at 16.5 TFLOP/s on an H200 where our best
        # ladder tile (16x64) reached 8.8 (results/h200), so auto leaves them to it.
        return None
    mmas = [_intrinsic(pattern, gemm.dtype) for pattern in _AUTO_INTRINSICS[key]]
    mma = next((name for name in mmas if mma_shape(name)[2] <= gemm.k), mmas[-1])
    mm, mn, mk = mma_shape(mma)
    k_tile = min((128 if gemm.dtype.startswith("f8") else 64) if gemm.k >= 256 else mk, gemm.k)
    valid = []
    for tile, (gm, gn) in _AUTO_LADDER:
        if tile == (256, 256) and gemm.layout != "nt":
            # Compiled and spilling in the ISA: NN/TN 256x256 on gfx942 (bf16, K 64: 2-4 VGPRs) and gfx950 (fp8,
            # K 128: 30 VGPRs); NT 256x256 fits.
            continue
        if _spills(tile, k_tile, gemm, target):
            continue
        if target.backend == "cuda" and (tile[0] * tile[1] < 128 * 128 or gemm.m % tile[0] or gemm.n % tile[1]
                                         or gemm.k % k_tile):
            # CUDA, measured on an H200 against IREE's default in the same run (results/h200): padded tiles ran at
            # 0.48× (bf16 4000³ NN, 50 vs 104 TFLOP/s), 64x64 at 0.93-0.94× (1024³) where 128x128 ran 0.98×.
            continue
        if target.backend == "rocm" and target.wave_size == 32 and tile[0] * tile[1] > 128 * 128:
            # gfx1151: 256x256 spilled 52 VGPRs and 256x128 8-37, in every layout and both 16-bit types.
            continue
        if target.backend == "rocm" and target.wave_size == 32 and tile[0] % (2 * gm * mm) == 0:
            # gfx1151's wave32 lanes hold twice the accumulator: spread the tile over twice the waves. Not on
            # CUDA: there it let 256x256x64 on 4x4 warps through, which the bf16 8192³ sweep on an H200 measured
            # at 16 TFLOP/s against 215 for 128x128x64 on 2x2 (results/h200/tune_bf16_8192).
            gm *= 2
        schedule = next((s for s in _auto_stagings(tile, (gm, gn), k_tile, mma, gemm, target)
                         if worth_trying(s, gemm, target)), None)
        if schedule is None:
            continue
        valid.append(schedule)
        workgroups = math.ceil(gemm.m / tile[0]) * math.ceil(gemm.n / tile[1]) * (gemm.batch or 1)
        if workgroups >= target.compute_units:
            return schedule
    if target.backend == "cuda":
        # No whole 128x128 tile fills the SMs: IREE's heuristic, measured faster on an H200 in the same run
        # (128x128 at 0.86-0.87x on 128x8192x8192 NT and 4096x256x4096, 64 workgroups;
        # results/h200/awkward/earlier/run1_7c4aa9a.jsonl).
        return None
    if not valid and _spills(_AUTO_LADDER[-1][0], k_tile, gemm, target):
        return None  # IREE's own heuristic: the only kernel of these fp8 problems that does not spill
    if not valid:
        raise TargetError(f"pipeline 'auto' found no tile for {gemm.shape_name} {gemm.dtype} on {target.name}.")
    return valid[-1]


def _spills(tile: tuple[int, int], k_tile: int, gemm: Gemm, target: Target) -> bool:
    """Tiles that compiled with spills in the named-pipeline sweep (tools/named_sweep.py), which the register
    estimate of `check` does not foresee: LLVM's allocation depends on unrolling and on masked loads."""
    padded = gemm.m % tile[0] or gemm.n % tile[1] or gemm.k % k_tile
    if tile == (256, 256) and padded:
        return True  # 256x256 NT padded: 24 VGPRs on gfx950 (bf16 4000³)
    if target.name == "gfx950" and gemm.dtype.startswith("f8") and tile == (256, 256) and (
            gemm.layout == "tn" or math.ceil(gemm.k / k_tile) < 8):
        # fp8 256x256x128: 6 VGPRs in every TN problem; 2-4 at 4, 5 and 6 K steps (K 512-768) and none at 3 or
        # from 7 on (LLVM unrolls the short pipelined loops differently).
        return True
    # fp8 with the operand stored K-major across (B of NN, A of TN) padded along K and along its other dimension:
    # 23-31 VGPRs on gfx942 and gfx950 at every tile tried (1000³, 257x513x129; even at 55-93 VGPRs in use),
    # while padding along one of the two did not spill.
    a_k, b_k = k_contiguous(gemm)
    return bool(gemm.dtype.startswith("f8") and gemm.k % k_tile and (
        (not a_k and gemm.m % tile[0]) or (not b_k and gemm.n % tile[1])))


def _auto_stagings(tile: tuple[int, int], warps: tuple[int, int], k_tile: int, mma: str, gemm: Gemm,
                   target: Target) -> list[Schedule]:
    """`auto`'s schedules for one tile, preferred first: two stages (direct-to-LDS loads where the target has
    them), then two register-prefetched stages, then one stage (a K loop too short to pipeline)."""
    big = tile[0] * tile[1] >= 256 * 128 and target.backend == "rocm" and any(k_contiguous(gemm))
    stagings = [Staging(2, direct_to_lds=True)] * target.dma + [Staging(2)] * (target.backend == "rocm") + [
        Staging(1 if target.backend == "rocm" else 0)]
    return [Schedule(Tile(tile, k_tile, warps, mma), staging,
                     Swizzle("xor" if big else ("none" if staging.direct_to_lds else "pad")))
            for staging in stagings]


# (block tile, warp grid), preferred first; tune --route codegen on an H100 measured 128x256x32 on 2x4 warps with
# 4 stages fastest at 4096³ and 8192³ f16 (results/h100/tune_codegen_*).
_CODEGEN_TILES = (((128, 256), (2, 4)), ((128, 128), (2, 2)))
# NT (TN): below this M (N) the transpose dispatch of B (A), whose traffic does not shrink with M (N), outweighs
# the GEMM: an H200 measured codegen at 0.51x IREE's default on 16x8192x8192 NT, 0.69x on 128x8192x8192 NT and
# 0.99x on 257x4096x4096 NT (results/h200/awkward/earlier/run1_7c4aa9a.jsonl).
CODEGEN_MIN_KEPT = 512


def _codegen(gemm: Gemm, target: Target) -> Schedule:
    if target.backend == "rocm":
        return _codegen_lanes(gemm, target)
    if target.backend != "cuda":
        raise TargetError(f"pipeline 'codegen' generates GPU kernels; {target.name} is neither a CUDA nor a ROCm "
                          "target.")
    kept = {"nt": ("M", gemm.m), "tn": ("N", gemm.n)}.get(gemm.layout)
    if kept is not None and kept[1] < CODEGEN_MIN_KEPT:
        (operand,) = codegen_script.transposed_operands(gemm)
        raise TargetError(f"pipeline 'codegen' transposes {operand} of a {gemm.layout.upper()} GEMM in a dispatch of "
                          f"its own, which costs more than a GEMM with {kept[0]}={kept[1]} (< {CODEGEN_MIN_KEPT}) "
                          "computes (an H200 ran 16x8192x8192 and 128x8192x8192 NT at 0.51-0.69x IREE's default); "
                          "use 'default' or 'auto'.")
    options = [Schedule(Tile(tile, 32, warps, codegen_mma(gemm.dtype)), Staging(stages), Swizzle("pad"))
               for tile, warps in _CODEGEN_TILES for stages in (4, 3, 2)]
    # Tiles that divide the problem first: a padded one computes (and copies) the padding too.
    options.sort(key=lambda schedule: not aligned(schedule, gemm))
    for schedule in options:
        try:
            codegen_script.check(schedule, gemm, target)
            return schedule
        except ScheduleError:
            continue
    return options[-1]  # compiling it raises the sentence that says why nothing fits


def _codegen_raster(gemm: Gemm, target: Target) -> Schedule:
    """`codegen`'s schedule in raster order, with the largest group of at most DEFAULT_RASTER_ROWS rows of tiles
    that splits the grid's rows into at least two groups; row order where no group does (or one column of tiles),
    as the report's schedule summary then says."""
    schedule = _codegen(gemm, target)
    mt, nt = codegen_script.tile_grid(schedule, gemm)
    rows = next((r for r in range(min(DEFAULT_RASTER_ROWS, mt - 1), 1, -1) if mt % r == 0), None)
    if rows is None or nt < 2:
        return schedule
    return dataclasses.replace(schedule, swizzle=Swizzle(schedule.swizzle.lds, "raster", rows))


def _with_mma(schedule: Schedule, mma: str) -> Schedule:
    return dataclasses.replace(schedule, tile=dataclasses.replace(schedule.tile, mma=mma))


def _searched(gemm: Gemm, target: Target) -> Schedule:
    hit = cached(gemm, target, tune_cache())
    if hit is None:
        raise TargetError(f"pipeline 'searched' has no result for {gemm.shape_name} {gemm.layout} {gemm.dtype} on "
                          f"{target.name}; run `pipelines tune` for it first (cache {tune_cache()}).")
    return schedule_from_dict(hit["schedule"])


PIPELINES: dict[str, Pipeline] = {p.name: p for p in (
    Pipeline("default", "IREE 3.13's own heuristic (no tuning spec)", lambda gemm, target: None),
    Pipeline("tuned", "one hand-picked schedule per target and input type", _tuned),
    Pipeline("auto", "largest tile that still fills every compute unit", _auto),
    Pipeline("searched", "the best schedule `pipelines tune` measured for this exact problem", _searched),
    Pipeline("codegen", "full transform-dialect codegen script (CUDA: cp.async, ldmatrix, mma.sync; ROCm: lane MMA)",
             _codegen, codegen=True),
    Pipeline("codegen-raster", "codegen in raster workgroup order (groups of up to 8 rows of tiles, for L2 reuse)",
             _codegen_raster, codegen=True),
)}


def is_codegen(name: str) -> bool:
    """Whether a pipeline (or a tune candidate of the codegen route) compiles through the codegen library."""
    return name == CODEGEN_CANDIDATE or (name in PIPELINES and PIPELINES[name].codegen)


def get_pipeline(name: str) -> Pipeline:
    if name not in PIPELINES:
        raise TargetError(f"unknown pipeline '{name}'; choose one of {', '.join(PIPELINES)}.")
    return PIPELINES[name]


def pipelines_for(target: Target) -> list[str]:
    if target.backend == "cpu":
        return ["default"]
    return [p.name for p in PIPELINES.values()
            if not p.codegen or target.backend == "cuda" or (p.name == "codegen" and target.backend == "rocm")]


def _codegen_lanes(gemm: Gemm, target: Target) -> Schedule:
    """The ROCm lane route's schedule: 128x128 blocks on 2x2 waves, the target's 16x16 intrinsic for the input
    type, two intrinsic K steps per iteration of each lane's K loop, no LDS staging (the route has none)."""
    mmas = [name for name, mma in target.mma.items() if mma.operand == gemm.dtype and mma_shape(name)[:2] == (16, 16)]
    if not mmas:
        raise TargetError(f"{target.name} has no 16x16 MMA intrinsic for {gemm.dtype}.")
    mma = min(mmas, key=lambda name: mma_shape(name)[2])
    return Schedule(Tile((128, 128), 2 * mma_shape(mma)[2], (2, 2), mma), Staging(1), Swizzle("none"))
