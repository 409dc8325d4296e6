"""`--device model`: bench and tune on the AMD timing model write predicted rows, rank them, and never mix them with
measured rows."""

import json

import pytest

from pipelines import cli
from pipelines.runner import RunError, append_line, check_results_kind, run_plan
from pipelines.timing.device import predict_plan

SHAPE = ["--shape", "256x256x512", "--dtype", "bf16", "--layout", "nt"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model") / "bench"
    assert cli.main(["bench", "--target", "gfx942", *SHAPE, "--pipelines", "default,tuned", "--device", "model",
                     "-o", str(folder)]) == 0
    return folder


def rows(folder):
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_bench_rows_are_predictions(bench):
    got = rows(bench)
    assert sorted(r["pipeline"] for r in got) == ["default", "tuned"]
    for row in got:
        assert row["predicted"] is True and row["correct"] is None and row["device"] == "model"
        assert row["status"] == "ok" and "PREDICTED" in row["device_name"]
        assert row["median_ms"] > 0 and row["tflops"] == pytest.approx(row["flops"] / row["median_ms"] / 1e9)
        assert row["bound"] and 0 < row["prediction"]["mma_busy"] <= 1
    # The plan keeps exactly what a prediction reads of each case's dump.
    dumps = {p.name.split(".")[-1] for p in bench.glob("cases/*/dump/*")}
    assert dumps == {"rocmasm", "mlir"}


def test_the_report_says_predicted_and_checks_nothing(bench):
    table = (bench / "results.md").read_text()
    assert "(PREDICTED)" in table and "not measured" in table
    assert "not checked (predicted)" in table and "| NO |" not in table


def test_a_second_run_predicts_nothing_again(bench):
    before = rows(bench)
    predict_plan(bench, workers=1)
    assert rows(bench) == before


def test_predicted_and_measured_rows_never_share_a_file(bench, tmp_path):
    with pytest.raises(RunError, match="holds predicted rows"):
        check_results_kind(bench / "results.jsonl", predicted=False)
    with pytest.raises(RunError, match="holds predicted rows"):
        run_plan(bench, ["local-task"])
    measured = tmp_path / "results.jsonl"
    append_line(measured, {"id": "x", "pipeline": "default", "status": "ok", "tflops": 1.0, "correct": True})
    with pytest.raises(RunError, match="holds measured rows"):
        predict_plan(bench, workers=1, results=measured)


def test_report_refuses_a_file_that_mixes_kinds(bench, tmp_path, capsys):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    lines = (bench / "results.jsonl").read_text().splitlines()
    measured = dict(json.loads(lines[0]), id="measured", predicted=False, correct=True)
    (mixed / "results.jsonl").write_text("\n".join(lines + [json.dumps(measured)]) + "\n")
    assert cli.main(["report", str(mixed)]) == 2
    assert "mixes predicted and measured rows" in capsys.readouterr().err


def test_a_gpu_plan_cannot_be_predicted(tmp_path):
    plan = tmp_path / "gpu"
    assert cli.main(["bench", "--target", "gfx942", *SHAPE, "--pipelines", "default", "--compile-only",
                     "-o", str(plan)]) == 0
    predict_plan(plan, workers=1)
    (row,) = rows(plan)
    assert row["status"] == "predict-failed" and "without its ISA dump" in row["error"]


@pytest.mark.parametrize("argv, message", [
    (["--target", "sm_80", "--device", "model"], "sm_80 has none"),
    (["--target", "gfx942", "--device", "model", "--device", "hip"], "cannot be combined"),
])
def test_model_device_refusals(argv, message, tmp_path, capsys):
    assert cli.main(["bench", *SHAPE, *argv, "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_tune_ranks_candidates_on_the_model(tmp_path, capsys):
    cache = tmp_path / "cache.json"
    folder = tmp_path / "tune"
    argv = ["tune", "--target", "gfx942", *SHAPE, "--device", "model", "--limit", "3", "-o", str(folder),
            "--cache", str(cache)]
    assert cli.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["predicted"] is True and "not checked" in summary["numerics"]
    got = [r for r in rows(folder) if r["pipeline"] == "candidate" and r["status"] == "ok"]
    assert summary["tflops"] == max(r["tflops"] for r in got)
    ranking = (folder / "best" / "ranking.md").read_text()
    assert "PREDICTED" in ranking and "not checked" in ranking
    # The cache keeps the predicted winner apart: a measured lookup (the `searched` pipeline) does not see it.
    entries = json.loads(cache.read_text())
    assert len(entries) == 1 and json.loads(next(iter(entries)))[4] == "model"  # the device: the timing model
    assert cli.main(argv) == 0  # served from the cache
    assert json.loads(capsys.readouterr().out) == summary


def _case(root, name, isa="s_endpgm", problem=None, dump=True):
    folder = root / name
    (folder / "dump").mkdir(parents=True)
    if dump:
        (folder / "dump" / "k.rocmasm").write_text(isa)
        (folder / "dump" / "configured_k.mlir").write_text("workgroup = [128, 128, 0]")
    problem = problem or {"m": 256, "n": 256, "k": 512, "dtype": "bf16", "layout": "nt"}
    (folder / "report.json").write_text(json.dumps({"target": "gfx942", "problems": [problem]}))
    return folder


def test_one_kernel_to_the_model_is_one_isa_configured_ir_and_problem(tmp_path):
    """Cases that share a prediction (`kernel_key`) must share the ISA, the configured IR and the problem: the
    same kernel on another problem runs another grid and moves other bytes."""
    from pipelines.timing.device import kernel_key

    base = kernel_key(_case(tmp_path, "a"))
    assert base is not None and kernel_key(_case(tmp_path, "same")) == base
    other = {"m": 512, "n": 256, "k": 512, "dtype": "bf16", "layout": "nt"}
    assert kernel_key(_case(tmp_path, "problem", problem=other)) != base
    assert kernel_key(_case(tmp_path, "isa", isa="s_nop 0\ns_endpgm")) != base
    assert kernel_key(_case(tmp_path, "nodump", dump=False)) is None
