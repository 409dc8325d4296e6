"""Build the plans of the equal-rounds probe (an exploration script kept as the record; run: run2/): 8192³ bf16/f16
NN and NT, C in the input type, in three variants under PLAN/: `c21`, the shipped kernel (clusters of two sharing
B, 64 clusters, 16 rounds of tiles); `c21s`, the same on a grid sized as if the GPU had 120 SMs (57 clusters of two,
18 rounds); `c22`, clusters of 2x2 sharing A and B (29 of the 30 clusters of four that run at once, 18 rounds).
c21s and c22 take the same rounds on about as many SMs (114 and 116), so what separates them is the L2 traffic
(256 against 192 rows of K loaded per 32768 outputs).

    python results/h200/line2/cluster/gen_rounds.py PLAN
"""
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")
shapes = [Gemm(8192, 8192, 8192, dtype, layout, epilogue=Epilogue("truncf")) for layout in ("nn", "nt")
          for dtype in ("bf16", "f16")]
full = hopper.SM_COUNT
for name, along_n, sms, grid in (("c21", 1, full, 128), ("c21s", 1, 120, 114), ("c22", 2, full, 116)):
    hopper.SM_COUNT = sms  # read by grid_size as the program is emitted
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), cluster_n=along_n)
        s.check()
        hopper.check_problem(gemm, s)
        assert hopper.grid_size(gemm, s) == grid, (name, hopper.grid_size(gemm, s))
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / name, kind="tune")
hopper.SM_COUNT = full
