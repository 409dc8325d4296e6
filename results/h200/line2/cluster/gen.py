"""Build the plans of the 2x2-cluster probe (an exploration script kept as the record; run: run1/): the Hopper
kernels as shipped (clusters of two block rows sharing B) beside the same schedules in clusters of 2x2 workgroups
sharing A and B (`HopperSchedule.cluster_n` 2), C in the input type: 8192³ and 4096³ bf16/f16 NN and NT and
8192x28672x8192 NT. One plan per variant, under PLAN/.

    python results/h200/line2/cluster/gen.py PLAN
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

hopper.MAX_ACTIVE_CLUSTERS = {}  # the grid as run1 had it: sized as if 33 clusters of four ran at once
if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")
truncf = Epilogue("truncf")
shapes = [Gemm(s, s, s, dtype, layout, epilogue=truncf) for s in (8192, 4096) for layout in ("nn", "nt")
          for dtype in ("bf16", "f16")] + [Gemm(8192, 28672, 8192, dtype, "nt", epilogue=truncf)
                                           for dtype in ("bf16", "f16")]
for name, along_n in (("c21", 1), ("c22", 2)):
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), cluster_n=along_n)
        s.check()
        hopper.check_problem(gemm, s)
        print(name, gemm.shape_name, gemm.dtype, gemm.layout, s.describe(), hopper.grid_size(gemm, s))
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / name, kind="tune")
