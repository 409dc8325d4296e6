"""`pipelines predict` on compiled AMD kernels: a figure marked predicted, monotonic in the work, and one sentence
for what the model cannot cost."""

import json
import shutil

import pytest

from pipelines import cli
from pipelines.timing import TimingError
from pipelines.timing.predict import predict


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    for k in (512, 1024):
        assert cli.main(["compile", "--target", "gfx942", "--shape", f"256x256x{k}", "--layout", "nt", "--pipeline",
                         "tuned", "-o", str(root / str(k))]) == 0
    return root


def test_prediction_is_marked_and_consistent(compiled, capsys):
    assert cli.main(["predict", str(compiled / "1024"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["predicted"] is True and row["target"] == "gfx942"
    assert row["microseconds"] == pytest.approx(max(row["compute_us"], row["hbm_us"], row["fabric_us"])
                                                + row["launch_us"])
    assert 0 < row["mma_busy"] <= 1 and sum(row["stalls"].values()) == pytest.approx(1)
    assert row["workgroups"] == 1 and row["rounds"] == 1
    assert cli.main(["predict", str(compiled / "1024")]) == 0
    assert "PREDICTED, not measured" in capsys.readouterr().out


@pytest.mark.parametrize("fabric", [1e6, None])
def test_the_l2s_misses_bound_a_kernel_whose_fabric_is_slow(compiled, monkeypatch, fabric):
    """One 256x256 workgroup (gfx942 `tuned`) reads A's and B's panels once: (256 + 256) x 1024 x 2 bytes miss the
    L2; at 1 MB/s through the fabric that is the whole time. Without a fabric figure it is no limit."""
    import dataclasses

    from pipelines.targets import TARGETS
    from pipelines.timing import predict as module

    slow = dataclasses.replace(TARGETS["gfx942"], timing=dataclasses.replace(
        TARGETS["gfx942"].timing, fabric_bytes_per_s=fabric))
    monkeypatch.setitem(module.TARGETS, "gfx942", slow)
    p = predict(compiled / "1024")
    if fabric is None:
        assert p.fabric_us == 0.0 and p.bound != "L2-to-MALL bandwidth"
        return
    assert p.fabric_us == pytest.approx((256 + 256) * 1024 * 2 / fabric * 1e6)
    assert p.bound == "L2-to-MALL bandwidth" and p.microseconds == pytest.approx(p.fabric_us + p.launch_us)


def test_twice_the_k_loop_takes_longer(compiled):
    short, long = predict(compiled / "512"), predict(compiled / "1024")
    assert 1.5 < long.cu_cycles / short.cu_cycles < 2.5


def test_an_instruction_without_a_cost_is_named(compiled, tmp_path):
    folder = tmp_path / "k"
    shutil.copytree(compiled / "512", folder)
    isa = next((folder / "dump").glob("*.rocmasm"))
    text = isa.read_text()
    isa.write_text(text.replace("\ts_endpgm", "\timage_sample v[0:3], v[4:5], s[0:7], s[8:11]\n\ts_endpgm", 1))
    with pytest.raises(TimingError, match="no cost for 'image_sample'"):
        predict(folder)


def test_the_steady_state_window_agrees_with_the_whole_loop(compiled, monkeypatch):
    """K 1024 in steps of 32: the window replays 16 of 32 iterations and extrapolates the rest at the window's
    matrix throughput; replaying all of them gives the same clocks within 5 % (measured: 175662 against 176917 on
    256x256x1024, 164175 against 165280 on gfx950's default 1280x3840x3840)."""
    from pipelines.timing import predict as module

    windowed = predict(compiled / "1024")
    monkeypatch.setattr(module, "WINDOW", 10**9)
    whole = predict(compiled / "1024")
    assert windowed.instructions < 0.8 * whole.instructions
    assert windowed.cu_cycles == pytest.approx(whole.cu_cycles, rel=0.05)


@pytest.mark.slow  # compiles several programs: the test command runs it, the fast tier does not
def test_calibrate_predicts_published_rows_and_pairs_dma(tmp_path, capsys):
    csv = tmp_path / "rows.csv"
    csv.write_text("# a published pair\nsource,gpu,target,op,M,N,K,layout,dtype,variant,time_us\n"
                   "pr,MI355X,gfx950,mm,1280,2304,576,NT,bf16,dma_off,11.6\n"
                   "pr,MI355X,gfx950,mm,1280,2304,576,NT,bf16,dma_on,8.4\n"
                   "pr,MI355X,gfx950,mm,1280,2304,576,NT,bf16,vendor_library,9.0\n"
                   "pr,MI355X,gfx950,mm,1024,1024,256,NT,bf16,iree_builtin_pingpong_ukernel,9.0\n")
    assert cli.main(["calibrate", "--csv", str(csv), "--json", "--keep", str(tmp_path / "keep")]) == 0
    rows = json.loads(capsys.readouterr().out)
    off, on, vendor, ukernel = rows
    assert off["predicted"] and on["predicted"] and not vendor["predicted"]
    assert "no iree-compile recipe" in vendor["note"]
    assert ukernel["predicted"]  # IREE's built-in ping-pong, compiled by the `ukernel` pipeline (verified used)
    assert off["error"] == pytest.approx((off["predicted_us"] - 11.6) / 11.6)
    dumps = {v: next((tmp_path / "keep").glob(f"*_{v}")) / "report.json" for v in ("dma_off", "dma_on")}
    loads = {v: json.loads(p.read_text())["dispatches"][0]["dma_loads"] for v, p in dumps.items()}
    assert loads["dma_off"] == 0 and loads["dma_on"] > 0  # the flag takes effect both ways
    assert cli.main(["calibrate", "--csv", str(csv), "--keep", str(tmp_path / "keep")]) == 0
    text = capsys.readouterr().out
    assert "PREDICTED, not measured" in text and "DMA on/off direction right in" in text


def test_a_prediction_above_the_peak_is_refused(compiled, monkeypatch):
    """No figure faster than the chip can go: a model fault (here a clock, HBM and launch far off the chip's) is
    one sentence."""
    import dataclasses

    from pipelines.targets import TARGETS
    from pipelines.timing import predict as module

    fast = dataclasses.replace(TARGETS["gfx942"], timing=dataclasses.replace(
        TARGETS["gfx942"].timing, clock_mhz=2.1e6, hbm_bytes_per_s=1e16, launch_us=0.0))
    monkeypatch.setitem(module.TARGETS, "gfx942", fast)
    with pytest.raises(TimingError, match="above gfx942's peak"):
        predict(compiled / "1024")


def test_dma_on_is_forced_where_the_flag_changes_nothing(tmp_path):
    """A TN row: IREE 3.13 emits no DMA load even with --iree-llvmgpu-use-direct-load=true, so `calibrate` gives
    IREE's own configuration back with global-load DMA through a tuning spec. The forced kernel has DMA loads and
    computes the right GEMM on the emulator."""
    from pipelines.emulator import emulate_gemm
    from pipelines.timing.calibrate import FORCED, _record, dma_loads

    fields = {"source": "test", "gpu": "MI355X", "target": "gfx950", "op": "mm", "M": "256", "N": "256", "K": "256",
              "layout": "TN", "dtype": "bf16", "variant": "dma_on", "time_us": "10"}
    row, rec = _record(fields, str(tmp_path))
    flagged = tmp_path / "gfx950_256x256x256_tn_bf16_dma_on"
    forced = tmp_path / "gfx950_256x256x256_tn_bf16_dma_on_forced"
    assert dma_loads(flagged) == 0 and dma_loads(forced) > 0
    assert row.note == FORCED and rec is not None
    result = emulate_gemm(forced)
    assert result.unwritten == 0 and result.max_rel_error <= result.tolerance
