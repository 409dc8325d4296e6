"""The `pipelines` command line's flags: the parser of every verb (`parser`, its handlers given by `pipelines.cli`),
the checks of flag values and of flags that need or exclude others, and the one-sentence `UsageError`."""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transforms.errors import UserError
from transforms.hopper import NAMES as HOPPER_NAMES
from transforms.problem import EPILOGUES, LAYOUTS
from transforms.schedule import (
    DEFAULT_RASTER_ROWS,
    LDS_LAYOUTS,
    WORKGROUP_ORDERS,
)
from transforms.warpgroups import SCHEDULES

from .named import (
    PIPELINES,
)
from .routes.hopper import HopperRoute
from .tables import PEAK_TFLOPS, TABLES
from .targets import TARGETS
from .tune import SEARCHES

MAX_K_STEPS = 64  # explain: the programs repeat after two K steps; more only lengthens the table


FORCE_FOLDER = ("write into a folder that holds files pipelines did not write (only the files pipelines writes "
                "are replaced; the others stay)")


FORCE_FILE = "overwrite a file that pipelines did not write"


class UsageError(UserError, ValueError):
    """A malformed flag value; the message is one sentence."""


def dims(text: str, count: tuple[int, ...], what: str) -> tuple[int, ...]:
    forms = " or ".join("x".join(["N"] * n) for n in count)
    try:
        values = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"{what} '{text}' must be integers of the form {forms}.") from None
    if len(values) not in count:
        raise UsageError(f"{what} '{text}' must have the form {forms}.")
    if min(values) < 1:
        raise UsageError(f"{what} '{text}' must be positive integers of the form {forms}.")
    return values


def _cluster_shape(text: str) -> tuple[int, int]:
    """An argparse type: CLUSTER_M or CLUSTER_M,CLUSTER_N, each 1 or 2 (workgroups of a Hopper cluster along M
    sharing B, along N sharing A), else argparse's one-line usage error."""
    sizes = text.split(",")
    if len(sizes) not in (1, 2) or any(size not in ("1", "2") for size in sizes):
        raise argparse.ArgumentTypeError(f"'{text}' is not CLUSTER_M or CLUSTER_M,CLUSTER_N, each 1 or 2")
    return int(sizes[0]), int(sizes[1]) if len(sizes) == 2 else 1


def _at_least(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in minimum..maximum, else argparse's one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"at least {minimum}" if maximum is None else f"in {minimum}..{maximum}"
            raise argparse.ArgumentTypeError(f"{value} must be {bounds}")
        return value

    return parse


def _finite(text: str) -> float:
    """An argparse type: a finite float (nan and inf make every output nan or inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number")
    return value


def writable(path: Path, kind: str, flag: str = "-o") -> None:
    """Refuse, before any work, an output `path` that cannot be written: a folder (kind "folder") whose nearest
    existing ancestor is not a folder we may create files in, or a file (kind "file") that is a folder or whose
    folder does not exist. The probe file is anonymous (O_TMPFILE where the OS has it) and gone at once."""
    if kind == "file" and path.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give the name of the file to write.")
    if kind == "folder" and path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a folder.")
    parent = path if kind == "folder" and path.is_dir() else path.parent
    if kind == "file" and not parent.exists():
        raise UsageError(f"cannot write {path}: folder {parent} does not exist.")
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"cannot write {path}: {existing} is a file, not a folder.")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise UsageError(f"cannot write {path}: {existing} does not accept new files ({err.strerror}).") from None


def one_line(message: str) -> str:
    """A message quoting user text (a --shape with a newline in it) stays one line."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2, like every other user error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see --help).\n")


# The problem flags' values when not given. Their parser defaults are None, so that a flag given where it means
# nothing (--alpha without the alpha-beta epilogue, --layout with an --input file) is refused rather than ignored.
PROBLEM_DEFAULTS = {"dtype": "bf16", "layout": "nn", "epilogue": "none", "alpha": 1.0, "beta": 1.0}


def _problem_args(parser: argparse.ArgumentParser, files: bool = False) -> None:
    """`files`: the verb also takes the problem as an --input file. The others still parse --input, only to say
    which verbs take it (`request.gemm_of`), and do not offer it in --help."""
    group = parser.add_argument_group("problem (either --shape or --input)" if files else "problem")
    group.add_argument("--shape", help="MxNxK or BxMxNxK (batch matmul)")
    group.add_argument("--dtype", help="f16, bf16, f8e4m3fnuz, f8e5m2fnuz, f8e4m3fn, f8e5m2 (default bf16)")
    group.add_argument("--layout", choices=LAYOUTS, help="nn (default), nt (B stored NxK) or tn (A stored KxM)")
    group.add_argument("--epilogue", choices=EPILOGUES, help="default none")
    group.add_argument("--alpha", type=_finite, help="alpha of the alpha-beta epilogue (default 1)")
    group.add_argument("--beta", type=_finite, help="beta of the alpha-beta epilogue (default 1)")
    group.add_argument("--input", type=Path, help="a .mlir file with linalg contractions, instead of --shape"
                       if files else argparse.SUPPRESS)


def _schedule_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, help=", ".join(TARGETS))
    parser.add_argument("--pipeline", default=None, help=f"{', '.join(PIPELINES)} (default: default)")
    group = parser.add_argument_group("schedule flags (override the named pipeline's schedule)")
    group.add_argument("--tile", help="workgroup tile MxNxK in elements, e.g. 256x128x64")
    group.add_argument("--warps", help="wave grid over the tile, e.g. 2x4")
    group.add_argument("--mma", help="MMA intrinsic, e.g. MFMA_F32_16x16x16_BF16 (see `pipelines list`)")
    group.add_argument("--prefetch", type=int, help="pipeline depth (prefetch stages) 0..3")
    group.add_argument("--dma", action="store_true", default=None, help="direct global->LDS loads (gfx950)")
    group.add_argument("--lds", choices=LDS_LAYOUTS, help="LDS rows padded, XOR- or rotate-swizzled, or neither")
    group.add_argument("--order", choices=WORKGROUP_ORDERS,
                       help="workgroup order: row-major, XCD-aware (ROCm) or rastered in groups of rows (codegen)")
    group.add_argument("--raster-rows", type=_at_least(1),
                       help=f"rows of tiles per group for --order raster (default {DEFAULT_RASTER_ROWS})")
    group.add_argument("--workgroup-size", type=_at_least(1), help="threads per workgroup (must match --warps)")
    group.add_argument("--waves-per-eu", type=_at_least(1), help="occupancy asked of LLVM (amdgpu-waves-per-eu)")


def distinct(values: Sequence[str], flag: str, what: str) -> None:
    """A list flag naming one thing twice would plan (and time) it twice."""
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise UsageError(f"{flag} names the {what} '{twice}' twice; give each once.")


def flag_name(name: str) -> str:
    return "-o" if name == "output" else "--" + name.replace("_", "-")


def given_flags(args, *names: str) -> list[str]:
    """The flags among the argument names `names` that the command line gave (their defaults are None or False)."""
    return [flag_name(name) for name in names if getattr(args, name, None) is not None
            and getattr(args, name) is not False]  # (0 and 0.0 are given values)


def listed_flags(flags: list[str]) -> str:
    return ", ".join(flags[:-1]) + " and " + flags[-1] if len(flags) > 1 else flags[0]


def _holdout(value: str) -> float | Path:
    """--holdout: a fraction of the shapes (0 < f < 1) or a CSV file of rows the fit never sees."""
    try:
        fraction = float(value)
    except ValueError:
        return Path(value)
    if not 0 < fraction < 1:
        raise argparse.ArgumentTypeError(f"a fraction holds out part of the shapes, so it lies between 0 and 1 "
                                         f"(exclusive), not {value}; or name a CSV file")
    return fraction


def _explain_help() -> str:
    """explain --schedule's help, from the schedule tables and the target table (which target has which kernel)."""
    where: dict[str, list[str]] = {}
    for target in TARGETS.values():
        for name in target.kernels:
            where.setdefault(name, []).append(target.name)
    own = "; ".join(f"{name} on {'/'.join(targets)}" for name, targets in where.items())
    hopper = [t.name for t in TARGETS.values() if t.kernel_route == HopperRoute.name]
    return (f"{', '.join(SCHEDULES)} (warp-group schedules); with --target, a generated kernel's own schedule "
            f"({own}); {', '.join(HOPPER_NAMES)} (the {'/'.join(hopper)} kernels, --tile and --stages)")


def parser(handlers: dict[str, Any], default_cache: Path) -> argparse.ArgumentParser:
    parser = _Parser(prog="pipelines", description="Compile linalg GEMMs for AMD (and NVIDIA, CPU) "
                                     "GPUs with schedules built in Python.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("compile", help="compile a GEMM and check that its schedule took effect")
    _problem_args(p, files=True)
    _schedule_args(p)
    p.add_argument("--schedule", help="generated warp-group kernel to inject as a ukernel: pingpong8 (gfx942, "
                   "gfx950), pingpong8_dma (gfx950), interleave4 and producer_consumer (gfx942, gfx950), "
                   "double_buffered_dma (gfx950), "
                   "interleave "
                   "(gfx1151), double_buffered (all)")
    p.add_argument("--split-k", type=_at_least(2), help="split the reduction this many ways: IREE computes the "
                   "partial GEMMs in one dispatch and their sum in a second, configuring both itself (GPU targets, "
                   "--pipeline default; verified)")
    p.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    p.add_argument("--force", action="store_true", help=FORCE_FOLDER)
    p.add_argument("--json", action="store_true", help="print report.json instead of the summary")
    p.set_defaults(run=handlers["compile"])
    p = sub.add_parser("spec", help="print only the transform script (tuning spec)")
    _problem_args(p, files=True)
    _schedule_args(p)
    p.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.set_defaults(run=handlers["spec"])
    p = sub.add_parser("inspect", help="statistics of a compiled folder")
    p.add_argument("folder", type=Path)
    p.add_argument("--json", action="store_true")
    p.add_argument("--jit", action="store_true", help="on the GPU machine: registers, spills and occupancy of the "
                   "largest CUDA kernel as the driver JIT-compiles its PTX (one JSON line)")
    p.set_defaults(run=handlers["inspect"])
    p = sub.add_parser("bench", help="compile and benchmark a problem or a suite against IREE's default and the "
                       "vendor library, with correctness")
    _problem_args(p)
    p.set_defaults(shape=None)
    p.add_argument("--target", help=", ".join(TARGETS))
    p.add_argument("--suite", help="suite name (pipelines/suites/*.json) or a .json file")
    p.add_argument("--pipelines", help="comma-separated pipelines (default: default,tuned, those the target has)")
    p.add_argument("--device", action="append", help="cuda, cuda://1, hip, local-task; repeat for several GPUs")
    p.add_argument("--repetitions", type=_at_least(1), help="timed repetitions of each case (default 5)")
    p.add_argument("--compile-only", action="store_true", help="write the plan, run nothing")
    p.add_argument("--plan", type=Path, help="run a plan written by --compile-only")
    p.add_argument("-o", "--output", type=Path, help="plan and results folder (an existing plan resumes)")
    p.add_argument("--force", action="store_true", help=FORCE_FOLDER)
    p.set_defaults(run=handlers["bench"])
    p = sub.add_parser("report", help="render a folder's results.jsonl as CSV, Markdown and PNG, or a table of "
                       "measured rows (--table)")
    p.add_argument("inputs", type=Path, nargs="+", metavar="FOLDER|FILE",
                   help="a bench or tune folder; with --table, the files the table reads")
    p.add_argument("--table", choices=TABLES, help="; ".join(
        f"{t.name}: {', '.join(t.inputs)}" for t in TABLES.values()) + " (Markdown on stdout, or -o FILE)")
    p.add_argument("-o", "--output", type=Path, help="the reports' folder; with --table, a Markdown file")
    p.add_argument("--title", help="the reports' title (default 'GEMM benchmark')")
    p.add_argument("--tuned", help="--table model: the tuned module's name in the rows file (default tuned)")
    p.add_argument("--default", help="--table model: IREE's default module's name (default default)")
    p.add_argument("--peak-tflops", type=_finite, help=f"--table skinny: the dense peak of the roofline "
                   f"(default {PEAK_TFLOPS}, H100 SXM bf16)")
    p.add_argument("--force", action="store_true", help=f"{FORCE_FOLDER}; with --table: {FORCE_FILE}")
    p.set_defaults(run=handlers["report"])
    p = sub.add_parser("tune", help="search schedules for one problem and keep the fastest correct one")
    _problem_args(p)
    p.add_argument("--target", required=True)
    p.add_argument("--device", action="append")
    p.add_argument("--repetitions", type=_at_least(1), help="timed repetitions of each candidate (default 3)")
    p.add_argument("--limit", type=_at_least(1), help="benchmark at most this many candidates")
    p.add_argument("--route", choices=tuple(SEARCHES), default="config",
                   help="search compilation_info schedules (config), the transform-dialect codegen route (CUDA), "
                        "split-K plans (split: S, tile and kernel of the split-k pipeline) or the target's own "
                        "kernels (hopper, sm_90a: kind, tile, stages, tile order, cluster)")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--cache", type=Path, default=default_cache, help="the tune cache (JSON), which answers the same "
                   "search again (problem, route, device, --limit), saying so; --force searches anyway")
    p.add_argument("--force", action="store_true", help="ignore the cache, and " + FORCE_FOLDER)
    p.add_argument("-o", "--output", type=Path, required=True, help="plan folder (an existing plan resumes)")
    p.add_argument("--workers", type=_at_least(1), help="start a local dask cluster with this many CPU workers "
                   "(compiles; predictions with --device model); needs the cluster extra (default: no cluster)")
    p.add_argument("--gpus", type=_at_least(1), help="local dask cluster: this many GPU workers, one per GPU "
                   "(benchmarks; default: none)")
    p.add_argument("--scheduler", help="run compiles and benchmarks on the dask cluster of this scheduler address "
                   "(tcp://HOST:PORT, or tls:// with certificates from your dask configuration)")
    p.set_defaults(run=handlers["tune"])
    p = sub.add_parser("tune-model", help="schedule every contraction of a model (.onnx, importer MLIR or linalg): "
                       "one merged tuning spec, verified in the compiled model (compile-only)")
    p.add_argument("model", type=Path, help="an .onnx file, the torch-dialect MLIR an importer wrote, or linalg")
    p.add_argument("--target", required=True)
    p.add_argument("--pipeline", default="auto",
                   help="named pipeline that schedules each contraction (auto, tuned; codegen on CUDA; hopper on "
                   "sm_90a: the Hopper kernels)")
    p.add_argument("--with-spec", type=Path, help="a tuning spec of yours to link in ahead of the project's (ROCm)")
    p.add_argument("--search", type=_at_least(1), metavar="N", help="AMD targets: search up to N candidates per "
                   "contraction, ranked by the timing model (PREDICTED), and use the fastest where it beats IREE's "
                   "default (default: no search, the named pipeline's schedules)")
    p.add_argument("--workers", type=_at_least(1), help="--search on a local dask cluster of this many workers "
                   "(default: no cluster)")
    p.add_argument("--scheduler", help="--search on the dask cluster of this scheduler")
    p.add_argument("--predict", action="store_true", help="AMD targets: also the PREDICTED time (timing model) of "
                   "each contraction with its schedule and with IREE's default, each compiled alone")
    p.add_argument("--split-consumers", action="store_true", help="--pipeline hopper: leave the elementwise "
                   "consumers after a contraction's rounding (a Gelu) to IREE's own dispatches (default: in the "
                   "kernel's store, faster on an H100: results/h100/hopper-model/probe/)")
    p.add_argument("--iree-softmax", action="store_true", help="--pipeline hopper: leave each softmax to IREE's own "
                   "dispatch (default: the row softmax kernel, one read and one write of the rows; 2.9x faster than "
                   "IREE's on an H200: results/h200/softmax/)")
    p.add_argument("--iree-transposes", action="store_true", help="--pipeline hopper: leave the program's "
                   "transposes into and out of attention's heads to IREE's own dispatches (default: the products "
                   "whose C the program splits into heads, or joins back from them, store it so themselves; the "
                   "multi-head block 6 %% faster on an H200: results/h200/timeline/run12/)")
    p.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    p.add_argument("--force", action="store_true", help=FORCE_FOLDER)
    p.set_defaults(run=handlers["tune_model"])
    p = sub.add_parser("explain", help="a warp-group schedule as a phase table and timeline, hazard-checked")
    p.add_argument("--schedule", required=True, help=_explain_help())
    p.add_argument("--tile", help="block tile MxNxK")
    p.add_argument("--k-steps", type=_at_least(1, MAX_K_STEPS), default=4, help="K steps to unroll (default 4)")
    p.add_argument("--lds-stages", type=int, choices=(1, 2), help="pingpong8: 1 (register prefetch, gfx942) or 2")
    p.add_argument("--stages", type=int, help="hopper-*: shared-memory stages (default 4)")
    p.add_argument("--cluster", type=_cluster_shape, help="hopper-*: workgroups per cluster, CLUSTER_M (along M, "
                   "sharing B) or CLUSTER_M,CLUSTER_N (along N too, sharing A), each 1 or 2 (default 1)")
    p.add_argument("--target", help="check the schedule's LDS against this target")
    p.add_argument("-o", "--output", type=Path, help="write the timeline picture (PNG) here")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.set_defaults(run=handlers["explain"])
    p = sub.add_parser("emulate", help="run a compiled AMD GEMM on the CPU emulator and check it against float64")
    p.add_argument("folder", type=Path, help="a folder written by `pipelines compile`")
    p.add_argument("--shape", help="MxNxK the kernel must have been compiled for (kernels are static)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="seeds the inputs and the wave interleaving")
    p.add_argument("--workgroups", type=_at_least(1), help="run this many workgroups drawn at random (seeded) and "
                   "check what they store; for large problems")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=handlers["emulate"])
    p = sub.add_parser("predict", help="PREDICTED time of a compiled AMD GEMM: the emulator's instruction streams "
                                       "replayed on the timing model (not a measurement)")
    p.add_argument("folder", type=Path, help="a folder written by `pipelines compile` for gfx942, gfx950 or gfx1151")
    p.add_argument("--seed", type=_at_least(0), default=0, help="seeds the inputs and the wave interleaving")
    p.add_argument("--timeline", type=Path, help="draw the steady-state K loop as replayed, one row per wave (PNG)")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=handlers["predict"])
    p = sub.add_parser("calibrate", help="published AMD kernel times against the timing model's predictions")
    p.add_argument("--csv", type=Path, required=True,
                   help="rows of source,gpu,target,op,M,N,K,layout,dtype,variant,time_us; the published MI355X "
                        "rows ship as pipelines/timing/data/amd-measured-calibration.csv")
    p.add_argument("--workers", type=_at_least(1),
                   help="rows compiled and predicted at once (default: one per core). Each worker may hold the "
                        "largest row, estimated at 0.5 GiB + 6 B per output element (measured), within the memory "
                        "the system has available (MemAvailable): the default stays inside it, and more than it "
                        "holds is refused")
    p.add_argument("--keep", type=Path, help="compile the rows into this folder and keep them (reused when run again)")
    p.add_argument("--force", action="store_true", help="--keep: " + FORCE_FOLDER)
    p.add_argument("--fit", action="store_true", help="fit the target's `fitted` timing facts to the rows first "
                                                      "(coordinate descent on the median |error|) and print them")
    p.add_argument("--holdout", type=_holdout, metavar="FRACTION|FILE",
                   help="fit on part of the rows and judge the rest, which the fit never sees: a fraction of the "
                        "--csv shapes drawn with --seed (a shape's DMA on and off rows stay together), or a CSV file "
                        "of other rows; prints the held-out table, the fitted facts and each one's held-out error")
    p.add_argument("--seed", type=_at_least(0), default=0, help="--holdout FRACTION: which shapes are held out")
    p.add_argument("--json", action="store_true", help="one object per row: its fields plus predicted_us")
    p.set_defaults(run=handlers["calibrate"])
    p = sub.add_parser("list", help="targets, pipelines and MMA intrinsics")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=handlers["list"])
    return parser


# Flags (argument names) that mean something only with another: given without it, each would be ignored.
FLAG_NEEDS = {
    "spec": (("force", "output", "--force lets -o overwrite a file"),),
    "explain": (("force", "output", "--force lets -o overwrite a picture"),),
    "predict": (("force", "timeline", "--force lets --timeline overwrite a picture"),),
    "tune-model": (("workers", "search", "--workers runs --search on a local cluster"),
                   ("scheduler", "search", "--scheduler runs --search on a cluster")),
}


# Flags that contradict another: with the first, the second would be ignored.
FLAG_EXCLUDES = {
    "bench": (("compile_only", "repetitions", "--compile-only runs nothing, so nothing is repeated"),),
    "tune": (("compile_only", "repetitions", "--compile-only runs nothing, so nothing is repeated"),),
    "inspect": (("jit", "json", "--jit prints one JSON line already"),),
}


def check_flag_pairs(args) -> None:
    """Refuse a flag the command would ignore because of another one given or missing (`FLAG_NEEDS`,
    `FLAG_EXCLUDES`), before any work."""
    for flag, needed, what in FLAG_NEEDS.get(args.command, ()):
        if given_flags(args, flag) and not given_flags(args, needed):
            raise UsageError(f"{what}; give {flag_name(needed)} too, or leave {flag_name(flag)} out.")
    for flag, other, what in FLAG_EXCLUDES.get(args.command, ()):
        if given_flags(args, flag) and given_flags(args, other):
            raise UsageError(f"{what}; give {flag_name(flag)} or {flag_name(other)}, not both.")
