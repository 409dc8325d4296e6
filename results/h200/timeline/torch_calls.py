"""Calls of the transformer block under torch.compile, each waited for (as `transformer_block.py torch` times its
`compile_sync_ms`), for Nsight Systems to put on a timeline (run.sh). DATA: a folder of `transformer_block.py
data`; CALLS: how many calls after warm-up."""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F


def block(x, wq, wk, wv, wo, w1, w2):  # as tools/transformer_block.py's torch_times writes it
    q, k, v = x @ wq, x @ wk, x @ wv
    p = torch.softmax((q @ k.T).float(), dim=-1).half()
    return F.gelu(((p @ v) @ wo) @ w1) @ w2


data, calls = Path(sys.argv[1]), int(sys.argv[2])
manifest = json.loads((data / "inputs.json").read_text())["inputs"]
args = [torch.from_numpy(np.load(data / entry["file"])).cuda() for entry in manifest]
fn = torch.compile(block)
for _ in range(20):
    fn(*args)
torch.cuda.synchronize()
for _ in range(calls):
    fn(*args)
    torch.cuda.synchronize()
