"""The fallback checks at their boundaries, on kernel statistics written by hand (no compile): one spilled
register fails, one instruction of a second MMA opcode fails, and the kernel that is exactly as planned passes.

`verify_dispatch` reads the configured contraction too; here it is a synthetic `linalg.matmul` that carries
exactly the compilation_info the schedule asks for and the tuning spec's marker, so only the statistics differ.
"""

import dataclasses

import pytest
from iree.compiler import ir

from pipelines.inspect import KernelStats
from pipelines.targets import TARGETS
from pipelines.verify import FallbackError, verify_dispatch, verify_lanes
from transforms.config import compilation_info
from transforms.problem import Gemm, contraction_ops, parse_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile, lds_plan_bytes, workgroup_size
from transforms.tuning_spec import APPLIED_MARKER

GFX942 = TARGETS["gfx942"]
GEMM = Gemm(256, 256, 256, "bf16", "nn")
SCHEDULE = Schedule(Tile((128, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), Staging(1), Swizzle("pad"))
OPCODE = "v_mfma_f32_16x16x16_bf16"


def planned_stats(**changes) -> KernelStats:
    """What the compiled kernel of SCHEDULE shows when every choice took effect."""
    stats = KernelStats("module_gemm_dispatch_0", "gemm.rocmasm", mma={OPCODE: 64},
                        lds_bytes=lds_plan_bytes(SCHEDULE, GEMM), vgpr_count=128, agpr_count=0, sgpr_count=40,
                        allocated_vgprs=128, spill_count=0, wave_size=64,
                        workgroup_size=workgroup_size(SCHEDULE, 64), occupancy=4)
    return dataclasses.replace(stats, **changes)


@pytest.fixture
def configured(tmp_path):
    """(contraction op, compilation_info, dump folder): the op carries the info and the marker."""
    with ir.Context(), ir.Location.unknown():
        info = compilation_info(SCHEDULE, GEMM, GFX942)
        lowering, translation = info.lowering_config, info.translation_info
        text = f"""
        func.func @gemm_dispatch_0_matmul(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>,
                                          %c: tensor<256x256xf32>) -> tensor<256x256xf32>
            attributes {{translation_info = {translation}}} {{
          %0 = linalg.matmul {{lowering_config = {lowering}, {APPLIED_MARKER}}}
               ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%c : tensor<256x256xf32>)
               -> tensor<256x256xf32>
          return %0 : tensor<256x256xf32>
        }}"""
        module = parse_module(text, "synthetic")
        op, = contraction_ops(module)
        (tmp_path / "pass_ir.mlir").write_text("")  # no prefetch pass ran: prefetch 1 expects none
        yield op, info, tmp_path
        del module


def verify(configured, stats: KernelStats, schedule: Schedule = SCHEDULE) -> None:
    op, info, dump = configured
    verify_dispatch(stats.dispatch, op, dump, stats, schedule, GEMM, info, GFX942, evidence=True)


def test_kernel_as_planned_verifies(configured):
    verify(configured, planned_stats())


@pytest.mark.parametrize("spills", [1, 64, 128])
def test_one_spilled_register_fails(configured, spills):
    with pytest.raises(FallbackError, match=f"register budget did not take effect: the kernel spills {spills} "
                                            "registers at 128 VGPRs"):
        verify(configured, planned_stats(spill_count=spills))


def test_second_mma_opcode_fails(configured):
    stats = planned_stats(mma={OPCODE: 64, "v_mfma_f32_32x32x8_bf16": 1})
    with pytest.raises(FallbackError, match=f"expected only {OPCODE}, found 64× {OPCODE}, 1× v_mfma_f32_32x32x8_bf16"):
        verify(configured, stats)


def test_no_mma_at_all_fails(configured):
    with pytest.raises(FallbackError, match="found no MMA instructions"):
        verify(configured, planned_stats(mma={}))


@pytest.mark.parametrize("change, choice", [
    ({"workgroup_size": 512}, "workgroup size 256"),
    ({"lds_bytes": lds_plan_bytes(SCHEDULE, GEMM) + 8}, "LDS layout 'pad'"),
    ({"lds_bytes": lds_plan_bytes(SCHEDULE, GEMM) - 8}, "LDS layout 'pad'"),
])
def test_statistic_off_by_a_little_fails(configured, change, choice):
    with pytest.raises(FallbackError, match=f"requested {choice} did not take effect"):
        verify(configured, planned_stats(**change))


@pytest.mark.parametrize("occupancy, ok", [(1, False), (2, True), (3, True)])
def test_waves_per_eu_at_the_boundary(configured, occupancy, ok):
    asked = dataclasses.replace(SCHEDULE, warp_groups=dataclasses.replace(SCHEDULE.warp_groups, waves_per_eu=2))
    # the synthetic op carries SCHEDULE's compilation_info, so only the waves-per-EU check sees `asked`
    if ok:
        verify(configured, planned_stats(occupancy=occupancy), asked)
    else:
        with pytest.raises(FallbackError, match=f"waves per EU 2 did not take effect: registers and LDS allow "
                                                f"{occupancy} waves per SIMD"):
            verify(configured, planned_stats(occupancy=occupancy), asked)


# ---------------------------------------------------------------------------------------------------- lane route

LANES = Schedule(Tile((128, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), Staging(1), Swizzle("none"))


def lane_stats(**changes) -> KernelStats:
    stats = KernelStats("module_gemm_dispatch_0", "gemm.rocmasm", mma={OPCODE: 32}, lds_bytes=0, vgpr_count=96,
                        spill_count=0, wave_size=64, workgroup_size=256)
    return dataclasses.replace(stats, **changes)


def test_lane_route_as_planned_verifies():
    verify_lanes("d", lane_stats(), LANES, GEMM, GFX942)


@pytest.mark.parametrize("change, message", [
    ({"spill_count": 1}, "spills 1 registers"),
    ({"mma": {OPCODE: 32, "v_mfma_f32_32x32x8_bf16": 1}}, "expected only v_mfma_f32_16x16x16_bf16"),
    ({"lds_bytes": 4}, "allocates 4 B of LDS"),
    ({"lds_reads": 1}, "issues 1 LDS reads"),
    ({"wave_size": 32}, "in waves of 32"),
])
def test_lane_route_rejects_a_single_deviation(change, message):
    with pytest.raises(FallbackError, match=message):
        verify_lanes("d", lane_stats(**change), LANES, GEMM, GFX942)
