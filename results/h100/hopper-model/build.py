"""Compile the transformer blocks (tools/transformer_block.py) for sm_90a twice: every contraction on the Hopper
kernels (`pipelines.hopper_model.rewrite`) and IREE's default, into OUT/<block>/{hopper,default}.vmfb, with
OUT/<block>/hopper.json naming each contraction's kernel call (and any left to IREE).

    python results/h100/hopper-model/build.py OUT a:4096:2048:8192 c:8192:1024:4096 [--fuse-tail [--pingpong]]

--fuse-tail: the Gelu after W1 in that kernel's store too (the shipped cooperative kernel; with --pingpong, ping-pong).
Its ops are lowered by transforms/tail_math.py since 2026-11-27 (the erf a polynomial); the modules of README.md's
"Gelu fused" runs were built before, with IREE's erf.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def main(argv: list[str]) -> int:
    from pipelines.compiler import iree_compile_path
    from pipelines.hopper_model import rewrite
    from pipelines.model_input import read_model, to_linalg
    from pipelines.targets import get_target

    from transforms import hopper

    flags = {a for a in argv if a.startswith("--")}
    argv = [a for a in argv if not a.startswith("--")]
    fuse = {"fuse_tail": "--fuse-tail" in flags}
    fuse["tail_schedule"] = hopper.named_schedule("hopper-pingpong") if "--pingpong" in flags else hopper.DEFAULT
    out, target = Path(argv[0]), get_target("sm_90a")
    for spec in argv[1:]:
        name, rows, width, mlp = spec.split(":")
        folder = out / name
        folder.mkdir(parents=True, exist_ok=False)
        onnx = folder / "block.onnx"
        subprocess.run([sys.executable, str(ROOT / "tools" / "transformer_block.py"), "onnx", str(onnx), "--rows", rows,
                        "--width", width, "--mlp", mlp, "--weights", "inputs"], check=True)
        linalg = to_linalg(read_model(onnx), target, str(onnx))
        (folder / "linalg.mlir").write_text(linalg)
        model = rewrite(linalg, str(onnx), **fuse)
        (folder / "hopper.mlir").write_text(model.text)
        (folder / "hopper.json").write_text(json.dumps({
            "block": {"rows": int(rows), "width": int(width), "mlp": int(mlp)},
            "calls": [{"function": c.function, "m": c.gemm.m, "n": c.gemm.n, "k": c.gemm.k, "layout": c.gemm.layout,
                       "epilogue": c.gemm.epilogue.kind, "fused_ops": [op[0] for op in c.tail.ops] if c.tail else [],
                       "schedule": c.schedule.describe()} for c in model.calls],
            "left": list(model.left)}, indent=1) + "\n")
        for kind in ("hopper", "default"):
            source = folder / ("hopper.mlir" if kind == "hopper" else "linalg.mlir")
            subprocess.run([str(iree_compile_path()), str(source), *target.compile_flags,
                            f"--iree-hal-dump-executable-files-to={folder / (kind + '_dump')}",
                            "-o", str(folder / f"{kind}.vmfb")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
