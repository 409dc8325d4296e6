"""The Hopper route's kernel generator (transforms.hopper, issue 19): schedule and problem checks, the tensor-map
specs, the PTX structure check against real compiles, and the driver-side encoder's refusal without a driver.
Numerics and speed are measured on an H100 (results/h100/hopper)."""

import ctypes
import json
import shutil
from dataclasses import replace
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.compiler import iree_compile_path, run_patiently
from pipelines.tensormap import TensorMapError, encode
from transforms.hopper import (DEFAULT, SM_COUNT, HopperError, HopperSchedule, check_ptx, grid_size, program,
                               ptx_kernel, stages_stores, tensor_maps, tile_grid, unit_grid)
from transforms import hopper as hopper_module
from transforms.problem import Epilogue, Gemm


@pytest.mark.parametrize("schedule, words", [
    (HopperSchedule(kind="split"), "kind"),
    (HopperSchedule(kind="pingpong", consumers=3, block_m=128), "two consumer"),
    (HopperSchedule(block_k=32), "block_k"),
    (HopperSchedule(block_m=192), "block_m"),
    (HopperSchedule(block_n=12), "block_n"),
    (HopperSchedule(stages=1), "stages"),
    (HopperSchedule(block_m=256, block_n=256, stages=4), "shared memory"),
    (HopperSchedule(group_m=0), "group_m"),
    (HopperSchedule(block_m=256, consumers=4), "one or two consumer"),
    (HopperSchedule(consumers=0), "one or two consumer"),
    (HopperSchedule(cluster_m=4), "cluster_m"),
    (HopperSchedule(block_n=8, cluster_m=2), "cluster_m"),
    (HopperSchedule(block_n=12, cluster_m=2), "block_n must"),
    (HopperSchedule(group_m=3, cluster_m=2), "group_m must be a multiple"),
    (HopperSchedule(cluster_n=4), "cluster_n must be 1 or 2"),
    (HopperSchedule(cluster_n=0), "cluster_n must be 1 or 2"),
    (HopperSchedule(block_m=64, consumers=1, cluster_n=2, split_k=2, split_sum="cluster"), "no cluster along M or N"),
])
def test_schedules_the_kernel_cannot_build_are_one_sentence(schedule, words):
    with pytest.raises(HopperError, match=words):
        schedule.check()


@pytest.mark.parametrize("gemm, words", [
    (Gemm(256, 256, 256, "f8E4M3FN", "nt"), "f16 or bf16"), (Gemm(256, 256, 256, "bf16", "tn"), "layout"),
    (Gemm(256, 256, 100, "bf16", "nt"), "multiple of 8"),
    (Gemm(256, 256, 200, "bf16", "nn", 2), "batch of NN products needs K a multiple of 64"),
    (Gemm(256, 256, 256, "bf16", "nt", epilogue=Epilogue("bias-relu")), "epilogue bias-relu"),
])
def test_problems_the_route_does_not_take_are_refused(gemm, words):
    with pytest.raises(HopperError, match=words):
        program(gemm, HopperSchedule())


def test_tensor_maps_describe_both_k_major_operands():
    maps = tensor_maps(Gemm(1000, 776, 1000, "f16", "nt"), HopperSchedule(block_m=256, block_n=128))
    assert [(m["operand"], m["dims"], m["stride"], m["box"], m["swizzle"]) for m in maps] == [
        ("A", [1000, 1000], 2000, [64, 256], 128), ("B", [1000, 776], 2000, [64, 128], 128)]


def test_a_cluster_shares_b_and_takes_whole_clusters_of_tiles():
    """Two workgroups on neighbouring block rows: each B box is half the tile, the grid whole clusters (an odd
    number of block rows rounds up: the last cluster's second block row is past M)."""
    gemm, schedule = Gemm(1000, 776, 1000, "bf16", "nt"), HopperSchedule(block_n=256, cluster_m=2)
    assert tensor_maps(gemm, schedule)[1]["box"] == [64, 128]
    assert tile_grid(gemm, schedule) == (4, 8) and grid_size(gemm, schedule) == 4 * 8
    odd = Gemm(1100, 776, 1000, "bf16", "nt")  # 9 block rows: 5 cluster rows
    assert grid_size(odd, schedule) == 4 * 5 * 2



def test_a_2x2_cluster_shares_a_and_b_and_takes_whole_cluster_tiles():
    """Clusters of 2x2: each A box is half the block rows and each B box half the block columns; the grid takes
    whole 2x2 cluster tiles (3 block columns round up to 2 cluster columns, 9 block rows to 5 cluster rows)."""
    gemm, schedule = Gemm(1000, 600, 1000, "bf16", "nt"), HopperSchedule(block_n=256, cluster_m=2, cluster_n=2)
    assert [m["box"] for m in tensor_maps(gemm, schedule)] == [[64, 64], [64, 128]]
    assert tile_grid(gemm, schedule) == (3, 8) and unit_grid(gemm, schedule) == (2, 4)
    assert grid_size(gemm, schedule) == 2 * 4 * 4
    assert grid_size(Gemm(1100, 600, 1000, "bf16", "nt"), schedule) == 2 * 5 * 4
    # the workgroups whose loads land in each one's stages: its own block row and column of the cluster
    assert [schedule.partners(r) for r in range(4)] == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert HopperSchedule(cluster_n=2).partners(1) == (0, 1) and HopperSchedule(cluster_m=2).partners(1) == (0, 1)
    assert (schedule.empty_arrivals, replace(schedule, cluster_n=1).empty_arrivals) == (6, 4)
    assert "clusters of 2x2 sharing A and B" in schedule.describe()
    assert "clusters of 1x2 sharing A" in replace(schedule, cluster_m=1).describe()


def test_a_schedule_string_names_a_cluster_along_n_after_a_comma():
    schedule = hopper_module.parse_schedule("hopper-cooperative-persistent:128x256x4x16x2,2")
    assert (schedule.cluster_m, schedule.cluster_n, schedule.split_k) == (2, 2, 1)
    assert hopper_module.parse_schedule("hopper-cooperative-persistent:128x256x4x16x1,2x2").cluster_n == 2
    assert hopper_module.parse_schedule("hopper-cooperative-persistent:128x256x4x16x2").cluster_n == 1
    for text, words in (("hopper-cooperative:128x256x4x16x2,3", "cluster_n must be 1 or 2"),
                        ("hopper-cooperative:128x256x4x16x2,", "is not"), ("hopper-cooperative:128x256x4x16x2,2,2",
                                                                           "is not"),
                        ("hopper-cooperative:128x256x4x16,2x2", "is not")):
        with pytest.raises(HopperError, match=words):
            hopper_module.parse_schedule(text)


@pytest.mark.parametrize("gemm, schedule, workgroups", [
    # 1024 cluster tiles: 16 rounds on 66 clusters or on 64, so 64
    (Gemm(8192, 8192, 64, "bf16", "nt"), HopperSchedule(block_n=256, persistent=True, cluster_m=2), 128),
    (Gemm(8192, 8192, 64, "bf16", "nt"), HopperSchedule(block_m=64, block_n=256, kind="pingpong"), 128),
    # 79 × 10 tiles: 6 rounds on 132 workgroups (5.98), and on no fewer
    (Gemm(10000, 2560, 64, "bf16", "nt"), HopperSchedule(block_n=256, persistent=True), SM_COUNT),
    (Gemm(512, 512, 64, "bf16", "nt"), HopperSchedule(persistent=True), 16),  # fewer tiles than SMs: one each
    # 2x2 clusters, of which an H200 runs 30 at once (not 33): 512 cluster tiles, 18 rounds on 30 or on 29, so 29
    (Gemm(8192, 8192, 64, "bf16", "nt"), HopperSchedule(block_n=256, persistent=True, cluster_m=2, cluster_n=2), 116),
    # 56 x 32 cluster tiles: 60 rounds on 30 clusters (59.7), and on no fewer
    (Gemm(8192, 28672, 64, "bf16", "nt"), HopperSchedule(block_n=256, persistent=True, cluster_m=2, cluster_n=2),
     120),
    # 1x2 clusters run 66 at once: 64 x 32 block tiles, 1024 cluster tiles, 16 rounds on 64 clusters
    (Gemm(8192, 8192, 64, "bf16", "nt"), HopperSchedule(block_n=256, persistent=True, cluster_n=2), 128),
])
def test_a_persistent_grid_is_the_fewest_workgroups_that_keep_the_rounds(gemm, schedule, workgroups):
    columns, rows = tile_grid(gemm, schedule)
    size = schedule.cluster_m * schedule.cluster_n
    units = -(-columns // schedule.cluster_n) * -(-rows // schedule.cluster_m)
    at_once = {1: SM_COUNT, 2: 66, 4: 30}[size]  # clusters an H200 runs at once (ncu's Max Active Clusters)
    rounds = -(-units // at_once)
    assert grid_size(gemm, schedule) == workgroups
    assert -(-units // (workgroups // size)) == rounds and workgroups // size <= at_once


def _ptx(tmp_path, gemm, schedule):
    source = tmp_path / "hopper.mlir"
    source.write_text(program(gemm, schedule))
    dump = tmp_path / "dump"
    done = run_patiently([iree_compile_path(), str(source), "--iree-hal-target-device=cuda",
                          f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "h.vmfb")],
                         capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return next(dump.glob("*.ptx")).read_text()


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(1000, 777, 1000, "f16", "nt"), HopperSchedule(block_n=256, stages=3, group_m=1)),  # odd N: scalar stores
    (Gemm(256, 256, 128, "bf16", "nt"), HopperSchedule(kind="pingpong")),  # two K tiles: LLVM unrolls the producer
    (Gemm(512, 512, 512, "bf16", "nt"), HopperSchedule(block_m=256, block_n=128, stages=4)),
    (Gemm(1000, 776, 448, "bf16", "nt"), HopperSchedule(block_n=256, stages=3, persistent=True, cluster_m=2)),
    (Gemm(1000, 776, 448, "f16", "nt"), HopperSchedule(block_m=64, block_n=128, kind="pingpong", cluster_m=2)),
    (Gemm(1000, 776, 448, "bf16", "nt"), HopperSchedule(block_n=256, stages=3, persistent=True, cluster_m=2,
                                                        cluster_n=2)),
])
def test_the_ptx_shows_every_schedule_choice(tmp_path, gemm, schedule):
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    assert (".target sm_90a" in ptx) and ("st.global.v2.f32" in ptx) == (gemm.n % 2 == 0)
    other = {"stages": replace(schedule, stages=schedule.stages + 1),
             "wgmma shape": replace(schedule, block_n=64),
             "wgmma per K tile": replace(schedule, block_m={128: 256, 256: 128, 64: 128}[schedule.block_m]),
             "cluster": replace(schedule, cluster_m=3 - schedule.cluster_m)}
    for choice, wrong in other.items():
        with pytest.raises(HopperError, match=choice):
            check_ptx(ptx, gemm, wrong)
    # the cluster along N (its size, A's share multicast, releases to the row's workgroup too) on its own
    with pytest.raises(HopperError, match="cluster"):
        check_ptx(ptx, gemm, replace(schedule, cluster_n=3 - schedule.cluster_n))
    if schedule.cluster_n > 1:  # a 2x2 kernel whose releases skip one of the three partners (every third arrival)
        arrivals = list(re.finditer(r"\{ \.reg \.b32 remote; mapa\.shared::cluster\.u32 remote, %r\d+, %r\d+; "
                                    r"mbarrier\.arrive\.shared::cluster\.b64 _, \[remote\]; \}", ptx))
        assert len(arrivals) % 3 == 0 and arrivals
        dropped = ptx
        for match in reversed(arrivals[2::3]):
            dropped = dropped[:match.start()] + dropped[match.end():]
        with pytest.raises(HopperError, match="cluster"):
            check_ptx(dropped, gemm, schedule)
    with pytest.raises(HopperError, match="wgmma shape"):
        check_ptx(ptx, gemm.with_(dtype="bf16" if gemm.dtype == "f16" else "f16"), schedule)


def test_the_encoder_needs_the_cuda_driver():
    spec = tensor_maps(Gemm(256, 256, 256, "bf16", "nt"), HopperSchedule())[0]
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        with pytest.raises(TensorMapError, match="CUDA driver"):
            encode(spec)
        return
    words = encode(spec)  # a GPU machine: 128 bytes with the placeholder address somewhere in them
    assert words.shape == (16,) and words.any()


def test_nn_reads_b_as_stored_in_64_column_boxes_and_wgmma_takes_it_transposed(tmp_path):
    """Layout nn: no dispatch before the kernel; B's map is K rows of N in boxes of 64 columns × block_k rows, the
    producer loads block_n / 64 of them per stage (multicast with a cluster) and wgmma reads B MN-major."""
    gemm, schedule = Gemm(1000, 776, 448, "bf16", "nn"), HopperSchedule(block_n=256, persistent=True, cluster_m=2)
    source = program(gemm, schedule)
    assert "%b: tensor<448x776xbf16>" in source and "linalg.transpose" not in source
    assert tensor_maps(gemm, schedule)[1] == {"operand": "B", "dims": [776, 448], "stride": 776 * 2, "box": [64, 64],
                                              "dtype": "bf16", "swizzle": 128}
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    assert len(re.findall(r"\.entry ", ptx)) == 1  # gemm alone: it builds its own tensor maps
    with pytest.raises(HopperError, match="TMA loads"):  # one B box per stage, not four
        check_ptx(ptx, gemm.with_(layout="nt"), schedule)
    k_major = re.sub(r"(wgmma\.mma_async[^;]*,\s*)1(\s*;)", r"\g<1>0\2", ptx)
    with pytest.raises(HopperError, match="B layout"):
        check_ptx(k_major, gemm, schedule)


@pytest.mark.parametrize("gemm, schedule, words", [
    (Gemm(256, 260, 256, "bf16", "nn"), HopperSchedule(), "N a multiple of 8"),
    (Gemm(256, 256, 256, "bf16", "nn"), HopperSchedule(block_n=96), "multiple of 64"),
    (Gemm(256, 256, 256, "bf16", "nn"), HopperSchedule(block_n=64, cluster_m=2), "multiple of 64"),
])
def test_nn_schedules_whose_b_share_is_not_whole_boxes_are_refused(gemm, schedule, words):
    with pytest.raises(HopperError, match=words):
        program(gemm, schedule)


@pytest.mark.parametrize("schedule, words", [("pingpong:128x128x17x8", "stages must be"), ("split:1x2", "KIND")])
def test_the_build_tool_refuses_bad_schedules_in_one_sentence_and_writes_nothing(tmp_path, schedule, words):
    tool = Path(__file__).resolve().parents[2] / "results" / "h100" / "hopper" / "hopper_gemm.py"
    done = subprocess.run([sys.executable, str(tool), "build", "--shape", "64x64x64", "--schedule", schedule,
                           "--no-default", "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode != 0 and words in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_inspect_reports_each_kernels_hopper_instructions_cluster_and_registers(tmp_path):
    """`hopper_gemm.py inspect`: per built kernel, from its PTX, the wgmma (a peeled first K step and the loop's:
    2 × 4 k16 steps), TMA loads (A's box and B's 64-column boxes, those of B multicast in a cluster), the cluster
    and the register split."""
    tool = Path(__file__).resolve().parents[2] / "results" / "h100" / "hopper" / "hopper_gemm.py"
    out = tmp_path / "h"
    done = subprocess.run([sys.executable, str(tool), "build", "--shape", "512x512x512", "--dtype", "f16", "--layout",
                           "nn", "--schedule", "cooperative-persistent:128x256x3x8x2", "--schedule",
                           "pingpong:64x128x4x8", "--no-default", "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    done = subprocess.run([sys.executable, str(tool), "inspect", str(out), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    cluster, pingpong = json.loads(done.stdout)
    assert cluster["wgmma"] == {"wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16": 8}
    assert (cluster["tma_loads"], cluster["multicast_loads"], cluster["cluster"]) == (3, 2, [2, 1, 1])
    assert cluster["remote_arrives"] == 4 and cluster["setmaxnreg"] == [232, 40] and cluster["threads"] == 384
    assert pingpong["wgmma"] == {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16": 8}
    assert (pingpong["tma_loads"], pingpong["multicast_loads"], pingpong["cluster"]) == (3, 0, [1, 1, 1])
    assert pingpong["remote_arrives"] == 0
    for row in (cluster, pingpong):  # ptxas where this machine has it; SASS only where cuobjdump is (GPU machines)
        assert row["ptxas"] == ({"ok": True, "registers": 168, "spill_bytes": 0, "notes": []} if shutil.which("ptxas")
                                else None)
        assert row["sass"] == ({"hgmma": 8, "registers": 168} if shutil.which("cuobjdump") else None)


# cuTensorMapEncodeTiled's parameters in cuda.h's order (CUDA 12): the oracle for the call's positional arguments.
ENCODE_PARAMETERS = ("tensorMap", "tensorDataType", "tensorRank", "globalAddress", "globalDim", "globalStrides",
                     "boxDim", "elementStrides", "interleave", "swizzle", "l2Promotion", "oobFill")
# cuda.h's enums: CU_TENSOR_MAP_INTERLEAVE_NONE 0; CU_TENSOR_MAP_SWIZZLE_NONE/32B/64B/128B 0..3;
# CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3; CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0; CU_TENSOR_MAP_DATA_TYPE_FLOAT16 6,
# BFLOAT16 9.
CUDA_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}


@pytest.mark.parametrize("swizzle", [128, 64, 32])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_the_encoder_passes_each_value_as_the_parameter_cuda_h_names(monkeypatch, swizzle, dtype):
    """A stand-in driver records the call; each positional argument is read back by cuda.h's parameter name."""
    import pipelines.tensormap as tensormap

    calls = []

    class Driver:
        @staticmethod
        def cuTensorMapEncodeTiled(*args):
            calls.append(dict(zip(ENCODE_PARAMETERS, args)))
            return 0

    monkeypatch.setattr(tensormap, "_driver", lambda: Driver)
    spec = dict(tensor_maps(Gemm(256, 512, 192, dtype, "nt"), HopperSchedule())[0], swizzle=swizzle)
    tensormap.encode(spec)
    (call,) = calls
    assert len(call) == len(ENCODE_PARAMETERS)
    assert call["interleave"].value == 0 and call["swizzle"].value == CUDA_SWIZZLE[swizzle]
    assert call["l2Promotion"].value == 3 and call["oobFill"].value == 0
    assert call["tensorDataType"].value == {"f16": 6, "bf16": 9}[dtype]
    assert call["tensorRank"].value == len(spec["dims"]) and call["globalAddress"].value == 1 << 32
    assert list(call["globalDim"]) == list(spec["dims"]) and list(call["boxDim"]) == list(spec["box"])
    assert list(call["globalStrides"]) == [spec["stride"]] and list(call["elementStrides"]) == [1] * len(spec["dims"])


def test_check_ptx_refuses_tensor_maps_written_or_fenced_otherwise(tmp_path):
    """The maps' element type and swizzle immediates, one release for both and an acquire for each, in the PTX."""
    gemm, schedule = Gemm(256, 256, 128, "bf16", "nt"), HopperSchedule(block_n=128)
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    acquire = re.search(r"\tfence\.proxy\.tensormap::generic\.acquire\.gpu [^\n]*\n", ptx).group(0)
    release = "\tfence.proxy.tensormap::generic.release.gpu;\n"
    tampered = {
        "one acquire for two maps": ptx.replace(acquire, "", 1),
        "a second release": ptx.replace(release, release * 2, 1),
        "CUDA's bf16 code (9), not PTX's (10)": re.sub(r"(elemtype\.global\.b1024\.b32 \[%rd\d+\]), 10;", r"\1, 9;",
                                                       ptx, count=1),
        "64-byte swizzle": re.sub(r"(swizzle_mode\.global\.b1024\.b32 \[%rd\d+\]), 3;", r"\1, 2;", ptx, count=1),
    }
    for what, text in tampered.items():
        assert text != ptx, what
        with pytest.raises(HopperError, match="tensor maps"):
            check_ptx(text, gemm, schedule)


def test_the_program_returns_its_maps_when_asked_and_declares_who_writes_what():
    gemm, schedule = Gemm(1000, 776, 448, "bf16", "nn"), HopperSchedule(block_n=256, persistent=True, cluster_m=2)
    words = grid_size(gemm, schedule) * 32 + 16  # two 128-byte maps per workgroup, 128 bytes to align the start
    plain, both = program(gemm, schedule), program(gemm, schedule, maps_result=True)
    c, maps = "tensor<1000x776xf32>", f"tensor<{words}xi64>"
    assert re.search(rf"-> \({c}\) {{\n    %c, %c_maps = flow\.dispatch @hopper::@gemm\(%a, %b\) : "
                     rf".* -> \({c}, {maps}\)\n    return %c : {c}", plain)
    assert re.search(rf"-> \({c}, {maps}\) {{\n.*\n    return %c, %c_maps : {c}, {maps}", both)
    # A and B read only; C and the maps written, in the layout and in the kernel's bindings alike
    ro, rw = "#hal.pipeline.binding<storage_buffer, ReadOnly>", "#hal.pipeline.binding<storage_buffer>"
    assert f"#hal.pipeline.layout<bindings = [{ro}, {ro}, {rw}, {rw}]>" in plain
    flags = dict(re.findall(r"binding\((\d)\) alignment\(64\) offset\(%\w+\)( flags\(ReadOnly\))?", plain))
    assert flags == {"0": " flags(ReadOnly)", "1": " flags(ReadOnly)", "2": "", "3": ""}
    assert re.search(rf"binding\(3\)[^\n]*memref<{words}xi64", plain)


def test_a_cluster_kernel_of_one_k_tile_passes_its_check(tmp_path):
    """K within one tile leaves the K loop empty: LLVM drops the loop's release site, the one after it stays (the
    check refused such kernels until 2026-11-28: bench's 384x1001x64 row)."""
    for k in (64, 128):
        gemm = Gemm(384, 1008, k, "bf16", "nt", epilogue=Epilogue("truncf"))
        (tmp_path / str(k)).mkdir()
        ptx = _ptx(tmp_path / str(k), gemm, DEFAULT)
        check_ptx(ptx, gemm, DEFAULT)
        remote = re.findall(r"mapa\.shared::cluster\.u32 remote, %r\d+, %r\d+; mbarrier\.arrive[^\n]*", ptx)
        assert len(remote) == (1 if k == 64 else 2) * DEFAULT.cluster_m
        if k == 128:  # two K tiles: a release site short (its arrivals at every workgroup of the cluster) is refused
            short = ptx
            for line in remote[:DEFAULT.cluster_m]:
                short = short.replace(line, "", 1)
            with pytest.raises(HopperError, match="cluster"):
                check_ptx(short, gemm, DEFAULT)


@pytest.mark.parametrize("m, n, staged", [(512, 1024, True), (300, 520, True), (384, 1001, False),
                                           (512, 1004, False)])
def test_a_16_bit_c_goes_out_in_16_byte_rows_through_each_warps_staging_area(tmp_path, m, n, staged):
    """stmatrix of four 8x8 blocks and one 16-byte store per four 8-column blocks of a fragment row (m_blocks × 2 ×
    block_n / 32 of each), the pairs' 4-byte stores only at edge tiles; N off 8 keeps the pairs (no 16-byte rows)."""
    gemm = Gemm(m, n, 128, "f16", "nn" if n % 8 == 0 else "nt", epilogue=Epilogue("truncf"))
    assert stages_stores(gemm, DEFAULT) == staged
    ptx = _ptx(tmp_path, gemm, DEFAULT)
    check_ptx(ptx, gemm, DEFAULT)
    kernel = ptx_kernel(ptx, "gemm")
    count = len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", kernel))
    expected = DEFAULT.m_blocks * 2 * DEFAULT.block_n // 32 if staged else 0
    assert count == len(re.findall(r"st\.global\.v4\.b32", kernel)) == expected
    edges = m % DEFAULT.block_m != 0 or n % DEFAULT.block_n != 0
    assert ("st.global.b32" in kernel) == (staged and edges) or not staged  # odd N: single 2-byte stores
    assert ("st.global.b16" in kernel) == (n % 2 == 1)
    # the shared memory holds the staging areas after the barriers, 128-byte aligned
    assert f"memref<{DEFAULT.shared_bytes(staged)}xi8" in program(gemm, DEFAULT)
    assert DEFAULT.staging_offset() % 128 == 0 and DEFAULT.staging_offset() >= DEFAULT.shared_bytes() - 1024
    if not staged:  # a stray 16-byte store where the kernel stores pairs or elements is refused
        with pytest.raises(HopperError, match="C's type"):
            check_ptx(ptx.replace("\tret;", "\tst.global.v4.b32 [%rd1], {%r1, %r1, %r1, %r1};\n\tret;", 1), gemm,
                      DEFAULT)
    if staged and edges:  # edge tiles without their pair stores are refused
        with pytest.raises(HopperError, match="C's type"):
            check_ptx(re.sub(r"\tst\.global\.b32 [^\n]*\n", "", ptx), gemm, DEFAULT)
    if staged:  # a kernel whose 16-byte rows are gone, or stored as pairs again, is refused
        for text in (ptx.replace("st.global.v4.b32", "st.global.v2.b32", 1),
                     ptx.replace("stmatrix.sync.aligned.m8n8.x4", "stmatrix.sync.aligned.m8n8.x2", 1)):
            with pytest.raises(HopperError, match="C's type"):
                check_ptx(text, gemm, DEFAULT)


def test_a_fused_consumer_is_refused_with_k_in_slices():
    """The slices' partial products are summed after the kernel: nothing can run on C in its store."""
    tail = hopper_module.Elementwise((("arith.negf", ("in",), "f16"),))
    gemm = Gemm(64, 256, 256, "f16", "nt", epilogue=Epilogue("truncf"))
    with pytest.raises(HopperError, match="not split_k slices"):
        hopper_module.executable(gemm, HopperSchedule(block_n=256, persistent=True, split_k=2), "h", tail=tail)
    assert "arith.negf" in hopper_module.executable(gemm, HopperSchedule(block_n=256, persistent=True), "h", tail=tail)


def test_a_schedule_without_room_for_the_staging_areas_keeps_the_pairs(tmp_path):
    """128x128 in 7 stages fits 227 KiB without the warps' staging areas and not with them: pairs, and it compiles."""
    schedule = HopperSchedule(block_m=128, block_n=128, stages=7)
    gemm = Gemm(256, 256, 128, "f16", "nt", epilogue=Epilogue("truncf"))
    assert schedule.shared_bytes() <= hopper_module.SHARED_BYTES < schedule.shared_bytes(staged=True)
    assert not stages_stores(gemm, schedule)
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    assert "stmatrix" not in ptx and f"memref<{schedule.shared_bytes()}xi8" in program(gemm, schedule)
    # the staging areas: one 512-byte area per consumer warp, after the barriers (not by shared_bytes' own sum)
    a, b = DEFAULT.stage_bytes()
    assert DEFAULT.staging_offset() >= DEFAULT.stages * (a + b) + (2 * DEFAULT.stages + 2) * 8
    assert DEFAULT.shared_bytes(staged=True) - 1024 - DEFAULT.staging_offset() == 8 * 512


# ---- K's slices summed in the cluster (split_sum "cluster", issue 33)

def _summed(**changes) -> HopperSchedule:
    fields = dict(block_m=64, block_n=128, consumers=1, group_m=1, stages=4, split_k=4, split_sum="cluster")
    fields.update(changes)
    return HopperSchedule(**fields)


@pytest.mark.parametrize("schedule, words", [
    (_summed(split_sum="atomics"), "split_sum must be one of dispatch, cluster"),
    (_summed(split_k=16), "2 to 8 slices"),
    (_summed(block_n=128, cluster_m=2), "no cluster along M"),
    (_summed(persistent=True), "one tile per workgroup"),
    (_summed(block_m=128, consumers=2, kind="pingpong"), "not ping-pong"),
    (_summed(block_n=80, split_k=8), "multiple of 4 x split_k"),  # 10 columns a workgroup: not whole groups of 4
    (_summed(block_m=128, consumers=2, block_n=128, stages=2, split_k=2), "over the stages, which hold only 65536"),
])
def test_slices_summed_in_the_cluster_that_cannot_be_built_are_one_sentence(schedule, words):
    with pytest.raises(HopperError, match=words):
        schedule.check()


def test_slices_summed_in_the_cluster_fit_on_both_sides_of_each_bound():
    _summed(split_k=8).check()  # 8 slices: the largest portable cluster
    _summed(block_n=64, split_k=8).check()  # 8 columns a workgroup
    _summed(block_n=96, split_k=8).check()  # 12: three groups of 4
    _summed(block_m=128, consumers=2, block_n=128, stages=3, split_k=2).check()  # 69632 bytes over 3 stages of 32 KiB
    assert _summed(block_m=128, consumers=2, block_n=128, stages=3, split_k=2).sum_bytes() == 128 * 136 * 4
    assert HopperSchedule(split_k=4).cluster_size == 1 and HopperSchedule(cluster_m=2, split_k=4).cluster_size == 2
    assert _summed().cluster_size == 4 and _summed(split_k=1).cluster_size == 1
    assert not _summed(split_k=1).sums_in_cluster


def test_a_schedule_string_sums_the_slices_in_the_cluster_with_a_c():
    schedule = hopper_module.parse_schedule("hopper-cooperative:64x256x5x1x1x8c")
    assert (schedule.block_m, schedule.consumers, schedule.split_k, schedule.split_sum, schedule.persistent) == \
        (64, 1, 8, "cluster", False)
    assert "K in 8 slices summed in the cluster" in schedule.describe()
    assert hopper_module.parse_schedule("hopper-cooperative:64x256x5x1x1x8").split_sum == "dispatch"
    for text, words in (("hopper-cooperative-persistent:64x256x5x1x1x4c", "one tile per workgroup"),
                        ("hopper-cooperative:64x256x5x1x1x1c", "needs 2 to 8 slices"),
                        ("hopper-cooperative:64x256x5x1x4c", r"SPLIT_K\[c\]"),
                        ("hopper-cooperative:64x256x5x1x1c", "is not"), ("hopper-cooperative:64x256x5x1x2x4c",
                                                                          "no cluster along M")):
        with pytest.raises(HopperError, match=words):
            hopper_module.parse_schedule(text)


def test_slices_summed_in_the_cluster_are_one_dispatch_of_c_in_its_type():
    """The program: the one Hopper dispatch returns C (M x N in the output type), no reduction after it; the kernel
    is a cluster of split_k workgroups, one per (tile, slice): tiles x slices of them."""
    gemm = Gemm(100, 520, 4096, "bf16", "nn", epilogue=Epilogue("truncf"))
    schedule = _summed(block_m=128, consumers=2, stages=4, split_k=2)
    text = program(gemm, schedule)
    assert "-> (tensor<100x520xbf16>, tensor<" in text and "linalg.generic" not in text and "reduction" not in text
    assert "nvvm.cluster_dim = array<i32: 2, 1, 1>" in text
    assert grid_size(gemm, schedule) == 5 * 1 * 2  # 5 block columns of 128, one block row, 2 slices
    assert hopper_module.kernel_problem(gemm, schedule) == gemm and hopper_module.partial_rows(gemm, schedule) == 100
    dispatched = _summed(block_m=128, consumers=2, stages=4, split_k=2, split_sum="dispatch", persistent=True,
                         group_m=16)
    assert hopper_module.partial_rows(gemm, dispatched) == 200 and "reduction" in program(gemm, dispatched)


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(100, 130, 1024, "f16", "nt"), _summed(block_m=128, consumers=2, stages=3, split_k=2)),  # f32, N % 4
    (Gemm(33, 4096, 2048, "bf16", "nn", epilogue=Epilogue("truncf")), _summed(block_n=256, stages=5, split_k=8)),
    # N below 4: LLVM drops the sums of the columns past N (the review's case: 10 additions, not a multiple of 4)
    (Gemm(100, 2, 4096, "f16", "nt"), _summed(block_m=128, consumers=2, stages=7, split_k=2)),
    (Gemm(32, 3, 4096, "bf16", "nt", epilogue=Epilogue("truncf")), _summed(block_n=256, stages=5, split_k=4)),
    (Gemm(32, 1, 4096, "f16", "nt"), _summed(block_n=128, stages=7, split_k=2)),
])
def test_the_ptx_shows_the_slices_summed_in_the_cluster(tmp_path, gemm, schedule):
    ptx = _ptx(tmp_path, gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    kernel = ptx_kernel(ptx, "gemm")
    assert f".reqnctapercluster {schedule.split_k}, 1, 1" in kernel
    assert len(re.findall(r"ld\.shared::cluster\.v4\.f32", kernel)) % schedule.split_k == 0
    assert ("st.global.v4.f32" in kernel) == (gemm.out_dtype == "f32" and gemm.n % 4 == 0)
    # the same PTX is not the slices summed after, nor another number of slices, nor K whole
    for wrong, choice in ((replace(schedule, split_sum="dispatch", persistent=True), "cluster|C's type"),
                          (replace(schedule, split_k=schedule.split_k // 2), "cluster"),
                          (replace(schedule, split_k=1), "cluster")):
        with pytest.raises(HopperError, match=choice):
            check_ptx(ptx, gemm, wrong)


def test_check_ptx_refuses_a_kernel_without_what_the_cluster_sum_needs(tmp_path):
    """The checks refuse PTX the generator does not write: remote arrivals without a cluster along M, a cluster sum
    with one cluster barrier, a 16-bit C rounded otherwise than to nearest (blind probe 13's survivors)."""
    plain_gemm, plain = Gemm(256, 256, 128, "f16", "nt"), HopperSchedule(block_n=128)
    (tmp_path / "plain").mkdir()
    (tmp_path / "summed").mkdir()
    ptx = _ptx(tmp_path / "plain", plain_gemm, plain)
    check_ptx(ptx, plain_gemm, plain)
    remote = "mapa.shared::cluster.u32 remote, %r1, %r2; mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
    at = ptx.index("wgmma.fence.sync.aligned")
    with pytest.raises(HopperError, match=r"its cluster \("):
        check_ptx(ptx[:at] + remote + ptx[at:], plain_gemm, plain)
    gemm, schedule = Gemm(33, 4096, 2048, "bf16", "nn", epilogue=Epilogue("truncf")), _summed(block_n=256, stages=5,
                                                                                              split_k=8)
    ptx = _ptx(tmp_path / "summed", gemm, schedule)
    check_ptx(ptx, gemm, schedule)
    first = ptx.index("barrier.cluster.arrive")
    one_barrier = ptx[:first + 1] + ptx[first + 1:].replace("barrier.cluster.arrive", "// no arrive")
    with pytest.raises(HopperError, match="slices summed in the cluster"):
        check_ptx(one_barrier, gemm, schedule)
    with pytest.raises(HopperError, match="C's type"):
        check_ptx(ptx.replace("cvt.rn.bf16", "cvt.rz.bf16"), gemm, schedule)
    # the sum's barriers: no waits, arrives without release, or the publishing pair after the reads (the review's)
    for broken in (ptx.replace("barrier.cluster.wait;", "// no wait"),
                   ptx.replace("barrier.cluster.arrive;", "barrier.cluster.arrive.relaxed;")):
        with pytest.raises(HopperError, match="slices summed in the cluster"):
            check_ptx(broken, gemm, schedule)
    pair = "barrier.cluster.arrive;\n\tbarrier.cluster.wait;"
    assert ptx.count(pair) == 3
    first_load = ptx.index("ld.shared::cluster.v4.f32")
    publish = ptx.index(pair, ptx.rindex("st.shared.v2.f32"))
    assert publish < first_load
    moved = ptx[:publish] + ptx[publish + len(pair):first_load] + pair + ptx[first_load:]  # still before the reads
    check_ptx(moved, gemm, schedule)
    late = ptx.rindex("ld.shared::cluster.v4.f32")
    after = ptx.index(";", late) + 1
    moved = ptx[:publish] + ptx[publish + len(pair):after] + "\n\t" + pair + ptx[after:]  # after the last read
    with pytest.raises(HopperError, match="slices summed in the cluster"):
        check_ptx(moved, gemm, schedule)
