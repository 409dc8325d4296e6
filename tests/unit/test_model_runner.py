"""pipelines.model_runner, the whole-model measurement (issue 17), on the CPU: a compiled transformer block's result
against tools/transformer_block.py's float64 reference, its time, and the launch bookkeeping of the per-dispatch
profile."""

import json
import subprocess
import sys

import pytest

from pipelines import model_runner
from pipelines.compiler import iree_compile_path, run_patiently
from pipelines.runner import RunError
from tools import transformer_block

pytest.importorskip("onnx")  # the test extra installs it

ROWS, WIDTH, MLP = 64, 128, 256


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("block")
    model = transformer_block.build(folder / "block.onnx", ROWS, WIDTH, MLP, weights="inputs")
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model), "-o",
                    str(folder / "block.mlir")], check=True)
    run_patiently([iree_compile_path(), str(folder / "block.mlir"), "--iree-hal-target-device=local",
                   "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic",
                   "-o", str(folder / "block.vmfb")], check=True)
    transformer_block.write_data(folder / "data", ROWS, WIDTH, MLP)
    return folder


def test_a_compiled_block_is_checked_against_float64_and_timed(compiled):
    out = compiled / "rows.json"
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "2", "-o", str(out), f"a={compiled / 'block.vmfb'}"]) == 0
    row = json.loads(out.read_text())["modules"]["a"]
    # f16 intermediates: the error is f16's (unit roundoff 4.9e-4), far from the float64 reference's own
    assert 1e-5 < row["max_rel_error"] < 1e-2 and row["finite"]
    assert len(row["times_ms"]) == 2 and row["median_ms"] > 0
    assert not any("b2b" in key for key in row)  # back-to-back times only when asked


def test_a_wrong_reference_shows_as_a_large_error(compiled, tmp_path):
    """The check can fail: the same module against the reference of other inputs."""
    import numpy as np
    import shutil

    data = tmp_path / "data"
    shutil.copytree(compiled / "data", data)
    np.save(data / "reference.npy", np.load(data / "reference.npy")[::-1])
    arrays, _, reference = model_runner.load_inputs(data)
    value = model_runner.result(compiled / "block.vmfb", "block", "local-task", arrays)
    assert model_runner.relative_error(value, reference) > 0.1


def test_missing_inputs_are_one_sentence(tmp_path, capsys):
    vmfb = tmp_path / "m.vmfb"
    vmfb.write_bytes(b"")
    assert model_runner.main(["--function", "f", "--inputs", str(tmp_path), "-o", str(tmp_path / "r.json"),
                              f"a={vmfb}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("model_runner: error:") and err.count("\n") == 1
    assert not (tmp_path / "r.json").exists()


def test_the_profiled_call_is_the_last_of_equal_blocks():
    names = ["d0", "d0", "d3", "d0", "d8", "d8"]  # a call may end with two launches of one executable
    launches = [{"kernel": n, "us": float(i)} for i, n in enumerate(names * 4)]
    assert [x["kernel"] for x in model_runner.last_call(launches)] == names
    assert model_runner.last_call(launches)[0]["us"] == 18.0
    for wrong in (launches[:-1], launches[:6] * 3 + [dict(x, kernel="other") for x in launches[:6]]):
        with pytest.raises(RunError):
            model_runner.last_call(wrong)


def test_a_file_the_runner_did_not_write_is_kept(compiled, tmp_path, capsys):
    mine = tmp_path / "rows.json"
    mine.write_text("mine\n")
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "1", "-o", str(mine), f"a={compiled / 'block.vmfb'}"]) == 2
    assert mine.read_text() == "mine\n" and "pass --force" in capsys.readouterr().err


@pytest.mark.parametrize("calls", [2, 4])
def test_launches_that_are_not_whole_calls_are_refused_even_when_the_blocks_agree(calls):
    """`calls` calls of [a, b] and one launch more: the equal blocks of len // calls launches would hide the extra
    one and return a slice shifted by it, so the count itself must be a multiple of the calls."""
    launches = [{"kernel": k, "us": float(i)} for i, k in enumerate(["a", "b"] * calls + ["a"])]
    with pytest.raises(RunError, match="not"):
        model_runner.last_call(launches, calls)
    assert [x["kernel"] for x in model_runner.last_call(launches[:-1], calls)] == ["a", "b"]


def _flags_seen(monkeypatch, timer: str) -> list:
    """model_runner's `timer` (time_ms or back_to_back_ms, both taking the runtime flags last) run as it is, the
    flags of each call recorded in order; the per-launch profile left out."""
    seen, real = [], getattr(model_runner, timer)

    def spy(vmfb, function, device, inputs, runtime=()):
        seen.append(tuple(runtime))
        return real(vmfb, function, device, inputs, runtime)
    monkeypatch.setattr(model_runner, timer, spy)
    monkeypatch.setattr(model_runner, "dispatch_times_us", lambda *a: None)
    return seen


@pytest.mark.slow  # iree-benchmark-module runs each round (11 s): the test command runs it, the fast tier does not
def test_cached_allocations_time_each_module_both_ways_in_the_same_turns(compiled, monkeypatch):
    """--cached-allocations: every round times a module with the runtime's defaults and then with cached synchronous
    allocations (the flags passed to iree-benchmark-module, which accepts them: this runs it on the CPU)."""
    seen = _flags_seen(monkeypatch, "time_ms")
    out = compiled / "cached.json"
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "2", "--cached-allocations", "-o", str(out),
                              f"a={compiled / 'block.vmfb'}"]) == 0
    row = json.loads(out.read_text())["modules"]["a"]
    assert seen == [(), ("--device_allocator=caching",)] * 2
    assert len(row["times_cached_ms"]) == 2 and row["median_cached_ms"] > 0 and row["cached_flags"] == [
        "--device_allocator=caching"]
    assert model_runner.cached_flags("cuda") == ("--cuda_async_allocations=false", "--device_allocator=caching")
    assert model_runner.cached_flags("cuda:0") == model_runner.cached_flags("cuda")


def test_calls_back_to_back_give_the_waited_result_and_a_time(compiled):
    """pipelines.back_to_back on the CPU: chained asynchronous calls of the block, the last one's result the same
    bits as a waited call's, a positive time per call."""
    from pipelines import back_to_back

    arrays, _, reference = model_runner.load_inputs(compiled / "data")
    report = back_to_back.back_to_back(compiled / "block.vmfb", "block", "local-task", arrays, calls=4)
    assert report["calls"] == 4 and report["ms_per_call"] > 0
    assert report["max_abs_diff_from_waited"] == 0.0


def test_back_to_back_refuses_in_one_sentence(compiled, capsys):
    from pipelines import back_to_back

    base = ["--module", str(compiled / "block.vmfb"), "--inputs", str(compiled / "data"), "--device", "local-task"]
    assert back_to_back.main([*base, "--function", "nope"]) == 2
    assert "exports no function 'nope'" in capsys.readouterr().err
    assert back_to_back.main([*base, "--function", "block", "--calls", "0"]) == 2
    assert "--calls 0" in capsys.readouterr().err
    assert back_to_back.main([*base, "--function", "block", "--flag=--no_such_runtime_flag=1"]) == 2
    err = capsys.readouterr().err
    assert "does not take the flags" in err and "Traceback" not in err and err.count("\n") == 1
    # --device_allocator reaches the device (the Python runtime alone would parse it and build the device without)
    assert back_to_back.main([*base, "--function", "block", "--calls", "1", "--flag=--device_allocator=nonsense"]) == 2
    err = capsys.readouterr().err
    assert "does not take --device_allocator=nonsense" in err and err.count("\n") == 1
    assert back_to_back.main([*base, "--function", "block", "--calls", "1", "--flag=--device_allocator=caching"]) == 0
    assert json.loads(capsys.readouterr().out)["max_abs_diff_from_waited"] == 0.0


@pytest.mark.slow  # real processes each round (12 s): the test command runs it, the fast tier does not
def test_back_to_back_is_timed_in_each_turn_with_each_flag_set(compiled, monkeypatch):
    """--back-to-back with --cached-allocations: each round times each module back to back with the runtime's
    defaults and with the cached flags (in a process of its own, here on the CPU), beside the waited times."""
    seen = _flags_seen(monkeypatch, "back_to_back_ms")
    out = compiled / "b2b.json"
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "2", "--cached-allocations", "--back-to-back", "-o", str(out),
                              f"a={compiled / 'block.vmfb'}"]) == 0
    row = json.loads(out.read_text())["modules"]["a"]
    assert seen == [(), ("--device_allocator=caching",)] * 2
    assert len(row["times_b2b_ms"]) == 2 and len(row["times_b2b_cached_ms"]) == 2
    assert row["median_b2b_ms"] > 0 and row["b2b_calls"] == model_runner.BACK_TO_BACK_CALLS
    assert row["b2b_max_abs_diff_from_waited"] == 0.0
    assert len(row["times_ms"]) == 2 and len(row["times_cached_ms"]) == 2  # the waited times as before


def test_the_calls_are_chained_and_the_clock_spans_exactly_the_timed_ones(compiled, monkeypatch):
    """Every call waits on the fence the call before it signals (values 0→1, 1→2, ...); the clock starts after the
    warm-up calls have finished and stops after the last timed call's fence, and the time is over the timed calls
    only."""
    from pipelines import back_to_back

    events, fences, ticks = [], [], iter([10.0, 12.0])
    real_fence = back_to_back.fence

    def spy_fence(rt, semaphore, value):
        fences.append(value)
        return real_fence(rt, semaphore, value)

    def spy_wait(handle):
        events.append(("wait", fences[-1]))
        handle.wait()

    def clock():
        events.append(("clock",))
        return next(ticks)
    monkeypatch.setattr(back_to_back, "fence", spy_fence)
    monkeypatch.setattr(back_to_back, "wait", spy_wait)
    monkeypatch.setattr(back_to_back, "clock", clock)
    arrays, _, _ = model_runner.load_inputs(compiled / "data")
    calls, warm = 5, back_to_back.WARMUP_CALLS
    report = back_to_back.back_to_back(compiled / "block.vmfb", "block", "local-task", arrays, calls=calls)
    total = warm + calls
    # each call: its wait fence, then its signal fence
    assert fences[:2 * warm] == [v for i in range(warm) for v in (i, i + 1)]
    assert fences[2 * warm] == warm  # the wait after the warm-up calls, before the clock
    assert fences[2 * warm + 1:2 * warm + 1 + 2 * calls] == [v for i in range(warm, total) for v in (i, i + 1)]
    assert events == [("wait", warm), ("clock",), ("wait", total), ("clock",)]
    assert report["ms_per_call"] == pytest.approx(2.0 * 1e3 / calls)


def test_the_largest_difference_counts_either_sign():
    from pipelines import back_to_back

    assert back_to_back.largest_difference([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert back_to_back.largest_difference([1.0, -3.0], [1.0, 2.0]) == 5.0  # below the waited result
    assert back_to_back.largest_difference([4.0, 2.0], [1.0, 2.0]) == 3.0


def _b2b_stub(monkeypatch, results):
    """model_runner.back_to_back_ms replaced by `results`, one per call, recording the runtime flags."""
    seen, it = [], iter(results)

    def stub(vmfb, function, device, data, runtime=()):
        seen.append(tuple(runtime))
        return next(it)
    monkeypatch.setattr(model_runner, "back_to_back_ms", stub)
    monkeypatch.setattr(model_runner, "dispatch_times_us", lambda *a: None)
    monkeypatch.setattr(model_runner, "time_ms", lambda *a, **k: 1.0)
    return seen


def test_back_to_back_alone_is_timed_with_the_runtimes_defaults_only(compiled, monkeypatch):
    seen = _b2b_stub(monkeypatch, [{"ms_per_call": 1.0, "max_abs_diff_from_waited": 0.0}] * 2)
    out = compiled / "b2b_plain.json"
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "2", "--back-to-back", "-o", str(out), f"a={compiled / 'block.vmfb'}"]) == 0
    row = json.loads(out.read_text())["modules"]["a"]
    assert seen == [(), ()]
    assert "times_b2b_cached_ms" not in row and "median_b2b_cached_ms" not in row and row["times_b2b_ms"] == [1, 1]


def test_back_to_back_rows_hold_the_median_and_the_largest_difference(compiled, monkeypatch):
    _b2b_stub(monkeypatch, [{"ms_per_call": t, "max_abs_diff_from_waited": d}
                            for t, d in ((1.0, 0.5), (2.0, 0.0), (10.0, 0.0))])
    out = compiled / "b2b_median.json"
    assert model_runner.main(["--function", "block", "--inputs", str(compiled / "data"), "--device", "local-task",
                              "--rounds", "3", "--back-to-back", "-o", str(out), f"a={compiled / 'block.vmfb'}"]) == 0
    row = json.loads(out.read_text())["modules"]["a"]
    assert row["times_b2b_ms"] == [1.0, 2.0, 10.0] and row["median_b2b_ms"] == 2.0
    assert row["b2b_max_abs_diff_from_waited"] == 0.5


def test_the_back_to_back_process_gets_the_module_device_calls_and_flags(compiled, monkeypatch):
    import subprocess as sp

    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        return sp.CompletedProcess(command, 0, stdout='{"ms_per_call": 1.5, "calls": 30, '
                                   '"max_abs_diff_from_waited": 0.0}\n', stderr="")
    monkeypatch.setattr(model_runner.subprocess, "run", fake_run)
    vmfb = compiled / "block.vmfb"
    got = model_runner.back_to_back_ms(vmfb, "block", "local-task", compiled / "data", ("--device_allocator=caching",))
    assert got["ms_per_call"] == 1.5
    command = commands[0]
    assert command[1:3] == ["-m", "pipelines.back_to_back"]
    pairs = dict(zip(command[3:-1:2], command[4::2]))
    assert pairs["--module"] == str(vmfb) and pairs["--function"] == "block" and pairs["--device"] == "local-task"
    assert pairs["--calls"] == str(model_runner.BACK_TO_BACK_CALLS) and pairs["--inputs"] == str(compiled / "data")
    assert command[-1] == "--flag=--device_allocator=caching"


def test_a_failed_back_to_back_process_is_its_last_error_line(compiled, monkeypatch):
    import subprocess as sp

    with pytest.raises(RunError, match="exports no function 'nope'"):  # the real process, refusing
        model_runner.back_to_back_ms(compiled / "block.vmfb", "nope", "local-task", compiled / "data")
    monkeypatch.setattr(model_runner.subprocess, "run", lambda command, **kw: sp.CompletedProcess(
        command, 2, stdout="", stderr="warning: something\nback_to_back: error: the last line.\n"))
    with pytest.raises(RunError, match=r"failed: back_to_back: error: the last line\.$"):
        model_runner.back_to_back_ms(compiled / "block.vmfb", "block", "local-task", compiled / "data")
