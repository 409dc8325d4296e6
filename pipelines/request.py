"""Flags to a compile job: the problem (a `Gemm` from --shape and its flags, or the contractions of an --input
file), the target, and what runs it (a named pipeline, schedule flags over it, a generated kernel, a split-K plan or
the target's own kernel), checked against each other and the target before anything is compiled (`job_from_args`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from transforms.hopper import NAMES as HOPPER_NAMES
from transforms.hopper import HopperError
from transforms.hopper import parse_schedule as parse_hopper
from transforms.kernels import kernel_schedule
from transforms.problem import DTYPE_ALIASES, Epilogue, Gemm, parse_shape
from transforms.schedule import (
    Schedule,
    Staging,
    Swizzle,
    Tile,
    WarpGroups,
)
from transforms.split_k import SplitK

from . import flow
from .cli_args import PROBLEM_DEFAULTS, UsageError, _check_epilogue_flags, _dims, _problem_value, _schedule_flags_given
from .model_input import read_model, schedulable_contractions, spec_reads_dispatches, to_linalg
from .named import (
    get_pipeline,
    kernel_plan,
    model_choice,
    pipelines_for,
    plan_job,
    schedule_for,
    with_splits,
)
from .routes import codegen_route_name, route_for
from .routes.split import SplitReductionRoute
from .targets import TargetError, check_kernel_target, get_target


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


def job_from_args(args) -> flow.Job:
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
        if named.kernel:
            raise UsageError(f"pipeline '{named.name}' compiles the target's own kernel for one GEMM given with "
                             "--shape; a model's contractions take 'auto', 'tuned' or 'codegen'.")
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
