"""The ceiling of the instruction IREE 3.13's CUDA path emits: mma.sync m16n8k16 (f16 in, f32 accumulate) alone.

A kernel that does nothing but `CHAINS` independent mma.sync per warp per loop step (operands in registers, no
memory traffic) is JIT-compiled by the driver for this GPU and timed with CUDA events, for a few warp counts per
SM. Its TFLOP/s bound every GEMM built from mma.sync on this GPU, whatever the tiling or pipelining; comparing a
kernel with it separates "the instruction is the limit" from "the schedule is the limit". Needs only libcuda:
`python results/h100/mma_sync_ceiling.py` prints one JSON line per configuration.
"""

from __future__ import annotations

import ctypes
import json
import sys

CHAINS = 16  # independent accumulators per warp: enough to cover the instruction's latency
ITERATIONS = 4096
FLOPS_PER_MMA = 2 * 16 * 8 * 16
PTX_VERSION = {"sm_80": "7.6", "sm_89": "8.4"}  # as IREE 3.13 emits for these targets
ATTR_MULTIPROCESSOR_COUNT = 16
JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6


def _ptx(target: str) -> str:
    """The kernel: A and B fragments are constants, CHAINS accumulators of 4 f32 registers each."""
    body = []
    for chain in range(CHAINS):
        c = ", ".join(f"%c{4 * chain + i}" for i in range(4))
        body.append(f"    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{c}}}, {{%a0, %a1, %a2, %a3}}, "
                    f"{{%b0, %b1}}, {{{c}}};")
    accumulators = 4 * CHAINS
    zero = "\n".join(f"    mov.f32 %c{i}, 0f00000000;" for i in range(accumulators))
    total = "\n".join(f"    add.f32 %sum, %sum, %c{i};" for i in range(accumulators))
    return f"""
.version {PTX_VERSION[target]}
.target {target}
.address_size 64
.visible .entry mma_loop(.param .u64 out, .param .u32 iterations)
{{
    .reg .b32 %a<4>;
    .reg .b32 %b<2>;
    .reg .f32 %c<{accumulators}>;
    .reg .f32 %sum;
    .reg .pred %p;
    .reg .b32 %i, %n, %thread, %block, %width, %gid;
    .reg .b64 %ptr, %offset;
    mov.b32 %a0, 0x3c003c00;
    mov.b32 %a1, 0x3c003c00;
    mov.b32 %a2, 0x3c003c00;
    mov.b32 %a3, 0x3c003c00;
    mov.b32 %b0, 0x3c003c00;
    mov.b32 %b1, 0x3c003c00;
{zero}
    ld.param.u32 %n, [iterations];
    mov.u32 %i, 0;
LOOP:
{chr(10).join(body)}
    add.u32 %i, %i, 1;
    setp.lt.u32 %p, %i, %n;
    @%p bra LOOP;
    mov.f32 %sum, 0f00000000;
{total}
    mov.u32 %thread, %tid.x;
    mov.u32 %block, %ctaid.x;
    mov.u32 %width, %ntid.x;
    mad.lo.u32 %gid, %block, %width, %thread;
    ld.param.u64 %ptr, [out];
    mul.wide.u32 %offset, %gid, 4;
    add.u64 %ptr, %ptr, %offset;
    st.global.f32 [%ptr], %sum;
    ret;
}}
"""


def _check(cuda, result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what} failed with CUDA error {result}")


def main() -> int:
    cuda = ctypes.CDLL("libcuda.so.1")
    device, context, module, function = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    _check(cuda, cuda.cuInit(0), "cuInit")
    _check(cuda, cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "context")
    _check(cuda, cuda.cuCtxSetCurrent(context), "context")
    sms = ctypes.c_int()
    _check(cuda, cuda.cuDeviceGetAttribute(ctypes.byref(sms), ATTR_MULTIPROCESSOR_COUNT, device), "SM count")
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, device)
    for target in ("sm_80", "sm_89"):
        log = ctypes.create_string_buffer(1 << 14)
        options = (ctypes.c_int * 2)(JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(1 << 14))
        result = cuda.cuModuleLoadDataEx(ctypes.byref(module), _ptx(target).encode() + b"\0", 2, options, values)
        _check(cuda, result, f"JIT {target}: {log.value.decode(errors='replace').strip()}")
        _check(cuda, cuda.cuModuleGetFunction(ctypes.byref(function), module, b"mma_loop"), "kernel")
        for warps_per_block, blocks_per_sm in ((4, 1), (4, 2), (8, 1), (4, 4), (8, 2)):
            threads, blocks = 32 * warps_per_block, sms.value * blocks_per_sm
            out = ctypes.c_void_p()
            _check(cuda, cuda.cuMemAlloc_v2(ctypes.byref(out), threads * blocks * 4), "alloc")
            iterations = ctypes.c_uint(ITERATIONS)
            params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.pointer(out), ctypes.c_void_p),
                                           ctypes.cast(ctypes.pointer(iterations), ctypes.c_void_p))
            start, stop = ctypes.c_void_p(), ctypes.c_void_p()
            cuda.cuEventCreate(ctypes.byref(start), 0)
            cuda.cuEventCreate(ctypes.byref(stop), 0)
            launch = lambda: cuda.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, None, params, None)  # noqa
            _check(cuda, launch(), "warm-up")
            times = []
            for _ in range(5):
                cuda.cuEventRecord(start, None)
                _check(cuda, launch(), "launch")
                cuda.cuEventRecord(stop, None)
                _check(cuda, cuda.cuEventSynchronize(stop), "sync")
                ms = ctypes.c_float()
                cuda.cuEventElapsedTime(ctypes.byref(ms), start, stop)
                times.append(ms.value)
            median = sorted(times)[len(times) // 2]
            flops = blocks * warps_per_block * ITERATIONS * CHAINS * FLOPS_PER_MMA
            print(json.dumps({"device": name.value.decode(), "ptx_target": target, "sms": sms.value,
                              "warps_per_block": warps_per_block,
                              "warps_per_sm": warps_per_block * blocks_per_sm, "chains_per_warp": CHAINS,
                              "median_ms": median, "tflops": flops / median / 1e9}), flush=True)
            cuda.cuMemFree_v2(out)
        cuda.cuModuleUnload(module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
