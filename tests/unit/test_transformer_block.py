"""tools/transformer_block.py's multi-head block (`heads`): the ONNX graph as exporters write multi-head attention,
its float64 reference against a head-by-head computation, the graph run on the CPU against that reference, and what
`tune-model --pipeline hopper` takes of it."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tools import transformer_block as tb

onnx = pytest.importorskip("onnx")  # the test extra installs it

S, D, F, H = 64, 128, 256, 4


def head_by_head(arrays: dict, heads: int) -> np.ndarray:
    """The block in float64 with each head's attention on its own D/H columns of Q, K and V (no reshapes)."""
    a = {name: value.astype(np.float64) for name, value in arrays.items()}
    q, k, v = (a["X"] @ a[w] for w in ("Wq", "Wk", "Wv"))
    width = q.shape[1] // heads
    parts = []
    for h in range(heads):
        cols = slice(h * width, (h + 1) * width)
        scores = q[:, cols] @ k[:, cols].T
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        parts.append((p / p.sum(axis=1, keepdims=True)) @ v[:, cols])
    hidden = (np.concatenate(parts, axis=1) @ a["Wo"]) @ a["W1"]
    gelu = 0.5 * hidden * (1 + np.vectorize(math.erf)(hidden / math.sqrt(2)))
    return gelu @ a["W2"]


@pytest.mark.parametrize("heads", [1, 2, 4, 128])
def test_the_reference_is_attention_head_by_head(heads):
    named = dict(tb.inputs(S, D, F))
    want = head_by_head(named, heads)
    got = tb.reference(named, heads)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    if heads > 1:  # the heads matter: one head over all columns is another function
        assert not np.allclose(got, head_by_head(named, 1), rtol=1e-3)


def test_one_head_is_the_block_as_before(tmp_path):
    model = onnx.load(tb.build(tmp_path / "b.onnx", S, D, F, weights="inputs"))
    assert [n.op_type for n in model.graph.node] == [
        "MatMul", "MatMul", "MatMul", "Transpose", "MatMul", "Softmax", "MatMul", "MatMul", "MatMul", "Gelu", "MatMul"]
    assert not model.graph.initializer


def test_several_heads_split_and_join_the_width(tmp_path):
    model = onnx.load(tb.build(tmp_path / "b.onnx", S, D, F, weights="inputs", heads=H))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Reshape") == 4 and ops.count("Transpose") == 4 and ops.count("MatMul") == 8
    shapes = {i.name: onnx.numpy_helper.to_array(i).tolist() for i in model.graph.initializer}
    assert shapes == {"split_heads": [S, H, D // H], "join_heads": [S, D]}
    perms = {n.output[0]: list(n.attribute[0].ints) for n in model.graph.node if n.op_type == "Transpose"}
    assert perms == {"Qh": [1, 0, 2], "Kt": [1, 2, 0], "Vh": [1, 0, 2], "ctxs": [1, 0, 2]}


@pytest.mark.parametrize("heads", [0, 3, 129])
def test_heads_that_do_not_divide_the_width_are_one_sentence(tmp_path, capsys, heads):
    out = tmp_path / "b.onnx"
    assert tb.main(["onnx", str(out), "--rows", str(S), "--width", str(D), "--mlp", str(F), "--heads",
                    str(heads)]) == 2
    err = capsys.readouterr().err
    assert f"--heads {heads} does not divide the width {D}" in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.slow  # compiles the block: the test command runs it, the fast tier does not
def test_the_multi_head_graph_runs_to_its_reference_on_the_cpu(tmp_path):
    from pipelines import model_runner
    from pipelines.compiler import iree_compile_path, run_patiently

    model = tb.build(tmp_path / "b.onnx", S, D, F, weights="inputs", heads=H)
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o",
                    str(tmp_path / "b.mlir")], check=True)
    run_patiently([iree_compile_path(), str(tmp_path / "b.mlir"), "--iree-hal-target-device=local",
                   "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic",
                   "-o", str(tmp_path / "b.vmfb")], check=True)
    tb.write_data(tmp_path / "data", S, D, F, heads=H)
    arrays, _, reference = model_runner.load_inputs(tmp_path / "data")
    value = model_runner.result(tmp_path / "b.vmfb", "block", "local-task", arrays)
    # f16 intermediates: the error is f16's (unit roundoff 4.9e-4); a graph of other heads would be far off
    assert 1e-5 < model_runner.relative_error(value, reference) < 1e-2
    assert model_runner.relative_error(value, tb.reference(dict(tb.inputs(S, D, F)), 1)) > 0.05


@pytest.mark.slow  # compiles the model for sm_90a: the test command runs it, the fast tier does not
def test_tune_model_takes_the_rank_3_softmax_and_the_batched_products(tmp_path):
    from pipelines.cli import main

    heads = 2  # heads of 64 columns: Q·Kᵀ's K a whole K step, as the batched NN kernel needs
    width = D // heads
    model = tb.build(tmp_path / "b.onnx", S, D, F, weights="inputs", heads=heads)
    assert main(["tune-model", str(model), "--target", "sm_90a", "--pipeline", "hopper", "-o",
                 str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "model.json").read_text())
    md = (tmp_path / "out" / "model.md").read_text()
    assert f"row softmax {heads * S}x{S} f16" in md  # the heads' rows collapsed: H·S rows of S
    assert summary["left"] == [] and "left to IREE: linalg" not in md
    # the eight products on the Hopper kernels, each rounded in its store: three projections, Q·Kᵀ and P·V batched
    # over the heads, ·Wo, ·W1 with its Gelu, ·W2; each call's kernel proven in the compiled PTX (verified)
    assert sorted(c["contraction"] for c in summary["calls"]) == sorted(
        [f"{S}x{D}x{D} nn f16"] * 4 + [f"{heads}x{S}x{S}x{width} nn f16", f"{heads}x{S}x{width}x{S} nn f16",
                                       f"{S}x{F}x{D} nn f16", f"{S}x{D}x{F} nn f16"])
    assert all(c["epilogue"] == "truncf" for c in summary["calls"])
    assert [s["softmax"] for s in summary["softmaxes"]] == [f"{heads * S}x{S} f16"] and summary["verified"]
    # whatever IREE keeps (the heads' transposes, where no kernel stores the heads) is no contraction
    assert all(r["contraction"] is None for r in summary["dispatches"] if r["dispatch"] in summary["iree_dispatches"])


def test_with_heads_of_32_columns_q_kt_stays_with_iree_and_p_v_is_taken(tmp_path):
    from pipelines.hopper_model import rewrite
    from pipelines.model_input import read_model, to_linalg
    from pipelines.targets import get_target

    model = tb.build(tmp_path / "b.onnx", S, D, F, weights="inputs", heads=H)  # 128 / 4: heads of 32 columns
    rewritten = rewrite(to_linalg(read_model(model), get_target("sm_90a"), str(model)), "b")
    batched = [c.gemm for c in rewritten.calls if c.gemm.batched]
    assert [(g.batch, g.m, g.n, g.k) for g in batched] == [(H, S, D // H, S)]  # P·V
    left, = rewritten.left
    assert left.startswith(f"linalg.batch_matmul tensor<{H}x{S}x{D // H}xf16>") and "K a multiple of 64" in left
