"""The `hopper` pipeline's schedule for skinny and long-K problems (`pipelines.routes.hopper.fitted`) and where
`auto` takes it on sm_90a. The expected schedules are the H200 sweep's measured winners
(results/h200/skinny-hopper/table.md), written out here, and the rule's arithmetic is checked against an independent
count of SMs (one workgroup per tile, a cluster's workgroups on SMs of their own)."""

import itertools
import math

import pytest

from pipelines.named import plan_for
from pipelines.routes.hopper import fitted
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import Gemm

SM90 = "sm_90a"


@pytest.mark.parametrize("m, n, k, expected", [
    # (block_m, block_n, cluster_m, slices): the sweep's fastest, or within 2 % of it
    (1, 4096, 4096, (64, 256, 1, 8)), (16, 4096, 4096, (64, 256, 1, 8)), (1, 8192, 8192, (64, 256, 1, 4)),
    (1, 14336, 4096, (64, 256, 1, 2)), (32, 8192, 8192, (64, 128, 1, 2)), (32, 14336, 4096, (64, 128, 1, 1)),
    (48, 4096, 4096, (64, 128, 1, 4)), (48, 14336, 4096, (64, 128, 1, 1)), (64, 4096, 4096, (64, 128, 1, 4)),
    (64, 4096, 14336, (64, 128, 1, 4)), (128, 4096, 14336, (64, 256, 2, 4)), (128, 8192, 8192, (64, 256, 2, 2)),
    (128, 14336, 4096, (64, 256, 2, 1)), (1024, 1024, 65536, (128, 256, 2, 4)),
])
def test_the_sweeps_winners(m, n, k, expected):
    s = fitted(Gemm(m, n, k))
    assert (s.block_m, s.block_n, s.cluster_m, s.split_k) == expected
    assert s.kind == "cooperative" and s.persistent and s.consumers == (1 if s.block_m == 64 else 2)
    s.check()
    hopper.check_problem(Gemm(m, n, k), s)


def test_the_stages_are_the_most_shared_memory_holds():
    for m in (1, 48, 128):
        s = fitted(Gemm(m, 4096, 4096))
        assert s.shared_bytes() <= hopper.SHARED_BYTES
        assert s.stages == 7 or hopper.HopperSchedule(  # the search's most, 7, or all shared memory holds
            block_m=s.block_m, block_n=s.block_n, stages=s.stages + 1, consumers=s.consumers).shared_bytes() > \
            hopper.SHARED_BYTES
    assert fitted(Gemm(48, 4096, 4096)).stages == 7 and fitted(Gemm(1, 4096, 4096)).stages == 5


def sms_busy(m, n, k, s) -> int:
    """SMs one round of the problem's units of work takes: a workgroup per (tile, slice), whole clusters."""
    rows = math.ceil(math.ceil(m / s.block_m) / s.cluster_m) * s.cluster_m
    return rows * math.ceil(n / s.block_n) * s.split_k


@pytest.mark.parametrize("m, n, k", list(itertools.product((1, 16, 17, 64, 65, 128, 129, 512, 1024),
                                                           (256, 4096, 8448, 14336, 16896),
                                                           (1024, 4096, 4104, 4160, 8192, 65536))))
def test_slices_fill_the_sms_and_no_more(m, n, k):
    s = fitted(Gemm(m, n, k))
    tiles = math.ceil(k / 64)
    assert s.split_k in (1, 2, 4, 8)
    least_k = 4096 if m <= 128 else 16384  # skinny rows, or a long K at any M
    if s.split_k > 1:  # the slices: K long enough, whole slices of 8 or more K tiles, within the SMs
        assert k >= least_k and tiles % s.split_k == 0 and tiles // s.split_k >= 8
        assert sms_busy(m, n, k, s) <= 132
    more = s.split_k * 2
    # one more doubling breaks one of those (or the cap of 8)
    assert (more > 8 or k < least_k or tiles % more or tiles // more < 8
            or sms_busy(m, n, k, s) * 2 > 132)


def test_exactly_every_sm():
    """Units of work on exactly the 132 SMs are taken; one more slice would not fit."""
    assert fitted(Gemm(1, 16896, 4096)).split_k == 2  # 66 block columns of 256, 2 slices: 132 SMs
    assert fitted(Gemm(1, 8448, 4096)).split_k == 4  # 33 columns, 4 slices
    assert fitted(Gemm(1, 16904, 4096)).split_k == 1  # 67 columns: 2 slices would be 134 SMs


def test_k_off_the_tile_counts_its_last_partial_tile():
    """K of 4104 is 65 tiles of 64 (the last partial): no slicing divides them, so none; 4160 is 65 too."""
    for k in (4104, 4160):
        s = fitted(Gemm(16, 4096, k))
        assert s.split_k == 1
        hopper.check_problem(Gemm(16, 4096, k), s)
    assert fitted(Gemm(16, 4096, 4224)).split_k == 2  # 66 tiles: 2 slices of 33 (16 columns x 2 = 32 SMs, 4 of 66
    # tiles would not divide)


def test_the_hopper_pipeline_says_it_is_fitted():
    from pipelines.named import get_pipeline
    assert "fitted to skinny and long-K problems" in get_pipeline("hopper").summary


@pytest.mark.parametrize("m, tile", [(1, (64, 256, 1)), (16, (64, 256, 1)), (17, (64, 128, 1)), (64, (64, 128, 1)),
                                     (65, (64, 256, 2)), (128, (64, 256, 2)), (129, (128, 256, 2))])
def test_the_tile_by_rows(m, tile):
    s = fitted(Gemm(m, 8192, 8192))
    assert (s.block_m, s.block_n, s.cluster_m) == tile


def test_problems_with_tiles_for_every_sm_keep_the_shipped_schedule():
    for shape in ((8192, 8192, 8192), (4096, 4096, 4096), (4096, 2048, 2048), (8192, 1024, 1024), (300, 520, 256)):
        assert fitted(Gemm(*shape)) == hopper.DEFAULT


def test_medium_problems_keep_k_whole_below_a_long_k():
    """Past 128 rows K is sliced only from K = 16384 (the long-K problem measured), not at 512x512x4096 (8 slices
    would fit the SMs) nor 1024x1024x8192: neither was measured sliced."""
    for shape in ((512, 512, 4096), (1024, 1024, 8192), (512, 4096, 4096), (1024, 1024, 16320)):
        assert fitted(Gemm(*shape)) == hopper.DEFAULT
    assert fitted(Gemm(1024, 1024, 16384)).split_k == 4 and fitted(Gemm(512, 512, 16384)).split_k == 8


@pytest.mark.parametrize("m, n, k, takes", [
    (16, 4096, 4096, True), (15, 4096, 4096, False), (64, 4104, 4096, True), (64, 4088, 4096, False),
    (64, 4096, 4088, False), (127, 8192, 8192, True), (32, 14336, 4096, True),
])
def test_auto_takes_skinny_problems_of_the_sweeps_class(m, n, k, takes):
    """From 16 rows with N and K of at least 4096 `auto` runs the Hopper kernels' fitted schedule; below 16 rows the
    split-k pipeline (its streaming kernel), and the sweep's class only (smaller N or K keep `auto`'s own rule)."""
    gemm = Gemm(m, n, k, "bf16", "nn")
    plan = plan_for("auto", gemm, get_target(SM90))
    assert isinstance(plan, hopper.HopperSchedule) is takes
    if takes:
        assert plan == fitted(gemm)


def test_the_hopper_pipeline_runs_the_fitted_schedule():
    gemm = Gemm(32, 8192, 8192, "bf16", "nt")
    assert plan_for("hopper", gemm, get_target(SM90)) == fitted(gemm)
    assert plan_for("hopper", gemm, get_target(SM90)).split_k == 2
