"""The interface every route implements, and what most of them share.

A route is how a schedule reaches the GPU: what it checks before compiling, the source and transform script it
builds, the iree-compile flags it adds, how it proves in the output that every requested choice took effect, and
how the report describes it. `pipelines.flow` drives any route through these methods and never asks which one
it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from transforms.errors import UserError
from transforms.stream import KERNEL_PLANS, KernelPlan
from transforms.problem import Gemm
from transforms.kernels import Kernel
from transforms.schedule import Schedule
from transforms.split_k import SplitK

from ..compiler import Compiled, run_iree_compile
from ..inspect import KernelStats, inspect_dump
from ..job import Job, ModelPlan, Prepared
from ..targets import Target


class RouteError(UserError, ValueError):
    """A request a route cannot serve; the message is one sentence."""


@dataclass(frozen=True)
class Flags:
    """What a route adds to one iree-compile call."""

    spec: Path | None = None  # --iree-codegen-tuning-spec-path
    library: Path | None = None  # --iree-codegen-transform-dialect-library
    print_pass_ir: bool = False  # the pass IR `verify` reads
    extra: tuple[str, ...] = ()


def job_schedule(job: Job) -> Schedule:
    """The one schedule of a single-GEMM job on a route that needs one (the route's `prepare` has refused None)."""
    schedule = job.schedules[0]
    if schedule is None:
        raise RouteError(f"pipeline {job.pipeline} gives no schedule for this route.")
    return schedule


def job_kernel(job: Job) -> Kernel:
    """The generated kernel of a ukernel job."""
    if job.plan is None or isinstance(job.plan, (SplitK, ModelPlan) + KERNEL_PLANS):
        raise RouteError(f"pipeline {job.pipeline} names no generated kernel.")
    return job.plan


class Route:
    name = ""
    about = ""
    raster = False  # builds the raster workgroup order (the codegen-raster pipeline)
    splits_reduction = False  # passes a job's split-K to IREE and verifies it (Job.split_k)

    # ---- before compiling
    def prepare(self, job: Job) -> Prepared:
        """Check the job against its target and build source and transform script (nothing is written)."""
        raise NotImplementedError

    def spec_refusal(self, job: Job) -> str | None:
        """Why `pipelines spec` has no transform script to write for this route (None: it has one)."""
        return None

    def candidates(self, gemm: Gemm, target: Target) -> list[Schedule]:
        """The schedules `pipelines tune` searches on this route."""
        raise RouteError(f"tune --route codegen searches the CUDA codegen library; {target.name} compiles the "
                         f"codegen pipelines through the {self.name} route, which has no schedule search, so use the "
                         "default --route config.")

    # ---- compiling
    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        return Flags()

    def compile(self, prepared: Prepared, source: Path, folder: Path, spec_file: Path, extra_flags: tuple[str, ...],
                moved_to: tuple[Path, Path]) -> tuple[Compiled, list[KernelStats]]:
        flags = self.flags(prepared, spec_file)
        compiled = run_iree_compile(source, folder, prepared.job.target, flags.spec, print_pass_ir=flags.print_pass_ir,
                                    extra_flags=(*extra_flags, *flags.extra), library=flags.library,
                                    moved_to=moved_to)
        return compiled, self.inspect(compiled.dump, prepared.job.target)

    def inspect(self, dump: Path, target: Target) -> list[KernelStats]:
        """The statistics of each compiled dispatch in a dump folder (`pipelines inspect` too)."""
        return inspect_dump(dump, target)

    # ---- after compiling
    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        """Raise FallbackError naming the first requested choice the output does not show."""

    def verified(self, job: Job) -> bool:
        """Whether `verify` checked something for this job (the report's `verified`)."""
        return any(s is not None for s in job.schedules)

    def takes(self, plan: object) -> bool:
        """Whether `plan` is a plan of this route (`Job.plan`)."""
        return False

    # ---- the report
    def describe(self, schedule: Schedule | None, gemm: Gemm) -> str:
        return "IREE default heuristic" if schedule is None else schedule.describe()

    def summary(self, job: Job) -> list[str]:
        return [self.describe(s, g) for g, s in zip(job.gemms, job.schedules)]

    def padded_to(self, job: Job) -> str | None:
        return None

    def report_extra(self, job: Job) -> dict:
        return {}


class KernelRoute(Route):
    """A route of a target's own kernels (`Target.kernel_route`): the `hopper` pipeline takes its shipped plan,
    `auto` takes it where it fills the problem, `tune --route hopper` searches its candidates."""

    schedules: tuple[str, ...] = ()  # the names `--schedule` takes for them

    def default_plan(self, gemm: Gemm, target: Target) -> KernelPlan:
        """The shipped plan for `gemm`, or one sentence (TargetError) why the kernels do not take it."""
        raise NotImplementedError

    def fills(self, gemm: Gemm, target: Target) -> bool:
        """Whether `auto` takes the shipped plan for `gemm`."""
        raise NotImplementedError
