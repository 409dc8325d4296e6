"""The measurement harness of README.md's profile: the runner's phases wrapped and timed (in each GPU worker on a
cluster), on the first N cases of a plan. python3 profile.py PLAN N plain|cluster|cluster2|cluster-notrim."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pipelines.runner as R
from pipelines.cluster import ClusterSpec, open_cluster


def patch():
    import time

    import pipelines.runner as R
    if getattr(R, "_patched", False):
        return
    R._patched, R._LOG = True, []

    def timed(name, f):
        def w(*a, **k):
            t = time.perf_counter()
            r = f(*a, **k)
            R._LOG.append((name, time.perf_counter() - t, time.time()))
            return r
        return w

    for name in ("run_once", "time_iree", "make_inputs", "reference", "environment", "run_case", "device_or_error"):
        setattr(R, name, timed(name, getattr(R, name)))
    R.subprocess.run = timed("subprocess", subprocess.run)


def log():
    import pipelines.runner as R, threading
    return R._LOG, threading.current_thread().name


def summary(entries):
    out = {}
    for n, t, _ in entries:
        out.setdefault(n, []).append(t)
    return {n: {"n": len(v), "sum": round(sum(v), 3), "mean": round(sum(v) / len(v), 4),
                "rest_mean": round(sum(v[1:]) / max(1, len(v) - 1), 4)} for n, v in out.items()}


def subset(src, dst, n):
    shutil.rmtree(dst, ignore_errors=True); shutil.copytree(src, dst)
    p = json.loads((dst / "plan.json").read_text()); p["cases"] = p["cases"][:n]
    (dst / "plan.json").write_text(json.dumps(p))


def main():
    src, n, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    report = {}
    dst = Path(f"/tmp/prof-{mode}")
    subset(src, dst, n)
    if mode == "plain":
        patch(); t = time.time(); R.run_plan(dst, ["cuda"], 3); report["wall"] = time.time() - t
        report["ends"] = [round(x[2] - t, 2) for x in R._LOG if x[0] == "run_case"]
        report["phases"] = summary(R._LOG)
    else:
        env = {}
        if mode == "cluster-notrim":
            import dask
            dask.config.set({"distributed.nanny.pre-spawn-environ": {}, "distributed.nanny.environ": {}})
        t0 = time.time()
        with open_cluster(ClusterSpec(gpus=2 if mode == 'cluster2' else 1)) as client:
            report["start"] = time.time() - t0
            client.run(patch)
            env = list(client.run(lambda: dict(os.environ)).values())[0]
            t = time.time(); R.run_plan(dst, ["cuda"], 3, client=client); report["wall"] = time.time() - t
            logs = client.run(log)
            report["phases"] = {w: summary(e) for w, (e, _) in logs.items()}
            report["ends"] = {w: [round(x[2] - t, 2) for x in e if x[0] == "run_case"] for w, (e, _) in logs.items()}
        report["env_diff"] = {k: v for k, v in env.items() if os.environ.get(k) != v}
    print(mode, json.dumps(report))


if __name__ == '__main__':
    main()
