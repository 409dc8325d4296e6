"""Compile every generated warp-group kernel for every target, layout and input type it covers, run each on the
CPU emulator, and print one line per combination (the README's "combinations" claim).

    python tools/emulate_kernels.py [--shape 256x256x256] [--seed 0]
    python tools/emulate_kernels.py --held-out [--jobs 2] [-o results/emulator/held-out.md]

`--held-out` runs each combination at four shapes no test uses instead of one: whole tiles of the kernel (the
kernels take no others), each a different odd multiple of its M, N and K tiles (`held_out_shapes`), and writes a
Markdown table with `-o`. Exit status 1 if any combination fails to match float64 or reports a hazard.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pipelines import flow
from pipelines.emulator import emulate_gemm
from pipelines.output import write_atomic
from pipelines.targets import TARGETS, kernel_targets
from transforms.errors import UserError
from transforms.kernels import KERNELS, UkernelError, kernel_schedule
from transforms.problem import Gemm, parse_shape
from pipelines.routes.ukernel import UkernelRoute

UKERNEL = UkernelRoute.name  # the route's name, as a job names it

# Multiples of the kernel's (M, N, K) tile: none is a shape of the tests (256³ and whole-tile squares, which use
# 1 or 2 tiles of M and N), each has an odd count of tiles along two axes, and K runs 2 to 5 steps (the loops'
# prologue, steady state and drain).
HELD_OUT = ((3, 1, 3), (1, 3, 5), (3, 2, 2), (5, 3, 3))


def held_out_shapes(tile: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    m, n, k = tile
    return [(m * a, n * b, k * c) for a, b, c in HELD_OUT]


def combinations() -> list[tuple[str, str, str, str]]:
    """(kernel, target, dtype, layout) for every combination the generator takes."""
    found = []
    for name in KERNELS:
        for target_name in kernel_targets(name):
            target = TARGETS[target_name]
            for dtype in target.dtypes:
                for layout in ("nt", "nn", "tn"):
                    schedule = kernel_schedule(name, dtype, target)
                    m, n, k = schedule.tile
                    try:
                        flow.prepare(flow.Job(target, name, (Gemm(m, n, 2 * k, dtype, layout),), (None,),
                                              route=UKERNEL, plan=schedule))
                    except (UkernelError, ValueError):
                        continue  # not generated for this combination (one sentence at the CLI)
                    found.append((name, target_name, dtype, layout))
    return found


def run_one(case: tuple[str, str, str, str, tuple[int, int, int], int]) -> dict:
    name, target_name, dtype, layout, (m, n, k), seed = case
    target = TARGETS[target_name]
    started = time.monotonic()
    row = {"kernel": name, "target": target_name, "dtype": dtype, "layout": layout, "shape": f"{m}x{n}x{k}"}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "k"
        job = flow.Job(target, name, (Gemm(m, n, k, dtype, layout),), (None,),
                       route=UKERNEL, plan=kernel_schedule(name, dtype, target))
        try:
            flow.compile_job(flow.prepare(job), folder)
        except UserError as err:  # a shape the shipped kernel does not compile for is a finding, not a crash
            return dict(row, passed=False, note=f"not compiled: {str(err).splitlines()[0][:160]}",
                        seconds=time.monotonic() - started)
        result = emulate_gemm(folder, seed=seed)
    return dict(row, passed=result.passed, error=result.max_rel_error, tolerance=result.tolerance,
                hazards=len(result.hazards), conflicts=result.lds_conflict_cycles, note="",
                seconds=time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="256x256x256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--held-out", action="store_true", help="four held-out whole-tile shapes per combination")
    parser.add_argument("--jobs", type=int, default=1, help="processes (compile and emulate in parallel)")
    parser.add_argument("-o", "--output", type=Path, help="write a Markdown table (with --held-out)")
    args = parser.parse_args()
    if args.output is not None and (not args.held_out or args.output.exists()):
        print("emulate_kernels: -o takes a new file and goes with --held-out.", file=sys.stderr)
        return 2
    started = time.monotonic()
    cases = []
    for name, target_name, dtype, layout in combinations():
        tile = kernel_schedule(name, dtype, TARGETS[target_name]).tile
        shapes = held_out_shapes(tile) if args.held_out else [tuple(parse_shape(args.shape)[-3:])]
        cases += [(name, target_name, dtype, layout, shape, args.seed) for shape in shapes]
    rows = []
    # spawn, not fork: the parent has MLIR contexts (and their threads) from finding the combinations
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(run_one, cases):
            rows.append(row)
            outcome = row["note"] or (f"max rel error {row['error']:.1e}, hazards {row['hazards']}, LDS conflict "
                                      f"cycles {row['conflicts']}")
            print(f"{'PASS' if row['passed'] else 'FAIL'} {row['kernel']:20} {row['target']:8} {row['layout']} "
                  f"{row['dtype']:12} {row['shape']:16} {outcome}", flush=True)
    failed = sum(not r["passed"] for r in rows)
    combos = len({(r["kernel"], r["target"], r["dtype"], r["layout"]) for r in rows})
    summary = (f"{len(rows) - failed} of {len(rows)} runs ({combos} combinations) match float64 with no hazard, "
               f"in {time.monotonic() - started:.0f} s")
    print(summary)
    if args.output is not None:
        lines = ["| kernel | target | dtype | layout | shape | emulate | max rel. error / tolerance | hazards | "
                 "LDS bank-conflict cycles |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['kernel']} | {r['target']} | {r['dtype']} | {r['layout']} | {r['shape']} | "
                  + (f"FAIL | {r['note']} | – | – |" if r["note"] else
                     f"{'PASS' if r['passed'] else 'FAIL'} | {r['error']:.2e} / {r['tolerance']:.2e} | "
                     f"{r['hazards']} | {r['conflicts']} |") for r in rows]
        write_atomic(args.output, "\n".join(lines + ["", summary, ""]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
