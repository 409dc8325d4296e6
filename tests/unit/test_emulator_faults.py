"""Planted faults in real IREE kernels, one at a time, each caught by the emulator and named: every `s_nop`
deleted (a wait-state hazard naming both instructions), every `s_barrier` deleted (an LDS race), every
`s_waitcnt` deleted, i.e. loosened all the way (a register read before its load landed, or an LDS race), and a
buffer descriptor shrunk (a mismatch naming the loads that read past it). A fault that is not caught must be
shown to guard nothing: a barrier with no LDS access after it, a wait in the kernarg prologue the preloading entry
skips. Kernels: IREE's default gfx942 bf16 64x64x64 (4 s_nops, 2 barriers, 12 waits; about 0.1 s per run) and
gfx950 bf16 NT 256x256x256 (7 s_nops: MFMA results and XNACK soft clauses; about 0.3 s per run).
"""

import re
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.emulator import emulate_gemm
from pipelines.emulator.isa import parse_kernel

KERNELS = {"gfx942": ("--target", "gfx942", "--dtype", "bf16", "--shape", "64x64x64"),
           "gfx950": ("--target", "gfx950", "--dtype", "bf16", "--layout", "nt", "--shape", "256x256x256")}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    cache: dict[str, tuple[Path, list[str]]] = {}

    def get(target: str) -> tuple[Path, list[str]]:
        if target not in cache:
            folder = tmp_path_factory.mktemp(target)
            assert main(["compile", *KERNELS[target], "-o", str(folder)]) == 0
            text = next((folder / "dump").glob("*.rocmasm")).read_text()
            assert emulate_gemm(folder).passed
            cache[target] = folder, text.split("\n")
        return cache[target]
    return get


def planted(lines: list[str], pattern: str) -> list[int]:
    return [i for i, line in enumerate(lines) if re.fullmatch(pattern, line)]


def without(lines: list[str], i: int) -> str:
    return "\n".join(lines[:i] + lines[i + 1:])


NAMED_PAIR = re.compile(r"'([^']+)' \(line (\d+)\) then '([^']+)' \(line (\d+)\).* with (\d+) .* requires (\d+)")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_each_deleted_s_nop_is_a_named_wait_state_hazard(kernels, target):
    folder, lines = kernels(target)
    nops = planted(lines, r"\ts_nop \d+")
    assert len(nops) >= 4
    for i in nops:
        result = emulate_gemm(folder, kernel_text=without(lines, i))
        found = [h for h in result.hazards if h.kind == "wait-states"]
        assert found and not result.passed, f"deleting '{lines[i].strip()}' (line {i + 1}) was not caught"
        producer, p_line, consumer, c_line, present, required = NAMED_PAIR.search(found[0].message).groups()
        # the pair straddles the deleted line (numbers are of the edited text: the consumer moved up by one)
        assert int(p_line) <= i < int(c_line) + 1 and int(present) < int(required)
        assert lines[int(p_line) - 1].strip() == producer and lines[int(c_line)].strip() == consumer


def test_each_deleted_barrier_is_a_race_or_guards_nothing(kernels):
    folder, lines = kernels("gfx942")
    kernel = parse_kernel("\n".join(lines))
    barriers = planted(lines, r"\ts_barrier")
    caught = 0
    for i in barriers:
        result = emulate_gemm(folder, kernel_text=without(lines, i))
        pc = next(n for n, inst in enumerate(kernel.instructions) if inst.line == i + 1)
        lds_after = [inst for inst in kernel.instructions[pc + 1:] if inst.opcode.startswith("ds_")]
        branches_back = [inst for inst in kernel.instructions[pc + 1:] if inst.opcode.startswith("s_cbranch")]
        if not lds_after and not branches_back:
            assert result.passed  # no LDS access follows it on any path: it orders nothing
            continue
        race = [h for h in result.hazards if h.kind == "lds-race"]
        assert race and "ds_write" in race[0].message and "ds_read" in race[0].message, result.summary()
        caught += 1
    assert caught >= 1


def test_each_deleted_waitcnt_is_caught_or_never_executed(kernels):
    folder, lines = kernels("gfx942")
    kernel = parse_kernel("\n".join(lines))
    waits = planted(lines, r"\ts_waitcnt .*")
    caught = 0
    for i in waits:
        pc = next(n for n, inst in enumerate(kernel.instructions) if inst.line == i + 1)
        result = emulate_gemm(folder, kernel_text=without(lines, i))
        if pc < kernel.entry:  # the kernarg-loading prologue that preloading firmware skips
            assert result.passed
            continue
        assert not result.passed and result.hazards, f"deleting '{lines[i].strip()}' (line {i + 1}) was not caught"
        hazard = result.hazards[0]
        assert hazard.kind in ("pending-read", "lds-race")
        assert re.search(r"'(ds_|v_|buffer_)\S+ [^']*' \(line \d+\)", hazard.message)
        caught += 1
    assert caught == len(waits) - 1


def test_a_buffer_read_past_num_records_is_named_in_the_mismatch(kernels):
    """Shrink the descriptors of A and B to half their bytes: the loads of the second half read 0."""
    folder, lines = kernels("gfx942")
    text = "\n".join(lines)
    assert text.count("s_movk_i32 s10, 0x2000") == 1  # num_records of both V#s: 64×64 bf16
    result = emulate_gemm(folder, kernel_text=text.replace("s_movk_i32 s10, 0x2000", "s_movk_i32 s10, 0x1000"))
    assert not result.matches and not result.hazards
    named = {r["instruction"] for r in result.out_of_range_reads}
    assert named == {"buffer_load_dwordx4 v[10:13], v20, s[8:11], 0 offen",
                     "buffer_load_dwordx4 v[14:17], v20, s[4:7], 0 offen"}
    assert all(r["lane_reads"] == 256 and r["executions"] == 4 for r in result.out_of_range_reads)
    assert "read past num_records" in result.summary() and "line 33: 'buffer_load_dwordx4 v[10:13]" in result.summary()
    assert not emulate_gemm(folder).out_of_range_reads  # the kernel as compiled reads nothing past its buffers
