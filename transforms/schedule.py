"""Schedules: how a GEMM is tiled, staged, swizzled and spread over waves, as small frozen dataclasses.

A `Schedule` is plain, hashable data in the hardware's vocabulary. This module also owns the arithmetic derived
from it (waves, intrinsic counts, LDS plan, accumulator registers) and `check`, the one place where a schedule is
validated against a problem and a target before anything is compiled. A target is any object with the fields
of `pipelines.targets.Target` (name, gpu, wave_size, lds_bytes, vgprs_per_lane, mma, dma, xcds and what IREE does
with prefetch, swizzles and waves per EU on it); this module does not import the target table, it is handed one
entry. Intrinsic shapes and operand types are IREE's own (its `MMAIntrinsic` attributes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .errors import UserError
from .problem import Gemm

LDS_LAYOUTS = ("pad", "xor", "rotate", "none")
# row: row-major launch order; xcd: IREE's XCD-aware conditional transpose (ROCm); raster: groups of
# `raster_rows` rows of tiles walked column by column, so consecutive workgroups share A and B tiles in L2 (the
# codegen route only, which computes the remapped ids itself).
WORKGROUP_ORDERS = ("row", "xcd", "raster")
DEFAULT_RASTER_ROWS = 8
# IREE 3.13 pads each promoted row by 64 bits when bank-conflict padding is on.
LDS_ROW_PADDING_BYTES = 8
# prefetch_num_stages = 4 is accepted by IREE 3.13 but behaves like 3 (register prefetch) or like 1 (with
# global->LDS DMA on gfx950); we refuse it instead of compiling something else.
MAX_PREFETCH_STAGES = 3
# Bytes one swizzled LDS row spans: 32 banks × 4 B, one full pass over gfx942's banks (IREE's own gfx950 default,
# xor_shuffle<64, 8> for bf16, spans the same 128 B).
SWIZZLE_ROW_BYTES = 128
# Widest LDS access per lane (ds_read_b128).
LDS_ACCESS_BYTES = 16
# IREE 3.13 on ROCm pipelines a K loop (prefetch >= 2, and the extra LDS buffers of direct loads) only from this many
# K steps on: with 1 or 2 steps it keeps one stage and says nothing (the named-pipeline sweep: prefetch 2 and 3 at
# K = 2 steps of the tile, 3 steps pipelined; tools/named_sweep.py).
MIN_PIPELINED_K_STEPS = 3


class ScheduleError(UserError, ValueError):
    """A schedule that does not fit its problem or target; the message is one sentence naming value and limit."""


@dataclass(frozen=True)
class Tile:
    """Workgroup tile (M×N elements), K step (elements), wave grid over the tile (M×N) and MMA intrinsic."""

    workgroup: tuple[int, int]
    k: int
    warps: tuple[int, int]
    mma: str


@dataclass(frozen=True)
class Staging:
    """Software pipelining: IREE's prefetch_num_stages, and gfx950 direct global->LDS loads (real LDS buffers)."""

    prefetch_stages: int = 2
    direct_to_lds: bool = False


@dataclass(frozen=True)
class Swizzle:
    """LDS layout (row padding, XOR or row-rotate swizzle, or neither), workgroup order (row-major, XCD-aware or
    rastered in groups) and, for the raster order, the rows of tiles per group (None: DEFAULT_RASTER_ROWS)."""

    lds: str = "pad"
    workgroup_order: str = "row"
    raster_rows: int | None = None

    @property
    def group_rows(self) -> int:
        """Rows of workgroup tiles per raster group."""
        return self.raster_rows if self.raster_rows is not None else DEFAULT_RASTER_ROWS


@dataclass(frozen=True)
class WarpGroups:
    """Threads per workgroup (derived from the wave grid when None) and the occupancy asked of LLVM."""

    workgroup_size: int | None = None
    waves_per_eu: int | None = None


@dataclass(frozen=True)
class Schedule:
    tile: Tile
    staging: Staging = field(default_factory=Staging)
    swizzle: Swizzle = field(default_factory=Swizzle)
    warp_groups: WarpGroups = field(default_factory=WarpGroups)

    @property
    def waves(self) -> int:
        return self.tile.warps[0] * self.tile.warps[1]

    def describe(self) -> str:
        t = self.tile
        parts = [f"tile {t.workgroup[0]}x{t.workgroup[1]}x{t.k}", f"warps {t.warps[0]}x{t.warps[1]}", t.mma,
                 f"prefetch {self.staging.prefetch_stages}", f"lds {self.swizzle.lds}",
                 f"order {self.swizzle.workgroup_order}"
                 + (f" ({self.swizzle.group_rows} rows)" if self.swizzle.workgroup_order == "raster" else "")]
        if self.staging.direct_to_lds:
            parts.append("direct-to-lds")
        if self.warp_groups.waves_per_eu:
            parts.append(f"waves/eu {self.warp_groups.waves_per_eu}")
        return ", ".join(parts)


def schedule_from_dict(fields: dict) -> Schedule:
    """Inverse of dataclasses.asdict(schedule), for schedules stored as JSON (tuning results, plans)."""
    tile = dict(fields["tile"], workgroup=tuple(fields["tile"]["workgroup"]), warps=tuple(fields["tile"]["warps"]))
    return Schedule(Tile(**tile), Staging(**fields["staging"]), Swizzle(**fields["swizzle"]),
                    WarpGroups(**fields["warp_groups"]))


@functools.cache
def _mma_attr(mma: str) -> tuple[tuple[int, int, int], str]:
    """(M, N, K) and the A/B element type of one intrinsic, as IREE's MMAIntrinsic attribute states them."""
    from iree.compiler import ir
    from iree.compiler.dialects import iree_gpu

    intrinsic = getattr(iree_gpu.MMAIntrinsic, mma, None) if mma.isidentifier() else None
    if intrinsic is None:
        raise ScheduleError(f"cannot read the M×N×K shape of MMA intrinsic '{mma}': IREE 3.13 has no such intrinsic.")
    with ir.Context():
        attr = iree_gpu.MMAIntrinsicAttr.get(intrinsic).mma
        return tuple(attr.mnk_shape), str(attr.abc_element_types[0])


def mma_shape(mma: str) -> tuple[int, int, int]:
    """(M, N, K) of one intrinsic (e.g. MFMA_F32_32x32x8_BF16 -> 32, 32, 8), from IREE's attribute."""
    return _mma_attr(mma)[0]


def mma_operand(mma: str) -> str:
    """Element type of the intrinsic's A and B operands (MLIR spelling), from IREE's attribute."""
    return _mma_attr(mma)[1]


# Intrinsics whose A/B values in one lane are not one run along K: lane group g (lanes 16g..16g+15) holds K
# g·r .. g·r + r - 1 of each of `blocks` blocks of K / blocks (r = K / (4·blocks)). IREE lays gfx950's double-rate
# fp8 MFMA out so (outer 2 along K, 16 elements each); a kernel reading one run of 32 computed the wrong product on
# the emulator, two runs 64 apart the right one.
MMA_K_BLOCKS = {"MFMA_F32_16x16x128_F8E4M3FN": 2, "MFMA_F32_16x16x128_F8E5M2": 2}


def fragment_blocks(mma: str) -> int:
    """Runs along K of one lane's A/B values for intrinsic `mma` (`MMA_K_BLOCKS`; one for the others)."""
    return MMA_K_BLOCKS.get(mma, 1)


def element_bytes(dtype: str) -> int:
    return 1 if dtype.startswith("f8") else 2


def subgroup_tiles(schedule: Schedule) -> tuple[int, int]:
    """MMA tiles each wave owns along M and N: IREE's `subgroup` lowering-config entry."""
    mm, mn, _ = mma_shape(schedule.tile.mma)
    (wm, wn), (gm, gn) = schedule.tile.workgroup, schedule.tile.warps
    return wm // (gm * mm), wn // (gn * mn)


def k_tiles(schedule: Schedule) -> int:
    """MMA steps per K step: IREE's `reduction` lowering-config entry."""
    return schedule.tile.k // mma_shape(schedule.tile.mma)[2]


def workgroup_size(schedule: Schedule, wave_size: int) -> int:
    return schedule.warp_groups.workgroup_size or schedule.waves * wave_size


def workgroup_grid(schedule: Schedule, gemm: Gemm) -> tuple[int, int]:
    """Workgroups along M and N (per batch)."""
    tm, tn = schedule.tile.workgroup
    return -(-gemm.m // tm), -(-gemm.n // tn)


def aligned(schedule: Schedule, gemm: Gemm) -> bool:
    """Whether M, N and K are whole multiples of the workgroup tile and K step."""
    (wm, wn), k = schedule.tile.workgroup, schedule.tile.k
    return gemm.m % wm == 0 and gemm.n % wn == 0 and gemm.k % k == 0


def k_steps(schedule: Schedule, gemm: Gemm) -> int:
    """Iterations of the K loop (the last one partial when the tile does not divide K)."""
    return -(-gemm.k // schedule.tile.k)


def mma_per_k_step(schedule: Schedule) -> int:
    """Intrinsic instructions one wave issues per K step."""
    sm, sn = subgroup_tiles(schedule)
    return sm * sn * k_tiles(schedule)


def operand_tiles(schedule: Schedule, gemm: Gemm) -> list[tuple[int, int]]:
    """(rows, row elements) of the A and B tiles as they sit in LDS, in the operands' stored layouts."""
    (wm, wn), k = schedule.tile.workgroup, schedule.tile.k
    a = (k, wm) if gemm.layout == "tn" else (wm, k)
    b = (wn, k) if gemm.layout == "nt" else (k, wn)
    return [a, b]


def k_contiguous(gemm: Gemm) -> tuple[bool, bool]:
    """Whether A's and B's LDS rows run along K. Only those are swizzled: the MMA reads 16 B slices of K from
    one row, which is the access an XOR or rotate of 16 B chunks spreads over banks (IREE's own gfx950 default
    swizzles exactly these operands, and rejects a DMA swizzle on the others)."""
    return gemm.layout != "tn", gemm.layout == "nt"


def swizzle_params(schedule: Schedule, gemm: Gemm) -> tuple[int, int]:
    """(row elements, access elements) of the LDS swizzle: a 128 B row cut into 16 B accesses."""
    eb = element_bytes(gemm.dtype)
    return SWIZZLE_ROW_BYTES // eb, LDS_ACCESS_BYTES // eb


def lds_plan_bytes(schedule: Schedule, gemm: Gemm) -> int:
    """LDS bytes the schedule should allocate: A and B tiles, padded rows, one buffer per DMA stage."""
    eb = element_bytes(gemm.dtype)
    tiles = operand_tiles(schedule, gemm)
    total = sum(rows * cols * eb for rows, cols in tiles)
    if schedule.swizzle.lds == "pad":
        total += sum(rows for rows, _ in tiles) * LDS_ROW_PADDING_BYTES
    if schedule.staging.direct_to_lds:
        total *= max(1, schedule.staging.prefetch_stages)
    return total


def accumulator_vgprs(schedule: Schedule, wave_size: int) -> int:
    """32-bit registers per lane that hold the f32 accumulator tile of one wave."""
    wm, wn = schedule.tile.workgroup
    return wm * wn // schedule.waves // wave_size


def worth_trying(schedule: Schedule, gemm: Gemm, target) -> bool:
    """For the schedule searches: passes `check`, and leaves room for operands and addresses with the
    accumulator in at most half of the registers (rounded up). `check` itself only rejects what cannot fit."""
    try:
        check(schedule, gemm, target)
    except ScheduleError:
        return False
    return accumulator_vgprs(schedule, target.wave_size) <= (target.vgprs_per_lane + 1) // 2


def operand_vgprs(schedule: Schedule, gemm: Gemm, wave_size: int) -> int:
    """32-bit registers per lane for operands: one intrinsic K slice of A and B fragments, plus the copy of the
    next A and B tiles that register prefetch keeps in flight (none when loads go straight to LDS)."""
    mm, mn, mk = mma_shape(schedule.tile.mma)
    sm, sn = subgroup_tiles(schedule)
    eb = element_bytes(gemm.dtype)
    fragments = (sm * mm + sn * mn) * mk * eb // 4 // wave_size
    staged = 0
    if schedule.staging.prefetch_stages >= 2 and not schedule.staging.direct_to_lds:
        (wm, wn), k = schedule.tile.workgroup, schedule.tile.k
        staged = (wm + wn) * k * eb // 4 // (schedule.waves * wave_size)
    return fragments + staged


def check(schedule: Schedule, gemm: Gemm, target) -> None:
    """Raise ScheduleError with one sentence if `schedule` cannot run `gemm` on `target` as asked."""
    tile, name = schedule.tile, target.name
    if not target.gpu:
        raise ScheduleError(f"the {name} target compiles with IREE's own CPU pipeline; GPU schedules do not apply to "
                            "it.")
    if tile.mma not in target.mma:
        raise ScheduleError(f"{name} has no MMA intrinsic {tile.mma}; it offers {', '.join(target.mma)}.")
    if target.mma[tile.mma].operand != gemm.dtype:
        raise ScheduleError(f"{tile.mma} multiplies {target.mma[tile.mma].operand}, but the problem's inputs are "
                            f"{gemm.dtype}.")
    mm, mn, mk = mma_shape(tile.mma)
    for axis, size, warps, mma_size in (("M", tile.workgroup[0], tile.warps[0], mm),
                                        ("N", tile.workgroup[1], tile.warps[1], mn)):
        if warps <= 0 or size <= 0 or size % (warps * mma_size):
            raise ScheduleError(f"workgroup tile {axis}={size} is not a multiple of {warps} waves × the "
                                f"intrinsic's {axis}={mma_size}.")
    if tile.k <= 0 or tile.k % mk:
        raise ScheduleError(f"K tile {tile.k} is not a multiple of {tile.mma}'s K={mk}.")
    for axis, size, limit in (("M", tile.workgroup[0], gemm.m), ("N", tile.workgroup[1], gemm.n),
                              ("K", tile.k, gemm.k)):
        if size > limit:
            raise ScheduleError(f"tile {axis}={size} exceeds the problem's {axis}={limit}; IREE 3.13 would shrink "
                                "or reject it, so choose a tile no larger than the problem.")

    wave = target.wave_size
    threads = schedule.waves * wave
    requested = schedule.warp_groups.workgroup_size
    if requested is not None and requested != threads:
        raise ScheduleError(f"workgroup size {requested} does not match the {tile.warps[0]}x{tile.warps[1]} wave "
                            f"grid, which needs {threads} threads at wave size {wave}.")
    if threads > target.max_workgroup_threads:
        raise ScheduleError(f"{tile.warps[0]}x{tile.warps[1]} waves make {threads} threads per workgroup; {name} "
                            f"allows at most {target.max_workgroup_threads}.")

    stages = schedule.staging.prefetch_stages
    if not 0 <= stages <= MAX_PREFETCH_STAGES:
        raise ScheduleError(f"prefetch stages {stages} is outside 0..{MAX_PREFETCH_STAGES}; IREE 3.13 silently "
                            "degrades deeper pipelines.")
    if stages >= 2 and not target.prefetch_pipelining:
        raise ScheduleError(f"prefetch stages {stages} would be ignored on {name}: IREE 3.13 pipelines shared "
                            "memory on ROCm only (its PTX is identical for 0 and 3); use 0 or 1.")
    if schedule.staging.direct_to_lds and not target.dma:
        raise ScheduleError(f"direct global->LDS loads are not available on {name} (IREE 3.13 enables them on "
                            "gfx950 only).")
    if stages >= 2 and target.prefetch_pipelining and k_steps(schedule, gemm) < MIN_PIPELINED_K_STEPS:
        raise ScheduleError(f"prefetch stages {stages} need at least {MIN_PIPELINED_K_STEPS} K steps, and K={gemm.k} "
                            f"is {k_steps(schedule, gemm)} step(s) of {tile.k}: IREE 3.13 would keep one stage; use "
                            "--prefetch 1 or a smaller K tile.")
    if schedule.staging.direct_to_lds and not aligned(schedule, gemm):
        raise ScheduleError(f"direct global->LDS loads need whole tiles: IREE 3.13 pads {gemm.shape_name} to "
                            f"{tile.workgroup[0]}x{tile.workgroup[1]}x{tile.k} tiles and then loads through "
                            "registers into one LDS buffer; use a tile that divides the problem, or no --dma.")
    if schedule.staging.direct_to_lds and schedule.swizzle.lds == "pad":
        raise ScheduleError("direct global->LDS loads write whole rows, so they cannot use padded LDS rows; "
                            "choose --lds xor, rotate or none.")
    if schedule.swizzle.lds not in LDS_LAYOUTS:
        raise ScheduleError(f"unknown LDS layout '{schedule.swizzle.lds}'; choose one of {', '.join(LDS_LAYOUTS)}.")
    if schedule.swizzle.lds in ("xor", "rotate"):
        if not target.lds_swizzle:
            raise ScheduleError(f"LDS swizzles are verified on ROCm targets only, not on {name}.")
        _check_swizzle(schedule, gemm)
    if schedule.swizzle.workgroup_order not in WORKGROUP_ORDERS:
        raise ScheduleError(f"unknown workgroup order '{schedule.swizzle.workgroup_order}'; choose one of "
                            f"{', '.join(WORKGROUP_ORDERS)}.")
    check_raster_rows(schedule)
    if schedule.swizzle.workgroup_order == "raster":
        raise ScheduleError("raster workgroup order is built by the codegen pipeline only (IREE 3.13's own "
                            "pipelines reorder workgroups by transpose or XCD only); use --pipeline codegen or "
                            "--order row.")
    if schedule.swizzle.workgroup_order == "xcd" and target.xcds <= 1:
        raise ScheduleError(f"XCD-aware workgroup order needs several XCDs; {name} has {target.xcds}.")
    if schedule.swizzle.workgroup_order == "xcd" and gemm.batched:
        raise ScheduleError("XCD-aware workgroup order handles 2-D workgroup grids only (IREE 3.13's "
                            "conditional_transpose), not batch matmuls; use --order row.")
    grid = workgroup_grid(schedule, gemm)
    if schedule.swizzle.workgroup_order == "xcd" and min(grid) < 2:
        raise ScheduleError(f"XCD-aware workgroup order needs at least 2 workgroups along M and along N (IREE "
                            f"3.13's conditional_transpose folds a unit dimension away); {gemm.shape_name} with "
                            f"tile {schedule.tile.workgroup[0]}x{schedule.tile.workgroup[1]} gives a "
                            f"{grid[0]}x{grid[1]} grid; "
                            "use --order row.")

    lds = lds_plan_bytes(schedule, gemm)
    if lds > target.lds_bytes:
        raise ScheduleError(f"tile {tile.workgroup[0]}x{tile.workgroup[1]}x{tile.k} {gemm.dtype} needs {lds} B of "
                            f"LDS; {name} has {target.lds_bytes}.")
    regs = accumulator_vgprs(schedule, wave) + operand_vgprs(schedule, gemm, wave)
    if regs > target.vgprs_per_lane:
        raise ScheduleError(f"each lane needs {regs} registers for its accumulator and one K step of operands; "
                            f"{name} has {target.vgprs_per_lane}.")

    waves_per_eu = schedule.warp_groups.waves_per_eu
    if waves_per_eu is not None:
        if not target.waves_per_eu:
            raise ScheduleError(f"waves per EU is an AMDGPU attribute; {name} does not take it.")
        if not 1 <= waves_per_eu <= target.max_waves_per_simd:
            raise ScheduleError(f"waves per EU {waves_per_eu} is outside 1..{target.max_waves_per_simd} on {name}.")


def check_raster_rows(schedule: Schedule) -> None:
    """Raster rows are given only with the raster order, and a group spans at least two rows (one is row order)."""
    rows, order = schedule.swizzle.raster_rows, schedule.swizzle.workgroup_order
    if rows is not None and order != "raster":
        raise ScheduleError(f"raster rows {rows} apply to --order raster only, not to order '{order}'.")
    if order == "raster" and schedule.swizzle.group_rows < 2:
        raise ScheduleError(f"raster groups of {schedule.swizzle.group_rows} row(s) of tiles are row order; give "
                            "at least 2 rows or use --order row.")


def _check_swizzle(schedule: Schedule, gemm: Gemm) -> None:
    from iree.compiler.dialects import iree_gpu  # the validity rule lives in IREE; ask it rather than copy it

    row, access = swizzle_params(schedule, gemm)
    swizzled = k_contiguous(gemm)
    if not any(swizzled):
        raise ScheduleError(f"layout {gemm.layout} stores neither operand with K contiguous, so an LDS swizzle has "
                            "nothing to apply to; use --lds pad or none.")
    for operand, (rows, cols), on in zip("AB", operand_tiles(schedule, gemm), swizzled):
        if on and not iree_gpu.is_xor_shuffle_valid(row, access, rows * cols):
            raise ScheduleError(f"a {row}-element swizzle row does not tile operand {operand}'s {rows}x{cols} LDS "
                                "tile; use a larger tile or --lds pad.")
