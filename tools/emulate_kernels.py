"""Compile every generated warp-group kernel for every target, layout and input type it covers, run each on the
CPU emulator, and print one line per combination (the README's "81 combinations" claim).

    python tools/emulate_kernels.py [--shape 256x256x256] [--seed 0]

Exit status 1 if any combination fails to match float64 or reports a hazard.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from pipelines import flow
from pipelines.emulator import emulate_gemm
from pipelines.targets import TARGETS, kernel_targets
from transforms.kernels import KERNELS, UkernelError, kernel_schedule
from transforms.problem import Gemm, parse_shape


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="256x256x256")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    m, n, k = parse_shape(args.shape)[-3:]
    failed = ran = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in KERNELS:
            for target_name in kernel_targets(name):
                target = TARGETS[target_name]
                for dtype in target.dtypes:
                    for layout in ("nt", "nn", "tn"):
                        gemm = Gemm(m, n, k, dtype, layout)
                        try:
                            job = flow.Job(target, name, (gemm,), (None,),
                                           ukernel=kernel_schedule(name, dtype, target))
                            prepared = flow.prepare(job)
                        except (UkernelError, ValueError):
                            continue  # not generated for this combination (one sentence at the CLI)
                        folder = Path(scratch) / f"{name}_{target_name}_{dtype}_{layout}"
                        flow.compile_job(prepared, folder)
                        result = emulate_gemm(folder, seed=args.seed)
                        ran += 1
                        failed += not result.passed
                        print(f"{'PASS' if result.passed else 'FAIL'} {name:20} {target_name:8} {layout} {dtype:12} "
                              f"max rel error {result.max_rel_error:.1e}, hazards {len(result.hazards)}, "
                              f"LDS conflict cycles {result.lds_conflict_cycles}", flush=True)
    print(f"{ran - failed} of {ran} combinations match float64 with no hazard")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
