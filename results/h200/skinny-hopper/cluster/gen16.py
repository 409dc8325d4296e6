"""Build the plan of the 16x4096x4096 probe (an exploration script kept as the record): the one skinny row below
70 % of the copy bandwidth after the cluster-sum sweep (../cluster/run1: 12.8 us at best, 64x256 tiles in 4 slices
summed in the cluster). One-tile-per-workgroup cooperative schedules with K's slices summed in the cluster: 64-row
tiles 256, 192 and 128 wide, 2, 4 or 8 slices, 3 and 4 stages and the most (fewer stages leave room for a second
workgroup on an SM, which may let more clusters run at once), nn and nt.

    python results/h200/skinny-hopper/cluster/gen16.py PLAN
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
    gemm = Gemm(16, 4096, 4096, "bf16", layout)
    cases.append((gemm, HOPPER_CANDIDATE, fitted(gemm)))
    for block_n in (256, 192, 128):
        for split in (2, 4, 8):
            for stages in sorted({3, 4, most_stages(64, block_n, 1)}):
                s = hopper.HopperSchedule(block_m=64, block_n=block_n, consumers=1, group_m=1, stages=stages,
                                          split_k=split, split_sum="cluster")
                try:
                    s.check()
                    hopper.check_problem(gemm, s)
                except hopper.HopperError:
                    continue
                cases.append((gemm, HOPPER_CANDIDATE, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
