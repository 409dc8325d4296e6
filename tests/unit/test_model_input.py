"""Models as importers write them (issue 17, first part): an ONNX transformer block built here with onnx.helper,
read as .onnx (IREE's ONNX importer) or as the torch-dialect MLIR the importer writes, gets a schedule for every
distinct contraction IREE dispatches, delivered by one merged tuning spec and verified in the compiled model.

The block: Q, K and V projections sharing their input, Q·Kᵀ (a Transpose that IREE folds into the contraction, so
it is dispatched as an NT GEMM), softmax, P·V, the output projection, and an MLP with Gelu.
"""

import json
import subprocess
import sys

import pytest

from pipelines.cli import main
from pipelines.routes.model import ModelLibraryRoute

onnx = pytest.importorskip("onnx")  # the test extra installs it

from tools import transformer_block  # noqa: E402

MODEL_ROUTE = ModelLibraryRoute.name  # the route's name, as a job names it

S, D, F = 64, 128, 256


def block(path, S=S, D=D, F=F):  # noqa: N803 - the block's sizes, as the docstring names them
    return transformer_block.build(path, S, D, F)


DISTINCT = {(S, D, D, "nn"), (S, S, D, "nt"), (S, D, S, "nn"), (S, F, D, "nn"), (S, D, F, "nn")}


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1151"])
def test_every_dispatched_contraction_of_an_onnx_block_gets_its_schedule(tmp_path, target):
    out = tmp_path / "out"
    # `tuned` schedules every contraction (`auto` leaves those to IREE that the timing model does not predict faster)
    assert main(["compile", "--input", str(block(tmp_path / "block.onnx")), "--target", target, "--pipeline",
                 "tuned", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["verified"] and all(s is not None for s in report["schedules"])
    assert {(p["m"], p["n"], p["k"], p["layout"]) for p in report["problems"]} == DISTINCT
    assert len(report["problems"]) == len(DISTINCT)  # Q, K, V and the output projection: one schedule
    assert (out / "spec.mlir").is_file()


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_the_importers_torch_dialect_is_lowered_first(tmp_path):
    model = block(tmp_path / "block.onnx")
    imported = tmp_path / "block.mlir"
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o", str(imported)],
                   check=True)
    assert "torch.operator" in imported.read_text()
    out = tmp_path / "out"
    assert main(["compile", "--input", str(imported), "--target", "gfx942", "--pipeline", "auto", "-o",
                 str(out)]) == 0
    assert json.loads((out / "report.json").read_text())["verified"]


def test_a_model_iree_cannot_lower_is_one_sentence(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @f(%x: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {\n'
                   '  %y = torch.operator "onnx.NoSuchOp"(%x) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>\n'
                   '  return %y : !torch.vtensor<[4],f32>\n}\n')
    out = tmp_path / "out"
    assert main(["compile", "--input", str(bad), "--target", "gfx942", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "could not bring" in err and "Traceback" not in err and not out.exists()


# gfx950 and gfx1151 in the slow tier (a block's compile each): the test command runs them, the fast tier does not
@pytest.mark.parametrize("target", ["gfx942", pytest.param("gfx950", marks=pytest.mark.slow),
                                    pytest.param("gfx1151", marks=pytest.mark.slow), "sm_80"])
def test_tune_model_schedules_every_contraction_and_changes_nothing_else(tmp_path, target):
    out = tmp_path / "out"
    pipeline = ["--pipeline", "tuned"] if target.startswith("gfx") else []  # a schedule for every contraction
    assert main(["tune-model", str(block(tmp_path / "block.onnx")), "--target", target, *pipeline, "-o",
                 str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["contractions"] == len(DISTINCT)
    rows = summary["dispatches"]
    assert all(r["identical_to_default"] for r in rows if r["contraction"] is None)
    assert any(r["contraction"] is None for r in rows)  # the softmax dispatch, compared with IREE's default
    if summary["route"] == "tuning-spec":
        assert summary["verified"] and summary["scheduled"] == len(DISTINCT) and (out / "spec.mlir").is_file()
        assert all(r["schedule"] != "IREE default heuristic" for r in rows if r["contraction"])


def test_the_merged_spec_applies_with_plain_iree_compile_and_iree_default_specs(tmp_path):
    """The spec tune-model writes is taken by iree-compile alone, also with IREE's own default tuning specs on:
    every contraction dispatch carries the spec's marker."""
    from pipelines.compiler import iree_compile_path, run_patiently

    model = block(tmp_path / "block.onnx")
    out = tmp_path / "out"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "tuned", "-o", str(out)]) == 0
    imported = tmp_path / "block.mlir"
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o", str(imported)],
                   check=True)
    for extra in ([], ["--iree-codegen-enable-default-tuning-specs"]):
        dump = tmp_path / f"dump{len(extra)}"
        run_patiently([iree_compile_path(), str(imported), "--iree-hal-target-device=hip", "--iree-rocm-target=gfx942",
                       f"--iree-codegen-tuning-spec-path={out / 'spec.mlir'}", *extra,
                       f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "m.vmfb")], check=True)
        marked = [p for p in dump.glob("configured_*.mlir") if "__tuning_spec_applied__" in p.read_text()]
        assert len(marked) == len(DISTINCT), (extra, marked)


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_a_model_with_nothing_scheduled_still_gets_a_spec_that_changes_nothing(tmp_path):
    """Where the pipeline leaves every contraction to IREE (here `default`; `auto` on gfx942's 4096-row block of the
    README), the README's plain iree-compile with spec.mlir must still run and build exactly IREE's default module,
    also with a user spec that configures nothing linked ahead of it, and with no warning about the root handle."""
    from pipelines.compiler import iree_compile_path, run_patiently

    model = block(tmp_path / "block.onnx")
    imported = tmp_path / "block.mlir"
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o", str(imported)],
                   check=True)
    base = [iree_compile_path(), str(imported), "--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"]
    plain = run_patiently([*base, "-o", str(tmp_path / "plain.vmfb")], capture_output=True, check=True)
    assert not plain.stderr
    out = tmp_path / "out"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "default", "-o", str(out)]) == 0
    assert json.loads((out / "model.json").read_text())["scheduled"] == 0
    linked = tmp_path / "linked"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "default", "--with-spec",
                 str(out / "spec.mlir"), "-o", str(linked)]) == 0
    assert "module @user_spec" in (linked / "spec.mlir").read_text()
    for spec in (out / "spec.mlir", linked / "spec.mlir"):
        built = tmp_path / f"{spec.parent.name}.vmfb"
        run = run_patiently([*base, f"--iree-codegen-tuning-spec-path={spec}", "-o", str(built)],
                            capture_output=True, text=True)
        assert run.returncode == 0 and not run.stderr, run.stderr[:2000]
        assert built.read_bytes() == (tmp_path / "plain.vmfb").read_bytes()


def test_a_target_that_reads_no_spec_gets_no_spec_of_nothing(tmp_path):
    """CUDA takes its schedules on the source's ops, not through a tuning spec: with nothing scheduled there, no
    spec.mlir is written and model.json names no script."""
    out = tmp_path / "out"
    assert main(["tune-model", str(block(tmp_path / "block.onnx")), "--target", "sm_80", "--pipeline", "default",
                 "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["scheduled"] == 0 and summary["script"] is None
    assert not list(out.rglob("spec.mlir"))


@pytest.mark.slow  # three compiles of the block: the test command runs it, the fast tier does not
def test_a_user_spec_is_linked_ahead_of_ours(tmp_path, capsys):
    """--with-spec links the user's spec first: one it does not share an op with leaves every schedule of ours
    verified; one that configures a contraction of ours first is an error naming the dispatch, nothing written."""
    model = block(tmp_path / "block.onnx")
    other = tmp_path / "other.mlir"
    assert main(["spec", "--target", "gfx942", "--shape", "4096x4096x4096", "--dtype", "f16", "--tile", "256x256x32",
                 "--warps", "2x4", "--mma", "MFMA_F32_16x16x16_F16", "-o", str(other)]) == 0
    out = tmp_path / "out"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "tuned", "--with-spec", str(other),
                 "-o", str(out)]) == 0
    spec = (out / "spec.mlir").read_text()
    assert "module @user_spec" in spec and "module @project_spec" in spec
    assert json.loads((out / "model.json").read_text())["verified"]
    clash = tmp_path / "clash.mlir"
    assert main(["spec", "--target", "gfx942", "--shape", f"{S}x{D}x{D}", "--dtype", "f16", "--tile", "32x64x32",
                 "--warps", "2x2", "--mma", "MFMA_F32_16x16x16_F16", "-o", str(clash)]) == 0
    capsys.readouterr()
    refused = tmp_path / "refused"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "tuned", "--with-spec", str(clash),
                 "-o", str(refused)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did not take effect" in err and not refused.exists()


DYNAMIC = """func.func @main(%x: tensor<?x128xf16>, %w: tensor<128x256xf16>, %v: tensor<64x128xf16>,
    %u: tensor<128x256xf16>) -> (tensor<?x256xf32>, tensor<64x256xf32>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x128xf16>
  %e = tensor.empty(%d) : tensor<?x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %r = linalg.matmul ins(%x, %w : tensor<?x128xf16>, tensor<128x256xf16>) outs(%f : tensor<?x256xf32>)
    -> tensor<?x256xf32>
  %e2 = tensor.empty() : tensor<64x256xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x256xf32>) -> tensor<64x256xf32>
  %r2 = linalg.matmul ins(%v, %u : tensor<64x128xf16>, tensor<128x256xf16>) outs(%f2 : tensor<64x256xf32>)
    -> tensor<64x256xf32>
  return %r, %r2 : tensor<?x256xf32>, tensor<64x256xf32>
}
"""


def test_dynamic_contractions_are_reported_as_skipped(tmp_path):
    model = tmp_path / "dyn.mlir"
    model.write_text(DYNAMIC)
    out = tmp_path / "out"
    assert main(["tune-model", str(model), "--target", "gfx942", "--pipeline", "tuned", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["contractions"] == 1 and summary["verified"]
    assert len(summary["skipped"]) == 1 and "tensor<?x128xf16>" in summary["skipped"][0]
    assert "Skipped (1" in (out / "model.md").read_text()
    dynamic_dispatch = [r for r in summary["dispatches"] if r["contraction"] is None]
    assert dynamic_dispatch and all(r["identical_to_default"] for r in dynamic_dispatch)


def test_a_model_of_unsupported_type_names_the_op(tmp_path, capsys):
    model = tmp_path / "f32.mlir"
    model.write_text(DYNAMIC.replace("f16", "f32"))
    out = tmp_path / "out"
    assert main(["tune-model", str(model), "--target", "gfx942", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "linalg.matmul in" in err and "multiplies f32 inputs" in err
    assert not out.exists()


def test_tune_model_on_cuda_puts_schedules_on_the_source_ops(tmp_path):
    """sm_80 reads no tuning spec: compilation_info goes on the source's ops, and each contraction dispatch's schedule
    is read from its configured IR. At 2048 rows `auto` schedules every contraction, and the one IREE rewrites
    (Q·Kᵀ, its transpose folded in: an NT dispatch) still carries the schedule set on its op."""
    out = tmp_path / "out"
    model = block(tmp_path / "big.onnx", S=2048, D=1024, F=4096)  # Q·Kᵀ shares its shape with no other product
    assert main(["tune-model", str(model), "--target", "sm_80", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["route"] == "op-attribute" and summary["verified"]
    rows = [r for r in summary["dispatches"] if r["contraction"]]
    assert "2048x2048x1024 nt f16" in {r["contraction"] for r in rows}
    assert all(r["schedule"].startswith("tile 128x128x64") for r in rows)
    assert all(r["identical_to_default"] for r in summary["dispatches"] if r["contraction"] is None)


def test_a_changed_dispatch_that_is_no_contraction_is_an_error(tmp_path):
    """tune-model's proof that nothing else changed: a dispatch without a contraction whose configured IR differs
    between the scheduled and the default compile stops the run."""
    from pipelines.targets import get_target
    from pipelines.tune_model import _summary
    from pipelines.model_input import ModelError

    for kind, text in (("default", "module {\n}\n"), ("tuned", "module {\n}\n// changed\n")):
        (tmp_path / kind / "dump").mkdir(parents=True)
        (tmp_path / kind / "dump" / "configured_module_m_dispatch_0.mlir").write_text(text)
    reports = {"default": {"dispatches": [{"dispatch": "module_m_dispatch_0"}]},
               "tuned": {"verified": True, "command": "", "dispatches": [{"dispatch": "module_m_dispatch_0"}]}}
    with pytest.raises(ModelError, match="changed dispatch module_m_dispatch_0"):
        _summary(tmp_path / "m.mlir", get_target("gfx942"), "auto", {}, reports, tmp_path, [], [])


def test_horizontally_fused_projections_are_reported_not_dropped(tmp_path):
    """With IREE's horizontal fusion the three projections sharing X become one multi-result linalg.generic: not a
    contraction a schedule describes, so it is listed as skipped (left to IREE), by its dispatch."""
    from pipelines.compiler import iree_compile_path, run_patiently
    from pipelines.model_input import contractions_at_flow, read_model

    source = tmp_path / "block.mlir"
    source.write_text(read_model(block(tmp_path / "block.onnx")))
    flow = run_patiently([iree_compile_path(), str(source), "--iree-hal-target-device=cuda",
                          "--iree-cuda-target=sm_80", "--iree-dispatch-creation-enable-fuse-horizontal-contractions",
                          "--compile-to=flow", "-o", "-"], capture_output=True, text=True, check=True).stdout
    skipped = []
    gemms = contractions_at_flow(flow, "block", skipped)
    assert len(skipped) == 1 and "horizontal_multi_contract" in skipped[0] and "3 contractions" in skipped[0]
    assert (S, S, D, "nt") in {(g.m, g.n, g.k, g.layout) for g in gemms}


def test_tune_model_codegen_on_cuda_compiles_every_product_through_the_library(tmp_path):
    """`--pipeline codegen` on CUDA: each contraction is isolated in a dispatch of its own and compiled by the
    codegen library (the kernel stores f32, so the importer's truncf/Gelu run as split-out dispatches, configured by
    the library); Q·Kᵀ stays NN with K's transpose as its own dispatch; softmax is unchanged."""
    out = tmp_path / "out"
    model = block(tmp_path / "b.onnx", S=512, D=256, F=512)
    assert main(["tune-model", str(model), "--target", "sm_80", "--pipeline", "codegen", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["route"] == "model-codegen" and summary["verified"] and summary["script"] == "library.mlir"
    rows = summary["dispatches"]
    products = [r for r in rows if r["contraction"]]
    assert {r["contraction"] for r in products} == {"512x256x256 nn f16", "512x512x256 nn f16", "512x256x512 nn f16"}
    assert all(r["schedule"].startswith("codegen library: tile 128x256x32") for r in products)
    split = [r for r in rows if r.get("split_consumer")]
    assert sum("(library)" in r["schedule"] for r in split) >= 3  # truncf, Q·Kᵀ's truncf, Gelu
    assert any("transpose" in r["dispatch"] or "IREE default" in r["schedule"] for r in split)
    assert [r["identical_to_default"] for r in rows if r["contraction"] is None and not r.get("split_consumer")] == [
        True]  # softmax
    assert (out / "library.mlir").is_file() and not (out / "spec.mlir").exists()


def test_a_small_transposed_product_is_left_to_compilation_info(tmp_path):
    """At 256 rows Q·Kᵀ's transpose of K, a dispatch of its own once isolated, costs more than the product gains:
    that contraction keeps IREE's fused NT dispatch, with `auto`'s compilation_info where auto gives one."""
    out = tmp_path / "out"
    model = block(tmp_path / "b.onnx", S=256, D=128, F=512)
    assert main(["tune-model", str(model), "--target", "sm_80", "--pipeline", "codegen", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert list(summary["not_in_library"]) == ["256x256x128 nn f16"]
    assert "transposed by the program" in summary["not_in_library"]["256x256x128 nn f16"]
    schedules = {r["contraction"]: r["schedule"] for r in summary["dispatches"] if r["contraction"]}
    assert not schedules.pop("256x256x128 nt f16").startswith("codegen library")
    assert all(s.startswith("codegen library") for s in schedules.values())


def test_tune_model_codegen_is_cuda_only(tmp_path, capsys):
    assert main(["tune-model", str(block(tmp_path / "b.onnx")), "--target", "gfx942", "--pipeline", "codegen",
                 "-o", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err
    assert "on CUDA, codegen" in err and "Traceback" not in err and not (tmp_path / "out").exists()


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_predicted_times_per_contraction_on_an_amd_target(tmp_path):
    """--predict: each distinct contraction compiled alone (its schedule, IREE's default) and replayed on the
    timing model; the rows carry PREDICTED times and their launch counts, the summary their sum."""
    out = tmp_path / "out"
    assert main(["tune-model", str(block(tmp_path / "b.onnx")), "--target", "gfx950", "--pipeline", "tuned",
                 "--predict", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    products = [r for r in summary["dispatches"] if r["contraction"]]
    assert all(r["predicted_us"]["tuned"] > 0 and r["predicted_us"]["default"] > 0 for r in products)
    assert sum(r["launches"] for r in products) == 8  # Q, K, V and the output projection share one dispatch
    total = summary["predicted"]["contraction_launches_us"]
    assert total["tuned"] == pytest.approx(sum(r["launches"] * r["predicted_us"]["tuned"] for r in products), abs=0.1)
    assert "PREDICTED" in (out / "model.md").read_text()


def test_predict_needs_a_timing_model(tmp_path, capsys):
    assert main(["tune-model", str(block(tmp_path / "b.onnx")), "--target", "sm_80", "--predict",
                 "-o", str(tmp_path / "out")]) != 0
    assert "no timing model" in capsys.readouterr().err


def test_a_consumer_configuration_that_did_not_take_effect_is_an_error(tmp_path):
    """The library configures the split-out consumers it was planned for; a planned size no dispatch has (so none
    carries the configuration) stops the compile with one sentence naming it."""
    import dataclasses

    from pipelines import flow
    from pipelines.job import Job
    from pipelines.model_input import read_model, to_linalg
    from pipelines.named import get_pipeline
    from pipelines.routes.model import plan_library
    from pipelines.targets import get_target
    from pipelines.verify import FallbackError

    target = get_target("sm_80")
    text = to_linalg(read_model(block(tmp_path / "b.onnx", S=512, D=256, F=512)), target, "block")
    plan, _ = plan_library(text, target, get_pipeline("codegen").choose)
    wrong = dataclasses.replace(plan, consumer_sizes=plan.consumer_sizes + (7 * 2048,))
    gemms = tuple(g for g, _ in plan.library)
    job = Job(target, "codegen", gemms, (None,) * len(gemms), user_source=text, route=MODEL_ROUTE, plan=wrong)
    with pytest.raises(FallbackError, match="consumers of 14336 elements"):
        flow.compile_job(flow.prepare(job), tmp_path / "out")
    flow.compile_job(flow.prepare(dataclasses.replace(job, plan=plan)), tmp_path / "ok")  # as planned: verified


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_a_searched_model_takes_the_predicted_best_where_it_beats_the_default(tmp_path, monkeypatch):
    """--search: each distinct contraction searched (compiled, PREDICTED) under search/; the spec carries the best
    candidate where it is predicted faster than IREE's default, and leaves the contraction to IREE otherwise."""
    from pipelines import tune

    real = tune.finalize
    verdicts = iter([2.0, 0.5] + [0.5] * 10)  # the first contraction's best wins, the others lose

    def finalize(gemm, target, plan, cache):
        best = real(gemm, target, plan, cache)
        return dict(best, speedup_over_default=next(verdicts))

    monkeypatch.setattr(tune, "finalize", finalize)
    out = tmp_path / "out"
    assert main(["tune-model", str(block(tmp_path / "b.onnx")), "--target", "gfx942", "--search", "2",
                 "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    searched = summary["search"]
    assert [r["used"] for r in searched] == [True] + [False] * (len(searched) - 1)
    assert all((out / r["plan"] / "results.jsonl").is_file() for r in searched if r["candidates"])
    for r in searched:  # oracle: the predicted candidates are the plan's ok rows other than IREE's default
        results = out / r["plan"] / "results.jsonl"
        rows = [json.loads(line) for line in results.read_text().splitlines() if line] if results.is_file() else []
        assert r["candidates"] == sum(row["status"] == "ok" and row["pipeline"] != "default" for row in rows), r
    schedules = {r["contraction"]: r["schedule"] for r in summary["dispatches"] if r["contraction"]}
    assert schedules[searched[0]["contraction"]] == searched[0]["best"]
    assert {schedules[r["contraction"]] for r in searched[1:] if r["candidates"]} == {"IREE default heuristic"}


def test_each_contraction_keeps_its_first_dispatchs_gemm(monkeypatch):
    """Two dispatches of one contraction with different epilogues (bias-gelu first, none second) and another
    contraction between them: the schedule is chosen for the first dispatch's GEMM, as documented, in first-seen
    order."""
    from transforms.problem import Epilogue, Gemm

    from pipelines import model_input

    first = Gemm(256, 512, 128, "bf16", "nt", epilogue=Epilogue("bias-gelu"))
    other = Gemm(128, 128, 64, "bf16", "nn")
    second = first.with_(epilogue=Epilogue())
    monkeypatch.setattr(model_input, "parse_module", lambda text, where: object())
    monkeypatch.setattr(model_input, "horizontally_fused", lambda module: [])
    monkeypatch.setattr(model_input, "contraction_ops", lambda module: [object()])
    monkeypatch.setattr(model_input, "gemms_from_mlir",
                        lambda module, where, skipped: [("d0", first), ("d1", other), ("d2", second)])
    assert model_input.contractions_at_flow("flow", "m") == [first, other]


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_tune_model_records_the_compile_commands_where_the_user_finds_them(tmp_path):
    """tuned/ and default/ (and predicted/) are compiled inside tune-model's scratch folder, which is renamed into
    place: their compile_command.txt and report.json name the output folder, so the command runs again as
    written, and no scratch folder's name is left in any file."""
    out = tmp_path / "out"
    assert main(["tune-model", str(block(tmp_path / "block.onnx")), "--target", "gfx942", "--pipeline", "auto",
                 "--predict", "-o", str(out)]) == 0
    commands = sorted(out.rglob("compile_command.txt"))
    assert {c.parent.name for c in commands} >= {"tuned", "default"} and any("predicted" in str(c) for c in commands)
    for command in commands:
        text = command.read_text()
        assert f"{command.parent}/gemm.mlir" in text and f"-o {command.parent}/gemm.vmfb" in text, text
    leftovers = [str(p) for p in out.rglob("*") if p.is_file() and p.suffix in (".txt", ".json", ".md")
                 and "pipelines-tmp" in p.read_text()]
    assert not leftovers, leftovers
