// Hand-written sm_90a PTX (TMA + mbarrier + wgmma) as an IREE external executable object.
#sm90a = #hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90a", features = "+ptx80", wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>], subgroup_size_choices = [32], max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = 1024, max_workgroup_memory_bytes = 232448, max_workgroup_counts = [2147483647, 65535, 65535]>>}>
#layout = #hal.pipeline.layout<constants = 1, bindings = [#hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer>]>
module attributes {hal.device.targets = [#hal.device.target<"cuda", [#sm90a]> : !hal.device]} {
  hal.executable.source private @hopper_ptx <{objects = #hal.executable.objects<{#sm90a = [#hal.executable.object<{path = "k_sm90a.ptx"}>]}>}> {
    hal.executable.export public @tma_wgmma_probe ordinal(0) layout(#layout) count(%device: !hal.device) -> (index, index, index) {
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      hal.return %c32, %c32, %c1 : index, index, index
    } <workgroup_size = [128 : index, 1 : index, 1 : index], workgroup_local_memory = 0>
  }
  func.func @probe(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>, %tmaps: tensor<32xi64>) -> tensor<4096x4096xf32> {
    %k = arith.constant 64 : i32
    %c = flow.dispatch @hopper_ptx::@tma_wgmma_probe(%k, %a, %b, %tmaps) : (i32, tensor<4096x4096xf16>, tensor<4096x4096xf16>, tensor<32xi64>) -> tensor<4096x4096xf32>
    return %c : tensor<4096x4096xf32>
  }
}
