"""C++ for scalar bodies: each `arith`/`math` op of a fused body becomes one statement.

The statements reproduce the reference interpreter's numpy arithmetic: half-precision values
are stored as `__half`/`__nv_bfloat16` and every operation on them converts to float, computes
and rounds back (what numpy does for float16); integer arithmetic wraps; integer division
truncates with x / 0 = 0; float constants are written as exact hexadecimal literals.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import predicate_name


class EmitError(CcoptError):
    """An L3 construct the CUDA backend cannot emit: an error in the user's program, reported
    as such by `ccopt.build` and the CPU harness too."""


class OpEmitError(EmitError, OpError):
    """An EmitError at the op that could not be emitted (`file:line:col` of the op)."""


def ctype(t: Attribute) -> str:
    match t:
        case Float16Type():
            return "__half"
        case BFloat16Type():
            return "__nv_bfloat16"
        case Float32Type():
            return "float"
        case Float64Type():
            return "double"
        case IntegerType(width=w) if w.data == 1:
            return "bool"
        case IntegerType(width=w) if w.data == 32:
            return "int32_t"
        case IntegerType(width=w) if w.data == 64:
            return "int64_t"
    raise EmitError(f"no C type for {t}")


def is_half(t: Attribute) -> bool:
    return isinstance(t, Float16Type | BFloat16Type)


def literal(value: float | int, t: Attribute) -> str:
    """An exact C++ literal of type `t`."""
    if isinstance(t, IntegerType):
        if t.width.data == 1:
            return "true" if value else "false"
        return f"(({ctype(t)}){int(value)}LL)"
    v = float(value)
    if v != v:
        text = "NAN"
    elif v in (float("inf"), float("-inf")):
        text = "INFINITY" if v > 0 else "-INFINITY"
    else:
        text = v.hex()
    if isinstance(t, Float64Type):
        return f"((double){text})"
    if is_half(t):
        return f"{ctype(t)}((float){text})"
    return f"((float){text})"


def as_float(expr: str, t: Attribute) -> str:
    """The value as a float or double for arithmetic (half types widen to float)."""
    return f"((float){expr})" if is_half(t) else expr


def rounded(expr: str, t: Attribute) -> str:
    """A float/double arithmetic result stored back in `t`."""
    return f"{ctype(t)}((float)({expr}))" if is_half(t) else f"(({ctype(t)})({expr}))"


def binary_float(symbol: str) -> Callable[[list[str], list[Attribute], Attribute], str]:
    def emit(x: list[str], ts: list[Attribute], result: Attribute) -> str:
        return rounded(f"{as_float(x[0], ts[0])} {symbol} {as_float(x[1], ts[1])}", result)

    return emit


def call_float(fn_f32: str, fn_f64: str) -> Callable[[list[str], list[Attribute], Attribute], str]:
    def emit(x: list[str], ts: list[Attribute], result: Attribute) -> str:
        fn = fn_f64 if isinstance(ts[0], Float64Type) else fn_f32
        args = ", ".join(as_float(a, t) for a, t in zip(x, ts, strict=True))
        return rounded(f"{fn}({args})", result)

    return emit


def helper(name: str) -> Callable[[list[str], list[Attribute], Attribute], str]:
    def emit(x: list[str], ts: list[Attribute], result: Attribute) -> str:
        args = ", ".join(as_float(a, t) for a, t in zip(x, ts, strict=True))
        return rounded(f"ccopt_rt::{name}({args})", result)

    return emit


def cast(x: list[str], ts: list[Attribute], result: Attribute) -> str:
    return (
        rounded(as_float(x[0], ts[0]), result)
        if not isinstance(result, IntegerType)
        else f"(({ctype(result)}){as_float(x[0], ts[0])})"
    )


def float_to_int(x: list[str], ts: list[Attribute], result: Attribute) -> str:
    return f"ccopt_rt::float_to_int<{ctype(result)}>({as_float(x[0], ts[0])})"


def wrap(name: str) -> Callable[[list[str], list[Attribute], Attribute], str]:
    return lambda x, ts, result: f"ccopt_rt::{name}<{ctype(result)}>({x[0]}, {x[1]})"


CMPF = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
CMPI = {
    "eq": "==",
    "ne": "!=",
    "slt": "<",
    "sle": "<=",
    "sgt": ">",
    "sge": ">=",
    "ult": "<",
    "ule": "<=",
    "ugt": ">",
    "uge": ">=",
}

OPS: dict[type[Operation], Callable[[list[str], list[Attribute], Attribute], str]] = {
    arith.AddfOp: binary_float("+"),
    arith.SubfOp: binary_float("-"),
    arith.MulfOp: binary_float("*"),
    arith.DivfOp: binary_float("/"),
    arith.MaximumfOp: helper("maximum"),
    arith.MinimumfOp: helper("minimum"),
    arith.NegfOp: lambda x, ts, r: rounded(f"-{as_float(x[0], ts[0])}", r),
    arith.AddiOp: wrap("wrap_add"),
    arith.SubiOp: wrap("wrap_sub"),
    arith.MuliOp: wrap("wrap_mul"),
    arith.DivSIOp: wrap("div_int"),
    arith.MaxSIOp: lambda x, ts, r: f"({x[0]} > {x[1]} ? {x[0]} : {x[1]})",
    arith.MinSIOp: lambda x, ts, r: f"({x[0]} < {x[1]} ? {x[0]} : {x[1]})",
    arith.SelectOp: lambda x, ts, r: f"({x[0]} ? {x[1]} : {x[2]})",
    arith.ExtFOp: cast,
    arith.TruncFOp: cast,
    arith.SIToFPOp: cast,
    arith.UIToFPOp: cast,
    arith.ExtSIOp: cast,
    arith.ExtUIOp: cast,
    arith.TruncIOp: cast,
    arith.FPToSIOp: float_to_int,
    math.AbsFOp: call_float("fabsf", "fabs"),
    math.AbsIOp: lambda x, ts, r: (
        f"({x[0]} < 0 ? ccopt_rt::wrap_sub<{ctype(r)}>(0, {x[0]}) : {x[0]})"
    ),
    math.ExpOp: call_float("expf", "exp"),
    math.LogOp: call_float("logf", "log"),
    math.SqrtOp: call_float("sqrtf", "sqrt"),
    math.RsqrtOp: lambda x, ts, r: rounded(
        f"{'1.0' if isinstance(ts[0], Float64Type) else '1.0f'} / {'sqrt' if isinstance(ts[0], Float64Type) else 'sqrtf'}({as_float(x[0], ts[0])})",
        r,
    ),
    math.TanhOp: call_float("tanhf", "tanh"),
    math.PowFOp: call_float("powf", "pow"),
    math.IPowIOp: wrap("ipow"),
}


def body_code(block: Block, inputs: list[str], index: str) -> tuple[list[str], list[str]]:
    """Statements computing the body, and the expressions of the yielded values."""
    names: dict[SSAValue, str] = {block.args[0]: index}
    names.update(zip(block.args[1:], inputs, strict=True))
    lines: list[str] = []
    for n, op in enumerate(block.ops):
        if isinstance(op, dt.YieldOp):
            return lines, [names[v] for v in op.values]
        result = op.results[0]
        t = result.type
        name = f"v{n}"
        if isinstance(op, arith.ConstantOp):
            value = op.value
            assert isinstance(value, FloatAttr | IntegerAttr)
            expr = literal(value.value.data, t)
        elif isinstance(op, dt.UniformOp):
            expr = f"ccopt_rt::uniform({op.seed.value.data}ULL, {names[op.index]})"
        elif isinstance(op, arith.CmpfOp | arith.CmpiOp):
            symbol = (CMPF if isinstance(op, arith.CmpfOp) else CMPI)[predicate_name(op)]
            lhs, rhs = op.operands
            expr = f"({as_float(names[lhs], lhs.type)} {symbol} {as_float(names[rhs], rhs.type)})"
        elif type(op) in OPS:
            expr = OPS[type(op)]([names[v] for v in op.operands], [v.type for v in op.operands], t)
        else:
            raise EmitError(f"'{op.name}' has no CUDA form")
        lines.append(f"const {ctype(t)} {name} = {expr};")
        names[result] = name
    raise EmitError("a body without dtensor.yield")
