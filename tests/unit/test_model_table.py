"""`pipelines report --table model`: launches paired with tune-model's dispatches by their PTX names."""

import pytest

from pipelines.tables import TableError, kernel_dispatch
from pipelines.tables import model_table as table

DISPATCHES = ["module_block$async_dispatch_1", "module_block$async_dispatch_10"]


def test_a_kernel_belongs_to_its_own_dispatch_not_a_longer_numbered_one():
    assert kernel_dispatch("block_async_dispatch_10_matmul_64x64x64_f16xf16xf32", DISPATCHES) == DISPATCHES[1]
    assert kernel_dispatch("block_async_dispatch_1_softmax_64xf32", DISPATCHES) == DISPATCHES[0]
    assert kernel_dispatch("other_kernel", DISPATCHES) is None


def _rows(tuned_us, default_us):
    kernels = ["block_async_dispatch_1_matmul", "block_async_dispatch_10_softmax"]
    module = lambda us, ms: {"median_ms": ms, "max_rel_error": 1e-3,  # noqa: E731
                             "dispatches": [{"kernel": k, "us": u} for k, u in zip(kernels, us)]}
    return {"function": "block", "environment": {"device_name": "GPU"},
            "modules": {"tuned": module(tuned_us, 1.0), "default": module(default_us, 2.0)}}


SUMMARY = {"pipeline": "codegen", "dispatches": [
    {"dispatch": DISPATCHES[0], "contraction": "64x64x64 nn f16", "schedule": "codegen library: tile"},
    {"dispatch": DISPATCHES[1], "contraction": None, "schedule": None}]}


def test_the_table_pairs_launches_and_states_the_ratios():
    text = table(_rows([10.0, 5.0], [30.0, 5.0]), SUMMARY, "tuned", "default")
    assert "| end to end, median ms | 2.000 | 1.000 | **2.00×** |" in text
    assert "| 0 | 64x64x64 nn f16 | codegen library: tile | 30.0 | 10.0 | 3.00× |" in text
    assert "| all | | | 35.0 | 15.0 | 2.33× |" in text


def test_a_split_out_dispatch_is_a_row_of_its_own():
    rows = _rows([10.0, 5.0], [30.0, 5.0])
    launches = rows["modules"]["tuned"]["dispatches"]
    launches.insert(1, {"kernel": "block_async_dispatch_2_elementwise_4096_f32xf16", "us": 2.0})
    summary = dict(SUMMARY, dispatches=SUMMARY["dispatches"] + [
        {"dispatch": "module_block$async_dispatch_2", "contraction": None, "split_consumer": True,
         "schedule": "split out"}],
        default_dispatches=SUMMARY["dispatches"])
    text = table(rows, summary, "tuned", "default")
    assert "| 0 | 64x64x64 nn f16 | codegen library: tile | 30.0 | 10.0 | 3.00× |" in text
    assert "| 1 | (split out: 2_elementwise_4096_f32xf16) | split out | – | 2.0 | |" in text
    assert "| all | | | 35.0 | 17.0 | 2.06× |" in text


def test_unpaired_launches_stop_the_table():
    rows = _rows([10.0], [30.0, 5.0])
    rows["modules"]["tuned"]["dispatches"] = rows["modules"]["tuned"]["dispatches"][:1]
    with pytest.raises(TableError):
        table(rows, SUMMARY, "tuned", "default")
