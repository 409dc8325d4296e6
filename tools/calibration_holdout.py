"""Hold-out check of the timing model's fit: fit the `fitted` facts on the calibration rows of some layouts and
report the median |error| of the others, which the fit never saw.

    python tools/calibration_holdout.py --csv pipelines/timing/data/amd-measured-calibration.csv --fit-on nn,nt
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

from pipelines.timing.calibrate import Calibration, read_rows, summary


def _subset(path: Path, layouts: set[str], keep: bool, folder: Path) -> Path:
    rows = read_rows(path.read_text(), str(path))
    out = folder / f"{'fit' if keep else 'held'}.csv"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if (r["layout"].lower() in layouts) == keep)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, required=True)
    parser.add_argument("--fit-on", default="nn,nt", help="layouts whose rows the fit sees")
    parser.add_argument("--keep", type=Path, help="compiled rows to reuse (calibrate --keep)")
    args = parser.parse_args()
    layouts = set(args.fit_on.lower().split(","))
    with tempfile.TemporaryDirectory() as scratch:
        fit_rows = Calibration(_subset(args.csv, layouts, True, Path(scratch)), 2, args.keep)
        timings, fitted = fit_rows.fit()
        fit_rows.close()
        held = Calibration(_subset(args.csv, layouts, False, Path(scratch)), 2, args.keep)
        rows = held.rows(timings)
        held.close()
    for name, timing in timings.items():
        print(f"fitted on {args.fit_on} for {name}: " + ", ".join(f"{f} = {getattr(timing, f)}" for f in timing.fitted))
    for label, data in (("fit rows", fitted), ("held-out rows", rows)):
        s = summary(data)
        median = f"{100 * s['median_abs_error']:.0f} %" if s["median_abs_error"] is not None else "-"
        print(f"{label}: {s['predicted']} of {s['rows']} predicted, median |error| {median} over {s['judged']} rows "
              f">= 20 us, DMA direction right in {s['dma_sign_right']} of {s['dma_pairs']} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
