"""Building ops without IRDL's generic builder.

`IRDLOperation.__init__` groups operands, results and regions by definition (single, optional,
variadic), computes segment sizes and drops None properties for every op built, through a
dozen generic calls per op: it was most of convert-to-kernel's time (one alloc, view, event and
kernel per lowered op) and of overlap's (sched.execute, sched.yield, dtensor.slice with their
variadic operands). `init_op` does the same work directly for the argument forms passes use -
a value (type, region) per single definition; None, a value or a list or tuple of values per
optional or variadic one - and leaves anything else (operations as operands, blocks as regions,
wrong counts, successors, same-variadic-size options) to IRDL's builder, which also
reports the errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from xdsl.dialects.builtin import UNKNOWN_LOC
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
    SSAValues,
    Use,
)
from xdsl.irdl import IRDLOperation
from xdsl.irdl.operations import (
    AttrSizedOperandSegments,
    AttrSizedRegionSegments,
    AttrSizedResultSegments,
    AttrSizedSegments,
    OptionalDef,
    SameVariadicSize,
    VariadicDef,
)

_SINGLE, _OPTIONAL, _VARIADIC = 0, 1, 2
_Op = TypeVar("_Op", bound=IRDLOperation)


@dataclass(frozen=True)
class OpShape:
    """What building an op of one class needs to know of its definition: the kind of each
    operand, result and region definition (single, optional, variadic), and where segment
    sizes go (as a property or an attribute; None: not kept)."""

    operands: tuple[int, ...]
    results: tuple[int, ...]
    regions: tuple[int, ...]
    operand_segments: bool | None
    result_segments: bool | None
    region_segments: bool | None
    defaults: tuple[tuple[str, Attribute], ...] = ()
    """Properties that take a default value when not given (IRDL's `__post_init__`)."""
    attribute_defaults: tuple[tuple[str, Attribute], ...] = ()
    direct: bool = False
    """Whether the op's fields may be set directly (`_fill`): the class keeps IRDL's
    `__post_init__`, which only fills the defaults above."""
    single: bool = False
    """`direct` and `fixed`: arguments of the right counts and kinds are the op's lists."""

    @property
    def fixed(self) -> bool:
        """Every definition single and no segment sizes: the arguments are the op's lists."""
        return not any((*self.operands, *self.results, *self.regions)) and (
            self.operand_segments is None
            and self.result_segments is None
            and self.region_segments is None
        )


_SHAPES: dict[type, OpShape | None] = {}
"""Per op class: its shape, or None when the fast path does not apply (successors, options
that check variadic sizes while building)."""

_SEGMENTS: dict[tuple[int, ...], Attribute] = {}
"""Segment-size arrays by sizes (attributes are immutable: ops share them)."""


def _kind(definition: object) -> int:
    if isinstance(definition, OptionalDef):
        return _OPTIONAL
    return _VARIADIC if isinstance(definition, VariadicDef) else _SINGLE


def op_shape(cls: type[IRDLOperation]) -> OpShape | None:
    if cls not in _SHAPES:
        d = cls.get_irdl_definition()
        where: dict[type, bool] = {}
        shape = None
        if not d.successors and not any(isinstance(o, SameVariadicSize) for o in d.options):
            for option in d.options:  # (other options only concern parsing and verifying)
                if isinstance(option, AttrSizedSegments):
                    where[type(option)] = option.as_property
            known = (AttrSizedOperandSegments, AttrSizedResultSegments, AttrSizedRegionSegments)
            if set(where) <= set(known):
                shape = OpShape(
                    tuple(_kind(x) for _, x in d.operands),
                    tuple(_kind(x) for _, x in d.results),
                    tuple(_kind(x) for _, x in d.regions),
                    where.get(AttrSizedOperandSegments),
                    where.get(AttrSizedResultSegments),
                    where.get(AttrSizedRegionSegments),
                    _defaults(d.properties),
                    _defaults(d.attributes),
                    cls.__post_init__ is IRDLOperation.__post_init__,
                )
                shape = replace(shape, single=shape.direct and shape.fixed)
        _SHAPES[cls] = shape
    return _SHAPES[cls]


def _defaults(definitions: Mapping[str, object]) -> tuple[tuple[str, Attribute], ...]:
    return tuple(
        (name, d.default_value)  # type: ignore[attr-defined]
        for name, d in definitions.items()
        if not isinstance(d, OptionalDef) and getattr(d, "default_value", None) is not None
    )


_NO_VALUES: SSAValues = SSAValues(())
"""Every op without operands or results shares one empty (immutable) value tuple: most
kernel-level ops write into their operands and have no results."""


def _fill(
    op: Operation,
    shape: OpShape,
    operands: list[SSAValue],
    result_types: list[Attribute],
    properties: dict[str, Attribute],
    attributes: dict[str, Attribute],
    regions: list[Region],
) -> None:
    """What `Operation.__init__` and IRDL's `__post_init__` do for these arguments (operand
    uses, results, defaults, regions attached), set directly: their generic steps (generators,
    property setters, the definition's lookup) were a third of building an op."""
    values = SSAValues(operands) if operands else _NO_VALUES
    uses = tuple([Use(op, i) for i in range(len(values))])
    for value, use in zip(values, uses, strict=True):  # (`value.add_use(use)`, inlined)
        first = value.first_use
        use._next_use = first  # pyright: ignore[reportPrivateUsage]
        if first is not None:
            first._prev_use = use  # pyright: ignore[reportPrivateUsage]
        value.first_use = use
    op._operands = values  # pyright: ignore[reportPrivateUsage]
    op._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    op.results = (
        SSAValues([OpResult(t, op, i) for i, t in enumerate(result_types)])
        if result_types
        else _NO_VALUES
    )
    for name, default in shape.defaults:
        properties.setdefault(name, default)
    for name, default in shape.attribute_defaults:
        attributes.setdefault(name, default)
    op.properties = properties
    op.attributes = attributes
    op.location = UNKNOWN_LOC
    op._successors = ()  # pyright: ignore[reportPrivateUsage]
    op._successor_uses = ()  # pyright: ignore[reportPrivateUsage]
    for region in regions:
        if region.parent is not None:
            raise ValueError("Cannot add region that is already attached on an operation.")
        region.parent = op
    op.regions = tuple(regions)


def fixed_counts(cls: type[IRDLOperation]) -> tuple[int, int, int] | None:
    """Counts of operands, results and regions of a class whose definitions are all single and
    that keeps no segment sizes; else None."""
    shape = op_shape(cls)
    if shape is None or not shape.fixed:
        return None
    return (len(shape.operands), len(shape.results), len(shape.regions))


_INSTANCES: dict[type, dict[type, bool]] = {SSAValue: {}, Attribute: {}, Region: {}}
"""Per expected class, whether values of a concrete class are instances of it: `isinstance` on
an abstract class (SSAValue, Attribute) runs Python code, and every operand and result type of
every op built went through it."""


def _is_a(value: object, of: type) -> bool:
    found = _INSTANCES[of][type(value)] = isinstance(value, of)
    return found


def _flatten(
    args: Sequence[object], kinds: tuple[int, ...], of: type
) -> tuple[list, list[int]] | None:
    """The arguments as one list with the size of each group, as IRDL's builder makes them;
    None for a form left to IRDL's builder (it accepts more forms, and reports errors)."""
    if len(args) != len(kinds):
        return None
    known = _INSTANCES[of]
    flat: list[object] = []
    sizes: list[int] = []
    for arg, kind in zip(args, kinds, strict=True):
        found = known.get(type(arg))  # (False for a list: asked once, not per op)
        if found is None:
            found = _is_a(arg, of)
        if found:
            flat.append(arg)
            sizes.append(1)
        elif kind == _SINGLE:
            return None
        elif arg is None:
            sizes.append(0)
        elif type(arg) in (list, tuple) and (kind == _VARIADIC or len(arg) <= 1):  # type: ignore[arg-type]
            group: Sequence[object] = arg  # type: ignore[assignment]
            if not all(known.get(type(a)) or _is_a(a, of) for a in group):
                return None
            flat.extend(group)
            sizes.append(len(group))
        else:
            return None
    return flat, sizes


def segments_attr(sizes: list[int]) -> Attribute:
    """The segment sizes attribute of these sizes, shared (as `init_op` gives ops built)."""
    return _segments(sizes)


def _segments(sizes: list[int]) -> Attribute:
    key = tuple(sizes)
    found = _SEGMENTS.get(key)
    if found is None:
        from xdsl.dialects.builtin import DenseArrayBase, i32

        found = _SEGMENTS[key] = DenseArrayBase.from_list(i32, sizes)
    return found


def init_op(
    op: IRDLOperation,
    *,
    operands: Sequence[SSAValue | Sequence[SSAValue] | None] = (),
    result_types: Sequence[Attribute | Sequence[Attribute] | None] = (),
    properties: Mapping[str, Attribute | None] | None = None,
    attributes: Mapping[str, Attribute | None] | None = None,
    regions: Sequence[Region | Sequence[Region] | None] = (),
) -> None:
    """What `IRDLOperation.__init__(op, ...)` does, without its generic machinery when `op`'s
    class and the arguments' forms allow (see the module docstring)."""
    shape = op_shape(type(op))
    if shape is not None and shape.single and _singles(shape, operands, result_types, regions):
        _fill(
            op,
            shape,
            list(operands),  # type: ignore[arg-type]
            list(result_types),  # type: ignore[arg-type]
            _present(properties),
            _present(attributes),
            list(regions),  # type: ignore[arg-type]
        )
        return
    built = None
    if shape is not None:
        built = (
            _flatten(operands, shape.operands, SSAValue),
            _flatten(result_types, shape.results, Attribute),
            _flatten(regions, shape.regions, Region),
        )
    if built is None or None in built:
        IRDLOperation.__init__(
            op,
            operands=operands,  # type: ignore[arg-type]
            result_types=result_types,  # type: ignore[arg-type]
            properties=properties,
            attributes=attributes,
            regions=regions,  # type: ignore[arg-type]
        )
        return
    assert shape is not None
    (values, value_sizes), (types, type_sizes), (bodies, body_sizes) = built  # type: ignore[misc]
    props, attrs = _present(properties), _present(attributes)
    for as_property, sizes, name in (
        (shape.operand_segments, value_sizes, AttrSizedOperandSegments.attribute_name),
        (shape.result_segments, type_sizes, AttrSizedResultSegments.attribute_name),
        (shape.region_segments, body_sizes, AttrSizedRegionSegments.attribute_name),
    ):
        if as_property is not None:
            (props if as_property else attrs)[name] = _segments(sizes)
    if shape.direct:
        _fill(op, shape, values, types, props, attrs, bodies)  # type: ignore[arg-type]
        return
    Operation.__init__(
        op,
        operands=values,  # type: ignore[arg-type]
        result_types=types,  # type: ignore[arg-type]
        properties=props,
        attributes=attrs,
        regions=bodies,  # type: ignore[arg-type]
    )


def _singles(shape: OpShape, operands: Sequence, result_types: Sequence, regions: Sequence) -> bool:
    """Whether the arguments are one value, type and region per definition (all single, no
    segment sizes, `_fill` allowed): the lists `_fill` takes as they are, without `_flatten`."""
    if (
        len(operands) != len(shape.operands)
        or len(result_types) != len(shape.results)
        or len(regions) != len(shape.regions)
    ):
        return False
    # (loops, not `all` over generators: this runs for nearly every op a pass builds)
    values = _INSTANCES[SSAValue]
    for v in operands:
        if not (values.get(type(v)) or _is_a(v, SSAValue)):
            return False
    types = _INSTANCES[Attribute]
    for t in result_types:
        if not (types.get(type(t)) or _is_a(t, Attribute)):
            return False
    for r in regions:
        if type(r) is not Region:
            return False
    return True


def fill_op(
    op: IRDLOperation,
    operands: list[SSAValue],
    operand_sizes: Sequence[int],
    result_types: list[Attribute],
    properties: dict[str, Attribute],
    regions: list[Region],
) -> None:
    """`init_op` for arguments already flat: the operand values in one list with the size of
    each operand group, one type per result (results of a class that keeps no result segment
    sizes) and one region per definition, for a class whose fields `init_op` sets directly.
    Builders that make many ops of one class with variadic operands (overlap's `sched.execute`
    and `sched.yield` per chunk) skip the grouping of every argument. `properties` is kept."""
    shape = op_shape(type(op))
    assert shape is not None and shape.direct and shape.result_segments is None
    assert len(operand_sizes) == len(shape.operands) and len(regions) == len(shape.regions)
    attributes: dict[str, Attribute] = {}
    if shape.operand_segments is not None:
        where = properties if shape.operand_segments else attributes
        where[AttrSizedOperandSegments.attribute_name] = _segments(list(operand_sizes))
    _fill(op, shape, operands, result_types, properties, attributes, regions)


def _present(attrs: Mapping[str, Attribute | None] | None) -> dict[str, Attribute]:
    """The attributes given a value (IRDL's builder drops None ones)."""
    if not attrs:
        return {}
    return {k: v for k, v in attrs.items() if v is not None}


def build_op(
    cls: type[_Op],
    operands: Sequence[SSAValue | Sequence[SSAValue] | None] = (),
    result_types: Sequence[Attribute | Sequence[Attribute] | None] = (),
    properties: Mapping[str, Attribute | None] | None = None,
) -> _Op:
    """An op of any IRDL class built by `init_op`, for classes (xDSL's arith ops) whose own
    constructors go through IRDL's builder: unset properties take their defaults."""
    op = cls.__new__(cls)
    init_op(op, operands=operands, result_types=result_types, properties=properties)
    return op


def clone_op(op: Operation, value_mapper: dict[SSAValue, SSAValue]) -> Operation:
    """`op.clone(value_mapper=value_mapper)` - operands mapped, results recorded in the
    mapper, name hints, properties, attributes and location copied - set directly (`_fill`)
    for an IRDL op without regions or successors: xDSL's clone goes through the generic
    `Operation.__init__` and IRDL's `__post_init__` (the definition's lookup, property
    setters), which was most of copying the scalar bodies fused ops carry. Any other op is
    cloned by xDSL."""
    cls = type(op)
    shape = op_shape(cls) if isinstance(op, IRDLOperation) else None
    if shape is None or not shape.direct or op.regions or op._successors:  # pyright: ignore[reportPrivateUsage]
        return op.clone(value_mapper=value_mapper)
    copy = cls.__new__(cls)
    get = value_mapper.get
    _fill(
        copy,
        shape,
        [get(v, v) for v in op._operands],  # pyright: ignore[reportPrivateUsage]
        [r.type for r in op.results],
        dict(op.properties),
        dict(op.attributes),
        [],
    )
    copy.location = op.location
    for old, new in zip(op.results, copy.results, strict=True):
        value_mapper[old] = new
        new.name_hint = old.name_hint  # (through the setter, as xDSL's clone)
    return copy


def value_of(arg: object) -> SSAValue:
    """`SSAValue.get(arg)` - a value, or the single result of an op - without its `match`
    and import for the usual case, a value: every dtensor and collective op built asked."""
    kind = type(arg)
    if kind is OpResult or kind is BlockArgument:
        return arg  # type: ignore[return-value]
    return SSAValue.get(arg)  # type: ignore[arg-type]


def link_ops(block: Block, ops: Sequence[Operation], before: Operation | None = None) -> None:
    """`block.insert_ops_before(ops, before)` (`add_ops` when `before` is None) for ops just
    built (no parent, nothing nested in `block`), linked in directly: xDSL checks for every op
    that it is not an ancestor of the block, walking up from the block, and passes that rewrite
    or lower insert about one op per op they touch."""
    if not ops:
        return
    prev = block._last_op if before is None else before._prev_op  # pyright: ignore[reportPrivateUsage]
    for op in ops:
        assert op.parent is None, "link_ops: the op is in a block already"
        op.parent = block
        op._prev_op = prev  # pyright: ignore[reportPrivateUsage]
        if prev is None:
            block._first_op = op  # pyright: ignore[reportPrivateUsage]
        else:
            prev._next_op = op  # pyright: ignore[reportPrivateUsage]
        prev = op
    prev._next_op = before  # pyright: ignore[reportPrivateUsage]
    if before is None:
        block._last_op = prev  # pyright: ignore[reportPrivateUsage]
    else:
        before._prev_op = prev  # pyright: ignore[reportPrivateUsage]
