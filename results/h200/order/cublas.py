"""torch.matmul (cuBLAS) on bf16 8192^3 NN and NT, a few calls each, for Nsight Compute to measure beside our
kernels (run.sh): DRAM bytes, L2 bytes, time, clock."""
import torch

a = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
for name, bb in (("nn", b), ("nt", b.t())):
    for _ in range(6):
        torch.matmul(a, bb)
torch.cuda.synchronize()
