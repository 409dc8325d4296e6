"""GPU timelines of block a, ours and PyTorch's, in one process (an exploration script kept as the record):
torch.profiler's CUDA activity trace (CUPTI, which records every kernel of the process, IREE's too) around CALLS
calls of our module through the IREE runtime's Python API and CALLS calls of the block under torch.compile, each
call waited for, each inside a `call_iree` / `call_torch` range (the host's view of the call). Writes OUT.json:
the kernels and the ranges in time order (name, start and duration in µs).

    python3 results/h200/timeline/trace.py DATA VMFB CALLS OUT.json
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

data, vmfb, calls, out = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
if out.exists():
    sys.exit(f"{out} exists")
import iree.runtime as rt  # noqa: E402

rt.flags.parse_flags("--cuda_async_allocations=false")
manifest = json.loads((data / "inputs.json").read_text())["inputs"]
arrays = [np.load(data / e["file"]) for e in manifest]
device = rt.get_device("cuda")
ctx = rt.SystemContext(config=rt.Config(device=device))
ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
fn = ctx.modules.module["block"]
dev_args = [rt.asdevicearray(device, a) for a in arrays]


def block(x, wq, wk, wv, wo, w1, w2):
    q, k, v = x @ wq, x @ wk, x @ wv
    p = torch.softmax((q @ k.T).float(), dim=-1).half()
    return F.gelu(((p @ v) @ wo) @ w1) @ w2


targs = [torch.from_numpy(a).cuda() for a in arrays]
compiled = torch.compile(block)
for _ in range(10):
    r = fn(*dev_args)
    r.to_host()
    compiled(*targs)
torch.cuda.synchronize()
marks = []
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                        torch.profiler.ProfilerActivity.CPU]) as prof:
    for name, call in (("iree", lambda: fn(*dev_args)), ("torch", lambda: (compiled(*targs), torch.cuda.synchronize()))):
        for _ in range(calls):
            with torch.profiler.record_function(f"call_{name}"):
                call()
prof.export_chrome_trace("/tmp/trace.json")
events = json.loads(Path("/tmp/trace.json").read_text())
events = events["traceEvents"] if isinstance(events, dict) else events
kernels = sorted((e for e in events if e.get("cat") == "kernel" or str(e.get("name", "")).startswith("call_")),
                 key=lambda e: e["ts"])
out.write_text(json.dumps([{"name": e["name"][:80], "ts": e["ts"], "dur": e["dur"], "cat": e.get("cat")}
                           for e in kernels]))
print(len(kernels), "kernels;", sum(1 for e in kernels if "hopper" in e["name"] or "softmax_0" in e["name"]), "of ours")
