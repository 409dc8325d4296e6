"""XOR swizzle of LDS rows for the generated kernels: the function, its inverse, its check, and its IR.

The 16-byte chunks of a row (one global load or LDS store each) are permuted by XOR with a mask that changes
once per line of the LDS banks, so the 16 rows a fragment read touches start on different banks. Writer and
reader call the same `emit`, and `check` proves the mapping a permutation with its inverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir
from iree.compiler.dialects import arith

CHUNK_BYTES = 16  # the unit an XOR swizzle permutes: one 16-byte global load / LDS store


def xor_rows(lds_banks: int, k_tile: int, element_bytes: int) -> int:
    """Rows of `k_tile` elements that fill one line of the LDS banks (banks × 4 bytes)."""
    return max(1, lds_banks * 4 // (k_tile * element_bytes))


@dataclass(frozen=True)
class XorSwizzle:
    """The 16-byte chunks of an LDS row permuted by XOR with a mask that changes every `rows_per_line` rows.

    Derived from the access geometry: a row holds `chunks` chunks, and `rows_per_line` rows fill one line of the
    LDS banks (banks × 4 bytes), so rows a whole line apart start on the same bank. A fragment read takes the
    same K chunk of 16 consecutive rows; the mask moves the rows of each line-sized group to different chunks.
    XOR is its own inverse: the reader applies the same function to find what the writer put where."""

    chunk_elements: int
    chunks: int
    rows_per_line: int
    # Where set, the mask is these bits of the row instead (bit i of the mask is bit mask_bits[i] of the row): rows
    # a read takes together that are not consecutive (`transposed_swizzle`)
    mask_bits: tuple[int, ...] = ()

    def mask(self, row: int) -> int:
        if self.mask_bits:
            return sum(((row >> bit) & 1) << i for i, bit in enumerate(self.mask_bits))
        return (row // self.rows_per_line) % self.chunks

    def column(self, row: int, k: int) -> int:
        """The physical column of logical element `k` of `row`."""
        return ((k // self.chunk_elements) ^ self.mask(row)) * self.chunk_elements + k % self.chunk_elements

    def inverse(self, row: int, column: int) -> int:
        return ((column // self.chunk_elements) ^ self.mask(row)) * self.chunk_elements + column % self.chunk_elements

    def check(self, rows: int) -> None:
        """Every row's columns are permuted, and the inverse undoes them; raises ValueError otherwise."""
        width = self.chunks * self.chunk_elements
        for row in range(rows):
            placed = [self.column(row, k) for k in range(width)]
            if sorted(placed) != list(range(width)) or any(self.inverse(row, c) != k for k, c in enumerate(placed)):
                raise ValueError(f"XOR swizzle {self} is not a permutation with inverse on row {row}.")

    def emit(self, b, row: ir.Value, k: ir.Value) -> ir.Value:
        """`column` in IR: the same formula on index values (`b` makes index constants: `b.c(n)`)."""
        chunk = arith.DivUIOp(k, b.c(self.chunk_elements)).result
        if self.mask_bits:
            bits = [arith.MulIOp(arith.RemUIOp(arith.DivUIOp(row, b.c(1 << bit)).result, b.c(2)).result,
                                 b.c(1 << i)).result for i, bit in enumerate(self.mask_bits)]
            mask = bits[0]
            for bit in bits[1:]:
                mask = arith.AddIOp(mask, bit).result
        else:
            mask = arith.RemUIOp(arith.DivUIOp(row, b.c(self.rows_per_line)).result, b.c(self.chunks)).result
        moved = arith.MulIOp(arith.XOrIOp(chunk, mask).result, b.c(self.chunk_elements)).result
        return arith.AddIOp(moved, arith.RemUIOp(k, b.c(self.chunk_elements)).result).result


TRANSPOSE_LANE_BYTES = 8  # what one lane of a transposing read (ds_read_b64_tr_b16 / _b8) takes from LDS


def transposed_swizzle(row_elements: int, element_bytes: int, lds_banks: int, group_rows: int) -> XorSwizzle:
    """The swizzle of a K×N operand tile stored N-contiguous (rows of `row_elements`, a whole number of bank lines)
    and read by transposing reads (ds_read_b64_tr_b16 / _b8) into MFMA fragments, whose lane group g holds K rows
    g·group_rows onwards. Each 16-lane block reads 8 / element_bytes consecutive K rows (row bits 0 and 1 at 16
    bits, 0 to 2 at 8), 128 / that bytes of the same N columns from each (a chunk: 32 or 16 bytes). The banks serve
    a line (banks × 4 bytes) of 8-byte lanes a cycle: two lane groups, group_rows apart, on 64 banks; one on 32.
    Those rows must take different chunks modulo a line, so the mask is made of the block's row bits and, on 64
    banks, the bit of group_rows: bits 0, 1 and 3 for gfx950's bf16 16x16x32 (group_rows 8), 0, 1, 2 and 4 for its
    fp8 16x16x128 (16)."""
    rows_per_block = TRANSPOSE_LANE_BYTES // element_bytes
    chunk_bytes = 16 * TRANSPOSE_LANE_BYTES // rows_per_block
    line_chunks = lds_banks * 4 // chunk_bytes
    groups_per_cycle = lds_banks * 4 // TRANSPOSE_LANE_BYTES // 16
    bits = tuple(range(rows_per_block.bit_length() - 1)) + (
        (group_rows.bit_length() - 1,) if groups_per_cycle == 2 else ())
    if (row_elements * element_bytes % (lds_banks * 4) or 1 << len(bits) != line_chunks
            or group_rows & (group_rows - 1) or group_rows < rows_per_block):
        raise ValueError(f"no transposed swizzle for rows of {row_elements * element_bytes} bytes on {lds_banks} "
                         f"banks with lane groups {group_rows} rows apart.")
    return XorSwizzle(chunk_bytes // element_bytes, row_elements * element_bytes // chunk_bytes, 1, bits)


def lds_swizzle(schedule) -> XorSwizzle | None:
    """The swizzle of a warp-group schedule with `xor_rows` (0: none), for its K tile and element size."""
    if not schedule.xor_rows:
        return None
    chunk_elements = CHUNK_BYTES // schedule.element_bytes
    return XorSwizzle(chunk_elements, schedule.tile[2] // chunk_elements, schedule.xor_rows)
