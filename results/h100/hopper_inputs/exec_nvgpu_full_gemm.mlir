// Hand-written Hopper GEMM dispatch (TMA + mbarrier + wgmma via nvgpu ops) inside an IREE program.
// C[4096x4096]f32 = A[4096x4096]f16 * B[4096x4096]f16, 1 warpgroup per 128x128 tile, BK=64, 2 stages.
// The two CUtensorMaps (128 B each) arrive in global memory as binding 2 (tensor<32xi64>).
#target = #hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90a", features = "+ptx80", wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>], subgroup_size_choices = [32], max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = 1024, max_workgroup_memory_bytes = 232448, max_workgroup_counts = [2147483647, 65535, 65535]>>}>
#layout = #hal.pipeline.layout<bindings = [#hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer, ReadOnly>, #hal.pipeline.binding<storage_buffer>]>
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!lhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!rhsTensorMap = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
#map = affine_map<(d0)[s0] -> (d0 + s0)>
module {
  hal.executable private @hopper {
  hal.executable.variant public @cuda_nvptx_fb target(#target) {
    hal.executable.export public @gemm_tma_wgmma ordinal(0) layout(#layout) count(%device: !hal.device) -> (index, index, index) {
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      hal.return %c32, %c32, %c1 : index, index, index
    }
    builtin.module {
      func.func @gemm_tma_wgmma() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_codegen.no_pipeline workgroup_size = [128, 1, 1] subgroup_size = 32>} {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c64 = arith.constant 64 : index
        %c128 = arith.constant 128 : index
        %c16 = arith.constant 16 : index
        %c4096 = arith.constant 4096 : index
        %c8192 = arith.constant 8192 : index
        %cK = arith.constant 64 : index
        %tx = arith.constant 32768 : index
        %ticks = arith.constant 10000000 : index
        %A = hal.interface.binding.subspan layout(#layout) binding(0) alignment(64) offset(%c0) flags(ReadOnly) : memref<4096x4096xf16, #hal.descriptor_type<storage_buffer>>
        %B = hal.interface.binding.subspan layout(#layout) binding(1) alignment(64) offset(%c0) flags(ReadOnly) : memref<4096x4096xf16, #hal.descriptor_type<storage_buffer>>
        %T = hal.interface.binding.subspan layout(#layout) binding(2) alignment(64) offset(%c0) flags(ReadOnly) : memref<32xi64, #hal.descriptor_type<storage_buffer>>
        %C = hal.interface.binding.subspan layout(#layout) binding(3) alignment(64) offset(%c0) : memref<4096x4096xf32, #hal.descriptor_type<storage_buffer>>
        // Tensor-map pointers (generic address of global memory).
        %tbase = memref.extract_aligned_pointer_as_index %T : memref<32xi64, #hal.descriptor_type<storage_buffer>> -> index
        %tb64 = arith.index_cast %tbase : index to i64
        %c128_i64 = arith.constant 128 : i64
        %tb64b = arith.addi %tb64, %c128_i64 : i64
        %pA = llvm.inttoptr %tb64 : i64 to !llvm.ptr
        %pB = llvm.inttoptr %tb64b : i64 to !llvm.ptr
        %descA = builtin.unrealized_conversion_cast %pA : !llvm.ptr to !lhsTensorMap
        %descB = builtin.unrealized_conversion_cast %pB : !llvm.ptr to !rhsTensorMap

        %bx = hal.interface.workgroup.id[0] : index
        %by = hal.interface.workgroup.id[1] : index
        %m0 = arith.muli %by, %c128 : index
        %n0 = arith.muli %bx, %c128 : index
        %n1 = arith.addi %n0, %c64 : index
        %tid = gpu.thread_id x
        %leader = arith.cmpi eq, %tid, %c0 : index

        %lhsS = "memref.alloc"() <{alignment = 1024 : i64, operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<2x128x64xf16, #gpu.address_space<workgroup>>
        %rhsS = "memref.alloc"() <{alignment = 1024 : i64, operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<2x64x128xf16, #gpu.address_space<workgroup>>
        %bar = nvgpu.mbarrier.create -> !barrierType
        scf.if %leader {
          nvgpu.mbarrier.init %bar[%c0], %c1 : !barrierType
          nvgpu.mbarrier.init %bar[%c1], %c1 : !barrierType
          nvgpu.tma.prefetch.descriptor %descA : !lhsTensorMap
          nvgpu.tma.prefetch.descriptor %descB : !rhsTensorMap
        }
        gpu.barrier
        // Prologue: stages 0 and 1.
        scf.if %leader {
          scf.for %s = %c0 to %c2 step %c1 {
            %k0 = arith.muli %s, %c64 : index
            %lhs = memref.subview %lhsS[%s, 0, 0] [1, 128, 64] [1, 1, 1] : memref<2x128x64xf16, #gpu.address_space<workgroup>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            %o0a = arith.muli %s, %c8192 : index
            %o0 = arith.addi %o0a, %c0 : index
            %rhs0 = memref.reinterpret_cast %rhsS to offset: [%o0], sizes: [64, 64], strides: [64, 1] : memref<2x64x128xf16, #gpu.address_space<workgroup>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            %o1a = arith.muli %s, %c8192 : index
            %o1 = arith.addi %o1a, %c4096 : index
            %rhs1 = memref.reinterpret_cast %rhsS to offset: [%o1], sizes: [64, 64], strides: [64, 1] : memref<2x64x128xf16, #gpu.address_space<workgroup>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.mbarrier.arrive.expect_tx %bar[%s], %tx : !barrierType
            nvgpu.tma.async.load %descA[%k0, %m0], %bar[%s] to %lhs : !lhsTensorMap, !barrierType -> memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.tma.async.load %descB[%n0, %k0], %bar[%s] to %rhs0 : !rhsTensorMap, !barrierType -> memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.tma.async.load %descB[%n1, %k0], %bar[%s] to %rhs1 : !rhsTensorMap, !barrierType -> memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
          }
        }
        %acc0 = nvgpu.warpgroup.mma.init.accumulator -> <fragmented = vector<128x128xf32>>
        %acc = scf.for %i = %c0 to %cK step %c1 iter_args(%a = %acc0) -> (!nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>) {
          %s = arith.remui %i, %c2 : index
          %q = arith.divui %i, %c2 : index
          %phi = arith.remui %q, %c2 : index
          %ph = arith.cmpi ne, %phi, %c0 : index
          nvgpu.mbarrier.try_wait.parity %bar[%s], %ph, %ticks : !barrierType
          %lhs = memref.subview %lhsS[%s, 0, 0] [1, 128, 64] [1, 1, 1] : memref<2x128x64xf16, #gpu.address_space<workgroup>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
          %rhs = memref.subview %rhsS[%s, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf16, #gpu.address_space<workgroup>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
          %dA = nvgpu.warpgroup.generate.descriptor %lhs, %descA : memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !lhsTensorMap -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>
          %dB = nvgpu.warpgroup.generate.descriptor %rhs, %descB : memref<64x128xf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, !rhsTensorMap -> !nvgpu.warpgroup.descriptor<tensor = memref<64x128xf16, 3>>
          %d = "nvgpu.warpgroup.mma"(%dA, %dB, %a) <{transposeB}> : (!nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>, !nvgpu.warpgroup.descriptor<tensor = memref<64x128xf16, 3>>, !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>) -> !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
          // Stage s is refilled only after the wgmmas reading it have completed.
          nvvm.wgmma.wait.group.sync.aligned 0
          gpu.barrier
          %inext = arith.addi %i, %c2 : index
          %more = arith.cmpi ult, %inext, %cK : index
          %go = arith.andi %more, %leader : i1
          scf.if %go {
            %k0 = arith.muli %inext, %c64 : index
            %lhs2 = memref.subview %lhsS[%s, 0, 0] [1, 128, 64] [1, 1, 1] : memref<2x128x64xf16, #gpu.address_space<workgroup>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            %o0a = arith.muli %s, %c8192 : index
            %o0 = arith.addi %o0a, %c0 : index
            %rhs0 = memref.reinterpret_cast %rhsS to offset: [%o0], sizes: [64, 64], strides: [64, 1] : memref<2x64x128xf16, #gpu.address_space<workgroup>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            %o1a = arith.muli %s, %c8192 : index
            %o1 = arith.addi %o1a, %c4096 : index
            %rhs1 = memref.reinterpret_cast %rhsS to offset: [%o1], sizes: [64, 64], strides: [64, 1] : memref<2x64x128xf16, #gpu.address_space<workgroup>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.mbarrier.arrive.expect_tx %bar[%s], %tx : !barrierType
            nvgpu.tma.async.load %descA[%k0, %m0], %bar[%s] to %lhs2 : !lhsTensorMap, !barrierType -> memref<128x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.tma.async.load %descB[%n0, %k0], %bar[%s] to %rhs0 : !rhsTensorMap, !barrierType -> memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
            nvgpu.tma.async.load %descB[%n1, %k0], %bar[%s] to %rhs1 : !rhsTensorMap, !barrierType -> memref<64x64xf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
          }
          scf.yield %d : !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
        }
        %Ct = memref.subview %C[%m0, %n0] [128, 128] [1, 1] : memref<4096x4096xf32, #hal.descriptor_type<storage_buffer>> to memref<128x128xf32, strided<[4096, 1], offset: ?>, #hal.descriptor_type<storage_buffer>>
        nvgpu.warpgroup.mma.store %acc, %Ct : <fragmented = vector<128x128xf32>> to memref<128x128xf32, strided<[4096, 1], offset: ?>, #hal.descriptor_type<storage_buffer>>
        return
      }
    }
    }
  }
}
