"""C stored by TMA (`HopperSchedule.tma_store`): where each warp's bulk tensor copies write and what they read.

Oracles, from first principles rather than from the kernel generator:
- the emitted kernel's integer arithmetic evaluated for every workgroup, consumer warp, lane and tile (a small
  interpreter of its arith ops), giving each bulk copy's box coordinates, the shared area it reads and the address
  each lane gives stmatrix;
- the boxes must tile every product's C exactly once (32 columns x 8 rows each, rows shifted by p·M in a batch);
- TMA's 64-byte swizzle (16-byte chunk index XOR address bits 7-8, CUDA's CU_TENSOR_MAP_SWIZZLE_64B): row l % 8 of
  8x8 matrix l / 8 must be where the box's element (row l % 8, column 8 (l / 8)) lies once swizzled;
- the areas: four 512-byte areas per consumer warp in a ring, disjoint, after the stages and barriers, inside the
  shared memory the kernel allocates, the ring's start 1024-byte aligned."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pipelines.routes.hopper import STORE_TILES, fitted, store_rule
from transforms import hopper
from transforms.hopper import HopperSchedule, grid_size, program, tensor_maps
from transforms.problem import Epilogue, Gemm

from kernel_arith import POINTERS, SMEM, compiled, evaluate  # noqa: E402  (tests/unit/kernel_arith.py)

TRUNCF = Epilogue("truncf")


@pytest.fixture(autouse=True, params=[8, 16], ids=["rows8", "rows16"])
def box_rows(request, monkeypatch):
    """Every test with C's boxes of 8 rows (as shipped) and of 16 (`hopper.STORE_BOX`: two halves a copy)."""
    monkeypatch.setattr(hopper, "STORE_BOX", (hopper.STORE_BOX[0], request.param))
    return request.param
def kernel(gemm: Gemm, s: HopperSchedule) -> str:
    text = program(gemm, s)
    return text[text.index("func.func @gemm()"):text.index("func.func @main")]


ASM = re.compile(r'llvm\.inline_asm has_side_effects asm_dialect = att "([^"]*)", "[^"]*" ?([^:]*) :')
COPY = re.compile(r"@p cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta\.bulk_group "
                  r"\[\$1, \{([^}]*)\}\], \[\$(\d+)\];")


def copy_sites(text: str) -> list[tuple[list[str], int]]:
    """Each 8-row half of each bulk copy of C in the kernel's text, in order, as ([lane, the stmatrix address that
    wrote it, the four words written, C's map, the copy's coordinates..., the area the copy reads] (SSA names), the
    half): a batch's stmatrix writes, in order, pair with the copies of the group that follows them, STORE_BOX's
    rows / 8 writes a copy; every copy asm is preceded, since that batch's first write, by one proxy fence."""
    halves = hopper.STORE_BOX[1] // 8
    sites, written, fenced = [], [], False
    for m in ASM.finditer(text):
        body, operands = m.group(1), [v.strip() for v in m.group(2).split(",") if v.strip()]
        if body.startswith("stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0]"):
            written.append(operands)
            fenced = False
        elif body == "fence.proxy.async.shared::cta; bar.warp.sync -1;":
            fenced = True
        elif COPY.search(body):
            copies = COPY.findall(body)
            assert fenced and len(copies) * halves == len(written), "a group's copies follow its writes, one fence"
            for k, (places, area) in enumerate(copies):
                coords = [operands[int(p.strip()[1:])] for p in places.split(",")]
                for half in range(halves):
                    address, *words = written[k * halves + half]
                    sites.append(([operands[0], address, *words, operands[1], *coords, operands[int(area)]], half))
            written = []
    assert not written, "every block written is copied"
    return sites


def stores(gemm: Gemm, s: HopperSchedule, lanes: range = range(1), workgroups: range | None = None) -> list[dict]:
    """Every 8-row half of each bulk copy of C that `lanes` of each consumer warp take part in, per workgroup (all,
    or `workgroups`) and tile: its 32x8 block (the copy's coordinates, the row 8 on for a second half), the 512-byte
    area it is in (the copy's, 512 bytes on for a second half), the address the lane gives stmatrix, the warp and
    its place in the tile."""
    text = kernel(gemm, s)
    ops = compiled(text)
    loop = re.search(r"scf\.for %ci = %\w+ to (%\w+) step", text).group(1)
    sites = copy_sites(text)
    assert sites
    y_at = 2 if hopper.head_store(gemm, s) == "join" else 1  # the row among the copy's coordinates
    found = []
    for bid in workgroups or range(grid_size(gemm, s)):
        for g in range(s.consumers):
            for warp in range(4):
                for lane in lanes:
                    tid = hopper.WARPGROUP * (1 + g) + 32 * warp + lane
                    mine = evaluate(ops, {"bid": bid, "tid": tid})[loop]
                    first, step = (g, 2) if s.kind == "pingpong" else (0, 1)
                    for i in range(first, mine, step):
                        v = evaluate(ops, {"bid": bid, "tid": tid, "%ci": i})
                        for n, (site, half) in enumerate(sites):
                            values = [v.get(o) for o in site]  # lane, address, 4 words, map, coords, area
                            lane_v, at, coords, buf = values[0], values[1], values[7:-1], values[-1]
                            assert lane_v == lane
                            coords[y_at] += 8 * half
                            buf += hopper.STAGING_BYTES * half
                            found.append({"bid": bid, "tile": i, "warp": 4 * g + warp, "lane": lane, "n": n,
                                          "box": tuple(coords), "buf": buf, "at": at})
    return found


def swizzled(row: int, col: int) -> int:
    """Byte offset of element (row, col) of a 32-column x 8-row box of 2-byte elements in shared memory, TMA's
    64-byte swizzle: the 16-byte chunk index XOR address bits 7-8."""
    linear = row * 64 + col * 2
    return linear ^ (((linear >> 7) & 3) << 4)


CASES = [
    (Gemm(512, 1024, 128, "f16", "nt", epilogue=TRUNCF), hopper.DEFAULT),
    # ping-pong: 272 tiles of 128x128 on 132 workgroups, so that both consumers store (each takes every other tile)
    (Gemm(2048, 2176, 128, "bf16", "nn", epilogue=TRUNCF), hopper.named_schedule("hopper-pingpong")),
    (Gemm(256, 256, 128, "f16", "nn", batch=3, epilogue=TRUNCF), hopper.DEFAULT),
    (Gemm(128, 512, 128, "bf16", "nt", epilogue=TRUNCF),
     HopperSchedule(block_m=64, block_n=256, consumers=1, persistent=True, stages=5)),
]


@pytest.mark.parametrize("gemm, schedule", CASES)
def test_the_bulk_copies_tile_every_products_c_once(gemm, schedule):
    s = replace(schedule, tma_store=True)
    hopper.check_problem(gemm, s)
    got = stores(gemm, s)
    boxes = sorted((r["bid"], r["tile"], r["warp"], r["n"], r["box"]) for r in got)
    # every lane of a warp names lane 0's box for each copy (lane 0 issues it): on the first workgroup
    lanes = stores(gemm, s, range(32), range(1))
    assert {(r["tile"], r["warp"], r["n"], r["box"]) for r in lanes} == {b[1:] for b in boxes if b[0] == 0}
    want = sorted((x, p * gemm.m + y) for p in range(gemm.batch or 1)
                  for y in range(0, gemm.m, 8) for x in range(0, gemm.n, 32))
    assert sorted(b[-1] for b in boxes) == want  # each 32x8 block of C once, none outside


@pytest.mark.parametrize("gemm, schedule", CASES[:2])
def test_each_lane_writes_its_rows_where_the_swizzled_box_has_them_and_the_areas_ring(gemm, schedule):
    s = replace(schedule, tma_store=True)
    got = stores(gemm, s, range(32), range(2))
    base = -(-SMEM // 1024) * 1024  # the kernel's 1024-aligned base
    staging = base + s.staging_offset()
    per_tile = s.m_blocks * 2 * (s.block_n // 32)
    areas = {}
    for r in got:
        lane = r["lane"]
        assert r["at"] - r["buf"] == swizzled(lane % 8, 8 * (lane // 8))
        area = r["buf"] - (r["n"] % hopper.STORE_RING) * hopper.STAGING_BYTES
        areas.setdefault(r["warp"], set()).add(area)
        assert r["n"] < per_tile
    # one ring per warp: its own four areas, after the stages and barriers, inside the allocation
    starts = sorted(a for warp_areas in areas.values() for a in warp_areas)
    assert all(len(a) == 1 for a in areas.values()) and len(starts) == 4 * s.consumers
    ring = hopper.STORE_RING * hopper.STAGING_BYTES
    assert starts == [staging + ring * w for w in range(4 * s.consumers)]
    a_bytes, b_bytes = s.stage_bytes()
    assert staging % 1024 == 0 and staging - base >= s.stages * (a_bytes + b_bytes) + (2 * s.stages + 2) * 8
    assert starts[-1] + ring <= SMEM + s.shared_bytes(staged=True)


def test_the_c_map_is_cs_rows_in_boxes_of_32_columns_by_8_or_16_rows(box_rows):
    gemm = Gemm(300, 520, 128, "bf16", "nn", batch=2, epilogue=TRUNCF)
    s = replace(hopper.DEFAULT, tma_store=True)
    *_, c = tensor_maps(gemm, s)
    assert c == {"operand": "C", "dims": [520, 600], "stride": 1040, "box": [32, box_rows], "dtype": "bf16",
                 "swizzle": 64}
    assert len(tensor_maps(gemm, hopper.DEFAULT)) == 2  # staged stores: no C map
    # the scratch: three 128-byte maps a workgroup, and 128 bytes to align its start
    assert hopper.maps_words(gemm, s) == grid_size(gemm, s) * 3 * 16 + 16
    assert hopper.maps_words(gemm, hopper.DEFAULT) == grid_size(gemm, hopper.DEFAULT) * 2 * 16 + 16


def test_an_f32_c_or_an_n_off_8_never_stores_by_tma():
    s = replace(hopper.DEFAULT, tma_store=True)
    assert not hopper.stores_by_tma(Gemm(4096, 4096, 128, "f16", "nn"), s)  # f32 C: no staging
    assert not hopper.stores_by_tma(Gemm(4096, 4100, 128, "f16", "nt", epilogue=TRUNCF), s)
    assert "cp.async.bulk.tensor.2d.global" not in program(Gemm(4096, 4096, 128, "f16", "nn"), s)


@pytest.mark.parametrize("m, n, batch, tma", [
    (128 * 12, 256 * 11, None, True),   # 132 tiles of 128x256: one per SM
    (128 * 131, 256, None, False),      # 131
    (128 * 6, 256 * 11, 2, True),       # 66 a product, 132 in the batch
    (128 * 6, 256 * 11, None, False),   # 66
])
def test_the_store_rule_turns_tma_on_from_one_tile_per_sm(m, n, batch, tma):
    gemm = Gemm(m, n, 128, "f16", "nn", batch=batch, epilogue=TRUNCF)
    assert STORE_TILES == hopper.SM_COUNT == 132
    assert store_rule(gemm, hopper.DEFAULT).tma_store is tma
    assert fitted(gemm).tma_store is tma
    assert store_rule(gemm.with_(epilogue=Epilogue("none")), hopper.DEFAULT).tma_store is False  # f32 C


def _ptx_file(folder: Path, text: str) -> Path:
    """The PTX iree-compile writes for the program `text`, compiled in `folder` (made here)."""
    from pipelines.compiler import iree_compile_path, run_patiently

    folder.mkdir()
    (folder / "p.mlir").write_text(text)
    done = run_patiently([iree_compile_path(), str(folder / "p.mlir"), "--iree-hal-target-device=cuda",
                          f"--iree-hal-dump-executable-files-to={folder / 'dump'}", "-o", str(folder / "p.vmfb")],
                         capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return next((folder / "dump").glob("*.ptx"))


def _assembles(ptx_file: Path) -> None:
    """ptxas takes the kernel for sm_90a, where this machine has it (the GPU machines load the PTX)."""
    if shutil.which("ptxas"):
        done = subprocess.run(["ptxas", "-arch=sm_90a", str(ptx_file), "-o", str(ptx_file.with_suffix(".cubin"))],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]


def test_the_ptx_shows_the_bulk_stores_and_check_ptx_reads_them(tmp_path):
    gemm = Gemm(1000, 776, 448, "bf16", "nt", epilogue=TRUNCF)  # edge tiles: their guarded stores stay
    tma, staged = replace(hopper.DEFAULT, tma_store=True), hopper.DEFAULT
    files = {name: _ptx_file(tmp_path / name, program(gemm, s)) for name, s in (("tma", tma), ("staged", staged))}
    ptx = {name: f.read_text() for name, f in files.items()}
    hopper.check_ptx(ptx["tma"], gemm, tma)
    hopper.check_ptx(ptx["staged"], gemm, staged)
    body = hopper.ptx_kernel(ptx["tma"], "gemm")
    copies = re.findall(r"@p cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group", body)
    # a copy per 32-column block of each fragment row, or of both a warp's rows with 16-row boxes
    assert len(copies) * (hopper.STORE_BOX[1] // 8) == tma.m_blocks * 2 * tma.block_n // 32
    assert "st.global.v4.b32" not in body
    assert "st.global.b32" in body  # the edge tiles' pairs
    assert body.count("tensormap.replace.tile.global_address") == 3
    with pytest.raises(hopper.HopperError, match="C's type"):  # one block's copy gone
        hopper.check_ptx(ptx["tma"].replace(copies[0], "mov.u32 %r0, %r0", 1), gemm, tma)
    with pytest.raises(hopper.HopperError):  # the schedules swapped: each kernel's PTX is its own
        hopper.check_ptx(ptx["tma"], gemm, staged)
    with pytest.raises(hopper.HopperError):
        hopper.check_ptx(ptx["staged"], gemm, tma)
    # a bulk store in the staged kernel, or a lane's 16-byte store in the TMA one, is refused
    staged_body = hopper.ptx_kernel(ptx["staged"], "gemm")
    stray = staged_body.replace("stmatrix.sync.aligned",
                                copies[0] + " [%rd1, {%r1, %r1}], [%r1];\n\tstmatrix.sync.aligned", 1)
    with pytest.raises(hopper.HopperError, match="C's type"):
        hopper.check_ptx(ptx["staged"].replace(staged_body, stray), gemm, staged)
    with pytest.raises(hopper.HopperError, match="C's type"):
        lane_store = "st.global.v4.b32 [%rd1], {%r1, %r1, %r1, %r1};\n\t"
        hopper.check_ptx(ptx["tma"].replace(copies[0], lane_store + copies[0], 1), gemm, tma)
    acquire = "@p fence.proxy.tensormap::generic.acquire.gpu"  # the consumers' acquire of C's map
    assert body.count(acquire) == 1
    with pytest.raises(hopper.HopperError, match="tensor maps"):
        hopper.check_ptx(ptx["tma"].replace(acquire, "mov.u32 %r0, %r0;", 1), gemm, tma)
    _assembles(files["tma"])


# ---- C stored in attention's head layout (`store_heads`): split (one product's N as H heads, H×M×w) and join (a
# batch of H products side by side, M×H·N)

HEADS = [
    (Gemm(512, 1024, 256, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, store_heads=8)),  # w = 128
    (Gemm(256, 512, 128, "bf16", "nt", epilogue=TRUNCF), replace(hopper.DEFAULT, store_heads=16)),  # w = 32
    (Gemm(256, 128, 256, "f16", "nn", batch=4, epilogue=TRUNCF), replace(hopper.DEFAULT, block_n=128, store_heads=4)),
    (Gemm(256, 64, 128, "bf16", "nn", batch=3, epilogue=TRUNCF),
     hopper.HopperSchedule(block_m=128, block_n=64, persistent=True, store_heads=3)),
]


def head_offset(gemm: Gemm, heads: int, coords: tuple) -> int:
    """Element offset of a box's origin in C's memory from its coordinates, innermost first: split, H×M×w as
    (column of the head, row, head); join, M×H×N as (column, head, row)."""
    if gemm.batched:
        col, head, row = coords
        return (row * heads + head) * gemm.n + col
    width = gemm.n // heads
    col, row, head = coords
    return (head * gemm.m + row) * width + col


def wanted_offset(gemm: Gemm, heads: int, x: int, y: int) -> int:
    """Where the head layout puts C's element at (row y, column x) of the stacked C (a batch's rows p·M + r): split,
    head x / w's M×w matrix; join, row r of M×H·N with product p's columns from p·N."""
    if gemm.batched:
        p, r = divmod(y, gemm.m)
        return r * heads * gemm.n + p * gemm.n + x
    width = gemm.n // heads
    return (x // width) * gemm.m * width + y * width + x % width


@pytest.mark.parametrize("gemm, schedule", HEADS)
def test_in_heads_each_block_goes_where_the_head_layout_puts_it(gemm, schedule):
    heads = schedule.store_heads
    s = replace(schedule, tma_store=True)
    hopper.check_problem(gemm, s)
    plain = {(r["bid"], r["tile"], r["warp"], r["n"]): r["box"] for r in stores(gemm, replace(s, store_heads=0))}
    got = {(r["bid"], r["tile"], r["warp"], r["n"]): r["box"] for r in stores(gemm, s)}
    assert got.keys() == plain.keys() and all(len(b) == 3 for b in got.values())
    for key, (x, y) in plain.items():  # the same block of C (the plain stores tile C once: above), its new place
        assert head_offset(gemm, heads, got[key]) == wanted_offset(gemm, heads, x, y), key
    # the whole of C's memory, each 32-column block of a row's 8 rows once
    starts = sorted(head_offset(gemm, heads, box) for box in got.values())
    assert len(set(starts)) == len(starts) == (gemm.batch or 1) * gemm.m * gemm.n // 256


def test_the_head_maps_are_three_dimensional_over_cs_memory(box_rows):
    (split_gemm, split), (join_gemm, join) = HEADS[0], HEADS[2]
    *_, c = tensor_maps(split_gemm, replace(split, tma_store=True))
    assert (c["dims"], c["strides"], c["box"]) == ([128, 512, 8], [256, 512 * 128 * 2], [32, box_rows, 1])
    *_, c = tensor_maps(join_gemm, replace(join, tma_store=True))
    assert (c["dims"], c["strides"], c["box"]) == ([128, 4, 256], [256, 4 * 128 * 2], [32, 1, box_rows])
    assert hopper.c_shape(split_gemm, replace(split, tma_store=True)) == [8 * 512, 128]
    assert hopper.c_shape(join_gemm, replace(join, tma_store=True)) == [256, 4 * 128]


@pytest.mark.parametrize("gemm, schedule, why", [
    (Gemm(512, 1024, 256, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, store_heads=8), "stored by TMA"),
    (Gemm(512, 1024, 256, "f16", "nn"), replace(hopper.DEFAULT, tma_store=True, store_heads=8), "stored by TMA"),
    (Gemm(500, 1024, 256, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, tma_store=True, store_heads=8),
     "whole 128x256 tiles"),
    (Gemm(512, 1024, 256, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, tma_store=True, store_heads=6),
     "split into 6 heads"),
    (Gemm(512, 1024, 256, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, tma_store=True, store_heads=64),
     "whole 32-column boxes"),
    (Gemm(256, 128, 256, "f16", "nn", batch=4, epilogue=TRUNCF),
     replace(hopper.DEFAULT, block_n=128, tma_store=True, store_heads=2), "one head per product"),
])
def test_what_cannot_be_stored_in_heads_is_one_sentence(gemm, schedule, why):
    with pytest.raises(hopper.HopperError, match=why) as err:
        hopper.check_problem(gemm, schedule)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("gemm, schedule", [HEADS[0], HEADS[2]])
def test_the_head_stores_compile_and_their_ptx_shows_only_them(tmp_path, gemm, schedule):
    s = replace(schedule, tma_store=True)
    text = program(gemm, s)
    # the program gives C back as the problem has it: the heads moved back by one transpose after the dispatch
    assert text.count("linalg.transpose") == 1 and "permutation = [1, 0, 2]" in text
    ptx_file = _ptx_file(tmp_path / "heads", text)
    ptx = ptx_file.read_text()
    hopper.check_ptx(ptx, gemm, s)
    body = hopper.ptx_kernel(ptx, "gemm")
    assert "cp.async.bulk.tensor.2d.global" not in body and not re.search(r"st\.global\.", body)
    assert body.count("tensormap.replace.tile.global_stride") == 1 + 1 + 2  # A, B, and C's two strides
    # C's map field by field, each at its ordinal (the register's mov immediate), as `tensor_maps` gives it
    movs = dict(re.findall(r"mov\.b(?:32|64)\s+(%r\w+), (\d+);", body))
    fields: dict = {}
    for field, at, ordinal, value in re.findall(
            r"tensormap\.replace\.tile\.(global_stride|global_dim|box_dim)\.global\.b1024\.b\d+ \[(%rd\d+)\], "
            r"(\d+), (%r\w+);", body):
        fields.setdefault(at, {}).setdefault(field, set()).add((int(ordinal), int(movs[value])))
    *_, c = tensor_maps(gemm, s)
    want = {"global_stride": set(enumerate(c["strides"])), "global_dim": set(enumerate(c["dims"])),
            "box_dim": set(enumerate(c["box"]))}
    assert want in fields.values()
    with pytest.raises(hopper.HopperError):  # the same PTX is not the plain TMA store's
        hopper.check_ptx(ptx, gemm, replace(s, store_heads=0))
    # a heads kernel stores C by its copies alone: one plain store of C slipped in is found
    stray = ptx.replace("cp.async.bulk.commit_group;", "cp.async.bulk.commit_group; st.global.b32 [%rd1], 0;", 1)
    with pytest.raises(hopper.HopperError, match="C's type"):
        hopper.check_ptx(stray, gemm, s)
    _assembles(ptx_file)


# ---- which accumulator values each copy stores, the maps each workgroup builds and uses, the ring's waits (blind
# probe 19's survivors)

def _defs(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s*(%\w+) = (.*)$", text, re.M)}


def _fragment(defs: dict, value: str) -> tuple[str, int]:
    """(the accumulator struct, element index) an extracted f32 comes from."""
    m = re.match(r"llvm\.extractvalue (%[\w#]+)\[(\d+)\]", defs[value])
    return m.group(1), int(m.group(2))


@pytest.mark.parametrize("gemm, schedule", [CASES[0], CASES[1]])
def test_each_copy_stores_the_accumulator_elements_the_wgmma_layout_puts_in_its_block(gemm, schedule):
    """wgmma's m64nNk16 f32 accumulator (PTX ISA, "Register fragment layout for accumulator matrix D"): lane l of a
    warp holds, as element 4 j + 2 h + e of its m64 block's struct, the product at row l / 4 + 8 h of the warp's 16
    and column 8 j + 2 (l % 4) + e. stmatrix's matrix i of a copy is the block's 8 columns from 8 i, lane l giving
    row l / 4 and columns 2 (l % 4), + 1 packed with the lower column in the lower half (cvt.rn.f16x2.f32 d, a, b puts
    b in the lower half). So word i of the copy at block columns x0 + 32 g, rows + 64 r + 8 h must pack elements
    4 (4 g + i) + 2 h + 1 (upper) and + 0 (lower) of the r-th m64 block's struct."""
    s = replace(schedule, tma_store=True)
    text = kernel(gemm, s)
    defs = _defs(text)
    sites = copy_sites(text)
    boxes = [r["box"] for r in sorted(stores(gemm, s, range(1), range(1)), key=lambda r: r["n"])
             if r["tile"] == 0 and r["warp"] == 0]
    structs = []
    for (site, _), (x, y) in zip(sites, boxes):
        g, (r, h) = (x - boxes[0][0]) // 32, divmod((y - boxes[0][1]) // 8, 8)
        for i, word in enumerate(site[2:6]):
            packed = re.match(r'llvm\.inline_asm asm_dialect = att "cvt\.rn\.(?:b?f16)x2\.f32 \$0, \$1, \$2;", '
                              r'"=r,f,f" (%\w+), (%\w+)', defs[word])
            (upper_struct, upper), (lower_struct, lower) = (_fragment(defs, v) for v in packed.groups())
            base = 4 * (4 * g + i) + 2 * h
            assert (upper, lower) == (base + 1, base) and upper_struct == lower_struct
            structs.append((r, upper_struct))
    assert len({struct for _, struct in structs}) == s.m_blocks
    assert all(len({st for rr, st in structs if rr == r}) == 1 for r in range(s.m_blocks))


BUILT = re.compile(r'tensormap\.replace\.tile\.global_address[^"]*", "l,l" (%\w+), (%\w+)')  # (map, operand)


def map_addresses(built: list[tuple[str, str]], v: dict) -> dict:
    """Each operand's pointer -> the address of the map the kernel builds for it (`BUILT`'s matches evaluated)."""
    return {v[pointer]: v[at] for at, pointer in built}


@pytest.mark.parametrize("gemm, schedule", [CASES[0], CASES[2]])
def test_each_workgroup_builds_its_three_maps_in_its_own_slot_and_stores_through_cs(gemm, schedule):
    s = replace(schedule, tma_store=True)
    text = kernel(gemm, s)
    ops = compiled(text)
    built = BUILT.findall(text)
    acquire = re.search(r'@p fence\.proxy\.tensormap::generic\.acquire\.gpu \[\$1\][^"]*", "r,l" %\w+, (%\w+)',
                        text).group(1)
    sites = copy_sites(text)
    scratch = (POINTERS["t"], POINTERS["t"] + 8 * hopper.maps_words(gemm, s))
    slots = []
    for bid in range(grid_size(gemm, s)):
        v = evaluate(ops, {"bid": bid, "tid": hopper.WARPGROUP, "%ci": 0})
        maps = map_addresses(built, v)
        assert set(maps) == {POINTERS["a"], POINTERS["b"], POINTERS["cc"]}
        c_map = maps[POINTERS["cc"]]
        assert v[acquire] == c_map and all(v[site[6]] == c_map for site, _ in sites)
        assert all(at % 128 == 0 for at in maps.values())  # tensor maps on 64 bytes at least (CUDA's CUtensorMap)
        slots += sorted(maps.values())
    # every workgroup's 128-byte maps apart from every other's, inside the scratch the dispatch allocates
    assert len(set(slots)) == len(slots) == 3 * grid_size(gemm, s)
    assert scratch[0] <= min(slots) and max(slots) + 128 <= scratch[1]


def _ring_overlaps(events: list, areas: list, allowed: int | None = None) -> list:
    """Run a warp's store sequence (`events`: ("wait", k) as lane 0's wait_group.read k, ("group", c) as a group of
    c copies whose areas are the next c of `areas`, whose writes come just before it) against what
    cp.async.bulk.wait_group.read guarantees: after waiting, at most k of the warp's earlier groups may still be
    reading. -> the areas a group wrote while an earlier group still reading them might be (none is safe). With
    `allowed`, every wait lets that many groups stay instead."""
    pending, overlaps, at = [], [], 0
    for kind, value in events:
        if kind == "wait":
            keep = value if allowed is None else allowed
            pending = pending[len(pending) - keep:] if keep else []
        else:
            mine = set(areas[at:at + value])
            at += value
            overlaps += [a for group in pending for a in group & mine]
            pending.append(mine)
    return overlaps


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(2048, 2304, 128, "f16", "nt", epilogue=TRUNCF), hopper.DEFAULT),  # 72 units on 36 clusters: 2 tiles each
    CASES[1]])
def test_an_area_is_written_again_only_once_the_copy_that_read_it_is_done(gemm, schedule):
    """A warp's blocks go to its ring of STORE_RING areas in order, in groups; before writing a group, lane 0 waits
    until only the groups that cannot be reading the group's areas may still be pending. Checked by running the
    kernel's own sequence of waits and groups, over the areas its arithmetic gives each copy, across a warp's first
    two tiles (the ring runs on from tile to tile): no group writes an area a pending group may read, and one more
    pending group allowed would (the waits are not stricter than needed); each warp waits for all its copies before
    the workgroup ends."""
    s = replace(schedule, tma_store=True)
    text = kernel(gemm, s)
    records = [r for r in stores(gemm, s, range(1), range(1)) if r["warp"] == 0]
    first_two = sorted({r["tile"] for r in records})[:2]
    records = sorted((r for r in records if r["tile"] in first_two), key=lambda r: (r["tile"], r["n"]))
    assert len(first_two) == 2
    areas = [r["buf"] for r in records]
    assert len(set(areas)) == hopper.STORE_RING
    events = []
    for m in ASM.finditer(text):
        wait = re.fullmatch(r"\{ \.reg \.pred p; setp\.eq\.u32 p, \$0, 0; @p cp\.async\.bulk\.wait_group\.read "
                            r"(\d+); \} bar\.warp\.sync -1;", m.group(1))
        if wait:
            events.append(("wait", int(wait.group(1))))
        elif COPY.search(m.group(1)):  # a group of copies, each reading an area a half
            events.append(("group", len(COPY.findall(m.group(1))) * (hopper.STORE_BOX[1] // 8)))
    assert events and events[0][0] == "wait"
    tile_events = events * 2
    assert sum(c for kind, c in tile_events if kind == "group") == len(areas)
    assert _ring_overlaps(tile_events, areas) == []
    waits = {k for kind, k in events if kind == "wait"}
    assert len(waits) == 1 and _ring_overlaps(tile_events, areas, allowed=waits.pop() + 1) != []
    tail = text[text.rindex("cp.async.bulk.tensor.2d.global"):]
    assert len(re.findall(r"@p cp\.async\.bulk\.wait_group 0;", tail)) == 1  # after the last copy: all of them done


@pytest.mark.parametrize("gemm, schedule", [CASES[0], CASES[2]])
def test_the_producer_loads_a_through_as_map_and_b_through_bs(gemm, schedule):
    s = replace(schedule, tma_store=True)
    text = kernel(gemm, s)
    ops = compiled(text)
    built = BUILT.findall(text)
    loads = re.findall(r"nvvm\.cp\.async\.bulk\.tensor\.shared\.cluster\.global %\w+, (%\w+), ", text)
    v = evaluate(ops, {"bid": 0, "tid": 0, "%pi": 0, "%pk": 0})
    maps = map_addresses(built, v)
    assert [v[m] for m in loads[:2]] == [maps[POINTERS["a"]], maps[POINTERS["b"]]]


# ---- the store rule where the kernels are chosen: the `hopper` pipeline's tune candidates and tune-model's schedules

BIG = Gemm(8192, 8192, 8192, "bf16", "nt", epilogue=TRUNCF)


def test_every_tune_candidate_of_a_big_16_bit_problem_stores_by_tma_where_its_ring_fits():
    from pipelines.routes.hopper import HopperRoute
    from pipelines.targets import get_target

    found = HopperRoute().candidates(BIG, get_target("sm_90a"))
    assert found[0] == fitted(BIG) and fitted(BIG).tma_store
    assert hopper.DEFAULT not in found and replace(hopper.DEFAULT, tma_store=True, defer_stores=True) in found
    for s in found:
        assert s.tma_store == hopper.stages_stores(BIG, replace(s, tma_store=True)), s
        hopper.check_problem(BIG, s)


def test_tune_candidates_with_k_in_slices_summed_after_do_not_defer_and_are_taken():
    """132 tiles of a 16-bit C: the persistent candidates store by TMA and defer, and their copies with K in slices
    summed after (whose kernel writes f32 partial products: nothing staged, nothing deferred) are taken by
    check_problem, which judges the kernel's own C."""
    from pipelines.routes.hopper import HopperRoute
    from pipelines.targets import get_target

    gemm = Gemm(1536, 2816, 4096, "f16", "nn", epilogue=TRUNCF)  # 12 x 11 tiles of 128x256
    found = HopperRoute().candidates(gemm, get_target("sm_90a"))
    sliced = [s for s in found if s.sums_after]
    assert sliced and any(s.defer_stores for s in found)
    for s in found:
        hopper.check_problem(gemm, s)
        assert not (s.defer_stores and s.sums_after), s
    with pytest.raises(hopper.HopperError, match="deferred stores need C stored by TMA"):
        hopper.check_problem(gemm, replace(sliced[0], defer_stores=True))


@pytest.mark.parametrize("schedule, defer", [
    (hopper.DEFAULT, True),                                                       # cooperative, persistent
    (HopperSchedule(block_m=128, block_n=128, kind="pingpong", persistent=True), False),  # stores under the other's
    (HopperSchedule(block_m=128, block_n=128, stages=4), False),                  # a tile a workgroup: no next tile
    (HopperSchedule(block_m=128, block_n=128, stages=4, persistent=True, split_k=2), False),  # C: f32 partials
])
def test_the_store_rule_defers_a_cooperative_kernels_tma_stores_only(schedule, defer):
    ruled = store_rule(BIG, schedule)
    assert ruled.tma_store and ruled.defer_stores is defer
    assert replace(ruled, tma_store=False, defer_stores=False) == schedule
    ruled.check()
    assert store_rule(BIG.with_(epilogue=Epilogue("none")), schedule) == schedule  # f32 C: neither


def test_store_rule_keeps_the_staged_stores_where_the_ring_does_not_fit():
    """A 128x160 tile of 6 stages stages its stores in 512 bytes a warp but has no room for the ring's four."""
    s = HopperSchedule(block_m=128, block_n=160, stages=6, persistent=True)
    assert hopper.stages_stores(BIG, s) and not hopper.stages_stores(BIG, replace(s, tma_store=True))
    assert store_rule(BIG, s) == s


@pytest.mark.parametrize("m, n, k, layout, tma", [
    (8192, 8192, 1024, "nt", True),   # ping-pong (K <= 1024), 4096 tiles
    (8192, 8192, 4096, "nt", True),   # the shipped kernel
    (256, 512, 4096, "nn", False),    # 4 tiles
])
def test_tune_models_products_and_fused_tails_follow_the_store_rule(m, n, k, layout, tma):
    from pipelines.hopper_model import SMALL_K_SCHEDULE, TAIL_SCHEDULE, product_schedule, tail_schedule_for

    gemm = Gemm(m, n, k, "f16", layout, epilogue=TRUNCF)
    product = product_schedule(gemm)
    assert product.tma_store is tma
    assert product.defer_stores is (tma and product.kind == "cooperative")
    assert replace(product, tma_store=False, defer_stores=False) == (SMALL_K_SCHEDULE if k <= 1024 else hopper.DEFAULT)
    tail = tail_schedule_for(gemm)
    assert tail == replace(TAIL_SCHEDULE, tma_store=tma, defer_stores=tma and TAIL_SCHEDULE.kind == "cooperative")
    assert product_schedule(gemm.with_(epilogue=Epilogue("none"))).tma_store is False  # f32 C


# Deferred stores (`HopperSchedule.defer_stores`): every tile whole here, so each tile but a workgroup's last is
# stored in the next iteration, under that tile's first wgmma group, and the last after the loop.
DEFERRED = [(Gemm(2048, 2304, 256, "f16", "nt", epilogue=TRUNCF), hopper.DEFAULT),  # 2 tiles a workgroup
            # two m64 blocks a consumer (256-row tiles), 2 tiles a workgroup
            (Gemm(4096, 2048, 128, "f16", "nt", epilogue=TRUNCF), replace(hopper.DEFAULT, block_m=256, block_n=128,
                                                                         stages=3)),
            (Gemm(256, 512, 128, "bf16", "nn", batch=6, epilogue=TRUNCF), hopper.DEFAULT),  # 6 products, 1 each
            (Gemm(1024, 1024, 512, "f16", "nn", epilogue=TRUNCF), replace(hopper.DEFAULT, store_heads=4))]


def deferred_blocks(gemm: Gemm, s: HopperSchedule) -> list[tuple]:
    """Lane 0's 32x8 blocks of every consumer warp of every workgroup, as (workgroup, warp, tile, block): the copies
    in the loop evaluated at each iteration i >= 1 (they store tile i - 1, pending only after a whole tile, as every
    tile is here), the copies after the loop once (the workgroup's last tile, pending when it has tiles)."""
    text = kernel(gemm, s)
    after = re.search(r"^\s*scf\.if %tl\d+#\d+ \{$", text, re.M).start()
    ops = compiled(text)
    loop = re.search(r"scf\.for %ci = %\w+ to (%\w+) step", text).group(1)
    inside, last = copy_sites(text[:after]), copy_sites(text[after:])
    y_at = 2 if hopper.head_store(gemm, s) == "join" else 1
    found = []
    for bid in range(grid_size(gemm, s)):
        for g in range(s.consumers):
            for warp in range(4):
                tid = hopper.WARPGROUP * (1 + g) + 32 * warp
                mine = evaluate(ops, {"bid": bid, "tid": tid})[loop]
                runs = [(i, inside, {"%ci": i}) for i in range(1, mine)] + ([(mine, last, {})] if mine else [])
                for i, sites, known in runs:
                    v = evaluate(ops, {"bid": bid, "tid": tid, **known})
                    for site, half in sites:
                        coords = [v[o] for o in site[7:-1]]
                        coords[y_at] += 8 * half
                        found.append((bid, 4 * g + warp, i - 1, tuple(coords)))
    return found


@pytest.mark.parametrize("gemm, schedule", DEFERRED)
def test_deferred_stores_write_every_block_of_c_once_from_the_tile_they_belong_to(gemm, schedule):
    s = replace(schedule, tma_store=True, defer_stores=True)
    hopper.check_problem(gemm, s)
    got = deferred_blocks(gemm, s)
    plain = stores(gemm, replace(s, defer_stores=False))  # the same kernel storing each tile at once
    want = sorted((r["bid"], r["warp"], r["tile"], r["box"]) for r in plain if r["lane"] == 0)
    assert sorted(got) == want


@pytest.mark.parametrize("gemm, schedule", DEFERRED[:2])
def test_deferred_words_are_the_tiles_packed_fragments_in_store_order(gemm, schedule):
    """The words a tile carries to the next are its accumulator elements packed in pairs (upper element 4 j + 2 h +
    1, lower 4 j + 2 h of m64 block r, word (2 r + h) · block_n / 8 + j), and the deferred copies write them where
    the tile's own stores would: word 4 g + i of fragment row (r, h) as matrix i of block g."""
    s = replace(schedule, tma_store=True, defer_stores=True)
    text = kernel(gemm, s)
    defs = _defs(text)
    per_row = s.block_n // 8
    carried = re.search(r"^\s*scf\.yield ((?:%\w+, )+)%c\w+ : i32", text, re.M).group(1).rstrip(", ").split(", ")
    assert len(carried) == s.m_blocks * 2 * per_row
    for k, word in enumerate(carried):
        (r, h), j = divmod(k // per_row, 2), k % per_row
        packed = re.match(r'llvm\.inline_asm asm_dialect = att "cvt\.rn\.(?:b?f16)x2\.f32 \$0, \$1, \$2;", '
                          r'"=r,f,f" (%\w+), (%\w+)', defs[word])
        (upper_struct, upper), (lower_struct, lower) = (_fragment(defs, v) for v in packed.groups())
        assert (upper, lower) == (4 * j + 2 * h + 1, 4 * j + 2 * h) and upper_struct == lower_struct
    after = re.search(r"^\s*scf\.if %tl\d+#\d+ \{$", text, re.M).start()
    halves = hopper.STORE_BOX[1] // 8
    for sites, name in ((copy_sites(text[:after]), r"%dw(\d+)"), (copy_sites(text[after:]), r"%tl\d+#(\d+)")):
        for n, (site, half) in enumerate(sites):
            box, g = divmod(n // halves, per_row // 4)  # the box's place: fragment rows (r, h0) and block g
            r, first = divmod(box * halves, 2)
            row = 2 * r + first + half
            assert [int(re.fullmatch(name, w).group(1)) for w in site[2:6]] == \
                [row * per_row + 4 * g + i for i in range(4)]


def test_deferral_is_refused_where_it_cannot_apply_and_found_in_the_ptx(tmp_path):
    s = replace(hopper.DEFAULT, tma_store=True, defer_stores=True)
    with pytest.raises(hopper.HopperError, match="deferred stores need C stored by TMA in a cooperative"):
        replace(s, tma_store=False).check()
    with pytest.raises(hopper.HopperError, match="deferred stores need C stored by TMA in a cooperative"):
        replace(hopper.named_schedule("hopper-pingpong"), tma_store=True, defer_stores=True).check()
    with pytest.raises(hopper.HopperError, match="deferred stores need C stored by TMA in a cooperative"):
        replace(s, split_k=2, split_sum="cluster", cluster_m=1, persistent=False).check()  # sums, not stores
    with pytest.raises(hopper.HopperError, match="deferred stores need C stored by TMA"):  # an f32 C: no staging
        hopper.check_problem(Gemm(512, 512, 128, "f16", "nt"), s)
    assert "deferred under the next tile's first MMAs" in s.describe()


@pytest.mark.slow  # two compiles for sm_90a
def test_the_deferred_kernel_compiles_and_check_ptx_finds_the_deferral(tmp_path):
    # edge tiles (M and N past the last whole tile: stored at once, by the guarded path), two tiles a workgroup
    gemm = Gemm(3000, 2600, 256, "bf16", "nt", epilogue=TRUNCF)
    plain = replace(hopper.DEFAULT, tma_store=True)
    deferred = replace(plain, defer_stores=True)
    assert hopper.most_tiles(gemm, deferred) == 2
    ptx = {name: _ptx_file(tmp_path / name, program(gemm, s)).read_text()
           for name, s in (("deferred", deferred), ("plain", plain))}
    hopper.check_ptx(ptx["deferred"], gemm, deferred)
    hopper.check_ptx(ptx["plain"], gemm, plain)
    body = hopper.ptx_kernel(ptx["deferred"], "gemm")
    assert "st.global.b32" in body  # the edge tiles' pairs, stored at once
    with pytest.raises(hopper.HopperError, match="stores deferred"):  # the plain kernel does not defer
        hopper.check_ptx(ptx["plain"], gemm, deferred)
    # one tile a workgroup (four 128x256 tiles, four workgroups): nothing to defer under, the tile stored after the
    # loop; check_ptx takes the kernel without looking for a deferral
    single = Gemm(256, 512, 256, "bf16", "nt", epilogue=TRUNCF)
    assert hopper.most_tiles(single, deferred) == 1
    hopper.check_ptx(_ptx_file(tmp_path / "single", program(single, deferred)).read_text(), single, deferred)


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(3000, 2600, 256, "bf16", "nt", epilogue=TRUNCF), hopper.DEFAULT),
    (Gemm(1000, 776, 448, "bf16", "nt", epilogue=TRUNCF), hopper.DEFAULT),
    (Gemm(256, 512, 128, "bf16", "nn", batch=6, epilogue=TRUNCF), hopper.DEFAULT),
    (Gemm(256, 512, 128, "bf16", "nn", batch=40, epilogue=TRUNCF), hopper.DEFAULT),  # 80 units, 2 a cluster
    (Gemm(128 * 19, 256 * 14, 128, "f16", "nt", epilogue=TRUNCF), hopper.DEFAULT),  # 140 units on 47 clusters
    (Gemm(64, 4096, 4096, "bf16", "nn"), HopperSchedule(block_m=64, block_n=128, consumers=1, group_m=1, stages=4,
                                                         split_k=4, split_sum="cluster"))])
def test_most_tiles_is_the_longest_loop_the_kernel_runs(gemm, schedule):
    """`most_tiles` (whether check_ptx looks for deferred stores) against the emitted kernel's own trip count,
    evaluated for every workgroup."""
    text = kernel(gemm, schedule)
    ops = compiled(text)
    loop = re.search(r"scf\.for %ci = %\w+ to (%\w+) step", text).group(1)
    trips = [evaluate(ops, {"bid": bid, "tid": hopper.WARPGROUP})[loop] for bid in range(grid_size(gemm, schedule))]
    assert max(trips) == hopper.most_tiles(gemm, schedule)


@pytest.mark.parametrize("gemm, schedule", [CASES[0], CASES[1], (Gemm(512, 1024, 256, "f16", "nn", epilogue=TRUNCF),
                                                                 replace(hopper.DEFAULT, store_heads=8))])
def test_each_batch_waits_then_writes_then_fences_then_lane_0_copies_and_commits_once(gemm, schedule):
    """The order a batch's areas need, asm by asm: lane 0's wait for the group that last read them, the warp's
    writes (stmatrix), one proxy fence, then one asm in which lane 0 (the same lane value the wait tests) issues the
    batch's copies and, after the last of them, commits them as one bulk group; nothing else in between."""
    s = replace(schedule, tma_store=True)
    text = kernel(gemm, s)
    asms = [(m.group(1), [v.strip() for v in m.group(2).split(",") if v.strip()]) for m in ASM.finditer(text)]
    store_asms = [(body, ops) for body, ops in asms if ("wait_group.read" in body and "bar.warp.sync" in body)
                  or body.startswith("stmatrix")
                  or body.startswith("fence.proxy.async") or COPY.search(body)]
    per_box = hopper.STORE_BOX[1] // 8
    batches, lane_names = 0, set()
    at = 0
    while at < len(store_asms):
        body, ops = store_asms[at]
        assert re.fullmatch(r"\{ \.reg \.pred p; setp\.eq\.u32 p, \$0, 0; @p cp\.async\.bulk\.wait_group\.read \d+; "
                            r"\} bar\.warp\.sync -1;", body), body
        lane_names.add(ops[0])
        writes = 0
        at += 1
        while store_asms[at][0].startswith("stmatrix"):
            writes, at = writes + 1, at + 1
        assert store_asms[at][0] == "fence.proxy.async.shared::cta; bar.warp.sync -1;"
        body, ops = store_asms[at + 1]
        copies = COPY.findall(body)
        assert body.startswith("{ .reg .pred p; setp.eq.u32 p, $0, 0; ") and body.endswith(
            "; @p cp.async.bulk.commit_group; }") and body.count("commit_group") == 1
        assert len(copies) * per_box == writes > 0
        lane_names.add(ops[0])
        batches, at = batches + 1, at + 2
    assert batches and len(lane_names) == 1  # the waits and the copies test the same lane value
    lane, = lane_names
    ops = compiled(text)
    for tid in (hopper.WARPGROUP, hopper.WARPGROUP + 37, hopper.WARPGROUP + 127):
        assert evaluate(ops, {"bid": 0, "tid": tid})[lane] == tid % 32


@pytest.mark.parametrize("block_n, staged", [(32, True), (48, False), (64, True), (80, False), (96, True)])
def test_only_tiles_of_whole_32_column_groups_stage_their_stores(block_n, staged):
    """The staged and TMA stores write a fragment row's columns 32 at a time (four 8x8 matrices a stmatrix): a tile
    whose width is not a multiple of 32 would lose its last columns there, so it keeps the per-lane pairs."""
    gemm = Gemm(256, 960, 64, "f16", "nt", epilogue=TRUNCF)
    s = HopperSchedule(block_m=128, block_n=block_n, stages=2, tma_store=True)
    assert hopper.stages_stores(gemm, s) is staged and hopper.stores_by_tma(gemm, s) is staged


def _consts(text: str) -> dict:
    found = re.finditer(r"^\s*(%c\d+) = arith\.constant (-?\d+) : i1$", text, re.M)
    return {m.group(1): int(m.group(2)) for m in found}


@pytest.mark.parametrize("gemm", [Gemm(3000, 2600, 256, "bf16", "nt", epilogue=TRUNCF),  # edge tiles in M and N
                                  Gemm(2048, 2304, 256, "f16", "nt", epilogue=TRUNCF)])  # whole tiles, M, N exact
def test_only_a_whole_tile_carries_its_words_and_nothing_is_pending_at_the_start(gemm):
    """The pending flag: false before the first tile; after each tile, true exactly when the tile lies inside the
    problem (its last row and column within M and N: the words carried), else false (stored at once). The
    condition is evaluated from the kernel's own arithmetic for every tile of the first workgroups."""
    s = replace(hopper.DEFAULT, tma_store=True, defer_stores=True)
    text = kernel(gemm, s)
    consts = _consts(text)
    assert consts[re.search(r"scf\.for %ci = [^\n]*%dpend = (%\w+)", text).group(1)] == 0
    branch = re.search(r"(%kp\d+):\d+ = scf\.if (%\w+) -> ", text)
    yields = re.findall(r"scf\.yield [^\n]*, (%c\d+) : (?:i32, )+i1$", text, re.M)
    assert [consts[y] for y in yields] == [1, 0]  # the inside branch's flag, then the edge branch's
    cond = re.search(re.escape(branch.group(2)) + r" = arith\.andi (%\w+), (%\w+) : i1", text)
    compares = [re.search(re.escape(c) + r" = arith\.cmpi (\w+), (%\w+), (%\w+) : i32", text) for c in cond.groups()]
    assert all(m.group(1) == "ule" for m in compares)
    ops = compiled(text)
    loop = re.search(r"scf\.for %ci = %\w+ to (%\w+) step", text).group(1)
    want_tiles = {(x, y) for x in range(-(-gemm.n // 256)) for y in range(-(-gemm.m // 128))}
    seen = set()
    for bid in range(grid_size(gemm, s)):
        for i in range(evaluate(ops, {"bid": bid, "tid": hopper.WARPGROUP})[loop]):
            v = evaluate(ops, {"bid": bid, "tid": hopper.WARPGROUP, "%ci": i})
            inside = all(v[m.group(2)] <= v[m.group(3)] for m in compares)
            col, row = (v[m.group(2)] for m in compares[::-1])  # (col + 1)·block_n, (row + 1)·block_m
            tile = (col // 256 - 1, row // 128 - 1)
            seen.add(tile)
            assert inside == (row <= gemm.m and col <= gemm.n)
    assert seen == want_tiles


def test_defers_stores_reads_the_wait_before_the_first_write():
    """`_defers_stores` on hand-written PTX: the first write after a group's commit and its wait for the group
    before (deferred), after a drain (not), and after a wait that no commit precedes (not)."""
    assert hopper._defers_stores("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n"
                                 "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};")
    assert not hopper._defers_stores("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n"
                                     "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};")
    assert not hopper._defers_stores("wgmma.wait_group.sync.aligned 1;\nwgmma.wait_group.sync.aligned 1;\n"
                                     "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};")
    assert not hopper._defers_stores("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n")
