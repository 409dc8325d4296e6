"""Do the Hopper kernels' own tensor maps equal what the CUDA driver encodes?

On the GPU machine, from the repository root, with .plans/ and .whl/ (iree-base-runtime) carried along:

    python3 results/h200/tensor-maps/probe.py .plans/tmaps/*.vmfb > $OUT/tensor-maps.jsonl

Each .vmfb is `transforms.hopper.program(..., maps_result=True)` compiled for sm_90a (the program returns C and every
workgroup's two maps), with a .json beside it naming the problem and the maps' fields (`transforms.hopper.tensor_maps`,
made by `python results/h200/tensor-maps/probe.py --build DIR` on the compiling machine). Per program: C against a
float64 product, every workgroup's maps the same, and each map against `cuTensorMapEncodeTiled` with the same fields
(its address bytes located by encoding twice with two addresses; L2 promotion none, which `tensormap.replace` cannot
set), byte by byte.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))


def build(folder: Path) -> None:
    from transforms import hopper
    from transforms.problem import Epilogue, Gemm
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    cases = {"nt-bf16-cluster": (Gemm(1000, 1800, 520, "bf16", "nt", epilogue=Epilogue("truncf")), hopper.DEFAULT),
             "nn-f16-pingpong": (Gemm(768, 640, 1032, "f16", "nn"),
                                 hopper.named_schedule("hopper-pingpong", (128, 128, 64), 5))}
    for name, (gemm, schedule) in cases.items():
        (folder / f"{name}.mlir").write_text(hopper.program(gemm, schedule, maps_result=True))
        subprocess.run([str(Path(sys.executable).parent / "iree-compile"), str(folder / f"{name}.mlir"), "--iree-hal-target-device=cuda",
                        "--iree-cuda-target=sm_90a", "-o", str(folder / f"{name}.vmfb")], check=True)
        (folder / f"{name}.json").write_text(json.dumps({
            "m": gemm.m, "n": gemm.n, "k": gemm.k, "dtype": gemm.dtype, "layout": gemm.layout,
            "out_dtype": gemm.out_dtype, "maps": hopper.tensor_maps(gemm, schedule)}))


def run(vmfb: Path) -> dict:
    import iree.runtime as rt
    import ml_dtypes
    from pipelines import tensormap

    case = json.loads(vmfb.with_suffix(".json").read_text())
    dtype = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[case["dtype"]]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((case["m"], case["k"])).astype(dtype)
    b_shape = (case["k"], case["n"]) if case["layout"] == "nn" else (case["n"], case["k"])
    b = rng.standard_normal(b_shape).astype(dtype)
    config = rt.Config("cuda")
    module = rt.load_vm_flatbuffer_file(str(vmfb), driver="cuda")
    c, maps = module.main(a, b)
    c, maps = np.asarray(c.to_host()).astype(np.float64), np.asarray(maps.to_host()).view(np.uint8)
    bt = b.astype(np.float64) if case["layout"] == "nn" else b.astype(np.float64).T
    want = a.astype(np.float64) @ bt
    slots = maps[:len(maps) - 128].reshape(-1, 256)  # the last 128 bytes: room for aligning the start (unused
    # when the buffer is 128-byte aligned, as IREE's are)
    row = {"case": vmfb.stem, "max_rel_error": float(np.abs(c - want).max() / np.abs(want).max()),
           "workgroups": len(slots), "slots_equal": bool((slots == slots[0]).all())}
    for index, spec in enumerate(case["maps"]):
        ours = slots[0][index * 128:(index + 1) * 128]
        one = tensormap.encode(spec, address=1 << 32, l2_promotion=0).view(np.uint8)
        two = tensormap.encode(spec, address=3 << 36, l2_promotion=0).view(np.uint8)
        address_bytes = np.nonzero(one != two)[0]
        others = np.setdiff1d(np.arange(128), address_bytes)
        differ = [int(i) for i in others if ours[i] != one[i]]
        row[spec["operand"]] = {"address_bytes": [int(i) for i in address_bytes], "other_bytes_differing": differ,
                                "ours": ours.tobytes().hex(), "driver": one.tobytes().hex(),
                                "equal": not differ}
    return row


def main(argv: list[str]) -> int:
    if argv[:1] == ["--build"]:
        build(Path(argv[1]))
        return 0
    for path in argv:
        try:
            print(json.dumps(run(Path(path))), flush=True)
        except Exception as err:  # one sentence per program, and the next one still runs
            print(json.dumps({"case": Path(path).stem, "error": f"{type(err).__name__}: {err}"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
