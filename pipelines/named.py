"""Named pipelines: which schedule a target uses for a problem when the user names a pipeline, not a schedule.

- `default`: IREE's own heuristic (no schedule, no tuning spec): the baseline every other pipeline is compared to.
- `tuned`: one schedule per target and input-type family (`Target.named.tuned`), taken from the kernels the seed
  documents describe (HipKittens' 256×256 8-wave tile with swizzled, unpadded LDS on CDNA; the 128×64 tile that
  was fastest on gfx1151; the 128×128×64 tile measured best on an H200 for the CUDA route). Problems that are not whole
  multiples of that tile get `auto`'s choice. Not measured on AMD hardware: chosen from the seeds and checked
  for zero spills and the planned LDS in the ISA.
- `codegen`: the whole kernel from a transform-dialect codegen library generated from the schedule
  (`transforms.codegen_script`), through the target's codegen route (`pipelines.routes`), which chooses it.
  CUDA: 128×256×32 block tile on 2×4 warps with as many cp.async stages (4..2) as the target's shared memory
  holds, padded shared rows (the fastest in `tune --route codegen` on an H100); 128×128 on 2×2 warps for problems
  that are not multiples of 256 in N; problems no tile divides are zero-padded to whole tiles (the smaller padding
  of the two is not sought); f16 and bf16, NN/NT/TN. `codegen-raster` (CUDA): the same schedule with the
  workgroups launched in raster order (groups of up to 8 rows of tiles walked column by column; 7–9 % faster on
  an H200, results/h200/codegen_all). ROCm: the lane route's 128×128 blocks on 2×2 waves.
- `auto`: the largest tile of a ladder that still gives every compute unit a workgroup, so small problems are
  not left with a handful of huge tiles (the adaptive selection of seed 002); skinny (decode) problems, where
  IREE's own heuristic measured 2× faster than our tiles, are left to it. Its intrinsics and per-target rules are
  the target's (`Target.named`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from transforms.stream import KERNEL_PLANS, KernelPlan
from transforms.problem import Gemm
from transforms.schedule import DEFAULT_RASTER_ROWS, Schedule, Staging, Swizzle, Tile, aligned, k_contiguous, \
    mma_shape, schedule_from_dict, workgroup_grid, worth_trying

from transforms import codegen_script
from transforms.kernels import Kernel
from transforms.split_k import SplitError, SplitK, Streaming, check_split, partial_gemm, split_from_dict
from transforms.schedule import ScheduleError, check as check_schedule

from .job import Job, Option, Pick
from .pick import pick
from .routes import codegen_route, codegen_route_name, kernel_route
from .routes.split import SplitReductionRoute
from .routes.ukernel import UkernelRoute
from .targets import ComputeUnits, Target, TargetError, dtype_family
from .tune_cache import Search, TuneError, cached, tune_cache

CODEGEN_CANDIDATE = "codegen-candidate"  # tune's label for a searched schedule of the codegen route
SPLIT_CANDIDATE = "split-candidate"  # tune's label for a searched split-K plan (`tune --route split`)
HOPPER_CANDIDATE = "hopper-candidate"  # tune's label for a searched schedule of the target's own kernels


@dataclass(frozen=True)
class Pipeline:
    name: str
    summary: str
    choose: Callable[[Gemm, Target], Schedule | None]  # None: leave the op to IREE's heuristic
    # a split-K plan where the pipeline's rule wants one, with the rule's reason (`split_plan`); None: never splits
    split: Callable[[Gemm, Target, ComputeUnits | None], tuple[SplitK | None, str]] | None = None
    codegen: bool = False  # the schedule is delivered as a whole transform-dialect library (the codegen route)
    raster: bool = False  # needs a codegen route that builds the raster workgroup order
    ukernels: bool = False  # IREE's own ROCm tensor ukernels enabled (targets with `iree_ukernels`), verified used
    # why `choose` gave None (the problem left to IREE's heuristic), as a clause for messages (`why_default`)
    why_default: Callable[[Gemm, Target], str] = lambda gemm, target: "it is IREE's own heuristic"
    # On a target with a timing model, the model chooses between IREE's default, this pipeline's own plan (`choose`,
    # or the split plan) and the generated warp-group kernels (`pipelines.pick`); elsewhere the plan stands.
    by_model: bool = False
    # The target's own kernels (`Target.kernel_route`): `kernel`, the pipeline is its shipped kernel (refused where
    # the kernels do not take the problem); `prefers_kernel`, the pipeline takes that kernel where the route says it
    # fills the problem (`fills`), else its own rule. Pipelines with `kernel` run only on targets with such a route.
    kernel: bool = False
    prefers_kernel: bool = False

    @property
    def always_planned(self) -> bool:
        """Whether every problem this pipeline takes has a plan of its own (the target's kernel, or a split-K plan
        the pipeline requires): a case of it without one would be IREE's heuristic under its name."""
        return self.kernel or self.split is _split_required


def _intrinsic(pattern: str, dtype: str) -> str:
    return pattern.format(T=dtype.upper())


# (workgroup tile M×N, wave grid), largest first.
_AUTO_LADDER = [((256, 256), (2, 4)), ((256, 128), (2, 2)), ((128, 128), (2, 2)), ((128, 64), (2, 2)),
                ((64, 64), (2, 2)), ((32, 64), (1, 2)), ((16, 64), (1, 2))]


SKINNY = 64  # M or N below this is a decode-style GEMM


# Split-K (`transforms.split_k`): the partial-product kernels, each measured on an H100 (results/h100/skinny: issue
# 16's shapes, bf16): (tile M×N, warp grid, K step, fewest K rows a slice keeps, workgroups per compute unit S aims
# for), shortest tile first. M takes the tallest tile no taller than M, its last row of tiles zero-padded (the
# `padding` IREE's TileAndFuse takes, `transforms.config`), so every M from 16 up has a tile and less than half of
# what the tiles compute is padding; below 16 rows the streaming kernel (no MMA) reads B once at 83-111 % of the copy
# bandwidth where a 16-row MMA tile would compute mostly zeros. The last column is fitted on the sweeps' fastest S
# (results/h100/skinny/README.md): 16- and 64-row tiles kept gaining up to 4 workgroups per compute unit, the
# 128x128 tile was fastest at 256-448 workgroups (2.2 per compute unit of sm_80's 108; S = 4 at 128x8192x8192 ran
# 1.26x S = 16), and K steps of 64 ran 1.1-1.3x those of 32 for it. Measured at M = 16, 64 and 128 (whole tiles);
# the M between run those kernels padded, unmeasured.
SPLIT_TILES: tuple[tuple[tuple[int, int], tuple[int, int], int, int, float], ...] = (
    ((16, 256), (1, 8), 64, 256, 4.0), ((64, 128), (2, 2), 64, 512, 4.0), ((128, 128), (2, 2), 64, 512, 2.2))
STREAMING = Streaming(workgroup_n=256, k_step=8)
STREAMING_MAX_SPLIT, STREAMING_MIN_SLICE = 64, 64  # S = 64 was fastest at every M = 1 shape (S = 32..128 tried)
DATA_PARALLEL_TILE = (128, 128)  # the data-parallel grid the rule compares with the compute units
# Split while that grid gives each compute unit fewer workgroups than this: at 112 tiles for 108 SMs (N = 14336) the
# split kernels still ran 1.5-1.7x IREE's default (results/h100/skinny).
DATA_PARALLEL_WAVES = 2


def _slices(k: int, k_step: int, min_slice: int, want: int, cap: int) -> int:
    """The smallest power of two S reaching `want`, doubled only while each of the 2S slices keeps `min_slice` K
    rows, whole `k_step`-row steps, and 2S <= `cap`; 1 where no split fits."""
    split = 1
    while split < want and split * 2 <= min(cap, k // min_slice) and k % (split * 2 * k_step) == 0:
        split *= 2
    return split


def split_plan(gemm: Gemm, target: Target, units: ComputeUnits | None = None) -> tuple[SplitK | None, str]:
    """Whether to split the reduction, how, and why (one sentence either way, naming the compute units it filled).

    `units`: the compute units to fill, the device's where the command knows it (`pipelines.device_units`); None
    takes the target's. The rule, for plain f16/bf16 GEMMs on GPU targets:
    - data-parallel while the grid of 128×128 tiles, ceil(M/128)·ceil(N/128), gives every compute unit at least
      DATA_PARALLEL_WAVES workgroups (tiles >= DATA_PARALLEL_WAVES × units, equality included); split below that;
    - M < 16 with B stored N×K (nt): data-parallel (IREE's own matrix-vector kernel reads B at the copy bandwidth);
    - other M < 16: the streaming kernel with S = STREAMING_MAX_SPLIT (64) where K takes it (`_slices`: slices of at
      least STREAMING_MIN_SLICE rows and whole 8-row steps);
    - M >= 16: the tallest `SPLIT_TILES` tile no taller than M (of those the target takes), the last row of tiles
      padded; S the smallest power of two with S × workgroups >= the row's workgroups per compute unit × units,
      where K takes it (`_slices`: slices of at least the row's K rows, in whole K steps);
    - S < 2 (K too short for any split): data-parallel.
    Whatever it splits, S divides K into whole K steps of the kernel (`check_split`) and the tile passes the
    schedule checks."""
    units = units or target.units()
    if not _splittable(gemm, target):
        return None, "data-parallel: split-K takes plain f16/bf16 GEMMs on GPU targets"
    tiles = math.ceil(gemm.m / DATA_PARALLEL_TILE[0]) * math.ceil(gemm.n / DATA_PARALLEL_TILE[1])
    if tiles >= DATA_PARALLEL_WAVES * units.count:
        return None, (f"data-parallel: {tiles} tiles of 128x128 give each of the {units.describe()} at least "
                      f"{DATA_PARALLEL_WAVES} workgroups")
    idle = f"{tiles} tiles of 128x128 give the {units.describe()} fewer than {DATA_PARALLEL_WAVES} workgroups each"
    if gemm.m < SPLIT_TILES[0][0][0] and gemm.layout == "nt":
        # Measured on an H100 (results/h100/skinny/nt): with B stored N×K, IREE's own matrix-vector kernel reads it
        # along K at 83-122 % of the copy bandwidth (0.96-2.1x cuBLAS); streaming variants of ours reached 51-79 %.
        return None, (f"data-parallel: M = {gemm.m} with B stored N×K is IREE's own matrix-vector kernel, which reads "
                      "B at the copy bandwidth")
    if gemm.m < SPLIT_TILES[0][0][0]:
        s = _slices(gemm.k, STREAMING.k_step, STREAMING_MIN_SLICE, STREAMING_MAX_SPLIT, STREAMING_MAX_SPLIT)
        split, k_step = SplitK(s, STREAMING), STREAMING.k_step
        why = f"M = {gemm.m} < 16: the streaming kernel reads B once without MMA"
    else:
        mma = _split_mma(gemm, target)
        if mma is None:
            return None, f"data-parallel: {target.name} has no {gemm.dtype} MMA intrinsic with M = 16 for split-K"
        tile, warps, k_step, min_slice, waves = [row for row in _split_rows(target) if row[0][0] <= gemm.m][-1]
        rows, columns = math.ceil(gemm.m / tile[0]), math.ceil(gemm.n / tile[1])
        want = math.ceil(waves * units.count / (rows * columns))
        s = _slices(gemm.k, k_step, min_slice, want, gemm.k)
        split = SplitK(s, _split_tile(tile, k_step, warps, mma, target))
        padded = "" if rows * tile[0] == gemm.m else f" (M padded to {rows * tile[0]})"
        why = (f"{rows * columns} tiles of {tile[0]}x{tile[1]}{padded} x {s} slices of K {gemm.k // s} for the "
               f"{units.count} compute units")
    if split.splits < 2:
        return None, (f"data-parallel: {idle}, but K = {gemm.k} is too short to split into slices of whole "
                      f"{k_step}-row steps")
    try:
        check_split(gemm, split)
        if isinstance(split.partial, Schedule):
            check_schedule(split.partial, partial_gemm(gemm, split), target)
    except (SplitError, ScheduleError) as err:
        return None, f"data-parallel: {idle}, but no split-K kernel fits ({str(err).rstrip('.')})"
    return split, f"split-K {split.splits}: {idle}; {why}"


def _splittable(gemm: Gemm, target: Target) -> bool:
    """Split-K takes plain f16/bf16 GEMMs on GPU targets."""
    return target.gpu and not gemm.batched and gemm.epilogue.kind == "none" and gemm.dtype in ("f16", "bf16")


def _split_rows(target: Target) -> list:
    """The rows of `SPLIT_TILES` whose tile the target takes (gfx1151's limit: 128x128x64 spilled at 256 VGPRs)."""
    limit = target.named.max_tile_elements
    return [row for row in SPLIT_TILES if limit is None or row[0][0] * row[0][1] <= limit]


def _split_tile(tile: tuple[int, int], k_step: int, warps: tuple[int, int], mma: str, target: Target) -> Schedule:
    """A partial-product tile kernel, its waves along M doubled where `auto` doubles them (wave32 lanes hold twice
    the accumulator)."""
    if target.named.double_waves_m and tile[0] % (2 * warps[0] * mma_shape(mma)[0]) == 0:
        warps = (2 * warps[0], warps[1])
    return Schedule(Tile(tile, k_step, warps, mma), Staging(1), Swizzle("pad"))


def _split_mma(gemm: Gemm, target: Target) -> str | None:
    patterns = target.named.auto_intrinsics.get(dtype_family(gemm.dtype), ())
    return next((_intrinsic(p, gemm.dtype) for p in patterns if mma_shape(_intrinsic(p, gemm.dtype))[0] == 16), None)


def _split_required(gemm: Gemm, target: Target, units: ComputeUnits | None = None) -> tuple[SplitK | None, str]:
    split, why = split_plan(gemm, target, units)
    if split is None:
        raise TargetError(f"pipeline 'split-k' does not split {gemm.shape_name} {gemm.layout} {gemm.dtype} on "
                          f"{target.name}: {why}.")
    return split, why


# `tune --route split`: the slices, streaming shapes (columns per workgroup, K rows per step) and K steps it tries.
SEARCH_SPLITS = (2, 4, 8, 16, 32, 64, 128)
SEARCH_STREAMING = ((256, 8), (256, 16), (512, 16))
SEARCH_K_STEPS = (32, 64)


def split_candidates(gemm: Gemm, target: Target, units: ComputeUnits | None = None) -> list[SplitK]:
    """Every split-K plan `tune --route split` measures for `gemm`: for M < 16 (B not stored N×K) the streaming
    kernel at each S and shape, otherwise each `SPLIT_TILES` tile no taller than M (padded as the rule pads it), at
    each K step and S; those the checks refuse are left out. `units` orders them around the rule's choice for
    those compute units (`split_plan`)."""
    rule, _ = split_plan(gemm, target, units)
    if not _splittable(gemm, target):
        raise TuneError(f"tune --route split searches plain f16/bf16 GEMMs on GPU targets, not {gemm.shape_name} "
                        f"{gemm.dtype} on {target.name}.")
    kernels: list[Schedule | Streaming] = []
    if gemm.m < SPLIT_TILES[0][0][0]:
        kernels = [Streaming(columns, step) for columns, step in SEARCH_STREAMING]
    mma = _split_mma(gemm, target)
    for tile, warps, _, _, _ in _split_rows(target):
        if mma is not None and tile[0] <= gemm.m:
            kernels += [_split_tile(tile, k, warps, mma, target) for k in SEARCH_K_STEPS]
    found = []
    for kernel in kernels:
        for splits in SEARCH_SPLITS:
            plan = SplitK(splits, kernel)
            try:
                check_split(gemm, plan)
                if isinstance(kernel, Schedule):
                    check_schedule(kernel, partial_gemm(gemm, plan), target)
            except (SplitError, ScheduleError):
                continue
            found.append(plan)
    if not found:
        raise TuneError(f"no split-K plan fits {gemm.shape_name} {gemm.layout} {gemm.dtype} on {target.name}.")
    # The rule's own choice first, then its kernel at other S (nearest first), then the other kernels: a --limit
    # search measures the neighbourhood of the rule (an H100 search of 16 in generation order spent 11 on 16-row
    # tiles for M = 64, none of them within 1.8x of the rule's choice).
    def distance(plan: SplitK) -> tuple:
        if rule is None:
            return (0, 0.0)
        return (plan.partial != rule.partial, abs(math.log2(plan.splits / rule.splits)))

    return sorted(found, key=distance)


def _searched_split(gemm: Gemm, target: Target, units: ComputeUnits | None = None) -> tuple[SplitK | None, str]:
    """The split-K plan `tune --route split` measured for this problem, where it ran faster than IREE's default and
    than the best schedule `tune` measured (or no schedule was measured)."""
    hit = cached(gemm, target, tune_cache(), Search("split-k"))
    if hit is None:
        return None, "no split-K search result"
    if not beats_default(hit):
        return None, "the searched split-K plan ran no faster than IREE's default"
    other = cached(gemm, target, tune_cache())
    if other is not None and (other.get("tflops") or 0) >= (hit.get("tflops") or 0):
        return None, "the searched schedule ran faster than the searched split-K plan"
    return split_from_dict(hit["schedule"]), (f"split-K: the fastest plan `pipelines tune --route split` measured "
                                              f"({hit.get('tflops', 0):.1f} TFLOP/s on {hit.get('device')})")


def with_splits(split: SplitK, splits: int) -> SplitK:
    """The plan with S forced (`--split-k` on a split pipeline)."""
    return dataclasses.replace(split, splits=splits)


def _tuned(gemm: Gemm, target: Target) -> Schedule | None:
    rules = target.named
    if dtype_family(gemm.dtype) not in rules.tuned:
        raise TargetError(f"pipeline 'tuned' has no schedule for {gemm.dtype} on {target.name}.")
    pattern, schedule = rules.tuned[dtype_family(gemm.dtype)]
    schedule = _with_mma(schedule, _intrinsic(pattern, gemm.dtype))
    if schedule.swizzle.lds in ("xor", "rotate") and not any(k_contiguous(gemm)):
        # TN stores neither operand K-contiguous: nothing to swizzle, so the rows stay unpadded (DMA) or padded.
        schedule = dataclasses.replace(schedule, swizzle=Swizzle(
            "none" if schedule.staging.direct_to_lds else "pad", schedule.swizzle.workgroup_order))
    if schedule.swizzle.workgroup_order == "xcd" and (gemm.batched or min(workgroup_grid(schedule, gemm)) < 2):
        schedule = dataclasses.replace(schedule, swizzle=Swizzle(schedule.swizzle.lds, "row"))
    if (not aligned(schedule, gemm) or not worth_trying(schedule, gemm, target)
            or _spills(schedule.tile.workgroup, schedule.tile.k, gemm, target)
            or (rules.whole_tiles_only and math.prod(workgroup_grid(schedule, gemm)) * (gemm.batch or 1)
                < target.compute_units)):
        # The tuned tiles are for whole multiples with a K loop long enough to pipeline, in the layouts they fit
        # (and where only whole tiles are kept, enough of them to fill the chip); padded ones spill (gfx1151, and
        # gfx950 256x256 NT at 4000³), and short loops keep one stage: `auto` sizes the tile to the problem.
        return _auto(gemm, target)
    return schedule


def _auto(gemm: Gemm, target: Target) -> Schedule | None:
    """The largest ladder tile that fits the problem, passes `check` with the accumulator in at most half of
    the registers, and still gives every compute unit a workgroup; else the smallest valid one."""
    rules = target.named
    if dtype_family(gemm.dtype) not in rules.auto_intrinsics:
        raise TargetError(f"pipeline 'auto' has no schedule for {gemm.dtype} on {target.name}.")
    if min(gemm.m, gemm.n) < SKINNY:
        # Decode-style GEMMs: IREE's own heuristic ran 16x8192x8192 at 16.5 TFLOP/s on an H200 where our best
        # ladder tile (16x64) reached 8.8 (results/h200), so auto leaves them to it.
        return None
    mmas = [_intrinsic(pattern, gemm.dtype) for pattern in rules.auto_intrinsics[dtype_family(gemm.dtype)]]
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
        if rules.whole_tiles_only and (tile[0] * tile[1] < rules.min_tile_elements or gemm.m % tile[0]
                                       or gemm.n % tile[1] or gemm.k % k_tile):
            continue  # the target's rule (CUDA: measured on an H200, see `pipelines.targets`)
        if rules.max_tile_elements is not None and tile[0] * tile[1] > rules.max_tile_elements:
            continue  # spilled in the sweep (gfx1151: see `pipelines.targets`)
        if rules.double_waves_m and tile[0] % (2 * gm * mm) == 0:
            # wave32 lanes hold twice the accumulator: spread the tile over twice the waves. Not on CUDA: there it
            # let 256x256x64 on 4x4 warps through, which the bf16 8192³ sweep on an H200 measured at 16 TFLOP/s
            # against 215 for 128x128x64 on 2x2 (results/h200/tune_bf16_8192).
            gm *= 2
        schedule = next((s for s in _auto_stagings(tile, (gm, gn), k_tile, mma, gemm, target)
                         if worth_trying(s, gemm, target)), None)
        if schedule is None:
            continue
        valid.append(schedule)
        workgroups = math.ceil(gemm.m / tile[0]) * math.ceil(gemm.n / tile[1]) * (gemm.batch or 1)
        if workgroups >= target.compute_units:
            return schedule
    if rules.whole_tiles_only:
        # No whole tile fills the chip: IREE's heuristic, measured faster on an H200 in the same run (128x128 at
        # 0.86-0.87x on 128x8192x8192 NT and 4096x256x4096, 64 workgroups;
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
    short = target.named.fp8_256_min_k_steps
    if short and gemm.dtype.startswith("f8") and tile == (256, 256) and (
            gemm.layout == "tn" or math.ceil(gemm.k / k_tile) < short):
        return True  # the target's rule (gfx950: see `pipelines.targets`)
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
    big = tile[0] * tile[1] >= 256 * 128 and target.lds_swizzle and any(k_contiguous(gemm))
    pipelined = target.prefetch_pipelining
    stagings = [Staging(2, direct_to_lds=True)] * target.dma + [Staging(2)] * pipelined + [
        Staging(1 if pipelined else 0)]
    return [Schedule(Tile(tile, k_tile, warps, mma), staging,
                     Swizzle("xor" if big else ("none" if staging.direct_to_lds else "pad")))
            for staging in stagings]


def _codegen(gemm: Gemm, target: Target) -> Schedule:
    route = codegen_route(target)
    if route is None:
        raise TargetError(f"pipeline 'codegen' generates GPU kernels; {target.name} is neither a CUDA nor a ROCm "
                          "target.")
    return route.choose(gemm, target)


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


def beats_default(entry: dict) -> bool:
    """Whether a tune cache entry's schedule ran faster than IREE's default in its search (an entry whose default
    did not run could not be compared, and is taken at its word)."""
    speedup = entry.get("speedup_over_default")
    return speedup is None or speedup > 1


def _searched(gemm: Gemm, target: Target) -> Schedule | None:
    """The schedule `pipelines tune` measured best for this problem; IREE's default (None) where that schedule ran
    no faster than the default: a search whose candidates all lost leaves the problem to IREE."""
    hit = cached(gemm, target, tune_cache())
    if hit is None and cached(gemm, target, tune_cache(), Search("split-k")) is not None:
        return None  # only a split-K search, which `_searched_split` found no faster than IREE's default
    if hit is None:
        raise TargetError(f"pipeline 'searched' has no result for {gemm.shape_name} {gemm.layout} {gemm.dtype} on "
                          f"{target.name}; run `pipelines tune` for it first (cache {tune_cache()}).")
    return schedule_from_dict(hit["schedule"]) if beats_default(hit) else None


def _auto_why_default(gemm: Gemm, target: Target) -> str:
    """Why `_auto` gave None (only then): the one check before its ladder, or what ended the ladder empty."""
    if gemm.m < SKINNY or gemm.n < SKINNY:
        return (f"M or N is below {SKINNY}, as in decode-style GEMMs, where IREE's own heuristic ran faster than "
                "auto's tiles")
    if target.named.whole_tiles_only:
        return (f"no whole tile of auto's ladder gives each of the {target.compute_units} compute units of "
                f"{target.name} a workgroup, and there IREE's own heuristic measured faster")
    return f"every tile of auto's ladder spills registers on this {gemm.dtype} problem"


def _tuned_why_default(gemm: Gemm, target: Target) -> str:
    """Why `_tuned` gave None: its tile did not fit, and `auto`, which it then takes, gave None."""
    _, schedule = target.named.tuned[dtype_family(gemm.dtype)]
    m, n = schedule.tile.workgroup
    return (f"its {m}x{n}x{schedule.tile.k} tile is for whole multiples of it with a K loop long enough to pipeline, "
            f"so it takes auto's choice, IREE's default here ({_auto_why_default(gemm, target)})")


def _searched_why_default(gemm: Gemm, target: Target) -> str:
    """Why `_searched` gave None: the search's best ran no faster than IREE's default."""
    hit = cached(gemm, target, tune_cache()) or cached(gemm, target, tune_cache(), Search("split-k")) or {}
    return (f"the best schedule `pipelines tune` measured ran at {hit.get('speedup_over_default') or 0:.2f}x IREE's "
            "default, so IREE's default is the faster choice")


def why_default(name: str, gemm: Gemm, target: Target) -> str:
    """One sentence: pipeline `name` leaves `gemm` to IREE's default heuristic, and why (call where it does)."""
    why = get_pipeline(name).why_default(gemm, target)
    return f"pipeline '{name}' leaves {gemm.shape_name} {gemm.layout} {gemm.dtype} to IREE's default heuristic: {why}"


PIPELINES: dict[str, Pipeline] = {p.name: p for p in (
    Pipeline("default", "IREE 3.13's own heuristic (no tuning spec)", lambda gemm, target: None),
    Pipeline("tuned", "one hand-picked schedule per target and input type (AMD: a warp-group kernel instead where "
                      "the timing model predicts it faster by more than its error)", _tuned,
             why_default=_tuned_why_default, by_model=True),
    Pipeline("auto", "largest tile that still fills every compute unit; split-K where that grid leaves compute "
                     "units idle (AMD: the fastest of that, tuned's schedule, IREE's default and the warp-group "
                     "kernels by the timing model, IREE's default unless another beats it by more than the model's "
                     "error)", _auto, split=split_plan, why_default=_auto_why_default, by_model=True,
             prefers_kernel=True),
    Pipeline("searched", "the best schedule (or split-K plan) `pipelines tune` measured for this exact problem",
             _searched, split=_searched_split, why_default=_searched_why_default),
    Pipeline("ukernel", "IREE 3.13's own heuristic with its ROCm tensor ukernels (its built-in ping-pong), "
                        "verified to be used", lambda gemm, target: None, ukernels=True,
             why_default=lambda gemm, target: "it is IREE's own heuristic with its ROCm tensor ukernels"),
    Pipeline("codegen", "full transform-dialect codegen script (CUDA: cp.async, ldmatrix, mma.sync; ROCm: lane MMA)",
             _codegen, codegen=True),
    Pipeline("codegen-raster", "codegen in raster workgroup order (groups of up to 8 rows of tiles, for L2 reuse)",
             _codegen_raster, codegen=True, raster=True),
    Pipeline("split-k", "the reduction split across workgroups (streaming kernel for M < 16, MMA tiles above), "
                        "partial sums added by a second dispatch", lambda gemm, target: None, split=_split_required),
    Pipeline("hopper", "the target's own Hopper kernel (sm_90a: TMA, mbarrier, wgmma), its shipped schedule "
                       "fitted to skinny and long-K problems (64-row tiles, K in slices)",
             lambda gemm, target: None, kernel=True,
             why_default=lambda gemm, target: "it is the target's own kernel"),
)}


def kernel_plan(name: str, gemm: Gemm, target: Target) -> KernelPlan | None:
    """The target's own kernel where pipeline `name` takes it (`Pipeline.kernel`, `Pipeline.prefers_kernel`), else
    None; a `kernel` pipeline's problem the kernels do not take is one sentence (TargetError)."""
    pipeline, route = get_pipeline(name), kernel_route(target)
    if route is None or not (pipeline.kernel or (pipeline.prefers_kernel and route.fills(gemm, target))):
        return None
    return route.default_plan(gemm, target)


def rule_plan(name: str, gemm: Gemm, target: Target,
              units: ComputeUnits | None = None) -> Schedule | SplitK | KernelPlan | None:
    """What pipeline `name`'s own rule does with `gemm`, before any choice by the timing model: a split-K plan where
    its rule splits (for `units`, the device's compute units where known, else the target's), else its schedule (or
    None)."""
    pipeline = get_pipeline(name)
    kernel = kernel_plan(name, gemm, target)
    if kernel is not None:
        return kernel
    if pipeline.split is not None:
        split, _ = pipeline.split(gemm, target, units)
        if split is not None:
            return split
    return pipeline.choose(gemm, target)


def _rule_name(name: str, plan: Schedule | SplitK | KernelPlan | None) -> str:
    if isinstance(plan, SplitK):
        return "split-K rule"
    return "tuned schedule" if name == "tuned" else "tile ladder"


@lru_cache(maxsize=256)
def model_choice(name: str, gemm: Gemm, target: Target, units: ComputeUnits | None = None,
                 kernels: bool = True) -> Pick | None:
    """The timing model's choice for pipeline `name` (`pipelines.pick`), None where the pipeline does not choose by
    the model on `target`. `kernels=False`: schedules only (a contraction inside a user's program). `auto` also
    weighs `tuned`'s schedule where it differs from its own."""
    if not get_pipeline(name).by_model or target.timing is None:
        return None
    plan = rule_plan(name, gemm, target, units) if kernels else get_pipeline(name).choose(gemm, target)
    also: tuple[Option, ...] = ()
    if name == "auto":
        try:
            tuned = _tuned(gemm, target)
        except TargetError:
            tuned = None
        if tuned is not None and tuned != plan:
            also = (Option("tuned schedule", tuned),)
    return pick(name, gemm, target, Option(_rule_name(name, plan), plan),
                lambda option: plan_job(target, name, gemm, option.plan, units), units, kernels, also)


def plan_for(name: str, gemm: Gemm, target: Target,
             units: ComputeUnits | None = None) -> Schedule | SplitK | Kernel | KernelPlan | None:
    """What pipeline `name` does with `gemm`: the timing model's choice where the pipeline chooses by it on `target`
    (`model_choice`), else its own rule (`rule_plan`)."""
    choice = model_choice(name, gemm, target, units)
    return choice.chosen.plan if choice is not None else rule_plan(name, gemm, target, units)


def schedule_for(name: str, gemm: Gemm, target: Target) -> Schedule | None:
    """The schedule pipeline `name` gives a contraction of a larger program (no kernel, no split): the timing model's
    choice between its schedule and IREE's default where it chooses by the model, else its schedule."""
    choice = model_choice(name, gemm, target, None, False)
    if choice is None:
        return get_pipeline(name).choose(gemm, target)
    assert choice.chosen.plan is None or isinstance(choice.chosen.plan, Schedule)
    return choice.chosen.plan


def plan_job(target: Target, pipeline: str, gemm: Gemm, plan: Schedule | SplitK | Kernel | KernelPlan | None,
             units: ComputeUnits | None = None) -> Job:
    """The compile job of one GEMM under `pipeline` with what `plan_for` (or a search) gave it; a split-K plan of a
    pipeline's rule carries the rule's reason for `units` (None: the target's compute units)."""
    route = kernel_route(target)
    if isinstance(plan, KERNEL_PLANS):
        if route is None or not route.takes(plan):
            raise TargetError(f"{target.name} has no route for the Hopper kernels or the stream kernel (sm_90a's "
                              "own); use --target sm_90a.")
        return Job(target, pipeline, (gemm,), (None,), route=route.name, plan=plan)
    if plan is not None and not isinstance(plan, (Schedule, SplitK)):  # a generated warp-group kernel
        return Job(target, pipeline, (gemm,), (None,), route=UkernelRoute.name, plan=plan)
    if isinstance(plan, SplitK):
        rule = PIPELINES[pipeline].split if pipeline in PIPELINES else None
        chosen, why = rule(gemm, target, units) if rule is not None else (None, "")
        return Job(target, pipeline, (gemm,), (None,), route=SplitReductionRoute.name, plan=plan,
                   split_reason=why if chosen == plan else "", compute_units=units)
    return Job(target, pipeline, (gemm,), (plan,), route=codegen_route_name(target) if is_codegen(pipeline) else "",
               iree_ukernels=uses_ukernels(pipeline))


def uses_ukernels(name: str) -> bool:
    """Whether a pipeline compiles with IREE's tensor ukernels enabled."""
    return name in PIPELINES and PIPELINES[name].ukernels


def is_codegen(name: str) -> bool:
    """Whether a pipeline (or a tune candidate of the codegen route) compiles through the codegen library."""
    return name == CODEGEN_CANDIDATE or (name in PIPELINES and PIPELINES[name].codegen)


def get_pipeline(name: str) -> Pipeline:
    if name not in PIPELINES:
        raise TargetError(f"unknown pipeline '{name}'; choose one of {', '.join(PIPELINES)}.")
    return PIPELINES[name]


def pipelines_for(target: Target) -> list[str]:
    """The pipelines that run on `target`: those that schedule need a GPU, the codegen ones its codegen route
    (the raster one a route that builds that order)."""
    if not target.gpu:
        return ["default"]
    route = codegen_route(target)
    return [p.name for p in PIPELINES.values()
            if (not p.codegen or (route is not None and (route.raster or not p.raster)))
            and (not p.ukernels or target.iree_ukernels) and (not p.kernel or target.kernel_route)]
