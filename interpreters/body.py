"""Vectorized evaluation of fused scalar bodies: each `arith`/`math` op on whole numpy arrays.

xDSL's own arith interpreter works on Python scalars, one element at a time; a fused body runs
once per element of a tensor, so it is evaluated here on arrays - with the same numpy functions
the unfused dtensor ops use, so that fusion never changes a bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import predicate_name
from ccopt.interpreters.arithmetic import int_div, power
from ccopt.interpreters.distributed import InterpreterError, numpy_dtype
from ccopt.interpreters.philox import uniform

CMP: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "oeq": np.equal,
    "une": np.not_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "slt": np.less,
    "sle": np.less_equal,
    "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": np.less,
    "ule": np.less_equal,
    "ugt": np.greater,
    "uge": np.greater_equal,
}

ARRAY_OPS: dict[type[Operation], Callable[..., np.ndarray]] = {
    arith.AddfOp: np.add,
    arith.AddiOp: np.add,
    arith.SubfOp: np.subtract,
    arith.SubiOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.MuliOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.DivSIOp: int_div,
    arith.MaximumfOp: np.maximum,
    arith.MaxSIOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MinSIOp: np.minimum,
    arith.NegfOp: np.negative,
    arith.SelectOp: np.where,
    math.AbsFOp: np.abs,
    math.AbsIOp: np.abs,
    math.ExpOp: np.exp,
    math.LogOp: np.log,
    math.SqrtOp: np.sqrt,
    math.RsqrtOp: lambda x: 1 / np.sqrt(x),
    math.TanhOp: np.tanh,
    math.PowFOp: np.power,
    math.IPowIOp: power,
}

CONVERSIONS = (
    arith.ExtFOp,
    arith.TruncFOp,
    arith.FPToSIOp,
    arith.SIToFPOp,
    arith.UIToFPOp,
    arith.ExtSIOp,
    arith.ExtUIOp,
    arith.TruncIOp,
)


def constant(op: arith.ConstantOp) -> np.ndarray:
    value = op.value
    assert isinstance(value, FloatAttr | IntegerAttr)
    return np.asarray(value.value.data).astype(numpy_dtype(op.result.type))


def evaluate_body(
    block: Block, index: np.ndarray, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """The yielded arrays of a scalar body for arrays of elements (inputs broadcast together)."""
    values: dict[SSAValue, np.ndarray] = {block.args[0]: index}
    values.update(zip(block.args[1:], inputs, strict=True))
    for op in block.ops:
        if isinstance(op, dt.YieldOp):
            return [values[v] for v in op.values]
        args = [values[v] for v in op.operands]
        result_type = op.results[0].type
        if isinstance(op, arith.ConstantOp):
            out = constant(op)
        elif isinstance(op, dt.UniformOp):
            out = uniform(op.seed.value.data, args[0])
        elif isinstance(op, arith.CmpfOp | arith.CmpiOp):
            out = CMP[predicate_name(op)](args[0], args[1])
        elif isinstance(op, CONVERSIONS):
            out = args[0].astype(numpy_dtype(result_type))
        elif type(op) in ARRAY_OPS:
            out = ARRAY_OPS[type(op)](*args)
        else:
            raise InterpreterError(f"'{op.name}' cannot run in a fused body")
        values[op.results[0]] = np.asarray(out).astype(numpy_dtype(result_type), copy=False)
    raise InterpreterError("a fused body must end with dtensor.yield")
