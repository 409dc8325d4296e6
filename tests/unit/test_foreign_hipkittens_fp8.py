"""HipKittens' two MI350X fp8 GEMMs (8 waves and 4 waves a workgroup) as foreign kernels.

The kernels under tests/data/hipkittens/gfx950_fp8_* were compiled by `tools/hipkittens_kernels.py --kernel
fp8-8wave|fp8-4wave` from `kernels/gemm/fp8fp32/` of HazyResearch/HipKittens with Debian clang 22. What is checked
comes from outside the tool: C against float64 of the same e4m3 inputs, the MFMA work against M·N·K, the verdict
FAIL only for the hazards of HipKittens' inline assembly, the kernarg loads read again from the listing, the tile
orders written out from the kernels' own index arithmetic by hand for small grids, and bad shapes refused in one
sentence. The model's figures for them are in results/hipkittens/fp8-2026-11-27.md (predicted there, not in the tests).
"""

import json
import re
from pathlib import Path

import pytest

from pipelines.emulator import emulate_gemm
from tools import hipkittens_kernels  # the repository root is on sys.path (conftest.py)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "hipkittens"
SMALL = DATA / "gfx950_fp8_nt_8wave_512"
EIGHT = DATA / "gfx950_fp8_nt_8wave_8192"
FOUR = DATA / "gfx950_fp8_nt_4wave_8192"


def launch(folder: Path) -> dict:
    return json.loads((folder / "hipkittens.json").read_text())


@pytest.fixture(scope="module")
def small_result():
    return emulate_gemm(SMALL)


def test_the_committed_kernels_are_the_published_sources():
    for folder, source, threads, defines in (
            (SMALL, "FP8_8wave/8_wave.cu", 512, {"M": 512, "N": 512, "K": 512}),
            (EIGHT, "FP8_8wave/8_wave.cu", 512, {"M": 8192, "N": 8192, "K": 8192}),
            (FOUR, "FP8_4wave/4_wave.cu", 256, {"SIZE": 8192})):
        described = launch(folder)
        assert described["hipkittens"]["source"] == f"kernels/gemm/fp8fp32/{source}"
        assert described["hipkittens"]["defines"] == defines
        assert described["workgroup_size"] == [threads, 1, 1] and described["shared_bytes"] == 0
        p = described["problem"]
        assert (p["dtype"], p["out_dtype"], p["layout"]) == ("f8E4M3FN", "bf16", "nt")
        assert described["grid"] == [(p["m"] // 256) * (p["n"] // 256), 1, 1]
        listing = (folder / "kernel.amdgcn").read_text()
        assert re.search(r"\.amdhsa_group_segment_fixed_size 131072\b", listing)  # As[2][2], Bs[2][2]: 128 KiB static
        assert set(re.findall(r"v_mfma\w*", listing)) == {"v_mfma_f32_16x16x128_f8f6f4"}


def test_the_8_wave_kernel_matches_float64_and_does_all_the_work_once(small_result):
    result = small_result
    assert result.wrong == 0 and result.unwritten == 0, result.summary()
    assert result.max_rel_error <= result.tolerance
    assert result.workgroups == 4 and result.output.shape == (512, 512)
    work = sum(count * int(m) * int(n) * int(k) for op, count in result.mix.items()
               for m, n, k in re.findall(r"v_mfma_f32_(\d+)x(\d+)x(\d+)", op))
    assert work == 512 ** 3


def test_its_hazards_are_hipkittens_inline_assembly_and_early_reads(small_result):
    assert not small_result.passed and small_result.hazards
    for hazard in small_result.hazards:
        if hazard.kind == "lds-race":
            assert "offen lds'" in hazard.message and "ds_read_b128" in hazard.message, hazard.message
        else:
            assert hazard.kind == "wait-states", hazard.message
            assert re.search(r"'v_mfma_.*' .* then 'ds_read_b128 ", hazard.message) or re.search(
                r"'s_mov_b32 m0, s\d+' .* then 'buffer_load_dwordx4 .* lds'", hazard.message), hazard.message


@pytest.mark.slow
def test_the_4_wave_kernel_matches_float64_on_a_sampled_workgroup():
    """8192³ (4-wave kernels exist for SIZE ≥ 4096 only; smaller SIZEs launch other kernels or break its XCD
    dealing), one workgroup drawn at random."""
    result = emulate_gemm(FOUR, workgroups=1)
    assert result.wrong == 0 and result.max_rel_error <= result.tolerance, result.summary()
    assert "1 sampled of 1024 workgroups" in result.summary()


def test_the_tool_describes_the_committed_arguments_without_clang():
    hk = hipkittens_kernels
    for folder in (SMALL, EIGHT, FOUR):
        described = launch(folder)
        p = described["problem"]
        listing = (folder / "kernel.amdgcn").read_text()
        assert hk.fp8_arguments(listing, p["m"], p["n"], p["k"]) == described["arguments"]
        # the listing's own scalar loads from the kernarg pointer: the three gl pointers at 0, 16 and 32, and the
        # 4-wave kernel's gridDim.x (hidden_block_count_x, after the 48 bytes of arguments)
        pattern = r"s_load_dword\w*\s+s\[?[\d:]+\]?,\s*s\[0:1\],\s*(0x[0-9a-f]+|\d+)"
        loads = sorted({int(o, 0) for o in re.findall(pattern, listing)})
        assert loads[:3] == [0, 16, 32] and all(o >= 48 for o in loads[3:])
        assert [o for o, _ in described["kernarg_loads"]] == loads


def test_the_tile_orders_by_hand():
    hk = hipkittens_kernels
    # 8 waves: row-major over a 2×2 grid of 256-wide tiles
    assert hk.fp8_tile_order(hk.BUILDS["fp8-8wave"], 512, 512) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # 4 waves at 4096² (16×16 tiles, 256 ids): id 1 goes to XCD 1, whose ids start at 256 / 8 = 32, so wgid 32;
    # groups of WGM = 4 rows × 16 columns = 64 ids: 32 is in group 0, row 32 % 4 = 0, column 32 // 4 = 8
    order = hk.fp8_tile_order(hk.BUILDS["fp8-4wave"], 4096, 4096)
    assert order[0] == (0, 0) and order[1] == (0, 8) and order[8] == (1, 0)
    assert sorted(order) == [(i, j) for i in range(16) for j in range(16)]
    for folder, name in ((EIGHT, "fp8-8wave"), (FOUR, "fp8-4wave")):
        p = launch(folder)["problem"]
        assert [tuple(t) for t in launch(folder)["order"]] == hk.fp8_tile_order(hk.BUILDS[name], p["m"], p["n"])


@pytest.mark.parametrize("kernel, shape, message", [
    ("fp8-4wave", "512", "multiple of 8 tiles"),  # grid 4: the XCD dealing sends every id to tile 0
    ("fp8-4wave", "2048", "other than 1024 and 2048"),
    ("fp8-4wave", "4096x4096x8192", "M = N = K"),
    ("fp8-8wave", "512x512x256", "at least 384"),
])
def test_the_tool_refuses_shapes_the_fp8_sources_do_not_handle(capsys, tmp_path, kernel, shape, message):
    assert hipkittens_kernels.main(["--kernel", kernel, "--shape", shape, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.startswith("hipkittens_kernels.py: error: ") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_the_dispatch_packet_states_the_grid_in_work_items():
    """hsa_kernel_dispatch_packet_t (HSA runtime specification): header, setup (dimensions), workgroup size x/y/z
    (16 bits each), reserved, grid size x/y/z in work-items (32 bits each), private and group segment sizes,
    kernel object, kernarg address, reserved, completion signal."""
    import struct

    from pipelines.emulator.foreign import dispatch_packet
    packet = dispatch_packet((256, 1, 1), (4, 2, 1), 131072, 0x1000)
    assert len(packet) == 64
    header, setup, wx, wy, wz, _, gx, gy, gz, private, group, kernel, kernarg, _, signal = struct.unpack(
        "<HHHHHHIIIIIQQQQ", packet)
    assert (setup, wx, wy, wz) == (2, 256, 1, 1)
    assert (gx, gy, gz) == (1024, 2, 1)  # work-items: 4 × 256 and 2 × 1
    assert (private, group, kernel, kernarg, signal) == (0, 131072, 0, 0x1000, 0)


def test_the_fp8_kernels_move_one_byte_per_input_element():
    """The model's DRAM floor for a foreign kernel: A and B once in their own type (e4m3: 1 byte), C once (bf16)."""
    from pipelines.emulator.foreign import load_foreign
    foreign = load_foreign(EIGHT)
    assert foreign.hbm_bytes() == 2 * 8192 * 8192 * 1 + 8192 * 8192 * 2


def test_the_fp8_symbol_mangles_the_template_arguments_in_order():
    """matmul_device<M, N, K>: Itanium mangling lists template arguments in declaration order."""
    assert hipkittens_kernels.fp8_symbol(512, 1024, 2048).startswith("_Z13matmul_deviceILi512ELi1024ELi2048EE")


def test_the_128_wide_builds_take_shapes_of_128s(tmp_path, capsys):
    """kernel_1024.cpp and kernel_2048.cpp tile by 128: 1152 is a whole number of their tiles, so the tool goes on
    to look for its toolchain (the compiler named missing here; the HipKittens sources may be missing too, as on a
    clean checkout) rather than refusing the shape; the 256-wide build refuses it."""
    hk = hipkittens_kernels
    missing = str(tmp_path / "no-clang")
    assert hk.main(["--kernel", "bf16-1024", "--shape", "1152", "--clang", missing, "-o", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "tile" not in err
    assert hk.main(["--kernel", "bf16", "--shape", "1152", "--clang", missing, "-o", str(tmp_path / "b")]) == 2
    assert "256-wide tile" in capsys.readouterr().err
