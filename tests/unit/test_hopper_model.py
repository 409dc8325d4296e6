"""Whole models on the Hopper kernels (`pipelines.hopper_model`, issue 33): the transformer block's contractions
become calls of Hopper dispatches, the importer's rounding fused, K read as stored for Q·Kᵀ; what the kernels do not
take stays with IREE, each with its reason; the rewritten program compiles to one Hopper kernel per distinct
contraction beside IREE's own dispatches for the rest.

Oracles: the block as tools/transformer_block.py defines it (eight products of known sizes and operands, Q·Kᵀ's B
the K projection as stored), the PTX of the compiled program read here (entries, their parameters), and hand-written
linalg programs for each reason a contraction is left."""

from __future__ import annotations

import re
import subprocess

import pytest

import json

from pipelines import cli
from pipelines.compiler import iree_compile_path
from pipelines.hopper_model import FUNCTION_PREFIX, SMALL_K_SCHEDULE, product_schedule, rewrite
from pipelines.model_input import read_model, to_linalg
from pipelines.targets import get_target
from transforms import hopper
from transforms.problem import ProblemError

onnx = pytest.importorskip("onnx")  # the test extra installs it

from tools import transformer_block  # noqa: E402

S, D, F = 256, 128, 512
SM90 = get_target("sm_90a")


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    folder = tmp_path_factory.mktemp("block")
    path = transformer_block.build(folder / "block.onnx", S, D, F, "inputs")
    return to_linalg(read_model(path), SM90, str(path))


def test_every_product_of_the_block_is_a_hopper_call_with_its_rounding_fused(block):
    model = rewrite(block, "block", fuse_tail=False, softmax=False)
    got = [(c.gemm.m, c.gemm.n, c.gemm.k, c.gemm.layout, c.gemm.epilogue.kind, c.gemm.dtype) for c in model.calls]
    # X·Wq, X·Wk, X·Wv; Q·Kᵀ reading K (S×D) as stored: NT; P·V; ·Wo; ·W1; ·W2: each rounded to f16 by the importer
    assert got == [(S, D, D, "nn", "truncf", "f16")] * 3 + [(S, S, D, "nt", "truncf", "f16"), (S, D, S, "nn", "truncf",
                   "f16"), (S, D, D, "nn", "truncf", "f16"), (S, F, D, "nn", "truncf", "f16"),
                   (S, D, F, "nn", "truncf", "f16")]
    assert model.left == ()
    # equal products share one function; five distinct ones
    assert [c.function for c in model.calls] == [FUNCTION_PREFIX + str(i) for i in (0, 0, 0, 1, 2, 0, 3, 4)]
    text = model.text
    assert "linalg.matmul" not in text and text.count("func.call @" + FUNCTION_PREFIX) == 8
    # Q·Kᵀ's call takes the K projection's call result itself (the transpose is left without a user)
    calls = re.findall(rf"(%\w+) = func\.call @({FUNCTION_PREFIX}\d+)\((%\w+), (%\w+)\)", text)
    k_projection = calls[1][0]
    assert calls[3][1] == FUNCTION_PREFIX + "1" and calls[3][3] == k_projection
    # the eight roundings of the products are gone from the program (fused); the Gelu stays (asked to leave it)
    program = lambda t: t.split("hal.executable.source")[0]  # noqa: E731
    assert program(block).count("arith.truncf") - program(text).count("arith.truncf") == 8
    assert "math.erf" in program(text) and all(c.tail is None for c in model.calls)


def test_the_gelu_runs_in_the_w1_kernels_store(block):
    model = rewrite(block, "block")  # fusing is the default
    program = lambda t: t.split("hal.executable.source")[0]  # noqa: E731
    assert "math.erf" in program(block) and "math.erf" not in program(model.text)
    tails = [c.tail for c in model.calls]
    # the fused one on the shipped schedule (faster, measured); the others, K ≤ 1024 here, on ping-pong
    assert [c.schedule for c in model.calls] == [SMALL_K_SCHEDULE] * 6 + [hopper.DEFAULT, SMALL_K_SCHEDULE]
    assert tails[:6] == [None] * 6 and tails[7] is None
    # the Gelu as the ONNX importer writes it, on the rounded f16 element: x · (erf(x / sqrt(2)) + 1) · 0.5
    names = [name for name, _, _ in tails[6].ops]
    assert names == ["math.sqrt", "arith.divf", "math.erf", "arith.addf", "arith.mulf", "arith.mulf"]
    assert tails[6].ops[1][1] == ("in", 0) and tails[6].ops[-1][1] == ("in", 4)
    assert all(ty == "f16" for _, _, ty in tails[6].ops)
    # what the kernel applies: the erf a polynomial, the division a product (tests/unit/test_tail_math.py: same bits)
    lowered = [name for name, _, _ in tails[6].lowered("f16")]
    assert "math.erf" not in lowered and "arith.divf" not in lowered and lowered.count("math.fma") == 12


def test_the_rewritten_block_compiles_to_one_hopper_kernel_per_distinct_product(block, tmp_path):
    model = rewrite(block, "block")
    source = tmp_path / "hopper.mlir"
    source.write_text(model.text)
    dump = tmp_path / "dump"
    done = subprocess.run([str(iree_compile_path()), str(source), *SM90.compile_flags,
                           f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "m.vmfb")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = "\n".join(p.read_text() for p in dump.glob("*.ptx"))
    entries = re.findall(r"\.entry (\w+)\(", ptx)
    hopper_entries = sorted(e for e in entries if e.startswith(FUNCTION_PREFIX))
    assert hopper_entries == [FUNCTION_PREFIX + str(i) for i in range(5)]
    # beside them, IREE's own kernel for the softmax alone: no product, no split-out consumer (the Gelu is fused)
    others = [e for e in entries if not e.startswith(FUNCTION_PREFIX)]
    assert len(others) == 1 and "softmax" in others[0]
    w1 = hopper.ptx_kernel(ptx, model.calls[6].function)
    assert "cvt.rn.f16.f32" in w1 and "cvt.rn.f16x2.f32" not in w1  # each element rounded, then the Gelu
    # the Gelu's lowered ops, not IREE's erf: twelve fused multiply-adds an element, no division
    assert "div.rn" not in w1 and len(re.findall(r"fma\.rn\.f32", w1)) % 12 == 0 and "fma.rn.f32" in w1
    for call in {c.function: c for c in model.calls}.values():
        hopper.check_ptx(ptx, call.gemm, call.schedule, entry=call.function, tail=call.tail)
    # one fused multiply-add short, or a division left in, is refused
    fma = re.search(r"\tfma\.rn\.f32 [^\n]*\n", w1).group(0)
    for tampered in (w1.replace(fma, "", 1), w1.replace(fma, fma + "\tdiv.rn.f32 %f1, %f1, %f1;\n", 1)):
        with pytest.raises(hopper.HopperError, match="fused consumer"):
            hopper.check_ptx(ptx.replace(w1, tampered), model.calls[6].gemm, model.calls[6].schedule,
                             entry=model.calls[6].function, tail=model.calls[6].tail)
    # the check reads the tail: the W1 kernel without it, or another kernel with it, is refused
    w1_call, w2_call = model.calls[6], model.calls[7]
    with pytest.raises(hopper.HopperError, match="fused consumer"):
        hopper.check_ptx(ptx, w1_call.gemm, w1_call.schedule, entry=w1_call.function)
    with pytest.raises(hopper.HopperError, match="fused consumer"):
        hopper.check_ptx(ptx, w2_call.gemm, w2_call.schedule, entry=w2_call.function, tail=w1_call.tail)


MATMUL = """func.func @f(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %c0: tensor<{m}x{n}xf32>)
    -> tensor<{m}x{n}xf32> {{
  %zero = arith.constant {fill} : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>)
    outs({outs} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}"""


def test_a_lone_product_keeps_its_f32_result():
    model = rewrite(MATMUL.format(m=256, n=128, k=64, fill="0.0", outs="%init"), "one")
    call, = model.calls
    assert (call.gemm.layout, call.gemm.epilogue.kind, call.gemm.out_dtype) == ("nn", "none", "f32")


@pytest.mark.parametrize("m, n, k, fill, outs, reason", [
    (256, 128, 60, "0.0", "%init", "K must be a multiple of 8"),
    (256, 100, 64, "0.0", "%init", "needs N a multiple of 8"),
    (256, 128, 64, "1.0", "%init", "does not start from a fill of 0.0"),
    (256, 128, 64, "0.0", "%c0", "does not start from a fill of 0.0"),
])
def test_what_the_kernels_do_not_take_is_left_with_its_reason(m, n, k, fill, outs, reason):
    with pytest.raises(ProblemError, match="take none of its contractions") as err:
        rewrite(MATMUL.format(m=m, n=n, k=k, fill=fill, outs=outs), "one")
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_a_left_contraction_is_named_beside_the_taken_ones():
    text = MATMUL.format(m=256, n=128, k=64, fill="0.0", outs="%init").replace(
        "  return %r", "  %s = linalg.matmul ins(%a, %b : tensor<256x64xf16>, tensor<64x128xf16>) outs(%c0 : "
        "tensor<256x128xf32>) -> tensor<256x128xf32>\n  %t = arith.addf %r, %s : tensor<256x128xf32>\n  return %t")
    model = rewrite(text, "two")
    assert len(model.calls) == 1 and len(model.left) == 1 and "fill of 0.0" in model.left[0]
    assert model.text.count("linalg.matmul") == 1


CONSUMED = MATMUL.replace("  return %r : tensor<{m}x{n}xf32>", """  %h = tensor.empty() : tensor<{m}x{n}xf16>
  %t = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%r : tensor<{m}x{n}xf32>) outs(%h : tensor<{m}x{n}xf16>) {{
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  }} -> tensor<{m}x{n}xf16>
  %g = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%t : tensor<{m}x{n}xf16>) outs(%h : tensor<{m}x{n}xf16>) {{
  ^bb0(%x: f16, %o: f16):
    {body}
  }} -> tensor<{m}x{n}xf16>
  return %g : tensor<{m}x{n}xf16>""").replace("-> tensor<{m}x{n}xf32> {{", "-> tensor<{m}x{n}xf16> {{")


@pytest.mark.parametrize("body, fused", [
    ("%z = arith.constant 0.0 : f16\n    %y = arith.maximumf %x, %z : f16\n    linalg.yield %y : f16", True),  # ReLU
    ("%y = arith.addf %x, %o : f16\n    linalg.yield %y : f16", False),  # reads its output: not a map of its input
    ("%y = math.powf %x, %x : f16\n    linalg.yield %y : f16", False),  # an op the epilogue does not apply
    ("linalg.yield %x : f16", False),  # nothing to apply
])
def test_an_elementwise_consumer_after_the_rounding_is_fused_only_when_the_epilogue_applies_it(body, fused):
    model = rewrite(CONSUMED.format(m=256, n=128, k=64, fill="0.0", outs="%init", body=body), "relu")
    call, = model.calls
    assert call.gemm.epilogue.kind == "truncf"  # the rounding is fused either way
    assert (call.tail is not None) == fused
    program = model.text.split("hal.executable.source")[0]
    assert program.count("linalg.generic") == (0 if fused else 1)
    if fused:
        assert call.tail.ops == (("arith.maximumf", ("in", ("const", "0.000000e+00 : f16")), "f16"),)


def test_a_tail_that_does_not_yield_the_input_type_or_reads_ahead_is_refused():
    with pytest.raises(hopper.HopperError, match="must yield f16"):
        hopper.Elementwise((("arith.extf", ("in",), "f32"),)).check("f16")
    with pytest.raises(hopper.HopperError, match="reads a later op"):
        hopper.Elementwise((("arith.addf", ("in", 1), "f16"), ("arith.negf", ("in",), "f16"))).check("f16")
    with pytest.raises(hopper.HopperError, match="does not apply math.powf"):
        hopper.Elementwise((("math.powf", ("in", "in"), "f16"),)).check("f16")


@pytest.mark.parametrize("m, n, k, kind", [
    (8192, 8192, 1024, "pingpong"), (8192, 1024, 1024, "pingpong"), (256, 128, 8, "pingpong"),
    (8192, 8192, 1032, "cooperative"), (4096, 2048, 2048, "cooperative"),  # measured no faster at K = 2048
    (8192, 8192, 1004, "cooperative"),  # K off 8: neither kernel takes it, the shipped schedule's refusal stands
])
def test_products_with_a_short_k_run_on_the_ping_pong_kernel(m, n, k, kind):
    from transforms.problem import Gemm

    chosen = product_schedule(Gemm(m, n, k, "f16", "nt"))
    assert chosen.kind == kind and chosen == (SMALL_K_SCHEDULE if kind == "pingpong" else hopper.DEFAULT)
    assert (chosen.block_m, chosen.block_n) == ((128, 128) if kind == "pingpong" else (128, 256))


def test_tune_model_puts_a_models_products_on_the_hopper_kernels_with_the_gelu_in_a_store(tmp_path, capsys):
    onnx_file = transformer_block.build(tmp_path / "block.onnx", S, D, F, "inputs")
    out = tmp_path / "out"
    assert cli.main(["tune-model", str(onnx_file), "--target", "sm_90a", "--pipeline", "hopper", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert summary["verified"] and len(summary["calls"]) == 8 and summary["left"] == [] and summary["fuse_tail"]
    assert [c["contraction"] for c in summary["calls"]][3] == f"{S}x{S}x{D} nt f16"
    assert all(c["epilogue"] == "truncf" for c in summary["calls"])
    # the softmax on the row softmax kernel, the Gelu in the W1 kernel's store: no dispatch of IREE's left
    assert summary["iree_dispatches"] == [] and summary["split_out_consumers"] == []
    assert [s["function"] for s in summary["softmaxes"]] == ["row_softmax_0"] and summary["softmax_kernel"]
    assert summary["calls"][6]["fused_ops"][2] == "math.erf"
    assert [d.get("split_consumer", False) for d in summary["dispatches"]] == [False] * 6
    assert [d["contraction"] for d in summary["default_dispatches"]] == [
        f"{S}x{D}x{D} nn f16", f"{S}x{S}x{D} nt f16", None, f"{S}x{D}x{S} nn f16", f"{S}x{F}x{D} nn f16",
        f"{S}x{D}x{F} nn f16"]  # IREE's dispatches: the projections share one, the softmax, the others
    for name in ("tuned", "default"):
        assert (out / name / "gemm.vmfb").is_file() and (out / name / "gemm.mlir").is_file()
    assert str(out / "tuned") in (out / "tuned" / "compile_command.txt").read_text()  # where the user finds it
    assert "8 contractions on the Hopper kernels" in (out / "model.md").read_text()
    assert "| row_softmax_0 | softmax 256x256 f16 |" in (out / "model.md").read_text()
    # `report --table model` pairs the softmax kernel's launch with IREE's softmax dispatch in the default
    table = _model_table(tmp_path, out, capsys, [f"{FUNCTION_PREFIX}{i}" for i in (0, 0, 0, 1)] + ["row_softmax_0"]
                         + [f"{FUNCTION_PREFIX}{i}" for i in (2, 0, 3, 4)])
    assert "| 4 | row_softmax_0 | row softmax 256x256 f16: a workgroup of 32 threads" in table
    assert "| all | | | 36.0 | 9.0 | 4.00× |" in table


def _model_table(tmp_path, out, capsys, hopper_kernels: list[str]) -> str:
    """`pipelines report --table model` of a run whose `hopper` module launched `hopper_kernels` (1 µs each) beside
    IREE's default's nine launches of the block (4 µs each): the table printed."""
    default_kernels = [f"block_async_dispatch_{i}_matmul_x" for i in (0, 0, 0, 3)] + [
        "block_async_dispatch_4_softmax_x"] + [f"block_async_dispatch_{i}_matmul_x" for i in (5, 0, 7, 8)]
    rows = {"function": "block", "environment": {}, "modules": {
        name: {"median_ms": ms, "max_rel_error": 1e-3, "dispatches": [{"kernel": k, "us": us} for k in kernels]}
        for name, ms, kernels, us in (("hopper", 1.0, hopper_kernels, 1.0), ("default", 3.0, default_kernels, 4.0))}}
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    assert cli.main(["report", "--table", "model", str(tmp_path / "rows.json"), str(out / "model.json"), "--tuned",
                     "hopper"]) == 0
    return capsys.readouterr().out


def test_tune_model_leaves_the_gelu_to_iree_when_asked(tmp_path, capsys):
    onnx_file = transformer_block.build(tmp_path / "block.onnx", S, D, F, "inputs")
    out = tmp_path / "out"
    assert cli.main(["tune-model", str(onnx_file), "--target", "sm_90a", "--pipeline", "hopper",
                     "--split-consumers", "--iree-softmax", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert not summary["fuse_tail"] and all(c["fused_ops"] == [] for c in summary["calls"])
    assert summary["softmaxes"] == [] and not summary["softmax_kernel"]
    # IREE keeps the softmax and the Gelu (a consumer of its own)
    assert len(summary["iree_dispatches"]) == 2 and len(summary["split_out_consumers"]) == 1
    assert [d.get("split_consumer", False) for d in summary["dispatches"]] == [False] * 6 + [True]
    # `report --table model` pairs a run's launches: the block's launch order, kernels named as the PTX names them
    table = _model_table(tmp_path, out, capsys, [f"{FUNCTION_PREFIX}{i}" for i in (0, 0, 0, 1)] + [
        "block_async_dispatch_0_softmax_x"] + [f"{FUNCTION_PREFIX}{i}" for i in (2, 0, 3)] + [
        "block_async_dispatch_1_elementwise_x", FUNCTION_PREFIX + "4"])
    assert "| 3 | 256x256x128 nt f16 | hopper-pingpong 128x128x64" in table
    assert "| 8 | (split out: 1_elementwise_x) |" in table and "| all | | | 36.0 | 10.0 | 3.60× |" in table


@pytest.mark.parametrize("argv, sentence", [
    (["--pipeline", "hopper", "--predict"], "takes no --with-spec, --search, --predict"),
    (["--pipeline", "auto", "--split-consumers"], "--split-consumers is for --pipeline hopper"),
    (["--pipeline", "codegen", "--iree-softmax"], "--iree-softmax is for --pipeline hopper"),
    (["--pipeline", "hopper", "--target", "sm_80"], "does not run on sm_80"),
])
def test_what_tune_model_refuses_with_the_hopper_pipeline(argv, sentence, tmp_path, capsys):
    onnx_file = transformer_block.build(tmp_path / "block.onnx", S, D, F, "inputs")
    out = tmp_path / "out"
    target = [] if "--target" in argv else ["--target", "sm_90a"]
    assert cli.main(["tune-model", str(onnx_file), *target, *argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.count("\n") == 1 and not out.exists()


# ---- what is not the importer's plain rounding, or not B read as stored, is not taken for it (blind probe 10)

def _program(body: str, args: str, result: str) -> str:
    return f"""func.func @f({args}) -> {result} {{
  %zero = arith.constant 0.0 : f32
{body}
}}"""


def _matmul(a: str, b: str, ta: str, tb: str, maps: str = "") -> str:
    return f"""  %e = tensor.empty() : tensor<256x128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<256x128xf32>) -> tensor<256x128xf32>
  %r = linalg.matmul {maps}ins({a}, {b} : {ta}, {tb}) outs(%init : tensor<256x128xf32>) -> tensor<256x128xf32>"""


ROUND = """  %h = tensor.empty() : tensor<256x128x{out}>
  %t = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%r : tensor<256x128xf32>) outs(%h : tensor<256x128x{out}>) {{
  ^bb0(%x: f32, %o: {out}):
    {body}
  }} -> tensor<256x128x{out}>"""


@pytest.mark.parametrize("dtype, out, body, why", [
    ("bf16", "f16", "%y = arith.truncf %x : f32 to f16\n    linalg.yield %y : f16", "rounds to f16, not bf16"),
    ("f16", "f16", "%s = arith.mulf %x, %x : f32\n    %y = arith.truncf %s : f32 to f16\n    linalg.yield %y : f16",
     "squares before it rounds"),
])
def test_a_consumer_that_is_not_the_rounding_to_the_input_type_is_not_fused(dtype, out, body, why):
    args = f"%a: tensor<256x64x{dtype}>, %b: tensor<64x128x{dtype}>"
    text = _program(_matmul("%a", "%b", f"tensor<256x64x{dtype}>", f"tensor<64x128x{dtype}>") + "\n"
                    + ROUND.format(out=out, body=body) + f"\n  return %t : tensor<256x128x{out}>", args,
                    f"tensor<256x128x{out}>")
    call, = rewrite(text, why).calls
    assert call.gemm.epilogue.kind == "none" and call.gemm.out_dtype == "f32", why
    assert rewrite(text, why).text.count("linalg.generic") == 1  # the consumer stays


def test_a_rounding_that_shares_the_product_with_another_user_is_not_fused():
    # the other user first and the rounding second, and the other way round (use lists keep an order)
    other = "\n  %d = arith.negf %r : tensor<256x128xf32>\n"
    rounding = ROUND.format(out="f16", body="%y = arith.truncf %x : f32 to f16\n    linalg.yield %y : f16")
    for body in (other + rounding, "\n" + rounding + other):
        text = _program(_matmul("%a", "%b", "tensor<256x64xf16>", "tensor<64x128xf16>") + body
                        + "\n  return %t, %d : tensor<256x128xf16>, tensor<256x128xf32>",
                        "%a: tensor<256x64xf16>, %b: tensor<64x128xf16>", "(tensor<256x128xf16>, tensor<256x128xf32>)")
        call, = rewrite(text, "two users").calls
        assert call.gemm.epilogue.kind == "none"  # the f32 product is still needed as it is


TRANSPOSE = """  %bt_e = tensor.empty() : tensor<{shape}xf16>
  %bt = linalg.transpose ins(%b : tensor<{source}xf16>) outs(%bt_e : tensor<{shape}xf16>) permutation = [{perm}]"""


def test_an_identity_transpose_of_b_is_not_read_as_nt():
    text = _program(TRANSPOSE.format(shape="128x128", source="128x128", perm="0, 1") + "\n"
                    + _matmul("%a", "%bt", "tensor<256x128xf16>", "tensor<128x128xf16>")
                    + "\n  return %r : tensor<256x128xf32>", "%a: tensor<256x128xf16>, %b: tensor<128x128xf16>",
                    "tensor<256x128xf32>")
    model = rewrite(text, "identity")
    b_operand = re.search(r"call @hopper_gemm_0\(%\w+, (%\w+)\)", model.text).group(1)
    assert model.calls[0].gemm.layout == "nn" and f"{b_operand} = linalg.transpose" in model.text


def test_a_tn_product_that_reads_a_transposed_b_is_left_to_iree():
    """The transpose is folded into NT only for an NN product: a TN one (A read K×M) stays with IREE, whose
    kernels take it, rather than being read as NT with A the wrong way round."""
    tn = "indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, " \
         "affine_map<(m, n, k) -> (m, n)>] "
    text = _program(TRANSPOSE.format(shape="64x128", source="128x64", perm="1, 0") + "\n"
                    + _matmul("%a", "%bt", "tensor<64x256xf16>", "tensor<64x128xf16>", tn)
                    + "\n  return %r : tensor<256x128xf32>", "%a: tensor<64x256xf16>, %b: tensor<128x64xf16>",
                    "tensor<256x128xf32>")
    with pytest.raises(ProblemError, match="take none of its contractions") as err:
        rewrite(text, "tn")
    assert "layout nt or nn so far, not tn" in str(err.value)


def test_a_consumer_whose_division_stays_keeps_it_in_the_kernel(tmp_path):
    """x / 14 in f16 is no product (tail_math's proof fails): the kernel divides (div.rn.f32 on the widened
    element), and check_ptx accepts it with the tail and refuses it without."""
    body = "%c = arith.constant 14.0 : f16\n    %y = arith.divf %x, %c : f16\n    linalg.yield %y : f16"
    model = rewrite(CONSUMED.format(m=256, n=256, k=64, fill="0.0", outs="%init", body=body), "div")
    call, = model.calls
    assert [name for name, _, _ in call.tail.lowered("f16")] == ["arith.divf"]
    source = tmp_path / "m.mlir"
    source.write_text(model.text)
    done = subprocess.run([str(iree_compile_path()), str(source), *SM90.compile_flags,
                           f"--iree-hal-dump-executable-files-to={tmp_path / 'dump'}", "-o", str(tmp_path / "m.vmfb")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = "\n".join(p.read_text() for p in (tmp_path / "dump").glob("*.ptx"))
    assert "div.rn.f32" in hopper.ptx_kernel(ptx, call.function)
    hopper.check_ptx(ptx, call.gemm, call.schedule, entry=call.function, tail=call.tail)
    with pytest.raises(hopper.HopperError, match="fused consumer"):
        hopper.check_ptx(ptx, call.gemm, call.schedule, entry=call.function)
