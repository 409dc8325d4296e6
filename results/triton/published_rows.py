"""Rebuild the published MI300X Triton GEMM rows of results/calibration/triton-gfx942.csv, predict each at its
published shape and emulate the same configuration at a small shape (published-mi300x-2026-11-26.md).

    python results/triton/published_rows.py [--triton-python .venv-triton/bin/python] \\
        [--work /tmp/triton-rows] [-o results/triton/published-mi300x-2026-11-26.json]

Each row is compiled twice by tools/triton_kernels.py --kernel rocm-tune-gemm for gfx942 with the row's config
(num_stages 0, the 2024 stream pipeliner, compiled as 2): once with Triton 3.9's default block ping-pong and once
with it off (the Triton of 2024 had no ping-pong pass). The small shape keeps the config and the K remainder: M and
N four blocks each (16 tiles, which NUM_XCDS 8 divides, so the XCD renumbering is a true permutation) and K two
whole blocks plus the published K's remainder (three whole blocks where BLOCK_K divides K). Every command is run
from the repository root and timed; the JSON keeps the command lines, their wall times and the outputs.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS = ROOT / "results" / "calibration" / "triton-gfx942.csv"


def config_of(row: dict) -> dict:
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", row["config"])}


def tool_command(python: str, shape: tuple[int, int, int], config: dict, pingpong: str, out: Path) -> list[str]:
    stages = config["num_stages"] or 2  # 0 selected the 2024 stream pipeliner: two stages
    return [python, "tools/triton_kernels.py", "--kernel", "rocm-tune-gemm", "--target", "gfx942",
            "--shape", "x".join(map(str, shape)), "--layout", "nt", "--dtype", "f16",
            "--block", f"{config['BLOCK_SIZE_M']}x{config['BLOCK_SIZE_N']}x{config['BLOCK_SIZE_K']}",
            "--group-m", str(config["GROUP_SIZE_M"]), "--warps", str(config["num_warps"]), "--stages", str(stages),
            "--waves-per-eu", str(config["waves_per_eu"]), "--nonkdim", str(config["matrix_instr_nonkdim"]),
            "--kpack", str(config["kpack"]), "--num-xcds", "8", "--block-pingpong", pingpong, "-o", str(out),
            "--force"]


def run(command: list[str]) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # emulate exits 1 on a mismatch, which is a result
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout, seconds


def small_shape(m: int, n: int, k: int, config: dict) -> tuple[int, int, int]:
    block_k = config["BLOCK_SIZE_K"]
    tail = k % block_k
    return 4 * config["BLOCK_SIZE_M"], 4 * config["BLOCK_SIZE_N"], 2 * block_k + tail if tail else 3 * block_k


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triton-python", default=".venv-triton/bin/python")
    parser.add_argument("--work", type=Path, default=Path("/tmp/triton-rows"))
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "results/triton/published-mi300x-2026-11-26.json")
    args = parser.parse_args()
    pipelines = [sys.executable, "-m", "pipelines"]
    rows = list(csv.DictReader(line for line in ROWS.open() if not line.startswith("#")))
    results = []
    for number, row in enumerate(rows, start=1):
        m, n, k = int(row["M"]), int(row["N"]), int(row["K"])
        config = config_of(row)
        entry = {"row": number, "shape": [m, n, k], "published_us": float(row["time_us"]), "config": row["config"],
                 "quote": row["quote"], "small_shape": list(small_shape(m, n, k, config)), "variants": {}}
        for pingpong in ("default", "off"):
            full, small = args.work / f"r{number}-{pingpong}", args.work / f"r{number}-{pingpong}-small"
            variant = {}
            for name, shape, folder in (("full", (m, n, k), full), ("small", small_shape(m, n, k, config), small)):
                command = tool_command(args.triton_python, shape, config, pingpong, folder)
                out, seconds = run(command)
                variant[f"compile_{name}"] = {"command": command, "seconds": round(seconds, 2), "stdout": out.strip()}
            launch = json.loads((full / "triton.json").read_text())
            variant["block_pingpong"] = launch["triton"]["block_pingpong"]
            listing = (full / "kernel.amdgcn").read_text()
            variant["vgprs"] = int(re.search(r"\.amdhsa_next_free_vgpr (\d+)", listing)[1])
            variant["scratch_bytes"] = int(re.search(r"\.amdhsa_private_segment_fixed_size (\d+)", listing)[1])
            variant["lds_bytes"] = launch["shared_bytes"]
            command = pipelines + ["predict", str(full), "--json"]
            out, seconds = run(command)
            variant["predict"] = {"command": command, "seconds": round(seconds, 2), "result": json.loads(out)}
            command = pipelines + ["emulate", str(small)]
            out, seconds = run(command)
            verdict = out.strip().splitlines()[-1]
            error = re.search(r"max relative error (\S+) ([<>]=?) tolerance (\S+)", out)
            variant["emulate"] = {"command": command, "seconds": round(seconds, 2), "verdict": verdict,
                                  "max_rel_error": float(error[1]), "tolerance": float(error[3]),
                                  "summary": out.strip().splitlines()[:3]}
            entry["variants"][pingpong] = variant
            predicted = variant["predict"]["result"]["microseconds"]
            print(f"row {number} {m}x{n}x{k} ping-pong {pingpong}: PREDICTED {predicted:.1f} us "
                  f"({variant['predict']['result']['bound']}), published {row['time_us']} us; small "
                  f"{'x'.join(map(str, entry['small_shape']))} {verdict}", flush=True)
        results.append(entry)
    args.output.write_text(json.dumps({"source": str(ROWS.relative_to(ROOT)), "rows": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
