"""On the GPU machine: run each row softmax kernel of build.py's OUT/alone on seeded inputs and compare it with the
softmax of the same (rounded) inputs in float64; then time it, back to back. Writes one JSON line per shape.

    python results/h200/softmax/check.py OUT/alone ROWS.jsonl
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    folder, output = Path(argv[0]), Path(argv[1])
    if output.exists():
        print(f"{output} exists; give a new file (nothing is written over one).", file=sys.stderr)
        return 2
    rows = []
    for r, c, dtype in json.loads((folder / "shapes.json").read_text()):
        name = f"{r}x{c}x{dtype}"
        np_type = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
        x = (np.random.default_rng(r * 7 + c).standard_normal((r, c)) * 3).astype(np_type)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        config = rt.Config("cuda")
        ctx = rt.SystemContext(config=config)
        ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(folder / f"{name}.vmfb")))
        main_fn = ctx.modules.module["main"]
        device_x = rt.asdevicearray(config.device, x)
        got = np.asarray(main_fn(device_x).to_host()).astype(np.float64)
        ulp = 2.0 ** (-10 if dtype == "f16" else -7)
        err = np.abs(got - want) / np.maximum(np.abs(want), 2.0 ** -14)
        for _ in range(3):
            main_fn(device_x).to_host()
        calls = 0
        start = time.perf_counter()
        while time.perf_counter() - start < 1.0:
            result = main_fn(device_x)
            calls += 1
        result.to_host()
        per_call_us = (time.perf_counter() - start) / calls * 1e6
        row = {"shape": name, "max_rel_error": float(err.max()), "ulp": ulp, "correct": bool(err.max() <= 2 * ulp),
               "row_sums_max_dev": float(np.abs(got.sum(axis=1) - 1).max()), "per_call_us_host": per_call_us,
               "calls": calls}
        rows.append(row)
        print(json.dumps(row), flush=True)
    output.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
