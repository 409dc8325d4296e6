"""The Hopper route: the project's sm_90a kernels (TMA loads, mbarrier stage hand-off, wgmma; `transforms.hopper`)
as nvvm-level IR in a `hal.executable.source`, for targets whose table entry names this route as their kernel
route (`Target.kernel_route`).

The source is the whole program (`transforms.hopper.program`: `C = gemm(A, B)`, one dispatch whose workgroups
build their own tensor maps), so no transform script is built; the executable states its own target (sm_90a), which
iree-compile keeps whatever the target's flags say. `verify` proves every choice of the schedule in the PTX
(`transforms.hopper.check_ptx`) after the stage hand-off was checked under random interleavings
(`transforms.hopper_protocol`) before compiling.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from transforms import hopper, stream
from transforms.hopper_protocol import ProtocolHazard, check as check_protocol
from transforms.problem import Gemm

from ..compiler import Compiled, run_iree_compile
from ..inspect import KernelStats, ptx_stats
from ..job import Job, Prepared
from ..targets import Target, TargetError, check_problem
from ..verify import FallbackError
from .base import KernelRoute, RouteError

FUNCTION = "gemm"  # the program's function, as on every other route (the runner calls a case's `function`)
DISPATCH = "module_hopper"  # the executable's dispatch in the dump
STREAM_DISPATCH = "module_stream"  # the stream kernel's (`transforms.stream`)
KernelPlan = stream.KernelPlan  # the route's plans: the Hopper kernels' schedules or the stream kernel's


@dataclass(frozen=True)
class SkinnyTile:
    """The tile `fitted` gives problems of at most `max_m` rows: 64-row tiles of one consumer warp group, in
    clusters of `cluster_m` sharing B."""

    max_m: int
    block_n: int
    cluster_m: int


# Measured on an H200 (results/h200/skinny-hopper, 25 problems of 1-128 rows, N and K 4096-14336): 64x256 tiles won
# at M <= 16 (the fewest B tiles in flight per row of C), 64x128 from 17 to 64 rows (twice the tiles), and for
# 65-128 rows 64x256 tiles in clusters of two sharing B; past 128 rows the shipped 128x256 tile.
SKINNY_TILES = (SkinnyTile(16, 256, 1), SkinnyTile(64, 128, 1), SkinnyTile(128, 256, 2))


@dataclass(frozen=True)
class Slicing:
    """Where `fitted` puts K in slices, and how many: the most (a power of two up to `most`) that keep the units of
    work within one round of the SMs, for K of at least `min_k` (each slice then has 8 or more of K's 64-wide tiles,
    as the sweep's winners had) in the skinny tiles' rows, and at any M for K of at least `long_k` (the one long-K
    problem measured: 1024x1024x65536, 4 slices, 0.93x cuBLAS). Medium problems with shorter K keep K whole: not
    measured sliced."""

    most: int = 8
    min_k: int = 4096
    long_k: int = 16384


SLICING = Slicing()


@dataclass(frozen=True)
class SkinnyAuto:
    """The problems below a whole 128x256 tile that `auto` gives the kernels: the skinny sweep's class."""

    m: int = 16
    n: int = 4096
    k: int = 4096


SKINNY_AUTO = SkinnyAuto()
# `auto` takes a batch of products of at least this many rows and columns (`HopperRoute.fills`). Measured on an H200
# (results/h200/batch/run1, the batch rule against IREE's default, f16/bf16 NN and NT): 16x4096x4096x128 2.4x,
# 16x4096x128x4096 2.9x, 8x2048x2048x2048 3.6x, 3x200x136x192 1.05x; 5x72x1000x64 (72 rows) 0.90x.
BATCH_AUTO = 128


# The most stages the skinny sweeps and `tune`'s candidates take unless a table says more (the kernels took at most 7
# before `transforms.hopper.MAX_STAGES`; the sweeps that chose SKINNY_TILES and CLUSTER_SUMS ran with 7 at most).
SWEPT_STAGES = 7


@dataclass(frozen=True)
class ClusterSum:
    """A tile `fitted` gives problems of `min_m` to `max_m` rows with K in `slices` slices summed in the kernel's
    cluster (`split_sum="cluster"`, one tile per workgroup), where its workgroups run in one round
    (`CLUSTER_ROUND`)."""

    min_m: int
    max_m: int
    block_m: int
    block_n: int
    slices: int
    most_stages: int = SWEPT_STAGES  # the tile takes the most stages its shared memory holds, up to this many
    max_k: int = 1 << 62  # K at most this long (longer K: the slices summed after pay for themselves)


# Measured on an H200 (results/h200/skinny-hopper/cluster, 25 problems, against the rule before it: IREE's reduction
# dispatch summing the slices): for 17-64 rows 64x256 tiles in 4 slices or 64x128 in 2, whichever has more
# workgroups in one round (first on a tie); for 65-128 rows 128x128 in 2. Below 17 rows the two ways measured
# within a few per cent of each other either way round, and the rule before stays. For 65-128 rows, 128x64 tiles in
# 2 slices with 9 stages where their workgroups run in one round (N at most 4096; results/h200/skinny-hopper/deep/
# run1: 128x4096x4096 nn 17.1 -> 15.9 µs, nt 16.9 -> 16.0 against 128x128 in 2; with 7 stages 17.3 and 16.5; the
# one problem measured: other N up to 4096 and K up to 8192 take it by the same count of workgroups, unmeasured;
# at N <= 64 both tiles have as many workgroups and the 128x128 entry, first, is taken).
# For 65-128 rows only up to K = 8192: at 128x4096x14336 the slices summed after (64x256 tiles in clusters of two
# sharing B, 4 slices) took 44.1 µs against 46.1 for 128x128 in 2 summed in the cluster (cluster/run1) and 47.1-48.4
# for 128x64 (suite5, 0.79x cuBLAS nn); at 128x8192x8192 the cluster sum won (44.9 against 50.2).
CLUSTER_SUMS = (ClusterSum(17, 64, 64, 256, 4), ClusterSum(17, 64, 64, 128, 2),
                ClusterSum(65, 128, 128, 128, 2, max_k=8192),
                ClusterSum(65, 128, 128, 64, 2, most_stages=hopper.MAX_STAGES, max_k=8192))
# Workgroups (one per SM: each takes most of its shared memory) in clusters of each size that ran as one round on
# that H200, judged by time (residency was not queried): up to 128 in clusters of 2 (none more was measured); in
# clusters of 4, 64 did and 128 did not (the same sweep: 64x128 tiles in 4 slices took 1.5x the time of 64x256 in
# 4 at 32 x 4096 x 4096, twice the workgroups each with half the work); clusters of 8 (128 workgroups) were slower
# than 4 everywhere and are not used.
CLUSTER_ROUND = {2: 128, 4: 64}


# C stored by TMA (`HopperSchedule.tma_store`) where the kernel stages a 16-bit C and the problem has at least
# STORE_TILES tiles. Measured on an H200 (results/h200/batch/run4, 19 problems each way, float64-checked): the
# multi-head block's Q·Kᵀ (16x4096x4096x128) 284.6 -> 228.5 µs, 8192³ NN 1752.5 -> 1735.2 and NT 1754.9 -> 1740.0,
# block a's ·W1 shape 239.2 -> 230.6, no problem of 256 tiles or more slower; problems of 9-80 tiles (1000x776x1000,
# 300x520x256, 2048x1032x1024, two small batches) 0.3-0.7 µs slower (their third tensor map written before the
# workgroup's first barrier).
STORE_TILES = hopper.SM_COUNT
# With C stored by TMA, a cooperative kernel's tile stored under the next tile's first wgmma group: with 16-row
# boxes (`transforms.hopper.STORE_BOX`), measured on an H200 (results/h200/square8192/defer1, two rounds each way,
# float64-checked): the multi-head block's Q·Kᵀ 208.5 -> 196.4 µs, block a's ·W1 227.9 -> 223.7, no product slower
# beyond the rounds' spread.
DEFER_STORES = True


def store_rule(gemm: Gemm, schedule: hopper.HopperSchedule) -> hopper.HopperSchedule:
    """`schedule` storing C by TMA where STORE_TILES says so (the kernel stages the problem's C and it has at least
    STORE_TILES block tiles, a batch's products' together), else as it is; a persistent cooperative kernel's stores
    deferred under the next tile's first MMAs (`DEFER_STORES`: it loops over tiles; K whole, so the kernel's C is the
    problem's)."""
    columns, rows = hopper.tile_grid(gemm, schedule)
    tiles = columns * rows * (gemm.batch or 1)
    if tiles >= STORE_TILES and hopper.stages_stores(gemm, replace(schedule, tma_store=True)):
        defer = DEFER_STORES and schedule.kind == "cooperative" and schedule.persistent and schedule.split_k == 1
        return replace(schedule, tma_store=True, defer_stores=defer)
    return schedule


def most_stages(block_m: int, block_n: int, consumers: int, most: int = SWEPT_STAGES) -> int:
    """The most stages (up to `most`) a tile's shared memory holds; 0 where not even two fit."""
    return max((s for s in range(2, most + 1) if hopper.HopperSchedule(
        block_m=block_m, block_n=block_n, stages=s, consumers=consumers).shared_bytes() <= hopper.SHARED_BYTES),
        default=0)


def fitted(gemm: Gemm) -> hopper.HopperSchedule:
    """The `hopper` pipeline's schedule: `_fitted`'s, C stored by TMA where `store_rule` says so."""
    return store_rule(gemm, _fitted(gemm))


def _fitted(gemm: Gemm) -> hopper.HopperSchedule:
    """The `hopper` pipeline's schedule: from 17 to 128 rows the slices summed in the cluster where CLUSTER_SUMS
    has a tile and slices for the problem (`cluster_sum`); else the shipped one, with a skinny problem's tile
    (SKINNY_TILES) and, where its units of work leave SMs idle and K is long enough (SLICING), K in slices summed
    after: the most slices (2, 4 .. SLICING.most, dividing K's tiles) whose units of work, clusters times slices,
    occupy at most SM_COUNT SMs. A batch of products: the tile as for one of them (128 columns where N is at most
    128), its products the units of work, K never in slices (measured as the first rule for batches in
    results/h200/batch/run1, not against other rules)."""
    summed = None if gemm.batched else cluster_sum(gemm)
    if summed is not None:
        return summed
    schedule = hopper.DEFAULT
    tile = next((t for t in SKINNY_TILES if gemm.m <= t.max_m), None)
    if tile is not None:
        schedule = replace(schedule, block_m=64, block_n=tile.block_n, stages=most_stages(64, tile.block_n, 1),
                           consumers=1, cluster_m=tile.cluster_m)
    if gemm.batched:
        return replace(schedule, block_n=128) if tile is None and gemm.n <= 128 else schedule
    columns, cluster_rows = hopper.unit_grid(gemm, schedule)
    k_tiles = -(-gemm.k // schedule.block_k)
    sliced = gemm.k >= (SLICING.min_k if tile is not None else SLICING.long_k)
    split = 1
    while (sliced and split * 2 <= SLICING.most and k_tiles % (split * 2) == 0
           and columns * cluster_rows * split * 2 * schedule.cluster_tiles <= hopper.SM_COUNT):
        split *= 2
    return replace(schedule, split_k=split)


# The stream kernel's schedules `tune --route hopper` measures for problems of at most 16 rows (transforms.stream)
STREAM_CANDIDATES = (stream.StreamSchedule(32, 16, 1, 1, transpose=True), stream.StreamSchedule(32, 8, 1, 1),
                     stream.StreamSchedule(32, 8, 2, 1, "L2::256B", transpose=True),
                     stream.StreamSchedule(32, 16, 2, 0, transpose=True), stream.StreamSchedule(32, 16, 4),
                     stream.StreamSchedule(32, 8, 2, 1), stream.StreamSchedule(32, 8, 2, 1, "L2::256B"),
                     stream.StreamSchedule(32, 8, 2, 2))


@dataclass(frozen=True)
class StreamRule:
    """The stream kernel (`transforms.stream`) for problems of at most `max_m` rows, N and K from `min_nk` to
    `max_nk` and B of at most `max_b_bytes`: `nn`'s schedule for layout nn, `nt`'s for nt."""

    max_b_bytes: int
    nn: stream.StreamSchedule
    nt: stream.StreamSchedule
    max_m: int = stream.MAX_M
    min_nk: int = 4096
    max_nk: int = 8192


# Measured on H200s (results/h200/stream, runs 2-6, every row float64-checked; the Hopper kernels' rule in the same
# runs): at 16x4096x4096 (B 32 MiB, which stays in the 50 MB L2 across the runner's repeats) NN 10.9 µs with B's rows
# transposed by movmatrix, 16 warps (Hopper kernels 13.5), NT 10.3-11.5 µs with 16 warps, 4 chunks a step (13.2-13.7);
# at 16x8192x8192 (B 128 MiB, from DRAM) NN 38.8 µs with 8 warps, 2 chunks a step, loads a step ahead and the
# L2::256B hint (40.4), NT 39.6-40.5 (41.3-43.1). With N or K of 14336 (16x14336x4096, 16x4096x14336) the Hopper
# kernels stay faster (NN 36.1-37.7 µs, NT 38.3-39.6, against the stream kernel's best 37.4-42.5); below N, K = 4096
# not measured. Problems between the two measured (e.g. 16x8192x4096) take the entry their B's size falls in,
# unmeasured. The skinny suite with `auto` as a user runs it at this rule: results/h200/stream/run7. B's loads past
# L1 (`bypass`) on the decode row, two rounds on one H200 (run11): NN 37.46-37.47 µs against 37.99-38.06 without,
# NT 38.06-38.12 against 38.31-38.50 (cuBLAS 34.4-35.1); not measured at 16x4096x4096, whose entry keeps L1.
STREAM_RULES = (
    StreamRule(32 << 20, nn=stream.StreamSchedule(32, 16, 1, 1, transpose=True), nt=stream.StreamSchedule(32, 16, 4)),
    StreamRule(128 << 20, nn=stream.StreamSchedule(32, 8, 2, 1, "L2::256B", transpose=True, bypass=True),
               nt=stream.StreamSchedule(32, 8, 2, 1, "L2::256B", bypass=True)),
)


def stream_rule(gemm: Gemm) -> stream.StreamSchedule | None:
    """The stream kernel's schedule where the `hopper` pipeline takes it for `gemm`: the first of STREAM_RULES whose
    bounds hold, where the kernel takes the problem with that entry's schedule; else None."""
    if gemm.batched or gemm.layout not in ("nn", "nt"):
        return None
    b_bytes = gemm.n * gemm.k * 2
    for rule in STREAM_RULES:
        if gemm.m <= rule.max_m and rule.min_nk <= min(gemm.n, gemm.k) and max(gemm.n, gemm.k) <= rule.max_nk \
                and b_bytes <= rule.max_b_bytes:
            schedule = rule.nn if gemm.layout == "nn" else rule.nt
            try:
                stream.check_problem(gemm, schedule)
            except stream.StreamError:
                return None
            return schedule
    return None


def kernel_rule(gemm: Gemm) -> KernelPlan:
    """The `hopper` pipeline's plan: the stream kernel's where `stream_rule` gives one, else `fitted`'s."""
    return stream_rule(gemm) or fitted(gemm)


def summed_in_cluster(gemm: Gemm, block_m: int, block_n: int, slices: int,
                      most: int = SWEPT_STAGES) -> hopper.HopperSchedule | None:
    """The one-tile-per-workgroup schedule of a block_m x block_n tile (64 rows a consumer warp group), the most
    stages (up to `most`), K in `slices` slices summed in the cluster; None where the kernels refuse it for `gemm`."""
    consumers = block_m // 64
    schedule = hopper.HopperSchedule(block_m=block_m, block_n=block_n, consumers=consumers, group_m=1,
                                     stages=most_stages(block_m, block_n, consumers, most), split_k=slices,
                                     split_sum="cluster")
    try:
        schedule.check()
        hopper.check_problem(gemm, schedule)
    except hopper.HopperError:
        return None
    return schedule


def cluster_sum(gemm: Gemm) -> hopper.HopperSchedule | None:
    """The schedule of CLUSTER_SUMS for `gemm`: of the entries for its rows and K (SLICING.min_k to the entry's
    max_k) whose slices divide K's tiles and whose workgroups run in one round (CLUSTER_ROUND), the one with the most
    workgroups (the first on a tie); None where there is none."""
    found = []
    for entry in CLUSTER_SUMS:
        if not entry.min_m <= gemm.m <= entry.max_m or not SLICING.min_k <= gemm.k <= entry.max_k:
            continue
        schedule = summed_in_cluster(gemm, entry.block_m, entry.block_n, entry.slices, entry.most_stages)
        if schedule is None:
            continue
        workgroups = hopper.grid_size(gemm, schedule)
        if workgroups <= CLUSTER_ROUND[entry.slices]:
            found.append((workgroups, schedule))
    return max(found, key=lambda pair: pair[0])[1] if found else None


def job_plan(job: Job) -> KernelPlan:
    if not isinstance(job.plan, stream.KERNEL_PLANS):
        raise RouteError(f"pipeline {job.pipeline} names no Hopper schedule.")
    return job.plan


class HopperRoute(KernelRoute):
    name = "hopper-program"
    schedules = tuple(hopper.NAMES)
    about = "the project's Hopper kernels (TMA, mbarrier, wgmma) as sm_90a nvvm IR in an executable source"

    def takes(self, plan: object) -> bool:
        """Whether `plan` is a plan of this route (`pipelines.named.plan_job`)."""
        return isinstance(plan, stream.KERNEL_PLANS)

    def default_plan(self, gemm: Gemm, target: Target) -> KernelPlan:
        """The `hopper` pipeline's plan for `gemm` (`kernel_rule`), or one sentence why the kernels do not take it."""
        check_problem(target, gemm)
        try:
            hopper.check_problem(gemm, hopper.DEFAULT)  # the kernels take the problem at all
            plan = kernel_rule(gemm)
            plan.check()
            if isinstance(plan, stream.StreamSchedule):
                stream.check_problem(gemm, plan)
            else:
                hopper.check_problem(gemm, plan)  # and the schedule fitted to it
        except (hopper.HopperError, stream.StreamError) as err:  # a refusal before compiling (TargetError)
            raise TargetError(str(err)) from None
        return plan

    def fills(self, gemm: Gemm, target: Target) -> bool:
        """Whether `auto` takes the kernels' plan (`kernel_rule`) for `gemm`: the kernels take it, and it has a
        whole 128x256 tile, or it is of the skinny sweep's class (SKINNY_AUTO: M from 16 up, N and K at least
        4096; results/h200/skinny-hopper). Other problems keep `auto`'s own rule (below M = 16 for NN the split-k
        pipeline's streaming kernel, within 4 % of the Hopper kernels at M = 1 in that sweep and 1.3x faster on
        4096x4096; for NT IREE's own kernel). A batch where each product has at least BATCH_AUTO rows and columns
        (results/h200/batch/run1: from 136 rows and columns faster than IREE's default, 1.05-3.6x; 72 rows 0.9x)."""
        try:
            self.default_plan(gemm, target)
        except TargetError:
            return False
        if gemm.batched:
            return gemm.m >= BATCH_AUTO and gemm.n >= BATCH_AUTO
        whole = gemm.m >= hopper.DEFAULT.block_m and gemm.n >= hopper.DEFAULT.block_n
        return whole or (gemm.m >= SKINNY_AUTO.m and gemm.n >= SKINNY_AUTO.n and gemm.k >= SKINNY_AUTO.k)

    def candidates(self, gemm: Gemm, target: Target) -> list[KernelPlan]:  # type: ignore[override]
        """The schedules `tune --route hopper` measures for `gemm`: each kind at each block shape it takes, with the
        most stages shared memory holds (up to SWEPT_STAGES) and one fewer, tile groups of 8 and 16 block rows,
        without a cluster and with one of two; for M up to 128 also 64-row tiles of one consumer warp group; where a
        problem's tiles leave SMs idle, the persistent cooperative ones with K in 2, 4 or 8 slices too (split_k, their
        stores not deferred: the kernel's C is the f32 partial products), and for M up to 128
        one-tile-per-workgroup ones with 2, 4 or 8 slices summed in the cluster, at most SM_COUNT workgroups (the
        search measures what the rule's CLUSTER_ROUND only judged), at the most stages up to SWEPT_STAGES and up to
        MAX_STAGES; those the kernels refuse for the problem are left out. The `hopper` pipeline's schedule for the
        problem (`fitted`: the shipped one where tiles fill the SMs) comes first, then the others by how many of its
        choices they change (so --limit keeps its neighbours)."""
        # one sentence where the kernels do not take the problem at all; else the `hopper` pipeline's schedule, the
        # one to beat
        start = self.default_plan(gemm, target)
        shapes = {"cooperative": ((128, 256, 2), (256, 128, 2), (128, 128, 2)), "pingpong": ((128, 128, 2),
                                                                                      (64, 256, 2))}
        if gemm.m <= SKINNY_TILES[-1].max_m:  # skinny: one consumer warp group on 64-row tiles (a 128-row tile
            shapes["cooperative"] += ((64, 256, 1), (64, 128, 1))  # would be half empty, or a cluster shares B)
        shipped = store_rule(gemm, hopper.DEFAULT)
        found: list[KernelPlan] = [start]
        for plan in (fitted(gemm), shipped):  # the Hopper kernels' rule, where the stream kernel's is `start`
            if plan not in found:
                found.append(plan)
        rules = list(found)  # measured first, in this order, whatever --limit keeps
        for name, (kind, persistent) in hopper.NAMES.items():
            for block_m, block_n, consumers in shapes[kind]:
                most = most_stages(block_m, block_n, consumers)
                for stages in sorted({most, most - 1} - {0, 1}, reverse=True):
                    for group_m in (16, 8):
                        for cluster_m in (2, 1):
                            schedule = store_rule(gemm, hopper.HopperSchedule(
                                block_m=block_m, block_n=block_n, stages=stages, kind=kind, persistent=persistent,
                                group_m=group_m, cluster_m=cluster_m, consumers=consumers))
                            try:
                                schedule.check()
                                hopper.check_problem(gemm, schedule)
                            except hopper.HopperError:
                                continue
                            if schedule not in found:
                                found.append(schedule)
        # Skinny or long-K problems whose units of work leave SMs idle: K in slices too (each of the persistent
        # cooperative candidates with 2, 4 or 8 slices that divide K's tiles, while the slices' units stay within
        # two rounds of the SMs)
        for schedule in [c for c in found if isinstance(c, hopper.HopperSchedule) and c.kind == "cooperative"
                         and c.persistent and c.split_k == 1]:
            columns, cluster_rows = hopper.unit_grid(gemm, schedule)
            units = columns * cluster_rows  # a cluster's tiles at once, before any slicing
            for split_k in (2, 4, 8):
                if units * split_k > 2 * hopper.SM_COUNT // schedule.cluster_tiles:
                    break
                sliced = replace(schedule, split_k=split_k, defer_stores=False)  # the kernel's C: f32 partials
                try:
                    hopper.check_problem(gemm, sliced)
                except hopper.HopperError:
                    continue
                if sliced not in found:  # `fitted`'s own slicing is there already
                    found.append(sliced)
        # Skinny problems: K in 2, 4 or 8 slices summed in the cluster, one tile per workgroup, on the skinny tiles
        # (64 rows of one consumer warp group) and 128-row tiles of two, at most SM_COUNT workgroups; with the most
        # stages up to SWEPT_STAGES and, where more fit, up to MAX_STAGES (CLUSTER_SUMS' 128x64 takes 9)
        if gemm.m <= SKINNY_TILES[-1].max_m:
            for block_m, block_n in ((64, 256), (64, 128), (128, 256), (128, 128), (128, 64)):
                for split_k in (2, 4, 8):
                    for most in (SWEPT_STAGES, hopper.MAX_STAGES):
                        summed = summed_in_cluster(gemm, block_m, block_n, split_k, most)
                        if (summed is not None and hopper.grid_size(gemm, summed) <= hopper.SM_COUNT
                                and summed not in found):
                            found.append(summed)
        # Problems of at most 16 rows: the stream kernel's STREAM_CANDIDATES too
        if gemm.m <= stream.MAX_M:
            for streamed in STREAM_CANDIDATES:
                try:
                    stream.check_problem(gemm, streamed)
                except stream.StreamError:
                    continue
                if streamed not in found:
                    found.append(streamed)

        def changes(c: KernelPlan) -> int:  # choices that differ from `start`'s (all of them for the other kernel)
            if type(c) is not type(start):
                return len(c.__dict__)
            return sum(value != start.__dict__[key] for key, value in c.__dict__.items())
        return rules + sorted((c for c in found if c not in rules), key=changes)

    def prepare(self, job: Job) -> Prepared:
        schedule = job_plan(job)
        if job.user_source is not None or len(job.gemms) != 1:
            raise RouteError("the Hopper kernels compile one GEMM given with --shape, not an input file.")
        gemm, = job.gemms
        check_problem(job.target, gemm)
        if isinstance(schedule, stream.StreamSchedule):
            try:
                return Prepared(job, stream.program(gemm, schedule, function=FUNCTION), None, (None,))
            except stream.StreamError as err:
                raise RouteError(str(err)) from None
        try:
            hopper.check_problem(gemm, schedule)
            check_protocol(schedule)  # the stage hand-off under random interleavings (schedule.check first)
            source = hopper.program(gemm, schedule, function=FUNCTION)
        except (hopper.HopperError, ProtocolHazard) as err:
            raise RouteError(str(err)) from None
        return Prepared(job, source, None, (None,))

    def spec_refusal(self, job: Job) -> str | None:
        return ("the Hopper kernels are a whole program (gemm.mlir) with no transform script; use `pipelines compile` "
                "and find the program in its output.")

    def compile(self, prepared: Prepared, source: Path, folder: Path, spec_file: Path, extra_flags: tuple[str, ...],
                moved_to: tuple[Path, Path]) -> tuple[Compiled, list[KernelStats]]:
        compiled = run_iree_compile(source, folder, prepared.job.target, None, extra_flags=extra_flags,
                                    moved_to=moved_to)
        stats = self.inspect(compiled.dump, prepared.job.target)
        if not stats:
            raise FallbackError(f"{DISPATCH}: the dump holds no PTX of the Hopper kernel gemm.")
        return compiled, stats

    def inspect(self, dump: Path, target: Target) -> list[KernelStats]:
        """The GEMM kernel's statistics from its PTX (the Hopper kernels' executable, or the stream kernel's)."""
        ptx = [p for p in sorted(dump.glob("*.ptx")) if ".entry gemm(" in p.read_text()]
        if not ptx:
            return []
        name = STREAM_DISPATCH if ptx[0].name.startswith(STREAM_DISPATCH) else DISPATCH
        return [ptx_stats(name, ptx[0], hopper.ptx_kernel(ptx[0].read_text(), "gemm"), 2)]

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job = prepared.job
        ptx = (dump / stats[0].isa_file).read_text()
        plan, gemm = job_plan(job), job.gemms[0]
        if isinstance(plan, stream.StreamSchedule):
            if stats[0].dispatch != STREAM_DISPATCH:
                raise FallbackError(f"{STREAM_DISPATCH}: the dump holds no PTX of the stream kernel gemm.")
            try:
                stream.check_ptx(hopper.ptx_kernel(ptx, "gemm"), gemm, plan)
            except stream.StreamError as err:
                raise FallbackError(f"{STREAM_DISPATCH}: {err}") from None
            return
        schedule = plan
        try:
            hopper.check_ptx(ptx, gemm, schedule)
        except hopper.HopperError as err:
            raise FallbackError(f"{DISPATCH}: {err}") from None
        # split_k summed after: the slices' sum is IREE's reduction dispatch of M·N elements over the slices, in the
        # same module; summed in the cluster (check_ptx found the sum in the kernel): no such dispatch
        reduction = f"_reduction_{gemm.m * gemm.n}x{schedule.split_k}_f32("
        reduced = schedule.split_k > 1 and any(reduction in p.read_text() for p in dump.glob("*.ptx"))
        if schedule.sums_after and not reduced:
            raise FallbackError(f"{DISPATCH}: the compiled program has no reduction of the {schedule.split_k} K "
                                f"slices (a kernel entry ending in {reduction[:-1]}).")
        if schedule.sums_in_cluster and reduced:
            raise FallbackError(f"{DISPATCH}: the slices are summed in the kernel's cluster, yet the compiled program "
                                f"has a reduction dispatch of them ({reduction[:-1]}).")

    def verified(self, job: Job) -> bool:
        return True

    def summary(self, job: Job) -> list[str]:
        return [job_plan(job).describe()]

    def report_extra(self, job: Job) -> dict:
        plan = job_plan(job)
        return {"route": self.name, ("stream_schedule" if isinstance(plan, stream.StreamSchedule)
                                     else "hopper_schedule"): plan.__dict__}
