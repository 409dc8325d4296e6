"""Each kernel launch of one call of the transformer block in PyTorch (eager, then torch.compile), for Nsight
Compute: the last call of each is inside an NVTX range ("eager_last", "compile_last") after warm-up calls, so that
`ncu --nvtx --nvtx-include eager_last/ --nvtx-include compile_last/` profiles those two calls only, in that order.
DATA: a folder of `tools/transformer_block.py data` (its inputs.json names X and the weights in order).

    ncu --csv --metrics gpu__time_duration.sum --cache-control none --clock-control none --nvtx \
        --nvtx-include eager_last/ --nvtx-include compile_last/ \
        python3 results/h100/torch-kernels/torch_kernels.py DATA
"""

import json
import sys
from pathlib import Path


def main(data: Path) -> None:
    import numpy as np
    import torch
    import torch.nn.functional as F

    def block(x, wq, wk, wv, wo, w1, w2):  # as tools/transformer_block.py's torch_times writes it
        q, k, v = x @ wq, x @ wk, x @ wv
        p = torch.softmax((q @ k.T).float(), dim=-1).half()
        return F.gelu(((p @ v) @ wo) @ w1) @ w2

    manifest = json.loads((data / "inputs.json").read_text())["inputs"]
    args = [torch.from_numpy(np.load(data / entry["file"])).cuda() for entry in manifest]
    for name, fn in (("eager", block), ("compile", torch.compile(block))):
        for _ in range(4):
            fn(*args)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(f"{name}_last")
        fn(*args)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
