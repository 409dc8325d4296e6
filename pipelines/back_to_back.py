"""A compiled model's time per call with its calls back to back, as a serving loop runs them: each call goes through
the function's asynchronous variant (`NAME$async`, which IREE exports beside each function of a model imported from
ONNX or torch, as `tune-model` writes them), waits on the fence the call before it signals and signals its own, so
the device runs the calls in order while the host does not wait between them. The time is from the first call's
submission to the last call's fence, over the calls (after warm-up calls); the last call's result is compared with a
waited call's, so that a call reading another's buffers early would show. Run in a process of its own (`model_runner
--back-to-back` starts one per measurement), as runtime flags apply to the devices a process creates;
`--device_allocator` (which the Python runtime parses but does not apply) is passed to the device here.

    python -m pipelines.back_to_back --module M.vmfb --function block --inputs DATA --device cuda --calls 30 \\
        [--flag=--cuda_async_allocations=false ...]

prints one JSON line: {"ms_per_call": ..., "calls": N, "max_abs_diff_from_waited": ...}. What it leaves out: the
host's latency before the first call and after the last (once over N calls), which a waited call pays every time
(`model_runner`'s iree-benchmark-module times). Where a call takes the GPU less time than the host takes to submit
one (the VM's invocation, in Python), the host's rate is what it measures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from .runner import RunError, device_or_error

WARMUP_CALLS = 3
clock = time.perf_counter  # seconds; the tests give their own


def fence(rt, semaphore, value: int):
    """The fence of `semaphore` reaching `value` (one place for every fence a measurement makes)."""
    return rt.HalFence.create_at(semaphore, value)


def wait(handle) -> None:
    handle.wait()


def largest_difference(got, want) -> float:
    """The largest absolute elementwise difference of two results, in float64."""
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64))))


ALLOCATOR_FLAG = "--device_allocator="  # a tools' flag: the Python runtime parses it but builds devices without it


def make_device(device: str, allocators: list[str]):
    """The device `device`, with `allocators` (the `--device_allocator` specs, e.g. caching) passed to the driver
    as iree-benchmark-module applies them; one sentence where the runtime refuses either."""
    if not allocators:
        return device_or_error(device)
    import iree.runtime as rt

    try:
        return rt.get_driver(device.split("://")[0]).create_device_by_uri(device, allocators=allocators)
    except (RuntimeError, ValueError) as err:
        device_or_error(device)  # a device that is not there: its own sentence
        raise RunError(f"the runtime does not take {ALLOCATOR_FLAG}{','.join(allocators)} "
                       f"({str(err).split(';')[-1].strip()}).") from None


def back_to_back(vmfb: Path, function: str, device: str, arrays: list[np.ndarray], calls: int,
                 allocators: list[str] | None = None) -> dict:
    """Milliseconds per call of `calls` chained asynchronous calls of `function` (after WARMUP_CALLS), and the
    largest difference of the last call's result from a waited call's; the device with `allocators`
    (`make_device`)."""
    import iree.runtime as rt

    if calls < 1:
        raise RunError(f"--calls {calls}: give 1 or more.")
    config = rt.Config(device=make_device(device, allocators or []))
    context = rt.SystemContext(config=config)
    module = rt.VmModule.copy_buffer(context.instance, vmfb.read_bytes())
    context.add_vm_module(module)
    if module.lookup_function(function) is None:
        raise RunError(f"{vmfb} exports no function '{function}'.")
    waited = np.asarray(context.modules.module[function](*arrays).to_host())
    entry = module.lookup_function(f"{function}$async")
    if entry is None:
        raise RunError(f"{vmfb} exports no {function}$async to call back to back (compile it with IREE's default "
                       "execution model).")
    hal = config.device
    args = [rt.asdevicearray(hal, a) for a in arrays]
    semaphore = hal.create_semaphore(0)
    value = 0

    def submit() -> rt.VmVariantList:
        nonlocal value
        inputs = rt.VmVariantList(len(args) + 2)
        for arg in args:
            inputs.push_ref(arg._buffer_view)  # the DeviceArray's buffer view (the bindings' own attribute)
        inputs.push_ref(fence(rt, semaphore, value))  # the call before it (0: none)
        value += 1
        inputs.push_ref(fence(rt, semaphore, value))
        results = rt.VmVariantList(1)
        context.vm_context.invoke(entry, inputs, results)
        return results

    for _ in range(WARMUP_CALLS):
        submit()
    wait(fence(rt, semaphore, value))
    start = clock()
    results = [submit() for _ in range(calls)]  # kept until the end: no result freed while a call may write it
    wait(fence(rt, semaphore, value))
    elapsed = clock() - start
    last = rt.DeviceArray(hal, results[-1].get_as_object(0, rt.HalBufferView)).to_host()
    return {"ms_per_call": elapsed * 1e3 / calls, "calls": calls,
            "max_abs_diff_from_waited": largest_difference(last, waited)}


def main(argv: list[str] | None = None) -> int:
    from .model_runner import load_arrays

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", type=Path, required=True)
    parser.add_argument("--function", required=True)
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--flag", action="append", default=[], help="a runtime flag, e.g. "
                        "--flag=--cuda_async_allocations=false (repeatable)")
    args = parser.parse_args(argv)
    try:
        if not args.module.is_file():
            raise RunError(f"{args.module} is not a compiled module.")
        arrays, _, _ = load_arrays(args.inputs)  # checked against a waited call, not the reference
        # --device_allocator is applied to the device here (the Python runtime would take it and ignore it)
        allocators = [f.removeprefix(ALLOCATOR_FLAG) for f in args.flag if f.startswith(ALLOCATOR_FLAG)]
        others = [f for f in args.flag if not f.startswith(ALLOCATOR_FLAG)]
        if others:
            import iree.runtime as rt

            try:
                rt.flags.parse_flags(*others)
            except ValueError as err:
                raise RunError(f"the runtime does not take the flags {' '.join(others)} "
                               f"({str(err).split(';')[-1].strip()}).") from None
        report = back_to_back(args.module, args.function, args.device, arrays, args.calls, allocators)
    except RunError as err:
        print(f"back_to_back: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
