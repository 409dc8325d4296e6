"""Instructions as the timing model sees them: a class, the unit it issues to, the clocks it holds that unit, when
its results are ready, the registers it reads and writes, and the counter it increments.

`classify(instruction, target)` reads one parsed instruction (`pipelines.emulator.isa.Instruction`) through a
table of opcode patterns (`CLASSES`); an opcode no pattern matches is a `TimingError` naming it, so no
instruction silently costs nothing. Costs come from the target's `Timing` and MFMA table (`pipelines.targets`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from transforms.errors import UserError

from ..emulator.isa import Instruction, Reg, parse_instruction


class TimingError(UserError, ValueError):
    """The timing model cannot cost a kernel (an instruction without a cost, a target without timing facts)."""


# Issue categories: the sequencer issues at most one instruction per category per visit, from different waves.
VALU, SALU, LDS, VMEM, BRANCH, INTERNAL = "valu", "salu", "lds", "vmem", "branch", "internal"

# (opcode pattern, class); first match wins. Classes: mma (matrix pipe), valu, trans (quarter-rate VALU), lds,
# vmem (global/buffer/flat loads and stores, direct-to-LDS too), smem, salu, branch, and the sequencer's own:
# waitcnt, barrier, setprio, nop, sleep, hint (costs no clock: scheduling hints for the compiler or the
# hardware's dependency check), end.
CLASSES = [
    (r"v_(mfma|smfmac|wmma)_", "mma"),
    (r"v_(exp|log|rcp|rsq|sqrt|sin|cos)_", "trans"),
    (r"(v_|v_dual)", "valu"),
    (r"ds_", "lds"),
    (r"(global|buffer|flat|scratch)_", "vmem"),
    (r"s_(load|buffer_load|store|buffer_store|dcache|memtime|memrealtime)", "smem"),
    (r"s_waitcnt", "waitcnt"),
    (r"s_barrier$", "barrier"),
    (r"s_setprio$", "setprio"),
    (r"s_nop$", "nop"),
    (r"s_sleep$", "sleep"),
    (r"s_(delay_alu|clause|sched_barrier|inst_prefetch|set_inst_prefetch_distance)", "hint"),
    (r"s_endpgm", "end"),
    (r"s_(branch|cbranch_|setpc|swappc|getpc)", "branch"),
    (r"s_", "salu"),
]
_COMPILED = [(re.compile(pattern), kind) for pattern, kind in CLASSES]
CATEGORY = {"mma": VALU, "trans": VALU, "valu": VALU, "lds": LDS, "vmem": VMEM, "smem": SALU, "salu": SALU,
            "branch": BRANCH, "waitcnt": INTERNAL, "barrier": INTERNAL, "setprio": SALU, "nop": INTERNAL,
            "sleep": INTERNAL, "hint": INTERNAL, "end": INTERNAL}
_STORES = re.compile(r"(ds_(write|store)|(global|buffer|flat|scratch)_store)")


@dataclass(frozen=True)
class Op:
    """One static instruction, costed. Register sets hold (file, index) pairs of VGPRs and AGPRs."""

    text: str
    kind: str  # a class of CLASSES
    category: str  # issue category
    busy: int  # clocks the unit is held: VALU port, matrix pipe (mma), LDS bank passes are per execution
    latency: int  # clocks from the end of `busy` to the result in registers (or the counter decrement)
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    accumulates: frozenset = frozenset()  # mma: the SrcC registers (read in pipe order from a previous D)
    counter: str | None = None  # "vm" or "lgkm": what the op increments until it completes
    wait_vm: int | None = None  # s_waitcnt fields
    wait_lgkm: int | None = None
    value: int = 0  # s_setprio priority, s_nop wait states, s_sleep units
    bytes: int = 0  # vmem: bytes the wave moves (all lanes)

    @cached_property
    def awaits(self) -> frozenset:
        """Registers whose in-flight results the op waits for: its sources, and the destinations it overwrites
        (not its accumulator, which an MFMA reads in pipe order). Derived once: the CU model asks on every visit."""
        return self.reads | (self.writes - self.accumulates)


def _regs(operand) -> frozenset:
    if isinstance(operand, Reg) and operand.kind in "va":
        return frozenset((operand.kind, operand.index + i) for i in range(operand.count))
    return frozenset()


def _all_regs(operands) -> frozenset:
    found: frozenset = frozenset()
    for operand in operands:
        found |= _regs(operand) if not isinstance(operand, Instruction) else _all_regs(operand.operands)
    return found


def _waitcnt(text: str) -> tuple[int | None, int | None]:
    vm = re.search(r"vmcnt\((\d+)\)", text)
    lgkm = re.search(r"lgkmcnt\((\d+)\)", text)
    return (int(vm[1]) if vm else None), (int(lgkm[1]) if lgkm else None)


# Element widths in VMEM opcodes: CDNA spells them dword/dwordxN/short/byte, RDNA b32/b128/u16/i8 (d16: 16-bit).
_WIDTH = re.compile(r"dwordx(?P<dwords>\d)|(?P<dword>dword)|[bui](?P<bits>\d+)|(?P<half>short|ushort|sshort|d16)|"
                    r"(?P<byte>byte|ubyte|sbyte)")


def _vmem_bytes(opcode: str, lanes: int) -> int:
    """Bytes one wave moves: element width × lanes (dwordx4, b128: 16 B per lane)."""
    match = _WIDTH.search(opcode.split("_", 1)[1])
    if match is None:
        raise TimingError(f"the timing model cannot read the width of '{opcode}'.")
    if match["dwords"]:
        per_lane = 4 * int(match["dwords"])
    elif match["bits"]:
        per_lane = int(match["bits"]) // 8
    elif match["dword"]:
        per_lane = 4
    elif match["half"]:
        per_lane = 2
    else:
        per_lane = 1
    return per_lane * lanes


def classify(inst: Instruction, target) -> Op:
    """The costed form of one instruction on `target` (which has `timing` and an MFMA table)."""
    timing = target.timing
    if timing is None:
        raise TimingError(f"{target.name} has no timing facts; the timing model covers AMD targets.")
    kind = next((k for pattern, k in _COMPILED if pattern.match(inst.opcode)), None)
    if kind is None:
        raise TimingError(f"the timing model has no cost for '{inst.opcode}' (line {inst.line}).")
    category = CATEGORY[kind]
    ops = inst.operands
    store = bool(_STORES.match(inst.opcode))
    writes = _regs(ops[0]) if ops and not store and kind not in ("waitcnt", "nop", "setprio") else frozenset()
    reads = _all_regs(ops[0 if store else 1:])
    if inst.opcode == "v_dual":
        writes = frozenset().union(*(_regs(half.operands[0]) for half in ops))
        reads = frozenset().union(*(_all_regs(half.operands[1:]) for half in ops))
    lanes = target.wave_size
    if kind == "mma" and inst.opcode.startswith("v_smfmac"):
        # vdst, srcA (2:4-sparse A), srcB, index: the destination is also the accumulator, the index a source
        cycles = getattr(target, "sparse_mma_cycles", {}).get(inst.opcode, 0)
        if not cycles:
            raise TimingError(f"the timing model has no matrix pipe cost for '{inst.opcode}' on {target.name}.")
        return Op(inst.text, kind, category, cycles, timing.mma_read_extra, _all_regs(ops[1:4]), writes, writes)
    if kind == "mma":
        cycles = next((m.cycles for m in target.mma.values() if m.opcode == inst.opcode), 0)
        if not cycles:
            raise TimingError(f"the timing model has no matrix pipe cost for '{inst.opcode}' on {target.name}.")
        srcc = _regs(ops[3]) if len(ops) > 3 else frozenset()
        return Op(inst.text, kind, category, cycles, timing.mma_read_extra, _all_regs(ops[1:3]), writes, srcc)
    if kind in ("valu", "trans"):
        busy = timing.valu_cycles * (4 if kind == "trans" else 1)
        return Op(inst.text, kind, category, busy, timing.valu_latency, reads, writes)
    if kind == "lds":
        return Op(inst.text, kind, category, 0, timing.lds_latency, reads, writes, counter="lgkm")
    if kind == "vmem":
        direct = "lds" in inst.modifiers
        return Op(inst.text, kind, category, 0, timing.vmem_latency, reads, frozenset() if direct else writes,
                  counter="vm", bytes=_vmem_bytes(inst.opcode, lanes))
    if kind == "smem":
        return Op(inst.text, kind, category, 0, timing.smem_latency, counter="lgkm")
    if kind == "waitcnt":
        vm, lgkm = _waitcnt(inst.text)
        return Op(inst.text, kind, category, 0, 0, wait_vm=vm, wait_lgkm=lgkm)
    if kind in ("setprio", "nop", "sleep"):
        value = ops[0] if ops and isinstance(ops[0], int) else int(str(ops[0] if ops else "0"), 0)
        return Op(inst.text, kind, category, 0, timing.salu_latency if kind == "setprio" else 0, value=value)
    if kind == "branch":
        return Op(inst.text, kind, category, 0, timing.branch_latency)
    if kind == "salu":
        return Op(inst.text, kind, category, 0, timing.salu_latency)
    return Op(inst.text, kind, category, 0, 0)  # hint, barrier, end: the sequencer's (see cu.py)


def classify_text(lines: list[str], target) -> list[Op]:
    """Costed ops of assembler lines (one instruction each), for tests and hand-written programs."""
    return [classify(parse_instruction(line, number), target) for number, line in enumerate(lines, 1)]
