"""Flags to a compile job, in two steps: the command line's namespace becomes a `Request` (what the user asked for,
read once: the problem from --shape and its flags or an --input file, the target, and what runs it: a named
pipeline, schedule flags over it, a generated kernel, the target's own kernel, a split-K count), and the request a
`flow.Job`, checked against itself and the target before anything is compiled (`job_for`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from transforms.hopper import NAMES as HOPPER_NAMES
from transforms.hopper import HopperError
from transforms.hopper import parse_schedule as parse_hopper
from transforms.stream import NAME as STREAM_NAME
from transforms.stream import StreamError
from transforms.stream import parse_schedule as parse_stream
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
from .cli_args import PROBLEM_DEFAULTS, UsageError, dims
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScheduleFlags:
    """The schedule flags over a named pipeline's schedule; None where not given."""

    tile: str | None = None
    warps: str | None = None
    mma: str | None = None
    prefetch: int | None = None
    dma: bool | None = None
    lds: str | None = None
    order: str | None = None
    raster_rows: int | None = None
    workgroup_size: int | None = None
    waves_per_eu: int | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in dataclasses.fields(self))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Request:
    """What one command line asks to compile. The problem flags are None where not given (`problem` fills in the
    defaults), so that a flag given where it means nothing is refused rather than ignored."""

    command: str
    target: str
    pipeline: str | None = None
    shape: str | None = None
    input: Path | None = None
    dtype: str | None = None
    layout: str | None = None
    epilogue: str | None = None
    alpha: float | None = None
    beta: float | None = None
    schedule: str | None = None  # a whole kernel: a generated warp-group kernel or a Hopper schedule
    flags: ScheduleFlags = ScheduleFlags()
    split_k: int | None = None

    @classmethod
    def from_args(cls, args) -> Request:
        """The request of a parsed command line (a verb without some flag leaves its field None)."""
        def read(name: str):
            return getattr(args, name, None)
        flags = ScheduleFlags(**{f.name: read(f.name) for f in dataclasses.fields(ScheduleFlags)})
        return cls(**{f.name: read(f.name) for f in dataclasses.fields(cls) if f.name != "flags"}, flags=flags)

    def problem(self, name: str):
        """A problem flag's value, its default where not given."""
        value = getattr(self, name)
        return PROBLEM_DEFAULTS[name] if value is None else value

    @property
    def pipeline_name(self) -> str:
        return self.pipeline or "default"


def gemm_of(args) -> Gemm:
    """The --shape problem of a parsed command line."""
    return _gemm(Request.from_args(args))


def _check_epilogue_flags(request: Request) -> None:
    """--alpha and --beta scale the alpha-beta epilogue; with any other they would be dropped without a word."""
    given = [f"--{name}" for name in ("alpha", "beta") if getattr(request, name) is not None]
    if given and request.epilogue != "alpha-beta":
        raise UsageError(f"{' and '.join(given)} {'scale' if len(given) > 1 else 'scales'} the alpha-beta epilogue; "
                         f"add --epilogue alpha-beta (the epilogue is {request.epilogue or 'none'}).")


def _gemm(request: Request) -> Gemm:
    files = request.command in ("compile", "spec")  # the commands that read --input files
    if request.input is not None and not files:
        raise UsageError(f"`pipelines {request.command}` takes the problem as --shape; --input files are for compile "
                         "and spec.")
    if request.shape is None:
        raise UsageError(f"give the problem as --shape MxNxK (or BxMxNxK){' or as --input FILE.mlir' * files}.")
    batch, m, n, k = parse_shape(request.shape)
    name = request.problem("dtype")
    dtype = DTYPE_ALIASES.get(name.lower())
    if dtype is None:
        raise UsageError(f"unknown --dtype '{name}'; choose one of {', '.join(DTYPE_ALIASES)}.")
    _check_epilogue_flags(request)
    return Gemm(m, n, k, dtype, request.problem("layout"), batch,
                Epilogue(*(request.problem(f) for f in ("epilogue", "alpha", "beta"))))


def _schedule(request: Request, gemm: Gemm, target) -> Schedule | None:
    pipeline = get_pipeline(request.pipeline_name)
    if not request.flags.given:
        return schedule_for(pipeline.name, gemm, target)
    base = pipeline.choose(gemm, target)  # flags override the pipeline's own schedule, not the model's choice
    if base is None and (request.flags.tile is None or request.flags.mma is None):
        raise UsageError("schedule flags without a named pipeline need at least --tile and --mma.")
    tile = base.tile if base else Tile((0, 0), 0, (2, 2), "")
    if request.flags.tile:
        m, n, k = dims(request.flags.tile, (3,), "tile")
        tile = dataclasses.replace(tile, workgroup=(m, n), k=k)
    if request.flags.warps:
        warps = dims(request.flags.warps, (2,), "warps")
        tile = dataclasses.replace(tile, warps=(warps[0], warps[1]))
    if request.flags.mma:
        tile = dataclasses.replace(tile, mma=request.flags.mma)
    staging = base.staging if base else Staging()
    staging = Staging(staging.prefetch_stages if request.flags.prefetch is None else request.flags.prefetch,
                      staging.direct_to_lds if request.flags.dma is None else request.flags.dma)
    swizzle = base.swizzle if base else Swizzle()
    order = request.flags.order or swizzle.workgroup_order
    swizzle = Swizzle(request.flags.lds or swizzle.lds, order,
                      request.flags.raster_rows if request.flags.raster_rows is not None else
                      swizzle.raster_rows if order == swizzle.workgroup_order else None)
    groups = base.warp_groups if base else WarpGroups()
    groups = WarpGroups(request.flags.workgroup_size or groups.workgroup_size,
                        request.flags.waves_per_eu if request.flags.waves_per_eu is not None else groups.waves_per_eu)
    return Schedule(tile, staging, swizzle, groups)


def check_model_pipeline(name: str, target, whole_model: bool = False) -> None:
    """`name` runs on `target` and compiles a model's contractions: the target's own kernels (the `hopper`
    pipeline's) through `tune-model` (`whole_model`) alone."""
    check_pipeline(name, target)
    if get_pipeline(name).kernel and not whole_model:
        raise UsageError(f"pipeline '{name}' compiles the target's own kernel for one GEMM given with --shape; a "
                         f"model's contractions take it through `pipelines tune-model MODEL --pipeline {name}`, or "
                         "'auto', 'tuned' or 'codegen' here.")


def check_pipeline(name: str, target) -> None:
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
    """The job of a parsed command line."""
    return job_for(Request.from_args(args))


def job_for(request: Request) -> flow.Job:
    """The job a request asks for, or one sentence saying why it cannot be compiled."""
    job = _scheduled_job(request)
    split = request.split_k
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


def _scheduled_job(request: Request) -> flow.Job:
    target = get_target(request.target)
    check_pipeline(request.pipeline_name, target)
    named = get_pipeline(request.pipeline_name)
    pipeline = named.name
    if request.flags.given:
        pipeline = "custom" if pipeline == "default" else f"{pipeline}+flags"
    if request.input is not None:
        if request.shape is not None:
            raise UsageError("give either --shape or --input, not both.")
        if request.schedule:
            raise UsageError(f"--schedule {request.schedule} builds a kernel for a --shape problem, not for an "
                             "--input file.")
        check_model_pipeline(named.name, target)
        given = [f"--{name}" for name in PROBLEM_DEFAULTS if getattr(request, name) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} {'describes' if len(given) == 1 else 'describe'} a --shape problem; "
                             "an --input file states its own.")
        text = to_linalg(_read_input(request.input), target, str(request.input))
        # A tuning spec matches the contractions IREE dispatches (transposes folded in, fusions formed), so those
        # get schedules there; compilation_info goes on the source's own ops.
        gemms = schedulable_contractions(text, target, str(request.input),
                                         not named.codegen and spec_reads_dispatches(target))
        # The schedule is chosen for the contraction; an elementwise consumer fuses into its dispatch.
        schedules = [_schedule(request, g.with_(epilogue=Epilogue()), target) for g in gemms]
        return flow.Job(target, pipeline, tuple(gemms), tuple(schedules), user_source=text,
                        route=codegen_route_name(target) if named.codegen else "", iree_ukernels=named.ukernels)
    gemm = _gemm(request)
    if request.schedule:
        if request.pipeline or request.flags.given:
            raise UsageError(f"--schedule {request.schedule} is a whole kernel; it takes no --pipeline or schedule "
                             "flags.")
        if request.schedule.partition(":")[0] in HOPPER_NAMES:
            try:
                return plan_job(target, request.schedule, gemm, parse_hopper(request.schedule))
            except HopperError as err:
                raise UsageError(str(err)) from None
        if request.schedule.partition(":")[0] == STREAM_NAME:
            try:
                return plan_job(target, request.schedule, gemm, parse_stream(request.schedule))
            except StreamError as err:
                raise UsageError(str(err)) from None
        check_kernel_target(request.schedule, target)
        kernel = kernel_schedule(request.schedule, gemm.dtype, target)
        return plan_job(target, request.schedule, gemm, kernel)
    kernel_choice = None if request.flags.given else kernel_plan(named.name, gemm, target)
    if kernel_choice is not None:
        return plan_job(target, pipeline, gemm, kernel_choice)
    choice = None if request.flags.given else model_choice(named.name, gemm, target)
    if choice is not None:
        job = plan_job(target, pipeline, gemm, choice.chosen.plan)
        return dataclasses.replace(job, choice=choice)
    if named.split is not None and not request.flags.given:
        split, why = named.split(gemm, target, None)  # compile has no device: the target table's compute units
        if split is not None:
            return flow.Job(target, pipeline, (gemm,), (None,), route=SplitReductionRoute.name, plan=split,
                            split_reason=why)
    return flow.Job(target, pipeline, (gemm,), (_schedule(request, gemm, target),),
                    route=codegen_route_name(target) if named.codegen else "", iree_ukernels=named.ukernels)
