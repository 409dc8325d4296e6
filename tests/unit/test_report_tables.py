"""`pipelines report --table NAME FILE...` (the measured-row tables) and `pipelines inspect --jit` (the driver's
registers and occupancy), as a user calls them: the figures against arithmetic done here, the refusals as one
sentence with exit 2 and nothing written."""

import ctypes
import json

import pytest

from pipelines import cli, jit_resources

from test_bad_input import assert_one_sentence, run_main

# Two problems of a skinny bench: IREE's default (with cuBLAS beside it) and two of ours, one wrong.
PROBLEMS = [{"m": 16, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "nn"},
            {"m": 64, "n": 8192, "k": 8192, "dtype": "bf16", "layout": "nn"}]


def _results(tmp_path):
    rows = []
    for i, p in enumerate(PROBLEMS):
        rows.append({"id": f"d{i}", "pipeline": "default", "status": "ok", "problem": p, "median_ms": 0.1 * (i + 1),
                     "vendor": {"median_ms": 0.04 * (i + 1)}, "correct": True, "max_rel_error": 1e-5})
        rows.append({"id": f"s{i}", "pipeline": "split-k", "status": "ok", "problem": p, "median_ms": 0.05 * (i + 1),
                     "correct": True, "max_rel_error": 2e-5})
        rows.append({"id": f"w{i}", "pipeline": "auto", "status": "ok", "problem": p, "median_ms": 0.01,
                     "correct": False, "max_rel_error": 0.5})  # fastest, but wrong: never the best
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(json.dumps({"gbps_read_plus_write": g}) + "\n" for g in (3000.0, 2000.0, 2500.0)))
    return results, copy


def test_the_skinny_table_from_the_command_line(tmp_path, capsys):
    results, copy = _results(tmp_path)
    assert cli.main(["report", "--table", "skinny", str(results), str(copy)]) == 0
    text = capsys.readouterr().out
    assert "Copy bandwidth (median of the session's copy_bandwidth runs): 2500 GB/s." in text
    # 16x4096x4096 bf16: A 16*4096*2 + B 4096*4096*2 bytes read, C 16*4096*4 written
    moved = 16 * 4096 * 2 + 4096 * 4096 * 2 + 16 * 4096 * 4
    us = 50.0
    row = next(line for line in text.splitlines() if line.startswith("| 16×4096×4096"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{moved / 1e6:.1f} MB"
    assert cells[2:5] == ["100.0", "50.0 (split-k)", "2.00×"]
    assert cells[5:7] == ["40.0", "0.80×"]
    assert cells[7] == f"{moved / (us * 1e-6) / 2500e9:.0%}"
    roofline = max(moved / 2500e9, 2 * 16 * 4096 * 4096 / 989.4e12)  # bandwidth-bound here
    assert cells[8] == f"{roofline / (us * 1e-6):.0%}"


def test_a_peak_given_changes_only_the_roofline_of_a_compute_bound_row(tmp_path, capsys):
    results, copy = _results(tmp_path)
    assert cli.main(["report", "--table", "skinny", str(results), str(copy), "--peak-tflops", "1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 64×8192×8192"))
    roofline = 2 * 64 * 8192 * 8192 / 1e12  # at 1 TFLOP/s the FLOPs bound it
    assert row.split("|")[9].strip() == f"{roofline / 100e-6:.0%}"


def test_the_table_is_written_to_a_file_and_never_over_an_input(tmp_path, capsys):
    results, copy = _results(tmp_path)
    out = tmp_path / "table.md"
    assert cli.main(["report", "--table", "skinny", str(results), str(copy), "-o", str(out)]) == 0
    assert out.read_text().startswith("Copy bandwidth")
    before = copy.read_bytes()
    code = run_main(["report", "--table", "skinny", str(results), str(copy), "-o", str(copy)])
    assert code == 2 and copy.read_bytes() == before


@pytest.mark.parametrize("argv, message", [
    (["--table", "skinny", "RESULTS"], "the skinny table reads 2 files"),
    (["--table", "model", "RESULTS", "MISSING"], "is not a file"),
    (["--table", "skinny", "COPY", "RESULTS"], "are not bench results and copy-bandwidth lines"),
    (["--table", "model", "RESULTS", "COPY"], "is not a JSON file"),
    (["FOLDER", "--tuned", "t"], "--tuned shapes a --table"),
    (["FOLDER", "FOLDER"], "report renders one folder's results.jsonl, not 2 paths"),
    (["--table", "skinny", "RESULTS", "COPY", "--title", "x"], "--title names the rendered reports"),
    (["--table", "skinny", "RESULTS", "COPY", "--tuned", "t"],
     "--tuned would be ignored: the skinny table reads --peak-tflops"),
    (["--table", "model", "RESULTS", "COPY", "--peak-tflops", "5"],
     "--peak-tflops would be ignored: the model table reads --tuned and --default"),
])
def test_a_table_refuses_what_it_cannot_render_in_one_sentence(tmp_path, capsys, argv, message):
    results, copy = _results(tmp_path)
    names = {"RESULTS": str(results), "COPY": str(copy), "MISSING": str(tmp_path / "none.json"),
             "FOLDER": str(tmp_path)}
    before = sorted(p.name for p in tmp_path.iterdir())
    code = run_main(["report", *[names.get(a, a) for a in argv]])
    assert_one_sentence(code, capsys.readouterr().err, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


class FakeDriver:
    """libcuda as kernel_resources calls it: records what it was given, answers with fixed attributes."""

    def __init__(self, registers=168, local=0, blocks=1):
        self.values = {4: registers, 3: local}
        self.blocks, self.loaded, self.calls = blocks, None, []

    def cuModuleLoadDataEx(self, module, ptx, count, options, values):
        self.loaded = ptx
        return 0

    def cuModuleGetFunction(self, function, module, name):
        self.calls.append(("function", name))
        return 0

    def cuFuncGetAttribute(self, value, attribute, function):
        value._obj.value = self.values[attribute]
        return 0

    def cuFuncSetAttribute(self, function, attribute, value):
        self.calls.append(("shared", value))
        return 0

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, blocks, function, threads, shared):
        self.calls.append(("occupancy", threads, shared.value))
        blocks._obj.value = self.blocks
        return 0

    def cuModuleUnload(self, module):
        return 0


@pytest.fixture(scope="module")
def sm80_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jit")
    assert cli.main(["compile", "--target", "sm_80", "--shape", "256x256x256", "--dtype", "f16", "--pipeline",
                     "codegen", "-o", str(folder / "out")]) == 0
    return folder / "out"


def test_jit_resources_load_the_largest_kernel_with_its_shared_memory_and_threads(sm80_folder, monkeypatch, capsys):
    report = json.loads((sm80_folder / "report.json").read_text())
    kernel = max(report["dispatches"], key=lambda d: d["mma_count"])
    driver = FakeDriver(registers=200, blocks=2)
    monkeypatch.setattr(jit_resources, "open_driver", lambda: driver)
    assert cli.main(["inspect", "--jit", str(sm80_folder)]) == 0
    line = json.loads(capsys.readouterr().out)
    ptx = (sm80_folder / report["files"]["dump"] / kernel["isa_file"]).read_text()
    assert driver.loaded == ptx.encode() + b"\0"
    entry = next(ln for ln in ptx.splitlines() if ln.startswith(".visible .entry "))
    assert ("function", entry.split()[2].split("(")[0].encode()) in driver.calls
    threads, shared = kernel["workgroup_size"], report["lds_bytes"]
    assert ("occupancy", threads, shared) in driver.calls and ("shared", shared) in driver.calls
    assert line["registers"] == 200 and line["workgroups_per_sm"] == 2
    assert line["warps_per_sm"] == 2 * threads // 32


def test_jit_without_the_driver_or_without_ptx_is_one_sentence(sm80_folder, compiled, monkeypatch, capsys):
    def no_driver(name):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(ctypes, "CDLL", no_driver)
    assert_one_sentence(run_main(["inspect", "--jit", str(sm80_folder)]), capsys.readouterr().err,
                        "which this machine does not have")
    amd = compiled("--target", "gfx942", "--shape", "256x256x256")
    assert_one_sentence(run_main(["inspect", "--jit", str(amd)]), capsys.readouterr().err, "holds no PTX kernel")
    assert_one_sentence(run_main(["inspect", "--jit", "--json", str(sm80_folder)]), capsys.readouterr().err,
                        "give --jit or --json, not both")


def test_a_c_stored_in_bf16_moves_half_the_result_bytes(tmp_path, capsys):
    results, copy = _results(tmp_path)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        row["problem"] = dict(row["problem"], epilogue={"kind": "truncf", "alpha": 1.0, "beta": 1.0})
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["report", "--table", "skinny", str(results), str(copy)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 16×4096×4096"))
    assert row.split("|")[2].strip() == f"{(16 * 4096 * 2 + 4096 * 4096 * 2 + 16 * 4096 * 2) / 1e6:.1f} MB"


def test_a_problem_without_cublas_shows_a_dash_and_one_whose_default_failed_is_left_out(tmp_path, capsys):
    results, copy = _results(tmp_path)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0].pop("vendor")  # 16x4096x4096: no cuBLAS time
    rows[3].update(status="run-failed", median_ms=None)  # 64x8192x8192: IREE's default did not run
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["report", "--table", "skinny", str(results), str(copy)]) == 0
    text = capsys.readouterr().out
    cells = [c.strip() for c in next(line for line in text.splitlines()
                                     if line.startswith("| 16×4096×4096")).strip("|").split("|")]
    assert cells[5:7] == ["–", "–"]
    assert "64×8192×8192" not in text


@pytest.mark.parametrize("change, message", [
    (lambda rows, model: rows["modules"]["tuned"].update(median_ms="1.0"), "are not a model runner's rows"),
    (lambda rows, model: rows["modules"]["tuned"].update(median_ms=0.0), "are not a model runner's rows"),
    (lambda rows, model: model["dispatches"][0].update(contraction="64x64x64"), "are not a model runner's rows"),
])
def test_a_malformed_model_table_input_is_one_sentence(tmp_path, capsys, change, message):
    from test_model_table import SUMMARY, _rows
    rows, model = _rows([10.0, 5.0], [30.0, 5.0]), json.loads(json.dumps(SUMMARY))
    change(rows, model)
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    (tmp_path / "model.json").write_text(json.dumps(model))
    code = run_main(["report", "--table", "model", str(tmp_path / "rows.json"), str(tmp_path / "model.json")])
    assert_one_sentence(code, capsys.readouterr().err, message)


@pytest.mark.parametrize("flag", [["--peak-tflops", "500"], ["--default", "d"], ["--tuned", "t"]])
def test_a_table_flag_without_a_table_is_refused(tmp_path, capsys, flag):
    code = run_main(["report", str(tmp_path), *flag])
    assert_one_sentence(code, capsys.readouterr().err, f"{flag[0]} shapes a --table")


def test_jit_on_a_report_without_mma_counts_is_one_sentence(tmp_path):
    (tmp_path / "dump").mkdir()
    (tmp_path / "report.json").write_text(json.dumps({"files": {"dump": "dump"},
                                                      "dispatches": [{"isa_file": "a.ptx"}]}))
    with pytest.raises(jit_resources.CudaError, match="is no folder `pipelines compile` wrote for a CUDA target"):
        jit_resources.jit_resources(tmp_path)


def test_a_file_without_default_rows_still_lists_its_problems(tmp_path, capsys):
    """A bench of `auto` alone (no IREE default rows): each problem's best row with "–" for the default columns,
    cuBLAS from the row that carries it, and NN and NT of one shape apart."""
    results, copy = _results(tmp_path)
    rows = [json.loads(line) for line in results.read_text().splitlines() if json.loads(line)["pipeline"] != "default"]
    rows[0]["vendor"] = {"median_ms": 0.04}
    rows.append(dict(rows[0], id="t", problem=dict(PROBLEMS[0], layout="nt"), median_ms=0.08, vendor=None))
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["report", "--table", "skinny", str(results), str(copy)]) == 0
    text = capsys.readouterr().out
    cells = [c.strip() for c in next(line for line in text.splitlines()
                                     if line.startswith("| 16×4096×4096 |")).strip("|").split("|")]
    assert cells[2:7] == ["–", "50.0 (split-k)", "–", "40.0", "0.80×"]
    nt = [c.strip() for c in next(line for line in text.splitlines()
                                  if line.startswith("| 16×4096×4096 NT |")).strip("|").split("|")]
    assert nt[3] == "80.0 (split-k)" and nt[5] == "–"
    assert "| 64×8192×8192 |" in text


def test_rows_of_one_shape_with_other_epilogues_or_types_stay_apart(tmp_path, capsys):
    results, copy = _results(tmp_path)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    extra = [dict(r, problem=dict(r["problem"], epilogue={"kind": "truncf"})) for r in rows[:3]]
    extra += [dict(r, problem=dict(r["problem"], dtype="f16")) for r in rows[:3]]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows + extra))
    assert cli.main(["report", "--table", "skinny", str(results), str(copy)]) == 0
    labels = [line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines()
              if line.startswith("| 16×4096×4096")]
    assert labels == ["16×4096×4096", "16×4096×4096 (truncf)", "16×4096×4096 f16"]
