"""What the two codegen routes share: the schedule becomes a whole transform-dialect library
(`--iree-codegen-transform-dialect-library`) that lowers the dispatch by itself, for one GEMM given by its shape;
problems that are not whole tiles compile zero-padded (`codegen_script.padded_gemm`)."""

from __future__ import annotations

from pathlib import Path

from transforms import codegen_script, schedule as sched
from transforms.problem import Gemm

from ..job import Job, Prepared
from ..targets import Target, check_problem
from .base import Flags, Route, job_schedule


class LibraryRoute(Route):
    def check(self, schedule: sched.Schedule, gemm: Gemm, target: Target) -> None:
        """One sentence for what this route cannot compile (`codegen_script.check` or `check_lanes`)."""
        raise NotImplementedError

    def choose(self, gemm: Gemm, target: Target) -> sched.Schedule:
        """The `codegen` pipeline's schedule for `gemm` on this route."""
        raise NotImplementedError

    def job_gemm(self, job: Job) -> tuple[Gemm, sched.Schedule]:
        if job.user_source is not None or len(job.gemms) != 1 or job.schedules[0] is None:
            raise sched.ScheduleError("the codegen pipeline compiles one GEMM given with --shape and a schedule, "
                                      "not an input file.")
        gemm, schedule = job.gemms[0], job.schedules[0]
        check_problem(job.target, gemm)
        self.check(schedule, gemm, job.target)
        return gemm, schedule

    def flags(self, prepared: Prepared, spec_file: Path) -> Flags:
        # One executable per dispatch, so that a kernel can be substituted alone (NT/TN add a transpose dispatch).
        return Flags(library=spec_file, extra=("--iree-hal-link-executables=false",))

    def padded_to(self, job: Job) -> str | None:
        schedule, gemm = job_schedule(job), job.gemms[0]
        return None if sched.aligned(schedule, gemm) else codegen_script.padded_gemm(schedule, gemm).shape_name
