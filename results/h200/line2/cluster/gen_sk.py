"""Build the plans of the stream-K probe (an exploration script kept as the record; run: run4/): the shipped
Hopper kernel (`c21`, 16 rounds of tiles on 128 workgroups at 8192³) beside the same with stream-K over all 132 SMs
(`c21sk`, `HopperSchedule.stream_k`), C in the input type: 8192³ bf16/f16 NN and NT, 4096³ bf16 NN and NT,
8192x28672x8192 bf16 NT. One plan per variant, under PLAN/.

    python results/h200/line2/cluster/gen_sk.py PLAN
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
truncf = Epilogue("truncf")
shapes = [Gemm(8192, 8192, 8192, dtype, layout, epilogue=truncf) for layout in ("nn", "nt")
          for dtype in ("bf16", "f16")] + [Gemm(4096, 4096, 4096, "bf16", layout, epilogue=truncf)
                                           for layout in ("nn", "nt")] + [
          Gemm(8192, 28672, 8192, "bf16", "nt", epilogue=truncf)]
for name, streamk in (("c21", False), ("c21sk", True)):
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), stream_k=streamk)
        s.check()
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / name, kind="tune")
