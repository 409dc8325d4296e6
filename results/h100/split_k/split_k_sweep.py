"""Split-K on an NVIDIA GPU: IREE's default kernel against the same GEMM with its reduction split S ways.

Issue 16's shapes (bf16, M ∈ {1, 16, 64, 128} × N×K ∈ {4096×4096, 8192×8192, 14336×4096, 4096×14336}, and
1024×1024×65536) are compiled here for sm_80 (PTX the driver JIT-compiles on H100/H200), once with IREE's default
and once per split S ∈ {2, 4, 8, 16} that divides K, into a plan folder the runner reads (`pipelines.runner`:
float64 check, iree-benchmark-module timing, torch.matmul as cuBLAS). On the GPU machine the runner appends
results.jsonl; `summarize` turns it into a table with bytes moved and % of the measured copy bandwidth.

    python results/h100/split_k/split_k_sweep.py compile PLAN            # here: compile every case, write PLAN/plan.json
    python -m pipelines.runner PLAN --device cuda         # there
    python results/h100/split_k/split_k_sweep.py summarize PLAN/results.jsonl --copy-gbps G -o results/h100/split_k.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from iree.compiler import version as iree_version  # noqa: E402

from pipelines import flow  # noqa: E402
from pipelines.bench import git_commit, repeat_count  # noqa: E402
from pipelines.output import work_folder, write_atomic, write_file  # noqa: E402
from pipelines.targets import get_target  # noqa: E402
from transforms.errors import UserError  # noqa: E402
from transforms.problem import Gemm, input_shapes  # noqa: E402

SHAPES = [(m, n, k) for m in (1, 16, 64, 128) for n, k in ((4096, 4096), (8192, 8192), (14336, 4096), (4096, 14336))]
SHAPES.append((1024, 1024, 65536))
SPLITS = (2, 4, 8, 16)


def compile_plan(plan: Path, target_name: str, force: bool = False) -> None:
    target = get_target(target_name)
    work_folder(plan, "split-k-sweep", force)  # new, empty or a sweep plan of ours: a user's folder is refused
    entries = []
    for m, n, k in SHAPES:
        gemm = Gemm(m=m, n=n, k=k, dtype="bf16", layout="nn")
        repeat = repeat_count(gemm, target)
        for split in (1,) + tuple(s for s in SPLITS if k % s == 0):
            ident = hashlib.sha256(json.dumps([target.name, m, n, k, split, repeat]).encode()).hexdigest()[:16]
            label = f"bf16 {gemm.shape_name} nn " + ("default" if split == 1 else f"split-k {split}")
            folder = plan / "cases" / ident
            entry = {"id": ident, "label": label, "problem": asdict(gemm), "pipeline": "default",
                     "schedule": label.split(" nn ")[1], "schedule_fields": None, "split_k": split,
                     "target": target.name, "flops": gemm.flops, "repeat": repeat, "function": "gemm",
                     "input_shapes": [list(s) for s in input_shapes(gemm)], "input_dtypes": ["bf16", "bf16"],
                     "vmfb": str(folder.relative_to(plan) / "gemm.vmfb"), "status": "ok", "vendor": split == 1}
            print(f"compiling {label}", file=sys.stderr)
            if not (folder / "gemm.vmfb").exists():
                job = flow.Job(target, "default", (gemm,), (None,), split_k=split)
                try:
                    flow.compile_job(flow.prepare(job), folder, force=True,
                                     extra_flags=(f"--iree-hal-benchmark-dispatch-repeat-count={repeat}",))
                except UserError as err:  # a split IREE does not take is a row with its sentence
                    entry.update(status="compile-failed", error=str(err)[:300], vmfb=None)
            entries.append(entry)
    meta = {"target": target.name, "iree_compiler": iree_version.VERSION, "git_commit": git_commit(),
            "cases": entries}
    write_atomic(plan / "plan.json", json.dumps(meta, indent=1))


def summarize(results: Path, copy_gbps: float | None) -> str:
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    by_shape: dict[tuple, dict] = {}
    for row in rows:
        p = row["problem"]
        split = 1 if row["label"].endswith(" default") else int(row["label"].rsplit(" ", 1)[1])
        entry = by_shape.setdefault((p["m"], p["n"], p["k"]), {"splits": {}})
        if row.get("status") == "ok" and row.get("correct"):
            entry["splits"][split] = row["median_ms"] * 1e3
        if row.get("vendor"):
            entry["cublas"] = row["vendor"]["median_ms"] * 1e3
        entry.setdefault("device", row.get("device_name"))
    lines = ["| M×N×K (bf16) | bytes moved | IREE default µs | best split-K µs (S) | split / default | cuBLAS µs | "
             "split / cuBLAS | % of copy bandwidth (best) |", "|---|---|---|---|---|---|---|---|"]
    for (m, n, k), entry in sorted(by_shape.items(), key=lambda kv: (kv[0][2] != 65536, kv[0][0], kv[0][1])):
        splits = entry["splits"]
        default = splits.get(1)
        best_s, best = min(((s, t) for s, t in splits.items() if s > 1), key=lambda st: st[1], default=(None, None))
        moved = 2 * (m * k + k * n) + 4 * m * n  # bf16 inputs read once, f32 result written once
        fastest = min(t for t in (default, best) if t is not None) if (default or best) else None
        cublas = entry.get("cublas")
        cells = [f"{m}×{n}×{k}", f"{moved / 1e6:.1f} MB", f"{default:.1f}" if default else "-",
                 f"{best:.1f} ({best_s})" if best else "-",
                 f"{default / best:.2f}×" if default and best else "-", f"{cublas:.1f}" if cublas else "-",
                 f"{cublas / min(best, default or best):.2f}×" if cublas and best else "-",
                 f"{100 * moved / (fastest * 1e-6) / (copy_gbps * 1e9):.0f} %" if copy_gbps and fastest else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile")
    p.add_argument("plan", type=Path)
    p.add_argument("--target", default="sm_80")
    p.add_argument("--force", action="store_true", help="write into a folder that holds other files (they stay)")
    p = sub.add_parser("summarize")
    p.add_argument("results", type=Path)
    p.add_argument("--copy-gbps", type=float, help="measured device-to-device copy bandwidth (bytes read + written)")
    p.add_argument("-o", "--output", type=Path)
    p.add_argument("--force", action="store_true", help="overwrite an -o file pipelines did not write")
    args = parser.parse_args()
    try:
        if args.command == "compile":
            compile_plan(args.plan, args.target, args.force)
            return 0
        table = summarize(args.results, args.copy_gbps)
        if args.output:
            write_file(args.output, table + "\n", args.force)  # a file pipelines did not write needs --force
    except (UserError, OSError, ValueError, KeyError) as err:
        print(f"split_k_sweep: error: {err}", file=sys.stderr)
        return 2
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
