"""Schedule search for one problem on one target: enumerate, prune, compile, benchmark, keep the best.

Candidates come from the route searched (`pipelines.routes`): on the schedule route the product of tiles, K steps,
wave grids, intrinsics, prefetch depths and LDS layouts the target supports; `check` prunes what cannot work (and
candidates whose accumulator would take more than half of the registers). Survivors and IREE's default are
compiled into one plan (compile failures are recorded and the search goes on) and run by the runner, which skips
cases already measured, so an interrupted sweep resumes. `finalize` keeps the fastest correct candidate, copies
its tuning spec and `compilation_info` source next to the plan, says whether it beat IREE's default, and records it
in a cache keyed by problem, target, IREE version and search (route, device, candidate limit; `tune_cache.Search`);
`from_cache` leaves the same files for the user when the cache answers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from collections.abc import Callable, Sequence
from pathlib import Path


from transforms.errors import UserError
from transforms.hopper import HopperSchedule
from transforms.stream import KernelPlan, StreamSchedule
from transforms.problem import Gemm
from transforms.schedule import Schedule, schedule_from_dict
from transforms.split_k import SplitK, split_from_dict

from . import flow
from .compiler import compiler_version
from .bench import build_plan
from .named import CODEGEN_CANDIDATE, HOPPER_CANDIDATE, SPLIT_CANDIDATE, plan_job, split_candidates
from .output import output_folder, write_atomic
from .report import load_rows
from .routes import codegen_route, kernel_route, schedule_route
from .targets import ComputeUnits, Target
from .tune_cache import MODEL, Search, TuneError, cache_key, device_kind, read_cache

TunePlan = Schedule | SplitK | KernelPlan


def candidates(gemm: Gemm, target: Target) -> list[Schedule]:
    """The schedules of the target's schedule route that pass its checks (`routes.spec`)."""
    return schedule_route(target).candidates(gemm, target)


def codegen_candidates(gemm: Gemm, target: Target) -> list[Schedule]:
    """Schedules of the target's codegen route that pass its check, one per tile, K step and depth."""
    route = codegen_route(target)
    if route is None:
        raise TuneError(f"{target.name} has no codegen route to search.")
    return route.candidates(gemm, target)


def kernel_candidates(gemm: Gemm, target: Target) -> list[KernelPlan]:
    """The schedules of the target's own kernels (`Target.kernel_route`) that take `gemm`."""
    route = kernel_route(target)
    if route is None:
        raise TuneError(f"{target.name} has no kernels of its own to search (--route hopper is sm_90a's).")
    return route.candidates(gemm, target)  # type: ignore[return-value]


@dataclass(frozen=True)
class Searched:
    """A route `tune` searches: its --route name, its name in the summary and the cache (`tune_cache.ROUTES`), the
    label its candidates carry in a plan (IREE's default is "default"), its candidates in the order --limit keeps
    them (for the device's compute units where the route weighs them), and how a cached plan is read back.
    `checked_first`: tune finds its candidates before anything else, so a route that does not fit the problem or
    target is one sentence at once (the schedule route's search is left to the plan)."""

    option: str
    name: str
    label: str
    find: Callable[[Gemm, Target, ComputeUnits | None], Sequence[TunePlan]]
    read: Callable[[dict], TunePlan]
    checked_first: bool = True


SEARCHES = {s.option: s for s in (
    Searched("config", "compilation_info", "candidate", lambda g, t, u: candidates(g, t), schedule_from_dict,
             checked_first=False),
    Searched("codegen", "codegen", CODEGEN_CANDIDATE, lambda g, t, u: codegen_candidates(g, t), schedule_from_dict),
    Searched("split", "split-k", SPLIT_CANDIDATE, split_candidates, split_from_dict),
    Searched("hopper", "hopper", HOPPER_CANDIDATE, lambda g, t, u: kernel_candidates(g, t),
             lambda fields: StreamSchedule(**fields) if "columns" in fields else HopperSchedule(**fields)),
)}
BY_NAME = {s.name: s for s in SEARCHES.values()}
BY_LABEL = {s.label: s for s in SEARCHES.values()}


def route_candidates(gemm: Gemm, target: Target, route: str) -> list[TunePlan]:
    """Every candidate a search of `route` (a `tune_cache.ROUTES` name) measures, in the order --limit keeps them."""
    return list(BY_NAME[route].find(gemm, target, None))


def search_limit(limit: int | None, found: int) -> int | None:
    """The limit part of a search's cache key: None where --limit keeps every one of the `found` candidates."""
    return limit if limit is not None and limit < found else None


def plan_search(gemm: Gemm, target: Target, folder: Path, limit: int | None = None,
                search: Searched = SEARCHES["config"], force: bool = False, keep: Sequence[str] = (), client=None,
                units: ComputeUnits | None = None) -> Path:
    """The candidates of `search` (split-K plans are ordered around the rule's choice for `units`, the compute units
    of the device that will run them) and IREE's default. `client`: compile the candidates on a dask cluster
    (`pipelines.cluster`). The folder is a tune plan (`output.PLAN_FILES`)."""
    options = list(search.find(gemm, target, units))[:limit]
    cases: list[tuple[Gemm, str, TunePlan | None]] = [(gemm, "default", None)]
    cases += [(gemm, search.label, s) for s in options]
    return build_plan(target, cases, folder, force, keep, client, kind="tune", units=units)


def finalize(gemm: Gemm, target: Target, folder: Path, cache: Path) -> dict:
    """Pick the fastest correct candidate of a measured plan, write `best/` and update the cache."""
    results = folder / "results.jsonl"
    rows = load_rows(results)
    plan = json.loads((folder / "plan.json").read_text())
    missing = {c["id"] for c in plan["cases"]} - {r["id"] for r in rows}
    if missing:
        raise TuneError(f"{len(missing)} of {len(plan['cases'])} cases in {folder} are not measured yet; run "
                        f"`python -m pipelines.runner {folder} --device ...` first.")
    labels = {c["pipeline"] for c in plan["cases"]}
    searched = next((s for label, s in BY_LABEL.items() if label in labels), SEARCHES["config"])
    route, label = searched.name, searched.label
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
    planned = sum(1 for c in plan["cases"] if c["pipeline"] == label)
    try:
        limit = search_limit(planned, len(route_candidates(gemm, target, route)))
    except UserError:  # no candidates today (a plan written by hand or by an older version): not the whole search
        limit = planned
    search = Search(route, MODEL if predicted else device_kind(str(best.get("device_name"))), limit)
    beats, verdict = judge(best["tflops"], default["tflops"] if default else None, predicted)
    summary = {"problem": asdict(gemm), "target": target.name, "iree_compiler": compiler_version(),
               "route": route, "schedule": case["schedule_fields"], "schedule_summary": best["schedule"],
               "tflops": best["tflops"], "default_tflops": default["tflops"] if default else None,
               "speedup_over_default": best["tflops"] / default["tflops"] if default else None,
               "beats_default": beats, "verdict": verdict, "candidates": planned, "limit": search.limit,
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
    key = cache_key(gemm, target, search)
    entries.pop(key, None)  # written last: the `searched` pipeline serves the latest measured search (`cached`)
    entries[key] = summary
    write_atomic(cache, json.dumps(entries, indent=1))
    return summary


def judge(tflops: float, default_tflops: float | None, predicted: bool) -> tuple[bool | None, str]:
    """Whether the best candidate beat IREE's default, and the sentence that says so (None: the default did not
    run). Only a candidate strictly faster than the default is worth a schedule: `searched` serves no other."""
    kind = "was predicted" if predicted else "ran"
    if default_tflops is None:
        return None, (f"IREE's default did not {'predict' if predicted else 'run'} in this search, so the best "
                      f"candidate ({tflops:.1f} TFLOP/s) was not compared with it.")
    ratio = tflops / default_tflops
    if ratio > 1:
        return True, f"the best candidate {kind} at {ratio:.2f}x IREE's default ({tflops:.1f} TFLOP/s)."
    return False, (f"no candidate beat IREE's default: the best {kind} at {ratio:.2f}x its {default_tflops:.1f} "
                   "TFLOP/s, so the searched pipeline leaves this problem to IREE's default.")


def from_cache(gemm: Gemm, target: Target, hit: dict, cache: Path) -> dict[str, str]:
    """What a search leaves in `best/` for the user, from a cache entry: best.json (the entry, naming the cache) and
    the winner's gemm.mlir and spec.mlir, built again as the search built them (`flow.prepare`, no compile). Not
    its report.json (a compile) nor ranking.md (the search's rows are not cached). Nothing is written here: an
    entry that no longer builds stops before the folder is made (`write_best` writes them)."""
    searched = BY_NAME.get(str(hit.get("route")), SEARCHES["config"])
    fields = hit.get("schedule")
    try:
        plan = None if fields is None else searched.read(fields)
        prepared = flow.prepare(plan_job(target, searched.label, gemm, plan))
    except (UserError, TypeError, KeyError, ValueError) as err:  # an entry edited by hand, or of an older tool
        raise TuneError(f"the tune cache {cache} answers this search with a schedule that does not build "
                        f"({str(err).rstrip('.')}); search again with --force.") from None
    files = {flow.SOURCE_FILE: prepared.source, flow.SPEC_FILE: prepared.spec,
             "best.json": json.dumps(dict(hit, answered_from_cache=str(cache)), indent=1)}
    return {name: text for name, text in files.items() if text is not None}


def write_best(folder: Path, files: dict[str, str]) -> None:
    """`files` into the plan folder's `best/`, replacing the tool's files there (a user's other files stay)."""
    with output_folder(folder / "best", "tune", force=True) as out:
        for name, text in files.items():
            (out / name).write_text(text)


def _error(row: dict) -> str:
    return "–" if row.get("max_rel_error") is None else f"{row['max_rel_error']:.1e}"


def ranking_markdown(rows: list[dict], summary: dict) -> str:
    """Every measured case of a search, fastest first, failures last with their status."""
    p = summary["problem"]
    kind = ["All figures are PREDICTED by the timing model (calibrated on published MI355X times), not measured; "
            "numerics were not checked.", ""] if summary.get("predicted") else []
    lines = [f"# Schedule search: {p['dtype']} {p['m']}x{p['n']}x{p['k']} {p['layout'].upper()} on "
             f"{summary['target']}", "", f"device {summary['device']}, IREE {summary['iree_compiler']}", "", *kind,
             *([summary["verdict"][:1].upper() + summary["verdict"][1:], ""] if summary.get("verdict") else []),
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
