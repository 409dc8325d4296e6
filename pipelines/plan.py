"""The plan format: what `pipelines bench` and `tune` write into a plan folder's plan.json and what the runner, the
cluster and the timing model read back. One definition, with a JSON round trip (`Plan.from_json(p.to_json())`
equals `p`); a plan that is not in this format is one sentence (`PlanFormatError`), never a failure mid-run.

Standard library only: the runner imports it on a GPU machine that has no compiler.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from transforms.errors import UserError

# A case's problem as `dataclasses.asdict(Gemm)` writes it: what the runner reads of it.
PROBLEM_KEYS = {"m": int, "n": int, "k": int, "dtype": str, "layout": str, "epilogue": dict}


class PlanFormatError(UserError, ValueError):
    """A plan.json that is not in the plan format; one sentence."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """One compiled kernel of a plan, and what the runner needs to run and check it."""

    id: str
    label: str
    problem: dict  # the Gemm, as dataclasses.asdict writes it
    pipeline: str
    schedule: str  # what the case compiles, in words
    schedule_fields: dict | None = None  # its plan's fields (None: IREE's default, or a refusal)
    target: str
    flops: int
    repeat: int  # each dispatch repeated this many times a call
    function: str
    input_shapes: list
    input_dtypes: list
    vmfb: str | None = None  # relative to the plan folder; None: nothing compiled
    status: str  # "ok", "compile-failed" or "refused"
    vendor: bool = False  # the vendor library is timed beside this case (the first case of each problem)
    error: str | None = None
    same_kernel_as: str | None = None  # the id of an earlier case that compiled the same kernel

    def to_json(self) -> dict[str, Any]:
        """The case as plan.json holds it; the optional fields only where set."""
        out = dataclasses.asdict(self)
        for key in ("error", "same_kernel_as"):
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_json(cls, entry: object) -> Case:
        if not isinstance(entry, dict):
            raise PlanFormatError("a case that is not an object")
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in entry
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise PlanFormatError(f"a case without {', '.join(missing)}")
        if entry.get("device_inputs"):  # an earlier version's Hopper case: its kernel took tensor maps as inputs
            raise PlanFormatError("a case whose kernel takes inputs the GPU machine made (device_inputs), which this "
                                  "version's kernels build themselves; write the plan again with this version's bench")
        case = cls(**{f.name: entry[f.name] for f in dataclasses.fields(cls) if f.name in entry})
        case.check()
        return case

    def check(self) -> None:
        types: dict[str, Any] = {"id": str, "label": str, "problem": dict, "pipeline": str, "schedule": str,
                                 "target": str, "flops": int, "repeat": int, "function": str, "input_shapes": list,
                                 "input_dtypes": list, "status": str, "vendor": bool}
        wrong = [key for key, kind in types.items() if not isinstance(getattr(self, key), kind)
                 or (kind is int and isinstance(getattr(self, key), bool))]
        wrong += [f"problem {key}" for key, kind in PROBLEM_KEYS.items() if not isinstance(self.problem.get(key), kind)]
        if not wrong and not isinstance(self.problem["epilogue"].get("kind"), str):
            wrong.append("problem epilogue kind")
        wrong += [key for key in ("vmfb", "error", "same_kernel_as") if getattr(self, key) is not None
                  and not isinstance(getattr(self, key), str)]
        if self.schedule_fields is not None and not isinstance(self.schedule_fields, dict):
            wrong.append("schedule_fields")
        if wrong:
            raise PlanFormatError(f"case {self.id!r} has a wrong or missing {wrong[0]}")


@dataclass(frozen=True)
class Plan:
    """A plan folder's plan.json: the target, the compiler and commit that built it, the compute units its rules
    filled, and the cases."""

    target: str
    iree_compiler: str
    git_commit: str | None
    compute_units: dict
    cases: tuple[Case, ...]

    def to_json(self) -> str:
        meta = {"target": self.target, "iree_compiler": self.iree_compiler, "git_commit": self.git_commit,
                "compute_units": self.compute_units, "cases": [c.to_json() for c in self.cases]}
        return json.dumps(meta, indent=1)

    @classmethod
    def from_json(cls, text: str, where: str = "plan.json") -> Plan:
        """The plan of `text`, or one sentence naming `where` and what is wrong."""
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as err:
            raise PlanFormatError(f"plan {where} is not valid JSON ({err}).") from None
        try:
            if not isinstance(meta, dict) or not isinstance(meta.get("cases"), list):
                raise PlanFormatError("no list of 'cases'")
            if not isinstance(meta.get("target"), str):
                raise PlanFormatError("no 'target'")
            cases = tuple(Case.from_json(entry) for entry in meta["cases"])
        except PlanFormatError as err:
            raise PlanFormatError(f"plan {where} is not a list of 'cases' as `pipelines bench --compile-only` "
                                  f"writes them ({err}); write it again.") from None
        units = meta.get("compute_units")
        return cls(meta["target"], str(meta.get("iree_compiler")), meta.get("git_commit"),
                   units if isinstance(units, dict) else {}, cases)
