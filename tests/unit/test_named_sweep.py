"""Named pipelines verify on every shape or refuse before compiling: the sweep of tools/named_sweep.py over
every target × named pipeline × input type × layout on a grid of awkward shapes (primes, 1, one off a tile,
tall-skinny, batch, K not a multiple of the intrinsic's K). A case may compile and verify, or be refused with one
sentence before anything compiles; nothing may fail after compiling. The refused cases are listed in pytest's
summary. The CI tier is in the test command (marked slow, like the other multi-target compiles); the full tier
(every input type and shape) runs with `-m sweep`."""

import os

import pytest

from pipelines.named import get_pipeline, pipelines_for
from pipelines.targets import TARGETS
from tools.named_sweep import NAMED, cases, sweep

# One test per target and named pipeline, so that pytest-xdist spreads the compiles evenly over its workers (a
# test per target left one worker compiling sm_89's 200 cases alone); under xdist each runs its cases one at a
# time (its workers are the parallelism), alone it runs two at once.
JOBS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


def _compiled_as_before(name: str, pipeline: str) -> bool:
    """IREE's pipelines on a target that compiles exactly as an earlier one (the same flags, intrinsics and rules:
    sm_90a's are sm_80's PTX) are swept once, on the earlier target; its own kernels' pipelines, and those whose
    split rule reads the compute units (which differ), are swept."""
    target, named = TARGETS[name], get_pipeline(pipeline)
    earlier = list(TARGETS.values())[:list(TARGETS).index(name)]
    return not (named.kernel or named.prefers_kernel or named.split is not None) and any(
        (o.compile_flags, o.mma, o.named, o.dtypes) == (target.compile_flags, target.mma, target.named, target.dtypes)
        for o in earlier)


PAIRS = [(t, p) for t, target in TARGETS.items() for p in NAMED if p in pipelines_for(target)
         and not _compiled_as_before(t, p)]


def _run(tier: str, target: str, record_property, pipeline: str | None = None) -> None:
    selected = [c for c in cases(tier, (target,)) if pipeline is None or c.pipeline == pipeline]
    outcomes = sweep(selected, jobs=JOBS)
    refused = [f"{o.case.name}: {o.message}" for o in outcomes if o.status == "refused"]
    record_property("refused", refused)
    failed = [f"{o.case.name}: {o.message}" for o in outcomes if o.status == "failed"]
    assert outcomes and not failed, f"{len(failed)} of {len(outcomes)} cases failed after compiling:\n" + \
        "\n".join(failed)


@pytest.mark.slow  # compiles for every target; the test command (CI) runs it, the fast tier does not
@pytest.mark.parametrize("target, pipeline", PAIRS, ids=[f"{t}-{p}" for t, p in PAIRS])
def test_named_pipelines_verify_or_refuse_ci_tier(target, pipeline, record_property):
    _run("ci", target, record_property, pipeline)


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("target", list(TARGETS))
def test_named_pipelines_verify_or_refuse_full_tier(target, record_property):
    _run("full", target, record_property)
