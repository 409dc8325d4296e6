"""The verbs of `pipelines` that compile, show or explain one thing: compile, spec, inspect, list, tune-model,
explain and emulate (bench, tune, report, predict and calibrate, which plan and run, are in `pipelines.cli`)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transforms.hazards import Hazard, check
from transforms.hopper import NAMES as HOPPER_NAMES
from transforms.hopper import HopperError, named_schedule
from transforms.hopper_protocol import ProtocolHazard, step_table
from transforms.hopper_protocol import check as check_protocol
from transforms.kernels import KERNELS, Kernel, kernel_schedule
from transforms.warpgroups import SCHEDULES, Interleave4, LdsBudgetError, check_lds

from . import flow
from .cli_args import UsageError, dims, writable
from .cluster import ClusterSpec, cluster_spec, open_cluster
from .emulator import emulate_gemm
from .emulator.foreign import is_foreign
from .explain import hopper_png, hopper_text, text_table, timeline_png
from .inspect import inspect_dump, read_report
from .jit_resources import jit_resources
from .named import (
    PIPELINES,
    get_pipeline,
    pipelines_for,
    why_default,
)
from .output import FILE_MARK, admit_file, admit_folder, write_file
from .report import render_report
from .request import check_model_pipeline, job_from_args
from .routes import ROUTES, kernel_route, route_for
from .targets import TARGETS, get_target, kernel_targets
from .timing.device import is_model
from .hopper_model import markdown as hopper_markdown, tune_model_hopper
from .tune_model import markdown, tune_model
from .verify import FallbackError


def cmd_compile(args) -> int:
    writable(args.output, "folder")
    admit_folder(args.output, "compile", args.force, (flow.SOURCE_FILE, flow.REPORT_FILE), (args.input,))
    prepared = flow.prepare(job_from_args(args))
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
        writable(args.output, "file")
        admit_file(args.output, args.force, (args.input,))
    job = job_from_args(args)
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
    if args.jit:
        print(json.dumps(jit_resources(args.folder)))
        return 0
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


def cmd_tune_model(args) -> int:
    target = get_target(args.target)
    check_model_pipeline(args.pipeline, target, whole_model=True)
    kernel = get_pipeline(args.pipeline).kernel
    if args.split_consumers and not kernel:
        raise UsageError("--split-consumers is for --pipeline hopper (the Hopper kernels' store); IREE's pipelines "
                         "fuse consumers themselves.")
    if args.iree_transposes and not kernel:
        raise UsageError("--iree-transposes is for --pipeline hopper (the Hopper kernels' stores); IREE's pipelines "
                         "keep the program's transposes anyway.")
    if args.iree_softmax and not kernel:
        raise UsageError("--iree-softmax is for --pipeline hopper (its softmax kernel); with IREE's pipelines IREE "
                         "compiles every softmax.")
    if kernel and (args.with_spec or args.search or args.predict or args.workers or args.scheduler):
        raise UsageError(f"--pipeline {args.pipeline} takes no --with-spec, --search, --predict or cluster: its "
                         "kernels are the target's own, compiled as they are.")
    writable(args.output, "folder")
    admit_folder(args.output, "tune-model", args.force, inputs=(args.model, args.with_spec))
    if not args.model.is_file():
        raise UsageError(f"model {args.model} is not a file; give an .onnx or .mlir file.")
    if kernel:
        summary = tune_model_hopper(args.model, target, args.output, args.force, not args.split_consumers,
                                    not args.iree_softmax, not args.iree_transposes)
        print(f"wrote {args.output}/ (model.md, model.json, tuned/, default/)")
        print(hopper_markdown(summary), end="")
        return 0
    spec = cluster_of(args, [])
    with maybe_cluster(spec) as client:
        summary = tune_model(args.model, target, args.pipeline, args.output, args.force, args.with_spec, args.predict,
                             args.search or 0, client)
    written = [summary["script"]] if summary.get("script") else []
    written += ["model.md", "model.json", "tuned/", "default/"] + (["predicted/"] if args.predict else []) + (
        ["search/"] if args.search else [])
    print(f"wrote {args.output}/ ({', '.join(written)})")
    print(markdown(summary), end="")
    return 0


def _png_output(path: Path, force: bool) -> None:
    writable(path, "file")
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
    kwargs: dict[str, Any] = {"tile": dims(args.tile, (3,), "tile")} if args.tile else {}
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
    tile = None
    if args.tile:  # three sizes, as named_schedule's type says (dims returns any count it was asked for)
        tm, tn, tk = dims(args.tile, (3,), "tile")
        tile = (tm, tn, tk)
    try:  # the schedule as the command line names it (a cooperative 64-row tile: one consumer warp group)
        cluster_m, cluster_n = args.cluster or (1, 1)
        schedule = named_schedule(args.schedule, tile, args.stages, cluster_m, cluster_n=cluster_n)
        m, n, k = schedule.block_m, schedule.block_n, schedule.block_k
        tiles = 4 if schedule.loops_over_tiles else 1
        rows = step_table(schedule, tiles, args.k_steps)
        check_protocol(schedule, tiles=tiles, k_steps=args.k_steps, runs=200)
    except (HopperError, ProtocolHazard) as err:
        raise UsageError(str(err)) from None
    name = f"{args.schedule} {m}x{n}x{k}, {schedule.stages} stages" + \
        (f", clusters of {schedule.cluster_m}" + (f"x{schedule.cluster_n}" if schedule.cluster_n > 1 else "")
         if schedule.cluster_tiles > 1 else "")
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
    result = emulate_gemm(args.folder, seed=args.seed, shape=args.shape and dims(args.shape, (3, 4), "shape"),
                          workgroups=args.workgroups)
    print(json.dumps(result.as_dict(), indent=1) if args.json else result.summary())
    return 0 if result.passed else 1


def cluster_of(args, devices: list[str]) -> ClusterSpec:
    """--scheduler / --workers / --gpus as a ClusterSpec (GPU workers see one GPU each through the visibility
    variable of the --device driver)."""
    workers, gpus = getattr(args, "workers", None) or 0, getattr(args, "gpus", None) or 0
    if gpus and (not devices or is_model(devices)):
        raise UsageError("--gpus starts GPU workers that benchmark; give --device cuda or hip (a model run "
                         "predicts on the CPU workers of --workers).")
    return cluster_spec(getattr(args, "scheduler", None), workers, gpus, devices)


@contextmanager
def maybe_cluster(spec: ClusterSpec):
    if not spec.wanted:
        yield None
        return
    with open_cluster(spec) as client:
        yield client
