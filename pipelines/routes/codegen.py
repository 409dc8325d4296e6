"""The CUDA codegen library route: the whole kernel from a transform-dialect library (`codegen_script`):
cp.async stages, ldmatrix and mma.sync, row or raster workgroup order.

bf16 compiles the f16 kernel first (KERNEL_DIR) and links its PTX with every mma.sync retyped to bf16
(RETYPED_PTX, `--iree-hal-substitute-executable-object`); `verify` reads the PTX of the kernel dispatch
(`verify.verify_codegen`). The `codegen` pipeline's choice (`choose`) and the schedule search (`candidates`) of
this route live here.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from iree.compiler import ir

from transforms import codegen_script
from transforms.codegen_script import codegen_mma
from transforms.problem import Gemm, build_module, parse_module, gemms_from_mlir
from transforms.schedule import Schedule, ScheduleError, Staging, Swizzle, Tile, aligned

from ..compiler import Compiled, run_iree_compile
from ..inspect import KernelStats, dispatch_ptx, inspect_dump
from ..job import Job, Prepared, contraction_key
from ..targets import Target, TargetError
from ..tune_cache import TuneError
from ..verify import FallbackError, verify_codegen
from .base import job_schedule
from .library import LibraryRoute

# The bf16 kernel's first compile (the f16 kernel) and its retyped PTX.
KERNEL_DIR, RETYPED_PTX = "f16_kernel", "retyped.ptx"

# (block tile, warp grid), preferred first; tune --route codegen on an H100 measured 128x256x32 on 2x4 warps with
# 4 stages fastest at 4096³ and 8192³ f16 (results/h100/tune_codegen_*).
CHOICE_TILES = (((128, 256), (2, 4)), ((128, 128), (2, 2)))
# NT (TN): below this M (N) the transpose dispatch of B (A), whose traffic does not shrink with M (N), outweighs
# the GEMM: an H200 measured codegen at 0.51x IREE's default on 16x8192x8192 NT, 0.69x on 128x8192x8192 NT and
# 0.99x on 257x4096x4096 NT (results/h200/awkward/earlier/run1_7c4aa9a.jsonl).
CODEGEN_MIN_KEPT = 512

# The schedule search: (block tile, warp grid) pairs, K steps and cp.async stages.
SEARCH_TILES = [((128, 128), (2, 2)), ((128, 128), (2, 4)), ((128, 256), (2, 4)), ((256, 128), (4, 2)),
                ((128, 256), (4, 2)), ((256, 128), (2, 4)), ((256, 256), (4, 4)), ((128, 64), (2, 2)),
                ((64, 128), (2, 2))]
SEARCH_K_STEPS = [32, 64]
SEARCH_STAGES = [2, 3, 4]


class CodegenLibraryRoute(LibraryRoute):
    name = "codegen-library"
    about = "transform-dialect codegen library: cp.async, ldmatrix, mma.sync (CUDA)"
    raster = True
    compiles_models = True  # tune-model --pipeline codegen (routes.model: one library for a model's contractions)

    def check(self, schedule: Schedule, gemm: Gemm, target: Target) -> None:
        codegen_script.check(schedule, gemm, target)

    def choose(self, gemm: Gemm, target: Target) -> Schedule:
        kept = {"nt": ("M", gemm.m), "tn": ("N", gemm.n)}.get(gemm.layout)
        if kept is not None and kept[1] < CODEGEN_MIN_KEPT:
            (operand,) = codegen_script.transposed_operands(gemm)
            raise TargetError(f"pipeline 'codegen' transposes {operand} of a {gemm.layout.upper()} GEMM in a dispatch "
                              f"of its own, which costs more than a GEMM with {kept[0]}={kept[1]} (< "
                              f"{CODEGEN_MIN_KEPT}) computes (an H200 ran 16x8192x8192 and 128x8192x8192 NT at "
                              "0.51-0.69x IREE's default); use 'default' or 'auto'.")
        options = [Schedule(Tile(tile, 32, warps, codegen_mma(gemm.dtype)), Staging(stages), Swizzle("pad"))
                   for tile, warps in CHOICE_TILES for stages in (4, 3, 2)]
        # Tiles that divide the problem first: a padded one computes (and copies) the padding too.
        options.sort(key=lambda schedule: not aligned(schedule, gemm))
        for schedule in options:
            try:
                codegen_script.check(schedule, gemm, target)
                return schedule
            except ScheduleError:
                continue
        return options[-1]  # compiling it raises the sentence that says why nothing fits

    def candidates(self, gemm: Gemm, target: Target) -> list[Schedule]:
        """Schedules that pass the route's check, one per tile, K step and depth."""
        found = []
        for (tile, warps), k, stages in itertools.product(SEARCH_TILES, SEARCH_K_STEPS, SEARCH_STAGES):
            schedule = Schedule(Tile(tile, k, warps, codegen_mma(gemm.dtype)), Staging(stages), Swizzle("pad"))
            try:
                codegen_script.check(schedule, gemm, target)
            except ScheduleError:
                continue
            found.append(schedule)
        if not found:
            raise TuneError(f"no codegen schedule for {gemm.shape_name} {gemm.dtype} passes the checks on "
                            f"{target.name}.")
        return found

    def prepare(self, job: Job) -> Prepared:
        gemm, schedule = self.job_gemm(job)
        padded = codegen_script.padded_gemm(schedule, gemm)
        with ir.Context(), ir.Location.unknown():
            library = codegen_script.codegen_library(schedule, padded)
            module = build_module(gemm, kernel=codegen_script.kernel_gemm(gemm),
                                  padded=padded if padded != gemm else None)
            module.operation.verify()
            return Prepared(job, str(module), str(library), (None,))

    def compile(self, prepared: Prepared, source: Path, folder: Path, spec_file: Path, extra_flags: tuple[str, ...],
                moved_to: tuple[Path, Path]) -> tuple[Compiled, list[KernelStats]]:
        job = prepared.job
        if not codegen_script.retyped(job.gemms[0]):
            return super().compile(prepared, source, folder, spec_file, extra_flags, moved_to)
        flags = self.flags(prepared, spec_file)
        extra_flags = (*extra_flags, *flags.extra)
        f16 = _retyped_kernel(job, source, folder, flags.library, extra_flags, moved_to)
        extra_flags = (*extra_flags, f"--iree-hal-substitute-executable-object="
                       f"{f16.dispatch.removeprefix('module_')}={folder / RETYPED_PTX}")
        compiled = run_iree_compile(source, folder, job.target, extra_flags=extra_flags, library=flags.library,
                                    moved_to=moved_to)
        stats = _linked_retyped(job, folder, compiled.dump, inspect_dump(compiled.dump, job.target), f16)
        return compiled, stats

    def verify(self, prepared: Prepared, dump: Path, stats: list[KernelStats]) -> None:
        job = prepared.job
        (gemm,), schedule = job.gemms, job_schedule(job)
        padded = codegen_script.padded_gemm(schedule, gemm)
        transposes = codegen_script.transposed_operands(gemm)
        if padded == gemm and len(stats) != 1 + len(transposes):  # padding adds copy dispatches of its own
            raise FallbackError(f"the codegen schedule for GEMM {gemm.shape_name} {gemm.layout} {gemm.dtype} did not "
                                f"take effect as planned: {len(stats)} dispatches, expected the kernel and "
                                f"{len(transposes)} transpose(s) of {', '.join(transposes) or 'no operand'}.")
        for kernel in stats:
            if kernel.mma_count:
                configured = dump / f"configured_{kernel.dispatch}.mlir"
                with ir.Context(), ir.Location.unknown():
                    module = parse_module(configured.read_text(), configured.name)
                    computed = [contraction_key(g) for _, g in gemms_from_mlir(module, configured.name)]
                if computed != [codegen_script.kernel_gemm(padded)]:  # the f16 NN GEMM the library compiles
                    choice = f"padding to {padded.shape_name}" if padded != gemm else f"GEMM {gemm.shape_name}"
                    raise FallbackError(f"{kernel.dispatch}: requested {choice} did not take effect: the dispatch "
                                        f"computes {', '.join(g.shape_name for g in computed)}.")
                text = dispatch_ptx((dump / kernel.isa_file).read_text(), kernel.dispatch)
                verify_codegen(kernel.dispatch, text, kernel, schedule, gemm, job.target)
                return
        raise FallbackError(f"the codegen schedule for GEMM {gemm.shape_name} {gemm.layout} {gemm.dtype} did not take "
                            "effect: no dispatch issues mma.sync.")

    def describe(self, schedule: Schedule | None, gemm: Gemm) -> str:
        text = super().describe(schedule, gemm)
        note = codegen_script.operand_note(gemm)
        return f"{text}; {note}" if note and schedule is not None else text


def _retyped_kernel(job: Job, source: Path, folder: Path, library: Path | None, extra_flags: tuple[str, ...],
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
