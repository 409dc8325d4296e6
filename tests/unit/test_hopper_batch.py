"""A batch of GEMMs on the Hopper kernels: the products' operands stacked by rows (A (B·M)×K, B (B·N)×K or
(B·K)×N, C (B·M)×N), each product a piece of the units of work as K's slices are, the program collapsing its rank-3
operands around the one dispatch. Checked in the PTX here; not yet run on a GPU."""

import re

import pytest

from pipelines.routes.hopper import fitted
from transforms import hopper
from transforms.hopper import DEFAULT, HopperError, HopperSchedule, check_ptx, grid_size, program, tensor_maps
from transforms.problem import Epilogue, Gemm

from test_hopper import _ptx


@pytest.mark.parametrize("layout, b_dims", [("nn", [128, 4 * 256]), ("nt", [256, 4 * 128])])
def test_the_maps_stack_the_products_rows(layout, b_dims):
    a, b = tensor_maps(Gemm(64, 128, 256, "f16", layout, batch=4), DEFAULT)
    assert a["dims"] == [256, 4 * 64] and a["stride"] == 256 * 2
    assert b["dims"] == b_dims and b["stride"] == b_dims[0] * 2


def test_every_product_is_units_of_work_in_the_grid():
    one = Gemm(4096, 4096, 128, "f16", "nn")
    # 16 x 32 tiles of 128x256 in clusters of two: 256 cluster tiles a product; 16 products take 4096 (63 rounds
    # of the 66 clusters), against 256 (4 rounds) for one
    assert grid_size(one, DEFAULT) == 2 * 64 and grid_size(one.with_(batch=16), DEFAULT) == 2 * 66
    per_tile = HopperSchedule(block_m=128, block_n=128)  # one tile a workgroup
    assert grid_size(Gemm(200, 100, 64, "bf16", "nt", batch=3), per_tile) == 3 * 2 * 1


def test_a_batch_is_not_split_along_k():
    with pytest.raises(HopperError, match="not split along K"):
        hopper.check_problem(Gemm(64, 256, 4096, "bf16", "nt", batch=2), HopperSchedule(split_k=2, persistent=True))
    hopper.check_problem(Gemm(64, 256, 200, "bf16", "nt", batch=2), DEFAULT)  # K past a K step is fine for nt


def test_the_program_collapses_its_rank_3_operands_around_the_dispatch():
    text = program(Gemm(64, 128, 256, "f16", "nn", batch=4, epilogue=Epilogue("truncf")), DEFAULT, function="mm")
    caller = text[text.index("func.func @mm"):]
    assert "(%a3: tensor<4x64x256xf16>, %b3: tensor<4x256x128xf16>) -> (tensor<4x64x128xf16>)" in caller
    assert re.search(r"tensor\.collapse_shape %a3 \[\[0, 1\], \[2\]\] : tensor<4x64x256xf16> into "
                     r"tensor<256x256xf16>", caller)
    assert re.search(r"tensor\.collapse_shape %b3 \[\[0, 1\], \[2\]\] : tensor<4x256x128xf16> into "
                     r"tensor<1024x128xf16>", caller)
    assert re.search(r"flow\.dispatch @hopper::@gemm\(%a, %b\) : \(tensor<256x256xf16>, tensor<1024x128xf16>\) -> "
                     r"\(tensor<256x128xf16>, tensor<\d+xi64>\)", caller)
    assert "output_shape [4, 64, 128] : tensor<256x128xf16> into tensor<4x64x128xf16>" in caller


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(64, 128, 256, "f16", "nn", batch=4, epilogue=Epilogue("truncf")), DEFAULT),
    (Gemm(200, 136, 200, "bf16", "nt", batch=3), HopperSchedule(block_n=128, persistent=True, cluster_m=2)),
    (Gemm(4096, 128, 4096, "f16", "nn", batch=16), fitted(Gemm(4096, 128, 4096, "f16", "nn", batch=16))),
])
def test_the_ptx_of_a_batch_shows_every_schedule_choice(tmp_path, gemm, schedule):
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    assert ".target sm_90a" in ptx


def test_the_rule_never_slices_a_batch_and_narrows_the_tile_to_n():
    for gemm in (Gemm(4096, 4096, 128, "f16", "nn", batch=16), Gemm(4096, 128, 4096, "f16", "nn", batch=16),
                 Gemm(16, 4096, 4096, "bf16", "nn", batch=2), Gemm(64, 128, 256, "f16", "nt", batch=4)):
        schedule = fitted(gemm)
        hopper.check_problem(gemm, schedule)
        assert schedule.split_k == 1
    assert fitted(Gemm(4096, 128, 4096, "f16", "nn", batch=16)).block_n == 128
    assert fitted(Gemm(4096, 4096, 128, "f16", "nn", batch=16)) == DEFAULT


@pytest.mark.parametrize("shape, takes", [("16x4096x4096x128", True), ("16x4096x128x4096", True),
                                          ("3x200x136x192", True), ("5x72x1000x64", False), ("4x128x120x64", False),
                                          ("4x127x128x64", False), ("4x128x128x64", True)])
def test_auto_takes_a_batch_of_products_of_at_least_128_rows_and_columns(tmp_path, shape, takes):
    """BATCH_AUTO, both sides of it: what run1 measured faster than IREE's default (136 rows and columns up) and
    slower (72 rows)."""
    from pipelines.cli import main

    assert main(["compile", "--target", "sm_90a", "--shape", shape, "--pipeline", "auto", "-o",
                 str(tmp_path / "auto")]) == 0
    assert ("hopper-cooperative" in (tmp_path / "auto" / "report.json").read_text()) is takes


def test_a_batch_of_nn_products_needs_whole_k_steps_on_both_sides_of_64():
    for k in (96, 200, 8):  # multiples of 8 (of 32 too, for 96) that leave a K step into the next product's rows
        with pytest.raises(HopperError, match="K a multiple of 64"):
            hopper.check_problem(Gemm(64, 128, k, "f16", "nn", batch=2), DEFAULT)
    for k in (64, 128, 4096):
        hopper.check_problem(Gemm(64, 128, k, "f16", "nn", batch=2), DEFAULT)


def test_a_skinny_batch_keeps_the_skinny_tile_of_one_product():
    """SKINNY_TILES (pipelines/routes/hopper.py): 64-row tiles of one consumer, 256 wide, clusters of two at
    M = 128; one product of the same shape gets the same tile (K short enough not to slice it)."""
    for m, cluster in ((16, 1), (64, 1), (128, 2)):
        schedule = fitted(Gemm(m, 4096, 256, "bf16", "nn", batch=4))
        assert (schedule.block_m, schedule.consumers, schedule.cluster_m, schedule.split_k) == (64, 1, cluster, 1)
        unbatched = fitted(Gemm(m, 4096, 256, "bf16", "nn"))
        assert (unbatched.block_m, unbatched.block_n, unbatched.cluster_m) == (64, schedule.block_n, cluster)
