"""The Hopper kernels' stage hand-off as programs, and a checker that runs them under random interleavings.

`transforms.hopper` emits, per warp-group role, a sequence of mbarrier operations whose phases are computed from
the K step number q: the producer waits for stage `q % stages` to be released (`empty`, parity
`(q // stages + 1) & 1` once q ≥ stages), announces the bytes and starts the TMA loads (`full`); a consumer waits
on `full` with parity `(q // stages) & 1`, reads the stage while its wgmma group runs, and releases it (one arrival
per warp group on the `empty` barrier of every workgroup of its cluster on its block row or column). Ping-pong
consumers also wait for their turn (`order`, parity `(turn - 1 + consumer) & 1`) and hand it over after each tile.
In a cluster of `cluster_m` x `cluster_n` workgroups, each producer's loads land in the stage of every workgroup on
its block row or column of the cluster (`HopperSchedule.partners`: its share of B multicast to its column, of A
to its row) and complete the transaction on each one's `full` barrier; each workgroup's `full` expects all the
parts.
The formulas are `PROTOCOL`'s; tests/unit/test_hopper_protocol.py evaluates the IR the generator writes for every
wait and release and compares it with them.

`programs` writes those sequences for a schedule and a small cluster (tiles × K steps). `check` executes them
with exact mbarrier semantics: arrivals and transaction bytes complete a phase; `try_wait.parity(p)` returns once the
barrier's current phase has parity other than p, so a wait aimed two phases ahead passes at once, as on the
hardware. The TMA unit completes each part of a load in each workgroup at its own random later point. Each run
picks the next step at random among the roles that can move. A `ProtocolHazard` names the run, the role and the
step when:
- a consumer starts reading a stage that does not hold its step's data (stale, or still being loaded);
- a load starts into a stage a consumer is still reading;
- no role can move before all have finished (a deadlock).
Not modelled: the barriers' initialisation and the cluster barrier after it and before exit, and byte counts (a load
is one part). tests/unit/test_hopper_oracles.py runs the emitted program itself on a model cluster, where those,
the bytes and the data each wgmma reads are checked.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import UserError
from .hopper import WARPGROUP, HopperSchedule

# The phase each wait aims at, from the step q (or a ping-pong turn): the generator's arithmetic.
PROTOCOL: dict[str, Callable[..., int]] = {
    "stage": lambda q, stages: q % stages,
    "full_parity": lambda q, stages: (q // stages) & 1,
    "empty_parity": lambda q, stages: (q // stages + 1) & 1,  # the stage's previous use, from q >= stages on
    "order_parity": lambda turn, consumer: (turn - 1 + consumer) & 1,  # consumer 0's turn j waits for phase j-1
}


class ProtocolHazard(UserError, ValueError):
    """A stage hand-off the programs get wrong under some interleaving; one sentence."""


@dataclass(frozen=True)
class Step:
    kind: str  # "wait" | "arrive" | "expect" (arrive + bytes) | "load" | "read" | "release"
    barrier: tuple[str, int] | None = None  # ("full" | "empty" | "order", index)
    parity: int = 0
    q: int = -1  # the K step (load, read, release)
    count: int = 1  # arrivals (a whole warp group arrives as WARPGROUP threads)
    cta: int = 0  # the workgroup of the cluster whose barrier it is (a release arrives in each)


def _role(schedule: HopperSchedule, cta: int, name: str) -> str:
    return name if schedule.cluster_tiles == 1 else f"workgroup {cta} {name}"


def programs(schedule: HopperSchedule, tiles: int, k_steps: int) -> dict[str, list[Step]]:
    """Each role's steps for one cluster with `tiles` tiles of `k_steps` K steps per workgroup (`schedule.kind`
    decides which consumer takes which tile); roles are named by workgroup when the cluster has several."""
    s = schedule.stages
    roles = {}
    for cta in range(schedule.cluster_tiles):
        producer: list[Step] = []
        for q in range(tiles * k_steps):
            stage = PROTOCOL["stage"](q, s)
            if q >= s:
                producer.append(Step("wait", ("empty", stage), PROTOCOL["empty_parity"](q, s), cta=cta))
            producer += [Step("expect", ("full", stage), q=q, cta=cta), Step("load", ("full", stage), q=q, cta=cta)]
        roles[_role(schedule, cta, "producer")] = producer
        for g in range(schedule.consumers):
            roles[_role(schedule, cta, f"consumer {g}")] = _consumer(schedule, cta, g, tiles, k_steps)
    return roles


def _consumer(schedule: HopperSchedule, cta: int, g: int, tiles: int, k_steps: int) -> list[Step]:
    s = schedule.stages
    mine = range(g, tiles, 2) if schedule.kind == "pingpong" else range(tiles)

    def release(q: int) -> list[Step]:  # one arrival on the stage's `empty` in each workgroup whose loads land here
        return [Step("release", ("empty", PROTOCOL["stage"](q, s)), q=q, cta=to) for to in schedule.partners(cta)]

    steps: list[Step] = []
    for i in mine:
        if schedule.kind == "pingpong" and i > 0:
            steps.append(Step("wait", ("order", g), PROTOCOL["order_parity"](i // 2, g), cta=cta))
        for kt in range(k_steps):
            q = i * k_steps + kt
            stage = PROTOCOL["stage"](q, s)
            steps += [Step("wait", ("full", stage), PROTOCOL["full_parity"](q, s), cta=cta), Step("read", q=q, cta=cta)]
            if kt > 0:  # one wgmma group kept in flight: the previous step's stage is released
                steps += release(q - 1)
        steps += release(i * k_steps + k_steps - 1)
        if schedule.kind == "pingpong":
            steps.append(Step("arrive", ("order", 1 - g), count=WARPGROUP, cta=cta))
    return steps


@dataclass
class _Barrier:
    expected: int
    pending: int = 0
    tx: int = 0
    phase: int = 0  # completed phases

    def __post_init__(self):
        self.pending = self.expected

    def arrive(self, count: int) -> None:
        self.pending -= count
        self._complete()

    def _complete(self) -> None:
        if self.pending <= 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected


@dataclass
class _State:
    barriers: dict[tuple[str, int, int], _Barrier]  # (kind, index, workgroup)
    # (workgroup, stage) -> per producer whose loads land there, the K step of the part it holds
    content: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)
    loading: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (workgroup, stage, producer) -> step
    readers: dict[tuple[int, int], set[str]] = field(default_factory=dict)  # (workgroup, stage) -> roles reading


def _barriers(schedule: HopperSchedule) -> dict[tuple[str, int, int], _Barrier]:
    found = {}
    for cta in range(schedule.cluster_tiles):
        for stage in range(schedule.stages):
            found["full", stage, cta] = _Barrier(1)
            found["empty", stage, cta] = _Barrier(schedule.empty_arrivals)
        if schedule.kind == "pingpong":
            for g in range(2):
                found["order", g, cta] = _Barrier(WARPGROUP)
    return found


def _key(step: Step) -> tuple[str, int, int]:
    assert step.barrier is not None
    return (*step.barrier, step.cta)


def run(schedule: HopperSchedule, roles: dict[str, list[Step]], seed: int) -> None:
    """One random interleaving of `roles`; a ProtocolHazard at the first wrong hand-off."""
    rng = random.Random(seed)
    state = _State(_barriers(schedule))
    position = {role: 0 for role in roles}

    def ready(role: str) -> bool:
        steps = roles[role]
        if position[role] == len(steps):
            return False
        step = steps[position[role]]
        return step.kind != "wait" or (state.barriers[_key(step)].phase & 1) != step.parity

    while True:
        movable = [r for r in roles if ready(r)] + (["tma"] if state.loading else [])
        if not movable:
            stuck = [r for r in roles if position[r] < len(roles[r])]
            if stuck:
                raise ProtocolHazard(f"run {seed}: deadlock, {', '.join(stuck)} wait forever "
                                     f"({', '.join(str(roles[r][position[r]]) for r in stuck)}).")
            return
        role = rng.choice(movable)
        if role == "tma":  # a part in flight lands: its stage holds its step, its bytes complete the transaction
            cta, stage, producer = rng.choice(sorted(state.loading))
            state.content.setdefault((cta, stage), {})[producer] = state.loading.pop((cta, stage, producer))
            barrier = state.barriers["full", stage, cta]
            barrier.tx -= 1
            barrier._complete()
            continue
        step = roles[role][position[role]]
        position[role] += 1
        _apply(schedule, state, role, step, seed)


def _apply(schedule: HopperSchedule, state: _State, role: str, step: Step, seed: int) -> None:
    stage = PROTOCOL["stage"](step.q, schedule.stages) if step.q >= 0 else -1
    ctas = schedule.partners(step.cta)  # the workgroups on its block row or column of the cluster
    if step.kind == "expect":  # the bytes of every producer's part
        barrier = state.barriers[_key(step)]
        barrier.tx += len(ctas)
        barrier.arrive(1)
    elif step.kind == "load":  # the producer's part of the stage, into each workgroup on its row or column
        for cta in ctas:
            if state.readers.get((cta, stage)):
                raise ProtocolHazard(f"run {seed}: {role} loads step {step.q} into stage {stage} while "
                                     f"{', '.join(sorted(state.readers[cta, stage]))} still reads it.")
            state.loading[cta, stage, step.cta] = step.q
    elif step.kind == "read":
        held = state.content.get((step.cta, stage), {})
        busy = any((step.cta, stage, p) in state.loading for p in ctas)
        if busy or any(held.get(p) != step.q for p in ctas):
            what = "is still being loaded" if busy else f"holds steps {sorted(held.values())}"
            raise ProtocolHazard(f"run {seed}: {role} reads stage {stage} for step {step.q}, but it {what}.")
        state.readers.setdefault((step.cta, stage), set()).add(role)
    elif step.kind == "release":  # the releasing warp group is done reading its own workgroup's stage
        state.readers.get((_cta_of(role), stage), set()).discard(role)
        state.barriers[_key(step)].arrive(step.count)
    elif step.kind == "arrive":
        state.barriers[_key(step)].arrive(step.count)


def _cta_of(role: str) -> int:
    return int(role.split()[1]) if role.startswith("workgroup ") else 0


def check(schedule: HopperSchedule, tiles: int = 6, k_steps: int = 5, runs: int = 300) -> None:
    """`runs` random interleavings of the schedule's programs for one cluster (one workgroup without one) of
    `tiles` tiles of `k_steps` K steps each; the first hazard found is raised."""
    schedule.check()
    check_programs(schedule, programs(schedule, tiles, k_steps), runs)


def check_programs(schedule: HopperSchedule, roles: dict[str, list[Step]], runs: int = 300) -> None:
    """`runs` random interleavings (seeds 0, 1, ...) of given role programs; the first hazard found is raised."""
    for seed in range(runs):
        run(schedule, roles, seed)


def step_table(schedule: HopperSchedule, tiles: int, k_steps: int) -> list[dict[str, str]]:
    """Per K step (numbered across the workgroup's tiles): what each role does for it, from `programs` (a
    cluster's workgroup 0, whose steps every workgroup of it repeats). The rendering of `pipelines explain` for
    Hopper schedules."""
    roles = programs(schedule, tiles, k_steps)
    per_tile = schedule.block_k // 16 * schedule.m_blocks
    shares = [f"{operand}/{n}" if n > 1 else operand for operand, n in (("A", schedule.cluster_n),
                                                                         ("B", schedule.cluster_m))]
    load = "TMA " + ",".join(shares) + (" (multicast)" if schedule.cluster_tiles > 1 else "")
    rows: list[dict[str, str]] = [{"step": f"tile {q // k_steps} k {q % k_steps}"} for q in range(tiles * k_steps)]
    for role, steps in roles.items():
        if _cta_of(role):  # every workgroup of a cluster runs the same program (coupled by the barriers only)
            continue
        role = role.removeprefix("workgroup 0 ")
        turn = ""
        for step in steps:
            if step.kind == "wait" and step.barrier and step.barrier[0] == "order":
                turn = "turn; "
            if step.q < 0 or step.kind not in ("load", "read"):
                continue
            stage = PROTOCOL["stage"](step.q, schedule.stages)
            if step.kind == "load":
                rows[step.q][role] = f"{load} -> stage {stage}"
            else:
                rows[step.q][role] = f"{turn}wgmma x{per_tile} on stage {stage}"
                turn = ""
    return rows
