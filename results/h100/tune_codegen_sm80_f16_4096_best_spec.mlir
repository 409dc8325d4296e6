#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#translation = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @codegen>
module attributes {transform.with_named_sequence} {
  transform.named_sequence @tile(%arg0: !transform.any_op {transform.readonly}) {
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
    transform.iree.map_nested_forall_to_gpu_threads %5 workgroup_dims = [256, 1, 1] : (!transform.any_op) -> ()
    transform.iree.gpu_distribute_shared_memory_copy %5 : (!transform.any_op) -> ()
    transform.iree.hoist_static_alloc %5 : (!transform.any_op) -> ()
    transform.apply_patterns to %5 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.apply_cse to %5 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @accumulate(%arg0: !transform.any_op {transform.readonly}) {
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
  transform.named_sequence @stage(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.structured.match ops{["memref.alloc"]} in %0 : (!transform.any_op) -> !transform.op<"memref.alloc">
    %2 = transform.memref.multibuffer %1 <factor = 4, skip_analysis> : (!transform.op<"memref.alloc">) -> !transform.any_op
    transform.iree.reduce_shared_memory_bank_conflicts %0 <padding_size_bits = 128> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @synchronize(%arg0: !transform.any_op {transform.readonly}) {
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
  transform.named_sequence @mma(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.iree.vector.vector_to_mma_conversion %0 <use_mma_sync> : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @pipeline(%arg0: !transform.any_op {transform.readonly}) {
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
    %2 = transform.iree.pipeline_shared_memory_copies %1 <depth = 4> : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.materialize_masks
    } : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @cleanup(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.structured.match ops{["func.func"]} in %arg0 : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %0 {
      transform.apply_patterns.canonicalization
      transform.apply_patterns.memref.fold_memref_alias_ops
    } : !transform.any_op
    transform.iree.apply_licm %0 : !transform.any_op
    transform.apply_cse to %0 : !transform.any_op
    transform.yield 
  }
  transform.named_sequence @codegen(%arg0: !transform.any_op {transform.readonly}) {
    transform.include @tile failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @accumulate failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @stage failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @synchronize failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @mma failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @pipeline failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.include @cleanup failures(propagate) (%arg0) : (!transform.any_op) -> ()
    transform.yield 
  }
  transform.named_sequence @match_gemm(%arg0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    %batch_dims, %m_dims, %n_dims, %k_dims = transform.iree.match.contraction %arg0, lhs_type = f16, rhs_type = f16, output_type = f32, indexing_maps = [#map, #map1, #map2] : !transform.any_op -> !transform.param<i64>
    transform.iree.match.dims_equal %m_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %n_dims, [4096] : !transform.param<i64>
    transform.iree.match.dims_equal %k_dims, [4096] : !transform.param<i64>
    transform.yield %arg0 : !transform.any_op
  }
  transform.named_sequence @__kernel_config(%arg0: !transform.any_op {transform.readonly}) {
    %0 = transform.collect_matching @match_gemm in %arg0 : (!transform.any_op) -> !transform.any_op
    %1 = transform.get_parent_op %0 <op_name = "func.func", deduplicate> : (!transform.any_op) -> !transform.any_op
    %2 = transform.param.constant #translation -> !transform.any_param
    transform.annotate %1 "translation_info" = %2 : !transform.any_op, !transform.any_param
    transform.yield 
  }
}
