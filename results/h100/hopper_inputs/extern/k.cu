#include <cuda.h>
#include <cstdint>
// (a) IREE ABI: bindings as pointers, then i32 push constants. Tensor map lives in global memory (binding 2).
extern "C" __global__ void __launch_bounds__(128, 1) tma_wgmma_probe(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
    const CUtensorMap* __restrict__ tmapA, float* __restrict__ C, int k_tiles) {
  __shared__ alignas(1024) uint16_t sA[128 * 64];
  __shared__ alignas(8) uint64_t bar;
  uint32_t sa = (uint32_t)__cvta_generic_to_shared(sA), sb = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb));
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(tmapA) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;" :: "r"(sb));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sa), "l"(tmapA), "r"(0), "r"(blockIdx.y * 128), "r"(sb) : "memory");
  }
  __syncthreads();
  asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n@!p bra W;\n}" :: "r"(sb));
  uint64_t desc = ((sa & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
  float d[4] = {0, 0, 0, 0};
  asm volatile("wgmma.fence.sync.aligned;");
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, 1, 1, 1, 0, 0;"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(desc), "l"(desc));
  asm volatile("wgmma.commit_group.sync.aligned;");
  asm volatile("wgmma.wait_group.sync.aligned 0;");
  C[blockIdx.x * 128 + threadIdx.x] = d[0] + d[1] + d[2] + d[3] + (float)k_tiles;
}
// (b) CUDA-native ABI: tensor map by value as a __grid_constant__ param (what IREE's launcher cannot pass).
extern "C" __global__ void tma_grid_constant(const __grid_constant__ CUtensorMap tmapA, float* C) {
  __shared__ alignas(1024) uint16_t sA[128 * 64];
  __shared__ alignas(8) uint64_t bar;
  uint32_t sa = (uint32_t)__cvta_generic_to_shared(sA), sb = (uint32_t)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sb));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;" :: "r"(sb));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(sa), "l"(&tmapA), "r"(0), "r"(0), "r"(sb) : "memory");
  }
  __syncthreads();
  C[threadIdx.x] = (float)sA[threadIdx.x];
}
