"""The transformer block the project tunes as a whole model (issue 17): an ONNX graph built with onnx.helper, the
inputs it is measured on and its float64 result.

    X (S×D) -> Q = X·Wq, K = X·Wk, V = X·Wv (three projections sharing X)
            -> P = softmax(Q·Kᵀ) (a Transpose node that IREE folds into the product: an NT contraction)
            -> A = (P·V)·Wo -> Y = gelu(A·W1)·W2 (the MLP, F wide)

With `heads` H > 1 the attention is multi-head, as exporters write it: Q, K and V reshaped to S×H×(D/H) and
transposed to H×S×(D/H) (K to H×(D/H)×S), Q·Kᵀ and P·V batched matmuls over the heads, a softmax of rank 3 along
its last axis, the heads put back to S×D before ·Wo.

All tensors f16, as an exporter writes a half-precision model. `weights="initializers"` stores the six weight
matrices in the model (the tests); `weights="inputs"` makes them graph inputs after X, so that a compiled model
stays small enough to carry to a GPU machine (the measured rows, results/h100/model/).

    python tools/transformer_block.py onnx OUT.onnx --rows 4096 --width 2048 --mlp 8192 [--weights inputs] [--heads 16]
    python tools/transformer_block.py data DIR --rows 4096 --width 2048 --mlp 8192   # on the GPU machine
    python tools/transformer_block.py torch ROWS.json --rows 4096 --width 2048 --mlp 8192  # the same, in PyTorch

(`data` and `torch` take the same `--heads` as `onnx`.)

`data` writes input0.npy... (X then the weights, the graph's input order), inputs.json and reference.npy (float64,
no intermediate rounding: torch on the GPU when it is there, else numpy). The inputs are seeded normal values scaled
so that every intermediate stays well inside f16's range: X ~ N(0, 1), Wq and Wk ~ N(0, 1/D²) (Q·Kᵀ then has unit
spread, as the 1/sqrt(D) attention scale gives in a trained model), the others ~ N(0, 1/fan-in).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

WEIGHTS = ("Wq", "Wk", "Wv", "Wo", "W1", "W2")
SEED = 17


def weight_shapes(width: int, mlp: int) -> dict[str, tuple[int, int]]:
    square = (width, width)
    return {"Wq": square, "Wk": square, "Wv": square, "Wo": square, "W1": (width, mlp), "W2": (mlp, width)}


def check_heads(width: int, heads: int) -> None:
    if heads < 1 or width % heads:
        raise ValueError(f"--heads {heads} does not divide the width {width} into whole heads.")


def build(path: Path, rows: int, width: int, mlp: int, weights: str = "initializers", heads: int = 1) -> Path:
    """Write the block as an ONNX model to `path` (needs the onnx package: the project's onnx extra)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    check_heads(width, heads)
    node = helper.make_node
    nodes = [node("MatMul", ["X", "Wq"], ["Q"]), node("MatMul", ["X", "Wk"], ["K"]), node("MatMul", ["X", "Wv"], ["V"])]
    shapes = []
    if heads == 1:
        nodes += [node("Transpose", ["K"], ["Kt"], perm=[1, 0]), node("MatMul", ["Q", "Kt"], ["scores"]),
                  node("Softmax", ["scores"], ["probs"], axis=-1), node("MatMul", ["probs", "V"], ["ctx"])]
    else:  # S×D -> S×H×dh -> H×S×dh (K: H×dh×S), batched over the heads, back to S×D
        split = np.array([rows, heads, width // heads], dtype=np.int64)
        shapes = [numpy_helper.from_array(split, "split_heads"),
                  numpy_helper.from_array(np.array([rows, width], dtype=np.int64), "join_heads")]
        for name in ("Q", "K", "V"):
            nodes.append(node("Reshape", [name, "split_heads"], [f"{name}s"]))
        nodes += [node("Transpose", ["Qs"], ["Qh"], perm=[1, 0, 2]), node("Transpose", ["Ks"], ["Kt"], perm=[1, 2, 0]),
                  node("Transpose", ["Vs"], ["Vh"], perm=[1, 0, 2]), node("MatMul", ["Qh", "Kt"], ["scores"]),
                  node("Softmax", ["scores"], ["probs"], axis=-1), node("MatMul", ["probs", "Vh"], ["ctxh"]),
                  node("Transpose", ["ctxh"], ["ctxs"], perm=[1, 0, 2]),
                  node("Reshape", ["ctxs", "join_heads"], ["ctx"])]
    nodes += [node("MatMul", ["ctx", "Wo"], ["attn"]), node("MatMul", ["attn", "W1"], ["h"]),
              node("Gelu", ["h"], ["g"]), node("MatMul", ["g", "W2"], ["Y"])]
    f16 = TensorProto.FLOAT16
    inputs = [helper.make_tensor_value_info("X", f16, [rows, width])]
    arrays = weight_arrays(width, mlp)
    if weights == "inputs":
        inputs += [helper.make_tensor_value_info(name, f16, list(arrays[name].shape)) for name in WEIGHTS]
        initializers = []
    else:
        initializers = [numpy_helper.from_array(arrays[name], name) for name in WEIGHTS]
    graph = helper.make_graph(nodes, "block", inputs, [helper.make_tensor_value_info("Y", f16, [rows, width])],
                              initializer=initializers + shapes)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def weight_arrays(width: int, mlp: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    scale = {"Wq": 1 / width, "Wk": 1 / width, "Wv": width ** -0.5, "Wo": width ** -0.5, "W1": width ** -0.5,
             "W2": mlp ** -0.5}
    return {name: (rng.standard_normal(shape, dtype=np.float32) * scale[name]).astype(np.float16)
            for name, shape in weight_shapes(width, mlp).items()}


def inputs(rows: int, width: int, mlp: int) -> list[tuple[str, np.ndarray]]:
    """The graph's inputs in order (weights as inputs), seeded."""
    x = np.random.default_rng(SEED + 1).standard_normal((rows, width), dtype=np.float32).astype(np.float16)
    return [("X", x), *weight_arrays(width, mlp).items()]


def _attention(q, k, v, heads: int, softmax, permute):
    """softmax(Q·Kᵀ)·V over `heads` heads of q, k, v (S×D, numpy or torch: `permute(a, axes)` transposes), S×D."""
    rows, width = q.shape
    split = (rows, heads, width // heads)
    qh, kt, vh = (permute(a.reshape(split), axes) for a, axes in ((q, (1, 0, 2)), (k, (1, 2, 0)), (v, (1, 0, 2))))
    return permute(softmax(qh @ kt) @ vh, (1, 0, 2)).reshape(rows, width)


def reference(arrays: dict[str, np.ndarray], heads: int = 1) -> np.ndarray:
    """The block's result in float64 from f16 inputs, without rounding in between."""
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        t = {name: torch.from_numpy(a.astype(np.float64)).cuda() for name, a in arrays.items()}
        x = t["X"]
        q, k, v = x @ t["Wq"], x @ t["Wk"], x @ t["Wv"]
        if heads == 1:
            ctx = torch.softmax(q @ k.T, dim=-1) @ v
        else:
            ctx = _attention(q, k, v, heads, lambda s: torch.softmax(s, dim=-1), lambda a, axes: a.permute(*axes))
        h = (ctx @ t["Wo"]) @ t["W1"]
        return ((0.5 * h * (1 + torch.erf(h / math.sqrt(2)))) @ t["W2"]).cpu().numpy()
    a = {name: value.astype(np.float64) for name, value in arrays.items()}
    x = a["X"]
    q, k, v = x @ a["Wq"], x @ a["Wk"], x @ a["Wv"]

    def softmax(scores):
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return probs / probs.sum(axis=-1, keepdims=True)

    ctx = softmax(q @ k.T) @ v if heads == 1 else _attention(q, k, v, heads, softmax, np.transpose)
    h = (ctx @ a["Wo"]) @ a["W1"]
    erf = np.vectorize(math.erf)
    return (0.5 * h * (1 + erf(h / math.sqrt(2)))) @ a["W2"]


def write_data(folder: Path, rows: int, width: int, mlp: int, heads: int = 1) -> None:
    check_heads(width, heads)
    folder.mkdir(parents=True, exist_ok=True)
    named = inputs(rows, width, mlp)
    manifest = []
    for i, (name, array) in enumerate(named):
        np.save(folder / f"input{i}.npy", array)
        manifest.append({"name": name, "file": f"input{i}.npy", "shape": list(array.shape), "dtype": "f16"})
    np.save(folder / "reference.npy", reference(dict(named), heads))
    (folder / "inputs.json").write_text(json.dumps({"inputs": manifest, "reference": "reference.npy"}, indent=1) + "\n")


def torch_times(rows: int, width: int, mlp: int, seconds: float = 2.0, rounds: int = 5, heads: int = 1) -> dict:
    """The block in PyTorch on the GPU, as a user would write it (f16, `F.gelu` exact, softmax in f32 as the ONNX
    graph computes it), eager and under `torch.compile`, on the same inputs: ms per call, median over `rounds` of
    `seconds` of back-to-back calls timed by CUDA events, the two taking turns; `{name}_sync_ms`: the same calls
    timed as iree-benchmark-module times a module's (host wall clock per call, each call waited for before the
    next); and each one's largest error against the float64 reference, relative to the reference's largest
    magnitude."""
    import torch
    import torch.nn.functional as F

    check_heads(width, heads)
    named = dict(inputs(rows, width, mlp))
    t = {name: torch.from_numpy(a).cuda() for name, a in named.items()}

    def block(x, wq, wk, wv, wo, w1, w2):
        q, k, v = x @ wq, x @ wk, x @ wv
        p = torch.softmax((q @ k.T).float(), dim=-1).half()
        return F.gelu(((p @ v) @ wo) @ w1) @ w2

    def multihead(x, wq, wk, wv, wo, w1, w2):
        q, k, v = x @ wq, x @ wk, x @ wv
        ctx = _attention(q, k, v, heads, lambda s: torch.softmax(s.float(), dim=-1).half(),
                         lambda a, axes: a.permute(*axes))
        return F.gelu((ctx @ wo) @ w1) @ w2

    block = block if heads == 1 else multihead
    args = [t[name] for name in ("X", *WEIGHTS)]
    want = reference(named, heads)
    scale = float(np.abs(want).max())
    runs = {"eager": block, "compile": torch.compile(block)}
    result: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    for name, fn in runs.items():
        got = fn(*args).float().cpu().numpy()
        result[f"{name}_max_rel_error"] = float(np.abs(got - want).max() / scale)
    times: dict[str, list[float]] = {name: [] for name in runs}
    synced: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            fn(*args)
            torch.cuda.synchronize()
            calls, elapsed = 0, 0.0
            start.record()
            while elapsed < seconds * 1000:
                for _ in range(10):
                    fn(*args)
                calls += 10
                end.record()
                end.synchronize()
                elapsed = start.elapsed_time(end)
            times[name].append(elapsed / calls)
            waited, began = [], time.perf_counter()
            while time.perf_counter() - began < seconds:
                tick = time.perf_counter()
                fn(*args)
                torch.cuda.synchronize()
                waited.append((time.perf_counter() - tick) * 1000)
            synced[name].append(float(np.median(waited)))
    for name, values in synced.items():
        result[f"{name}_sync_ms"] = float(np.median(values))
        result[f"{name}_sync_rounds_ms"] = values
    for name, values in times.items():
        result[f"{name}_ms"] = float(np.median(values))
        result[f"{name}_rounds_ms"] = values
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("onnx", "data", "torch"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--mlp", type=int, default=8192)
    parser.add_argument("--weights", choices=("initializers", "inputs"), default="inputs")
    parser.add_argument("--heads", type=int, default=1, help="attention heads (the width a multiple of them)")
    args = parser.parse_args(argv)
    taken = args.out.exists() and (args.what != "data" or not args.out.is_dir() or any(args.out.iterdir()))
    if taken:  # a user's file or folder is never overwritten
        print(f"transformer_block: error: {args.out} exists; give a new {'folder' if args.what == 'data' else 'file'}.",
              file=sys.stderr)
        return 2
    try:
        check_heads(args.width, args.heads)
    except ValueError as err:
        print(f"transformer_block: error: {err}", file=sys.stderr)
        return 2
    if args.what == "onnx":
        build(args.out, args.rows, args.width, args.mlp, args.weights, args.heads)
    elif args.what == "torch":
        result = torch_times(args.rows, args.width, args.mlp, heads=args.heads)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    else:
        write_data(args.out, args.rows, args.width, args.mlp, args.heads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
