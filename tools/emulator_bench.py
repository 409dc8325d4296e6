"""Wall time of the emulator on the sizes people quote: a benchmark, not a test.

Compiles each case with IREE's default pipeline through the CLI (compiles are cached in the work folder and not
timed), then times `emulate_gemm` on it in a fresh process, one case at a time, and appends one JSON row per case
(command, commit, seconds, verdict) to the output file. Run it at two commits to compare:

    python tools/emulator_bench.py -o results/emulator/bench-AFTER.jsonl [--cases 256,1000,4096,8192s]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# name -> (target, shape, dtype, layout, sampled workgroups or None)
CASES = {
    "256": ("gfx942", "256x256x256", "bf16", "nt", None),
    "1000": ("gfx942", "1000x1000x1000", "bf16", "nt", None),
    "1000-gfx950-f16-nn": ("gfx950", "1000x1000x1000", "f16", "nn", None),
    "4096": ("gfx950", "4096x4096x4096", "bf16", "nt", None),
    "8192s": ("gfx950", "8192x8192x8192", "bf16", "nt", 8),
}

_TIME_ONE = """
import json, sys, time
from pipelines.emulator import emulate_gemm
started = time.perf_counter()
r = emulate_gemm(sys.argv[1], workgroups=None if sys.argv[2] == "-" else int(sys.argv[2]))
print(json.dumps({"seconds": time.perf_counter() - started, "passed": r.passed, "workgroups": r.workgroups,
                  "sampled": r.sampled, "instructions": r.instructions, "max_rel_error": r.max_rel_error}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="JSON-lines file the rows are appended to")
    parser.add_argument("--cases", default="256,1000,1000-gfx950-f16-nn,4096,8192s")
    parser.add_argument("--work", default="/tmp/emulator-bench", help="where the compiled folders are kept")
    args = parser.parse_args()
    output = Path(args.output)
    if output.exists():  # rows are appended only to a file of this tool's rows, never to another file
        first = output.read_text(errors="replace").splitlines()[:1]
        try:
            ours = not first or {"case", "wall_s", "command"} <= json.loads(first[0]).keys()
        except (ValueError, AttributeError):
            ours = False
        if not ours:
            print(f"emulator_bench: error: {output} exists and does not hold this tool's rows; give a new file.",
                  file=sys.stderr)
            return 2
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in args.cases.split(","):
        target, shape, dtype, layout, sample = CASES[name]
        folder = Path(args.work) / f"{target}_{shape}_{dtype}_{layout}"
        if not (folder / "report.json").is_file():
            subprocess.run([sys.executable, "-m", "pipelines", "compile", "--target", target, "--shape", shape,
                            "--dtype", dtype, "--layout", layout, "--pipeline", "default", "-o", str(folder)],
                           check=True, env=env, stdout=subprocess.DEVNULL)
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-c", _TIME_ONE, str(folder), str(sample or "-")],
                             capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        row = {"case": name, "target": target, "shape": shape, "dtype": dtype, "layout": layout, "sampled": sample,
               "commit": commit, "wall_s": round(wall, 2), "cores": os.cpu_count(),
               "command": f"pipelines emulate {folder}" + (f" --workgroups {sample}" if sample else "")}
        if run.returncode == 0:
            row.update(json.loads(run.stdout.strip().splitlines()[-1]))
        else:
            row["error"] = (run.stderr.strip().splitlines() or ["?"])[-1]
        print(json.dumps(row), flush=True)
        with open(args.output, "a") as out:
            out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
