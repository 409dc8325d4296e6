"""Build the plan of C stored by TMA (`HopperSchedule.tma_store`) beside the staged stores it replaces, on the
multi-head block's batched products, block a's products, 8192³ and edge shapes (an exploration script kept as the
record): does a bulk tensor store of each warp's 8x32 blocks relieve the L1 that Nsight Compute found saturated
(run3)?

    python results/h200/batch/gen4.py PLAN
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
pingpong = hopper.named_schedule("hopper-pingpong")
cases = []


def both(gemm, *schedules):
    for s in schedules:
        for tma in (False, True):
            cases.append((gemm, HOPPER_CANDIDATE, replace(s, tma_store=tma)))


for layout in ("nn", "nt"):
    g = Gemm(4096, 4096, 128, "f16", layout, batch=16, epilogue=truncf)
    both(g, fitted(g), replace(fitted(g), block_n=128))
g = Gemm(4096, 128, 4096, "f16", "nn", batch=16, epilogue=truncf)
both(g, fitted(g), pingpong)
for m, n, k, layout in [(4096, 2048, 2048, "nn"), (4096, 4096, 2048, "nt"), (4096, 2048, 8192, "nn"),
                        (4096, 8192, 2048, "nn"), (8192, 8192, 8192, "nn"), (8192, 8192, 8192, "nt")]:
    g = Gemm(m, n, k, "f16", layout, epilogue=truncf)
    both(g, hopper.DEFAULT)
for m, n, k, layout in [(8192, 1024, 1024, "nn"), (8192, 8192, 1024, "nt")]:  # block c's short-K products
    both(Gemm(m, n, k, "f16", layout, epilogue=truncf), pingpong)
for shape, layout, dtype in [((1000, 776, 1000), "nt", "bf16"), ((300, 520, 256), "nn", "bf16"),
                             ((2048, 1032, 1024), "nt", "f16")]:
    both(Gemm(*shape, dtype, layout, epilogue=truncf), hopper.DEFAULT)
for shape in [(3, 200, 136, 192), (5, 72, 1000, 64)]:
    b, m, n, k = shape
    g = Gemm(m, n, k, "bf16", "nn", batch=b, epilogue=truncf)
    both(g, fitted(g))
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
