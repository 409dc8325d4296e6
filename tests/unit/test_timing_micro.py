"""The CU timing model on micro-kernels whose clocks are worked out by hand (gfx942's facts: the sequencer visits
SIMD s at clocks t ≡ s mod 4; v_mfma_f32_16x16x16_bf16 holds the matrix pipe 16 clocks and a non-accumulating
reader waits 12 more; VALU 4; LDS data 20 clocks after the last bank pass; VMEM 500 clocks after its transfer of
bytes / 64 per clock; a barrier releases 32 clocks after the last arrival). The arithmetic is in each test."""

import dataclasses

import numpy as np
import pytest

from pipelines.emulator.memory import bank_cycles
from pipelines.targets import TARGETS
from pipelines.timing import TimingError, classify_text, run_waves

# gfx942's published facts with the fitted ones pinned to the values the arithmetic below uses, so that a new
# calibration does not change these hand-worked clocks.
T = dataclasses.replace(TARGETS["gfx942"].timing, vmem_latency=500, vmem_bytes_per_clk=64, barrier_latency=32)
GFX942 = dataclasses.replace(TARGETS["gfx942"], timing=T)


def program(*lines: str) -> list:
    return classify_text([*lines, "s_endpgm"], GFX942)


def mfma(d: int, a: str = "v[40:41]") -> str:
    return f"v_mfma_f32_16x16x16_bf16 v[{d}:{d + 3}], {a}, v[42:43], v[{d}:{d + 3}]"


def test_the_facts_the_arithmetic_assumes():
    assert (T.issue_interval, T.valu_cycles, T.mma_read_extra, T.lds_latency) == (4, 4, 12, 20)
    assert (T.vmem_latency, T.vmem_bytes_per_clk, T.barrier_latency) == (500, 64, 32)


def test_independent_mfmas_run_at_the_pipe_rate():
    # Issued at 0, 16, 32, 48 (the pipe frees every 16 clocks, each a visit of SIMD 0); the last is done at 64.
    result = run_waves(T, [program(*(mfma(4 * i) for i in range(4)))])
    assert result.cycles == 64 and result.mma_busy == (64, 0, 0, 0)


def test_accumulating_into_the_same_registers_runs_at_the_pipe_rate_too():
    result = run_waves(T, [program(*(mfma(0) for _ in range(4)))])
    assert result.cycles == 64


def test_an_mfma_reading_the_previous_result_waits_for_it():
    # Each reads the previous D as its A operand: ready 16 + 12 = 28 clocks after issue (a visit of SIMD 0), so
    # issues at 0, 28, 56, 84; the last is done at 100.
    lines = [mfma(0)] + [mfma(4 * i, f"v[{4 * (i - 1)}:{4 * (i - 1) + 1}]") for i in range(1, 4)]
    result = run_waves(T, [program(*lines)])
    assert result.cycles == 100
    assert result.stalls["dependency"] > 0


def smfmac(d: int, index: str = "v44") -> str:
    return f"v_smfmac_f32_16x16x32_bf16 v[{d}:{d + 3}], v[40:41], v[42:45], {index}"


def test_sparse_mfmas_accumulate_into_their_destination_at_the_pipe_rate():
    # 16 clocks each (AMD's matrix instruction calculator, cdna3); the destination is the accumulator, read in pipe
    # order: four into v[0:3] issue at 0, 16, 32, 48 and finish at 64, as dense accumulating MFMAs do.
    result = run_waves(T, [program(*(smfmac(0) for _ in range(4)))])
    assert result.cycles == 64 and result.mma_busy == (64, 0, 0, 0)


def test_a_sparse_mfma_waits_for_its_index_register():
    # The index (fourth operand) is a source: written by the previous MFMA's result v3 (ready 16 + 12 = 28 clocks
    # after issue), so the second issues at 28 and is done at 44; were it taken for the accumulator, 32.
    result = run_waves(T, [program(smfmac(0), smfmac(8, "v3"))])
    assert result.cycles == 44 and result.stalls["dependency"] > 0


def test_four_waves_on_four_simds_run_side_by_side():
    # Wave s sits on SIMD s and issues at s, s+16, s+32, s+48: done at s+64, so the last at 67; one wave with all
    # 16 MFMAs takes 16 × 16 = 256.
    four = run_waves(T, [program(*(mfma(4 * i) for i in range(4))) for _ in range(4)])
    one = run_waves(T, [program(*(mfma(4 * (i % 4)) for i in range(16)))])
    assert four.cycles == 67 and four.finish == (64, 65, 66, 67)
    assert one.cycles == 256


def test_two_waves_on_one_simd_share_its_matrix_pipe():
    # Waves 0 and 4 both sit on SIMD 0 (waves 1-3 end at once): wave 0 is older and issues at 0, 16, 32, 48; wave
    # 4 then at 64, 80, 96, 112 and is done at 128.
    idle = program()
    result = run_waves(T, [program(*(mfma(4 * i) for i in range(4))), idle, idle, idle,
                           program(*(mfma(4 * i) for i in range(4)))])
    assert result.finish[0] == 64 and result.finish[4] == 128
    assert result.stalls["issue"] >= 64 - 4  # wave 4 waited for the pipe


def lds_passes(stride: int) -> int:
    """Bank passes of a wave64 ds_read_b32 whose lane i reads byte stride × i (32 banks of 4 B)."""
    return bank_cycles(np.arange(64) * stride, 4, 32, 64)[0]


def test_a_four_way_bank_conflict_takes_four_times_the_passes():
    assert lds_passes(4) == 2 and lds_passes(16) == 8  # 32 lanes per pass; lanes 0, 8, 16, 24 share a bank
    reads = program(*(f"ds_read_b32 v{i}, v20" for i in range(4)), "s_waitcnt lgkmcnt(0)")
    # Conflict-free: issued at 0, 4, 8, 12, 2 passes each, data at 22, 26, 30, 34; the wait passes at the visit
    # at 36 and s_endpgm issues at 40. Four-way: 8 passes each, so the pipe serves them at 0, 8, 16, 24 and the
    # data arrive at 28, 36, 44, 52; the wait passes at 52, s_endpgm at 56.
    free = run_waves(T, [reads], lds_passes=[[2] * 4])
    conflicted = run_waves(T, [reads], lds_passes=[[8] * 4])
    assert (free.cycles, conflicted.cycles) == (40, 56)
    assert (free.lds_busy, conflicted.lds_busy) == (8, 32)


def test_a_vmcnt_wait_holds_the_wave_until_the_load_lands():
    # 1024 bytes: 16 clocks of transfer, data at 16 + 500 = 516 (a visit); the add issues at 520 and is done at 524.
    result = run_waves(T, [program("global_load_dwordx4 v[0:3], v[4:5], off", "s_waitcnt vmcnt(0)",
                                   "v_add_f32_e32 v6, v0, v1")])
    assert result.cycles == 524
    assert result.stalls["vmcnt"] >= 500


def test_a_barrier_holds_the_early_wave_until_the_late_one_arrives():
    # Wave 1 arrives at 1; wave 0 arrives after its MFMAs, at 52 (the first visit after the one at 48). Both go
    # on at 52 + 32 = 84: wave 1's add issues at its visit at 85 and is done at 89.
    result = run_waves(T, [program(*(mfma(4 * i) for i in range(4)), "s_barrier"),
                           program("s_barrier", "v_add_f32_e32 v6, v0, v1")])
    assert result.finish == (84, 89)
    assert result.stalls["barrier"] >= 84 - 1


def test_setprio_changes_which_wave_issues():
    # Waves 0 and 4 share SIMD 0, two MFMAs each. Without priorities the older wave 0 goes first (done 32, wave 4
    # at 64). With wave 4 raising its priority (s_setprio issues at 0 beside wave 0's first MFMA, another
    # category), wave 4 wins the pipe at 16 and 32 (done 48) and wave 0's second MFMA waits until 48 (done 64).
    idle = program()
    two = [mfma(0), mfma(4)]
    plain = run_waves(T, [program(*two), idle, idle, idle, program(*two)])
    raised = run_waves(T, [program(*two), idle, idle, idle, program("s_setprio 3", *two)])
    assert (plain.finish[0], plain.finish[4]) == (32, 64)
    assert (raised.finish[0], raised.finish[4]) == (64, 48)


def test_nop_delays_by_issue_visits():
    # s_nop 3: four wait states of 4 clocks; the add issues at 16 and is done at 20.
    assert run_waves(T, [program("s_nop 3", "v_add_f32_e32 v6, v0, v1")]).cycles == 20


def test_an_instruction_without_a_cost_is_one_sentence():
    with pytest.raises(TimingError, match="no cost for 'x_unknown_op'"):
        classify_text(["x_unknown_op v0, v1"], GFX942)
    with pytest.raises(TimingError, match="no matrix pipe cost for 'v_mfma_f32_4x4x4_16b_f16'"):
        classify_text(["v_mfma_f32_4x4x4_16b_f16 v[0:3], v[4:5], v[6:7], v[0:3]"], GFX942)
    with pytest.raises(TimingError, match="sm_80 has no timing facts"):
        classify_text(["s_endpgm"], TARGETS["sm_80"])


def test_a_trace_that_waits_forever_is_one_sentence():
    slow = dataclasses.replace(T, barrier_latency=T.barrier_latency)
    with pytest.raises(TimingError, match="without s_endpgm"):
        run_waves(slow, [classify_text(["v_add_f32_e32 v6, v0, v1"], GFX942)])


# ---------------------------------------------------------------------------------------------------- RDNA3 WMMA

def test_a_wmma_holds_the_valu_of_its_simd_for_its_whole_run():
    """gfx1151 (RDNA3.5): v_wmma_f32_16x16x16_f16 takes 32 clocks and does not co-execute with VALU work (AMD's
    matrix instruction calculator, rdna3 'coexec': False). One wave: the WMMA issues at 0; an independent v_add
    may issue only at 32, when the WMMA frees the VALU, and its result is there 5 clocks later (GFX11 VALU latency):
    37 clocks. Were it CDNA-like (co-executing after one VALU issue clock), the add would issue at 1 and the WMMA,
    done at 32, would end the wave."""
    target = TARGETS["gfx1151"]
    timing = target.timing
    assert (timing.issue_interval, timing.valu_cycles, timing.valu_latency, timing.mma_coexec) == (1, 1, 5, False)
    lines = ["v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]", "v_add_f32_e32 v30, v31, v32", "s_endpgm"]
    ops = classify_text(lines, target)
    assert ops[0].busy == 32
    assert run_waves(timing, [ops]).cycles == 37
    coexecuting = dataclasses.replace(timing, mma_coexec=True)
    assert run_waves(coexecuting, [ops]).cycles == 32


def test_two_waves_on_one_rdna3_simd_take_turns_between_wmma_and_valu():
    """Waves 0 and 2 sit on SIMD 0 of gfx1151's 2 (wave i on SIMD i mod 2). Wave 0 issues a WMMA at 0; wave 2's
    four independent v_adds wait for the VALU until 32, then issue at 32..35 and the last is done at 40."""
    target = TARGETS["gfx1151"]
    wmma = classify_text(["v_wmma_f32_16x16x16_f16 v[0:7], v[8:15], v[16:23], v[0:7]", "s_endpgm"], target)
    adds = classify_text([f"v_add_f32_e32 v{30 + i}, v40, v41" for i in range(4)] + ["s_endpgm"], target)
    idle = classify_text(["s_endpgm"], target)
    result = run_waves(target.timing, [wmma, idle, adds], simds=target.timing.simds)
    assert result.cycles == 40
