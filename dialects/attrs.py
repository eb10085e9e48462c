"""Shared builders of the small attributes that ops carry (stream numbers, dimensions, offsets,
constants).

xDSL builds an `IntegerAttr(3, i64)` in about 30 µs (it normalizes and verifies the value and
its type) and a `DenseArrayBase` in about 50 µs; lowering a model builds the same few thousand
times. Attributes are immutable, so equal ones are built once and shared by every op."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from enum import Enum
from functools import lru_cache
from typing import TypeVar

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    SymbolRefAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Data, ParametrizedAttribute
from xdsl.parser import AttrParser

__all__ = [
    "ALGORITHM_ATTRIBUTE",
    "float_attr",
    "i64_array",
    "i64_attr",
    "int_attr",
    "mark_canonical",
    "parse_i64",
    "uniqued",
]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

ALGORITHM_ATTRIBUTE = "algo.algorithm"
"""The attribute by which a coll op names the `algo.algorithm` that implements it (here, not in
the algo dialect, so that passes test for it without importing that dialect and numpy)."""

POSITIVE_ARGUMENT = "ccopt.positive"
"""A function argument attribute: the value is never negative (a second moment, a step count),
so the runner draws its random inputs so (a negative second moment's square root is NaN)."""


def parse_i64(parser: AttrParser, allow_negative: bool = True) -> int:
    """An integer of the custom syntax that an i64 holds (a size, an offset, a stream): a larger
    one is an error at the number, as in MLIR, not a ValueError (or `struct.error`) from the
    attribute built with it."""
    start = parser.pos
    value = parser.parse_integer(allow_negative=allow_negative, allow_boolean=False)
    if not I64_MIN <= value <= I64_MAX:
        parser.raise_error(f"integer {value} does not fit in 64 bits", start, parser.pos)
    return value


_SIZE = 1 << 12


def int_attr(value: int, t: IntegerType | IndexType) -> IntegerAttr:
    """`IntegerAttr(value, t)`, shared (keyed by the value as an int: True and 1 are alike)."""
    return _int_attr(operator.index(value), t)


@lru_cache(maxsize=_SIZE)
def _int_attr(value: int, t: IntegerType | IndexType) -> IntegerAttr:
    return IntegerAttr(value, t)


def i64_attr(value: int) -> IntegerAttr:
    """`IntegerAttr(value, i64)`, shared."""
    return int_attr(value, i64)


def float_attr(value: float, t: AnyFloat = f64) -> FloatAttr:
    """`FloatAttr(value, t)`, shared (keyed by the exact bits of the value: 0.0 and -0.0, equal
    as Python numbers, are different attributes)."""
    return _float_attr(float(value).hex(), t)


@lru_cache(maxsize=_SIZE)
def _float_attr(bits: str, t: AnyFloat) -> FloatAttr:
    return FloatAttr(float.fromhex(bits), t)


def i64_array(values: Iterable[int]) -> DenseArrayBase:
    """`DenseArrayBase.from_list(i64, values)`, shared (keyed by the values as ints: a float
    key equal to them would hand its array to them)."""
    return _i64_array(tuple(operator.index(v) for v in values))


@lru_cache(maxsize=_SIZE)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


_UNIQUE_LIMIT = 1 << 14
"""At most this many entries per uniqued class and table (`uniqued`); a full table starts
over (equal attributes built after that are other objects: still correct, shared less)."""

_CANONICAL = "_ccopt_canonical"
"""Marks (in the attribute's `__dict__`) the one object `uniqued` hands out for its value:
its `__init__`, which Python calls again on every construction, returns at once."""

_A = TypeVar("_A", bound=Attribute)
_K = TypeVar("_K")
_V = TypeVar("_V")


def shared_entry(table: dict[_K, _V], key: _K, make: Callable[[_K], _V]) -> _V:
    """`make(key)`, built once per key and kept in `table` (cleared past 4096 entries: a model
    has a few dozen distinct keys, a stream of distinct ones must not grow it forever)."""
    found = table.get(key)
    if found is None:
        if len(table) > 4096:
            table.clear()
        found = table[key] = make(key)
    return found


_BODY_REFS: dict[str, SymbolRefAttr] = {}


def body_ref(name: str) -> SymbolRefAttr:
    """`SymbolRefAttr(name)`, one per name: a model's fused ops and kernels name a handful of
    bodies hundreds of times, and building the attribute verifies it (about a third of
    building such a kernel)."""
    return shared_entry(_BODY_REFS, name, SymbolRefAttr)


def uniqued(cls: type[_A]) -> type[_A]:
    """Make equal attributes of `cls` one object, as MLIR uniques attributes and types.

    Passes and verifiers build the same few placements, axes, futures and events thousands of
    times - each build sets and verifies its parameters (10-20 µs) - and verification keys
    compare an op's attributes with the ones it last verified with: the same object compares
    at once, an equal one calls `__eq__` (a Python frame per parameter) on every verification.

    Construction (`cls(*args)`) is looked up by its arguments, the generic path
    (`cls.new(params)`, the parser's) by the parameters, both with the types of every value
    inside (`_value_key`: `1` and `True`, `0.0` and `-0.0` are equal in Python but print
    differently). The first build of a value verifies it as before and becomes the one object
    for both; a build that fails is not remembered. Arguments that are not plain values (a
    generator), subclasses and `cls.__new__(cls)` without arguments (pickle's and copy's
    path, for a class with parameters) build a fresh object as before."""
    by_args: dict[object, tuple[_A, object, object]] = {}
    by_params: dict[object, _A] = {}
    init = cls.__init__
    is_data = issubclass(cls, Data)
    fields = () if is_data else tuple(f for f, _ in cls.get_irdl_definition().parameters)  # type: ignore[attr-defined]
    bare = not is_data and not fields  # no parameters: one object for the class

    def canonical(attr: _A) -> _A:
        """The one object equal to the freshly built and verified `attr`."""
        try:
            key = _value_key(attr)
            found = by_params.get(key)
        except TypeError:  # (a parameter that is not a plain value)
            return attr
        if found is None:
            if len(by_params) >= _UNIQUE_LIMIT:
                by_params.clear()
            object.__setattr__(attr, _CANONICAL, True)
            found = by_params[key] = attr
        return found

    def __new__(c: type[_A], *args: object, **kwargs: object) -> _A:  # noqa: N807
        if c is not cls or not (args or kwargs or bare):
            return object.__new__(c)
        try:
            key = (_arg_key(args), _arg_key(tuple(kwargs.items())))
            entry = by_args.get(key)
        except TypeError:
            return object.__new__(c)
        if entry is None:
            fresh = object.__new__(c)
            init(fresh, *args, **kwargs)
            if len(by_args) >= _UNIQUE_LIMIT:
                by_args.clear()
            # (with the arguments: a key names canonical attributes by identity)
            entry = by_args[key] = (canonical(fresh), args, kwargs)
        return entry[0]

    def __init__(self: _A, *args: object, **kwargs: object) -> None:  # noqa: N807
        if _CANONICAL not in self.__dict__:  # (a fresh object of a subclass or generic path)
            init(self, *args, **kwargs)

    def new(c: type[_A], params: object) -> _A:
        if c is not cls:
            return generic_new.__func__(c, params)  # type: ignore[attr-defined]
        try:
            key = (c, _arg_key(params) if is_data else tuple(map(_value_key, params)))  # type: ignore[arg-type]
            found = by_params.get(key)
        except TypeError:
            found = None
        if found is not None:
            return found
        attr = object.__new__(c)
        if is_data:
            Data.__init__(attr, params)  # type: ignore[arg-type]
        else:
            for f, p in zip(fields, params, strict=True):  # type: ignore[call-overload]
                object.__setattr__(attr, f, p)
            attr.__post_init__()
        return canonical(attr)

    generic_new = cls.__dict__.get("new") or super(cls, cls).new  # type: ignore[misc]
    cls.__new__ = __new__  # type: ignore[method-assign,assignment]
    __init__.__wrapped__ = init  # type: ignore[attr-defined]  # (the class's own)
    cls.__init__ = __init__  # type: ignore[method-assign]
    cls.new = classmethod(new)  # type: ignore[method-assign,assignment]
    return cls


def _arg_key(value: object) -> object:
    """A key for a constructor argument that is a value - a number, string, enum member,
    attribute (compared by value), or a list or tuple of them - with its type (lists as
    tuples). Anything else (a generator, a mutable object) raises TypeError: built afresh."""
    t = type(value)
    if t is list or t is tuple:
        return (t, tuple([_arg_key(v) for v in value]))  # type: ignore[attr-defined]
    if t in (int, str, bool) or isinstance(value, Enum):
        return (t, value)
    if t is float:
        return (t, value.hex())  # type: ignore[attr-defined]  # (0.0 and -0.0 differ)
    if isinstance(value, Attribute):
        return _value_key(value)
    raise TypeError(f"not a value: {t.__name__}")


def mark_canonical(attr: Attribute) -> None:
    """Mark `attr` as the one object of its value (a table's, as `uniqued` keeps): keys of
    attributes built from it name it by identity instead of walking its value (a tensor type
    inside a buffer or future type cost 20 µs per build). Whoever keys by it keeps it alive."""
    object.__setattr__(attr, _CANONICAL, True)


def _value_key(attr: Attribute) -> object:
    """A key for an attribute's value that tells apart what `==` merges but prints
    differently (`IntAttr(True) == IntAttr(1)`, `0.0 == -0.0`): the types of the attribute
    and of its data, all the way down."""
    if _CANONICAL in attr.__dict__:  # (one object per value: its identity is its value)
        return (type(attr), id(attr))
    if isinstance(attr, Data):
        data = attr.data
        if type(data) is tuple:
            return (type(attr), tuple([_arg_key(d) for d in data]))
        return (type(attr), _arg_key(data))
    if isinstance(attr, ParametrizedAttribute):
        return (type(attr), tuple([_value_key(p) for p in attr.parameters]))
    raise TypeError(f"not a value: {type(attr).__name__}")
