"""Whole-kernel predictions: a compiled folder's kernel, traced on the emulator and replayed on the CU model, spread
over the chip.

1. Occupancy: the workgroups one CU holds at once, from the waves per SIMD the ISA's registers and LDS allow
   (`report.json`'s occupancy) and the waves of one workgroup, but no more than the busiest CU is given.
2. The first that many workgroups run on the functional emulator, which records each wave's instructions and
   the bank passes of each LDS access; the CU model (`cu`) replays them together: `cu_cycles` for one round.
3. The busiest CU gets ceil(workgroups / CUs) of the dispatch's workgroups, `resident` at a time, in rounds
   (tile quantization: a partial round costs a whole one); the kernel is the larger of the rounds' time and the
   time DRAM needs for its bytes, plus the launch overhead. The bytes are the A and B panels the L2s and the MALL
   do not keep between the workgroups that reuse them, plus C once (`traffic`: row-major launch order, XCD split);
   A, B and C once where the order or the caches are not known.
Long K loops are not replayed whole: the recorded waves stop after WINDOW passes over the K loop's back-edge and
the rest of the loop is extrapolated at the CU's matrix throughput in the window (`_extrapolate`).
A split-K program (`report.json`'s `split_k`: dispatch 0 writes S partial products P[s,m,n], dispatch 1 sums
them) is two such kernels in a row: each dispatch is recorded (its first resident workgroups, the other dispatch
not run) and replayed as above against its own HBM bytes (A + B read and S·M·N f32 written; S·M·N f32 read and
M·N f32 written) plus its own launch, and the program's time is their sum (`Prediction.dispatches`).
What this first version leaves out, and says in `assumptions`: every workgroup is taken to run like the first
ones; the latency of L2 and MALL hits is folded into the fitted VMEM latency and bandwidth; the caches' own
bandwidths do not limit the time.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..emulator.isa import Kernel
from ..emulator.foreign import is_foreign, load_foreign
from ..emulator.host import dispatch_kernels, emulate_gemm
from ..emulator.run import load_kernel, output_tile, workgroup_count
from ..inspect import read_report
from ..reference import NUMPY_TYPES
from ..targets import TARGETS
from transforms.schedule import element_bytes, mma_shape

from .cu import CuModel
from .ops import INTERNAL, Op, TimingError, classify
from .traffic import order_traffic, panel_traffic

# The steady-state window: recording waves stop after this many passes over the K loop's back-edge; the CU's matrix
# throughput in the window's second half stands for the rest of the loop (`_extrapolate`).
WINDOW = 16
END = Op("s_endpgm (end of the recorded window)", "end", INTERNAL, 0, 0)
ASSUMPTIONS = ("every workgroup runs like the first resident ones", "L2/MALL hit latency folded into the fitted "
               "VMEM latency and bandwidth", "DRAM bytes from the row-major launch order, the XCD split and the "
               "L2/MALL sizes (whole panels; the caches' own bandwidths not modelled)",
               "a long K loop runs at the rate of the recorded window's last iterations; the C stores after the loop "
               "are not costed when the window ends first")
# Words of a configured IR whose workgroups launch in an order the traffic model does not know: they move A, B and
# C once. IREE's XCD-aware conditional transpose is known (`launch_order`).
REORDERED = ("reorder_workgroups",)
_TRANSPOSE = re.compile(r"conditional_transpose<(\d+), (\d+)>")


def launch_order(configured: str, m: int, n: int, tile_m: int, tile_n: int) -> str:
    """"row" (workgroup x over N tiles, IREE's default) or "column" (x over M tiles): IREE's
    `conditional_transpose<XCDs, CUs>` launches column-major when that loads fewer distinct tiles a round, by its
    rule (ConditionalTransposeAttr in IREE's GPU dialect): with T = XCDs x CUs and, along a dimension of t tiles,
    x = min(t, T) and loads = ceil(T / x) + x, M's loads must be under 4/5 of N's (rounded down)."""
    match = _TRANSPOSE.search(configured)
    if not match:
        return "row"
    total = int(match[1]) * int(match[2])

    def loads(size: int, tile: int) -> int:
        x = min(-(-size // tile), total)
        return -(-total // x) + x

    return "column" if loads(m, tile_m) < loads(n, tile_n) * 4 // 5 else "row"
STALLS = ("issue", "dependency", "vmcnt", "lgkmcnt", "barrier", "delay")


@dataclass(frozen=True)
class Prediction:
    kernel: str
    target: str
    problem: dict
    microseconds: float
    tflops: float
    peak_fraction: float | None
    bound: str
    workgroups: int
    resident: int  # workgroups per CU at once
    rounds: int
    cu_cycles: int  # one round of resident workgroups on one CU
    compute_us: float
    hbm_us: float
    launch_us: float
    mma_busy: float  # fraction of SIMD clocks the matrix pipes were busy, in the CU model
    stalls: dict  # state -> fraction of wave clocks
    instructions: int  # traced, all resident waves
    seconds: float  # time the prediction took
    assumptions: tuple[str, ...] = ASSUMPTIONS
    # A program of several dispatches (split-K): one dict per dispatch in program order (its own time, bound, HBM
    # bytes, workgroups, ...); the fields above are then the whole program's: times, workgroups, rounds, clocks and
    # instructions summed, `resident` the most of any dispatch, `bound` the slowest dispatch's.
    dispatches: tuple[dict, ...] = ()
    # The engine clock the compute ran at (`engine_clock_mhz`; a program's: weighted by each dispatch's compute).
    clock_mhz: float | None = None
    fabric_us: float = 0.0  # the time the L2s' misses need through the fabric (`Timing.fabric_bytes_per_s`)

    def _fabric(self) -> str:
        return f"L2 misses {self.fabric_us:.1f} us, " if self.fabric_us else ""

    def as_dict(self) -> dict:
        row = dict(asdict(self), predicted=True)
        if not self.dispatches:  # one dispatch: the row as before
            del row["dispatches"]
        return row

    def summary(self) -> str:
        p = self.problem
        shape = "x".join(str(p[k]) for k in ("batch", "m", "n", "k") if p.get(k))
        peak = f", {100 * self.peak_fraction:.0f} % of peak" if self.peak_fraction is not None else ""
        stalls = ", ".join(f"{k} {100 * v:.0f} %" for k, v in sorted(self.stalls.items(), key=lambda kv: -kv[1]))
        return "\n".join([
            f"{self.kernel}{' (' + p['foreign'] + ')' if p.get('foreign') else ''} on {self.target}: gemm {shape} "
            f"{p['dtype']} {p['layout']}{' -> ' + p['out_dtype'] if p.get('out_dtype') else ''} (PREDICTED, not "
            "measured)",
            f"  {self.microseconds:.1f} us, {self.tflops:.1f} TFLOP/s{peak}; bound by {self.bound}",
            f"  {self.workgroups} workgroups, {self.resident} per CU at once, {self.rounds} round(s) of "
            f"{self.cu_cycles} clocks; compute {self.compute_us:.1f} us{self._at()}, HBM {self.hbm_us:.1f} us, "
            f"{self._fabric()}launch {self.launch_us:.1f} us" if not self.dispatches else
            f"  {len(self.dispatches)} dispatches one after the other, summed: {self.workgroups} workgroups, "
            f"compute {self.compute_us:.1f} us{self._at()}, HBM {self.hbm_us:.1f} us, launch {self.launch_us:.1f} us",
            f"  matrix pipes busy {100 * self.mma_busy:.0f} % of SIMD clocks; wave clocks: {stalls}",
            f"  {self.instructions} instructions replayed in {self.seconds:.1f} s",
        ] + [f"  dispatch {i} ({d['role']}, {d['kernel']}): {d['microseconds']:.1f} us PREDICTED, bound by "
             f"{d['bound']}; {d['workgroups']} workgroups, {d['resident']} per CU, {d['rounds']} round(s) of "
             f"{d['cu_cycles']} clocks; compute {d['compute_us']:.1f} us, HBM {d['hbm_us']:.1f} us "
             f"({d['hbm_bytes']} B), launch {d['launch_us']:.1f} us" for i, d in enumerate(self.dispatches)])

    def _at(self) -> str:
        return f" at {self.clock_mhz:.0f} MHz" if self.clock_mhz is not None else ""


def _target(report: dict):
    name = report.get("target")
    target = TARGETS.get(name) if isinstance(name, str) else None
    if target is None or target.timing is None:
        timed = ", ".join(t.name for t in TARGETS.values() if t.timing)
        raise TimingError(f"the timing model predicts AMD kernels ({timed}), not {name}.")
    return target


def resident_workgroups(report: dict, waves_per_group: int, simds: int, workgroups: int) -> int:
    occupancy = report.get("occupancy") or 1  # waves per SIMD the ISA's registers and LDS allow
    return max(1, min(workgroups, occupancy * simds // max(1, waves_per_group)))


@dataclass(frozen=True)
class Recording:
    """What the emulator recorded for one compiled folder: enough to replay it under any timing facts."""

    report: dict
    target_name: str
    kernel: Kernel
    configured: str
    traces: list  # per resident workgroup, per wave: (executed pcs, LDS bank passes)
    edge: int | None  # the K loop's back-edge
    workgroups: int
    per_cu: int  # workgroups the busiest CU gets
    resident: int  # of them at once
    seconds: float
    problem: dict | None = None  # a dispatch of a program: the GEMM its K loop is (else report.json's problem)
    hbm_bytes: int | None = None  # a program's dispatch or a foreign kernel: its own HBM traffic (else `_hbm_bytes`)
    role: str = ""  # a dispatch of a program: what it computes
    # a foreign kernel that states how its workgroup ids map to tiles: the tile and the (tile row, tile column) of
    # each id, in launch order
    tile_order: tuple[tuple[int, int], tuple[tuple[int, int], ...]] | None = None


@dataclass(frozen=True)
class ProgramRecording:
    """A split-K program's dispatches, each recorded alone, in program order."""

    report: dict
    target_name: str
    parts: tuple[Recording, ...]
    seconds: float


def record(folder: str | Path, seed: int = 0) -> Recording | ProgramRecording:
    """Check the folder, cost every instruction once (an uncosted one is an error before anything runs) and record
    the resident workgroups on the emulator, stopping in the K loop's steady state."""
    started = time.perf_counter()
    folder = Path(folder)
    if is_foreign(folder):  # another compiler's kernel: its launch description states the grid, LDS, problem
        foreign = load_foreign(folder)
        report = foreign.report()
        stated = (foreign.tile, foreign.order) if foreign.tile and foreign.order else None
        return _record_kernel(folder, report, report, _target(report), foreign.kernel, "", foreign.workgroups, seed,
                              started, hbm_bytes=foreign.hbm_bytes(), tile_order=stated)
    if not (folder / "report.json").is_file():
        raise TimingError(f"{folder} has no report.json; give a folder written by 'pipelines compile'.")
    report = read_report(folder / "report.json")
    target = _target(report)
    if report.get("split_k") is not None:
        return _record_split(folder, report, target, seed, started)
    dispatches = report.get("dispatches") or []
    if len(dispatches) > 1:
        # IREE's own split-K (`compile --split-k`) is two dispatches too, but its report states no split_k: the
        # number of slices and which dispatch is which are IREE's, and the model needs both to set each one's bytes.
        asked = re.search(r"--iree-dispatch-creation-split-matmul-reduction=(\d+)", str(report.get("command", "")))
        what = f"IREE's own split-K (--split-k {asked[1]})" if asked else "a program"
        raise TimingError(f"predict times one GEMM dispatch, or the two of the split-k pipeline; {folder} holds {what} "
                          f"of {len(dispatches)} dispatches, and its report.json does not state the split that the "
                          "timing model needs to size each dispatch's memory traffic (compile it with --pipeline "
                          "split-k, or without --split-k).")
    _, kernel, configured = load_kernel(folder)
    grid = report.get("grid")
    total = math.prod(grid) if isinstance(grid, list) else workgroup_count(configured, report["problems"][0])
    return _record_kernel(folder, report, report, target, kernel, configured, total, seed, started)


def _record_kernel(folder: Path, report: dict, occupancy: dict, target, kernel: Kernel, configured: str, total: int,
                   seed: int, started: float, only: int | None = None, **part) -> Recording:
    """One kernel of `total` workgroups costed and its resident workgroups recorded (`only`: dispatch `only` of a
    program, recorded alone); `occupancy` is the report entry stating its waves per SIMD; `part` the fields of a
    program's dispatch (`Recording.problem`, `hbm_bytes`, `role`)."""
    for inst in kernel.instructions:
        classify(inst, target)
    waves_per_group = -(-math.prod(kernel.workgroup_size) // target.wave_size)
    # The busiest CU gets ceil(total / CUs) workgroups, as many at once as occupancy allows.
    per_cu = -(-total // target.compute_units)
    resident = resident_workgroups(occupancy, waves_per_group, target.timing.simds, per_cu)
    edge = k_loop(kernel)
    run = emulate_gemm(folder, seed=seed, record=resident, window=(edge, WINDOW) if edge is not None else None,
                       only=only)
    return Recording(report, target.name, kernel, configured, run.traces or [], edge, run.workgroups, per_cu,
                     resident, time.perf_counter() - started, **part)


def predict(folder: str | Path, seed: int = 0, timeline: Path | None = None, force: bool = False) -> Prediction:
    """`timeline`: also draw the replayed K-loop window as a PNG there (see `timeline_png`)."""
    return replay(record(folder, seed), timeline=timeline, force=force)


def _record_split(folder: Path, report: dict, target, seed: int, started: float) -> ProgramRecording:
    """Each dispatch of a split-K program recorded alone: its first resident workgroups, the K loop windowed."""
    problems, split = report.get("problems") or [], report["split_k"]
    splits = split.get("splits") if isinstance(split, dict) else None
    if len(problems) != 1 or not isinstance(splits, int) or isinstance(splits, bool) or splits < 1:
        raise TimingError("report.json's split_k does not state a whole number of splits for one GEMM; compile the "
                          "folder again.")
    kernels = dispatch_kernels(folder)
    entries = {d.get("dispatch"): d for d in report.get("dispatches") or [] if isinstance(d, dict)}
    if len(kernels) != 2 or any(name not in entries for name, *_ in kernels):
        raise TimingError(f"a split-K program is two dispatches that report.json lists, partial products then their "
                          f"sum; {folder} runs {len(kernels)}.")
    problem = problems[0]
    batch, m, n, k = problem.get("batch") or 1, problem["m"], problem["n"], problem["k"]
    partials = batch * splits * m * n * 4  # P[s, m, n], f32
    hbm = (batch * (m * k + k * n) * element_bytes(problem["dtype"]) + partials, partials + batch * m * n * 4)
    # the partial products' K loop: a batch of S GEMMs of K/S each; the sum has no matrix loop to extrapolate
    shapes = (dict(problem, batch=batch * splits, k=-(-k // splits)), problem)
    roles = (f"{splits} partial products ({split.get('partial_kernel') or 'our kernel'})", "their sum")
    parts = tuple(_record_kernel(folder, report, entries[name], target, kernel, configured, total, seed,
                                 time.perf_counter(), only=index, problem=shapes[index], hbm_bytes=hbm[index],
                                 role=roles[index])
                  for index, (name, kernel, configured, total) in enumerate(kernels))
    return ProgramRecording(report, target.name, parts, time.perf_counter() - started)


@dataclass(frozen=True)
class _Replayed:
    """One dispatch replayed: its own figures."""

    kernel: str
    workgroups: int
    resident: int
    rounds: int
    cu_cycles: int
    compute_us: float
    hbm_us: float
    hbm_bytes: int
    microseconds: float
    mma_busy: float
    stall_clocks: dict
    instructions: int
    clock_mhz: float  # the engine clock under this dispatch's matrix load
    fabric_us: float = 0.0  # the L2s' misses through the fabric to the MALL and DRAM

    def bound(self, stalls: dict) -> str:
        if self.fabric_us > max(self.compute_us, self.hbm_us):
            return "L2-to-MALL bandwidth"
        return "HBM bandwidth" if self.hbm_us > self.compute_us else (
            "matrix pipes" if self.mma_busy >= 0.5 else
            f"{max((k for k in stalls if k != 'issue'), key=lambda k: stalls[k], default='issue')} stalls")


def _fractions(stall_clocks: dict) -> dict:
    clocks = sum(stall_clocks.values()) or 1
    return {k: v / clocks for k, v in stall_clocks.items() if v}


def replay(rec: Recording | ProgramRecording, target=None, timeline: Path | None = None,
           force: bool = False) -> Prediction:
    """The recording replayed on the CU model with `target`'s timing facts (default: its own target's). A
    program's dispatches are replayed one by one and their times summed; `timeline` draws its first dispatch."""
    started = time.perf_counter()
    target = target or TARGETS[rec.target_name]
    if isinstance(rec, ProgramRecording):
        return _replay_program(rec, target, timeline, force, started)
    problem = rec.report["problems"][0]
    part = _replay_dispatch(rec, target, timeline, force, problem, *dispatch_traffic(rec, target, problem))
    timing = target.timing
    micro = part.microseconds
    flops = 2 * problem["m"] * problem["n"] * problem["k"] * (problem.get("batch") or 1)
    tflops = flops / (micro * 1e-6) / 1e12
    peak = _check_peak(target, problem, tflops, part.kernel)
    stalls = _fractions(part.stall_clocks)
    return Prediction(part.kernel, target.name, problem, micro, tflops, tflops / peak if peak else None,
                      part.bound(stalls), part.workgroups, part.resident, part.rounds, part.cu_cycles,
                      part.compute_us, part.hbm_us, timing.launch_us, part.mma_busy, stalls, part.instructions,
                      rec.seconds + time.perf_counter() - started, clock_mhz=part.clock_mhz,
                      fabric_us=part.fabric_us)


def _check_peak(target, problem: dict, tflops: float, kernel: str) -> float | None:
    peak = target.peak(problem["dtype"])
    if peak and tflops > peak * 1.001:
        raise TimingError(f"the timing model predicts {tflops:.0f} TFLOP/s for {kernel}, above {target.name}'s "
                          f"peak of {peak:.0f}: a fault of the model, not a prediction.")
    return peak


def _replay_program(rec: ProgramRecording, target, timeline: Path | None, force: bool,
                    started: float) -> Prediction:
    """Each dispatch replayed against its own HBM bytes and launch; the program's time is their sum."""
    problem = rec.report["problems"][0]
    parts = [_replay_dispatch(part, target, timeline if i == 0 else None, force, part.problem or problem,
                              *dispatch_traffic(part, target, problem)) for i, part in enumerate(rec.parts)]
    launch_us = target.timing.launch_us
    micro = sum(p.microseconds for p in parts)
    flops = 2 * problem["m"] * problem["n"] * problem["k"] * (problem.get("batch") or 1)
    tflops = flops / (micro * 1e-6) / 1e12
    kernel = ", ".join(p.kernel for p in parts)
    peak = _check_peak(target, problem, tflops, kernel)
    clocks: dict = {}
    for p in parts:
        for state, n in p.stall_clocks.items():
            clocks[state] = clocks.get(state, 0) + n
    compute_us = sum(p.compute_us for p in parts)
    mma_busy = sum(p.mma_busy * p.compute_us for p in parts) / compute_us if compute_us else 0.0
    dispatches = tuple({"role": r.role, "kernel": p.kernel, "microseconds": p.microseconds,
                        "bound": p.bound(_fractions(p.stall_clocks)), "workgroups": p.workgroups,
                        "resident": p.resident, "rounds": p.rounds, "cu_cycles": p.cu_cycles,
                        "compute_us": p.compute_us, "hbm_us": p.hbm_us, "hbm_bytes": p.hbm_bytes,
                        "fabric_us": p.fabric_us,
                        "launch_us": launch_us, "mma_busy": p.mma_busy, "clock_mhz": p.clock_mhz,
                        "stalls": _fractions(p.stall_clocks),
                        "instructions": p.instructions} for r, p in zip(rec.parts, parts))
    slowest = max(range(len(parts)), key=lambda i: parts[i].microseconds)
    bound = f"{dispatches[slowest]['bound']} (dispatch {slowest}, {dispatches[slowest]['role']}, the slowest)"
    return Prediction(kernel, target.name, problem, micro, tflops, tflops / peak if peak else None, bound,
                      sum(p.workgroups for p in parts), max(p.resident for p in parts), sum(p.rounds for p in parts),
                      sum(p.cu_cycles for p in parts), compute_us, sum(p.hbm_us for p in parts),
                      launch_us * len(parts), mma_busy, _fractions(clocks), sum(p.instructions for p in parts),
                      rec.seconds + time.perf_counter() - started,
                      ASSUMPTIONS + ("the dispatches of a program run one after the other, each with its own "
                                     "launch; each moves its own bytes through HBM once",), dispatches,
                      sum(p.clock_mhz * p.compute_us for p in parts) / compute_us if compute_us else None,
                      sum(p.fabric_us for p in parts))


def _replay_dispatch(rec: Recording, target, timeline: Path | None, force: bool, problem: dict,
                     hbm_bytes: int, l2_miss_bytes: int | None = None) -> _Replayed:
    """One kernel's recording replayed: a round on one CU, spread over the chip, against `hbm_bytes` of DRAM and
    `l2_miss_bytes` through the L2s' fabric (None: not known, no limit)."""
    timing, kernel, configured, edge = target.timing, rec.kernel, rec.configured, rec.edge
    ops = [classify(inst, target) for inst in kernel.instructions]
    traces, per_cu, resident = rec.traces, rec.per_cu, rec.resident
    simds = timing.simds
    waves, groups, passes, marks = [], [], [], []
    windowed = False
    for group, wave_traces in enumerate(traces):
        for pcs, lds in wave_traces:
            ended = bool(pcs) and ops[pcs[-1]].kind == "end"
            windowed |= not ended
            waves.append([ops[pc] for pc in pcs] + ([] if ended else [END]))
            groups.append(group)
            passes.append(lds)
            marks.append([i for i, pc in enumerate(pcs) if ops[pc].kind == "mma" or pc == edge])
    cu = CuModel(timing, waves, groups=groups, lds_passes=passes, simds=simds, marks=marks,
                 timeline=timeline is not None).run()
    if timeline is not None:
        timeline_png(cu, kernel.name, target.name, timeline, force)
    cu_cycles = cu.cycles
    load = cu.mma_utilization  # the matrix pipes' busy fraction that sets the clock (`engine_clock_mhz`)
    if windowed:
        work = {m.opcode: math.prod(mma_shape(m.name)) for m in target.mma.values()}
        mark_work = [[work.get(kernel.instructions[pcs[i]].opcode, 0) for i in m]
                     for m, (pcs, _) in zip(marks, [w for group in traces for w in group])]
        cu_cycles = _extrapolate(cu, mark_work, configured, problem, rec.workgroups, len(traces))
        # Over the whole loop, not the window (whose prologue idles the pipes): the loop's matrix work on the CU
        # against what its pipes do at full rate in those clocks.
        loop_work = problem["k"] * _output_tile(configured, problem, rec.workgroups) * len(traces)
        load = _loop_load(target, problem, loop_work, cu_cycles, load)
    rounds = -(-per_cu // resident)
    fills = round_fills(rec.workgroups, target.compute_units, resident)
    assert len(fills) == rounds
    compute_us = sum(cu_cycles / engine_clock_mhz(timing, load, fill) for fill in fills)
    clock_mhz = rounds * cu_cycles / compute_us if compute_us else timing.clock_mhz
    hbm_us = hbm_bytes / timing.hbm_bytes_per_s * 1e6
    fabric_us = (l2_miss_bytes / timing.fabric_bytes_per_s * 1e6
                 if l2_miss_bytes is not None and timing.fabric_bytes_per_s else 0.0)
    micro = max(compute_us, hbm_us, fabric_us) + timing.launch_us
    return _Replayed(kernel.name, rec.workgroups, resident, rounds, cu_cycles, compute_us, hbm_us, hbm_bytes, micro,
                     cu.mma_utilization, dict(cu.stalls), sum(len(w) for w in waves), clock_mhz, fabric_us)


def _loop_load(target, problem: dict, work: float, cycles: int, otherwise: float) -> float:
    """The matrix pipes' busy fraction over `cycles` CU clocks that issue `work` (M×N×K) of matrix work: the
    target's peak (FLOP/s at its clock, over its CUs, 2 FLOP a multiply-add) gives the full rate. `otherwise` where
    the target states no peak for the type."""
    peak = target.peak(problem["dtype"])
    if not peak or cycles <= 0:
        return otherwise
    per_clock = peak * 1e12 / (2 * target.timing.clock_mhz * 1e6 * target.compute_units)
    return min(1.0, work / (cycles * per_clock))


def round_fills(workgroups: int, units: int, resident: int) -> list[float]:
    """Per round of the busiest compute unit, the fraction of the chip's workgroup slots (units × resident) that
    hold a workgroup: the workgroups are dealt to the units one at a time, and each runs its share `resident` at a
    time, so only the last rounds are partly empty."""
    share, extra = divmod(workgroups, units)
    fills = []
    for start in range(0, share + (extra > 0), resident):
        active = (extra * min(resident, max(0, share + 1 - start))
                  + (units - extra) * min(resident, max(0, share - start)))
        fills.append(active / (units * resident))
    return fills


def engine_clock_mhz(timing, mma_busy: float, fill: float) -> float:
    """The engine clock a round of a dispatch runs at: `clock_mhz` with the matrix pipes idle, falling linearly to
    `matrix_clock_mhz` as the chip's matrix load (the pipes' busy fraction on a CU times the fraction of the chip's
    workgroup slots the round fills, both 0..1) reaches 1. HBM's time does not scale with it; each round's time is
    its CU clocks at its own clock, so one more workgroup never takes less time."""
    if timing.matrix_clock_mhz is None:
        return timing.clock_mhz
    load = min(1.0, max(0.0, mma_busy)) * min(1.0, max(0.0, fill))
    return timing.clock_mhz - (timing.clock_mhz - timing.matrix_clock_mhz) * load


COLOURS = {"mma": "#d62728", "valu": "#1f77b4", "trans": "#17becf", "lds": "#2ca02c", "vmem": "#ff7f0e",
           "smem": "#bcbd22", "salu": "#7f7f7f", "branch": "#8c564b", "setprio": "#9467bd"}
SHADES = {"vmcnt": "#ffbb78", "lgkmcnt": "#98df8a", "barrier": "#c7c7c7", "dependency": "#ff9896",
          "delay": "#dbdb8d"}


def timeline_png(cu, kernel: str, target: str, path: Path, force: bool = False) -> None:
    """The replayed steady state as executed: one row per wave over the last quarter of the recorded window before
    its first wave leaves it (the whole replay if there is no K loop), each issued instruction a bar coloured by
    class, stalls shaded by cause.
    An existing picture this tool did not draw is replaced only with `force`."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from ..output import FILE_MARK, write_file

    ended = [times[-1] for times in cu.marks if times]
    end = min(ended) if ended else cu.cycles  # the steady state: before the first wave leaves the window
    start = end * 3 // 4
    fig, ax = plt.subplots(figsize=(16, 0.35 * len(cu.events) + 1.5))
    for row, (events, spans) in enumerate(zip(cu.events, cu.spans)):
        y = len(cu.events) - 1 - row
        shaded = [(s, n) for s, n, state in spans if state in SHADES and s + n > start and s < end]
        for (s, n), state in zip(shaded, [st for s, n, st in spans if st in SHADES and s + n > start and s < end]):
            ax.broken_barh([(s, n)], (y + 0.05, 0.9), color=SHADES[state], linewidth=0)
        for kind in COLOURS:
            bars = [(t, n) for t, n, k in events if k == kind and start <= t <= end]
            if bars:
                ax.broken_barh(bars, (y + 0.25, 0.5), color=COLOURS[kind], linewidth=0)
    ax.set_xlim(start, end)
    ax.set_yticks([len(cu.events) - 1 - w + 0.5 for w in range(len(cu.events))])
    ax.set_yticklabels([f"wave {w}" for w in range(len(cu.events))], fontsize=6)
    ax.set_xlabel("clock (PREDICTED by the timing model, not measured)")
    ax.set_title(f"{kernel} on {target}: the steady-state K loop as replayed", fontsize=9)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()]
              + [Patch(color=c, label=f"stall: {k}") for k, c in SHADES.items()], fontsize=6, ncol=7,
              loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    picture = io.BytesIO()
    fig.savefig(picture, format="png", dpi=130, metadata={"Comment": FILE_MARK})
    plt.close(fig)
    write_file(path, picture.getvalue(), force)


def k_loop(kernel) -> int | None:
    """The pc of the back-edge (a branch to an earlier label) of the loop with the most matrix instructions."""
    best: tuple[int, int] | None = None
    for pc, inst in enumerate(kernel.instructions):
        if not inst.opcode.startswith(("s_cbranch", "s_branch")) or not inst.operands:
            continue
        start = kernel.labels.get(inst.operands[0]) if isinstance(inst.operands[0], str) else None
        if start is None or start > pc:
            continue
        mmas = sum(x.opcode.startswith(("v_mfma", "v_wmma", "v_smfmac")) for x in kernel.instructions[start:pc + 1])
        if mmas and (best is None or mmas > best[0]):
            best = (mmas, pc)
    return best[1] if best else None


def _extrapolate(cu, mark_work: list[list[int]], configured: str, problem: dict, workgroups: int,
                 groups: int) -> int:
    """Clocks of the whole K loop from the recorded window, by the CU's matrix throughput. The window is judged up
    to the clock `end` at which the first wave finishes it (after that the others have the units to themselves,
    which would flatter the rate), over its second half (the first holds the prologue's warm-up): matrix work
    issued per clock there, by all resident workgroups, carries the work not yet issued at `end` (K × the output
    tile per workgroup, less what was issued) to the loop's end. `mark_work`: per wave, the M×N×K of each marked
    instruction (0 for the back-edge), aligned with the CU model's marks."""
    issued = [(t, w) for times, works in zip(cu.marks, mark_work) for t, w in zip(times, works) if w]
    ended = [times[-1] for times in cu.marks if times]
    if not issued or not ended:
        raise TimingError("the recorded window holds no matrix work to extrapolate from.")
    end = min(ended)
    begin = min(t for t, _ in issued)
    begin += (end - begin) // 2
    window = sum(w for t, w in issued if begin <= t < end)
    if end <= begin or not window:
        raise TimingError("the recorded window is too short to extrapolate the K loop from; the kernel's loop is "
                          "not the K loop the timing model looks for.")
    total = problem["k"] * _output_tile(configured, problem, workgroups) * groups
    remaining = max(0.0, total - sum(w for t, w in issued if t < end))
    return round(end + remaining * (end - begin) / window)


def _output_tile(configured: str, problem: dict, workgroups: int) -> float:
    """Elements of C one workgroup computes: the configured workgroup tile's M×N, else M×N over the workgroups."""
    tile = output_tile(configured)
    return tile[0] * tile[1] if tile else problem["m"] * problem["n"] * (problem.get("batch") or 1) / workgroups


def dispatch_traffic(rec: Recording, target, problem: dict) -> tuple[int, int | None]:
    """(DRAM bytes, bytes the L2s miss) of a dispatch: its own DRAM bytes where the recording states them (a
    split-K program's dispatch, a foreign kernel; L2 misses unknown), else the panels the caches do not keep
    (`traffic.panel_traffic`) for a kernel launched in IREE's row-major order (workgroup x over the last tiled
    loop, N) or its conditional transpose (`launch_order`) on a target whose MALL is known, else A, B and C once
    (L2 misses unknown). A foreign kernel that states its own order of tiles (`Recording.tile_order`) is
    replayed in that order (`traffic.order_traffic`). The workgroups an XCD runs at once (its CUs × the resident
    workgroups of one CU) read their panels in step: a K slice of a panel several of them share is fetched once.
    They drift apart in K, but an L2 holds many K steps of their slices (4 MB against 384 KB a step for twelve
    256x64 bf16 panels), so the drift costs little. (One slot a round, the earlier assumption, predicted
    HipKittens' 8192^3 kernel 33 % above its published time once its own tile order was replayed.)"""
    timing = target.timing
    xcds = max(1, target.xcds)
    slots = max(1, target.compute_units // xcds * rec.resident)  # the workgroups an XCD runs at once
    if rec.tile_order is not None and timing.mall_bytes is not None:
        (tile_m, tile_n), order = rec.tile_order
        out = np.dtype(NUMPY_TYPES[problem.get("out_dtype") or "f32"]).itemsize
        traffic = order_traffic(order, problem["m"], problem["n"], problem["k"], element_bytes(problem["dtype"]),
                                out, tile_m, tile_n, xcds, slots, timing.l2_bytes_per_xcd,
                                timing.mall_bytes)
        return traffic.dram_bytes, traffic.l2_miss_bytes
    if rec.hbm_bytes is not None:
        return rec.hbm_bytes, None
    tile = output_tile(rec.configured) if rec.configured else None
    if tile is None or timing.mall_bytes is None or any(word in rec.configured for word in REORDERED):
        return _hbm_bytes(problem), None
    m, n, tile_m, tile_n = problem["m"], problem["n"], tile[0], tile[1]
    if launch_order(rec.configured, m, n, tile_m, tile_n) == "column":  # the transposed problem, launched row-major
        m, n, tile_m, tile_n = n, m, tile_n, tile_m
    traffic = panel_traffic(m, n, problem["k"], problem.get("batch") or 1, element_bytes(problem["dtype"]), 4,
                            tile_m, tile_n, xcds, slots, timing.l2_bytes_per_xcd, timing.mall_bytes)
    return traffic.dram_bytes, traffic.l2_miss_bytes


def _hbm_bytes(problem: dict) -> int:
    """A and B read once and C (f32) written once: the least traffic the problem has."""
    element = element_bytes(problem["dtype"])
    batch = problem.get("batch") or 1
    m, n, k = problem["m"], problem["n"], problem["k"]
    return batch * ((m * k + k * n) * element + m * n * 4)
