func.func @block(%x: tensor<16xf32>) -> tensor<16xf32> {
  %r = arith.addf %x, %x : tensor<16xf32>
  return %r : tensor<16xf32>
}
