"""Mutation testing: plant one realistic bug at a time and check that the fast (default-tier) tests catch it.

Each entry of `MUTANTS` names a file, an exact snippet of it, the snippet with the bug, what the bug means, and
the default-tier test files of that module. For each mutant the tool copies the tracked tree once into a
temporary folder (other processes read the real tree, so it is never patched), replaces the snippet in the copy,
runs `pytest -q -x -m "not slow" <files>` there with a timeout, and restores the file. A mutant whose snippet is
not found exactly once, or whose mutated file does not compile, is an ERROR, reported as such and never counted
as killed. The kill rate is killed / (killed + survived); the run writes results/mutation/<date>.md and .jsonl
with the commit and the command.

Why a script of our own rather than mutmut: mutmut generates thousands of operator mutants over whole files,
most of them equivalent or in code the fast tests do not aim at, and a run over this tree takes hours on a
shared two-core machine; scoping it to chosen lines is awkward. The bugs worth catching here are the ones that
matter (a wait off by one, a check that accepts a little, a key that drops a field), so they are written down
by hand, each a one-line change a person could plausibly make, and each runs only its module's fast tests
(the whole table in a few minutes). Snippets are short and specific so that the table survives edits elsewhere
in a file; after a merge, re-run it and fix the entries it reports as "snippet not found".

    python tools/mutate.py                 # every mutant; writes results/mutation/<date>.md and .jsonl
    python tools/mutate.py --only a-hazard-waitcnt k-scc-lt   # some mutants, nothing written
    python tools/mutate.py --list          # the table
    python tools/mutate.py --blind FILE    # a blind probe's mutants (JSON), each judged by the default and slow tiers

`--jobs N` (default: the CPU count) runs N mutants at once, each in its own copy of the tree.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Default-tier test files per module under test.
T_HAZARDS = ("tests/unit/test_hazard_boundaries.py", "tests/unit/test_hazards.py")
T_VERIFY = ("tests/unit/test_verify_stats.py",)
T_VERIFY_COMPILED = ("tests/unit/test_verify_stats.py", "tests/unit/test_verify.py")  # one small compile
T_INSPECT = ("tests/unit/test_inspect_occupancy.py",)
T_TUNE = ("tests/unit/test_tune_finalize.py",)
T_NAMED = ("tests/unit/test_named_choice.py", "tests/unit/test_schedule.py")
T_SCHEDULE = ("tests/unit/test_schedule_limits.py", "tests/unit/test_schedule.py")
T_EMULATOR = ("tests/unit/test_emulator_units.py",)
T_SPEC = ("tests/unit/test_spec_matcher.py",)
T_RUNNER = ("tests/unit/test_runner_checks.py",)
T_SWIZZLE = ("tests/unit/test_lds_swizzle.py",)
T_TIMING = ("tests/unit/test_timing_micro.py",)
T_BATCH = ("tests/unit/test_emulator_batch.py",)
T_WAITSTATES = ("tests/unit/test_emulator_waitstates.py",)
T_LOCALISE = ("tests/unit/test_emulator.py::test_a_loosened_wait_is_traced_to_the_first_instruction_it_misleads",)
T_HOPPER_ORACLES = ("tests/unit/test_hopper_oracles.py",)  # the emitted Hopper IR run on a model cluster


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str
    mutated: str
    description: str
    tests: tuple[str, ...]


MUTANTS = [
    # ---- the 13 bugs of issue 12, item 7 (a)-(m)
    Mutant("a-hazard-waitcnt", "transforms/hazards.py",
           "while len(queue) > _wait(op):", "while len(queue) > _wait(op) - 1:",
           "hazard checker treats waitcnt(N) as N-1 (one more operation retired than the wait guarantees)",
           T_HAZARDS),
    Mutant("b-verify-second-mma", "pipelines/verify.py",
           "if stats.mma.get(opcode, 0) == 0 or set(stats.mma) - {opcode}:", "if stats.mma.get(opcode, 0) == 0:",
           "verify accepts a kernel that also issues a second MMA opcode", T_VERIFY),
    Mutant("c1-verify-spills-64", "pipelines/verify.py",
           "    if stats.spill_count:", "    if stats.spill_count > 64:",
           "verify ignores up to 64 spilled registers", T_VERIFY),
    Mutant("c2-verify-spills-vgprs", "pipelines/verify.py",
           "    if stats.spill_count:", "    if stats.spill_count > (stats.vgpr_count or 0):",
           "verify ignores spills up to the kernel's VGPR count", T_VERIFY),
    Mutant("d1-schedule-lds-per-cu", "transforms/schedule.py",
           "if lds > target.lds_bytes:", "if lds > target.lds_per_cu:",
           "schedule check reads the LDS budget from lds_per_cu (gfx1151's limit doubles)", T_SCHEDULE),
    Mutant("d2-explain-lds-per-cu", "pipelines/commands.py",
           "check_lds(schedule, target.lds_bytes, target.name)", "check_lds(schedule, target.lds_per_cu, target.name)",
           "explain checks warp-group schedules against lds_per_cu (gfx1151's limit doubles)", T_HAZARDS),
    Mutant("e-tune-slowest", "pipelines/tune.py",
           'best = max(good, key=lambda r: r["tflops"])', 'best = min(good, key=lambda r: r["tflops"])',
           "tune keeps the slowest correct candidate", T_TUNE),
    Mutant("f-tune-key-dtype", "pipelines/tune_cache.py",
           "[target.name, asdict(gemm),", "[target.name, dict(asdict(gemm), dtype=None),",
           "tune cache key without the element type", T_TUNE),
    Mutant("g-occupancy-granule", "pipelines/inspect.py",
           "per_wave = -(-stats.allocated_vgprs // granule) * granule", "per_wave = stats.allocated_vgprs",
           "occupancy ignores the VGPR allocation granule", T_INSPECT),
    Mutant("h-auto-batch", "pipelines/named.py",
           "math.ceil(gemm.n / tile[1]) * (gemm.batch or 1)", "math.ceil(gemm.n / tile[1])",
           "auto leaves the batch out of the workgroup count", T_NAMED),
    Mutant("i-emulator-lgkmcnt", "pipelines/emulator/memory.py",
           "retire(w, w.lgkm, lgkm)", "retire(w, w.lgkm, max(lgkm - 1, 0))",
           "emulator retires lgkmcnt(N) down to N-1", T_EMULATOR),
    Mutant("j-emulator-gfx9-vmcnt-hi", "pipelines/emulator/memory.py",
           '"vmcnt": (raw & 0xF) | ((raw >> 14) & 3) << 4,', '"vmcnt": raw & 0xF,',
           "gfx9 raw s_waitcnt decoding drops vmcnt's high bits (15:14)", T_EMULATOR),
    Mutant("k-emulator-scc-lt", "pipelines/emulator/machine.py",
           '"lt": lambda a, b: a < b,', '"lt": lambda a, b: a <= b,',
           "SCC of s_cmp_lt computed as <=", T_EMULATOR),
    Mutant("l-emulator-gfx950-fnuz", "pipelines/emulator/matrix.py",
           'ocp = not any(t.endswith("FNUZ")', 'ocp = any(t.endswith("FNUZ")',
           "gfx950 fp8 decoded as FNUZ instead of OCP", T_EMULATOR),
    Mutant("m-spec-m-n-swapped", "transforms/tuning_spec.py",
           "((m, gemm.m), (n, gemm.n), (k, gemm.k))", "((m, gemm.n), (n, gemm.m), (k, gemm.k))",
           "tuning-spec matcher compares M with N and N with M", T_SPEC),
    # ---- hazards and the warp-group LDS budget
    Mutant("hazard-derived-wait-loose", "transforms/hazards.py",
           "keep = len(queue) - last - 1", "keep = len(queue) - last",
           "derived waits leave one operation too many in flight", T_HAZARDS),
    Mutant("hazard-epoch-overlap-strict", "transforms/hazards.py",
           "if a.first_epoch <= b.last_epoch and b.first_epoch <= a.last_epoch:",
           "if a.first_epoch < b.last_epoch and b.first_epoch < a.last_epoch:",
           "accesses that share only their first/last epoch are not a race", T_HAZARDS),
    Mutant("hazard-write-write-only", "transforms/hazards.py",
           "not (a.write or b.write)", "not (a.write and b.write)",
           "only write-write pairs are races (read-write ignored)", T_HAZARDS),
    Mutant("hazard-mfma-first-read", "transforms/hazards.py",
           'if issued.kind == "read" and not any(q[0].buffer == issued.buffer for q in lgkm):',
           'if issued.kind == "read":',
           "an MFMA may use a buffer once its first LDS read retired, others still in flight", T_HAZARDS),
    Mutant("check-lds-at-limit", "transforms/warpgroups.py",
           "if need > lds_limit:", "if need >= lds_limit:",
           "a warp-group schedule using exactly the LDS limit is refused", T_HAZARDS),
    # ---- verify
    Mutant("verify-lds-fewer-bytes", "pipelines/verify.py",
           'stats.lds_bytes != planned:\n        _fail(dispatch, f"LDS layout',
           'stats.lds_bytes > planned:\n        _fail(dispatch, f"LDS layout',
           "verify accepts a kernel that allocates less LDS than planned", T_VERIFY),
    Mutant("verify-waves-per-eu-minus-one", "pipelines/verify.py",
           "stats.occupancy < wanted)", "stats.occupancy < wanted - 1)",
           "verify accepts one wave per SIMD fewer than asked", T_VERIFY),
    Mutant("verify-lanes-lds-reads", "pipelines/verify.py",
           "if stats.lds_bytes or stats.lds_reads or stats.lds_writes:", "if stats.lds_bytes:",
           "lane route accepts LDS reads and writes when no LDS is declared", T_VERIFY),
    # ---- inspect
    Mutant("inspect-sgpr-spills", "pipelines/inspect.py",
           ' + (_metadata("sgpr_spill_count", text) or 0)', "",
           "spill count ignores SGPR spills", T_INSPECT),
    Mutant("inspect-occupancy-lds-per-workgroup", "pipelines/inspect.py",
           "workgroups_per_cu = target.lds_per_cu // stats.lds_bytes",
           "workgroups_per_cu = target.lds_bytes // stats.lds_bytes",
           "LDS occupancy from the per-workgroup limit, not the CU's (gfx1151 halves)", T_INSPECT),
    Mutant("inspect-agprs-ignored", "pipelines/inspect.py",
           "int(allocated.group(1)) if allocated else stats.vgpr_count", "stats.vgpr_count",
           "occupancy from vgpr_count, ignoring AGPRs of the unified file", T_INSPECT),
    Mutant("inspect-no-wave-cap", "pipelines/inspect.py",
           "waves = min(target.max_waves_per_simd, target.vgpr_file_per_lane // per_wave)",
           "waves = target.vgpr_file_per_lane // per_wave",
           "occupancy not capped at the target's maximum waves per SIMD", T_INSPECT),
    # ---- tune
    Mutant("tune-wrong-results-accepted", "pipelines/tune.py",
           'r["status"] == "ok" and (r.get("correct") or predicted)]', 'r["status"] == "ok"]',
           "tune accepts a fast candidate with a wrong result", T_TUNE),
    Mutant("tune-key-no-route", "pipelines/tune_cache.py",
           "search.route, search.device, search.limit]", '"compilation_info", search.device, search.limit]',
           "winners of every route share the cache key of compilation_info ones", T_TUNE),
    # ---- runner
    Mutant("runner-tolerance-min", "pipelines/reference.py",
           "math.sqrt(max(k, 1024) / 1024)", "math.sqrt(min(k, 1024) / 1024)",
           "tolerance stops growing with K (large K flagged wrong, small K too loose)", T_RUNNER),
    Mutant("runner-reference-nt-as-tn", "pipelines/reference.py",
           'b = swap(b) if problem["layout"] == "nt" else b', 'b = swap(b) if problem["layout"] == "tn" else b',
           "float64 reference transposes B for TN instead of NT", T_RUNNER),
    Mutant("runner-tolerance-10x", "pipelines/runner.py",
           'row["correct"] = error <= row["tolerance"]', 'row["correct"] = error <= 10 * row["tolerance"]',
           "correctness accepts ten times the tolerance", T_RUNNER),
    Mutant("runner-min-time", "pipelines/runner.py",
           "median = statistics.median(times_ms)", "median = min(times_ms)",
           "TFLOP/s from the fastest repetition instead of the median", T_RUNNER),
    Mutant("runner-wrong-result-ok", "pipelines/runner.py",
           'row["status"] = "wrong-result"', 'row["status"] = "ok"',
           "a wrong result keeps status ok", T_RUNNER),
    # ---- named pipelines and schedule arithmetic
    Mutant("auto-skinny-boundary", "pipelines/named.py",
           "if min(gemm.m, gemm.n) < SKINNY:", "if min(gemm.m, gemm.n) <= SKINNY:",
           "auto leaves M or N = 64 to IREE (skinny cut-off off by one)", T_NAMED),
    Mutant("auto-fill-strict", "pipelines/named.py",
           "if workgroups >= target.compute_units:", "if workgroups > target.compute_units:",
           "auto wants one workgroup more than the compute units", T_NAMED),
    Mutant("tuned-xcd-on-batch", "pipelines/named.py",
           '== "xcd" and (gemm.batched or min(', '== "xcd" and (min(',
           "tuned keeps the XCD order on batch matmuls", T_NAMED),
    Mutant("aligned-ignores-k", "transforms/schedule.py",
           "gemm.n % wn == 0 and gemm.k % k == 0", "gemm.n % wn == 0",
           "a tile is 'aligned' when K is not a multiple of its K step", T_NAMED),
    # ---- LDS swizzle
    Mutant("swizzle-mask-per-row", "transforms/lds_swizzle.py",
           "return (row // self.rows_per_line) % self.chunks", "return row % self.chunks",
           "XOR mask changes every row instead of every line of banks", T_SWIZZLE),
    Mutant("swizzle-emit-per-row", "transforms/lds_swizzle.py",
           "arith.RemUIOp(arith.DivUIOp(row, b.c(self.rows_per_line)).result, b.c(self.chunks))",
           "arith.RemUIOp(row, b.c(self.chunks))",
           "emitted swizzle IR disagrees with the checked Python model", T_SWIZZLE),
    Mutant("swizzle-rows-bytes", "transforms/lds_swizzle.py",
           "max(1, lds_banks * 4 // (k_tile * element_bytes))", "max(1, lds_banks // (k_tile * element_bytes))",
           "rows per line of banks counts banks, not bytes", T_SWIZZLE),
    # ---- emulator
    Mutant("emulator-signed-compare", "pipelines/emulator/machine.py",
           "w.scc = cmp(_signed32(a(w)), _signed32(b(w))).astype(np.uint64)",
           "w.scc = cmp(a(w), b(w)).astype(np.uint64)",
           "s_cmp_*_i32 compares unsigned", T_EMULATOR),
    Mutant("emulator-gfx11-lgkmcnt-field", "pipelines/emulator/memory.py",
           '"lgkmcnt": (raw >> 4) & 0x3F', '"lgkmcnt": (raw >> 8) & 0x3F',
           "gfx11 raw s_waitcnt reads lgkmcnt from the gfx9 bit position", T_EMULATOR),
    Mutant("emulator-gfx950-bf8-fnuz", "pipelines/emulator/matrix.py",
           '("bf8", True): ml_dtypes.float8_e5m2}', '("bf8", True): ml_dtypes.float8_e5m2fnuz}',
           "gfx950 bf8 decoded as FNUZ e5m2", T_EMULATOR),
    # ---- written after the tests above, without a test in mind (a check on how well the tests generalise)
    Mutant("hazard-barrier-count", "transforms/hazards.py",
           "if len(set(barriers)) > 1:", "if len(set(barriers)) > 2:",
           "groups executing different numbers of barriers pass when only two counts differ", T_HAZARDS),
    Mutant("hazard-store-before-fetch", "transforms/hazards.py",
           "if not fetched.get(_named(op), False):", "if _named(op) not in fetched:",
           "a store of fetched registers before the vmcnt wait that retires the fetch passes", T_HAZARDS),
    Mutant("verify-prefetch-count", "pipelines/verify.py",
           "expected = mma_per_k_step(schedule) * stages", "expected = mma_per_k_step(schedule) * (stages - 1)",
           "prefetch check expects one rotated K step too few", T_VERIFY_COMPILED),
    Mutant("verify-swizzle-kind", "pipelines/verify.py",
           "if len(hints) < wanted or any(h != ours for h in hints):", "if len(hints) < wanted:",
           "swizzle check counts hints without comparing their kind", T_VERIFY_COMPILED),
    Mutant("inspect-dma-double-counted", "pipelines/inspect.py",
           "    stats.global_loads -= stats.dma_loads\n", "",
           "direct-to-LDS loads also counted as loads into registers", T_INSPECT),
    Mutant("tune-one-missing-case", "pipelines/tune.py",
           "    if missing:", "    if len(missing) > 1:",
           "finalize picks a winner while one case is still unmeasured", T_TUNE),
    Mutant("runner-error-over-sum", "pipelines/runner.py",
           "max(1.0, float(np.abs(want).max()))", "max(1.0, float(np.abs(want).sum()))",
           "relative error divided by the sum of |C| instead of its maximum", T_RUNNER),
    Mutant("runner-gelu-erf", "pipelines/reference.py",
           "erf(x / math.sqrt(2.0))", "erf(x)",
           "GELU reference without the 1/sqrt(2)", T_RUNNER),
    Mutant("codegen-lanes-largest-k", "pipelines/routes/lanes.py",
           "mma = min(mmas, key=lambda name: mma_shape(name)[2])",
           "mma = max(mmas, key=lambda name: mma_shape(name)[2])",
           "ROCm lane route takes the 16x16 intrinsic with the largest K", T_NAMED),
    Mutant("swizzle-inverse-next-row", "transforms/lds_swizzle.py",
           "return ((column // self.chunk_elements) ^ self.mask(row))",
           "return ((column // self.chunk_elements) ^ self.mask(row + 1))",
           "inverse uses the next row's mask", T_SWIZZLE),
    Mutant("emulator-add-carry", "pipelines/emulator/machine.py",
           "a + b > MASK32)),", "a + b >= MASK32)),",
           "s_add_u32 sets SCC (carry) when the sum is exactly 2^32-1", T_EMULATOR),
    Mutant("emulator-sub-borrow", "pipelines/emulator/machine.py",
           "((a - b) & MASK32, b > a)),", "((a - b) & MASK32, b >= a)),",
           "s_sub_u32 sets SCC (borrow) when the operands are equal", T_EMULATOR),
    Mutant("emulator-movk-unsigned", "pipelines/emulator/machine.py",
           "value = ((src & 0xFFFF) ^ 0x8000) - 0x8000", "value = src & 0xFFFF",
           "s_movk_i32 zero-extends its 16-bit immediate", T_EMULATOR),
    Mutant("emulator-saveexec-new", "pipelines/emulator/machine.py",
           "write(w, old)  # SDST", "write(w, new)  # SDST",
           "s_and_saveexec saves the new EXEC instead of the old one", T_EMULATOR),
    # ---- a second batch written without a test in mind
    Mutant("inspect-partial-wave", "pipelines/inspect.py",
           "waves_per_workgroup = -(-stats.workgroup_size // stats.wave_size)",
           "waves_per_workgroup = stats.workgroup_size // stats.wave_size",
           "a workgroup's partial last wave is not counted for LDS occupancy", T_INSPECT),
    Mutant("inspect-lds-from-scratch", "pipelines/inspect.py",
           '_metadata("group_segment_fixed_size", text) or 0', '_metadata("private_segment_fixed_size", text) or 0',
           "LDS bytes read from the scratch (private segment) size", T_INSPECT),
    Mutant("auto-k-step-boundary", "pipelines/named.py",
           "if gemm.k >= 256 else mk", "if gemm.k > 256 else mk",
           "auto uses the intrinsic's K step at K = 256 exactly", T_NAMED),
    Mutant("emulator-mfma16-result-rows", "pipelines/emulator/matrix.py",
           "return (lanes // 16) * 4 + r, np.broadcast_to", "return (lanes // 16) + 4 * r, np.broadcast_to",
           "16x16 MFMA result rows interleaved wrongly across lane groups", T_EMULATOR),
    Mutant("emulator-mfma32-result-rows", "pipelines/emulator/matrix.py",
           "return (r // 4) * 8 + (lanes // 32) * 4 + r % 4,", "return (r // 4) * 4 + (lanes // 32) * 8 + r % 4,",
           "32x32 MFMA result rows: lane group and register block swapped", T_EMULATOR),
    Mutant("schedule-pad-per-column", "transforms/schedule.py",
           "total += sum(rows for rows, _ in tiles) * LDS_ROW_PADDING_BYTES",
           "total += sum(cols for _, cols in tiles) * LDS_ROW_PADDING_BYTES",
           "LDS plan pads per column instead of per row", T_SCHEDULE),
    Mutant("schedule-dma-stages", "transforms/schedule.py",
           "total *= max(1, schedule.staging.prefetch_stages)", "total *= 1",
           "LDS plan forgets one buffer per direct-to-LDS stage", T_SCHEDULE),
    Mutant("hazard-inflight-until-end", "transforms/hazards.py",
           "done += [Access(group, _named(o), o.kind in (\"load\", \"store\"), first, end, o)",
           "done += [Access(group, _named(o), o.kind in (\"load\", \"store\"), first, first, o)",
           "an access never waited for is assumed to finish in its issue epoch", T_HAZARDS),
    # ---- tuning spec
    Mutant("spec-batch-unmatched", "transforms/tuning_spec.py",
           "match.MatchDimsEqualOp(batch, [gemm.batch])", "pass",
           "tuning-spec matcher ignores the batch size", T_SPEC),
    # ---- blind batch: written by a second engineer who had not read the boundary tests, run before any test was
    # added for them (their first result is recorded in results/mutation/; see the README)
    Mutant("blind-hazard-fetch-first-retired", "transforms/hazards.py",
           "if not any(q[0] is issued for q in vm):", "if True:",
           "a fetch counts as complete in registers when its first instruction retires", T_HAZARDS),
    Mutant("blind-hazard-store-as-read", "transforms/hazards.py",
           'issued.kind in ("load", "store"), first, epoch, issued))', 'issued.kind == "load", first, epoch, issued))',
           "LDS stores of register-staged fills are treated as reads by the race check", T_HAZARDS),
    Mutant("blind-emulator-buffer-range-inclusive", "pipelines/emulator/memory.py",
           "inside = (byte_offsets < records[:, None]) & w.exec[:, None]",
           "inside = (byte_offsets <= records[:, None]) & w.exec[:, None]",
           "a buffer byte at offset == num_records is read instead of returning 0", T_EMULATOR),
    Mutant("blind-emulator-bank-broadcast", "pipelines/emulator/memory.py",
           "unique = np.unique(keys)  #", "unique = keys  #",
           "LDS broadcast (several lanes reading one dword) counted as a bank conflict", T_EMULATOR),
    Mutant("blind-emulator-dma-offset", "pipelines/emulator/memory.py",
           "np.uint64(0x3FFFF)).astype(np.int64) + inst_offset", "np.uint64(0x3FFFF)).astype(np.int64)",
           "direct-to-LDS loads ignore the instruction offset for their LDS destination", T_EMULATOR),
    # ---- the batched engine, wait states, soffset and localisation (issue 15, this round)
    Mutant("emulator-batch-readlane-row0", "pipelines/emulator/floats.py",
           "write(w, values[np.arange(w.batch), chosen])", "write(w, values[0, chosen])",
           "v_readlane in a batch reads the first workgroup's lane for every workgroup", T_BATCH),
    Mutant("emulator-batch-branch-any", "pipelines/emulator/machine.py",
           "        if taken.all():\n            w.pc = target", "        if taken.any():\n            w.pc = target",
           "a batch takes a branch when any of its workgroups does, instead of forking", T_BATCH),
    Mutant("emulator-waitstates-srcab-short", "pipelines/emulator/waitstates.py",
           "    return p.passes + 3 + _xdl_extra(family, p.passes)",
           "    return p.passes + 2 + _xdl_extra(family, p.passes)",
           "an MFMA result read as SrcA/B needs one wait state fewer than the table says", T_WAITSTATES),
    Mutant("emulator-buffer-soffset-checked", "pipelines/emulator/memory.py",
           "offset = (np.broadcast_to(voffset(w), (w.lanes,)).astype(np.int64) + inst_offset) & 0xFFFFFFFF",
           "offset = (np.broadcast_to(voffset(w), (w.lanes,)).astype(np.int64) + inst_offset\n"
           "                  + w.spread(sofs(w)).astype(np.int64)) & 0xFFFFFFFF",
           "the buffer range check counts soffset", T_EMULATOR),
    Mutant("emulator-localise-reference-latency", "pipelines/emulator/memory.py",
           'if getattr(w.workgroup, "immediate", False):', "if False:",
           "the reference re-execution keeps the memory latency model", T_LOCALISE),
    Mutant("blind-inspect-lds-round-up", "pipelines/inspect.py",
           "workgroups_per_cu = target.lds_per_cu // stats.lds_bytes",
           "workgroups_per_cu = -(-target.lds_per_cu // stats.lds_bytes)",
           "LDS occupancy rounds the workgroups per CU up", T_INSPECT),
    Mutant("blind-inspect-next-free-vgpr", "pipelines/inspect.py",
           "stats.allocated_vgprs = int(allocated.group(1)) if allocated else stats.vgpr_count",
           "stats.allocated_vgprs = stats.vgpr_count",
           "occupancy from the metadata VGPR count, ignoring the allocated (next free) VGPRs", T_INSPECT),
    Mutant("blind-schedule-k-multiple", "transforms/schedule.py",
           "if tile.k <= 0 or tile.k % mk:", "if tile.k <= 0:",
           "a K tile that is not a multiple of the intrinsic's K is accepted", T_SCHEDULE),
    Mutant("blind-schedule-tile-over-problem", "transforms/schedule.py",
           "        if size > limit:", "        if size > 2 * limit:",
           "a tile up to twice the problem is accepted", T_SCHEDULE),
    Mutant("blind-schedule-threads-limit", "transforms/schedule.py",
           "if threads > target.max_workgroup_threads:", "if threads >= target.max_workgroup_threads:",
           "a workgroup of exactly the maximum thread count is refused", T_SCHEDULE),
    Mutant("blind-schedule-registers", "transforms/schedule.py",
           "if regs > target.vgprs_per_lane:", "if regs > 2 * target.vgprs_per_lane:",
           "the accumulator register budget is doubled", T_SCHEDULE),
    Mutant("blind-runner-error-floor", "pipelines/runner.py",
           "/ max(1.0, float(np.abs(want).max())))", "/ max(100.0, float(np.abs(want).max())))",
           "relative error divided by at least 100 (small results pass with large errors)", T_RUNNER),
    Mutant("blind-runner-resume-wrong-result", "pipelines/runner.py",
           'return row.get("status") == "ok" and (row.get("correct") is True or row.get("predicted") is True)',
           'return row.get("status") == "ok"',
           "resume counts an ok row without a correctness verdict as done", ("tests/unit/test_output.py",)),
    Mutant("blind-output-force-ignored", "pipelines/output.py",
           "if manifest is None and not force:",
           "if manifest is None:",
           "--force does not admit a user's folder", ("tests/unit/test_output.py",)),
    # ---- the named-pipeline sweep's rules (issue 12, items 4 and 5), written with their tests
    Mutant("schedule-pipelined-two-steps", "transforms/schedule.py",
           "MIN_PIPELINED_K_STEPS = 3", "MIN_PIPELINED_K_STEPS = 2",
           "two K steps are taken as pipelined (IREE keeps one stage there)", T_NAMED),
    Mutant("schedule-dma-padded", "transforms/schedule.py",
           "if schedule.staging.direct_to_lds and not aligned(schedule, gemm):",
           "if schedule.staging.direct_to_lds and False:",
           "direct-to-LDS loads accepted on padded tiles (IREE loads through registers there)", T_NAMED),
    Mutant("named-cuda-underfill", "pipelines/named.py",
           "                < target.compute_units)):", "                < 0)):",
           "tuned keeps a CUDA tile that leaves SMs idle", T_NAMED),
    Mutant("named-codegen-min-kept", "pipelines/routes/codegen.py",
           "if kept is not None and kept[1] < CODEGEN_MIN_KEPT:",
           "if kept is not None and kept[1] <= CODEGEN_MIN_KEPT:",
           "codegen refuses NT at M = 512 too", T_NAMED),
    Mutant("named-fp8-padded-across", "pipelines/named.py",
           "(not a_k and gemm.m % tile[0]) or (not b_k and gemm.n % tile[1])",
           "(not a_k and gemm.m % tile[0]) and (not b_k and gemm.n % tile[1])",
           "fp8 spill rule needs both operands padded across (misses NN and TN)", T_NAMED),
    Mutant("named-gfx950-fp8-k-steps", "pipelines/targets.py",
           "fp8_256_min_k_steps=8),", "fp8_256_min_k_steps=6),",
           "gfx950 fp8 256x256 kept at 6 and 7 K steps (spilled at 6: K 768)", T_NAMED),
    Mutant("cu-waitcnt-one-more", "pipelines/timing/cu.py",
           "if op.wait_vm is not None and self._outstanding(w.vm, t) > op.wait_vm:",
           "if op.wait_vm is not None and self._outstanding(w.vm, t) >= op.wait_vm:",
           "the timing model's vmcnt(N) waits until N-1 loads are outstanding", T_TIMING),
    Mutant("cu-accumulate-full-latency", "pipelines/timing/cu.py",
           "if w.acc_ready.get(reg, w.reg_ready.get(reg, 0)) > t:", "if w.reg_ready.get(reg, 0) > t:",
           "an MFMA accumulating into the previous one's D waits the full read latency", T_TIMING),
    Mutant("cu-setprio-ignored", "pipelines/timing/cu.py",
           "for w in sorted(candidates, key=lambda w: (-w.prio, w.id)):",
           "for w in sorted(candidates, key=lambda w: w.id):",
           "the arbiter ignores s_setprio", T_TIMING),
    Mutant("cu-barrier-free", "pipelines/timing/cu.py",
           "v.ready_at = t + timing.barrier_latency", "v.ready_at = t",
           "a barrier releases its waves at once", T_TIMING),
    Mutant("cu-lds-passes-ignored", "pipelines/timing/cu.py",
           "passes = w.lds_passes[w.lds_index] if w.lds_index < len(w.lds_passes) else 1",
           "passes = 1",
           "LDS bank conflicts cost nothing in the timing model", T_TIMING),
    Mutant("targets-gap-range", "pipelines/targets.py",
           "and self.m[0] <= gemm.m <= self.m[1] and", "and self.m[0] < gemm.m <= self.m[1] and",
           "the lower end of a compiler gap's M range is compiled (iree-compile fails there)",
           ("tests/unit/test_messages.py",)),
    Mutant("verify-raster-both-ids", "pipelines/verify.py",
           "off = [ids for ids in copies if not (ids >= m_ids or ids >= n_ids)]",
           "off = [ids for ids in copies if not ids >= {\"x\", \"y\"}]",
           "raster verification asks every copy for both block ids (fails 3072x2048x1024)",
           ("tests/unit/test_codegen.py",)),
    Mutant("bench-shared-kernel-copied-on-failure", "pipelines/runner.py",
           'if shared is not None and shared.get("status") == "ok" and shared.get("correct") is True:\n'
           '        row.update(',
           "if shared is not None:\n        row.update(",
           "a case copies a failed shared measurement instead of running", ("tests/unit/test_bench.py",)),
    Mutant("blind-output-user-folder-admitted", "pipelines/output.py",
           "if not folder.is_dir() or not any(folder.iterdir()):",
           "if not folder.is_dir() or any(folder.iterdir()):",
           "a non-empty user folder is admitted without --force", ("tests/unit/test_output.py",)),
    # ---- issue 16 (split-K) and 17 (models)
    Mutant("split-sum-not-checked", "pipelines/routes/split.py",
           "if not any(dims[-1] == split.splits for dims in sums):", "if False:",
           "split-K passes without a dispatch summing the slices", ("tests/unit/test_split_kernels.py",)),
    Mutant("split-config-any-dispatch", "pipelines/routes/split.py",
           'if "lowering_config" in op.attributes and str(op.attributes["lowering_config"]) == lowering:',
           'if "lowering_config" in op.attributes:',
           "split-K takes any configured op as the partial products whatever its configuration",
           ("tests/unit/test_split_kernels.py",)),
    Mutant("split-rule-no-nt-exception", "pipelines/named.py",
           'if gemm.m < SPLIT_TILES[0][0][0] and gemm.layout == "nt":', 'if False:',
           "the rule no longer leaves M < 16 with B stored NxK to IREE's matvec",
           ("tests/unit/test_split_kernels.py",)),
    Mutant("split-sum-bound-drops-terms", "pipelines/emulator/interpret.py",
           "terms = math.prod(loops[i] for i in reduced)", "terms = 1",
           "the float64 reference's bound for the sum of partial products ignores the number of terms",
           ("tests/unit/test_split_kernels.py",)),
    Mutant("model-transpose-not-folded", "pipelines/request.py",
           "not named.codegen and spec_reads_dispatches(target))", "False)",
           "compile --input schedules the source's ops, not what IREE dispatches (the folded Q·Kᵀ is missed)",
           ("tests/unit/test_model_input.py",)),
    Mutant("model-other-dispatch-unchecked", "pipelines/tune_model.py",
           "            twin = unpaired.pop(0) if unpaired else None",
           "            twin = next((n for names in default_others.values() for n in names), None)",
           "tune-model no longer proves the other dispatches unchanged", ("tests/unit/test_model_input.py",)),
    Mutant("model-consumer-config-unchecked", "pipelines/routes/model.py",
           "            if size % config.elements:\n", "            if True:\n",
           "the model route no longer checks that the split-out consumers carry the library's configuration",
           ("tests/unit/test_model_input.py",)),
    Mutant("model-contractions-not-isolated", "transforms/problem.py",
           "        if _gemm_of(op, source).with_(epilogue=Epilogue()) not in keep:",
           "        if True:",
           "library contractions stay fused with their consumers (the library kernel then matches nothing)",
           ("tests/unit/test_model_input.py",)),
    Mutant("model-renumbering-ignores-everything", "pipelines/tune_model.py",
           '    return re.sub(r"dispatch_\\d+", "dispatch_N", text)', '    return ""',
           "the comparison with the default compile sets aside the whole configured IR",
           ("tests/unit/test_model_input.py",)),
    Mutant("model-transpose-rule-dropped", "pipelines/routes/model.py",
           'if getattr(producer, "name", "") == "linalg.transpose" and size < CODEGEN_MIN_KEPT:',
           "if False:",
           "a small product whose operand the program transposes still goes through the library",
           ("tests/unit/test_model_input.py",)),
    Mutant("cluster-more-retries", "pipelines/cluster.py",
           "ALLOWED_FAILURES = 1 ", "ALLOWED_FAILURES = 3 ",
           "a task whose worker dies is run three more times instead of once", ("tests/unit/test_cluster.py",)),
    Mutant("cluster-rows-unchecked", "pipelines/cluster.py",
           '    if not isinstance(row, dict):\n        raise ClusterError', '    if False:\n        raise ClusterError',
           "a worker's row is no longer checked to be a JSON object", ("tests/unit/test_cluster.py",)),
    Mutant("cluster-listens-everywhere", "pipelines/cluster.py",
           'common = {"host": "127.0.0.1"', 'common = {"host": "0.0.0.0"',
           "a local cluster's workers listen on every interface", ("tests/unit/test_cluster.py",)),
    Mutant("model-link-order", "transforms/tuning_spec.py",
           "            for name, _ in specs:\n                root = transform.IncludeOp",
           "            for name, _ in reversed(specs):\n                root = transform.IncludeOp",
           "a linked user spec runs after the project's, so its ops lose to ours", ("tests/unit/test_model_input.py",)),
    Mutant("worker-env-per-case", "pipelines/runner.py",
           "    if device not in _WORKER_ENV:", "    if True:",
           "a GPU worker reads nvidia-smi for every case again", ("tests/unit/test_cluster.py",)),
    Mutant("hopper-wgmma-count-unchecked", "transforms/hopper.py",
           '"wgmma per K tile": bool(groups) and all(n == per_tile for n in groups),',
           '"wgmma per K tile": bool(groups),',
           "the PTX check no longer counts the wgmma of a K tile", ("tests/unit/test_hopper.py",)),
    Mutant("hopper-parity-wait-exact", "transforms/hopper_protocol.py",
           "(state.barriers[_key(step)].phase & 1) != step.parity",
           "state.barriers[_key(step)].phase > step.parity",
           "the protocol checker's parity wait no longer passes for a phase two ahead (as the hardware's does)",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-stage-read-unchecked", "transforms/hopper_protocol.py",
           "if busy or any(held.get(p) != step.q for p in ctas):", "if busy:",
           "the protocol checker lets a consumer read a stage that holds another step's data",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-emitted-empty-parity", "transforms/hopper.py",
           'wait(bar(1, stage), parity_of(b.arith("addi", use, i64(1), "i64")))', "wait(bar(1, stage), parity_of(use))",
           "the generated producer waits for the stage's current use to be released, not the previous one",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-emitted-order-parity", "transforms/hopper.py",
           'wait(bar(2, g64), parity_of(b.arith("subi", turn, b.arith("subi", i64(1), g64, "i64"), "i64")))',
           "wait(bar(2, g64), parity_of(turn))",
           "the generated ping-pong consumer waits for the wrong phase of its turn barrier",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-pingpong-box", "transforms/hopper.py",
           'return self.block_m if self.kind == "pingpong" else self.block_m // self.consumers',
           "return self.block_m // self.consumers",
           "a ping-pong consumer takes half a tile's rows, as a cooperative one does",
           ("tests/unit/test_hopper.py", "tests/unit/test_hopper_protocol.py")),
    Mutant("hopper-cluster-release-own-rank", "transforms/hopper.py",
           "targets = [i32(i) for i in range(s.cluster_m)]",
           "targets = [i32(0)]",
           "a cluster's consumers release a stage in workgroup 0 only, not in every workgroup whose loads fill it",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-empty-count-one-workgroup", "transforms/hopper.py",
           'nvvm.mbarrier.init {bar(1, i64(index))}, {i32(s.empty_arrivals)}',
           'nvvm.mbarrier.init {bar(1, i64(index))}, {i32(s.stage_readers)}',
           "a cluster's `empty` barriers expect the arrivals of their own workgroup only",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-release-every-thread", "transforms/hopper.py",
           'b.op(f"scf.if {leader} {{")\n        if s.cluster_tiles == 1:',
           'b.op(f"scf.if {b.const(1, \'i1\')} {{")\n        if s.cluster_tiles == 1:',
           "every consumer thread releases a stage, 128 arrivals on a barrier that expects one per warp group",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-cluster-same-row", "transforms/hopper.py",
           'row = b.arith("addi", b.arith("muli", row, i32(s.cluster_m), "i32"), rank_m, "i32")',
           'row = b.arith("muli", row, i32(s.cluster_m), "i32")',
           "both workgroups of a cluster take the same block row",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-grid-every-sm", "transforms/hopper.py",
           "    return _ceil(units, rounds) * s.cluster_tiles",
           "    return min(units, SM_COUNT // s.cluster_tiles) * s.cluster_tiles",
           "a persistent grid takes every SM although fewer take the tiles in as few rounds",
           ("tests/unit/test_hopper.py",)),
    # ---- issue 29: the Hopper generator and protocol checker (oracle tests)
    # The four Hopper survivors of the blind probe, then bugs of the same kinds chosen here.
    Mutant("hopper-expect-tx-own-share", "transforms/hopper.py",
           "{i32(bytes_a + bytes_b)}", "{i32(bytes_a + bytes_b // s.cluster_m)}",
           "a cluster workgroup's full barrier expects its own share of B, not every workgroup's multicast share "
           "(a hang on the GPU)", T_HOPPER_ORACLES),
    Mutant("hopper-epilogue-guard-block-m", "transforms/hopper.py",
           'end_n = b.arith("muli", b.arith("addi", col, i32(1), "i32"), i32(s.block_n), "i32")',
           'end_n = b.arith("muli", b.arith("addi", col, i32(1), "i32"), i32(s.block_m), "i32")',
           "the epilogue's tile-inside test ends a block column at block_m (unguarded stores past N)",
           T_HOPPER_ORACLES),
    Mutant("hopper-tile-order-ignores-cluster", "transforms/hopper.py",
           "group = max(1, s.group_m // s.cluster_m)", "group = s.group_m",
           "the tile order counts group_m in cluster rows (groups of group_m x cluster_m block rows)",
           T_HOPPER_ORACLES),
    Mutant("hopper-protocol-reads-own-part", "transforms/hopper_protocol.py",
           "        busy = any((step.cta, stage, p) in state.loading for p in ctas)\n"
           "        if busy or any(held.get(p) != step.q for p in ctas):\n",
           "        busy = (step.cta, stage, step.cta) in state.loading\n"
           "        if busy or held.get(step.cta) != step.q:\n",
           "the protocol checker looks only at its own workgroup's part of a multicast stage",
           ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-protocol-load-own-readers", "transforms/hopper_protocol.py",
           "            if state.readers.get((cta, stage)):", "            if state.readers.get((step.cta, stage)):",
           "the protocol checker looks for readers of a stage only in the loading workgroup, not in every "
           "workgroup its multicast lands in", ("tests/unit/test_hopper_protocol.py",)),
    Mutant("hopper-multicast-last-rank", "transforms/hopper.py",
           'b.const((1 << s.cluster_m) - 1, "i16")', 'b.const(1 << (s.cluster_m - 1), "i16")',
           "B's share is multicast to the cluster's last workgroup only (mask 1 << (cluster_m - 1))",
           T_HOPPER_ORACLES),
    # clusters along N (cluster_n): A's share, its multicast to the row, the releases to the row's workgroup
    Mutant("hopper-2d-release-column-only", "transforms/hopper.py",
           '                targets.append(b.arith("xori", rank, i32(s.cluster_m), "i32"))\n', "",
           "a 2x2 cluster's consumers release a stage in their block column only, not in the row partner whose "
           "share of A lands in it", ("tests/unit/test_hopper_protocol.py",) + T_HOPPER_ORACLES),
    Mutant("hopper-2d-a-share-same-offset", "transforms/hopper.py",
           'offset_a = b.arith("muli", b.op(f"arith.extui {rank_n} : i32 to i64", "r"), i64(bytes_a // s.cluster_n),',
           'offset_a = b.arith("muli", b.op(f"arith.extui {rank_n} : i32 to i64", "r"), i64(0),',
           "both workgroups of a cluster row put their share of A at the start of the stage's A",
           ("tests/unit/test_hopper_protocol.py",) + T_HOPPER_ORACLES),
    Mutant("hopper-2d-row-mask-unshifted", "transforms/hopper.py",
           'row_mask = b.arith("shli", row_mask, b.op(f"arith.trunci {rank_m} : i32 to i16", "sh"), "i16")',
           "pass", "A's share is multicast to cluster row 0's workgroups whatever the loading workgroup's row",
           ("tests/unit/test_hopper_protocol.py",) + T_HOPPER_ORACLES),
    Mutant("hopper-active-clusters-ignored", "transforms/hopper.py",
           "    return min(SM_COUNT // size, MAX_ACTIVE_CLUSTERS.get(size, SM_COUNT))",
           "    return SM_COUNT // size",
           "a persistent grid of 2x2 clusters is sized for 33 clusters where 30 run at once (the rest a second wave)",
           ("tests/unit/test_hopper.py",)),
    Mutant("hopper-2d-b-mask-by-column-index", "transforms/hopper.py",
           'at = b.op(f"arith.trunci {b.arith(\'muli\', rank_n, i32(s.cluster_m), \'i32\')} : i32 to i16", "sh")',
           'at = b.op(f"arith.trunci {rank_n} : i32 to i16", "sh")',
           "B's multicast mask in a 2x2 cluster is shifted by the block column, not by its first rank",
           ("tests/unit/test_hopper_protocol.py",) + T_HOPPER_ORACLES),
    Mutant("hopper-2d-empty-count-whole-cluster", "transforms/hopper.py",
           "return self.stage_readers * (self.cluster_m + self.cluster_n - 1)",
           "return self.stage_readers * self.cluster_m * self.cluster_n",
           "a 2x2 cluster's `empty` barriers wait for all four workgroups' releases, three of which arrive",
           ("tests/unit/test_hopper_protocol.py",) + T_HOPPER_ORACLES),
    Mutant("hopper-serpentine-even-tiles", "transforms/hopper.py",
           'odd = b.arith("andi", b.op("arith.index_cast %pi : index to i64", "t"), i64(1), "i64")',
           'odd = b.arith("subi", i64(1), b.arith("andi", b.op("arith.index_cast %pi : index to i64", "t"), i64(1), '
           '"i64"), "i64")',
           "serpentine K reverses a workgroup's even tiles (its first one included) instead of its odd ones",
           T_HOPPER_ORACLES),
    # stream-K (HopperSchedule.stream_k): the split, the K steps of a cut unit's part, the slot of its partial
    Mutant("hopper-streamk-one-round-more", "transforms/hopper.py",
           "    rounds = units // clusters - 1\n", "    rounds = units // clusters\n",
           "stream-K keeps every whole round, leaving runs shorter than a unit (a unit cut in three)",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-streamk-part-from-k0", "transforms/hopper.py",
           "        kt64 = b.arith(\"addi\", kt64, b.op(f\"arith.extui {item['first']} : i32 to i64\", \"f\"), "
           "\"i64\")",
           "        pass",
           "the second part of a cut unit loads K from step 0 instead of from its first step",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-streamk-publish-own-slot", "transforms/hopper.py",
           "    slot = b.arith(\"subi\", unit, b.op(f\"arith.extui {published} : i1 to i32\", \"p\"), \"i32\")",
           "    slot = unit",
           "a cut unit's publisher writes its partial and flag into its own cluster's slot, not the owner's",
           ("tests/unit/test_hopper_streamk.py",)),
    # probe 29's survivors (stream-K)
    Mutant("hopper-streamk-flag-stride", "transforms/hopper.py",
           'return at, b.arith("addi", flags_base, b.arith("muli", index64, i64(4), "i64"), "i64")',
           'return at, b.arith("addi", flags_base, b.arith("muli", index64, i64(8), "i64"), "i64")',
           "stream-K's i32 flags addressed 8 bytes apart (past the end of the flags operand)",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-streamk-ring-base-per-unit", "transforms/hopper.py",
           'based = b.arith("addi", b.arith("subi", start, ska, "i32"), i32(streamk.rounds * k_tiles), "i32")',
           'based = b.arith("addi", b.arith("subi", start, low, "i32"), i32(streamk.rounds * k_tiles), "i32")',
           "each part after the whole rounds restarts the stage ring at the same step (stages and phases collide)",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-streamk-last-release-whole-unit", "transforms/hopper.py",
           'last = b.const(k_tiles - 1, "index") if streamk is None else b.arith("subi", citem["bound"], c1, "index")',
           'last = b.const(k_tiles - 1, "index")',
           "a part's consumers release the stage of a whole unit's last step, not of the part's",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-streamk-check-no-wait", "transforms/hopper.py",
           "partials[0] == partials[1] == elements and partials[2] >= 1 and partials[3] == 1",
           "partials[0] == partials[1] == elements and partials[2] >= 0 and partials[3] == 1",
           "check_ptx accepts a stream-K kernel whose owner never waits for the flag",
           ("tests/unit/test_hopper_streamk.py",)),
    Mutant("hopper-check-ptx-2d-releases", "transforms/hopper.py",
           "and remote >= sites * len(schedule.partners(0)) and remote % len(schedule.partners(0)) == 0)",
           "and remote >= sites * schedule.cluster_m and remote % schedule.cluster_m == 0)",
           "check_ptx counts a 2x2 cluster's releases as if each went to its column only (probe 28's survivor)",
           ("tests/unit/test_hopper.py",)),
    Mutant("hopper-nn-boxes-same-columns", "transforms/hopper.py",
           'column = b.arith("addi", row_b, i32(j * NN_BOX), "i32")', "column = row_b",
           "every 64-column TMA box of an NN B tile loads the tile's first 64 columns", T_HOPPER_ORACLES),
    Mutant("hopper-no-mbarrier-init-fence", "transforms/hopper.py",
           '    b.op("nvvm.fence.mbarrier.init")\n', "",
           "the barriers' initialisation is not fenced before the cluster barrier publishes them",
           T_HOPPER_ORACLES),
    Mutant("hopper-refill-wait-off-by-one", "transforms/hopper.py",
           "arith.cmpi uge, {q}, {stages} : i64", "arith.cmpi ugt, {q}, {stages} : i64",
           "the producer refills a stage for the first time (step == stages) without waiting for its release",
           T_HOPPER_ORACLES),
    Mutant("hopper-epilogue-before-drain", "transforms/hopper.py",
           'b.op("nvvm.wgmma.wait.group.sync.aligned 0")', 'b.op("nvvm.wgmma.wait.group.sync.aligned 1")',
           "the epilogue reads the accumulators with the last wgmma group still in flight", T_HOPPER_ORACLES),
    Mutant("hopper-row-guard-inclusive", "transforms/hopper.py",
           'in_m = b.op(f"arith.cmpi ult, {row_}, {m_} : i32", "in")',
           'in_m = b.op(f"arith.cmpi ule, {row_}, {m_} : i32", "in")',
           "the epilogue's row guard stores row M (one past the problem)", T_HOPPER_ORACLES),
    Mutant("hopper-a-rows-in-elements", "transforms/hopper.py",
           'i64(s.block_k * 2), "i64")', 'i64(s.block_k), "i64")',
           "a cooperative consumer's A rows offset counted in elements, not bytes (consumer 1 reads rows 32-95)",
           T_HOPPER_ORACLES),
    Mutant("hopper-tile-count-rounds-up-twice", "transforms/hopper.py",
           "i32(work + grid - 1)", "i32(work + grid)",
           "a persistent workgroup's tile count rounds up once too often (some take a tile twice or one past the "
           "grid)", T_HOPPER_ORACLES),
    # ---- issue 29: timing model, split-K, model route and mixing guard (oracle tests)
    # split rule over every M, the device's compute units, sparse MFMAs (SMFMAC) in the emulator
    Mutant("split-rule-tile-taller-than-m", "pipelines/named.py",
           "[row for row in _split_rows(target) if row[0][0] <= gemm.m][-1]",
           "[row for row in _split_rows(target) if row[0][0] <= gemm.m + 16][-1]",
           "the split rule rounds M up before choosing a tile: M = 48-63 take a 64-row tile IREE refuses",
           ("tests/unit/test_split_rule_sweep.py",)),
    Mutant("split-rule-ignores-device-count", "pipelines/named.py",
           "units = units or target.units()", "units = target.units()",
           "the split rule fills the target table's compute units even where the device's count is known",
           ("tests/unit/test_split_rule_sweep.py",)),
    Mutant("device-units-largest-count", "pipelines/device_units.py",
           "count = min(c for c, _ in found)", "count = max(c for c, _ in found)",
           "several --device GPUs: the rule fills the largest one's compute units, leaving the smaller's idle",
           ("tests/unit/test_split_rule_sweep.py",)),
    Mutant("smfmac-index-fields-swapped", "pipelines/emulator/matrix.py",
           "shift = (index_set * shape.window + 2 * field[0]).astype(np.uint32)",
           "shift = (index_set * shape.window + 2 * (field[0] ^ 1)).astype(np.uint32)",
           "a sparse MFMA reads the first stored value's position from the second 2-bit field and back",
           ("tests/unit/test_smfmac_layouts.py",)),
    Mutant("smfmac-abid-ignored", "pipelines/emulator/matrix.py",
           "index_set = abid if cbsz == 0 else 0", "index_set = 0",
           "a sparse MFMA always reads the first index set whatever ABID names",
           ("tests/unit/test_smfmac_layouts.py",)),
    Mutant("smfmac-index-as-srcc", "pipelines/emulator/waitstates.py",
           "for o in (ops[1], ops[2], ops[0], ops[3]))", "for o in (ops[1], ops[2], ops[3], ops[0]))",
           "the wait-state table takes a sparse MFMA's index for SrcC and misses its accumulator's hazards",
           ("tests/unit/test_emulator_waitstates.py",)),
    Mutant("mul-hi-u24-low-bits", "pipelines/emulator/machine.py",
           ">> np.uint64(32)).astype(np.uint32),", ">> np.uint64(24)).astype(np.uint32),",
           "v_mul_hi_u32_u24 returns bits 55:24 of the product instead of 63:32",
           ("tests/unit/test_emulator_audit.py",)),
    # `calibrate`: its CSV's refusals, the workers sized by memory, a dead worker
    Mutant("calibrate-nan-time", "pipelines/timing/calibrate.py",
           "if not (math.isfinite(time_us) and time_us > 0):", "if time_us <= 0:",
           "calibrate reads nan and inf times and prints a median of nan", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-zero-time", "pipelines/timing/calibrate.py",
           "if not (math.isfinite(time_us) and time_us > 0):", "if not (math.isfinite(time_us) and time_us >= 0):",
           "calibrate reads a time of zero (an error of infinity)", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-row-line", "pipelines/timing/calibrate.py",
           "for (line, _), (number, row) in zip(kept[1:], enumerate(rows, 1)):",
           "for (line, _), (number, row) in zip(kept, enumerate(rows, 1)):",
           "a refused row names the line before it (the header counted as a row)", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-folder-csv", "pipelines/timing/calibrate.py",
           "    if path.is_dir():\n", "    if path.is_dir() and path.suffix == \".csv\":\n",
           "--csv FOLDER says the file does not exist", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-workers-ignore-memory", "pipelines/timing/calibrate.py",
           "count = min(wanted, fits)", "count = wanted",
           "the default workers are one per core whatever the memory holds (the OOM of issue 29)",
           ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-workers-parent-forgotten", "pipelines/timing/calibrate.py",
           "fits = (available - ROW_BASE_BYTES) // largest", "fits = available // largest",
           "the workers' memory bound forgets the parent process", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-request-boundary", "pipelines/timing/calibrate.py",
           "if requested is not None and requested > fits:", "if requested is not None and requested >= fits:",
           "--workers N is refused where exactly N fit", ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-dead-worker-traceback", "pipelines/timing/calibrate.py",
           "    except BrokenProcessPool:\n", "    except BrokenPipeError:\n",
           "a worker killed for memory ends calibrate in a BrokenProcessPool traceback",
           ("tests/unit/test_calibrate.py",)),
    Mutant("calibrate-peak-ignores-output", "pipelines/timing/calibrate.py",
           "OUTPUT_BYTES * int(fields[\"M\"]) * int(fields[\"N\"])", "OUTPUT_BYTES * int(fields[\"M\"])",
           "a row's memory estimate leaves out its output (M x N)", ("tests/unit/test_calibrate.py",)),
    # The eight survivors of the blind probe in this code, then bugs of the same kinds chosen here.
    Mutant("output-mark-owner-only", "pipelines/output.py",
           "return FILE_MARK.encode() in handle.read(MARK_BYTES)", "return OWNER.encode() in handle.read(MARK_BYTES)",
           "a file that names the tool's owner passes for one the tool wrote", ("tests/unit/test_output_mark.py",)),
    Mutant("timing-vmem-clocks-floored", "pipelines/timing/cu.py",
           "self.vmem.serve(t, -(-op.bytes // timing.vmem_bytes_per_clk))",
           "self.vmem.serve(t, op.bytes // timing.vmem_bytes_per_clk)",
           "a VMEM transfer's clocks rounded down (a part-clock transfer is free)",
           ("tests/unit/test_timing_oracles.py",)),
    Mutant("timing-rounds-floored", "pipelines/timing/predict.py",
           "rounds = -(-per_cu // resident)", "rounds = max(1, per_cu // resident)",
           "a partial round of resident workgroups costs nothing", ("tests/unit/test_timing_oracles.py",)),
    Mutant("split-partial-whole-k", "pipelines/timing/predict.py",
           "shapes = (dict(problem, batch=batch * splits, k=-(-k // splits)), problem)",
           "shapes = (dict(problem, batch=batch * splits, k=k), problem)",
           "a split-K program's partial products extrapolated over the whole K, not K/S",
           ("tests/unit/test_timing_oracles.py",)),
    Mutant("mixing-guard-ok-rows-only", "pipelines/runner.py",
           'for row in rows if row.get("status") not in NOT_RUN}', 'for row in rows if row.get("status") == "ok"}',
           "the predicted/measured guard counts only the rows that succeeded", ("tests/unit/test_result_kinds.py",)),
    Mutant("split-rule-boundary-equal", "pipelines/named.py",
           "if tiles >= DATA_PARALLEL_WAVES * units.count:", "if tiles > DATA_PARALLEL_WAVES * units.count:",
           "the split rule splits a grid of exactly two workgroups per compute unit",
           ("tests/unit/test_split_oracles.py",)),
    Mutant("split-slice-check-whole-k", "transforms/split_k.py",
           "if (gemm.k // s) % tile.k:", "if gemm.k % tile.k:",
           "the slice check tests K, not each slice, for whole K steps", ("tests/unit/test_split_oracles.py",)),
    Mutant("model-transpose-m-n-swapped", "pipelines/routes/model.py",
           '(("A", "N", gemm.n), ("B", "M", gemm.m))', '(("A", "M", gemm.m), ("B", "N", gemm.n))',
           "the model route weighs a transposed operand against the dimension it has, not the one it lacks",
           ("tests/unit/test_model_route_oracles.py",)),
    Mutant("timing-busiest-unit-floored", "pipelines/timing/predict.py",
           "per_cu = -(-total // target.compute_units)", "per_cu = max(1, total // target.compute_units)",
           "the busiest compute unit is not given the leftover workgroups", ("tests/unit/test_timing_oracles.py",)),
    Mutant("timing-resident-ignores-waves", "pipelines/timing/predict.py",
           "occupancy * simds // max(1, waves_per_group)", "occupancy * simds",
           "resident workgroups counted as if each were one wave", ("tests/unit/test_timing_oracles.py",)),
    Mutant("split-sum-reads-one-slice", "pipelines/timing/predict.py",
           "partials + batch * m * n * 4)", "batch * m * n * 4 + batch * m * n * 4)",
           "the sum dispatch's HBM bytes count one slice of partial products, not S",
           ("tests/unit/test_timing_oracles.py",)),
    Mutant("split-partials-half-width", "pipelines/timing/predict.py",
           "partials = batch * splits * m * n * 4", "partials = batch * splits * m * n * 2",
           "the f32 partial products counted at 2 bytes each", ("tests/unit/test_timing_oracles.py",)),
    Mutant("output-mark-anywhere", "pipelines/output.py",
           "return FILE_MARK.encode() in handle.read(MARK_BYTES)", "return FILE_MARK.encode() in handle.read()",
           "a user's file that quotes the mark past its first bytes passes for the tool's",
           ("tests/unit/test_output_mark.py",)),
    Mutant("mixing-guard-failures-uncounted", "pipelines/runner.py",
           'NOT_RUN = ("compile-failed", "refused")', 'NOT_RUN = ("compile-failed", "refused", "run-failed")',
           "a measured row that failed on the GPU no longer marks its file as measured",
           ("tests/unit/test_result_kinds.py",)),
    Mutant("model-contraction-m-n-swapped", "transforms/problem.py",
           "base = dict(m=sizes[dims.m[0]], n=sizes[dims.n[0]]", "base = dict(m=sizes[dims.n[0]], n=sizes[dims.m[0]]",
           "a model's contraction is read with M and N swapped", ("tests/unit/test_model_route_oracles.py",)),
    # ---- issue 29: output admission and the command line
    # (slice B: silent answers, ignored or contradictory flags, wrong messages; tests/unit/test_bad_input_flags.py)
    Mutant("i29-flags-limit-not-in-key", "pipelines/tune.py",
           "return limit if limit is not None and limit < found else None", "return None",
           "a --limit'ed search is cached as the answer of the whole search", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-device-not-in-key", "pipelines/tune_cache.py",
           "compiler_version(), search.route, search.device, search.limit]",
           'compiler_version(), search.route, MODEL if search.device == MODEL else "gpu", search.limit]',
           "a search measured on one GPU answers for any other", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-device-index-kept", "pipelines/tune_cache.py",
           'return device_name.split("://")[0]', "return device_name",
           "cuda://1 and cuda are different devices to the cache", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-cluster-after-cache", "pipelines/cli.py",
           "    spec = cluster_of(args, devices)  # every flag is checked before the cache may answer\n",
           "    spec = ClusterSpec()  # the cluster flags are read where the search starts\n",
           "tune's cluster flags (--gpus with --device model, --scheduler) are not checked before the cache answers",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-scheduler-port", "pipelines/cluster.py",
           'if address is None or not 1 <= int(address["port"]) <= 65535:', "if address is None:",
           "a --scheduler port above 65535 is accepted", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-workers-zero", "pipelines/cli_args.py",
           'p.add_argument("--workers", type=_at_least(1), help="start a local dask',
           'p.add_argument("--workers", type=_at_least(0), help="start a local dask',
           "tune accepts an explicit --workers 0", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-alpha-without-epilogue", "pipelines/request.py",
           'if given and request.epilogue != "alpha-beta":',
           'if given and request.epilogue not in ("alpha-beta", None):',
           "--alpha and --beta are ignored when no --epilogue is given", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-input-default-values", "pipelines/request.py",
           "given = [f\"--{name}\" for name in PROBLEM_DEFAULTS if getattr(request, name) is not None]",
           "given = [f\"--{name}\" for name in PROBLEM_DEFAULTS if getattr(request, name) not in (None, "
           "PROBLEM_DEFAULTS[name])]",
           "a problem flag given at its default value is ignored beside an --input file",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-suite-shape", "pipelines/cli.py",
           'ignored = given_flags(args, "shape", "input", "layout", "epilogue", "alpha", "beta")',
           'ignored = given_flags(args, "input", "layout", "epilogue", "alpha", "beta")',
           "bench --suite ignores --shape", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-plan-target", "pipelines/cli.py",
           'ignored = given_flags(args, "target", "shape", "input", "suite",',
           'ignored = given_flags(args, "shape", "input", "suite",',
           "bench --plan ignores --target", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-zero-not-given", "pipelines/cli_args.py",
           "if getattr(args, name, None) is not None\n            and getattr(args, name) is not False]",
           "if getattr(args, name, None) not in (None, False)]",
           "a flag given the value 0 (--beta 0) counts as not given", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-help-offers-input", "pipelines/cli_args.py",
           "if files else argparse.SUPPRESS)", 'if files else "not taken here")',
           "tune --help and bench --help list --input, which they refuse", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-spec-why-dropped", "pipelines/commands.py",
           "why = (why_default(name, job.gemms[0], job.target) if len(job.gemms) == 1 else",
           "why = (f\"pipeline '{name}' schedules nothing\" if len(job.gemms) == 1 else",
           "spec does not say why the pipeline left the problem to IREE's default",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-searched-serves-slower", "pipelines/named.py",
           "return speedup is None or speedup > 1", "return speedup is None or speedup >= 1",
           "searched serves a schedule no faster than IREE's default (a tie)", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-verdict-threshold", "pipelines/tune.py",
           "    if ratio > 1:\n", "    if ratio > 0.75:\n",
           "tune calls a best at 0.8x IREE's default a win", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-all-failed-exit-0", "pipelines/runner.py",
           'if not latest or any(row.get("status") == "ok" for row in latest):', "if True:",
           "a run where every case failed exits 0", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-gpus-not-checked", "pipelines/runner.py",
           "                check_local_gpus(args.device, args.gpus)\n", "                pass\n",
           "the runner starts --gpus workers on a machine whose device does not open",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-plan-problem-unchecked", "pipelines/plan.py",
           'PROBLEM_KEYS = {"m": int, "n": int, "k": int, "dtype": str, "layout": str, "epilogue": dict}',
           'PROBLEM_KEYS = {"m": int, "n": int, "k": int, "dtype": str, "layout": str}',
           "a plan whose problems lack the epilogue fails mid-run with a traceback",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-emulate-two-digits", "pipelines/emulator/run.py",
           "for digits in range(2, 18):", "for digits in range(2, 3):",
           "emulate prints error and tolerance with two digits, however close they are",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-listing-unnamed", "pipelines/emulator/host.py",
           "parse_listing(isa, text)  # a listing", "parse_kernel(text)  # a listing",
           "a corrupt kernel listing's error names no file", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-predict-iree-split", "pipelines/timing/predict.py",
           "    if len(dispatches) > 1:\n", "    if len(dispatches) > 2:\n",
           "predict on IREE's own split-K speaks of the emulator", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-same-device-twice", "pipelines/runner.py",
           'same = seen.setdefault(f"{driver}://{index or 0}", device)', "same = seen.setdefault(device, device)",
           "--device hip and --device hip://0 run two workers on one GPU", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-list-twice", "pipelines/cli_args.py",
           "twice = next((v for i, v in enumerate(values) if v in values[:i]), None)", "twice = None",
           "bench plans a pipeline or input type named twice twice", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-needs-unchecked", "pipelines/cli_args.py",
           "if given_flags(args, flag) and not given_flags(args, needed):", "if False:",
           "--force without -o (spec, explain) or --timeline (predict), and tune-model's cluster flags without "
           "--search, are ignored", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-excludes-unchecked", "pipelines/cli_args.py",
           "if given_flags(args, flag) and given_flags(args, other):", "if False:",
           "--repetitions with --compile-only is ignored", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-compile-only-device", "pipelines/cli.py",
           'if getattr(args, "compile_only", False) and devices and not is_model(devices):', "if False:",
           "--device cuda/hip with --compile-only is opened and then not used",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-lds-stages", "pipelines/commands.py",
           'if args.lds_stages is not None and args.schedule != "pingpong8":', "if False:",
           "explain --lds-stages changes the LDS budget of schedules that keep their own stages",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-cache-answer-unmarked", "pipelines/tune.py",
           '"best.json": json.dumps(dict(hit, answered_from_cache=str(cache)), indent=1)}',
           '"best.json": json.dumps(hit, indent=1)}',
           "the best.json a cache answer leaves does not say it came from the cache",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-broken-cache-entry", "pipelines/tune.py",
           "    except (UserError, TypeError, KeyError, ValueError) as err:  # an entry edited by hand",
           "    except UserError as err:  # an entry edited by hand",
           "a cache entry whose schedule no longer builds is a traceback", ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-compile-only-cached", "pipelines/cli.py",
           "if devices and not (args.force or args.compile_only):", "if devices and not args.force:",
           "tune --compile-only is answered from the cache instead of writing the plan",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-flags-limit-above-count", "pipelines/cli.py",
           "Search(search.name, kind, search_limit(args.limit, found))", "Search(search.name, kind, args.limit)",
           "a --limit at or above the number of candidates is not the whole search to the cache",
           ("tests/unit/test_bad_input_flags.py",)),
    Mutant("i29-output-unlisted-file-replaced", "pipelines/output.py",
           "if _exists(final / name) and not force and not (manifest and _listed(manifest, name)):",
           "if _exists(final / name) and not force and not manifest:",
           "a folder with a manifest lets the tool replace a file of the user's that the manifest does not list",
           ("tests/unit/test_output.py::test_a_file_the_manifest_does_not_list_is_the_users",)),
    Mutant("i29-output-legacy-plan-admitted", "pipelines/output.py",
           "if manifest is None and not force:",
           "if manifest is None and not force and not (folder / \"plan.json\").is_file():",
           "a user's plan.json makes a folder the tool's again (the heuristic from before manifests)",
           ("tests/unit/test_output.py::test_a_users_plan_or_report_file_does_not_make_the_folder_the_tools",)),
    Mutant("i29-output-listed-by-prefix", "pipelines/output.py",
           "entry == name or (entry.endswith(\"/\") and name.startswith(entry))",
           "entry == name or name.startswith(entry)",
           "a manifest listing plan.json also claims plan.json.old (any name it prefixes)",
           ("tests/unit/test_output.py::test_owned_is_what_the_nearest_manifest_lists",)),
    Mutant("i29-output-owned-by-any-manifest", "pipelines/output.py",
           "return _listed(manifest, path.relative_to(folder).as_posix())", "return True",
           "every file in a folder with a manifest is read as the tool's own, listed or not",
           ("tests/unit/test_output.py::test_owned_is_what_the_nearest_manifest_lists",)),
    Mutant("i29-output-holding-an-input", "pipelines/output.py",
           "if same or out in real.parents:", "if same:",
           "an output folder holding one of the command's inputs is admitted (compile -o d --input d/gemm.mlir)",
           ("tests/unit/test_output.py::test_an_output_that_is_or_holds_an_input_is_refused_even_with_force",)),
    Mutant("i29-output-input-forced", "pipelines/output.py",
           "_refuse_inputs(folder, inputs, flag)", "_refuse_inputs(folder, () if force else inputs, flag)",
           "--force lets an output folder replace the command's own input",
           ("tests/unit/test_output.py::test_an_output_that_is_or_holds_an_input_is_refused_even_with_force",)),
    Mutant("i29-output-kind-forced", "pipelines/output.py",
           "    _refuse_kind(folder, manifest, kind)", "    force or _refuse_kind(folder, manifest, kind)",
           "--force lets a plan folder of one kind take another kind's files (bench rows into a tune plan)",
           ("tests/unit/test_output.py::test_a_folder_of_one_kind_never_takes_another_kinds_files",)),
    Mutant("i29-output-guest-anywhere", "pipelines/output.py",
           "recorded == kind or recorded in GUESTS.get(kind, ())", "recorded == kind or kind in GUESTS",
           "a report goes into any folder, not only a plan's",
           ("tests/unit/test_output.py::test_a_folder_of_one_kind_never_takes_another_kinds_files",)),
    Mutant("i29-work-folder-keeps-users-results", "pipelines/output.py",
           "path.unlink()  # only with force", "pass  # only with force",
           "--force into a user's folder resumes from their results.jsonl instead of replacing it",
           ("tests/unit/test_output.py::test_bench_with_force_replaces_a_users_plan_files_and_never_resumes_their_rows",)),
    Mutant("i29-tune-resumes-users-results", "pipelines/cli.py",
           "if not owned(folder / \"results.jsonl\") or args.device:",
           "if not (folder / \"results.jsonl\").exists() or args.device:",
           "tune takes a results.jsonl it did not write for its own (finalizes the user's rows)",
           ("tests/unit/test_output.py::test_tune_with_force_never_finalizes_a_users_results",)),
    Mutant("i29-compile-input-unchecked", "pipelines/commands.py",
           "(flow.SOURCE_FILE, flow.REPORT_FILE), (args.input,))", "(flow.SOURCE_FILE, flow.REPORT_FILE), ())",
           "compile --input d/gemm.mlir -o d --force replaces its own input",
           ("tests/unit/test_output.py::test_an_output_that_is_or_holds_an_input_is_refused_even_with_force",)),
    Mutant("i29-spec-input-unchecked", "pipelines/commands.py",
           "admit_file(args.output, args.force, (args.input,))", "admit_file(args.output, args.force)",
           "spec --input m.mlir -o m.mlir --force replaces its own input",
           ("tests/unit/test_output.py::test_an_output_that_is_or_holds_an_input_is_refused_even_with_force",)),
    Mutant("i29-explain-png-checked-after-printing", "pipelines/commands.py",
           "    admit_file(path, force)  # before the table is printed", "    pass  # before the table is printed",
           "explain -o a user's PNG refuses only after printing the table",
           ("tests/unit/test_output.py::test_a_single_file_output_is_refused_before_any_work_or_print",)),
    Mutant("i29-predict-timeline-checked-after-replay", "pipelines/cli.py",
           "admit_file(args.timeline, args.force, flag=\"--timeline\")  # before the replay",
           "pass  # before the replay",
           "predict --timeline a user's PNG refuses only after the replay",
           ("tests/unit/test_output.py::test_a_single_file_output_is_refused_before_any_work_or_print",)),
    Mutant("i29-calibrate-keep-unadmitted", "pipelines/cli.py",
           "work_folder(args.keep, \"calibrate\", args.force)", "args.keep.mkdir(parents=True, exist_ok=True)",
           "calibrate --keep makes its folder without a manifest (as before): the next run refuses it, a user's "
           "folder with --force is never marked",
           ("tests/unit/test_output.py::test_calibrate_keep_is_admitted_like_every_output",)),
    Mutant("i29-model-runner-over-its-input", "pipelines/model_runner.py",
           "admit_file(args.output, args.force, (args.inputs, *modules.values()))",
           "admit_file(args.output, args.force)",
           "model_runner -o a.vmfb --force writes its report over the module it times",
           ("tests/unit/test_output.py::test_model_runner_never_writes_over_what_it_reads",)),
    Mutant("i29-hopper-repeat-flops-negative", "results/h100/hopper/hopper_gemm.py",
           "if not math.isfinite(value) or value <= 0:", "if not math.isfinite(value):",
           "hopper_gemm build --repeat-flops -1 builds", ("tests/unit/test_hopper_gemm_cli.py",)),
    Mutant("i29-hopper-exit-1", "results/h100/hopper/hopper_gemm.py",
           "print(_one_line(f\"hopper_gemm: error: {err}\"), file=sys.stderr)\n        return 2",
           "print(_one_line(f\"hopper_gemm: error: {err}\"), file=sys.stderr)\n        return 1",
           "hopper_gemm's user errors exit 1 where pipelines uses 2", ("tests/unit/test_hopper_gemm_cli.py",)),
    Mutant("i29-hopper-ctrl-c-code", "results/h100/hopper/hopper_gemm.py",
           "        return 130", "        return 1",
           "hopper_gemm on Ctrl-C exits 1, not 130", ("tests/unit/test_hopper_gemm_cli.py",)),
    Mutant("i29-hopper-output-forced", "results/h100/hopper/hopper_gemm.py",
           "output_folder(Path(args.output), OUTPUT_KIND, args.force)",
           "output_folder(Path(args.output), OUTPUT_KIND, True)",
           "hopper_gemm build writes into a user's folder without --force", ("tests/unit/test_hopper_gemm_cli.py",)),
    Mutant("i29-hopper-empty-manifest", "results/h100/hopper/hopper_gemm.py",
           "    if not entries:", "    if not entries and False:",
           "hopper_gemm inspect of a manifest listing no kernel prints nothing and exits 0",
           ("tests/unit/test_hopper_gemm_cli.py",)),
    Mutant("i29-hopper-manifest-entries-unchecked", "results/h100/hopper/hopper_gemm.py",
           "all(type(e.get(key)) is kind for key, kind in ENTRY_KEYS.items())", "True",
           "hopper_gemm inspect of {} or of entries without a name prints nothing or a traceback",
           ("tests/unit/test_hopper_gemm_cli.py",)),
    # foreign kernels (Triton's, results/triton/README.md)
    Mutant("t-foreign-offsets-unchecked", "pipelines/emulator/foreign.py",
           "        if (arg.offset, arg.size, arg.value_kind) != stated:",
           "        if (arg.size, arg.value_kind) != stated[1:]:",
           "triton.json's argument offsets are not compared with the kernel's metadata",
           ("tests/unit/test_foreign_triton.py",)),
    Mutant("t-foreign-c-strides-transposed", "pipelines/emulator/foreign.py",
           "    got = _view(flat_c, m, n, strides[\"c\"]).astype(np.float64)",
           "    got = _view(flat_c, m, n, strides[\"c\"][::-1]).astype(np.float64)",
           "C is read back with its strides swapped", ("tests/unit/test_foreign_triton.py",)),
    Mutant("t-foreign-bf16-ulp-doubled", "pipelines/emulator/foreign.py",
           'mantissa = {"bf16": 7, "f16": 10}[dtype]', 'mantissa = {"bf16": 6, "f16": 10}[dtype]',
           "a bf16 output is allowed two ulps of rounding", ("tests/unit/test_foreign_triton.py",)),
    Mutant("t-rcp-f32-coarse", "pipelines/emulator/floats.py",
           "return _bits((1.0 / x.astype(np.float64)).astype(np.float32))",
           "return _bits((1.0 / x.astype(np.float16)).astype(np.float32))",
           "v_rcp_f32 computed in f16", ("tests/unit/test_emulator_opcodes.py", "tests/unit/test_foreign_triton.py")),
    Mutant("t-cvt-pk-bf16-halves-swapped", "pipelines/emulator/floats.py",
           "    lo, hi, write = float_reader(x, ctx), float_reader(y, ctx), vector_writer(dst)",
           "    hi, lo, write = float_reader(x, ctx), float_reader(y, ctx), vector_writer(dst)",
           "v_cvt_pk_bf16_f32 puts S0 in the high half", ("tests/unit/test_emulator_opcodes.py",)),
    # foreign kernels (HipKittens', results/hipkittens/README.md)
    Mutant("hk-struct-fields-unwritten", "pipelines/emulator/foreign.py",
           "    placed += [(field, arg.offset) for arg in foreign.arguments for field in arg.fields]",
           "    placed += [(field, arg.offset) for arg in foreign.arguments for field in arg.fields[:0]]",
           "a struct argument's byte fields are never written to the kernarg block",
           ("tests/unit/test_foreign_hipkittens.py",)),
    Mutant("hk-struct-overlap-unchecked", "pipelines/emulator/foreign.py",
           "        if field.offset < end:", "        if field.offset < end and False:",
           "overlapping byte fields of a struct are accepted", ("tests/unit/test_foreign_hipkittens.py",)),
    Mutant("hk-store-d16-hi-low-half", "pipelines/emulator/memory.py",
           "    shift = 2 if high else 0", "    shift = 0",
           "global_store_short_d16_hi stores the low half", ("tests/unit/test_emulator_units.py",
                                                             "tests/unit/test_foreign_hipkittens.py")),
    Mutant("hk-bfe-i64-unsigned", "pipelines/emulator/machine.py",
           "np.where(negative == 1, field | ~mask, field)", "field",
           "s_bfe_i64 does not sign-extend", ("tests/unit/test_emulator_opcodes.py",
                                               "tests/unit/test_emulator_audit.py")),
]


@dataclass
class Outcome:
    id: str
    file: str
    description: str
    status: str  # killed | survived | timeout | error
    killer: str | None
    seconds: float
    detail: str = ""


def tracked_files(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    return [name for name in listed if (root / name).is_file()]


def copy_tree(root: Path, into: Path) -> None:
    for name in tracked_files(root):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)


# A mutant with no test files of its own (a blind probe's, planted without reading the tests) is judged by the
# whole default and slow tiers, as the README's test command runs them: the default tier first, the slow tier only
# where that passed (the same tests, the quick kills sooner).
ALL_TIERS = ("tests/unit",)
TIERS = ("not slow", "slow and not sweep and not readme")


def pytest_command(tests: tuple[str, ...], tier: str = "not slow") -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-x", "-m", tier, "-p", "no:cacheprovider", *tests]


def run_tests(tree: Path, tests: tuple[str, ...], timeout: float) -> tuple[int | None, str]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    deadline = time.monotonic() + timeout
    code, output = 0, ""
    for tier in TIERS if tests == ALL_TIERS else TIERS[:1]:
        try:
            done = subprocess.run(pytest_command(tests, tier), cwd=tree, env=env, capture_output=True, text=True,
                                  timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None, output
        code, output = done.returncode, output + done.stdout + done.stderr
        if code != 0 and code != 5:  # 5: the tier selected no test
            return code, output
    return 0, output


def first_failure(output: str) -> str | None:
    found = re.search(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", output, re.M)
    return found.group(1) if found else None


def check_table(tree: Path, mutants: list[Mutant]) -> dict[str, str]:
    """Why each mutant cannot be run (snippet missing or ambiguous, mutated source does not compile)."""
    problems = {}
    for mutant in mutants:
        path = tree / mutant.file
        if not path.exists():
            problems[mutant.id] = f"file {mutant.file} not found"
            continue
        source = path.read_text()
        count = source.count(mutant.original)
        if count != 1:
            problems[mutant.id] = (f"snippet not found in {mutant.file}" if count == 0
                                   else f"snippet found {count} times in {mutant.file}")
            continue
        try:
            compile(source.replace(mutant.original, mutant.mutated), mutant.file, "exec")
        except SyntaxError as err:
            problems[mutant.id] = f"mutated {mutant.file} does not compile: {err.msg} (line {err.lineno})"
    return problems


def log_line(text: str) -> None:
    print(text, flush=True)


def run(mutants: list[Mutant], timeout: float, log=log_line, jobs: int = 1) -> list[Outcome]:
    """Each mutant in a copy of the tree; `jobs` copies run mutants at once (one pytest process each)."""
    with tempfile.TemporaryDirectory(prefix="mutate.") as scratch:
        trees = [Path(scratch) / f"tree{i}" for i in range(max(1, jobs))]
        for tree in trees:
            copy_tree(REPO, tree)
        problems = check_table(trees[0], mutants)
        # The unmutated tree must pass every selected test file, or a failure would be counted as a kill.
        selected = tuple(sorted({t for m in mutants if m.id not in problems for t in m.tests or ALL_TIERS}))
        if ALL_TIERS[0] in selected:
            selected = ALL_TIERS
        if selected:
            code, output = run_tests(trees[0], selected, timeout * 4)
            if code != 0:
                raise SystemExit(f"the unmutated tree fails its tests ({first_failure(output) or code}); fix that "
                                 f"first:\n{output[-3000:]}")
            probe = subprocess.run([sys.executable, "-c", "import pipelines; print(pipelines.__file__)"],
                                   cwd=trees[0], env=dict(os.environ, PYTHONPATH=str(trees[0])), capture_output=True,
                                   text=True)
            if not probe.stdout.strip().startswith(str(trees[0])):
                raise SystemExit(f"the copy's modules are not the ones imported ({probe.stdout.strip()}).")
        free: queue.Queue[Path] = queue.Queue()
        for tree in trees:
            free.put(tree)
        done = [0]
        lock = threading.Lock()

        def one(mutant: Mutant) -> Outcome:
            tree = free.get()
            try:
                outcome = _run_one(mutant, tree, timeout, problems)
            finally:
                free.put(tree)
            with lock:
                done[0] += 1
                log(f"[{done[0]}/{len(mutants)}] {outcome.status:8s} {outcome.id} ({outcome.seconds:.1f} s)"
                    + (f" by {outcome.killer}" if outcome.killer else "")
                    + (f": {outcome.detail}" if outcome.detail and outcome.status != "killed" else ""))
            return outcome

        with concurrent.futures.ThreadPoolExecutor(len(trees)) as pool:
            return list(pool.map(one, mutants))


def _run_one(mutant: Mutant, tree: Path, timeout: float, problems: dict[str, str]) -> Outcome:
    started = time.time()
    if mutant.id in problems:
        return Outcome(mutant.id, mutant.file, mutant.description, "error", None, 0.0, problems[mutant.id])
    path = tree / mutant.file
    original = path.read_text()
    try:
        path.write_text(original.replace(mutant.original, mutant.mutated))
        code, output = run_tests(tree, mutant.tests or ALL_TIERS, timeout)
    finally:
        path.write_text(original)
    seconds = time.time() - started
    if code is None:
        return Outcome(mutant.id, mutant.file, mutant.description, "timeout", None, seconds,
                       f"tests ran past {timeout:.0f} s")
    if code == 0:
        return Outcome(mutant.id, mutant.file, mutant.description, "survived", None, seconds)
    if code == 1:
        return Outcome(mutant.id, mutant.file, mutant.description, "killed", first_failure(output), seconds)
    # collection errors, usage errors: the tests did not judge the mutant
    return Outcome(mutant.id, mutant.file, mutant.description, "error", first_failure(output), seconds,
                   f"pytest exited {code}: {output.strip().splitlines()[-1:]}")


def kill_rate(outcomes: list[Outcome]) -> tuple[int, int, float]:
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    judged = killed + sum(o.status == "survived" for o in outcomes)
    return killed, judged, (killed / judged if judged else 0.0)


def git_commit() -> str:
    done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def markdown(outcomes: list[Outcome], command: str, commit: str, when: str, seconds: float) -> str:
    killed, judged, rate = kill_rate(outcomes)
    errors = [o for o in outcomes if o.status == "error"]
    lines = [f"# Mutation run {when}", "",
             f"Commit `{commit}`; command `{command}`; {len(outcomes)} mutants in {seconds:.0f} s.", "",
             f"**Kill rate {killed}/{judged} = {100 * rate:.1f} %** (killed or timed out / judged; "
             f"{len(errors)} error(s) not judged).", "",
             "| mutant | file | planted bug | outcome | killed by | s |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.id} | {o.file} | {o.description} | {o.status}"
                     f"{': ' + o.detail if o.detail and o.status != 'killed' else ''} | {o.killer or '–'} | "
                     f"{o.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def restore_sigint() -> None:
    """Run in the background (`... &`), this process starts with SIGINT ignored, and its test processes would
    inherit that: the tests that interrupt a compile would then fail whatever the mutant, a false kill. A signal
    with a handler (not ignored) goes back to its default in the children at exec."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    restore_sigint()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutants only (nothing is written)")
    parser.add_argument("--list", action="store_true", help="print the table and exit")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per mutant's test run (default 180; "
                        "with --blind, 5400: the whole default and slow tiers; a run past it counts as killed, so "
                        "keep it well above the tiers' own time)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "mutation")
    parser.add_argument("--blind", type=Path, metavar="FILE",
                        help="run the mutants of this JSON file instead of the table (a list of objects with id, file, "
                             "original, mutated, description): a blind probe, each judged by the default and slow "
                             "tiers; writes results/mutation/<date>-blind.md")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="mutants run at once, each in its own copy of the tree (default: the CPU count)")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.id:36s} {m.file:32s} {m.description}")
        return 0
    chosen = MUTANTS
    if args.blind:
        try:
            entries = json.loads(args.blind.read_text())
            chosen = [Mutant(e["id"], e["file"], e["original"], e["mutated"], e["description"], ()) for e in entries]
        except (OSError, ValueError, KeyError, TypeError) as err:
            parser.error(f"--blind {args.blind}: not a list of mutants ({err})")
    if args.only:
        unknown = set(args.only) - {m.id for m in chosen}
        if unknown:
            parser.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
        chosen = [m for m in chosen if m.id in args.only]
    command = "python tools/mutate.py" + (f" --blind {args.blind}" if args.blind else "") + (
        f" --only {' '.join(args.only)}" if args.only else "")
    commit, started = git_commit(), time.time()
    timeout = args.timeout or (5400.0 if args.blind else 180.0)
    outcomes = run(chosen, timeout, jobs=args.jobs)
    seconds = time.time() - started
    killed, judged, rate = kill_rate(outcomes)
    print(f"\nkill rate {killed}/{judged} = {100 * rate:.1f} %; errors: "
          f"{sum(o.status == 'error' for o in outcomes)}; survivors: "
          f"{', '.join(o.id for o in outcomes if o.status == 'survived') or 'none'}")
    if not args.only:
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        args.out.mkdir(parents=True, exist_ok=True)
        # an earlier run of the same day keeps its files: this one takes the next free name (-b, -c, ...)
        taken = {p.stem for p in args.out.iterdir()}
        when += "-blind" if args.blind else ""
        name = next(f"{when}{suffix}" for suffix in [""] + [f"-{c}" for c in "bcdefghijklmnopqrstuvwxyz"]
                    if f"{when}{suffix}" not in taken)
        (args.out / f"{name}.md").write_text(markdown(outcomes, command, commit, when, seconds))
        with open(args.out / f"{name}.jsonl", "w") as jsonl:
            for o in outcomes:
                jsonl.write(json.dumps(dict(asdict(o), commit=commit, command=command)) + "\n")
        print(f"wrote {args.out / f'{name}.md'} and .jsonl")
    return 0 if judged and rate >= 0.9 and not any(o.status == "error" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
