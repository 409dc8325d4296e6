"""Occupancy and spills read from kernel metadata, exactly at the VGPR allocation granule boundaries.

Waves per SIMD = min(max waves, VGPR file per lane // (allocated VGPRs rounded up to the granule)), and LDS
limits it further. The granules and files are LLVM's (llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp,
getVGPRAllocGranule and getTotalNumVGPRs): gfx90a-class targets (gfx942, gfx950: FeatureGFX90AInsts) allocate
in granules of 8 from a unified 512-entry VGPR+AGPR file; gfx1151 (Feature1_5xVGPRs, like gfx1100) allocates in
granules of 24 from 1536 in wave32, with at most 16 waves per SIMD. The ISA does not print occupancy, so
`inspect` computes it from the descriptor's `.amdhsa_next_free_vgpr` (VGPRs and AGPRs together on gfx90a+).
"""

from pathlib import Path

import pytest

from pipelines.inspect import KernelStats, amdgpu_stats, occupancy
from pipelines.targets import TARGETS


def rocmasm(next_free_vgpr: int, vgprs: int, agprs: int, lds: int = 0, threads: int = 256, wave: int = 64,
            vgpr_spills: int = 0, sgpr_spills: int = 0) -> str:
    """The parts of an LLVM AMDGPU listing that `amdgpu_stats` reads for resources."""
    return f"""\t.text
k:
\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]
\ts_endpgm
.Lfunc_end0:
\t.amdhsa_kernel k
\t\t.amdhsa_group_segment_fixed_size {lds}
\t\t.amdhsa_next_free_vgpr {next_free_vgpr}
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     {agprs}
    .group_segment_fixed_size: {lds}
    .max_flat_workgroup_size: {threads}
    .name:           k
    .sgpr_count:     40
    .sgpr_spill_count: {sgpr_spills}
    .vgpr_count:     {vgprs}
    .vgpr_spill_count: {vgpr_spills}
    .wavefront_size: {wave}
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""


def stats_of(target: str, text: str) -> KernelStats:
    return amdgpu_stats("module_gemm_dispatch_0", Path("k.rocmasm"), text, TARGETS[target])


@pytest.mark.parametrize("allocated, waves", [
    (64, 8), (65, 7), (72, 7), (73, 6), (80, 6), (81, 5), (128, 4), (129, 3), (168, 3), (170, 2), (256, 2),
    (257, 1), (512, 1),
])
@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_cdna_occupancy_at_granule_8_boundaries(target, allocated, waves):
    assert stats_of(target, rocmasm(allocated, allocated, 0)).occupancy == waves


@pytest.mark.parametrize("allocated, waves", [
    (48, 16), (96, 16), (97, 12), (120, 12), (121, 10), (144, 10), (145, 9), (192, 8), (193, 7), (256, 5),
])
def test_gfx1151_occupancy_at_granule_24_boundaries(allocated, waves):
    assert stats_of("gfx1151", rocmasm(allocated, allocated, 0, wave=32)).occupancy == waves


def test_unified_file_counts_agprs():
    """gfx942: 40 VGPRs + 33 AGPRs allocate 73 of the unified file (`next_free_vgpr`), not `vgpr_count`'s 40."""
    stats = stats_of("gfx942", rocmasm(73, 40, 33))
    assert (stats.vgpr_count, stats.agpr_count, stats.allocated_vgprs, stats.occupancy) == (40, 33, 73, 6)


@pytest.mark.parametrize("target, lds, threads, waves", [
    ("gfx942", 65536, 256, 1),     # one workgroup of 4 waves per CU, over 4 SIMDs
    ("gfx942", 32768, 256, 2),
    ("gfx942", 32769, 256, 1),
    ("gfx1151", 65536, 256, 4),    # 128 KiB per WGP: two workgroups of 8 wave32 waves over 4 SIMDs
    ("gfx1151", 65537, 256, 2),
    ("gfx950", 81920, 512, 4),     # 160 KiB: two workgroups of 8 waves
    ("gfx942", 32768, 96, 1),      # 96 threads are 2 waves (the last one partial): 2 workgroups x 2 waves / 4
    ("gfx942", 65536, 64, 1),      # one 1-wave workgroup per CU: its SIMD holds 1 wave (the others none), not 0
    ("gfx942", 32768, 64, 1),      # two 1-wave workgroups on two SIMDs
    ("gfx942", 8192, 64, 2),       # eight 1-wave workgroups over 4 SIMDs
    ("gfx942", 8192, 128, 4),      # eight 2-wave workgroups: 16 waves over 4 SIMDs
    ("gfx942", 10923, 64, 2),      # five 1-wave workgroups: the busiest SIMD holds 2
])
def test_lds_limits_occupancy_per_cu(target, lds, threads, waves):
    wave = TARGETS[target].wave_size
    assert stats_of(target, rocmasm(32, 32, 0, lds=lds, threads=threads, wave=wave)).occupancy == waves


@pytest.mark.parametrize("vgpr_spills, sgpr_spills", [(1, 0), (0, 1), (2, 3)])
def test_spills_of_either_file_are_counted(vgpr_spills, sgpr_spills):
    stats = stats_of("gfx942", rocmasm(128, 128, 0, vgpr_spills=vgpr_spills, sgpr_spills=sgpr_spills))
    assert stats.spill_count == vgpr_spills + sgpr_spills


def test_occupancy_without_resources_is_unknown():
    assert occupancy(KernelStats("d", "f", workgroup_size=256, wave_size=64), TARGETS["gfx942"]) is None


def test_direct_to_lds_loads_are_not_counted_as_register_loads():
    text = rocmasm(64, 64, 0).replace("\ts_endpgm\n", "\tbuffer_load_dwordx4 v1, s[0:3], 0 offen lds\n"
                                                     "\tglobal_load_lds_dwordx4 v[2:3], off\n"
                                                     "\tglobal_load_dwordx4 v[4:7], v[8:9], off\n"
                                                     "\tds_read_b128 v[4:7], v1\n\ts_endpgm\n")
    stats = stats_of("gfx950", text)
    assert (stats.dma_loads, stats.global_loads, stats.lds_reads) == (2, 1, 1)
