"""Open placements (`?`): verification that accepts them where a concrete placement would be
legal, and the closing of a program for the interpreter.

An op whose types have `?` verifies mesh axis by mesh axis: on axis `a` the open operand
placements take every candidate (`R`, `S(d)` for each dimension, `P(sum)`) jointly, the open
placements of the other axes are read as `R`, and the axis is legal when some candidate makes
the op's inference succeed with a result that agrees with every concrete result placement on
`a` (errors that inference blames on another axis leave `a` undecided, not illegal). Axes are
checked independently, as every placement signature in ccopt is chosen per axis.

The interpreter runs such a program as its all-`R` twin (`ccopt.dialects.open_as_replicated`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import product

from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects.dtensor_type import (
    DTensorType,
    OpenAttr,
    PartialAttr,
    Placement,
    R,
    SplitAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.mesh import Mesh

Infer = Callable[[Sequence[Attribute]], DTensorType]
"""The result type an op would have for these operand types; raises InferenceError."""


def has_open_types(op: Operation) -> bool:
    return any(
        isinstance(v.type, DTensorType) and v.type.is_open for v in (*op.operands, *op.results)
    )


def candidates(t: DTensorType) -> list[Placement]:
    """The concrete placements an open axis of `t` may stand for."""
    return [R, *(SplitAttr(d) for d in range(t.rank)), PartialAttr("sum")]


def _closed(t: Attribute, axis: int | None, choice: dict[int, Placement]) -> Attribute:
    """`t` with its open placement on `axis` replaced by `choice` and every other open one by R."""
    if not isinstance(t, DTensorType) or not t.is_open:
        return t
    return t.with_placements(
        (choice.get(id(t), R) if a == axis else R) if isinstance(p, OpenAttr) else p
        for a, p in enumerate(t.placement_list)
    )


def verify_open(op: Operation, mesh: Mesh, infer: Infer) -> None:
    """Verify `op` whose operand or result types have `?`; raises VerifyException naming the
    first mesh axis on which no candidate makes the op legal."""
    operand_types = [v.type for v in op.operands]
    (result,) = (r.type for r in op.results)
    assert isinstance(result, DTensorType)
    for axis in range(mesh.ndim):
        error = _axis_error(operand_types, result, axis, infer)
        if error is None:
            continue
        where = f"on mesh axis '{mesh.axis_names[axis]}'"
        if any(_open_at(t, axis) for t in operand_types):
            raise VerifyException(
                f"{where}: no placement for the open operands makes the op legal ({error})"
            )
        raise VerifyException(f"{where}: {error}")


def _open_at(t: Attribute, axis: int) -> bool:
    return isinstance(t, DTensorType) and isinstance(t.placement_list[axis], OpenAttr)


def _axis_error(
    operand_types: list[Attribute], result: DTensorType, axis: int, infer: Infer
) -> str | None:
    """None when some choice of the open operand placements on `axis` is legal, else the
    first reason."""
    open_operands = [i for i, t in enumerate(operand_types) if _open_at(t, axis)]
    choices = [candidates(operand_types[i]) for i in open_operands]  # type: ignore[arg-type]
    wanted = result.placement_list[axis]
    first: str | None = None
    for combo in product(*choices):
        chosen = dict(zip(open_operands, combo, strict=True))
        types = [
            _closed(t, axis, {id(t): chosen[i]} if i in chosen else {})
            for i, t in enumerate(operand_types)
        ]
        try:
            got = infer(types)
        except InferenceError as e:
            if e.axis is not None and e.axis != axis:
                return None
            first = first or e.message
            continue
        except VerifyException as e:
            first = first or str(e)
            continue
        if isinstance(wanted, OpenAttr) or got.placement_list[axis] == wanted:
            if _shape_agrees(got, result):
                return None
            first = first or f"the result must be {got.summary()}"
        else:
            first = first or f"the result would be {got.placement_list[axis].short}"
    return first or "no candidate placement"


def _shape_agrees(got: DTensorType, declared: DTensorType) -> bool:
    return got.get_shape() == declared.get_shape() and got.element_type == declared.element_type
