"""The emulator's opcode coverage: compile a grid of awkward GEMMs with what IREE 3.13 emits for every AMD target ×
input type × layout (IREE's default heuristic and, where cheap, the named pipelines; plus a fused epilogue and a
kernel that spills), collect every opcode of each `.rocmasm`, emulate every point, and write the table.

    python tools/opcode_coverage.py [--cache /tmp/coverage/cache] [-o results/emulator/opcode-coverage]
    python tools/opcode_coverage.py --only gfx1151     # the points whose name contains a word; prints, writes nothing

writes `<output>.md` (for people) and `<output>.json` (read by tests/unit/test_opcode_coverage.py): each opcode
with the points that emit it and its status (implemented: it has a decoder; refused: the emulator's REFUSED table
gives the reason), and each point with its `pipelines compile` command and emulation status: PASS, FAIL (a
mismatch, a hazard, a crash, or an instruction that neither decodes nor is refused) or REFUSED (the emulator's
one sentence). Compiles are cached on disk under --cache, keyed by the command, so a rerun only emulates. The exit
code is 1 when any point FAILs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
import sys
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iree.compiler import version as iree_version  # noqa: E402

from pipelines import cli, flow  # noqa: E402
from pipelines.emulator import emulate_gemm  # noqa: E402
from pipelines.emulator.machine import DECODERS, REFUSED, DecodeContext, EmulatorError, RefusedInstruction, \
    decode  # noqa: E402
from pipelines.emulator.run import bank_count, load_kernel  # noqa: E402
from pipelines.targets import TARGETS  # noqa: E402
from transforms.errors import UserError  # noqa: E402

AMD_TARGETS = ("gfx942", "gfx950", "gfx1151")
LAYOUTS = ("nn", "nt", "tn")
# (batch, M, N, K) by what makes each awkward; every dimension at most 300 so the grid emulates in minutes, but
# K = 1024 for M = 5, the shortest K at which IREE's kernel divides by 5 with v_mul_hi_u32_u24. The skinny shapes
# are the held-out decode sizes: M = 5-8 with N and K multiples of 256 take IREE's sparse-MFMA kernels (VDMFMA:
# v_smfmac_* on gfx942, and gfx950 TN), M = 3 and 7 their own scalar and compare forms.
SHAPES = {
    "primes": (None, 127, 131, 67),
    "one-off-a-tile": (None, 257, 255, 129),
    "skinny-m1": (None, 1, 256, 256),
    "skinny-m3": (None, 3, 256, 256),
    "skinny-m5": (None, 5, 256, 1024),
    "skinny-m7": (None, 7, 256, 512),
    "skinny-m8": (None, 8, 200, 192),
    "skinny-m8-sparse": (None, 8, 256, 256),
    "skinny-m32": (None, 32, 256, 256),
    "k-odd": (None, 96, 80, 100),  # K a multiple of no intrinsic's K (16, 32, 64, 128)
    "batch": (3, 64, 96, 80),
    "whole-tiles": (None, 256, 256, 256),
}
# The named pipelines where they are cheap: every input type, on the shapes that reach their own schedules (whole
# tiles) and the ones they hand to `auto` or IREE.
NAMED = {"tuned": ("whole-tiles", "one-off-a-tile"), "auto": ("whole-tiles", "one-off-a-tile", "primes")}
CODEGEN_SHAPE = "whole-tiles"  # the lanes route, bf16
DEFAULT_CACHE = Path("/tmp/coverage/cache")
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "results" / "emulator" / "opcode-coverage"


@dataclass(frozen=True)
class Point:
    target: str
    pipeline: str
    dtype: str
    layout: str
    shape: str  # a key of SHAPES
    epilogue: str = "none"
    flags: tuple[str, ...] = ()  # schedule flags
    checked: bool = True  # False: keep a kernel the route's checks refuse (the spilling one)
    why: str = ""  # what the point is there for, when its name does not say

    @property
    def dims(self) -> str:
        batch, m, n, k = SHAPES[self.shape]
        return f"{'' if batch is None else f'{batch}x'}{m}x{n}x{k}"

    @property
    def name(self) -> str:
        extra = "" if self.epilogue == "none" else f" +{self.epilogue}"
        extra += f" {' '.join(self.flags)}" if self.flags else ""
        return f"{self.target} {self.pipeline} {self.dtype} {self.layout} {self.dims} ({self.shape}){extra}"

    def argv(self, out: Path | str) -> list[str]:
        argv = ["compile", "--target", self.target, "--shape", self.dims, "--dtype", self.dtype, "--layout",
                self.layout, "--pipeline", self.pipeline, *self.flags, "-o", str(out)]
        return argv + (["--epilogue", self.epilogue] if self.epilogue != "none" else [])

    @property
    def command(self) -> str:
        return "pipelines " + " ".join(self.argv("OUT")) + ("" if self.checked else "  # route checks skipped")


def grid() -> list[Point]:
    points = []
    for target in AMD_TARGETS:
        dtypes = TARGETS[target].dtypes
        for dtype in dtypes:
            for layout in LAYOUTS:
                points += [Point(target, "default", dtype, layout, shape) for shape in SHAPES]
        for pipeline, shapes in NAMED.items():
            points += [Point(target, pipeline, dtype, layout, shape)
                       for dtype in dtypes for layout in LAYOUTS for shape in shapes]
        points += [Point(target, "codegen", "bf16", layout, CODEGEN_SHAPE) for layout in LAYOUTS]
        points += [Point(target, "default", "bf16", "nt", "whole-tiles", epilogue="bias-gelu")]
    # Spilling kernels; the route refuses a spill, so its check is skipped to keep the kernel. fp8 with B of NN padded
    # along K and N spilled at every tile the named-pipeline sweep tried (pipelines/named.py leaves such problems to
    # IREE): SGPRs parked in VGPR lanes. A gfx1151 tile held to 4 waves per SIMD spills VGPRs to scratch.
    for target, dtype, mma, extra, why in (
            ("gfx942", "f8E4M3FNUZ", "MFMA_F32_16x16x32_F8E4M3FNUZ", (), "SGPR spills (v_writelane/v_readlane)"),
            ("gfx950", "f8E4M3FN", "MFMA_F32_16x16x32_F8E4M3FN", (), "SGPR spills (v_writelane/v_readlane)"),
            ("gfx1151", "bf16", "WMMAR3_F32_16x16x16_BF16", ("--waves-per-eu", "4"), "VGPR spills to scratch")):
        points.append(Point(target, "auto", dtype, "nn", "one-off-a-tile",
                            flags=("--tile", "128x128x64", "--warps", "2x2", "--mma", mma, "--prefetch", "2", "--lds",
                                   "pad", *extra), checked=False, why=why))
    return points


# ---------------------------------------------------------------------------------------------------- compiling


def compile_point(point: Point, cache: Path) -> tuple[str, str, Path, bool]:
    """('ok' | 'refused' | 'failed', message, folder, whether it came from the cache)."""
    key = hashlib.sha256((point.command + iree_version.VERSION).encode()).hexdigest()[:12]
    slot = cache / f"{point.target}-{point.pipeline}-{point.dtype}-{point.layout}-{point.shape}-{key}"
    folder, record = slot / "out", slot / "compile.json"
    if record.is_file():
        saved = json.loads(record.read_text())
        if saved.get("command") == point.command:
            return saved["status"], saved["message"], folder, True
    shutil.rmtree(slot, ignore_errors=True)
    slot.mkdir(parents=True)
    status, message = _compile(point, folder)
    record.write_text(json.dumps({"command": point.command, "status": status, "message": message}) + "\n")
    return status, message, folder, False


def _compile(point: Point, folder: Path) -> tuple[str, str]:
    try:
        args = cli.build_parser().parse_args(point.argv(folder))
        prepared = flow.prepare(cli._job(args))
    except UserError as err:  # the pipeline's one sentence before compiling
        return "refused", _one_line(err)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            flow.compile_job(prepared, folder, check=point.checked)
    except UserError as err:  # iree-compile or a check of the output
        return "failed", _one_line(err)
    except Exception:  # noqa: BLE001 - a crash is a defect to record, not to hide
        return "failed", traceback.format_exc(limit=2).strip().splitlines()[-1]
    return "ok", ""


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:500]


# ---------------------------------------------------------------------------------------------------- emulating


def opcodes_of(folder: Path) -> set[str]:
    """Every opcode of the folder's kernel; the halves of a gfx11 dual-issue pair count as their own names."""
    _, kernel, _ = load_kernel(folder)
    found = set()
    for inst in kernel.instructions:
        found.add(inst.opcode)
        if inst.opcode == "v_dual":
            found.update(half.opcode for half in inst.operands)
    return found


def opcode_status(opcode: str) -> tuple[str, str]:
    """('implemented' | 'refused' | 'missing', reason): a dual-issue half is implemented when its e32 VALU form
    decodes."""
    if opcode in REFUSED:
        return "refused", REFUSED[opcode]
    if opcode.startswith("v_dual_"):
        decodes = "v_dual" in DECODERS and f"v_{opcode.removeprefix('v_dual_')}_e32" in DECODERS
    else:
        decodes = opcode in DECODERS
    return ("implemented" if decodes else "missing"), ""


def emulate_point(folder: Path) -> tuple[str, str, float]:
    """('PASS' | 'FAIL' | 'REFUSED', message, seconds). An instruction that does not decode is a gap (FAIL) unless
    the REFUSED table names it; any other sentence of the emulator is a refusal of what it does not model."""
    started = time.perf_counter()
    try:
        report, kernel, configured = load_kernel(folder)
        ctx = DecodeContext(kernel, report["target"], kernel.wave_size, bank_count(configured, report["target"]),
                            TARGETS[report["target"]].buffer_cache_swizzle)
        decode(kernel, ctx)
    except EmulatorError as err:
        return ("REFUSED" if isinstance(err, RefusedInstruction) else "FAIL"), _one_line(err), \
            time.perf_counter() - started
    except UserError as err:  # the kernel text itself
        return "FAIL", _one_line(err), time.perf_counter() - started
    try:
        result = emulate_gemm(folder, seed=0)
    except EmulatorError as err:
        return "REFUSED", _one_line(err), time.perf_counter() - started
    except Exception:  # noqa: BLE001
        return "FAIL", traceback.format_exc(limit=2).strip().splitlines()[-1], time.perf_counter() - started
    if result.passed:
        return "PASS", f"max rel. error {result.max_rel_error:.1e}", time.perf_counter() - started
    why = [f"max rel. error {result.max_rel_error:.1e} > {result.tolerance:.0e}"] if not result.matches else []
    why += [f"{result.unwritten} outputs never written"] if result.unwritten else []
    why += [f"{h.kind}: {h.message}" for h in result.hazards[:1]]
    return "FAIL", "; ".join(why)[:500], time.perf_counter() - started


# ---------------------------------------------------------------------------------------------------- the table


def run_grid(points: list[Point], cache: Path) -> tuple[list[dict], dict]:
    rows, emitters = [], defaultdict(list)
    for number, point in enumerate(points, 1):
        started = time.perf_counter()
        compiled, compile_message, folder, cached = compile_point(point, cache)
        row = {"name": point.name, "target": point.target, "pipeline": point.pipeline, "dtype": point.dtype,
               "layout": point.layout, "shape": point.shape, "dims": point.dims, "epilogue": point.epilogue,
               "why": point.why, "command": point.command, "compile": compiled, "compile_message": compile_message,
               "cached": cached, "spills": None, "emulation": None, "message": "", "emulate_s": 0.0}
        if compiled == "ok":
            row["spills"] = json.loads((folder / flow.REPORT_FILE).read_text())["spill_count"]
            for opcode in opcodes_of(folder):
                emitters[opcode].append(point)
            row["emulation"], row["message"], seconds = emulate_point(folder)
            row["emulate_s"] = round(seconds, 2)
        rows.append(row)
        verdict = row["emulation"] or f"compile {compiled}"
        detail = row["message"] if row["emulation"] not in (None, "PASS") else compile_message if not row[
            "emulation"] else ""
        print(f"[{number}/{len(points)} {time.perf_counter() - started:5.1f} s] {verdict:8} {point.name}"
              f"{': ' + detail[:200] if detail else ''}", flush=True)
    opcodes = {}
    for opcode in sorted(emitters):
        status, reason = opcode_status(opcode)
        who = emitters[opcode]
        opcodes[opcode] = {"status": status, "reason": reason,
                           "targets": sorted({p.target for p in who}), "dtypes": sorted({p.dtype for p in who}),
                           "layouts": sorted({p.layout for p in who}), "pipelines": sorted({p.pipeline for p in who}),
                           "points": [p.name for p in who]}
    return rows, opcodes


def counts(rows: list[dict]) -> dict:
    out = {"points": len(rows), "compiled": sum(r["compile"] == "ok" for r in rows),
           "from_cache": sum(r["cached"] for r in rows), "spilling": sum(bool(r["spills"]) for r in rows),
           "compile_refused": sum(r["compile"] == "refused" for r in rows),
           "compile_failed": sum(r["compile"] == "failed" for r in rows)}
    out.update({s: sum(r["emulation"] == s for r in rows) for s in ("PASS", "FAIL", "REFUSED")})
    return out


def render(command: str, rows: list[dict], opcodes: dict, seconds: float) -> str:
    c = counts(rows)
    lines = [
        "# Emulator opcode coverage (IREE 3.13 on gfx942, gfx950, gfx1151)", "",
        f"Produced by `{command}` (IREE {iree_version.VERSION}) in {seconds / 60:.1f} min on one core of the 2-core "
        f"dev machine, {c['from_cache']} of {c['points']} compiles taken from the cache; the grid is `grid()` in "
        "tools/opcode_coverage.py. Regenerate it after adding or refusing an opcode; "
        "tests/unit/test_opcode_coverage.py checks this table against the emulator's decoders.", "",
        f"**Grid**: {c['points']} points, {c['compiled']} compiled ({c['compile_refused']} refused by the pipeline "
        f"before compiling, {c['compile_failed']} failed to compile; {c['spilling']} kernels spill registers). "
        f"Emulated: **{c['PASS']} PASS, {c['FAIL']} FAIL, {c['REFUSED']} REFUSED** (the emulator's sentence "
        "below).", "",
        "Shapes (batch×M×N×K): " + ", ".join(f"{k} {Point('', '', '', '', k).dims}" for k in SHAPES) + ". IREE's "
        "`default` runs every target × input type × layout × shape; `tuned` and `auto` run every input type and "
        "layout on " + "; ".join(f"`{p}`: {', '.join(s)}" for p, s in NAMED.items()) + f"; `codegen` bf16 on "
        f"{CODEGEN_SHAPE}; one bf16 NT `bias-gelu` epilogue per target; three spilling kernels from schedule flags "
        "(the route's spill check skipped to keep them): fp8 NN on gfx942 and gfx950 (SGPRs parked in VGPR lanes) "
        "and bf16 NN on gfx1151 at 4 waves per SIMD (VGPRs to scratch).", "",
        f"## Opcodes ({len(opcodes)}: {sum(o['status'] == 'implemented' for o in opcodes.values())} implemented, "
        f"{sum(o['status'] == 'refused' for o in opcodes.values())} refused, "
        f"{sum(o['status'] == 'missing' for o in opcodes.values())} missing)", "",
        "| opcode | status | targets | input types | layouts | pipelines | points |", "|---|---|---|---|---|---|---|"]
    for opcode, o in opcodes.items():
        status = o["status"] + (f": {o['reason']}" if o["reason"] else "")
        lines.append(f"| `{opcode}` | {status} | {' '.join(o['targets'])} | {' '.join(o['dtypes'])} | "
                     f"{' '.join(o['layouts'])} | {' '.join(o['pipelines'])} | {len(o['points'])} |")
    lines += ["", "## Grid points", "", "Each point's compile is `pipelines compile` with the arguments shown "
              "(`-o OUT`); `pipelines emulate OUT` reproduces its status.", "",
              "| point | compile | spills | emulation | detail |", "|---|---|---|---|---|"]
    for r in rows:
        detail = r["message"] if r["emulation"] else r["compile_message"]
        lines.append(f"| {r['name']}{' — ' + r['why'] if r['why'] else ''} | {r['compile']} | "
                     f"{'' if r['spills'] is None else r['spills']} | {r['emulation'] or '—'} | "
                     f"{detail.replace('|', '/')} |")
    lines += ["", "### Commands", "", "```sh"] + [f"{r['command']}" for r in rows] + ["```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="compiled folders, reused by reruns")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT, help="writes OUTPUT.md and OUTPUT.json")
    parser.add_argument("--only", help="run the points whose name contains this text; prints, writes no table")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    points = [p for p in grid() if args.only is None or args.only in p.name]
    if not points:
        parser.error(f"no point of the grid has '{args.only}' in its name.")
    rows, opcodes = run_grid(points, args.cache)
    seconds = time.perf_counter() - started
    c = counts(rows)
    missing = [op for op, o in opcodes.items() if o["status"] == "missing"]
    print(f"{c['points']} points, {c['compiled']} compiled: {c['PASS']} PASS, {c['FAIL']} FAIL, {c['REFUSED']} "
          f"REFUSED; {len(opcodes)} opcodes, missing: {', '.join(missing) or 'none'}; {seconds:.0f} s")
    if args.only is None:
        command = "python tools/opcode_coverage.py" + (f" --cache {args.cache}" if args.cache != DEFAULT_CACHE else "")
        args.output.parent.mkdir(parents=True, exist_ok=True)
        table = {"command": command, "iree_compiler": iree_version.VERSION, "seconds": round(seconds),
                 "shapes": {k: list(v) for k, v in SHAPES.items()}, "counts": c, "opcodes": opcodes, "points": rows}
        for suffix, text in ((".json", json.dumps(table, indent=1) + "\n"),
                             (".md", render(command, rows, opcodes, seconds))):
            scratch = args.output.with_name(args.output.name + suffix + ".tmp")
            scratch.write_text(text)
            scratch.replace(args.output.with_name(args.output.name + suffix))
        print(f"wrote {args.output}.md and .json")
    return 1 if c["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
