"""Rendering benchmark results: `results.jsonl` -> CSV, a Markdown table and a PNG plot.

Rows of one problem are grouped; each pipeline's TFLOP/s is shown with its ratio to IREE's default of the same
run and to the vendor library of the same run, and a row that failed (compile, run or correctness) says so
instead of showing a number. Every output names the device, driver, IREE version and git commit it came from.
"""

from __future__ import annotations

import csv
import json
import sys
from numbers import Real
from pathlib import Path

from transforms.problem import describe_epilogue

from .output import output_folder
from .runner import RunError, read_results, row_kinds

REPORT_FILES = ("results.csv", "results.md", "results.png")  # what `write_reports` writes, in this order
# What every row needs (tune's ranking reads these too); a row whose status is "ok" also needs a positive number
# for "tflops". Rendering a table also needs the problem.
_ROW_KEYS = {"id": str, "pipeline": str, "status": str}
_PROBLEM_KEYS = {"dtype": str, "m": int, "n": int, "k": int, "layout": str}
_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object"}


def load_rows(results: Path, with_problem: bool = False) -> list[dict]:
    """The latest row of each case in `results` (a re-run replaces the older row), each checked to be a row the
    runner writes (with its problem, if `with_problem`); anything else is a RunError naming the row."""
    torn: list[int] = []
    rows = read_results(results, torn)
    if torn and not rows:
        raise RunError(f"{results} holds no whole row: its only line is cut off (a run stopped while writing it).")
    if torn:  # rows before a run was killed mid-write: render them, and say what was left out
        sys.stderr.write(f"warning: skipping the last line ({torn[0]}) of {results}: not a whole row (a run stopped "
                         "while writing it).\n")
    latest = {}
    for number, row in enumerate(rows, 1):
        wrong = _row_problem(row, with_problem)
        if wrong:
            raise RunError(f"row {number} of {results} {wrong}; it was not written by the runner.")
        latest[row["id"]] = row
    return list(latest.values())


def _wrong_keys(record: dict, keys: dict, where: str) -> str | None:
    for key, kind in keys.items():
        value = record.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"has {where}'{key}' {json.dumps(value)[:40]}, not {_KIND_NAMES[kind]}"
    return None


def _row_problem(row, with_problem: bool) -> str | None:
    if not isinstance(row, dict):
        return "is not a JSON object"
    wrong = _wrong_keys(row, _ROW_KEYS, "")
    if wrong:
        return wrong
    if with_problem:
        if not isinstance(row.get("problem"), dict):
            return f"has 'problem' {json.dumps(row.get('problem'))[:40]}, not an object"
        wrong = _wrong_keys(row["problem"], _PROBLEM_KEYS, "problem ")
        if wrong:
            return wrong
        if not (row["problem"].get("batch") is None or isinstance(row["problem"]["batch"], int)):
            return "has a problem batch that is not an integer"
    numbers = [("tflops", row.get("tflops"))] if row["status"] == "ok" else []
    if isinstance(row.get("vendor"), dict):
        numbers.append(("vendor tflops", row["vendor"].get("tflops")))
    elif row.get("vendor") not in (None, False):
        return "has a 'vendor' that is not an object"
    for name, value in numbers:  # rates are divided by
        if not isinstance(value, Real) or isinstance(value, bool) or not float(value) > 0:
            return f"has {name} {json.dumps(value)[:40]}, not a positive number"
    error = row.get("max_rel_error")
    if error is not None and (not isinstance(error, Real) or isinstance(error, bool)):
        return f"has max_rel_error {json.dumps(error)[:40]}, not a number"
    return None


def problem_key(row: dict) -> tuple:
    p = row["problem"]
    return (p["dtype"], p["batch"] or 0, p["m"], p["n"], p["k"], p["layout"])


def problem_name(row: dict) -> str:
    p = row["problem"]
    shape = "x".join(str(v) for v in (p["batch"], p["m"], p["n"], p["k"]) if v)
    return f"{p['dtype']} {shape} {p['layout'].upper()}"


def provenance(rows: list[dict]) -> str:
    first = next((r for r in rows if r.get("device_name")), rows[0] if rows else {})
    return (f"device {first.get('device_name')}, driver {first.get('driver')}, IREE compiler "
            f"{first.get('iree_compiler')}, runtime {first.get('iree_runtime')}, commit {first.get('git_commit')}")


SHARED_MARK = "*"  # a row that shares another case's kernel and measurement (runner.run_case)
SHARED_NOTE = {  # what the mark means, in a measured and in a predicted (`--device model`) report
    False: "IREE's own kernel, as in `default` (the pipeline leaves the problem to IREE's heuristic): compiled and "
           "timed once, in the row's first pipeline that runs it.",
    True: "the same kernel (ISA and configuration) as another case: predicted once."}


def _cell(row: dict | None) -> str:
    if row is None:
        return "–"
    if row["status"] != "ok":
        return f"{row['status']}"
    return f"{row['tflops']:.3g}{SHARED_MARK if row.get('measured_as') else ''}"


def tables(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    pipelines = sorted({r["pipeline"] for r in rows}, key=lambda n: (n != "default", n))
    header = ["problem"] + [f"{p} TFLOP/s" for p in pipelines]
    header += [f"{p} / default" for p in pipelines if p != "default"]
    header += ["vendor TFLOP/s"] + [f"{p} / vendor" for p in pipelines] + ["all correct", "max rel. error"]
    body = []
    for key in sorted({problem_key(r) for r in rows}):
        group = {r["pipeline"]: r for r in rows if problem_key(r) == key}
        default = group.get("default")
        vendor = next((r["vendor"] for r in group.values() if r.get("vendor")), None)
        line = [problem_name(next(iter(group.values())))]
        line += [_cell(group.get(p)) for p in pipelines]
        for p in pipelines:
            if p == "default":
                continue
            this = group.get(p)
            line.append(f"{this['tflops'] / default['tflops']:.2f}×"
                        if default and this and default["status"] == "ok" and this["status"] == "ok" else "–")
        line.append(f"{vendor['tflops']:.3g}" if vendor else "–")
        for p in pipelines:
            this = group.get(p)
            line.append(f"{this['tflops'] / vendor['tflops']:.2f}×" if vendor and this and this["status"] == "ok"
                        else "–")
        # A case a named pipeline refused before compiling ran nothing, so it has no result to be wrong.
        ran = [r for r in group.values() if r["status"] != "refused"]
        line.append("not checked (predicted)" if any(r.get("predicted") for r in ran) else
                    "yes" if ran and all(r.get("correct") for r in ran) else "NO")
        errors = [r["max_rel_error"] for r in group.values() if r.get("max_rel_error") is not None]
        line.append(f"{max(errors):.1e}" if errors else "–")
        body.append(line)
    return header, body


CSV_COLUMNS = ["problem", "pipeline", "schedule", "status", "correct", "max_rel_error", "median_ms", "min_ms",
               "max_ms", "samples", "tflops", "pct_peak", "device", "repeat", "measured_as", "predicted"]


def _csv_rows(rows: list[dict]) -> list[list]:
    """One line per measured case (the vendor library as its own pipeline), in problem order."""
    out = []
    for row in sorted(rows, key=lambda r: (problem_key(r), r["pipeline"])):
        measured = [(row["pipeline"], row.get("schedule"), row)]
        if row.get("vendor"):
            measured.append(("vendor", "torch.matmul", dict(row["vendor"], status="ok", correct=None)))
        for pipeline, schedule, data in measured:
            out.append([problem_name(row), pipeline, schedule, data.get("status", row["status"]), data.get("correct"),
                        data.get("max_rel_error")] + [data.get(k) for k in ("median_ms", "min_ms", "max_ms",
                                                                            "samples", "tflops", "pct_peak")]
                       + [row.get("device"), row.get("repeat"), data.get("measured_as"), bool(row.get("predicted"))])
    return out


def write_reports(results: Path, out: Path, title: str = "GEMM benchmark", force: bool = False) -> list[Path]:
    """results.csv, results.md and results.png in `out` (with the plan, or a folder of their own; a folder holding
    files this tool did not write only with `force`, and those files stay)."""
    rows = load_rows(results, with_problem=True)
    if not rows:
        raise RunError(f"{results} holds no results yet; run the plan first (`pipelines bench` or "
                       "`python -m pipelines.runner`).")
    kinds = row_kinds(rows)
    predicted = True in kinds
    if len(kinds) > 1:
        raise RunError(f"{results} mixes predicted and measured rows; a report never puts them in one ratio. Keep "
                       "each kind in a plan folder of its own.")
    header, body = tables(rows)
    with output_folder(out, "report", force) as folder:
        csv_path, md_path, png_path = (folder / name for name in REPORT_FILES)
        with csv_path.open("w", newline="") as handle:
            handle.write(f"# {provenance(rows).replace(',', ';')}\n")
            writer = csv.writer(handle)
            writer.writerow(CSV_COLUMNS)
            writer.writerows(_csv_rows(rows))
        kind = ["All TFLOP/s and ratios below are PREDICTED by the AMD timing model (calibrated on published MI355X "
                "times), not measured; numerics were not checked.", ""] if predicted else []
        lines = [f"# {title}" + (" (PREDICTED)" if predicted else ""), "", provenance(rows), "", *kind,
                 "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(line) + " |" for line in body]
        if any(row.get("measured_as") for row in rows):
            lines += ["", f"{SHARED_MARK} {SHARED_NOTE[predicted]}"]
        md_path.write_text("\n".join(lines) + "\n")
        _plot(rows, png_path, f"{title}{' (PREDICTED, not measured)' if predicted else ''}\n{provenance(rows)}")
    return [out / name for name in REPORT_FILES]


def _plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({problem_key(r) for r in rows})
    pipelines = sorted({r["pipeline"] for r in rows}, key=lambda n: (n != "default", n))
    series: dict[str, list] = {p: [] for p in pipelines}
    series["vendor"] = []
    for key in keys:
        group = {r["pipeline"]: r for r in rows if problem_key(r) == key}
        for p in pipelines:
            r = group.get(p)
            series[p].append(r["tflops"] if r and r["status"] == "ok" else 0.0)
        vendor = next((r["vendor"] for r in group.values() if r.get("vendor")), None)
        series["vendor"].append(vendor["tflops"] if vendor else 0.0)
    if not any(series["vendor"]):
        del series["vendor"]
    names = [problem_name(next(r for r in rows if problem_key(r) == k)) for k in keys]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(min(20, max(8, 0.22 * len(keys) * len(series))), 6))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(keys))], values, width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(keys))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TFLOP/s (failed or absent = 0)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def describe_choice(choice: dict) -> str:
    lines = [f"  chose {choice['chosen']}: {choice['why']}"]
    if choice["rows"]:
        lines.append("    PREDICTED by the timing model, not measured:")
    for row in choice["rows"]:
        time_ = f"{row['microseconds']:10.1f} us" if row["microseconds"] is not None else f"{'-':>13}"
        mark = "  <- chosen" if row["name"] == choice["chosen"] else ""
        lines.append(f"      {row['name']:<24}{time_}  {row['note']}{mark}")
    if choice.get("cached"):
        lines.append(f"    (predictions read from {choice['cached']}, not made now)")
    if choice.get("cache_note"):
        lines.append(f"    ({choice['cache_note']})")
    return "\n".join(lines)


def render_report(report: dict) -> str:
    lines = [f"target {report['target']}, pipeline {report['pipeline']}"]
    if report.get("choice"):
        lines.append(describe_choice(report["choice"]))
    for problem, summary in zip(report["problems"], report["schedule_summary"]):
        shape = "x".join(str(problem[k]) for k in ("batch", "m", "n", "k") if problem[k] is not None)
        lines.append(f"  gemm {shape} {problem['dtype']} {problem['layout']} epilogue "
                     f"{describe_epilogue(problem['epilogue']['kind'])}: {summary}")
    if report.get("split_k", {}).get("why"):
        lines.append(f"  why: {report['split_k']['why']}")
    if report.get("padded_to"):
        lines.append(f"  padded to {report['padded_to']}: A and B zero-padded to whole tiles, the result sliced back")
    lines.append("  verified: every requested choice found in the output" if report["verified"]
                 else "  verified: nothing requested (IREE's own choices)")
    for k in report["dispatches"]:
        mma = ", ".join(f"{n}x {op}" for op, n in k["mma"].items()) or "none"
        lines.append(f"  {k['dispatch']}: mma {mma}")
        lines.append(f"    LDS {k['lds_bytes']} B, VGPR {k['vgpr_count']}, AGPR {k['agpr_count']}, "
                     f"SGPR {k['sgpr_count']}, spills {k['spill_count']}, occupancy {k['occupancy']} waves/SIMD, "
                     f"workgroup {k['workgroup_size']}")
        lines.append(f"    global loads {k['global_loads']} (direct-to-LDS {k['dma_loads']}), stores "
                     f"{k['global_stores']}, LDS reads {k['lds_reads']}, writes {k['lds_writes']}, barriers "
                     f"{k['barriers']}, s_setprio {k['setprio']}")
        hopper = {"TMA copies": k.get("tensor_copies"), "bulk copies": k.get("bulk_copies"),
                  "mbarrier waits": k.get("mbarrier_waits"), "mbarrier arrives": k.get("mbarrier_arrives")}
        if any(hopper.values()):
            lines.append("    " + ", ".join(f"{name} {count}" for name, count in hopper.items()))
    return "\n".join(lines)
