"""HipKittens' MI355X bf16 GEMMs of every published size (1024, 2048, 4096, 8192, 16384) as foreign kernels.

Each published figure of `analysis/bf16_gemm/mi350x/mi355x_bf16_gemm.json` comes from its own source
(`kernel_<size>.cpp`: 128-wide tiles at 1024 and 2048, 256-wide above; chiplet chunks and group rows differ);
`tools/hipkittens_kernels.py --kernel bf16|bf16-16384|bf16-2048|bf16-1024` builds each, and the folders under
tests/data/hipkittens/gfx950_bf16_nt_<size> are the results. Checked from outside the tool: C of the 1024³ kernel
against float64, its MFMA work against M·N·K, its verdict FAIL only for inline-assembly wait states, and tile
orders worked out by hand from the sources' index arithmetic. The model's figures: results/hipkittens/
bf16-sizes-2026-11-27.md.
"""

import json
import re
from pathlib import Path

import pytest

from pipelines.emulator import emulate_gemm
from tools import hipkittens_kernels  # the repository root is on sys.path (conftest.py)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "hipkittens"
SIZES = {1024: "bf16-1024", 2048: "bf16-2048", 4096: "bf16", 8192: "bf16", 16384: "bf16-16384"}


def launch(size: int) -> dict:
    return json.loads((DATA / f"gfx950_bf16_nt_{size}" / "hipkittens.json").read_text())


@pytest.mark.parametrize("size", sorted(SIZES))
def test_each_size_is_its_published_source_with_its_own_tile_order(size):
    hk = hipkittens_kernels
    build = hk.BUILDS[SIZES[size]]
    described = launch(size)
    block = 128 if size <= 2048 else 256
    assert described["hipkittens"]["defines"] == {"M": size, "N": size, "K": size}
    assert described["hipkittens"]["source"] == build.source
    assert build.source.endswith(f"kernel_{size}.cpp") or size == 4096  # 4096's figure: kernel_8192.cpp's source
    assert described["tile"] == [block, block] and described["grid"] == [(size // block) ** 2, 1, 1]
    order = [tuple(t) for t in described["order"]]
    assert order == hk.tile_order(size, size, build.block, build.chunk, build.wgm)
    assert sorted(order) == [(i, j) for i in range(size // block) for j in range(size // block)]


def test_the_1024_order_by_hand():
    """kernel_1024.cpp: 8×8 tiles of 128, chiplet_transform_chunked with 8 XCDs and chunks of WGM² = 4 (one span
    of 32 ids), then groups of WGM = 2 rows. Id 1 (XCD 1, local 0) becomes 0·32 + 1·4 + 0 = 4: group 0, row 4 % 2
    = 0, column 4 // 2 = 2. Id 8 (XCD 0, local 1) becomes 1: row 1, column 0."""
    hk = hipkittens_kernels
    build = hk.BUILDS["bf16-1024"]
    order = hk.tile_order(1024, 1024, build.block, build.chunk, build.wgm)
    assert order[0] == (0, 0) and order[1] == (0, 2) and order[8] == (1, 0)


def test_the_1024_kernel_matches_float64_and_does_all_the_work_once():
    result = emulate_gemm(DATA / "gfx950_bf16_nt_1024")
    assert result.wrong == 0 and result.unwritten == 0 and result.max_rel_error <= result.tolerance, \
        result.summary()
    work = sum(count * int(m) * int(n) * int(k) for op, count in result.mix.items()
               for m, n, k in re.findall(r"v_mfma_f32_(\d+)x(\d+)x(\d+)", op))
    assert work == 1024 ** 3
    # FAIL only where an MFMA's registers are overwritten by HipKittens' inline-assembly ds_read_b128
    assert not result.passed and result.hazards
    assert all(h.kind == "wait-states" and re.search(r"'v_mfma_.*' .* then 'ds_read_b128 ", h.message)
               for h in result.hazards)


def test_the_kernel_builds_a_generic_lds_pointer_from_the_shared_aperture():
    """The 128-wide kernels read src_shared_base (their shared allocator's generic pointer) and keep only its low
    32 bits as LDS offsets; the emulator gives the aperture amdkfd programs (1 << 48) and the offsets come out
    right (the float64 match above)."""
    listing = (DATA / "gfx950_bf16_nt_1024" / "kernel.amdgcn").read_text()
    assert "s_mov_b64 s[4:5], src_shared_base" in listing
    assert not re.search(r"^\s+flat_", listing, re.M)  # no flat access goes through the aperture
