"""The skinny sweep's table: per problem, cuBLAS, the best Hopper schedule measured, the `hopper` pipeline's
schedule (`pipelines.routes.hopper.fitted`, as `auto` now takes it from M = 16) where it was measured, and the
split-k pipeline's rule, against cuBLAS of the same run and the copy bandwidth (read + write, median of the runs).

    python results/h200/skinny-hopper/table.py          # from the repository root
"""
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.routes.hopper import fitted  # noqa: E402
from transforms.problem import Gemm  # noqa: E402

HERE = Path(__file__).parent
RUNS = ("first", "second")


def fields(schedule: str) -> tuple[int, int, int, int]:
    bm, bn = map(int, re.search(r"(\d+)x(\d+)x64", schedule).groups())
    split = int(re.search(r"K in (\d+)", schedule)[1]) if "K in" in schedule else 1
    return bm, bn, 2 if "clusters of 2" in schedule else 1, split


def main() -> None:
    rows = [dict(json.loads(line), run=run) for run in RUNS for line in (HERE / run / "results.jsonl").open()]
    copy = statistics.median(json.loads(line)["gbps_read_plus_write"] for run in RUNS
                             for line in (HERE / run / "copy_bandwidth.jsonl").open()) * 1e9
    by = defaultdict(list)
    for r in rows:
        p = r["problem"]
        by[(p["m"], p["n"], p["k"])].append(r)
    print(f"Copy bandwidth (median of {2 * len(RUNS)} runs, read + write): {copy / 1e9:.0f} GB/s\n")
    print("| M×N×K (bf16, nn) | run | cuBLAS µs | best Hopper µs (tile, cluster, slices) | best / cuBLAS | "
          "`hopper` µs | `hopper` / cuBLAS | % of copy bw (`hopper`) | split-k µs | split-k / cuBLAS | "
          "% of copy bw (split-k) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (m, n, k), rs in sorted(by.items()):
        moved = 2 * (m * k + k * n) + 4 * m * n
        pick = fitted(Gemm(m, n, k))
        want = (pick.block_m, pick.block_n, pick.cluster_m, pick.split_k)
        split = next((r for r in rs if r["pipeline"] == "split-k" and not r.get("measured_as")), None)
        for run in RUNS:
            cublas = next((r["vendor"]["median_ms"] for r in rs if r["run"] == run and r.get("vendor")), None)
            ours = [r for r in rs if r["run"] == run and r["pipeline"].startswith("hopper") and r.get("correct")]
            if cublas is None:
                continue
            cells = [f"{m}×{n}×{k}", run, f"{cublas * 1e3:.1f}"]
            fit = None
            if ours:
                best = min(ours, key=lambda r: r["median_ms"])
                fit = next((r for r in ours if fields(r["schedule"]) == want), None)
                f = fields(best["schedule"])
                cells += [f"{best['median_ms'] * 1e3:.1f} ({f[0]}×{f[1]}, {f[2]}, {f[3]})",
                          f"{cublas / best['median_ms']:.2f}"]
            else:
                cells += ["not run"] * 2
            cells += ([f"{fit['median_ms'] * 1e3:.1f}", f"{cublas / fit['median_ms']:.2f}",
                       f"{moved / (fit['median_ms'] * 1e-3) / copy * 100:.0f}%"] if fit else ["not run"] * 3)
            cells += ([f"{split['median_ms'] * 1e3:.1f}", f"{cublas / split['median_ms']:.2f}",
                       f"{moved / (split['median_ms'] * 1e-3) / copy * 100:.0f}%"]
                      if split and run == split["run"] else ["–"] * 3)
            print("| " + " | ".join(cells) + " |")
    bad = [r for r in rows if r["status"] != "ok" or r.get("correct") is not True]
    print(f"\n{len(rows)} rows, {len(bad)} not correct or not ok (float64 reference, the runner's tolerance).")


if __name__ == "__main__":
    main()
