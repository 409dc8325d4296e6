"""Each kernel's GPU time and the gap to the next kernel, back to back as the runner times them, from CUPTI (the
PyTorch profiler traces every kernel of the process, IREE's too): the plan's cases through IREE's runtime (its
vmfb's dispatch repeated as compiled, `--calls` calls) and cuBLAS on the same problem (torch.matmul, `--calls` x the
repeat count calls). Prints one JSON line per case and side: median kernel µs, median gap to the next kernel's start
(negative where the next started before this one ended), median start-to-start period."""
import argparse
import json
import statistics

import iree.runtime as rt
import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

p = argparse.ArgumentParser()
p.add_argument("plan")
p.add_argument("--calls", type=int, default=5)
p.add_argument("--random", action="store_true", help="inputs standard normal rounded to bf16 (the runner's), not ones")
a = p.parse_args()
plan = json.load(open(f"{a.plan}/plan.json"))


def summary(label: str, events: list, repeat: int = 0) -> dict:
    events = sorted(events, key=lambda e: e["ts"])
    calls = {}
    if repeat:  # IREE: calls of `repeat` dispatches each; the GPU span of a call and the gap to the next call
        gemms = [e for e in events if not e["name"].startswith("Memcpy")]
        chunks = [gemms[i:i + repeat] for i in range(0, len(gemms), repeat)]
        spans = [c[-1]["ts"] + c[-1]["dur"] - c[0]["ts"] for c in chunks]
        between = [n[0]["ts"] - (c[-1]["ts"] + c[-1]["dur"]) for c, n in zip(chunks, chunks[1:])]
        calls = {"call_span_us": spans, "between_calls_us": between,
                 "span_per_dispatch_us": statistics.median(spans) / repeat}
    events = events[len(events) // 10:]  # the first tenth: warm-up
    durs = [e["dur"] for e in events]
    gaps = [n["ts"] - (e["ts"] + e["dur"]) for e, n in zip(events, events[1:])]
    period = [n["ts"] - e["ts"] for e, n in zip(events, events[1:])]
    return {"label": label, "kernels": len(events), "names": sorted({e["name"][:60] for e in events}),
            "kernel_us": statistics.median(durs), "gap_us": statistics.median(gaps),
            "period_us": statistics.median(period), **calls}


def kernels(prof) -> list:
    out = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            out.append({"name": e.name, "ts": e.time_range.start, "dur": e.time_range.elapsed_us()})
    return out


config = rt.Config("cuda")
for case in plan["cases"]:
    if case["status"] != "ok":
        continue
    g = case["problem"]
    m, n, k = g["m"], g["n"], g["k"]
    repeat = case.get("repeat", 200)
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, open(f"{a.plan}/{case['vmfb']}", "rb").read()))
    dev = config.device
    views = []
    for shape in ((m, k), (k, n) if g["layout"] == "nn" else (n, k)):
        host = np.ones(shape, dtype=np.uint16) * 0x3F80  # bf16 1.0
        if a.random:  # float32 standard normal, its upper 16 bits (bf16 rounded toward zero)
            host = (np.random.default_rng(0).standard_normal(shape, dtype=np.float32).view(np.uint32) >> 16) \
                .astype(np.uint16)
        views.append(dev.allocator.allocate_buffer_copy(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                                        allowed_usage=rt.BufferUsage.DEFAULT, device=dev,
                                                        buffer=host, element_type=rt.HalElementType.BFLOAT_16))
    fn = ctx.modules.module["gemm"]
    fn(*views)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.calls):
            out = fn(*views)
            out.to_host()
    print(json.dumps({**summary(f"ours {m}x{n}x{k} {g['layout']}", kernels(prof), repeat), "random": a.random,
                      "schedule": case["schedule"][:60]}))
    make = torch.randn if a.random else torch.ones
    x = make(m, k, dtype=torch.bfloat16, device="cuda")
    w = make(k, n, dtype=torch.bfloat16, device="cuda")
    operand = w if g["layout"] == "nn" else make(n, k, dtype=torch.bfloat16, device="cuda").t()
    for _ in range(20):
        torch.matmul(x, operand)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.calls * repeat):
            torch.matmul(x, operand)
        torch.cuda.synchronize()
    print(json.dumps({**summary(f"cublas {m}x{n}x{k} {g['layout']}", kernels(prof)), "random": a.random}), flush=True)
