"""Foreign kernels: a GEMM another compiler built (Triton's AMD backend, HipKittens), run like the project's own.

A foreign kernel folder holds the compiler's AMDGPU assembly and a launch description named for its producer
(`PRODUCERS`: `triton.json` written by tools/triton_kernels.py, `hipkittens.json` by tools/hipkittens_kernels.py;
the same fields), which says how it is launched: grid, workgroup size, dynamic LDS, the problem (M, N, K,
layout, input and output types, the element strides of A, B and C) and every kernel argument in metadata order
(a, b or c buffer, an integer value, a scratch pointer, a struct passed by value as byte fields of those kinds,
or an implicit `hidden_*` argument). `load_foreign` checks
the file field by field (one sentence for the first fault) and against the listing's own `.amdgpu_metadata`: the
same arguments at the same offsets, sizes and kinds. `emulate_foreign` lays A and B out at their strides with
seeded random values exact in the input type, fills C with NaN ("never written"), writes the kernarg block at the
metadata's offsets (the hidden arguments as a HIP launch fills them: `HIDDEN`), runs the grid through the same
`Dispatch` the IREE path uses, and compares C with float64 within the emulator's tolerance plus one ulp of the
output type where C is narrower than f32. `report` gives the timing model what report.json gives it for the
project's kernels. Nothing here imports the foreign compiler.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..inspect import KernelStats, occupancy
from ..reference import NUMPY_TYPES, relative_tolerance
from ..targets import ISA_FAMILIES, TARGETS
from .isa import Kernel, parse_listing
from .localise import localise
from .machine import DecodeContext, EmulatorError
from .memory import FlatMemory
from .run import BATCH, Dispatch, EmulationResult, LdsAccessStats, _mix, mismatches



@dataclass(frozen=True)
class Producer:
    """Who writes a foreign folder's launch description: its file, format, tool and the key of its own record."""

    file: str
    format: str
    tool: str
    name: str  # how results name the kernel's compiler
    record: str  # the key of the producer's record ('version' or 'commit' and 'compiler')


PRODUCERS = (Producer("triton.json", "triton-kernel/1", "tools/triton_kernels.py", "Triton", "triton"),
             Producer("hipkittens.json", "hipkittens-kernel/1", "tools/hipkittens_kernels.py", "HipKittens",
                      "hipkittens"))
FOREIGN_FILE, FORMAT = PRODUCERS[0].file, PRODUCERS[0].format  # Triton's, the first producer
INPUT_TYPES = ("bf16", "f16", "f8E4M3FN")  # each only where the target's table lists it (gfx942's fp8 is FNUZ)
OUTPUT_TYPES = ("bf16", "f16", "f32")
LAYOUTS = ("nn", "nt")
ARGUMENT_KINDS = {"buffer": "global_buffer", "scratch": "global_buffer", "int": "by_value", "struct": "by_value",
                  "hidden": None}
FIELD_KINDS = ("buffer", "int")  # what a struct's byte fields may be
# The implicit arguments of a code object v5 kernel, as a HIP launch of `grid` workgroups of `size` threads fills
# them (LLVM AMDGPUUsage, "Code Object V5 Metadata", hidden kernel arguments). Pointers to runtime services a GEMM
# does not call (hostcall, heap, queues, completion) are null: a kernel that dereferences one reads an unmapped
# address, which the emulator names.
HIDDEN = {
    "hidden_block_count_x": lambda grid, size, lds: grid[0],
    "hidden_block_count_y": lambda grid, size, lds: grid[1],
    "hidden_block_count_z": lambda grid, size, lds: grid[2],
    "hidden_group_size_x": lambda grid, size, lds: size[0],
    "hidden_group_size_y": lambda grid, size, lds: size[1],
    "hidden_group_size_z": lambda grid, size, lds: size[2],
    # threads of the last, partial workgroup: none, the grid is whole workgroups (uniform_work_group_size)
    "hidden_remainder_x": lambda grid, size, lds: 0,
    "hidden_remainder_y": lambda grid, size, lds: 0,
    "hidden_remainder_z": lambda grid, size, lds: 0,
    "hidden_global_offset_x": lambda grid, size, lds: 0,
    "hidden_global_offset_y": lambda grid, size, lds: 0,
    "hidden_global_offset_z": lambda grid, size, lds: 0,
    "hidden_grid_dims": lambda grid, size, lds: 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1,
    "hidden_dynamic_lds_size": lambda grid, size, lds: lds,
    **{f"hidden_{name}": (lambda grid, size, lds: 0) for name in (
        "hostcall_buffer", "multigrid_sync_arg", "heap_v1", "default_queue", "completion_action", "queue_ptr",
        "private_base", "shared_base", "printf_buffer", "none")},
}
PACKET_BYTES, QUEUE_BYTES = 64, 256  # an AQL kernel dispatch packet; an hsa_queue_t (left zero)
SCRATCH_FLOOR = 256  # bytes of zeros behind a scratch pointer whose kernel asks for none (Triton passes one anyway)


class ForeignError(EmulatorError):
    """A foreign kernel folder that cannot be run as described; one sentence."""


@dataclass(frozen=True)
class Argument:
    """One kernel argument of the launch description, at the offset the listing's metadata gives it; or one byte
    field of a struct argument, at its offset inside the struct (and no value_kind)."""

    name: str
    kind: str  # 'buffer', 'int', 'scratch', 'struct' or 'hidden'
    offset: int
    size: int
    value_kind: str  # the metadata's: global_buffer, by_value, hidden_*
    buffer: str = ""  # 'a', 'b' or 'c' (kind 'buffer')
    value: int = 0  # kind 'int'
    bytes_per_workgroup: int = 0  # kind 'scratch'
    fields: tuple[Argument, ...] = ()  # kind 'struct': its byte fields; bytes no field names are zero


@dataclass(frozen=True)
class ForeignKernel:
    """A foreign kernel folder, checked: the launch, the problem and the parsed kernel."""

    folder: Path
    name: str
    target: str
    compiler: str  # e.g. "Triton 3.9.0"
    producer: Producer
    grid: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    shared_bytes: int  # dynamic LDS the launch gives each workgroup
    problem: dict  # m, n, k, layout, dtype, out_dtype (and epilogue 'none'), as the project's problems read
    strides: dict  # 'a', 'b', 'c' -> (row, column) element strides of A (M×K), B (K×N), C (M×N)
    arguments: tuple[Argument, ...]
    kernel: Kernel  # its LDS the static plus the dynamic bytes, its workgroup the launch's
    tile: tuple[int, int] | None  # BLOCK_M × BLOCK_N where the description states them
    # (tile row, tile column) each workgroup id computes, where the description states the kernel's own mapping
    order: tuple[tuple[int, int], ...] | None = None

    @property
    def workgroups(self) -> int:
        return math.prod(self.grid)

    def report(self) -> dict:
        """What the timing model reads of a compiled folder's report.json: target, problem, waves per SIMD."""
        target = TARGETS[self.target]
        threads = math.prod(self.workgroup_size)
        allocated = self.kernel.descriptor.get("next_free_vgpr")
        stats = KernelStats(self.name, self.producer.file, lds_bytes=self.kernel.lds_bytes, allocated_vgprs=allocated,
                            wave_size=self.kernel.wave_size, workgroup_size=threads)
        return {"target": self.target, "problems": [self.problem], "grid": list(self.grid),
                "occupancy": occupancy(stats, target), "foreign": self.compiler}

    def hbm_bytes(self) -> int:
        """A and B read once and C written once, in their own types."""
        p = self.problem
        size = {name: np.dtype(NUMPY_TYPES[name]).itemsize for name in INPUT_TYPES + OUTPUT_TYPES}
        return (p["m"] * p["k"] + p["k"] * p["n"]) * size[p["dtype"]] + p["m"] * p["n"] * size[p["out_dtype"]]


def is_foreign(folder: str | Path) -> bool:
    """Whether `folder` is a foreign kernel folder (it holds a producer's launch description)."""
    return any((Path(folder) / producer.file).is_file() for producer in PRODUCERS)


def _producer(folder: Path) -> Producer:
    found = [producer for producer in PRODUCERS if (folder / producer.file).is_file()]
    if len(found) > 1:
        raise ForeignError(f"{folder} holds both {found[0].file} and {found[1].file}; a foreign kernel folder has "
                           "one launch description.")
    return found[0] if found else PRODUCERS[0]  # none: the read of Triton's file names what is missing


def _field(table: dict, key: str, kind, where: str, minimum: int | None = None) -> Any:
    value: Any = table.get(key)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ForeignError(f"{where} has no whole number '{key}' (found {value!r:.40}).")
    if kind is not int and not isinstance(value, kind):
        raise ForeignError(f"{where} has no {kind.__name__} '{key}' (found {value!r:.40}).")
    if minimum is not None and value < minimum:
        raise ForeignError(f"{where} gives '{key}' = {value}, below {minimum}.")
    return value


def _triple(table: dict, key: str, where: str) -> tuple[int, int, int]:
    value = table.get(key)
    if not (isinstance(value, list) and len(value) == 3 and all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value)):
        raise ForeignError(f"{where} gives '{key}' as {value!r:.40}, not three positive whole numbers.")
    return tuple(value)


def _choice(table: dict, key: str, choices: tuple, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or value not in choices:
        raise ForeignError(f"{where} gives '{key}' as {value!r:.40}; the emulator takes {', '.join(choices)}.")
    return value


def _strides(problem: dict, where: str) -> dict:
    """(row, column) element strides of A (M×K), B (K×N) and C (M×N), each positive and not overlapping."""
    table = _field(problem, "strides", dict, where)
    shapes = {"a": (problem["m"], problem["k"]), "b": (problem["k"], problem["n"]), "c": (problem["m"], problem["n"])}
    found = {}
    for name, (rows, cols) in shapes.items():
        pair = table.get(name)
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in pair)):
            raise ForeignError(f"{where} gives the strides of {name.upper()} as {pair!r:.40}, not two positive whole "
                               "numbers.")
        row, col = pair
        if not (row >= col * cols or col >= row * rows):  # one dimension must step over the whole other one
            raise ForeignError(f"the strides {pair} of {name.upper()} in {where} make elements of its {rows}x{cols} "
                               "matrix overlap.")
        found[name] = (row, col)
    return found


def _argument(entry, what: str, kinds: tuple[str, ...], in_struct: bool = False) -> Argument:
    """One argument (or, `in_struct`, one byte field of a struct argument), checked."""
    if not isinstance(entry, dict):
        raise ForeignError(f"{what} is {entry!r:.40}, not an object.")
    kind = _choice(entry, "kind", kinds, what)
    argument = Argument(name=_field(entry, "name", str, what), kind=kind,
                        offset=_field(entry, "offset", int, what, 0), size=_field(entry, "size", int, what, 1),
                        value_kind="" if in_struct else _field(entry, "value_kind", str, what))
    if kind == "buffer":
        argument = dataclasses.replace(argument, buffer=_choice(entry, "buffer", ("a", "b", "c"), what))
    elif kind == "int":
        value = _field(entry, "value", int, what)
        if not -2 ** (8 * argument.size - 1) <= value < 2 ** (8 * argument.size):
            raise ForeignError(f"{what} ({argument.name}) holds {value}, which does not fit its "
                               f"{argument.size} bytes.")
        argument = dataclasses.replace(argument, value=value)
    elif kind == "scratch":
        argument = dataclasses.replace(argument, bytes_per_workgroup=_field(entry, "bytes_per_workgroup", int,
                                                                            what, 0))
    elif kind == "struct":
        argument = dataclasses.replace(argument, fields=_struct_fields(entry.get("fields"), argument, what))
    elif argument.value_kind not in HIDDEN:
        raise ForeignError(f"{what} is the implicit argument '{argument.value_kind}', which the emulator does "
                           "not know how to fill.")
    expected = ARGUMENT_KINDS[kind]
    if not in_struct and expected is not None and argument.value_kind != expected:
        raise ForeignError(f"{what} ({argument.name}) is a {kind} argument of value_kind "
                           f"'{argument.value_kind}', not '{expected}'.")
    if in_struct and kind == "buffer" and argument.size != 8:
        raise ForeignError(f"{what} ({argument.name}) is a pointer of {argument.size} bytes, not 8.")
    return argument


def _struct_fields(entries, struct: Argument, what: str) -> tuple[Argument, ...]:
    """A struct's byte fields: each inside the struct, none overlapping another."""
    if not isinstance(entries, list) or not entries:
        raise ForeignError(f"{what} ({struct.name}) is a struct with no list of byte 'fields'.")
    fields = tuple(_argument(entry, f"field {position} of {what}", FIELD_KINDS, in_struct=True)
                   for position, entry in enumerate(entries))
    end = 0
    for field in sorted(fields, key=lambda f: f.offset):
        if field.offset < end:
            raise ForeignError(f"field {field.name} of {what} at byte {field.offset} overlaps the field before it.")
        end = field.offset + field.size
        if end > struct.size:
            raise ForeignError(f"field {field.name} of {what} ends at byte {end}, past the struct's {struct.size}.")
    return fields


def _arguments(entries, where: str) -> tuple[Argument, ...]:
    if not isinstance(entries, list) or not entries:
        raise ForeignError(f"{where} has no list of kernel 'arguments'.")
    found = tuple(_argument(entry, f"argument {position} of {where}", tuple(ARGUMENT_KINDS))
                  for position, entry in enumerate(entries))
    buffers = [a.buffer for a in found if a.kind == "buffer"]
    buffers += [f.buffer for a in found for f in a.fields if f.kind == "buffer"]
    if sorted(buffers) != ["a", "b", "c"]:
        raise ForeignError(f"{where} does not pass each of the buffers a, b and c exactly once.")
    return found


def _match_metadata(arguments: tuple[Argument, ...], kernel: Kernel, where: str) -> None:
    """The described arguments are the listing's metadata `.args`, one for one: offset, size and value_kind."""
    meta = kernel.args
    if len(meta) != len(arguments):
        raise ForeignError(f"{where} lists {len(arguments)} kernel arguments; the metadata of {kernel.name} lists "
                           f"{len(meta)}.")
    for position, (arg, entry) in enumerate(zip(arguments, meta)):
        stated = (entry.get("offset"), entry.get("size"), entry.get("value_kind"))
        if (arg.offset, arg.size, arg.value_kind) != stated:
            raise ForeignError(f"argument {position} ({arg.name}) of {where} is at offset {arg.offset}, {arg.size} "
                               f"bytes, {arg.value_kind}; the kernel's metadata has offset {stated[0]}, {stated[1]} "
                               f"bytes, {stated[2]}.")
        if arg.offset + arg.size > max(kernel.kernarg_bytes, 1):
            raise ForeignError(f"argument {position} ({arg.name}) ends past the kernel's {kernel.kernarg_bytes} "
                               "kernarg bytes.")


def load_foreign(folder: str | Path, kernel_text: str | None = None) -> ForeignKernel:
    """The launch description and the listing it names, checked (one sentence for the first fault);
    `kernel_text` replaces the listing's text (an edited kernel, e.g. a planted fault)."""
    folder = Path(folder)
    producer = _producer(folder)
    path = folder / producer.file
    where = str(path)
    try:
        launch = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise ForeignError(f"{path} cannot be read: {getattr(err, 'strerror', None) or err}.") from None
    except json.JSONDecodeError as err:
        raise ForeignError(f"{path} is not JSON: {err.msg} at line {err.lineno}.") from None
    if not isinstance(launch, dict):
        raise ForeignError(f"{path} holds {type(launch).__name__}, not a JSON object.")
    if launch.get("format") != producer.format:
        raise ForeignError(f"{path} is of format {launch.get('format')!r:.40}; the emulator reads "
                           f"{producer.format!r} (written by {producer.tool}).")
    name = _field(launch, "kernel", str, where)
    target = _field(launch, "target", str, where)
    # the loader reads GFX9 (CDNA) code objects: the ISA family says which targets have them
    emulated = [t.name for t in TARGETS.values() if t.emulated and t.isa_family in ISA_FAMILIES
                and ISA_FAMILIES[t.isa_family].gfx9]
    if target not in emulated:
        raise ForeignError(f"{where} names target {target!r:.40}; foreign kernels run on {' and '.join(emulated)}.")
    grid, size = _triple(launch, "grid", where), _triple(launch, "workgroup_size", where)
    shared = _field(launch, "shared_bytes", int, where, 0)
    problem = _field(launch, "problem", dict, where)
    shape = {key: _field(problem, key, int, f"the problem of {where}", 1) for key in ("m", "n", "k")}
    layout = _choice(problem, "layout", LAYOUTS, f"the problem of {where}")
    dtype = _choice(problem, "dtype", INPUT_TYPES, f"the problem of {where}")
    out_dtype = _choice(problem, "out_dtype", OUTPUT_TYPES, f"the problem of {where}")
    if dtype not in TARGETS[target].dtypes:
        readers = [t.name for t in TARGETS.values() if t.emulated and dtype in t.dtypes]
        raise ForeignError(f"the problem of {where} takes {dtype} inputs, which only {', '.join(readers)} "
                           f"reads, not {target}.")
    strides = _strides(dict(problem, **shape), f"the problem of {where}")
    arguments = _arguments(launch.get("arguments"), where)
    listing = folder / _field(launch, "amdgcn", str, where)
    if not listing.is_file():
        raise ForeignError(f"{listing}, the listing {where} names, is missing.")
    try:
        kernel = parse_listing(listing, kernel_text)
    except UnicodeDecodeError:
        raise ForeignError(f"{listing} is not text.") from None
    if kernel.name != name:
        raise ForeignError(f"{listing} holds kernel {kernel.name}, not {name} as {where} says.")
    stated_target = (kernel_text if kernel_text is not None else listing.read_text()).split("amdhsa.target:", 1)
    if len(stated_target) == 2 and not stated_target[1].split("\n", 1)[0].strip().endswith(target):
        raise ForeignError(f"{listing} was compiled for {stated_target[1].split(chr(10), 1)[0].strip()}, not "
                           f"{target} as {where} says.")
    _match_metadata(arguments, kernel, where)
    threads = math.prod(size)
    if threads > math.prod(kernel.workgroup_size):
        raise ForeignError(f"{where} launches {threads} threads per workgroup; the kernel takes at most "
                           f"{math.prod(kernel.workgroup_size)}.")
    lds = kernel.lds_bytes + shared
    if lds > TARGETS[target].lds_bytes:
        raise ForeignError(f"{kernel.name} needs {lds} B of LDS per workgroup; {target} has "
                           f"{TARGETS[target].lds_bytes}.")
    kernel = dataclasses.replace(kernel, lds_bytes=lds, workgroup_size=size)
    constexprs = launch.get("constexprs")
    constexprs = constexprs if isinstance(constexprs, dict) else {}
    stated = launch.get("tile")  # HipKittens states its tile; Triton's is its BLOCK_M and BLOCK_N constexprs
    block_m, block_n = (stated[0], stated[1]) if isinstance(stated, list) and len(stated) == 2 \
        else (constexprs.get("BLOCK_M", constexprs.get("BLOCK_SIZE_M")),  # the tutorial's names, or tune_gemm's
              constexprs.get("BLOCK_N", constexprs.get("BLOCK_SIZE_N")))
    tile = (block_m, block_n) if isinstance(block_m, int) and isinstance(block_n, int) and min(block_m, block_n) > 0 \
        else None
    order = _order(launch.get("order"), tile, shape, math.prod(grid), where)
    record = launch.get(producer.record)
    record = record if isinstance(record, dict) else {}
    version = record.get("version") or str(record.get("commit") or "")[:8] or None
    compiler = f"{producer.name} {version or '(version not stated)'}"
    return ForeignKernel(folder, name, target, compiler, producer, grid, size, shared,
                         dict(shape, layout=layout, dtype=dtype, out_dtype=out_dtype, epilogue={"kind": "none"},
                              foreign=f"{producer.name} {version or '?'}"),
                         strides, arguments, kernel, tile, order)


def _order(stated, tile: tuple[int, int] | None, shape: dict, workgroups: int,
           where: str) -> tuple[tuple[int, int], ...] | None:
    """The description's `order` (optional): [tile row, tile column] per workgroup id, each tile once."""
    if stated is None:
        return None
    if tile is None:
        raise ForeignError(f"{where} states an order of tiles but not the tile.")
    rows, cols = -(-shape["m"] // tile[0]), -(-shape["n"] // tile[1])
    if not isinstance(stated, list) or len(stated) != workgroups or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in p)
            for p in stated):
        raise ForeignError(f"{where}'s order is not one [tile row, tile column] pair per workgroup ({workgroups}).")
    order = tuple((p[0], p[1]) for p in stated)
    if sorted(order) != [(i, j) for i in range(rows) for j in range(cols)]:
        raise ForeignError(f"{where}'s order does not name each tile of the {rows}x{cols} grid once.")
    return order


def _storage(rows: int, cols: int, stride: tuple[int, int]) -> int:
    """Elements a strided rows×cols matrix spans."""
    return (rows - 1) * stride[0] + (cols - 1) * stride[1] + 1


def _view(flat: np.ndarray, rows: int, cols: int, stride: tuple[int, int]) -> np.ndarray:
    """The rows×cols matrix at `stride` (elements) in the 1-D array `flat`, as a writable view."""
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (stride[0] * item, stride[1] * item))


def _ulp(values: np.ndarray, dtype: str) -> np.ndarray:
    """One unit in the last place of the output type at each |value| (0 for f32, whose rounding the accumulation
    bound already holds)."""
    if dtype == "f32":
        return np.zeros(values.shape)
    mantissa = {"bf16": 7, "f16": 10}[dtype]
    smallest = {"bf16": -126, "f16": -14}[dtype]  # below it the spacing stays that of the smallest normal
    exponent = np.floor(np.log2(np.maximum(np.abs(values), 2.0 ** smallest)))
    return 2.0 ** (exponent - mantissa)


def dispatch_packet(workgroup_size: tuple[int, int, int], grid: tuple[int, ...], lds_bytes: int,
                    kernarg: int) -> bytes:
    """The 64-byte AQL kernel dispatch packet of a launch of `grid` workgroups (HSA runtime specification,
    hsa_kernel_dispatch_packet_t): header, setup (dimensions), workgroup size, grid size in work-items, segment
    sizes, kernel object (none here), kernarg address, completion signal (none)."""
    dims = 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1
    return struct.pack("<HHHHHHIIIIIQQQQ", 2, dims, *workgroup_size, 0,
                       *(g * s for g, s in zip(grid, workgroup_size)), 0, lds_bytes, 0, kernarg, 0, 0)


def write_hidden(memory: FlatMemory, kernarg: int, offset: int, size: int, value_kind: str,
                 grid: tuple[int, ...], workgroup_size: tuple[int, int, int], lds_dynamic: int) -> None:
    """One implicit argument at `offset` of the kernarg segment, as a HIP launch fills it (`HIDDEN`)."""
    value = HIDDEN[value_kind](grid, workgroup_size, lds_dynamic)
    memory.write(kernarg + offset, np.array([value & ((1 << (8 * size)) - 1)], "<u8").view(np.uint8)[:size].copy())


def emulate_foreign(folder: str | Path, seed: int = 0, kernel_text: str | None = None,
                    record: int | None = None, window: tuple[int, int] | None = None,
                    workgroups: int | None = None, batch: int = BATCH) -> EmulationResult:
    """Run the foreign kernel of `folder` on seeded random inputs and compare C with float64; the arguments mean
    what they mean for `host.emulate_gemm` (`record`: the first workgroups only, on zeros, keeping their traces for
    the timing model; `workgroups`: that many drawn at random, checked on what they store)."""
    started = time.perf_counter()
    foreign = load_foreign(folder, kernel_text)
    kernel, p, strides = foreign.kernel, foreign.problem, foreign.strides
    m, n, k = p["m"], p["n"], p["k"]
    in_type, out_type = NUMPY_TYPES[p["dtype"]], NUMPY_TYPES[p["out_dtype"]]
    shapes = {"a": (m, k), "b": (k, n), "c": (m, n)}
    elements = {name: _storage(*shapes[name], strides[name]) for name in shapes}
    item = {"a": np.dtype(in_type).itemsize, "b": np.dtype(in_type).itemsize, "c": np.dtype(out_type).itemsize}
    scratch = [a for a in foreign.arguments if a.kind == "scratch"]
    sizes = [elements[name] * item[name] for name in "abc"]
    sizes += [max(SCRATCH_FLOOR, a.bytes_per_workgroup * foreign.workgroups) for a in scratch]
    memory = FlatMemory()
    places = memory.allocate_many(sizes + [PACKET_BYTES, QUEUE_BYTES, max(kernel.kernarg_bytes, 8)])
    address = dict(zip("abc", places[:3]))
    address.update({a.name: place for a, place in zip(scratch, places[3:-3])})
    packet, queue, kernarg = places[-3:]
    memory.write(packet, dispatch_packet(foreign.workgroup_size, foreign.grid, foreign.kernel.lds_bytes, kernarg))

    rng = np.random.default_rng(seed)
    operands = {}
    for name in "ab":
        flat = memory.read(address[name], elements[name] * item[name]).view(in_type)
        values = (np.zeros(shapes[name], in_type) if record is not None else
                  rng.standard_normal(shapes[name], dtype=np.float32).astype(in_type))
        _view(flat, *shapes[name], strides[name])[...] = values
        operands[name] = values
    c_bytes = elements["c"] * item["c"]
    memory.read(address["c"], c_bytes).view(out_type)[...] = np.float32(np.nan).astype(out_type)

    lds_dynamic = foreign.shared_bytes
    # a struct's fields at the struct's offset plus their own; the bytes between them stay zero
    placed = [(arg, 0) for arg in foreign.arguments if arg.kind != "struct"]
    placed += [(field, arg.offset) for arg in foreign.arguments for field in arg.fields]
    for arg, base in placed:
        if arg.kind == "buffer":
            value = address[arg.buffer]
        elif arg.kind == "scratch":
            value = address[arg.name]
        elif arg.kind == "int":
            value = arg.value
        else:
            write_hidden(memory, kernarg, base + arg.offset, arg.size, arg.value_kind, foreign.grid,
                         foreign.workgroup_size, lds_dynamic)
            continue
        memory.write(kernarg + base + arg.offset, np.array([value & ((1 << (8 * arg.size)) - 1)], "<u8")
                     .view(np.uint8)[:arg.size].copy())

    target = TARGETS[foreign.target]
    ctx = DecodeContext(kernel, foreign.target, kernel.wave_size, target.lds_banks, target.buffer_cache_swizzle)
    if record is None:
        memory.watch(address["c"], -(-c_bytes // 4) * 4)
    dispatch = Dispatch(kernel, ctx, memory, kernarg, seed)
    # Triton's kernels keep LLVM's default inputs where they read implicit arguments: the dispatch packet, the
    # queue and the dispatch id arrive in user SGPRs as on a HIP launch (the first dispatch of its queue)
    dispatch.host_sgprs = {"dispatch_ptr": packet, "queue_ptr": queue, "dispatch_id": 0}
    if record is not None:
        dispatch.traces = []
        dispatch.window = window
    groups = foreign.workgroups
    sample = None
    if workgroups is not None:
        sample = set(np.random.default_rng(seed).choice(groups, size=min(workgroups, groups), replace=False).tolist())
    chosen = [(wg_id, (x, y, z)) for wg_id, (z, y, x) in
              enumerate(itertools.product(*(range(count) for count in reversed(foreign.grid))))
              if (record is None or wg_id < record) and (sample is None or wg_id in sample)]
    for first in range(0, len(chosen), batch):
        part = chosen[first:first + batch]
        dispatch.run_batch([wg_id for wg_id, _ in part], [grid_id for _, grid_id in part])

    flat_c = memory.read(address["c"], c_bytes).view(out_type)
    got = _view(flat_c, m, n, strides["c"]).astype(np.float64)
    written = ~np.isnan(got)
    if record is not None:
        want, bound, unwritten = np.zeros(got.shape), np.ones(got.shape), int((~written).sum())
        wrong = np.zeros(got.shape, bool)
    else:
        a64, b64 = operands["a"].astype(np.float64), operands["b"].astype(np.float64)
        if sample is None:
            want = a64 @ b64
            unwritten = int((~written).sum())
        else:  # the sampled workgroups' outputs: each right, and together whole tiles where the problem is
            rows, cols = np.flatnonzero(written.any(axis=1)), np.flatnonzero(written.any(axis=0))
            want = np.zeros(got.shape)
            want[np.ix_(rows, cols)] = a64[rows] @ b64[:, cols]
            want = np.where(written, want, 0.0)
            tile = foreign.tile
            whole = tile is not None and m % tile[0] == 0 and n % tile[1] == 0
            expected = len(sample) * tile[0] * tile[1] if tile is not None and whole else int(written.sum())
            unwritten = max(0, expected - int(written.sum()))
            got = np.where(written, got, 0.0)
            written = np.ones_like(written)
        scale = float(np.abs(want).max()) or 1.0
        bound = relative_tolerance(k) * scale + _ulp(want, p["out_dtype"])
        wrong = ~written | (np.where(written, np.abs(got - want), 0.0) > bound)
    diff = np.where(written, np.abs(got - want), 0.0)
    scale = float(np.abs(want).max()) or 1.0
    # the writer of each output: the memory notes them per dword of C's bytes
    writers = None
    if memory.writers is not None:
        offsets = (np.arange(m)[:, None] * strides["c"][0] + np.arange(n)[None, :] * strides["c"][1]) * item["c"]
        writers = memory.writers[(offsets // 4).reshape(-1)]
    found = mismatches(got, want, wrong, writers, kernel) if record is None else ()
    divergence = None
    if found and found[0]["workgroup"] is not None:
        nx, ny, _ = foreign.grid
        wg_id = found[0]["workgroup"]
        divergence = localise(dispatch, wg_id, (wg_id % nx, wg_id // nx % ny, wg_id // (nx * ny)),
                              found[0]["wave"], found[0]["pc"])
    beyond = sorted(memory.out_of_range.items())
    memory.data = np.zeros(0, np.uint8)
    return EmulationResult(
        kernel=f"{kernel.name} ({foreign.compiler})", target=foreign.target, problem=p, seed=seed,
        workgroups=groups, waves_per_workgroup=dispatch.waves_per_group, wave_size=ctx.lanes,
        max_abs_error=float(diff.max()), max_rel_error=float(diff.max()) / scale,
        tolerance=float(bound.max()) / scale, unwritten=unwritten,
        sampled=len(sample) if sample is not None else None, wrong=int(wrong.sum()), mismatches=found,
        first_divergence=divergence,
        out_of_range_reads=tuple({"line": kernel.instructions[pc].line, "instruction": kernel.instructions[pc].text,
                                  "executions": count, "lane_reads": lanes}
                                 for (_, pc), (count, lanes) in beyond),
        hazards=tuple(dispatch.hazards), instructions=int(dispatch.hits.sum()), mma_count=dispatch.mma,
        barrier_count=dispatch.barriers, mix=_mix(kernel, dispatch.hits),
        mix_per_wave=tuple(_mix(kernel, hits) for hits in dispatch.first_group_hits or []),
        lds_banks=ctx.lds_banks,
        lds_accesses=tuple(LdsAccessStats(kernel.instructions[pc].line, kernel.instructions[pc].text, *entry)
                           for pc, entry in sorted(dispatch.banks.items())),
        seconds=time.perf_counter() - started, output=got, traces=dispatch.traces)
