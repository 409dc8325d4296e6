# On the GPU machine, from the repository root, with .plans/store (build.py's output) and .whl/ carried:
#   bash results/h100/hopper-store/run.sh        -> $OUT/store.json: each kernel's GPU time (Nsight Compute)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 - "$OUT/store.json" <<'PY' 2>> $OUT/err.txt
import json, sys
from pathlib import Path
import numpy as np
from pipelines.model_runner import dispatch_times_us
rows = {}
for folder in sorted(Path(".plans/store").iterdir()):
    shapes = json.loads((folder / "shapes.json").read_text())
    rng = np.random.default_rng(0)
    flags = []
    for operand in ("a", "b"):
        path = Path(f"/tmp/{folder.name}_{operand}.npy")
        np.save(path, rng.standard_normal(shapes[operand], dtype=np.float32).astype(np.float16))
        flags.append(f"--input=@{path}")
    for kind in ("stored", "unstored"):
        launches = dispatch_times_us(folder / f"{kind}.vmfb", "main", "cuda", flags)
        rows[f"{folder.name}/{kind}"] = {"mnk": shapes["mnk"], "launches": launches}
        print(folder.name, kind, launches, flush=True)
Path(sys.argv[1]).write_text(json.dumps(rows, indent=1) + "\n")
PY
