"""The float64 reference every result is checked against, and the tolerance it is checked with.

A leaf shared by the GPU-side runner and the CPU emulator: numpy and ml_dtypes only (torch, when the runner has a
GPU, is passed in as the array library), no compiler and no runtime import.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


def dtype_family(dtype: str) -> str:
    """Peaks and tuned schedules are per input family: "fp8" or "16bit" (f16 and bf16)."""
    return "fp8" if dtype.startswith("f8") else "16bit"

NUMPY_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
               "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
               "f8E5M2": ml_dtypes.float8_e5m2, "f32": np.float32}


def relative_tolerance(k: int) -> float:
    """Allowed max |C - C64| / max |C64|. Inputs are exact in the element type and products are exact in f32,
    so the error is f32 accumulation over K terms: about sqrt(K)·2^-24 on random data; this leaves a margin of
    ~50× while a dropped K tile or a misread layout is off by 1e-2 or more."""
    return 1e-4 * math.sqrt(max(k, 1024) / 1024)


def output_dtype(problem: dict) -> str:
    """The type C is stored in: f32, or the input type for the truncf epilogue."""
    return problem["dtype"] if problem["epilogue"]["kind"] == "truncf" else "f32"


def result_tolerance(problem: dict) -> float:
    """`relative_tolerance` of the problem's K, plus the rounding of C to its stored type: at most half a unit in
    the last place of its significand, relative to the value (2^-8 for bf16's 8 significant bits, 2^-11 for f16's
    11), and so relative to the largest value."""
    stored = output_dtype(problem)
    rounding = 0.0 if stored == "f32" else 0.5 * float(ml_dtypes.finfo(NUMPY_TYPES[stored]).eps)
    return relative_tolerance(problem["k"]) + rounding


def float64_result(problem: dict, operands: list, swap, maximum, erf, zero):
    """C (and the epilogue) of `problem` (a Gemm as a dict) over float64 operands, written once for any array
    library: `swap` transposes the last two axes, `maximum`, `erf` and `zero` are that library's."""
    a, b = operands[0], operands[1]
    a = swap(a) if problem["layout"] == "tn" else a
    b = swap(b) if problem["layout"] == "nt" else b
    acc = a @ b
    epilogue = problem["epilogue"]
    if epilogue["kind"] == "alpha-beta":
        return epilogue["alpha"] * acc + epilogue["beta"] * operands[2]
    if epilogue["kind"] == "bias-relu":
        return maximum(acc + operands[2], zero)
    if epilogue["kind"] == "bias-gelu":
        x = acc + operands[2]
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    return acc
