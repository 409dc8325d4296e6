"""Flags to a `Request`, the request to a job: every schedule flag reaches the schedule, 0 included (a value, not
"not given"), and a request carries what the namespace held."""

import argparse

import pytest

from pipelines.request import Request, ScheduleFlags, job_for


def _job(**flags):
    return job_for(Request(command="compile", target="gfx942", pipeline="tuned", shape="1024x1024x1024",
                           flags=ScheduleFlags(**flags)))


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_a_prefetch_flag_sets_the_stages_zero_included(prefetch):
    assert _job(prefetch=prefetch).schedules[0].staging.prefetch_stages == prefetch


def test_raster_rows_and_waves_per_eu_of_one_are_kept():
    schedule = _job(order="raster", raster_rows=1, waves_per_eu=1).schedules[0]
    assert schedule.swizzle.raster_rows == 1 and schedule.warp_groups.waves_per_eu == 1


def test_a_request_reads_every_field_of_the_namespace_and_leaves_absent_ones_none():
    args = argparse.Namespace(command="compile", target="sm_80", shape="64x64x64", beta=0.5, alpha=2.0,
                              epilogue="alpha-beta", prefetch=0, split_k=None)
    request = Request.from_args(args)
    assert (request.alpha, request.beta, request.epilogue, request.flags.prefetch) == (2.0, 0.5, "alpha-beta", 0)
    assert request.layout is None and request.problem("layout") == "nn" and request.flags.given
    assert not Request.from_args(argparse.Namespace(command="bench", target="sm_80")).flags.given
