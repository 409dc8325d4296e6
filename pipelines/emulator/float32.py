"""f32 VALU arithmetic of GEMM epilogues: add, subtract, multiply, max/min and their packed (two-lane-pair) forms.

IREE's fused epilogues compute on the f32 accumulator before the store: bias-relu is v_add_f32 + v_max_f32 and
alpha-beta is v_pk_mul_f32 + v_pk_add_f32 (with neg_lo/neg_hi for a negative beta). Each result is the f32
rounding of the exact result, as the hardware's round-to-nearest-even; denormals are kept (numpy). Source
modifiers |x| and -x of VOP3 forms are refused with the instruction's text, as are the transcendental
instructions of gelu's erf expansion (v_exp_f32, v_ldexp_f32, ...), which have no decoder yet.
This family registers itself with the machine's decoder table like memory and matrix.
"""

from __future__ import annotations

import re

import numpy as np

from .isa import parse_operand
from .machine import EmulatorError, decoder, vector_reader, vector_reader64, vector_writer

_BINARY = {"add": np.add, "sub": np.subtract, "subrev": lambda a, b: b - a, "mul": np.multiply,
           "max": np.maximum, "min": np.minimum}
_PACKED = {"v_pk_add_f32": 2, "v_pk_mul_f32": 2, "v_pk_fma_f32": 3}
_PACKED_MODIFIERS = re.compile(r"\b(op_sel|op_sel_hi|neg_lo|neg_hi):\[([01,]+)\]")


def _f32(bits) -> np.ndarray:
    return np.atleast_1d(np.asarray(bits, np.uint32)).view(np.float32)


def _bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


@decoder(*(f"v_{name}_f32{suffix}" for name in _BINARY for suffix in ("_e32", "_e64")))
def _binary(inst, ctx):
    if inst.modifiers or len(inst.operands) != 3 or "|" in inst.text or re.search(r",\s*-[vs]", inst.text):
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    fn = _BINARY[inst.opcode[2:].rsplit("_f32", 1)[0]]
    a, b = vector_reader(inst.operands[1], ctx), vector_reader(inst.operands[2], ctx)
    write = vector_writer(inst.operands[0])

    def run(w):
        with np.errstate(over="ignore", invalid="ignore"):
            result = fn(_f32(a(w)), _f32(b(w)))
        write(w, np.broadcast_to(_bits(result), (w.lanes,)).copy())
    return run


@decoder(*_PACKED)
def _packed(inst, ctx):
    """dst.lo = op(sources' lo or hi word by op_sel), dst.hi = op(by op_sel_hi); neg_lo/neg_hi negate the
    sources of each half (CDNA3 ISA, VOP3P packed f32)."""
    count = _PACKED[inst.opcode]
    body = inst.text.split(None, 1)[1]
    plain = _PACKED_MODIFIERS.sub("", body)
    if re.search(r"[a-z_]+:", plain) or "|" in plain:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' at line {inst.line}.")
    operands = [parse_operand(o) for o in re.findall(r"[sva]\[\d+:\d+\]|[^,\s]+", plain)]
    if len(operands) != count + 1:
        raise EmulatorError(f"'{inst.text}' at line {inst.line} has {len(operands) - 1} sources, not {count}.")
    mods = {name: [int(x) for x in value.split(",")] for name, value in _PACKED_MODIFIERS.findall(body)}
    op_sel, op_sel_hi = mods.get("op_sel", [0] * count), mods.get("op_sel_hi", [1] * count)
    neg_lo, neg_hi = mods.get("neg_lo", [0] * count), mods.get("neg_hi", [0] * count)
    sources = [vector_reader64(o, ctx) for o in operands[1:]]
    dst = operands[0]
    write_lo, write_hi = vector_writer(dst), vector_writer(type(dst)(dst.kind, dst.index + 1))
    name = inst.opcode

    def half(pairs, select, negate):
        words = []
        for pair, hi, neg in zip(pairs, select, negate):
            word = _f32(((pair >> np.uint64(32)) if hi else pair & np.uint64(0xFFFFFFFF)).astype(np.uint32))
            words.append(-word if neg else word)
        if name == "v_pk_add_f32":
            return words[0] + words[1]
        if name == "v_pk_mul_f32":
            return words[0] * words[1]
        return (words[0].astype(np.float64) * words[1] + words[2]).astype(np.float32)  # one rounding, as FMA

    def run(w):
        pairs = [np.broadcast_to(s(w), (w.lanes,)) for s in sources]
        with np.errstate(over="ignore", invalid="ignore"):
            lo, hi = half(pairs, op_sel, neg_lo), half(pairs, op_sel_hi, neg_hi)
        write_lo(w, _bits(lo))
        write_hi(w, _bits(hi))
    return run
