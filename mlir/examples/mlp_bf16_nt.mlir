// Two chained projections of an MLP block, weights stored N×K (NT) as LLM checkpoints store them.
// Each linalg.matmul becomes its own dispatch; `pipelines compile --input` schedules both.
func.func @mlp(%x: tensor<512x1024xbf16>, %w_up: tensor<2048x1024xbf16>, %w_down: tensor<1024x2048xbf16>)
    -> tensor<512x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %up_init = tensor.empty() : tensor<512x2048xf32>
  %up_acc = linalg.fill ins(%zero : f32) outs(%up_init : tensor<512x2048xf32>) -> tensor<512x2048xf32>
  %up = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w_up : tensor<512x1024xbf16>, tensor<2048x1024xbf16>)
      outs(%up_acc : tensor<512x2048xf32>) -> tensor<512x2048xf32>
  %hidden = arith.truncf %up : tensor<512x2048xf32> to tensor<512x2048xbf16>
  %down_init = tensor.empty() : tensor<512x1024xf32>
  %down_acc = linalg.fill ins(%zero : f32) outs(%down_init : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %down = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%hidden, %w_down : tensor<512x2048xbf16>, tensor<1024x2048xbf16>)
      outs(%down_acc : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  return %down : tensor<512x1024xf32>
}
