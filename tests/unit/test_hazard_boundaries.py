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

# Waits with slack: none. (Before the copies became async and their waits moved after the next step's MFMAs,
# pingpong8's leading group had two: its prologue wait and its refill wait.)
SLACK: dict[str, set] = {}


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


def test_a_refill_lands_before_the_next_steps_phase_2_barrier():
    """pingpong8 waits for step 0's refill (vmcnt(0): nothing newer is in flight yet) after step 1's MFMAs, before
    the barrier that ends that phase. The lagging group has no slack there: one barrier later, the leading group's
    step-2 read of the refilled stage races with its copies. The leading group has one barrier to spare (the
    lagging group reads a barrier later)."""
    program = PingPong8().program(5)
    waits = [(op.phase, op.value) for op in program.groups[1] if op.kind == "wait_vm"]
    assert waits == [("prologue", 0), ("step 1 mfma", 0), ("step 2 mfma", 0), ("step 3 mfma", 0)]
    check(program)
    with pytest.raises(Hazard, match=r"LDS race on B1\.0 .*group 0 reads B1\.0 \(step 2 read.*group 1 writes "
                                     r"B1\.0 \(step 0 load"):
        check(_wait_after_its_barrier(program, 1, "step 1 mfma"))
    check(_wait_after_its_barrier(program, 0, "step 1 mfma"))


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
