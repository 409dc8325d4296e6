"""Hopper (sm_90a) GEMM kernels: TMA bulk tensor loads into 128-byte-swizzled shared memory, mbarrier stage
hand-off and `wgmma` with register accumulators, written as nvvm-dialect IR inside an IREE executable.

Why nvvm level (results/h100/hopper_paths.md): IREE 3.13 registers no `transform.nvgpu.*` op, its ConvertToNVVM
has no type conversions for nvgpu's Hopper types (mbarrier groups, tensor maps and warpgroup accumulators stop it,
or crash it), and its MMA enum has no wgmma. nvvm ops, pointers and llvm structs go through IREE's lowering
(`translation_info` no_pipeline) to PTX, and the IREE runtime loads and times the result like any dispatch.

Tensor maps: IREE's CUDA launcher passes bindings as pointers and push constants as i32, so a `CUtensorMap` cannot
be a kernel parameter. Each workgroup builds its own two maps in global memory instead, before its first load: the
dispatch's fourth binding is scratch of 256 bytes per workgroup (a second result of the dispatch, which IREE
allocates with it), one thread zeroes its slot, writes every field with `tensormap.replace` (the operands'
addresses, dims, strides, boxes, element type, 128-byte swizzle) and releases and acquires them for the tensor-map
proxy. The program is then an ordinary `C = f(A, B)` and a model's contraction can be one such dispatch.

The GEMM dispatch (`@gemm`) is warp specialised. Warp group 0 produces: it gives registers away (`setmaxnreg`), and
one thread issues the TMA loads of each K step into stage `q % stages` (steps numbered across the workgroup's tiles,
so the ring runs on from tile to tile), announcing the bytes on that stage's `full` barrier after the stage's
`empty` barrier says its previous use is done. The consumer warp groups take registers, wait on `full`, run
`block_k / 16` wgmma steps per stage (one or two m64 blocks each), keep one wgmma group in flight, release the
previous stage on `empty` (one thread per warp group) and the last one after draining. With `cluster_m` 2, two
workgroups on neighbouring block rows form a thread-block cluster (`nvvm.cluster_dim`, which the driver launches
as such): each loads its A tile and half of the B tile they share, multicast into both, and a stage is free only
once the consumers of both have released it (remote arrivals through `mapa`). With `cluster_n` 2 as well, a cluster
is 2x2 workgroups on two block rows of two block columns: each loads half of its block row's A tile (multicast to
its row) and half of its block column's B tile (to its column), and its stages are released by the consumers of
the three workgroups on its row or column (192 rows of K loaded per 32768 outputs of 128x256 tiles, against 256 in
clusters of two). Kinds:
- `cooperative`: the consumers split each block tile by rows; one tile per workgroup, or with `persistent`,
  at most SM_COUNT workgroups looping over the tiles (`grid_size`).
- `pingpong`: at most SM_COUNT workgroups looping over the tiles; each consumer owns every other tile of its
  workgroup and starts a tile's K loop only once the other consumer has finished the previous tile's (a pair of
  mbarriers), so that one's epilogue runs under the other's MMAs. The order also keeps a consumer's `full` waits
  within one phase of the producer.
Tiles are visited in groups of `group_m` block rows (L2 reuse). Each thread stores its accumulator fragments (the
m64nNk16 register layout) to C; rows and columns past the problem are not stored, and TMA fills loads past it with
zeros, so any M, N, K (K a multiple of 8) runs.

The IR is generated as text in IREE 3.13's assembly formats (the Python bindings have no builders for the HAL
executable ops); `check_ptx` proves in the PTX that every schedule choice took effect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import tail_math
from .errors import UserError
from .problem import Epilogue, Gemm

KINDS = ("cooperative", "pingpong")
# Streaming multiprocessors of the H100 SXM5 and H200 (NVIDIA H100 Tensor Core GPU Architecture whitepaper, table 3:
# 132 SMs): the persistent grid's size.
SM_COUNT = 132
# Registers per thread after `setmaxnreg` (PTX ISA: multiples of 8 from 24 to 256): the producer warp group needs
# few, and 128 × 40 + 2 × 128 × 232 fits the SM's 64 Ki registers.
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232
WARPGROUP = 128
# Shared memory one thread block may take on sm_90 (the whitepaper's table 3: 227 KB of the SM's 228 KB)
SHARED_BYTES = 227 * 1024
SWIZZLE_BYTES = 128  # TMA and wgmma 128-byte swizzle: a K tile row of 64 16-bit elements
DTYPES = {"f16": "f16", "bf16": "bf16"}  # element type names in MLIR and in wgmma's type list
# nt: B is N×K (K-major, as A); nn: B is K×N (N-major): TMA loads it in boxes of 64 columns (one 128-byte swizzle
# row each) and wgmma reads it transposed (its MN-major shared-memory layout).
LAYOUTS = ("nt", "nn")
EPILOGUES = ("none", "truncf")  # C stored in f32, or rounded to the input type (two columns packed in 4 bytes)
NN_BOX = SWIZZLE_BYTES // 2  # columns of B per TMA box for layout nn
SPLIT_SUMS = ("dispatch", "cluster")  # where K's slices are summed (HopperSchedule.split_sum)
# The largest portable thread-block cluster (CUDA C++ Programming Guide, "Thread Block Clusters": 8 thread blocks)
MAX_CLUSTER = 8
# Thread-block clusters that run at once, by cluster size, with one workgroup per SM: Nsight Compute's "Max Active
# Clusters" for the 128x256 kernel (384 threads, its registers allow one workgroup per SM) on one H200
# (results/h200/line2/cluster/ncu1: 66 clusters of 2, 30 of 4: the SMs' GPCs do not all split into fours). Another
# card's GPCs may be cut down otherwise; a persistent grid of more clusters than run at once runs the rest after
# the first ones end (twice the time), of fewer only leaves SMs idle.
MAX_ACTIVE_CLUSTERS = {2: 66, 4: 30}
# The most stages a workgroup rings through: narrow skinny tiles (64x32: 12 KiB a stage) keep more of B's bytes in
# flight with more of them; shared memory bounds every schedule before this does for tiles of 64 columns or more.
MAX_STAGES = 16
SUM_PAD = 8  # f32 elements after each row of a partial product in shared memory (32 bytes: another bank group)


class HopperError(UserError, ValueError):
    """A Hopper schedule or problem this route cannot build; one sentence."""


# The elementwise ops a fused consumer may hold (`Elementwise`), by operand count: what a model's Gelu, ReLU or
# scaling is written in after an importer's lowering.
ELEMENTWISE_OPS = {"arith.addf": 2, "arith.subf": 2, "arith.mulf": 2, "arith.divf": 2, "arith.maximumf": 2,
                   "arith.minimumf": 2, "arith.negf": 1, "arith.extf": 1, "arith.truncf": 1, "math.erf": 1,
                   "math.sqrt": 1, "math.rsqrt": 1, "math.tanh": 1, "math.exp": 1, "math.absf": 1}


@dataclass(frozen=True)
class Elementwise:
    """Elementwise ops applied to each element of C after its rounding to the input type, before it is stored (a
    model's consumer fused into the kernel). `ops`: (op name, operands, result type) in order; an operand is "in"
    (the rounded element), the index of an earlier op, or ("const", "VALUE : TYPE"). The last op yields the input
    type."""

    ops: tuple[tuple[str, tuple, str], ...]

    def check(self, dtype: str) -> None:
        if not self.ops:
            raise HopperError("a fused elementwise consumer needs at least one op.")
        for index, (name, operands, _) in enumerate(self.ops):
            if ELEMENTWISE_OPS.get(name) != len(operands):
                raise HopperError(f"the Hopper epilogue does not apply {name} with {len(operands)} operands.")
            if any(isinstance(o, int) and not 0 <= o < index for o in operands):
                raise HopperError(f"op {index} ({name}) of a fused consumer reads a later op.")
        if self.ops[-1][2] != dtype:
            raise HopperError(f"a fused consumer must yield {dtype}, not {self.ops[-1][2]}.")

    def lowered(self, dtype: str) -> tuple:
        """The ops the kernel applies: `ops` with constants folded, divisions by a constant made products and erf
        a polynomial where each gives the same bits (`tail_math.lower`)."""
        return tail_math.lower(self.ops, dtype)

    def emit(self, b: "_Body", value: str, dtype: str) -> str:
        """The ops on `value` (of `dtype`) in the body under construction; the last op's result."""
        results: list[tuple[str, str]] = []
        for name, operands, ty in self.lowered(dtype):
            args = []
            for o in operands:
                if o == "in":
                    args.append((value, dtype))
                elif isinstance(o, int):
                    args.append(results[o])
                else:
                    args.append((b.op(f"arith.constant {o[1]}", "k"), o[1].rsplit(": ", 1)[1]))
            names = ", ".join(a for a, _ in args)
            if name in ("arith.extf", "arith.truncf"):
                text = f"{name} {names} : {args[0][1]} to {ty}"
            elif name.startswith("arith.cmpf:"):  # a comparison, its predicate after the colon
                text = f"arith.cmpf {name.split(':')[1]}, {names} : {args[0][1]}"
            else:
                text = f"{name} {names} : {ty}"
            results.append((b.op(text, "e"), ty))
        return results[-1][0]


@dataclass(frozen=True)
class HopperSchedule:
    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    stages: int = 4
    consumers: int = 2  # consumer warp groups
    kind: str = "cooperative"
    group_m: int = 8  # block tiles run in groups of this many block rows, column by column (L2 reuse); 1: row order
    persistent: bool = False  # at most SM_COUNT workgroups loop over the tiles (always, for pingpong)
    # workgroups per thread-block cluster, on neighbouring block rows of one block column: each loads its A tile
    # and 1/cluster_m of the shared B tile, multicast to every workgroup of the cluster (L2 traffic per tile
    # 1/cluster_m of B's instead of all of it)
    cluster_m: int = 1
    # workgroups per cluster along N, on neighbouring block columns of one block row: each loads 1/cluster_n of the
    # A tile they share, multicast to them. A cluster is cluster_m x cluster_n workgroups, rank r at block row
    # r % cluster_m and block column r // cluster_m of the cluster tile; each workgroup's stage then holds parts from
    # every workgroup on its row or column of the cluster (`partners`).
    cluster_n: int = 1
    # K in this many slices, each a unit of work of its own: the kernel stores each slice's f32 partial product
    # (rows slice × M + row of a (split_k·M)×N C) and the program sums them (skinny and long-K problems, whose few
    # tiles would leave SMs idle)
    split_k: int = 1
    # Where the slices are summed (`SPLIT_SUMS`): "dispatch", the program's reduction dispatch over the partial
    # products; "cluster", in the kernel: the slices of a tile are one thread-block cluster, each workgroup puts its
    # partial product in its shared memory and sums its share of the tile's columns over every workgroup's, in slice
    # order (distributed shared memory), into C.
    split_sum: str = "dispatch"
    # A 16-bit C staged in the warps' areas (`stages_stores`) goes out by TMA: each warp's 8x32 blocks of C written
    # to its ring of `STORE_RING` areas (stmatrix, 64-byte swizzle), `STORE_BATCH` at a time, and stored by bulk
    # tensor copies that lane 0 issues (C's tensor map), instead of read back and stored by every lane
    # (`_staged_stores`).
    tma_store: bool = False
    # C stored by TMA in attention's head layout (`HEAD_STORES`), where a model's transposes would otherwise move it:
    # 0, C as the problem has it; H > 0, an unbatched M×N product's C stored as H heads of N/H columns one after the
    # other (H×M×N/H: "split"), or a batch of H products' C stored side by side, product h's columns at h·N of M rows
    # of H·N ("join").
    store_heads: int = 0
    # With C stored by TMA, a whole tile's C packed into registers at the end of its K loop and stored only after the
    # next tile's first wgmma group is issued, so that the stores run under that group (cooperative kernels; the
    # workgroup's last tile stored after its loop). Measured with `STORE_BOX`; `store_rule` turns it on.
    defer_stores: bool = False
    # The K steps of every other tile of a workgroup in reverse order (tiles 1, 3, ... from K's last tile down), so
    # that a round of tiles, which every workgroup starts at once, starts on the K slabs the previous round ended on
    # and left in L2 (A's, down a group's columns), instead of on those it read first and L2 has since evicted.
    serpentine_k: bool = False
    # Stream-K (persistent cooperative kernels): the clusters that run at once all take part; the units of work
    # beyond whole rounds of them (and one round more) are cut along K into one contiguous run of K steps per
    # cluster (`StreamSplit`), so that every cluster does as many K steps. A unit cut in two is finished by the
    # cluster that holds its first K steps (the owner, which takes them last), after it adds the f32 partial product
    # of the rest, which the next cluster computed first and left in global memory with a flag (`flags`).
    stream_k: bool = False

    @property
    def name(self) -> str:
        """The schedule's name on the command line (`NAMES`)."""
        return "hopper-" + self.kind + ("-persistent" if self.kind == "cooperative" and self.persistent else "")

    def describe(self) -> str:
        cluster = ""
        if self.cluster_n > 1:
            cluster = f", clusters of {self.cluster_m}x{self.cluster_n} sharing " + ("A and B" if self.cluster_m > 1
                                                                                      else "A")
        elif self.cluster_m > 1:
            cluster = f", clusters of {self.cluster_m} sharing B"
        split = ""
        if self.split_k > 1:
            split = f", K in {self.split_k} slices summed " + ("in the cluster" if self.sums_in_cluster else "after")
        store = ", C stored by TMA" if self.tma_store else ""
        if self.store_heads:
            store += f" in {self.store_heads} heads"
        if self.defer_stores:
            store += ", deferred under the next tile's first MMAs"
        if self.serpentine_k:
            store += ", K reversed every other tile"
        if self.stream_k:
            store += ", stream-K over every SM where the units outnumber the clusters"
        return (f"{self.name} {self.block_m}x{self.block_n}x{self.block_k}, {self.stages} stages, groups of "
                f"{self.group_m} block rows{cluster}{split}{store} (TMA, mbarrier, wgmma; sm_90a)")

    def check(self) -> None:
        if self.kind not in KINDS:
            raise HopperError(f"Hopper schedule kind {self.kind!r} is not one of {', '.join(KINDS)}.")
        if self.consumers not in (1, 2):  # 128 × 40 + consumers × 128 × 232 registers must fit the SM's 64 Ki
            raise HopperError("a Hopper schedule has one or two consumer warp groups (the register split fits no "
                              "more).")
        if self.block_k != SWIZZLE_BYTES // 2:
            raise HopperError(f"block_k must be {SWIZZLE_BYTES // 2} (one 128-byte swizzled row of 16-bit elements).")
        if self.rows_per_consumer not in (64, 128) or self.block_m > 256:
            raise HopperError("block_m must give each consumer warp group 64 or 128 rows (one or two wgmma m64 "
                              "blocks; cooperative consumers split a tile, ping-pong consumers own whole tiles), at "
                              "most 256 (one TMA box).")
        if self.kind == "pingpong" and self.consumers != 2:
            raise HopperError("a ping-pong schedule has two consumer warp groups.")
        if self.group_m < 1:
            raise HopperError("group_m must be at least 1.")
        if self.block_n % 8 or not 8 <= self.block_n <= 256:
            raise HopperError("block_n must be a multiple of 8 from 8 to 256 (wgmma's n and one TMA box).")
        if self.cluster_m not in (1, 2) or self.block_n % (8 * self.cluster_m):
            raise HopperError("cluster_m must be 1 or 2, and block_n / cluster_m a multiple of 8 (each workgroup's "
                              "share of the B tile is whole 1 KiB swizzle atoms).")
        if self.cluster_n not in (1, 2) or self.block_m % (8 * self.cluster_n):
            raise HopperError("cluster_n must be 1 or 2, and block_m / cluster_n a multiple of 8 (each workgroup's "
                              "share of the A tile is whole 1 KiB swizzle atoms).")
        if self.group_m > 1 and self.group_m % self.cluster_m:
            raise HopperError("group_m must be a multiple of cluster_m (a cluster takes cluster_m block rows at "
                              "once), or 1 for row order.")
        if not 2 <= self.stages <= MAX_STAGES:
            raise HopperError(f"stages must be 2 to {MAX_STAGES}.")
        if not 1 <= self.split_k <= 64:
            raise HopperError("split_k must be 1 to 64.")
        if self.split_sum not in SPLIT_SUMS:
            raise HopperError(f"split_sum must be one of {', '.join(SPLIT_SUMS)}, not {self.split_sum!r}.")
        if self.sums_in_cluster:
            if self.split_k > MAX_CLUSTER or self.cluster_m * self.cluster_n != 1 or self.loops_over_tiles:
                raise HopperError(f"slices summed in the cluster need 2 to {MAX_CLUSTER} slices (one cluster of "
                                  "them per tile), no cluster along M or N and one tile per workgroup (not persistent, "
                                  "not ping-pong).")
            if self.block_n % (4 * self.split_k):
                raise HopperError("slices summed in the cluster need block_n a multiple of 4 x split_k (each "
                                  "workgroup sums whole 4-column groups of the tile).")
            if self.sum_bytes() > self.stages * sum(self.stage_bytes()):
                raise HopperError(f"slices summed in the cluster put the {self.block_m}x{self.block_n} f32 partial "
                                  f"product ({self.sum_bytes()} bytes) over the stages, which hold only "
                                  f"{self.stages * sum(self.stage_bytes())}.")
        if self.defer_stores and (not self.tma_store or self.kind != "cooperative" or self.sums_in_cluster):
            raise HopperError("deferred stores need C stored by TMA in a cooperative kernel (ping-pong consumers "
                              "already store under the other's MMAs).")
        if self.stream_k and (self.kind != "cooperative" or not self.persistent or self.split_k > 1
                              or self.cluster_n > 1 or self.serpentine_k):
            raise HopperError("stream-K needs a persistent cooperative kernel with K whole, no cluster along N and "
                              "K steps in order.")
        if self.shared_bytes() > SHARED_BYTES:
            raise HopperError(f"the schedule needs {self.shared_bytes()} bytes of shared memory; sm_90 has 227 KiB.")

    @property
    def sums_in_cluster(self) -> bool:
        """K in slices summed inside the kernel, across the workgroups of a cluster (`split_sum`)."""
        return self.split_k > 1 and self.split_sum == "cluster"

    @property
    def sums_after(self) -> bool:
        """K in slices whose f32 partial products the program sums after the kernel (IREE's reduction dispatch)."""
        return self.split_k > 1 and not self.sums_in_cluster

    @property
    def cluster_size(self) -> int:
        """Workgroups per thread-block cluster: `cluster_m` x `cluster_n` sharing B and A, or the slices of a tile
        summed in it."""
        return self.split_k if self.sums_in_cluster else self.cluster_m * self.cluster_n

    @property
    def cluster_tiles(self) -> int:
        """Block tiles a cluster takes at once: `cluster_m` block rows by `cluster_n` block columns (1 when the
        cluster sums K's slices: its workgroups share one tile)."""
        return self.cluster_m * self.cluster_n

    def partners(self, rank: int) -> tuple[int, ...]:
        """The ranks of the cluster on workgroup `rank`'s block row or column of the cluster tile (itself
        included), in order: their loads land in its stages and its own in theirs (B's share to its column, A's to
        its row), so each of them releases its stages and it releases theirs. None but itself when the cluster
        sums K's slices."""
        if self.sums_in_cluster:
            return (rank,)
        rank_m, rank_n = rank % self.cluster_m, rank // self.cluster_m
        column = {rank_n * self.cluster_m + i for i in range(self.cluster_m)}
        return tuple(sorted(column | {rank_m + self.cluster_m * j for j in range(self.cluster_n)}))

    def sum_row(self) -> int:
        """f32 elements per row of the partial product in shared memory (slices summed in the cluster): the tile's
        row and `SUM_PAD` more, so that the 8-byte stores of a fragment's rows fall in different banks."""
        return self.block_n + SUM_PAD

    def sum_bytes(self) -> int:
        return self.block_m * self.sum_row() * 4

    @property
    def rows_per_consumer(self) -> int:
        return self.block_m if self.kind == "pingpong" else self.block_m // self.consumers

    @property
    def m_blocks(self) -> int:
        """wgmma m64 blocks per consumer warp group."""
        return self.rows_per_consumer // 64

    @property
    def loops_over_tiles(self) -> bool:
        return self.persistent or self.kind == "pingpong"

    @property
    def stage_readers(self) -> int:
        """Consumer warp groups of a workgroup that read each stage (one thread of each releases it)."""
        return 1 if self.kind == "pingpong" else self.consumers

    @property
    def empty_arrivals(self) -> int:
        """Arrivals that release a stage: each reading warp group of every workgroup whose TMA loads write into
        this workgroup's stage too (`partners`: the cluster's workgroups on its block row or column)."""
        return self.stage_readers * (self.cluster_m + self.cluster_n - 1)

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    def stage_bytes(self) -> tuple[int, int]:
        return self.block_m * self.block_k * 2, self.block_n * self.block_k * 2

    def shared_bytes(self, staged: bool = False) -> int:
        """The workgroup's shared memory: 1 KiB to align the swizzled tiles, the stages, their barriers, and with
        `staged` (`stages_stores`) each consumer warp's `STAGING_BYTES` after them."""
        if staged:
            return 1024 + self.staging_offset() + self.consumers * 4 * self.staging_bytes()
        a, b = self.stage_bytes()
        return 1024 + self.stages * (a + b) + (2 * self.stages + 2) * 8

    def staging_offset(self) -> int:
        """Where the consumer warps' staging areas start (from the aligned base): after the barriers, on 128 B (on
        1024 B for TMA stores: the areas' 64-byte swizzle runs on the address bits)."""
        a, b = self.stage_bytes()
        align = 1024 if self.tma_store else 128
        return -(-(self.stages * (a + b) + (2 * self.stages + 2) * 8) // align) * align

    def staging_bytes(self) -> int:
        """Each consumer warp's staging bytes: one area, or `STORE_RING` of them for TMA stores."""
        return STAGING_BYTES * (STORE_RING if self.tma_store else 1)


# The schedules' names on the command line: kind, persistent (ping-pong always loops over tiles).
NAMES = {"hopper-cooperative": ("cooperative", False), "hopper-cooperative-persistent": ("cooperative", True),
         "hopper-pingpong": ("pingpong", True)}
# The shipped schedule (the `hopper` pipeline and `auto` on sm_90a): cooperative 128x256, 4 stages, workgroups
# looping over the tiles in groups of 16 block rows, clusters of two sharing B, the fastest of the three schedules
# on all four 8192^3 problems of results/h100/hopper/2026-11-25c (0.96-0.98x cuBLAS).
DEFAULT = HopperSchedule(block_m=128, block_n=256, stages=4, group_m=16, persistent=True, cluster_m=2)


def named_schedule(name: str, tile: tuple[int, int, int] | None = None, stages: int | None = None,
                   cluster_m: int | None = None, group_m: int | None = None, split_k: int = 1,
                   split_sum: str = "dispatch", cluster_n: int | None = None) -> HopperSchedule:
    """The schedule `name` (`NAMES`) with the given choices, the rest the shipped schedule's (ping-pong: 128x128)."""
    if name not in NAMES:
        raise HopperError(f"unknown Hopper schedule '{name}'; choose one of {', '.join(NAMES)}.")
    kind, persistent = NAMES[name]
    m, n, k = tile or (DEFAULT.block_m, 128 if kind == "pingpong" else DEFAULT.block_n, DEFAULT.block_k)
    # a cooperative 64-row tile is one consumer warp group's (two would get 32 rows each, below wgmma's m64)
    consumers = 1 if kind == "cooperative" and m == 64 else DEFAULT.consumers
    schedule = HopperSchedule(block_m=m, block_n=n, block_k=k, kind=kind, persistent=persistent, consumers=consumers,
                              stages=DEFAULT.stages if stages is None else stages,
                              group_m=DEFAULT.group_m if group_m is None else group_m,
                              cluster_m=DEFAULT.cluster_m if cluster_m is None else cluster_m, split_k=split_k,
                              split_sum=split_sum, cluster_n=DEFAULT.cluster_n if cluster_n is None else cluster_n)
    schedule.check()
    return schedule


def parse_schedule(text: str) -> HopperSchedule:
    """`NAME[:BLOCK_MxBLOCK_NxSTAGESxGROUP_M[xCLUSTER[xSPLIT_K]]]` (a name of `NAMES`), checked; one sentence for
    anything else. The name alone is the shipped schedule's sizes for that kind (`named_schedule`); with sizes, a
    CLUSTER left out is 1 (no cluster), a SPLIT_K left out 1 (K whole); CLUSTER is CLUSTER_M, or CLUSTER_M,CLUSTER_N
    for a cluster along N too (e.g. 2,2); SPLIT_K followed by `c` sums the slices in the kernel's cluster
    (`split_sum`), e.g. hopper-cooperative:64x256x5x1x1x8c."""
    name, colon, sizes = text.partition(":")
    if name not in NAMES:
        raise HopperError(f"unknown Hopper schedule '{name}'; choose one of {', '.join(NAMES)}.")
    if not colon:
        return named_schedule(name)
    split_sum = "dispatch"
    if sizes.endswith("c") and sizes.count("x") == 5:  # SPLIT_Kc: the slices summed in the cluster
        sizes, split_sum = sizes[:-1], "cluster"
    fields = sizes.split("x")
    along_n = "1"
    if len(fields) >= 5 and fields[4].count(",") == 1:  # CLUSTER_M,CLUSTER_N
        fields[4], along_n = fields[4].split(",")
    try:
        numbers, cluster_n = [int(v) for v in fields], int(along_n)
    except ValueError:
        numbers, cluster_n = [], 1
    if len(numbers) not in (4, 5, 6):
        raise HopperError(f"'{text}' is not {name}:BLOCK_MxBLOCK_NxSTAGESxGROUP_M[xCLUSTER_M[,CLUSTER_N]"
                          f"[xSPLIT_K[c]]], e.g. {name}:128x256x4x16x2 or {name}:128x256x4x16x2,2.")
    if split_sum == "cluster" and numbers[-1] < 2:
        raise HopperError(f"'{text}': a c after SPLIT_K sums its slices in the cluster; it needs 2 to {MAX_CLUSTER} "
                          "slices.")
    block_m, block_n, stages, group_m, *rest = numbers
    return named_schedule(name, (block_m, block_n, SWIZZLE_BYTES // 2), stages, rest[0] if rest else 1, group_m,
                          rest[1] if len(rest) > 1 else 1, split_sum, cluster_n)


# A 16-bit C goes out in rows of 16 bytes: each consumer warp writes four 8x8 blocks of its accumulator fragments
# to its staging area (stmatrix), reads one 16-byte row of them per lane back and stores it (four lanes give 64
# contiguous bytes of a row), where the per-lane stores of two columns wrote 16 bytes a row per four lanes.
STAGING_BYTES = 512  # four 8x8 blocks of 16-bit values
# TMA stores (`HopperSchedule.tma_store`): a warp's areas in a ring, its 8x32 blocks written into them
# STORE_BATCH at a time (stmatrix), fenced to the async proxy once a batch and stored by one bulk group of copies
# while the next batch is written; a batch's areas are written again once the group that last read them is done
# (at most STORE_RING / STORE_BATCH - 1 later groups still reading: cp.async.bulk.wait_group.read). C's map: boxes of
# 32 columns x 8 rows, 64-byte swizzle (a row of the box is 64 bytes: its four 16-byte chunks XOR-ed with bits 7-8
# of the address, so the eight rows' writes of one 8x8 matrix fall in different banks). Batches of 2 in a ring of
# 4, measured on an H200 against a fence and a group per block (results/h200/square8192/batch1, float64-checked,
# two rounds): the multi-head block's Q·Kᵀ (16x4096x4096x128, two K steps a tile) 232.5 -> 210.7 µs, block a's
# ·W1 232.6 -> 228.1, its projection 60.4 -> 59.9, 8192³ 1666.5 -> 1646.4 (within the rounds' spread), ·W2 the
# same; a workgroup's epilogue between tiles 0.4-0.6 µs shorter (batches of 4 in a ring of 8, results/h200/prologue).
STORE_RING = 4
STORE_BATCH = 2  # areas (8-row halves of a box) a fence and a bulk group
# C's box: 32 columns by 8 rows (a fragment row's block), or by 16 (both of a warp's fragment rows, two 8x8 halves
# in two neighbouring areas: the 64-byte swizzle repeats every 8 rows, so each half keeps its 512-byte pattern) for
# half as many copies. 16 rows with the stores deferred (`HopperSchedule.defer_stores`), measured on an H200 against
# 8 rows stored at once (results/h200/square8192/defer1 and rows1, float64-checked, two rounds each): the multi-head
# block's Q·Kᵀ (16x4096x4096x128) 208.5 -> 196.4 µs (16 rows alone 206.7, deferred alone 202.8), block a's ·W1
# 227.9 -> 223.7, its projection 59.3 -> 58.7, ·W2 and 8192³ within the rounds' spread.
STORE_BOX = (32, 16)
STORE_SWIZZLE = 64


def stores_by_tma(problem: Gemm, schedule: HopperSchedule) -> bool:
    """Whether the kernel stores C's whole tiles by TMA: the schedule asks for it and the kernel stages its stores."""
    return schedule.tma_store and stages_stores(problem, schedule)


def stages_stores(problem: Gemm, schedule: HopperSchedule) -> bool:
    """Whether the kernel stores C through its warps' staging areas: a 16-bit C with rows of whole 16 bytes, tiles
    of whole groups of four 8-column blocks, and room for the areas."""
    return problem.out_dtype != "f32" and problem.n % 8 == 0 and schedule.block_n % 32 == 0 and \
        not schedule.sums_in_cluster and schedule.shared_bytes(staged=True) <= SHARED_BYTES


def check_problem(problem: Gemm, schedule: HopperSchedule | None = None) -> None:
    """What the Hopper kernels take of the project's problems: a 16-bit GEMM or a batch of them, NT or NN, K a
    multiple of 8 (and for NN, N a multiple of 8 and the schedule's B tile whole 64-column boxes; for a batch of NN
    products K a multiple of 64), a batch not split along K."""
    if problem.dtype not in DTYPES:
        raise HopperError(f"the Hopper route takes {' or '.join(DTYPES)}, not {problem.dtype}.")
    if problem.layout not in LAYOUTS:
        raise HopperError(f"the Hopper route takes layout {' or '.join(LAYOUTS)} so far, not {problem.layout}.")
    if schedule is not None and schedule.store_heads:
        _check_heads(problem, schedule)
    if schedule is not None and schedule.defer_stores and not stores_by_tma(kernel_problem(problem, schedule),
                                                                             schedule):
        raise HopperError(f"{problem.shape_name}: deferred stores need C stored by TMA (a 16-bit C the kernel "
                          "stages: epilogue truncf, N a multiple of 8, K whole or its slices summed in the kernel).")
    if schedule is not None and schedule.stream_k and (problem.batched or schedule.store_heads):
        raise HopperError(f"{problem.shape_name}: stream-K takes one product with C as the problem has it (no batch, "
                          "no heads).")
    if problem.batched and schedule is not None and schedule.split_k > 1:
        raise HopperError(f"{problem.shape_name}: a batch of GEMMs is not split along K (its products are the "
                          "units of work).")
    if problem.batched and problem.layout == "nn" and problem.k % (SWIZZLE_BYTES // 2):
        raise HopperError(f"{problem.shape_name}: a batch of NN products needs K a multiple of {SWIZZLE_BYTES // 2} "
                          "(B's K rows of one product end on a K step; the next product's rows are never read).")
    if problem.epilogue.kind not in EPILOGUES:
        raise HopperError(f"the Hopper kernels store the product in f32 or rounded to the input type (epilogue "
                          f"{' or '.join(EPILOGUES)}); epilogue {problem.epilogue.kind} is not built.")
    if problem.k % 8:
        raise HopperError("K must be a multiple of 8 (TMA needs 16-byte row strides).")
    if problem.layout == "nn" and problem.n % 8:
        raise HopperError("layout nn needs N a multiple of 8 (B's rows are N long; TMA needs 16-byte row strides).")
    if schedule is not None and schedule.split_k > 1 and _ceil(problem.k, schedule.block_k) % schedule.split_k:
        raise HopperError(f"split_k {schedule.split_k} must divide K's {_ceil(problem.k, schedule.block_k)} tiles of "
                          f"{schedule.block_k} (each slice the same number of K steps).")
    if problem.layout == "nn" and schedule is not None and (schedule.block_n // schedule.cluster_m) % NN_BOX:
        raise HopperError(f"layout nn loads B in boxes of {NN_BOX} columns: block_n / cluster_m must be a multiple "
                          f"of {NN_BOX}.")


HEAD_STORES = ("split", "join")


def head_store(problem: Gemm, schedule: HopperSchedule) -> str | None:
    """How the kernel stores C in heads (`HopperSchedule.store_heads`): "split" for one product, "join" for a batch
    of them; None without heads."""
    if not schedule.store_heads:
        return None
    return "join" if problem.batched else "split"


def head_width(problem: Gemm, schedule: HopperSchedule) -> int:
    """Columns of one head of C: N / H for a split product, N (a product's) for a join, N without heads."""
    return problem.n if problem.batched or not schedule.store_heads else problem.n // schedule.store_heads


def _check_heads(problem: Gemm, schedule: HopperSchedule) -> None:
    """C in heads: by TMA (the guarded stores have no head layout), every tile whole (so none takes them), heads of
    whole 32-column boxes (a box never crosses a head), a split product's N H heads, a join's batch the H heads, K
    whole (no slices)."""
    heads = schedule.store_heads
    where = f"C in {heads} heads of {problem.shape_name}"
    if not stores_by_tma(problem, schedule):
        raise HopperError(f"{where} is stored by TMA: it needs tma_store and a 16-bit C (epilogue truncf) the kernel "
                          "stages.")
    if problem.m % schedule.block_m or problem.n % schedule.block_n:
        raise HopperError(f"{where} needs whole {schedule.block_m}x{schedule.block_n} tiles (M and N multiples).")
    if problem.batched and problem.batch != heads:
        raise HopperError(f"{where}: a join takes one head per product ({problem.batch} products).")
    if not problem.batched and problem.n % heads:
        raise HopperError(f"{where}: N must split into {heads} heads.")
    if head_width(problem, schedule) % STORE_BOX[0] or schedule.split_k > 1:
        raise HopperError(f"{where}: a head must be whole {STORE_BOX[0]}-column boxes, and K whole.")


def tensor_maps(problem: Gemm, schedule: HopperSchedule) -> list[dict]:
    """What the GPU machine encodes (`pipelines.tensormap`): per operand its dims (innermost first), row stride in
    bytes and box; the address is a placeholder that `@patch` replaces."""
    batches = problem.batch or 1  # a batch's operands are the products' operands stacked by rows
    a = {"operand": "A", "dims": [problem.k, batches * problem.m], "stride": problem.k * 2,
         "box": [schedule.block_k, schedule.block_m // schedule.cluster_n], "dtype": problem.dtype,
         "swizzle": SWIZZLE_BYTES}
    if problem.layout == "nn":  # K rows of N: boxes of 64 columns × block_k rows
        b = {"operand": "B", "dims": [problem.n, batches * problem.k], "stride": problem.n * 2,
             "box": [NN_BOX, schedule.block_k], "dtype": problem.dtype, "swizzle": SWIZZLE_BYTES}
    else:
        b = {"operand": "B", "dims": [problem.k, batches * problem.n], "stride": problem.k * 2,
             "box": [schedule.block_k, schedule.block_n // schedule.cluster_m], "dtype": problem.dtype,
             "swizzle": SWIZZLE_BYTES}
    if not stores_by_tma(problem, schedule):
        return [a, b]
    c = {"operand": "C", "dims": [problem.n, batches * problem.m], "stride": problem.n * 2, "box": list(STORE_BOX),
         "dtype": problem.dtype, "swizzle": STORE_SWIZZLE}
    heads, width = schedule.store_heads, head_width(problem, schedule)
    if head_store(problem, schedule) == "split":  # (head, row, column of the head): H×M×width
        c.update(dims=[width, problem.m, heads], strides=[width * 2, problem.m * width * 2],
                 box=[STORE_BOX[0], STORE_BOX[1], 1], stride=width * 2)
    elif head_store(problem, schedule) == "join":  # (row, head, column of the head): M×H×width
        c.update(dims=[width, heads, problem.m], strides=[width * 2, heads * width * 2],
                 box=[STORE_BOX[0], 1, STORE_BOX[1]], stride=width * 2)
    return [a, b, c]


def b_boxes(problem: Gemm, schedule: HopperSchedule) -> int:
    """TMA loads of B per stage and workgroup: its share of the B tile in one box (nt) or 64-column boxes (nn)."""
    return schedule.block_n // schedule.cluster_m // NN_BOX if problem.layout == "nn" else 1


TARGET = ('#hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = '
          '"sm_90a", features = "+ptx83", wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = '
          'b64|b32|b16|b8, subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>], '
          'subgroup_size_choices = [32], max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = '
          '1024, max_workgroup_memory_bytes = 232448, max_workgroup_counts = [2147483647, 65535, 65535]>>}>')


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class _Body:
    """A func body under construction: SSA names and lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.head: list[str] = []  # constants, defined at the top so that every region sees them
        self.count = 0
        self.consts: dict[tuple[int, str], str] = {}

    def op(self, text: str, name: str | None = None) -> str:
        if name is None:
            self.lines.append(text)
            return ""
        self.count += 1
        ssa = f"%{name}{self.count}"
        self.lines.append(f"{ssa} = {text}")
        return ssa

    def arith(self, op: str, x: str, y: str, ty: str) -> str:
        return self.op(f"arith.{op} {x}, {y} : {ty}", "v")

    def const(self, value: int, ty: str) -> str:
        key = (value, ty)
        if key not in self.consts:
            self.count += 1
            self.consts[key] = f"%c{self.count}"
            self.head.append(f"{self.consts[key]} = arith.constant {value} : {ty}")
        return self.consts[key]

    def text(self) -> str:
        return "\n        ".join(self.head + self.lines)


def _memref(shape: list[int], dtype: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{dtype}, #hal.descriptor_type<storage_buffer>>"


def _pointer(b: _Body, memref: str, ty: str) -> str:
    """The i64 address of a memref's data."""
    index = b.op(f"memref.extract_aligned_pointer_as_index {memref} : {ty} -> index", "p")
    return b.op(f"arith.index_cast {index} : index to i64", "p")


def _binding(b: _Body, layout: str, index: int, ty: str, name: str, read_only: bool) -> str:
    flags = " flags(ReadOnly)" if read_only else ""
    return b.op(f"hal.interface.binding.subspan layout({layout}) binding({index}) alignment(64) "
                f"offset({b.const(0, 'index')}){flags} : {ty}", name)


def _asm(b: _Body, text: str, constraints: str, args: list[tuple[str, str]]) -> None:
    operands = ", ".join(a for a, _ in args)
    types = ", ".join(t for _, t in args)
    b.op(f'llvm.inline_asm has_side_effects asm_dialect = att "{text}", "{constraints}" {operands} : ({types}) -> ()')


# tensormap.replace field values (PTX ISA, tensormap.replace: the .elemtype and .swizzle_mode encodings; the
# element type's differs from CUDA's CUtensorMapDataType, where bf16 is 9)
MAP_ELEMTYPES = {"f16": 6, "bf16": 10}
MAP_SWIZZLES = {32: 1, 64: 2, 128: 3}
MAP_BYTES = 128
# The maps binding's start is rounded up to this many bytes in the kernel (a tensor map's address must be 64-byte
# aligned, CUDA's CUtensorMap; 128 leaves room), so the scratch holds that much more than the maps.
MAP_ALIGN = 128


def map_words(problem: Gemm, s: HopperSchedule) -> int:
    """i64 words of one workgroup's tensor maps: A's and B's, and C's where it stores by TMA."""
    return len(tensor_maps(kernel_problem(problem, s), s)) * MAP_BYTES // 8


def maps_words(problem: Gemm, s: HopperSchedule) -> int:
    """i64 words of the dispatch's maps scratch: every workgroup's maps and the room for aligning its start."""
    return grid_size(problem, s) * map_words(problem, s) + MAP_ALIGN // 8 + partial_words(problem, s) // 2


def _build_maps(b: _Body, specs: list[dict], operands: list[str], slot: str) -> list[str]:
    """One thread builds the workgroup's tensor maps at `slot` (an i64 global address, 128-byte aligned; one map
    after the other): zeroed, then every field of `specs` (`tensor_maps`) written with `tensormap.replace`, then
    released to the tensor-map proxy and acquired by this thread, which issues the TMA loads. Returns the maps'
    addresses as pointers."""
    zero = b.const(0, "i64")
    addresses = []
    for index, (spec, operand) in enumerate(zip(specs, operands)):
        at = b.arith("addi", slot, b.const(index * MAP_BYTES, "i64"), "i64")
        addresses.append(at)
        for word in range(MAP_BYTES // 8):
            pointer = b.op(f"llvm.inttoptr {b.arith('addi', at, b.const(8 * word, 'i64'), 'i64')} : i64 to !llvm.ptr",
                           "w")
            b.op(f"llvm.store {zero}, {pointer} : i64, !llvm.ptr")
        replace = "tensormap.replace.tile.{}.global.b1024.b{} [$0], {}$1;"
        _asm(b, replace.format("global_address", 64, ""), "l,l", [(at, "i64"), (operand, "i64")])
        _asm(b, replace.format("rank", 32, ""), "l,r", [(at, "i64"), (b.const(len(spec["dims"]) - 1, "i32"), "i32")])
        for ordinal, (dim, box) in enumerate(zip(spec["dims"], spec["box"])):
            for field, value in (("global_dim", dim), ("box_dim", box), ("element_stride", 1)):
                _asm(b, replace.format(field, 32, f"{ordinal}, "), "l,r", [(at, "i64"), (b.const(value, "i32"), "i32")])
        for ordinal, stride in enumerate(spec.get("strides", [spec["stride"]])):
            _asm(b, replace.format("global_stride", 64, f"{ordinal}, "), "l,l",
                 [(at, "i64"), (b.const(stride, "i64"), "i64")])
        for field, value in (("elemtype", MAP_ELEMTYPES[spec["dtype"]]),
                             ("swizzle_mode", MAP_SWIZZLES[spec["swizzle"]])):
            _asm(b, f"tensormap.replace.tile.{field}.global.b1024.b32 [$0], {value};", "l", [(at, "i64")])
    _asm(b, "fence.proxy.tensormap::generic.release.gpu;", "", [])
    for at in addresses:
        _asm(b, f"fence.proxy.tensormap::generic.acquire.gpu [$0], {MAP_BYTES};", "l", [(at, "i64")])
    # ptxas can leave out the acquire fence's wait before the first bulk copy that reads the map (Triton's TMA
    # lowering issues an empty bulk group and waits on it for the same reason)
    _asm(b, "cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0;", "", [])
    return [b.op(f"llvm.inttoptr {at} : i64 to !llvm.ptr", "map") for at in addresses]


def _tile(b: _Body, problem: Gemm, s: HopperSchedule, i32, tile: str) -> tuple[str, str]:
    """(cluster column, cluster row) of linear cluster tile `tile` (i32): in groups of `group_m` block rows, down
    each cluster column of the group, then the next (the last group may be shorter); row order when a group is one
    cluster row. A cluster row is `cluster_m` block rows, a cluster column `cluster_n` block columns."""
    columns, rows = unit_grid(problem, s)
    group = max(1, s.group_m // s.cluster_m)
    if group == 1:
        return b.arith("remui", tile, i32(columns), "i32"), b.arith("divui", tile, i32(columns), "i32")
    per_group = i32(group * columns)
    first = b.arith("muli", b.arith("divui", tile, per_group, "i32"), i32(group), "i32")
    size = b.op(f"arith.minui {b.arith('subi', i32(rows), first, 'i32')}, {i32(group)} : i32", "size")
    within = b.arith("remui", tile, per_group, "i32")
    return b.arith("divui", within, size, "i32"), b.arith("addi", first, b.arith("remui", within, size, "i32"), "i32")


def kernel_problem(problem: Gemm, s: HopperSchedule) -> Gemm:
    """The GEMM the kernel itself computes: with split_k summed after, each slice's f32 partial product (the
    program rounds their sum); else `problem`."""
    return problem.with_(epilogue=Epilogue()) if s.sums_after else problem


def tile_grid(problem: Gemm, s: HopperSchedule) -> tuple[int, int]:
    """(block columns, block rows) of the problem's tiles."""
    return _ceil(problem.n, s.block_n), _ceil(problem.m, s.block_m)


def unit_grid(problem: Gemm, s: HopperSchedule) -> tuple[int, int]:
    """(cluster columns, cluster rows): the tiles a cluster takes at once (`cluster_m` block rows of `cluster_n`
    block columns; a block row past M or column past N is loaded as zeros and not stored)."""
    columns, rows = tile_grid(problem, s)
    return _ceil(columns, s.cluster_n), _ceil(rows, s.cluster_m)


def active_clusters(size: int) -> int:
    """Clusters of `size` workgroups that run at once: SM_COUNT's share, at most MAX_ACTIVE_CLUSTERS' count."""
    return min(SM_COUNT // size, MAX_ACTIVE_CLUSTERS.get(size, SM_COUNT))


@dataclass(frozen=True)
class StreamSplit:
    """Stream-K's division of the units of work (cluster tiles, `steps` K steps each) over `clusters` clusters:
    `rounds` whole rounds of one unit per cluster (unit u + r × clusters for cluster u), then the last `units`
    units' K steps, numbered one unit after the other, in runs of `span` per cluster (cluster g: steps g × span
    to (g + 1) × span, the last cut at units × steps). With span ≥ steps a unit is cut at most once."""
    clusters: int
    steps: int
    rounds: int
    units: int
    span: int

    @property
    def total(self) -> int:
        return self.units * self.steps

    def pieces(self, g: int) -> list[tuple[int, int, int]]:
        """Cluster g's items after its whole rounds: (unit, first K step, K steps), in the order it takes them."""
        a, e = min(g * self.span, self.total), min((g + 1) * self.span, self.total)
        found = []
        while a < e:
            unit, first = divmod(a, self.steps)
            count = min(e - a, self.steps - first)
            found.append((self.rounds * self.clusters + unit, first, count))
            a += count
        return found


def stream_split(problem: Gemm, s: HopperSchedule) -> StreamSplit | None:
    """Stream-K's split (`HopperSchedule.stream_k`): every cluster that runs at once, whole rounds but the last
    one or two, the rest in equal runs of K steps; None without stream-K or with no more units than clusters."""
    if not s.stream_k:
        return None
    columns, rows = unit_grid(problem, s)
    units, clusters = columns * rows, active_clusters(s.cluster_tiles)
    if units <= clusters:
        return None
    steps = _ceil(problem.k, s.block_k)
    rounds = units // clusters - 1
    rest = units - rounds * clusters
    return StreamSplit(clusters, steps, rounds, rest, _ceil(rest * steps, clusters))


def flag_words(problem: Gemm, s: HopperSchedule) -> int:
    """i32 flags of stream-K: one per cluster (the unit it owns), workgroup of it and consumer warp group."""
    split = stream_split(problem, s)
    return split.clusters * s.cluster_size * s.consumers if split else 0


def partial_words(problem: Gemm, s: HopperSchedule) -> int:
    """f32 words of stream-K's partial products: per flag, a consumer warp group's accumulators (m_blocks × n/2
    per thread, 128 threads)."""
    return flag_words(problem, s) * s.m_blocks * (s.block_n // 2) * WARPGROUP


def grid_size(problem: Gemm, s: HopperSchedule) -> int:
    """Workgroups: one per tile; or, looping over tiles, the fewest whole clusters (at most the clusters that run at
    once, `active_clusters`) that take the tiles in as few rounds as all of those would (8192² in 128×256 pairs:
    1024 cluster tiles, 16 rounds either way, on 64 clusters instead of 66, the rounds setting the time; in 2x2
    clusters: 512 cluster tiles, 18 rounds on the 30 that run at once, so 29)."""
    columns, rows = unit_grid(problem, s)
    units = columns * rows * s.split_k * (problem.batch or 1)
    if not s.loops_over_tiles:
        return units * s.cluster_tiles
    split = stream_split(problem, s)
    if split is not None:  # stream-K: every cluster that runs at once
        return split.clusters * s.cluster_tiles
    rounds = _ceil(units, active_clusters(s.cluster_tiles))
    return _ceil(units, rounds) * s.cluster_tiles


def pieces(problem: Gemm, s: HopperSchedule) -> int:
    """What a cluster tile is cut into as units of work: a batch's products, or K's slices (each over its own K)."""
    return problem.batch if problem.batch is not None else s.split_k


def work_units(problem: Gemm, s: HopperSchedule) -> int:
    """The units of work the clusters share: a cluster tile and a piece (piece-major); with the slices summed in the
    cluster, a tile (the cluster's workgroups take its slices, rank r slice r)."""
    columns, rows = unit_grid(problem, s)
    return columns * rows * (1 if s.sums_in_cluster else pieces(problem, s))


def most_tiles(problem: Gemm, s: HopperSchedule) -> int:
    """The most units of work (tiles) one workgroup takes: its cluster's share of them all."""
    return _ceil(work_units(problem, s), grid_size(problem, s) // s.cluster_size)


def _operands(problem: Gemm, s: HopperSchedule) -> list[tuple[list[int], str]]:
    """(shape, element type) of A (M×K), B (N×K, or K×N for nn), C (M×N, f32 or the input type) and the maps
    scratch (`maps_words`), the dispatch's operands and results in binding order."""
    dt, batches = DTYPES[problem.dtype], problem.batch or 1  # a batch's operands stacked by rows
    return [([batches * problem.m, problem.k], dt), ([batches * problem.k, problem.n] if problem.layout == "nn" else
                                                      [batches * problem.n, problem.k], dt),
            (c_shape(problem, s), kernel_problem(problem, s).out_dtype),
            ([maps_words(problem, s)], "i64")]


def c_shape(problem: Gemm, s: HopperSchedule) -> list[int]:
    """The kernel's C as its binding declares it: `partial_rows` × N, or in heads (`store_heads`) H·M rows of a
    head's columns (split) or M rows of H heads' (join)."""
    heads, width = s.store_heads, head_width(problem, s)
    if head_store(problem, s) == "split":
        return [heads * problem.m, width]
    if head_store(problem, s) == "join":
        return [problem.m, heads * width]
    return [partial_rows(problem, s), problem.n]


def partial_rows(problem: Gemm, s: HopperSchedule) -> int:
    """Rows of the kernel's C: each slice's M rows with split_k summed after, each product's M rows for a batch,
    else M."""
    return problem.m * (s.split_k if s.sums_after else 1) * (problem.batch or 1)


def _operand_memrefs(problem: Gemm, s: HopperSchedule) -> tuple[str, ...]:
    """The memref types of A, B, C and the maps scratch, as the kernel's bindings declare them."""
    return tuple(_memref(shape, dtype) for shape, dtype in _operands(problem, s))


def _acc_type(n: int) -> str:
    return "!llvm.struct<(" + ", ".join(["f32"] * (n // 2)) + ")>"


def _gemm_func(problem: Gemm, s: HopperSchedule, layout: str, entry: str = "gemm",
               tail: Elementwise | None = None) -> str:
    problem = kernel_problem(problem, s)
    b = _Body()
    dt = DTYPES[problem.dtype]
    c0, c1 = b.const(0, "index"), b.const(1, "index")
    i32 = lambda v: b.const(v, "i32")  # noqa: E731
    i64 = lambda v: b.const(v, "i64")  # noqa: E731
    ta, tb, tc, tt = _operand_memrefs(problem, s)
    a, bb = _binding(b, layout, 0, ta, "a", True), _binding(b, layout, 1, tb, "b", True)
    streamk = stream_split(problem, s)
    first_out = 3 if streamk else 2  # stream-K's flags take binding 2 (an operand the dispatch updates in place)
    c, t = _binding(b, layout, first_out, tc, "cc", False), _binding(b, layout, first_out + 1, tt, "t", False)
    flags_base = None
    if streamk:
        tf = _memref([flag_words(problem, s)], "i32")
        flags_base = _pointer(b, _binding(b, layout, 2, tf, "fl", False), tf)
    operands, maps_base = [_pointer(b, a, ta), _pointer(b, bb, tb)], _pointer(b, t, tt)
    bytes_a, bytes_b = s.stage_bytes()
    staged = stages_stores(problem, s)
    smem_ty = f"memref<{s.shared_bytes(staged)}xi8, #gpu.address_space<workgroup>>"
    raw = _pointer(b, b.op(f"memref.alloc() : {smem_ty}", "smem"), smem_ty)
    base = b.arith("andi", b.arith("addi", raw, i64(1023), "i64"), i64(-1024), "i64")
    bars = s.stages * (bytes_a + bytes_b)

    def shared(offset: str) -> str:  # an i64 shared offset from base -> !llvm.ptr<3>
        return b.op(f"llvm.inttoptr {b.arith('addi', base, offset, 'i64')} : i64 to !llvm.ptr<3>", "sp")

    def bar(kind: int, index: str) -> str:
        """Barrier `index` (i64) of a kind: 0 `full` (per stage), 1 `empty` (per stage), 2 the ping-pong order (per
        consumer)."""
        offset = b.arith("addi", b.arith("muli", index, i64(8), "i64"), i64(bars + kind * s.stages * 8), "i64")
        return shared(offset)

    def wait(barrier: str, parity: str) -> None:
        b.op(f"nvvm.mbarrier.try_wait.parity {barrier}, {parity}, {i32(10000000)} : !llvm.ptr<3>, i32, i32")

    def parity_of(count: str) -> str:  # i64 -> i32 low bit
        return b.op(f"arith.trunci {b.arith('andi', count, i64(1), 'i64')} : i64 to i32", "par")

    tid32 = b.op(f"arith.index_cast {b.op('gpu.thread_id x', 'tid')} : index to i32", "tid")
    wg = b.arith("divui", tid32, i32(WARPGROUP), "i32")
    first = b.op(f"arith.cmpi eq, {tid32}, {i32(0)} : i32", "first")

    def maps_slot(workgroup: str) -> str:
        """Workgroup `workgroup`'s (i32) maps in the scratch, an i64 address: the scratch's start on MAP_ALIGN."""
        slot = b.arith("muli", b.op(f"arith.extui {workgroup} : i32 to i64", "slot"), i64(map_words(problem, s) * 8),
                       "i64")
        aligned = b.arith("andi", b.arith("addi", maps_base, i64(MAP_ALIGN - 1), "i64"), i64(-MAP_ALIGN), "i64")
        return b.arith("addi", aligned, slot, "i64")

    maps_at = None  # with TMA stores, this workgroup's maps (i64), written before the barrier below
    if stores_by_tma(problem, s):
        maps_at = maps_slot(b.op(f"arith.index_cast {b.op('hal.interface.workgroup.id[0] : index', 'bid')} : index "
                                 "to i32", "bid"))
    # Barriers, set up by thread 0 and visible to all before any role starts (with TMA stores, the tensor maps too:
    # the consumers' warps store C through its map, which each acquires after the barrier).
    b.op(f"scf.if {first} {{")
    if maps_at is not None:
        _build_maps(b, tensor_maps(problem, s), operands + [_pointer(b, c, tc)], maps_at)
    for index in range(s.stages):
        b.op(f"nvvm.mbarrier.init {bar(0, i64(index))}, {i32(1)} : !llvm.ptr<3>, i32")
        b.op(f"nvvm.mbarrier.init {bar(1, i64(index))}, {i32(s.empty_arrivals)} : !llvm.ptr<3>, i32")
    if s.kind == "pingpong":
        for index in range(2):
            b.op(f"nvvm.mbarrier.init {bar(2, i64(index))}, {i32(WARPGROUP)} : !llvm.ptr<3>, i32")
    b.op("nvvm.fence.mbarrier.init")
    b.op("}")
    _sync(b, s)  # the barriers initialised, in every workgroup of the cluster, before any role uses them
    # This cluster's tiles: unit, unit + clusters, ... (one unless the schedule loops over tiles); a unit is
    # `cluster_m` block rows of `cluster_n` block columns, block row `cluster_m * unit row + rank % cluster_m` and
    # block column `cluster_n * unit column + rank // cluster_m` this workgroup's.
    columns, rows = unit_grid(problem, s)
    tiles, grid = columns * rows, grid_size(problem, s) // s.cluster_size
    split, work = pieces(problem, s), work_units(problem, s)
    bid = b.op(f"arith.index_cast {b.op('hal.interface.workgroup.id[0] : index', 'bid')} : index to i32", "bid")
    rank = b.arith("remui", bid, i32(s.cluster_size), "i32")  # the cluster's workgroups are consecutive in x
    unit = b.arith("divui", bid, i32(s.cluster_size), "i32")
    rank_m, rank_n = rank, i32(0)  # the workgroup's block row and column in the cluster tile
    if s.cluster_n > 1:
        rank_m, rank_n = (b.arith("remui", rank, i32(s.cluster_m), "i32"),
                          b.arith("divui", rank, i32(s.cluster_m), "i32"))
    mine = b.arith("divui", b.arith("subi", i32(work + grid - 1), unit, "i32"), i32(grid), "i32")
    k_tiles = _ceil(problem.k, s.block_k) // s.split_k  # K steps of a unit (of its slice of K)
    kt_n, stages = b.const(k_tiles, "index"), i64(s.stages)
    if streamk:  # this cluster's run of the rest's K steps: [ska, ske), its first unit ska / steps
        span = b.arith("muli", unit, i32(streamk.span), "i32")
        ska = b.op(f"arith.minui {span}, {i32(streamk.total)} : i32", "ska")
        ske = b.op(f"arith.minui {b.arith('addi', span, i32(streamk.span), 'i32')}, {i32(streamk.total)} : i32",
                   "ske")
        length = b.arith("subi", ske, ska, "i32")
        sku = b.arith("divui", ska, i32(k_tiles), "i32")
        # the units the run touches (none for an empty run: it starts at the total, a whole number of units)
        reach = b.arith("addi", b.arith("remui", ska, i32(k_tiles), "i32"), length, "i32")
        count = b.arith("divui", b.arith("addi", reach, i32(k_tiles - 1), "i32"), i32(k_tiles), "i32")
        mine = b.arith("addi", i32(streamk.rounds), count, "i32")
    mine_i = b.op(f"arith.index_cast {mine} : i32 to index", "mine")

    def select(flag: str, yes: str, no: str) -> str:
        return b.op(f"arith.select {flag}, {yes}, {no} : i32", "sel")

    def work_of(i: str) -> dict:
        """Loop index `i` (index) of this workgroup's units -> its linear unit, first K step and K steps (i32),
        the K steps as the bound of a loop and the number of the stage ring's step its first K step takes (index)
        and, with stream-K, its role (i32: 0 whole, 1 the second part of a cut unit, published; 2 the first part,
        owned: the other added before C is stored)."""
        i32_ = b.op(f"arith.index_cast {i} : index to i32", "i")
        linear = b.arith("addi", unit, b.arith("muli", i32_, i32(grid), "i32"), "i32")
        item = {"linear": linear, "first": i32(0), "steps": i32(k_tiles), "role": None, "bound": kt_n,
                "base": b.arith("muli", i, kt_n, "index")}
        if not streamk:
            return item
        rest = b.op(f"arith.cmpi uge, {i32_}, {i32(streamk.rounds)} : i32", "rest")
        us = b.arith("addi", sku, b.arith("subi", i32_, i32(streamk.rounds), "i32"), "i32")  # unit of the rest
        low = b.arith("muli", us, i32(k_tiles), "i32")
        start = b.op(f"arith.maxui {ska}, {low} : i32", "st")
        end = b.op(f"arith.minui {ske}, {b.arith('addi', low, i32(k_tiles), 'i32')} : i32", "en")
        first, steps = b.arith("subi", start, low, "i32"), b.arith("subi", end, start, "i32")
        published = b.op(f"arith.cmpi ugt, {first}, {i32(0)} : i32", "pub")
        owned = b.op(f"arith.cmpi ult, {steps}, {i32(k_tiles)} : i32", "own")
        role = select(published, i32(1), select(owned, i32(2), i32(0)))
        based = b.arith("addi", b.arith("subi", start, ska, "i32"), i32(streamk.rounds * k_tiles), "i32")
        whole = b.op(f"arith.index_cast {item['base']} : index to i32", "b")
        base_i = b.op(f"arith.index_cast {select(rest, based, whole)} : i32 to index", "base")
        steps = select(rest, steps, i32(k_tiles))
        return {"linear": select(rest, b.arith("addi", us, i32(streamk.rounds * grid), "i32"), linear),
                "first": select(rest, first, i32(0)), "steps": steps, "role": select(rest, role, i32(0)),
                "bound": b.op(f"arith.index_cast {steps} : i32 to index", "n"), "base": base_i}

    def tile_of(i: str, item: dict | None = None) -> tuple[str, str, str]:
        """Loop index (index) -> (block column, block row, slice), i32."""
        u = (item or work_of(i))["linear"]
        if s.sums_in_cluster:
            piece, linear = rank, u
        elif split > 1:
            piece, linear = b.arith("divui", u, i32(tiles), "i32"), b.arith("remui", u, i32(tiles), "i32")
        else:
            piece, linear = i32(0), u
        col, row = _tile(b, problem, s, i32, linear)
        if s.cluster_n > 1:
            col = b.arith("addi", b.arith("muli", col, i32(s.cluster_n), "i32"), rank_n, "i32")
        if s.cluster_m > 1:
            row = b.arith("addi", b.arith("muli", row, i32(s.cluster_m), "i32"), rank_m, "i32")
        return col, row, piece

    def k_step(base: str, kt: str) -> tuple[str, str, str]:
        """(stage, use of that stage, the step's number q) of K step `kt` of the workgroup's unit whose first step
        is the ring's step `base` (`work_of`): steps are numbered across the workgroup's units, so the stage ring
        runs on from one unit to the next."""
        q = b.arith("addi", base, kt, "index")
        q = b.op(f"arith.index_cast {q} : index to i64", "q")
        return b.arith("remui", q, stages, "i64"), b.arith("divui", q, stages, "i64"), q

    producer = b.op(f"arith.cmpi eq, {wg}, {i32(0)} : i32", "producer")
    b.op(f"scf.if {producer} {{")
    # -- producer: one thread issues every TMA load; the warp group gives registers to the consumers.
    _asm(b, f"setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGISTERS};", "", [])
    b.op(f"scf.if {first} {{")
    if maps_at is not None:  # built before the barrier, by this thread
        map_a, map_b = [b.op(f"llvm.inttoptr {b.arith('addi', maps_at, i64(index * MAP_BYTES), 'i64')} : i64 to "
                             "!llvm.ptr", "map") for index in range(2)]
    else:
        map_a, map_b = _build_maps(b, tensor_maps(problem, s), operands, maps_slot(bid))
    b.op(f"scf.for %pi = {c0} to {mine_i} step {c1} {{")
    item = work_of("%pi")
    col, row, piece = tile_of("%pi", item)
    row_a = b.arith("muli", row, i32(s.block_m), "i32")
    row_b = b.arith("muli", col, i32(s.block_n), "i32")
    batch_k = None  # a batch of nn products: product `piece`'s K rows of the stacked B, from piece × K on
    if problem.batched:  # product `piece`: its rows of the stacked A (and of an nt B) from piece × M (N) on
        row_a = b.arith("addi", row_a, b.arith("muli", piece, i32(problem.m), "i32"), "i32")
        if problem.layout == "nn":
            batch_k = b.arith("muli", piece, i32(problem.k), "i32")
        else:
            row_b = b.arith("addi", row_b, b.arith("muli", piece, i32(problem.n), "i32"), "i32")
    b.op(f"scf.for %pk = {c0} to {item['bound']} step {c1} {{")
    stage, use, q = k_step(item["base"], "%pk")
    b.op(f"scf.if {b.op(f'arith.cmpi uge, {q}, {stages} : i64', 'again')} {{")
    wait(bar(1, stage), parity_of(b.arith("addi", use, i64(1), "i64")))  # the stage's previous use released
    b.op("}")
    full = bar(0, stage)
    b.op(f"nvvm.mbarrier.arrive.expect_tx {full}, {i32(bytes_a + bytes_b)} : !llvm.ptr<3>, i32")
    kt64 = b.op("arith.index_cast %pk : index to i64", "k")
    if streamk:  # a cut unit's part: from its first K step on
        kt64 = b.arith("addi", kt64, b.op(f"arith.extui {item['first']} : i32 to i64", "f"), "i64")
    if s.serpentine_k:  # odd tiles of the workgroup: K step k_tiles - 1 - kt (kt + odd × (k_tiles - 1 - 2 kt))
        odd = b.arith("andi", b.op("arith.index_cast %pi : index to i64", "t"), i64(1), "i64")
        turn = b.arith("subi", i64(k_tiles - 1), b.arith("muli", kt64, i64(2), "i64"), "i64")
        kt64 = b.arith("addi", kt64, b.arith("muli", odd, turn, "i64"), "i64")
    if s.split_k > 1:  # the slice's K steps: slice × k_tiles on
        first_k = b.arith("muli", b.op(f"arith.extui {piece} : i32 to i64", "sl"), i64(k_tiles), "i64")
        kt64 = b.arith("addi", kt64, first_k, "i64")
    kcoord = b.op(f"arith.trunci {b.arith('muli', kt64, i64(s.block_k), 'i64')} : i64 to i32", "kc")
    kcoord_b = kcoord if batch_k is None else b.arith("addi", kcoord, batch_k, "i32")
    if s.cluster_m > 1:  # this workgroup's share of B: rows rank_m × block_n / cluster_m on, to every workgroup
        share = s.block_n // s.cluster_m  # of its block column of the cluster
        row_b = b.arith("addi", row_b, b.arith("muli", rank_m, i32(share), "i32"), "i32")
        offset_b = b.arith("muli", b.op(f"arith.extui {rank_m} : i32 to i64", "r"), i64(bytes_b // s.cluster_m),
                           "i64")
        offset_b = b.arith("addi", offset_b, i64(bytes_a), "i64")
        column = b.const((1 << s.cluster_m) - 1, "i16")  # ranks rank_n × cluster_m on
        if s.cluster_n > 1:
            at = b.op(f"arith.trunci {b.arith('muli', rank_n, i32(s.cluster_m), 'i32')} : i32 to i16", "sh")
            column = b.arith("shli", column, at, "i16")
        mask = f" multicast_mask = {column}"
    else:
        offset_b, mask = i64(bytes_a), ""
    offset_a, mask_a = i64(0), ""
    if s.cluster_n > 1:  # this workgroup's share of A: rows rank_n × block_m / cluster_n on, to every workgroup of
        share_a = s.block_m // s.cluster_n  # its block row of the cluster (ranks rank_m + cluster_m × j)
        row_a = b.arith("addi", row_a, b.arith("muli", rank_n, i32(share_a), "i32"), "i32")
        offset_a = b.arith("muli", b.op(f"arith.extui {rank_n} : i32 to i64", "r"), i64(bytes_a // s.cluster_n),
                           "i64")
        row_mask = b.const(sum(1 << (s.cluster_m * j) for j in range(s.cluster_n)), "i16")
        if s.cluster_m > 1:
            row_mask = b.arith("shli", row_mask, b.op(f"arith.trunci {rank_m} : i32 to i16", "sh"), "i16")
        mask_a = f" multicast_mask = {row_mask}"
    # (map, shared offset, box coordinates innermost first, multicast): A's box (or share), then B's share (nt:
    # one box of its rows; nn: boxes of NN_BOX columns, each block_k rows of 128 bytes, one after the other)
    loads = [(map_a, offset_a, (kcoord, row_a), mask_a)]
    if problem.layout == "nn":
        for j in range(b_boxes(problem, s)):
            column = b.arith("addi", row_b, i32(j * NN_BOX), "i32")
            offset = b.arith("addi", offset_b, i64(j * NN_BOX * s.block_k * 2), "i64")
            loads.append((map_b, offset, (column, kcoord_b), mask))
    else:
        loads.append((map_b, offset_b, (kcoord, row_b), mask))
    for tile_map, offset, (inner, outer), cast in loads:
        start = b.arith("addi", b.arith("muli", stage, i64(bytes_a + bytes_b), "i64"), offset, "i64")
        dst = b.op(f"llvm.addrspacecast {shared(start)} : !llvm.ptr<3> to !llvm.ptr<7>", "dst")
        b.op(f"nvvm.cp.async.bulk.tensor.shared.cluster.global {dst}, {tile_map}, {full}, box[{inner}, {outer}]"
             f"{cast} : !llvm.ptr<7>, !llvm.ptr")
    b.op("}")  # K steps
    b.op("}")  # tiles
    b.op("}")  # first
    b.op("} else {")
    # -- consumers: cooperative ones split every tile by rows; ping-pong ones take every other tile, in turn.
    _asm(b, f"setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGISTERS};", "", [])
    c_map, lane_ = None, ""
    if maps_at is not None:  # lane 0 of each warp acquires C's map for its TMA stores
        c_map = b.arith("addi", maps_at, i64(2 * MAP_BYTES), "i64")
        lane_ = b.arith("remui", tid32, i32(32), "i32")
        _asm(b, f"{{ .reg .pred p; setp.eq.u32 p, $0, 0; @p fence.proxy.tensormap::generic.acquire.gpu [$1], "
             f"{MAP_BYTES}; }}", "r,l", [(lane_, "i32"), (c_map, "i64")])
    g = b.arith("subi", wg, i32(1), "i32")
    g_i = b.op(f"arith.index_cast {g} : i32 to index", "g")
    acc_ty = _acc_type(s.block_n)
    # deferred stores (`defer_stores`, checked against the problem in check_problem): every word of a tile's C
    n_words = s.m_blocks * 2 * (s.block_n // 8)
    defer = s.defer_stores and c_map is not None
    carried_types = ", ".join(["i32"] * n_words + ["i1"])
    undef32 = b.op("llvm.mlir.undef : i32", "u") if defer else ""  # a word carried before any was packed
    area = None
    if defer or staged:  # this warp's staging area (consumer warps from 0), as a 32-bit shared address
        warp = b.arith("subi", b.arith("divui", tid32, i32(32), "i32"), i32(WARPGROUP // 32), "i32")
        start = b.op(f"llvm.ptrtoint {shared(i64(s.staging_offset()))} : !llvm.ptr<3> to i32", "st")
        area = b.arith("addi", start, b.arith("muli", warp, i32(s.staging_bytes()), "i32"), "i32")

    def deferred(tile: str, words: list[str]) -> None:
        """The stores of loop tile `tile` (index) from its packed `words` (`_fragment_words`' order, flattened)."""
        dcol, drow, dpiece = tile_of(tile)
        slab, lane = _store_slab(b, s, tid32, rows_base, drow, i32)
        nested = [[words[(2 * r + half) * (s.block_n // 8):(2 * r + half + 1) * (s.block_n // 8)]
                   for half in range(2)] for r in range(s.m_blocks)]
        slice_rows = b.arith("muli", dpiece, i32(problem.m), "i32") if split > 1 else None
        assert c_map is not None and area is not None, "deferred stores go out by TMA through the staging areas"
        _tma_stores(b, s, c_map, area, slab, lane, dcol, i32, nested, slice_rows, dpiece, problem)
    leader = b.op(f"arith.cmpi eq, {b.arith('remui', tid32, i32(WARPGROUP), 'i32')}, {i32(0)} : i32", "leader")

    def release(barrier: str) -> None:
        """The warp group's release of a stage: one arrival on the `empty` barrier of each workgroup of the
        cluster on its block row or column (`partners`: their loads write into this one's stage): the ranks of its
        column (rank_n × cluster_m on), and with clusters along N its row's other rank (rank XOR cluster_m)."""
        b.op(f"scf.if {leader} {{")
        if s.cluster_tiles == 1:
            b.op(f"nvvm.mbarrier.arrive {barrier} : !llvm.ptr<3> -> i64", "tok")
        else:
            local = b.op(f"llvm.ptrtoint {barrier} : !llvm.ptr<3> to i32", "bar")
            targets = [i32(i) for i in range(s.cluster_m)]
            if s.cluster_n > 1:
                column = b.arith("muli", rank_n, i32(s.cluster_m), "i32")
                targets = [b.arith("addi", column, i32(i), "i32") if i else column for i in range(s.cluster_m)]
                targets.append(b.arith("xori", rank, i32(s.cluster_m), "i32"))
            for target in targets:
                _asm(b, "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, $0, $1; "
                     "mbarrier.arrive.shared::cluster.b64 _, [remote]; }", "r,r", [(local, "i32"), (target, "i32")])
        b.op("}")
    if s.kind == "pingpong":
        b.op(f"scf.for %ci = {g_i} to {mine_i} step {b.const(2, 'index')} {{")
        rows_base = i32(0)  # the consumer owns the whole tile
        turn = b.op(f"arith.index_cast {b.arith('divui', '%ci', b.const(2, 'index'), 'index')} : index to i64", "turn")
        # Tile i > 0 starts once the other consumer has issued and finished the K loop of tile i - 1 (ping-pong
        # order); this also bounds how far a consumer's `full` waits run ahead of the producer.
        not_first = b.op(f"arith.cmpi ugt, %ci, {c0} : index", "nf")
        b.op(f"scf.if {not_first} {{")
        g64 = b.op(f"arith.extui {g} : i32 to i64", "g")
        # consumer 1's turn j waits for phase j of its order barrier; consumer 0's turn j (j >= 1) for phase j - 1
        wait(bar(2, g64), parity_of(b.arith("subi", turn, b.arith("subi", i64(1), g64, "i64"), "i64")))
        b.op("}")
    else:
        rows_base = b.arith("muli", g, i32(s.rows_per_consumer), "i32")
        if defer:  # the previous tile's packed words and whether they wait to be stored, carried over
            none = b.const(0, "i1")
            carried = ", ".join([f"%dw{k} = {undef32}" for k in range(n_words)] + [f"%dpend = {none}"])
            tiles_out = b.op(f"scf.for %ci = {c0} to {mine_i} step {c1} iter_args({carried}) -> ({carried_types}) {{",
                             "tl")
            b.lines[-1] = b.lines[-1].replace(f"{tiles_out} =", f"{tiles_out}:{n_words + 1} =", 1)
        else:
            b.op(f"scf.for %ci = {c0} to {mine_i} step {c1} {{")
    citem = work_of("%ci")
    col, row, piece = tile_of("%ci", citem)
    nn = problem.layout == "nn"
    # B's next 16 K: 32 bytes on in each K-major row, or 16 rows of 128 bytes on (MN-major)
    b_step, b_layout = (16 * SWIZZLE_BYTES, "row") if nn else (32, "col")

    def descriptor(address: str, leading: int) -> str:
        """wgmma shared-memory descriptor: start >> 4, leading offset (>> 4), stride 1024 B (8 rows of 128 B),
        128-byte swizzle. K-major: leading offset unused (16 B). MN-major (B of nn): 8 K rows of 64 columns make
        an atom, K's next 8 rows 1024 B on (stride), the next 64 columns a box on (leading)."""
        low = b.arith("shrui", b.arith("andi", address, i64(0x3FFFF), "i64"), i64(4), "i64")
        return b.op(f"arith.ori {low}, {i64(((leading >> 4) << 16) | (64 << 32) | (1 << 62))} : i64", "desc")

    def mma_step(kt: str, accs: list[str], first: bool) -> tuple[list[str], str]:
        """K step `kt` of the tile: wait for its stage, issue its wgmma group, keep one group in flight. The first
        step overwrites the accumulators (scale-d 0), so they need no zeroing between the tiles' register
        lifetimes (writing them between a wgmma fence and a wgmma makes ptxas serialise). -> (accumulators, q)"""
        stage, use, q = k_step(citem["base"], kt)
        wait(bar(0, stage), parity_of(use))
        start = b.arith("addi", base, b.arith("muli", stage, i64(bytes_a + bytes_b), "i64"), "i64")
        rows_bytes = b.arith("muli", b.op(f"arith.extui {rows_base} : i32 to i64", "r"), i64(s.block_k * 2), "i64")
        desc_a = descriptor(b.arith("addi", start, rows_bytes, "i64"), 16)
        desc_b = descriptor(b.arith("addi", start, i64(bytes_a), "i64"), NN_BOX * s.block_k * 2 if nn else 16)
        b.op("nvvm.wgmma.fence.aligned")
        cur = list(accs)
        for kk in range(s.block_k // 16):
            db = b.op(f"arith.addi {desc_b}, {i64(kk * b_step >> 4)} : i64", "db")
            scale = "zero" if first and kk == 0 else "one"
            for r in range(s.m_blocks):  # m64 block r: 64 rows of 128 bytes further, 8 KiB
                da = b.op(f"arith.addi {desc_a}, {i64((kk * 32 + r * 64 * 128) >> 4)} : i64", "da")
                cur[r] = b.op(f"nvvm.wgmma.mma_async {da}, {db}, {cur[r]}, #nvvm.shape<m = 64, n = {s.block_n}, "
                              f"k = 16>, D [<f32>, #nvvm.wgmma_scale_out<{scale}>], A [<{dt}>, "
                              f"#nvvm.wgmma_scale_in<one>, <row>], B [<{dt}>, #nvvm.wgmma_scale_in<one>, "
                              f"<{b_layout}>] : {acc_ty} -> {acc_ty}", "acc")
        b.op("nvvm.wgmma.commit.group.sync.aligned")
        b.op("nvvm.wgmma.wait.group.sync.aligned 1")
        return cur, q

    undefined = b.op(f"llvm.mlir.undef : {acc_ty}", "undef")
    firsts, _ = mma_step(c0, [undefined] * s.m_blocks, first=True)
    if defer:  # the previous tile's C, stored while this tile's first wgmma group runs
        b.op("scf.if %dpend {")
        deferred(b.arith("subi", "%ci", c1, "index"), [f"%dw{k}" for k in range(n_words)])
        b.op("}")
    accs = [f"%acc{r}" for r in range(s.m_blocks)]
    inits = ", ".join(f"{a} = {v}" for a, v in zip(accs, firsts))
    types = ", ".join([acc_ty] * s.m_blocks)
    result = b.op(f"scf.for %ck = {c1} to {citem['bound']} step {c1} iter_args({inits}) -> ({types}) {{", "res")
    results = [f"{result}#{r}" for r in range(s.m_blocks)] if s.m_blocks > 1 else [result]
    if s.m_blocks > 1:
        b.lines[-1] = b.lines[-1].replace(f"{result} =", f"{result}:{s.m_blocks} =", 1)
    cur, q = mma_step("%ck", accs, first=False)
    # The group of the previous K step is done: release its stage (one thread of the warp group).
    previous = b.arith("remui", b.arith("addi", q, i64(s.stages - 1), "i64"), stages, "i64")
    release(bar(1, previous))
    b.op(f"scf.yield {', '.join(cur)} : {types}")
    b.op("}")
    b.op("nvvm.wgmma.wait.group.sync.aligned 0")
    last = b.const(k_tiles - 1, "index") if streamk is None else b.arith("subi", citem["bound"], c1, "index")
    last_stage, _, _ = k_step(citem["base"], last)
    release(bar(1, last_stage))
    if s.kind == "pingpong":  # the other consumer's turn
        other = b.op(f"arith.extui {b.arith('subi', i32(1), g, 'i32')} : i32 to i64", "o")
        b.op(f"nvvm.mbarrier.arrive {bar(2, other)} : !llvm.ptr<3> -> i64", "tok")
    slice_rows = b.arith("muli", piece, i32(problem.m), "i32") if split > 1 else None
    published = None
    if streamk:  # a cut unit: the owner adds the other part's partial product; the other part's cluster leaves it
        assert flags_base is not None, "stream-K's flags are bound whenever the split exists"
        published = b.op(f"arith.cmpi eq, {citem['role']}, {i32(1)} : i32", "pub")
        past_maps = maps_slot(i32(grid_size(problem, s)))  # the scratch's words after every workgroup's maps
        at, flag = _stream_slot(b, s, past_maps, flags_base, unit, rank, g, tid32, published, i32, i64)
        results = _add_owned(b, s, results, acc_ty, citem["role"], at, flag, g, leader, i32)
        b.op(f"scf.if {published} {{" if not defer else f"scf.if {published} -> ({carried_types}) {{")
        if defer:
            b.lines[-1] = b.lines[-1].replace("scf.if", "%pb:" + str(n_words + 1) + " = scf.if", 1)
        _publish(b, s, results, acc_ty, at, flag, g, leader, i32)
        if defer:
            b.op(f"scf.yield {', '.join([undef32] * n_words + [b.const(0, 'i1')])} : {carried_types}")
        b.op("} else {")
    if s.sums_in_cluster:
        _partial_to_shared(b, s, shared(i64(0)), tid32, rows_base, results, acc_ty, i32)
    elif defer:  # a whole tile's C packed and carried to the next tile; a tile at the problem's edge stored now
        kept = b.op(f"scf.if {_tile_inside(b, problem, s, row, col, i32)} -> ({carried_types}) {{", "kp")
        b.lines[-1] = b.lines[-1].replace(f"{kept} =", f"{kept}:{n_words + 1} =", 1)
        words = _fragment_words(b, s, results, acc_ty, lambda v: _pack_pair(b, problem.out_dtype, tail, v, i32))
        flat = [w for r in words for half in r for w in half]
        b.op(f"scf.yield {', '.join(flat + [b.const(1, 'i1')])} : {carried_types}")
        b.op("} else {")
        _epilogue(b, problem, s, c, tc, results, acc_ty, tid32, rows_base, col, row, i32, i64, tail, None,
                  slice_rows, None, piece)
        b.op(f"scf.yield {', '.join([undef32] * n_words + [b.const(0, 'i1')])} : {carried_types}")
        b.op("}")
        b.op(f"scf.yield {', '.join(f'{kept}#{k}' for k in range(n_words + 1))} : {carried_types}")
        if published is not None:  # the stream-K branch's carried words, to the loop
            b.op("}")
            b.op(f"scf.yield {', '.join(f'%pb#{k}' for k in range(n_words + 1))} : {carried_types}")
    else:
        _epilogue(b, problem, s, c, tc, results, acc_ty, tid32, rows_base, col, row, i32, i64, tail, area,
                  slice_rows, c_map, piece)
    if published is not None and not defer:
        b.op("}")
    b.op("}")  # tiles
    if defer:  # the workgroup's last tile, stored after the loop
        b.op(f"scf.if {tiles_out}#{n_words} {{")
        deferred(b.arith("subi", mine_i, c1, "index"), [f"{tiles_out}#{k}" for k in range(n_words)])
        b.op("}")
    if c_map is not None:  # the warp's last bulk stores done before the workgroup (and its shared memory) ends
        _asm(b, "{ .reg .pred p; setp.eq.u32 p, $0, 0; @p cp.async.bulk.wait_group 0; }", "r", [(lane_, "i32")])
    b.op("}")  # consumers
    if s.sums_in_cluster:
        _sync(b, s)  # every slice's partial product in its workgroup's shared memory, visible to the cluster
        col, row, _ = tile_of(c0)
        _cluster_sum(b, problem, s, c, tc, shared(i64(0)), tid32, rank, col, row, i32, i64)
    if s.cluster_size > 1:  # no workgroup leaves while another may still arrive on its barriers or read its memory
        _sync(b, s)
    body = b.text()
    cluster = f"nvvm.cluster_dim = array<i32: {s.cluster_size}, 1, 1>, " if s.cluster_size > 1 else ""
    return f"""      func.func @{entry}() attributes {{{cluster}translation_info = #iree_codegen.translation_info<\
pipeline = #iree_codegen.no_pipeline workgroup_size = [{s.threads}, 1, 1] subgroup_size = 32>}} {{
        {body}
        return
      }}"""


def _sync(b: _Body, s: HopperSchedule) -> None:
    """Every thread of the workgroup, or of the cluster when it has several workgroups."""
    if s.cluster_size == 1:
        b.op("gpu.barrier")
    else:
        b.op("nvvm.cluster.arrive")
        b.op("nvvm.cluster.wait")


def _stream_slot(b: _Body, s: HopperSchedule, words: str, flags_base: str, unit: str, rank: str, g: str, tid32: str,
                 published: str, i32, i64) -> tuple[str, str]:
    """(this thread's first word of the partial product, the flag), i64 addresses, of the unit cut between
    clusters that this workgroup's consumer warp group `g` leaves (published: the previous cluster owns it) or
    finishes (its own cluster's): one slot per owning cluster, workgroup of it and consumer; in the slot, word
    (block r × n/2 + element e) × 128 + thread of the warp group, so that a warp's stores and loads are whole
    lines. The words lie in the maps scratch from `words` on, past every workgroup's maps."""
    slot = b.arith("subi", unit, b.op(f"arith.extui {published} : i1 to i32", "p"), "i32")
    index = b.arith("addi", b.arith("muli", b.arith("addi", b.arith("muli", slot, i32(s.cluster_size), "i32"), rank,
                                                    "i32"), i32(s.consumers), "i32"), g, "i32")
    index64 = b.op(f"arith.extui {index} : i32 to i64", "x")
    lane = b.op(f"arith.extui {b.arith('remui', tid32, i32(WARPGROUP), 'i32')} : i32 to i64", "l")
    per = s.m_blocks * (s.block_n // 2) * WARPGROUP
    at = b.arith("addi", words, b.arith("muli", b.arith("addi", b.arith("muli", index64, i64(per), "i64"), lane,
                                                        "i64"), i64(4), "i64"), "i64")
    return at, b.arith("addi", flags_base, b.arith("muli", index64, i64(4), "i64"), "i64")


def _publish(b: _Body, s: HopperSchedule, results: list[str], acc_ty: str, at: str, flag: str, g: str, leader: str,
             i32) -> None:
    """Stream-K: the warp group's f32 accumulators to its slot (`_stream_slot`), then, once all its threads have
    stored (a named barrier of the warp group, 2 + g), its flag set by one thread with release semantics at GPU
    scope (a fence and a relaxed add, as CUTLASS's barrier does)."""
    for r in range(s.m_blocks):
        for e in range(s.block_n // 2):
            value = b.op(f"llvm.extractvalue {results[r]}[{e}] : {acc_ty}", "v")
            offset = (r * (s.block_n // 2) + e) * WARPGROUP * 4
            _asm(b, f"st.global.cg.f32 [$0+{offset}], $1;", "l,f", [(at, "i64"), (value, "f32")])
    _asm(b, f"bar.sync $0, {WARPGROUP};", "r", [(b.arith("addi", g, i32(2), "i32"), "i32")])
    b.op(f"scf.if {leader} {{")
    _asm(b, "fence.acq_rel.gpu; red.relaxed.gpu.global.add.s32 [$0], 1;", "l", [(flag, "i64")])
    b.op("}")


def _add_owned(b: _Body, s: HopperSchedule, results: list[str], acc_ty: str, role: str, at: str, flag: str, g: str,
               leader: str, i32) -> list[str]:
    """Stream-K: for the first part of a cut unit (role 2), one thread waits until the other part's flag is set
    (an acquiring load at GPU scope, in a loop) and clears it, the warp group meets at its named barrier, and every
    thread adds the other part's partial accumulators from the slot to its own; other units' accumulators pass
    unchanged."""
    types = ", ".join([acc_ty] * s.m_blocks)
    owned = b.op(f"arith.cmpi eq, {role}, {i32(2)} : i32", "own")
    out = b.op(f"scf.if {owned} -> ({types}) {{", "ow")
    if s.m_blocks > 1:
        b.lines[-1] = b.lines[-1].replace(f"{out} =", f"{out}:{s.m_blocks} =", 1)
    b.op(f"scf.if {leader} {{")
    b.op("scf.while : () -> () {")
    seen = b.op(f'llvm.inline_asm has_side_effects asm_dialect = att "ld.global.acquire.gpu.b32 $0, [$1];", "=r,l" '
                f"{flag} : (i64) -> i32", "fl")
    b.op(f"scf.condition({b.op(f'arith.cmpi ne, {seen}, {i32(1)} : i32', 'w')})")
    b.op("} do {")
    b.op("scf.yield")
    b.op("}")
    # cleared for the next dispatch (zeroed before a program's dispatch, but not between the runner's repeats of it)
    _asm(b, "st.relaxed.gpu.global.b32 [$0], 0;", "l", [(flag, "i64")])
    b.op("}")
    _asm(b, f"bar.sync $0, {WARPGROUP};", "r", [(b.arith("addi", g, i32(2), "i32"), "i32")])
    summed = []
    for r in range(s.m_blocks):
        acc = results[r]
        for e in range(s.block_n // 2):
            offset = (r * (s.block_n // 2) + e) * WARPGROUP * 4
            other = b.op(f'llvm.inline_asm has_side_effects asm_dialect = att "ld.global.cg.f32 $0, [$1+{offset}];", '
                         f'"=f,l" {at} : (i64) -> f32', "o")
            value = b.op(f"llvm.extractvalue {acc}[{e}] : {acc_ty}", "v")
            acc = b.op(f"llvm.insertvalue {b.op(f'arith.addf {value}, {other} : f32', 's')}, {acc}[{e}] : {acc_ty}",
                       "a")
        summed.append(acc)
    b.op(f"scf.yield {', '.join(summed)} : {types}")
    b.op("} else {")
    b.op(f"scf.yield {', '.join(results)} : {types}")
    b.op("}")
    return [f"{out}#{r}" for r in range(s.m_blocks)] if s.m_blocks > 1 else [out]


def _partial_to_shared(b: _Body, s: HopperSchedule, area: str, tid32: str, rows_base: str, results: list[str],
                       acc_ty: str, i32) -> None:
    """A consumer warp group's fragments of the slice's partial product (the m64nNk16 accumulator layout) into the
    workgroup's shared memory from `area` (the stages' start, a !llvm.ptr<3>), f32 rows of `sum_row` elements: lane
    l of warp w writes row 16 w + l / 4 (+ 8, + 64 per m64 block) of its rows, columns 2 (l % 4) + 8 j, in 8-byte
    pairs. The stages are free once every consumer of the workgroup has drained its wgmma groups (a named barrier
    over the consumers when there are two; the producer's loads have all landed)."""
    if s.consumers > 1:
        _asm(b, f"bar.sync 1, {s.consumers * WARPGROUP};", "", [])
    start = b.op(f"llvm.ptrtoint {area} : !llvm.ptr<3> to i32", "st")
    lt = b.arith("remui", tid32, i32(WARPGROUP), "i32")
    warp, lane = b.arith("divui", lt, i32(32), "i32"), b.arith("remui", lt, i32(32), "i32")
    row0 = b.arith("addi", b.arith("addi", b.arith("muli", warp, i32(16), "i32"), rows_base, "i32"),
                   b.arith("divui", lane, i32(4), "i32"), "i32")
    col0 = b.arith("muli", b.arith("remui", lane, i32(4), "i32"), i32(2), "i32")
    for r, half in ((r, half) for r in range(s.m_blocks) for half in range(2)):
        row_ = b.arith("addi", row0, i32(64 * r + 8 * half), "i32")
        at = b.arith("addi", start, b.arith("muli", b.arith("addi", b.arith("muli", row_, i32(s.sum_row()), "i32"),
                                                            col0, "i32"), i32(4), "i32"), "i32")
        for j in range(s.block_n // 8):
            values = [b.op(f"llvm.extractvalue {results[r]}[{4 * j + 2 * half + e}] : {acc_ty}", "v") for e in range(2)]
            _asm(b, f"st.shared.v2.f32 [$0+{32 * j}], {{$1, $2}};", "r,f,f",
                 [(at, "i32"), (values[0], "f32"), (values[1], "f32")])


def _cluster_sum(b: _Body, problem: Gemm, s: HopperSchedule, c: str, tc: str, area: str, tid32: str, rank: str,
                 col: str, row: str, i32, i64) -> None:
    """Every thread of workgroup `rank` of the cluster sums its share of the tile's columns (block_n / split_k, from
    rank × that) over the slices' partial products in the workgroups' shared memory (`_partial_to_shared`), slice
    0 first (the workgroup of rank r holds slice r), 4 columns at once (mapa, ld.shared::cluster.v4), for the
    tile's rows inside M; C gets the sum (rounded to nearest for a 16-bit C): 4 columns in one store when N is a
    multiple of 4 and the 4 lie inside N, else one guarded store per column."""
    out, size = problem.out_dtype, 4 if problem.out_dtype == "f32" else 2
    share = s.block_n // s.split_k  # columns a workgroup sums
    groups = share // 4
    rows = b.op(f"arith.minui {b.arith('subi', i32(problem.m), b.arith('muli', row, i32(s.block_m), 'i32'), 'i32')}"
                f", {i32(s.block_m)} : i32", "rows")  # the tile's rows inside M
    work = b.arith("muli", rows, i32(groups), "i32")  # 4-column groups to sum
    rounds = b.arith("divui", b.arith("addi", work, i32(s.threads - 1), "i32"), i32(s.threads), "i32")
    start = b.op(f"llvm.ptrtoint {area} : !llvm.ptr<3> to i32", "st")
    pc = _pointer(b, c, tc)
    first_col = b.arith("addi", b.arith("muli", col, i32(s.block_n), "i32"), b.arith("muli", rank, i32(share), "i32"),
                        "i32")
    c0, c1 = b.const(0, "index"), b.const(1, "index")
    b.op(f"scf.for %sr = {c0} to {b.op(f'arith.index_cast {rounds} : i32 to index', 'n')} step {c1} {{")
    item = b.arith("addi", b.arith("muli", b.op("arith.index_cast %sr : index to i32", "i"), i32(s.threads), "i32"),
                   tid32, "i32")
    b.op(f"scf.if {b.op(f'arith.cmpi ult, {item}, {work} : i32', 'in')} {{")
    r, g = b.arith("divui", item, i32(groups), "i32"), b.arith("remui", item, i32(groups), "i32")
    local = b.arith("addi", b.arith("muli", rank, i32(share), "i32"), b.arith("muli", g, i32(4), "i32"), "i32")
    at = b.arith("addi", start, b.arith("muli", b.arith("addi", b.arith("muli", r, i32(s.sum_row()), "i32"), local,
                                                        "i32"), i32(4), "i32"), "i32")
    v4 = "!llvm.struct<(f32, f32, f32, f32)>"
    total: list[str] = []
    for piece in range(s.split_k):
        loaded = b.op(f'llvm.inline_asm has_side_effects asm_dialect = att "{{ .reg .b32 ra; mapa.shared::cluster.u32 '
                      f'ra, $4, $5; ld.shared::cluster.v4.f32 {{$0, $1, $2, $3}}, [ra]; }}", "=f,=f,=f,=f,r,r" {at}, '
                      f"{i32(piece)} : (i32, i32) -> {v4}", "ld")
        values = [b.op(f"llvm.extractvalue {loaded}[{e}] : {v4}", "v") for e in range(4)]
        total = values if not total else [b.op(f"arith.addf {x}, {y} : f32", "sum") for x, y in zip(total, values)]
    grow = b.arith("addi", b.arith("muli", row, i32(s.block_m), "i32"), r, "i32")
    gcol = b.arith("addi", first_col, b.arith("muli", g, i32(4), "i32"), "i32")
    if problem.n % 4 == 0:  # 4 columns in one store (16 or 8 bytes, aligned)
        whole = b.op(f"arith.cmpi ule, {b.arith('addi', gcol, i32(4), 'i32')}, {i32(problem.n)} : i32", "in")
        b.op(f"scf.if {whole} {{")
        offset = b.arith("addi", b.arith("muli", b.op(f"arith.extui {grow} : i32 to i64", "r"), i64(problem.n), "i64"),
                         b.op(f"arith.extui {gcol} : i32 to i64", "q"), "i64")
        address = b.arith("addi", pc, b.arith("muli", offset, i64(size), "i64"), "i64")
        if out == "f32":
            _asm(b, "st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f",
                 [(address, "i64"), *[(v, "f32") for v in total]])
        else:
            words = [_cvt_pair(b, out, total[e], total[e + 1]) for e in (0, 2)]
            _asm(b, "st.global.v2.b32 [$0], {$1, $2};", "l,r,r", [(address, "i64"), *[(w, "i32") for w in words]])
        b.op("} else {")
    row_i = b.op(f"arith.index_cast {grow} : i32 to index", "ri")
    for e in range(4):
        col_ = b.arith("addi", gcol, i32(e), "i32")
        b.op(f"scf.if {b.op(f'arith.cmpi ult, {col_}, {i32(problem.n)} : i32', 'in')} {{")
        value = total[e] if out == "f32" else _cvt_one(b, out, total[e])
        b.op(f"memref.store {value}, {c}[{row_i}, {b.op(f'arith.index_cast {col_} : i32 to index', 'ci')}] : {tc}")
        b.op("}")
    if problem.n % 4 == 0:
        b.op("}")
    b.op("}")  # inside the work
    b.op("}")  # rounds


def _cvt_pair(b: _Body, out: str, low: str, high: str) -> str:
    """Two f32 rounded to nearest even in the 16-bit type `out`, packed in an i32, `low` in the lower half (the lower
    address): cvt.rn.{bf16,f16}x2.f32 d, a, b puts a in d's upper half."""
    return b.op(f'llvm.inline_asm asm_dialect = att "cvt.rn.{out}x2.f32 $0, $1, $2;", "=r,f,f" {high}, {low} : '
                f"(f32, f32) -> i32", "pk")


def _cvt_one(b: _Body, out: str, value: str) -> str:
    """One f32 rounded to nearest even in the 16-bit type `out` (cvt.rn)."""
    bits = b.op(f'llvm.inline_asm asm_dialect = att "cvt.rn.{out}.f32 $0, $1;", "=h,f" {value} : (f32) -> i16', "h")
    return b.op(f"llvm.bitcast {bits} : i16 to {out}", "h")


def _tile_inside(b: _Body, problem: Gemm, s: HopperSchedule, row: str, col: str, i32) -> str:
    """Whether block tile (`row`, `col`) (i32) lies inside the problem: its last row and column within M and N (i1)."""
    end_m = b.arith("muli", b.arith("addi", row, i32(1), "i32"), i32(s.block_m), "i32")
    end_n = b.arith("muli", b.arith("addi", col, i32(1), "i32"), i32(s.block_n), "i32")
    return b.arith("andi", b.op(f"arith.cmpi ule, {end_m}, {i32(problem.m)} : i32", "in"),
                   b.op(f"arith.cmpi ule, {end_n}, {i32(problem.n)} : i32", "in"), "i1")


def _pack_pair(b: _Body, out: str, tail: Elementwise | None, values: list[str], i32) -> str:
    """Two neighbouring columns rounded to the 16-bit type `out` (through the tail), in one i32: the lower column in
    the lower half (the lower address)."""
    if tail is not None:  # each element rounded, through the tail, then the pair packed
        bits = [b.op(f"llvm.bitcast {tail.emit(b, _cvt_one(b, out, v), out)} : {out} to i16", "h") for v in values]
        halves = [b.op(f"arith.extui {h} : i16 to i32", "h") for h in bits]
        return b.arith("ori", b.arith("shli", halves[1], i32(16), "i32"), halves[0], "i32")
    return _cvt_pair(b, out, values[0], values[1])


def _fragment_words(b: _Body, s: HopperSchedule, results: list[str], acc_ty: str, pack) -> list:
    """The thread's accumulator fragments packed in pairs: words[r][half][j] holds elements 4 j + 2 half + (0, 1)
    of m64 block r's struct (the fragment row `half`, columns 8 j + 2 (lane % 4) + (0, 1))."""
    return [[[pack([b.op(f"llvm.extractvalue {results[r]}[{4 * j + 2 * half + e}] : {acc_ty}", "v")
                    for e in range(2)]) for j in range(s.block_n // 8)] for half in range(2)]
            for r in range(s.m_blocks)]


def _store_slab(b: _Body, s: HopperSchedule, tid32: str, rows_base: str, row: str, i32) -> tuple[str, str]:
    """(the warp's first row of C in block row `row`: its 16 rows of the tile, the lane), i32."""
    lt = b.arith("remui", tid32, i32(WARPGROUP), "i32")
    warp, lane = b.arith("divui", lt, i32(32), "i32"), b.arith("remui", lt, i32(32), "i32")
    slab = b.arith("addi", b.arith("muli", warp, i32(16), "i32"), rows_base, "i32")
    return b.arith("addi", slab, b.arith("muli", row, i32(s.block_m), "i32"), "i32"), lane


def _epilogue(b: _Body, problem: Gemm, s: HopperSchedule, c: str, tc: str, results: list[str], acc_ty: str,
              tid32: str, rows_base: str, col: str, row: str, i32, i64, tail: Elementwise | None = None,
              area: str | None = None, slice_rows: str | None = None, c_map: str | None = None,
              piece: str | None = None) -> None:
    """Each thread stores its fragments (the m64nNk16 accumulator layout) to C: two neighbouring columns in one
    8-byte store when N is even; unguarded, from one address per row, when the tile lies inside the problem, and
    guarded per row and column at its edges. With `tail`, each element rounded to the input type goes through its
    ops before the store. With `area` (the warp's staging area, `stages_stores`), a tile inside the problem goes
    out in 16-byte rows: per four 8-column blocks, the warp's packed pairs written as four 8x8 matrices
    (stmatrix: lane l gives the address of row l % 8 of matrix l / 8), then each lane's row read back and stored
    at row l % 8, columns 8 (4 g + l / 8) of the warp's 8-row slab. With `slice_rows` (split-K: slice × M, i32),
    the rows are stored that many rows on (the slice's partial product), guarded against M as ever."""
    slab, lane = _store_slab(b, s, tid32, rows_base, row, i32)  # the warp's first row
    row0 = b.arith("addi", slab, b.arith("divui", lane, i32(4), "i32"), "i32")  # the lane's fragment row
    col0 = b.arith("muli", b.arith("remui", lane, i32(4), "i32"), i32(2), "i32")
    col0 = b.arith("addi", col0, b.arith("muli", col, i32(s.block_n), "i32"), "i32")
    m_, n_ = i32(problem.m), i32(problem.n)
    pairs = problem.n % 2 == 0
    out = problem.out_dtype
    size = 4 if out == "f32" else 2  # bytes per element of C
    pc = _pointer(b, c, tc)
    if slice_rows is not None:
        shift = b.op(f"arith.extui {slice_rows} : i32 to i64", "sr")
        pc = b.arith("addi", pc, b.arith("muli", shift, i64(problem.n * size), "i64"), "i64")

    def pack(values: list[str]) -> str:
        return _pack_pair(b, out, tail, values, i32)

    def store_pair(address: str, offset: int | None, values: list[str]) -> None:
        """Two neighbouring columns in one store at `address` (+ `offset` bytes, an immediate): 8 bytes of f32, or
        the pair rounded and packed in 4 bytes."""
        at = "[$0]" if offset is None else f"[$0+{offset}]"
        if out == "f32":
            _asm(b, f"st.global.v2.f32 {at}, {{$1, $2}};", "l,f,f",
                 [(address, "i64"), (values[0], "f32"), (values[1], "f32")])
            return
        _asm(b, f"st.global.b32 {at}, $1;", "l,r", [(address, "i64"), (pack(values), "i32")])

    def rounded(value: str) -> str:
        return _cvt_one(b, out, value)
    if c_map is not None and area is not None and s.store_heads:  # every tile whole (`_check_heads`): TMA only
        _tma_stores(b, s, c_map, area, slab, lane, col, i32, _fragment_words(b, s, results, acc_ty, pack), None,
                    piece, problem)
        return
    if pairs:  # a tile inside the problem: no guard, one base address per row and immediate offsets
        b.op(f"scf.if {_tile_inside(b, problem, s, row, col, i32)} {{")
        if c_map is not None and area is not None:
            _tma_stores(b, s, c_map, area, slab, lane, col, i32, _fragment_words(b, s, results, acc_ty, pack),
                        slice_rows, piece, problem)
        elif area is not None:
            _staged_stores(b, problem, s, pc, area, slab, lane, col, i32, i64, results, acc_ty, pack)
        else:
            col_bytes = b.arith("muli", b.op(f"arith.extui {col0} : i32 to i64", "q"), i64(size), "i64")
            for r, half in ((r, half) for r in range(s.m_blocks) for half in range(2)):
                row_ = b.op(f"arith.addi {row0}, {i32(64 * r + 8 * half)} : i32", "r")
                row_bytes = b.arith("muli", b.op(f"arith.extui {row_} : i32 to i64", "r"), i64(problem.n * size),
                                    "i64")
                at = b.arith("addi", pc, b.arith("addi", row_bytes, col_bytes, "i64"), "i64")
                for j in range(s.block_n // 8):
                    values = [b.op(f"llvm.extractvalue {results[r]}[{4 * j + 2 * half + e}] : {acc_ty}", "v")
                              for e in range(2)]
                    store_pair(at, 8 * size * j, values)
        b.op("} else {")
    for r, half in ((r, half) for r in range(s.m_blocks) for half in range(2)):
        result = results[r]
        row_ = b.op(f"arith.addi {row0}, {i32(64 * r + 8 * half)} : i32", "r")
        in_m = b.op(f"arith.cmpi ult, {row_}, {m_} : i32", "in")
        # the row of the memref C (split-K: the slice's rows on), for the single stores of an odd N
        stored = row_ if slice_rows is None else b.arith("addi", row_, slice_rows, "i32")
        row_i = b.op(f"arith.index_cast {stored} : i32 to index", "ri")
        row_bytes = b.arith("muli", b.op(f"arith.extui {row_} : i32 to i64", "r"), i64(problem.n * size), "i64")
        b.op(f"scf.if {in_m} {{")
        for j in range(s.block_n // 8):
            values = [b.op(f"llvm.extractvalue {result}[{4 * j + 2 * half + e}] : {acc_ty}", "v") for e in range(2)]
            for e in range(1 if pairs else 2):
                col_ = b.op(f"arith.addi {col0}, {i32(8 * j + e)} : i32", "q")
                b.op(f"scf.if {b.op(f'arith.cmpi ult, {col_}, {n_} : i32', 'in')} {{")
                if pairs:
                    at = b.arith("addi", row_bytes, b.arith(
                        "muli", b.op(f"arith.extui {col_} : i32 to i64", "q"), i64(size), "i64"), "i64")
                    store_pair(b.arith("addi", pc, at, "i64"), None, values)
                else:
                    col_i = b.op(f"arith.index_cast {col_} : i32 to index", "ci")
                    value = values[e] if out == "f32" else rounded(values[e])
                    if tail is not None:
                        value = tail.emit(b, value, out)
                    b.op(f"memref.store {value}, {c}[{row_i}, {col_i}] : {tc}")
                b.op("}")
        b.op("}")
    if pairs:
        b.op("}")


def _staged_stores(b: _Body, problem: Gemm, s: HopperSchedule, pc: str, area: str, slab: str, lane: str, col: str,
                   i32, i64, results: list[str], acc_ty: str, pack) -> None:
    """A tile inside the problem, out through the warp's staging area in 16-byte rows (`_epilogue`). `slab` is the
    warp's first row of C (its 16 rows of the tile); the lane stores row slab + lane % 8."""
    mine = b.arith("addi", slab, b.arith("remui", lane, i32(8), "i32"), "i32")  # the row this lane stores
    block = b.arith("divui", lane, i32(8), "i32")  # the 8x8 matrix (8-column block of a group) it reads back
    column = b.arith("addi", b.arith("muli", col, i32(s.block_n), "i32"), b.arith("muli", block, i32(8), "i32"), "i32")
    at = b.arith("addi", b.arith("muli", b.op(f"arith.extui {mine} : i32 to i64", "r"), i64(problem.n * 2), "i64"),
                 b.arith("muli", b.op(f"arith.extui {column} : i32 to i64", "q"), i64(2), "i64"), "i64")
    at = b.arith("addi", pc, at, "i64")
    # lane l: the address of row l % 8 of matrix l / 8 (stmatrix), and the row it reads back
    slot = b.arith("addi", area, b.arith("addi", b.arith("muli", block, i32(128), "i32"),
                                         b.arith("muli", b.arith("remui", lane, i32(8), "i32"), i32(16), "i32"),
                                         "i32"), "i32")
    for r, half in ((r, half) for r in range(s.m_blocks) for half in range(2)):
        words = [pack([b.op(f"llvm.extractvalue {results[r]}[{4 * j + 2 * half + e}] : {acc_ty}", "v")
                       for e in range(2)]) for j in range(s.block_n // 8)]
        for g in range(s.block_n // 32):
            offset = (64 * r + 8 * half) * problem.n * 2 + 64 * g  # bytes: the slab's rows, the group's columns
            _asm(b, "bar.warp.sync -1; stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4}; "
                 "bar.warp.sync -1; { .reg .b32 t<4>; ld.shared.v4.b32 {t0, t1, t2, t3}, [$0]; "
                 f"st.global.v4.b32 [$5+{offset}], {{t0, t1, t2, t3}}; }}", "r,r,r,r,r,l",
                 [(slot, "i32"), *[(w, "i32") for w in words[4 * g:4 * g + 4]], (at, "i64")])


def _tma_stores(b: _Body, s: HopperSchedule, c_map: str, area: str, slab: str, lane: str, col: str, i32,
                words: list, slice_rows: str | None, piece: str | None, problem: Gemm) -> None:
    """A tile inside the problem, out by TMA (`HopperSchedule.tma_store`): per four 8-column blocks of each fragment
    row (the warp's 8 rows x 32 columns of C), the warp's packed pairs written as four 8x8 matrices into the next
    area of its ring (stmatrix: lane l gives the address of row l % 8 of matrix l / 8, in the 64-byte swizzle of
    C's map), and lane 0 stores the block with one bulk tensor copy at columns col·block_n + 32 g, rows slab + 64 r
    + 8 half (+ `slice_rows`: a batch's product); the blocks go in batches (`_tma_store_batches`). In heads
    (`store_heads`), C's map has three dimensions: a split product's block at (column % width, row, column /
    width), a join's at (column, product, row), the row then within the product."""
    rr = b.arith("remui", lane, i32(8), "i32")
    chunk = b.arith("xori", b.arith("divui", lane, i32(8), "i32"),
                    b.arith("andi", b.arith("shrui", rr, i32(1), "i32"), i32(3), "i32"), "i32")
    offset = b.arith("addi", b.arith("muli", rr, i32(2 * STORE_BOX[0]), "i32"), b.arith("muli", chunk, i32(16), "i32"),
                     "i32")
    x0 = b.arith("muli", col, i32(s.block_n), "i32")
    y0 = slab if slice_rows is None else b.arith("addi", slab, slice_rows, "i32")
    heads = head_store(problem, s)
    width = head_width(problem, s) if heads else 0
    boxes = []  # (the box's packed words, four per 8-row half, and its coordinates), in store order
    halves = STORE_BOX[1] // 8  # 8-row halves of a box: one, or both of the warp's fragment rows
    for r in range(s.m_blocks):
        for first_half in range(0, 2, halves):
            y = b.arith("addi", y0, i32(64 * r + 8 * first_half), "i32")
            for g in range(s.block_n // 32):
                x = b.arith("addi", x0, i32(32 * g), "i32")
                if heads == "split":
                    coords = [b.arith("remui", x, i32(width), "i32"), y, b.arith("divui", x, i32(width), "i32")]
                elif heads == "join":
                    assert piece is not None, "a join's copies need the product (the kernel's piece)"
                    coords = [x, piece, y]
                else:
                    coords = [x, y]
                four = [w for half in range(first_half, first_half + halves) for w in words[r][half][4 * g:4 * g + 4]]
                boxes.append((four, coords))
    _tma_store_batches(b, c_map, area, lane, offset, i32, boxes)


def _tma_store_batches(b: _Body, c_map: str, area: str, lane: str, offset: str, i32, boxes: list) -> None:
    """`_tma_stores`' boxes (their packed words, four per 8-row half, and coordinates) in batches of STORE_BATCH
    areas: a box takes one area of the ring per half (neighbouring areas), so the ring holds STORE_RING / halves
    boxes and a batch STORE_BATCH / halves (at least one); lane 0 waits until at most (boxes the ring holds) /
    (boxes a batch) - 1 earlier batches are still reading (the batch's areas were last read by the batch that many
    before), the warp writes the batch's halves (stmatrix), fences them to the async proxy once, and lane 0 issues
    their copies as one bulk group."""
    halves = STORE_BOX[1] // 8
    slots, batch = STORE_RING // halves, max(1, STORE_BATCH // halves)  # boxes the ring holds, boxes a batch
    assert STORE_BOX[1] in (8, 16) and slots % batch == 0 and slots // batch >= 2, "a batch written while one is read"
    for start in range(0, len(boxes), batch):
        chunk = boxes[start:start + batch]
        _asm(b, "{ .reg .pred p; setp.eq.u32 p, $0, 0; @p cp.async.bulk.wait_group.read "
             f"{slots // batch - 1}; }} bar.warp.sync -1;", "r", [(lane, "i32")])
        bufs = [b.arith("addi", area, i32(((start + j) % slots) * halves * STAGING_BYTES), "i32")
                for j in range(len(chunk))]
        for buf, (words, _) in zip(bufs, chunk):
            for half in range(halves):
                at = b.arith("addi", buf, offset, "i32")
                if half:
                    at = b.arith("addi", at, i32(half * STAGING_BYTES), "i32")
                _asm(b, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};", "r,r,r,r,r",
                     [(at, "i32"), *[(w, "i32") for w in words[4 * half:4 * half + 4]]])
        _asm(b, "fence.proxy.async.shared::cta; bar.warp.sync -1;", "", [])
        copies, args, at_ = [], [(lane, "i32"), (c_map, "i64")], 2
        for buf, (_, coords) in zip(bufs, chunk):
            places = ", ".join(f"${at_ + i}" for i in range(len(coords)))
            copies.append(f"@p cp.async.bulk.tensor.{len(coords)}d.global.shared::cta.bulk_group [$1, {{{places}}}], "
                          f"[${at_ + len(coords)}];")
            args += [*[(v, "i32") for v in coords], (buf, "i32")]
            at_ += len(coords) + 1
        _asm(b, "{ .reg .pred p; setp.eq.u32 p, $0, 0; " + " ".join(copies) + " @p cp.async.bulk.commit_group; }",
             "r,l" + ",r" * (len(args) - 2), args)


def program(problem: Gemm, schedule: HopperSchedule, function: str = "main", maps_result: bool = False) -> str:
    """An IREE program `function(A, B) -> C` (C M×N, f32 or the input type for the truncf epilogue; A M×K; B N×K,
    or K×N for layout nn) whose executable `@hopper` holds the one dispatch `@gemm`. Its second result, the
    workgroups' tensor maps (`map_words` i64 each), is scratch the dispatch writes; `maps_result` returns it too
    (what the GPU machine compares with the CUDA driver's encoding)."""
    schedule.check()
    check_problem(problem, schedule)
    return f"""#target = {TARGET}
module attributes {{hal.device.targets = [#hal.device.target<"cuda", [#target]> : !hal.device]}} {{
{executable(problem, schedule, "hopper")}
{_caller(problem, schedule, function, "hopper", maps_result)}
}}
"""


def tensor_types(problem: Gemm, schedule: HopperSchedule) -> tuple[str, ...]:
    """The tensor types of A, B, C and the maps scratch, as the program's dispatch takes and returns them."""
    return tuple(f"tensor<{'x'.join(map(str, shape))}x{dtype}>" for shape, dtype in _operands(problem, schedule))


def executable(problem: Gemm, schedule: HopperSchedule, name: str, entry: str = "gemm",
               tail: Elementwise | None = None) -> str:
    """`hal.executable.source @name` with the export `@entry` (bindings A, B, C, maps; the persistent or per-tile
    grid). IREE links the executables of one target into one module: in a program of several, each needs an entry
    name of its own."""
    if tail is not None:
        if schedule.split_k > 1:
            raise HopperError("a fused elementwise consumer needs C whole in the kernel's store, not split_k slices.")
        if problem.epilogue.kind != "truncf":
            raise HopperError("a fused elementwise consumer runs on C rounded to the input type (epilogue truncf).")
        tail.check(problem.dtype)
    ro = "#hal.pipeline.binding<storage_buffer, ReadOnly>"
    rw = "#hal.pipeline.binding<storage_buffer>"
    flags = f"{rw}, " if flag_words(problem, schedule) else ""  # stream-K's flags, zeroed before the dispatch
    layout = f"#hal.pipeline.layout<bindings = [{ro}, {ro}, {flags}{rw}, {rw}]>"
    return f"""  hal.executable.source private @{name} {{
    hal.executable.export public @{entry} ordinal(0) layout({layout}) count(%device: !hal.device) -> \
(index, index, index) {{
      %x = arith.constant {grid_size(problem, schedule)} : index
      %c1 = arith.constant 1 : index
      hal.return %x, %c1, %c1 : index, index, index
    }}
    builtin.module {{
{_gemm_func(problem, schedule, layout, entry, tail)}
    }}
  }}"""


def dispatch(problem: Gemm, schedule: HopperSchedule, name: str, a: str, b: str, result: str,
             entry: str = "gemm") -> str:
    """The flow.dispatch of executable `name`'s `entry` on SSA values `a` and `b`: defines `result` (C) and
    `result`_maps (with stream-K also `result`_zero, its flags zeroed, which the dispatch updates in place)."""
    ta, tb, tc, tm = tensor_types(problem, schedule)
    flags = flag_words(problem, schedule)
    if flags:
        tz = f"tensor<{flags}xi32>"
        return (f"{result}_zero = arith.constant dense<0> : {tz}\n    {result}, {result}_maps, {result}_flags = "
                f"flow.dispatch @{name}::@{entry}({a}, {b}, {result}_zero) : ({ta}, {tb}, {tz}) -> ({tc}, {tm}, "
                f"{result}_zero)")
    return f"{result}, {result}_maps = flow.dispatch @{name}::@{entry}({a}, {b}) : ({ta}, {tb}) -> ({tc}, {tm})"


def _caller(problem: Gemm, schedule: HopperSchedule, function: str, name: str, maps_result: bool) -> str:
    if schedule.sums_after:  # the slices' partial products, summed here
        return _split_caller(problem, schedule, function, name, maps_result)
    if schedule.store_heads:
        return _heads_caller(problem, schedule, function, name, maps_result)
    if problem.batched:
        return _batch_caller(problem, schedule, function, name, maps_result)
    ta, tb, tc, tm = tensor_types(problem, schedule)
    results, returned = (f"{tc}, {tm}", "%c, %c_maps") if maps_result else (tc, "%c")
    return f"""  func.func @{function}(%a: {ta}, %b: {tb}) -> ({results}) {{
    {dispatch(problem, schedule, name, "%a", "%b", "%c")}
    return {returned} : {results}
  }}"""


def batch_types(problem: Gemm) -> tuple[str, str, str]:
    """The rank-3 tensor types of a batch's A, B (as the kernel reads it: K×N or N×K per product) and C."""
    batch, dt = problem.batch, DTYPES[problem.dtype]
    b_shape = [batch, problem.k, problem.n] if problem.layout == "nn" else [batch, problem.n, problem.k]
    return (f"tensor<{batch}x{problem.m}x{problem.k}x{dt}>", f"tensor<{'x'.join(map(str, b_shape))}x{dt}>",
            f"tensor<{batch}x{problem.m}x{problem.n}x{problem.out_dtype}>")


def _batch_operands(problem: Gemm, schedule: HopperSchedule) -> tuple[str, str]:
    """A batch's function arguments %a3 and %b3 (rank 3) and the lines that stack their products' rows into the
    dispatch's %a and %b."""
    ta, tb, _, _ = tensor_types(problem, schedule)
    a3, b3, _ = batch_types(problem)
    return (f"%a3: {a3}, %b3: {b3}", f"""%a = tensor.collapse_shape %a3 [[0, 1], [2]] : {a3} into {ta}
    %b = tensor.collapse_shape %b3 [[0, 1], [2]] : {b3} into {tb}
    """)


def _batch_caller(problem: Gemm, schedule: HopperSchedule, function: str, name: str, maps_result: bool,
                  entry: str = "gemm", private: bool = False) -> str:
    """`function(A, B) -> C` of a batch: A, B and C of rank 3 (the batch first), the dispatch's operands and result
    the same bytes with the batch's rows stacked (collapsed around the call, expanded after)."""
    _, _, tc, tm = tensor_types(problem, schedule)
    _, _, c3 = batch_types(problem)
    args, collapse = _batch_operands(problem, schedule)
    results, returned = (f"{c3}, {tm}", "%c3, %c_maps") if maps_result else (c3, "%c3")
    return f"""  func.func {'private ' if private else ''}@{function}({args}) -> ({results}) {{
    {collapse}{dispatch(problem, schedule, name, "%a", "%b", "%c", entry)}
    %c3 = tensor.expand_shape %c [[0, 1], [2]] output_shape [{problem.batch}, {problem.m}, {problem.n}] : {tc} into {c3}
    return {returned} : {results}
  }}"""


def batch_function(problem: Gemm, schedule: HopperSchedule, function: str, name: str) -> str:
    """A program's private `function(A, B) -> C` of a batch (rank-3 operands, `_batch_caller`), dispatching entry
    `function` of executable `name` (as a model's calls do: one executable and entry per function)."""
    return _batch_caller(problem, schedule, function, name, False, entry=function, private=True)


def _heads_value(problem: Gemm, schedule: HopperSchedule, name: str, entry: str) -> tuple[str, str, str, str]:
    """A kernel storing C in heads (`store_heads`), called: (the function's arguments, the lines, the value they
    give and its type): split, one product's C as H×M×w (%c3); join, a batch's (rank-3 A and B, collapsed) C as
    M×(H·N) (%c)."""
    ta, tb, tc, _ = tensor_types(problem, schedule)
    call = dispatch(problem, schedule, name, "%a", "%b", "%c", entry)
    if problem.batched:
        args, collapse = _batch_operands(problem, schedule)
        return args, collapse + call, "%c", tc
    shape = [schedule.store_heads, problem.m, head_width(problem, schedule)]
    t3 = f"tensor<{'x'.join(map(str, shape))}x{problem.out_dtype}>"
    return f"%a: {ta}, %b: {tb}", f"""{call}
    %c3 = tensor.expand_shape %c [[0, 1], [2]] output_shape {shape} : {tc} into {t3}""", "%c3", t3


def _heads_caller(problem: Gemm, schedule: HopperSchedule, function: str, name: str, maps_result: bool) -> str:
    """`function(A, B) -> C` of a kernel storing C in heads (`store_heads`), C given back as the problem has it (a
    transpose after the dispatch, IREE's), so that a run checks it as any other: split, H×M×w to M×(H·w); join,
    M×H×N to the batch's H×M×N."""
    *_, tm = tensor_types(problem, schedule)
    args, lines, value, held_type = _heads_value(problem, schedule, name, "gemm")
    heads, width, m, dt = schedule.store_heads, head_width(problem, schedule), problem.m, problem.out_dtype
    moved = [heads, m, width] if problem.batched else [m, heads, width]
    t_moved = f"tensor<{'x'.join(map(str, moved))}x{dt}>"
    if problem.batched:  # M×(H·N) as M×H×N, moved to H×M×N
        t_held = f"tensor<{m}x{heads}x{width}x{dt}>"
        lines += f"""
    %c3 = tensor.expand_shape {value} [[0], [1, 2]] output_shape [{m}, {heads}, {width}] : {held_type} into {t_held}"""
        out, final, tail = batch_types(problem)[2], "%t", ""
    else:  # H×M×w moved to M×H×w, then M×(H·w)
        t_held, out, final = held_type, f"tensor<{m}x{problem.n}x{dt}>", "%r"
        tail = f"""
    %r = tensor.collapse_shape %t [[0], [1, 2]] : {t_moved} into {out}"""
    results, returned = (f"{out}, {tm}", f"{final}, %c_maps") if maps_result else (out, final)
    return f"""  func.func @{function}({args}) -> ({results}) {{
    {lines}
    %e = tensor.empty() : {t_moved}
    %t = linalg.transpose ins(%c3 : {t_held}) outs(%e : {t_moved}) permutation = [1, 0, 2]{tail}
    return {returned} : {results}
  }}"""


def heads_function(problem: Gemm, schedule: HopperSchedule, function: str, name: str) -> str:
    """A model's private `function(A, B)` of a kernel storing C in heads (`store_heads`), dispatching entry
    `function` of executable `name`: split, one product's C given as H×M×w; join, a batch's (rank-3 A and B,
    collapsed) given as M×(H·N) (`_heads_value`)."""
    args, lines, value, held_type = _heads_value(problem, schedule, name, function)
    return f"""  func.func private @{function}({args}) -> ({held_type}) {{
    {lines}
    return {value} : {held_type}
  }}"""


def _split_caller(problem: Gemm, schedule: HopperSchedule, function: str, name: str, maps_result: bool) -> str:
    """`function(A, B) -> C`: the Hopper dispatch's slices, then their sum in slice order (IREE's reduction), rounded
    to the input type for the truncf epilogue."""
    ta, tb, tp, tm = tensor_types(problem, schedule)
    m, n, slices = problem.m, problem.n, schedule.split_k
    t3, t32, out = f"tensor<{slices}x{m}x{n}xf32>", f"tensor<{m}x{n}xf32>", f"tensor<{m}x{n}x{problem.out_dtype}>"
    rounding = ""
    if problem.out_dtype != "f32":
        rounding = f"""
    %e16 = tensor.empty() : {out}
    %c = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}} ins(%sum : {t32}) outs(%e16 : {out}) {{
    ^bb0(%x: f32, %o: {problem.out_dtype}):
      %r = arith.truncf %x : f32 to {problem.out_dtype}
      linalg.yield %r : {problem.out_dtype}
    }} -> {out}"""
    result = "%c" if rounding else "%sum"
    results, returned = (f"{out}, {tm}", f"{result}, %p_maps") if maps_result else (out, result)
    return f"""  func.func @{function}(%a: {ta}, %b: {tb}) -> ({results}) {{
    {dispatch(problem, schedule, name, "%a", "%b", "%p")}
    %p3 = tensor.expand_shape %p [[0, 1], [2]] output_shape [{slices}, {m}, {n}] : {tp} into {t3}
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : {t32}
    %init = linalg.fill ins(%zero : f32) outs(%e : {t32}) -> {t32}
    %sum = linalg.generic {{indexing_maps = [affine_map<(s, i, j) -> (s, i, j)>, affine_map<(s, i, j) -> (i, j)>],
        iterator_types = ["reduction", "parallel", "parallel"]}} ins(%p3 : {t3}) outs(%init : {t32}) {{
    ^bb0(%x: f32, %acc: f32):
      %y = arith.addf %acc, %x : f32
      linalg.yield %y : f32
    }} -> {t32}{rounding}
    return {returned} : {results}
  }}"""


def ptx_kernel(ptx: str, name: str) -> str:
    """The text of `.entry name` in `ptx`, up to the next entry."""
    match = re.search(rf"\.entry {re.escape(name)}\b(.*?)(?=\.entry |\Z)", ptx, re.S)
    if match is None:
        raise HopperError(f"the PTX has no kernel {name}.")
    return match.group(1)


def check_ptx(ptx: str, problem: Gemm, schedule: HopperSchedule, entry: str = "gemm",
              tail: Elementwise | None = None) -> None:
    """Every choice of `schedule` in the compiled PTX, or a HopperError naming the first one missing: the warp groups
    (threads) and their register split, the stages (two mbarriers each, and ping-pong's two order barriers), A's TMA
    load and B's (one, or one per 64 columns for nn) per K tile, B's layout (transposed for nn), and per K tile and
    consumer the wgmma count and shape (block_k / 16 steps × m64 blocks, m64n{block_n}k16 of the element type), one
    group kept in flight, the cluster (its size, B's and A's multicast loads, the releases to every workgroup on
    the releasing one's block row or column; none without one); the kernel writes every field of both tensor maps;
    a fused consumer's ops in its store (`_applies_tail`), and none without one; with the slices summed in the
    cluster, the sum between its cluster barriers (`_sums_in_cluster`) and C stored in its type 4 columns at once
    (`_stores_c_as`). The tile order (group_m) and the persistent grid are arithmetic and the dispatch's workgroup
    count, not checked here (`program` writes them; the grid is in the program's export)."""
    gemm = ptx_kernel(ptx, entry)
    problem = kernel_problem(problem, schedule)  # split_k: the slices' f32 partial products
    shape = f"wgmma.mma_async.sync.aligned.m64n{schedule.block_n}k16.f32.{problem.dtype}.{problem.dtype}"
    wgmma = re.findall(r"wgmma\.mma_async\.sync\.aligned\.\S+", gemm)
    per_tile = schedule.block_k // 16 * schedule.m_blocks
    expects = len(re.findall(r"mbarrier\.arrive\.expect_tx", gemm))
    loads = 1 + b_boxes(problem, schedule)  # per announced stage: A's box and B's
    remote = len(re.findall(r"mapa\.shared::cluster\.u32 remote, %r\d+, %r\d+; mbarrier\.arrive\.shared::cluster",
                            gemm))
    # the release sites of a cluster's stages: in the K loop and after it; one K tile leaves the loop empty (dropped)
    sites = 2 if _ceil(problem.k, schedule.block_k) > 1 else 1
    # wgmma issued between each fence and its commit: one K tile's group
    groups = [len(re.findall(r"wgmma\.mma_async", part.split("wgmma.commit_group")[0]))
              for part in gemm.split("wgmma.fence.sync.aligned")[1:]]
    found = {
        "threads": re.search(rf"\.maxntid {schedule.threads}, 1, 1", gemm) is not None,
        "stages": len(re.findall(r"mbarrier\.init\.shared\.b64", gemm))
        == 2 * schedule.stages + (2 if schedule.kind == "pingpong" else 0),
        # A's load and B's per announced stage (LLVM unrolls the producer's loop when K has few tiles)
        "TMA loads": expects > 0
        and len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", gemm)) == loads * expects,
        # wgmma's last immediate: B transposed (MN-major) for nn
        "B layout": bool(wgmma) and set(re.findall(r"wgmma\.mma_async[^;]*,\s*(\d)\s*;", gemm))
        == {"1" if problem.layout == "nn" else "0"},
        "wgmma shape": bool(wgmma) and set(wgmma) == {shape},
        "wgmma per K tile": bool(groups) and all(n == per_tile for n in groups),
        "one wgmma group in flight": re.search(r"wgmma\.wait_group\.sync\.aligned\s+1;", gemm) is not None,
        "tensor maps": _builds_maps(gemm, problem, schedule),
        "register split": f"setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGISTERS};" in gemm
        and f"setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGISTERS};" in gemm,
        # a cluster: its size in the kernel, B's share multicast once per announced stage (with cluster_m) and
        # A's (with cluster_n), releases to every workgroup on the releasing one's block row or column; none of it
        # without one (each release site, after a K step and after draining, arrives once per such workgroup)
        "cluster": (re.search(rf"\.reqnctapercluster {schedule.cluster_tiles}, 1, 1", gemm) is not None
                    and len(re.findall(r"\.multicast::cluster", gemm))
                    == ((loads - 1) * (schedule.cluster_m > 1) + (schedule.cluster_n > 1)) * expects
                    and remote >= sites * len(schedule.partners(0)) and remote % len(schedule.partners(0)) == 0)
        if schedule.cluster_tiles > 1
        else ".multicast::cluster" not in gemm and remote == 0
        and (".reqnctapercluster" not in gemm) == (schedule.cluster_size == 1),
        "slices summed in the cluster": _sums_in_cluster(gemm, schedule),
    }
    found["C's type"] = _stores_c_as(gemm, problem, schedule)
    if schedule.defer_stores and most_tiles(problem, schedule) > 1:  # with one tile a workgroup nothing to defer
        found["stores deferred under the next tile's first MMAs"] = _defers_stores(gemm)
    # the sum's f32 additions per group of 4 columns (LLVM drops those of columns it can prove past N, when N < 4)
    sums = min(problem.n, 4) * (schedule.split_k - 1) if schedule.sums_in_cluster else 0
    # stream-K: a cut unit's partial accumulators stored and loaded back once per element (a consumer thread's
    # m_blocks x n/2), the flag set after a fence and waited for with acquiring loads; none of it without a split
    elements = schedule.m_blocks * schedule.block_n // 2
    partials = [len(re.findall(pattern, gemm)) for pattern in (
        r"st\.global\.cg\.f32", r"ld\.global\.cg\.f32", r"ld\.global\.acquire\.gpu\.b32",
        r"fence\.acq_rel\.gpu;\s*red\.relaxed\.gpu\.global\.add\.s32", r"st\.relaxed\.gpu\.global\.b32",
        rf"bar\.sync\s+%r\d+, {WARPGROUP};")]
    if stream_split(problem, schedule) is not None:  # and the clear, and each side's warp-group barrier
        found["stream-K"] = partials[0] == partials[1] == elements and partials[2] >= 1 and partials[3] == 1 \
            and partials[4] == 1 and partials[5] == 2
        sums = elements
    else:
        found["stream-K"] = not any(partials)
    found["fused consumer"] = _applies_tail(gemm, problem, tail, sums)
    missing = [name for name, ok in found.items() if not ok]
    if missing:
        raise HopperError(f"the Hopper kernel's PTX does not show its {missing[0]} ({schedule}).")


# The PTX instruction each op of a fused consumer (as `Elementwise.lowered` gives it) becomes, by (op, type): what
# `_applies_tail` looks for. f16 products and sums may be packed in pairs (x2).
TAIL_PTX = {("math.fma", "f32"): r"fma\.rn\.f32", ("arith.mulf", "f32"): r"mul\.rn\.f32",
            ("arith.addf", "f32"): r"add\.rn\.f32", ("arith.divf", "f32"): r"div\.rn\.f32",
            ("arith.mulf", "f16"): r"mul\.rn\.f16(x2)?", ("arith.addf", "f16"): r"add\.rn\.f16(x2)?",
            ("arith.mulf", "bf16"): r"mul\.rn\.bf16(x2)?", ("arith.addf", "bf16"): r"add\.rn\.bf16(x2)?",
            ("arith.divf", "f16"): r"div\.rn\.f32", ("arith.divf", "bf16"): r"div\.rn\.f32"}


def _sums_in_cluster(gemm: str, schedule: HopperSchedule) -> bool:
    """With the slices summed in the cluster: a cluster of split_k workgroups, each consumer thread's fragments
    written to shared memory in 8-byte pairs (m_blocks × 2 × block_n / 8 of them), and the sum read from every
    workgroup of the cluster (mapa, ld.shared::cluster.v4.f32; a whole number of split_k, as LLVM may unroll the
    loop) between cluster barriers: an arrive (release, not .relaxed) and a wait after the last fragment store and
    before the first read, and another pair after the last read; every arrive waited for. Without: none of it."""
    loads = [m.start() for m in re.finditer(r"ld\.shared::cluster\.v4\.f32", gemm)]
    pairs = [m.start() for m in re.finditer(r"st\.shared\.v2\.f32", gemm)]
    if not schedule.sums_in_cluster:
        return not loads and not pairs
    arrives = [m.start() for m in re.finditer(r"barrier\.cluster\.arrive(\.aligned)?;", gemm)]
    waits = [m.start() for m in re.finditer(r"barrier\.cluster\.wait(\.aligned)?;", gemm)]

    def pair_between(low: int, high: float) -> bool:  # an arrive, then a wait, both in (low, high)
        return any(low < arrive < wait < high for arrive in arrives for wait in waits)
    return (re.search(rf"\.reqnctapercluster {schedule.split_k}, 1, 1", gemm) is not None
            and len(pairs) == schedule.m_blocks * 2 * (schedule.block_n // 8)
            and len(loads) >= schedule.split_k and len(loads) % schedule.split_k == 0
            and len(re.findall(r"mapa\.shared::cluster\.u32", gemm)) == len(loads)
            and "barrier.cluster.arrive.relaxed" not in gemm and len(arrives) == len(waits) >= 3
            and pair_between(max(pairs), min(loads)) and pair_between(max(loads), float("inf")))


def _applies_tail(gemm: str, problem: Gemm, tail: Elementwise | None, sums: int = 0) -> bool:
    """With a fused consumer: the instruction of each of its lowered ops in `TAIL_PTX` is in the kernel, its fused
    multiply-adds a whole number of times its count (one per element), and no division where it has none. Without
    one: none of those instructions (the Hopper kernel computes none of them), but for the f32 additions of slices
    summed in the cluster: a whole number of `sums` (4 columns, or N when N < 4, × (split_k - 1) per group of
    columns summed)."""
    def count(pattern: str) -> int:
        return len(re.findall(rf"\b{pattern}\s", gemm))
    if tail is None:
        adds = count(r"add\.rn\.f32")
        return not any(count(pattern) for pattern in set(TAIL_PTX.values()) - {r"add\.rn\.f32"}) \
            and (adds == 0 if not sums else adds >= sums and adds % sums == 0)
    ops = tail.lowered(problem.dtype)
    wanted = {TAIL_PTX[(name, ty)] for name, _, ty in ops if (name, ty) in TAIL_PTX}
    fmas = sum(name == "math.fma" for name, _, _ in ops)
    divides = any(name == "arith.divf" for name, _, _ in ops)
    return all(count(pattern) for pattern in wanted) and (count(r"fma\.rn\.f32") % fmas == 0 if fmas else True) \
        and (divides or count(r"div\.rn\.f32") == 0)


def _builds_maps(gemm: str, problem: Gemm, schedule: HopperSchedule) -> bool:
    """Both tensor maps written field by field (rank-many per-dimension fields each), their element type and
    swizzle as `tensor_maps` gives them, released once and each acquired before the loads."""
    specs = tensor_maps(problem, schedule)
    count = lambda field: len(re.findall(rf"tensormap\.replace\.tile\.{field}\.global\.b1024", gemm))  # noqa: E731
    fixed = sorted(re.findall(
        r"tensormap\.replace\.tile\.(elemtype|swizzle_mode)\.global\.b1024\.b32 \[%rd\d+\], (\d+);", gemm))
    expected = sorted([("elemtype", str(MAP_ELEMTYPES[sp["dtype"]])) for sp in specs]
                      + [("swizzle_mode", str(MAP_SWIZZLES[sp["swizzle"]])) for sp in specs])
    dims = sum(len(sp["dims"]) for sp in specs)
    return (all(count(field) == len(specs) for field in ("global_address", "rank"))
            and count("global_stride") == sum(len(sp["dims"]) - 1 for sp in specs)
            and all(count(field) == dims for field in ("global_dim", "box_dim", "element_stride"))
            and fixed == expected and gemm.count("fence.proxy.tensormap::generic.release.gpu") == 1
            # each map acquired by the thread that built it; C's also by lane 0 of each consumer warp (one site)
            and len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire\.gpu", gemm))
            == len(specs) + (1 if stores_by_tma(problem, schedule) else 0))


def _defers_stores(gemm: str) -> bool:
    """The first write of C into a staging area (stmatrix, in the text) follows a wgmma group's commit and its
    wait for the group before (wait_group 1), not a tile's drain (wait_group 0): the deferred stores of the previous
    tile, under the next tile's first wgmma group."""
    first = gemm.find("stmatrix.sync.aligned")
    waits = re.findall(r"wgmma\.(commit_group|wait_group)\.sync\.aligned\s*(\d*);", gemm[:first]) if first > 0 else []
    return len(waits) >= 2 and waits[-2] == ("commit_group", "") and waits[-1] == ("wait_group", "1")


def _stores_c_as(gemm: str, problem: Gemm, schedule: HopperSchedule) -> bool:
    """C stored in its type: pairs of f32 in 8 bytes, or pairs rounded to nearest (cvt.rn) and packed in 4 bytes,
    when N is even; one element a store when it is odd (4 bytes of f32, or 2 rounded); nothing rounded for f32.
    Where the kernel stages its stores (`stages_stores`), a 16-bit C inside the tiles goes out in 16-byte rows: one
    stmatrix of four 8x8 matrices and one 16-byte store per four 8-column blocks of each fragment row, m_blocks × 2
    × block_n / 32 of each (none when no tile is whole: LLVM drops the path), and the pairs' 4-byte stores only at
    the edges (which LLVM drops when every tile is whole). Slices summed in the cluster: 4 columns a store (16 bytes
    of f32, or two rounded pairs in 8) where N is a multiple of 4, else per-column stores."""
    out = problem.out_dtype
    rounded = re.search(rf"cvt\.rn\.{out}(x2)?\.f32", gemm) is not None
    stmatrix = len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", gemm))
    rows16 = len(re.findall(r"st\.global\.v4\.b32", gemm))
    dims = 3 if schedule.store_heads else 2  # C's map: two dimensions, three in heads
    bulk = len(re.findall(rf"cp\.async\.bulk\.tensor\.{dims}d\.global\.shared::cta\.bulk_group", gemm))
    if len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", gemm)) != bulk:
        return False  # a bulk store of another rank than C's map
    expected = schedule.m_blocks * 2 * (schedule.block_n // 32)  # staged blocks a tile: stmatrix, then stored
    some_tile_whole = problem.m >= schedule.block_m and problem.n >= schedule.block_n  # else LLVM drops the path
    counts: tuple[int, ...] = (expected,) if some_tile_whole else (0, expected)
    if schedule.defer_stores:  # a tile's stores under the next one's first MMAs and the last's after the loop: two
        counts += (2 * expected,)  # sites, which LLVM may merge into one
    edges_whole = problem.m % schedule.block_m == 0 and problem.n % schedule.block_n == 0
    if stores_by_tma(problem, schedule):  # each staged block stored by one bulk copy; none read back by the lanes
        whole = stmatrix == bulk * (STORE_BOX[1] // 8) and stmatrix in counts and rows16 == 0
        if schedule.store_heads:  # whole tiles only: no other store of C at all
            return whole and rounded and not re.search(r"st\.global\.", gemm)
        return whole and rounded and "st.global.v2.f32" not in gemm and (edges_whole or "st.global.b32" in gemm)
    if bulk:
        return False
    if stages_stores(problem, schedule):
        whole = stmatrix == rows16 and stmatrix in counts
        return whole and rounded and "st.global.v2.f32" not in gemm and (edges_whole or "st.global.b32" in gemm)
    if schedule.sums_in_cluster:  # the sums, 4 columns a store (f32 16 bytes, 16-bit 8) or one guarded per column
        four = "st.global.v4.f32" if out == "f32" else "st.global.v2.b32"
        # LLVM writes the per-column stores as it likes (it pairs neighbours whose alignment it can prove) and drops
        # them where N is a multiple of 4 and no tile lies past N: they are only required where N is not
        stores = re.findall(r"st\.global\.[\w.]+", gemm)
        return ((four in stores) == (problem.n % 4 == 0) and (problem.n % 4 == 0 or len(set(stores) - {four}) > 0)
                and (not rounded if out == "f32" else rounded))
    if stmatrix or rows16:
        return False
    if problem.n % 2:
        wide, narrow = re.search(r"st\.global\.(b32|f32)\s", gemm) is not None, "st.global.b16" in gemm
    else:
        wide, narrow = "st.global.v2.f32" in gemm, "st.global.b32" in gemm
    return (wide and not narrow and not rounded) if out == "f32" else (narrow and rounded and not wide)
