"""On the GPU machine: each module's time per call (iree-benchmark-module, as `pipelines.model_runner` times it)
under IREE runtime flag sets that a user may pass, the sets taking turns for a few rounds; one JSON file.

    python results/h200/softmax/flags.py DATA OUT.json NAME=PATH.vmfb ...
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

FLAG_SETS = {
    "cached": ("--cuda_async_allocations=false", "--device_allocator=caching"),
    "cached_graphs": ("--cuda_async_allocations=false", "--device_allocator=caching", "--cuda_use_streams=false"),
    "cached_inline": ("--cuda_async_allocations=false", "--device_allocator=caching",
                      "--cuda_allow_inline_execution=true"),
}
ROUNDS = 3


def main(argv: list[str]) -> int:
    from pipelines.model_runner import load_inputs, time_ms

    data, output = Path(argv[0]), Path(argv[1])
    if output.exists():
        print(f"{output} exists; give a new file (nothing is written over one).", file=sys.stderr)
        return 2
    modules = dict(a.split("=", 1) for a in argv[2:])
    _, inputs, _ = load_inputs(data)
    times: dict = {name: {flags: [] for flags in FLAG_SETS} for name in modules}
    for _ in range(ROUNDS):
        for name, vmfb in modules.items():
            for flags, values in FLAG_SETS.items():
                times[name][flags].append(time_ms(Path(vmfb), "block", "cuda", inputs, values))
    summary = {name: {flags: {"median_ms": statistics.median(t), "times_ms": t} for flags, t in by.items()}
               for name, by in times.items()}
    output.write_text(json.dumps({"flag_sets": FLAG_SETS, "modules": modules, "times": summary}, indent=1) + "\n")
    for name, by in summary.items():
        print(name, {flags: round(v["median_ms"], 4) for flags, v in by.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
