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

    def mask(self, row: int) -> int:
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
        mask = arith.RemUIOp(arith.DivUIOp(row, b.c(self.rows_per_line)).result, b.c(self.chunks)).result
        moved = arith.MulIOp(arith.XOrIOp(chunk, mask).result, b.c(self.chunk_elements)).result
        return arith.AddIOp(moved, arith.RemUIOp(k, b.c(self.chunk_elements)).result).result


def lds_swizzle(schedule) -> XorSwizzle | None:
    """The swizzle of a warp-group schedule with `xor_rows` (0: none), for its K tile and element size."""
    if not schedule.xor_rows:
        return None
    chunk_elements = CHUNK_BYTES // schedule.element_bytes
    return XorSwizzle(chunk_elements, schedule.tile[2] // chunk_elements, schedule.xor_rows)
