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
    broken = drop_barrier_everywhere(PingPong8().program(4), "step 1 read")
    with pytest.raises(Hazard, match=r"LDS race on B0\.1 in epoch 5: group 0 writes B0\.1 \(step 1 load.*group 1 "
                                     r"reads B0\.1 \(step 1 read"):
        check(broken)


def test_wrong_stagger_races():
    with pytest.raises(Hazard, match=r"LDS race on B0\.0 in epoch 3: group 0 writes B0\.0 \(step 0 load.*group 1 "
                                     r"reads B0\.0"):
        check(PingPong8(stagger=2).program(4))


def test_loosened_prologue_wait_races():
    """HipKittens-style: leave stage 1 in flight past the stagger (vmcnt(8) instead of the derived vmcnt(0))."""
    program = PingPong8().program(4)
    for group in (0, 1):
        ops = list(program.groups[group])
        index = next(i for i, op in enumerate(ops) if op.kind == "wait_vm" and op.phase == "prologue")
        assert ops[index].value == 0
        ops[index] = replace(ops[index], value=8)
        program = program.with_group(group, tuple(ops))
    with pytest.raises(Hazard, match=r"LDS race on B\d\.1 .*writes B\d\.1 \(prologue"):
        check(program)


def test_missing_lgkm_wait_is_named():
    program = PingPong8().program(4)
    ops = list(program.groups[0])
    index = next(i for i, op in enumerate(ops) if op.kind == "wait_lgkm" and op.phase == "step 1 read")
    with pytest.raises(Hazard, match="group 0's MFMA cluster in epoch 5 \\(step 1 mfma\\) uses"):
        check(program.with_group(0, tuple(ops[:index] + ops[index + 1:])))


def test_one_sided_stagger_deadlocks():
    with pytest.raises(Hazard, match="barrier counts differ .* the workgroup deadlocks"):
        program = PingPong8().program(4)
        ops = program.groups[0]
        last = max(i for i, op in enumerate(ops) if op.kind == "barrier")
        check(program.with_group(0, ops[:last] + ops[last + 1:]))


def test_waits_are_derived_from_the_model():
    """Each step's refill stays in flight through the next step and is waited for after that step's MFMAs; the
    derived count is what the builder has in flight then (nothing newer: 0), for any tile, and no load phase
    waits."""
    for tile, a_count in (((256, 256, 64), 4), ((128, 256, 64), 2)):
        ops = PingPong8(tile=tile).program(5).groups[0]
        assert next(op.count for op in ops if op.kind == "load" and op.buffer.startswith("A")) == a_count
        assert [(op.phase, op.value) for op in ops if op.kind == "wait_vm"] == [
            ("prologue", 0), ("step 1 mfma", 0), ("step 2 mfma", 0), ("step 3 mfma", 0)]


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
