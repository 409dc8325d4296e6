"""The `split-reduction` route: the GEMM's reduction split in the linalg program (`transforms.split_k`), our
configuration on the partial products carried by the op (ROCm and CUDA both read it there), IREE's on their sum.

`verify` proves in the output that the partial products run as configured: the dispatch that carries our
lowering_config and translation_info exists, with the MMA instruction, thread count and shared memory of a tile
kernel (`verify_dispatch`), or, for the streaming kernel, no MMA, no shared memory and no spills; and that a second
dispatch sums the S slices.
"""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import iree_codegen

from transforms import schedule as sched
from transforms.split_k import SplitK, Streaming, build_split_module, check_split, partial_gemm, streaming_info
from transforms.problem import parse_module
from transforms import config

from ..inspect import KernelStats
from ..job import Job, Prepared
from ..targets import check_problem
from ..verify import FallbackError, verify_configuration, verify_dispatch
from .base import Route, RouteError
from .spec import DISPATCH_NAME


def job_split(job: Job) -> SplitK:
    if not isinstance(job.plan, SplitK):
        raise RouteError(f"pipeline {job.pipeline} gives no split-K plan for this route.")
    return job.plan


def split_info(job: Job) -> ir.Attribute:
    """The partial op's compilation_info (in the caller's context)."""
    split, gemm = job_split(job), job.gemms[0]
    if isinstance(split.partial, Streaming):
        return streaming_info(gemm, split.partial, job.target.wave_size)
    return config.compilation_info(split.partial, partial_gemm(gemm, split), job.target)


class SplitReductionRoute(Route):
    name = "split-reduction"
    about = "the reduction split in the linalg program; compilation_info on the partial-product op"

    def prepare(self, job: Job) -> Prepared:
        split = job_split(job)
        if len(job.gemms) != 1 or job.user_source is not None:
            raise RouteError("split-K schedules build their own program for one --shape problem, not an --input "
                             "file.")
        gemm = job.gemms[0]
        check_problem(job.target, gemm)
        if not job.target.gpu:
            raise RouteError(f"split-K schedules are GPU kernels; {job.target.name} compiles with IREE's CPU pipeline.")
        check_split(gemm, split)
        if not isinstance(split.partial, Streaming):
            sched.check(split.partial, partial_gemm(gemm, split), job.target)
        with ir.Context(), ir.Location.unknown():
            info = split_info(job)
            module = build_split_module(gemm, split, info)
            module.operation.verify()
            return Prepared(job, str(module), None, (str(info),))

    def spec_refusal(self, job: Job) -> str | None:
        return ("a split-K schedule is carried by the op of the program it builds, not by a tuning spec; use "
                "`pipelines compile`.")

    def verified(self, job: Job) -> bool:
        return True

    def summary(self, job: Job) -> list[str]:
        return [job_split(job).describe()]

    def report_extra(self, job: Job) -> dict:
        split = job_split(job)
        kind = "streaming" if isinstance(split.partial, Streaming) else "tile"
        units = job.compute_units or job.target.units()
        return {"split_k": {"splits": split.splits, "partial_kernel": kind, "why": job.split_reason,
                            "compute_units": units.to_json()}}

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job = prepared.job
        split, gemm = job_split(job), job.gemms[0]
        partial, sums = None, []
        with ir.Context(), ir.Location.unknown():
            info = ir.Attribute.parse(prepared.infos[0] or "")
            lowering = str(iree_codegen.CompilationInfoAttr(info).lowering_config)
            for kernel in stats:  # each configured IR read once: the partial products' op, and the sums' names
                configured = dump / f"configured_{kernel.dispatch}.mlir"
                text = configured.read_text()
                named = DISPATCH_NAME.search(text)
                if named and named[1] == "reduction":
                    sums.append(tuple(int(d) for d in named[2].split("x")))
                if partial is None:
                    module = parse_module(text, configured.name)  # kept: the op's parents live in it
                    ops = _ops_with_lowering(module, lowering)
                    partial = (kernel, ops[0], module) if ops else None
            if partial is None:
                raise FallbackError(f"split-K {split.splits}: no dispatch computes the partial products with the "
                                    f"requested configuration {lowering}.")
            kernel, op, _ = partial
            if isinstance(split.partial, Streaming):
                verify_configuration(kernel.dispatch, op, info)
                _verify_streaming(kernel, split.partial)
            else:
                verify_dispatch(kernel.dispatch, op, dump, kernel, split.partial, partial_gemm(gemm, split), info,
                                job.target)
        if not any(dims[-1] == split.splits for dims in sums):
            raise FallbackError(f"split-K {split.splits}: no dispatch sums the {split.splits} partial products of "
                                f"GEMM {gemm.shape_name}.")


def _ops_with_lowering(module: ir.Module, lowering: str) -> list[ir.Operation]:
    found = []

    def visit(op):
        if "lowering_config" in op.attributes and str(op.attributes["lowering_config"]) == lowering:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _verify_streaming(kernel: KernelStats, streaming: Streaming) -> None:
    threads = streaming.workgroup_n // streaming.thread_n
    problems = [(kernel.mma, "MMA instructions"), (kernel.lds_bytes, "shared memory"),
                (kernel.spill_count, "spilled registers"),
                (kernel.workgroup_size not in (None, threads), f"{kernel.workgroup_size} threads, not {threads}")]
    for value, what in problems:
        if value:
            raise FallbackError(f"{kernel.dispatch}: the streaming kernel was asked for no MMA, no shared memory "
                                f"and no spills with {threads} threads; the compiled kernel has {what}.")
