"""Build the plan of the stream-K synchronization check (prepared for the next GPU session, not run yet): the
stream-K kernel (`HopperSchedule.stream_k`) on 8192³ bf16 NT and 4096³ bf16 NN, C in the input type, compiled with
ONE dispatch a call (the runner's plans repeat a dispatch, and its float64 check sees only the last repeat, whose
scratch already holds the same partial products), under PLAN/sk1. `sync_check.py` then calls each with two
different pairs of inputs in turn and checks every call's C against its own float64 product: an owner that read a
partial product before its flag would read the other inputs' partial, left by the call before.

    python results/h200/line2/cluster/gen_sync.py PLAN
"""
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
import pipelines.bench as bench  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

plan = Path(sys.argv[1])
if plan.exists():
    sys.exit(f"{plan} exists; give a new folder.")
bench.repeat_count = lambda *_args, **_kwargs: 1  # one dispatch a call (read by build_plan)
truncf = Epilogue("truncf")
cases = []
for gemm in (Gemm(8192, 8192, 8192, "bf16", "nt", epilogue=truncf), Gemm(4096, 4096, 4096, "bf16", "nn",
                                                                         epilogue=truncf)):
    s = replace(fitted(gemm), stream_k=True)
    hopper.check_problem(gemm, s)
    assert hopper.stream_split(gemm, s) is not None
    cases.append((gemm, HOPPER_CANDIDATE, s))
bench.build_plan(get_target("sm_90a"), cases, plan / "sk1", kind="tune")
