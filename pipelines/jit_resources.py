"""Registers, spills and occupancy of a compiled CUDA kernel as this machine's driver JIT-compiles its PTX:
`pipelines inspect --jit FOLDER` on the GPU machine.

IREE 3.13 embeds PTX that the driver compiles on first use, so the register count and spills the GPU actually runs
with are only known where the GPU is. For a folder written by `pipelines compile` (PTX in `dump/`, shared memory and
threads in `report.json`), the kernel with the most MMA instructions is loaded through libcuda with a verbose JIT
log: registers per thread, local (spill) bytes, the JIT's own last log lines, and how many workgroups fit on one SM.
Needs only libcuda (no toolkit, no torch).
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

from transforms.errors import UserError

# CUjit_option and CUfunction_attribute values from cuda.h.
JIT_INFO_LOG_BUFFER, JIT_INFO_LOG_BUFFER_SIZE_BYTES, JIT_LOG_VERBOSE = 3, 4, 12
ATTR_LOCAL_SIZE_BYTES, ATTR_NUM_REGS, ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 3, 4, 8
LOG_BYTES = 1 << 16
ENTRY = ".visible .entry "  # a PTX kernel's first line


class CudaError(UserError, RuntimeError):
    """The CUDA driver refused a step; the message names the step and the driver's words."""


def _check(cuda, result: int, what: str) -> None:
    if result != 0:
        text = ctypes.c_char_p()
        cuda.cuGetErrorString(result, ctypes.byref(text))
        raise CudaError(f"{what} failed: {text.value.decode() if text.value else result}")


def kernel_resources(cuda, folder: Path) -> dict:
    report = json.loads((folder / "report.json").read_text())
    kernel = max(report["dispatches"], key=lambda d: d["mma_count"])
    ptx = (folder / report["files"]["dump"] / kernel["isa_file"]).read_bytes() + b"\0"
    name = next(line.split()[2].split("(")[0] for line in ptx.decode().splitlines()
                if line.startswith(ENTRY))
    log = ctypes.create_string_buffer(LOG_BYTES)
    options = (ctypes.c_int * 3)(JIT_INFO_LOG_BUFFER, JIT_INFO_LOG_BUFFER_SIZE_BYTES, JIT_LOG_VERBOSE)
    values = (ctypes.c_void_p * 3)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(LOG_BYTES), ctypes.c_void_p(1))
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    _check(cuda, cuda.cuModuleLoadDataEx(ctypes.byref(module), ptx, 3, options, values), f"loading {folder}")
    _check(cuda, cuda.cuModuleGetFunction(ctypes.byref(function), module, name.encode()), f"finding {name}")
    attributes = {}
    for key, attribute in (("registers", ATTR_NUM_REGS), ("local_bytes", ATTR_LOCAL_SIZE_BYTES)):
        value = ctypes.c_int()
        _check(cuda, cuda.cuFuncGetAttribute(ctypes.byref(value), attribute, function), key)
        attributes[key] = value.value
    shared, threads = report["lds_bytes"] or 0, kernel["workgroup_size"]
    _check(cuda, cuda.cuFuncSetAttribute(function, ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared), "shared memory")
    blocks = ctypes.c_int()
    _check(cuda, cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(blocks), function, threads,
                                                                  ctypes.c_size_t(shared)), "occupancy")
    cuda.cuModuleUnload(module)
    jit_log = [line for line in log.value.decode(errors="replace").splitlines() if line.strip()]
    return {"folder": str(folder), "schedule": report["schedule_summary"][0], "threads": threads,
            "shared_bytes": shared, **attributes, "workgroups_per_sm": blocks.value,
            "warps_per_sm": blocks.value * threads // 32, "jit_log": jit_log[-3:]}


def open_driver():
    """libcuda with a current context on GPU 0, or one sentence saying why not."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise CudaError("inspect --jit loads the PTX with the CUDA driver (libcuda.so.1), which this machine does "
                        "not have; run it where the GPU is.") from None
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _check(cuda, cuda.cuInit(0), "cuInit")
    _check(cuda, cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "context")
    _check(cuda, cuda.cuCtxSetCurrent(context), "context")
    return cuda


def jit_resources(folder: Path) -> dict:
    """`kernel_resources` of one compiled folder, with a driver of its own, or one sentence saying why not."""
    try:
        report = json.loads((folder / "report.json").read_text())
        kernel = max(report["dispatches"], key=lambda d: d["mma_count"])
        ptx = (folder / report["files"]["dump"] / kernel["isa_file"]).read_text()
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CudaError(f"{folder} is no folder `pipelines compile` wrote for a CUDA target ({err}).") from None
    if ENTRY not in ptx:
        raise CudaError(f"{folder} holds no PTX kernel (its ISA is not PTX); inspect --jit reads CUDA targets' "
                        "compiles.")
    return kernel_resources(open_driver(), folder)
