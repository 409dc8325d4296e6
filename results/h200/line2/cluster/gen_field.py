"""Build the plans of a one-field probe (an exploration script kept as the record): the shipped Hopper kernel
(`c21`) beside the same with one boolean schedule field on (`NAME`): `serpentine_k` (run3/, NAME c21k: the K steps
of every other tile reversed) or `stream_k` (run4/, NAME c21sk: stream-K over all 132 SMs), C in the input type:
8192³ bf16/f16 NN and NT, 4096³ bf16 NN and NT, 8192x28672x8192 bf16 NT. One plan per variant, under PLAN/.

    python results/h200/line2/cluster/gen_field.py PLAN FIELD NAME
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

plan, field, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if plan.exists():
    sys.exit(f"{plan} exists; give a new folder.")
if field not in ("serpentine_k", "stream_k"):
    sys.exit(f"{field} is not serpentine_k or stream_k.")
truncf = Epilogue("truncf")
shapes = [Gemm(8192, 8192, 8192, dtype, layout, epilogue=truncf) for layout in ("nn", "nt")
          for dtype in ("bf16", "f16")] + [Gemm(4096, 4096, 4096, "bf16", layout, epilogue=truncf)
                                           for layout in ("nn", "nt")] + [
          Gemm(8192, 28672, 8192, "bf16", "nt", epilogue=truncf)]
for variant, on in (("c21", False), (name, True)):
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), **{field: on})
        s.check()
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, plan / variant, kind="tune")
