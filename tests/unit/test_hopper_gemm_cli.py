"""results/h100/hopper/hopper_gemm.py's command line: every bad input is one sentence and exit 2 with nothing
written, Ctrl-C is exit 130, its output folder follows the project's admission rule (pipelines.output), and `run`
and `inspect` still import where there is no compiler (the GPU machines). In-process where possible; no GPU and,
but for one subprocess, no compile (`_build` is replaced by a fake that writes what a build writes)."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.output import MANIFEST, SCRATCH_TAG

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "results" / "h100" / "hopper" / "hopper_gemm.py"
_spec = importlib.util.spec_from_file_location("hopper_gemm_tool", TOOL)
hg = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = hg  # its dataclass looks its module up there
_spec.loader.exec_module(hg)

# One kernel as `build` writes it into manifest.json (what run and inspect read).
ENTRY = {"name": "bf16_256x256x256_cooperative_m128n128s4g8", "problem": "bf16_256x256x256", "repeat": 200,
         "m": 256, "n": 256, "k": 256, "dtype": "bf16", "layout": "nt", "schedule": {"block_m": 128},
         "maps": [{"operand": "A"}], "ptxas": None}


def digest(folder: Path) -> dict:
    """Every path under `folder` with the hash of its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


def call(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = hg.main(argv)
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_sentence(code: int, err: str, words: str, expected: int = 2) -> None:
    assert code == expected, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("hopper_gemm"), err
    assert words in err, err


@pytest.fixture
def fake_build(monkeypatch):
    """`_build` without iree-compile: a kernel file per schedule and manifest.json, as the real one names them."""
    def build(args, jobs, out):
        entries = []
        for job in jobs:
            for name, _ in job.schedules:
                (out / f"{name}_hopper.mlir").write_text(f"// {name}\n")
                entries.append(dict(ENTRY, name=name, problem=job.problem, repeat=job.repeat))
        (out / "manifest.json").write_text(json.dumps(entries))

    monkeypatch.setattr(hg, "_build", build)


def user_folder(folder: Path) -> dict:
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's notes")
    (folder / "manifest.json").write_text("the user's own manifest.json")
    return digest(folder)


def kernel_folder(folder: Path, manifest) -> Path:
    folder.mkdir()
    (folder / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return folder


BUILD = ["build", "--shape", "256x256x256", "--no-default"]


# (command line, what its one sentence must say); counted with the other bad-input tables (test_bad_input.py)
BAD_INPUTS = [
    (BUILD + ["-o", "out", "--repeat-flops", "-1"], "-1 must be a positive finite number"),
    (BUILD + ["-o", "out", "--repeat-flops", "0"], "0 must be a positive finite number"),
    (BUILD + ["-o", "out", "--repeat-flops", "nan"], "nan must be a positive finite number"),
    (BUILD + ["-o", "out", "--repeat-flops", "inf"], "inf must be a positive finite number"),
    (BUILD + ["-o", "out", "--repeat-flops", "lots"], "'lots' is not a number"),
    (["build", "--shape", "0x256x256", "-o", "out"], "size M=0"),
    (["build", "--shape", "256x256", "-o", "out"], "must have the form"),
    (["build", "--shape", "256xfoox256", "-o", "out"], "must be integers"),
    (["build", "--shape", "2x256x256x256", "-o", "out"], "not a batch"),
    (["build", "--shape", "256x256x100", "-o", "out"], "K must be a multiple of 8"),
    (["build", "--shape", "256x260x256", "--layout", "nn", "-o", "out"], "N a multiple of 8"),
    (["build", "--shape", "256x256x256", "--layout", "tn", "-o", "out"], "invalid choice: 'tn'"),
    (["build", "--shape", "256x256x256", "--dtype", "f32", "-o", "out"],
     "invalid choice: 'f32' (choose from 'f16', 'bf16')"),
    (["build", "--shape", "256x256x256", "--dtype", "f8e4m3fn", "-o", "out"], "invalid choice: 'f8e4m3fn'"),
    (["build", "--shape", "256x256x256", "--schedule", "pingpong:128x128x17x8", "-o", "out"], "stages must be 2 to 16"),
    (["build", "--shape", "256x256x256", "--schedule", "split:1x2", "-o", "out"], "KIND"),
    (["build", "--shape", "256x256x256", "--schedule", "cooperative:128x128x4x8x3", "-o", "out"],
     "cluster_m must be 1 or 2"),
    (["build", "--shape", "256x256x256", "--layout", "nn", "--schedule", "cooperative:128x96x4x8", "-o", "out"],
     "multiple of 64"),
    (["build", "--shape", "256x256x256"], "the following arguments are required: -o/--output"),
    (["build", "--shape", "256x256x256", "-o", "/proc/hopper_out"], "cannot create a folder beside /proc/hopper_out"),
    (["build", "--shape", "256x256x256", "-o", "FILE"], "is an existing file; name a folder"),
    (["build", "--shape", "256x256x256", "-o", "USER"], "pass --force to write beside them"),
    (["build", "--shape", "256x256x256", "-o", "PLAN", "--force"], "is a bench folder of pipelines"),
    (["run", "EMPTY", "--repetitions", "0"], "0 must be a positive integer"),
    (["run", "EMPTY", "--repetitions", "-3"], "-3 must be a positive integer"),
    (["run", "EMPTY", "--repetitions", "many"], "'many' is not an integer"),
    (["run", "OBJECT"], "is not the list of kernels `build` writes"),
    (["inspect", "OBJECT"], "is not the list of kernels `build` writes"),
    (["inspect", "EMPTY"], "lists no kernel"),
    (["inspect", "NUMBERS"], "is not the list of kernels `build` writes"),
    (["inspect", "NO_NAME"], "is not the list of kernels `build` writes"),
    (["inspect", "SIZE_STRING"], "is not the list of kernels `build` writes"),
    (["inspect", "GARBAGE"], "has no readable manifest.json"),
    (["inspect", "MISSING"], "has no readable manifest.json"),
    (["inspect", "FILE"], "has no readable manifest.json"),
    (["inspect", "NO_PTX"], "holds no PTX"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "the following arguments are required"),
]


@pytest.mark.parametrize("argv, words", BAD_INPUTS,
                         ids=lambda value: " ".join(value) if isinstance(value, list) else None)
def test_bad_input_is_one_sentence_exit_2_and_writes_nothing(argv, words, tmp_path, capsys, monkeypatch,
                                                           fake_build):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("a file")
    user_folder(tmp_path / "USER")
    (tmp_path / "PLAN").mkdir()
    (tmp_path / "PLAN" / MANIFEST).write_text(json.dumps({"written_by": "amd-gemm-pipelines", "kind": "bench",
                                                          "outputs": {"plan": ["plan.json"]}}))
    (tmp_path / "PLAN" / "plan.json").write_text("{}")
    kernel_folder(tmp_path / "EMPTY", [])
    kernel_folder(tmp_path / "OBJECT", {})
    kernel_folder(tmp_path / "NUMBERS", [1, 2])
    kernel_folder(tmp_path / "NO_NAME", [{k: v for k, v in ENTRY.items() if k != "name"}])
    kernel_folder(tmp_path / "SIZE_STRING", [dict(ENTRY, m="256")])
    kernel_folder(tmp_path / "GARBAGE", "{not json")
    kernel_folder(tmp_path / "NO_PTX", [ENTRY])
    before = digest(tmp_path)
    code, out, err = call(argv, capsys)
    assert_one_sentence(code, err, words)
    assert out == ""
    assert digest(tmp_path) == before  # nothing written, nothing changed, no scratch left


def test_a_good_build_passes_the_same_checks(tmp_path, capsys, fake_build):
    """The positive control of the table above: the fixtures' problem and schedules are good, and inspect reads
    the manifest a build writes as far as the PTX."""
    code, _, err = call([*BUILD, "--schedule", "cooperative:128x128x4x8", "--layout", "nn", "-o",
                         str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert [e["name"] for e in json.loads((tmp_path / "out" / "manifest.json").read_text())] == [
        "bf16_256x256x256_nn_cooperative_m128n128s4g8"]
    code, _, err = call(["inspect", str(tmp_path / "out")], capsys)
    assert_one_sentence(code, err, "holds no PTX")


def test_dtype_choices_are_the_types_the_hopper_route_builds(capsys):
    from transforms.hopper import DTYPES

    assert hg.DTYPES == tuple(DTYPES)
    with pytest.raises(SystemExit):
        hg.main(["build", "--help"])
    assert "--dtype {f16,bf16}" in capsys.readouterr().out


def test_build_into_a_users_folder_needs_force_and_keeps_their_files(tmp_path, capsys, fake_build):
    out = tmp_path / "out"
    before = user_folder(out)
    code, _, err = call([*BUILD, "-o", str(out)], capsys)
    assert_one_sentence(code, err, "pass --force")
    assert digest(out) == before

    code, _, err = call([*BUILD, "-o", str(out), "--force"], capsys)
    assert code == 0, err
    after = digest(out)
    assert after["notes.txt"] == before["notes.txt"]
    assert after["manifest.json"] != before["manifest.json"]  # --force: the user's file of that name replaced
    assert json.loads((out / "manifest.json").read_text())[0]["name"].endswith("cooperative_m128n128s4g8")
    assert not list(tmp_path.glob(f"*{SCRATCH_TAG}*"))


def test_a_rebuild_rewrites_its_own_folder_and_removes_its_stale_kernels(tmp_path, capsys, fake_build):
    out = tmp_path / "out"
    assert call([*BUILD, "-o", str(out)], capsys)[0] == 0
    (out / "notes.txt").write_text("mine")
    code, _, err = call([*BUILD, "--schedule", "pingpong:128x128x4x8", "-o", str(out)], capsys)  # no --force
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "manifest.json", "notes.txt",
                                                           "bf16_256x256x256_pingpong_m128n128s4g8_hopper.mlir"])
    assert (out / "notes.txt").read_text() == "mine"


def test_a_file_of_the_users_named_like_a_kernel_file_is_not_replaced_without_force(tmp_path, capsys, fake_build):
    """A folder of the tool's, but a file in it that its manifest does not list is the user's."""
    out = tmp_path / "out"
    assert call([*BUILD, "-o", str(out)], capsys)[0] == 0
    theirs = out / "bf16_256x256x256_pingpong_m128n128s4g8_hopper.mlir"
    theirs.write_text("the user's own kernel")
    before = digest(out)
    argv = [*BUILD, "--schedule", "pingpong:128x128x4x8", "-o", str(out)]
    code, _, err = call(argv, capsys)
    assert_one_sentence(code, err, f"{theirs} was not written by pipelines")
    assert digest(out) == before
    assert call([*argv, "--force"], capsys)[0] == 0
    assert theirs.read_text() == "// bf16_256x256x256_pingpong_m128n128s4g8\n"


@pytest.mark.parametrize("error, code, words", [
    (KeyboardInterrupt(), 130, "interrupted"),
    (PermissionError(13, "Permission denied", "out/dump/k.ptx"), 2, "out/dump/k.ptx: Permission denied."),
])
def test_an_interrupted_or_refused_build_leaves_nothing(error, code, words, tmp_path, capsys, monkeypatch):
    def build(args, jobs, out):
        (out / "half.mlir").write_text("half a build")
        raise error

    monkeypatch.setattr(hg, "_build", build)
    got, out, err = call([*BUILD, "-o", str(tmp_path / "out")], capsys)
    assert_one_sentence(got, err, words, expected=code)
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_that_cannot_be_made_is_one_sentence(tmp_path, capsys, monkeypatch, fake_build):
    """The permission refusal of a folder the tool cannot create (root ignores modes, so the refusal is raised)."""
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    code, _, err = call([*BUILD, "-o", str(tmp_path / "a" / "out")], capsys)
    assert_one_sentence(code, err, "Permission denied")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_run_and_inspect_import_without_the_compiler(tmp_path):
    """The GPU machines have iree-base-runtime only: the tool (with pipelines.output) must import there and say
    what is wrong with a folder in one sentence."""
    kernel_folder(tmp_path / "k", {})
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.startswith('iree.compiler'): raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            f"sys.argv = ['hopper_gemm.py', 'inspect', {str(tmp_path / 'k')!r}]\n"
            "import runpy\n"
            f"runpy.run_path({str(TOOL)!r}, run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "is not the list of kernels" in done.stderr


def test_repeat_flops_alone_decide_the_repeats_when_given(tmp_path, capsys, fake_build):
    """--repeat-flops is the user's amount of work a call: the byte bound of pipelines' own rule does not cut it.
    16x8192x8192 (2.147e9 FLOPs): 2e12 a call is 932 repeats, where pipelines' rule (1e11 B: 741) gives fewer."""
    import math

    from pipelines.bench import repeat_count
    from pipelines.targets import get_target
    from transforms.problem import Gemm

    out = tmp_path / "out"
    code, _, err = call(["build", "--shape", "16x8192x8192", "--no-default", "--schedule", "cooperative:128x128x4x8",
                         "--repeat-flops", "2e12", "-o", str(out)], capsys)
    assert code == 0, err
    repeats = {e["repeat"] for e in json.loads((out / "manifest.json").read_text())}
    assert repeats == {math.ceil(2e12 / (2 * 16 * 8192 * 8192))} == {932}
    assert repeat_count(Gemm(16, 8192, 8192, "bf16", "nt"), get_target("sm_80")) == 741  # the rule's, for contrast
