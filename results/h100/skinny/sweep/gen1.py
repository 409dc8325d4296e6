import sys
def skinny1(N,K,S,wg_n,th_n,kr):
    Kc=K//S
    threads=wg_n//th_n
    lc1=f'#iree_gpu.lowering_config<{{workgroup = [1, {wg_n}, 0], thread = [1, {th_n}, 0], reduction = [0, 0, {kr}]}}>'
    ti1=f'#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [{threads}, 1, 1] subgroup_size = 32>'
    return f'''
#map_a = affine_map<(s, n, k) -> (s, k)>
#map_b = affine_map<(s, n, k) -> (s, k, n)>
#map_p = affine_map<(s, n, k) -> (s, n)>
#r_in = affine_map<(m, n, s) -> (s, n)>
#r_out = affine_map<(m, n, s) -> (m, n)>
func.func @gemm(%a: tensor<1x{K}xbf16>, %b: tensor<{K}x{N}xbf16>) -> tensor<1x{N}xf32> {{
  %z = arith.constant 0.0 : f32
  %a1 = tensor.collapse_shape %a [[0, 1]] : tensor<1x{K}xbf16> into tensor<{K}xbf16>
  %a2 = tensor.expand_shape %a1 [[0, 1]] output_shape [{S}, {Kc}] : tensor<{K}xbf16> into tensor<{S}x{Kc}xbf16>
  %b3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [{S}, {Kc}, {N}] : tensor<{K}x{N}xbf16> into tensor<{S}x{Kc}x{N}xbf16>
  %e = tensor.empty() : tensor<{S}x{N}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{S}x{N}xf32>) -> tensor<{S}x{N}xf32>
  %p = linalg.generic {{indexing_maps = [#map_a, #map_b, #map_p], iterator_types = ["parallel", "parallel", "reduction"]}}
     ins(%a2, %b3 : tensor<{S}x{Kc}xbf16>, tensor<{S}x{Kc}x{N}xbf16>) outs(%f : tensor<{S}x{N}xf32>)
     attrs = {{compilation_info = #iree_codegen.compilation_info<lowering_config = {lc1}, translation_info = {ti1}>}} {{
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %m = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }} -> tensor<{S}x{N}xf32>
  %e2 = tensor.empty() : tensor<1x{N}xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x{N}xf32>) -> tensor<1x{N}xf32>
  %c = linalg.generic {{indexing_maps = [#r_in, #r_out], iterator_types = ["parallel", "parallel", "reduction"]}}
     ins(%p : tensor<{S}x{N}xf32>) outs(%f2 : tensor<1x{N}xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }} -> tensor<1x{N}xf32>
  return %c : tensor<1x{N}xf32>
}}
'''
if __name__=="__main__":
    print(skinny1(*[int(x) for x in sys.argv[1:]]))
