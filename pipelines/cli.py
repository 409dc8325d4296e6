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
import os
import sys
from pathlib import Path

from transforms.errors import UserError
from transforms.problem import DTYPE_ALIASES

from .bench import build_plan, load_suite, suite_cases
from .cli_args import (
    PROBLEM_DEFAULTS,
    UsageError,
    check_flag_pairs,
    distinct,
    flag_name,
    given_flags,
    listed_flags,
    one_line,
    writable,
    parser,
)
from .commands import (
    cluster_of,
    maybe_cluster,
    cmd_compile,
    cmd_emulate,
    cmd_explain,
    cmd_inspect,
    cmd_list,
    cmd_spec,
    cmd_tune_model,
)
from .device_units import device_units
from .named import (
    pipelines_for,
    plan_for,
)
from .plan import Plan
from .output import PLAN_FILES, admit_file, admit_folder, owned, work_folder, write_file
from .report import REPORT_FILES, write_reports
from .tables import TABLES, TableOptions
from .tables import render as render_table
from .request import Request, check_pipeline, gemm_of
from .runner import check_distinct_devices, device_or_error, environment, run_failures, run_plan
from .targets import TargetError, get_target
from .timing.calibrate import Calibration, held_out, held_out_report, read_csv, render_held_out
from .timing.calibrate import table as calibration_table
from .timing.device import KEPT, check_devices, is_model, predict_plan
from .timing.predict import predict
from .tune import SEARCHES, finalize, from_cache, plan_search, search_limit, write_best
from .tune_cache import MODEL, Search, cached, device_kind, read_cache, tune_cache

DEFAULT_CACHE = tune_cache()


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


def _plan_target(plan: Path):
    """The target a plan folder was compiled for, read from its plan.json (one sentence if it cannot be)."""
    try:
        text = (plan / "plan.json").read_text()
    except FileNotFoundError:
        raise UsageError(f"{plan} has no plan.json; give a folder `pipelines bench --compile-only` wrote.") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"plan {plan / 'plan.json'} is not valid JSON ({err}).") from None
    return get_target(Plan.from_json(text, str(plan / "plan.json")).target)


def _run(plan: Path, devices: list[str], repetitions: int, client=None) -> Path:
    """Measure the plan on the devices, or predict it with the timing model (`--device model`); with `client`, as
    tasks on its cluster (predictions on CPU workers, benchmarks on GPU workers)."""
    if is_model(devices):
        return predict_plan(plan, os.cpu_count() or 1, client=client)
    return run_plan(plan, devices, repetitions, client=client)


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


def cmd_bench(args) -> int:
    if args.plan is not None:
        ignored = given_flags(args, "target", "shape", "input", "suite", "pipelines", *PROBLEM_DEFAULTS, "compile_only",
                         "output", "force")
        if ignored:
            raise UsageError(f"--plan {args.plan} runs that plan as it was compiled and writes its results there; "
                             f"{listed_flags(ignored)} would be ignored with it.")
    elif args.suite is not None:
        ignored = given_flags(args, "shape", "input", "layout", "epilogue", "alpha", "beta")
        if ignored:
            raise UsageError(f"--suite {args.suite} states each problem's shape, layout and epilogue; "
                             f"{listed_flags(ignored)} would be ignored with it (give --suite or --shape).")
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
    writable(args.output, "folder")
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
        distinct(pipelines, "--pipelines", "pipeline")
    for name in pipelines:
        check_pipeline(name, target)
    units = device_units(devices, target)  # the split rule fills the GPU that runs the plan (sm_80 PTX on an H100)
    if args.suite:
        problems = load_suite(args.suite)
        names = Request.from_args(args).problem("dtype").split(",")
        unknown = [d for d in names if d.strip().lower() not in DTYPE_ALIASES]
        if unknown:
            raise UsageError(f"unknown --dtype '{unknown[0]}'; give a comma-separated list of "
                             f"{', '.join(DTYPE_ALIASES)}.")
        dtypes = [DTYPE_ALIASES[d.strip().lower()] for d in names]
        distinct(dtypes, "--dtype", "input type")
        cases = suite_cases(target, problems, dtypes, pipelines, units)
    else:
        gemm = gemm_of(args)
        cases = [(gemm, name, plan_for(name, gemm, target, units)) for name in pipelines]
    plan = build_plan(target, cases, args.output, args.force, KEPT if is_model(devices) else (), kind="bench",
                      units=units)
    if args.compile_only:
        print(f"wrote {plan}/plan.json with {len(cases)} cases; run it where the device is with\n"
              f"  python -m pipelines.runner {plan} --device {_device_hint(target)}")
        return 0
    return _run_and_report(plan, devices, args.repetitions or 5, f"GEMM benchmark ({args.suite or 'one problem'})",
                           args.force)


TABLE_OPTIONS = tuple(f.name for f in dataclasses.fields(TableOptions))


def cmd_report(args) -> int:
    if args.table:
        return _table(args)
    ignored = given_flags(args, *TABLE_OPTIONS)
    if ignored:
        raise UsageError(f"{listed_flags(ignored)} {'shapes' if len(ignored) == 1 else 'shape'} a --table; give "
                         "--table or leave them out.")
    if len(args.inputs) != 1:
        raise UsageError(f"report renders one folder's results.jsonl, not {len(args.inputs)} paths (a --table "
                         "reads several files).")
    folder = args.inputs[0]
    results = folder / "results.jsonl"
    if not results.is_file():
        raise UsageError(f"{folder} has no results.jsonl.")
    if args.output:
        writable(args.output, "folder")
    for path in write_reports(results, args.output or folder, args.title or "GEMM benchmark", args.force):
        print(f"wrote {path}")
    return 0


def _table(args) -> int:
    if args.title is not None:
        raise UsageError("--title names the rendered reports of a folder; a --table has its own heading.")
    reads = TABLES[args.table].options
    ignored = given_flags(args, *(name for name in TABLE_OPTIONS if name not in reads))
    if ignored:
        raise UsageError(f"{listed_flags(ignored)} would be ignored: the {args.table} table reads "
                         f"{listed_flags([flag_name(n) for n in reads]) if reads else 'no option'}.")
    if args.output:
        writable(args.output, "file")
        admit_file(args.output, args.force, args.inputs)
    options = TableOptions(**{name: value for name in reads if (value := getattr(args, name)) is not None})
    text = render_table(args.table, args.inputs, options)
    if args.output:
        write_file(args.output, text, args.force)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_tune(args) -> int:
    target = get_target(args.target)
    if not target.gpu:
        raise TargetError(f"tune searches GPU schedules; the {target.name} target has only IREE's own CPU codegen "
                          f"(measure it with `pipelines bench --target {target.name} --pipelines default`).")
    gemm = gemm_of(args)
    writable(args.output, "folder")
    admit_folder(args.output, "tune", args.force, PLAN_FILES["tune"], (args.cache,))
    if args.cache.is_dir():
        raise UsageError(f"--cache {args.cache} is a folder; the tune cache is a JSON file.")
    writable(args.cache.parent, "folder")
    search = SEARCHES[args.route]
    devices = _devices(args, target)
    spec = cluster_of(args, devices)  # every flag is checked before the cache may answer
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
        with maybe_cluster(spec) as client:
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


def cmd_predict(args) -> int:
    if args.timeline is not None:
        writable(args.timeline, "file", "--timeline")
        if args.timeline.suffix.lower() != ".png":
            raise UsageError(f"--timeline {args.timeline} must name a .png file.")
        admit_file(args.timeline, args.force, flag="--timeline")  # before the replay
    prediction = predict(args.folder, seed=args.seed, timeline=args.timeline, force=args.force)
    print(json.dumps(prediction.as_dict(), indent=1) if args.json else prediction.summary())
    return 0


def cmd_calibrate(args) -> int:
    inputs = (args.csv,) + ((args.holdout,) if isinstance(args.holdout, Path) else ())
    if args.keep is not None:
        writable(args.keep, "folder", "--keep")
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


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb, each bound to its handler (`args.run`)."""
    handlers = {"compile": cmd_compile, "spec": cmd_spec, "inspect": cmd_inspect, "bench": cmd_bench,
                "report": cmd_report, "tune": cmd_tune, "tune_model": cmd_tune_model, "explain": cmd_explain,
                "emulate": cmd_emulate, "predict": cmd_predict, "calibrate": cmd_calibrate, "list": cmd_list}
    return parser(handlers, DEFAULT_CACHE)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        check_flag_pairs(args)
        code = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, in the handlers below, rather than at exit
        return code
    except UserError as err:  # every error a user can cause derives from it (transforms.errors)
        print(f"pipelines: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (`pipelines list | head`): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is silent too
        return 141
    except OSError as err:  # the file system refused a read or write of a path the user named
        reason = err.strerror or str(err)
        where = f"{err.filename}: " if err.filename else ""
        print(one_line(f"pipelines: error: {where}{reason[:1].lower()}{reason[1:]}."), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pipelines: error: interrupted. No output is left half-written; a plan folder resumes "
              "on the next run.", file=sys.stderr)
        return 130
