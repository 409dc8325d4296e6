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
import shutil
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen

from transforms.problem import Epilogue, contraction_ops, gemms_from_mlir, parse_module
from transforms.tuning_spec import link_specs

from . import flow
from .compiler import DUMP_DIR
from .job import Job, contraction_key
from .model_input import ModelError, read_model, schedulable_contractions, spec_reads_dispatches, to_linalg
from .named import get_pipeline
from .output import output_folder
from .routes import schedule_route
from .targets import Target


def tune_model(model: Path, target: Target, pipeline: str, out: Path, force: bool = False,
               user_spec: Path | None = None) -> dict:
    """`user_spec`: a tuning spec of the user's, linked in ahead of ours (`link_specs`): it keeps every op it
    configures, and a contraction of ours that it takes is reported as not having our schedule (an error)."""
    named = get_pipeline(pipeline)
    if named.codegen or named.ukernels or not target.gpu:
        raise ModelError(f"tune-model schedules a model's contractions through compilation_info; pipeline "
                         f"'{pipeline}' on {target.name} does not (use auto or tuned on a GPU target).")
    text = to_linalg(read_model(model), target, str(model))
    skipped: list[str] = []  # contractions with dynamic sizes: reported, left to IREE
    # ROCm: the spec matches what IREE dispatches; CUDA: compilation_info goes on the source's ops, one per op.
    gemms = schedulable_contractions(text, target, str(model), spec_reads_dispatches(target), skipped)
    if not gemms:
        raise ModelError(f"{model} has no contraction with static sizes to schedule ({len(skipped)} with dynamic "
                         f"sizes, e.g. {skipped[0] if skipped else '?'}).")
    schedules = tuple(named.choose(g.with_(epilogue=Epilogue()), target) for g in gemms)
    tuned = flow.prepare(Job(target, pipeline, tuple(gemms), schedules, user_source=text))
    if user_spec is not None:
        if tuned.spec is None:
            raise ModelError(f"{target.name} reads no tuning spec, so there is nothing to link {user_spec} into.")
        tuned = dataclasses.replace(tuned, spec=_linked(user_spec, tuned.spec))
    default = flow.prepare(Job(target, "default", tuple(gemms), (None,) * len(gemms), user_source=text))
    with output_folder(out, "tune-model", force) as folder:
        reports = {name: flow.compile_job(prepared, folder / name, force=True)
                   for name, prepared in (("tuned", tuned), ("default", default))}
        if (folder / "tuned" / flow.SPEC_FILE).is_file():
            shutil.copyfile(folder / "tuned" / flow.SPEC_FILE, folder / flow.SPEC_FILE)
        summary = _summary(model, target, pipeline, _lowerings(tuned.infos, schedules), reports, folder, gemms,
                           schedules)
        summary["skipped"] = skipped
        (folder / "model.json").write_text(json.dumps(summary, indent=1) + "\n")
        (folder / "model.md").write_text(markdown(summary))
    return summary


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


def _summary(model: Path, target: Target, pipeline: str, lowerings: dict[str, str], reports: dict, folder: Path,
             gemms, schedules) -> dict:
    """One row per dispatch of the model. A contraction dispatch's schedule is read from its configured IR (one of
    ours, found by its lowering_config, or IREE's default when the IR is the default compile's); any other change is
    an error."""
    tuned_dump, default_dump = folder / "tuned" / DUMP_DIR, folder / "default" / DUMP_DIR
    rows = []
    for dispatch in reports["default"]["dispatches"]:
        name = dispatch["dispatch"]
        default_ir = (default_dump / f"configured_{name}.mlir").read_text()
        tuned_path = tuned_dump / f"configured_{name}.mlir"
        tuned_ir = tuned_path.read_text() if tuned_path.is_file() else None
        held = sorted(_contractions(default_ir, name), key=str)  # as this dispatch holds it (CUDA: the source's
        # op may differ, e.g. before a transpose was folded in; such a dispatch shows no schedule of ours)
        row = {"dispatch": name, "contraction": None, "schedule": None, "identical_to_default": tuned_ir == default_ir}
        if held:
            gemm = held[0]
            ours = [text for lowering, text in lowerings.items() if tuned_ir is not None and lowering in tuned_ir]
            if not ours and not row["identical_to_default"]:
                raise ModelError(f"dispatch {name} of {model} changed from IREE's default without carrying a "
                                 "schedule of ours.")
            row.update(contraction=f"{gemm.shape_name} {gemm.layout} {gemm.dtype}",
                       schedule=ours[0] if ours else "IREE default heuristic")
        rows.append(row)
    others_changed = [r["dispatch"] for r in rows if r["contraction"] is None and not r["identical_to_default"]]
    if others_changed:
        raise ModelError(f"scheduling {model}'s contractions changed dispatch {others_changed[0]}, which computes "
                         "none of them.")
    return {"model": str(model), "target": target.name, "pipeline": pipeline,
            "route": schedule_route(target).name, "verified": reports["tuned"]["verified"],
            "contractions": len(set(map(contraction_key, gemms))),
            "scheduled": len({contraction_key(g) for g, s in zip(gemms, schedules) if s is not None}),
            "spec": flow.SPEC_FILE if (folder / flow.SPEC_FILE).is_file() else None, "dispatches": rows,
            "command": reports["tuned"]["command"]}


def _contractions(configured_ir: str, name: str) -> set:
    """The contractions (epilogue set aside) a dispatch's configured IR computes."""
    with ir.Context(), ir.Location.unknown():
        module = parse_module(configured_ir, name)
        return {contraction_key(g) for _, g in gemms_from_mlir(module, name, [])} if contraction_ops(module) else set()


def markdown(summary: dict) -> str:
    lines = [f"# tune-model: {summary['model']} on {summary['target']} (pipeline {summary['pipeline']})", "",
             f"{summary['contractions']} distinct contractions, {summary['scheduled']} scheduled; route "
             f"{summary['route']}; every scheduled contraction verified in the compiled model: "
             f"{'yes' if summary['verified'] else 'nothing requested'}. Compile-only: no times.", "",
             "| dispatch | contraction | schedule | other dispatches: configured IR identical to IREE's default |",
             "|---|---|---|---|"]
    for row in summary["dispatches"]:
        same = "–" if row["contraction"] else ("yes" if row["identical_to_default"] else "NO")
        lines.append(f"| {row['dispatch']} | {row['contraction'] or '(none)'} | {row['schedule'] or '–'} | {same} |")
    skipped = summary.get("skipped") or []
    if skipped:
        lines += ["", f"Skipped ({len(skipped)}, left to IREE's default; their dispatches are in the table as '(none)' "
                  "and compared with the default compile):", *[f"- {s}" for s in skipped]]
    return "\n".join(lines) + "\n"
