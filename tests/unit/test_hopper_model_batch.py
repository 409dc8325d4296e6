"""Batches of products in whole models on the Hopper kernels (`pipelines.hopper_model`): a `linalg.batch_matmul` of
two 16-bit operands becomes a call of the batched Hopper dispatch, its rounding fused, B read as stored (K×N, or N×K
under a transpose of its last two dimensions), its rank-3 operands collapsed to the kernel's stacked rows around the
call; what the batched kernels do not take stays with IREE, with the reason.

Oracles: hand-written linalg programs whose sizes and operands are known here, and the stacking the batched kernel
reads (products' rows one after the other: A (B·M)×K, B (B·K)×N or (B·N)×K, C (B·M)×N)."""

from __future__ import annotations

import re

import pytest

from pipelines.hopper_model import FUNCTION_PREFIX, rewrite
from pipelines.routes.hopper import fitted
from transforms.problem import ProblemError

BATCH, M, N, K = 3, 200, 136, 192


def _program(b_type: str, prelude: str = "", consumer: str = "", result: str = "", k: int = K,
             b_arg: str = "") -> str:
    """func @f(A, B') computing a batch_matmul of A (BATCH×M×k) and `b_type` (after `prelude`, which may define %bt
    from %b), then `consumer` (which may define %t from the product %r; returned is `result` or %r)."""
    a = f"tensor<{BATCH}x{M}x{k}xf16>"
    c = f"tensor<{BATCH}x{M}x{N}xf32>"
    returned = result or c
    return f"""func.func @f(%a: {a}, %b: {b_arg or b_type}) -> {returned} {{
  %zero = arith.constant 0.0 : f32
{prelude}
  %e = tensor.empty() : {c}
  %init = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}
  %r = linalg.batch_matmul ins(%a, {'%bt' if prelude else '%b'} : {a}, {b_type}) outs(%init : {c}) -> {c}
{consumer}
  return {'%t' if consumer else '%r'} : {returned}
}}"""


def _map(body: str, into: str, rank: int = 3) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    return f"""{{indexing_maps = [{identity}, {identity}], iterator_types = [{', '.join(['"parallel"'] * rank)}]}}
    {body} -> {into}"""


ROUNDED = f"""  %h = tensor.empty() : tensor<{BATCH}x{M}x{N}xf16>
  %t = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) ->
      (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%r : tensor<{BATCH}x{M}x{N}xf32>) outs(%h : tensor<{BATCH}x{M}x{N}xf16>) {{
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  }} -> tensor<{BATCH}x{M}x{N}xf16>"""
F16 = f"tensor<{BATCH}x{M}x{N}xf16>"


def test_a_batch_matmul_becomes_one_batched_call_with_its_rounding_fused():
    model = rewrite(_program(f"tensor<{BATCH}x{K}x{N}xf16>", consumer=ROUNDED, result=F16), "batch")
    call, = model.calls
    g = call.gemm
    assert (g.batch, g.m, g.n, g.k, g.layout, g.epilogue.kind, g.out_dtype) == (BATCH, M, N, K, "nn", "truncf", "f16")
    assert call.schedule == fitted(g)  # the batch rule its first GPU run measured
    text = model.text
    program = text.split("func.func private")[0]
    assert "linalg.batch_matmul" not in text and "arith.truncf" not in program
    # the call takes A and B as the program holds them (its arguments) and gives the rounded rank-3 C
    assert re.search(rf"= call @{FUNCTION_PREFIX}0\(%arg0, %arg1\) : \(tensor<{BATCH}x{M}x{K}xf16>, "
                     rf"tensor<{BATCH}x{K}x{N}xf16>\) -> {F16}", program)
    # its function stacks the products' rows: A (B·M)×K, B (B·K)×N into the dispatch, C (B·M)×N out of it
    function = text[text.index(f"func.func private @{FUNCTION_PREFIX}0"):]
    function = function[:function.index("return")]
    assert f"into tensor<{BATCH * M}x{K}xf16>" in function and f"into tensor<{BATCH * K}x{N}xf16>" in function
    assert re.search(rf"tensor\.expand_shape %c \[\[0, 1\], \[2\]\] output_shape \[{BATCH}, {M}, {N}\] : "
                     rf"tensor<{BATCH * M}x{N}xf16> into {F16}", function)
    assert f"flow.dispatch @hopper_0::@{FUNCTION_PREFIX}0(" in function


TRANSPOSED = """  %bt_e = tensor.empty() : tensor<{shape}xf16>
  %bt = linalg.transpose ins(%b : tensor<{source}xf16>) outs(%bt_e : tensor<{shape}xf16>) permutation = [{perm}]"""


def test_a_batch_reading_the_transpose_of_its_last_two_dimensions_reads_b_as_stored_nt():
    prelude = TRANSPOSED.format(shape=f"{BATCH}x{K}x{N}", source=f"{BATCH}x{N}x{K}", perm="0, 2, 1")
    model = rewrite(_program(f"tensor<{BATCH}x{K}x{N}xf16>", prelude=prelude, consumer=ROUNDED, result=F16,
                             b_arg=f"tensor<{BATCH}x{N}x{K}xf16>"), "nt")
    call, = model.calls
    assert call.gemm.layout == "nt"
    assert re.search(rf"call @{FUNCTION_PREFIX}0\(%arg0, %arg1\) : \(tensor<{BATCH}x{M}x{K}xf16>, "
                     rf"tensor<{BATCH}x{N}x{K}xf16>\)", model.text)  # the transpose's input itself
    assert f"into tensor<{BATCH * N}x{K}xf16>" in model.text  # B stacked as (B·N)×K


def test_a_transpose_that_moves_the_batch_is_not_read_as_nt():
    # [1, 0, 2] of a K×B×N tensor gives B×K×N: the batch moved, the last two dimensions not swapped
    prelude = TRANSPOSED.format(shape=f"{BATCH}x{K}x{N}", source=f"{K}x{BATCH}x{N}", perm="1, 0, 2")
    model = rewrite(_program(f"tensor<{BATCH}x{K}x{N}xf16>", prelude=prelude, b_arg=f"tensor<{K}x{BATCH}x{N}xf16>"),
                    "moved")
    call, = model.calls
    operand = re.search(rf"call @{FUNCTION_PREFIX}0\(%arg0, (%\w+)\)", model.text).group(1)
    assert call.gemm.layout == "nn" and f"{operand} = linalg.transpose" in model.text


def test_a_batch_keeps_its_f32_product_without_a_rounding():
    call, = rewrite(_program(f"tensor<{BATCH}x{K}x{N}xf16>"), "f32").calls
    assert (call.gemm.batch, call.gemm.epilogue.kind, call.gemm.out_dtype) == (BATCH, "none", "f32")


def test_an_elementwise_tail_after_a_batchs_rounding_stays_with_iree():
    tail = ROUNDED + f"""
  %g = tensor.empty() : {F16}
  %t2 = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) ->
      (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%t : {F16}) outs(%g : {F16}) {{
  ^bb0(%x: f16, %o: f16):
    %y = arith.mulf %x, %x : f16
    linalg.yield %y : f16
  }} -> {F16}"""
    text = _program(f"tensor<{BATCH}x{K}x{N}xf16>", consumer=tail, result=F16).replace("return %t :", "return %t2 :")
    model = rewrite(text, "tail")
    call, = model.calls
    assert call.gemm.epilogue.kind == "truncf" and call.tail is None
    assert re.search(r"arith\.mulf (%\w+), \1 : f16", model.text.split("func.func private")[0])  # the square stays


def test_a_batch_of_nn_products_with_k_off_a_k_step_is_left_with_its_reason():
    with pytest.raises(ProblemError, match="take none of its contractions") as err:
        rewrite(_program(f"tensor<{BATCH}x32x{N}xf16>", k=32), "k32")
    assert "linalg.batch_matmul" in str(err.value) and "K a multiple of 64" in str(err.value)


def test_a_batch_of_one_keeps_its_rank_3_operands_around_the_call():
    """linalg.batch_matmul of one product: the call still passes rank-3 tensors, which its function collapses."""
    text = _program(f"tensor<{BATCH}x{K}x{N}xf16>", consumer=ROUNDED, result=F16).replace(f"{BATCH}x", "1x")
    model = rewrite(text, "one")
    call, = model.calls
    assert call.gemm.batch == 1
    signature = re.search(rf"func\.func private @{FUNCTION_PREFIX}0\(%a3: (tensor<[^>]+>), %b3: (tensor<[^>]+>)\) "
                          rf"-> \((tensor<[^>]+>)\)", model.text)
    assert signature.groups() == (f"tensor<1x{M}x{K}xf16>", f"tensor<1x{K}x{N}xf16>", f"tensor<1x{M}x{N}xf16>")
    assert re.search(rf"call @{FUNCTION_PREFIX}0\(%arg0, %arg1\) : \(tensor<1x{M}x{K}xf16>, tensor<1x{K}x{N}xf16>\)",
                     model.text)


@pytest.mark.parametrize("n, block_n", [(64, 128), (128, 128), (136, 256)])
def test_a_batch_of_narrow_products_gets_the_batch_rules_128_column_tile(n, block_n):
    """The batch rule measured on the GPU (results/h200/batch/run1): 128 columns where N is at most 128, else the
    shipped 128x256 tile."""
    text = _program(f"tensor<{BATCH}x{K}x{N}xf16>", consumer=ROUNDED, result=F16).replace(f"x{N}x", f"x{n}x") \
        .replace(f"x{N}xf", f"x{n}xf")
    call, = rewrite(text, "narrow").calls
    assert (call.gemm.n, call.schedule.block_n, call.schedule.block_m) == (n, block_n, 128)
