"""`check`'s LDS and register limits exactly at the boundary, on the target whose per-workgroup LDS (64 KiB) is
half of what its WGP holds (gfx1151, 128 KiB shared by the workgroups resident on it)."""

import pytest

from pipelines.targets import TARGETS
from transforms.problem import Gemm
from transforms.schedule import Schedule, ScheduleError, Staging, Swizzle, Tile, check, lds_plan_bytes

GEMM = Gemm(4096, 4096, 4096, "bf16", "nt")
WMMA = "WMMAR3_F32_16x16x16_BF16"


@pytest.mark.parametrize("tile, k, need", [
    ((128, 128), 64, 32768),
    ((128, 128), 128, 65536),    # 64 KiB exactly (unpadded rows)
    ((128, 128), 192, 98304),    # fits the WGP's 128 KiB, not one workgroup's 64
    ((256, 128), 128, 98304),
    ((256, 256), 128, 131072),   # the WGP's whole LDS
])
def test_gfx1151_workgroup_lds_is_64_kib(tile, k, need):
    schedule = Schedule(Tile(tile, k, (4, 2), WMMA), Staging(2), Swizzle("none"))
    assert lds_plan_bytes(schedule, GEMM) == need
    gfx1151 = TARGETS["gfx1151"]
    if need <= 65536:
        check(schedule, GEMM, gfx1151)
        return
    with pytest.raises(ScheduleError, match=f"needs {need} B of LDS; gfx1151 has 65536"):
        check(schedule, GEMM, gfx1151)


def test_padded_rows_tip_a_tile_over_the_limit():
    """128x128x128 bf16 in unpadded rows is exactly 64 KiB; padding its 256 rows by 8 B each does not fit."""
    base = Schedule(Tile((128, 128), 128, (4, 2), WMMA), Staging(2), Swizzle("none"))
    assert lds_plan_bytes(base, GEMM) == 65536
    padded = Schedule(base.tile, Staging(2), Swizzle("pad"))
    with pytest.raises(ScheduleError, match="needs 67584 B of LDS; gfx1151 has 65536"):
        check(padded, GEMM, TARGETS["gfx1151"])
