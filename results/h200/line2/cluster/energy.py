"""Joules per product under a sustained run (an exploration script kept as the record): each plan case of FOLDER's
variants (subfolders) and cuBLAS (torch.matmul) on the same problem, in turn, ROUNDS rounds: SECONDS of back-to-back
calls after a second of warm-up, the board's energy counter (NVML's total energy consumption, mJ) read before and
after, the SM clock sampled every 20 ms. Inputs random normals. One JSON line per run on stdout:

    python3 results/h200/line2/cluster/energy.py FOLDER VARIANT... [--seconds 5] [--rounds 2] [--problems N]
"""
import argparse
import ctypes
import json
import threading
import time
from pathlib import Path

import iree.runtime as rt
import ml_dtypes
import numpy as np
import torch

p = argparse.ArgumentParser()
p.add_argument("folder", type=Path)
p.add_argument("variants", nargs="+")
p.add_argument("--seconds", type=float, default=5.0)
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--problems", type=int, default=0, help="the plan's first PROBLEMS problems only (0: all)")
a = p.parse_args()

nvml = ctypes.CDLL("libnvidia-ml.so.1")
nvml.nvmlInit_v2()
handle = ctypes.c_void_p()
nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))


def energy_mj() -> int:
    value = ctypes.c_ulonglong()
    assert nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value)) == 0
    return value.value


def sm_clock() -> int:
    value = ctypes.c_uint()
    nvml.nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(value))  # NVML_CLOCK_SM
    return value.value


def measure(step, products_per_step):
    """Warm up for a second, then run `step` for SECONDS: (products, seconds, joules, mean SM clock MHz)."""
    end = time.time() + 1.0
    while time.time() < end:
        step()
    clocks, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            clocks.append(sm_clock())
            time.sleep(0.02)
    sampler = threading.Thread(target=sample)
    sampler.start()
    e0, t0, n = energy_mj(), time.time(), 0
    while time.time() - t0 < a.seconds:
        step()
        n += products_per_step
    t1, e1 = time.time(), energy_mj()
    stop.set()
    sampler.join()
    return n, t1 - t0, (e1 - e0) / 1e3, sum(clocks) / max(1, len(clocks))


DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
plans = {v: json.loads((a.folder / v / "plan.json").read_text()) for v in a.variants}
problems = [c for c in plans[a.variants[0]]["cases"] if c["status"] == "ok"][:a.problems or None]
for round_ in range(a.rounds):
    for first in problems:
        g = first["problem"]
        rng = np.random.default_rng(0)
        x = rng.standard_normal((g["m"], g["k"]), dtype=np.float32).astype(DT[g["dtype"]])
        y = rng.standard_normal((g["k"], g["n"]) if g["layout"] == "nn" else (g["n"], g["k"]),
                                dtype=np.float32).astype(DT[g["dtype"]])
        runs = []
        dtype = torch.float16 if g["dtype"] == "f16" else torch.bfloat16
        tx = torch.from_numpy(x.astype(np.float32)).cuda().to(dtype)
        ty = torch.from_numpy(y.astype(np.float32)).cuda().to(dtype)
        ty = ty if g["layout"] == "nn" else ty.t()
        repeat = first["repeat"]

        def cublas(tx=tx, ty=ty, repeat=repeat):
            for _ in range(repeat):
                torch.matmul(tx, ty)
            torch.cuda.synchronize()
        runs.append(("cublas", cublas))
        for v in a.variants:
            case = next(c for c in plans[v]["cases"] if c["problem"] == g and c["status"] == "ok")
            config = rt.Config(device=rt.get_device("cuda"))
            context = rt.SystemContext(config=config)
            context.add_vm_module(rt.VmModule.copy_buffer(context.instance,
                                                          (a.folder / v / case["vmfb"]).read_bytes()))
            fn = context.modules.module[case["function"]]
            da, db = (rt.asdevicearray(config.device, t) for t in (x, y))
            assert case["repeat"] == repeat
            # the program's sync function returns once its dispatches are done (IREE's default ABI waits on
            # its fence), so calls run back to back without reading C back
            runs.append((v, lambda fn=fn, da=da, db=db: fn(da, db)))
        for name, step in runs:
            n, seconds, joules, clock = measure(step, repeat)
            print(json.dumps({"round": round_, "problem": f"{g['m']}x{g['n']}x{g['k']} {g['layout']}",
                              "dtype": g["dtype"], "kernel": name, "products": n, "seconds": round(seconds, 3),
                              "us_per_product": round(seconds / n * 1e6, 1), "joules_per_product":
                              round(joules / n, 4), "watts": round(joules / seconds, 1),
                              "sm_mhz": round(clock)}), flush=True)
        del tx, ty
        torch.cuda.empty_cache()
