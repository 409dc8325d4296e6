"""Build the plan of the block products' tile-order probe (an exploration script kept as the record): block a's five
product shapes (f16, a 16-bit C; ·W1 without its Gelu) on the schedule `tune-model` gives them (`fitted`:
cooperative 128x256, persistent, clusters of two sharing B, groups of 16 block rows, C stored by TMA) beside the same
kernel in groups of 1, 4, 8 and 32 block rows, and without a cluster (groups of 16 and 8): whether the order chosen
at 8192³ (README.md) is the one these shapes want, where the runner gave ·W2 0.93x cuBLAS (../square8192/run1).

    python results/h200/order/gen_blocks.py PLAN
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
truncf = Epilogue("truncf")
shapes = [Gemm(4096, 2048, 8192, "f16", "nn", epilogue=truncf), Gemm(4096, 8192, 2048, "f16", "nn", epilogue=truncf),
          Gemm(4096, 2048, 2048, "f16", "nn", epilogue=truncf), Gemm(4096, 4096, 2048, "f16", "nt", epilogue=truncf),
          Gemm(4096, 2048, 4096, "f16", "nn", epilogue=truncf)]
cases = []
for gemm in shapes:
    base = fitted(gemm)
    for s in [base] + [replace(base, group_m=g) for g in (1, 4, 8, 32)] + [
            replace(base, cluster_m=1), replace(base, cluster_m=1, group_m=8)]:
        s.check()
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
