"""A program with open placements (`?`) runs in the interpreter as its all-`R` twin.

The global value of every op is the same whatever its distribution, so the twin replaces every
placement by `R` (keeping `V`, whose ranks hold different values), turns the collectives that
only redistribute a value into the identity, and makes each function argument replicated on
entry (inputs still arrive as their concrete placements say: a partial sum as partials).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import coll
from ccopt.dialects.dtensor import lookup_mesh
from ccopt.dialects.dtensor_type import (
    DTensorType,
    OpenAttr,
    PartialAttr,
    R,
    SplitAttr,
    VaryingAttr,
)
from ccopt.dialects.open_placements import has_open_types
from ccopt.mesh import Mesh

REDISTRIBUTIONS = (
    "coll.all_reduce",
    "coll.reduce_scatter",
    "coll.all_gather",
    "coll.all_to_all",
    "coll.slice",
)
"""Collectives whose global meaning is the identity: once every placement is R they vanish."""


def module_has_open(module: ModuleOp) -> bool:
    return any(has_open_types(op) for op in module.walk()) or any(
        isinstance(a.type, DTensorType) and a.type.is_open
        for op in module.walk()
        for r in op.regions
        for b in r.blocks
        for a in b.args
    )


def replicated(t: Attribute) -> Attribute:
    if not isinstance(t, DTensorType):
        return t
    return t.with_placements(p if isinstance(p, VaryingAttr) else R for p in t.placement_list)


def close_open_placements(module: ModuleOp) -> None:
    """Rewrite `module` in place to the all-`R` program of the same global meaning. Function
    arguments keep their concrete placements (inputs arrive distributed, partial sums as
    partials) and are made replicated on entry by all-reduces and all-gathers."""
    rewriter = Rewriter()
    for op in list(module.walk()):
        if op.name in REDISTRIBUTIONS:
            (source,) = op.operands
            rewriter.replace_op(op, [], [source])
    kept: set[SSAValue] = set()  # the entry conversions' results: typed by their own inference
    for f in [o for o in module.walk() if isinstance(o, func.FuncOp) and o.body.blocks]:
        block = f.body.block
        for arg in list(block.args):
            if isinstance(arg.type, DTensorType) and arg.type.is_open:
                arg = rewriter.replace_value_with_new_type(arg, _open_as_r(arg.type))
            mesh = lookup_mesh(f, arg.type.mesh_name) if isinstance(arg.type, DTensorType) else None
            if mesh is not None:
                _replicate_on_entry(arg, mesh, rewriter, kept)
        f.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [replicated(t) for t in f.function_type.outputs.data]
        )
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            continue
        for region in op.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    _retype(rewriter, arg)
        for res in list(op.results):
            if res not in kept:
                _retype(rewriter, res)


def _open_as_r(t: DTensorType) -> DTensorType:
    return t.with_placements(R if isinstance(p, OpenAttr) else p for p in t.placement_list)


def _replicate_on_entry(
    arg: SSAValue, mesh: Mesh, rewriter: Rewriter, kept: set[SSAValue]
) -> SSAValue:
    """`arg` made replicated at the top of its function (inner axes first, so nested splits of
    one dimension gather in order); the function's other uses read the replicated value. Each
    conversion's result (partly replicated until the last) is added to `kept`."""
    t = arg.type
    if not isinstance(t, DTensorType):
        return arg
    value, where = arg, InsertPoint.at_start(arg.block)
    uses = list(arg.uses)
    for axis in reversed(range(len(t.placement_list))):
        p = value.type.placement_list[axis]
        names = [mesh.axis_names[axis]]
        if isinstance(p, PartialAttr):
            op = coll.AllReduceOp(value, mesh, names, p.partial_kind)
        elif isinstance(p, SplitAttr):
            op = coll.AllGatherOp(value, mesh, names)
        else:
            continue
        rewriter.insert_op(op, where)
        where, value = InsertPoint.after(op), op.results[0]
        kept.add(value)
    for use in uses:
        use.operation.operands[use.index] = value
    return value


def _retype(rewriter: Rewriter, value: SSAValue) -> None:
    new = replicated(value.type)
    if new != value.type:
        rewriter.replace_value_with_new_type(value, new)
