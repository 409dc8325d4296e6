"""The stream-K synchronization check on the GPU (prepared for the next GPU session, not run yet): each case of
PLAN (gen_sync.py: one dispatch a call) called CALLS times, the inputs alternating between two seeds, every call's
C (read back) against its own product in float64 (torch, on the GPU). One JSON line per case on stdout: the largest
relative error over the calls and whether every call was within the runner's tolerance.

    python3 results/h200/line2/cluster/sync_check.py PLAN [--calls 20]
"""
import argparse
import json
from pathlib import Path

import iree.runtime as rt
import ml_dtypes
import numpy as np
import torch

from pipelines.reference import result_tolerance  # the runner's bound (PYTHONPATH: the repository root)

p = argparse.ArgumentParser()
p.add_argument("plan", type=Path)
p.add_argument("--calls", type=int, default=20)
a = p.parse_args()
plan = json.loads((a.plan / "plan.json").read_text())
for case in plan["cases"]:
    g = case["problem"]
    shapes = [tuple(s) for s in case["input_shapes"]]
    pairs = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        pairs.append([rng.standard_normal(s, dtype=np.float32).astype(ml_dtypes.bfloat16) for s in shapes])
    refs = []
    for x, y in pairs:
        tx = torch.from_numpy(x.astype(np.float32)).cuda().double()
        ty = torch.from_numpy(y.astype(np.float32)).cuda().double()
        refs.append(tx @ (ty if g["layout"] == "nn" else ty.t()))
    config = rt.Config(device=rt.get_device("cuda"))
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, (a.plan / case["vmfb"]).read_bytes()))
    fn = context.modules.module[case["function"]]
    devices = [[rt.asdevicearray(config.device, t) for t in pair] for pair in pairs]
    worst, ok = 0.0, True
    for call in range(a.calls):
        which = call % 2
        out = fn(*devices[which])
        c = torch.from_numpy(np.asarray(out.to_host()).astype(np.float32)).cuda().double()
        ref = refs[which]
        error = float(((c - ref).abs().max() / max(1.0, float(ref.abs().max()))).item())  # as the runner's
        worst = max(worst, error)
        ok = ok and error <= result_tolerance(g)
    print(json.dumps({"case": case["label"], "calls": a.calls, "max_rel_error": worst, "all_within": ok}),
          flush=True)
