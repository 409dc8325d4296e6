"""Matrix instructions: MFMA (gfx942, gfx950; wave64), sparse SMFMAC (A 2:4-sparse; the CDNA3 forms, which IREE's
skinny-GEMM kernels use on gfx942 and gfx950) and WMMA (gfx11; wave32), their lane layouts and numerics.

A layout says, for every lane and every element a lane holds, which row/column and which K index of the operand
it is. Operand A of an M×N×K instruction is M×K, B is K×N, C/D is M×N in f32. The layouts used here:

- MFMA M×N×K with M = N = 16 or 32 (`groups` = 64 / M lane groups): lane l holds row (A) / column (B) l % M and
  the K elements [g·E, g·E + E) of group g = l // M, E = K / groups elements per lane, in register order. For the
  gfx950 f8f6f4 instructions (32 fp8 per lane) the same rule holds per lane group.
- MFMA C/D: register r of lane l is column l % M; row (r // 4)·8 + (l // M)·4 + r % 4 for 32×32, (l // 16)·4 + r
  for 16×16.
- WMMA 16×16×16 (wave32): lane l holds row / column l % 16 and all 16 K values; lanes 16-31 repeat lanes 0-15.
  D register r of lane l is column l % 16, row 2r + l // 16.
- SMFMAC M×N×K: as MFMA over a window of W = K·M/64 dense K per lane, A holding the two values each 4-group of
  the window keeps and the index register their positions (the section "sparse (SMFMAC)" below).

Numerics model: products of the narrow inputs are exact in float64, each instruction sums its K products in
float64, adds the f32 accumulator and rounds once to f32 (round to nearest even). The hardware's adder tree
rounds differently inside one instruction, so results can differ from it in the last bit of f32 per
instruction; over K they stay within the accumulation tolerance. Inputs are decoded with ml_dtypes: FNUZ fp8
on gfx942, OCP fp8 (e4m3fn / e5m2) on gfx950.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..targets import TARGETS
from .machine import REFUSED, EmulatorError, decoder, read_rows, vector_writer
from .isa import Reg


@dataclass(frozen=True)
class MatrixShape:
    m: int
    n: int
    k: int
    a_type: str  # 'bf16', 'f16', 'fp8', 'bf8'
    b_type: str
    lanes: int
    wmma: bool = False

    @property
    def elem_bytes(self) -> int:
        return 2 if self.a_type in ("bf16", "f16") else 1

    @property
    def per_lane(self) -> int:
        return self.m * self.k // self.lanes if not self.wmma else self.k

    @property
    def c_regs(self) -> int:
        return self.m * self.n // self.lanes


def narrow_type(kind: str, arch: str):
    """The numpy type of an MFMA input kind ('bf16', 'f16', 'fp8', 'bf8') on `arch`: fp8 is the chip's flavour."""
    if kind == "bf16":
        return ml_dtypes.bfloat16
    if kind == "f16":
        return np.float16
    ocp = not any(t.endswith("FNUZ") for t in TARGETS[arch].fp8_types)  # the chip's fp8 flavour, from its table
    return {("fp8", False): ml_dtypes.float8_e4m3fnuz, ("bf8", False): ml_dtypes.float8_e5m2fnuz,
            ("fp8", True): ml_dtypes.float8_e4m3fn, ("bf8", True): ml_dtypes.float8_e5m2}[(kind, ocp)]


_TABLES: dict = {}


def _decoder(dtype):
    """A function from raw encodings (uint16 or uint8 arrays) of an input type to float64 values. bf16 is the high
    half of an f32 and f16 is native to numpy; the fp8 types decode through a 256-entry table."""
    if dtype == ml_dtypes.bfloat16:
        return lambda raw: (raw.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if dtype == np.float16:
        return lambda raw: raw.view(np.float16).astype(np.float64)
    key = np.dtype(dtype).name
    if key not in _TABLES:
        with np.errstate(invalid="ignore"):  # NaN encodings stay NaN
            _TABLES[key] = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    table = _TABLES[key]
    return lambda raw: table[raw]


def operand_layout(shape: MatrixShape) -> tuple[np.ndarray, np.ndarray]:
    """(row-or-column, k) of every [lane, element] of the A (or B) operand."""
    lanes, e = np.arange(shape.lanes)[:, None], np.arange(shape.per_lane)[None, :]
    if shape.wmma:
        return np.broadcast_to(lanes % 16, (shape.lanes, shape.per_lane)), np.broadcast_to(e, (shape.lanes,
                                                                                                shape.per_lane))
    group = lanes // shape.m
    return np.broadcast_to(lanes % shape.m, (shape.lanes, shape.per_lane)), group * shape.per_lane + e


def result_layout(shape: MatrixShape) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every [register, lane] of C/D."""
    r, lanes = np.arange(shape.c_regs)[:, None], np.arange(shape.lanes)[None, :]
    if shape.wmma:
        return 2 * r + lanes // 16, np.broadcast_to(lanes % 16, (shape.c_regs, shape.lanes))
    if shape.m == 32:
        return (r // 4) * 8 + (lanes // 32) * 4 + r % 4, np.broadcast_to(lanes % 32, (shape.c_regs, shape.lanes))
    return (lanes // 16) * 4 + r, np.broadcast_to(lanes % 16, (shape.c_regs, shape.lanes))


_MFMA = re.compile(r"v_mfma_f32_(\d+)x(\d+)x(\d+)_?(bf16|f16|fp8_fp8|fp8_bf8|bf8_fp8|bf8_bf8|f8f6f4)$")
_WMMA = re.compile(r"v_wmma_f32_16x16x16_(f16|bf16)$")
_F8F6F4_FORMATS = {0: "fp8", 1: "bf8"}  # cbsz / blgp values; 2-4 are fp6/bf6/fp4, not used by our kernels


def _shape(inst, ctx) -> MatrixShape:
    match = _MFMA.match(inst.opcode)
    if match:
        m, n, k, types = match.groups()
        if types in ("bf16", "f16"):
            a = b = types
        elif types == "f8f6f4":
            cbsz, blgp = int(inst.modifiers.get("cbsz", 0)), int(inst.modifiers.get("blgp", 0))
            if cbsz not in _F8F6F4_FORMATS or blgp not in _F8F6F4_FORMATS:
                raise EmulatorError(f"'{inst.text}' (line {inst.line}) uses an fp6/fp4 format, not modelled.")
            a, b = _F8F6F4_FORMATS[cbsz], _F8F6F4_FORMATS[blgp]
        else:
            a, b = types.split("_")
        return MatrixShape(int(m), int(n), int(k), a, b, ctx.lanes)
    match = _WMMA.match(inst.opcode)
    if match:
        if ctx.lanes != 32:
            raise EmulatorError(f"'{inst.text}' in a wave64 kernel is not modelled.")
        return MatrixShape(16, 16, 16, match[1], match[1], 32, wmma=True)
    raise EmulatorError(f"unknown matrix instruction '{inst.text}'.")


def _register_matrix_opcodes():
    names = [f"v_mfma_f32_{s}_{t}" for s, t in (("16x16x16", "bf16"), ("16x16x16", "f16"), ("32x32x8", "bf16"),
                                                ("32x32x8", "f16"), ("16x16x32", "bf16"), ("16x16x32", "f16"),
                                                ("32x32x16", "bf16"), ("32x32x16", "f16"))]
    names += [f"v_mfma_f32_{s}_{t}" for s in ("16x16x32", "32x32x16") for t in ("fp8_fp8", "fp8_bf8", "bf8_fp8",
                                                                                 "bf8_bf8")]
    names += ["v_mfma_f32_16x16x128_f8f6f4", "v_mfma_f32_32x32x64_f8f6f4", "v_wmma_f32_16x16x16_f16",
              "v_wmma_f32_16x16x16_bf16"]
    return names


@decoder(*_register_matrix_opcodes())
def _matrix(inst, ctx):
    shape = _shape(inst, ctx)
    allowed = {"cbsz", "blgp"} if inst.opcode.endswith("f8f6f4") else set()
    if set(inst.modifiers) - allowed or (not allowed and inst.modifiers):
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' (line {inst.line}).")
    dst, a_op, b_op, c_op = inst.operands
    a_type, b_type = narrow_type(shape.a_type, ctx.arch), narrow_type(shape.b_type, ctx.arch)
    a_rows, a_k = operand_layout(shape)
    c_rows, c_cols = result_layout(shape)
    elem_bytes = shape.elem_bytes
    a_regs = shape.per_lane * elem_bytes // 4
    for op, count in ((a_op, a_regs), (b_op, a_regs), (dst, shape.c_regs)):
        if not isinstance(op, Reg) or op.count != count:
            raise EmulatorError(f"'{inst.text}' (line {inst.line}): operand {op} should span {count} registers.")
    writers = [vector_writer(Reg(dst.kind, dst.index + r)) for r in range(shape.c_regs)]
    c_zero = isinstance(c_op, int)
    if c_zero and c_op != 0:
        raise EmulatorError(f"'{inst.text}' (line {inst.line}): only 0 is modelled as an immediate accumulator.")
    # The layouts as gathers: position in the [lanes × per_lane] operand (or [registers × lanes] result) of every
    # element of row-major A, B and C. Where lanes repeat (WMMA), the highest lane is read, as a scatter would.
    lane_elems = np.arange(shape.lanes * shape.per_lane).reshape(shape.lanes, shape.per_lane)
    take_a = np.zeros(shape.m * shape.k, np.int64)
    take_a[a_rows * shape.k + a_k] = lane_elems
    take_b = np.zeros(shape.k * shape.n, np.int64)
    take_b[a_k * shape.n + a_rows] = lane_elems
    put_c = (c_rows * shape.n + c_cols).reshape(-1)  # [registers × lanes] -> element of row-major C
    take_c = np.zeros(shape.m * shape.n, np.int64)
    take_c[put_c] = np.arange(put_c.size)
    a_decode, b_decode = _decoder(a_type), _decoder(b_type)
    wide = np.uint16 if elem_bytes == 2 else np.uint8

    def elements(w, op, decode):
        rows = read_rows(w, op.kind, op.index, op.count)  # [regs, batch × lanes]
        raw = np.ascontiguousarray(rows.T).view(wide)  # [batch × lanes, per_lane] encodings
        return decode(raw.reshape(w.batch, shape.lanes * shape.per_lane))

    def run(w):
        batch = w.batch
        a_vals, b_vals = elements(w, a_op, a_decode), elements(w, b_op, b_decode)
        if shape.wmma:  # RDNA3 WMMA requires lanes 16-31 to repeat lanes 0-15 in A and B
            for name, vals in (("A", a_vals), ("B", b_vals)):
                low, high = vals.reshape(batch, 2, 16, -1)[:, 0], vals.reshape(batch, 2, 16, -1)[:, 1]
                differ = np.flatnonzero(np.any((low != high) & ~(np.isnan(low) & np.isnan(high)), axis=(0, 2)))
                if len(differ):
                    w.hazard("wmma-replication", f"{w.where()}: lanes 16-31 of operand {name} do not repeat lanes "
                             f"0-15 (lane {differ[0]} differs from lane {differ[0] + 16}); the hardware requires it.")
        a = a_vals[:, take_a].reshape(batch, shape.m, shape.k)
        b = b_vals[:, take_b].reshape(batch, shape.k, shape.n)
        d = a @ b
        if not c_zero:
            c = read_rows(w, c_op.kind, c_op.index, c_op.count).view(np.float32)  # [regs, batch × lanes]
            c = c.reshape(shape.c_regs, batch, shape.lanes).transpose(1, 0, 2).reshape(batch, -1)
            d += c[:, take_c].reshape(batch, shape.m, shape.n)
        with np.errstate(over="ignore"):  # beyond f32 range rounds to infinity, as on the hardware
            d = d.astype(np.float32)
        result = d.reshape(batch, -1)[:, put_c].reshape(batch, shape.c_regs, shape.lanes)
        result = result.transpose(1, 0, 2).reshape(shape.c_regs, w.lanes).view(np.uint32)
        for r, write in enumerate(writers):
            write(w, result[r])
        w.workgroup.mma += 1  # per workgroup of the batch
    return run


# ---------------------------------------------------------------------------------------------------- sparse (SMFMAC)
# V_SMFMAC_F32_MxNxK (CDNA3; gfx950 keeps them): D = A·B + D with A M×K 2:4-sparse along K, B K×N dense, C = D in
# place. Sources: AMD's Matrix Instruction Calculator (cdna3, its register/element mappings of A, B, D and the "K[]"
# compression index; execution cycles), MLIR's amdgpu.sparse_mfma (the index sets and CBSZ/ABID). The layout, in
# terms of W = K·M/64 dense K positions per lane:
# - lane l holds row l % M of A and column l % M of B over the K window [g·W, g·W + W) of its lane group g = l // M;
# - B: its W values in K order, packed in registers low half first (as the dense MFMAs);
# - A: W/2 values, two per 4-group of the window: element e is the (e % 2)-th value kept of 4-group e // 2, at
#   position idx(e) in the group, the 2-bit field e of the lane's index set (bits [2e+1 : 2e]); the hardware
#   multiplies it with B at K = g·W + 4·(e // 2) + idx(e) (CK's "a_vec * b_vec[idx]"), so two fields naming the
#   same position add both values there;
# - the index VGPR holds 32 / W sets of W bits; with CBSZ = 0, ABID picks the set, otherwise set 0;
# - D: the dense MFMA's result layout (`result_layout`).
_SMFMAC = re.compile(r"v_smfmac_f32_(16|32)x(16|32)x(\d+)_(bf16|f16|fp8_fp8|fp8_bf8|bf8_fp8|bf8_bf8)$")
_SMFMAC_CDNA3 = [f"v_smfmac_f32_{s}_{t}" for s in ("16x16x32", "32x32x16") for t in ("bf16", "f16")]
_SMFMAC_CDNA3 += [f"v_smfmac_f32_{s}_{t}" for s in ("16x16x64", "32x32x32")
                  for t in ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8")]
# CDNA4's forms with twice the K (16x16x64 and 32x32x32 for 16-bit inputs, 16x16x128 and 32x32x64 for fp8): the
# calculator has no CDNA4 entries, so no source this project checks gives their lane layout; IREE 3.13's default
# kernels use the CDNA3 forms on gfx950 too.
_FP8_PAIRS = ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8")
REFUSED.update({f"v_smfmac_f32_{shape}_{t}": "its CDNA4 lane layout (twice the CDNA3 form's K) is not in a source the "
                "emulator's layout tests check (the matrix instruction calculator covers CDNA3 only), and IREE 3.13 "
                "emits the CDNA3 forms"
                for shape, types in (("16x16x64", ("bf16", "f16")), ("32x32x32", ("bf16", "f16")),
                                     ("16x16x128", _FP8_PAIRS), ("32x32x64", _FP8_PAIRS))
                for t in types})


@dataclass(frozen=True)
class SparseShape:
    """An SMFMAC M×N×K (K the dense K of the sparse A) on wave64."""

    m: int
    n: int
    k: int
    a_type: str  # 'bf16', 'f16', 'fp8', 'bf8'
    b_type: str
    lanes: int = 64

    @property
    def elem_bytes(self) -> int:
        return 2 if self.a_type in ("bf16", "f16") else 1

    @property
    def window(self) -> int:
        """Dense K positions each lane covers (W)."""
        return self.k * self.m // self.lanes

    @property
    def a_regs(self) -> int:
        return self.window // 2 * self.elem_bytes // 4

    @property
    def b_regs(self) -> int:
        return self.window * self.elem_bytes // 4

    @property
    def c_regs(self) -> int:
        return self.m * self.n // self.lanes

    @property
    def index_sets(self) -> int:
        return 32 // self.window


def sparse_layout(shape: SparseShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of A / column of B, first dense K of the 4-group, index field) of every [lane, element] of the compressed
    A operand; B's element e of a lane is at dense K (its group's window start) + e."""
    lanes, e = np.arange(shape.lanes)[:, None], np.arange(shape.window // 2)[None, :]
    start = (lanes // shape.m) * shape.window
    full = (shape.lanes, shape.window // 2)
    return np.broadcast_to(lanes % shape.m, full), np.broadcast_to(start + 4 * (e // 2), full), \
        np.broadcast_to(e, full)


def _sparse_shape(inst) -> SparseShape:
    match = _SMFMAC.match(inst.opcode)
    if match is None:
        raise EmulatorError(f"unknown sparse matrix instruction '{inst.text}'.")
    m, n, k, types = match.groups()
    a, b = (types, types) if types in ("bf16", "f16") else types.split("_")
    return SparseShape(int(m), int(n), int(k), a, b)


@decoder(*_SMFMAC_CDNA3)
def _sparse_matrix(inst, ctx):
    shape = _sparse_shape(inst)
    if ctx.lanes != 64:
        raise EmulatorError(f"'{inst.text}' (line {inst.line}) is a wave64 instruction.")
    if set(inst.modifiers) - {"cbsz", "abid"}:
        raise EmulatorError(f"unsupported modifiers in '{inst.text}' (line {inst.line}).")
    cbsz, abid = int(inst.modifiers.get("cbsz", 0)), int(inst.modifiers.get("abid", 0))
    index_set = abid if cbsz == 0 else 0
    if index_set >= shape.index_sets:
        raise EmulatorError(f"'{inst.text}' (line {inst.line}): abid {abid} names index set {index_set}; the index "
                            f"register holds {shape.index_sets}.")
    dst, a_op, b_op, idx_op = inst.operands
    for op, count, what in ((dst, shape.c_regs, "D"), (a_op, shape.a_regs, "A"), (b_op, shape.b_regs, "B"),
                            (idx_op, 1, "the index")):
        if not isinstance(op, Reg) or op.count != count or (what == "the index" and op.kind != "v"):
            raise EmulatorError(f"'{inst.text}' (line {inst.line}): {what} operand {op} should span {count} "
                                f"{'VGPR' if what == 'the index' else 'registers'}.")
    a_type, b_type = narrow_type(shape.a_type, ctx.arch), narrow_type(shape.b_type, ctx.arch)
    a_decode, b_decode = _decoder(a_type), _decoder(b_type)
    wide = np.uint16 if shape.elem_bytes == 2 else np.uint8
    rows, group_k, field = sparse_layout(shape)
    shift = (index_set * shape.window + 2 * field[0]).astype(np.uint32)  # [W/2]: the field's bit of each element
    result = MatrixShape(shape.m, shape.n, shape.k, shape.a_type, shape.b_type, shape.lanes)
    c_rows, c_cols = result_layout(result)
    put_c = (c_rows * shape.n + c_cols).reshape(-1)  # [registers × lanes] -> element of row-major D
    take_c = np.zeros(shape.m * shape.n, np.int64)
    take_c[put_c] = np.arange(put_c.size)
    # B as [K, N] from [lanes, W]: lane l's element e is B[g·W + e, l % M] (N = M for every SMFMAC)
    b_lanes, b_elems = np.arange(shape.lanes)[:, None], np.arange(shape.window)[None, :]
    take_b = np.zeros(shape.k * shape.n, np.int64)
    take_b[((b_lanes // shape.m) * shape.window + b_elems) * shape.n + b_lanes % shape.n] = \
        b_lanes * shape.window + b_elems
    writers = [vector_writer(Reg(dst.kind, dst.index + r)) for r in range(shape.c_regs)]
    groups = shape.lanes // shape.m

    def elements(w, op, decode, per_lane):
        raw = np.ascontiguousarray(read_rows(w, op.kind, op.index, op.count).T).view(wide)
        return decode(raw.reshape(w.batch, shape.lanes, per_lane))

    def run(w):
        batch = w.batch
        a = elements(w, a_op, a_decode, shape.window // 2)  # [batch, lanes, W/2]
        b = elements(w, b_op, b_decode, shape.window).reshape(batch, -1)[:, take_b].reshape(batch, shape.k, shape.n)
        index = read_rows(w, "v", idx_op.index, 1)[0].reshape(batch, shape.lanes)
        k = group_k[None] + ((index[:, :, None] >> shift[None, None]) & 3).astype(np.int64)  # [batch, lanes, W/2]
        # Only the kept values are multiplied (a pruned position times an infinite B is no NaN): gather B's rows.
        picked = np.take_along_axis(b, k.reshape(batch, -1, 1), axis=1).reshape(batch, shape.lanes, -1, shape.n)
        products = (a[..., None] * picked).sum(axis=2)  # [batch, lanes, N]: lane l's share of row l % M
        d = products.reshape(batch, groups, shape.m, shape.n).sum(axis=1)
        c = read_rows(w, dst.kind, dst.index, dst.count).view(np.float32)
        d = d + c.reshape(shape.c_regs, batch, shape.lanes).transpose(1, 0, 2).reshape(batch, -1)[:, take_c] \
            .reshape(batch, shape.m, shape.n)
        with np.errstate(over="ignore"):  # beyond f32 range rounds to infinity, as on the hardware
            d = d.astype(np.float32)
        out = d.reshape(batch, -1)[:, put_c].reshape(batch, shape.c_regs, shape.lanes)
        out = out.transpose(1, 0, 2).reshape(shape.c_regs, w.lanes).view(np.uint32)
        for r, write in enumerate(writers):
            write(w, out[r])
        w.workgroup.mma += 1
    return run
