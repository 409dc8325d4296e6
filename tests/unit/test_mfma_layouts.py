"""The emulator's MFMA / WMMA operand layouts checked against three sources outside this project, through its decoder.

Every table below is transcribed from a named source, never computed from `pipelines/emulator/matrix.py`:

- gfx942 (CDNA3) MFMA and gfx1151 (RDNA3) WMMA: AMD's Matrix Instruction Calculator,
  github.com/ROCm/amd_matrix_instruction_calculator at 2ef91896bcdc4d26624f952e5c905c787cd9bc9e,
  `matrix_calculator.py --architecture cdna3|rdna3 --instruction <op> --detail-instruction [--wavefront 32]`,
  its "Register to matrix element mapping with no modifiers" equations, kept verbatim. The calculator has no
  CDNA4 entries at that commit.
- gfx950 (CDNA4) MFMA: IREE's `getSingleSubgroupLayout` (github.com/iree-org/iree at
  b48a5955575cf8924ffc191f3b0804976e5738b9, compiler/src/iree/compiler/Codegen/Dialect/GPU/IR/IREEGPUAttrs.cpp),
  its MMASingleSubgroupLayout tuples (outer, thread, tstrides, element) per intrinsic, read with the semantics its
  header IREEGPUAttrs.h documents. IREE's per-lane vector element e lies in register e·bits // 32 at bit
  e·bits % 32 (LLVM's vector-to-VGPR packing; the calculator's GPR_bits terms say the same for CDNA3).
- gfx950, a second, AMD-authored source for three instructions: the HIP kernels of "Matrix Core Programming on AMD
  CDNA3 and CDNA4 architecture" (ROCm Blogs, rocm.blogs.amd.com/software-tools-optimization/matrix-cores-cdna,
  2025; its sections 5.2, 5.3 and 5.4; read from github.com/salykova/salykova.github.io at 4febbddb,
  _posts/2025-10-01-matrix-cores-cdna.markdown), whose load and store index expressions are kept verbatim. Its
  32x32x64 kernel calls the block-scaled form with unit scales; its layout is applied to the unscaled opcode.

A test places small integers of A, B and C in the lanes and registers the source names, runs the instruction
through the emulator's decoder and compares every element of D, read back where the source says it lies, with
A @ B + C in float64 (exact for these integers). D sees the K index only through the pairing of A's and B's K, so
a K order that A and B share is invisible to it (and to the hardware, without block scales); the emulator's
documented tables (`operand_layout`, `result_layout`) are therefore also compared with the calculator and IREE
element by element. Each source table, with two of its entries exchanged, must fail the D check.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

from pipelines.emulator.isa import parse_instruction
from pipelines.emulator.machine import DECODERS, DecodeContext, Wave
from pipelines.emulator.matrix import MatrixShape, operand_layout, result_layout

TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16,
         "fp8_fnuz": ml_dtypes.float8_e4m3fnuz, "bf8_fnuz": ml_dtypes.float8_e5m2fnuz,  # CDNA3 fp8
         "fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2}  # CDNA4 (OCP) fp8


@dataclass(frozen=True)
class Case:
    """One instruction as a source lays it out: `a`, `b`, `c` hold, for every [lane, slot] of the operand, the
    row-major flat index of the matrix element there (slot: the element's position in the lane's registers)."""
    source: str
    arch: str
    opcode: str
    m: int
    n: int
    k: int
    a_type: str
    b_type: str
    lanes: int
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    modifiers: str = ""

    @property
    def name(self) -> str:
        return "-".join([self.source, self.arch, self.opcode] + self.modifiers.split())


# ---------------------------------------------------------------------------------------------------- the calculator
# (opcodes, M, N, K, lanes): the six "Register to matrix element mapping with no modifiers" lines, verbatim.
CALCULATOR = [
    (("v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x16_f16"), 16, 16, 16, 64, """
        A i: (lane % 16)
        A k: 4 * floor(lane / 16) + 2 * GPR_num + floor(GPR_bits / 16)
        B j: (lane % 16)
        B k: 4 * floor(lane / 16) + 2 * GPR_num + floor(GPR_bits / 16)
        C or D i: 4 * floor(lane / 16) + (GPR_num % 4)
        C or D j: (lane % 16)"""),
    (("v_mfma_f32_32x32x8_bf16", "v_mfma_f32_32x32x8_f16"), 32, 32, 8, 64, """
        A i: (lane % 32)
        A k: 4 * floor(lane / 32) + 2 * GPR_num + floor(GPR_bits / 16)
        B j: (lane % 32)
        B k: 4 * floor(lane / 32) + 2 * GPR_num + floor(GPR_bits / 16)
        C or D i: (8 * floor(GPR_num / 4) % 32) + 4 * floor(lane / 32) + (GPR_num % 4)
        C or D j: (lane % 32)"""),
    (tuple(f"v_mfma_f32_16x16x32_{t}" for t in ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8")), 16, 16, 32, 64, """
        A i: (lane % 16)
        A k: 8 * floor(lane / 16) + 4 * GPR_num + floor(GPR_bits / 8)
        B j: (lane % 16)
        B k: 8 * floor(lane / 16) + 4 * GPR_num + floor(GPR_bits / 8)
        C or D i: 4 * floor(lane / 16) + (GPR_num % 4)
        C or D j: (lane % 16)"""),
    (tuple(f"v_mfma_f32_32x32x16_{t}" for t in ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8")), 32, 32, 16, 64, """
        A i: (lane % 32)
        A k: 8 * floor(lane / 32) + 4 * GPR_num + floor(GPR_bits / 8)
        B j: (lane % 32)
        B k: 8 * floor(lane / 32) + 4 * GPR_num + floor(GPR_bits / 8)
        C or D i: (8 * floor(GPR_num / 4) % 32) + 4 * floor(lane / 32) + (GPR_num % 4)
        C or D j: (lane % 32)"""),
    # rdna3, --wavefront 32 ("Wave32 register to matrix element mapping")
    (("v_wmma_f32_16x16x16_f16", "v_wmma_f32_16x16x16_bf16"), 16, 16, 16, 32, """
        A i: (lane % 16)
        A k: 2 * GPR_num + floor(GPR_bits / 16)
        B j: (lane % 16)
        B k: 2 * GPR_num + floor(GPR_bits / 16)
        C or D i: 2 * GPR_num + floor(lane / 16)
        C or D j: (lane % 16)"""),
]


def operand_types(opcode: str, fp8_suffix: str) -> tuple[str, str]:
    kinds = opcode.rsplit("_", 2)[-2:] if "fp8" in opcode or "bf8" in opcode else [opcode.rsplit("_", 1)[-1]] * 2
    return tuple(t + fp8_suffix if t in ("fp8", "bf8") else t for t in kinds)


def calculator_case(opcode: str, m: int, n: int, k: int, lanes: int, text: str) -> Case:
    equations = dict(line.strip().split(": ", 1) for line in text.strip().splitlines())
    a_type, b_type = operand_types(opcode, "_fnuz")
    bits = 8 * np.dtype(TYPES[a_type]).itemsize
    per_lane = k if lanes == 32 else m * k // lanes  # RDNA3 WMMA: lanes 16-31 hold lanes 0-15's rows again
    lane, slot = np.arange(lanes)[:, None], np.arange(per_lane)[None, :]

    def evaluate(key, gpr, gpr_bits):  # the calculator's own text, so the table is the source's words
        value = eval(equations[key], {"floor": np.floor, "lane": lane, "GPR_num": gpr, "GPR_bits": gpr_bits})
        return np.broadcast_to(np.asarray(value).astype(np.int64), np.broadcast(lane, gpr).shape)

    gpr, gpr_bits = slot * bits // 32, slot * bits % 32
    c_reg = np.arange(m * n // lanes)[None, :]
    return Case("calculator", "gfx1151" if lanes == 32 else "gfx942", opcode, m, n, k, a_type, b_type, lanes,
                a=evaluate("A i", gpr, gpr_bits) * k + evaluate("A k", gpr, gpr_bits),
                b=evaluate("B k", gpr, gpr_bits) * n + evaluate("B j", gpr, gpr_bits),
                c=evaluate("C or D i", c_reg, 0) * n + evaluate("C or D j", c_reg, 0))


# ---------------------------------------------------------------------------------------------------- IREE
# MMASingleSubgroupLayout {outer, thread, tstrides, element}, as getSingleSubgroupLayout's helper lambdas build them.
def mfma_lhs_16xk(k):
    return (1, 1), (16, 4), (1, 16), (1, k // 4)


def mfma_rhs_kx16(k):
    return (1, 1), (4, 16), (16, 1), (k // 4, 1)


def mfma_lhs_32xk(k):
    return (1, 1), (32, 2), (1, 32), (1, k // 2)


def mfma_rhs_kx32(k):
    return (1, 1), (2, 32), (32, 1), (k // 2, 1)


MFMA_ACC_16X16 = ((1, 1), (4, 16), (16, 1), (4, 1))
MFMA_ACC_32X32 = ((4, 1), (2, 32), (32, 1), (4, 1))

# The gfx950 intrinsics of getSingleSubgroupLayout's switch; each M×N×K takes lhs(K), rhs(K) and the M×M acc.
IREE_INTRINSICS = [f"MFMA_F32_{m}x{m}x{k}_{t}" for (m, k) in ((16, 16), (32, 8), (16, 32), (32, 16))
                   for t in ("BF16", "F16")]
IREE_INTRINSICS += [f"MFMA_F32_{m}x{m}x{k}_{t}" for (m, k) in ((16, 32), (32, 16), (16, 128), (32, 64))
                    for t in ("F8E4M3FN", "F8E5M2", "F8E4M3FN_F8E5M2", "F8E5M2_F8E4M3FN")]
_IREE_ELEMENT = {"BF16": "bf16", "F16": "f16", "F8E4M3FN": "fp8", "F8E5M2": "bf8"}
_F8F6F4_FORMAT = {"fp8": 0, "bf8": 1}  # cbsz (A) / blgp (B) of v_mfma_*_f8f6f4, CDNA4 ISA


def iree_where(layout, cols: int, lanes: int = 64) -> np.ndarray:
    """[lane, vector index] -> flat index, by IREEGPUAttrs.h's 'Detailed semantics: general case'."""
    outer, thread, tstrides, element = layout
    per_element, slots = int(np.prod(element)), int(np.prod(outer) * np.prod(element))
    where = np.full((lanes, slots), -1, np.int64)
    for t in np.ndindex(*thread):
        lane = sum(ti * si for ti, si in zip(t, tstrides))
        for o in np.ndindex(*outer):
            for e in np.ndindex(*element):
                row, col = (o[d] * thread[d] * element[d] + t[d] * element[d] + e[d] for d in range(2))
                slot = np.ravel_multi_index(o, outer) * per_element + np.ravel_multi_index(e, element)
                where[lane, slot] = row * cols + col
    return where


def iree_case(intrinsic: str) -> Case:
    _, _, shape, *types = intrinsic.split("_")
    m, n, k = map(int, shape.split("x"))
    a_type, b_type = (_IREE_ELEMENT[t] for t in (types * 2)[:2])
    lhs, rhs = (mfma_lhs_16xk(k), mfma_rhs_kx16(k)) if m == 16 else (mfma_lhs_32xk(k), mfma_rhs_kx32(k))
    acc = MFMA_ACC_16X16 if m == 16 else MFMA_ACC_32X32
    if k in (128, 64):  # IREE's kernels carry these as the f8f6f4 opcodes (targets.py); cbsz / blgp name the types
        opcode = f"v_mfma_f32_{shape}_f8f6f4"
        modifiers = f"cbsz:{_F8F6F4_FORMAT[a_type]} blgp:{_F8F6F4_FORMAT[b_type]}"
    else:
        opcode = f"v_mfma_f32_{shape}_{a_type}" + (f"_{b_type}" if a_type in ("fp8", "bf8") else "")
        modifiers = ""
    return Case("iree", "gfx950", opcode, m, n, k, a_type, b_type, 64, a=iree_where(lhs, k), b=iree_where(rhs, n),
                c=iree_where(acc, n), modifiers=modifiers)


# ---------------------------------------------------------------------------------------------------- AMD's blog
# Its kernels' index expressions with t = threadIdx.x and v the index into a_reg / b_reg / c_reg: flat offsets
# into row-major A (M×K), B (K×N), C (M×N).
BLOG = [
    ("v_mfma_f32_16x16x16_f16", 16, 16, 16, "f16", (  # 5.2
        lambda t, v: 4 * (t // 16) + 16 * (t % 16) + v,                            # *(fp16x4_t*)(A + ...)
        lambda t, v: v * 16 + t % 16 + (t // 16) * 64,                             # b_reg[i] = *(B + ...)
        lambda t, v: v * 16 + t % 16 + (t // 16) * 64)),                           # *(C + ...) = c_reg[i]
    ("v_mfma_f32_32x32x16_fp8_fp8", 32, 32, 16, "fp8", (  # 5.3
        lambda t, v: (t // 32) * 8 + (t % 32) * 16 + v,
        lambda t, v: v * 32 + t % 32 + (t // 32) * 8 * 32,
        lambda t, v: t % 32 + (t // 32) * 4 * 32 + 32 * (v % 4) + (v // 4) * 32 * 8)),  # c_reg[i * 4 + j]
    ("v_mfma_f32_32x32x64_f8f6f4", 32, 32, 64, "fp8", (  # 5.4 (block-scaled form, unit scales)
        lambda t, v: (t % 32) * 64 + (t // 32) * 16 + (v // 16) * 32 + v % 16,     # a_reg[i*16 + j]
        lambda t, v: t % 32 + 32 * 16 * (t // 32) + 32 * (v % 16) + (v // 16) * 32 * 32,
        lambda t, v: t % 32 + (t // 32) * 4 * 32 + 32 * (v % 4) + (v // 4) * 32 * 8)),
]


def blog_case(opcode, m, n, k, kind, expressions) -> Case:
    per_lane = m * k // 64
    t, v, r = np.arange(64)[:, None], np.arange(per_lane)[None, :], np.arange(m * n // 64)[None, :]
    a, b, c = (np.broadcast_to(f(t, s), (64, s.shape[1])) for f, s in zip(expressions, (v, v, r)))
    return Case("blog", "gfx950", opcode, m, n, k, kind, kind, 64, a=a, b=b, c=c,
                modifiers="cbsz:0 blgp:0" if opcode.endswith("f8f6f4") else "")


CASES = [calculator_case(op, m, n, k, lanes, text) for ops, m, n, k, lanes, text in CALCULATOR for op in ops]
CASES += [iree_case(name) for name in IREE_INTRINSICS] + [blog_case(*entry) for entry in BLOG]


# ---------------------------------------------------------------------------------------------------- the check
def registers(values: np.ndarray, kind: str) -> np.ndarray:
    """[lanes, slots] of exactly representable numbers -> [registers, lanes] uint32, slot 0 in the low bits."""
    return np.ascontiguousarray(values.astype(TYPES[kind])).view(np.uint32).T


@cache
def operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * 1000 + k)
    # Integers in [-7, 7] are exact in bf16, f16 and every fp8 flavour; sums stay exact in f32.
    a, b, c = rng.integers(-7, 8, (m, k)), rng.integers(-7, 8, (k, n)), rng.integers(-64, 65, (m, n))
    # Pinned so that each exchange of test_a_wrong_layout_fails_the_check changes D for any seed: A[0][0] != A[1][0]
    # (D[0][0] moves by their difference times B[0][0]); B[0][0] != B[1][0] and A[0][0] != A[0][1]; C[0][0] != C[1][1].
    a[0, 0], a[1, 0], a[0, 1], b[0, 0], b[1, 0], c[0, 0], c[1, 1] = 1, 2, -1, 3, -3, 5, -5
    return a, b, c


def d_mismatches(case: Case, a_where: np.ndarray, b_where: np.ndarray, c_where: np.ndarray,
                 d_where: np.ndarray | None = None) -> int:
    """How many elements of D, read back by `d_where` (default: `c_where`), differ from A @ B + C when A, B and
    C are laid out by the given tables."""
    d_where = c_where if d_where is None else d_where
    a, b, c = operands(case.m, case.n, case.k)
    a_regs, b_regs = registers(a.ravel()[a_where], case.a_type), registers(b.ravel()[b_where], case.b_type)
    c_regs = np.ascontiguousarray(c.ravel()[c_where].T).astype(np.float32).view(np.uint32)
    wave = Wave(0, SimpleNamespace(mma=0), case.lanes, 48, 0)
    wave.v[0:len(a_regs)], wave.v[8:8 + len(b_regs)], wave.v[16:16 + len(c_regs)] = a_regs, b_regs, c_regs
    text = (f"{case.opcode} v[16:{15 + len(c_regs)}], v[0:{len(a_regs) - 1}], v[8:{7 + len(b_regs)}], "
            f"v[16:{15 + len(c_regs)}] {case.modifiers}")
    inst = parse_instruction(text, 1)
    DECODERS[inst.opcode](inst, DecodeContext(kernel=None, arch=case.arch, lanes=case.lanes, lds_banks=32))(wave)
    d = wave.v[16:16 + len(c_regs)].view(np.float32)  # [registers, lanes]
    want = (a.astype(np.float64) @ b + c).ravel()[d_where.T].astype(np.float32)
    return int(np.count_nonzero(d != want))


def exchange(where: np.ndarray, x: int, y: int) -> np.ndarray:
    """The table with matrix elements x and y trading places (every copy of them)."""
    swapped = where.copy()
    swapped[where == x], swapped[where == y] = y, x
    return swapped


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_source_tables_are_permutations(case):
    """Each transcribed table names every element of its matrix equally often (once; twice for RDNA3 WMMA)."""
    copies = 2 if case.lanes == 32 else 1
    for where, size in ((case.a, case.m * case.k), (case.b, case.k * case.n)):
        assert np.array_equal(np.bincount(where.ravel(), minlength=size), np.full(size, copies))
    assert np.array_equal(np.bincount(case.c.ravel(), minlength=case.m * case.n), np.ones(case.m * case.n))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_decoder_computes_a_b_plus_c_in_the_source_layout(case):
    assert d_mismatches(case, case.a, case.b, case.c) == 0


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_wrong_layout_fails_the_check(case):
    """The check is sensitive: exchanging two rows of A, two K of one column of B (A's K no longer meets B's),
    or two elements of C in the source's table makes D disagree."""
    n, k = case.n, case.k
    assert d_mismatches(case, exchange(case.a, 0, k), case.b, case.c) > 0                    # A[0][0] <-> A[1][0]
    assert d_mismatches(case, case.a, exchange(case.b, 0, n), case.c) > 0                    # B[0][0] <-> B[1][0]
    assert d_mismatches(case, case.a, case.b, exchange(case.c, 0, n + 1), d_where=case.c) > 0  # C[0][0] <-> C[1][1]


@pytest.mark.parametrize("case", [c for c in CASES if c.source != "blog"], ids=lambda case: case.name)
def test_emulator_tables_match_the_source(case):
    """`operand_layout` / `result_layout` element by element, K order included (which D cannot see)."""
    shape = MatrixShape(case.m, case.n, case.k, case.a_type.split("_")[0], case.b_type.split("_")[0], case.lanes,
                        wmma=case.opcode.startswith("v_wmma"))
    rows, ks = operand_layout(shape)
    np.testing.assert_array_equal(rows * case.k + ks, case.a)
    np.testing.assert_array_equal(ks * case.n + rows, case.b)
    c_rows, c_cols = result_layout(shape)
    np.testing.assert_array_equal((c_rows * case.n + c_cols).T, case.c)


def test_every_matrix_opcode_is_checked():
    """No MFMA / WMMA opcode the emulator decodes escapes the D check on an architecture that has it."""
    decoded = {op for op in DECODERS if op.startswith(("v_mfma_", "v_wmma_"))}
    assert decoded == {case.opcode for case in CASES}
    gfx950 = {case.opcode for case in CASES if case.arch == "gfx950"}
    assert gfx950 == decoded - {op for op in decoded if op.startswith("v_wmma_")}
