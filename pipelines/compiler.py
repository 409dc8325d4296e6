"""Running iree-compile: flags per target and delivery route, dump layout, and atomic output folders.

ROCm gets the schedule as a tuning spec file (`--iree-codegen-tuning-spec-path`); CUDA gets it as
`compilation_info` on the linalg op in the source (IREE 3.13 does not read tuning specs for CUDA), or, on the
codegen route, as a whole transform-dialect library (`--iree-codegen-transform-dialect-library`); the CPU compiles
the plain source with IREE's CPU pipeline. The caller compiles into a scratch folder (`output.output_folder`)
that becomes the output only when its checks pass; the recorded command names the output's final paths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from iree.compiler import version as iree_version
from iree.compiler.tools import binaries

from transforms.errors import UserError
from transforms.tuning_spec import ENTRY_POINT
from .targets import Target

DUMP_DIR = "dump"
IR_DUMPS = "pass_ir.mlir"
# IR printed at two points of IREE's ROCm pipeline, the evidence `verify` reads:
# - after the prefetch pass, the K loop is rotated once per stage, so its MMA ops count stages × one K step
#   (the pass does not run at all for fewer than 2 stages); LLVM's later unrolling makes ISA counts unreliable;
# - before swizzle hints are resolved into index arithmetic, each swizzled LDS allocation still names its swizzle.
PREFETCH_PASS = "iree-llvmgpu-prefetch-shared-memory"
SWIZZLE_PASS = "iree-codegen-resolve-swizzle-hints"
COMPILE_TIMEOUT_S = 300
# A compile that takes seconds hung once in the 4560 of the full named-pipeline sweep (sm_80 codegen-raster f16 TN
# 1024x1024x1000; six reruns took 1.2-1.3 s each): a timed-out compile is run once more before it is an error.
COMPILE_ATTEMPTS = 2


class CompileError(UserError, RuntimeError):
    """iree-compile failed; the message is one sentence with IREE's first error line."""


@dataclass(frozen=True)
class Compiled:
    folder: Path
    vmfb: Path
    dump: Path
    command: tuple[str, ...]


# Developers judging the timing model on kernels of another IREE release (a published row measured before 3.13)
# point this at that release's iree-compile; the Python bindings stay the package's. Every record that names the
# compiler (report.json, bench's meta and case ids, the tune and pick caches) then names that binary's version.
COMPILER_ENV = "PIPELINES_IREE_COMPILE"
_VERSION = re.compile(r"IREE compiler version (\S+)")


def iree_compile_path() -> str:
    chosen = os.environ.get(COMPILER_ENV)
    if not chosen:
        return binaries.find_tool("iree-compile")
    if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
        raise CompileError(f"${COMPILER_ENV} names {chosen}, which is not an executable file; unset it to use the "
                           "package's iree-compile.")
    return chosen


def compiler_version() -> str:
    """The version of the iree-compile that `iree_compile_path` runs (the package's unless $PIPELINES_IREE_COMPILE
    names another)."""
    return _version_of(iree_compile_path()) if os.environ.get(COMPILER_ENV) else iree_version.VERSION


@lru_cache(maxsize=4)
def _version_of(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CompileError(f"{path} --version did not run ({err}).") from None
    found = _VERSION.search(done.stdout + done.stderr)
    if done.returncode != 0 or found is None:
        raise CompileError(f"{path} --version does not state an IREE compiler version; ${COMPILER_ENV} must name an "
                           "iree-compile.")
    return found[1]


def compile_flags(target: Target, spec: Path | None, print_pass_ir: bool, library: Path | None = None) -> list[str]:
    flags = list(target.compile_flags)
    if spec is not None:
        flags.append(f"--iree-codegen-tuning-spec-path={spec}")
    if library is not None:  # full transform-dialect codegen: the library's entry point configures the dispatch
        flags.append(f"--iree-codegen-transform-dialect-library={library}@{ENTRY_POINT}")
    if print_pass_ir:
        # Single-threaded: printing IR from concurrent dispatch pipelines hung iree-compile once in our runs.
        flags += [f"--mlir-print-ir-after={PREFETCH_PASS}", f"--mlir-print-ir-before={SWIZZLE_PASS}",
                  "--mlir-disable-threading"]
    return flags


def pass_ir_sections(text: str, pass_name: str, dispatch: str) -> list[str]:
    """Bodies of the IR dumps printed for `pass_name` on the function of `dispatch` (e.g. module_gemm_dispatch_0,
    whose function is gemm_dispatch_0_<op summary>)."""
    function = dispatch.removeprefix("module_")
    sections = re.split(r"^// -----// IR Dump .*$", text, flags=re.M)
    headers = re.findall(r"^// -----// IR Dump .*$", text, flags=re.M)
    return [body for header, body in zip(headers, sections[1:])
            if re.search(rf": {re.escape(pass_name)}[{{ ]", header)
            and re.search(rf'func\.func @"?{re.escape(function)}_[\w$]+', body)]


def run_patiently(command, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(command, **kwargs)` for an iree-compile: one that runs past COMPILE_TIMEOUT_S, or whose
    process has used no CPU for HUNG_IDLE_S (an iree-compile has hung on a futex with no CPU, once in thousands of
    runs, where a compile of seconds is CPU-bound throughout), is killed and run again, COMPILE_ATTEMPTS times in
    all; the last timeout is raised."""
    for _ in range(COMPILE_ATTEMPTS - 1):
        try:
            return run_watched(command, **kwargs)
        except subprocess.TimeoutExpired as hung:
            source = command[1] if len(command) > 1 else ""
            sys.stderr.write(f"iree-compile hung ({hung.timeout:.0f} s, {hung.output}) on {source}; compiling once "
                             "more.\n")
    return run_watched(command, **kwargs)


HUNG_IDLE_S = 30.0  # a compile's process that used no CPU time for this long is hung, not working
POLL_S = 2.0


def cpu_ticks(pid: int) -> int | None:
    """User plus system CPU time of a process, in clock ticks (/proc/PID/stat, fields 14 and 15); None where the
    system has no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def run_watched(command, check: bool = False, capture_output: bool = False, text: bool = False,
                **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run` with a watch: TimeoutExpired (its `output` saying why) after COMPILE_TIMEOUT_S, or once the
    process has used no CPU for HUNG_IDLE_S; the process is killed first (also on any other exception, as
    `subprocess.run` does)."""
    if capture_output:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.monotonic()
    with subprocess.Popen(command, text=text, **kwargs) as process:
        last, idle_since = None, started
        try:
            while True:
                try:
                    stdout, stderr = process.communicate(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    ticks = cpu_ticks(process.pid)
                    if ticks is None or ticks != last:
                        last, idle_since = ticks, now
                    why = ("no CPU used for {:.0f} s".format(now - idle_since) if now - idle_since >= HUNG_IDLE_S
                           else "past the time limit" if now - started >= COMPILE_TIMEOUT_S else None)
                    if why is not None:
                        process.kill()
                        process.communicate()
                        raise subprocess.TimeoutExpired(command, now - started, output=why) from None
        except BaseException:
            process.kill()
            raise
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def run_iree_compile(source: Path, folder: Path, target: Target, spec: Path | None = None,
                     print_pass_ir: bool = False, extra_flags: tuple[str, ...] = (),
                     library: Path | None = None, moved_to: tuple[Path, Path] | None = None) -> Compiled:
    """Compile `source` into `folder`. `moved_to` is (scratch, final) when `folder` lies in a scratch folder
    that is moved to `final` afterwards: the recorded command then names the final paths, so that running it
    again reproduces the output where the user finds it (the scratch no longer exists by then)."""
    vmfb, dump = folder / "gemm.vmfb", folder / DUMP_DIR
    command = (iree_compile_path(), str(source), *compile_flags(target, spec, print_pass_ir, library), *extra_flags,
               f"--iree-hal-dump-executable-files-to={dump}", "-o", str(vmfb))
    try:
        done = run_patiently(command, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        raise CompileError(f"iree-compile hung (no CPU for {HUNG_IDLE_S:.0f} s) or ran past {COMPILE_TIMEOUT_S} s "
                           f"for {target.name}, {COMPILE_ATTEMPTS} times.") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "error:" in line]
        first = (errors or done.stderr.strip().splitlines() or ["no message"])[0]
        raise CompileError(f"iree-compile failed for {target.name}: {first.split('error:', 1)[-1].strip()}")
    if print_pass_ir:
        (dump / IR_DUMPS).write_text(done.stderr)
    if moved_to is not None:
        scratch, final = (str(p) for p in moved_to)
        command = tuple(arg.replace(scratch, final) for arg in command)
    (folder / "compile_command.txt").write_text(" ".join(command) + "\n")
    return Compiled(folder, vmfb, dump, command)
