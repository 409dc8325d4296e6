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


@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_serpentine_k_reverses_a_products_k_steps_on_odd_tiles(layout, monkeypatch):
    """A batch with serpentine K, on a GPU of 4 SMs (two clusters, three tiles each): for every workgroup, tile
    iteration i and K step kt, A's box starts at K column k·64 and B's at K row p·K + k·64 (nn; nt: K column k·64 of
    product p's rows), where k is kt on even iterations and (K / 64 - 1 - kt) on odd ones: within product p's K,
    never another product's."""
    monkeypatch.setattr(hopper, "SM_COUNT", 4)
    gemm = Gemm(200, 136, 192, "f16", layout, batch=3)
    s = HopperSchedule(block_n=128, persistent=True, cluster_m=2, serpentine_k=True)
    hopper.check_problem(gemm, s)
    text = program(gemm, s)
    kernel = text[text.index("func.func @gemm()"):text.index("func.func @main")]
    loop = re.search(r"scf\.for %pi = %\w+ to (%\w+) step", kernel).group(1)
    loads = re.findall(r"cp\.async\.bulk\.tensor\.shared\.cluster\.global %\w+, %\w+, %\w+, box\[(%\w+), (%\w+)\]",
                       kernel)
    ops, steps = compiled(kernel), gemm.k // 64
    seen = odd = 0
    for bid in range(grid_size(gemm, s)):
        for i in range(evaluate(ops, {"bid": bid})[loop]):
            for kt in range(steps):
                v = evaluate(ops, {"bid": bid, "%pi": i, "%ci": i, "%pk": kt})
                (a_k, a_row), (b_inner, b_outer) = [(v[x], v[y]) for x, y in loads[:2]]
                k = steps - 1 - kt if i % 2 else kt
                product = a_row // gemm.m
                assert a_k == 64 * k
                assert (b_outer, b_inner) == ((product * gemm.k + 64 * k, b_inner) if layout == "nn"
                                              else (b_outer, 64 * k))
                seen += 1
                odd += i % 2
    columns, rows = tile_grid(gemm, s)  # every product's tiles (cluster rows whole), each with all its K steps
    assert seen == gemm.batch * columns * -(-rows // s.cluster_m) * s.cluster_m * steps and odd > 0
