"""What ccopt's passes share: op selection by tag, refusals as diagnostics, rebuilding
elementwise ops on new operands (result types re-inferred), and the dialects' op groups.

A pass runs greedily wherever it is legal; given `tags=a,b` it works only on ops carrying one of
those `tag` attributes, and then an op it cannot transform is an error that says why (a user who
asked for a rewrite must learn it did not happen).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType

TAG = "tag"

ELEMENTWISE: tuple[type[Operation], ...] = (
    dt.NegOp,
    dt.AbsOp,
    dt.ReluOp,
    dt.ExpOp,
    dt.LogOp,
    dt.SqrtOp,
    dt.RsqrtOp,
    dt.TanhOp,
    dt.GeluOp,
    dt.AddOp,
    dt.SubOp,
    dt.MulOp,
    dt.DivOp,
    dt.MaxOp,
    dt.MinOp,
    dt.PowOp,
    dt.CmpOp,
    dt.SelectOp,
    dt.ScaleOp,
    dt.CastOp,
    dt.DropoutOp,
)
"""dtensor ops that compute each output element from the same element of their operands
(with broadcasting)."""


def is_elementwise(op: Operation) -> bool:
    return isinstance(op, ELEMENTWISE)


def tag_of(op: Operation) -> str | None:
    attr = op.attributes.get(TAG)
    return attr.data if isinstance(attr, StringAttr) else None


def is_selected(op: Operation, tags: Sequence[str]) -> bool:
    """Without tags every op is a candidate; with tags only the tagged ones."""
    return not tags or tag_of(op) in tags


def require_tagged(module: Operation, tags: Sequence[str], pass_name: str) -> None:
    """Every requested tag names some op: a typo must not turn a requested rewrite into a
    silent no-op."""
    if not tags:
        return
    present = {tag_of(op) for op in module.walk()}
    missing = [t for t in tags if t not in present]
    if missing:
        raise CcoptError(f"{pass_name}: no op is tagged {', '.join(missing)}")


def set_tag(op: Operation, tag: str | None) -> Operation:
    if tag is not None:
        op.attributes[TAG] = StringAttr(tag)
    return op


def derived_tag(op: Operation, suffix: str) -> str | None:
    """`g1` -> `g1.rs`: new ops stay addressable by the tag of the op they came from."""
    tag = tag_of(op)
    return None if tag is None else f"{tag}.{suffix}"


class Refusal(Exception):
    """Why a rewrite is not legal here; becomes an OpError when the user asked for it."""


def refuse_if_selected(op: Operation, tags: Sequence[str], why: str) -> None:
    """A greedy pass skips an op it cannot rewrite; an explicitly tagged request fails loudly."""
    if tags and tag_of(op) in tags:
        raise OpError(op, why)


def elementwise_type(op: Operation, types: Sequence[DTensorType]) -> DTensorType:
    """The result type `op` would have on operands of these types (InferenceError if none):
    lets a pass decide a rewrite before it builds anything."""
    from ccopt.dialects import inference as infer

    match op:
        case dt.ElementwiseUnaryOp():
            return type(op)._infer(types[0])
        case dt.ElementwiseBinaryOp():
            return type(op)._infer(types[0], types[1])
        case dt.CmpOp():
            return dt.CmpOp._infer(types[0], types[1])
        case dt.SelectOp():
            return dt.SelectOp._infer(types[0], types[1], types[2])
        case dt.ScaleOp():
            return dt.ScaleOp._infer(types[0])
        case dt.CastOp():
            return infer.infer_cast(types[0], op.result.type.element_type)  # type: ignore[union-attr]
        case dt.DropoutOp():
            return dt.DropoutOp._infer(types[0], op.prob.value.data)
    raise infer.InferenceError(f"'{op.name}' is not elementwise")


def rebuild_elementwise(op: Operation, operands: Sequence[SSAValue]) -> Operation:
    """The same elementwise op on new operands, its result type re-inferred; raises Refusal
    (with the verifier's reason) when the new operands have no legal signature."""
    try:
        match op:
            case dt.ElementwiseUnaryOp():
                new = type(op)(operands[0])
            case dt.ElementwiseBinaryOp():
                new = type(op)(operands[0], operands[1])
            case dt.CmpOp():
                new = dt.CmpOp(op.predicate.data, operands[0], operands[1])
            case dt.SelectOp():
                new = dt.SelectOp(operands[0], operands[1], operands[2])
            case dt.ScaleOp():
                new = dt.ScaleOp(operands[0], op.factor.value.data)
            case dt.CastOp():
                new = dt.CastOp(operands[0], op.result.type.element_type)  # type: ignore[union-attr]
            case dt.DropoutOp():
                new = dt.DropoutOp(operands[0], op.seed.value.data, op.prob.value.data)
            case _:
                raise Refusal(f"'{op.name}' is not elementwise")
    except VerifyException as e:
        raise Refusal(str(e)) from None
    new.attributes.update(op.attributes)
    return new
