"""A cycle-level model of one compute unit running the waves of its resident workgroups.

Trace-driven: each wave arrives as the list of costed ops it executed, in order (`ops.Op`, from the functional
emulator's run or written by hand), with the LDS bank passes of each LDS execution. The model owns no
semantics, only time, so the emulator and the model stay apart and a trace can be replayed under other costs.

The rules, each a published fact or a named simplification:
- Waves sit on SIMDs round-robin (wave i on SIMD i mod SIMDs). The sequencer visits SIMD s at the clocks t with
  t ≡ s (mod issue_interval) (CDNA: one SIMD every clock, each every 4 clocks; RDNA: every SIMD every clock).
- At a visit it issues at most one instruction per category (VALU incl. MFMA, SALU/SMEM, LDS, VMEM, branch) and at
  most one per wave, choosing waves by priority (`s_setprio`, higher first) and then age (lower id first).
- A wave issues in order. Its next op issues when its sources are ready, its unit is free and, for `s_waitcnt`,
  when at most the given number of its vm or lgkm ops are outstanding.
- VALU holds the SIMD's vector port `busy` clocks; its result is ready `latency` clocks after issue. An MFMA holds
  the port for one VALU issue and the SIMD's matrix pipe for its `busy` clocks; a following MFMA that reads the
  same registers as SrcC waits only for the pipe (accumulation in pipe order); any other reader waits
  `mma_read_extra` clocks more. Another wave's VALU may issue on the SIMD while the matrix pipe is busy, where
  the target's matrix instructions co-execute (`mma_coexec`; RDNA3's WMMAs hold the VALU for their whole run).
- LDS ops queue on the CU's LDS pipe for their bank passes (one pass per clock, as the emulator counts them:
  a conflict-free wave64 b128 access is 8 passes over 32 banks); data arrive `lds_latency` after the last pass.
- VMEM ops queue on the CU's vector memory path for bytes / vmem_bytes_per_clk clocks; data arrive
  `vmem_latency` later. Counters retire in issue order.
- `s_barrier` releases the workgroup's waves `barrier_latency` clocks after the last one arrives (waves that
  ended count as arrived); `s_nop k` stalls the wave k+1 issue visits; `s_sleep k` 64·k clocks.
Every clock of every live wave is attributed to one state: issuing, or stalled on vmcnt, lgkmcnt, barrier, a
dependency, the issue port (its unit busy or another wave chosen), or a fixed delay (nop, sleep, latency).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from .ops import BRANCH, INTERNAL, LDS, SALU, VALU, VMEM, Op, TimingError

MAX_CYCLES = 50_000_000


@dataclass
class _Wave:
    id: int
    simd: int
    group: int
    ops: list[Op]
    lds_passes: list[int]  # per LDS execution, in order
    pc: int = 0
    lds_index: int = 0
    ready_at: int = 0
    prio: int = 0
    vm: deque = field(default_factory=deque)  # completion clocks of outstanding vm ops
    lgkm: deque = field(default_factory=deque)
    reg_ready: dict = field(default_factory=dict)
    acc_ready: dict = field(default_factory=dict)
    at_barrier: bool = False
    last_done: int = 0  # when the latest of its issued ops completes
    marks: frozenset = frozenset()  # trace positions whose issue clock is recorded
    mark_times: list = field(default_factory=list)
    events: list | None = None  # with a timeline: (clock, clocks, class) of each issued instruction
    spans: list | None = None  # with a timeline: [start, clocks, state] of each run of one state
    done: bool = False
    finish: int = 0
    state: str = "issue"


@dataclass
class _Simd:
    valu_free: int = 0
    mma_free: int = 0
    mma_busy: int = 0  # clocks the matrix pipe was busy


@dataclass
class _Pipe:
    """A unit of the CU that serves one op at a time, in arrival order."""

    free: int = 0
    busy: int = 0

    def serve(self, t: int, clocks: int) -> int:
        """Queue an op arriving at `t` for `clocks`; the clock its service ends."""
        self.free = max(t, self.free) + clocks
        self.busy += clocks
        return self.free


@dataclass(frozen=True)
class CuResult:
    cycles: int  # clock at which the last wave ended
    finish: tuple[int, ...]  # per wave
    stalls: dict  # state -> clocks, summed over waves
    mma_busy: tuple[int, ...]  # per SIMD
    issued: dict  # category -> instructions
    lds_busy: int
    vmem_busy: int
    marks: tuple = ()  # per wave, the issue clocks of its marked trace positions
    events: tuple = ()  # with a timeline, per wave: (clock, clocks, class) of each issued instruction
    spans: tuple = ()  # with a timeline, per wave: (start, clocks, state) of each run of one state

    @property
    def mma_utilization(self) -> float:
        """Fraction of the SIMDs' clocks their matrix pipes were busy."""
        return sum(self.mma_busy) / (len(self.mma_busy) * self.cycles) if self.cycles else 0.0


class CuModel:
    def __init__(self, timing, waves: list[list[Op]], groups: list[int] | None = None,
                 lds_passes: list[list[int]] | None = None, simds: int = 4,
                 marks: list[list[int]] | None = None, timeline: bool = False):
        self.timing = timing
        self.simds = [_Simd() for _ in range(simds)]
        self.waves = [_Wave(i, i % simds, (groups or [0] * len(waves))[i], list(ops),
                            list((lds_passes or [[]] * len(waves))[i])) for i, ops in enumerate(waves)]
        self.lds, self.vmem = _Pipe(), _Pipe()  # the CU's LDS bank passes and its vector memory return path
        self.stalls: Counter = Counter()
        self.issued: Counter = Counter()
        self.on_simd = [[w for w in self.waves if w.simd == s] for s in range(simds)]
        for w, marked in zip(self.waves, marks or []):
            w.marks = frozenset(marked)
        if timeline:
            for w in self.waves:
                w.events, w.spans = [], []

    # ---- readiness
    def _outstanding(self, queue: deque, t: int) -> int:
        while queue and queue[0] <= t:
            queue.popleft()
        return len(queue)

    def _sources_ready(self, w: _Wave, op: Op, t: int) -> bool:
        for reg in op.awaits:  # sources, and writes after an in-flight load or MFMA into the same registers
            if w.reg_ready.get(reg, 0) > t:
                return False
        for reg in op.accumulates:
            if w.acc_ready.get(reg, w.reg_ready.get(reg, 0)) > t:
                return False
        return True

    # ---- one visit of one SIMD at clock t
    def _visit(self, simd_index: int, t: int) -> bool:
        simd = self.simds[simd_index]
        used: set[str] = set()
        issued_any = False
        candidates = [w for w in self.on_simd[simd_index] if not w.done]
        for w in sorted(candidates, key=lambda w: (-w.prio, w.id)):
            if w.at_barrier:
                w.state = "barrier"
                continue
            if w.ready_at > t:
                continue  # its state stays what delayed it (nop, sleep, latency)
            op = w.ops[w.pc]
            if op.category == INTERNAL:
                issued_any |= self._sequencer(w, op, t)
                continue
            if op.category in used:
                w.state = "issue"
                continue
            if not self._sources_ready(w, op, t):
                w.state = "dependency"
                continue
            if op.category == VALU and (simd.valu_free > t or (op.kind == "mma" and simd.mma_free > t)):
                w.state = "issue"
                continue
            used.add(op.category)
            self._issue(w, simd, op, t)
            issued_any = True
        return issued_any

    def _sequencer(self, w: _Wave, op: Op, t: int) -> bool:
        timing = self.timing
        if w.pc in w.marks and op.kind not in ("waitcnt", "barrier"):
            w.mark_times.append(t)
        if op.kind == "waitcnt":
            if op.wait_vm is not None and self._outstanding(w.vm, t) > op.wait_vm:
                w.state = "vmcnt"
                return False
            if op.wait_lgkm is not None and self._outstanding(w.lgkm, t) > op.wait_lgkm:
                w.state = "lgkmcnt"
                return False
        elif op.kind == "barrier":
            w.at_barrier, w.state = True, "barrier"
            group = [v for v in self.waves if v.group == w.group]
            if all(v.at_barrier or v.done for v in group):
                for v in group:
                    if v.at_barrier:
                        v.at_barrier = False
                        v.pc += 1
                        v.ready_at = t + timing.barrier_latency
                        v.state = "barrier"
            return True
        elif op.kind == "nop":
            w.ready_at, w.state = t + (op.value + 1) * timing.issue_interval, "delay"
        elif op.kind == "sleep":
            w.ready_at, w.state = t + 64 * op.value, "delay"
        elif op.kind == "end":
            w.done, w.finish = True, max(t, w.last_done)  # the wave's work ends when its last op completes
            w.pc += 1
            return True
        w.pc += 1
        if op.kind in ("waitcnt", "hint"):
            w.state = "issue"
        return True

    def _issue(self, w: _Wave, simd: _Simd, op: Op, t: int) -> None:
        timing = self.timing
        if w.pc in w.marks:
            w.mark_times.append(t)
        if w.events is not None:
            w.events.append((t, max(1, op.busy if op.kind == "mma" else timing.valu_cycles), op.kind))
        self.issued[op.category] += 1
        w.pc += 1
        w.state = "issue"
        w.ready_at = t + 1
        if op.kind == "mma":
            simd.valu_free = t + (timing.valu_cycles if timing.mma_coexec else op.busy)
            simd.mma_free = t + op.busy
            simd.mma_busy += op.busy
            w.last_done = max(w.last_done, t + op.busy)
            for reg in op.writes:
                w.acc_ready[reg] = t + op.busy
                w.reg_ready[reg] = t + op.busy + op.latency
        elif op.category == VALU:
            simd.valu_free = t + op.busy
            w.last_done = max(w.last_done, t + max(op.latency, op.busy))
            for reg in op.writes:
                w.reg_ready[reg] = t + max(op.latency, op.busy)
                w.acc_ready.pop(reg, None)
        elif op.kind == "lds":
            passes = w.lds_passes[w.lds_index] if w.lds_index < len(w.lds_passes) else 1
            w.lds_index += 1
            self._complete(w, w.lgkm, self.lds.serve(t, passes) + op.latency, op)
        elif op.kind == "vmem":
            self._complete(w, w.vm, self.vmem.serve(t, -(-op.bytes // timing.vmem_bytes_per_clk)) + op.latency, op)
        elif op.kind == "smem":
            self._complete(w, w.lgkm, t + op.latency, op)
        elif op.kind == "setprio":
            w.prio = op.value
            w.ready_at = t + op.latency
        elif op.category in (SALU, BRANCH):
            w.ready_at = t + max(1, op.latency)
        else:
            raise TimingError(f"the timing model cannot issue '{op.text}'.")

    @staticmethod
    def _complete(w: _Wave, queue: deque, done: int, op: Op) -> None:
        """The op's data arrive at `done`, but its counter retires in issue order."""
        done = max(done, queue[-1] if queue else 0)
        queue.append(done)
        w.last_done = max(w.last_done, done)
        for reg in op.writes:
            w.reg_ready[reg] = done

    # ---- the loop
    def run(self) -> CuResult:
        interval = self.timing.issue_interval
        t = quiet = 0
        while not all(w.done for w in self.waves):
            if t > MAX_CYCLES:
                raise TimingError(f"the timing model ran {MAX_CYCLES} clocks without the waves ending; the trace "
                                  "seems to wait for something that never comes.")
            for w in self.waves:
                if not w.done and w.pc >= len(w.ops):
                    raise TimingError(f"wave {w.id}'s trace ends without s_endpgm.")
            visited = [s for s in range(len(self.simds)) if t % interval == s % interval]
            issued = False
            for s in visited:
                issued |= self._visit(s, t)
            # After a whole round of visits with nothing issued, jump to the next clock something can change; the
            # next round then visits every SIMD again.
            quiet = 0 if issued else quiet + 1
            step = self._idle_step(t) if quiet >= interval else 1
            if step > 1:
                quiet = 0
            for w in self.waves:
                if not w.done:
                    self.stalls[w.state] += step
                    if w.spans is not None:
                        if w.spans and w.spans[-1][2] == w.state and w.spans[-1][0] + w.spans[-1][1] == t:
                            w.spans[-1][1] += step
                        else:
                            w.spans.append([t, step, w.state])
            t += step
        return CuResult(max(w.finish for w in self.waves), tuple(w.finish for w in self.waves), dict(self.stalls),
                        tuple(s.mma_busy for s in self.simds), dict(self.issued), self.lds.busy, self.vmem.busy,
                        tuple(tuple(w.mark_times) for w in self.waves),
                        tuple(tuple(w.events or ()) for w in self.waves),
                        tuple(tuple(tuple(x) for x in w.spans or ()) for w in self.waves))

    def _idle_step(self, t: int) -> int:
        """Nothing issued at t: jump to the next clock at which a wave may go on (its delay ends, its sources or its
        unit become ready, its counter retires far enough), at least 1."""
        events = []
        for w in self.waves:
            if w.done or w.at_barrier:
                continue
            if w.ready_at > t:
                events.append(w.ready_at)
                continue
            op = w.ops[w.pc]
            if op.kind == "waitcnt":
                for queue, limit in ((w.vm, op.wait_vm), (w.lgkm, op.wait_lgkm)):
                    if limit is not None and len(queue) > limit:
                        events.append(queue[len(queue) - limit - 1])
                continue
            ready = [w.reg_ready.get(r, 0) for r in op.awaits]
            ready += [w.acc_ready.get(r, w.reg_ready.get(r, 0)) for r in op.accumulates]
            simd = self.simds[w.simd]
            if op.category == VALU:
                ready += [simd.valu_free] + ([simd.mma_free] if op.kind == "mma" else [])
            events += [r for r in ready if r > t]
        return max(1, min(events) - t) if events else 1


def run_waves(timing, waves: list[list[Op]], **kwargs) -> CuResult:
    return CuModel(timing, waves, **kwargs).run()


__all__ = ["BRANCH", "LDS", "SALU", "VALU", "VMEM", "CuModel", "CuResult", "run_waves"]
