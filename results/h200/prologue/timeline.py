"""Run gen.py's instrumented kernels on the GPU (an exploration script kept as the record): each case called 30
times through the IREE runtime (waited calls, random normal inputs), the last call's maps scratch read back and its
per-workgroup event words (min and max `%globaltimer` ns of each event) written out relative to the kernel's first
entry, with the span and a summary (medians over the workgroups). cuBLAS's time for the same problem (torch.matmul,
single waited calls timed by CUDA events, median of 30) beside it. One JSON line per case on stdout:

    python3 results/h200/prologue/timeline.py FOLDER
"""
import json
import statistics
import sys
from pathlib import Path

import iree.runtime as rt
import ml_dtypes
import numpy as np

folder = Path(sys.argv[1])
manifest = json.loads((folder / "manifest.json").read_text())
events = manifest["events"]
DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
for case in manifest["cases"]:
    rng = np.random.default_rng(0)
    m, n, k = case["m"], case["n"], case["k"]
    a = rng.standard_normal((m, k), dtype=np.float32).astype(DT[case["dtype"]])
    b_shape = (k, n) if case["layout"] == "nn" else (n, k)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(DT[case["dtype"]])
    config = rt.Config(device=rt.get_device("cuda"))
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, (folder / case["vmfb"]).read_bytes()))
    main = context.modules.module["main"]
    da, db = (rt.asdevicearray(config.device, x) for x in (a, b))
    for _ in range(30):
        c, maps = main(da, db)
    words = np.asarray(maps.to_host()).view(np.uint64)
    probe = words[case["words"]:].reshape(case["grid"], len(events), 2).astype(np.int64)
    start = int(probe[:, 0, 0].min())
    rel = {e: {"min": (probe[:, i, 0] - start).tolist(), "max": (probe[:, i, 1] - start).tolist()}
           for i, e in enumerate(events)}
    span = int(probe[:, events.index("exit"), 1].max() - start)
    summary = {}
    entry = probe[:, 0, 0]
    for i, e in enumerate(events):
        summary[e + "_first_us"] = statistics.median(((probe[:, i, 0] - entry) / 1e3).tolist())
        summary[e + "_last_us"] = statistics.median(((probe[:, i, 1] - entry) / 1e3).tolist())
    summary["entry_spread_us"] = float((entry.max() - entry.min()) / 1e3)
    vendor = None
    try:
        import torch
        dtype = torch.float16 if case["dtype"] == "f16" else torch.bfloat16
        ta = torch.from_numpy(a.astype(np.float32)).cuda().to(dtype)
        tb = torch.from_numpy(b.astype(np.float32)).cuda().to(ta.dtype)
        tb = tb if case["layout"] == "nn" else tb.t()
        times = []
        for _ in range(30):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.matmul(ta, tb)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        vendor = statistics.median(times[5:])
    except Exception as err:  # noqa: BLE001 (the timeline stands without it)
        vendor = f"no cuBLAS time: {err}"
    print(json.dumps({"case": case["name"], "schedule": case["schedule"], "span_us": span / 1e3,
                      "cublas_single_call_us": vendor, "summary": summary, "events": rel}), flush=True)
