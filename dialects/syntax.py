"""Cheaper parsing and printing of ccopt's ops, inside xDSL's declarative assembly format.

xDSL parses an op written in its custom format by running the op's format program and then
building the op with IRDL's generic builder; a lowered model is thousands of small ops with the
same few stream numbers, offsets and dimensions, and three things of that were a third of
reading it:

- every `stream 0`, `offset 1024` or `dim 1` built and verified a new `IntegerAttr` (about as
  long as lexing the op); here equal ones are one shared attribute (`ccopt.dialects.attrs`), as
  passes already build them;
- every `offsets [0, 8]` built and verified a new dense array, likewise shared, and so is
  every `prob 0.1` or `by 2.0` (a `FloatAttr`);
- the parsed op went through IRDL's builder (`irdl_op_init`: a dozen generic steps per op);
  here through `init_op`, which does the same work directly and hands any other form back to
  IRDL's builder.

Printing runs the same format program with two directives that skip work that prints nothing:
`attr-dict` of an op without attributes, and the integer variables' comparisons with defaults
and `i1`. And the ops' single operands, results and regions are read by direct accessors
(`SingleAccessor`), which the printer, verifiers and passes read on every op.

The format, its grammar, its output and its error messages stay xDSL's: only how some
directives make or print their attribute, and how the parsed parts become an op, change.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    AttrDictDirective,
    DenseArrayAttributeVariable,
    FormatDirective,
    FormatProgram,
    PrintingState,
    TypedAttributeVariable,
)
from xdsl.irdl.operations import (
    AfterVariadicSingleAccessor,
    BeforeVariadicSingleAccessor,
    VarIRConstruct,
)
from xdsl.parser import Parser
from xdsl.printer import Printer

from ccopt.dialects.attrs import float_attr, int_attr, parse_i64
from ccopt.dialects.construct import init_op, op_shape

__all__ = ["fast_syntax"]


@dataclasses.dataclass(frozen=True)
class SharedIntegerVariable(TypedAttributeVariable):
    """`$stream` of type `IntegerAttr[I64]`: the parsed integer's shared attribute (a wider
    than one-bit integer type: the parse takes no booleans, so the value is a plain int)."""

    def parse_attr(self, parser: Parser) -> Attribute | None:
        value = parse_i64(parser)
        return int_attr(value, self.unique_type)  # type: ignore[arg-type]

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        """xDSL's, without comparing the attribute with a default it does not have."""
        attr = (op.properties if self.is_property else op.attributes).get(self.name)
        if attr is None or (self.default_value is not None and attr == self.default_value):
            return
        state.print_whitespace(printer)
        self.print_attr(printer, attr)

    def print_attr(self, printer: Printer, attr: Attribute) -> None:
        """`print_int(value, type)` as xDSL prints it, without comparing the type with `i1`
        when its width says it is not."""
        if type(attr) is IntegerAttr:
            t = attr.type
            if type(t) is IntegerType and t.width.data != 1:
                printer.print_string(f"{attr.value.data:d}")
                return
        super().print_attr(printer, attr)  # (any other attribute: as xDSL prints it)


@dataclasses.dataclass(frozen=True)
class SharedFloatVariable(TypedAttributeVariable):
    """`$prob` of type `FloatAttr[Float64Type]`: the parsed number's shared attribute. Equal
    properties that are one object compare at once where verification keys compare them and
    hash once where CSE hashes them (a dropout's probability, parsed per op, was compared
    field by field on every verification)."""

    def parse_attr(self, parser: Parser) -> Attribute | None:
        return float_attr(parser.parse_float(), self.unique_type)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True)
class SharedIntArrayVariable(DenseArrayAttributeVariable):
    """`$offsets` of type `DenseArrayBase.constr(i64)`: the parsed list's shared array."""

    def parse_attr(self, parser: Parser) -> Attribute | None:
        if self.is_optional:
            elements = parser.parse_optional_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_i64(parser)
            )
            if elements is None:
                return None
        else:
            elements = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_i64(parser)
            )
        return dense_int_array(self.elt_type, elements)  # type: ignore[arg-type]

    def print_attr(self, printer: Printer, attr: Attribute) -> None:
        """`[0, 8]` in one piece (xDSL prints each number and comma on its own)."""
        if type(attr) is DenseArrayBase and isinstance(attr.elt_type, IntegerType):
            printer.print_string(f"[{int_list(attr.iter_values())}]")
        else:
            super().print_attr(printer, attr)


def int_list(values: Iterable[int]) -> str:
    """`0, 8`: integers as xDSL's `print_list(values, print_int)` prints them."""
    return ", ".join([f"{v:d}" for v in values])


@dataclasses.dataclass(frozen=True)
class QuickAttrDict(AttrDictDirective):
    """`attr-dict` that prints nothing at once for an op without attributes when the format
    takes no properties into the dictionary (nearly every op: xDSL builds three dictionaries
    and a set per op to find that out)."""

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        if op.attributes or self.expected_properties:
            super().print(printer, state, op)


def dense_int_array(elt_type: IntegerType, values: Sequence[int]) -> DenseArrayBase:
    """`DenseArrayBase(elt_type, BytesAttr(elt_type.pack(values)))`, as xDSL's format parser
    builds it, shared: keyed by the values as ints (`true` parses as True, packed as 1: the
    array holds the packed bytes, so the two are the same array)."""
    return _dense_int_array(elt_type, tuple(map(operator.index, values)))


@lru_cache(maxsize=1 << 12)
def _dense_int_array(elt_type: IntegerType, values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase(elt_type, BytesAttr(elt_type.pack(values)))


def _shared(directive: FormatDirective) -> FormatDirective:
    """`directive` with the attribute variables it holds (itself, or inside an optional group)
    replaced by the sharing ones above where their kind allows."""
    kind = type(directive)
    if (
        kind is TypedAttributeVariable
        and directive.unique_base is IntegerAttr  # type: ignore[attr-defined]
        and isinstance(directive.unique_type, IntegerType)  # type: ignore[attr-defined]
        and directive.unique_type.width.data > 1  # type: ignore[attr-defined]
    ):
        return SharedIntegerVariable(**_fields(directive))
    if (
        kind is TypedAttributeVariable
        and directive.unique_base is FloatAttr  # type: ignore[attr-defined]
        and isinstance(directive.unique_type, AnyFloat)  # type: ignore[attr-defined]
    ):
        return SharedFloatVariable(**_fields(directive))
    if kind is DenseArrayAttributeVariable and isinstance(directive.elt_type, IntegerType):  # type: ignore[attr-defined]
        return SharedIntArrayVariable(**_fields(directive))
    if kind is AttrDictDirective:
        return QuickAttrDict(**_fields(directive))
    if not dataclasses.is_dataclass(directive):
        return directive
    changes: dict[str, object] = {}
    for field in dataclasses.fields(directive):
        value = getattr(directive, field.name)
        if isinstance(value, FormatDirective):
            new = _shared(value)
            if new is not value:
                changes[field.name] = new
        elif type(value) is tuple:
            items = tuple(_shared(v) if isinstance(v, FormatDirective) else v for v in value)
            if any(a is not b for a, b in zip(items, value, strict=True)):
                changes[field.name] = items
    return dataclasses.replace(directive, **changes) if changes else directive  # type: ignore[type-var]


def _fields(directive: FormatDirective) -> dict[str, object]:
    return {f.name: getattr(directive, f.name) for f in dataclasses.fields(directive)}  # type: ignore[arg-type]


def _format_program(cls: type[IRDLOperation], method: str = "parse") -> FormatProgram | None:
    """The format program xDSL made for `cls` (kept by its `parse` or `print`), or None
    without one."""
    found = cls.__dict__.get(method)
    function = getattr(found, "__func__", found)
    closure = getattr(function, "__closure__", None) or ()
    for cell in closure:
        if isinstance(cell.cell_contents, FormatProgram):
            return cell.cell_contents
    return None


def _build(
    cls: type[IRDLOperation],
    *,
    operands: Sequence[SSAValue | Sequence[SSAValue] | None] | None = None,
    result_types: Sequence[Attribute | Sequence[Attribute] | None] | None = None,
    attributes: Mapping[str, Attribute | None] | None = None,
    properties: Mapping[str, Attribute | None] | None = None,
    successors: Sequence[object] | None = None,
    regions: Sequence[Region | Sequence[Region] | None] | None = None,
) -> IRDLOperation:
    """IRDL's `build` (what the format parser calls) through `init_op`; the parser hands a
    one-element list for each single operand, result and region, which `init_op` takes as
    the value. Successors, and classes `init_op` does not build directly, go to IRDL."""
    shape = op_shape(cls)
    if shape is None or successors:
        return IRDLOperation.build.__func__(  # type: ignore[attr-defined]
            cls,
            operands=operands,
            result_types=result_types,
            attributes=attributes,
            properties=properties,
            successors=successors,
            regions=regions,
        )
    op = cls.__new__(cls)
    init_op(
        op,
        operands=_singles(operands or (), shape.operands),
        result_types=_singles(result_types or (), shape.results),
        properties=properties,
        attributes=attributes,
        regions=_singles(regions or (), shape.regions),
    )
    return op


def _singles(args: Sequence[object], kinds: tuple[int, ...]) -> Sequence[object]:
    """Each one-element list given for a single definition (kind 0) as its element."""
    if len(args) != len(kinds):
        return args  # (IRDL's builder reports the count)
    return [
        a[0] if kind == 0 and type(a) in (list, tuple) and len(a) == 1 else a  # type: ignore[index,arg-type]
        for a, kind in zip(args, kinds, strict=True)
    ]


@dataclasses.dataclass(frozen=True)
class SingleAccessor(BeforeVariadicSingleAccessor):
    """`op.source` for a single operand, result or region definition: the element at `idx`
    (negative: counted from the end, after a variadic one) of the op's tuple `field`, read
    directly. IRDL's accessor goes through `op.operands` (a view object) and a `match` on the
    kind each time; printers, verifiers and passes read these on every op. (An IRDL accessor
    still, for the format parser's `index`.)"""

    field: str = "_operands"

    def index(self, args: Sequence[object]) -> object:
        return args[self.idx]

    def __get__(self, obj: object, objtype: type | None = None) -> object:
        if obj is None:
            return self
        # (tuple's own indexing: xDSL's SSAValues overrides it in Python, for slices)
        return _item(getattr(obj, self.field), self.idx)


_item = tuple.__getitem__


_FIELDS = {
    VarIRConstruct.OPERAND: "_operands",
    VarIRConstruct.RESULT: "results",
    VarIRConstruct.REGION: "regions",
}


def _fast_accessors(cls: type[IRDLOperation]) -> None:
    """Replace IRDL's accessors of `cls`'s single operands, results and regions by
    `SingleAccessor`s (the same element of the same tuple)."""
    for name, accessor in list(cls.__dict__.items()):
        kind = type(accessor)
        if kind is BeforeVariadicSingleAccessor:
            idx = accessor.idx
        elif kind is AfterVariadicSingleAccessor:
            idx = accessor.idx - accessor.num_defs
        else:
            continue
        field = _FIELDS.get(accessor.construct)
        if field is not None:
            setattr(cls, name, SingleAccessor(accessor.construct, idx, field))


def _remembered_traits(cls: type[IRDLOperation]) -> None:
    """`cls.get_trait(T)`, `has_trait(T)` and `get_traits_of_type(T)` for a trait class `T`
    remembered per class (xDSL scans the class's traits with `isinstance` each time: the
    printer asks every op whether it is isolated, verifiers, CSE and DCE ask for terminators
    and memory effects, several times per op). An entry holds the set of traits it was found in,
    and a class whose traits changed since (`add_trait` makes a new set) looks again. Each
    answer found is one Python frame: the set is read from the class's `OpTraits` directly
    (its `traits` property is a frame of its own)."""
    found: dict[type, tuple[frozenset[object], tuple[object, ...]]] = {}

    def of_type(c: type[IRDLOperation], trait_type: type) -> tuple[object, ...]:
        current = c.traits.traits
        entry = found[trait_type] = (
            current,
            tuple([t for t in current if isinstance(t, trait_type)]),
        )
        return entry[1]

    def get_traits_of_type(c: type[IRDLOperation], trait_type: type) -> list[object]:
        if c is cls:
            entry = found.get(trait_type)
            if entry is not None and entry[0] is c.traits._traits:
                return list(entry[1])
            return list(of_type(c, trait_type))
        return Operation.get_traits_of_type.__func__(c, trait_type)  # type: ignore[attr-defined]

    def get_trait(c: type[IRDLOperation], trait: object) -> object:
        if c is not cls or not isinstance(trait, type):
            return Operation.get_trait.__func__(c, trait)  # type: ignore[attr-defined]
        entry = found.get(trait)
        traits = (
            entry[1] if entry is not None and entry[0] is c.traits._traits else of_type(c, trait)
        )
        return traits[0] if traits else None

    def has_trait(
        c: type[IRDLOperation], trait: object, *, value_if_unregistered: bool = True
    ) -> bool:
        if c is cls and isinstance(trait, type):
            entry = found.get(trait)
            if entry is not None and entry[0] is c.traits._traits:
                return bool(entry[1])
        return c.get_trait(trait) is not None  # type: ignore[arg-type]

    cls.get_traits_of_type = classmethod(get_traits_of_type)  # type: ignore[method-assign,assignment]
    cls.get_trait = classmethod(get_trait)  # type: ignore[method-assign,assignment]
    cls.has_trait = classmethod(has_trait)  # type: ignore[method-assign,assignment]


def fast_syntax(dialect: Dialect) -> Dialect:
    """Give the ops of `dialect` (ccopt's own) the cheaper parsing described above, direct
    accessors (`SingleAccessor`), remembered traits, and the identity hash in C (IRDL's
    `__hash__` is `id(self)` in a Python frame, and passes keep sets and tables of ops: DCE's
    live set looks every op up several times); returns the dialect. A class that defines its
    own `build`, parser or hash keeps it."""
    for cls in dialect.operations:
        if not issubclass(cls, IRDLOperation):
            continue
        _fast_accessors(cls)
        if "__hash__" not in cls.__dict__:  # (IRDL's is `id(self)` in a Python frame)
            cls.__hash__ = object.__hash__  # type: ignore[method-assign]
        if not any(m in cls.__dict__ for m in ("get_trait", "has_trait", "get_traits_of_type")):
            _remembered_traits(cls)
        if "build" not in cls.__dict__:
            cls.build = classmethod(_build)  # type: ignore[method-assign,assignment]
        program = _format_program(cls)
        if program is None:
            continue
        shared = FormatProgram(tuple(_shared(s) for s in program.stmts))
        if all(a is b for a, b in zip(shared.stmts, program.stmts, strict=True)):
            continue
        cls.parse = classmethod(_format_parse(shared))  # type: ignore[method-assign,assignment]
        if _format_program(cls, "print") is program:  # (not a class's own printer)
            cls.print = _format_print(shared)  # type: ignore[method-assign]
    return dialect


def _format_print(program: FormatProgram):  # noqa: ANN202 - a method's function
    def print_with_format(self: IRDLOperation, printer: Printer) -> None:
        program.print(printer, self)

    return print_with_format


def _format_parse(program: FormatProgram):  # noqa: ANN202 - a classmethod's function
    def parse_with_format(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
        return program.parse(parser, cls)

    return parse_with_format
