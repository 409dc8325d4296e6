"""Products storing C in attention's head layout inside whole models (`pipelines.hopper_model`, `head_stores`): the
multi-head block's Q, K and V projections store their heads themselves (split), P·V stores them joined back (join),
Q·Kᵀ reads K's heads as stored (NT), and the program's head transposes go.

Oracles: the multi-head block as tools/transformer_block.py defines it (its float64 reference), and CPU stand-ins for
the Hopper calls written here from the layouts' definitions (split: C (M×N) as H heads of N/H columns, H×M×w; join:
a batch of H products side by side, M×H·N) rather than from the kernels: the rewritten program, its calls replaced
by the stand-ins, compiled for the CPU and run, must give the block's result."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from pipelines.hopper_model import FUNCTION_PREFIX, rewrite
from pipelines.model_input import read_model, to_linalg
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import Epilogue, Gemm

onnx = pytest.importorskip("onnx")  # the test extra installs it

from tools import transformer_block as tb  # noqa: E402

# heads of 128 columns, every product of whole 128x256 tiles (the head stores take only those), P·V 128 wide
S, D, F, H = 256, 512, 512, 4
W = D // H


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    folder = tmp_path_factory.mktemp("heads")
    path = tb.build(folder / "b.onnx", S, D, F, "inputs", H)
    return to_linalg(read_model(path), get_target("sm_90a"), str(path))


def _program(text: str) -> str:
    """The rewritten function, its calls' private functions and executables left out."""
    return text[:text.index("  func.func private @")]


def test_the_projections_store_heads_and_p_v_joins_them_with_no_transpose_left(block):
    model = rewrite(block, "heads", fuse_tail=False, head_stores=True)
    got = [(c.gemm.shape_name, c.gemm.layout, c.schedule.store_heads) for c in model.calls]
    assert got == [(f"{S}x{D}x{D}", "nn", H)] * 3 + [(f"{H}x{S}x{S}x{W}", "nt", 0), (f"{H}x{S}x{W}x{S}", "nn", H),
                                                      (f"{S}x{D}x{D}", "nn", 0), (f"{S}x{F}x{D}", "nn", 0),
                                                      (f"{S}x{D}x{F}", "nn", 0)]
    assert all(c.schedule.tma_store for c in model.calls[:3] + model.calls[4:5])
    program = _program(model.text)
    # the projections' calls give the heads, H×S×w; Q·Kᵀ reads Q's and K's as they are (K: NT), P·V gives S×D
    calls = re.findall(rf"(%\w+) = (?:func\.)?call @({FUNCTION_PREFIX}\d+)\(([^)]*)\) : \([^)]*\) -> (tensor<[^>]+>)",
                       program)
    q, k, v = (c[0] for c in calls[:3])
    assert [c[3] for c in calls[:3]] == [f"tensor<{H}x{S}x{W}xf16>"] * 3
    assert calls[3][2] == f"{q}, {k}" and calls[4][2].endswith(f", {v}")
    assert calls[4][3] == f"tensor<{S}x{D}xf16>" and calls[5][2].startswith(f"{calls[4][0]}, ")
    # no transpose or reshape of heads reads anything but K's, whose transpose is left without a user
    transposes = re.findall(r"(%\w+) = linalg\.transpose ins\((%\w+)", program)
    assert [t[1] for t in transposes] == [k] and not re.search(rf"{transposes[0][0]}\b(?! =)", program)
    assert "tensor.expand_shape" not in program.split("row_softmax")[0] if "row_softmax" in program else True


def test_without_head_stores_the_transposes_stay(block):
    program = _program(rewrite(block, "plain", fuse_tail=False).text)
    assert program.count("linalg.transpose") == 4  # Q, K, V into heads, P·V's out of them


def test_heads_the_kernels_cannot_store_stay_with_their_transposes(tmp_path):
    # heads of 64 columns and P·V 64 wide: P·V's tiles are 128 columns (no join); the projections 128 x 256 (split)
    path = tb.build(tmp_path / "b.onnx", S, 256, F, "inputs", 4)
    model = rewrite(to_linalg(read_model(path), get_target("sm_90a"), str(path)), "narrow", fuse_tail=False,
                    head_stores=True)
    assert [c.schedule.store_heads for c in model.calls[:5]] == [4, 4, 4, 0, 0]
    assert _program(model.text).count("linalg.transpose") == 2  # K's, left without a user; P·V's back to S×D


def _standins(model) -> str:
    """Each Hopper call's private function computed in linalg from the layouts' definitions: C = A·B (B N×K for nt)
    rounded to f16, then split (M×N -> M×H×w -> H×M×w) or joined (H×M×w -> M×H×w -> M×H·w) as its schedule says."""
    out = []
    for call in {c.function: c for c in model.calls}.values():
        g, heads = call.gemm, call.schedule.store_heads
        lead = [g.batch] if g.batched else []
        dims = "x".join
        a_t = f"tensor<{dims(map(str, lead + [g.m, g.k]))}xf16>"
        b_shape = lead + ([g.n, g.k] if g.layout == "nt" else [g.k, g.n])
        b_t = f"tensor<{dims(map(str, b_shape))}xf16>"
        c_shape = lead + [g.m, g.n]
        c32, c16 = (f"tensor<{dims(map(str, c_shape))}x{t}>" for t in ("f32", "f16"))
        rank = len(c_shape)
        ids = ", ".join(f"d{i}" for i in range(rank))
        identity = f"affine_map<({ids}) -> ({ids})>"
        parallel = ", ".join(['"parallel"'] * rank)
        if g.layout == "nt":  # B N×K: its transpose, K×N
            bt_t = f"tensor<{dims(map(str, lead + [g.k, g.n]))}xf16>"
            perm = "0, 2, 1" if g.batched else "1, 0"
            b_read = f"""%bte = tensor.empty() : {bt_t}
    %bt = linalg.transpose ins(%b : {b_t}) outs(%bte : {bt_t}) permutation = [{perm}]"""
        else:
            bt_t, b_read = b_t, "%bt = arith.addf %zero, %zero : f32"  # (unused: B as it is)
        b_value = "%bt" if g.layout == "nt" else "%b"
        contraction = "linalg.batch_matmul" if g.batched else "linalg.matmul"
        body = f"""    %zero = arith.constant 0.0 : f32
    {b_read}
    %e = tensor.empty() : {c32}
    %init = linalg.fill ins(%zero : f32) outs(%e : {c32}) -> {c32}
    %p = {contraction} ins(%a, {b_value} : {a_t}, {bt_t}) outs(%init : {c32}) -> {c32}
    %h = tensor.empty() : {c16}
    %c = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = [{parallel}]}}
        ins(%p : {c32}) outs(%h : {c16}) {{
    ^bb0(%x: f32, %o: f16):
      %y = arith.truncf %x : f32 to f16
      linalg.yield %y : f16
    }} -> {c16}
"""
        result, ret = c16, "%c"
        if heads and not g.batched:  # split: M×N -> M×H×w -> H×M×w
            w = g.n // heads
            mhw, hmw = f"tensor<{g.m}x{heads}x{w}xf16>", f"tensor<{heads}x{g.m}x{w}xf16>"
            body += f"""    %x3 = tensor.expand_shape %c [[0], [1, 2]] output_shape [{g.m}, {heads}, {w}] : {c16}
        into {mhw}
    %te = tensor.empty() : {hmw}
    %t = linalg.transpose ins(%x3 : {mhw}) outs(%te : {hmw}) permutation = [1, 0, 2]
"""
            result, ret = hmw, "%t"
        elif heads:  # join: H×M×N -> M×H×N -> M×H·N
            mhn, joined = f"tensor<{g.m}x{heads}x{g.n}xf16>", f"tensor<{g.m}x{heads * g.n}xf16>"
            body += f"""    %te = tensor.empty() : {mhn}
    %t = linalg.transpose ins(%c : {c16}) outs(%te : {mhn}) permutation = [1, 0, 2]
    %j = tensor.collapse_shape %t [[0], [1, 2]] : {mhn} into {joined}
"""
            result, ret = joined, "%j"
        out.append(f"""  func.func private @{call.function}(%a: {a_t}, %b: {b_t}) -> {result} {{
{body}    return {ret} : {result}
  }}""")
    return "\n".join(out)


@pytest.mark.slow  # compiles the block for the CPU: the test command runs it, the fast tier does not
def test_the_rewritten_block_with_cpu_standins_for_its_calls_gives_the_blocks_result(tmp_path):
    from pipelines import model_runner
    from pipelines.compiler import iree_compile_path, run_patiently

    path = tb.build(tmp_path / "b.onnx", S, D, F, "inputs", H)
    text = to_linalg(read_model(path), get_target("sm_90a"), str(path))
    model = rewrite(text, "heads", fuse_tail=False, softmax=False, head_stores=True)
    assert sum(1 for c in model.calls if c.schedule.store_heads) == 4  # three splits, one join
    program = _program(model.text)
    program = re.sub(r"module attributes \{hal\.device\.targets = [^}]*\}", "module", program)
    (tmp_path / "cpu.mlir").write_text(program + _standins(model) + "\n}\n")
    run_patiently([iree_compile_path(), str(tmp_path / "cpu.mlir"), "--iree-hal-target-device=local",
                   "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic",
                   "-o", str(tmp_path / "cpu.vmfb")], check=True)
    tb.write_data(tmp_path / "data", S, D, F, heads=H)
    arrays, _, reference = model_runner.load_inputs(tmp_path / "data")
    value = model_runner.result(tmp_path / "cpu.vmfb", "block", "local-task", arrays)
    # f16 intermediates: f16's error (unit roundoff 4.9e-4); heads in the wrong place would be far off
    assert model_runner.relative_error(value, reference) < 1e-2


@pytest.mark.slow  # compiles the block twice for sm_90a: the test command runs it, the fast tier does not
def test_tune_model_stores_heads_by_default_leaves_iree_no_dispatch_and_verifies_every_kernel(tmp_path, capsys):
    import json

    from pipelines.cli import main

    path = tb.build(tmp_path / "b.onnx", S, D, F, "inputs", H)
    assert main(["tune-model", str(path), "--target", "sm_90a", "--pipeline", "hopper", "-o",
                 str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "model.json").read_text())
    assert summary["verified"] and summary["head_stores"] and summary["iree_dispatches"] == []
    assert sum(" in 4 heads" in c["schedule"] for c in summary["calls"]) == 4
    # the same model with --iree-transposes keeps IREE's four head transposes, and no kernel stores heads
    assert main(["tune-model", str(path), "--target", "sm_90a", "--pipeline", "hopper", "--iree-transposes", "-o",
                 str(tmp_path / "plain")]) == 0
    plain = json.loads((tmp_path / "plain" / "model.json").read_text())
    assert not plain["head_stores"] and len(plain["iree_dispatches"]) >= 3
    assert not any(" heads" in c["schedule"] for c in plain["calls"])


@pytest.mark.parametrize("present", [True, False])
def test_iree_transposes_with_iree_s_pipelines_is_one_sentence(tmp_path, capsys, present):
    """Refused before anything else is looked at: with the model there, and with it missing (the flag's sentence,
    not the missing file's, as for the other --pipeline hopper flags)."""
    from pipelines.cli import main

    path = tb.build(tmp_path / "b.onnx", S, D, F, "inputs", H) if present else tmp_path / "missing.onnx"
    assert main(["tune-model", str(path), "--target", "sm_90a", "--pipeline", "default", "--iree-transposes", "-o",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--iree-transposes is for --pipeline hopper" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_the_library_call_stores_heads_by_default_as_the_verb_does():
    """`tune_model_hopper` (what scripts call) defaults to the heads stored, as `tune-model` without
    --iree-transposes; `rewrite` (the rewrite alone) keeps them off unless asked."""
    import inspect

    from pipelines.hopper_model import tune_model_hopper
    assert inspect.signature(tune_model_hopper).parameters["head_stores"].default is True
    assert inspect.signature(rewrite).parameters["head_stores"].default is False


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(512, 1024, 256, "f16", "nn", epilogue=Epilogue("truncf")),
     replace(hopper.DEFAULT, tma_store=True, store_heads=8)),
    (Gemm(256, 128, 256, "f16", "nn", batch=4, epilogue=Epilogue("truncf")),
     replace(hopper.DEFAULT, block_n=128, tma_store=True, store_heads=4))])
def test_a_heads_kernel_stores_c_by_tma_alone(gemm, schedule):
    """Heads are stored from whole tiles only, so the kernel as emitted (before LLVM drops dead paths) has no other
    store of C: no guarded element stores, no 16-byte rows, only the bulk copies through C's map."""
    text = hopper.program(gemm, schedule)
    kernel = text[text.index("func.func @gemm()"):text.index("func.func @main")]
    assert "st.global" not in kernel and "memref.store" not in kernel
    # a warp's 16 fragment rows of the tile go out in boxes of STORE_BOX: (16 / rows) x (block_n / columns) copies
    rows, columns = hopper.STORE_BOX[1], hopper.STORE_BOX[0]
    assert kernel.count("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group") == \
        16 // rows * (schedule.block_n // columns)


MATMUL_HEADS = """func.func @f(%a: tensor<256x512xf16>, %b: tensor<512x512xf16>) -> {result} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x512xf16>, tensor<512x512xf16>) outs(%init : tensor<256x512xf32>)
    -> tensor<256x512xf32>
  %h = tensor.empty() : tensor<256x512xf16>
  %t = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%r : tensor<256x512xf32>) outs(%h : tensor<256x512xf16>) {{
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  }} -> tensor<256x512xf16>
{chain}
}}"""


@pytest.mark.parametrize("chain, result, taken", [
    # the importer's split: S×D -> S×H×w -> H×S×w
    ("""  %x = tensor.expand_shape %t [[0], [1, 2]] output_shape [256, 4, 128] : tensor<256x512xf16>
      into tensor<256x4x128xf16>
  %te = tensor.empty() : tensor<4x256x128xf16>
  %s = linalg.transpose ins(%x : tensor<256x4x128xf16>) outs(%te : tensor<4x256x128xf16>) permutation = [1, 0, 2]
  return %s : tensor<4x256x128xf16>""", "tensor<4x256x128xf16>", True),
    # rows split, not columns: S×D -> 64×4×D (its second dimension 4, as four heads' would be), moved: no heads
    ("""  %x = tensor.expand_shape %t [[0, 1], [2]] output_shape [64, 4, 512] : tensor<256x512xf16>
      into tensor<64x4x512xf16>
  %te = tensor.empty() : tensor<4x64x512xf16>
  %s = linalg.transpose ins(%x : tensor<64x4x512xf16>) outs(%te : tensor<4x64x512xf16>) permutation = [1, 0, 2]
  return %s : tensor<4x64x512xf16>""", "tensor<4x64x512xf16>", False),
    # columns split but not moved as heads ([0, 2, 1]: S×w×H)
    ("""  %x = tensor.expand_shape %t [[0], [1, 2]] output_shape [256, 4, 128] : tensor<256x512xf16>
      into tensor<256x4x128xf16>
  %te = tensor.empty() : tensor<256x128x4xf16>
  %s = linalg.transpose ins(%x : tensor<256x4x128xf16>) outs(%te : tensor<256x128x4xf16>) permutation = [0, 2, 1]
  return %s : tensor<256x128x4xf16>""", "tensor<256x128x4xf16>", False),
])
def test_only_the_heads_split_of_a_products_columns_is_stored_in_heads(chain, result, taken):
    model = rewrite(MATMUL_HEADS.format(result=result, chain=chain), "split", head_stores=True)
    call, = model.calls
    assert (call.schedule.store_heads == 4) is taken
    program = _program(model.text)
    assert ("linalg.transpose" in program) is not taken and ("tensor.expand_shape" in program) is not taken


BATCH_HEADS = """func.func @f(%a: tensor<4x256x256xf16>, %b: tensor<4x256x256xf16>) -> {result} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x256x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x256x256xf32>) -> tensor<4x256x256xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x256x256xf16>, tensor<4x256x256xf16>)
    outs(%init : tensor<4x256x256xf32>) -> tensor<4x256x256xf32>
  %h = tensor.empty() : tensor<4x256x256xf16>
  %t = linalg.generic {{indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}} ins(%r : tensor<4x256x256xf32>)
      outs(%h : tensor<4x256x256xf16>) {{
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  }} -> tensor<4x256x256xf16>
  %te = tensor.empty() : tensor<256x4x256xf16>
  %s = linalg.transpose ins(%t : tensor<4x256x256xf16>) outs(%te : tensor<256x4x256xf16>) permutation = [{perm}]
  %j = tensor.collapse_shape %s [[0], [1, 2]] : tensor<256x4x256xf16> into tensor<256x1024xf16>
  return %j : {result}
}}"""


@pytest.mark.parametrize("perm, taken", [("1, 0, 2", True), ("2, 0, 1", False)])
def test_only_the_heads_join_of_a_batch_is_stored_joined(perm, taken):
    """[1, 0, 2] puts product h's M×w at columns h·w of M rows; [2, 0, 1] (M = w here, so the types still fit) puts
    its columns along the rows: no head layout."""
    model = rewrite(BATCH_HEADS.format(result="tensor<256x1024xf16>", perm=perm), "join", head_stores=True)
    call, = model.calls
    assert (call.schedule.store_heads == 4) is taken
    assert ("linalg.transpose" in _program(model.text)) is not taken


RELU_THEN_SPLIT = MATMUL_HEADS.format(result="tensor<4x256x128xf16>", chain="""\
  %g = tensor.empty() : tensor<256x512xf16>
  %u = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%t : tensor<256x512xf16>) outs(%g : tensor<256x512xf16>) {
  ^bb0(%x: f16, %o: f16):
    %z = arith.constant 0.0 : f16
    %y = arith.maximumf %x, %z : f16
    linalg.yield %y : f16
  } -> tensor<256x512xf16>
  %x = tensor.expand_shape %u [[0], [1, 2]] output_shape [256, 4, 128] : tensor<256x512xf16>
      into tensor<256x4x128xf16>
  %te = tensor.empty() : tensor<4x256x128xf16>
  %s = linalg.transpose ins(%x : tensor<256x4x128xf16>) outs(%te : tensor<4x256x128xf16>) permutation = [1, 0, 2]
  return %s : tensor<4x256x128xf16>""")


def test_a_product_with_a_fused_consumer_keeps_its_heads_transpose():
    """A consumer fused into the store (a ReLU after the rounding) and then the heads' split: the kernel's heads
    store has no tail, so the product stores C plainly and the program's split stays."""
    model = rewrite(RELU_THEN_SPLIT, "relu-split", head_stores=True)
    call, = model.calls
    assert call.tail is not None and call.schedule.store_heads == 0
    program = _program(model.text)
    assert "linalg.transpose" in program and "tensor.expand_shape" in program
    # (without the consumer the same split is stored in heads: test_only_the_heads_split_..., its first case)


@pytest.mark.parametrize("chain, result", [
    ("  return %t : tensor<256x512xf16>", "tensor<256x512xf16>"),  # C returned as it is
    ("""  %x = tensor.expand_shape %t [[0], [1, 2]] output_shape [256, 4, 128] : tensor<256x512xf16>
      into tensor<256x4x128xf16>
  return %x : tensor<256x4x128xf16>""", "tensor<256x4x128xf16>"),  # split into heads' columns, then returned
])
def test_a_product_whose_c_ends_at_the_return_is_stored_plainly(chain, result):
    """The chains end at a return (an op with no result): no heads, and no error (tune-model stores heads by
    default, so every product's users are looked at)."""
    model = rewrite(MATMUL_HEADS.format(result=result, chain=chain), "returned", head_stores=True)
    call, = model.calls
    assert call.schedule.store_heads == 0
