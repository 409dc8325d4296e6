"""Tables of measured rows, rendered as Markdown: `pipelines report --table NAME FILE... [-o FILE]`.

Each entry of `TABLES` names the files it reads and renders them:

- `model`: a whole model's end-to-end and per-launch GPU times (`pipelines.model_runner`'s rows file) joined with
  `tune-model`'s model.json (each dispatch's contraction and schedule). Every launch is a row (a dispatch that runs
  several times, e.g. projections sharing one executable, is a row per launch), IREE's default and the tuned module
  side by side; a dispatch the tuned model splits out of an isolated contraction is a row of its own. The end-to-end
  line is each module's median over the runner's rounds.
- `skinny`: skinny and long-K problems, each problem's best project pipeline against IREE's default and the vendor
  library (a `pipelines bench` results.jsonl), with bytes moved, % of the measured copy bandwidth (lines of
  `results/h100/skinny/copy_bandwidth.py` from the same session) and % of the roofline. Bytes moved count A and B read
  once and C written once (f32, or 16-bit for the truncf epilogue); the roofline time is the larger of bytes / copy
  bandwidth and FLOPs / the dense peak (`--peak-tflops`, default 989.4: H100 SXM dense bf16, NVIDIA H100 data sheet).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from transforms.errors import UserError

from .inspect import kernel_prefixes

PEAK_TFLOPS = 989.4  # H100 SXM dense bf16 (NVIDIA H100 data sheet)


class TableError(UserError, ValueError):
    """Files a table cannot be made of; the message is one sentence."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TableOptions:
    tuned: str = "tuned"  # model: the rows file's module names
    default: str = "default"
    peak_tflops: float = PEAK_TFLOPS  # skinny: the roofline's dense peak


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    inputs: tuple[str, ...]  # what each file given is, in order
    options: tuple[str, ...]  # the fields of TableOptions it reads (the CLI refuses the others)
    render: Callable[[list[Path], TableOptions], str]


def kernel_dispatch(kernel: str, dispatches: list[str]) -> str | None:
    """The model.json dispatch a launched kernel belongs to: PTX names the dispatch's function with `$` written `_`
    and the contraction appended (`block_async_dispatch_0_matmul_...` for `module_block$async_dispatch_0`)."""
    matches = [d for d in dispatches if (kernel + "_").startswith(kernel_prefixes(d)[1])]
    return max(matches, key=len) if matches else None


def _launches(launches: list[dict], rows: list[dict]) -> list[tuple[dict, dict, float]]:
    """(launch, its model.json row, GPU µs) for each launch, in order."""
    by_dispatch = {row["dispatch"]: row for row in rows}
    found = []
    for i, launch in enumerate(launches):
        name = kernel_dispatch(launch["kernel"], list(by_dispatch))
        if name is None:
            raise TableError(f"launch {i} runs {launch['kernel']}, which is no dispatch of model.json.")
        found.append((dict(launch, dispatch=name), by_dispatch[name], launch["us"]))
    return found


def _product(contraction: str | None) -> tuple | None:
    """A contraction's sizes and type, its layout set aside: an isolated product reads an operand the program
    transposes as a separate dispatch (NN), where IREE's default folds the transpose in (NT)."""
    if contraction is None:
        return None
    shape, _, dtype = contraction.split()
    return shape, dtype


def model_table(rows: dict, summary: dict, tuned: str, default: str) -> str:
    """Launches of IREE's work paired in order; the dispatches the tuned model splits out of its isolated
    contractions (`split_consumer` rows: an operand's transpose, a consumer) are rows of their own, with no
    default counterpart (their work is inside the default's contraction dispatches)."""
    modules = rows["modules"]
    for name in (tuned, default):
        if name not in modules:
            raise TableError(f"the rows file has no module '{name}' (it has {', '.join(modules)}).")
    tuned_all = _launches(modules[tuned].get("dispatches") or [], summary["dispatches"])
    default_all = _launches(modules[default].get("dispatches") or [],
                            summary.get("default_dispatches") or summary["dispatches"])
    paired = [x for x in tuned_all if not x[1].get("split_consumer")]
    if len(paired) != len(default_all):
        raise TableError(f"the two modules run {len(paired)} and {len(default_all)} launches of the model's own work; "
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
            raise TableError(f"launch {i} computes {row['contraction']} (tuned) and {default_row['contraction']} "
                             "(default): the launches cannot be paired.")
        totals[0] += default_us
        what = row["contraction"] or launch["dispatch"].removeprefix("module_")
        lines.append(f"| {i} | {what} | {row['schedule'] or '–'} | {default_us:.1f} | {us:.1f} | "
                     f"{default_us / us:.2f}× |")
    if tuned_all:
        lines.append(f"| all | | | {totals[0]:.1f} | {totals[1]:.1f} | {totals[0] / totals[1]:.2f}× |")
    return "\n".join(lines) + "\n"



def bytes_moved(p: dict) -> int:
    """A and B (16-bit) read once, C written once: f32, or 16-bit for the truncf epilogue."""
    stored = 2 if (p.get("epilogue") or {}).get("kind") == "truncf" else 4
    return (p["m"] * p["k"] + p["k"] * p["n"]) * 2 + p["m"] * p["n"] * stored


def skinny_table(results: Path, copy: Path, peak_tflops: float = PEAK_TFLOPS) -> str:
    """One line per problem (shape, layout, epilogue, type; the label says the last three where they are not nn,
    none, bf16) with a correct row of ours: the fastest against IREE's default
    (left out where IREE's default ran and failed; "–" where the file has no default row) and cuBLAS (the vendor
    time a row of the problem carries; "–" where none does)."""
    gbps = statistics.median(json.loads(line)["gbps_read_plus_write"] for line in copy.read_text().splitlines()
                             if line.strip())
    problems: dict[tuple, dict] = {}
    for line in results.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        p = row["problem"]
        key = (p["m"], p["n"], p["k"], p.get("layout", "nn"), (p.get("epilogue") or {}).get("kind", "none"),
               p.get("dtype", "bf16"))
        entry = problems.setdefault(key, {"problem": p, "ours": []})
        if (row.get("vendor") or {}).get("median_ms") and "vendor" not in entry:
            entry["vendor"] = row["vendor"]["median_ms"]
        if row["pipeline"] == "default":
            entry["default"] = row
        elif row.get("status") == "ok" and row.get("correct"):
            entry["ours"].append(row)
    lines = [f"Copy bandwidth (median of the session's copy_bandwidth runs): {gbps:.0f} GB/s.", "",
             "| M×N×K (bf16) | bytes moved | IREE default µs | best ours µs (pipeline) | ours / default | cuBLAS µs | "
             "ours / cuBLAS | % of copy bandwidth | % of roofline | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (m, n, k, layout, epilogue, dtype), entry in problems.items():
        p, default = entry["problem"], entry.get("default")
        if not entry["ours"] or (default is not None and not default.get("median_ms")):
            continue  # nothing to compare with: no correct row of ours, or IREE's default ran and failed
        best = min(entry["ours"], key=lambda r: r["median_ms"])
        us = best["median_ms"] * 1e3
        default_us = default["median_ms"] * 1e3 if default is not None else 0.0  # 0: not in the file
        cublas = (entry.get("vendor") or 0) * 1e3  # 0: not measured
        moved = bytes_moved(p)
        roofline_us = max(moved / (gbps * 1e3), 2 * m * n * k / (peak_tflops * 1e6))
        shape = (f"{m}×{n}×{k}" + (f" {layout.upper()}" if layout != "nn" else "") + (f" {dtype}" if dtype != "bf16"
                 else "") + (f" ({epilogue})" if epilogue != "none" else ""))
        lines.append(f"| {shape} | {moved / 1e6:.1f} MB | {f'{default_us:.1f}' if default_us else '–'} | "
                     f"{us:.1f} ({best['pipeline']}) | {f'{default_us / us:.2f}×' if default_us else '–'} | "
                     f"{f'{cublas:.1f}' if cublas else '–'} | "
                     f"{f'{cublas / us:.2f}×' if cublas else '–'} | {moved / (us * 1e3) / gbps:.0%} | "
                     f"{roofline_us / us:.0%} | {best['max_rel_error']:.1e} |")
    return "\n".join(lines) + "\n"


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise TableError(f"{path} is not a JSON file ({err}).") from None


def _model(files: list[Path], options: TableOptions) -> str:
    rows, model = (_json(path) for path in files)
    try:
        return model_table(rows, model, options.tuned, options.default)
    except (KeyError, TypeError, AttributeError, ValueError, ZeroDivisionError) as err:
        raise TableError(f"{files[0]} and {files[1]} are not a model runner's rows and a tune-model model.json "
                         f"({type(err).__name__}: {err}).") from None


def _skinny(files: list[Path], options: TableOptions) -> str:
    try:
        return skinny_table(files[0], files[1], options.peak_tflops)
    except (ValueError, KeyError, TypeError, ZeroDivisionError, statistics.StatisticsError) as err:
        raise TableError(f"{files[0]} and {files[1]} are not bench results and copy-bandwidth lines ({err}).") \
            from None


TABLES = {t.name: t for t in (
    Table("model", ("the model runner's rows (JSON)", "tune-model's model.json"), ("tuned", "default"), _model),
    Table("skinny", ("a bench results.jsonl", "copy-bandwidth lines (JSON Lines)"), ("peak_tflops",), _skinny),
)}


def render(name: str, files: list[Path], options: TableOptions = TableOptions()) -> str:
    """The Markdown of table `name` over `files`, or one sentence saying what is wrong with them."""
    entry = TABLES[name]
    if len(files) != len(entry.inputs):
        raise TableError(f"the {name} table reads {len(entry.inputs)} files ({'; '.join(entry.inputs)}), "
                         f"not {len(files)}.")
    for path in files:
        if not path.is_file():
            raise TableError(f"{path} is not a file.")
    return entry.render(files, options)
