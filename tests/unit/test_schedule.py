"""Schedule validation: each rule rejects with one sentence naming the value and the limit."""

import pytest

from pipelines.targets import TARGETS
from transforms.problem import Gemm, ProblemError
from transforms.schedule import (Schedule, ScheduleError, Staging, Swizzle, Tile, WarpGroups, check,
                                 lds_plan_bytes, subgroup_tiles)

SQUARE = Gemm(4096, 4096, 4096, "bf16", "nn")
GOOD = Schedule(Tile((256, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16"))


def test_good_schedule_passes_and_derives_iree_units():
    check(GOOD, SQUARE, TARGETS["gfx942"])
    assert subgroup_tiles(GOOD) == (8, 4)


def test_lds_plan_counts_padding_and_dma_stages():
    # 256x32 A rows and 32x128 B rows of bf16, each row padded by 8 B.
    assert lds_plan_bytes(GOOD, SQUARE) == (256 * 32 + 32 * 128) * 2 + (256 + 32) * 8
    dma = Schedule(Tile((256, 256), 64, (2, 4), "MFMA_F32_16x16x32_BF16"), Staging(2, True), Swizzle("xor"))
    assert lds_plan_bytes(dma, SQUARE) == 2 * (256 * 64 + 64 * 256) * 2


@pytest.mark.parametrize("schedule, target, message", [
    (Schedule(Tile((256, 256), 128, (2, 4), "MFMA_F32_16x16x16_BF16")), "gfx942",
     "tile 256x256x128 bf16 needs 134144 B of LDS; gfx942 has 65536"),
    (Schedule(Tile((256, 128), 32, (2, 2), "MFMA_F32_16x16x32_BF16")), "gfx942",
     "gfx942 has no MMA intrinsic MFMA_F32_16x16x32_BF16"),
    (Schedule(Tile((256, 128), 32, (2, 2), "MFMA_F32_16x16x16_F16")), "gfx942", "multiplies f16, but the problem"),
    (Schedule(Tile((256, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), warp_groups=WarpGroups(512)), "gfx942",
     "workgroup size 512 does not match the 2x2 wave grid, which needs 256 threads at wave size 64"),
    (Schedule(Tile((128, 64), 32, (4, 2), "WMMAR3_F32_16x16x16_BF16"), warp_groups=WarpGroups(512)), "gfx1151",
     "needs 256 threads at wave size 32"),
    (Schedule(Tile((100, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16")), "gfx942",
     "workgroup tile M=100 is not a multiple of 2 waves"),
    (Schedule(Tile((256, 128), 24, (2, 2), "MFMA_F32_16x16x16_BF16")), "gfx942", "K tile 24 is not a multiple"),
    (Schedule(GOOD.tile, Staging(4)), "gfx942", "prefetch stages 4 is outside 0..3"),
    (Schedule(GOOD.tile, Staging(2, True), Swizzle("none")), "gfx942", "not available on gfx942"),
    (Schedule(GOOD.tile, swizzle=Swizzle("pad", "xcd")), "gfx1151", "gfx1151 has no MMA intrinsic"),
    (Schedule(Tile((128, 64), 32, (4, 2), "WMMAR3_F32_16x16x16_BF16"), swizzle=Swizzle("pad", "xcd")), "gfx1151",
     "needs several XCDs; gfx1151 has 1"),
    (Schedule(GOOD.tile, warp_groups=WarpGroups(waves_per_eu=9)), "gfx942", "waves per EU 9 is outside 1..8"),
    (Schedule(Tile((128, 128), 64, (2, 2), "NV_MMA_SYNC_F32_16x8x16_BF16"), Staging(2)), "sm_89",
     "prefetch stages 2 would be ignored on sm_89"),
    # one wave holds a 256x256 f32 accumulator: 1024 registers per lane, + 64 for one 16-deep K slice of A and B
    (Schedule(Tile((256, 256), 32, (1, 1), "MFMA_F32_16x16x16_BF16"), Staging(0)), "gfx942",
     "each lane needs 1088 registers for its accumulator and one K step of operands; gfx942 has 512"),
    (GOOD, "cpu", "GPU schedules do not apply"),
])
def test_rejections_name_value_and_limit(schedule, target, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check(schedule, SQUARE, TARGETS[target])


def test_tile_larger_than_problem():
    with pytest.raises(ScheduleError, match="tile M=256 exceeds the problem's M=16"):
        check(GOOD, Gemm(16, 4096, 4096), TARGETS["gfx942"])


def test_swizzle_needs_a_k_contiguous_operand():
    with pytest.raises(ScheduleError, match="layout tn stores neither operand with K contiguous"):
        check(Schedule(GOOD.tile, swizzle=Swizzle("xor")), SQUARE.with_(layout="tn"), TARGETS["gfx942"])


def test_batch_rejects_xcd_order():
    with pytest.raises(ScheduleError, match="not batch matmuls"):
        check(Schedule(GOOD.tile, swizzle=Swizzle("pad", "xcd")), SQUARE.with_(batch=2), TARGETS["gfx942"])


@pytest.mark.parametrize("sizes, message", [((0, 1, 1), "M=0"), ((4, -2, 4), "N=-2"), ((4, 4, 4, 0), "BATCH=0")])
def test_problem_sizes_must_be_positive(sizes, message):
    m, n, k, *batch = sizes
    with pytest.raises(ProblemError, match=message):
        Gemm(m, n, k, batch=batch[0] if batch else None)


def test_xcd_order_needs_two_workgroups_per_grid_dimension():
    """IREE's conditional_transpose fails on a grid with a unit dimension (it folds it away); `tuned` falls back
    to row order there (256³ with its 256x256 tile used to fail to compile), explicit flags get one sentence."""
    from pipelines.named import get_pipeline
    xcd = Schedule(Tile((256, 256), 32, (2, 4), "MFMA_F32_16x16x16_BF16"), Staging(2), Swizzle("xor", "xcd"),
                   WarpGroups())
    with pytest.raises(ScheduleError, match="256x512x256 with tile 256x256 gives a 1x2 grid; use --order row"):
        check(xcd, Gemm(256, 512, 256, "bf16", "nn"), TARGETS["gfx942"])
    check(xcd, Gemm(512, 512, 256, "bf16", "nn"), TARGETS["gfx942"])
    tuned = get_pipeline("tuned").choose(Gemm(256, 256, 256, "bf16", "nn"), TARGETS["gfx942"])
    assert tuned.swizzle.workgroup_order == "row"


def test_tile_just_larger_than_the_problem_is_refused():
    with pytest.raises(ScheduleError, match="tile M=256 exceeds the problem's M=200"):
        check(GOOD, Gemm(200, 4096, 4096), TARGETS["gfx942"])


def test_workgroup_of_exactly_the_thread_limit_passes():
    target = TARGETS["gfx942"]
    widest = Schedule(Tile((256, 256), 32, (4, 4), "MFMA_F32_16x16x16_BF16"))
    assert 16 * target.wave_size == target.max_workgroup_threads
    check(widest, SQUARE, target)


def test_accumulator_just_over_the_register_file_is_refused():
    # one wave holds a 256x128 f32 accumulator: 512 registers per lane, plus the K step's operands
    with pytest.raises(ScheduleError, match="registers for its accumulator"):
        check(Schedule(Tile((256, 128), 16, (1, 1), "MFMA_F32_16x16x16_BF16"), Staging(0)), SQUARE,
              TARGETS["gfx942"])
