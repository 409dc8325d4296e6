"""Property-based bad input: hypothesis generates flag values, shapes, tiles and JSON that `test_bad_input.py`
does not list; whatever it generates, a command either succeeds or says one sentence with exit code 2 and writes
nothing. (Needs the `test` extra: `pip install -e .[test]`, which `tools/test.sh` installs.)"""

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from pipelines import cli  # noqa: E402

from test_bad_input import REPORT, ROW  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                max_size=3), max_leaves=6)
DIMS = st.integers(-3, 2**40).map(str) | st.text(max_size=6)


def run(argv: list[str], folder: Path) -> tuple[int, str]:
    """`pipelines.cli.main(argv)` in `folder`, and its stderr; asserts the one-sentence contract on failure."""
    before = {str(p) for p in folder.rglob("*")}
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(argv)
    except SystemExit as exit:
        code = exit.code
    finally:
        os.chdir(cwd)
    text = err.getvalue()
    if code != 0:
        assert code == 2, (argv, text)
        assert text.count("\n") == 1 and "Traceback" not in text, (argv, text)
        assert text.startswith("pipelines: error: ") or (text.startswith("pipelines ") and ": error: " in text)
        assert {str(p) for p in folder.rglob("*")} == before, argv
    return code, text


@SETTINGS
@given(shape=st.lists(DIMS, min_size=1, max_size=5).map("x".join), dtype=st.sampled_from(
    ["bf16", "f16", "f8e4m3fnuz", "f8e4m3fn", "f32", "", "BF16"]), pipeline=st.sampled_from(
    ["tuned", "auto", "default", "codegen", "searched"]), target=st.sampled_from(["gfx942", "gfx950", "gfx1151"]))
def test_any_shape_to_spec(shape, dtype, pipeline, target):
    with tempfile.TemporaryDirectory() as folder:
        run(["spec", "--target", target, f"--shape={shape}", "--dtype", dtype, "--pipeline", pipeline],
            Path(folder))


@SETTINGS
@given(schedule=st.sampled_from(["pingpong8", "interleave4", "producer_consumer", "double_buffered"]),
       tile=st.lists(st.integers(-16, 600), min_size=3, max_size=3).map(lambda t: "x".join(map(str, t))),
       k_steps=st.integers(-5, 200), target=st.sampled_from(["gfx942", "gfx950", "gfx1151", "sm_80"]))
def test_any_tile_to_explain(schedule, tile, k_steps, target):
    with tempfile.TemporaryDirectory() as folder:
        run(["explain", "--schedule", schedule, f"--tile={tile}", f"--k-steps={k_steps}", "--target", target],
            Path(folder))


@SETTINGS
@given(flag=st.sampled_from(["--prefetch", "--workgroup-size", "--waves-per-eu", "--raster-rows", "--alpha",
                             "--beta"]), value=st.integers(-2**65, 2**65).map(str) | st.floats().map(str) | st.text(
    max_size=8))
def test_any_flag_value_to_spec(flag, value):
    with tempfile.TemporaryDirectory() as folder:
        run(["spec", "--target", "gfx942", "--shape", "512x512x512", "--pipeline", "tuned", f"{flag}={value}"],
            Path(folder))


@SETTINGS
@given(key=st.sampled_from(sorted(ROW) + ["vendor"]), value=JSON, problem_key=st.sampled_from(
    sorted(ROW["problem"])), problem_value=JSON, where=st.booleans())
def test_any_results_row_to_report(key, value, problem_key, problem_value, where):
    row = dict(ROW, problem=dict(ROW["problem"]))
    if where:
        row[key] = value
    else:
        row["problem"][problem_key] = problem_value
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "res").mkdir()
        (Path(folder) / "res" / "results.jsonl").write_text(json.dumps(row) + "\n")
        run(["report", "res", "-o", "rendered"], Path(folder))


@SETTINGS
@given(key=st.sampled_from(sorted(REPORT)), value=JSON, command=st.sampled_from(["inspect", "emulate"]))
def test_any_report_json_to_inspect_and_emulate(key, value, command):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "k").mkdir()
        (Path(folder) / "k" / "report.json").write_text(json.dumps(dict(REPORT, **{key: value})))
        code, _ = run([command, "k"], Path(folder))
        assert code == 2  # the folder has no dump: never a success
