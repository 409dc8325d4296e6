"""The named-pipeline sweep: every target × named pipeline × input type × layout over a grid of awkward shapes is
compiled and verified, or refused with one sentence before anything compiles. A case that fails after compiling
(a check of the output, iree-compile itself, or an unexpected exception) is a defect of the pipeline's choice.

    .venv/bin/python tools/named_sweep.py [--tier ci|full] [--targets gfx942,...] [--jobs 2] [-o rows.jsonl]

prints one line per case that did not compile and verify, and a count per outcome; the exit code is 1 when any
case failed after compiling. tests/unit/test_named_sweep.py runs the `ci` tier in the test command (`slow` marker)
and the `full` tier under the `sweep` marker.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import sys
import tempfile
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines import flow  # noqa: E402
from pipelines.named import pipelines_for, plan_job, rule_plan  # noqa: E402
from pipelines.targets import TARGETS, TargetError  # noqa: E402
from transforms.errors import UserError  # noqa: E402
from transforms.problem import Gemm, ProblemError  # noqa: E402
from transforms.schedule import ScheduleError  # noqa: E402

# Awkward shapes (batch, M, N, K): primes, 1, one off a tile, tall and skinny, batch, K not a multiple of any
# intrinsic's K, and the shapes issue 12 found failing.
FULL_SHAPES = (
    (None, 127, 131, 67), (None, 1, 4096, 4096), (None, 4096, 1, 4096), (None, 255, 257, 129),
    (None, 257, 513, 129), (None, 256, 256, 100), (None, 1000, 1000, 1000), (None, 1000, 1000, 1024),
    (None, 1024, 1024, 1000), (None, 4000, 4000, 4000), (None, 4096, 4096, 4000), (None, 8, 4096, 4096),
    (None, 4096, 64, 4096), (None, 3072, 2048, 1024), (None, 256, 256, 256), (None, 512, 512, 512),
    (None, 256, 256, 512), (4, 257, 129, 64), (3, 128, 128, 4096), (None, 129, 65, 257),
)
# The CI tier: three awkward kinds (every dimension off a tile and K off the intrinsic's, M = 1, a batch), in one
# input type per family. The full tier has the others (257x513x129, 1000³ and 4000³ left the CI tier when the test
# command passed 15 minutes; whole-tile shapes such as 256x256x256 and 3072x2048x1024 are compiled by most other
# tests).
CI_SHAPES = ((None, 127, 131, 67), (None, 1, 4096, 4096), (4, 257, 129, 64))
NAMED = ("default", "tuned", "auto", "codegen", "codegen-raster", "split-k", "hopper")  # `searched` needs a tune cache
LAYOUTS = ("nn", "nt", "tn")


@dataclass(frozen=True)
class Case:
    target: str
    pipeline: str
    dtype: str
    layout: str
    shape: tuple[int | None, int, int, int]

    @property
    def name(self) -> str:
        batch, m, n, k = self.shape
        return f"{self.target} {self.pipeline} {self.dtype} {self.layout} {'' if batch is None else f'{batch}x'}" \
               f"{m}x{n}x{k}"


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: str  # "ok", "refused" (one sentence before compiling) or "failed" (after compiling, or a crash)
    message: str = ""


def cases(tier: str, targets: tuple[str, ...] | None = None) -> list[Case]:
    """The grid of a tier: `full` every input type of a target and the full shapes; `ci` bf16 and the target's
    first fp8 type, and the CI shapes."""
    shapes = FULL_SHAPES if tier == "full" else CI_SHAPES
    out = []
    for name in targets or tuple(TARGETS):
        target = TARGETS[name]
        dtypes = target.dtypes if tier == "full" else ("bf16",) + target.fp8_types[:1]
        pipelines = [p for p in NAMED if p in pipelines_for(target)]
        for pipeline, dtype, layout, shape in itertools.product(pipelines, dtypes, LAYOUTS, shapes):
            out.append(Case(name, pipeline, dtype, layout, shape))
    return out


REFUSALS = (ProblemError, ScheduleError, TargetError)  # what a named pipeline may raise before compiling


def run_case(case: Case) -> Outcome:
    target = TARGETS[case.target]
    batch, m, n, k = case.shape
    try:
        gemm = Gemm(m, n, k, case.dtype, case.layout, batch)
        # The pipeline's own rule: where `auto` and `tuned` choose by the timing model (`pipelines.pick`), what they
        # choose is this, IREE's default (the `default` cases) or a generated kernel (its own tests).
        prepared = flow.prepare(plan_job(target, case.pipeline, gemm, rule_plan(case.pipeline, gemm, target)))
    except REFUSALS as err:
        message = str(err)
        one = "\n" not in message and message.endswith(".")
        return Outcome(case, "refused" if one else "failed", message if one else f"not one sentence: {message!r}")
    except Exception:  # noqa: BLE001 - a crash before compiling is a defect to report, not to hide
        return Outcome(case, "failed", traceback.format_exc(limit=3).strip().splitlines()[-1])
    with tempfile.TemporaryDirectory(prefix="sweep-") as scratch:
        try:
            flow.compile_job(prepared, Path(scratch) / "out")
        except UserError as err:  # a check of the output, iree-compile, or a refusal that came too late
            return Outcome(case, "failed", str(err).splitlines()[0][:400])
        except Exception:  # noqa: BLE001
            return Outcome(case, "failed", traceback.format_exc(limit=3).strip().splitlines()[-1])
    return Outcome(case, "ok")


def sweep(selected: list[Case], jobs: int = 2) -> list[Outcome]:
    if jobs <= 1:
        return [run_case(c) for c in selected]
    # Spawned, not forked: a process that has built MLIR (pytest, after other tests) holds the bindings' thread
    # locks, and forked workers inherited them locked and hung.
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(run_case, selected, chunksize=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=("ci", "full"), default="full")
    parser.add_argument("--targets", help="comma-separated targets (default: all)")
    parser.add_argument("--pipelines", help="comma-separated named pipelines (default: all that run)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, help="write every outcome as a JSON line here")
    args = parser.parse_args(argv)
    if args.output is not None and args.output.exists():
        parser.error(f"{args.output} exists; name a new file for the rows (nothing is overwritten).")
    selected = cases(args.tier, tuple(args.targets.split(",")) if args.targets else None)
    if args.pipelines:
        selected = [c for c in selected if c.pipeline in args.pipelines.split(",")]
    outcomes = sweep(selected, args.jobs)
    if args.output:
        args.output.write_text("".join(json.dumps(asdict(o)) + "\n" for o in outcomes))
    for outcome in outcomes:
        if outcome.status != "ok":
            print(f"{outcome.status:8} {outcome.case.name}: {outcome.message}")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ok", "refused", "failed")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
