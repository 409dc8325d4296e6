"""Writing outputs without losing what the user owns: folders, work folders and single files, all atomic.

Every command that writes goes through here. A folder this tool wrote carries a manifest (`MANIFEST`) listing,
per command, the files it wrote; a folder without one that is not empty belongs to the user and is refused
unless `--force`, and even then only the files the tool writes are replaced, never the rest. `output_folder`
builds a command's output in a scratch folder beside the target and moves it into place only when the command
succeeds (SIGINT and SIGTERM clean the scratch up and are held back while the output moves in); `work_folder`
admits a bench/tune plan folder that resumes; `write_file` and `write_atomic` write one file through a temporary
file and `os.replace`. A scratch left by a killed run (SIGKILL cannot be caught) carries the dead process's id
in its name and is removed by the next run that writes beside it. Nothing here imports the rest of the project.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import signal
import threading
from pathlib import Path

from transforms.errors import UserError

OWNER = "amd-gemm-pipelines"
MANIFEST = ".pipelines-output.json"
# Signs of a bench/tune work folder written before manifests existed; such a folder resumes.
WORK_FILES = ("plan.json", "results.jsonl")
SCRATCH_TAG = ".pipelines-tmp-"
# Single files carry this line in their first bytes (a comment in text, a PNG text chunk) so a rerun knows them.
FILE_MARK = f"Written by {OWNER}; the next run may overwrite this file."
MARK_BYTES = 4096
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class OutputError(UserError, ValueError):
    """An output the tool must not or cannot write; the message is one sentence."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """`path` holds either its old content or all of `data`, never a part, even after a crash (fsync)."""
    path = Path(path)
    _sweep_scratch(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = _scratch_file(path)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data.encode() if isinstance(data, str) else data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(scratch, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(scratch)
            raise
    except IsADirectoryError:
        raise OutputError(f"{path} is a folder; name a file to write.") from None
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}.") from None


def admit_file(path: Path, force: bool = False) -> None:
    """Whether `write_file` may write `path` (call it before long work): an existing file the tool did not write is
    refused unless `force`."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{path} is a folder; -o names the file to write.")
    if path.exists() and not force and not _marked(path):
        raise OutputError(f"{path} exists and was not written by pipelines; pass --force to overwrite it.")


def write_file(path: Path, data: str | bytes, force: bool = False) -> None:
    """A user-named single output, written whole or not at all (`admit_file` first)."""
    admit_file(path, force)
    write_atomic(path, data)


def work_folder(folder: Path, force: bool = False) -> Path:
    """Admit a plan folder that resumes: new, empty, or already the tool's; a user's non-empty folder only with
    `force`. The manifest is written first, so a run stopped before its first file still resumes."""
    folder = Path(folder)
    _admit(folder, force)
    made = _missing_parents(folder / MANIFEST)
    try:
        for parent in made:
            parent.mkdir(exist_ok=True)
        if not (folder / MANIFEST).exists():
            write_atomic(folder / MANIFEST, json.dumps(_manifest(folder)))
    except OSError as err:
        _remove_empty(made)
        raise OutputError(f"cannot create {folder}: {err.strerror or err}.") from None
    return folder


@contextlib.contextmanager
def output_folder(final: Path, command: str, force: bool = False):
    """A scratch folder beside `final` for `command`'s output; on success its files replace the ones `command`
    wrote there before (a new folder is renamed into place whole), and on any exception it disappears."""
    _admit(Path(final), force)  # named as the user gave it
    final = Path(os.path.abspath(final))
    _sweep_scratch(final)
    made = _missing_parents(final)
    try:
        for parent in made:
            parent.mkdir(exist_ok=True)
        scratch = _scratch_folder(final)
    except OSError as err:
        _remove_empty(made)
        raise OutputError(f"cannot create a folder beside {final} to build it in: {err.strerror or err}.") from None
    try:
        with _terminate_raises():
            yield scratch
            with _signals_held():
                _commit(scratch, final, command)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        _remove_empty(made)
        raise


def _ours(folder: Path) -> bool:
    """Whether `folder` was written by this tool (manifest, or the files of a plan or a compile that predate it)."""
    return (folder / MANIFEST).is_file() or any((folder / name).is_file() for name in WORK_FILES) or \
        _legacy_compile_files(folder) is not None


def _admit(folder: Path, force: bool) -> None:
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"-o {folder} is an existing file; name a folder.")
    if folder.is_dir() and not force and any(folder.iterdir()) and not _ours(folder):
        raise OutputError(f"{folder} holds files pipelines did not write; choose another folder or pass --force "
                          "to write beside them.")


def _commit(scratch: Path, final: Path, command: str) -> None:
    written = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if not p.is_dir())
    mode = 0o777 & ~_umask()
    for folder in [scratch, *(p for p in scratch.rglob("*") if p.is_dir() and not p.is_symlink())]:
        folder.chmod(mode)  # iree-compile makes its dump folder 0750
    if not final.exists():
        manifest = _manifest(final)
        manifest["outputs"][command] = written
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        os.rename(scratch, final)
        return
    # Into an existing folder file by file, so whatever else is there (a user's files, a plan) stays.
    for name in written:
        for parent in Path(name).parents:
            if parent != Path(".") and (final / parent).exists() and not (final / parent).is_dir():
                raise OutputError(f"{final / parent} is a file where pipelines writes a folder; move it away.")
        if (final / name).is_dir():
            raise OutputError(f"{final / name} is a folder where pipelines writes a file; move it away.")
    manifest = _manifest(final)
    before = set(manifest["outputs"].get(command, ()))
    # The manifest names old and new files until the move is done, so a run killed here is still the tool's.
    manifest["outputs"][command] = sorted(before | set(written))
    write_atomic(final / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    for name in written:
        (final / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(scratch / name, final / name)
    for name in sorted(before - set(written)):  # left by the previous run of the same command
        stale = final / name
        if stale.is_file() or stale.is_symlink():
            stale.unlink()
            _remove_empty([p for p in stale.parents if final in p.parents])
    manifest["outputs"][command] = written
    write_atomic(final / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(scratch)


def _manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if isinstance(manifest, dict) and isinstance(manifest.get("outputs"), dict):
            return manifest
    except (OSError, ValueError):
        pass
    legacy = _legacy_compile_files(folder)
    return {"written_by": OWNER, "outputs": {"compile": legacy} if legacy else {}}


def _legacy_compile_files(folder: Path) -> list[str] | None:
    """A compile folder written before manifests: its report.json lists the files that compile wrote."""
    try:
        report = json.loads((folder / "report.json").read_text())
        files = report["files"]["all"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sorted({*map(str, files), "report.json"}) if isinstance(files, list) else None


def _marked(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return FILE_MARK.encode() in handle.read(MARK_BYTES)
    except OSError:
        return False


def _scratch_folder(final: Path) -> Path:
    while True:  # os.mkdir, not tempfile.mkdtemp, so the folder gets the umask's permissions, not 0700
        scratch = final.parent / f".{final.name}{SCRATCH_TAG}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            scratch.mkdir()
            return scratch
        except FileExistsError:
            continue


def _umask() -> int:
    try:  # read, not set and reset: another thread creating a file meanwhile would get umask 0
        status = Path("/proc/self/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:")), 8)
    except (OSError, StopIteration, ValueError):
        umask = os.umask(0o022)
        os.umask(umask)
        return umask


def _scratch_file(path: Path) -> tuple[int, str]:
    umask = _umask()
    while True:
        scratch = path.parent / f".{path.name}{SCRATCH_TAG}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            return os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~umask), str(scratch)
        except FileExistsError:
            continue


def _sweep_scratch(target: Path) -> None:
    """Remove scratch left beside `target` by runs that no longer exist (killed with SIGKILL)."""
    prefix = f".{target.name}{SCRATCH_TAG}"
    with contextlib.suppress(OSError):
        for entry in target.parent.glob(f"{glob.escape(prefix)}*"):
            pid = entry.name[len(prefix):].split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _missing_parents(path: Path) -> list[Path]:
    """The parents of `path` that do not exist yet, outermost first: created for it, removed if it fails."""
    return [p for p in reversed(path.parents) if not p.exists()]


def _remove_empty(folders: list[Path]) -> None:
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def _terminate_raises():
    """SIGTERM unwinds like Ctrl-C (exit 143), so scratch is cleaned up instead of left behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_held():
    """Ctrl-C and SIGTERM wait until the output has moved in: the folder is then old or new, never half. (Python
    handlers, not a signal mask: a mask covers one thread, and IREE's thread pools would take the signal.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    previous = {signum: signal.signal(signum, lambda got, _frame: pending.append(got)) for signum in _HELD_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if pending:
            signal.raise_signal(pending[0])
