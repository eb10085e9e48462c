"""`pipeline-p2p`: send only a slice across a pipeline stage boundary.

A tensor-parallel stage ends with an all_reduce, some elementwise work, and a transfer of the
whole activation to the next stage. CoCoNeT's pipeline optimization: reduce-scatter instead, do
the elementwise work on the slice, send the slice, and all-gather in the next stage - boundary
traffic drops by the tensor-parallel group size:

```mlir
%r = coll.all_reduce sum %y over [tp] : ...[V, P(sum)] -> ...[V, R]
%o = dtensor.add %r, %b ...
%n = coll.shift %o over [pp] by 1 : ...[V, R] -> ...[V, R]
// becomes
%s = coll.reduce_scatter sum %y over [tp] dim 0 : ...[V, P(sum)] -> ...[V, S(0)]
%o_s = dtensor.add %s, %b_s ...
%n_s = coll.shift %o_s over [pp] by 1 : ...[V, S(0)] -> ...[V, S(0)]
%n = coll.all_gather %n_s over [tp] : ...[V, S(0)] -> ...[V, R]
```
It is split-all-reduce and reorder-elementwise applied to the all_reduces feeding a shift, plus
`shift(all_gather(x)) = all_gather(shift(x))` when the gather does not span the shift's axis.
That last step alone is CoCoNeT's fusion of send/recv with all-gather, and it also applies to
a shift that reads an all_gather directly - what split-all-reduce and reorder-elementwise leave
at a stage boundary, or a gather the program wrote:
```mlir
%g = coll.all_gather %x_s over [tp] : ...[V, S(0)] -> ...[V, R]
%n = coll.shift %g over [pp] by 1 : ...[V, R] -> ...[V, R]
// becomes
%n_s = coll.shift %x_s over [pp] by 1 : ...[V, S(0)] -> ...[V, S(0)]
%n = coll.all_gather %n_s over [tp] : ...[V, S(0)] -> ...[V, R]
```
An all_gather that other ops also read stays for them: the sending stage gathers for its own
use, the transfer moves the blocks, the receiving stage gathers again (one more gather over the
fast tensor-parallel links for 1/p of the pipeline traffic).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.diagnostics import OpError, OpWarning
from ccopt.dialects import coll
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE, i64_attr
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType, MeshAxesAttr
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.open_placements import has_open_types
from ccopt.mesh import Mesh
from ccopt.passes.common import (
    ProgramOrder,
    derive,
    derived_tag,
    elementwise_type,
    is_elementwise,
    is_selected,
    require_tagged,
    set_tag,
    tag_of,
    warn_kernel_level,
)
from ccopt.passes.options import option
from ccopt.passes.reorder_elementwise import plan_region, rewrite_region
from ccopt.passes.split_all_reduce import split


def feeding_all_reduces(value: SSAValue, shift_axes: set[str]) -> list[coll.AllReduceOp]:
    """all_reduces (over other axes than the shift's) that reach `value` through elementwise ops."""
    found: list[coll.AllReduceOp] = []
    seen: set[Operation] = set()
    stack = [value.owner]
    while stack:
        op = stack.pop()
        if not isinstance(op, Operation) or op in seen:
            continue
        seen.add(op)
        if isinstance(op, coll.AllReduceOp) and not shift_axes & set(op.axes.names):
            found.append(op)
        elif is_elementwise(op):
            stack.extend(v.owner for v in op.operands)
    return found


def gather_to_commute(shift: coll.ShiftOp) -> coll.AllGatherOp | None:
    """The all_gather the shift reads, when it gathers over other mesh axes than the shift's:
    then the shift can move the blocks and the receiving stage gather them."""
    gather = shift.input.owner
    if type(gather) is not coll.AllGatherOp or set(gather.axes.names) & set(shift.axes.names):
        return None
    if has_open_types(gather) or has_open_types(shift):
        return None  # (`?`: the types after moving are not known yet)
    return gather


def rewritten_with(shift: coll.ShiftOp) -> list[Operation]:
    """The collectives before the shift that the pass rewrites with it: the all_gather it moves
    past the shift, or else the all_reduces it splits (`autotune` tunes the shift before them
    and takes them into the shift's window)."""
    gather = gather_to_commute(shift)
    if gather is not None:
        return [gather]
    return list(feeding_all_reduces(shift.input, set(shift.axes.names)))


def commute(shift: coll.ShiftOp) -> bool:
    """shift(all_gather(x)) -> all_gather(shift(x)); True if it applied.

    The gather does not span the shift's axis, so on every rank of a tensor-parallel group the
    blocks arrive from the same stage and joining them after the transfer gives what the
    transfer of the joined value gave (a rank with no sender gets zero blocks, which join into
    zeros). The all_gather stays where it was while something else reads it. The gather after
    the shift keeps the original's algorithm, chunks and attributes; it takes the shift's tag
    (`<tag>.ag`) when the shift has one."""
    gather = gather_to_commute(shift)
    if gather is None:
        return False
    mesh = mesh_of(shift)
    moved = coll.ShiftOp(
        gather.input, mesh, shift.axes.names[0], shift.offset.value.data, shift.cyclic is not None
    )
    regathered = coll.AllGatherOp(moved.result, mesh, gather.axes)
    assert regathered.result.type == shift.result.type, "moving the gather changed the type"
    regathered.properties.update(
        (name, gather.properties[name])
        for name in ("algorithm", "chunks")
        if name in gather.properties
    )
    moved.attributes.update(shift.attributes)
    regathered.attributes.update(gather.attributes)
    derive(moved, shift)
    derive(regathered, gather)
    if tag_of(shift) is not None:
        set_tag(regathered, derived_tag(shift, "ag"))
    moved.result.name_hint = f"{shift.result.name_hint}_s" if shift.result.name_hint else None
    regathered.result.name_hint = shift.result.name_hint
    Rewriter.insert_op([moved, regathered], InsertPoint.before(shift))
    shift.result.replace_all_uses_with(regathered.result)
    Rewriter.erase_op(shift)
    if not gather.result.uses:
        Rewriter.erase_op(gather)
    return True


def send_slice(shift: coll.ShiftOp, order: ProgramOrder) -> bool:
    """Split every all_reduce feeding the shift, compute on slices up to it and commute the
    gather past it; False (with the IR in an unspecified state) when the shift still sends
    the whole value."""
    ars = feeding_all_reduces(shift.input, set(shift.axes.names))
    gathers = []
    for ar in ars:
        pair = split(ar, None)
        if isinstance(pair, str):
            continue
        rs, ag = pair
        Rewriter.insert_op([rs, ag], InsertPoint.before(ar))
        ar.result.replace_all_uses_with(ag.result)
        Rewriter.erase_op(ar)
        gathers.append(ag)
    for ag in sorted(gathers, key=order.__getitem__):
        if ag.parent is not None and ag.result.uses:
            rewrite_region(plan_region(ag, strict=False, order=order))
    for ag in gathers:
        if ag.parent is not None and not ag.result.uses:
            Rewriter.erase_op(ag)
    return commute(shift)


def can_send_slice(shift: coll.ShiftOp) -> bool:
    """Decide on types alone (nothing is rewritten) whether the value the shift sends can be
    computed on slices: every path back to the all_reduces goes through elementwise ops whose
    other operands can be sliced, so the shift will carry a split value."""
    if has_open_types(shift):
        return False  # (`?`: the split types cannot be inferred, nor the gather moved past it)
    mesh = mesh_of(shift)
    split: dict[SSAValue, DTensorType] = {}
    for ar in feeding_all_reduces(shift.input, set(shift.axes.names)):
        pair = split_type(ar, mesh)
        if pair is not None:
            split[ar.result] = pair
    return _sliced_type(shift.input, split, mesh) is not None


def split_type(ar: coll.AllReduceOp, mesh: Mesh) -> DTensorType | None:
    """The reduce-scattered type split-all-reduce would give `ar`."""
    t = ar.input.type
    assert isinstance(t, DTensorType)
    for d in range(t.rank):
        props = {"kind": ar.kind, "axes": ar.axes, "dim": i64_attr(d)}
        try:
            return coll.ReduceScatterOp.infer(t, props, mesh)
        except InferenceError:
            continue
    return None


def _sliced_type(
    value: SSAValue, split: dict[SSAValue, DTensorType], mesh: Mesh
) -> DTensorType | None:
    """The split form of `value` (memoized in `split`), or None if it cannot have one."""
    if value in split:
        return split[value]
    op = value.owner
    if not isinstance(op, Operation) or not is_elementwise(op):
        return None
    group_types = list(split.values())
    if not group_types:
        return None
    out_rank = value.type.rank  # type: ignore[union-attr]
    operand_types: list[DTensorType] = []
    for v in op.operands:
        piece = _sliced_type(v, split, mesh)
        if piece is None:
            piece = _replicated_slice(v, group_types[0], out_rank, mesh)
        if piece is None:
            return None
        operand_types.append(piece)
    try:
        result = elementwise_type(op, operand_types)
    except InferenceError:
        return None
    split[value] = result
    return result


def _replicated_slice(
    value: SSAValue, like: DTensorType, out_rank: int, mesh: Mesh
) -> DTensorType | None:
    """The type of a replicated operand sliced like the split values (or kept whole when it is
    broadcast along the split dimension)."""
    t = value.type
    assert isinstance(t, DTensorType)
    axes = [
        a
        for a, (p, q) in enumerate(zip(t.placement_list, like.placement_list, strict=True))
        if p != q and q.split_dim is not None
    ]
    if not axes:
        return t
    dim = like.placement_list[axes[0]].split_dim
    assert dim is not None
    own = dim - (like.rank - t.rank)
    if own < 0 or t.get_shape()[own] == 1:
        return t
    props = {"axes": MeshAxesAttr([mesh.axis_names[a] for a in axes]), "dim": i64_attr(own)}
    try:
        return coll.SliceOp.infer(t, props, mesh)
    except InferenceError:
        return None


@dataclass(frozen=True)
class PipelineP2P(ModulePass):
    """Send a pipeline stage transfer's tensor-parallel slice: reduce-scatter (or a gather
    moved) before the shift, all-gather after it."""

    name = "pipeline-p2p"

    tags: tuple[str, ...] = option(
        (), "Only rewrite shifts with one of these `tag` attributes (then refusals are errors)."
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "coll.shift ops")
        require_tagged(op, self.tags, self.name, (coll.ShiftOp,))
        shifts = [o for o in op.walk() if isinstance(o, coll.ShiftOp) and is_selected(o, self.tags)]
        order = ProgramOrder()  # one numbering for all shifts: the pass stays linear
        for shift in shifts:
            if gather_to_commute(shift) is not None:
                commute(shift)
                continue
            lowered = lowered_feed(shift)
            if lowered is not None:  # (split, it would lose its algorithm, left unreferenced)
                if self.tags:
                    raise OpError(shift, refusal(shift))
                warnings.warn(OpWarning(shift, f"not sent as a slice: {lowered}"), stacklevel=2)
            elif not (can_send_slice(shift) and send_slice(shift, order)) and self.tags:
                raise OpError(shift, refusal(shift))


def lowered_feed(shift: coll.ShiftOp) -> str | None:
    """Why the shift's slice cannot be sent when `lower-collectives` bound an all_reduce that
    feeds it to an algorithm (splitting it would drop the algorithm); None."""
    for ar in feeding_all_reduces(shift.input, set(shift.axes.names)):
        bound = ar.attributes.get(ALGORITHM_ATTRIBUTE)
        if bound is not None:
            return (
                f"the all_reduce feeding it runs {bound} (lower-collectives); "
                "run pipeline-p2p before lowering"
            )
    return None


def refusal(shift: coll.ShiftOp) -> str:
    """Why a shift the tags select cannot send a slice."""
    axes = ", ".join(shift.axes.names)
    head = f"cannot send a slice over {axes} (tag {tag_of(shift)!r}): "
    owner = shift.input.owner
    if has_open_types(shift) or isinstance(owner, Operation) and has_open_types(owner):
        return head + (
            "placements are still open (?) at it or its operand: run propagate-placements or "
            "auto-shard first"
        )
    lowered = lowered_feed(shift)
    if lowered is not None:
        return head + lowered
    if type(owner) is coll.AllGatherOp:
        return head + (
            f"its operand is gathered over {axes} itself: the gather joins blocks of several "
            "stages, so it cannot follow the transfer between them"
        )
    return head + (
        "its operand is not gathered from an all_reduce over other mesh axes through "
        "elementwise ops, nor read from an all_gather over other mesh axes (an all_gather "
        "before elementwise ops moves below them with reorder-elementwise first)"
    )
