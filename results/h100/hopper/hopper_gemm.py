"""The Hopper route's kernels measured (issue 19): built here, run on an H100/H200.

    python results/h100/hopper/hopper_gemm.py build --shape 4096x4096x4096 --dtype bf16 \\
        [--schedule cooperative-persistent:128x256x4x8 ...] -o DIR [--force]
    # on the GPU machine (iree-base-runtime, torch for the float64 reference and cuBLAS):
    python results/h100/hopper/hopper_gemm.py run DIR [--repetitions 5] > DIR/rows.jsonl
    python results/h100/hopper/hopper_gemm.py inspect DIR [--json]   # wgmma/TMA/mbarrier counts, cluster, registers

`build` checks each schedule's stage hand-off (transforms.hopper_protocol) and writes, per problem (layout nt: A
M×K, B N×K; nn: B K×N; C f32 M×N): the Hopper program of each schedule, its .vmfb and PTX (dump/NAME/, checked with
transforms.hopper.check_ptx), IREE's default for the same linalg.matmul (sm_80 PTX, which the driver JIT-compiles
for sm_90, as IREE 3.13 has no sm_90 target) and manifest.json. `run` encodes the tensor maps with the CUDA driver,
checks every Hopper kernel's C against float64 (torch on the GPU), then times the Hopper kernel and IREE's default
with iree-benchmark-module (the Hopper time includes its one-thread `@patch` dispatch) and cuBLAS through
torch.matmul (A·Bᵀ, output in the input type, CUDA events), all in one process on one GPU, each after the same
warm-up and for the same minimum time per repetition (an H100 under GEMMs reaches its 700 W limit within a second
and its clock falls from 1.98 GHz to about 1.4, results/h100/hopper/README.md). `--repeat-flops` sets how much
work one call of a program does (its dispatches repeated), so that the per-call cost of iree-benchmark-module is
a small part of each time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]  # the repository (this script lies in results/h100/hopper/)
sys.path.insert(0, str(ROOT))

# Both import nothing beyond the standard library, so `run` and `inspect` work on a GPU machine without a compiler.
from pipelines.output import output_folder  # noqa: E402
from transforms.errors import UserError  # noqa: E402

# The element types the Hopper kernels take (transforms.hopper.DTYPES, which needs the compiler to import; a test
# keeps the two equal).
DTYPES = ("f16", "bf16")
OUTPUT_KIND = "hopper-build"  # the kind its output folders record (pipelines.output)
# What `run` and `inspect` read of each kernel of manifest.json, and the type `build` writes it with.
ENTRY_KEYS = {"name": str, "problem": str, "m": int, "n": int, "k": int, "dtype": str, "layout": str, "repeat": int,
              "schedule": dict, "maps": list}


@dataclass(frozen=True)
class Job:
    """One problem of a build, checked: its name, the GEMM (a transforms.problem.Gemm, imported only where the
    compiler is), how many times each dispatch repeats, and its schedules by kernel name."""

    problem: str
    gemm: object
    repeat: int
    schedules: tuple[tuple[str, object], ...]


def build(args) -> None:
    """Every problem and schedule checked first; then everything built in a scratch folder beside -o and moved
    into place when complete (`pipelines.output`: a folder of the user's only with --force, the files beside it
    kept)."""
    jobs = _jobs(args)
    with output_folder(Path(args.output), OUTPUT_KIND, args.force) as out:
        _build(args, jobs, out)


def _jobs(args) -> list[Job]:
    """Per problem: its name, Gemm, repeat count and (name, schedule) pairs, each checked (the problem, the
    schedule, the schedule on the problem and its stage hand-off under random interleavings) before anything is
    written."""
    from pipelines.bench import repeat_count
    from pipelines.targets import get_target
    from transforms.hopper import HopperError, HopperSchedule, check_problem
    from transforms.hopper_protocol import check as check_protocol
    from transforms.problem import Gemm, parse_shape

    schedules = []
    for kind, (block_m, block_n, stages, group_m, *cluster) in args.schedule:
        cluster_m = cluster[0] if cluster else 1
        schedule = HopperSchedule(block_m=block_m, block_n=block_n, stages=stages, group_m=group_m,
                                  kind=kind.removesuffix("-persistent"), persistent=kind.endswith("-persistent"),
                                  cluster_m=cluster_m)
        check_protocol(schedule)  # the stage hand-off under random interleavings (schedule.check first)
        schedules.append((f"{kind}_m{block_m}n{block_n}s{stages}g{group_m}" + (f"c{cluster_m}" if cluster_m > 1
                                                                                  else ""), schedule))
    jobs = []
    for shape in args.shape:
        batch, m, n, k = parse_shape(shape)
        if batch is not None:  # this tool's runner feeds one GEMM's operands; pipelines builds batches
            raise HopperError(f"{shape}: this tool builds one GEMM, not a batch (pipelines compile takes batches).")
        for dtype in args.dtype:
            problem = f"{dtype}_{m}x{n}x{k}" + ("" if args.layout == "nt" else f"_{args.layout}")
            gemm = Gemm(m, n, k, dtype, args.layout, batch)
            check_problem(gemm)
            for _, schedule in schedules:
                check_problem(gemm, schedule)
            # the project's rule, or the FLOPs asked for alone (no byte bound)
            repeat = repeat_count(gemm, get_target("sm_80")) if args.repeat_flops is None \
                else repeat_count(gemm, get_target("sm_80"), args.repeat_flops, math.inf)
            jobs.append(Job(problem, gemm, repeat, tuple((f"{problem}_{name}", s) for name, s in schedules)))
    return jobs


def _build(args, jobs: list[Job], out: Path) -> None:
    from iree.compiler.ir import Context, Location

    from pipelines.compiler import iree_compile_path
    from transforms.hopper import check_ptx, program, tensor_maps
    from transforms.problem import build_module

    manifest = []
    for job in jobs:
        problem, gemm, repeat = job.problem, job.gemm, job.repeat
        flags = [f"--iree-hal-benchmark-dispatch-repeat-count={repeat}"]
        for name, schedule in job.schedules:
            (out / f"{name}_hopper.mlir").write_text(program(gemm, schedule))
            dump = out / "dump" / name
            _compile(iree_compile_path(), out / f"{name}_hopper.mlir", out / f"{name}_hopper.vmfb",
                     ["--iree-hal-target-device=cuda", *flags, f"--iree-hal-dump-executable-files-to={dump}"])
            ptx = next(p for p in dump.glob("*.ptx") if ".entry gemm(" in p.read_text())
            for extra in dump.iterdir():  # the PTX is the evidence kept
                if extra != ptx:
                    extra.unlink()
            check_ptx(ptx.read_text(), gemm, schedule)
            resources = _ptxas(ptx)
            manifest.append({"name": name, "problem": problem, "repeat": repeat, "m": gemm.m, "n": gemm.n,
                             "k": gemm.k, "dtype": gemm.dtype, "layout": gemm.layout, "schedule": schedule.__dict__,
                             "maps": tensor_maps(gemm, schedule), "ptxas": resources})
        if args.no_default:
            continue
        with Context(), Location.unknown():
            (out / f"{problem}_default.mlir").write_text(str(build_module(gemm)))
        _compile(iree_compile_path(), out / f"{problem}_default.mlir", out / f"{problem}_default.vmfb",
                 ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80", *flags])
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _ptxas(ptx: Path) -> dict | None:
    """ptxas's account of the GEMM kernel (registers, spill bytes, and its notes, such as C7519: a warpgroup.arrive
    it had to inject, which serialises wgmma) when ptxas is on PATH; the driver JIT-compiles the same PTX on the GPU
    machine."""
    tool = shutil.which("ptxas")
    if tool is None:
        return None
    done = subprocess.run([tool, "-arch=sm_90a", "-v", str(ptx), "-o", os.devnull], capture_output=True, text=True)
    text = done.stderr[done.stderr.find("'gemm'"):] if "'gemm'" in done.stderr else done.stderr
    registers = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores", text)
    notes = sorted(set(re.findall(r"\((C7\d+)\) ([^\n]*?) in function 'gemm'", done.stderr)))
    for code, note in notes:
        sys.stderr.write(f"ptxas {code} on {ptx.parent.name}: {note}\n")
    return {"ok": done.returncode == 0, "registers": int(registers.group(1)) if registers else None,
            "spill_bytes": int(spills.group(1)) if spills else None, "notes": [f"{c} {n}" for c, n in notes]}


def _compile(tool: str, source: Path, vmfb: Path, flags: list[str]) -> None:
    done = subprocess.run([tool, str(source), *flags, "-o", str(vmfb)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"iree-compile failed on {source.name}: {done.stderr.strip()[-2000:]}")


def _manifest(folder: Path) -> list[dict]:
    """The kernels a `build` folder holds, each with what `run` and `inspect` read, or a UserError in one
    sentence."""
    try:
        entries = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        raise UserError(f"{folder} has no readable manifest.json; give a folder `build` wrote.") from None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and all(type(e.get(key)) is kind for key, kind in ENTRY_KEYS.items()) for e in entries):
        raise UserError(f"{folder / 'manifest.json'} is not the list of kernels `build` writes (each with "
                        f"{', '.join(ENTRY_KEYS)}); build the folder again.")
    if not entries:
        raise UserError(f"{folder / 'manifest.json'} lists no kernel; build the folder again.")
    return entries


def inspect(args) -> None:
    """Per kernel of a build folder, from its kept PTX: wgmma by shape, TMA loads (multicast ones apart), mbarrier
    waits and arrives, threads, cluster, the register split; registers and spills from ptxas (the manifest's, or
    ptxas now); with cuobjdump on PATH (the GPU machines), the SASS's HGMMA count and registers as well."""
    from pipelines.inspect import ptx_kernels, ptx_stats

    folder = Path(args.folder)
    entries = _manifest(folder)
    rows = []
    for entry in entries:
        ptx = next((p for p in sorted((folder / "dump" / entry["name"]).glob("*.ptx"))), None)
        if ptx is None:
            raise UserError(f"{folder}/dump/{entry['name']} holds no PTX; build the folder again.")
        gemm = ptx_kernels(ptx.read_text()).get("gemm")
        if gemm is None:
            raise UserError(f"{ptx} has no kernel gemm.")
        stats = ptx_stats("gemm", ptx, gemm, 2)
        cluster = re.search(r"\.reqnctapercluster (\d+), (\d+), (\d+)", gemm)
        rows.append({"name": entry["name"], "wgmma": stats.mma, "tma_loads": stats.tensor_copies,
                     "multicast_loads": len(re.findall(r"\.multicast::cluster", gemm)),
                     "mbarrier_waits": stats.mbarrier_waits, "mbarrier_arrives": stats.mbarrier_arrives,
                     # a cluster's releases: inline PTX, one per workgroup of the cluster
                     "remote_arrives": len(re.findall(r"mbarrier\.arrive\.shared::cluster", gemm)),
                     "threads": stats.workgroup_size,
                     "cluster": [int(v) for v in cluster.groups()] if cluster else [1, 1, 1],
                     "setmaxnreg": [int(v) for v in re.findall(r"setmaxnreg\.(?:dec|inc)\.sync\.aligned\.u32 (\d+);",
                                                               gemm)],
                     "ptxas": entry.get("ptxas") or _ptxas(ptx), "sass": _sass(ptx)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for row in rows:
        ptxas, sass = row["ptxas"] or {}, row["sass"] or {}
        wgmma = ", ".join(f"{n}× {op.split('aligned.')[-1]}" for op, n in row["wgmma"].items())
        text = (f"{row['name']}: {row['threads']} threads, cluster {'x'.join(map(str, row['cluster']))}, "
                f"setmaxnreg {'/'.join(map(str, row['setmaxnreg']))}; wgmma {wgmma}; TMA loads {row['tma_loads']} "
                f"({row['multicast_loads']} multicast); mbarrier waits {row['mbarrier_waits']}, arrives "
                f"{row['mbarrier_arrives']} (+{row['remote_arrives']} to the cluster); registers "
                f"{ptxas.get('registers', '?')} (ptxas), spills {ptxas.get('spill_bytes', '?')} B")
        print(text + (f"; SASS: {sass['hgmma']} HGMMA, {sass['registers']} registers" if sass
                      else "; SASS: no cuobjdump here"))


def _sass(ptx: Path) -> dict | None:
    """HGMMA instructions and registers of the gemm kernel in the SASS ptxas makes of `ptx`, read by cuobjdump;
    None without ptxas and cuobjdump (this machine has ptxas only; the GPU machines have both)."""
    ptxas, cuobjdump = shutil.which("ptxas"), shutil.which("cuobjdump")
    if ptxas is None or cuobjdump is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        cubin = Path(scratch) / "k.cubin"
        if subprocess.run([ptxas, "-arch=sm_90a", str(ptx), "-o", str(cubin)], capture_output=True).returncode:
            return None
        sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
        usage = subprocess.run([cuobjdump, "--dump-resource-usage", str(cubin)], capture_output=True, text=True).stdout
    gemm = sass[sass.find("Function : gemm"):]
    gemm = gemm[:gemm.find("Function :", 1)] if "Function :" in gemm[1:] else gemm
    registers = re.search(r"Function gemm:\s*REG:(\d+)", usage)
    return {"hgmma": len(re.findall(r"\bHGMMA\.", gemm)), "registers": int(registers.group(1)) if registers else None}


def run(args) -> None:
    folder = Path(args.folder)
    entries = _manifest(folder)
    try:
        import iree.runtime  # noqa: F401
        import numpy as np
        import torch
    except ImportError as err:
        raise UserError(f"run needs numpy, torch and iree-base-runtime on the GPU machine ({err}).") from None
    from pipelines.reference import NUMPY_TYPES
    from pipelines.runner import reference, time_vendor
    from pipelines.tensormap import encode_all

    for problem in dict.fromkeys(e["problem"] for e in entries):
        schedules = [e for e in entries if e["problem"] == problem]
        m, n, k, dtype, layout = (schedules[0][key] for key in ("m", "n", "k", "dtype", "layout"))
        rng = np.random.default_rng(20261125)
        a = rng.standard_normal((m, k), dtype=np.float32).astype(NUMPY_TYPES[dtype])
        b = rng.standard_normal((n, k) if layout == "nt" else (k, n), dtype=np.float32).astype(NUMPY_TYPES[dtype])
        case = {"problem": {"dtype": dtype, "layout": layout, "epilogue": {"kind": "none"}}}
        want = reference(case, [a, b])  # float64, on the GPU through torch
        row = {"problem": problem, "m": m, "n": n, "k": k, "dtype": dtype, "layout": layout,
               "device_name": torch.cuda.get_device_name()}
        with tempfile.TemporaryDirectory() as scratch:
            files = []
            for i, array in enumerate((a, b)):
                path = Path(scratch) / f"in{i}.bin"
                array.tofile(path)
                files.append(f"{'x'.join(map(str, array.shape))}x{dtype}=@{path}")
            repeat = schedules[0]["repeat"]
            row["repeat"] = repeat
            default = folder / f"{problem}_default.vmfb"
            row["default"] = {"median_ms": None, "error": "not built (--no-default)"} if not default.exists() \
                else _measure(default, "gemm", [a, b], files, want, k, args.repetitions, repeat)
            row["hopper"] = []
            for entry in schedules:
                maps = encode_all(entry["maps"])
                path = Path(scratch) / "maps.bin"
                maps.tofile(path)
                measured = _measure(folder / f"{entry['name']}_hopper.vmfb", "main", [a, b, maps],
                                    [*files, f"32xi64=@{path}"], want, k, args.repetitions, repeat)
                row["hopper"].append(dict(measured, schedule=entry["schedule"]))
        # torch.matmul: cuBLAS, warmed up and timed as long as the IREE programs (the GPU's clocks fall to its power
        # limit within about a second of GEMMs). Also, for the record, the runner's short burst (3 + 20 calls a
        # repetition) after a second idle, which runs at higher clocks; the ratios use the first.
        time.sleep(1.0)
        burst = time_vendor(case, [a, b], args.repetitions)
        vendor = time_vendor(case, [a, b], args.repetitions, warmup_s=WARMUP_S, min_time_s=MIN_TIME_S)
        row["cublas"] = {"median_ms": statistics.median(vendor) if vendor else None}
        row["cublas_burst"] = {"median_ms": statistics.median(burst) if burst else None}
        flops = 2 * m * n * k
        for measured in (row["default"], row["cublas"], row["cublas_burst"], *row["hopper"]):
            if measured["median_ms"]:
                measured["tflops"] = flops / (measured["median_ms"] * 1e-3) / 1e12
        print(json.dumps(row), flush=True)


def _measure(vmfb: Path, function: str, arrays: list, files: list[str], want, k: int, repetitions: int,
             repeat: int) -> dict:
    """C of one call against float64, then iree-benchmark-module's times per GEMM (each dispatch of the program is
    repeated `repeat` times in one call; the Hopper program's `@patch` dispatch too)."""
    from pipelines.reference import relative_tolerance
    from pipelines.runner import Inputs, RunError, max_relative_error, run_once, time_iree

    case = {"function": function, "repeat": repeat}
    error = max_relative_error(run_once(case, vmfb, "cuda", arrays), want)
    row = {"max_rel_error": error, "tolerance": relative_tolerance(k), "correct": error <= relative_tolerance(k),
           "median_ms": None, "samples": 0, "error": None}
    try:
        times = time_iree(case, vmfb, "cuda", Inputs(arrays, files), repetitions, warmup_s=WARMUP_S,
                          min_time_s=MIN_TIME_S)
    except RunError as err:
        return dict(row, error=str(err))
    return dict(row, median_ms=statistics.median(times), samples=len(times))


KINDS = ("cooperative", "cooperative-persistent", "pingpong")
WARMUP_S, MIN_TIME_S = 0.3, 0.5  # every program and cuBLAS: seconds of warm-up, and at least this long a repetition


def _schedule(text: str) -> tuple[str, tuple[int, ...]]:
    kind, _, sizes = text.rpartition(":")
    kind = kind or "cooperative"
    try:
        numbers = tuple(int(v) for v in sizes.split("x"))
    except ValueError:
        numbers = ()
    if kind not in KINDS or len(numbers) not in (4, 5):
        raise argparse.ArgumentTypeError(f"{text!r} is not KIND:BLOCK_MxBLOCK_NxSTAGESxGROUP_M[xCLUSTER_M] with KIND "
                                         f"one of {', '.join(KINDS)}")
    return kind, numbers


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and exit code 2, as in `pipelines`."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see --help).\n")


def _positive(kind: type):
    """An argparse type: a positive finite number of `kind` (int or float)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if kind is int else 'a number'}") \
                from None
        if not math.isfinite(value) or value <= 0:
            what = "integer" if kind is int else "finite number"
            raise argparse.ArgumentTypeError(f"{text} must be a positive {what}")
        return value

    return parse


def _one_line(message: str) -> str:
    return message.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="hopper_gemm.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("build")
    p.add_argument("--shape", action="append", required=True, help="MxNxK (repeatable)")
    p.add_argument("--dtype", action="append", default=None, choices=DTYPES,
                   help=f"{' or '.join(DTYPES)} (repeatable; default bf16)")
    p.add_argument("--schedule", action="append", default=None, type=_schedule,
                   help="KIND:BLOCK_MxBLOCK_NxSTAGESxGROUP_M[xCLUSTER_M], KIND cooperative, cooperative-persistent "
                   "or pingpong, CLUSTER_M 1 or 2 workgroups sharing B by TMA multicast, e.g. pingpong:128x128x6x8 "
                   "(repeatable; default cooperative:128x128x4x8)")
    p.add_argument("--layout", choices=("nt", "nn"), default="nt", help="nn: B is K×N (read as stored)")
    p.add_argument("--no-default", action="store_true", help="skip IREE's default (structure checks only)")
    p.add_argument("--repeat-flops", type=_positive(float), default=None,
                   help="repeat each dispatch so that one call does about this many FLOPs (at most MAX_REPEAT "
                   "times; default: the project's rule, pipelines.bench.repeat_count: about 2e13 FLOPs or 1e11 bytes a "
                   "call), for Hopper and default alike")
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--force", action="store_true", help="write into a folder that holds files build did not write "
                   "(only the files build writes are replaced; the others stay)")
    p = sub.add_parser("run")
    p.add_argument("folder")
    p.add_argument("--repetitions", type=_positive(int), default=5)
    p = sub.add_parser("inspect", help="wgmma/TMA/mbarrier counts, cluster and registers of each built kernel")
    p.add_argument("folder")
    p.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            args.dtype = args.dtype or ["bf16"]
            args.schedule = args.schedule or [_schedule("cooperative:128x128x4x8")]
            build(args)
        elif args.command == "inspect":
            inspect(args)
        else:
            run(args)
    except UserError as err:  # every mistake of the user's: one sentence, exit 2, as in `pipelines`
        print(_one_line(f"hopper_gemm: error: {err}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hopper_gemm: error: interrupted; no output is left half-written.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`inspect DIR | head`): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is silent too
        return 141
    except OSError as err:  # the file system refused a read or write of a path the user named
        where = f"{err.filename}: " if err.filename else ""
        print(_one_line(f"hopper_gemm: error: {where}{err.strerror or err}."), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
