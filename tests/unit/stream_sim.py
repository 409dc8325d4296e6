"""An interpreter of the stream kernel's emitted IR (`transforms.stream.program`): every workgroup's threads run the
func body in lockstep (each SSA value a numpy array over the workgroup's threads; `scf.if` masks lanes), memory is
A, B and C as the runtime would bind them, and the inline PTX the kernel uses is given its PTX ISA meaning:
`ld.global.nc.v4.u32` (under its predicate; a load outside its buffer or misaligned is an error),
`mma.sync.aligned.m16n8k16.row.col.f32` (the fragment tables of the PTX ISA, "Matrix Fragments for mma.m16n8k16
with floating point type": A's registers {a0,a1} {a2,a3} {a4,a5} {a6,a7} at rows g, g+8, g, g+8 and columns
2t + (0,1), +8 for a4..a7; B's {b0,b1} {b2,b3} at rows 2t + (0,1) and 2t + 8 + (0,1), column g; C's c0..c3 at rows
g, g, g+8, g+8 and columns 2t + (0,1); g = lane / 4, t = lane % 4; the lower half of a register the lower index),
`cvt.rn.{bf16,f16}.f32`, `st.global` and `mapa` + `ld.shared::cluster` (a thread-block cluster's workgroups run as
one lockstep machine, each with its own shared memory, so cluster barriers hold by construction; the thread id and
workgroup id are per lane). What the IR computes, not how the generator meant it: the oracle for the
kernel's indices, guards and fragment pairing."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

BASES = {0: 1 << 32, 1: 2 << 32, 2: 3 << 32}  # binding -> address of its buffer
SIXTEEN = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


class SimError(AssertionError):
    pass


def _halves(word: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 16-bit elements of i32 words as float64."""
    w = word.astype(np.uint32)
    lo = (w & 0xFFFF).astype(np.uint16).view(SIXTEEN[dtype]).astype(np.float64)
    hi = (w >> 16).astype(np.uint16).view(SIXTEEN[dtype]).astype(np.float64)
    return lo, hi


def mma_m16n8k16(dtype: str, a: list[np.ndarray], b: list[np.ndarray], c: list[np.ndarray]) -> list[np.ndarray]:
    """D = A B + C for each warp: a 4 words, b 2 words, c 4 f32, each an array over the workgroup's lanes."""
    lanes = a[0].shape[0]
    out = [np.zeros(lanes, np.float32) for _ in range(4)]
    for w0 in range(0, lanes, 32):
        sl = slice(w0, w0 + 32)
        A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for reg, (row, col) in enumerate(((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))):
                lo, hi = _halves(a[reg][sl][lane:lane + 1], dtype)
                A[row, col], A[row, col + 1] = lo[0], hi[0]
            for reg, row in enumerate((2 * t, 2 * t + 8)):
                lo, hi = _halves(b[reg][sl][lane:lane + 1], dtype)
                B[row, g], B[row + 1, g] = lo[0], hi[0]
            for e, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
                C[row, col] = c[e][sl][lane]
        D = A @ B + C
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for e, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
                out[e][w0 + lane] = np.float32(D[row, col])
    return out


def _movmatrix(words: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """movmatrix.sync.aligned.m8n8.trans.b16 for each warp (PTX ISA: an 8x8 16-bit matrix, lane (g, t) holding row
    g, columns 2t and 2t + 1, the lower column in the lower half; the result the transpose in the same layout)."""
    out = np.zeros_like(words)
    for w0 in range(0, words.shape[0], 32):
        if not mask[w0:w0 + 32].all():
            raise SimError("movmatrix under divergent lanes")
        matrix = np.zeros((8, 8), np.uint64)
        for lane in range(32):
            g, t = lane // 4, lane % 4
            matrix[g, 2 * t], matrix[g, 2 * t + 1] = words[w0 + lane] & 0xFFFF, words[w0 + lane] >> 16
        for lane in range(32):
            g, t = lane // 4, lane % 4
            out[w0 + lane] = matrix[2 * t, g] | (matrix[2 * t + 1, g] << 16)
    return out


class Machine:
    def __init__(self, buffers: dict[int, np.ndarray], shared_bytes: int, threads: int, cluster: int = 1):
        self.buffers = {k: v.view(np.uint8).reshape(-1) for k, v in buffers.items()}  # views: stores land in them
        # one per workgroup of the cluster, NaN until written (a read of a word nobody wrote poisons the result)
        self.shared = np.full((cluster, shared_bytes // 4), np.nan, np.float32).view(np.uint8).reshape(cluster, -1)
        self.threads = threads * cluster  # lanes: the cluster's workgroups' threads, rank-major
        self.per_group = threads
        self.rank = np.arange(self.threads) // threads
        # Barriers: a word written by one warp and read by another needs a barrier between (a workgroup barrier
        # within a workgroup, a cluster barrier across workgroups): each word keeps its writer and the barrier
        # counts at the write; lockstep execution would otherwise hide a missing barrier
        self.barriers = [0, 0]  # workgroup barriers, cluster barriers passed
        words = shared_bytes // 4
        self.writer = np.full((cluster, words), -1)
        self.written = np.zeros((cluster, words, 2), int)

    def shared_read(self, rank: int, address: int, lane: int) -> np.float32:
        at = self.shared_at(address)
        word, writer = at // 4, self.writer[rank, at // 4]
        if writer >= 0 and writer != lane // 32:
            across = rank != self.rank[lane]
            if self.written[rank, word, 1 if across else 0] == self.barriers[1 if across else 0]:
                raise SimError(f"lane {lane} reads shared word {word} of workgroup {rank}, written by warp {writer} "
                               f"with no {'cluster' if across else 'workgroup'} barrier between")
        return self.shared[rank, at:at + 4].view(np.float32)[0]

    def shared_write(self, rank: int, address: int, value, lane: int) -> None:
        at = self.shared_at(address)
        self.shared[rank, at:at + 4] = np.array([value], np.float32).view(np.uint8)
        self.writer[rank, at // 4] = lane // 32
        self.written[rank, at // 4] = self.barriers

    def _where(self, address: int, size: int) -> tuple[np.ndarray, int]:
        for binding, base in BASES.items():
            buf = self.buffers[binding]
            if base <= address < base + (1 << 32):
                offset = address - base
                if offset + size > buf.size or offset % size:
                    raise SimError(f"access of {size} B at offset {offset} of binding {binding} ({buf.size} B)")
                return buf, offset
        raise SimError(f"address {address:#x} in no buffer")

    def load(self, address: np.ndarray, pred: np.ndarray, mask: np.ndarray, count: int,
             binding: int | None = None) -> list[np.ndarray]:
        """`count` 32-bit words at each active lane's address where its predicate is set, else zeros; with `binding`,
        a load from another buffer is an error."""
        words = [np.zeros(self.threads, np.uint64) for _ in range(count)]
        for lane in np.nonzero(mask & (pred != 0))[0]:
            buf, offset = self._where(int(address[lane]), 4 * count)
            if binding is not None and buf is not self.buffers[binding]:
                raise SimError(f"a load under binding {binding}'s predicate reads another buffer")
            values = buf[offset:offset + 4 * count].view(np.uint32)
            for e in range(count):
                words[e][lane] = values[e]
        return words

    def store_global(self, address: np.ndarray, value: np.ndarray, size: int, mask: np.ndarray) -> None:
        for lane in np.nonzero(mask)[0]:
            buf, offset = self._where(int(address[lane]), size)
            raw = np.array([value[lane]], np.float32 if size == 4 else np.uint16).view(np.uint8)
            buf[offset:offset + size] = raw

    def shared_at(self, address: int) -> int:
        size = self.shared.shape[1]
        if not 0 <= address <= size - 4 or address % 4:
            raise SimError(f"shared access at {address} of {size} B")
        return address


WIDTH = {"i1": 1, "i16": 16, "i32": 32, "i64": 64, "index": 64}


def _wrap(value: np.ndarray, ty: str) -> np.ndarray:
    if ty in ("f32", "bf16", "f16"):
        return value
    return (value.astype(object) % (1 << WIDTH[ty])).astype(np.uint64) if ty != "i1" else value.astype(bool)


def run_kernel(ir: str, buffers: dict[int, np.ndarray], grid: int, threads: int, shared_bytes: int,
               dtype: str) -> None:
    """Runs the func body of `ir` (the program text) on every workgroup of the grid, a cluster at a time (the size
    its `nvvm.cluster_dim` states, else 1)."""
    body = ir.split("subgroup_size = 32>} {", 1)[1].split("\n        return\n", 1)[0]
    found = re.search(r"nvvm\.cluster_dim = array<i32: (\d+), 1, 1>", ir)
    cluster = int(found.group(1)) if found else 1
    if grid % cluster:
        raise SimError(f"a grid of {grid} workgroups in clusters of {cluster}")
    lines = [line.strip() for line in body.strip().splitlines()]
    for first in range(0, grid, cluster):
        machine = Machine(buffers, shared_bytes, threads, cluster)
        env: dict[str, object] = {}
        _block(lines, 0, len(lines), env, machine, np.ones(machine.threads, bool), first, dtype)


def _find_close(lines: list[str], start: int) -> int:
    depth = 0
    for i in range(start, len(lines)):
        depth += lines[i].endswith("{") - (lines[i] == "}")
        if depth == 0:
            return i
    raise SimError("unbalanced region")


def _block(lines, start, end, env, machine: Machine, mask, workgroup, dtype) -> list | None:
    i = start
    n = machine.threads

    def val(name: str) -> np.ndarray:
        if "#" in name:
            base, index = name.split("#")
            return env[base][int(index)]  # type: ignore[index]
        return env[name]  # type: ignore[return-value]

    while i < end:
        line = lines[i]
        if line.startswith("scf.if"):
            close = _find_close(lines, i)
            cond = val(line.split()[1])
            _block(lines, i + 1, close, env, machine, mask & cond.astype(bool), workgroup, dtype)
            i = close + 1
            continue
        if line.startswith("scf.yield"):
            names = line[len("scf.yield "):].split(" : ")[0].split(", ")
            return [val(x) for x in names]
        m = re.match(r"(%\w+):(\d+) = scf\.for (%\w+) = (%\w+) to (%\w+) step (%\w+) iter_args\((.*)\) -> ", line)
        if m:
            close = _find_close(lines, i)
            result, _, it, lb, ub, step, args = m.groups()
            pairs = [p.split(" = ") for p in args.split(", ")]
            carried = [val(y) for _, y in pairs]
            for k in range(int(val(lb)[0]), int(val(ub)[0]), int(val(step)[0])):
                env[it] = np.full(n, k, np.uint64)
                for (x, _), v in zip(pairs, carried):
                    env[x] = v
                carried = _block(lines, i + 1, close, env, machine, mask, workgroup, dtype)
            env[result] = carried
            i = close + 1
            continue
        if line in ("gpu.barrier", "nvvm.cluster.arrive", "nvvm.cluster.wait"):
            if not mask.all():
                raise SimError("a barrier under divergent lanes")
            if line == "gpu.barrier":
                machine.barriers[0] += 1
            elif line == "nvvm.cluster.wait":  # every thread of the cluster: orders its workgroups' too
                machine.barriers[0] += 1
                machine.barriers[1] += 1
            i += 1
            continue
        m = re.match(r"(%\w+) = (.*)$", line)
        if m is None:
            if line.startswith("llvm.store"):
                v, p = re.match(r"llvm\.store (%\w+#?\d*), (%\w+) : f32, !llvm\.ptr<3>", line).groups()
                values, pointers = val(v), val(p)
                for lane in np.nonzero(mask)[0]:
                    machine.shared_write(machine.rank[lane], int(pointers[lane]), values[lane], lane)
            elif line.startswith("llvm.inline_asm"):
                _side_asm(line, val, machine, mask)
            else:
                raise SimError(f"unknown statement: {line[:80]}")
            i += 1
            continue
        name, op = m.groups()
        env[name] = _op(op, val, machine, mask, workgroup, n, dtype)
        i += 1
    return None


def _ints(text: str) -> list[str]:
    return [x.strip() for x in text.split(",")]


def _op(op: str, val, machine: Machine, mask, workgroup: int, n: int, dtype: str):
    if op in ("arith.constant true", "arith.constant false"):
        return np.full(n, op.endswith("true"), bool)
    m = re.match(r"arith\.constant (-?[\d.e+-]+) : (\w+)", op)
    if m:
        value, ty = m.groups()
        if ty == "f32":
            return np.full(n, float(value), np.float32)
        return _wrap(np.full(n, int(value), object), ty)
    m = re.match(r"arith\.(addi|subi|muli|divui|remui|andi|ori|shli|shrui) (%\S+), (%\S+) : (\w+)", op)
    if m:
        kind, x, y, ty = m.groups()
        a, b = val(x).astype(object), val(y).astype(object)
        out = {"addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
               "divui": lambda: a // np.where(b == 0, 1, b), "remui": lambda: a % np.where(b == 0, 1, b),
               "andi": lambda: a & b, "ori": lambda: a | b, "shli": lambda: a << b, "shrui": lambda: a >> b}[kind]()
        return _wrap(out, ty)
    m = re.match(r"arith\.cmpi (\w+), (%\S+), (%\S+) : (\w+)", op)
    if m:
        pred, x, y, _ = m.groups()
        a, b = val(x).astype(object), val(y).astype(object)
        return {"ult": a < b, "ule": a <= b, "eq": a == b, "ne": a != b}[pred].astype(bool)
    m = re.match(r"arith\.(extui|index_cast|trunci) (%\S+) : (\w+) to (\w+)", op)
    if m:
        _, x, _, to = m.groups()
        return _wrap(val(x).astype(object), to)
    m = re.match(r"arith\.addf (%\S+), (%\S+) : f32", op)
    if m:
        return (val(m.group(1)).astype(np.float32) + val(m.group(2)).astype(np.float32)).astype(np.float32)
    m = re.match(r"arith\.select (%\S+), (%\S+), (%\S+) : (\w+)", op)
    if m:
        return np.where(val(m.group(1)).astype(bool), val(m.group(2)), val(m.group(3)))
    if op.startswith("hal.interface.binding.subspan"):
        return ("binding", int(re.search(r"binding\((\d+)\)", op).group(1)))
    if op.startswith("memref.alloc()"):
        return ("shared", 0)
    m = re.match(r"memref\.extract_aligned_pointer_as_index (%\w+)", op)
    if m:
        kind, index = val(m.group(1))
        return np.full(n, BASES[index] if kind == "binding" else 0, object)
    if op == "gpu.thread_id x":
        return (np.arange(n) % machine.per_group).astype(np.uint64)
    if op == "hal.interface.workgroup.id[0] : index":
        return (workgroup + machine.rank).astype(np.uint64)
    m = re.match(r"llvm\.extractvalue (%\w+)\[(\d+)\]", op)
    if m:
        return val(m.group(1))[int(m.group(2))]
    m = re.match(r"llvm\.(inttoptr (%\w+) : i64 to !llvm\.ptr<3>|ptrtoint (%\w+) : !llvm\.ptr<3> to i32)", op)
    if m:
        return _wrap(val(m.group(2) or m.group(3)).astype(object), "i64" if m.group(2) else "i32")
    m = re.match(r"llvm\.load (%\w+) : !llvm\.ptr<3> -> f32", op)
    if m:
        pointers = val(m.group(1))
        out = np.zeros(n, np.float32)
        for lane in np.nonzero(mask)[0]:
            out[lane] = machine.shared_read(machine.rank[lane], int(pointers[lane]), lane)
        return out
    m = re.match(r"llvm\.bitcast (%\w+) : \w+ to \w+", op)
    if m:
        return val(m.group(1))
    if op.startswith("llvm.inline_asm"):
        return _value_asm(op, val, machine, mask, dtype)
    raise SimError(f"unknown op: {op[:80]}")


def _asm_parts(op: str) -> tuple[str, list[str]]:
    text = re.search(r'asm_dialect = att "(.*?)", "', op).group(1)
    operands = re.search(r'", "[^"]*" (.*?) : \(', op).group(1)
    return text, _ints(operands)


def _value_asm(op: str, val, machine: Machine, mask, dtype: str):
    text, operands = _asm_parts(op)
    # A's loads under predicate pa, B's under pb (transforms.stream.PREDICATES)
    m = re.fullmatch(r"\{ \.reg \.pred (pa|pb); setp\.ne\.b32 \1, \$(\d), 0; (.*) @\1 ld\.global\.nc"
                     r"(\.L1::no_allocate)?(\.L2::\d+B)?\.v(\d)\.u32 \{(.*)\}, \[\$(\d)\]; \}", text)
    if m:
        name, pred, zeros, _, _, words, outs, addr = m.groups()
        words = int(words)
        if (int(pred), int(addr)) != (words + 1, words) or outs != ", ".join(f"${e}" for e in range(words)) or \
                zeros != " ".join(f"mov.b32 ${e}, 0;" for e in range(words)):
            raise SimError(f"a load of unknown form: {text}")
        return machine.load(val(operands[0]), val(operands[1]), mask, words, {"pa": 0, "pb": 1}[name])
    m = re.match(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(\w+)\.(\w+)\.f32 \{\$0, \$1, \$2, \$3\}, "
                 r"\{\$4, \$5, \$6, \$7\}, \{\$8, \$9\}, \{\$10, \$11, \$12, \$13\};", text)
    if m:
        if m.group(1) != dtype or m.group(2) != dtype:
            raise SimError(f"mma of {m.group(1)} on {dtype} data")
        args = [val(x) for x in operands]
        return mma_m16n8k16(dtype, args[0:4], args[4:6], args[6:10])
    if text == "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $1, $2; ld.shared::cluster.f32 $0, [ra]; }":
        address, rank = val(operands[0]), val(operands[1])
        out = np.zeros(machine.threads, np.float32)
        for lane in np.nonzero(mask)[0]:
            if not 0 <= int(rank[lane]) < machine.shared.shape[0]:
                raise SimError(f"mapa to rank {int(rank[lane])} of a cluster of {machine.shared.shape[0]}")
            out[lane] = machine.shared_read(int(rank[lane]), int(address[lane]), lane)
        return out
    if text == "movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;":  # lane (g, t) gets M[2t][g], M[2t + 1][g]
        return _movmatrix(val(operands[0]), mask)
    m = re.match(r"cvt\.rn\.(bf16|f16)\.f32 \$0, \$1;", text)
    if m:
        values = val(operands[0]).astype(np.float32)
        return values.astype(SIXTEEN[m.group(1)]).view(np.uint16).astype(np.uint64)
    raise SimError(f"unknown inline asm: {text}")


def _side_asm(line: str, val, machine: Machine, mask) -> None:
    text, operands = _asm_parts(line)
    if text == "st.global.f32 [$0], $1;":
        machine.store_global(val(operands[0]), val(operands[1]).astype(np.float32), 4, mask)
    elif text == "st.global.b16 [$0], $1;":
        machine.store_global(val(operands[0]), val(operands[1]).astype(np.uint16), 2, mask)
    else:
        raise SimError(f"unknown inline asm statement: {text}")
