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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.diagnostics import OpError
from ccopt.dialects import coll
from ccopt.dialects.dtensor import mesh_of
from ccopt.passes.common import derived_tag, is_elementwise, is_selected, set_tag, tag_of
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


def commute(shift: coll.ShiftOp) -> bool:
    """shift(all_gather(x)) -> all_gather(shift(x)); True if it applied."""
    gather = shift.input.owner
    if not isinstance(gather, coll.AllGatherOp) or set(gather.axes.names) & set(shift.axes.names):
        return False
    mesh = mesh_of(shift)
    moved = coll.ShiftOp(
        gather.input, mesh, shift.axes.names[0], shift.offset.value.data, shift.cyclic is not None
    )
    regathered = coll.AllGatherOp(moved.result, mesh, gather.axes.names)
    moved.attributes.update(shift.attributes)
    set_tag(regathered, derived_tag(shift, "ag"))
    moved.result.name_hint = f"{shift.result.name_hint}_s" if shift.result.name_hint else None
    regathered.result.name_hint = shift.result.name_hint
    Rewriter.insert_op([moved, regathered], InsertPoint.before(shift))
    shift.result.replace_all_uses_with(regathered.result)
    Rewriter.erase_op(shift)
    if not gather.result.uses:
        Rewriter.erase_op(gather)
    return True


@dataclass(frozen=True)
class PipelineP2P(ModulePass):
    """Reduce-scatter before a pipeline stage transfer, send the slice, all-gather after it."""

    name = "pipeline-p2p"

    tags: tuple[str, ...] = ()
    """Only rewrite shifts with one of these `tag` attributes (then refusals are errors)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for shift in [o for o in op.walk() if isinstance(o, coll.ShiftOp)]:
            if not is_selected(shift, self.tags):
                continue
            for ar in feeding_all_reduces(shift.input, set(shift.axes.names)):
                pair = split(ar, None)
                if isinstance(pair, str):
                    continue
                rs, ag = pair
                Rewriter.insert_op([rs, ag], InsertPoint.before(ar))
                ar.result.replace_all_uses_with(ag.result)
                Rewriter.erase_op(ar)
                rewrite_region(plan_region(ag, strict=False))
            if not commute(shift) and self.tags:
                raise OpError(
                    shift,
                    f"cannot send a slice over {tag_of(shift)!r}: its operand is not gathered from "
                    "an all_reduce over other mesh axes through elementwise ops",
                )
