"""The decode row's products in PyTorch (cuBLAS) for Nsight Compute: 16x8192 @ 8192x8192 bf16, NN (B stored K x N)
or NT (B stored N x K, passed transposed), inputs from torch.empty (no kernel launched before the products), `--calls`
products. With --read: also the time of a plain read of B (B.sum in float32, CUDA events)."""
import argparse
import json

import torch

p = argparse.ArgumentParser()
p.add_argument("layout", choices=("nn", "nt"))
p.add_argument("--calls", type=int, default=8)
p.add_argument("--read", action="store_true")
a = p.parse_args()
x = torch.empty(16, 8192, dtype=torch.bfloat16, device="cuda")
b = torch.empty(8192, 8192, dtype=torch.bfloat16, device="cuda")
operand = b if a.layout == "nn" else b.t()
for _ in range(a.calls):
    torch.matmul(x, operand)
torch.cuda.synchronize()
if a.read:
    b.normal_()
    times = []
    for _ in range(50):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b.sum(dtype=torch.float32)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    times.sort()
    print(json.dumps({"read_us_median": times[len(times) // 2], "bytes": b.numel() * 2,
                      "read_GBps": b.numel() * 2 / times[len(times) // 2] / 1e3}))
