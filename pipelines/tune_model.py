"""`pipelines tune-model`: every distinct contraction of a whole model scheduled, one merged tuning spec, and proof in
the compiled model that each contraction dispatch took its schedule and that nothing else changed.

The model (an .onnx file, the torch-dialect MLIR an importer wrote, or linalg) is lowered to linalg
(`model_input`); its contractions are read as IREE dispatches them, each distinct one gets the named pipeline's
schedule, and the model is compiled twice through the target's route: with the schedules (one tuning spec holding a
matcher per contraction, `spec.mlir`, which plain `iree-compile --iree-codegen-tuning-spec-path=spec.mlir` applies
on ROCm; compilation_info on the source's ops on CUDA) and with IREE's defaults. The scheduled compile verifies every
contraction dispatch as `compile` does; the two compiles' configured IR of every other dispatch must be identical.
Written into the output folder: `tuned/` and `default/` (each a `compile` folder), `spec.mlir`, `model.json` and
`model.md` (the per-dispatch table). Schedules here are chosen by rule (compile-only); nothing is timed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen

from transforms.problem import Gemm, parse_module
from transforms import codegen_script
from transforms.schedule import Schedule, schedule_from_dict
from transforms.tuning_spec import link_specs, tuning_spec

from . import flow
from .compiler import DUMP_DIR
from .job import Job, contraction_key
from .model_input import (ModelError, dispatch_launches, read_model,
                          schedulable_contractions, spec_reads_dispatches, to_linalg)
from .named import get_pipeline, schedule_for
from .output import output_folder
from .routes import codegen_route, route_for
from .routes.model import ModelLibraryRoute, library_sequence, plan_library
from .targets import Target
from .verify import configured_contractions
from .tune_cache import TuneError

# The schedules of the contractions the codegen library leaves to compilation_info on their ops.
ON_OP_PIPELINE = "auto"
LIBRARY_FILE = "library.mlir"
PREDICTED_DIR = "predicted"
SEARCH_DIR = "search"


def tune_model(model: Path, target: Target, pipeline: str, out: Path, force: bool = False,
               user_spec: Path | None = None, predict: bool = False, search: int = 0, client=None) -> dict:
    """`user_spec`: a tuning spec of the user's, linked in ahead of ours (`link_specs`): it keeps every op it
    configures, and a contraction of ours that it takes is reported as not having our schedule (an error).
    `predict` (targets with a timing model): each contraction's PREDICTED time with its schedule and with IREE's
    default (`_predicted`). `search` (targets with a timing model): each distinct contraction's schedule is the
    PREDICTED fastest of a search of up to `search` candidates (`_search`), on the dask cluster of `client` when
    given: IREE's default where no candidate is predicted faster than it, the named pipeline's choice where there
    was nothing to search."""
    named = get_pipeline(pipeline)
    library_route = codegen_route(target) if named.codegen else None
    if named.ukernels or not target.gpu or (named.codegen and not getattr(library_route, "compiles_models", False)):
        raise ModelError(f"tune-model schedules a model's contractions through compilation_info (and on CUDA through "
                         f"the codegen library); pipeline '{pipeline}' on {target.name} does neither (use auto, tuned "
                         "or, on CUDA, codegen).")
    if search and (target.timing is None or named.codegen):
        raise ModelError(f"--search ranks candidates with the AMD timing model; {target.name} with pipeline "
                         f"'{pipeline}' has none to rank with (measure a CUDA model with python -m "
                         "pipelines.model_runner).")
    if predict and target.timing is None:
        raise ModelError(f"{target.name} has no timing model to predict with; measure the compiled model on the GPU "
                         "(python -m pipelines.model_runner).")
    text = to_linalg(read_model(model), target, str(model))
    skipped: list[str] = []  # contractions with dynamic sizes: reported, left to IREE
    plan, passed_over = plan_library(text, target, named.choose) if named.codegen else (None, {})
    library = plan.library if plan is not None else ()
    # ROCm: the spec matches what IREE dispatches; CUDA: compilation_info goes on the source's ops, one per op.
    gemms = schedulable_contractions(text, target, str(model), spec_reads_dispatches(target), skipped)
    if not gemms:
        raise ModelError(f"{model} has no contraction with static sizes to schedule ({len(skipped)} with dynamic "
                         f"sizes, e.g. {skipped[0] if skipped else '?'}).")
    in_library = {contraction_key(g) for g, _ in library}
    on_ops = get_pipeline(ON_OP_PIPELINE) if named.codegen else named
    with output_folder(out, "tune-model", force) as folder:
        found = _search(folder, target, gemms, search, client) if search else {}

        def choice(gemm: Gemm) -> Schedule | None:
            """The library's (None on the op), the search's where it had candidates, else the pipeline's."""
            key = contraction_key(gemm)
            if key in in_library:
                return None
            if found.get(key, {}).get("candidates"):
                return found[key]["schedule"]
            return schedule_for(on_ops.name, key, target)

        schedules = tuple(choice(g) for g in gemms)
        tuned = flow.prepare(Job(target, pipeline, tuple(gemms), schedules, user_source=text,
                                 route=ModelLibraryRoute.name if plan is not None else "", plan=plan))
        if tuned.spec is None and plan is None and spec_reads_dispatches(target):
            # Nothing scheduled (IREE's default everywhere): still a spec, one that configures nothing, so that
            # `iree-compile --iree-codegen-tuning-spec-path=spec.mlir` and --with-spec work whatever was chosen.
            tuned = dataclasses.replace(tuned, spec=_spec_of_nothing())
        if user_spec is not None:
            if tuned.spec is None or plan is not None:
                raise ModelError(f"{target.name} reads no tuning spec, so there is nothing to link {user_spec} into.")
            tuned = dataclasses.replace(tuned, spec=_linked(user_spec, tuned.spec))
        default = flow.prepare(Job(target, "default", tuple(gemms), (None,) * len(gemms), user_source=text))
        # each compiled where the user finds it (`out`), once this scratch folder is renamed into place
        reports = {name: flow.compile_job(prepared, folder / name, force=True, final=out / name)
                   for name, prepared in (("tuned", tuned), ("default", default))}
        script = LIBRARY_FILE if plan is not None else flow.SPEC_FILE
        if (folder / "tuned" / flow.SPEC_FILE).is_file():
            shutil.copyfile(folder / "tuned" / flow.SPEC_FILE, folder / script)
        markers = {**_lowerings(tuned.infos, schedules),
                   **{_library_marker(i): f"codegen library: {s.describe()}" for i, (_, s) in enumerate(library)}}
        summary = _summary(model, target, pipeline, markers, reports, folder, gemms, schedules, bool(library))
        summary.update(route=route_for(tuned.job).name, skipped=skipped,
                       script=script if (folder / script).is_file() else None,
                       library=len(library), not_in_library=passed_over)
        summary["scheduled"] += len(library)
        if found:
            summary["search"] = [{"contraction": _named(g), "candidates": r["candidates"], "best": r["best"],
                                  "predicted_speedup_over_default": r["speedup"], "plan": r["plan"],
                                  "used": r["schedule"] is not None} for g, r in found.items()]
        if predict:
            _add_predictions(summary, folder, out, target, pipeline, gemms, schedules, dispatch_launches(text, target,
                                                                                                      str(model)))
        (folder / "model.json").write_text(json.dumps(summary, indent=1) + "\n")
        (folder / "model.md").write_text(markdown(summary))
    return summary


def _search(folder: Path, target: Target, gemms, limit: int, client) -> dict[Gemm, dict]:
    """Each distinct contraction (its epilogue set aside) searched like `pipelines tune --device model`: up to
    `limit` candidates compiled and PREDICTED by the timing model under `search/`, the fastest kept where it beats
    IREE's default (schedule None, IREE's own, otherwise). On a dask cluster when `client` is given."""
    from .timing.device import KEPT, predict_plan
    from .tune import finalize, plan_search

    found: dict[Gemm, dict] = {}
    for index, gemm in enumerate(dict.fromkeys(contraction_key(g) for g in gemms)):
        plan = folder / SEARCH_DIR / f"{index}_{gemm.shape_name}_{gemm.layout}"
        try:
            plan_search(gemm, target, plan, limit, keep=KEPT, client=client)
            predict_plan(plan, os.cpu_count() or 1, client=client)
            best = finalize(gemm, target, plan, folder / SEARCH_DIR / "tune.json")
        except TuneError as err:  # nothing to search or nothing predicted: the pipeline's choice stands
            found[gemm] = {"schedule": None, "best": f"none: {str(err).rstrip('.')}", "speedup": None,
                           "candidates": 0, "plan": str(plan.relative_to(folder))}
            continue
        speedup = best.get("speedup_over_default")
        wins = best.get("schedule") is not None and (speedup is None or speedup > 1)
        found[gemm] = {"schedule": schedule_from_dict(best["schedule"]) if wins else None,
                       "best": best["schedule_summary"], "speedup": speedup, "candidates": best["measured"] - 1,
                       "plan": str(plan.relative_to(folder))}
    return found


def _add_predictions(summary: dict, folder: Path, out: Path, target: Target, pipeline: str, gemms, schedules,
                     launches: dict[str, int]) -> None:
    """PREDICTED times (the timing model, not a measurement): each distinct contraction compiled alone under
    `predicted/` (the same schedule, or IREE's default; an f32 result and no fused consumer, which the model's
    dispatch has), its time on each row, and the sum over the model's contraction launches."""
    from .timing.predict import predict

    times: dict[Gemm, dict[str, float]] = {}
    for index, (gemm, schedule) in enumerate(zip(gemms, schedules)):
        key = contraction_key(gemm)
        if key in times:
            continue
        times[key] = {}
        for name, chosen in (("tuned", schedule), ("default", None)):
            job = Job(target, pipeline if chosen is not None else "default", (key,), (chosen,))
            where = Path(PREDICTED_DIR) / f"{index}_{key.shape_name}_{key.layout}" / name
            sub = folder / where
            flow.compile_job(flow.prepare(job), sub, force=True, final=out / where)
            times[key][name] = round(predict(sub).microseconds, 2)
    by_name = {_named(g): t for g, t in times.items()}
    totals = {"tuned": 0.0, "default": 0.0}
    for row in summary["dispatches"]:
        row["predicted_us"] = by_name.get(row["contraction"] or "")
        count = launches.get(row["dispatch"].removeprefix("module_"), 0)
        row["launches"] = count
        for name in totals:
            totals[name] += count * (row["predicted_us"] or {}).get(name, 0.0)
    summary["predicted"] = {"contraction_launches_us": {k: round(v, 2) for k, v in totals.items()},
                            "note": "PREDICTED by the timing model, not measured; each contraction compiled alone "
                                    "(f32 result, no fused consumer); other dispatches not predicted"}


def _library_marker(index: int) -> str:
    """What a dispatch's configured IR shows when the library's GEMM `index` configured it."""
    return f"codegen_spec = @{library_sequence(index)}>"


def _spec_of_nothing() -> str:
    with ir.Context(), ir.Location.unknown():
        return str(tuning_spec([]))


def _linked(user_spec: Path, ours: str) -> str:
    try:
        user_text = user_spec.read_text()
    except (OSError, UnicodeDecodeError):
        raise ModelError(f"cannot read the tuning spec {user_spec} as text.") from None
    with ir.Context(), ir.Location.unknown():
        user = parse_module(user_text, str(user_spec))
        entries = [op for op in user.body.operations if op.operation.name == "transform.named_sequence"
                   and "iree_codegen.tuning_spec_entrypoint" in op.operation.attributes]
        if not entries:
            raise ModelError(f"{user_spec} has no named sequence marked iree_codegen.tuning_spec_entrypoint, so it is "
                             "not a tuning spec IREE can run.")
        return str(link_specs([("user_spec", user), ("project_spec", parse_module(ours, "the project's spec"))]))


def _lowerings(infos, schedules) -> dict[str, str]:
    """Each requested lowering_config as printed, with its schedule's description."""
    found = {}
    with ir.Context(), ir.Location.unknown():
        for info, schedule in zip(infos, schedules):
            if info is not None and schedule is not None:
                lowering = iree_codegen.CompilationInfoAttr(ir.Attribute.parse(info)).lowering_config
                found[str(lowering)] = schedule.describe()
    return found


def _summary(model: Path, target: Target, pipeline: str, markers: dict[str, str], reports: dict, folder: Path,
             gemms, schedules, isolated: bool = False) -> dict:
    """One row per dispatch of the tuned model. A contraction dispatch's schedule is read from its configured IR (one
    of ours, found by its marker: a lowering_config or a library sequence; or IREE's default, when the IR is one the
    default compile has too). Every other dispatch must have an identical twin in the default compile (dispatch
    numbers set aside: isolating contractions renumbers them) and every such dispatch of the default compile one in
    the tuned; `isolated` (routes.model) allows the consumers split out of isolated contractions, elementwise
    dispatches of their own, reported as such. Any other change is an error."""
    tuned_dump, default_dump = folder / "tuned" / DUMP_DIR, folder / "default" / DUMP_DIR
    default_texts = {d["dispatch"]: (default_dump / f"configured_{d['dispatch']}.mlir").read_text()
                     for d in reports["default"]["dispatches"]}
    default_held = {name: _held(text, name) for name, text in default_texts.items()}
    default_others: dict[str, list[str]] = {}  # normalized IR -> the default dispatches that hold it, each paired once
    for name, text in default_texts.items():
        if not default_held[name]:
            default_others.setdefault(_renumbered(text), []).append(name)
    default_all = {_renumbered(text) for text in default_texts.values()}
    rows = []
    for dispatch in sorted(reports["tuned"]["dispatches"], key=lambda d: _dispatch_number(d["dispatch"])):
        name = dispatch["dispatch"]
        tuned_ir = (tuned_dump / f"configured_{name}.mlir").read_text()
        held = _held(tuned_ir, name)
        row = {"dispatch": name, "contraction": None, "schedule": None, "identical_to_default": None}
        if held:
            ours = [text for marker, text in markers.items() if marker in tuned_ir]
            if not ours and _renumbered(tuned_ir) not in default_all:
                raise ModelError(f"dispatch {name} of {model} changed from IREE's default without carrying a "
                                 "schedule of ours.")
            row.update(contraction=_named(held[0]), schedule=ours[0] if ours else "IREE default heuristic")
        else:
            unpaired = default_others.get(_renumbered(tuned_ir)) or []
            twin = unpaired.pop(0) if unpaired else None
            row.update(identical_to_default=twin is not None, default_twin=twin)
            if twin is None and isolated and _elementwise(tuned_ir):
                config = codegen_script.CONSUMER
                configured = config.lowering_config() in tuned_ir
                row.update(split_consumer=True, schedule=(
                    f"split out: TileAndFuse, {config.threads} threads x {config.per_thread} elements (library)"
                    if configured else "split out (an operand's transpose or a consumer): IREE default"))
            elif twin is None:
                raise ModelError(f"scheduling {model}'s contractions changed dispatch {name}, which computes none of "
                                 "them.")
        rows.append(row)
    lost = [name for names in default_others.values() for name in names]
    if lost:
        raise ModelError(f"scheduling {model}'s contractions changed dispatch {lost[0]}, which computes none of "
                         "them.")
    default_rows = [{"dispatch": name, "contraction": _named(held[0]) if held else None}
                    for name, held in default_held.items()]
    return {"model": str(model), "target": target.name, "pipeline": pipeline, "verified": reports["tuned"]["verified"],
            "contractions": len(set(map(contraction_key, gemms))),
            "scheduled": len({contraction_key(g) for g, s in zip(gemms, schedules) if s is not None}),
            "spec": flow.SPEC_FILE if (folder / flow.SPEC_FILE).is_file() else None, "dispatches": rows,
            "default_dispatches": default_rows, "command": reports["tuned"]["command"]}


def _dispatch_number(name: str) -> tuple:
    found = re.search(r"dispatch_(\d+)$", name)
    return (int(found.group(1)) if found else -1, name)


def _named(gemm: Gemm) -> str:
    return f"{gemm.shape_name} {gemm.layout} {gemm.dtype}"


def _renumbered(configured_ir: str) -> str:
    """A dispatch's configured IR with dispatch numbers and binding offsets set aside: isolating contractions
    renumbers IREE's dispatches and changes where its transient buffers lie, which IREE writes into each dispatch as
    constant binding offsets (and the strided memref types they give). A constant that is an offset somewhere is
    dropped everywhere, so a dispatch that also uses it otherwise compares as changed (never the reverse)."""
    offsets = set(re.findall(r"offset\((%[\w]+)\)", configured_ir))
    lines = [line for line in configured_ir.splitlines()
             if not any(line.lstrip().startswith(f"{name} = arith.constant") for name in offsets)]
    text = re.sub(r"offset\(%[\w]+\)", "offset(?)", "\n".join(lines))
    text = re.sub(r", strided<\[[^\]]*\], offset: \?>", "", text)
    return re.sub(r"dispatch_\d+", "dispatch_N", text)


def _elementwise(configured_ir: str) -> bool:
    """Whether a dispatch without a contraction computes elementwise ops only (generics without a reduction)."""
    return "linalg.generic" in configured_ir and '"reduction"' not in configured_ir \
        and "#linalg.iterator_type<reduction>" not in configured_ir


def _held(configured_ir: str, name: str) -> list[Gemm]:
    """The distinct contractions a dispatch computes, in a fixed order."""
    return sorted(set(configured_contractions(configured_ir, name)), key=str)


def markdown(summary: dict) -> str:
    script = summary.get("script")
    how = {LIBRARY_FILE: f"`iree-compile --iree-codegen-transform-dialect-library={LIBRARY_FILE}@__kernel_config` "
                         "(with the tuned program, tuned/gemm.mlir, which carries compilation_info on the other ops)",
           flow.SPEC_FILE: f"`iree-compile --iree-codegen-tuning-spec-path={flow.SPEC_FILE}`"}.get(script or "")
    lines = [f"# tune-model: {summary['model']} on {summary['target']} (pipeline {summary['pipeline']})", "",
             f"{summary['contractions']} distinct contractions, {summary['scheduled']} scheduled; route "
             f"{summary['route']}; every scheduled contraction verified in the compiled model: "
             f"{'yes' if summary['verified'] else 'nothing requested'}. Compile-only: no times."
             + (f" Applied by {how}." if how else ""), "",
             "| dispatch | contraction | schedule | other dispatches: configured IR identical to IREE's default |",
             "|---|---|---|---|"]
    predicted = summary.get("predicted")
    if predicted:
        lines[-2] += " PREDICTED µs per launch (timing model) | launches |"
        lines[-1] += "---|---|"
    for row in summary["dispatches"]:
        same = "–" if row["contraction"] else ("split out" if row.get("split_consumer") else
                                               "yes" if row["identical_to_default"] else "NO")
        line = f"| {row['dispatch']} | {row['contraction'] or '(none)'} | {row['schedule'] or '–'} | {same} |"
        if predicted:
            times = row.get("predicted_us")
            line += (f" {times['default']:.1f} default, {times['tuned']:.1f} tuned |" if times else " – |") + \
                f" {row.get('launches', 0)} |"
        lines.append(line)
    if predicted:
        total = predicted["contraction_launches_us"]
        ratio = f" ({total['default'] / total['tuned']:.2f}×)" if total["tuned"] else ""
        lines += ["", f"PREDICTED, not measured: the model's contraction launches take {total['default']:.1f} µs with "
                  f"IREE's default and {total['tuned']:.1f} µs tuned{ratio}; {predicted['note']}."]
    passed_over = summary.get("not_in_library") or {}
    if passed_over:
        lines += ["", "Left to compilation_info (the codegen library does not compile them in a model):",
                  *[f"- {name}: {why}" for name, why in passed_over.items()]]
    searched = summary.get("search") or []
    if searched:
        lines += ["", "Searched (PREDICTED by the timing model, not measured; each contraction alone, its consumer set "
                  "aside):", "", "| contraction | candidates | predicted best | predicted / IREE default | used |",
                  "|---|---|---|---|---|"]
        used = {True: "yes", False: "no: IREE's default (or the pipeline's, with no candidate)"}
        lines += [f"| {r['contraction']} | {r['candidates']} | {r['best']} | "
                  + (f"{r['predicted_speedup_over_default']:.2f}×" if r["predicted_speedup_over_default"] else "–")
                  + f" | {used[r['used']]} |" for r in searched]
    skipped = summary.get("skipped") or []
    if skipped:
        lines += ["", f"Skipped ({len(skipped)}, left to IREE's default; their dispatches are in the table as '(none)' "
                  "and compared with the default compile):", *[f"- {s}" for s in skipped]]
    return "\n".join(lines) + "\n"
