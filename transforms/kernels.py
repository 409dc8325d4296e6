"""Generated warp-group kernels by name: which schedule each one follows, where it applies, and its builder.

`pingpong8` (gfx942, gfx950: 8 waves of 64, MFMA) is built by `ukernel.build_pingpong8`; `double_buffered`
and `interleave` (gfx1151: 8 waves of 32, WMMA) by `ukernel_wmma.build_double_buffered`. A kernel is chosen by
its schedule object, so a `Job` carries only the schedule; everything else (intrinsic, name, thread count, the
checks of the problem) is derived here.
"""

from __future__ import annotations

from .hazards import check
from .ukernel import UkernelError, build_pingpong8, check_problem as check_pingpong8, ukernel_mma, \
    ukernel_name, ukernel_schedule
from .ukernel_wmma import WAVE_SIZE, build_double_buffered, wmma_schedule
from .warpgroups import DoubleBuffered, PingPong8, check_lds

# name -> (targets, schedule for an input type)
KERNELS = {
    "pingpong8": (("gfx942", "gfx950"), ukernel_schedule),
    "double_buffered": (("gfx1151",), lambda dtype: wmma_schedule(dtype, fetch_slices=1)),
    "interleave": (("gfx1151",), lambda dtype: wmma_schedule(dtype, fetch_slices=2)),
}
WMMA = {"f16": "WMMAR3_F32_16x16x16_F16", "bf16": "WMMAR3_F32_16x16x16_BF16"}


def kernel_schedule(name: str, dtype: str, target) -> PingPong8 | DoubleBuffered:
    """The shipped schedule of kernel `name` for `dtype`; one sentence when `target` has no such kernel."""
    if name not in KERNELS:
        raise UkernelError(f"--schedule {name} has no generated kernel; choose one of {', '.join(KERNELS)}.")
    targets, make = KERNELS[name]
    if target.name not in targets:
        raise UkernelError(f"the {name} kernel is generated for {' and '.join(targets)}; {target.name} is not "
                           "covered (" + ", ".join(f"{n}: {'/'.join(t)}" for n, (t, _) in KERNELS.items()) + ").")
    return make(dtype)


def kernel_label(schedule: PingPong8 | DoubleBuffered) -> str:
    if isinstance(schedule, DoubleBuffered):
        return "interleave" if schedule.fetch_slices > 1 else "double_buffered"
    return schedule.name


def kernel_name(schedule: PingPong8 | DoubleBuffered, dtype: str, layout: str) -> str:
    if isinstance(schedule, PingPong8):
        return ukernel_name(schedule, dtype, layout)
    return f"{kernel_label(schedule)}_wmma_{layout}_{dtype}_k{schedule.tile[2]}"


def kernel_mma(schedule: PingPong8 | DoubleBuffered, target, dtype: str) -> str:
    if isinstance(schedule, PingPong8):
        return ukernel_mma(target, dtype)
    if target.name != "gfx1151" or dtype not in WMMA:
        raise UkernelError(f"the {kernel_label(schedule)} kernel uses gfx1151's 16x16x16 WMMA on f16 or bf16; "
                           f"not {dtype} on {target.name}.")
    return WMMA[dtype]


def kernel_threads(schedule: PingPong8 | DoubleBuffered) -> int:
    return 8 * 64 if isinstance(schedule, PingPong8) else schedule.waves * schedule.wave_size


def check_kernel(schedule: PingPong8 | DoubleBuffered, gemm, target) -> None:
    """One sentence for anything the generated kernel cannot do for `gemm` on `target`."""
    if isinstance(schedule, PingPong8):
        check_pingpong8(schedule, gemm, target)
        return
    label = kernel_label(schedule)
    kernel_mma(schedule, target, gemm.dtype)
    shipped = wmma_schedule(gemm.dtype, schedule.fetch_slices)
    if schedule != shipped:
        raise UkernelError(f"the {label} kernel is generated for the 128x64x32 tile on 8 waves of {WAVE_SIZE} "
                           "with register prefetch and padded LDS only.")
    if gemm.layout not in ("nt", "nn"):
        raise UkernelError(f"the {label} kernel covers the NT and NN layouts (A stored M×K); "
                           f"{gemm.layout.upper()} is not generated yet.")
    m, n, k = schedule.tile
    if gemm.batched or gemm.m % m or gemm.n % n or gemm.k % k or gemm.k < 2 * k:
        raise UkernelError(f"the {label} kernel needs M a multiple of {m}, N of {n}, K of {k} (at least {2 * k}) "
                           f"and no batch; {gemm.shape_name} is not (use --pipeline auto).")
    if gemm.epilogue.kind != "none":
        raise UkernelError(f"the {label} kernel replaces the contraction only; epilogues are not fused into it.")
    check_lds(schedule, target.lds_bytes, target.name)
    check(schedule.program(4))


def build_kernel(schedule: PingPong8 | DoubleBuffered, gemm, target) -> None:
    """Emit the kernel's `util.func` at the current insertion point."""
    mma = kernel_mma(schedule, target, gemm.dtype)
    if isinstance(schedule, PingPong8):
        build_pingpong8(schedule, gemm.dtype, mma, gemm.layout)
    else:
        build_double_buffered(schedule, gemm.dtype, mma, gemm.layout, kernel_name(schedule, gemm.dtype,
                                                                                     gemm.layout))
