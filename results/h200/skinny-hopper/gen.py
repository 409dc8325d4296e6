"""Build the plan of the skinny Hopper sweep (an exploration script kept as the record of what was run, not part
of the tool): for each problem of pipelines/suites/skinny.json plus M = 32 and 48 rows, IREE's default and the Hopper route's persistent cooperative candidates of `tune --route hopper` at the
most stages, groups of 16 (one block row: the group is moot), with K in 1-16 slices.

    python results/h200/skinny-hopper/gen.py PLAN [--dtype bf16] [--layout nn]            # first/
    python results/h200/skinny-hopper/gen.py PLAN --second                                # second/
"""
import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.bench import build_plan, plan_for  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import most_stages  # noqa: E402
from pipelines.tune import kernel_candidates  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Gemm  # noqa: E402


def shapes() -> list[tuple[int, int, int]]:
    suite = json.loads((Path(__file__).resolve().parents[3] / "pipelines/suites/skinny.json").read_text())
    found = [tuple(int(v) for v in p["shape"].split("x")) for p in suite["problems"]]
    wide = sorted({(n, k) for m, n, k in found if m == 16})
    return found + [(m, n, k) for m in (32, 48) for n, k in wide]


def schedules(gemm: Gemm, target) -> list[hopper.HopperSchedule]:
    """The shipped schedule, then each persistent cooperative tile of the search (64-row ones of one consumer warp
    group for M <= 64, else 128-row) at its most stages, in clusters of 2 only where M has more than one block
    row, with K in 1, 2, 4, 8 or 16 slices (those the kernels take)."""
    found = kernel_candidates(gemm, target)
    block_m = 64 if gemm.m <= 64 else 128
    base = [c for c in found if c.kind == "cooperative" and c.persistent and c.group_m == 16 and c.split_k == 1
            and c.block_m == block_m and (c.cluster_m == 1 or gemm.m > block_m)]
    most = {}
    for c in base:  # the most stages of each tile and cluster
        key = (c.block_m, c.block_n, c.cluster_m)
        if key not in most or c.stages > most[key].stages:
            most[key] = c
    out = [hopper.DEFAULT] if hopper.DEFAULT in found else []
    for c in most.values():
        for split in (1, 2, 4, 8, 16):
            s = replace(c, split_k=split)
            try:
                s.check()
                hopper.check_problem(gemm, s)
            except hopper.HopperError:
                continue
            if s not in out:
                out.append(s)
    return out


def second(gemm: Gemm, target) -> list[hopper.HopperSchedule]:
    """The second run's Hopper schedules (after the first, `first/`): for M = 32 and 48 the tiles and slices that
    won at M = 16 and 64; for M = 128 and the long-K problem 64-row tiles of one consumer warp group in clusters of
    2 sharing B (two block rows), K in 1, 2 or 4 slices."""
    if gemm.m in (32, 48):
        picks = [(64, 256, 1, s) for s in (2, 4, 8)] + [(64, 128, 1, s) for s in (1, 2, 4)]
    elif gemm.m >= 128:
        picks = [(64, n, 2, s) for n in (128, 256) for s in (1, 2, 4)]
    else:
        return []
    out = []
    for block_m, block_n, cluster_m, split in picks:
        s = hopper.HopperSchedule(block_m=block_m, block_n=block_n, stages=most_stages(block_m, block_n, 1), kind="cooperative",
                                  persistent=True, group_m=16, cluster_m=cluster_m, consumers=1, split_k=split)
        try:
            s.check()
            hopper.check_problem(gemm, s)
        except hopper.HopperError as err:
            print(f"{gemm.shape_name}: {err}", file=sys.stderr)
            continue
        out.append(s)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("plan", type=Path)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--layout", default="nn")
    parser.add_argument("--second", action="store_true", help="the second run's plan (see `second`): the "
                        "split-k pipeline's rule on every problem, and `second`'s Hopper schedules")
    parser.add_argument("--count", action="store_true", help="print the cases, compile nothing")
    args = parser.parse_args()
    target = get_target("sm_90a")
    cases = []
    for m, n, k in shapes():
        gemm = Gemm(m, n, k, args.dtype, args.layout)
        if args.second:
            cases += [(gemm, "split-k", plan_for("split-k", gemm, target, None))]
            cases += [(gemm, HOPPER_CANDIDATE, s) for s in second(gemm, target)]
            continue
        cases += [(gemm, "default", None)]
        cases += [(gemm, HOPPER_CANDIDATE, s) for s in schedules(gemm, target)]
    if args.count:
        for g, p, s in cases:
            print(g.shape_name, p, s.describe() if s else "")
        print(len(cases), "cases")
        return
    build_plan(target, cases, args.plan, kind="tune")


if __name__ == "__main__":
    main()
