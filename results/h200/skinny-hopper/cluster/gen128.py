"""Build the plan of the 128-row probe (an exploration script kept as the record): at M = 128 on the suite's four
weights, nn and nt, the rule's schedule, and one-tile-per-workgroup schedules with K's slices summed in the cluster
that run1 did not try: 128x64 tiles in 2 slices (one block row, twice the workgroups of 128x128); also 64x64 tiles
in 2 slices at 16x4096x4096.

    python results/h200/skinny-hopper/cluster/gen128.py PLAN
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted, most_stages  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Gemm  # noqa: E402

cases = []
for layout in ("nn", "nt"):
    problems = [(128, n, k) for n, k in ((4096, 4096), (8192, 8192), (14336, 4096), (4096, 14336))]
    for m, n, k in problems + [(16, 4096, 4096)]:
        gemm = Gemm(m, n, k, "bf16", layout)
        cases.append((gemm, HOPPER_CANDIDATE, fitted(gemm)))
        tiles = [(128, 64, 2), (128, 128, 2), (64, 128, 2)] if m == 128 else [(64, 64, 2), (64, 64, 4)]
        for block_m, block_n, split in tiles:
            consumers = block_m // 64
            s = hopper.HopperSchedule(block_m=block_m, block_n=block_n, consumers=consumers, group_m=1,
                                      stages=most_stages(block_m, block_n, consumers), split_k=split,
                                      split_sum="cluster")
            try:
                s.check()
                hopper.check_problem(gemm, s)
            except hopper.HopperError as err:
                print(gemm.shape_name, err)
                continue
            if s != cases[-1][2]:
                cases.append((gemm, HOPPER_CANDIDATE, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
