"""Build the plan of the store-ring probe (an exploration script kept as the record): the products whose C goes
out by TMA (`HopperSchedule.tma_store`) as shipped, each warp's ring of STORE_RING = 4 areas of 512 bytes (the
warp waits before its fifth 8x32 block until the copy of its first has read its area), beside the same kernels
built with a ring of 8 (the shipped 128x256 tile's 4 stages and 8 warps' rings then take 226 of the 227 KiB): bf16
8192³ NN and NT, block a's ·W2 and ·W1 (without its Gelu), the multi-head block's Q·Kᵀ (f16, 16 heads).

    python results/h200/square8192/gen_ring.py PLAN
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
shapes = [Gemm(8192, 8192, 8192, "bf16", "nn", epilogue=truncf), Gemm(8192, 8192, 8192, "bf16", "nt", epilogue=truncf),
          Gemm(4096, 2048, 8192, "f16", "nn", epilogue=truncf), Gemm(4096, 8192, 2048, "f16", "nn", epilogue=truncf),
          Gemm(4096, 4096, 128, "f16", "nt", batch=16, epilogue=truncf)]
cases = []
for ring in (4, 8):
    # the generator reads them as it emits; a fence and a bulk group per block, as when this was measured
    hopper.STORE_RING, hopper.STORE_BATCH = ring, 1
    for gemm in shapes:
        s = fitted(gemm)
        assert s.tma_store and hopper.stages_stores(gemm, s), (gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
    # the plan's cases are compiled as they are added: one plan per ring, then merged by the runner's folder
    build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]) / f"ring{ring}", kind="tune")
    cases = []
