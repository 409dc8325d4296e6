"""Every bad input, to every subcommand, is one sentence on stderr, a non-zero exit code and nothing written.

Most cases run in-process through `pipelines.cli.main` (a subprocess costs ~1.5 s of imports); a few that need a
real process (Ctrl-C during a compile, a binary --input through `python -m pipelines`) run as subprocesses. The
parametrize ids are the command lines, so `pytest -v` lists what is covered. `{F}` is a folder of corrupt and
odd files written once per module; `{OUT}` is an output path inside the test's own (current) folder.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transforms.errors import UserError

from pipelines import cli

REPO = Path(__file__).resolve().parents[2]

# A report.json as `pipelines compile` writes it, and a results.jsonl row as the runner writes it; the corrupt
# fixtures below are these with one thing wrong.
REPORT = {"target": "gfx942", "pipeline": "default",
          "problems": [{"batch": None, "m": 64, "n": 64, "k": 64, "dtype": "bf16", "layout": "nn",
                        "epilogue": {"kind": "none", "alpha": 1.0, "beta": 1.0}, "flops": 524288}],
          "schedule_summary": ["IREE default heuristic"], "verified": False, "files": {"dump": "dump"},
          "dispatches": [{"isa_file": "k.rocmasm"}]}
ROW = {"id": "c1", "pipeline": "default", "status": "ok", "tflops": 1.5, "correct": True, "max_rel_error": 1e-6,
       "problem": {"dtype": "bf16", "batch": None, "m": 64, "n": 64, "k": 64, "layout": "nn"}}
# a case as `pipelines bench --compile-only` writes it (`pipelines.plan.Case`)
PLAN_CASE = {"id": "c1", "label": "bf16 64x64x64 nn default", "status": "ok",
             "problem": dict(ROW["problem"], epilogue={"kind": "none", "alpha": 1.0, "beta": 1.0}),
             "pipeline": "default", "schedule": "IREE default heuristic", "target": "cpu", "function": "gemm",
             "input_shapes": [[64, 64], [64, 64]], "input_dtypes": ["bf16", "bf16"], "flops": 524288, "repeat": 1,
             "vmfb": "cases/c1/gemm.vmfb"}
BINARY = b"\x00\x01\xff\xfe\x89PNG\r\n\x1a\n"
MATMUL = """func.func @f(%a: tensor<{a}>, %b: tensor<{b}>) -> tensor<{c}> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{c}>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{c}>) -> tensor<{c}>
  %r = linalg.matmul ins(%a, %b : tensor<{a}>, tensor<{b}>) outs(%f : tensor<{c}>) -> tensor<{c}>
  return %r : tensor<{c}>
}}
"""


def _changed(value: dict, **changes) -> dict:
    return {**value, **changes}


def _without(value: dict, key: str) -> dict:
    return {k: v for k, v in value.items() if k != key}


def _problem(**changes) -> dict:
    return _changed(REPORT, problems=[_changed(REPORT["problems"][0], **changes)])


CSV_HEAD = "source,gpu,target,op,M,N,K,layout,dtype,variant,time_us\n"
FILES = {
    "cal_columns.csv": "source,M,N,K\nx,1,2,3\n",
    "cal_empty.csv": "# only a comment\n" + CSV_HEAD,
    "cal_zero.csv": CSV_HEAD + "s,MI355X,gfx950,mm,0,64,64,NN,bf16,dma_off,10\n",
    "cal_time.csv": CSV_HEAD + "s,MI355X,gfx950,mm,64,64,64,NN,bf16,dma_off,fast\n",
    "cal_binary.csv": BINARY,
    "bin.mlir": BINARY,
    "empty.mlir": "",
    "bad.mlir": "func.func @f(%a: tensor<4x4xf32>\n",
    "nocontract.mlir": "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }\n",
    "dynamic.mlir": MATMUL.format(a="?x64xbf16", b="64x64xbf16", c="?x64xf32"),
    "mixed.mlir": MATMUL.format(a="64x64xf16", b="64x64xbf16", c="64x64xf32"),
    "f16acc.mlir": MATMUL.format(a="64x64xf16", b="64x64xf16", c="64x64xf16").replace(": f32", ": f16"),
    "huge.mlir": MATMUL.format(a="9999999x9999999xbf16", b="9999999x9999999xbf16", c="9999999x9999999xf32"),
    "a_file": "not a folder\n",
    "memref.mlir": """func.func @f(%a: memref<64x64xbf16>, %b: memref<64x64xbf16>, %c: memref<64x64xf32>) {
  linalg.matmul ins(%a, %b : memref<64x64xbf16>, memref<64x64xbf16>) outs(%c : memref<64x64xf32>)
  return
}
""",
    "matvec.mlir": """func.func @f(%a: tensor<64x64xbf16>, %b: tensor<64xbf16>, %c: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.matvec ins(%a, %b : tensor<64x64xbf16>, tensor<64xbf16>) outs(%c : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}
""",
    "f32in.mlir": MATMUL.format(a="64x64xf32", b="64x64xf32", c="64x64xf32"),
    "ok.mlir": MATMUL.format(a="64x64xbf16", b="64x64xbf16", c="64x64xf32"),
    "i8.mlir": MATMUL.format(a="64x64xi8", b="64x64xi8", c="64x64xi32").replace("0.0 : f32", "0 : i32").replace(
        ": f32", ": i32"),
    # tune output folders left in odd states
    "tune_no_plan/results.jsonl": json.dumps(ROW) + "\n",
    "tune_bad_plan/results.jsonl": json.dumps(ROW) + "\n",
    "tune_bad_plan/plan.json": "{",
    "tune_bad_results/results.jsonl": "{\n",  # a corrupt line, not a torn one: it ends
    "tune_bad_results/plan.json": json.dumps({"target": "gfx942", "cases": [PLAN_CASE]}),
    # results.jsonl of `report`
    "res_empty/results.jsonl": "",
    "res_blank/results.jsonl": "\n  \n",
    "res_truncated/results.jsonl": json.dumps(ROW)[:25],  # killed while writing its only row: no newline
    "res_garbage/results.jsonl": "garbage\n",
    "res_binary/results.jsonl": BINARY,
    "res_list/results.jsonl": "[1, 2]\n",
    "res_number/results.jsonl": "5\n",
    "res_no_pipeline/results.jsonl": json.dumps(_without(ROW, "pipeline")) + "\n",
    "res_no_id/results.jsonl": json.dumps(_without(ROW, "id")) + "\n",
    "res_no_status/results.jsonl": json.dumps(_without(ROW, "status")) + "\n",
    "res_no_problem/results.jsonl": json.dumps(_without(ROW, "problem")) + "\n",
    "res_problem_string/results.jsonl": json.dumps(_changed(ROW, problem="64x64x64")) + "\n",
    "res_m_string/results.jsonl": json.dumps(_changed(ROW, problem=_changed(ROW["problem"], m="64"))) + "\n",
    "res_m_bool/results.jsonl": json.dumps(_changed(ROW, problem=_changed(ROW["problem"], m=True))) + "\n",
    "res_batch_string/results.jsonl": json.dumps(_changed(ROW, problem=_changed(ROW["problem"], batch="2"))) + "\n",
    "res_no_layout/results.jsonl": json.dumps(_changed(ROW, problem=_without(ROW["problem"], "layout"))) + "\n",
    "res_tflops_string/results.jsonl": json.dumps(_changed(ROW, tflops="fast")) + "\n",
    "res_tflops_missing/results.jsonl": json.dumps(_without(ROW, "tflops")) + "\n",
    "res_tflops_zero/results.jsonl": json.dumps(_changed(ROW, tflops=0)) + "\n",
    "res_vendor_zero/results.jsonl": json.dumps(_changed(ROW, vendor={"tflops": 0.0})) + "\n",
    "res_vendor_string/results.jsonl": json.dumps(_changed(ROW, vendor="cublas")) + "\n",
    "res_error_string/results.jsonl": json.dumps(_changed(ROW, max_rel_error="small")) + "\n",
    # report.json of `inspect` and `emulate`
    "rep_invalid/report.json": "{bad",
    "rep_truncated/report.json": json.dumps(REPORT)[:60],
    "rep_empty/report.json": "",
    "rep_binary/report.json": BINARY,
    "rep_list/report.json": "[]",
    "rep_target_int/report.json": json.dumps(_changed(REPORT, target=5)),
    "rep_no_target/report.json": json.dumps(_without(REPORT, "target")),
    "rep_unknown_target/report.json": json.dumps(_changed(REPORT, target="gfx900")),
    "rep_problems_string/report.json": json.dumps(_changed(REPORT, problems="64x64x64")),
    "rep_no_problems/report.json": json.dumps(_changed(REPORT, problems=[], schedule_summary=[])),
    "rep_m_missing/report.json": json.dumps(_changed(REPORT, problems=[_without(REPORT["problems"][0], "m")])),
    "rep_m_string/report.json": json.dumps(_problem(m="64")),
    "rep_m_zero/report.json": json.dumps(_problem(m=0)),
    "rep_layout/report.json": json.dumps(_problem(layout="xx")),
    "rep_epilogue_string/report.json": json.dumps(_problem(epilogue="none")),
    "rep_files_list/report.json": json.dumps(_changed(REPORT, files=["dump"])),
    "rep_no_dump_key/report.json": json.dumps(_changed(REPORT, files={})),
    "rep_dispatch_no_isa/report.json": json.dumps(_changed(REPORT, dispatches=[{}])),
    "rep_verified_string/report.json": json.dumps(_changed(REPORT, verified="yes")),
    "rep_no_dump_folder/report.json": json.dumps(REPORT),
    "rep_empty_dump/report.json": json.dumps(REPORT),
    "rep_empty_dump/dump/notes.txt": "no ISA here\n",
    "rep_cuda/report.json": json.dumps(_changed(REPORT, target="sm_80")),
    "rep_bad_isa/report.json": json.dumps(REPORT),
    "rep_bad_isa/dump/k.rocmasm": "this is not AMDGPU assembly\n",
    "rep_binary_isa/report.json": json.dumps(REPORT),
    "rep_binary_isa/dump/k.rocmasm": BINARY,
    "rep_dtype/report.json": json.dumps(_problem(dtype="f64")),
    "rep_dtype/dump/k.rocmasm": "\n",
    # suites of `bench --suite`
    "suite_truncated.json": '{"problems": [{"shape": "64x64',
    "suite_binary.json": BINARY,
    "suite_list.json": "[]",
    "suite_no_problems.json": '{"shapes": []}',
    "suite_empty.json": '{"problems": []}',
    "suite_shape_int.json": '{"problems": [{"shape": 64}]}',
    "suite_problem_string.json": '{"problems": ["64x64x64"]}',
    "suite_layout.json": '{"problems": [{"shape": "64x64x64", "layout": "xx"}]}',
    "suite_epilogue.json": '{"problems": [{"shape": "64x64x64", "epilogue": "softmax"}]}',
    "suite_zero.json": '{"problems": [{"shape": "0x64x64"}]}',
    # plans of `bench --plan`
    "plan_truncated/plan.json": '{"target": "cpu", "cases": [',
    "plan_list/plan.json": "[]",
    "plan_case_missing/plan.json": json.dumps({"target": "cpu", "cases": [_without(PLAN_CASE, "function")]}),
    "plan_unknown_target/plan.json": json.dumps({"target": "gfx900", "cases": [PLAN_CASE]}),
    "plan_gfx942/plan.json": json.dumps({"target": "gfx942", "cases": [PLAN_CASE]}),
    "plan_cpu/plan.json": json.dumps({"target": "cpu", "cases": [PLAN_CASE]}),
    "plan_empty": None,  # a folder without plan.json
    "dir.mlir": None,  # a folder named like a file
}

SHAPE = ["--shape", "64x64x64"]
T942 = ["--target", "gfx942"]

# (command line, what the sentence must say). {F}: the fixture folder; {OUT}: an output path in the test's folder.
CASES = [
    # compile: problems
    ("compile --target gfx942 --shape 0x64x64 -o {OUT}", "size M=0 must be a positive integer"),
    # compile: split-K asked where it cannot be given (no compile runs)
    ("compile --target gfx942 --shape 16x256x256 --split-k 1 -o {OUT}", "at least 2"),
    ("compile --target gfx942 --shape 16x256x256 --split-k 4 --pipeline tuned -o {OUT}", "--pipeline default"),
    ("compile --target gfx942 --shape 16x256x256 --split-k 4 --tile 64x64x32 --mma MFMA_F32_16x16x16_BF16 -o {OUT}",
     "no schedule flags"),
    ("compile --target cpu --shape 16x256x256 --split-k 4 -o {OUT}", "GPU targets"),
    ("compile --target gfx942 --shape 2x16x256x256 --split-k 4 -o {OUT}", "batch matmuls"),
    ("compile --target gfx942 --shape=-5x64x64 -o {OUT}", "size M=-5"),
    ("compile --target gfx942 --shape 64x0x64 -o {OUT}", "size N=0"),
    ("compile --target gfx942 --shape 64x64x0 -o {OUT}", "size K=0"),
    ("compile --target gfx942 --shape 0x64x64x64 -o {OUT}", "size BATCH=0"),
    ("compile --target gfx942 --shape 64xfoo -o {OUT}", "must be integers"),
    ("compile --target gfx942 --shape 64x64 -o {OUT}", "must have the form"),
    ("compile --target gfx942 --shape 1x2x3x4x5 -o {OUT}", "must have the form"),
    ("compile --target gfx942 --shape 64x64x64x -o {OUT}", "must be integers"),
    ("compile --target gfx942 --shape 1.5x64x64 -o {OUT}", "must be integers"),
    ("compile --target gfx942 --shape=64x6\n4x64 -o {OUT}", "shape '64x6\\n4x64' must be integers"),
    ("compile --target gfx942 --shape 64x64x64 --prefetch=1\n2 -o {OUT}", "invalid int value: '1\\n2'"),
    ("compile --target gfx942 --shape 64x64x64 --alpha=1\n2 -o {OUT}", "'1\\n2' is not a number"),
    ("compile --target gfx942 --shape 99999999x99999999x99999999 -o {OUT}", "no target has more than"),
    ("compile --target gfx942 --shape 1x1x99999999999 -o {OUT}", "no target has more than"),
    ("compile --target gfx942 --shape 4096x4096x4096x4096 --dtype f8e4m3fnuz -o {OUT}", "device memory"),
    ("compile --target gfx942 --shape 64x64x64 --dtype f64 -o {OUT}", "unknown --dtype 'f64'"),
    ("compile --target gfx942 --shape 64x64x64 --dtype f8e4m3fn -o {OUT}", "gfx942 runs fp8 as"),
    ("compile --target gfx1151 --shape 64x64x64 --dtype f8e4m3fnuz -o {OUT}", "no fp8 matrix"),
    ("compile --target gfx942 --shape 64x64x64 --layout xx -o {OUT}", "invalid choice: 'xx'"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue softmax -o {OUT}", "invalid choice: 'softmax'"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue alpha-beta --alpha nan -o {OUT}", "finite"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue alpha-beta --alpha inf -o {OUT}", "finite"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue alpha-beta --beta nan -o {OUT}", "finite"),
    ("compile --target gfx942 --shape 64x64x64 --epilogue alpha-beta --beta=-inf -o {OUT}", "finite"),
    ("compile --target gfx942 --shape 64x64x64 --alpha 1e999 -o {OUT}", "finite"),
    ("compile --target gfx942 --shape 64x64x64 --alpha abc -o {OUT}", "is not a number"),
    ("compile --target gfx942 -o {OUT}", "give the problem as --shape"),
    ("compile --target gfx942 --shape 64x64x64 --input {F}/bad.mlir -o {OUT}", "either --shape or --input"),
    # compile: input files
    ("compile --target gfx942 --input {F}/bin.mlir -o {OUT}", "is not MLIR text"),
    ("compile --target gfx942 --input {F}/dir.mlir -o {OUT}", "is a folder"),
    ("compile --target gfx942 --input {F}/missing.mlir -o {OUT}", "does not exist"),
    ("compile --target gfx942 --input {F}/bad.mlir -o {OUT}", "is not valid MLIR"),
    ("compile --target gfx942 --input {F}/empty.mlir -o {OUT}", "holds no linalg contraction"),
    ("compile --target gfx942 --input {F}/nocontract.mlir -o {OUT}", "holds no linalg contraction"),
    ("compile --target gfx942 --input {F}/dynamic.mlir -o {OUT}", "dynamic sizes"),
    ("compile --target gfx942 --input {F}/mixed.mlir -o {OUT}", "mixes element types"),
    ("compile --target gfx942 --input {F}/f16acc.mlir -o {OUT}", "only f32 is supported"),
    # the codegen route takes no input file: said, not compiled through the tuning spec instead
    ("compile --target gfx942 --input {F}/ok.mlir --pipeline codegen -o {OUT}", "not an input file"),
    ("compile --target gfx942 --input {F}/huge.mlir -o {OUT}", "no target has more than"),
    ("compile --target gfx942 --input {F}/memref.mlir -o {OUT}", "only ranked tensors are supported"),
    ("compile --target gfx942 --input {F}/matvec.mlir -o {OUT}", "not a single-M, single-N, single-K"),
    ("compile --target gfx942 --input {F}/f32in.mlir -o {OUT}", "linalg.matmul in"),
    ("compile --target gfx942 --input {F}/i8.mlir -o {OUT}", "accumulates in i32"),
    ("compile --target gfx942 --input {F}/bad.mlir --schedule pingpong8 -o {OUT}", "not for an --input file"),
    ("compile --target gfx942 --input {F}/bad.mlir --dtype f16 -o {OUT}", "an --input file states its own"),
    ("spec --target gfx942 --input {F}/bad.mlir --layout nt --pipeline tuned", "an --input file states its own"),
    ("compile --target gfx942 --input {F}/bad.mlir --epilogue bias-relu -o {OUT}", "an --input file states its own"),
    # compile: targets, pipelines, schedules
    ("compile --target gfx900 --shape 64x64x64 -o {OUT}", "unknown target 'gfx900'"),
    ("compile --shape 64x64x64 -o {OUT}", "--target"),
    ("compile --target gfx942 --shape 64x64x64 --pipeline nope -o {OUT}", "unknown pipeline 'nope'"),
    ("compile --target cpu --shape 64x64x64 --pipeline tuned -o {OUT}", "only the 'default' pipeline"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline codegen-raster -o {OUT}", "does not run on gfx942"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline searched -o {OUT}", "run `pipelines tune`"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --prefetch=-1 -o {OUT}", "outside 0..3"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --prefetch 99 -o {OUT}", "outside 0..3"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --prefetch two -o {OUT}", "invalid int"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --workgroup-size 0 -o {OUT}", "at least 1"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --workgroup-size 99999 -o {OUT}",
     "does not match"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --waves-per-eu 0 -o {OUT}", "at least 1"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --waves-per-eu 99 -o {OUT}", "outside 1..8"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --raster-rows 0 -o {OUT}", "at least 1"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --raster-rows 4 -o {OUT}",
     "apply to --order raster only"),
    ("compile --target sm_80 --shape 512x512x512 --dtype f16 --pipeline codegen --order raster --raster-rows 99999 "
     "-o {OUT}", "must divide"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --tile 0x0x0 -o {OUT}", "positive integers"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --tile 64x64 -o {OUT}", "must have the form"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --warps 0x2 -o {OUT}", "positive integers"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --warps 2x2x2 -o {OUT}", "must have the form"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --mma FOO -o {OUT}", "no MMA intrinsic FOO"),
    ("compile --target gfx942 --shape 512x512x512 --tile 64x64x32 -o {OUT}", "need at least --tile and --mma"),
    ("compile --target gfx942 --shape 512x512x512 --tile 99999x99999x99999 --mma MFMA_F32_16x16x16_BF16 -o {OUT}",
     "is not a multiple"),
    ("compile --target gfx942 --shape 4096x4096x4096 --tile 256x256x128 --warps 2x4 --mma MFMA_F32_16x16x16_BF16 "
     "-o {OUT}", "needs 134144 B of LDS; gfx942 has 65536"),
    ("compile --target gfx942 --shape 512x512x512 --pipeline tuned --dma -o {OUT}", "not available on gfx942"),
    ("compile --target gfx942 --shape 512x512x512 --lds diagonal --pipeline tuned -o {OUT}", "invalid choice"),
    ("compile --target gfx942 --shape 512x512x512 --schedule nope -o {OUT}", "has no generated kernel"),
    ("compile --target cpu --shape 512x512x512 --schedule pingpong8 -o {OUT}", "cpu is not covered"),
    ("compile --target gfx942 --shape 512x512x512 --schedule pingpong8 --pipeline tuned -o {OUT}",
     "is a whole kernel"),
    ("compile --target gfx942 --shape 500x512x512 --schedule pingpong8 -o {OUT}", "needs M and N multiples of 256"),
    ("compile --target gfx942 --shape 64x64x64", "-o/--output"),
    # compile: output paths
    ("compile --target gfx942 --shape 64x64x64 -o /proc/pipelines_out", "cannot write /proc/pipelines_out"),
    ("compile --target gfx942 --shape 64x64x64 -o {F}/a_file/out", "is a file, not a folder"),
    ("compile --target gfx942 --shape 64x64x64 -o {F}/a_file", "is a file, not a folder"),
    # spec
    ("spec --target sm_80 --shape 512x512x512 --dtype f16 --pipeline tuned", "compilation_info"),
    ("spec --target sm_89 --shape 512x512x512 --pipeline auto -o {OUT}", "reads no tuning spec for CUDA"),
    ("spec --target gfx942 --shape 512x512x512", "schedules nothing"),
    ("spec --target cpu --shape 512x512x512 --pipeline auto", "only the 'default' pipeline"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned -o /proc/spec.mlir", "cannot write /proc/spec.mlir"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned -o {F}", "is a folder"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned -o {F}/a_file/spec.mlir", "is a file, not a folder"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned -o {OUT}/nowhere/spec.mlir", "does not exist"),
    ("spec --target gfx942 --input {F}/bin.mlir --pipeline tuned", "is not MLIR text"),
    ("spec --target gfx942 --input {F}/dir.mlir --pipeline tuned", "is a folder"),
    ("spec --target gfx942 --shape 512x512x512 --pipeline tuned --alpha nan", "finite"),
    # inspect
    ("inspect {F}/missing", "no report.json"),
    ("inspect {F}/a_file", "no report.json"),
    ("inspect {F}/rep_invalid", "is not valid JSON"),
    ("inspect {F}/rep_truncated", "is not valid JSON"),
    ("inspect {F}/rep_empty", "is not valid JSON"),
    ("inspect {F}/rep_binary", "is not valid JSON"),
    ("inspect {F}/rep_list", "not a JSON object"),
    ("inspect {F}/rep_target_int", "'target' is 5, not a string"),
    ("inspect {F}/rep_no_target", "'target' is null"),
    ("inspect {F}/rep_unknown_target", "unknown target 'gfx900'"),
    ("inspect {F}/rep_problems_string", "'problems'"),
    ("inspect {F}/rep_no_problems", "no problem"),
    ("inspect {F}/rep_m_missing", "'m' is null"),
    ("inspect {F}/rep_m_string", "'m' is \"64\""),
    ("inspect {F}/rep_epilogue_string", "'epilogue'"),
    ("inspect {F}/rep_files_list", "'files'"),
    ("inspect {F}/rep_no_dump_key", "no dump folder"),
    ("inspect {F}/rep_verified_string", "'verified'"),
    ("inspect {F}/rep_no_dump_folder", "but no dump/ folder"),
    ("inspect {F}/rep_empty_dump", "holds no compiled dispatch"),
    ("inspect {F}/rep_invalid --json", "is not valid JSON"),
    # emulate
    ("emulate {F}/missing", "no report.json"),
    ("emulate {F}/rep_invalid", "is not valid JSON"),
    ("emulate {F}/rep_binary", "is not valid JSON"),
    ("emulate {F}/rep_list", "not a JSON object"),
    ("emulate {F}/rep_m_zero", "a size below 1"),
    ("emulate {F}/rep_layout", "layout 'xx'"),
    ("emulate {F}/rep_dispatch_no_isa", "no 'isa_file'"),
    ("emulate {F}/rep_cuda", "not sm_80"),
    ("emulate {F}/rep_no_dump_folder", "is missing"),
    ("emulate {F}/rep_bad_isa", "kernel text"),
    ("emulate {F}/rep_binary_isa", "is not text"),
    ("emulate {F}/rep_dtype", "'f64'"),
    ("emulate {F}/rep_bad_isa --seed=-5", "at least 0"),
    ("emulate {F}/rep_bad_isa --seed abc", "is not an integer"),
    ("emulate {F}/rep_bad_isa --shape 0x64x64", "positive integers"),
    ("emulate {F}/rep_bad_isa --shape 64x64", "must have the form"),
    # calibrate
    ("calibrate --csv {F}/missing.csv", "does not exist"),
    ("calibrate --csv {F}/cal_columns.csv", "must have the columns source,gpu,target"),
    ("calibrate --csv {F}/cal_empty.csv", "has no rows"),
    ("calibrate --csv {F}/cal_zero.csv", "row 1 of"),
    ("calibrate --csv {F}/cal_time.csv", "positive time_us"),
    ("calibrate --csv {F}/cal_binary.csv", "not a text CSV file"),
    ("calibrate --csv {F}/cal_zero.csv --workers 0", "at least 1"),
    ("calibrate", "--csv"),
    # predict
    ("predict {F}/missing", "no report.json"),
    ("predict {F}/rep_invalid", "is not valid JSON"),
    ("predict {F}/rep_list", "not a JSON object"),
    ("predict {F}/rep_cuda", "predicts AMD kernels (gfx942, gfx950, gfx1151), not sm_80"),
    ("predict {F}/rep_no_dump_folder", "is missing"),
    ("predict {F}/rep_bad_isa", "kernel text"),
    ("predict {F}/rep_dtype", "'f64'"),
    ("predict {F}/rep_bad_isa --seed=-5", "at least 0"),
    ("predict {F}/rep_bad_isa --timeline {F}", "--timeline"),
    ("calibrate --csv {F}/cal_zero.csv --keep {F}/cal_zero.csv", "--keep"),
    # bench
    ("bench --target cpu --shape 64x64x64 --device local-task --repetitions 0 -o {OUT}", "at least 1"),
    ("bench --target cpu --shape 64x64x64 --device local-task --repetitions=-2 -o {OUT}", "at least 1"),
    ("bench --target cpu --shape 64x64x64 --pipelines tuned --device local-task -o {OUT}",
     "only the 'default' pipeline"),
    ("bench --target gfx942 --shape 64x64x64 --pipelines tuned,,auto --compile-only -o {OUT}", "unknown pipeline ''"),
    ("bench --target gfx942 --shape 64x64x64 --pipelines codegen-raster --compile-only -o {OUT}",
     "choose one of default, tuned, auto, searched, ukernel, codegen"),
    ("bench --target gfx942 --shape 64x64x64 --device local-task -o {OUT}", "use --device hip"),
    ("bench --target sm_80 --shape 64x64x64 --device hip -o {OUT}", "use --device cuda"),
    ("bench --target cpu --shape 64x64x64 --device cuda -o {OUT}", "use --device local-task or local-sync"),
    ("bench --target gfx942 --shape 64x64x64 -o {OUT}", "give --device (hip for gfx942)"),
    ("bench --target gfx942 --compile-only", "needs --target and -o"),
    ("bench --target gfx942 --compile-only -o {OUT}", "give the problem as --shape MxNxK (or BxMxNxK)."),
    ("bench --target gfx942 --input {F}/bad.mlir --compile-only -o {OUT}", "--input files are for compile and spec"),
    ("bench --target gfx942 --shape 64x64x64 --compile-only -o /proc/bench", "cannot write /proc/bench"),
    ("bench --target gfx942 --shape 64x64x64 --compile-only -o {F}/a_file", "is a file, not a folder"),
    ("bench --target cpu --suite nope --device local-task -o {OUT}", "unknown suite 'nope'"),
    ("bench --target cpu --suite {F}/suite_truncated.json --device local-task -o {OUT}", "is not valid JSON"),
    ("bench --target cpu --suite {F}/suite_binary.json --device local-task -o {OUT}", "is not valid JSON"),
    ("bench --target cpu --suite {F}/suite_list.json --device local-task -o {OUT}", "'problems' list"),
    ("bench --target cpu --suite {F}/suite_no_problems.json --device local-task -o {OUT}", "'problems' list"),
    ("bench --target cpu --suite {F}/suite_empty.json --device local-task -o {OUT}", "non-empty 'problems'"),
    ("bench --target cpu --suite {F}/suite_shape_int.json --device local-task -o {OUT}", "'shape' string"),
    ("bench --target cpu --suite {F}/suite_problem_string.json --device local-task -o {OUT}", "'shape' string"),
    ("bench --target cpu --suite {F}/suite_layout.json --device local-task -o {OUT}", "unknown layout 'xx'"),
    ("bench --target cpu --suite {F}/suite_epilogue.json --device local-task -o {OUT}", "unknown epilogue"),
    ("bench --target cpu --suite {F}/suite_zero.json --device local-task -o {OUT}", "size M=0"),
    ("bench --target cpu --suite smoke --dtype f64 --device local-task -o {OUT}", "unknown --dtype 'f64'"),
    ("bench --target cpu --suite smoke --dtype bf16,,f16 --device local-task -o {OUT}", "unknown --dtype ''"),
    ("bench --target gfx1151 --suite smoke --dtype f8e4m3fnuz --compile-only -o {OUT}", "no fp8 matrix"),
    ("bench --plan {F}/plan_empty --device local-task", "has no plan.json"),
    ("bench --plan {F}/plan_truncated --device local-task", "is not valid JSON"),
    ("bench --plan {F}/plan_list --device local-task", "list of 'cases'"),
    ("bench --plan {F}/plan_case_missing --device local-task", "list of 'cases'"),
    ("bench --plan {F}/plan_unknown_target --device local-task", "unknown target 'gfx900'"),
    ("bench --plan {F}/plan_gfx942 --device local-task", "use --device hip"),
    ("bench --plan {F}/plan_gfx942", "plan for gfx942 needs --device hip"),
    # report
    ("report {F}/missing", "has no results.jsonl"),
    ("report {F}/a_file", "has no results.jsonl"),
    ("report {F}/res_empty", "holds no results yet"),
    ("report {F}/res_blank", "holds no results yet"),
    ("report {F}/res_truncated", "holds no whole row"),
    ("report {F}/res_garbage", "is not a JSON row"),
    ("report {F}/res_binary", "is not a JSON row"),
    ("report {F}/res_list", "line 1 of"),
    ("report {F}/res_number", "is not a JSON row"),
    ("report {F}/res_no_pipeline", "'pipeline' null"),
    ("report {F}/res_no_id", "is not a JSON row with an 'id'"),
    ("report {F}/res_no_status", "'status' null"),
    ("report {F}/res_no_problem", "'problem' null"),
    ("report {F}/res_problem_string", "'problem' \"64x64x64\""),
    ("report {F}/res_m_string", "problem 'm' \"64\""),
    ("report {F}/res_m_bool", "problem 'm' true"),
    ("report {F}/res_batch_string", "batch"),
    ("report {F}/res_no_layout", "problem 'layout' null"),
    ("report {F}/res_tflops_string", "tflops \"fast\""),
    ("report {F}/res_tflops_missing", "tflops null"),
    ("report {F}/res_tflops_zero", "tflops 0"),
    ("report {F}/res_vendor_zero", "vendor tflops 0.0"),
    ("report {F}/res_vendor_string", "'vendor' that is not an object"),
    ("report {F}/res_error_string", "max_rel_error \"small\""),
    ("report {F}/res_no_pipeline -o {OUT}", "'pipeline' null"),
    ("report {F}/res_no_pipeline -o /proc/report", "cannot write /proc/report"),
    ("report {F}/res_no_pipeline -o {F}/a_file", "is a file, not a folder"),
    # tune
    ("tune --target cpu --shape 64x64x64 --compile-only -o {OUT}", "tune searches GPU schedules"),
    ("tune --target gfx942 --shape 64x64x64 --limit 0 --compile-only -o {OUT}", "at least 1"),
    ("tune --target gfx942 --shape 64x64x64 --limit=-1 --compile-only -o {OUT}", "at least 1"),
    ("tune --target gfx942 --shape 64x64x64 --repetitions 0 --compile-only -o {OUT}", "at least 1"),
    ("tune --target gfx942 --shape 64x64x64 --device local-task -o {OUT}", "use --device hip"),
    ("tune --target sm_89 --shape 64x64x64 --device hip -o {OUT}", "use --device cuda"),
    ("tune --target gfx942 --shape 64x64x64 --route codegen --compile-only -o {OUT}", "CUDA codegen library"),
    ("tune --target gfx942 --shape 64x64x64 --route lanes --compile-only -o {OUT}", "invalid choice: 'lanes'"),
    ("tune --target gfx942 --compile-only -o {OUT}", "give the problem as --shape MxNxK (or BxMxNxK)."),
    ("tune --target gfx942 --input {F}/bad.mlir --compile-only -o {OUT}", "--input files are for compile and spec"),
    ("tune --target gfx942 --shape 64x64x64 --compile-only -o /proc/tune", "cannot write /proc/tune"),
    ("tune --target gfx942 --shape 64x64x64 --compile-only -o {F}/a_file/tune", "is a file, not a folder"),
    ("tune --target gfx942 --shape 64x64x64 --alpha nan --compile-only -o {OUT}", "finite"),
    ("tune --target gfx942 --shape 0x64x64 --compile-only -o {OUT}", "size M=0"),
    ("tune --target gfx942 --shape 64x64x64 --compile-only", "-o/--output"),
    ("tune --target gfx942 --shape 64x64x64 -o {F}/tune_no_plan", "no plan.json"),
    ("tune --target gfx942 --shape 64x64x64 --cache {F} --compile-only -o {OUT}", "the tune cache is a JSON file"),
    ("tune --target gfx942 --shape 64x64x64 --cache /proc/tune.json --compile-only -o {OUT}", "cannot write /proc"),
    ("tune --target gfx942 --shape 64x64x64 --cache {F}/a_file/tune.json --compile-only -o {OUT}",
     "is a file, not a folder"),
    ("tune --target gfx942 --shape 64x64x64 -o {F}/tune_bad_plan", "is not valid JSON"),
    ("tune --target gfx942 --shape 64x64x64 -o {F}/tune_bad_results", "is not a JSON row"),
    # explain
    ("explain --schedule pingpong8 --tile 100x100x7", "tile 100x100x7 is invalid"),
    ("explain --schedule pingpong8 --tile 48x64x64", "tile 48x64x64 is invalid"),
    ("explain --schedule interleave4 --tile 16x16x16", "do not split evenly over 8 waves"),
    ("explain --schedule producer_consumer --tile 16x16x16", "do not split evenly over 8 waves"),
    ("explain --schedule double_buffered --tile 16x16x16", "do not split evenly over 4 waves"),
    ("explain --schedule double_buffered --tile 128x128x8", "K of 16"),
    ("explain --schedule pingpong8 --tile 0x0x0", "positive integers"),
    ("explain --schedule pingpong8 --tile 256x256", "must have the form"),
    ("explain --schedule pingpong8 --k-steps 0", "in 1..64"),
    ("explain --schedule pingpong8 --k-steps=-3", "in 1..64"),
    ("explain --schedule pingpong8 --k-steps 100000", "in 1..64"),
    ("explain --schedule pingpong8 --lds-stages 3", "invalid choice: 3"),
    ("explain --schedule pingpong8 --tile 256x256x64 --target gfx942 --lds-stages 2", "gfx942 has 65536"),
    ("explain --schedule pingpong8 --target sm_80", "sm_80 is a cuda target"),
    ("explain --schedule pingpong8 --target cpu", "cpu is a cpu target"),
    ("explain --schedule pingpong8 --target gfx900", "unknown target"),
    ("explain --schedule nope", "unknown schedule 'nope'"),
    ("explain --schedule double_buffered_dma", "name its target with --target"),
    ("explain --schedule pingpong8 -o /proc/timeline.png", "cannot write /proc/timeline.png"),
    ("explain --schedule pingpong8 -o {F}/a_file/timeline.png", "is a file, not a folder"),
    ("explain --schedule pingpong8 -o {OUT}/nowhere/timeline.png", "does not exist"),
    ("explain --schedule pingpong8 -o {F}", "is a folder"),
    ("explain --schedule pingpong8 -o {OUT}.jpg", "must name a .png file"),
    # list and the top level
    ("list --bogus", "unrecognized arguments: --bogus"),
    ("list extra", "unrecognized arguments: extra"),
    ("frobnicate", "invalid choice: 'frobnicate'"),
    ("", "the following arguments are required"),
    # ---- issue 29: output admission. A user's plan.json, results.jsonl or report.json does not make a folder the
    # tool's; an output that is or holds an input, and a folder of another kind, are refused even with --force;
    # single outputs are checked before any work or print; a bad CSV leaves no --keep folder.
    ("bench --target cpu --shape 64x64x64 --compile-only -o {F}/user_plan", "pass --force"),
    ("tune --target gfx942 --shape 256x256x256 --compile-only -o {F}/user_plan", "pass --force"),
    ("bench --target cpu --shape 64x64x64 --compile-only -o {F}/user_results", "pass --force"),
    ("tune --target gfx942 --shape 256x256x256 -o {F}/user_results", "pass --force"),
    ("compile --target cpu --shape 64x64x64 -o {F}/user_report", "pass --force"),
    ("compile --target cpu --input {F}/inputs/gemm.mlir -o {F}/inputs --force", "holds the input"),
    ("spec --target gfx942 --pipeline tuned --input {F}/inputs/gemm.mlir -o {F}/inputs/gemm.mlir --force",
     "is the input"),
    ("bench --target cpu --suite {F}/inputs/suite.json --compile-only -o {F}/inputs --force", "holds the input"),
    ("tune --target gfx942 --shape 256x256x256 --cache {F}/inputs/cache.json --compile-only -o {F}/inputs --force",
     "holds the input"),
    ("calibrate --csv {F}/inputs/rows.csv --keep {F}/inputs --force", "holds the input"),
    ("calibrate --csv {F}/inputs/rows.csv --keep {F}/keep_user", "pass --force"),
    ("calibrate --csv {F}/cal_zero.csv --keep {OUT}", "row 1 of"),
    ("bench --target cpu --shape 64x64x64 --compile-only -o {F}/tune_plan --force", "is a tune folder"),
    ("tune --target gfx942 --shape 256x256x256 --compile-only -o {F}/bench_plan --force", "is a bench folder"),
    ("calibrate --csv {F}/inputs/rows.csv --keep {F}/bench_plan --force", "is a bench folder"),
    ("compile --target cpu --shape 64x64x64 -o {F}/tune_plan --force", "is a tune folder"),
    ("bench --target cpu --shape 64x64x64 --compile-only -o {F}/compile_out", "is a compile folder"),
    ("report {F}/tune_plan -o {F}/compile_out --force", "is a compile folder"),
    ("report {F}/tune_plan -o {F}/user_results", "pass --force"),
    ("explain --schedule pingpong8 -o {F}/user.png", "exists and was not written by pipelines"),
    ("explain --schedule hopper-pingpong -o {F}/user.png", "exists and was not written by pipelines"),
    ("predict {F}/rep_bad_isa --timeline {F}/user.png", "exists and was not written by pipelines"),
    # a plan.json of the user's is never run into (the runner would append results.jsonl beside it)
    ("bench --plan {F}/user_plan --device local-task", "user_plan/plan.json was not written by pipelines"),
]

# The fixtures of the issue-29 cases: a folder of the tool's carries a manifest (written here by hand) of its kind.
_PLAN_FILES = ["plan.json", "results.jsonl", "cases/"]
FILES.update({
    "user_plan/plan.json": json.dumps({"target": "cpu", "cases": [PLAN_CASE]}),
    "user_plan/notes.txt": "the user's notes\n",
    "user_results/results.jsonl": json.dumps(ROW) + "\n",
    "user_report/report.json": json.dumps({"files": {"all": ["gemm.mlir"]}}),
    "user_report/gemm.mlir": "// the user's own gemm.mlir\n",
    "inputs/gemm.mlir": MATMUL.format(a="64x64xbf16", b="64x64xbf16", c="64x64xf32"),
    "inputs/suite.json": '{"problems": [{"shape": "64x64x64"}]}',
    "inputs/rows.csv": CSV_HEAD + "s,MI355X,gfx950,mm,64,64,64,NN,bf16,dma_off,10\n",
    "inputs/cache.json": "{}",
    "keep_user/notes.txt": "the user's notes\n",
    "user.png": BINARY,
    "tune_plan/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "tune",
                                                    "outputs": {"plan": _PLAN_FILES}}),
    "tune_plan/plan.json": json.dumps({"target": "gfx942", "cases": [PLAN_CASE]}),
    "tune_plan/results.jsonl": json.dumps(ROW) + "\n",
    "bench_plan/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "bench",
                                                     "outputs": {"plan": _PLAN_FILES}}),
    "bench_plan/plan.json": json.dumps({"target": "cpu", "cases": [PLAN_CASE]}),
    "compile_out/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "compile",
                                                      "outputs": {"compile": ["gemm.mlir"]}}),
    "compile_out/gemm.mlir": "// compiled\n",
    # the tune folders above (`tune_*`) are the tool's: their faults are in the files, not in whose they are
    **{f"{name}/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "tune",
                                                     "outputs": {"plan": _PLAN_FILES}})
       for name in ("tune_no_plan", "tune_bad_plan", "tune_bad_results")},
    # so are the bench plans of `bench --plan` and the runner (`runner.check_plan_folder`)
    **{f"{name}/.pipelines-output.json": json.dumps({"written_by": "amd-gemm-pipelines", "kind": "bench",
                                                     "outputs": {"plan": _PLAN_FILES}})
       for name in ("plan_truncated", "plan_list", "plan_case_missing", "plan_unknown_target", "plan_gfx942",
                    "plan_cpu")},
})


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad_inputs")
    for name, content in FILES.items():
        path = folder / name
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _digest(folder: Path) -> dict[str, str | None]:
    """Every path under `folder` with the hash of its bytes (None for a folder, the target for a link): a refusal
    must leave the user's files as they were, byte for byte, not only by name."""
    return {str(p.relative_to(folder)): f"-> {os.readlink(p)}" if p.is_symlink() else
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def run_main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit:  # argparse's usage errors
        return exit.code
    except KeyboardInterrupt:  # escaping main would stop pytest itself rather than fail this test
        pytest.fail("KeyboardInterrupt escaped pipelines.cli.main")


def assert_one_sentence(code, stderr: str, message: str, interrupted: bool = False) -> None:
    assert code == (130 if interrupted else 2), stderr
    assert "Traceback" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    assert stderr.startswith("pipelines: error: ") or (stderr.startswith("pipelines ") and ": error: " in stderr)
    assert message in stderr, stderr


def test_every_verb_and_tool_meets_300_distinct_bad_inputs():
    """The bad-input tables of the command line (here and test_bad_input_flags.py), of the GPU-side runner and of
    results/h100/hopper/hopper_gemm.py together: each entry a distinct command line with the sentence it must give."""
    import test_bad_input_flags
    import test_hopper_gemm_cli

    tables = {"pipelines": [line for line, _ in CASES + test_bad_input_flags.CASES],
              "runner": [line for line, _ in test_bad_input_flags.RUNNER_CASES],
              "hopper_gemm": [" ".join(argv) for argv, _ in test_hopper_gemm_cli.BAD_INPUTS]}
    for tool, lines in tables.items():
        assert len(set(lines)) == len(lines), [line for line in lines if lines.count(line) > 1]
    verbs = {line.split()[0] for line in tables["pipelines"] if line}
    assert verbs >= {"compile", "spec", "inspect", "bench", "report", "tune", "tune-model", "explain", "emulate",
                     "predict", "calibrate", "list"}, verbs
    assert {argv[0] for argv, _ in test_hopper_gemm_cli.BAD_INPUTS if argv} >= {"build", "run", "inspect"}
    assert sum(len(lines) for lines in tables.values()) >= 300


def test_cases_are_distinct_and_many():
    lines = [line for line, _ in CASES]
    assert len(set(lines)) == len(lines) >= 100
    assert all("  " not in line for line in lines)  # arguments are split at single spaces (values may hold \n)
    assert {line.split()[0] for line in lines if line} == {"compile", "spec", "inspect", "bench", "report", "tune",
                                                           "explain", "emulate", "predict", "calibrate", "list",
                                                           "frobnicate"}


@pytest.mark.parametrize("line, message", CASES, ids=[line or "(no arguments)" for line, _ in CASES])
def test_bad_input_is_one_sentence_and_writes_nothing(line, message, fixture_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "DEFAULT_CACHE", fixture_dir / "no_tune_cache.json")  # not the user's cache
    out = tmp_path / "out"
    argv = [a.replace("{F}", str(fixture_dir)).replace("{OUT}", str(out)) for a in (line.split(" ") if line else [])]
    before, fixtures_before = _digest(tmp_path), _digest(fixture_dir)
    print("input:", " ".join(argv))
    code = run_main(argv)
    captured = capsys.readouterr()
    assert_one_sentence(code, captured.err, message)
    assert captured.out == f"input: {' '.join(argv)}\n"  # refused before anything is printed
    assert not out.exists() and not Path(f"{out}.jpg").exists()
    assert _digest(tmp_path) == before and _digest(fixture_dir) == fixtures_before


def test_the_fixtures_are_good_but_for_their_fault(fixture_dir, tmp_path, capsys):
    """Positive controls: the unbroken report.json and results.jsonl the corrupt fixtures are made from are read."""
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.jsonl").write_text(json.dumps(ROW) + "\n")
    assert run_main(["report", str(tmp_path / "res"), "-o", str(tmp_path / "rendered")]) == 0
    assert "default TFLOP/s" in (tmp_path / "rendered" / "results.md").read_text()
    from pipelines.inspect import read_report

    (tmp_path / "report.json").write_text(json.dumps(REPORT))
    assert read_report(tmp_path / "report.json") == REPORT


@pytest.mark.parametrize("where", ["flow.compile_job", "write_reports", "text_table", "run_plan"])
def test_ctrl_c_in_process_is_exit_130_and_one_line(where, fixture_dir, tmp_path, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    from pipelines import commands, flow

    owner, _, name = where.rpartition(".")
    module = {"flow": flow, "": commands if name == "text_table" else cli}[owner]  # where the verb calls it
    monkeypatch.setattr(module, name, interrupted)
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.jsonl").write_text(json.dumps(ROW) + "\n")
    argv = {"flow.compile_job": ["compile", "--target", "cpu", "--shape", "64x64x64", "-o", "out"],
            "write_reports": ["report", "res", "-o", "rendered"],
            "text_table": ["explain", "--schedule", "pingpong8"],
            "run_plan": ["bench", "--plan", str(fixture_dir / "plan_cpu"), "--device", "local-task"]}[where]
    print("input:", " ".join(argv), f"(Ctrl-C in {where})")
    assert_one_sentence(run_main(argv), capsys.readouterr().err, "interrupted", interrupted=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_ctrl_c_in_the_runner_is_exit_130_and_one_line(fixture_dir, monkeypatch, capsys):
    from pipelines import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_plan", interrupted)
    code = runner.main([str(fixture_dir / "plan_cpu"), "--device", "local-task"])
    assert_one_sentence(code, capsys.readouterr().err, "interrupted", interrupted=True)


def _pipelines(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "pipelines", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(REPO),
                                                                     "PATH": str(Path(sys.executable).parent)})


def test_ctrl_c_during_a_compile_is_exit_130_one_line_and_no_output(tmp_path):
    """A real SIGINT while iree-compile runs: one line, exit 130, no output folder, no staged leftovers."""
    process = _pipelines("compile", "--target", "gfx942", "--shape", "4096x4096x4096", "--pipeline", "tuned",
                         "-o", "out", cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".out.") for p in tmp_path.iterdir()):  # the staged folder: compiling now
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert_one_sentence(process.returncode, stderr, "pipelines: error: interrupted.", interrupted=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["compile", "--target", "gfx942", "--input", "BIN", "-o", "out"], "is not MLIR text"),
    (["report", "RES"], "holds no whole row"),
    (["emulate", "REP", "--seed=-5"], "at least 0"),
])
def test_bad_input_in_a_real_process(args, message, fixture_dir, tmp_path):
    paths = {"BIN": fixture_dir / "bin.mlir", "RES": fixture_dir / "res_truncated",
             "REP": fixture_dir / "rep_bad_isa"}
    args = [str(paths.get(a, a)) for a in args]
    print("input:", " ".join(args))
    before = _tree(fixture_dir)
    process = _pipelines(*args, cwd=tmp_path)
    _, stderr = process.communicate(timeout=120)
    assert_one_sentence(process.returncode, stderr, message)
    assert list(tmp_path.iterdir()) == [] and _tree(fixture_dir) == before


def test_a_closed_stdout_pipe_is_silent(tmp_path):
    """`pipelines list | head -1`: the reader going away is not an error of the user's; exit 141 like SIGPIPE."""
    process = _pipelines("list", "--json", cwd=tmp_path)
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 141 and stderr == ""


def test_os_errors_become_one_sentence(tmp_path, monkeypatch, capsys):
    """A write the pre-checks cannot foresee (here: the disk is full) is one sentence naming the path."""
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "out" / "gemm.mlir"))

    monkeypatch.setattr("pipelines.flow.compile_job", full)
    code = run_main(["compile", "--target", "cpu", "--shape", "64x64x64", "-o", str(tmp_path / "out")])
    assert_one_sentence(code, capsys.readouterr().err, f"{tmp_path / 'out' / 'gemm.mlir'}: no space left on device.")


def test_every_project_error_type_is_reported(tmp_path):
    """Every exception class the project defines for user mistakes is caught by `main` (an uncaught one would be a
    traceback); `Hazard` of the emulator is a record, not an exception."""
    import importlib
    import pkgutil
    import re

    import pipelines
    import transforms

    classes = []
    for package in (pipelines, transforms):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            source = Path(importlib.import_module(module.name).__file__).read_text()
            for name in re.findall(r"^class (\w+)\((?:[\w, ]*Error|[\w, ]*ValueError|[\w, ]*RuntimeError)\)", source,
                                   re.M):
                classes.append(getattr(importlib.import_module(module.name), name))
    assert len(classes) >= 16
    missing = [c.__name__ for c in classes if not issubclass(c, UserError)]
    assert not missing, missing


@pytest.mark.parametrize("argv", [
    ["compile", "--target", "gfx942", "--shape", "64x64x64", "-o", "OUT"],
    ["spec", "--target", "gfx942", "--shape", "64x64x64", "--pipeline", "tuned"],
    ["inspect", "FOLDER"], ["bench", "--target", "cpu", "--suite", "smoke", "--compile-only", "-o", "OUT"],
    ["report", "FOLDER"], ["tune", "--target", "sm_80", "--shape", "256x256x256", "--compile-only", "-o", "OUT"],
    ["explain", "--schedule", "pingpong8"], ["emulate", "FOLDER"], ["predict", "FOLDER"],
    ["calibrate", "--csv", "FOLDER/x.csv"], ["list"]],
    ids=lambda argv: argv[0])
def test_a_user_error_raised_anywhere_is_one_sentence_and_exit_2(argv, tmp_path, capsys, monkeypatch):
    """Every subcommand: the command line catches the one base class, so a subclass defined anywhere (here a new
    one) is one sentence with exit 2."""
    class NewKindOfMistake(UserError):
        pass

    def raise_new(*args, **kwargs):
        raise NewKindOfMistake("a new kind of mistake names its value.")

    parser = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda: _rebound(parser(), raise_new))
    code = run_main([a.replace("OUT", str(tmp_path / "o")).replace("FOLDER", str(tmp_path)) for a in argv])
    assert_one_sentence(code, capsys.readouterr().err, "a new kind of mistake names its value.")


def _rebound(parser, run):
    """The parser with every subcommand's handler replaced by `run` (set_defaults bound the originals)."""
    for action in parser._subparsers._group_actions:
        for sub in action.choices.values():
            sub.set_defaults(run=run)
    return parser
