"""Single instructions of the emulator on hand-written ISA, at the boundaries where an off-by-one hides: a counted
wait retires exactly down to its count, the raw gfx9 `s_waitcnt` encoding keeps vmcnt's high bits, SCC of a
strict compare is 0 at equality, and gfx950's fp8 bytes decode as OCP e4m3fn (not gfx942's FNUZ).

No kernel is compiled: each test decodes instructions with the emulator's own decoders and runs them on one wave
whose memory operations are stand-ins that record when they retire.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from pipelines.emulator.isa import EXEC, VCC, parse_instruction
from pipelines.emulator.machine import DECODERS, DecodeContext, Pending, Wave
from pipelines.emulator.memory import issue


def context(arch: str, lanes: int = 64) -> DecodeContext:
    return DecodeContext(kernel=None, arch=arch, lanes=lanes, lds_banks=32)


def new_wave(lanes: int = 64, vgprs: int = 32) -> Wave:
    wave = Wave(0, SimpleNamespace(mma=0), lanes, vgprs, 0)
    return wave


def run(wave: Wave, text: str, arch: str = "gfx942") -> None:
    inst = parse_instruction(text, 1)
    DECODERS[inst.opcode](inst, context(arch, wave.lanes))(wave)


def in_flight(wave: Wave, queue_name: str, count: int) -> list[int]:
    """Issue `count` operations on the wave's vm or lgkm queue; the returned list fills with their numbers as
    they retire (oldest first)."""
    retired: list[int] = []
    queue = getattr(wave, queue_name)
    for number in range(count):
        issue(wave, queue, Pending(lambda w, n=number: retired.append(n)))
    return retired


# ---------------------------------------------------------------------------------------------------- waits


@pytest.mark.parametrize("keep", [0, 1, 2])
def test_lgkmcnt_retires_down_to_its_count(keep):
    wave = new_wave()
    retired = in_flight(wave, "lgkm", 3)
    run(wave, f"s_waitcnt lgkmcnt({keep})")
    assert retired == list(range(3 - keep)) and len(wave.lgkm) == keep


@pytest.mark.parametrize("keep", [0, 1, 3])
def test_vmcnt_retires_down_to_its_count(keep):
    wave = new_wave()
    retired = in_flight(wave, "vm", 4)
    run(wave, f"s_waitcnt vmcnt({keep})")
    assert retired == list(range(4 - keep)) and len(wave.vm) == keep


def test_gfx11_separate_lgkmcnt_wait_keeps_one():
    wave = new_wave(lanes=32)
    retired = in_flight(wave, "lgkm", 3)
    run(wave, "s_waitcnt_lgkmcnt null, 0x1", arch="gfx1151")
    assert retired == [0, 1] and len(wave.lgkm) == 1


def test_combined_wait_applies_both_counts():
    wave = new_wave()
    vm, lgkm = in_flight(wave, "vm", 5), in_flight(wave, "lgkm", 2)
    run(wave, "s_waitcnt vmcnt(2) lgkmcnt(1)")
    assert (vm, lgkm) == ([0, 1, 2], [0])


def gfx9_waitcnt(vmcnt: int, lgkmcnt: int, expcnt: int = 7) -> int:
    """The gfx9 SOPP immediate: vmcnt[3:0] in bits 3:0, expcnt in 6:4, lgkmcnt in 11:8, vmcnt[5:4] in 15:14
    (LLVM AMDGPUBaseInfo, encodeWaitcnt for gfx9)."""
    return (vmcnt & 0xF) | (expcnt << 4) | (lgkmcnt << 8) | ((vmcnt >> 4) << 14)


@pytest.mark.parametrize("vmcnt", [15, 16, 17, 33, 48, 62])
def test_raw_gfx9_waitcnt_keeps_vmcnt_high_bits(vmcnt):
    """LLVM prints the raw immediate for waits it cannot spell; vmcnt >= 16 lives partly in bits 15:14."""
    wave = new_wave()
    retired = in_flight(wave, "vm", 63)
    run(wave, f"s_waitcnt {gfx9_waitcnt(vmcnt, lgkmcnt=15):#x}", arch="gfx942")
    assert len(wave.vm) == vmcnt and len(retired) == 63 - vmcnt


def test_raw_gfx9_waitcnt_lgkmcnt_field():
    wave = new_wave()
    retired = in_flight(wave, "lgkm", 4)
    run(wave, f"s_waitcnt {gfx9_waitcnt(63, lgkmcnt=1):#x}", arch="gfx950")
    assert retired == [0, 1, 2] and len(wave.lgkm) == 1


def test_raw_gfx11_waitcnt_fields():
    """gfx11: vmcnt in bits 15:10, lgkmcnt in 9:4, expcnt in 2:0."""
    wave = new_wave(lanes=32)
    vm, lgkm = in_flight(wave, "vm", 40), in_flight(wave, "lgkm", 3)
    run(wave, f"s_waitcnt {(33 << 10) | (1 << 4) | 7:#x}", arch="gfx1151")
    assert (len(vm), len(wave.vm), len(lgkm), len(wave.lgkm)) == (7, 33, 2, 1)


# ---------------------------------------------------------------------------------------------------- SCC


@pytest.mark.parametrize("cond, a, b, scc", [
    ("lt", 5, 5, 0), ("lt", 4, 5, 1), ("lt", 6, 5, 0),
    ("le", 5, 5, 1), ("le", 6, 5, 0),
    ("gt", 5, 5, 0), ("gt", 6, 5, 1),
    ("ge", 5, 5, 1), ("ge", 4, 5, 0),
    ("eq", 5, 5, 1), ("lg", 5, 5, 0), ("lg", 4, 5, 1),
])
@pytest.mark.parametrize("typ", ["u32", "i32"])
def test_scalar_compare_at_equality(cond, a, b, scc, typ):
    wave = new_wave()
    wave.s[4], wave.s[5] = a, b
    wave.scc = 1 - scc
    run(wave, f"s_cmp_{cond}_{typ} s4, s5")
    assert wave.scc == scc


def test_signed_and_unsigned_compare_differ_on_negative_numbers():
    wave = new_wave()
    wave.s[4], wave.s[5] = 0xFFFFFFFF, 1  # -1 signed, 2^32-1 unsigned
    run(wave, "s_cmp_lt_i32 s4, s5")
    assert wave.scc == 1
    run(wave, "s_cmp_lt_u32 s4, s5")
    assert wave.scc == 0


def test_loop_branch_at_the_last_iteration():
    """`s_cmp_lt_u32 counter, trip` + `s_cbranch_scc1`: with the counter at the trip count the loop exits."""
    wave = new_wave()
    wave.s[6], wave.s[7] = 8, 8
    run(wave, "s_cmp_lt_u32 s6, s7")
    inst = parse_instruction("s_cbranch_scc1 .LBB0_1", 2)
    kernel = SimpleNamespace(labels={".LBB0_1": 3})
    wave.pc = 10
    DECODERS[inst.opcode](inst, DecodeContext(kernel=kernel, arch="gfx942", lanes=64, lds_banks=32))(wave)
    assert wave.pc == 10


# ---------------------------------------------------------------------------------------------------- fp8


def mfma_of_constant_bytes(arch: str, opcode: str, byte: int) -> float:
    """D[0][0] of one 16x16x32 fp8 MFMA whose A and B hold the same byte everywhere: K · x² for x = decode(byte)."""
    wave = new_wave(vgprs=16)
    word = np.uint32(byte * 0x01010101)
    wave.v[0:2] = word  # A: 8 fp8 per lane in 2 registers
    wave.v[2:4] = word  # B
    run(wave, f"{opcode} v[4:7], v[0:1], v[2:3], 0", arch=arch)
    return float(wave.v[4:8].view(np.float32)[0, 0])


@pytest.mark.parametrize("byte, ocp, fnuz", [
    (0x38, 1.0, 0.5),   # e4m3: exponent bias 7 (OCP) vs 8 (FNUZ)
    (0x40, 2.0, 1.0),
    (0x7E, 448.0, 224.0),  # largest finite OCP e4m3fn; 224 in FNUZ (whose largest, 240, is 0x7F)
])
def test_fp8_bytes_decode_as_ocp_on_gfx950_and_fnuz_on_gfx942(byte, ocp, fnuz):
    opcode = "v_mfma_f32_16x16x32_fp8_fp8"
    assert mfma_of_constant_bytes("gfx950", opcode, byte) == pytest.approx(32 * ocp * ocp)
    assert mfma_of_constant_bytes("gfx942", opcode, byte) == pytest.approx(32 * fnuz * fnuz)


def test_bf8_bytes_decode_as_ocp_e5m2_on_gfx950():
    # 0x3C: e5m2 1.0 (bias 15); e5m2fnuz 0.5 (bias 16)
    opcode = "v_mfma_f32_16x16x32_bf8_bf8"
    assert mfma_of_constant_bytes("gfx950", opcode, 0x3C) == pytest.approx(32.0)
    assert mfma_of_constant_bytes("gfx942", opcode, 0x3C) == pytest.approx(8.0)


# ---------------------------------------------------------------------------------------------------- scalar ALU


@pytest.mark.parametrize("a, b, total, carry", [
    (0xFFFFFFFE, 1, 0xFFFFFFFF, 0),   # exactly 2^32 - 1: no carry
    (0xFFFFFFFF, 1, 0, 1),            # exactly 2^32: carry
    (0x80000000, 0x80000000, 0, 1),
])
def test_add_u32_carry_at_the_boundary(a, b, total, carry):
    wave = new_wave()
    wave.s[4], wave.s[5] = a, b
    run(wave, "s_add_u32 s6, s4, s5")
    assert (wave.s[6], wave.scc) == (total, carry)


@pytest.mark.parametrize("a, b, difference, borrow", [(5, 5, 0, 0), (5, 6, 0xFFFFFFFF, 1), (6, 5, 1, 0)])
def test_sub_u32_borrow_at_the_boundary(a, b, difference, borrow):
    wave = new_wave()
    wave.s[4], wave.s[5] = a, b
    run(wave, "s_sub_u32 s6, s4, s5")
    assert (wave.s[6], wave.scc) == (difference, borrow)


def test_add_with_carry_chains_a_64_bit_add():
    """s_add_u32 + s_addc_u32: the low half's carry reaches the high half."""
    wave = new_wave()
    wave.s[4], wave.s[5], wave.s[6], wave.s[7] = 0xFFFFFFFF, 0x00000001, 1, 0
    run(wave, "s_add_u32 s8, s4, s6")
    run(wave, "s_addc_u32 s9, s5, s7")
    assert (wave.s[9] << 32) | wave.s[8] == 0x1_FFFFFFFF + 1


@pytest.mark.parametrize("immediate, value", [(0x7FFF, 0x7FFF), (0x8000, 0xFFFF8000), (0xFFFF, 0xFFFFFFFF)])
def test_movk_sign_extends_its_immediate(immediate, value):
    wave = new_wave()
    run(wave, f"s_movk_i32 s4, {immediate:#x}")
    assert wave.s[4] == value


def test_and_saveexec_saves_the_old_exec():
    wave = new_wave()
    wave.s[EXEC], wave.s[EXEC + 1] = 0xFFFFFFFF, 0x000000FF  # lanes 0-39
    wave.sync_exec()
    wave.s[VCC], wave.s[VCC + 1] = 0x0000FFFF, 0x0000FF00  # lanes 0-15 and 40-47
    run(wave, "s_and_saveexec_b64 s[10:11], vcc")
    assert (wave.s[10], wave.s[11]) == (0xFFFFFFFF, 0x000000FF)
    assert wave.exec[:16].all() and not wave.exec[16:].any() and wave.scc == 1


# ---------------------------------------------------------------------------------------------------- MFMA layouts
# Written from the CDNA3 ISA guide's matrix layouts (AMD Matrix Instruction Calculator), independently of the
# emulator's `operand_layout` / `result_layout`: lane l of a 16x16x16 bf16 MFMA holds A[l % 16][4·(l // 16) + e]
# and B[4·(l // 16) + e][l % 16] for e = 0..3, and D register r of lane l is D[4·(l // 16) + r][l % 16]; for
# 32x32x8, A[l % 32][4·(l // 32) + e], and D register r is D[8·(r // 4) + 4·(l // 32) + r % 4][l % 32].


def bf16_registers(values: np.ndarray) -> np.ndarray:
    """[lanes, elements] of small integers -> [registers, lanes] uint32, two bf16 per register, low half first."""
    import ml_dtypes
    return np.ascontiguousarray(values.astype(ml_dtypes.bfloat16)).view(np.uint32).T


@pytest.mark.parametrize("opcode, size, k", [("v_mfma_f32_16x16x16_bf16", 16, 16), ("v_mfma_f32_32x32x8_bf16", 32, 8)])
def test_mfma_operand_and_result_layouts(opcode, size, k):
    rng = np.random.default_rng(3)
    a, b = rng.integers(-4, 5, (size, k)), rng.integers(-4, 5, (k, size))
    lanes = np.arange(64)
    groups = 64 // size
    kk = (k // groups) * (lanes // size)[:, None] + np.arange(k // groups)[None, :]   # [lanes, per lane]
    a_lanes, b_lanes = a[lanes[:, None] % size, kk], b[kk, lanes[:, None] % size]
    wave = new_wave(vgprs=32)
    wave.v[0:2], wave.v[2:4] = bf16_registers(a_lanes), bf16_registers(b_lanes)
    regs = size * size // 64
    run(wave, f"{opcode} v[8:{8 + regs - 1}], v[0:1], v[2:3], 0")
    d = wave.v[8:8 + regs].view(np.float32)  # [registers, lanes]
    r = np.arange(regs)[:, None]
    rows = 4 * (lanes // 16) + r if size == 16 else 8 * (r // 4) + 4 * (lanes // 32) + r % 4
    want = (a @ b)[rows, lanes % size]
    np.testing.assert_array_equal(d, want.astype(np.float32))


def test_mfma_accumulates_into_c():
    wave = new_wave(vgprs=32)
    wave.v[0:2] = bf16_registers(np.ones((64, 4)))
    wave.v[2:4] = bf16_registers(np.ones((64, 4)))
    wave.v[8:12] = np.float32(2.5).view(np.uint32)
    run(wave, "v_mfma_f32_16x16x16_bf16 v[8:11], v[0:1], v[2:3], v[8:11]")
    np.testing.assert_array_equal(wave.v[8:12].view(np.float32), np.full((4, 64), 18.5, np.float32))


# ---------------------------------------------------------------------------------------------------- memory


def test_lds_broadcast_is_one_access_per_cycle():
    from pipelines.emulator.memory import bank_cycles

    every_lane_same_dword = np.zeros(64, np.int64)  # 32 lanes per cycle on 32 banks: two cycles, no conflict
    assert bank_cycles(every_lane_same_dword, 4, 32, 64) == (2, 2)
    same_bank = np.arange(64, dtype=np.int64) * 128  # 32 dwords apart: every lane of a cycle on bank 0
    assert bank_cycles(same_bank, 4, 32, 64) == (64, 2)


def buffer_wave(records: int):
    """A wave whose s[4:7] is a raw buffer (stride 0) over 256 dwords holding 1..256, `records` bytes long, and
    whose v0 holds each lane's byte offset (4 per lane); LDS writes are recorded."""
    from pipelines.emulator.memory import FlatMemory

    memory = FlatMemory()
    base = memory.allocate(1024)
    memory.write(base, np.arange(1, 257, dtype=np.uint32))
    lds = {}
    code = SimpleNamespace(instructions=[SimpleNamespace(text="buffer_load", line=1)])  # for messages
    workgroup = SimpleNamespace(mma=0, id=0, code=code, memory=memory, open_window=lambda w, op: None,
                                close_window=lambda w, op: None,
                                lds_write=lambda w, rows, starts, size, payload: lds.update(
                                    index=(starts[:, None] + np.arange(size)).reshape(-1), payload=payload.reshape(-1)))
    wave = Wave(0, workgroup, 64, 32, 0)
    wave.s[4:8, 0] = [base & 0xFFFFFFFF, base >> 32, records, 0]
    wave.v[0] = np.arange(64, dtype=np.uint32) * 4
    return wave, lds


def test_buffer_load_past_num_records_reads_zero():
    wave, _ = buffer_wave(records=16)
    run(wave, "buffer_load_dword v1, v0, s[4:7], 0 offen")
    run(wave, "s_waitcnt vmcnt(0)")
    assert list(wave.v[1][:5]) == [1, 2, 3, 4, 0] and not wave.v[1][4:].any()


def test_buffer_soffset_moves_the_address_but_not_the_range_check():
    """soffset is "excluded from bounds checking and swizzling", voffset and the instruction offset are "included"
    (LLVM SIISelLowering.h, raw buffer offsets): with num_records 16 and soffset 32, lanes 0-3 (voffset 0-12) are
    in range and read dwords 8-11 of memory (values 9-12); lane 4 (voffset 16) is out of range and reads 0, though
    its address lies inside the allocation. A check that counted soffset would make every lane read 0."""
    wave, _ = buffer_wave(records=16)
    wave.s[8] = 32
    run(wave, "buffer_load_dword v1, v0, s[4:7], s8 offen")
    run(wave, "s_waitcnt vmcnt(0)")
    assert list(wave.v[1][:6]) == [9, 10, 11, 12, 0, 0]
    run(wave, "buffer_load_dword v2, v0, s[4:7], s8 offen offset:12")  # the instruction offset is checked
    run(wave, "s_waitcnt vmcnt(0)")
    assert list(wave.v[2][:3]) == [12, 0, 0]


def test_direct_to_lds_load_adds_the_instruction_offset_to_m0():
    from pipelines.emulator.isa import M0

    wave, lds = buffer_wave(records=1024)
    wave.s[M0] = 256
    run(wave, "buffer_load_dword v0, s[4:7], 0 offen offset:16 lds")
    run(wave, "s_waitcnt vmcnt(0)")
    # lane i's dword goes to M0 + offset + 4i, and comes from byte 16 + 4i of the buffer (dword 5 + i)
    assert list(lds["index"][:8]) == list(range(256 + 16, 256 + 24))
    assert lds["payload"].view(np.uint32)[0] == 5


def test_mad_u64_u32_writes_its_carry_out():
    """v_mad_u64_u32 with an SGPR-pair carry-out (IREE's gfx950 default kernels use one): lane 0 sums without
    wrapping, lane 1 wraps past 2^64 and sets its carry bit, inactive lanes' bits are 0."""
    w = new_wave()
    w.v[1] = 0xFFFFFFFF
    w.v[2] = 0xFFFFFFFF
    w.v[3] = 0xFFFFFFFF  # addend low word
    w.v[4] = 0xFFFFFFFF  # addend high word
    w.v[1][0], w.v[3][0], w.v[4][0] = 2, 5, 0  # lane 0: 2 * 0xFFFFFFFF + 5
    w.write_mask(EXEC, np.arange(64) < 2)
    run(w, "v_mad_u64_u32 v[6:7], s[10:11], v1, v2, v[3:4]")
    assert (int(w.v[7][0]) << 32 | int(w.v[6][0])) == 2 * 0xFFFFFFFF + 5
    product = 0xFFFFFFFF * 0xFFFFFFFF + 0xFFFFFFFFFFFFFFFF
    assert (int(w.v[7][1]) << 32 | int(w.v[6][1])) == product % 2**64
    assert w.s[10] == 0b10 and w.s[11] == 0


@pytest.mark.parametrize("opcode, want", [("v_min_i32_e32", [-7, 1, -2**31]), ("v_max_i32_e32", [1, 3, 1])])
def test_signed_min_max_compare_as_int32(opcode, want):
    """IREE's gfx950 default kernels clamp with v_min_i32: a constant against a register, compared signed."""
    w = new_wave()
    w.v[2][:3] = np.array([-7, 3, -2**31], np.int32).view(np.uint32)
    run(w, f"{opcode} v1, 1, v2")
    assert w.v[1][:3].view(np.int32).tolist() == want


def test_subb_borrows_and_accvgpr_copies():
    """v_subb_co_u32 subtracts src1 and the borrow-in (VCC) and sets the borrow-out; v_accvgpr_write/read copy a
    register into the AGPR file and back (IREE's long-K gfx950 kernels use both)."""
    w = Wave(0, SimpleNamespace(mma=0), 64, 32, 8)
    w.v[1][:2] = [5, 5]
    w.write_mask(VCC, np.arange(64) == 1)  # lane 1 borrows in
    run(w, "v_subb_co_u32_e64 v2, s[8:9], v1, 5, vcc")
    assert w.v[2][:2].tolist() == [0, 0xFFFFFFFF] and w.s[8] & 0b11 == 0b10  # lanes 2-63: 0 - 5 borrows
    run(w, "v_accvgpr_write_b32 a3, v1")
    run(w, "v_accvgpr_read_b32 v4, a3")
    assert w.a[3][0] == 5 and w.v[4][1] == 5


def test_lshl_add_u64_shifts_then_adds_64_bits():
    w = new_wave()
    w.s[4], w.s[5] = 0x80000001, 0x1  # 0x1_8000_0001
    w.v[0][0], w.v[1][0] = 0xFFFFFFFF, 0x0
    run(w, "v_lshl_add_u64 v[2:3], s[4:5], 2, v[0:1]")
    assert (int(w.v[3][0]) << 32 | int(w.v[2][0])) == (0x180000001 << 2) + 0xFFFFFFFF


def test_the_long_k_gfx950_kernels_alu_forms():
    """Forms IREE's gfx950 default kernels for K = 150000 use: s_andn2_saveexec, v_mov_b64, v_bfi_b32 and a
    v_cndmask_b32 with an SDWA word select."""
    w = new_wave()
    w.write_mask(EXEC, np.ones(64, bool))
    w.s[10], w.s[11] = 0xF, 0
    run(w, "s_andn2_saveexec_b64 s[12:13], s[10:11]")  # EXEC = s[10:11] & ~EXEC (all lanes on): nothing
    assert (w.s[12], w.s[13]) == (0xFFFFFFFF, 0xFFFFFFFF) and not w.exec.any() and w.scc == 0
    w.write_mask(EXEC, np.ones(64, bool))
    w.s[20], w.s[21] = 0x12345678, 0x9ABCDEF0
    run(w, "v_mov_b64_e32 v[2:3], s[20:21]")
    assert (w.v[2][5], w.v[3][5]) == (0x12345678, 0x9ABCDEF0)
    w.v[4][:] = 0xFFFF0000
    run(w, "v_bfi_b32 v5, 0xFF00FF00, v4, v2")  # S1's bits where S0 is set, S2's elsewhere
    assert w.v[5][0] == (0xFF00FF00 & 0xFFFF0000) | (~0xFF00FF00 & 0x12345678 & 0xFFFFFFFF)
    w.write_mask(VCC, np.arange(64) == 0)
    run(w, "v_cndmask_b32_sdwa v6, v2, v3, vcc dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD "
           "src1_sel:WORD_1")
    assert (w.v[6][0], w.v[6][1]) == (0x9ABC, 0x12345678)


def test_the_4096_tune_candidates_alu_forms():
    """Forms gfx950 tune candidates at 4096³ use: v_alignbit_b32, s_bitset1_b32 and 64-bit right shifts."""
    w = new_wave()
    w.write_mask(EXEC, np.ones(64, bool))
    w.v[7][:], w.v[6][:] = 0x0000001F, 0x80000000
    run(w, "v_alignbit_b32 v8, v7, v6, 5")  # ({v7, v6} >> 5) & 0xFFFFFFFF
    assert w.v[8][0] == ((0x1F << 32 | 0x80000000) >> 5) & 0xFFFFFFFF == 0xFC000000
    w.s[17] = 0x1
    run(w, "s_bitset1_b32 s17, 14")
    assert w.s[17] == 0x4001
    w.scc = 1
    run(w, "s_bitset0_b32 s17, 0")
    assert w.s[17] == 0x4000 and w.scc == 1  # SCC untouched
    w.v[2][:], w.v[3][:] = 0, 0x80000000
    run(w, "v_ashrrev_i64 v[4:5], 4, v[2:3]")
    assert (w.v[5][0], w.v[4][0]) == (0xF8000000, 0)
    run(w, "v_lshrrev_b64 v[4:5], 36, v[2:3]")
    assert (w.v[5][0], w.v[4][0]) == (0, 0x08000000)


def test_unsigned_add_and_sub_with_clamp_saturate():
    """`clamp` on u32 add/sub saturates at 0 and 2^32-1 (LLVM's usub.sat in IREE's padded-K DMA kernels)."""
    w = new_wave()
    w.write_mask(EXEC, np.ones(64, bool))
    w.s[3] = 5
    w.v[10][:] = np.arange(64, dtype=np.uint32)
    run(w, "v_sub_u32_e64 v12, s3, v10 clamp")  # 5 - lane, floored at 0
    assert list(w.v[12][:8]) == [5, 4, 3, 2, 1, 0, 0, 0]
    w.v[11][:] = 0xFFFFFFF0
    run(w, "v_add_u32_e64 v13, v11, v10 clamp")  # capped at 2^32 - 1
    assert w.v[13][0] == 0xFFFFFFF0 and w.v[13][63] == 0xFFFFFFFF
    run(w, "v_sub_u32_e64 v14, s3, v10")  # without clamp it wraps
    assert w.v[14][6] == 0xFFFFFFFF


def test_global_load_takes_a_negative_instruction_offset():
    """global_load's immediate offset is signed (-16: four dwords back), as IREE's forced-DMA TN kernels use it."""
    wave, _ = buffer_wave(records=1024)
    base = wave.s[4] | wave.s[5] << 32
    wave.v[2][:] = (base + 64) & 0xFFFFFFFF
    wave.v[3][:] = (base + 64) >> 32
    run(wave, "global_load_dword v1, v[2:3], off offset:-16")
    run(wave, "s_waitcnt vmcnt(0)")
    assert wave.v[1][0] == 13  # byte 48 of the buffer: dword 12, which holds 13


def test_med3_clamps_signed_and_unsigned():
    """v_med3_i32 v12, v11, 0, 32 clamps a signed value into [0, 32] (IREE's gfx950 unaligned and DMA kernels)."""
    w = new_wave()
    w.write_mask(EXEC, np.ones(64, bool))
    w.v[11][:3] = np.array([-5, 7, 40], dtype=np.int32).view(np.uint32)
    run(w, "v_med3_i32 v12, v11, 0, 32")
    assert list(w.v[12][:3]) == [0, 7, 32]
    run(w, "v_med3_u32 v13, v11, 0, 32")  # -5 is 0xFFFFFFFB unsigned: clamped to 32
    assert list(w.v[13][:3]) == [32, 7, 32]


# The four semantics the AMD CDNA4 ISA pseudocode settles (section 12 of the instruction reference), each checked
# at the inputs where the old emulator differed.

def test_s_max_sets_scc_when_the_first_input_is_selected_including_ties():
    """S_MAX_U32: "SCC = S0.u32 >= S1.u32; D0.u32 = SCC ? S0.u32 : S1.u32" (S_MAX_I32 likewise, signed)."""
    w = new_wave()
    w.s[1] = w.s[2] = 7
    run(w, "s_max_u32 s3, s1, s2")
    assert (w.s[3], w.scc) == (7, 1)  # equal inputs: the first is selected, SCC = 1
    w.s[1], w.s[2] = 0xFFFFFFFF, 1  # -1 against 1
    run(w, "s_max_i32 s3, s1, s2")
    assert (w.s[3], w.scc) == (1, 0)
    run(w, "s_max_u32 s3, s1, s2")
    assert (w.s[3], w.scc) == (0xFFFFFFFF, 1)


def test_s_lshl_add_counts_bits_shifted_out_as_overflow():
    """S_LSHL1_ADD_U32: "tmp = (64'U(S0.u32) << 1U) + 64'U(S1.u32); SCC = tmp >= 0x100000000ULL"."""
    w = new_wave()
    w.s[1], w.s[2] = 0x80000000, 0
    run(w, "s_lshl1_add_u32 s3, s1, s2")  # the shift alone leaves 32 bits: SCC = 1 although the add adds 0
    assert (w.s[3], w.scc) == (0, 1)
    w.s[1] = 0x40000000
    run(w, "s_lshl2_add_u32 s3, s1, s2")
    assert (w.s[3], w.scc) == (0, 1)
    w.s[1], w.s[2] = 0x1000, 5
    run(w, "s_lshl4_add_u32 s3, s1, s2")
    assert (w.s[3], w.scc) == (0x10005, 0)


def test_s_cmpk_i32_sign_extends_its_literal():
    """S_CMPK_LT_I32: "SCC = S0.i32 < 32'I(signext(S1.i16))"; S_CMPK_LT_U32 zero-extends: "32'U(S1.u16)"."""
    w = new_wave()
    w.s[1] = 0xFFFFFFFE  # -2
    run(w, "s_cmpk_lt_i32 s1, 0xffff")  # -2 < -1
    assert w.scc == 1
    run(w, "s_cmpk_eq_i32 s1, 0xfffe")
    assert w.scc == 1
    run(w, "s_cmpk_lt_u32 s1, 0xffff")  # 0xFFFFFFFE < 0x0000FFFF is false
    assert w.scc == 0


def test_v_bfe_i32_shifts_arithmetically():
    """V_BFE_I32: "tmp.i32 = ((S0.i32 >> S1[4 : 0].u32) & ((1 << S2[4 : 0].u32) - 1)); D0.i32 =
    signext_from_bit(tmp.i32, S2[4 : 0].u32)": a field past bit 31 is filled with the sign bit."""
    w = new_wave()
    w.write_mask(EXEC, np.ones(64, bool))
    w.v[1][:] = 0x80000000
    run(w, "v_bfe_i32 v2, v1, 28, 8")  # bits 28..35 of the sign-extended value: 0xF8, sign-extended
    assert w.v[2][0] == 0xFFFFFFF8
    w.v[1][:] = 0x70000000
    run(w, "v_bfe_i32 v2, v1, 28, 8")  # positive: bits 28..35 are 0x07
    assert w.v[2][0] == 0x7


def test_buffer_store_short_writes_the_low_half():
    """buffer_store_short stores bits 15:0 of its data register (the bf16 intermediates of IREE's MLP dispatches):
    lane i writes 2 bytes at byte offset 4i, leaving the other two bytes of each dword as they were."""
    wave, _ = buffer_wave(records=1024)
    wave.v[1] = np.uint32(0xABCD1234)
    memory = wave.workgroup.memory
    base = int(wave.s[4, 0] | (wave.s[5, 0] << np.uint64(32)))
    memory.write(base, np.full(256, 0xFFFFFFFF, np.uint32))
    run(wave, "buffer_store_short v1, v0, s[4:7], 0 offen")
    words = memory.read(base, 16).view(np.uint32)
    assert [hex(x) for x in words] == [hex(0xFFFF1234)] * 4


@pytest.mark.parametrize("opcode, want", [("global_store_short", 0xFFFF1234),
                                          ("global_store_short_d16_hi", 0xFFFFABCD)])
def test_global_store_short_writes_one_half_of_the_register(opcode, want):
    """global_store_short stores bits 15:0 of its data register, the _d16_hi form bits 31:16 (HipKittens' bf16 C:
    the top half of each f32, a truncation); each lane writes 2 bytes at its own address, the other two bytes of
    each dword stay as they were."""
    wave, _ = buffer_wave(records=1024)
    memory = wave.workgroup.memory
    base = int(wave.s[4, 0] | (wave.s[5, 0] << np.uint64(32)))
    memory.write(base, np.full(256, 0xFFFFFFFF, np.uint32))
    wave.v[1] = np.uint32(0xABCD1234)
    addresses = base + np.arange(64, dtype=np.uint64) * 4
    wave.v[2], wave.v[3] = (addresses & 0xFFFFFFFF).astype(np.uint32), (addresses >> 32).astype(np.uint32)
    run(wave, f"{opcode} v[2:3], v1, off offset:0x10")  # clang writes the offset in hex: 16 bytes, 4 dwords on
    words = memory.read(base, 4 * 68).view(np.uint32)
    assert [hex(x) for x in words[:4]] == [hex(0xFFFFFFFF)] * 4
    assert [hex(x) for x in words[4:68]] == [hex(want)] * 64
