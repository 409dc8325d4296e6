# Prepared for the next GPU session, not run: the last unit sums the whole tile, nobody waits (next/last2.patch):
#   git apply results/h200/skinny-hopper/next/last2.patch && python results/h200/skinny-hopper/next/genlast2.py PLAN
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from pipelines.bench import build_plan
from pipelines.named import HOPPER_CANDIDATE
from pipelines.routes.hopper import fitted, most_stages
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import Epilogue, Gemm
S = hopper.HopperSchedule
W = dict(persistent=True, split_sum="last")
cases = [
    (Gemm(100, 132, 1024, "f16", "nt"), S(block_m=128, block_n=128, stages=3, group_m=8, split_k=2, **W)),
    (Gemm(200, 520, 4096, "bf16", "nn", epilogue=Epilogue("truncf")), S(block_m=128, block_n=256, stages=4, group_m=16, cluster_m=2, split_k=4, **W)),
    (Gemm(33, 4100, 2048, "f16", "nt", epilogue=Epilogue("truncf")), S(block_m=64, block_n=128, consumers=1, stages=7, group_m=16, split_k=4, **W)),
]
def tile(bm, bn, split, cm=1, cons=None):
    cons = cons or bm // 64
    return S(block_m=bm, block_n=bn, consumers=cons, stages=most_stages(bm, bn, cons), group_m=16, cluster_m=cm, split_k=split, **W)
probs = {(16, 4096, 4096): [(64, 256, 8), (64, 256, 4), (64, 128, 4)], (1, 4096, 4096): [(64, 256, 8), (64, 128, 4)],
         (32, 4096, 4096): [(64, 256, 8), (64, 128, 4)], (64, 4096, 4096): [(64, 256, 8), (64, 128, 4)],
         (16, 8192, 8192): [(64, 256, 4), (64, 128, 2)], (16, 4096, 14336): [(64, 256, 8), (64, 128, 4)],
         (128, 8192, 8192): [(128, 128, 2), (64, 256, 2, 2, 1)], (128, 4096, 4096): [(128, 128, 4), (128, 256, 8)],
         (1024, 1024, 65536): [(128, 256, 4), (128, 256, 8)]}  # 8 slices: 256 units, workgroups loop over them
for (m, n, k), tiles in probs.items():
    g = Gemm(m, n, k, "bf16", "nn")
    cases.append((g, fitted(g)))
    for t in tiles:
        s = tile(*t)
        s.check(); hopper.check_problem(g, s)
        cases.append((g, s))
print(len(cases))
build_plan(get_target("sm_90a"), [(g, HOPPER_CANDIDATE, s) for g, s in cases], Path(sys.argv[1]), kind="tune")
