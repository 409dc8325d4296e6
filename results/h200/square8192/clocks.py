"""Each case of a plan (the runner's inputs: float32 normal draws in the input type) timed for about SECONDS of
back-to-back calls, ours (iree-benchmark-module, as the runner times it) and cuBLAS (torch.matmul, as the runner
times it) in turn, ROUNDS times, while nvidia-smi samples the SM clock and the board power every 50 ms: whether a
gap to cuBLAS is a gap in clocks under the power limit or in work per cycle. An exploration script kept as the
record (run.sh runs it); one JSON line per case and side and round on stdout:

    python3 results/h200/square8192/clocks.py PLAN [SECONDS] [ROUNDS]
"""
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pipelines.runner import make_inputs, read_plan, time_iree, time_vendor

plan = Path(sys.argv[1])
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2


def sampled(work, label):
    """(work's result, median SM clock MHz, median power W) over the samples taken while it ran; one snapshot of
    `nvidia-smi -q -d PERFORMANCE` (the clock's limiting reasons) a second in, to stderr under `label`."""
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    snapshot = subprocess.Popen(f"sleep 1.5; echo '== {label}' >&2; nvidia-smi -q -d PERFORMANCE >&2", shell=True)
    try:
        result = work()
    finally:
        smi.terminate()
        snapshot.wait()
    samples = []
    for line in smi.communicate()[0].splitlines():
        try:
            samples.append([float(x) for x in line.split(",")[:2]])
        except ValueError:  # a header or "[N/A]"
            pass
    samples = samples[len(samples) // 4:]  # the first quarter is the clocks settling
    clocks = [s[0] for s in samples]
    power = [s[1] for s in samples]
    return result, statistics.median(clocks) if clocks else None, statistics.median(power) if power else None


for case in read_plan(plan)["cases"]:
    with tempfile.TemporaryDirectory() as folder:
        inputs = make_inputs(case, Path(folder))
        for round_ in range(rounds):
            for side in ("ours", "cublas"):
                if side == "ours":
                    def work():
                        return time_iree(case, plan / case["vmfb"], "cuda", inputs, 1, warmup_s=0.5,
                                         min_time_s=seconds)
                else:
                    def work():
                        return time_vendor(case, inputs.arrays, 1, warmup_s=0.5, min_time_s=seconds)
                times, clock, power = sampled(work, f"{case['id']} {side} {round_}")
                print(json.dumps({"case": case["id"], "side": side, "round": round_, "ms": times[0],
                                  "sm_mhz": clock, "watts": power}), flush=True)
