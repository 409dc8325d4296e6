"""Registers, spills and occupancy of compiled CUDA kernels as this machine's driver JIT-compiles their PTX.

IREE 3.13 embeds PTX that the driver compiles on first use, so the register count and spills the GPU actually
runs with are only known on the GPU machine. For each folder written by `pipelines compile` (PTX in `dump/`,
shared memory and threads in `report.json`), this loads the PTX through libcuda with a verbose JIT log and prints
one JSON line: registers per thread, local (spill) bytes, the JIT's own log line, and how many workgroups fit on
one SM. Needs only libcuda (no toolkit, no torch): `python tools/ptx_resources.py out/a out/b`.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

# CUjit_option and CUfunction_attribute values from cuda.h.
JIT_INFO_LOG_BUFFER, JIT_INFO_LOG_BUFFER_SIZE_BYTES, JIT_LOG_VERBOSE = 3, 4, 12
ATTR_LOCAL_SIZE_BYTES, ATTR_NUM_REGS, ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 3, 4, 8
LOG_BYTES = 1 << 16


class CudaError(RuntimeError):
    pass


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
                if line.startswith(".visible .entry "))
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


def main(folders: list[str]) -> int:
    cuda = ctypes.CDLL("libcuda.so.1")
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _check(cuda, cuda.cuInit(0), "cuInit")
    _check(cuda, cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "context")
    _check(cuda, cuda.cuCtxSetCurrent(context), "context")
    for folder in folders:
        try:
            print(json.dumps(kernel_resources(cuda, Path(folder))), flush=True)
        except (CudaError, OSError, KeyError, StopIteration) as err:
            print(json.dumps({"folder": folder, "error": str(err)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
