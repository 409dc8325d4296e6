"""Warp-group schedules (HipKittens-style) as frozen dataclasses, and their programs for the hazard checker.

- `PingPong8`: 8 waves in two groups of 4. Each group owns half of the A tile; B is shared by both groups. A
  conditional barrier before the loop staggers the second group one phase behind the first, and one after the
  loop re-aligns them, so one group's MFMA cluster (at raised priority) overlaps the other's loads.
- `Interleave4`: 4 waves, one per SIMD, each interleaving global loads of the next stage with LDS reads and MFMAs.
- `ProducerConsumer`: dedicated load waves (producers) and compute waves (consumers).
- `DoubleBuffered`: the plain baseline, one group, two LDS stages.

`program(k_steps)` unrolls a schedule into a `hazards.Program` whose waits are derived by the builder, and
`hazards.check` proves it race-free. A ping-pong K step has three phases per group (LDS reads, MFMA cluster,
loads that refill the stage just read) because B is shared: with the one-phase stagger, the leading group may
rewrite a B stage only two phases after reading it, after the lagging group has read it too
(seed 000 §14-15: the shared B buffers under stagger are the known trap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import UserError
from .hazards import Program, ProgramBuilder
from .schedule import ScheduleError

LOAD_BYTES = 16  # one buffer_load_dwordx4 (or direct-to-LDS load) per lane
READ_BYTES = 16  # one ds_read_b128 per lane


def _instructions(tile_bytes: int, lanes: int, bytes_per_lane: int) -> int:
    return max(1, -(-tile_bytes // (lanes * bytes_per_lane)))


@dataclass(frozen=True)
class _TiledSchedule:
    """What every schedule here shares: A and B tiles of `tile` (M, N, K) in LDS, `lds_stages` times over."""

    tile: tuple[int, int, int] = (256, 256, 64)
    element_bytes: int = 2
    wave_size: int = 64
    lds_stages: int = 2
    lds_pad: int = 0  # elements added to every LDS row (bank-conflict padding)
    xor_rows: int = 0  # XOR-swizzled LDS rows: rows that share one mask (one line of the banks); 0: not swizzled
    if TYPE_CHECKING:  # each schedule names itself in a field of its own (placed where its class puts it)
        name: str = ""

    def lds_bytes(self) -> int:
        m, n, k = self.tile
        return (m + n) * (k + self.lds_pad) * self.element_bytes * self.lds_stages

    def mma_split(self) -> tuple[int, int, int, int]:
        """(M rows per wave group, 16x16 fragment K, MMAs of one K step, waves they are shared by): the tile must
        split into whole fragments and the MMAs evenly over the waves."""
        m, n, k = self.tile
        return m, 16, (m // 16) * (n // 16) * (k // 16), 4

    def check_tile(self) -> None:
        """One sentence when the tile cannot be split the way this schedule splits it (before any hazard check,
        which would otherwise report the symptom, an empty or fractional MMA cluster)."""
        m, n, k = self.tile
        rows, frag_k, mmas, waves = self.mma_split()
        if rows % 16 or n % 16 or k % frag_k or min(m, n, k) < 1:
            raise ScheduleError(f"{self.name} tile {m}x{n}x{k} is invalid: M{' per wave group' if rows != m else ''} "
                                f"and N must be multiples of 16 and K of {frag_k} (16x16 MMA fragments).")
        if mmas == 0 or mmas % waves:
            raise ScheduleError(f"{self.name} tile {m}x{n}x{k} is invalid: its {mmas} 16x16 MMAs per K step do not "
                                f"split evenly over {waves} waves.")


class LdsBudgetError(UserError, ValueError):
    """A warp-group schedule whose LDS does not fit the target; the message names the bytes and the limit."""


def check_lds(schedule, lds_limit: int, target_name: str) -> None:
    need = schedule.lds_bytes()
    if need > lds_limit:
        raise LdsBudgetError(f"{schedule.name} {'x'.join(map(str, schedule.tile))} with {schedule.lds_stages} LDS "
                             f"stage(s) needs {need} B of LDS; {target_name} has {lds_limit}.")


@dataclass(frozen=True)
class PingPong8(_TiledSchedule):
    # lds_stages 2: direct-to-LDS double buffer (gfx950); 1: one LDS tile + register prefetch (gfx942)
    stagger: int = 1  # conditional barriers the second group runs before the loop (the first runs as many after)
    name: str = "pingpong8"

    def mma_split(self) -> tuple[int, int, int, int]:
        m, n, k = self.tile  # each group of 4 waves multiplies its half of A by all of B
        return m // 2 if m % 2 == 0 else m, 16, (m // 2 // 16) * (n // 16) * (k // 16), 4

    def _group_counts(self) -> tuple[int, int, int, int, int]:
        """Per wave of one group and K step: loads of its A half and B half, LDS reads of its A half and of all
        of B, and 16x16 MFMAs."""
        m, n, k = self.tile
        group_lanes = 4 * self.wave_size
        return (_instructions(m // 2 * k * self.element_bytes, group_lanes, LOAD_BYTES),
                _instructions(n // 2 * k * self.element_bytes, group_lanes, LOAD_BYTES),
                _instructions(m // 2 * k * self.element_bytes, group_lanes, READ_BYTES),
                _instructions(n * k * self.element_bytes, group_lanes, READ_BYTES),
                (m // 2 // 16) * (n // 16) * (k // 16) // 4)

    def program(self, k_steps: int = 4) -> Program:
        if self.lds_stages == 1:
            return self._register_prefetch_program(k_steps)
        return self._direct_program(k_steps)

    def _direct_program(self, k_steps: int) -> Program:
        """Two LDS stages filled by direct-to-LDS copies (gfx950), four phases a K step: (1) read B and the upper
        rows of this group's A half, (2) their MFMAs, (3) read the lower rows, (4) theirs. The groups, one phase
        apart, alternate memory and MFMA phases. Each part of a stage is refilled (for the step two on) in this
        group's next memory phase after every reader is done with it: B's half and the upper A rows in phase 3
        (both groups read B in the phases before), the lower A rows in the next step's phase 1. A copy is waited
        for where a reader needs it: B's half in phase 3 of the step before the one that reads it (the other group
        reads it one phase after this one's phase 4), the A rows a phase before this group reads them (a wave's wait
        covers its own copies: the barrier after the wait makes every wave's land before anyone reads)."""
        a_half, b_half, a_reads, b_reads, mfma = self._group_counts()
        split = a_reads > 1 and a_half > 1  # else (a small tile) the A half is one part, read in phase 1
        upper_copies = a_half // 2 if split else a_half
        first = (a_reads + 1) // 2 if split else a_reads  # reads of the upper rows; the rest read the lower ones
        groups = []
        for g in range(2):
            p = ProgramBuilder()
            upper = lambda t: f"A{g}u.{t % 2}"  # noqa: E731  (the stage of tile t)
            lower = (lambda t: f"A{g}l.{t % 2}") if split else upper  # noqa: E731
            own_b = lambda t: f"B{g}.{t % 2}"  # noqa: E731
            both_b = lambda t: (f"B0.{t % 2}", f"B1.{t % 2}")  # noqa: E731
            p.phase = "prologue"  # tile 0 whole, tile 1 but its lower A rows (step 0 copies those)
            for t in (0, 1):
                p.load(own_b(t), b_half)
                p.load(upper(t), upper_copies)
                if t == 0 and split:
                    p.load(lower(t), a_half - upper_copies)
            p.wait_writes(own_b(0), upper(0), lower(0), own_b(1), upper(1))
            for _ in range(self.stagger if g == 1 else 0):
                p.barrier()  # stagger: the second group falls one phase behind
            p.barrier()
            for i in range(k_steps):
                more = i + 1 < k_steps
                p.phase = f"step {i} read"
                if more and split:
                    p.load(lower(i + 1), a_half - upper_copies)  # read by this group in step i - 1's phase 3
                for b in both_b(i):
                    p.read(b, b_reads // 2)
                p.read(upper(i), first)
                p.wait_reads(upper(i), *both_b(i))
                p.barrier()
                p.phase = f"step {i} mfma"
                p.setprio(1)
                p.mma(mfma // 2, upper(i), *both_b(i))
                p.setprio(0)
                # A copy is waited for a phase before its first reader (a wave's wait covers its own copies only;
                # the barrier after it, every wave's): the lower rows this group reads next, and the next step's
                # B half, which the other group reads one phase after this one's phase 4.
                p.wait_writes(*((lower(i),) if split else ()), *((own_b(i + 1),) if more else ()))
                p.barrier()
                p.phase = f"step {i} read lower"
                if i + 2 < k_steps:
                    p.load(own_b(i + 2), b_half)  # both groups read this stage's B in their phase 1
                    p.load(upper(i + 2), upper_copies)
                if split:
                    p.read(lower(i), a_reads - first)
                    p.wait_reads(lower(i))
                p.barrier()
                p.phase = f"step {i} mfma lower"
                p.setprio(1)
                p.mma(mfma - mfma // 2, lower(i), *both_b(i))
                p.setprio(0)
                if more:
                    p.wait_writes(upper(i + 1))
                p.barrier()
            p.phase = "epilogue"
            for _ in range(self.stagger if g == 0 else 0):
                p.barrier()  # re-align: the first group waits for the second
            groups.append(tuple(p.ops))
        return Program(self.name, tuple(groups), ("group 0", "group 1"), 4)

    def _register_prefetch_program(self, k_steps: int) -> Program:
        """One LDS tile: the next tile is fetched into registers during the MFMA cluster and stored once both
        groups have read the current one. Four phases per K step (read, MFMA half, store, MFMA half): the
        leading group's store lands one phase after the lagging group's read, and the lagging group's store one
        phase before the leading group reads again."""
        a_half, b_half, a_reads, b_reads, mfma = self._group_counts()
        groups = []
        for g in range(2):
            p = ProgramBuilder()
            a, own_b, both_b = f"A{g}", f"B{g}", ("B0", "B1")
            p.phase = "prologue"
            p.fill_through_registers((own_b, b_half), (a, a_half))
            for _ in range(self.stagger if g == 1 else 0):
                p.barrier()
            p.barrier()
            for i in range(k_steps):
                more = i + 1 < k_steps
                p.phase = f"step {i} read"
                if more:  # next tile into registers, in flight under the reads and the MFMA cluster
                    p.fetch(own_b, b_half)
                    p.fetch(a, a_half)
                for b in both_b:
                    p.read(b, b_reads // 2)
                p.read(a, a_reads)
                p.wait_reads(a, *both_b)
                p.barrier()
                p.phase = f"step {i} mfma 1"
                p.setprio(1)
                p.mma(mfma // 2, a, *both_b)
                p.setprio(0)
                p.barrier()
                p.phase = f"step {i} store"
                if more:
                    p.wait_fetches(own_b, a)
                    p.store(own_b, b_half)
                    p.store(a, a_half)
                    p.wait_stores(own_b, a)
                p.barrier()
                p.phase = f"step {i} mfma 2"
                p.setprio(1)
                p.mma(mfma - mfma // 2, a, *both_b)
                p.setprio(0)
                p.barrier()
            p.phase = "epilogue"
            for _ in range(self.stagger if g == 0 else 0):
                p.barrier()
            groups.append(tuple(p.ops))
        return Program(f"{self.name} (1 LDS stage)", tuple(groups), ("group 0", "group 1"), 4)


@dataclass(frozen=True)
class Interleave4(_TiledSchedule):
    name: str = "interleave4"

    def mma_split(self) -> tuple[int, int, int, int]:
        m, n, k = self.tile  # 4 waves, each K step's MMAs in two halves
        return m, 16, (m // 16) * (n // 16) * (k // 16), 8

    def program(self, k_steps: int = 4) -> Program:
        m, n, k = self.tile
        lanes = 4 * self.wave_size
        a_loads = _instructions(m * k * self.element_bytes, lanes, LOAD_BYTES)
        b_loads = _instructions(n * k * self.element_bytes, lanes, LOAD_BYTES)
        a_reads = _instructions(m * k * self.element_bytes, lanes, READ_BYTES) // 2
        b_reads = _instructions(n * k * self.element_bytes, lanes, READ_BYTES) // 2
        mfma = (m // 16) * (n // 16) * (k // 16) // 4 // 2
        p = ProgramBuilder()
        p.phase = "prologue"
        p.load("A.0", a_loads)
        p.load("B.0", b_loads)
        p.wait_writes("A.0", "B.0")
        p.barrier()
        for i in range(k_steps):
            a, b = f"A.{i % 2}", f"B.{i % 2}"
            nxt = (f"A.{(i + 1) % 2}", f"B.{(i + 1) % 2}")
            p.phase = f"step {i}"
            p.read(a, a_reads)
            p.read(b, b_reads)
            if i + 1 < k_steps:
                p.load(nxt[0], a_loads)  # next stage's A goes out between the two MFMA halves
            p.wait_reads(a, b)
            p.mma(mfma, a, b)
            p.read(a, a_reads)
            p.read(b, b_reads)
            if i + 1 < k_steps:
                p.load(nxt[1], b_loads)
            p.wait_reads(a, b)
            p.mma(mfma, a, b)
            if i + 1 < k_steps:
                p.wait_writes(*nxt)
            p.barrier()
        return Program(self.name, (tuple(p.ops),), ("waves 0-3",), 4)


@dataclass(frozen=True)
class ProducerConsumer(_TiledSchedule):
    """Producer waves only move the next tile into the other LDS stage (directly, or through registers with
    `register_prefetch`); consumer waves only read the current stage and multiply. One barrier per K step."""

    tile: tuple[int, int, int] = (128, 256, 64)
    producers: int = 4
    consumers: int = 8
    register_prefetch: bool = False
    mma_k: int = 16
    name: str = "producer_consumer"

    def mma_split(self) -> tuple[int, int, int, int]:
        m, n, k = self.tile  # only the consumers multiply
        return m, self.mma_k, (m // 16) * (n // 16) * (k // self.mma_k), self.consumers

    def counts(self) -> tuple[int, int, int, int]:
        """Per wave and K step: producer loads of A and of B, consumer LDS reads, consumer 16x16 MMAs."""
        m, n, k = self.tile
        load_lanes, read_lanes = self.producers * self.wave_size, self.consumers * self.wave_size
        return (_instructions(m * k * self.element_bytes, load_lanes, LOAD_BYTES),
                _instructions(n * k * self.element_bytes, load_lanes, LOAD_BYTES),
                _instructions((m + n) * k * self.element_bytes, read_lanes, READ_BYTES),
                (m // 16) * (n // 16) * (k // self.mma_k) // self.consumers)

    def program(self, k_steps: int = 4) -> Program:
        a_loads, b_loads, reads, mfma = self.counts()
        producer, consumer = ProgramBuilder(), ProgramBuilder()
        producer.phase = consumer.phase = "prologue"
        self._fill(producer, "0", a_loads, b_loads)
        producer.barrier()
        consumer.barrier()
        for i in range(k_steps):
            s, nxt = i % 2, (i + 1) % 2
            producer.phase = consumer.phase = f"step {i}"
            if i + 1 < k_steps:
                self._fill(producer, str(nxt), a_loads, b_loads)
            consumer.read(f"A.{s}", reads // 2)
            consumer.read(f"B.{s}", reads - reads // 2)
            consumer.wait_reads(f"A.{s}", f"B.{s}")
            consumer.mma(mfma, f"A.{s}", f"B.{s}")
            producer.barrier()
            consumer.barrier()
        return Program(self.name, (tuple(producer.ops), tuple(consumer.ops)), ("producers", "consumers"),
                       self.consumers)

    def _fill(self, p: ProgramBuilder, stage: str, a_loads: int, b_loads: int) -> None:
        a, b = f"A.{stage}", f"B.{stage}"
        if self.register_prefetch:
            p.fill_through_registers((a, a_loads), (b, b_loads))
        else:
            p.load(a, a_loads)
            p.load(b, b_loads)
            p.wait_writes(a, b)


@dataclass(frozen=True)
class DoubleBuffered(_TiledSchedule):
    """One group of `waves` waves, two LDS stages, one barrier per K step: the next tile goes out while the
    current one is read and multiplied. With `register_prefetch` (targets without direct-to-LDS loads, such as
    gfx1151) the next tile is fetched into registers and stored into the other stage after the MMAs; with
    `fetch_slices` > 1 that fetch is split into pieces issued between groups of MMAs (the interleave variant)."""

    tile: tuple[int, int, int] = (128, 128, 64)
    waves: int = 4
    register_prefetch: bool = False
    fetch_slices: int = 1
    mma_k: int = 16  # K of the intrinsic: the MMA count per K step is (m/16)(n/16)(k/mma_k) over the waves
    name: str = "double_buffered"

    def mma_split(self) -> tuple[int, int, int, int]:
        m, n, k = self.tile
        return m, self.mma_k, (m // 16) * (n // 16) * (k // self.mma_k), self.waves

    def counts(self) -> tuple[int, int, int]:
        """Per wave and K step: global loads (16 B per lane), LDS reads (16 B per lane), 16x16 MMAs."""
        m, n, k = self.tile
        lanes = self.waves * self.wave_size
        tile_bytes = (m + n) * k * self.element_bytes
        return (_instructions(tile_bytes, lanes, LOAD_BYTES), _instructions(tile_bytes, lanes, READ_BYTES),
                (m // 16) * (n // 16) * (k // self.mma_k) // self.waves)

    def program(self, k_steps: int = 4) -> Program:
        loads, reads, mma = self.counts()
        p = ProgramBuilder()
        p.phase = "prologue"
        self._fill(p, "AB.0", loads)
        p.barrier()
        for i in range(k_steps):
            s, nxt = f"AB.{i % 2}", f"AB.{(i + 1) % 2}"
            more = i + 1 < k_steps
            p.phase = f"step {i}"
            spread = more and self.register_prefetch and self.fetch_slices > 1
            if more and not self.register_prefetch:
                p.load(nxt, loads)
            elif more and not spread:
                p.fetch(nxt, loads)  # the next tile into registers, in flight under this tile's MMAs
            p.read(s, reads)
            p.wait_reads(s)
            if spread:
                pieces = _split(loads, self.fetch_slices)
                for piece, mma_part in zip(pieces, _split(mma, len(pieces))):
                    p.fetch(nxt, piece)  # the next tile into registers, between the MMAs of this one
                    p.mma(mma_part, s)
            else:
                p.mma(mma, s)
            if more and self.register_prefetch:
                p.wait_fetches(nxt)
                p.store(nxt, loads)
                p.wait_stores(nxt)
            elif more:
                p.wait_writes(nxt)
            p.barrier()
        suffix = (f", register prefetch in {self.fetch_slices} slice(s)" if self.register_prefetch else "")
        return Program(self.name + suffix, (tuple(p.ops),), (f"waves 0-{self.waves - 1}",), self.waves)

    def _fill(self, p: ProgramBuilder, stage: str, loads: int) -> None:
        if self.register_prefetch:
            p.fill_through_registers((stage, loads))
        else:
            p.load(stage, loads)
            p.wait_writes(stage)


def _split(total: int, parts: int) -> list[int]:
    """`total` in `parts` nearly equal positive pieces (fewer when total < parts)."""
    parts = max(1, min(parts, total))
    return [total // parts + (i < total % parts) for i in range(parts)]


SCHEDULES = {cls.name: cls for cls in (PingPong8, Interleave4, ProducerConsumer, DoubleBuffered)}
