"""Every scalar and vector ALU opcode the emulator decodes, and the LDS / buffer forms whose data path is subtle,
checked bit for bit against a reference written from AMD's ISA pseudocode ("pcode") in plain Python integers.

The pcode is the text tinygrad extracts from AMD's ISA PDFs: tinygrad/tinygrad at commit
4680247e3517e5b7b47330e26bbbe4932a85bcea, tinygrad/runtime/autogen/amd/cdna/str_pcode.py (CDNA ISA; gfx942/gfx950
opcode names) and tinygrad/runtime/autogen/amd/rdna3/str_pcode.py (RDNA3; gfx11 names such as v_add_nc_u32 or
ds_load_u8_d16). Each reference quotes its pcode line. Where the pcode says nothing (the unused high half of a 16-bit
result, bits of inactive lanes) the comment names the rule used instead. results/emulator/opcode-audit.md lists what
each opcode was checked on.

Inputs are fixed edge values (0, 1, sign and carry boundaries, shift amounts at and past the operand width) crossed
with each other, plus seeded random values. Scalar instructions run once over a batch holding one case per workgroup
(the batched scalar path) and again case by case on a batch of one; vector instructions put one case per lane over
as many workgroups as needed, and read SGPR sources that differ between workgroups.
"""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from pipelines.emulator.isa import EXEC, VCC, parse_instruction
from pipelines.emulator.machine import DECODERS, DecodeContext, Divergence, EmulatorError, Wave

M16, M32, M64 = 0xFFFF, 0xFFFFFFFF, (1 << 64) - 1


def signed(x: int, bits: int = 32) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def sext(x: int, bits: int) -> int:
    """signext(x.i<bits>) as a 32-bit pattern."""
    return signed(x, bits) & M32


EDGE32 = [0, 1, 2, 3, 15, 16, 31, 32, 33, 63, 64, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFF,
          0x800000, 0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF]
EDGE64 = sorted({e | (h << 32) for e in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF) for h in (0, 1, 0x7FFFFFFF,
                                                                                             0x80000000, M32)})
_rng = np.random.default_rng(15)
RANDOM32 = [int(x) for x in _rng.integers(0, 1 << 32, 256, dtype=np.uint64)]
RANDOM64 = [int(x) for x in _rng.integers(0, 1 << 63, 64, dtype=np.uint64) * 2 + 1]
PAIRS32 = list(itertools.product(EDGE32, EDGE32)) + list(zip(RANDOM32[:128], RANDOM32[128:]))
PAIRS64 = list(itertools.product(EDGE64, EDGE64)) + list(zip(RANDOM64[:32], RANDOM64[32:]))
SMALL = [0, 1, 31, 32, 0x7FFF, 0x8000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
TRIPLES32 = list(itertools.product(SMALL, SMALL, SMALL)) + list(zip(RANDOM32[:96], RANDOM32[96:192],
                                                                    RANDOM32[192:]))
SINGLE_CASES = 24  # cases also run one by one on a batch of one workgroup


def run(wave: Wave, text: str, arch: str = "gfx942", labels: dict | None = None) -> None:
    inst = parse_instruction(text, 1)
    ctx = DecodeContext(kernel=SimpleNamespace(labels=labels or {}), arch=arch, lanes=wave.wave_lanes, lds_banks=32)
    DECODERS[inst.opcode](inst, ctx)(wave)


def new_wave(batch: int = 1, lanes: int = 64, vgprs: int = 16, agprs: int = 0, workgroup=None) -> Wave:
    return Wave(0, workgroup or SimpleNamespace(mma=0), lanes, vgprs, agprs, batch=batch)


def set_sgprs(wave: Wave, index: int, values, bits: int = 32) -> None:
    for word in range(bits // 32):
        wave.s[index + word] = [(v >> (32 * word)) & M32 for v in values]


def get_sgprs(wave: Wave, index: int, bits: int = 32) -> list[int]:
    words = [[int(x) for x in wave.s[index + word]] for word in range(bits // 32)]
    return [sum(w << (32 * i) for i, w in enumerate(ws)) for ws in zip(*words)]


def mask_bits(wave: Wave, index: int) -> list[int]:
    """Per workgroup, the lane mask in s[index] (and s[index + 1] on wave64)."""
    return get_sgprs(wave, index, 64 if wave.wave_lanes == 64 else 32)


# ---------------------------------------------------------------------------------------------------- scalar ALU
# name -> (operand bits, reference(a, b) -> (D, SCC or None for "SCC is not written"))

def _bfe(a, b):
    # "D0.u32 = ((S0.u32 >> S1[4 : 0].u32) & ((1U << S1[22 : 16].u32) - 1U)); SCC = D0.u32 != 0U". A width of 32
    # or more is read as "every bit" (the shift taken without truncation): 1U << 32 is not defined in C.
    d = (a >> (b & 31)) & ((1 << ((b >> 16) & 0x7F)) - 1) & M32
    return d, d != 0


def _bfe_i32_scalar(a, b):
    # "tmp.i32 = ((S0.i32 >> S1[4 : 0].u32) & ((1 << S1[22 : 16].u32) - 1)); D0.i32 = signext_from_bit(tmp.i32,
    # S1[22 : 16].u32); SCC = D0.i32 != 0". As for s_bfe_u32, a width of 32 or more keeps every bit.
    width, shifted = (b >> 16) & 0x7F, signed(a) >> (b & 31)
    d = 0 if width == 0 else shifted & M32 if width >= 32 else sext(shifted & ((1 << width) - 1), width)
    return d, d != 0


def _bfe_i64_scalar(a, b):
    # "tmp.i64 = ((S0.i64 >> S1[5 : 0].u32) & ((1LL << S1[22 : 16].u32) - 1LL)); D0.i64 = signext_from_bit(tmp.i64,
    # S1[22 : 16].u32); SCC = D0.i64 != 0LL". A width of 64 or more keeps every bit, as for the 32-bit forms.
    width, shifted = (b >> 16) & 0x7F, signed(a, 64) >> (b & 63)
    d = 0 if width == 0 else shifted & M64 if width >= 64 else signed(shifted & ((1 << width) - 1), width) & M64
    return d, d != 0


def _lshl_add(n):
    # "tmp = (64'U(S0.u32) << nU) + 64'U(S1.u32); SCC = tmp >= 0x100000000ULL ? 1'1U : 1'0U; D0.u32 = tmp.u32"
    return lambda a, b: (((a << n) + b) & M32, ((a << n) + b) >= 1 << 32)


SOP2 = {
    "s_and_b32": (32, lambda a, b: (a & b, (a & b) != 0)),  # "D0.u32 = (S0.u32 & S1.u32); SCC = D0.u32 != 0U"
    "s_or_b32": (32, lambda a, b: (a | b, (a | b) != 0)),  # "D0.u32 = (S0.u32 | S1.u32); SCC = D0.u32 != 0U"
    "s_xor_b32": (32, lambda a, b: (a ^ b, (a ^ b) != 0)),  # "D0.u32 = (S0.u32 ^ S1.u32); SCC = D0.u32 != 0U"
    "s_andn2_b32": (32, lambda a, b: (a & ~b & M32, (a & ~b & M32) != 0)),  # "D0.u32 = (S0.u32 & ~S1.u32); ..."
    "s_and_b64": (64, lambda a, b: (a & b, (a & b) != 0)),  # "D0.u64 = (S0.u64 & S1.u64); SCC = D0.u64 != 0ULL"
    "s_or_b64": (64, lambda a, b: (a | b, (a | b) != 0)),
    "s_xor_b64": (64, lambda a, b: (a ^ b, (a ^ b) != 0)),
    "s_andn2_b64": (64, lambda a, b: (a & ~b & M64, (a & ~b & M64) != 0)),  # "D0.u64 = (S0.u64 & ~S1.u64)"
    # "D0.u32 = (S0.u32 << S1[4 : 0].u32); SCC = D0.u32 != 0U"
    "s_lshl_b32": (32, lambda a, b: ((a << (b & 31)) & M32, ((a << (b & 31)) & M32) != 0)),
    "s_lshr_b32": (32, lambda a, b: (a >> (b & 31), (a >> (b & 31)) != 0)),  # "D0.u32 = (S0.u32 >> S1[4 : 0].u32)"
    # "tmp = S0.i32 + S1.i32; SCC = ((S0.u32[31] == S1.u32[31]) && (S0.u32[31] != tmp.u32[31]))"
    "s_add_i32": (32, lambda a, b: ((a + b) & M32, a >> 31 == b >> 31 and a >> 31 != ((a + b) & M32) >> 31)),
    # "tmp = S0.i32 - S1.i32; SCC = ((S0.u32[31] != S1.u32[31]) && (S0.u32[31] != tmp.u32[31]))"
    "s_sub_i32": (32, lambda a, b: ((a - b) & M32, a >> 31 != b >> 31 and a >> 31 != ((a - b) & M32) >> 31)),
    # "tmp = 64'U(S0.u32) + 64'U(S1.u32); SCC = tmp >= 0x100000000ULL ? 1'1U : 1'0U"
    "s_add_u32": (32, lambda a, b: ((a + b) & M32, a + b >= 1 << 32)),
    # "tmp = S0.u32 - S1.u32; SCC = S1.u32 > S0.u32 ? 1'1U : 1'0U"
    "s_sub_u32": (32, lambda a, b: ((a - b) & M32, b > a)),
    # "SCC = S0.u32 < S1.u32; D0.u32 = SCC ? S0.u32 : S1.u32"
    "s_min_u32": (32, lambda a, b: (a if a < b else b, a < b)),
    # "SCC = S0.u32 >= S1.u32; D0.u32 = SCC ? S0.u32 : S1.u32"
    "s_max_u32": (32, lambda a, b: (a if a >= b else b, a >= b)),
    # "SCC = S0.i32 < S1.i32; D0.i32 = SCC ? S0.i32 : S1.i32"
    "s_min_i32": (32, lambda a, b: (a if signed(a) < signed(b) else b, signed(a) < signed(b))),
    # "SCC = S0.i32 >= S1.i32; D0.i32 = SCC ? S0.i32 : S1.i32"
    "s_max_i32": (32, lambda a, b: (a if signed(a) >= signed(b) else b, signed(a) >= signed(b))),
    "s_mul_i32": (32, lambda a, b: ((signed(a) * signed(b)) & M32, None)),  # "D0.i32 = S0.i32 * S1.i32"
    "s_lshl1_add_u32": (32, _lshl_add(1)),
    "s_lshl2_add_u32": (32, _lshl_add(2)),
    "s_lshl3_add_u32": (32, _lshl_add(3)),
    "s_lshl4_add_u32": (32, _lshl_add(4)),
    "s_bfe_u32": (32, _bfe),
    "s_bfe_i32": (32, _bfe_i32_scalar),
    # "D0.i32 = (S0.i32 >> S1[4 : 0].u32); SCC = D0.i32 != 0"
    "s_ashr_i32": (32, lambda a, b: ((signed(a) >> (b & 31)) & M32, (signed(a) >> (b & 31)) != 0)),
    "s_mul_hi_u32": (32, lambda a, b: ((a * b) >> 32, None)),  # "D0.u32 = 32'U((64'U(S0.u32) * 64'U(S1.u32)) >> 32U)"
    # "D0.u64 = (S0.u64 << S1[5 : 0].u32); SCC = D0.u64 != 0ULL"
    "s_lshl_b64": (64, lambda a, b: ((a << (b & 63)) & M64, ((a << (b & 63)) & M64) != 0)),
    "s_bfe_i64": (64, _bfe_i64_scalar),
}

SOP2_CARRY = {  # name -> reference(a, b, scc) -> (D, SCC)
    # "tmp = 64'U(S0.u32) + 64'U(S1.u32) + SCC.u64; SCC = tmp >= 0x100000000ULL ? 1'1U : 1'0U"
    "s_addc_u32": lambda a, b, c: ((a + b + c) & M32, a + b + c >= 1 << 32),
    # "tmp = S0.u32 - S1.u32 - SCC.u32; SCC = 64'U(S1.u32) + SCC.u64 > 64'U(S0.u32) ? 1'1U : 1'0U"
    "s_subb_u32": lambda a, b, c: ((a - b - c) & M32, b + c > a),
}


def scc_sentinel(n: int) -> list[int]:
    return [i % 2 for i in range(n)]


def check_scalar(text: str, setup, want, cases, bits: int = 32, dst: int = 8, arch: str = "gfx942"):
    """Run `text` over all `cases` at once (one per workgroup) and the first SINGLE_CASES one by one; `setup(wave,
    cases)` writes the sources, `want(case) -> (D, SCC or None)`; SCC not written must keep its old value."""
    for group in [cases] + [[case] for case in cases[:SINGLE_CASES]]:
        wave = new_wave(batch=len(group))
        old_scc = scc_sentinel(len(group))
        wave.scc[:] = old_scc
        setup(wave, group)
        run(wave, text, arch)
        got_d, got_scc = get_sgprs(wave, dst, bits), [int(x) for x in wave.scc]
        for i, case in enumerate(group):
            d, scc = want(case)
            expect = (d, old_scc[i] if scc is None else int(scc))
            assert (got_d[i], got_scc[i]) == expect, f"{text} on {[hex(x) for x in case]}"


def pair_setup(bits, a_bits=None, b_bits=None):
    def setup(wave, group):
        set_sgprs(wave, 4, [a for a, _ in group], a_bits or bits)
        set_sgprs(wave, 6, [b for _, b in group], b_bits or bits)
    return setup


@pytest.mark.parametrize("opcode", sorted(SOP2))
def test_sop2(opcode):
    bits, ref = SOP2[opcode]
    cases = PAIRS64 if bits == 64 else PAIRS32
    if opcode in ("s_bfe_u32", "s_bfe_i32"):  # widths past 32 as well: S1[22:16] is seven bits
        cases = cases + [(a, off | (width << 16)) for a in SMALL for off in (0, 1, 17, 31, 32)
                         for width in (0, 1, 15, 16, 31, 32, 33, 0x7F)]
    if opcode == "s_bfe_i64":  # offsets and widths within and past 64 bits, on 64-bit sources
        cases = cases + [(a, off | (width << 16)) for a in EDGE64 for off in (0, 1, 31, 32, 63, 64)
                         for width in (0, 1, 31, 32, 33, 63, 64, 0x7F)]
    text = f"{opcode} s[8:9], s[4:5], s[6:7]" if bits == 64 else f"{opcode} s8, s4, s6"
    check_scalar(text, pair_setup(bits, b_bits=32 if "shl" in opcode else bits), lambda c: ref(*c), cases, bits)


@pytest.mark.parametrize("opcode", sorted(SOP2_CARRY))
@pytest.mark.parametrize("scc_in", [0, 1])
def test_sop2_with_carry_in(opcode, scc_in):
    def setup(wave, group):
        pair_setup(32)(wave, group)
        wave.scc[:] = scc_in
    ref = SOP2_CARRY[opcode]
    check_scalar(f"{opcode} s8, s4, s6", setup, lambda c: ref(c[0], c[1], scc_in), PAIRS32)


def test_sop2_literal_and_inline_sources():
    """A constant source (inline or literal, as the assembler writes it) is its 32-bit pattern."""
    for text, want in [("s_add_u32 s8, -1, s4", lambda a: ((a + M32) & M32, a + M32 >= 1 << 32)),
                       ("s_and_b32 s8, s4, 0xff00ff", lambda a: (a & 0xFF00FF, (a & 0xFF00FF) != 0)),
                       ("s_min_i32 s8, s4, -7", lambda a: (a if signed(a) < -7 else sext(-7, 32),
                                                           signed(a) < -7))]:
        check_scalar(text, lambda w, g: set_sgprs(w, 4, [c[0] for c in g]), lambda c: want(c[0]),
                     [(a,) for a in EDGE32 + RANDOM32[:32]])


SOP1 = {  # name -> (bits, reference(s0) -> (D, SCC or None))
    "s_mov_b32": (32, lambda a: (a, None)),  # "D0.b32 = S0.b32"
    "s_mov_b64": (64, lambda a: (a, None)),  # "D0.b64 = S0.b64"
    "s_not_b32": (32, lambda a: (~a & M32, (~a & M32) != 0)),  # "D0.u32 = ~S0.u32; SCC = D0.u32 != 0U"
    # "D0.u32[31 : 0] = S0.u32[0 : 31]"
    "s_brev_b32": (32, lambda a: (int(f"{a:032b}"[::-1], 2), None)),
    # "D0.i32 = S0.i32 < 0 ? -S0.i32 : S0.i32; SCC = D0.i32 != 0" (-2^31 has no positive twin: it stays)
    "s_abs_i32": (32, lambda a: (abs(signed(a)) & M32, abs(signed(a)) & M32 != 0)),
}


@pytest.mark.parametrize("opcode", sorted(SOP1))
def test_sop1(opcode):
    bits, ref = SOP1[opcode]
    values = EDGE64 + RANDOM64 if bits == 64 else EDGE32 + RANDOM32
    text = f"{opcode} s[8:9], s[4:5]" if bits == 64 else f"{opcode} s8, s4"
    check_scalar(text, lambda w, g: set_sgprs(w, 4, [c[0] for c in g], bits), lambda c: ref(c[0]),
                 [(v,) for v in values], bits)


@pytest.mark.parametrize("opcode", ["s_bitset0_b32", "s_bitset1_b32"])
def test_bitset(opcode):
    """"D0.u32[S0.u32[4 : 0]] = 1'0U" / "= 1'1U": one bit of D changes, the rest and SCC stay."""
    def setup(wave, group):
        set_sgprs(wave, 8, [d for d, _ in group])
        set_sgprs(wave, 4, [bit for _, bit in group])
    one = opcode == "s_bitset1_b32"
    want = lambda c: ((c[0] | (1 << (c[1] & 31))) if one else (c[0] & ~(1 << (c[1] & 31)) & M32), None)  # noqa: E731
    check_scalar(f"{opcode} s8, s4", setup, want, PAIRS32)


@pytest.mark.parametrize("immediate", [0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF])
def test_movk(immediate):
    """"D0.i32 = 32'I(signext(S0.i16))"."""
    check_scalar(f"s_movk_i32 s8, {immediate:#x}", lambda w, g: None, lambda c: (sext(immediate, 16), None), [()])


SOPK = {
    # "D0.i32 = D0.i32 + 32'I(signext(S0.i16)); SCC = ((tmp[31] == S0.i16[15]) && (tmp[31] != D0.i32[31]))"
    "s_addk_i32": lambda d, k: ((d + sext(k, 16)) & M32,
                                d >> 31 == k >> 15 and d >> 31 != ((d + sext(k, 16)) & M32) >> 31),
    "s_mulk_i32": lambda d, k: ((signed(d) * signed(k, 16)) & M32, None),  # "D0.i32 = D0.i32 * 32'I(signext(S0.i16))"
}


@pytest.mark.parametrize("opcode", sorted(SOPK))
@pytest.mark.parametrize("immediate", [0, 1, 2, 0x7FFF, 0x8000, 0xFFFF, 0x1234])
def test_sopk(opcode, immediate):
    check_scalar(f"{opcode} s8, {immediate:#x}", lambda w, g: set_sgprs(w, 8, [c[0] for c in g]),
                 lambda c: SOPK[opcode](c[0], immediate), [(v,) for v in EDGE32 + RANDOM32[:64]])


SCMP = {"eq": lambda a, b: a == b, "lg": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}  # "SCC = S0.u32 < S1.u32", "SCC = S0.i32 <> S1.i32", ...


@pytest.mark.parametrize("cond", sorted(SCMP))
@pytest.mark.parametrize("typ", ["u32", "i32"])
def test_scalar_compare(cond, typ):
    view = (lambda x: x) if typ == "u32" else signed
    check_scalar(f"s_cmp_{cond}_{typ} s4, s6", pair_setup(32), lambda c: (c[0], SCMP[cond](view(c[0]), view(c[1]))),
                 PAIRS32, dst=4)


@pytest.mark.parametrize("cond", ["eq", "lg"])
def test_scalar_compare_u64(cond):
    """"SCC = S0.u64 == S1.u64" / "SCC = S0.u64 <> S1.u64" (only these two exist for 64 bits)."""
    check_scalar(f"s_cmp_{cond}_u64 s[4:5], s[6:7]", pair_setup(64),
                 lambda c: (c[0], SCMP[cond](c[0], c[1])), PAIRS64, bits=64, dst=4)


@pytest.mark.parametrize("cond", sorted(SCMP))
@pytest.mark.parametrize("typ", ["u32", "i32"])
@pytest.mark.parametrize("literal", [0, 1, 0x7FFF, 0x8000, 0xFFFF])
def test_scalar_compare_with_literal(cond, typ, literal):
    """"SCC = S0.i32 < 32'I(signext(S1.i16))" for _i32, "SCC = S0.u32 < 32'U(S1.u16)" for _u32."""
    k = signed(literal, 16) if typ == "i32" else literal
    view = (lambda x: x) if typ == "u32" else signed
    check_scalar(f"s_cmpk_{cond}_{typ} s4, {literal:#x}", lambda w, g: set_sgprs(w, 4, [c[0] for c in g]),
                 lambda c: (c[0], SCMP[cond](view(c[0]), k)), [(v,) for v in EDGE32 + RANDOM32[:32]], dst=4)


SAVEEXEC = {  # "saveexec = EXEC; EXEC = (S0 op EXEC); D0 = saveexec; SCC = EXEC != 0"
    "s_and_saveexec": lambda s, e, m: s & e,  # "EXEC.u64 = (S0.u64 & EXEC.u64)"
    "s_or_saveexec": lambda s, e, m: s | e,  # "EXEC.u64 = (S0.u64 | EXEC.u64)"
    "s_andn2_saveexec": lambda s, e, m: s & ~e & m,  # "EXEC.u64 = (S0.u64 & ~EXEC.u64)"
}


@pytest.mark.parametrize("name", sorted(SAVEEXEC))
@pytest.mark.parametrize("lanes", [64, 32])
def test_saveexec(name, lanes):
    bits = lanes
    mask = (1 << bits) - 1
    values = EDGE64 + RANDOM64 if bits == 64 else EDGE32 + RANDOM32[:64]
    cases = [(s, e & mask) for s, e in zip(values, values[::-1] + values)]
    opcode = f"{name}_b{bits}"
    text = f"{opcode} s[8:9], s[4:5]" if bits == 64 else f"{opcode} s8, s4"
    for group in [cases, cases[:1], cases[5:6]]:
        wave = new_wave(batch=len(group), lanes=lanes)
        set_sgprs(wave, 4, [s for s, _ in group], bits)
        set_sgprs(wave, EXEC, [e for _, e in group], bits)
        wave.sync_exec()
        run(wave, text, "gfx942" if lanes == 64 else "gfx1151")
        new = [SAVEEXEC[name](s, e, mask) for s, e in group]
        assert get_sgprs(wave, 8, bits) == [e for _, e in group]
        assert get_sgprs(wave, EXEC, bits) == new
        assert [int(x) for x in wave.scc] == [int(n != 0) for n in new]
        lane_flags = [(n >> lane) & 1 == 1 for n in new for lane in range(lanes)]
        assert wave.exec.tolist() == lane_flags  # the lane mask the vector ALU uses follows EXEC


BRANCHES = {  # "if SCC == 1'0U then PC = ..."; VCCZ / EXECZ: the 64-bit mask is zero
    "s_cbranch_scc0": lambda scc, vcc, exec_: scc == 0, "s_cbranch_scc1": lambda scc, vcc, exec_: scc == 1,
    "s_cbranch_vccz": lambda scc, vcc, exec_: vcc == 0, "s_cbranch_vccnz": lambda scc, vcc, exec_: vcc != 0,
    "s_cbranch_execz": lambda scc, vcc, exec_: exec_ == 0, "s_cbranch_execnz": lambda scc, vcc, exec_: exec_ != 0,
    "s_branch": lambda scc, vcc, exec_: True,
}
BRANCH_STATES = [(scc, vcc, exec_) for scc in (0, 1) for vcc in (0, 1, 1 << 32, M64)
                 for exec_ in (0, 1 << 63, 0xFFFFFFFF)]


@pytest.mark.parametrize("opcode", sorted(BRANCHES))
def test_scalar_branches(opcode):
    """Each workgroup alone branches iff its condition holds; a batch whose workgroups disagree is split, with
    `taken` the per-workgroup condition (the batched engine's rule for a divergent scalar branch)."""
    def state(group):
        wave = new_wave(batch=len(group))
        wave.scc[:] = [g[0] for g in group]
        set_sgprs(wave, VCC, [g[1] for g in group], 64)
        set_sgprs(wave, EXEC, [g[2] for g in group], 64)
        wave.sync_exec()
        wave.pc = 10
        return wave
    for case in BRANCH_STATES:
        wave = state([case])
        run(wave, f"{opcode} .L", labels={".L": 3})
        assert wave.pc == (3 if BRANCHES[opcode](*case) else 10), (opcode, case)
    wave = state(BRANCH_STATES)
    taken = [BRANCHES[opcode](*case) for case in BRANCH_STATES]
    if all(taken):
        run(wave, f"{opcode} .L", labels={".L": 3})
        assert wave.pc == 3
        return
    with pytest.raises(Divergence) as split:
        run(wave, f"{opcode} .L", labels={".L": 3})
    assert split.value.taken.tolist() == taken


NO_EFFECT = ["s_nop 0x3", "s_setprio 2", "s_sched_barrier mask(0x0)", "s_sched_group_barrier 8, 1, 0",
             "s_delay_alu instid0(VALU_DEP_1)", "s_clause 0x3", "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)",
             "s_waitcnt_expcnt null, 0x0", "s_set_gpr_idx_off", "s_waitcnt_vscnt null, 0x0"]


@pytest.mark.parametrize("text", NO_EFFECT)
def test_hints_change_no_register(text):
    """Timing and power hints ("for i in 0U : SIMM16.u16[3 : 0].u32 do nop()" for s_nop, "Priority = ..." for
    s_setprio): no SGPR, VGPR, SCC or EXEC changes. s_set_gpr_idx_off clears a mode the emulator never sets."""
    wave = new_wave(batch=2)
    wave.s[:] = np.arange(256, dtype=np.uint64).reshape(128, 2) * np.uint64(0x01010101)
    wave.v[:] = np.arange(wave.v.size, dtype=np.uint32).reshape(wave.v.shape)
    wave.scc[:] = [1, 0]
    s, v = wave.s.copy(), wave.v.copy()
    run(wave, text, "gfx1151" if "null" in text or "alu" in text or "clause" in text or "sendmsg" in text
        else "gfx942")
    assert (wave.s == s).all() and (wave.v == v).all() and wave.scc.tolist() == [1, 0]


# ---------------------------------------------------------------------------------------------------- vector ALU


def vector_wave(cases, vgprs: int = 16, agprs: int = 0, lanes: int = 64) -> Wave:
    wave = new_wave(batch=-(-len(cases) // lanes), lanes=lanes, vgprs=vgprs, agprs=agprs)
    wave.v[:] = 0xDEADBEEF  # what a write that should not happen would leave visible
    return wave


def put(wave: Wave, reg: int, values, bits: int = 32) -> None:
    """One value per lane into v[reg] (and v[reg + 1] for 64 bits); lanes past the cases repeat the last one."""
    padded = list(values) + [values[-1]] * (wave.lanes - len(values))
    for word in range(bits // 32):
        wave.v[reg + word] = [(x >> (32 * word)) & M32 for x in padded]


def got(wave: Wave, reg: int, n: int, bits: int = 32) -> list[int]:
    words = [wave.v[reg + word][:n].tolist() for word in range(bits // 32)]
    return [sum(int(w) << (32 * i) for i, w in enumerate(ws)) for ws in zip(*words)]


def lane_bits(wave: Wave, index: int, n: int) -> list[int]:
    masks = mask_bits(wave, index)
    return [(masks[lane // wave.wave_lanes] >> (lane % wave.wave_lanes)) & 1 for lane in range(n)]


def _ashr(x: int, n: int, bits: int) -> int:
    return (signed(x, bits) >> n) & ((1 << bits) - 1)


def _mul24(a, b, sign):
    x, y = (signed(a, 24), signed(b, 24)) if sign else (a & 0xFFFFFF, b & 0xFFFFFF)
    return (x * y) & M32


VOP2 = {  # name -> reference(S0, S1) -> D (32 bits)
    "v_add_u32": lambda a, b: (a + b) & M32,  # "D0.u32 = S0.u32 + S1.u32"
    "v_add_nc_u32": lambda a, b: (a + b) & M32,  # RDNA3: "D0.u32 = S0.u32 + S1.u32"
    "v_sub_u32": lambda a, b: (a - b) & M32,  # "D0.u32 = S0.u32 - S1.u32"
    "v_sub_nc_u32": lambda a, b: (a - b) & M32,  # RDNA3: "D0.u32 = S0.u32 - S1.u32"
    "v_subrev_u32": lambda a, b: (b - a) & M32,  # "D0.u32 = S1.u32 - S0.u32"
    "v_and_b32": lambda a, b: a & b,  # "D0.u32 = (S0.u32 & S1.u32)"
    "v_or_b32": lambda a, b: a | b,
    "v_xor_b32": lambda a, b: a ^ b,
    "v_lshlrev_b32": lambda a, b: (b << (a & 31)) & M32,  # "D0.u32 = (S1.u32 << S0[4 : 0].u32)"
    "v_lshrrev_b32": lambda a, b: b >> (a & 31),  # "D0.u32 = (S1.u32 >> S0[4 : 0].u32)"
    "v_ashrrev_i32": lambda a, b: _ashr(b, a & 31, 32),  # "D0.i32 = (S1.i32 >> S0[4 : 0].u32)"
    "v_mul_u32_u24": lambda a, b: _mul24(a, b, False),  # "D0.u32 = 32'U(S0.u24) * 32'U(S1.u24)"
    "v_mul_i32_i24": lambda a, b: _mul24(a, b, True),  # "D0.i32 = 32'I(S0.i24) * 32'I(S1.i24)"
    # "D0.u32 = 32'U((64'U(S0.u24) * 64'U(S1.u24)) >> 32U)", "D0.i32 = 32'I((64'I(S0.i24) * 64'I(S1.i24)) >> 32U)"
    "v_mul_hi_u32_u24": lambda a, b: ((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 32,
    "v_mul_hi_i32_i24": lambda a, b: ((signed(a, 24) * signed(b, 24)) >> 32) & M32,
    "v_mul_lo_u32": lambda a, b: (a * b) & M32,  # "D0.u32 = S0.u32 * S1.u32"
    "v_mul_hi_u32": lambda a, b: (a * b) >> 32,  # "D0.u32 = 32'U((64'U(S0.u32) * 64'U(S1.u32)) >> 32U)"
    "v_min_u32": lambda a, b: a if a < b else b,  # "D0.u32 = S0.u32 < S1.u32 ? S0.u32 : S1.u32"
    "v_max_u32": lambda a, b: a if a >= b else b,  # "D0.u32 = S0.u32 >= S1.u32 ? S0.u32 : S1.u32"
    "v_min_i32": lambda a, b: a if signed(a) < signed(b) else b,  # "D0.i32 = S0.i32 < S1.i32 ? S0.i32 : S1.i32"
    "v_max_i32": lambda a, b: a if signed(a) >= signed(b) else b,
    # 16-bit results: the pcode writes D0.u16 only. On gfx9 the other half is zero (LLVM
    # GCNSubtarget::zeroesHigh16BitsOfDest: "return getGeneration() <= AMDGPUSubtarget::GFX9").
    "v_lshlrev_b16": lambda a, b: ((b & M16) << (a & 15)) & M16,  # "D0.u16 = (S1.u16 << S0[3 : 0].u32)"
    "v_lshrrev_b16": lambda a, b: (b & M16) >> (a & 15),  # "D0.u16 = (S1.u16 >> S0[3 : 0].u32)"
    "v_ashrrev_i16": lambda a, b: _ashr(b, a & 15, 16),  # "D0.i16 = (S1.i16 >> S0[3 : 0].u32)"
    "v_add_u16": lambda a, b: (a + b) & M16,  # "D0.u16 = S0.u16 + S1.u16"
    "v_sub_u16": lambda a, b: (a - b) & M16,  # "D0.u16 = S0.u16 - S1.u16"
}
SIXTEEN_BIT = {"v_lshlrev_b16", "v_lshrrev_b16", "v_ashrrev_i16", "v_add_u16", "v_sub_u16"}


def _med3(a, b, c):
    # "if v_max3(S0, S1, S2) == S0 then D0 = v_max(S1, S2) elsif v_max3(...) == S1 then D0 = v_max(S0, S2)
    # else D0 = v_max(S0, S1)"
    top = max(a, b, c)
    return max(b, c) if top == a else max(a, c) if top == b else max(a, b)


def _bfe_i32(a, b, c):
    # "tmp.i32 = ((S0.i32 >> S1[4 : 0].u32) & ((1 << S2[4 : 0].u32) - 1)); D0.i32 = signext_from_bit(tmp.i32,
    # S2[4 : 0].u32)"
    width = c & 31
    tmp = (signed(a) >> (b & 31)) & ((1 << width) - 1)
    return sext(tmp, width) if width else 0


def _perm(s0, s1, sel):
    """V_PERM_B32's BYTE_PERMUTE({S0, S1}, sel) for each selector byte."""
    data = (s0 << 32) | s1
    byte = lambda i: (data >> (8 * i)) & 0xFF  # noqa: E731
    out = 0
    for k in range(4):
        s = (sel >> (8 * k)) & 0xFF
        if s >= 13:
            value = 0xFF  # "if sel.u32 >= 13U then return 8'0xff"
        elif s == 12:
            value = 0  # "elsif sel.u32 == 12U then return 8'0x0"
        elif s >= 8:
            value = 0xFF * (byte(2 * (s - 8) + 1) >> 7)  # "sel == 8U: in[1][7].b8 * 8'0xff", 9: in[3], 10: in[5]...
        else:
            value = byte(s)  # "return in[sel]"
        out |= value << (8 * k)
    return out


VOP3 = {  # name -> reference(S0, S1, S2) -> D
    "v_bfi_b32": lambda a, b, c: (a & b) | (~a & c & M32),  # "D0.u32 = ((S0.u32 & S1.u32) | (~S0.u32 & S2.u32))"
    # "D0.i32 = 32'I(S0.i24) * 32'I(S1.i24) + S2.i32"
    "v_mad_i32_i24": lambda a, b, c: (signed(a, 24) * signed(b, 24) + c) & M32,
    # "D0.u32 = 32'U(S0.u24) * 32'U(S1.u24) + S2.u32"
    "v_mad_u32_u24": lambda a, b, c: ((a & 0xFFFFFF) * (b & 0xFFFFFF) + c) & M32,
    "v_add3_u32": lambda a, b, c: (a + b + c) & M32,  # "D0.u32 = S0.u32 + S1.u32 + S2.u32"
    "v_or3_b32": lambda a, b, c: a | b | c,  # "D0.u32 = (S0.u32 | S1.u32 | S2.u32)"
    "v_and_or_b32": lambda a, b, c: (a & b) | c,  # "D0.u32 = ((S0.u32 & S1.u32) | S2.u32)"
    "v_lshl_or_b32": lambda a, b, c: ((a << (b & 31)) & M32) | c,  # "D0.u32 = ((S0.u32 << S1.u32[4 : 0].u32) | S2)"
    "v_lshl_add_u32": lambda a, b, c: ((a << (b & 31)) + c) & M32,  # "D0.u32 = (S0.u32 << S1.u32[4 : 0].u32) + S2"
    "v_add_lshl_u32": lambda a, b, c: ((a + b) << (c & 31)) & M32,  # "D0.u32 = ((S0.u32 + S1.u32) << S2.u32[4 : 0])"
    # "D0.u32 = ((S0.u32 >> S1[4 : 0].u32) & ((1U << S2[4 : 0].u32) - 1U))"
    "v_bfe_u32": lambda a, b, c: (a >> (b & 31)) & ((1 << (c & 31)) - 1),
    "v_bfe_i32": _bfe_i32,
    "v_xad_u32": lambda a, b, c: ((a ^ b) + c) & M32,  # "D0.u32 = (S0.u32 ^ S1.u32) + S2.u32"
    "v_perm_b32": _perm,
    "v_med3_u32": _med3,
    "v_med3_i32": lambda a, b, c: _med3(signed(a), signed(b), signed(c)) & M32,
    # "D0.u32 = 32'U(({ S0.u32, S1.u32 } >> S2.u32[4 : 0]) & 0xffffffffLL)"
    "v_alignbit_b32": lambda a, b, c: (((a << 32) | b) >> (c & 31)) & M32,
}


def check_vector(text: str, ref, cases, sources: int, arch: str = "gfx942", high: int | None = None):
    """`text` reads v1 (, v2, v3) and writes v0; one case per lane. `high`: the expected upper half of a 16-bit
    result when the reference gives only the low one (None: the reference gives all 32 bits)."""
    wave = vector_wave(cases)
    for k in range(sources):
        put(wave, 1 + k, [c[k] for c in cases])
    put(wave, 0, [0xA5A5A5A5] * len(cases))
    run(wave, text, arch)
    want = [ref(*c) | ((0xA5A50000 if high == "old" else 0) if high is not None else 0) for c in cases]
    result = got(wave, 0, len(cases))
    bad = [(c, hex(g), hex(w)) for c, g, w in zip(cases, result, want) if g != w]
    assert not bad, f"{text}: {len(bad)} lanes differ, first {bad[:3]}"


def vop2_spellings(name):
    return [s for s in ("", "_e32", "_e64") if f"{name}{s}" in DECODERS]


@pytest.mark.parametrize("name", sorted(VOP2))
def test_vop2(name):
    cases = PAIRS32 + [(a, b) for a in (0, 1, 7, 8, 15, 16, 17, 31, 32) for b in (0x8000, 0xFFFF, 0x12345678)]
    high = 0 if name in SIXTEEN_BIT else None
    for suffix in vop2_spellings(name):
        check_vector(f"{name}{suffix} v0, v1, v2", VOP2[name], cases, 2, high=high)
    sdwa = " dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD"
    check_vector(f"{name}_sdwa v0, v1, v2{sdwa}", VOP2[name], cases, 2, high=high)


@pytest.mark.parametrize("name", sorted(SIXTEEN_BIT))
def test_16_bit_results_keep_the_high_half_on_gfx11(name):
    """LLVM GCNSubtarget::zeroesHigh16BitsOfDest: "On gfx10, all 16-bit instructions preserve the high bits." (the
    RDNA3 pcode writes D0.u16 only): on gfx1151 a fake-16 VOP2 result leaves bits 31:16 of the destination."""
    check_vector(f"{name}_e32 v0, v1, v2", VOP2[name], PAIRS32[:200], 2, arch="gfx1151", high="old")


@pytest.mark.parametrize("name", sorted(VOP3))
def test_vop3(name):
    cases = TRIPLES32
    if name == "v_perm_b32":  # every selector byte value, sign fills included
        cases = cases + [(a, b, s * 0x01010101) for a, b in PAIRS32[::40] for s in range(16)] + [
            (a, b, s) for a, b in PAIRS32[::40] for s in (0x0C0D0E0F, 0x08090A0B, 0x07050301, 0xFF10200C)]
    if name in ("v_bfe_u32", "v_bfe_i32"):
        cases = cases + [(a, off, width) for a in SMALL + RANDOM32[:4] for off in (0, 1, 15, 16, 31, 32)
                         for width in (0, 1, 8, 16, 17, 31, 32, 33)]
    for suffix in vop2_spellings(name):
        check_vector(f"{name}{suffix} v0, v1, v2, v3", VOP3[name], cases, 3)


@pytest.mark.parametrize("selector", [0x0C0D0E0F, 0x03020100, 0x07060504, 0x0C0C0201, 0x08090A0B, 0x0D0E0F0C])
def test_perm_with_a_constant_selector(selector):
    """The emulator gathers bytes in one step for constant selectors; the same BYTE_PERMUTE reference holds."""
    check_vector(f"v_perm_b32 v0, v1, v2, {selector:#x}", lambda a, b: _perm(a, b, selector), PAIRS32, 2)


def test_vop3_only_opcodes_refuse_sdwa():
    """SDWA is a VOP1/VOP2/VOPC encoding: a three-source opcode in _sdwa form is refused at decode, naming it."""
    for name in VOP3:
        with pytest.raises(EmulatorError, match="SDWA"):
            run(vector_wave([0]), f"{name}_sdwa v0, v1, v2, v3 dst_sel:DWORD src0_sel:DWORD src1_sel:DWORD")


@pytest.mark.parametrize("table", [0x00, 0x01, 0x80, 0xFF, 0x96, 0xE8, 0xCA, 0xF0, 0xCC, 0xAA, 0x1E, 0x6A])
@pytest.mark.parametrize("width", [32, 16])
def test_bitop3(table, width):
    """"tmp = (tmp | (32'I(TTBL.b32 & 0x1) != 0 ? 32'U(~S0.b32 & ~S1.b32 & ~S2.b32) : 0U)); ... 0x80: S0 & S1 &
    S2": bit k of the table adds the minterm whose S0, S1, S2 are bits 2, 1, 0 of k. The b16 form writes D.b16."""
    def ref(a, b, c):
        out = 0
        for k in range(8):
            if table >> k & 1:
                out |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c) & M32
        return out & ((1 << width) - 1)
    check_vector(f"v_bitop3_b{width} v0, v1, v2, v3 bitop3:{table:#x}", ref, TRIPLES32, 3)


@pytest.mark.parametrize("name", ["v_add_u32", "v_add_nc_u32", "v_sub_u32", "v_sub_nc_u32", "v_subrev_u32"])
def test_integer_clamp_saturates(name):
    """VOP3 `clamp` on unsigned integer add/sub saturates to [0, 2^32 - 1] (CDNA3 ISA, VOP3 clamp bit: "integer
    results are clamped"; the pcode lines do not carry it)."""
    exact = {"v_add_u32": lambda a, b: a + b, "v_add_nc_u32": lambda a, b: a + b, "v_sub_u32": lambda a, b: a - b,
             "v_sub_nc_u32": lambda a, b: a - b, "v_subrev_u32": lambda a, b: b - a}[name]
    check_vector(f"{name}_e64 v0, v1, v2 clamp", lambda a, b: min(max(exact(a, b), 0), M32), PAIRS32, 2)


SDWA_SEL = {"DWORD": (0, 32), "WORD_0": (0, 16), "WORD_1": (16, 16), "BYTE_0": (0, 8), "BYTE_1": (8, 8),
            "BYTE_2": (16, 8), "BYTE_3": (24, 8)}


@pytest.mark.parametrize("src0_sel, src1_sel, dst_sel, unused, sign", [
    ("BYTE_1", "WORD_1", "DWORD", "UNUSED_PAD", False), ("BYTE_3", "BYTE_0", "WORD_1", "UNUSED_PAD", False),
    ("WORD_0", "WORD_1", "WORD_0", "UNUSED_PRESERVE", False), ("BYTE_2", "BYTE_3", "BYTE_1", "UNUSED_PRESERVE", False),
    ("WORD_1", "BYTE_0", "DWORD", "UNUSED_PAD", True), ("BYTE_3", "WORD_0", "DWORD", "UNUSED_PAD", True)])
@pytest.mark.parametrize("name", ["v_add_u32", "v_and_b32", "v_lshlrev_b32", "v_sub_u32"])
def test_sdwa_selects(name, src0_sel, src1_sel, dst_sel, unused, sign):
    """SDWA (CDNA3 ISA, "Sub-Dword Addressing"): each source is the selected field, zero- or (sext) sign-extended;
    the result's low bits go to the destination field, the other bits are 0 (UNUSED_PAD) or kept
    (UNUSED_PRESERVE)."""
    def field(x, sel):
        shift, width = SDWA_SEL[sel]
        value = (x >> shift) & ((1 << width) - 1)
        return sext(value, width) if sign and width < 32 else value

    def ref(a, b):
        shift, width = SDWA_SEL[dst_sel]
        keep = ((1 << width) - 1) << shift
        value = (VOP2[name](field(a, src0_sel), field(b, src1_sel)) << shift) & keep
        return value | (0xA5A5A5A5 & ~keep & M32 if unused == "UNUSED_PRESERVE" else 0)
    src0, src1 = ("sext(v1)", "sext(v2)") if sign else ("v1", "v2")
    check_vector(f"{name}_sdwa v0, {src0}, {src1} dst_sel:{dst_sel} dst_unused:{unused} src0_sel:{src0_sel} "
                 f"src1_sel:{src1_sel}", ref, PAIRS32, 2)


def test_vector_sources_from_sgprs_and_constants_per_workgroup():
    """An SGPR source is one value per workgroup, broadcast to its lanes; constants are their 32-bit pattern."""
    cases = PAIRS32[:256]
    wave = vector_wave(cases)
    s_values = [0x80000000, 5, 0xFFFFFFFF, 31][:wave.batch]
    set_sgprs(wave, 4, s_values)
    put(wave, 2, [b for _, b in cases])
    run(wave, "v_lshlrev_b32_e64 v0, s4, v2")
    run(wave, "v_sub_u32_e32 v1, -16, v2")
    run(wave, "v_add3_u32 v3, s4, 0x12345678, v2")
    for lane, (_, b) in enumerate(cases):
        s = s_values[lane // 64]
        assert got(wave, 0, lane + 1)[lane] == VOP2["v_lshlrev_b32"](s, b)
        assert got(wave, 1, lane + 1)[lane] == VOP2["v_sub_u32"](sext(-16, 32), b)
        assert got(wave, 3, lane + 1)[lane] == VOP3["v_add3_u32"](s, 0x12345678, b)


def test_exec_masked_lanes_keep_their_destination():
    """Lanes off in EXEC are not written (CDNA3 ISA, "EXEC mask": "instructions ... have no effect on inactive
    lanes")."""
    cases = PAIRS32[:128]
    wave = vector_wave(cases)
    put(wave, 1, [a for a, _ in cases])
    put(wave, 2, [b for _, b in cases])
    set_sgprs(wave, EXEC, [0x5555555500000000 | 0xF0F0F0F0, 0], 64)
    wave.sync_exec()
    run(wave, "v_xor_b32_e32 v0, v1, v2")
    active = lane_bits(wave, EXEC, len(cases))
    for lane, (a, b) in enumerate(cases):
        assert got(wave, 0, len(cases))[lane] == (a ^ b if active[lane] else 0xDEADBEEF)


CARRY = {  # name -> (uses carry-in, reference(S0, S1, cin) -> (D, carry-out))
    # "tmp = 64'U(S0.u32) + 64'U(S1.u32); VCC.u64[laneId] = tmp >= 0x100000000ULL ? 1'1U : 1'0U"
    "v_add_co_u32": (False, lambda a, b, c: ((a + b) & M32, a + b >= 1 << 32)),
    # "tmp = 64'U(S0.u32) + 64'U(S1.u32) + VCC.u64[laneId].u64; VCC.u64[laneId] = tmp >= 0x100000000ULL"
    "v_addc_co_u32": (True, lambda a, b, c: ((a + b + c) & M32, a + b + c >= 1 << 32)),
    # "tmp = S0.u32 - S1.u32; VCC.u64[laneId] = S1.u32 > S0.u32 ? 1'1U : 1'0U"
    "v_sub_co_u32": (False, lambda a, b, c: ((a - b) & M32, b > a)),
    # "tmp = S1.u32 - S0.u32; VCC.u64[laneId] = S0.u32 > S1.u32 ? 1'1U : 1'0U"
    "v_subrev_co_u32": (False, lambda a, b, c: ((b - a) & M32, a > b)),
    # "tmp = S0.u32 - S1.u32 - VCC.u64[laneId].u32; VCC = 64'U(S1.u32) + VCC.u64[laneId].u64 > 64'U(S0.u32)"
    "v_subb_co_u32": (True, lambda a, b, c: ((a - b - c) & M32, b + c > a)),
    # "tmp = S1.u32 - S0.u32 - VCC.u64[laneId].u32; VCC = 64'U(S0.u32) + VCC.u64[laneId].u64 > 64'U(S1.u32)"
    "v_subbrev_co_u32": (True, lambda a, b, c: ((b - a - c) & M32, a + c > b)),
}


@pytest.mark.parametrize("name", sorted(CARRY))
@pytest.mark.parametrize("encoding", ["e32", "e64"])
def test_vector_carry(name, encoding):
    uses_carry, ref = CARRY[name]
    cases = [(a, b, c) for a, b in PAIRS32 for c in ((0, 1) if uses_carry else (0,))]
    wave = vector_wave(cases)
    put(wave, 1, [c[0] for c in cases])
    put(wave, 2, [c[1] for c in cases])
    cin_bits = [0] * wave.batch
    for lane, c in enumerate(cases):
        cin_bits[lane // 64] |= c[2] << (lane % 64)
    cin = VCC if encoding == "e32" else 12
    set_sgprs(wave, cin, cin_bits, 64)
    if encoding == "e32":
        text = f"{name}_e32 v0, vcc, v1, v2" + (", vcc" if uses_carry else "")
        cout = VCC
    else:
        text = f"{name}_e64 v0, s[10:11], v1, v2" + (", s[12:13]" if uses_carry else "")
        cout = 10
    run(wave, text)
    want = [ref(*c) for c in cases]
    assert got(wave, 0, len(cases)) == [d for d, _ in want]
    assert lane_bits(wave, cout, len(cases)) == [int(c) for _, c in want]


VCMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lg": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


@pytest.mark.parametrize("cond", sorted(VCMP))
@pytest.mark.parametrize("typ", ["u32", "i32", "u64", "i64"])
@pytest.mark.parametrize("encoding", ["e32", "e64"])
def test_vector_compare(cond, typ, encoding):
    """"D0.u64[laneId] = S0.u32 < S1.u32" (VOPC; e32 writes VCC). The integer "lg" spellings have no opcode of
    their own in the ISA; the emulator reads them as "ne" ("D0.u64[laneId] = S0.u32 <> S1.u32")."""
    bits = int(typ[1:])
    cases = PAIRS64 if bits == 64 else PAIRS32
    view = (lambda x: x) if typ[0] == "u" else (lambda x: signed(x, bits))
    wave = vector_wave(cases)
    put(wave, 2, [a for a, _ in cases], bits)
    put(wave, 4, [b for _, b in cases], bits)
    a, b = ("v[2:3]", "v[4:5]") if bits == 64 else ("v2", "v4")
    dst, index = ("vcc", VCC) if encoding == "e32" else ("s[10:11]", 10)
    set_sgprs(wave, index, [M64] * wave.batch, 64)
    run(wave, f"v_cmp_{cond}_{typ}_{encoding} {dst}, {a}, {b}")
    assert lane_bits(wave, index, len(cases)) == [int(VCMP[cond](view(x), view(y))) for x, y in cases]


@pytest.mark.parametrize("text, dst", [("v_cmp_lt_u32_e32 vcc, v1, v2", VCC), ("v_cmp_ne_i32_e64 s[10:11], v1, v2", 10),
                                       ("v_add_co_u32_e64 v0, s[10:11], v1, v2", 10),
                                       ("v_sub_co_u32_e64 v0, s[10:11], v1, v2", 10)])
def test_mask_bits_of_inactive_lanes_are_cleared(text, dst):
    """The pcode writes D0.u64[laneId] / VCC.u64[laneId] for active lanes only; the bits of inactive lanes read 0
    (tinygrad test/mockgpu/amd/emu.py: "Both VOPC and VOP3 clear inactive lane bits (hardware verified)")."""
    cases = [(M32, 1) if "add" in text else (1, 2)] * 128  # every active lane's result bit is 1
    wave = vector_wave(cases)
    put(wave, 1, [a for a, _ in cases])
    put(wave, 2, [b for _, b in cases])
    set_sgprs(wave, dst, [M64, M64], 64)
    set_sgprs(wave, EXEC, [0x00FF00FF00FF00FF, 0xF000000000000001], 64)
    wave.sync_exec()
    run(wave, text)
    assert mask_bits(wave, dst) == [0x00FF00FF00FF00FF, 0xF000000000000001]


@pytest.mark.parametrize("opcode", [f"v_cmp_{c}_{t}_{e}" for c in VCMP for t in ("u16", "i16") for e in ("e32",
                                                                                                         "e64")])
def test_16_bit_compares_are_refused(opcode):
    """Registered so that the refusal names the instruction; never run."""
    with pytest.raises(EmulatorError, match="unsupported"):
        run(vector_wave([0]), f"{opcode} vcc, v1, v2")


SHIFT64 = {
    "v_lshlrev_b64": lambda s, x: (x << (s & 63)) & M64,  # "D0.u64 = (S1.u64 << S0[5 : 0].u32)"
    "v_lshrrev_b64": lambda s, x: x >> (s & 63),  # "D0.u64 = (S1.u64 >> S0[5 : 0].u32)"
    "v_ashrrev_i64": lambda s, x: _ashr(x, s & 63, 64),  # "D0.i64 = (S1.i64 >> S0[5 : 0].u32)"
}


@pytest.mark.parametrize("opcode", sorted(SHIFT64) + ["v_lshlrev_b64_e64"])
def test_64_bit_shifts(opcode):
    ref = SHIFT64[opcode.removesuffix("_e64")]
    cases = [(s, x) for s in (0, 1, 31, 32, 33, 63, 64, 65, 127, 0xFFFFFFFF) for x in EDGE64 + RANDOM64]
    wave = vector_wave(cases)
    put(wave, 1, [s for s, _ in cases])
    put(wave, 2, [x for _, x in cases], 64)
    run(wave, f"{opcode} v[4:5], v1, v[2:3]")
    assert got(wave, 4, len(cases), 64) == [ref(s, x) for s, x in cases]


def test_lshl_add_u64():
    """"D0.u64 = (S0.u64 << S1.u32[2 : 0].u32) + S2.u64" (64-bit wrap)."""
    cases = [(x, s, y) for x, y in PAIRS64[::3] for s in (0, 1, 4, 7, 8, 0xFFFFFFFF)]
    wave = vector_wave(cases)
    put(wave, 2, [c[0] for c in cases], 64)
    put(wave, 4, [c[1] for c in cases])
    put(wave, 6, [c[2] for c in cases], 64)
    run(wave, "v_lshl_add_u64 v[8:9], v[2:3], v4, v[6:7]")
    assert got(wave, 8, len(cases), 64) == [((x << (s & 7)) + y) & M64 for x, s, y in cases]


def test_mad_u64_u32():
    """"{ D1.u1, D0.u64 } = 65'B(65'U(S0.u32) * 65'U(S1.u32) + 65'U(S2.u64))": D1 is bit 64 of the sum."""
    cases = [(a, b, c) for a, b in PAIRS32[::7] for c in (0, 1, M32, 1 << 63, M64, RANDOM64[0])]
    wave = vector_wave(cases)
    put(wave, 1, [c[0] for c in cases])
    put(wave, 2, [c[1] for c in cases])
    put(wave, 4, [c[2] for c in cases], 64)
    run(wave, "v_mad_u64_u32 v[6:7], s[10:11], v1, v2, v[4:5]")
    full = [a * b + c for a, b, c in cases]
    assert got(wave, 6, len(cases), 64) == [f & M64 for f in full]
    assert lane_bits(wave, 10, len(cases)) == [f >> 64 for f in full]


@pytest.mark.parametrize("text, bits", [("v_mov_b32_e32 v0, v1", 32), ("v_mov_b32 v0, v1", 32),
                                        ("v_not_b32_e32 v0, v1", 32), ("v_mov_b64_e32 v[4:5], v[2:3]", 64),
                                        ("v_mov_b64 v[4:5], v[2:3]", 64)])
def test_moves(text, bits):
    """"D0.b32 = S0.b32", "D0.u32 = ~S0.u32", "D0.b64 = S0.b64"."""
    values = EDGE64 + RANDOM64 if bits == 64 else EDGE32 + RANDOM32
    wave = vector_wave(values)
    put(wave, 1 if bits == 32 else 2, values, bits)
    run(wave, text)
    ref = (lambda x: ~x & M32) if "not" in text else (lambda x: x)
    assert got(wave, 0 if bits == 32 else 4, len(values), bits) == [ref(x) for x in values]


def test_mov_b64_from_an_sgpr_pair_per_workgroup():
    wave = vector_wave([0] * 128)
    set_sgprs(wave, 20, [0x123456789ABCDEF0, M64], 64)
    run(wave, "v_mov_b64_e32 v[2:3], s[20:21]")
    assert got(wave, 2, 128, 64) == [0x123456789ABCDEF0] * 64 + [M64] * 64


@pytest.mark.parametrize("text", ["v_accvgpr_write_b32 a2, v1", "v_accvgpr_write a2, v1"])
def test_accvgpr_copies(text):
    """No pcode in the table: the CDNA3 ISA's "move VGPR to AGPR" / "AGPR to VGPR" / "AGPR to AGPR" copies, under
    EXEC."""
    values = EDGE32 + RANDOM32
    wave = vector_wave(values, agprs=4)
    put(wave, 1, values)
    run(wave, text)
    assert wave.a[2][:len(values)].tolist() == values
    for back in ("v_accvgpr_read_b32 v3, a2", "v_accvgpr_read v4, a2"):
        run(wave, back)
    run(wave, "v_accvgpr_mov_b32 a3, a2")
    assert got(wave, 3, len(values)) == values and got(wave, 4, len(values)) == values
    assert wave.a[3][:len(values)].tolist() == values


@pytest.mark.parametrize("encoding", ["e32", "e64"])
def test_cndmask(encoding):
    """"D0.u32 = VCC.u64[laneId] ? S1.u32 : S0.u32" (e64: the mask is the third source)."""
    cases = [(a, b, c) for a, b in PAIRS32 for c in (0, 1)][::2]
    wave = vector_wave(cases)
    put(wave, 1, [c[0] for c in cases])
    put(wave, 2, [c[1] for c in cases])
    bits = [0] * wave.batch
    for lane, c in enumerate(cases):
        bits[lane // 64] |= c[2] << (lane % 64)
    index = VCC if encoding == "e32" else 14
    set_sgprs(wave, index, bits, 64)
    run(wave, f"v_cndmask_b32_{encoding} v0, v1, v2, {'vcc' if encoding == 'e32' else 's[14:15]'}")
    assert got(wave, 0, len(cases)) == [b if c else a for a, b, c in cases]


def test_pk_sub_i16():
    """"tmp[15 : 0].i16 = S0[15 : 0].i16 - S1[15 : 0].i16; tmp[31 : 16].i16 = S0[31 : 16].i16 - S1[31 : 16].i16"."""
    ref = lambda a, b: ((a - b) & M16) | ((((a >> 16) - (b >> 16)) & M16) << 16)  # noqa: E731
    check_vector("v_pk_sub_i16 v0, v1, v2", ref, PAIRS32, 2)


def test_readfirstlane_per_workgroup():
    """"if EXEC == 0x0LL then lane = 0 else lane = s_ff1_i32_b64(EXEC) endif; D0.b32 = VGPR[lane][SRC0.u32]"."""
    execs = [M64, 1 << 63, 0, 0xF0, 1 << 32, 0x8000000000000001]
    wave = vector_wave([0] * 64 * len(execs))
    values = RANDOM32[:64] * len(execs)
    put(wave, 1, [v ^ (i // 64) for i, v in enumerate(values)])
    set_sgprs(wave, EXEC, execs, 64)
    wave.sync_exec()
    run(wave, "v_readfirstlane_b32 s8, v1")
    first = [0 if e == 0 else (e & -e).bit_length() - 1 for e in execs]
    assert get_sgprs(wave, 8) == [values[f] ^ g for g, f in enumerate(first)]


@pytest.mark.parametrize("dst, src", [("v0.l", "v1.l"), ("v0.h", "v1.l"), ("v0.l", "v1.h"), ("v0.h", "v1.h"),
                                      ("v0.h", "0x8001")])
@pytest.mark.parametrize("encoding", ["e32", "e64"])
def test_mov_b16_true16(dst, src, encoding):
    """RDNA3 "D0.b16 = S0.b16" with true16 halves (.l bits 15:0, .h bits 31:16); the other half of D stays."""
    values = EDGE32 + RANDOM32
    wave = vector_wave(values, lanes=32)
    put(wave, 1, values)
    put(wave, 0, values[::-1])
    run(wave, f"v_mov_b16_{encoding} {dst}, {src}", "gfx1151")

    def ref(old, s):
        half = int(src, 0) & M16 if src.startswith("0x") else (s >> (16 if src.endswith("h") else 0)) & M16
        return (old & 0xFFFF) | (half << 16) if dst.endswith("h") else (old & 0xFFFF0000) | half
    assert got(wave, 0, len(values)) == [ref(o, s) for o, s in zip(values[::-1], values)]


def test_dual_issue_pair_reads_before_it_writes():
    """VOPD (RDNA3): the X and Y halves are two VOP2 operations issued together; each half here is checked against
    its own reference, the Y half reading a register the X half writes (both read their sources first)."""
    cases = PAIRS32[:256]
    wave = vector_wave(cases, lanes=32)
    put(wave, 1, [a for a, _ in cases])
    put(wave, 2, [b for _, b in cases])
    run(wave, "v_dual_add_nc_u32 v1, v1, v2 :: v_dual_lshlrev_b32 v3, v2, v1", "gfx1151")
    assert got(wave, 1, len(cases)) == [VOP2["v_add_nc_u32"](a, b) for a, b in cases]
    assert got(wave, 3, len(cases)) == [VOP2["v_lshlrev_b32"](b, a) for a, b in cases]


# ---------------------------------------------------------------------------------------------------- LDS and buffers


class LdsStub:
    """A workgroup with nothing but LDS bytes per workgroup of the batch (no race or bank bookkeeping)."""

    def __init__(self, batch: int, size: int = 1 << 13):
        self.bytes = np.zeros((batch, size), np.uint8)
        self.mma, self.id = 0, 0

    def lds_read(self, w, rows, starts, size):
        return self.bytes[rows[:, None], starts[:, None] + np.arange(size)]

    def lds_write(self, w, rows, starts, size, payload):
        self.bytes[rows[:, None], starts[:, None] + np.arange(size)] = payload

    def count_banks(self, *args):
        pass

    def open_window(self, *args):
        pass

    def close_window(self, *args):
        pass


def lds_wave(batch: int = 2, lanes: int = 64):
    lds = LdsStub(batch)
    lds.bytes[:] = np.random.default_rng(7).integers(0, 256, lds.bytes.shape, dtype=np.uint8)
    lds.bytes[:, :64] = [0x00, 0x7F, 0x80, 0xFF] * 16  # sign boundaries at the start of each row
    wave = new_wave(batch=batch, lanes=lanes, workgroup=lds)
    wave.v[:] = np.random.default_rng(8).integers(0, 1 << 32, wave.v.shape, dtype=np.uint64).astype(np.uint32)
    return wave, lds


def le(data) -> int:
    return int.from_bytes(bytes(int(b) for b in data), "little")


DS_READ = {  # width -> (bytes, reference(memory value, old register) -> new register)
    "u8": (1, lambda m, old: m),  # "RETURN_DATA.u32 = 32'U({ 24'0U, MEM[ADDR].u8 })"
    "i8": (1, lambda m, old: sext(m, 8)),  # "RETURN_DATA.i32 = 32'I(signext(MEM[ADDR].i8))"
    "u16": (2, lambda m, old: m),  # "RETURN_DATA.u32 = 32'U({ 16'0U, MEM[ADDR].u16 })"
    "i16": (2, lambda m, old: sext(m, 16)),  # "RETURN_DATA.i32 = 32'I(signext(MEM[ADDR].i16))"
    # "RETURN_DATA[15 : 0].u16 = MEM[ADDR].u16; // RETURN_DATA[31:16] is preserved."
    "u16_d16": (2, lambda m, old: (old & 0xFFFF0000) | m),
    # "RETURN_DATA[31 : 16].u16 = MEM[ADDR].u16; // RETURN_DATA[15:0] is preserved."
    "u16_d16_hi": (2, lambda m, old: (old & 0xFFFF) | (m << 16)),
    # "RETURN_DATA[15 : 0].u16 = 16'U({ 8'0U, MEM[ADDR].u8 }); // RETURN_DATA[31:16] is preserved."
    "u8_d16": (1, lambda m, old: (old & 0xFFFF0000) | m),
    # "RETURN_DATA[31 : 16].u16 = 16'U({ 8'0U, MEM[ADDR].u8 }); // RETURN_DATA[15:0] is preserved."
    "u8_d16_hi": (1, lambda m, old: (old & 0xFFFF) | (m << 16)),
}


def retire(wave):
    run(wave, "s_waitcnt lgkmcnt(0) vmcnt(0)")


@pytest.mark.parametrize("width", sorted(DS_READ))
@pytest.mark.parametrize("prefix", ["ds_read", "ds_load"])
@pytest.mark.parametrize("offset", [0, 3])
def test_ds_sub_dword_reads(prefix, width, offset):
    """Each lane reads its own byte address (unaligned, across the sign boundaries); lanes off in EXEC keep v0."""
    size, ref = DS_READ[width]
    wave, lds = lds_wave()
    addresses = [(lane * 3) % 200 for lane in range(wave.lanes)]
    put(wave, 1, addresses)
    old = got(wave, 0, wave.lanes)
    set_sgprs(wave, EXEC, [M64, 0xFFFF0000FFFF0FFF], 64)
    wave.sync_exec()
    active = lane_bits(wave, EXEC, wave.lanes)
    run(wave, f"{prefix}_{width} v0, v1 offset:{offset}")
    retire(wave)
    for lane in range(wave.lanes):
        start = addresses[lane] + offset
        memory = le(lds.bytes[lane // 64, start:start + size])
        assert got(wave, 0, wave.lanes)[lane] == (ref(memory, old[lane]) if active[lane] else old[lane]), lane


DS_WIDE = {"b32": 4, "b64": 8, "b96": 12, "b128": 16}


@pytest.mark.parametrize("width", sorted(DS_WIDE))
@pytest.mark.parametrize("prefix", ["ds_read", "ds_load"])
def test_ds_dword_reads(prefix, width):
    """"RETURN_DATA[31 : 0] = MEM[addr + OFFSET.u32].b32; RETURN_DATA[63 : 32] = MEM[addr + OFFSET.u32 + 4U]..."."""
    size = DS_WIDE[width]
    wave, lds = lds_wave()
    addresses = [(lane * 20) % 1024 for lane in range(wave.lanes)]
    put(wave, 1, addresses)
    run(wave, f"{prefix}_{width} v[4:{3 + size // 4}], v1 offset:16")
    retire(wave)
    for lane in range(wave.lanes):
        start = addresses[lane] + 16
        assert got(wave, 4, wave.lanes, 8 * size)[lane] == le(lds.bytes[lane // 64, start:start + size])


@pytest.mark.parametrize("opcode, size, unit", [
    ("ds_read2_b32", 4, 4), ("ds_read2_b64", 8, 8), ("ds_read2st64_b32", 4, 256), ("ds_read2st64_b64", 8, 512),
    ("ds_load_2addr_b32", 4, 4), ("ds_load_2addr_b64", 8, 8), ("ds_load_2addr_stride64_b32", 4, 256),
    ("ds_load_2addr_stride64_b64", 8, 512)])
def test_ds_read2(opcode, size, unit):
    """"RETURN_DATA[31 : 0] = MEM[addr + OFFSET0.u32 * 4U].b32; RETURN_DATA[63 : 32] = MEM[addr + OFFSET1.u32 *
    4U].b32" (8U for b64, 256U / 512U for the stride-64 forms)."""
    wave, lds = lds_wave()
    addresses = [(lane * 8) % 512 for lane in range(wave.lanes)]
    put(wave, 1, addresses)
    run(wave, f"{opcode} v[4:{3 + size // 2}], v1 offset0:1 offset1:5")
    retire(wave)
    for lane in range(wave.lanes):
        row, a = lds.bytes[lane // 64], addresses[lane]
        want = le(row[a + unit:a + unit + size]) | (le(row[a + 5 * unit:a + 5 * unit + size]) << (8 * size))
        assert got(wave, 4, wave.lanes, 16 * size)[lane] == want


DS_WRITE = {  # width -> (bytes stored, the register bits they come from)
    "b8": (1, 0),  # "MEM[ADDR].b8 = DATA[7 : 0]"
    "b16": (2, 0),  # "MEM[ADDR].b16 = DATA[15 : 0]"
    "b8_d16_hi": (1, 16),  # "MEM[ADDR].b8 = DATA[23 : 16]"
    "b16_d16_hi": (2, 16),  # "MEM[ADDR].b16 = DATA[31 : 16]"
    "b32": (4, 0), "b64": (8, 0), "b96": (12, 0), "b128": (16, 0),  # "MEM[addr + OFFSET.u32].b32 = DATA[31 : 0]..."
}


@pytest.mark.parametrize("width", sorted(DS_WRITE))
@pytest.mark.parametrize("prefix", ["ds_write", "ds_store"])
def test_ds_writes(prefix, width):
    size, shift = DS_WRITE[width]
    wave, lds = lds_wave()
    before = lds.bytes.copy()
    addresses = [lane * 20 + (lane % 3 if size < 4 else 0) for lane in range(wave.wave_lanes)] * wave.batch
    put(wave, 1, addresses)
    set_sgprs(wave, EXEC, [M64, 0x00000000FFFFFFFF], 64)
    wave.sync_exec()
    active = lane_bits(wave, EXEC, wave.lanes)
    regs = max(1, size // 4)
    data = got(wave, 4, wave.lanes, 32 * regs)
    run(wave, f"{prefix}_{width} v1, v[4:{3 + regs}] offset:8")
    retire(wave)
    expect = before.copy()
    for lane in range(wave.lanes):
        if active[lane]:
            start = addresses[lane] + 8
            expect[lane // 64, start:start + size] = list(((data[lane] >> shift) & ((1 << 8 * size) - 1)).to_bytes(
                size, "little"))
    assert (lds.bytes == expect).all()


@pytest.mark.parametrize("opcode, size, unit", [
    ("ds_write2_b32", 4, 4), ("ds_write2_b64", 8, 8), ("ds_write2st64_b32", 4, 256), ("ds_write2st64_b64", 8, 512),
    ("ds_store_2addr_b32", 4, 4), ("ds_store_2addr_b64", 8, 8), ("ds_store_2addr_stride64_b32", 4, 256),
    ("ds_store_2addr_stride64_b64", 8, 512)])
def test_ds_write2(opcode, size, unit):
    """"MEM[addr + OFFSET0.u32 * 4U].b32 = DATA[31 : 0]; MEM[addr + OFFSET1.u32 * 4U].b32 = DATA2[31 : 0]" (8U for
    b64, 256U / 512U for the stride-64 forms); the lanes' bytes do not overlap."""
    wave, lds = lds_wave()
    before = lds.bytes.copy()
    addresses = [lane * 16 for lane in range(wave.wave_lanes)] * wave.batch
    put(wave, 1, addresses)
    regs = size // 4
    first, second = got(wave, 4, wave.lanes, 32 * regs), got(wave, 8, wave.lanes, 32 * regs)
    run(wave, f"{opcode} v1, v[4:{3 + regs}], v[8:{7 + regs}] offset0:2 offset1:7")
    retire(wave)
    expect = before.copy()
    for lane in range(wave.lanes):
        for slot, data in ((2, first[lane]), (7, second[lane])):
            start = addresses[lane] + slot * unit
            expect[lane // 64, start:start + size] = list(data.to_bytes(size, "little"))
    assert (lds.bytes == expect).all()


def buffer_wave(batch: int = 2):
    from pipelines.emulator.memory import FlatMemory

    memory = FlatMemory()
    base = memory.allocate(4096)
    content = np.random.default_rng(9).integers(0, 256, 4096, dtype=np.uint8)
    content[:16] = [0x00, 0x7F, 0x80, 0xFF] * 4
    memory.write(base, content)
    code = SimpleNamespace(instructions=[SimpleNamespace(text="buffer", line=1)])
    workgroup = SimpleNamespace(mma=0, id=0, code=code, memory=memory, open_window=lambda w, op: None,
                                close_window=lambda w, op: None)
    wave = new_wave(batch=batch, workgroup=workgroup)
    set_sgprs(wave, 4, [base & M32] * batch)
    set_sgprs(wave, 5, [base >> 32] * batch)
    set_sgprs(wave, 6, [4096] * batch)
    set_sgprs(wave, 7, [0] * batch)
    set_sgprs(wave, 8, [0, 2048][:batch])  # soffset differs per workgroup
    wave.v[:] = np.random.default_rng(10).integers(0, 1 << 32, wave.v.shape, dtype=np.uint64).astype(np.uint32)
    return wave, memory, base


BUFFER_LOADS = {"ubyte": 1, "u8": 1, "ushort": 2, "u16": 2, "dword": 4, "b32": 4, "dwordx2": 8, "b64": 8,
                "dwordx3": 12, "b96": 12, "dwordx4": 16, "b128": 16}


@pytest.mark.parametrize("width", sorted(BUFFER_LOADS))
def test_buffer_loads(width):
    """"VDATA.u32 = 32'U({ 24'0U, MEM[addr].u8 })" (ubyte / u8), "32'U({ 16'0U, MEM[addr].u16 })" (ushort / u16),
    "VDATA[31 : 0] = MEM[addr].b32; VDATA[63 : 32] = MEM[addr + 4U].b32 ..." for the dword forms; addr = base +
    soffset + voffset + offset."""
    size = BUFFER_LOADS[width]
    wave, memory, base = buffer_wave()
    offsets = [(lane * 7) % 512 for lane in range(wave.lanes)]
    put(wave, 1, offsets)
    regs = max(1, size // 4)
    run(wave, f"buffer_load_{width} v[4:{3 + regs}], v1, s[4:7], s8 offen offset:3")
    retire(wave)
    for lane in range(wave.lanes):
        start = base + [0, 2048][lane // 64] + offsets[lane] + 3
        assert got(wave, 4, wave.lanes, 32 * regs)[lane] == le(memory.read(start, size)), lane


BUFFER_STORES = {"ubyte": 1, "b8": 1, "ushort": 2, "b16": 2, "dword": 4, "b32": 4, "dwordx2": 8, "b64": 8,
                 "dwordx3": 12, "b96": 12, "dwordx4": 16, "b128": 16}


@pytest.mark.parametrize("width", sorted(BUFFER_STORES))
def test_buffer_stores(width):
    """"MEM[ADDR].b8 = VDATA[7 : 0]" (ubyte / b8), "MEM[ADDR].b16 = VDATA[15 : 0]", "MEM[addr].b32 = VDATA[31 : 0]
    ...": disjoint addresses, one per lane, both workgroups (different soffset)."""
    size = BUFFER_STORES[width]
    wave, memory, base = buffer_wave()
    offsets = [lane * 16 + 1 for lane in range(wave.wave_lanes)] * wave.batch
    put(wave, 1, offsets)
    regs = max(1, size // 4)
    data = got(wave, 4, wave.lanes, 32 * regs)
    before = memory.read(base, 4096).copy()
    run(wave, f"buffer_store_{width} v[4:{3 + regs}], v1, s[4:7], s8 offen")
    retire(wave)
    expect = before.copy()
    for lane in range(wave.lanes):
        start = [0, 2048][lane // 64] + offsets[lane]
        expect[start:start + size] = list((data[lane] & ((1 << 8 * size) - 1)).to_bytes(size, "little"))
    assert (memory.read(base, 4096) == expect).all()
