"""One wave's state, for a batch of workgroups, and the scalar and vector ALU instructions that change it.

A `Wave` stands for the same wave of every workgroup of a batch that runs in lockstep. It holds SGPRs as a
[128, batch] uint64 array and SCC as [batch] (scalar operands are read as [batch] arrays, constants as [1]), VGPRs
and AGPRs as numpy `uint32` arrays of shape [registers, batch × lanes], EXEC as a boolean flag per lane, the program
counter and the queues of memory operations still in flight (see memory.py). A scalar branch that the batch's
workgroups disagree on raises `Divergence`, and the dispatch forks the batch (run.py). Instructions are decoded
once: `DECODERS[opcode](inst, ctx)` returns a closure `run(wave)`; the ALU decoders live here, memory and matrix
decoders register themselves from their own modules. An opcode without a decoder is an `EmulatorError` at decode
time, naming it: nothing is skipped.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import re
from typing import Callable

import numpy as np

from transforms.errors import UserError
from ..targets import isa_family
from .isa import EXEC, M0, NULL, VCC, Instruction, Kernel, Reg, Sext

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


class EmulatorError(UserError, RuntimeError):
    """The kernel cannot be emulated (unknown instruction, bad operand, wild access); one sentence."""


class RefusedInstruction(EmulatorError):
    """The kernel uses an opcode the emulator declines to model (`REFUSED` says why)."""


@dataclass(frozen=True)
class Hazard:
    """A concurrency defect found while running: a race on LDS or a register read before its load landed."""

    kind: str  # 'lds-race', 'pending-read', 'pending-write', 'lds-out-of-range', 'wmma-replication', 'wait-states'
    message: str


@dataclass(frozen=True)
class DecodeContext:
    kernel: Kernel
    arch: str  # 'gfx942', 'gfx950', 'gfx1151'
    lanes: int
    lds_banks: int
    cache_swizzle: bool = False  # buffer descriptors may carry a cache-swizzle stride (`Target.buffer_cache_swizzle`)

    @cached_property
    def gfx9(self) -> bool:
        """GFX9's encoding generation (CDNA), as the target table's ISA family says (read once: kernels ask it
        as they run)."""
        return isa_family(self.arch).gfx9


@dataclass
class Pending:
    """A memory operation issued but not yet retired by an `s_waitcnt`."""

    retire: Callable  # callable(wave) applying the memory effect and register writes
    dests: tuple = ()  # (kind, first, count) register ranges written at retirement
    lds: object = None  # (byte indices, is_write) while the op's LDS window is open
    pc: int = 0


class Divergence(Exception):
    """The workgroups of a batch disagree on a scalar branch; `taken` says, per workgroup, which took it."""

    def __init__(self, taken: np.ndarray, pc: int):
        super().__init__(f"workgroups of one batch diverge at instruction {pc}")
        self.taken = taken
        self.pc = pc


class Wave:
    """The state of one wave in each of `batch` workgroups that run in lockstep; `workgroup` gives access to LDS,
    global memory and the hazard detector.

    Every vector register holds `lanes` = batch × wave-size values, workgroup after workgroup; every scalar register
    holds `batch` values (`s` is a [128, batch] uint64 array), as does SCC. A batch of one is a plain wave."""

    def __init__(self, wave_id: int, workgroup, lanes: int, vgprs: int, agprs: int, batch: int = 1):
        self.id = wave_id
        self.workgroup = workgroup
        self.batch = batch
        self.wave_lanes = lanes  # the hardware's wave size
        self.lanes = lanes * batch
        self.lane_batch = np.repeat(np.arange(batch), lanes)  # which workgroup of the batch each lane belongs to
        self.s = np.zeros((128, batch), np.uint64)
        self.v = np.zeros((vgprs, self.lanes), np.uint32)
        self.a = np.zeros((max(agprs, 1), self.lanes), np.uint32)
        self.scc = np.zeros(batch, np.uint64)
        self.pc = 0
        self.cur = 0  # index of the instruction executing now, for messages
        self.exec = np.ones(self.lanes, bool)
        self.exec_all = True
        self.vm: deque[Pending] = deque()
        self.lgkm: deque[Pending] = deque()
        self.pending = {"v": [0] * vgprs, "a": [0] * max(agprs, 1), "s": [0] * 128}
        self.done = False
        self.at_barrier = False
        self.stop = False  # leave the current slice (barrier or end)
        self.hits: list[int] = []  # per-instruction execution counts, set by the dispatcher
        self.trace: list[int] | None = None  # the pcs it executed, in order, when the dispatch records traces
        self.lds_trace: list[int] | None = None  # bank passes of each LDS access it made, in order
        self.private = None  # scratch bytes [lanes, size], allocated on first use
        self.executed = 0  # instructions run, to catch a wave stuck in a loop

    def spread(self, value) -> np.ndarray:
        """A per-workgroup scalar ([batch] or [1]) as one value per lane."""
        return np.broadcast_to(value, (self.batch,)).repeat(self.wave_lanes)

    # Lane masks live in SGPR pairs (wave64) or single SGPRs (wave32).
    def mask_bits(self, index: int) -> np.ndarray:
        """The [batch] lane mask in s[index] (and s[index + 1] for wave64) as uint64."""
        return self.s[index] | (self.s[index + 1] << np.uint64(32)) if self.wave_lanes == 64 else self.s[index]

    def read_mask(self, index: int) -> np.ndarray:
        return lanes_of(self.mask_bits(index), self.wave_lanes)

    def write_mask(self, index: int, mask: np.ndarray) -> None:
        bits = bits_of(mask, self.wave_lanes)
        self.s[index] = bits & np.uint64(MASK32)
        if self.wave_lanes == 64:
            self.s[index + 1] = bits >> np.uint64(32)
        if index == EXEC:
            self.sync_exec()

    def sync_exec(self) -> None:
        self.exec = lanes_of(self.mask_bits(EXEC), self.wave_lanes)
        self.exec_all = bool(self.exec.all())

    def hazard(self, kind: str, message: str) -> None:
        self.workgroup.report(Hazard(kind, message))

    def where(self) -> str:
        inst = self.workgroup.code.instructions[self.cur]
        return f"'{inst.text}' (line {inst.line}) in wave {self.id} of workgroup {self.workgroup.id}"


_LANE_BITS = np.uint64(1) << np.arange(64, dtype=np.uint64)


def lanes_of(bits, lanes: int) -> np.ndarray:
    """[batch] masks (uint64 bits) as one flag per lane, workgroup after workgroup."""
    return ((np.atleast_1d(np.asarray(bits, np.uint64))[:, None] & _LANE_BITS[None, :lanes]) != 0).reshape(-1)


def bits_of(mask: np.ndarray, lanes: int) -> np.ndarray:
    """One flag per lane as [batch] uint64 masks."""
    packed = np.packbits(mask.reshape(-1, lanes), axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8" if lanes == 64 else "<u4").reshape(-1).astype(np.uint64)


# ---------------------------------------------------------------------------------------------------- operands


def sreg_index(op) -> int:
    if not isinstance(op, Reg) or op.kind != "s":
        raise EmulatorError(f"expected a scalar register, got {op!r}.")
    return op.index


# The flat-address apertures a kernel reads as operands: the LDS window's base, which Linux's amdkfd programs at
# 1 << 48 on GFX9 and later (kfd_flat_memory.c, MAKE_LDS_APP_BASE_V9); a 32-bit read gives its upper half, since
# its lower half is 0. Kernels that build generic pointers to LDS (HipKittens' shared allocator) take offsets back
# from the low 32 bits, so only the arithmetic, never a flat access through it, depends on the value.
APERTURES = {"src_shared_base": 1 << 48}


def scalar_reader(op, bits: int = 32):
    """Closure reading a scalar operand as unsigned `bits`-bit values: a [batch] (or, for constants, [1]) uint64
    array that nothing writes through."""
    if isinstance(op, int):
        value = np.array([op & (MASK64 if bits == 64 else MASK32)], np.uint64)
        return lambda w: value
    if isinstance(op, str) and op in APERTURES:
        aperture = np.array([APERTURES[op] if bits == 64 else APERTURES[op] >> 32], np.uint64)
        return lambda w: aperture
    if isinstance(op, Reg) and op.kind == "s":
        i = op.index
        if i == NULL:
            zero = np.zeros(1, np.uint64)
            return lambda w: zero
        if bits == 64:
            return lambda w: w.s[i] | (w.s[i + 1] << np.uint64(32))
        return lambda w: w.s[i].copy()
    raise EmulatorError(f"unsupported scalar operand {op!r}.")


def scalar_writer(op, bits: int = 32):
    """Closure writing [batch] (or broadcastable) values, bool, int or uint64, to a scalar register (pair)."""
    i = sreg_index(op)
    if i == NULL:
        return lambda w, value: None
    touches_exec = i <= EXEC + 1 and i + bits // 32 > EXEC
    if bits == 64:
        def write64(w, value):
            value = np.asarray(value).astype(np.uint64)
            w.s[i] = value & np.uint64(MASK32)
            w.s[i + 1] = value >> np.uint64(32)
            if touches_exec:
                w.sync_exec()
        return write64

    def write32(w, value):
        w.s[i] = np.asarray(value).astype(np.uint64) & np.uint64(MASK32)
        if touches_exec:
            w.sync_exec()
    return write32


def vector_reader(op, ctx: DecodeContext):
    """Closure reading a 32-bit VALU source: a [lanes] uint32 array, or a uint32 constant that broadcasts."""
    if isinstance(op, int):
        value = np.uint32(op & MASK32)
        return lambda w: value
    if isinstance(op, Reg) and op.kind == "s":
        i = op.index
        return lambda w: w.s[i].astype(np.uint32).repeat(w.wave_lanes)
    if isinstance(op, Reg) and op.kind in "va":
        i, kind = op.index, op.kind

        def read(w):
            if w.pending[kind][i]:
                w.hazard("pending-read", f"{w.where()} reads {kind}{i} while a load into it is still in flight.")
            return w.v[i] if kind == "v" else w.a[i]
        return read
    raise EmulatorError(f"unsupported vector operand {op!r}.")


def vector_reader64(op, ctx: DecodeContext):
    """A 64-bit VALU source as uint64 (register pair or scalar pair or constant)."""
    if isinstance(op, int):
        value = np.uint64(op & MASK64)
        return lambda w: value
    if isinstance(op, Reg) and op.kind == "s":
        i = op.index
        return lambda w: (w.s[i] | (w.s[i + 1] << np.uint64(32))).repeat(w.wave_lanes)
    lo, hi = vector_reader(Reg(op.kind, op.index), ctx), vector_reader(Reg(op.kind, op.index + 1), ctx)
    return lambda w: lo(w).astype(np.uint64) | (hi(w).astype(np.uint64) << np.uint64(32))


def vector_writer(op):
    """Closure writing a [lanes] uint32 result to a VGPR/AGPR under EXEC."""
    if not isinstance(op, Reg) or op.kind not in "va":
        raise EmulatorError(f"expected a vector register destination, got {op!r}.")
    i, kind = op.index, op.kind

    def write(w, value):
        if w.pending[kind][i]:
            w.hazard("pending-write", f"{w.where()} writes {kind}{i} while a load into it is still in flight.")
        regs = w.v if kind == "v" else w.a
        if w.exec_all:
            regs[i] = value
        else:
            regs[i] = np.where(w.exec, value, regs[i])
    return write


def read_rows(w, kind: str, first: int, count: int) -> np.ndarray:
    """Registers [first, first+count) as a [count, lanes] array, flagging in-flight loads."""
    pend = w.pending[kind]
    for r in range(first, first + count):
        if pend[r]:
            w.hazard("pending-read", f"{w.where()} reads {kind}{r} while a load into it is still in flight.")
            break
    return (w.v if kind == "v" else w.a)[first:first + count]


# ---------------------------------------------------------------------------------------------------- scalar ALU

DECODERS: dict = {}
# Opcodes IREE's GEMMs emit that the emulator declines to model, each with its reason (one clause). Decoding one
# stops the run with the reason; results/emulator/opcode-coverage.md lists them.
REFUSED: dict[str, str] = {}


def decoder(*names):
    def register(fn):
        for name in names:
            DECODERS[name] = fn
        return fn
    return register


def _signed32(x) -> np.ndarray:
    """32-bit values (uint64 arrays) read as signed, in int64."""
    return (np.asarray(x).astype(np.int64) ^ 0x80000000) - 0x80000000


def _lshl_add(a, b, shift: int):
    total = (a << np.uint64(shift)) + b
    return total & MASK32, total > MASK32


def _low_bits(width):
    """(1 << width) - 1 for widths 0-64 (uint64)."""
    width = np.asarray(width).astype(np.uint64)
    return np.where(width >= 64, np.uint64(MASK64), (np.uint64(1) << np.minimum(width, np.uint64(63))) - np.uint64(1))


def _overflows32(total) -> np.ndarray:
    return (total < -2**31) | (total >= 2**31)


def _nonzero(value):
    """A signed 32-bit result (int64) as its bit pattern, and SCC = result != 0."""
    value = np.asarray(value, np.int64)
    return value & MASK32, value != 0


def _bfe_i32_scalar(a, b):
    """The signed field of S0 at offset S1[4:0] and width S1[22:16] (0: none), sign-extended from its top bit; a
    field reaching past bit 31 reads copies of the sign bit (the shift is arithmetic)."""
    shifted = _signed32(a) >> (b & np.uint64(31)).astype(np.int64)
    width = ((b >> np.uint64(16)) & np.uint64(0x7F)).astype(np.int64)
    narrow = np.minimum(width, 32)
    field = shifted & ((np.int64(1) << narrow) - 1)
    signed = np.where((field >> np.maximum(narrow - 1, 0)) & 1, field - (np.int64(1) << narrow), field)
    return np.where(width == 0, 0, np.where(width >= 32, shifted, signed))


def _bfe_i64_scalar(a, b):
    """The signed field of the 64-bit S0 at offset S1[5:0] and width S1[22:16] (0: none; 64 or more: all of what
    the arithmetic shift left), sign-extended from its top bit; as a 64-bit pattern, and SCC = result != 0."""
    shifted = (np.asarray(a, np.uint64).view(np.int64) >> (b & np.uint64(63)).astype(np.int64)).view(np.uint64)
    width = (b >> np.uint64(16)) & np.uint64(0x7F)
    mask = _low_bits(width)
    field = shifted & mask
    negative = (field >> np.maximum(width, np.uint64(1)) - np.uint64(1)) & np.uint64(1)
    value = np.where(width == 0, np.uint64(0), np.where(width >= 64, shifted,
                                                        np.where(negative == 1, field | ~mask, field)))
    return value, value != 0


def _bfe_u32_scalar(a, b):
    field = (a >> (b & np.uint64(31))) & _low_bits((b >> np.uint64(16)) & np.uint64(0x7F))
    return field, field != 0


# Scalar operands arrive as [batch] (or [1]) uint64 arrays; results may be any integer array (the writer masks).
_SOP2 = {  # name -> (bits, fn(a, b) -> (result, scc or None))
    "s_and_b32": (32, lambda a, b: (a & b, (a & b) != 0)),
    "s_or_b32": (32, lambda a, b: (a | b, (a | b) != 0)),
    "s_xor_b32": (32, lambda a, b: (a ^ b, (a ^ b) != 0)),
    "s_and_b64": (64, lambda a, b: (a & b, (a & b) != 0)),
    "s_or_b64": (64, lambda a, b: (a | b, (a | b) != 0)),
    "s_xor_b64": (64, lambda a, b: (a ^ b, (a ^ b) != 0)),
    "s_andn2_b64": (64, lambda a, b: (a & ~b, (a & ~b) != 0)),
    "s_andn2_b32": (32, lambda a, b: (a & ~b & MASK32, (a & ~b & MASK32) != 0)),
    "s_lshl_b32": (32, lambda a, b: ((a << (b & 31)) & MASK32, ((a << (b & 31)) & MASK32) != 0)),
    "s_lshr_b32": (32, lambda a, b: (a >> (b & 31), (a >> (b & 31)) != 0)),
    "s_add_i32": (32, lambda a, b: ((a + b) & MASK32, _overflows32(_signed32(a) + _signed32(b)))),
    "s_sub_i32": (32, lambda a, b: ((a - b) & MASK32, _overflows32(_signed32(a) - _signed32(b)))),
    "s_add_u32": (32, lambda a, b: ((a + b) & MASK32, a + b > MASK32)),
    "s_sub_u32": (32, lambda a, b: ((a - b) & MASK32, b > a)),
    "s_min_u32": (32, lambda a, b: (np.minimum(a, b), a < b)),
    # SCC iff the first input is selected: "SCC = S0.u32 >= S1.u32" (AMD CDNA4 ISA, S_MAX_U32; the same line in the
    # CDNA pcode tables of results/emulator/opcode-audit.md); no CDNA hardware here settles ties.
    "s_max_u32": (32, lambda a, b: (np.maximum(a, b), a >= b)),
    "s_max_i32": (32, lambda a, b: (np.where(_signed32(a) >= _signed32(b), a, b), _signed32(a) >= _signed32(b))),
    "s_min_i32": (32, lambda a, b: (np.where(_signed32(a) < _signed32(b), a, b), _signed32(a) < _signed32(b))),
    "s_mul_i32": (32, lambda a, b: ((_signed32(a) * _signed32(b)) & MASK32, None)),
    # "tmp = (64'U(S0.u32) << 1U) + 64'U(S1.u32); SCC = tmp >= 0x100000000ULL" (CDNA4 ISA): bits shifted out of
    # 32 count as overflow too
    "s_lshl1_add_u32": (32, lambda a, b: _lshl_add(a, b, 1)),
    "s_lshl2_add_u32": (32, lambda a, b: _lshl_add(a, b, 2)),
    "s_lshl3_add_u32": (32, lambda a, b: _lshl_add(a, b, 3)),
    "s_lshl4_add_u32": (32, lambda a, b: _lshl_add(a, b, 4)),
    # bit field extract: offset in bits 4:0 of the second operand, width in bits 22:16
    "s_bfe_u32": (32, _bfe_u32_scalar),
    # The three below came with Triton's kernels (LLVM's signed division by a runtime value and its sign fix-ups).
    # "D0.i32 = (S0.i32 >> S1[4:0].u32); SCC = D0.i32 != 0" (CDNA3 ISA, S_ASHR_I32): arithmetic shift
    "s_ashr_i32": (32, lambda a, b: _nonzero(_signed32(a) >> (b & np.uint64(31)).astype(np.int64))),
    # "D0.u32 = 32'U((64'U(S0.u32) * 64'U(S1.u32)) >> 32U)" (CDNA3 ISA, S_MUL_HI_U32); SCC is not written
    "s_mul_hi_u32": (32, lambda a, b: ((a * b) >> np.uint64(32), None)),
    # "tmp.i32 = ((S0.i32 >> S1[4:0].u32) & ((1 << S1[22:16].u32) - 1)); D0.i32 = signext_from_bit(tmp.i32,
    # S1[22:16].u32); SCC = D0.i32 != 0" (CDNA3 ISA, S_BFE_I32)
    "s_bfe_i32": (32, lambda a, b: _nonzero(_bfe_i32_scalar(a, b))),
    # The two below came with HipKittens' kernel (a 64-bit row pitch from an int: sign-extend, then bytes).
    # "D0.u64 = (S0.u64 << S1[5 : 0].u32); SCC = D0.u64 != 0ULL" (CDNA3 ISA, S_LSHL_B64)
    "s_lshl_b64": (64, lambda a, b: ((a << (b & np.uint64(63))) & np.uint64(MASK64),
                                     ((a << (b & np.uint64(63))) & np.uint64(MASK64)) != 0)),
    # "tmp.i64 = ((S0.i64 >> S1[5 : 0].u32) & ((1LL << S1[22 : 16].u32) - 1LL)); D0.i64 =
    # signext_from_bit(tmp.i64, S1[22 : 16].u32); SCC = D0.i64 != 0LL" (CDNA3 ISA, S_BFE_I64)
    "s_bfe_i64": (64, lambda a, b: _bfe_i64_scalar(a, b)),
}


@decoder("s_addc_u32", "s_subb_u32")
def _sop2_carry(inst: Instruction, ctx):
    """Add with carry-in / subtract with borrow-in from SCC; SCC becomes the carry / borrow out."""
    write = scalar_writer(inst.operands[0], 32)
    a, b = scalar_reader(inst.operands[1], 32), scalar_reader(inst.operands[2], 32)
    add = inst.opcode == "s_addc_u32"

    def run(w):
        x, y, carry = a(w).astype(np.int64), b(w).astype(np.int64), np.asarray(w.scc).astype(np.int64)
        total = x + y + carry if add else x - y - carry
        write(w, total & MASK32)
        w.scc = (total > MASK32 if add else total < 0).astype(np.uint64)
    return run


@decoder(*_SOP2)
def _sop2(inst: Instruction, ctx):
    bits, fn = _SOP2[inst.opcode]
    write = scalar_writer(inst.operands[0], bits)
    a, b = scalar_reader(inst.operands[1], bits), scalar_reader(inst.operands[2], 32 if "shl" in inst.opcode else bits)

    def run(w):
        value, scc = fn(a(w), b(w))
        write(w, value)
        if scc is not None:
            w.scc = np.asarray(scc).astype(np.uint64)
    return run


def _bit_reverse32(x) -> np.ndarray:
    bits = (np.asarray(x, np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)
    return (bits << np.arange(31, -1, -1, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


@decoder("s_mov_b32", "s_mov_b64", "s_movk_i32", "s_brev_b32", "s_not_b32")
def _sop1(inst, ctx):
    bits = 64 if inst.opcode.endswith("b64") else 32
    write = scalar_writer(inst.operands[0], bits)
    src = inst.operands[1]
    if inst.opcode == "s_movk_i32":
        value = ((src & 0xFFFF) ^ 0x8000) - 0x8000  # the 16-bit immediate is sign-extended
        return lambda w: write(w, value & MASK32)
    read = scalar_reader(src, bits)
    if inst.opcode == "s_not_b32":
        def run_not(w):
            value = ~read(w) & MASK32
            write(w, value)
            w.scc = (value != 0).astype(np.uint64)
        return run_not
    if inst.opcode == "s_brev_b32":
        return lambda w: write(w, _bit_reverse32(read(w)))
    return lambda w: write(w, read(w))


@decoder("s_abs_i32")
def _abs_i32(inst, ctx):
    """"D0.i32 = S0.i32 < 0 ? -S0.i32 : S0.i32; SCC = D0.i32 != 0" (CDNA3 ISA, S_ABS_I32): -2^31 stays -2^31."""
    write, read = scalar_writer(inst.operands[0]), scalar_reader(inst.operands[1])

    def run(w):
        value, scc = _nonzero(np.abs(_signed32(read(w))))
        write(w, value)
        w.scc = scc.astype(np.uint64)
    return run


@decoder("s_cselect_b32", "s_cselect_b64")
def _cselect(inst, ctx):
    """SDST = SCC ? S0 : S1 (CDNA3 ISA, SOP2); SCC is not written."""
    bits = 64 if inst.opcode.endswith("64") else 32
    write = scalar_writer(inst.operands[0], bits)
    a, b = scalar_reader(inst.operands[1], bits), scalar_reader(inst.operands[2], bits)
    return lambda w: write(w, np.where(np.asarray(w.scc) != 0, a(w), b(w)))


@decoder("s_bitset0_b32", "s_bitset1_b32")
def _bitset(inst, ctx):
    """SDST[S0[4:0]] = 0 or 1; the other bits of SDST stay, SCC is not written (CDNA3 ISA, SOP1)."""
    write, keep = scalar_writer(inst.operands[0], 32), scalar_reader(inst.operands[0], 32)
    bit = scalar_reader(inst.operands[1], 32)
    if inst.opcode == "s_bitset1_b32":
        return lambda w: write(w, keep(w) | (np.uint64(1) << (bit(w) & np.uint64(31))))
    return lambda w: write(w, keep(w) & ~(np.uint64(1) << (bit(w) & np.uint64(31))) & MASK32)


_SCMP = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
         "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@decoder("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64")
def _bitcmp(inst, ctx):
    """"SCC = S0.u32[S1.u32[4 : 0]] == 1'1U" (CDNA3 ISA, S_BITCMP1_B32; bitcmp0 tests for 0, the b64 forms take
    S1[5:0] of a 64-bit S0); only SCC is written."""
    bits = 64 if inst.opcode.endswith("b64") else 32
    a, b = scalar_reader(inst.operands[0], bits), scalar_reader(inst.operands[1])
    want = np.uint64(1 if "bitcmp1" in inst.opcode else 0)

    def run(w):
        w.scc = (((a(w) >> (b(w) & np.uint64(bits - 1))) & np.uint64(1)) == want).astype(np.uint64)
    return run


@decoder(*(f"s_cmp{k}_{c}_{t}" for k in ("", "k") for c in _SCMP for t in ("u32", "i32")),
         "s_cmp_eq_u64", "s_cmp_lg_u64")  # "SCC = S0.u64 == S1.u64" (CDNA3 ISA; only eq and lg exist for 64 bits)
def _scmp(inst, ctx):
    _, kind, cond, typ = inst.opcode.split("_")
    cmp = _SCMP[cond]
    if typ == "u64":
        a, b = scalar_reader(inst.operands[0], 64), scalar_reader(inst.operands[1], 64)

        def run_wide(w):
            w.scc = cmp(a(w), b(w)).astype(np.uint64)
        return run_wide
    a = scalar_reader(inst.operands[0])
    if kind == "cmpk":  # the 16-bit literal: "32'I(signext(S1.i16))" for _i32, "32'U(S1.u16)" for _u32 (CDNA4 ISA)
        literal = inst.operands[1] & 0xFFFF
        b = scalar_reader((literal ^ 0x8000) - 0x8000 & MASK32 if typ == "i32" else literal)
    else:
        b = scalar_reader(inst.operands[1])
    if typ == "i32":
        def run_signed(w):
            w.scc = cmp(_signed32(a(w)), _signed32(b(w))).astype(np.uint64)
        return run_signed

    def run(w):
        w.scc = cmp(a(w), b(w)).astype(np.uint64)
    return run


@decoder("s_and_saveexec_b64", "s_and_saveexec_b32", "s_or_saveexec_b64", "s_or_saveexec_b32",
         "s_andn2_saveexec_b64", "s_andn2_saveexec_b32", "s_and_not1_saveexec_b64", "s_and_not1_saveexec_b32")
def _saveexec(inst, ctx):
    bits = 64 if inst.opcode.endswith("64") else 32
    if (bits == 64) != (ctx.lanes == 64):
        raise EmulatorError(f"{inst.opcode} in a wave{ctx.lanes} kernel.")
    write = scalar_writer(inst.operands[0], bits)
    src = scalar_reader(inst.operands[1], bits)
    exec_read = scalar_reader(Reg("s", EXEC), bits)
    exec_write = scalar_writer(Reg("s", EXEC), bits)
    mask = np.uint64((1 << bits) - 1)
    op = {"s_and": lambda a, b: a & b, "s_or": lambda a, b: a | b,
          "s_andn2": lambda a, b: a & ~b & mask,  # gfx11 calls it s_and_not1
          "s_and_not1": lambda a, b: a & ~b & mask}[inst.opcode.split("_saveexec")[0]]  # EXEC = S0 op EXEC

    def run(w):
        old = exec_read(w)
        new = op(src(w), old)
        write(w, old)  # SDST gets the old EXEC before EXEC changes (the source is read first)
        exec_write(w, new)
        w.scc = (new != 0).astype(np.uint64)
    return run


def _branch_target(inst, ctx) -> int:
    label = inst.operands[0]
    if label not in ctx.kernel.labels:
        raise EmulatorError(f"branch to unknown label {label!r} at line {inst.line}.")
    return ctx.kernel.labels[label]


@decoder("s_branch")
def _branch(inst, ctx):
    target = _branch_target(inst, ctx)

    def run(w):
        w.pc = target
    return run


_CONDITIONS = {  # -> [batch] (or [1]) flags: take the branch
    "s_cbranch_scc0": lambda w: np.asarray(w.scc) == 0, "s_cbranch_scc1": lambda w: np.asarray(w.scc) == 1,
    "s_cbranch_vccz": lambda w: w.mask_bits(VCC) == 0, "s_cbranch_vccnz": lambda w: w.mask_bits(VCC) != 0,
    "s_cbranch_execz": lambda w: w.mask_bits(EXEC) == 0, "s_cbranch_execnz": lambda w: w.mask_bits(EXEC) != 0,
}


@decoder(*_CONDITIONS)
def _cbranch(inst, ctx):
    """A scalar branch; the workgroups of a batch must agree on it, or the batch is split (`Divergence`)."""
    target, cond = _branch_target(inst, ctx), _CONDITIONS[inst.opcode]

    def run(w):
        taken = np.atleast_1d(cond(w))
        if taken.all():
            w.pc = target
        elif taken.any():
            raise Divergence(np.broadcast_to(taken, (w.batch,)).copy(), w.cur)
    return run


@decoder("s_nop", "s_setprio", "s_sched_barrier", "s_delay_alu", "s_clause", "s_sendmsg", "s_waitcnt_expcnt",
         "s_set_gpr_idx_off", "s_sched_group_barrier", "s_waitcnt_vscnt")
def _no_effect(inst, ctx):
    # Timing and power hints; s_sendmsg is only ever MSG_DEALLOC_VGPRS at the end of gfx11 kernels; vector stores
    # complete at issue in this model, so their counter (vscnt) has nothing to wait for.
    if inst.opcode == "s_sendmsg" and "DEALLOC_VGPRS" not in inst.operands[0]:
        raise EmulatorError(f"unsupported message '{inst.text}' at line {inst.line}.")
    return lambda w: None


# ---------------------------------------------------------------------------------------------------- vector ALU

u32 = np.uint32


def _lo16(x):
    return x & u32(0xFFFF)


def _sext16(x):
    return (x & u32(0xFFFF)).astype(np.uint16).view(np.int16).astype(np.int32)


def _sext24(x):
    return ((x & u32(0xFFFFFF)).astype(np.int64) ^ 0x800000) - 0x800000


def _high_word(product) -> np.ndarray:
    """Bits 63:32 of 64-bit products (uint64), as uint32."""
    return (product >> np.uint64(32)).astype(np.uint32)


def _i32(x) -> np.ndarray:
    """A uint32 source (array or broadcast scalar) read as int32."""
    return np.atleast_1d(np.asarray(x, np.uint32)).view(np.int32)


_VOP2: dict[str, Callable] = {  # name (without _e32/_e64) -> fn(src0, src1)
    "v_add_u32": lambda a, b: a + b,
    "v_add_nc_u32": lambda a, b: a + b,
    "v_sub_u32": lambda a, b: a - b,
    "v_sub_nc_u32": lambda a, b: a - b,
    "v_subrev_u32": lambda a, b: b - a,
    "v_and_b32": lambda a, b: a & b,
    "v_or_b32": lambda a, b: a | b,
    "v_xor_b32": lambda a, b: a ^ b,
    "v_lshlrev_b32": lambda a, b: b << (a & u32(31)),
    "v_lshrrev_b32": lambda a, b: b >> (a & u32(31)),
    "v_ashrrev_i32": lambda a, b: (np.asarray(b).view(np.int32) >> (a & u32(31)).astype(np.int32)).view(np.uint32),
    "v_mul_u32_u24": lambda a, b: (a & u32(0xFFFFFF)) * (b & u32(0xFFFFFF)),
    "v_mul_i32_i24": lambda a, b: ((_sext24(a) * _sext24(b)) & 0xFFFFFFFF).astype(np.uint32),
    # bits 63:32 of the 48-bit product (CDNA3 ISA, V_MUL_HI_U32_U24 / V_MUL_HI_I32_I24; LLVM divides by small
    # constants with them)
    "v_mul_hi_u32_u24": lambda a, b: (((a & u32(0xFFFFFF)).astype(np.uint64) * (b & u32(0xFFFFFF)).astype(np.uint64))
                                      >> np.uint64(32)).astype(np.uint32),
    "v_mul_hi_i32_i24": lambda a, b: (((_sext24(a) * _sext24(b)) >> 32) & 0xFFFFFFFF).astype(np.uint32),
    "v_mul_lo_u32": lambda a, b: a * b,
    # "D0.u32 = 32'U((64'U(S0.u32) * 64'U(S1.u32)) >> 32U)" (CDNA3 ISA, V_MUL_HI_U32; VOP3 only)
    "v_mul_hi_u32": lambda a, b: _high_word(np.asarray(a).astype(np.uint64) * np.asarray(b).astype(np.uint64)),
    "v_min_u32": np.minimum,
    "v_max_u32": np.maximum,
    "v_min_i32": lambda a, b: np.minimum(_i32(a), _i32(b)).view(np.uint32),
    "v_max_i32": lambda a, b: np.maximum(_i32(a), _i32(b)).view(np.uint32),
    # 16-bit VOP2 results: gfx9 leaves the high half zero; gfx10+ keep it (`_KEEPS_HIGH_HALF`).
    "v_lshlrev_b16": lambda a, b: _lo16(_lo16(b) << (a & u32(15))),
    "v_lshrrev_b16": lambda a, b: _lo16(b) >> (a & u32(15)),
    "v_ashrrev_i16": lambda a, b: _lo16((_sext16(b) >> (a & u32(15)).astype(np.int32)).astype(np.uint32)),
    "v_add_u16": lambda a, b: _lo16(a + b),
    "v_sub_u16": lambda a, b: _lo16(a - b),
}

# "On gfx10, all 16-bit instructions preserve the high bits" (LLVM GCNSubtarget::zeroesHigh16BitsOfDest, which
# zeroes them up to gfx9; the RDNA3 pcode writes D0.u16 only): a gfx11 fake-16 result keeps bits 31:16 of vdst.
_KEEPS_HIGH_HALF = {"v_lshlrev_b16", "v_lshrrev_b16", "v_ashrrev_i16", "v_add_u16", "v_sub_u16"}

# Unsigned 32-bit add and subtract with the `clamp` modifier: the result saturates at 0 and 2^32-1 instead of
# wrapping (CDNA3 ISA, VOP3 integer clamp; LLVM selects it for usub.sat / uadd.sat). Operands arrive as int64.
_CLAMPED: dict[str, Callable] = {
    "v_add_u32": lambda a, b: np.minimum(a + b, MASK32),
    "v_add_nc_u32": lambda a, b: np.minimum(a + b, MASK32),
    "v_sub_u32": lambda a, b: np.maximum(a - b, 0),
    "v_sub_nc_u32": lambda a, b: np.maximum(a - b, 0),
    "v_subrev_u32": lambda a, b: np.maximum(b - a, 0),
}

_VOP3: dict[str, Callable] = {  # three-source ops
    "v_bfi_b32": lambda a, b, c: (a & b) | (~a & c),  # bitfield insert: S1 where S0 is set, else S2
    "v_mad_i32_i24": lambda a, b, c: ((_sext24(a) * _sext24(b) + c.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32),
    "v_add3_u32": lambda a, b, c: a + b + c,
    "v_or3_b32": lambda a, b, c: a | b | c,
    "v_and_or_b32": lambda a, b, c: (a & b) | c,
    "v_lshl_or_b32": lambda a, b, c: (a << (b & u32(31))) | c,
    "v_lshl_add_u32": lambda a, b, c: (a << (b & u32(31))) + c,
    "v_add_lshl_u32": lambda a, b, c: (a + b) << (c & u32(31)),
    "v_mad_u32_u24": lambda a, b, c: (a & u32(0xFFFFFF)) * (b & u32(0xFFFFFF)) + c,
    "v_bfe_u32": lambda a, b, c: (a >> (b & u32(31))) & ((u32(1) << (c & u32(31))) - u32(1)),
    "v_xad_u32": lambda a, b, c: (a ^ b) + c,
    "v_perm_b32": lambda a, b, c: _perm(a, b, c),
    # the median of three, signed or unsigned (CDNA3 ISA, VOP3A)
    "v_med3_i32": lambda a, b, c: _med3(_i32(a), _i32(b), _i32(c)).view(np.uint32),
    "v_med3_u32": lambda a, b, c: _med3(a, b, c).astype(np.uint32),
    # {S0, S1} (S0 the high word) shifted right by S2[4:0], low 32 bits (CDNA3 ISA, VOP3A)
    "v_alignbit_b32": lambda a, b, c: ((a.astype(np.uint64) << np.uint64(32) | b.astype(np.uint64))
                                       >> (c & u32(31)).astype(np.uint64)).astype(np.uint32),
}


def _med3(a, b, c):
    a, b, c = np.broadcast_arrays(a, b, c)
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))


def _bfe_i32(a, b, c):
    """"tmp.i32 = ((S0.i32 >> S1[4 : 0].u32) & ((1 << S2[4 : 0].u32) - 1)); D0.i32 = signext_from_bit(tmp.i32,
    S2[4 : 0].u32)" (CDNA4 ISA, V_BFE_I32): the shift is arithmetic, so a field reaching past bit 31 reads copies
    of the sign bit."""
    offset, width = b & u32(31), c & u32(31)
    shifted = (_i32(a) >> np.asarray(offset, np.uint32).astype(np.int32)).view(np.uint32)
    field = shifted & ((u32(1) << width) - u32(1))
    sign = (field >> np.maximum(width, u32(1)) - u32(1)) & u32(1)
    extended = np.where(sign.astype(bool), field | ~((u32(1) << width) - u32(1)), field)
    return np.where(width == 0, u32(0), extended).astype(np.uint32)


_VOP3["v_bfe_i32"] = _bfe_i32


def _perm(a, b, sel):
    """V_PERM_B32: each selector byte picks a byte of {src0, src1} (src1 is bytes 0-3), a sign fill or a constant."""
    if np.ndim(sel) == 0:
        picks = [(int(sel) >> (8 * byte)) & 0xFF for byte in range(4)]
        if all(p < 8 or p >= 12 for p in picks):  # a constant selector without sign fills: one gather of bytes
            lo, hi = np.broadcast_arrays(np.asarray(b, np.uint32), np.asarray(a, np.uint32))
            pool = np.stack([lo, hi], axis=-1).astype("<u4").reshape(lo.shape + (2,)).view(np.uint8)
            pool = pool.reshape(lo.shape + (8,))
            table = np.concatenate([pool, np.zeros(lo.shape + (1,), np.uint8), np.full(lo.shape + (1,), 0xFF,
                                                                                      np.uint8)], axis=-1)
            index = [p if p < 8 else (8 if p == 12 else 9) for p in picks]
            return np.ascontiguousarray(table[..., index]).view("<u4").reshape(lo.shape).astype(np.uint32)
    return _perm_general(a, b, sel)


def _perm_general(a, b, sel):
    pool = (np.asarray(b, np.uint64) | (np.asarray(a, np.uint64) << np.uint64(32)))
    pool = np.broadcast_to(pool, np.broadcast_shapes(np.shape(pool), np.shape(sel)))
    result = np.zeros(pool.shape, np.uint64)
    sel = np.broadcast_to(np.asarray(sel, np.uint32), pool.shape)
    for byte in range(4):
        s = ((sel >> u32(8 * byte)) & u32(0xFF)).astype(np.uint64)
        picked = (pool >> (np.minimum(s, 7) * np.uint64(8))) & np.uint64(0xFF)
        sign_byte = (np.minimum(s, 11) - np.uint64(8)) * np.uint64(2) + np.uint64(1)  # 8..11 -> bytes 1, 3, 5, 7
        sign = np.where(((pool >> (sign_byte * np.uint64(8) + np.uint64(7))) & np.uint64(1)) != 0, 0xFF, 0)
        value = np.where(s < 8, picked, np.where(s < 12, sign, np.where(s == 12, 0, 0xFF)))
        result |= value.astype(np.uint64) << np.uint64(8 * byte)
    return result.astype(np.uint32)


def _bitop3(a, b, c, table: int):
    result = np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c)), np.uint32)
    for minterm in range(8):
        if table >> minterm & 1:
            term = (a if minterm & 4 else ~a) & (b if minterm & 2 else ~b) & (c if minterm & 1 else ~c)
            result |= term
    return result


def _base(opcode: str) -> str:
    for suffix in ("_e32", "_e64", "_sdwa", "_dpp"):
        if opcode.endswith(suffix):
            return opcode[: -len(suffix)]
    return opcode


_SDWA_SEL = {"DWORD": (0, 32), "WORD_0": (0, 16), "WORD_1": (16, 16), "BYTE_0": (0, 8), "BYTE_1": (8, 8),
             "BYTE_2": (16, 8), "BYTE_3": (24, 8)}


def _sdwa_source(op, sel: str, ctx):
    signed = isinstance(op, Sext)
    read = vector_reader(op.reg if signed else op, ctx)
    shift, width = _SDWA_SEL[sel]
    if width == 32:
        return read

    def select(w):
        field = (read(w) >> u32(shift)) & u32((1 << width) - 1)
        if signed:
            top = u32(1 << (width - 1))
            field = (field ^ top) - top
        return field
    return select


def valu_compute(inst: Instruction, ctx):
    """(compute(w) -> uint32 lanes, destination operand) for a plain VALU instruction, or None."""
    base, ops = _base(inst.opcode), inst.operands
    if inst.opcode.endswith("_sdwa"):
        dst_sel = inst.modifiers.get("dst_sel", "DWORD")
        unused = inst.modifiers.get("dst_unused", "UNUSED_PAD")
        if (base not in _VOP2 and base != "v_cndmask_b32") or dst_sel not in _SDWA_SEL or unused not in (
                "UNUSED_PAD", "UNUSED_PRESERVE"):
            raise EmulatorError(f"unsupported SDWA form '{inst.text}' at line {inst.line}.")
        a = _sdwa_source(ops[1], inst.modifiers.get("src0_sel", "DWORD"), ctx)
        b = _sdwa_source(ops[2], inst.modifiers.get("src1_sel", "DWORD"), ctx)
        if base == "v_cndmask_b32":  # VOPC-style select: src1 where VCC is set, else src0
            fn = None
            if len(ops) > 3 and sreg_index(ops[3]) != VCC:
                raise EmulatorError(f"unsupported SDWA form '{inst.text}' at line {inst.line}.")

            def result(w):
                return np.where(w.read_mask(VCC), b(w), a(w)).astype(np.uint32)
        else:
            fn = _VOP2[base]

            def result(w):
                return fn(a(w), b(w))
        shift, width = _SDWA_SEL[dst_sel]
        if width == 32:
            return result, ops[0]
        field = u32(((1 << width) - 1) << shift)
        old = vector_reader(ops[0], ctx)

        def into_field(w):
            placed = (result(w) << u32(shift)) & field  # the result's low bits, moved to the selected field
            if unused == "UNUSED_PRESERVE":
                return placed | (old(w) & ~field)
            return placed  # UNUSED_PAD: the other bits are zero
        return into_field, ops[0]
    if set(inst.modifiers) == {"clamp"} and base in _CLAMPED and not any(isinstance(o, Sext) for o in ops):
        fn = _CLAMPED[base]
        a, b = vector_reader(ops[1], ctx), vector_reader(ops[2], ctx)
        return (lambda w: fn(a(w).astype(np.int64), b(w).astype(np.int64)).astype(np.uint32)), ops[0]
    if any(isinstance(o, Sext) for o in ops) or set(inst.modifiers) - {"bitop3"}:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    if base in _VOP2:
        fn = _VOP2[base]
        a, b = vector_reader(ops[1], ctx), vector_reader(ops[2], ctx)
        if base in _KEEPS_HIGH_HALF and not ctx.gfx9:
            old = vector_reader(ops[0], ctx)
            return (lambda w: fn(a(w), b(w)) | (old(w) & u32(0xFFFF0000))), ops[0]
        return (lambda w: fn(a(w), b(w))), ops[0]
    if base in _VOP3:
        fn = _VOP3[base]
        a, b, c = (vector_reader(o, ctx) for o in ops[1:4])
        return (lambda w: fn(a(w), b(w), c(w))), ops[0]
    if base in ("v_bitop3_b32", "v_bitop3_b16"):
        table = int(inst.modifiers["bitop3"], 0)
        a, b, c = (vector_reader(o, ctx) for o in ops[1:4])
        keep = u32(0xFFFF) if base.endswith("b16") else u32(MASK32)
        return (lambda w: _bitop3(a(w), b(w), c(w), table) & keep), ops[0]
    if base == "v_bfrev_b32":  # "D0.u32[31 : 0] = S0.u32[0 : 31]" (CDNA3 ISA, V_BFREV_B32)
        a = vector_reader(ops[1], ctx)
        return (lambda w: _bit_reverse32(np.broadcast_to(a(w), (w.lanes,))).astype(np.uint32)), ops[0]
    if base in ("v_mov_b32", "v_not_b32"):
        a = vector_reader(ops[1], ctx)
        if base == "v_not_b32":
            return (lambda w: ~np.broadcast_to(a(w), (w.lanes,))), ops[0]
        return (lambda w: np.broadcast_to(a(w), (w.lanes,)).astype(np.uint32)), ops[0]
    if base == "v_pk_sub_i16":
        a, b = vector_reader(ops[1], ctx), vector_reader(ops[2], ctx)

        def pk_sub(w):
            x, y = a(w), b(w)
            lo = (x - y) & u32(0xFFFF)
            hi = ((x >> u32(16)) - (y >> u32(16))) & u32(0xFFFF)
            return lo | (hi << u32(16))
        return pk_sub, ops[0]
    if base == "v_cndmask_b32":
        a, b = vector_reader(ops[1], ctx), vector_reader(ops[2], ctx)
        mask_index = VCC if len(ops) == 3 else sreg_index(ops[3])
        return (lambda w: np.where(w.read_mask(mask_index), b(w), a(w)).astype(np.uint32)), ops[0]
    for family in compute_families:
        found = family(inst, ctx)
        if found is not None:
            return found
    return None


compute_families: list = []  # more fn(inst, ctx) -> (compute, dst) | None, registered by other families (floats)


def _write_result(compute, dst, ctx):
    write = vector_writer(dst)
    return lambda w: write(w, compute(w))


@decoder(*(f"{n}{s}" for n in list(_VOP2) + list(_VOP3) for s in ("", "_e32", "_e64", "_sdwa")),
         "v_bitop3_b32", "v_bitop3_b16", "v_mov_b32_e32", "v_mov_b32", "v_not_b32_e32", "v_pk_sub_i16",
         "v_bfrev_b32_e32", "v_bfrev_b32_e64",
         "v_cndmask_b32_e32", "v_cndmask_b32_e64", "v_cndmask_b32_sdwa")
def _valu(inst, ctx):
    found = valu_compute(inst, ctx)
    if found is None:
        raise EmulatorError(f"unsupported instruction '{inst.text}' at line {inst.line}.")
    return _write_result(*found, ctx)


@decoder("v_dual")
def _dual(inst, ctx):
    halves = []
    for half in inst.operands:
        half = Instruction(half.opcode.replace("v_dual_", "v_") + "_e32", half.operands, half.modifiers, half.line,
                           half.text)
        found = valu_compute(half, ctx)
        if found is None:
            raise EmulatorError(f"unsupported dual-issue half '{half.text}' at line {half.line}.")
        halves.append((found[0], vector_writer(found[1])))
    (fx, wx), (fy, wy) = halves

    def run(w):
        x, y = fx(w), fy(w)  # both halves read before either writes
        wx(w, x)
        wy(w, y)
    return run


@decoder("v_mad_u64_u32")
def _mad_u64(inst, ctx):
    """vdst[2] = src0 (u32) * src1 (u32) + src2 (u64); the carry out goes to an SGPR pair (or null)."""
    dst, carry, a_op, b_op, c_op = inst.operands
    a, b, c = vector_reader(a_op, ctx), vector_reader(b_op, ctx), vector_reader64(c_op, ctx)
    lo, hi = vector_writer(Reg(dst.kind, dst.index)), vector_writer(Reg(dst.kind, dst.index + 1))
    if not (isinstance(carry, Reg) and carry.kind == "s"):
        raise EmulatorError(f"'{inst.text}' (line {inst.line}): the carry-out must be an SGPR pair or null.")
    keep_carry = carry.index != NULL

    def run(w):
        product = np.broadcast_to(a(w), (w.lanes,)).astype(np.uint64) * np.broadcast_to(b(w), (w.lanes,)).astype(
            np.uint64)
        addend = np.broadcast_to(c(w), (w.lanes,)).astype(np.uint64)
        total = product + addend  # wraps at 64 bits like the hardware; the product itself fits in 64 bits
        lo(w, (total & np.uint64(MASK32)).astype(np.uint32))
        hi(w, (total >> np.uint64(32)).astype(np.uint32))
        if keep_carry:
            w.write_mask(carry.index, (total < addend) & w.exec)  # a wrapped sum is smaller than either term
    return run


@decoder("s_addk_i32", "s_mulk_i32")
def _sopk_arith(inst, ctx):
    """sdst += or *= the sign-extended 16-bit immediate; s_addk sets SCC to the signed overflow, s_mulk leaves it."""
    read, write = scalar_reader(inst.operands[0]), scalar_writer(inst.operands[0])
    imm = ((inst.operands[1] & 0xFFFF) ^ 0x8000) - 0x8000
    add = inst.opcode == "s_addk_i32"

    def run(w):
        old = _signed32(read(w))
        total = old + imm if add else old * imm
        write(w, total & MASK32)
        if add:
            w.scc = _overflows32(total).astype(np.uint64)
    return run


@decoder("v_readfirstlane_b32")
def _readfirstlane(inst, ctx):
    write, read = scalar_writer(inst.operands[0]), vector_reader(inst.operands[1], ctx)

    def run(w):
        values = np.broadcast_to(read(w), (w.lanes,)).reshape(w.batch, w.wave_lanes)
        first = np.argmax(w.exec.reshape(w.batch, w.wave_lanes), axis=1)  # lane 0 where none is active
        write(w, values[np.arange(w.batch), first])
    return run


_SHIFT64 = {  # 64-bit shifts: vdst[2] = src1 (64 bits) shifted by src0[5:0]
    "v_lshlrev_b64": lambda value, shift: value << shift,
    "v_lshrrev_b64": lambda value, shift: value >> shift,
    "v_ashrrev_i64": lambda value, shift: (value.view(np.int64) >> shift.astype(np.int64)).view(np.uint64),
}


@decoder(*_SHIFT64, "v_lshlrev_b64_e64")
def _shift64(inst, ctx):
    dst = inst.operands[0]
    shift, value = vector_reader(inst.operands[1], ctx), vector_reader64(inst.operands[2], ctx)
    lo, hi = vector_writer(Reg(dst.kind, dst.index)), vector_writer(Reg(dst.kind, dst.index + 1))
    op = _SHIFT64[inst.opcode.removesuffix("_e64")]

    def run(w):
        amount = np.broadcast_to(shift(w) & u32(63), (w.lanes,)).astype(np.uint64)
        result = op(np.ascontiguousarray(np.broadcast_to(value(w), (w.lanes,)), np.uint64), amount)
        lo(w, (result & np.uint64(MASK32)).astype(np.uint32))
        hi(w, (result >> np.uint64(32)).astype(np.uint32))
    return run


@decoder("v_mov_b64_e32", "v_mov_b64")
def _mov_b64(inst, ctx):
    """A 64-bit move into a VGPR pair (gfx940+)."""
    dst, src = inst.operands
    read = vector_reader64(src, ctx)
    lo, hi = vector_writer(Reg(dst.kind, dst.index)), vector_writer(Reg(dst.kind, dst.index + 1))

    def run(w):
        value = np.broadcast_to(read(w), (w.lanes,))
        lo(w, (value & np.uint64(MASK32)).astype(np.uint32))
        hi(w, (value >> np.uint64(32)).astype(np.uint32))
    return run


@decoder("v_lshl_add_u64")
def _lshl_add_u64(inst, ctx):
    """vdst[2] = (src0 (u64) << src1[2:0]) + src2 (u64), wrapping at 64 bits (CDNA3 ISA, VOP3)."""
    dst, a_op, shift_op, c_op = inst.operands
    a, shift, c = vector_reader64(a_op, ctx), vector_reader(shift_op, ctx), vector_reader64(c_op, ctx)
    lo, hi = vector_writer(Reg(dst.kind, dst.index)), vector_writer(Reg(dst.kind, dst.index + 1))

    def run(w):
        amount = (np.broadcast_to(shift(w), (w.lanes,)) & u32(7)).astype(np.uint64)
        total = (np.broadcast_to(a(w), (w.lanes,)) << amount) + np.broadcast_to(c(w), (w.lanes,))
        lo(w, (total & np.uint64(MASK32)).astype(np.uint32))
        hi(w, (total >> np.uint64(32)).astype(np.uint32))
    return run


@decoder("v_accvgpr_write_b32", "v_accvgpr_write", "v_accvgpr_read_b32", "v_accvgpr_read", "v_accvgpr_mov_b32")
def _accvgpr(inst, ctx):
    """Copy one register between the VGPR and AGPR files (or AGPR to AGPR), under EXEC."""
    read, write = vector_reader(inst.operands[1], ctx), vector_writer(inst.operands[0])
    return lambda w: write(w, read(w))


@decoder("v_subbrev_co_u32_e32", "v_subbrev_co_u32_e64", "v_addc_co_u32_e32", "v_add_co_u32_e32",
         "v_add_co_u32_e64", "v_addc_co_u32_e64", "v_sub_co_u32_e32", "v_subrev_co_u32_e32", "v_subb_co_u32_e32",
         "v_subb_co_u32_e64", "v_sub_co_u32_e64", "v_subrev_co_u32_e64",
         # gfx11's names: the VOP3 carry-out forms print without _e64, and addc/subb are add/sub_co_ci
         "v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_add_co_ci_u32_e32", "v_add_co_ci_u32_e64",
         "v_sub_co_ci_u32_e32", "v_sub_co_ci_u32_e64", "v_subrev_co_ci_u32_e32", "v_subrev_co_ci_u32_e64")
def _carry(inst, ctx):
    base = {"v_add_co_ci_u32": "v_addc_co_u32", "v_sub_co_ci_u32": "v_subb_co_u32",
            "v_subrev_co_ci_u32": "v_subbrev_co_u32"}.get(_base(inst.opcode), _base(inst.opcode))
    ops = inst.operands
    # e32: vdst, vcc, src0, src1[, vcc]; e64: vdst, sdst, src0, src1[, ssrc]
    dst, carry_out = ops[0], sreg_index(ops[1])
    a, b = vector_reader(ops[2], ctx), vector_reader(ops[3], ctx)
    carry_in = sreg_index(ops[4]) if len(ops) > 4 else VCC
    uses_carry = base in ("v_subbrev_co_u32", "v_addc_co_u32", "v_subb_co_u32")
    write = vector_writer(dst)

    def run(w):
        x, y = np.broadcast_to(a(w), (w.lanes,)).astype(np.int64), np.broadcast_to(b(w), (w.lanes,)).astype(np.int64)
        c = w.read_mask(carry_in).astype(np.int64) if uses_carry else 0
        if base.startswith("v_add"):
            full = x + y + c
            out = full > MASK32
        elif base in ("v_subbrev_co_u32", "v_subrev_co_u32"):
            full = y - x - c
            out = full < 0
        else:
            full = x - y - c
            out = full < 0
        write(w, (full & MASK32).astype(np.uint32))
        if carry_out != NULL:
            w.write_mask(carry_out, out & w.exec)
    return run


_VCMP = {"gt": np.greater, "lt": np.less, "ge": np.greater_equal, "le": np.less_equal, "eq": np.equal,
         "ne": np.not_equal, "lg": np.not_equal}


@decoder(*(f"v_cmp_{c}_{t}_{e}" for c in _VCMP for t in ("u32", "i32", "u64", "i64", "u16", "i16")
           for e in ("e32", "e64")))
def _vcmp(inst, ctx):
    _, _, cond, typ, enc = inst.opcode.split("_")
    cmp = _VCMP[cond]
    dst, x, y = inst.operands
    dst_index = VCC if enc == "e32" else sreg_index(dst)
    if typ.endswith("64"):
        a, b = vector_reader64(x, ctx), vector_reader64(y, ctx)
        view = np.int64 if typ[0] == "i" else np.uint64
    else:
        a, b = vector_reader(x, ctx), vector_reader(y, ctx)
        view = np.int32 if typ[0] == "i" else np.uint32
    if typ.endswith("16"):
        raise EmulatorError(f"unsupported instruction '{inst.text}' at line {inst.line}.")

    def run(w):
        result = cmp(np.asarray(a(w)).view(view), np.asarray(b(w)).view(view))
        w.write_mask(dst_index, np.broadcast_to(result, (w.lanes,)) & w.exec)
    return run


@decoder(*(f"v_cmpx_{c}_{t}_e32" for c in _VCMP for t in ("u32", "i32", "u64", "i64")))
def _vcmpx(inst, ctx):
    """gfx10+ V_CMPX: EXEC = S0 <cond> S1 in the lanes that are on, 0 in the others; nothing else is written
    (RDNA3.5 ISA, VOPC)."""
    _, _, cond, typ, _ = inst.opcode.split("_")
    x, y = inst.operands
    wide = typ.endswith("64")
    a, b = (vector_reader64(x, ctx), vector_reader64(y, ctx)) if wide else (vector_reader(x, ctx),
                                                                            vector_reader(y, ctx))
    view = {"u": np.uint64 if wide else np.uint32, "i": np.int64 if wide else np.int32}[typ[0]]
    cmp = _VCMP[cond]

    def run(w):
        result = cmp(np.atleast_1d(np.asarray(a(w))).view(view), np.atleast_1d(np.asarray(b(w))).view(view))
        w.write_mask(EXEC, np.broadcast_to(result, (w.lanes,)) & w.exec)
    return run


def decode(kernel: Kernel, ctx: DecodeContext) -> list:
    """Every instruction of the kernel as a closure; the first unknown opcode stops decoding with its name. The
    memory and matrix families have registered their decoders: the package imports them (`__init__`)."""
    code = []
    for inst in kernel.instructions:
        if inst.opcode in REFUSED:
            raise RefusedInstruction(f"instruction {inst.opcode} (line {inst.line}) is refused by the emulator: "
                                     f"{REFUSED[inst.opcode]}.")
        make = DECODERS.get(inst.opcode)
        if make is None:
            raise EmulatorError(f"instruction {inst.opcode} (line {inst.line}: '{inst.text}') is not implemented "
                                "by the emulator.")
        code.append(make(inst, ctx))
    return code


__all__ = ["Wave", "DecodeContext", "Divergence", "EmulatorError", "RefusedInstruction", "Hazard", "Pending",
           "DECODERS", "REFUSED", "decode", "M0"]


# ---------------------------------------------------------------------------------------------------- gfx11 true16

_HALF = re.compile(r"v(\d+)\.(l|h)")


@decoder("v_mov_b16_e32", "v_mov_b16_e64")
def _mov_b16(inst, ctx):
    """16-bit move between register halves (vN.l bits 0-15, vN.h bits 16-31); the other half is kept."""
    dst, src = inst.operands
    d = _HALF.fullmatch(str(dst))
    if d is None or inst.modifiers:
        raise EmulatorError(f"unsupported operands in '{inst.text}' at line {inst.line}.")
    d_index, d_shift = int(d[1]), 16 if d[2] == "h" else 0
    s = _HALF.fullmatch(str(src))
    if s is not None:
        s_index, s_shift = int(s[1]), 16 if s[2] == "h" else 0
        read = vector_reader(Reg("v", s_index), ctx)
        value = lambda w: (read(w) >> u32(s_shift)) & u32(0xFFFF)  # noqa: E731
    elif isinstance(src, int):
        value = lambda w: u32(src & 0xFFFF)  # noqa: E731
    else:
        raise EmulatorError(f"unsupported source in '{inst.text}' at line {inst.line}.")
    read_dst, write = vector_reader(Reg("v", d_index), ctx), vector_writer(Reg("v", d_index))
    keep = u32(0xFFFF << (16 - d_shift))

    def run(w):
        write(w, (read_dst(w) & keep) | (value(w) << u32(d_shift)))
    return run


def _half_reader(op, ctx):
    """A 16-bit true16 source: vN.l / vN.h, or a constant."""
    if isinstance(op, int):
        return lambda w: u32(op & 0xFFFF)
    half = _HALF.fullmatch(str(op))
    if half is None:
        raise EmulatorError(f"expected a 16-bit register half, got {op!r}.")
    read, shift = vector_reader(Reg("v", int(half[1])), ctx), u32(16 if half[2] == "h" else 0)
    return lambda w: (read(w) >> shift) & u32(0xFFFF)


def _half_writer(op, ctx):
    half = _HALF.fullmatch(str(op))
    if half is None:
        raise EmulatorError(f"expected a 16-bit register half, got {op!r}.")
    index, shift = int(half[1]), 16 if half[2] == "h" else 0
    read, write, keep = vector_reader(Reg("v", index), ctx), vector_writer(Reg("v", index)), u32(0xFFFF << (16 - shift))
    return lambda w, value: write(w, (read(w) & keep) | (np.asarray(value, np.uint32) << u32(shift)))


@decoder("v_cndmask_b16", "v_cndmask_b16_e64")
def _cndmask_b16(inst, ctx):
    """D.h16 = mask bit ? S1 : S0 on register halves; the other half of D is kept (RDNA3.5 ISA, VOP3 true16)."""
    dst, x, y, mask = inst.operands
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    a, b, index, write = _half_reader(x, ctx), _half_reader(y, ctx), sreg_index(mask), _half_writer(dst, ctx)
    return lambda w: write(w, np.where(w.read_mask(index), b(w), a(w)))


@decoder("v_cvt_u32_u16_e32", "v_cvt_u32_u16_e64", "v_cvt_u32_u16")
def _cvt_u32_u16(inst, ctx):
    """D.u32 = zero-extended S0.u16 (RDNA3.5 ISA, VOP1; a true16 source names its half)."""
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    src = inst.operands[1]
    read = _half_reader(src, ctx) if _HALF.fullmatch(str(src)) else (lambda w, r=vector_reader(src, ctx): r(w) & u32(
        0xFFFF))
    write = vector_writer(inst.operands[0])
    return lambda w: write(w, np.broadcast_to(read(w), (w.lanes,)).astype(np.uint32))
