"""Streaming GEMM kernels for problems of at most 16 rows (decode steps, GEMV-like products) on sm_80 and later:
`mma.sync.m16n8k16` fed straight from global memory, no shared-memory staging, one dispatch.

Why: at M <= 16 a product is a stream of B (K x N) past 16 rows of A. The Hopper kernels pad M to a 64-row wgmma
tile and stage B through TMA in a few deep stages per SM; with B of 32 MiB each SM streams only 256 KiB, so the
pipeline's fill and drain, the tensor maps' set-up and the reduction dispatch of K's slices are most of the time
(results/h200/line1/ncu1: the Hopper kernel alone 9.3 µs of the 13.4 µs a call of 16x4096x4096 takes). Here every
warp keeps its own 16-byte loads of B in flight and issues m16n8k16 MMAs on them as they arrive, and K is split
between the warps of a workgroup, whose partial products are summed in shared memory: one dispatch, no partials in
global memory.

The fragments come from global memory directly. `mma.sync.m16n8k16.row.col` gives thread (g, t) = (lane / 4,
lane % 4) the k indices {2t, 2t+1, 2t+8, 2t+9} of each 16-wide step, for A's rows g and g+8 and B's column g. As the
sum over k does not depend on which physical k each logical k stands for (so long as A and B agree), thread t takes
the physical k's 8t .. 8t+7 of every 32-wide chunk of K: one 16-byte load of each A row and, for layout `nt` (B stored
N x K), of each B column; words 0-1 feed the first MMA step (logical 2t, 2t+1 -> physical 8t, 8t+1 and logical 2t+8,
2t+9 -> 8t+2, 8t+3) and words 2-3 the second. For layout `nn` (B stored K x N) thread (g, t) loads the 8 rows
8t .. 8t+7 of the chunk, 8 columns each (16 bytes), and pairs neighbouring rows column by column: its column j of
8 is MMA block j's column g, so a warp's 8 blocks cover 64 columns, block j's logical column c at physical
column 8c + j.

Each workgroup owns `columns` columns of C and all of K: its `warps` warps take consecutive ranges of K (each a
multiple of 32 x `unroll`), loads past K, M or N read zeros, and after the loop every warp writes its partial product
(16 x columns f32) to shared memory; the workgroup sums them in warp order and stores C (f32, or rounded to the
input type for the truncf epilogue) for rows below M and columns below N.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .hopper import TARGET, HopperSchedule, _asm, _Body, _binding, _ceil, _cvt_one, _memref, _pointer
from .errors import UserError
from .problem import Gemm

MAX_M = 16  # one m16n8k16 row block
CHUNK = 32  # K per chunk: 4 threads x 8 elements
WARP = 32
MMA_TYPES = {"bf16": "bf16", "f16": "f16"}
EPILOGUES = ("none", "truncf")
NN_GROUP = 64  # columns a warp's 8 MMA blocks cover in layout nn (8 threads x 8 columns)
MOVED = 32  # columns a set of transposed (movmatrix) nn loads covers: 4 threads t x 8 columns
SHARED_BYTES = 227 * 1024


class StreamError(UserError, ValueError):
    """A stream schedule or problem the kernels cannot take."""


MAX_AHEAD = 4  # loop steps a thread's loads may run ahead of its MMAs
HINTS = ("", "L2::128B", "L2::256B")  # the loads' L2 prefetch size (PTX ld's .level::prefetch_size), "" none


@dataclass(frozen=True)
class StreamSchedule:
    """`columns` columns of C per workgroup, `warps` warps splitting K, `unroll` chunks of 32 of K per loop step;
    `ahead`: each step's loads issued this many steps early (carried in registers through the loop); `hint`: the
    loads' L2 prefetch size (`HINTS`); `transpose` (nn): B's rows loaded 16 bytes at once and transposed in registers
    by movmatrix; `slices`: the workgroups of a thread-block cluster that split K for the same
    columns (each reads 1 / slices of A, not all of it), summed through distributed shared memory; `bypass`: B's
    loads leave the L1 cache alone (`.L1::no_allocate`: B is read once), so that it keeps A, which the workgroups of
    an SM read alike."""

    columns: int = 32
    warps: int = 8
    unroll: int = 2
    ahead: int = 0
    hint: str = ""
    slices: int = 1  # K split between this many workgroups, one thread-block cluster, summed through its memory
    transpose: bool = False  # nn: B's rows loaded 8 columns at once and transposed in registers (movmatrix)
    bypass: bool = False  # B's loads not allocated in L1 (ld.global.nc.L1::no_allocate)

    @property
    def name(self) -> str:
        return "stream"

    @property
    def threads(self) -> int:
        return self.warps * WARP

    def describe(self) -> str:
        ahead = f", loads {self.ahead} step{'s' if self.ahead > 1 else ''} ahead" if self.ahead else ""
        hint = f", {self.hint} prefetch" if self.hint else ""
        sliced = f", K in {self.slices} slices summed in the cluster" if self.slices > 1 else ""
        moved = ", B transposed by movmatrix" if self.transpose else ""
        moved += ", B's loads past L1" if self.bypass else ""
        chunks = f"{self.unroll} chunk{'s' if self.unroll > 1 else ''} of 32"
        return (f"stream {self.columns} columns per workgroup, {self.warps} warps splitting K, {chunks} "
                f"per step{ahead}{hint}{sliced}{moved} (mma.sync m16n8k16 from global memory; summed in shared "
                "memory)")

    def shared_bytes(self) -> int:
        """The warps' partial products, warps x 16 rows x columns f32, and with slices the workgroup's sum of them."""
        return (self.warps + (1 if self.slices > 1 else 0)) * MAX_M * self.columns * 4

    def check(self) -> None:
        if self.columns < 8 or self.columns % 8 or self.columns > 512:
            raise StreamError("columns must be a multiple of 8 from 8 to 512.")
        if not 1 <= self.warps <= 32 or not 1 <= self.unroll <= 8:
            raise StreamError("warps must be 1 to 32 and unroll 1 to 8.")
        if self.slices not in (1, 2, 4, 8) or self.columns % self.slices:
            raise StreamError("slices must be 1, 2, 4 or 8 (a portable cluster) and divide the columns.")
        if isinstance(self.ahead, bool) or not isinstance(self.ahead, int) or not 0 <= self.ahead <= MAX_AHEAD:
            raise StreamError(f"ahead must be 0 to {MAX_AHEAD} steps.")
        if self.hint not in HINTS:
            raise StreamError(f"hint must be one of {', '.join(repr(h) for h in HINTS)}, not {self.hint!r}.")
        if self.shared_bytes() > SHARED_BYTES:
            raise StreamError(f"{self.warps} warps' partial products of {self.columns} columns need "
                              f"{self.shared_bytes()} B of shared memory; there are {SHARED_BYTES}.")


# The plans of the sm_90a kernel route (`pipelines.routes.hopper`): the Hopper kernels' schedules or this kernel's
KernelPlan = HopperSchedule | StreamSchedule
KERNEL_PLANS = (HopperSchedule, StreamSchedule)


def nn_width(s: StreamSchedule) -> int:
    """Columns one set of a warp's B loads covers in layout nn: 8 threads (g) x 8 columns (16-byte loads) where the
    workgroup's columns are a multiple of 64, else x 4 columns (8-byte loads)."""
    return NN_GROUP if s.columns % NN_GROUP == 0 else NN_GROUP // 2


def check_problem(problem: Gemm, s: StreamSchedule) -> None:
    """One sentence why the stream kernel does not take `problem` with `s`; nothing where it does."""
    if problem.m > MAX_M:
        raise StreamError(f"the stream kernel takes at most {MAX_M} rows, not M={problem.m}.")
    if problem.batched:
        raise StreamError("the stream kernel takes one product, not a batch.")
    if problem.dtype not in MMA_TYPES:
        raise StreamError(f"the stream kernel takes {', '.join(MMA_TYPES)}, not {problem.dtype}.")
    if problem.layout not in ("nn", "nt"):
        raise StreamError(f"the stream kernel takes layouts nn and nt, not {problem.layout}.")
    if problem.epilogue.kind not in EPILOGUES:
        raise StreamError(f"the stream kernel stores C in f32 or rounds it (truncf), not {problem.epilogue.kind}.")
    if problem.k % 8:
        raise StreamError("K must be a multiple of 8 (16-byte loads along K).")
    if s.transpose and problem.layout != "nn":
        raise StreamError("transpose (movmatrix) is for layout nn, where B's rows run along N.")
    if problem.layout == "nn":
        if s.columns % (NN_GROUP // 2):
            raise StreamError(f"layout nn needs columns a multiple of {NN_GROUP // 2} (a warp's blocks of 8 columns, "
                              "4 or 8 of each thread's).")
        if problem.n % (8 if s.transpose else nn_width(s) // 8):
            raise StreamError(f"layout nn needs N a multiple of {8 if s.transpose else nn_width(s) // 8} (each "
                              "thread's loads along B's rows).")


def k_per_warp(problem: Gemm, s: StreamSchedule) -> int:
    """K each warp takes: K split evenly between the warps of the slices, up to whole loop steps (32 x unroll);
    warp w of slice r takes the (r x warps + w)-th range."""
    step = CHUNK * s.unroll
    return _ceil(_ceil(problem.k, s.warps * s.slices), step) * step


def ahead_steps(problem: Gemm, s: StreamSchedule) -> int:
    """Steps a thread's loads run ahead of its MMAs: `ahead`, at most the warp's steps less one."""
    return min(s.ahead, k_per_warp(problem, s) // (CHUNK * s.unroll) - 1)


def grid_size(problem: Gemm, s: StreamSchedule) -> int:
    """Workgroups: a cluster of `slices` per `columns` columns of C, consecutive in x."""
    return _ceil(problem.n, s.columns) * s.slices


# the predicate register of A's loads and of B's: the PTX tells the operands' loads apart (`check_ptx`)
PREDICATES = {"a": "pa", "b": "pb"}


def _load(b: _Body, address: str, inside: str, words: int, hint: str, operand: str, bypass: bool = False) -> list[str]:
    """`words` (2 or 4) i32 words of a global load of `operand` ("a" or "b"; ld.global.nc under that operand's
    predicate, not allocated in L1 with `bypass`, the L2 prefetch `hint`), zeros where `inside` (i1) is false."""
    p = PREDICATES[operand]
    pred = b.op(f"arith.extui {inside} : i1 to i32", "pr")
    ty = f"!llvm.struct<({', '.join(['i32'] * words)})>"
    outs = ", ".join(f"${e}" for e in range(words))
    zero = " ".join(f"mov.b32 ${e}, 0;" for e in range(words))
    level = (".L1::no_allocate" if bypass else "") + (f".{hint}" if hint else "")
    loaded = b.op(f'llvm.inline_asm asm_dialect = att "{{ .reg .pred {p}; setp.ne.b32 {p}, ${words + 1}, 0; {zero} '
                  f'@{p} ld.global.nc{level}.v{words}.u32 {{{outs}}}, [${words}]; }}", '
                  f'"{",".join(["=r"] * words)},l,r" {address}, {pred} : (i64, i32) -> {ty}', "ld")
    return [b.op(f"llvm.extractvalue {loaded}[{e}] : {ty}", "w") for e in range(words)]


def _mma(b: _Body, dt: str, a: list[str], bw: list[str], acc: list[str]) -> list[str]:
    """One mma.sync.m16n8k16 (f32 accumulators) -> the four new accumulators."""
    quad = "!llvm.struct<(f32, f32, f32, f32)>"
    out = b.op(f'llvm.inline_asm asm_dialect = att "mma.sync.aligned.m16n8k16.row.col.f32.{dt}.{dt}.f32 '
               '{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", '
               f'"=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f" {", ".join(a + bw + acc)} : '
               f"({', '.join(['i32'] * 6 + ['f32'] * 4)}) -> {quad}", "mma")
    return [b.op(f"llvm.extractvalue {out}[{e}] : {quad}", "d") for e in range(4)]


def blocks(problem: Gemm, s: StreamSchedule) -> int:
    """MMA blocks of 8 columns a warp keeps accumulators for (all the workgroup's columns)."""
    return s.columns // 8


def physical_column(problem: Gemm, s: StreamSchedule, block: int, column: int) -> int:
    """The workgroup's column (0 .. columns-1) that MMA block `block`'s logical column `column` (0-7) stands for:
    nt, 8 block + column; nn, block j of a set of loads covering `nn_width` columns, each thread's `nn_width / 8`
    neighbouring columns its blocks' column g."""
    if problem.layout == "nt":
        return 8 * block + column
    if s.transpose:  # tile w of a 32-column group: thread t's 16 bytes hold its columns 2w, 2w + 1 of each 8
        group, w = divmod(block, 4)
        return MOVED * group + 8 * (column // 2) + 2 * w + column % 2
    width = nn_width(s)
    group, j = divmod(block, width // 8)
    return width * group + (width // 8) * column + j


def _sum_in_order(b: _Body, values: list[str]) -> str:
    """values[0] + values[1] + ... (f32), left to right."""
    total = values[0]
    for value in values[1:]:
        total = b.op(f"arith.addf {total}, {value} : f32", "sum")
    return total


def _kernel(problem: Gemm, s: StreamSchedule, layout: str, entry: str) -> str:
    b = _Body()
    dt = MMA_TYPES[problem.dtype]
    i32 = lambda v: b.const(v, "i32")  # noqa: E731
    i64 = lambda v: b.const(v, "i64")  # noqa: E731
    m, n, k = problem.m, problem.n, problem.k
    ta = _memref([m, k], problem.dtype)
    tb = _memref([n, k] if problem.layout == "nt" else [k, n], problem.dtype)
    tc = _memref([m, n], problem.out_dtype)
    a_ptr = _pointer(b, _binding(b, layout, 0, ta, "a", True), ta)
    b_ptr = _pointer(b, _binding(b, layout, 1, tb, "b", True), tb)
    c_ptr = _pointer(b, _binding(b, layout, 2, tc, "cc", False), tc)
    smem_ty = f"memref<{s.shared_bytes()}xi8, #gpu.address_space<workgroup>>"
    smem = _pointer(b, b.op(f"memref.alloc() : {smem_ty}", "smem"), smem_ty)
    tid = b.op(f"arith.index_cast {b.op('gpu.thread_id x', 'tid')} : index to i32", "tid")
    bid = b.op(f"arith.index_cast {b.op('hal.interface.workgroup.id[0] : index', 'bid')} : index to i32", "bid")
    warp, lane = b.arith("divui", tid, i32(WARP), "i32"), b.arith("remui", tid, i32(WARP), "i32")
    g, t = b.arith("divui", lane, i32(4), "i32"), b.arith("remui", lane, i32(4), "i32")
    rank = b.arith("remui", bid, i32(s.slices), "i32")  # the workgroup's slice of K
    n0 = b.arith("muli", b.arith("divui", bid, i32(s.slices), "i32"), i32(s.columns), "i32")
    kw = k_per_warp(problem, s)
    steps = kw // (CHUNK * s.unroll)
    # this thread's first k: the warp's range (of its slice's), the thread's 8 of each chunk
    ranges = b.arith("addi", b.arith("muli", rank, i32(s.warps), "i32"), warp, "i32")
    k_first = b.arith("addi", b.arith("muli", ranges, i32(kw), "i32"), b.arith("muli", t, i32(8), "i32"), "i32")
    wide = lambda v: b.op(f"arith.extui {v} : i32 to i64", "x")  # noqa: E731
    nb = blocks(problem, s)
    width = nn_width(s)
    vec = width // 8  # nn: columns of each thread's loads

    def address(base: str, row: str, row_length: int, column: str) -> str:  # of a 16-bit element, i64
        at = b.arith("addi", b.arith("muli", wide(row), i64(row_length), "i64"), wide(column), "i64")
        return b.arith("addi", base, b.arith("muli", at, i64(2), "i64"), "i64")

    def loads(step: str, valid: str | None) -> list[str]:
        """The thread's words of loop step `step` (i32): per chunk A's rows g and g+8 (4 words each), then B's
        (nt: 4 words per block; nn: 8 rows of vec / 2 words per set of loads); zeros past K, M, N or where
        `valid` (i1) is false."""
        words = []
        for u in range(s.unroll):
            kk = b.arith("addi", k_first, b.arith("addi", b.arith("muli", step, i32(CHUNK * s.unroll), "i32"),
                                                 i32(CHUNK * u), "i32"), "i32")
            k_in = b.op(f"arith.cmpi ult, {kk}, {i32(k)} : i32", "kin")
            if valid is not None:
                k_in = b.arith("andi", k_in, valid, "i1")
            for half in range(2):  # A's rows g and g + 8
                row = b.arith("addi", g, i32(8 * half), "i32")
                inside = b.arith("andi", k_in, b.op(f"arith.cmpi ult, {row}, {i32(m)} : i32", "rin"), "i1")
                words += _load(b, address(a_ptr, row, k, kk), inside, 4, s.hint, "a")
            if problem.layout == "nt":
                for j in range(nb):
                    col = b.arith("addi", n0, b.arith("addi", g, i32(8 * j), "i32"), "i32")
                    inside = b.arith("andi", k_in, b.op(f"arith.cmpi ult, {col}, {i32(n)} : i32", "cin"), "i1")
                    words += _load(b, address(b_ptr, col, k, kk), inside, 4, s.hint, "b", s.bypass)
            elif s.transpose:  # 4 loads of 8 columns: row 8 (g / 2) + g % 2 + 2 i of the chunk, columns 8 t on
                base = b.arith("subi", kk, b.arith("muli", t, i32(8), "i32"), "i32")  # the chunk's first k
                group8 = b.arith("addi", base, b.arith("muli", b.arith("divui", g, i32(2), "i32"), i32(8), "i32"),
                                 "i32")
                rows_in = b.op(f"arith.cmpi ult, {group8}, {i32(k)} : i32", "kin")
                if valid is not None:
                    rows_in = b.arith("andi", rows_in, valid, "i1")
                row0 = b.arith("addi", group8, b.arith("remui", g, i32(2), "i32"), "i32")
                for q in range(s.columns // MOVED):
                    col = b.arith("addi", n0, b.arith("addi", b.arith("muli", t, i32(8), "i32"), i32(MOVED * q),
                                                      "i32"), "i32")
                    inside = b.arith("andi", rows_in, b.op(f"arith.cmpi ult, {col}, {i32(n)} : i32", "cin"), "i1")
                    for i in range(4):
                        words += _load(b, address(b_ptr, b.arith("addi", row0, i32(2 * i), "i32"), n, col), inside,
                                       4, s.hint, "b", s.bypass)
            else:
                for q in range(s.columns // width):
                    col = b.arith("addi", n0, b.arith("addi", b.arith("muli", g, i32(vec), "i32"), i32(width * q),
                                                      "i32"), "i32")
                    inside = b.arith("andi", k_in, b.op(f"arith.cmpi ult, {col}, {i32(n)} : i32", "cin"), "i1")
                    for i in range(8):
                        words += _load(b, address(b_ptr, b.arith("addi", kk, i32(i), "i32"), n, col), inside,
                                       vec // 2, s.hint, "b", s.bypass)
        return words

    def mmas(words: list[str], acc: list[str]) -> list[str]:
        """The step's MMAs on its loaded words (`loads`' order) -> the new accumulators."""
        acc = list(acc)
        at = 0
        for _ in range(s.unroll):
            a_words = [words[at:at + 4], words[at + 4:at + 8]]
            at += 8
            steps_a = [[a_words[0][0], a_words[1][0], a_words[0][1], a_words[1][1]],
                       [a_words[0][2], a_words[1][2], a_words[0][3], a_words[1][3]]]
            b_words: list[list[list[str]]] = []  # [block][step] -> (b0, b1)
            if problem.layout == "nt":
                for _j in range(nb):
                    w = words[at:at + 4]
                    at += 4
                    b_words.append([[w[0], w[1]], [w[2], w[3]]])
            elif s.transpose:
                for _q in range(s.columns // MOVED):
                    loaded = [words[at + 4 * i:at + 4 * i + 4] for i in range(4)]  # [row offset 2i][tile w]
                    at += 16
                    moved = [[b.op(f'llvm.inline_asm asm_dialect = att "movmatrix.sync.aligned.m8n8.trans.b16 $0, '
                                   f'$1;", "=r,r" {loaded[i][tile]} : (i32) -> i32', "mv") for tile in range(4)]
                             for i in range(4)]
                    for tile in range(4):
                        b_words.append([[moved[0][tile], moved[1][tile]], [moved[2][tile], moved[3][tile]]])
            else:
                for _q in range(s.columns // width):
                    rows = [words[at + i * (vec // 2):at + (i + 1) * (vec // 2)] for i in range(8)]
                    at += 8 * (vec // 2)

                    def pair(lo: int, j: int) -> str:  # rows lo and lo + 1 of column j, row lo in the lower half
                        x, y = rows[lo][j // 2], rows[lo + 1][j // 2]
                        if j % 2 == 0:
                            return b.arith("ori", b.arith("andi", x, i32(0xFFFF), "i32"),
                                           b.arith("shli", y, i32(16), "i32"), "i32")
                        return b.arith("ori", b.arith("shrui", x, i32(16), "i32"),
                                       b.arith("andi", y, i32(-65536), "i32"), "i32")

                    for j in range(vec):
                        b_words.append([[pair(0, j), pair(2, j)], [pair(4, j), pair(6, j)]])
            for step in range(2):
                for j in range(nb):
                    acc[4 * j:4 * j + 4] = _mma(b, dt, steps_a[step], b_words[j][step], acc[4 * j:4 * j + 4])
        return acc

    zero = b.op("arith.constant 0.0 : f32", "zero")
    # with `ahead`, the loads of steps 0 .. ahead - 1 before the loop (none past the warp's last step)
    ahead = ahead_steps(problem, s)
    first = [w for d in range(ahead) for w in loads(i32(d), None)]
    inits = [zero] * (4 * nb) + first
    types = ["f32"] * (4 * nb) + ["i32"] * len(first)
    it = f"%it{b.count}"
    names = [f"%acc{b.count}_{i}" for i in range(len(inits))]
    result = f"%loop{b.count}"
    b.count += 1
    lb, ub, one = b.const(0, "index"), b.const(steps, "index"), b.const(1, "index")
    b.op(f"{result}:{len(inits)} = scf.for {it} = {lb} to {ub} step {one} iter_args("
         + ", ".join(f"{x} = {y}" for x, y in zip(names, inits)) + f") -> ({', '.join(types)}) {{")
    it32 = b.op(f"arith.index_cast {it} : index to i32", "it")
    acc = names[:4 * nb]
    if ahead:  # step it + ahead's loads first (none past the warp's last step), then this step's MMAs on the
        # oldest carried loads
        following = b.arith("addi", it32, i32(ahead), "i32")
        fresh = loads(following, b.op(f"arith.cmpi ult, {following}, {i32(steps)} : i32", "ok"))
        per = len(fresh)
        acc = mmas(names[4 * nb:4 * nb + per], acc) + names[4 * nb + per:] + fresh
    else:
        acc = mmas(loads(it32, None), acc)
    b.op(f"scf.yield {', '.join(acc)} : {', '.join(types)}")
    b.op("}")
    final = [f"{result}#{i}" for i in range(4 * nb)]
    # the warp's partial product into shared memory: [warp][row][column] f32
    wbase = b.arith("muli", warp, i32(MAX_M * s.columns), "i32")
    for j in range(nb):
        for e in range(4):
            row = b.arith("addi", g, i32(8 * (e // 2)), "i32")
            logical = b.arith("addi", b.arith("muli", t, i32(2), "i32"), i32(e % 2), "i32")
            if problem.layout == "nt":
                col = b.arith("addi", logical, i32(8 * j), "i32")
            elif s.transpose:  # logical column 2t + e of tile w: 8t + 2w + e
                group, w = divmod(j, 4)
                col = b.arith("addi", b.arith("muli", t, i32(8), "i32"), i32(MOVED * group + 2 * w + e % 2), "i32")
            else:
                group, jj = divmod(j, vec)
                col = b.arith("addi", b.arith("muli", logical, i32(vec), "i32"), i32(width * group + jj), "i32")
            index = b.arith("addi", wbase, b.arith("addi", b.arith("muli", row, i32(s.columns), "i32"), col, "i32"),
                            "i32")
            at = b.arith("addi", smem, b.arith("muli", wide(index), i64(4), "i64"), "i64")
            b.op(f"llvm.store {final[4 * j + e]}, {b.op(f'llvm.inttoptr {at} : i64 to !llvm.ptr<3>', 'sp')} : "
                 "f32, !llvm.ptr<3>")
    b.op("gpu.barrier")
    outputs = m * s.columns
    share = s.columns // s.slices  # columns each workgroup of the cluster stores

    def store_c(row: str, lc: str, total: str) -> None:  # C[row, n0 + lc] = total, inside N
        col = b.arith("addi", n0, lc, "i32")
        b.op(f"scf.if {b.op(f'arith.cmpi ult, {col}, {i32(n)} : i32', 'nin')} {{")
        flat = b.arith("addi", b.arith("muli", wide(row), i64(n), "i64"), wide(col), "i64")
        if problem.out_dtype == "f32":
            _asm(b, "st.global.f32 [$0], $1;", "l,f", [(b.arith("addi", c_ptr, b.arith("muli", flat, i64(4), "i64"),
                                                               "i64"), "i64"), (total, "f32")])
        else:
            bits = b.op(f"llvm.bitcast {_cvt_one(b, problem.out_dtype, total)} : {problem.out_dtype} to i16", "h")
            _asm(b, "st.global.b16 [$0], $1;", "l,h", [(b.arith("addi", c_ptr, b.arith("muli", flat, i64(2), "i64"),
                                                               "i64"), "i64"), (bits, "i16")])
        b.op("}")

    def shared_at(index: str) -> str:  # !llvm.ptr<3> of f32 number `index` (i32) of the shared memory
        at = b.arith("addi", smem, b.arith("muli", wide(index), i64(4), "i64"), "i64")
        return b.op(f"llvm.inttoptr {at} : i64 to !llvm.ptr<3>", "sp")

    totals = s.warps * MAX_M * s.columns  # with slices: where the workgroup's sum of its warps' starts (f32s)
    # the sum over the warps, in warp order, of each of the M x columns outputs: C (below M and N), or with slices
    # the workgroup's part of it in shared memory
    for e in range(_ceil(outputs, s.threads)):
        idx = b.arith("addi", tid, i32(e * s.threads), "i32")
        b.op(f"scf.if {b.op(f'arith.cmpi ult, {idx}, {i32(outputs)} : i32', 'oin')} {{")
        # idx = row * columns + lc: warp w's value is MAX_M * columns further on
        total = _sum_in_order(b, [b.op(f"llvm.load {shared_at(b.arith('addi', idx, i32(w * MAX_M * s.columns), 'i32'))}"
                                       " : !llvm.ptr<3> -> f32", "sv") for w in range(s.warps)])
        if s.slices == 1:
            store_c(b.arith("divui", idx, i32(s.columns), "i32"), b.arith("remui", idx, i32(s.columns), "i32"),
                    total)
        else:
            b.op(f"llvm.store {total}, {shared_at(b.arith('addi', idx, i32(totals), 'i32'))} : f32, !llvm.ptr<3>")
        b.op("}")
    if s.slices > 1:
        # every slice's sum in its workgroup's shared memory, visible to the cluster; workgroup r stores columns
        # r x share on, summing the slices in slice order (mapa, ld.shared::cluster)
        b.op("nvvm.cluster.arrive")
        b.op("nvvm.cluster.wait")
        for e in range(_ceil(m * share, s.threads)):
            idx = b.arith("addi", tid, i32(e * s.threads), "i32")
            b.op(f"scf.if {b.op(f'arith.cmpi ult, {idx}, {i32(m * share)} : i32', 'oin')} {{")
            row = b.arith("divui", idx, i32(share), "i32")
            lc = b.arith("addi", b.arith("muli", rank, i32(share), "i32"), b.arith("remui", idx, i32(share), "i32"),
                         "i32")
            index = b.arith("addi", b.arith("addi", b.arith("muli", row, i32(s.columns), "i32"), lc, "i32"),
                            i32(totals), "i32")
            local = b.op(f"llvm.ptrtoint {shared_at(index)} : !llvm.ptr<3> to i32", "la")
            remote = ('llvm.inline_asm has_side_effects asm_dialect = att "{ .reg .b32 ra; '
                      'mapa.shared::cluster.u32 ra, $1, $2; ld.shared::cluster.f32 $0, [ra]; }", "=f,r,r" ')
            total = _sum_in_order(b, [b.op(f"{remote}{local}, {i32(piece)} : (i32, i32) -> f32", "rv")
                                      for piece in range(s.slices)])
            store_c(row, lc, total)
            b.op("}")
        b.op("nvvm.cluster.arrive")  # no workgroup leaves while another may still read its memory
        b.op("nvvm.cluster.wait")
    cluster = f"nvvm.cluster_dim = array<i32: {s.slices}, 1, 1>, " if s.slices > 1 else ""
    return f"""      func.func @{entry}() attributes {{{cluster}translation_info = #iree_codegen.translation_info<\
pipeline = #iree_codegen.no_pipeline workgroup_size = [{s.threads}, 1, 1] subgroup_size = 32>}} {{
        {b.text()}
        return
      }}"""


def tensor_types(problem: Gemm) -> tuple[str, str, str]:
    b_shape = (problem.n, problem.k) if problem.layout == "nt" else (problem.k, problem.n)
    return (f"tensor<{problem.m}x{problem.k}x{problem.dtype}>", f"tensor<{b_shape[0]}x{b_shape[1]}x{problem.dtype}>",
            f"tensor<{problem.m}x{problem.n}x{problem.out_dtype}>")


def executable(problem: Gemm, s: StreamSchedule, name: str, entry: str = "gemm") -> str:
    ro = "#hal.pipeline.binding<storage_buffer, ReadOnly>"
    rw = "#hal.pipeline.binding<storage_buffer>"
    layout = f"#hal.pipeline.layout<bindings = [{ro}, {ro}, {rw}]>"
    return f"""  hal.executable.source private @{name} {{
    hal.executable.export public @{entry} ordinal(0) layout({layout}) count(%device: !hal.device) -> \
(index, index, index) {{
      %x = arith.constant {grid_size(problem, s)} : index
      %c1 = arith.constant 1 : index
      hal.return %x, %c1, %c1 : index, index, index
    }}
    builtin.module {{
{_kernel(problem, s, layout, entry)}
    }}
  }}"""


def program(problem: Gemm, s: StreamSchedule, function: str = "main") -> str:
    """An IREE program `function(A, B) -> C` whose executable `@stream` holds the one dispatch `@gemm`."""
    s.check()
    check_problem(problem, s)
    ta, tb, tc = tensor_types(problem)
    return f"""#target = {TARGET}
module attributes {{hal.device.targets = [#hal.device.target<"cuda", [#target]> : !hal.device]}} {{
{executable(problem, s, "stream")}
  func.func @{function}(%a: {ta}, %b: {tb}) -> {tc} {{
    %c = flow.dispatch @stream::@gemm(%a, %b) : ({ta}, {tb}) -> {tc}
    return %c : {tc}
  }}
}}
"""


def loads_per_step(problem: Gemm, s: StreamSchedule) -> tuple[int, int]:
    """(16-byte, 8-byte) global loads a thread issues per loop step: per chunk of `unroll`, A's two rows (16 bytes)
    and B's (nt: 16 bytes per block of 8 columns; nn: 8 rows per set of loads, 16 or 8 bytes by `nn_width`)."""
    if problem.layout == "nt":
        return s.unroll * (2 + blocks(problem, s)), 0
    if s.transpose:
        return s.unroll * (2 + 4 * (s.columns // MOVED)), 0
    b_loads = 8 * (s.columns // nn_width(s))
    return (s.unroll * (2 + b_loads), 0) if nn_width(s) == NN_GROUP else (2 * s.unroll, s.unroll * b_loads)


def check_ptx(ptx: str, problem: Gemm, s: StreamSchedule) -> None:
    """That the PTX of the stream kernel shows every choice of `s` for `problem`: the workgroup's threads, the MMAs of
    a loop step (2 per block of 8 columns per chunk, in the problem's type; a whole number of steps, as LLVM may
    unroll the loop) with as many steps of non-coherent loads of each width (`loads_per_step`; one step more, before
    the loop, with `ahead`, that many), each with the L2 prefetch `hint` (B's past L1 with `bypass`, A's never; A's
    and B's told apart by their predicates), each thread's partial product into shared
    memory (4 words per block), one barrier, the warps' partials read back (warps per output a thread sums); with
    slices a cluster of that many workgroups, each one's sum in its shared memory, two cluster barriers and every
    slice's sum read through distributed shared memory for the workgroup's share of the columns; C stored in its
    type (f32, or rounded to the input type); no other global or shared access."""
    dt = MMA_TYPES[problem.dtype]
    mmas = len(re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{dt}\.{dt}\.f32\b", ptx))
    per_step = 2 * s.unroll * blocks(problem, s)
    level = re.escape(f".{s.hint}") if s.hint else ""
    past = re.escape(".L1::no_allocate") if s.bypass else ""  # B's loads only

    def counted(operand: str, qualifiers: str, width: int) -> int:  # the operand's loads (its predicate), of a form
        return len(re.findall(rf"@{PREDICATES[operand]} ld\.global\.nc{qualifiers}\.v{width}\.u32\b", ptx))

    a_loads = counted("a", level, 4)
    wide, narrow = a_loads + counted("b", past + level, 4), counted("b", past + level, 2)
    load_counts = loads_per_step(problem, s)
    steps = k_per_warp(problem, s) // (CHUNK * s.unroll)
    # steps of loads: with the loop whole, each step's once (the loads past the last step, unused, are gone); else
    # the loop body's (unrolled or not) and those issued before it
    copies = steps if mmas == steps * per_step else mmas // per_step + ahead_steps(problem, s)
    rounds = _ceil(problem.m * s.columns, s.threads)  # of the warps' sum, each thread's outputs
    sums = s.warps * rounds
    rounded = problem.out_dtype != "f32"
    store = "st.global.b16" if rounded else "st.global.f32"
    shared_rounds = _ceil(problem.m * s.columns // s.slices, s.threads)  # of the slices' sum
    stores = rounds if s.slices == 1 else shared_rounds
    clustered = s.slices > 1
    found = {
        "workgroup size": re.search(rf"\.(maxntid|reqntid) {s.threads}, 1, 1\b", ptx) is not None,
        "MMAs": mmas > 0 and mmas % per_step == 0 and len(re.findall(r"mma\.sync", ptx)) == mmas,
        "transposes": len(re.findall(r"movmatrix\.sync\.aligned\.m8n8\.trans\.b16\b", ptx))
        == (2 * mmas if s.transpose else 0),
        # A's two 16-byte rows a chunk under A's predicate, B's the rest under B's (past L1 with bypass), no other
        "global loads": (wide, narrow) == tuple(copies * n for n in load_counts) and a_loads == copies * 2 * s.unroll
        and len(re.findall(r"ld\.global", ptx)) == wide + narrow,
        "partial products in shared memory": len(re.findall(r"st\.shared\.(b32|f32)\b", ptx))
        == 4 * blocks(problem, s) + (rounds if clustered else 0)
        and len(re.findall(r"ld\.shared\.(b32|f32)\b", ptx)) == sums and len(re.findall(r"\bbar\.sync\b", ptx)) == 1,
        "slices summed in the cluster": (re.search(rf"\.reqnctapercluster {s.slices}, 1, 1\b", ptx) is not None)
        == clustered and len(re.findall(r"barrier\.cluster\.arrive\b", ptx))
        == len(re.findall(r"barrier\.cluster\.wait\b", ptx)) == (2 if clustered else 0)
        and len(re.findall(r"mapa\.shared::cluster\.u32", ptx)) == len(re.findall(r"ld\.shared::cluster\.f32", ptx))
        == (s.slices * shared_rounds if clustered else 0),
        "C's type": len(re.findall(re.escape(store) + r"\b", ptx)) == stores
        and len(re.findall(r"st\.global", ptx)) == stores
        and (re.search(rf"cvt\.rn\.{problem.dtype}\.f32\b", ptx) is not None) == rounded,
    }
    missing = [name for name, ok in found.items() if not ok]
    if missing:
        raise StreamError(f"the stream kernel's PTX does not show its {missing[0]} ({s.describe()}).")


NAME = "stream"


def parse_schedule(text: str) -> StreamSchedule:
    """A stream schedule from `stream:COLUMNSxWARPSxUNROLL[,aheadN][,l2=128|256][,sSLICES][,trans][,nol1]` (e.g.
    stream:64x8x1,ahead,s2), or one sentence what is wrong."""
    name, _, rest = text.partition(":")
    parts = rest.split(",")
    sizes = parts[0].split("x")
    if name != NAME or len(sizes) != 3 or not all(v.isdigit() for v in sizes):
        raise StreamError(f"a stream schedule is {NAME}:COLUMNSxWARPSxUNROLL[,aheadN][,l2=128|256][,sSLICES][,trans]"
                          f"[,nol1] (e.g. {NAME}:64x8x1,ahead,s2), not {text!r}.")
    ahead, hint, slices, transpose, bypass = 0, "", 1, False, False
    for flag in parts[1:]:
        if re.fullmatch(r"ahead\d*", flag):
            ahead = int(flag[5:] or 1)
        elif flag in ("l2=128", "l2=256"):
            hint = f"L2::{flag[3:]}B"
        elif flag == "trans":
            transpose = True
        elif flag == "nol1":
            bypass = True
        elif re.fullmatch(r"s\d+", flag):
            slices = int(flag[1:])
        else:
            raise StreamError(f"unknown stream schedule option {flag!r}; the options are ahead (or aheadN), l2=128, "
                              "l2=256, sSLICES, trans and nol1.")
    schedule = StreamSchedule(columns=int(sizes[0]), warps=int(sizes[1]), unroll=int(sizes[2]), ahead=ahead, hint=hint,
                              slices=slices, transpose=transpose, bypass=bypass)
    schedule.check()
    return schedule


def schedule_text(s: StreamSchedule) -> str:
    """`s` as `parse_schedule` reads it."""
    flags = ([",ahead" + (str(s.ahead) if s.ahead > 1 else "")] if s.ahead else []) \
        + ([f",l2={s.hint[4:-1]}"] if s.hint else []) + ([f",s{s.slices}"] if s.slices > 1 else []) \
        + ([",trans"] if s.transpose else []) + ([",nol1"] if s.bypass else [])
    return f"{NAME}:{s.columns}x{s.warps}x{s.unroll}" + "".join(flags)
