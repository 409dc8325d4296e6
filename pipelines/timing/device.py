"""`--device model`: a plan's AMD cases predicted by the timing model instead of run on a GPU.

`bench` and `tune` build their plan as for a GPU, but each case keeps the two files a prediction reads (the ISA
and the configured IR, `KEPT`). `predict_plan` then writes `results.jsonl` rows shaped like the runner's, each
marked `predicted: true`, with the predicted time as its median, `device` "model" and a device name that says
PREDICTED. A plan's results are either all measured or all predicted: each writer refuses a results file that
holds the other kind, so no ratio ever divides a prediction by a measurement.

Speed: cases whose ISA, configured IR and problem are the same are one kernel, predicted once (the rows of the
others name the first in `measured_as`, as the runner does for shared kernels); distinct kernels are predicted in
parallel worker processes. Numerics are not checked here (`correct` is null): the emulator records zeros.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from transforms.errors import UserError

from ..cluster import ClusterError, Task, checked_row, pack, run_tasks, unpack
from ..compiler import DUMP_DIR
from ..runner import RunError, append_line, case_row, check_results_kind, read_results, settled, _drop_torn_line, \
    _progress
from ..targets import TARGETS

MODEL = "model"
# The files of a case's dump a prediction reads; `bench.build_plan` keeps only these for a model plan.
KEPT = ("*.rocmasm", "configured_*.mlir")


def is_model(devices: list[str] | None) -> bool:
    return devices is not None and MODEL in devices


def check_devices(devices: list[str], target) -> None:
    """`model` alone, for a target the timing model knows (one sentence otherwise)."""
    if len(devices) > 1:
        raise RunError("--device model predicts; it cannot be combined with another --device in one run (a results "
                       "file holds predicted or measured rows, never both).")
    if target.timing is None:
        timed = ", ".join(t.name for t in TARGETS.values() if t.timing)
        raise RunError(f"--device model is the AMD timing model ({timed}); {target.name} has none. Use --device "
                       f"{' or '.join(target.device_drivers)}.")


def kernel_key(folder: Path) -> str | None:
    """What makes two cases one kernel to the model: the ISA, the configured IR and the problem (None when the
    case's dump was not kept)."""
    dump = folder / DUMP_DIR
    files = sorted(p for pattern in KEPT for p in dump.glob(pattern))
    report = folder / "report.json"
    if len(files) < 2 or not report.is_file():
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    problem = json.loads(report.read_text()).get("problems")
    digest.update(json.dumps(problem, sort_keys=True).encode())
    return digest.hexdigest()


# What a prediction adds to a case's row (`_predict`); the rest of the row is this process's.
PREDICTION_FIELDS = ("status", "error", "median_ms", "min_ms", "max_ms", "samples", "tflops", "pct_peak", "bound",
                     "prediction")


def _predict(folder: str) -> dict:
    """One case folder's prediction as row fields, or the one-sentence reason it has none (in a worker)."""
    from .predict import predict

    try:
        p = predict(folder)
    except UserError as err:
        return {"status": "predict-failed", "error": str(err)[:300]}
    ms = p.microseconds / 1000
    return {"status": "ok", "median_ms": ms, "min_ms": ms, "max_ms": ms, "samples": 1, "tflops": p.tflops,
            "pct_peak": 100 * p.peak_fraction if p.peak_fraction is not None else None, "bound": p.bound,
            "prediction": {"cu_cycles": p.cu_cycles, "resident": p.resident, "rounds": p.rounds,
                           "mma_busy": p.mma_busy, "stalls": p.stalls, "compute_us": p.compute_us,
                           "hbm_us": p.hbm_us, "launch_us": p.launch_us, "seconds": p.seconds,
                           **({"dispatches": list(p.dispatches)} if p.dispatches else {})}}


def predict_case(files: dict[str, bytes]) -> dict:
    """A cluster task: `_predict` of a case folder sent as its files."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pipelines-predict-") as scratch:
        try:
            unpack(files, Path(scratch))
        except ClusterError as err:
            return {"status": "predict-failed", "error": str(err)}
        return _predict(scratch)


def predict_plan(plan: Path, workers: int = 2, results: Path | None = None, client=None) -> Path:
    """Predict every case of `plan` not yet predicted in `results`, one row per case (resumable like the runner).
    `client`: a dask Client (`pipelines.cluster`): each distinct kernel is a task on its CPU workers."""
    meta = json.loads((plan / "plan.json").read_text())
    target = TARGETS[meta["target"]]
    check_devices([MODEL], target)
    results = results or plan / "results.jsonl"
    check_results_kind(results, predicted=True)
    rows = {row["id"]: row for row in read_results(results)}
    _drop_torn_line(results)
    todo = [c for c in meta["cases"] if c["id"] not in rows or not settled(rows[c["id"]], c)]
    env = {"host": platform.node(), "device": MODEL, "device_name": f"timing model of {target.name} (PREDICTED)",
           "driver": None, "iree_runtime": None, "iree_compiler": meta.get("iree_compiler"),
           "git_commit": meta.get("git_commit"), "predicted": True, "correct": None}
    started = time.time()
    kernels: dict[str, list[dict]] = {}  # kernel key -> its cases' rows, the first case predicted for all
    folders: dict[str, Path] = {}
    done = 0
    for case in todo:
        row = case_row(case, env)
        if row["status"] == "ok":
            folder = plan / Path(case["vmfb"]).parent
            key = kernel_key(folder)
            if key is not None:
                kernels.setdefault(key, []).append(row)
                folders.setdefault(key, folder)
                continue
            row.update(status="predict-failed", error="the case was compiled without its ISA dump (a plan built for "
                       "a GPU); build the plan again with --device model into another folder.")
        append_line(results, row)
        done += 1
    if client is not None:
        _predict_on_cluster(client, kernels, folders, results, {c["id"] for c in meta["cases"]})
        sys.stderr.write(f"predicted {len(todo)} cases ({len(kernels)} distinct kernels) on the cluster in "
                         f"{time.time() - started:.0f} s -> {results}\n")
        return results
    context = multiprocessing.get_context("spawn")  # workers start clean: no compiler state forked
    with ProcessPoolExecutor(max(1, workers), mp_context=context) as pool:
        futures = {pool.submit(_predict, str(folders[key])): group for key, group in kernels.items()}
        for future in as_completed(futures):
            group = futures[future]
            fields = future.result()
            for i, row in enumerate(group):
                append_line(results, dict(row, **fields, **({"measured_as": group[0]["id"]} if i else {})))
            done += len(group)
            _progress(done, len(todo), f"model {group[0]['label']}")
    sys.stderr.write(f"\npredicted {len(todo)} cases ({len(kernels)} distinct kernels) in {time.time() - started:.0f} "
                     f"s -> {results}\n")
    return results


def _predict_on_cluster(client, kernels: dict[str, list[dict]], folders: dict[str, Path], results: Path,
                        ids: set[str]) -> None:
    tasks = [Task(f"predict-{group[0]['id']}", "predict", predict_case, (pack(folders[key]),), "CPU",
                  lambda reason: {"status": "predict-failed", "error": f"not predicted: {reason}"},
                  meta={"group": group}) for key, group in kernels.items()]

    def write(task, fields) -> None:
        if not isinstance(fields, dict):
            fields = {"status": "predict-failed", "error": "the worker returned no prediction"}
        fields = {k: v for k, v in fields.items() if k in PREDICTION_FIELDS}  # a worker sets no id, kind or device
        group = task.meta["group"]
        for i, row in enumerate(group):
            append_line(results, checked_row(dict(row, **fields, **({"measured_as": group[0]["id"]} if i else {})),
                                             ids))

    run_tasks(client, tasks, write)

