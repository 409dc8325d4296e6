"""Where each unit of work of a batched Hopper kernel reads and writes: the emitted kernel's integer arithmetic is
evaluated (a small interpreter of its arith ops, for every workgroup and tile iteration), and the TMA boxes it loads
and the row shift of C it stores to are compared with the products' tiles computed here from first principles."""

import re

import pytest

from transforms import hopper
from transforms.hopper import HopperSchedule, grid_size, program, tile_grid
from transforms.problem import Gemm

from kernel_arith import compiled, evaluate  # noqa: E402  (tests/unit/kernel_arith.py)

def units(gemm: Gemm, s: HopperSchedule) -> list[tuple]:
    """Per workgroup and tile iteration (K step 0): A's box row, B's box (outer, inner) coordinates of its first box,
    and the consumer's row shift of C."""
    text = program(gemm, s)
    kernel = text[text.index("func.func @gemm()"):text.index("func.func @main")]
    loop = re.search(r"scf\.for %pi = %\w+ to (%\w+) step", kernel).group(1)
    loads = re.findall(r"cp\.async\.bulk\.tensor\.shared\.cluster\.global %\w+, %\w+, %\w+, box\[(%\w+), (%\w+)\]",
                       kernel)
    shifted = re.search(r"(%sr\w*) = arith\.extui", kernel)  # none: C's rows are not shifted
    ops = compiled(kernel)
    found = []
    for bid in range(grid_size(gemm, s)):
        mine = evaluate(ops, {"bid": bid})[loop]
        for i in range(mine):
            v = evaluate(ops, {"bid": bid, "%pi": i, "%ci": i, "%pk": 0})
            (ka, ra), (b_inner, b_outer) = [(v[x], v[y]) for x, y in loads[:2]]
            assert ka == 0
            found.append((ra, b_outer if gemm.layout == "nt" else b_inner,
                          b_inner if gemm.layout == "nt" else b_outer, v[shifted.group(1)] if shifted else 0))
    return found


def expected(gemm: Gemm, s: HopperSchedule) -> list[tuple]:
    """Product p's tile (block row r, block column c) on workgroup rank r % cluster_m: A's rows from p·M + r·block_m,
    B's share from column c·block_n + rank·share of product p (nt: rows p·N + that; nn: columns that, K rows from
    p·K), C's rows shifted by p·M."""
    columns, rows = tile_grid(gemm, s)
    rows = -(-rows // s.cluster_m) * s.cluster_m  # a cluster takes whole cluster rows
    share = s.block_n // s.cluster_m
    out = []
    for p in range(gemm.batch):
        for r in range(rows):
            for c in range(columns):
                col = c * s.block_n + (r % s.cluster_m) * share
                b = (p * gemm.n + col, 0) if gemm.layout == "nt" else (col, p * gemm.k)
                out.append((p * gemm.m + r * s.block_m, *b, p * gemm.m))
    return out


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(200, 136, 192, "bf16", "nt", batch=3), HopperSchedule(block_n=128, persistent=True, cluster_m=2)),
    (Gemm(200, 136, 192, "f16", "nn", batch=3), HopperSchedule(block_n=128, persistent=True, cluster_m=2)),
    (Gemm(72, 1000, 64, "bf16", "nn", batch=5), HopperSchedule(block_m=64, block_n=256, consumers=1,
                                                               persistent=True)),
    (Gemm(300, 520, 128, "f16", "nt", batch=2), HopperSchedule(block_m=128, block_n=256, group_m=1)),
    (Gemm(256, 128, 256, "bf16", "nn", batch=4), HopperSchedule(block_m=128, block_n=128, kind="pingpong",
                                                                cluster_m=2)),
])
def test_every_product_tile_is_read_and_stored_once_where_it_lies(gemm, schedule):
    hopper.check_problem(gemm, schedule)
    got = units(gemm, schedule)
    assert sorted(got) == sorted(expected(gemm, schedule))  # each once: no tile lost, none twice


def test_the_interpreter_reads_an_unbatched_kernel_as_one_product():
    """The same oracle on a batch of one: product 0 only, no row shift, as one GEMM's kernel has none."""
    gemm = Gemm(200, 136, 192, "bf16", "nt")
    schedule = HopperSchedule(block_n=128, persistent=True, cluster_m=2)
    text = program(gemm, schedule)
    assert "%sr" not in text[text.index("func.func @gemm()"):text.index("func.func @main")]
    assert sorted(units(gemm.with_(batch=1), schedule)) == sorted(expected(gemm.with_(batch=1), schedule))
