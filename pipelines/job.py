"""What one compile is asked to do (`Job`) and what preparing it produced (`Prepared`): plain data that the
routes (`pipelines.routes`) and the driver (`pipelines.flow`) pass along."""

from __future__ import annotations

from dataclasses import dataclass

from transforms import schedule as sched
from transforms.problem import Gemm
from transforms.split_k import SplitK
from transforms.warpgroups import DoubleBuffered, PingPong8, ProducerConsumer

from .targets import ComputeUnits, Target


@dataclass(frozen=True)
class ModelPlan:
    """A model compiled through the CUDA codegen library: the dispatched contractions the library compiles, each with
    its schedule (the job's own GEMMs and schedules are the source's contraction ops and their compilation_info)."""

    library: tuple[tuple[Gemm, sched.Schedule], ...]
    consumer_sizes: tuple[int, ...] = ()  # elements of each consumer split out of a library contraction


@dataclass(frozen=True)
class Job:
    target: Target
    pipeline: str
    gemms: tuple[Gemm, ...]
    schedules: tuple[sched.Schedule | None, ...]  # one per GEMM; None leaves it to IREE
    user_source: str | None = None  # text of a user .mlir; None builds the source from the single GEMM
    ukernel: PingPong8 | DoubleBuffered | ProducerConsumer | None = None  # a generated kernel, as a ukernel
    codegen: bool = False  # the schedule becomes a whole transform-dialect library (the target's codegen route)
    iree_ukernels: bool = False  # IREE's own ROCm tensor ukernels enabled; every GEMM must be taken by one
    # IREE splits each GEMM's reduction this many ways (partial GEMMs in one dispatch, their sum in a second) and
    # configures both itself (`--iree-dispatch-creation-split-matmul-reduction`); 1: no split. Verified.
    split_k: int = 1
    # The reduction split in the linalg program with our kernel for the partial products (the split-reduction route),
    # and the rule's reason for choosing it; None: no such split.
    split: SplitK | None = None
    split_reason: str = ""
    compute_units: ComputeUnits | None = None  # the compute units the split rule filled; None: the target's
    model: ModelPlan | None = None  # a model through the codegen library and compilation_info (routes.model)


@dataclass(frozen=True)
class Prepared:
    job: Job
    source: str
    spec: str | None  # the transform script (tuning spec or codegen library), for every job that schedules something
    infos: tuple[str | None, ...]  # compilation_info per GEMM, printed


def contraction_key(gemm: Gemm) -> Gemm:
    """The GEMM as its dispatch's contraction shows it (the epilogue fuses into the dispatch, not the op)."""
    return gemm.with_(epilogue=type(gemm.epilogue)())
