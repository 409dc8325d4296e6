"""The skinny/long-K table: each problem's best project pipeline against IREE's default and cuBLAS, with bytes
moved, % of the measured copy bandwidth and % of the roofline.

Reads a `pipelines bench` results.jsonl (pipelines `default` and one or more of ours, cuBLAS attached to the default
row) and the copy-bandwidth lines of `tools/copy_bandwidth.py` from the same session. Bytes moved count A and B read
once and the f32 result written once; the roofline time is the larger of bytes / copy bandwidth and
FLOPs / dense peak (989.4 TFLOP/s bf16, H100 SXM data sheet); % of roofline is roofline time / measured time.

    python tools/skinny_table.py results/h100/skinny/results.jsonl results/h100/skinny/copy_bandwidth.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

PEAK_TFLOPS = 989.4  # H100 SXM dense bf16 (NVIDIA H100 data sheet)


def bytes_moved(p: dict) -> int:
    return (p["m"] * p["k"] + p["k"] * p["n"]) * 2 + p["m"] * p["n"] * 4


def table(results: Path, copy: Path) -> str:
    gbps = statistics.median(json.loads(line)["gbps_read_plus_write"] for line in copy.read_text().splitlines()
                             if line.strip())
    problems: dict[tuple, dict] = {}
    for line in results.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        p = row["problem"]
        entry = problems.setdefault((p["m"], p["n"], p["k"]), {"problem": p, "ours": []})
        if row["pipeline"] == "default":
            entry["default"] = row
        elif row.get("status") == "ok" and row.get("correct"):
            entry["ours"].append(row)
    lines = [f"Copy bandwidth (median of the session's copy_bandwidth runs): {gbps:.0f} GB/s.", "",
             "| M×N×K (bf16) | bytes moved | IREE default µs | best ours µs (pipeline) | ours / default | cuBLAS µs | "
             "ours / cuBLAS | % of copy bandwidth | % of roofline | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (m, n, k), entry in problems.items():
        p, default = entry["problem"], entry.get("default")
        if default is None or not entry["ours"]:
            continue
        best = min(entry["ours"], key=lambda r: r["median_ms"])
        us = best["median_ms"] * 1e3
        default_us = default["median_ms"] * 1e3
        vendor = default.get("vendor") or {}
        cublas = vendor.get("median_ms", 0) * 1e3
        moved = bytes_moved(p)
        roofline_us = max(moved / (gbps * 1e3), 2 * m * n * k / (PEAK_TFLOPS * 1e6))
        lines.append(f"| {m}×{n}×{k} | {moved / 1e6:.1f} MB | {default_us:.1f} | {us:.1f} ({best['pipeline']}) | "
                     f"{default_us / us:.2f}× | {cublas:.1f} | {cublas / us:.2f}× | {moved / (us * 1e3) / gbps:.0%} | "
                     f"{roofline_us / us:.0%} | {best['max_rel_error']:.1e} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("copy", type=Path)
    args = parser.parse_args()
    for path in (args.results, args.copy):
        if not path.is_file():
            print(f"skinny_table: {path} is not a file.", file=sys.stderr)
            return 2
    try:
        print(table(args.results, args.copy), end="")
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as err:
        print(f"skinny_table: the files are not bench results and copy_bandwidth lines ({err}).", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
