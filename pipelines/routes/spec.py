"""The schedule routes: a `Schedule` becomes IREE's `compilation_info` and IREE's own pipeline compiles it.

- `tuning-spec` (ROCm): the compilation_info reaches IREE through a tuning spec (`--iree-codegen-tuning-spec-path`)
  that matches each scheduled contraction and marks it; IREE prints the IR after its prefetch pass and before its
  swizzle pass, and `verify` reads both besides the configured IR and the ISA.
- `op-attribute` (CUDA): IREE 3.13 reads no tuning spec for CUDA, so the compilation_info is set on the linalg op in
  the source; `verify` reads the configured IR and the PTX.
- `iree-cpu` (the CPU): IREE's CPU pipeline compiles the plain source; nothing is scheduled, nothing to verify.

Ops with no schedule (None) are left to IREE's heuristic on every route: that is the `default` pipeline.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen

from transforms import config, schedule as sched
from transforms.problem import Gemm, build_module, contraction_ops, gemms_from_mlir, parse_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile, worth_trying
from transforms.tuning_spec import tuning_spec

from ..inspect import KernelStats
from ..job import Job, Prepared, contraction_key
from ..targets import Target, check_problem
from ..tune_cache import TuneError
from ..verify import FallbackError, verify_dispatch
from .base import Flags, Route

# The schedule search (`pipelines tune`): tiles, wave grids, K steps per input family, prefetch depths and LDS
# layouts as far as the target's IREE pipelines shared memory and keeps swizzles.
TILES = [(64, 128), (128, 64), (128, 128), (128, 256), (256, 128), (256, 256)]
WAVE_GRIDS = [(2, 2), (2, 4), (4, 2), (1, 4), (4, 4)]


class ScheduleRoute(Route):
    on_op = False  # compilation_info on the op in the source, not in a tuning spec
    evidence = False  # IREE prints the pass IR `verify` reads, and the spec marks what it matched
    splits_reduction = True  # IREE's split-K (Job.split_k), the same flag and check on ROCm and CUDA

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        split = ((f"--iree-dispatch-creation-split-matmul-reduction={prepared.job.split_k}",)
                 if prepared.job.split_k > 1 else ())
        return Flags(extra=split)

    def verified(self, job: Job) -> bool:
        return job.split_k > 1 or super().verified(job)

    def summary(self, job: Job) -> list[str]:
        if job.split_k > 1:
            return [f"IREE default heuristic, the reduction split {job.split_k} ways (partial GEMMs, then their sum)"]
        return super().summary(job)

    def prepare(self, job: Job) -> Prepared:
        for gemm, schedule in zip(job.gemms, job.schedules):
            check_problem(job.target, gemm)
            if schedule is not None:
                sched.check(schedule, gemm, job.target)
        with ir.Context(), ir.Location.unknown():
            infos = [config.compilation_info(s, g, job.target) if s is not None else None
                     for g, s in zip(job.gemms, job.schedules)]
            scheduled = [(g, i) for g, i in zip(job.gemms, infos) if i is not None]
            spec = str(tuning_spec(scheduled)) if scheduled else None
            if job.user_source is None:
                module = build_module(job.gemms[0], infos[0] if self.on_op else None)
            else:
                module = parse_module(job.user_source, "the input file")
                if self.on_op:
                    for op, info in zip(contraction_ops(module), infos):
                        if info is not None:
                            op.attributes["compilation_info"] = info
            module.operation.verify()
            return Prepared(job, str(module), spec, tuple(str(i) if i is not None else None for i in infos))

    def candidates(self, gemm: Gemm, target: Target) -> list[Schedule]:
        k_steps = [64, 128] if gemm.dtype.startswith("f8") else [32, 64]
        stages = [2, 3] if target.prefetch_pipelining else [0]
        layouts = ["pad", "xor"] if target.lds_swizzle else ["pad"]
        found = []
        for tile, k, warps, mma, depth, lds in itertools.product(TILES, k_steps, WAVE_GRIDS,
                                                                 target.intrinsics_for(gemm.dtype), stages, layouts):
            staging = Staging(depth, direct_to_lds=target.dma)
            schedule = Schedule(Tile(tile, k, warps, mma), staging,
                                Swizzle("none" if target.dma and lds == "pad" else lds))
            if worth_trying(schedule, gemm, target) and schedule not in found:
                found.append(schedule)
        if not found:
            raise TuneError(f"no schedule for {gemm.shape_name} {gemm.dtype} passes the checks on {target.name}.")
        return found

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        """Every scheduled contraction is computed by a dispatch that shows each choice of its schedule."""
        job = prepared.job
        wanted = {contraction_key(g): (s, i) for g, s, i in zip(job.gemms, job.schedules, prepared.infos)
                  if s is not None}
        seen = set()
        if prepared.job.split_k > 1:
            verify_split_k(prepared.job, dump, stats)
        if not wanted:  # IREE's own configuration: nothing of ours to find
            return
        with ir.Context(), ir.Location.unknown():
            for kernel in stats:
                configured = dump / f"configured_{kernel.dispatch}.mlir"
                module = parse_module(configured.read_text(), configured.name)
                # A contraction with dynamic sizes is none of ours (schedules are for static shapes): set aside.
                found = gemms_from_mlir(module, configured.name, []) if contraction_ops(module) else []
                for op, gemm in found:
                    key = self._requested(contraction_key(gemm), wanted, op)
                    if key is not None:
                        schedule, info = wanted[key]
                        verify_dispatch(kernel.dispatch, op, dump, kernel, schedule, gemm, ir.Attribute.parse(info),
                                        job.target, self.evidence)
                        seen.add(key)
        missing = [g for g in wanted if g not in seen]
        if missing:
            raise FallbackError(f"the schedule for GEMM {missing[0].shape_name} {missing[0].layout} "
                                f"{missing[0].dtype} did not take effect: no dispatch computes that contraction.")


    def _requested(self, key: Gemm, wanted: dict, op) -> Gemm | None:
        """The requested contraction a dispatch's contraction `key` computes. compilation_info set on a source op
        travels with it when IREE folds a transpose of an operand into its indexing maps (a model's Q·Kᵀ: the
        source multiplies by a transposed K, the dispatch reads K as NT): such an op is the one requested in another
        layout, recognised by the lowering_config it carries."""
        if key in wanted or not self.on_op or "lowering_config" not in op.attributes:
            return key if key in wanted else None
        carried = str(op.attributes["lowering_config"])
        return next((g for g, (_, info) in wanted.items()
                     if str(iree_codegen.CompilationInfoAttr(ir.Attribute.parse(info)).lowering_config) == carried
                     and (g.m, g.n, g.k, g.dtype, g.batch) == (key.m, key.n, key.k, key.dtype, key.batch)), None)


class TuningSpecRoute(ScheduleRoute):
    name = "tuning-spec"
    about = "compilation_info through a tuning spec (ROCm)"
    evidence = True

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        scheduled = prepared.spec is not None
        ukernels = ("--iree-rocm-enable-tensor-ukernels",) if prepared.job.iree_ukernels else ()
        split = super().flags(prepared, spec_file).extra
        return Flags(spec=spec_file if scheduled else None, print_pass_ir=scheduled, extra=ukernels + split)

    def verified(self, job: Job) -> bool:
        return job.iree_ukernels or super().verified(job)

    def summary(self, job: Job) -> list[str]:
        if job.iree_ukernels:
            return ["IREE default heuristic with IREE's ROCm tensor ukernels"]
        return super().summary(job)

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        super().verify(prepared, dump, stats)
        if prepared.job.iree_ukernels:
            verify_iree_ukernel(prepared.job, dump, stats)


# A symbol with characters outside [\w$.] is printed quoted (a model's `main$async` functions are).
DISPATCH_NAME = re.compile(r'func\.func @"?[\w$.]+?_dispatch_\d+_([a-z_]+?)_(\d+(?:x\d+)*)_')


def verify_split_k(job: Job, dump: Path, stats: list[KernelStats]) -> None:
    """With the reduction split S ways, IREE dispatches each M×N×K GEMM as S partial GEMMs of K/S
    (`matmul_like_SxMxNx(K/S)`) and their sum (`reduction_(M·N)xS`); anything else (K not a multiple of S, a
    shape IREE leaves whole) is the request not taking effect."""
    named = set()
    for kernel in stats:
        match = DISPATCH_NAME.search((dump / f"configured_{kernel.dispatch}.mlir").read_text())
        if match:
            named.add((match[1], tuple(int(d) for d in match[2].split("x"))))
    s = job.split_k
    for gemm in job.gemms:
        # IREE names a contraction with M = 1 a matvec and one with N = 1 a vecmat
        partials = {(kind, (s, gemm.m, gemm.n, gemm.k // s)) for kind in ("matmul_like", "matvec_like", "vecmat_like")}
        total = ("reduction", (gemm.m * gemm.n, s))
        if gemm.k % s or not partials & named or total not in named:
            seen = ", ".join(f"{kind} {'x'.join(map(str, dims))}" for kind, dims in sorted(named)) or "nothing"
            raise FallbackError(f"split-K {s} did not take effect for GEMM {gemm.shape_name}: IREE dispatched "
                                f"{seen}, not {s} partial GEMMs of K {gemm.k // s} and their sum.")


UKERNEL = re.compile(r'iree_codegen\.ukernel_descriptor<"[\w.]+"')


def verify_iree_ukernel(job: Job, dump: Path, stats: list[KernelStats]) -> None:
    """With IREE's tensor ukernels asked for, the dispatch computing each GEMM carries one of IREE's ukernel
    descriptors in its configured IR; else the request silently fell back to IREE's codegen, which is an error."""
    taken = set()
    with ir.Context(), ir.Location.unknown():
        for kernel in stats:
            configured = dump / f"configured_{kernel.dispatch}.mlir"
            text = configured.read_text()
            module = parse_module(text, configured.name)
            if UKERNEL.search(text) and contraction_ops(module):
                taken |= {contraction_key(g) for _, g in gemms_from_mlir(module, configured.name)}
    missing = [g for g in job.gemms if contraction_key(g) not in taken]
    if missing:
        gemm = missing[0]
        raise FallbackError(f"IREE 3.13 compiled GEMM {gemm.shape_name} {gemm.layout} {gemm.dtype} for "
                            f"{job.target.name} without any of its tensor ukernels (pipeline 'ukernel'); they take "
                            "only some shapes and types (e.g. bf16 NT 1024x1024x256); use 'default'.")


class OpAttributeRoute(ScheduleRoute):
    name = "op-attribute"
    about = "compilation_info on the linalg op (CUDA reads no tuning spec)"
    on_op = True

    def spec_refusal(self, job: Job) -> str | None:
        return (f"IREE 3.13 reads no tuning spec for CUDA targets such as {job.target.name}; use `pipelines compile`, "
                "which puts the schedule on the op as compilation_info.")


class HostRoute(ScheduleRoute):
    name = "iree-cpu"
    about = "IREE's CPU pipeline on the plain source"
    splits_reduction = False

    def verified(self, job: Job) -> bool:
        return False

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        return None
