"""The measured whole-model table: `pipelines.model_runner`'s rows (end to end and per launch) joined with
`tune-model`'s model.json (each dispatch's contraction and schedule).

    python tools/model_table.py ROWS.json MODEL.json [--tuned tuned] [--default default] > table.md

Every launch of the call is a row (a dispatch that runs several times, e.g. projections sharing one executable,
is a row per launch), with IREE's default and the tuned module's GPU times side by side; the end-to-end line is
each module's median over the runner's rounds.
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
    return dispatch.removeprefix("module_").replace("$", "_")


def table(rows: dict, summary: dict, tuned: str, default: str) -> str:
    modules = rows["modules"]
    by_dispatch = {d["dispatch"]: d for d in summary["dispatches"]}
    launches = {name: modules[name].get("dispatches") or [] for name in (tuned, default)}
    if len(launches[tuned]) != len(launches[default]):
        raise SystemExit(f"the two modules launch {len(launches[tuned])} and {len(launches[default])} kernels; "
                         "their launches cannot be paired.")
    env = rows.get("environment", {})
    lines = [f"Device: {env.get('device_name', '?')}; IREE runtime {env.get('iree_runtime', '?')}; "
             f"function `{rows['function']}`.", "",
             f"| | IREE default | tuned ({summary['pipeline']}) | default / tuned |", "|---|---|---|---|"]
    t, d = modules[tuned]["median_ms"], modules[default]["median_ms"]
    lines.append(f"| end to end, median ms | {d:.3f} | {t:.3f} | **{d / t:.2f}×** |")
    lines.append(f"| max rel. error vs float64 | {modules[default]['max_rel_error']:.2e} | "
                 f"{modules[tuned]['max_rel_error']:.2e} | |")
    lines += ["", "| launch | dispatch | contraction | tuned schedule | default µs | tuned µs | default / tuned |",
              "|---|---|---|---|---|---|---|"]
    totals = [0.0, 0.0]
    for i, (lt, ld) in enumerate(zip(launches[tuned], launches[default])):
        name = kernel_dispatch(lt["kernel"], list(by_dispatch))
        if name is None or name != kernel_dispatch(ld["kernel"], list(by_dispatch)):
            raise SystemExit(f"launch {i} runs {lt['kernel']} (tuned) and {ld['kernel']} (default), which model.json "
                             "does not pair.")
        row = by_dispatch[name]
        totals[0] += ld["us"]
        totals[1] += lt["us"]
        lines.append(f"| {i} | {name.removeprefix('module_')} | {row['contraction'] or '(none)'} | "
                     f"{row['schedule'] or '–'} | {ld['us']:.1f} | {lt['us']:.1f} | {ld['us'] / lt['us']:.2f}× |")
    if launches[tuned]:
        lines.append(f"| all | | | | {totals[0]:.1f} | {totals[1]:.1f} | {totals[0] / totals[1]:.2f}× |")
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
