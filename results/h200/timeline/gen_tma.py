"""Build blocks a, c and m (the multi-head block) with every Hopper kernel storing C by TMA (`tma_store`; the
schedules otherwise tune-model's own), an exploration script kept as the record:

    python results/h200/timeline/gen_tma.py FOLDER     # FOLDER/{a,c,m}/tma.vmfb, FOLDER/{a,c,m}.onnx
"""
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from pipelines import hopper_model  # noqa: E402
from pipelines.targets import get_target  # noqa: E402

out = Path(sys.argv[1])
if out.exists():
    sys.exit(f"{out} exists; give a new folder.")
out.mkdir(parents=True)
rule, rewrite = hopper_model.product_schedule, hopper_model.rewrite
hopper_model.product_schedule = lambda gemm: replace(rule(gemm), tma_store=True)
hopper_model.rewrite = lambda text, source, **kw: rewrite(
    text, source, tail_schedule=replace(hopper_model.TAIL_SCHEDULE, tma_store=True), **kw)
for name, rows, width, mlp, heads in [("a", 4096, 2048, 8192, 1), ("c", 8192, 1024, 4096, 1), ("m", 4096, 2048, 8192, 16)]:
    model = out / f"{name}.onnx"
    subprocess.run([sys.executable, str(ROOT / "tools" / "transformer_block.py"), "onnx", str(model), "--rows",
                    str(rows), "--width", str(width), "--mlp", str(mlp), "--heads", str(heads), "--weights", "inputs"],
                   check=True)
    summary = hopper_model.tune_model_hopper(model, get_target("sm_90a"), out / f"{name}-build")
    assert all("C stored by TMA" in c["schedule"] for c in summary["calls"]), summary["calls"]
    (out / name).mkdir()
    (out / f"{name}-build" / "tuned" / "gemm.vmfb").rename(out / name / "tma.vmfb")
    print(name, [c["schedule"] for c in summary["calls"]][:2])
