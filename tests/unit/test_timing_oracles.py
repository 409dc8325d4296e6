"""The timing model's whole-kernel arithmetic checked against oracles computed another way than the model computes it.

The model is fed synthetic recordings, so no compile runs: a small kernel listing (one MFMA per wave per 16 of K
in a loop closed by a back-edge, each wave of a workgroup owning 16x16 outputs) and a stand-in for the emulator
that walks the listing's control flow for a loop count the test knows (the dispatch's K / 16), stopping after the
window's passes over the back-edge as the emulator does. The oracles:
- a VMEM transfer of B bytes on a path of R bytes per clock takes the fewest whole clocks c with c·R >= B (found
  by counting up, not by division), so a byte count one above or below a multiple of R changes the answer;
- the busiest compute unit's workgroups, resident ones at a time, in rounds: a simulation that deals the
  dispatch's workgroups to the compute units one by one and then runs the busiest one's in batches; the waves per
  SIMD come from a literal table worked out from the ISA's numbers (cited at the table), on both sides of each
  VGPR granule and LDS boundary;
- a prediction over a window of K steps agrees with the whole loop replayed, for one kernel and for each dispatch
  of a split-K program (whose partial products are a batch of S GEMMs of K/S: the stand-in's loop runs K/S / 16
  times), and the sum dispatch moves S·M·N f32 partials in and M·N f32 out (bytes of numpy arrays of those shapes);
- metamorphic: more K never predicts less time; doubling M and N of a compute-bound problem of whole tiles
  multiplies the time by about four.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipelines.emulator.isa import parse_kernel
from pipelines.inspect import amdgpu_stats
from pipelines.targets import TARGETS
from pipelines.timing import predict as model
from pipelines.timing import run_waves
from pipelines.timing.ops import INTERNAL, VMEM, Op, classify_text

GFX942 = TARGETS["gfx942"]
K_STEP = 16  # K per loop iteration of the synthetic kernel: one v_mfma_f32_16x16x16_bf16 per wave
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---------------------------------------------------------------------------------------------- VMEM transfers
def clocks_to_move(nbytes: int, per_clock: int) -> int:
    """The fewest whole clocks whose transfers cover `nbytes` (a path moves at most `per_clock` bytes a clock)."""
    clocks = 0
    while clocks * per_clock < nbytes:
        clocks += 1
    return clocks


def load(nbytes: int, latency: int) -> list[Op]:
    return [Op("global_load", "vmem", VMEM, 0, latency, counter="vm", bytes=nbytes),
            Op("s_waitcnt vmcnt(0)", "waitcnt", INTERNAL, 0, 0, wait_vm=0),
            Op("s_endpgm", "end", INTERNAL, 0, 0)]


@pytest.mark.parametrize("per_clock", [64, 48])
@pytest.mark.parametrize("multiple", [1, 3, 16])
@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_a_transfer_takes_whole_clocks_on_both_sides_of_a_multiple(per_clock, multiple, offset):
    timing = dataclasses.replace(GFX942.timing, vmem_bytes_per_clk=per_clock, vmem_latency=100)
    nbytes = per_clock * multiple + offset
    result = run_waves(timing, [load(nbytes, 100)])
    want = clocks_to_move(nbytes, per_clock)
    assert result.vmem_busy == want
    # The data land `want` + 100 clocks after the load issued at 0; the wait passes at the first visit of SIMD 0
    # (every 4 clocks) from then on, and s_endpgm issues at the visit after.
    visit = timing.issue_interval
    assert result.cycles == -(-(want + 100) // visit) * visit + visit


def test_one_byte_over_a_transfer_costs_a_clock():
    timing = dataclasses.replace(GFX942.timing, vmem_latency=100)
    at = run_waves(timing, [load(64 * 8, 100), load(64 * 8, 100)])
    over = run_waves(timing, [load(64 * 8 + 1, 100), load(64 * 8 + 1, 100)])
    assert (at.vmem_busy, over.vmem_busy) == (16, 18)
    assert over.finish[1] > at.finish[1]  # the second wave's load queues behind the first's longer transfer


@settings(max_examples=60, deadline=None)
@given(nbytes=st.integers(1, 1 << 17), per_clock=st.integers(1, 256))
def test_the_transfer_covers_its_bytes_and_no_clock_is_spare(nbytes, per_clock):
    timing = dataclasses.replace(GFX942.timing, vmem_bytes_per_clk=per_clock)
    busy = run_waves(timing, [load(nbytes, 10)]).vmem_busy
    assert busy * per_clock >= nbytes > (busy - 1) * per_clock


def test_byte_loads_of_a_wave32_take_a_clock_of_the_memory_path():
    """gfx1151 (wave32): a byte per lane is 32 B, half of the 64 B/clock path, and still one whole clock; a dword
    per lane, 128 B, two. gfx942 (wave64) dwordx3: 768 B, 12 clocks; at a fitted 100 B/clock, 8 (7.68 rounded up)."""
    gfx1151 = TARGETS["gfx1151"]
    for opcode, clocks in (("global_load_ubyte", 1), ("global_load_ushort", 1), ("global_load_dword", 2)):
        ops = classify_text([f"{opcode} v0, v[2:3], off", "s_waitcnt vmcnt(0)", "s_endpgm"], gfx1151)
        assert run_waves(gfx1151.timing, [ops]).vmem_busy == clocks, opcode
    wide = classify_text(["global_load_dwordx3 v[0:2], v[4:5], off", "s_waitcnt vmcnt(0)", "s_endpgm"], GFX942)
    assert run_waves(GFX942.timing, [wide]).vmem_busy == 12
    assert run_waves(dataclasses.replace(GFX942.timing, vmem_bytes_per_clk=100), [wide]).vmem_busy == 8


# ------------------------------------------------------------------------------------- synthetic recordings
def listing(threads: int = 256, next_free_vgpr: int = 16, lds: int = 0, loop: bool = True,
            store: bool = False) -> str:
    """A kernel of `threads` (wave64) whose waves each run a K loop of one MFMA (or four MFMAs and no loop), with
    the descriptor and metadata `inspect` reads for occupancy; `store`: C stored after the loop (which a windowed
    replay leaves out, as `predict.ASSUMPTIONS` says)."""
    body = (".LBB0_1:\n\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]\n\ts_add_u32 s0, s0, 1\n"
            "\ts_cmp_lt_u32 s0, s1\n\ts_cbranch_scc1 .LBB0_1\n" if loop else
            "\tv_mfma_f32_16x16x16_bf16 v[0:3], v[4:5], v[6:7], v[0:3]\n" * 4)
    tail = "\tglobal_store_dwordx4 v[12:13], v[0:3], off\n" if store else ""
    return f"""\t.text
k:
\ts_mov_b32 s0, 0
\tglobal_load_dwordx4 v[8:11], v[12:13], off
\ts_waitcnt vmcnt(0)
{body}{tail}\ts_endpgm
.Lfunc_end0:
\t.amdhsa_kernel k
\t\t.amdhsa_group_segment_fixed_size {lds}
\t\t.amdhsa_next_free_vgpr {next_free_vgpr}
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .group_segment_fixed_size: {lds}
    .max_flat_workgroup_size: {threads}
    .name:           k
    .sgpr_count:     16
    .sgpr_spill_count: 0
    .vgpr_count:     {next_free_vgpr}
    .vgpr_spill_count: 0
    .wavefront_size: 64
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""


SUM_LISTING = """\t.text
k:
\tglobal_load_dwordx4 v[0:3], v[12:13], off
\tglobal_load_dwordx4 v[4:7], v[12:13], off
\ts_waitcnt vmcnt(0)
\tv_add_f32_e32 v0, v0, v4
\tglobal_store_dword v[12:13], v0, off
\ts_endpgm
.Lfunc_end0:
\t.amdhsa_kernel k
\t\t.amdhsa_next_free_vgpr 16
\t.end_amdhsa_kernel
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .max_flat_workgroup_size: 256
    .name:           k
    .wavefront_size: 64
...
\t.end_amdgpu_metadata
"""


def walk(kernel, iterations: int, window: tuple[int, int] | None) -> list[int]:
    """The pcs one wave executes: straight on, a backward branch taken until its loop has run `iterations` times;
    with `window` = (pc, n) the wave stops once it has executed the instruction at pc n times."""
    pcs, pc, passes = [], 0, {}
    while True:
        inst = kernel.instructions[pc]
        pcs.append(pc)
        passes[pc] = passes.get(pc, 0) + 1
        if window is not None and pc == window[0] and passes[pc] >= window[1]:
            return pcs
        if inst.opcode == "s_endpgm":
            return pcs
        target = kernel.labels.get(inst.operands[0]) if inst.opcode.startswith("s_cbranch") else None
        pc = target if target is not None and target < pc and passes[pc] < iterations else pc + 1


@dataclasses.dataclass
class Dispatch:
    kernel_text: str
    workgroups: int
    iterations: int  # of its K loop (0: none)
    occupancy: int | None = 8


class FakeEmulator:
    """Stands in for `emulate_gemm` (and `load_kernel`, `dispatch_kernels`) over synthetic dispatches; records
    what it was asked to record."""

    def __init__(self, dispatches: list[Dispatch]):
        self.dispatches = dispatches
        self.kernels = [parse_kernel(d.kernel_text) for d in dispatches]
        self.recorded: list[int] = []

    def emulate_gemm(self, folder, seed=0, record=None, window=None, only=None, **_):
        index = only or 0
        kernel, dispatch = self.kernels[index], self.dispatches[index]
        self.recorded.append(record)
        waves = -(-math.prod(kernel.workgroup_size) // 64)
        traces = [[(walk(kernel, dispatch.iterations, window), []) for _ in range(waves)] for _ in range(record)]
        return SimpleNamespace(traces=traces, workgroups=dispatch.workgroups)

    def load_kernel(self, folder):
        return json.loads((Path(folder) / "report.json").read_text()), self.kernels[0], ""

    def dispatch_kernels(self, folder):
        return [(f"d{i}", kernel, "", d.workgroups) for i, (kernel, d) in enumerate(zip(self.kernels, self.dispatches))]


def problem(m: int, n: int, k: int) -> dict:
    return {"m": m, "n": n, "k": k, "dtype": "bf16", "layout": "nn", "batch": None,
            "epilogue": {"kind": "none", "alpha": 1.0, "beta": 1.0}}


def write_report(folder: Path, gemm: dict, dispatches: list[Dispatch], splits: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    entries = [{"dispatch": f"d{i}", "isa_file": f"d{i}.rocmasm", "occupancy": d.occupancy}
               for i, d in enumerate(dispatches)]
    report = {"target": "gfx942", "pipeline": "synthetic", "problems": [gemm], "schedule_summary": ["synthetic"],
              "verified": True, "files": {"dump": "dump"}, "dispatches": entries,
              "occupancy": dispatches[0].occupancy}
    if splits is None:
        report["grid"] = [dispatches[0].workgroups, 1, 1]
    else:
        report["split_k"] = {"splits": splits, "partial_kernel": "tile"}
    (folder / "report.json").write_text(json.dumps(report))
    return folder


@pytest.fixture
def synthetic(monkeypatch, tmp_path):
    """synthetic(gemm, dispatches, splits=None, window=WINDOW) -> the prediction of a folder of those dispatches."""
    counter = iter(range(10**6))

    def predict(gemm: dict, dispatches: list[Dispatch], splits: int | None = None, window: int = model.WINDOW):
        fake = FakeEmulator(dispatches)
        for name in ("emulate_gemm", "load_kernel", "dispatch_kernels"):
            monkeypatch.setattr(model, name, getattr(fake, name))
        monkeypatch.setattr(model, "WINDOW", window)
        folder = write_report(tmp_path / str(next(counter)), gemm, dispatches, splits)
        rec = model.record(folder)
        return model.replay(rec), rec, fake
    return predict


def whole_tiles(m: int, n: int, batch: int = 1, threads: int = 256) -> int:
    """Workgroups of a dispatch whose waves each own 16x16 outputs."""
    per_group = 16 * 16 * threads // 64
    assert (m * n * batch) % per_group == 0
    return m * n * batch // per_group


# --------------------------------------------------------------------------- occupancy, residency and rounds
def dealt_rounds(workgroups: int, units: int, resident: int) -> int:
    """Deal the workgroups to the compute units one at a time; the busiest one runs its share `resident` at a time."""
    share = [0] * units
    for index in range(workgroups):
        share[index % units] += 1
    left, rounds = max(share), 0
    while left > 0:
        left -= resident
        rounds += 1
    return rounds


def dealt_fills(workgroups: int, units: int, resident: int) -> list[float]:
    """Per round, the fraction of the chip's workgroup slots in use, dealing as `dealt_rounds` does."""
    left = [workgroups // units + (i < workgroups % units) for i in range(units)]
    fills = []
    while any(left):
        running = [min(resident, n) for n in left]
        fills.append(sum(running) / (units * resident))
        left = [n - r for n, r in zip(left, running)]
    return fills


# Waves per SIMD of a gfx942 kernel, worked out by hand from the ISA's numbers: 512 VGPRs per lane in the unified
# VGPR+AGPR file of a SIMD, allocated in granules of 8, at most 8 waves per SIMD (LLVM AMDGPUBaseInfo.cpp,
# getVGPRAllocGranule / getTotalNumVGPRs / getMaxWavesPerEU for gfx90a-class targets; the same numbers as
# test_inspect_occupancy); 64 KiB of LDS per CU (AMD's MI300 CDNA3 ISA reference, "Local Data Share") shared by
# the workgroups resident on its 4 SIMDs. Rows: (next free VGPR, LDS bytes, waves per SIMD). A 256-thread
# workgroup is 4 waves, one per SIMD, so as many workgroups are resident as a SIMD holds waves.
OCCUPANCY = [
    (64, 0, 8), (65, 0, 7), (72, 0, 7), (73, 0, 6), (128, 0, 4), (129, 0, 3), (168, 0, 3), (169, 0, 2),
    (256, 0, 2), (257, 0, 1),
    (16, 16384, 4), (16, 16385, 3), (16, 21845, 3), (16, 21846, 2), (16, 32768, 2), (16, 32769, 1),
]


@pytest.mark.parametrize("vgprs, lds, waves", OCCUPANCY)
@pytest.mark.parametrize("per_unit", [5, 16])
def test_rounds_follow_occupancy_at_both_sides_of_each_boundary(synthetic, vgprs, lds, waves, per_unit):
    text = listing(next_free_vgpr=vgprs, lds=lds, loop=False)
    occupancy = amdgpu_stats("d0", Path("d0.rocmasm"), text, GFX942).occupancy
    assert occupancy == waves
    workgroups = GFX942.compute_units * per_unit
    p, rec, fake = synthetic(problem(16 * workgroups, 64, 64), [Dispatch(text, workgroups, 0, occupancy)])
    resident = min(waves, per_unit)  # 4-wave workgroups: one wave per SIMD each
    assert fake.recorded == [resident] and p.resident == resident
    assert p.rounds == dealt_rounds(workgroups, GFX942.compute_units, resident)
    # each round at the clock of its own matrix load: peak - (peak - matrix clock) × busy × the slots it fills
    t = GFX942.timing
    fills = dealt_fills(workgroups, GFX942.compute_units, resident)
    assert len(fills) == p.rounds
    assert p.compute_us == pytest.approx(sum(p.cu_cycles / (t.clock_mhz - (t.clock_mhz - t.matrix_clock_mhz)
                                                            * p.mma_busy * f) for f in fills))


@pytest.mark.parametrize("offset", [-1, 0, 1])
@pytest.mark.parametrize("per_unit, resident", [(1, 8), (8, 8), (16, 8), (16, 3), (7, 2)])
def test_the_busiest_unit_gets_the_leftover_workgroup(synthetic, offset, per_unit, resident):
    workgroups = GFX942.compute_units * per_unit + offset
    text = listing(loop=False)
    p, rec, _ = synthetic(problem(16 * workgroups, 64, 64), [Dispatch(text, workgroups, 0, resident)])
    dealt = max(workgroups // GFX942.compute_units + (workgroups % GFX942.compute_units > 0), 1)
    assert rec.per_cu == dealt
    assert p.rounds == dealt_rounds(workgroups, GFX942.compute_units, min(resident, dealt))


@FAST
@given(workgroups=st.integers(1, 12 * 304))
def test_one_more_workgroup_never_takes_less_time(synthetic, workgroups):
    text = listing(loop=False)
    one, _, _ = synthetic(problem(16 * workgroups, 64, 64), [Dispatch(text, workgroups, 0, 3)])
    more, _, _ = synthetic(problem(16 * workgroups + 16, 64, 64), [Dispatch(text, workgroups + 1, 0, 3)])
    assert more.compute_us >= one.compute_us
    assert more.rounds - one.rounds in (0, 1)


# --------------------------------------------------------------------------------- the window and the loop
def single(m: int, n: int, k: int, occupancy: int = 2) -> tuple[dict, list[Dispatch]]:
    return problem(m, n, k), [Dispatch(listing(), whole_tiles(m, n), k // K_STEP, occupancy)]


@pytest.mark.parametrize("k", [16 * 17, 1024, 4096])
def test_a_window_agrees_with_the_whole_loop(synthetic, k):
    windowed, _, _ = synthetic(*single(64, 1024, k))
    whole, _, _ = synthetic(*single(64, 1024, k), window=10**9)
    assert windowed.instructions < whole.instructions
    assert windowed.cu_cycles == pytest.approx(whole.cu_cycles, rel=0.05)


def split(m: int, n: int, k: int, splits: int) -> tuple[dict, list[Dispatch]]:
    """A split-K program: S·(M×N) partial products, each a K/S loop, then their sum (no loop)."""
    partial = Dispatch(listing(), whole_tiles(m, n, splits), k // splits // K_STEP, 2)
    total = Dispatch(SUM_LISTING, m * n // 256, 0, 8)
    return problem(m, n, k), [partial, total]


@pytest.mark.parametrize("splits", [2, 4, 8])
def test_a_split_programs_window_agrees_with_its_whole_loops(synthetic, splits):
    gemm, dispatches = split(32, 1024, 8192, splits)
    windowed, _, _ = synthetic(gemm, dispatches, splits)
    whole, _, _ = synthetic(gemm, dispatches, splits, window=10**9)
    assert len(windowed.dispatches) == 2 and windowed.dispatches[0]["cu_cycles"] < 10**7
    assert windowed.instructions < whole.instructions
    for w, h in zip(windowed.dispatches, whole.dispatches):
        assert w["cu_cycles"] == pytest.approx(h["cu_cycles"], rel=0.05)
    assert windowed.microseconds == pytest.approx(whole.microseconds, rel=0.05)


@pytest.mark.parametrize("splits", [2, 8])
def test_a_split_partial_is_the_unsplit_kernel_over_k_over_s(synthetic, splits):
    """The partial products' dispatch runs the unsplit kernel's loop over K/S on S times the workgroups: one
    round on the busiest CU each, so its clocks are those of the unsplit kernel with K/S."""
    m, n, k = 32, 1024, 8192
    gemm, dispatches = split(m, n, k, splits)
    program, _, _ = synthetic(gemm, dispatches, splits)
    short, _, _ = synthetic(*single(m, n * splits, k // splits))
    assert program.dispatches[0]["rounds"] == short.rounds == 1
    assert program.dispatches[0]["cu_cycles"] == pytest.approx(short.cu_cycles, rel=0.02)


@pytest.mark.parametrize("splits", [2, 4, 16])
def test_the_sum_dispatch_moves_every_partial_once(synthetic, splits):
    m, n, k = 32, 1024, 8192
    gemm, dispatches = split(m, n, k, splits)
    program, _, _ = synthetic(gemm, dispatches, splits)
    a, b = np.zeros((m, k), np.float16), np.zeros((k, n), np.float16)  # bf16 is 2 bytes too
    partials, c = np.zeros((splits, m, n), np.float32), np.zeros((m, n), np.float32)
    assert program.dispatches[0]["hbm_bytes"] == a.nbytes + b.nbytes + partials.nbytes
    assert program.dispatches[1]["hbm_bytes"] == partials.nbytes + c.nbytes
    for d in program.dispatches:
        assert d["hbm_us"] == pytest.approx(d["hbm_bytes"] / GFX942.timing.hbm_bytes_per_s * 1e6)
    assert program.microseconds == pytest.approx(sum(d["microseconds"] for d in program.dispatches))


@FAST
@given(steps=st.lists(st.integers(1, 160), min_size=2, max_size=2, unique=True))
def test_more_k_never_predicts_less_time(synthetic, steps):
    """Strictly on either side of the window (loops of fewer steps are replayed whole); across it, within the
    drain of the last window iteration that the extrapolation leaves out (6 clocks of 2535 here, 0.2 %)."""
    short, long = sorted(steps)
    a, _, _ = synthetic(*single(64, 1024, K_STEP * short))
    b, _, _ = synthetic(*single(64, 1024, K_STEP * long))
    if (short < model.WINDOW) == (long < model.WINDOW):
        assert b.cu_cycles >= a.cu_cycles and b.microseconds >= a.microseconds
    else:
        assert b.cu_cycles >= 0.99 * a.cu_cycles


@pytest.mark.xfail(strict=True, reason="a windowed replay leaves out what follows the K loop (predict.ASSUMPTIONS): "
                   "where the C stores cost more than a loop iteration, one more K step past the window predicts less")
def test_more_k_across_the_window_boundary_with_stores_after_the_loop(synthetic):
    def with_stores(k):
        gemm, (dispatch,) = single(64, 1024, k)
        return gemm, [dataclasses.replace(dispatch, kernel_text=listing(store=True))]
    whole, _, _ = synthetic(*with_stores(K_STEP * (model.WINDOW - 1)))
    windowed, _, _ = synthetic(*with_stores(K_STEP * (model.WINDOW + 1)))
    assert windowed.cu_cycles >= whole.cu_cycles


@pytest.mark.parametrize("m, n", [(2048, 2048), (2048, 4096)])
def test_doubling_m_and_n_of_a_compute_bound_problem_about_quadruples_its_time(synthetic, m, n):
    """Four times the workgroups of one tile: the busiest CU runs about four times the rounds of the same clocks
    (a round more or less from the remainder), and the launch overhead is a small part of the time."""
    small, _, _ = synthetic(*single(m, n, 2048))
    big, _, _ = synthetic(*single(2 * m, 2 * n, 2048))
    for p in (small, big):
        assert p.compute_us > 2 * p.hbm_us and p.compute_us > 2 * p.launch_us  # or the property does not apply
    assert big.workgroups == 4 * small.workgroups and big.cu_cycles == small.cu_cycles
    assert 3.5 <= big.compute_us / small.compute_us <= 4.5
    assert 3.0 <= big.microseconds / small.microseconds <= 4.5


# ------------------------------------------------------------------------------- compiled kernels (slow tier)
@pytest.fixture(scope="module")
def compiled_folder(tmp_path_factory):
    from pipelines import cli

    root = tmp_path_factory.mktemp("routes")
    cache: dict[tuple, Path] = {}

    def compile_(target: str, shape: str, pipeline: str, *flags: str) -> Path:
        key = (target, shape, pipeline, *flags)
        if key not in cache:
            out = root / "_".join(key).replace("-", "")
            assert cli.main(["compile", "--target", target, "--shape", shape, "--dtype", "bf16", "--layout", "nt",
                             "--pipeline", pipeline, *flags, "-o", str(out)]) == 0
            cache[key] = out
        return cache[key]
    return compile_


@pytest.mark.slow
@pytest.mark.parametrize("target, shape, pipeline, flags", [
    ("gfx942", "256x256x8192", "default", ()),  # IREE's own configuration, no spec
    # a schedule of ours through the tuning spec. Known miss, kept strict so a fix shows: with gfx950's refitted
    # VMEM path (32 bytes a clock a CU) the window's second half runs 7 % faster than the whole loop (99-101k
    # against 109k clocks), because the memory queue still builds past 16 passes; `_extrapolate` does not model it.
    pytest.param("gfx950", "256x256x2048", "tuned", (), marks=pytest.mark.xfail(
        strict=True, reason="window extrapolation 7 % short with gfx950's 32 B/clk VMEM path (known miss)")),
    ("gfx950", "1024x1024x4096", "ukernel", ()),  # IREE's ROCm ukernel (its built-in ping-pong)
    # two dispatches: partial products over K/S (a loop of 4 K steps of 64 a pass: 64 passes), then their sum
    ("gfx950", "16x1024x32768", "split-k", ("--split-k", "2")),
])
def test_every_routes_window_agrees_with_its_whole_loop(compiled_folder, monkeypatch, target, shape, pipeline, flags):
    folder = compiled_folder(target, shape, pipeline, *flags)
    windowed = model.predict(folder)
    monkeypatch.setattr(model, "WINDOW", 10**9)
    whole = model.predict(folder)
    assert windowed.instructions < 0.8 * whole.instructions  # the window did cut the loop
    assert windowed.cu_cycles == pytest.approx(whole.cu_cycles, rel=0.05)
    for w, h in zip(windowed.dispatches, whole.dispatches):
        assert w["cu_cycles"] == pytest.approx(h["cu_cycles"], rel=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("pipeline", ["default", "tuned"])
def test_more_k_never_predicts_less_time_for_compiled_kernels(compiled_folder, pipeline):
    times = [model.predict(compiled_folder("gfx942", f"256x256x{k}", pipeline)).microseconds
             for k in (256, 512, 1024, 2048, 4096)]
    assert times == sorted(times), times


@pytest.mark.slow
def test_doubling_m_and_n_of_a_compiled_kernel_about_quadruples_its_time(compiled_folder):
    """gfx942's 256x256 tuned tile: 8192² is 1024 workgroups (4 on the busiest of 304 CUs), 16384² 4096 (14):
    between 3 and 5 times the time, compute-bound both."""
    small = model.predict(compiled_folder("gfx942", "8192x8192x1024", "tuned"))
    big = model.predict(compiled_folder("gfx942", "16384x16384x1024", "tuned"))
    assert small.compute_us > small.hbm_us and big.compute_us > big.hbm_us
    assert big.workgroups == 4 * small.workgroups
    assert 3.0 <= big.microseconds / small.microseconds <= 5.0
