"""A search's work on a dask.distributed cluster (the `cluster` extra): compiles and predictions on CPU workers,
benchmarks on GPU workers, one at a time per GPU.

- `open_cluster`: joins the scheduler at `--scheduler ADDRESS` (its TLS settings, if any, come from the user's dask
  configuration, as dask reads them), or starts a local one: a scheduler, `--workers N` CPU workers (resource
  `CPU=1` each) and `--gpus N` GPU workers (resource `GPU=1`, each process seeing only its own GPU through the
  device's visibility variable), every socket on 127.0.0.1. A cluster runs code for whoever can reach its
  scheduler: a local one is reachable from this machine only.
- `run_tasks`: each task asks for its resource, so a benchmark never shares its GPU and compiles never wait for one.
  A task whose worker dies is run once more elsewhere (the scheduler's `allowed-failures` is 1 on a local cluster),
  then recorded as failed with the reason; every row a worker returns is checked (`checked_row`) before the one
  writer (the caller, on this process) appends it. Rows are written as tasks finish, so a stopped run resumes from
  its results file.

Imports the runtime side only (no compiler), so the GPU machine's runner can use it.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from transforms.errors import UserError

# The variables that make a process see only some GPUs, one per IREE driver, named after it (a GPU worker of a
# cluster sees one GPU); the first is the default.
VISIBILITY = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
# What dask.distributed's Client takes for a scheduler: [protocol://]host:port (tcp by default).
SCHEDULER_ADDRESS = re.compile(r"(?:(?:tcp|tls|ucx|ws|wss)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")
ALLOWED_FAILURES = 1  # a task whose worker dies is run once more elsewhere, then recorded as failed
ROW_STATUSES = ("ok", "compile-failed", "refused", "run-failed", "wrong-result", "predict-failed", "worker-died",
                "task-failed")


class ClusterError(UserError, RuntimeError):
    """The cluster cannot be reached or started, or a worker sent something unusable; one sentence."""


@dataclass(frozen=True)
class ClusterSpec:
    scheduler: str | None = None  # an existing scheduler's address
    workers: int = 0  # local CPU workers
    gpus: int = 0  # local GPU workers, one per GPU
    gpu_env: str = "CUDA_VISIBLE_DEVICES"  # the visibility variable of the GPUs' runtime

    @property
    def wanted(self) -> bool:
        return self.scheduler is not None or self.workers > 0 or self.gpus > 0


def cluster_spec(scheduler: str | None, workers: int, gpus: int, devices: list[str]) -> ClusterSpec:
    """The spec of `--scheduler`/`--workers`/`--gpus` for a run on `devices`: benchmarks on GPU workers take the
    driver once (each worker sees one GPU, its device 0), whose visibility variable pins the local GPU workers.
    Everything is checked here, before any work: a search that fails at the cluster would have run for nothing."""
    if scheduler is not None:
        if workers or gpus:
            raise ClusterError("--scheduler joins an existing cluster; --workers and --gpus start a local one; give "
                               "one or the other.")
        address = SCHEDULER_ADDRESS.fullmatch(scheduler)
        if address is None or not 1 <= int(address["port"]) <= 65535:
            raise ClusterError(f"--scheduler '{scheduler}' is not a scheduler address such as tcp://HOST:8786 (or "
                               "tls://HOST:PORT).")
    if (gpus or scheduler) and (len(devices) > 1 or any("://" in d for d in devices)):
        raise ClusterError("with --gpus or --scheduler, give the driver once (--device cuda or hip): each GPU worker "
                           "sees one GPU, its device 0.")
    variable = f"{devices[0].split('://')[0].upper()}_VISIBLE_DEVICES" if devices else VISIBILITY[0]
    return ClusterSpec(scheduler, workers, gpus, variable if variable in VISIBILITY else VISIBILITY[0])


@dataclass
class Task:
    key: str
    kind: str  # "compile", "predict", "bench": a progress column each
    fn: Callable
    args: tuple
    resource: str  # "CPU" or "GPU"
    failed: Callable[[str], dict]  # the row or result recorded when the task cannot finish
    meta: dict = field(default_factory=dict)


def _dask():
    try:
        import dask
        import distributed
    except ImportError:
        raise ClusterError("running on a cluster needs dask.distributed: pip install -e '.[cluster]'.") from None
    return dask, distributed


CONNECT_TIMEOUT = "20s"  # how long joining an existing scheduler may take before it is an error


@contextmanager
def open_cluster(spec: ClusterSpec) -> Iterator:
    """A dask Client for `spec` (see the module docstring); a local cluster is shut down on exit."""
    dask, distributed = _dask()
    if spec.scheduler is not None:
        if spec.workers or spec.gpus:
            raise ClusterError("--scheduler joins an existing cluster; --workers and --gpus start a local one; give "
                               "one or the other.")
        try:
            client = distributed.Client(spec.scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as err:
            raise ClusterError(f"cannot reach the dask scheduler at {spec.scheduler}: {err}.") from None
        try:
            _announce(client)
            yield client
        finally:
            client.close()
        return
    from distributed import Nanny, Scheduler, SpecCluster

    common = {"host": "127.0.0.1", "nthreads": 1, "silence_logs": 40}  # 40: the workers log errors only
    workers = {f"cpu-{i}": {"cls": Nanny, "options": {**common, "resources": {"CPU": 1}}}
               for i in range(spec.workers)}
    workers.update({f"gpu-{i}": {"cls": Nanny, "options": {**common, "resources": {"GPU": 1},
                                                          "env": {spec.gpu_env: str(i)}}}
                    for i in range(spec.gpus)})
    dashboard = "127.0.0.1:0" if _has_dashboard() else None
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": dashboard,
                                               "dashboard": dashboard is not None}}
    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                          "distributed.worker.daemon": False, "logging.distributed": "error"}):
        cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40)
        client = distributed.Client(cluster)
        try:
            try:
                client.wait_for_workers(len(workers), timeout=120)
            except TimeoutError:
                raise ClusterError(f"the local cluster's {len(workers)} workers did not all start within 120 s."
                                   ) from None
            _announce(client)
            yield client
        finally:
            client.close()
            cluster.close()


def _has_dashboard() -> bool:
    try:
        import bokeh  # noqa: F401  (dask's dashboard needs it)
    except ImportError:
        return False
    return True


def _announce(client) -> None:
    info = client.scheduler_info()
    resources = Counter(r for w in info.get("workers", {}).values() for r in (w.get("resources") or {}))
    # The scheduler's HTTP service runs without bokeh too (health, metrics), but its /status page then answers 404.
    served = info.get("services", {}).get("dashboard") and _has_dashboard()
    link = getattr(client, "dashboard_link", None) if served else None
    sys.stderr.write(f"cluster {info.get('address')}: {len(info.get('workers', {}))} workers "
                     f"({resources.get('CPU', 0)} CPU, {resources.get('GPU', 0)} GPU)"
                     + (f"; dashboard {link}" if link else "") + "\n")


def addresses(client) -> list[str]:
    """Every address the cluster listens on: the scheduler, its workers and nannies, and the dashboard."""
    info = client.scheduler_info()
    found = [info["address"]]
    for address, worker in info.get("workers", {}).items():
        found += [address, worker.get("nanny") or address]
    dashboard = info.get("services", {}).get("dashboard")
    if dashboard:
        host = info["address"].split("://")[-1].rsplit(":", 1)[0]
        found.append(f"http://{host}:{dashboard}")
    return found


def needs(client, resource: str, kind: str) -> None:
    """One sentence when no worker of the cluster offers `resource`."""
    workers = client.scheduler_info().get("workers", {}).values()
    if not any(resource in (w.get("resources") or {}) for w in workers):
        local = {"CPU": "--workers N", "GPU": "--gpus N"}[resource] if resource in ("CPU", "GPU") else ""
        raise ClusterError(f"the cluster has no worker with resource {resource}, which every {kind} task needs "
                           f"(a local cluster: {local}; your own: dask worker ... --resources {resource}=1).")


def visible_devices() -> str | None:
    """The GPUs this process may use, as its visibility variable names them (None: every GPU)."""
    return next((os.environ[v] for v in VISIBILITY if v in os.environ), None)


def _visible() -> tuple[str, str | None]:
    """(host, the GPUs this process may use) on a worker."""
    import socket

    return socket.gethostname(), visible_devices()


def check_gpu_workers(client) -> None:
    """Each GPU worker sees exactly one GPU, and no two of one host see the same one, so that no two benchmarks
    share a GPU (a worker of a user's scheduler may have been started without its visibility variable)."""
    workers = [a for a, w in client.scheduler_info().get("workers", {}).items() if "GPU" in (w.get("resources") or {})]
    seen: dict[tuple[str, str], str] = {}
    for address, (host, value) in sorted(client.run(_visible, workers=workers).items()):
        if not value or "," in value:
            what = "every GPU of its host" if not value else f"GPUs {value}"
            raise ClusterError(f"GPU worker {address} sees {what}; start each GPU worker with "
                               f"{' (or '.join(VISIBILITY)}) naming one GPU, so that no two benchmarks "
                               "share one.")
        if (host, value) in seen:
            raise ClusterError(f"GPU workers {seen[host, value]} and {address} both see GPU {value} of {host}.")
        seen[host, value] = address


def run_tasks(client, tasks: list[Task], write: Callable[[Task, object], None]) -> None:
    """Run `tasks` on the cluster, calling `write(task, result)` on this process as each one finishes (the failed
    result of a task whose worker died twice or that raised)."""
    distributed = _dask()[1]
    for resource in sorted({t.resource for t in tasks}):
        needs(client, resource, next(t.kind for t in tasks if t.resource == resource))
    if any(t.resource == "GPU" for t in tasks):
        check_gpu_workers(client)
    futures = {client.submit(t.fn, *t.args, key=t.key, resources={t.resource: 1}, pure=False): t for t in tasks}
    totals, done = Counter(t.kind for t in tasks), Counter[str]()
    started = time.time()
    for future in distributed.as_completed(futures):
        task = futures[future]
        try:
            result = future.result()
        except distributed.KilledWorker:
            result = task.failed("its worker died each time it ran it (the scheduler's allowed-failures)")
        except Exception as err:  # noqa: BLE001 - anything a task raises becomes that task's recorded failure
            result = task.failed(f"{type(err).__name__}: {str(err).splitlines()[0][:240] if str(err) else ''}")
        write(task, result)
        done[task.kind] += 1
        progress = " | ".join(f"{kind} {done[kind]}/{totals[kind]}" for kind in totals)
        sys.stderr.write(f"\r{progress} ({time.time() - started:.0f} s)")
        sys.stderr.flush()
    sys.stderr.write("\n")


def pack(folder: Path) -> dict[str, bytes]:
    """A folder's files by path relative to it: what a task sends back, or is sent, in place of a shared file
    system."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def unpack(files: dict[str, bytes], folder: Path) -> None:
    """Write `pack`'s files below `folder`; a name that leads outside it is refused before anything is written."""
    root = folder.resolve()
    paths = {name: (folder / name).resolve() for name in files}
    outside = next((name for name, path in paths.items() if root not in path.parents), None)
    if outside is not None:
        raise ClusterError(f"a file outside the case folder was sent ({outside[:80]}).")
    for name, path in paths.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])


def checked_row(row: object, ids: set[str], expected: str | None = None) -> dict:
    """A results row from a worker, checked before it is written: a JSON object of a case of the plan (`expected`:
    the case its task ran), with a known status and finite numbers."""
    if not isinstance(row, dict):
        raise ClusterError(f"a worker returned {type(row).__name__}, not a results row.")
    if expected is not None and row.get("id") != expected:
        raise ClusterError(f"the task of case {expected} returned a row for {str(row.get('id'))[:80]!r}.")
    if row.get("id") not in ids:
        raise ClusterError(f"a worker returned a row for case {str(row.get('id'))[:80]!r}, which is not in the plan.")
    if row.get("status") not in ROW_STATUSES:
        raise ClusterError(f"a worker returned status {str(row.get('status'))[:40]!r} for {row['id']}.")
    for key, value in row.items():
        if not isinstance(key, str) or not _plain(value):
            raise ClusterError(f"a worker's row for {row['id']} holds a field {str(key)[:40]!r} that is not plain "
                               "JSON data.")
    return row


def _plain(value, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if value is None or isinstance(value, (bool, str, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False
