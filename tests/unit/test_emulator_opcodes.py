"""The opcodes the coverage grid (tools/opcode_coverage.py) found in IREE 3.13's kernels, one instruction at a time
on hand-worked values: f32 arithmetic with its source modifiers, packed f32 with op_sel/neg, f16 and fp8
conversions (FNUZ on gfx942, OCP on gfx950), DPP and permlane cross-lane moves, readlane/writelane (which ignore
EXEC), and gfx11's spellings of carry, cmpx, saveexec and true16 instructions. The expected values are written
from the ISA guides' pseudocode, not from the emulator.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from pipelines.emulator.isa import EXEC, VCC, Kernel, parse_instruction
from pipelines.emulator.machine import DECODERS, REFUSED, DecodeContext, RefusedInstruction, Wave, decode


def new_wave(lanes: int = 64, vgprs: int = 32) -> Wave:
    return Wave(0, SimpleNamespace(mma=0), lanes, vgprs, 0)


def run(wave: Wave, text: str, arch: str = "gfx942") -> None:
    inst = parse_instruction(text, 1)
    DECODERS[inst.opcode](inst, DecodeContext(kernel=None, arch=arch, lanes=wave.lanes, lds_banks=32))(wave)


def f32(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


def as_f32(row) -> np.ndarray:
    return np.asarray(row, np.uint32).view(np.float32)


def set_exec(wave: Wave, mask: np.ndarray) -> None:
    wave.write_mask(EXEC, mask)


# ---------------------------------------------------------------------------------------------------- scalar

@pytest.mark.parametrize("scc, want", [(1, 7), (0, 9)])
def test_s_cselect_b32_picks_the_first_source_when_scc_is_set(scc, want):
    wave = new_wave()
    wave.s[4], wave.s[5], wave.scc = 7, 9, scc
    run(wave, "s_cselect_b32 s6, s4, s5")
    assert wave.s[6] == want and wave.scc == scc  # SCC is read, not written


def test_s_cselect_b64_selects_a_whole_mask():
    wave = new_wave()
    wave.scc = 1
    run(wave, "s_cselect_b64 s[2:3], -1, 0")
    assert (wave.s[2], wave.s[3]) == (0xFFFFFFFF, 0xFFFFFFFF)
    wave.scc = 0
    run(wave, "s_cselect_b64 s[2:3], -1, 0")
    assert (wave.s[2], wave.s[3]) == (0, 0)


def test_s_add_f32_rounds_to_nearest_even():
    wave = new_wave(lanes=32)
    wave.s[8], wave.s[9] = int(f32(1.0)), int(f32(2.0 ** -24))  # 1 + 2^-24 is a tie: rounds to 1.0 (even)
    run(wave, "s_add_f32 s6, s8, s9", "gfx1151")
    assert wave.s[6] == int(f32(1.0))
    wave.s[9] = int(f32(3 * 2.0 ** -25))  # 1 + 0.75 ulp: up to 1 + 2^-23
    run(wave, "s_add_f32 s6, s8, s9", "gfx1151")
    assert wave.s[6] == int(f32(1.0 + 2.0 ** -23))
    wave.s[9] = int(f32(3 * 2.0 ** -24))  # 1 + 1.5 ulp is a tie between odd and even: up to 1 + 2^-22
    run(wave, "s_add_f32 s6, s8, s9", "gfx1151")
    assert wave.s[6] == int(f32(1.0 + 2.0 ** -22))


def test_gfx11_and_not1_saveexec():
    wave = new_wave(lanes=32)
    set_exec(wave, np.arange(32) < 8)  # lanes 0-7
    wave.s[1] = 0x0000000F  # lanes 0-3
    run(wave, "s_and_not1_saveexec_b32 s1, s1", "gfx1151")
    assert wave.s[1] == 0xFF and wave.s[EXEC] == 0x0F & ~0xFF & 0xFFFFFFFF and wave.scc == 0  # S0 & ~EXEC = 0
    set_exec(wave, np.arange(32) < 8)
    wave.s[1] = 0x0000FFFF
    run(wave, "s_and_not1_saveexec_b32 s1, s1", "gfx1151")
    assert wave.s[EXEC] == 0xFF00 and wave.scc == 1


# ---------------------------------------------------------------------------------------------------- lanes

def test_readlane_reads_a_lane_that_exec_turned_off():
    wave = new_wave()
    wave.v[2] = np.arange(64, dtype=np.uint32) * 3
    set_exec(wave, np.arange(64) < 4)
    run(wave, "v_readlane_b32 s7, v2, 63")
    assert wave.s[7] == 189


def test_writelane_writes_one_lane_even_when_exec_is_off():
    """SGPR spills: v_writelane writes lane S1 whatever EXEC says and leaves the other lanes."""
    wave = new_wave()
    wave.v[5] = 11
    set_exec(wave, np.zeros(64, bool))
    wave.s[0] = 0xDEADBEEF
    run(wave, "v_writelane_b32 v5, s0, 20")
    assert wave.v[5][20] == 0xDEADBEEF and (np.delete(wave.v[5], 20) == 11).all()
    wave.v[5][20] = 0
    set_exec(wave, np.ones(64, bool))
    run(wave, "v_readlane_b32 s1, v5, 20")
    assert wave.s[1] == 0


def test_dpp_row_bcast15_writes_only_the_rows_of_its_mask():
    wave = new_wave()
    wave.v[3] = np.arange(64, dtype=np.uint32) + 100
    wave.v[5] = 7
    run(wave, "v_mov_b32_dpp v5, v3 row_bcast:15 row_mask:0xa bank_mask:0xf")
    want = np.full(64, 7)
    want[16:32], want[48:64] = 115, 147  # row 1 from lane 15, row 3 from lane 47; rows 0 and 2 masked off
    np.testing.assert_array_equal(wave.v[5], want)


def test_dpp_row_bcast31_with_bound_ctrl_zeroes_rows_without_a_source():
    wave = new_wave()
    wave.v[3] = np.arange(64, dtype=np.uint32) + 100
    wave.v[5] = 7
    run(wave, "v_mov_b32_dpp v5, v3 row_bcast:31 row_mask:0xf bank_mask:0xf bound_ctrl:1")
    np.testing.assert_array_equal(wave.v[5], [0] * 32 + [131] * 32)


def test_dpp_source_out_of_range_without_bound_ctrl_keeps_the_destination():
    wave = new_wave()
    wave.v[3] = np.arange(64, dtype=np.uint32) + 100
    wave.v[5] = 7
    run(wave, "v_mov_b32_dpp v5, v3 row_bcast:31 row_mask:0xf bank_mask:0xf")
    np.testing.assert_array_equal(wave.v[5], [7] * 32 + [131] * 32)


@pytest.mark.parametrize("control, lane0, lane5, lane17", [
    ("quad_perm:[1,0,3,2]", 1, 4, 16),
    ("quad_perm:[2,3,0,1]", 2, 7, 19),
    ("row_mirror", 15, 10, 30),
    ("row_half_mirror", 7, 2, 22),
])
def test_dpp_permutations_within_a_row(control, lane0, lane5, lane17):
    wave = new_wave()
    wave.v[3] = np.arange(64, dtype=np.uint32)
    run(wave, f"v_mov_b32_dpp v5, v3 {control} row_mask:0xf bank_mask:0xf bound_ctrl:1")
    assert (wave.v[5][0], wave.v[5][5], wave.v[5][17]) == (lane0, lane5, lane17)


def test_dpp_from_a_lane_that_is_off_reads_zero_with_bound_ctrl():
    wave = new_wave()
    wave.v[3] = np.arange(64, dtype=np.uint32) + 1
    set_exec(wave, np.arange(64) != 1)
    run(wave, "v_mov_b32_dpp v5, v3 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1")
    assert (wave.v[5][0], wave.v[5][2]) == (0, 4)


def test_gfx11_dpp16_add_f32_adds_the_mirrored_lane():
    wave = new_wave(lanes=32)
    wave.v[4] = f32(np.arange(32, dtype=np.float32))
    run(wave, "v_add_f32_dpp v4, v4, v4 row_half_mirror row_mask:0xf bank_mask:0xf bound_ctrl:1", "gfx1151")
    assert as_f32(wave.v[4])[0] == 7.0 and as_f32(wave.v[4])[9] == 14.0 + 9.0  # lane 9 <- lane 14


def test_permlanex16_reads_the_other_row():
    """Selectors all 0xF (S1 = S2 = -1): every lane reads lane 15 of the other row of 16."""
    wave = new_wave(lanes=32)
    wave.v[1] = np.arange(32, dtype=np.uint32) + 100
    run(wave, "v_permlanex16_b32 v8, v1, -1, -1 op_sel:[1,0]", "gfx1151")
    np.testing.assert_array_equal(wave.v[8], [131] * 16 + [115] * 16)


def test_permlanex16_selectors_pick_lanes():
    wave = new_wave(lanes=32)
    wave.v[1] = np.arange(32, dtype=np.uint32)
    wave.s[4], wave.s[5] = 0x76543210, 0xFEDCBA98  # identity selectors: lane i reads lane i of the other row
    run(wave, "v_permlanex16_b32 v8, v1, s4, s5", "gfx1151")
    np.testing.assert_array_equal(wave.v[8], np.r_[np.arange(16, 32), np.arange(16)])


# ---------------------------------------------------------------------------------------------------- f32

def test_fma_applies_abs_and_neg_modifiers():
    wave = new_wave()
    wave.v[1], wave.v[2], wave.v[3] = f32(-2.0), f32(3.0), f32(-1.0)
    run(wave, "v_fma_f32 v4, |v1|, v2, -|v3|")  # |-2| * 3 - |-1|
    assert (as_f32(wave.v[4]) == 5.0).all()


def test_fma_rounds_once():
    """(1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly; a separate multiply would round the product to 1 + 2^-11."""
    wave = new_wave()
    x = np.float32(1 + 2.0 ** -12)
    wave.v[1], wave.v[2] = f32(x), f32(-1.0)
    run(wave, "v_fma_f32 v4, v1, v1, v2")
    assert (as_f32(wave.v[4]) == np.float32(2.0 ** -11 + 2.0 ** -24)).all()


def test_fmac_fmaak_fmamk_operand_order():
    wave = new_wave()
    wave.v[1], wave.v[2], wave.v[3] = f32(2.0), f32(5.0), f32(0.5)
    run(wave, "v_fmac_f32_e32 v3, v1, v2")  # v3 = 2 * 5 + 0.5
    assert (as_f32(wave.v[3]) == 10.5).all()
    run(wave, "v_fmaak_f32 v4, v1, v2, 0x3f800000")  # 2 * 5 + 1.0
    assert (as_f32(wave.v[4]) == 11.0).all()
    run(wave, "v_fmamk_f32 v4, v1, 0x40400000, v2")  # 2 * 3.0 + 5
    assert (as_f32(wave.v[4]) == 11.0).all()


def test_add_sub_mul_f32():
    wave = new_wave()
    wave.v[1], wave.v[2] = f32(1.5), f32(0.25)
    run(wave, "v_add_f32_e32 v3, v1, v2")
    run(wave, "v_sub_f32_e32 v4, v1, v2")
    run(wave, "v_mul_f32_e32 v5, v1, v2")
    assert (as_f32(wave.v[3])[0], as_f32(wave.v[4])[0], as_f32(wave.v[5])[0]) == (1.75, 1.25, 0.375)


def test_gfx11_dual_issue_f32_halves_read_before_writing():
    wave = new_wave(lanes=32)
    wave.v[4], wave.v[7], wave.v[1] = f32(1.0), f32(2.0), f32(10.0)
    run(wave, "v_dual_add_f32 v1, v4, v7 :: v_dual_fmac_f32 v4, v1, v7", "gfx1151")
    assert as_f32(wave.v[1])[0] == 3.0 and as_f32(wave.v[4])[0] == 1.0 + 10.0 * 2.0  # the fmac read the old v1


def test_pk_fma_f32_op_sel_hi_broadcasts_the_low_scalar():
    wave = new_wave()
    wave.v[6], wave.v[7] = f32(1.5), f32(3.0)  # a = (1.5, 3)
    wave.v[8], wave.v[9] = f32(2.0), f32(-1.0)  # b = (2, -1)
    wave.s[6], wave.s[7] = int(f32(0.25)), int(f32(100.0))  # the high scalar is not read
    run(wave, "v_pk_fma_f32 v[8:9], v[6:7], v[8:9], s[6:7] op_sel_hi:[1,1,0]")
    assert (as_f32(wave.v[8])[0], as_f32(wave.v[9])[0]) == (3.25, -2.75)


def test_pk_add_f32_neg_lo_neg_hi():
    wave = new_wave()
    wave.v[2], wave.v[3] = f32(5.0), f32(7.0)
    run(wave, "v_pk_add_f32 v[2:3], v[2:3], 1.0 op_sel_hi:[1,0] neg_lo:[1,0] neg_hi:[0,1]")
    assert (as_f32(wave.v[2])[0], as_f32(wave.v[3])[0]) == (-4.0, 6.0)  # -5 + 1, 7 - 1


def test_fma_mix_reads_f16_halves_and_f32():
    wave = new_wave(lanes=32)
    wave.v[4] = (np.uint32(0x4000) << 16) | 0x3C00  # f16 (lo 1.0, hi 2.0)
    wave.v[9] = 0x4200  # f16 3.0 in the low half
    wave.v[21] = f32(0.5)
    run(wave, "v_fma_mix_f32 v8, v4, v9, v21 op_sel:[1,0,0] op_sel_hi:[1,1,0]", "gfx1151")
    assert as_f32(wave.v[8])[0] == 2.0 * 3.0 + 0.5


@pytest.mark.parametrize("opcode, a, b, want", [
    ("v_cmp_lt_f32_e64", 1.0, 2.0, True), ("v_cmp_lt_f32_e64", np.nan, 2.0, False),
    ("v_cmp_nlt_f32_e64", np.nan, 2.0, True), ("v_cmp_nlt_f32_e64", 1.0, 2.0, False),
    ("v_cmp_ngt_f32_e64", 3.0, 2.0, False), ("v_cmp_ngt_f32_e64", 2.0, 2.0, True),
])
def test_float_compares_and_nan(opcode, a, b, want):
    wave = new_wave()
    wave.v[1], wave.v[2] = f32(a), f32(b)
    run(wave, f"{opcode} s[4:5], v1, v2")
    assert wave.read_mask(4).all() == want and wave.read_mask(4).any() == want


def test_float_compare_abs_against_an_inline_constant():
    wave = new_wave()
    wave.v[1] = f32(np.where(np.arange(64) % 2 == 0, -0.5, -1.5).astype(np.float32))
    run(wave, "v_cmp_lt_f32_e64 vcc, |v1|, 1.0")
    np.testing.assert_array_equal(wave.read_mask(VCC), np.arange(64) % 2 == 0)


@pytest.mark.parametrize("value, want", [(-2.7, -2), (2.7, 2), (3e9, 2147483647), (-3e9, -2147483648), (np.nan, 0)])
def test_cvt_i32_f32_truncates_and_saturates(value, want):
    wave = new_wave()
    wave.v[1] = f32(value)
    run(wave, "v_cvt_i32_f32_e32 v2, v1")
    assert wave.v[2].view(np.int32)[0] == want


@pytest.mark.parametrize("value, want", [(2.5, 2.0), (3.5, 4.0), (-0.5, -0.0), (1.25, 1.0)])
def test_rndne_rounds_ties_to_even(value, want):
    wave = new_wave()
    wave.v[1] = f32(value)
    run(wave, "v_rndne_f32_e32 v2, v1")
    assert as_f32(wave.v[2])[0] == want and np.signbit(as_f32(wave.v[2])[0]) == np.signbit(want)


def test_ldexp_and_exp():
    wave = new_wave()
    wave.v[1], wave.v[2] = f32(1.5), np.uint32(np.int32(-3).view(np.uint32))
    run(wave, "v_ldexp_f32 v3, v1, v2")
    assert as_f32(wave.v[3])[0] == 1.5 / 8
    wave.v[1] = f32(3.0)
    run(wave, "v_exp_f32_e32 v4, v1")
    assert as_f32(wave.v[4])[0] == 8.0


# ---------------------------------------------------------------------------------------------------- conversions

@pytest.mark.parametrize("arch, want", [("gfx942", (0.5, 1.0)), ("gfx950", (1.0, 2.0))])
def test_cvt_pk_f32_fp8_high_word_into_its_own_source(arch, want):
    """Bytes 0x38, 0x40 are 0.5, 1.0 in gfx942's e4m3 FNUZ (bias 8) and 1.0, 2.0 in gfx950's OCP e4m3fn (bias 7).
    The destination pair starts at the source register, which must be read first."""
    wave = new_wave()
    wave.v[8] = 0x4038_0000
    run(wave, "v_cvt_pk_f32_fp8_sdwa v[8:9], v8 src0_sel:WORD_1", arch)
    assert (as_f32(wave.v[8])[0], as_f32(wave.v[9])[0]) == want


def test_cvt_f32_bf8_byte_select():
    wave = new_wave()
    wave.v[3] = 0x00C0_0000  # byte 2 = 0xC0: bf8 FNUZ -1.0 (bias 16)... e5m2 1 10000 00
    run(wave, "v_cvt_f32_bf8_sdwa v4, v3 src0_sel:BYTE_2", "gfx942")
    assert as_f32(wave.v[4])[0] == -1.0  # FNUZ e5m2: 2^(16 - 16)
    run(wave, "v_cvt_f32_bf8_sdwa v4, v3 src0_sel:BYTE_2", "gfx950")
    assert as_f32(wave.v[4])[0] == -2.0  # OCP e5m2: 2^(16 - 15)


def test_cvt_f32_f16_word_select():
    wave = new_wave()
    wave.v[2] = 0xC500_3C00  # hi -5.0, lo 1.0
    run(wave, "v_cvt_f32_f16_e32 v3, v2")
    run(wave, "v_cvt_f32_f16_sdwa v4, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1")
    assert (as_f32(wave.v[3])[0], as_f32(wave.v[4])[0]) == (1.0, -5.0)


# ---------------------------------------------------------------------------------------------------- integer

def test_gfx11_sub_co_and_sub_co_ci_chain_a_borrow():
    wave = new_wave(lanes=32)
    wave.v[5] = 1
    run(wave, "v_sub_co_u32 v3, s0, 0, v5", "gfx1151")  # 0 - 1 borrows
    assert wave.v[3][0] == 0xFFFFFFFF and wave.s[0] == 0xFFFFFFFF
    run(wave, "v_sub_co_ci_u32_e64 v4, null, 0, 0, s0", "gfx1151")  # 0 - 0 - borrow
    assert wave.v[4][0] == 0xFFFFFFFF


def test_gfx11_add_co_ci_adds_the_carry():
    wave = new_wave(lanes=32)
    wave.v[11] = 0xFFFFFFFF
    wave.s[34], wave.s[35] = 1, 5
    wave.v[9] = 2
    run(wave, "v_add_co_u32 v22, s11, v11, s34", "gfx1151")
    run(wave, "v_add_co_ci_u32_e64 v21, null, s35, v9, s11", "gfx1151")
    assert (wave.v[22][0], wave.v[21][0]) == (0, 8)


def test_gfx11_cmpx_writes_only_exec_and_only_where_it_was_on():
    wave = new_wave(lanes=32)
    wave.v[0] = np.arange(32, dtype=np.uint32) % 3
    set_exec(wave, np.arange(32) < 16)
    vcc = wave.s[VCC]
    run(wave, "v_cmpx_eq_u32_e32 0, v0", "gfx1151")
    np.testing.assert_array_equal(wave.exec, (np.arange(32) % 3 == 0) & (np.arange(32) < 16))
    assert wave.s[VCC] == vcc


def test_gfx11_cmpx_ne_u64():
    wave = new_wave(lanes=32, vgprs=40)
    wave.v[35] = np.arange(32, dtype=np.uint32) % 2
    wave.v[36] = np.where(np.arange(32) == 4, 1, 0).astype(np.uint32)  # lane 4 holds 2^32
    run(wave, "v_cmpx_ne_u64_e32 1, v[35:36]", "gfx1151")
    np.testing.assert_array_equal(wave.exec, (np.arange(32) % 2 == 0))


def test_true16_cndmask_and_cvt_u32_u16_keep_the_other_half():
    wave = new_wave(lanes=32)
    wave.v[9] = 0xAAAA_5555
    wave.s[2] = 0x0000FFFF  # lanes 0-15
    run(wave, "v_cndmask_b16 v9.h, 0, v9.h, s2", "gfx1151")  # lanes 0-15 keep 0xAAAA, the others get 0
    assert wave.v[9][0] == 0xAAAA_5555 and wave.v[9][20] == 0x0000_5555
    run(wave, "v_cvt_u32_u16_e32 v10, v9.h", "gfx1151")
    assert (wave.v[10][0], wave.v[10][20]) == (0xAAAA, 0)


def test_sdwa_cndmask_into_byte_1():
    wave = new_wave()
    wave.v[5], wave.v[2] = 0x11, 0x0000_4400  # src1 byte 1 = 0x44
    wave.s[VCC], wave.s[VCC + 1] = 0xFFFFFFFF, 0  # lanes 0-31 take src1
    run(wave, "v_cndmask_b32_sdwa v6, v5, v2, vcc dst_sel:BYTE_1 dst_unused:UNUSED_PAD src0_sel:DWORD "
              "src1_sel:BYTE_1")
    assert (wave.v[6][0], wave.v[6][40]) == (0x4400, 0x1100)


# ---------------------------------------------------------------------------------------------------- Triton's
# What Triton 3.9's AMD backend emits that IREE's GEMMs do not: LLVM's division by a runtime value (tl.cdiv, //, %
# of the grouped tile order), bf16/f16 narrowing of the accumulator for C. Expected values worked by hand from the
# CDNA3/CDNA4 ISA pseudocode.

def test_s_abs_and_s_ashr_set_scc_from_the_result():
    wave = new_wave()
    wave.s[4] = 0xFFFFFFFB  # -5
    run(wave, "s_abs_i32 s6, s4")
    assert (wave.s[6], wave.scc) == (5, 1)
    wave.s[4] = 0x80000000  # -2^31 has no positive twin
    run(wave, "s_abs_i32 s6, s4")
    assert (wave.s[6], wave.scc) == (0x80000000, 1)
    wave.s[4] = 0
    run(wave, "s_abs_i32 s6, s4")
    assert (wave.s[6], wave.scc) == (0, 0)
    wave.s[4] = 0x80000010
    run(wave, "s_ashr_i32 s6, s4, 4")  # the sign bit fills from the left
    assert (wave.s[6], wave.scc) == (0xF8000001, 1)
    wave.s[4] = 0x7FFFFFFF
    run(wave, "s_ashr_i32 s6, s4, 31")
    assert (wave.s[6], wave.scc) == (0, 0)


def test_s_bfe_i32_sign_extends_the_field():
    wave = new_wave()
    wave.s[1] = 0x01000000  # bit 24 set: the 1-bit field at 24 (0x10018: width 1, offset 24) is -1
    run(wave, "s_bfe_i32 s0, s1, 0x10018")
    assert (wave.s[0], wave.scc) == (0xFFFFFFFF, 1)
    wave.s[1] = 0x00000F80  # the 8-bit field at 4 is 0xF8 = -8
    run(wave, "s_bfe_i32 s0, s1, 0x80004")
    assert (wave.s[0], wave.scc) == (0xFFFFFFF8, 1)
    wave.s[1] = 0x00000780  # 0x78 = 120: positive, no extension
    run(wave, "s_bfe_i32 s0, s1, 0x80004")
    assert (wave.s[0], wave.scc) == (0x78, 1)


@pytest.mark.parametrize("opcode, bit, want", [("s_bitcmp1_b32", 5, 1), ("s_bitcmp1_b32", 4, 0),
                                               ("s_bitcmp0_b32", 4, 1), ("s_bitcmp1_b32", 37, 1),
                                               ("s_bitcmp1_b64", 37, 0), ("s_bitcmp1_b64", 33, 1)])
def test_s_bitcmp_tests_one_bit(opcode, bit, want):
    """SCC = bit S1[4:0] (b64: S1[5:0]) of S0 is 1 (bitcmp1) or 0 (bitcmp0); s[31] = 0x20 has bit 5 set, s[32]
    (the high word of the b64 pair) bit 1."""
    wave = new_wave()
    wave.s[31], wave.s[32] = 0x20, 0x2
    source = "s[31:32]" if opcode.endswith("b64") else "s31"
    run(wave, f"{opcode} {source}, {bit}")  # bit 37 of a b32 source is bit 5
    assert wave.scc == want


def test_mul_hi_u32_scalar_and_vector():
    wave = new_wave()
    wave.s[4], wave.s[5], wave.scc = 0xFFFFFFFF, 0xFFFFFFFF, 1
    run(wave, "s_mul_hi_u32 s6, s4, s5")  # (2^32 - 1)^2 = 2^64 - 2^33 + 1: high word 2^32 - 2
    assert (wave.s[6], wave.scc) == (0xFFFFFFFE, 1)  # SCC is not written
    wave.v[1], wave.v[2] = 0x80000000, np.arange(64, dtype=np.uint32)
    run(wave, "v_mul_hi_u32 v3, v1, v2")  # 2^31 * n >> 32 = n // 2
    np.testing.assert_array_equal(wave.v[3], np.arange(64) // 2)


def test_v_bfrev_b32_reverses_the_bits():
    wave = new_wave()
    run(wave, "v_bfrev_b32_e32 v4, 1")  # Triton's way to write 0x80000000 (the f32 -0.0 / sign mask)
    assert (wave.v[4] == 0x80000000).all()
    wave.v[1] = 0x0000000F
    run(wave, "v_bfrev_b32_e32 v4, v1")
    assert (wave.v[4] == 0xF0000000).all()


def test_unsigned_conversions_and_the_reciprocal():
    wave = new_wave()
    wave.v[1][:4] = [0xFFFFFFFF, 16777217, 16777219, 7]  # 2^32 - 1 rounds up; 2^24 + 1 and + 3 are ties to even
    run(wave, "v_cvt_f32_u32_e32 v2, v1")
    np.testing.assert_array_equal(as_f32(wave.v[2][:4]), [2.0 ** 32, 16777216.0, 16777220.0, 7.0])
    wave.v[1][:4] = f32([-1.0, 3.9, 5e9, np.nan])  # negative -> 0, truncation, saturation, NaN -> 0
    run(wave, "v_cvt_u32_f32_e32 v2, v1")
    np.testing.assert_array_equal(wave.v[2][:4], [0, 3, 0xFFFFFFFF, 0])
    wave.v[1][:5] = f32([4.0, 0.0, -np.inf, -0.5, 3.0])
    run(wave, "v_rcp_f32_e32 v2, v1")
    np.testing.assert_array_equal(as_f32(wave.v[2][:4]), [0.25, np.inf, -0.0, -2.0])
    assert wave.v[2][4] == 0x3EAAAAAB  # 1/3 = 0x3EAAAAAA.AAA... in f32 bits, rounded up
    assert wave.v[2][2] == 0x80000000  # 1 / -inf is -0


def test_cvt_pk_bf16_f32_rounds_each_half_to_nearest_even():
    wave = new_wave()
    wave.v[10][:3] = f32([1.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8])  # exact; a tie to even (down); a tie to even (up)
    wave.v[11][:3] = f32([-2.0, 3.0, 65536.0])
    run(wave, "v_cvt_pk_bf16_f32 v9, v10, v11", "gfx950")
    np.testing.assert_array_equal(wave.v[9][:3], [0xC0003F80, 0x40403F80, 0x47803F82])


def test_cvt_f16_f32_zeroes_the_high_half_on_gfx9_and_pack_b32_f16():
    wave = new_wave()
    wave.v[5] = 0xDEAD0000
    wave.v[1][:3] = f32([1.0, 65520.0, -2.0 ** -25])  # 65520 is the tie above f16's largest: inf; 2^-25 ties to 0
    run(wave, "v_cvt_f16_f32_e32 v5, v1")
    np.testing.assert_array_equal(wave.v[5][:3], [0x3C00, 0x7C00, 0x8000])
    wave.v[6], wave.v[7] = 0x1111AAAA, 0x2222BBBB
    run(wave, "v_pack_b32_f16 v8, v6, v7")  # S0's low half below S1's
    assert (wave.v[8] == 0xBBBBAAAA).all()
    run(wave, "v_pack_b32_f16 v8, v6, v7 op_sel:[1,1,0]")  # the high halves
    assert (wave.v[8] == 0x22221111).all()


# What HipKittens' gfx950 GEMM (clang 22) adds: a 64-bit compare of a pointer's low bits with 0, the int row pitch
# of C widened to 64 bits and scaled to bytes, and LLVM's unsigned division starting from v_rcp_iflag_f32. Expected
# values worked by hand from the CDNA3 ISA pseudocode.

@pytest.mark.parametrize("low, high, opcode, want", [(0, 0, "s_cmp_eq_u64", 1), (0, 1, "s_cmp_eq_u64", 0),
                                                     (0, 1, "s_cmp_lg_u64", 1), (5, 0, "s_cmp_lg_u64", 1),
                                                     (0, 0, "s_cmp_lg_u64", 0)])
def test_s_cmp_u64_compares_both_words(low, high, opcode, want):
    """SCC = S0.u64 == S1.u64 (lg: !=); a high word of 1 makes 2^32, which is not 0."""
    wave = new_wave()
    wave.s[6], wave.s[7] = low, high
    run(wave, f"{opcode} s[6:7], 0")
    assert wave.scc == want


def test_s_lshl_b64_shifts_across_the_word_boundary():
    wave = new_wave()
    wave.s[0], wave.s[1] = 0x80000001, 0x1  # 2^32 + 2^31 + 1
    run(wave, "s_lshl_b64 s[2:3], s[0:1], 1")  # 2^33 + 2^32 + 2: low word 2, high word 3
    assert (wave.s[2], wave.s[3], wave.scc) == (0x2, 0x3, 1)
    wave.s[1] = 0x80000000
    wave.s[0] = 0
    run(wave, "s_lshl_b64 s[2:3], s[0:1], 1")  # the top bit leaves: 0, SCC 0
    assert (wave.s[2], wave.s[3], wave.scc) == (0, 0, 0)
    wave.s[0], wave.s[1] = 1, 0
    run(wave, "s_lshl_b64 s[2:3], s[0:1], 65")  # only S1[5:0] counts: a shift of 1
    assert (wave.s[2], wave.s[3]) == (2, 0)


def test_s_bfe_i64_sign_extends_a_32_bit_field_to_64_bits():
    """0x200000 is width 32, offset 0: an int widened to a 64-bit offset (HipKittens' C row pitch)."""
    wave = new_wave()
    wave.s[12], wave.s[13] = 0xFFFFFFFE, 0x12345678  # low word -2; the high word is not part of the field
    run(wave, "s_bfe_i64 s[0:1], s[12:13], 0x200000")
    assert (wave.s[0], wave.s[1], wave.scc) == (0xFFFFFFFE, 0xFFFFFFFF, 1)
    wave.s[12] = 8192
    run(wave, "s_bfe_i64 s[0:1], s[12:13], 0x200000")
    assert (wave.s[0], wave.s[1], wave.scc) == (8192, 0, 1)
    wave.s[12], wave.s[13] = 0, 0x80000000  # the 4-bit field at bit 60 is 0b1000 = -8; width 0 gives 0
    run(wave, "s_bfe_i64 s[0:1], s[12:13], 0x4003c")
    assert (wave.s[0], wave.s[1]) == (0xFFFFFFF8, 0xFFFFFFFF)
    run(wave, "s_bfe_i64 s[0:1], s[12:13], 0x3c")
    assert (wave.s[0], wave.s[1], wave.scc) == (0, 0, 0)


def test_v_rcp_iflag_f32_is_the_reciprocal():
    wave = new_wave()
    wave.v[1][:4] = f32([4.0, 3.0, 0.0, -0.5])
    run(wave, "v_rcp_iflag_f32_e32 v2, v1")
    assert list(wave.v[2][:4]) == [0x3E800000, 0x3EAAAAAB, 0x7F800000, 0xC0000000]  # 0.25, 1/3 rounded, inf, -2


# ---------------------------------------------------------------------------------------------------- HipKittens' fp8

@pytest.mark.parametrize("byte", [0, 1, 2, 3])
def test_cvt_f32_ubyte_reads_one_byte_as_an_unsigned_integer(byte):
    """V_CVT_F32_UBYTEn: D.f32 = S0[8n+7:8n] as an unsigned integer, exactly (HipKittens' 4-wave fp8 GEMM)."""
    wave = new_wave()
    words = np.array([0x80FF017F, 0x00000000, 0xFEDCBA98, 0x12345678] * 16, np.uint32)
    wave.v[1] = words
    run(wave, f"v_cvt_f32_ubyte{byte}_e32 v2, v1", arch="gfx950")
    want = [float((int(w) >> (8 * byte)) & 0xFF) for w in words]
    assert list(as_f32(wave.v[2])) == want


def test_trunc_f32_drops_the_fraction_toward_zero():
    wave = new_wave()
    values = [2.75, -2.75, -0.5, 0.25, 1e30, -7.0, float("inf"), float("-inf")] * 8
    wave.v[1] = f32(values)
    run(wave, "v_trunc_f32_e32 v2, v1", arch="gfx950")
    got = as_f32(wave.v[2])
    assert list(got[:8]) == [2.0, -2.0, -0.0, 0.0, 1e30, -7.0, float("inf"), float("-inf")]
    assert np.signbit(got[2]) and not np.signbit(got[3])  # -0.5 keeps its sign


def test_src_shared_base_reads_the_lds_aperture():
    """The LDS window's flat base, 1 << 48 on GFX9 and later (Linux amdkfd, MAKE_LDS_APP_BASE_V9): a 64-bit move
    gives 0 and 0x10000 in the two registers, a 32-bit read the upper half."""
    wave = new_wave()
    run(wave, "s_mov_b64 s[4:5], src_shared_base", arch="gfx950")
    assert int(wave.s[4][0]) == 0 and int(wave.s[5][0]) == 0x10000
    run(wave, "s_mov_b32 s6, src_shared_base", arch="gfx950")
    assert int(wave.s[6][0]) == 0x10000


# ---------------------------------------------------------------------------------------------------- scratch

@pytest.mark.parametrize("arch, store, load", [("gfx1151", "scratch_store_b128", "scratch_load_b128"),
                                               ("gfx942", "scratch_store_dwordx4", "scratch_load_dwordx4")])
def test_scratch_b128_round_trips_four_registers_per_lane(arch, store, load):
    """VGPR spills: a 16-byte store at offset 16 of each lane's private segment and its reload, waited for."""
    lanes = 32 if arch == "gfx1151" else 64
    wave = new_wave(lanes=lanes)
    wave.v[1:5] = np.arange(4 * lanes, dtype=np.uint32).reshape(4, lanes) + 1000
    set_exec(wave, np.arange(lanes) != 3)
    kernel = Kernel("k", [], {}, {"private_segment_fixed_size": 48})
    ctx = DecodeContext(kernel=kernel, arch=arch, lanes=lanes, lds_banks=32)
    for text in (f"{store} off, v[1:4], off offset:16", f"{load} v[5:8], off, off offset:16", "s_waitcnt vmcnt(0)"):
        inst = parse_instruction(text, 1)
        DECODERS[inst.opcode](inst, ctx)(wave)
    on = np.arange(lanes) != 3
    np.testing.assert_array_equal(wave.v[5:9][:, on], wave.v[1:5][:, on])
    assert (wave.v[5:9][:, 3] == 0).all()  # an off lane neither stored nor loaded
    assert (wave.private[on, 16:32].view(np.uint32) == wave.v[1:5][:, on].T).all()


# ---------------------------------------------------------------------------------------------------- refusals

def test_a_refused_opcode_stops_decoding_with_its_reason(monkeypatch):
    monkeypatch.setitem(REFUSED, "v_mov_b32_e32", "a planted refusal for this test")
    kernel = Kernel("k", [parse_instruction("v_mov_b32_e32 v1, v2", 7)], {}, {})
    ctx = DecodeContext(kernel=kernel, arch="gfx942", lanes=64, lds_banks=32)
    with pytest.raises(RefusedInstruction, match=r"v_mov_b32_e32 \(line 7\) is refused by the emulator: a planted "
                                                 r"refusal for this test\."):
        decode(kernel, ctx)
