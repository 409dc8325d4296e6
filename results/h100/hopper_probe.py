"""Compile-only probe of Hopper (sm_90a) paths in IREE 3.13. Nothing here runs on a GPU.

Runs each case under results/h100/hopper_inputs/, prints how far it got (rc, first error line) and counts Hopper
instructions in the dumped PTX; assembles PTX with `ptxas -arch=sm_90a` when ptxas is on PATH.
Findings: results/h100/hopper_paths.md.

    python results/h100/hopper_probe.py [--iree-bin .venv/bin] [--out /tmp/hopper_probe]
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIT = ROOT / "results" / "h100" / "hopper_inputs"
PATTERNS = {
    "wgmma.mma_async": r"wgmma\.mma_async",
    "cp.async.bulk.tensor": r"cp\.async\.bulk\.tensor",
    "mbarrier": r"\bmbarrier\.",
    "mma.sync": r"\bmma\.sync",
    "ldmatrix": r"\bldmatrix",
}


def count(ptx: str) -> dict:
    return {k: len(re.findall(p, ptx)) for k, p in PATTERNS.items()}


def first_error(text: str) -> str:
    for line in text.splitlines():
        if "error:" in line or "Stack dump" in line or line.startswith("Please report"):
            return line.strip()[:300]
    return ""


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def ptxas(ptx: Path, out: Path):
    exe = shutil.which("ptxas")
    if not exe:
        return "ptxas not found"
    rc, log = run([exe, "-arch=sm_90a", str(ptx), "-o", str(out)], ptx.parent)
    return "ok" if rc == 0 else f"rc={rc}: {first_error(log) or log.strip()[:200]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iree-bin", default=str(ROOT / ".venv" / "bin"))
    ap.add_argument("--out", default="/tmp/hopper_probe")
    args = ap.parse_args()
    compile_ = str(Path(args.iree_bin) / "iree-compile")
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rows = []

    # 1. Default pipeline with the executable target edited to sm_90a.
    src = out / "src80.mlir"
    run([compile_, str(LIT / "gemm_4096_f16.mlir"), "--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80",
         "--compile-to=executable-sources", "-o", str(src)], out)
    src90 = out / "src90a.mlir"
    src90.write_text(src.read_text().replace('arch = "sm_80", features = "+ptx76"',
                                             'arch = "sm_90a", features = "+ptx80"'))
    cases = [("default_pipeline_sm90a", [compile_, str(src90), "--compile-from=executable-sources"])]
    # 3. Hand-written dispatch bodies substituted into a placeholder program.
    for f in sorted(LIT.glob("exec_*.mlir")):
        cases.append((f.stem, [compile_, str(LIT / "prog_placeholder.mlir"),
                               f"--iree-hal-substitute-executable-source=hopper={f}"]))
    # 4. External sm_90a PTX object (from extern/k.cu via nvcc) as a custom dispatch.
    cases.append(("extern_ptx_object", [compile_, str(LIT / "extern" / "extern_prog.mlir"),
                                        f"--iree-hal-executable-object-search-path={LIT / 'extern'}"]))
    for name, cmd in cases:
        dump = out / name
        rc, log = run(cmd + [f"--iree-hal-dump-executable-files-to={dump}", "-o", str(out / f"{name}.vmfb")], out)
        ptxs = sorted(dump.glob("*.ptx")) if dump.exists() else []
        row = {"case": name, "rc": rc, "vmfb": (out / f"{name}.vmfb").exists() and rc == 0,
               "error": first_error(log) if rc else "", "ptx": bool(ptxs)}
        if ptxs:
            row.update(count(ptxs[0].read_text()))
            row["ptxas_sm_90a"] = ptxas(ptxs[0], dump / "k.cubin")
        rows.append(row)
        print(json.dumps(row))
    (out / "summary.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
