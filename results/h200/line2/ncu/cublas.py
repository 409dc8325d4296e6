"""torch.matmul (cuBLAS) on an MxNxK bf16/f16 problem, NN (B stored K x N) or NT (B stored N x K, passed
transposed), C in the input type: `--calls` products on torch.empty inputs (no other kernel launched first), or with
--seconds, back-to-back products for that long (for sampling the GPU's clock and power meanwhile)."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("shape")
p.add_argument("layout", choices=("nn", "nt"))
p.add_argument("--dtype", default="bf16")
p.add_argument("--calls", type=int, default=4)
p.add_argument("--seconds", type=float, default=0.0)
a = p.parse_args()
m, n, k = (int(v) for v in a.shape.split("x"))
dt = {"bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
x = torch.empty(m, k, dtype=dt, device="cuda")
b = torch.empty(k, n, dtype=dt, device="cuda") if a.layout == "nn" else torch.empty(n, k, dtype=dt, device="cuda").t()
if a.seconds:
    x.normal_(), b.normal_()
    end = time.time() + a.seconds
    while time.time() < end:
        for _ in range(20):
            torch.matmul(x, b)
        torch.cuda.synchronize()
else:
    for _ in range(a.calls):
        torch.matmul(x, b)
    torch.cuda.synchronize()
