"""The README's table of PREDICTED speed: IREE's default, `tuned`, `auto` and every generated warp-group kernel on
each AMD target, through `pipelines compile` and `pipelines predict` (predictions of the timing model, not
measurements).

    python tools/predicted_table.py --shapes 4096x4096x4096 8192x8192x8192 -o results/predicted/table.md
    python tools/predicted_table.py --suites square llm awkward --choices default auto -o results/predicted/auto.md

With `--suites`, the problems (shape and layout) are the named suites' (`pipelines/suites`), and the table ends with
each target's smallest ratio of IREE's default's PREDICTED time to each other choice's.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pipelines import cli
from pipelines.bench import load_suite
from pipelines.output import write_atomic
from pipelines.targets import TARGETS
from pipelines.timing.predict import predict
from transforms.errors import UserError

CHOICES = [("default", ["--pipeline", "default"]), ("tuned", ["--pipeline", "tuned"]),
           ("auto", ["--pipeline", "auto"])]


def cases(problems: list[tuple[str, str]], only: list[str] | None = None) -> list[tuple[str, str, str, str, list[str]]]:
    """(target, shape, layout, choice, flags) for every AMD target with a timing model; `only`: these choices."""
    found = []
    for target in (t for t in TARGETS.values() if t.timing is not None):
        choices = [c for c in CHOICES + [(k, ["--schedule", k]) for k in target.kernels] if only is None or
                   c[0] in only]
        for shape, layout in problems:
            for name, flags in choices:
                found.append((target.name, shape, layout, name, flags))
    return found


def ratios(todo: list, times: list[float | None]) -> list[str]:
    """Per target and choice: the smallest and the median of IREE's default's time over the choice's, over the
    problems where both were predicted."""
    default = {(t, s, l): us for (t, s, l, name, _), us in zip(todo, times) if name == "default"}
    found: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for (target, shape, layout, name, _), us in zip(todo, times):
        base = default.get((target, shape, layout))
        if name != "default" and us and base:
            found.setdefault((target, name), []).append((base / us, f"{shape} {layout.upper()}"))
    lines = ["", "| target | choice | problems | smallest default/choice (problem) | median |", "|---|---|---|---|---|"]
    for (target, name), values in sorted(found.items()):
        values.sort()
        lines.append(f"| {target} | {name} | {len(values)} | {values[0][0]:.3f} ({values[0][1]}) | "
                     f"{values[len(values) // 2][0]:.3f} |")
    return lines


def _one(case: tuple, root: str) -> tuple[str, float | None]:
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
            return f"| {target} | {shape} | {layout.upper()} | {name} | – | – | – | not compiled (exit {code}) |", None
        p = predict(folder)
    except UserError as err:
        return f"| {target} | {shape} | {layout.upper()} | {name} | – | – | – | {str(err)[:140]} |", None
    chose = ""
    report = json.loads((folder / "report.json").read_text())
    if report.get("choice"):
        chose = f" {report['choice']['chosen']}"
    return (f"| {target} | {shape} | {layout.upper()} | {name}{chose} | {p.microseconds:.0f} | {p.tflops:.0f} | "
            f"{100 * (p.peak_fraction or 0):.0f} % | {p.bound} ({p.seconds:.1f} s) |", p.microseconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x4096x4096"], help="each in NT and NN")
    parser.add_argument("--suites", nargs="+", help="the problems of these suites instead of --shapes")
    parser.add_argument("--choices", nargs="+", help="only these (default, tuned, auto, kernel names)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.output.exists():
        print(f"{args.output} exists; give a new file name.", file=sys.stderr)
        return 2
    if args.suites:
        problems = [(p["shape"], p.get("layout", "nn")) for suite in args.suites for p in load_suite(suite)]
    else:
        problems = [(shape, layout) for shape in args.shapes for layout in ("nt", "nn")]
    todo = cases(list(dict.fromkeys(problems)), args.choices)
    with tempfile.TemporaryDirectory() as root:
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(_one, todo, [root] * len(todo)))
    lines = [line for line, _ in done] + (ratios(todo, [us for _, us in done]) if args.suites else [])
    head = ["| target | shape | layout | pipeline / kernel | PREDICTED µs | PREDICTED TFLOP/s | of peak | bound "
            "(prediction time) |", "|---|---|---|---|---|---|---|---|"]
    write_atomic(args.output, "\n".join(head + lines) + "\n")
    print("\n".join(head + lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
