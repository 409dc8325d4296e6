"""The engine clock under matrix load (`engine_clock_mhz`, `round_fills`): worked by hand, at both ends of each
clamp, and as properties: the rounds' fills are the workgroups dealt to the units one at a time (an independent
simulation), a heavier load never raises the clock, and through the whole model one more workgroup never takes
less time whatever the fitted clock (down to a clock of a tenth of the peak)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from pipelines.targets import TARGETS, Timing
from pipelines.timing.predict import engine_clock_mhz, round_fills
from test_timing_oracles import dealt_fills as dealt  # the oracle: deal the workgroups one at a time

BASE = TARGETS["gfx950"].timing


def timing(peak: float = 2400, matrix: float | None = 1600) -> Timing:
    return dataclasses.replace(BASE, clock_mhz=peak, matrix_clock_mhz=matrix)


@pytest.mark.parametrize("busy, fill, clock", [
    (0.0, 1.0, 2400), (1.0, 0.0, 2400),  # no matrix work, or no workgroups: the peak clock
    (1.0, 1.0, 1600),  # every pipe busy on every clock of every CU: the matrix clock
    (0.5, 1.0, 2000), (1.0, 0.5, 2000), (0.5, 0.5, 2200),  # 2400 - 800 × load
    (0.25, 1.0, 2200),
])
def test_the_clock_falls_linearly_with_the_load(busy, fill, clock):
    assert engine_clock_mhz(timing(), busy, fill) == pytest.approx(clock)


@pytest.mark.parametrize("busy, fill", [(1.5, 1.0), (1.0, 2.0), (-0.1, 1.0), (1.0, -3.0)])
def test_a_load_outside_zero_to_one_is_clamped(busy, fill):
    clock = engine_clock_mhz(timing(), busy, fill)
    assert 1600 <= clock <= 2400
    assert clock == engine_clock_mhz(timing(), min(1, max(0, busy)), min(1, max(0, fill)))


def test_no_matrix_clock_means_the_peak_clock_at_any_load():
    assert engine_clock_mhz(timing(matrix=None), 1.0, 1.0) == 2400


def test_the_sourced_gfx942_clock_reproduces_the_measured_median():
    """AMD measured an MI300X at a median 1207 MHz running a GEMM at 94 % of the peak at that clock."""
    assert engine_clock_mhz(TARGETS["gfx942"].timing, 0.94, 1.0) == pytest.approx(1207, abs=2)


@settings(max_examples=200, deadline=None)
@given(a=st.floats(0, 1), b=st.floats(0, 1), fill=st.floats(0, 1))
def test_a_heavier_load_never_raises_the_clock(a, b, fill):
    low, high = sorted((a, b))
    assert engine_clock_mhz(timing(), high, fill) <= engine_clock_mhz(timing(), low, fill)


@pytest.mark.parametrize("units", [1, 7, 256])
@pytest.mark.parametrize("resident", [1, 3, 4])
@pytest.mark.parametrize("offset", [-1, 0, 1])
@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_round_fills_match_dealing_at_each_boundary(units, resident, offset, rounds):
    workgroups = max(1, units * resident * rounds + offset)
    assert round_fills(workgroups, units, resident) == pytest.approx(dealt(workgroups, units, resident))


@settings(max_examples=200, deadline=None)
@given(workgroups=st.integers(1, 3000), units=st.integers(1, 300), resident=st.integers(1, 8))
def test_round_fills_match_dealing(workgroups, units, resident):
    assert round_fills(workgroups, units, resident) == pytest.approx(dealt(workgroups, units, resident))


def compute_us(workgroups: int, units: int, resident: int, busy: float, clocks: Timing, cycles: int = 10**5) -> float:
    return sum(cycles / engine_clock_mhz(clocks, busy, f) for f in round_fills(workgroups, units, resident))


@settings(max_examples=300, deadline=None)
@given(workgroups=st.integers(1, 2000), units=st.integers(1, 64), resident=st.integers(1, 8),
       busy=st.floats(0, 1), matrix=st.floats(240, 2400))
def test_one_more_workgroup_never_takes_less_time(workgroups, units, resident, busy, matrix):
    clocks = timing(2400, matrix)
    assert (compute_us(workgroups + 1, units, resident, busy, clocks)
            >= compute_us(workgroups, units, resident, busy, clocks) * (1 - 1e-12))


def test_the_loop_load_is_the_loops_matrix_work_against_the_pipes_full_rate():
    """gfx942: 1307.4 TFLOP/s at 2100 MHz over 304 CUs is 1024 multiply-adds a clock a CU (2048 FLOP/clk/CU, the
    MI300X data sheet's figure); 1024 × 1000 of work in 2000 clocks keeps the pipes half busy."""
    from pipelines.timing.predict import _loop_load

    gfx942 = TARGETS["gfx942"]
    problem = {"dtype": "bf16"}
    assert _loop_load(gfx942, problem, 1024 * 1000, 2000, 0.0) == pytest.approx(0.5, rel=1e-3)
    assert _loop_load(gfx942, problem, 1024 * 4000, 2000, 0.0) == 1.0  # more than the pipes can do: clamped
    assert _loop_load(gfx942, problem, 0, 2000, 0.3) == 0.0
    assert _loop_load(gfx942, problem, 1024, 0, 0.3) == 0.3  # no clocks to judge by: the window's
