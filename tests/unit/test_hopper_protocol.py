"""The Hopper stage hand-off checker (transforms.hopper_protocol): the schedules the generator emits pass under
random interleavings, and each way of breaking the hand-off is caught."""

import dataclasses
import re

import pytest

from transforms import hopper_protocol
from transforms.hopper import HopperSchedule
from transforms.hopper_protocol import PROTOCOL, ProtocolHazard, check, check_programs, programs

SCHEDULES = [HopperSchedule(256, 128, 64, 4), HopperSchedule(128, 256, 64, 2, persistent=True),
             HopperSchedule(128, 128, 64, 2, kind="pingpong"), HopperSchedule(64, 256, 64, 3, kind="pingpong"),
             HopperSchedule(128, 256, 64, 3, persistent=True, cluster_m=2),
             HopperSchedule(64, 256, 64, 2, kind="pingpong", cluster_m=2),
             HopperSchedule(128, 256, 64, 3, persistent=True, cluster_m=2, cluster_n=2),
             HopperSchedule(64, 256, 64, 2, kind="pingpong", cluster_n=2)]
_ids = lambda s: f"{s.kind}-{s.stages}-c{s.cluster_m}x{s.cluster_n}"  # noqa: E731


def _on_row_or_column(schedule, rank):
    """The ranks of a cluster of cluster_m x cluster_n (rank r at block row r % cluster_m, column r // cluster_m)
    on rank's block row or column: the workgroups whose loads land in its stages."""
    cm, size = schedule.cluster_m, schedule.cluster_m * schedule.cluster_n
    return {r for r in range(size) if r % cm == rank % cm or r // cm == rank // cm}


@pytest.mark.parametrize("schedule", SCHEDULES, ids=_ids)
def test_the_emitted_hand_off_is_sound(schedule):
    check(schedule, tiles=6, k_steps=5, runs=200)


def _without(roles, barrier):
    return {r: [s for s in steps if not (s.kind == "wait" and s.barrier[0] == barrier)] for r, steps in roles.items()}


def test_ping_pong_without_its_turns_reads_stale_stages():
    """Without the order barrier a consumer's `full` wait aims two phases ahead of the producer and passes."""
    schedule = SCHEDULES[2]
    roles = _without(programs(schedule, 6, 5), "order")
    with pytest.raises(ProtocolHazard, match="reads stage .* but it"):
        check_programs(schedule, roles, runs=200)


def test_a_producer_that_does_not_wait_for_empty_overwrites_a_stage_being_read():
    schedule = SCHEDULES[0]
    roles = _without(programs(schedule, 2, 6), "empty")
    with pytest.raises(ProtocolHazard, match="still reads it"):
        check_programs(schedule, roles, runs=200)


@pytest.mark.parametrize("schedule", SCHEDULES[4:], ids=_ids)
def test_a_cluster_releasing_only_its_own_workgroup_lets_the_other_overwrite_a_stage_being_read(schedule):
    """Each producer's multicast writes into both workgroups' stages: a release that reaches only the consumer's
    own `empty` barrier (counted as all the arrivals it expects) lets the other producer load over a stage still
    being read."""
    ranks = len(_on_row_or_column(schedule, 0))
    roles = {role: [dataclasses.replace(s, count=ranks) if s.kind == "release" else s for s in steps
                    if s.kind != "release" or s.cta == hopper_protocol._cta_of(role)]
             for role, steps in programs(schedule, 4, 5).items()}
    with pytest.raises(ProtocolHazard, match="still reads it"):
        check_programs(schedule, roles, runs=200)


def test_a_cluster_stage_is_read_only_once_both_shares_have_landed():
    """The `full` barrier expects every producer's part: announcing only its own lets a consumer read a stage
    whose other share is still in flight."""
    schedule = SCHEDULES[4]
    original = hopper_protocol._apply

    def announce_own_share_only(s, state, role, step, seed):
        original(s, state, role, step, seed)
        if step.kind == "expect":
            state.barriers[hopper_protocol._key(step)].tx -= s.cluster_m - 1

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hopper_protocol, "_apply", announce_own_share_only)
        with pytest.raises(ProtocolHazard, match="reads stage"):
            check(schedule, runs=200)


@pytest.mark.parametrize("key, wrong", [("full_parity", lambda q, s: (q // s + 1) & 1),
                                        ("empty_parity", lambda q, s: (q // s) & 1),
                                        ("order_parity", lambda turn, consumer: (turn + consumer) & 1)])
def test_each_parity_formula_is_needed(monkeypatch, key, wrong):
    monkeypatch.setitem(hopper_protocol.PROTOCOL, key, wrong)
    with pytest.raises(ProtocolHazard):
        check(SCHEDULES[2], runs=50)


# ---- the generator's own arithmetic against PROTOCOL: evaluate the emitted IR of each wait and release

_ARITH = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
          "divui": lambda a, b: a // b, "remui": lambda a, b: a % b, "andi": lambda a, b: a & b,
          "shrui": lambda a, b: a >> b, "ori": lambda a, b: a | b, "minui": min,
          "xori": lambda a, b: a ^ b, "shli": lambda a, b: a << b}


def _definitions(text):
    body = text[text.index("func.func @gemm"):]
    defs = {}
    for line in body.splitlines():
        match = re.match(r"\s*(%[\w]+)(?::\d+)? = (.*)", line)
        if match:
            defs[match.group(1)] = match.group(2)
    return body, defs


def _value(name, defs, env):
    if name in env:
        return env[name]
    text = defs[name]
    if text.startswith("arith.constant"):
        return int(text.split()[1])
    if text.startswith("gpu.thread_id"):
        return env["tid"]
    if text.startswith("hal.interface.workgroup.id"):
        return env["bid"]
    if text.startswith("memref.extract_aligned_pointer_as_index"):
        return 0  # shared memory and bindings from address 0: offsets only
    op = text.split()[0]
    operands = re.findall(r"%[\w#]+", text.split(":")[0])
    if op in ("arith.index_cast", "arith.extui", "arith.trunci", "llvm.inttoptr", "llvm.addrspacecast",
              "llvm.ptrtoint"):
        return _value(operands[0], defs, env)
    return _ARITH[op.removeprefix("arith.")](*(_value(o, defs, env) for o in operands[:2]))


def _uses(name, defs, target):
    """Whether SSA value `name` is computed from `target`."""
    if name == target:
        return True
    if name not in defs:
        return False
    return any(_uses(o, defs, target) for o in re.findall(r"%[\w#]+", defs[name].split(":")[0]) if o != name)


def _barrier(offset, schedule):
    """(kind, index) of a barrier's shared-memory offset: full, empty (per stage), order (per consumer)."""
    a, b = schedule.stage_bytes()
    index = (offset - schedule.stages * (a + b)) // 8
    kinds = ("full", "empty", "order")
    return kinds[index // schedule.stages], index % schedule.stages


@pytest.mark.parametrize("schedule", SCHEDULES, ids=_ids)
def test_the_generator_computes_the_phases_the_checker_verified(schedule):
    """Each wait's barrier and parity, and each release's barrier, evaluated from the emitted IR for every step of
    a few tiles, equal PROTOCOL's (which `check` runs): a change to either side alone fails here."""
    from transforms.hopper import program
    from transforms.problem import Gemm

    gemm = Gemm(1000, 776, 7 * 64, "bf16", "nt")
    k_steps, s = 7, schedule.stages
    body, defs = _definitions(program(gemm, schedule))
    waits = [tuple(re.findall(r"%\w+", line.split(":")[0])[:2]) for line in body.splitlines()
             if "nvvm.mbarrier.try_wait.parity" in line]
    arrives = [re.findall(r"%\w+", line.split("=")[1])[0] for line in body.splitlines()
               if "nvvm.mbarrier.arrive %" in line]
    # a cluster's releases: inline PTX arriving on the barrier (its shared address) in each workgroup by rank
    remote = [re.findall(r"%\w+", line.split('", "')[1])[:2] for line in body.splitlines()
              if "mapa.shared::cluster" in line]
    for bid in range(2 * schedule.cluster_m * schedule.cluster_n):  # the targets of workgroup bid's releases
        targets = {_value(rank, defs, {"bid": bid, "tid": 128}) for _, rank in remote}
        cluster = schedule.cluster_m * schedule.cluster_n
        assert targets == (_on_row_or_column(schedule, bid % cluster) if cluster > 1 else set())
    arrives += [bar for bar, _ in remote]
    seen, checked = set(), set()
    for i in range(4):
        for kt in range(k_steps):
            q = i * k_steps + kt
            for g in range(schedule.consumers):
                env = {"%pi": i, "%pk": kt, "%ci": i, "%ck": kt, "tid": 128 * (1 + g), "bid": 0}
                for bar, parity in waits:
                    kind, index = _barrier(_value(bar, defs, env), schedule)
                    value = _value(parity, defs, env) & 1
                    seen.add(kind)
                    # a consumer's first K step is peeled off its loop (which runs from 1): each wait for its
                    # own steps only
                    if kind == "full" and _uses(bar, defs, "%ck") != (kt > 0):
                        continue
                    checked.add((kind, bar))
                    if kind == "empty":
                        assert (index, value) == (PROTOCOL["stage"](q, s), PROTOCOL["empty_parity"](q, s))
                    elif kind == "full":
                        assert (index, value) == (PROTOCOL["stage"](q, s), PROTOCOL["full_parity"](q, s))
                    else:
                        assert (index, value) == (g, PROTOCOL["order_parity"](i // 2, g))
                released = [_barrier(_value(bar, defs, env), schedule) for bar in arrives]
                stages = {index for kind, index in released if kind == "empty"}
                last = i * k_steps + k_steps - 1
                assert PROTOCOL["stage"](q - 1, s) in stages and PROTOCOL["stage"](last, s) in stages
                assert {kind for kind, _ in released} == ({"empty", "order"} if schedule.kind == "pingpong"
                                                           else {"empty"})
    assert seen == ({"empty", "full", "order"} if schedule.kind == "pingpong" else {"empty", "full"})
    assert len([bar for kind, bar in checked if kind == "full"]) == 2  # the first K step's wait and the loop's


def _leader_guarded(lines, index, defs):
    """Whether line `index` sits in an `scf.if` on `tid % 128 == 0` (the warp group's first thread): the nearest
    `scf.if` above it, evaluated for threads 0, 1 and 37 of a consumer warp group."""
    guard = next(line for line in reversed(lines[:index]) if "scf.if" in line)
    cond = defs[re.search(r"scf\.if (%\w+)", guard).group(1)]
    match = re.match(r"arith\.cmpi eq, (%\w+), (%\w+)", cond)
    if not match:
        return False
    taken = [_value(match.group(1), defs, {"tid": 128 + t}) == _value(match.group(2), defs, {"tid": 128 + t})
             for t in (0, 1, 37)]
    return taken == [True, False, False]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=_ids)
def test_the_barriers_expect_the_arrivals_the_generator_makes(schedule):
    """The emitted mbarrier.init counts against the emitted releases: `full` one arrival (the producer's), `empty`
    one per reading consumer warp group per workgroup of the cluster; every release of a stage is made by one
    thread of its warp group (an unguarded one would arrive 128 times)."""
    from transforms.hopper import program
    from transforms.problem import Gemm

    body, defs = _definitions(program(Gemm(1000, 776, 7 * 64, "bf16", "nt"), schedule))
    lines = body.splitlines()
    counts: dict[str, set[int]] = {}
    for line in lines:
        if "nvvm.mbarrier.init" in line:
            bar, count = re.findall(r"%\w+", line.split(":")[0])[:2]
            counts.setdefault(_barrier(_value(bar, defs, {}), schedule)[0], set()).add(_value(count, defs, {}))
    readers = 1 if schedule.kind == "pingpong" else schedule.consumers
    ranks = len(_on_row_or_column(schedule, 0))
    assert counts["full"] == {1} and counts["empty"] == {readers * ranks}
    def kind_of_arrive(line):
        bar = re.findall(r"%\w+", line.split("=")[1])[0]
        return _barrier(_value(bar, defs, {"%ci": 0, "%ck": 1, "tid": 128}), schedule)[0]

    releases = [i for i, line in enumerate(lines) if "mapa.shared::cluster" in line
                or ("nvvm.mbarrier.arrive %" in line and kind_of_arrive(line) == "empty")]
    # after a K step and after draining, to each workgroup on its block row or column
    assert len(releases) == 2 * ranks
    assert all(_leader_guarded(lines, i, defs) for i in releases)


def test_a_cluster_takes_neighbouring_block_rows_and_shares_b_in_halves():
    """Clusters of two, 9 block rows (the fifth cluster row's second one past M), row order: from the emitted IR,
    each workgroup's TMA boxes and their shared-memory offsets. Workgroups 2u and 2u+1 take block rows 2r and
    2r+1 of column c (u = r × columns + c); each loads its A rows and half of B's (rank × 128 rows on), into the
    rank's half of the stage's B."""
    from transforms.hopper import HopperSchedule, grid_size, program, tile_grid
    from transforms.problem import Gemm

    gemm = Gemm(1100, 776, 448, "bf16", "nt")
    schedule = HopperSchedule(128, 256, 64, 2, persistent=True, cluster_m=2, group_m=1)
    body, defs = _definitions(program(gemm, schedule))
    loads = [re.findall(r"%\w+", line.split(":")[0].split("multicast_mask")[0])[:5] for line in body.splitlines()
             if "nvvm.cp.async.bulk.tensor" in line]
    columns, rows = tile_grid(gemm, schedule)
    bytes_a, bytes_b = schedule.stage_bytes()
    assert (columns, rows, grid_size(gemm, schedule)) == (4, 9, 4 * 5 * 2) and len(loads) == 2
    for bid in range(grid_size(gemm, schedule)):
        unit, rank = divmod(bid, 2)
        column, row = unit % columns, 2 * (unit // columns) + rank
        env = {"%pi": 0, "%pk": 0, "tid": 0, "bid": bid}
        got = {_value(tile_map, defs, env): (_value(dst, defs, env), _value(x, defs, env), _value(y, defs, env))
               for dst, tile_map, _, x, y in loads}
        # each workgroup's own two maps, 128 bytes each, in its 256-byte slot of the maps binding
        assert got[256 * bid] == (0, 0, row * 128)  # A: its own block row, at the stage's start
        assert got[256 * bid + 128] == (bytes_a + rank * bytes_b // 2, 0, column * 256 + rank * 128)



def test_a_2x2_cluster_takes_a_square_of_tiles_and_shares_a_along_rows_and_b_along_columns():
    """Clusters of 2x2, 3 block columns and 9 block rows (the last cluster column's second column past N, the
    last cluster row's second row past M), row order: from the emitted IR, each workgroup's TMA boxes, their
    shared-memory offsets and multicast masks. Workgroup 4u + r (u = cluster row × 2 + cluster column) takes
    block row 2 × cluster row + r % 2 and block column 2 × cluster column + r // 2; it loads half of its block
    row's A (rows (r // 2) × 64 on, into that half of the stage's A) to the two ranks of its row, and half of its
    block column's B (rows (r % 2) × 128 on) to the two of its column."""
    from transforms.hopper import HopperSchedule, grid_size, program, tile_grid
    from transforms.problem import Gemm

    gemm = Gemm(1100, 600, 448, "bf16", "nt")
    schedule = HopperSchedule(128, 256, 64, 2, persistent=True, cluster_m=2, cluster_n=2, group_m=1)
    body, defs = _definitions(program(gemm, schedule))
    loads = [(re.findall(r"%\w+", line.split(":")[0].split("multicast_mask")[0])[:5],
              re.search(r"multicast_mask = (%\w+)", line).group(1)) for line in body.splitlines()
             if "nvvm.cp.async.bulk.tensor" in line]
    bytes_a, bytes_b = schedule.stage_bytes()
    assert (tile_grid(gemm, schedule), grid_size(gemm, schedule)) == ((3, 9), 2 * 5 * 4) and len(loads) == 2
    for bid in range(grid_size(gemm, schedule)):
        unit, rank = divmod(bid, 4)
        row, column = 2 * (unit // 2) + rank % 2, 2 * (unit % 2) + rank // 2
        env = {"%pi": 0, "%pk": 0, "tid": 0, "bid": bid}
        got = {_value(tile_map, defs, env): (_value(dst, defs, env), _value(x, defs, env), _value(y, defs, env),
                                             _value(mask, defs, env))
               for (dst, tile_map, _, x, y), mask in loads}
        row_mask = sum(1 << r for r in range(4) if r % 2 == rank % 2)
        column_mask = sum(1 << r for r in range(4) if r // 2 == rank // 2)
        assert got[256 * bid] == (rank // 2 * bytes_a // 2, 0, row * 128 + rank // 2 * 64, row_mask)
        assert got[256 * bid + 128] == (bytes_a + rank % 2 * bytes_b // 2, 0, column * 256 + rank % 2 * 128,
                                        column_mask)


def test_a_2x2_cluster_releasing_only_its_column_lets_the_row_partner_overwrite_a_stage_being_read():
    """In clusters of 2x2 a workgroup's stage also holds its row partner's share of A: a release that skips the
    row partner (arriving on its own barrier instead, so that every count still completes) lets that partner's
    producer load A over a stage still being read."""
    schedule = SCHEDULES[6]
    roles = {}
    for role, steps in programs(schedule, 4, 5).items():
        cta = hopper_protocol._cta_of(role)
        roles[role] = [dataclasses.replace(s, cta=cta) if s.kind == "release" and s.cta // 2 != cta // 2 else s
                       for s in steps]
    with pytest.raises(ProtocolHazard, match="still reads it"):
        check_programs(schedule, roles, runs=300)


# ---- a cluster's stage holds a part from every workgroup: the checker must look at the partner's part too.
# Mostly hand-written programs for a cluster of two in which only workgroup 0 reads, so that the only fault is in
# the part workgroup 1's producer multicasts into workgroup 0's stage (its own copy is never read).

CLUSTER = HopperSchedule(64, 256, 64, 2, kind="pingpong", cluster_m=2)
Step = hopper_protocol.Step


def _fill(cta, q):
    return [Step("expect", ("full", 0), q=q, cta=cta), Step("load", ("full", 0), q=q, cta=cta)]


def test_a_stage_whose_partner_part_holds_another_step_is_a_stale_read():
    """Workgroup 1's producer multicasts step 2's share (stage 0 again with two stages) where step 0's belongs;
    workgroup 0's own part is step 0's. Every run reaches workgroup 0's read with both parts landed."""
    roles = {"workgroup 0 producer": _fill(0, 0), "workgroup 1 producer": _fill(1, 2),
             "workgroup 0 consumer 0": [Step("wait", ("full", 0), 0, cta=0), Step("read", q=0, cta=0)]}
    with pytest.raises(ProtocolHazard, match=r"reads stage 0 for step 0, but it holds steps \[0, 2\]"):
        check_programs(CLUSTER, roles, runs=20)
    roles["workgroup 1 producer"] = _fill(1, 0)  # the same program with the partner's part right is sound
    check_programs(CLUSTER, roles, runs=20)


def test_a_partner_that_drops_its_part_leaves_both_workgroups_waiting():
    """The emitted programs with workgroup 1's load of step 2 left out (its bytes still announced): neither
    workgroup's `full` barrier can complete that phase, which the checker reports as a deadlock."""
    roles = programs(CLUSTER, 4, 2)
    roles["workgroup 1 producer"] = [s for s in roles["workgroup 1 producer"] if (s.kind, s.q) != ("load", 2)]
    with pytest.raises(ProtocolHazard, match="deadlock, .*workgroup 0 consumer"):
        check_programs(CLUSTER, roles, runs=20)


def test_a_partner_loading_over_a_stage_being_read_is_caught():
    """Workgroup 0's consumer reads stage 0 and hands its turn over (the `order` barrier, which orders the runs);
    workgroup 1's producer then refills stage 0 without waiting for its release: its multicast lands in the
    stage workgroup 0 still reads, though no reader of workgroup 1's own copy exists."""
    reader = [Step("wait", ("full", 0), 0, cta=0), Step("read", q=0, cta=0),
              Step("arrive", ("order", 0), count=hopper_protocol.WARPGROUP, cta=0)]
    partner = _fill(1, 0) + [Step("wait", ("order", 0), 0, cta=0)] + _fill(1, 2)
    roles = {"workgroup 0 producer": _fill(0, 0), "workgroup 1 producer": partner, "workgroup 0 consumer 0": reader}
    with pytest.raises(ProtocolHazard, match="workgroup 1 producer loads step 2 into stage 0 while workgroup 0 "
                                             "consumer 0 still reads it"):
        check_programs(CLUSTER, roles, runs=20)
    # sound once the partner waits for the reader's release (the cluster's only reader, so it makes every
    # arrival the `empty` barrier of workgroup 1 expects)
    reader.append(Step("release", ("empty", 0), q=0, count=CLUSTER.empty_arrivals, cta=1))
    partner.insert(len(_fill(1, 0)) + 1, Step("wait", ("empty", 0), 0, cta=1))
    check_programs(CLUSTER, roles, runs=20)
