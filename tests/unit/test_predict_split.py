"""`pipelines predict` on split-K programs: two dispatches (partial products, then their sum), each predicted like a
single GEMM against its own HBM bytes and launch, the program's time their sum (PREDICTED)."""

import json

import pytest

from pipelines import cli
from pipelines.emulator.machine import EmulatorError
from pipelines.emulator.host import emulate_gemm
from pipelines.timing.predict import predict


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    for shape in ("16x4096x4096", "1x4096x4096"):
        assert cli.main(["compile", "--target", "gfx950", "--shape", shape, "--pipeline", "split-k", "-o",
                         str(root / shape)]) == 0
    return root


@pytest.mark.parametrize("shape, kernel", [("16x4096x4096", "tile"), ("1x4096x4096", "streaming")])
def test_a_split_program_is_the_sum_of_its_dispatches(compiled, shape, kernel):
    report = json.loads((compiled / shape / "report.json").read_text())
    assert report["split_k"]["partial_kernel"] == kernel
    p = predict(compiled / shape)
    assert len(p.dispatches) == 2 and p.workgroups == sum(d["workgroups"] for d in p.dispatches)
    assert p.microseconds == pytest.approx(sum(d["microseconds"] for d in p.dispatches))
    for d in p.dispatches:
        assert d["microseconds"] >= d["hbm_us"] + d["launch_us"] and d["launch_us"] > 0
        assert d["microseconds"] == pytest.approx(max(d["compute_us"], d["hbm_us"]) + d["launch_us"])
    assert p.launch_us == pytest.approx(2 * p.dispatches[0]["launch_us"])
    m, n, k = map(int, shape.split("x"))
    splits = report["split_k"]["splits"]
    assert p.dispatches[0]["hbm_bytes"] == (m * k + k * n) * 2 + splits * m * n * 4  # bf16 A and B, f32 partials
    assert p.dispatches[1]["hbm_bytes"] == splits * m * n * 4 + m * n * 4
    assert "PREDICTED" in p.summary() and p.as_dict()["predicted"] is True


def test_the_cli_prints_each_dispatch(compiled, capsys):
    assert cli.main(["predict", str(compiled / "16x4096x4096"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["predicted"] is True and len(row["dispatches"]) == 2
    assert "slowest" in row["bound"]


def test_recording_one_dispatch_alone(compiled):
    """Recording dispatch 1 (the sum) runs it alone on zeros; a dispatch out of range is one sentence."""
    run = emulate_gemm(compiled / "16x4096x4096", record=1, only=1)
    assert run.traces and len(run.traces) == 1 and run.kernel.startswith("gemm_dispatch_1")
    with pytest.raises(EmulatorError, match="dispatches 0 to 1"):
        emulate_gemm(compiled / "16x4096x4096", record=1, only=2)
    with pytest.raises(EmulatorError, match="one plain GEMM dispatch"):
        emulate_gemm(compiled / "16x4096x4096", record=1)


def test_a_bad_split_record_is_one_sentence(compiled, tmp_path):
    import shutil

    from pipelines.timing import TimingError

    folder = tmp_path / "bad"
    shutil.copytree(compiled / "16x4096x4096", folder)
    report = json.loads((folder / "report.json").read_text())
    report["split_k"]["splits"] = "many"
    (folder / "report.json").write_text(json.dumps(report))
    with pytest.raises(TimingError, match="whole number of splits"):
        predict(folder)
