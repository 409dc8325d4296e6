"""Reading one AMDGPU kernel out of a `.rocmasm` file: its instructions, labels, descriptor and metadata.

`parse_kernel` turns the assembler text LLVM prints into a `Kernel`: the instruction list (mnemonic, operands,
`name:value` modifiers, source line), branch labels resolved to instruction indices, the `.amdhsa_*` descriptor
fields and the few `amdhsa.kernels` metadata entries the emulator needs (kernarg layout, workgroup size, wave
size, LDS size). Operand strings are turned into register references (`Reg`) or constants here, so the decoder
never sees text again.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from transforms.errors import UserError

# Fixed SGPR slots for the named scalar registers. These are the emulator's own indices (the gfx9 encoding's), not
# an ABI: every operand is resolved to one slot of a 128-entry scalar file.
VCC, M0, NULL, EXEC = 106, 124, 125, 126
_NAMED_SGPRS = {"vcc": (VCC, 2), "vcc_lo": (VCC, 1), "vcc_hi": (VCC + 1, 1), "m0": (M0, 1), "null": (NULL, 1),
                "exec": (EXEC, 2), "exec_lo": (EXEC, 1), "exec_hi": (EXEC + 1, 1)}
# Inline float constants of the VOP encodings, as their f32 bit patterns.
_INLINE_FLOATS = {"0.5": 0.5, "-0.5": -0.5, "1.0": 1.0, "-1.0": -1.0, "2.0": 2.0, "-2.0": -2.0, "4.0": 4.0,
                  "-4.0": -4.0}


class IsaError(UserError, ValueError):
    """The kernel text cannot be read; the message is one sentence."""


@dataclass(frozen=True)
class Reg:
    """`count` consecutive registers of file `kind` ('s', 'v' or 'a') from `index`."""

    kind: str
    index: int
    count: int = 1


@dataclass(frozen=True)
class Sext:
    """An SDWA source whose selected bytes are sign-extended."""

    reg: Reg


@dataclass(frozen=True)
class Instruction:
    opcode: str
    operands: tuple  # Reg, Sext, int (constant, signed as written), str (label or keyword such as 'off')
    modifiers: dict  # 'offset' -> 16, 'offen' -> True, 'src1_sel' -> 'WORD_0', ...
    line: int
    text: str


@dataclass
class Kernel:
    name: str
    instructions: list[Instruction]
    labels: dict[str, int]
    descriptor: dict[str, int]
    args: list[dict] = field(default_factory=list)  # each {'offset', 'size', 'value_kind', ...}
    workgroup_size: tuple[int, int, int] = (1, 1, 1)
    wave_size: int = 64
    lds_bytes: int = 0
    kernarg_bytes: int = 0
    # Where waves start. With kernarg preloading, firmware that preloads enters 256 bytes in, past the
    # compatibility prologue that loads the same SGPRs from memory: that is the first label after a 256-byte
    # alignment in the kernel's first block.
    entry: int = 0


def parse_operand(text: str):
    """One operand: a register range, a constant (as its 32-bit pattern) or a bare word (label, 'off')."""
    text = text.strip()
    match = re.fullmatch(r"([sva])(\d+)", text)
    if match:
        return Reg(match[1], int(match[2]))
    match = re.fullmatch(r"([sva])\[(\w+):(\w+)\]", text)
    if match:
        first, last = int(match[2], 0), int(match[3], 0)
        return Reg(match[1], first, last - first + 1)
    if text in _NAMED_SGPRS:
        index, count = _NAMED_SGPRS[text]
        return Reg("s", index, count)
    if text in _INLINE_FLOATS:
        return struct.unpack("<I", struct.pack("<f", _INLINE_FLOATS[text]))[0]
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", text):
        return int(text, 0)  # kept signed: a 64-bit operand sign-extends it
    match = re.fullmatch(r"sext\((.+)\)", text)
    if match:
        return Sext(parse_operand(match[1]))
    return text


def _split_operands(rest: str) -> tuple[list[str], dict]:
    """Comma-separated operands; the modifiers follow the last one, separated by spaces."""
    modifiers: dict = {}
    if not rest:
        return [], modifiers
    parts = [p.strip() for p in re.split(r",(?![^\[]*\])", rest)]  # not the commas of op_sel:[1,0]
    tail = parts[-1].split()
    # A modifier list may also start right after the mnemonic (no operands), e.g. 's_waitcnt vmcnt(0)'.
    words = tail[1:]
    parts[-1] = tail[0] if tail else ""
    for word in words:
        name, _, value = word.partition(":")
        if re.fullmatch(r"-?0x[0-9a-fA-F]+", value):  # clang's HIP listings write offsets in hex (offset:0x400)
            value = str(int(value, 16))
        modifiers[name] = value if value else True
    return [p for p in parts if p], modifiers


def parse_instruction(text: str, line: int) -> Instruction:
    opcode, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    if opcode in ("s_waitcnt", "s_delay_alu", "s_sendmsg", "s_clause", "s_sched_barrier", "s_setprio", "s_nop",
                  "s_waitcnt_vscnt", "s_waitcnt_lgkmcnt", "s_waitcnt_vmcnt", "s_waitcnt_expcnt"):
        return Instruction(opcode, (rest,), {}, line, text.strip())
    if " :: " in text:
        # A gfx11 dual-issue VALU pair: both halves read their sources before either writes.
        first, second = text.strip().split(" :: ")
        return Instruction("v_dual", (parse_instruction(first, line), parse_instruction(second, line)), {}, line,
                           text.strip())
    operands, modifiers = _split_operands(rest)
    return Instruction(opcode, tuple(parse_operand(o) for o in operands), modifiers, line, text.strip())


def _descriptor(text: str) -> dict[str, int]:
    block = re.search(r"\.amdhsa_kernel \S+\n(.*?)\.end_amdhsa_kernel", text, re.S)
    if not block:
        raise IsaError("the kernel text has no .amdhsa_kernel descriptor.")
    return {m[1]: int(m[2], 0) for m in re.finditer(r"\.amdhsa_(\w+)\s+(-?\w+)", block[1])}


def _metadata(text: str, kernel: Kernel) -> None:
    meta = re.search(r"\.amdgpu_metadata\n(.*?)\.end_amdgpu_metadata", text, re.S)
    if not meta:
        raise IsaError("the kernel text has no amdhsa.kernels metadata.")
    body = meta[1]
    args_block = re.search(r"\.args:\n(.*?)\n    \.\w", body, re.S)
    if args_block:
        for item in re.split(r"\n\s+- ", "\n" + args_block[1])[1:]:
            arg = {}
            for key, value in re.findall(r"\.(\w+):\s+(\S+)", item):
                arg[key] = int(value) if value.isdigit() else value
            kernel.args.append(arg)
    size = re.search(r"\.reqd_workgroup_size:\s*\n\s+- (\d+)\n\s+- (\d+)\n\s+- (\d+)", body)
    if size:
        x, y, z = (int(s) for s in size.groups())
        kernel.workgroup_size = (x, y, z)
    else:
        flat = re.search(r"\.max_flat_workgroup_size:\s+(\d+)", body)
        kernel.workgroup_size = (int(flat[1]), 1, 1) if flat else (1, 1, 1)
    wave = re.search(r"\.wavefront_size:\s+(\d+)", body)
    kernel.wave_size = int(wave[1]) if wave else 64
    kernarg = re.search(r"\.kernarg_segment_size:\s+(\d+)", body)
    kernel.kernarg_bytes = int(kernarg[1]) if kernarg else 0


def parse_listing(path: Path, text: str | None = None) -> Kernel:
    """`parse_kernel` of the listing file `path` (or of `text`, given in its place), its errors naming the file."""
    try:
        return parse_kernel(path.read_text() if text is None else text)
    except IsaError as err:
        raise IsaError(f"the kernel listing {path} cannot be read: {str(err).rstrip('.')}; compile the folder "
                       "again.") from None


def parse_kernel(text: str) -> Kernel:
    """The first kernel of an LLVM AMDGPU assembler listing."""
    name = re.search(r"^\s+\.amdhsa_kernel (\S+)", text, re.M)
    if not name:
        raise IsaError("no .amdhsa_kernel found in the kernel text.")
    start = re.search(rf"^{re.escape(name[1])}:[ \t]*(?:;.*)?$", text, re.M)  # Triton's LLVM adds "; @name"
    end = re.search(r"^\.Lfunc_end\d+:", text[start.end():], re.M) if start else None
    if not start or not end:
        raise IsaError(f"cannot find the body of kernel {name[1]}.")
    first_line = text[:start.end()].count("\n") + 1
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    aligned_256 = None  # instruction index of the first 256-byte alignment after some code
    for offset, raw in enumerate(text[start.end():start.end() + end.start()].splitlines()):
        code = raw.split(";")[0].strip()
        if not code:
            continue
        if code.endswith(":"):
            labels[code[:-1]] = len(instructions)
        elif re.fullmatch(r"\.p2align\s+8", code) and instructions and aligned_256 is None:
            aligned_256 = len(instructions)
        elif not code.startswith("."):
            instructions.append(parse_instruction(code, first_line + offset))
    kernel = Kernel(name[1], instructions, labels, _descriptor(text))
    if kernel.descriptor.get("user_sgpr_kernarg_preload_length"):
        if aligned_256 is None or aligned_256 not in labels.values():
            raise IsaError(f"kernel {name[1]} preloads kernarg SGPRs but has no 256-byte aligned preload entry.")
        kernel.entry = aligned_256
    kernel.lds_bytes = kernel.descriptor.get("group_segment_fixed_size", 0)
    _metadata(text, kernel)
    return kernel
