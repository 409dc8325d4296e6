"""Build the plan of block a's two product shapes on the shipped Hopper schedule, f16 with an f16 C (truncf), NN
(an exploration script kept as the record), for Nsight Compute to count their cycles beside cuBLAS's (run2.sh).

    python results/h200/timeline/gen.py PLAN
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

if Path(sys.argv[1]).exists():
    sys.exit(f"{sys.argv[1]} exists; give a new folder.")
cases = [(Gemm(4096, 2048, k, "f16", "nn", epilogue=Epilogue("truncf")), HOPPER_CANDIDATE, hopper.DEFAULT)
         for k in (2048, 8192)]
build_plan(get_target("sm_90a"), cases, Path(sys.argv[1]), kind="tune")
