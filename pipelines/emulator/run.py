"""Running a compiled kernel on the emulator: the dispatch (workgroups, waves, scheduling) and its findings.

A `Dispatch` runs the workgroups of one kernel launch over flat memory the host side (host.py) has laid out. Its
workgroups run in batches that move in lockstep: one wave's instruction executes for every workgroup of the batch
at once, on registers that hold one value per lane of every workgroup (machine.py). Where the workgroups of a
batch disagree on a scalar branch, the batch forks into the two groups, each going on from that branch. Within a
batch the waves run in a seeded random order: a random wave runs a random slice of 1-32 instructions until every
live wave waits at the barrier, which then opens a new epoch for the race detector. The race detector, the LDS bank
model and the wait-state checker follow the first workgroup of a batch; a batch's workgroups execute the same
instructions in the same order.
"""

from __future__ import annotations

import copy
import math
from collections import deque
import re
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..inspect import read_report
from ..reference import NUMPY_TYPES
from ..targets import TARGETS
from .hazards import LdsRaceDetector
from .isa import EXEC, Kernel, parse_listing
from .machine import DecodeContext, Divergence, EmulatorError, Hazard, Wave, decode
from .memory import FlatMemory, bank_cycles, retire_all
from .waitstates import WaitStateChecker, mma_passes

MAX_INSTRUCTIONS_PER_WAVE = 5_000_000  # a wave running longer than this is stuck in a loop
MAX_HAZARD_REPORTS = 50
BATCH = 64  # workgroups run together in lockstep


@dataclass(frozen=True)
class LdsAccessStats:
    """Bank behaviour of one ds instruction over the whole dispatch."""

    line: int
    text: str
    executions: int
    cycles: int
    conflict_free_cycles: int

    @property
    def conflict_cycles(self) -> int:
        return self.cycles - self.conflict_free_cycles


@dataclass(frozen=True)
class EmulationResult:
    kernel: str
    target: str
    problem: dict
    seed: int
    workgroups: int
    waves_per_workgroup: int
    wave_size: int
    max_abs_error: float
    max_rel_error: float  # max |C - C64| / max |C64|
    tolerance: float
    unwritten: int  # output elements the kernel never stored
    hazards: tuple[Hazard, ...]
    instructions: int
    mma_count: int
    barrier_count: int
    mix: dict  # opcode -> executions, all waves
    mix_per_wave: tuple[dict, ...]  # per wave of workgroup 0: opcode -> executions
    lds_banks: int
    lds_accesses: tuple[LdsAccessStats, ...]
    seconds: float
    output: np.ndarray | None = field(repr=False, compare=False, default=None)  # what the kernel stored, f32
    # recorded runs: per workgroup run, per wave, (executed pcs, LDS bank passes per access)
    traces: list | None = field(repr=False, compare=False, default=None)
    sampled: int | None = None  # workgroups run when sampling (`workgroups`), else None (all of them)
    wrong: int = 0  # outputs off by more than the tolerance or never written
    mismatches: tuple[dict, ...] = ()  # the first wrong outputs: element, values, and who stored them (`Mismatch`)
    # buffer loads that read past their descriptor's num_records (hardware returns 0; IREE's edge tiles rely on it):
    # each {line, instruction, executions, lanes}; the summary names them when the result is wrong
    out_of_range_reads: tuple[dict, ...] = ()
    # where the first wrong output went wrong, from a re-execution of its workgroup (localise.py)
    first_divergence: dict | None = None

    @property
    def matches(self) -> bool:
        # the host checks each output against its own bound (`wrong`); the max-relative test is the summary's
        return self.unwritten == 0 and self.max_rel_error <= self.tolerance and self.wrong == 0

    @property
    def passed(self) -> bool:
        return self.matches and not self.hazards

    @property
    def lds_conflict_cycles(self) -> int:
        return sum(a.conflict_cycles for a in self.lds_accesses)

    def summary(self, top: int = 8) -> str:
        """A few lines for people: the verdict, the hazards and the counters."""
        p = self.problem
        shape = "x".join(str(p[k]) for k in ("batch", "m", "n", "k") if p.get(k))
        lds_cycles = sum(a.cycles for a in self.lds_accesses)
        mix = ", ".join(f"{op} {n}" for op, n in sorted(self.mix_per_wave[0].items(), key=lambda kv: -kv[1])[:top])
        ran = f"{self.sampled} sampled of " if self.sampled is not None else ""
        out = f" -> {p['out_dtype']}" if p.get("out_dtype") else ""  # a foreign kernel states C's type
        lines = [f"{self.kernel} on {self.target}: gemm {shape} {p['dtype']} {p['layout']}{out}, {ran}"
                 f"{self.workgroups} "
                 f"workgroups x {self.waves_per_workgroup} waves of {self.wave_size} lanes, seed {self.seed}",
                 f"  {compared(self.max_rel_error, self.tolerance)} (max |C - C64| / max |C64|; absolute "
                 f"{self.max_abs_error:.2e})" + (f", {self.unwritten} outputs never written" if self.unwritten else "")
                 + (f", {self.wrong - self.unwritten} outputs off by more than their own bound"
                    if self.wrong > self.unwritten else "")
                 + (": match" if self.matches else ": MISMATCH"),
                 f"  hazards: {len(self.hazards) or 'none'}"]
        lines += [f"    {h.kind}: {h.message}" for h in self.hazards]
        if self.wrong:
            lines.append(f"  {self.wrong} wrong output(s); the first {len(self.mismatches)}:")
            lines += [f"    {describe_mismatch(m)}" for m in self.mismatches]
            d = self.first_divergence
            if d is not None:
                where = f": line {d['line']}: {d['instruction']}" if d["line"] is not None else ""
                lines.append(f"  re-executed alone, the workgroup of the first: {d['note']}{where}")
        if self.out_of_range_reads and not self.matches:
            lines.append(f"  {len(self.out_of_range_reads)} buffer load(s) read past num_records (0 on hardware):")
            lines += [f"    line {r['line']}: '{r['instruction']}', {r['lane_reads']} lanes in {r['executions']} "
                      "executions" for r in self.out_of_range_reads]
        lines += [f"  instructions {self.instructions}, MFMA/WMMA {self.mma_count}, barriers {self.barrier_count}, "
                  f"LDS bank-conflict cycles {self.lds_conflict_cycles} of {lds_cycles} ({self.lds_banks} banks)",
                  f"  most executed by wave 0: {mix}",
                  f"  emulated in {self.seconds:.1f} s",
                  "PASS" if self.passed else "FAIL"]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {
            "kernel": self.kernel, "target": self.target, "problem": self.problem, "seed": self.seed,
            "workgroups": self.workgroups, "waves_per_workgroup": self.waves_per_workgroup,
            "wave_size": self.wave_size, "max_abs_error": self.max_abs_error, "max_rel_error": self.max_rel_error,
            "tolerance": self.tolerance, "unwritten": self.unwritten, "matches": self.matches,
            "passed": self.passed, "hazards": [{"kind": h.kind, "message": h.message} for h in self.hazards],
            "instructions": self.instructions, "mma_count": self.mma_count, "barrier_count": self.barrier_count,
            "mix": self.mix, "mix_per_wave": self.mix_per_wave, "lds_banks": self.lds_banks,
            "lds_conflict_cycles": self.lds_conflict_cycles,
            "lds_accesses": [dict(line=a.line, text=a.text, executions=a.executions, cycles=a.cycles,
                                  conflict_free_cycles=a.conflict_free_cycles) for a in self.lds_accesses],
            "seconds": self.seconds, "sampled": self.sampled, "wrong": self.wrong,
            "mismatches": list(self.mismatches), "out_of_range_reads": list(self.out_of_range_reads),
            "first_divergence": self.first_divergence,
        }


def compared(error: float, tolerance: float) -> str:
    """'max relative error E <= tolerance T' (or '>'), printed with as many digits as it takes for the two numbers
    as printed to show the comparison they report (never '2.0e-04 > tolerance 2.0e-04')."""
    for digits in range(2, 18):
        shown, bound = f"{error:.{digits}e}", f"{tolerance:.{digits}e}"
        if (float(shown) <= float(bound)) == (error <= tolerance) and (shown != bound or error == tolerance):
            break
    return f"max relative error {shown} {'<=' if error <= tolerance else '>'} tolerance {bound}"


def describe_mismatch(m: dict) -> str:
    """One line: which element, what it holds against float64, and the store that put it there."""
    element = "C[" + ", ".join(map(str, m["element"])) + "]"
    value = "never written" if m["got"] is None else f"{m['got']:.6g} (float64 {m['want']:.6g})"
    if m["workgroup"] is None:
        return f"{element}: {value}"
    return (f"{element}: {value}, stored by wave {m['wave']} of workgroup {m['workgroup']} at line {m['line']}: "
            f"{m['instruction']}")


def mismatches(got: np.ndarray, want: np.ndarray, wrong: np.ndarray, writers: np.ndarray | None, kernel: Kernel,
               first: int = 8) -> tuple[dict, ...]:
    """The first `first` wrong outputs in row-major order, each with the workgroup, wave and instruction that
    stored it (from the memory's writer record of the output buffer)."""
    found = []
    for flat in np.flatnonzero(wrong.reshape(-1))[:first]:
        element = tuple(int(i) for i in np.unravel_index(flat, got.shape))
        stored = writers[flat] if writers is not None else (-1, -1, -1)
        written = not np.isnan(got.reshape(-1)[flat])
        entry: dict[str, Any] = {"element": list(element), "got": float(got.reshape(-1)[flat]) if written else None,
                 "want": float(want.reshape(-1)[flat]), "workgroup": None, "wave": None, "line": None,
                 "instruction": None}
        if stored[0] >= 0:
            inst = kernel.instructions[stored[2]]
            entry.update(workgroup=int(stored[0]), wave=int(stored[1]), line=inst.line, instruction=inst.text,
                         pc=int(stored[2]))
        found.append(entry)
    return tuple(found)


class Workgroup:
    """LDS, barrier epochs, the race detector and the counters shared by the waves of a batch of workgroups that run
    in lockstep (`ids`; a batch of one is one workgroup). The race detector and the LDS bank model follow the
    batch's first workgroup: the waves of a batch execute the same instructions in the same order."""

    def __init__(self, ids: list[int], dispatch: "Dispatch"):
        self.ids = np.asarray(ids)
        self.id = int(self.ids[0])
        self.batch = len(ids)
        self.dispatch = dispatch
        self.code = dispatch.kernel
        self.memory = dispatch.memory
        self.lds_bytes = dispatch.kernel.lds_bytes
        self.row_bytes = -(-self.lds_bytes // 4) * 4  # each workgroup's LDS, in one flat array
        self.row_words = self.row_bytes // 4
        self.lds = np.zeros(self.batch * self.row_bytes, np.uint8)
        self.lds32 = self.lds.view(np.uint32)
        self.detector = LdsRaceDetector(dispatch.kernel.lds_bytes, dispatch.waves_per_group)
        self.epoch = 0
        self.epochs = 0  # barrier epochs opened
        self.barriers = 0
        self.mma = 0
        self.banks: dict[int, list[int]] = {}  # pc -> [executions, cycles, conflict-free cycles] per workgroup
        self.waves: list[Wave] = []
        self.immediate = dispatch.reference  # memory operations complete at issue

    def report(self, hazard: Hazard) -> None:
        self.dispatch.report(hazard)

    def open_window(self, w: Wave, op) -> None:
        index, is_write = op.lds
        for other, other_pc, byte, other_write in self.detector.access(w.id, op.pc, index, is_write):
            self.dispatch.race(self, w.id, op.pc, is_write, other, other_pc, other_write, byte)

    def new_epoch(self) -> None:
        self.epoch += 1
        self.detector.reset()
        for w in self.waves:
            for op in list(w.vm) + list(w.lgkm):
                if op.lds is not None:
                    self.open_window(w, op)

    def _inside(self, w: Wave, starts: np.ndarray, size: int, verb: str) -> np.ndarray | None:
        """None when every access [start, start + size) lies in the allocation; else which bytes of them do (and
        the first byte outside is reported)."""
        if not starts.size or (starts.min() >= 0 and starts.max() + size <= self.lds_bytes):
            return None
        index = starts[:, None] + np.arange(size)[None, :]
        inside = (index >= 0) & (index < self.lds_bytes)
        w.hazard("lds-out-of-range", f"{w.where()} {verb} LDS byte {int(index[~inside][0])}, beyond the "
                                     f"{self.lds_bytes} bytes allocated.")
        return inside

    def lds_read(self, w: Wave, rows: np.ndarray, starts: np.ndarray, size: int) -> np.ndarray:
        """[accesses, size] bytes from `starts` in the LDS of workgroups `rows` (positions in the batch); bytes
        outside the allocation read 0."""
        inside = self._inside(w, starts, size, "reads")
        if inside is None and size % 4 == 0 and not (starts & 3).any():  # whole dwords: gather words, not bytes
            words = (rows * self.row_words + (starts >> 2))[:, None] + np.arange(size // 4)[None, :]
            return self.lds32[words].view(np.uint8).reshape(len(starts), size)
        index = (rows * self.row_bytes + starts)[:, None] + np.arange(size)[None, :]
        if inside is None:
            return self.lds[index]
        data = np.zeros(index.shape, np.uint8)
        data[inside] = self.lds[index[inside]]
        return data

    def lds_write(self, w: Wave, rows: np.ndarray, starts: np.ndarray, size: int, payload: np.ndarray) -> None:
        """Write [accesses, size] bytes `payload` from `starts` into the LDS of workgroups `rows`."""
        inside = self._inside(w, starts, size, "writes")
        if inside is None and size % 4 == 0 and not (starts & 3).any():
            words = (rows * self.row_words + (starts >> 2))[:, None] + np.arange(size // 4)[None, :]
            self.lds32[words] = np.ascontiguousarray(payload).view(np.uint32).reshape(words.shape)
            return
        index = (rows * self.row_bytes + starts)[:, None] + np.arange(size)[None, :]
        if inside is None:
            self.lds[index] = payload
        else:
            self.lds[index[inside]] = payload[inside]

    def count_banks(self, w: Wave, starts: np.ndarray, size: int) -> None:
        banks = self.dispatch.ctx.lds_banks
        # Shifting every address by a multiple of the bank row (banks × 4 bytes) keeps the banks, so the pattern
        # relative to that row is a cache key; most instructions repeat one pattern across waves and iterations.
        row = banks * 4
        active = starts >= 0
        base = int(starts[active].min()) // row * row if active.any() else 0
        key = (size, np.where(active, starts - base, -1).tobytes())
        cached = self.dispatch.bank_cache.get(key)
        if cached is None:
            cached = self.dispatch.bank_cache[key] = bank_cycles(starts, size, banks, w.wave_lanes)
        cycles, ideal = cached
        if w.lds_trace is not None:
            w.lds_trace.append(cycles)
        entry = self.banks.setdefault(w.cur, [0, 0, 0])
        entry[0] += 1
        entry[1] += cycles
        entry[2] += ideal


class Dispatch:
    """One kernel launch: the decoded code, global memory and the per-dispatch findings."""

    def __init__(self, kernel: Kernel, ctx: DecodeContext, memory: FlatMemory, kernarg: int, seed: int):
        self.kernel = kernel
        self.ctx = ctx
        self.code = decode(kernel, ctx)
        self.memory = memory
        self.kernarg = kernarg
        # 64-bit user SGPRs the host provides beside the kernarg pointer: 'dispatch_ptr' (the address of an AQL
        # dispatch packet), 'queue_ptr', 'dispatch_id'; IREE's kernels ask for none (foreign.py fills them)
        self.host_sgprs: dict[str, int] = {}
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.log = None  # callable(wave, pc) after every instruction, when a re-execution logs (localise.py)
        self.reference = False  # memory operations complete at issue and waves run one at a time (localise.py)
        self.hazards: list[Hazard] = []
        self.seen: set = set()
        self.banks: dict[int, list[int]] = {}
        self.bank_cache: dict = {}
        self.hits = np.zeros(len(self.code), np.int64)
        self.first_group_hits: list | None = None  # per wave of the lowest-numbered workgroup run
        self.first_group = -1
        self.mma = 0
        self.barriers = 0
        self.traces: list[list[tuple]] | None = None  # per workgroup, per wave: (executed pcs, LDS passes)
        self.window: tuple[int, int] | None = None  # (back-edge pc, passes): a recording wave stops after them
        threads = math.prod(kernel.workgroup_size)
        self.waves_per_group = -(-threads // ctx.lanes)
        # wait states are checked on the waves of the first workgroup run (their executed pcs, exact per path)
        self.waitstates = WaitStateChecker(kernel.instructions, ctx.arch, mma_passes(ctx.arch))
        self.wait_violations: dict | None = None

    def report(self, hazard: Hazard) -> None:
        key = (hazard.kind, hazard.message)
        if key not in self.seen and len(self.hazards) < MAX_HAZARD_REPORTS:
            self.seen.add(key)
            self.hazards.append(hazard)

    def race(self, wg: Workgroup, wave: int, pc: int, is_write: bool, other: int, other_pc: int,
             other_write: bool, byte: int) -> None:
        key = ("lds-race", pc, other_pc)
        if key in self.seen:
            return
        self.seen.add(key)
        insts = self.kernel.instructions
        mine, theirs = insts[pc], insts[other_pc]
        message = (f"LDS race in workgroup {wg.id}, barrier epoch {wg.epoch}: wave {wave} "
                   f"'{mine.text}' (line {mine.line}) {'writes' if is_write else 'reads'} byte {byte} that wave "
                   f"{other} '{theirs.text}' (line {theirs.line}) {'wrote' if other_write else 'read'} with no "
                   "barrier between them.")
        if len(self.hazards) < MAX_HAZARD_REPORTS:
            self.hazards.append(Hazard("lds-race", message))

    def initial_state(self, w: Wave, grid_ids: np.ndarray) -> None:
        """Registers at launch for wave `w` of the batch whose (x, y, z) workgroup ids are the rows of
        `grid_ids`."""
        d, s = self.kernel.descriptor, w.s
        index = 0
        # user SGPRs in the ABI's order (LLVM AMDGPUUsage, "Initial Kernel Execution State"); the 64-bit values the
        # host states (`host_sgprs`) are passed, the kernarg pointer always, and any other is refused
        for name, count in (("private_segment_buffer", 4), ("dispatch_ptr", 2), ("queue_ptr", 2),
                            ("kernarg_segment_ptr", 2), ("dispatch_id", 2), ("flat_scratch_init", 2),
                            ("private_segment_size", 1)):
            if not d.get(f"user_sgpr_{name}"):
                continue
            value = self.kernarg if name == "kernarg_segment_ptr" else self.host_sgprs.get(name)
            if value is None or count != 2:
                raise EmulatorError(f"kernels that use user SGPR '{name}' are not modelled.")
            s[index], s[index + 1] = value & 0xFFFFFFFF, value >> 32
            index += 2
        preload = d.get("user_sgpr_kernarg_preload_length", 0)
        if preload:
            first = d.get("user_sgpr_kernarg_preload_offset", 0)
            words = self.memory.read(self.kernarg + first, 4 * preload).view(np.uint32)
            for i, word in enumerate(words):
                s[index + i] = int(word)
            index += preload
        index = d.get("user_sgpr_count", index)
        for axis, column in zip("xyz", grid_ids.T):
            if d.get(f"system_sgpr_workgroup_id_{axis}"):
                s[index] = column
                index += 1
        if d.get("system_sgpr_workgroup_info"):
            raise EmulatorError("kernels that read the workgroup info SGPR are not modelled.")
        sx, sy, _ = self.kernel.workgroup_size
        flat = w.id * w.wave_lanes + np.arange(w.wave_lanes)
        tid_x, tid_y, tid_z = flat % sx, (flat // sx) % sy, flat // (sx * sy)
        # Work-item ids arrive packed in v0 (x bits 0-9, y 10-19, z 20-29) on gfx90a+, gfx940+ and gfx11.
        w.v[0] = np.tile((tid_x | (tid_y << 10) | (tid_z << 20)).astype(np.uint32), w.batch)
        threads = math.prod(self.kernel.workgroup_size)
        w.write_mask(EXEC, np.tile(flat < threads, w.batch))

    def run_batch(self, wg_ids: list[int], grid_ids: list[tuple[int, int, int]]) -> None:
        """Run workgroups `wg_ids` (with (x, y, z) ids `grid_ids`) together. Where they disagree on a scalar branch,
        the batch forks into the workgroups that take it and those that do not, each going on from there."""
        batches = [self._start_batch(wg_ids, grid_ids)]
        while batches:
            wg = batches.pop()
            try:
                self._advance(wg)
            except Divergence as split:
                batches += [fork(wg, split.taken), fork(wg, ~split.taken)]
                continue
            self._commit(wg)

    def _start_batch(self, wg_ids: list[int], grid_ids: list[tuple[int, int, int]]) -> Workgroup:
        wg = Workgroup(wg_ids, self)
        for i in range(self.waves_per_group):
            w = Wave(i, wg, self.ctx.lanes, 512, 256, wg.batch)
            w.hits = [0] * len(self.code)
            if self.traces is not None:
                w.trace, w.lds_trace = [], []
            elif self.wait_violations is None:
                w.trace = []
            w.pc = self.kernel.entry
            self.initial_state(w, np.asarray(grid_ids, np.uint64).reshape(wg.batch, 3))
            wg.waves.append(w)
        return wg

    def _advance(self, wg: Workgroup) -> None:
        """Run the waves of `wg` in a seeded random interleaving until all have ended."""
        rng, code = self.rng, self.code
        while True:
            runnable = [w for w in wg.waves if not w.done and not w.at_barrier]
            if not runnable:
                waiting = [w for w in wg.waves if w.at_barrier]
                if not waiting:
                    return
                for w in waiting:
                    w.at_barrier = False
                wg.new_epoch()
                wg.epochs += 1
                continue
            if self.reference:  # each wave runs until it waits at a barrier or ends, in order
                w, budget = runnable[0], MAX_INSTRUCTIONS_PER_WAVE
            else:
                w = runnable[int(rng.integers(len(runnable)))]
                budget = int(rng.integers(1, 33))
            w.executed += self._slice(w, code, budget)
            if w.executed > MAX_INSTRUCTIONS_PER_WAVE:
                raise EmulatorError(f"wave {w.id} of workgroup {wg.id} ran {MAX_INSTRUCTIONS_PER_WAVE} "
                                    "instructions without ending; the kernel seems stuck in a loop.")

    def _commit(self, wg: Workgroup) -> None:
        """Count a batch that ran to its end once per workgroup."""
        batch = wg.batch
        for w in wg.waves:
            self.hits += np.asarray(w.hits) * batch
        if self.wait_violations is None:
            self.wait_violations = {}
            for w in wg.waves:
                if w.trace is not None:
                    self.waitstates.check(w.trace, self.wait_violations)
            for violation in self.wait_violations.values():
                self.report(Hazard("wait-states", self.waitstates.describe(violation)))
        if self.traces is not None:
            self.traces.extend([(w.trace, w.lds_trace) for w in wg.waves] for _ in range(batch))
        if self.first_group_hits is None or int(wg.ids.min()) < self.first_group:
            # the waves of the lowest-numbered workgroup run (batches fork and commit in either order)
            self.first_group_hits = [np.asarray(w.hits) for w in wg.waves]
            self.first_group = int(wg.ids.min())
        self.mma += wg.mma * batch
        self.barriers += wg.epochs * batch
        for pc, (executions, cycles, ideal) in wg.banks.items():
            entry = self.banks.setdefault(pc, [0, 0, 0])
            entry[0] += executions * batch
            entry[1] += cycles * batch
            entry[2] += ideal * batch

    def _slice(self, w: Wave, code: list, budget: int) -> int:
        w.stop = False
        hits = w.hits
        trace = w.trace
        edge, passes = self.window or (-1, 0)
        log = self.log
        done = 0
        try:
            while done < budget and not w.stop:
                pc = w.pc
                w.cur = pc
                w.pc = pc + 1
                hits[pc] += 1
                if trace is not None:
                    trace.append(pc)
                code[pc](w)
                if log is not None:
                    log(w, pc)
                done += 1
                if pc == edge and w.hits[pc] >= passes:
                    w.done = w.stop = True  # the recorded window ends here; the timing model extrapolates
        except IndexError:
            if w.cur >= len(code):
                raise EmulatorError(f"wave {w.id} ran past the last instruction without s_endpgm.") from None
            raise
        except Divergence:  # the branch runs again in each part of the batch
            hits[w.cur] -= 1
            if trace is not None:
                trace.pop()
            w.pc = w.cur
            w.executed += done
            raise
        return done


def fork(wg: Workgroup, chosen: np.ndarray) -> Workgroup:
    """The workgroups `chosen` (flags over the batch) of `wg` as a batch of their own, in the state they are in.
    Memory operations still in flight complete first: their records hold the whole batch's data. For a kernel
    that waits before it reads, as hardware requires, completing a load early changes no value."""
    for w in wg.waves:
        retire_all(w)
    rows = np.flatnonzero(chosen)
    part = copy.copy(wg)
    part.ids, part.batch, part.id = wg.ids[rows], len(rows), int(wg.ids[rows[0]])
    part.lds = wg.lds.reshape(wg.batch, -1)[rows].reshape(-1)
    part.lds32 = part.lds.view(np.uint32)
    part.detector = copy.deepcopy(wg.detector)
    part.banks = {pc: list(entry) for pc, entry in wg.banks.items()}
    part.waves = []
    for w in wg.waves:
        twin = copy.copy(w)
        twin.workgroup, twin.batch, twin.lanes = part, len(rows), len(rows) * w.wave_lanes
        lanes = (rows[:, None] * w.wave_lanes + np.arange(w.wave_lanes)[None, :]).reshape(-1)
        twin.lane_batch = np.repeat(np.arange(len(rows)), w.wave_lanes)
        twin.s = w.s[:, rows]
        twin.scc = np.broadcast_to(np.asarray(w.scc, np.uint64), (wg.batch,))[rows]
        twin.v, twin.a = w.v[:, lanes], w.a[:, lanes]
        twin.private = None if w.private is None else w.private[lanes]
        twin.vm, twin.lgkm = deque(), deque()
        twin.pending = {kind: list(counts) for kind, counts in w.pending.items()}
        twin.hits = list(w.hits)
        twin.trace = None if w.trace is None else list(w.trace)
        twin.lds_trace = None if w.lds_trace is None else list(w.lds_trace)
        twin.sync_exec()
        part.waves.append(twin)
    return part


def _configured_ir(dump: Path) -> str:
    files = sorted(dump.glob("configured_*.mlir"))
    return files[0].read_text() if files else ""


def workgroup_tile(configured: str) -> list[int] | None:
    """The `workgroup` tile sizes of the configured IR's lowering config, one per loop (0: not tiled)."""
    match = re.search(r"workgroup = \[([\d, ]+)\]", configured)
    return [int(t) for t in match[1].split(",")] if match else None


def output_tile(configured: str) -> tuple[int, int] | None:
    """M×N of the configured workgroup tile (None when it has none or does not tile M and N)."""
    tiles = workgroup_tile(configured) or []
    return (tiles[-3], tiles[-2]) if len(tiles) >= 3 and tiles[-3] and tiles[-2] else None


def workgroup_count(configured: str, problem: dict) -> int:
    """Workgroups of the dispatch: the problem's parallel sizes divided by the `workgroup` tile, rounded up."""
    sizes = ([problem["batch"]] if problem.get("batch") else []) + [problem["m"], problem["n"], problem["k"]]
    return loop_workgroups(configured, tuple(sizes), "the problem")


def loop_workgroups(configured: str, loops: tuple[int, ...], what: str) -> int:
    """Workgroups of a dispatch whose root op has static loop ranges `loops`: each divided by its `workgroup` tile
    size (0: not tiled), rounded up."""
    tiles = workgroup_tile(configured)
    if tiles is None:
        raise EmulatorError("the configured IR has no workgroup tile, so the dispatch size is unknown.")
    if len(tiles) != len(loops):
        raise EmulatorError(f"workgroup tile {tiles} does not match the loops {list(loops)} of {what}.")
    return math.prod(-(-size // tile) for size, tile in zip(loops, tiles) if tile)


def bank_count(configured: str, target: str) -> int:
    """LDS banks per IREE's target description (`workgroup_memory_bank_count`)."""
    match = re.search(r"workgroup_memory_bank_count = (\d+)", configured)
    if not match:
        raise EmulatorError(f"the configured IR for {target} does not state workgroup_memory_bank_count.")
    return int(match[1])


def emulated_report(folder: Path) -> dict:
    """report.json of `folder`, checked to be one the emulator runs: an AMD target it models and input types it
    knows (one sentence otherwise)."""
    report_path = folder / "report.json"
    if not report_path.is_file():
        raise EmulatorError(f"{folder} has no report.json; give a folder written by 'pipelines compile'.")
    report = read_report(report_path)
    emulated = [t.name for t in TARGETS.values() if t.emulated]
    if report.get("target") not in emulated:
        raise EmulatorError(f"the emulator runs {', '.join(emulated[:-1])} and {emulated[-1]} kernels, not "
                            f"{report.get('target')}.")
    for problem in report.get("problems") or []:
        dtype = problem.get("dtype") if isinstance(problem, dict) else None
        if dtype not in NUMPY_TYPES:
            raise EmulatorError(f"report.json names input type '{dtype}', which the emulator does not know.")
    return report


def load_kernel(folder: Path) -> tuple[dict, Kernel, str]:
    """report.json, the kernel and the configured IR of a folder of one plain GEMM dispatch."""
    report = emulated_report(folder)
    if len(report.get("problems", [])) != 1 or len(report.get("dispatches", [])) != 1:
        raise EmulatorError("the emulator runs folders with exactly one GEMM dispatch.")
    isa = folder / "dump" / report["dispatches"][0]["isa_file"]
    if not isa.is_file():
        raise EmulatorError(f"{isa} is missing.")
    try:
        return report, parse_listing(isa), _configured_ir(folder / "dump")
    except UnicodeDecodeError:
        raise EmulatorError(f"{isa} or the configured IR beside it is not text; compile the folder again.") from None


def _output_tile_elements(configured: str, problem: dict) -> int | None:
    """Outputs one workgroup stores when the problem is a whole number of configured workgroup tiles, else None
    (edge tiles store less, so the count says nothing)."""
    tile = output_tile(configured)
    return tile[0] * tile[1] if tile and problem["m"] % tile[0] == 0 and problem["n"] % tile[1] == 0 else None


def _sampled_reference(problem: dict, a: np.ndarray, b: np.ndarray, written: np.ndarray) -> np.ndarray:
    """float64 C at the `written` outputs (zero elsewhere): rows of A times columns of B for the rows and columns
    that hold a written output, so a few sampled tiles cost a few tiles' worth of multiply-adds."""
    rows, cols = np.flatnonzero(written.any(axis=1)), np.flatnonzero(written.any(axis=0))
    a64 = (a.T if problem["layout"] == "tn" else a)[rows].astype(np.float64)
    b64 = (b.T if problem["layout"] == "nt" else b)[:, cols].astype(np.float64)
    want = np.zeros(written.shape)
    want[np.ix_(rows, cols)] = a64 @ b64
    return np.where(written, want, 0.0)


def _mix(kernel: Kernel, hits: np.ndarray) -> dict:
    mix: dict[str, int] = {}
    for inst, count in zip(kernel.instructions, hits):
        if count:
            mix[inst.opcode] = mix.get(inst.opcode, 0) + int(count)
    return mix
