"""A whole model through the CUDA codegen library (`tune-model --pipeline codegen`): one library
(`codegen_script.model_library`) compiles each dispatched contraction the library kernel takes (NN, whole tiles),
each under its own schedule; every other contraction keeps compilation_info on its source op (the op-attribute
route), or IREE's heuristic where that schedule is None. One iree-compile: the library configures the dispatches it
matches, IREE configures the rest.

The library kernel stores its f32 accumulator as it is (IREE 3.13's vector-to-mma.sync conversion refuses an
elementwise op on the accumulator: "unhandled vector to mma type: arith.truncf"), while an importer's contraction
feeds a truncf (and a Gelu) that IREE fuses into its dispatch. So each library contraction of the program is
wrapped in a flow.dispatch.region of its own (`problem.isolate_contractions`) and its consumer runs as a separate
elementwise dispatch, reading the f32 result back: the tuned model has those dispatches in addition to IREE's
(tune-model reports them as split-out consumers).

`verify`: each library GEMM is computed by a dispatch whose translation_info names that GEMM's codegen sequence and
whose PTX shows the schedule (`verify_codegen`); no dispatch computing one of them was left to IREE; the
compilation_info contractions are checked as the op-attribute route checks them.
"""

from __future__ import annotations

import re
from pathlib import Path

from iree.compiler import ir

from transforms import codegen_script
from transforms.problem import gemms_from_mlir, isolate_contractions, parse_module
from transforms.problem import Gemm
from transforms.schedule import Schedule, ScheduleError, aligned

from ..inspect import KernelStats, dispatch_ptx
from ..job import Job, ModelPlan, Prepared, contraction_key
from ..targets import TargetError
from ..verify import FallbackError, configured_contractions, verify_codegen
from .base import Flags, Route
from .codegen import CODEGEN_MIN_KEPT
from .spec import OpAttributeRoute

_SEQUENCE = re.compile(r"codegen_spec\s*=\s*@(\w+)")


def library_sequence(index: int) -> str:
    """The codegen sequence of the model library's GEMM `index` (`codegen_script.model_library`)."""
    return codegen_script.model_sequence(index)


def plan_library(text: str, target, choose) -> tuple[ModelPlan, dict[str, str]]:
    """The library part of a model's plan: each distinct contraction op of the linalg program `text` that the library
    kernel takes with the schedule `choose(gemm, target)` gives it, and why each other one is left out. The ops are
    read in the program's own form: isolating an op pins its dispatch to that form, so a transpose that produces an
    operand stays a dispatch of its own (IREE would fold it into the contraction) and the contraction stays NN; that
    transpose moves the operand once more, which the rule of the single-GEMM route bounds (`CODEGEN_MIN_KEPT`)."""
    taken: dict[Gemm, Schedule] = {}
    passed_over: dict[str, str] = {}
    consumers: set[Gemm] = set()  # library contractions with a fused consumer
    with ir.Context(), ir.Location.unknown():
        module = parse_module(text, "the model")
        for op, found in gemms_from_mlir(module, "the model", []):
            gemm = contraction_key(found)
            name = f"{gemm.shape_name} {gemm.layout} {gemm.dtype}"
            try:
                schedule = choose(gemm, target)
                reason = takes(schedule, gemm, target) if schedule is not None else "no codegen schedule"
            except (TargetError, ScheduleError) as err:
                reason = str(err).rstrip(".")
            reason = reason or _transpose_cost(op, gemm)
            if reason is not None:
                passed_over[name] = reason
                continue
            taken[gemm] = schedule
            if found.epilogue.kind != "none":
                consumers.add(gemm)
    library = tuple((g, s) for g, s in taken.items() if f"{g.shape_name} {g.layout} {g.dtype}" not in passed_over)
    sizes = {(g.batch or 1) * g.m * g.n for g, _ in library if g in consumers}
    return ModelPlan(library, tuple(sorted(sizes))), passed_over


def _transpose_cost(op, gemm: Gemm) -> str | None:
    """Why an operand's transpose, kept as its own dispatch, costs more than the library gains (None: it does not).
    Only a linalg.transpose that produces the operand directly is seen (not a permuting generic, nor one behind a
    reshape)."""
    for index, (operand, kept, size) in enumerate((("A", "N", gemm.n), ("B", "M", gemm.m))):
        producer = op.operands[index].owner
        if getattr(producer, "name", "") == "linalg.transpose" and size < CODEGEN_MIN_KEPT:
            return (f"its {operand} is transposed by the program, a dispatch of its own once the product is isolated, "
                    f"which costs more than a product with {kept}={size} (< {CODEGEN_MIN_KEPT}) computes")
    return None


def takes(schedule, gemm, target) -> str | None:
    """Why the model library cannot compile `gemm` under `schedule` inside a model (None: it can): the library
    kernel is NN (the single-GEMM route transposes in a dispatch of its own, which a model's program does not
    have) and whole tiles (the single-GEMM route pads its own operands, not a model's)."""
    if gemm.layout != "nn":
        return f"{gemm.layout.upper()} (the kernel reads both operands row-major)"
    if not aligned(schedule, gemm):
        return f"not whole {schedule.tile.workgroup[0]}x{schedule.tile.workgroup[1]}x{schedule.tile.k} tiles"
    try:
        codegen_script.check(schedule, gemm, target)
    except ScheduleError as err:
        return str(err).rstrip(".")
    return None


class ModelLibraryRoute(Route):
    name = "model-codegen"
    about = "a model: codegen library for the contractions it takes, compilation_info on the others' ops (CUDA)"

    def _on_ops(self, job: Job) -> Job:
        return Job(job.target, job.pipeline, job.gemms, job.schedules, user_source=job.user_source)

    def _plan(self, job: Job) -> ModelPlan:
        if not isinstance(job.plan, ModelPlan):
            raise ScheduleError("the model-codegen route compiles a model plan.")
        return job.plan

    def prepare(self, job: Job) -> Prepared:
        plan = self._plan(job)
        for gemm, schedule in plan.library:
            reason = takes(schedule, gemm, job.target)
            if reason is not None:
                raise ScheduleError(f"the codegen library cannot compile {gemm.shape_name} {gemm.layout} {gemm.dtype} "
                                    f"in a model: {reason}.")
        on_ops = OpAttributeRoute().prepare(self._on_ops(job))
        with ir.Context(), ir.Location.unknown():
            library = codegen_script.model_library([(s, g) for g, s in plan.library], plan.consumer_sizes)
            module = parse_module(on_ops.source, "the model")
            isolate_contractions(module, {g for g, _ in plan.library}, "the model")
            module.operation.verify()
            return Prepared(job, str(module), str(library), on_ops.infos)

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        return Flags(library=spec_file)

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job, plan = prepared.job, self._plan(prepared.job)
        on_ops = self._on_ops(job)
        OpAttributeRoute().verify(Prepared(on_ops, prepared.source, None, prepared.infos), dump, stats)
        wanted = {contraction_key(g): i for i, (g, _) in enumerate(plan.library)}
        seen: set[int] = set()
        configured_texts = {k.dispatch: (dump / f"configured_{k.dispatch}.mlir").read_text() for k in stats}
        for kernel in stats:
            configured = configured_texts[kernel.dispatch]
            computed = configured_contractions(configured, kernel.dispatch)
            ours = [wanted[key] for key in computed if key in wanted]
            if not ours:
                continue
            index = ours[0]
            gemm, schedule = plan.library[index]
            sequences = _SEQUENCE.findall(configured)
            if sequences != [library_sequence(index)]:
                raise FallbackError(f"{kernel.dispatch}: the codegen schedule for {gemm.shape_name} {gemm.layout} "
                                    f"{gemm.dtype} did not take effect: the dispatch is configured by "
                                    f"{sequences or 'IREE'}, not @{library_sequence(index)}.")
            text = dispatch_ptx((dump / kernel.isa_file).read_text(), kernel.dispatch)
            verify_codegen(kernel.dispatch, text, kernel, schedule, gemm, job.target)
            seen.add(index)
        config = codegen_script.CONSUMER
        for size in plan.consumer_sizes:
            if size % config.elements:
                continue
            if not any(f"tensor<{size}xf32>" in text and config.lowering_config() in text
                       for text in configured_texts.values()):
                raise FallbackError(f"the configuration for the split-out consumers of {size} elements "
                                    f"({config.threads} threads, {config.per_thread} elements each) did not take "
                                    "effect: no dispatch of that size carries it.")
        missing = [plan.library[i][0] for i in range(len(plan.library)) if i not in seen]
        if missing:
            raise FallbackError(f"the codegen schedule for {missing[0].shape_name} {missing[0].layout} "
                                f"{missing[0].dtype} did not take effect: no dispatch computes that contraction.")

    def verified(self, job: Job) -> bool:
        return bool(self._plan(job).library) or super().verified(job)

    def summary(self, job: Job) -> list[str]:
        plan = self._plan(job)
        return [*(f"{g.shape_name} {g.layout} {g.dtype}: codegen {s.describe()}" for g, s in plan.library),
                *super().summary(job)]

    def report_extra(self, job: Job) -> dict:
        return {"library": [{"contraction": f"{g.shape_name} {g.layout} {g.dtype}", "schedule": s.describe(),
                             "sequence": library_sequence(i)} for i, (g, s) in enumerate(self._plan(job).library)]}
