"""The float64 reference of a compiled program: its source function interpreted op by op in numpy.

The emulator's result is checked against the function of the folder's own source (`gemm.mlir`: the one
`pipelines compile` wrote for --shape, with its epilogue, or the user's --input file), not against IREE's rewrite
of it, so a dispatch that IREE formed wrongly or a binding mapped to the wrong buffer shows as a mismatch.

Every value carries a float64 array and a per-element bound on how far a correct f32 GPU execution may be from
it. The bound starts at zero on the inputs (they are exact in their element type) and grows where the GPU rounds:
- a contraction adds the project's f32 accumulation budget, `relative_tolerance(K) · max |acc|` (the same
  tolerance a plain GEMM has always been checked with), plus its operands' bounds carried through the products;
- an elementwise f32 op adds half an ulp of its result (four for erf/exp/tanh, computed by approximations on the
  GPU) to its operands' bounds scaled by the op's slope there: |a|·e_b + |b|·e_a for a product, the sum for a
  sum, erf's steepest slope over [x - e, x + e] (at most 2/√π ≈ 1.13), at most 1 for max (relu). So gelu's
  slope and alpha's scale enter the tolerance;
- a rounding to a narrower type (arith.truncf to bf16 say) is exact on both sides unless the interval
  [x - e, x + e] straddles a rounding boundary; then the GPU may round the other way, and the bound becomes the
  distance to that other neighbour (one ulp of the narrow type) on those elements only.
A faulty kernel (a dropped K tile, a wrong beta, swapped bindings) is off by far more than these bounds.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import ml_dtypes
import numpy as np

from iree.compiler import ir
from iree.compiler.dialects import linalg

from ..reference import NUMPY_TYPES, relative_tolerance
from .machine import EmulatorError

# Ulps of f32 allowed for GPU approximations of transcendental functions (LLVM's AMDGPU erf/exp are within 2-4).
TRANSCENDENTAL_ULPS = 4


def element_type(t: ir.Type) -> str:
    return str(ir.RankedTensorType(t).element_type) if isinstance(t, ir.RankedTensorType) else str(t)


def numpy_type(name: str, where: str):
    if name not in NUMPY_TYPES:
        raise EmulatorError(f"{where} has element type {name}, which the emulator's host side does not model.")
    return NUMPY_TYPES[name]


def unit_roundoff(name: str) -> float:
    return float(ml_dtypes.finfo(NUMPY_TYPES.get(name, np.float32)).eps) / 2


def round_to(values: np.ndarray, name: str) -> np.ndarray:
    """`values` rounded to element type `name` the way the GPU does it: from f32."""
    return values.astype(np.float32).astype(numpy_type(name, "a rounded value")).astype(np.float64)


class Interpreter:
    """Interprets the func.func `name` of `module` on float64 inputs; `run` returns (values, bounds) per result."""

    def __init__(self, module: ir.Module, name: str):
        self.module = module  # owns the function's operations
        self.context: Any = None  # the MLIR context of `module`, set by whoever parsed it (host.py)
        self.function: Any = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
                self.function = op.operation
        if self.function is None:
            raise EmulatorError(f"the program's source has no func.func @{name} to compute the reference of.")
        self.name = name
        self.env: dict[Any, Any] = {}

    def arguments(self) -> list[tuple[tuple[int, ...], str]]:
        """(shape, element type) of each argument of the function, in order."""
        found = []
        for arg in self.function.regions[0].blocks[0].arguments:
            if not isinstance(arg.type, ir.RankedTensorType) or not ir.RankedTensorType(arg.type).has_static_shape:
                raise EmulatorError(f"@{self.name} takes {arg.type}; the host side builds static tensors only.")
            found.append((tuple(ir.RankedTensorType(arg.type).shape), element_type(arg.type)))
        return found

    def run(self, inputs: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        block = self.function.regions[0].blocks[0]
        for arg, value in zip(block.arguments, inputs):
            self.env[arg] = (value.astype(np.float64), np.zeros(value.shape))
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                return [self.env[v] for v in op.operands]
            results = self.op(op)
            for value, result in zip(op.results, results):
                self.env[value] = result
        raise EmulatorError(f"@{self.name} has no func.return.")

    def refuse(self, op: ir.Operation) -> NoReturn:
        raise EmulatorError(f"the float64 reference does not interpret '{op.name}' (in @{self.name}); the host side "
                            "runs programs of linalg contractions, elementwise ops, fills, transposes, pads and "
                            "slices.")

    # ------------------------------------------------------------------------------------------- tensor ops
    def op(self, op: ir.Operation) -> list[tuple[np.ndarray, np.ndarray]]:
        name = op.name
        operands: list[Any] = [self.env.get(v) for v in op.operands]
        if name == "arith.constant":
            return [constant(op)]
        if name == "tensor.empty":
            shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
            return [(np.zeros(shape), np.zeros(shape))]
        if name == "util.optimization_barrier":
            return operands
        if name == "linalg.fill":
            (value, bound), (init, _) = operands
            return [(np.full(init.shape, value), np.full(init.shape, bound))]
        if name == "linalg.transpose":
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            return [(np.transpose(v, perm), np.transpose(e, perm)) for v, e in operands[:1]]
        if name == "flow.tensor.bitcast":
            (value, bound), = operands[:1]
            source = numpy_type(element_type(op.operands[0].type), "a bitcast")
            target = numpy_type(element_type(op.results[0].type), "a bitcast")
            if bound.any() or np.dtype(source).itemsize != np.dtype(target).itemsize:
                self.refuse(op)
            cast = value.astype(source).view(target).astype(np.float64)
            return [(cast, np.zeros(cast.shape))]
        if name == "tensor.pad":
            return [self.pad(op, *operands[0])]
        if name == "tensor.extract_slice":
            offsets, sizes, strides = (list(ir.DenseI64ArrayAttr(op.attributes[k]))
                                       for k in ("static_offsets", "static_sizes", "static_strides"))
            if any(s < 0 for s in offsets + sizes + strides) or len(op.operands) > 1:
                self.refuse(op)
            index = tuple(slice(o, o + s * d, d) for o, s, d in zip(offsets, sizes, strides))
            value, bound = operands[0]
            shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
            return [(value[index].reshape(shape), bound[index].reshape(shape))]
        if name in ("tensor.expand_shape", "tensor.collapse_shape"):
            if len(op.operands) > 1:  # dynamic output sizes
                self.refuse(op)
            shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
            value, bound = operands[0]
            return [(value.reshape(shape), bound.reshape(shape))]
        if name.startswith("linalg.") and linalg.isa_contraction_op(op):
            return [self.contraction(op, operands)]
        if name == "linalg.generic":
            return self.generic(op, operands)
        if name.startswith(("arith.", "math.")) and all(isinstance(r.type, ir.RankedTensorType) for r in op.results):
            return [scalar_op(op, operands)]
        self.refuse(op)

    def pad(self, op: ir.Operation, value: np.ndarray, bound: np.ndarray):
        low, high = (list(ir.DenseI64ArrayAttr(op.attributes[k])) for k in ("static_low", "static_high"))
        yielded = op.regions[0].blocks[0].operations[-1].operands[0]
        if len(op.operands) > 1 or not isinstance(yielded.owner, ir.OpView) or yielded.owner.name != "arith.constant":
            self.refuse(op)
        fill = float(constant(yielded.owner.operation)[0])
        widths = list(zip(low, high))
        return np.pad(value, widths, constant_values=fill), np.pad(bound, widths)

    def contraction(self, op: ir.Operation, operands: list) -> tuple[np.ndarray, np.ndarray]:
        """init + Σ A·B over the reduction loops, through the indexing maps (einsum)."""
        body = [o.operation.name for o in op.regions[0].blocks[0].operations]
        if not set(body) <= {"arith.mulf", "arith.addf", "arith.extf", "linalg.yield"} or len(operands) != 3:
            self.refuse(op)
        maps = [ir.AffineMapAttr(m).value for m in linalg.get_indexing_maps(op)]
        letters = "abcdefghijklmnopqrstuvwxyz"
        subscripts = ["".join(letters[ir.AffineDimExpr(e).position] for e in m.results) for m in maps]
        spec = f"{subscripts[0]},{subscripts[1]}->{subscripts[2]}"
        (a, ea), (b, eb), (init, einit) = operands
        acc = np.einsum(spec, a, b, optimize=True)
        sizes = dict(zip(subscripts[0] + subscripts[1], a.shape + b.shape))
        k = math.prod(size for letter, size in sizes.items() if letter not in subscripts[2])
        bound = relative_tolerance(k) * float(np.abs(acc).max(initial=0.0)) + einit
        if ea.any() or eb.any():
            bound = bound + (np.einsum(spec, np.abs(a), eb, optimize=True) + np.einsum(spec, ea, np.abs(b) + eb,
                                                                                        optimize=True))
        return init + acc, np.broadcast_to(bound, acc.shape).copy()

    def generic(self, op: ir.Operation, operands: list) -> list[tuple[np.ndarray, np.ndarray]]:
        """An all-parallel linalg.generic: inputs laid over the loops through their maps, the body evaluated on
        whole arrays, the results stored through the output maps."""
        iterators = [str(t) for t in ir.ArrayAttr(op.attributes["iterator_types"])]
        if not all("parallel" in t for t in iterators):
            return [self.summation(op, operands, iterators)]
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        loops = [0] * maps[0].n_dims
        positions = []
        for amap, value in zip(maps, operands):
            try:
                dims = [ir.AffineDimExpr(e).position for e in amap.results]
            except ValueError:
                self.refuse(op)
            positions.append(dims)
            for dim, size in zip(dims, value[0].shape):
                loops[dim] = size
        block = op.regions[0].blocks[0]
        env = {}
        for arg, dims, (value, bound) in zip(block.arguments, positions, operands):
            env[arg] = (over_loops(value, dims, loops), over_loops(bound, dims, loops))
        for inner in block.operations:
            inner = inner.operation
            if inner.name == "linalg.yield":
                outputs = positions[len(positions) - len(inner.operands):]
                return [(from_loops(np.broadcast_to(env[v][0], loops), dims),
                         from_loops(np.broadcast_to(env[v][1], loops), dims)) for v, dims in zip(inner.operands,
                                                                                                  outputs)]
            if inner.name == "arith.constant":
                env[inner.results[0]] = constant(inner)
            elif inner.name.startswith(("arith.", "math.")):
                env[inner.results[0]] = scalar_op(inner, [env.get(v) or self.env[v] for v in inner.operands])
            else:
                self.refuse(inner)
        self.refuse(op)

    def summation(self, op: ir.Operation, operands: list, iterators: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """A linalg.generic that only adds its one input into its output over the reduction loops (split-K's sum
        of partial products): init + Σ x, its bound the inputs' bounds summed plus f32 accumulation over the
        reduced terms, `relative_tolerance(n) · max |Σ|x||`."""
        body = [o.operation for o in op.regions[0].blocks[0].operations]
        block = op.regions[0].blocks[0]
        if (len(operands) != 2 or [o.name for o in body] != ["arith.addf", "linalg.yield"]
                or set(body[0].operands) != set(block.arguments) or body[1].operands[0] != body[0].results[0]):
            self.refuse(op)
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        try:
            dims = [[ir.AffineDimExpr(e).position for e in m.results] for m in maps]
        except ValueError:
            self.refuse(op)
        loops = [0] * maps[0].n_dims
        for positions, (value, _) in zip(dims, operands):
            for dim, size in zip(positions, value.shape):
                loops[dim] = size
        reduced = tuple(i for i, t in enumerate(iterators) if "reduction" in t)
        survivors = [i for i in range(len(loops)) if i not in reduced]
        if sorted(dims[1]) != survivors:
            self.refuse(op)
        order = [survivors.index(d) for d in dims[1]]  # the summed array's axes in the output's order
        (x, ex), (init, einit) = operands
        total, bound, magnitude = (from_loops(over_loops(a, dims[0], loops).sum(axis=reduced), order)
                                   for a in (x, ex, np.abs(x)))
        terms = math.prod(loops[i] for i in reduced)
        bound = bound + einit + relative_tolerance(terms) * float(magnitude.max(initial=0.0))
        return init + total, np.broadcast_to(bound, total.shape).copy()


def over_loops(value: np.ndarray, dims: list[int], loops: list[int]) -> np.ndarray:
    """`value`, indexed by loop dims `dims`, as an array over all the loops (broadcast where it has no axis)."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(value, order) if value.ndim else value
    shape = [loops[d] if d in dims else 1 for d in range(len(loops))]
    return np.broadcast_to(moved.reshape(shape), loops)


def from_loops(value: np.ndarray, dims: list[int]) -> np.ndarray:
    return np.transpose(value, dims).copy()


def constant(op: ir.Operation) -> tuple[np.ndarray, np.ndarray]:
    attr = op.attributes["value"]
    value: Any
    if isinstance(attr, ir.FloatAttr) or ir.FloatAttr.isinstance(attr):
        value = np.float64(ir.FloatAttr(attr).value)
    elif ir.IntegerAttr.isinstance(attr):
        value = np.float64(ir.IntegerAttr(attr).value)
    elif ir.DenseElementsAttr.isinstance(attr) and ir.DenseElementsAttr(attr).is_splat:
        splat = ir.DenseElementsAttr(attr).get_splat_value()
        shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
        value = np.full(shape, float(ir.FloatAttr(splat).value if ir.FloatAttr.isinstance(splat)
                                     else ir.IntegerAttr(splat).value))
    else:
        raise EmulatorError(f"the float64 reference does not interpret the constant {str(attr)[:60]}; only scalars "
                            "and splats.")
    return value, np.zeros(np.shape(value))


def scalar_op(op: ir.Operation, operands: list) -> tuple[np.ndarray, np.ndarray]:
    """One arith/math op on arrays (value, bound) with the bound grown as the module docstring says."""
    name = op.name
    result_type = element_type(op.results[0].type)
    u = unit_roundoff(result_type)
    values = [v for v, _ in operands]
    bounds = [e for _, e in operands]
    if name in ("arith.addf", "arith.subf"):
        value = values[0] + values[1] if name == "arith.addf" else values[0] - values[1]
        return value, bounds[0] + bounds[1] + u * np.abs(value)
    if name == "arith.mulf":
        (a, b), (ea, eb) = values, bounds
        value = a * b
        return value, np.abs(a) * eb + np.abs(b) * ea + ea * eb + u * np.abs(value)
    if name in ("arith.maximumf", "arith.maxnumf", "arith.minimumf", "arith.minnumf"):
        pick = np.maximum if "max" in name else np.minimum
        return pick(values[0], values[1]), np.maximum(bounds[0], bounds[1])
    if name == "arith.negf":
        return -values[0], bounds[0]
    if name == "arith.extf":
        return values[0], bounds[0]
    if name == "arith.truncf":
        x, e = values[0], bounds[0]
        nearest = round_to(x, result_type)
        other = np.maximum(np.abs(round_to(x + e, result_type) - nearest),
                           np.abs(nearest - round_to(x - e, result_type)))
        return nearest, other
    if name == "math.erf":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        # the steepest slope of erf over [x - e, x + e]: 2/√π·exp(-t²) at the t of least magnitude there
        nearest = np.maximum(np.abs(values[0]) - bounds[0], 0.0)
        slope = 2 / math.sqrt(math.pi) * np.exp(-nearest ** 2)
        return erf(values[0]), slope * bounds[0] + TRANSCENDENTAL_ULPS * u
    if name == "math.tanh":
        value = np.tanh(values[0])
        return value, bounds[0] + TRANSCENDENTAL_ULPS * u * np.abs(value)
    if name == "math.exp":
        value = np.exp(values[0])
        return value, value * np.expm1(bounds[0]) + TRANSCENDENTAL_ULPS * u * value
    raise EmulatorError(f"the float64 reference does not interpret '{name}'; elementwise bodies may use addf, subf, "
                        "mulf, maximumf, minimumf, negf, extf, truncf, erf, tanh and exp.")
