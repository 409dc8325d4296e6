"""The emulator and the timing model take a target by its table entry: a renamed gfx950, registered here alone, is
emulated and predicted through its ISA family and facts, with no file of the package naming it (issue 32: nothing
outside targets.py and the route modules tests a target by name; the emulator reads GFX9-or-later from the
target's ISA family). tests/unit/test_toy_target.py does the same for compiling."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from pipelines.emulator import emulate_gemm
from pipelines.emulator.machine import DecodeContext
from pipelines.targets import ISA_FAMILIES, TARGETS, TargetError, isa_family, register, unregister
from pipelines.timing.predict import predict

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "tests" / "data" / "iree-3.11" / "gfx950_bf16_nt_dma"  # a gfx950 kernel with its report.json


@pytest.fixture
def toy():
    register(dataclasses.replace(TARGETS["gfx950"], name="gfx950x", description="a renamed gfx950 (test)"))
    yield TARGETS["gfx950x"]
    unregister("gfx950x")


def retargeted(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "kernel"
    shutil.copytree(KERNEL, folder)
    report = json.loads((folder / "report.json").read_text())
    (folder / "report.json").write_text(json.dumps(dict(report, target=name)))
    return folder


def test_a_renamed_gfx950_is_emulated_and_predicted_like_gfx950(toy, tmp_path):
    folder = retargeted(tmp_path, toy.name)
    result = emulate_gemm(folder)
    assert result.passed, result.summary()
    assert "on gfx950x:" in result.summary()
    mine, theirs = predict(folder), predict(KERNEL)
    assert mine.microseconds == pytest.approx(theirs.microseconds)


def test_the_encoding_generation_comes_from_the_isa_family(toy):
    assert DecodeContext(kernel=None, arch="gfx950x", lanes=64, lds_banks=64).gfx9
    assert not DecodeContext(kernel=None, arch="gfx1151", lanes=32, lds_banks=64).gfx9
    assert {name: f.gfx9 for name, f in ISA_FAMILIES.items()} == {"cdna3": True, "cdna4": True, "rdna3": False}
    with pytest.raises(TargetError, match="names no ISA family"):
        isa_family("sm_80")
