"""Generated warp-group kernels by name: which schedule each one follows, where it applies, and its builder.

`pingpong8` (gfx942, gfx950: 8 waves of 64, MFMA) is built by `ukernel.build_pingpong8`; `double_buffered`
(all three AMD targets), `double_buffered_dma` (gfx950's direct global-to-LDS loads), `interleave4` (gfx942,
gfx950: 4 waves of 64) and `interleave` (gfx1151: 8 waves of 32, WMMA) by `ukernel_dbuf.build_double_buffered`,
`producer_consumer` (gfx942, gfx950) by `ukernel_dbuf.build_producer_consumer`. A kernel is chosen by its
schedule object, so a `Job` carries only the schedule; everything else (intrinsic, name, thread count, the
checks of the problem) is derived here. Which targets have which kernel, and the intrinsic a kernel uses there,
are the target's facts (`Target.kernels`, `Target.ukernel_mma`).
"""

from __future__ import annotations

from .hazards import check
from .schedule import mma_shape
from .ukernel import UkernelError, build_pingpong8, check_problem as check_pingpong8, ukernel_mma, ukernel_name, \
    ukernel_schedule
from .lds_swizzle import lds_swizzle
from .ukernel_dbuf import build_double_buffered, build_producer_consumer, dbuf_schedule, pc_schedule
from .warpgroups import DoubleBuffered, PingPong8, ProducerConsumer, check_lds

Kernel = PingPong8 | DoubleBuffered | ProducerConsumer


def _dbuf(name: str, fetch_slices: int, dma: bool = False):
    return lambda dtype, target, mma_k: dbuf_schedule(dtype, target.wave_size, mma_k, fetch_slices,
                                                      target.lds_banks, dma=dma,
                                                      padded=name in target.padded_kernels)


# name -> the shipped schedule for (dtype, target, K of the target's intrinsic)
KERNELS = {
    "pingpong8": lambda dtype, target, mma_k: ukernel_schedule(dtype, target.lds_banks),
    "pingpong8_dma": lambda dtype, target, mma_k: ukernel_schedule(dtype, target.lds_banks, lds_stages=2),
    "double_buffered": _dbuf("double_buffered", 1),
    "double_buffered_dma": _dbuf("double_buffered_dma", 1, dma=True),
    "interleave4": _dbuf("interleave4", 4),
    "interleave": _dbuf("interleave", 2),
    "producer_consumer": lambda dtype, target, mma_k: pc_schedule(dtype, mma_k, target.lds_banks),
}


def _covered(name: str, target) -> None:
    if name not in target.kernels:
        raise UkernelError(f"the {name} kernel is not generated for {target.name}; it has "
                           f"{', '.join(target.kernels) or 'no generated kernels'}.")


def kernel_schedule(name: str, dtype: str, target) -> Kernel:
    """The shipped schedule of kernel `name` for `dtype` on `target`; one sentence when there is none."""
    if name not in KERNELS:
        raise UkernelError(f"--schedule {name} has no generated kernel; choose one of {', '.join(KERNELS)}.")
    _covered(name, target)
    return KERNELS[name](dtype, target, mma_shape(ukernel_mma(target, dtype, name))[2])


def kernel_label(schedule: Kernel) -> str:
    if isinstance(schedule, (PingPong8, ProducerConsumer)):
        return schedule.name
    if not schedule.register_prefetch:
        return "double_buffered_dma"
    if schedule.fetch_slices == 1:
        return "double_buffered"
    return "interleave" if schedule.wave_size == 32 else "interleave4"


def kernel_name(schedule: Kernel, dtype: str, layout: str) -> str:
    if isinstance(schedule, PingPong8):
        return ukernel_name(schedule, dtype, layout)
    if isinstance(schedule, ProducerConsumer):
        return f"{schedule.name}_{schedule.producers}p{schedule.consumers}c_{layout}_{dtype}_k{schedule.tile[2]}"
    return f"{kernel_label(schedule)}_w{schedule.wave_size}_{layout}_{dtype}_k{schedule.tile[2]}"


def kernel_mma(schedule: Kernel, target, dtype: str) -> str:
    label = kernel_label(schedule)
    _covered(label, target)
    return ukernel_mma(target, dtype, label)


def kernel_threads(schedule: Kernel) -> int:
    if isinstance(schedule, PingPong8):
        return 8 * 64
    if isinstance(schedule, ProducerConsumer):
        return (schedule.producers + schedule.consumers) * schedule.wave_size
    return schedule.waves * schedule.wave_size


def check_kernel(schedule: Kernel, gemm, target) -> None:
    """One sentence for anything the generated kernel cannot do for `gemm` on `target`."""
    if isinstance(schedule, PingPong8):
        _covered(kernel_label(schedule), target)
        check_pingpong8(schedule, gemm, target)
        return
    label = kernel_label(schedule)
    kernel_mma(schedule, target, gemm.dtype)  # refuses a target the kernel is not generated for
    shipped = kernel_schedule(label, gemm.dtype, target)
    if schedule != shipped:
        m, n, k = shipped.tile
        raise UkernelError(f"the {label} kernel is generated for the {m}x{n}x{k} tile on {kernel_threads(shipped)} "
                           f"threads with register prefetch and {'padded' if shipped.lds_pad else 'XOR-swizzled'} "
                           "LDS only.")
    if isinstance(schedule, DoubleBuffered) and not schedule.register_prefetch and gemm.layout != "nt":
        raise UkernelError(f"the {label} kernel loads 16-byte pieces of K-contiguous rows straight into LDS; it "
                           f"covers the NT layout only, not {gemm.layout.upper()}.")
    m, n, k = schedule.tile
    if gemm.batched or gemm.m % m or gemm.n % n or gemm.k % k or gemm.k < 2 * k:
        raise UkernelError(f"the {label} kernel needs M a multiple of {m}, N of {n}, K of {k} (at least {2 * k}) "
                           f"and no batch; {gemm.shape_name} is not (use --pipeline auto).")
    if gemm.epilogue.kind != "none":
        raise UkernelError(f"the {label} kernel replaces the contraction only; epilogues are not fused into it.")
    check_lds(schedule, target.lds_bytes, target.name)
    check(schedule.program(4))
    swizzle = lds_swizzle(schedule)
    if swizzle is not None:
        swizzle.check(16)


def build_kernel(schedule: Kernel, gemm, target) -> None:
    """Emit the kernel's `util.func` at the current insertion point."""
    mma = kernel_mma(schedule, target, gemm.dtype)
    name = kernel_name(schedule, gemm.dtype, gemm.layout)
    if isinstance(schedule, PingPong8):
        build_pingpong8(schedule, gemm.dtype, mma, gemm.layout, target.lds_banks)
    elif isinstance(schedule, ProducerConsumer):
        build_producer_consumer(schedule, gemm.dtype, mma, gemm.layout, name)
    else:
        build_double_buffered(schedule, gemm.dtype, mma, gemm.layout, name)
