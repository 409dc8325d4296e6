"""Running compiled GEMMs with the IREE runtime: correctness against float64, timing, and the vendor baseline.

This module imports only the IREE *runtime*, numpy and ml_dtypes (and torch when present), never the compiler,
so a plan compiled on a CPU machine runs on a GPU machine that has only the runtime wheel. A plan is a folder
with `plan.json` (one entry per case: problem, pipeline, function, repeat count, vmfb path) written by
`pipelines bench --compile-only` or `pipelines tune`. `run_plan` appends one JSON line per case to
`results.jsonl` (one fsynced write, so a kill loses at most the case in flight); a case already measured correct,
or recorded as failing to compile, is skipped, so an interrupted run resumes, and a case that failed to run or
gave a wrong result is run again.

Timing: `iree-benchmark-module` (Google Benchmark) runs the function with the same seeded random inputs (never
splats), after a warm-up, for `repetitions` repetitions; each dispatch was compiled to repeat `repeat` times
(`--iree-hal-benchmark-dispatch-repeat-count`) so launch overhead does not dominate small shapes. The vendor
baseline is torch.matmul (cuBLAS / hipBLASLt) timed with device events, skipped when torch or a GPU is absent.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transforms.errors import UserError

from .output import owned
from .plan import Plan
from .cluster import Task, checked_row, cluster_spec, open_cluster, run_tasks, visible_devices
from .reference import NUMPY_TYPES, dtype_family, float64_result, result_tolerance  # no compiler import

# Dense peak TFLOP/s of the devices we run on, by input family (NVIDIA H100/H200 SXM data sheets: 989.4 bf16/f16
# and 1978.9 fp8; H200 is the same GH100 chip with more memory).
DEVICE_PEAKS = {"H100": {"16bit": 989.4, "fp8": 1978.9}, "H200": {"16bit": 989.4, "fp8": 1978.9}}
SEED = 20261122
# Every kernel and the vendor library: seconds of warm-up, then repetitions of at least this many seconds each.
WARMUP_S, MIN_TIME_S = 0.2, 0.3


class RunError(UserError, RuntimeError):
    """The runtime or device cannot do what was asked; the message is one sentence."""


def device_or_error(device: str):
    import iree.runtime as rt

    driver = device.split("://")[0]
    try:
        return rt.get_device(device)
    except (RuntimeError, ValueError) as err:
        gpu = {"hip": "an AMD GPU with the HIP runtime", "cuda": "an NVIDIA GPU with its driver"}.get(driver)
        reason = str(err).split(";")[0].split(":")[-1].strip()
        needs = f"it needs {gpu}" if gpu else "check the device name"
        raise RunError(f"the IREE runtime cannot open device '{device}' ({reason}); {needs}.") from None


@dataclass
class Inputs:
    arrays: list[np.ndarray]
    files: list[str]  # iree-benchmark-module --input= values


def make_inputs(case: dict, folder: Path) -> Inputs:
    rng = np.random.default_rng(SEED)
    arrays, files = [], []
    for i, (shape, dtype) in enumerate(zip(case["input_shapes"], case["input_dtypes"])):
        array = rng.standard_normal(shape, dtype=np.float32).astype(NUMPY_TYPES[dtype])
        path = folder / f"input{i}.bin"
        array.tofile(path)
        arrays.append(array)
        files.append(f"{'x'.join(map(str, shape))}x{dtype}=@{path}")
    return Inputs(arrays, files)


def reference(case: dict, arrays: list[np.ndarray]) -> np.ndarray:
    """float64 result of the case's problem, on the GPU through torch when it can, else with numpy."""
    problem = case["problem"]
    try:
        import torch

        use_torch = torch.cuda.is_available()
    except ImportError:
        use_torch = False
    if use_torch:
        tensors = [torch.from_numpy(a.astype(np.float64)).cuda() for a in arrays]
        swap = lambda t: t.transpose(-1, -2)  # noqa: E731
        result = float64_result(problem, tensors, swap, torch.maximum, torch.erf,
                                torch.tensor(0.0, dtype=torch.float64, device="cuda"))
        return result.cpu().numpy()
    arrays64 = [a.astype(np.float64) for a in arrays]
    erf = np.vectorize(math.erf)
    return float64_result(problem, arrays64, lambda a: np.swapaxes(a, -1, -2), np.maximum, erf, 0.0)


def max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest error of `got` against the float64 `want`, relative to want's largest magnitude (at least 1)."""
    return float(np.abs(got.astype(np.float64) - want).max() / max(1.0, float(np.abs(want).max())))


def run_once(case: dict, vmfb: Path, device: str, arrays: list[np.ndarray]) -> np.ndarray:
    import iree.runtime as rt

    config = rt.Config(device=device_or_error(device))
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb.read_bytes()))
    return np.asarray(context.modules.module[case["function"]](*arrays).to_host())


def benchmark_tool() -> str:
    import iree.runtime as rt

    return str(Path(rt.__file__).resolve().parent.parent / "_runtime_libs" / "iree-benchmark-module")


def time_iree(case: dict, vmfb: Path, device: str, inputs: Inputs, repetitions: int, warmup_s: float = 0.2,
              min_time_s: float = 0.3) -> list[float]:
    """Milliseconds per GEMM for each repetition (each of at least `min_time_s`, after `warmup_s` of warm-up)."""
    command = [benchmark_tool(), f"--module={vmfb}", f"--device={device}", f"--function={case['function']}",
               *[f"--input={f}" for f in inputs.files], f"--benchmark_repetitions={repetitions}",
               f"--benchmark_min_warmup_time={warmup_s}", f"--benchmark_min_time={min_time_s}s",
               "--benchmark_format=json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RunError(f"iree-benchmark-module failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    report = json.loads(done.stdout)
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return [run["real_time"] * scale[run["time_unit"]] / case["repeat"] for run in report["benchmarks"]
            if run.get("run_type") == "iteration"]


def time_vendor(case: dict, arrays: list[np.ndarray], repetitions: int, warmup_s: float | None = None,
                min_time_s: float | None = None) -> list[float] | None:
    """torch.matmul (cuBLAS/hipBLASLt) on the same inputs, output in the input type as cuBLAS defaults to;
    None when torch or a GPU is not there. Milliseconds per call, each repetition 20 calls after 3; or, given
    `warmup_s` and `min_time_s`, timed as `time_iree` times (calls for at least `warmup_s`, then each repetition
    at least `min_time_s` of calls), so that both run as long at the GPU's sustained clocks."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or case["problem"]["epilogue"]["kind"] not in ("none", "truncf"):
        return None
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(case["problem"]["dtype"])
    if dtype is None:
        return None
    a, b = (torch.from_numpy(x.astype(np.float32)).to("cuda", dtype) for x in arrays[:2])
    layout = case["problem"]["layout"]
    a = a.transpose(-1, -2) if layout == "tn" else a
    b = b.transpose(-1, -2) if layout == "nt" else b

    def batch(calls: int) -> float:  # milliseconds for `calls` back-to-back products
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    calls = 20
    batch(3)
    if warmup_s is not None and min_time_s is not None:
        warmed = 0.0
        while warmed < warmup_s * 1e3:
            warmed += batch(calls)
        calls = max(calls, math.ceil(min_time_s * 1e3 / (batch(calls) / calls)))
    return [batch(calls) / calls for _ in range(repetitions)]


ENV_FIELDS = ("host", "device", "device_name", "driver", "iree_runtime", "visible_devices")


def environment(device: str) -> dict:
    info = {"host": platform.node(), "device": device, "device_name": device, "driver": None,
            # a cluster's GPU worker sees one GPU through this variable (None: the process sees them all)
            "visible_devices": visible_devices()}
    try:
        from iree._runtime_libs import version as runtime_version

        info["iree_runtime"] = getattr(runtime_version, "VERSION", None)
    except ImportError:
        info["iree_runtime"] = None
    if device.startswith("cuda"):
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
            index = int(device.split("://")[1]) if "://" in device else 0
            name, driver = (x.strip() for x in smi[index].split(","))
            info.update(device_name=name, driver=driver)
        except (OSError, IndexError, ValueError, subprocess.SubprocessError):
            pass
    elif device.startswith("local"):
        info["device_name"] = f"{platform.processor() or platform.machine()} CPU ({os.cpu_count()} threads)"
    return info


def peak_tflops(device_name: str, dtype: str) -> float | None:
    for key, peaks in DEVICE_PEAKS.items():
        if key in device_name:
            return peaks.get(dtype_family(dtype))
    return None


class ProblemData:
    """Inputs and float64 reference of the problem being run, reused by all its consecutive cases."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.key: str | None = None
        self.held: tuple[Inputs, np.ndarray] | None = None  # the inputs of problem `key` and their reference

    def get(self, case: dict) -> tuple[Inputs, np.ndarray]:
        key = json.dumps(case["problem"], sort_keys=True)
        if key != self.key or self.held is None:
            self.key, self.held = key, None
            inputs = make_inputs(case, self.scratch)
            self.held = (inputs, reference(case, inputs.arrays))
        return self.held


# What a case that runs another case's kernel takes from that case's row (everything measured but the vendor).
SHARED_MEASUREMENT = ("status", "error", "correct", "max_rel_error", "tolerance", "median_ms", "min_ms", "max_ms",
                      "samples", "tflops", "pct_peak")


def case_row(case: dict, env: dict) -> dict:
    """The row of `case` before it is run (or predicted): its plan fields, `env`, and the status the planner
    recorded when that was a failure to compile or a refusal."""
    row = {k: case[k] for k in ("id", "label", "problem", "pipeline", "schedule", "target", "flops", "repeat")}
    row.update(env, status="ok", error=None)
    if case.get("status", "ok") != "ok":
        row.update(status=case["status"], error=case.get("error"))
    return row


def run_case(case: dict, plan: Path, device: str, repetitions: int, env: dict, data: ProblemData,
             measured: dict[str, dict] | None = None) -> dict:
    """One row for `case`. A case whose plan entry names `same_kernel_as` (the planner found it compiles the same
    kernel as an earlier case) takes that case's measurement from `measured` (rows by id), marked `measured_as`,
    rather than timing the same kernel twice; it is timed itself when that row is missing or not a success."""
    row = case_row(case, env)
    if row["status"] != "ok":  # compile failures recorded by the planner
        return row
    shared = (measured or {}).get(case.get("same_kernel_as") or "")
    if shared is not None and shared.get("status") == "ok" and shared.get("correct") is True:
        row.update({k: shared[k] for k in SHARED_MEASUREMENT if k in shared}, measured_as=shared["id"])
        return row
    vmfb = plan / case["vmfb"]
    try:
        inputs, want = data.get(case)
        got = run_once(case, vmfb, device, inputs.arrays)
        error = max_relative_error(got, want)
        row.update(max_rel_error=error, tolerance=result_tolerance(case["problem"]))
        row["correct"] = error <= row["tolerance"]
        times = time_iree(case, vmfb, device, inputs, repetitions, WARMUP_S, MIN_TIME_S)
        # the vendor library as long as the kernels (the GPU's clock falls to its power limit within a second)
        vendor = time_vendor(case, inputs.arrays, repetitions, WARMUP_S, MIN_TIME_S) \
            if case.get("vendor") else None
    except (RunError, RuntimeError, ValueError, KeyError, OSError, subprocess.SubprocessError) as err:
        # KeyError: the module has no such function; OSError: the case's file is gone (a plan edited by hand)
        row.update(status="run-failed", error=str(err).strip('"').splitlines()[0][:300], correct=False)
        return row
    if not row["correct"]:
        row["status"] = "wrong-result"
    row.update(_summary(times, case["flops"], env["device_name"], case["problem"]["dtype"]))
    if vendor:
        row["vendor"] = _summary(vendor, case["flops"], env["device_name"], case["problem"]["dtype"])
    return row


def _summary(times_ms: list[float], flops: int, device_name: str, dtype: str) -> dict:
    median = statistics.median(times_ms)
    tflops = flops / (median * 1e-3) / 1e12
    peak = peak_tflops(device_name, dtype)
    return {"median_ms": median, "min_ms": min(times_ms), "max_ms": max(times_ms), "samples": len(times_ms),
            "tflops": tflops, "pct_peak": 100 * tflops / peak if peak else None}


def append_line(path: Path, row: dict) -> None:
    """One whole line per write with O_APPEND, so parallel workers never interleave rows, and fsync, so a row
    that was reported written survives a crash."""
    data = (json.dumps(row) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        if os.write(fd, data) != len(data):
            raise RunError(f"could not append a whole row to {path} (disk full?).")
        os.fsync(fd)
    finally:
        os.close(fd)


def read_results(results: Path, torn: list[int] | None = None) -> list[dict]:
    """The rows `append_line` wrote, oldest first (none when the file does not exist yet). A last line that is not
    a whole row and lacks its newline is a run killed mid-write (`append_line` writes row and newline at once): it
    is skipped, its number added to `torn` when the caller collects them, else named in a warning. Any other bad
    line is an error."""
    rows, (lines, whole) = [], _lines(results)
    for number, line in enumerate(lines, 1):
        row = _row(line)
        if row is not None:
            rows.append(row)
        elif not line.strip():
            continue
        elif number == len(lines) and not whole:
            if torn is None:
                sys.stderr.write(f"warning: skipping the last line ({number}) of {results}: not a whole row (a run "
                                 "stopped while writing it).\n")
            else:
                torn.append(number)
        else:
            raise RunError(f"line {number} of {results} is not a JSON row with an 'id'; fix or delete that line.")
    return rows


def _lines(results: Path) -> tuple[list[str], bool]:
    """The lines of `results`, and whether its last line ended with a newline."""
    if not results.exists():
        return [], True
    try:
        text = results.read_text(errors="replace")
    except OSError as err:
        raise RunError(f"cannot read {results} ({err.strerror}).") from None
    whole = text.endswith("\n") or not text
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines, whole


def _row(line: str) -> dict | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("id"), str) else None


def _drop_torn_line(results: Path) -> None:
    """Cut a last line that is not a whole row (read_results warned about it), so the next row starts a line."""
    if not results.exists():
        return
    data = results.read_bytes()
    body = data.rstrip()
    start = body.rfind(b"\n") + 1
    if body and _row(body[start:].decode(errors="replace")) is None:
        os.truncate(results, start)
    elif body and len(body) == len(data):  # a whole row without its newline (edited by hand)
        with results.open("ab") as handle:
            handle.write(b"\n")


NOT_RUN = ("compile-failed", "refused")  # statuses of cases neither run nor predicted


def row_kinds(rows: list[dict]) -> set[bool]:
    """Whether the rows that ran are predictions (`--device model`): {True}, {False}, both, or none."""
    return {bool(row.get("predicted")) for row in rows if row.get("status") not in NOT_RUN}


def check_results_kind(results: Path, predicted: bool) -> None:
    """A results file keeps one kind of row: predicted rows (`--device model`) are not appended to measured ones,
    nor the reverse, so that no ratio ever divides a prediction by a measurement."""
    if (not predicted) in row_kinds(read_results(results)):
        have, want = ("measured", "predicted") if predicted else ("predicted", "measured")
        raise RunError(f"{results} holds {have} rows; {want} rows go to a plan folder of their own (give another "
                       "-o), so that no ratio mixes a prediction with a measurement.")


def settled(row: dict, case: dict) -> bool:
    """Whether `row` settles `case`: measured correct, predicted (a results file holds one kind, see
    `check_results_kind`), or the compile failure the plan recorded for it."""
    if case.get("status", "ok") != "ok":
        return row.get("status") == case["status"]
    return row.get("status") == "ok" and (row.get("correct") is True or row.get("predicted") is True)


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:60]:60s}")
    sys.stderr.flush()


def _worker(plan: Path, device: str, cases: list[dict], results: Path, repetitions: int, total: int) -> None:
    meta = json.loads((plan / "plan.json").read_text())
    env = dict(environment(device), iree_compiler=meta.get("iree_compiler"), git_commit=meta.get("git_commit"))
    measured = {row["id"]: row for row in read_results(results)}  # an earlier run's rows, for shared kernels
    with tempfile.TemporaryDirectory() as scratch:
        data = ProblemData(Path(scratch))
        for i, case in enumerate(cases):
            _progress(i, total, f"{device} {case['label']}")
            row = run_case(case, plan, device, repetitions, env, data, measured)
            measured[row["id"]] = row
            append_line(results, row)
    _progress(len(cases), total, f"{device} done")


def _worker_process(*args) -> None:
    """`_worker` in a process of its own: Ctrl-C reaches every worker, and the parent says it once."""
    try:
        _worker(*args)
    except KeyboardInterrupt:
        sys.exit(130)


def read_plan(plan: Path) -> dict:
    """plan.json of a plan folder, checked for everything the runner reads from it (`pipelines.plan`: one sentence
    where it is not as `pipelines bench --compile-only` writes it), so a hand-edited or truncated plan never fails
    mid-run."""
    path = plan / "plan.json"
    try:
        text = path.read_text()
    except UnicodeDecodeError as err:
        raise RunError(f"plan {path} is not valid JSON ({err}).") from None
    checked = Plan.from_json(text, str(path))
    meta = json.loads(text)
    meta["cases"] = [c.to_json() for c in checked.cases]
    return meta


def check_plan_folder(plan: Path) -> None:
    """The runner appends its rows to a plan folder only where the tool wrote the plan: its manifest lists
    plan.json and results.jsonl (a plan folder lists both from the start, `output.work_folder`), so a user's folder
    that merely holds files of those names is never written into."""
    for name in ("plan.json", "results.jsonl"):
        path = plan / name
        if (path.exists() or name == "plan.json") and not owned(path):
            raise RunError(f"{path} was not written by pipelines (its folder's manifest does not list it), so the "
                           "runner does not add rows beside it; write the plan with `pipelines bench --compile-only` "
                           "or `pipelines tune --compile-only`.")


def run_plan(plan: Path, devices: list[str], repetitions: int = 5, results: Path | None = None,
             client=None) -> Path:
    """Run every case of `plan` not yet in `results`, spreading cases over `devices` (one process each), or with
    `client` (a dask Client, `pipelines.cluster`) as tasks on the cluster's GPU workers, each on the device
    `devices[0]` names as its worker sees it (one GPU per worker)."""
    if results is None:
        check_plan_folder(plan)
    cases = read_plan(plan)["cases"]
    for device in devices if client is None else ():
        device_or_error(device)
    results = results or plan / "results.jsonl"
    check_results_kind(results, predicted=False)
    rows = {row["id"]: row for row in read_results(results)}  # the latest row of a case counts
    _drop_torn_line(results)
    todo = [c for c in cases if c["id"] not in rows or not settled(rows[c["id"]], c)]
    retried = sum(1 for c in todo if c["id"] in rows)
    if retried:
        sys.stderr.write(f"running again {retried} case(s) that failed or gave wrong results before\n")
    started = time.time()
    if client is not None:
        _run_on_cluster(client, plan, devices[0], todo, results, repetitions, {c["id"] for c in cases})
    elif len(devices) == 1:
        _worker(plan, devices[0], todo, results, repetitions, len(todo))
    else:
        import multiprocessing

        # All cases of one problem go to one device, so their ratios are taken on the same GPU.
        problems = sorted({json.dumps(c["problem"], sort_keys=True) for c in todo})
        owner = {p: i % len(devices) for i, p in enumerate(problems)}
        shares = [[c for c in todo if owner[json.dumps(c["problem"], sort_keys=True)] == i]
                  for i in range(len(devices))]
        context = multiprocessing.get_context("spawn")
        workers = [context.Process(target=_worker_process, args=(plan, d, share, results, repetitions, len(todo)))
                   for d, share in zip(devices, shares)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        failed = [d for d, w in zip(devices, workers) if w.exitcode != 0]
        if failed:
            raise RunError(f"the benchmark worker for {failed[0]} exited with code "
                           f"{workers[devices.index(failed[0])].exitcode}.")
    sys.stderr.write(f"\nran {len(todo)} cases in {time.time() - started:.0f} s -> {results}\n")
    return results


def bench_case(case: dict, vmfb: bytes | None, device: str, repetitions: int, plan_env: dict) -> dict:
    """A cluster task on a GPU worker: `run_case` of one case whose executable is sent as bytes."""
    if device not in _WORKER_ENV:  # nvidia-smi once per worker, not per case
        _WORKER_ENV[device] = environment(device)
    env = dict(_WORKER_ENV[device], **plan_env)
    data = _WORKER_DATA.get("data")
    if data is None:  # the worker's inputs and reference, kept for its next case of the same problem
        data = _WORKER_DATA["data"] = ProblemData(Path(tempfile.mkdtemp(prefix="pipelines-data-")))
    with tempfile.TemporaryDirectory(prefix="pipelines-bench-") as scratch:
        plan = Path(scratch)
        if vmfb is not None:
            (plan / case["vmfb"]).parent.mkdir(parents=True)
            (plan / case["vmfb"]).write_bytes(vmfb)
        return run_case(case, plan, device, repetitions, env, data)


_WORKER_DATA: dict[str, ProblemData] = {}  # in a cluster worker's process: its current problem's data
_WORKER_ENV: dict[str, dict] = {}  # and its device's environment


def _run_on_cluster(client, plan: Path, device: str, todo: list[dict], results: Path, repetitions: int,
                    ids: set[str]) -> None:
    """Each case a GPU task; a case that shares another's kernel takes that case's row once it is in (as the
    runner does), and is run itself when that one did not succeed."""
    meta = json.loads((plan / "plan.json").read_text())
    plan_env = {"iree_compiler": meta.get("iree_compiler"), "git_commit": meta.get("git_commit")}
    todo_ids = {c["id"] for c in todo}
    measured = {row["id"]: row for row in read_results(results)}
    waiting = [c for c in todo if c.get("same_kernel_as") in todo_ids]
    first = [c for c in todo if c not in waiting]

    def task(case: dict) -> Task:
        vmfb = (plan / case["vmfb"]).read_bytes() if case.get("status", "ok") == "ok" and case.get("vmfb") else None
        failed = lambda reason: dict(case_row(case, {"device": device}), status="worker-died"  # noqa: E731
                                     if "died" in reason else "task-failed", error=reason[:300], correct=False)
        return Task(f"bench-{case['id']}", "bench", bench_case, (case, vmfb, device, repetitions, plan_env), "GPU",
                    failed)

    def write(task: Task, row) -> None:
        row = checked_row(row, ids, task.key.removeprefix("bench-"))
        if row.get("predicted"):
            raise RunError(f"a worker returned a predicted row for {row['id']}; this run measures.")
        measured[row["id"]] = row
        append_line(results, row)

    run_tasks(client, [task(c) for c in first], write)
    again = []
    for case in waiting:
        shared = measured.get(case["same_kernel_as"])
        if shared is not None and shared.get("status") == "ok" and shared.get("correct") is True:
            env = {k: shared[k] for k in (*ENV_FIELDS, "iree_compiler", "git_commit") if k in shared}
            write(task(case), run_case(case, plan, device, repetitions, env, None, measured))  # type: ignore[arg-type]
        else:
            again.append(task(case))
    if again:
        run_tasks(client, again, write)


def run_failures(plan: Path, results: Path | None = None) -> str | None:
    """One sentence where no case of `plan` has an ok row in `results` (a run that measured nothing must not look
    like one that did), else None."""
    results = results or plan / "results.jsonl"
    cases = json.loads((plan / "plan.json").read_text())["cases"]
    rows = {row["id"]: row for row in read_results(results)}  # the latest row of a case counts
    latest = [rows.get(case["id"], {"status": "not run"}) for case in cases]
    if not latest or any(row.get("status") == "ok" for row in latest):
        return None
    counts: dict[str, int] = {}
    for row in latest:
        counts[str(row.get("status"))] = counts.get(str(row.get("status")), 0) + 1
    error = next((str(row["error"]) for row in latest if row.get("error")), None)
    first = f" (the first: {error[:200].rstrip('.')})" if error else ""
    return (f"every one of the {len(latest)} cases of {plan} failed: "
            f"{', '.join(f'{n} {status}' for status, n in counts.items())}{first}; see {results}.")


def check_distinct_devices(devices: list[str]) -> None:
    """Each --device once: a GPU named twice (cuda and cuda://0 are one) would run two workers on it at once and
    time each against the other."""
    seen: dict[str, str] = {}
    for device in devices:
        driver, _, index = device.partition("://")
        same = seen.setdefault(f"{driver}://{index or 0}", device)
        if same is not device:
            raise RunError(f"--device {device} and --device {same} are the same device; give each device once.")


GPU_DRIVERS = ("cuda", "hip")  # IREE drivers whose devices are GPUs (local-task stands in for one in tests)


def check_local_gpus(devices: list[str], gpus: int) -> None:
    """`--gpus N` starts N workers on this machine, one per GPU of the --device driver: refused before anything
    runs where the device does not open here, or the driver sees fewer than N GPUs."""
    import iree.runtime as rt

    for device in devices:
        device_or_error(device)
    driver = devices[0].split("://")[0]
    if driver in GPU_DRIVERS:
        found = len(rt.get_driver(driver).query_available_devices())
        if found < gpus:
            raise RunError(f"--gpus {gpus} starts one worker per GPU, but the {driver} driver sees {found} GPU(s) on "
                           "this machine.")


class _Parser(argparse.ArgumentParser):
    """argparse, its usage mistakes one line and exit code 2 like those of the `pipelines` command."""

    def error(self, message: str):
        self.exit(2, f"pipelines: error: {message.replace(chr(10), ' ')} (see python -m pipelines.runner --help).\n")


def _count(minimum: int):
    """An argparse type: an integer of at least `minimum` (an explicit 0 workers or repetitions is refused)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    """`python -m pipelines.runner PLAN --device cuda [--device cuda://1 ...]`: the GPU-side entry point; with
    `--gpus N` (a local dask cluster, one worker per GPU) or `--scheduler ADDRESS`, the cases run as cluster
    tasks (`pipelines.cluster`). Exit code 1 when every case failed (`run_failures`)."""
    parser = _Parser(prog="python -m pipelines.runner")
    parser.add_argument("plan", type=Path)
    parser.add_argument("--device", action="append", required=True)
    parser.add_argument("--repetitions", type=_count(1), default=5)
    parser.add_argument("--gpus", type=_count(1), help="start a local cluster with one worker per GPU (default: no "
                        "cluster, the devices run here one process each)")
    parser.add_argument("--scheduler", help="run the cases on the dask cluster of this scheduler")
    args = parser.parse_args(argv)
    try:
        check_distinct_devices(args.device)
        if not (args.plan / "plan.json").is_file():
            raise RunError(f"{args.plan} has no plan.json; write one with `pipelines bench --compile-only`.")
        if args.gpus or args.scheduler:
            spec = cluster_spec(args.scheduler, 0, args.gpus or 0, args.device)
            if args.gpus:
                check_local_gpus(args.device, args.gpus)
            with open_cluster(spec) as client:
                run_plan(args.plan, args.device, args.repetitions, client=client)
        else:
            run_plan(args.plan, args.device, args.repetitions)
        failure = run_failures(args.plan)
    except (RunError, UserError) as err:
        print(f"pipelines: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a plan's file the runner reads is missing or unreadable
        print(f"pipelines: error: {err.filename or args.plan}: {(err.strerror or str(err)).lower()}.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # every finished case is in results.jsonl
        print("pipelines: error: interrupted. Run the same command again to resume.", file=sys.stderr)
        return 130
    if failure is not None:
        print(f"pipelines: error: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
