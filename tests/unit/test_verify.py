"""The fallback check must reject a kernel that lacks a requested choice. Each test compiles one schedule and
verifies it against another that asks for something the kernel does not have."""

import dataclasses
from pathlib import Path

import pytest
from iree.compiler import ir

from pipelines import flow
from pipelines.inspect import inspect_dump
from pipelines.targets import TARGETS
from pipelines.verify import FallbackError, verify_dispatch
from transforms.config import compilation_info
from transforms.problem import Gemm, contraction_ops, parse_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile, WarpGroups

GFX942 = TARGETS["gfx942"]
GEMM = Gemm(1024, 1024, 1024, "bf16", "nt")
COMPILED = Schedule(Tile((128, 128), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), Staging(2), Swizzle("xor"))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify") / "out"
    flow.compile_job(flow.prepare(flow.Job(GFX942, "custom", (GEMM,), (COMPILED,))), out)
    return out / "dump"


def contraction(dump: Path, dispatch: str) -> tuple[ir.Module, ir.Operation]:
    """The configured contraction, with its module (which must outlive the op)."""
    configured = dump / f"configured_{dispatch}.mlir"
    module = parse_module(configured.read_text(), configured.name)
    op, = contraction_ops(module)
    return module, op


def check_against(dump: Path, asked: Schedule):
    kernel, = inspect_dump(dump, GFX942)
    with ir.Context(), ir.Location.unknown():
        info = compilation_info(COMPILED, GEMM, GFX942)  # the config really applied, so only `asked` differs
        module, op = contraction(dump, kernel.dispatch)
        verify_dispatch(kernel.dispatch, op, dump, kernel, asked, GEMM, info, GFX942, evidence=True)


def test_compiled_schedule_verifies(compiled):
    check_against(compiled, COMPILED)


@pytest.mark.parametrize("asked, choice", [
    (dataclasses.replace(COMPILED, tile=dataclasses.replace(COMPILED.tile, mma="MFMA_F32_32x32x8_BF16")),
     "MMA intrinsic MFMA_F32_32x32x8_BF16"),
    (dataclasses.replace(COMPILED, swizzle=Swizzle("rotate")), "LDS swizzle #iree_codegen.rotate_rows<64, 8>"),
    (dataclasses.replace(COMPILED, swizzle=Swizzle("pad")), "LDS layout 'pad'"),
    (dataclasses.replace(COMPILED, staging=Staging(3)), "prefetch stages 3"),
    (dataclasses.replace(COMPILED, warp_groups=WarpGroups(waves_per_eu=8)), "waves per EU 8"),
])
def test_missing_choice_is_named(compiled, asked, choice):
    with pytest.raises(FallbackError, match=choice.replace("<", ".").replace(">", ".")):
        check_against(compiled, asked)


def test_changed_config_is_named(compiled):
    with ir.Context(), ir.Location.unknown():
        other = dataclasses.replace(COMPILED, tile=dataclasses.replace(COMPILED.tile, k=64))
        info = compilation_info(other, GEMM, GFX942)
        kernel, = inspect_dump(compiled, GFX942)
        with pytest.raises(FallbackError, match="requested compilation_info did not take effect"):
            module, op = contraction(compiled, kernel.dispatch)
            verify_dispatch(kernel.dispatch, op, compiled, kernel, other, GEMM, info, GFX942, evidence=True)
