"""A whole compiled model on a GPU: each module's result against a float64 reference, its end-to-end time
(`iree-benchmark-module`, the modules taking turns in one run), and each dispatch's GPU time (Nsight Compute, when
`ncu` is on PATH).

    python -m pipelines.model_runner --function block --inputs DATA --device cuda -o ROWS.json \\
        tuned=OUT/tuned/gemm.vmfb default=OUT/default/gemm.vmfb

DATA holds inputs.json (the inputs in the function's order: file, shape, dtype) with its .npy files and a float64
reference.npy (e.g. `tools/transformer_block.py data`). Imports only the IREE runtime and numpy, like the runner.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from transforms.errors import UserError

from .output import FILE_MARK, admit_file, write_file
from .runner import RunError, benchmark_tool, device_or_error, environment

PROFILED_CALLS = 4
# IREE's runtime with cached synchronous allocations instead of its default stream-ordered ones: a one-dispatch
# module's call took 146 µs with the default and 39 µs with these on an H200 (results/h200/hopper-model-verb/);
# the CUDA flag is CUDA's alone, the allocator any device's.
CACHED_ALLOCATIONS = {"cuda": ("--cuda_async_allocations=false", "--device_allocator=caching")}
CACHED_ELSEWHERE = ("--device_allocator=caching",)
BACK_TO_BACK_CALLS = 30  # calls a back-to-back measurement times (after pipelines.back_to_back's warm-up calls)
UNITS_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def _unreadable(folder: Path, err: Exception) -> RunError:
    return RunError(f"{folder} does not hold readable model inputs (inputs.json, its .npy files and the "
                    f"reference): {err}.")


def load_arrays(folder: Path) -> tuple[list[np.ndarray], list[str], dict]:
    """The model's inputs (arrays, and iree-benchmark-module's --input values) and the folder's manifest, without
    its float64 reference (a timing that checks against another call, not the reference, need not read it)."""
    try:
        manifest = json.loads((folder / "inputs.json").read_text())
        arrays = [np.load(folder / entry["file"]) for entry in manifest["inputs"]]
        flags = [f"--input=@{folder / entry['file']}" for entry in manifest["inputs"]]
    except (OSError, ValueError, KeyError) as err:
        raise _unreadable(folder, err) from None
    return arrays, flags, manifest


def load_inputs(folder: Path) -> tuple[list[np.ndarray], list[str], np.ndarray]:
    """`load_arrays`' inputs and the float64 reference."""
    arrays, flags, manifest = load_arrays(folder)
    try:
        reference = np.load(folder / manifest["reference"])
    except (OSError, ValueError, KeyError) as err:
        raise _unreadable(folder, err) from None
    return arrays, flags, reference


def result(vmfb: Path, function: str, device: str, arrays: list[np.ndarray]) -> np.ndarray:
    import iree.runtime as rt

    config = rt.Config(device=device_or_error(device))
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb.read_bytes()))
    out = context.modules.module[function](*arrays)
    return np.asarray((out[0] if isinstance(out, (list, tuple)) else out).to_host())


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(value.astype(np.float64) - reference)) / np.max(np.abs(reference)))


def cached_flags(device: str) -> tuple[str, ...]:
    """The runtime flags of cached synchronous allocations on `device` (`CACHED_ALLOCATIONS`)."""
    return CACHED_ALLOCATIONS.get(device.split(":")[0], CACHED_ELSEWHERE)


def time_ms(vmfb: Path, function: str, device: str, inputs: list[str], runtime: tuple[str, ...] = ()) -> float:
    """Median milliseconds per call of one iree-benchmark-module run (`runtime`: its flags beside the module's)."""
    command = [benchmark_tool(), f"--module={vmfb}", f"--device={device}", f"--function={function}", *inputs, *runtime,
               "--benchmark_repetitions=3", "--benchmark_min_warmup_time=0.2", "--benchmark_min_time=0.5s",
               "--benchmark_format=json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RunError(f"iree-benchmark-module failed on {vmfb}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    runs = [r["real_time"] * scale[r["time_unit"]] for r in json.loads(done.stdout)["benchmarks"]
            if r.get("run_type") == "iteration"]
    return statistics.median(runs)


def back_to_back_ms(vmfb: Path, function: str, device: str, data: Path, runtime: tuple[str, ...] = ()) -> dict:
    """Milliseconds per call with the calls back to back (`pipelines.back_to_back`, in a process of its own with the
    runtime flags `runtime`), and the last call's largest difference from a waited call's result."""
    command = [sys.executable, "-m", "pipelines.back_to_back", "--module", str(vmfb), "--function", function,
               "--inputs", str(data), "--device", device, "--calls", str(BACK_TO_BACK_CALLS),
               *[f"--flag={flag}" for flag in runtime]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RunError(f"back-to-back calls of {vmfb} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def dispatch_times_us(vmfb: Path, function: str, device: str, inputs: list[str]) -> list[dict] | None:
    """GPU time of every kernel launch of one call, in launch order (Nsight Compute's gpu__time_duration, caches
    and clocks left as they run); None without ncu. The call profiled is the last of a few iree-benchmark-module
    calls: the first call of a fresh process ran its input-reading kernels several times slower on an H100 (ncu
    on iree-run-module: 6.5 ms for a 4096x2048x2048 product that takes 0.3 ms in the next call)."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return None
    command = [ncu, "--csv", "--metrics", "gpu__time_duration.sum", "--cache-control", "none", "--clock-control",
               "none", benchmark_tool(), f"--module={vmfb}", f"--device={device}", f"--function={function}", *inputs,
               f"--benchmark_min_time={PROFILED_CALLS}x", "--benchmark_repetitions=1", "--benchmark_min_warmup_time=0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RunError(f"ncu failed on {vmfb}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    table = done.stdout[done.stdout.index('"ID"'):] if '"ID"' in done.stdout else ""
    launches = []
    for row in csv.DictReader(io.StringIO(table)):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            factor = UNITS_US.get(row.get("Metric Unit", ""))
            if factor is None:
                raise RunError(f"ncu reported a time in unit '{row.get('Metric Unit')}', which is not known here.")
            launches.append({"kernel": row["Kernel Name"], "us": float(row["Metric Value"].replace(",", "")) * factor})
    return last_call(launches)


def last_call(launches: list[dict], calls: int = PROFILED_CALLS) -> list[dict]:
    """The launches of the last of `calls` calls: the launch list in `calls` equal blocks (a period found from the
    end alone could stop inside a call that ends with two launches of one executable)."""
    names = [launch["kernel"] for launch in launches]
    per_call, extra = divmod(len(names), calls)
    blocks = [names[i * per_call:(i + 1) * per_call] for i in range(calls)]
    if extra or not per_call or any(block != blocks[0] for block in blocks):
        raise RunError(f"the {len(names)} profiled launches are not {calls} calls of the same launches.")
    return launches[-per_call:]


def run(modules: dict[str, Path], function: str, device: str, data: Path, rounds: int, cached: bool = False,
        back_to_back: bool = False) -> dict:
    """Each module's error against the float64 reference, its time per call over `rounds` rounds in which the modules
    take turns (with `cached`, each also timed with cached synchronous allocations in the same turn: `*_cached_*`;
    with `back_to_back`, each also with its calls back to back in the same turn, with the same flags: `*_b2b_*`),
    and its launches' GPU time."""
    arrays, flags, reference = load_inputs(data)
    rows: dict[str, dict] = {}
    times: dict[str, list[float]] = {name: [] for name in modules}
    cached_times: dict[str, list[float]] = {name: [] for name in modules}
    b2b: dict[str, dict[str, list[float]]] = {name: {"": [], "_cached": []} for name in modules}
    b2b_diff: dict[str, float] = {name: 0.0 for name in modules}
    for name, vmfb in modules.items():
        value = result(vmfb, function, device, arrays)
        if value.shape != reference.shape:
            raise RunError(f"{name} returned shape {value.shape}, the reference has {reference.shape}.")
        rows[name] = {"vmfb": str(vmfb), "max_rel_error": relative_error(value, reference),
                      "finite": bool(np.isfinite(value).all())}
    for _ in range(rounds):  # the modules take turns, so drift hits them alike
        for name, vmfb in modules.items():
            times[name].append(time_ms(vmfb, function, device, flags))
            if cached:
                cached_times[name].append(time_ms(vmfb, function, device, flags, cached_flags(device)))
            if back_to_back:
                for key, runtime in (("", ()), ("_cached", cached_flags(device))) if cached else (("", ()),):
                    measured = back_to_back_ms(vmfb, function, device, data, runtime)
                    b2b[name][key].append(measured["ms_per_call"])
                    b2b_diff[name] = max(b2b_diff[name], measured["max_abs_diff_from_waited"])
    for name, vmfb in modules.items():
        rows[name].update(times_ms=times[name], median_ms=statistics.median(times[name]))
        if cached:
            rows[name].update(times_cached_ms=cached_times[name],
                              median_cached_ms=statistics.median(cached_times[name]),
                              cached_flags=list(cached_flags(device)))
        for key, values in b2b[name].items():
            if values:
                rows[name].update({f"times_b2b{key}_ms": values, f"median_b2b{key}_ms": statistics.median(values)})
        if back_to_back:
            rows[name]["b2b_calls"] = BACK_TO_BACK_CALLS
            rows[name]["b2b_max_abs_diff_from_waited"] = b2b_diff[name]
        rows[name]["dispatches"] = dispatch_times_us(vmfb, function, device, flags)
    return {"function": function, "device": device, "environment": environment(device), "modules": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="NAME=PATH.vmfb, timed in this order")
    parser.add_argument("--function", required=True)
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cached-allocations", action="store_true", help="also time each module with IREE's cached "
                        "synchronous allocations (--device_allocator=caching, and on CUDA "
                        "--cuda_async_allocations=false), in the same turns")
    parser.add_argument("--back-to-back", action="store_true", help="also time each module with its calls back to "
                        f"back ({BACK_TO_BACK_CALLS} asynchronous calls, each waiting on the fence of the one before, "
                        "the host not waiting between them: pipelines.back_to_back), in the same turns and with the "
                        "same flags")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="overwrite an -o file that model_runner did not write")
    args = parser.parse_args(argv)
    try:
        if args.rounds < 1:
            raise RunError(f"--rounds {args.rounds}: give 1 or more.")
        if not args.output.parent.is_dir():
            raise RunError(f"the folder of -o {args.output} does not exist.")
        modules: dict[str, Path] = {}
        for entry in args.modules:
            name, _, path = entry.partition("=")
            if not path or not Path(path).is_file():
                raise RunError(f"'{entry}' is not NAME=PATH of a compiled module.")
            if name in modules:  # a dict would keep only the last, and time one module where two were named
                raise RunError(f"two modules are named '{name}' ({modules[name]} and {path}); give each its own name.")
            modules[name] = Path(path)
        admit_file(args.output, args.force, (args.inputs, *modules.values()))  # before the measurement; not an input
        report = run(modules, args.function, args.device, args.inputs, args.rounds, args.cached_allocations,
                     args.back_to_back)
    except UserError as err:
        print(f"model_runner: error: {err}", file=sys.stderr)
        return 2
    try:
        write_file(args.output, json.dumps({"written_by": FILE_MARK, **report}, indent=1) + "\n", args.force)
    except UserError as err:
        print(f"model_runner: error: {err}", file=sys.stderr)
        return 2
    for name, row in report["modules"].items():
        cached = f" ({row['median_cached_ms']:.3f} ms with cached allocations)" if "median_cached_ms" in row else ""
        b2b = f"; back to back {row['median_b2b_ms']:.3f} ms" if "median_b2b_ms" in row else ""
        b2b += f" ({row['median_b2b_cached_ms']:.3f} cached)" if "median_b2b_cached_ms" in row else ""
        print(f"{name}: {row['median_ms']:.3f} ms{cached}{b2b}, max rel. error {row['max_rel_error']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
