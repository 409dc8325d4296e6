"""Numerics: GEMMs compiled for the CPU (llvm-cpu, local-task) against a float64 numpy reference.

Inputs are drawn in float64 and rounded to the element type first, so the reference sees exactly the values the
kernel sees; what remains is f32 accumulation (and the epilogue's f32 math), hence one relative tolerance per
input type. GPU schedules do not apply on the CPU: this checks the linalg program and its epilogues.
"""

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import iree.runtime as rt

from pipelines import flow
from pipelines.targets import TARGETS
from transforms.problem import Epilogue, Gemm, input_shapes

NUMPY_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
               "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
               "f8E5M2": ml_dtypes.float8_e5m2}
# Relative to max |reference|: f32 accumulation of exactly representable products.
TOLERANCE = {"f16": 2e-6, "bf16": 2e-6, "f8E4M3FNUZ": 2e-6, "f8E5M2FNUZ": 2e-6, "f8E4M3FN": 2e-6, "f8E5M2": 2e-6}


def reference(gemm: Gemm, a, b, extra):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if gemm.layout == "tn":
        a64 = np.swapaxes(a64, -1, -2)
    if gemm.layout == "nt":
        b64 = np.swapaxes(b64, -1, -2)
    acc = a64 @ b64
    kind = gemm.epilogue.kind
    if kind == "alpha-beta":
        return gemm.epilogue.alpha * acc + gemm.epilogue.beta * extra.astype(np.float64)
    if kind == "bias-relu":
        return np.maximum(acc + extra, 0.0)
    if kind == "bias-gelu":
        x = acc + extra
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return acc


def run_on_cpu(gemm: Gemm, folder: Path):
    flow.compile_job(flow.prepare(flow.Job(TARGETS["cpu"], "default", (gemm,), (None,))), folder)
    rng = np.random.default_rng(7)
    shapes = input_shapes(gemm)
    a = rng.standard_normal(shapes[0]).astype(NUMPY_TYPES[gemm.dtype])
    b = rng.standard_normal(shapes[1]).astype(NUMPY_TYPES[gemm.dtype])
    extra = rng.standard_normal(shapes[2]).astype(np.float32) if len(shapes) > 2 else None
    config = rt.Config("local-task")
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, (folder / "gemm.vmfb").read_bytes()))
    args = [a, b] + ([extra] if extra is not None else [])
    return np.asarray(context.modules.module["gemm"](*args).to_host()), reference(gemm, a, b, extra)


CASES = [
    Gemm(256, 256, 256, "bf16", "nn"),
    Gemm(320, 448, 192, "bf16", "nt"),
    Gemm(100, 72, 130, "f16", "tn"),
    Gemm(16, 1024, 512, "bf16", "nt"),
    Gemm(96, 80, 64, "bf16", "nn", batch=3),
    Gemm(64, 96, 128, "f8E4M3FNUZ", "nt"),
    Gemm(64, 96, 128, "f8E5M2FNUZ", "nn"),
    Gemm(64, 96, 128, "f8E4M3FN", "nt"),
    Gemm(64, 96, 128, "f8E5M2", "nn"),
    Gemm(130, 66, 70, "bf16", "nn", epilogue=Epilogue("alpha-beta", 2.0, 0.5)),
    Gemm(130, 66, 70, "f16", "nt", epilogue=Epilogue("bias-relu")),
    Gemm(130, 66, 70, "bf16", "nt", epilogue=Epilogue("bias-gelu")),
    Gemm(48, 40, 56, "bf16", "nt", batch=2, epilogue=Epilogue("bias-gelu")),
]


@pytest.mark.parametrize("gemm", CASES, ids=lambda g: f"{g.shape_name}-{g.dtype}-{g.layout}-{g.epilogue.kind}")
def test_cpu_matches_float64(tmp_path, gemm):
    got, want = run_on_cpu(gemm, tmp_path / "out")
    assert got.shape == want.shape
    error = np.abs(got - want).max() / max(1.0, np.abs(want).max())
    assert error <= TOLERANCE[gemm.dtype], f"relative error {error:.2e}"


def test_reference_catches_a_wrong_layout(tmp_path):
    """The check has teeth: reading B as if it were not transposed is far outside the tolerance."""
    gemm = Gemm(64, 64, 64, "bf16", "nt")
    got, want = run_on_cpu(gemm, tmp_path / "out")
    rng = np.random.default_rng(7)  # the same draws run_on_cpu made
    a = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    misread = reference(gemm.with_(layout="nn"), a, b, None)
    assert np.abs(got - misread).max() / np.abs(want).max() > 1e-2
