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


TRANSPOSE_READ_BYTES = 32  # what the four lanes of a transposing read that share an LDS row take from it


def transposed_swizzle(row_elements: int, element_bytes: int, lds_banks: int) -> XorSwizzle:
    """The swizzle of a K×N operand tile stored N-contiguous (rows of `row_elements`, a whole number of bank lines)
    and read by transposing reads (ds_read_b64_tr_b16) into MFMA fragments: lane group g holds K rows 8g..8g+7, and
    each 16-lane block reads 4 of them (bits 0-1 of the row), 32 bytes of the same N columns from each. The banks
    serve a line (banks × 4 bytes) of 8-byte lanes a cycle: 32 lanes, two lane groups (rows 8 apart: bit 3), on 64
    banks; 16 lanes on 32. Those rows must take different 32-byte chunks modulo a line, so the mask is made of row
    bits 0, 1 and 3 (0 and 1 on 32 banks)."""
    chunk_elements = TRANSPOSE_READ_BYTES // element_bytes
    line_chunks = lds_banks * 4 // TRANSPOSE_READ_BYTES
    bits = (0, 1, 3)[:line_chunks.bit_length() - 1]
    if row_elements * element_bytes % (lds_banks * 4) or len(bits) != line_chunks.bit_length() - 1:
        raise ValueError(f"no transposed swizzle for rows of {row_elements * element_bytes} bytes on {lds_banks} "
                         "banks.")
    return XorSwizzle(chunk_elements, row_elements // chunk_elements, 1, bits)


def lds_swizzle(schedule) -> XorSwizzle | None:
    """The swizzle of a warp-group schedule with `xor_rows` (0: none), for its K tile and element size."""
    if not schedule.xor_rows:
        return None
    chunk_elements = CHUNK_BYTES // schedule.element_bytes
    return XorSwizzle(chunk_elements, schedule.tile[2] // chunk_elements, schedule.xor_rows)
