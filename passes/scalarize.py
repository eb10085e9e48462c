"""The per-element `arith`/`math` body of each elementwise dtensor op.

Fusion turns a group of elementwise ops into one region that computes one element; this module
says what each op computes for one element, in exactly the arithmetic the reference interpreter
uses for the unfused op (half-precision transcendental ops in f32, rounded once; dropout from
the element's global index), so fused and unfused programs agree bit for bit.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from functools import lru_cache

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType, is_float

HALF = (Float16Type, BFloat16Type)
CMPF = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
CMPI_SIGNED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
CMPI_BOOL = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def width(t: Attribute) -> int:
    match t:
        case Float16Type() | BFloat16Type():
            return 16
        case Float32Type():
            return 32
        case Float64Type():
            return 64
        case IntegerType():
            return t.width.data
    raise ValueError(f"no width for {t}")


def constant_attr(value: float, t: Attribute) -> IntegerAttr | FloatAttr:
    """The attribute of a scalar constant; bodies of repeated layers use the same few (an
    attribute is immutable, and building one verifies it). -0.0 and 0.0 are told apart."""
    return _constant_attr(type(value), value, pymath.copysign(1.0, value), t)


@lru_cache(maxsize=4096)
def _constant_attr(
    _kind: type, value: float, _sign: float, t: Attribute
) -> IntegerAttr | FloatAttr:
    if isinstance(t, IntegerType):
        return IntegerAttr(int(value), t)
    return FloatAttr(value, t)


class BodyBuilder:
    """Appends scalar ops to a body block; `index` is the element's global index."""

    def __init__(self, block: Block):
        self.block = block
        self.index = block.args[0]

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: float, t: Attribute) -> SSAValue:
        return self.add(arith.ConstantOp(constant_attr(value, t)))

    def convert(self, x: SSAValue, to: Attribute) -> SSAValue:
        """Element type conversion with the interpreter's (numpy's astype) semantics."""
        src = x.type
        if src == to:
            return x
        if is_float(src) and is_float(to):
            if isinstance(src, HALF) and isinstance(to, HALF):
                return self.add(arith.TruncFOp(self.add(arith.ExtFOp(x, f32)), to))
            op = arith.ExtFOp(x, to) if width(to) > width(src) else arith.TruncFOp(x, to)
            return self.add(op)
        if is_float(src):
            if to == i1:
                return self.add(arith.CmpfOp(x, self.const(0.0, src), "une"))
            return self.add(arith.FPToSIOp(x, to))
        if is_float(to):
            return self.add(arith.UIToFPOp(x, to) if src == i1 else arith.SIToFPOp(x, to))
        if to == i1:
            return self.add(arith.CmpiOp(x, self.const(0, src), "ne"))
        if src == i1:
            return self.add(arith.ExtUIOp(x, to))
        return self.add(arith.ExtSIOp(x, to) if width(to) > width(src) else arith.TruncIOp(x, to))

    def in_accumulation(self, x: Sequence[SSAValue], fn: Callable[..., SSAValue]) -> SSAValue:
        """Compute `fn` in f32 for half-precision operands and round the result once."""
        t = x[0].type
        if not isinstance(t, HALF):
            return fn(*x)
        return self.add(arith.TruncFOp(fn(*(self.convert(v, f32) for v in x)), t))

    def gelu(self, x: SSAValue) -> SSAValue:
        t = x.type
        cube = self.add(
            arith.MulfOp(
                self.add(arith.MulfOp(self.add(arith.MulfOp(self.const(0.044715, t), x)), x)), x
            )
        )
        inner = self.add(
            arith.MulfOp(
                self.const(pymath.sqrt(2.0 / pymath.pi), t), self.add(arith.AddfOp(x, cube))
            )
        )
        one_plus = self.add(arith.AddfOp(self.const(1.0, t), self.add(math.TanhOp(inner))))
        return self.add(arith.MulfOp(self.add(arith.MulfOp(self.const(0.5, t), x)), one_plus))


FLOAT_UNARY: dict[type, Callable[[BodyBuilder, SSAValue], SSAValue]] = {
    dt.ExpOp: lambda b, x: b.add(math.ExpOp(x)),
    dt.LogOp: lambda b, x: b.add(math.LogOp(x)),
    dt.SqrtOp: lambda b, x: b.add(math.SqrtOp(x)),
    dt.RsqrtOp: lambda b, x: b.add(math.RsqrtOp(x)),
    dt.TanhOp: lambda b, x: b.add(math.TanhOp(x)),
    dt.GeluOp: BodyBuilder.gelu,
}

FLOAT_BINARY: dict[type, type[Operation]] = {
    dt.AddOp: arith.AddfOp,
    dt.SubOp: arith.SubfOp,
    dt.MulOp: arith.MulfOp,
    dt.MaxOp: arith.MaximumfOp,
    dt.MinOp: arith.MinimumfOp,
}

INT_BINARY: dict[type, type[Operation]] = {
    dt.AddOp: arith.AddiOp,
    dt.SubOp: arith.SubiOp,
    dt.MulOp: arith.MuliOp,
    dt.DivOp: arith.DivSIOp,
    dt.MaxOp: arith.MaxSIOp,
    dt.MinOp: arith.MinSIOp,
    dt.PowOp: math.IPowIOp,
}


def emit(b: BodyBuilder, op: Operation, x: Sequence[SSAValue]) -> SSAValue:
    """Append the scalar computation of elementwise `op` on the element scalars `x`."""
    t = x[0].type if x else None
    floating = t is not None and is_float(t)
    match op:
        case dt.NegOp():
            return (
                b.add(arith.NegfOp(x[0])) if floating else b.add(arith.SubiOp(b.const(0, t), x[0]))
            )
        case dt.AbsOp():
            return b.add(math.AbsFOp(x[0]) if floating else math.AbsIOp(x[0]))
        case dt.ReluOp():
            zero = b.const(0, t)
            return b.add(arith.MaximumfOp(x[0], zero) if floating else arith.MaxSIOp(x[0], zero))
        case dt.ElementwiseUnaryOp():
            return b.in_accumulation(x, lambda v: FLOAT_UNARY[type(op)](b, v))
        case dt.DivOp() | dt.PowOp() if floating:
            kind = arith.DivfOp if isinstance(op, dt.DivOp) else math.PowFOp
            return b.in_accumulation(x, lambda u, v: b.add(kind(u, v)))
        case dt.ElementwiseBinaryOp():
            table = FLOAT_BINARY if floating else INT_BINARY
            return b.add(table[type(op)](x[0], x[1]))
        case dt.CmpOp():
            predicate = op.predicate.data.value
            if floating:
                return b.add(arith.CmpfOp(x[0], x[1], CMPF[predicate]))
            names = CMPI_BOOL if t == i1 else CMPI_SIGNED
            return b.add(arith.CmpiOp(x[0], x[1], names[predicate]))
        case dt.SelectOp():
            return b.add(arith.SelectOp(x[0], x[1], x[2]))
        case dt.ScaleOp():
            factor = op.factor.value.data
            if floating:
                return b.in_accumulation(
                    x, lambda v: b.add(arith.MulfOp(v, b.const(factor, v.type)))
                )
            wide = b.add(arith.SIToFPOp(x[0], f64))
            return b.add(arith.FPToSIOp(b.add(arith.MulfOp(wide, b.const(factor, f64))), t))
        case dt.CastOp():
            result = op.result.type
            assert isinstance(result, DTensorType)
            return b.convert(x[0], result.element_type)
        case dt.DropoutOp():
            prob = op.prob.value.data
            keep = b.add(
                arith.CmpfOp(
                    b.add(dt.UniformOp(b.index, op.seed.value.data)), b.const(prob, f32), "oge"
                )
            )
            kept = b.add(arith.MulfOp(x[0], b.const(1.0 / (1.0 - prob), t)))
            return b.add(arith.SelectOp(keep, kept, b.const(0.0, t)))
    raise ValueError(f"'{op.name}' has no scalar form")
