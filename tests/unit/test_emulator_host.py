"""The emulator's host side runs what `compile` produces: epilogues, batch matmul and --input programs of several
dispatches, each against a float64 interpretation of the folder's own source; planted binding and epilogue faults
are caught, and programs it cannot run are refused with one sentence.

Kernels are compiled once per session (about two seconds each, all dimensions at most 256)."""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from iree.compiler import ir

from pipelines.cli import main
from pipelines.emulator import EmulatorError, emulate_gemm
from pipelines.emulator.interpret import Interpreter
from pipelines.reference import float64_result
from transforms.problem import Epilogue, Gemm, build_module, input_shapes

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]
TWO_PROJECTIONS = DATA / "two_projections_f32.mlir"


def epilogue(kind, target="gfx942", shape="256x256x128"):
    scales = ("--alpha", "1.5", "--beta", "-0.5") if kind == "alpha-beta" else ()  # the others take none
    return ("--target", target, "--shape", shape, "--epilogue", kind, *scales)


def listing(folder: Path) -> str:
    return next((folder / "dump").glob("*.rocmasm")).read_text()


def swap_first_two_buffers(text: str, kernel: str) -> str:
    """The listing with the first two kernel arguments (A and B) of `kernel` exchanged in its metadata: the host
    then passes B's pointer where the kernel reads A and the other way round."""
    start = text.index(".args:", text.index("amdhsa.kernels:"))
    while f".name:           {kernel}" not in text[start:text.find(".name:", start) + 200]:
        start = text.index(".args:", start + 1)
    block_end = text.index(".offset:         8", start)
    first = text.index(".offset:         0", start)
    assert first < block_end
    return (text[:first] + ".offset:         8" + text[first + 18:block_end] + ".offset:         0"
            + text[block_end + 18:])


def assert_matches(result):
    assert result.wrong == 0 and result.matches, result.summary()
    assert not result.hazards, result.summary()


def test_alpha_beta_matches_and_a_wrong_beta_is_caught(compiled):
    folder = compiled(*epilogue("alpha-beta"))
    result = emulate_gemm(folder)
    assert_matches(result)
    assert result.mix.get("v_pk_mul_f32", 0) > 0  # the epilogue ran in the kernel, not on the host
    # beta = -0.5 is a v_pk_add_f32 that negates C; without the negation the kernel computes +0.5·C
    text = listing(folder)
    faulty = text.replace(" neg_lo:[0,1] neg_hi:[0,1]", "")
    assert faulty != text
    wrong = emulate_gemm(folder, kernel_text=faulty)
    assert not wrong.matches and wrong.wrong > 0.9 * 256 * 256


def test_bias_relu_matches_and_swapped_bindings_are_caught(compiled):
    folder = compiled(*epilogue("bias-relu"))
    result = emulate_gemm(folder)
    assert_matches(result)
    assert result.mix.get("v_max_f32_e32", 0) > 0
    assert (result.output == 0).mean() > 0.3  # relu clipped about half the outputs
    kernel = result.kernel
    swapped = emulate_gemm(folder, kernel_text=swap_first_two_buffers(listing(folder), kernel))
    assert not swapped.matches


@pytest.mark.slow
def test_bias_relu_matches_on_gfx950(compiled):
    assert_matches(emulate_gemm(compiled(*epilogue("bias-relu", "gfx950"))))


def test_bias_gelu_matches_and_a_wrong_exponent_is_caught(compiled):
    """gelu's erf expansion (v_exp_f32, v_ldexp_f32, v_fmaak_f32, f32 compares) runs in the kernel and matches the
    float64 interpretation of the same program within its slope-carried bound; scaling the exponential's input
    by 2 (a planted wrong constant) is caught."""
    folder = compiled(*epilogue("bias-gelu"))
    result = emulate_gemm(folder)
    assert_matches(result)
    assert result.mix.get("v_exp_f32_e32", 0) > 0
    text = listing(folder)
    exp = re.search(r"\tv_exp_f32_e32 (v\d+), (v\d+)\n", text)
    assert exp is not None
    faulty = text.replace(exp[0], f"\tv_add_f32_e32 {exp[2]}, {exp[2]}, {exp[2]}\n{exp[0]}", 1)
    assert not emulate_gemm(folder, kernel_text=faulty).matches


@pytest.mark.slow
def test_the_mlp_example_with_a_bf16_intermediate_matches(compiled):
    """mlir/examples/mlp_bf16_nt.mlir: two dispatches, the first storing its bf16 result with buffer_store_short,
    the second reading it; the reference rounds the intermediate to bf16 as the program does."""
    folder = compiled("--target", "gfx942", "--input", str(REPO / "mlir" / "examples" / "mlp_bf16_nt.mlir"))
    result = emulate_gemm(folder)
    assert_matches(result)
    assert result.mix.get("buffer_store_short", 0) > 0


def test_batch_matches_float64_per_batch(compiled):
    folder = compiled("--target", "gfx942", "--shape", "4x128x128x64")
    result = emulate_gemm(folder, seed=3)
    assert_matches(result)
    # the same check by hand, batch by batch, on the inputs the host built (seeded: A then B)
    rng = np.random.default_rng(3)
    import ml_dtypes
    a = rng.standard_normal((4, 128, 64), dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    b = rng.standard_normal((4, 64, 128), dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    for batch in range(4):
        want = a[batch] @ b[batch]
        assert np.abs(result.output[batch] - want).max() <= 1e-4 * np.abs(want).max(), batch
    # a kernel that reads the batches of B as A and the other way round does not match
    swapped = emulate_gemm(folder, kernel_text=swap_first_two_buffers(listing(folder), result.kernel))
    assert not swapped.matches


def test_input_program_of_two_dispatches_matches(compiled):
    folder = compiled("--target", "gfx942", "--input", str(TWO_PROJECTIONS))
    result = emulate_gemm(folder)
    assert_matches(result)
    kernels = result.kernel.split(", ")
    assert len(kernels) == 2 and result.mma_count == (128 * 128 * 128 + 128 * 128 * 256) // (16 * 16 * 16)
    # the second dispatch (x·W1 + the first's result): x and W1 swapped is caught
    swapped = emulate_gemm(folder, kernel_text=swap_first_two_buffers(listing(folder), kernels[1]))
    assert not swapped.matches


def test_a_dispatch_missing_from_the_report_is_one_sentence(compiled, tmp_path, capsys):
    folder = tmp_path / "cut"
    shutil.copytree(compiled("--target", "gfx942", "--input", str(TWO_PROJECTIONS)), folder)
    report = (folder / "report.json").read_text()
    dispatch_1 = re.search(r'\{\s*"dispatch": "module_two_projections_dispatch_1".*?\n    \}', report, re.S)
    (folder / "report.json").write_text(report.replace(",\n    " + dispatch_1[0].strip(), ""))
    assert main(["emulate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "which the folder's report does not list" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_sampling_a_program_of_two_dispatches_is_refused(compiled):
    folder = compiled("--target", "gfx942", "--input", str(TWO_PROJECTIONS))
    with pytest.raises(EmulatorError, match="takes a folder of one plain GEMM dispatch; this program has 2"):
        emulate_gemm(folder, workgroups=2)


# ----------------------------------------------------------------------------------------- float64 reference
@pytest.mark.parametrize("kind", ["none", "alpha-beta", "bias-relu", "bias-gelu"])
def test_interpretation_agrees_with_the_project_reference(kind):
    """The interpreter of the source program and pipelines.reference.float64_result compute the same D (gelu's
    program states 1/√2 as an f32 constant, 0.707106769, so there they agree to f32 rounding of it)."""
    gemm = Gemm(m=32, n=48, k=64, dtype="bf16", layout="nt", epilogue=Epilogue(kind, alpha=1.5, beta=-0.5))
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32).astype(np.float64) for shape in input_shapes(gemm)]
    with ir.Context(), ir.Location.unknown():
        (want, bound), = Interpreter(build_module(gemm), "gemm").run(arrays)
    erf = np.vectorize(__import__("math").erf)
    reference = float64_result(gemm.__dict__ | {"epilogue": gemm.epilogue.__dict__}, arrays,
                               lambda x: np.swapaxes(x, -1, -2), np.maximum, erf, 0.0)
    agree = 1e-7 if kind == "bias-gelu" else 1e-12
    assert np.abs(want - reference).max() <= agree * np.abs(reference).max()
    assert (bound > 0).all()


def test_the_gelu_bound_follows_its_slope():
    """gelu's bound is the accumulation budget times the slope (≤ 1.13) plus f32 rounding: larger than relu's
    (slope 1) and far below a planted error of a hundredth of max |D|."""
    bounds = {}
    for kind in ("bias-relu", "bias-gelu"):
        gemm = Gemm(m=32, n=32, k=256, dtype="bf16", layout="nn", epilogue=Epilogue(kind))
        arrays = [np.random.default_rng(1).standard_normal(s).astype(np.float32).astype(np.float64)
                  for s in input_shapes(gemm)]
        with ir.Context(), ir.Location.unknown():
            (want, bound), = Interpreter(build_module(gemm), "gemm").run(arrays)
        bounds[kind] = bound.max() / np.abs(want).max()
    assert bounds["bias-relu"] < bounds["bias-gelu"] < 1.2 * bounds["bias-relu"] + 1e-6 < 1e-2


def test_truncation_bound_is_zero_away_from_rounding_boundaries():
    """An arith.truncf to bf16 may round the other way only where the f32 error straddles a boundary."""
    source = """func.func @f(%a: tensor<4xf32>) -> tensor<4xbf16> {
      %t = arith.truncf %a : tensor<4xf32> to tensor<4xbf16>
      return %t : tensor<4xbf16>
    }"""
    with ir.Context(), ir.Location.unknown():
        interpreter = Interpreter(ir.Module.parse(source), "f")
        boundary = 1 + 2.0 ** -8  # halfway between two bf16 neighbours of 1
        interpreter.env.clear()
        block = interpreter.function.regions[0].blocks[0]
        interpreter.env[block.arguments[0]] = (np.array([1.0, boundary, 3.0, -2.0]), np.full(4, 1e-6))
        op = list(block.operations)[0].operation
        value, bound = interpreter.op(op)[0]
    assert list(bound == 0) == [True, False, True, True]
    assert bound[1] == 2.0 ** -7  # one bf16 ulp of 1


def test_an_op_the_reference_does_not_interpret_is_one_sentence():
    source = """func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %e = tensor.empty() : tensor<4x4xf32>
      %s = linalg.softmax dimension(1) ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
      return %s : tensor<4x4xf32>
    }"""
    with ir.Context(), ir.Location.unknown():
        interpreter = Interpreter(ir.Module.parse(source), "f")
        with pytest.raises(EmulatorError, match=r"does not interpret 'linalg.softmax' \(in @f\)"):
            interpreter.run([np.zeros((4, 4))])
