"""The seeds' open questions about our warp-group kernels, answered with the timing model (PREDICTED, not measured):
pingpong8's K depth, its LDS swizzle, `s_setprio` on and off, global-load DMA on and off (the double-buffered
kernel and IREE's default), and XOR swizzle against row padding (the double-buffered kernel).

Each variant is compiled through the project's own route (a generated kernel with one schedule field changed, or
IREE's default with one flag), except `s_setprio` off, which is the shipped kernel's ISA with its `s_setprio`
instructions deleted (the model reads the ISA; nothing else changes). Every variant is then predicted.

    python results/predicted/kernel_questions.py --shapes 4096x4096x4096 8192x8192x8192 -o results/predicted/kernel-questions.md
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pipelines import flow
from pipelines.job import Job
from pipelines.output import write_atomic
from pipelines.targets import TARGETS
from pipelines.timing.predict import predict
from transforms.errors import UserError
from transforms.kernels import kernel_schedule
from transforms.lds_swizzle import xor_rows
from transforms.problem import Gemm
from transforms.ukernel_dbuf import LDS_PAD
from pipelines.routes.ukernel import UkernelRoute

UKERNEL = UkernelRoute.name  # the route's name, as a job names it

# (question, variant, target, how): how is ("kernel", name, field changes), ("default", flags) or
# ("no-setprio", kernel name) -- the last edits the shipped kernel's ISA.
VARIANTS = [
    ("pingpong8 K depth", "K 32 (shipped)", "gfx950", ("kernel", "pingpong8", {})),
    ("pingpong8 K depth", "K 64", "gfx950", ("kernel", "pingpong8", {"k": 64})),
    ("pingpong8 K depth", "K 64, two LDS stages by DMA (pingpong8_dma)", "gfx950", ("kernel", "pingpong8_dma", {})),
    ("pingpong8 K depth", "K 32 (shipped)", "gfx942", ("kernel", "pingpong8", {})),
    ("pingpong8 K depth", "K 64", "gfx942", ("kernel", "pingpong8", {"k": 64})),
    ("pingpong8 LDS layout", "XOR swizzle (shipped)", "gfx950", ("kernel", "pingpong8", {})),
    ("pingpong8 LDS layout", "no swizzle", "gfx950", ("kernel", "pingpong8", {"xor_rows": 0})),
    ("pingpong8 LDS layout", "XOR swizzle (shipped)", "gfx942", ("kernel", "pingpong8", {})),
    ("pingpong8 LDS layout", "no swizzle", "gfx942", ("kernel", "pingpong8", {"xor_rows": 0})),
    ("pingpong8 s_setprio", "on (shipped)", "gfx950", ("kernel", "pingpong8", {})),
    ("pingpong8 s_setprio", "off (ISA edited)", "gfx950", ("no-setprio", "pingpong8")),
    ("pingpong8 s_setprio", "on (shipped)", "gfx942", ("kernel", "pingpong8", {})),
    ("pingpong8 s_setprio", "off (ISA edited)", "gfx942", ("no-setprio", "pingpong8")),
    ("global-load DMA", "double_buffered, VGPR staging, XOR", "gfx950",
     ("kernel", "double_buffered", {"lds": "xor"})),
    ("global-load DMA", "double_buffered_dma, XOR (shipped)", "gfx950", ("kernel", "double_buffered_dma", {})),
    ("global-load DMA", "double_buffered, VGPR staging, padded (shipped)", "gfx950",
     ("kernel", "double_buffered", {"lds": "pad"})),
    ("global-load DMA", "double_buffered_dma, padded", "gfx950", ("kernel", "double_buffered_dma", {"lds": "pad"})),
    ("global-load DMA", "IREE default, DMA off", "gfx950", ("default", ("--iree-llvmgpu-use-direct-load=false",))),
    ("global-load DMA", "IREE default, DMA on", "gfx950", ("default", ("--iree-llvmgpu-use-direct-load=true",))),
    ("swizzle vs padding", "double_buffered XOR", "gfx950", ("kernel", "double_buffered", {"lds": "xor"})),
    ("swizzle vs padding", "double_buffered padded", "gfx950", ("kernel", "double_buffered", {"lds": "pad"})),
    ("swizzle vs padding", "interleave4 XOR (shipped)", "gfx950", ("kernel", "interleave4", {"lds": "xor"})),
    ("swizzle vs padding", "interleave4 padded", "gfx950", ("kernel", "interleave4", {"lds": "pad"})),
    ("swizzle vs padding", "double_buffered XOR (shipped)", "gfx942", ("kernel", "double_buffered", {"lds": "xor"})),
    ("swizzle vs padding", "double_buffered padded", "gfx942", ("kernel", "double_buffered", {"lds": "pad"})),
]


def _compile(target, gemm: Gemm, how: tuple, folder: Path) -> None:
    if how[0] == "default":
        flow.compile_job(flow.prepare(Job(target, "default", (gemm,), (None,))), folder, extra_flags=how[1])
        return
    name, changes = (how[1], {}) if how[0] == "no-setprio" else (how[1], dict(how[2]))
    shipped = kernel_schedule(name, gemm.dtype, target)
    if "k" in changes:  # a deeper K step, its XOR swizzle recomputed for the longer LDS rows
        k = changes.pop("k")
        changes = dict(changes, tile=(*shipped.tile[:2], k),
                       xor_rows=xor_rows(target.lds_banks, k, shipped.element_bytes) if shipped.xor_rows else 0)
    lds = changes.pop("lds", None)  # the LDS layout asked for, whatever the target ships
    if lds is not None:
        changes.update(lds_pad=LDS_PAD if lds == "pad" else 0,
                       xor_rows=xor_rows(target.lds_banks, shipped.tile[2], shipped.element_bytes) if lds == "xor"
                       else 0)
    kernel = dataclasses.replace(shipped, **changes)
    import transforms.kernels as kernels

    shipped_schedule = kernels.kernel_schedule
    if kernel != shipped:
        # The double-buffered kernels take only their shipped schedule: for this question the variant stands in
        # for it in the route's check, and nothing else (the compiled kernel is verified as always).
        kernels.kernel_schedule = lambda *args: kernel
    try:
        flow.compile_job(flow.prepare(Job(target, name, (gemm,), (None,), route=UKERNEL, plan=kernel)), folder)
    finally:
        kernels.kernel_schedule = shipped_schedule
    if how[0] == "no-setprio":
        isa = next((folder / "dump").glob("*.rocmasm"))
        lines = isa.read_text().splitlines(keepends=True)
        kept = [line for line in lines if not line.strip().startswith("s_setprio")]
        if len(kept) == len(lines):
            raise UserError(f"the {name} kernel on {target.name} has no s_setprio to delete.")
        isa.write_text("".join(kept))


def _one(job: tuple) -> tuple:
    question, variant, target_name, how, shape, root = job
    m, n, k = map(int, shape.split("x"))
    target = TARGETS[target_name]
    folder = Path(root) / f"{target_name}_{shape}_{abs(hash((question, variant))) % 10**8}"
    try:
        shutil.rmtree(folder, ignore_errors=True)
        _compile(target, Gemm(m, n, k, "bf16", "nt"), how, folder)
        p = predict(folder)
        return (question, variant, target_name, shape, f"{p.microseconds:.1f}", f"{p.tflops:.0f}",
                f"{100 * p.peak_fraction:.0f} %", p.bound, f"{p.seconds:.1f}")
    except UserError as err:
        return (question, variant, target_name, shape, "–", "–", "–", str(err)[:160], "–")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["4096x4096x4096"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    if args.output.exists():
        print(f"{args.output} exists; give a new file name.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="questions-") as root:
        jobs = [(*v, shape, root) for shape in args.shapes for v in VARIANTS]
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            rows = list(pool.map(_one, jobs))
    lines = ["| question | variant | target | M×N×K (bf16 NT) | predicted µs | predicted TFLOP/s | of peak | bound "
             "| model s |", "|---|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    write_atomic(args.output, text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
