"""Cheaper forms of a fused consumer's ops in the 16-bit types, each proven to give the same bits (`lower`).

A model's Gelu after a contraction, as the ONNX importer writes it, is f16 ops on each element:
x · ((erf(x / sqrt(2)) + 1) · 0.5). IREE lowers `math.erf` to a polynomial with a correctly rounded f32 division
(`div.rn.f32`, a call-like sequence) and `arith.divf` to another; in the Hopper kernel's store these run on the
256 threads of the consumer warp groups only, and took more time than the kernel's products. Here:

- **Folding.** An op whose operands are all constants and whose result is correctly rounded by IEEE (add, sub,
  mul, div, sqrt, neg, abs, min, max) becomes a constant: computed in float64 and rounded once to its type, which is
  what the GPU computes (float64 holds ≥ 2p + 2 bits for p ≤ 24, so the one rounding equals the GPU's).
- **Division by a constant** in f16/bf16 becomes a product by the f32 reciprocal, rounded to the type, only where
  that gives the bits of the correctly rounded quotient for every one of the type's 65536 values (checked here,
  when the kernel is built; otherwise the division stays).
- **erf** in f16/bf16 becomes an odd polynomial in f32, `a · P(2·a²/Z − 1)` with `a` x clamped to [-2.75, 2.75]
  (by selects: NaN stays NaN; the sign comes with a), rounded to the type. P (degree 11, `ERF_POLY`)
  interpolates erf(√z)/√z at 200 Chebyshev nodes of [0, Z = 2.75²]; past 2.75, erf rounds to ±1 in both types.
  Rounded to f16 or bf16 it is the correctly rounded erf of every finite input (tests/unit/test_tail_math.py
  evaluates it in f32 as the GPU does, against float64's erf, for all 65536 values of each type): 12 fused
  multiply-adds, two compare-and-selects and no division.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

HALF = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}

ERF_CLAMP = np.float32(2.75)
ERF_SCALE = np.float32(2 / (float(ERF_CLAMP) * float(ERF_CLAMP)))  # z -> u = z · ERF_SCALE - 1 on [-1, 1]
# P's f32 coefficients, constant term first (bit patterns: exactly what the kernel multiplies by)
ERF_POLY = tuple(np.array([0x3F02DDA8, 0xBE789013, 0x3E21869B, 0xBDCE7270, 0x3D729178, 0xBD00991C, 0x3C76456A,
                           0xBBD3FC55, 0x3B1EAF2A, 0xBA63D9E9, 0x39C7F73C, 0xB8EED871], dtype=np.uint32)
                 .view(np.float32).tolist())

# ops computed exactly and rounded once: foldable to a constant
FOLDS = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
         "arith.maximumf": np.maximum, "arith.minimumf": np.minimum, "arith.negf": np.negative,
         "math.absf": np.abs, "math.sqrt": np.sqrt}
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}


def f32(value) -> tuple[str, str]:
    """An f32 constant operand, by its bits (no decimal rounding on the way)."""
    return ("const", f"0x{int(np.float32(value).view(np.uint32)):08X} : f32")


def _constant(operand) -> tuple[float, str] | None:
    """(value, type) of a ("const", "VALUE : TYPE") operand of a float type."""
    if not (isinstance(operand, tuple) and operand[0] == "const"):
        return None
    text, _, ty = operand[1].rpartition(" : ")
    if ty not in NUMPY:
        return None
    if text.startswith("0x"):
        bits = int(text, 16)
        return float(np.array([bits], dtype=np.uint32 if ty == "f32" else np.uint16).view(NUMPY[ty])[0]), ty
    return float(NUMPY[ty](float(text))), ty


def _half_constant(value: float, ty: str) -> tuple[str, str]:
    return ("const", f"0x{int(np.array([value], dtype=NUMPY[ty]).view(np.uint16)[0]):04X} : {ty}")


def _every(ty: str) -> np.ndarray:
    return np.arange(65536, dtype=np.uint16).view(HALF[ty])


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return bool(np.all((a.view(np.uint16) == b.view(np.uint16)) | nan))


@functools.lru_cache(maxsize=None)
def reciprocal_is_exact(divisor: float, ty: str) -> bool:
    """f(x) = round(f32(x) · f32(1 / divisor)) equals round(x / divisor) for all 65536 values x of `ty`."""
    x = _every(ty)
    with np.errstate(all="ignore"):
        exact = (x.astype(np.float64) / np.float64(divisor)).astype(HALF[ty])
        product = (x.astype(np.float32) * np.float32(1 / np.float64(divisor))).astype(HALF[ty])
    return _same_bits(exact, product)


def erf_f32(x: np.ndarray) -> np.ndarray:
    """The expansion's value in f32, each op rounded as the GPU rounds it (fma: one rounding of the exact value)."""
    def fma(a, b, c):
        return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        a = np.where(x >= ERF_CLAMP, ERF_CLAMP, np.where(x <= -ERF_CLAMP, -ERF_CLAMP, x))  # NaN kept
        u = fma(a * a, ERF_SCALE, np.float32(-1))
        p = np.full_like(u, ERF_POLY[-1])
        for c in ERF_POLY[-2::-1]:
            p = fma(p, u, np.float32(c))
        return (a * p).astype(np.float32)


@functools.lru_cache(maxsize=64)
def lower(ops: tuple, dtype: str) -> tuple:
    """`ops` (an `Elementwise`'s: (name, operands, type), an operand "in", an earlier op's index or a constant)
    with folding, division by a proven constant reciprocal and the erf polynomial applied; the same last result."""
    out: list = []
    refer: list = []  # old index -> how the lowered ops name its result (an index into `out` or a constant)

    def add(name: str, operands: tuple, ty: str):
        out.append((name, operands, ty))
        return len(out) - 1

    for position, (name, operands, ty) in enumerate(ops):
        args = tuple(refer[o] if isinstance(o, int) else o for o in operands)
        consts = [_constant(a) for a in args]
        last = position == len(ops) - 1  # the last op stays an op: it yields the tail's result
        known = [c for c in consts if c is not None and c[1] == ty]
        if name in FOLDS and ty in NUMPY and not last and len(known) == len(consts):
            with np.errstate(all="ignore"):
                value = NUMPY[ty](FOLDS[name](*[np.float64(c[0]) for c in known]))
            refer.append(f32(value) if ty == "f32" else _half_constant(float(value), ty))
            continue
        divisor = consts[1] if name == "arith.divf" and consts[0] is None else None
        if divisor is not None and ty in HALF and divisor[1] == ty and reciprocal_is_exact(divisor[0], ty):
            wide = add("arith.extf", (args[0],), "f32")
            product = add("arith.mulf", (wide, f32(1 / np.float64(divisor[0]))), "f32")
            refer.append(add("arith.truncf", (product,), ty))
            continue
        if name == "math.erf" and ty in HALF:
            x = add("arith.extf", (args[0],), "f32")
            # x clamped to [-2.75, 2.75] by two selects, NaN kept (ult, ugt: unordered or less, or greater); the
            # clamped value a times P is copysign(|a| · P, x) exactly (a product's rounding is symmetric in sign).
            # (Not arith.minimumf/maximumf: IREE lowers them to LLVM's minimumnum/maximumnum, which drop a NaN.)
            below = add("arith.select", (add("arith.cmpf:ult", (x, f32(ERF_CLAMP)), "i1"), x, f32(ERF_CLAMP)), "f32")
            a = add("arith.select", (add("arith.cmpf:ugt", (below, f32(-ERF_CLAMP)), "i1"), below, f32(-ERF_CLAMP)),
                    "f32")
            u = add("math.fma", (add("arith.mulf", (a, a), "f32"), f32(ERF_SCALE), f32(-1.0)), "f32")
            p: object = f32(ERF_POLY[-1])
            for c in ERF_POLY[-2::-1]:
                p = add("math.fma", (p, u, f32(c)), "f32")
            refer.append(add("arith.truncf", (add("arith.mulf", (a, p), "f32"),), ty))
            continue
        refer.append(add(name, args, ty))
    return tuple(out)
