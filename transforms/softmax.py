"""A row softmax kernel for sm_90a in one pass over memory: `y[i, j] = round(e[i, j] · (1 / s_i))` with
`e[i, j] = 2^((x[i, j] - m_i) · log2(e))` (ex2.approx), `m_i = max_j x[i, j]` and `s_i = sum_j e[i, j]`, the
arithmetic in f32 and x, y in one 16-bit type: what an importer's softmax of a 16-bit tensor computes (extend to f32,
the max, the shifted exponentials, their sum, the quotients, rounded back), within f32's rounding (the sums' order,
the exponential's 2^-22.5 and the reciprocal's product differ from the importer's ops by a few f32 ulps, far below
the 16-bit result's).

IREE 3.13 runs that softmax with one 32-thread workgroup per row reading the row three times (its VectorDistribute
reduction configuration); this kernel gives a row to a workgroup of `threads` threads that each load their share of
it once, in 16-byte vectors (8 elements) into registers, reduce the max and the sum over the workgroup (warp
shuffles, then one shared word per warp), and store the row once. Lanes own whole vectors: vector `v` of thread `t`
holds columns `8 * (v * threads + t)` to `+ 7`, so a warp's loads and stores cover 512 consecutive bytes. A vector
past the row's end (only in the last round, when the row is no whole multiple of `8 * threads` columns) is loaded as
-inf (nothing to the max, exp 0 to the sum) and not stored.

The kernel is emitted as `transforms.hopper` emits its GEMMs: a `hal.executable.source` whose function IREE
lowers without a codegen pipeline (`translation_info` no_pipeline), global memory through i64 addresses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transforms.errors import UserError
from transforms.hopper import TARGET, HopperError, _Body, _binding, _memref, _pointer, ptx_kernel

VECTOR = 8  # elements of a 16-bit row per load and store (16 bytes)
WARP = 32
MAX_THREADS = 256
MAX_VECTORS = 8  # vectors a thread holds: 64 f32 values in registers at most (rows of up to 16384 elements)
DTYPES = ("f16", "bf16")
# the model's max, as the importer writes it (maximumf) or IREE's rewrite of it (maxnumf); IREE lowers both to PTX's
# max.f32, which ignores a NaN, and a NaN in a row still reaches every element through its exponential and the sum
MAX_OPS = ("arith.maximumf", "arith.maxnumf")
NEG_INF = {"f16": "0xFC00", "bf16": "0xFF80"}
LOG2E = "0x3FB8AA3B"  # log2(e) rounded to f32


class SoftmaxError(UserError, ValueError):
    """A softmax this kernel does not take; one sentence saying why."""


@dataclass(frozen=True)
class RowSoftmax:
    """Softmax along the rows of a rows × cols tensor of `dtype`, computed in f32 and rounded back to `dtype`;
    `max_op` is the model's max (NaN propagated or ignored)."""

    rows: int
    cols: int
    dtype: str = "f16"
    max_op: str = "arith.maximumf"

    def check(self) -> None:
        if self.dtype not in DTYPES:
            raise SoftmaxError(f"the softmax kernel takes {' or '.join(DTYPES)} rows, not {self.dtype}.")
        if self.max_op not in MAX_OPS:
            raise SoftmaxError(f"the softmax kernel's max is one of {', '.join(MAX_OPS)}, not {self.max_op}.")
        if self.rows < 1 or self.cols < 1:
            raise SoftmaxError(f"a softmax of {self.rows}x{self.cols} has no elements.")
        if self.cols % VECTOR:
            raise SoftmaxError(f"the softmax kernel loads rows in {VECTOR}-element vectors: {self.cols} columns is "
                               f"no multiple of {VECTOR}.")
        if self.vectors > MAX_VECTORS:
            raise SoftmaxError(f"the softmax kernel holds a row in registers: {self.cols} columns is more than "
                               f"{MAX_VECTORS * VECTOR * MAX_THREADS}.")
        if self.rows >= 2 ** 31:
            raise SoftmaxError(f"the softmax kernel runs a workgroup per row: {self.rows} rows is more than 2^31 - 1.")

    @property
    def threads(self) -> int:
        """A workgroup's threads: enough whole warps for one vector each, 256 at most."""
        warps = -(-self.cols // (VECTOR * WARP))
        return min(MAX_THREADS, warps * WARP)

    @property
    def vectors(self) -> int:
        """Vectors each thread loads (the last round may run past the row's end)."""
        return -(-self.cols // (VECTOR * self.threads))

    @property
    def whole_rounds(self) -> int:
        """Rounds in which every thread's vector lies inside the row (no guard)."""
        return self.cols // (VECTOR * self.threads)

    def tensor_type(self) -> str:
        return f"tensor<{self.rows}x{self.cols}x{self.dtype}>"

    def describe(self) -> str:
        return (f"row softmax {self.rows}x{self.cols} {self.dtype}: a workgroup of {self.threads} threads per row, "
                f"{self.vectors} vector(s) of {VECTOR} a thread, one read and one write (sm_90a)")


def _kernel(s: RowSoftmax, entry: str, layout: str) -> str:
    b = _Body()
    i32 = lambda v: b.const(v, "i32")  # noqa: E731
    i64 = lambda v: b.const(v, "i64")  # noqa: E731
    memref = _memref([s.rows, s.cols], s.dtype)
    x, y = _binding(b, layout, 0, memref, "x", True), _binding(b, layout, 1, memref, "y", False)
    px, py = _pointer(b, x, memref), _pointer(b, y, memref)
    warps = s.threads // WARP
    tid = b.op(f"arith.index_cast {b.op('gpu.thread_id x', 'tid')} : index to i32", "tid")
    row = b.op(f"arith.index_cast {b.op('hal.interface.workgroup.id[0] : index', 'row')} : index to i64", "row")
    lane, warp = b.arith("remui", tid, i32(WARP), "i32"), b.arith("divui", tid, i32(WARP), "i32")
    row_bytes = b.arith("muli", row, i64(s.cols * 2), "i64")
    vec16, neg = f"vector<{VECTOR}x{s.dtype}>", b.op(f"arith.constant {NEG_INF[s.dtype]} : {s.dtype}", "ninf")
    shared_ty = f"memref<{warps}xf32, #gpu.address_space<workgroup>>"
    partial_max, partial_sum = (b.op(f"memref.alloc() : {shared_ty}", name) for name in ("smax", "ssum"))

    def address(base: str, v: int) -> tuple[str, str]:  # (!llvm.ptr<1> of this thread's vector v, its column)
        column = b.arith("muli", b.arith("addi", i32(v * s.threads), tid, "i32"), i32(VECTOR), "i32")
        offset = b.arith("addi", row_bytes, b.arith("muli", b.op(f"arith.extui {column} : i32 to i64", "col"),
                                                    i64(2), "i64"), "i64")
        return b.op(f"llvm.inttoptr {b.arith('addi', base, offset, 'i64')} : i64 to !llvm.ptr<1>", "gp"), column

    def inside(column: str) -> str:
        return b.op(f"arith.cmpi ult, {column}, {i32(s.cols)} : i32", "in")

    values: list[str] = []  # this thread's elements, f32
    for v in range(s.vectors):
        pointer, column = address(px, v)
        load = f'"llvm.load"({pointer}) <{{alignment = 16 : i64, ordering = 0 : i64}}> : (!llvm.ptr<1>) -> {vec16}'
        if v < s.whole_rounds:
            loaded = b.op(load, "ld")
        else:
            loaded = b.op(f"scf.if {inside(column)} -> ({vec16}) {{", "ld")
            b.op(f"  %lv{b.count} = {load}")
            b.op(f"  scf.yield %lv{b.count} : {vec16}")
            b.op("} else {")
            b.op(f"  %nv{b.count} = vector.broadcast {neg} : {s.dtype} to {vec16}")
            b.op(f"  scf.yield %nv{b.count} : {vec16}")
            b.op("}")
        for e in range(VECTOR):
            element = b.op(f"vector.extract {loaded}[{e}] : {s.dtype} from {vec16}", "e")
            values.append(b.op(f"arith.extf {element} : {s.dtype} to f32", "f"))

    def reduce(op: str, items: list[str], shared: str) -> str:
        """`op` over the workgroup's elements: this thread's, the warp's (xor shuffles), the warps' (shared)."""
        total = items[0]
        for item in items[1:]:
            total = b.op(f"{op} {total}, {item} : f32", "r")
        for offset in (16, 8, 4, 2, 1):
            other = b.op(f"gpu.shuffle xor {total}, {i32(offset)}, {i32(WARP)} : f32", "sh")
            b.lines[-1] = b.lines[-1].replace(f"{other} =", f"{other}:2 =", 1)  # (value, valid)
            total = b.op(f"{op} {total}, {other}#0 : f32", "r")
        b.op(f"scf.if {b.op(f'arith.cmpi eq, {lane}, {i32(0)} : i32', 'l0')} {{")
        b.op(f"  memref.store {total}, {shared}[{b.op(f'arith.index_cast {warp} : i32 to index', 'w')}] : {shared_ty}")
        b.op("}")
        b.op("gpu.barrier")
        parts = [b.op(f"memref.load {shared}[{b.const(w, 'index')}] : {shared_ty}", "p") for w in range(warps)]
        total = parts[0]
        for part in parts[1:]:
            total = b.op(f"{op} {total}, {part} : f32", "r")
        return total

    high = reduce(s.max_op, values, partial_max)
    # exp(x - m) = 2^((x - m)·log2(e)): a difference, a product and an ex2.approx (relative error 2^-22.5 at most;
    # PTX ISA, ex2) an element. The difference first, as the model computes it: m·log2(e) rounded to f32 would be
    # off by more than 1 for |m| above about 2^24 (a bf16 row near its range's ends, a row masked with its minimum)
    log2e = b.op(f"arith.constant {LOG2E} : f32", "l2e")
    exps = [_ex2(b, b.op(f"arith.mulf {b.op(f'arith.subf {v}, {high} : f32', 'd')}, {log2e} : f32", "t"))
            for v in values]
    total = reduce("arith.addf", exps, partial_sum)
    inverse = b.op(f"arith.divf {b.op('arith.constant 1.0 : f32', 'one')}, {total} : f32", "inv")
    for v in range(s.vectors):
        pointer, column = address(py, v)
        rounded = [b.op(f"arith.truncf {b.op(f'arith.mulf {x}, {inverse} : f32', 'q')} : f32 to {s.dtype}", "t")
                   for x in exps[v * VECTOR:(v + 1) * VECTOR]]
        vector = b.op(f"vector.from_elements {', '.join(rounded)} : {vec16}", "o")
        store = (f'"llvm.store"({vector}, {pointer}) <{{alignment = 16 : i64, ordering = 0 : i64}}> : '
                 f'({vec16}, !llvm.ptr<1>) -> ()')
        if v < s.whole_rounds:
            b.op(store)
        else:
            b.op(f"scf.if {inside(column)} {{")
            b.op("  " + store)
            b.op("}")
    return f"""      func.func @{entry}() attributes {{translation_info = #iree_codegen.translation_info<\
pipeline = #iree_codegen.no_pipeline workgroup_size = [{s.threads}, 1, 1] subgroup_size = {WARP}>}} {{
        {b.text()}
        return
      }}"""


def _ex2(b: _Body, t: str) -> str:
    """2^t in f32 (`ex2.approx.f32`: subnormal results kept, -inf to +0, NaN to NaN)."""
    return b.op(f'llvm.inline_asm asm_dialect = att "ex2.approx.f32 $0, $1;", "=f,f" {t} : (f32) -> f32', "x")


LAYOUT = ("#hal.pipeline.layout<bindings = [#hal.pipeline.binding<storage_buffer, ReadOnly>, "
          "#hal.pipeline.binding<storage_buffer>]>")


def executable(s: RowSoftmax, name: str, entry: str) -> str:
    """`hal.executable.source @name` exporting `@entry` (bindings x, y; one workgroup per row)."""
    s.check()
    return f"""  hal.executable.source private @{name} {{
    hal.executable.export public @{entry} ordinal(0) layout({LAYOUT}) count(%device: !hal.device) -> \
(index, index, index) {{
      %x = arith.constant {s.rows} : index
      %c1 = arith.constant 1 : index
      hal.return %x, %c1, %c1 : index, index, index
    }}
    builtin.module {{
{_kernel(s, entry, LAYOUT)}
    }}
  }}"""


def function(s: RowSoftmax, name: str, executable_name: str, entry: str | None = None, private: bool = True) -> str:
    """A `func.func @name(x) -> y` (private unless asked) holding the one dispatch of `executable_name`'s `entry`
    (default: `name`)."""
    t = s.tensor_type()
    return f"""  func.func {"private " if private else ""}@{name}(%x: {t}) -> {t} {{
    %y = flow.dispatch @{executable_name}::@{entry or name}(%x) : ({t}) -> {t}
    return %y : {t}
  }}"""


def program(s: RowSoftmax, function_name: str = "main") -> str:
    """An IREE program `function_name(x) -> y` of the kernel alone (what the tests and a benchmark compile)."""
    return f"""#target = {TARGET}
module attributes {{hal.device.targets = [#hal.device.target<"cuda", [#target]> : !hal.device]}} {{
{executable(s, "softmax_exe", "softmax_kernel")}
{function(s, function_name, "softmax_exe", "softmax_kernel", private=False)}
}}
"""


def check_ptx(ptx: str, s: RowSoftmax, entry: str) -> None:
    """The compiled kernel `entry` is the one pass this module emits: every load and store of the row in 16-byte
    vectors (`vectors` of each, no other global access), two workgroup reductions of five xor shuffles each, two
    barriers, an exponential per element a thread holds and one division. Raises SoftmaxError naming what is
    missing."""
    try:
        body = ptx_kernel(ptx, entry)
    except HopperError as err:
        raise SoftmaxError(str(err)) from None
    accesses = re.findall(r"\b(ld|st)\.global(\.[\w.]+)\s", body)
    narrow = [kind + suffix for kind, suffix in accesses if not re.fullmatch(r"(?:\.nc)?\.v4\.(?:b32|u32|f32)", suffix)]
    if narrow:
        raise SoftmaxError(f"kernel {entry}: {len(narrow)} global access(es) narrower than 16 bytes ({narrow[0]}).")
    wants = {
        "16-byte loads of the row": (r"\bld\.global(?:\.nc)?\.v4\.(?:b32|u32|f32)", s.vectors),
        "16-byte stores of the row": (r"\bst\.global\.v4\.(?:b32|u32|f32)", s.vectors),
        "xor shuffles (two reductions over a warp)": (r"shfl\.sync\.bfly\.b32", 10),
        "barriers (one per reduction over the warps)": (r"bar\.sync|barrier\.sync", 2),
        "exponentials (one per element a thread holds)": (r"ex2\.approx\.f32", s.vectors * VECTOR),
        "divisions (the sum's reciprocal)": (r"(?:div|rcp)\.rn\.f32", 1),
    }
    for what, (pattern, count) in wants.items():
        found = len(re.findall(pattern, body))
        if found != count:
            raise SoftmaxError(f"kernel {entry}: {found} {what}, expected {count}.")
