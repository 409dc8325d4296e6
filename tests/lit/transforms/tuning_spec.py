# RUN: %PYTHON %s | FileCheck %s
# The tuning spec and compilation_info that transforms/ builds with the MLIR Python bindings, one feature per test.

from iree.compiler import ir

from pipelines.targets import TARGETS
from transforms.config import compilation_info
from transforms.problem import Epilogue, Gemm, build_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile, WarpGroups
from transforms.tuning_spec import tuning_spec

BF16_16 = "MFMA_F32_16x16x16_BF16"


def run(gemm, schedule, target="gfx942"):
    def decorator(fn):
        print(f"\nTEST: {fn.__name__}")
        with ir.Context(), ir.Location.unknown():
            spec = tuning_spec([(gemm, compilation_info(schedule, gemm, TARGETS[target]))])
            assert spec.operation.verify()
            print(spec)
        return fn
    return decorator


SQUARE = Gemm(4096, 4096, 4096, "bf16", "nn")
BASE = Schedule(Tile((256, 128), 32, (2, 2), BF16_16))


# CHECK-LABEL: TEST: entry_point
# CHECK: transform.named_sequence @apply_compilation_info(%[[OP:.+]]: !transform.any_op {transform.readonly}, %[[CFG:.+]]: !transform.any_param {transform.readonly})
# CHECK-NEXT: transform.annotate %[[OP]] "compilation_info" = %[[CFG]]
# CHECK-NEXT: transform.annotate %[[OP]] "__tuning_spec_applied__"
# CHECK: transform.named_sequence @__kernel_config(%{{.+}}: !transform.any_op {transform.consumed}) -> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint}
# CHECK: transform.foreach_match in
# CHECK-NEXT: @match_gemm_0_4096x4096x4096_nn_bf16 -> @apply_compilation_info
@run(SQUARE, BASE)
def entry_point():
    pass


# CHECK-LABEL: TEST: matcher_nt_layout
# CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
# CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
# CHECK: transform.iree.match.has_no_lowering_config
# CHECK: transform.iree.match.contraction %{{.+}}, lhs_type = bf16, rhs_type = bf16, output_type = f32, indexing_maps = [#[[A]], #[[B]], #{{.+}}]
# CHECK: transform.iree.match.dims_equal %{{.+}}, [4864]
# CHECK: transform.iree.match.dims_equal %{{.+}}, [4096]
# CHECK: transform.iree.match.dims_equal %{{.+}}, [4160]
@run(Gemm(4864, 4096, 4160, "bf16", "nt"), BASE)
def matcher_nt_layout():
    pass


# CHECK-LABEL: TEST: matcher_batch
# Attribute aliases print above the module, so the config comes first.
# CHECK: workgroup = [1, 256, 128, 0]
# CHECK: %[[BATCH:.+]], %{{.+}}, %{{.+}}, %{{.+}} = transform.iree.match.contraction
# CHECK: transform.iree.match.dims_equal %[[BATCH]], [8]
@run(Gemm(512, 512, 256, "bf16", "nn", batch=8), BASE)
def matcher_batch():
    pass


# CHECK-LABEL: TEST: tile_units
# Workgroup tile in elements, reduction and subgroup in intrinsic tiles: K 32 / 16 = 2; 256 / (2 × 16) = 8.
# CHECK-DAG: workgroup_size = [256, 1, 1] subgroup_size = 64
# CHECK-DAG: #iree_gpu.lowering_config<{mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_BF16>, promote_operands = [0, 1], reduction = [0, 0, 2], subgroup = [8, 4, 0], workgroup = [256, 128, 0]}>
@run(SQUARE, BASE)
def tile_units():
    pass


# CHECK-LABEL: TEST: prefetch_stages
# CHECK: pipeline_options<prefetch_num_stages = 3, no_reduce_shared_memory_bank_conflicts = false>
@run(SQUARE, Schedule(BASE.tile, Staging(3)))
def prefetch_stages():
    pass


# CHECK-LABEL: TEST: xor_swizzle_nn
# In NN only A's LDS rows run along K, so only A is swizzled; padding is turned off.
# CHECK-DAG: no_reduce_shared_memory_bank_conflicts = true
# CHECK-DAG: promotion_types = [#iree_gpu.swizzle_operand<copy_config = #iree_gpu.derived_thread_config, swizzle = #iree_codegen.xor_shuffle<64, 8>>, #iree_gpu.derived_thread_config]
@run(SQUARE, Schedule(BASE.tile, swizzle=Swizzle("xor")))
def xor_swizzle_nn():
    pass


# CHECK-LABEL: TEST: rotate_swizzle_nt
# CHECK: promotion_types = [#iree_gpu.swizzle_operand<copy_config = #iree_gpu.derived_thread_config, swizzle = #iree_codegen.rotate_rows<64, 8>>, #iree_gpu.swizzle_operand<copy_config = #iree_gpu.derived_thread_config, swizzle = #iree_codegen.rotate_rows<64, 8>>]
@run(SQUARE.with_(layout="nt"), Schedule(BASE.tile, swizzle=Swizzle("rotate")))
def rotate_swizzle_nt():
    pass


# CHECK-LABEL: TEST: fp8_swizzle_width
# A 128 B swizzle row holds 128 fp8 elements, read 16 at a time.
# CHECK: xor_shuffle<128, 16>
@run(Gemm(4096, 4096, 4096, "f8E4M3FNUZ", "nt"),
     Schedule(Tile((256, 128), 64, (2, 2), "MFMA_F32_16x16x32_F8E4M3FNUZ"), swizzle=Swizzle("xor")))
def fp8_swizzle_width():
    pass


# CHECK-LABEL: TEST: direct_to_lds_gfx950
# CHECK: promotion_types = [#iree_gpu.use_global_load_dma, #iree_gpu.use_global_load_dma]
@run(SQUARE, Schedule(Tile((256, 128), 64, (2, 2), "MFMA_F32_16x16x32_BF16"), Staging(2, True), Swizzle("none")),
     target="gfx950")
def direct_to_lds_gfx950():
    pass


# CHECK-LABEL: TEST: xcd_order
# CHECK: workgroup_reordering_strategy = #iree_gpu.conditional_transpose<8, 38>
@run(SQUARE, Schedule(BASE.tile, swizzle=Swizzle("pad", "xcd")))
def xcd_order():
    pass


# CHECK-LABEL: TEST: waves_per_eu
# CHECK: llvm_func_attrs = {"amdgpu-waves-per-eu" = "2"}
@run(SQUARE, Schedule(BASE.tile, warp_groups=WarpGroups(waves_per_eu=2)))
def waves_per_eu():
    pass


# CHECK-LABEL: TEST: unaligned_padding
# CHECK: padding = [128, 128, 64]
@run(Gemm(320, 448, 192, "bf16", "nn"), Schedule(Tile((128, 128), 64, (2, 2), BF16_16)))
def unaligned_padding():
    pass


# CHECK-LABEL: TEST: aligned_has_no_padding
# CHECK-NOT: padding =
# CHECK: transform.named_sequence @__kernel_config
@run(SQUARE, BASE)
def aligned_has_no_padding():
    pass


# CHECK-LABEL: TEST: wave32_gfx1151
# CHECK-DAG: workgroup_size = [256, 1, 1] subgroup_size = 32
# CHECK-DAG: mma_kind = #iree_gpu.mma_layout<WMMAR3_F32_16x16x16_BF16>
@run(SQUARE, Schedule(Tile((128, 64), 32, (4, 2), "WMMAR3_F32_16x16x16_BF16")), target="gfx1151")
def wave32_gfx1151():
    pass


def cuda_route():
    """CUDA reads compilation_info from the op: the same attribute sits on the linalg.matmul itself."""
    print("\nTEST: cuda_route")
    gemm = Gemm(4096, 4096, 4096, "bf16", "nt", epilogue=Epilogue("bias-relu"))
    schedule = Schedule(Tile((128, 128), 64, (2, 2), "NV_MMA_SYNC_F32_16x8x16_BF16"), Staging(0))
    with ir.Context(), ir.Location.unknown():
        print(build_module(gemm, compilation_info(schedule, gemm, TARGETS["sm_89"])))


# CHECK-LABEL: TEST: cuda_route
# CHECK: #[[INFO:.+]] = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_BF16>, promote_operands = [0, 1], reduction = [0, 0, 4], subgroup = [4, 8, 0], workgroup = [128, 128, 0]}>
# CHECK: linalg.matmul indexing_maps = [{{.+}}] {compilation_info = #[[INFO]]}
# CHECK: linalg.generic
# CHECK: arith.maximumf
cuda_route()
