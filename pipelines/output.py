"""Writing outputs without losing what the user owns: folders, work folders and single files, all atomic.

Every command that writes goes through here, under one admission rule. A folder this tool wrote carries a manifest
(`MANIFEST`) naming its kind (the command that owns it) and listing, per command, the files it wrote; a file in
it is the tool's only if the manifest lists it. A folder without a manifest that is not empty belongs to the user:
refused unless `--force`, and even then a user's file is only replaced by one of the same name (never read as the
tool's own), the rest stays. An output that is, or holds, one of the command's inputs is refused, `--force` or
not, and so is a folder of another kind (a tune plan never takes a bench's rows; `--force` speaks for the user's
files, not the tool's). `admit_folder` and `admit_file` check without writing, so a command calls them before
any work; `output_folder` builds a command's output in a scratch folder beside the target and moves it into place
only when the command succeeds (SIGINT and SIGTERM clean the scratch up and are held back while the output moves
in); `work_folder` admits a plan folder that resumes (bench, tune, calibrate --keep); `write_file` and
`write_atomic` write one file through a temporary file and `os.replace`. A scratch left by a killed run (SIGKILL
cannot be caught) carries the dead process's id in its name and is removed by the next run that writes beside it.
Nothing here imports the rest of the project (results/h100/hopper/hopper_gemm.py imports it on GPU machines
without a compiler).
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
from collections.abc import Iterable
from pathlib import Path

from transforms.errors import UserError

OWNER = "amd-gemm-pipelines"
MANIFEST = ".pipelines-output.json"
# What a plan folder of each kind holds, listed in its manifest when it is admitted, so that the runner's
# results.jsonl is the tool's before it exists; a name ending in "/" is a folder and everything in it.
PLAN_FILES = {"bench": ("plan.json", "results.jsonl", "cases/"),
              "tune": ("plan.json", "results.jsonl", "cases/", "best/"),
              "calibrate": (),  # each row compiles into a folder of its own, which carries its own manifest
              "split-k-sweep": ("plan.json", "results.jsonl", "cases/")}
# Kinds whose files may go into a folder of another kind: a plan's reports of its own results.
GUESTS = {"report": ("bench", "tune", "split-k-sweep")}
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


def admit_file(path: Path, force: bool = False, inputs: Iterable[Path | None] = (), flag: str = "-o") -> None:
    """Whether `write_file` may write `path` (call it before any work): never over one of `inputs`; an existing
    file the tool did not write (no `FILE_MARK`) only with `force`."""
    path = Path(path)
    _refuse_inputs(path, inputs, flag)
    if path.is_dir():
        raise OutputError(f"{path} is a folder; {flag} names the file to write.")
    if path.exists() and not force and not _marked(path):
        raise OutputError(f"{path} exists and was not written by pipelines; pass --force to overwrite it.")


def write_file(path: Path, data: str | bytes, force: bool = False) -> None:
    """A user-named single output, written whole or not at all (`admit_file` first)."""
    admit_file(path, force)
    write_atomic(path, data)


def admit_folder(folder: Path, kind: str, force: bool = False, names: Iterable[str] = (),
                 inputs: Iterable[Path | None] = (), flag: str = "-o") -> None:
    """Whether a command of `kind` may write `folder` (nothing is written; call it before any work): not a file,
    not one of `inputs` nor a folder holding one, not a folder of another kind, and, without `force`, neither a
    user's non-empty folder nor one where any of `names` (files the command writes) exists unlisted."""
    folder = Path(folder)
    _refuse_inputs(folder, inputs, flag)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{flag} {folder} is an existing file; name a folder.")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    manifest = _manifest(folder)
    if manifest is None and not force:
        raise OutputError(f"{folder} holds files pipelines did not write; choose another folder or pass --force "
                          "to write beside them (files of the same name are replaced).")
    if manifest is None:
        return
    _refuse_kind(folder, manifest, kind)
    if not force:
        for name in names:
            if _exists(folder / name) and not _listed(manifest, name):
                raise OutputError(f"{folder / name.rstrip('/')} was not written by pipelines; move it away or pass "
                                  "--force to replace it.")


def owned(path: Path) -> bool:
    """Whether `path` exists and the manifest of its folder (or of a folder above it) lists it: a file the tool
    may read back as its own (resume a plan, reuse a compiled case)."""
    path = Path(path)
    if not _exists(path):
        return False
    for folder in path.parents:
        manifest = _manifest(folder)
        if manifest is not None:
            return _listed(manifest, path.relative_to(folder).as_posix())
    return False


def folder_kind(folder: Path) -> str | None:
    """The kind a folder of the tool's records, None for any other folder."""
    manifest = _manifest(Path(folder))
    return manifest.get("kind") if manifest else None


def work_folder(folder: Path, kind: str, force: bool = False, inputs: Iterable[Path | None] = ()) -> Path:
    """Admit a plan folder of `kind` that resumes: new, empty, or already the tool's of that kind; a user's
    non-empty folder only with `force`, and then a user's file named like a plan file is removed (replaced by the
    tool's, never resumed from). The manifest is written first and lists the plan's files, so a run stopped before
    its first file still resumes."""
    folder = Path(folder)
    files = PLAN_FILES[kind]
    admit_folder(folder, kind, force, files, inputs)
    manifest = _manifest(folder) if folder.is_dir() else None
    made = _missing_parents(folder / MANIFEST)
    try:
        for parent in made:
            parent.mkdir(exist_ok=True)
        for name in files:
            path = folder / name
            if not name.endswith("/") and (path.is_file() or path.is_symlink()) and \
                    not (manifest and _listed(manifest, name)):
                path.unlink()  # only with force (admit_folder): the user's file of a plan file's name
        updated = manifest or _new_manifest(kind)
        updated = dict(updated, kind=updated.get("kind") or kind,
                       outputs=dict(updated["outputs"], plan=sorted(set(updated["outputs"].get("plan", ())) |
                                                                   set(files))))
        if updated != manifest:
            write_atomic(folder / MANIFEST, json.dumps(updated, indent=1) + "\n")
    except OSError as err:
        _remove_empty(made)
        raise OutputError(f"cannot create {folder}: {err.strerror or err}.") from None
    return folder


@contextlib.contextmanager
def output_folder(final: Path, command: str, force: bool = False, inputs: Iterable[Path | None] = ()):
    """A scratch folder beside `final` for `command`'s output; on success its files replace the ones `command`
    wrote there before (a new folder is renamed into place whole), and on any exception it disappears. `command`
    is also the folder's kind (`admit_folder`)."""
    admit_folder(Path(final), command, force, inputs=inputs)  # named as the user gave it
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
                _commit(scratch, final, command, force)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        _remove_empty(made)
        raise


def _refuse_inputs(output: Path, inputs: Iterable[Path | None], flag: str) -> None:
    """An output that is an input, or a folder holding one, would replace what the command reads: refused even
    with --force (that flag is for the user's other files)."""
    out = Path(os.path.realpath(output))
    for given in inputs:
        if given is None:
            continue
        real = Path(os.path.realpath(given))
        same = real == out or (real.exists() and out.exists() and os.path.samefile(real, out))
        if same or out in real.parents:
            what = "is" if same else "holds"
            raise OutputError(f"{flag} {output} {what} the input {given}; write the output somewhere else (even "
                              "--force does not write over an input).")


def _refuse_kind(folder: Path, manifest: dict, kind: str) -> None:
    recorded = manifest.get("kind")
    if recorded is None or recorded == kind or recorded in GUESTS.get(kind, ()):
        return
    raise OutputError(f"{folder} is a {recorded} folder of pipelines and {kind} output does not go into it, even with "
                      "--force; choose another folder.")


def _commit(scratch: Path, final: Path, command: str, force: bool) -> None:
    written = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if not p.is_dir())
    mode = 0o777 & ~_umask()
    for folder in [scratch, *(p for p in scratch.rglob("*") if p.is_dir() and not p.is_symlink())]:
        folder.chmod(mode)  # iree-compile makes its dump folder 0750
    if not final.exists():
        fresh = _new_manifest(command)
        fresh["outputs"][command] = written
        (scratch / MANIFEST).write_text(json.dumps(fresh, indent=1) + "\n")
        os.rename(scratch, final)
        return
    # Into an existing folder file by file, so whatever else is there (a user's files, a plan) stays.
    manifest = _manifest(final)
    for name in written:
        for parent in Path(name).parents:
            if parent != Path(".") and (final / parent).exists() and not (final / parent).is_dir():
                raise OutputError(f"{final / parent} is a file where pipelines writes a folder; move it away.")
        if (final / name).is_dir():
            raise OutputError(f"{final / name} is a folder where pipelines writes a file; move it away.")
        if _exists(final / name) and not force and not (manifest and _listed(manifest, name)):
            raise OutputError(f"{final / name} was not written by pipelines; move it away or pass --force to "
                              "replace it.")
    manifest = manifest or _new_manifest(command)
    if manifest.get("kind") is None and command not in GUESTS:
        manifest["kind"] = command
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


def _new_manifest(kind: str) -> dict:
    return {"written_by": OWNER, "kind": kind, "outputs": {}}


def _manifest(folder: Path) -> dict | None:
    """The folder's manifest if it is the tool's (a JSON object naming `OWNER`, with a list of files per command),
    else None. One written before kinds were recorded takes the kind of the one command it lists, if one does."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    outputs = manifest.get("outputs") if isinstance(manifest, dict) else None
    if not isinstance(outputs, dict) or manifest.get("written_by") != OWNER or not all(
            isinstance(names, list) and all(isinstance(n, str) for n in names) for names in outputs.values()):
        return None
    kind = manifest.get("kind")
    if kind is None:
        owners = [command for command in outputs if command not in GUESTS]
        kind = owners[0] if len(owners) == 1 else None
    return dict(manifest, kind=kind) if isinstance(kind, str) or kind is None else None


def _listed(manifest: dict, name: str) -> bool:
    """Whether the manifest lists `name` (a path inside its folder), itself or under a listed folder ("cases/")."""
    return any(entry == name or (entry.endswith("/") and name.startswith(entry))
               for names in manifest["outputs"].values() for entry in names)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


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
