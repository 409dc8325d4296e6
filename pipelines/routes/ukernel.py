"""The ukernel route: a generated warp-group kernel (`transforms.kernels`) replaces the contraction.

The tuning spec matches the GEMM, gives it the kernel's workgroup and annotates it with an `iree_codegen.ukernel`
descriptor; the kernel's `util.func` travels in the spec and IREE inlines it (`--iree-rocm-enable-tensor-ukernels`).
`verify` finds the descriptor in the configured IR and the kernel's schedule in the ISA (`verify.verify_ukernel`).
"""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from transforms import config
from transforms.kernels import build_kernel, check_kernel, kernel_label, kernel_name, kernel_threads
from transforms.problem import build_module
from transforms.tuning_spec import tuning_spec

from ..inspect import KernelStats
from ..job import Job, Prepared
from ..targets import check_problem
from ..verify import verify_ukernel
from .base import Flags, Route, job_kernel


class UkernelRoute(Route):
    name = "ukernel"
    about = "a generated warp-group kernel injected as a ukernel through the tuning spec (ROCm)"

    def prepare(self, job: Job) -> Prepared:
        (gemm,), schedule = job.gemms, job_kernel(job)
        check_problem(job.target, gemm)
        check_kernel(schedule, gemm, job.target)
        name = kernel_name(schedule, gemm.dtype, gemm.layout)
        with ir.Context(), ir.Location.unknown():
            info = config.ukernel_compilation_info(schedule.tile[:2], kernel_threads(schedule), job.target.wave_size,
                                                   waves_per_eu=2)
            spec = tuning_spec([(gemm, info)], {0: (name, lambda: build_kernel(schedule, gemm, job.target))})
            module = build_module(gemm)
            module.operation.verify()
            return Prepared(job, str(module), str(spec), (str(info),))

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        return Flags(spec=spec_file, extra=("--iree-rocm-enable-tensor-ukernels",))

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job = prepared.job
        kernel, = stats
        with ir.Context(), ir.Location.unknown():
            verify_ukernel(kernel.dispatch, dump / f"configured_{kernel.dispatch}.mlir", kernel, job_kernel(job),
                           job.gemms[0], job.target)

    def verified(self, job: Job) -> bool:
        return True

    def summary(self, job: Job) -> list[str]:
        kernel = job_kernel(job)
        return [f"{kernel_label(kernel)} ukernel, tile {'x'.join(map(str, kernel.tile))}, {kernel.lds_stages} LDS "
                "stage(s) (numerics: CPU emulator only)"]
