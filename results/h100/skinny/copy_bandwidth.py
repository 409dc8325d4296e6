"""Device-to-device copy bandwidth of the GPU this runs on: the roofline the skinny GEMM tables divide by.

A 1 GiB buffer is copied into another with torch (`Tensor.copy_`, the driver's device-to-device copy) 20 times after
a warm-up, timed with CUDA events; the figure counts the bytes read plus the bytes written, as a GEMM's bytes moved
do. Prints one JSON line (and appends it to -o FILE, a file of this tool's lines only).

    python results/h100/skinny/copy_bandwidth.py [-o results/h100/skinny/copy_bandwidth.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

BYTES = 1 << 30
REPEATS = 20
TOOL = "copy_bandwidth"


def measure() -> dict:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("copy_bandwidth: no CUDA device is visible to torch.")
    src = torch.empty(BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    median = statistics.median(times)
    return {"tool": TOOL, "device_name": torch.cuda.get_device_name(), "bytes_copied": BYTES,
            "median_s": median, "gbps_read_plus_write": 2 * BYTES / median / 1e9}


def _ours(path: Path) -> bool:
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return all(isinstance(row, dict) and row.get("tool") == TOOL for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, help="append the JSON line to this file (this tool's only)")
    args = parser.parse_args()
    if args.output and args.output.exists() and not _ours(args.output):
        print(f"copy_bandwidth: {args.output} holds lines this tool did not write; give another -o.", file=sys.stderr)
        return 2
    row = measure()
    line = json.dumps(row)
    print(line)
    if args.output:
        with args.output.open("a") as out:
            out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
