"""Build the plan of C stored in heads (`HopperSchedule.store_heads`) beside the same kernels storing C plainly by
TMA: the multi-head block's projections split into 16 heads and P·V joined from them (the programs move C back with
one transpose, so the runner checks it against float64 as any other; the transpose's time is in the row), and edge
cases of the layout (heads of 32 and 256 columns, 2 and 64 heads). An exploration script kept as the record:

    python results/h200/batch/gen5.py PLAN
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
cases = []
for gemm, heads in [(Gemm(4096, 2048, 2048, "f16", "nn", epilogue=truncf), 16),
                    (Gemm(4096, 128, 4096, "f16", "nn", batch=16, epilogue=truncf), 16),
                    (Gemm(1024, 2048, 512, "bf16", "nn", epilogue=truncf), 64),
                    (Gemm(1024, 512, 512, "bf16", "nt", epilogue=truncf), 2),
                    (Gemm(512, 256, 1024, "bf16", "nn", batch=2, epilogue=truncf), 2)]:
    base = replace(fitted(gemm), tma_store=True)
    for s in (base, replace(base, store_heads=heads)):
        hopper.check_problem(gemm, s)
        cases.append((gemm, HOPPER_CANDIDATE, s))
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
