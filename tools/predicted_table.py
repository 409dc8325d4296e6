"""The README's table of PREDICTED speed: IREE's default, `tuned`, `auto` and every generated warp-group kernel on
each AMD target, through `pipelines compile` and `pipelines predict` (predictions of the timing model, not
measurements).

    python tools/predicted_table.py --shapes 4096x4096x4096 8192x8192x8192 -o results/predicted/table.md
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pipelines import cli
from pipelines.output import write_atomic
from pipelines.targets import TARGETS
from pipelines.timing.predict import predict
from transforms.errors import UserError

CHOICES = [("default", ["--pipeline", "default"]), ("tuned", ["--pipeline", "tuned"]),
           ("auto", ["--pipeline", "auto"])]


def cases(shapes: list[str]) -> list[tuple[str, str, str, str, list[str]]]:
    found = []
    for target in (t for t in TARGETS.values() if t.timing is not None):
        choices = CHOICES + [(k, ["--schedule", k]) for k in target.kernels]
        for shape in shapes:
            for layout in ("nt", "nn"):
                for name, flags in choices:
                    found.append((target.name, shape, layout, name, flags))
    return found


def _one(case: tuple, root: str) -> str:
    target, shape, layout, name, flags = case
    folder = Path(root) / f"{target}_{shape}_{layout}_{name}"
    argv = ["compile", "--target", target, "--shape", shape, "--dtype", "bf16" if target != "gfx1151" else "f16",
            "--layout", layout, *flags, "-o", str(folder)]
    try:
        with open("/dev/null", "w") as sink:
            saved, sys.stdout = sys.stdout, sink
            try:
                code = cli.main(argv)
            finally:
                sys.stdout = saved
        if code != 0:
            return f"| {target} | {shape} | {layout.upper()} | {name} | – | – | – | not compiled (exit {code}) |"
        p = predict(folder)
    except UserError as err:
        return f"| {target} | {shape} | {layout.upper()} | {name} | – | – | – | {str(err)[:140]} |"
    return (f"| {target} | {shape} | {layout.upper()} | {name} | {p.microseconds:.0f} | {p.tflops:.0f} | "
            f"{100 * (p.peak_fraction or 0):.0f} % | {p.bound} ({p.seconds:.1f} s) |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x4096x4096"])
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.output.exists():
        print(f"{args.output} exists; give a new file name.", file=sys.stderr)
        return 2
    todo = cases(args.shapes)
    with tempfile.TemporaryDirectory() as root:
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            lines = list(pool.map(_one, todo, [root] * len(todo)))
    head = ["| target | shape | layout | pipeline / kernel | PREDICTED µs | PREDICTED TFLOP/s | of peak | bound "
            "(prediction time) |", "|---|---|---|---|---|---|---|---|"]
    write_atomic(args.output, "\n".join(head + lines) + "\n")
    print("\n".join(head + lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
