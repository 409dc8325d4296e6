"""Where a wrong result went wrong: one workgroup run again, once as the kernel ran and once as a reference.

A kernel that waits for its loads and orders its LDS accesses with barriers computes the same values whatever the
latency of memory and however its waves interleave. So the workgroup that stored the first wrong output is run
twice on its own, over a copy of the dispatch's memory: once with the emulator's latency model and a seeded wave
interleaving, and once as a reference in which every memory operation completes at issue and each wave runs until
it reaches a barrier or ends, one after another. Each wave's ALU and matrix instructions (the ones that write
registers when they execute) are logged with the values they wrote; the first instruction whose values differ
between the two runs, in that wave's own order, is where a missing wait or barrier first shows. When no value
differs, the wrong value is what the instructions compute (a wrong opcode, operand or address), and the report
names the instruction that last wrote the stored register instead.
"""

from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass


from .isa import Reg
from .machine import Wave
from .waitstates import classify, mma_passes

LOGGED = ("valu", "salu", "mfma", "wmma")  # instructions whose register writes happen when they execute


@dataclass
class Log:
    """Per wave: (pc, digest of the values written) of every logged instruction, in execution order; the last
    writer of every register."""

    steps: list
    last_writer: dict


def _values(w: Wave, regs) -> bytes:
    parts = []
    for r in regs:
        if r.kind == "s":
            parts.append(w.s[r.index:r.index + r.count].tobytes())
        else:
            file = w.v if r.kind == "v" else w.a
            parts.append(file[r.index:r.index + r.count].tobytes())
    return b"".join(parts)


def _run(dispatch_factory, wg_id: int, grid_id: tuple, reference: bool, ops) -> list[Log]:
    dispatch = dispatch_factory()
    dispatch.reference = reference
    logs: dict[int, Log] = {}

    def log(w: Wave, pc: int) -> None:
        entry = logs.setdefault(w.id, Log([], {}))
        op = ops[pc]
        for r in op.writes:
            for i in range(r.index, r.index + r.count):
                entry.last_writer[(r.kind, i)] = pc
        if op.kind in LOGGED and op.writes:
            entry.steps.append((pc, zlib.crc32(_values(w, op.writes))))

    dispatch.log = log
    dispatch.run_batch([wg_id], [grid_id])
    return [logs.get(i, Log([], {})) for i in range(dispatch.waves_per_group)]


def localise(dispatch, wg_id: int, grid_id: tuple, wave: int, store_pc: int) -> dict:
    """Run workgroup `wg_id` of `dispatch` again as it ran and as a reference (see the module docstring); the first
    logged instruction whose values differ, or, where none does, the last writer of the registers that the store at
    `store_pc` (by wave `wave`) stored."""
    kernel = dispatch.kernel
    ops = [classify(inst, dispatch.ctx.arch, mma_passes(dispatch.ctx.arch)) for inst in kernel.instructions]
    def factory():  # each re-execution starts from the memory the dispatch left, on its own copy
        memory = copy.copy(dispatch.memory)
        memory.data = dispatch.memory.data.copy()
        memory.watched = None
        memory.out_of_range = {}
        twin = type(dispatch)(kernel, dispatch.ctx, memory, dispatch.kernarg, dispatch.seed)
        twin.wait_violations = {}  # the dispatch already checked wait states
        twin.host_sgprs = dispatch.host_sgprs  # the launch's dispatch packet and queue (a foreign kernel's)
        return twin

    ran = _run(factory, wg_id, grid_id, False, ops)
    reference = _run(factory, wg_id, grid_id, True, ops)
    first = None
    for w, (mine, theirs) in enumerate(zip(ran, reference)):
        for step, (a, b) in enumerate(zip(mine.steps, theirs.steps)):
            if a[0] != b[0]:  # the two runs took different paths: the branch before this step decided on a value
                candidate = (step, w, a[0], "takes another path than")
            elif a[1] != b[1]:
                candidate = (step, w, a[0], "writes other values than")
            else:
                continue
            if first is None or candidate[0] < first[0]:
                first = candidate
            break
    if first is not None:
        step, w, pc, how = first
        inst = kernel.instructions[pc]
        return {"kind": "diverges", "wave": w, "step": step, "line": inst.line, "instruction": inst.text,
                "note": f"wave {w}, at its {_ordinal(step + 1)} logged instruction, {how} the reference run "
                        "(memory operations complete at issue, waves one at a time)"}
    store = kernel.instructions[store_pc]
    data = [r for r in classify(store, dispatch.ctx.arch, {}).reads if isinstance(r, Reg)]
    last = ran[wave].last_writer
    writers = sorted({last[(r.kind, i)] for r in data[:1] for i in range(r.index, r.index + r.count)
                      if (r.kind, i) in last})
    if not writers:
        return {"kind": "computed", "wave": wave, "step": None, "line": None, "instruction": None,
                "note": "the reference run computes the same values: the wrong value is what the instructions "
                        "compute, not an effect of latency or wave order"}
    inst = kernel.instructions[writers[-1]]
    return {"kind": "computed", "wave": wave, "step": None, "line": inst.line, "instruction": inst.text,
            "note": "the reference run computes the same values: the wrong value is what the instructions compute; "
                    "the stored register was last written by this instruction"}


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"

