"""Searches on a local dask cluster (issue 18, `pipelines.cluster`): the same plan, rows and best candidate as a
serial run, a worker killed mid-run costing only a retry, a task whose worker dies twice recorded as failed, rows
checked before they are written, and every socket of a local cluster on loopback."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("distributed")  # the test extra installs dask.distributed

from pipelines import cluster  # noqa: E402
from pipelines.cli import main  # noqa: E402
from pipelines.cluster import (ClusterError, ClusterSpec, Task, checked_row, cluster_spec, open_cluster,  # noqa: E402
                              run_tasks, unpack)

SEARCH = ["tune", "--target", "gfx942", "--shape", "512x512x512", "--dtype", "f16", "--device", "model",
          "--limit", "8"]
VOLATILE = ("git_commit", "host")  # besides the prediction's own wall time


def _rows(folder):
    rows = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key in VOLATILE:
            row.pop(key, None)
        row.get("prediction", {}).pop("seconds", None)
        rows[row["id"]] = row
    return rows


def _best(folder):
    best = json.loads((folder / "best" / "best.json").read_text())
    return best["schedule"], best["tflops"]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serial")
    assert main([*SEARCH, "--cache", str(folder / "cache.json"), "-o", str(folder / "plan")]) == 0
    return folder / "plan"


def _kill_a_busy_worker(client, folder, killed):
    """Once the plan has its first compiled case, SIGKILL a worker process that is running a task."""
    deadline = time.time() + 120
    while time.time() < deadline and not killed:
        busy = [w for w, keys in client.processing().items() if keys]
        if busy and (folder / "cases").is_dir() and any((folder / "cases").iterdir()):
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.05)


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_a_cluster_with_a_killed_worker_finds_what_the_serial_search_finds(tmp_path, serial):
    from pipelines.timing.device import KEPT, predict_plan
    from pipelines.targets import get_target
    from pipelines.tune import finalize, plan_search
    from transforms.problem import Gemm

    target, gemm, folder = get_target("gfx942"), Gemm(512, 512, 512, "f16"), tmp_path / "plan"
    killed = []
    with open_cluster(ClusterSpec(workers=4)) as client:
        killer = threading.Thread(target=_kill_a_busy_worker, args=(client, folder, killed))
        killer.start()
        plan_search(gemm, target, folder, 8, keep=KEPT, client=client)
        killer.join()
        predict_plan(folder, client=client)
    finalize(gemm, target, folder, tmp_path / "cache.json")
    assert killed, "no worker was killed while the search ran"
    assert _rows(folder) == _rows(serial)
    assert _best(folder) == _best(serial)
    plans = [json.loads((f / "plan.json").read_text()) for f in (folder, serial)]
    assert [c["status"] for c in plans[0]["cases"]] == [c["status"] for c in plans[1]["cases"]] == ["ok"] * 9


def test_a_task_whose_worker_dies_twice_is_recorded_failed(tmp_path):
    written, runs = [], tmp_path / "runs"

    def dies(path):
        with open(path, "a") as log:
            log.write("run\n")
        os._exit(3)

    with open_cluster(ClusterSpec(workers=2)) as client:
        tasks = [Task("dies", "compile", dies, (str(runs),), "CPU", lambda reason: {"failed": reason}),
                 Task("lives", "compile", lambda: {"ok": 1}, (), "CPU", lambda reason: {"failed": reason})]
        run_tasks(client, tasks, lambda task, result: written.append((task.key, result)))
    assert dict(written) == {"dies": {"failed": "its worker died each time it ran it (the scheduler's "
                                        "allowed-failures)"}, "lives": {"ok": 1}}
    assert runs.read_text().count("run") == cluster.ALLOWED_FAILURES + 1 == 2  # run once more, then given up


def test_a_local_cluster_listens_on_loopback_only():
    with open_cluster(ClusterSpec(workers=2, gpus=1)) as client:
        found = cluster.addresses(client)
        gpu_env = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    assert len(found) >= 5  # the scheduler, two CPU workers and one GPU worker with their nannies
    assert all(a.split("://")[1].startswith("127.0.0.1:") for a in found), found
    assert sorted(v for v in gpu_env.values() if v is not None) == ["0"]  # only the GPU worker sees a GPU


def test_rows_from_workers_are_checked_before_they_are_written():
    row = {"id": "a", "status": "ok", "tflops": 1.5, "problem": {"m": 1}}
    assert checked_row(row, {"a"}) is row
    for bad in ({"id": "b", "status": "ok"}, {"id": "a", "status": "rm -rf"}, dict(row, tflops=float("nan")),
                dict(row, extra=object()), ["a"]):
        with pytest.raises(ClusterError):
            checked_row(bad, {"a"})


def test_a_scheduler_that_is_not_there_is_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("pipelines.cluster.CONNECT_TIMEOUT", "2s")
    code = main([*SEARCH, "--scheduler", "tcp://127.0.0.1:9", "--cache", str(tmp_path / "c.json"),
                 "-o", str(tmp_path / "plan")])
    err = capsys.readouterr().err
    assert code != 0 and "cannot reach the dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_joining_a_scheduler_waits_the_connect_timeout_and_no_longer(monkeypatch):
    """The address is handed to dask with CONNECT_TIMEOUT (not dask's own default, 30 s), and a refusal is one
    sentence."""
    asked = []

    class Distributed:
        @staticmethod
        def Client(address, **kwargs):  # noqa: N802 (dask's name)
            asked.append((address, kwargs.get("timeout")))
            raise OSError("connection refused")

    monkeypatch.setattr(cluster, "_dask", lambda: (None, Distributed))
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "7s")
    with pytest.raises(ClusterError, match="cannot reach the dask scheduler at tcp://10.0.0.1:8786: connection "
                                           "refused"):
        with open_cluster(ClusterSpec(scheduler="tcp://10.0.0.1:8786")):
            pass
    assert asked == [("tcp://10.0.0.1:8786", "7s")]


def test_the_runner_benchmarks_on_gpu_workers_as_it_does_alone(tmp_path):
    """The runner's cluster path on the CPU (the 'GPU' workers run local-task): the same rows as a serial run."""
    plan = tmp_path / "plan"
    assert main(["bench", "--target", "cpu", "--shape", "64x64x64", "--dtype", "f16", "--pipelines", "default",
                 "--compile-only", "-o", str(plan)]) == 0
    for name, extra in (("serial", []), ("cluster", ["--gpus", "2"])):
        results = plan / "results.jsonl"
        if results.exists():
            results.rename(plan / "results_serial.jsonl")
        done = subprocess.run([sys.executable, "-m", "pipelines.runner", str(plan), "--device", "local-task",
                               "--repetitions", "1", *extra], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    serial, clustered = (json.loads((plan / f).read_text().splitlines()[0])
                         for f in ("results_serial.jsonl", "results.jsonl"))
    assert clustered["status"] == serial["status"] == "ok" and clustered["correct"] and serial["correct"]
    assert clustered["max_rel_error"] == serial["max_rel_error"] and clustered["visible_devices"] in ("0", "1")


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_a_search_resumes_from_its_results_file_on_a_new_cluster(tmp_path):
    """The results file is the one source of truth: rows lost with a stopped cluster are predicted again by the
    next one, and only those; the compiled cases are reused."""
    from pipelines.timing.device import KEPT, predict_plan
    from pipelines.targets import get_target
    from pipelines.tune import plan_search
    from transforms.problem import Gemm

    target, gemm, folder = get_target("gfx942"), Gemm(512, 512, 512, "f16"), tmp_path / "plan"
    with open_cluster(ClusterSpec(workers=2)) as client:
        plan_search(gemm, target, folder, 4, keep=KEPT, client=client)
        predict_plan(folder, client=client)
    results = folder / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:2]) + "\n")  # the run stopped after two rows
    compiled = {p: p.stat().st_mtime_ns for p in (folder / "cases").glob("*/gemm.vmfb")}
    with open_cluster(ClusterSpec(workers=2)) as client:
        plan_search(gemm, target, folder, 4, keep=KEPT, client=client)
        predict_plan(folder, client=client)
    again = results.read_text().splitlines()
    assert again[:2] == lines[:2] and len(again) == len(lines) == 5
    assert sorted(json.loads(line)["id"] for line in again) == sorted(json.loads(line)["id"] for line in lines)
    assert {p: p.stat().st_mtime_ns for p in (folder / "cases").glob("*/gemm.vmfb")} == compiled


class _FakeClient:
    def __init__(self, seen):
        self.seen = seen

    def scheduler_info(self):
        return {"workers": {a: {"resources": {"GPU": 1}} for a in self.seen}}

    def run(self, fn, workers):
        return {a: self.seen[a] for a in workers}


@pytest.mark.parametrize("seen, message", [
    ({"w1": ("h", None)}, "sees every GPU of its host"),
    ({"w1": ("h", "0,1")}, "sees GPUs 0,1"),
    ({"w1": ("h", "0"), "w2": ("h", "0")}, "both see GPU 0 of h"),
])
def test_gpu_workers_that_could_share_a_gpu_are_refused(seen, message):
    with pytest.raises(ClusterError, match=message):
        cluster.check_gpu_workers(_FakeClient(seen))
    cluster.check_gpu_workers(_FakeClient({"w1": ("h", "0"), "w2": ("h", "1"), "w3": ("g", "0")}))  # one each: fine


def test_a_gpu_worker_reads_its_environment_once(monkeypatch):
    """`bench_case` runs many cases on one worker process: nvidia-smi (the environment) is read for the first only."""
    from pipelines import runner

    calls = []
    monkeypatch.setattr(runner, "_WORKER_ENV", {})
    monkeypatch.setattr(runner, "environment", lambda device: calls.append(device) or {"device": device})
    monkeypatch.setattr(runner, "run_case", lambda case, plan, device, repetitions, env, data: dict(env, id=case["id"]))
    rows = [runner.bench_case({"id": f"c{i}", "vmfb": None}, None, "cuda", 1, {"git_commit": "x"}) for i in range(3)]
    assert calls == ["cuda"] and [r["id"] for r in rows] == ["c0", "c1", "c2"] and rows[2]["git_commit"] == "x"


@pytest.mark.parametrize("bokeh", [False, True])
def test_the_dashboard_link_is_printed_only_where_the_dashboard_is_served(bokeh, monkeypatch, capsys):
    """Without bokeh the scheduler still runs its HTTP service (a 'dashboard' port in its services), but /status
    answers 404 there: no link is printed then."""
    class Client:
        dashboard_link = "http://127.0.0.1:8787/status"

        def scheduler_info(self):
            return {"address": "tcp://127.0.0.1:1", "services": {"dashboard": 8787},
                    "workers": {"w": {"resources": {"CPU": 1}}}}

    monkeypatch.setattr(cluster, "_has_dashboard", lambda: bokeh)
    cluster._announce(Client())
    assert ("dashboard http://127.0.0.1:8787/status" in capsys.readouterr().err) == bokeh


@pytest.mark.parametrize("port, accepted", [(0, False), (1, True), (8786, True), (65535, True), (65536, False)])
def test_the_scheduler_port_is_1_to_65535_at_both_ends(port, accepted):
    """TCP ports run from 1 to 65535; port 0 asks the system for any free port, which no client can name."""
    if accepted:
        assert cluster_spec(f"tcp://10.0.0.5:{port}", 0, 0, ["local-task"]).scheduler == f"tcp://10.0.0.5:{port}"
    else:
        with pytest.raises(ClusterError, match="not a scheduler address"):
            cluster_spec(f"tcp://10.0.0.5:{port}", 0, 0, ["local-task"])


@pytest.mark.parametrize("name", ["../case-2/x.json", "../casefile", "../case-2", "/abs/x"])
def test_a_file_in_a_sibling_folder_is_outside_even_when_its_name_extends_the_case_folders(tmp_path, name):
    """`case` and `case-2` (or `casefile`) share a prefix of their path strings, not a folder: unpacking into
    `case` refuses every name that resolves outside it, and writes nothing."""
    folder = tmp_path / "case"
    folder.mkdir()
    with pytest.raises(ClusterError, match="outside the case folder"):
        unpack({"inside.json": b"1", name: b"2"}, folder)
    assert list(tmp_path.rglob("*")) == [folder]


def test_unpack_writes_what_lies_inside_the_case_folder(tmp_path):
    folder = tmp_path / "case"
    unpack({"a.json": b"1", "sub/b.bin": b"22"}, folder)
    assert (folder / "a.json").read_bytes() == b"1" and (folder / "sub" / "b.bin").read_bytes() == b"22"


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("where", ["tflops", "nested"])
def test_a_row_with_a_number_that_is_not_finite_is_refused(value, where):
    """results.jsonl holds JSON numbers: infinities and NaN are refused wherever they sit in a worker's row."""
    row = {"id": "a", "status": "ok", "tflops": 1.5, "problem": {"m": 1}}
    bad = dict(row, tflops=value) if where == "tflops" else dict(row, problem={"m": 1, "t": [0.5, value]})
    with pytest.raises(ClusterError, match="not plain"):
        checked_row(bad, {"a"})
    assert checked_row(dict(row, tflops=1e308), {"a"})["tflops"] == 1e308  # the largest finite float is a number
