"""The host side of emulation: which buffers a compiled program has, which of them each dispatch's kernel
arguments are, in what order the dispatches run, and what the result is checked against.

`emulate_gemm(folder)` runs what `pipelines compile` wrote, whatever it was built from: a --shape GEMM with or
without an epilogue (alpha-beta, bias-relu, bias-gelu), a batch matmul, or an --input program of several
dispatches. The program's host code is read from IREE itself: the folder's source compiled to the flow phase
(a fraction of a second) names each `flow.dispatch` in program order with the tensors it reads (function
arguments or earlier dispatches' results) and the ones it writes, and the dispatch's binding order is its
operands then its results. That mapping is checked against the kernel (every argument a global buffer, one per
binding) and against the configured IR (each binding's memref type is the tensor's). The inputs are seeded random
values exact in each argument's element type, built from the function's own signature; every dispatch runs
through one flat memory; the function's result is compared with a float64 interpretation of the source function
(`interpret`) within per-element bounds that account for the epilogue and for intermediate roundings.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from iree.compiler import ir

from transforms.problem import ProblemError, gemms_from_mlir

from ..compiler import iree_compile_path
from ..targets import TARGETS
from .foreign import HIDDEN, PACKET_BYTES, QUEUE_BYTES, dispatch_packet, emulate_foreign, is_foreign, \
    load_foreign, write_hidden
from .interpret import Interpreter, element_type, numpy_type
from .isa import Kernel, parse_kernel, parse_listing
from .localise import localise
from ..reference import relative_tolerance
from .machine import DecodeContext, EmulatorError
from .memory import FlatMemory
from .run import (BATCH, Dispatch, EmulationResult, LdsAccessStats, _mix, _output_tile_elements, _sampled_reference,
                  bank_count, emulated_report, loop_workgroups, mismatches)

# Flags of the compile command that shape the program before codegen (the rest choose kernels, not dispatches).
HOST_FLAGS = ("--iree-hal-target", "--iree-rocm-target", "--iree-dispatch-creation", "--iree-global-opt",
              "--iree-opt-", "--iree-flow", "--iree-input")
NAN_BITS = 0x7FC00001  # f32 NaN: an output element never written


@dataclass(frozen=True)
class Buffer:
    name: str  # "input0", "dispatch1.result0"
    shape: tuple[int, ...]
    dtype: str  # MLIR element type
    storage: str = ""  # a reshape of the buffer of this name (same bytes, row-major); "" for a buffer of its own

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(numpy_type(self.dtype, self.name)).itemsize


@dataclass(frozen=True)
class Launch:
    """One dispatch as the program runs it: its kernel and the buffer of each binding, in binding order."""

    dispatch: str  # as report.json names it, e.g. module_mlp_dispatch_0
    export: str  # the kernel's symbol
    bindings: tuple[Buffer, ...]
    writes: tuple[Buffer, ...]  # the last bindings: the dispatch's results
    problem: dict | None  # the contraction of the dispatch, as a Gemm dict; None for a dispatch of no GEMM
    loops: tuple[int, ...]  # the static loop ranges of the dispatch's root op, which the workgroup tile divides


@dataclass(frozen=True)
class Program:
    function: str
    inputs: tuple[Buffer, ...]
    launches: tuple[Launch, ...]
    result: Buffer


def flow_text(folder: Path, report: dict) -> str:
    """The folder's source compiled to IREE's flow phase with the compile's own program-shaping flags."""
    source = folder / (report.get("files") or {}).get("source", "gemm.mlir")
    if not source.is_file():
        raise EmulatorError(f"{source} is missing; the host side reads the program from the compiled source.")
    flags = [f for f in str(report.get("command", "")).split() if f.startswith(HOST_FLAGS)]
    flags = flags or ["--iree-hal-target-device=hip", f"--iree-rocm-target={report['target']}"]
    done = subprocess.run([iree_compile_path(), str(source), *flags, "--compile-to=flow", "-o", "-"],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        first = next((line for line in done.stderr.splitlines() if "error" in line), "no message")
        raise EmulatorError(f"iree-compile could not bring {source.name} to the flow phase: {first.strip()[:200]}")
    return done.stdout


def _tensor(value: ir.Value, name: str) -> Buffer:
    if not isinstance(value.type, ir.RankedTensorType) or not ir.RankedTensorType(value.type).has_static_shape:
        raise EmulatorError(f"{name} is {value.type}; the host side lays out static tensors only.")
    return Buffer(name, tuple(ir.RankedTensorType(value.type).shape), element_type(value.type))


def plan(flow: ir.Module, dispatch_names: dict[str, str]) -> Program:
    """The program's public function: its inputs, its dispatches in order with their bindings, its result.
    `dispatch_names` maps each kernel symbol to the dispatch report.json names."""
    publics = [op.operation for op in flow.body.operations if op.operation.name == "util.func"
               and ir.StringAttr(op.operation.attributes["sym_visibility"]).value == "public"]
    executables = {ir.StringAttr(op.attributes["sym_name"]).value: op.operation for op in flow.body.operations
                   if op.operation.name == "flow.executable"}
    if len(publics) != 1:
        raise EmulatorError(f"the program has {len(publics)} public functions; the host side runs one.")
    function = publics[0]
    name = ir.StringAttr(function.attributes["sym_name"]).value
    buffers: dict = {}
    inputs: dict[int, Buffer] = {}
    launches: list[Launch] = []
    result = None
    for op in function.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "hal.tensor.import":
            index = ir.BlockArgument(op.operands[0]).arg_number
            buffers[op.results[0]] = inputs[index] = _tensor(op.results[0], f"input{index}")
        elif op.name == "hal.tensor.barrier":
            for source, value in zip(op.operands, op.results):
                buffers[value] = buffers[source]
        elif op.name == "flow.tensor.reshape" and op.operands[0] in buffers:
            # a static reshape moves no data (a split-K program views A as M x S x K/S): the same bytes
            source, view = buffers[op.operands[0]], _tensor(op.results[0], "a reshaped tensor")
            if math.prod(view.shape) != math.prod(source.shape) or len(op.operands) > 1:
                raise EmulatorError(f"@{name} reshapes {source.name} to {view.shape}, which is not a view of it.")
            buffers[op.results[0]] = Buffer(f"{source.name}.view{view.shape}", view.shape, source.dtype,
                                            source.storage or source.name)
        elif op.name == "flow.dispatch":
            launches.append(_launch(op, len(launches), buffers, executables, dispatch_names))
        elif op.name == "hal.tensor.export":
            if result is not None:
                raise EmulatorError(f"@{name} returns several tensors; the host side checks one result.")
            result = buffers.get(op.operands[0])
            if result is None or result.name.startswith("input"):
                raise EmulatorError(f"@{name} returns a tensor that no dispatch writes.")
        elif op.name not in ("arith.constant", "util.return"):
            raise EmulatorError(f"the host code of @{name} runs '{op.name}' besides its dispatches, which the "
                                "emulator's host side does not run.")
    if result is None:
        raise EmulatorError(f"@{name} returns no tensor.")
    return Program(name, tuple(inputs[i] for i in sorted(inputs)), tuple(launches), result)


def _launch(op: ir.Operation, number: int, buffers: dict, executables: dict, dispatch_names: dict) -> Launch:
    entry = str(ir.ArrayAttr(op.attributes["entry_points"])[0])  # @executable::@export
    executable, export = (part.lstrip("@") for part in entry.split("::"))
    if export not in dispatch_names:
        raise EmulatorError(f"the program dispatches {export}, which the folder's report does not list.")
    workload, arguments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[:2]
    tied = op.attributes["tied_operands"] if "tied_operands" in op.attributes else None
    if tied is not None and any(int(ir.IntegerAttr(t).value) >= 0 for t in ir.ArrayAttr(tied)):
        raise EmulatorError(f"dispatch {export} writes into one of its operands (a tied result), which the host "
                            "side does not lay out.")
    reads = []
    for value in list(op.operands)[workload:workload + arguments]:
        if value not in buffers:
            raise EmulatorError(f"dispatch {export} takes {value.type}, not a tensor of the program; the host side "
                                "passes no push constants.")
        reads.append(buffers[value])
    writes = []
    for i, value in enumerate(op.results):
        buffers[value] = _tensor(value, f"dispatch{number}.result{i}")
        writes.append(buffers[value])
    try:
        gemms = gemms_from_mlir(executables[executable], export)
    except ProblemError:  # a contraction of another form (e.g. a split-K partial GEMM) or none
        gemms = []
    if len(gemms) > 1:
        raise EmulatorError(f"dispatch {export} holds {len(gemms)} linalg contractions; the emulator runs "
                            "dispatches of one root op.")
    if gemms:
        problem = dataclasses.asdict(gemms[0][1])
        loops = tuple(problem[k] for k in ("batch", "m", "n", "k") if problem.get(k))
        return Launch(dispatch_names[export], export, tuple(reads + writes), tuple(writes), problem, loops)
    return Launch(dispatch_names[export], export, tuple(reads + writes), tuple(writes), None,
                  root_loops(executables[executable], export))


def root_loops(executable: ir.Operation, export: str) -> tuple[int, ...]:
    """The static loop ranges of the last linalg.generic of a dispatch (its root op): each loop's size read from
    an operand dimension that its indexing map sends it to."""
    generics = [op for op in _walk(executable) if op.name == "linalg.generic"]
    if not generics:
        raise EmulatorError(f"dispatch {export} holds no linalg.generic or contraction; the host side sizes its grid "
                            "from one.")
    root = generics[-1]
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(root.attributes["indexing_maps"])]
    sizes: dict[int, int] = {}
    for value, amap in zip(root.operands, maps):
        shape = ir.RankedTensorType(value.type).shape
        for dim, expr in zip(shape, amap.results):
            expr = expr.maybe_downcast()
            if isinstance(expr, ir.AffineDimExpr):
                sizes.setdefault(expr.position, dim)
    if sorted(sizes) != list(range(maps[0].n_dims)):
        raise EmulatorError(f"the root op of dispatch {export} has a loop no operand dimension sizes.")
    return tuple(sizes[d] for d in range(maps[0].n_dims))


def _walk(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child.operation
                yield from _walk(child.operation)


def kernel_listing(text: str, symbol: str) -> str:
    """The assembler listing of kernel `symbol` alone: the other kernels of a linked listing and their metadata
    entries become blank lines, so line numbers stay those of the file."""
    lines = text.splitlines(keepends=True)
    names = re.findall(r"^\s+\.amdhsa_kernel (\S+)", text, re.M)
    if symbol not in names:
        raise EmulatorError(f"the kernel listing has no kernel {symbol}.")
    blank: set[int] = set()
    for other in names:
        if other == symbol:
            continue
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s+\.globl\s+{re.escape(other)}\s*$", line))
        end = next(i for i, line in enumerate(lines) if i > start and ".end_amdhsa_kernel" in line)
        blank.update(range(start, end + 1))
    entry = None  # metadata entries: "  - " under amdhsa.kernels, each naming its kernel in `.name:`
    for i, line in enumerate(lines):
        if line.startswith("  - ") or line.startswith("amdhsa.") or line.startswith(".end_amdgpu_metadata"):
            entry = [i] if line.startswith("  - ") else None
        elif entry is not None:
            entry.append(i)
            found = re.match(r"\s+\.name:\s+(\S+)", line)
            if found and found[1] != symbol:
                entry.append(-1)
        if entry is not None and -1 in entry and (i + 1 == len(lines) or lines[i + 1].startswith(
                ("  - ", "amdhsa.", ".end_amdgpu_metadata"))):
            blank.update(j for j in entry if j >= 0)
    return "".join("\n" if i in blank else line for i, line in enumerate(lines))


def _check_bindings(launch: Launch, kernel, configured: str) -> None:
    """The kernel takes one global buffer per binding, then only implicit arguments a HIP launch fills (IREE
    releases before 3.13 left them on some kernels), and the configured IR's binding types are the tensors the
    program passes."""
    kinds = [arg.get("value_kind") for arg in kernel.args if arg.get("value_kind") not in HIDDEN]
    if any(kind != "global_buffer" for kind in kinds) or any(
            arg.get("value_kind") not in HIDDEN for arg in kernel.args[len(kinds):]):
        raise EmulatorError(f"kernel {launch.export} takes {len(kernel.args)} arguments of which "
                            f"{sum(k != 'global_buffer' for k in kinds)} are neither buffers nor implicit arguments; "
                            "the host side passes bindings only, no push constants.")
    if len(kinds) != len(launch.bindings):
        raise EmulatorError(f"kernel {launch.export} takes {len(kinds)} buffers; its dispatch has "
                            f"{len(launch.bindings)} bindings ({', '.join(b.name for b in launch.bindings)}).")
    for index, memref in re.findall(r"binding\((\d+)\)[^:\n]*: memref<([^,>]+)", configured):
        binding = launch.bindings[int(index)] if int(index) < len(launch.bindings) else None
        if binding is None or memref != "x".join(map(str, binding.shape)) + "x" + binding.dtype:
            raise EmulatorError(f"binding {index} of {launch.export} is memref<{memref}> in the configured IR, but "
                                f"the program passes {binding and binding.name} there.")


def _reads_yz(dump: Path, dispatch: str) -> bool:
    """Whether the dispatch's kernel may read a y or z workgroup id. The descriptor enables both SGPRs wherever
    LLVM could not prove them unused (IREE releases before 3.13 left the kernels without the attributes that say
    so); the optimized LLVM IR beside the listing tells: a kernel that calls no y or z intrinsic reads neither."""
    modules = sorted(dump.glob(f"{dispatch}_*.optimized.ll"))
    return not modules or any(re.search(r"llvm\.amdgcn\.workgroup\.id\.[yz]\b", m.read_text()) for m in modules)


def _configured(dump: Path, dispatch: str) -> str:
    path = dump / f"configured_{dispatch}.mlir"
    if not path.is_file():
        raise EmulatorError(f"{path} is missing; compile the folder again.")
    return path.read_text()


def load_program(folder: Path, kernel_text: str | None) -> tuple[dict, Program, dict[str, str]]:
    """report.json, the program and the listing text of each dispatch (by report name)."""
    report = emulated_report(folder)
    dispatches = report.get("dispatches") or []
    if not dispatches:
        raise EmulatorError("report.json lists no dispatch to emulate.")
    listings, exports = {}, {}
    for entry in dispatches:
        if not isinstance(entry, dict) or not isinstance(entry.get("isa_file"), str):
            raise EmulatorError("report.json lists a dispatch without its isa_file; compile the folder again.")
        isa = folder / "dump" / entry["isa_file"]
        if not isa.is_file():
            raise EmulatorError(f"{isa} is missing.")
        try:
            text = kernel_text if kernel_text is not None else isa.read_text()
            parse_listing(isa, text)  # a listing that is not AMDGPU assembly is named before anything else
            if not isinstance(entry.get("dispatch"), str):
                raise EmulatorError(f"report.json does not name the dispatch of {entry['isa_file']}; compile the "
                                    "folder again.")
            listings[entry["dispatch"]] = text
            configured = _configured(folder / "dump", entry["dispatch"])
        except UnicodeDecodeError:
            raise EmulatorError(f"{isa} or the configured IR beside it is not text; compile the folder "
                                "again.") from None
        export = re.search(r"hal\.executable\.export public @(\S+)", configured)
        if not export:
            raise EmulatorError(f"the configured IR of {entry['dispatch']} names no exported kernel.")
        exports[export[1]] = entry["dispatch"]
    with ir.Context(), ir.Location.unknown():
        program = plan(ir.Module.parse(flow_text(folder, report)), exports)
    return report, program, listings


def _inputs(program: Program, folder: Path, report: dict, rng, zeros: bool) -> tuple[list[np.ndarray], Interpreter]:
    source = folder / (report.get("files") or {}).get("source", "gemm.mlir")
    context = ir.Context()
    with context, ir.Location.unknown():
        interpreter = Interpreter(ir.Module.parse(source.read_text()), program.function)
        signature = interpreter.arguments()
    if [(b.shape, b.dtype) for b in program.inputs] != signature:
        raise EmulatorError(f"@{program.function} of the source takes {signature}, but the compiled program imports "
                            f"{[(b.shape, b.dtype) for b in program.inputs]}.")
    arrays = []
    for shape, dtype in signature:
        kind = numpy_type(dtype, f"an argument of @{program.function}")
        arrays.append(np.zeros(shape, kind) if zeros else rng.standard_normal(shape, dtype=np.float32).astype(kind))
    interpreter.context = context  # the reference runs later, in the context that parsed its module
    return arrays, interpreter


def emulate_gemm(folder: str | Path, seed: int = 0, kernel_text: str | None = None,
                 shape: tuple[int, ...] | None = None, record: int | None = None,
                 window: tuple[int, int] | None = None, workgroups: int | None = None,
                 batch: int = BATCH, only: int | None = None) -> EmulationResult:
    """Run the program compiled into `folder` on seeded random inputs and compare with float64.

    `kernel_text` replaces the folder's .rocmasm (to run an edited kernel, e.g. a planted fault); `shape`, when
    given, must be the (batch,) M, N, K the kernel was compiled for, since compiled kernels are static. `record`
    runs only the first `record` workgroups and keeps each wave's executed instructions (`traces`, for the timing
    model); the comparison then covers only what those workgroups wrote. `window` = (pc, n): recording waves stop
    once they have executed the instruction at `pc` (a loop's back-edge) n times. `workgroups` = N runs N
    workgroups drawn at random (seeded) and checks every output they stored against float64 computed for those
    outputs alone, and that together they stored N whole workgroup tiles (when the problem is whole tiles).
    `record` and `workgroups` take programs of one plain GEMM dispatch, except that `record` with `only` = i
    records dispatch i (in program order) of any program: the other dispatches do not run, and the buffers the
    earlier ones write stay zeros (timing does not depend on values). `batch` workgroups run together in
    lockstep (one wave's instruction moves all of them); 1 runs them one by one."""
    started = time.perf_counter()
    folder = Path(folder)
    if is_foreign(folder):  # another compiler's kernel with its launch described (emulator/foreign.py)
        return _emulate_foreign(folder, seed, kernel_text, shape, record, window, workgroups, batch, only)
    report, program, listings = load_program(folder, kernel_text)
    problems = report.get("problems") or []
    if shape is not None:
        compiled = tuple(problems[0][k] for k in ("batch", "m", "n", "k") if problems[0].get(k)) if len(
            problems) == 1 else ()
        if tuple(shape) != compiled:
            raise EmulatorError(f"{folder} holds a kernel compiled for {'x'.join(map(str, compiled)) or 'a program'},"
                                f" not {'x'.join(map(str, shape))}; compile that shape first.")
    single_plain = (len(program.launches) == 1 and len(problems) == 1 and problems[0]["epilogue"]["kind"] == "none")
    if only is not None and (record is None or not 0 <= only < len(program.launches)):
        raise EmulatorError(f"dispatch {only} is recorded alone, and the program has dispatches 0 to "
                            f"{len(program.launches) - 1}." if record is not None else
                            "a dispatch is chosen only to record it.")
    if (workgroups is not None or (record is not None and only is None)) and not single_plain:
        raise EmulatorError(f"{'recording' if record is not None else '--workgroups'} takes a folder of one plain "
                            f"GEMM dispatch; this program has {len(program.launches)} dispatch(es) and epilogue "
                            f"'{problems[0]['epilogue']['kind'] if problems else '?'}'.")
    if workgroups is not None and problems[0].get("batch"):
        raise EmulatorError("--workgroups samples plain GEMMs; a batched one is emulated whole.")
    target = report["target"]
    rng = np.random.default_rng(seed)
    arrays, interpreter = _inputs(program, folder, report, rng, zeros=record is not None)

    memory = FlatMemory()
    buffers = list(program.inputs) + [b for launch in program.launches for b in launch.bindings
                                      if b not in program.inputs]
    buffers = list(dict.fromkeys(b for b in buffers if not b.storage))  # views share the bytes of their buffer
    # The kernels' argument blocks come in the same growth of the byte array as the buffers: a later growth copies,
    # and so touches, every byte before it (gigabytes of never-read zeros when recording a long-K problem).
    running = [launch for number, launch in enumerate(program.launches) if only is None or number == only]
    kernels = [parse_kernel(kernel_listing(listings[launch.dispatch], launch.export)) for launch in running]
    # per kernel: its argument block, and the dispatch packet and queue a HIP launch gives its user SGPRs
    places = memory.allocate_many([b.nbytes for b in buffers] + [size for k in kernels for size in (
        max(k.kernarg_bytes, 8), PACKET_BYTES, QUEUE_BYTES)])
    address = dict(zip(buffers, places))
    by_name = {b.name: address[b] for b in buffers}
    for launch in program.launches:
        for view in launch.bindings:
            if view.storage:
                address[view] = by_name[view.storage]
    if program.result.storage:
        address[program.result] = by_name[program.result.storage]
    if record is None:  # a recording leaves the inputs as the zeros they were allocated as (pages touched on use)
        for buffer, array in zip(program.inputs, arrays):
            memory.write(address[buffer], np.ascontiguousarray(array).view(np.uint8))
    skipped = {b for launch in program.launches[:only or 0] for b in launch.writes}  # zeros, not run
    for buffer in buffers[len(program.inputs):]:  # NaN: "never written"
        if buffer in skipped:
            continue
        kind = numpy_type(buffer.dtype, buffer.name)  # filled in place: no output-sized temporaries
        memory.read(address[buffer], buffer.nbytes).view(kind)[...] = np.float32(np.nan).astype(kind)

    grid = report.get("grid")  # (x, y, z) workgroups, stated by routes that launch a multi-dimensional grid
    if grid is not None and not (isinstance(grid, list) and len(grid) == 3
                                 and all(isinstance(n, int) and n >= 1 for n in grid)):
        raise EmulatorError(f"report.json states grid {grid!r:.40}, not three positive workgroup counts.")
    if grid is not None and len(program.launches) != 1:
        raise EmulatorError("report.json states one grid for a program of several dispatches.")
    runs: list[tuple] = []
    sample: set[int] | None = None
    writer_kernel, writer = None, None
    launch_places = places[len(buffers):]
    for launch, kernel, kernarg, packet, queue in zip(running, kernels, launch_places[0::3], launch_places[1::3],
                                                      launch_places[2::3]):
        configured = _configured(folder / "dump", launch.dispatch)
        _check_bindings(launch, kernel, configured)
        ctx = DecodeContext(kernel, target, kernel.wave_size, bank_count(configured, target),
                            TARGETS[target].buffer_cache_swizzle)
        for arg, buffer in zip(kernel.args, launch.bindings):
            memory.write(kernarg + arg["offset"], np.array([address[buffer]], np.uint64).view(np.uint8))
        if record is None and program.result in launch.writes:
            memory.watch(address[program.result], program.result.nbytes)  # who stores each output
            writer_kernel = kernel
            writer = len(runs)  # the run whose dispatch stores the result
        dispatch = Dispatch(kernel, ctx, memory, kernarg, seed)
        if record is not None:
            dispatch.traces = []
            dispatch.window = window
        launch_grid: tuple[int, ...] | None = tuple(grid) if grid is not None else None
        if launch_grid is None:
            if (kernel.descriptor.get("system_sgpr_workgroup_id_y") or kernel.descriptor.get(
                    "system_sgpr_workgroup_id_z")) and _reads_yz(folder / "dump", launch.dispatch):
                raise EmulatorError("the kernel reads a y or z workgroup id and report.json states no grid.")
            launch_grid = (loop_workgroups(configured, launch.loops, launch.dispatch), 1, 1)
        for arg in kernel.args:
            if arg.get("value_kind") in HIDDEN:
                write_hidden(memory, kernarg, arg["offset"], arg["size"], arg["value_kind"], launch_grid,
                             kernel.workgroup_size, 0)
        memory.write(packet, dispatch_packet(kernel.workgroup_size, launch_grid, kernel.lds_bytes, kernarg))
        dispatch.host_sgprs = {"dispatch_ptr": packet, "queue_ptr": queue, "dispatch_id": 0}
        groups = math.prod(launch_grid)
        if workgroups is not None:
            sample = set(np.random.default_rng(seed).choice(groups, size=min(workgroups, groups),
                                                            replace=False).tolist())
        chosen = [(wg_id, (x, y, z)) for wg_id, (z, y, x) in
                  enumerate(itertools.product(*(range(n) for n in reversed(launch_grid))))
                  if (record is None or wg_id < record) and (sample is None or wg_id in sample)]
        for first in range(0, len(chosen), batch):
            part = chosen[first:first + batch]
            dispatch.run_batch([wg_id for wg_id, _ in part], [grid_id for _, grid_id in part])
        runs.append((kernel, dispatch, ctx, groups, configured, launch_grid))

    result = program.result
    stored = memory.read(address[result], result.nbytes).view(numpy_type(result.dtype, result.name))
    if record is not None:  # nothing to judge: count the outputs never stored, make no whole-output float64 copies
        unwritten, stored = int(np.isnan(stored).sum()), np.zeros(1, np.float32)  # (GBs for a 16384x4096 output)
    got = stored.reshape(result.shape if record is None else (1,) * len(result.shape)).astype(np.float64)
    written = ~np.isnan(got)
    if sample is not None:
        # the sampled workgroups' outputs only: each must be right, and together they must be whole tiles
        tile = _output_tile_elements(runs[0][4], problems[0])
        expected = len(sample) * tile if tile else int(written.sum())
        unwritten = max(0, expected - int(written.sum()))
        want = _sampled_reference(problems[0], arrays[0], arrays[1], written)
        bound = np.full(want.shape, relative_tolerance(problems[0]["k"]) * (float(np.abs(want).max()) or 1.0))
        got = np.where(written, got, 0.0)
        written = np.ones_like(written)
    elif record is None:
        unwritten = int((~written).sum())
        with interpreter.context, ir.Location.unknown():
            (want, bound), = interpreter.run(arrays)
    else:
        want, bound = np.zeros(got.shape), np.ones(got.shape)
    diff = np.where(written, np.abs(got - want), 0.0)  # unwritten outputs are counted apart
    scale = float(np.abs(want).max()) or 1.0
    wrong = ~written | (diff > bound)
    if record is not None:
        wrong[...] = False  # a recording runs on zeros and part of the grid: nothing to judge
    first_kernel, first_dispatch, first_ctx = runs[0][:3]
    mix: dict[str, int] = {}
    for kernel, dispatch, *_ in runs:
        for op, n in _mix(kernel, dispatch.hits).items():
            mix[op] = mix.get(op, 0) + n
    accesses = tuple(LdsAccessStats(kernel.instructions[pc].line, kernel.instructions[pc].text, *entry)
                     for kernel, dispatch, *_ in runs for pc, entry in sorted(dispatch.banks.items()))
    found = mismatches(got, want, wrong, memory.writers, writer_kernel or first_kernel)
    order = {id(run[0]): (position, run[0]) for position, run in enumerate(runs)}  # a buffer load's kernel
    beyond = sorted(memory.out_of_range.items(), key=lambda item: (order[item[0][0]][0], item[0][1]))
    divergence = None
    if found and found[0]["workgroup"] is not None and writer is not None and record is None:
        nx, ny, _ = runs[writer][5]
        wg_id = found[0]["workgroup"]
        divergence = localise(runs[writer][1], wg_id, (wg_id % nx, wg_id // nx % ny, wg_id // (nx * ny)),
                              found[0]["wave"], found[0]["pc"])
    # The dispatches and their workgroups refer to each other, so they and this memory would outlive the call until
    # a garbage collection: runs made one after another (a calibrate worker's rows) would hold several at once.
    memory.data = np.zeros(0, np.uint8)
    return EmulationResult(
        kernel=", ".join(kernel.name for kernel, *_ in runs), target=target,
        problem=problems[0] if len(problems) == 1 else program_problem(program),
        seed=seed, workgroups=sum(run[3] for run in runs), waves_per_workgroup=first_dispatch.waves_per_group,
        wave_size=first_ctx.lanes, max_abs_error=float(diff.max()), max_rel_error=float(diff.max()) / scale,
        tolerance=float(bound.max()) / scale, unwritten=unwritten,
        sampled=len(sample) if sample is not None else None,
        wrong=int(wrong.sum()),
        mismatches=found, first_divergence=divergence,
        out_of_range_reads=tuple({"line": kernel.instructions[pc].line, "instruction": kernel.instructions[pc].text,
                                  "executions": n, "lane_reads": lanes}
                                 for (code, pc), (n, lanes) in beyond for kernel in [order[code][1]]),
        hazards=tuple(h for _, dispatch, *_ in runs for h in dispatch.hazards),
        instructions=sum(int(dispatch.hits.sum()) for _, dispatch, *_ in runs),
        mma_count=sum(dispatch.mma for _, dispatch, *_ in runs),
        barrier_count=sum(dispatch.barriers for _, dispatch, *_ in runs), mix=mix,
        mix_per_wave=tuple(_mix(first_kernel, hits) for hits in first_dispatch.first_group_hits or []),
        lds_banks=first_ctx.lds_banks, lds_accesses=accesses, seconds=time.perf_counter() - started, output=got,
        traces=first_dispatch.traces)


def _emulate_foreign(folder: Path, seed: int, kernel_text: str | None, shape: tuple[int, ...] | None,
                     record: int | None, window: tuple[int, int] | None, workgroups: int | None, batch: int,
                     only: int | None) -> EmulationResult:
    if only is not None:
        raise EmulatorError(f"{folder} holds one foreign kernel, not a program of dispatches to choose from.")
    if shape is not None:
        problem = load_foreign(folder, kernel_text).problem
        compiled = (problem["m"], problem["n"], problem["k"])
        if tuple(shape) != compiled:
            raise EmulatorError(f"{folder} holds a kernel launched for {'x'.join(map(str, compiled))}, not "
                                f"{'x'.join(map(str, shape))}; compile that shape first.")
    return emulate_foreign(folder, seed=seed, kernel_text=kernel_text, record=record, window=window,
                           workgroups=workgroups, batch=batch)


def program_problem(program: Program) -> dict:
    """What the summary names for a program of several dispatches: its last GEMM, marked as a program."""
    last = next(launch.problem for launch in reversed(program.launches) if launch.problem is not None) \
        if any(launch.problem is not None for launch in program.launches) else {}
    return dict(last, program=f"@{program.function}, {len(program.launches)} dispatches")


def dispatch_kernels(folder: str | Path) -> list[tuple[str, Kernel, str, int]]:
    """Each dispatch of the program compiled into `folder`, in program order: its name in report.json, its kernel,
    its configured IR and its workgroup count (what the timing model needs before it records a dispatch)."""
    folder = Path(folder)
    report, program, listings = load_program(folder, None)
    if report.get("grid") is not None and len(program.launches) != 1:
        raise EmulatorError("report.json states one grid for a program of several dispatches.")
    found = []
    for launch in program.launches:
        kernel = parse_kernel(kernel_listing(listings[launch.dispatch], launch.export))
        configured = _configured(folder / "dump", launch.dispatch)
        found.append((launch.dispatch, kernel, configured,
                      loop_workgroups(configured, launch.loops, launch.dispatch)))
    return found
