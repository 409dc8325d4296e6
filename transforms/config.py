"""A schedule as IREE's `#iree_codegen.compilation_info`: the one attribute every delivery route carries.

The tuning spec (ROCm) hands it to the matched contraction; the CUDA route sets it on the linalg op directly.
Everything a schedule asks of IREE's TileAndFuse pipeline is encoded here and nowhere else: tile sizes in the
units IREE expects, the MMA intrinsic, LDS promotion with its swizzle or DMA copy, prefetch depth, workgroup
order and LLVM's waves-per-EU. Attributes with a Python class are built with it; the rest are parsed.
"""

from __future__ import annotations

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen, iree_gpu

from .problem import Gemm
from .schedule import Schedule, aligned, k_contiguous, k_tiles, subgroup_tiles, swizzle_params, workgroup_size


def _i64_array(values) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in values])


def _per_loop(gemm: Gemm, m: int, n: int, k: int) -> list[int]:
    """One entry per loop of the contraction; the batch loop is tiled by 1 (workgroup) or not at all."""
    return ([1 if m or n else 0] if gemm.batched else []) + [m, n, k]


def promotion_types(schedule: Schedule, gemm: Gemm) -> list[ir.Attribute] | None:
    """How A and B are copied into LDS, or None for IREE's default (thread copies, padded rows)."""
    dma, lds = schedule.staging.direct_to_lds, schedule.swizzle.lds
    if not dma and lds not in ("xor", "rotate"):
        return None
    swizzled = k_contiguous(gemm) if lds in ("xor", "rotate") else (False, False)
    return [_promotion(schedule, gemm, on) for on in swizzled]


def _promotion(schedule: Schedule, gemm: Gemm, swizzled: bool) -> ir.Attribute:
    copy = "#iree_gpu.use_global_load_dma" if schedule.staging.direct_to_lds else "#iree_gpu.derived_thread_config"
    lds = schedule.swizzle.lds
    if not swizzled:
        return ir.Attribute.parse(copy)
    row, access = swizzle_params(schedule, gemm)
    swizzle = f"#iree_codegen.{'xor_shuffle' if lds == 'xor' else 'rotate_rows'}<{row}, {access}>"
    return ir.Attribute.parse(f"#iree_gpu.swizzle_operand<copy_config = {copy}, swizzle = {swizzle}>")


def lowering_config(schedule: Schedule, gemm: Gemm, target) -> ir.Attribute:
    tile = schedule.tile
    sub_m, sub_n = subgroup_tiles(schedule)
    entries = {
        "workgroup": _i64_array(_per_loop(gemm, *tile.workgroup, 0)),
        "reduction": _i64_array(_per_loop(gemm, 0, 0, k_tiles(schedule))),
        "subgroup": _i64_array(_per_loop(gemm, sub_m, sub_n, 0)),
        "mma_kind": iree_gpu.MMAAttr.get(getattr(iree_gpu.MMAIntrinsic, tile.mma)),
        "promote_operands": _i64_array([0, 1]),
    }
    if not aligned(schedule, gemm):
        # As IREE's own heuristic does for such shapes: pad the operand tiles to whole tiles.
        entries["padding"] = _i64_array(_per_loop(gemm, *tile.workgroup, tile.k))
    promotions = promotion_types(schedule, gemm)
    if promotions is not None:
        entries["promotion_types"] = ir.ArrayAttr.get(promotions)
    if schedule.swizzle.workgroup_order == "xcd":
        entries["workgroup_reordering_strategy"] = ir.Attribute.parse(
            f"#iree_gpu.conditional_transpose<{target.xcds}, {target.cus_per_xcd}>")
    return iree_gpu.LoweringConfigAttr.get(ir.DictAttr.get(entries))


def translation_info(schedule: Schedule, target) -> ir.Attribute:
    options = {"gpu_pipeline_options": iree_gpu.PipelineOptionsAttr.get(
        prefetch_num_stages=schedule.staging.prefetch_stages,
        no_reduce_shared_memory_bank_conflicts=schedule.swizzle.lds != "pad")}
    if schedule.warp_groups.waves_per_eu is not None:
        options["llvm_func_attrs"] = ir.DictAttr.get(
            {"amdgpu-waves-per-eu": ir.StringAttr.get(str(schedule.warp_groups.waves_per_eu))})
    return iree_codegen.TranslationInfoAttr.get(
        iree_gpu.PipelineAttr.get(iree_gpu.LoweringPipeline.TileAndFuse),
        workgroup_size=[workgroup_size(schedule, target.wave_size), 1, 1],
        subgroup_size=target.wave_size,
        configuration=ir.DictAttr.get(options))


def compilation_info(schedule: Schedule, gemm: Gemm, target) -> ir.Attribute:
    return iree_codegen.CompilationInfoAttr.get(lowering_config(schedule, gemm, target),
                                                translation_info(schedule, target))


def ukernel_compilation_info(workgroup_tile: tuple[int, int], threads: int, wave_size: int,
                             waves_per_eu: int) -> ir.Attribute:
    """The configuration around an injected ukernel: only the workgroup tile (the ukernel does the rest), the
    thread count it was written for, unpadded LDS, and the occupancy its register budget assumes."""
    lowering = iree_gpu.LoweringConfigAttr.get(ir.DictAttr.get({"workgroup": _i64_array([*workgroup_tile, 0])}))
    options = {"gpu_pipeline_options": iree_gpu.PipelineOptionsAttr.get(no_reduce_shared_memory_bank_conflicts=True),
               "llvm_func_attrs": ir.DictAttr.get({"amdgpu-waves-per-eu": ir.StringAttr.get(str(waves_per_eu))})}
    translation = iree_codegen.TranslationInfoAttr.get(
        iree_gpu.PipelineAttr.get(iree_gpu.LoweringPipeline.TileAndFuse), workgroup_size=[threads, 1, 1],
        subgroup_size=wave_size, configuration=ir.DictAttr.get(options))
    return iree_codegen.CompilationInfoAttr.get(lowering, translation)
