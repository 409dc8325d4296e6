#translation = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [128, 1, 1] subgroup_size = 32, {gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = 0, no_reduce_shared_memory_bank_conflicts = false>}>
#compilation = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_BF16>, promote_operands = [0, 1], reduction = [0, 0, 4], subgroup = [4, 8, 0], workgroup = [128, 128, 0]}>, translation_info = #translation>
module {
  func.func @gemm(%arg0: tensor<8192x8192xbf16>, %arg1: tensor<8192x8192xbf16>) -> tensor<8192x8192xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8192x8192xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
    %2 = linalg.matmul {compilation_info = #compilation} ins(%arg0, %arg1 : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%1 : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
    return %2 : tensor<8192x8192xf32>
  }
}
