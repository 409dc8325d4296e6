"""Reading compiled kernels: instruction and resource statistics from AMDGPU ISA and NVIDIA PTX.

`inspect_dump` walks a `--iree-hal-dump-executable-files-to` folder and returns one `KernelStats` per dispatch:
MMA instructions by opcode, LDS bytes, registers, spills, occupancy (computed from the target's register file
and LDS, since the ISA does not print it), global and LDS traffic, barriers and `s_setprio`; in PTX also
Hopper's wgmma, TMA (bulk tensor) and bulk copies, and mbarrier waits and arrives. Counts are static: every copy
of an instruction in the text (prologue, loop and epilogue) counts once. `read_report` reads a
compiled folder's report.json back, or says in one sentence why it cannot.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from transforms.errors import UserError

if TYPE_CHECKING:  # for annotations only: the GPU machines read PTX here without iree.compiler (targets needs it)
    from .targets import Target


@dataclass
class KernelStats:
    dispatch: str
    isa_file: str
    mma: dict[str, int] = field(default_factory=dict)
    lds_bytes: int | None = 0  # None: not stated by the compiled output
    vgpr_count: int | None = None
    agpr_count: int | None = None
    sgpr_count: int | None = None
    allocated_vgprs: int | None = None
    spill_count: int | None = None
    scratch_bytes: int | None = None
    wave_size: int | None = None
    workgroup_size: int | None = None
    occupancy: int | None = None  # waves per SIMD
    global_loads: int = 0
    global_stores: int = 0
    dma_loads: int = 0  # global->LDS loads (no VGPR round trip)
    lds_reads: int = 0
    lds_writes: int = 0
    barriers: int = 0
    setprio: int = 0
    conditional_barriers: int = 0  # s_barrier right behind an s_cbranch_execz (and its waits): some waves only
    async_copies: int = 0  # cp.async (PTX)
    ldmatrix: int = 0  # ldmatrix (PTX)
    tensor_copies: int = 0  # cp.async.bulk.tensor: Hopper TMA loads and stores (PTX)
    bulk_copies: int = 0  # cp.async.bulk without a tensor map (PTX)
    mbarrier_waits: int = 0  # mbarrier.try_wait / test_wait (PTX)
    mbarrier_arrives: int = 0  # mbarrier.arrive*, including expect_tx (PTX)

    @property
    def mma_count(self) -> int:
        return sum(self.mma.values())

    def as_dict(self) -> dict:
        return dict(asdict(self), mma_count=self.mma_count)


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text, re.M))


# Instruction counts read from each ISA, by KernelStats field.
_AMDGPU_COUNTS = {
    "global_loads": r"^\s+(?:buffer|global)_load\w*",  # direct-to-LDS loads are subtracted afterwards
    "global_stores": r"^\s+(?:buffer|global)_store\w*",
    "lds_reads": r"^\s+ds_(?:read|load)\w*",
    "lds_writes": r"^\s+ds_(?:write|store)\w*",
    "barriers": r"^\s+s_barrier\b",
    "setprio": r"^\s+s_setprio\b",
    "conditional_barriers": r"^\s+s_cbranch_execz\s+\S+\n(?:\s+s_waitcnt\b.*\n)*\s+s_barrier\b",
}
_PTX_COUNTS = {
    # at a line's start, or inside an inline-asm block after a statement and an optional predicate (the stream
    # kernel's guarded loads: `{ ...; @pa ld.global.nc.v4.u32 ... }` on one line)
    "global_loads": r"(?:^\s+|;\s+(?:@!?%?\w+\s+)?)ld\.global\S*",
    "global_stores": r"^\s+st\.global\S*",
    "lds_reads": r"^\s+ld\.shared\S*",
    "lds_writes": r"^\s+st\.shared\S*",
    "async_copies": r"^\s+cp\.async\.c\S*",
    "ldmatrix": r"^\s+ldmatrix\S*",
    "barriers": r"^\s+bar\.sync\b",
    "tensor_copies": r"^\s+(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor\S*",
    "bulk_copies": r"^\s+(?:@!?%p\d+\s+)?cp\.async\.bulk\.(?!tensor|commit|wait)\S*",
    "mbarrier_waits": r"^\s*(?:\w+:\s+)?(?:@!?%p\d+\s+)?mbarrier\.(?:try|test)_wait\S*",
    "mbarrier_arrives": r"^\s+(?:@!?%p\d+\s+)?mbarrier\.arrive\S*",
}


def _count_all(stats: "KernelStats", patterns: dict[str, str], text: str) -> None:
    for name, pattern in patterns.items():
        setattr(stats, name, _count(pattern, text))


def _metadata(name: str, text: str) -> int | None:
    found = re.search(rf"^\s+(?:-\s+)?\.{name}:\s+(\d+)", text, re.M)
    return int(found.group(1)) if found else None


def amdgpu_kernels(text: str) -> dict[str, str]:
    """Split a .rocmasm (one kernel, or several linked into one code object) into each kernel's code,
    kernel descriptor and metadata entry."""
    metadata = text.split("amdhsa.kernels:", 1)[1] if "amdhsa.kernels:" in text else ""
    entries = re.split(r"^  - ", metadata, flags=re.M)[1:]
    kernels = {}
    for entry in entries:
        named = re.search(r"^\s+\.name:\s+(\S+)", entry, re.M)
        if named is None:
            continue  # the amdhsa.version list that follows the kernels
        name = named.group(1).strip("'\"")  # quoted where the name has characters YAML reserves ('main$async')
        code = re.search(rf"^{re.escape(name)}:.*?^\.Lfunc_end\d+:", text, re.M | re.S)
        descriptor = re.search(rf"^\s+\.amdhsa_kernel {re.escape(name)}\n.*?\.end_amdhsa_kernel", text, re.M | re.S)
        kernels[name] = "\n".join(m.group(0) for m in (code, descriptor) if m) + "\n  - " + entry
    return kernels


def amdgpu_stats(dispatch: str, path: Path, text: str, target: Target) -> KernelStats:
    stats = KernelStats(dispatch, path.name)
    for opcode in re.findall(r"^\s+(v_(?:mfma|wmma|smfmac)\w*)", text, re.M):
        stats.mma[opcode] = stats.mma.get(opcode, 0) + 1
    stats.lds_bytes = _metadata("group_segment_fixed_size", text) or 0
    stats.vgpr_count = _metadata("vgpr_count", text)
    stats.agpr_count = _metadata("agpr_count", text)
    stats.sgpr_count = _metadata("sgpr_count", text)
    stats.spill_count = (_metadata("vgpr_spill_count", text) or 0) + (_metadata("sgpr_spill_count", text) or 0)
    stats.scratch_bytes = _metadata("private_segment_fixed_size", text)
    stats.wave_size = _metadata("wavefront_size", text)
    stats.workgroup_size = _metadata("max_flat_workgroup_size", text)
    allocated = re.search(r"\.amdhsa_next_free_vgpr\s+(\d+)", text)
    stats.allocated_vgprs = int(allocated.group(1)) if allocated else stats.vgpr_count
    stats.dma_loads = _count(r"^\s+(?:buffer|global)_load\w*\s.*\blds\b", text) + _count(
        r"^\s+global_load_lds_\w+", text)
    _count_all(stats, _AMDGPU_COUNTS, text)
    stats.global_loads -= stats.dma_loads
    stats.occupancy = occupancy(stats, target)
    return stats


def occupancy(stats: KernelStats, target: Target) -> int | None:
    """Waves per SIMD allowed by the register file and by LDS (whichever is tighter)."""
    if not stats.allocated_vgprs or not stats.workgroup_size or not stats.wave_size:
        return None
    granule = target.vgpr_granule
    per_wave = -(-stats.allocated_vgprs // granule) * granule
    waves = min(target.max_waves_per_simd, target.vgpr_file_per_lane // per_wave)
    if stats.lds_bytes:
        workgroups_per_cu = target.lds_per_cu // stats.lds_bytes
        waves_per_workgroup = -(-stats.workgroup_size // stats.wave_size)
        # waves are dealt over the SIMDs, so the busiest SIMD holds the ceiling (one 1-wave workgroup: 1, not 0)
        waves = min(waves, -(-workgroups_per_cu * waves_per_workgroup // target.simds_per_cu))
    return waves


_LLVM_TYPE_BYTES = {"i8": 1, "half": 2, "bfloat": 2, "i16": 2, "float": 4, "i32": 4, "double": 8, "i64": 8}


def shared_memory_bytes(linked_ll: str) -> int:
    """Bytes of the workgroup (addrspace 3) globals of a single-kernel LLVM module: IREE's CUDA kernels size
    their dynamic shared memory from them, and the PTX does not state it."""
    total = 0
    for type_text in re.findall(r"^@\S+ = \S+ addrspace\(3\) global (\[.*\])\s+(?:undef|poison|zero)", linked_ll, re.M):
        element = re.search(r"x (\w+)\]", type_text)
        size = _LLVM_TYPE_BYTES.get(element.group(1), 0) if element else 0
        for n in re.findall(r"(\d+) x", type_text):
            size *= int(n)
        total += size
    return total


def ptx_kernels(text: str) -> dict[str, str]:
    pieces = re.split(r"^(?=\.visible \.entry )", text, flags=re.M)[1:]
    return {name[1]: piece for piece in pieces if (name := re.match(r"\.visible \.entry (\w+)", piece))}


_PTX_SHARED_ACCESS = re.compile(r"^\s+(?:ld\.shared|st\.shared|cp\.async\.\S+\.shared|ldmatrix\S*\.shared)", re.M)


def touches_shared_memory(ptx_kernel: str) -> bool:
    return _PTX_SHARED_ACCESS.search(ptx_kernel) is not None


def ptx_stats(dispatch: str, path: Path, text: str, kernels_in_file: int, shared_users: int = 1) -> KernelStats:
    stats = KernelStats(dispatch, path.name, wave_size=32)
    # (^\s*: NVVM's wgmma comes as inline PTX, written from the line's first column)
    for opcode in re.findall(r"^\s*(mma\.sync\.\S+|wmma\.mma\S*|wgmma\.mma_async\S*)", text, re.M):
        opcode = opcode.rstrip(";")
        stats.mma[opcode] = stats.mma.get(opcode, 0) + 1
    linked = path.with_name(path.name.removesuffix(".ptx") + ".linked.ll")
    # Kernels linked into one module reach their buffers through one dynamic symbol, so the static globals
    # cannot be attributed to a kernel: shared memory is then unknown (None), not guessed, unless this kernel is
    # the only one of the file that touches shared memory (e.g. a GEMM linked with the copies that pad its operands).
    alone = kernels_in_file == 1 or (shared_users == 1 and touches_shared_memory(text))
    stats.lds_bytes = shared_memory_bytes(linked.read_text()) if linked.exists() and alone else None
    _count_all(stats, _PTX_COUNTS, text)
    found = re.search(r"\.(?:reqntid|maxntid)\s+(\d+),\s*(\d+),\s*(\d+)", text)
    if found:
        x, y, z = (int(v) for v in found.groups())
        stats.workgroup_size = x * y * z
    return stats


def ptx_loops(text: str) -> list[str]:
    """Bodies of the PTX loops of one kernel: from a label to the last branch back to it (innermost first)."""
    bodies = []
    for label in re.finditer(r"^(\$L__\w+):", text, re.M):
        back = list(re.finditer(rf"^\s+(?:@%p\d+\s+)?bra(?:\.uni)?\s+{re.escape(label.group(1))};", text[label.end():],
                                re.M))
        if back:
            bodies.append(text[label.end():label.end() + back[-1].end()])
    return sorted(bodies, key=len)


_PTX_INSTRUCTION = re.compile(r"^\s+(?:@!?%p\d+\s+)?([a-z][\w.]*)\s*(.*?);", re.M)
_PTX_REGISTER = re.compile(r"%[a-z]+\d+")
# Instructions whose first operand is read, not written.
_PTX_NO_DESTINATION = ("st.", "cp.async", "bra", "bar.", "red.", "ret", "prefetch")


def copy_block_ids(ptx_kernel: str) -> list[frozenset[str]]:
    """For each cp.async copy of the kernel, which block ids (`x`, `y`, `z` for %ctaid.*) its global address
    depends on: a flow-insensitive data-flow closure over the kernel's registers, so a dependence is over- rather
    than under-approximated. In row order an A copy depends on y (its M tile) and a B copy on x (its N tile)."""
    steps = []
    for opcode, operands in _PTX_INSTRUCTION.findall(ptx_kernel):
        if opcode.startswith(_PTX_NO_DESTINATION):
            continue
        first, _, rest = operands.partition("}") if operands.startswith("{") else operands.partition(",")
        reads = set(_PTX_REGISTER.findall(rest)) | {f"%ctaid.{d}" for d in "xyz" if f"%ctaid.{d}" in rest}
        steps.append((_PTX_REGISTER.findall(first), reads))
    tags: dict[str, set[str]] = {f"%ctaid.{d}": {d} for d in "xyz"}
    changed = True
    while changed:
        changed = False
        for writes, reads in steps:
            flowing = set().union(*(tags.get(r, set()) for r in reads))
            for register in writes:
                if not flowing <= tags.setdefault(register, set()):
                    tags[register] |= flowing
                    changed = True
    sources = re.findall(r"^\s+(?:@!?%p\d+\s+)?cp\.async\.c[ag]\.shared\.global\S*\s+\[[^]]*\],\s*\[([^]]*)\]",
                         ptx_kernel, re.M)
    return [frozenset().union(*(tags.get(r, set()) for r in _PTX_REGISTER.findall(address))) for address in sources]


def cpu_stats(dispatch: str, path: Path) -> KernelStats:
    return KernelStats(dispatch, path.name)


# Target.isa -> (dump file suffix, splitter into kernels, whether it is PTX); other targets' dumps hold host code.
ISA_FORMATS = {"amdgcn": (".rocmasm", amdgpu_kernels, False), "ptx": (".ptx", ptx_kernels, True)}


def inspect_dump(dump: Path, target: Target) -> list[KernelStats]:
    """One KernelStats per dispatch found in an IREE executable dump folder. Dispatches may be linked into one
    code object; kernel `<name>_dispatch_<i>_<op summary>` belongs to dispatch `module_<name>_dispatch_<i>`."""
    dispatches = [c.stem.removeprefix("configured_") for c in sorted(dump.glob("configured_*.mlir"))]
    if target.isa not in ISA_FORMATS:
        return [cpu_stats(d, dump / f"configured_{d}.mlir") for d in dispatches]
    suffix, split, ptx = ISA_FORMATS[target.isa]
    kernels = []
    for path in sorted(dump.glob(f"*{suffix}")):
        texts = split(path.read_text())
        shared_users = sum(touches_shared_memory(text) for text in texts.values()) if ptx else 0
        kernels += [(path, name, text, len(texts), shared_users) for name, text in texts.items()]
    found = []
    for dispatch in dispatches:
        prefixes = kernel_prefixes(dispatch)
        for path, name, text, in_file, shared_users in kernels:
            if name.startswith(prefixes):
                found.append(ptx_stats(dispatch, path, text, in_file, shared_users) if ptx
                             else amdgpu_stats(dispatch, path, text, target))
    return found


def kernel_prefixes(dispatch: str) -> tuple[str, str]:
    """How the ISA's kernel names of `dispatch` begin. PTX names take no '$': IREE writes a model's
    `main$async_dispatch_0` kernel as `main_async_dispatch_0`."""
    prefix = dispatch.removeprefix("module_") + "_"
    return prefix, re.sub(r"[^\w.]", "_", prefix)


def dispatch_ptx(ptx: str, dispatch: str) -> str:
    """The PTX of `dispatch`'s kernel in a PTX file."""
    prefixes = kernel_prefixes(dispatch)
    found = [text for name, text in ptx_kernels(ptx).items() if name.startswith(prefixes)]
    if not found:
        raise ReportError(f"the PTX holds no kernel of dispatch {dispatch}.")
    return found[0]


class ReportError(UserError, ValueError):
    """A report.json that cannot be read; the message is one sentence."""


# What `pipelines compile` writes into report.json and `inspect`/`emulate` read back, by key.
_REPORT_KEYS = {"target": str, "pipeline": str, "problems": list, "schedule_summary": list, "verified": bool,
                "files": dict, "dispatches": list}
_PROBLEM_KEYS = {"m": int, "n": int, "k": int, "dtype": str, "layout": str, "epilogue": dict}
_KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "an object"}


def read_report(path: Path) -> dict:
    """report.json as written by `pipelines compile`, or one sentence saying what is wrong with it."""
    if not path.is_file():
        raise ReportError(f"{path.parent} is not a folder written by `pipelines compile` (no {path.name}).")
    try:
        report = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"{path} is not valid JSON ({err}); compile the folder again.") from None
    wrong = _report_problem(report)
    if wrong:
        raise ReportError(f"{path} was not written by `pipelines compile` ({wrong}); compile the folder again.")
    return report


def _wrong_keys(record: dict, keys: dict) -> str | None:
    for key, kind in keys.items():
        value = record.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"'{key}' is {json.dumps(value)[:40]}, not {_KIND_NAMES[kind]}"
    return None


def _report_problem(report) -> str | None:
    if not isinstance(report, dict):
        return "it is not a JSON object"
    wrong = _wrong_keys(report, _REPORT_KEYS)
    if wrong:
        return wrong
    if not isinstance(report["files"].get("dump"), str):
        return "'files' names no dump folder"
    if not report["problems"] or len(report["problems"]) != len(report["schedule_summary"]):
        return "it lists no problem with its schedule summary"
    for problem in report["problems"]:
        wrong = _wrong_keys(problem, _PROBLEM_KEYS) if isinstance(problem, dict) else "a problem that is not an object"
        if wrong is None and not (problem.get("batch") is None or isinstance(problem["batch"], int)):
            wrong = "a batch that is not an integer"
        if wrong is None and not isinstance(problem["epilogue"].get("kind"), str):
            wrong = "an epilogue without a kind"
        if wrong is None and min(problem["m"], problem["n"], problem["k"], problem.get("batch") or 1) < 1:
            wrong = "a size below 1"
        if wrong is None and problem["layout"] not in ("nn", "nt", "tn"):
            wrong = f"layout '{problem['layout'][:20]}', not nn, nt or tn"
        if wrong:
            return f"in a problem, {wrong}" if wrong.startswith("'") else f"it has {wrong}"
    if not all(isinstance(d, dict) and isinstance(d.get("isa_file"), str) for d in report["dispatches"]):
        return "a dispatch has no 'isa_file'"
    return None
