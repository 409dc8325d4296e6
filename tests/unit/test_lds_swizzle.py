"""The XOR swizzle of the generated kernels: the IR that `emit` builds computes the same columns as the Python
model that `check` proves a permutation with its inverse. The emitted arithmetic on constant rows and columns is
folded by MLIR's canonicalizer and compared, element by element, with `column`."""

import pytest
from iree.compiler import ir
from iree.compiler.dialects import func
from iree.compiler.passmanager import PassManager

from transforms.lds_swizzle import XorSwizzle, lds_swizzle, transposed_swizzle, xor_rows
from transforms.ukernel import KernelBuilder, ukernel_schedule
from transforms.ukernel_dbuf import dbuf_schedule

SHIPPED = {
    "pingpong8 bf16, 32 banks": lds_swizzle(ukernel_schedule("bf16", 32)),
    "pingpong8 bf16, 64 banks": lds_swizzle(ukernel_schedule("bf16", 64)),
    "double buffer bf16, 32 banks": lds_swizzle(dbuf_schedule("bf16", 64, 16, lds_banks=32)),
    "double buffer bf16, 64 banks": lds_swizzle(dbuf_schedule("bf16", 64, 16, lds_banks=64)),
    "double buffer fp8, 64 banks": lds_swizzle(dbuf_schedule("f8E4M3FN", 64, 32, lds_banks=64)),
    "pingpong8_dma NN B, 64 banks": transposed_swizzle(256, 2, 64, 8),
    "pingpong8_dma NN B, 32 banks": transposed_swizzle(256, 2, 32, 8),
    "pingpong8_dma NN B fp8, 64 banks": transposed_swizzle(256, 1, 64, 16),
}


def emitted_columns(swizzle: XorSwizzle, points: list[tuple[int, int]]) -> list[int]:
    """The value of `swizzle.emit(b, row, k)` for each (row, k), by constant folding the emitted IR."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        index = ir.IndexType.get()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("columns", ([], [index] * len(points)))
            entry = function.add_entry_block()
        b = KernelBuilder(ir.BF16Type.get(), entry)
        with ir.InsertionPoint(entry):
            results = [swizzle.emit(b, b.c(row), b.c(k)) for row, k in points]
            func.ReturnOp(results)
        PassManager.parse("builtin.module(func.func(canonicalize))").run(module.operation)
        ret = function.entry_block.operations[len(function.entry_block.operations) - 1]
        return [ir.IntegerAttr(value.owner.attributes["value"]).value for value in ret.operands]


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_emitted_ir_computes_the_checked_model(name):
    swizzle = SHIPPED[name]
    assert swizzle is not None
    swizzle.check(64)
    width = swizzle.chunks * swizzle.chunk_elements
    points = [(row, k) for row in range(4 * swizzle.rows_per_line * swizzle.chunks) for k in range(width)]
    assert emitted_columns(swizzle, points) == [swizzle.column(row, k) for row, k in points]


def test_mask_changes_once_per_line_of_banks():
    swizzle = XorSwizzle(chunk_elements=8, chunks=8, rows_per_line=2)
    assert [swizzle.mask(row) for row in range(18)] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 0, 0]
    # the 16-byte chunk 0 of 16 consecutive rows lands in 8 different chunks, two rows (one line) each
    assert sorted(swizzle.column(row, 0) // 8 for row in range(16)) == [c for c in range(8) for _ in range(2)]


def test_inverse_undoes_column():
    swizzle = XorSwizzle(chunk_elements=4, chunks=4, rows_per_line=1)
    for row in range(8):
        assert [swizzle.inverse(row, swizzle.column(row, k)) for k in range(16)] == list(range(16))


def test_check_rejects_a_mask_that_leaves_the_row():
    """With 3 chunks per row, row 1's mask 1 sends chunk 2 to chunk 3, outside the row."""
    with pytest.raises(ValueError, match="not a permutation with inverse on row 1"):
        XorSwizzle(chunk_elements=8, chunks=3, rows_per_line=1).check(4)


@pytest.mark.parametrize("banks, k_tile, element_bytes, rows", [
    (32, 64, 2, 1),    # 128 B rows fill gfx942's 32 banks x 4 B
    (64, 64, 2, 2),    # gfx950's 64 banks take two such rows
    (64, 32, 2, 4),
    (64, 128, 1, 2),
    (32, 128, 2, 1),   # a row wider than the banks still has one row per line
])
def test_rows_per_line_of_banks(banks, k_tile, element_bytes, rows):
    assert xor_rows(banks, k_tile, element_bytes) == rows


def _transposing_read_cycles(swizzle: XorSwizzle | None, banks: int, first_row: int, tile: int, element_bytes: int = 2,
                             group_rows: int = 8) -> int:
    """Bank cycles of one transposing read (ds_read_b64_tr_b16 / _b8) of the NN B fragments, by hand: with p = 8 /
    element_bytes values a lane, lane l (group g = l // 16, L = l % 16) reads 8 bytes at K row first_row +
    group_rows·g + L // (16 / p), N column 16·tile + p·(L % (16 / p)) of 256-element rows; the banks serve
    (banks × 4 / 8) lanes a cycle, and a cycle takes as many passes as its busiest bank has distinct dwords."""
    per_lane = 8 // element_bytes
    lanes_per_row = 16 // per_lane
    lanes_per_cycle = banks * 4 // 8
    total = 0
    for start in range(0, 64, lanes_per_cycle):
        per_bank: dict[int, set] = {}
        for lane in range(start, start + lanes_per_cycle):
            row = first_row + group_rows * (lane // 16) + (lane % 16) // lanes_per_row
            n = 16 * tile + per_lane * (lane % lanes_per_row)
            column = n if swizzle is None else swizzle.column(row, n)
            byte = row * 256 * element_bytes + element_bytes * column
            for dword in (byte // 4, byte // 4 + 1):
                per_bank.setdefault(dword % banks, set()).add(dword)
        total += max(len(d) for d in per_bank.values())
    return total


# (first K row of each read of a lane group 0: bf16 16x16x32 slices 0 and 1 of a 64-row tile, two reads of 4 rows
# each; fp8 16x16x128 runs 0 and 1, 64 apart, two reads of 8 rows each)
BF16_READS, FP8_READS = (0, 4, 32, 36), (0, 8, 64, 72)


@pytest.mark.parametrize("banks, element_bytes, group_rows, firsts", [
    (32, 2, 8, BF16_READS), (64, 2, 8, BF16_READS), (64, 1, 16, FP8_READS), (32, 1, 16, FP8_READS)])
def test_transposed_swizzle_makes_every_transposing_read_conflict_free(banks, element_bytes, group_rows, firsts):
    swizzle = transposed_swizzle(256, element_bytes, banks, group_rows)
    swizzle.check(128 // element_bytes)
    ideal = 64 * 8 // (banks * 4)
    reads = [(row, tile) for row in firsts for tile in range(16)]
    assert all(_transposing_read_cycles(swizzle, banks, row, tile, element_bytes, group_rows) == ideal
               for row, tile in reads)
    # unswizzled, the rows of a cycle share their banks; a mask that changes per row only modulo a line does too
    assert _transposing_read_cycles(None, banks, 0, 0, element_bytes, group_rows) > ideal
    if banks == 64:
        assert _transposing_read_cycles(XorSwizzle(16, 16, 1), banks, 0, 0, element_bytes, group_rows) > ideal


def test_transposed_swizzle_needs_rows_of_whole_bank_lines():
    with pytest.raises(ValueError, match="no transposed swizzle for rows of 192 bytes on 64 banks"):
        transposed_swizzle(96, 2, 64, 8)
