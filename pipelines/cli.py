"""The `pipelines` command: compile, spec, inspect, bench, report, tune, tune-model, explain, emulate, predict,
calibrate and list.

Parses flags into a problem (a `Gemm` or a user `.mlir`), a target and a schedule (a named pipeline, optionally
overridden field by field with schedule flags), hands them to `flow` (or to bench, tune, the emulator), and prints
the report. Every error a user can cause derives from `transforms.errors.UserError`; `main` catches that once and
prints it as one sentence with exit code 2 (Ctrl-C: exit 130).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


from transforms.errors import UserError
from transforms.problem import DTYPE_ALIASES, EPILOGUES, LAYOUTS, Epilogue, Gemm, describe_epilogue, \
    parse_shape
from transforms.hazards import Hazard, check
from transforms.schedule import DEFAULT_RASTER_ROWS, LDS_LAYOUTS, WORKGROUP_ORDERS, Schedule, Staging, Swizzle, \
    Tile, WarpGroups
from transforms.kernels import KERNELS, Kernel, kernel_schedule
from transforms.split_k import SplitK
from transforms.hopper import NAMES as HOPPER_NAMES, HopperError, HopperSchedule, parse_schedule as parse_hopper
from transforms.hopper_protocol import ProtocolHazard, check as check_protocol, step_table
from transforms.warpgroups import SCHEDULES, Interleave4, LdsBudgetError, check_lds

from . import flow
from .bench import build_plan, load_suite, suite_cases
from .device_units import device_units
from .emulator import emulate_gemm
from .emulator.foreign import is_foreign
from .explain import hopper_png, hopper_text, text_table, timeline_png
from .inspect import inspect_dump, read_report
from .model_input import read_model, schedulable_contractions, spec_reads_dispatches, to_linalg
from .named import PIPELINES, get_pipeline, kernel_plan, model_choice, pipelines_for, plan_for, plan_job, \
    schedule_for, why_default, with_splits
from .output import FILE_MARK, PLAN_FILES, admit_file, admit_folder, owned, work_folder, write_file
from .report import REPORT_FILES, write_reports
from .cluster import ClusterSpec, cluster_spec, open_cluster
from .runner import check_distinct_devices, device_or_error, environment, run_failures, run_plan
from .targets import TARGETS, TargetError, check_kernel_target, get_target, kernel_targets
from .routes import ROUTES, codegen_route_name, kernel_route, route_for
from .routes.split import SplitReductionRoute
from .timing.calibrate import Calibration, held_out, held_out_report, read_csv, render_held_out
from .timing.calibrate import table as calibration_table
from .timing.device import KEPT, check_devices, is_model, predict_plan
from .timing.predict import predict
from .tune import SEARCHES, finalize, from_cache, plan_search, search_limit, write_best
from .tune_model import markdown, tune_model
from .tune_cache import MODEL, Search, cached, device_kind, read_cache, tune_cache
from .verify import FallbackError

DEFAULT_CACHE = tune_cache()
MAX_K_STEPS = 64  # explain: the programs repeat after two K steps; more only lengthens the table


FORCE_FOLDER = ("write into a folder that holds files pipelines did not write (only the files pipelines writes "
                "are replaced; the others stay)")
FORCE_FILE = "overwrite a file that pipelines did not write"


class UsageError(UserError, ValueError):
    """A malformed flag value; the message is one sentence."""


def _dims(text: str, count: tuple[int, ...], what: str) -> tuple[int, ...]:
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


def _writable(path: Path, kind: str, flag: str = "-o") -> None:
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


def _one_line(message: str) -> str:
    """A message quoting user text (a --shape with a newline in it) stays one line."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2, like every other user error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see --help).\n")


# The problem flags' values when not given. Their parser defaults are None, so that a flag given where it means
# nothing (--alpha without the alpha-beta epilogue, --layout with an --input file) is refused rather than ignored.
PROBLEM_DEFAULTS = {"dtype": "bf16", "layout": "nn", "epilogue": "none", "alpha": 1.0, "beta": 1.0}


def _problem_args(parser: argparse.ArgumentParser, files: bool = False) -> None:
    """`files`: the verb also takes the problem as an --input file. The others still parse --input, only to say
    which verbs take it (`_gemm`), and do not offer it in --help."""
    group = parser.add_argument_group("problem (either --shape or --input)" if files else "problem")
    group.add_argument("--shape", help="MxNxK or BxMxNxK (batch matmul)")
    group.add_argument("--dtype", help="f16, bf16, f8e4m3fnuz, f8e5m2fnuz, f8e4m3fn, f8e5m2 (default bf16)")
    group.add_argument("--layout", choices=LAYOUTS, help="nn (default), nt (B stored NxK) or tn (A stored KxM)")
    group.add_argument("--epilogue", choices=EPILOGUES, help="default none")
    group.add_argument("--alpha", type=_finite, help="alpha of the alpha-beta epilogue (default 1)")
    group.add_argument("--beta", type=_finite, help="beta of the alpha-beta epilogue (default 1)")
    group.add_argument("--input", type=Path, help="a .mlir file with linalg contractions, instead of --shape"
                       if files else argparse.SUPPRESS)


def _problem_value(args, name: str):
    value = getattr(args, name)
    return PROBLEM_DEFAULTS[name] if value is None else value


def _check_epilogue_flags(args) -> None:
    """--alpha and --beta scale the alpha-beta epilogue; with any other they would be dropped without a word."""
    given = [f"--{name}" for name in ("alpha", "beta") if getattr(args, name) is not None]
    if given and args.epilogue != "alpha-beta":
        raise UsageError(f"{' and '.join(given)} {'scale' if len(given) > 1 else 'scales'} the alpha-beta epilogue; "
                         f"add --epilogue alpha-beta (the epilogue is {args.epilogue or 'none'}).")


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


_SCHEDULE_FLAGS = ("tile", "warps", "mma", "prefetch", "dma", "lds", "order", "raster_rows", "workgroup_size",
                   "waves_per_eu")


def _schedule_flags_given(args) -> bool:
    return any(getattr(args, f) is not None for f in _SCHEDULE_FLAGS)


def _gemm(args) -> Gemm:
    files = args.command in ("compile", "spec")  # the commands that read --input files (in `_job`)
    if args.input is not None and not files:
        raise UsageError(f"`pipelines {args.command}` takes the problem as --shape; --input files are for compile "
                         "and spec.")
    if args.shape is None:
        raise UsageError(f"give the problem as --shape MxNxK (or BxMxNxK){' or as --input FILE.mlir' * files}.")
    batch, m, n, k = parse_shape(args.shape)
    name = _problem_value(args, "dtype")
    dtype = DTYPE_ALIASES.get(name.lower())
    if dtype is None:
        raise UsageError(f"unknown --dtype '{name}'; choose one of {', '.join(DTYPE_ALIASES)}.")
    _check_epilogue_flags(args)
    return Gemm(m, n, k, dtype, _problem_value(args, "layout"), batch,
                Epilogue(*(_problem_value(args, f) for f in ("epilogue", "alpha", "beta"))))


def _schedule(args, gemm: Gemm, target) -> Schedule | None:
    pipeline = get_pipeline(args.pipeline or "default")
    if not _schedule_flags_given(args):
        return schedule_for(pipeline.name, gemm, target)
    base = pipeline.choose(gemm, target)  # flags override the pipeline's own schedule, not the model's choice
    if base is None and (args.tile is None or args.mma is None):
        raise UsageError("schedule flags without a named pipeline need at least --tile and --mma.")
    tile = base.tile if base else Tile((0, 0), 0, (2, 2), "")
    if args.tile:
        m, n, k = _dims(args.tile, (3,), "tile")
        tile = dataclasses.replace(tile, workgroup=(m, n), k=k)
    if args.warps:
        warps = _dims(args.warps, (2,), "warps")
        tile = dataclasses.replace(tile, warps=(warps[0], warps[1]))
    if args.mma:
        tile = dataclasses.replace(tile, mma=args.mma)
    staging = base.staging if base else Staging()
    staging = Staging(staging.prefetch_stages if args.prefetch is None else args.prefetch,
                      staging.direct_to_lds if args.dma is None else args.dma)
    swizzle = base.swizzle if base else Swizzle()
    order = args.order or swizzle.workgroup_order
    swizzle = Swizzle(args.lds or swizzle.lds, order,
                      args.raster_rows if args.raster_rows is not None else
                      swizzle.raster_rows if order == swizzle.workgroup_order else None)
    groups = base.warp_groups if base else WarpGroups()
    groups = WarpGroups(args.workgroup_size or groups.workgroup_size,
                        args.waves_per_eu if args.waves_per_eu is not None else groups.waves_per_eu)
    return Schedule(tile, staging, swizzle, groups)


def _check_pipeline(name: str, target) -> None:
    """`name` is a pipeline and runs on `target`; else one sentence naming the ones that do."""
    get_pipeline(name)
    if not target.gpu and name not in pipelines_for(target):
        raise TargetError(f"the {target.name} target has only the 'default' pipeline (IREE's CPU codegen), not "
                          f"'{name}'.")
    if name not in pipelines_for(target):
        raise TargetError(f"pipeline '{name}' does not run on {target.name}; choose one of "
                          f"{', '.join(pipelines_for(target))}.")


def _read_input(path: Path) -> str:
    if path.is_dir():
        raise UsageError(f"--input {path} is a folder; give a .mlir file.")
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist.")
    return read_model(path)


def _job(args) -> flow.Job:
    job = _scheduled_job(args)
    split = getattr(args, "split_k", None)
    if isinstance(job.plan, SplitK) and split is not None:
        return dataclasses.replace(job, plan=with_splits(job.plan, split),
                                   split_reason=f"split-K {split}: asked for with --split-k")
    if split is None:
        return job
    if job.pipeline != "default" or job.route or job.iree_ukernels:
        raise UsageError(f"--split-k {split} splits the reduction under IREE's own configuration; give it with "
                         f"--pipeline default and no schedule flags, not '{job.pipeline}'.")
    if not route_for(job).splits_reduction:
        raise UsageError(f"--split-k runs on the GPU targets, not {job.target.name}.")
    if any(g.batch or g.epilogue.kind != "none" for g in job.gemms):
        raise UsageError(f"--split-k {split} splits plain GEMMs; batch matmuls and epilogues are not split yet.")
    return dataclasses.replace(job, split_k=split)


def _scheduled_job(args) -> flow.Job:
    target = get_target(args.target)
    _check_pipeline(args.pipeline or "default", target)
    pipeline = args.pipeline or "default"
    if _schedule_flags_given(args):
        pipeline = "custom" if pipeline == "default" else f"{pipeline}+flags"
    named = get_pipeline(args.pipeline or "default")
    if args.input is not None:
        if args.shape is not None:
            raise UsageError("give either --shape or --input, not both.")
        if getattr(args, "schedule", None):
            raise UsageError(f"--schedule {args.schedule} builds a kernel for a --shape problem, not for an "
                             "--input file.")
        given = [f"--{name}" for name in PROBLEM_DEFAULTS if getattr(args, name) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} {'describes' if len(given) == 1 else 'describe'} a --shape problem; "
                             "an --input file states its own.")
        text = to_linalg(_read_input(args.input), target, str(args.input))
        # A tuning spec matches the contractions IREE dispatches (transposes folded in, fusions formed), so those
        # get schedules there; compilation_info goes on the source's own ops.
        gemms = schedulable_contractions(text, target, str(args.input),
                                         not named.codegen and spec_reads_dispatches(target))
        # The schedule is chosen for the contraction; an elementwise consumer fuses into its dispatch.
        schedules = [_schedule(args, g.with_(epilogue=Epilogue()), target) for g in gemms]
        return flow.Job(target, pipeline, tuple(gemms), tuple(schedules), user_source=text,
                        route=codegen_route_name(target) if named.codegen else "", iree_ukernels=named.ukernels)
    gemm = _gemm(args)
    if getattr(args, "schedule", None):
        if args.pipeline or _schedule_flags_given(args):
            raise UsageError(f"--schedule {args.schedule} is a whole kernel; it takes no --pipeline or schedule "
                             "flags.")
        if args.schedule.partition(":")[0] in HOPPER_NAMES:
            try:
                return plan_job(target, args.schedule, gemm, parse_hopper(args.schedule))
            except HopperError as err:
                raise UsageError(str(err)) from None
        check_kernel_target(args.schedule, target)
        kernel = kernel_schedule(args.schedule, gemm.dtype, target)
        return plan_job(target, args.schedule, gemm, kernel)
    kernel_choice = None if _schedule_flags_given(args) else kernel_plan(named.name, gemm, target)
    if kernel_choice is not None:
        return plan_job(target, pipeline, gemm, kernel_choice)
    choice = None if _schedule_flags_given(args) else model_choice(named.name, gemm, target)
    if choice is not None:
        job = plan_job(target, pipeline, gemm, choice.chosen.plan)
        return dataclasses.replace(job, choice=choice)
    if named.split is not None and not _schedule_flags_given(args):
        split, why = named.split(gemm, target, None)  # compile has no device: the target table's compute units
        if split is not None:
            return flow.Job(target, pipeline, (gemm,), (None,), route=SplitReductionRoute.name, plan=split,
                            split_reason=why)
    return flow.Job(target, pipeline, (gemm,), (_schedule(args, gemm, target),),
                    route=codegen_route_name(target) if named.codegen else "", iree_ukernels=named.ukernels)


def cmd_compile(args) -> int:
    _writable(args.output, "folder")
    admit_folder(args.output, "compile", args.force, (flow.SOURCE_FILE, flow.REPORT_FILE), (args.input,))
    prepared = flow.prepare(_job(args))
    report = flow.compile_job(prepared, args.output, force=args.force)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"wrote {args.output}/ ({report['files']['vmfb']}, {flow.SOURCE_FILE}"
              f"{', ' + flow.SPEC_FILE if report['files']['spec'] else ''}, {flow.REPORT_FILE})")
        print(render_report(report))
    return 0


def cmd_spec(args) -> int:
    if args.output:
        _writable(args.output, "file")
        admit_file(args.output, args.force, (args.input,))
    job = _job(args)
    refusal = route_for(job).spec_refusal(job)
    if refusal is not None:
        raise UsageError(refusal)
    prepared = flow.prepare(job)
    if prepared.spec is None:
        name = args.pipeline or "default"
        why = (why_default(name, job.gemms[0], job.target) if len(job.gemms) == 1 else
               f"pipeline '{name}' leaves every contraction of {args.input} to IREE's default heuristic")
        raise UsageError(f"{why}; it schedules nothing, so there is no transform script (give schedule flags, "
                         "at least --tile and --mma, or another pipeline).")
    if args.output:
        # The first line names the tool, so the next `spec -o` recognises the file as its own to overwrite.
        write_file(args.output, f"// {FILE_MARK}\n{prepared.spec}", args.force)
    else:
        sys.stdout.write(prepared.spec)
    return 0


def cmd_inspect(args) -> int:
    report = read_report(args.folder / flow.REPORT_FILE)
    target = get_target(report["target"])
    dump = args.folder / report["files"]["dump"]
    if not dump.is_dir():
        raise UsageError(f"{args.folder} has {flow.REPORT_FILE} but no {report['files']['dump']}/ folder with the "
                         "compiled ISA; compile it again to inspect it.")
    route = ROUTES.get(str(report.get("route")))  # a report that names its route (the Hopper kernels')
    kernels = route.inspect(dump, target) if route is not None else inspect_dump(dump, target)
    if not kernels:
        raise UsageError(f"{dump} holds no compiled dispatch; compile the folder again to inspect it.")
    report["dispatches"] = [k.as_dict() for k in kernels]
    print(json.dumps(report, indent=2) if args.json else render_report(report))
    return 0


def cmd_list(args) -> int:
    rows: list[dict[str, Any]] = []
    for target in TARGETS.values():
        rows.append({"target": target.name, "backend": target.backend, "description": target.description,
                     "wave_size": target.wave_size, "lds_bytes": target.lds_bytes, "dtypes": list(target.dtypes),
                     "pipelines": pipelines_for(target), "routes": {"schedule": target.schedule_route,
                                                                    "codegen": target.codegen_route,
                                                                    "kernel": target.kernel_route},
                     "kernels": list(target.kernels), "kernel_schedules": list(getattr(
                         kernel_route(target), "schedules", ())), "mma": {k: v.opcode for k, v in target.mma.items()},
                     "peak_tflops": target.peak_tflops, "sources": list(target.sources)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['target']} ({row['backend']}): {row['description']}")
        print(f"  wave {row['wave_size']}, LDS {row['lds_bytes']} B, inputs {', '.join(row['dtypes'])}, "
              f"peak {row['peak_tflops'] or 'n/a'} TFLOP/s")
        print(f"  pipelines: {', '.join(row['pipelines'])}")
        print(f"  routes: schedules through {row['routes']['schedule']}"
              + (f", codegen through {row['routes']['codegen']}" if row["routes"]["codegen"] else "")
              + (f", its own kernels through {row['routes']['kernel']} ({', '.join(row['kernel_schedules'])})"
                 if row["routes"]["kernel"] else ""))
        if row["kernels"]:
            print(f"  kernels: {', '.join(row['kernels'])}")
        for name, opcode in row["mma"].items():
            print(f"  {name:34s} -> {opcode}")
    print("\npipelines:")
    for p in PIPELINES.values():
        print(f"  {p.name:8s} {p.summary}")
    return 0


def _device_hint(target) -> str:
    return target.device_drivers[0]


def _devices(args, target) -> list[str]:
    """The --device values, each checked before any compiling: it runs `target`'s executables, and it opens."""
    devices = args.device or []
    check_distinct_devices(devices)
    if getattr(args, "compile_only", False) and devices and not is_model(devices):
        raise UsageError(f"--compile-only runs nothing, so --device {devices[0]} would not be used; leave it out "
                         "(only --device model changes the plan: it keeps what the timing model reads).")
    if is_model(devices):  # the AMD timing model: predictions, opened by nothing
        if getattr(args, "repetitions", None) is not None:
            raise UsageError("--device model predicts each case once, so --repetitions would not be used; leave it "
                             "out.")
        check_devices(devices, target)
        return devices
    for device in devices:
        if device.split("://")[0] not in target.device_drivers:
            model = " or model (predicted)" if target.timing else ""
            raise UsageError(f"--device {device} cannot run {target.name} executables; use --device "
                             f"{' or '.join(target.device_drivers)}{model} (or --compile-only to only compile).")
        device_or_error(device)
    return devices


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{what} {path} is not valid JSON ({err}).") from None


# What the runner reads from each case of a plan.json.
_PLAN_CASE_KEYS = {"id": str, "label": str, "status": str, "problem": dict, "pipeline": str, "function": str,
                   "input_shapes": list, "input_dtypes": list, "flops": int, "repeat": int}


def _plan_target(plan: Path):
    """The target a plan folder was compiled for, read from its plan.json (one sentence if it cannot be)."""
    meta = _read_json(plan / "plan.json", "plan")
    cases = meta.get("cases") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("target"), str) or not isinstance(cases, list) or not all(
            isinstance(c, dict) and all(isinstance(c.get(key), kind) for key, kind in _PLAN_CASE_KEYS.items())
            for c in cases):
        raise UsageError(f"plan {plan / 'plan.json'} is not a 'target' with a list of 'cases' as `pipelines bench "
                         "--compile-only` writes them; write it again.")
    return get_target(meta["target"])


def _run(plan: Path, devices: list[str], repetitions: int, client=None) -> Path:
    """Measure the plan on the devices, or predict it with the timing model (`--device model`); with `client`, as
    tasks on its cluster (predictions on CPU workers, benchmarks on GPU workers)."""
    if is_model(devices):
        return predict_plan(plan, os.cpu_count() or 1, client=client)
    return run_plan(plan, devices, repetitions, client=client)


def _cluster_spec(args, devices: list[str]) -> ClusterSpec:
    """--scheduler / --workers / --gpus as a ClusterSpec (GPU workers see one GPU each through the visibility
    variable of the --device driver)."""
    workers, gpus = getattr(args, "workers", None) or 0, getattr(args, "gpus", None) or 0
    if gpus and (not devices or is_model(devices)):
        raise UsageError("--gpus starts GPU workers that benchmark; give --device cuda or hip (a model run "
                         "predicts on the CPU workers of --workers).")
    return cluster_spec(getattr(args, "scheduler", None), workers, gpus, devices)


@contextmanager
def _maybe_cluster(spec: ClusterSpec):
    if not spec.wanted:
        yield None
        return
    with open_cluster(spec) as client:
        yield client


def _run_and_report(plan: Path, devices: list[str], repetitions: int, title: str, force: bool = False) -> int:
    """Run, write the reports, and return the exit code: 1 where every case failed (a run that measured nothing
    must not look like one that did)."""
    results = _run(plan, devices, repetitions)
    for path in write_reports(results, plan, title, force):
        print(f"wrote {path}")
    failure = run_failures(plan, results)
    if failure is not None:
        print(f"pipelines: error: {failure}", file=sys.stderr)
        return 1
    return 0


def _distinct(values: Sequence[str], flag: str, what: str) -> None:
    """A list flag naming one thing twice would plan (and time) it twice."""
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise UsageError(f"{flag} names the {what} '{twice}' twice; give each once.")


def _flag(name: str) -> str:
    return "-o" if name == "output" else "--" + name.replace("_", "-")


def _given(args, *names: str) -> list[str]:
    """The flags among the argument names `names` that the command line gave (their defaults are None or False)."""
    return [_flag(name) for name in names if getattr(args, name, None) is not None
            and getattr(args, name) is not False]  # (0 and 0.0 are given values)


def _listed(flags: list[str]) -> str:
    return ", ".join(flags[:-1]) + " and " + flags[-1] if len(flags) > 1 else flags[0]


def cmd_bench(args) -> int:
    if args.plan is not None:
        ignored = _given(args, "target", "shape", "input", "suite", "pipelines", *PROBLEM_DEFAULTS, "compile_only",
                         "output", "force")
        if ignored:
            raise UsageError(f"--plan {args.plan} runs that plan as it was compiled and writes its results there; "
                             f"{_listed(ignored)} would be ignored with it.")
    elif args.suite is not None:
        ignored = _given(args, "shape", "input", "layout", "epilogue", "alpha", "beta")
        if ignored:
            raise UsageError(f"--suite {args.suite} states each problem's shape, layout and epilogue; "
                             f"{_listed(ignored)} would be ignored with it (give --suite or --shape).")
    if args.plan is not None:
        if not (args.plan / "plan.json").is_file():
            raise UsageError(f"{args.plan} has no plan.json; write one with `pipelines bench --compile-only`.")
        target = _plan_target(args.plan)
        devices = _devices(args, target)
        if not devices:
            raise UsageError(f"running a plan for {target.name} needs --device "
                             f"{' or '.join(target.device_drivers)}.")
        return _run_and_report(args.plan, devices, args.repetitions or 5, f"GEMM benchmark ({args.plan.name})")
    if args.target is None or args.output is None:
        raise UsageError("bench needs --target and -o DIR (or --plan DIR to run a compiled plan).")
    target = get_target(args.target)
    _writable(args.output, "folder")
    suite = Path(args.suite) if args.suite and args.suite.endswith(".json") else None  # as load_suite reads it
    admit_folder(args.output, "bench", args.force, PLAN_FILES["bench"] + REPORT_FILES, (suite,))
    devices = _devices(args, target)
    if not devices and not args.compile_only:
        raise UsageError(f"give --device ({', '.join(target.device_drivers)} for {target.name}) or "
                         "--compile-only.")
    if args.pipelines is None:  # the default comparison, with the pipelines this target has
        pipelines = [name for name in ("default", "tuned") if name in pipelines_for(target)]
    else:
        pipelines = [name.strip() for name in args.pipelines.split(",")]
        _distinct(pipelines, "--pipelines", "pipeline")
    for name in pipelines:
        _check_pipeline(name, target)
    units = device_units(devices, target)  # the split rule fills the GPU that runs the plan (sm_80 PTX on an H100)
    if args.suite:
        problems = load_suite(args.suite)
        names = _problem_value(args, "dtype").split(",")
        unknown = [d for d in names if d.strip().lower() not in DTYPE_ALIASES]
        if unknown:
            raise UsageError(f"unknown --dtype '{unknown[0]}'; give a comma-separated list of "
                             f"{', '.join(DTYPE_ALIASES)}.")
        dtypes = [DTYPE_ALIASES[d.strip().lower()] for d in names]
        _distinct(dtypes, "--dtype", "input type")
        cases = suite_cases(target, problems, dtypes, pipelines, units)
    else:
        gemm = _gemm(args)
        cases = [(gemm, name, plan_for(name, gemm, target, units)) for name in pipelines]
    plan = build_plan(target, cases, args.output, args.force, KEPT if is_model(devices) else (), kind="bench",
                      units=units)
    if args.compile_only:
        print(f"wrote {plan}/plan.json with {len(cases)} cases; run it where the device is with\n"
              f"  python -m pipelines.runner {plan} --device {_device_hint(target)}")
        return 0
    return _run_and_report(plan, devices, args.repetitions or 5, f"GEMM benchmark ({args.suite or 'one problem'})",
                           args.force)


def cmd_report(args) -> int:
    results = args.folder / "results.jsonl"
    if not results.is_file():
        raise UsageError(f"{args.folder} has no results.jsonl.")
    if args.output:
        _writable(args.output, "folder")
    for path in write_reports(results, args.output or args.folder, args.title, args.force):
        print(f"wrote {path}")
    return 0


def cmd_tune(args) -> int:
    target = get_target(args.target)
    if not target.gpu:
        raise TargetError(f"tune searches GPU schedules; the {target.name} target has only IREE's own CPU codegen "
                          f"(measure it with `pipelines bench --target {target.name} --pipelines default`).")
    gemm = _gemm(args)
    _writable(args.output, "folder")
    admit_folder(args.output, "tune", args.force, PLAN_FILES["tune"], (args.cache,))
    if args.cache.is_dir():
        raise UsageError(f"--cache {args.cache} is a folder; the tune cache is a JSON file.")
    _writable(args.cache.parent, "folder")
    search = SEARCHES[args.route]
    devices = _devices(args, target)
    spec = _cluster_spec(args, devices)  # every flag is checked before the cache may answer
    if search.checked_first:
        search.find(gemm, target, None)  # one sentence where the route or no candidate fits
    read_cache(args.cache)  # a cache that finalize could not update stops the search before it starts
    folder = args.output
    if devices and not (args.force or args.compile_only):
        found = len(search.find(gemm, target, None))
        kind = MODEL if is_model(devices) else device_kind(environment(devices[0])["device_name"])
        hit = cached(gemm, target, args.cache, Search(search.name, kind, search_limit(args.limit, found)))
        if hit is not None:
            files = from_cache(gemm, target, hit, args.cache)
            work_folder(folder, "tune", args.force)
            write_best(folder, files)
            print(json.dumps(hit, indent=1))
            print(f"pipelines: answered from the tune cache {args.cache} (the same search, on "
                  f"{'the timing model' if kind == MODEL else kind}) without searching; wrote {folder}/best/ "
                  f"({', '.join(files)}); add --force to search again.", file=sys.stderr)
            if hit.get("verdict"):
                print(f"pipelines: {hit['verdict']}", file=sys.stderr)
            return 0
    if not owned(folder / "results.jsonl") or args.device:  # a user's results.jsonl is never resumed from
        with _maybe_cluster(spec) as client:
            work_folder(folder, "tune", args.force)  # the plan search writes a tune plan (output.PLAN_FILES)
            plan_search(gemm, target, folder, args.limit, search, args.force, KEPT if is_model(devices) else (),
                        client, device_units(devices, target))
            if args.compile_only or not devices:
                print(f"wrote {folder}/plan.json; run it where the device is with\n"
                      f"  python -m pipelines.runner {folder} --device {_device_hint(target)}\nthen `pipelines tune` "
                      "again with the same arguments to pick the best.")
                return 0
            _run(folder, devices, args.repetitions or 3, client if (spec.gpus or spec.scheduler or is_model(devices))
                 else None)
    elif not owned(folder / "plan.json"):
        raise UsageError(f"{folder} has results.jsonl but no plan.json, so it is not a tune folder; give another -o.")
    else:
        _plan_target(folder)
    summary = finalize(gemm, target, folder, args.cache)
    print(json.dumps(summary, indent=1))
    print(f"pipelines: {summary['verdict']}", file=sys.stderr)
    return 0


def cmd_tune_model(args) -> int:
    target = get_target(args.target)
    _check_pipeline(args.pipeline, target)
    _writable(args.output, "folder")
    admit_folder(args.output, "tune-model", args.force, inputs=(args.model, args.with_spec))
    if not args.model.is_file():
        raise UsageError(f"model {args.model} is not a file; give an .onnx or .mlir file.")
    spec = _cluster_spec(args, [])
    with _maybe_cluster(spec) as client:
        summary = tune_model(args.model, target, args.pipeline, args.output, args.force, args.with_spec, args.predict,
                             args.search or 0, client)
    written = [summary["script"]] if summary.get("script") else []
    written += ["model.md", "model.json", "tuned/", "default/"] + (["predicted/"] if args.predict else []) + (
        ["search/"] if args.search else [])
    print(f"wrote {args.output}/ ({', '.join(written)})")
    print(markdown(summary), end="")
    return 0


def _png_output(path: Path, force: bool) -> None:
    _writable(path, "file")
    if path.suffix.lower() != ".png":
        raise UsageError(f"-o {path} must name a .png file; explain draws the timeline as a PNG.")
    admit_file(path, force)  # before the table is printed


def cmd_explain(args) -> int:
    if args.schedule in HOPPER_NAMES:
        return _explain_hopper(args)
    names = sorted(set(SCHEDULES) | set(KERNELS) | set(HOPPER_NAMES))
    if args.stages is not None or args.cluster is not None:
        raise UsageError("--stages and --cluster are for the hopper-* schedules; the AMD ones take --lds-stages.")
    if args.schedule not in names:
        raise UsageError(f"unknown schedule '{args.schedule}'; choose one of {', '.join(names)}.")
    if args.lds_stages is not None and args.schedule != "pingpong8":
        raise UsageError(f"--lds-stages chooses pingpong8's LDS stages (1: register prefetch, 2: double buffer); "
                         f"{args.schedule} has a fixed number of its own.")
    if args.output:
        _png_output(args.output, args.force)
    kwargs: dict[str, Any] = {"tile": _dims(args.tile, (3,), "tile")} if args.tile else {}
    if args.lds_stages is not None:
        kwargs["lds_stages"] = args.lds_stages
    target = get_target(args.target) if args.target else None
    if target is not None and not target.kernels:
        raise UsageError(f"warp-group schedules are AMD kernels ({', '.join(kernel_targets())}); {target.name} is a "
                         f"{target.backend} target.")
    schedule: Kernel | Interleave4
    if not kwargs and target is not None and args.schedule in target.kernels:
        schedule = kernel_schedule(args.schedule, "bf16", target)  # the generated kernel's own schedule
    elif args.schedule in SCHEDULES:
        schedule = SCHEDULES[args.schedule](**kwargs)
    else:
        raise UsageError(f"{args.schedule} is the schedule of a generated kernel; name its target with --target "
                         f"({'/'.join(kernel_targets(args.schedule))}) and no --tile or --lds-stages.")
    schedule.check_tile()  # a tile the schedule cannot split is invalid, not a hazard
    if target is not None:
        try:
            check_lds(schedule, target.lds_bytes, target.name)
        except LdsBudgetError as err:
            raise UsageError(str(err)) from None
    program = schedule.program(args.k_steps)
    print(text_table(program))
    try:
        accesses = check(program)
    except Hazard as err:
        raise FallbackError(f"hazard check failed: {err}") from None
    print(f"hazard check: no LDS race, every MFMA after its lgkmcnt wait, barriers balanced "
          f"({len(accesses)} LDS accesses)")
    if args.output:
        timeline_png(program, args.output, args.force)
        print(f"wrote {args.output}")
    return 0




def _explain_hopper(args) -> int:
    """A Hopper schedule's K steps per warp-group role, its stage hand-off checked under random interleavings."""
    if args.output:
        _png_output(args.output, args.force)
    route = kernel_route(get_target(args.target)) if args.target else None
    if (args.target and (route is None or args.schedule not in route.schedules)) or args.lds_stages is not None:
        raise UsageError(f"{args.schedule} is a Hopper (sm_90a) kernel schedule; --lds-stages and a --target other "
                         "than sm_90a are for the AMD warp-group schedules.")
    kind, persistent = HOPPER_NAMES[args.schedule]
    m, n, k = _dims(args.tile, (3,), "tile") if args.tile else (128, 128 if kind == "pingpong" else 256, 64)
    stages = 4 if args.stages is None else args.stages
    schedule = HopperSchedule(block_m=m, block_n=n, block_k=k, stages=stages, kind=kind, persistent=persistent,
                              cluster_m=args.cluster or 1)
    try:
        schedule.check()
        tiles = 4 if schedule.loops_over_tiles else 1
        rows = step_table(schedule, tiles, args.k_steps)
        check_protocol(schedule, tiles=tiles, k_steps=args.k_steps, runs=200)
    except (HopperError, ProtocolHazard) as err:
        raise UsageError(str(err)) from None
    name = f"{args.schedule} {m}x{n}x{k}, {schedule.stages} stages" + \
        (f", clusters of {schedule.cluster_m}" if schedule.cluster_m > 1 else "")
    print(hopper_text(name, rows))
    print(f"stage hand-off checked: 200 random interleavings of {tiles} tile(s), no stale read, overwrite or "
          "deadlock")
    if args.output:
        hopper_png(name, rows, args.output, args.force)
        print(f"wrote {args.output}")
    return 0


def cmd_emulate(args) -> int:
    if not is_foreign(args.folder):  # a foreign kernel folder describes itself (triton.json, hipkittens.json)
        read_report(args.folder / flow.REPORT_FILE)
    result = emulate_gemm(args.folder, seed=args.seed, shape=args.shape and _dims(args.shape, (3, 4), "shape"),
                          workgroups=args.workgroups)
    print(json.dumps(result.as_dict(), indent=1) if args.json else result.summary())
    return 0 if result.passed else 1


def cmd_predict(args) -> int:
    if args.timeline is not None:
        _writable(args.timeline, "file", "--timeline")
        if args.timeline.suffix.lower() != ".png":
            raise UsageError(f"--timeline {args.timeline} must name a .png file.")
        admit_file(args.timeline, args.force, flag="--timeline")  # before the replay
    prediction = predict(args.folder, seed=args.seed, timeline=args.timeline, force=args.force)
    print(json.dumps(prediction.as_dict(), indent=1) if args.json else prediction.summary())
    return 0


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


def cmd_calibrate(args) -> int:
    inputs = (args.csv,) + ((args.holdout,) if isinstance(args.holdout, Path) else ())
    if args.keep is not None:
        _writable(args.keep, "folder", "--keep")
        admit_folder(args.keep, "calibrate", args.force, inputs=inputs, flag="--keep")
    fields = read_csv(args.csv)
    skip: frozenset[int] = frozenset()
    if isinstance(args.holdout, Path):
        held = read_csv(args.holdout, "--holdout file")
        skip = frozenset(range(len(fields), len(fields) + len(held)))
        fields = fields + held
    elif args.holdout is not None:
        skip = frozenset(held_out(fields, args.holdout, args.seed))
    calibration = Calibration(fields, args.workers, args.keep)  # rows and workers checked; nothing runs yet
    if args.keep is not None:
        work_folder(args.keep, "calibrate", args.force)  # made (with its manifest) once every check has passed
    print(f"calibrate: {calibration.workers.note}", file=sys.stderr)
    try:
        if args.holdout is None:
            timings, rows = calibration.fit() if args.fit else ({}, calibration.rows())
            held_report = None
        else:
            timings, rows = calibration.fit(skip=skip)
            held_report = held_out_report(calibration, timings, rows, skip)
    finally:
        calibration.close()
    fitted = {name: {fact: getattr(timing, fact) for fact in timing.fitted} for name, timing in timings.items()}
    if held_report is not None:
        source = (f"the rows of {args.holdout}" if isinstance(args.holdout, Path) else
                  f"{args.holdout:g} of the shapes of {args.csv} (seed {args.seed})")
        held_report["held_out_from"] = source
        if args.json:
            print(json.dumps(held_report, indent=1))
        else:
            print(render_held_out(held_report))
        return 0
    if args.json:
        print(json.dumps([dict(row.as_dict(), **({"fitted": fitted[row.target]} if row.target in fitted else {}))
                          for row in rows], indent=1))
    else:
        print(calibration_table(rows))
        for name, facts in fitted.items():
            print(f"fitted for {name}: " + ", ".join(f"{fact} = {value}" for fact, value in facts.items()))
    return 0


def _describe_choice(choice: dict) -> str:
    lines = [f"  chose {choice['chosen']}: {choice['why']}"]
    if choice["rows"]:
        lines.append("    PREDICTED by the timing model, not measured:")
    for row in choice["rows"]:
        time_ = f"{row['microseconds']:10.1f} us" if row["microseconds"] is not None else f"{'-':>13}"
        mark = "  <- chosen" if row["name"] == choice["chosen"] else ""
        lines.append(f"      {row['name']:<24}{time_}  {row['note']}{mark}")
    if choice.get("cached"):
        lines.append(f"    (predictions read from {choice['cached']}, not made now)")
    if choice.get("cache_note"):
        lines.append(f"    ({choice['cache_note']})")
    return "\n".join(lines)


def render_report(report: dict) -> str:
    lines = [f"target {report['target']}, pipeline {report['pipeline']}"]
    if report.get("choice"):
        lines.append(_describe_choice(report["choice"]))
    for problem, summary in zip(report["problems"], report["schedule_summary"]):
        shape = "x".join(str(problem[k]) for k in ("batch", "m", "n", "k") if problem[k] is not None)
        lines.append(f"  gemm {shape} {problem['dtype']} {problem['layout']} epilogue "
                     f"{describe_epilogue(problem['epilogue']['kind'])}: {summary}")
    if report.get("split_k", {}).get("why"):
        lines.append(f"  why: {report['split_k']['why']}")
    if report.get("padded_to"):
        lines.append(f"  padded to {report['padded_to']}: A and B zero-padded to whole tiles, the result sliced back")
    lines.append("  verified: every requested choice found in the output" if report["verified"]
                 else "  verified: nothing requested (IREE's own choices)")
    for k in report["dispatches"]:
        mma = ", ".join(f"{n}x {op}" for op, n in k["mma"].items()) or "none"
        lines.append(f"  {k['dispatch']}: mma {mma}")
        lines.append(f"    LDS {k['lds_bytes']} B, VGPR {k['vgpr_count']}, AGPR {k['agpr_count']}, "
                     f"SGPR {k['sgpr_count']}, spills {k['spill_count']}, occupancy {k['occupancy']} waves/SIMD, "
                     f"workgroup {k['workgroup_size']}")
        lines.append(f"    global loads {k['global_loads']} (direct-to-LDS {k['dma_loads']}), stores "
                     f"{k['global_stores']}, LDS reads {k['lds_reads']}, writes {k['lds_writes']}, barriers "
                     f"{k['barriers']}, s_setprio {k['setprio']}")
        hopper = {"TMA copies": k.get("tensor_copies"), "bulk copies": k.get("bulk_copies"),
                  "mbarrier waits": k.get("mbarrier_waits"), "mbarrier arrives": k.get("mbarrier_arrives")}
        if any(hopper.values()):
            lines.append("    " + ", ".join(f"{name} {count}" for name, count in hopper.items()))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
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
    p.set_defaults(run=cmd_compile)
    p = sub.add_parser("spec", help="print only the transform script (tuning spec)")
    _problem_args(p, files=True)
    _schedule_args(p)
    p.add_argument("-o", "--output", type=Path, help="write to a file instead of stdout")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.set_defaults(run=cmd_spec)
    p = sub.add_parser("inspect", help="statistics of a compiled folder")
    p.add_argument("folder", type=Path)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_inspect)
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
    p.set_defaults(run=cmd_bench)
    p = sub.add_parser("report", help="render results.jsonl as CSV, Markdown and PNG")
    p.add_argument("folder", type=Path)
    p.add_argument("-o", "--output", type=Path)
    p.add_argument("--title", default="GEMM benchmark")
    p.add_argument("--force", action="store_true", help=FORCE_FOLDER)
    p.set_defaults(run=cmd_report)
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
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the tune cache (JSON), which answers the same "
                   "search again (problem, route, device, --limit), saying so; --force searches anyway")
    p.add_argument("--force", action="store_true", help="ignore the cache, and " + FORCE_FOLDER)
    p.add_argument("-o", "--output", type=Path, required=True, help="plan folder (an existing plan resumes)")
    p.add_argument("--workers", type=_at_least(1), help="start a local dask cluster with this many CPU workers "
                   "(compiles; predictions with --device model); needs the cluster extra (default: no cluster)")
    p.add_argument("--gpus", type=_at_least(1), help="local dask cluster: this many GPU workers, one per GPU "
                   "(benchmarks; default: none)")
    p.add_argument("--scheduler", help="run compiles and benchmarks on the dask cluster of this scheduler address "
                   "(tcp://HOST:PORT, or tls:// with certificates from your dask configuration)")
    p.set_defaults(run=cmd_tune)
    p = sub.add_parser("tune-model", help="schedule every contraction of a model (.onnx, importer MLIR or linalg): "
                       "one merged tuning spec, verified in the compiled model (compile-only)")
    p.add_argument("model", type=Path, help="an .onnx file, the torch-dialect MLIR an importer wrote, or linalg")
    p.add_argument("--target", required=True)
    p.add_argument("--pipeline", default="auto",
                   help="named pipeline that schedules each contraction (auto, tuned; codegen on CUDA)")
    p.add_argument("--with-spec", type=Path, help="a tuning spec of yours to link in ahead of the project's (ROCm)")
    p.add_argument("--search", type=_at_least(1), metavar="N", help="AMD targets: search up to N candidates per "
                   "contraction, ranked by the timing model (PREDICTED), and use the fastest where it beats IREE's "
                   "default (default: no search, the named pipeline's schedules)")
    p.add_argument("--workers", type=_at_least(1), help="--search on a local dask cluster of this many workers "
                   "(default: no cluster)")
    p.add_argument("--scheduler", help="--search on the dask cluster of this scheduler")
    p.add_argument("--predict", action="store_true", help="AMD targets: also the PREDICTED time (timing model) of "
                   "each contraction with its schedule and with IREE's default, each compiled alone")
    p.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    p.add_argument("--force", action="store_true", help=FORCE_FOLDER)
    p.set_defaults(run=cmd_tune_model)
    p = sub.add_parser("explain", help="a warp-group schedule as a phase table and timeline, hazard-checked")
    p.add_argument("--schedule", required=True, help="pingpong8, interleave4, producer_consumer, double_buffered, "
                   "interleave; with --target, a generated kernel's own schedule (pingpong8 on gfx942/gfx950, "
                   "double_buffered and interleave on gfx1151); hopper-cooperative, hopper-cooperative-persistent, "
                   "hopper-pingpong (the sm_90a kernels, --tile and --stages)")
    p.add_argument("--tile", help="block tile MxNxK")
    p.add_argument("--k-steps", type=_at_least(1, MAX_K_STEPS), default=4, help="K steps to unroll (default 4)")
    p.add_argument("--lds-stages", type=int, choices=(1, 2), help="pingpong8: 1 (register prefetch, gfx942) or 2")
    p.add_argument("--stages", type=int, help="hopper-*: shared-memory stages (default 4)")
    p.add_argument("--cluster", type=int, choices=(1, 2), help="hopper-*: workgroups per cluster sharing B (default 1)")
    p.add_argument("--target", help="check the schedule's LDS against this target")
    p.add_argument("-o", "--output", type=Path, help="write the timeline picture (PNG) here")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.set_defaults(run=cmd_explain)
    p = sub.add_parser("emulate", help="run a compiled AMD GEMM on the CPU emulator and check it against float64")
    p.add_argument("folder", type=Path, help="a folder written by `pipelines compile`")
    p.add_argument("--shape", help="MxNxK the kernel must have been compiled for (kernels are static)")
    p.add_argument("--seed", type=_at_least(0), default=0, help="seeds the inputs and the wave interleaving")
    p.add_argument("--workgroups", type=_at_least(1), help="run this many workgroups drawn at random (seeded) and "
                   "check what they store; for large problems")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_emulate)
    p = sub.add_parser("predict", help="PREDICTED time of a compiled AMD GEMM: the emulator's instruction streams "
                                       "replayed on the timing model (not a measurement)")
    p.add_argument("folder", type=Path, help="a folder written by `pipelines compile` for gfx942, gfx950 or gfx1151")
    p.add_argument("--seed", type=_at_least(0), default=0, help="seeds the inputs and the wave interleaving")
    p.add_argument("--timeline", type=Path, help="draw the steady-state K loop as replayed, one row per wave (PNG)")
    p.add_argument("--force", action="store_true", help=FORCE_FILE)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_predict)
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
    p.set_defaults(run=cmd_calibrate)
    p = sub.add_parser("list", help="targets, pipelines and MMA intrinsics")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_list)
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
}


def _check_flag_pairs(args) -> None:
    """Refuse a flag the command would ignore because of another one given or missing (`FLAG_NEEDS`,
    `FLAG_EXCLUDES`), before any work."""
    for flag, needed, what in FLAG_NEEDS.get(args.command, ()):
        if _given(args, flag) and not _given(args, needed):
            raise UsageError(f"{what}; give {_flag(needed)} too, or leave {_flag(flag)} out.")
    for flag, other, what in FLAG_EXCLUDES.get(args.command, ()):
        if _given(args, flag) and _given(args, other):
            raise UsageError(f"{what}; give {_flag(flag)} or {_flag(other)}, not both.")


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _check_flag_pairs(args)
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, in the handlers below, rather than at exit
        return code
    except UserError as err:  # every error a user can cause derives from it (transforms.errors)
        print(f"pipelines: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (`pipelines list | head`): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is silent too
        return 141
    except OSError as err:  # the file system refused a read or write of a path the user named
        reason = err.strerror or str(err)
        where = f"{err.filename}: " if err.filename else ""
        print(_one_line(f"pipelines: error: {where}{reason[:1].lower()}{reason[1:]}."), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pipelines: error: interrupted. No output is left half-written; a plan folder resumes "
              "on the next run.", file=sys.stderr)
        return 130
