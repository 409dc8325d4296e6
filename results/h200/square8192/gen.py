"""Build the plan of clocks.py's probe (an exploration script kept as the record): bf16 8192³ with a bf16 C
(truncf) on the shipped schedule (`fitted`: cooperative 128x256, persistent, clusters of two sharing B, C stored by
TMA), NN and NT, NN without a cluster, and block a's ·W2 product (4096x2048x8192 f16 NN, f16 C) as shipped.

    python results/h200/square8192/gen.py PLAN
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
nn, nt = (Gemm(8192, 8192, 8192, "bf16", layout, epilogue=truncf) for layout in ("nn", "nt"))
w2 = Gemm(4096, 2048, 8192, "f16", "nn", epilogue=truncf)
cases = [(nn, fitted(nn)), (nn, replace(fitted(nn), cluster_m=1)), (nt, fitted(nt)), (w2, fitted(w2))]
for gemm, s in cases:
    s.check()
    hopper.check_problem(gemm, s)
build_plan(get_target("sm_90a"), [(g, HOPPER_CANDIDATE, s) for g, s in cases], Path(sys.argv[1]), kind="tune")
