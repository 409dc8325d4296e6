"""The hazard checker and the LDS budget at their boundaries: a derived wait loosened by exactly one is a hazard,
and a warp-group schedule between 64 and 128 KiB of LDS does not fit gfx1151 (whose 128 KiB are per WGP, shared
by the workgroups on it; one workgroup gets 64 KiB)."""

from dataclasses import replace

import pytest

from pipelines.cli import main
from pipelines.targets import TARGETS
from transforms.hazards import Hazard, Program, check
from transforms.ukernel_dbuf import dbuf_schedule, pc_schedule
from transforms.warpgroups import SCHEDULES, LdsBudgetError, PingPong8, check_lds

PROGRAMS = {name: SCHEDULES[name]().program(3) for name in sorted(SCHEDULES)}
PROGRAMS["dbuf_gfx1151"] = dbuf_schedule("bf16", 32, 16).program(3)
PROGRAMS["producer_consumer_gfx942"] = pc_schedule("bf16", 16, 32).program(3)

# Waits with slack. pingpong8: the leading group's wait for the next step's B half at the end of phase 2 (the
# lagging group reads the leading group's half one phase after the leading group reads it, and the leading group
# waits again, for younger copies, at the end of phase 4; the lagging group's same wait has none: the leading group
# reads the lagging group's half one phase before it does). Shared code makes both groups wait there.
SLACK: dict[str, set] = {"pingpong8": {(0, "step 1 mfma", "wait_vm")}}


def loosened_by_one(program: Program) -> dict[tuple[int, str, str], Program]:
    """Each wait of `program` loosened by exactly one (vmcnt(N) -> vmcnt(N+1)), keyed by (group, phase, kind)."""
    variants = {}
    for group, ops in enumerate(program.groups):
        for index, op in enumerate(ops):
            if op.kind in ("wait_vm", "wait_lgkm"):
                looser = ops[:index] + (replace(op, value=op.value + 1),) + ops[index + 1:]
                variants.setdefault((group, op.phase, op.kind), program.with_group(group, looser))
    return variants


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_wait_loosened_by_one_is_a_hazard(name):
    """The derived waits are tight: leaving one more operation in flight than the model derived races or feeds
    an MFMA early, except where a wait is documented as slack."""
    unnoticed = set()
    for key, program in loosened_by_one(PROGRAMS[name]).items():
        try:
            check(program)
            unnoticed.add(key)
        except Hazard:
            pass
    assert unnoticed == SLACK.get(name, set())


def _wait_after_its_barrier(program: Program, group: int, phase: str) -> Program:
    """`program` with `group`'s vmcnt wait of `phase` moved past the barrier that follows it."""
    ops = list(program.groups[group])
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_vm" and op.phase == phase)
    after = next(j for j in range(index + 1, len(ops)) if ops[j].kind == "barrier")
    ops.insert(after, ops.pop(index))
    return program.with_group(group, tuple(ops))


def _wait_value(program: Program, group: int, phase: str, value: int) -> Program:
    ops = list(program.groups[group])
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_vm" and op.phase == phase)
    ops[index] = replace(ops[index], value=value)
    return program.with_group(group, tuple(ops))


def test_the_next_b_half_lands_before_the_barrier_that_ends_phase_2():
    """pingpong8 waits at the end of step 1's phase 2 for the lower A rows of step 1 and the B half of step 2 (in
    flight then, oldest first: lower rows of 1 (2), B half of 2 (4), upper rows of 2 (2), lower rows of 2 (2):
    vmcnt(4)). Waiting for the lower rows alone (vmcnt(8)) leaves the B half to the wait at the end of phase 4: for
    the lagging group one barrier too late, as the leading group reads that half in the epoch in between; the
    leading group has that barrier to spare (the lagging group reads its half a barrier later)."""
    program = PingPong8().program(5)
    check(program)
    assert [op.value for op in program.groups[1] if op.kind == "wait_vm" and op.phase == "step 1 mfma"] == [4]
    with pytest.raises(Hazard, match=r"LDS race on B1\.0 .*group 1 writes B1\.0 \(step 0 read lower.*group 0 reads "
                                     r"B1\.0 \(step 2 read,|LDS race on B1\.0 .*group 0 reads B1\.0 \(step 2 read,.*"
                                     r"group 1 writes B1\.0 \(step 0 read lower"):
        check(_wait_value(program, 1, "step 1 mfma", 8))
    check(_wait_value(program, 0, "step 1 mfma", 8))
    with pytest.raises(Hazard, match=r"LDS race on A0l\.1"):  # one more: the lower rows themselves
        check(_wait_value(program, 0, "step 1 mfma", 9))


def test_mfma_after_a_wait_that_leaves_one_read_in_flight():
    program = PingPong8().program(3)
    ops = program.groups[0]
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_lgkm" and op.phase == "step 1 read")
    assert ops[index].value == 0
    with pytest.raises(Hazard, match="group 0's MFMA cluster in epoch \\d+ \\(step 1 mfma\\) uses .* before the "
                                     "lgkmcnt wait"):
        check(program.with_group(0, ops[:index] + (replace(ops[index], value=1),) + ops[index + 1:]))


# ---------------------------------------------------------------------------------------------------- LDS budget


@pytest.mark.parametrize("tile, lds_stages, need", [
    ((256, 256, 48), 2, 98304),     # between 64 and 128 KiB
    ((256, 256, 64), 2, 131072),    # exactly gfx1151's per-WGP LDS
    ((256, 256, 32), 2, 65536),      # exactly 64 KiB: fits
])
def test_gfx1151_budget_is_its_per_workgroup_lds(tile, lds_stages, need):
    schedule = PingPong8(tile=tile, lds_stages=lds_stages)
    assert schedule.lds_bytes() == need
    gfx1151 = TARGETS["gfx1151"]
    if need <= 65536:
        check_lds(schedule, gfx1151.lds_bytes, "gfx1151")
        return
    with pytest.raises(LdsBudgetError, match=f"needs {need} B of LDS; gfx1151 has 65536"):
        check_lds(schedule, gfx1151.lds_bytes, "gfx1151")


def test_explain_refuses_a_schedule_over_gfx1151s_workgroup_lds(capsys):
    """pingpong8's 128 KiB fit gfx950 (160 KiB) but not one gfx1151 workgroup (64 KiB of the WGP's 128)."""
    assert main(["explain", "--schedule", "pingpong8", "--target", "gfx1151"]) == 2
    assert "needs 131072 B of LDS; gfx1151 has 65536" in capsys.readouterr().err
    assert main(["explain", "--schedule", "pingpong8", "--target", "gfx950"]) == 0
