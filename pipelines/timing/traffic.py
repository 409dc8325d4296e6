"""DRAM traffic of a tiled GEMM dispatch: which A and B panels the caches keep between the workgroups that read
them, given the launch order and how many workgroups run at once.

A workgroup of an M×N tile reads its A panel (tile_m rows of A, all of K) and its B panel (tile_n columns of B, all
of K). Workgroups are launched in id order, the id running over N fastest (row-major), and dealt round-robin to the
chip's XCDs, each with its own L2; the memory-side cache (MALL) is shared by the whole chip. Each XCD runs `slots`
workgroups at once (its CUs × the workgroups one CU holds), so its ids go in rounds of `slots`:

- workgroups of one round read their panels together, in step over K: a panel two of them share is fetched once;
- a panel read again later is still in a cache with the probability exp(-d / C), d the bytes that cache took in
  since its last use and C its size: a line's survival under random replacement. Exact LRU would instead
  have a cliff (a cyclic stream one panel larger than the cache never hits), which makes the prediction jump
  with one more workgroup a round;
- what an L2 misses goes to the MALL, round by round; a panel several XCDs miss in one round is fetched from DRAM
  once;
- C is written once.

So DRAM moves A and B once where the caches hold the panels the launch order reuses, and up to once per reuse
where they do not (e.g. B's panels on a chip whose caches hold a row of tiles' panels but not all of B). Not
modelled: partial panels (a panel's bytes share one fate), the MALL's and L2's own bandwidths, write-back traffic
beyond C. Launch orders other than row-major: a column-major launch is the transposed problem's row-major one, and a
kernel that maps its workgroup ids to tiles itself states the mapping (`order_traffic`).

`pipelines.timing.predict` passes the workgroups an XCD runs at once as its slots (`dispatch_traffic` says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Traffic:
    dram_bytes: int  # A and B panels fetched from DRAM, plus C written once
    l2_miss_bytes: int  # panels the L2s missed (served by the MALL or DRAM)
    least_bytes: int  # A and B read once, C written once: the problem's least traffic
    rounds: int  # rounds of `slots` workgroups on one XCD


class _Cache:
    """One cache's reuse clock: the bytes it has taken in, and that count at each panel's last use."""

    def __init__(self, capacity: int):
        self.capacity, self.clock = capacity, 0.0
        self.last: dict = {}

    def take(self, key, size: float) -> float:
        """The bytes of `size` that miss: all of them on a first use, else those that did not survive the bytes
        taken in since the last use (exp(-d / C) survive); the missed bytes are then taken in."""
        last = self.last.get(key)
        kept = math.exp(-(self.clock - last) / self.capacity) if last is not None else 0.0
        missed = (1.0 - kept) * size
        self.clock += missed
        self.last[key] = self.clock
        return missed


@lru_cache(maxsize=1024)  # a calibration fit replays each kernel under many timing facts; the bytes stay the same
def panel_traffic(m: int, n: int, k: int, batch: int, element: int, out_element: int, tile_m: int, tile_n: int,
                  xcds: int, slots: int, l2_bytes: int, mall_bytes: int) -> Traffic:
    """DRAM bytes of a row-major launch of ceil(m/tile_m) × ceil(n/tile_n) tiles per batch (see the module)."""
    if min(m, n, k, batch, element, out_element, tile_m, tile_n, xcds, slots, l2_bytes, mall_bytes) < 1:
        raise ValueError("panel_traffic needs positive sizes, tiles, XCDs, slots and caches")
    grid_m, grid_n = -(-m // tile_m), -(-n // tile_n)
    order = tuple((b, i, j) for b in range(batch) for i in range(grid_m) for j in range(grid_n))
    return _traffic(order, m, n, k, batch, element, out_element, tile_m, tile_n, xcds, slots, l2_bytes, mall_bytes)


@lru_cache(maxsize=64)
def order_traffic(order: tuple[tuple[int, int], ...], m: int, n: int, k: int, element: int, out_element: int,
                  tile_m: int, tile_n: int, xcds: int, slots: int, l2_bytes: int, mall_bytes: int) -> Traffic:
    """DRAM bytes of a launch whose workgroup id w computes the tile order[w] = (tile row, tile column): a kernel
    that maps its own ids to tiles (HipKittens' XCD-chunked, grouped order). Ids are dealt to the XCDs as in
    `panel_traffic`; `order` must hold every tile of the ceil(m/tile_m) × ceil(n/tile_n) grid once."""
    if min(m, n, k, element, out_element, tile_m, tile_n, xcds, slots, l2_bytes, mall_bytes) < 1:
        raise ValueError("order_traffic needs positive sizes, tiles, XCDs, slots and caches")
    grid_m, grid_n = -(-m // tile_m), -(-n // tile_n)
    if sorted(order) != [(i, j) for i in range(grid_m) for j in range(grid_n)]:
        raise ValueError(f"order_traffic needs each tile of the {grid_m}x{grid_n} grid once")
    return _traffic(tuple((0, i, j) for i, j in order), m, n, k, 1, element, out_element, tile_m, tile_n, xcds,
                    slots, l2_bytes, mall_bytes)


def _traffic(order: tuple[tuple[int, int, int], ...], m: int, n: int, k: int, batch: int, element: int,
             out_element: int, tile_m: int, tile_n: int, xcds: int, slots: int, l2_bytes: int,
             mall_bytes: int) -> Traffic:
    """The caches' replay of `order` ((batch, tile row, tile column) of each workgroup id)."""
    grid_m, grid_n = -(-m // tile_m), -(-n // tile_n)
    a_rows = [min(tile_m, m - i * tile_m) * k * element for i in range(grid_m)]
    b_cols = [min(tile_n, n - j * tile_n) * k * element for j in range(grid_n)]
    l2s = [_Cache(l2_bytes) for _ in range(xcds)]
    mall = _Cache(mall_bytes)
    total = len(order)
    per_xcd = -(-total // xcds)
    rounds = -(-per_xcd // slots)
    l2_miss = dram = 0.0
    for r in range(rounds):
        missed: dict = {}
        for x in range(xcds):
            panels: dict = {}
            # XCD x's j-th workgroup is id x + j * xcds; round r holds j in [r * slots, (r + 1) * slots)
            for j in range(r * slots, (r + 1) * slots):
                wg = x + j * xcds
                if wg >= total:
                    break
                b, i, jn = order[wg]
                panels[("a", b, i)] = a_rows[i]
                panels[("b", b, jn)] = b_cols[jn]
            for key, size in panels.items():
                miss = l2s[x].take(key, size)
                if miss > 0:
                    l2_miss += miss
                    missed[key] = max(missed.get(key, 0.0), miss)  # XCDs missing it together share a fetch
        for key, miss in missed.items():
            dram += mall.take(key, miss)
    out = batch * m * n * out_element
    least = batch * (m + n) * k * element + out
    return Traffic(round(dram) + out, round(l2_miss), least, rounds)
