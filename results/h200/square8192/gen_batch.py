"""Build the plan of the store-batch probe (an exploration script kept as the record): the products whose C goes
out by TMA as shipped (each 8x32 block written, fenced to the async proxy and copied on its own: STORE_RING 4,
STORE_BATCH 1) beside the same kernels writing 2 blocks (ring of 4) or 4 blocks (ring of 8) before one fence and
issuing their copies as one bulk group (`transforms.hopper._tma_store_batches`): block a's projection, ·W2 and ·W1
(without its Gelu), bf16 8192³ NN, the multi-head block's Q·Kᵀ. One plan per variant, under PLAN/.

    python results/h200/square8192/gen_batch.py PLAN
"""
import sys
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
for ring, batch in ((4, 1), (4, 2), (8, 4)):
    hopper.STORE_RING, hopper.STORE_BATCH = ring, batch  # the generator reads them as it emits
    cases = []
    for gemm in shapes:
        s = fitted(gemm)
        assert s.tma_store and hopper.stages_stores(gemm, s), (gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / f"r{ring}b{batch}", kind="tune")
