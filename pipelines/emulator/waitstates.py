"""Wait-state hazards: instruction pairs the hardware does not interlock, so software must space them apart.

On CDNA3/CDNA4 the sequencer does not check some dependencies (an MFMA result read by a VALU, a VALU-written SGPR
read by a buffer instruction, ...); the code must put enough independent instructions or `s_nop`s between them.
A wait state is one issue slot: `s_nop N` provides N + 1, every other instruction 1 (LLVM's
`SIInstrInfo::getNumWaitStates`). `RULES` is the table, one row per hazard, each citing where its numbers come
from; `check_trace` runs it over the instructions a wave actually executed, so loops and branches count exactly,
and returns each violation once per (producer, consumer, rule) with the fewest wait states seen.

The numbers are the CDNA3 ISA guide's "Manually Inserted Wait States (NOPs)" / MAI dependency tables as LLVM
transcribes them (llvm/lib/Target/AMDGPU/GCNHazardRecognizer.cpp: checkMAIHazards90A, checkMAIVALUHazards,
checkVMEMHazards, checkVALUHazards, checkSetRegHazards, checkGetRegHazards, checkReadM0Hazards, fixWMMAHazards)
and rocRoller does (lib/include/rocRoller/Scheduling/Observers/WaitState/: XDLWrite94x, XDLReadSrcC94x,
VALUWrite, VALUWriteSGPRVMEM, VALUTransWrite94x; XDLWrite94x.cpp adds one wait state on CDNA4 for MFMAs of more
than 2 passes). MFMA passes are the matrix-pipe clocks of `pipelines.targets` divided by 4 (one pass = 4 clocks,
SISchedule.td). RDNA3.5 (gfx1151) interlocks VGPR and SGPR dependencies in hardware (LLVM's
`hasNoDataDepHazard` is true from gfx10); its remaining hazards are resolved with `s_waitcnt_depctr` or `v_nop`,
not wait states, and the one a GEMM can meet, a WMMA reading the previous WMMA's result as A or B, is a row here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from ..targets import TARGETS, IsaFamily, isa_family
from .isa import EXEC, M0, VCC, Instruction, Reg

MAI, WMMA = "mai", "wmma"  # the tables of rules, as an ISA family names the one that applies (`IsaFamily.wait_states`)


@dataclass(frozen=True)
class Op:
    """What the table needs of one static instruction."""

    kind: str  # 'mfma', 'wmma', 'valu', 'vmem', 'ds', 'smem', 'salu', 'setreg', 'getreg', 'other'
    writes: tuple  # Reg ranges written
    reads: tuple  # Reg ranges read (all operands)
    roles: tuple = ()  # MFMA/WMMA: (srcA, srcB, srcC) as Regs (or None for constants); SMFMAC adds its index
    passes: int = 0  # MFMA/WMMA: matrix-pipe passes of 4 clocks
    trans: bool = False  # a transcendental VALU op
    hwreg: str = ""  # s_setreg / s_getreg: the hardware register named
    wait_states: int = 1  # issue slots it provides: s_nop N -> N + 1
    reads_m0: bool = False  # LDS DMA (buffer_load ... lds), s_sendmsg, ds_*_addtid


@dataclass(frozen=True)
class Violation:
    rule: str
    producer: int  # pc
    consumer: int  # pc
    register: str  # the overlapping register range, as text
    required: int
    present: int
    source: str


def overlap(a: Reg, b: Reg) -> bool:
    return a.kind == b.kind and a.index < b.index + b.count and b.index < a.index + a.count


def reg_text(reg: Reg) -> str:
    names = {VCC: "vcc", EXEC: "exec", M0: "m0"}
    if reg.kind == "s" and reg.index in names:
        return names[reg.index]
    return f"{reg.kind}{reg.index}" if reg.count == 1 else f"{reg.kind}[{reg.index}:{reg.index + reg.count - 1}]"


def _first_overlap(regs, others) -> Reg | None:
    for r in regs:
        for o in others:
            if r is not None and o is not None and overlap(r, o):
                return o
    return None


# ---------------------------------------------------------------------------------------------------- the table
# A rule: (name, table, producer test, consumer test, required(producer, consumer, ISA family, overlap) -> int or None,
# which registers meet: 'raw' (producer writes, consumer reads), 'waw', 'war' (producer reads, consumer writes),
# source). `required` may be 0 (e.g. SrcC the same registers): the nearest producer then hides older ones.

def _xdl_extra(family: IsaFamily, passes: int) -> int:
    # rocRoller XDLWrite94x.cpp: CDNA4 needs one more wait state after an XDL MFMA of more than 2 passes.
    return family.xdl_write_extra if passes > 2 else 0


def _mfma_srcc(p: Op, c: Op, family: IsaFamily, reg: Reg) -> int:
    src_c = c.roles[2]
    # Same registers as the previous MFMA's destination (the accumulate chain): interlocked, except after a
    # 2-pass MFMA (GCNHazardRecognizer checkMAIHazards90A, GFX940_SMFMA4x4WritesVGPRFullSrcCWaitStates = 2).
    if src_c is not None and any(w == src_c for w in p.writes):
        return 2 if p.passes == 2 else 0
    # Overlapping but not the same: XDL N passes -> N + 1 (GFX940_XDL_N_PassWritesVGPROverlappedSMFMASrcCWaitStates);
    # CDNA4 one more after more than 2 passes (rocRoller XDLWrite94x: N + 3 + 1 - 2).
    return p.passes + 1 + _xdl_extra(family, p.passes)


def _mfma_write_read(p: Op, c: Op, family: IsaFamily, reg: Reg) -> int:
    # XDL N passes -> N + 3 before SrcA/B of an MFMA, a VALU, VMEM, DS or FLAT reads or a VALU writes its result
    # (GFX940_XDL_N_PassWritesVGPROverlappedSrcABWaitStates, GFX940_XDL_N_PassWriteVgprVALUMemExpReadWaitStates,
    # GFX940_XDL_N_PassWriteVgprVALUWawWaitStates; CDNA3 ISA guide table "XDL write VGPR"); CDNA4 +1.
    return p.passes + 3 + _xdl_extra(family, p.passes)


def _srcc_read_then_write(p: Op, c: Op, family: IsaFamily, reg: Reg) -> int:
    # An XDL MFMA reads SrcC late; a VALU/memory write of those registers must wait: 2 passes -> 1, 4 -> 3, 8 -> 7,
    # 16 -> 15 (GCNHazardRecognizer checkMAIVALUHazards SMFMA*ReadVgprVALUWarWaitStates; rocRoller XDLReadSrcC94x).
    return {2: 1, 4: 3, 8: 7}.get(p.passes, 15)


@dataclass(frozen=True)
class Rule:
    name: str
    table: str  # MAI or WMMA: the families whose `wait_states` name it
    producer: Callable[[Op], bool]
    consumer: Callable[[Op], bool]
    relation: str  # 'raw', 'waw', 'war'
    required: Callable[[Op, Op, IsaFamily, Reg], int]
    source: str
    producer_regs: Callable[[Op], tuple] = lambda op: op.writes
    consumer_regs: Callable[[Op], tuple] = lambda op: op.reads
    unit: str = "wait states"  # or 'VALU instructions' (gfx11 v_nop rules)


def _vector(regs) -> tuple:
    return tuple(r for r in regs if r is not None and r.kind in "va")


def _scalar(regs) -> tuple:
    return tuple(r for r in regs if r is not None and r.kind == "s")


_is_valu = lambda op: op.kind == "valu"  # noqa: E731
_is_mem = lambda op: op.kind in ("vmem", "ds")  # noqa: E731

RULES: tuple[Rule, ...] = (
    Rule("mfma-write-srcc", MAI, lambda p: p.kind == "mfma", lambda c: c.kind == "mfma", "raw", _mfma_srcc,
         "CDNA3 ISA guide, MAI dependency table (XDL write VGPR -> XDL read SrcC overlapped); "
         "GCNHazardRecognizer.cpp checkMAIHazards90A; rocRoller XDLWrite94x",
         consumer_regs=lambda c: (c.roles[2],)),
    Rule("mfma-write-srcab", MAI, lambda p: p.kind == "mfma", lambda c: c.kind == "mfma", "raw", _mfma_write_read,
         "CDNA3 ISA guide, MAI dependency table (XDL write VGPR -> XDL read SrcA/B); GCNHazardRecognizer.cpp "
         "checkMAIHazards90A; rocRoller XDLWrite94x",
         consumer_regs=lambda c: c.roles[:2] + c.roles[3:]),
    Rule("mfma-write-valu-mem-read", MAI, lambda p: p.kind == "mfma", lambda c: _is_valu(c) or _is_mem(c), "raw",
         _mfma_write_read,
         "CDNA3 ISA guide, MAI dependency table (XDL write VGPR -> VALU/VMEM/DS/FLAT read); GCNHazardRecognizer.cpp "
         "checkMAIVALUHazards; rocRoller XDLWrite94x",
         consumer_regs=lambda c: _vector(c.reads)),
    Rule("mfma-write-valu-mem-write", MAI, lambda p: p.kind == "mfma", lambda c: _is_valu(c) or _is_mem(c), "waw",
         _mfma_write_read,
         "CDNA3 ISA guide, MAI dependency table (XDL write VGPR -> VALU write, WAW); GCNHazardRecognizer.cpp "
         "checkMAIVALUHazards; rocRoller XDLWrite94x",
         consumer_regs=lambda c: _vector(c.writes)),
    Rule("mfma-srcc-read-write", MAI, lambda p: p.kind == "mfma", lambda c: _is_valu(c) or _is_mem(c), "war",
         _srcc_read_then_write,
         "CDNA3 ISA guide, MAI dependency table (XDL read SrcC -> VALU write, WAR); GCNHazardRecognizer.cpp "
         "checkMAIVALUHazards; rocRoller XDLReadSrcC94x",
         producer_regs=lambda p: (p.roles[2],), consumer_regs=lambda c: _vector(c.writes)),
    Rule("valu-write-mfma-read", MAI, _is_valu, lambda c: c.kind == "mfma", "raw", lambda p, c, a, r: 2,
         "CDNA3 ISA guide, MAI dependency table (VALU write VGPR -> MFMA read: 2); GCNHazardRecognizer.cpp "
         "checkMAIHazards90A LegacyVALUNotDotWritesVGPRWaitStates; rocRoller VALUWrite",
         producer_regs=lambda p: _vector(p.writes), consumer_regs=lambda c: _vector(c.roles)),
    Rule("valu-write-exec-mfma", MAI, _is_valu, lambda c: c.kind == "mfma", "raw", lambda p, c, a, r: 4,
         "CDNA3 ISA guide, MAI dependency table (VALU write EXEC -> MFMA: 4); GCNHazardRecognizer.cpp "
         "checkMAIHazards90A VALUWritesExecWaitStates",
         producer_regs=lambda p: tuple(w for w in p.writes if overlap(w, Reg("s", EXEC, 2))),
         consumer_regs=lambda c: (Reg("s", EXEC, 2),)),
    Rule("valu-write-sgpr-vmem-read", MAI, _is_valu, lambda c: c.kind == "vmem", "raw", lambda p, c, a, r: 5,
         "CDNA3 ISA guide, section 4.5 Manually Inserted Wait States (VALU writes SGPR -> VMEM reads that SGPR: 5); "
         "GCNHazardRecognizer.cpp checkVMEMHazards VmemSgprWaitStates; rocRoller VALUWriteSGPRVMEM",
         producer_regs=lambda p: _scalar(p.writes), consumer_regs=lambda c: _scalar(c.reads)),
    Rule("valu-write-sgpr-valu-read", MAI, _is_valu, _is_valu, "raw", lambda p, c, a, r: 2,
         "CDNA3 ISA guide, section 4.5 (VALU writes SGPR/VCC -> VALU reads it as a constant: 2); "
         "GCNHazardRecognizer.cpp checkVALUHazards VALUWriteSGPRVALUReadWaitstates (hasVDecCoExecHazard, gfx940+); "
         "rocRoller VALUWriteSGPRVCC94x",
         producer_regs=lambda p: tuple(w for w in _scalar(p.writes) if not overlap(w, Reg("s", EXEC, 2))),
         consumer_regs=lambda c: _scalar(c.reads)),
    Rule("trans-write-valu-read", MAI, lambda p: p.kind == "valu" and p.trans,
         lambda c: c.kind == "valu" and not c.trans, "raw", lambda p, c, a, r: 1,
         "CDNA3 ISA guide, section 4.5 (VALU trans op -> non-trans VALU reads its result: 1); "
         "GCNHazardRecognizer.cpp checkVALUHazards TransDefWaitstates (hasTransForwardingHazard); "
         "rocRoller VALUTransWrite94x",
         producer_regs=lambda p: _vector(p.writes), consumer_regs=lambda c: _vector(c.reads)),
    Rule("salu-write-m0-lds-dma", MAI, lambda p: p.kind == "salu", lambda c: c.reads_m0, "raw",
         lambda p, c, a, r: 1,
         "CDNA3 ISA guide, section 4.5 (S_MOV to M0 -> LDS DMA / s_sendmsg / LDS add-TID reading M0: 1); "
         "GCNHazardRecognizer.cpp checkReadM0Hazards (hasReadM0LdsDmaHazard)",
         producer_regs=lambda p: tuple(w for w in p.writes if overlap(w, Reg("s", M0))),
         consumer_regs=lambda c: (Reg("s", M0),)),
    Rule("setreg-getreg", MAI, lambda p: p.kind == "setreg", lambda c: c.kind in ("getreg", "setreg"), "hwreg",
         lambda p, c, a, r: 2,
         "CDNA3 ISA guide, section 4.5 (S_SETREG -> S_GETREG / S_SETREG of the same hardware register: 2); "
         "GCNHazardRecognizer.cpp checkGetRegHazards, checkSetRegHazards (getSetRegWaitStates 2 on gfx9)"),
    Rule("wmma-write-srcab", WMMA, lambda p: p.kind == "wmma", lambda c: c.kind == "wmma", "raw",
         lambda p, c, a, r: 1,
         "RDNA3 ISA guide, WMMA dependency checks (a WMMA reading the previous WMMA's D as A or B needs one "
         "independent VALU, e.g. v_nop); GCNHazardRecognizer.cpp fixWMMAHazards",
         consumer_regs=lambda c: c.roles[:2], unit="VALU instructions"),
)
# XNACK soft clauses (CDNA: XNACK is on or 'any' in these kernels): consecutive VMEM (or SMEM) instructions form a
# clause the hardware may replay after a page fault, so no instruction of a clause may write a register that one of
# the clause reads or writes, and a store may not follow loads in one; a non-memory instruction (LLVM: s_nop 0) ends
# the clause (GCNHazardRecognizer.cpp checkSoftClauseHazards, called from checkVMEMHazards and checkSMRDHazards).
_is_clause_mem = lambda op: op.kind in ("vmem", "smem")  # noqa: E731
SOFT_CLAUSE = Rule("xnack-soft-clause", MAI, _is_clause_mem, _is_clause_mem, "clause", lambda p, c, a, r: 1,
                   "GCNHazardRecognizer.cpp checkSoftClauseHazards (XNACK replay of a VMEM/SMEM soft clause); CDNA3 "
                   "ISA guide, XNACK / memory clauses", unit="instructions breaking the clause")
MAX_WAIT_STATES = 20  # the largest requirement of the table (16-pass XDL + 3 + 1 on CDNA4 = 20)


# ---------------------------------------------------------------------------------------------------- operands

_TRANS = re.compile(r"v_(exp|log|rcp|rcp_iflag|rsq|sqrt|sin|cos)_(f16|f32|f64|legacy_f32)")
# VALU opcodes whose second operand is a scalar destination (carry-out or mask)
_SDST_SECOND = re.compile(r"v_(add|sub|subrev|addc|subb|subbrev)_co_u32|v_mad_(u64_u32|i64_i32)|v_div_scale")
_MEM_STORE = re.compile(r"^(ds_write|ds_store|buffer_store|global_store|scratch_store|flat_store)")


def _regs(operands) -> tuple:
    out = []
    for o in operands:
        if isinstance(o, Reg):
            out.append(o)
        elif hasattr(o, "reg") and isinstance(o.reg, Reg):  # Sext
            out.append(o.reg)
    return tuple(out)


def _with_implicit_vcc(inst: Instruction, reads: tuple, writes: tuple) -> tuple[tuple, tuple]:
    op = inst.opcode
    vcc = Reg("s", VCC, 2)
    if op.endswith("_e32") and (op.startswith("v_cmp") or op.startswith("v_cmpx")) and not any(
            w.kind == "s" for w in writes):
        writes += (vcc,)
    if op.startswith("v_cndmask") and op.endswith("_e32") and not any(r.kind == "s" and r.index == VCC
                                                                       for r in reads):
        reads += (vcc,)
    if op.startswith("v_cmpx"):
        writes += (Reg("s", EXEC, 2),)
    return reads, writes


def classify(inst: Instruction, arch: str, mma_passes: dict[str, int]) -> Op:
    """The table's view of one instruction: its class, the registers it writes and reads, and MFMA roles."""
    op, ops = inst.opcode, inst.operands
    if op == "s_nop":
        text = str(ops[0]).strip() if ops else "0"
        return Op("other", (), (), wait_states=int(text, 0) + 1)
    if op == "v_dual":  # gfx11 dual issue: two VALU halves
        halves = [classify(half, arch, mma_passes) for half in ops]
        return Op("valu", sum((h.writes for h in halves), ()), sum((h.reads for h in halves), ()))
    regs = _regs(ops)
    if op.startswith("v_smfmac"):
        # A sparse MFMA accumulates into its destination (SrcC is vdst); its third operand is the sparsity index, a
        # source like SrcA/B (GCNHazardRecognizer checkMAIHazards90A treats every use but SrcC as SrcA/B).
        roles = tuple(o if isinstance(o, Reg) else None for o in (ops[1], ops[2], ops[0], ops[3]))
        return Op("mfma", regs[:1], _regs(ops[:4]), roles, mma_passes.get(op, 0))
    if op.startswith("v_mfma"):
        roles = tuple(o if isinstance(o, Reg) else None for o in ops[1:4])
        return Op("mfma", regs[:1], _regs(ops[1:4]), roles, mma_passes.get(op, 0))
    if op.startswith("v_wmma"):
        roles = tuple(o if isinstance(o, Reg) else None for o in ops[1:4])
        return Op("wmma", regs[:1], _regs(ops[1:4]), roles, mma_passes.get(op, 0))
    if op.startswith("v_"):
        n_dst = 2 if _SDST_SECOND.match(op) and len(ops) > 1 and isinstance(ops[1], Reg) and ops[1].kind == "s" \
            else 1
        writes, reads = _regs(ops[:n_dst]), _regs(ops[n_dst:])
        reads, writes = _with_implicit_vcc(inst, reads, writes)
        return Op("valu", writes, reads, trans=bool(_TRANS.match(op)))
    if op.startswith(("buffer_", "global_", "scratch_", "flat_")):
        if _MEM_STORE.match(op) or inst.modifiers.get("lds"):
            return Op("vmem", (), regs, reads_m0=bool(inst.modifiers.get("lds")))
        return Op("vmem", regs[:1], regs[1:])
    if op.startswith("ds_"):
        if _MEM_STORE.match(op):
            return Op("ds", (), regs, reads_m0="addtid" in op)
        return Op("ds", regs[:1], regs[1:], reads_m0="addtid" in op)
    if op.startswith("s_load") or op.startswith("s_buffer_load"):
        return Op("smem", regs[:1], regs[1:])
    if op.startswith("s_setreg"):
        return Op("setreg", (), regs, hwreg=_hwreg(inst))
    if op.startswith("s_getreg"):
        return Op("getreg", regs[:1], (), hwreg=_hwreg(inst))
    if op in ("s_sendmsg", "s_sendmsghalt", "s_ttracedata"):
        return Op("other", (), (), reads_m0=True)
    if op.startswith("s_") and regs and not op.startswith(("s_cmp", "s_bitcmp", "s_cbranch", "s_branch")):
        writes = regs[:1] + ((Reg("s", EXEC, 2),) if "saveexec" in op else ())
        return Op("salu", writes, regs[1:])
    return Op("other", (), regs)


def _hwreg(inst: Instruction) -> str:
    text = inst.text.split(None, 1)[1] if " " in inst.text else ""
    match = re.search(r"hwreg\((\w+)", text)
    return match[1] if match else text.split(",")[0].strip()


# ---------------------------------------------------------------------------------------------------- checking


def _pair(rule: Rule, p: Op, c: Op, family: IsaFamily) -> tuple[Reg, int] | None:
    """(register, required) when `rule` makes producer `p` and consumer `c` a hazard, else None."""
    if rule.relation == "hwreg":
        if p.hwreg and p.hwreg == c.hwreg:
            none = Reg("s", 0, 0)  # a hardware register, not a register range
            return none, rule.required(p, c, family, none)
        return None
    regs = rule.producer_regs(p)
    met = _first_overlap(regs, rule.consumer_regs(c))
    if met is None:
        return None
    return met, rule.required(p, c, family, met)


class WaitStateChecker:
    """The table applied to one kernel on one target; `check(pcs)` runs it over one wave's executed pcs."""

    def __init__(self, instructions: list[Instruction], arch: str, mma_passes: dict[str, int]):
        self.instructions = instructions
        self.arch = arch
        self.family = isa_family(arch)
        self.rules = tuple(r for r in RULES if r.table == self.family.wait_states)
        self.ops = [classify(inst, arch, mma_passes) for inst in instructions]
        for inst, op in zip(instructions, self.ops):
            if op.kind in ("mfma", "wmma") and not op.passes and self.family.wait_states == MAI:
                from .machine import EmulatorError
                raise EmulatorError(f"the wait-state table has no pass count for '{inst.opcode}' (line {inst.line}).")
        self._pairs = lru_cache(maxsize=None)(self._pair_hazards)
        self.soft_clauses = SOFT_CLAUSE.table == self.family.wait_states
        # LLVM looks for a soft clause among the last MaxLookAhead wait states it emitted: 19 where the function
        # uses a0, else 5 (GCNHazardRecognizer constructor); a conflict further back is not a hazard it breaks.
        uses_a0 = any(r.kind == "a" and r.index == 0 for op in self.ops for r in op.reads + op.writes)
        self.clause_lookahead = 19 if uses_a0 else 5

    def _soft_clause(self, cpc: int, window: list, found: dict) -> None:
        """The XNACK soft-clause rule for memory instruction `cpc` after the clause that ends the window."""
        ops, c = self.ops, self.ops[cpc]
        clause = []
        looked = 0
        for ppc, provided in reversed(window):
            looked += provided
            if ops[ppc].kind != c.kind or looked > self.clause_lookahead:
                break
            clause.append(ppc)
        defs = [(ppc, w) for ppc in clause for w in ops[ppc].writes]
        if not defs:
            return
        hit = None
        if not c.writes and c.kind == "vmem":  # a store (or LDS DMA) after loads in one clause
            hit = defs[0]
        # LLVM: a hazard when a register the clause (this instruction included) defines is one it uses; writes
        # that only overlap other writes are not (ClauseDefs.anyCommon(ClauseUses))
        uses = [(ppc, r) for ppc in clause for r in ops[ppc].reads] + [(cpc, r) for r in c.reads]
        for reg in c.writes:  # this instruction overwrites what the clause (or itself) reads
            hit = hit or next(((ppc, r) for ppc, r in uses if overlap(r, reg)), None)
        for ppc, w in defs:  # or reads what the clause writes
            if hit is None and any(overlap(w, r) for r in c.reads):
                hit = (ppc, w)
        if hit is not None:
            key = (hit[0], cpc, SOFT_CLAUSE.name)
            found.setdefault(key, Violation(SOFT_CLAUSE.name, hit[0], cpc, reg_text(hit[1]), 1, 0,
                                            SOFT_CLAUSE.source))

    def _pair_hazards(self, ppc: int, cpc: int) -> tuple:
        p, c = self.ops[ppc], self.ops[cpc]
        found = []
        for rule in self.rules:
            if rule.producer(p) and rule.consumer(c):
                hit = _pair(rule, p, c, self.family)
                if hit is not None:
                    found.append((rule, hit[0], hit[1]))
        return tuple(found)

    def check(self, pcs: list[int], found: dict | None = None) -> dict:
        """Violations over one executed pc sequence, merged into `found`: (producer, consumer, rule) ->
        Violation with the fewest wait states seen. Per consumer and rule only the nearest producer counts, as in
        LLVM's getWaitStatesSinceDef."""
        found = {} if found is None else found
        ops = self.ops
        window: list[tuple[int, int]] = []  # (pc, wait states it provides), most recent last
        for cpc in pcs:
            c = ops[cpc]
            seen_rules = set()
            present = 0
            valus = 0
            for ppc, provided in reversed(window):
                if present >= MAX_WAIT_STATES:
                    break
                for rule, reg, required in self._pairs(ppc, cpc):
                    if rule.name in seen_rules:
                        continue
                    seen_rules.add(rule.name)
                    have = valus if rule.unit != "wait states" else present
                    if have < required:
                        key = (ppc, cpc, rule.name)
                        old = found.get(key)
                        if old is None or have < old.present:
                            found[key] = Violation(rule.name, ppc, cpc, reg_text(reg) if reg.count else "",
                                                   required, have, rule.source)
                present += provided
                valus += ops[ppc].kind == "valu"
            if c.kind in ("vmem", "smem") and self.soft_clauses:
                self._soft_clause(cpc, window, found)
            window.append((cpc, c.wait_states))
            if len(window) > 2 * MAX_WAIT_STATES:
                del window[:MAX_WAIT_STATES]
        return found

    def describe(self, v: Violation) -> str:
        p, c = self.instructions[v.producer], self.instructions[v.consumer]
        rule = next(r for r in RULES + (SOFT_CLAUSE,) if r.name == v.rule)
        what = f" ({v.register})" if v.register else ""
        return (f"missing wait states ({v.rule}): '{p.text}' (line {p.line}) then '{c.text}' (line {c.line}){what} "
                f"with {v.present} {rule.unit} between them; {self.arch} requires {v.required} ({v.source}).")


def mma_passes(arch: str) -> dict[str, int]:
    """Matrix-pipe passes (4 clocks each) per MFMA/WMMA/SMFMAC opcode of `arch`, from the target table."""
    target = TARGETS[arch]
    passes = {opcode: clocks // 4 for opcode, clocks in target.sparse_mma_cycles.items()}
    return passes | {m.opcode: m.cycles // 4 for m in target.mma.values() if getattr(m, "cycles", 0)}
