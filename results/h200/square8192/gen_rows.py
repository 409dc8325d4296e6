"""Build the plan of the store-box probe (an exploration script kept as the record; run: rows1/): the products
whose C goes out by TMA as shipped (boxes of 32 columns x 8 rows, two areas a fence in a ring of 4) beside boxes of
16 rows (`transforms.hopper.STORE_BOX`: both of a warp's fragment rows a copy, half as many copies) in the ring of 4
(one box a fence) and in a ring of 8 (two boxes a fence): block a's projection, ·W2 and ·W1 (without its Gelu),
bf16 8192³ NN, the multi-head block's Q·Kᵀ. One plan per variant, under PLAN/.

    python results/h200/square8192/gen_rows.py PLAN
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
          Gemm(4096, 4096, 128, "f16", "nt", batch=16, epilogue=truncf)]
for rows, ring, batch in ((8, 4, 2), (16, 4, 2), (16, 8, 4)):
    hopper.STORE_BOX, hopper.STORE_RING, hopper.STORE_BATCH = (32, rows), ring, batch  # read as the kernels emit
    cases = []
    for gemm in shapes:
        s = replace(fitted(gemm), defer_stores=False)  # as run, before `store_rule` deferred the stores
        assert s.tma_store and hopper.stages_stores(gemm, s), (gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / f"rows{rows}r{ring}", kind="tune")
