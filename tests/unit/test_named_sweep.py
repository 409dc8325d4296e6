"""Named pipelines verify on every shape or refuse before compiling: the sweep of tools/named_sweep.py over
every target × named pipeline × input type × layout on a grid of awkward shapes (primes, 1, one off a tile,
tall-skinny, batch, K not a multiple of the intrinsic's K). A case may compile and verify, or be refused with one
sentence before anything compiles; nothing may fail after compiling. The refused cases are listed in pytest's
summary. The CI tier is in the test command (marked slow, like the other multi-target compiles); the full tier
(every input type and shape) runs with `-m sweep`."""

import pytest

from pipelines.targets import TARGETS
from tools.named_sweep import cases, sweep


def _run(tier: str, target: str, record_property) -> None:
    outcomes = sweep(cases(tier, (target,)), jobs=2)
    refused = [f"{o.case.name}: {o.message}" for o in outcomes if o.status == "refused"]
    record_property("refused", refused)
    failed = [f"{o.case.name}: {o.message}" for o in outcomes if o.status == "failed"]
    assert outcomes and not failed, f"{len(failed)} of {len(outcomes)} cases failed after compiling:\n" + \
        "\n".join(failed)


@pytest.mark.slow  # compiles for every target; the test command (CI) runs it, the fast tier does not
@pytest.mark.parametrize("target", list(TARGETS))
def test_named_pipelines_verify_or_refuse_ci_tier(target, record_property):
    _run("ci", target, record_property)


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("target", list(TARGETS))
def test_named_pipelines_verify_or_refuse_full_tier(target, record_property):
    _run("full", target, record_property)
