"""The row softmax kernel (`transforms.softmax`) and where the Hopper model rewrite takes it (`pipelines.hopper_model`,
issue 33): a workgroup per row, its threads and vectors on both sides of each boundary; the compiled PTX read here
(16-byte accesses only, the shuffles, barriers, exponentials); `check_ptx` refusing PTX with each piece missing; the
importer's softmax chain taken as written, and left to IREE for each way a program differs from it.

Oracles: sizes counted by hand from the kernel's layout (8 elements a vector, 32 lanes a warp, 256 threads at most),
PTX compiled by iree-compile, and hand-written linalg programs in the importer's form (the chain IREE's ONNX importer
writes for a Softmax of a 16-bit tensor, copied from the transformer block's program)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pipelines.compiler import iree_compile_path, run_patiently
from pipelines.hopper_model import SOFTMAX_PREFIX, rewrite
from pipelines.targets import get_target
from transforms.softmax import RowSoftmax, SoftmaxError, check_ptx, executable, program

SM90 = get_target("sm_90a")


@pytest.mark.parametrize("cols, threads, vectors, whole", [
    (8, 32, 1, 0),  # one vector: a warp, 31 lanes idle
    (256, 32, 1, 1),  # a warp's vectors exactly
    (264, 64, 1, 0),  # one more vector: a second warp
    (1000, 128, 1, 0),
    (2048, 256, 1, 1),  # 256 threads' vectors exactly
    (2056, 256, 2, 1),  # one more: a guarded second round
    (8192, 256, 4, 4),
    (16384, 256, 8, 8),  # the most a thread holds
])
def test_threads_and_vectors_on_both_sides_of_each_boundary(cols, threads, vectors, whole):
    s = RowSoftmax(3, cols)
    s.check()
    assert (s.threads, s.vectors, s.whole_rounds) == (threads, vectors, whole)
    # every column in exactly one thread's vector: the rounds cover the row, the last round not wholly past it
    assert (vectors - 1) * 8 * threads < cols <= vectors * 8 * threads


@pytest.mark.parametrize("softmax, words", [
    (RowSoftmax(4, 12), "no multiple of 8"),
    (RowSoftmax(4, 16392), "more than 16384"),
    (RowSoftmax(4, 16, "f32"), "f16 or bf16"),
    (RowSoftmax(0, 16), "no elements"),
    (RowSoftmax(4, 0), "no elements"),
    (RowSoftmax(4, 16, "f16", "arith.minimumf"), "arith.minimumf"),
    (RowSoftmax(2 ** 31, 16), "2^31"),
])
def test_a_softmax_the_kernel_does_not_take_is_refused_in_one_sentence(softmax, words):
    with pytest.raises(SoftmaxError, match=re.escape(words)):
        softmax.check()
    with pytest.raises(SoftmaxError):
        executable(softmax, "e", "k")


def _compiled(tmp_path, text: str) -> str:
    """`text` compiled for sm_90a in `tmp_path` (its executables dumped to `tmp_path`/dump): the PTX."""
    source = tmp_path / "program.mlir"
    source.write_text(text)
    dump = tmp_path / "dump"
    done = run_patiently([iree_compile_path(), str(source), *SM90.compile_flags,
                          f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "program.vmfb")],
                         capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return "\n".join(p.read_text() for p in dump.glob("*.ptx"))


def _ptx(tmp_path, softmax: RowSoftmax) -> str:
    return _compiled(tmp_path, program(softmax))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """PTX of three kernels: whole rounds only, a guarded last round, bf16 with one warp."""
    cases = [RowSoftmax(64, 8192), RowSoftmax(3, 4104), RowSoftmax(5, 8, "bf16", "arith.maxnumf")]
    return [(s, _ptx(tmp_path_factory.mktemp("softmax"), s)) for s in cases]


def test_the_compiled_kernel_reads_and_writes_each_row_once_in_16_byte_vectors(compiled):
    for softmax, ptx in compiled:
        check_ptx(ptx, softmax, "softmax_kernel")
        body = ptx.split(".entry softmax_kernel")[1]
        assert len(re.findall(r"ld\.global\.v4\.b32", body)) == softmax.vectors
        assert len(re.findall(r"st\.global\.v4\.b32", body)) == softmax.vectors
        assert f".maxntid {softmax.threads}, 1, 1" in body


@pytest.mark.parametrize("mutation, words", [
    ((r"bar\.sync\s+\d+;", "", 1), "barriers"),
    ((r"shfl\.sync\.bfly\.b32[^;]*;", "", 1), "xor shuffles"),
    ((r"ex2\.approx\.f32[^;]*;", "", 1), "exponentials"),
    ((r"rcp\.rn\.f32", "rcp.approx.f32", 1), "divisions"),
    ((r"ld\.global\.v4\.b32[^;]*;", "ld.global.v2.b32 {%r1, %r2}, [%rd1]; ld.global.v2.b32 {%r3, %r4}, [%rd1+8];", 1),
     "narrower than 16 bytes"),
    ((r"ld\.global\.v4\.b32[^;]*;", "", 1), "16-byte loads"),
    ((r"st\.global\.v4\.b32[^;]*;", "", 1), "16-byte stores"),
    ((r"\.entry softmax_kernel", ".entry other", 1), "no kernel"),
    # one too many of each: the counts are exact
    ((r"bar\.sync", "shfl.sync.bfly.b32 %r1, %r1, 1, 31, -1;\n\tbar.sync", 1), "xor shuffles"),
    ((r"bar\.sync", "ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];\n\tbar.sync", 1), "16-byte loads"),
    ((r"bar\.sync", "bar.sync 0;\n\tbar.sync", 1), "barriers"),
    # a narrower access beside the 16-byte ones
    ((r"bar\.sync", "ld.global.v2.u32 {%r1, %r2}, [%rd1];\n\tbar.sync", 1), "narrower than 16 bytes"),
    ((r"bar\.sync", "st.global.v2.b32 [%rd1], {%r1, %r2};\n\tbar.sync", 1), "narrower than 16 bytes"),
    ((r"bar\.sync", "ld.global.b64 %rd9, [%rd1];\n\tbar.sync", 1), "narrower than 16 bytes"),
    ((r"bar\.sync", "ld.global.v4.u16 {%rs1, %rs2, %rs3, %rs4}, [%rd1];\n\tbar.sync", 1), "narrower than 16 bytes"),
    ((r"bar\.sync", "st.global.u8 [%rd1], %rs1;\n\tbar.sync", 1), "narrower than 16 bytes"),
])
def test_check_ptx_refuses_a_kernel_with_a_piece_missing(compiled, mutation, words):
    softmax, ptx = compiled[1]
    pattern, replacement, count = mutation
    broken, n = re.subn(pattern, replacement, ptx, count=count)
    assert n == count
    with pytest.raises(SoftmaxError, match=re.escape(words)):
        check_ptx(broken, softmax, "softmax_kernel")


def test_check_ptx_reads_the_named_kernel_not_one_whose_name_starts_alike(compiled):
    softmax, ptx = compiled[0]
    decoy = ".visible .entry softmax_kernel2(\n)\n{\n\tret;\n}\n"
    at = ptx.index(".visible .entry softmax_kernel")
    check_ptx(ptx[:at] + decoy + ptx[at:], softmax, "softmax_kernel")  # the decoy, first, has none of it
    with pytest.raises(SoftmaxError):
        check_ptx(ptx[:at] + decoy + ptx[at:], softmax, "softmax_kernel2")


def test_check_ptx_refuses_an_extra_narrow_access(compiled):
    softmax, ptx = compiled[0]
    broken = ptx.replace("bar.sync", "ld.global.b32 %r1, [%rd1];\n\tbar.sync", 1)
    with pytest.raises(SoftmaxError, match="narrower than 16 bytes"):
        check_ptx(broken, softmax, "softmax_kernel")


# A product (so that the Hopper rewrite has a contraction to take) and, on the function's later arguments, softmaxes
# along the rows as IREE's ONNX importer writes one for a 16-bit tensor (tools/transformer_block.py's program).
HEAD = """#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @main(%a: tensor<128x128xf16>, %b: tensor<128x128xf16>ARGS) -> (tensor<128x128xf16>RESULTS) {
    %zero = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %c0 = arith.constant 0 : index
    %pe = tensor.empty() : tensor<128x128xf32>
    %pf = linalg.fill ins(%zero : f32) outs(%pe : tensor<128x128xf32>) -> tensor<128x128xf32>
    %p = linalg.matmul ins(%a, %b : tensor<128x128xf16>, tensor<128x128xf16>) outs(%pf : tensor<128x128xf32>)
      -> tensor<128x128xf32>
    %pe16 = tensor.empty() : tensor<128x128xf16>
    %p16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%p : tensor<128x128xf32>) outs(%pe16 : tensor<128x128xf16>) {
    ^bb0(%in: f32, %out: f16):
      %r = arith.truncf %in : f32 to f16
      linalg.yield %r : f16
    } -> tensor<128x128xf16>
"""
CHAIN = """    %startS = arith.constant SUMSTART : F32
    %ninfS = arith.constant MAXSTART : F32
    %14S = tensor.empty() : tensor<ROWSxCOLSxF32>
    %16S = tensor.empty() : tensor<ROWSxCOLSxOUT>
    %otherS = linalg.fill ins(%startS : F32) outs(%14S : tensor<ROWSxCOLSxF32>) -> tensor<ROWSxCOLSxF32>
    %18S = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%xS : tensor<ROWSxCOLSxf16>) outs(%14S : tensor<ROWSxCOLSxF32>) {
    ^bb0(%in: f16, %out: F32):
      %40 = arith.extf %in : f16 to F32
      linalg.yield %40 : F32
    } -> tensor<ROWSxCOLSxF32>
AFTEREXT    %19S = tensor.empty() : tensor<ROWSxi64>
    %20S = linalg.fill ins(%c0_i64 : i64) outs(%19S : tensor<ROWSxi64>) -> tensor<ROWSxi64>
    %21S = tensor.empty() : tensor<ROWSxF32>
    %22S = linalg.fill ins(%ninfS : F32) outs(%21S : tensor<ROWSxF32>) -> tensor<ROWSxF32>
    %23S:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]}
        ins(%18S : tensor<ROWSxCOLSxF32>) outs(%22S, %20S : tensor<ROWSxF32>, tensor<ROWSxi64>) {
    ^bb0(%in: F32, %out: F32, %out_4: i64):
      %40 = linalg.index 1 : index
      %41 = arith.index_cast %40 : index to i64
      %42 = MAXOP %in, MAXWITH : F32
      %43 = arith.cmpf ogt, %in, %out : F32
      %44 = arith.select %43, %41, %out_4 : i64
      linalg.yield %42, %44 : F32, i64
    } -> (tensor<ROWSxF32>, tensor<ROWSxi64>)
    %expandedS = tensor.expand_shape %23S#0 [[0, 1]] output_shape [ROWS, 1] : tensor<ROWSxF32> into tensor<ROWSx1xF32>
    %24S = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]}
        ins(SHIFTED, %expandedS : tensor<ROWSxCOLSxF32>, tensor<ROWSx1xF32>) outs(SHIFTOUT : tensor<ROWSxCOLSxF32>) {
    ^bb0(%in: F32, %in_4: F32, %out: F32):
      %40 = arith.subf SUBARGS : F32
      linalg.yield SHIFTYIELD : F32
    } -> tensor<ROWSxCOLSxF32>
AFTERSHIFT    %25S = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%24S : tensor<ROWSxCOLSxF32>) outs(%14S : tensor<ROWSxCOLSxF32>) {
    ^bb0(%in: F32, %out: F32):
      %40 = EXP EXPARG : F32
      linalg.yield %40 : F32
    } -> tensor<ROWSxCOLSxF32>
AFTEREXP    %26S = tensor.empty() : tensor<ROWSx1xF32>
    %27S = linalg.fill ins(%startS : F32) outs(%26S : tensor<ROWSx1xF32>) -> tensor<ROWSx1xF32>
    %28S = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]}
        ins(%25S : tensor<ROWSxCOLSxF32>) outs(%27S : tensor<ROWSx1xF32>) {
    ^bb0(%in: F32, %out: F32):
      %40 = arith.addf %in, %out : F32
      linalg.yield %40 : F32
    } -> tensor<ROWSx1xF32>
    %29S = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]}
        ins(DIVIDED, %28S : tensor<ROWSxCOLSxF32>, tensor<ROWSx1xF32>) outs(DIVOUT : tensor<ROWSxCOLSxF32>) {
    ^bb0(%in: F32, %in_4: F32, %out: F32):
      %40 = QUOTIENT DIVARGS : F32
      linalg.yield %40 : F32
    } -> tensor<ROWSxCOLSxF32>
AFTERQUOTIENT    %30S = linalg.generic {indexing_maps = [#map, ROUNDMAP], iterator_types = ["parallel", "parallel"]}
        ins(%29S : tensor<ROWSxCOLSxF32>) outs(%16S : tensor<ROWSxCOLSxOUT>) {
    ^bb0(%in: F32, %out: OUT):
      %40 = arith.truncf %in : F32 to OUT
      linalg.yield %40 : OUT
    } -> tensor<ROWSxCOLSxOUT>
"""
AS_IMPORTED = {"ROWS": "4", "COLS": "16", "OUT": "f16", "SUMSTART": "0.000000e+00", "MAXSTART": "0xFF800000",
               "MAXOP": "arith.maximumf", "MAXWITH": "%out", "EXP": "math.exp", "QUOTIENT": "arith.divf",
               "SHIFTED": "%18S", "SHIFTOUT": "%14S", "DIVIDED": "%25S", "DIVOUT": "%14S", "F32": "f32",
               "AFTEREXT": "", "AFTERSHIFT": "", "AFTEREXP": "", "AFTERQUOTIENT": "", "SUBARGS": "%in, %in_4",
               "DIVARGS": "%in, %in_4", "EXPARG": "%in", "ROUNDMAP": "#map", "SHIFTYIELD": "%40"}
# another user of an intermediate VALUE, placed right after it (before the chain's next op: the use lists then name
# the chain's own user first)
NEGATED = """    %xtraS = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(VALUE : tensor<ROWSxCOLSxF32>) outs(%14S : tensor<ROWSxCOLSxF32>) {
    ^bb0(%in: F32, %out: F32):
      %40 = arith.negf %in : F32
      linalg.yield %40 : F32
    } -> tensor<ROWSxCOLSxF32>
"""


def _chain(suffix: str, changes: dict) -> str:
    text = CHAIN
    for key, value in sorted({**AS_IMPORTED, **changes}.items(), key=lambda kv: -len(kv[0])):  # SHIFTOUT before OUT
        text = text.replace(key, value)
    return re.sub(r"%(\w+?)S(?=[\s,:#)])", rf"%s\1{suffix}", text)  # this chain's own names: %s14_0, ...


def _softmaxes(*chains: dict, extra: tuple[tuple[str, str], ...] = ()) -> str:
    """A program of the product and one softmax per entry of `chains` (changes to the importer's form) on its own
    argument, each returned; `extra`: more (value, type) pairs returned (extra users of a chain's values)."""
    args, results, returns, body = "", "", ["%p16"], ""
    types = ["tensor<128x128xf16>"]
    for i, changes in enumerate(chains):
        shape = {**AS_IMPORTED, **changes}
        suffix = f"_{i}"
        args += f", %sx{suffix}: tensor<{shape['ROWS']}x{shape['COLS']}xf16>"
        out = f"tensor<{shape['ROWS']}x{shape['COLS']}x{shape['OUT']}>"
        results += f", {out}"
        body += _chain(suffix, changes)
        returns.append(f"%s30{suffix}")
        types.append(out)
    for value, ty in extra:
        results += f", {ty}"
        returns.append(value)
        types.append(ty)
    tail = f"    return {', '.join(returns)} : {', '.join(types)}\n  }}\n}}\n"
    return HEAD.replace("ARGS", args).replace("RESULTS", results) + body + tail


def _program(**changes: str) -> str:
    return _softmaxes(changes)


@pytest.mark.parametrize("changes, taken", [
    ({}, RowSoftmax(4, 16)),
    ({"MAXOP": "arith.maxnumf"}, RowSoftmax(4, 16, "f16", "arith.maxnumf")),
    ({"ROWS": "3", "COLS": "4104"}, RowSoftmax(3, 4104)),
])
def test_the_importers_softmax_becomes_one_call_of_the_kernel(changes, taken):
    model = rewrite(_program(**changes), "p")
    assert [c.softmax for c in model.softmaxes] == [taken] and model.softmax_left == ()
    body = model.text.split("hal.executable.source")[0]
    # the chain is gone: no exponential, reduction or rounding of the softmax left beside the kernel's call
    assert "math.exp" not in body and "arith.divf" not in body and "tensor.expand_shape" not in body
    assert "arith.extf" not in body  # the extension too: it had no other user
    assert body.count(f"@{SOFTMAX_PREFIX}0(") == 1
    call = re.search(rf"(%\w+) = (?:func\.)?call @{SOFTMAX_PREFIX}0\((%\w+)\)", body)
    assert call is not None and call.group(2) == "%arg2"  # the function's third argument, x, as stored
    assert re.search(rf"return %\w+, {re.escape(call.group(1))} :", body)
    assert model.text.count("hal.executable.source private @softmax_0") == 1
    # without it, the program keeps the chain
    kept = rewrite(_program(**changes), "p", softmax=False)
    assert kept.softmaxes == () and "math.exp" in kept.text


@pytest.mark.parametrize("changes, why", [
    ({"SUMSTART": "1.000000e+00"}, "the sum starts from 1"),
    ({"MAXSTART": "0.000000e+00"}, "the max starts from 0, not -inf"),
    ({"EXP": "math.exp2"}, "2^x, not e^x"),
    ({"QUOTIENT": "arith.mulf"}, "a product, not the quotient"),
    ({"MAXOP": "arith.minimumf"}, "a min, not a max"),
    ({"OUT": "bf16"}, "rounded to another type than its input's"),
    ({"F32": "f64", "MAXSTART": "0xFFF0000000000000"}, "computed in f64"),
    ({"MAXWITH": "%in"}, "a max of each element with itself"),
    ({"SHIFTED": "%otherS", "SHIFTOUT": "%18S"}, "another tensor shifted by the max, e only its init"),
    ({"DIVIDED": "%otherS", "DIVOUT": "%25S"}, "another tensor divided by the sum, p only its init"),
    ({"SUBARGS": "%in_4, %in"}, "m - e, not e - m"),
    ({"DIVARGS": "%in_4, %in"}, "s / p, not p / s"),
    ({"EXPARG": "%out"}, "exp of the init, not of d"),
    ({"ROWS": "16", "ROUNDMAP": "#map3"}, "the rounding transposes"),
    ({"SHIFTYIELD": "%in"}, "the shift computes e - m but yields e"),
])
def test_a_chain_that_differs_from_a_softmax_stays_with_iree(changes, why):
    model = rewrite(_program(**changes), "p")
    assert model.softmaxes == () and model.softmax_left == (), why
    assert "math.exp" in model.text or "math.exp2" in model.text


def test_a_max_that_starts_from_another_init_than_a_fill_stays_with_iree():
    fill = "%s22_0 = linalg.fill ins(%sninf_0 : f32) outs(%s21_0 : tensor<4xf32>) -> tensor<4xf32>"
    text = _program()
    assert fill in text
    model = rewrite(text.replace(fill, "%s22_0 = tensor.insert %sninf_0 into %s21_0[%c0] : tensor<4xf32>"), "p")
    assert model.softmaxes == () and "math.exp" in model.text


def test_a_softmax_whose_argmax_is_used_stays_with_iree():
    model = rewrite(_softmaxes({}, extra=(("%s23_0#1", "tensor<4xi64>"),)), "p")
    assert model.softmaxes == () and "math.exp" in model.text


@pytest.mark.parametrize("place, value, why", [
    ("AFTERSHIFT", "%24S", "the shifted values have another user"),
    ("AFTEREXP", "%25S", "the exponentials have a third user"),
    ("AFTERQUOTIENT", "%29S", "the quotients have another user than the rounding"),
])
def test_a_softmax_whose_intermediate_has_another_user_stays_with_iree(place, value, why):
    model = rewrite(_program(**{place: NEGATED.replace("VALUE", value)}), "p")
    assert model.softmaxes == (), why
    assert "math.exp" in model.text
    # returned instead of used by an op: the same
    returned = value.replace("%", "%s").replace("S", "_0")
    model = rewrite(_softmaxes({}, extra=((returned, "tensor<4x16xf32>"),)), "p")
    assert model.softmaxes == (), why


@pytest.mark.parametrize("program", [_program(AFTEREXT=NEGATED.replace("VALUE", "%18S")),
                                     _softmaxes({}, extra=(("%s18_0", "tensor<4x16xf32>"),))])
def test_an_extension_with_other_users_stays_for_them_beside_the_kernel(program, tmp_path):
    model = rewrite(program, "p")
    assert [c.softmax for c in model.softmaxes] == [RowSoftmax(4, 16)]
    body = model.text.split("hal.executable.source")[0]
    assert body.count("arith.extf") == 1 and "math.exp" not in body  # the extension kept, the rest replaced
    _compiled(tmp_path, model.text)


def _onnx_softmax(path, shape: list, axis: int):
    """An ONNX graph of a product (for the rewrite to take) and a Softmax of a 16-bit tensor of `shape`."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    f16 = TensorProto.FLOAT16
    square = [helper.make_tensor_value_info(name, f16, [128, 128]) for name in ("A", "B")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["P"]), helper.make_node("Softmax", ["Z"], ["S"], axis=axis)], "g",
        [*square, helper.make_tensor_value_info("Z", f16, shape)],
        [helper.make_tensor_value_info("P", f16, [128, 128]), helper.make_tensor_value_info("S", f16, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("shape, axis, words", [
    ([4, 16], 0, "a tensor of rank 2 or more reduced along its last axis"),
    ([2, 4, 16], 1, "a tensor of rank 2 or more reduced along its last axis"),
    (["n", 16], -1, "static sizes"),
])
def test_a_softmax_in_another_form_is_left_with_its_reason(tmp_path, shape, axis, words):
    from pipelines.model_input import read_model, to_linalg

    path = _onnx_softmax(tmp_path / "s.onnx", shape, axis)
    model = rewrite(to_linalg(read_model(path), SM90, str(path)), "s")
    assert model.softmaxes == () and len(model.softmax_left) == 1 and words in model.softmax_left[0]
    # the importer's own 2-D form of the same graph is taken
    path = _onnx_softmax(tmp_path / "t.onnx", [4, 16], -1)
    assert [c.softmax for c in rewrite(to_linalg(read_model(path), SM90, str(path)), "t").softmaxes] == [
        RowSoftmax(4, 16)]


def test_equal_softmaxes_share_a_function_and_others_get_the_next_name():
    model = rewrite(_softmaxes({}, {}, {"COLS": "24"}, {}), "p")
    assert [(c.function, c.softmax.cols) for c in model.softmaxes] == [
        ("row_softmax_0", 16), ("row_softmax_0", 16), ("row_softmax_1", 24), ("row_softmax_0", 16)]
    assert model.text.count("hal.executable.source private @softmax_") == 2


@pytest.mark.parametrize("cols, words", [(12, "no multiple of 8"), (16392, "more than 16384")])
def test_a_softmax_the_kernel_refuses_is_left_with_its_reason(cols, words):
    model = rewrite(_program(COLS=str(cols)), "p")
    assert model.softmaxes == () and len(model.softmax_left) == 1 and words in model.softmax_left[0]
    assert model.softmax_left[0].startswith(f"softmax of tensor<4x{cols}xf16>")


def test_equal_softmaxes_share_one_kernel_and_the_program_compiles(tmp_path):
    text = _program(ROWS="8", COLS="2056")
    model = rewrite(text, "p")
    check_ptx(_compiled(tmp_path, model.text), model.softmaxes[0].softmax, SOFTMAX_PREFIX + "0")
    # IREE compiled no dispatch of its own for the softmax: only the Hopper kernel's and the softmax kernel's
    assert sorted(p.name for p in (tmp_path / "dump").glob("configured_module_*.mlir")) == [
        "configured_module_hopper_0.mlir", "configured_module_softmax_0.mlir"]


def test_tune_model_lists_each_softmax_its_kernel_and_those_left(tmp_path):
    from pipelines import cli
    import json

    source = tmp_path / "p.mlir"
    source.write_text(_softmaxes({"ROWS": "8", "COLS": "24"}, {"ROWS": "8", "COLS": "24"}, {"ROWS": "8", "COLS": "12"},
                                 {"ROWS": "8", "COLS": "32"}))
    out = tmp_path / "out"
    assert cli.main(["tune-model", str(source), "--target", "sm_90a", "--pipeline", "hopper", "-o", str(out)]) == 0
    summary = json.loads((out / "model.json").read_text())
    assert [(c["function"], c["softmax"]) for c in summary["softmaxes"]] == [
        ("row_softmax_0", "8x24 f16"), ("row_softmax_0", "8x24 f16"), ("row_softmax_1", "8x32 f16")]
    assert len(summary["softmax_left"]) == 1 and "tensor<8x12xf16>" in summary["softmax_left"][0]
    md = (out / "model.md").read_text()
    assert "| row_softmax_1 | softmax 8x32 f16 |" in md
    assert f"- left to IREE: {summary['softmax_left'][0]}" in md
    assert "1 contractions on the Hopper kernels, each verified in the compiled PTX; 0 left to IREE. 3 softmaxes on " \
        "the row softmax kernel, each verified likewise; 1 left to IREE." in md
    # the softmax left (8x12) is IREE's one dispatch; the kernels' rows come first
    assert len(summary["iree_dispatches"]) == 1
    assert [r["dispatch"] for r in summary["dispatches"][:3]] == ["hopper_gemm_0", "row_softmax_0", "row_softmax_1"]


@pytest.mark.parametrize("shape", [[2, 4, 16], [2, 3, 4, 24]])
def test_a_softmax_of_higher_rank_runs_on_its_rows_collapsed(tmp_path, shape):
    """Attention's B×H×S×S softmax along its last axis: the rows are every index but the last, contiguous; the call
    gets them collapsed to rows × columns and its result is expanded back."""
    from pipelines.model_input import read_model, to_linalg

    path = _onnx_softmax(tmp_path / "s.onnx", shape, -1)
    model = rewrite(to_linalg(read_model(path), SM90, str(path)), "s")
    rows, cols = int(np.prod(shape[:-1])), shape[-1]
    assert [c.softmax for c in model.softmaxes] == [RowSoftmax(rows, cols)] and model.softmax_left == ()
    body = model.text.split("hal.executable.source")[0]
    full, flat = f"tensor<{'x'.join(map(str, shape))}xf16>", f"tensor<{rows}x{cols}xf16>"
    groups = f"[[{', '.join(map(str, range(len(shape) - 1)))}], [{len(shape) - 1}]]"
    collapsed = re.search(rf"(%\w+) = tensor\.collapse_shape %\w+ {re.escape(groups)} : {full} into {flat}", body)
    call = re.search(rf"(%\w+) = (?:func\.)?call @{SOFTMAX_PREFIX}0\((%\w+)\) : \({flat}\) -> {flat}", body)
    assert collapsed and call and call.group(2) == collapsed.group(1)
    assert re.search(rf"tensor\.expand_shape {re.escape(call.group(1))} {re.escape(groups)} output_shape "
                     rf"\[{', '.join(map(str, shape))}\] : {flat} into {full}", body)
    assert "math.exp" not in body
    check_ptx(_compiled(tmp_path, model.text), RowSoftmax(rows, cols), SOFTMAX_PREFIX + "0")
