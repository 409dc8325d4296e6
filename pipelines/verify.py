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
from transforms.errors import UserError
from transforms.problem import Gemm, contraction_ops, gemms_from_mlir, parse_module
from transforms.schedule import Schedule, k_contiguous, lds_plan_bytes, mma_per_k_step, swizzle_params, \
    workgroup_size
from transforms.tuning_spec import APPLIED_MARKER
from transforms.kernels import kernel_label, kernel_mma, kernel_name, kernel_threads
from transforms.warpgroups import DoubleBuffered, PingPong8, ProducerConsumer

from .compiler import IR_DUMPS, PREFETCH_PASS, SWIZZLE_PASS, pass_ir_sections
from .inspect import KernelStats, copy_block_ids, ptx_loops
from .job import contraction_key
from .targets import Target


def configured_contractions(configured_ir: str, name: str) -> list[Gemm]:
    """The contractions a dispatch's configured IR computes, in program order, each as a schedule is requested for
    it (`job.contraction_key`: the epilogue set aside); one with dynamic sizes is none of them."""
    with ir.Context(), ir.Location.unknown():
        module = parse_module(configured_ir, name)
        return [contraction_key(g) for _, g in gemms_from_mlir(module, name, [])] if contraction_ops(module) else []


class FallbackError(UserError, RuntimeError):
    """A requested schedule choice that the compiled output does not show; the message names the choice."""


def _attr_text(op: ir.Operation, name: str) -> str | None:
    return str(op.attributes[name]) if name in op.attributes else None


def _enclosing_function(op: ir.Operation) -> ir.Operation:
    while op.name != "func.func":
        op = op.parent
    return op


def _fail(dispatch: str, choice: str, detail: str) -> None:
    raise FallbackError(f"{dispatch}: requested {choice} did not take effect: {detail}.")


def verify_configuration(dispatch: str, op: ir.Operation, expected_info: ir.Attribute) -> None:
    """`op` carries the requested lowering_config and its dispatch function the requested translation_info."""
    lowering = _attr_text(op, "lowering_config")
    expected_lowering = str(iree_codegen.CompilationInfoAttr(expected_info).lowering_config)
    if lowering != expected_lowering:
        _fail(dispatch, "compilation_info", f"the contraction carries {lowering}, not {expected_lowering}")
    translation = _attr_text(_enclosing_function(op), "translation_info")
    expected_translation = str(iree_codegen.CompilationInfoAttr(expected_info).translation_info)
    if translation != expected_translation:
        _fail(dispatch, "translation_info", f"the dispatch function carries {translation}, not "
              f"{expected_translation}")


def verify_dispatch(dispatch: str, op: ir.Operation, dump: Path, stats: KernelStats, schedule: Schedule,
                    gemm: Gemm, expected_info: ir.Attribute, target: Target, evidence: bool = False) -> None:
    """`op` is the dispatch's contraction in its configured IR; `dump` the folder with the pass IR. `evidence`:
    the tuning spec marked the op it matched and IREE printed the pass IR (the tuning-spec route), so the marker,
    the LDS swizzle and the prefetch depth are checked too."""
    verify_configuration(dispatch, op, expected_info)
    if evidence and APPLIED_MARKER not in op.attributes:
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

    if evidence:
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
    mma = codegen_script.codegen_mma(gemm.dtype)
    opcode = target.mma[mma].opcode
    _verify_only_mma(dispatch, stats, opcode, f"MMA intrinsic {mma}")
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
    _verify_block_order(dispatch, ptx, schedule, gemm)
    planned = codegen_script.shared_bytes(schedule, gemm)
    if stats.lds_bytes is not None and stats.lds_bytes != planned:
        _fail(dispatch, f"shared memory ({stages} stage(s), rows '{schedule.swizzle.lds}')",
              f"planned {planned} B, the kernel allocates {stats.lds_bytes} B")


def verify_lanes(dispatch: str, stats: KernelStats, schedule: Schedule, gemm: Gemm, target: Target) -> None:
    """The ROCm lane route: the ISA issues only the schedule's MMA, the wave grid's threads in waves of the target,
    no LDS at all (the route reads fragments straight from global memory, and an LDS buffer would mean a
    lane-private tensor became a shared one) and no spills (the accumulator stays in registers)."""
    mma = schedule.tile.mma
    _verify_only_mma(dispatch, stats, target.mma[mma].opcode, f"MMA intrinsic {mma}")
    threads = codegen_script.threads(schedule, target.wave_size)
    if (stats.workgroup_size, stats.wave_size) != (threads, target.wave_size):
        _fail(dispatch, f"wave grid {schedule.tile.warps[0]}x{schedule.tile.warps[1]}",
              f"the kernel has {stats.workgroup_size} threads in waves of {stats.wave_size}, not {threads} in waves "
              f"of {target.wave_size}")
    if stats.lds_bytes or stats.lds_reads or stats.lds_writes:
        _fail(dispatch, "fragments read per lane from global memory", f"the kernel allocates {stats.lds_bytes} B of "
              f"LDS and issues {stats.lds_reads} LDS reads and {stats.lds_writes} writes")
    _verify_no_spills(dispatch, stats)


def _verify_block_order(dispatch: str, ptx: str, schedule: Schedule, gemm: Gemm) -> None:
    """Row order: each cp.async copy finds its tile from one block id (A's M tile from %ctaid.y, B's N tile from
    %ctaid.x). Raster order: each copy depends on the block ids its tile does in that order (usually both, since
    the tile a block computes depends on its linear id; `codegen_script.tile_block_ids`)."""
    copies = copy_block_ids(ptx)
    both = sum(ids >= {"x", "y"} for ids in copies)
    if schedule.swizzle.workgroup_order == "raster":
        m_ids, n_ids = codegen_script.tile_block_ids(schedule, gemm)
        off = [ids for ids in copies if not (ids >= m_ids or ids >= n_ids)]
        if not copies or off:
            _fail(dispatch, f"raster workgroup order ({schedule.swizzle.group_rows} rows per group)",
                  f"{len(off)} of {len(copies)} cp.async copies address their tile from block id(s) "
                  f"{','.join(sorted(off[0])) if off else 'none'}, where the raster order's M tile needs "
                  f"{','.join(sorted(m_ids))} and its N tile {','.join(sorted(n_ids))}")
    if schedule.swizzle.workgroup_order == "row" and both:
        _fail(dispatch, "row workgroup order", f"{both} of {len(copies)} cp.async copies address their tile from "
              "both block ids (a remapped order)")


def verify_ukernel(dispatch: str, configured: Path, stats: KernelStats,
                   schedule: PingPong8 | DoubleBuffered | ProducerConsumer, gemm: Gemm, target: Target) -> None:
    """The injected warp-group ukernel replaced the contraction and its schedule shows in the ISA."""
    ukernel = kernel_name(schedule, gemm.dtype, gemm.layout)
    module = parse_module(configured.read_text(), configured.name)
    ops = contraction_ops(module)
    descriptor = _attr_text(ops[0], "iree_codegen.ukernel") if ops else None
    if descriptor is None or f'"{ukernel}"' not in descriptor:
        _fail(dispatch, f"ukernel {ukernel}", f"the contraction carries {descriptor}")
    opcode = target.mma[kernel_mma(schedule, target, gemm.dtype)].opcode
    _verify_only_mma(dispatch, stats, opcode, f"ukernel {ukernel}'s MMA")
    if stats.lds_bytes != schedule.lds_bytes():
        _fail(dispatch, f"ukernel {ukernel}'s LDS", f"planned {schedule.lds_bytes()} B, the kernel allocates "
              f"{stats.lds_bytes} B")
    if (stats.wave_size, stats.workgroup_size) != (target.wave_size, kernel_threads(schedule)):
        _fail(dispatch, f"ukernel {ukernel}'s waves", f"built for {kernel_threads(schedule)} threads in waves of "
              f"{target.wave_size}, the kernel has {stats.workgroup_size} in waves of {stats.wave_size}")
    _verify_no_spills(dispatch, stats)
    if isinstance(schedule, PingPong8):
        _verify_pingpong(dispatch, stats, schedule, gemm)
    else:
        isa = (configured.parent / stats.isa_file).read_text()
        if stats.conditional_barriers or stats.setprio:
            _fail(dispatch, f"the {kernel_label(schedule)} K loop", "found a stagger barrier or s_setprio the "
                  "schedule does not have")
        if isinstance(schedule, ProducerConsumer):
            _verify_producer_consumer(dispatch, schedule, isa, opcode)
        else:
            _verify_double_buffered(dispatch, schedule, barrier_phases(isa), opcode)
        if isinstance(schedule, DoubleBuffered) and not schedule.register_prefetch and (
                stats.dma_loads == 0 or stats.global_loads or stats.lds_writes):
            _fail(dispatch, "direct-to-LDS loads", f"{stats.dma_loads} direct-to-LDS loads, {stats.global_loads} "
                  f"loads into registers and {stats.lds_writes} LDS stores")


def _verify_pingpong(dispatch: str, stats: KernelStats, schedule: PingPong8, gemm: Gemm) -> None:
    program = schedule.program(2)
    step = [op for op in program.groups[0] if op.phase.startswith("step 0")]
    priorities = sum(op.kind == "setprio" for op in step)
    # The loop runs K / k_tile - 1 times (the last tile is the epilogue); LLVM may unroll a short static loop. The
    # two-stage kernel runs every step at raised priority: K / k_tile - 2 in the loop, the last two after it.
    trips = gemm.k // schedule.tile[2] - (1 if schedule.lds_stages == 1 else 0)
    copies, left = divmod(stats.setprio, priorities)
    if left or not 1 <= copies <= trips:
        _fail(dispatch, "s_setprio around the MFMA clusters", f"the schedule raises and lowers priority {priorities} "
              f"times per K step ({trips} loop steps), the ISA has {stats.setprio} s_setprio")
    if stats.conditional_barriers != 2:
        _fail(dispatch, "the stagger and re-align barriers", f"found {stats.conditional_barriers} conditionally "
              "executed s_barrier, expected 2")
    if schedule.lds_stages == 2 and (stats.dma_loads == 0 or stats.global_loads or stats.lds_writes):
        _fail(dispatch, "direct-to-LDS loads", f"{stats.dma_loads} direct-to-LDS loads, {stats.global_loads} loads "
              f"into registers and {stats.lds_writes} LDS stores")


def _mma_and_loads(phase: list[str], opcode: str) -> tuple[list[int], list[int]]:
    return ([i for i, line in enumerate(phase) if line.split()[:1] == [opcode]],
            [i for i, line in enumerate(phase) if re.match(r"\s*(?:buffer|global)_load", line)])


def _verify_producer_consumer(dispatch: str, schedule: ProducerConsumer, isa: str, opcode: str) -> None:
    """The roles are separate code: no barrier phase of a basic block both loads from global memory and
    multiplies; one such phase holds the consumers' MMAs of a K step and ends in their barrier, another loads
    without multiplying and ends in the producers' barrier."""
    mma_per_step = schedule.counts()[3]
    consumer_step = producer_step = False
    for block in basic_blocks(isa):
        for phase in barrier_phases(block):  # LLVM may unroll a loop into one block of several steps
            mmas, loads = _mma_and_loads(phase, opcode)
            ends_in_barrier = bool(phase) and phase[-1].split()[:1] == ["s_barrier"]
            if mmas and loads:
                _fail(dispatch, "producer and consumer waves", f"a phase of a basic block has {len(mmas)} {opcode} "
                      f"and {len(loads)} global loads")
            consumer_step |= ends_in_barrier and len(mmas) == mma_per_step
            producer_step |= ends_in_barrier and bool(loads) and not mmas
    if not (consumer_step and producer_step):
        _fail(dispatch, "producer and consumer waves", f"expected a consumer block of {mma_per_step} {opcode} and "
              f"one barrier (found: {consumer_step}) and a producer block of loads and a barrier (found: "
              f"{producer_step})")


def _verify_double_buffered(dispatch: str, schedule: DoubleBuffered, phases: list[list[str]], opcode: str) -> None:
    """Every barrier phase with MMAs is one K step: the step's MMAs, then (except for the last tile) the next
    tile's loads; the interleave variants issue loads between their MMAs, the plain one before the first. Read on
    barrier phases rather than the loop, so a loop LLVM unrolled or rotated reads the same."""
    label = kernel_label(schedule)
    mma_per_step = schedule.counts()[2]
    steps = [phase for phase in phases if any(line.split()[:1] == [opcode] for line in phase)]
    for number, phase in enumerate(steps):
        mmas, loads = _mma_and_loads(phase, opcode)
        if len(mmas) != mma_per_step:
            _fail(dispatch, f"the {label} K loop", f"expected {mma_per_step} {opcode} between barriers, a phase has "
                  f"{len(mmas)}")
        between = [i for i in loads if mmas[0] < i < mmas[-1]]
        last = number == len(steps) - 1
        if schedule.fetch_slices > 1 and not last and not between:
            _fail(dispatch, "global loads interleaved with the MMAs", "a K step issues every global load before "
                  "its first or after its last MMA")
        if schedule.fetch_slices == 1 and (between or any(i > mmas[-1] for i in loads)):
            _fail(dispatch, "the whole next tile fetched before the MMAs", f"{len(loads)} global loads of a K "
                  f"step, {len(between)} of them between MMAs")


def _code(isa: str) -> list[str]:
    """The kernel's instructions and labels in code order (the first kernel of the file)."""
    return [line for line in isa.split(".Lfunc_end", 1)[0].splitlines()
            if re.match(r"^\.LBB\d+_\d+:", line)
            or (line.startswith("\t") and not line.lstrip().startswith((";", ".")))]


def barrier_phases(code: str | list[str]) -> list[list[str]]:
    """Instructions (a kernel's ISA text, or lines of it) in code order, cut at every `s_barrier` (the barrier
    ends its phase)."""
    phases, current = [], []
    for line in _code(code) if isinstance(code, str) else code:
        current.append(line)
        if line.split()[:1] == ["s_barrier"]:
            phases.append(current)
            current = []
    return phases + [current]


def basic_blocks(isa: str) -> list[list[str]]:
    """The kernel's instructions cut at labels and after branches."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in _code(isa):
        if line.startswith(".LBB"):
            blocks.append(current)
            current = []
            continue
        current.append(line)
        if re.match(r"\s+s_(?:cbranch_\w+|branch)\b", line):
            blocks.append(current)
            current = []
    return [block for block in blocks + [current] if block]
