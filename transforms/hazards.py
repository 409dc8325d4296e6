"""Warp-group schedules as programs, and the hazard checker that proves them free of LDS races.

A schedule is a program per wave group: global->LDS loads (counted by the wave's vmcnt), LDS reads into
registers (lgkmcnt), MFMA clusters, waits, priority changes and barriers. All waves of a group run the same
program; the n-th `s_barrier` any wave executes meets the n-th of every other wave, wherever it sits in the
code, which is how a conditional barrier before the loop staggers one group a whole phase behind the other.

`ProgramBuilder` derives every wait from what must be retired (`wait_writes("B0")` becomes the vmcnt that
leaves only younger loads in flight, since the counters retire in order): no wait count is a literal.
`check` simulates the barrier epochs: an asynchronous access lasts from its issue until the wait that retires
it, so it may touch LDS at any point of those epochs. Two accesses of one buffer, at least one a write, by
different waves (other groups, or the other waves of the same group, since every buffer is written and read
collectively) must not share an epoch. An MFMA may only use reads its own wave has waited for, and every group
must execute the same number of barriers. A violation is a `Hazard` naming the epoch, the buffer and the
groups and operations involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .errors import UserError


@dataclass(frozen=True)
class Op:
    # "load" (global->LDS, vmcnt) | "fetch" (global->VGPR, vmcnt) | "store" (VGPR->LDS, lgkmcnt) |
    # "read" (LDS->VGPR, lgkmcnt) | "mma" | "wait_vm" | "wait_lgkm" | "barrier" | "setprio"
    kind: str
    buffer: str | None = None  # LDS buffer written (load, store), read (read), or destined for (fetch)
    count: int = 1  # hardware instructions issued (vm or lgkm counter increments)
    value: int | None = None  # the counter value of a wait, or the priority of setprio
    uses: tuple[str, ...] = ()  # buffers whose register copies an MFMA cluster consumes
    phase: str = ""  # where in the schedule the op sits, for messages and pictures

    def describe(self) -> str:
        if self.kind in ("wait_vm", "wait_lgkm"):
            return f"s_waitcnt {'vmcnt' if self.kind == 'wait_vm' else 'lgkmcnt'}({self.value})"
        if self.kind == "setprio":
            return f"s_setprio {self.value}"
        if self.kind == "mma":
            return f"mfma×{self.count}({', '.join(self.uses)})"
        if self.kind == "barrier":
            return "s_barrier"
        if self.kind == "fetch":
            return f"fetch→regs {self.buffer}×{self.count}"
        return f"{self.kind} {self.buffer}×{self.count}"


@dataclass(frozen=True)
class Program:
    name: str
    groups: tuple[tuple[Op, ...], ...]
    group_names: tuple[str, ...]
    waves_per_group: int

    def with_group(self, index: int, ops: tuple[Op, ...]) -> Program:
        groups = list(self.groups)
        groups[index] = ops
        return replace(self, groups=tuple(groups))


class Hazard(UserError, ValueError):
    """A schedule that races or waits wrongly; the message names the epoch, buffer and waves involved."""


@dataclass
class ProgramBuilder:
    """Builds one group's program, keeping its in-flight counters so waits can be derived, not written."""

    vm: list[str] = field(default_factory=list)  # buffers of in-flight loads, oldest first
    lgkm: list[str] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    phase: str = ""

    def load(self, buffer: str, count: int) -> None:
        self.ops.append(Op("load", buffer, count, phase=self.phase))
        self.vm += [buffer] * count

    def fetch(self, buffer: str, count: int) -> None:
        """Global memory into registers, bound for LDS buffer `buffer` by a later `store`."""
        self.ops.append(Op("fetch", buffer, count, phase=self.phase))
        self.vm += [f"fetch:{buffer}"] * count

    def store(self, buffer: str, count: int) -> None:
        self.ops.append(Op("store", buffer, count, phase=self.phase))
        self.lgkm += [buffer] * count

    def wait_fetches(self, *buffers: str) -> None:
        self._wait("wait_vm", self.vm, tuple(f"fetch:{b}" for b in buffers))

    def wait_stores(self, *buffers: str) -> None:
        self._wait("wait_lgkm", self.lgkm, buffers)

    def fill_through_registers(self, *loads: tuple[str, int]) -> None:
        """Fetch every (buffer, count) into registers, wait for them, store them into LDS and wait for that."""
        for buffer, count in loads:
            self.fetch(buffer, count)
        self.wait_fetches(*(buffer for buffer, _ in loads))
        for buffer, count in loads:
            self.store(buffer, count)
        self.wait_stores(*(buffer for buffer, _ in loads))

    def read(self, buffer: str, count: int) -> None:
        self.ops.append(Op("read", buffer, count, phase=self.phase))
        self.lgkm += [buffer] * count

    def mma(self, count: int, *uses: str) -> None:
        self.ops.append(Op("mma", count=count, uses=uses, phase=self.phase))

    def setprio(self, priority: int) -> None:
        self.ops.append(Op("setprio", value=priority, phase=self.phase))

    def barrier(self) -> None:
        self.ops.append(Op("barrier", phase=self.phase))

    def wait_writes(self, *buffers: str) -> None:
        """Wait until every in-flight load into `buffers` has landed (vmcnt retires in issue order)."""
        self._wait("wait_vm", self.vm, buffers)

    def wait_reads(self, *buffers: str) -> None:
        self._wait("wait_lgkm", self.lgkm, buffers)

    def _wait(self, kind: str, queue: list[str], buffers: tuple[str, ...]) -> None:
        last = max((i for i, b in enumerate(queue) if b in buffers), default=-1)
        if last < 0:
            return  # nothing of these buffers is in flight
        keep = len(queue) - last - 1
        self.ops.append(Op(kind, value=keep, phase=self.phase))
        del queue[: last + 1]


@dataclass(frozen=True)
class Access:
    group: int
    buffer: str
    write: bool
    first_epoch: int
    last_epoch: int
    op: Op


def check(program: Program) -> list[Access]:
    """Raise Hazard if `program` can race or read before its wait; return the LDS accesses it proved safe."""
    barriers = [sum(op.kind == "barrier" for op in ops) for ops in program.groups]
    if len(set(barriers)) > 1:
        counts = ", ".join(f"{n} executes {b}" for n, b in zip(program.group_names, barriers))
        raise Hazard(f"{program.name}: barrier counts differ ({counts}): the workgroup deadlocks.")
    end = barriers[0]
    accesses = []
    for group, ops in enumerate(program.groups):
        accesses += _simulate(program, group, ops, end)
    for i, a in enumerate(accesses):
        for b in accesses[i + 1:]:
            if a.buffer != b.buffer or not (a.write or b.write):
                continue
            if a.first_epoch <= b.last_epoch and b.first_epoch <= a.last_epoch:
                epoch = max(a.first_epoch, b.first_epoch)
                who = lambda x: (f"{program.group_names[x.group]} {'writes' if x.write else 'reads'} "  # noqa: E731
                                 f"{x.buffer} ({x.op.phase}, in flight in epochs {x.first_epoch}-{x.last_epoch})")
                raise Hazard(f"{program.name}: LDS race on {a.buffer} in epoch {epoch}: {who(a)} while {who(b)}.")
    return accesses


def _named(op: Op) -> str:
    """The LDS buffer of a load, fetch, store or read (each names one)."""
    if op.buffer is None:
        raise Hazard(f"a {op.kind} op ({op.phase or 'no phase'}) names no LDS buffer.")
    return op.buffer


def _wait(op: Op) -> int:
    """The counter value a wait waits down to."""
    if op.value is None:
        raise Hazard(f"a {op.kind} op ({op.phase or 'no phase'}) states no counter value.")
    return op.value


def _simulate(program: Program, group: int, ops: tuple[Op, ...], end: int) -> list[Access]:
    name = program.group_names[group]
    epoch, vm, lgkm, done = 0, [], [], []
    registers: dict[str, bool] = {}  # buffer -> register copy (from LDS) complete
    fetched: dict[str, bool] = {}  # buffer -> register copy (from global memory, bound for LDS) complete
    for op in ops:
        if op.kind == "barrier":
            epoch += 1
        elif op.kind in ("load", "fetch"):
            vm += [(op, epoch)] * op.count
            if op.kind == "fetch":
                fetched[_named(op)] = False
        elif op.kind == "store":
            if not fetched.get(_named(op), False):
                raise Hazard(f"{program.name}: {name} stores {op.buffer} in epoch {epoch} ({op.phase}) before the "
                             "vmcnt wait that retires its global fetch.")
            lgkm += [(op, epoch)] * op.count
        elif op.kind == "read":
            lgkm += [(op, epoch)] * op.count
            registers[_named(op)] = False
        elif op.kind in ("wait_vm", "wait_lgkm"):
            queue = vm if op.kind == "wait_vm" else lgkm
            while len(queue) > _wait(op):
                issued, first = queue.pop(0)
                if issued.kind == "fetch":
                    if not any(q[0] is issued for q in vm):
                        fetched[_named(issued)] = True
                    continue  # registers only: no LDS access
                done.append(Access(group, _named(issued), issued.kind in ("load", "store"), first, epoch, issued))
                if issued.kind == "read" and not any(q[0].buffer == issued.buffer for q in lgkm):
                    registers[_named(issued)] = True
        elif op.kind == "mma":
            pending = [b for b in op.uses if not registers.get(b, False)]
            if pending:
                raise Hazard(f"{program.name}: {name}'s MFMA cluster in epoch {epoch} ({op.phase}) uses {pending[0]} "
                             "before the lgkmcnt wait that retires its LDS reads.")
    done += [Access(group, _named(o), o.kind in ("load", "store"), first, end, o) for o, first in vm + lgkm
             if o.kind != "fetch"]
    # one access per issuing op: merge the per-instruction windows of the same op
    merged: dict[int, Access] = {}
    for a in done:
        key = id(a.op)
        if key in merged:
            m = merged[key]
            merged[key] = replace(m, first_epoch=min(m.first_epoch, a.first_epoch),
                                  last_epoch=max(m.last_epoch, a.last_epoch))
        else:
            merged[key] = a
    return list(merged.values())
