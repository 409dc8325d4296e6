"""Build the plan of block a's product shapes (f16, f16 C) on the shipped schedule and with clusters of one, groups
of 16 or 8 block rows (an exploration script kept as the record): does the cluster's multicast, which raised L2
bytes in ../order/run1, cost clock under sustained load?

    python results/h200/timeline/gen_cluster.py PLAN
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
shapes = [(4096, 2048, 2048, "nn"), (4096, 4096, 2048, "nt"), (4096, 2048, 4096, "nn"), (4096, 2048, 8192, "nn")]
base = hopper.DEFAULT
schedules = [base, replace(base, cluster_m=1), replace(base, cluster_m=1, group_m=8)]
cases = [(Gemm(m, n, k, "f16", layout, epilogue=Epilogue("truncf")), HOPPER_CANDIDATE, s)
         for m, n, k, layout in shapes for s in schedules]
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
