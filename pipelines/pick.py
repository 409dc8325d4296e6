"""The timing model's choice among what a named pipeline may run (`auto` and `tuned` on targets with a timing model).

No AMD GPU is at hand, so on an AMD target the one judge of speed is the timing model (`pipelines.timing`). A
pipeline that chooses by it (`Pipeline.by_model`) compiles each of its options for the problem into a scratch folder,
has the model predict each, and takes one only where the prediction beats IREE's default by more than the model's own
error on that target (`Timing.error`, its median |error| on published times it was not fitted on):

- `auto`: the options are IREE's default, the pipeline's rule (the tile ladder, or the split-K plan where the rule
  splits), `tuned`'s schedule where it differs, and every generated warp-group kernel that takes the problem
  (`transforms.kernels`). The fastest predicted
  is taken if it is predicted more than the error below the default; else the default.
- `tuned`: its own schedule (the seeds' recipe) stays unless a warp-group kernel is predicted faster than it and more
  than the error below the default.

A target whose model has no measured error (gfx1151) takes nothing over the default on its word: `auto` keeps IREE's
default there and `tuned` its schedule, without predicting. Predictions are kept in a cache file
($PIPELINES_PICK_CACHE, else ~/.cache/amd-gemm-pipelines/picks.json) under a key that holds the problem, the target,
the options and a fingerprint of this package's sources and IREE's version, so a change of either predicts afresh;
an answer from the cache says so (`Pick.cached`). The file carries a mark (CACHE_FORMAT); one without it is not
this tool's and is never read or replaced (`Pick.cache_note` says so, as it says when the cache cannot be written).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable


from transforms.errors import UserError
from transforms.kernels import check_kernel, kernel_schedule
from transforms.problem import Gemm
from transforms.schedule import ScheduleError

from . import flow
from .compiler import compiler_version
from .job import DEFAULT_OPTION as DEFAULT, Job, Option, Pick, Row
from .targets import ComputeUnits, Target
from .timing.predict import predict


def kernel_options(gemm: Gemm, target: Target) -> list[Option]:
    """Every generated warp-group kernel of `target` that takes `gemm` as it is (whole tiles, layout, input type)."""
    found = []
    for name in target.kernels:
        try:
            schedule = kernel_schedule(name, gemm.dtype, target)
            check_kernel(schedule, gemm, target)
        except (UserError, ScheduleError):
            continue
        found.append(Option(name, schedule))
    return found


def decide(pipeline: str, rule: Option | None, kernels: list[Option], rows: dict[str, Row],
           error: float) -> tuple[Option, str]:
    """The option `pipeline` takes given each option's row: IREE's default (row DEFAULT), `rule` (the pipeline's own
    plan; None where it is the default itself) or one of `kernels`; and why, in one clause."""
    default = Option(DEFAULT, None)
    base = rows.get(DEFAULT)
    if base is None or base.microseconds is None:
        fallback = rule or default
        return fallback, (f"IREE's default could not be predicted ({base.note if base else 'not compiled'}), so "
                          "the pipeline's rule stands")
    limit = base.microseconds * (1 - error)
    beaten = f"more than the timing model's {100 * error:.0f} % error below IREE's default ({base.microseconds:.1f} us)"

    def time_of(option: Option) -> float | None:
        row = rows.get(option.name)
        return row.microseconds if row is not None else None

    if pipeline == "tuned":
        own = time_of(rule) if rule is not None else base.microseconds
        fast = [(t, k) for k in kernels if (t := time_of(k)) is not None and t < limit and (own is None or t < own)]
        if fast:
            t, kernel = min(fast, key=lambda tk: tk[0])
            return kernel, (f"PREDICTED {t:.1f} us, faster than the tuned schedule "
                            f"({'not predicted' if own is None else f'{own:.1f} us'}) and {beaten}")
        return rule or default, "no warp-group kernel is predicted faster than it and " + beaten
    timed = [(t, o) for o in ([rule] if rule is not None else []) + kernels if (t := time_of(o)) is not None]
    if not timed:
        return default, "none of its options could be predicted"
    t, best = min(timed, key=lambda to: to[0])
    if t < limit:
        return best, f"PREDICTED {t:.1f} us, {beaten}"
    return default, f"the fastest of its options, {best.name}, is PREDICTED at {t:.1f} us, not {beaten}"


def pick(pipeline: str, gemm: Gemm, target: Target, rule: Option, job_of: Callable[[Option], Job],
         units: ComputeUnits | None = None, kernels: bool = True, also: tuple[Option, ...] = ()) -> Pick:
    """`pipeline`'s choice for `gemm` on `target` (a target with a timing model) between IREE's default, `rule`
    (the pipeline's own plan), `also` (other schedules `auto` weighs as it weighs its rule; `tuned` is given none)
    and, with `kernels`, the generated warp-group kernels that take the problem; `job_of` gives an option's compile
    job."""
    error = target.timing.error if target.timing is not None else None
    default = Option(DEFAULT, None)
    if error is None:
        chosen = rule if pipeline == "tuned" else default
        return Pick(pipeline, target.name, gemm, chosen, (), None,
                    f"the timing model of {target.name} has not been judged on published times, so nothing is "
                    "taken over IREE's default on its word" + (" (the tuned schedule stays)" if chosen is rule else ""))
    found = list(also) + (kernel_options(gemm, target) if kernels else [])
    own = rule if rule.plan is not None else None
    if not found and (pipeline == "tuned" or own is None):
        chosen = rule if pipeline == "tuned" else default
        return Pick(pipeline, target.name, gemm, chosen, (), error,
                    "no warp-group kernel takes this problem" + (
                        "" if pipeline == "tuned" else ", no other schedule is offered and the pipeline's rule leaves "
                        "it to IREE's default"))
    options = [default] + ([own] if own is not None else []) + found
    rows, cached, cache_note = _rows(pipeline, gemm, target, options, units, job_of)
    chosen, why = decide(pipeline, own, found, rows, error)
    return Pick(pipeline, target.name, gemm, chosen, tuple(rows[o.name] for o in options), error, why, cached,
                cache_note)


def _predict(option: Option, job: Job) -> Row:
    with tempfile.TemporaryDirectory(prefix="pipelines-pick-") as scratch:
        folder = Path(scratch) / "out"
        try:
            flow.compile_job(flow.prepare(job), folder)
            prediction = predict(folder)
        except (UserError, ScheduleError) as err:
            return Row(option.name, None, str(err).splitlines()[0][:160])
    return Row(option.name, round(prediction.microseconds, 1), f"bound by {prediction.bound}")


def pick_cache() -> Path:
    """$PIPELINES_PICK_CACHE, else ~/.cache/amd-gemm-pipelines/picks.json."""
    return Path(os.environ.get("PIPELINES_PICK_CACHE", Path.home() / ".cache" / "amd-gemm-pipelines" / "picks.json"))


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """What the predictions depend on besides the problem: this package's and `transforms`' files, and IREE."""
    digest = hashlib.sha256(compiler_version().encode())
    root = Path(__file__).resolve().parents[1]
    for package in ("pipelines", "transforms"):
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".csv", ".mlir", ".s"):
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _key(pipeline: str, gemm: Gemm, target: Target, options: list[Option], units: ComputeUnits | None) -> str:
    plans = [(o.name, repr(o.plan)) for o in options]
    text = json.dumps([fingerprint(), target.name, repr(gemm), repr(units), pipeline, plans])
    return hashlib.sha256(text.encode()).hexdigest()


CACHE_FORMAT = "amd-gemm-pipelines pick cache 1"  # the mark of a cache file this tool wrote


def _legacy(data: dict) -> bool:
    """A cache written before files carried CACHE_FORMAT: nothing but {sha256 key: {"written", "rows"}} entries."""
    return all(len(k) == 64 and isinstance(v, dict) and set(v) == {"written", "rows"} for k, v in data.items())


def _read_cache(path: Path) -> tuple[dict | None, str]:
    """The cache's entries ({} where there is no file yet) and "", or None and why the file at `path` is left alone:
    a file that is not a cache this tool wrote (no CACHE_FORMAT mark) is never read, merged into or replaced."""
    if not path.exists():
        return {}, ""
    refused = (f"{path} is not a pick cache written by pipelines, so it was left alone and nothing was cached "
               "(delete it or point $PIPELINES_PICK_CACHE elsewhere)")
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        return None, f"cannot read the pick cache {path} ({err.strerror}), so nothing was cached"
    except (UnicodeDecodeError, ValueError):
        return None, refused
    if not isinstance(data, dict):
        return None, refused
    if data.get("format") == CACHE_FORMAT and isinstance(data.get("entries"), dict):
        return data["entries"], ""
    return (dict(data), "") if data and _legacy(data) else (None, refused)


def _rows(pipeline: str, gemm: Gemm, target: Target, options: list[Option], units: ComputeUnits | None,
          job_of: Callable[[Option], Job]) -> tuple[dict[str, Row], str, str]:
    """Each option's row, where they came from when they were read from the cache (else ""), and what became of the
    cache when it was not used as it should be (else "")."""
    path = pick_cache()
    key = _key(pipeline, gemm, target, options, units)
    entries, note = _read_cache(path)
    entry = (entries or {}).get(key)
    if isinstance(entry, dict) and isinstance(entry.get("rows"), list):
        try:
            rows = {r["name"]: Row(r["name"], r["microseconds"], r["note"]) for r in entry["rows"]}
        except (KeyError, TypeError):
            rows = {}
        if set(rows) == {o.name for o in options}:
            return rows, f"{path} ({entry.get('written', 'unknown time')})", ""
    rows = {o.name: _predict(o, job_of(o)) for o in options}
    if entries is not None:
        note = _write_cache(path, entries, key, rows)
    return rows, "", note


def _write_cache(path: Path, entries: dict, key: str, rows: dict[str, Row]) -> str:
    """Add one entry to the cache (a new file built beside `path` and renamed over it); "" or why it was not kept (a
    cache that cannot be written costs only the next run's predictions)."""
    entries = {**entries, key: {"written": time.strftime("%Y-%m-%d %H:%M:%S"),
                                "rows": [dataclasses.asdict(r) for r in rows.values()]}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
            json.dump({"format": CACHE_FORMAT, "entries": entries}, tmp)
        os.replace(tmp.name, path)
    except OSError as err:
        return f"cannot write the pick cache {path} ({err.strerror}), so these predictions were not kept"
    return ""
