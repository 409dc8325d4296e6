# RUN: %PYTHON %s | FileCheck %s
# The transform-dialect codegen library (transforms/codegen_script.py), built with the bindings: one feature per test.

from iree.compiler import ir

from transforms.codegen_script import CODEGEN_MMA, codegen_library
from transforms.problem import Gemm
from transforms.schedule import Schedule, Staging, Swizzle, Tile

GEMM = Gemm(4096, 4096, 4096, "f16", "nn")
BASE = Schedule(Tile((128, 256), 32, (2, 4), CODEGEN_MMA), Staging(3), Swizzle("pad"))


def run(schedule, gemm=GEMM):
    def decorator(fn):
        print(f"\nTEST: {fn.__name__}")
        with ir.Context(), ir.Location.unknown():
            print(codegen_library(schedule, gemm))
        return fn
    return decorator


# The codegen entry runs the phases in order, each in its own include scope.
# CHECK-LABEL: TEST: phase_order
# CHECK: transform.named_sequence @codegen(%[[ROOT:.+]]: !transform.any_op {transform.readonly})
# CHECK-NEXT: transform.include @tile failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @accumulate failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @stage failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @synchronize failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @mma failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @pipeline failures(propagate) (%[[ROOT]])
# CHECK-NEXT: transform.include @cleanup failures(propagate) (%[[ROOT]])
@run(BASE)
def phase_order():
    pass


# Block tile over workgroups, fill fused, K loop, A and B promoted, warps mapped linearly over 256 threads.
# CHECK-LABEL: TEST: tiling
# CHECK: transform.named_sequence @tile
# CHECK: %[[MM:.+]] = transform.structured.match ops{["linalg.generic"]}
# CHECK: %[[TILED:.+]], %[[GRID:.+]] = transform.structured.tile_using_forall %[[MM]] tile_sizes [128, 256](mapping = [#gpu.block<y>, #gpu.block<x>])
# CHECK-NEXT: transform.iree.populate_workgroup_count_region_using_num_threads_slice %[[GRID]]
# CHECK-NEXT: transform.structured.fuse_into_containing_op %{{.+}} into %[[GRID]]
# CHECK-NEXT: %[[K:.+]], %{{.+}} = transform.structured.tile_using_for %[[TILED]] tile_sizes [0, 0, 32]
# CHECK-NEXT: %[[PROMOTED:.+]]:3 = transform.iree.promote_operands %[[K]] [0, 1]
# CHECK-NEXT: transform.structured.tile_using_forall %[[PROMOTED]]#0 num_threads [2, 4](mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>])
# CHECK: transform.iree.map_nested_forall_to_gpu_threads %{{.+}} workgroup_dims = [256, 1, 1]
# CHECK-NEXT: transform.iree.gpu_distribute_shared_memory_copy
@run(BASE)
def tiling():
    pass


# The accumulator leaves the K loop: unroll to native mma.sync shapes first, then hoist, then forward the fill.
# CHECK-LABEL: TEST: accumulator_in_registers
# CHECK: transform.named_sequence @accumulate
# CHECK: transform.apply_patterns.iree.prepare_vector_to_mma
# CHECK: transform.apply_patterns.iree.unroll_vectors_gpu_mma_sync
# CHECK: %[[HOISTED:.+]] = transform.structured.hoist_redundant_vector_transfers
# CHECK-NEXT: transform.memref.erase_dead_alloc_and_stores %[[HOISTED]]
# CHECK-NEXT: transform.yield
@run(BASE)
def accumulator_in_registers():
    pass


# Stages: one shared buffer per stage, rows padded, copies pipelined as deep as the stages, fragments prefetched.
# CHECK-LABEL: TEST: three_stages_padded
# CHECK: transform.named_sequence @stage
# CHECK: transform.memref.multibuffer %{{.+}} <factor = 3, skip_analysis>
# CHECK-NEXT: transform.iree.reduce_shared_memory_bank_conflicts %{{.+}} <padding_size_bits = 128>
# CHECK: transform.named_sequence @mma
# CHECK: transform.iree.vector.vector_to_mma_conversion %{{.+}} <use_mma_sync>
# CHECK: transform.named_sequence @pipeline
# CHECK: transform.iree.create_async_groups %{{.+}} <use_mma_sync>
# CHECK: transform.iree.pipeline_shared_memory_copies %{{.+}} <depth = 3, use_mma_sync>
@run(BASE)
def three_stages_padded():
    pass


# Two stages pipeline the copies only: with use_mma_sync they would wait for the group just committed.
# CHECK-LABEL: TEST: two_stages_copies_only
# CHECK: transform.named_sequence @pipeline
# CHECK: transform.iree.pipeline_shared_memory_copies %{{.+}} <depth = 2>
@run(Schedule(Tile((128, 256), 32, (2, 4), CODEGEN_MMA), Staging(2), Swizzle("pad")))
def two_stages_copies_only():
    pass


# One stage and unpadded rows: no multibuffer, no padding, no software pipelining (cp.async stays).
# CHECK-LABEL: TEST: one_stage_unpadded
# CHECK: transform.named_sequence @stage
# CHECK-NOT: transform.memref.multibuffer
# CHECK-NOT: reduce_shared_memory_bank_conflicts
# CHECK: transform.named_sequence @synchronize
# CHECK: transform.named_sequence @pipeline
# CHECK: transform.iree.create_async_groups
# CHECK-NOT: pipeline_shared_memory_copies
# CHECK: transform.named_sequence @cleanup
@run(Schedule(Tile((128, 128), 32, (2, 2), CODEGEN_MMA), Staging(1), Swizzle("none")))
def one_stage_unpadded():
    pass


# The kernel config matches exactly this contraction and points its function at @codegen.
# CHECK-LABEL: TEST: kernel_config
# CHECK: #[[INFO_ATTR:.+]] = #iree_codegen.translation_info<pipeline = #iree_codegen.transform_dialect_codegen codegen_spec = @codegen>
# CHECK: transform.named_sequence @match_gemm(%[[OP:.+]]: !transform.any_op {transform.readonly}) -> !transform.any_op
# CHECK-NEXT: %{{.+}}, %[[M:.+]], %[[N:.+]], %[[K:.+]] = transform.iree.match.contraction %[[OP]], lhs_type = f16, rhs_type = f16, output_type = f32
# CHECK-NEXT: transform.iree.match.dims_equal %[[M]], [2048]
# CHECK-NEXT: transform.iree.match.dims_equal %[[N]], [1024]
# CHECK-NEXT: transform.iree.match.dims_equal %[[K]], [512]
# CHECK: transform.named_sequence @__kernel_config(%[[FUNC:.+]]: !transform.any_op {transform.readonly})
# CHECK-NEXT: %[[FOUND:.+]] = transform.collect_matching @match_gemm in %[[FUNC]]
# CHECK-NEXT: %[[PARENT:.+]] = transform.get_parent_op %[[FOUND]] <op_name = "func.func", deduplicate>
# CHECK-NEXT: %[[INFO:.+]] = transform.param.constant #[[INFO_ATTR]]
# CHECK-NEXT: transform.annotate %[[PARENT]] "translation_info" = %[[INFO]]
@run(BASE, Gemm(2048, 1024, 512, "f16", "nn"))
def kernel_config():
    pass


# Raster order, 4 rows of 128-row tiles per group over the 16x16 grid of 2048x4096 with 128x256 tiles: a phase
# right after the block mapping replaces each block id (asserting it finds exactly one) by a call to a function
# imported from the library, then inlines it. Block (x, y) has linear id 16y + x; its group of 4 rows is walked
# column by column: N tile (id mod 64) floordiv 4, M tile (id floordiv 64) * 4 + id mod 4 (= x mod 4 here).
# CHECK-LABEL: TEST: raster_order
# CHECK: #[[N_TILE:.+]] = affine_map<()[s0, s1] -> (((s0 * 16 + s1) mod 64) floordiv 4)>
# CHECK: #[[M_TILE:.+]] = affine_map<()[s0, s1] -> (((s0 * 16 + s1) floordiv 64) * 4 + s1 mod 4)>
# CHECK: transform.named_sequence @raster(%[[ROOT:.+]]: !transform.any_op {transform.readonly})
# CHECK-NEXT: %[[FUNC:.+]] = transform.structured.match ops{["func.func"]} in %[[ROOT]]
# CHECK-NEXT: %[[TABLE:.+]] = transform.util.get_nearest_symbol_table %[[FUNC]]
# CHECK-NEXT: %[[ONE:.+]] = transform.param.constant 1 : i64
# CHECK-NEXT: %[[X:.+]] = transform.structured.match ops{["hal.interface.workgroup.id"]} attributes {dimension = 0 : index} in %[[FUNC]]
# CHECK-NEXT: %[[NX:.+]] = transform.num_associations %[[X]]
# CHECK-NEXT: transform.match.param.cmpi eq %[[NX]], %[[ONE]]
# CHECK-NEXT: transform.util.import_symbol @__codegen_raster_tile_n into %[[TABLE]] if undefined
# CHECK-NEXT: transform.structured.replace %[[X]] {
# CHECK-NEXT: func.call @__codegen_raster_tile_n() : () -> index
# CHECK: %[[Y:.+]] = transform.structured.match ops{["hal.interface.workgroup.id"]} attributes {dimension = 1 : index} in %[[FUNC]]
# CHECK-NEXT: %[[NY:.+]] = transform.num_associations %[[Y]]
# CHECK-NEXT: transform.match.param.cmpi eq %[[NY]], %[[ONE]]
# CHECK-NEXT: transform.util.import_symbol @__codegen_raster_tile_m into %[[TABLE]] if undefined
# CHECK-NEXT: transform.structured.replace %[[Y]] {
# CHECK-NEXT: func.call @__codegen_raster_tile_m() : () -> index
# CHECK: transform.apply_registered_pass "inline" to %[[TABLE]]
# CHECK: transform.named_sequence @codegen(%[[ARG:.+]]: !transform.any_op {transform.readonly})
# CHECK-NEXT: transform.include @tile failures(propagate) (%[[ARG]])
# CHECK-NEXT: transform.include @raster failures(propagate) (%[[ARG]])
# CHECK-NEXT: transform.include @accumulate failures(propagate) (%[[ARG]])
# CHECK: func.func private @__codegen_raster_tile_n() -> index {
# CHECK-NEXT: %[[BY:.+]] = hal.interface.workgroup.id[1] : index
# CHECK-NEXT: %[[BX:.+]] = hal.interface.workgroup.id[0] : index
# CHECK-NEXT: %[[TILE:.+]] = affine.apply #[[N_TILE]]()[%[[BY]], %[[BX]]]
# CHECK-NEXT: return %[[TILE]] : index
# CHECK: func.func private @__codegen_raster_tile_m() -> index {
# CHECK-NEXT: %[[BY:.+]] = hal.interface.workgroup.id[1] : index
# CHECK-NEXT: %[[BX:.+]] = hal.interface.workgroup.id[0] : index
# CHECK-NEXT: %[[TILE:.+]] = affine.apply #[[M_TILE]]()[%[[BY]], %[[BX]]]
# CHECK-NEXT: return %[[TILE]] : index
@run(Schedule(BASE.tile, BASE.staging, Swizzle("pad", "raster", 4)), Gemm(2048, 4096, 4096, "f16", "nn"))
def raster_order():
    pass


# Row order has no raster phase and no raster functions.
# CHECK-LABEL: TEST: row_order
# CHECK-NOT: @raster
# CHECK-NOT: __codegen_raster
# CHECK: TEST: end
@run(BASE)
def row_order():
    pass


print("\nTEST: end")
