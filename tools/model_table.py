"""The measured whole-model table: `pipelines.model_runner`'s rows (end to end and per launch) joined with
`tune-model`'s model.json (each dispatch's contraction and schedule).

    python tools/model_table.py ROWS.json MODEL.json [--tuned tuned] [--default default] > table.md

Every launch of the call is a row (a dispatch that runs several times, e.g. projections sharing one executable,
is a row per launch), with IREE's default and the tuned module's GPU times side by side; a dispatch that the tuned
model splits out of an isolated contraction (tune-model's split-out rows) is a row of its own. The end-to-end line
is each module's median over the runner's rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def kernel_dispatch(kernel: str, dispatches: list[str]) -> str | None:
    """The model.json dispatch a launched kernel belongs to: PTX names the dispatch's function with `$` written `_`
    and the contraction appended (`block_async_dispatch_0_matmul_...` for `module_block$async_dispatch_0`)."""
    matches = [d for d in dispatches if kernel == _ptx_name(d) or kernel.startswith(_ptx_name(d) + "_")]
    return max(matches, key=len) if matches else None


def _ptx_name(dispatch: str) -> str:
    # inspect.kernel_prefixes says the same, but importing pipelines.inspect loads the compiler, which the GPU
    # machine this tool runs on does not have
    return dispatch.removeprefix("module_").replace("$", "_")


def _launches(launches: list[dict], rows: list[dict]) -> list[tuple[dict, dict, float]]:
    """(launch, its model.json row, GPU µs) for each launch, in order."""
    by_dispatch = {row["dispatch"]: row for row in rows}
    found = []
    for i, launch in enumerate(launches):
        name = kernel_dispatch(launch["kernel"], list(by_dispatch))
        if name is None:
            raise SystemExit(f"launch {i} runs {launch['kernel']}, which is no dispatch of model.json.")
        found.append((dict(launch, dispatch=name), by_dispatch[name], launch["us"]))
    return found


def _product(contraction: str | None) -> tuple | None:
    """A contraction's sizes and type, its layout set aside: an isolated product reads an operand the program
    transposes as a separate dispatch (NN), where IREE's default folds the transpose in (NT)."""
    if contraction is None:
        return None
    shape, _, dtype = contraction.split()
    return shape, dtype


def table(rows: dict, summary: dict, tuned: str, default: str) -> str:
    """Launches of IREE's work paired in order; the dispatches the tuned model splits out of its isolated
    contractions (`split_consumer` rows: an operand's transpose, a consumer) are rows of their own, with no
    default counterpart (their work is inside the default's contraction dispatches)."""
    modules = rows["modules"]
    for name in (tuned, default):
        if name not in modules:
            raise SystemExit(f"the rows file has no module '{name}' (it has {', '.join(modules)}).")
    tuned_all = _launches(modules[tuned].get("dispatches") or [], summary["dispatches"])
    default_all = _launches(modules[default].get("dispatches") or [],
                            summary.get("default_dispatches") or summary["dispatches"])
    paired = [x for x in tuned_all if not x[1].get("split_consumer")]
    if len(paired) != len(default_all):
        raise SystemExit(f"the two modules run {len(paired)} and {len(default_all)} launches of the model's own work; "
                         "they cannot be paired.")
    env = rows.get("environment", {})
    lines = [f"Device: {env.get('device_name', '?')}; IREE runtime {env.get('iree_runtime', '?')}; "
             f"function `{rows['function']}`.", "",
             f"| | IREE default | tuned ({summary['pipeline']}) | default / tuned |", "|---|---|---|---|"]
    t, d = modules[tuned]["median_ms"], modules[default]["median_ms"]
    lines.append(f"| end to end, median ms | {d:.3f} | {t:.3f} | **{d / t:.2f}×** |")
    lines.append(f"| max rel. error vs float64 | {modules[default]['max_rel_error']:.2e} | "
                 f"{modules[tuned]['max_rel_error']:.2e} | |")
    lines += ["", "GPU time per launch (Nsight Compute), in launch order.", "",
              "| launch | contraction | tuned schedule | default µs | tuned µs | default / tuned |",
              "|---|---|---|---|---|---|"]
    pairs = iter(default_all)
    totals = [0.0, 0.0]
    for i, (launch, row, us) in enumerate(tuned_all):
        totals[1] += us
        if row.get("split_consumer"):
            lines.append(f"| {i} | (split out: {launch['kernel'].split('_dispatch_')[-1]}) | {row['schedule']} | – | "
                         f"{us:.1f} | |")
            continue
        default_launch, default_row, default_us = next(pairs)
        twin = row.get("default_twin")
        if _product(row["contraction"]) != _product(default_row["contraction"]) or (
                twin is not None and twin != default_launch["dispatch"]):
            raise SystemExit(f"launch {i} computes {row['contraction']} (tuned) and {default_row['contraction']} "
                             "(default): the launches cannot be paired.")
        totals[0] += default_us
        what = row["contraction"] or launch["dispatch"].removeprefix("module_")
        lines.append(f"| {i} | {what} | {row['schedule'] or '–'} | {default_us:.1f} | {us:.1f} | "
                     f"{default_us / us:.2f}× |")
    if tuned_all:
        lines.append(f"| all | | | {totals[0]:.1f} | {totals[1]:.1f} | {totals[0] / totals[1]:.2f}× |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--tuned", default="tuned")
    parser.add_argument("--default", default="default")
    args = parser.parse_args(argv)
    sys.stdout.write(table(json.loads(args.rows.read_text()), json.loads(args.model.read_text()), args.tuned,
                           args.default))
    return 0


if __name__ == "__main__":
    sys.exit(main())
