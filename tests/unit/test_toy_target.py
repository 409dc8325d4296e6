"""Adding a target is one `Target` entry: a copy of gfx942 under another name, registered here and nowhere else,
compiles through `tuned`, `auto` and the `pingpong8` kernel, passes every check, and gives gfx942's kernels."""

import dataclasses
import json
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.targets import TARGETS, register, unregister

TOY = "toy942"
PROBLEM = ["--shape", "512x512x512", "--dtype", "bf16", "--layout", "nt"]
CHOICES = {"tuned": ["--pipeline", "tuned"], "auto": ["--pipeline", "auto"], "pingpong8": ["--schedule", "pingpong8"]}


@pytest.fixture(scope="module")
def toy():
    register(dataclasses.replace(TARGETS["gfx942"], name=TOY, description="a copy of gfx942 under another name"))
    yield TARGETS[TOY]
    unregister(TOY)


def _compile(target: str, choice: str, out: Path) -> dict:
    assert cli.main(["compile", "--target", target, *PROBLEM, *CHOICES[choice], "-o", str(out)]) == 0
    return json.loads((out / "report.json").read_text())


@pytest.mark.parametrize("choice", [pytest.param(c, marks=pytest.mark.slow) if c in ("tuned", "auto") else c
                                    for c in CHOICES])
def test_toy_target_compiles_as_its_original(toy, choice, tmp_path):
    ours, original = _compile(TOY, choice, tmp_path / "toy"), _compile("gfx942", choice, tmp_path / "gfx942")
    assert ours["target"] == TOY and ours["verified"] == original["verified"]
    assert ours["verified"] or ours["choice"]["chosen"] == "default"  # only the model's choice of IREE's own kernel
    if choice != "pingpong8":  # the timing model judges the copy as it judges gfx942
        assert {k: ours["choice"][k] for k in ("chosen", "why", "rows")} == \
            {k: original["choice"][k] for k in ("chosen", "why", "rows")}
    assert ours["schedules"] == original["schedules"] and ours["schedule_summary"] == original["schedule_summary"]
    isa = {name: (folder / "dump" / report["dispatches"][0]["isa_file"]).read_text()
           for name, folder, report in ((TOY, tmp_path / "toy", ours), ("gfx942", tmp_path / "gfx942", original))}
    assert isa[TOY] == isa["gfx942"]


def test_toy_target_is_listed_and_gone_after(toy, capsys):
    assert cli.main(["list"]) == 0
    assert TOY in capsys.readouterr().out


def test_a_name_is_registered_once(toy):
    with pytest.raises(Exception, match="already registered"):
        register(toy)
