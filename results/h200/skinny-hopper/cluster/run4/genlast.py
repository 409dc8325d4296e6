"""Build the plan of the "summed by the last" probe (an exploration script kept as the record): K's slices summed
inside the kernel by the unit that finishes a tile last (`split_sum="last"`: partial products in a scratch, a
counter per tile and consumer in a global of the program), against the rule's schedule, on the skinny rows where
the slices matter most, nn; and four correctness cases at odd sizes (f32 C, N = 130, two consumers, a cluster
along M, nt).

    git apply results/h200/skinny-hopper/cluster/run4/last.patch   # the generator as it was measured (not kept)
    python results/h200/skinny-hopper/cluster/run4/genlast.py PLAN
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5]))
from pipelines.bench import build_plan  # noqa: E402
from pipelines.named import HOPPER_CANDIDATE  # noqa: E402
from pipelines.routes.hopper import fitted, most_stages  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

S = hopper.HopperSchedule
cases = [
    (Gemm(100, 130, 1024, "f16", "nt"), S(block_m=128, block_n=128, stages=3, group_m=8, persistent=True, split_k=2,
                                          split_sum="last")),
    (Gemm(200, 520, 4096, "bf16", "nn", epilogue=Epilogue("truncf")),
     S(block_m=128, block_n=256, stages=4, group_m=16, persistent=True, cluster_m=2, split_k=4, split_sum="last")),
    (Gemm(33, 4100, 2048, "f16", "nt", epilogue=Epilogue("truncf")),
     S(block_m=64, block_n=128, consumers=1, stages=7, group_m=16, persistent=True, split_k=8, split_sum="last")),
    (Gemm(300, 1000, 8192, "f16", "nt"), S(block_m=128, block_n=256, stages=4, group_m=8, persistent=True, split_k=8,
                                           split_sum="last")),  # several units per workgroup: the counters reused
]
for m, n, k in ((16, 4096, 4096), (1, 4096, 4096), (32, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096),
                (16, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (16, 4096, 14336), (128, 4096, 14336),
                (1024, 1024, 65536)):
    gemm = Gemm(m, n, k, "bf16", "nn")
    rule = fitted(gemm)
    cases.append((gemm, rule))
    tiles = [(64, 256, 1, 1), (64, 128, 1, 1)] if m <= 64 else [(64, 256, 1, 2), (128, 128, 2, 1), (128, 256, 2, 1)]
    for block_m, block_n, consumers, cluster_m in tiles:
        for split in (2, 4, 8):
            s = S(block_m=block_m, block_n=block_n, consumers=consumers, cluster_m=cluster_m, group_m=16,
                  persistent=True, stages=most_stages(block_m, block_n, consumers),
                  split_k=split, split_sum="last")
            try:
                s.check()
                hopper.check_problem(gemm, s)
            except hopper.HopperError as err:
                print(gemm.shape_name, err)
                continue
            if hopper.grid_size(gemm, s) <= hopper.SM_COUNT or m > 128:
                cases.append((gemm, s))
print(len(cases), "cases")
build_plan(get_target("sm_90a"), [(g, HOPPER_CANDIDATE, s) for g, s in cases], Path(sys.argv[1]), kind="tune")
