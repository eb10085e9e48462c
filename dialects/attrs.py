"""Shared builders of the small attributes that ops carry (stream numbers, dimensions, offsets,
constants).

xDSL builds an `IntegerAttr(3, i64)` in about 30 µs (it normalizes and verifies the value and
its type) and a `DenseArrayBase` in about 50 µs; lowering a model builds the same few thousand
times. Attributes are immutable, so equal ones are built once and shared by every op."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from functools import lru_cache

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    f64,
    i64,
)

__all__ = ["float_attr", "i64_array", "i64_attr", "int_attr"]

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
    """`DenseArrayBase.from_list(i64, values)`, shared."""
    return _i64_array(tuple(values))


@lru_cache(maxsize=_SIZE)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))
