"""Build the plan of the deep-pipeline probe (an exploration script kept as the record): the two skinny rows still
below issue 33's line (16x4096x4096 under 70 % of the copy bandwidth, 128x4096x4096 nn under 0.8x cuBLAS) with
narrow tiles and more stages than the 7 the kernels took before (`transforms.hopper.MAX_STAGES`): more of B's bytes
in flight per SM, and fewer slices (or none) to sum. Per problem the rule's schedule (`fitted`) first, then
one-tile-per-workgroup cooperative schedules of one consumer warp group (64 rows) or two (128), K whole or in
slices summed in the cluster, B shared along M by clusters of two where M has two tile rows. nn and nt.

    python results/h200/skinny-hopper/deep/gen.py PLAN
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Gemm  # noqa: E402

if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")


def deepest(**fields) -> int:
    """The most stages (up to MAX_STAGES) the schedule's shared memory holds."""
    return max(s for s in range(2, hopper.MAX_STAGES + 1)
               if hopper.HopperSchedule(**fields, stages=s).shared_bytes() <= hopper.SHARED_BYTES)


# (block_m, block_n, split_k, cluster_m) per row count; stages: 7 (the old limit) and the deepest
TILES = {16: [(64, 32, 1, 1), (64, 32, 2, 1), (64, 64, 1, 1), (64, 64, 2, 1), (64, 128, 1, 1), (64, 128, 2, 1)],
         128: [(64, 64, 1, 2), (64, 128, 1, 2), (128, 64, 1, 1), (128, 64, 2, 1), (128, 128, 2, 1), (64, 64, 2, 1)]}
cases = []
for m, tiles in TILES.items():
    for layout in ("nn", "nt"):
        gemm = Gemm(m, 4096, 4096, "bf16", layout)
        cases.append((gemm, HOPPER_CANDIDATE, fitted(gemm)))
        for block_m, block_n, split, cluster in tiles:
            fields = dict(block_m=block_m, block_n=block_n, consumers=block_m // 64, group_m=1, split_k=split,
                          split_sum="cluster", cluster_m=cluster)
            for stages in sorted({7, deepest(**fields)}):
                s = hopper.HopperSchedule(**fields, stages=stages)
                try:
                    s.check()
                    hopper.check_problem(gemm, s)
                except hopper.HopperError as e:
                    print("skip", gemm, block_m, block_n, split, cluster, stages, e)
                    continue
                cases.append((gemm, HOPPER_CANDIDATE, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
