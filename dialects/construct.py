"""Building ops whose operands, results and regions are all single, without IRDL's generic
builder.

`IRDLOperation.__init__` groups operands and results by definition (variadic, optional,
segment sizes) and drops None properties for every op built; for an op whose definitions are
all single that is the identity, yet it was most of convert-to-kernel's time (one alloc, view,
event and kernel per lowered op). `init_op` builds such an op directly (`Operation.__init__`,
which also fills IRDL's default properties) and leaves every other op to IRDL's builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.operations import VariadicDef

_FIXED: dict[type, tuple[int, int, int] | None] = {}
"""Per op class: its counts of operands, results and regions when every operand, result,
region and successor definition is single and no segment sizes are kept; else None."""


def fixed_counts(cls: type[IRDLOperation]) -> tuple[int, int, int] | None:
    if cls not in _FIXED:
        d = cls.get_irdl_definition()
        defs = [*d.operands, *d.results, *d.regions, *d.successors]
        single = not d.options and not any(isinstance(x, VariadicDef) for _, x in defs)
        _FIXED[cls] = (len(d.operands), len(d.results), len(d.regions)) if single else None
    return _FIXED[cls]


def init_op(
    op: IRDLOperation,
    *,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute | None] | None = None,
    attributes: Mapping[str, Attribute | None] | None = None,
    regions: Sequence[Region] = (),
) -> None:
    """What `IRDLOperation.__init__(op, ...)` does, taking the short way when `op`'s class has
    only single definitions and the arguments are as many plain values, types and regions (IRDL's
    builder reports a wrong count)."""
    if (
        fixed_counts(type(op)) == (len(operands), len(result_types), len(regions))
        and all(isinstance(v, SSAValue) for v in operands)
        and all(isinstance(t, Attribute) for t in result_types)
        and all(isinstance(r, Region) for r in regions)
    ):
        Operation.__init__(
            op,
            operands=operands,
            result_types=result_types,
            properties=_present(properties),
            attributes=_present(attributes),
            regions=regions,
        )
        return
    IRDLOperation.__init__(
        op,
        operands=operands,  # type: ignore[arg-type]
        result_types=result_types,  # type: ignore[arg-type]
        properties=properties,
        attributes=attributes,
        regions=regions,  # type: ignore[arg-type]
    )


def _present(attrs: Mapping[str, Attribute | None] | None) -> dict[str, Attribute]:
    """The attributes given a value (IRDL's builder drops None ones)."""
    if not attrs:
        return {}
    return {k: v for k, v in attrs.items() if v is not None}
