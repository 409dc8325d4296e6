"""Build the plan of the cluster-sum sweep (an exploration script kept as the record of what was run): for each
problem of ../suite.json (bf16, nn), the `hopper` pipeline's schedule as it was (`fitted`: K's slices summed by
IREE's reduction dispatch) and one-tile-per-workgroup cooperative schedules with K's slices summed in the kernel's
cluster (`split_sum="cluster"`): 64-row tiles of one consumer warp group (M <= 128) and 128-row tiles of two
(M > 64), 256 and 128 columns, the most stages, K in 2, 4 or 8 slices whose workgroups fit one round of the SMs.
run1 was built at a76641d, whose `fitted` still summed every slicing after (119 cases); today's `fitted` takes
the cluster sum itself, so the script now gives fewer cases (the rule's schedule is no longer a separate row).

    python results/h200/skinny-hopper/cluster/gen.py PLAN [--count]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gen import shapes  # noqa: E402
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted, summed_in_cluster  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Gemm  # noqa: E402


def cluster_sums(gemm: Gemm) -> list[hopper.HopperSchedule]:
    tiles = [(64, 256), (64, 128)] if gemm.m <= 128 else []
    tiles += [(128, 256), (128, 128)] if gemm.m > 64 else []
    out = []
    for block_m, block_n in tiles:
        for split in (2, 4, 8):
            s = summed_in_cluster(gemm, block_m, block_n, split)
            if s is not None and hopper.grid_size(gemm, s) <= hopper.SM_COUNT:
                out.append(s)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("plan", type=Path)
    parser.add_argument("--count", action="store_true", help="print the cases, compile nothing")
    args = parser.parse_args()
    target = get_target("sm_90a")
    cases = []
    for m, n, k in shapes():
        gemm = Gemm(m, n, k, "bf16", "nn")
        cases += [(gemm, HOPPER_CANDIDATE, fitted(gemm))]
        cases += [(gemm, HOPPER_CANDIDATE, s) for s in cluster_sums(gemm) if s != fitted(gemm)]
    if args.count:
        for g, _, s in cases:
            print(g.shape_name, s.describe(), hopper.grid_size(g, s))
        print(len(cases), "cases")
        return
    build_plan(target, cases, args.plan, kind="tune")


if __name__ == "__main__":
    main()
