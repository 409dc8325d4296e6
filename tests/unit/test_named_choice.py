"""Named pipelines' choices at their boundaries, without compiling: `auto` counts every batch's workgroups when it
asks whether a tile fills the chip (exactly enough workgroups keeps the larger tile, one batch fewer does not),
and `tuned` drops the XCD order for batch matmuls and defers to `auto` on shapes its tile does not divide."""

import math

import pytest

from pipelines.named import get_pipeline
from pipelines.targets import TARGETS
from transforms.problem import Gemm
from transforms.schedule import check

AUTO, TUNED = get_pipeline("auto"), get_pipeline("tuned")


def workgroups(schedule, gemm: Gemm) -> int:
    tm, tn = schedule.tile.workgroup
    return math.ceil(gemm.m / tm) * math.ceil(gemm.n / tn) * (gemm.batch or 1)


@pytest.mark.parametrize("target, batch, tile", [
    # 1024x1024 in 256x256 tiles is 16 workgroups per batch; gfx942 has 304 CUs = 16 x 19, gfx950 256 = 16 x 16
    ("gfx942", 19, (256, 256)), ("gfx942", 18, (256, 128)),
    ("gfx950", 16, (256, 256)), ("gfx950", 15, (256, 128)),
])
def test_auto_counts_batch_workgroups_at_the_fill_boundary(target, batch, tile):
    gemm = Gemm(1024, 1024, 1024, "bf16", "nt", batch=batch)
    schedule = AUTO.choose(gemm, TARGETS[target])
    assert schedule.tile.workgroup == tile
    assert workgroups(schedule, gemm) >= TARGETS[target].compute_units
    check(schedule, gemm, TARGETS[target])


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1151", "sm_80"])
def test_auto_batch_shape_fills_the_chip_with_a_larger_tile_than_one_batch(target):
    batched, single = Gemm(512, 512, 512, "bf16", "nn", batch=8), Gemm(512, 512, 512, "bf16", "nn")
    many, one = AUTO.choose(batched, TARGETS[target]), AUTO.choose(single, TARGETS[target])
    area = lambda s: s.tile.workgroup[0] * s.tile.workgroup[1]  # noqa: E731
    assert area(many) > area(one)
    assert workgroups(many, batched) >= TARGETS[target].compute_units or area(many) == 128 * 128


def test_auto_non_square_shape_counts_both_dimensions():
    """M ≠ N: 4096x256 in 256x256 tiles is 16 workgroups, not 16 x 16; gfx942 needs 304."""
    tall = Gemm(4096, 256, 1024, "bf16", "nt")
    schedule = AUTO.choose(tall, TARGETS["gfx942"])
    assert workgroups(schedule, tall) >= 304 and schedule.tile.workgroup != (256, 256)
    assert AUTO.choose(Gemm(4864, 4096, 1024, "bf16", "nt"), TARGETS["gfx942"]).tile.workgroup == (256, 256)


def test_auto_leaves_skinny_problems_to_iree():
    assert AUTO.choose(Gemm(63, 4096, 4096, "bf16", "nn"), TARGETS["gfx942"]) is None
    assert AUTO.choose(Gemm(4096, 63, 4096, "bf16", "nn"), TARGETS["gfx942"]) is None
    assert AUTO.choose(Gemm(64, 4096, 4096, "bf16", "nn"), TARGETS["gfx942"]) is not None


def test_tuned_batch_matmul_uses_row_order():
    gemm = Gemm(4096, 4096, 4096, "bf16", "nn", batch=2)
    schedule = TUNED.choose(gemm, TARGETS["gfx942"])
    assert schedule.tile.workgroup == (256, 256) and schedule.swizzle.workgroup_order == "row"
    check(schedule, gemm, TARGETS["gfx942"])
    assert TUNED.choose(gemm.with_(batch=None), TARGETS["gfx942"]).swizzle.workgroup_order == "xcd"


@pytest.mark.parametrize("shape", [(4096, 4096, 4100), (4096, 4000, 4096), (4000, 4096, 4096)])
def test_tuned_defers_to_auto_when_its_tile_does_not_divide(shape):
    gemm = Gemm(*shape, "bf16", "nt")
    assert TUNED.choose(gemm, TARGETS["gfx942"]) == AUTO.choose(gemm, TARGETS["gfx942"])
    assert TUNED.choose(Gemm(4096, 4096, 4096, "bf16", "nt"), TARGETS["gfx942"]) != AUTO.choose(
        Gemm(4096, 4096, 4096, "bf16", "nt"), TARGETS["gfx942"])


@pytest.mark.parametrize("target, dtype, mma", [
    ("gfx950", "bf16", "MFMA_F32_16x16x16_BF16"),   # gfx950 also has 16x16x32: the lane route takes the smaller K
    ("gfx942", "f16", "MFMA_F32_16x16x16_F16"),
    ("gfx1151", "bf16", "WMMAR3_F32_16x16x16_BF16"),
])
def test_lane_route_takes_the_16x16_intrinsic_with_the_smallest_k(target, dtype, mma):
    schedule = get_pipeline("codegen").choose(Gemm(512, 256, 128, dtype, "nn"), TARGETS[target])
    assert schedule.tile.mma == mma and schedule.tile.k == 32 and schedule.tile.workgroup == (128, 128)


@pytest.mark.parametrize("k, k_tile", [(255, 16), (256, 64), (512, 64)])
def test_auto_k_step_from_256(k, k_tile):
    """K of at least 256 gets a 64-deep K step (bf16); below, one intrinsic's K (16 for 16x16x16 on gfx942)."""
    assert AUTO.choose(Gemm(2048, 2048, k, "bf16", "nn"), TARGETS["gfx942"]).tile.k == k_tile
