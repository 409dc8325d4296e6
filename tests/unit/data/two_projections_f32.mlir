// Two projections of the same rows summed: y = x·W1 + z·W2 (f32 results). IREE makes two dispatches: the
// first matmul stores its f32 result, the second reads it as the addend of its fused elementwise consumer.
func.func @two_projections(%x: tensor<128x256xbf16>, %w1: tensor<256x128xbf16>, %z: tensor<128x128xbf16>,
                           %w2: tensor<128x128xbf16>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<128x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<128x128xf32>) -> tensor<128x128xf32>
  %first = linalg.matmul ins(%x, %w1 : tensor<128x256xbf16>, tensor<256x128xbf16>)
      outs(%acc : tensor<128x128xf32>) -> tensor<128x128xf32>
  %second = linalg.matmul ins(%z, %w2 : tensor<128x128xbf16>, tensor<128x128xbf16>)
      outs(%acc : tensor<128x128xf32>) -> tensor<128x128xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>,
                                          affine_map<(m, n) -> (m, n)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%first, %second : tensor<128x128xf32>, tensor<128x128xf32>) outs(%init : tensor<128x128xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<128x128xf32>
  return %sum : tensor<128x128xf32>
}
