"""The schedule hazard checker: every shipped warp-group schedule passes; planted faults are rejected with the
epoch, buffer and groups named; wait counts come from the model."""

from dataclasses import replace

import pytest

from transforms.hazards import Hazard, Program, check
from transforms.ukernel_dbuf import dbuf_schedule, pc_schedule
from transforms.warpgroups import SCHEDULES, PingPong8


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize("k_steps", [1, 2, 3, 8])
def test_shipped_schedules_are_race_free(name, k_steps):
    assert check(SCHEDULES[name]().program(k_steps))


def drop_barrier_everywhere(program: Program, phase: str) -> Program:
    groups = []
    for ops in program.groups:
        index = next(i for i, op in enumerate(ops) if op.kind == "barrier" and op.phase == phase)
        groups.append(ops[:index] + ops[index + 1:])
    return replace(program, groups=tuple(groups))


def test_removed_barrier_races_on_shared_b():
    """Without the barrier after phase 1, the leading group's phase 3 (its refill of B's half for the step two on)
    falls in the epoch where the lagging group still reads that half."""
    broken = drop_barrier_everywhere(PingPong8().program(4), "step 1 read")
    with pytest.raises(Hazard, match=r"LDS race on B0\.1 in epoch 6: group 0 writes B0\.1 \(step 1 read lower.*group "
                                     r"1 reads B0\.1 \(step 1 read,"):
        check(broken)


def test_wrong_stagger_races():
    """Two phases apart, the lagging group reads B in the leading group's phase 3, where it refills its half."""
    with pytest.raises(Hazard, match=r"LDS race on B0\.0 in epoch 3: group 0 writes B0\.0 \(step 0 read lower.*group "
                                     r"1 reads B0\.0 \(step 0 read,"):
        check(PingPong8(stagger=2).program(4))


def test_loosened_prologue_wait_races():
    """Leave part of the prologue's copies in flight past the stagger (vmcnt(8) instead of the derived vmcnt(0)): the
    lower A rows of tile 0 are read while still being written."""
    program = PingPong8().program(4)
    for group in (0, 1):
        ops = list(program.groups[group])
        index = next(i for i, op in enumerate(ops) if op.kind == "wait_vm" and op.phase == "prologue")
        assert ops[index].value == 0
        ops[index] = replace(ops[index], value=8)
        program = program.with_group(group, tuple(ops))
    with pytest.raises(Hazard, match=r"LDS race on A\dl\.0 .*writes A\dl\.0 \(prologue"):
        check(program)


def test_missing_lgkm_wait_is_named():
    program = PingPong8().program(4)
    ops = list(program.groups[0])
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_lgkm" and op.phase == "step 1 read")
    with pytest.raises(Hazard, match="group 0's MFMA cluster in epoch 6 \\(step 1 mfma\\) uses A0u.1 before"):
        check(program.with_group(0, tuple(ops[:index] + ops[index + 1:])))


def test_one_sided_stagger_deadlocks():
    with pytest.raises(Hazard, match="barrier counts differ .* the workgroup deadlocks"):
        program = PingPong8().program(4)
        ops = program.groups[0]
        last = max(i for i, op in enumerate(ops) if op.kind == "barrier")
        check(program.with_group(0, ops[:last] + ops[last + 1:]))


def test_waits_are_derived_from_the_model():
    """Per wave and step the two-stage schedule copies b B-half pieces and u + l upper and lower A rows (u = l = half
    the A half's). Waits, from the schedule's description: at the end of step i's phase 2, the lower rows of i and
    the B half of i + 1 (younger: the upper rows of i + 1 and the lower rows of i + 1, u + l); at the end of phase 4,
    the upper rows of i + 1 (younger: the lower rows of i + 1 and this step's B half and upper rows of i + 2,
    l + b + u). Step 0 waits for nothing (the prologue waited); near the end fewer copies are younger."""
    for tile, a_half in (((256, 256, 64), 4), ((128, 256, 64), 2)):
        u = l = a_half // 2
        b = 4  # the B half: 128 x 64 bf16 over 4 waves of 64 lanes, 16 bytes each
        ops = PingPong8(tile=tile).program(5).groups[0]
        assert [op.count for op in ops if op.kind == "load"][:3] == [b, u, l]
        assert [(op.phase, op.value) for op in ops if op.kind == "wait_vm"] == [
            ("prologue", 0), ("step 1 mfma", u + l), ("step 1 mfma lower", l + b + u), ("step 2 mfma", u + l),
            ("step 2 mfma lower", l + b + u), ("step 3 mfma", u + l), ("step 3 mfma lower", l), ("step 4 mfma", 0)]


def test_explain_prints_table_and_picture(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pipelines", "explain", "--schedule", "pingpong8", "-o",
                           str(tmp_path / "pp.png")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "hazard check: no LDS race" in done.stdout and "mfma×64" in done.stdout
    assert (tmp_path / "pp.png").stat().st_size > 10000


def test_register_prefetch_pingpong_is_race_free_and_fits_gfx942():
    from pipelines.targets import TARGETS
    from transforms.warpgroups import check_lds

    schedule = PingPong8(lds_stages=1)
    for k_steps in (1, 2, 5):
        check(schedule.program(k_steps))
    check_lds(schedule, TARGETS["gfx942"].lds_bytes, "gfx942")  # 64 KiB exactly


def test_two_lds_stages_do_not_fit_gfx942():
    from pipelines.targets import TARGETS
    from transforms.warpgroups import LdsBudgetError, check_lds

    with pytest.raises(LdsBudgetError, match="pingpong8 256x256x64 with 2 LDS stage\\(s\\) needs 131072 B of LDS; "
                                             "gfx942 has 65536"):
        check_lds(PingPong8(), TARGETS["gfx942"].lds_bytes, "gfx942")
    check_lds(PingPong8(), TARGETS["gfx950"].lds_bytes, "gfx950")


def test_store_before_its_fetch_wait_is_named():
    program = PingPong8(lds_stages=1).program(3)
    ops = list(program.groups[1])
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_vm" and op.phase == "step 0 store")
    with pytest.raises(Hazard, match="group 1 stores B1 in epoch 4 \\(step 0 store\\) before the vmcnt wait"):
        check(program.with_group(1, tuple(ops[:index] + ops[index + 1:])))


def test_register_prefetch_needs_its_fourth_phase():
    """Drop the barrier after the second MFMA half: the leading group reads while the lagging group stores."""
    broken = drop_barrier_everywhere(PingPong8(lds_stages=1).program(3), "step 0 mfma 2")
    with pytest.raises(Hazard, match="LDS race on B1 in epoch 4: group 0 reads B1 \\(step 1 read.*group 1 writes B1 "
                                     "\\(step 0 store"):
        check(broken)


@pytest.mark.parametrize("wave_size, mma_k, fetch_slices", [(32, 16, 1), (32, 16, 2), (64, 16, 4), (64, 32, 1)])
@pytest.mark.parametrize("k_steps", [1, 2, 3, 8])
def test_register_prefetch_double_buffers_are_race_free(wave_size, mma_k, fetch_slices, k_steps):
    assert check(dbuf_schedule("bf16", wave_size, mma_k, fetch_slices).program(k_steps))


def test_gfx1151_double_buffer_without_its_step_barrier_races():
    """Without the barrier that ends step 0, a fast wave stores tile 2 into stage 0 while slower ones read it."""
    broken = drop_barrier_everywhere(dbuf_schedule("bf16", 32, 16).program(3), "step 0")
    with pytest.raises(Hazard, match=r"LDS race on AB\.0 in epoch 1: .*reads AB\.0 \(step 0.*writes AB\.0 "
                                     r"\(step 1"):
        check(broken)


def test_gfx1151_store_into_the_stage_being_read_races():
    program = dbuf_schedule("bf16", 32, 16, 2).program(3)
    ops = tuple(replace(op, buffer="AB.0") if op.kind == "store" and op.phase == "step 0" else op
                for op in program.groups[0])
    with pytest.raises(Hazard, match=r"LDS race on AB\.0 in epoch 1: .*reads AB\.0 \(step 0.*writes AB\.0 "
                                     r"\(step 0"):
        check(program.with_group(0, ops))


@pytest.mark.parametrize("k_steps", [1, 2, 3, 8])
def test_register_prefetch_producer_consumer_is_race_free(k_steps):
    assert check(pc_schedule("bf16", 16, 32).program(k_steps))


def test_producers_filling_the_stage_being_read_race():
    """Producers that refill the stage the consumers read in the same step (one stage instead of two)."""
    program = pc_schedule("bf16", 16, 32).program(3)
    ops = tuple(replace(op, buffer=op.buffer[:-1] + "1") if op.kind in ("fetch", "store") and op.phase == "step 1"
                else op for op in program.groups[0])
    with pytest.raises(Hazard, match=r"LDS race on A\.1 in epoch 2: producers writes A\.1 \(step 1.*consumers "
                                     r"reads A\.1 \(step 1"):
        check(program.with_group(0, ops))


@pytest.mark.parametrize("k_steps", [2, 3, 5])
def test_one_stage_pingpong8_fetches_the_next_tile_before_its_reads(k_steps):
    """Each group fetches the next tile at the start of step i's read phase, before its first LDS read, for every
    step but the last (nothing left to fetch), and stores what it fetched in that step's store phase."""
    program = PingPong8(tile=(256, 256, 32), lds_stages=1).program(k_steps)
    for ops in program.groups:
        fetched = [op for op in ops if op.kind == "fetch" and op.phase != "prologue"]  # the prologue fills too
        assert len(fetched) == 2 * (k_steps - 1)  # A and the group's half of B, once a step but the last
        for i in range(k_steps):
            step = [op for op in ops if op.phase == f"step {i} read"]
            kinds = [op.kind for op in step]
            if i + 1 < k_steps:
                first_read = kinds.index("read")
                assert kinds[:first_read] == ["fetch", "fetch"], (i, kinds)
                assert sum(op.kind == "store" for op in ops if op.phase == f"step {i} store") == 2
            else:
                assert "fetch" not in kinds
                assert not any(op.kind in ("fetch", "store") for op in ops if op.phase.startswith(f"step {i} "))
