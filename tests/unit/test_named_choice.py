"""Named pipelines' choices at their boundaries, without compiling: `auto` counts every batch's workgroups when it
asks whether a tile fills the chip (exactly enough workgroups keeps the larger tile, one batch fewer does not),
and `tuned` drops the XCD order for batch matmuls and defers to `auto` on shapes its tile does not divide."""

import math

import pytest

from pipelines.named import get_pipeline
from pipelines.targets import TARGETS, TargetError
from transforms.problem import Gemm
from transforms.schedule import aligned, check, k_steps

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


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1151"])  # CUDA's floor of 128x128: below
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


@pytest.mark.parametrize("shape, tile", [((512, 512, 512), None), ((1024, 1024, 1024), None),
                                         ((4096, 256, 4096), None), ((128, 8192, 8192), None),
                                         ((2048, 2048, 2048), (128, 128)), ((8192, 8192, 8192), (128, 128))])
@pytest.mark.parametrize("name", ["tuned", "auto"])
def test_cuda_tiles_fill_the_sms_or_leave_the_problem_to_iree(name, shape, tile):
    """No tile below 128x128 (auto's 64x64 ran 0.93-0.94x IREE's default on 1024³), and none that leaves SMs idle
    (128x128 ran 0.86-0.87x on 128x8192x8192 NT and 4096x256x4096: 64 workgroups; results/h200/awkward/earlier)."""
    schedule = get_pipeline(name).choose(Gemm(*shape, "bf16", "nn"), TARGETS["sm_89"])
    assert (schedule.tile.workgroup if schedule else None) == tile
    if schedule is not None:
        assert workgroups(schedule, Gemm(*shape, "bf16", "nn")) >= TARGETS["sm_89"].compute_units


@pytest.mark.parametrize("layout, shape, refused", [
    ("nt", (511, 4096, 4096), True), ("nt", (512, 4096, 4096), False), ("tn", (4096, 511, 4096), True),
    ("tn", (4096, 512, 4096), False), ("nn", (16, 4096, 4096), False)])
def test_codegen_refuses_transposes_that_outweigh_the_gemm(layout, shape, refused):
    """NT/TN transpose B/A in a dispatch of its own: 0.51-0.69x IREE's default at M = 16 and 128 (H200)."""
    gemm = Gemm(*shape, "bf16", layout)
    for name in ("codegen", "codegen-raster"):
        if refused:
            with pytest.raises(TargetError, match="transposes"):
                get_pipeline(name).choose(gemm, TARGETS["sm_80"])
        else:
            assert get_pipeline(name).choose(gemm, TARGETS["sm_80"]) is not None


@pytest.mark.parametrize("shape", [(4000, 4000, 4000), (4096, 4096, 4000), (257, 4096, 4096), (128, 128, 4000)])
@pytest.mark.parametrize("name", ["tuned", "auto"])
def test_tuned_and_auto_leave_padded_problems_to_iree_on_cuda(name, shape):
    """Padded tiles measured 0.48x IREE's default (bf16 4000³ NN, 50 vs 104 TFLOP/s on an H200)."""
    assert get_pipeline(name).choose(Gemm(*shape, "bf16", "nn"), TARGETS["sm_89"]) is None
    assert get_pipeline(name).choose(Gemm(*shape, "bf16", "nn"), TARGETS["gfx942"]) is not None


@pytest.mark.parametrize("target, dtype", [("gfx942", "bf16"), ("gfx950", "bf16"), ("gfx950", "f8E4M3FN")])
@pytest.mark.parametrize("k", [64, 128, 192, 256])
def test_named_pipelines_pipeline_only_k_loops_of_three_steps(target, dtype, k):
    """IREE 3.13 keeps one stage of a loop of one or two K steps: two stages (and DMA buffers) from three on."""
    for name in ("tuned", "auto"):
        gemm = Gemm(512, 512, k, dtype, "nt")
        schedule = get_pipeline(name).choose(gemm, TARGETS[target])
        assert (schedule.staging.prefetch_stages >= 2) == (k_steps(schedule, gemm) >= 3), (name, schedule)
        check(schedule, gemm, TARGETS[target])


@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (4000, 4000, 4000), (257, 513, 129), (1000, 1000, 1024)])
@pytest.mark.parametrize("name", ["tuned", "auto"])
def test_gfx950_never_asks_for_dma_on_padded_tiles(name, shape):
    for dtype in ("bf16", "f8E4M3FN"):
        gemm = Gemm(*shape, dtype, "nt")
        schedule = get_pipeline(name).choose(gemm, TARGETS["gfx950"])
        assert schedule is not None and not (schedule.staging.direct_to_lds and not aligned(schedule, gemm))


@pytest.mark.parametrize("target, dtype", [("gfx942", "f8E4M3FNUZ"), ("gfx950", "f8E4M3FN")])
def test_fp8_operands_padded_across_k_are_left_to_iree(target, dtype):
    """B of NN (A of TN) padded along K and along N (M): 23-31 VGPRs spilled at every tile the sweep tried."""
    for layout in ("nn", "tn"):
        assert AUTO.choose(Gemm(1000, 1000, 1000, dtype, layout), TARGETS[target]) is None
    assert AUTO.choose(Gemm(1000, 1000, 1000, dtype, "nt"), TARGETS[target]) is not None  # both K-contiguous
    assert AUTO.choose(Gemm(1000, 1024, 1000, dtype, "nn"), TARGETS[target]) is not None  # B padded along K only


def test_tuned_on_tn_does_not_ask_for_a_swizzle_it_cannot_apply():
    for target in ("gfx942", "gfx950"):
        gemm = Gemm(4096, 4096, 4096, "bf16", "tn")
        schedule = TUNED.choose(gemm, TARGETS[target])
        assert schedule.tile.workgroup == (256, 256) and schedule.swizzle.lds in ("pad", "none")
        check(schedule, gemm, TARGETS[target])


@pytest.mark.parametrize("k, tuned", [(512, False), (768, False), (1024, True)])
def test_gfx950_fp8_tuned_needs_eight_k_steps_and_not_tn(k, tuned):
    gemm = Gemm(4096, 4096, k, "f8E4M3FN", "nt")
    assert (TUNED.choose(gemm, TARGETS["gfx950"]).tile.workgroup == (256, 256)) == tuned
    assert TUNED.choose(Gemm(4096, 4096, 4096, "f8E4M3FN", "tn"), TARGETS["gfx950"]).tile.workgroup != (256, 256)
