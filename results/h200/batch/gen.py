"""Build the plan of the multi-head block's two batched products (f16, 16-bit C, NN and NT) on the batch rule's
schedule and on others (an exploration script kept as the record): which kernel stores a K = 128 batch fastest?

    python results/h200/batch/gen.py PLAN
"""
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")
pingpong = hopper.named_schedule("hopper-pingpong")
cases = []
for b, m, n, k, layout in [(16, 4096, 4096, 128, "nn"), (16, 4096, 4096, 128, "nt"), (16, 4096, 128, 4096, "nn")]:
    gemm = Gemm(m, n, k, "f16", layout, batch=b, epilogue=Epilogue("truncf"))
    rule = fitted(gemm)
    schedules = [rule, replace(rule, cluster_m=1), pingpong, replace(pingpong, cluster_m=1),
                 replace(hopper.DEFAULT, block_n=128), replace(hopper.DEFAULT, block_n=128, cluster_m=1)]
    seen = []
    for s in schedules:
        if s in seen:
            continue
        seen.append(s)
        try:
            s.check()
            hopper.check_problem(gemm, s)
        except hopper.HopperError as err:
            print(f"{gemm} {s.describe()}: {err}")
            continue
        cases.append((gemm, HOPPER_CANDIDATE, s))
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
