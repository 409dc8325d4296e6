"""The DRAM traffic model (`pipelines.timing.traffic`) on launches small enough to count by hand, and its use by
`predict` (`dispatch_traffic`)."""

import math
from types import SimpleNamespace

import pytest

from pipelines.targets import TARGETS
from pipelines.timing.predict import dispatch_traffic
from pipelines.timing.traffic import order_traffic, panel_traffic

HUGE = 1 << 50  # a cache nothing leaves
TINY = 1  # a cache nothing survives in: any reuse after another panel comes in misses


def _least(m, n, k, e=2, batch=1):
    return batch * ((m + n) * k * e + m * n * 4)


@pytest.mark.parametrize("m,n,k,tm,tn", [(256, 256, 64, 128, 128), (300, 200, 48, 128, 64), (64, 1000, 32, 64, 128)])
def test_caches_that_hold_everything_move_a_b_and_c_once(m, n, k, tm, tn):
    t = panel_traffic(m, n, k, 1, 2, 4, tm, tn, 1, 1, HUGE, HUGE)
    assert t.dram_bytes == t.least_bytes == _least(m, n, k)


def test_one_round_shares_every_panel_whatever_the_caches():
    # 3x4 tiles in one round of 12 slots: each A and B panel is fetched once, in step, even by caches of one byte
    t = panel_traffic(384, 512, 64, 1, 2, 4, 128, 128, 1, 12, TINY, TINY)
    assert t.rounds == 1
    assert t.dram_bytes == _least(384, 512, 64)


def test_caches_that_keep_nothing_fetch_both_panels_of_every_tile():
    # one workgroup at a time: tile (i, j) reads A panel i and B panel j; between two uses of a panel another
    # panel came in, so nothing survives: (tiles) x (tm + tn) x K x 2 bytes, plus C
    m, n, k, tm, tn = 384, 256, 32, 128, 64
    t = panel_traffic(m, n, k, 1, 2, 4, tm, tn, 1, 1, TINY, TINY)
    tiles = (m // tm) * (n // tn)
    assert t.rounds == tiles
    assert t.dram_bytes == tiles * (tm + tn) * k * 2 + m * n * 4


def test_edge_tiles_read_only_the_rows_and_columns_inside_the_problem():
    # 130 x 70 in 128 x 64 tiles, nothing kept: the edge panels are 2 rows and 6 columns of K
    k = 16
    t = panel_traffic(130, 70, k, 1, 2, 4, 128, 64, 1, 1, TINY, TINY)
    a = [128 * k * 2, 2 * k * 2]
    b = [64 * k * 2, 6 * k * 2]
    assert t.dram_bytes == sum(ai + bj for ai in a for bj in b) + 130 * 70 * 4


def test_a_panel_survives_the_bytes_taken_in_since_its_last_use_with_probability_exp_minus_d_over_c():
    # one row of two tiles, one at a time, L2 the size of a B panel, MALL holds everything:
    # tile 0 takes A (miss) then B0 (miss); tile 1 finds A after B0's bytes came in: exp(-1) of A is kept
    k, tm, tn = 64, 128, 64
    a, b = tm * k * 2, tn * k * 2
    t = panel_traffic(tm, 2 * tn, k, 1, 2, 4, tm, tn, 1, 1, b, HUGE)
    assert t.l2_miss_bytes == round(a + b + (1 - math.exp(-1)) * a + b)
    assert t.dram_bytes == _least(tm, 2 * tn, k)  # the MALL had A: DRAM saw it once


def test_xcds_that_miss_one_panel_in_the_same_round_fetch_it_from_dram_once():
    # one row of two tiles on 2 XCDs: both L2s miss A panel 0 in round 0, the MALL fetches it once
    k = 32
    t = panel_traffic(128, 256, k, 1, 2, 4, 128, 128, 2, 1, TINY, HUGE)
    a = b = 128 * k * 2
    assert t.l2_miss_bytes == 2 * a + 2 * b
    assert t.dram_bytes == a + 2 * b + 128 * 256 * 4


def test_workgroups_are_dealt_to_the_xcds_round_robin():
    # 1 x 4 tiles on 2 XCDs of one slot, L2s keep everything, MALL nothing: XCD 0 runs tiles 0 and 2, XCD 1 tiles
    # 1 and 3; each XCD's L2 misses A once and its own two B panels
    k = 16
    t = panel_traffic(64, 256, k, 1, 2, 4, 64, 64, 2, 1, HUGE, TINY)
    p = 64 * k * 2
    assert t.rounds == 2
    assert t.l2_miss_bytes == 2 * p + 4 * p


def test_a_batch_never_shares_panels_across_its_matrices():
    one = panel_traffic(256, 256, 64, 1, 2, 4, 128, 128, 1, 4, HUGE, HUGE)
    three = panel_traffic(256, 256, 64, 3, 2, 4, 128, 128, 1, 4, HUGE, HUGE)
    assert three.dram_bytes == 3 * one.dram_bytes == _least(256, 256, 64, batch=3)


@pytest.mark.parametrize("xcds,slots", [(1, 1), (1, 7), (8, 2), (8, 8)])
def test_traffic_lies_between_the_least_and_every_tile_alone_and_larger_caches_never_add(xcds, slots):
    m, n, k, tm, tn = 2048, 1536, 256, 128, 128
    tiles = (m // tm) * (n // tn)
    most = tiles * (tm + tn) * k * 2 + m * n * 4
    previous = None
    for cache in (TINY, 1 << 16, 1 << 20, 4 << 20, 64 << 20, HUGE):
        t = panel_traffic(m, n, k, 1, 2, 4, tm, tn, xcds, slots, cache, cache)
        assert t.least_bytes <= t.dram_bytes <= most
        assert previous is None or t.dram_bytes <= previous
        previous = t.dram_bytes
    assert previous == _least(m, n, k)


@pytest.mark.parametrize("bad", [dict(tile_m=0), dict(slots=0), dict(xcds=0), dict(k=0), dict(mall_bytes=0)])
def test_sizes_that_are_not_positive_are_refused(bad):
    args = dict(m=128, n=128, k=64, batch=1, element=2, out_element=4, tile_m=64, tile_n=64, xcds=1, slots=1,
                l2_bytes=1 << 20, mall_bytes=1 << 20)
    with pytest.raises(ValueError, match="positive"):
        panel_traffic(**dict(args, **bad))


def _rec(configured, resident=2, hbm_bytes=None, tile_order=None):
    return SimpleNamespace(configured=configured, resident=resident, hbm_bytes=hbm_bytes, tile_order=tile_order)


PROBLEM = dict(m=4096, n=4096, k=4096, dtype="f16", layout="nt", batch=None)


def test_predict_counts_the_panels_a_row_major_launch_reuses_on_gfx1151():
    # 128x64 tiles on gfx1151's one 2 MB L2 and 32 MB MALL, its 40 CUs running 2 workgroups each at once: 80
    # workgroups a round read their panels in step
    timing = TARGETS["gfx1151"].timing
    rec = _rec("lowering_config<{workgroup = [128, 64, 0]}>")
    got = dispatch_traffic(rec, TARGETS["gfx1151"], PROBLEM)
    want = panel_traffic(4096, 4096, 4096, 1, 2, 4, 128, 64, 1, 80, timing.l2_bytes_per_xcd, timing.mall_bytes)
    assert got == (want.dram_bytes, want.l2_miss_bytes)
    assert got[0] > _least(4096, 4096, 4096)


def test_predict_deals_the_workgroups_to_gfx950s_xcds():
    timing = TARGETS["gfx950"].timing
    # 8 XCDs of 32 CUs, one 256x256 workgroup each at once: 32 a round on each XCD
    got = dispatch_traffic(_rec("workgroup = [256, 256, 0]", resident=1), TARGETS["gfx950"], PROBLEM)
    want = panel_traffic(4096, 4096, 4096, 1, 2, 4, 256, 256, 8, 32, timing.l2_bytes_per_xcd, timing.mall_bytes)
    assert got == (want.dram_bytes, want.l2_miss_bytes)


@pytest.mark.parametrize("configured", ["no tile here", "workgroup = [256, 256, 0] reorder_workgroups_strategy = 1"])
def test_an_unknown_tile_or_launch_order_moves_a_b_and_c_once(configured):
    assert dispatch_traffic(_rec(configured), TARGETS["gfx950"], PROBLEM) == (_least(4096, 4096, 4096), None)


def test_a_dispatch_that_states_its_own_bytes_keeps_them():
    rec = _rec("workgroup = [128, 64, 0]", hbm_bytes=12345)
    assert dispatch_traffic(rec, TARGETS["gfx1151"], PROBLEM) == (12345, None)


@pytest.mark.parametrize("m,n,tile,order", [
    (150000, 1134, 128, "row"),      # M: 1172 tiles -> 1 + 256 = 257 loads; N: 9 tiles -> 29 + 9 = 38
    (2048, 65536, 128, "column"),    # M: 16 tiles -> 16 + 16 = 32 loads; N: 512 tiles -> 1 + 256 = 257
    (4096, 4096, 256, "row"),        # equal loads: 32 is not under 4/5 of 32
    (2560, 5120, 128, "column"),     # M: 20 tiles -> 13 + 20 = 33; N: 40 tiles -> 7 + 40 = 47, 4/5 of it 37
    (2560, 4096, 128, "row"),        # M: 33; N: 32 tiles -> 8 + 32 = 40, 4/5 of it 32: 33 is not under
])
def test_irees_conditional_transpose_launches_column_major_when_m_loads_fewer_tiles(m, n, tile, order):
    from pipelines.timing.predict import launch_order

    configured = "workgroup = [%d, %d, 0] #iree_gpu.conditional_transpose<8, 32>" % (tile, tile)
    assert launch_order(configured, m, n, tile, tile) == order
    assert launch_order("workgroup = [128, 128, 0]", m, n, tile, tile) == "row"


@pytest.mark.parametrize("tile_m, tile_n", [(128, 128), (128, 256)])
def test_a_column_major_launch_moves_what_the_transposed_problem_moves_row_major(tile_m, tile_n):
    """The transposed problem (N x M) with the transposed tile (tile_n x tile_m), launched row-major; 2 resident
    workgroups on each of an XCD's 32 CUs read in step (64 slots)."""
    from pipelines.timing.predict import launch_order

    timing = TARGETS["gfx950"].timing
    problem = dict(PROBLEM, m=2048, n=65536, k=512)
    configured = f"workgroup = [{tile_m}, {tile_n}, 0] conditional_transpose<8, 32>"
    assert launch_order(configured, 2048, 65536, tile_m, tile_n) == "column"
    got = dispatch_traffic(_rec(configured), TARGETS["gfx950"], problem)
    want = panel_traffic(65536, 2048, 512, 1, 2, 4, tile_n, tile_m, 8, 64, timing.l2_bytes_per_xcd,
                         timing.mall_bytes)
    assert got == (want.dram_bytes, want.l2_miss_bytes)
    row = panel_traffic(2048, 65536, 512, 1, 2, 4, tile_m, tile_n, 8, 64, timing.l2_bytes_per_xcd,
                        timing.mall_bytes)
    assert row.l2_miss_bytes != want.l2_miss_bytes  # the order matters, so the test can tell them apart
    if tile_m != tile_n:  # and so does which tile side goes with which problem side
        swapped = panel_traffic(65536, 2048, 512, 1, 2, 4, tile_m, tile_n, 8, 64, timing.l2_bytes_per_xcd,
                                timing.mall_bytes)
        assert (swapped.dram_bytes, swapped.l2_miss_bytes) != got


# ---------------------------------------------------------------------------------------- a kernel's own order

@pytest.mark.parametrize("m, n, tile_m, tile_n, slots", [(1024, 768, 128, 128, 1), (1024, 768, 128, 256, 3),
                                                         (640, 1280, 128, 64, 5)])
def test_the_row_major_order_stated_is_panel_traffic(m, n, tile_m, tile_n, slots):
    timing = TARGETS["gfx950"].timing
    grid_n = -(-n // tile_n)
    order = tuple((i, j) for i in range(-(-m // tile_m)) for j in range(grid_n))
    caches = (timing.l2_bytes_per_xcd // 64, timing.mall_bytes // 64)  # small enough to forget some panels
    assert order_traffic(order, m, n, 4096, 2, 4, tile_m, tile_n, 8, slots, *caches) == \
        panel_traffic(m, n, 4096, 1, 2, 4, tile_m, tile_n, 8, slots, *caches)


@pytest.mark.parametrize("seed", range(4))
def test_with_caches_that_keep_everything_each_xcd_misses_its_own_panels_once(seed):
    """An independent count: with caches far larger than the problem, an XCD's L2 misses each distinct panel its
    workgroups read once, and DRAM serves each panel of the problem once (plus C), whatever the order."""
    import random
    m, n, k, tile, xcds = 768, 1024, 64, 128, 4
    tiles = [(i, j) for i in range(m // tile) for j in range(n // tile)]
    order = tuple(random.Random(seed).sample(tiles, len(tiles)))
    panel = tile * k * 2
    got = order_traffic(order, m, n, k, 2, 4, tile, tile, xcds, 2, 1 << 50, 1 << 50)
    per_xcd = [{("a", i) for i, _ in order[x::xcds]} | {("b", j) for _, j in order[x::xcds]} for x in range(xcds)]
    assert got.l2_miss_bytes == sum(len(p) for p in per_xcd) * panel
    assert got.dram_bytes == (m // tile + n // tile) * panel + m * n * 4 == got.least_bytes


def test_a_grouped_order_misses_less_than_row_major_on_small_l2s():
    """Eight tile rows by eight tile columns a round (HipKittens' WGM = 8 grouping) share their panels where a
    row-major round of 64 spans one tile row and 64 columns: fewer bytes miss the L2s."""
    rows = cols = 64
    grouped = tuple((g * 8 + w % 8, w // 8 % cols) for g in range(rows // 8) for w in range(8 * cols))
    row_major = tuple((i, j) for i in range(rows) for j in range(cols))
    args = (8192, 8192, 8192, 2, 2, 128, 128, 1, 64, 4 << 20, 256 << 20)
    assert order_traffic(grouped, *args).l2_miss_bytes < order_traffic(row_major, *args).l2_miss_bytes


def test_an_order_that_is_not_the_grid_is_refused():
    with pytest.raises(ValueError, match="each tile of the 2x2 grid once"):
        order_traffic(((0, 0), (0, 1), (1, 0), (1, 0)), 256, 256, 64, 2, 4, 128, 128, 1, 1, 1 << 20, 1 << 20)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_a_problem_whose_a_and_b_fit_the_mall_reads_them_about_once(target):
    """4096^3 bf16: A and B are 64 MB, a quarter of the 256 MB MALL of an MI300X or MI355X (CDNA 3 white paper;
    Chips and Cheese on CDNA 4). Whatever the L2s forget between the rows of 128x128 tiles, DRAM serves A and B
    about once: only what random replacement drops in a quarter-full MALL comes again (under 10 %)."""
    got = dispatch_traffic(_rec("workgroup = [128, 128, 0]", resident=1), TARGETS[target], PROBLEM)
    least = _least(4096, 4096, 4096)
    assert least <= got[0] <= 1.1 * least
    assert got[1] > 2 * (4096 * 4096 * 2 * 2)  # the L2s (4 MB each) miss A and B many times over
