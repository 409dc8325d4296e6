"""Build what `run.sh` measures (here, no GPU): the row softmax kernel alone on shapes that reach each of its paths
(OUT/alone/<shape>.vmfb, `transforms.softmax.program`), and the transformer blocks of tools/transformer_block.py
three ways (OUT/<block>/{hopper,nosoftmax,default}.vmfb): `pipelines tune-model --pipeline hopper` as shipped (the
softmax on the row softmax kernel), the same with the softmax left to IREE (`softmax=False`), and IREE's default.

    python results/h200/softmax/build.py OUT
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BLOCKS = {"a": (4096, 2048, 8192), "c": (8192, 1024, 4096)}
# (rows, cols, dtype): 8192 and 4096 columns as the blocks have them; 4104 (a guarded last round), 1000 (128
# threads, no whole round), 8 (one warp, one vector), 16384 (8 vectors a thread), bf16 and f16
ALONE = [(8192, 8192, "f16"), (4096, 4096, "f16"), (3, 4104, "f16"), (64, 1000, "bf16"), (5, 8, "f16"),
         (2, 16384, "bf16"), (300, 2056, "bf16")]


def main(argv: list[str]) -> int:
    from pipelines.compiler import iree_compile_path
    from pipelines.hopper_model import tune_model_hopper
    from pipelines.targets import get_target
    from transforms.softmax import RowSoftmax, program

    out = Path(argv[0])
    if out.exists():
        print(f"{out} exists; give a new folder (nothing is written into one that holds files).", file=sys.stderr)
        return 2
    out.mkdir(parents=True)
    target = get_target("sm_90a")
    (out / "alone").mkdir()
    for rows, cols, dtype in ALONE:
        name = f"{rows}x{cols}x{dtype}"
        source = out / "alone" / f"{name}.mlir"
        source.write_text(program(RowSoftmax(rows, cols, dtype)))
        subprocess.run([iree_compile_path(), str(source), *target.compile_flags, "-o",
                        str(out / "alone" / f"{name}.vmfb")], check=True)
        source.unlink()
    (out / "alone" / "shapes.json").write_text(json.dumps(ALONE) + "\n")
    with tempfile.TemporaryDirectory() as scratch:
        for block, (rows, width, mlp) in BLOCKS.items():
            onnx = Path(scratch) / f"{block}.onnx"
            subprocess.run([sys.executable, "tools/transformer_block.py", "onnx", str(onnx), "--rows", str(rows),
                            "--width", str(width), "--mlp", str(mlp), "--weights", "inputs"], check=True)
            (out / block).mkdir()
            for name, softmax in (("hopper", True), ("nosoftmax", False)):
                folder = Path(scratch) / f"{block}_{name}"
                summary = tune_model_hopper(onnx, target, folder, softmax=softmax)
                shutil.copy(folder / "tuned" / "gemm.vmfb", out / block / f"{name}.vmfb")
                (out / block / f"{name}.json").write_text(json.dumps(
                    {k: summary[k] for k in ("calls", "softmaxes", "iree_dispatches")}, indent=1) + "\n")
                if softmax:
                    shutil.copy(folder / "default" / "gemm.vmfb", out / block / "default.vmfb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
