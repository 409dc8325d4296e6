"""A batch of workgroups runs each instruction as the workgroups would one at a time.

For instructions whose batched form differs from the per-wave one (scalar ALU on per-workgroup values, branches,
lane masks, cross-lane moves, scalar loads), two workgroups with different random registers run the instruction
together, and each runs it alone from the same state; every register, SCC, EXEC and the program counter must come
out the same. No kernel is compiled.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from pipelines.emulator.isa import EXEC, parse_instruction
from pipelines.emulator.machine import DECODERS, DecodeContext, Divergence, Wave
from pipelines.emulator.memory import FlatMemory

CASES = [  # (arch, wave size, instruction)
    ("gfx942", 64, "s_add_u32 s4, s5, s6"),
    ("gfx942", 64, "s_addc_u32 s4, s5, s6"),
    ("gfx942", 64, "s_sub_i32 s4, s5, s6"),
    ("gfx942", 64, "s_max_i32 s4, s5, s6"),
    ("gfx942", 64, "s_lshl2_add_u32 s4, s5, s6"),
    ("gfx942", 64, "s_bfe_u32 s4, s5, 0x80003"),
    ("gfx942", 64, "s_cmp_lt_i32 s5, s6"),
    ("gfx942", 64, "s_cselect_b32 s4, s5, s6"),
    ("gfx942", 64, "s_and_saveexec_b64 s[8:9], s[10:11]"),
    ("gfx942", 64, "s_andn2_b64 s[8:9], s[10:11], s[12:13]"),
    ("gfx942", 64, "s_brev_b32 s4, s5"),
    ("gfx942", 64, "s_addk_i32 s4, 0x8001"),
    ("gfx942", 64, "v_readfirstlane_b32 s4, v1"),
    ("gfx942", 64, "v_readlane_b32 s4, v1, s7"),
    ("gfx942", 64, "v_writelane_b32 v2, s5, s7"),
    ("gfx942", 64, "v_add_u32_e32 v2, s5, v1"),
    ("gfx942", 64, "v_cmp_gt_u32_e64 s[8:9], v1, v3"),
    ("gfx942", 64, "v_cndmask_b32_e64 v2, v1, v3, s[10:11]"),
    ("gfx942", 64, "v_add_co_u32_e64 v2, s[8:9], v1, s5"),
    ("gfx942", 64, "v_mov_b32_dpp v2, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf"),
    ("gfx942", 64, "v_mov_b32_dpp v2, v1 row_bcast:15 row_mask:0xa bank_mask:0xf"),
    ("gfx942", 64, "v_add_f32_dpp v2, v1, v3 row_half_mirror row_mask:0xf bank_mask:0xf bound_ctrl:1"),
    ("gfx1151", 32, "v_permlanex16_b32 v2, v1, s5, s6"),
    ("gfx1151", 32, "s_add_f32 s4, s5, s6"),
    ("gfx942", 64, "s_cbranch_scc1 .LBB0_1"),
    ("gfx942", 64, "s_cbranch_execz .LBB0_1"),
]


def _wave(arch: str, lanes: int, state: dict, rows: list[int]) -> Wave:
    memory = FlatMemory()
    workgroup = SimpleNamespace(mma=0, id=0, ids=np.array(rows), memory=memory, open_window=lambda w, op: None,
                                code=SimpleNamespace(instructions=[SimpleNamespace(text="?", line=1)]))
    wave = Wave(0, workgroup, lanes, 16, 0, len(rows))
    columns = np.concatenate([np.arange(r * lanes, (r + 1) * lanes) for r in rows])
    wave.v[:] = state["v"][:, columns]
    wave.s[:] = state["s"][:, rows]
    wave.scc = state["scc"][rows].copy()
    wave.sync_exec()
    return wave


def _run(wave: Wave, text: str, arch: str) -> str:
    inst = parse_instruction(text, 1)
    kernel = SimpleNamespace(labels={".LBB0_1": 7})
    ctx = DecodeContext(kernel=kernel, arch=arch, lanes=wave.wave_lanes, lds_banks=32)
    wave.cur, wave.pc = 0, 1
    try:
        DECODERS[inst.opcode](inst, ctx)(wave)
    except Divergence as split:
        return f"diverged {split.taken.tolist()}"
    return f"pc {wave.pc}"


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # random bits include NaNs
@pytest.mark.parametrize("arch, lanes, text", CASES, ids=[text.split()[0] + f"-{i}" for i, (_, _, text) in
                                                         enumerate(CASES)])
def test_a_batch_of_two_runs_as_each_workgroup_alone(arch, lanes, text):
    rng = np.random.default_rng(len(text))
    state = {"v": rng.integers(0, 2**32, (16, 2 * lanes), dtype=np.uint64).astype(np.uint32),
             "s": rng.integers(0, 2**32, (128, 2), dtype=np.uint64), "scc": np.array([0, 1], np.uint64)}
    state["v"][1] = rng.integers(0, 2**10, 2 * lanes).astype(np.uint32).view(np.float32).view(np.uint32)
    state["s"][7] = [5, 38]  # lane selectors
    state["s"][EXEC:EXEC + 2, 0] = [0xFFFF00FF, 0x0F0F0F0F]  # a different EXEC per workgroup
    state["s"][EXEC:EXEC + 2, 1] = [0xFFFFFFFF, 0xFFFFFFFF] if lanes == 64 else [0xFFFFFFFF, 0]
    together = _wave(arch, lanes, state, [0, 1])
    outcome = _run(together, text, arch)
    alone = [_wave(arch, lanes, state, [b]) for b in (0, 1)]
    outcomes = [_run(w, text, arch) for w in alone]
    if outcome.startswith("diverged"):  # the two disagree on the branch: each alone takes its own way
        assert outcomes[0] != outcomes[1] and outcome == f"diverged {[o == 'pc 7' for o in outcomes]}"
        return
    assert outcomes == [outcome, outcome]
    for b, w in enumerate(alone):
        assert np.array_equal(together.v[:, b * lanes:(b + 1) * lanes], w.v), "VGPRs"
        assert np.array_equal(together.s[:, b], w.s[:, 0]), "SGPRs"
        assert np.broadcast_to(together.scc, (2,))[b] == np.broadcast_to(w.scc, (1,))[0], "SCC"
        assert np.array_equal(together.exec[b * lanes:(b + 1) * lanes], w.exec), "EXEC"


def test_the_branch_cases_do_diverge():
    """At least one branch case splits the batch, so the divergence path above is exercised."""
    rng = np.random.default_rng(0)
    lanes = 64
    state = {"v": np.zeros((16, 2 * lanes), np.uint32), "s": rng.integers(0, 2**32, (128, 2), dtype=np.uint64),
             "scc": np.array([0, 1], np.uint64)}
    together = _wave("gfx942", lanes, state, [0, 1])
    assert _run(together, "s_cbranch_scc1 .LBB0_1", "gfx942") == "diverged [False, True]"
