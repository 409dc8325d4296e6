"""Whole models on the Hopper kernels (`pipelines.hopper_model`, issue 33): the transformer block's contractions
become calls of Hopper dispatches, the importer's rounding fused, K read as stored for Q·Kᵀ; what the kernels do not
take stays with IREE, each with its reason; the rewritten program compiles to one Hopper kernel per distinct
contraction beside IREE's own dispatches for the rest.

Oracles: the block as tools/transformer_block.py defines it (eight products of known sizes and operands, Q·Kᵀ's B
the K projection as stored), the PTX of the compiled program read here (entries, their parameters), and hand-written
linalg programs for each reason a contraction is left."""

from __future__ import annotations

import re
import subprocess

import pytest

from pipelines.compiler import iree_compile_path
from pipelines.hopper_model import FUNCTION_PREFIX, rewrite
from pipelines.model_input import read_model, to_linalg
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import ProblemError

onnx = pytest.importorskip("onnx")  # the test extra installs it

from tools import transformer_block  # noqa: E402

S, D, F = 256, 128, 512
SM90 = get_target("sm_90a")


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    folder = tmp_path_factory.mktemp("block")
    path = transformer_block.build(folder / "block.onnx", S, D, F, "inputs")
    return to_linalg(read_model(path), SM90, str(path))


def test_every_product_of_the_block_is_a_hopper_call_with_its_rounding_fused(block):
    model = rewrite(block, "block")
    got = [(c.gemm.m, c.gemm.n, c.gemm.k, c.gemm.layout, c.gemm.epilogue.kind, c.gemm.dtype) for c in model.calls]
    # X·Wq, X·Wk, X·Wv; Q·Kᵀ reading K (S×D) as stored: NT; P·V; ·Wo; ·W1; ·W2: each rounded to f16 by the importer
    assert got == [(S, D, D, "nn", "truncf", "f16")] * 3 + [(S, S, D, "nt", "truncf", "f16"), (S, D, S, "nn", "truncf",
                   "f16"), (S, D, D, "nn", "truncf", "f16"), (S, F, D, "nn", "truncf", "f16"),
                   (S, D, F, "nn", "truncf", "f16")]
    assert model.left == ()
    # equal products share one function; five distinct ones
    assert [c.function for c in model.calls] == [FUNCTION_PREFIX + str(i) for i in (0, 0, 0, 1, 2, 0, 3, 4)]
    text = model.text
    assert "linalg.matmul" not in text and text.count("func.call @" + FUNCTION_PREFIX) == 8
    # Q·Kᵀ's call takes the K projection's call result itself (the transpose is left without a user)
    calls = re.findall(rf"(%\w+) = func\.call @({FUNCTION_PREFIX}\d+)\((%\w+), (%\w+)\)", text)
    k_projection = calls[1][0]
    assert calls[3][1] == FUNCTION_PREFIX + "1" and calls[3][3] == k_projection
    # the eight roundings of the products are gone from the program (fused); the other truncf (the softmax's, the
    # Gelu's) stay
    program = lambda t: t.split("hal.executable.source")[0]  # noqa: E731
    assert program(block).count("arith.truncf") - program(text).count("arith.truncf") == 8
    assert "math.erf" in program(text)  # the Gelu, which the kernels do not fuse


def test_the_rewritten_block_compiles_to_one_hopper_kernel_per_distinct_product(block, tmp_path):
    model = rewrite(block, "block")
    source = tmp_path / "hopper.mlir"
    source.write_text(model.text)
    dump = tmp_path / "dump"
    done = subprocess.run([str(iree_compile_path()), str(source), *SM90.compile_flags,
                           f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "m.vmfb")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = "\n".join(p.read_text() for p in dump.glob("*.ptx"))
    entries = re.findall(r"\.entry (\w+)\(", ptx)
    hopper_entries = sorted(e for e in entries if e.startswith(FUNCTION_PREFIX))
    assert hopper_entries == [FUNCTION_PREFIX + str(i) for i in range(5)]
    # beside them, IREE's own kernels: the softmax and the Gelu, and no product
    others = [e for e in entries if not e.startswith(FUNCTION_PREFIX)]
    assert len(others) == 2 and any("softmax" in e for e in others) and not any("matmul" in e for e in others)
    for call in {c.function: c for c in model.calls}.values():
        hopper.check_ptx(ptx, call.gemm, call.schedule, entry=call.function)


MATMUL = """func.func @f(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %c0: tensor<{m}x{n}xf32>)
    -> tensor<{m}x{n}xf32> {{
  %zero = arith.constant {fill} : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>)
    outs({outs} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}"""


def test_a_lone_product_keeps_its_f32_result():
    model = rewrite(MATMUL.format(m=256, n=128, k=64, fill="0.0", outs="%init"), "one")
    call, = model.calls
    assert (call.gemm.layout, call.gemm.epilogue.kind, call.gemm.out_dtype) == ("nn", "none", "f32")


@pytest.mark.parametrize("m, n, k, fill, outs, reason", [
    (256, 128, 60, "0.0", "%init", "K must be a multiple of 8"),
    (256, 100, 64, "0.0", "%init", "needs N a multiple of 8"),
    (256, 128, 64, "1.0", "%init", "does not start from a fill of 0.0"),
    (256, 128, 64, "0.0", "%c0", "does not start from a fill of 0.0"),
])
def test_what_the_kernels_do_not_take_is_left_with_its_reason(m, n, k, fill, outs, reason):
    with pytest.raises(ProblemError, match="take none of its contractions") as err:
        rewrite(MATMUL.format(m=m, n=n, k=k, fill=fill, outs=outs), "one")
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_a_left_contraction_is_named_beside_the_taken_ones():
    text = MATMUL.format(m=256, n=128, k=64, fill="0.0", outs="%init").replace(
        "  return %r", "  %s = linalg.matmul ins(%a, %b : tensor<256x64xf16>, tensor<64x128xf16>) outs(%c0 : "
        "tensor<256x128xf32>) -> tensor<256x128xf32>\n  %t = arith.addf %r, %s : tensor<256x128xf32>\n  return %t")
    model = rewrite(text, "two")
    assert len(model.calls) == 1 and len(model.left) == 1 and "fill of 0.0" in model.left[0]
    assert model.text.count("linalg.matmul") == 1
