"""The README's commands run as written from a fresh clone.

Every command in the README's ```sh blocks is taken out (continuation lines joined, trailing comments dropped) and
classed by `NEEDS`: the set-up commands (the README's two commands, which CI itself runs, and the extras'
installs), the ones that need a GPU or a cluster of machines, and the rest, which must run here. The default tier
checks what can be checked without running them: each `pipelines` command parses with the real argument parser,
every file a command reads is in the repository or written by an earlier README command, every tool it names
exists, and no two examples write the same output folder. The `readme` tier runs every command that needs no GPU,
in README order, in a copy of the repository's tracked files, and prints the time each took:

    .venv/bin/python -m pytest -q -s -m readme tests/unit/test_readme.py

(with PIPELINES_TRITON_VENV naming an environment that has triton, its Triton commands run too).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines import cli

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

# (class, pattern over the command): the first match wins; a command matching none must run here.
NEEDS = (
    ("setup", r"^bash tools/(setup_and_compile|test)\.sh\b|^\.venv/bin/pip install |^python3 -m venv "),
    # Triton's own environment (a ~1 GB wheel, no dependency of the package) and what reads its output folder
    ("triton", r"^\.venv-triton/|^pipelines \S+ out/t(\s|$)"),
    ("gpu", r"--device (cuda|hip)\b|--gpus |hopper_gemm\.py run |^dask |\bdask worker\b|--scheduler tcp://"
            r"|^pipelines inspect --jit "),  # --jit: the CUDA driver JIT-compiles the PTX
    # clang 22 with a stand-in ROCm tree and the HipKittens snapshot (root for apt-get, 430 MB of downloads)
    ("toolchain", r"tools/hipkittens_(toolchain\.sh|kernels\.py)\b"),
)
# The flags of `pipelines` commands that name a file or folder the command reads.
READS = ("--input", "--csv", "--with-spec", "--plan", "--suite")
READS_POSITIONAL = {"inspect", "emulate", "predict", "report", "tune-model"}
# Commands that write a file named without -o: (pattern, the group that names it).
WRITES_NAMED = ((r"^python tools/transformer_block\.py onnx (\S+)", 1),)
SUITES = {p.stem for p in (REPO / "pipelines" / "suites").glob("*.json")}


def readme_commands(text: str | None = None) -> list[str]:
    """The commands of the README's ```sh blocks, in order: continuations joined, comments and blank lines gone."""
    text = README.read_text() if text is None else text
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def needs(command: str) -> str:
    return next((kind for kind, pattern in NEEDS if re.search(pattern, command)), "here")


def _argv(command: str) -> list[str]:
    """The words of a command, without an environment prefix and a `> file` redirection."""
    words = shlex.split(command.split(" > ")[0])
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return words


def _pipelines_argv(command: str) -> list[str] | None:
    words = _argv(command)
    if words[:1] == ["pipelines"]:
        return words[1:]
    if words[:3] == ["python", "-m", "pipelines"]:
        return words[3:]
    return None


def _writes(command: str) -> list[str]:
    words, written = _argv(command), []
    for flag in ("-o", "--output", "--keep"):
        if flag in words:
            written.append(words[words.index(flag) + 1])
    written += [m.group(g) for pattern, g in WRITES_NAMED if (m := re.match(pattern, command))]
    if " > " in command:
        written.append(command.split(" > ")[1].split()[0])
    return written


def _reads(command: str) -> list[str]:
    words = _argv(command)
    argv = _pipelines_argv(command)
    read = [words[i + 1] for i, word in enumerate(words[:-1]) if word in READS]
    if argv and argv[0] in READS_POSITIONAL and len(argv) > 1 and not argv[1].startswith("-"):
        read.append(argv[1])
    if words[:1] == ["iree-compile"]:
        read += [w for w in words[1:] if not w.startswith("-") and w.endswith(".mlir")]
        read += [w.split("=", 1)[1] for w in words if w.startswith("--iree-codegen-tuning-spec-path=")]
    if words[:1] == ["iree-import-onnx"]:
        read.append(words[1])
    if words[:1] == ["python"] and len(words) > 1 and words[1].endswith(".py"):
        read.append(words[1])
    return [r for r in read if not (r in SUITES and "--suite" in words)]


def test_commands_are_found_and_classed():
    commands = readme_commands()
    assert len(commands) >= 40
    assert commands[:2] == ["bash tools/setup_and_compile.sh", "bash tools/test.sh"]
    kinds = {needs(c) for c in commands}
    assert kinds == {"setup", "gpu", "triton", "toolchain", "here"}
    # the classes on both sides: a GPU flag, a model device, an install
    assert needs("pipelines tune --target sm_80 --shape 8x8x8 --device cuda -o x") == "gpu"
    assert needs("pipelines tune --target gfx950 --shape 8x8x8 --device model -o x") == "here"
    assert needs(".venv/bin/pip install -e '.[onnx]'") == "setup"
    assert needs("python3 -m venv .venv-triton && .venv-triton/bin/pip install triton") == "setup"
    assert needs(".venv-triton/bin/python tools/triton_kernels.py -o out/t") == "triton"
    assert needs("pipelines emulate out/t") == "triton" and needs("pipelines emulate out/tw") == "here"
    assert needs("python tools/hipkittens_kernels.py --shape 8192 -o out/hk") == "toolchain"
    assert needs("pipelines predict tests/data/hipkittens/gfx950_bf16_nt_8192") == "here"


def test_the_extraction_joins_continuations_and_drops_comments():
    text = "x\n```sh\npipelines compile --target gfx942 \\\n    --shape 8x8x8 -o out/z   # note\n# a comment\n\n```\n"
    assert readme_commands(text) == ["pipelines compile --target gfx942 --shape 8x8x8 -o out/z"]


@pytest.mark.parametrize("command", [c for c in readme_commands() if _pipelines_argv(c) is not None],
                         ids=lambda c: c[:90])
def test_every_pipelines_command_parses(command):
    """The argument parser accepts the command as written (a renamed or removed flag fails here)."""
    cli.build_parser().parse_args(_pipelines_argv(command))


def test_every_file_a_command_reads_exists_or_an_earlier_command_writes_it():
    written: list[str] = []
    missing = []
    for command in readme_commands():
        for path in _reads(command):
            made = any(path == w or path.startswith(w.rstrip("/") + "/") for w in written)
            inside = (REPO / path).resolve().is_relative_to(REPO)  # a fresh clone has nothing beside it
            if not made and not (inside and (REPO / path).exists()):
                missing.append(f"{command}: {path}")
        written += _writes(command)
    assert not missing, missing


def test_no_two_runnable_examples_write_the_same_output():
    """Examples run in order from one clone; one reusing another's -o would refuse or replace it."""
    outputs = [w for c in readme_commands() if needs(c) == "here" for w in _writes(c)]
    assert len(outputs) == len(set(outputs)), sorted(o for o in outputs if outputs.count(o) > 1)


def _fresh_copy(destination: Path) -> Path:
    """The repository's tracked files (as a fresh clone has them, with this checkout's changes) in `destination`."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def _run_class(tmp_path: Path, kind: str, links: dict[str, Path]) -> None:
    """Run every README command of class `kind` in README order in a fresh copy, with `links` (name -> an installed
    environment, as the set-up commands make them) in place; print each one's time; fail naming the failures."""
    clone = _fresh_copy(tmp_path / "clone")
    for name, target in links.items():
        (clone / name).symlink_to(target)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PIPELINES_TUNE_CACHE=str(tmp_path / "tune.json"))
    failed, times = [], []
    for command in readme_commands():
        if needs(command) != kind:
            continue
        start = time.monotonic()
        done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=1800)
        times.append((time.monotonic() - start, command))
        print(f"{times[-1][0]:7.1f} s  exit {done.returncode}  {command}", flush=True)
        if done.returncode != 0:
            failed.append(f"{command}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    print(f"{sum(t for t, _ in times):7.1f} s  in all, {len(times)} commands")
    assert times and not failed, "\n".join(failed)


@pytest.mark.slow  # so that `-m "not slow"` (the fast tier, tools/mutate.py) leaves it out too
@pytest.mark.readme
def test_every_command_that_needs_no_gpu_runs_as_written(tmp_path):
    _run_class(tmp_path, "here", {".venv": Path(sys.prefix)})  # the environment tools/setup_and_compile.sh makes


@pytest.mark.slow
@pytest.mark.readme
def test_the_triton_commands_run_as_written(tmp_path):
    """The README's Triton example needs Triton's own environment (its install command, ~1 GB, is a set-up
    command): PIPELINES_TRITON_VENV names one already made that way; without it this test is skipped, and says so."""
    venv = os.environ.get("PIPELINES_TRITON_VENV")
    if not venv:
        pytest.skip("PIPELINES_TRITON_VENV names no Triton environment (python3 -m venv DIR && DIR/bin/pip install "
                    "triton numpy), so the README's Triton commands were not run")
    _run_class(tmp_path, "triton", {".venv": Path(sys.prefix), ".venv-triton": Path(venv)})
