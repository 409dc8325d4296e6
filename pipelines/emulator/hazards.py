"""The LDS race detector: conflicting accesses by different waves between two barriers of a workgroup.

Waves of a workgroup are ordered only by `s_barrier`; between two barriers (an epoch) any two accesses of the same
LDS byte by different waves, at least one of them a write, race. An asynchronous access occupies its bytes from
issue to the `s_waitcnt` that retires it, so one still in flight at a barrier is re-entered into the next epoch.
The verdict does not depend on how the scheduler interleaved the waves: it is the same for every seed.
"""

from __future__ import annotations

import numpy as np


class LdsRaceDetector:
    """Per byte of LDS, the last writer and the readers of the current epoch."""

    def __init__(self, nbytes: int, nwaves: int):
        if nwaves > 32:
            raise ValueError(f"the race detector tracks at most 32 waves per workgroup, not {nwaves}.")
        self.nbytes = nbytes
        self.writer = np.full(nbytes, -1, np.int32)
        self.writer_pc = np.full(nbytes, -1, np.int32)
        self.readers = np.zeros(nbytes, np.uint32)
        self.reader_pc = np.full((nwaves, nbytes), -1, np.int32)
        self.low, self.high = nbytes, 0  # bytes touched this epoch, so a reset clears only those

    def reset(self) -> None:
        if self.high > self.low:
            span = slice(self.low, self.high)
            self.writer[span] = -1
            self.writer_pc[span] = -1
            self.readers[span] = 0
            self.reader_pc[:, span] = -1
        self.low, self.high = self.nbytes, 0

    def access(self, wave: int, pc: int, index: np.ndarray, is_write: bool) -> list[tuple[int, int, int, bool]]:
        """Enter one access; returns the conflicts found as (other wave, other pc, byte, other is a write)."""
        index = index[(index >= 0) & (index < self.nbytes)]
        if not index.size:
            return []
        conflicts = []
        writers = self.writer[index]
        foreign = (writers >= 0) & (writers != wave)
        if foreign.any():
            byte = int(index[np.argmax(foreign)])
            conflicts.append((int(self.writer[byte]), int(self.writer_pc[byte]), byte, True))
        bit = np.uint32(1 << wave)
        if is_write:
            others = self.readers[index] & ~bit
            if others.any():
                at = int(np.argmax(others != 0))
                byte, mask = int(index[at]), int(others[at])
                other = (mask & -mask).bit_length() - 1
                conflicts.append((other, int(self.reader_pc[other, byte]), byte, False))
            self.writer[index] = wave
            self.writer_pc[index] = pc
        else:
            self.readers[index] |= bit
            self.reader_pc[wave, index] = pc
        self.low = min(self.low, int(index.min()))
        self.high = max(self.high, int(index.max()) + 1)
        return conflicts
