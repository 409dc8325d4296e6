"""One compile, end to end: problem -> schedule -> delivery route -> iree-compile -> inspect -> verify -> report.

A `Job` says what to compile (GEMMs, each with a schedule or None for IREE's heuristic, and the source they
come from). `prepare` validates everything and builds the linalg source and transform script in memory;
`compile_job` writes them, compiles into a scratch folder, checks every requested choice in the output and
writes `report.json`. Nothing reaches the output folder unless all of that succeeds (see `output`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from iree.compiler import ir
from iree.compiler import version as iree_version

from transforms import codegen_script, config, schedule as sched
from transforms.problem import Gemm, build_module, contraction_ops, gemms_from_mlir, parse_module
from transforms.tuning_spec import tuning_spec
from transforms.kernels import build_kernel, check_kernel, kernel_label, kernel_name, kernel_threads
from transforms.warpgroups import DoubleBuffered, PingPong8, ProducerConsumer

from .compiler import DUMP_DIR, run_iree_compile
from .inspect import KernelStats, inspect_dump, ptx_kernels
from .output import output_folder
from .targets import Target, check_problem
from .verify import FallbackError, verify_codegen, verify_dispatch, verify_lanes, verify_ukernel

SOURCE_FILE, SPEC_FILE, REPORT_FILE = "gemm.mlir", "spec.mlir", "report.json"
# The codegen route's retyped input types (bf16): the f16 kernel's first compile, and its retyped PTX.
KERNEL_DIR, RETYPED_PTX = "f16_kernel", "retyped.ptx"


@dataclass(frozen=True)
class Job:
    target: Target
    pipeline: str
    gemms: tuple[Gemm, ...]
    schedules: tuple[sched.Schedule | None, ...]  # one per GEMM; None leaves it to IREE
    user_source: str | None = None  # text of a user .mlir; None builds the source from the single GEMM
    ukernel: PingPong8 | DoubleBuffered | ProducerConsumer | None = None  # a generated kernel, as a ukernel
    codegen: bool = False  # the schedule becomes a full transform-dialect codegen library (CUDA)


@dataclass(frozen=True)
class Prepared:
    job: Job
    source: str
    spec: str | None  # the transform script (tuning spec), for every GPU job that schedules something
    infos: tuple[str | None, ...]  # compilation_info per GEMM, printed


def _key(gemm: Gemm) -> Gemm:
    return gemm.with_(epilogue=type(gemm.epilogue)())


def prepare(job: Job) -> Prepared:
    """Validate the job against its target and build source and transform script (nothing is written)."""
    if job.ukernel is not None:
        return _prepare_ukernel(job)
    if job.codegen:
        return _prepare_codegen(job)
    for gemm, schedule in zip(job.gemms, job.schedules):
        check_problem(job.target, gemm)
        if schedule is not None:
            sched.check(schedule, gemm, job.target)
    with ir.Context(), ir.Location.unknown():
        infos = [config.compilation_info(s, g, job.target) if s is not None else None
                 for g, s in zip(job.gemms, job.schedules)]
        scheduled = [(g, i) for g, i in zip(job.gemms, infos) if i is not None]
        spec = str(tuning_spec(scheduled)) if scheduled else None
        on_op = job.target.backend == "cuda"  # CUDA reads compilation_info from the op, not from specs
        if job.user_source is None:
            module = build_module(job.gemms[0], infos[0] if on_op else None)
        else:
            module = parse_module(job.user_source, "the input file")
            if on_op:
                for op, info in zip(contraction_ops(module), infos):
                    if info is not None:
                        op.attributes["compilation_info"] = info
        module.operation.verify()
        return Prepared(job, str(module), spec, tuple(str(i) if i is not None else None for i in infos))


def _prepare_ukernel(job: Job) -> Prepared:
    (gemm,), schedule = job.gemms, job.ukernel
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


def _prepare_codegen(job: Job) -> Prepared:
    (gemm,), (schedule,) = job.gemms, job.schedules
    if job.user_source is not None or schedule is None:
        raise sched.ScheduleError("the codegen pipeline compiles one GEMM given with --shape and a schedule, not "
                                  "an input file.")
    check_problem(job.target, gemm)
    codegen_script.check(schedule, gemm, job.target)
    padded = codegen_script.padded_gemm(schedule, gemm)
    with ir.Context(), ir.Location.unknown():
        library = codegen_script.codegen_library(schedule, padded, job.target)
        cuda = job.target.backend == "cuda"
        module = build_module(gemm, kernel=codegen_script.kernel_gemm(gemm) if cuda else None,
                              padded=padded if padded != gemm else None)
        module.operation.verify()
        return Prepared(job, str(module), str(library), (None,))


def compile_job(prepared: Prepared, out: Path, extra_flags: tuple[str, ...] = (), force: bool = False) -> dict:
    """Compile into `out`; `force` writes into a folder that holds files this tool did not write (they stay)."""
    job = prepared.job
    with output_folder(out, "compile", force) as folder:
        moved_to = (folder, Path(os.path.abspath(out)))
        source = folder / SOURCE_FILE
        source.write_text(prepared.source)
        spec_path = None
        if prepared.spec is not None:
            (folder / SPEC_FILE).write_text(prepared.spec)
            spec_path = folder / SPEC_FILE if job.target.backend == "rocm" and not job.codegen else None
        evidence = job.target.backend == "rocm" and prepared.spec is not None and job.ukernel is None
        if job.ukernel is not None:
            extra_flags = (*extra_flags, "--iree-rocm-enable-tensor-ukernels")
        library = folder / SPEC_FILE if job.codegen else None
        if job.codegen:
            # One PTX per executable, so that the kernel can be substituted alone (NT/TN add a transpose dispatch).
            extra_flags = (*extra_flags, "--iree-hal-link-executables=false")
        f16_kernel = _retyped_kernel(job, source, folder, library, extra_flags, moved_to) if _retyped(job) else None
        if f16_kernel is not None:
            extra_flags = (*extra_flags, f"--iree-hal-substitute-executable-object="
                           f"{f16_kernel.dispatch.removeprefix('module_')}={folder / RETYPED_PTX}")
        compiled = run_iree_compile(source, folder, job.target, spec_path, print_pass_ir=evidence,
                                    extra_flags=extra_flags, library=library, moved_to=moved_to)
        stats = inspect_dump(compiled.dump, job.target)
        if f16_kernel is not None:
            stats = _linked_retyped(job, folder, compiled.dump, stats, f16_kernel)
        if job.target.backend != "cpu":
            _verify(prepared, compiled.dump, stats)
        report = _report(prepared, stats, folder, compiled.command)
        (folder / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _retyped(job: Job) -> bool:
    return job.codegen and job.target.backend == "cuda" and codegen_script.retyped(job.gemms[0])


def _retyped_kernel(job: Job, source: Path, folder: Path, library: Path, extra_flags: tuple[str, ...],
                    moved_to: tuple[Path, Path]) -> KernelStats:
    """Compile the f16 kernel into KERNEL_DIR, write its PTX with the mma.sync retyped to the problem's input type
    to RETYPED_PTX, and return the f16 kernel's stats (its dispatch names the executable to substitute: codegen
    compiles one executable per dispatch)."""
    (folder / KERNEL_DIR).mkdir()
    first = run_iree_compile(source, folder / KERNEL_DIR, job.target, extra_flags=extra_flags, library=library,
                             moved_to=moved_to)
    first.vmfb.unlink()  # the f16 kernel on bf16 bits: never to be run
    kernels = [k for k in inspect_dump(first.dump, job.target) if k.mma_count]
    if len(kernels) != 1:
        raise FallbackError(f"the codegen schedule for {job.gemms[0].dtype} did not take effect: the f16 kernel "
                            f"compile has {len(kernels)} dispatches with mma.sync, expected 1.")
    ptx = first.dump / kernels[0].isa_file
    (folder / RETYPED_PTX).write_text(codegen_script.retype_mma(ptx.read_text(), job.gemms[0], job.target))
    return kernels[0]


def _linked_retyped(job: Job, folder: Path, dump: Path, stats: list[KernelStats], f16: KernelStats
                    ) -> list[KernelStats]:
    """The final compile linked the retyped PTX byte for byte; its kernel's shared memory is then the f16
    kernel's (the substituted object comes without IREE's LLVM IR, where the allocations are read)."""
    kernel = next((k for k in stats if k.mma_count), None)
    if kernel is None or (dump / kernel.isa_file).read_text() != (folder / RETYPED_PTX).read_text():
        raise FallbackError(f"the codegen schedule for {job.gemms[0].dtype} did not take effect: the compiled "
                            f"module does not carry the retyped PTX ({RETYPED_PTX}).")
    return [dataclasses.replace(k, lds_bytes=f16.lds_bytes) if k is kernel else k for k in stats]


def _verify(prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
    job = prepared.job
    if job.codegen:
        _verify_codegen(job, dump, stats)
        return
    if job.ukernel is not None:
        kernel, = stats
        with ir.Context(), ir.Location.unknown():
            verify_ukernel(kernel.dispatch, dump / f"configured_{kernel.dispatch}.mlir", kernel, job.ukernel,
                           job.gemms[0], job.target)
        return
    wanted = {_key(g): (s, i) for g, s, i in zip(job.gemms, job.schedules, prepared.infos) if s is not None}
    seen = set()
    with ir.Context(), ir.Location.unknown():
        for kernel in stats:
            configured = dump / f"configured_{kernel.dispatch}.mlir"
            module = parse_module(configured.read_text(), configured.name)
            found = gemms_from_mlir(module, configured.name) if contraction_ops(module) else []
            for op, gemm in found:
                if _key(gemm) in wanted:
                    schedule, info = wanted[_key(gemm)]
                    verify_dispatch(kernel.dispatch, op, dump, kernel, schedule, gemm, ir.Attribute.parse(info),
                                    job.target)
                    seen.add(_key(gemm))
    missing = [g for g in wanted if g not in seen]
    if missing:
        raise FallbackError(f"the schedule for GEMM {missing[0].shape_name} {missing[0].layout} "
                            f"{missing[0].dtype} did not take effect: no dispatch computes that contraction.")


def _verify_codegen(job: Job, dump: Path, stats: list[KernelStats]) -> None:
    (gemm,), (schedule,) = job.gemms, job.schedules
    if job.target.backend == "rocm":
        kernel, = stats
        verify_lanes(kernel.dispatch, kernel, schedule, gemm, job.target)
        return
    padded = codegen_script.padded_gemm(schedule, gemm)
    transposes = codegen_script.transposed_operands(gemm)
    if padded == gemm and len(stats) != 1 + len(transposes):  # padding adds copy dispatches of its own
        raise FallbackError(f"the codegen schedule for GEMM {gemm.shape_name} {gemm.layout} {gemm.dtype} did not take "
                            f"effect as planned: {len(stats)} dispatches, expected the kernel and "
                            f"{len(transposes)} transpose(s) of {', '.join(transposes) or 'no operand'}.")
    for kernel in stats:
        if kernel.mma_count:
            configured = dump / f"configured_{kernel.dispatch}.mlir"
            with ir.Context(), ir.Location.unknown():
                module = parse_module(configured.read_text(), configured.name)
                computed = [_key(g) for _, g in gemms_from_mlir(module, configured.name)]
            if computed != [codegen_script.kernel_gemm(padded)]:  # the f16 NN GEMM the library compiles
                choice = f"padding to {padded.shape_name}" if padded != gemm else f"GEMM {gemm.shape_name}"
                raise FallbackError(f"{kernel.dispatch}: requested {choice} did not take effect: the dispatch computes "
                                    f"{', '.join(g.shape_name for g in computed)}.")
            ptx = ptx_kernels((dump / kernel.isa_file).read_text())
            text = next(t for name, t in ptx.items() if name.startswith(kernel.dispatch.removeprefix("module_")))
            verify_codegen(kernel.dispatch, text, kernel, schedule, gemm, job.target)
            return
    raise FallbackError(f"the codegen schedule for GEMM {gemm.shape_name} {gemm.layout} {gemm.dtype} did not take "
                        "effect: no dispatch issues mma.sync.")


def _describe(schedule: sched.Schedule | None, gemm: Gemm, job: Job) -> str:
    if schedule is None:
        return "IREE default heuristic"
    note = codegen_script.operand_note(gemm) if job.codegen and job.target.backend == "cuda" else ""
    return f"{schedule.describe()}; {note}" if note else schedule.describe()


def _report(prepared: Prepared, stats: list[KernelStats], folder: Path, command: tuple[str, ...]) -> dict:
    job = prepared.job
    main = max(stats, key=lambda s: (s.mma_count, s.lds_bytes or 0)) if stats else KernelStats("none", "")
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return {
        "target": job.target.name,
        "pipeline": job.pipeline,
        "problems": [dict(asdict(g), flops=g.flops) for g in job.gemms],
        "schedules": [asdict(s) if s is not None else None for s in job.schedules],
        "padded_to": (codegen_script.padded_gemm(job.schedules[0], job.gemms[0]).shape_name
                      if job.codegen and not sched.aligned(job.schedules[0], job.gemms[0]) else None),
        "schedule_summary": ([f"{kernel_label(job.ukernel)} ukernel, tile {'x'.join(map(str, job.ukernel.tile))}, "
                              f"{job.ukernel.lds_stages} LDS stage(s) (numerics: CPU emulator only)"]
                             if job.ukernel is not None else
                             [_describe(s, g, job) for g, s in zip(job.gemms, job.schedules)]),
        "lds_bytes": main.lds_bytes,
        "vgpr_count": main.vgpr_count,
        "agpr_count": main.agpr_count,
        "spill_count": main.spill_count,
        "mma_count": main.mma_count,
        "mma": main.mma,
        "occupancy": main.occupancy,
        "verified": job.target.backend != "cpu" and (job.ukernel is not None or any(s is not None
                                                                                     for s in job.schedules)),
        "dispatches": [k.as_dict() for k in stats],
        "files": {"source": SOURCE_FILE, "spec": SPEC_FILE if prepared.spec else None, "vmfb": "gemm.vmfb",
                  "dump": DUMP_DIR, "all": files},
        "iree_compiler": iree_version.VERSION,
        "command": " ".join(command),
        **({"grid": list(codegen_script.grid(job.schedules[0], job.gemms[0]))}
           if job.codegen and job.target.backend == "rocm" else {}),
    }
