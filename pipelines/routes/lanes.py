"""The ROCm lane route of the codegen pipeline: each lane computes its MMA fragments straight from global
memory (`codegen_script.lanes_library`), blocks of 128x128 on 2x2 waves, no LDS; `verify.verify_lanes` proves
it in the ISA."""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from transforms import codegen_script
from transforms.problem import Gemm, build_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile, mma_shape

from ..inspect import KernelStats
from ..job import Job, Prepared
from ..targets import Target, TargetError
from ..verify import verify_lanes
from .base import Flags, job_schedule
from .library import LibraryRoute


class LanesRoute(LibraryRoute):
    name = "lanes"
    about = "transform-dialect library, MMA fragments per lane from global memory (ROCm)"

    def check(self, schedule: Schedule, gemm: Gemm, target: Target) -> None:
        codegen_script.check_lanes(schedule, gemm, target)

    def choose(self, gemm: Gemm, target: Target) -> Schedule:
        """128x128 blocks on 2x2 waves, the target's 16x16 intrinsic for the input type, two intrinsic K steps per
        iteration of each lane's K loop, no LDS staging (the route has none)."""
        mmas = [name for name, mma in target.mma.items()
                if mma.operand == gemm.dtype and mma_shape(name)[:2] == (16, 16)]
        if not mmas:
            raise TargetError(f"{target.name} has no 16x16 MMA intrinsic for {gemm.dtype}.")
        mma = min(mmas, key=lambda name: mma_shape(name)[2])
        return Schedule(Tile((128, 128), 2 * mma_shape(mma)[2], (2, 2), mma), Staging(1), Swizzle("none"))

    def prepare(self, job: Job) -> Prepared:
        gemm, schedule = self.job_gemm(job)
        padded = codegen_script.padded_gemm(schedule, gemm)
        with ir.Context(), ir.Location.unknown():
            library = codegen_script.lanes_library(schedule, padded, job.target)
            module = build_module(gemm, padded=padded if padded != gemm else None)
            module.operation.verify()
            return Prepared(job, str(module), str(library), (None,))

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        # IREE's pass IR at the prefetch and swizzle passes goes into the dump as on the tuning-spec route, for a
        # reader comparing the two (verify_lanes reads the ISA only).
        return Flags(library=spec_file, print_pass_ir=True, extra=super().flags(prepared, spec_file).extra)

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job = prepared.job
        kernel, = stats
        verify_lanes(kernel.dispatch, kernel, job_schedule(job), job.gemms[0], job.target)

    def report_extra(self, job: Job) -> dict:
        return {"grid": list(codegen_script.grid(job_schedule(job), job.gemms[0]))}
