"""Routes: how a schedule reaches the GPU. One module per route, one registry, one way to find a job's route.

| route             | module        | targets | what carries the schedule                                      |
|-------------------|---------------|---------|----------------------------------------------------------------|
| `tuning-spec`     | `spec`        | ROCm    | compilation_info in a tuning spec                              |
| `op-attribute`    | `spec`        | CUDA    | compilation_info on the linalg op                              |
| `iree-cpu`        | `spec`        | CPU     | nothing: IREE's CPU pipeline                                   |
| `ukernel`         | `ukernel`     | ROCm    | a generated warp-group kernel, injected through the spec       |
| `codegen-library` | `codegen`     | CUDA    | a whole transform-dialect library (cp.async, mma.sync)         |
| `lanes`           | `lanes`       | ROCm    | a whole transform-dialect library (MMA fragments per lane)     |
| `split-reduction` | `split`       | GPUs    | split-K in the linalg program, compilation_info on the partial op |
| `model-codegen`   | `model`       | CUDA    | a model: codegen library where it applies, compilation_info else |
| `hopper-program`  | `hopper`      | sm_90a  | the whole program: TMA/mbarrier/wgmma kernels as nvvm IR        |

Each target names its schedule, codegen and kernel routes (`Target.schedule_route`, `Target.codegen_route`,
`Target.kernel_route`) and the kernels it has; a job names its route and carries that route's plan (`Job.route`,
`Job.plan`), or names none and takes its target's schedule route with a schedule per GEMM.
"""

from __future__ import annotations

from ..job import Job
from ..targets import Target
from .base import Flags, KernelRoute, Route, RouteError
from .codegen import CodegenLibraryRoute
from .hopper import HopperRoute
from .lanes import LanesRoute
from .library import LibraryRoute
from .model import ModelLibraryRoute
from .spec import HostRoute, OpAttributeRoute, TuningSpecRoute
from .split import SplitReductionRoute
from .ukernel import UkernelRoute

ROUTES: dict[str, Route] = {r.name: r for r in (TuningSpecRoute(), OpAttributeRoute(), HostRoute(), UkernelRoute(),
                                                CodegenLibraryRoute(), LanesRoute(), SplitReductionRoute(),
                                                ModelLibraryRoute(), HopperRoute())}


def schedule_route(target: Target) -> Route:
    return ROUTES[target.schedule_route]


def codegen_route(target: Target) -> LibraryRoute | None:
    """The route of the `codegen` pipelines on `target` (None: they do not run there)."""
    return ROUTES[target.codegen_route] if target.codegen_route else None  # type: ignore[return-value]


def kernel_route(target: Target) -> KernelRoute | None:
    """The route of the target's own kernels (the `hopper` pipeline's; None: it has none)."""
    return ROUTES[target.kernel_route] if target.kernel_route else None  # type: ignore[return-value]


def codegen_route_name(target: Target) -> str:
    """The route a `codegen` pipeline's job names on `target` (one sentence where it has none)."""
    route = codegen_route(target)
    if route is None:
        raise RouteError(f"the codegen pipeline compiles for CUDA and ROCm targets, not {target.name}; use "
                         "'default'.")
    return route.name


def route_for(job: Job) -> Route:
    """The route the job names, or its target's schedule route."""
    if not job.route:
        return schedule_route(job.target)
    if job.route not in ROUTES:
        raise RouteError(f"unknown route '{job.route}'; the routes are {', '.join(ROUTES)}.")
    return ROUTES[job.route]


__all__ = ["ROUTES", "Flags", "KernelRoute", "LibraryRoute", "Route", "RouteError", "codegen_route",
           "codegen_route_name", "kernel_route", "route_for", "schedule_route"]
