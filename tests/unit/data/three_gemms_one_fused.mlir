// Three f16 NN contractions, each its own dispatch: 512x512x256 and 512x1024x256 write f32 to the output, a second
// 512x512x256 (other operands) feeds a fused truncf consumer that writes f16.
func.func @model(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>, %c: tensor<256x1024xf16>, %d: tensor<256x512xf16>)
    -> (tensor<512x512xf32>, tensor<512x1024xf32>, tensor<512x512xf16>) {
  %zero = arith.constant 0.000000e+00 : f32
  %e0 = tensor.empty() : tensor<512x512xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<512x512xf32>) -> tensor<512x512xf32>
  %plain = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%f0 : tensor<512x512xf32>) -> tensor<512x512xf32>
  %e1 = tensor.empty() : tensor<512x1024xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %wide = linalg.matmul ins(%a, %c : tensor<512x256xf16>, tensor<256x1024xf16>) outs(%f1 : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %fused = linalg.matmul ins(%a, %d : tensor<512x256xf16>, tensor<256x512xf16>) outs(%f0 : tensor<512x512xf32>) -> tensor<512x512xf32>
  %e2 = tensor.empty() : tensor<512x512xf16>
  %half = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fused : tensor<512x512xf32>) outs(%e2 : tensor<512x512xf16>) {
  ^bb0(%in: f32, %out: f16):
    %t = arith.truncf %in : f32 to f16
    linalg.yield %t : f16
  } -> tensor<512x512xf16>
  return %plain, %wide, %half : tensor<512x512xf32>, tensor<512x1024xf32>, tensor<512x512xf16>
}
