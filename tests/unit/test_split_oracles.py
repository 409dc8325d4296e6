"""Split-K's rule and slice check against their definitions, at both sides of every boundary, and the split program
against float64.

- The rule (`split_plan`'s docstring): split where the data-parallel grid of 128x128 tiles gives each compute unit
  fewer than DATA_PARALLEL_WAVES workgroups. Shapes are built to have a chosen number of tiles (one or two rows of
  tiles, N a multiple of 128), 2 x CUs - 1, 2 x CUs and 2 x CUs + 1, on every GPU target and on stand-in targets
  of any number of compute units.
- The slice check (`check_split`) accepts exactly the plans whose kernel takes the slices: a tile kernel where K
  is S slices of a whole number of its K steps (M and N are zero-padded to whole tiles, K is not); the streaming
  kernel where N is a whole number of its columns and K S slices of whole steps, M at most 128 / its columns per
  thread, B not stored NxK. The oracle builds the sizes it accepts (products of whole numbers) rather than
  dividing.
- The program `build_split_module` writes computes A·B: interpreted in float64 (the emulator's reference
  interpreter) on non-square shapes in each layout, against numpy.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pipelines.named import DATA_PARALLEL_TILE, DATA_PARALLEL_WAVES, split_plan
from pipelines.targets import TARGETS
from transforms.problem import Gemm
from transforms.schedule import Schedule, Staging, Swizzle, Tile
from transforms.split_k import SplitError, SplitK, Streaming, check_split

GPUS = [t for t in TARGETS.values() if t.gpu]
K = 8192


def gemm_with_tiles(m: int, tiles: int) -> Gemm:
    """A K = 8192 bf16 GEMM of M rows whose 128x128 grid has `tiles` tiles (M a whole number of rows of tiles)."""
    rows = -(-m // DATA_PARALLEL_TILE[0])
    assert tiles % rows == 0
    return Gemm(m, DATA_PARALLEL_TILE[1] * (tiles // rows), K, "bf16", "nn")


def boundary_cases(units: int):
    """(M, tiles) around DATA_PARALLEL_WAVES workgroups per compute unit: one row of tiles at M = 64 and 128, two at
    M = 256 (an even number of tiles there)."""
    edge = DATA_PARALLEL_WAVES * units
    for m in (64, 128):
        for tiles in (edge - 1, edge, edge + 1):
            yield m, tiles
    for tiles in (edge - 2, edge, edge + 2):
        yield 256, tiles


@pytest.mark.parametrize("target", GPUS, ids=lambda t: t.name)
def test_the_rule_splits_exactly_below_two_workgroups_per_compute_unit(target):
    for m, tiles in boundary_cases(target.compute_units):
        gemm = gemm_with_tiles(m, tiles)
        split, why = split_plan(gemm, target)
        idle = tiles < DATA_PARALLEL_WAVES * target.compute_units
        assert (split is not None) == idle, (gemm.shape_name, tiles, why)
        if split is not None:
            check_split(gemm, split)  # the plan the rule gives is one the slice check takes
            assert split.splits >= 2 and gemm.k % split.splits == 0


@settings(max_examples=40, deadline=None)
@given(units=st.integers(1, 400), base=st.sampled_from(GPUS), pick=st.integers(0, 8))
def test_the_boundary_follows_the_compute_units(units, base, pick):
    target = dataclasses.replace(base, compute_units=units)
    cases = [c for c in boundary_cases(units) if c[1] >= 1]
    m, tiles = cases[pick % len(cases)]
    split, why = split_plan(gemm_with_tiles(m, tiles), target)
    assert (split is not None) == (tiles < DATA_PARALLEL_WAVES * units), (m, tiles, units, why)


# ------------------------------------------------------------------------------------------- the slice check
def tile_kernel(m: int, n: int, k: int) -> Schedule:
    return Schedule(Tile((m, n), k, (1, 1), "MFMA_F32_16x16x16_BF16"), Staging(1), Swizzle("pad"))


def multiples(size: int, unit: int) -> bool:
    """Whether `size` is some whole number of `unit`s (found by building them)."""
    return size in range(unit, size + 1, unit)


def sliced(k: int, splits: int, step: int) -> bool:
    """Whether K is `splits` slices, each a whole number of `step`-row steps."""
    return any(splits * q * step == k for q in range(1, k // max(1, splits * step) + 1))


def accepted(gemm: Gemm, plan: SplitK) -> bool:
    try:
        check_split(gemm, plan)
    except SplitError:
        return False
    return True


TILES = [(16, 256, 64), (64, 128, 64), (128, 128, 64), (64, 128, 32), (32, 64, 16)]


@settings(max_examples=150, deadline=None)
@given(tile=st.sampled_from(TILES), m=st.integers(1, 5), n=st.integers(1, 5), q=st.integers(1, 6),
       splits=st.sampled_from([1, 2, 3, 4, 6, 8, 16, 64]), dm=st.sampled_from([0, 0, 1, -1]),
       dk=st.sampled_from([0, 0, 1, -1, 16, 32, 64]), layout=st.sampled_from(["nn", "nt", "tn"]))
def test_a_tile_kernel_takes_exactly_slices_of_whole_k_steps(tile, m, n, q, splits, dm, dk, layout):
    tm, tn, tk = tile
    gemm = Gemm(max(1, tm * m + dm), max(1, tn * n - dm), max(1, splits * q * tk + dk), "bf16", layout)
    want = splits >= 2 and sliced(gemm.k, splits, tk)  # M and N padded to whole tiles
    assert accepted(gemm, SplitK(splits, tile_kernel(tm, tn, tk))) == want


@pytest.mark.parametrize("k, splits, step, want", [
    (4096, 64, 64, True), (4096, 128, 64, False),  # K/S = 32 rows: half a step
    (4096, 32, 64, True), (4096 + 64, 64, 64, False),  # 65 steps do not make 64 equal slices
    (64 * 3 * 64, 3, 64, True), (64 * 3 * 64, 192, 64, True), (64 * 3 * 64, 128, 64, False),  # 96 rows
    (64 * 3 * 64, 5, 64, False),  # no five equal slices
])
def test_slices_at_the_edges_of_whole_steps(k, splits, step, want):
    assert accepted(Gemm(64, 128, k, "f16", "nn"), SplitK(splits, tile_kernel(64, 128, step))) == want
    assert sliced(k, splits, step) == want


@settings(max_examples=120, deadline=None)
@given(m=st.integers(1, 20), n_units=st.integers(1, 4), dn=st.sampled_from([0, 0, 8, -8]),
       q=st.integers(1, 4), splits=st.sampled_from([1, 2, 4, 8, 64]), dk=st.sampled_from([0, 0, 8, -8]),
       kernel=st.sampled_from([Streaming(256, 8), Streaming(256, 16), Streaming(512, 16)]),
       layout=st.sampled_from(["nn", "nt", "tn"]))
def test_the_streaming_kernel_takes_exactly_its_columns_and_steps(m, n_units, dn, q, splits, dk, kernel, layout):
    gemm = Gemm(m, max(1, kernel.workgroup_n * n_units + dn), max(1, splits * q * kernel.k_step + dk), "bf16", layout)
    want = (splits >= 2 and layout != "nt" and multiples(gemm.n, kernel.workgroup_n)
            and sliced(gemm.k, splits, kernel.k_step) and kernel.thread_n * m <= 128)
    assert accepted(gemm, SplitK(splits, kernel)) == want


def test_streaming_accumulators_at_their_limit():
    """Eight columns per thread: M = 16 keeps 128 accumulators, the most; M = 17 would keep 136."""
    assert accepted(Gemm(16, 256, 4096, "bf16", "nn"), SplitK(8, Streaming(256, 8)))
    assert not accepted(Gemm(17, 256, 4096, "bf16", "nn"), SplitK(8, Streaming(256, 8)))


# ------------------------------------------------------------------------------------------ the split program
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
@pytest.mark.parametrize("m, n, k, splits", [(3, 5, 12, 4), (1, 6, 8, 2), (7, 2, 18, 3)])
def test_the_split_program_computes_the_product_in_float64(layout, m, n, k, splits):
    from iree.compiler import ir

    from pipelines.emulator.interpret import Interpreter
    from transforms.split_k import build_split_module, streaming_info

    gemm = Gemm(m, n, k, "bf16", layout)
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = rng.integers(-4, 5, gemm.a_shape).astype(np.float64), rng.integers(-4, 5, gemm.b_shape).astype(np.float64)
    with ir.Context(), ir.Location.unknown():
        module = build_split_module(gemm, SplitK(splits, Streaming(8, 1)), streaming_info(gemm, Streaming(8, 1), 64))
        assert module.operation.verify()
        module = ir.Module.parse(str(module))  # as the compile reads it back
        interpreter = Interpreter(module, "gemm")
        assert interpreter.arguments() == [(gemm.a_shape, "bf16"), (gemm.b_shape, "bf16")]
        (value, _), = interpreter.run([a, b])
    left = a.T if layout == "tn" else a
    right = b.T if layout == "nt" else b
    assert value.shape == (m, n)
    np.testing.assert_array_equal(value, left @ right)  # small integers: exact in any order
