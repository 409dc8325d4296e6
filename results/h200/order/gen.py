"""Build the plan of the 8192^3 tile-order probe (an exploration script kept as the record): the shipped Hopper
schedule (cooperative 128x256, 4 stages, persistent, clusters of two sharing B, groups of 16 block rows) beside the
same kernel with other tile orders (`group_m`), without a cluster, and 256x128 tiles, bf16 with a bf16 C (truncf),
NN and NT. Nsight Compute (run.sh) gives each kernel's DRAM bytes beside its time.

    python results/h200/order/gen.py PLAN
"""
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")
base = hopper.DEFAULT
schedules = [base] + [replace(base, group_m=g) for g in (2, 4, 8, 32, 64)] + [
    replace(base, cluster_m=1), replace(base, cluster_m=1, group_m=8),
    replace(base, block_m=256, block_n=128)]
cases = []
for layout in ("nn", "nt"):
    gemm = Gemm(8192, 8192, 8192, "bf16", layout, epilogue=Epilogue("truncf"))
    for s in schedules:
        s.check()
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
