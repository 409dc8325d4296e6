"""Calibration: published kernel times of IREE-compiled GEMMs against the timing model's predictions.

`Calibration(read_csv(path))` takes rows of `source,gpu,target,op,M,N,K,layout,dtype,variant,time_us`, compiles each
with IREE's default pipeline as the source describes (`VARIANTS`: which iree-compile flags a variant means) and
records it once; `rows()` predicts every row under the targets' timing facts (or others; `fit()` fits them) and
returns one `Row` per line: measured, predicted, error, or the one sentence saying why the row could not be
predicted (a variant this tool cannot reproduce, an instruction the emulator does not run). `summary` gives the
median |error| over rows measured at 20 µs or more and, for every shape measured with global-load DMA off and on,
whether the prediction moves the same way. Rows are recorded in worker processes, as many as the cores and the
memory the system has available hold (`choose_workers`); the published MI355X rows ship as `PUBLISHED`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import multiprocessing
import os
import random
import re
import statistics
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen, iree_gpu

from transforms.errors import UserError
from transforms.problem import Gemm
from transforms.schedule import k_contiguous
from transforms.tuning_spec import tuning_spec

from .. import flow
from ..job import Job, Prepared
from ..output import owned
from ..targets import TARGETS, Timing
from .ops import TimingError
from .predict import ProgramRecording, Recording, record, replay

FIELDS = ("source", "gpu", "target", "op", "M", "N", "K", "layout", "dtype", "variant", "time_us")
# variant -> extra iree-compile flags (IREE's default pipeline); None: not reproducible here (one sentence).
# IREE 3.13 already loads gfx950 f16/bf16 GEMM tiles by global-load DMA by default (the PR's change landed): its
# hidden flag turns it off and on (measured: 1280x3840x3840 NN bf16 has 8 `lds` loads by default and with
# =true, none with =false).
VARIANTS: dict[str, tuple[str, ...] | None] = {
    "dma_off": ("--iree-llvmgpu-use-direct-load=false",),
    "dma_on": ("--iree-llvmgpu-use-direct-load=true",),
    "iree_default": (),
    "iree_builtin_pingpong_ukernel": (),  # the `ukernel` pipeline: IREE's tensor ukernels on, verified used
}
UKERNEL_VARIANTS = {"iree_builtin_pingpong_ukernel"}
# "addmm" adds a bias vector of N elements in the dispatch; the emulator builds plain GEMMs, so it is predicted as
# the matmul alone (the bias is N reads against M×N×K multiply-adds).
OPS = {"mm": "", "addmm": "bias add not modelled"}
MIN_US = 20.0  # rows measured below this are listed but left out of the median (launch and tail dominate)
# Published MI355X/MI350 rows with their sources in the header (copied from the project's research notes).
PUBLISHED = Path(__file__).parent / "data" / "amd-measured-calibration.csv"
# A worker's peak memory for one row, measured on this 2-core machine (2026-11-26; psutil over the worker and its
# iree-compile): 0.45 GiB while compiling, 0.52 GiB recording the published CSV's largest output (16384x4096 f32) in
# a fresh process, 0.57 GiB for a pool worker over all 42 rows. A recording touches the output it fills with NaN
# (4 B an element) and its NaN mask (1 B); the inputs stay untouched zeros beyond the recorded workgroups' window.
# The parent holds one ROW_BASE_BYTES of its own.
ROW_BASE_BYTES = 512 * 2**20
OUTPUT_BYTES = 6  # per output element (5 measured, rounded up)


class CalibrationError(UserError, ValueError):
    """A calibration CSV that cannot be read; the message is one sentence."""


@dataclass(frozen=True)
class Row:
    source: str
    target: str
    op: str
    m: int
    n: int
    k: int
    layout: str
    dtype: str
    variant: str
    measured_us: float
    predicted_us: float | None = None
    bound: str | None = None
    note: str = ""  # why there is no prediction, or what it leaves out

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured."""
        return None if self.predicted_us is None else (self.predicted_us - self.measured_us) / self.measured_us

    def as_dict(self) -> dict:
        return dict(asdict(self), error=self.error, predicted=self.predicted_us is not None)


def read_rows(text: str, name: str) -> list[dict]:
    """The CSV's rows (comment and blank lines skipped; columns after FIELDS, such as a quotation, are kept); a row
    is refused, naming its number and line, unless it names its source, M, N and K are positive integers and time_us
    is a positive finite number (no nan, inf, zero or negative time)."""
    kept = [(number, line) for number, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(line for _, line in kept)))
    if reader.fieldnames is None or tuple(reader.fieldnames[:len(FIELDS)]) != FIELDS:
        raise CalibrationError(f"{name} must have the columns {','.join(FIELDS)} first (more may follow), not "
                               f"{','.join(reader.fieldnames or ['(none)'])}.")
    rows = list(reader)
    if not rows:
        raise CalibrationError(f"{name} has no rows.")
    for (line, _), (number, row) in zip(kept[1:], enumerate(rows, 1)):
        where = f"row {number} of {name} (line {line})"
        if None in row or None in row.values():  # csv.DictReader: extra fields go under None, missing ones are None
            given = sum(row[k] is not None for k in FIELDS) + len(row.get(None) or [])
            raise CalibrationError(f"{where} has {given} fields; the header names {len(FIELDS)}.")
        if not row["source"].strip():
            raise CalibrationError(f"{where} names no source; every published time needs the source it came from.")
        try:
            if min(int(row[k]) for k in ("M", "N", "K")) < 1:
                raise ValueError
        except ValueError:
            raise CalibrationError(f"{where} needs positive integers M, N, K, not "
                                   f"{row['M']}x{row['N']}x{row['K']}.") from None
        try:
            time_us = float(row["time_us"])
        except ValueError:
            time_us = math.nan
        if not (math.isfinite(time_us) and time_us > 0):
            raise CalibrationError(f"{where} needs a positive time_us, a finite number of microseconds, not "
                                   f"'{row['time_us']}'.")
    return rows


def row_peak_bytes(fields: dict) -> int:
    """A worker's estimated peak memory for one row: see ROW_BASE_BYTES."""
    return ROW_BASE_BYTES + OUTPUT_BYTES * int(fields["M"]) * int(fields["N"])


def mem_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Bytes the system can give without swapping (MemAvailable), or None where it does not say."""
    try:
        found = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo.read_text(), re.M)
    except OSError:
        return None
    return int(found[1]) * 1024 if found else None


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


@dataclass(frozen=True)
class Workers:
    """How many rows are compiled and recorded at once, and why."""

    count: int
    note: str  # how the count was chosen, one line


def choose_workers(requested: int | None, cores: int, available: int | None, peaks: list[int]) -> Workers:
    """Worker processes for rows of estimated peak bytes `peaks`: `requested`, else one per core (no more than
    rows); either way each worker may hold the largest row at once, beside the parent, within `available` bytes
    (MemAvailable; None: unknown, not bounded). A request that does not fit, or a row that does not fit alone, is
    refused in one sentence before anything runs."""
    largest = max(peaks)
    wanted = requested or max(1, min(cores, len(peaks)))
    if available is None:
        return Workers(wanted, f"{wanted} worker(s); the memory available is unknown (no MemAvailable)")
    fits = (available - ROW_BASE_BYTES) // largest
    if fits < 1:
        raise CalibrationError(f"the largest row needs about {_gib(largest)} beside this process's "
                               f"{_gib(ROW_BASE_BYTES)}, and {_gib(available)} is available: free memory first.")
    if requested is not None and requested > fits:
        raise CalibrationError(f"--workers {requested} needs about {_gib(ROW_BASE_BYTES + requested * largest)} "
                               f"({requested} rows of up to {_gib(largest)} at once, and this process) and "
                               f"{_gib(available)} is available: use --workers {fits} or fewer.")
    count = min(wanted, fits)
    return Workers(count, f"{count} worker(s): {cores} core(s), {_gib(available)} available, up to "
                          f"{_gib(largest)} a row")


def _base(fields: dict) -> Row:
    return Row(fields["source"], fields["target"], fields["op"], int(fields["M"]), int(fields["N"]), int(fields["K"]),
               fields["layout"].lower(), fields["dtype"], fields["variant"], float(fields["time_us"]))


# A global-load DMA instruction in the ISA: a buffer/global load whose destination is LDS.
DMA_LOAD = re.compile(r"^\s*(buffer|global)_load_\w+ .*\blds\b", re.M)
FORCED = "DMA forced by a tuning spec (IREE 3.13 leaves this shape without it, flag or not)"


def dma_loads(folder: Path) -> int:
    return sum(len(DMA_LOAD.findall(p.read_text())) for p in (folder / "dump").glob("*.rocmasm"))


DMA = "#iree_gpu.use_global_load_dma"


def forced_dma(folder: Path, job: Job) -> Prepared:
    """IREE's own configuration of the kernel compiled in `folder`, with both operands copied into LDS by global-load
    DMA as IREE's own DMA configurations do it (a K-contiguous operand XOR-swizzled with xor_shuffle<64, 8>, the
    others plain; LDS rows unpadded), as a tuning spec for `job`."""
    configured = "".join(p.read_text() for p in (folder / "dump").glob("configured_*.mlir"))
    lowering = re.search(r"lowering_config = (#iree_gpu\.lowering_config<\{.*?\}>)", configured)
    translation = re.search(r"(#iree_codegen\.translation_info<pipeline = #iree_gpu\.pipeline<TileAndFuse>.*?\}>)\s*\}",
                            configured)
    if lowering is None or translation is None:
        raise TimingError(f"the configured IR in {folder} has no TileAndFuse configuration to give DMA to.")
    with ir.Context(), ir.Location.unknown():
        config = iree_gpu.LoweringConfigAttr(ir.Attribute.parse(lowering[1]))
        entries = {named.name: named.attr for named in config.attributes}
        entries["promotion_types"] = ir.ArrayAttr.get([ir.Attribute.parse(
            f"#iree_gpu.swizzle_operand<copy_config = {DMA}, swizzle = #iree_codegen.xor_shuffle<64, 8>>" if swizzled
            else DMA) for swizzled in k_contiguous(job.gemms[0])])
        info = iree_codegen.TranslationInfoAttr(ir.Attribute.parse(translation[1]))
        options = iree_gpu.PipelineOptionsAttr(info.configuration["gpu_pipeline_options"])
        configuration = {named.name: named.attr for named in info.configuration}
        configuration["gpu_pipeline_options"] = iree_gpu.PipelineOptionsAttr.get(
            prefetch_num_stages=options.prefetch_num_stages, no_reduce_shared_memory_bank_conflicts=True)
        compilation = iree_codegen.CompilationInfoAttr.get(
            iree_gpu.LoweringConfigAttr.get(ir.DictAttr.get(entries)),
            iree_codegen.TranslationInfoAttr.get(info.pass_pipeline, info.codegen_spec, list(info.workgroup_size),
                                                 info.subgroup_size, ir.DictAttr.get(configuration)))
        spec = str(tuning_spec([(job.gemms[0], compilation)]))
    return dataclasses.replace(flow.prepare(job), spec=spec)


def _record(fields: dict, root: str) -> tuple[Row, Recording | ProgramRecording | None]:
    """Compile the row as its source describes and record it; or the row with the sentence saying why not. A
    `dma_on` row whose kernel IREE compiled without DMA loads is compiled again with DMA forced (`forced_dma`)."""
    base = _base(fields)
    target = TARGETS.get(base.target)
    flags = VARIANTS.get(base.variant)
    why = (f"target {base.target} is not in the target table" if target is None else
           f"variant '{base.variant}' has no iree-compile recipe here" if flags is None else
           f"op '{base.op}' is not a GEMM this tool builds" if base.op not in OPS else None)
    if why or target is None or flags is None:
        return dataclasses.replace(base, note=why or ""), None
    try:
        gemm = Gemm(base.m, base.n, base.k, base.dtype, base.layout)
        folder = Path(root) / f"{base.target}_{base.m}x{base.n}x{base.k}_{base.layout}_{base.dtype}_{base.variant}"
        ukernel = base.variant in UKERNEL_VARIANTS
        job = Job(target, "ukernel" if ukernel else "default", (gemm,), (None,), iree_ukernels=ukernel)
        if not owned(folder / "report.json"):  # a row compiled before, by this tool (a --keep folder resumes)
            flow.compile_job(flow.prepare(job), folder, extra_flags=flags)
        if base.variant == "dma_on" and not dma_loads(folder):
            forced = folder.with_name(folder.name + "_forced")
            if not owned(forced / "report.json"):
                flow.compile_job(forced_dma(folder, job), forced)
            if not dma_loads(forced):
                raise TimingError("the tuning spec asked for global-load DMA and the kernel has no DMA loads.")
            return dataclasses.replace(base, note=FORCED), record(forced)
        return base, record(folder)
    except UserError as err:
        return dataclasses.replace(base, note=str(err)), None


_RECORDED: list = []  # a worker's copy of the recorded rows (set by its initializer)


def _keep(recorded: list) -> None:
    _RECORDED[:] = recorded


def _evaluate(index: int, timings: dict) -> Row:
    """Row `index` of the worker's recorded rows predicted with the given timing facts per target."""
    base, rec = _RECORDED[index]
    if rec is None:
        return base
    target = TARGETS[base.target]
    if base.target in timings:
        target = dataclasses.replace(target, timing=timings[base.target])
    try:
        prediction = replay(rec, target)
    except UserError as err:
        return dataclasses.replace(base, note=str(err))
    note = "; ".join(x for x in (base.note, OPS[base.op]) if x)
    return dataclasses.replace(base, predicted_us=prediction.microseconds, bound=prediction.bound, note=note)


def read_csv(path: Path, flag: str = "calibration file") -> list[dict]:
    """The rows of the CSV file at `path` (`read_rows`); a folder, a missing file or a binary one is one sentence."""
    if path.is_dir():
        raise CalibrationError(f"{flag} {path} is a folder; give the CSV file itself (the published rows ship as "
                               f"{PUBLISHED.name} in {PUBLISHED.parent}).")
    if not path.is_file():
        raise CalibrationError(f"{flag} {path} does not exist.")
    try:
        return read_rows(path.read_text(), str(path))
    except UnicodeDecodeError:
        raise CalibrationError(f"{path} is not a text CSV file.") from None


def shape_key(fields: dict) -> tuple:
    """The rows of one published kernel shape (its DMA on and off variants share a key)."""
    return tuple(fields[k].strip().lower() for k in ("source", "target", "op", "M", "N", "K", "layout", "dtype"))


def held_out(fields: list[dict], fraction: float, seed: int = 0) -> set[int]:
    """Indices of the rows held out of a fit: `fraction` of the distinct shapes (rounded, at least one, never all),
    drawn with `seed`; the variants of one shape stay together, so a held-out DMA pair is judged whole."""
    keys = sorted({shape_key(f) for f in fields})
    if len(keys) < 2:
        raise CalibrationError(f"--holdout {fraction} needs rows of at least two shapes; these rows have "
                               f"{len(keys)}.")
    count = min(max(1, round(fraction * len(keys))), len(keys) - 1)
    chosen = set(random.Random(seed).sample(keys, count))
    return {i for i, f in enumerate(fields) if shape_key(f) in chosen}


class Calibration:
    """Rows checked when made (nothing runs yet), recorded once on first use (compiled and traced in parallel), then
    predicted under any timing facts."""

    def __init__(self, fields: list[dict], workers: int | None = None, folder: Path | None = None):
        """`fields`: rows as `read_csv` gives them; `workers`: processes at once (None: one per core); refused if
        the memory available cannot hold them."""
        self.fields = fields
        self.workers = choose_workers(workers, cores(), mem_available(), [row_peak_bytes(f) for f in self.fields])
        self.folder = folder
        self.pool: ProcessPoolExecutor | None = None

    @property
    def recorded(self) -> list:
        """(Row, recording) per row, recorded on first use; the predicting workers keep a copy each."""
        if self.pool is None:
            context = multiprocessing.get_context("spawn")
            with tempfile.TemporaryDirectory(prefix="calibrate-") as scratch:
                with ProcessPoolExecutor(self.workers.count, mp_context=context) as pool:
                    self._recorded = gather(pool, self.workers.count, _record, self.fields,
                                            [str(self.folder or scratch)] * len(self.fields))
            self.pool = ProcessPoolExecutor(self.workers.count, mp_context=context, initializer=_keep,
                                            initargs=(self._recorded,))
        return self._recorded

    def rows(self, timings: dict | None = None) -> list[Row]:
        count = len(self.recorded)
        assert self.pool is not None
        return gather(self.pool, self.workers.count, _evaluate, range(count), [timings or {}] * count)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def fit(self, rounds: int = 2, skip: frozenset[int] = frozenset()) -> tuple[dict, list[Row]]:
        """Coordinate descent over each target's `fitted` timing facts (FIT_GRID), minimising the median |error|
        over the rows measured at ≥ MIN_US (ties: more DMA directions right), rows whose index is in `skip` (held
        out) neither fitted nor scored. Returns the facts and every row predicted with them."""
        timings: dict[str, Timing] = {}
        for index, (row, rec) in enumerate(self.recorded):
            timing = TARGETS[row.target].timing if rec is not None and index not in skip else None
            if timing is not None:
                timings[row.target] = timing
        fitting = lambda rows: [r for i, r in enumerate(rows) if i not in skip]  # noqa: E731
        best = self.rows(timings)
        for _ in range(rounds):
            for name in sorted(timings):
                for fact in timings[name].fitted:
                    for value in FIT_GRID.get(fact, ()):
                        change: dict[str, Any] = {fact: value}
                        trial = dict(timings, **{name: dataclasses.replace(timings[name], **change)})
                        rows = self.rows(trial)
                        if _score(fitting(rows)) < _score(fitting(best)):
                            timings, best = trial, rows
        return timings, best


def held_out_report(calibration: Calibration, timings: dict, rows: list[Row], skip: frozenset[int]) -> dict:
    """What a fit on the rows outside `skip` says about the rows in it: the fitted facts beside the target table's,
    the summaries of the fit rows and of the held-out rows (with the fitted facts and with the table's), and for each
    fitted fact the held-out summary with that fact alone changed from the table's value."""
    held = lambda rows: [r for i, r in enumerate(rows) if i in skip]  # noqa: E731
    fit_rows = [r for i, r in enumerate(rows) if i not in skip]
    constants = []
    for name, timing in sorted(timings.items()):
        table_timing = TARGETS[name].timing
        assert table_timing is not None  # a target with timing facts is the only kind fitted
        for fact in timing.fitted:
            alone = dict(timings, **{name: dataclasses.replace(table_timing, **{fact: getattr(timing, fact)})})
            constants.append({"target": name, "fact": fact, "table": getattr(table_timing, fact),
                              "fitted": getattr(timing, fact), "held_out": summary(held(calibration.rows(alone)))})
    return {"fitted": {name: {f: getattr(t, f) for f in t.fitted} for name, t in timings.items()},
            "fit": summary(fit_rows), "held_out": summary(held(rows)),
            "held_out_with_table_facts": summary(held(calibration.rows())), "constants": constants,
            "rows": [r.as_dict() for r in held(rows)]}


def _said(s: dict) -> str:
    median = f"{100 * s['median_abs_error']:.0f} %" if s["median_abs_error"] is not None else "–"
    return (f"{s['predicted']} of {s['rows']} rows predicted, median |error| {median} over {s['judged']} rows "
            f"≥ {MIN_US:.0f} µs, DMA direction right in {s['dma_sign_right']} of {s['dma_pairs']} pairs")


def render_held_out(report: dict) -> str:
    """The held-out rows' table (predicted with the fitted facts) and the lines that judge the fit."""
    rows = [Row(**{k: v for k, v in r.items() if k in Row.__dataclass_fields__}) for r in report["rows"]]
    lines = [table(rows), "", f"Held out: {report['held_out_from']}; the fit never saw these rows.",
             f"fit rows: {_said(report['fit'])}",
             f"held-out rows, fitted facts: {_said(report['held_out'])}",
             f"held-out rows, the target table's facts: {_said(report['held_out_with_table_facts'])}"]
    for c in report["constants"]:
        lines.append(f"{c['target']} {c['fact']}: table {c['table']}, fitted {c['fitted']}; held out with only this "
                     f"fact fitted: {_said(c['held_out'])}")
    return "\n".join(lines)


def gather(pool: ProcessPoolExecutor, workers: int, function, *arguments) -> list:
    """`pool.map` as a list; a worker that died (killed for memory, say) is one sentence, not a traceback."""
    try:
        return list(pool.map(function, *arguments))
    except BrokenProcessPool:
        raise CalibrationError(f"a calibration worker process died ({workers} ran at once; the system may have "
                               "killed it for memory): " + ("run again with --workers 1." if workers > 1 else
                                                            "free memory and run again.")) from None


# The values coordinate descent tries for each fitted fact.
# launch_us is tried at 3 µs or less only: whole MI355X dispatches were published at 2.9-3.5 µs (iree-org/iree PRs
# 24117 and 24411: bmm 32x96x21x96 with DMA, addmm 5x384x384), so a fit that raised the fixed cost (8 µs, when the
# grid allowed it) would be a fudge for something else. A value stays where no grid value does better.
FIT_GRID = {"vmem_latency": (300, 500, 800, 1200, 1800, 2600, 3600), "vmem_bytes_per_clk": (8, 16, 32, 64, 128),
            "barrier_latency": (16, 32, 64, 128, 256), "launch_us": (1.0, 2.0, 3.0),
            "matrix_clock_mhz": (1000, 1200, 1400, 1600, 1800, 2000, 2200, 2400),  # for a target that fits it
            "fabric_bytes_per_s": (4e12, 6e12, 8e12, 10e12, 12e12, 14e12, 17.2e12, 24e12)}


def _score(rows: list[Row]) -> tuple[float, int]:
    s = summary(rows)
    return (s["median_abs_error"] if s["median_abs_error"] is not None else float("inf"), -s["dma_sign_right"])


def dma_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(off, on) for every shape measured with global-load DMA off and on."""
    key = lambda r: (r.source, r.target, r.op, r.m, r.n, r.k, r.layout, r.dtype)  # noqa: E731
    on = {key(r): r for r in rows if r.variant == "dma_on"}
    return [(r, on[key(r)]) for r in rows if r.variant == "dma_off" and key(r) in on]


def summary(rows: list[Row]) -> dict:
    judged = [r for r in rows if r.error is not None and r.measured_us >= MIN_US]
    pairs = [(off, on) for off, on in dma_pairs(rows) if off.predicted_us is not None and on.predicted_us is not None]
    right = sum(_direction(off, on) == "right" for off, on in pairs)
    return {"rows": len(rows), "predicted": sum(r.predicted_us is not None for r in rows),
            "judged": len(judged), "median_abs_error": statistics.median(abs(r.error or 0.0) for r in judged)
            if judged else None, "dma_pairs": len(pairs), "dma_sign_right": right}


def _direction(off: Row, on: Row) -> str:
    """Whether the prediction moves the way the measurement does when DMA is turned on: "right", "wrong", or
    "none" when the two predictions are equal (IREE 3.13 compiled the same kernel both ways): no sign at all."""
    if off.predicted_us is None or on.predicted_us is None or on.predicted_us == off.predicted_us:
        return "none"
    return "right" if (on.measured_us < off.measured_us) == (on.predicted_us < off.predicted_us) else "wrong"


def table(rows: list[Row]) -> str:
    """Markdown: every row, measured against predicted, and the DMA direction per pair."""
    direction = {id(on): _direction(off, on) for off, on in dma_pairs(rows)}
    lines = ["| source | op | M×N×K | layout | variant | measured µs | predicted µs | error | DMA on/off sign | "
             "bound / note |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        predicted = f"{r.predicted_us:.1f}" if r.predicted_us is not None else "–"
        error = f"{100 * r.error:+.0f} %" if r.error is not None else "–"
        note = "; ".join(x for x in (r.bound, r.note) if x)
        lines.append(f"| {r.source} | {r.op} | {r.m}×{r.n}×{r.k} | {r.layout.upper()} | {r.variant} | "
                     f"{r.measured_us:.1f} | {predicted} | {error} | {direction.get(id(r), '')} | {note} |")
    s = summary(rows)
    median = f"{100 * s['median_abs_error']:.0f} %" if s["median_abs_error"] is not None else "–"
    lines += ["", f"{s['predicted']} of {s['rows']} rows predicted; median |error| over the {s['judged']} predicted "
              f"rows measured at ≥ {MIN_US:.0f} µs: {median}; DMA on/off direction right in {s['dma_sign_right']} of "
              f"{s['dma_pairs']} pairs (a pair whose two predictions are equal counts as not right). Predictions "
              "(PREDICTED, not measured) against published measurements."]
    return "\n".join(lines)


__all__ = ["Calibration", "CalibrationError", "Row", "TimingError", "held_out", "held_out_report", "read_csv",
           "render_held_out", "summary", "table"]
