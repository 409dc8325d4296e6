"""Build the stream kernel's probe plan (transforms/stream.py; issue 33's M <= 16 rows): correctness probes at odd
sizes, then a sweep of schedules on 16x4096x4096 and 16x8192x8192 (NN and NT; the decode row with epilogue truncf as
in ../line1) (run2); with --second, run3's sweep: loads a step ahead and the L2 prefetch hint, 32-column
groups for NN, on those rows and 1x4096x4096, 16x14336x4096 and 16x4096x14336 NN; with --third, run4's: K split
between the workgroups of a cluster (slices); with --fourth, run5's: loads up to 4 steps ahead, more rows (NT
14336 and the M = 1 rows); with --fifth, run6's: nn's B rows loaded 16 bytes at once and transposed by movmatrix.
With --sixth, run7's: 64-column workgroups (one per SM at N = 8192) at 16x8192x8192; with --seventh, run8's:
neighbours of the shipped large-B schedules on the decode row; with --eighth, run11's: B's loads past L1
(`bypass`, nol1) on the decode row beside the shipped schedules. Each program is compiled with the dispatch repeated
as `pipelines bench` repeats it, into a plan the runner takes (`python3 -m pipelines.runner PLAN --device cuda`).

    python3 results/h200/stream/gen.py PLAN [--second | ... | --eighth]
"""

import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from pipelines.bench import git_commit, repeat_count
from pipelines.compiler import compiler_version, iree_compile_path
from pipelines.output import work_folder
from pipelines.plan import Case, Plan
from pipelines.targets import TARGETS
from transforms.problem import Epilogue, Gemm
from transforms.stream import StreamSchedule, program

TARGET = TARGETS["sm_90a"]


def second() -> list[tuple[Gemm, StreamSchedule]]:
    out = []
    combos = [(False, ""), (True, ""), (False, "L2::256B"), (True, "L2::256B")]
    for shape, epilogue in (((16, 4096, 4096), Epilogue()), ((16, 8192, 8192), Epilogue("truncf"))):
        for layout in ("nn", "nt"):
            gemm = Gemm(*shape, "bf16", layout, epilogue=epilogue)
            if layout == "nt":
                shapes = [(c, 16, u) for c in (16, 32) for u in (2, 4)] + [(32, 8, 2)]
            else:
                shapes = [(32, w, u) for w in (8, 16) for u in (1, 2)] + [(64, 16, u) for u in (1, 2)]
            out += [(gemm, StreamSchedule(c, w, u, int(p), h)) for c, w, u in shapes for p, h in combos]
    for shape in ((1, 4096, 4096), (16, 14336, 4096), (16, 4096, 14336)):
        out += [(Gemm(*shape, "bf16", "nn"), StreamSchedule(32, 16, 2, int(p), h)) for p, h in combos]
    return out


def third() -> list[tuple[Gemm, StreamSchedule]]:
    e, t, l2 = Epilogue(), Epilogue("truncf"), "L2::256B"
    rows = {
        (16, 4096, 4096, "nn", e): [(64, w, u, a, "", 2) for w in (8, 16) for u in (1, 2) for a in (False, True)]
        + [(128, w, 1, a, "", 4) for w in (8, 16) for a in (False, True)]
        + [(32, 8, 1, a, "", 2) for a in (False, True)] + [(64, 8, 1, True, "", 4), (32, 8, 1, True, "", 1)],
        (16, 4096, 4096, "nt", e): [(c, w, u, False, "", 2) for c in (32, 64) for w in (8, 16) for u in (2, 4)]
        + [(128, 8, 2, False, "", 4), (64, 8, 2, False, "", 4), (32, 16, 4, False, "", 1)],
        (16, 8192, 8192, "nn", t): [(128, 8, 1, True, "", 2), (128, 8, 1, True, l2, 2), (64, 8, 1, True, "", 2),
                                    (64, 16, 1, True, "", 2), (64, 8, 1, True, l2, 2), (128, 8, 1, True, "", 4),
                                    (32, 8, 1, True, l2, 1)],
        (16, 8192, 8192, "nt", t): [(64, 8, 2, False, "", 2), (64, 8, 2, True, l2, 2), (64, 16, 2, False, "", 2),
                                    (128, 8, 2, False, "", 2), (128, 8, 2, True, l2, 2), (128, 8, 2, False, "", 4),
                                    (32, 8, 2, True, l2, 2), (32, 8, 2, True, l2, 1)],
        (16, 14336, 4096, "nn", e): [(64, 8, 1, True, "", 2), (128, 8, 1, True, "", 2), (64, 8, 1, True, l2, 2),
                                     (32, 8, 1, True, "", 1)],
        (16, 4096, 14336, "nn", e): [(64, 8, 1, True, "", 2), (128, 8, 1, True, "", 4), (64, 8, 1, True, "", 4),
                                     (32, 8, 1, True, "", 1)],
        (1, 4096, 4096, "nn", e): [(64, 8, 1, True, "", 2), (128, 8, 1, True, "", 4), (32, 8, 1, True, "", 1)],
    }
    return [(Gemm(m, n, k, "bf16", layout, epilogue=ep), StreamSchedule(*fields[:3], int(fields[3]), *fields[4:]))
            for (m, n, k, layout, ep), shapes in rows.items() for fields in shapes]


def fourth() -> list[tuple[Gemm, StreamSchedule]]:
    e, t, l2 = Epilogue(), Epilogue("truncf"), "L2::256B"
    rows = {
        (16, 4096, 4096, "nn", e): [(32, 8, 1, a) for a in (1, 2, 3)] + [(32, 4, 1, a) for a in (2, 3)]
        + [(32, 8, 2, 2), (32, 16, 1, 2)],
        (16, 4096, 4096, "nt", e): [(32, 16, 4, a) for a in (0, 1)] + [(32, 8, 4, a) for a in (1, 2)]
        + [(32, 8, 2, a) for a in (2, 3)],
        (16, 8192, 8192, "nn", t): [(32, 8, 1, a, l2) for a in (1, 2, 3)] + [(32, 4, 1, a, l2) for a in (2, 3)]
        + [(32, 8, 1, 2)],
        (16, 8192, 8192, "nt", t): [(32, 8, 2, a, l2) for a in (1, 2, 3)] + [(32, 8, 1, a, l2) for a in (2, 4)]
        + [(32, 4, 2, 2, l2)],
        (16, 14336, 4096, "nn", e): [(32, 8, 1, 2), (32, 8, 1, 3), (32, 8, 1, 2, l2)],
        (16, 4096, 14336, "nn", e): [(32, 8, 1, 2), (32, 8, 1, 3), (32, 16, 1, 2)],
        (16, 14336, 4096, "nt", e): [(32, 8, 2, 2, l2), (32, 16, 4, 1)],
        (16, 4096, 14336, "nt", e): [(32, 8, 2, 2, l2), (32, 16, 4, 1)],
        (1, 4096, 4096, "nn", e): [(32, 8, 1, 2), (32, 8, 1, 3)],
        (1, 4096, 4096, "nt", e): [(32, 16, 4, 0), (32, 16, 4, 1)],
        (1, 8192, 8192, "nn", e): [(32, 8, 1, 2, l2)],
        (1, 8192, 8192, "nt", e): [(32, 8, 2, 2, l2)],
    }
    return [(Gemm(m, n, k, "bf16", layout, epilogue=ep), StreamSchedule(*fields))
            for (m, n, k, layout, ep), shapes in rows.items() for fields in shapes]


def fifth() -> list[tuple[Gemm, StreamSchedule]]:
    e, t, l2 = Epilogue(), Epilogue("truncf"), "L2::256B"
    moved = {"transpose": True}
    rows = {
        (16, 4096, 4096, "nn", e): [((32, 8, 1, 1), moved), ((32, 8, 2, 1), moved), ((32, 16, 1, 1), moved),
                                    ((32, 8, 1, 0), moved), ((32, 16, 2, 0), moved), ((32, 8, 2, 0), moved),
                                    ((32, 4, 2, 1), moved), ((32, 8, 1, 1), {})],
        (16, 4096, 4096, "nt", e): [((32, 16, 4, 0), {}), ((32, 8, 2, 2), {})],
        (16, 8192, 8192, "nn", t): [((32, 8, 1, 1, l2), moved), ((32, 8, 2, 1, l2), moved), ((32, 8, 1, 1), moved),
                                    ((32, 8, 1, 1, l2), {})],
        (16, 8192, 8192, "nt", t): [((32, 8, 2, 1, l2), {})],
        (16, 14336, 4096, "nn", e): [((32, 8, 1, 1, l2), moved), ((32, 8, 2, 1), moved)],
        (16, 4096, 14336, "nn", e): [((32, 16, 1, 1), moved), ((32, 8, 2, 1), moved)],
        (1, 4096, 4096, "nn", e): [((32, 8, 1, 1), moved), ((32, 16, 2, 0), moved)],
        (1, 8192, 8192, "nn", e): [((32, 8, 1, 1, l2), moved)],
    }
    return [(Gemm(m, n, k, "bf16", layout, epilogue=ep), StreamSchedule(*fields, **extra))
            for (m, n, k, layout, ep), shapes in rows.items() for fields, extra in shapes]


def sixth() -> list[tuple[Gemm, StreamSchedule]]:
    t, l2 = Epilogue("truncf"), "L2::256B"
    return [(Gemm(16, 8192, 8192, "bf16", "nn", epilogue=t), StreamSchedule(64, w, u, 1, l2, transpose=True))
            for w, u in ((8, 1), (8, 2), (16, 1))] + \
        [(Gemm(16, 8192, 8192, "bf16", "nt", epilogue=t), StreamSchedule(64, w, 2, 1, l2)) for w in (8, 16)]


def seventh() -> list[tuple[Gemm, StreamSchedule]]:
    t, l2, l128 = Epilogue("truncf"), "L2::256B", "L2::128B"
    nn = [(32, 8, 2, 1, l128), (32, 8, 4, 1, l2), (32, 12, 2, 1, l2), (32, 6, 2, 1, l2), (32, 8, 2, 0, l2)]
    nt = [(32, 8, 4, 1, l2), (32, 12, 2, 1, l2), (32, 8, 2, 1, l128), (16, 8, 2, 1, l2), (32, 8, 2, 0, l2),
          (24, 8, 2, 1, l2)]
    return [(Gemm(16, 8192, 8192, "bf16", "nn", epilogue=t), StreamSchedule(*f, transpose=True)) for f in nn] + \
        [(Gemm(16, 8192, 8192, "bf16", "nt", epilogue=t), StreamSchedule(*f)) for f in nt]


def eighth() -> list[tuple[Gemm, StreamSchedule]]:
    t, l2 = Epilogue("truncf"), "L2::256B"
    nn = [((32, 8, 2, 1, l2), False), ((32, 8, 2, 1, l2), True), ((32, 8, 1, 1, l2), True), ((32, 16, 1, 1, ""), True),
          ((64, 8, 2, 1, l2), True), ((32, 8, 2, 2, l2), True)]
    nt = [((32, 8, 2, 1, l2), False), ((32, 8, 2, 1, l2), True), ((32, 8, 4, 1, l2), True), ((32, 16, 2, 1, l2), True),
          ((64, 8, 2, 1, l2), True), ((32, 8, 2, 1, ""), True)]
    return [(Gemm(16, 8192, 8192, "bf16", "nn", epilogue=t), StreamSchedule(*f, transpose=True, bypass=b))
            for f, b in nn] + \
        [(Gemm(16, 8192, 8192, "bf16", "nt", epilogue=t), StreamSchedule(*f, bypass=b)) for f, b in nt]


def cases() -> list[tuple[Gemm, StreamSchedule]]:
    out = []
    probes = [(Gemm(1, 4096, 4096, "bf16", "nt"), StreamSchedule(32, 8, 2)),
              (Gemm(1, 4096, 4096, "bf16", "nn"), StreamSchedule(64, 8, 2)),
              (Gemm(5, 1000, 520, "bf16", "nt"), StreamSchedule(32, 4, 2)),
              (Gemm(16, 1000, 776, "f16", "nn"), StreamSchedule(64, 4, 1)),
              (Gemm(16, 4096, 4096, "f16", "nt", epilogue=Epilogue("truncf")), StreamSchedule(32, 8, 4)),
              (Gemm(12, 4104, 4096, "bf16", "nn", epilogue=Epilogue("truncf")), StreamSchedule(128, 16, 2))]
    out += probes
    for shape, epilogue in (((16, 4096, 4096), Epilogue()), ((16, 8192, 8192), Epilogue("truncf"))):
        for layout in ("nt", "nn"):
            gemm = Gemm(*shape, "bf16", layout, epilogue=epilogue)
            columns = (16, 32, 64) if layout == "nt" else (64, 128)
            warps = (8, 16) if layout == "nt" else (4, 8, 16)
            unrolls = (2, 4) if layout == "nt" else (1, 2)
            out += [(gemm, StreamSchedule(c, w, u)) for c in columns for w in warps for u in unrolls]
    return out


def compile_case(plan: Path, gemm: Gemm, s: StreamSchedule, seen: set) -> dict:
    repeat = repeat_count(gemm, TARGET)
    ident = hashlib.sha256(json.dumps([asdict(gemm), asdict(s), repeat, compiler_version()],
                                      sort_keys=True).encode()).hexdigest()[:16]
    folder = plan / "cases" / ident
    folder.mkdir(parents=True)
    (folder / "gemm.mlir").write_text(program(gemm, s, "gemm"))
    subprocess.run([iree_compile_path(), str(folder / "gemm.mlir"), "--iree-hal-target-device=cuda",
                    "--iree-cuda-target=sm_80", f"--iree-hal-benchmark-dispatch-repeat-count={repeat}",
                    "-o", str(folder / "gemm.vmfb")], check=True)
    (folder / "gemm.mlir").unlink()
    b_shape = [gemm.n, gemm.k] if gemm.layout == "nt" else [gemm.k, gemm.n]
    return Case(id=ident, label=f"{gemm.dtype} {gemm.shape_name} {gemm.layout} stream", problem=asdict(gemm),
                pipeline="stream", schedule=s.describe(), schedule_fields=asdict(s), target="sm_90a",
                flops=gemm.flops, repeat=repeat, function="gemm", input_shapes=[[gemm.m, gemm.k], b_shape],
                input_dtypes=[gemm.dtype, gemm.dtype], vmfb=f"cases/{ident}/gemm.vmfb", status="ok",
                vendor=gemm not in seen).to_json()


def main() -> None:
    plan = Path(sys.argv[1])
    if plan.exists():
        sys.exit(f"{plan} exists; name a new folder.")
    work_folder(plan, "bench")  # the plan's manifest: the runner adds its rows beside a plan of pipelines' own
    chosen = {"--second": second, "--third": third, "--fourth": fourth, "--fifth": fifth, "--sixth": sixth,
              "--seventh": seventh, "--eighth": eighth}
    todo = next((f for flag, f in chosen.items() if flag in sys.argv[2:]), cases)()
    seen: set = set()
    flags = []
    for gemm, _ in todo:
        flags.append(gemm not in seen)
        seen.add(gemm)
    with ThreadPoolExecutor(2) as pool:
        entries = list(pool.map(lambda x: compile_case(plan, x[0][0], x[0][1], set() if x[1] else {x[0][0]}),
                                zip(todo, flags)))
    meta = Plan("sm_90a", compiler_version(), git_commit(), {"count": 132, "source": "target", "name": "sm_90a"},
                tuple(Case.from_json(e) for e in entries))
    (plan / "plan.json").write_text(meta.to_json())
    print(f"wrote {plan}/plan.json with {len(entries)} cases")


if __name__ == "__main__":
    main()
