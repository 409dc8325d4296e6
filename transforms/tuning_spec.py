"""The ROCm delivery route: a transform-dialect tuning spec that plain `iree-compile` accepts.

`tuning_spec` builds a module with one matcher per GEMM (`transform.iree.match.contraction` on element types and
indexing maps, then `dims_equal` on every loop size), one shared action that annotates the matched op with its
`compilation_info` and the marker `__tuning_spec_applied__`, and the entry point `@__kernel_config`
(`iree_codegen.tuning_spec_entrypoint`) that runs them with `transform.foreach_match`. Pass the printed module
to `iree-compile --iree-codegen-tuning-spec-path=FILE`.
"""

from __future__ import annotations

from typing import Callable

from iree.compiler import ir
from iree.compiler.dialects import preprocessing_transform as match
from iree.compiler.dialects import transform

from .problem import ACC_DTYPE, Gemm

APPLIED_MARKER = "__tuning_spec_applied__"
# The named sequence IREE enters in a tuning spec and in a transform-dialect codegen library (codegen_script).
ENTRY_POINT = "__kernel_config"


def _readonly() -> dict:
    return {"transform.readonly": ir.UnitAttr.get()}


def _build_action() -> None:
    any_op, any_param = transform.AnyOpType.get(), transform.AnyParamType.get()
    action = transform.NamedSequenceOp("apply_compilation_info", [any_op, any_param], [],
                                       arg_attrs=[_readonly(), _readonly()])
    with ir.InsertionPoint(action.body):
        transform.AnnotateOp(action.bodyTarget, "compilation_info", param=action.bodyExtraArgs[0])
        transform.AnnotateOp(action.bodyTarget, APPLIED_MARKER)
        transform.YieldOp([])


def _build_ukernel_action(ukernel: str) -> str:
    """An action that also tags the op with `ukernel` and imports that `util.func` into the dispatch module."""
    any_op, any_param = transform.AnyOpType.get(), transform.AnyParamType.get()
    name = f"apply_ukernel_{ukernel}"
    action = transform.NamedSequenceOp(name, [any_op, any_param], [], arg_attrs=[_readonly(), _readonly()])
    with ir.InsertionPoint(action.body):
        op = action.bodyTarget
        transform.AnnotateOp(op, "compilation_info", param=action.bodyExtraArgs[0])
        descriptor = transform.ParamConstantOp(
            any_param, ir.Attribute.parse(f'#iree_codegen.ukernel_descriptor<"{ukernel}", tensor>'))
        transform.AnnotateOp(op, "iree_codegen.ukernel", param=descriptor.result)
        transform.AnnotateOp(op, APPLIED_MARKER)
        function = transform.GetParentOp(any_op, op, op_name="func.func")
        table = ir.Operation.create("transform.util.get_nearest_symbol_table", results=[any_op],
                                    operands=[function.result])
        ir.Operation.create("transform.util.import_symbol", results=[any_op], operands=[table.result],
                            attributes={"symbol": ir.FlatSymbolRefAttr.get(ukernel), "if_undefined": ir.UnitAttr.get()})
        transform.YieldOp([])
    return name


def _build_matcher(name: str, gemm: Gemm, info: ir.Attribute, take_over: bool = False) -> None:
    any_op, any_param = transform.AnyOpType.get(), transform.AnyParamType.get()
    matcher = transform.NamedSequenceOp(name, [any_op], [any_op, any_param], arg_attrs=[_readonly()])
    with ir.InsertionPoint(matcher.body):
        op = matcher.bodyTarget
        if not take_over:
            # Leave ops alone that another spec or IREE's own ukernel patterns already configured. A ukernel
            # entry takes over on purpose: IREE's built-in ping-pong would otherwise claim NT bf16/f16 shapes.
            ir.Operation.create("transform.iree.match.has_no_lowering_config", operands=[op])
        elem = ir.Type.parse(gemm.dtype)
        contraction = match.MatchContractionOp(op, elem, elem, ir.Type.parse(ACC_DTYPE),
                                               indexing_maps=gemm.indexing_maps())
        batch, m, n, k = contraction.results
        if gemm.batched:
            match.MatchDimsEqualOp(batch, [gemm.batch])
        for dims, size in ((m, gemm.m), (n, gemm.n), (k, gemm.k)):
            match.MatchDimsEqualOp(dims, [size])
        config = transform.ParamConstantOp(any_param, info)
        transform.YieldOp([op, config.result])


def tuning_spec(entries: list[tuple[Gemm, ir.Attribute]],
                ukernels: dict[int, tuple[str, Callable[[], None]]] | None = None) -> ir.Module:
    """A tuning spec giving each (GEMM, compilation_info) pair's contraction that configuration. `ukernels` maps
    an entry's position to (ukernel name, builder of its util.func): that contraction is replaced by the
    ukernel (compile with --iree-rocm-enable-tensor-ukernels). No entries: a spec that configures nothing (IREE's
    defaults throughout), so a script that always passes the spec works whatever was scheduled."""
    ukernels = ukernels or {}
    module = ir.Module.create()
    module.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    names = [f"match_gemm_{i}_{gemm.shape_name}_{gemm.layout}_{gemm.dtype}" for i, (gemm, _) in enumerate(entries)]
    actions = ["apply_compilation_info"] * len(entries)
    with ir.InsertionPoint(module.body):
        for index, (ukernel, build_body) in sorted(ukernels.items()):
            build_body()
            actions[index] = _build_ukernel_action(ukernel)
        _build_action()
        for index, (name, (gemm, info)) in enumerate(zip(names, entries)):
            _build_matcher(name, gemm, info, take_over=index in ukernels)
        any_op = transform.AnyOpType.get()
        effect = "transform.consumed" if entries else "transform.readonly"  # nothing matched, nothing consumed
        entry = transform.NamedSequenceOp(ENTRY_POINT, [any_op], [any_op], arg_attrs=[{effect: ir.UnitAttr.get()}])
        entry.operation.attributes["iree_codegen.tuning_spec_entrypoint"] = ir.UnitAttr.get()
        with ir.InsertionPoint(entry.body):
            if not entries:  # foreach_match needs a pair: a spec that configures nothing hands the root back
                transform.YieldOp([entry.bodyTarget])
            else:
                symbols = lambda items: ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(s) for s in items])  # noqa: E731
                foreach = transform.ForeachMatchOp(any_op, [], entry.bodyTarget, [], symbols(names), symbols(actions))
                transform.YieldOp([foreach.updated])
    module.operation.verify()
    return module


def _consuming_entry(op: ir.Operation) -> bool:
    """Whether `op` is a spec's entry point that consumes its root (a spec that configures nothing only reads it)."""
    if op.name != "transform.named_sequence" or "iree_codegen.tuning_spec_entrypoint" not in op.attributes \
            or "arg_attrs" not in op.attributes:
        return False
    return any("transform.consumed" in ir.DictAttr(a) for a in ir.ArrayAttr(op.attributes["arg_attrs"]))


def link_specs(specs: list[tuple[str, ir.Module]]) -> ir.Module:
    """One tuning spec running several, in order: each (name, spec) becomes a nested module `@name` and the entry
    point includes each one's entry point in turn, failures suppressed (the form IREE's own spec linking gives
    several specs). Every matcher skips an op that already has a configuration, so an earlier spec wins where two
    match the same op. The specs must live in the current context."""
    linked = ir.Module.create()
    linked.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
    any_op = transform.AnyOpType.get()
    consumes = False  # the linked entry consumes its root where one of the linked entries does
    with ir.InsertionPoint(linked.body):
        for name, spec in specs:
            nested = ir.Operation.create("builtin.module", regions=1)
            nested.attributes["sym_name"] = ir.StringAttr.get(name)
            nested.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
            block = nested.regions[0].blocks.append()
            for op in list(spec.body.operations):
                op.operation.detach_from_parent()
                ir.InsertionPoint(block).insert(op.operation)
                consumes = consumes or _consuming_entry(op.operation)
        effect = "transform.consumed" if consumes else "transform.readonly"
        entry = transform.NamedSequenceOp(ENTRY_POINT, [any_op], [any_op], arg_attrs=[{effect: ir.UnitAttr.get()}])
        entry.operation.attributes["iree_codegen.tuning_spec_entrypoint"] = ir.UnitAttr.get()
        with ir.InsertionPoint(entry.body):
            root = entry.bodyTarget
            for name, _ in specs:
                root = transform.IncludeOp([any_op], ir.SymbolRefAttr.get([name, ENTRY_POINT]),
                                           transform.FailurePropagationMode.Suppress, [root]).results[0]
            transform.YieldOp([root])
    linked.operation.verify()
    return linked
