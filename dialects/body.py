"""Scalar bodies of fused ops: what each `arith`/`math` op means for placements.

A fused op (`dtensor.fused`, `coll.fused_all_reduce`) carries the computation of one element as a
region of `arith`/`math` ops - the same body a CUDA kernel runs per thread. Its verifier must still
know that the fused computation is legal on the operands' placements (a partial operand may only
flow through linear ops). `check_body` replays the body on placements, using the same per-axis
signatures as the dtensor ops the body came from.

Block arguments: `%index: i64` (the element's global row-major index in the iteration space, for
counter-based random numbers), then one scalar per tensor input.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, i64
from xdsl.ir import Block, Operation, SSAValue

from ccopt.dialects.dtensor_type import (
    DTensorType,
    PartialAttr,
    ReplicatedAttr,
)
from ccopt.dialects.inference import InferenceError, infer_elementwise

BODY_KINDS: dict[type[Operation], str] = {
    arith.AddfOp: "add",
    arith.AddiOp: "add",
    arith.SubfOp: "sub",
    arith.SubiOp: "sub",
    arith.MulfOp: "mul",
    arith.MuliOp: "mul",
    arith.DivfOp: "div",
    arith.DivSIOp: "div",
    arith.MaximumfOp: "max",
    arith.MaxSIOp: "max",
    arith.MinimumfOp: "min",
    arith.MinSIOp: "min",
    arith.NegfOp: "neg",
    arith.CmpfOp: "cmp",
    arith.CmpiOp: "cmp",
    arith.SelectOp: "select",
    arith.ExtFOp: "convert",
    arith.TruncFOp: "convert",
    arith.FPToSIOp: "cast",
    arith.SIToFPOp: "cast",
    arith.UIToFPOp: "cast",
    arith.ExtSIOp: "cast",
    arith.ExtUIOp: "cast",
    arith.TruncIOp: "cast",
    math.AbsFOp: "abs",
    math.AbsIOp: "abs",
    math.ExpOp: "exp",
    math.LogOp: "log",
    math.SqrtOp: "sqrt",
    math.RsqrtOp: "rsqrt",
    math.TanhOp: "tanh",
    math.PowFOp: "pow",
    math.IPowIOp: "pow",
}
"""Scalar ops a fused body may contain (besides constants, `dtensor.uniform` and the yield), by
the dtensor op whose placement signature they follow."""


CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
"""arith.cmpf's predicate names, by their integer encoding."""

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""arith.cmpi's predicate names, by their integer encoding."""


def predicate_name(op: Operation) -> str:
    """The predicate of an arith.cmpf / arith.cmpi as its mnemonic."""
    names = CMPF_PREDICATES if isinstance(op, arith.CmpfOp) else CMPI_PREDICATES
    return names[op.predicate.value.data]  # type: ignore[attr-defined]


def is_zero(op: Operation) -> bool:
    """A zero constant: the identity of sum, so it may meet partial values in linear ops."""
    if not isinstance(op, arith.ConstantOp):
        return False
    value = op.value
    return isinstance(value, FloatAttr | IntegerAttr) and value.value.data == 0


def _scalar(like: DTensorType, element_type, placements=None) -> DTensorType:  # noqa: ANN001
    return DTensorType(
        (), element_type, like.mesh, placements or [ReplicatedAttr()] * len(like.placement_list)
    )


def _zero_like_partners(zero: DTensorType, partners: Sequence[DTensorType]) -> DTensorType:
    """A zero takes the partial placement of the values it meets (0 is P(sum)'s identity)."""
    placements = list(zero.placement_list)
    for t in partners:
        for a, p in enumerate(t.placement_list):
            if isinstance(p, PartialAttr):
                placements[a] = p
    return zero.with_placements(placements)


def check_body(
    block: Block, inputs: Sequence[DTensorType], iteration: DTensorType
) -> list[DTensorType]:
    """Replay the body on placements; returns the placement type of every yielded value.

    Raises InferenceError naming the body op whose operands have no legal signature."""
    from ccopt.dialects.dtensor import UniformOp

    if len(block.args) != len(inputs) + 1:
        raise InferenceError(
            f"the body takes {len(block.args)} arguments; expected the index and {len(inputs)} inputs"
        )
    if block.args[0].type != i64:
        raise InferenceError(
            f"the body's first argument is the element index (i64), got {block.args[0].type}"
        )
    types: dict[SSAValue, DTensorType] = {block.args[0]: _scalar(iteration, i64)}
    zeros: set[SSAValue] = set()
    for arg, t in zip(block.args[1:], inputs, strict=True):
        if arg.type != t.element_type:
            raise InferenceError(
                f"body argument #{arg.index} is {arg.type} but input #{arg.index - 1} is {t}"
            )
        types[arg] = t
    for op in block.ops:
        if op is block.last_op:
            break
        if isinstance(op, arith.ConstantOp | UniformOp):
            types[op.results[0]] = _scalar(iteration, op.results[0].type)
            if is_zero(op):
                zeros.add(op.results[0])
            continue
        kind = BODY_KINDS.get(type(op))
        if kind is None:
            raise InferenceError(f"'{op.name}' may not appear in a fused body")
        outside = [v for v in op.operands if v not in types]
        if outside:
            raise InferenceError(
                f"in the body, '{op.name}' uses a value defined outside it; a body reads only its "
                "arguments (the element index and one scalar per input)"
            )
        partners = [types[v] for v in op.operands if v not in zeros]
        operands = [
            _zero_like_partners(types[v], partners) if v in zeros else types[v] for v in op.operands
        ]
        try:
            types[op.results[0]] = infer_elementwise(kind, operands, op.results[0].type)
        except InferenceError as e:
            raise InferenceError(f"in the body, '{op.name}': {e.message}", e.axis) from None
    terminator = block.last_op
    assert terminator is not None
    if any(v not in types for v in terminator.operands):
        raise InferenceError("the body yields a value defined outside it")
    return [types[v] for v in terminator.operands]


def check_yield(value: DTensorType, result: DTensorType, index: int) -> None:
    """A yielded value fits a result when it has the result's placement on every axis, or is
    replicated and broadcast along the dimension the result splits there."""
    offset = result.rank - value.rank
    for a, (vp, rp) in enumerate(zip(value.placement_list, result.placement_list, strict=True)):
        if vp == rp:
            continue
        d = rp.split_dim
        if isinstance(vp, ReplicatedAttr) and d is not None:
            own = d - offset
            if own < 0 or value.get_shape()[own] == 1:
                continue
        if vp.split_dim is not None and rp.split_dim == vp.split_dim + offset:
            continue
        raise InferenceError(
            f"yielded value #{index} is {vp.short} but result #{index} is {rp.short}", a
        )
