"""What one compile is asked to do (`Job`) and what preparing it produced (`Prepared`): plain data that the
routes (`pipelines.routes`) and the driver (`pipelines.flow`) pass along."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from transforms import schedule as sched
from transforms.problem import Gemm
from transforms.stream import KernelPlan
from transforms.split_k import SplitK
from transforms.warpgroups import DoubleBuffered, PingPong8, ProducerConsumer

from .targets import ComputeUnits, Target


@dataclass(frozen=True)
class ModelPlan:
    """A model compiled through the CUDA codegen library: the dispatched contractions the library compiles, each with
    its schedule (the job's own GEMMs and schedules are the source's contraction ops and their compilation_info)."""

    library: tuple[tuple[Gemm, sched.Schedule], ...]
    consumer_sizes: tuple[int, ...] = ()  # elements of each consumer split out of a library contraction


DEFAULT_OPTION = "default"  # the option that leaves a problem to IREE's heuristic


@dataclass(frozen=True)
class Option:
    """One thing a pipeline that chooses by the timing model may run (`pipelines.pick`)."""

    name: str  # "default", the rule's name ("tile ladder", "split-K rule", "tuned schedule") or a kernel's
    plan: sched.Schedule | SplitK | PingPong8 | DoubleBuffered | ProducerConsumer | KernelPlan | None


@dataclass(frozen=True)
class Row:
    """One option's PREDICTED time."""

    name: str
    microseconds: float | None  # PREDICTED; None: it did not compile and verify, or the model could not predict it
    note: str  # what bounds it, or why there is no prediction


@dataclass(frozen=True)
class Pick:
    """What a pipeline chose by the timing model, and why."""

    pipeline: str
    target: str
    gemm: Gemm
    chosen: Option
    rows: tuple[Row, ...]  # () where nothing was predicted
    error: float | None
    why: str
    cached: str = ""  # where the rows came from when they were not predicted now
    cache_note: str = ""  # why the cache was neither read nor written (not this tool's file, not writable), else ""

    def as_dict(self) -> dict:
        return {"pipeline": self.pipeline, "chosen": self.chosen.name, "why": self.why, "error": self.error,
                "rows": [dataclasses.asdict(r) for r in self.rows], "predicted": True, "cached": self.cached,
                "cache_note": self.cache_note}


@dataclass(frozen=True)
class Job:
    target: Target
    pipeline: str
    gemms: tuple[Gemm, ...]
    schedules: tuple[sched.Schedule | None, ...]  # one per GEMM; None leaves it to IREE
    user_source: str | None = None  # text of a user .mlir; None builds the source from the single GEMM
    # The route (`pipelines.routes.ROUTES`) and its plan: a generated warp-group kernel (ukernel), a split-K plan
    # (split-reduction: the reduction split in the linalg program, our kernel for the partial products), a model
    # plan (model-codegen), a Hopper schedule (the Hopper kernels). "": the target's schedule route, whose plans
    # are `schedules`, one per GEMM.
    route: str = ""
    plan: PingPong8 | DoubleBuffered | ProducerConsumer | SplitK | ModelPlan | KernelPlan | None = None
    split_reason: str = ""  # a split-K plan's reason, where a pipeline's rule chose it
    compute_units: ComputeUnits | None = None  # the compute units the split rule filled; None: the target's
    # Options of the schedule route: IREE's own ROCm tensor ukernels enabled (every GEMM must be taken by one), and
    # IREE's own reduction split in this many ways (partial GEMMs in one dispatch, their sum in a second, both
    # configured by IREE, `--iree-dispatch-creation-split-matmul-reduction`; 1: none). Both verified.
    iree_ukernels: bool = False
    split_k: int = 1
    choice: Pick | None = None  # the timing model's choice that gave this job its plan (`pipelines.pick`)


@dataclass(frozen=True)
class Prepared:
    job: Job
    source: str
    spec: str | None  # the transform script (tuning spec or codegen library), for every job that schedules something
    infos: tuple[str | None, ...]  # compilation_info per GEMM, printed


def contraction_key(gemm: Gemm) -> Gemm:
    """The GEMM as its dispatch's contraction shows it (the epilogue fuses into the dispatch, not the op)."""
    return gemm.with_(epilogue=type(gemm.epilogue)())
