"""Silent fallbacks are errors: after compiling, prove that every requested schedule choice took effect.

For each dispatch whose contraction we scheduled, `verify_dispatch` reads the configured IR, the IR printed
before swizzle hints are resolved, and the ISA/PTX statistics, and raises `FallbackError` naming the first
choice that did not survive: the compilation_info itself, the MMA instruction, the workgroup size, LDS bytes as
planned, direct-to-LDS loads, the LDS swizzle, the prefetch depth and the requested waves per EU.
"""

from __future__ import annotations

import re
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen

from transforms import codegen_script
from transforms.problem import Gemm, contraction_ops, parse_module
from transforms.schedule import Schedule, k_contiguous, lds_plan_bytes, mma_per_k_step, swizzle_params, \
    workgroup_size
from transforms.tuning_spec import APPLIED_MARKER
from transforms.ukernel import ukernel_mma
from transforms.warpgroups import PingPong8

from .compiler import IR_DUMPS, PREFETCH_PASS, SWIZZLE_PASS, pass_ir_sections
from .inspect import KernelStats, ptx_loops
from .targets import Target


class FallbackError(RuntimeError):
    """A requested schedule choice that the compiled output does not show; the message names the choice."""


def _attr_text(op: ir.Operation, name: str) -> str | None:
    return str(op.attributes[name]) if name in op.attributes else None


def _enclosing_function(op: ir.Operation) -> ir.Operation:
    while op.name != "func.func":
        op = op.parent
    return op


def _fail(dispatch: str, choice: str, detail: str) -> None:
    raise FallbackError(f"{dispatch}: requested {choice} did not take effect: {detail}.")


def verify_dispatch(dispatch: str, op: ir.Operation, dump: Path, stats: KernelStats, schedule: Schedule,
                    gemm: Gemm, expected_info: ir.Attribute, target: Target) -> None:
    """`op` is the dispatch's contraction in its configured IR; `dump` the folder with the pass IR."""
    lowering = _attr_text(op, "lowering_config")
    expected_lowering = str(iree_codegen.CompilationInfoAttr(expected_info).lowering_config)
    if lowering != expected_lowering:
        _fail(dispatch, "compilation_info", f"the contraction carries {lowering}, not {expected_lowering}")
    translation = _attr_text(_enclosing_function(op), "translation_info")
    expected_translation = str(iree_codegen.CompilationInfoAttr(expected_info).translation_info)
    if translation != expected_translation:
        _fail(dispatch, "translation_info", f"the dispatch function carries {translation}, not "
              f"{expected_translation}")
    if target.backend == "rocm" and APPLIED_MARKER not in op.attributes:
        _fail(dispatch, "tuning spec", f"the contraction lacks the {APPLIED_MARKER} marker")

    _verify_only_mma(dispatch, stats, target.mma[schedule.tile.mma].opcode, f"MMA intrinsic {schedule.tile.mma}")

    threads = workgroup_size(schedule, target.wave_size)
    if stats.workgroup_size != threads:
        _fail(dispatch, f"workgroup size {threads}", f"the kernel is built for {stats.workgroup_size} threads")

    _verify_no_spills(dispatch, stats)

    planned = lds_plan_bytes(schedule, gemm)
    if stats.lds_bytes is not None and stats.lds_bytes != planned:
        _fail(dispatch, f"LDS layout '{schedule.swizzle.lds}'",
              f"planned {planned} B of LDS, the kernel allocates {stats.lds_bytes} B")

    if schedule.staging.direct_to_lds and stats.dma_loads == 0:
        _fail(dispatch, "direct global->LDS loads", "the ISA has no load with the lds modifier")

    if target.backend == "rocm":
        pass_ir = (dump / IR_DUMPS).read_text()
        if schedule.swizzle.lds in ("xor", "rotate"):
            _verify_swizzle(dispatch, pass_ir, schedule, gemm)
        _verify_prefetch(dispatch, pass_ir, schedule)

    wanted = schedule.warp_groups.waves_per_eu
    if wanted is not None and (stats.occupancy is None or stats.occupancy < wanted):
        _fail(dispatch, f"waves per EU {wanted}", f"registers and LDS allow {stats.occupancy} waves per SIMD")


def _verify_only_mma(dispatch: str, stats: KernelStats, opcode: str, choice: str) -> None:
    if stats.mma.get(opcode, 0) == 0 or set(stats.mma) - {opcode}:
        found = ", ".join(f"{n}× {o}" for o, n in sorted(stats.mma.items())) or "no MMA instructions"
        _fail(dispatch, choice, f"expected only {opcode}, found {found}")


def _verify_no_spills(dispatch: str, stats: KernelStats) -> None:
    if stats.spill_count:
        _fail(dispatch, "register budget", f"the kernel spills {stats.spill_count} registers at "
              f"{stats.vgpr_count} VGPRs")


def _verify_swizzle(dispatch: str, pass_ir: str, schedule: Schedule, gemm: Gemm) -> None:
    row, access = swizzle_params(schedule, gemm)
    kind = "xor_shuffle" if schedule.swizzle.lds == "xor" else "rotate_rows"
    wanted = sum(k_contiguous(gemm))
    text = "".join(pass_ir_sections(pass_ir, SWIZZLE_PASS, dispatch))
    hints = re.findall(r"iree_codegen\.swizzle_hint %\S+\[(#iree_codegen\.[^\]]*)\]", text)
    ours = f"#iree_codegen.{kind}<{row}, {access}>"
    # Multi-buffered (DMA) allocations carry one hint per stage buffer, so count at least one per operand.
    if len(hints) < wanted or any(h != ours for h in hints):
        found = ", ".join(sorted(set(hints))) or "none"
        _fail(dispatch, f"LDS swizzle {ours}", f"{len(hints)} swizzle hints ({found}) survive to the resolve "
              f"pass, expected at least {wanted}, all {ours}")


def _verify_prefetch(dispatch: str, pass_ir: str, schedule: Schedule) -> None:
    stages = schedule.staging.prefetch_stages
    sections = pass_ir_sections(pass_ir, PREFETCH_PASS, dispatch)
    if stages < 2:
        if sections:
            _fail(dispatch, f"prefetch stages {stages}", "IREE's prefetch pass still rotated the K loop")
        return
    mma_ops = len(re.findall(r"\bamdgpu\.(?:mfma|wmma|scaled_mfma)\b", "".join(sections)))
    expected = mma_per_k_step(schedule) * stages
    if mma_ops != expected:
        _fail(dispatch, f"prefetch stages {stages}",
              f"after IREE's prefetch pass the kernel has {mma_ops} MMA ops, expected {expected} "
              f"({mma_per_k_step(schedule)} per K step × {stages} stages)")


_GLOBAL_ACCESS = re.compile(r"^\s+(?:ld|st)\.global\S*", re.M)


def verify_codegen(dispatch: str, ptx: str, stats: KernelStats, schedule: Schedule, gemm: Gemm,
                   target: Target) -> None:
    """The transform-dialect codegen route: the PTX of `dispatch` shows each choice of `schedule`, and its K loop
    keeps the accumulator in registers (no global loads or stores in it besides the cp.async copies)."""
    opcode = target.mma[codegen_script.CODEGEN_MMA].opcode
    _verify_only_mma(dispatch, stats, opcode, f"MMA intrinsic {codegen_script.CODEGEN_MMA}")
    threads = codegen_script.threads(schedule, target.wave_size)
    if stats.workgroup_size != threads:
        _fail(dispatch, f"warp grid {schedule.tile.warps[0]}x{schedule.tile.warps[1]}",
              f"the kernel is built for {stats.workgroup_size} threads, not {threads}")
    loops = [body for body in ptx_loops(ptx) if opcode in body]
    if not loops:
        _fail(dispatch, f"K loop of {schedule.tile.k}", "no PTX loop issues mma.sync")
    k_loop = loops[0]
    per_step = codegen_script.mma_per_k_step(schedule)
    if k_loop.count(opcode) != per_step:
        _fail(dispatch, f"tile {schedule.tile.workgroup[0]}x{schedule.tile.workgroup[1]}x{schedule.tile.k}",
              f"the K loop issues {k_loop.count(opcode)} mma.sync per warp, expected {per_step}")
    # ldmatrix.x4 loads one 16x16 fragment: A's (M×K, not transposed) and B's (K×N, transposed) counts per K step
    # pin the warp tile, which tells a 2x4 from a 4x2 warp grid (both issue the same number of mma.sync).
    (tile_m, tile_n), k_steps = codegen_script.warp_tile(schedule), schedule.tile.k // 16
    loads = (len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", k_loop)),
             len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16", k_loop)))
    expected = ((tile_m // 16) * k_steps, (tile_n // 16) * k_steps)
    if loads != expected:
        _fail(dispatch, f"warp grid {schedule.tile.warps[0]}x{schedule.tile.warps[1]} (warp tile {tile_m}x{tile_n})",
              f"the K loop loads {loads[0]} A and {loads[1]} B ldmatrix.x4 fragments, expected {expected[0]} and "
              f"{expected[1]}")
    if "cp.async.c" not in k_loop:
        _fail(dispatch, "cp.async global->shared copies", "the K loop has no cp.async")
    traffic = _GLOBAL_ACCESS.findall(k_loop)
    if traffic:
        _fail(dispatch, "accumulator in registers", f"the K loop has {len(traffic)} global loads/stores "
              f"({traffic[0].strip()} ...)")
    stages = schedule.staging.prefetch_stages
    waits = sorted({int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+);", k_loop)})
    in_flight = codegen_script.copy_groups_in_flight(schedule)
    if waits != [in_flight]:
        _fail(dispatch, f"{stages} pipeline stages", f"the K loop waits for cp.async groups {waits}, expected "
              f"[{in_flight}] (groups in flight while a step computes)")
    barriers = len(re.findall(r"\bbar\.sync\b", k_loop))
    if barriers != codegen_script.barriers_per_k_step(schedule):
        _fail(dispatch, f"{stages} pipeline stages", f"the K loop passes {barriers} barriers per step, expected "
              f"{codegen_script.barriers_per_k_step(schedule)}")
    planned = codegen_script.shared_bytes(schedule, gemm)
    if stats.lds_bytes is not None and stats.lds_bytes != planned:
        _fail(dispatch, f"shared memory ({stages} stage(s), rows '{schedule.swizzle.lds}')",
              f"planned {planned} B, the kernel allocates {stats.lds_bytes} B")


def verify_ukernel(dispatch: str, configured: Path, stats: KernelStats, schedule: PingPong8, ukernel: str, gemm: Gemm,
                   target: Target) -> None:
    """The injected warp-group ukernel replaced the contraction and its schedule shows in the ISA."""
    module = parse_module(configured.read_text(), configured.name)
    ops = contraction_ops(module)
    descriptor = _attr_text(ops[0], "iree_codegen.ukernel") if ops else None
    if descriptor is None or f'"{ukernel}"' not in descriptor:
        _fail(dispatch, f"ukernel {ukernel}", f"the contraction carries {descriptor}")
    _verify_only_mma(dispatch, stats, target.mma[ukernel_mma(target, gemm.dtype)].opcode, f"ukernel {ukernel}'s MFMA")
    if stats.lds_bytes != schedule.lds_bytes():
        _fail(dispatch, f"ukernel {ukernel}'s LDS", f"planned {schedule.lds_bytes()} B, the kernel allocates "
              f"{stats.lds_bytes} B")
    _verify_no_spills(dispatch, stats)
    program = schedule.program(2)
    step = [op for op in program.groups[0] if op.phase.startswith("step 0")]
    priorities = sum(op.kind == "setprio" for op in step)
    # The loop runs K / k_tile - 1 times (the last tile is the epilogue); LLVM may unroll a short static loop.
    trips = gemm.k // schedule.tile[2] - 1
    copies, left = divmod(stats.setprio, priorities)
    if left or not 1 <= copies <= trips:
        _fail(dispatch, "s_setprio around the MFMA clusters", f"the schedule raises and lowers priority {priorities} "
              f"times per K step ({trips} loop steps), the ISA has {stats.setprio} s_setprio")
    if stats.conditional_barriers != 2:
        _fail(dispatch, "the stagger and re-align barriers", f"found {stats.conditional_barriers} conditionally "
              "executed s_barrier, expected 2")
