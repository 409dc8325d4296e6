"""Kernels of another IREE release: $PIPELINES_IREE_COMPILE and what the emulator accepts from older compilers.

Published rows were measured on kernels of the IREE commit of their day; judging the timing model on them wants
those kernels, so a developer may point $PIPELINES_IREE_COMPILE at another release's iree-compile. Checked here
from outside the code under test: the version each record names is the one the binary itself prints (a stand-in
compiler that prints a made-up version and hands the compile to the real one), bad settings are one sentence
with exit code 2 and nothing written, and a kernel IREE 3.11 built with global-load DMA (committed under
tests/data/iree-3.11/, with the command that made it) runs against float64 although it takes the implicit
arguments of a HIP launch, and is refused where its LLVM IR reads a y workgroup id the host does not give.
"""

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from iree.compiler.tools import binaries

from pipelines import cli
from pipelines.compiler import COMPILER_ENV, CompileError, compiler_version
from pipelines.emulator import emulate_gemm
from pipelines.emulator.machine import EmulatorError

REPO = Path(__file__).resolve().parents[2]
OLD = REPO / "tests" / "data" / "iree-3.11" / "gfx950_bf16_nt_dma"
LISTING = "dump/module_gemm_dispatch_0_rocm_hsaco_fb.rocmasm"
OPTIMIZED = "dump/module_gemm_dispatch_0_rocm_hsaco_fb.optimized.ll"


def stand_in(tmp_path: Path, version_line: str) -> Path:
    """An iree-compile that prints `version_line` for --version and compiles with the package's own."""
    script = tmp_path / "iree-compile"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version_line}"; exit 0; fi\n'
                      f'exec "{binaries.find_tool("iree-compile")}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_without_the_variable_the_package_compiler_is_named(monkeypatch):
    monkeypatch.delenv(COMPILER_ENV, raising=False)
    from iree.compiler import version
    assert compiler_version() == version.VERSION


def test_the_report_names_the_compiler_that_ran(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(COMPILER_ENV, str(stand_in(tmp_path, "IREE compiler version 9.8.7rc20990101 @ abc")))
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "gfx950", "--shape", "256x256x256", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["iree_compiler"] == "9.8.7rc20990101"
    assert report["command"].startswith(str(tmp_path / "iree-compile"))


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing", "not an executable file"),
    (lambda tmp: (tmp / "plain").write_text("x") and tmp / "plain", "not an executable file"),
    (lambda tmp: stand_in(tmp, "clang version 19"), "does not state an IREE compiler version"),
])
def test_a_bad_compiler_is_one_sentence_and_nothing_is_written(tmp_path, monkeypatch, capsys, make, message):
    monkeypatch.setenv(COMPILER_ENV, str(make(tmp_path)))
    out = tmp_path / "out"
    assert cli.main(["compile", "--target", "gfx950", "--shape", "256x256x256", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    with pytest.raises(CompileError):
        compiler_version()


def test_the_old_kernel_takes_implicit_arguments_and_matches_float64():
    listing = (OLD / LISTING).read_text()
    kinds = re.findall(r"\.value_kind:\s+(\S+)", listing)
    assert kinds[:3] == ["global_buffer"] * 3 and len(kinds) > 3
    assert all(kind.startswith("hidden_") for kind in kinds[3:])
    assert "iree-compile" in (OLD / "compile_command.txt").read_text()
    assert json.loads((OLD / "report.json").read_text())["iree_compiler"].startswith("3.11.")
    result = emulate_gemm(OLD)
    assert result.passed, result.summary()


def copy_old(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    shutil.copytree(OLD, folder)
    return folder


def test_an_argument_no_launch_fills_is_refused(tmp_path):
    folder = copy_old(tmp_path)
    listing = folder / LISTING
    listing.write_text(listing.read_text().replace("hidden_block_count_x", "by_value", 1))
    with pytest.raises(EmulatorError, match="neither buffers nor implicit arguments"):
        emulate_gemm(folder)


def test_a_y_workgroup_id_is_read_from_the_llvm_ir(tmp_path):
    folder = copy_old(tmp_path)
    # IREE 3.11 left the y and z id SGPRs enabled in the descriptor; its LLVM IR calls the x id only, so it runs
    assert ".amdhsa_system_sgpr_workgroup_id_y 1" in (folder / LISTING).read_text()
    assert "llvm.amdgcn.workgroup.id.x" in (folder / OPTIMIZED).read_text()
    assert "llvm.amdgcn.workgroup.id.y" not in (folder / OPTIMIZED).read_text()
    assert emulate_gemm(folder).passed
    # the IR reads the y id: the host gives a one-dimensional grid only, so it is refused
    with open(folder / OPTIMIZED, "a") as ir:
        ir.write("declare i32 @llvm.amdgcn.workgroup.id.y()\n")
    with pytest.raises(EmulatorError, match="reads a y or z workgroup id"):
        emulate_gemm(folder)
    # without its LLVM IR nothing tells: the descriptor is believed
    os.remove(folder / OPTIMIZED)
    with pytest.raises(EmulatorError, match="reads a y or z workgroup id"):
        emulate_gemm(folder)


def test_a_version_from_a_failing_compiler_is_refused(tmp_path, monkeypatch):
    """--version must exit 0: a binary that prints a version line but fails is not taken at its word."""
    script = tmp_path / "iree-compile"
    script.write_text('#!/bin/sh\necho "IREE compiler version 9.9.9 @ x"\nexit 3\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(COMPILER_ENV, str(script))
    with pytest.raises(CompileError, match="does not state an IREE compiler version"):
        compiler_version()


def test_the_caches_keep_another_compilers_answers_apart(tmp_path, monkeypatch):
    """The pick cache's fingerprint and the tune cache's key name the compiler that ran, so a prediction or a
    search made with another release's kernels never answers for the package's (and back)."""
    from pipelines import pick
    from pipelines.targets import TARGETS
    from pipelines.tune_cache import MODEL, Search, cache_key
    from transforms.problem import Gemm

    gemm, target, search = Gemm(256, 256, 256, "bf16", "nt"), TARGETS["gfx950"], Search("compilation_info", MODEL)
    monkeypatch.delenv(COMPILER_ENV, raising=False)
    pick.fingerprint.cache_clear()
    own = (pick.fingerprint(), cache_key(gemm, target, search))
    monkeypatch.setenv(COMPILER_ENV, str(stand_in(tmp_path, "IREE compiler version 9.8.7rc20990101 @ abc")))
    pick.fingerprint.cache_clear()
    other = (pick.fingerprint(), cache_key(gemm, target, search))
    pick.fingerprint.cache_clear()
    assert own[0] != other[0] and own[1] != other[1]
    assert "9.8.7rc20990101" in other[1]


def test_a_z_workgroup_id_in_the_llvm_ir_is_refused_too(tmp_path):
    folder = copy_old(tmp_path)
    with open(folder / OPTIMIZED, "a") as ir:
        ir.write("declare i32 @llvm.amdgcn.workgroup.id.z()\n")
    with pytest.raises(EmulatorError, match="reads a y or z workgroup id"):
        emulate_gemm(folder)


def test_implicit_arguments_before_a_buffer_are_refused(tmp_path):
    """A HIP launch appends the implicit arguments after the kernel's own; a listing whose first argument is an
    implicit one and a buffer follows is not a kernel the host side knows how to call."""
    folder = copy_old(tmp_path)
    listing = folder / LISTING
    text = listing.read_text()
    first_buffer = text.index(".value_kind:     global_buffer")
    first_hidden = text.index(".value_kind:     hidden_block_count_x")
    assert first_buffer < first_hidden
    swapped = (text[:first_buffer] + ".value_kind:     hidden_block_count_x" +
               text[first_buffer + len(".value_kind:     global_buffer"):first_hidden] +
               ".value_kind:     global_buffer" + text[first_hidden + len(".value_kind:     hidden_block_count_x"):])
    listing.write_text(swapped)
    with pytest.raises(EmulatorError, match="neither buffers nor implicit arguments"):
        emulate_gemm(folder)


def test_an_iree_launch_hands_its_kernel_the_dispatch_packet_and_a_queue(monkeypatch):
    """What the host gives an IREE kernel's user SGPRs, checked against the HSA packet layout: `dispatch_ptr` is a
    64-byte kernel dispatch packet naming the kernarg segment and the grid in work-items (512³ at 64×128 tiles of
    256 threads: 32 workgroups); `queue_ptr` is another place."""
    import struct

    from pipelines.emulator import host

    seen = []

    class Recording(host.Dispatch):
        def run_batch(self, *args, **kwargs):  # the packet as the waves see it (memory is freed after the run)
            if not seen:
                seen.append((dict(self.host_sgprs), self.kernarg,
                             self.memory.read(self.host_sgprs["dispatch_ptr"], 64).tobytes()))
            return super().run_batch(*args, **kwargs)

    monkeypatch.setattr(host, "Dispatch", Recording)
    assert emulate_gemm(OLD).passed
    sgprs, kernarg_at, packet = seen[0]
    _, setup, wx, wy, wz, _, gx, gy, gz, _, _, _, kernarg, _, _ = struct.unpack("<HHHHHHIIIIIQQQQ", packet)
    assert (wx, wy, wz) == (256, 1, 1) and (gx, gy, gz) == (32 * 256, 1, 1) and setup == 1
    assert kernarg == kernarg_at
    assert sgprs["queue_ptr"] not in (sgprs["dispatch_ptr"], kernarg_at)
