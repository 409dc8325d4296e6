module attributes {transform.with_named_sequence} {
  transform.named_sequence @s(%root: !transform.any_op {transform.readonly}) {
    %c = transform.structured.match ops{["linalg.copy"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.nvgpu.rewrite_copy_as_tma %c : (!transform.any_op) -> ()
    transform.yield
  }
}
