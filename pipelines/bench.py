"""Benchmark plans: suites × input types × pipelines compiled into a folder the runner executes anywhere.

`load_suite` reads a suite file (`pipelines/suites/<name>.json` or a path). `build_plan` compiles every case
(through `flow`, so every schedule is verified) with each dispatch repeated enough times that launch overhead
does not distort small shapes, and writes `plan.json`. Cases that fail to compile are recorded as such, not
dropped. The plan is self-contained: copy it to a GPU machine and run `python -m pipelines.runner PLAN`.
"""

from __future__ import annotations

from collections.abc import Sequence

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


from transforms.errors import UserError
from transforms.stream import KERNEL_PLANS, KernelPlan
from transforms.kernels import Kernel, kernel_label
from transforms.problem import Epilogue, Gemm, input_shapes, parse_shape
from transforms.schedule import Schedule, ScheduleError
from transforms.split_k import SplitK

from . import flow
from .cluster import Task, pack, run_tasks, unpack
from .compiler import CompileError, compiler_version
from .named import PIPELINES, plan_for, plan_job, uses_ukernels
from .plan import Case, Plan
from .output import PLAN_FILES, folder_kind, owned, work_folder, write_atomic
from .targets import ComputeUnits, Target, TargetError, check_dtype
from .verify import FallbackError

SUITES = Path(__file__).parent / "suites"
# Each dispatch is repeated so one invocation does about this much work (capped), see runner's docstring. Each call
# of a program also allocates its output and launches its dispatches: on an H100 that cost about 0.45 ms a call (a
# Hopper kernel at 8192^3 bf16 ran 580 TFLOP/s at 2 repeats a call, 2e12 FLOPs, and 662 at 19, 2e13;
# results/h100/hopper-route/README.md), so a call does 2e13 FLOPs, or, for a problem whose time is its bytes (M <= 16,
# GEMV-like), moves 1e11 bytes (about 25 ms at 4 TB/s): on an H200 the decode row 16x8192x8192 (36 µs a dispatch on
# the GPU's clock) took 38.1-38.5 µs a dispatch at 200 a call and 36.9 at 1000, cuBLAS 34.0 (its time is the GPU's
# alone, device events around back-to-back calls); results/h200/stream/ncu/README.md. Whichever count gives the
# shorter call (the problem's time is the longer of its FLOPs' and its bytes'), at most MAX_REPEAT (a vmfb grows by
# about 85 B a repeat).
REPEAT_FLOPS = 2e13
REPEAT_BYTES = 1e11
MAX_REPEAT = 2000


class PlanError(UserError, ValueError):
    """A suite or plan that cannot be read; the message is one sentence."""


@dataclass(frozen=True)
class Refused:
    """A named pipeline's one-sentence refusal of a suite problem, recorded in the plan as a case of its own."""

    reason: str

    def describe(self) -> str:
        return f"refused: {self.reason}"


# what a case compiles: a plan, IREE's default or a refusal
CasePlan = Schedule | SplitK | Kernel | KernelPlan | Refused | None


def load_suite(name: str) -> list[dict]:
    path = Path(name) if name.endswith(".json") else SUITES / f"{name}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SUITES.glob("*.json")))
        raise PlanError(f"unknown suite '{name}'; use one of {known} or a .json file.")
    try:
        suite = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise PlanError(f"suite {path} is not valid JSON ({err}).") from None
    problems = suite.get("problems") if isinstance(suite, dict) else None
    if not isinstance(problems, list) or not problems:
        raise PlanError(f"suite {path} is not a JSON object with a non-empty 'problems' list.")
    for number, problem in enumerate(problems, 1):
        if not isinstance(problem, dict) or not isinstance(problem.get("shape"), str) or not all(
                isinstance(problem.get(key, ""), str) for key in ("layout", "epilogue")):
            raise PlanError(f"problem {number} of suite {path} is not an object with a 'shape' string such as "
                            "\"4096x4096x4096\" (and optional 'layout' and 'epilogue' strings).")
    return problems


def repeat_count(gemm: Gemm, target: Target, flops_per_call: float = REPEAT_FLOPS,
                 bytes_per_call: float = REPEAT_BYTES) -> int:
    """How many times each dispatch runs in one call: so that a call does about `flops_per_call` or moves about
    `bytes_per_call` (`Gemm.footprint_bytes`: A, B and an f32 C, C twice for alpha-beta), whichever takes fewer
    repeats, at most MAX_REPEAT; 1 off the GPU."""
    if not target.gpu:
        return 1
    def times(amount: float, each: int) -> int:  # repeats to reach `amount`; no bound (the cap) where it is infinite
        return MAX_REPEAT if math.isinf(amount) else math.ceil(amount / each)

    repeats = min(times(flops_per_call, gemm.flops), times(bytes_per_call, gemm.footprint_bytes))
    return max(1, min(MAX_REPEAT, repeats))


def git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=10)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def case_id(target: Target, gemm: Gemm, pipeline: str, schedule: CasePlan,
            repeat: int) -> str:
    key = json.dumps([target.name, asdict(gemm), pipeline, asdict(schedule) if schedule else None, repeat,
                      compiler_version()], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _describe(plan: CasePlan) -> str:
    if plan is None:
        return "IREE default heuristic"
    if isinstance(plan, (Schedule, SplitK, Refused) + KERNEL_PLANS):
        return plan.describe()
    return f"{kernel_label(plan)} (generated warp-group kernel)"


def build_plan(target: Target, cases: Sequence[tuple[Gemm, str, CasePlan]], plan: Path,
               force: bool = False, keep: Sequence[str] = (), client=None, kind: str | None = None,
               units: ComputeUnits | None = None) -> Path:
    """Compile `(gemm, pipeline name, schedule)` cases into `plan`; existing compiled cases are reused, refused
    ones are recorded with their reason. A folder holding files this tool did not write is refused unless `force`,
    and a plan folder of another kind always (see `output.work_folder`); `kind` None: the kind the caller admitted
    the folder as (`tune` does so), else a bench plan. `keep`: the dump files (glob patterns) each case keeps, for
    a timing-model plan (`timing.device.KEPT`); a case compiled without them is compiled again. `client`: a dask
    Client (`pipelines.cluster`): the compiles run as tasks on its CPU workers, which send the case folders back.
    `units`: the compute units the split rule filled (the device's, `pipelines.device_units`), which a split case's
    report gives with the rule's reason; None: the target's. A case of a pipeline that always has a plan
    (`Pipeline.always_planned`) given none is refused before anything is written."""
    for gemm, pipeline, schedule in cases:  # before anything is written
        if schedule is None and pipeline in PIPELINES and PIPELINES[pipeline].always_planned:
            raise PlanError(f"the {pipeline} case of {gemm.shape_name} has no plan, which would run IREE's heuristic "
                            f"under the name {pipeline}; give it the pipeline's plan (plan_for).")
    recorded = folder_kind(plan)
    work_folder(plan, kind or (recorded if recorded in PLAN_FILES else "bench"), force)
    entries, seen_problems = [], set()
    remote: list[tuple[dict, Path, flow.Prepared, tuple[str, ...]]] = []  # compiles for the cluster
    iree_kernels: dict[tuple[Gemm, int, bool], dict] = {}  # the first case of each problem left to IREE's heuristic
    for index, (gemm, pipeline, schedule) in enumerate(cases, 1):
        repeat = repeat_count(gemm, target)
        ident = case_id(target, gemm, pipeline, schedule, repeat)
        label = f"{gemm.dtype} {gemm.shape_name} {gemm.layout} {pipeline}"
        sys.stderr.write(f"\rcompiling {index}/{len(cases)} {label[:70]:70s}")
        folder = plan / "cases" / ident
        entry: dict[str, Any] = {"id": ident, "label": label, "problem": asdict(gemm), "pipeline": pipeline,
                 "schedule": _describe(schedule),
                 "schedule_fields": asdict(schedule) if schedule else None, "target": target.name,
                 "flops": gemm.flops, "repeat": repeat, "function": "gemm",
                 "input_shapes": [list(s) for s in input_shapes(gemm)],
                 "input_dtypes": [gemm.dtype, gemm.dtype] + ["f32"] * (len(input_shapes(gemm)) - 2),
                 "vmfb": str(folder.relative_to(plan) / "gemm.vmfb"), "status": "ok",
                 # one vendor-library timing per problem, attached to its first case
                 "vendor": gemm not in seen_problems}
        seen_problems.add(gemm)
        # IREE's own kernel, shared by the pipelines that leave the problem to it (with its ukernels: another kernel)
        first = iree_kernels.setdefault((gemm, repeat, uses_ukernels(pipeline)), entry) if schedule is None else entry
        if isinstance(schedule, Refused):
            entry.update(status="refused", error=schedule.reason[:300], vmfb=None, schedule_fields=None)
        elif first is not entry:
            # A second pipeline that leaves this problem to IREE (`default`, or `tuned`/`auto` deferring) compiles
            # the same kernel: it is compiled and timed once, and its rows share that measurement (`runner`).
            entry.update(same_kernel_as=first["id"], vmfb=first["vmfb"], status=first["status"],
                         **({"error": first["error"]} if "error" in first else {}))
        if entry["status"] == "ok" and first is entry and not isinstance(schedule, Refused) and (
                not owned(folder / "gemm.vmfb") or not all(any((folder / flow.DUMP_DIR).glob(k)) for k in keep)):
            flags = (f"--iree-hal-benchmark-dispatch-repeat-count={repeat}",)
            try:
                prepared = flow.prepare(plan_job(target, pipeline, gemm, schedule, units))
                if client is not None:
                    remote.append((entry, folder, prepared, flags))
                else:
                    # force: a case folder inside the plan is the tool's even when a stopped run left it half-made
                    flow.compile_job(prepared, folder, force=True, extra_flags=flags)
                    _prune_dump(folder / flow.DUMP_DIR, keep)  # verified; the plan travels without ISA and LLVM IR
            except (CompileError, FallbackError, TargetError, ValueError) as err:
                entry.update(status="compile-failed", error=str(err)[:300], vmfb=None)
        entries.append(entry)
    sys.stderr.write("\n")
    if remote:
        _compile_on_cluster(client, remote, keep)
        firsts = {e["id"]: e for e in entries}
        for entry in entries:  # a case sharing a kernel compiled on the cluster takes that compile's outcome
            origin = firsts.get(entry.get("same_kernel_as"))
            if origin is not None:
                entry.update(status=origin["status"], vmfb=origin["vmfb"],
                             **({"error": origin["error"]} if "error" in origin else {}))
    written = Plan(target.name, compiler_version(), git_commit(), (units or target.units()).to_json(),
                   tuple(Case.from_json(entry) for entry in entries))
    write_atomic(plan / "plan.json", written.to_json())
    return plan


def compile_case(prepared: flow.Prepared, extra_flags: tuple[str, ...], keep: Sequence[str]) -> dict:
    """A cluster task: compile one case in a scratch folder of the worker and return its files (or the one-sentence
    failure), for `_compile_on_cluster` to write into the plan."""
    with tempfile.TemporaryDirectory(prefix="pipelines-case-") as scratch:
        folder = Path(scratch) / "case"
        try:
            flow.compile_job(prepared, folder, force=True, extra_flags=extra_flags)
            _prune_dump(folder / flow.DUMP_DIR, keep)
        except (CompileError, FallbackError, TargetError, ValueError) as err:
            return {"status": "compile-failed", "error": str(err)[:300]}
        return {"status": "ok", "files": pack(folder), "scratch": str(folder)}


def _compile_on_cluster(client, remote: list, keep: Sequence[str]) -> None:
    """Each compile of `remote` as a CPU task; each finished case folder is written beside its place and renamed
    into it (a case that failed, or whose worker died twice, is recorded compile-failed with the reason)."""
    by_key = {}
    tasks = []
    for entry, folder, prepared, flags in remote:
        key = f"compile-{entry['id']}"
        by_key[key] = (entry, folder)
        tasks.append(Task(key, "compile", compile_case, (prepared, flags, tuple(keep)), "CPU",
                          lambda reason: {"status": "compile-failed", "error": f"not compiled: {reason}"}))

    def write(task, result) -> None:
        entry, folder = by_key[task.key]
        if not isinstance(result, dict) or result.get("status") != "ok" or not isinstance(result.get("files"), dict):
            error = result.get("error") if isinstance(result, dict) else None
            entry.update(status="compile-failed", error=str(error or "the worker returned no case folder")[:300],
                         vmfb=None)
            return
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)  # the tool's own half-written folder of a stopped run
        files = dict(result["files"])
        if flow.REPORT_FILE in files:  # the command names the worker's scratch folder: name the plan's
            files[flow.REPORT_FILE] = files[flow.REPORT_FILE].replace(result["scratch"].encode(),
                                                                      str(folder.resolve()).encode())
        unpack(files, partial)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)

    run_tasks(client, tasks, write)


def _prune_dump(dump: Path, keep: Sequence[str]) -> None:
    kept = {p for pattern in keep for p in dump.glob(pattern)}
    if not kept:
        shutil.rmtree(dump)
        return
    for path in dump.iterdir():
        if path not in kept:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def suite_cases(target: Target, problems: list[dict], dtypes: list[str], pipelines: Sequence[str],
                units: ComputeUnits | None = None) -> list[tuple[Gemm, str, CasePlan]]:
    cases: list[tuple[Gemm, str, CasePlan]] = []
    for spec in problems:
        batch, m, n, k = parse_shape(spec["shape"])
        for dtype in dtypes:
            check_dtype(target, dtype)
            gemm = Gemm(m, n, k, dtype, spec.get("layout", "nn"), batch, Epilogue(spec.get("epilogue", "none")))
            for name in pipelines:
                try:
                    cases.append((gemm, name, plan_for(name, gemm, target, units)))
                except (TargetError, ScheduleError) as err:
                    if name == "searched":
                        sys.stderr.write(f"skipped: {err}\n")  # not every suite problem has been tuned
                    else:  # a named pipeline that does not take this problem says so in the results
                        cases.append((gemm, name, Refused(str(err))))
    return cases
