"""torch.matmul (cuBLAS) on the multi-head block's Q·Kᵀ, 16 products of 4096x4096x128, f16 NN, a few calls, for
Nsight Compute (run3.sh)."""
import torch

a = torch.randn(16, 4096, 128, device="cuda").half()
b = torch.randn(16, 128, 4096, device="cuda").half()
for _ in range(8):
    torch.matmul(a, b)
torch.cuda.synchronize()
