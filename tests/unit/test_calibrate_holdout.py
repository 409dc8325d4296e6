"""`pipelines calibrate --holdout FRACTION|FILE`: which rows are held out (whole shapes, the requested share, never
all, chosen by the seed), that the fit neither sees nor scores them, what the report says about them, and the
refusals (one sentence, exit 2, nothing written). Nothing here compiles: the calibration's rows are stand-ins whose
predictions are a known function of the timing facts."""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from pipelines import cli
from pipelines.targets import TARGETS
from pipelines.timing import calibrate
from pipelines.timing.calibrate import (FIELDS, Calibration, CalibrationError, Row, held_out, held_out_report,
                                        read_rows, render_held_out, shape_key)

HEAD = ",".join(FIELDS)


def _fields(shapes: int, pairs: bool = True) -> list[dict]:
    """`shapes` distinct shapes, each measured with DMA off and (when `pairs`) on."""
    rows = []
    for i in range(shapes):
        for variant in ("dma_off", "dma_on") if pairs else ("dma_off",):
            rows.append(dict(zip(FIELDS, ["src", "MI355X", "gfx950", "mm", str(64 * (i + 1)), "128", "256", "NN",
                                          "bf16", variant, str(30 + i)])))
    return rows


@pytest.mark.parametrize("shapes", [2, 3, 7, 21])
@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.5, 0.99])
def test_whole_shapes_are_held_out_in_the_requested_share(shapes, fraction):
    fields = _fields(shapes)
    held = held_out(fields, fraction)
    keys = {shape_key(fields[i]) for i in held}
    # both variants of every chosen shape, and nothing else
    assert held == {i for i, f in enumerate(fields) if shape_key(f) in keys}
    expected = min(max(1, round(fraction * shapes)), shapes - 1)
    assert len(keys) == expected
    assert 1 <= len(keys) <= shapes - 1  # something is fitted, something judged


def test_the_seed_chooses_and_the_same_seed_chooses_the_same():
    fields = _fields(20)
    assert held_out(fields, 0.25, seed=3) == held_out(fields, 0.25, seed=3)
    assert len({frozenset(held_out(fields, 0.25, seed=s)) for s in range(6)}) > 1


def test_the_order_of_the_rows_does_not_change_which_shapes_are_held():
    fields = _fields(9)
    held = {shape_key(fields[i]) for i in held_out(fields, 0.4, seed=1)}
    flipped = list(reversed(fields))
    assert {shape_key(flipped[i]) for i in held_out(flipped, 0.4, seed=1)} == held


def test_one_shape_cannot_be_split():
    with pytest.raises(CalibrationError, match="at least two shapes"):
        held_out(_fields(1), 0.5)


def test_a_row_without_a_source_is_refused():
    line = HEAD + "\n" + ",".join(["  ", "MI355X", "gfx950", "mm", "64", "64", "64", "NN", "bf16", "dma_off", "10"])
    with pytest.raises(CalibrationError, match="row 1 of x.csv .line 2. names no source"):
        read_rows(line + "\n", "x.csv")


class _Stand(Calibration):
    """Rows whose prediction is measured × vmem_latency / TRUE: the fit finds TRUE exactly when it sees the rows
    it should; held-out rows are measured × HELD instead, so a fit that looked at them would be pulled away."""

    TRUE = 1200

    def __init__(self, fields: list[dict], held: set[int]):
        self.fields, self.held, self.pool = fields, held, None
        self.calls = 0

    @property
    def recorded(self) -> list:
        return [(calibrate._base(f), object()) for f in self.fields]

    def rows(self, timings: dict | None = None) -> list[Row]:
        self.calls += 1
        latency = (timings or {}).get("gfx950", TARGETS["gfx950"].timing).vmem_latency
        out = []
        for i, (base, _) in enumerate(self.recorded):
            scale = 3.0 if i in self.held else latency / self.TRUE
            out.append(dataclasses.replace(base, predicted_us=base.measured_us * scale))
        return out


def test_the_fit_never_scores_the_held_out_rows():
    fields = _fields(6)
    held = held_out(fields, 0.5)
    stand = _Stand(fields, held)
    timings, rows = stand.fit(skip=frozenset(held))
    assert timings["gfx950"].vmem_latency == _Stand.TRUE  # the held rows (3× off whatever the facts) did not count
    assert all(abs(r.error) < 1e-12 for i, r in enumerate(rows) if i not in held)


class _Pulling(_Stand):
    """Held-out rows that a fit looking at them would fit too: their prediction is measured × vmem_latency / 500."""

    HELD = 500

    def rows(self, timings: dict | None = None) -> list[Row]:
        latency = (timings or {}).get("gfx950", TARGETS["gfx950"].timing).vmem_latency
        return [dataclasses.replace(base, predicted_us=base.measured_us * latency /
                                    (self.HELD if i in self.held else self.TRUE))
                for i, (base, _) in enumerate(self.recorded)]


def test_held_out_rows_that_would_pull_the_fit_do_not():
    """Most shapes held out, and a fact (VMEM latency 500) that fits them exactly: the fit still finds the fitted
    rows' 1200, which it would not if it scored the held-out rows too."""
    fields = _fields(6)
    held = held_out(fields, 0.67)
    assert len(held) > len(fields) / 2
    timings, _ = _Pulling(fields, held).fit(skip=frozenset(held))
    assert timings["gfx950"].vmem_latency == _Stand.TRUE
    everything, _ = _Pulling(fields, held).fit()  # the counter-check: scoring every row finds the held rows' 500
    assert everything["gfx950"].vmem_latency == _Pulling.HELD


def test_the_report_judges_only_the_held_out_rows():
    fields = _fields(6)
    held = held_out(fields, 0.5)
    stand = _Stand(fields, held)
    timings, rows = stand.fit(skip=frozenset(held))
    report = held_out_report(stand, timings, rows, frozenset(held))
    assert report["fit"]["rows"] == len(fields) - len(held) and report["held_out"]["rows"] == len(held)
    assert report["fit"]["median_abs_error"] == pytest.approx(0.0)
    assert report["held_out"]["median_abs_error"] == pytest.approx(2.0)  # 3× measured: +200 %
    assert [r["m"] for r in report["rows"]] == [int(fields[i]["M"]) for i in sorted(held)]
    facts = {(c["target"], c["fact"]) for c in report["constants"]}
    assert facts == {("gfx950", f) for f in TARGETS["gfx950"].timing.fitted}
    latency = next(c for c in report["constants"] if c["fact"] == "vmem_latency")
    assert latency["table"] == TARGETS["gfx950"].timing.vmem_latency and latency["fitted"] == _Stand.TRUE
    report["held_out_from"] = "half the shapes"
    text = render_held_out(report)
    assert "Held out: half the shapes" in text and "median |error| 200 %" in text
    assert f"vmem_latency: table {TARGETS['gfx950'].timing.vmem_latency}, fitted {_Stand.TRUE}" in text


def test_the_median_of_the_report_is_the_median_of_the_rows():
    """Oracle: the held-out median recomputed from the rows the report lists."""
    fields = _fields(8)
    held = held_out(fields, 0.5, seed=2)
    stand = _Stand(fields, held)
    timings, rows = stand.fit(skip=frozenset(held))
    report = held_out_report(stand, timings, rows, frozenset(held))
    judged = [abs(r["error"]) for r in report["rows"] if r["measured_us"] >= calibrate.MIN_US]
    assert report["held_out"]["median_abs_error"] == pytest.approx(statistics.median(judged))


def _refusal(capsys, argv: list[str]) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as done:  # argparse refuses a flag's value itself
        code = done.code
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pipelines"), captured.err
    return lines[0]


@pytest.mark.parametrize("value", ["0", "1", "1.0", "-0.2", "1.5", "nan", "inf"])
def test_a_fraction_outside_zero_to_one_is_refused(tmp_path, capsys, value):
    csv = tmp_path / "rows.csv"
    csv.write_text(HEAD + "\n" + "\n".join(",".join(f.values()) for f in _fields(3)) + "\n")
    line = _refusal(capsys, ["calibrate", "--csv", str(csv), "--holdout", value, "--keep", str(tmp_path / "k")])
    assert "between 0 and 1" in line and not (tmp_path / "k").exists()


@pytest.mark.parametrize("which, says", [("missing", "does not exist"), ("folder", "is a folder"),
                                          ("nosource", "names no source")])
def test_a_bad_holdout_file_is_one_sentence_before_anything_is_written(tmp_path, capsys, which, says):
    csv = tmp_path / "rows.csv"
    csv.write_text(HEAD + "\n" + "\n".join(",".join(f.values()) for f in _fields(3)) + "\n")
    target = {"missing": tmp_path / "none.csv", "folder": tmp_path, "nosource": tmp_path / "held.csv"}[which]
    if which == "nosource":
        target.write_text(HEAD + "\n," + ",".join(list(_fields(1)[0].values())[1:]) + "\n")
    line = _refusal(capsys, ["calibrate", "--csv", str(csv), "--holdout", str(target), "--keep",
                             str(tmp_path / "k")])
    assert says in line and not (tmp_path / "k").exists()


def test_the_holdout_file_is_an_input_the_keep_folder_may_not_hold(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    csv, held = tmp_path / "rows.csv", tmp_path / "in" / "held.csv"
    for path, shapes in ((csv, 3), (held, 2)):
        path.write_text(HEAD + "\n" + "\n".join(",".join(f.values()) for f in _fields(shapes)) + "\n")
    before = held.read_bytes()
    line = _refusal(capsys, ["calibrate", "--csv", str(csv), "--holdout", str(held), "--keep", str(tmp_path / "in"),
                             "--force"])
    assert "holds the input" in line and held.read_bytes() == before


def test_columns_after_the_fields_are_kept_and_the_fields_must_come_first():
    row = "s,MI355X,gfx950,mm,64,64,64,NN,bf16,dma_off,10"
    rows = read_rows(f"{HEAD},quote\n{row},\"the PR's line, quoted\"\n", "x.csv")
    assert rows[0]["quote"] == "the PR's line, quoted" and rows[0]["time_us"] == "10"
    with pytest.raises(CalibrationError, match="first"):
        read_rows("quote," + HEAD + "\nq," + row + "\n", "x.csv")


def test_the_shipped_held_out_rows_parse_and_share_no_shape_with_the_fitted_rows():
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    held = read_rows((repo / "results" / "calibration" / "heldout-gfx950.csv").read_text(), "held")
    fitted = read_rows(calibrate.PUBLISHED.read_text(), "published")
    shape = lambda r: (int(r["M"]), int(r["N"]), int(r["K"]), r["layout"].upper())  # noqa: E731
    assert len(held) >= 80 and not {shape(r) for r in held} & {shape(r) for r in fitted}
    assert all(r["quote"].strip() for r in held)


def test_a_holdout_file_holds_out_its_own_rows_and_only_them(tmp_path, capsys, monkeypatch):
    """`--holdout FILE`: the rows the fit skips and the report judges are the file's (appended after --csv's), none
    of --csv's. The calibration is a stand-in that fits and reports like the real one without compiling."""
    csv, held = tmp_path / "rows.csv", tmp_path / "held.csv"
    fitted, kept = _fields(3), [dict(f, M=str(1000 + int(f["M"]))) for f in _fields(2)]
    for path, rows in ((csv, fitted), (held, kept)):
        path.write_text(HEAD + "\n" + "\n".join(",".join(f.values()) for f in rows) + "\n")
    seen = {}

    class _FromFile(_Stand):
        def __init__(self, fields, workers=None, folder=None):
            super().__init__(fields, {i for i, f in enumerate(fields) if int(f["M"]) > 1000})
            self.workers = calibrate.Workers(1, "one stand-in worker")

        def fit(self, rounds=2, skip=frozenset()):
            seen["skip"] = skip
            return super().fit(rounds, skip)

        def close(self):
            pass

    monkeypatch.setattr(cli, "Calibration", _FromFile)
    assert cli.main(["calibrate", "--csv", str(csv), "--holdout", str(held), "--json"]) == 0
    assert seen["skip"] == frozenset(range(len(fitted), len(fitted) + len(kept)))
    report = json.loads(capsys.readouterr().out)
    assert sorted(r["m"] for r in report["rows"]) == sorted(int(f["M"]) for f in kept)
