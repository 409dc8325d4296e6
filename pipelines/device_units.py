"""The compute-unit count of the GPU a command will run its kernels on, for the split rule
(`pipelines.named.split_plan`): asked of the device's driver where the command has a --device (bench) and the
target's driver can be asked (`Target.asks_compute_units`), else the target table's (`Target.units`). A target
names an instruction set, not a chip: PTX for sm_80 is JIT-compiled by the driver for whatever NVIDIA GPU runs it,
and an H100 has 132 SMs where the A100 of the table has 108.

The NVIDIA targets' driver is asked through ctypes on libcuda.so.1, as `pipelines.tensormap` reaches it: `cuInit`,
`cuDeviceGet` for the --device ordinal (`cuda` is 0, `cuda://1` is 1), `cuDeviceGetAttribute` of
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT (16 in cuda.h) and `cuDeviceGetName`; no context is created. The AMD
targets are not asked: each describes chips of one count (MI300X/MI325X 304 CUs, MI350X/MI355X 256, Strix Halo
40), so the table's count is the device's. A test injects a count by replacing `QUERY`.
"""

from __future__ import annotations

import ctypes
from typing import Callable

from .targets import ComputeUnits, Target

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16


def _ask_driver(ordinal: int) -> tuple[int, str] | None:
    """(SM count, device name) of CUDA device `ordinal`, or None where the driver is absent or refuses."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, count, name = ctypes.c_int(), ctypes.c_int(), ctypes.create_string_buffer(256)
    calls = (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(device), ordinal)),
             ("cuDeviceGetAttribute", (ctypes.byref(count), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device)),
             ("cuDeviceGetName", (name, len(name), device)))
    for call, args in calls:
        if getattr(driver, call)(*args) != 0:
            return None
    return count.value, name.value.decode(errors="replace")


QUERY: Callable[[int], tuple[int, str] | None] = _ask_driver


def device_units(devices: list[str], target: Target) -> ComputeUnits:
    """The compute units of the --device GPUs: the smallest count among them (a plan runs on each), named; the
    target's where there is no device, the target's driver is not asked, a device is not named by its ordinal, or
    the driver does not answer."""
    found = []
    for device in devices if target.asks_compute_units else ():
        driver, _, path = device.partition("://")
        answer = QUERY(int(path or 0)) if driver in target.device_drivers and (not path or path.isdigit()) else None
        if answer is None:
            return target.units()
        found.append((answer[0], f"{device}: {answer[1]}"))
    if not found:
        return target.units()
    count = min(c for c, _ in found)
    return ComputeUnits(count, "device", ", ".join(dict.fromkeys(name for c, name in found if c == count)))
