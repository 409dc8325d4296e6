"""An independent oracle for the row-softmax kernel of `transforms.softmax`: it executes the emitted MLIR text.

The model. The `func.func` body that `executable` emits is parsed line by line and run op by op, as written, on a
numpy model of one workgroup: every SSA value is an array over the workgroup's lanes (its threads; the count is the
function's `workgroup_size` attribute), `gpu.thread_id x` is the lane index and `hal.interface.workgroup.id[0]` the
workgroup (the row) being run; the workgroups of the export's `count` region run one after the other. `scf.if`
narrows the active lanes (masked-off lanes neither load nor store), and a value defined in a region is gone after it.
Global memory is two byte buffers at distinct, 64-byte (not 128-byte) aligned i64 addresses that
`hal.interface.binding.subspan` + `memref.extract_aligned_pointer_as_index` + `arith.index_cast` hand out; a
16-byte `"llvm.load"`/`"llvm.store"` through an `llvm.inttoptr` address must lie wholly inside the input (loads)
or output (stores) binding and be 16-byte aligned, else a `Fault` names the lane and address (the check is at the
access, not at `llvm.inttoptr`: the kernel forms the address of a vector past the row's end before its guard, which
is harmless). Stores are counted per byte. Shared memory (`memref.alloc` in workgroup space) is modelled at barrier
granularity: a load reads the value stored before the latest `gpu.barrier` (or the lane's own later store); a word
written since the barrier by another lane, a word never written, two lanes writing one word, or a write to a word
another lane read since the barrier is a `Fault`, and so is a barrier or a shuffle reached in divergent control flow.
`gpu.shuffle xor` reads lane `lane ^ offset` of the 32-lane warp. Arithmetic is numpy's in the op's type (f32 rounds
per op; `math.fma` in float64 rounded to f32; `ex2.approx.f32` is 2^x; `arith.truncf` rounds to nearest even, with
`ml_dtypes.bfloat16` for bf16). Any op, or form of an op, the executor does not know raises `Unmodelled`.

The checks, per case (a few rows of seeded normal inputs times 3, for every column count, 16-bit type and max op):
every byte of y is stored exactly once (and nothing outside it, nor to x); y is within 2 ulps of the output type of
the float64 softmax of the 16-bit inputs (relative to max(|ref|, the type's smallest normal)); and metamorphic
relations: a row shifted by a constant gives the same y, a permutation of a row's columns permutes y alike, -inf
entries give exactly 0, and a spike far above the rest does not overflow. Negative tests mutate the emitted text in
small ways that model real bugs and assert that the executor faults or the comparison fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

from transforms.softmax import RowSoftmax, executable

WARP = 32
FLOATS = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32)}
BITS = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32}
INTS = ("i32", "i64", "index")
ULP = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7}  # relative spacing of the type's normal numbers
TINY = {"f16": 2.0 ** -14, "bf16": 2.0 ** -126}  # smallest normal
BASE_X = 0x7F3A_0000_0040  # the bindings' addresses: 64-byte aligned, not 128-byte, far apart
BASE_Y = 0x7F3E_0000_00C0
NAME = r"%[\w]+(?:#\d+)?"


class Fault(Exception):
    """The kernel did something a GPU would not do safely (a bad access, a race, a divergent barrier)."""


class Unmodelled(Exception):
    """The text holds an op, or a form of one, that this oracle does not model (or malformed IR)."""


class Mismatch(AssertionError):
    """The kernel ran, but its output disagrees with the reference or a metamorphic relation."""


# ---------------------------------------------------------------------------------------------------- memory


@dataclass
class Buffer:
    """A binding's bytes at `base`; `readable`/`writable` say which accesses the kernel may make."""

    base: int
    data: np.ndarray
    readable: bool
    writable: bool
    memref: str
    counts: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.counts = np.zeros(self.data.size, np.int64)


def _access(buffers: dict[int, Buffer], addrs: np.ndarray, lanes: np.ndarray, size: int, align: int,
            what: str) -> tuple[Buffer, np.ndarray]:
    """The buffer and byte offsets of a `size`-byte access by `lanes` at `addrs`; faults unless all lie wholly in
    one buffer that allows `what` ("load": readable, "store": writable) and are `align`-aligned."""
    for buffer in buffers.values():
        if (buffer.readable if what == "load" else buffer.writable):
            break
    else:
        raise Fault(f"no binding takes a {what}")
    offsets = addrs - buffer.base
    outside = (offsets < 0) | (offsets + size > buffer.data.size)
    if outside.any():
        k = int(np.argmax(outside))
        others = [n for n, b in buffers.items() if b is not buffer and 0 <= addrs[k] - b.base < b.data.size]
        where = f"inside binding {others[0]}" if others else "inside no binding"
        raise Fault(f"lane {lanes[k]}: {size}-byte {what} at {int(addrs[k]):#x} is outside the "
                    f"{'input' if what == 'load' else 'output'} binding [{buffer.base:#x}, "
                    f"{buffer.base + buffer.data.size:#x}) ({where})")
    misaligned = addrs % align != 0
    if misaligned.any():
        k = int(np.argmax(misaligned))
        raise Fault(f"lane {lanes[k]}: {size}-byte {what} at {int(addrs[k]):#x} is not {align}-byte aligned")
    return buffer, offsets


class Shared:
    """A workgroup-memory array of f32 words, modelled at barrier granularity (see the module docstring)."""

    def __init__(self, words: int, lanes: int) -> None:
        self.words = words
        self.committed = np.full(words, np.nan, np.float32)
        self.valid = np.zeros(words, bool)
        self.writer = np.full(words, -1, np.int64)  # lane that wrote the word since the latest barrier, or -1
        self.pending = np.full(words, np.nan, np.float32)
        self.readers = np.zeros((words, lanes), bool)  # lanes that read the word since the latest barrier

    def _bounds(self, index: np.ndarray, lanes: np.ndarray, ln: int) -> None:
        bad = (index < 0) | (index >= self.words)
        if bad.any():
            k = int(np.argmax(bad))
            raise Fault(f"line {ln}: lane {lanes[k]} accesses shared word {index[k]} of {self.words}")

    def store(self, index: np.ndarray, lanes: np.ndarray, values: np.ndarray, ln: int) -> None:
        self._bounds(index, lanes, ln)
        words, first = np.unique(index, return_index=True)
        if words.size < index.size:
            dup = np.setdiff1d(np.arange(index.size), first)[0]
            raise Fault(f"line {ln}: lanes {lanes[index == index[dup]][:2].tolist()} store shared word "
                        f"{index[dup]} at once (a race)")
        writer = self.writer[index]
        foreign = (writer >= 0) & (writer != lanes)
        if foreign.any():
            k = int(np.argmax(foreign))
            raise Fault(f"line {ln}: lane {lanes[k]} stores shared word {index[k]}, which lane {writer[k]} wrote "
                        "since the latest barrier (a race)")
        readers = self.readers[index].copy()
        readers[np.arange(index.size), lanes] = False
        if readers.any():
            k = int(np.argmax(readers.any(axis=1)))
            raise Fault(f"line {ln}: lane {lanes[k]} stores shared word {index[k]}, which lane "
                        f"{int(np.argmax(readers[k]))} read since the latest barrier (a race)")
        self.writer[index] = lanes
        self.pending[index] = values

    def load(self, index: np.ndarray, lanes: np.ndarray, ln: int) -> np.ndarray:
        self._bounds(index, lanes, ln)
        writer = self.writer[index]
        foreign = (writer >= 0) & (writer != lanes)
        if foreign.any():
            k = int(np.argmax(foreign))
            raise Fault(f"line {ln}: lane {lanes[k]} loads shared word {index[k]}, written by lane {writer[k]} "
                        "after the latest barrier")
        own = writer == lanes
        never = ~own & ~self.valid[index]
        if never.any():
            k = int(np.argmax(never))
            raise Fault(f"line {ln}: lane {lanes[k]} loads shared word {index[k]}, never written before a barrier")
        self.readers[index, lanes] = True
        return np.where(own, self.pending[index], self.committed[index])

    def barrier(self) -> None:
        written = self.writer >= 0
        self.committed[written] = self.pending[written]
        self.valid |= written
        self.writer[:] = -1
        self.readers[:] = False


# ---------------------------------------------------------------------------------------------------- values


def _wrap(v: np.ndarray, ty: str) -> np.ndarray:
    """Two's-complement wrap of int64 lanes to `ty` (i32 kept signed; i64 and index wrap in int64 already)."""
    if ty == "i32":
        return ((v + 2 ** 31) & 0xFFFF_FFFF) - 2 ** 31
    return v.astype(np.int64)


def _unsigned(v: np.ndarray, ty: str) -> np.ndarray:
    return v & 0xFFFF_FFFF if ty == "i32" else v.astype(np.uint64)


def _vector(ty: str) -> tuple[int, str]:
    m = re.fullmatch(r"vector<(\d+)x(f16|bf16|f32)>", ty)
    if m is None:
        raise Unmodelled(f"not a modelled vector type: {ty}")
    return int(m.group(1)), m.group(2)


def _poison(ty: str, n: int) -> np.ndarray:
    """The value of a lane that did not compute one (NaN or 0)."""
    if ty in FLOATS:
        return np.full(n, np.nan, FLOATS[ty])
    if ty.startswith("vector<"):
        count, elem = _vector(ty)
        return np.full((n, count), np.nan, FLOATS[elem])
    if ty == "i1":
        return np.zeros(n, bool)
    return np.zeros(n, np.int64)


class Workgroup:
    """The state of one workgroup while it runs: SSA values (type, lanes array), the active mask, shared arrays."""

    def __init__(self, threads: int, wid: int, buffers: dict[int, Buffer]) -> None:
        self.n = threads
        self.lanes = np.arange(threads)
        self.wid = wid
        self.buffers = buffers
        self.env: dict[str, tuple[str, object]] = {}
        self.scopes: list[list[str]] = [[]]
        self.active = np.ones(threads, bool)
        self.shared: list[Shared] = []

    def get(self, name: str, ty: str | None = None):
        if name not in self.env:
            raise Unmodelled(f"use of {name}, not defined here")
        vty, value = self.env[name]
        if ty is not None and vty != ty:
            raise Unmodelled(f"{name} is {vty}, used as {ty}")
        return value

    def type_of(self, name: str) -> str:
        self.get(name)
        return self.env[name][0]

    def set(self, name: str, ty: str, value) -> None:
        if name in self.env:
            raise Unmodelled(f"{name} defined twice")
        self.env[name] = (ty, value)
        self.scopes[-1].append(name)

    def uniform(self, name: str, ty: str, ln: int) -> int:
        """The value of `name`, which the active lanes must agree on."""
        values = np.unique(self.get(name, ty)[self.active])
        if values.size != 1:
            raise Fault(f"line {ln}: {name} is not uniform over the active lanes ({values[:4].tolist()})")
        return int(values[0])

    def converged(self, what: str, ln: int) -> None:
        """Every warp with an active lane is wholly active (shuffles of a full warp)."""
        warps = self.active.reshape(-1, WARP)
        partial = warps.any(axis=1) & ~warps.all(axis=1)
        if partial.any():
            raise Fault(f"line {ln}: {what} in warp {int(np.argmax(partial))} with only "
                        f"{int(warps[np.argmax(partial)].sum())} of {WARP} lanes active")


# ---------------------------------------------------------------------------------------------------- ops

Run = Callable[[Workgroup], None]


def _match(pattern: str, rest: str, s: str, ln: int) -> re.Match:
    m = re.fullmatch(pattern, rest)
    if m is None:
        raise Unmodelled(f"line {ln}: unmodelled form: {s}")
    return m


def _constant(ln, s, res, rest) -> Run:
    value, ty = _match(r" (-?[0-9a-fA-Fx.e+-]+) : (\w+)", rest, s, ln).groups()
    if ty in INTS:
        scalar = int(_wrap(np.array([int(value, 0)], np.int64), ty)[0])
        dtype = np.dtype(np.int64)
    elif ty in FLOATS:
        dtype = FLOATS[ty]
        if value.lower().startswith("0x"):
            bits = int(value, 16)
            if bits >= 2 ** (8 * dtype.itemsize):
                raise Unmodelled(f"line {ln}: {value} is too wide for {ty}")
            scalar = np.array([bits], BITS[ty]).view(dtype)[0]
        else:
            scalar = dtype.type(float(value))
    else:
        raise Unmodelled(f"line {ln}: constant of type {ty}")
    return lambda wg: wg.set(res, ty, np.full(wg.n, scalar, dtype))


def _udiv(a, b, ty, rem):
    ua, ub = _unsigned(a, ty), _unsigned(b, ty)
    ub = np.where(ub == 0, 1, ub).astype(ub.dtype)
    return (ua % ub if rem else ua // ub).astype(np.int64)


INT_BINARY = {
    "arith.addi": lambda a, b, ty: a + b,
    "arith.subi": lambda a, b, ty: a - b,
    "arith.muli": lambda a, b, ty: a * b,
    "arith.andi": lambda a, b, ty: a & b,
    "arith.divui": lambda a, b, ty: _udiv(a, b, ty, False),
    "arith.remui": lambda a, b, ty: _udiv(a, b, ty, True),
}
FLOAT_BINARY = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
    "arith.maximumf": np.maximum,  # NaN propagates
    "arith.maxnumf": np.fmax,  # NaN ignored
}
PREDICATES = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def _int_binary(ln, s, res, rest, op) -> Run:
    a, b, ty = _match(rf" ({NAME}), ({NAME}) : (\w+)", rest, s, ln).groups()
    if ty not in INTS:
        raise Unmodelled(f"line {ln}: {op} on {ty}")
    f = INT_BINARY[op]

    def run(wg):
        x, y = wg.get(a, ty), wg.get(b, ty)
        if op in ("arith.divui", "arith.remui") and (_unsigned(y, ty)[wg.active] == 0).any():
            raise Fault(f"line {ln}: division by zero")
        wg.set(res, ty, _wrap(f(x, y, ty), ty))
    return run


def _float_binary(ln, s, res, rest, op) -> Run:
    a, b, ty = _match(rf" ({NAME}), ({NAME}) : (\w+)", rest, s, ln).groups()
    if ty != "f32":
        raise Unmodelled(f"line {ln}: {op} on {ty}")
    f = FLOAT_BINARY[op]
    return lambda wg: wg.set(res, ty, f(wg.get(a, ty), wg.get(b, ty)).astype(np.float32))


def _negf(ln, s, res, rest) -> Run:
    a, ty = _match(rf" ({NAME}) : (f32)", rest, s, ln).groups()
    return lambda wg: wg.set(res, ty, -wg.get(a, ty))


def _fma(ln, s, res, rest) -> Run:
    a, b, c = _match(rf" ({NAME}), ({NAME}), ({NAME}) : f32", rest, s, ln).groups()

    def run(wg):
        x, y, z = (wg.get(v, "f32").astype(np.float64) for v in (a, b, c))
        wg.set(res, "f32", (x * y + z).astype(np.float32))
    return run


def _cmpi(ln, s, res, rest) -> Run:
    pred, a, b, ty = _match(rf" (\w+), ({NAME}), ({NAME}) : (\w+)", rest, s, ln).groups()
    if pred not in PREDICATES or ty not in INTS:
        raise Unmodelled(f"line {ln}: {s}")
    f, unsigned = PREDICATES[pred], pred.startswith("u")

    def run(wg):
        x, y = wg.get(a, ty), wg.get(b, ty)
        if unsigned:
            x, y = _unsigned(x, ty), _unsigned(y, ty)
        wg.set(res, "i1", f(x, y))
    return run


def _index_cast(ln, s, res, rest) -> Run:
    a, src, dst = _match(rf" ({NAME}) : (\w+) to (\w+)", rest, s, ln).groups()
    if src not in INTS or dst not in INTS or "index" not in (src, dst):
        raise Unmodelled(f"line {ln}: {s}")
    return lambda wg: wg.set(res, dst, _wrap(wg.get(a, src), dst))


def _extui(ln, s, res, rest) -> Run:
    a, src, dst = _match(rf" ({NAME}) : (i32) to (i64)", rest, s, ln).groups()
    return lambda wg: wg.set(res, dst, _unsigned(wg.get(a, src), src).astype(np.int64))


def _extf(ln, s, res, rest) -> Run:
    a, src = _match(rf" ({NAME}) : (f16|bf16) to f32", rest, s, ln).groups()
    return lambda wg: wg.set(res, "f32", wg.get(a, src).astype(np.float32))


def _truncf(ln, s, res, rest) -> Run:
    a, dst = _match(rf" ({NAME}) : f32 to (f16|bf16)", rest, s, ln).groups()
    return lambda wg: wg.set(res, dst, wg.get(a, "f32").astype(FLOATS[dst]))  # round to nearest even


def _ex2(ln, s, res, rest) -> Run:
    (a,) = _match(rf' asm_dialect = att "ex2\.approx\.f32 \$0, \$1;", "=f,f" ({NAME}) : \(f32\) -> f32', rest, s,
                  ln).groups()
    return lambda wg: wg.set(res, "f32", np.exp2(wg.get(a, "f32").astype(np.float64)).astype(np.float32))


def _extract(ln, s, res, rest) -> Run:
    a, index, elem, vty = _match(rf" ({NAME})\[(\d+)\] : (\w+) from (vector<\w+>)", rest, s, ln).groups()
    count, velem = _vector(vty)
    if velem != elem or int(index) >= count:
        raise Unmodelled(f"line {ln}: {s}")
    i = int(index)
    return lambda wg: wg.set(res, elem, wg.get(a, vty)[:, i].copy())


def _broadcast(ln, s, res, rest) -> Run:
    a, elem, vty = _match(rf" ({NAME}) : (\w+) to (vector<\w+>)", rest, s, ln).groups()
    count, velem = _vector(vty)
    if velem != elem:
        raise Unmodelled(f"line {ln}: {s}")
    return lambda wg: wg.set(res, vty, np.repeat(wg.get(a, elem)[:, None], count, axis=1))


def _from_elements(ln, s, res, rest) -> Run:
    names, vty = _match(rf" ((?:{NAME}, )*{NAME}) : (vector<\w+>)", rest, s, ln).groups()
    names = names.split(", ")
    count, elem = _vector(vty)
    if len(names) != count:
        raise Unmodelled(f"line {ln}: {len(names)} elements for {vty}")
    return lambda wg: wg.set(res, vty, np.stack([wg.get(n, elem) for n in names], axis=1))


def _thread_id(ln, s, res, rest) -> Run:
    _match(" x", rest, s, ln)
    return lambda wg: wg.set(res, "index", wg.lanes.astype(np.int64))


def _workgroup_id(ln, s, res, rest) -> Run:
    _match(r"\[0\] : index", rest, s, ln)
    return lambda wg: wg.set(res, "index", np.full(wg.n, wg.wid, np.int64))


def _subspan(ln, s, res, rest) -> Run:
    m = _match(rf" layout\(.*\) binding\((\d+)\) alignment\((\d+)\) offset\(({NAME})\)( flags\(ReadOnly\))? : "
               r"(memref<[^>]*<storage_buffer>>)", rest, s, ln)
    index, align, offset, read_only, mty = int(m.group(1)), int(m.group(2)), m.group(3), bool(m.group(4)), m.group(5)

    def run(wg):
        if index not in wg.buffers:
            raise Fault(f"line {ln}: binding {index} is not bound")
        buffer = wg.buffers[index]
        if mty != buffer.memref:
            raise Fault(f"line {ln}: binding {index} declared as {mty}, the buffer is {buffer.memref}")
        if read_only != (not buffer.writable):
            raise Fault(f"line {ln}: binding {index}'s ReadOnly flag does not match its use")
        address = buffer.base + wg.uniform(offset, "index", ln)
        if address % align:
            raise Fault(f"line {ln}: binding {index} at {address:#x} is not {align}-byte aligned")
        wg.set(res, mty, np.full(wg.n, address, np.int64))
    return run


def _aligned_pointer(ln, s, res, rest) -> Run:
    a, mty = _match(rf" ({NAME}) : (memref<[^>]*<storage_buffer>>) -> index", rest, s, ln).groups()
    return lambda wg: wg.set(res, "index", wg.get(a, mty).copy())


def _inttoptr(ln, s, res, rest) -> Run:
    (a,) = _match(rf" ({NAME}) : i64 to !llvm\.ptr<1>", rest, s, ln).groups()
    return lambda wg: wg.set(res, "!llvm.ptr<1>", wg.get(a, "i64").copy())  # checked where it is dereferenced


def _load(ln, s, res, rest) -> Run:
    p, align, vty = _match(rf"\(({NAME})\) <\{{alignment = (\d+) : i64, ordering = 0 : i64\}}> : "
                           r"\(!llvm\.ptr<1>\) -> (vector<8x(?:f16|bf16)>)", rest, s, ln).groups()
    count, elem = _vector(vty)
    size = count * FLOATS[elem].itemsize
    if int(align) != size:
        raise Unmodelled(f"line {ln}: a {size}-byte load with alignment {align}")

    def run(wg):
        out = _poison(vty, wg.n)
        lanes = wg.lanes[wg.active]
        if lanes.size:
            addrs = wg.get(p, "!llvm.ptr<1>")[lanes]
            buffer, offsets = _access(wg.buffers, addrs, lanes, size, size, "load")
            raw = buffer.data[offsets[:, None] + np.arange(size)]
            out[lanes] = np.ascontiguousarray(raw).view(FLOATS[elem]).reshape(-1, count)
        wg.set(res, vty, out)
    return run


def _store(ln, s, res, rest) -> Run:
    v, p, align, vty = _match(rf"\(({NAME}), ({NAME})\) <\{{alignment = (\d+) : i64, ordering = 0 : i64\}}> : "
                              r"\((vector<8x(?:f16|bf16)>), !llvm\.ptr<1>\) -> \(\)", rest, s, ln).groups()
    count, elem = _vector(vty)
    size = count * FLOATS[elem].itemsize
    if int(align) != size:
        raise Unmodelled(f"line {ln}: a {size}-byte store with alignment {align}")

    def run(wg):
        lanes = wg.lanes[wg.active]
        if not lanes.size:
            return
        addrs, values = wg.get(p, "!llvm.ptr<1>")[lanes], wg.get(v, vty)[lanes]
        buffer, offsets = _access(wg.buffers, addrs, lanes, size, size, "store")
        where = (offsets[:, None] + np.arange(size)).ravel()
        buffer.data[where] = np.ascontiguousarray(values.astype(FLOATS[elem])).view(np.uint8).ravel()
        np.add.at(buffer.counts, where, 1)
    return run


def _shuffle(ln, s, res, rest) -> Run:
    a, offset, width = _match(rf" xor ({NAME}), ({NAME}), ({NAME}) : f32", rest, s, ln).groups()

    def run(wg):
        wg.converged("gpu.shuffle", ln)
        off, w = wg.uniform(offset, "i32", ln), wg.uniform(width, "i32", ln)
        if w != WARP or not 0 <= off < WARP:
            raise Unmodelled(f"line {ln}: a shuffle of width {w}, offset {off}")
        lane = wg.lanes % WARP
        source = wg.lanes - lane + (lane ^ off)
        wg.set(res + "#0", "f32", wg.get(a, "f32")[source])
        wg.set(res + "#1", "i1", np.ones(wg.n, bool))
    return run


def _alloc(ln, s, res, rest) -> Run:
    mty, words = _match(r"\(\) : (memref<(\d+)xf32, #gpu\.address_space<workgroup>>)", rest, s, ln).groups()

    def run(wg):
        if not wg.active.all():
            raise Fault(f"line {ln}: memref.alloc in divergent control flow")
        shared = Shared(int(words), wg.n)
        wg.shared.append(shared)
        wg.set(res, mty, shared)
    return run


def _shared_store(ln, s, res, rest) -> Run:
    v, m, i, mty = _match(rf" ({NAME}), ({NAME})\[({NAME})\] : (memref<\d+xf32, #gpu\.address_space<workgroup>>)",
                          rest, s, ln).groups()

    def run(wg):
        lanes = wg.lanes[wg.active]
        if lanes.size:
            wg.get(m, mty).store(wg.get(i, "index")[lanes], lanes, wg.get(v, "f32")[lanes], ln)
    return run


def _shared_load(ln, s, res, rest) -> Run:
    m, i, mty = _match(rf" ({NAME})\[({NAME})\] : (memref<\d+xf32, #gpu\.address_space<workgroup>>)",
                       rest, s, ln).groups()

    def run(wg):
        out = _poison("f32", wg.n)
        lanes = wg.lanes[wg.active]
        if lanes.size:
            out[lanes] = wg.get(m, mty).load(wg.get(i, "index")[lanes], lanes, ln)
        wg.set(res, "f32", out)
    return run


def _barrier(ln, s, res, rest) -> Run:
    _match("", rest, s, ln)

    def run(wg):
        if not wg.active.all():
            raise Fault(f"line {ln}: gpu.barrier reached by {int(wg.active.sum())} of {wg.n} lanes (divergent "
                        "control flow)")
        for shared in wg.shared:
            shared.barrier()
    return run


HANDLERS: dict[str, Callable[..., Run]] = {
    "arith.constant": _constant, "arith.cmpi": _cmpi, "arith.index_cast": _index_cast, "arith.extui": _extui,
    "arith.extf": _extf, "arith.truncf": _truncf, "arith.negf": _negf, "math.fma": _fma,
    "llvm.inline_asm": _ex2, "vector.extract": _extract, "vector.broadcast": _broadcast,
    "vector.from_elements": _from_elements, "gpu.thread_id": _thread_id,
    "hal.interface.workgroup.id": _workgroup_id, "hal.interface.binding.subspan": _subspan,
    "memref.extract_aligned_pointer_as_index": _aligned_pointer, "llvm.inttoptr": _inttoptr,
    '"llvm.load"': _load, '"llvm.store"': _store, "gpu.shuffle": _shuffle, "memref.alloc": _alloc,
    "memref.store": _shared_store, "memref.load": _shared_load, "gpu.barrier": _barrier,
}
HANDLERS.update({op: (lambda op: lambda *a: _int_binary(*a, op))(op) for op in INT_BINARY})
HANDLERS.update({op: (lambda op: lambda *a: _float_binary(*a, op))(op) for op in FLOAT_BINARY})
NO_RESULT = {'"llvm.store"', "memref.store", "gpu.barrier"}


# ---------------------------------------------------------------------------------------------------- structure


@dataclass
class Op:
    """A plain op: its line and its compiled step."""

    line: int
    run: Run


@dataclass
class If:
    """`scf.if`: a condition, result names and types, and its regions (each ends in its yielded names)."""

    line: int
    cond: str
    results: list[str]
    types: list[str]
    then: list
    then_yield: list[str]
    other: list | None
    other_yield: list[str]

    def run(self, wg: Workgroup) -> None:
        cond, outer = wg.get(self.cond, "i1"), wg.active
        merged = [_poison(ty, wg.n) for ty in self.types]
        for ops, names, mask in ((self.then, self.then_yield, outer & cond), (self.other, self.other_yield,
                                                                              outer & ~cond)):
            if ops is None or not mask.any():
                continue
            wg.active = mask
            wg.scopes.append([])
            try:
                _run_block(ops, wg)
                for i, (name, ty) in enumerate(zip(names, self.types)):
                    value = wg.get(name, ty)
                    merged[i] = np.where(mask.reshape(-1, *[1] * (value.ndim - 1)), value, merged[i])
            finally:
                for name in wg.scopes.pop():
                    del wg.env[name]
                wg.active = outer
        for name, ty, value in zip(self.results, self.types, merged):
            wg.set(name, ty, value)


def _run_block(ops: list, wg: Workgroup) -> None:
    for op in ops:
        op.run(wg)


IF = re.compile(r"(?:(%\w+)(?::(\d+))? = )?scf\.if (%\w+)(?: -> \(([^)]*)\))? \{")
YIELD = re.compile(rf"scf\.yield(?: ((?:{NAME}, )*{NAME}) : (.*))?")
LINE = re.compile(r"(?:(%\w+)(?::(\d+))? = )?(\"[\w.]+\"|[\w.]+)(.*)")


def _compile(ln: int, s: str) -> Op:
    m = LINE.fullmatch(s)
    if m is None:
        raise Unmodelled(f"line {ln}: cannot parse: {s}")
    res, nres, name, rest = m.groups()
    if name not in HANDLERS:
        raise Unmodelled(f"line {ln}: unmodelled op {name}: {s}")
    if (nres is not None) != (name == "gpu.shuffle") or (nres is not None and nres != "2"):
        raise Unmodelled(f"line {ln}: unexpected result count: {s}")
    if (res is None) != (name in NO_RESULT):
        raise Unmodelled(f"line {ln}: unexpected results: {s}")
    return Op(ln, HANDLERS[name](ln, s, res, rest))


def _block(lines: list[tuple[int, str]], pos: int, top: bool) -> tuple[list, list[str], int, str]:
    """Ops of the block starting at `pos`, its yielded names, the position of its closing line and that line."""
    ops: list = []
    yielded: list[str] = []
    while pos < len(lines):
        ln, s = lines[pos]
        if s == "return" or s in ("}", "} else {"):
            if (s == "return") != top:
                raise Unmodelled(f"line {ln}: unexpected {s}")
            return ops, yielded, pos, s
        if yielded:
            raise Unmodelled(f"line {ln}: an op after scf.yield")
        if (y := YIELD.fullmatch(s)) is not None:
            if top:
                raise Unmodelled(f"line {ln}: scf.yield outside scf.if")
            yielded = y.group(1).split(", ") if y.group(1) else ["<none>"]
            pos += 1
            continue
        if (m := IF.fullmatch(s)) is not None:
            res, nres, cond, types = m.groups()
            types = types.split(", ") if types else []
            if len(types) != (int(nres) if nres else 1 if res else 0):
                raise Unmodelled(f"line {ln}: scf.if result count: {s}")
            names = [f"{res}#{i}" for i in range(len(types))] if nres else [res] * bool(res)
            then, then_y, pos, close = _block(lines, pos + 1, False)
            other, other_y = None, []
            if close == "} else {":
                other, other_y, pos, close = _block(lines, pos + 1, False)
            if close != "}":
                raise Unmodelled(f"line {ln}: scf.if not closed")
            if types and (other is None or len(then_y) != len(types) or len(other_y) != len(types)):
                raise Unmodelled(f"line {ln}: scf.if regions do not yield its {len(types)} result(s)")
            if not types and (then_y not in ([], ["<none>"]) or other_y not in ([], ["<none>"])):
                raise Unmodelled(f"line {ln}: scf.if without results yields values")
            ops.append(If(ln, cond, names, types, then, then_y, other, other_y))
            pos += 1
            continue
        ops.append(_compile(ln, s))
        pos += 1
    raise Unmodelled("the function body does not end in return")


@dataclass
class Kernel:
    """A parsed kernel: its workgroup size, grid and body."""

    threads: int
    grid: tuple[int, int, int]
    body: list

    def run(self, buffers: dict[int, Buffer], wid: int) -> None:
        wg = Workgroup(self.threads, wid, buffers)
        with np.errstate(all="ignore"):
            _run_block(self.body, wg)


def parse(text: str, entry: str) -> Kernel:
    """The kernel `entry` of a `hal.executable.source`'s text: its export's grid and its function."""
    export = re.search(rf"hal\.executable\.export public @{entry} ordinal\(0\) layout\(.*\) count\(%device: "
                       r"!hal\.device\) -> \(index, index, index\) \{\n(.*?)\n\s*\}\n", text, re.S)
    if export is None:
        raise Unmodelled(f"no export @{entry}")
    consts: dict[str, int] = {}
    grid = None
    for line in export.group(1).splitlines():
        line = line.strip()
        if m := re.fullmatch(r"(%\w+) = arith\.constant (\d+) : index", line):
            consts[m.group(1)] = int(m.group(2))
        elif m := re.fullmatch(r"hal\.return (%\w+), (%\w+), (%\w+) : index, index, index", line):
            grid = tuple(consts[n] for n in m.groups())
        else:
            raise Unmodelled(f"unmodelled count region line: {line}")
    header = re.search(rf"func\.func @{entry}\(\) attributes \{{translation_info = #iree_codegen\.translation_info<"
                       r"pipeline = #iree_codegen\.no_pipeline workgroup_size = \[(\d+), 1, 1\] "
                       r"subgroup_size = (\d+)>\} \{\n", text)
    if header is None or grid is None:
        raise Unmodelled(f"no function @{entry} of the modelled form")
    threads, subgroup = int(header.group(1)), int(header.group(2))
    if subgroup != WARP or threads % WARP or not 0 < threads <= 1024:
        raise Unmodelled(f"workgroup of {threads} threads, subgroups of {subgroup}")
    start = text[:header.end()].count("\n") + 1
    lines = [(start + i + 1, line.strip()) for i, line in enumerate(text[header.end():].splitlines())]
    body, _, pos, _ = _block(lines, 0, True)
    if pos + 1 >= len(lines) or lines[pos + 1][1] != "}":
        raise Unmodelled("the function does not close after return")
    return Kernel(threads, grid, body)


# ---------------------------------------------------------------------------------------------------- harness


def launch(text: str, entry: str, x: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Runs every workgroup of the kernel on input `x` (rows × cols of `dtype`); (y, store count per byte of y)."""
    kernel = parse(text, entry)
    rows, cols = x.shape
    if kernel.grid != (rows, 1, 1):
        raise Mismatch(f"grid {kernel.grid}, expected one workgroup per row: ({rows}, 1, 1)")
    memref = f"memref<{rows}x{cols}x{dtype}, #hal.descriptor_type<storage_buffer>>"
    xb = np.ascontiguousarray(x.astype(FLOATS[dtype])).view(np.uint8).ravel().copy()
    buffers = {0: Buffer(BASE_X, xb, True, False, memref),
               1: Buffer(BASE_Y, np.full(xb.size, 0xFF, np.uint8), False, True, memref)}  # unwritten y: NaN
    for wid in range(kernel.grid[0]):
        kernel.run(buffers, wid)
    if not np.array_equal(buffers[0].data, xb):
        raise Mismatch("the input changed")
    return buffers[1].data.view(FLOATS[dtype]).reshape(rows, cols), buffers[1].counts.reshape(rows, cols, -1)


def reference(x: np.ndarray) -> np.ndarray:
    """The float64 softmax of each row of the 16-bit `x`."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def assert_close(y: np.ndarray, ref: np.ndarray, dtype: str, what: str) -> None:
    """|y - ref| <= 2 ulps of `dtype` relative to max(|ref|, the smallest normal); NaN only where ref is NaN."""
    y, ref = y.astype(np.float64), np.asarray(ref, np.float64)
    tol = 2 * ULP[dtype] * np.maximum(np.abs(ref), TINY[dtype])
    with np.errstate(invalid="ignore"):
        bad = np.where(np.isnan(ref), ~np.isnan(y), ~(np.abs(y - ref) <= tol))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Mismatch(f"{what}: {int(bad.sum())} element(s) off, first at {at}: {y[at]!r} vs {ref[at]!r} "
                       f"(tolerance {tol[at]:.3g})")


SPIKE = 120.0  # far above the rest: exp(SPIKE - m) overflows f32 unless m is the true max


def inputs(cols: int, dtype: str, seed: int) -> tuple[np.ndarray, dict]:
    """Six rows: random; random on a 1/8 grid; the same shifted by 8 (exact); the first permuted; the first with
    -inf holes; the first with a spike. Returns them in `dtype` and what the relations need."""
    rng = np.random.default_rng(seed)
    dt = FLOATS[dtype]
    base = (3 * rng.standard_normal(cols)).astype(dt)
    grid = np.clip(np.round(24 * rng.standard_normal(cols)) / 8, -15, 15)
    shifted = grid + 8
    assert np.array_equal(shifted.astype(dt).astype(np.float64), shifted)  # exact in either type
    perm = rng.permutation(cols)
    holes = rng.choice(cols, size=max(2, cols // 16), replace=False)
    with_holes = base.copy()
    with_holes[holes] = -np.inf
    spiked = base.copy()
    spike = min(163, cols - 1)  # column 163 sits in the upper half of a warp under the docstring's layout
    spiked[spike] = SPIKE
    x = np.stack([base, grid.astype(dt), shifted.astype(dt), base[perm], with_holes, spiked])
    return x, {"perm": perm, "holes": holes, "spike": spike}


def check_case(text: str, entry: str, cols: int, dtype: str, seed: int = 0) -> None:
    """Runs the kernel text on `inputs` and checks it (raises Fault, Unmodelled or Mismatch)."""
    x, meta = inputs(cols, dtype, seed)
    y, counts = launch(text, entry, x, dtype)
    if (counts != 1).any():
        i, j, b = (int(v) for v in np.argwhere(counts != 1)[0])
        raise Mismatch(f"byte {b} of y[{i}, {j}] stored {counts[i, j, b]} times ({int((counts != 1).sum())} bytes "
                       "not stored exactly once)")
    assert_close(y, reference(x), dtype, "y against the float64 softmax")
    assert_close(y[2], y[1].astype(np.float64), dtype, "shifted row against the unshifted one")
    assert_close(y[3], y[0][meta["perm"]].astype(np.float64), dtype, "permuted row against the permuted y")
    if (y[4][meta["holes"]] != 0).any():
        raise Mismatch("-inf entries do not give 0")
    if not y[5][meta["spike"]] > 0.99:
        raise Mismatch(f"spike gives {y[5][meta['spike']]!r}, not 1")


# ---------------------------------------------------------------------------------------------------- tests

COLS = [8, 1000, 2048, 2056, 4104, 8192, 16384]


def emit(rows: int, cols: int, dtype: str, max_op: str = "arith.maximumf") -> str:
    """The generator's executable text for a rows × cols softmax."""
    return executable(RowSoftmax(rows, cols, dtype, max_op), "softmax_exe", "softmax_kernel")


@pytest.mark.parametrize("max_op", ["arith.maximumf", "arith.maxnumf"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("cols", COLS)
def test_kernel_matches_float64_softmax(cols, dtype, max_op):
    """The emitted kernel, executed op by op, stores every element once and matches the float64 softmax."""
    check_case(emit(6, cols, dtype, max_op), "softmax_kernel", cols, dtype, seed=cols)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_rows_of_large_magnitude_keep_their_softmax(dtype):
    """Rows near the type's range's ends (a bf16 row of 1e10s, a row masked with the type's minimum, a 1e38 spike):
    the kernel must shift by the max before scaling, as the model's x - m does (m·log2 e rounded to f32 is off by
    more than 1 from |m| ≈ 2^24 on)."""
    lowest = float(ml_dtypes.finfo(FLOATS[dtype]).min)
    top = 1e38 if dtype == "bf16" else 6e4
    big = -1e10 if dtype == "bf16" else -6e4
    rows = np.array([[lowest] * 16, [big] * 16, [top, 0.9 * top] + [1.0] * 14,
                     [lowest] * 8 + [0.0] * 8, [-big, -big] + [big] * 14], dtype=np.float64)
    x = rows.astype(FLOATS[dtype])
    y, counts = launch(emit(len(rows), 16, dtype), "softmax_kernel", x, dtype)
    assert (counts == 1).all()
    assert_close(y, reference(x), dtype, f"{dtype} rows of large magnitude")


def test_oracle_rejects_unknown_ops():
    """An op the executor does not model raises rather than being skipped."""
    text = emit(6, 8, "f16")
    text = text.replace("gpu.barrier", "gpu.barrier\n        %zz = arith.frobnicatef %c1, %c1 : f32", 1)
    with pytest.raises(Unmodelled, match="frobnicatef"):
        check_case(text, "softmax_kernel", 8, "f16")


def _const(text: str, value: str, ty: str) -> str:
    """The SSA name of the head constant `value : ty`."""
    return re.search(rf"(%c\d+) = arith\.constant {value} : {ty}\n", text).group(1)


def _edit_line(text: str, needle: str, index: int, old: str, new: str) -> str:
    """Replaces `old` by `new` in the `index`-th line that matches regex `needle`."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if re.search(needle, line)]
    assert old in lines[hits[index]], (old, lines[hits[index]])
    lines[hits[index]] = lines[hits[index]].replace(old, new)
    return "\n".join(lines)


def _y_pointer(text: str) -> tuple[str, str]:
    """(i64 address of x, i64 address of y) as the text names them."""
    names = []
    for binding in (0, 1):
        memref = re.search(rf"(%\w+) = hal\.interface\.binding\.subspan .* binding\({binding}\)", text).group(1)
        index = re.search(rf"(%\w+) = memref\.extract_aligned_pointer_as_index {memref} ", text).group(1)
        names.append(re.search(rf"(%\w+) = arith\.index_cast {index} : index to i64", text).group(1))
    return names[0], names[1]


def _shared_names(text: str) -> tuple[str, str]:
    """The two shared arrays' names (the max's, the sum's)."""
    first, second = re.findall(r"(%\w+) = memref\.alloc\(\)", text)
    return first, second


def _thread_not_lane(text: str) -> str:
    """The per-warp writer test compares the thread id, not the lane, with 0."""
    lane, tid = re.search(r"(%\w+) = arith\.remui (%\w+), ", text).groups()
    return text.replace(f"arith.cmpi eq, {lane}, ", f"arith.cmpi eq, {tid}, ")


def _barrier_into_if(text: str) -> str:
    lines = text.split("\n")
    i = next(i for i, line in enumerate(lines) if line.strip() == "gpu.barrier")
    assert lines[i - 1].strip() == "}"
    lines[i - 1], lines[i] = "          gpu.barrier", "        }"
    return "\n".join(lines)


MUTATIONS = {
    # the sum's butterfly skips the 16-lane exchange (offset 16 replaced by 8): each warp sums half its lanes
    "sum_shuffle_offset": (2056, lambda t: _edit_line(t, "gpu.shuffle xor", 5, f", {_const(t, 16, 'i32')}, ",
                                                      f", {_const(t, 8, 'i32')}, "), Mismatch, "float64"),
    # the max's butterfly skips the 16-lane exchange: the max misses the spike and its exponential overflows
    "max_shuffle_offset": (2048, lambda t: _edit_line(t, "gpu.shuffle xor", 0, f", {_const(t, 16, 'i32')}, ",
                                                      f", {_const(t, 8, 'i32')}, "), Mismatch, "float64"),
    # no barrier between the per-warp partials' stores and their loads
    "no_barrier": (2056, lambda t: t.replace("        gpu.barrier\n", "", 1), Fault, "after the latest barrier"),
    # the barrier moved into the lane-0 branch (only some lanes reach it)
    "barrier_in_branch": (2056, _barrier_into_if, Fault, "divergent"),
    # the last round's guard lets the vector starting at the row's end through (off by one vector)
    "guard_ule": (2056, lambda t: t.replace("arith.cmpi ult,", "arith.cmpi ule,"), Fault, "outside the input"),
    # the column of a vector is 4 (not 8) elements per thread: vectors overlap and are misaligned
    "column_multiplier": (2056, lambda t: re.sub(rf"(arith\.muli %\w+, ){_const(t, 8, 'i32')}( : i32)",
                                                 rf"\g<1>{_const(t, 4, 'i32')}\g<2>", t), Fault, "not 16-byte"),
    # the row stride is one vector short: rows overlap and the last vector of the last row is never stored
    "row_stride": (2056, lambda t: t.replace(f"arith.constant {2 * 2056} : i64", f"arith.constant {2 * 2048} : i64"),
                   Mismatch, "stored (0|2) times"),
    # the second round starts 128 vectors in instead of 256 (threads × vector): overlapping stores
    "round_stride": (2056, lambda t: t.replace("arith.constant 256 : i32", "arith.constant 128 : i32"), Mismatch,
                     "stored"),
    # y's stores go through x's address
    "store_to_input": (2048, lambda t: t.replace("arith.addi {1}, ".format(*_y_pointer(t)),
                                                 "arith.addi {0}, ".format(*_y_pointer(t))), Fault, "store"),
    # the padding past the row's end is 0 instead of -inf: it adds exp(-m) per element to the sum
    "pad_zero": (2056, lambda t: t.replace("arith.constant 0xFC00 : f16", "arith.constant 0x0000 : f16"), Mismatch,
                 "float64"),
    # the sum reuses the max's shared words without a barrier between the max's loads and the sum's stores
    "shared_reuse": (2056, lambda t: t.replace("{1}[".format(*_shared_names(t)), "{0}[".format(*_shared_names(t))),
                     Fault, "read since the latest barrier"),
    # every lane, not lane 0 of each warp, stores its warp's partial
    "all_lanes_store": (2056, lambda t: t.replace("arith.cmpi eq,", "arith.cmpi uge,"), Fault, "race"),
    # only thread 0 (not lane 0 of every warp) stores a partial: the other warps' words are never written
    "thread_not_lane": (2056, _thread_not_lane, Fault, "never written"),
    # exp computed with log2(e) = 1: 2^(x - m) instead of e^(x - m)
    "log2e": (2048, lambda t: t.replace("0x3FB8AA3B : f32", "0x3F800000 : f32"), Mismatch, "float64"),
    # a shuffle kind the oracle does not model must fail the test, not be approximated
    "unmodelled_shuffle": (2048, lambda t: t.replace("gpu.shuffle xor", "gpu.shuffle down"), Unmodelled, "form"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_oracle_catches_mutation(name):
    """A small defect in the emitted text makes the executor fault or the comparison fail."""
    cols, mutate, error, message = MUTATIONS[name]
    text = emit(6, cols, "f16")
    mutated = mutate(text)
    assert mutated != text
    with pytest.raises(error, match=message):
        check_case(mutated, "softmax_kernel", cols, "f16", seed=cols)
