"""Stream-K in the Hopper kernels (`HopperSchedule.stream_k`): the division of the work over every cluster that
runs at once, against a reference worked out here from the description (whole rounds, then equal runs of K steps),
and the emitted kernel's integer arithmetic evaluated per workgroup, unit and K step (tests/unit/kernel_arith.py):
every K step of every tile loaded once, and the flag and partial-product words a cut unit's publisher writes the
ones its owner reads. The model of tests/unit/test_hopper_oracles.py does not run these kernels (global flags);
their products are checked on the GPU (results/h200/line2/cluster/run4)."""

import re
from dataclasses import replace

import pytest

from kernel_arith import POINTERS, SMEM, compiled, evaluate
from transforms import hopper
from transforms.hopper import HopperError, HopperSchedule, grid_size, program, stream_split, tile_grid
from transforms.problem import Epilogue, Gemm

S = HopperSchedule
STREAM = S(128, 256, 64, 4, group_m=16, persistent=True, cluster_m=2, stream_k=True)


def reference_runs(units: int, clusters: int, steps: int) -> dict[int, list[tuple[int, int, int]]]:
    """Per cluster: (unit, first K step, K steps) of everything it does, in order. Whole rounds of one unit per
    cluster while at least two rounds' worth remain beyond them; the remaining units' K steps, laid end to end,
    cut into runs of ceil(steps × remaining / clusters), one per cluster in order."""
    rounds = max(units // clusters - 1, 0)
    rest = units - rounds * clusters
    span = -(-rest * steps // clusters)
    runs = {g: [(g + r * clusters, 0, steps) for r in range(rounds)] for g in range(clusters)}
    for g in range(clusters):
        for step in range(g * span, min((g + 1) * span, rest * steps)):
            unit, k = rounds * clusters + step // steps, step % steps
            if runs[g] and runs[g][-1][0] == unit and runs[g][-1][1] + runs[g][-1][2] == k:
                runs[g][-1] = (unit, runs[g][-1][1], runs[g][-1][2] + 1)
            else:
                runs[g].append((unit, k, 1))
    return runs


@pytest.mark.parametrize("units, clusters, steps", [(1024, 66, 128), (256, 66, 64), (3584, 66, 128), (70, 66, 3),
                                                    (133, 66, 1), (9, 4, 5), (8, 4, 7)])
def test_the_split_gives_each_cluster_its_rounds_and_one_run_of_the_rest(units, clusters, steps):
    split = hopper.StreamSplit(clusters, steps, units // clusters - 1, units - (units // clusters - 1) * clusters,
                               -(-(units - (units // clusters - 1) * clusters) * steps // clusters))
    runs = reference_runs(units, clusters, steps)
    for g in range(clusters):
        whole = [(g + r * clusters, 0, steps) for r in range(split.rounds)]
        assert whole + split.pieces(g) == runs[g]
    done = sorted((u, k) for parts in runs.values() for u, first, n in parts for k in range(first, first + n))
    assert done == [(u, k) for u in range(units) for k in range(steps)]  # every K step of every unit once
    loads = [sum(n for _, _, n in parts) for parts in runs.values()]
    assert max(loads) - min(loads) <= split.span  # as even as runs of span allow
    cut = {}
    for g, parts in runs.items():  # a unit in two parts: the head last in cluster g, the tail first in g + 1
        for index, (u, first, n) in enumerate(parts):
            if n < steps:
                cut.setdefault(u, []).append((g, index, first))
    for u, parts in cut.items():
        assert len(parts) == 2, f"unit {u} in {len(parts)} parts"
        (g, index, first), (g2, index2, first2) = sorted(parts, key=lambda p: p[2])
        assert first == 0 and g2 == g + 1 and index == len(runs[g]) - 1 and index2 == max(units // clusters - 1, 0)


def test_stream_k_takes_every_cluster_that_runs_at_once():
    gemm = Gemm(8192, 8192, 8192, "bf16", "nt", epilogue=Epilogue("truncf"))
    split = stream_split(gemm, STREAM)
    assert (split.clusters, split.rounds, split.units, split.span) == (66, 14, 100, 194)
    assert grid_size(gemm, STREAM) == 132 and grid_size(gemm, replace(STREAM, stream_k=False)) == 128
    # no more units than clusters: one each, no split, the grid as without stream-K
    small = Gemm(1024, 1024, 1024, "bf16", "nt")
    assert stream_split(small, STREAM) is None
    assert grid_size(small, STREAM) == grid_size(small, replace(STREAM, stream_k=False))
    assert "stream-K" in STREAM.describe()


@pytest.mark.parametrize("schedule, words", [
    (replace(STREAM, kind="pingpong", block_m=64, block_n=128), "stream-K needs a persistent cooperative"),
    (replace(STREAM, persistent=False), "stream-K needs"), (replace(STREAM, split_k=2), "stream-K needs"),
    (replace(STREAM, cluster_n=2), "stream-K needs"), (replace(STREAM, serpentine_k=True), "stream-K needs"),
])
def test_schedules_stream_k_cannot_take_are_one_sentence(schedule, words):
    with pytest.raises(HopperError, match=words):
        schedule.check()


def test_a_batch_or_heads_are_refused_with_stream_k():
    with pytest.raises(HopperError, match="stream-K takes one product"):
        hopper.check_problem(Gemm(256, 256, 256, "bf16", "nt", batch=2), STREAM)
    with pytest.raises(HopperError, match="stream-K takes one product"):
        hopper.check_problem(Gemm(4096, 4096, 256, "bf16", "nt", epilogue=Epilogue("truncf")),
                             replace(STREAM, tma_store=True, store_heads=8))


def _asm_operand(kernel: str, instruction: str) -> str:
    line = next(line for line in kernel.splitlines() if instruction in line)
    return re.search(r'" (%\w+)', line.split('", "', 1)[1]).group(1)


@pytest.mark.parametrize("gemm, schedule", [
    # 9 x 5 tiles of 128x128 in clusters of two (5 x 5 = 25 units) on a GPU of 8 SMs (4 clusters): 5 whole rounds,
    # then 5 units' 5 K steps in runs of 7 (K 296: the last K tile cut short)
    (Gemm(1100, 520, 296, "bf16", "nt", epilogue=Epilogue("truncf")),
     S(128, 128, 64, 3, persistent=True, cluster_m=2, stream_k=True, tma_store=True, defer_stores=True)),
    (Gemm(600, 1024, 448, "f16", "nn"), S(128, 256, 64, 2, persistent=True, group_m=2, stream_k=True)),
])
def test_every_k_step_of_every_tile_is_loaded_once_and_cut_units_meet_in_one_slot(gemm, schedule, monkeypatch):
    """From the kernel's arithmetic, per workgroup: its units' count, each unit's K steps (the producer's loop
    bound) and the A and B boxes of each step: every (block row, block column, K tile) of the problem once over the
    grid. Per consumer warp group: a unit whose first K step is past 0 (published) and the unit its cluster ends
    on without its last K step (owned) name the same flag and partial-product words, one slot per cut unit."""
    monkeypatch.setattr(hopper, "SM_COUNT", 8)
    hopper.check_problem(gemm, schedule)
    split = stream_split(gemm, schedule)
    assert split is not None and split.rounds >= 1
    kernel = program(gemm, schedule)
    kernel = kernel[kernel.index("func.func @gemm()"):kernel.index("func.func @main")]
    ops = compiled(kernel)
    loop = re.search(r"scf\.for %pi = %\w+ to (%\w+) step", kernel).group(1)
    inner = re.search(r"scf\.for %pk = %\w+ to (%\w+) step", kernel).group(1)
    loads = re.findall(r"cp\.async\.bulk\.tensor\.shared\.cluster\.global %\w+, %\w+, %\w+, box\[(%\w+), (%\w+)\]",
                       kernel)
    nn, steps = gemm.layout == "nn", -(-gemm.k // 64)
    seen: dict[tuple, int] = {}
    for bid in range(grid_size(gemm, schedule)):
        for i in range(evaluate(ops, {"bid": bid})[loop]):
            for kt in range(evaluate(ops, {"bid": bid, "%pi": i})[inner]):
                v = evaluate(ops, {"bid": bid, "%pi": i, "%pk": kt})
                a_k, a_row = v[loads[0][0]], v[loads[0][1]]
                b_k, b_col = (v[loads[1][1]], v[loads[1][0]]) if nn else (v[loads[1][0]], v[loads[1][1]])
                assert a_k == b_k and a_row % schedule.block_m == 0
                key = (a_row // schedule.block_m, b_col // schedule.block_n, a_k // 64)
                seen[key] = seen.get(key, 0) + 1
    columns, rows = tile_grid(gemm, schedule)
    rows = -(-rows // schedule.cluster_m) * schedule.cluster_m
    assert seen == {(r, c, k): 1 for r in range(rows) for c in range(columns) for k in range(steps)}
    # the slots: publisher (first item of cluster g + 1) and owner (last item of cluster g) of each cut unit
    flag_of = {"publish": _asm_operand(kernel, "red.relaxed.gpu.global.add.s32"),
               "own": _asm_operand(kernel, "ld.global.acquire.gpu.b32")}
    word_of = {"publish": _asm_operand(kernel, "st.global.cg.f32"), "own": _asm_operand(kernel, "ld.global.cg.f32")}
    slots = {}
    for g in range(split.clusters):
        parts = split.pieces(g)
        for role, index in (("publish", 0), ("own", len(parts) - 1)):
            if not parts or (role == "publish") != (parts[index][1] > 0) or \
                    (role == "own" and (parts[index][1] > 0 or parts[index][2] == split.steps)):
                continue
            unit = parts[index][0]
            for rank in range(schedule.cluster_size):
                for tid in range(128, 128 * (1 + schedule.consumers), 128):
                    env = {"bid": g * schedule.cluster_size + rank, "%ci": split.rounds + index, "tid": tid}
                    v = evaluate(ops, env)
                    slots.setdefault((unit, rank, tid), {})[role] = (v[flag_of[role]], v[word_of[role]])
    assert slots and all(set(pair) == {"publish", "own"} and pair["publish"] == pair["own"]
                         for pair in slots.values())
    flags = [pair["own"][0] for pair in slots.values()]
    assert len(set(flags)) == len(flags)  # a flag per cut unit, workgroup and warp group


@pytest.mark.parametrize("schedule", [
    S(128, 128, 64, 3, persistent=True, cluster_m=2, stream_k=True, tma_store=True, defer_stores=True),
    S(256, 128, 64, 2, persistent=True, stream_k=True),  # two m64 blocks a consumer: 128 partial words a thread
])
def test_the_ptx_shows_stream_k(tmp_path, monkeypatch, schedule):
    """check_ptx on the compiled kernel: each of a thread's partial accumulators stored and loaded back once, the
    flag set after a fence, awaited with acquiring loads and cleared, each side's warp-group barrier; the same PTX
    refused as a kernel without stream-K, and a kernel without it refused as one with it."""
    from pipelines.compiler import iree_compile_path, run_patiently

    monkeypatch.setattr(hopper, "SM_COUNT", 8)
    gemm = Gemm(1100, 520, 296, "bf16", "nt", epilogue=Epilogue("truncf"))

    def ptx(s: HopperSchedule) -> str:
        source, dump = tmp_path / f"{s.stream_k}.mlir", tmp_path / f"dump{s.stream_k}"
        source.write_text(program(gemm, s))
        done = run_patiently([iree_compile_path(), str(source), "--iree-hal-target-device=cuda",
                              f"--iree-hal-dump-executable-files-to={dump}", "-o", str(tmp_path / "k.vmfb")],
                             capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return next(dump.glob("*.ptx")).read_text()
    streamed, plain = ptx(schedule), ptx(replace(schedule, stream_k=False))
    hopper.check_ptx(streamed, gemm, schedule)
    assert len(re.findall(r"st\.global\.cg\.f32", streamed)) == 64 * schedule.m_blocks  # n128: 64 a block
    for text, claimed in ((streamed, replace(schedule, stream_k=False)), (plain, schedule)):
        with pytest.raises(HopperError, match="stream-K"):
            hopper.check_ptx(text, gemm, claimed)
    # a kernel whose owner does not wait for the flag (its acquiring loads taken out), or sets it without a fence
    for pattern in (r"ld\.global\.acquire\.gpu\.b32[^;]*;", r"fence\.acq_rel\.gpu;",
                    r"st\.relaxed\.gpu\.global\.b32[^;]*;", r"bar\.sync\s+%r\d+, 128;"):
        broken = re.sub(pattern, "", streamed)
        assert broken != streamed
        with pytest.raises(HopperError, match="stream-K"):
            hopper.check_ptx(broken, gemm, schedule)


def _operand(line: str, position: int = 0) -> str:
    return re.findall(r"%\w+", line.split(":")[0] if "inline_asm" not in line else line.split('", "', 1)[1])[position]


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(1100, 520, 296, "bf16", "nt", epilogue=Epilogue("truncf")),
     S(128, 128, 64, 3, persistent=True, cluster_m=2, stream_k=True, tma_store=True, defer_stores=True)),
    (Gemm(600, 1024, 448, "f16", "nn"), S(128, 256, 64, 2, persistent=True, group_m=2, stream_k=True)),
])
def test_the_stage_ring_runs_on_through_the_parts_and_every_word_lies_in_its_buffer(gemm, schedule, monkeypatch):
    """Per workgroup, from the kernel's arithmetic: the producer's K steps fill stages 0, 1, 2, ... (mod stages) one
    after the other over all its units, whole or parts (q counted here); each consumer waits for the stage of each of
    its steps and, after draining a unit, releases the stage of that unit's last step. The flag and partial words
    of every cut unit lie inside the flags operand (4-byte words) and past every workgroup's tensor maps in the
    scratch (word-aligned, within `partial_words`)."""
    monkeypatch.setattr(hopper, "SM_COUNT", 8)
    split = stream_split(gemm, schedule)
    text = program(gemm, schedule)
    kernel = text[text.index("func.func @gemm()"):text.index("func.func @main")]
    lines = kernel.splitlines()
    ops = compiled(kernel)
    consumer = next(i for i, line in enumerate(lines) if "setmaxnreg.inc" in line)
    drained = next(i for i, line in enumerate(lines) if "wgmma.wait.group.sync.aligned 0" in line)
    expect = next(_operand(line) for line in lines if "mbarrier.arrive.expect_tx" in line)
    waits = [_operand(line) for line in lines[consumer:] if "mbarrier.try_wait.parity" in line]  # peeled, loop
    after = lines[drained:]
    last = next(_operand(line) if "mapa" in line else re.findall(r"%\w+", line.split("=", 1)[1])[0]
                for line in after if "mapa.shared::cluster" in line or "nvvm.mbarrier.arrive %" in line)
    loop = re.search(r"scf\.for %pi = %\w+ to (%\w+) step", kernel).group(1)
    inner = re.search(r"scf\.for %pk = %\w+ to (%\w+) step", kernel).group(1)
    a, bb = schedule.stage_bytes()
    full = -(-SMEM // 1024) * 1024 + schedule.stages * (a + bb)  # the full barriers, then the empty ones
    for bid in range(grid_size(gemm, schedule)):
        q = 0
        for i in range(evaluate(ops, {"bid": bid})[loop]):
            steps = evaluate(ops, {"bid": bid, "%pi": i})[inner]
            for kt in range(steps):
                v = evaluate(ops, {"bid": bid, "%pi": i, "%pk": kt, "%ci": i, "%ck": kt, "tid": 128})
                assert v[expect] == full + 8 * ((q + kt) % schedule.stages), (bid, i, kt)
                assert v[waits[0 if kt == 0 else 1]] == full + 8 * ((q + kt) % schedule.stages), (bid, i, kt)
            v = evaluate(ops, {"bid": bid, "%ci": i, "tid": 128})
            assert v[last] == full + 8 * schedule.stages + 8 * ((q + steps - 1) % schedule.stages), (bid, i)
            q += steps
    # the words of the cut units' hand-off
    flag_line = next(line for line in lines if "red.relaxed.gpu.global.add.s32" in line)
    word_line = next(line for line in lines if "st.global.cg.f32" in line)
    flag, word = _operand(flag_line), _operand(word_line)
    flags_at = POINTERS["fl"]
    scratch = -(-POINTERS["t"] // hopper.MAP_ALIGN) * hopper.MAP_ALIGN + \
        grid_size(gemm, schedule) * hopper.map_words(gemm, schedule) * 8
    for g in range(split.clusters):
        for rank in range(schedule.cluster_size):
            for tid in range(128, 128 * (1 + schedule.consumers)):
                v = evaluate(ops, {"bid": g * schedule.cluster_size + rank, "%ci": split.rounds, "tid": tid})
                assert flags_at <= v[flag] < flags_at + 4 * hopper.flag_words(gemm, schedule) and v[flag] % 4 == 0
                assert scratch <= v[word] and v[word] % 4 == 0
                # a thread's last word: (m_blocks x n/2 - 1) x 128 words past its first
                end = v[word] + 4 * (schedule.m_blocks * schedule.block_n // 2 - 1) * 128
                assert end < scratch + 4 * hopper.partial_words(gemm, schedule)


@pytest.mark.parametrize("gemm, schedule", [
    (Gemm(1100, 520, 296, "bf16", "nt", epilogue=Epilogue("truncf")),
     S(128, 128, 64, 3, persistent=True, cluster_m=2, stream_k=True, tma_store=True, defer_stores=True)),
    (Gemm(600, 1024, 448, "f16", "nn"), S(128, 256, 64, 2, persistent=True, group_m=2, stream_k=True)),
    (Gemm(1100, 520, 296, "f16", "nt"), S(256, 128, 64, 2, persistent=True, stream_k=True)),  # two m64 blocks
])
def test_each_item_takes_its_role_and_every_partial_word_is_its_own(gemm, schedule, monkeypatch):
    """The role the kernel computes for each of a workgroup's units (0 whole, 1 a second part it publishes, 2 a
    first part it owns), against the reference's runs; and the partial words of every slot, thread and element
    distinct, inside the scratch the dispatch allocates (`maps_words`)."""
    monkeypatch.setattr(hopper, "SM_COUNT", 8)
    split = stream_split(gemm, schedule)
    kernel = program(gemm, schedule)
    kernel = kernel[kernel.index("func.func @gemm()"):kernel.index("func.func @main")]
    ops = compiled(kernel)
    consumer = kernel.index("setmaxnreg.inc")
    role = re.search(r"%pub\w* = arith\.cmpi eq, (%\w+), %\w+ : i32", kernel[consumer:]).group(1)
    steps = -(-gemm.k // 64)
    runs = reference_runs(split.rounds * split.clusters + split.units, split.clusters, steps)
    for g, parts in runs.items():
        for i, (unit, first, n) in enumerate(parts):
            want = 1 if first > 0 else 2 if n < steps else 0
            for rank in range(schedule.cluster_size):
                v = evaluate(ops, {"bid": g * schedule.cluster_size + rank, "%ci": i, "tid": 128})
                assert v[role] == want, (g, i, unit, first, n)
    word = _operand(next(line for line in kernel.splitlines() if "st.global.cg.f32" in line))
    elements = schedule.m_blocks * schedule.block_n // 2
    end = POINTERS["t"] + 8 * hopper.maps_words(gemm, schedule)
    words = set()
    for g in range(1, split.clusters):  # a cluster's first part, where it is published (the first item after the
        if not split.pieces(g) or split.pieces(g)[0][1] == 0:  # rounds, unless the cluster's run starts on a unit)
            continue
        for rank in range(schedule.cluster_size):
            for tid in range(128, 128 * (1 + schedule.consumers)):
                first = evaluate(ops, {"bid": g * schedule.cluster_size + rank, "%ci": split.rounds, "tid": tid})[word]
                mine = {first + 4 * 128 * e for e in range(elements)}
                assert not mine & words and max(mine) + 4 <= end
                words |= mine
    assert words
