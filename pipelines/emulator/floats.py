"""Floating-point VALU instructions and cross-lane moves: what IREE emits around its GEMMs when a wave reduces
(M=1/8 kernels, split K) or converts inputs on the vector ALU instead of the matrix core.

f32 arithmetic is numpy's float32, which rounds to nearest even like the hardware; an FMA is computed in float64
(the product is exact) and rounded once to f32, which can differ from a fused f32 FMA in the last bit only when
the float64 sum itself rounded onto an f32 tie. Denormals are kept (the kernels' `float_denorm_mode_32` is 3).
Source modifiers `-x`, `|x|` and `-|x|` apply to float operands only. Cross-lane moves: gfx9 DPP (`quad_perm`,
`row_mirror`, `row_half_mirror`, `row_bcast:15/31`) and gfx11 DPP16, `v_permlanex16_b32`, `v_readlane_b32`,
`v_writelane_b32`. Sources: AMD CDNA3 and CDNA4 ISA guides (VOP2, VOP3, VOP3P, DPP chapters), RDNA3.5 ISA guide
(VOP3 V_PERMLANEX16_B32, VOPD); tinygrad's RDNA3 emulator as a second reading of the lane instructions.
"""

from __future__ import annotations

import re
from typing import Callable

import ml_dtypes
import numpy as np

from .isa import VCC, Reg, parse_operand
from .matrix import narrow_type
from .machine import (MASK32, EmulatorError, _base, compute_families, decoder, scalar_reader, scalar_writer,
                      vector_reader, vector_writer)

u32 = np.uint32


def _f32(x) -> np.ndarray:
    return np.atleast_1d(np.asarray(x, np.uint32)).view(np.float32)


def _bits(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def _fma(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


_ABS = re.compile(r"(-?)\|(.+)\|")


def float_reader(op, ctx):
    """A float source as float32 lanes (or a broadcasting scalar), with its `-` / `|x|` modifiers applied."""
    if isinstance(op, str):
        match = _ABS.fullmatch(op)
        negate, inner, absolute = (match[1] == "-", match[2], True) if match else (op.startswith("-"), op[1:], False)
        if not (match or op.startswith("-")):
            raise EmulatorError(f"unsupported float operand {op!r}.")
        read = float_reader(parse_operand(inner), ctx)
        sign = np.float32(-1 if negate else 1)
        return (lambda w: sign * np.abs(read(w))) if absolute else (lambda w: -read(w))
    read = vector_reader(op, ctx)
    return lambda w: _f32(read(w))


_FLOAT = {  # name -> (sources, fn on float32 lanes); the result is f32
    "v_add_f32": (2, lambda a, b: a + b),
    "v_sub_f32": (2, lambda a, b: a - b),
    "v_subrev_f32": (2, lambda a, b: b - a),
    "v_mul_f32": (2, lambda a, b: a * b),
    "v_max_f32": (2, np.maximum),
    "v_min_f32": (2, np.minimum),
    "v_fma_f32": (3, _fma),
    # fmaak: D = S0 * S1 + K; fmamk: D = S0 * K + S1; both written in that order in the assembly
    "v_fmaak_f32": (3, _fma),
    "v_fmamk_f32": (3, _fma),
}


def float_compute(inst, ctx):
    """(compute(w) -> uint32 lanes, destination) for an f32 VALU instruction, or None (see machine.valu_compute)."""
    base, ops = _base(inst.opcode), inst.operands
    if inst.modifiers:
        return None
    if base == "v_fmac_f32":  # D = S0 * S1 + D
        a, b, c = float_reader(ops[1], ctx), float_reader(ops[2], ctx), float_reader(ops[0], ctx)
        return (lambda w: _bits(_fma(a(w), b(w), c(w)))), ops[0]
    if base not in _FLOAT:
        return None
    count, fn = _FLOAT[base]
    sources = [float_reader(o, ctx) for o in ops[1:1 + count]]
    return (lambda w: _bits(fn(*(s(w) for s in sources)))), ops[0]


compute_families.append(float_compute)


@decoder(*(f"{n}{s}" for n in _FLOAT for s in ("", "_e32", "_e64")), "v_fmac_f32_e32", "v_fmac_f32_e64",
         "v_fmac_f32")
def _float(inst, ctx):
    found = float_compute(inst, ctx)
    if found is None:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    write = vector_writer(found[1])
    compute = found[0]
    return lambda w: write(w, compute(w))


@decoder("v_ldexp_f32", "v_ldexp_f32_e64")
def _ldexp(inst, ctx):
    """D = S0 * 2^S1 (S1 a signed int32), rounded once (CDNA3 ISA, V_LDEXP_F32)."""
    dst, x, e = inst.operands
    value, exponent, write = float_reader(x, ctx), vector_reader(e, ctx), vector_writer(dst)

    def run(w):
        power = np.clip(np.atleast_1d(np.asarray(exponent(w), np.uint32)).view(np.int32), -400, 400)
        write(w, _bits(np.ldexp(value(w).astype(np.float64), power).astype(np.float32)))
    return run


@decoder("s_add_f32", "s_sub_f32", "s_mul_f32")
def _salu_float(inst, ctx):
    """gfx11.5 SALU f32 arithmetic: SDST = S0 op S1, rounded to nearest even (RDNA3.5 ISA, SOP2)."""
    write = scalar_writer(inst.operands[0])
    a, b = scalar_reader(inst.operands[1]), scalar_reader(inst.operands[2])
    fn = {"s_add_f32": np.add, "s_sub_f32": np.subtract, "s_mul_f32": np.multiply}[inst.opcode]
    return lambda w: write(w, _bits(fn(_f32(a(w)), _f32(b(w)))))  # one value per workgroup of the batch


# ---------------------------------------------------------------------------------------------------- packed f32

def _op_sel(inst, name: str, count: int, default: int) -> list[int]:
    text = inst.modifiers.get(name)
    return [default] * count if text is None else [int(x) for x in text.strip("[]").split(",")]


def _pair_reader(op, ctx):
    """A 64-bit packed-f32 source as (lo, hi) readers; a constant or scalar has no hi register here."""
    if isinstance(op, Reg) and op.kind in "vas" and op.count == 2:
        return vector_reader(Reg(op.kind, op.index), ctx), vector_reader(Reg(op.kind, op.index + 1), ctx)
    return vector_reader(op, ctx), None


@decoder("v_pk_fma_f32", "v_pk_add_f32", "v_pk_mul_f32")
def _pk_f32(inst, ctx):
    """Two f32 lanes per register pair: result half h takes each source's register op_sel[i] (lo result) or
    op_sel_hi[i] (hi result), 0 the low register and 1 the high, negated where neg_lo[i] / neg_hi[i] is set (CDNA3
    ISA, VOP3P packed math)."""
    ops = inst.operands
    count = 3 if inst.opcode == "v_pk_fma_f32" else 2
    if set(inst.modifiers) - {"op_sel", "op_sel_hi", "neg_lo", "neg_hi"}:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    sel_lo, sel_hi = _op_sel(inst, "op_sel", count, 0), _op_sel(inst, "op_sel_hi", count, 1)
    # neg_lo[i] / neg_hi[i] negate source i of the low / high result
    signs = [np.array([-1 if n else 1 for n in _op_sel(inst, name, count, 0)], np.float32)
             for name in ("neg_lo", "neg_hi")]
    pairs = [_pair_reader(o, ctx) for o in ops[1:1 + count]]
    picks = []
    for half_sel in (sel_lo, sel_hi):
        chosen = []
        for (lo, hi), sel in zip(pairs, half_sel):
            if sel and hi is None:
                raise EmulatorError(f"'{inst.text}' (line {inst.line}) selects the high half of a constant.")
            chosen.append(hi if sel else lo)
        picks.append(chosen)
    fn = {"v_pk_fma_f32": _fma, "v_pk_add_f32": np.add, "v_pk_mul_f32": np.multiply}[inst.opcode]
    dst = ops[0]
    write_lo, write_hi = vector_writer(Reg(dst.kind, dst.index)), vector_writer(Reg(dst.kind, dst.index + 1))

    def run(w):
        lo = _bits(fn(*(sign * _f32(r(w)) for r, sign in zip(picks[0], signs[0]))))
        hi = _bits(fn(*(sign * _f32(r(w)) for r, sign in zip(picks[1], signs[1]))))
        write_lo(w, lo)
        write_hi(w, hi)
    return run


@decoder("v_fma_mix_f32")
def _fma_mix(inst, ctx):
    """D.f32 = fma(S0, S1, S2) where source i is f16 when op_sel_hi[i] is 1 (its half chosen by op_sel[i]) and
    f32 otherwise (RDNA3.5 ISA, V_FMA_MIX_F32)."""
    ops = inst.operands
    if set(inst.modifiers) - {"op_sel", "op_sel_hi"}:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    sel, is_f16 = _op_sel(inst, "op_sel", 3, 0), _op_sel(inst, "op_sel_hi", 3, 0)
    sources = []
    for op, high, half in zip(ops[1:4], sel, is_f16):
        read = vector_reader(op, ctx)
        if half:
            sources.append(lambda w, r=read, s=16 * high: ((np.atleast_1d(r(w)) >> u32(s)) & u32(0xFFFF)).astype(
                np.uint16).view(np.float16).astype(np.float32))
        else:
            sources.append(lambda w, r=read: _f32(r(w)))
    write = vector_writer(ops[0])
    return lambda w: write(w, _bits(_fma(*(s(w) for s in sources))))


# ---------------------------------------------------------------------------------------------------- conversions

_SELECT = {"DWORD": 0, "WORD_0": 0, "WORD_1": 16, "BYTE_0": 0, "BYTE_1": 8, "BYTE_2": 16, "BYTE_3": 24}


def _small_float(kind: str, arch: str):
    return narrow_type(kind, arch)  # fp8/bf8 in the chip's flavour (FNUZ on gfx942, OCP on gfx950), or f16


_CONVERSIONS = [f"v_cvt_{p}f32_{k}" for p, k in (("", "f16"), ("", "fp8"), ("", "bf8"), ("pk_", "fp8"), ("pk_", "bf8"))]


@decoder(*(f"{n}{s}" for n in _CONVERSIONS for s in ("", "_e32", "_e64", "_sdwa")))
def _cvt_to_f32(inst, ctx):
    """f16 / fp8 / bf8 to f32, exactly. The source field starts at bit 0, or where the SDWA `src0_sel` (or VOP3
    `op_sel`) puts it; the pk forms convert two consecutive bytes (a word) into a register pair (CDNA3 ISA,
    V_CVT_F32_FP8, V_CVT_PK_F32_FP8; fp8 is FNUZ on gfx942 and OCP on gfx950)."""
    base = _base(inst.opcode)
    packed, kind = "_pk_" in base, base.rsplit("_", 1)[1]
    dst, src = inst.operands
    shift = _SELECT.get(inst.modifiers.get("src0_sel", "DWORD"))
    unused = set(inst.modifiers) - {"src0_sel", "dst_sel", "dst_unused", "op_sel"}
    if shift is None or unused or inst.modifiers.get("dst_sel", "DWORD") != "DWORD":
        raise EmulatorError(f"unsupported operands in '{inst.text}' at line {inst.line}.")
    if "op_sel" in inst.modifiers:  # VOP3: op_sel[0] picks the high word (pk) or the byte pair (scalar forms)
        op_sel = _op_sel(inst, "op_sel", 2, 0)
        shift = 16 * op_sel[0] + (0 if packed else 8 * op_sel[1])
    width = 16 if kind == "f16" else 8
    numpy_type = _small_float(kind, ctx.arch)
    storage = np.uint16 if width == 16 else np.uint8
    read = vector_reader(src, ctx)
    values = 2 if packed else 1
    writes = [vector_writer(Reg(dst.kind, dst.index + i)) for i in range(values)]

    def run(w):
        word = np.array(read(w), np.uint32, ndmin=1)  # a copy: the destination may be the source (v[8:9], v8)
        for i, write in enumerate(writes):
            field = ((word >> u32(shift + width * i)) & u32((1 << width) - 1)).astype(storage)
            write(w, _bits(field.view(numpy_type).astype(np.float32)))
    return run


# ---------------------------------------------------------------------------------------------------- cross-lane


@decoder("v_readlane_b32")
def _readlane(inst, ctx):
    """SDST = VGPR[lane][SRC0], lane = S1[5:0] (wave64) or S1[4:0] (wave32); EXEC is ignored (CDNA3 ISA)."""
    write, read, lane = scalar_writer(inst.operands[0]), vector_reader(inst.operands[1], ctx), \
        scalar_reader(inst.operands[2])
    def run(w):
        values = np.broadcast_to(read(w), (w.lanes,)).reshape(w.batch, w.wave_lanes)
        chosen = np.broadcast_to(lane(w) % np.uint64(w.wave_lanes), (w.batch,)).astype(np.int64)
        write(w, values[np.arange(w.batch), chosen])
    return run


@decoder("v_writelane_b32")
def _writelane(inst, ctx):
    """VGPR[lane][VDST] = S0, lane = S1[5:0] (wave64) or S1[4:0] (wave32); EXEC is ignored, so SGPR spills land
    in lanes that are off (CDNA3 ISA)."""
    dst, value, lane = inst.operands[0], scalar_reader(inst.operands[1]), scalar_reader(inst.operands[2])
    if not (isinstance(dst, Reg) and dst.kind == "v"):
        raise EmulatorError(f"'{inst.text}' (line {inst.line}) writes a lane of a non-VGPR.")
    index = dst.index

    def run(w):
        if w.pending["v"][index]:
            w.hazard("pending-write", f"{w.where()} writes v{index} while a load into it is still in flight.")
        chosen = np.broadcast_to(lane(w) % np.uint64(w.wave_lanes), (w.batch,)).astype(np.int64)
        w.v[index, np.arange(w.batch) * w.wave_lanes + chosen] = value(w) & MASK32
    return run


def _dpp_lanes(inst, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(source lane, source in range) for each lane under the instruction's DPP control."""
    lane = np.arange(lanes)
    row, within = lane // 16, lane % 16
    mods = inst.modifiers
    if "quad_perm" in mods:
        perm = np.array([int(x) for x in mods["quad_perm"].strip("[]").split(",")])
        return (lane & ~3) | perm[lane & 3], np.ones(lanes, bool)
    if "row_mirror" in mods:
        return row * 16 + 15 - within, np.ones(lanes, bool)
    if "row_half_mirror" in mods:
        return (lane & ~7) | (7 - (lane & 7)), np.ones(lanes, bool)
    if mods.get("row_bcast") == "15" and lanes == 64:  # lane 15 of each row to all of the next row
        return np.maximum(row * 16 - 1, 0), row >= 1
    if mods.get("row_bcast") == "31" and lanes == 64:  # lane 31 to rows 2 and 3
        return np.full(lanes, 31), row >= 2
    raise EmulatorError(f"unsupported DPP control in '{inst.text}' at line {inst.line}.")


_DPP_OPS = {"v_mov_b32": lambda a, b: a, "v_add_f32": lambda a, b: _bits(_f32(a) + _f32(b)),
            "v_add_u32": lambda a, b: a + b, "v_add_nc_u32": lambda a, b: a + b}


@decoder(*(f"{n}_dpp" for n in _DPP_OPS))
def _dpp(inst, ctx):
    """src0 read from another lane of its row (the DPP control); a lane whose source is out of range or off in
    EXEC gets 0 with bound_ctrl:1 and keeps its destination otherwise; row_mask/bank_mask bits disable the writes
    of whole rows / 4-lane banks (CDNA3 ISA, DPP; RDNA3.5 ISA, DPP16)."""
    base = _base(inst.opcode)
    ops = inst.operands
    source_lane, in_range = _dpp_lanes(inst, ctx.lanes)
    lane = np.arange(ctx.lanes)
    row_mask, bank_mask = int(inst.modifiers.get("row_mask", "0xf"), 0), int(inst.modifiers.get("bank_mask", "0xf"),
                                                                              0)
    enabled = ((row_mask >> (lane // 16)) & 1).astype(bool) & ((bank_mask >> (lane % 16 // 4)) & 1).astype(bool)
    zero_fill = inst.modifiers.get("bound_ctrl") in ("1", True)
    if set(inst.modifiers) - {"quad_perm", "row_mirror", "row_half_mirror", "row_bcast", "row_mask", "bank_mask",
                              "bound_ctrl"}:
        raise EmulatorError(f"unsupported DPP modifiers in '{inst.text}' at line {inst.line}.")
    src0 = vector_reader(ops[1], ctx)
    src1 = vector_reader(ops[2], ctx) if len(ops) > 2 else (lambda w: u32(0))
    fn = _DPP_OPS[base]
    old = vector_reader(ops[0], ctx)
    write = vector_writer(ops[0])

    def run(w):
        # the same lanes of every wave of the batch: lane l of workgroup b reads lane source_lane[l] of b
        source = (w.lane_batch * w.wave_lanes + np.tile(source_lane, w.batch))
        valid = np.tile(in_range, w.batch) & w.exec[source]
        moved = np.broadcast_to(src0(w), (w.lanes,))[source]
        result = fn(np.where(valid, moved, u32(0)), np.broadcast_to(src1(w), (w.lanes,)))
        keep = ~np.tile(enabled, w.batch) | (~valid & (not zero_fill))
        write(w, np.where(keep, old(w), result).astype(np.uint32))
    return run


@decoder("v_permlanex16_b32", "v_permlanex16_b32_e64")
def _permlanex16(inst, ctx):
    """Lane i of each 16-lane row reads lane sel[i % 16] of the other row of its 32-lane half, sel being the
    nibbles of {S2, S1} (S1 for lanes 0-7); op_sel[0] (FI) reads lanes that are off, op_sel[1] (bound_ctrl) makes
    an off source lane read 0 instead of keeping the destination (RDNA3.5 ISA, V_PERMLANEX16_B32)."""
    dst, src, s1, s2 = inst.operands
    fetch_inactive, bound_ctrl = _op_sel(inst, "op_sel", 2, 0)
    read, lo, hi, old = vector_reader(src, ctx), scalar_reader(s1), scalar_reader(s2), vector_reader(dst, ctx)
    write = vector_writer(dst)
    lane = np.arange(ctx.lanes)

    def run(w):
        selectors = np.broadcast_to(lo(w) | (hi(w) << np.uint64(32)), (w.batch,))[:, None]  # per workgroup
        nibble = ((selectors >> (np.uint64(4) * (lane % 16).astype(np.uint64))) & np.uint64(0xF)).astype(np.int64)
        source_lane = (np.arange(w.batch)[:, None] * w.wave_lanes + ((lane // 16) ^ 1) * 16 + nibble).reshape(-1)
        valid = w.exec[source_lane] | bool(fetch_inactive)
        moved = np.broadcast_to(read(w), (w.lanes,))[source_lane]
        fallback = u32(0) if bound_ctrl else old(w)
        write(w, np.where(valid, moved, fallback).astype(np.uint32))
    return run


_FCMP: dict[str, Callable] = {
    "lt": np.less, "gt": np.greater, "le": np.less_equal, "ge": np.greater_equal, "eq": np.equal,
    "lg": lambda a, b: (a < b) | (a > b), "o": lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    "u": lambda a, b: np.isnan(a) | np.isnan(b)}
# the negated compares (nlt, ngt, ...) are true where the plain one is false, so also when either input is NaN
_FCMP.update({f"n{k}": (lambda f: lambda a, b: ~f(a, b))(_FCMP[k]) for k in ("lt", "gt", "le", "ge", "eq", "lg")})


@decoder(*(f"v_cmp_{c}_f32_{e}" for c in _FCMP for e in ("e32", "e64")))
def _fcmp(inst, ctx):
    """VCC (e32) or SDST (e64) lane bits = S0 <cond> S1 on f32, 0 in lanes that are off (CDNA3 ISA, VOPC)."""
    cond, enc = inst.opcode.split("_")[2], inst.opcode.rsplit("_", 1)[1]
    dst, x, y = inst.operands
    index = VCC if enc == "e32" else dst.index
    a, b, cmp = float_reader(x, ctx), float_reader(y, ctx), _FCMP[cond]
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")

    def run(w):
        with np.errstate(invalid="ignore"):
            result = np.broadcast_to(cmp(a(w), b(w)), (w.lanes,))
        w.write_mask(index, result & w.exec)
    return run


def _to_i32(x):
    """Round toward zero, saturate to the int32 range, NaN to 0 (CDNA3 ISA, V_CVT_I32_F32)."""
    with np.errstate(invalid="ignore"):
        clipped = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0), -2.0**31, 2.0**31 - 1)
    return clipped.astype(np.int64).astype(np.int32).view(np.uint32)


def _to_u32(x):
    """Round toward zero, saturate to [0, 2^32 - 1], NaN to 0 (CDNA3 ISA, V_CVT_U32_F32)."""
    with np.errstate(invalid="ignore"):
        clipped = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0), 0.0, 2.0**32 - 1)
    return clipped.astype(np.uint64).astype(np.uint32)


def _reciprocal(x):
    """1 / x rounded once to f32 (±0 -> ±inf, ±inf -> ±0). The hardware's V_RCP_F32 is accurate to 1 ULP, which
    this is within; LLVM's integer division (Triton's `//` and `%` by a runtime value) refines the estimate with
    V_MUL_HI_U32 and two corrections, so its quotient does not depend on that last bit."""
    with np.errstate(divide="ignore"):
        return _bits((1.0 / x.astype(np.float64)).astype(np.float32))


_UNARY = {  # name -> fn(float32 lanes) -> uint32 lanes
    "v_cvt_i32_f32": _to_i32,
    "v_cvt_u32_f32": _to_u32,
    "v_rcp_f32": _reciprocal,
    # "D0.f32 = 1.0F / S0.f32; // Can only raise integer DIV_BY_ZERO exception" (CDNA3 ISA, V_RCP_IFLAG_F32): the
    # same value; LLVM's unsigned division by a run-time value (HipKittens' tile order) starts from it
    "v_rcp_iflag_f32": _reciprocal,
    "v_rndne_f32": lambda x: _bits(np.rint(x)),  # to the nearest integer, ties to even
    "v_trunc_f32": lambda x: _bits(np.trunc(x)),  # the integer part, toward zero (-0.5 -> -0.0; CDNA3 V_TRUNC_F32)
    # 2^x: the hardware is accurate to 1 ULP; float64 exp2 rounded once is within that
    "v_exp_f32": lambda x: _bits(np.exp2(x.astype(np.float64)).astype(np.float32)),
}


@decoder(*(f"{n}{s}" for n in _UNARY for s in ("", "_e32", "_e64")))
def _float_unary(inst, ctx):
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    read, write, fn = float_reader(inst.operands[1], ctx), vector_writer(inst.operands[0]), _UNARY[_base(
        inst.opcode)]

    def run(w):
        with np.errstate(over="ignore", invalid="ignore"):
            write(w, np.broadcast_to(fn(read(w)), (w.lanes,)).astype(np.uint32))
    return run


@decoder("v_cvt_f32_u32", "v_cvt_f32_u32_e32", "v_cvt_f32_u32_e64")
def _cvt_f32_u32(inst, ctx):
    """D.f32 = S0.u32 rounded to nearest even (CDNA3 ISA, V_CVT_F32_U32; the round mode is the kernel's
    float_round_mode_32, 0)."""
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    read, write = vector_reader(inst.operands[1], ctx), vector_writer(inst.operands[0])
    # exact in float64, then one rounding to f32
    return lambda w: write(w, _bits(np.broadcast_to(np.asarray(read(w), np.float64), (w.lanes,)).astype(np.float32)))


@decoder(*(f"v_cvt_f32_ubyte{n}{suffix}" for n in range(4) for suffix in ("", "_e32", "_e64")))
def _cvt_f32_ubyte(inst, ctx):
    """D.f32 = byte n of S0.u32 as an unsigned integer, exactly (CDNA3 ISA, V_CVT_F32_UBYTE0..3)."""
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    shift = u32(8 * int(_base(inst.opcode)[-1]))
    read, write = vector_reader(inst.operands[1], ctx), vector_writer(inst.operands[0])
    return lambda w: write(w, _bits(np.broadcast_to((np.asarray(read(w), np.uint32) >> shift) & u32(0xFF),
                                                    (w.lanes,)).astype(np.float32)))


def _narrow_bits(x, kind) -> np.ndarray:
    """f32 lanes rounded to nearest even into a 16-bit type, as uint32 holding the 16 bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float32).astype(kind).view(np.uint16).astype(np.uint32)


@decoder("v_cvt_pk_bf16_f32", "v_cvt_pk_bf16_f32_e64")
def _cvt_pk_bf16(inst, ctx):
    """gfx950: D[15:0] = bf16(S0), D[31:16] = bf16(S1), each rounded to nearest even (CDNA4 ISA,
    V_CVT_PK_BF16_F32; a NaN stays a NaN)."""
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    dst, x, y = inst.operands
    lo, hi, write = float_reader(x, ctx), float_reader(y, ctx), vector_writer(dst)
    return lambda w: write(w, np.broadcast_to(_narrow_bits(lo(w), ml_dtypes.bfloat16)
                                              | (_narrow_bits(hi(w), ml_dtypes.bfloat16) << u32(16)), (w.lanes,)))


@decoder("v_cvt_f16_f32", "v_cvt_f16_f32_e32", "v_cvt_f16_f32_e64")
def _cvt_f16_f32(inst, ctx):
    """D.f16 = f16(S0.f32), rounded to nearest even (CDNA3 ISA, V_CVT_F16_F32). The high half of D is zeroed on
    gfx9 and kept on gfx10+ (LLVM's GCNSubtarget::zeroesHigh16BitsOfDest, as for the 16-bit VOP2 results)."""
    if inst.modifiers:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    dst = inst.operands[0]
    read, write = float_reader(inst.operands[1], ctx), vector_writer(dst)
    if ctx.gfx9:
        return lambda w: write(w, np.broadcast_to(_narrow_bits(read(w), np.float16), (w.lanes,)))
    old = vector_reader(dst, ctx)
    return lambda w: write(w, _narrow_bits(read(w), np.float16) | (old(w) & u32(0xFFFF0000)))


@decoder("v_pack_b32_f16")
def _pack_b32_f16(inst, ctx):
    """D[15:0] = S0.f16, D[31:16] = S1.f16, each the low half of its source or the high half where op_sel[i] is set
    (CDNA3 ISA, V_PACK_B32_F16; a plain move of bits)."""
    if set(inst.modifiers) - {"op_sel"}:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    sel = _op_sel(inst, "op_sel", 3, 0)
    dst, x, y = inst.operands
    lo, hi, write = vector_reader(x, ctx), vector_reader(y, ctx), vector_writer(dst)
    shift_lo, shift_hi = u32(16 * sel[0]), u32(16 * sel[1])
    return lambda w: write(w, np.broadcast_to(((np.asarray(lo(w), np.uint32) >> shift_lo) & u32(0xFFFF))
                                              | (((np.asarray(hi(w), np.uint32) >> shift_hi) & u32(0xFFFF)) << u32(16)),
                                              (w.lanes,)).astype(np.uint32))


__all__ = ["float_reader", "float_compute"]
