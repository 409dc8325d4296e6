"""One compile, end to end: problem -> schedule -> route -> iree-compile -> inspect -> verify -> report.

A `Job` says what to compile (GEMMs, each with a schedule or None for IREE's heuristic, and the source they
come from). `prepare` has the job's route (`pipelines.routes`) validate everything and build the linalg source
and transform script in memory; `compile_job` writes them, has the route compile into a scratch folder and check
every requested choice in the output, and writes `report.json`. Nothing reaches the output folder unless all of
that succeeds (see `output`). This driver never asks which route it holds.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path


from .compiler import DUMP_DIR, compiler_version
from .inspect import KernelStats
from .job import Job, Prepared
from .output import output_folder
from .routes import route_for
from .routes.codegen import KERNEL_DIR, RETYPED_PTX

SOURCE_FILE, SPEC_FILE, REPORT_FILE = "gemm.mlir", "spec.mlir", "report.json"


def prepare(job: Job) -> Prepared:
    """Validate the job against its target and build source and transform script (nothing is written)."""
    return route_for(job).prepare(job)


def compile_job(prepared: Prepared, out: Path, extra_flags: tuple[str, ...] = (), force: bool = False,
                check: bool = True, final: Path | None = None) -> dict:
    """Compile into `out`; `force` writes into a folder that holds files this tool did not write (they stay).
    `check=False` keeps a kernel the route's checks would refuse (a coverage grid wants the spilling kernel itself);
    its report says `verified: false`. `final`: where `out` ends up when it lies in another command's scratch
    folder (tune-model's), so that the recorded compile command names the folder the user finds."""
    route = route_for(prepared.job)
    with output_folder(out, "compile", force) as folder:
        moved_to = (folder, Path(os.path.abspath(final or out)))
        source = folder / SOURCE_FILE
        source.write_text(prepared.source)
        if prepared.spec is not None:
            (folder / SPEC_FILE).write_text(prepared.spec)
        compiled, stats = route.compile(prepared, source, folder, folder / SPEC_FILE, extra_flags, moved_to)
        if check:
            route.verify(prepared, compiled.dump, stats)
        report = _report(prepared, stats, folder, compiled.command)
        report["verified"] = report["verified"] and check
        (folder / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _report(prepared: Prepared, stats: list[KernelStats], folder: Path, command: tuple[str, ...]) -> dict:
    job = prepared.job
    route = route_for(job)
    main = max(stats, key=lambda s: (s.mma_count, s.lds_bytes or 0)) if stats else KernelStats("none", "")
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return {
        "target": job.target.name,
        "pipeline": job.pipeline,
        "problems": [dict(asdict(g), flops=g.flops) for g in job.gemms],
        "schedules": [asdict(s) if s is not None else None for s in job.schedules],
        "padded_to": route.padded_to(job),
        "schedule_summary": route.summary(job),
        "lds_bytes": main.lds_bytes,
        "vgpr_count": main.vgpr_count,
        "agpr_count": main.agpr_count,
        "spill_count": main.spill_count,
        "mma_count": main.mma_count,
        "mma": main.mma,
        "occupancy": main.occupancy,
        "verified": route.verified(job),
        "dispatches": [k.as_dict() for k in stats],
        "files": {"source": SOURCE_FILE, "spec": SPEC_FILE if prepared.spec else None, "vmfb": "gemm.vmfb",
                  "dump": DUMP_DIR, "all": files},
        "iree_compiler": compiler_version(),
        "command": " ".join(command),
        **route.report_extra(job),
        **({"choice": job.choice.as_dict()} if job.choice is not None else {}),
    }


__all__ = ["KERNEL_DIR", "RETYPED_PTX", "REPORT_FILE", "SOURCE_FILE", "SPEC_FILE", "Job", "Prepared",
           "compile_job", "prepare"]
