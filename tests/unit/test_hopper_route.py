"""The Hopper kernels as a route of `pipelines` (issue 32): `--target sm_90a` compiles them through the `hopper`
pipeline, `--schedule hopper-*` and `auto`; the kernel builds its own tensor maps, so a case is `C = gemm(A, B)` as
on every route, and the runner times the vendor library as long as the kernels.

Oracles: the PTX itself (counted and read here, not through `check_ptx`), CUDA's tensor-map conventions (dims
innermost first, byte strides of the outer dim, boxes of one 128-byte swizzle row; PTX's element-type and swizzle
encodings), and the problem sizes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipelines import cli, flow, runner
from pipelines.request import job_from_args
from pipelines.named import pipelines_for, plan_for
from pipelines.routes import ROUTES, kernel_route
from pipelines.routes.hopper import fitted
from pipelines.targets import TARGETS, get_target
from pipelines.verify import FallbackError
from transforms import hopper
from transforms.problem import Epilogue, Gemm

SM90 = "sm_90a"


def _ptx(folder: Path) -> str:
    found = [p.read_text() for p in sorted((folder / "dump").glob("*.ptx"))]
    found = [text for text in found if ".entry gemm(" in text]
    assert len(found) == 1
    return found[0]


def _compile(tmp_path: Path, name: str, *argv: str) -> tuple[dict, str]:
    out = tmp_path / name
    assert cli.main(["compile", "--target", SM90, *argv, "-o", str(out)]) == 0
    return json.loads((out / "report.json").read_text()), _ptx(out)


def test_the_hopper_pipeline_compiles_the_shipped_schedule(tmp_path):
    report, ptx = _compile(tmp_path, "a", "--shape", "256x512x128", "--dtype", "bf16", "--layout", "nt",
                           "--pipeline", "hopper")
    assert report["pipeline"] == "hopper" and report["verified"] is True
    assert report["hopper_schedule"] == hopper.DEFAULT.__dict__
    assert report["schedule_summary"][0].startswith("hopper-cooperative-persistent 128x256x64, 4 stages")
    # the PTX: 3 warp groups, clusters of two, m64n256k16 bf16 wgmma only, B's share multicast
    gemm = hopper.ptx_kernel(ptx, "gemm")
    assert re.search(r"\.maxntid 384, 1, 1", gemm) and re.search(r"\.reqnctapercluster 2, 1, 1", gemm)
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\S+?)\s", gemm)) == {"m64n256k16.f32.bf16.bf16"}
    assert ".multicast::cluster" in gemm
    assert report["mma"] == {"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16": report["mma_count"]}
    # the tensor maps the kernel writes: A M x K and B N x K (nt), innermost first, row strides in bytes, boxes of
    # 64 K elements (one 128-byte swizzle row) by the block (B: each of the two workgroups' half); bf16 is PTX's
    # element type 10, the 128-byte swizzle mode 3
    assert maps_in_ptx(gemm) == [
        {"address": 0, "rank": 1, "global_dim": [128, 256], "box_dim": [64, 128], "element_stride": [1, 1],
         "global_stride": [256], "elemtype": 10, "swizzle_mode": 3},
        {"address": 1, "rank": 1, "global_dim": [128, 512], "box_dim": [64, 128], "element_stride": [1, 1],
         "global_stride": [256], "elemtype": 10, "swizzle_mode": 3}]


def test_a_named_schedule_nn_f16(tmp_path):
    report, ptx = _compile(tmp_path, "b", "--shape", "256x256x192", "--dtype", "f16", "--layout", "nn",
                           "--schedule", "hopper-pingpong:128x128x6x8")
    assert report["pipeline"] == "hopper-pingpong:128x128x6x8" and report["verified"] is True
    assert report["hopper_schedule"] == dict(hopper.DEFAULT.__dict__, kind="pingpong", block_n=128, stages=6,
                                             group_m=8, cluster_m=1)  # the schedule compiled, not the shipped one
    gemm = hopper.ptx_kernel(ptx, "gemm")
    # 6 stages: a full and an empty barrier each, and ping-pong's two order barriers
    assert len(re.findall(r"mbarrier\.init\.shared\.b64", gemm)) == 2 * 6 + 2
    assert ".reqnctapercluster" not in gemm
    # nn: B K x N read as stored, transposed by wgmma (its last immediate 1)
    assert set(re.findall(r"wgmma\.mma_async[^;]*,\s*(\d)\s*;", gemm)) == {"1"}
    # A 256 x 192, B 192 x 256 (K rows of N) in boxes of 64 columns by block_k rows; f16 is element type 6
    maps = maps_in_ptx(gemm)
    assert [(m["address"], m["global_dim"], m["global_stride"], m["box_dim"], m["elemtype"]) for m in maps] == [
        (0, [192, 256], [384], [64, 128], 6), (1, [256, 192], [512], [64, 64], 6)]


def maps_in_ptx(gemm: str) -> list[dict]:
    """The tensor-map fields the kernel writes, map by map in the order written: each `tensormap.replace` read
    with its register's `mov` immediate; `address` the kernel parameter (binding) the operand's address comes from."""
    movs = dict(re.findall(r"mov\.b(?:32|64)\s+(%r\w+), (\d+);", gemm))
    params = dict(re.findall(r"ld\.param::entry\.b64\s+(%rd\d+), \[gemm_param_(\d+)\];", gemm))
    maps: dict[str, dict] = {}
    for field, space_map, ordinal, value in re.findall(
            r"tensormap\.replace\.tile\.(\w+)\.global\.b1024\.b\d+ \[(%rd\d+)\], (?:(\d+), )?(%?\w+);", gemm):
        entry = maps.setdefault(space_map, {})
        if field == "global_address":
            entry["address"] = int(params[value])
        elif field in ("rank", "elemtype", "swizzle_mode"):
            entry[field] = int(movs.get(value, value))
        else:
            entry.setdefault(field, []).append((int(ordinal), int(movs[value])))
    for entry in maps.values():
        for field in ("global_dim", "box_dim", "element_stride", "global_stride"):
            entry[field] = [v for _, v in sorted(entry.get(field, []))]
    return list(maps.values())


@pytest.mark.parametrize("argv, sentence", [
    (["--target", "sm_80", "--pipeline", "hopper"], "pipeline 'hopper' does not run on sm_80"),
    (["--target", "gfx942", "--schedule", "hopper-cooperative"], "gfx942 has no route for the Hopper kernels"),
    (["--target", SM90, "--schedule", "hopper-pingpong:1x2"], "is not hopper-pingpong:BLOCK_M"),
    (["--target", SM90, "--schedule", "hopper-cooperative:128x256x17x8"], "stages must be 2 to 16"),
    (["--target", SM90, "--pipeline", "hopper", "--layout", "tn"], "layout nt or nn"),
    (["--target", SM90, "--pipeline", "hopper", "--epilogue", "bias-relu"], "epilogue bias-relu is not built"),
    (["--target", SM90, "--pipeline", "hopper", "--dtype", "f8e4m3fn"], "sm_90a"),
])
def test_what_the_hopper_route_refuses(argv, sentence, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["compile", "--shape", "256x256x128", *argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and sentence in err and "Traceback" not in err
    assert not out.exists()


def test_only_a_target_with_a_kernel_route_has_the_hopper_pipeline():
    having = [name for name, target in TARGETS.items() if "hopper" in pipelines_for(target)]
    assert having == [SM90]
    assert kernel_route(get_target(SM90)) is ROUTES[get_target(SM90).kernel_route]


@pytest.mark.parametrize("m, n, layout, takes", [
    (128, 256, "nt", True), (127, 256, "nt", False), (128, 255, "nt", False), (8192, 8192, "nn", True),
    (4096, 4096, "tn", False),
])
def test_auto_takes_the_hopper_kernel_where_it_has_a_whole_tile(m, n, layout, takes):
    plan = plan_for("auto", Gemm(m, n, 4096, "bf16", layout), get_target(SM90))
    assert isinstance(plan, hopper.HopperSchedule) is takes
    if takes and m == 8192:
        assert plan == hopper.DEFAULT  # tiles enough for every SM: the shipped schedule as it is
    if takes and m == 128:  # one block row of four 128x64 block columns, K in 2 slices summed in the cluster
        assert (plan.block_m, plan.block_n, plan.cluster_m, plan.consumers, plan.split_k) == (128, 64, 1, 2, 2)
        assert plan.sums_in_cluster and plan.cluster_size == 2


@pytest.mark.parametrize("k, takes", [(4096, True), (4100, False), (4104, True)])
def test_auto_takes_the_hopper_kernel_only_where_tma_takes_k(k, takes):
    """K a multiple of 8 (16-byte rows for TMA): otherwise `auto` keeps its own rule, without a refusal."""
    plan = plan_for("auto", Gemm(4096, 4096, k, "bf16", "nt"), get_target(SM90))
    assert isinstance(plan, hopper.HopperSchedule) is takes


def test_a_bench_suite_records_what_the_hopper_pipeline_refuses(tmp_path):
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"problems": [{"shape": "256x256x100", "layout": "nt"},
                                              {"shape": "256x256x128", "layout": "tn"}]}))
    out = tmp_path / "plan"
    assert cli.main(["bench", "--target", SM90, "--suite", str(suite), "--pipelines", "hopper", "--compile-only",
                     "-o", str(out)]) == 0
    cases = json.loads((out / "plan.json").read_text())["cases"]
    assert [c["status"] for c in cases] == ["refused", "refused"]
    assert "K must be a multiple of 8" in cases[0]["error"] and "layout nt or nn" in cases[1]["error"]


def test_auto_leaves_an_epilogue_to_its_own_rule():
    plan = plan_for("auto", Gemm(4096, 4096, 4096, "bf16", "nt", epilogue=Epilogue("bias-relu")), get_target(SM90))
    assert not isinstance(plan, hopper.HopperSchedule)


def test_verify_refuses_ptx_without_a_requested_choice(tmp_path):
    report, _ = _compile(tmp_path, "c", "--shape", "256x512x128", "--pipeline", "hopper", "--layout", "nt")
    dump = tmp_path / "c" / "dump"
    ptx_file = next(p for p in dump.glob("*.ptx") if ".entry gemm(" in p.read_text())
    ptx_file.write_text(ptx_file.read_text().replace(".multicast::cluster", ""))
    job = job_from_args(cli.build_parser().parse_args(["compile", "--target", SM90, "--shape", "256x512x128",
                                                  "--pipeline", "hopper", "--layout", "nt", "-o", "x"]))
    prepared = flow.prepare(job)
    stats = [type("S", (), {"isa_file": ptx_file.name})()]
    with pytest.raises(FallbackError, match="cluster"):
        ROUTES[job.route].verify(prepared, dump, stats)


def test_a_bench_plan_case_is_gemm_of_a_and_b(tmp_path):
    out = tmp_path / "plan"
    assert cli.main(["bench", "--target", SM90, "--shape", "256x512x128", "--layout", "nt", "--pipelines",
                     "default,hopper", "--compile-only", "-o", str(out)]) == 0
    cases = {c["pipeline"]: c for c in json.loads((out / "plan.json").read_text())["cases"]}
    assert cases["hopper"]["status"] == "ok" and cases["default"]["status"] == "ok"
    assert cases["hopper"]["function"] == "gemm" and cases["hopper"]["input_shapes"] == [[256, 128], [512, 128]]
    assert set(cases["hopper"]) == set(cases["default"])  # nothing more for the GPU machine to make
    assert "cooperative-persistent" in cases["hopper"]["schedule"]


def test_run_case_passes_a_and_b_and_times_the_vendor_as_long(monkeypatch, tmp_path):
    gemm = Gemm(16, 8, 64, "bf16", "nt")
    case = {"id": "h", "label": "h", "problem": {"m": 16, "n": 8, "k": 64, "dtype": "bf16", "layout": "nt",
                                                 "batch": None, "epilogue": {"kind": "none"}},
            "pipeline": "hopper", "schedule": "s", "target": SM90, "flops": gemm.flops, "repeat": 1,
            "function": "gemm", "input_shapes": [[16, 64], [8, 64]], "input_dtypes": ["bf16", "bf16"],
            "vmfb": "k.vmfb", "status": "ok", "vendor": True}
    seen = {}

    def run_once(case, vmfb, device, arrays):
        seen["run"] = arrays
        return runner.reference(case, arrays[:2])

    def time_iree(case, vmfb, device, inputs, repetitions, warmup_s=None, min_time_s=None):
        seen["iree"] = (inputs.files, warmup_s, min_time_s)
        return [1.0, 1.0, 1.0]

    def time_vendor(case, arrays, repetitions, warmup_s=None, min_time_s=None):
        seen["vendor"] = (len(arrays), warmup_s, min_time_s)
        return [1.0, 1.0, 1.0]

    monkeypatch.setattr(runner, "run_once", run_once)
    monkeypatch.setattr(runner, "time_iree", time_iree)
    monkeypatch.setattr(runner, "time_vendor", time_vendor)
    row = runner.run_case(case, tmp_path, "cuda", 3, {"device_name": "t", "device": "cuda"},
                          runner.ProblemData(tmp_path))
    assert row["status"] == "ok" and row["correct"] is True
    assert [a.shape for a in seen["run"]] == [(16, 64), (8, 64)]
    files, warmup, min_time = seen["iree"]
    assert len(files) == 2
    assert seen["vendor"] == (2, warmup, min_time) and warmup and min_time  # as long as the kernels, A and B only


def _model_file(tmp_path: Path) -> Path:
    """A one-contraction linalg program, as a user's --input (test_bad_input's template)."""
    from test_bad_input import MATMUL

    path = tmp_path / "model.mlir"
    path.write_text(MATMUL.format(a="256x128xf16", b="128x256xf16", c="256x256xf32"))
    return path


def test_compile_input_refuses_the_hopper_pipeline_and_names_tune_model(tmp_path, capsys):
    """A model through `compile --input --pipeline hopper` would get IREE's default for every contraction under the
    hopper label; it is refused (tune-model takes it), nothing written."""
    model, out = _model_file(tmp_path), tmp_path / "out"
    assert cli.main(["compile", "--input", str(model), "--target", SM90, "--pipeline", "hopper", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "pipeline 'hopper' compiles the target's own kernel for one GEMM" in err and "tune-model" in err
    assert err.count("\n") == 1 and not out.exists()


def test_spec_of_the_hopper_pipeline_is_one_sentence(tmp_path, capsys):
    assert cli.main(["spec", "--target", SM90, "--shape", "256x256x128", "--pipeline", "hopper"]) == 2
    err = capsys.readouterr().err
    assert "whole program (gemm.mlir) with no transform script" in err and err.rstrip().endswith(".")


def test_the_search_starts_at_the_shipped_schedule_and_moves_away():
    """tune --route hopper: the shipped schedule first, then by how many of its choices a candidate changes (so
    --limit keeps its neighbours); 128x128 tiles are tried at the most stages 227 KiB holds (7) and one fewer."""
    found = ROUTES[get_target(SM90).kernel_route].candidates(Gemm(8192, 8192, 8192, "bf16", "nt"), get_target(SM90))
    shipped = hopper.DEFAULT.__dict__
    distance = [sum(v != shipped[k] for k, v in c.__dict__.items()) for c in found]
    assert found[0] == hopper.DEFAULT and distance == sorted(distance) and len(set(found)) == len(found)
    stages = {c.stages for c in found if (c.block_m, c.block_n, c.kind) == (128, 128, "cooperative")}
    assert stages == {7, 6}
    assert hopper.HopperSchedule(block_m=128, block_n=128, stages=7).shared_bytes() <= hopper.SHARED_BYTES < \
        hopper.HopperSchedule(block_m=128, block_n=128, stages=8).shared_bytes()


def test_skinny_tune_candidates_take_the_deep_cluster_sums_the_rule_ships():
    """For M <= 128, `tune`'s cluster-sum candidates come at the most stages up to 7 and, where more fit, up to 16:
    128x4096x4096's rule (128x64 in 2 slices, 9 stages: 9 x 24 KiB fit 227 KiB, 10 do not) is among them beside its
    7-stage twin, and no candidate of more than 7 stages is anything but a cluster sum at all shared memory holds."""
    gemm = Gemm(128, 4096, 4096, "bf16", "nn")
    found = ROUTES[get_target(SM90).kernel_route].candidates(gemm, get_target(SM90))
    deep = [c for c in found if c.stages > 7]
    sums = {(c.block_m, c.block_n, c.split_k, c.stages) for c in found if c.sums_in_cluster}
    assert found[0] == fitted(gemm) and {(128, 64, 2, 9), (128, 64, 2, 7), (64, 128, 2, 9)} <= sums
    for c in deep:
        stage = (c.block_m + c.block_n) * 64 * 2
        assert c.sums_in_cluster and c.stages * stage + 1024 <= 227 * 1024 < (c.stages + 1) * stage + 1024, c
    assert not [c for c in ROUTES[get_target(SM90).kernel_route].candidates(
        Gemm(8192, 8192, 8192, "bf16", "nt"), get_target(SM90)) if c.stages > 7]  # big problems: as before


@pytest.mark.parametrize("text", ["hopper-cooperative:128xabc", "hopper-pingpong:128x128x6x", "hopper-pingpong:"])
def test_a_schedule_string_that_is_not_numbers_is_one_sentence(text, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compile", "--target", SM90, "--shape", "256x256x128", "--schedule", text, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()


def test_a_call_does_2e13_flops():
    """Every dispatch repeated to about 2e13 FLOPs a call (19 at 8192^3: at 2 the per-call output allocation cost the
    Hopper kernel 15 %, results/h100/hopper-route)."""
    from pipelines.bench import repeat_count

    assert repeat_count(Gemm(8192, 8192, 8192, "bf16", "nt"), get_target(SM90)) == 19
    assert repeat_count(Gemm(4096, 4096, 4096, "bf16", "nt"), get_target(SM90)) == 146


@pytest.mark.parametrize("m, n, k, epilogue, want", [
    # A and B bf16 and an f32 C: (16 + 8192) x 8192 x 2 + 16 x 8192 x 4 = 135,004,160 B -> 1e11 / that = 740.7
    (16, 8192, 8192, "none", 741),
    (16, 8192, 8192, "truncf", 741),  # counted with an f32 C whatever C's type
    # (16 + 4096) x 14336 x 2 + 16 x 4096 x 4 = 118,161,408 B -> 846.3
    (16, 4096, 14336, "none", 847),
    # 2946 repeats by its bytes (33.9 MB), 37,253 by its FLOPs -> the cap
    (16, 4096, 4096, "none", 2000),
    (1, 1, 8, "none", 2000),
    # 2725 by bytes (36.7 MB), 4657 by FLOPs -> the cap
    (128, 4096, 4096, "none", 2000),
    # 2e13 / 3.44e10 FLOPs = 582.1 by FLOPs, 1703 by bytes (58.7 MB) -> FLOPs decide
    (1024, 4096, 4096, "none", 583),
    # C read and written: (16 + 8192) x 8192 x 2 + 2 x 16 x 8192 x 4 = 135,528,448 B -> 737.9
    (16, 8192, 8192, "alpha-beta", 738),
])
def test_a_call_of_a_small_problem_moves_1e11_bytes(m, n, k, epilogue, want):
    """Problems whose time is their bytes repeat to about 1e11 B a call (A, B, f32 C), at most 2000: at 200 a call
    the decode row's per-call host cost was 1.5-2 µs of its 38 (results/h200/stream/ncu); the FLOP count still
    decides where it gives fewer repeats."""
    from pipelines.bench import repeat_count

    epi = Epilogue(kind=epilogue)
    assert repeat_count(Gemm(m, n, k, "bf16", "nn", None, epi), get_target(SM90)) == want


def test_repeats_count_one_byte_inputs_a_batch_and_nothing_off_the_gpu():
    from pipelines.bench import repeat_count

    # fp8: (16 + 8192) x 8192 x 1 + 16 x 8192 x 4 = 67,764,224 B -> 1475.7
    assert repeat_count(Gemm(16, 8192, 8192, "f8E4M3FN", "nt"), get_target(SM90)) == 1476
    # a batch of 8: 8 x (16 + 4096) x 4096 x 2 + 8 x 16 x 4096 x 4 = 271,581,184 B -> 368.2 (4657 by FLOPs)
    assert repeat_count(Gemm(16, 4096, 4096, "bf16", "nt", batch=8), get_target(SM90)) == 369
    assert repeat_count(Gemm(16, 8192, 8192, "bf16", "nt"), get_target("cpu")) == 1
    # an infinite amount is no bound: FLOPs alone (2e12 / 2.147e9 = 931.3), bytes alone, neither (the cap)
    inf = float("inf")
    assert repeat_count(Gemm(16, 8192, 8192, "bf16", "nt"), get_target(SM90), 2e12, inf) == 932
    assert repeat_count(Gemm(16, 8192, 8192, "bf16", "nt"), get_target(SM90), inf, 1e11) == 741
    assert repeat_count(Gemm(16, 8192, 8192, "bf16", "nt"), get_target(SM90), inf, inf) == 2000


def test_schedule_flags_on_auto_are_not_overridden_by_the_hopper_kernel(tmp_path):
    """auto with schedule flags is `auto+flags` on IREE's route, even where auto alone takes the Hopper kernel."""
    out = tmp_path / "f"
    assert cli.main(["compile", "--target", SM90, "--shape", "4096x4096x4096", "--layout", "nt", "--pipeline",
                     "auto", "--tile", "128x128x32", "--warps", "2x2", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["pipeline"] == "auto+flags" and "route" not in report
    assert report["schedules"][0]["tile"]["workgroup"] == [128, 128]


def test_a_resumed_bench_plan_reuses_the_kernel(tmp_path):
    """A plan compiled again into its folder reuses the compiled kernels; their cases read back the same."""
    out = tmp_path / "plan"
    argv = ["bench", "--target", SM90, "--shape", "256x512x128", "--layout", "nt", "--pipelines", "hopper",
            "--compile-only", "-o", str(out)]
    assert cli.main(argv) == 0
    first = json.loads((out / "plan.json").read_text())["cases"]
    vmfb = out / first[0]["vmfb"]
    stamp = vmfb.stat().st_mtime_ns
    assert cli.main(argv) == 0
    again = json.loads((out / "plan.json").read_text())["cases"]
    assert vmfb.stat().st_mtime_ns == stamp  # reused, not compiled again
    assert again == first


def test_a_schedule_name_alone_is_its_kinds_shipped_sizes():
    """`--schedule hopper-pingpong` is 128x128 (each consumer owns a whole tile: 128x256 would not fit its
    registers' share), the cooperative names 128x256; 4 stages, groups of 16, clusters of 2 as shipped."""
    sizes = {name: (s.block_m, s.block_n, s.stages, s.group_m, s.cluster_m)
             for name in hopper.NAMES for s in [hopper.parse_schedule(name)]}
    assert sizes == {"hopper-cooperative": (128, 256, 4, 16, 2), "hopper-cooperative-persistent": (128, 256, 4, 16, 2),
                     "hopper-pingpong": (128, 128, 4, 16, 2)}


def test_the_description_names_a_cluster_only_where_there_is_one():
    with_cluster, without = hopper.parse_schedule("hopper-cooperative:128x256x4x8x2"), \
        hopper.parse_schedule("hopper-cooperative:128x256x4x8")
    assert "clusters of 2 sharing B" in with_cluster.describe() and "cluster" not in without.describe()


def test_a_cached_hopper_or_split_search_is_read_back_by_its_route(tmp_path):
    """from_cache reads an entry by the route name the cache records (the summary's, not --route's option name):
    a cached Hopper search gives back its Hopper program, a cached split-K search its split program."""
    from pipelines.tune import SEARCHES, from_cache

    gemm, target = Gemm(512, 512, 512, "bf16", "nt"), get_target(SM90)
    schedule = hopper.parse_schedule("hopper-pingpong:128x128x6x8")
    files = from_cache(gemm, target, {"route": SEARCHES["hopper"].name, "schedule": schedule.__dict__},
                       tmp_path / "cache.json")
    assert "hal.executable.source" in files["gemm.mlir"] and "spec.mlir" not in files
    # split-K: the cache says "split-k" where --route says "split"
    import dataclasses

    from pipelines.named import split_candidates

    skinny, sm80 = Gemm(16, 4096, 4096, "bf16", "nn"), get_target("sm_80")
    split = split_candidates(skinny, sm80)[0]
    assert SEARCHES["split"].name == "split-k" != SEARCHES["split"].option
    files = from_cache(skinny, sm80, {"route": "split-k", "schedule": dataclasses.asdict(split)},
                       tmp_path / "cache.json")
    assert json.loads(files["best.json"])["route"] == "split-k" and "gemm.mlir" in files


# ---- split-K on the Hopper kernels (issue 33: skinny and long-K problems)

def test_a_schedule_string_takes_a_split_k_after_the_cluster():
    schedule = hopper.parse_schedule("hopper-cooperative-persistent:128x256x4x16x2x4")
    assert (schedule.cluster_m, schedule.split_k, schedule.persistent) == (2, 4, True)
    assert "K in 4 slices" in schedule.describe() and "slices" not in hopper.DEFAULT.describe()
    assert hopper.parse_schedule("hopper-cooperative:128x256x4x8x2").split_k == 1
    # a cooperative 64-row tile: one consumer warp group (ping-pong's consumers each own whole tiles: two)
    one = hopper.parse_schedule("hopper-cooperative-persistent:64x256x5x16x2x4")
    assert (one.block_m, one.consumers, one.split_k) == (64, 1, 4)
    assert hopper.parse_schedule("hopper-pingpong:64x256x4x8").consumers == 2
    for text in ("hopper-cooperative:128x256x4x8x2x4x1", "hopper-cooperative:128x256x4x8x2x0",
                 "hopper-cooperative:128x256x4x8x2x65"):
        with pytest.raises(hopper.HopperError):
            hopper.parse_schedule(text)


@pytest.mark.parametrize("shape, split, sentence", [
    ("32x8192x8200", "5", "split_k 5 must divide K's 129 tiles"),  # 129 = 3 x 43
    ("64x1024x1024", "32", "split_k 32 must divide K's 16 tiles"),
])
def test_a_split_that_does_not_divide_ks_tiles_is_one_sentence(shape, split, sentence, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compile", "--target", SM90, "--shape", shape, "--schedule",
                     f"hopper-cooperative-persistent:128x256x4x16x2x{split}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.count("\n") == 1 and not out.exists()


def test_a_split_k_program_sums_the_slices_and_rounds_once(tmp_path):
    """The dispatch returns (split_k · M) × N f32 partial products; the program sums them over the slices and then
    rounds to the input type, and `compile` verifies the kernel (an f32 C of split_k · M rows)."""
    out = tmp_path / "o"
    assert cli.main(["compile", "--target", SM90, "--shape", "32x4096x3072", "--dtype", "bf16", "--layout", "nt",
                     "--epilogue", "truncf", "--schedule", "hopper-cooperative-persistent:128x256x4x16x2x3", "-o",
                     str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["verified"] and report["hopper_schedule"]["split_k"] == 3
    text = (out / "gemm.mlir").read_text()
    assert "-> (tensor<96x4096xf32>, tensor<" in text  # three slices of 32 rows, f32
    assert re.search(r"tensor\.expand_shape %p \[\[0, 1\], \[2\]\] output_shape \[3, 32, 4096\]", text)
    assert re.search(r'iterator_types = \["reduction", "parallel", "parallel"\]\} ins\(%p3 : tensor<3x32x4096xf32>\)',
                     text)
    assert re.search(r"%r = arith\.truncf %x : f32 to bf16", text) and text.count("arith.truncf") == 1
    ptx_file = out / "dump" / report["dispatches"][0]["isa_file"]
    assert "cvt.rn" not in hopper.ptx_kernel(ptx_file.read_text(), "gemm")  # the kernel's C is f32
    assert ".entry gemm_dispatch_0_reduction_131072x3_f32(" in ptx_file.read_text()  # the slices summed: 32·4096 by 3
    # verify refuses the program without the slices' reduction
    ptx_file.write_text(ptx_file.read_text().replace("_reduction_131072x3_f32(", "_elementwise_131072_f32("))
    job = job_from_args(cli.build_parser().parse_args(
        ["compile", "--target", SM90, "--shape", "32x4096x3072", "--dtype", "bf16", "--layout", "nt", "--epilogue",
         "truncf", "--schedule", "hopper-cooperative-persistent:128x256x4x16x2x3", "-o", "x"]))
    prepared = flow.prepare(job)
    stats = [type("S", (), {"isa_file": ptx_file.name})()]
    with pytest.raises(FallbackError, match="no reduction of the 3 K slices"):
        ROUTES[job.route].verify(prepared, out / "dump", stats)


def test_the_search_adds_k_slices_only_where_the_tiles_leave_sms_idle():
    target = get_target(SM90)
    route = ROUTES[target.kernel_route]
    skinny = route.candidates(Gemm(32, 8192, 8192, "bf16", "nt"), target)
    square = route.candidates(Gemm(8192, 8192, 8192, "bf16", "nt"), target)
    assert all(c.split_k == 1 for c in square) and len(square) == 64 and square[0] == hopper.DEFAULT
    sliced = [c for c in skinny if c.split_k > 1 and not c.sums_in_cluster]
    summed = [c for c in skinny if c.sums_in_cluster]
    assert sliced and {c.split_k for c in sliced} <= {2, 4, 8}
    assert all(c.kind == "cooperative" and c.persistent for c in sliced)
    # slices summed in the cluster: one tile per workgroup, within one round of the SMs
    assert summed and {c.split_k for c in summed} <= {2, 4, 8}
    assert all(c.kind == "cooperative" and not c.persistent and c.cluster_m == 1 and c.group_m == 1 and
               hopper.grid_size(Gemm(32, 8192, 8192, "bf16", "nt"), c) <= hopper.SM_COUNT for c in summed)
    assert {(c.block_m, c.block_n) for c in summed} == {(64, 256), (64, 128), (128, 256), (128, 128)}
    assert not any(c.sums_in_cluster for c in square)
    # the `hopper` pipeline's schedule first (64x128 tiles, K in 2 slices summed in the cluster), its other
    # slicings among its nearest neighbours (one choice changed); the shipped schedule's slicings are in the
    # search too
    assert skinny[0] == fitted(Gemm(32, 8192, 8192, "bf16", "nt")) and skinny[0].split_k == 2
    assert skinny[0].sums_in_cluster
    assert replace_split(skinny[0], 2, block_n=256, stages=5) in skinny[:16]  # 64x256 in 2: 64 workgroups
    assert replace_split(skinny[0], 4) not in skinny  # 64 block columns in 4 slices: 256 workgroups, two rounds
    assert replace_split(hopper.DEFAULT, 2) in skinny and replace_split(hopper.DEFAULT, 4) in skinny
    # skinny: 64-row tiles of one consumer warp group too (only there)
    assert any((c.block_m, c.consumers) == (64, 1) for c in skinny)
    assert not any(c.consumers == 1 for c in square)
    assert any(c.consumers == 1 and c.cluster_m == 2 for c in route.candidates(Gemm(128, 8192, 8192, "bf16", "nt"),
                                                                                target))
    assert not any(c.consumers == 1 for c in route.candidates(Gemm(129, 8192, 8192, "bf16", "nt"), target))
    # slices summed in the cluster searched up to M = 128 (both sides of the bound), 64-row tiles among them
    assert any(c.sums_in_cluster and (c.block_m, c.block_n, c.split_k) == (64, 256, 2)
               for c in route.candidates(Gemm(128, 8192, 8192, "bf16", "nt"), target))
    assert not any(c.sums_in_cluster for c in route.candidates(Gemm(129, 8192, 8192, "bf16", "nt"), target))
    for c in sliced:  # within two rounds of the SMs; K's 128 tiles divide
        units = hopper.grid_size(Gemm(32, 8192, 8192, "bf16", "nt"), replace_split(c, 1, persistent=False))
        assert units // c.cluster_m * c.split_k <= 2 * hopper.SM_COUNT // c.cluster_m and 128 % c.split_k == 0


def replace_split(schedule, split_k, **changes):
    from dataclasses import replace
    return replace(schedule, split_k=split_k, **changes)


def test_verify_refuses_a_reduction_dispatch_beside_slices_summed_in_the_cluster(tmp_path):
    """A program whose kernel sums the slices in its cluster compiles to the one dispatch; a reduction entry beside it
    is a fallback `verify` names (blind probe 13)."""
    out = tmp_path / "o"
    args = ["compile", "--target", SM90, "--shape", "32x4096x4096", "--dtype", "bf16", "--layout", "nt",
            "--schedule", "hopper-cooperative:64x128x5x1x1x2c"]
    assert cli.main(args + ["-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["verified"] and report["hopper_schedule"]["split_sum"] == "cluster"
    ptx_file = out / "dump" / report["dispatches"][0]["isa_file"]
    assert "_reduction_" not in ptx_file.read_text()
    ptx_file.write_text(ptx_file.read_text() + "\n.entry gemm_dispatch_0_reduction_131072x2_f32(\n")
    job = job_from_args(cli.build_parser().parse_args(args + ["-o", "x"]))
    prepared = flow.prepare(job)
    stats = [type("S", (), {"isa_file": ptx_file.name})()]
    with pytest.raises(FallbackError, match="summed in the kernel's cluster, yet"):
        ROUTES[job.route].verify(prepared, out / "dump", stats)
