"""`reorder-elementwise`: move an all_gather below the elementwise ops that consume it.

Elementwise ops commute with slicing, so instead of gathering and then computing on the whole
tensor on every rank, each rank computes on its block and the results are gathered:

```mlir
%w1 = dtensor.sub %w, coll.all_gather(%g_s) ...          // every rank: 1030 elements
// becomes
%w_s = coll.slice %w over [dp] dim 0                      // local, no traffic
%w1_s = dtensor.sub %w_s, %g_s                            // every rank: 1030/p elements
%w1 = coll.all_gather %w1_s over [dp]                     // one all_gather per live-out
```
The region grows greedily through elementwise ops in the same block whose other operands can be
sliced: replicated operands are sliced along the gathered dimension - never along a dimension a
broadcast operand does not have (`b[H]` stays whole when `[B,S,H]` is split along 0) - and values
gathered over the same axes and dimension are used in their split form. A partial (P) or varying
(V) operand stops the region. Every region value used outside the region gets one all_gather. Then slices move up through
elementwise ops on replicated values whose results are only sliced (`slice(0.9 * m)` becomes
`0.9 * slice(m)`), so optimizer state ends up used only through slices (see slice-state).
Options: `tags` (all_gathers to move; then a consumer that cannot follow is an error).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects import coll
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType, ReplicatedAttr
from ccopt.mesh import Mesh
from ccopt.passes.common import (
    Refusal,
    derived_tag,
    is_elementwise,
    is_selected,
    rebuild_elementwise,
    set_tag,
    tag_of,
)


@dataclass
class SlicedRegion:
    """The elementwise ops that will run on blocks, and the split form of every value they use."""

    gather: coll.AllGatherOp
    mesh: Mesh
    dim: int
    ops: list[Operation]
    split: dict[SSAValue, SSAValue]


def gathered_dim(ag: coll.AllGatherOp, mesh: Mesh) -> int:
    t = ag.input.type
    assert isinstance(t, DTensorType)
    dim = t.placement_list[ag.group(mesh)[0]].split_dim
    assert dim is not None
    return dim


def same_gather(value: SSAValue, ag: coll.AllGatherOp, dim: int, mesh: Mesh) -> bool:
    """`value` is an all_gather over the same axes of the same split dimension."""
    other = value.owner
    return (
        isinstance(other, coll.AllGatherOp)
        and other.axes == ag.axes
        and gathered_dim(other, mesh) == dim
    )


class RegionBuilder:
    """Slices operands for one all_gather's region; new ops go before the op they replace."""

    def __init__(self, ag: coll.AllGatherOp):
        self.mesh = mesh_of(ag)
        self.ag = ag
        self.dim = gathered_dim(ag, self.mesh)
        self.result_rank = ag.result.type.rank  # type: ignore[union-attr]
        self.split: dict[SSAValue, SSAValue] = {ag.result: ag.input}
        self.new_ops: list[tuple[Operation, list[Operation]]] = []

    def split_operand(
        self, value: SSAValue, out_shape: tuple[int, ...]
    ) -> tuple[SSAValue, list[Operation]]:
        """The operand's form on blocks, plus the ops (coll.slice) that produce it."""
        if value in self.split:
            return self.split[value], []
        if same_gather(value, self.ag, self.dim, self.mesh):
            return value.owner.input, []  # type: ignore[union-attr]
        t = value.type
        assert isinstance(t, DTensorType)
        if broadcasts_along(t, out_shape, self.dim):
            return value, []  # broadcast along the split dimension: every block uses all of it
        own = self.dim - (len(out_shape) - t.rank)
        for a in self.ag.group(self.mesh):
            p = t.placement_list[a]
            if not isinstance(p, ReplicatedAttr):
                raise Refusal(
                    f"operand {_name(value)} is {p.short} on mesh axis '{self.mesh.axis_names[a]}' and cannot be sliced"
                )
        try:
            piece = coll.SliceOp(value, self.mesh, self.ag.axes.names, own)
        except VerifyException as e:
            raise Refusal(f"operand {_name(value)} cannot be sliced: {e}") from None
        if value.name_hint:
            piece.result.name_hint = f"{value.name_hint}_s"
        return piece.result, [piece]

    def try_add(self, op: Operation) -> None:
        """Plan `op` on blocks; raises Refusal with the reason it cannot be."""
        out_shape = op.results[0].type.get_shape()  # type: ignore[union-attr]
        operands, slices = [], []
        for v in op.operands:
            piece, extra = self.split_operand(v, out_shape)
            operands.append(piece)
            slices.extend(extra)
        new = rebuild_elementwise(op, operands)
        if op.results[0].name_hint:
            new.results[0].name_hint = f"{op.results[0].name_hint}_s"
        self.split[op.results[0]] = new.results[0]
        self.new_ops.append((op, [*slices, new]))


def broadcasts_along(t: DTensorType, out_shape: tuple[int, ...], dim: int) -> bool:
    """An operand of type `t` is broadcast along result dimension `dim`: it lacks the dimension
    or has size 1 there where the result does not (a size-1 dimension of a size-1 result is
    split like any other)."""
    own = dim - (len(out_shape) - t.rank)
    return own < 0 or t.get_shape()[own] != out_shape[dim]


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else f"of type {value.type}"


def plan_region(
    ag: coll.AllGatherOp, strict: bool, allowed: set[Operation] | None = None
) -> RegionBuilder:
    """Grow the region in program order through the block of the all_gather (only through
    `allowed` ops, when given)."""
    builder = RegionBuilder(ag)
    block = ag.parent_block()
    assert isinstance(block, Block)
    op = ag.next_op
    while op is not None:
        candidate = is_elementwise(op) and (allowed is None or op in allowed)
        if candidate and any(v in builder.split for v in op.operands):
            try:
                builder.try_add(op)
            except Refusal as why:
                if strict and ag.result in op.operands:
                    raise Refusal(f"cannot move it below '{op.name}': {why}") from None
        op = op.next_op
    return builder


def rewrite_region(builder: RegionBuilder) -> list[coll.SliceOp]:
    """Insert the block versions, gather every value used outside the region, drop the rest;
    returns the slices of replicated operands it made."""
    region_ops = {old for old, _ in builder.new_ops}
    for old, new_ops in builder.new_ops:
        Rewriter.insert_op(new_ops, InsertPoint.before(old))
    for old, new_ops in builder.new_ops:
        outside = [u for u in old.results[0].uses if u.operation not in region_ops]
        if not outside:
            continue
        gathered = coll.AllGatherOp(
            builder.split[old.results[0]], builder.mesh, builder.ag.axes.names
        )
        set_tag(gathered, derived_tag(old, "ag") or derived_tag(builder.ag, "ag"))
        gathered.result.name_hint = old.results[0].name_hint
        Rewriter.insert_op(gathered, InsertPoint.after(new_ops[-1]))
        old.results[0].replace_uses_with_if(
            gathered.result, lambda u: u.operation not in region_ops
        )
    for old, _ in reversed(builder.new_ops):
        Rewriter.erase_op(old)
    if not builder.ag.result.uses:
        Rewriter.erase_op(builder.ag)
    return [op for _, new_ops in builder.new_ops for op in new_ops if isinstance(op, coll.SliceOp)]


def hoist_slice(piece: coll.SliceOp) -> list[coll.SliceOp]:
    """slice(f(a, b)) -> f(slice(a), slice(b)) when every use of f's result is that same slice:
    then the replicated computation was only needed on blocks. Returns the new slices."""
    producer = piece.input.owner
    if not is_elementwise(producer) or not isinstance(producer, Operation):
        return []
    uses = [u.operation for u in producer.results[0].uses]
    if not all(
        isinstance(u, coll.SliceOp) and u.axes == piece.axes and u.dim == piece.dim for u in uses
    ):
        return []
    mesh = mesh_of(piece)
    out_shape = piece.result.type.get_shape()  # type: ignore[union-attr]
    dim = piece.dim.value.data
    operands, new_slices = [], []
    for v in producer.operands:
        t = v.type
        assert isinstance(t, DTensorType)
        if broadcasts_along(t, out_shape, dim):
            operands.append(v)
            continue
        own = dim - (len(out_shape) - t.rank)
        try:
            sliced = coll.SliceOp(v, mesh, piece.axes.names, own)
        except VerifyException:
            return []
        if v.name_hint:
            sliced.result.name_hint = f"{v.name_hint}_s"
        new_slices.append(sliced)
        operands.append(sliced.result)
    try:
        new = rebuild_elementwise(producer, operands)
    except Refusal:
        return []
    if new.results[0].type != piece.result.type:
        return []  # the op on blocks would not be the slice (nothing of it was sliced)
    new.results[0].name_hint = piece.result.name_hint or producer.results[0].name_hint
    Rewriter.insert_op([*new_slices, new], InsertPoint.before(producer))
    for use in uses:
        use.results[0].replace_all_uses_with(new.results[0])
        Rewriter.erase_op(use)
    Rewriter.erase_op(producer)
    return new_slices


def hoist_slices(slices: list[coll.SliceOp]) -> None:
    """Move these coll.slices (and the ones they create) up through the elementwise ops whose
    results only they use."""
    worklist = list(slices)
    while worklist:
        piece = worklist.pop()
        if piece.parent is not None:
            worklist.extend(hoist_slice(piece))


@dataclass(frozen=True)
class ReorderElementwise(ModulePass):
    """Move all_gathers below the elementwise ops that consume them (compute on slices)."""

    name = "reorder-elementwise"

    tags: tuple[str, ...] = ()
    """Only move all_gathers with one of these `tag` attributes (then refusals are errors)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ccopt.diagnostics import OpError

        for ag in [o for o in op.walk() if isinstance(o, coll.AllGatherOp)]:
            if ag.parent is None or not is_selected(ag, self.tags):
                continue
            strict = bool(self.tags)
            try:
                builder = plan_region(ag, strict)
            except Refusal as why:
                raise OpError(ag, str(why)) from None
            if not builder.new_ops:
                if strict:
                    raise OpError(
                        ag, f"nothing to reorder: no elementwise op consumes {tag_of(ag)!r}"
                    )
                continue
            made = rewrite_region(builder)
            if self.tags:
                hoist_slices(made)
        if not self.tags:
            hoist_slices([o for o in op.walk() if isinstance(o, coll.SliceOp)])
