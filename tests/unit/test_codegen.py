"""The transform-dialect codegen route: what it refuses (one sentence, exit 2, nothing written), and that its
verifier names a choice the PTX does not show."""

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from iree.compiler import ir

from pipelines import flow
from pipelines.inspect import inspect_dump
from pipelines.routes import route_for
from pipelines.inspect import copy_block_ids, ptx_kernels
from pipelines.routes.codegen import _linked_retyped
from pipelines.named import get_pipeline
from pipelines.targets import get_target
from pipelines.verify import FallbackError
from transforms import codegen_script
from transforms.problem import Gemm, ProblemError, build_module
from transforms.schedule import Schedule, ScheduleError, Staging, Swizzle, Tile
from pipelines.routes.codegen import CodegenLibraryRoute

CODEGEN = CodegenLibraryRoute.name  # the route's name, as a job names it


def verify_job(job: flow.Job, dump: Path, stats) -> None:
    """The job's route checks a compiled dump (the source and library are not read by the check)."""
    route_for(job).verify(flow.Prepared(job, "", None, (None,)), dump, stats)

REPO = Path(__file__).resolve().parents[2]
SM80 = get_target("sm_80")
GEMM = Gemm(1024, 1024, 1024, "f16", "nn")
BASE = Schedule(Tile((128, 128), 32, (2, 2), codegen_script.CODEGEN_MMA), Staging(3), Swizzle("pad"))


def pipelines(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": str(Path(sys.executable).parent)})


@pytest.mark.parametrize("args, message", [
    (["--target", "sm_89", "--dtype", "f8e4m3fn"], "runs f16 and bf16 (m16n8k16 mma.sync), not f8E4M3FN on sm_89"),
    (["--shape", "2x1024x1024x1024"], "plain GEMMs only (no batch, no epilogue)"),
    (["--shape", "1024x1024x40", "--tile", "128x128x32", "--prefetch", "3"], "K=40 has 2 K steps of 32, fewer than"),
    (["--tile", "128x128x24"], "K tile 24 is not a multiple of mma.sync's K=16"),
    (["--warps", "3x2"], "does not split into 3x2 warp tiles"),
    (["--prefetch", "5"], "pipeline stages 5 is outside 1..4"),
    (["--tile", "256x256x64", "--warps", "2x4", "--prefetch", "4"], "B of shared memory; sm_80 has 166912"),
    (["--lds", "xor"], "'xor' is not available on this route"),
])
def test_refusals_are_one_sentence(tmp_path, args, message):
    shape = [] if "--shape" in args else ["--shape", "1024x1024x1024"]
    dtype = [] if "--dtype" in args else ["--dtype", "f16"]
    done = pipelines("compile", "--target", "sm_80", "--pipeline", "codegen", *shape, *dtype, *args, "-o", "out",
                     cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_not_a_gpu_target():
    with pytest.raises(Exception, match="neither a CUDA nor a ROCm target"):
        get_pipeline("codegen").choose(GEMM, get_target("cpu"))


def test_shared_memory_plan():
    # A 128x32 and a 32x128 f16 tile, each row padded by 16 B, three stages.
    assert codegen_script.shared_bytes(BASE, GEMM) == (128 * (32 + 8) + 32 * (128 + 8)) * 2 * 3
    assert codegen_script.mma_per_k_step(BASE) == (64 // 16) * (64 // 8) * (32 // 16)


@pytest.mark.parametrize("workgroup, warps, message", [
    ((256, 256), (2, 2), "each of the 128 threads would hold 512 accumulator registers; sm_80 gives it 255"),
    ((256, 256), (4, 4), "each of the 512 threads would hold 128 accumulator registers; sm_80 gives it 128"),
])
def test_accumulator_budget(workgroup, warps, message):
    big = dataclasses.replace(BASE, tile=dataclasses.replace(BASE.tile, workgroup=workgroup, warps=warps))
    with pytest.raises(ScheduleError, match=message):
        codegen_script.check(big, Gemm(4096, 4096, 4096, "f16"), SM80)
    # 128x256 on 8 warps (128 accumulator registers of 255) is the default and passes.
    codegen_script.check(dataclasses.replace(BASE, tile=dataclasses.replace(BASE.tile, workgroup=(128, 256),
                                                                            warps=(2, 4))),
                         Gemm(4096, 4096, 4096, "f16"), SM80)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("codegen") / "out"
    prepared = flow.prepare(flow.Job(SM80, "codegen", (GEMM,), (BASE,), route=CODEGEN))
    report = flow.compile_job(prepared, out)
    return out, report


def test_compiled_route_verifies(compiled):
    out, report = compiled
    assert report["verified"] and report["lds_bytes"] == codegen_script.shared_bytes(BASE, GEMM)
    assert report["mma"] == {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": 64}


@pytest.mark.parametrize("asked, choice", [
    (dataclasses.replace(BASE, staging=Staging(2)), "2 pipeline stages"),
    (dataclasses.replace(BASE, tile=dataclasses.replace(BASE.tile, k=64)), "tile 128x128x64"),
    (dataclasses.replace(BASE, swizzle=Swizzle("none")), "shared memory"),
    (dataclasses.replace(BASE, tile=dataclasses.replace(BASE.tile, warps=(1, 4))), "warp grid 1x4"),
])
def test_missing_choice_is_named(compiled, asked, choice):
    """The PTX compiled for BASE, checked against another schedule: the differing choice is named."""
    out, _ = compiled
    with pytest.raises(FallbackError, match=choice):
        verify_job(flow.Job(SM80, "codegen", (GEMM,), (asked,), route=CODEGEN), out / "dump",
                             inspect_dump(out / "dump", SM80))


def test_global_traffic_in_k_loop_is_named(compiled, tmp_path):
    out, _ = compiled
    dump = tmp_path / "dump"
    dump.mkdir()
    for path in (out / "dump").iterdir():
        text = path.read_text() if path.is_file() and path.suffix in (".ptx", ".mlir", ".ll") else None
        if text is not None and path.suffix == ".ptx":
            at = text.rindex("cp.async.wait_group")  # the K loop's (the prologue waits too, before the loop)
            text = text[:at] + "ld.global.b32 \t%r1, [%rd1];\n\t" + text[at:]
        if text is not None:
            (dump / path.name).write_text(text)
    with pytest.raises(FallbackError, match="accumulator in registers"):
        verify_job(flow.Job(SM80, "codegen", (GEMM,), (BASE,), route=CODEGEN), dump,
                             inspect_dump(dump, SM80))


@pytest.fixture(scope="module")
def compiled_bf16(tmp_path_factory):
    out = tmp_path_factory.mktemp("codegen_bf16") / "out"
    gemm = GEMM.with_(dtype="bf16")
    schedule = dataclasses.replace(BASE, tile=dataclasses.replace(BASE.tile, mma=codegen_script.codegen_mma("bf16")))
    report = flow.compile_job(flow.prepare(flow.Job(SM80, "codegen", (gemm,), (schedule,), route=CODEGEN)), out)
    return out, report, gemm, schedule


def test_bf16_links_the_retyped_f16_kernel(compiled_bf16):
    out, report, _, _ = compiled_bf16
    assert report["verified"] and report["lds_bytes"] == codegen_script.shared_bytes(BASE, GEMM)
    assert report["mma"] == {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": 64}
    f16 = (out / flow.KERNEL_DIR / "dump" / "module_gemm_dispatch_0_cuda_nvptx_fb.ptx").read_text()
    linked = (out / "dump" / "module_gemm_dispatch_0_cuda_nvptx_fb.ptx").read_text()
    assert linked == (out / flow.RETYPED_PTX).read_text()
    # The linked kernel is the f16 one line for line; only the 64 mma.sync changed type.
    changed = [(a, b) for a, b in zip(f16.splitlines(), linked.splitlines()) if a != b]
    assert len(f16.splitlines()) == len(linked.splitlines()) and len(changed) == 64
    assert all(a.strip().endswith(".f16.f16.f32") and b.strip().endswith(".bf16.bf16.f32") for a, b in changed)
    assert not list((out / flow.KERNEL_DIR).glob("*.vmfb"))  # the f16 module would misread bf16 inputs


def test_bf16_without_the_retyped_kernel_is_named(compiled_bf16, tmp_path):
    """A final module that carries the f16 kernel (the substitution did not happen) is refused by name."""
    out, _, gemm, schedule = compiled_bf16
    for name in (flow.KERNEL_DIR, "dump"):
        shutil.copytree(out / flow.KERNEL_DIR / "dump" if name == "dump" else out / name, tmp_path / name)
    (tmp_path / flow.RETYPED_PTX).write_text((out / flow.RETYPED_PTX).read_text())
    job = flow.Job(SM80, "codegen", (gemm,), (schedule,), route=CODEGEN)
    with pytest.raises(FallbackError, match="does not carry the retyped PTX"):
        f16 = next(k for k in inspect_dump(tmp_path / flow.KERNEL_DIR / "dump", SM80) if k.mma_count)
        _linked_retyped(job, tmp_path, tmp_path / "dump", inspect_dump(tmp_path / "dump", SM80), f16)
    # And the verifier alone names the MMA intrinsic when it reads f16 mma.sync for a bf16 problem.
    with pytest.raises(FallbackError, match="NV_MMA_SYNC_F32_16x8x16_BF16"):
        verify_job(job, tmp_path / "dump", inspect_dump(tmp_path / "dump", SM80))


def test_retype_needs_f16_mma():
    with pytest.raises(ScheduleError, match="has no mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 to retype"):
        codegen_script.retype_mma("ld.global.b32 %r1, [%rd1];", GEMM.with_(dtype="bf16"), SM80)


@pytest.mark.parametrize("layout, transposed", [("nt", "%arg1"), ("tn", "%arg0")])
def test_transposed_operand_follows_the_layout(layout, transposed):
    """Square problems too: the operand is transposed because of the layout, not because its shape differs."""
    from iree.compiler import ir
    from transforms.problem import build_module
    gemm = Gemm(256, 256, 256, "bf16", layout)
    with ir.Context(), ir.Location.unknown():
        text = str(build_module(gemm, kernel=codegen_script.kernel_gemm(gemm)))
    bitcast = re.search(rf"(%\w+) = flow.tensor.bitcast {transposed} ", text).group(1)
    assert text.count("linalg.transpose") == 1 and f"linalg.transpose ins({bitcast} :" in text
    assert text.count("flow.tensor.bitcast") == 2 and text.count("util.optimization_barrier") == 1
    assert "indexing_maps" not in text  # a plain NN linalg.matmul on f16


@pytest.mark.parametrize("gemm, padded", [
    (Gemm(1000, 1000, 1000, "f16"), (1024, 1024, 1024)),
    (Gemm(4096, 4096, 4000, "f16"), (4096, 4096, 4000)),  # 125 K steps of 32
    (Gemm(4096, 4096, 4008, "f16"), (4096, 4096, 4032)),
    (GEMM, (1024, 1024, 1024)),
])
def test_padded_problem(gemm, padded):
    assert codegen_script.padded_gemm(BASE, gemm) == gemm.with_(m=padded[0], n=padded[1], k=padded[2])


def test_padding_only_grows_a_plain_gemm():
    with ir.Context(), ir.Location.unknown(), pytest.raises(ProblemError, match="not to 512x1024x1024"):
        build_module(GEMM, padded=GEMM.with_(m=512))
    with ir.Context(), ir.Location.unknown(), pytest.raises(ProblemError, match="not to 1024x1024x1024"):
        build_module(GEMM.with_(m=1000), padded=GEMM.with_(dtype="bf16"))


@pytest.mark.parametrize("shape, tile", [((4000, 4000, 4000), (128, 256)), ((4096, 4096, 4000), (128, 256)),
                                         ((4096, 2176, 4096), (128, 128)), ((4096, 2000, 4096), (128, 256))])
def test_codegen_pipeline_prefers_a_tile_that_divides(shape, tile):
    schedule = get_pipeline("codegen").choose(Gemm(*shape, "f16"), SM80)
    assert schedule.tile.workgroup == tile


@pytest.fixture(scope="module")
def compiled_padded(tmp_path_factory):
    out = tmp_path_factory.mktemp("codegen_padded") / "out"
    gemm = Gemm(1000, 1000, 1000, "f16")
    report = flow.compile_job(flow.prepare(flow.Job(SM80, "codegen", (gemm,), (BASE,), route=CODEGEN)), out)
    return out, report


def test_padded_route_verifies(compiled_padded):
    """1000³ on 128x128x32 tiles: the GEMM dispatch computes 1024³, its shared memory is checked, the padding and
    slicing copies (dispatches of their own) touch none, and the report names the padding."""
    out, report = compiled_padded
    assert report["verified"] and report["padded_to"] == "1024x1024x1024"
    gemm_kernel, = [k for k in report["dispatches"] if k["mma_count"]]
    assert gemm_kernel["lds_bytes"] == codegen_script.shared_bytes(BASE, GEMM)
    assert len(report["dispatches"]) > 1 and all(k["lds_bytes"] == 0 for k in report["dispatches"]
                                                 if not k["mma_count"])


def test_missing_padding_is_named(compiled_padded):
    """The dispatch computes 1024³; a problem whose padding would be 1024x1024x992 names that padding."""
    out, _ = compiled_padded
    with pytest.raises(FallbackError, match="requested padding to 1024x1024x992 did not take effect: the "
                                            "dispatch computes 1024x1024x1024"):
        verify_job(flow.Job(SM80, "codegen", (Gemm(1000, 1000, 990, "f16"),), (BASE,), route=CODEGEN),
                             out / "dump", inspect_dump(out / "dump", SM80))


RASTER = dataclasses.replace(BASE, swizzle=Swizzle("pad", "raster", 4))  # 8x8 grid of 128x128 tiles on GEMM


@pytest.mark.parametrize("args, message", [
    (["--order", "raster", "--raster-rows", "3"], "raster groups of 3 rows of tiles must divide the 8 rows"),
    (["--order", "raster", "--raster-rows", "8"], "raster groups of 8 rows of tiles must divide the 8 rows"),
    (["--order", "raster", "--raster-rows", "1"], "raster groups of 1 row(s) of tiles are row order"),
    (["--raster-rows", "4"], "raster rows 4 apply to --order raster only, not to order 'row'"),
    (["--order", "xcd"], "launches workgroups in row or raster order, not 'xcd'"),
    (["--order", "raster", "--shape", "1024x128x1024"], "raster order over a single column of 128-column tiles"),
])
def test_raster_refusals_are_one_sentence(tmp_path, args, message):
    shape = [] if "--shape" in args else ["--shape", "1024x1024x1024"]
    done = pipelines("compile", "--target", "sm_80", "--pipeline", "codegen", "--dtype", "f16", "--tile",
                     "128x128x32", "--warps", "2x2", "--prefetch", "3", *shape, *args, "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["sm_80", "gfx942"])
def test_other_routes_refuse_raster_order(tmp_path, target):
    dtype = "f16" if target == "sm_80" else "bf16"
    done = pipelines("compile", "--target", target, "--pipeline", "tuned", "--shape", "4096x4096x4096", "--dtype",
                     dtype, "--order", "raster", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2 and "raster workgroup order is built by the codegen pipeline only" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("gemm, rows", [(GEMM, 2), (GEMM, 4), (Gemm(1000, 3000, 512, "f16"), 4)])
def test_raster_is_a_permutation_with_an_inverse(gemm, rows):
    schedule = dataclasses.replace(BASE, swizzle=Swizzle("pad", "raster", rows))
    mt, nt = codegen_script.tile_grid(schedule, gemm)
    tiles = [codegen_script.raster_tile(schedule, gemm, x, y) for y in range(mt) for x in range(nt)]
    assert sorted(tiles) == [(m, n) for m in range(mt) for n in range(nt)]
    assert all(codegen_script.raster_block(schedule, gemm, m, n) == (x, y)
               for (m, n), (y, x) in zip(tiles, [(y, x) for y in range(mt) for x in range(nt)]))
    # The first blocks walk down the first column of the first group, then its second column.
    assert tiles[:rows + 1] == [(m, 0) for m in range(rows)] + [(0, 1)]


def test_raster_functions_compute_the_model():
    """The library's raster functions, folded for every block of the grid, give `raster_tile`'s tiles."""
    from iree.compiler import passmanager
    from iree.compiler.dialects import affine, arith, func

    mt, nt = codegen_script.tile_grid(RASTER, GEMM)
    blocks = [(x, y) for y in range(mt) for x in range(nt)]
    with ir.Context(), ir.Location.unknown():
        library = codegen_script.codegen_library(RASTER, GEMM)
        maps = {}
        for op in library.body.operations:
            if op.operation.name == "func.func" and op.sym_name.value in codegen_script.RASTER_FUNCTIONS:
                apply, = [o for o in op.regions[0].blocks[0].operations if o.operation.name == "affine.apply"]
                maps[op.sym_name.value] = ir.AffineMapAttr(apply.attributes["map"]).value
        n_map, m_map = (maps[name] for name in codegen_script.RASTER_FUNCTIONS)
        module = ir.Module.create()
        index = ir.IndexType.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("blocks", ([], [index] * (2 * len(blocks))))
            with ir.InsertionPoint(fn.add_entry_block()):
                results = []
                for x, y in blocks:
                    ids = [arith.ConstantOp(index, y).result, arith.ConstantOp(index, x).result]
                    results += [affine.AffineApplyOp(m_map, ids).result, affine.AffineApplyOp(n_map, ids).result]
                func.ReturnOp(results)
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module.operation)
        ret = list(module.body.operations[0].regions[0].blocks[0].operations)[-1]
        values = [ir.IntegerAttr(v.owner.attributes["value"]).value for v in ret.operands]
    assert list(zip(values[::2], values[1::2])) == [codegen_script.raster_tile(RASTER, GEMM, x, y) for x, y in blocks]


@pytest.fixture(scope="module")
def compiled_raster(tmp_path_factory):
    out = tmp_path_factory.mktemp("codegen_raster") / "out"
    report = flow.compile_job(flow.prepare(flow.Job(SM80, "codegen", (GEMM,), (RASTER,), route=CODEGEN)), out)
    return out, report


def test_raster_route_verifies(compiled_raster):
    _, report = compiled_raster
    assert report["verified"] and report["schedules"][0]["swizzle"]["raster_rows"] == 4
    assert "order raster (4 rows)" in report["schedule_summary"][0]


@pytest.mark.parametrize("fixture, asked, choice", [
    ("compiled", RASTER, r"raster workgroup order \(4 rows per group\) did not take effect: (\d+) of \1 cp.async"),
    ("compiled_raster", BASE, "row workgroup order did not take effect: (\\d+) of \\1 cp.async"),
])
def test_block_order_is_read_from_the_ptx(request, fixture, asked, choice):
    """Row order: each copy's global address depends on one block id; raster order: on both."""
    out, _ = request.getfixturevalue(fixture)
    with pytest.raises(FallbackError, match=choice):
        verify_job(flow.Job(SM80, "codegen", (GEMM,), (asked,), route=CODEGEN), out / "dump",
                             inspect_dump(out / "dump", SM80))


@pytest.mark.parametrize("shape, order, rows", [((4096, 4096, 4096), "raster", 8), ((8000, 8000, 8000), "raster", 7),
                                                ((256, 4096, 4096), "row", None), ((4096, 256, 4096), "row", None)])
def test_codegen_raster_pipeline(shape, order, rows):
    """The largest group of at most 8 rows that splits the grid in two or more; row order for a single row of
    tiles (256: 2 rows of 128, no group below 2) or a single column (256 columns of a 128x256 tile)."""
    schedule = get_pipeline("codegen-raster").choose(Gemm(*shape, "f16"), SM80)
    assert (schedule.swizzle.workgroup_order, schedule.swizzle.raster_rows) == (order, rows)
    codegen_script.check(schedule, Gemm(*shape, "f16"), SM80)


@pytest.mark.parametrize("shape, rows, n_ids", [((3072, 2048, 1024), 8, {"y"}), ((4096, 4096, 4096), 8, {"x", "y"}),
                                                ((1024, 1024, 1024), 4, {"y"})])
def test_raster_tile_dependence_follows_the_grid(shape, rows, n_ids):
    """In groups of `rows` rows over a grid `rows` tiles wide (3072x2048 and 1024² in 128x256 tiles: 8 tiles wide
    for groups of 8 and 4), the N tile of block (x, y) is y mod the group: it depends on y alone."""
    gemm = Gemm(*shape, "f16")
    schedule = get_pipeline("codegen-raster").choose(gemm, SM80)
    assert schedule.swizzle.group_rows == rows
    m_ids, got_n_ids = codegen_script.tile_block_ids(schedule, gemm)
    assert m_ids == {"x", "y"} and got_n_ids == n_ids
    blocks = [(x, y) for y in range(codegen_script.tile_grid(schedule, gemm)[0])
              for x in range(codegen_script.tile_grid(schedule, gemm)[1])]
    n_of = {(x, y): codegen_script.raster_tile(schedule, gemm, x, y)[1] for x, y in blocks}
    assert (len({n_of[b] for b in blocks if b[1] == 0}) == 1) == ("x" not in n_ids)


def test_raster_whose_n_tile_depends_on_y_alone_verifies(tmp_path):
    """3072x2048x1024 failed its own cp.async check before: B's copies depend on y alone in that order."""
    gemm = Gemm(3072, 2048, 1024, "f16")
    schedule = get_pipeline("codegen-raster").choose(gemm, SM80)
    report = flow.compile_job(flow.prepare(flow.Job(SM80, "codegen-raster", (gemm,), (schedule,), route=CODEGEN)),
                              tmp_path / "out")
    assert report["verified"] and "order raster (8 rows)" in report["schedule_summary"][0]
    kernel = next(k for k in inspect_dump(tmp_path / "out" / "dump", SM80) if k.mma_count)
    ptx = ptx_kernels((tmp_path / "out" / "dump" / kernel.isa_file).read_text())
    copies = copy_block_ids(next(t for n, t in ptx.items() if n.startswith(kernel.dispatch.removeprefix("module_"))))
    assert {"y"} in copies and frozenset({"x", "y"}) in copies and frozenset({"x"}) not in copies
