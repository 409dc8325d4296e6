"""How much of a Hopper kernel's time is its store: each problem's shipped kernel (truncf epilogue), and the same
kernel with every store to C an empty instruction (its values still computed: the inline asm keeps its operands),
compiled into OUT/<name>/{stored,unstored}.vmfb with the inputs' shapes in OUT/<name>/shapes.json.

    python results/h100/hopper-store/build.py OUT

store.json was measured at 5763021, when every 16-bit C went out in 4-byte pairs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

PROBLEMS = {"proj_c": (8192, 1024, 1024, "nn"), "qk_c": (8192, 8192, 1024, "nt"), "proj_a": (4096, 2048, 2048, "nn"),
            "w2_a": (4096, 2048, 8192, "nn")}


def main(out: Path) -> int:
    from pipelines.compiler import iree_compile_path
    from pipelines.targets import get_target
    from transforms import hopper
    from transforms.problem import Epilogue, Gemm

    flags = get_target("sm_90a").compile_flags
    for name, (m, n, k, layout) in PROBLEMS.items():
        gemm = Gemm(m, n, k, "f16", layout, epilogue=Epilogue("truncf"))
        text = hopper.program(gemm, hopper.DEFAULT)
        unstored, count = re.subn(r'"st\.global\.b32 \[\$0(\+\d+)?\], \$1;"', '"// $0 $1"', text)
        # since the staged stores (after store.json was measured): the stmatrix, read back and 16-byte store too
        unstored, staged = re.subn(r'"bar\.warp\.sync -1; stmatrix[^"]*"', '"// $0 $1 $2 $3 $4 $5"', unstored)
        assert count + staged > 0, "no store found"
        folder = out / name
        folder.mkdir(parents=True)
        b_shape = [n, k] if layout == "nt" else [k, n]
        (folder / "shapes.json").write_text(json.dumps({"a": [m, k], "b": b_shape, "mnk": [m, n, k]}) + "\n")
        for kind, source in (("stored", text), ("unstored", unstored)):
            (folder / f"{kind}.mlir").write_text(source)
            subprocess.run([str(iree_compile_path()), str(folder / f"{kind}.mlir"), *flags, "-o",
                            str(folder / f"{kind}.vmfb")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
