"""The stream kernel for problems of at most 16 rows (`transforms.stream`, issue 33's M <= 16 rows).

Oracles: `stream_sim`, an interpreter of the emitted IR that gives its inline PTX the PTX ISA's meaning (the
mma.sync.m16n8k16 fragment tables, predicated loads that must stay inside their buffers, distributed shared memory
by rank), run on integer-valued inputs against float64 numpy (exact for f32 C; for a 16-bit C the float64 product
rounded once, as the kernel's one cvt.rn of an exact f32 sum); and the PTX iree-compile makes of the program,
counted here from the schedule's arithmetic (loads, MMAs, shared and distributed-shared accesses, stores)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipelines.compiler import iree_compile_path
from transforms import stream
from transforms.problem import Epilogue, Gemm
from transforms.stream import StreamError, StreamSchedule

sys.path.insert(0, str(Path(__file__).parent))
from stream_sim import SIXTEEN, SimError, run_kernel  # noqa: E402

T = Epilogue("truncf")


def simulate(gemm: Gemm, s: StreamSchedule, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(C as the emitted IR computes it, the float64 product in C's type), integer inputs in -4..4."""
    rng = np.random.default_rng(seed)
    ty = SIXTEEN[gemm.dtype]
    a = rng.integers(-4, 5, (gemm.m, gemm.k)).astype(ty)
    b_kn = rng.integers(-4, 5, (gemm.k, gemm.n)).astype(ty)
    b = np.ascontiguousarray(b_kn.T) if gemm.layout == "nt" else b_kn
    out = np.float32 if gemm.out_dtype == "f32" else ty
    c = np.full((gemm.m, gemm.n), np.nan, out)  # every element must be written
    run_kernel(stream.program(gemm, s, "gemm"), {0: a, 1: b, 2: c}, stream.grid_size(gemm, s), s.threads,
               s.shared_bytes(), gemm.dtype)
    want = (a.astype(np.float64) @ b_kn.astype(np.float64)).astype(out)
    return c.astype(np.float64), want.astype(np.float64)


# Both layouts, both C types, M from 1 to 16 (rows g + 8 past M), N past the last workgroup's columns, K past the
# last warp's range (K not a multiple of 32 x unroll x warps), 16- and 8-byte nn loads, loads a step ahead, the
# L2 hint, and K in 2, 4 and 8 slices of a cluster
CASES = [
    (Gemm(5, 24, 96, "bf16", "nt", epilogue=T), StreamSchedule(8, 2, 1)),
    (Gemm(16, 40, 200, "f16", "nt"), StreamSchedule(16, 3, 2, 2, "L2::256B")),
    (Gemm(1, 30, 72, "bf16", "nt"), StreamSchedule(16, 1, 1)),
    (Gemm(9, 136, 264, "bf16", "nn"), StreamSchedule(64, 2, 1)),
    (Gemm(9, 100, 264, "bf16", "nn"), StreamSchedule(32, 2, 2, 1)),
    (Gemm(3, 96, 520, "bf16", "nn"), StreamSchedule(96, 3, 1, 3, "L2::128B")),
    (Gemm(12, 64, 96, "bf16", "nt"), StreamSchedule(32, 2, 1, 4)),
    (Gemm(16, 64, 128, "f16", "nn", epilogue=T), StreamSchedule(128, 2, 2)),
    (Gemm(8, 60, 64, "bf16", "nn"), StreamSchedule(32, 1, 1)),
    (Gemm(7, 72, 200, "bf16", "nn", epilogue=T), StreamSchedule(64, 2, 1, 1, "", 2)),
    (Gemm(16, 40, 520, "f16", "nt"), StreamSchedule(16, 2, 2, 0, "L2::256B", 4)),
    (Gemm(2, 130, 96, "bf16", "nt"), StreamSchedule(8, 1, 1, 1, "", 8)),
    (Gemm(16, 256, 1024, "bf16", "nn"), StreamSchedule(128, 2, 1, 1, "", 4)),
    (Gemm(16, 96, 264, "bf16", "nn"), StreamSchedule(32, 2, 1, 1, transpose=True)),
    (Gemm(5, 120, 520, "f16", "nn", epilogue=T), StreamSchedule(64, 3, 2, 2, "L2::256B", transpose=True)),
    (Gemm(9, 72, 200, "bf16", "nn"), StreamSchedule(32, 1, 1, 0, "", 2, transpose=True)),
    (Gemm(16, 40, 264, "bf16", "nt"), StreamSchedule(16, 2, 2, 1, "L2::256B", bypass=True)),  # B's loads past L1
    (Gemm(6, 96, 264, "f16", "nn", epilogue=T), StreamSchedule(32, 2, 1, 1, bypass=True, transpose=True)),
    (Gemm(4, 100, 200, "bf16", "nn"), StreamSchedule(32, 2, 1, bypass=True)),
]


@pytest.mark.parametrize("gemm,schedule", CASES, ids=lambda x: x.shape_name + x.layout if isinstance(x, Gemm)
                         else stream.schedule_text(x))
def test_the_emitted_kernel_computes_the_product(gemm, schedule):
    got, want = simulate(gemm, schedule)
    assert np.array_equal(got, want)


def test_a_second_seed_and_the_summation_order_of_slices():
    """A 16-bit C rounds the f32 sum once: with values whose partial sums differ by slice, the kernel's sum (in
    warp order within a workgroup, then slice 0 first) is still exact for integers, so any order is right; this
    checks the simulator reads every slice (a rank read twice would double one slice's part)."""
    gemm, s = Gemm(16, 48, 1024, "bf16", "nt"), StreamSchedule(16, 2, 2, 1, "", 4)
    got, want = simulate(gemm, s, seed=7)
    assert np.array_equal(got, want)


def test_loads_stay_inside_the_buffers():
    """The simulator refuses a load outside its buffer: the generator's guards are what keeps every case above
    inside; a kernel whose K guard lets one chunk past K must fail."""
    gemm, s = Gemm(5, 24, 96, "bf16", "nt"), StreamSchedule(8, 2, 1)
    text = stream.program(gemm, s, "gemm").replace("arith.cmpi ult, %", "arith.cmpi ule, %", 1)
    with pytest.raises(SimError, match="access of 16 B"):
        rng = np.random.default_rng(0)
        a = rng.integers(-4, 5, (5, 96)).astype(SIXTEEN["bf16"])
        b = rng.integers(-4, 5, (24, 96)).astype(SIXTEEN["bf16"])
        run_kernel(text, {0: a, 1: b, 2: np.zeros((5, 24), np.float32)}, 3, s.threads, s.shared_bytes(), "bf16")


@pytest.mark.parametrize("barrier,gemm,schedule", [
    ("gpu.barrier", Gemm(16, 64, 256, "bf16", "nt"), StreamSchedule(32, 2, 1)),
    ("nvvm.cluster.wait", Gemm(9, 72, 200, "bf16", "nn"), StreamSchedule(32, 1, 1, 0, "", 2, transpose=True)),
])
def test_a_barrier_taken_away_is_a_race(barrier, gemm, schedule):
    """The warps' partial products are read by other warps (and with slices by other workgroups): without the
    barrier between, the simulator refuses the read (lockstep execution alone would give the right sum)."""
    text = stream.program(gemm, schedule, "gemm")
    assert text.count(barrier) >= 1
    rng = np.random.default_rng(0)
    ty = SIXTEEN[gemm.dtype]
    a, b = (rng.integers(-4, 5, shape).astype(ty) for shape in ((gemm.m, gemm.k), (gemm.n, gemm.k)
                                                                 if gemm.layout == "nt" else (gemm.k, gemm.n)))
    c = np.zeros((gemm.m, gemm.n), np.float32)
    run_kernel(text, {0: a, 1: b, 2: c}, stream.grid_size(gemm, schedule), schedule.threads, schedule.shared_bytes(),
               gemm.dtype)  # as emitted: no race
    broken = text.replace(f"        {barrier}\n", "", 1)
    assert broken != text
    with pytest.raises(SimError, match="barrier between"):
        run_kernel(broken, {0: a, 1: b, 2: c}, stream.grid_size(gemm, schedule), schedule.threads,
                   schedule.shared_bytes(), gemm.dtype)


def test_the_k_split_between_warps_and_slices():
    """K per warp: K over warps x slices, up to whole steps of 32 x unroll; the grid a cluster per column block."""
    assert stream.k_per_warp(Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(32, 8, 1)) == 512
    assert stream.k_per_warp(Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(64, 8, 1, slices=2)) == 256
    assert stream.k_per_warp(Gemm(16, 4096, 200, "bf16", "nn"), StreamSchedule(32, 3, 2)) == 128  # 67 -> 64 x 2
    assert stream.grid_size(Gemm(16, 4100, 4096, "bf16", "nt"), StreamSchedule(32, 8, 1)) == 129
    assert stream.grid_size(Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(64, 8, 1, slices=2)) == 128


def test_physical_columns_are_a_permutation():
    """Each workgroup column is one block's logical column exactly once (nn: thread g's nn_width / 8 neighbouring
    columns are its blocks' column g)."""
    for gemm, s in ((Gemm(16, 256, 64, "bf16", "nt"), StreamSchedule(32)), (Gemm(16, 256, 64, "bf16", "nn"),
                    StreamSchedule(64)), (Gemm(16, 256, 64, "bf16", "nn"), StreamSchedule(96))):
        columns = [stream.physical_column(gemm, s, j, c) for j in range(stream.blocks(gemm, s)) for c in range(8)]
        assert sorted(columns) == list(range(s.columns))
    assert stream.physical_column(Gemm(16, 256, 64, "bf16", "nn"), StreamSchedule(64), 1, 2) == 17
    assert stream.physical_column(Gemm(16, 256, 64, "bf16", "nn"), StreamSchedule(32), 5, 3) == 32 + 12 + 1


@pytest.mark.parametrize("gemm,schedule,message", [
    (Gemm(17, 64, 64, "bf16", "nt"), StreamSchedule(), "at most 16 rows"),
    (Gemm(16, 64, 60, "bf16", "nt"), StreamSchedule(), "multiple of 8"),
    (Gemm(16, 64, 64, "bf16", "nn"), StreamSchedule(48), "columns a multiple of 32"),
    (Gemm(16, 66, 64, "bf16", "nn"), StreamSchedule(32), "N a multiple of 4"),
    (Gemm(16, 68, 64, "bf16", "nn"), StreamSchedule(64), "N a multiple of 8"),
    (Gemm(16, 64, 64, "bf16", "nt", batch=2), StreamSchedule(), "not a batch"),
    (Gemm(16, 64, 64, "f8E4M3FN", "nt"), StreamSchedule(), "not f8E4M3FN"),
    (Gemm(16, 64, 64, "bf16", "nt", epilogue=Epilogue("bias-relu")), StreamSchedule(), "not bias-relu"),
    (Gemm(16, 64, 64, "bf16", "tn"), StreamSchedule(), "not tn"),
])
def test_problems_the_kernel_refuses(gemm, schedule, message):
    with pytest.raises(StreamError, match=message):
        stream.check_problem(gemm, schedule)
    stream.check_problem(gemm.with_(m=16, k=64, n=64, batch=None, dtype="bf16", layout="nt",
                                    epilogue=Epilogue()), StreamSchedule())


@pytest.mark.parametrize("schedule,message", [
    (StreamSchedule(columns=12), "multiple of 8"), (StreamSchedule(columns=520), "multiple of 8"),
    (StreamSchedule(warps=33), "warps must be"), (StreamSchedule(unroll=9), "unroll 1 to 8"),
    (StreamSchedule(hint="L2::64B"), "hint must be"), (StreamSchedule(slices=3), "slices must be"),
    (StreamSchedule(columns=8, slices=16), "slices must be"), (StreamSchedule(512, 32), "shared memory"),
])
def test_schedules_the_kernel_refuses(schedule, message):
    with pytest.raises(StreamError, match=message):
        schedule.check()


def test_schedule_text_round_trip_and_refusals():
    for text in ("stream:32x16x2", "stream:32x16x2,ahead,l2=256", "stream:64x8x1,l2=128", "stream:64x8x1,s2",
                 "stream:128x8x1,ahead,s4", "stream:32x8x1,ahead3,l2=256", "stream:32x8x2,ahead,l2=256,trans,nol1",
                 "stream:32x8x2,nol1"):
        assert stream.schedule_text(stream.parse_schedule(text)) == text
    assert stream.parse_schedule("stream:64x8x1,ahead,s2") == StreamSchedule(64, 8, 1, 1, "", 2)
    assert stream.parse_schedule("stream:32x8x2,nol1") == StreamSchedule(32, 8, 2, bypass=True)
    for bad, message in (("stream:32x16", "COLUMNSxWARPSxUNROLL"), ("stream:32x16x2,fast", "unknown stream"),
                         ("stream:32x16x2x4", "COLUMNSxWARPSxUNROLL"), ("stream:32x16x2x4,ahead", "COLUMNSxWARPS"),
                         ("hopper:32x16x2", "COLUMNSxWARPSxUNROLL"), ("stream:32x16x", "COLUMNSxWARPSxUNROLL"),
                         ("stream:32x16x2,nol", "unknown stream"), ("stream:32x16x2,nol2", "unknown stream"),
                         ("stream:32x16x2,nol1x", "unknown stream"),
                         ("stream:12x16x2", "multiple of 8"), ("stream:32x16x2,s3", "slices must be")):
        with pytest.raises(StreamError, match=message):
            stream.parse_schedule(bad)


def _compiled_ptx(tmp_path: Path, gemm: Gemm, s: StreamSchedule) -> str:
    source = tmp_path / "gemm.mlir"
    source.write_text(stream.program(gemm, s, "gemm"))
    subprocess.run([iree_compile_path(), str(source), "--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80",
                    f"--iree-hal-dump-executable-files-to={tmp_path / 'dump'}", "-o", str(tmp_path / "gemm.vmfb")],
                   check=True)
    ptx, = (p for p in (tmp_path / "dump").glob("*.ptx"))
    if shutil.which("ptxas"):  # the GPU machines load the PTX; ptxas takes it for sm_90a where this machine has it
        done = subprocess.run(["ptxas", "-arch=sm_90a", str(ptx), "-o", str(tmp_path / "k.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return ptx.read_text()


@pytest.mark.parametrize("gemm,schedule", [
    (Gemm(16, 256, 256, "bf16", "nt"), StreamSchedule(32, 8, 1, 2)),  # one step: no loads ahead, no loop left
    (Gemm(16, 256, 512, "bf16", "nn"), StreamSchedule(32, 8, 1, 1, transpose=True)),  # two steps, unrolled whole
    (Gemm(16, 256, 768, "bf16", "nt"), StreamSchedule(8, 8, 1, 2)),  # three steps, ahead 2
    (Gemm(16, 256, 768, "bf16", "nt"), StreamSchedule(8, 8, 1, 4)),  # three steps, ahead 4 taken as 2
    (Gemm(16, 64, 4096, "bf16", "nt"), StreamSchedule(32, 16, 4, 4)),  # two steps of 4 chunks, ahead 4 taken as 1
    (Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(64, 8, 1, 1, "", 2)),
    (Gemm(16, 8192, 8192, "bf16", "nt", epilogue=T), StreamSchedule(32, 8, 2, 1, "L2::256B")),
    (Gemm(5, 1000, 520, "f16", "nn", epilogue=T), StreamSchedule(32, 4, 2)),
    (Gemm(16, 4096, 4096, "bf16", "nt"), StreamSchedule(32, 8, 2, 1, "L2::256B", bypass=True)),
    (Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(32, 8, 2, 1, "L2::256B", transpose=True, bypass=True)),
    (Gemm(16, 1024, 1024, "bf16", "nn"), StreamSchedule(32, 4, 1, bypass=True)),  # 8-byte loads of B
])
def test_the_ptx_shows_every_choice(tmp_path, gemm, schedule):
    ptx = _compiled_ptx(tmp_path, gemm, schedule)
    stream.check_ptx(ptx, gemm, schedule)
    # counted here from the schedule: per 32-wide chunk 2 MMAs per block of 8 columns, A's two rows and B's loads
    blocks, unroll = schedule.columns // 8, schedule.unroll
    mmas = len(re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{gemm.dtype}\.{gemm.dtype}\.f32", ptx))
    steps = mmas // (2 * blocks * unroll)
    assert steps >= 1 and mmas == steps * 2 * blocks * unroll
    form = r"ld\.global\.nc(\.L1::no_allocate)?(\.L2::256B)?\.v(\d)\.u32"
    loads = [(h, v) for _, _, h, v in re.findall(r"@p([ab]) " + form, ptx)]
    a_loads = re.findall(r"@pa " + form, ptx)
    b_past = len(re.findall(r"@pb ld\.global\.nc\.L1::no_allocate", ptx))
    warp_steps = -(-gemm.k // (schedule.warps * schedule.slices * 32 * unroll))  # each warp's loop steps
    ahead = min(schedule.ahead, warp_steps - 1)
    # each step's loads once where no loop is left (LLVM unrolled it whole: the loads past the end are dead), else
    # the loop body's and the `ahead` steps issued before it
    copies = warp_steps if steps == warp_steps else steps + ahead
    if gemm.layout == "nt":
        assert sorted(v for _, v in loads) == ["4"] * (copies * unroll * (2 + blocks))
    elif schedule.transpose:  # 16-byte rows of 8 columns, 4 rows per 32 columns (an 8x8 tile each 2 rows)
        assert sorted(v for _, v in loads) == ["4"] * (copies * unroll * (2 + 4 * schedule.columns // 32))
        assert len(re.findall(r"movmatrix\.sync\.aligned\.m8n8\.trans\.b16", ptx)) == 2 * mmas
    elif schedule.columns % 64 == 0:  # 16-byte rows of 8 columns, 8 rows per 64 columns
        assert sorted(v for _, v in loads) == ["4"] * (copies * unroll * (2 + 8 * schedule.columns // 64))
    else:  # 8-byte rows of 4 columns, 8 rows per 32 columns
        assert sorted(v for _, v in loads) == (["2"] * (copies * unroll * 8 * schedule.columns // 32)
                                               + ["4"] * (copies * unroll * 2))
    assert all(bool(h) == bool(schedule.hint) for h, _ in loads)
    # A's two rows a chunk (16 bytes each, in L1) under A's predicate; with bypass every other load (B's) past L1
    assert len(a_loads) == copies * unroll * 2 and all(not p and w == "4" for p, _, w in a_loads)
    assert b_past == ((len(loads) - len(a_loads)) if schedule.bypass else 0)
    assert len(re.findall(r"ld\.global", ptx)) == len(loads)
    cluster = re.search(r"\.reqnctapercluster (\d+), 1, 1", ptx)
    assert (int(cluster.group(1)) if cluster else 1) == schedule.slices
    stores = re.findall(r"st\.global\.(f32|b16)", ptx)
    per_group = gemm.m * schedule.columns // schedule.slices
    assert stores == ["f32" if gemm.out_dtype == "f32" else "b16"] * -(-per_group // schedule.threads)


def test_check_ptx_refuses_what_the_schedule_did_not_get(tmp_path):
    gemm, s = Gemm(16, 4096, 4096, "bf16", "nn"), StreamSchedule(64, 8, 1, 1, "", 2)
    ptx = _compiled_ptx(tmp_path, gemm, s)
    mutations = {
        "MMAs": ptx.replace("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k16.row."
                            "col.f32.f16.f16.f32", 1),
        "global loads": re.sub(r"ld\.global\.nc\.v4\.u32", "ld.global.v4.u32", ptx, count=1),
        "slices summed in the cluster": ptx.replace("barrier.cluster.wait", "bar.warp.sync -1", 1),
        "workgroup size": ptx.replace(".maxntid 256, 1, 1", ".maxntid 128, 1, 1"),
        "C's type": ptx.replace("st.global.f32", "st.global.b16", 1),
    }
    for name, text in mutations.items():
        assert text != ptx, name
        with pytest.raises(StreamError, match=name.replace("'", ".")):
            stream.check_ptx(text, gemm, s)
    with pytest.raises(StreamError, match="global loads"):  # another hint than the schedule's
        stream.check_ptx(ptx, gemm, StreamSchedule(64, 8, 1, 1, "L2::256B", 2))
    # a global load the kernel does not issue (any width or kind), a barrier too many or too few
    extra_load = ptx.replace("st.global.f32", "ld.global.u32 %r1, [%rd1];\n\tst.global.f32", 1)
    one_barrier_more = re.sub(r"(\n\s*bar\.sync\s+0;)", r"\1\1", ptx, count=1)
    no_barrier = re.sub(r"\n\s*bar\.sync\s+0;", "", ptx)
    for name, text in (("global loads", extra_load), ("partial products in shared memory", one_barrier_more),
                       ("partial products in shared memory", no_barrier)):
        assert text != ptx, name
        with pytest.raises(StreamError, match=name):
            stream.check_ptx(text, gemm, s)
    with pytest.raises(StreamError, match="global loads"):  # B's loads asked past L1, compiled without
        stream.check_ptx(ptx, gemm, StreamSchedule(64, 8, 1, 1, "", 2, bypass=True))
    with pytest.raises(StreamError, match="MMAs|global loads"):  # another column count
        stream.check_ptx(ptx, gemm, StreamSchedule(128, 8, 1, 1, "", 2))


# The kernel route: the `hopper` pipeline's rule, --schedule stream:..., tune's candidates


def test_the_rule_takes_the_measured_class_and_nothing_past_it():
    from pipelines.routes.hopper import STREAM_RULES, kernel_rule, stream_rule
    small, large = STREAM_RULES
    assert stream_rule(Gemm(16, 4096, 4096, "bf16", "nn")) == small.nn and small.nn.transpose
    assert stream_rule(Gemm(16, 4096, 4096, "bf16", "nt")) == small.nt
    assert stream_rule(Gemm(16, 8192, 8192, "bf16", "nn", epilogue=T)) == large.nn
    assert stream_rule(Gemm(1, 8192, 8192, "f16", "nt")) == large.nt
    assert stream_rule(Gemm(16, 8192, 4096, "bf16", "nt")) == large.nt  # B of 64 MiB: past the small entry's 32
    assert stream_rule(Gemm(16, 4096, 4104, "bf16", "nn")) == large.nn  # just past 32 MiB
    # outside: 17 rows, N or K of 14336 (measured slower) or below 4096 (not measured), a batch, tn
    for gemm in (Gemm(17, 4096, 4096), Gemm(16, 14336, 4096), Gemm(16, 4096, 14336), Gemm(16, 8200, 8192),
                 Gemm(16, 4088, 4096), Gemm(16, 4096, 4088), Gemm(16, 4096, 4096, batch=2),
                 Gemm(16, 4096, 4096, "bf16", "tn")):
        assert stream_rule(gemm) is None, gemm
        assert not isinstance(kernel_rule(gemm), StreamSchedule)
    # a problem the rule's schedule does not take (nn with N not a multiple of 8) keeps the Hopper kernels
    assert stream_rule(Gemm(16, 4100, 4096, "bf16", "nn")) is None
    assert stream_rule(Gemm(16, 4100, 4096, "bf16", "nt")) == large.nt  # B past 32 MiB


def _report(folder: Path) -> dict:
    import json
    return json.loads((folder / "report.json").read_text())


def test_the_hopper_pipeline_compiles_the_stream_kernel_at_16_rows(tmp_path):
    from pipelines import cli
    from pipelines.routes.hopper import STREAM_RULES
    out = tmp_path / "s"
    assert cli.main(["compile", "--target", "sm_90a", "--shape", "16x4096x4096", "--dtype", "bf16", "--pipeline",
                     "hopper", "-o", str(out)]) == 0
    report = _report(out)
    assert report["verified"] is True and report["stream_schedule"] == STREAM_RULES[0].nn.__dict__
    assert report["schedule_summary"][0].startswith("stream 32 columns per workgroup, 16 warps")
    ptx, = [p.read_text() for p in (out / "dump").glob("*.ptx") if ".entry gemm(" in p.read_text()]
    assert len(re.findall(r"movmatrix\.sync\.aligned\.m8n8\.trans\.b16", ptx)) > 0
    assert "wgmma" not in ptx and "cp.async.bulk.tensor" not in ptx


def test_a_stream_schedule_by_name_and_a_bad_one(tmp_path, capsys):
    from pipelines import cli
    out = tmp_path / "n"
    assert cli.main(["compile", "--target", "sm_90a", "--shape", "5x1000x520", "--layout", "nt", "--epilogue",
                     "truncf", "--schedule", "stream:16x4x2,ahead2,l2=256", "-o", str(out)]) == 0
    assert _report(out)["stream_schedule"] == StreamSchedule(16, 4, 2, 2, "L2::256B").__dict__
    bad = tmp_path / "bad"
    for schedule in ("stream:12x4x2", "stream:32x4x2,warp"):
        assert cli.main(["compile", "--target", "sm_90a", "--shape", "16x1024x1024", "--schedule", schedule,
                         "-o", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and not bad.exists()
    assert cli.main(["compile", "--target", "sm_90a", "--shape", "17x1024x1024", "--schedule", "stream:32x4x2",
                     "-o", str(bad)]) == 2
    assert "at most 16 rows" in capsys.readouterr().err and not bad.exists()


def test_tune_measures_the_stream_candidates_at_16_rows_only():
    from pipelines.routes.hopper import STREAM_CANDIDATES, kernel_rule
    from pipelines.targets import get_target
    from pipelines.tune import SEARCHES, kernel_candidates
    target = get_target("sm_90a")
    gemm = Gemm(16, 4096, 4096, "bf16", "nn")
    found = kernel_candidates(gemm, target)
    from pipelines.routes.hopper import fitted, store_rule
    from transforms import hopper
    # the stream kernel's rule first, then the Hopper kernels' rule and the shipped schedule (so --limit 3 keeps them)
    assert found[:3] == [kernel_rule(gemm), fitted(gemm), store_rule(gemm, hopper.DEFAULT)]
    streamed = [c for c in found if isinstance(c, StreamSchedule)]
    assert set(streamed) == set(STREAM_CANDIDATES) | {kernel_rule(gemm)}
    assert any(not isinstance(c, StreamSchedule) for c in found)  # the Hopper kernels' too
    assert not any(isinstance(c, StreamSchedule) for c in kernel_candidates(Gemm(32, 4096, 4096), target))
    read = SEARCHES["hopper"].read
    for plan in streamed[:3] + [c for c in found if not isinstance(c, StreamSchedule)][:2]:
        assert read(dict(plan.__dict__)) == plan


@pytest.mark.parametrize("gemm, s", [
    (Gemm(16, 4096, 4096, "bf16", "nt"), StreamSchedule(32, 8, 2, 1, "L2::256B", bypass=True)),
    # 16 columns: A's and B's loads as many (2 a chunk each), so only their predicates tell them apart
    (Gemm(16, 256, 512, "bf16", "nt"), StreamSchedule(16, 2, 1, 1, "L2::256B", bypass=True)),
])
def test_check_ptx_refuses_b_loads_left_in_l1_or_a_loads_moved_past_it(tmp_path, gemm, s):
    """With `bypass` check_ptx wants every B load `.L1::no_allocate` and A's plain: a kernel compiled without it, one
    with a B load put back into L1, one with an A load moved past L1, and one with the two swapped (as many loads of
    each form as before) are each refused."""
    ptx = _compiled_ptx(tmp_path, gemm, s)
    stream.check_ptx(ptx, gemm, s)
    with pytest.raises(StreamError, match="global loads"):
        stream.check_ptx(ptx, gemm, StreamSchedule(s.columns, s.warps, s.unroll, s.ahead, s.hint))
    one_back = ptx.replace("ld.global.nc.L1::no_allocate.L2::256B.v4.u32", "ld.global.nc.L2::256B.v4.u32", 1)
    one_moved = re.sub(r"@pa ld\.global\.nc\.L2::256B\.v4\.u32", "@pa ld.global.nc.L1::no_allocate.L2::256B.v4.u32",
                       ptx, count=1)
    swapped = re.sub(r"@(p[ab]) ld\.global\.nc(\.L1::no_allocate)?\.L2::256B",
                     lambda m: f"@{m.group(1)} ld.global.nc" + ("" if m.group(2) else ".L1::no_allocate") + ".L2::256B",
                     ptx)
    assert len(re.findall(r"L1::no_allocate", swapped)) == len(re.findall(r"L1::no_allocate", ptx)) or \
        s.columns != 16
    # one of A's loads under B's predicate and past L1: as many loads of each width, one fewer of A's
    relabelled = ptx.replace("@pa ld.global.nc.L2::256B.v4.u32", "@pb ld.global.nc.L1::no_allocate.L2::256B.v4.u32", 1)
    for text in (one_back, one_moved, swapped, relabelled):
        assert text != ptx
        with pytest.raises(StreamError, match="global loads"):
            stream.check_ptx(text, gemm, s)


def test_the_route_turns_a_failed_ptx_check_into_one_sentence(tmp_path):
    """verify refuses a stream kernel whose PTX lacks a requested choice as a FallbackError naming the dispatch (the
    user's one sentence), not an uncaught StreamError."""
    from pipelines import cli, flow
    from pipelines.request import job_from_args
    from pipelines.routes import ROUTES
    from pipelines.verify import FallbackError
    out = tmp_path / "s"
    args = ["compile", "--target", "sm_90a", "--shape", "16x1024x1024", "--layout", "nt", "--schedule",
            "stream:32x4x2,l2=256", "-o", str(out)]
    assert cli.main(args) == 0
    ptx_file = next(p for p in (out / "dump").glob("*.ptx") if ".entry gemm(" in p.read_text())
    ptx_file.write_text(ptx_file.read_text().replace("ld.global.nc.L2::256B.v4.u32", "ld.global.nc.v4.u32"))
    job = job_from_args(cli.build_parser().parse_args(args))
    prepared = flow.prepare(job)
    stats = ROUTES[job.route].inspect(out / "dump", job.target)
    with pytest.raises(FallbackError, match="module_stream: .*global loads"):
        ROUTES[job.route].verify(prepared, out / "dump", stats)


def test_inspect_counts_the_stream_kernels_guarded_loads(tmp_path):
    """Every load of the stream kernel sits in an inline-asm block under its predicate (`@pa ld.global.nc...`); inspect
    counts each: here per warp step 2 A rows and 4 B columns' 16-byte loads per chunk, 2 chunks, the loop body and
    one step issued ahead before it, as counted from the PTX text by a pattern of this test's own."""
    from pipelines import cli
    out = tmp_path / "s"
    assert cli.main(["compile", "--target", "sm_90a", "--shape", "16x1024x1024", "--layout", "nt", "--schedule",
                     "stream:32x4x2,ahead", "-o", str(out)]) == 0
    ptx = next(p.read_text() for p in (out / "dump").glob("*.ptx") if ".entry gemm(" in p.read_text())
    guarded = re.findall(r"@p[ab] ld\.global\.nc\.v4\.u32", ptx)
    assert len(guarded) > 0 and len(guarded) % (2 * (2 + 4)) == 0
    stats = _report(out)["dispatches"][0]
    assert stats["global_loads"] == len(guarded)


@pytest.mark.parametrize("k, warps, unroll, ahead, steps, want", [
    (64, 1, 2, 1, 1, 0),  # one step: nothing to load ahead of
    (128, 1, 2, 3, 2, 1),  # two steps: at most one ahead
    (768, 8, 1, 4, 3, 2),  # K 768 in 8 warps -> 96 -> 3 steps of 32
    (4096, 16, 4, 4, 2, 1),  # 256 a warp, 2 steps of 128
    (8192, 8, 2, 1, 16, 1),  # the decode row's shipped schedule: 1024 a warp, 16 steps of 64
    (8192, 8, 2, 4, 16, 4),
])
def test_loads_run_ahead_at_most_the_warps_steps_less_one(k, warps, unroll, ahead, steps, want):
    """`ahead_steps`: a warp's loads run at most its steps less one ahead (K / warps up to whole steps of 32 x unroll,
    counted here by hand); with none to spare, the program issues no load before its loop."""
    gemm, s = Gemm(16, 64, k, "bf16", "nt"), StreamSchedule(32, warps, unroll, ahead)
    assert stream.k_per_warp(gemm, s) // (32 * unroll) == steps
    assert stream.ahead_steps(gemm, s) == want
    before_loop = stream.program(gemm, s).split("scf.for", 1)[0]
    assert before_loop.count("ld.global.nc") == want * unroll * (2 + 4)  # A's 2 rows and 4 blocks of B a chunk


def test_the_rule_takes_b_past_l1_where_b_comes_from_dram_only():
    """The decode-size entry of STREAM_RULES loads B past L1 (measured in run11); the L2-resident 16x4096x4096 entry
    keeps it in L1 (not measured past it)."""
    from pipelines.routes.hopper import stream_rule
    assert stream_rule(Gemm(16, 8192, 8192, "bf16", "nn", epilogue=T)).bypass
    assert stream_rule(Gemm(16, 8192, 8192, "bf16", "nt", epilogue=T)).bypass
    assert not stream_rule(Gemm(16, 4096, 4096, "bf16", "nn")).bypass
    assert not stream_rule(Gemm(16, 4096, 4096, "bf16", "nt")).bypass


def test_the_simulator_refuses_a_load_of_one_operand_under_the_others_predicate():
    """stream_sim ties A's predicate to A's buffer and B's to B's: the emitted kernel with the two predicates swapped
    in its loads is refused before anything is computed."""
    gemm, s = Gemm(5, 24, 96, "bf16", "nt"), StreamSchedule(8, 2, 1)
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (5, 96)).astype(SIXTEEN["bf16"])
    b = rng.integers(-3, 4, (24, 96)).astype(SIXTEEN["bf16"])
    program = stream.program(gemm, s, "gemm").replace("@pa ld", "@TMP ld").replace(".pred pa;", ".pred TMP;") \
        .replace("setp.ne.b32 pa,", "setp.ne.b32 TMP,")
    program = program.replace("@pb ld", "@pa ld").replace(".pred pb;", ".pred pa;").replace("setp.ne.b32 pb,",
                                                                                            "setp.ne.b32 pa,")
    program = program.replace("@TMP ld", "@pb ld").replace(".pred TMP;", ".pred pb;").replace("setp.ne.b32 TMP,",
                                                                                              "setp.ne.b32 pb,")
    with pytest.raises(SimError, match="predicate reads another buffer"):
        run_kernel(program, {0: a, 1: b, 2: np.zeros((5, 24), np.float32)}, 3, s.threads, s.shared_bytes(), "bf16")
