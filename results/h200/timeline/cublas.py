"""torch.matmul (cuBLAS) on block a's products 4096x2048x2048 and 4096x2048x8192, f16 NN, a few calls each, for
Nsight Compute (run2.sh)."""
import torch

for k in (2048, 8192):
    a = torch.randn(4096, k, device="cuda").half()
    b = torch.randn(k, 2048, device="cuda").half()
    for _ in range(6):
        torch.matmul(a, b)
torch.cuda.synchronize()
