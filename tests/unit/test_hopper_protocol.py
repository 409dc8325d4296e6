"""The Hopper stage hand-off checker (transforms.hopper_protocol): the schedules the generator emits pass under
random interleavings, and each way of breaking the hand-off is caught."""

import pytest

from transforms import hopper_protocol
from transforms.hopper import HopperSchedule
from transforms.hopper_protocol import ProtocolHazard, check, programs, run

SCHEDULES = [HopperSchedule(256, 128, 64, 4), HopperSchedule(128, 256, 64, 2, persistent=True),
             HopperSchedule(128, 128, 64, 2, kind="pingpong"), HopperSchedule(64, 256, 64, 3, kind="pingpong")]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: f"{s.kind}-{s.stages}")
def test_the_emitted_hand_off_is_sound(schedule):
    check(schedule, tiles=6, k_steps=5, runs=200)


def _without(roles, barrier):
    return {r: [s for s in steps if not (s.kind == "wait" and s.barrier[0] == barrier)] for r, steps in roles.items()}


def test_ping_pong_without_its_turns_reads_stale_stages():
    """Without the order barrier a consumer's `full` wait aims two phases ahead of the producer and passes."""
    schedule = SCHEDULES[2]
    roles = _without(programs(schedule, 6, 5), "order")
    with pytest.raises(ProtocolHazard, match="reads stage .* but it"):
        for seed in range(200):
            run(schedule, roles, seed)


def test_a_producer_that_does_not_wait_for_empty_overwrites_a_stage_being_read():
    schedule = SCHEDULES[0]
    roles = _without(programs(schedule, 2, 6), "empty")
    with pytest.raises(ProtocolHazard, match="still reads it"):
        for seed in range(200):
            run(schedule, roles, seed)


@pytest.mark.parametrize("key, wrong", [("full_parity", lambda q, s: (q // s + 1) & 1),
                                        ("empty_parity", lambda q, s: (q // s) & 1),
                                        ("order_parity", lambda turn, consumer: (turn + consumer) & 1)])
def test_each_parity_formula_is_needed(monkeypatch, key, wrong):
    monkeypatch.setitem(hopper_protocol.PROTOCOL, key, wrong)
    with pytest.raises(ProtocolHazard):
        check(SCHEDULES[2], runs=50)
