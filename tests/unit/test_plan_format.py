"""The plan format (`pipelines.plan`): what bench writes reads back equal, and each way a case can be wrong is one
sentence naming it."""

import json

import pytest

from pipelines.plan import Case, Plan, PlanFormatError

PROBLEM = {"m": 64, "n": 32, "k": 16, "dtype": "bf16", "layout": "nt", "batch": None,
           "epilogue": {"kind": "none", "alpha": 1.0, "beta": 1.0}}
CASE = dict(id="a1", label="bf16 64x32x16 nt hopper", problem=PROBLEM, pipeline="hopper", schedule="s",
            schedule_fields={"block_m": 128}, target="sm_90a", flops=2 * 64 * 32 * 16, repeat=3, function="gemm",
            input_shapes=[[64, 16], [32, 16]], input_dtypes=["bf16", "bf16"], vmfb="cases/a1/gemm.vmfb",
            status="ok", vendor=True)


def plan(*cases: Case) -> Plan:
    return Plan("sm_90a", "3.13.0", "abc", {"count": 132, "source": "target", "name": "sm_90a"}, cases)


def test_a_plan_reads_back_equal():
    written = plan(Case(**CASE), Case(**dict(CASE, id="a2", vendor=False, status="refused",
                                            vmfb=None, schedule_fields=None, error="no")))
    assert Plan.from_json(written.to_json()) == written


def test_optional_fields_are_left_out_where_unset():
    entry = Case(**CASE).to_json()
    assert "error" not in entry and "same_kernel_as" not in entry
    assert list(entry)[:6] == ["id", "label", "problem", "pipeline", "schedule", "schedule_fields"]


@pytest.mark.parametrize("change, named", [
    ({"repeat": True}, "repeat"),  # a bool is not a count
    ({"repeat": "3"}, "repeat"),
    ({"flops": 1.5}, "flops"),
    ({"vendor": 1}, "vendor"),
    ({"problem": dict(PROBLEM, m="64")}, "problem m"),
    ({"problem": dict(PROBLEM, epilogue={"alpha": 1.0})}, "problem epilogue kind"),
    ({"vmfb": 3}, "vmfb"),
])
def test_a_wrong_field_is_named(change, named):
    text = json.dumps({"target": "sm_90a", "cases": [dict(CASE, **change)]})
    with pytest.raises(PlanFormatError, match=f"wrong or missing {named}") as err:
        Plan.from_json(text, "p/plan.json")
    assert "p/plan.json" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, named", [
    ("[]", "list of 'cases'"), ('{"cases": []}', "no 'target'"), ('{"target": "x", "cases": [1]}', "not an object"),
    ('{"target": "x", "cases": [{"id": "a"}]}', "a case without label"), ('{"target": "x", "cases": [', "valid JSON"),
])
def test_a_plan_that_is_not_one(text, named):
    with pytest.raises(PlanFormatError, match=named):
        Plan.from_json(text)


def test_a_case_with_device_inputs_is_refused():
    """A plan of an earlier version, whose Hopper cases named tensor maps for the GPU machine to make, is not run
    as if the field were not there (its kernel would read a third input this version does not pass)."""
    text = json.dumps({"target": "sm_90a", "cases": [dict(CASE, device_inputs=[{"kind": "tensor-maps"}])]})
    with pytest.raises(PlanFormatError, match="inputs the GPU machine made \\(device_inputs\\)"):
        Plan.from_json(text)
