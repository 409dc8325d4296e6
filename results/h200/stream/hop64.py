"""Build a `tune --route hopper` plan for the decode row (16x8192x8192 bf16, C rounded to bf16; NN or NT) whose
candidates are the Hopper kernels on 64x64 tiles with K whole (128 workgroups at N = 8192: B's 64 columns by the 16
rows padded to a 64-row wgmma tile, the deepest pipelines shared memory holds) and 64x128 tiles with K in 2 slices
summed in the cluster, beside the `hopper` pipeline's schedule (the stream kernel) first. A probe of the design
cuBLAS's kernel has there (ncu/ncu2: 64 columns a workgroup, all of K, 180 KB of stages), not a route of its own.

    python3 results/h200/stream/hop64.py nn|nt PLAN
"""

import sys

from pipelines.__main__ import main
from pipelines.routes import hopper as route
from transforms import hopper

layout, plan = sys.argv[1], sys.argv[2]


def candidates(self, gemm, target):
    start = self.default_plan(gemm, target)
    out = [start]
    for stages in (route.most_stages(64, 64, 1, hopper.MAX_STAGES), 12, 8):
        for persistent in (False, True):
            out.append(route.store_rule(gemm, hopper.HopperSchedule(
                block_m=64, block_n=64, stages=stages, consumers=1, group_m=1, persistent=persistent)))
    for stages in (route.most_stages(64, 128, 1, hopper.MAX_STAGES), 8):
        out.append(hopper.HopperSchedule(block_m=64, block_n=128, stages=stages, consumers=1, group_m=1, split_k=2,
                                         split_sum="cluster"))
    kept = []
    for s in out:
        try:
            if isinstance(s, hopper.HopperSchedule):
                s.check()
                hopper.check_problem(gemm, s)
        except hopper.HopperError as err:
            print("left out:", s.describe(), err, file=sys.stderr)
            continue
        if s not in kept:
            kept.append(s)
    return kept


route.HopperRoute.candidates = candidates
sys.argv = ["pipelines", "tune", "--target", "sm_90a", "--shape", "16x8192x8192", "--dtype", "bf16", "--layout", layout,
            "--epilogue", "truncf", "--route", "hopper", "--compile-only", "-o", plan]
sys.exit(main())
