"""The codegen route's model library: several GEMMs of one program, each compiled by its own codegen sequence; the
dispatches of other GEMMs, and those whose contraction feeds a fused consumer, keep IREE's configuration."""

import re
from pathlib import Path

import pytest
from iree.compiler import ir

from pipelines.inspect import ptx_kernels
from pipelines.compiler import iree_compile_path, run_patiently
from transforms import codegen_script
from transforms.problem import Epilogue, Gemm
from transforms.schedule import Schedule, ScheduleError, Staging, Swizzle, Tile

PROGRAM = Path(__file__).parent / "data" / "three_gemms_one_fused.mlir"
BASE = Schedule(Tile((128, 128), 32, (2, 2), codegen_script.CODEGEN_MMA), Staging(3), Swizzle("pad"))
RASTER = Schedule(Tile((128, 128), 32, (2, 2), codegen_script.CODEGEN_MMA), Staging(4), Swizzle("pad", "raster", 2))
KERNELS = [(BASE, Gemm(512, 512, 256, "f16")), (RASTER, Gemm(512, 1024, 256, "f16"))]


def _library(kernels) -> str:
    with ir.Context(), ir.Location.unknown():
        return str(codegen_script.model_library(kernels))


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("model_library")
    (folder / "library.mlir").write_text(_library(KERNELS))
    run_patiently([iree_compile_path(), str(PROGRAM), "--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80",
                   f"--iree-codegen-transform-dialect-library={folder / 'library.mlir'}@__kernel_config",
                   f"--iree-hal-dump-executable-files-to={folder / 'dump'}", "-o", str(folder / "out.vmfb")],
                  check=True, capture_output=True)
    return folder / "dump"


def _pipeline(dump: Path, dispatch: int) -> str:
    text = (dump / f"configured_module_model_dispatch_{dispatch}.mlir").read_text()
    return re.search(r"translation_info = #iree_codegen\.translation_info<pipeline = ([^ >]+>?)(?: codegen_spec = "
                     r"(@\w+))?", text).group(2 if "codegen_spec" in text else 1)


def test_sequences_are_named_per_gemm():
    library = _library(KERNELS)
    for i in range(2):
        assert f"transform.named_sequence @g{i}_codegen(" in library
        assert f"transform.named_sequence @g{i}_match_gemm(" in library
        assert f"transform.include @g{i}_tile " in library
    assert library.count("transform.named_sequence @__kernel_config(") == 1
    # Only the raster GEMM brings its raster functions, named apart.
    assert "func.func private @g1___codegen_raster_tile_n" in library and "@g0___codegen_raster" not in library


def test_each_listed_gemm_gets_its_sequence(dump):
    assert _pipeline(dump, 0) == "@g0_codegen" and _pipeline(dump, 1) == "@g1_codegen"


def test_fused_consumer_keeps_iree_configuration(dump):
    """Dispatch 2 has the sizes of g0 but a truncf consumer: the plain kernel must not take it."""
    assert _pipeline(dump, 2) == "#iree_gpu.pipeline<TileAndFuse>"


def test_listed_kernels_use_the_route(dump):
    (ptx,) = dump.glob("*.ptx")
    kernels = ptx_kernels(ptx.read_text())
    for name, text in kernels.items():
        ours = "_dispatch_2_" not in name
        assert ("cp.async.cg.shared.global" in text) == ours and ("ldmatrix" in text) == ours, name


def test_repeated_gemm_is_refused():
    with pytest.raises(ScheduleError, match="512x512x256 f16 nn appears twice"):
        _library([KERNELS[0], (RASTER, Gemm(512, 512, 256, "f16"))])


def test_epilogue_gemm_is_refused():
    with pytest.raises(ScheduleError, match="plain GEMMs only"):
        _library([(BASE, Gemm(512, 512, 256, "f16", epilogue=Epilogue("linalg.generic")))])
