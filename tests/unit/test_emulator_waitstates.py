"""Each rule of the emulator's wait-state table on hand-written instruction sequences: one wait state short of the
requirement is a violation naming the rule, both instructions and required vs present; exactly the requirement is
not. No kernel is compiled or run: the checker reads the executed pcs (here, straight-line code)."""

import pytest

from pipelines.emulator.isa import parse_instruction
from pipelines.emulator.waitstates import MAX_WAIT_STATES, RULES, WaitStateChecker, classify, mma_passes


def violations(arch: str, *lines: str, pcs=None) -> list:
    insts = [parse_instruction(text, number + 1) for number, text in enumerate(lines)]
    checker = WaitStateChecker(insts, arch, mma_passes(arch))
    found = checker.check(list(range(len(insts))) if pcs is None else pcs)
    return sorted(found.values(), key=lambda v: (v.rule, v.producer))


def nops(n: int) -> list[str]:
    """Wait states as s_nops (s_nop 7 provides 8)."""
    out = []
    while n > 0:
        out.append(f"s_nop {min(n, 8) - 1}")
        n -= min(n, 8)
    return out


def only(found, rule):
    assert [v.rule for v in found] == [rule], found
    return found[0]


MFMA16_942 = "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]"  # 4 passes on gfx942
MFMA32_942 = "v_mfma_f32_32x32x8_bf16 v[0:15], v[20:21], v[22:23], v[0:15]"  # 8 passes
MFMA16_950 = "v_mfma_f32_16x16x32_bf16 v[0:3], v[4:7], v[8:11], v[0:3]"  # 4 passes on gfx950


@pytest.mark.parametrize("arch, producer, consumer, required", [
    # XDL write -> SrcA/B: passes + 3 on CDNA3, + 1 more on CDNA4
    ("gfx942", MFMA16_942, "v_mfma_f32_16x16x16_bf16 v[8:11], v[0:1], v[6:7], 0", 7),
    ("gfx942", MFMA32_942, "v_mfma_f32_32x32x8_bf16 v[32:47], v[14:15], v[22:23], 0", 11),
    ("gfx950", MFMA16_950, "v_mfma_f32_16x16x32_bf16 v[12:15], v[0:3], v[8:11], 0", 8),
], ids=["gfx942-4pass", "gfx942-8pass", "gfx950-4pass"])
def test_mfma_result_read_as_srcab(arch, producer, consumer, required):
    v = only(violations(arch, producer, *nops(required - 1), consumer), "mfma-write-srcab")
    assert (v.required, v.present) == (required, required - 1)
    assert not violations(arch, producer, *nops(required), consumer)


@pytest.mark.parametrize("arch, consumer, required", [
    ("gfx942", "v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[2:5]", 5),  # overlapping SrcC: passes + 1
    ("gfx950", "v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], v[2:5]", 6),  # CDNA4: passes + 2
])
def test_mfma_result_read_as_overlapping_srcc(arch, consumer, required):
    producer = "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]"
    v = only(violations(arch, producer, *nops(required - 1), consumer), "mfma-write-srcc")
    assert v.register == "v[2:5]" and v.required == required
    assert not violations(arch, producer, *nops(required), consumer)


def test_the_accumulate_chain_srcc_same_registers_needs_no_wait():
    """Back-to-back MFMAs accumulating into the same registers are interlocked: 0 wait states for 4+ passes."""
    assert not violations("gfx942", MFMA16_942, MFMA16_942, MFMA16_942)
    assert not violations("gfx950", MFMA16_950, MFMA16_950)


@pytest.mark.parametrize("consumer, rule", [
    ("v_add_f32_e32 v10, v1, v11", "mfma-write-valu-mem-read"),
    ("buffer_store_dword v3, v12, s[0:3], 0 offen", "mfma-write-valu-mem-read"),
    ("ds_write_b32 v12, v2", "mfma-write-valu-mem-read"),
    ("v_mov_b32_e32 v1, 0", "mfma-write-valu-mem-write"),
])
def test_mfma_result_then_valu_or_memory(consumer, rule):
    v = only(violations("gfx942", MFMA16_942, *nops(6), consumer), rule)
    assert (v.required, v.present) == (7, 6)
    assert not violations("gfx942", MFMA16_942, *nops(7), consumer)


def test_srcc_read_then_overwritten_by_a_load():
    """An MFMA reads SrcC late: an LDS load into those registers waits passes - 1 (IREE's `s_nop 1` after MFMAs)."""
    producer = "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[12:15]"
    consumer = "ds_read2_b64 v[12:15], v37 offset0:72 offset1:76"
    v = only(violations("gfx942", producer, *nops(2), consumer), "mfma-srcc-read-write")
    assert (v.required, v.register) == (3, "v[12:15]")
    assert not violations("gfx942", producer, *nops(3), consumer)


def test_valu_write_then_mfma_read():
    found = violations("gfx942", "v_perm_b32 v28, v5, v4, s3", "s_nop 0",
                       "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[28:29], 0")
    v = only(found, "valu-write-mfma-read")
    assert (v.required, v.present, v.register) == (2, 1, "v[28:29]")
    assert not violations("gfx942", "v_perm_b32 v28, v5, v4, s3", "s_nop 1",
                          "v_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[28:29], 0")


def test_valu_write_exec_then_mfma():
    v = only(violations("gfx942", "v_cmpx_gt_u32_e32 vcc, s0, v1", *nops(3),
                        "v_mfma_f32_16x16x16_bf16 v[8:11], v[4:5], v[6:7], 0"), "valu-write-exec-mfma")
    assert v.required == 4 and v.register == "exec"


def test_valu_write_sgpr_then_buffer_reads_it():
    first = "v_readfirstlane_b32 s4, v1"
    load = "buffer_load_dword v2, v3, s[8:11], s4 offen"
    v = only(violations("gfx942", first, *nops(4), load), "valu-write-sgpr-vmem-read")
    assert (v.required, v.present, v.register) == (5, 4, "s4")
    assert not violations("gfx942", first, *nops(5), load)


def test_valu_write_vcc_then_valu_reads_it():
    v = only(violations("gfx942", "v_cmp_gt_u32_e32 vcc, s0, v1", "v_cndmask_b32_e32 v2, v3, v4, vcc"),
             "valu-write-sgpr-valu-read")
    assert (v.required, v.register) == (2, "vcc")
    assert not violations("gfx942", "v_cmp_gt_u32_e32 vcc, s0, v1", "s_nop 1", "v_cndmask_b32_e32 v2, v3, v4, vcc")


def test_trans_result_read_by_a_non_trans_valu():
    v = only(violations("gfx942", "v_exp_f32_e32 v1, v2", "v_add_f32_e32 v3, v1, v4"), "trans-write-valu-read")
    assert v.required == 1
    assert not violations("gfx942", "v_exp_f32_e32 v1, v2", "s_nop 0", "v_add_f32_e32 v3, v1, v4")


def test_m0_written_then_lds_dma():
    dma = "buffer_load_dword v1, s[4:7], 0 offen lds"
    v = only(violations("gfx950", "s_mov_b32 m0, s2", dma), "salu-write-m0-lds-dma")
    assert (v.required, v.register) == (1, "m0")
    assert not violations("gfx950", "s_mov_b32 m0, s2", "s_nop 0", dma)


def test_setreg_then_getreg_of_the_same_register():
    setreg, getreg = "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s1", "s_getreg_b32 s2, hwreg(HW_REG_MODE, 0, 4)"
    v = only(violations("gfx942", setreg, "s_nop 0", getreg), "setreg-getreg")
    assert (v.required, v.present) == (2, 1)
    assert not violations("gfx942", setreg, "s_nop 1", getreg)
    assert not violations("gfx942", setreg, "s_getreg_b32 s2, hwreg(HW_REG_TRAPSTS, 0, 4)")


def test_wmma_result_as_the_next_wmmas_a_needs_a_valu_between():
    first = "v_wmma_f32_16x16x16_bf16 v[0:7], v[8:15], v[16:23], v[0:7]"
    second = "v_wmma_f32_16x16x16_bf16 v[24:31], v[0:7], v[16:23], v[24:31]"
    v = only(violations("gfx1151", first, "s_nop 7", second), "wmma-write-srcab")  # s_nop is not a VALU
    assert v.required == 1 and v.present == 0
    assert not violations("gfx1151", first, "v_nop", second)


def test_soft_clause_load_overwriting_an_address_of_its_clause():
    """XNACK soft clause: the third load overwrites v52, the address of the first; an s_nop 0 ends the clause."""
    loads = ["buffer_load_dwordx4 v[34:37], v52, s[12:15], 0 offen", "buffer_load_dwordx4 v[38:41], v70, s[12:15], "
             "0 offen", "buffer_load_dwordx4 v[50:53], v73, s[4:7], 0 offen"]
    v = only(violations("gfx950", *loads), "xnack-soft-clause")
    assert v.register == "v52" and (v.producer, v.consumer) == (0, 2)
    assert not violations("gfx950", *loads[:2], "s_nop 0", loads[2])
    assert not violations("gfx1151", *loads)  # RDNA3.5 has no XNACK replay


def test_soft_clause_loads_whose_destinations_overlap_are_no_hazard():
    """LLVM breaks a clause only where a register it defines is one it uses (ClauseDefs.anyCommon(ClauseUses)):
    two loads writing overlapping registers (IREE's gfx950 fp8 NT kernels load v[26:29] then v[28:31] from one
    address register) replay to the same result and are not a hazard; a load overwriting its own address is."""
    overlapping = ["buffer_load_dwordx4 v[26:29], v13, s[4:7], 0 offen offset:128",
                   "buffer_load_dwordx4 v[28:31], v13, s[4:7], 0 offen offset:2192"]
    assert not violations("gfx950", *overlapping)
    own_address = ["buffer_load_dwordx4 v[26:29], v13, s[4:7], 0 offen",
                   "buffer_load_dwordx4 v[12:15], v13, s[4:7], 0 offen"]
    v = only(violations("gfx950", *own_address), "xnack-soft-clause")
    assert v.register == "v13" and v.consumer == 1


def test_branches_count_the_path_taken():
    """The checker runs over executed pcs: a loop back-edge brings the MFMA of the previous iteration close."""
    lines = ["v_mov_b32_e32 v10, 0", "v_add_f32_e32 v9, v0, v10", "s_nop 1", MFMA16_942, "s_cbranch_scc1 label"]
    assert not violations("gfx942", *lines)
    found = violations("gfx942", *lines, pcs=[0, 1, 2, 3, 4, 1, 2, 3, 4])  # v_add reads v0 one wait state after MFMA
    v = only(found, "mfma-write-valu-mem-read")
    assert (v.producer, v.consumer, v.present) == (3, 1, 1)


def test_wait_states_of_nops_and_the_table_bound():
    assert classify(parse_instruction("s_nop 6", 1), "gfx942", {}).wait_states == 7
    assert classify(parse_instruction("v_mov_b32_e32 v1, 0", 1), "gfx942", {}).wait_states == 1
    assert all(rule.source for rule in RULES)
    assert MAX_WAIT_STATES >= 16 + 3 + 1


SMFMAC16 = "v_smfmac_f32_16x16x32_bf16 v[0:3], v[4:5], v[6:9], v10"  # 16 clocks (calculator, cdna3): 4 passes


@pytest.mark.parametrize("arch, required", [("gfx942", 7), ("gfx950", 8)])
def test_smfmac_result_read_as_the_next_index_is_a_srcab_read(arch, required):
    """A sparse MFMA's index (its third operand) is read like SrcA/B (GCNHazardRecognizer checkMAIHazards90A: every
    use but SrcC): 4 passes + 3, + 1 on CDNA4."""
    consumer = "v_smfmac_f32_16x16x32_bf16 v[12:15], v[4:5], v[6:9], v2"
    v = only(violations(arch, SMFMAC16, *nops(required - 1), consumer), "mfma-write-srcab")
    assert (v.required, v.present, v.register) == (required, required - 1, "v2")
    assert not violations(arch, SMFMAC16, *nops(required), consumer)


def test_smfmac_accumulates_into_its_destination():
    """SrcC of a sparse MFMA is its destination: the same registers chain without waits, overlapping ones wait
    passes + 1 like a dense MFMA's SrcC."""
    assert not violations("gfx942", SMFMAC16, SMFMAC16, SMFMAC16)
    consumer = "v_smfmac_f32_16x16x32_bf16 v[2:5], v[12:13], v[6:9], v10"
    v = only(violations("gfx942", MFMA16_942, *nops(4), consumer), "mfma-write-srcc")
    assert (v.required, v.register) == (5, "v[2:5]")
    assert not violations("gfx942", MFMA16_942, *nops(5), consumer)
