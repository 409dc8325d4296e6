"""Schedule search for one problem on one target: enumerate, prune, compile, benchmark, keep the best.

Candidates come from the route searched (`pipelines.routes`): on the schedule route the product of tiles, K steps,
wave grids, intrinsics, prefetch depths and LDS layouts the target supports; `check` prunes what cannot work (and
candidates whose accumulator would take more than half of the registers). Survivors and IREE's default are
compiled into one plan (compile failures are recorded and the search goes on) and run by the runner, which skips
cases already measured, so an interrupted sweep resumes. `finalize` keeps the fastest correct candidate, copies
its tuning spec and `compilation_info` source next to the plan, and records it in a cache keyed by problem,
target and IREE version.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from collections.abc import Sequence
from pathlib import Path

from iree.compiler import version as iree_version

from transforms.problem import Gemm
from transforms.schedule import Schedule
from transforms.split_k import SplitK

from .bench import build_plan
from .named import CODEGEN_CANDIDATE, SPLIT_CANDIDATE, split_candidates
from .output import output_folder, write_atomic
from .report import load_rows
from .routes import codegen_route, schedule_route
from .targets import Target
from .tune_cache import TuneError, cache_key, read_cache

def candidates(gemm: Gemm, target: Target) -> list[Schedule]:
    """The schedules of the target's schedule route that pass its checks (`routes.spec`)."""
    return schedule_route(target).candidates(gemm, target)


def codegen_candidates(gemm: Gemm, target: Target) -> list[Schedule]:
    """Schedules of the target's codegen route that pass its check, one per tile, K step and depth."""
    route = codegen_route(target)
    if route is None:
        raise TuneError(f"{target.name} has no codegen route to search.")
    return route.candidates(gemm, target)


def plan_search(gemm: Gemm, target: Target, folder: Path, limit: int | None = None, codegen: bool = False,
                force: bool = False, keep: Sequence[str] = (), split: bool = False, client=None) -> Path:
    """`split`: search split-K plans (`named.split_candidates`) instead of schedules. `client`: compile the
    candidates on a dask cluster (`pipelines.cluster`)."""
    options: list[Schedule | SplitK] = list(
        (split_candidates if split else codegen_candidates if codegen else candidates)(gemm, target)[:limit])
    label = SPLIT_CANDIDATE if split else CODEGEN_CANDIDATE if codegen else "candidate"
    cases: list[tuple[Gemm, str, Schedule | SplitK | None]] = [(gemm, "default", None)]
    cases += [(gemm, label, s) for s in options]
    return build_plan(target, cases, folder, force, keep, client)


def finalize(gemm: Gemm, target: Target, folder: Path, cache: Path) -> dict:
    """Pick the fastest correct candidate of a measured plan, write `best/` and update the cache."""
    results = folder / "results.jsonl"
    rows = load_rows(results)
    plan = json.loads((folder / "plan.json").read_text())
    missing = {c["id"] for c in plan["cases"]} - {r["id"] for r in rows}
    if missing:
        raise TuneError(f"{len(missing)} of {len(plan['cases'])} cases in {folder} are not measured yet; run "
                        f"`python -m pipelines.runner {folder} --device ...` first.")
    codegen = any(c["pipeline"] == CODEGEN_CANDIDATE for c in plan["cases"])
    split = any(c["pipeline"] == SPLIT_CANDIDATE for c in plan["cases"])
    label = SPLIT_CANDIDATE if split else CODEGEN_CANDIDATE if codegen else "candidate"
    # Predicted rows (`--device model`) have no numerics to check; a plan's rows are all of one kind (runner).
    predicted = any(r.get("predicted") and r["status"] == "ok" for r in rows)
    good = [r for r in rows if r["pipeline"] == label and r["status"] == "ok" and (r.get("correct") or predicted)]
    if not good:
        raise TuneError(f"no candidate in {folder} compiled, ran and gave correct results." if not predicted else
                        f"no candidate in {folder} compiled and was predicted.")
    best = max(good, key=lambda r: r["tflops"])
    default = next((r for r in rows if r["pipeline"] == "default" and r["status"] == "ok"), None)
    case = next(c for c in plan["cases"] if c["id"] == best["id"])
    source = folder / Path(case["vmfb"]).parent
    entries = read_cache(cache)  # before anything is written: a corrupt cache stops here
    summary = {"problem": asdict(gemm), "target": target.name, "iree_compiler": iree_version.VERSION,
               "route": "split-k" if split else "codegen" if codegen else "compilation_info",
               "schedule": case["schedule_fields"], "schedule_summary": best["schedule"],
               "tflops": best["tflops"], "default_tflops": default["tflops"] if default else None,
               "speedup_over_default": best["tflops"] / default["tflops"] if default else None,
               "device": best.get("device_name"), "predicted": predicted,
               **({"numerics": "not checked: a prediction of the timing model; run the best on a GPU or the "
                               "emulator to check it"} if predicted else {}),
               "measured": sum(1 for r in rows if r["status"] == "ok"),
               "failed": sum(1 for r in rows if r["status"] != "ok"), "plan": str(folder)}
    # best/ lies in the tool's plan folder: its files are replaced, anything else a user put there stays.
    with output_folder(folder / "best", "tune", force=True) as out:
        for name in ("spec.mlir", "gemm.mlir", "report.json"):
            if (source / name).exists():
                (out / name).write_bytes((source / name).read_bytes())
        (out / "best.json").write_text(json.dumps(summary, indent=1))
        (out / "ranking.md").write_text(ranking_markdown(rows, summary))
    entries[cache_key(gemm, target, codegen, predicted, split)] = summary
    write_atomic(cache, json.dumps(entries, indent=1))
    return summary


def _error(row: dict) -> str:
    return "–" if row.get("max_rel_error") is None else f"{row['max_rel_error']:.1e}"


def ranking_markdown(rows: list[dict], summary: dict) -> str:
    """Every measured case of a search, fastest first, failures last with their status."""
    p = summary["problem"]
    kind = ["All figures are PREDICTED by the timing model (calibrated on published MI355X times), not measured; "
            "numerics were not checked.", ""] if summary.get("predicted") else []
    lines = [f"# Schedule search: {p['dtype']} {p['m']}x{p['n']}x{p['k']} {p['layout'].upper()} on "
             f"{summary['target']}", "", f"device {summary['device']}, IREE {summary['iree_compiler']}", "", *kind,
             "| rank | pipeline | schedule | TFLOP/s | / default | correct | max rel. error |",
             "|---|---|---|---|---|---|---|"]
    default = summary["default_tflops"]
    ranked = sorted(rows, key=lambda r: -(r.get("tflops") or 0) if r["status"] == "ok" else float("inf"))
    for rank, r in enumerate(ranked, 1):
        ok = r["status"] == "ok"
        ratio = f"{r['tflops'] / default:.2f}×" if ok and default else "–"  # IREE's default may have failed
        correct = "not checked" if r.get("predicted") else "yes" if r.get("correct") else "no"
        lines.append(f"| {rank} | {r['pipeline']} | {r['schedule']} | {r['tflops']:.1f} | "
                     f"{ratio} | {correct} | "
                     f"{_error(r)} |" if ok else
                     f"| {rank} | {r['pipeline']} | {r['schedule']} | {r['status']} | – | no | – |")
    return "\n".join(lines) + "\n"
