def body(M,N,K,S,info):
    Kc=K//S
    return f'''
#map_a = affine_map<(s, m, n, k) -> (m, s, k)>
#map_b = affine_map<(s, m, n, k) -> (s, k, n)>
#map_p = affine_map<(s, m, n, k) -> (s, m, n)>
#r_in = affine_map<(m, n, s) -> (s, m, n)>
#r_out = affine_map<(m, n, s) -> (m, n)>
func.func @gemm(%a: tensor<{M}x{K}xbf16>, %b: tensor<{K}x{N}xbf16>) -> tensor<{M}x{N}xf32> {{
  %z = arith.constant 0.0 : f32
  %a3 = tensor.expand_shape %a [[0], [1, 2]] output_shape [{M}, {S}, {Kc}] : tensor<{M}x{K}xbf16> into tensor<{M}x{S}x{Kc}xbf16>
  %b3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [{S}, {Kc}, {N}] : tensor<{K}x{N}xbf16> into tensor<{S}x{Kc}x{N}xbf16>
  %e = tensor.empty() : tensor<{S}x{M}x{N}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{S}x{M}x{N}xf32>) -> tensor<{S}x{M}x{N}xf32>
  %p = linalg.generic {{indexing_maps = [#map_a, #map_b, #map_p], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
     ins(%a3, %b3 : tensor<{M}x{S}x{Kc}xbf16>, tensor<{S}x{Kc}x{N}xbf16>) outs(%f : tensor<{S}x{M}x{N}xf32>)
     attrs = {{compilation_info = {info}}} {{
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }} -> tensor<{S}x{M}x{N}xf32>
  %e2 = tensor.empty() : tensor<{M}x{N}xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %c = linalg.generic {{indexing_maps = [#r_in, #r_out], iterator_types = ["parallel", "parallel", "reduction"]}}
     ins(%p : tensor<{S}x{M}x{N}xf32>) outs(%f2 : tensor<{M}x{N}xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }} -> tensor<{M}x{N}xf32>
  return %c : tensor<{M}x{N}xf32>
}}
'''
def simt(M,wg_n,th_m,th_n,kr):
    threads=(wg_n//th_n)*(M//th_m)
    return (f'#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{workgroup = [1, {M}, {wg_n}, 0], thread = [1, {th_m}, {th_n}, 0], reduction = [0, 0, 0, {kr}]}}>, '
            f'translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [{threads}, 1, 1] subgroup_size = 32>>')
def mma(wm,wn,gm,gn,kt,stages=1):
    sub_m=wm//gm//16; sub_n=wn//gn//8
    return (f'#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_BF16>, promote_operands = [0, 1], reduction = [0, 0, 0, {kt//16}], subgroup = [1, {sub_m}, {sub_n}, 0], workgroup = [1, {wm}, {wn}, 0]}}>, '
            f'translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [{gm*gn*32}, 1, 1] subgroup_size = 32, {{gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = {stages}, no_reduce_shared_memory_bank_conflicts = false>}}>>')
