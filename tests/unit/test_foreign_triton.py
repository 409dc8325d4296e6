"""Foreign kernels: Triton GEMMs run on the emulator and the timing model like the project's own.

The kernels under tests/data/triton/ were compiled by tools/triton_kernels.py with Triton 3.9.0 (each folder's
triton.json holds the command and every option); CI has no triton, so they are committed. What is checked comes
from outside the loader: C against float64 of the same seeded inputs, the MFMA work against M·N·K, the argument
offsets against the listing's own `.amdgpu_metadata` read here line by line, planted faults (a swapped pair of
outputs, a wrong stride in triton.json, a deleted wait) that must fail, every malformed triton.json refused in one
sentence with exit code 2, and a prediction that is positive and grows with K for the same compiled kernel.
"""

import copy
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from pipelines import cli
from pipelines.emulator import emulate_gemm
from pipelines.emulator.foreign import FOREIGN_FILE, _ulp, load_foreign
from pipelines.timing.predict import predict

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "triton"
FOLDERS = sorted(p.name for p in DATA.iterdir() if (p / FOREIGN_FILE).is_file())
NN = "gfx950_bf16_nn"  # 256x256x256, 128x128x64 blocks, 4 warps, 2 stages: the fault and bad-input tests' kernel


def launch(name: str) -> dict:
    return json.loads((DATA / name / FOREIGN_FILE).read_text())


def copy_of(name: str, tmp_path: Path, change=None) -> Path:
    """The kernel folder copied, its triton.json passed through `change(launch)` (in place)."""
    folder = tmp_path / name
    shutil.copytree(DATA / name, folder)
    if change is not None:
        described = launch(name)
        change(described)
        (folder / FOREIGN_FILE).write_text(json.dumps(described))
    return folder


def test_the_committed_kernels_cover_both_targets_and_layouts():
    described = [launch(name) for name in FOLDERS]
    assert 2 <= len(FOLDERS) <= 4
    assert {d["target"] for d in described} == {"gfx942", "gfx950"}
    assert {d["problem"]["layout"] for d in described} == {"nn", "nt"}
    assert all(d["triton"]["version"] == "3.9.0" for d in described)


@pytest.mark.parametrize("name", FOLDERS)
def test_each_kernel_matches_float64_and_does_all_the_work_once(name):
    result = emulate_gemm(DATA / name)
    p = launch(name)["problem"]
    assert result.passed, result.summary()
    assert result.wrong == 0 and result.unwritten == 0 and not result.hazards
    assert result.workgroups == launch(name)["grid"][0]
    # every MFMA computes m·n·k products of its shape: together exactly the problem's M·N·K (no tile run twice)
    work = sum(count * int(m) * int(n) * int(k) for op, count in result.mix.items()
               for m, n, k in re.findall(r"v_mfma_f32_(\d+)x(\d+)x(\d+)", op))
    assert work == p["m"] * p["n"] * p["k"]


def metadata_args(text: str) -> list[tuple[int, int, str]]:
    """(offset, size, value_kind) of each `.args` entry, read line by line from the listing's metadata."""
    block = text.split(".args:", 1)[1].split(".group_segment_fixed_size", 1)[0]
    entries, current = [], {}
    for line in block.splitlines():
        line = line.strip().removeprefix("- ")
        key, _, value = line.partition(":")
        if key in (".offset", ".size", ".value_kind"):
            current[key] = value.strip()
        if len(current) == 3:
            entries.append((int(current[".offset"]), int(current[".size"]), current[".value_kind"]))
            current = {}
    return entries


@pytest.mark.parametrize("name", FOLDERS)
def test_argument_offsets_are_the_metadata_s_and_carry_the_problem(name):
    foreign = load_foreign(DATA / name)
    text = (DATA / name / "kernel.amdgcn").read_text()
    assert [(a.offset, a.size, a.value_kind) for a in foreign.arguments] == metadata_args(text)
    p = launch(name)["problem"]
    (sam, sak), (sbk, sbn), (scm, scn) = p["strides"]["a"], p["strides"]["b"], p["strides"]["c"]
    values = {"M": p["m"], "N": p["n"], "K": p["k"], "stride_am": sam, "stride_ak": sak, "stride_bk": sbk,
              "stride_bn": sbn, "stride_cm": scm, "stride_cn": scn}
    ints = {a.name: a.value for a in foreign.arguments if a.kind == "int"}
    assert ints and all(values[k] == v for k, v in ints.items())
    assert [a.buffer for a in foreign.arguments[:3]] == ["a", "b", "c"]  # the kernel's pointers come first
    # the strides Triton made constants (equal to 1) are the ones the kernel does not take
    assert {k for k, v in values.items() if v == 1}.isdisjoint(ints)


def test_the_tool_reads_the_same_arguments_from_the_listing():
    """tools/triton_kernels.py's metadata reading, run without triton on a committed listing, gives the arguments
    its triton.json holds."""
    spec = importlib.util.spec_from_file_location("triton_kernels", REPO / "tools" / "triton_kernels.py")
    tool = importlib.util.module_from_spec(spec)
    sys.modules["triton_kernels"] = tool
    spec.loader.exec_module(tool)
    for name in FOLDERS:
        described = launch(name)
        text = (DATA / name / "kernel.amdgcn").read_text()
        assert tool.arguments(text, described) == described["arguments"]
        p = described["problem"]
        assert tool.problem_strides(p["m"], p["n"], p["k"], p["layout"]) == p["strides"]


def relaunch(described: dict, m: int, n: int, k: int) -> None:
    """The same compiled kernel launched for another problem (its M, N, K and strides are run-time arguments;
    the folder's values keep the divisibility by 16 it was specialised for)."""
    p = described["problem"]
    layout = p["layout"]
    strides = {"a": [k, 1], "b": [n, 1] if layout == "nn" else [1, k], "c": [n, 1]}
    values = {"M": m, "N": n, "K": k, "stride_am": k, "stride_ak": 1, "stride_bk": strides["b"][0],
              "stride_bn": strides["b"][1], "stride_cm": n, "stride_cn": 1}
    p.update(m=m, n=n, k=k, strides=strides)
    block_m, block_n = described["constexprs"]["BLOCK_M"], described["constexprs"]["BLOCK_N"]
    described["grid"] = [-(-m // block_m) * -(-n // block_n), 1, 1]
    for arg in described["arguments"]:
        if arg["kind"] == "int":
            arg["value"] = values[arg["name"]]


def test_the_launch_comes_from_triton_json(tmp_path):
    """The NN kernel relaunched for 128x384x512 from its JSON alone still matches float64."""
    folder = copy_of(NN, tmp_path, lambda d: relaunch(d, 128, 384, 512))
    result = emulate_gemm(folder)
    assert result.passed and result.workgroups == 3 and result.output.shape == (128, 384), result.summary()


def test_the_output_rounding_allowance_is_one_ulp_of_c_s_type():
    """bf16 keeps 8 significant bits and f16 11 (IEEE 754 binary16; bfloat16 is f32 cut to 16 bits): one ulp at
    1.0 is 2^-7 and 2^-10, at 3.0 2^-6 and 2^-9; below the smallest normal the spacing stays that of it; f32
    outputs get none beyond the accumulation bound."""
    values = np.array([1.0, 3.0, -3.0, 2.0 ** -130])
    np.testing.assert_array_equal(_ulp(values, "bf16"), [2.0 ** -7, 2.0 ** -6, 2.0 ** -6, 2.0 ** -133])
    np.testing.assert_array_equal(_ulp(values[:3], "f16"), [2.0 ** -10, 2.0 ** -9, 2.0 ** -9])
    np.testing.assert_array_equal(_ulp(values, "f32"), [0.0] * 4)


# ---------------------------------------------------------------------------------------------------- faults

def test_a_swapped_pair_of_outputs_fails(tmp_path):
    text = (DATA / NN / "kernel.amdgcn").read_text()
    first = re.search(r"v_cvt_pk_bf16_f32 (v\d+), (v\d+), (v\d+)", text)
    edited = text.replace(first[0], f"v_cvt_pk_bf16_f32 {first[1]}, {first[3]}, {first[2]}", 1)
    result = emulate_gemm(copy_of(NN, tmp_path), kernel_text=edited)
    assert not result.passed and result.wrong > 0
    assert result.mismatches[0]["instruction"] is not None  # the store that wrote the first wrong output is named


def test_a_wrong_stride_in_triton_json_fails(tmp_path):
    def wrong_stride(described):
        arg = next(a for a in described["arguments"] if a.get("name") == "stride_bk")
        arg["value"] //= 2  # B's rows read at half their pitch
    result = emulate_gemm(copy_of(NN, tmp_path, wrong_stride))
    assert not result.passed and result.wrong > 0


def test_a_deleted_wait_fails(tmp_path):
    text = (DATA / NN / "kernel.amdgcn").read_text()
    loop = text.index(".LBB0_")  # the first wait after the K loop's label
    wait = re.compile(r"\n\s+s_waitcnt vmcnt\(\d+\)[^\n]*").search(text, loop)
    edited = text[:wait.start()] + "\n" + text[wait.end():]
    result = emulate_gemm(copy_of(NN, tmp_path), kernel_text=edited)
    assert not result.passed and result.wrong > 0
    # the gfx950 kernel loads straight into LDS: without the wait its waves read LDS the loads still write
    assert any(h.kind == "lds-race" for h in result.hazards)


# ---------------------------------------------------------------------------------------------------- bad input

def _set(path: str, value):
    def change(described):
        keys = path.split(".")
        table = described
        for key in keys[:-1]:
            table = table[int(key)] if isinstance(table, list) else table[key]
        last = keys[-1]
        if value is KeyError:
            del table[last]
        elif isinstance(table, list):
            table[int(last)] = value
        else:
            table[last] = value
    return change


BAD = [
    ("not JSON", None, "is not JSON"),
    ("a list", None, "not a JSON object"),
    ("an empty object", lambda d: d.clear(), "of format None"),
    ("another format", _set("format", "triton-kernel/0"), "'triton-kernel/1'"),
    ("no grid", _set("grid", KeyError), "'grid'"),
    ("an empty grid", _set("grid", [0, 1, 1]), "three positive whole numbers"),
    ("a wave32 target", _set("target", "gfx1151"), "foreign kernels run on gfx942 and gfx950"),
    ("e5m2 inputs", _set("problem.dtype", "f8E5M2"), "'dtype'"),
    ("e4m3 inputs on gfx942", lambda d: (d.update(target="gfx942"), d["problem"].update(dtype="f8E4M3FN")),
     "which only gfx950 reads"),
    ("no K", _set("problem.k", KeyError), "'k'"),
    ("overlapping strides", _set("problem.strides.a", [1, 1]), "overlap"),
    ("a shifted argument", _set("arguments.3.offset", 28), "the kernel's metadata has offset"),
    ("a dropped argument", lambda d: d["arguments"].pop(), "kernel arguments; the metadata"),
    ("an unknown implicit argument", _set("arguments.30.value_kind", "hidden_mystery"), "hidden_mystery"),
    ("a value too large", _set("arguments.3.value", 2 ** 40), "does not fit"),
    ("a buffer twice", _set("arguments.1.buffer", "a"), "exactly once"),
    ("a missing listing", _set("amdgcn", "nope.s"), "is missing"),
    ("another kernel name", _set("kernel", "other_kernel"), "not other_kernel"),
    ("more LDS than the chip", _set("shared_bytes", 10 ** 6), "of LDS per workgroup"),
    ("a larger workgroup", _set("workgroup_size", [1024, 1, 1]), "at most 256"),
]


@pytest.mark.parametrize("command", ["emulate", "predict"])
@pytest.mark.parametrize("what, change, message", BAD, ids=[b[0] for b in BAD])
def test_bad_triton_json_is_one_sentence(tmp_path, capsys, command, what, change, message):
    folder = copy_of(NN, tmp_path)
    if change is None:
        (folder / FOREIGN_FILE).write_text("[]" if what == "a list" else "{not json")
    else:
        described = copy.deepcopy(launch(NN))
        change(described)
        (folder / FOREIGN_FILE).write_text(json.dumps(described))
    assert cli.main([command, str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pipelines: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert message in err, err


# ---------------------------------------------------------------------------------------------------- the CLI

def test_emulate_and_predict_through_the_command_line(capsys):
    assert cli.main(["emulate", str(DATA / NN)]) == 0
    out = capsys.readouterr().out
    assert "matmul_kernel (Triton 3.9.0) on gfx950: gemm 256x256x256 bf16 nn -> bf16" in out
    assert out.rstrip().endswith("PASS")
    assert cli.main(["emulate", str(DATA / NN), "--shape", "256x256x512"]) == 2
    assert "not 256x256x512" in capsys.readouterr().err
    assert cli.main(["emulate", str(DATA / NN), "--workgroups", "2"]) == 0
    assert "2 sampled of 4 workgroups" in capsys.readouterr().out
    assert cli.main(["predict", str(DATA / NN)]) == 0
    assert "(PREDICTED, not measured)" in capsys.readouterr().out.splitlines()[0]


# ---------------------------------------------------------------------------------------------------- timing

@pytest.mark.parametrize("name", FOLDERS)
def test_predict_gives_a_positive_time(name):
    prediction = predict(DATA / name)
    assert prediction.microseconds > prediction.launch_us > 0
    assert prediction.workgroups == launch(name)["grid"][0] and prediction.resident >= 1
    assert prediction.instructions > 0


def test_more_k_is_predicted_to_take_longer(tmp_path):
    """The same compiled kernel for K = 256 and K = 1024 (four times the K loop): more K never takes less time."""
    short = predict(DATA / NN)
    long = predict(copy_of(NN, tmp_path, lambda d: relaunch(d, 256, 256, 1024)))
    assert long.microseconds > short.microseconds
    assert long.cu_cycles > 2 * short.cu_cycles
