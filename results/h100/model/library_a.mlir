#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#translation = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @g0_codegen>
#translation1 = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @g1_codegen>
#translation2 = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @g2_codegen>
#translation3 = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @g3_codegen>
#translation4 = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @g4_codegen>
#translation5 = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [256, 1, 1] subgroup_size = 32>
module attributes {transform.with_named_sequence} {
  transform.named_sequence @g0_tile(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.fill"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["linalg.generic"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.iree.populate_workgroup_count_region_using_num_threads_slice %forall_op : (!transform.any_op) -> ()
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %0 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %2:3 = transform.iree.promote_operands %tiled_linalg_op [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %2#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_op_2, %forall_op_3 = transform.structured.tile_using_forall %fused_op num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %3 {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.scf.for_loop_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %3 : !transform.any_op
    %4 = transform.structured.vectorize_children_and_apply_patterns %3 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %4 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.fold_arith_extension
    } : !transform.any_op
    transform.apply_cse to %4 : !transform.any_op
    transform.iree.eliminate_empty_tensors %4 : (!transform.any_op) -> ()
    %5 = transform.iree.bufferize <target_gpu> %4 : (!transform.any_op) -> !transform.any_op
    transform.iree.forall_to_workgroup %5 : (!transform.any_op) -> ()
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] sync_after_distribution = false : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g0_accumulate(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.prepare_vector_to_mma
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.hoist_redundant_vector_transfers %0 : (!transform.any_op) -> !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %1 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g0_stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g0_synchronize(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    transform.iree.synchronize_loop %1 : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %0 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g0_mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g0_pipeline(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.transfer_to_scf full_unroll = true
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.create_async_groups %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4, use_mma_sync> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g0_cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g0_codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @g0_tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g0_cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g0_match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [2048] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [2048] : !transform.param<i64>
    %0 = transform.match.structured %arg0 : (!transform.any_op) -> !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      %1 = transform.match.structured.result %arg1[0] single : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %1 : !transform.any_op
    }
    transform.match.operation_name %0 ["iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer"] : !transform.any_op
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @g1_tile(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.fill"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["linalg.generic"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.iree.populate_workgroup_count_region_using_num_threads_slice %forall_op : (!transform.any_op) -> ()
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %0 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %2:3 = transform.iree.promote_operands %tiled_linalg_op [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %2#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_op_2, %forall_op_3 = transform.structured.tile_using_forall %fused_op num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %3 {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.scf.for_loop_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %3 : !transform.any_op
    %4 = transform.structured.vectorize_children_and_apply_patterns %3 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %4 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.fold_arith_extension
    } : !transform.any_op
    transform.apply_cse to %4 : !transform.any_op
    transform.iree.eliminate_empty_tensors %4 : (!transform.any_op) -> ()
    %5 = transform.iree.bufferize <target_gpu> %4 : (!transform.any_op) -> !transform.any_op
    transform.iree.forall_to_workgroup %5 : (!transform.any_op) -> ()
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] sync_after_distribution = false : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g1_accumulate(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.prepare_vector_to_mma
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.hoist_redundant_vector_transfers %0 : (!transform.any_op) -> !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %1 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g1_stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g1_synchronize(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    transform.iree.synchronize_loop %1 : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %0 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g1_mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g1_pipeline(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.transfer_to_scf full_unroll = true
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.create_async_groups %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4, use_mma_sync> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g1_cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g1_codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @g1_tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g1_cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g1_match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [2048] : !transform.param<i64>
    %0 = transform.match.structured %arg0 : (!transform.any_op) -> !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      %1 = transform.match.structured.result %arg1[0] single : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %1 : !transform.any_op
    }
    transform.match.operation_name %0 ["iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer"] : !transform.any_op
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @g2_tile(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.fill"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["linalg.generic"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.iree.populate_workgroup_count_region_using_num_threads_slice %forall_op : (!transform.any_op) -> ()
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %0 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %2:3 = transform.iree.promote_operands %tiled_linalg_op [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %2#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_op_2, %forall_op_3 = transform.structured.tile_using_forall %fused_op num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %3 {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.scf.for_loop_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %3 : !transform.any_op
    %4 = transform.structured.vectorize_children_and_apply_patterns %3 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %4 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.fold_arith_extension
    } : !transform.any_op
    transform.apply_cse to %4 : !transform.any_op
    transform.iree.eliminate_empty_tensors %4 : (!transform.any_op) -> ()
    %5 = transform.iree.bufferize <target_gpu> %4 : (!transform.any_op) -> !transform.any_op
    transform.iree.forall_to_workgroup %5 : (!transform.any_op) -> ()
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] sync_after_distribution = false : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g2_accumulate(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.prepare_vector_to_mma
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.hoist_redundant_vector_transfers %0 : (!transform.any_op) -> !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %1 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g2_stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g2_synchronize(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    transform.iree.synchronize_loop %1 : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %0 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g2_mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g2_pipeline(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.transfer_to_scf full_unroll = true
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.create_async_groups %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4, use_mma_sync> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g2_cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g2_codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @g2_tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g2_cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g2_match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [2048] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [4096] : !transform.param<i64>
    %0 = transform.match.structured %arg0 : (!transform.any_op) -> !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      %1 = transform.match.structured.result %arg1[0] single : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %1 : !transform.any_op
    }
    transform.match.operation_name %0 ["iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer"] : !transform.any_op
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @g3_tile(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.fill"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["linalg.generic"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.iree.populate_workgroup_count_region_using_num_threads_slice %forall_op : (!transform.any_op) -> ()
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %0 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %2:3 = transform.iree.promote_operands %tiled_linalg_op [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %2#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_op_2, %forall_op_3 = transform.structured.tile_using_forall %fused_op num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %3 {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.scf.for_loop_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %3 : !transform.any_op
    %4 = transform.structured.vectorize_children_and_apply_patterns %3 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %4 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.fold_arith_extension
    } : !transform.any_op
    transform.apply_cse to %4 : !transform.any_op
    transform.iree.eliminate_empty_tensors %4 : (!transform.any_op) -> ()
    %5 = transform.iree.bufferize <target_gpu> %4 : (!transform.any_op) -> !transform.any_op
    transform.iree.forall_to_workgroup %5 : (!transform.any_op) -> ()
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] sync_after_distribution = false : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g3_accumulate(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.prepare_vector_to_mma
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.hoist_redundant_vector_transfers %0 : (!transform.any_op) -> !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %1 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g3_stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g3_synchronize(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    transform.iree.synchronize_loop %1 : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %0 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g3_mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g3_pipeline(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.transfer_to_scf full_unroll = true
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.create_async_groups %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4, use_mma_sync> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g3_cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g3_codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @g3_tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g3_cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g3_match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [8192] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [2048] : !transform.param<i64>
    %0 = transform.match.structured %arg0 : (!transform.any_op) -> !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      %1 = transform.match.structured.result %arg1[0] single : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %1 : !transform.any_op
    }
    transform.match.operation_name %0 ["iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer"] : !transform.any_op
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @g4_tile(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["linalg.fill"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["linalg.generic"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %tiled_op, %forall_op = transform.structured.tile_using_forall %1 tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.iree.populate_workgroup_count_region_using_num_threads_slice %forall_op : (!transform.any_op) -> ()
    %fused_op, %new_containing_op = transform.structured.fuse_into_containing_op %0 into %forall_op : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_linalg_op, %loops = transform.structured.tile_using_for %tiled_op tile_sizes [0, 0, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %2:3 = transform.iree.promote_operands %tiled_linalg_op [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled_op_0, %forall_op_1 = transform.structured.tile_using_forall %2#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %tiled_op_2, %forall_op_3 = transform.structured.tile_using_forall %fused_op num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %3 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %3 {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.scf.for_loop_canonicalization
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %3 : !transform.any_op
    %4 = transform.structured.vectorize_children_and_apply_patterns %3 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %4 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.vector.fold_arith_extension
    } : !transform.any_op
    transform.apply_cse to %4 : !transform.any_op
    transform.iree.eliminate_empty_tensors %4 : (!transform.any_op) -> ()
    %5 = transform.iree.bufferize <target_gpu> %4 : (!transform.any_op) -> !transform.any_op
    transform.iree.forall_to_workgroup %5 : (!transform.any_op) -> ()
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] sync_after_distribution = false : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g4_accumulate(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.prepare_vector_to_mma
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.hoist_redundant_vector_transfers %0 : (!transform.any_op) -> !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %1 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g4_stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g4_synchronize(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    transform.iree.synchronize_loop %1 : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.memref.erase_dead_alloc_and_stores %0 : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g4_mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g4_pipeline(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.transfer_to_scf full_unroll = true
    } : !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.iree.create_async_groups %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    %1 = transform.structured.match ops{["scf.for"]} in %0 : (!transform.any_op) -> !transform.any_op
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4, use_mma_sync> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g4_cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @g4_codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @g4_tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @g4_cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @g4_match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [2048] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [8192] : !transform.param<i64>
    %0 = transform.match.structured %arg0 : (!transform.any_op) -> !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      %1 = transform.match.structured.result %arg1[0] single : (!transform.any_op) -> !transform.any_op
      transform.match.structured.yield %1 : !transform.any_op
    }
    transform.match.operation_name %0 ["iree_tensor_ext.dispatch.tensor.store", "iree_codegen.store_to_buffer"] : !transform.any_op
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @match_consumer_8388608(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %arg0 ["linalg.generic"] : !transform.any_op
    transform.match.structured %arg0 : !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      transform.match.structured.dim %arg1[all] parallel : !transform.any_op
      %0 = transform.match.structured.rank %arg1 : (!transform.any_op) -> !transform.param<i64>
      %1 = transform.match.structured.dim %arg1[0] : (!transform.any_op) -> !transform.param<i64>
      %2 = transform.match.structured.input %arg1[0] : (!transform.any_op) -> !transform.any_value
      %3 = transform.match.structured.elemental_bitwidth %2 : (!transform.any_value) -> !transform.param<i64>
      %4 = transform.match.structured.init %arg1[0] : (!transform.any_op) -> !transform.any_value
      %5 = transform.match.structured.elemental_bitwidth %4 : (!transform.any_value) -> !transform.param<i64>
      %6 = transform.param.constant 1 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %0, %6 : !transform.param<i64>
      %7 = transform.param.constant 8388608 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %1, %7 : !transform.param<i64>
      %8 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %3, %8 : !transform.param<i64>
      %9 = transform.param.constant 16 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %5, %9 : !transform.param<i64>
    }
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @match_consumer_16777216(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %arg0 ["linalg.generic"] : !transform.any_op
    transform.match.structured %arg0 : !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      transform.match.structured.dim %arg1[all] parallel : !transform.any_op
      %0 = transform.match.structured.rank %arg1 : (!transform.any_op) -> !transform.param<i64>
      %1 = transform.match.structured.dim %arg1[0] : (!transform.any_op) -> !transform.param<i64>
      %2 = transform.match.structured.input %arg1[0] : (!transform.any_op) -> !transform.any_value
      %3 = transform.match.structured.elemental_bitwidth %2 : (!transform.any_value) -> !transform.param<i64>
      %4 = transform.match.structured.init %arg1[0] : (!transform.any_op) -> !transform.any_value
      %5 = transform.match.structured.elemental_bitwidth %4 : (!transform.any_value) -> !transform.param<i64>
      %6 = transform.param.constant 1 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %0, %6 : !transform.param<i64>
      %7 = transform.param.constant 16777216 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %1, %7 : !transform.param<i64>
      %8 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %3, %8 : !transform.param<i64>
      %9 = transform.param.constant 16 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %5, %9 : !transform.param<i64>
    }
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @match_consumer_33554432(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %arg0 ["linalg.generic"] : !transform.any_op
    transform.match.structured %arg0 : !transform.any_op {
    ^bb0(%arg1: !transform.any_op):
      transform.match.structured.dim %arg1[all] parallel : !transform.any_op
      %0 = transform.match.structured.rank %arg1 : (!transform.any_op) -> !transform.param<i64>
      %1 = transform.match.structured.dim %arg1[0] : (!transform.any_op) -> !transform.param<i64>
      %2 = transform.match.structured.input %arg1[0] : (!transform.any_op) -> !transform.any_value
      %3 = transform.match.structured.elemental_bitwidth %2 : (!transform.any_value) -> !transform.param<i64>
      %4 = transform.match.structured.init %arg1[0] : (!transform.any_op) -> !transform.any_value
      %5 = transform.match.structured.elemental_bitwidth %4 : (!transform.any_value) -> !transform.param<i64>
      %6 = transform.param.constant 1 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %0, %6 : !transform.param<i64>
      %7 = transform.param.constant 33554432 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %1, %7 : !transform.param<i64>
      %8 = transform.param.constant 32 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %3, %8 : !transform.param<i64>
      %9 = transform.param.constant 16 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %5, %9 : !transform.param<i64>
    }
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @__kernel_config(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.collect_matching @g0_match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.get_parent_op %0 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %2 = transform.param.constant #translation -> !transform.any_param
    transform.annotate %1 "translation_info" = %2 : !transform.any_op, !transform.any_param
    %3 = transform.collect_matching @g1_match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %4 = transform.get_parent_op %3 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %5 = transform.param.constant #translation1 -> !transform.any_param
    transform.annotate %4 "translation_info" = %5 : !transform.any_op, !transform.any_param
    %6 = transform.collect_matching @g2_match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %7 = transform.get_parent_op %6 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %8 = transform.param.constant #translation2 -> !transform.any_param
    transform.annotate %7 "translation_info" = %8 : !transform.any_op, !transform.any_param
    %9 = transform.collect_matching @g3_match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %10 = transform.get_parent_op %9 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %11 = transform.param.constant #translation3 -> !transform.any_param
    transform.annotate %10 "translation_info" = %11 : !transform.any_op, !transform.any_param
    %12 = transform.collect_matching @g4_match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %13 = transform.get_parent_op %12 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %14 = transform.param.constant #translation4 -> !transform.any_param
    transform.annotate %13 "translation_info" = %14 : !transform.any_op, !transform.any_param
    %15 = transform.collect_matching @match_consumer_8388608 in %arg0 : (!transform.any_op) -> !transform.any_op
    %16 = transform.get_parent_op %15 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %17 = transform.param.constant #translation5 -> !transform.any_param
    transform.annotate %16 "translation_info" = %17 : !transform.any_op, !transform.any_param
    %18 = transform.param.constant #iree_gpu.lowering_config<{thread = [8], workgroup = [2048]}> -> !transform.any_param
    transform.annotate %15 "lowering_config" = %18 : !transform.any_op, !transform.any_param
    %19 = transform.collect_matching @match_consumer_16777216 in %arg0 : (!transform.any_op) -> !transform.any_op
    %20 = transform.get_parent_op %19 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %21 = transform.param.constant #translation5 -> !transform.any_param
    transform.annotate %20 "translation_info" = %21 : !transform.any_op, !transform.any_param
    %22 = transform.param.constant #iree_gpu.lowering_config<{thread = [8], workgroup = [2048]}> -> !transform.any_param
    transform.annotate %19 "lowering_config" = %22 : !transform.any_op, !transform.any_param
    %23 = transform.collect_matching @match_consumer_33554432 in %arg0 : (!transform.any_op) -> !transform.any_op
    %24 = transform.get_parent_op %23 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %25 = transform.param.constant #translation5 -> !transform.any_param
    transform.annotate %24 "translation_info" = %25 : !transform.any_op, !transform.any_param
    %26 = transform.param.constant #iree_gpu.lowering_config<{thread = [8], workgroup = [2048]}> -> !transform.any_param
    transform.annotate %23 "lowering_config" = %26 : !transform.any_op, !transform.any_param
    transform.yield 
  }
}
