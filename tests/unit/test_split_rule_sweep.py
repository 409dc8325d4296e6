"""The split rule (`pipelines.named.split_plan`) over every M from 1 to 256 at N = K = 8192, on sm_80, sm_89, gfx942
and gfx950, NN and NT, f16 and bf16 (4096 plans, no compile): each plan is checked against the constraints the
kernels impose, stated here on their own rather than read back from the rule:

- the only problem left data-parallel is M < 16 with B stored N×K (IREE's own matrix-vector kernel, measured at
  the copy bandwidth); every other M splits, with no gap between the streaming kernel and the MMA tiles;
- the streaming kernel serves only M < 16: it keeps 8×M accumulators per thread (at most 128), N is whole
  workgroups of its columns, and S divides K into whole steps of its K rows;
- an MMA tile is no taller than M (IREE 3.13 refuses a tile larger than the problem) and the padding it takes is
  less than the rows it computes (less than half of the rows are zeros), its intrinsic multiplies the problem's
  input type, S divides K into whole K steps of the tile, and the S × tiles workgroups cover every compute unit.

The compute units are the device's where the command knows it: the same rule for an H100's 132 SMs (injected)
and sm_80's 108 gives different S and different decisions at the boundary, and says whose count it used. The slow
tests compile the new M (which fell in the gap before) with `--pipeline split-k`, check every requested choice in
the output, and emulate the AMD ones against float64.
"""

from __future__ import annotations

import json
import math

import pytest

from pipelines import cli
from pipelines.cli import main
from pipelines import device_units as asking
from pipelines.device_units import device_units
from pipelines.emulator import emulate_gemm
from pipelines.named import plan_for, plan_job, split_plan
from pipelines.routes import route_for
from pipelines.targets import ComputeUnits, get_target
from transforms.problem import Gemm
from transforms.split_k import Streaming

TARGETS = ("sm_80", "sm_89", "gfx942", "gfx950")
H100 = ComputeUnits(132, "device", "cuda: NVIDIA H100 80GB HBM3")  # 132 SMs: NVIDIA's H100 SXM5 data sheet


def violations(gemm: Gemm, target) -> list[str]:
    """What is wrong with the rule's plan for `gemm`, by the kernels' constraints (empty: nothing)."""
    split, why = split_plan(gemm, target)
    m, n, k = gemm.m, gemm.n, gemm.k
    if split is None:
        if m < 16 and gemm.layout == "nt" and "matrix-vector" in why:
            return []
        return [f"left data-parallel: {why}"]
    s, kernel = split.splits, split.partial
    problems = []
    if s < 2 or k % s:
        problems.append(f"S = {s} does not divide K = {k} into slices")
    if isinstance(kernel, Streaming):
        if m >= 16:
            problems.append("the streaming kernel serves M < 16 only")
        if 8 * m > 128 or n % kernel.workgroup_n or (k // s) % kernel.k_step:
            problems.append(f"streaming kernel {kernel} does not fit M = {m}, N = {n}, K/S = {k // s}")
        return problems
    tm, tn = kernel.tile.workgroup
    padded = math.ceil(m / tm) * tm
    if tm > m:
        problems.append(f"tile M {tm} taller than M = {m}")
    if padded - m >= m:
        problems.append(f"{padded - m} padded rows for {m} rows")
    if (k // s) % kernel.tile.k:
        problems.append(f"K/S = {k // s} is not whole K steps of {kernel.tile.k}")
    if target.mma[kernel.tile.mma].operand != gemm.dtype:
        problems.append(f"{kernel.tile.mma} does not multiply {gemm.dtype}")
    workgroups = s * math.ceil(m / tm) * math.ceil(n / tn)
    if workgroups < target.compute_units:
        problems.append(f"{workgroups} workgroups for {target.compute_units} compute units")
    return problems


@pytest.mark.parametrize("target_name", TARGETS)
def test_every_m_from_1_to_256_is_planned_within_the_kernels_constraints(target_name):
    target = get_target(target_name)
    found = {}
    for layout in ("nn", "nt"):
        for dtype in ("f16", "bf16"):
            for m in range(1, 257):
                problems = violations(Gemm(m, 8192, 8192, dtype, layout), target)
                if problems:
                    found[f"{m}x8192x8192 {layout} {dtype}"] = problems
    assert not found, dict(list(found.items())[:8])


@pytest.mark.parametrize("target_name", TARGETS)
def test_no_gap_between_the_streaming_kernel_and_the_mma_tiles(target_name):
    target = get_target(target_name)
    below, at, above = (split_plan(Gemm(m, 8192, 8192), target)[0] for m in (15, 16, 17))
    assert isinstance(below.partial, Streaming)
    assert at.partial.tile.workgroup[0] == 16 and above.partial.tile.workgroup[0] == 16


def test_the_device_count_is_used_where_known_and_named_either_way():
    """sm_80 PTX on an H100: 32 tiles of 16x256 aim at 4 workgroups per compute unit, 4·108/32 = 13.5 -> S = 16
    with the table's 108 SMs, 4·132/32 = 16.5 -> S = 32 with the device's 132."""
    sm80, problem = get_target("sm_80"), Gemm(16, 8192, 8192)
    table, table_why = split_plan(problem, sm80)
    device, device_why = split_plan(problem, sm80, H100)
    assert (table.splits, device.splits) == (16, 32)
    assert "108 compute units (sm_80's, from the target table)" in table_why
    assert "132 compute units (the device's, cuda: NVIDIA H100 80GB HBM3)" in device_why


def test_the_data_parallel_boundary_moves_with_the_device_count():
    """2 × 120 = 240 tiles of 128x128: at least 2 per SM of 108 (216), fewer than 2 per SM of 132 (264)."""
    sm80, problem = get_target("sm_80"), Gemm(256, 15360, 8192)
    table, table_why = split_plan(problem, sm80)
    device, _ = split_plan(problem, sm80, H100)
    assert table is None and "240 tiles of 128x128 give each of the 108 compute units" in table_why
    assert device is not None


@pytest.mark.parametrize("m", [16, 33, 100, 200])
def test_more_compute_units_never_plan_fewer_workgroups(m):
    """A metamorphic property: filling more compute units never takes fewer slices."""
    sm80, problem = get_target("sm_80"), Gemm(m, 8192, 8192)
    table, _ = split_plan(problem, sm80)
    device, _ = split_plan(problem, sm80, H100)
    assert device.partial == table.partial and device.splits >= table.splits


def test_a_bench_job_reports_whose_compute_units_the_rule_filled():
    """What `bench --device cuda` compiles: the job carries the device's count, its reason names it, and the
    report.json entry of the split route gives it."""
    sm80, problem = get_target("sm_80"), Gemm(16, 8192, 8192)
    plan = plan_for("split-k", problem, sm80, H100)
    job = plan_job(sm80, "split-k", problem, plan, H100)
    assert job.plan.splits == 32 and "the device's" in job.split_reason
    extra = route_for(job).report_extra(job)["split_k"]
    assert extra["compute_units"] == {"count": 132, "source": "device", "name": "cuda: NVIDIA H100 80GB HBM3"}
    table_job = plan_job(sm80, "split-k", problem, plan_for("split-k", problem, sm80))
    assert route_for(table_job).report_extra(table_job)["split_k"]["compute_units"]["source"] == "target"


def test_device_units_asks_the_driver_and_falls_back_to_the_target(monkeypatch):
    answers = {0: (132, "NVIDIA H100 80GB HBM3"), 1: (108, "NVIDIA A100-SXM4-80GB")}
    monkeypatch.setattr(asking, "QUERY", answers.get)
    sm80, gfx942 = get_target("sm_80"), get_target("gfx942")
    assert device_units(["cuda"], sm80) == H100
    assert device_units(["cuda://1"], sm80) == ComputeUnits(108, "device", "cuda://1: NVIDIA A100-SXM4-80GB")
    assert device_units(["cuda", "cuda://1"], sm80).count == 108  # a plan runs on each: the smaller fills both
    for devices, target in (([], sm80), (["cuda://7"], sm80), (["hip"], gfx942), (["model"], gfx942)):
        assert device_units(devices, target) == target.units() and target.units().source == "target"


@pytest.mark.slow
def test_bench_with_a_cuda_device_plans_for_that_device(tmp_path, monkeypatch):
    """`bench --device cuda` asks the device (injected: an H100's 132 SMs) before planning; the plan and the split
    case's report say whose count the rule filled. The device is neither opened nor run here."""
    monkeypatch.setattr(asking, "QUERY", lambda ordinal: (132, "NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(cli, "device_or_error", lambda device: None)
    monkeypatch.setattr(cli, "_run_and_report", lambda *args: 0)  # no GPU here: nothing is run
    out = tmp_path / "plan"
    assert main(["bench", "--target", "sm_80", "--shape", "16x8192x8192", "--pipelines", "split-k", "--device",
                 "cuda", "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["compute_units"] == H100.to_json()
    case = plan["cases"][0]
    assert case["schedule_fields"]["splits"] == 32
    report = json.loads((out / case["vmfb"]).with_name("report.json").read_text())
    assert report["split_k"]["compute_units"] == H100.to_json() and "the device's" in report["split_k"]["why"]


@pytest.mark.slow
@pytest.mark.parametrize("target, shape", [
    ("sm_80", "17x8192x8192"), ("sm_80", "32x8192x8192"), ("sm_80", "100x8192x8192"), ("sm_80", "255x8192x8192"),
    ("gfx942", "17x2048x2048"), ("gfx942", "48x2048x1024"), ("gfx942", "100x1024x2048"),
    ("gfx942", "255x1024x1024")])
def test_the_new_m_compile_verified_and_the_amd_ones_match_float64(tmp_path, target, shape):
    out = tmp_path / "out"
    assert main(["compile", "--target", target, "--shape", shape, "--pipeline", "split-k", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["verified"] and report["split_k"]["partial_kernel"] == "tile"
    assert report["split_k"]["compute_units"]["source"] == "target"
    if get_target(target).emulated:
        result = emulate_gemm(out)
        assert result.passed, result.summary()


def test_tune_route_split_orders_its_candidates_for_the_device_that_runs_them(tmp_path, monkeypatch):
    """`tune --route split --device cuda` measures first the plan the rule picks for the device's compute units
    (here an H100's 132 SMs, where sm_80's table says 108), as `bench` plans for them."""
    from pipelines import tune

    sm80, gemm = get_target("sm_80"), Gemm(64, 8192, 8192, "bf16", "nn")
    planned = {}
    monkeypatch.setattr(tune, "build_plan", lambda target, cases, folder, *a, **kw: planned.setdefault(
        kw["units"], [c[2] for c in cases if c[1] != "default"]))
    for units in (None, H100):
        tune.plan_search(gemm, sm80, tmp_path / "t", limit=1, search=tune.SEARCHES["split"], units=units)
    assert planned[None] == [split_plan(gemm, sm80)[0]] and planned[H100] == [split_plan(gemm, sm80, H100)[0]]
    assert planned[None] != planned[H100]  # the two counts give different plans at this shape

    seen = []
    monkeypatch.setattr(cli, "device_units", lambda devices, target: H100)
    monkeypatch.setattr(cli, "_devices", lambda args, target: ["cuda"])
    monkeypatch.setattr(cli, "plan_search", lambda *a, **kw: seen.append(a[-1]) or (_ for _ in ()).throw(
        KeyboardInterrupt))
    monkeypatch.setattr(cli, "environment", lambda device: {"device_name": "cuda"})
    assert main(["tune", "--target", "sm_80", "--shape", "64x8192x8192", "--route", "split", "--device", "cuda",
                 "--cache", str(tmp_path / "c.json"), "-o", str(tmp_path / "o")]) == 130
    assert seen == [H100]
