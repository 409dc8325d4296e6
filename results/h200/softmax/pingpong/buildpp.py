import sys, shutil
from pathlib import Path
sys.path.insert(0, sys.argv[2])  # a worktree of 26200bf with SCHEDULE_FOR added (README.md)
import pipelines.hopper_model as hm
from pipelines.targets import get_target
from transforms import hopper
PP = hopper.named_schedule("hopper-pingpong")
variants = {"pp": lambda g: PP if g.k <= 2048 else None, "ppqk": lambda g: PP if g.layout == "nt" else None}
out = Path(sys.argv[1])
if out.exists():
    print(f"{out} exists; give a new folder (nothing is written into one that holds files).", file=sys.stderr)
    sys.exit(2)
for b in "ac":
    for name, fn in variants.items():
        hm.SCHEDULE_FOR = fn
        folder = out / "work" / f"{b}_{name}"
        s = hm.tune_model_hopper(Path(f".plans/run3/{b}.onnx"), get_target("sm_90a"), folder)
        print(b, name, [c["schedule"][:40] for c in s["calls"]])
        (out / b).mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "tuned" / "gemm.vmfb", out / b / f"{name}.vmfb")
