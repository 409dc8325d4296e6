"""The fused consumer's cheaper ops (`transforms.tail_math.lower`) give the bits of the model's own ops.

Oracle: an interpreter of the op tuples written here (each IEEE op of f16/bf16 computed exactly and rounded once to
its type, as the GPU's native f16 ops and f32 widening do; f32 ops in numpy's float32; a fused multiply-add
rounded once), and float64's math.erf correctly rounded to the type for the model's `math.erf`. The lowered ops and
the model's ops are both run through it for every one of the 65536 values of the type: the bits must agree."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from transforms import hopper, tail_math

TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _const(text: str):
    value, _, ty = text.rpartition(" : ")
    if value.startswith("0x"):
        dtype = np.uint32 if ty == "f32" else np.uint16
        return np.array([int(value, 16)], dtype=dtype).view(TYPES[ty])[0]
    return TYPES[ty](float(value))


def _rounded(values, ty):
    return np.asarray(values, dtype=np.float64).astype(TYPES[ty])


def run(ops, x):
    """What the ops compute on each element of x (an array of the tail's input type)."""
    results = []
    for name, operands, ty in ops:
        args = [x if o == "in" else results[o] if isinstance(o, int) else _const(o[1]) for o in operands]
        with np.errstate(all="ignore"):
            wide = [np.asarray(a) if np.asarray(a).dtype == bool else np.asarray(a).astype(np.float64) for a in args]
            if name == "arith.extf" or name == "arith.truncf":
                value = np.asarray(args[0]).astype(TYPES[ty])
            elif name in ("arith.addf", "arith.subf", "arith.mulf", "arith.divf"):
                op = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
                      "arith.divf": np.divide}[name]
                value = _rounded(op(wide[0], wide[1]), ty)
            elif name == "math.fma":
                value = _rounded(wide[0] * wide[1] + wide[2], ty)
            elif name == "math.sqrt":
                value = _rounded(np.sqrt(wide[0]), ty)
            elif name == "math.erf":  # the model's op: the correctly rounded erf
                value = _rounded(_erf(wide[0]), ty)
            elif name == "math.absf":
                value = _rounded(np.abs(wide[0]), ty)
            elif name == "math.copysign":
                value = _rounded(np.copysign(wide[0], wide[1]), ty)
            elif name == "arith.minimumf":  # IEEE 754-2019 minimum: NaN if either is
                value = _rounded(np.minimum(wide[0], wide[1]), ty)
            elif name == "arith.maximumf":
                value = _rounded(np.maximum(wide[0], wide[1]), ty)
            elif name == "arith.cmpf:ult":
                value = ~(wide[0] >= wide[1])  # unordered or less than
            elif name == "arith.cmpf:ugt":
                value = ~(wide[0] <= wide[1])  # unordered or greater than
            elif name == "arith.select":
                value = _rounded(np.where(args[0], wide[1], wide[2]), ty)
            else:
                raise AssertionError(f"the interpreter has no {name}")
        results.append(np.broadcast_to(value, x.shape))
    return results[-1]


def every(ty):
    return np.arange(65536, dtype=np.uint16).view(TYPES[ty])


def same_bits(a, b):
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return (a.view(np.uint16) == b.view(np.uint16)) | nan


# the Gelu as IREE's ONNX importer writes it (tests/unit/test_hopper_model.py reads these from a real block)
def gelu(ty):
    c = lambda v: ("const", f"{v:e} : {ty}")  # noqa: E731
    return (("math.sqrt", (c(2.0),), ty), ("arith.divf", ("in", 0), ty), ("math.erf", (1,), ty),
            ("arith.addf", (2, c(1.0)), ty), ("arith.mulf", (3, c(0.5)), ty), ("arith.mulf", ("in", 4), ty))


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_the_lowered_gelu_gives_the_bits_of_the_models_ops_on_every_value(ty):
    ops = gelu(ty)
    low = tail_math.lower(ops, ty)
    names = [name for name, _, _ in low]
    assert "math.erf" not in names and "arith.divf" not in names and "math.sqrt" not in names
    assert names.count("math.fma") == 12  # the erf polynomial
    x = every(ty)
    assert same_bits(run(low, x), run(ops, x)).all()


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_erf_alone_is_the_correctly_rounded_erf_of_every_value_nan_kept(ty):
    ops = (("math.erf", ("in",), ty),)
    low = tail_math.lower(ops, ty)
    x = every(ty)
    got = run(low, x)
    assert same_bits(got, run(ops, x)).all()
    wide = x.astype(np.float32)
    assert np.isnan(got[np.isnan(wide)].astype(np.float32)).all()
    assert (got[wide == np.inf].astype(np.float32) == 1).all() and (got[wide == -np.inf].astype(np.float32) == -1).all()
    # the module's own f32 evaluation of the polynomial (what its docstring's claim rests on) agrees too
    assert same_bits(tail_math.erf_f32(wide).astype(TYPES[ty]), got).all()


def test_erf_in_f32_is_left_to_iree():
    ops = (("math.erf", ("in",), "f32"),)
    assert tail_math.lower(ops, "f32") == ops  # the polynomial is accurate to 16-bit types only


def test_a_division_whose_reciprocal_product_differs_somewhere_stays_a_division():
    # x / 14 in f16: f32(x) · f32(1/14) rounds differently from x / 14 for some x (found by the check itself;
    # x / 3 and every divisor in [1, 2) are exact)
    assert not tail_math.reciprocal_is_exact(14.0, "f16") and tail_math.reciprocal_is_exact(3.0, "f16")
    ops = (("arith.divf", ("in", ("const", "1.400000e+01 : f16")), "f16"),)
    assert tail_math.lower(ops, "f16") == ops
    x = every("f16")
    exact = (x.astype(np.float64) / 14).astype(np.float16)
    product = (x.astype(np.float32) * np.float32(1 / 14)).astype(np.float16)
    assert not same_bits(exact, product).all()  # the check's answer, seen directly
    # a power of two's reciprocal is exact: a product
    assert [n for n, _, _ in tail_math.lower((("arith.divf", ("in", ("const", "4.000000e+00 : f16")), "f16"),),
                                             "f16")] == ["arith.extf", "arith.mulf", "arith.truncf"]


def test_a_division_of_a_constant_by_the_element_stays():
    ops = (("arith.divf", (("const", "1.000000e+00 : f16"), "in"), "f16"),)
    assert tail_math.lower(ops, "f16") == ops


def test_constants_fold_to_the_rounded_value_and_the_last_op_stays_an_op():
    ops = (("math.sqrt", (("const", "2.000000e+00 : f16"),), "f16"),
           ("arith.mulf", ("in", 0), "f16"))
    low = tail_math.lower(ops, "f16")
    assert low == (("arith.mulf", ("in", ("const", "0x3DA8 : f16")), "f16"),)  # sqrt(2) in f16: 1.4140625
    assert float(_const("0x3DA8 : f16")) == 1.4140625
    # an all-constant last op is not folded away (the tail yields an op's result)
    last = (("arith.addf", (("const", "1.000000e+00 : f16"), ("const", "1.000000e+00 : f16")), "f16"),)
    assert tail_math.lower(last, "f16") == last


def test_the_kernel_applies_the_lowered_ops():
    tail = hopper.Elementwise(gelu("f16"))
    assert tail.lowered("f16") == tail_math.lower(gelu("f16"), "f16")


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_relu_and_scaling_tails_are_unchanged(ty):
    ops = (("arith.maximumf", ("in", ("const", f"0.000000e+00 : {ty}")), ty),
           ("arith.mulf", (0, ("const", f"2.000000e+00 : {ty}")), ty))
    assert tail_math.lower(ops, ty) == ops


@pytest.mark.parametrize("name", ["arith.minimumf", "arith.maximumf"])
def test_a_folded_minimum_or_maximum_keeps_nan(name):
    """IEEE 754-2019 minimum/maximum (MLIR's minimumf/maximumf) return NaN when an operand is NaN: folded too."""
    ops = ((name, (("const", "0x7E00 : f16"), ("const", "1.000000e+00 : f16")), "f16"),
           ("arith.addf", ("in", 0), "f16"))
    low = tail_math.lower(ops, "f16")
    assert len(low) == 1 and np.isnan(float(_const(low[0][1][1][1])))
    x = every("f16")
    assert same_bits(run(low, x), run(ops, x)).all() and np.isnan(run(low, x).astype(np.float32)).all()
