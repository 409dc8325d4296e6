"""CUDA tensor maps (`CUtensorMap`, 128 bytes) as the CUDA driver encodes them (`cuTensorMapEncodeTiled` through
ctypes), on the GPU machine: the oracle the Hopper kernels' own maps, which each workgroup writes field by field
(`transforms.hopper`), are compared with byte by byte (results/h200/tensor-maps/probe.py).

Runtime side only: ctypes and numpy, no compiler.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from transforms.errors import UserError

# CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion values of cuda.h (CUDA 12.0 and later).
DATA_TYPES = {"f16": 6, "bf16": 9}
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
L2_PROMOTION_256B = 3
PLACEHOLDER_ADDRESS = 1 << 32  # 16-byte aligned; replaced on the device before any load


class TensorMapError(UserError, RuntimeError):
    """The CUDA driver is not there or refused a tensor map; one sentence."""


@functools.cache  # once per process: one context retain, not one per map
def _driver():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise TensorMapError("Hopper tensor maps need the CUDA driver (libcuda.so.1), which is not here.") from None
    # The encoder needs a current context: device 0's primary context (the one the IREE runtime and torch use).
    context = ctypes.c_void_p()
    for call, args in (("cuInit", (0,)), ("cuDevicePrimaryCtxRetain", (ctypes.byref(context), 0)),
                       ("cuCtxSetCurrent", (context,))):
        status = getattr(cuda, call)(*args)
        if status != 0:
            raise TensorMapError(f"{call} failed with CUDA error {status}.")
    return cuda


def encode(spec: dict, address: int = PLACEHOLDER_ADDRESS, l2_promotion: int = L2_PROMOTION_256B) -> np.ndarray:
    """One tensor map of `spec` (transforms.hopper.tensor_maps: dims innermost first, the row stride in bytes, box,
    dtype, swizzle bytes) as 16 × uint64."""
    cuda = _driver()
    rank = len(spec["dims"])
    out = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * rank)(*spec["dims"])
    strides = (ctypes.c_uint64 * (rank - 1))(spec["stride"])
    box = (ctypes.c_uint32 * rank)(*spec["box"])
    element_strides = (ctypes.c_uint32 * rank)(*([1] * rank))
    status = cuda.cuTensorMapEncodeTiled(out, ctypes.c_int(DATA_TYPES[spec["dtype"]]), ctypes.c_uint32(rank),
                                         ctypes.c_void_p(address), dims, strides, box, element_strides,
                                         ctypes.c_int(0), ctypes.c_int(SWIZZLES[spec["swizzle"]]),
                                         ctypes.c_int(l2_promotion), ctypes.c_int(0))
    if status != 0:
        raise TensorMapError(f"cuTensorMapEncodeTiled refused the {spec.get('operand', '')} map {spec['dims']} box "
                             f"{spec['box']} (CUDA error {status}).")
    return np.frombuffer(bytes(out), dtype=np.int64).copy()
