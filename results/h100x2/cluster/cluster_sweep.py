"""The cluster measurement of results/h100x2/cluster: one plan of N candidates of one problem (the schedule route's
candidates, then the codegen route's), compiled on a local dask cluster's CPU workers, run by the runner on 1 and
on 2 GPU workers, and the two runs compared.

    python results/h100x2/cluster/cluster_sweep.py plan --target sm_80 --shape 2048x2048x2048 --dtype f16 --candidates 64 \\
        --workers 2 -o PLAN
    # on the 2-GPU machine, each run on its own copy of the plan:
    python -m pipelines.runner PLAN_1 --device cuda --gpus 1 --repetitions 3
    python -m pipelines.runner PLAN_2 --device cuda --gpus 2 --repetitions 3
    python results/h100x2/cluster/cluster_sweep.py compare PLAN_1 PLAN_2 --wall WALL.json > compare.md

WALL.json: {"1": seconds, "2": seconds}, the runner's wall time with 1 and 2 GPU workers (cluster start included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def plan(args) -> None:
    from pipelines.bench import build_plan
    from pipelines.cluster import ClusterSpec, open_cluster
    from pipelines.named import CODEGEN_CANDIDATE
    from pipelines.targets import get_target
    from pipelines.tune import candidates, codegen_candidates
    from transforms.problem import Gemm, parse_shape

    target = get_target(args.target)
    _, m, n, k = parse_shape(args.shape)
    gemm = Gemm(m, n, k, args.dtype)
    options = [("candidate", s) for s in candidates(gemm, target)]
    options += [(CODEGEN_CANDIDATE, s) for s in codegen_candidates(gemm, target)]
    if len(options) < args.candidates:
        raise SystemExit(f"{gemm.shape_name} {gemm.dtype} has {len(options)} candidates on {target.name}, fewer "
                         f"than {args.candidates}.")
    cases = [(gemm, "default", None), *((gemm, label, s) for label, s in options[:args.candidates])]
    with open_cluster(ClusterSpec(workers=args.workers)) as client:
        build_plan(target, cases, args.output, client=client)


def _rows(folder: Path) -> dict[str, dict]:
    rows = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[row["id"]] = row
    return rows


def compare(args) -> None:
    one, two = _rows(args.one), _rows(args.two)
    both = [i for i in one if i in two and one[i]["status"] == two[i]["status"] == "ok"]
    ratios = sorted(two[i]["median_ms"] / one[i]["median_ms"] for i in both)
    lines = ["| | 1 GPU worker | 2 GPU workers |", "|---|---|---|",
             f"| cases | {len(one)} | {len(two)} |",
             f"| ok and correct | {sum(r['status'] == 'ok' and r.get('correct') is True for r in one.values())} | "
             f"{sum(r['status'] == 'ok' and r.get('correct') is True for r in two.values())} |"]
    if args.wall:
        wall = json.loads(args.wall.read_text())
        lines.append(f"| wall time | {wall['1']:.1f} s | {wall['2']:.1f} s ({wall['2'] / wall['1']:.2f}×) |")
    by_gpu: dict[str, int] = {}
    for row in two.values():
        by_gpu[str(row.get("visible_devices"))] = by_gpu.get(str(row.get("visible_devices")), 0) + 1
    lines += ["", f"Cases per GPU in the 2-worker run (CUDA_VISIBLE_DEVICES): {json.dumps(by_gpu, sort_keys=True)}",
              "", f"Per-candidate median time, 2-worker run / 1-worker run, over {len(ratios)} candidates: median "
              f"{statistics.median(ratios):.3f}, min {ratios[0]:.3f}, max {ratios[-1]:.3f}, "
              f"{sum(abs(r - 1) <= 0.05 for r in ratios)} within 5 %."]
    best = [max((r for r in rows.values() if r["status"] == "ok" and r.get("correct")),
                key=lambda r: r["tflops"]) for rows in (one, two)]
    lines.append(f"Best candidate: 1 worker {best[0]['schedule']} ({best[0]['tflops']:.1f} TFLOP/s); 2 workers "
                 f"{best[1]['schedule']} ({best[1]['tflops']:.1f} TFLOP/s).")
    sys.stdout.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--target", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype", default="f16")
    p.add_argument("--candidates", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("-o", "--output", type=Path, required=True)
    p = sub.add_parser("compare")
    p.add_argument("one", type=Path)
    p.add_argument("two", type=Path)
    p.add_argument("--wall", type=Path)
    args = parser.parse_args(argv)
    plan(args) if args.what == "plan" else compare(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
