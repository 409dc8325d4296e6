"""The tuning spec's matcher applied by iree-compile itself, on non-square problems: a spec for M×N×K configures
exactly the GEMM of that shape and layout, not its transpose (N×M×K), not another K, not another layout or type.
iree-compile stops after executable configuration (a fraction of a second per run), so the marker the spec's
action sets is read from the configured IR."""

import subprocess
from pathlib import Path

import pytest
from iree.compiler import ir

from pipelines.compiler import iree_compile_path
from pipelines.targets import TARGETS
from transforms.config import compilation_info
from transforms.problem import Gemm, build_module
from transforms.schedule import Schedule, Staging, Swizzle, Tile
from transforms.tuning_spec import APPLIED_MARKER, tuning_spec

GFX942 = TARGETS["gfx942"]
SCHEDULE = Schedule(Tile((64, 64), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), Staging(2), Swizzle("pad"))
SPEC_GEMM = Gemm(64, 128, 96, "bf16", "nn")


def configured_with_spec(tmp_path: Path, spec_for: list[Gemm], payload: Gemm) -> str:
    with ir.Context(), ir.Location.unknown():
        spec = tuning_spec([(gemm, compilation_info(SCHEDULE, gemm, GFX942)) for gemm in spec_for])
        (tmp_path / "spec.mlir").write_text(str(spec))
        (tmp_path / "gemm.mlir").write_text(str(build_module(payload)))
    done = subprocess.run([iree_compile_path(), str(tmp_path / "gemm.mlir"), *GFX942.compile_flags,
                           f"--iree-codegen-tuning-spec-path={tmp_path / 'spec.mlir'}",
                           "--compile-to=executable-configurations"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_spec_configures_its_own_non_square_shape(tmp_path):
    configured = configured_with_spec(tmp_path, [SPEC_GEMM], SPEC_GEMM)
    assert APPLIED_MARKER in configured and "workgroup = [64, 64, 0]" in configured


@pytest.mark.parametrize("payload", [
    SPEC_GEMM.with_(m=128, n=64),             # M and N swapped
    SPEC_GEMM.with_(m=96, k=64),              # M and K swapped
    SPEC_GEMM.with_(n=96, k=128),             # N and K swapped
    SPEC_GEMM.with_(layout="nt"),
    SPEC_GEMM.with_(dtype="f16"),
], ids=["m-n", "m-k", "n-k", "layout", "dtype"])
def test_spec_leaves_other_problems_alone(tmp_path, payload):
    assert APPLIED_MARKER not in configured_with_spec(tmp_path, [SPEC_GEMM], payload)


def test_spec_with_both_orientations_configures_the_right_one(tmp_path):
    """Two entries, 64x128 (tile 64x64) and 128x64 (tile 128x64): the 128x64 problem gets its own entry's tile,
    which a matcher that compared M with N would give to the other entry's problem."""
    wide, tall = SPEC_GEMM, SPEC_GEMM.with_(m=128, n=64)
    with ir.Context(), ir.Location.unknown():
        tall_schedule = Schedule(Tile((128, 64), 32, (2, 2), "MFMA_F32_16x16x16_BF16"), Staging(2), Swizzle("pad"))
        spec = tuning_spec([(wide, compilation_info(SCHEDULE, wide, GFX942)),
                            (tall, compilation_info(tall_schedule, tall, GFX942))])
        (tmp_path / "spec.mlir").write_text(str(spec))
        (tmp_path / "gemm.mlir").write_text(str(build_module(tall)))
    done = subprocess.run([iree_compile_path(), str(tmp_path / "gemm.mlir"), *GFX942.compile_flags,
                           f"--iree-codegen-tuning-spec-path={tmp_path / 'spec.mlir'}",
                           "--compile-to=executable-configurations"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert APPLIED_MARKER in done.stdout and "workgroup = [128, 64, 0]" in done.stdout


def test_batch_spec_matches_its_batch_only(tmp_path):
    batched = SPEC_GEMM.with_(batch=3)
    assert APPLIED_MARKER in configured_with_spec(tmp_path, [batched], batched)
    assert APPLIED_MARKER not in configured_with_spec(tmp_path, [batched], batched.with_(batch=2))


_USER_SPEC = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @helper(%arg0: !transform.any_op {transform.consumed}) {
    %0 = transform.cast %arg0 : !transform.any_op to !transform.any_op
    transform.yield
  }
  transform.named_sequence @__kernel_config(%arg0: !transform.any_op {transform.ENTRY_EFFECT})
      -> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint} {
    transform.yield %arg0 : !transform.any_op
  }
}"""


@pytest.mark.parametrize("user_entry, ours_empty, linked", [
    ("readonly", True, "readonly"),  # nothing consumes: a helper that consumes its argument is no entry point
    ("consumed", True, "consumed"),
    ("readonly", False, "consumed"),  # our spec with a matcher consumes its root (foreach_match)
])
def test_the_linked_entry_consumes_its_root_only_where_a_linked_entry_does(user_entry, ours_empty, linked):
    from transforms.tuning_spec import link_specs

    gemm = Gemm(256, 256, 256, "f16", "nt")
    with ir.Context(), ir.Location.unknown():
        user = ir.Module.parse(_USER_SPEC.replace("ENTRY_EFFECT", user_entry))
        ours = tuning_spec([] if ours_empty else [(gemm, compilation_info(SCHEDULE, gemm, GFX942))])
        text = str(link_specs([("user_spec", user), ("project_spec", ours)]))
    entry = [line for line in text.splitlines() if line.startswith("  transform.named_sequence @__kernel_config")]
    assert len(entry) == 1 and f"transform.{linked}" in entry[0]
