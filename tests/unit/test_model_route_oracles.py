"""A model's contractions as the model route reads them, on non-square shapes where a swap of M and N shows.

- Each contraction of a linalg program is read as the GEMM it computes: its sizes and layout are checked against
  the op's own operand types, and its product, interpreted in float64 from the program (the emulator's reference
  interpreter), against numpy's product of the operands as that GEMM's layout says they are stored.
- The codegen library's rule for a contraction whose operand the program transposes (`routes.model`): the
  transpose is a dispatch of its own moving that operand once more, a fixed cost that the product's size along the
  dimension the operand lacks must pay for. A transposed A (M x K) is paid for by N, a transposed B (K x N) by M;
  below CODEGEN_MIN_KEPT the product is left to compilation_info. The shapes have M and N on opposite sides of
  that bound, so the answer changes if the rule reads the wrong one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from iree.compiler import ir

from pipelines.emulator.interpret import Interpreter
from pipelines.named import get_pipeline
from pipelines.routes.codegen import CODEGEN_MIN_KEPT
from pipelines.routes.model import plan_library
from pipelines.targets import get_target
from transforms.problem import gemms_from_mlir, parse_module

MAPS = {  # loops (m, n, k)
    "nn": ("(d0, d2)", "(d2, d1)"),
    "nt": ("(d0, d2)", "(d1, d2)"),
    "tn": ("(d2, d0)", "(d2, d1)"),
}


def generic_program(m: int, n: int, k: int, layout: str, dtype: str = "f16") -> str:
    a_map, b_map = MAPS[layout]
    a = f"{k}x{m}" if layout == "tn" else f"{m}x{k}"
    b = f"{n}x{k}" if layout == "nt" else f"{k}x{n}"
    return f"""
#a = affine_map<(d0, d1, d2) -> {a_map}>
#b = affine_map<(d0, d1, d2) -> {b_map}>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @main(%A: tensor<{a}x{dtype}>, %B: tensor<{b}x{dtype}>) -> tensor<{m}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{m}x{n}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %C = linalg.generic {{indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%A, %B : tensor<{a}x{dtype}>, tensor<{b}x{dtype}>) outs(%init : tensor<{m}x{n}xf32>) {{
  ^bb0(%x: {dtype}, %y: {dtype}, %acc: f32):
    %xf = arith.extf %x : {dtype} to f32
    %yf = arith.extf %y : {dtype} to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }} -> tensor<{m}x{n}xf32>
  return %C : tensor<{m}x{n}xf32>
}}
"""


SHAPES = [(48, 80, 32), (80, 48, 32), (16, 96, 64)]


@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_each_contraction_is_read_as_the_product_it_computes(m, n, k, layout):
    with ir.Context(), ir.Location.unknown():
        module = parse_module(generic_program(m, n, k, layout), "the model")
        (op, gemm), = gemms_from_mlir(module, "the model")
        a_type, b_type = (ir.RankedTensorType(v.type) for v in list(op.operands)[:2])
        assert (gemm.m, gemm.n, gemm.k, gemm.layout) == (m, n, k, layout)
        assert (gemm.a_shape, gemm.b_shape) == (tuple(a_type.shape), tuple(b_type.shape))
        rng = np.random.default_rng(m + n + k)
        a = rng.integers(-3, 4, gemm.a_shape).astype(np.float64)
        b = rng.integers(-3, 4, gemm.b_shape).astype(np.float64)
        (value, _), = Interpreter(module, "main").run([a, b])
    stored = {"nn": (a, b), "nt": (a, b.T), "tn": (a.T, b)}[gemm.layout]
    np.testing.assert_array_equal(value, stored[0] @ stored[1])
    assert value.shape == (gemm.m, gemm.n)


def transposed_program(m: int, n: int, k: int, operand: str | None) -> str:
    """C = A·B (f16, NN as the program states the product), with A (or B) made by a linalg.transpose of an argument
    stored the other way round; None: no transpose."""
    a_arg = f"{k}x{m}" if operand == "A" else f"{m}x{k}"
    b_arg = f"{n}x{k}" if operand == "B" else f"{k}x{n}"
    lines = [f"func.func @main(%a0: tensor<{a_arg}xf16>, %b0: tensor<{b_arg}xf16>) -> tensor<{m}x{n}xf32> {{"]
    for name, stored, shape in (("a", a_arg, f"{m}x{k}"), ("b", b_arg, f"{k}x{n}")):
        if operand == name.upper():
            lines += [f"  %{name}e = tensor.empty() : tensor<{shape}xf16>",
                      f"  %{name} = linalg.transpose ins(%{name}0 : tensor<{stored}xf16>) "
                      f"outs(%{name}e : tensor<{shape}xf16>) permutation = [1, 0]"]
    a, b = ("%a" if operand == "A" else "%a0"), ("%b" if operand == "B" else "%b0")
    lines += ["  %zero = arith.constant 0.0 : f32",
              f"  %empty = tensor.empty() : tensor<{m}x{n}xf32>",
              f"  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>",
              f"  %c = linalg.matmul ins({a}, {b} : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>) "
              f"outs(%init : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>",
              f"  return %c : tensor<{m}x{n}xf32>", "}"]
    return "\n".join(lines) + "\n"


SMALL, LARGE = CODEGEN_MIN_KEPT // 2, CODEGEN_MIN_KEPT * 2


@pytest.mark.parametrize("operand", ["A", "B", None])
@pytest.mark.parametrize("m, n", [(SMALL, LARGE), (LARGE, SMALL), (LARGE, LARGE)])
def test_a_transposed_operand_is_paid_for_by_the_dimension_it_lacks(m, n, operand):
    k = 256
    target = get_target("sm_80")
    plan, passed_over = plan_library(transposed_program(m, n, k, operand), target, get_pipeline("codegen").choose)
    name = f"{m}x{n}x{k} nn f16"
    paying = {"A": n, "B": m, None: None}[operand]  # A is M x K: its transpose is paid for by N; B's by M
    left = paying is not None and paying < CODEGEN_MIN_KEPT
    assert (name in passed_over) == left, passed_over
    assert ([g.shape_name for g, _ in plan.library] == [f"{m}x{n}x{k}"]) == (not left)
    if left:
        reason = passed_over[name]
        assert f"its {operand} is transposed by the program" in reason
        assert f"{'N' if operand == 'A' else 'M'}={paying}" in reason


@pytest.mark.slow
@pytest.mark.parametrize("operand", ["A", "B"])
def test_a_transposed_operand_of_a_non_square_product_compiles_to_the_right_product(tmp_path, operand):
    """Through the spec route (gfx942): IREE folds the program's transpose into the contraction's dispatch (a TN or
    NT GEMM), the spec's matcher takes that dispatch with M and N as the program has them, and the emulated kernel
    matches the float64 interpretation of the program itself."""
    from pipelines.cli import main
    from pipelines.emulator import emulate_gemm

    m, n, k = 128, 384, 256
    source = tmp_path / "model.mlir"
    source.write_text(transposed_program(m, n, k, operand))
    out = tmp_path / "out"
    assert main(["compile", "--input", str(source), "--target", "gfx942", "--pipeline", "auto", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    (problem,) = report["problems"]
    assert (problem["m"], problem["n"], problem["k"]) == (m, n, k) and report["verified"]
    assert problem["layout"] == {"A": "tn", "B": "nt"}[operand]
    result = emulate_gemm(out)
    assert result.passed, result.summary()
