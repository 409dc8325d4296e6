"""Build the plan of the deferred-stores probe (an exploration script kept as the record; run: defer1/): the
products whose C goes out by TMA as shipped beside the same kernels storing each tile under the next tile's first
wgmma group (`HopperSchedule.defer_stores`), with 8- and 16-row boxes: block a's projection, ·W2 and ·W1 (without
its Gelu), bf16 8192³ NN and NT, the multi-head block's Q·Kᵀ. One plan per variant, under PLAN/.

    python results/h200/square8192/gen_defer.py PLAN
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
shapes = [Gemm(4096, 2048, 2048, "f16", "nn", epilogue=truncf), Gemm(4096, 2048, 8192, "f16", "nn", epilogue=truncf),
          Gemm(4096, 8192, 2048, "f16", "nn", epilogue=truncf), Gemm(8192, 8192, 8192, "bf16", "nn", epilogue=truncf),
          Gemm(8192, 8192, 8192, "bf16", "nt", epilogue=truncf),
          Gemm(4096, 4096, 128, "f16", "nt", batch=16, epilogue=truncf)]
for name, rows, defer in (("shipped", 8, False), ("defer", 8, True), ("defer16", 16, True)):
    hopper.STORE_BOX = (32, rows)  # read as the kernels emit
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), defer_stores=defer)
        assert s.tma_store and hopper.stages_stores(gemm, s), (gemm, s)
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / name, kind="tune")
