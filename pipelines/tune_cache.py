"""The tune cache: the schedule `pipelines tune` measured (or predicted) best per problem, target, IREE version and
search (route, device, candidate limit: `Search`).

`tune` writes it (`tune.finalize`), the `searched` named pipeline reads it (`cached`). A leaf of its own, so that
naming pipelines does not import the tuner that plans benchmarks from them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


from transforms.errors import UserError
from transforms.problem import Gemm

from .compiler import compiler_version
from .targets import Target


class TuneError(UserError, ValueError):
    """Nothing to choose from; the message is one sentence."""


def tune_cache() -> Path:
    """Where the cache lives: $PIPELINES_TUNE_CACHE, else ~/.cache/amd-gemm-pipelines/tune.json."""
    return Path(os.environ.get("PIPELINES_TUNE_CACHE", Path.home() / ".cache" / "amd-gemm-pipelines" / "tune.json"))


# The routes a search can take, as `tune` names them in its summary and in the cache.
ROUTES = ("compilation_info", "codegen", "split-k", "hopper")
MODEL = "model"  # the device of a search whose times the timing model predicted (`--device model`)


@dataclass(frozen=True)
class Search:
    """What one tune search was, beyond the problem and target: everything that changes its answer.

    `route`: one of ROUTES. `device`: MODEL, or the kind of device that measured it (`device_kind`); None only in
    a lookup, where it means "any measured device" (what the `searched` pipeline serves). `limit`: how many
    candidates were measured when that was fewer than all of them, else None (a --limit at or above the number
    of candidates is the whole search)."""

    route: str = "compilation_info"
    device: str | None = None
    limit: int | None = None


def device_kind(device_name: str) -> str:
    """The device part of a key, from the name the runner records (`runner.environment`): an NVIDIA GPU's model
    (nvidia-smi), else the IREE driver, without the device index (cuda://1 and cuda time alike)."""
    return device_name.split("://")[0]


def _fields(gemm: Gemm, target: Target, search: Search) -> list:
    return [target.name, asdict(gemm), compiler_version(), search.route, search.device, search.limit]


def cache_key(gemm: Gemm, target: Target, search: Search) -> str:
    # One entry per search: a --limit'ed search, a prediction or another GPU's measurement never answers for
    # another search (the route's winners also reach the `searched` pipeline differently: compilation_info, split-K
    # plans, codegen libraries that `searched` does not serve).
    if search.route not in ROUTES or search.device is None:
        raise ValueError(f"a cache key needs one of the routes {ROUTES} and a device, not {search}.")
    return json.dumps(_fields(gemm, target, search), sort_keys=True)


def read_cache(cache: Path) -> dict:
    """The tune cache: {cache_key: summary}, empty when the file does not exist yet."""
    if not cache.exists():
        return {}
    try:
        entries = json.loads(cache.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        reason = getattr(err, "strerror", None) or "it is not valid JSON"
        raise TuneError(f"cannot read the tune cache {cache} ({reason}); delete it or pass --cache FILE."
                        ) from None
    entry_ok = lambda v: isinstance(v, dict) and isinstance(v.get("schedule", 0), (dict, type(None)))  # noqa: E731
    if not isinstance(entries, dict) or not all(map(entry_ok, entries.values())):
        raise TuneError(f"the tune cache {cache} is not a map of problems to measured schedules; delete it or "
                        "pass --cache FILE.")
    return entries


def cached(gemm: Gemm, target: Target, cache: Path, search: Search = Search()) -> dict | None:
    """The entry of exactly `search`; with `search.device` None, the latest measured (not predicted) entry of its
    route for the problem, whatever the device and limit (entries are kept in the order they were written)."""
    entries = read_cache(cache)
    if search.device is not None:
        return entries.get(cache_key(gemm, target, search))
    want = _fields(gemm, target, search)[:4]
    found = None
    for key, entry in entries.items():
        try:
            fields = json.loads(key)
        except json.JSONDecodeError:  # a key of another version of the tool
            continue
        if isinstance(fields, list) and len(fields) == len(want) + 2 and fields[:4] == want and fields[4] != MODEL:
            found = entry
    return found
