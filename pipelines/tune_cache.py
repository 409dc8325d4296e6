"""The tune cache: the schedule `pipelines tune` measured (or predicted) best per problem, target, IREE version and
route.

`tune` writes it (`tune.finalize`), the `searched` named pipeline reads it (`cached`). A leaf of its own, so that
naming pipelines does not import the tuner that plans benchmarks from them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from iree.compiler import version as iree_version

from transforms.errors import UserError
from transforms.problem import Gemm

from .targets import Target


class TuneError(UserError, ValueError):
    """Nothing to choose from; the message is one sentence."""


def tune_cache() -> Path:
    """Where the cache lives: $PIPELINES_TUNE_CACHE, else ~/.cache/amd-gemm-pipelines/tune.json."""
    return Path(os.environ.get("PIPELINES_TUNE_CACHE", Path.home() / ".cache" / "amd-gemm-pipelines" / "tune.json"))


def cache_key(gemm: Gemm, target: Target, codegen: bool = False, predicted: bool = False, split: bool = False) -> str:
    # Codegen-route winners are kept apart: the `searched` pipeline delivers schedules as compilation_info. So are
    # split-K winners (`tune --route split`, which `searched` weighs against the compilation_info winner) and
    # winners the timing model predicted (`--device model`): `searched` serves measured winners only.
    route = ["codegen"] if codegen else ["split"] if split else []
    kind = ["predicted"] if predicted else []
    return json.dumps([target.name, asdict(gemm), iree_version.VERSION, *route, *kind], sort_keys=True)


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


def cached(gemm: Gemm, target: Target, cache: Path, codegen: bool = False, predicted: bool = False,
           split: bool = False) -> dict | None:
    return read_cache(cache).get(cache_key(gemm, target, codegen, predicted, split))
