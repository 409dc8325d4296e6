"""Fingerprint what `pipelines compile` writes for a matrix of configurations, to prove a refactor byte-identical.

Every route (tuning spec, compilation_info on the op, IREE's default, injected ukernel, CUDA codegen library,
ROCm lane route, host CPU) × every target it runs on × input type × layout, plus a few schedule-flag
configurations, the split-reduction route, IREE's own ukernels, a model (`compile --input` and `tune-model` of a
small ONNX transformer block: the model route) and the Hopper route (sm_90a), compiled through the CLI exactly as
a user would. For each configuration the SHA-256 of every
file the compile wrote is recorded (the output folder's path replaced by a placeholder, so two runs into different
folders compare; `UNSTABLE` files are left out); refused configurations record their one-sentence message instead.

    python tools/snapshot.py -o before.json          # record
    python tools/snapshot.py --compare before.json   # compile again and list every difference (exit 1 if any)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# Not compared: the .vmfb container and the host (CPU) code objects and LLVM modules differ between two compiles
# of the same source at the same commit (measured: two runs at dd06aa9).
UNSTABLE = ("gemm.vmfb", "embedded_elf")
SHAPE = "512x512x1024"
PADDED = "1000x1000x1000"
# (target, input types, layouts, pipelines or "kernel:<name>")
MATRIX = [
    ("gfx942", ("f16", "bf16", "f8e4m3fnuz"), ("nn", "nt", "tn"), ("tuned", "auto", "codegen", "kernel:pingpong8")),
    ("gfx950", ("bf16", "f8e4m3fn"), ("nn", "nt", "tn"), ("tuned", "auto", "codegen", "kernel:double_buffered_dma")),
    ("gfx1151", ("f16",), ("nn", "nt", "tn"), ("tuned", "auto", "codegen", "kernel:interleave")),
    ("sm_80", ("f16", "bf16"), ("nn", "nt", "tn"), ("tuned", "codegen", "codegen-raster")),
    ("sm_89", ("f8e4m3fn",), ("nn", "nt"), ("tuned", "auto")),
    ("cpu", ("f16",), ("nn",), ("default",)),
]
EXTRA = [  # schedule flags, padded problems and IREE's default on the GPU targets
    ("gfx942", "bf16", "nt", "default", SHAPE, ()),
    ("gfx942", "f16", "nn", "auto", PADDED, ()),
    ("gfx942", "f16", "nt", "custom", SHAPE, ("--tile", "128x128x32", "--warps", "2x2", "--mma",
                                             "MFMA_F32_32x32x8_F16", "--prefetch", "3", "--lds", "rotate")),
    ("gfx942", "f16", "nn", "kernel:producer_consumer", SHAPE, ()),
    ("gfx942", "bf16", "nt", "kernel:interleave4", SHAPE, ()),
    ("gfx950", "f16", "nt", "tuned", "4096x4096x4096", ("--order", "row")),
    ("gfx950", "bf16", "nn", "default", SHAPE, ()),
    ("sm_80", "bf16", "nn", "codegen", PADDED, ()),
    ("sm_89", "bf16", "nn", "default", SHAPE, ()),
    ("sm_89", "f16", "nn", "auto", "2048x2048x2048", ()),
    # the split-reduction route and IREE's own ROCm ukernels
    ("sm_80", "bf16", "nt", "split-k", "32x8192x8192", ()),
    ("gfx942", "bf16", "nt", "split-k", "64x8192x8192", ()),
    ("sm_80", "f16", "nn", "auto", "16x4096x4096", ()),
    ("gfx942", "bf16", "nt", "ukernel", "4096x4096x4096", ()),
    # the Hopper route and IREE's pipelines on sm_90a
    ("sm_90a", "bf16", "nt", "hopper", SHAPE, ()),
    ("sm_90a", "f16", "nn", "hopper", SHAPE, ()),
    ("sm_90a", "bf16", "nt", "auto", SHAPE, ()),
    ("sm_90a", "bf16", "nn", "default", SHAPE, ()),
    ("sm_90a", "bf16", "nt", "kernel:hopper-pingpong:128x128x6x8", SHAPE, ()),
]
# A model as a user gives it: (name, CLI arguments with {MODEL} for the ONNX block tools/transformer_block.py builds)
MODELS = [
    ("model_compile_gfx942_auto", ["compile", "--input", "{MODEL}", "--target", "gfx942", "--pipeline", "auto"]),
    ("model_compile_sm80_tuned", ["compile", "--input", "{MODEL}", "--target", "sm_80", "--pipeline", "tuned"]),
    ("model_tunemodel_sm80_codegen", ["tune-model", "{MODEL}", "--target", "sm_80", "--pipeline", "codegen"]),
    ("model_tunemodel_gfx942_auto", ["tune-model", "{MODEL}", "--target", "gfx942", "--pipeline", "auto"]),
]
BLOCK = (64, 128, 256)  # rows, width, MLP width of the block
SCRATCH = re.compile(rb"\.[\w.-]*?\.pipelines-tmp-\d+-[0-9a-f]+")


def configurations() -> list[tuple[str, list[str]]]:
    """(name, CLI arguments after `compile`) for every configuration, in a fixed order."""
    rows = [(t, d, layout, p, SHAPE, ()) for t, dtypes, layouts, pipelines in MATRIX for d in dtypes
            for layout in layouts for p in pipelines] + EXTRA
    out = []
    for target, dtype, layout, pipeline, shape, flags in rows:
        choice = (["--schedule", pipeline.removeprefix("kernel:")] if pipeline.startswith("kernel:") else
                  [] if pipeline == "custom" else ["--pipeline", pipeline])
        name = "_".join((target, dtype, layout, pipeline.replace(":", "-"), shape, *flags)).replace("-", "")
        out.append((name, ["compile", "--target", target, "--shape", shape, "--dtype", dtype, "--layout", layout,
                           *choice, *flags]))
    return out + MODELS


def _fingerprint(job: tuple[str, list[str], str]) -> tuple[str, dict]:
    name, args, root = job
    folder = Path(root) / name
    args = [a.replace("{MODEL}", str(Path(root) / "block.onnx")) for a in args]
    done = subprocess.run([sys.executable, "-m", "pipelines", *args, "-o", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no message"]
        return name, {"exit": done.returncode, "message": lines[-1].replace(str(folder), "<out>")}
    placeholder = str(folder).encode()
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if any(part in str(path.relative_to(folder)) for part in UNSTABLE):
            continue
        data = path.read_bytes().replace(placeholder, b"<out>").replace(str(root).encode(), b"<root>")
        # tune-model records the scratch folder it compiled in (a process id and a random suffix)
        data = SCRATCH.sub(b"<scratch>", data)
        files[str(path.relative_to(folder))] = hashlib.sha256(data).hexdigest()
    return name, {"exit": 0, "files": files}


def snapshot(workers: int, only: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="snapshot-") as root:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tools import transformer_block

        transformer_block.build(Path(root) / "block.onnx", *BLOCK)
        jobs = [(name, args, root) for name, args in configurations() if only is None or name.startswith(only)]
        with ProcessPoolExecutor(workers) as pool:
            return dict(pool.map(_fingerprint, jobs))


def differences(before: dict, after: dict) -> list[str]:
    found = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None or new is None:
            found.append(f"{name}: only {'after' if old is None else 'before'}")
        elif old.get("exit") != new.get("exit") or old.get("message") != new.get("message"):
            found.append(f"{name}: exit {old.get('exit')} -> {new.get('exit')} ({new.get('message', '')})")
        else:
            for file in sorted(set(old.get("files", {})) | set(new.get("files", {}))):
                if old["files"].get(file) != new["files"].get(file):
                    found.append(f"{name}: {file} differs")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, help="write the fingerprints here (refuses an existing file)")
    parser.add_argument("--compare", type=Path, help="a recorded snapshot to compare against")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", help="the configurations whose names begin with this (a --compare lists the "
                        "others as missing)")
    args = parser.parse_args()
    if args.output is not None and args.output.exists():
        print(f"{args.output} exists; give a new file name.", file=sys.stderr)
        return 2
    result = snapshot(args.workers, args.only)
    compiled = sum(r["exit"] == 0 for r in result.values())
    print(f"{len(result)} configurations: {compiled} compiled, {len(result) - compiled} refused")
    if args.output is not None:
        args.output.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    if args.compare is not None:
        found = differences(json.loads(args.compare.read_text()), result)
        print("\n".join(found) if found else f"identical to {args.compare}")
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
