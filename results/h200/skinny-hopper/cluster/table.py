"""Tables of the cluster-sum runs (run1: the sweep, run2: the suites as a user runs them and the 16x4096x4096
probe) from their results.jsonl rows: python results/h200/skinny-hopper/cluster/table.py > table.md"""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rows(path):
    return [json.loads(line) for line in open(HERE / path)]


def bandwidth(run):
    return statistics.median(json.loads(line)["gbps_read_plus_write"] for line in open(HERE / run / "copy_bandwidth.jsonl"))


def problem(label):
    m, n, k = map(int, label.split()[1].split("x"))
    return m, n, k, (m * k + k * n + m * n) * 2


def short(schedule):
    text = schedule.split(" (TMA")[0].replace("hopper-cooperative", "coop").replace("groups of ", "g")
    return text.replace(" block rows", "").replace("summed in the cluster", "in cluster").replace(
        "summed after", "after (IREE reduction)")


def sweep():
    print("## run1: the sweep (bf16, nn; one H200; copy bandwidth %.0f GB/s)\n" % bandwidth("run1"))
    print("The first row of each problem is the rule before this change (slices summed by IREE's reduction after);")
    print("the others sum K's slices in the kernel's cluster. µs: the runner's median of 2 repetitions.\n")
    print("| problem | cuBLAS µs | schedule | µs | / cuBLAS |")
    print("|---|---|---|---|---|")
    for r in rows("run1/clc.jsonl"):
        cu = r["vendor"]["median_ms"] * 1e3 if r.get("vendor") else float("nan")
        t = r["median_ms"] * 1e3
        print(f"| {r['label'].split()[1]} | {cu:.1f} | {short(r['schedule'])} | {t:.1f} | {cu / t:.2f} |")
    bad = [r["label"] for r in rows("run1/clc.jsonl") + rows("run1/smoke.jsonl") if not r["correct"]]
    print(f"\n{len(rows('run1/clc.jsonl'))} rows (+4 smoke rows), {len(bad)} not correct (float64 reference).\n")


def suites():
    bw = bandwidth("run2")
    print("## run2: the skinny suites as a user runs them, `auto` and `hopper` (bf16; one H200; copy bandwidth "
          "%.0f GB/s)\n" % bw)
    print("Issue 33's line: >= 0.8x cuBLAS for M >= 16, >= 70 % of the copy bandwidth for M <= 16 (`auto`).\n")
    for name, layout in (("run2/skauto2c.jsonl", "nn"), ("run2/skntauto2c.jsonl", "nt")):
        print(f"### {layout}\n")
        print("| problem | cuBLAS µs | auto µs | auto / cuBLAS | auto % copy bw | hopper µs | hopper / cuBLAS | met |")
        print("|---|---|---|---|---|---|---|---|")
        by = {}
        for r in rows(name):
            by.setdefault(r["label"].rsplit(" ", 1)[0], {})[r["pipeline"]] = r
        for label, d in by.items():
            m, n, k, size = problem(label)
            a, h = d["auto"], d["hopper"]
            cu, ta, th = a["vendor"]["median_ms"] * 1e3, a["median_ms"] * 1e3, h["median_ms"] * 1e3
            pct = size / (ta * 1e-6) / 1e9 / bw * 100
            met = (cu / ta >= 0.8 if m >= 16 else True) and (pct >= 70 if m <= 16 else True)
            print(f"| {m}x{n}x{k} | {cu:.1f} | {ta:.1f} | {cu / ta:.2f} | {pct:.0f} % | {th:.1f} | {cu / th:.2f} | "
                  f"{'yes' if met else '**no**'} |")
        print(f"\n{len(rows(name))} rows, {sum(not r['correct'] for r in rows(name))} not correct.\n")
    print("### 16x4096x4096 probe (every row float64-correct)\n")
    print("| layout | schedule | µs | % copy bw |")
    print("|---|---|---|---|")
    probe = rows("run2/p16c.jsonl")
    for r in sorted(probe, key=lambda r: (r["label"], r["median_ms"])):
        t = r["median_ms"] * 1e3
        print(f"| {r['label'].split()[2]} | {short(r['schedule'])} | {t:.1f} | "
              f"{problem(r['label'])[3] / (t * 1e-6) / 1e9 / bw * 100:.0f} % |")
    print(f"\n{len(probe)} rows, {sum(not r['correct'] for r in probe)} not correct.")


sweep()
suites()
