"""The `hopper` pipeline's schedule for skinny and long-K problems (`pipelines.routes.hopper.fitted`) and where
`auto` takes it on sm_90a. The expected schedules are the H200 sweeps' measured winners
(results/h200/skinny-hopper/table.md, and cluster/ for K's slices summed in the cluster), written out here, and the
rule's arithmetic is checked against an independent count of SMs (one workgroup per tile, a cluster's workgroups on
SMs of their own)."""

import itertools
import math
import re
from dataclasses import replace

import pytest

from pipelines.named import plan_for
from pipelines.routes.hopper import fitted, kernel_rule
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import Epilogue, Gemm
from transforms.stream import StreamSchedule

SM90 = "sm_90a"


C = "cluster"  # K's slices summed in the cluster (one tile per workgroup); else by IREE's reduction after


@pytest.mark.parametrize("m, n, k, expected", [
    # (block_m, block_n, cluster_m, slices, where they are summed): the sweeps' fastest, or within 5 % of it
    (1, 4096, 4096, (64, 256, 1, 8, "")), (16, 4096, 4096, (64, 256, 1, 8, "")), (1, 8192, 8192, (64, 256, 1, 4, "")),
    (1, 14336, 4096, (64, 256, 1, 2, "")), (32, 8192, 8192, (64, 128, 1, 2, C)), (32, 14336, 4096, (64, 128, 1, 1, "")),
    (48, 4096, 4096, (64, 256, 1, 4, C)), (48, 14336, 4096, (64, 128, 1, 1, "")), (64, 4096, 4096, (64, 256, 1, 4, C)),
    (64, 4096, 14336, (64, 256, 1, 4, C)), (128, 4096, 14336, (64, 256, 2, 4, "")),
    (128, 4096, 4096, (128, 64, 1, 2, C)),
    (128, 8192, 8192, (128, 128, 1, 2, C)), (128, 14336, 4096, (64, 256, 2, 1, "")),
    (1024, 1024, 65536, (128, 256, 2, 4, "")),
])
def test_the_sweeps_winners(m, n, k, expected):
    s = fitted(Gemm(m, n, k))
    assert (s.block_m, s.block_n, s.cluster_m, s.split_k, C if s.sums_in_cluster else "") == expected
    # slices summed in the cluster: one tile per workgroup; else the shipped schedule's persistent loop
    assert s.kind == "cooperative" and s.persistent is not s.sums_in_cluster
    assert s.consumers == (1 if s.block_m == 64 else 2)
    s.check()
    hopper.check_problem(Gemm(m, n, k), s)


def test_the_stages_are_the_most_shared_memory_holds():
    for m in (1, 48, 128):
        s = fitted(Gemm(m, 4096, 4096))
        assert s.shared_bytes() <= hopper.SHARED_BYTES
        assert s.stages == 7 or hopper.HopperSchedule(  # the search's most, 7, or all shared memory holds
            block_m=s.block_m, block_n=s.block_n, stages=s.stages + 1, consumers=s.consumers).shared_bytes() > \
            hopper.SHARED_BYTES
    assert fitted(Gemm(48, 14336, 4096)).stages == 7 and fitted(Gemm(1, 4096, 4096)).stages == 5
    assert fitted(Gemm(48, 8192, 8192)).stages == 7 and fitted(Gemm(100, 8192, 8192)).stages == 7  # summed in the
    assert fitted(Gemm(48, 4096, 4096)).stages == 5  # cluster: 64x128 and 128x128 in 7 stages, 64x256 in 5


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
    if s.sums_in_cluster:  # the cluster's rule (test_slices_summed_in_the_cluster_take_the_most_workgroups)
        return
    assert s.split_k in (1, 2, 4, 8)
    least_k = 4096 if m <= 128 else 16384  # skinny rows, or a long K at any M
    if s.split_k > 1:  # the slices: K long enough, whole slices of 8 or more K tiles, within the SMs
        assert k >= least_k and tiles % s.split_k == 0 and tiles // s.split_k >= 8
        assert sms_busy(m, n, k, s) <= 132
    more = s.split_k * 2
    # one more doubling breaks one of those (or the cap of 8)
    assert (more > 8 or k < least_k or tiles % more or tiles // more < 8
            or sms_busy(m, n, k, s) * 2 > 132)


# The tiles and slices summed in the cluster the sweeps measured (results/h200/skinny-hopper/cluster and deep) by
# rows, as (block_m, block_n, slices, longest K, stages: those of 227 KiB less 1 KiB of alignment and the barriers,
# at most 7 or, for 128x64, 16), and the workgroups in clusters of 2 and 4 that ran in one round of the H200's SMs.
SUMMED = {range(17, 65): ((64, 256, 4, math.inf, 5), (64, 128, 2, math.inf, 7)),
          range(65, 129): ((128, 128, 2, 8192, 7), (128, 64, 2, 8192, 9))}
ONE_ROUND = {2: 128, 4: 64}


@pytest.mark.parametrize("m, n, k", list(itertools.product((1, 16, 17, 64, 65, 128, 129),
                                                           (64, 256, 4096, 8192, 8448, 14336, 16896),
                                                           (1024, 4096, 4104, 8192, 65536))))
def test_slices_summed_in_the_cluster_take_the_most_workgroups(m, n, k):
    """From 17 to 128 rows with K of at least 4096 (and at most the entry's longest), the tile and slices of SUMMED
    (slices dividing K's tiles) with the most workgroups within one round (the first on a tie), counted here from
    the problem; where none fits, the rule before (slices summed after, or K whole)."""
    s = fitted(Gemm(m, n, k))
    tiles = math.ceil(k / 64)
    rows = next((choices for span, choices in SUMMED.items() if m in span), ())
    counts = [(math.ceil(m / bm) * math.ceil(n / bn) * sl, (bm, bn, sl, stages)) for bm, bn, sl, longest, stages in rows
              if 4096 <= k <= longest and tiles % sl == 0
              and math.ceil(m / bm) * math.ceil(n / bn) * sl <= ONE_ROUND[sl]]
    if not counts:
        assert not s.sums_in_cluster
        return
    most = max(count for count, _ in counts)
    assert s.sums_in_cluster
    assert (s.block_m, s.block_n, s.split_k, s.stages) == next(c for n_, c in counts if n_ == most)
    assert hopper.grid_size(Gemm(m, n, k), s) == most and s.cluster_size == s.split_k and not s.persistent
    s.check()
    hopper.check_problem(Gemm(m, n, k), s)


def test_clusters_of_two_take_at_most_128_workgroups():
    """128 workgroups in clusters of 2 were measured in one round; 132 were not: the rule leaves them to slices summed
    after (the review's 32x8448x4096: 66 block columns of 128 in 2 slices)."""
    assert fitted(Gemm(32, 8192, 4096)).sums_in_cluster and hopper.grid_size(Gemm(32, 8192, 4096),
                                                                              fitted(Gemm(32, 8192, 4096))) == 128
    assert not fitted(Gemm(32, 8448, 4096)).sums_in_cluster and not fitted(Gemm(100, 8448, 4096)).sums_in_cluster


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
                                     (65, (128, 128, 1)), (128, (128, 128, 1)), (129, (128, 256, 2))])
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
    """From 16 rows with N and K of at least 4096 `auto` runs the kernel route's rule (the Hopper kernels' fitted
    schedule, or at 16 rows and N, K up to 8192 the stream kernel's); below 16 rows the split-k pipeline (its
    streaming kernel), and the sweep's class only (smaller N or K keep `auto`'s own rule)."""
    gemm = Gemm(m, n, k, "bf16", "nn")
    plan = plan_for("auto", gemm, get_target(SM90))
    assert isinstance(plan, (hopper.HopperSchedule, StreamSchedule)) is takes
    if takes:
        assert plan == kernel_rule(gemm)
        assert isinstance(plan, StreamSchedule) is (m <= 16 and max(n, k) <= 8192)


def test_the_hopper_pipeline_runs_the_fitted_schedule():
    gemm = Gemm(32, 8192, 8192, "bf16", "nt")
    assert plan_for("hopper", gemm, get_target(SM90)) == fitted(gemm)
    assert plan_for("hopper", gemm, get_target(SM90)).split_k == 2


def test_a_pipeline_deeper_than_seven_stages_compiles_and_its_barriers_are_counted(tmp_path):
    """128x4096x4096's rule: 128x64 tiles in 9 stages (24 KiB each: 216 KiB). Its PTX initialises two mbarriers a
    stage (full and empty), 18, which check_ptx counts against the schedule; ptxas takes it where this machine has
    it. One stage fewer in the schedule, and the same PTX is refused."""
    from test_hopper_tma_store import _assembles, _ptx_file

    gemm = Gemm(128, 4096, 4096, "bf16", "nn")
    s = fitted(gemm)
    assert s.stages == 9 and s.stages * (128 * 64 * 2 + 64 * 64 * 2) + 1024 <= 227 * 1024
    ptx_file = _ptx_file(tmp_path / "deep", hopper.program(gemm, s))
    ptx = ptx_file.read_text()
    assert len(re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64", ptx)) == 18
    hopper.check_ptx(ptx, gemm, s)
    with pytest.raises(hopper.HopperError, match="does not show its stages"):
        hopper.check_ptx(ptx, gemm, replace(s, stages=8))
    _assembles(ptx_file)


def test_sixteen_stages_are_taken_and_seventeen_refused():
    """MAX_STAGES, 16: a 64x32 tile of 16 stages (12 KiB each) fits shared memory and passes; 17 is refused for the
    count, not for shared memory (17 x 12 KiB + 1 KiB also fits)."""
    narrow = hopper.HopperSchedule(block_m=64, block_n=32, consumers=1, group_m=1, stages=16)
    narrow.check()
    assert replace(narrow, stages=17).shared_bytes() <= 227 * 1024
    with pytest.raises(hopper.HopperError, match="stages must be 2 to 16"):
        replace(narrow, stages=17).check()


def test_the_shipped_stores_go_out_in_boxes_of_32_columns_by_16_rows():
    """The measured choice (results/h200/square8192/defer1): a big 16-bit problem's fitted kernel stores C by TMA,
    deferred, through a map of 32x16 boxes."""
    gemm = Gemm(8192, 8192, 8192, "bf16", "nn", epilogue=Epilogue("truncf"))
    s = fitted(gemm)
    assert s.tma_store and s.defer_stores
    c = next(spec for spec in hopper.tensor_maps(gemm, s) if spec["operand"] == "C")
    assert c["box"] == [32, 16]
