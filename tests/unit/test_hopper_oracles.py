"""Independent oracles for the Hopper generator (transforms.hopper), issue 29: its emitted `@gemm` is not compared with
the generator's formulas but executed, op by op as written, on a small model of an sm_90a thread-block cluster
(`_Cluster`: numpy vectors over a warp group's 128 lanes, `scf.if` narrowing the active lanes; mbarrier phases,
arrivals and transaction bytes, `try_wait.parity` blocking until the phase of that parity has completed; each
workgroup's tensor maps as its thread writes them, field by field, into its slot of the maps binding, and TMA boxes
as those fields define them, in flight until they land at a random later point in every workgroup of the multicast
mask; `mapa` arrivals; wgmma operands decoded from the shared-memory matrix descriptors and read until their group is
waited for; the accumulator fragment layout of wgmma m64nNk16 from the PTX ISA; a 16-bit C's rounding (cvt.rn,
pairs packed low column low) and its staged rows: stmatrix .x4 moving four 8x8 blocks between lanes as the PTX ISA
defines it, each lane's 16 bytes read back and stored; staging rows after the stages and barriers, one warp's
each), and what the program does is
compared with references computed from the problem: every element of C inside M × N stored exactly once, none
outside, each the dot product of its own row of A and column of B over every k of K; the bytes each `full` barrier
expects against the bytes of the loads that complete on it; the tiles each workgroup visits against the grouped
cluster order of the generator's docstring; barrier counts against arrivals; and no deadlock, read of a stage still
being loaded or load over a stage an in-flight wgmma reads, under seeded random interleavings. With K's slices summed
in the cluster (`split_sum="cluster"`), each workgroup's f32 partial product goes through a word-level model of its
shared memory (`_SumMemory`: each word's element of C and partial product, who wrote it after how many cluster
arrivals, who read it), the distributed shared-memory loads (mapa, ld.shared::cluster.v4) are checked against the
cluster barriers (`barrier.cluster` arrive/wait: a read after the write was published, no rewrite or exit while
another may still read), the named barrier (bar.sync) between two consumers, and the sums are symbolic (`_Sum`: the
partial products added, in order) and compared with the slices of K in slice order. Nothing here needs a GPU or
iree-compile; a failure is a `Fault` that says what the program did."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from transforms import hopper
from transforms.hopper import HopperSchedule, program
from transforms.problem import Epilogue, Gemm

LANES = 128  # a warp group
WIDTH = {"i1": 1, "i16": 16, "i32": 32, "i64": 64, "index": 64}
MASK = {name: (1 << bits) - 1 for name, bits in WIDTH.items()}
# Where the model places the buffers (A, B, C, the tensor maps): bindings far apart in the global space, shared
# memory from an address that
# is not 1 KiB aligned (the program must align its swizzled tiles itself).
BINDING_BASE = {0: 1 << 40, 1: 2 << 40, 2: 3 << 40, 3: 4 << 40}
SMEM_BASE = 48
REGISTERS_PER_SM = 64 * 1024  # 32-bit registers (NVIDIA H100 whitepaper, table 3)


class Fault(AssertionError):
    """The emitted program did something the hardware model says is wrong."""


@dataclass(frozen=True)
class _Rounded:
    """Accumulator elements rounded to a 16-bit type (cvt.rn): one (`high` None), or a pair packed in 32 bits, `low`
    in the lower half (the lower address)."""
    out: str
    low: tuple
    high: tuple | None = None


@dataclass
class _Sum:
    """An f32 value of the slices' sum (slices summed in the cluster) per lane of a warp group (arrays of LANES, -1
    where the lane was inactive; -2 throughout in an untimed run, which records no wgmma operands): the element of C
    it belongs to (A row, B column), and the partial products it adds, in order, each an id of `_Run.partials` (the
    k of K it sums) per lane. `fold`: whether its additions are a left fold in `parts`' order, ((p0 + p1) + p2) +
    ... (the first two in either order: IEEE addition commutes, it does not associate)."""
    rows: np.ndarray
    cols: np.ndarray
    parts: tuple
    fold: bool = True


# A 16-bit C staged through a warp's shared memory (transforms.hopper._staged_stores), as one inline PTX block.
_STAGED = re.compile(r"bar\.warp\.sync -1; stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \[\$0\], "
                     r"\{\$1, \$2, \$3, \$4\}; bar\.warp\.sync -1; \{ \.reg \.b32 t<4>; ld\.shared\.v4\.b32 "
                     r"\{t0, t1, t2, t3\}, \[\$0\]; st\.global\.v4\.b32 \[\$5\+(\d+)\], \{t0, t1, t2, t3\}; \}")


# ---- parsing the emitted functions into a tree of compiled ops

_DEF = re.compile(r"(%[\w]+)(?::(\d+))? = (.*)")
_FOR = re.compile(r"(?:(%\w+)(?::(\d+))? = )?scf\.for (%\w+) = (%\w+) to (%\w+) step (%\w+)"
                  r"(?: iter_args\(([^)]*)\))?")


@dataclass
class _Func:
    body: list
    threads: int
    cluster: int


def _parse(text: str, name: str) -> _Func:
    start = text.index(f"func.func @{name}(")
    header_end = text.index("\n", start)
    header = text[start:header_end]
    threads = int(re.search(r"workgroup_size = \[(\d+), 1, 1\]", header).group(1))
    cluster = re.search(r"nvvm\.cluster_dim = array<i32: (\d+), 1, 1>", header)
    lines = []
    for line in text[header_end + 1:].splitlines():
        if line.strip() == "return":
            break
        lines.append(line.strip())
    root: list = []
    stack: list = [(root, None)]
    for line in lines:
        current = stack[-1][0]
        if line.startswith("scf.if "):
            node = ["if", line.split()[1], [], []]
            current.append(node)
            stack.append((node[2], node))
        elif line == "} else {":
            node = stack.pop()[1]
            stack.append((node[3], node))
        elif line == "}":
            stack.pop()
        elif _FOR.match(line):
            result, count, iv, lb, ub, step, args = _FOR.match(line).groups()
            pairs = [tuple(p.strip().split(" = ")) for p in args.split(",")] if args else []
            node = ["for", result, int(count or 1), iv, lb, ub, step, pairs, []]
            current.append(node)
            stack.append((node[8], node))
        else:
            current.append(["op", _compile(line), line])
    assert len(stack) == 1, f"@{name}: unbalanced regions"
    return _Func(root, threads, int(cluster.group(1)) if cluster else 1)


def _names(text: str) -> list[str]:
    return re.findall(r"%[\w#]+", text)


def _is_vec(v) -> bool:
    return isinstance(v, np.ndarray)


def _bool(v):
    return (v != 0) if _is_vec(v) else bool(v)


def _i1(v):
    return v.astype(np.uint64) if _is_vec(v) else int(v)


def _sext32(v):
    if _is_vec(v):
        return np.where(v & 0x80000000, v | 0xFFFFFFFF00000000, v)
    return v | 0xFFFFFFFF00000000 if v & 0x80000000 else v


_BINARY = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
           "andi": lambda a, b: a & b, "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b,
           "shrui": lambda a, b: a >> b, "shli": lambda a, b: a << b,
           "minui": lambda a, b: np.minimum(a, b) if _is_vec(a) or _is_vec(b) else min(a, b)}
_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ult": lambda a, b: a < b,
            "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}


def _compile(line: str):
    """One op line -> f(wg) that performs it on warp group `wg` (returns a blocking request or None)."""
    match = _DEF.match(line)
    name, rhs = (match.group(1), match.group(3)) if match else (None, line)
    op = rhs.split(" ", 1)[0]
    head = rhs.split(" : ")[0]
    operands = _names(head)
    if op == "arith.constant":
        value, ty = re.match(r"arith\.constant (-?\d+) : (\w+)", rhs).groups()
        constant = int(value) & MASK[ty]
        return lambda wg: wg.env.__setitem__(name, constant)
    if op.startswith("arith.") and op[6:] in _BINARY:
        fn, mask, (a, b) = _BINARY[op[6:]], MASK[rhs.rsplit(": ", 1)[1]], operands

        def binary(wg):
            wg.env[name] = fn(wg.env[a], wg.env[b]) & mask
        return binary
    if op in ("arith.divui", "arith.remui"):
        mask, (a, b), div = MASK[rhs.rsplit(": ", 1)[1]], operands, op == "arith.divui"

        def divide(wg):
            x, y = wg.env[a], wg.env[b]
            if np.any(wg.active(y) == 0):
                raise Fault(f"division by zero: {line}")
            y = np.where(y == 0, 1, y) if _is_vec(y) else y
            wg.env[name] = (x // y if div else x % y) & mask
        return divide
    if op == "arith.cmpi":
        predicate = rhs.split()[1].rstrip(",")
        if predicate not in _COMPARE:
            raise Fault(f"the model has no signed comparison: {line}")
        fn, (a, b) = _COMPARE[predicate], operands
        return lambda wg: wg.env.__setitem__(name, _i1(fn(wg.env[a], wg.env[b])))
    if op in ("arith.index_cast", "arith.extui", "arith.trunci", "llvm.ptrtoint", "llvm.inttoptr",
              "llvm.addrspacecast"):
        source, target = re.search(r": (\S+) to (\S+)$", rhs).groups()
        a = operands[0]
        widen_signed = op == "arith.index_cast" and source == "i32"
        mask = MASK.get(target, MASK["i64"])

        def cast(wg):
            v = wg.env[a]
            wg.env[name] = (_sext32(v) if widen_signed else v) & mask
        return cast
    if op == "hal.interface.binding.subspan":
        binding = int(re.search(r"binding\((\d+)\)", rhs).group(1))
        shape = tuple(int(d) for d in re.search(r"memref<([\dx]+)x\w+,", rhs).group(1).split("x"))
        return lambda wg: wg.env.__setitem__(name, ("binding", binding, shape))
    if op == "memref.alloc()":
        size = int(re.search(r"memref<(\d+)xi8", rhs).group(1))
        return lambda wg: wg.env.__setitem__(name, ("smem", size))
    if op == "memref.extract_aligned_pointer_as_index":
        a = operands[0]
        return lambda wg: wg.env.__setitem__(name, wg.machine.address_of(wg, wg.env[a]))
    if op == "gpu.thread_id":
        return lambda wg: wg.env.__setitem__(name, wg.tid)
    if op == "hal.interface.workgroup.id[0]":
        return lambda wg: wg.env.__setitem__(name, wg.bid)
    if op == "llvm.mlir.undef":
        return lambda wg: wg.env.__setitem__(name, _Acc(None, None, "undefined"))
    if op == "nvvm.wgmma.mma_async":
        da, db, acc = operands[:3]
        shape = tuple(int(v) for v in re.search(r"m = (\d+), n = (\d+), k = (\d+)", rhs).groups())
        scale = re.search(r"wgmma_scale_out<(\w+)>", rhs).group(1)
        a_type, a_layout = re.search(r"A \[<(\w+)>, #nvvm\.wgmma_scale_in<one>, <(\w+)>\]", rhs).groups()
        b_type, b_layout = re.search(r"B \[<(\w+)>, #nvvm\.wgmma_scale_in<one>, <(\w+)>\]", rhs).groups()
        spec = dict(shape=shape, scale=scale, a=(a_type, a_layout), b=(b_type, b_layout))
        return lambda wg: wg.env.__setitem__(name, wg.machine.wgmma(wg, wg.env[da], wg.env[db], wg.env[acc], spec))
    if op == "arith.addf":  # the slices' sum (only partial products are added in these kernels)
        a, b = operands
        return lambda wg: wg.env.__setitem__(name, wg.machine.addf(wg, wg.env[a], wg.env[b]))
    if op == "llvm.extractvalue":
        acc, index = re.match(r"llvm\.extractvalue (%[\w#]+)\[(\d+)\]", rhs).groups()
        index = int(index)
        return lambda wg: wg.env.__setitem__(name, wg.machine.extract(wg, wg.env[acc], index))
    if op == "nvvm.mbarrier.arrive":
        bar = operands[0]
        return lambda wg: wg.machine.arrive(wg, wg.env[bar], None)
    if op == "nvvm.mbarrier.arrive.expect_tx":
        bar, count = operands
        return lambda wg: wg.machine.expect(wg, wg.env[bar], wg.env[count])
    if op == "nvvm.mbarrier.init":
        bar, count = operands
        return lambda wg: wg.machine.init(wg, wg.env[bar], wg.env[count])
    if op == "nvvm.mbarrier.try_wait.parity":
        bar, parity = operands[:2]
        return lambda wg: wg.machine.wait(wg, wg.env[bar], wg.env[parity])
    if op == "nvvm.cp.async.bulk.tensor.shared.cluster.global":
        dst, tensor_map, bar, x, y = operands[:5]
        mask = operands[5] if "multicast_mask" in rhs else None
        return lambda wg: wg.machine.tma(wg, *(wg.env[v] for v in (dst, tensor_map, bar, x, y)),
                                         wg.env[mask] if mask else None)
    if op in ("nvvm.fence.mbarrier.init", "gpu.barrier", "nvvm.cluster.arrive", "nvvm.cluster.wait",
              "nvvm.wgmma.fence.aligned", "nvvm.wgmma.commit.group.sync.aligned"):
        return lambda wg: wg.machine.plain(wg, op)
    if op == "nvvm.wgmma.wait.group.sync.aligned":
        pending = int(rhs.split()[1])
        return lambda wg: wg.machine.wgmma_wait(wg, pending)
    if op == "llvm.inline_asm":
        text = re.search(r'att "([^"]*)"', rhs).group(1)
        args = _names(rhs.split('", "', 1)[1].split(" : ")[0])
        if name is not None:  # a value: C's rounding (cvt.rn), a distributed shared-memory load
            return lambda wg: wg.env.__setitem__(name, wg.machine.asm_value(wg, text, [wg.env[a] for a in args]))
        return lambda wg: wg.machine.asm(wg, text, [wg.env[a] for a in args])
    if op == "llvm.bitcast":  # i16 -> f16/bf16: the rounded element, its bits unchanged
        a = operands[0]
        return lambda wg: wg.env.__setitem__(name, wg.env[a])
    if op == "llvm.store":
        value, pointer = operands
        return lambda wg: wg.machine.store_word(wg, wg.env[value], wg.env[pointer])
    if op == "memref.store":
        value, memref, row, col = operands
        return lambda wg: wg.machine.store_index(wg, wg.env[value], wg.env[memref], wg.env[row], wg.env[col])
    if op == "scf.yield":
        return lambda wg: setattr(wg, "yielded", [wg.env[a] for a in operands])
    raise Fault(f"the model does not know this op: {line}")


def _execute(nodes: list, wg):
    """Runs `nodes` for the active lanes of `wg`; a generator that yields the blocking requests."""
    env = wg.env
    for node in nodes:
        kind = node[0]
        if kind == "op":
            request = node[1](wg)
            if request is not None:
                yield request
        elif kind == "if":
            condition, saved = np.asarray(_bool(env[node[1]])), wg.mask
            for branch, lanes in ((node[2], saved & condition), (node[3], saved & ~condition)):
                if branch and np.any(lanes):
                    wg.mask = lanes
                    yield from _execute(branch, wg)
            wg.mask = saved
        else:
            _, result, count, iv, lb, ub, step, pairs, body = node
            bounds = [wg.uniform(env[v], f"a loop bound of {iv}") for v in (lb, ub, step)]
            carried = [env[init] for _, init in pairs]
            for i in range(*bounds):
                env[iv] = i
                for (arg, _), value in zip(pairs, carried):
                    env[arg] = value
                yield from _execute(body, wg)
                carried = wg.yielded if pairs else carried
            if result:
                for r, value in enumerate(carried):
                    env[result if count == 1 else f"{result}#{r}"] = value


# ---- the hardware model

@dataclass
class _Acc:
    """A wgmma accumulator: the operands its wgmma read, and the accumulator it added to (None from zero)."""
    previous: _Acc | None
    read: dict | None
    state: str  # "undefined" | "pending" | "done"
    summary: tuple | None = None


@dataclass
class _Barrier:
    count: int
    initialiser: tuple  # (rank, warp group)
    pending: int
    tx: int = 0
    phase: int = 0  # completed phases
    fenced: bool = False  # fence.mbarrier_init after the init
    published: bool = False  # a barrier of the workgroup or cluster completed after the init
    published_cluster: bool = False  # ... a cluster barrier, after the fence


@dataclass
class _Region:
    tensor: str
    x: int  # the box's first inner (contiguous) coordinate
    y: int  # ... and outer one
    box: tuple

    @property
    def width(self) -> int:
        return self.box[0]

    @property
    def bytes(self) -> int:
        return self.box[0] * self.box[1] * 2


@dataclass
class _Load:
    cta: int  # destination rank
    dst: int
    barrier: int
    region: _Region
    waits: int = 0  # cluster barriers the issuing warp group had waited on when it issued the load


class _SumMemory:
    """One workgroup's shared memory as f32 words, for the partial products of K's slices summed in the cluster: per
    word the element it holds (A row, B column, partial product id; -1 none), who wrote it (warp group uid × LANES +
    lane) and after how many of that warp group's cluster arrivals (-1: never written, or a TMA load landed on it
    since), and the most cluster arrivals any reader had made at its read, and who read it (-1 none, -2 several)."""

    def __init__(self, words: int):
        self.row, self.col, self.part = (np.full(words, -1, dtype=np.int64) for _ in range(3))
        self.w_phase, self.w_who, self.r_phase, self.r_who = (np.full(words, -1, dtype=np.int64) for _ in range(4))

    def forget(self, start: int, end: int) -> None:
        """Words start..end (indices) overwritten by something other than a partial product."""
        for array in (self.row, self.col, self.part, self.w_phase, self.w_who):
            array[start:end] = -1


@dataclass
class _Warpgroup:
    machine: object
    cta: int  # rank in the cluster
    index: int
    bid: int
    tid: np.ndarray
    env: dict = field(default_factory=dict)
    mask: np.ndarray | None = None
    yielded: list = field(default_factory=list)
    blocked: tuple | None = None
    done: bool = False
    need_fence: bool = True
    groups: list = field(default_factory=list)  # committed wgmma groups not yet waited for
    open_group: list = field(default_factory=list)
    acquired: set = field(default_factory=set)
    syncs: int = 0
    cluster_waits: int = 0
    cluster_arrives: int = 0
    uid: int = 0  # the warp group's number in the cluster (rank × warp groups + index)

    def __post_init__(self):
        self.mask = np.ones(len(self.tid), dtype=bool)

    def active(self, v) -> np.ndarray:
        return v[self.mask] if _is_vec(v) else np.full(int(self.mask.sum()), v, dtype=np.uint64)

    def uniform(self, v, what: str) -> int:
        values = {int(x) for x in self.active(v)}
        if len(values) != 1:
            raise Fault(f"workgroup {self.bid} warp group {self.index}: {what} differs across lanes: {values}")
        return values.pop()

    def name(self) -> str:
        return f"workgroup {self.bid} warp group {self.index}"


class _Cluster:
    """One thread-block cluster running `@gemm`. Timed: a seeded scheduler interleaves the warp groups and the
    landing of loads, warp groups block on barriers, and every read is checked. Untimed: each warp group runs to
    its end in turn (up to the workgroup and cluster barriers), loads land at once, mbarrier waits pass (a log of
    what each issues, for the static checks)."""

    def __init__(self, run: _Run, cluster: int, timed: bool):
        self.run, self.timed, self.size = run, timed, run.gemm.cluster
        self.base = cluster * self.size
        self.barriers: dict[tuple[int, int], _Barrier] = {}
        self.regions: list[dict[int, _Region]] = [{} for _ in range(self.size)]
        self.in_flight: list[_Load] = []
        self.exited: set[int] = set()
        self.arrived_cluster = 0
        self.smem_size = 0
        self.staging: dict[tuple[int, int], tuple[int, int]] = {}  # (cta, shared row) -> (warp group, warp)
        self.registers: dict[int, dict[int, int]] = {rank: {} for rank in range(self.size)}
        per = run.gemm.threads // LANES
        self.warpgroups = [_Warpgroup(self, rank, index, self.base + rank,
                                      (index * LANES + np.arange(LANES)).astype(np.uint64), uid=rank * per + index)
                           for rank in range(self.size) for index in range(per)]
        self.sums: dict[int, _SumMemory] = {}  # per rank, once a partial product is written (`sum_memory`)
        self.remote_reads = [-1] * self.size  # per rank: most cluster arrivals of another rank's reader of its words
        self.named: dict[tuple[int, int], list[int]] = {}  # (rank, bar.sync id) -> [threads, warp groups arrived]

    # -- addresses
    def address_of(self, wg, handle) -> int:
        if handle[0] == "smem":
            self.smem_size = handle[1]
            return SMEM_BASE
        return BINDING_BASE[handle[1]]

    def check_shared(self, wg, start: int, size: int, what: str) -> None:
        if start < SMEM_BASE or start + size > SMEM_BASE + self.smem_size:
            raise Fault(f"{wg.name()}: {what} at shared {start}..{start + size} lies outside the allocation "
                        f"{SMEM_BASE}..{SMEM_BASE + self.smem_size}")

    # -- mbarriers
    def barrier(self, wg, cta: int, address: int, what: str) -> _Barrier:
        found = self.barriers.get((cta, address))
        if found is None:
            raise Fault(f"{wg.name()}: {what} on shared {address} of rank {cta}, which holds no initialised mbarrier")
        if cta in self.exited:
            raise Fault(f"{wg.name()}: {what} on a barrier of rank {cta}, which has exited")
        if self.timed and found.initialiser != (wg.cta, wg.index) and not found.published:
            raise Fault(f"{wg.name()}: {what} before the barrier's initialisation was made visible by a barrier")
        if self.timed and cta != wg.cta and not found.published_cluster:
            raise Fault(f"{wg.name()}: {what} in rank {cta} before that barrier's initialisation was fenced "
                        "(fence.mbarrier_init) and published by a cluster barrier")
        return found

    def init(self, wg, address, count):
        for lane_address, lane_count in zip(wg.active(address), wg.active(count)):
            lane_address, lane_count = int(lane_address), int(lane_count)
            self.check_shared(wg, lane_address, 8, "an mbarrier")
            if lane_address % 8 or (wg.cta, lane_address) in self.barriers:
                raise Fault(f"{wg.name()}: mbarrier at shared {lane_address} misaligned or initialised twice")
            self.barriers[wg.cta, lane_address] = _Barrier(lane_count, (wg.cta, wg.index), lane_count)
            self.run.inits.append((wg.bid, lane_address, lane_count))

    def _arrive(self, wg, barrier: _Barrier, count: int, what: str):
        if not self.timed:
            return
        barrier.pending -= count
        if barrier.pending < 0:
            raise Fault(f"{wg.name()}: {what} is one arrival more in a phase than the barrier's count "
                        f"{barrier.count}")
        self._complete(barrier)

    @staticmethod
    def _complete(barrier: _Barrier):
        if barrier.pending == 0 and barrier.tx == 0:
            barrier.phase += 1
            barrier.pending = barrier.count

    def arrive(self, wg, address, _):
        address, count = wg.uniform(address, "an arrival's barrier"), int(wg.mask.sum())  # every active lane
        barrier = self.barrier(wg, wg.cta, address, "mbarrier.arrive")
        self.run.arrivals.append((wg.bid, address, wg.bid, count))
        self._arrive(wg, barrier, count, "mbarrier.arrive")

    def expect(self, wg, address, count):
        if wg.mask.sum() != 1:
            raise Fault(f"{wg.name()}: expect_tx by {wg.mask.sum()} lanes")
        address, count = wg.uniform(address, "expect_tx's barrier"), wg.uniform(count, "expect_tx's bytes")
        barrier = self.barrier(wg, wg.cta, address, "mbarrier.arrive.expect_tx")
        phase = self.run.announced.get((wg.bid, address), 0)  # this workgroup's n-th announcement on it
        self.run.announced[wg.bid, address] = phase + 1
        self.run.expects.append((wg.bid, address, count, phase))
        if self.timed:
            barrier.tx += count
        self._arrive(wg, barrier, 1, "expect_tx")

    def wait(self, wg, address, parity):
        address, parity = wg.uniform(address, "a wait's barrier"), wg.uniform(parity, "a wait's parity")
        barrier = self.barrier(wg, wg.cta, address, "mbarrier.try_wait.parity")
        self.run.waits.append((wg.bid, wg.index, address, parity))
        # try_wait.parity(p) returns once the phase of parity p has completed: the current one's parity differs
        return ("barrier", barrier, parity) if self.timed and (barrier.phase & 1) == parity else None

    # -- TMA
    def tma(self, wg, dst, tensor_map, bar, x, y, multicast):
        if wg.mask.sum() != 1:
            raise Fault(f"{wg.name()}: a TMA load issued by {wg.mask.sum()} lanes")
        dst, slot, bar = (wg.uniform(v, "a TMA operand") for v in (dst, tensor_map, bar))
        x, y = (wg.uniform(v, "a TMA coordinate") for v in (x, y))
        x, y = (v - (1 << 32) if v & 0x80000000 else v for v in (x, y))  # i32 coordinates
        if slot not in wg.acquired:
            raise Fault(f"{wg.name()}: a TMA load through the tensor map at {slot:#x} before "
                        "fence.proxy.tensormap acquired it")
        spec, tensor = self.run.map_at(slot)
        box = tuple(spec["box"])
        size = box[0] * box[1] * 2
        if dst % 1024:
            raise Fault(f"{wg.name()}: a 128-byte-swizzled TMA destination at shared {dst} is not 1 KiB aligned")
        self.check_shared(wg, dst, size, f"the {tensor} box")
        targets = [wg.cta] if multicast is None else [r for r in range(16) if int(multicast) >> r & 1]
        if not targets or max(targets) >= self.size:
            raise Fault(f"{wg.name()}: multicast mask {multicast} for a cluster of {self.size}")
        for cta in targets:
            self.barrier(wg, cta, bar, "a TMA load's complete_tx")
            if any((cta, a) in self.barriers for a in range(dst, dst + size, 8)):
                raise Fault(f"{wg.name()}: the {tensor} box at shared {dst} covers an mbarrier")
            if any(load.cta == cta and load.dst < dst + size and dst < load.dst + load.region.bytes
                   for load in self.in_flight):
                raise Fault(f"{wg.name()}: a TMA load into shared {dst} of rank {cta} while another load into it "
                            "is in flight")
            self.in_flight.append(_Load(cta, dst, bar, _Region(tensor, x, y, box), wg.cluster_waits))
            self.run.loads.append((wg.bid, self.base + cta, bar, size, tensor, x, y, dst,
                                   self.run.announced.get((wg.bid, bar), 0) - 1))
        if not self.timed:
            while self.in_flight:
                self.land(self.in_flight[0])

    def land(self, load: _Load):
        self.in_flight.remove(load)
        size = load.region.bytes
        if load.cta in self.exited:
            raise Fault(f"a TMA load lands in rank {load.cta} after it exited")
        for wg in self.warpgroups:
            if wg.cta == load.cta and self.timed:
                for acc in [a for group in wg.groups for a in group] + wg.open_group:
                    if any(start < load.dst + size and load.dst < end for start, end in acc.read["spans"]):
                        raise Fault(f"a TMA load of {load.region.tensor} ({load.region.x}, {load.region.y}) "
                                    f"overwrites shared {load.dst} of rank {load.cta} while {wg.name()}'s "
                                    "wgmma still reads it")
        regions = self.regions[load.cta]
        for start in [s for s, r in regions.items() if s < load.dst + size and load.dst < s + r.bytes]:
            del regions[start]
        regions[load.dst] = load.region
        memory = self.sums.get(load.cta)
        if memory is not None:  # partial products the box lands on are gone; none may still be read
            first, last = (load.dst - SMEM_BASE) // 4, (load.dst + size - SMEM_BASE) // 4
            if (memory.r_phase[first:last] >= load.waits).any():
                raise Fault(f"a TMA load of {load.region.tensor} lands on shared {load.dst} of rank {load.cta} while "
                            "another warp group may still read the partial product there (no cluster barrier "
                            "between its read and the load's issue)")
            memory.forget(first, last)
        if self.timed:
            barrier = self.barriers[load.cta, load.barrier]
            barrier.tx -= size
            if barrier.tx < 0 and barrier.pending == 0:
                raise Fault(f"{size} bytes complete on the barrier at shared {load.barrier} of rank {load.cta} "
                            "beyond the bytes its phase expects")
            self._complete(barrier)

    # -- wgmma
    def wgmma(self, wg, desc_a, desc_b, acc: _Acc, spec: dict) -> _Acc:
        if wg.need_fence:
            raise Fault(f"{wg.name()}: wgmma.mma_async without a wgmma.fence since its registers were last "
                        "touched")
        if not wg.mask.all():
            raise Fault(f"{wg.name()}: wgmma by part of the warp group")
        m, n, k = spec["shape"]
        dtype = self.run.problem.dtype
        if (m, k) != (64, 16) or spec["a"] != (dtype, "row") or spec["b"][0] != dtype:
            raise Fault(f"wgmma {spec} for a {dtype} problem")
        if spec["scale"] == "one" and acc.state == "undefined":
            raise Fault(f"{wg.name()}: wgmma accumulates into an undefined accumulator")
        read = None
        if self.timed:
            desc_a, desc_b = (wg.uniform(d, "a wgmma descriptor") for d in (desc_a, desc_b))
            a, spans_a = self.operand(wg, desc_a, 64, "K", "A")
            b, spans_b = self.operand(wg, desc_b, n, "K" if spec["b"][1] == "col" else "MN", "B")
            read = {"a": a, "b": b, "n": n, "spans": spans_a + spans_b}
        result = _Acc(acc if spec["scale"] == "one" else None, read, "pending")
        wg.open_group.append(result)
        return result

    def operand(self, wg, desc: int, rows: int, major: str, operand: str):
        """The (inner, outer) tensor coordinates of each element of the rows × 16 operand that `desc` addresses,
        and the loaded regions it reads. PTX ISA, matrix descriptor: start address >> 4 in bits 0-13, leading
        byte offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, 1 (128-byte swizzle) in 62-63; with 128-byte
        swizzle, 16-bit elements: K-major (r, k) at start + (r // 8) SBO + (r % 8) 128 + 2 k; MN-major (mn, k) at
        start + (mn // 64) LBO + 2 (mn % 64) + (k // 8) SBO + (k % 8) 128 (CUTLASS's GMMA layout atoms)."""
        start, lbo, sbo = (desc & 0x3FFF) << 4, (desc >> 16 & 0x3FFF) << 4, (desc >> 32 & 0x3FFF) << 4
        if desc >> 62 != 1 or desc >> 46 & 0xFFFF:
            raise Fault(f"{operand}'s wgmma descriptor {desc:#x} is not a 128-byte-swizzle descriptor")
        r, k = np.arange(rows)[:, None], np.arange(16)[None, :]
        if major == "K":
            if start % 128 + 32 > 128 or start % 1024 >= 128:
                raise Fault(f"{operand}'s K-major k16 slice at shared {start} is not within a swizzle atom's "
                            "first row")
            address = start + (r // 8) * sbo + (r % 8) * 128 + 2 * k
        else:
            if start % 1024:
                raise Fault(f"{operand}'s MN-major descriptor starts at shared {start}, not on a swizzle atom")
            address = start + (r // 64) * lbo + 2 * (r % 64) + (k // 8) * sbo + (k % 8) * 128
        for load in self.in_flight:
            if load.cta == wg.cta and np.any((address >= load.dst) & (address < load.dst + load.region.bytes)):
                raise Fault(f"{wg.name()}: wgmma reads {operand} at shared {load.dst} while the load of "
                            f"{load.region.tensor} ({load.region.x}, {load.region.y}) into it is in flight")
        regions = self.regions[wg.cta]
        starts = np.array(sorted(regions), dtype=np.int64)
        chosen = [regions[int(s)] for s in starts]
        which = np.searchsorted(starts, address, side="right") - 1
        ends = np.array([s + g.bytes for s, g in zip(starts, chosen)] or [0])
        inside = (which >= 0) & (address < ends[np.maximum(which, 0)])
        if not inside.all():
            raise Fault(f"{wg.name()}: wgmma reads {operand} at shared {int(address[~inside][0])}, which no load "
                        "has filled")
        used = np.unique(which)
        if {chosen[i].tensor for i in used} != {operand}:
            raise Fault(f"{wg.name()}: wgmma's {operand} operand reads {sorted({chosen[i].tensor for i in used})}")
        x0, y0, width = (np.array([getattr(g, f) for g in chosen])[which] for f in ("x", "y", "width"))
        offset = (address - starts[which]) // 2
        spans = [(int(starts[i]), int(starts[i]) + chosen[i].bytes) for i in used]
        return (x0 + offset % width, y0 + offset // width), spans

    def extract(self, wg, acc: _Acc, index: int):
        if isinstance(acc, tuple) and acc[0] == "v4":  # an f32 of a distributed shared-memory load
            return acc[1][index]
        if not isinstance(acc, _Acc):
            raise Fault(f"{wg.name()}: llvm.extractvalue from {acc!r}")
        if acc.state != "done":
            what = "whose wgmma was not waited for" if acc.state == "pending" else "never written"
            raise Fault(f"{wg.name()}: reads an accumulator {what}")
        wg.need_fence = True  # a register access: the next wgmma on these registers needs a fence
        return ("element", acc, index)

    def wgmma_wait(self, wg, pending: int):
        if wg.open_group:
            raise Fault(f"{wg.name()}: wgmma.wait_group with an uncommitted wgmma")
        while len(wg.groups) > pending:
            for acc in wg.groups.pop(0):
                acc.state = "done"

    def plain(self, wg, op: str):
        if op == "nvvm.wgmma.fence.aligned":
            wg.need_fence = False
        elif op == "nvvm.wgmma.commit.group.sync.aligned":
            wg.groups.append(wg.open_group)
            wg.open_group = []
        elif op == "nvvm.fence.mbarrier.init":
            for (cta, _), barrier in self.barriers.items():
                barrier.fenced = barrier.fenced or cta == wg.cta
        elif op == "gpu.barrier":
            wg.syncs += 1
            return ("sync", wg.syncs)
        elif op == "nvvm.cluster.arrive":
            # barrier.cluster: every thread arrives, then waits, in turn (PTX ISA); the model's warp group as one
            if not wg.mask.all() or wg.cluster_arrives != wg.cluster_waits:
                raise Fault(f"{wg.name()}: barrier.cluster.arrive by {int(wg.mask.sum())} lanes after "
                            f"{wg.cluster_arrives} arrivals and {wg.cluster_waits} waits")
            wg.cluster_arrives += 1
            self.arrived_cluster += 1
        elif op == "nvvm.cluster.wait":
            if not wg.mask.all() or wg.cluster_arrives != wg.cluster_waits + 1:
                raise Fault(f"{wg.name()}: barrier.cluster.wait by {int(wg.mask.sum())} lanes after "
                            f"{wg.cluster_arrives} arrivals and {wg.cluster_waits} waits")
            wg.cluster_waits += 1
            return ("cluster", wg.cluster_waits)
        return None

    def asm(self, wg, text: str, args: list):
        if text.startswith("setmaxnreg."):
            count = int(re.match(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32 (\d+);", text).group(1))
            if not wg.mask.all():
                raise Fault(f"{wg.name()}: setmaxnreg by part of a warp group")
            self.registers[wg.cta][wg.index] = count
        elif text.startswith("tensormap.replace.tile."):
            self.run.replace_field(wg, text, args)
        elif text == "fence.proxy.tensormap::generic.release.gpu;":
            self.run.release_maps(wg)
        elif text == "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;":
            address = wg.uniform(args[0], "an acquired tensor map")
            if not self.run.tensor_maps.get(address, {}).get("released"):
                raise Fault(f"{wg.name()}: acquires the tensor map at {address:#x} before it was written and "
                            "released")
            wg.acquired.add(address)
        elif text == "cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0;":
            pass
        elif text.startswith("st.global.v2.f32 [$0"):
            offset = int(re.match(r"st\.global\.v2\.f32 \[\$0\+?(\d*)\]", text).group(1) or 0)
            for e, value in enumerate(args[1:]):
                self.store_address(wg, args[0] + offset + 4 * e, value)
        elif text.startswith("st.global.b32 [$0"):  # a pair of 16-bit elements
            offset = int(re.match(r"st\.global\.b32 \[\$0\+?(\d*)\]", text).group(1) or 0)
            pair = self.rounded(wg, args[1], pair=True)
            self.store_address(wg, args[0] + offset, pair.low, 2)
            self.store_address(wg, args[0] + offset + 2, pair.high, 2)
        elif (staged := _STAGED.fullmatch(text)) is not None:
            self.staged_store(wg, args, int(staged.group(1)))
        elif (partial := re.fullmatch(r"st\.shared\.v2\.f32 \[\$0\+?(\d*)\], \{\$1, \$2\};", text)) is not None:
            self.partial_store(wg, args, int(partial.group(1) or 0))
        elif (named := re.fullmatch(r"bar\.sync (\d+), (\d+);", text)) is not None:
            return self.named_barrier(wg, int(named.group(1)), int(named.group(2)))
        elif text == "st.global.v4.f32 [$0], {$1, $2, $3, $4};":  # a sum's 4 columns
            address = wg.active(args[0]).astype(np.int64)
            if (address % 16).any():
                raise Fault(f"{wg.name()}: st.global.v4.f32 at {int(address[address % 16 != 0][0]):#x}, not 16-byte "
                            "aligned")
            for e, value in enumerate(args[1:]):
                self.store_address(wg, args[0] + 4 * e, value)
        elif text == "st.global.v2.b32 [$0], {$1, $2};":  # a sum's 4 columns rounded, packed in two pairs
            address = wg.active(args[0]).astype(np.int64)
            if (address % 8).any():
                raise Fault(f"{wg.name()}: st.global.v2.b32 at {int(address[address % 8 != 0][0]):#x}, not 8-byte "
                            "aligned")
            for e, word in enumerate(args[1:]):
                pair = self.rounded(wg, word, pair=True)
                self.store_address(wg, args[0] + 4 * e, pair.low, 2)
                self.store_address(wg, args[0] + 4 * e + 2, pair.high, 2)
        elif "mapa.shared::cluster.u32" in text and "mbarrier.arrive.shared::cluster.b64" in text:
            for address, rank in zip(wg.active(args[0]), wg.active(args[1])):
                address, rank = int(address), int(rank)
                if rank >= self.size:
                    raise Fault(f"{wg.name()}: mapa to rank {rank} of a cluster of {self.size}")
                barrier = self.barrier(wg, rank, address, "a remote mbarrier arrival")
                self.run.arrivals.append((self.base + rank, address, wg.bid, 1))
                self._arrive(wg, barrier, 1, "a remote arrival")
        else:
            raise Fault(f"the model does not know this inline PTX: {text}")

    def asm_value(self, wg, text: str, args: list):
        pair = re.fullmatch(r"cvt\.rn\.(f16|bf16)x2\.f32 \$0, \$1, \$2;", text)
        one = re.fullmatch(r"cvt\.rn\.(f16|bf16)\.f32 \$0, \$1;", text)
        if pair:  # $1 in the upper half, $2 in the lower
            return _Rounded(pair.group(1), args[1], args[0])
        if one:
            return _Rounded(one.group(1), args[0])
        if text == ("{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $4, $5; ld.shared::cluster.v4.f32 {$0, $1, $2, $3}, "
                    "[ra]; }"):
            return ("v4", self.partial_load(wg, args[0], args[1]))
        raise Fault(f"the model does not know this inline PTX with a result: {text}")

    def rounded(self, wg, value, pair: bool) -> _Rounded:
        out = self.run.problem.out_dtype
        if not isinstance(value, _Rounded) or (value.high is not None) != pair:
            raise Fault(f"{wg.name()} stores {value!r}, not {'a pair of' if pair else 'an'} accumulator element"
                        f"{'s' if pair else ''} rounded to {out}")
        if value.out != out:
            raise Fault(f"{wg.name()} stores elements rounded to {value.out} into a C of {out}")
        return value

    def staged_store(self, wg, args: list, offset: int) -> None:
        """stmatrix .x4 (PTX ISA: lane 8 i + r gives the address of row r of matrix i, whose row r holds register
        i of lanes 4 r .. 4 r + 3 in order), each lane's 16 bytes read back from its own address and stored at
        `args[5] + offset`."""
        if not wg.mask.all():
            raise Fault(f"{wg.name()}: stmatrix by part of a warp group")
        slots = wg.active(args[0]).astype(np.int64)
        regs = [self.rounded(wg, r, pair=True) for r in args[1:5]]
        at = wg.active(args[5]).astype(np.int64) + offset
        s = self.run.schedule
        a, b = s.stage_bytes()
        aligned = -(-SMEM_BASE // 1024) * 1024
        used = aligned + s.stages * (a + b) + (2 * s.stages + 2) * 8  # the stages and their barriers
        self.check_shared(wg, int(slots.min()), int(slots.max() - slots.min()) + 16, "a staged row")
        if slots.min() < used or (slots % 16).any():
            raise Fault(f"{wg.name()}: a staged row at shared {int(slots.min())} (rows must be 16-byte aligned and "
                        f"after the stages and barriers, which end at {used})")
        for lane in range(LANES):  # a row belongs to one warp of the workgroup
            owner = self.staging.setdefault((wg.cta, int(slots[lane])), (wg.index, lane // 32))
            if owner != (wg.index, lane // 32):
                raise Fault(f"{wg.name()}: warp {lane // 32} stages a row at shared {int(slots[lane])}, which warp "
                            f"{owner[1]} of warp group {owner[0]} uses")
        accs = {id(r.low[1]) for r in regs} | {id(r.high[1]) for r in regs}
        if len(accs) != 1:
            raise Fault(f"{wg.name()}: one stmatrix holds elements of different accumulators")
        acc = regs[0].low[1]
        for warp in range(LANES // 32):
            lanes = slice(32 * warp, 32 * warp + 32)
            where = {int(address): k for k, address in enumerate(slots[lanes])}
            if len(where) != 32:
                raise Fault(f"{wg.name()}: two rows of one stmatrix at the same shared address")
            writer = np.array([where[int(address)] for address in slots[lanes]])  # the lane that gave the address
            matrix, row = writer // 8, writer % 8
            for word in range(4):
                source = 32 * warp + 4 * row + word  # the lane whose register `matrix` this word is
                for half in range(2):
                    index = np.array([(regs[i].low if half == 0 else regs[i].high)[2] for i in matrix])
                    self.store_address(wg, at[lanes] + 4 * word + 2 * half, ("element", acc, index), 2,
                                       source=source, lanes=lanes)

    def store_word(self, wg, value, pointer):
        """llvm.store: only the zeroing of a tensor map (the kernel's stores of C are inline PTX or memref)."""
        if wg.mask.sum() != 1:
            raise Fault(f"{wg.name()}: {wg.mask.sum()} lanes write tensor-map words")
        self.run.zero_word(wg, wg.uniform(pointer, "a stored word's address"), wg.uniform(value, "a stored word"))

    # -- K's slices summed in the cluster: partial products in shared memory, read across the cluster, added
    def sum_memory(self, rank: int) -> _SumMemory:
        if rank not in self.sums:
            self.sums[rank] = _SumMemory(-(-self.smem_size // 4))
        return self.sums[rank]

    def lane_ids(self, wg) -> np.ndarray:
        """The active lanes as the writers and readers of `_SumMemory` (warp group uid × LANES + lane)."""
        return wg.uid * LANES + (wg.tid[wg.mask] % LANES).astype(np.int64)

    def who(self, lane_id: int) -> str:
        wg = self.warpgroups[lane_id // LANES]
        return f"{wg.name()} lane {lane_id % LANES}"

    def partial_store(self, wg, args: list, offset: int) -> None:
        """st.shared.v2.f32: two f32 elements of each active lane's accumulator fragment at its shared address +
        `offset`, the slice's partial product for the cluster's sum. Inside the allocation, 8-byte aligned, one
        lane a word, over no mbarrier, no stage a TMA load is filling or an in-flight wgmma of the workgroup reads
        (the regions it covers hold no loaded tile after it); over no word another lane wrote or read unless a
        cluster barrier both passed lies between."""
        at = wg.active(args[0]).astype(np.int64) + offset
        if (at % 8).any():
            raise Fault(f"{wg.name()}: st.shared.v2.f32 at shared {int(at[at % 8 != 0][0])}, not 8-byte aligned")
        self.check_shared(wg, int(at.min()), int(at.max() - at.min()) + 8, "a partial product's st.shared.v2.f32")
        if np.unique(at).size != at.size:
            raise Fault(f"{wg.name()}: two lanes of one st.shared.v2.f32 write the same shared address")
        barriers = [address for cta, address in self.barriers if cta == wg.cta]
        if np.isin(at, barriers).any():
            raise Fault(f"{wg.name()}: a partial product written over the mbarrier at shared "
                        f"{int(at[np.isin(at, barriers)][0])}")
        for load in self.in_flight:
            if load.cta == wg.cta and ((at < load.dst + load.region.bytes) & (at + 8 > load.dst)).any():
                raise Fault(f"{wg.name()}: writes its partial product into shared {load.dst} while the TMA load of "
                            f"{load.region.tensor} ({load.region.x}, {load.region.y}) into it is in flight")
        if self.timed:
            for other in self.warpgroups:
                if other.cta != wg.cta:
                    continue
                for acc in [a for group in other.groups for a in group] + other.open_group:
                    for start, end in acc.read["spans"]:
                        if ((at < end) & (at + 8 > start)).any():
                            raise Fault(f"{wg.name()}: writes its partial product over shared {start}..{end} while "
                                        f"{other.name()}'s wgmma still reads it")
        regions = self.regions[wg.cta]
        for start in [s for s, r in regions.items() if ((at < s + r.bytes) & (at + 8 > s)).any()]:
            del regions[start]  # the tile loaded there is gone
        memory, me = self.sum_memory(wg.cta), self.lane_ids(wg)
        lanes = (wg.tid[wg.mask] % LANES).astype(np.int64)
        for e, value in enumerate(args[1:]):
            if not (isinstance(value, tuple) and value[0] == "element" and np.ndim(value[2]) == 0):
                raise Fault(f"{wg.name()} writes {value!r} as a partial product, not an accumulator element")
            words = (at - SMEM_BASE) // 4 + e
            for what, phase, by in (("wrote", memory.w_phase, memory.w_who), ("read", memory.r_phase, memory.r_who)):
                unordered = (phase[words] >= 0) & (by[words] != me) & (wg.cluster_waits <= phase[words])
                if unordered.any():
                    i = int(np.argmax(unordered))
                    other = "several lanes" if by[words[i]] == -2 else self.who(int(by[words[i]]))
                    raise Fault(f"{wg.name()}: writes shared {int(at[i]) + 4 * e} of rank {wg.cta}, which {other} "
                                f"{what} after {int(phase[words[i]])} cluster arrivals, with no cluster barrier "
                                f"between (this warp group has waited on {wg.cluster_waits})")
            memory.row[words], memory.col[words], memory.part[words] = self.run.partial(value[1], int(value[2]), lanes)
            memory.w_phase[words], memory.w_who[words] = wg.cluster_arrives, me

    def partial_load(self, wg, at, rank) -> list[_Sum]:
        """mapa + ld.shared::cluster.v4.f32: the four f32 words at each active lane's shared address `at` in the
        shared memory of cluster rank `rank`, each a `_Sum` of one partial product. Inside the allocation, 16-byte
        aligned, of a rank of the cluster that has not exited, words holding a partial product whose write was
        published to this lane: its writer arrived on a cluster barrier after the write, and this warp group's
        wait on that barrier returned (or the lane wrote it itself)."""
        addresses, ranks = wg.active(at).astype(np.int64), wg.active(rank).astype(np.int64)
        if (ranks >= self.size).any():
            raise Fault(f"{wg.name()}: mapa to rank {int(ranks.max())} of a cluster of {self.size}")
        if (addresses % 16).any():
            raise Fault(f"{wg.name()}: ld.shared::cluster.v4.f32 at shared {int(addresses[addresses % 16 != 0][0])}, "
                        "not 16-byte aligned")
        self.check_shared(wg, int(addresses.min()), int(addresses.max() - addresses.min()) + 16,
                          "ld.shared::cluster.v4.f32")
        positions, me = np.nonzero(wg.mask)[0], self.lane_ids(wg)
        values = [_Sum(np.full(LANES, -1, dtype=np.int64), np.full(LANES, -1, dtype=np.int64),
                       (np.full(LANES, -1, dtype=np.int64),)) for _ in range(4)]
        for target in map(int, np.unique(ranks)):
            if target in self.exited:
                raise Fault(f"{wg.name()}: reads the shared memory of rank {target}, which has exited")
            chosen = ranks == target
            memory, readers = self.sum_memory(target), me[chosen]
            for e in range(4):
                words = (addresses[chosen] - SMEM_BASE) // 4 + e
                unwritten = memory.w_phase[words] < 0
                if unwritten.any():
                    raise Fault(f"{wg.name()}: reads shared {int(addresses[chosen][unwritten][0]) + 4 * e} of rank "
                                f"{target}, which holds no partial product")
                early = (memory.w_who[words] != readers) & (wg.cluster_waits <= memory.w_phase[words])
                if early.any():
                    i = int(np.argmax(early))
                    raise Fault(f"{wg.name()}: reads shared {int(addresses[chosen][i]) + 4 * e} of rank {target} "
                                f"before {self.who(int(memory.w_who[words[i]]))}'s write of it (after "
                                f"{int(memory.w_phase[words[i]])} cluster arrivals) was published by a cluster "
                                f"barrier both passed (this warp group has waited on {wg.cluster_waits})")
                for array, source in ((values[e].rows, memory.row), (values[e].cols, memory.col),
                                      (values[e].parts[0], memory.part)):
                    array[positions[chosen]] = source[words]
                seen = memory.r_who[words]
                who = np.where((seen == -1) | (seen == readers), readers, -2)
                unique, counts = np.unique(words, return_counts=True)
                memory.r_who[words] = who
                memory.r_who[unique[counts > 1]] = -2
                memory.r_phase[words] = np.maximum(memory.r_phase[words], wg.cluster_arrives)
            if target != wg.cta:
                self.remote_reads[target] = max(self.remote_reads[target], wg.cluster_arrives)
        return values

    def addf(self, wg, x, y) -> _Sum:
        """arith.addf of two sums of partial products of the same elements of C (per active lane)."""
        if not isinstance(x, _Sum) or not isinstance(y, _Sum):
            raise Fault(f"{wg.name()}: arith.addf of {x!r} and {y!r}, not of partial products loaded from the cluster")
        lanes = wg.mask
        if (x.rows[lanes] != y.rows[lanes]).any() or (x.cols[lanes] != y.cols[lanes]).any():
            i = int(np.argmax((x.rows[lanes] != y.rows[lanes]) | (x.cols[lanes] != y.cols[lanes])))
            raise Fault(f"{wg.name()}: adds the partial product of A row {x.rows[lanes][i]} and B column "
                        f"{x.cols[lanes][i]} to that of A row {y.rows[lanes][i]} and B column {y.cols[lanes][i]}")
        if len(y.parts) == 1:  # (x) + p: a left fold goes on
            parts, fold = x.parts + y.parts, x.fold
        elif len(x.parts) == 1:  # p + (y), the same as (y) + p
            parts, fold = y.parts + x.parts, y.fold
        else:  # (..) + (..): not a left fold
            parts, fold = x.parts + y.parts, False
        return _Sum(x.rows, x.cols, parts, fold)

    def named_barrier(self, wg, ident: int, threads: int):
        """bar.sync ident, threads: the warp group blocks until threads / LANES warp groups of its workgroup have
        arrived on barrier `ident` in this generation."""
        if not wg.mask.all():
            raise Fault(f"{wg.name()}: bar.sync {ident} by part of a warp group")
        if threads % LANES or not 0 < threads <= self.run.gemm.threads:
            raise Fault(f"{wg.name()}: bar.sync {ident}, {threads}: not whole warp groups of the workgroup's "
                        f"{self.run.gemm.threads} threads")
        state = self.named.setdefault((wg.cta, ident), [threads, 0])
        if state[0] != threads:
            raise Fault(f"{wg.name()}: bar.sync {ident} for {threads} threads, which others sync for {state[0]}")
        state[1] += 1
        return ("named", (wg.cta, ident), -(-state[1] // (threads // LANES)))

    # -- C
    def store_address(self, wg, address, value, size: int = 4, source=None, lanes=None):
        """A store of one element of `size` bytes per active lane (or per lane of `lanes`, `address` already
        theirs), the element of accumulator lane `source` (default: the storing lane)."""
        m, n, out = self.run.c_rows, self.run.problem.n, self.run.problem.out_dtype
        if size != (4 if out == "f32" else 2):
            raise Fault(f"{wg.name()}: a {size}-byte store into a C of {out}")
        offset = (np.asarray(address).astype(np.int64) if lanes is not None else
                  wg.active(address).astype(np.int64)) - BINDING_BASE[2]
        bad = (offset % size != 0) | (offset < 0) | (offset >= m * n * size)
        if bad.any():
            raise Fault(f"{wg.name()}: a store at byte {int(offset[bad][0])} of C, outside its {m}x{n} {out}")
        self.run.store(self, wg, *np.divmod(offset // size, n), value, source)

    def store_index(self, wg, value, memref, row, col):
        m, n = self.run.c_rows, self.run.problem.n
        if memref[:2] != ("binding", 2) or memref[2] != (m, n):
            raise Fault(f"{wg.name()}: memref.store into {memref}")
        rows, cols = (wg.active(v).astype(np.int64) for v in (row, col))
        outside = (rows >= m) | (cols >= n)
        if outside.any():
            raise Fault(f"{wg.name()}: memref.store at C[{rows[outside][0]}, {cols[outside][0]}], outside {m}x{n}")
        if self.run.problem.out_dtype != "f32":  # one element rounded to C's type
            value = self.rounded(wg, value, pair=False).low
        self.run.store(self, wg, rows, cols, value)

    # -- scheduling
    def execute(self, seed: int):
        rng = random.Random(seed)
        running = {id(wg): _execute(self.run.gemm.body, wg) for wg in self.warpgroups}
        per_cta = {rank: [wg for wg in self.warpgroups if wg.cta == rank] for rank in range(self.size)}

        def ready(wg) -> bool:
            if wg.done or wg.blocked is None:
                return not wg.done
            kind, what = wg.blocked[:2]
            if kind == "barrier":
                return (what.phase & 1) != wg.blocked[2]
            if kind == "sync":
                return all(other.syncs >= what or other.done for other in per_cta[wg.cta])
            if kind == "named":
                threads, arrived = self.named[what]
                return arrived >= wg.blocked[2] * (threads // LANES)
            return self.arrived_cluster >= what * len(self.warpgroups)

        while True:
            movable = [wg for wg in self.warpgroups if ready(wg)]
            if not movable and not self.in_flight:
                stuck = [wg for wg in self.warpgroups if not wg.done]
                if stuck:
                    raise Fault("deadlock: " + "; ".join(f"{wg.name()} waits on {_describe(wg.blocked)}"
                                                         for wg in stuck))
                break
            if self.in_flight and (not movable or rng.random() < 0.3):
                self.land(self.in_flight[rng.randrange(len(self.in_flight))])
                continue
            wg = movable[0] if not self.timed else rng.choice(movable)
            if wg.blocked is not None and wg.blocked[0] in ("sync", "cluster"):
                self._publish(wg.blocked[0], wg.cta)
            wg.blocked = None
            try:
                wg.blocked = next(running[id(wg)])
            except StopIteration:
                wg.done = True
                if wg.groups or wg.open_group:
                    raise Fault(f"{wg.name()} exits with a wgmma in flight")
                if all(other.done for other in per_cta[wg.cta]):
                    self.exited.add(wg.cta)
                    waited = min(other.cluster_waits for other in per_cta[wg.cta])
                    if self.remote_reads[wg.cta] >= waited:
                        raise Fault(f"workgroup {wg.bid} exits while another workgroup of the cluster may still read "
                                    f"its shared memory (a read after {self.remote_reads[wg.cta]} cluster arrivals; "
                                    f"the workgroup waited on {waited} cluster barriers)")
                    if any(load.cta == wg.cta for load in self.in_flight):
                        raise Fault(f"workgroup {wg.bid} exits while a TMA load into it is in flight")
        for wg in self.warpgroups:
            self.run.cluster_syncs[wg.bid, wg.index] = (wg.cluster_arrives, wg.cluster_waits)
        for rank, registers in self.registers.items():
            if LANES * sum(registers.values()) > REGISTERS_PER_SM:
                raise Fault(f"workgroup {self.base + rank}: setmaxnreg asks for {registers} registers per thread "
                            f"of each warp group, more than the SM's {REGISTERS_PER_SM}")
        if self.timed:
            for (rank, address), barrier in self.barriers.items():
                if barrier.pending != barrier.count or barrier.tx:
                    raise Fault(f"workgroup {self.base + rank} ends with the barrier at shared {address} mid-phase "
                                f"({barrier.count - barrier.pending} of {barrier.count} arrivals, {barrier.tx} "
                                "bytes outstanding)")

    def _publish(self, kind: str, cta: int):
        """A workgroup or cluster barrier completed: the mbarriers initialised before it are visible to every warp
        group it joined, and those fenced, to the cluster."""
        for (rank, _), barrier in self.barriers.items():
            if kind == "cluster" or rank == cta:
                barrier.published = True
            if kind == "cluster":
                barrier.published_cluster = barrier.published_cluster or barrier.fenced


def _describe(blocked) -> str:
    if blocked is None:
        return "nothing"
    if blocked[0] == "barrier":
        b = blocked[1]
        return f"an mbarrier (parity {blocked[2]}; phase {b.phase}, {b.pending} arrivals and {b.tx} bytes to go)"
    return f"a {blocked[0]} barrier"


# ---- a run of the whole grid, and what it is compared with

def fragment(lane: np.ndarray, index: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of accumulator register `index` of warp-group lane `lane` in a wgmma m64nNk16 f32 D
    fragment (PTX ISA, "Register fragment of matrix D" for wgmma .m64nNk16): each warp owns 16 rows; within them
    thread t holds, for every 8 columns, the pair at row t / 4 and then at row t / 4 + 8, columns 2 (t % 4) + {0, 1}."""
    warp, t = lane // 32, lane % 32
    return 16 * warp + t // 4 + 8 * (index // 2 % 2), 2 * (t % 4) + index % 2 + 8 * (index // 4)


class _Run:
    """The program of `problem` and `schedule` executed over its whole grid (one cluster at a time)."""

    def __init__(self, problem: Gemm, schedule: HopperSchedule, text: str | None = None):
        # slices summed in the cluster: C is M×N in the problem's type, each element the sum of the slices'
        # partial products; else with split_k, the kernel's C is each slice's f32 partial product (rows slice × M
        # on; the program sums them after)
        self.cluster_sum = schedule.split_k > 1 and schedule.split_sum == "cluster"
        self.problem = problem.with_(epilogue=Epilogue()) if schedule.split_k > 1 and not self.cluster_sum else problem
        self.schedule = schedule
        self.c_rows = problem.m * (1 if self.cluster_sum else schedule.split_k)
        self.partials: dict[tuple, int] = {}  # the k of K a partial product sums -> its id (`_Sum.parts`)
        self.cluster_syncs: dict[tuple[int, int], tuple[int, int]] = {}  # (workgroup, warp group) -> arrives, waits
        self.text = text if text is not None else program(problem, schedule)
        self.gemm = _parse(self.text, "gemm")
        self.grid = int(re.search(r"export public @gemm .*?%x = arith\.constant (\d+) : index", self.text,
                                  re.S).group(1))
        self.inits, self.expects, self.loads, self.arrivals, self.waits = [], [], [], [], []
        self.announced: dict[tuple[int, int], int] = {}
        self.stored = np.zeros((self.c_rows, problem.n), dtype=np.int32)  # split_k summed after: each slice's
        self.tensor_maps: dict[int, dict] = {}
        # the maps scratch as the program's dispatch returns it and as the kernel declares its binding: the same
        # size, two 128-byte maps per workgroup, and at least 64 bytes to round the kernel's start up (its writes
        # must stay inside)
        result = re.search(r"flow\.dispatch @\w+::@\w+\(%a, %b\) : \([^)]*\) -> \([^,]+, tensor<(\d+)xi64>\)",
                           self.text)
        binding = re.search(r"binding\(3\)[^\n]*memref<(\d+)xi64", self.text)
        if result is None or binding is None or result.group(1) != binding.group(1):
            raise Fault("the dispatch's maps result and the kernel's maps binding differ in size (or are missing)")
        self.maps_bytes = int(binding.group(1)) * 8
        if self.maps_bytes < self.grid * 2 * self.MAP_BYTES + 64:
            raise Fault(f"the maps binding holds {self.maps_bytes} bytes, not two maps per workgroup of the "
                        f"{self.grid} and room to align its start")

    # -- the tensor maps: each workgroup's thread zeroes its slot's words, writes the fields, releases them
    MAP_BYTES = 128

    def _map(self, wg, address: int, what: str) -> dict:
        """The map slot starting at `address` in the maps binding, owned by the first workgroup that writes it."""
        base, size = BINDING_BASE[3], self.maps_bytes
        if not base <= address < base + size or (address - base) % self.MAP_BYTES:
            raise Fault(f"{wg.name()}: {what} at {address:#x}, not the start of a 128-byte slot of the maps binding")
        entry = self.tensor_maps.setdefault(address, {"owner": wg.bid, "words": set(), "fields": {},
                                                      "released": False})
        if entry["owner"] != wg.bid:
            raise Fault(f"{wg.name()}: {what} in the tensor map at {address:#x}, which workgroup {entry['owner']} "
                        "writes (workgroups run at once: each needs its own)")
        return entry

    def zero_word(self, wg, address: int, value: int) -> None:
        slot = address - (address - BINDING_BASE[3]) % self.MAP_BYTES
        entry = self._map(wg, slot, "a word stored")
        if value != 0 or address % 8:
            raise Fault(f"{wg.name()}: stores {value} at {address:#x}; a tensor map is zeroed in aligned words")
        if entry["fields"]:
            raise Fault(f"{wg.name()}: zeroes the tensor map at {slot:#x} after writing its fields")
        entry["words"].add(address - slot)

    def replace_field(self, wg, text: str, args: list) -> None:
        match = re.fullmatch(r"tensormap\.replace\.tile\.(\w+)\.global\.b1024\.b(32|64) \[\$0\], "
                             r"(?:(\d+), )?(\$1|\d+);", text)
        if match is None:
            raise Fault(f"the model does not know this tensormap.replace: {text}")
        field, _, ordinal, value = match.groups()
        if wg.mask.sum() != 1:
            raise Fault(f"{wg.name()}: tensormap.replace by {wg.mask.sum()} lanes")
        entry = self._map(wg, wg.uniform(args[0], "a tensor map's address"), f"tensormap.replace.{field}")
        if len(entry["words"]) != self.MAP_BYTES // 8:
            raise Fault(f"{wg.name()}: writes {field} into a tensor map whose 128 bytes were not all zeroed first")
        if entry["released"]:
            raise Fault(f"{wg.name()}: writes {field} into a tensor map after releasing it")
        number = wg.uniform(args[1], f"the {field}") if value == "$1" else int(value)
        entry["fields"][field if ordinal is None else (field, int(ordinal))] = number

    def release_maps(self, wg) -> None:
        for entry in self.tensor_maps.values():
            if entry["owner"] == wg.bid and entry["fields"]:
                entry["released"] = True

    def map_at(self, slot: int) -> tuple[dict, str]:
        """The map the fields at `slot` describe, checked against the operand its address names: rank 2, the
        operand's dims innermost first with its packed row stride in bytes, PTX's element type of the problem
        (f16 6, bf16 10), unit element strides, 128-byte swizzle (mode 3) over box rows of 64 elements."""
        entry = self.tensor_maps.get(slot)
        if entry is None or not entry["released"]:
            raise Fault(f"a TMA load through {slot:#x}, which holds no released tensor map")
        f, p = entry["fields"], self.problem
        operand = {BINDING_BASE[0]: "A", BINDING_BASE[1]: "B"}.get(f.get("global_address"))
        if operand is None:
            raise Fault(f"the tensor map at {slot:#x} points at {f.get('global_address')}, neither A nor B")
        # the operands as they lie in memory, innermost dimension first: A is M rows of K, B N rows of K (nt) or
        # K rows of N (nn); rows packed; past these dims TMA reads zeros, which is what K's tail relies on
        dims = {"A": [p.k, p.m], "B": [p.n, p.k] if p.layout == "nn" else [p.k, p.n]}[operand]
        want = {"rank": 1, ("global_dim", 0): dims[0], ("global_dim", 1): dims[1], ("global_stride", 0): dims[0] * 2,
                ("element_stride", 0): 1, ("element_stride", 1): 1, "elemtype": {"f16": 6, "bf16": 10}[p.dtype],
                "swizzle_mode": 3, ("box_dim", 0): 64}
        wrong = [key for key, value in want.items() if f.get(key) != value]
        if wrong:
            raise Fault(f"the {operand} tensor map's {wrong[0]} is {f.get(wrong[0])}, not {want[wrong[0]]}")
        extra = set(f) - set(want) - {"global_address", ("box_dim", 1)}
        if extra or ("box_dim", 1) not in f:
            raise Fault(f"the {operand} tensor map has fields {sorted(map(str, extra))} beyond the model's, or no "
                        "outer box dim")
        return {"box": [f[("box_dim", 0)], f[("box_dim", 1)]]}, operand

    def execute(self, timed: bool = True, seed: int = 0) -> _Run:
        if self.grid % self.gemm.cluster:
            raise Fault(f"a grid of {self.grid} workgroups is not whole clusters of {self.gemm.cluster}")
        for cluster in range(self.grid // self.gemm.cluster):
            _Cluster(self, cluster, timed).execute(seed + cluster)
        return self

    def store(self, machine: _Cluster, wg, rows: np.ndarray, cols: np.ndarray, value, source=None) -> None:
        """Elements stored at C[rows, cols], one per storing lane: `value` ("element", accumulator, register
        index, scalar or per lane) of the fragment of each lane of `source` (default: the storing lanes)."""
        if isinstance(value, _Sum):
            np.add.at(self.stored, (rows, cols), 1)
            if machine.timed:
                self.check_sum(wg, rows, cols, value)
            return
        if not (isinstance(value, tuple) and value[0] == "element"):
            raise Fault(f"{wg.name()} stores {value!r}, not an accumulator element")
        if self.cluster_sum:
            raise Fault(f"{wg.name()} stores an accumulator element into C, whose elements are the sums of the "
                        "slices' partial products")
        np.add.at(self.stored, (rows, cols), 1)
        if not machine.timed:
            return
        _, acc, index = value
        a_row, b_col, ks = self.summary(acc)
        if np.any(np.asarray(index) >= len(b_col) // 2):
            raise Fault(f"{wg.name()}: accumulator element {index} of an n{len(b_col)} fragment")
        lanes = (wg.tid[wg.mask] % LANES).astype(np.int64) if source is None else np.asarray(source, dtype=np.int64)
        m, n = fragment(lanes, np.asarray(index))
        # split_k: rows slice × M + row hold the slice's partial product, over its own K steps only
        slices, rows = np.divmod(rows, self.problem.m)
        per_slice = -(-self.problem.k // self.schedule.block_k) // self.schedule.split_k * self.schedule.block_k
        for piece in np.unique(slices):
            want = list(range(int(piece) * per_slice, min(self.problem.k, (int(piece) + 1) * per_slice)))
            if list(ks) != want:
                missing, twice = sorted(set(want) - set(ks)), sorted({k for k in ks if ks.count(k) > 1})
                raise Fault(f"{wg.name()}: an accumulator stored for K slice {int(piece)} sums {len(ks)} k of A and "
                            f"B where the slice has {len(want)} (k {want[0]} to {want[-1]}; missing {missing[:4]}..., "
                            f"twice {twice[:4]}..., others {sorted(set(ks) - set(want))[:4]}...)")
        wrong = (a_row[m] != rows) | (b_col[n] != cols)
        if wrong.any():
            i = int(np.argmax(wrong))
            raise Fault(f"{wg.name()} stores row {a_row[m[i]]} of A times column {b_col[n[i]]} of B into "
                        f"C[{rows[i]}, {cols[i]}]")

    def slices(self) -> list[tuple[int, ...]]:
        """The k of K of each slice, in slice order: split_k equal runs of whole K tiles, the last cut at K."""
        per_slice = -(-self.problem.k // self.schedule.block_k) // self.schedule.split_k * self.schedule.block_k
        return [tuple(range(piece * per_slice, min(self.problem.k, (piece + 1) * per_slice)))
                for piece in range(self.schedule.split_k)]

    def partial(self, acc: _Acc, index: int, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(A row, B column, partial product id) of accumulator element `index` of each of `lanes` (a timed run;
        -2 in an untimed one, whose wgmma record no operands)."""
        if acc.read is None:
            return np.full(len(lanes), -2), np.full(len(lanes), -2), -2
        a_row, b_col, ks = self.summary(acc)
        if index >= len(b_col) // 2:
            raise Fault(f"accumulator element {index} of an n{len(b_col)} fragment")
        m, n = fragment(lanes, np.full(len(lanes), index))
        return a_row[m], b_col[n], self.partials.setdefault(tuple(ks), len(self.partials))

    def check_sum(self, wg, rows: np.ndarray, cols: np.ndarray, value: _Sum) -> None:
        """Each stored sum is of its own element of C (A row and B column) and adds the slices' partial products
        in slice order, (((slice 0 + slice 1) + slice 2) + ...), each slice's the k of its part of K once."""
        lanes = wg.mask
        wrong = (value.rows[lanes] != rows) | (value.cols[lanes] != cols)
        if wrong.any():
            i = int(np.argmax(wrong))
            raise Fault(f"{wg.name()} stores the sum of A row {value.rows[lanes][i]} times B column "
                        f"{value.cols[lanes][i]} into C[{rows[i]}, {cols[i]}]")
        names = {part: ks for ks, part in self.partials.items()}

        def described(part: int) -> str:
            ks = names.get(part)
            return "nothing" if ks is None else f"k {ks[0]}..{ks[-1]} ({len(ks)})" if ks else "no k"
        want = [self.partials.get(ks, -3) for ks in self.slices()]
        parts = [p[lanes] for p in value.parts]
        ok = np.full(len(rows), len(parts) == len(want) and value.fold)
        if ok.all():
            first = ((parts[0] == want[0]) & (parts[1] == want[1])) | ((parts[0] == want[1]) & (parts[1] == want[0]))
            ok = first & np.all([p == w for p, w in zip(parts[2:], want[2:])], axis=0) if len(want) > 2 else first
        if not ok.all():
            i = int(np.argmax(~ok))
            order = "" if value.fold else " (not added one after the other)"
            raise Fault(f"{wg.name()} stores into C[{rows[i]}, {cols[i]}] the sum of "
                        f"{[described(int(p[i])) for p in parts]}{order}; the slices in order are "
                        f"{[described(w) if w >= 0 else 'never computed' for w in want]}")

    def summary(self, acc: _Acc) -> tuple[np.ndarray, np.ndarray, list]:
        """(A row of each fragment row, B column of each fragment column, the k of K it sums in order) of an
        accumulator, after checking that its chain of wgmma reads one row of A and one column of B per fragment row
        and column, the same k on both sides (k past K reads zeros); `store` checks the k against the slice of K
        the element is stored for (all of K without split_k)."""
        if acc.summary is not None:
            return acc.summary
        chain, link = [], acc
        while link is not None:
            chain.append(link.read)
            link = link.previous
        nn = self.problem.layout == "nn"
        a_rows, b_cols, ks = [], [], []
        for read in chain:
            (a_k, a_row), b = read["a"], read["b"]
            b_col, b_k = b if nn else (b[1], b[0])
            for what, values, axis in (("A row", a_row, 1), ("k of A", a_k, 0), ("B column", b_col, 1),
                                       ("k of B", b_k, 0)):
                if not (values == np.take(values, [0], axis=axis)).all():
                    raise Fault(f"a wgmma's {what} varies where the MMA needs it fixed")
            if not (a_k[0] == b_k[0]).all():
                raise Fault(f"a wgmma multiplies A's k {a_k[0].tolist()} with B's k {b_k[0].tolist()}")
            a_rows.append(a_row[:, 0])
            b_cols.append(b_col[:, 0])
            ks.extend(int(k) for k in a_k[0])
        if any((r != a_rows[0]).any() for r in a_rows) or any((c != b_cols[0]).any() for c in b_cols):
            raise Fault("an accumulator's wgmma read different rows of A or columns of B")
        acc.summary = (a_rows[0], b_cols[0], sorted(k for k in ks if 0 <= k < self.problem.k))
        return acc.summary

    def check_stores(self) -> None:
        """Every element of C stored exactly once."""
        if (self.stored != 1).any():
            rows, cols = np.nonzero(self.stored != 1)
            raise Fault(f"C[{rows[0]}, {cols[0]}] is stored {self.stored[rows[0], cols[0]]} times "
                        f"({len(rows)} elements of {self.c_rows}x{self.problem.n} not stored once)")

    def byte_ledger(self) -> dict[tuple[int, int, int], tuple[int, list]]:
        """Per (workgroup, full barrier, phase n): (bytes its n-th expect_tx announces, the loads that complete on
        it: the n-th fill of that stage by every producer of the cluster whose copy lands in this workgroup)."""
        ledger: dict = {}
        for bid, address, count, phase in self.expects:
            ledger[bid, address, phase] = (count, [])
        for issuer, dest, address, size, tensor, x, y, dst, phase in self.loads:
            if phase < 0:
                raise Fault(f"workgroup {issuer} loads on the barrier at shared {address} before announcing bytes")
            ledger.setdefault((dest, address, phase), (0, []))[1].append((issuer, tensor, size))
        return ledger


class _SmCount:
    """Builds programs for a GPU of `count` SMs, so that a persistent grid loops over tiles in a small problem."""

    def __init__(self, count: int | None):
        self.count, self.saved = count, hopper.SM_COUNT

    def __enter__(self):
        if self.count:
            hopper.SM_COUNT = self.count

    def __exit__(self, *_):
        hopper.SM_COUNT = self.saved


_RUNS: dict = {}


def run_of(problem: Gemm, schedule: HopperSchedule, sm_count: int | None = None, timed: bool = True,
           seed: int = 0) -> _Run:
    key = (problem, schedule, sm_count, timed, seed)
    if key not in _RUNS:
        with _SmCount(sm_count):
            text = program(problem, schedule)
        _RUNS[key] = _Run(problem, schedule, text).execute(timed, seed)
    return _RUNS[key]


def reference_tiles(problem: Gemm, s: HopperSchedule, grid: int) -> dict[int, list[tuple[int, int]]]:
    """Per workgroup, the (block row, block column) tiles it should visit, from the docstring's order: clusters
    take `cluster_m` neighbouring block rows of `cluster_n` neighbouring block columns at once (workgroup rank r
    the (r % cluster_m)-th row and (r // cluster_m)-th column); the cluster tiles go in groups of `group_m` block
    rows, cluster column by cluster column within a group, the groups top to bottom (row order when group_m is 1);
    cluster u of the grid's takes the u-th, then every (grid / cluster size)-th after it. With K's slices summed
    in the cluster, a cluster is the split_k slices of one tile: workgroup w takes slice w % split_k of tile
    w // split_k in that order."""
    cm, cn = s.cluster_m, s.cluster_n
    columns, rows = -(-problem.n // (s.block_n * cn)), -(-problem.m // s.block_m)
    cluster_rows = -(-rows // cm)
    if s.group_m == 1:
        order = [(r, c) for r in range(cluster_rows) for c in range(columns)]
    else:
        group = s.group_m // s.cluster_m  # cluster rows per group
        order = [(r, c) for top in range(0, cluster_rows, group) for c in range(columns)
                 for r in range(top, min(top + group, cluster_rows))]
    if s.split_k > 1 and s.split_sum == "cluster":
        return {bid: [(r, c, bid % s.split_k) for r, c in order[bid // s.split_k::grid // s.split_k]]
                for bid in range(grid)}
    clusters = grid // (cm * cn)
    # split_k: the units are every tile of slice 0 in that order, then of slice 1, ...
    units = [(r, c, piece) for piece in range(s.split_k) for r, c in order]
    return {bid: [(cm * r + bid % cm, cn * c + bid % (cm * cn) // cm, piece)
                  for r, c, piece in units[bid // (cm * cn)::clusters]] for bid in range(grid)}


def visited_tiles(run: _Run) -> dict[int, list[tuple[int, int]]]:
    """Per workgroup, the tiles its producer loads, in order: the block row of each A box at the first k of a K
    slice (k = 0 without split_k), the block column of the B box that follows it at that k, and the slice."""
    s, nn = run.schedule, run.problem.layout == "nn"
    per_slice = -(-run.problem.k // s.block_k) // s.split_k * s.block_k
    found: dict[int, list] = {}
    for issuer, dest, _, _, tensor, x, y, _, _ in run.loads:
        if dest != issuer:
            continue
        tiles = found.setdefault(issuer, [])
        if tensor == "A" and x % per_slice == 0:  # its share of the block row's A tile (1/cluster_n of it)
            assert y % (s.block_m // s.cluster_n) == 0, f"workgroup {issuer} loads A from row {y}, not a block row"
            tiles.append([y // s.block_m, None, x // per_slice])
        elif tensor == "B" and (y if nn else x) % per_slice == 0 and tiles and tiles[-1][1] is None:
            assert (y if nn else x) // per_slice == tiles[-1][2], f"workgroup {issuer} loads B of another K slice"
            tiles[-1][1] = (x if nn else y) // s.block_n
    return {bid: [tuple(t) for t in tiles] for bid, tiles in found.items()}


# ---- the tests

S = HopperSchedule
TRUNCF = Epilogue("truncf")
# (problem, schedule, SM count the program is built for (None: the H100's)): every schedule kind, clusters of one
# and two, NT and NN, f16 and bf16, 2 to 4 stages, one and two m64 blocks per consumer, and problem edges: M, N and
# K past a tile multiple, M below block_m, odd N (scalar stores), a cluster row half past M, more tiles than
# workgroups (so the stage ring and the ping-pong turns run on from tile to tile).
CASES = {
    "cooperative-nt-edges": (Gemm(300, 300, 136, "bf16", "nt"), S(128, 256, 64, 3), None),
    "persistent-cluster": (Gemm(520, 200, 192, "bf16", "nt"), S(128, 128, 64, 3, persistent=True, cluster_m=2), 4),
    "pingpong-nn-cluster": (Gemm(200, 328, 136, "f16", "nn"), S(64, 128, 64, 2, kind="pingpong", cluster_m=2), 4),
    "two-m-blocks-odd-n": (Gemm(100, 777, 64, "f16", "nt"), S(256, 128, 64, 4), None),
    "pingpong-groups-of-two": (Gemm(384, 256, 128, "bf16", "nt"), S(128, 128, 64, 2, kind="pingpong", group_m=2), 4),
    "persistent-nn": (Gemm(256, 384, 200, "f16", "nn"), S(128, 128, 64, 4, persistent=True), 4),
    "cluster-groups": (Gemm(640, 256, 64, "bf16", "nt"), S(128, 128, 64, 2, group_m=4, cluster_m=2), None),
    # C rounded to the input type: staged 16-byte rows inside the tiles and pairs at the edges (M and N past the
    # tiles), ping-pong staging whole tiles, N a multiple of 2 but not 8 (pairs only), odd N (single elements)
    "truncf-staged-edges": (Gemm(300, 520, 136, "f16", "nn", epilogue=TRUNCF),
                            S(128, 256, 64, 3, persistent=True, cluster_m=2), 4),
    "truncf-staged-pingpong": (Gemm(256, 384, 128, "bf16", "nt", epilogue=TRUNCF), S(128, 128, 64, 2, kind="pingpong"),
                               4),
    "truncf-pairs": (Gemm(130, 260, 64, "f16", "nt", epilogue=TRUNCF), S(128, 128, 64, 2), None),
    "truncf-odd-n": (Gemm(100, 777, 64, "bf16", "nt", epilogue=TRUNCF), S(256, 128, 64, 2), None),
    # a tile of 48 columns: not whole groups of four 8-column blocks, so no staged rows (pairs throughout)
    "truncf-block-n-48": (Gemm(256, 96, 64, "f16", "nt", epilogue=TRUNCF), S(128, 48, 64, 2), None),
    # split_k: each slice's f32 partial product at rows slice × M on (skinny M, K in slices; with a cluster and
    # a persistent grid looping over more units than workgroups; odd N's single stores)
    "split-k-skinny": (Gemm(32, 520, 512, "bf16", "nt", epilogue=TRUNCF), S(128, 128, 64, 3, persistent=True,
                                                                           split_k=4), 4),
    "split-k-cluster-nn": (Gemm(200, 256, 384, "f16", "nn"), S(128, 128, 64, 2, persistent=True, cluster_m=2,
                                                               split_k=3), 4),
    "split-k-odd-n-pingpong": (Gemm(48, 131, 256, "f16", "nt"), S(64, 128, 64, 2, kind="pingpong", split_k=2), 4),
    # skinny: one consumer warp group on 64-row tiles, K in slices, a cluster, C staged in 16-byte rows
    "split-k-one-consumer-64-rows": (Gemm(32, 520, 512, "bf16", "nt", epilogue=TRUNCF),
                                     S(64, 256, 64, 3, consumers=1, persistent=True, cluster_m=2, group_m=2,
                                       split_k=4), 4),
    # split_k summed in the cluster (split_sum="cluster"): the slices of a tile are a cluster of split_k workgroups
    # (rank r slice r), each one's partial product in its shared memory, each workgroup summing its share of the
    # columns over every rank's in slice order into C (M×N): f32 C in 4-column stores (N a multiple of 4, a tile
    # past N, K's last tile cut short), a 16-bit C per column (N = 130), 16-bit in packed 4-column stores, two
    # consumers (128-row tiles, M past the tile: rows cut at M), f32 per column, 8 slices in groups of 2 block rows
    "cluster-sum-64-rows": (Gemm(33, 200, 488, "bf16", "nt"), S(64, 128, 64, 3, consumers=1, group_m=1, split_k=4,
                                                                 split_sum="cluster"), None),
    "cluster-sum-truncf-n130": (Gemm(33, 130, 512, "bf16", "nt", epilogue=TRUNCF),
                                S(64, 128, 64, 3, consumers=1, group_m=1, split_k=4, split_sum="cluster"), None),
    "cluster-sum-two-consumers-nn-truncf": (Gemm(100, 256, 256, "f16", "nn", epilogue=TRUNCF),
                                            S(128, 128, 64, 3, split_k=2, split_sum="cluster"), None),
    "cluster-sum-two-consumers-n130": (Gemm(100, 130, 200, "f16", "nt"),
                                       S(128, 128, 64, 3, group_m=1, split_k=2, split_sum="cluster"), None),
    # clusters along N (cluster_n): 2x2 sharing A and B (a cluster column half past N: 3 block columns; a cluster
    # row half past M), 1x2 sharing A alone (nn, ping-pong), 2x2 with K in slices, with C staged (16-bit) and with one
    # tile per workgroup
    "cluster-2x2-edges": (Gemm(300, 600, 136, "bf16", "nt"), S(128, 256, 64, 3, persistent=True, cluster_m=2,
                                                                 cluster_n=2, group_m=2), 8),
    "cluster-1x2-nn-pingpong": (Gemm(200, 328, 136, "f16", "nn"), S(64, 128, 64, 2, kind="pingpong", cluster_n=2), 4),
    "cluster-2x2-split-k": (Gemm(256, 512, 512, "f16", "nn"), S(128, 128, 64, 2, persistent=True, cluster_m=2,
                                                                  cluster_n=2, split_k=2), 8),
    "cluster-2x2-truncf-staged": (Gemm(256, 520, 192, "bf16", "nt", epilogue=TRUNCF),
                                  S(128, 128, 64, 2, persistent=True, cluster_m=2, cluster_n=2, group_m=4), 8),
    "cluster-2x2-one-tile-each": (Gemm(130, 250, 64, "bf16", "nt"), S(128, 128, 64, 2, cluster_m=2, cluster_n=2),
                                  None),
    # K reversed every other tile of a workgroup (serpentine_k): a cluster of two looping over 4 tiles each, K's
    # last tile cut short; and with K in slices (each slice's steps reversed within it) on an nn B
    "serpentine-k-cluster": (Gemm(520, 512, 200, "bf16", "nt", epilogue=TRUNCF),
                             S(128, 128, 64, 3, persistent=True, cluster_m=2, serpentine_k=True), 4),
    "serpentine-k-split-nn": (Gemm(200, 256, 384, "f16", "nn"), S(128, 128, 64, 2, persistent=True, cluster_m=2,
                                                                  split_k=3, serpentine_k=True), 4),
    # ... in ping-pong (each consumer's tiles alternate directions as the workgroup's do) in clusters along N
    # (batches: tests/unit/test_hopper_batch_coords.py)
    "serpentine-k-pingpong-1x2": (Gemm(200, 520, 200, "f16", "nt"), S(64, 128, 64, 2, kind="pingpong", cluster_n=2,
                                                                      serpentine_k=True), 4),
    "cluster-sum-8-slices-groups": (Gemm(100, 200, 512, "bf16", "nt", epilogue=TRUNCF),
                                    S(64, 128, 64, 2, consumers=1, group_m=2, split_k=8, split_sum="cluster"), None),
}


def check_c(problem: Gemm, schedule: HopperSchedule, sm_count: int | None, seeds=(0, 1)) -> None:
    for seed in seeds:
        run_of(problem, schedule, sm_count, seed=seed).check_stores()


def check_bytes(problem: Gemm, schedule: HopperSchedule, sm_count: int | None) -> None:
    run = run_of(problem, schedule, sm_count, timed=False)
    tile_bytes = (schedule.block_m + schedule.block_n) * schedule.block_k * 2
    ledger = run.byte_ledger()
    assert ledger, "no expect_tx at all"
    for (bid, address, phase), (announced, loads) in ledger.items():
        landed = sum(size for _, _, size in loads)
        assert announced == landed == tile_bytes, (
            f"workgroup {bid}'s barrier at shared {address}, phase {phase}: expects {announced} bytes, its loads "
            f"move {landed} ({loads}); a stage is {tile_bytes}")
        # the parts come from the workgroups of its cluster on its block row (A's shares) and column (B's)
        cm, size = schedule.cluster_m, schedule.cluster_m * schedule.cluster_n
        rank = bid % size
        assert {issuer for issuer, tensor, _ in loads if tensor == "B"} == \
            {bid - rank + r for r in range(size) if r // cm == rank // cm}
        assert {issuer for issuer, tensor, _ in loads if tensor == "A"} == \
            {bid - rank + r for r in range(size) if r % cm == rank % cm}


def check_tiles(problem: Gemm, schedule: HopperSchedule, sm_count: int | None) -> None:
    run = run_of(problem, schedule, sm_count, timed=False)
    visited = visited_tiles(run)
    assert visited == reference_tiles(problem, schedule, run.grid)
    columns, rows = -(-problem.n // schedule.block_n), -(-problem.m // schedule.block_m)
    real = sorted(t for tiles in visited.values() for t in tiles if t[0] < rows and t[1] < columns)
    assert real == [(r, c, piece) for r in range(rows) for c in range(columns) for piece in range(schedule.split_k)]
    cm, cn = schedule.cluster_m, schedule.cluster_n
    size = cm * cn
    for bid in range(0, run.grid, size):
        steps = [visited[bid + rank] for rank in range(size)]
        assert all(len(s) == len(steps[0]) for s in steps)
        for partners in zip(*steps):
            assert [(r - rank % cm, c - rank // cm, piece) for rank, (r, c, piece) in enumerate(partners)] == \
                [partners[0]] * size
            assert partners[0][0] % cm == 0 and partners[0][1] % cn == 0
    sms = sm_count or hopper.SM_COUNT
    units = -(-columns // cn) * -(-rows // cm) * schedule.split_k
    if schedule.loops_over_tiles:  # as few rounds as the SMs allow, on the fewest clusters that keep them
        # at most the clusters that run at once: an H200's 66 of two and 30 of four (ncu's Max Active Clusters)
        rounds = -(-units // min(sms // size, {2: 66, 4: 30}.get(size, sms)))
        clusters = run.grid // size
        assert run.grid <= sms and max(map(len, visited.values())) == rounds
        assert clusters == 1 or -(-units // (clusters - 1)) > rounds, f"{clusters - 1} clusters keep {rounds} rounds"
    else:
        assert run.grid == units * size


def check_barrier_counts(problem: Gemm, schedule: HopperSchedule, sm_count: int | None) -> None:
    run = run_of(problem, schedule, sm_count, timed=False)
    counts = {(bid, address): count for bid, address, count in run.inits}
    arrivals: dict = {}
    for dest, address, _, count in run.arrivals:
        arrivals[dest, address] = arrivals.get((dest, address), 0) + count
    fills: dict = {}
    for bid, address, _, _ in run.expects:
        arrivals[bid, address] = arrivals.get((bid, address), 0) + 1
        fills[bid, address] = fills.get((bid, address), 0) + 1
    for key, total in arrivals.items():
        assert key in counts and total % counts[key] == 0, f"barrier {key}: {total} arrivals, count {counts.get(key)}"
    for key, n in fills.items():
        assert arrivals[key] == n * counts[key] == n, f"full barrier {key}: {arrivals[key]} arrivals for {n} fills"
    # the producer (warp group 0) waits on a stage's release right before announcing its next fill
    refills = {}
    for bid in {bid for bid, _, _, _ in run.expects}:
        waits = [address for b, index, address, _ in run.waits if (b, index) == (bid, 0)]
        announced = [address for b, address, _, _ in run.expects if b == bid]
        for empty, full in zip(waits, announced[len(announced) - len(waits):]):
            refills[bid, empty] = (bid, full)
    for empty, full in refills.items():
        assert arrivals.get(empty, 0) == fills[full] * counts[empty], (
            f"barrier {empty} gets {arrivals.get(empty, 0)} arrivals for {fills[full]} fills of its stage, count "
            f"{counts[empty]}")
    # cluster barriers: every warp group of the grid arrives and waits as often as every other (with a cluster:
    # once after the barriers' initialisation, once before leaving, and with the slices summed in it once more
    # between the partial products' writes and their reads); none without a cluster
    cluster_sum = schedule.split_k > 1 and schedule.split_sum == "cluster"
    expected = 3 if cluster_sum else 2 if schedule.cluster_m * schedule.cluster_n > 1 else 0
    assert len(run.cluster_syncs) == run.grid * schedule.threads // LANES
    assert set(run.cluster_syncs.values()) == {(expected, expected)}, (
        f"cluster barriers (arrivals, waits) per warp group: {set(run.cluster_syncs.values())}, not {expected} each")


@pytest.mark.parametrize("case", CASES)
def test_every_element_of_c_is_its_own_dot_product_stored_once(case):
    """The program run on the model cluster (two interleavings): every element of C inside M × N is stored exactly
    once, none outside, each with the accumulator of its own row of A and column of B summed over every k of K
    once; no deadlock, stale read or overwrite of a stage being read, every barrier ends between phases."""
    check_c(*CASES[case])


@pytest.mark.parametrize("case", CASES)
def test_each_full_barrier_expects_the_bytes_that_land_on_it(case):
    """Per workgroup, full barrier and phase: the bytes expect_tx announces equal the bytes of the loads that
    complete on it (box × 2 bytes, for every workgroup of the cluster whose load lands there: its own A and B
    share, the others' multicast B shares), which are one A tile and one B tile of the schedule."""
    check_bytes(*CASES[case])


@pytest.mark.parametrize("case", CASES)
def test_the_workgroups_visit_every_tile_once_in_grouped_cluster_order(case):
    """From the loads each producer issues: every tile of the problem visited once, by the workgroup the grouped
    order assigns it to, cluster partners on neighbouring block rows of one column at the same step (the second
    may be a block row past M), no workgroup more rounds than the fewest the SM count allows."""
    check_tiles(*CASES[case])


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][1].loops_over_tiles])
def test_each_workgroup_steps_through_k_in_order_or_reversed_on_its_odd_tiles(case):
    """From the A boxes each producer loads for itself, in issue order: per tile of the workgroup, K's tiles of
    its slice once each, ascending, or (serpentine_k) descending on the workgroup's odd tiles (its 2nd, 4th, ...)."""
    problem, schedule, sm_count = CASES[case]
    run = run_of(problem, schedule, sm_count, timed=False)
    steps = -(-problem.k // schedule.block_k) // schedule.split_k  # K tiles of a slice
    found: dict[int, list[int]] = {}
    for issuer, dest, _, _, tensor, x, _, _, _ in run.loads:
        if tensor == "A" and dest == issuer:
            found.setdefault(issuer, []).append(x // schedule.block_k)
    for bid, ks in found.items():
        assert len(ks) % steps == 0
        for i in range(len(ks) // steps):
            tile = ks[i * steps:(i + 1) * steps]
            first = tile[0] // steps * steps if schedule.split_k > 1 else 0  # the slice's first K tile
            order = list(range(first, first + steps))
            assert tile == (order[::-1] if schedule.serpentine_k and i % 2 else order), (bid, i, tile)


@pytest.mark.parametrize("case", CASES)
def test_each_barrier_is_initialised_for_the_arrivals_of_a_phase(case):
    """Over a run: each barrier receives a whole number of phases of arrivals (its init count each), a `full`
    barrier one phase per fill, and the barrier a producer waits on before refilling a stage one phase per fill
    of that stage (every reading warp group of every workgroup whose loads land there releases it once)."""
    check_barrier_counts(*CASES[case])


def _wide_grid() -> dict[str, tuple]:
    """Every kind × cluster × layout × element type × stage count, each with a block shape the kind takes and a
    problem at or one off the tile multiples in M, N and K (drawn with a fixed seed), on a GPU of few SMs."""
    rng, cases = random.Random(29), {}
    rounding = random.Random(30)  # C in f32 or rounded to the input type, drawn apart (the shapes stay as they were)
    kinds = {"cooperative": {}, "persistent": {"persistent": True}, "pingpong": {"kind": "pingpong"}}
    shapes = {"cooperative": [(128, 128), (128, 256), (256, 128), (128, 64)],
              "pingpong": [(64, 128), (64, 256), (128, 128), (128, 64)]}
    for name, extra in kinds.items():
        for cluster in (1, 2):
            for layout in ("nt", "nn"):
                for dtype in ("f16", "bf16"):
                    for stages in (2, 3, 4):
                        for _ in range(20):  # a shape and group the combination takes
                            bm, bn = rng.choice(shapes[extra.get("kind", "cooperative")])
                            schedule = S(bm, bn, 64, stages, cluster_m=cluster, group_m=rng.choice([1, 2, 4, 8]),
                                         **extra)
                            step = 8 if layout == "nn" else 1
                            m = max(1, bm * rng.choice([1, 2, 3]) + rng.choice([-1, 0, 1]) * rng.choice([1, bm // 2]))
                            n = max(step, bn * rng.choice([1, 2]) + step * rng.choice([-1, 0, 1]))
                            k = 64 * rng.choice([1, 2, 3]) + rng.choice([-8, 0, 8])
                            epilogue = TRUNCF if rounding.random() < 0.5 else Epilogue()
                            problem = Gemm(m, n, k, dtype, layout, epilogue=epilogue)
                            try:
                                schedule.check()
                                hopper.check_problem(problem, schedule)
                            except hopper.HopperError:
                                continue
                            rounded = "-truncf" if epilogue == TRUNCF else ""
                            cases[f"{name}-c{cluster}-{layout}-{dtype}{rounded}-s{stages}-{bm}x{bn}-{m}x{n}x{k}"] = (
                                problem, schedule, rng.choice([2, 3, 4, 6]))
                            break
    # K's slices summed in the cluster: each layout × one or two consumers (64- or 128-row tiles) × C in f32 or
    # rounded, with 2, 4 or 8 slices, block_n 64 to 256 as the sum's shared memory allows, and M, N (N not a
    # multiple of 4 for nt) and K (the last K tile cut short) at or off the tile multiples
    draw = random.Random(31)
    for layout in ("nt", "nn"):
        for consumers in (1, 2):
            for epilogue in (Epilogue(), TRUNCF):
                for _ in range(50):
                    bm, bn, split = 64 * consumers, draw.choice([64, 128, 256]), draw.choice([2, 4, 8])
                    schedule = S(bm, bn, 64, draw.choice([2, 3, 4]), consumers=consumers,
                                 group_m=draw.choice([1, 2, 4]), split_k=split, split_sum="cluster")
                    step = 8 if layout == "nn" else draw.choice([1, 2, 4])
                    m = max(1, bm * draw.choice([1, 2]) + draw.choice([-1, 0, 1]) * draw.choice([1, bm // 2]))
                    n = max(step, bn * draw.choice([1, 2]) + step * draw.choice([-1, 0, 1]))
                    k = 64 * split * draw.choice([1, 2]) - draw.choice([0, 8, 56])
                    problem = Gemm(m, n, k, draw.choice(["f16", "bf16"]), layout, epilogue=epilogue)
                    try:
                        schedule.check()
                        hopper.check_problem(problem, schedule)
                    except hopper.HopperError:
                        continue
                    rounded = "-truncf" if epilogue == TRUNCF else ""
                    cases[f"cluster-sum-{layout}-{problem.dtype}{rounded}-k{split}-{bm}x{bn}-{m}x{n}x{k}"] = (
                        problem, schedule, 4)
                    break
    # clusters along N (1x2 sharing A, 2x2 sharing A and B): each kind x layout x cluster shape, drawn apart
    along = random.Random(32)
    for name, extra in kinds.items():
        for cluster_m in (1, 2):
            for layout in ("nt", "nn"):
                for _ in range(20):
                    bm, bn = along.choice(shapes[extra.get("kind", "cooperative")])
                    schedule = S(bm, bn, 64, along.choice([2, 3, 4]), cluster_m=cluster_m, cluster_n=2,
                                 group_m=along.choice([1, 2, 4, 8]), **extra)
                    step = 8 if layout == "nn" else 1
                    m = max(1, bm * along.choice([1, 2, 3]) + along.choice([-1, 0, 1]) * along.choice([1, bm // 2]))
                    n = max(step, bn * along.choice([1, 2, 3]) + step * along.choice([-1, 0, 1]))
                    k = 64 * along.choice([1, 2, 3]) + along.choice([-8, 0, 8])
                    problem = Gemm(m, n, k, along.choice(["f16", "bf16"]), layout,
                                   epilogue=TRUNCF if along.random() < 0.5 else Epilogue())
                    try:
                        schedule.check()
                        hopper.check_problem(problem, schedule)
                    except hopper.HopperError:
                        continue
                    rounded = "-truncf" if problem.epilogue == TRUNCF else ""
                    cases[f"{name}-c{cluster_m}x2-{layout}-{problem.dtype}{rounded}-s{schedule.stages}-{bm}x{bn}-"
                          f"{m}x{n}x{k}"] = (problem, schedule, along.choice([4, 8, 12]))
                    break
    # the H100's own SM count with more tiles than SMs (the persistent grid's rounds as built for the GPU)
    cases["h100-grid-persistent-128x8"] = (Gemm(1024, 168, 64, "bf16", "nt"), S(128, 8, 64, 2, persistent=True), None)
    cases["h100-grid-pingpong-cluster"] = (Gemm(1100, 336, 72, "f16", "nt"),
                                           S(64, 16, 64, 2, kind="pingpong", cluster_m=2), None)
    # clusters of 2x2 on the full GPU: more cluster tiles than the 30 clusters that run at once (33 would fit the
    # SMs): 66 cluster tiles, 3 rounds on 22 clusters (2 on 33)
    cases["h100-grid-persistent-2x2"] = (Gemm(1500, 1400, 72, "bf16", "nt"),
                                         S(128, 64, 64, 2, persistent=True, cluster_m=2, cluster_n=2), None)
    return cases


WIDE = _wide_grid()


@pytest.mark.slow
@pytest.mark.parametrize("case", WIDE)
def test_the_oracles_hold_over_a_wide_grid_of_schedules_and_edges(case):
    """Each oracle above on the wide grid (three interleavings each; one on the H100-sized grids)."""
    problem, schedule, sm_count = WIDE[case]
    try:
        check_c(problem, schedule, sm_count, seeds=range(3 if sm_count else 1))
        for check in (check_bytes, check_tiles, check_barrier_counts):
            check(problem, schedule, sm_count)
    finally:
        _RUNS.clear()
