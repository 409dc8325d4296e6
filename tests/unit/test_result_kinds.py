"""The guard that keeps predicted (`--device model`) and measured rows apart, given rows of every status.

What counts is whether a case ran (was measured or predicted), not whether it succeeded: a measured row that failed
on the GPU (run-failed, wrong-result, worker-died) still says the file holds measurements, and a predict-failed
row that the file holds predictions. Only a case that never ran (its compile failed, or its pipeline refused it
before compiling) belongs to neither kind. Each writer and the report refuse a file that would hold both."""

import pytest

from pipelines.report import write_reports
from pipelines.runner import RunError, append_line, check_results_kind

# Statuses the runner and the model's predict_plan write, by whether the case ran.
RAN = ("ok", "run-failed", "wrong-result", "worker-died", "predict-failed")
NEVER_RAN = ("compile-failed", "refused")


def row(case: str, status: str, predicted: bool) -> dict:
    fields = {"id": case, "pipeline": case, "status": status, "predicted": predicted,
              "problem": {"dtype": "bf16", "m": 64, "n": 64, "k": 64, "layout": "nn", "batch": None}}
    if status == "ok":
        fields.update(tflops=1.5, correct=None if predicted else True)
    return fields


def results(tmp_path, *rows: dict):
    path = tmp_path / "results.jsonl"
    for r in rows:
        append_line(path, r)
    return path


@pytest.mark.parametrize("predicted", [True, False])
@pytest.mark.parametrize("status", RAN)
def test_a_row_that_ran_fixes_the_files_kind(tmp_path, status, predicted):
    path = results(tmp_path, row("a", status, predicted))
    check_results_kind(path, predicted=predicted)  # the same kind goes on
    with pytest.raises(RunError, match="holds (predicted|measured) rows") as refused:
        check_results_kind(path, predicted=not predicted)
    assert ("holds predicted rows" if predicted else "holds measured rows") in str(refused.value)


@pytest.mark.parametrize("predicted", [True, False])
@pytest.mark.parametrize("status", NEVER_RAN)
def test_a_case_that_never_ran_is_of_neither_kind(tmp_path, status, predicted):
    path = results(tmp_path, row("a", status, predicted))
    check_results_kind(path, predicted=True)
    check_results_kind(path, predicted=False)


@pytest.mark.parametrize("other", RAN)
@pytest.mark.parametrize("predicted", [True, False])
def test_the_report_refuses_any_two_kinds_that_ran(tmp_path, other, predicted):
    path = results(tmp_path, row("a", "ok", predicted), row("b", other, not predicted))
    with pytest.raises(RunError, match="mixes predicted and measured rows"):
        write_reports(path, tmp_path / "report")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("other", NEVER_RAN)
@pytest.mark.parametrize("predicted", [True, False])
def test_the_report_takes_one_kind_beside_cases_that_never_ran(tmp_path, other, predicted):
    path = results(tmp_path, row("a", "ok", predicted), row("b", other, not predicted))
    written = write_reports(path, tmp_path / "report")
    table = (tmp_path / "report" / "results.md").read_text()
    assert all(p.is_file() for p in written)
    assert ("(PREDICTED)" in table) == predicted

