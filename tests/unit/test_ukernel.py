"""The generated-kernel route (pingpong8 and interleave4 on gfx942/gfx950, interleave on gfx1151, double_buffered
on all three): what it
refuses (one sentence each), what the compiled kernels show, and that verification cannot be fooled by a kernel
that is not the injected one or does not follow its schedule."""

import dataclasses
import json

import pytest
from iree.compiler import ir

from pipelines import flow
from pipelines.inspect import inspect_dump
from pipelines.targets import TARGETS, TargetError, check_kernel_target
from pipelines.verify import FallbackError, verify_ukernel
from transforms.problem import Epilogue, Gemm
from transforms.kernels import kernel_schedule
from transforms.lds_swizzle import XorSwizzle, lds_swizzle
from transforms.ukernel import UkernelError, build_pingpong8, ukernel_name, ukernel_schedule
from transforms.warpgroups import DoubleBuffered, PingPong8
from pipelines.routes.ukernel import UkernelRoute

UKERNEL = UkernelRoute.name  # the route's name, as a job names it

KERNEL = ukernel_schedule("bf16")
DB1151 = kernel_schedule("double_buffered", "bf16", TARGETS["gfx1151"])
NT = Gemm(1024, 1024, 512, "bf16", "nt")


def job(gemm=NT, target="gfx942", kernel=KERNEL):
    return flow.Job(TARGETS[target], "pingpong8", (gemm,), (None,), route=UKERNEL, plan=kernel)


@pytest.mark.parametrize("request_, message", [
    (job(NT.with_(layout="tn")), "covers the NT and NN layouts"),
    (job(kernel=PingPong8(tile=(128, 256, 32), lds_stages=1)), "takes a 256x256xK tile"),
    (job(target="gfx1151"), "the pingpong8 kernel is not generated for gfx1151"),
    (job(Gemm(1088, 1024, 512, "bf16", "nt"), "gfx1151", DB1151), "needs M a multiple of 128"),
    (job(Gemm(1024, 1024, 32, "bf16", "nt"), "gfx1151", DB1151), r"K of 32 \(at least 64\)"),
    (job(NT.with_(epilogue=Epilogue("bias-relu")), "gfx1151", DB1151), "epilogues are not fused"),
    (job(NT, "gfx942", DB1151), "generated for the 128x128x32 tile on 256 threads with register prefetch and "
                                "XOR-swizzled LDS only"),
    (job(NT, "gfx1151", DoubleBuffered(tile=(128, 64, 32), wave_size=32, waves=8, register_prefetch=True)),
     "generated for the 128x64x32 tile on 256 threads with register prefetch and padded LDS only"),
    (job(NT.with_(m=320)), "needs M and N multiples of 256"),
    (job(NT.with_(batch=2)), "no batch"),
    (job(NT.with_(epilogue=Epilogue("bias-relu"))), "epilogues are not fused"),
    (job(kernel=PingPong8(tile=(256, 256, 32), lds_stages=2)), "direct-to-LDS loads, which gfx942 does not have"),
])
def test_refusals_are_one_sentence(request_, message):
    with pytest.raises(UkernelError, match=message):
        flow.prepare(request_)


def test_generated_body_verifies_and_follows_the_model():
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            build_pingpong8(KERNEL, "bf16", "MFMA_F32_16x16x16_BF16")
        assert module.operation.verify()
        text = str(module)
    assert f"util.func private @{ukernel_name(KERNEL, 'bf16')}" in text
    # per K slice (two of 16 at K 32): one MFMA for the upper and one for the lower accumulator, in the loop and
    # again for the last tile
    assert text.count("iree_codegen.inner_tiled") == 8
    assert text.count("rocdl.s.setprio 1") == 2 and text.count("iree_gpu.swap_mfma = 1") == 2


def test_verification_rejects_a_kernel_without_the_ukernel(tmp_path):
    """A plain TileAndFuse kernel of the same GEMM is not the ukernel: verification names the ukernel."""
    flow.compile_job(flow.prepare(flow.Job(TARGETS["gfx942"], "default", (NT,), (None,))), tmp_path / "plain")
    dump = tmp_path / "plain" / "dump"
    kernel, = inspect_dump(dump, TARGETS["gfx942"])
    with ir.Context(), ir.Location.unknown(), pytest.raises(FallbackError, match="requested ukernel pingpong8"):
        verify_ukernel(kernel.dispatch, dump / f"configured_{kernel.dispatch}.mlir", kernel, KERNEL, NT,
                       TARGETS["gfx942"])


def test_compile_with_the_ukernel(tmp_path):
    report = flow.compile_job(flow.prepare(job()), tmp_path / "pp")
    kernel, = report["dispatches"]
    assert report["verified"] and kernel["setprio"] == 4 and kernel["conditional_barriers"] == 2
    assert kernel["lds_bytes"] == KERNEL.lds_bytes() == 32768 and kernel["spill_count"] == 0


@pytest.mark.parametrize("target, dtype, opcode", [
    ("gfx942", "f8E4M3FNUZ", "v_mfma_f32_16x16x32_fp8_fp8"), ("gfx950", "bf16", "v_mfma_f32_16x16x32_bf16"),
    ("gfx950", "f8E4M3FN", "v_mfma_f32_16x16x32_fp8_fp8"),
])
def test_other_targets_and_fp8(tmp_path, target, dtype, opcode):
    gemm = NT.with_(dtype=dtype)
    report = flow.compile_job(flow.prepare(job(gemm, target, ukernel_schedule(dtype))), tmp_path / "pp")
    kernel, = report["dispatches"]
    assert set(kernel["mma"]) == {opcode} and kernel["spill_count"] == 0 and kernel["setprio"] == 4


@pytest.mark.parametrize("dtype, layout, m, n, k", [("bf16", "nt", 512, 768, 128), ("f8E4M3FN", "nn", 768, 512, 192)])
def test_a_short_k_loop_stays_a_loop(tmp_path, dtype, layout, m, n, k):
    """K of 4 tiles (bf16) or 3 (fp8) leaves 3 or 2 loop trips, which LLVM unrolled fully while it could fold the
    bound (12 s_setprio; fp8 NN at 768x512x192 then spilled 3 VGPRs): over the hidden bound the loop stays one body
    of 4 s_setprio, and the fp8 NN kernel compiles without spills."""
    gemm = Gemm(m, n, k, dtype, layout)
    report = flow.compile_job(flow.prepare(job(gemm, "gfx950", ukernel_schedule(dtype))), tmp_path / "pp")
    kernel, = report["dispatches"]
    assert kernel["setprio"] == 4 and kernel["conditional_barriers"] == 2 and kernel["spill_count"] == 0


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_nn_layout_keeps_b_as_stored_and_permutes_in_registers(tmp_path, target):
    """One LDS stage, NN: B written as stored, 16 bytes a write (no 2-byte scatter), read 4 adjacent N values of a
    K row a read and transposed by byte permutes: 4 tiles × the lane's K values, two 16-bit values a v_perm_b32, so 16
    a K step of 32 (gfx942: two slices of 4 K values; gfx950: one of 8), in the loop and again for the last tile."""
    gemm = NT.with_(layout="nn")
    report = flow.compile_job(flow.prepare(job(gemm, target)), tmp_path / "pp")
    kernel, = report["dispatches"]
    assert kernel["spill_count"] == 0 and kernel["lds_bytes"] == 32768 and kernel["conditional_barriers"] == 2
    isa = next((tmp_path / "pp" / "dump").glob("*.rocmasm")).read_text()
    assert "ds_write_b16" not in isa and "ds_write_b128" in isa
    assert isa.count("v_perm_b32") == 2 * 16


def test_kernels_are_offered_per_target():
    with pytest.raises(UkernelError, match="the interleave kernel is not generated for gfx942; it has pingpong8, "):
        kernel_schedule("interleave", "bf16", TARGETS["gfx942"])
    with pytest.raises(TargetError, match="generated for gfx1151; gfx942 is not covered"):
        check_kernel_target("interleave", TARGETS["gfx942"])
    with pytest.raises(UkernelError, match="the double_buffered kernel has no intrinsic for f8E4M3FNUZ on gfx1151"):
        kernel_schedule("double_buffered", "f8E4M3FNUZ", TARGETS["gfx1151"])
    with pytest.raises(UkernelError, match="no generated kernel; choose one of pingpong8, pingpong8_dma, "
                                           "double_buffered, double_buffered_dma, interleave4, interleave, "
                                           "producer_consumer"):
        kernel_schedule("pingpong4", "bf16", TARGETS["gfx942"])


@pytest.mark.parametrize("target, variant, layout, dtype, opcode, lds", [
    ("gfx1151", "double_buffered", "nt", "bf16", "v_wmma_f32_16x16x16_bf16", 2 * (128 + 64) * (32 + 8) * 2),
    ("gfx1151", "interleave", "nn", "f16", "v_wmma_f32_16x16x16_f16", 2 * (128 + 64) * (32 + 8) * 2),
    ("gfx942", "interleave4", "nn", "bf16", "v_mfma_f32_16x16x16_bf16", 2 * (128 + 128) * 32 * 2),
    ("gfx942", "double_buffered", "nt", "f8E4M3FNUZ", "v_mfma_f32_16x16x32_fp8_fp8", 2 * (128 + 128) * 64),
    ("gfx950", "interleave4", "nt", "bf16", "v_mfma_f32_16x16x32_bf16", 2 * (128 + 128) * 32 * 2),
    # gfx950 ships it with padded rows (Target.padded_kernels)
    ("gfx950", "double_buffered", "nn", "f8E4M3FN", "v_mfma_f32_16x16x32_fp8_fp8", 2 * (128 + 128) * (64 + 8)),
    ("gfx1151", "double_buffered", "tn", "bf16", "v_wmma_f32_16x16x16_bf16", 2 * (128 + 64) * (32 + 8) * 2),
    ("gfx942", "interleave4", "tn", "f16", "v_mfma_f32_16x16x16_f16", 2 * (128 + 128) * 32 * 2),
    ("gfx942", "producer_consumer", "nt", "bf16", "v_mfma_f32_16x16x16_bf16", 2 * (128 + 256) * 32 * 2),
    ("gfx950", "producer_consumer", "nn", "f8E4M3FN", "v_mfma_f32_16x16x32_fp8_fp8", 2 * (128 + 256) * 64),
    ("gfx942", "producer_consumer", "tn", "f16", "v_mfma_f32_16x16x16_f16", 2 * (128 + 256) * 32 * 2),
])
def test_register_prefetch_kernels(tmp_path, target, variant, layout, dtype, opcode, lds):
    """The target's wave size and only its MMA, the two-stage LDS plan (rows padded on gfx1151, XOR-swizzled and
    unpadded on CDNA), no spills, no stagger; the K loop's
    MMAs per barrier and the load placement are checked by verification inside compile_job."""
    gemm = Gemm(1024, 1024, 512, dtype, layout)
    kernel = kernel_schedule(variant, dtype, TARGETS[target])
    report = flow.compile_job(flow.prepare(job(gemm, target, kernel)), tmp_path / "k")
    stats, = report["dispatches"]
    assert report["verified"] and set(stats["mma"]) == {opcode} and stats["spill_count"] == 0
    threads = 768 if variant == "producer_consumer" else 256
    assert stats["wave_size"] == TARGETS[target].wave_size and stats["workgroup_size"] == threads
    assert stats["lds_bytes"] == kernel.lds_bytes() == lds
    assert stats["conditional_barriers"] == 0 and stats["setprio"] == 0


def test_verification_tells_the_two_gfx1151_variants_apart(tmp_path):
    """The interleave kernel has global loads between its WMMAs; checked as double_buffered, it is rejected."""
    gemm = Gemm(1024, 1024, 512, "bf16", "nt")
    interleave = kernel_schedule("interleave", "bf16", TARGETS["gfx1151"])
    flow.compile_job(flow.prepare(job(gemm, "gfx1151", interleave)), tmp_path / "k")
    dump = tmp_path / "k" / "dump"
    kernel, = inspect_dump(dump, TARGETS["gfx1151"])
    plain = kernel_schedule("double_buffered", "bf16", TARGETS["gfx1151"])
    configured = dump / f"configured_{kernel.dispatch}.mlir"
    with ir.Context(), ir.Location.unknown():
        verify_ukernel(kernel.dispatch, configured, kernel, interleave, gemm, TARGETS["gfx1151"])
        with pytest.raises(FallbackError, match="requested ukernel double_buffered_w32_nt_bf16_k32"):
            verify_ukernel(kernel.dispatch, configured, kernel, plain, gemm, TARGETS["gfx1151"])
        # the same code under the plain kernel's name: the load placement gives it away
        configured.write_text(configured.read_text().replace("interleave_w32", "double_buffered_w32"))
        with pytest.raises(FallbackError, match="whole next tile fetched before the MMAs did not take effect: "
                                                "[0-9]+ global loads of a K step, [1-9][0-9]* of them between MMAs"):
            verify_ukernel(kernel.dispatch, configured, kernel, plain, gemm, TARGETS["gfx1151"])


@pytest.mark.parametrize("target, dtype, rows_per_line", [("gfx942", "bf16", 2), ("gfx950", "bf16", 4),
                                                           ("gfx942", "f8E4M3FNUZ", 2)])
def test_xor_swizzle_follows_the_bank_geometry(target, dtype, rows_per_line):
    """64-byte rows: 2 fill a line of gfx942's 32 banks, 4 of gfx950's 64; the 4 chunks of a row are permuted."""
    swizzle = lds_swizzle(kernel_schedule("interleave4", dtype, TARGETS[target]))
    assert (swizzle.chunks, swizzle.rows_per_line) == (4, rows_per_line)
    swizzle.check(16)
    # the 16 rows of a fragment read start their chunk 0 on 8 (gfx942) different 16-byte bank slots, not 2
    line = TARGETS[target].lds_banks * 4
    slots = {(r * 64 + swizzle.column(r, 0) * (16 // swizzle.chunk_elements)) % line // 16 for r in range(16)}
    assert len(slots) == min(16, line // 16)


def test_a_swizzle_without_its_inverse_is_rejected():
    class Broken(XorSwizzle):
        def inverse(self, row, column):
            return column
    with pytest.raises(ValueError, match="not a permutation with inverse on row 2"):
        Broken(8, 4, 2).check(16)


def test_pingpong8_swizzle_repeats_every_16_rows():
    """Its fragment reads take the mask from the row within a 16-row tile, its stores from the LDS row."""
    for target, rows_per_line in (("gfx942", 2), ("gfx950", 4)):
        swizzle = lds_swizzle(kernel_schedule("pingpong8", "bf16", TARGETS[target]))
        assert swizzle.rows_per_line == rows_per_line
        assert all(swizzle.mask(r) == swizzle.mask(r % 16) for r in range(256))
    with pytest.raises(UkernelError, match="does not repeat every 16 rows"):
        flow.prepare(job(kernel=PingPong8(tile=(256, 256, 32), lds_stages=1, xor_rows=8)))


def test_gfx950_direct_to_lds_kernel(tmp_path):
    """No VGPR round trip: only direct-to-LDS loads, no LDS stores, XOR-swizzled 32 KiB; NT only."""
    gemm = Gemm(1024, 1024, 512, "bf16", "nt")
    kernel = kernel_schedule("double_buffered_dma", "bf16", TARGETS["gfx950"])
    report = flow.compile_job(flow.prepare(job(gemm, "gfx950", kernel)), tmp_path / "k")
    stats, = report["dispatches"]
    assert report["verified"] and stats["dma_loads"] > 0 and stats["global_loads"] == 0
    assert stats["lds_writes"] == 0 and stats["lds_bytes"] == kernel.lds_bytes() == 32768
    with pytest.raises(UkernelError, match="covers the NT layout only, not NN"):
        flow.prepare(job(gemm.with_(layout="nn"), "gfx950", kernel))
    with pytest.raises(TargetError, match="generated for gfx950; gfx942 is not covered"):
        check_kernel_target("double_buffered_dma", TARGETS["gfx942"])


def test_gfx950_two_stage_pingpong8(tmp_path):
    """HipKittens' 256x256x64: two LDS stages (128 KiB) filled only by direct-to-LDS copies, s_setprio around
    every K step, the stagger and re-align barriers; it computes the right GEMM on the emulator. NT only, gfx950
    only."""
    from pipelines.emulator import emulate_gemm

    gemm = Gemm(256, 256, 192, "bf16", "nt")  # three K steps: one in the loop, two after it
    kernel = kernel_schedule("pingpong8_dma", "bf16", TARGETS["gfx950"])
    assert (kernel.tile, kernel.lds_stages) == ((256, 256, 64), 2)
    report = flow.compile_job(flow.prepare(job(gemm, "gfx950", kernel)), tmp_path / "k")
    stats, = report["dispatches"]
    assert report["verified"] and stats["dma_loads"] > 0 and stats["global_loads"] == 0
    assert stats["lds_writes"] == 0 and stats["lds_bytes"] == kernel.lds_bytes() == 131072
    assert stats["spill_count"] == 0
    result = emulate_gemm(tmp_path / "k")
    assert result.passed and result.matches
    without = dataclasses.replace(TARGETS["gfx950"], lds_transpose_reads=False)
    with pytest.raises(UkernelError, match="transposing LDS reads, which gfx950 does not have"):
        flow.prepare(flow.Job(without, "pingpong8", (gemm.with_(layout="nn"),), (None,), route=UKERNEL, plan=kernel))
    with pytest.raises(TargetError, match="generated for gfx950; gfx942 is not covered"):
        check_kernel_target("pingpong8_dma", TARGETS["gfx942"])


def test_gfx950_two_stage_pingpong8_fp8_takes_the_double_rate_mfma(tmp_path):
    """fp8: pingpong8_dma takes gfx950's 16x16x128 (a lane's 32 values in two runs of 16, 64 apart along K) where the
    other kernels keep the 16x16x32; the right GEMM on the emulator."""
    from pipelines.emulator import emulate_gemm
    from transforms.ukernel import ukernel_mma

    gfx950 = TARGETS["gfx950"]
    assert ukernel_mma(gfx950, "f8E4M3FN", "pingpong8_dma") == "MFMA_F32_16x16x128_F8E4M3FN"
    assert ukernel_mma(gfx950, "f8E5M2", "pingpong8") == "MFMA_F32_16x16x32_F8E5M2"
    assert ukernel_mma(gfx950, "bf16", "pingpong8_dma") == "MFMA_F32_16x16x32_BF16"
    gemm = Gemm(256, 512, 384, "f8E4M3FN", "nt")  # three K steps of 128
    kernel = kernel_schedule("pingpong8_dma", "f8E4M3FN", gfx950)
    assert kernel.tile == (256, 256, 128)
    report = flow.compile_job(flow.prepare(job(gemm, "gfx950", kernel)), tmp_path / "k")
    stats, = report["dispatches"]
    assert report["verified"] and stats["mma"] == {"v_mfma_f32_16x16x128_f8f6f4": 96} and stats["spill_count"] == 0
    result = emulate_gemm(tmp_path / "k")
    assert result.passed and result.matches


def test_gfx950_two_stage_pingpong8_nn_reads_b_as_stored(tmp_path):
    """NN: B is copied into LDS as stored (K rows of N, 128 KiB in all as in NT) and read back by transposing reads
    (16-bit: two per fragment and N tile; fp8: four, two per run of the double-rate MFMA), conflict-free under the
    transposed swizzle; the right GEMM on the emulator."""
    from pipelines.emulator import emulate_gemm

    for dtype, k, read, per_step in (("bf16", 256, "ds_read_b64_tr_b16", 16), ("f8E5M2", 512, "ds_read_b64_tr_b8", 16)):
        gemm = Gemm(256, 512, k, dtype, "nn")  # four K steps: two in the loop
        kernel = kernel_schedule("pingpong8_dma", dtype, TARGETS["gfx950"])
        folder = tmp_path / dtype
        report = flow.compile_job(flow.prepare(job(gemm, "gfx950", kernel)), folder)
        stats, = report["dispatches"]
        assert report["verified"] and stats["dma_loads"] > 0 and stats["global_loads"] == 0
        assert stats["lds_writes"] == 0 and stats["lds_bytes"] == 131072 and stats["spill_count"] == 0
        isa = (folder / "dump" / report["dispatches"][0]["isa_file"]).read_text()
        # per K step and wave: bf16 2 K slices x 4 N tiles x 2 reads; fp8 1 slice x 4 tiles x 2 runs x 2 reads
        assert isa.count(read) >= per_step
        result = emulate_gemm(folder)
        assert result.passed and result.matches and result.lds_conflict_cycles == 0


def test_iree_builtin_ukernel_pipeline(tmp_path, capsys):
    """`--pipeline ukernel`: IREE's default with its ROCm tensor ukernels. At bf16 NT 1024x1024x256 IREE takes the
    GEMM with its built-in ping-pong (the descriptor is in the configured IR), and the emulator runs it (its
    buffer descriptors carry a cache-swizzle stride) to a match; a shape none of its ukernels takes is an error,
    not a silent fall back to IREE's codegen; gfx1151 has no such pipeline."""
    from pipelines import cli
    from pipelines.emulator import emulate_gemm

    folder = tmp_path / "uk"
    assert cli.main(["compile", "--target", "gfx942", "--shape", "1024x1024x256", "--layout", "nt", "--pipeline",
                     "ukernel", "-o", str(folder)]) == 0
    report = json.loads((folder / "report.json").read_text())
    assert report["verified"] and "--iree-rocm-enable-tensor-ukernels" in report["command"]
    configured = next((folder / "dump").glob("configured_*.mlir")).read_text()
    assert 'iree_codegen.ukernel_descriptor<"pingpong_large_bf16"' in configured
    assert emulate_gemm(folder).passed
    capsys.readouterr()
    assert cli.main(["compile", "--target", "gfx942", "--shape", "256x256x256", "--layout", "nt", "--pipeline",
                     "ukernel", "-o", str(tmp_path / "small")]) == 2
    assert "without any of its tensor ukernels (pipeline 'ukernel')" in capsys.readouterr().err
    assert not (tmp_path / "small").exists()
    assert cli.main(["compile", "--target", "gfx1151", "--shape", "1024x1024x256", "--layout", "nt", "--pipeline",
                     "ukernel", "-o", str(tmp_path / "rdna")]) == 2
    assert "does not run on gfx1151" in capsys.readouterr().err


def test_iree_ukernel_pipeline_checks_every_gemm_of_an_input_file(tmp_path, capsys):
    """`--input` with two GEMMs under `--pipeline ukernel`: IREE's ping-pong takes the 1024x1024x256 one, none takes
    the 256³ one, and that one is named (the pipeline once compiled such a file without its ukernels at all)."""
    from pipelines import cli

    maps = ("#a = affine_map<(d0, d1, d2) -> (d0, d2)>\n#b = affine_map<(d0, d1, d2) -> (d1, d2)>\n"
            "#c = affine_map<(d0, d1, d2) -> (d0, d1)>\n")

    def matmul(n: int, m: int, k: int, a: str, b: str) -> str:
        return (f"    %e{n} = tensor.empty() : tensor<{m}x{m}xf32>\n"
                f"    %f{n} = linalg.fill ins(%cst : f32) outs(%e{n} : tensor<{m}x{m}xf32>) -> tensor<{m}x{m}xf32>\n"
                f"    %r{n} = linalg.matmul indexing_maps = [#a, #b, #c] ins({a}, {b} : tensor<{m}x{k}xbf16>, "
                f"tensor<{m}x{k}xbf16>) outs(%f{n} : tensor<{m}x{m}xf32>) -> tensor<{m}x{m}xf32>\n")

    source = tmp_path / "two.mlir"
    source.write_text(maps + "module {\n  func.func @two(%a0: tensor<1024x256xbf16>, %b0: tensor<1024x256xbf16>, "
                      "%a1: tensor<256x256xbf16>, %b1: tensor<256x256xbf16>) -> (tensor<1024x1024xf32>, "
                      "tensor<256x256xf32>) {\n    %cst = arith.constant 0.000000e+00 : f32\n"
                      + matmul(0, 1024, 256, "%a0", "%b0") + matmul(1, 256, 256, "%a1", "%b1")
                      + "    return %r0, %r1 : tensor<1024x1024xf32>, tensor<256x256xf32>\n  }\n}\n")
    assert cli.main(["compile", "--target", "gfx942", "--input", str(source), "--pipeline", "ukernel", "-o",
                     str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "GEMM 256x256x256 nt bf16 for gfx942 without any of its tensor ukernels" in err
    assert not (tmp_path / "out").exists()
