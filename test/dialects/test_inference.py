"""Type and placement inference (`ccopt.dialects.inference`).

Each rule gets a table of legal signatures (operand types -> result type) and a table of rejected
ones (the `InferenceError` must name the operand at fault and, on a multi-axis mesh, the axis).
Types are written as `summary()` strings, `"8x16xf32 [S(0), R]"`, on mesh `@m`.

The property tests go further than the tables: they build random global arrays, distribute them
over a simulated mesh exactly as the placements say (split blocks, partial decompositions), run the
op on every rank's local block and check that the local results, recombined as the *inferred*
result placements say, equal the op applied to the global arrays. A wrong signature cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import f16, f32, f64, i1, i8, i32
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects import coll
from ccopt.dialects import inference as inf
from ccopt.dialects.dtensor_type import (
    DTensorType,
    P,
    PartialAttr,
    Placement,
    R,
    ReductionKind,
    ReplicatedAttr,
    S,
    SplitAttr,
    V,
    VaryingAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.ir import make_context
from ccopt.mesh import Mesh, block_range, local_slices

CTX = make_context()


def dt(spec: str, mesh: str = "m") -> DTensorType:
    """`"8x16xf32 [S(0), R]"` -> the type on `@mesh` (the format of `DTensorType.summary`)."""
    body, placements = spec.split(" [", 1)
    t = Parser(CTX, f"!dtensor.tensor<{body}, @{mesh}[{placements}>").parse_attribute()
    assert isinstance(t, DTensorType)
    return t


def rejects(call: Callable[[], object], message: str, axis: int | None = None) -> InferenceError:
    with pytest.raises(InferenceError) as info:
        call()
    err = info.value
    assert message in err.message, f"{message!r} not in {err.message!r}"
    assert err.axis == axis
    return err


# ============================================================================================
# elementwise
# ============================================================================================

# fmt: off
ELEMENTWISE_LEGAL = [
    # broadcasting of shapes
    ("add", ["4x1xf32 [R]", "1x8xf32 [R]"], "4x8xf32 [R]"),
    ("add", ["f32 [R]", "4x8xf32 [S(1)]"], "4x8xf32 [S(1)]"),
    # a bias of lower rank is not split along a dimension it does not have
    ("add", ["4x8x16xf32 [S(0)]", "16xf32 [R]"], "4x8x16xf32 [S(0)]"),
    ("add", ["16xf32 [R]", "4x8x16xf32 [S(1)]"], "4x8x16xf32 [S(1)]"),
    # ... and is split when it has the dimension
    ("add", ["4x8x16xf32 [S(2)]", "16xf32 [S(0)]"], "4x8x16xf32 [S(2)]"),
    ("add", ["4x8x16xf32 [S(0)]", "4x8x16xf32 [S(0)]"], "4x8x16xf32 [S(0)]"),
    ("add", ["4x8xf32 [S(1)]", "8xf32 [S(0)]"], "4x8xf32 [S(1)]"),
    # a replicated operand of size 1 along the split dimension broadcasts
    ("add", ["4x8xf32 [S(1)]", "4x1xf32 [R]"], "4x8xf32 [S(1)]"),
    ("mul", ["4x1x16xf32 [R]", "4x8x16xf32 [S(1)]"], "4x8x16xf32 [S(1)]"),
    # partials: linear ops keep P(sum)
    ("add", ["8xf32 [P(sum)]", "8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("sub", ["8xf32 [P(sum)]", "1xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("mul", ["8xf32 [P(sum)]", "8xf32 [R]"], "8xf32 [P(sum)]"),
    ("mul", ["8xf32 [R]", "8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("div", ["8xf32 [P(sum)]", "f32 [R]"], "8xf32 [P(sum)]"),
    ("neg", ["8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("scale", ["8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("dropout", ["8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    # max/min distribute over their own partial kind
    ("max", ["8xf32 [P(max)]", "8xf32 [R]"], "8xf32 [P(max)]"),
    ("max", ["8xf32 [R]", "8xf32 [P(max)]"], "8xf32 [P(max)]"),
    ("max", ["8xf32 [P(max)]", "8xf32 [P(max)]"], "8xf32 [P(max)]"),
    ("min", ["8xf32 [P(min)]", "8xf32 [R]"], "8xf32 [P(min)]"),
    # select picks elementwise
    ("select", ["8xi1 [R]", "8xf32 [P(sum)]", "8xf32 [P(sum)]"], "8xf32 [P(sum)]"),
    ("select", ["8xi1 [R]", "8xf32 [P(max)]", "f32 [P(max)]"], "8xf32 [P(max)]"),
    ("select", ["4x8xi1 [S(0)]", "4x8xf32 [S(0)]", "8xf32 [R]"], "4x8xf32 [S(0)]"),
    # unary ops pass S, R and V through
    ("exp", ["4x8xf32 [S(1)]"], "4x8xf32 [S(1)]"),
    ("relu", ["4x8xf32 [R]"], "4x8xf32 [R]"),
    ("tanh", ["4x8xf32 [V]"], "4x8xf32 [V]"),
    # varying (pipeline stages) combines with V and R only
    ("add", ["8xf32 [V]", "8xf32 [R]"], "8xf32 [V]"),
    ("add", ["8xf32 [V]", "8xf32 [V]"], "8xf32 [V]"),
    # multi-axis meshes: one signature per axis
    ("add", ["8x16xf32 [S(0), S(1)]", "16xf32 [R, S(0)]"], "8x16xf32 [S(0), S(1)]"),
    ("add", ["8x16xf32 [P(sum), S(0)]", "8x16xf32 [P(sum), S(0)]"], "8x16xf32 [P(sum), S(0)]"),
    ("mul", ["8xf32 [P(sum), R]", "8xf32 [R, P(sum)]"], "8xf32 [P(sum), P(sum)]"),
    ("add", ["8xf32 [S(0), S(0)]", "8xf32 [S(0), S(0)]"], "8xf32 [S(0), S(0)]"),
    ("add", ["8xf32 [V, S(0)]", "8xf32 [R, S(0)]"], "8xf32 [V, S(0)]"),
    ("max", ["8xf32 [P(max), R, S(0)]", "f32 [R, P(max), R]"], "8xf32 [P(max), P(max), S(0)]"),
]
# fmt: on


def _elementwise(op: str, specs: Sequence[str]) -> DTensorType:
    types = [dt(s) for s in specs]
    if op == "cmp":
        return inf.infer_elementwise(op, types, i1)
    if op == "select":
        return inf.infer_elementwise(op, types, types[1].element_type)
    return inf.infer_elementwise(op, types)


@pytest.mark.parametrize(("op", "operands", "expected"), ELEMENTWISE_LEGAL)
def test_elementwise_legal(op: str, operands: list[str], expected: str):
    assert _elementwise(op, operands).summary() == expected


def test_cmp_result_is_i1():
    got = inf.infer_elementwise("cmp", [dt("4x8xf32 [S(0)]"), dt("8xf32 [R]")], i1)
    assert got.summary() == "4x8xi1 [S(0)]"


def test_elementwise_keeps_mesh():
    got = inf.infer_elementwise("add", [dt("8xf32 [R]", "mesh1"), dt("8xf32 [R]", "mesh1")])
    assert got.mesh_name == "mesh1"


# fmt: off
ELEMENTWISE_REJECTED = [
    # a replicated operand that has the split dimension must be sliced first
    ("add", ["4x8x16xf32 [S(0)]", "4x8x16xf32 [R]"], "operand #1 is R but operand #0 is S(0)", 0),
    ("add", ["4x8x16xf32 [R]", "16xf32 [S(0)]"], "operand #0 is R but operand #1 is S(0)", 0),
    ("add", ["4x8xf32 [S(1)]", "8xf32 [R]"], "operand #1 is R but operand #0 is S(1)", 0),
    # two splits that disagree
    ("add", ["4x8xf32 [S(0)]", "4x8xf32 [S(1)]"], "operand #1 is split along result dimension 1 but operand #0 along result dimension 0", 0),
    # splitting a dimension the operand broadcasts
    ("add", ["4x1xf32 [S(1)]", "4x8xf32 [R]"], "operand #0 is S(1) along a dimension it broadcasts", 0),
    # partial meets non-partial
    ("add", ["8xf32 [P(sum)]", "8xf32 [R]"], "operand #1 is R", 0),
    ("add", ["8xf32 [R]", "8xf32 [P(sum)]"], "operand #0 is R", 0),
    ("sub", ["8xf32 [P(sum)]", "8xf32 [P(max)]"], "operand #1 is P(max) but another operand is P(sum)", 0),
    ("add", ["8xf32 [P(max)]", "8xf32 [P(max)]"], "'add' does not distribute over P(max)", 0),
    ("add", ["8xf32 [P(sum)]", "8xf32 [S(0)]"], "operand #0 is P(sum) but operand #1 is split", 0),
    ("mul", ["8xf32 [P(sum)]", "8xf32 [P(sum)]"], "operands #0 and #1 cannot both be partial", 0),
    ("mul", ["8xf32 [P(max)]", "8xf32 [R]"], "does not distribute over P(max) in operand #0", 0),
    ("div", ["8xf32 [R]", "8xf32 [P(sum)]"], "does not distribute over P(sum) in operand #1", 0),
    ("max", ["8xf32 [R]", "8xf32 [P(sum)]"], "does not distribute over P(sum) in operand #1", 0),
    ("min", ["8xf32 [P(max)]", "8xf32 [R]"], "does not distribute over P(max) in operand #0", 0),
    ("neg", ["8xf32 [P(max)]"], "'neg' does not distribute over P(max)", 0),
    # non-linear ops reject partials
    ("exp", ["8xf32 [P(sum)]"], "'exp' is not linear: operand #0 is P(sum)", 0),
    ("relu", ["8xf32 [P(max)]"], "'relu' is not linear: operand #0 is P(max)", 0),
    ("pow", ["8xf32 [R]", "8xf32 [P(sum)]"], "'pow' is not linear: operand #1 is P(sum)", 0),
    ("cmp", ["8xf32 [P(sum)]", "8xf32 [R]"], "'cmp' is not linear: operand #0 is P(sum)", 0),
    ("select", ["8xi1 [P(sum)]", "8xf32 [R]", "8xf32 [R]"], "the condition (operand #0) of 'select' cannot be P(sum)", 0),
    ("select", ["8xi1 [R]", "8xf32 [P(sum)]", "8xf32 [R]"], "operands #1 and #2 equally partial, got P(sum) and R", 0),
    # varying
    ("add", ["8xf32 [V]", "8xf32 [S(0)]"], "operand #1 is S(0) but another operand is V", 0),
    ("add", ["8xf32 [P(sum)]", "8xf32 [V]"], "operand #0 is P(sum) but another operand is V", 0),
    # shapes and meshes
    ("add", ["4x8xf32 [R]", "4x3xf32 [R]"], "operand #1 of shape 4x3 does not broadcast with shape 4x8", None),
    ("add", ["8xf32 [R]", "8xf32 [R, R]"], "operand #1 has 2 placements but operand #0 has 1", None),
    # the failing axis is reported
    ("add", ["8xf32 [S(0), P(sum)]", "8xf32 [S(0), R]"], "operand #1 is R", 1),
    ("add", ["8x4xf32 [R, R, S(0)]", "8x4xf32 [R, R, S(1)]"], "operand #1 is split along result dimension 1", 2),
]
# fmt: on


@pytest.mark.parametrize(("op", "operands", "message", "axis"), ELEMENTWISE_REJECTED)
def test_elementwise_rejected(op: str, operands: list[str], message: str, axis: int | None):
    rejects(lambda: _elementwise(op, operands), message, axis)


def test_elementwise_rejects_other_mesh():
    rejects(
        lambda: inf.infer_elementwise("add", [dt("8xf32 [R]"), dt("8xf32 [R]", "n")]),
        "operand #1 is on mesh @n but operand #0 is on @m",
    )


def test_error_located_by_axis_name():
    err = rejects(
        lambda: _elementwise("add", ["8xf32 [S(0), P(sum)]", "8xf32 [S(0), R]"]), "operand #1", 1
    )
    assert err.located(["dp", "tp"]).startswith("on mesh axis 'tp': ")
    assert err.located(None).startswith("on mesh axis #1: ")
    assert InferenceError("x").located(["dp"]) == "x"


def test_partial_rules_table():
    """The linear ops: every other elementwise op rejects partial operands. ("convert" is the
    float-to-float rounding of fused bodies, which scale and dropout of half types use.)"""
    assert set(inf.PARTIAL_RULES) == {
        "add", "sub", "mul", "div", "max", "min", "select", "neg", "scale", "dropout", "convert"
    }  # fmt: skip


def test_check_same_element_type():
    assert inf.check_same_element_type([dt("8xf32 [R]"), dt("f32 [R]")]) == f32
    rejects(
        lambda: inf.check_same_element_type([dt("8xf32 [R]"), dt("8xf32 [R]"), dt("8xf16 [R]")]),
        "operand #2 has element type f16 but operand #0 has f32",
    )
    rejects(
        lambda: inf.check_same_element_type([dt("8xf32 [R]"), dt("8xf16 [R]")], 1),
        "operand #2 has element type f16 but operand #1 has f32",
    )


def test_require_float_and_numeric():
    inf.require_float(dt("8xbf16 [R]"), "exp")
    rejects(lambda: inf.require_float(dt("8xi32 [R]"), "exp"), "operand #0 is i32")
    inf.require_numeric(dt("8xi32 [R]"), "add")
    rejects(lambda: inf.require_numeric(dt("8xi1 [R]"), "add", 1), "not defined on i1 operand #1")


# ============================================================================================
# matmul
# ============================================================================================

# fmt: off
MATMUL_LEGAL = [
    # lhs, rhs, transpose_lhs, transpose_rhs, result
    ("8x16xf32 [S(0)]", "16x32xf32 [R]", False, False, "8x32xf32 [S(0)]"),  # data parallel
    ("8x16xf32 [R]", "16x32xf32 [S(1)]", False, False, "8x32xf32 [S(1)]"),  # column parallel
    ("8x16xf32 [S(1)]", "16x32xf32 [S(0)]", False, False, "8x32xf32 [P(sum)]"),  # row parallel
    ("8x16xf32 [P(sum)]", "16x32xf32 [R]", False, False, "8x32xf32 [P(sum)]"),
    ("8x16xf32 [R]", "16x32xf32 [P(sum)]", False, False, "8x32xf32 [P(sum)]"),
    ("8x16xf32 [R]", "16x32xf32 [R]", False, False, "8x32xf32 [R]"),
    ("8x16xf32 [V]", "16x32xf32 [R]", False, False, "8x32xf32 [V]"),
    ("8x16xf32 [R]", "16x32xf32 [V]", False, False, "8x32xf32 [V]"),
    ("8x16xf32 [V]", "16x32xf32 [V]", False, False, "8x32xf32 [V]"),
    ("8x16xi32 [S(0)]", "16x32xi32 [R]", False, False, "8x32xi32 [S(0)]"),
    # transposed rhs [n, k]
    ("8x16xf32 [R]", "32x16xf32 [S(0)]", False, True, "8x32xf32 [S(1)]"),
    ("8x16xf32 [S(1)]", "32x16xf32 [S(1)]", False, True, "8x32xf32 [P(sum)]"),
    ("8x16xf32 [S(0)]", "32x16xf32 [R]", False, True, "8x32xf32 [S(0)]"),
    # transposed lhs [k, m]
    ("16x8xf32 [S(1)]", "16x32xf32 [R]", True, False, "8x32xf32 [S(0)]"),
    ("16x8xf32 [S(0)]", "16x32xf32 [S(0)]", True, False, "8x32xf32 [P(sum)]"),
    ("16x8xf32 [S(0)]", "32x16xf32 [S(1)]", True, True, "8x32xf32 [P(sum)]"),
    ("16x8xf32 [R]", "32x16xf32 [S(0)]", True, True, "8x32xf32 [S(1)]"),
    # batched
    ("4x8x16xf32 [S(0)]", "4x16x32xf32 [S(0)]", False, False, "4x8x32xf32 [S(0)]"),
    ("4x8x16xf32 [S(1)]", "4x16x32xf32 [R]", False, False, "4x8x32xf32 [S(1)]"),
    ("4x8x16xf32 [R]", "4x16x32xf32 [S(2)]", False, False, "4x8x32xf32 [S(2)]"),
    ("4x8x16xf32 [S(2)]", "4x16x32xf32 [S(1)]", False, False, "4x8x32xf32 [P(sum)]"),
    ("2x4x16x8xf32 [S(1)]", "2x4x32x16xf32 [S(1)]", True, True, "2x4x8x32xf32 [S(1)]"),
    ("2x4x16x8xf32 [S(3)]", "2x4x16x32xf32 [R]", True, False, "2x4x8x32xf32 [S(2)]"),
    # rank-2 rhs broadcasts over the batch dimensions
    ("4x8x16xf32 [S(0)]", "16x32xf32 [R]", False, False, "4x8x32xf32 [S(0)]"),
    ("4x8x16xf32 [S(1)]", "16x32xf32 [R]", False, False, "4x8x32xf32 [S(1)]"),
    ("4x8x16xf32 [R]", "16x32xf32 [S(1)]", False, False, "4x8x32xf32 [S(2)]"),
    ("4x8x16xf32 [S(2)]", "16x32xf32 [S(0)]", False, False, "4x8x32xf32 [P(sum)]"),
    ("4x8x16xf32 [R]", "32x16xf32 [S(0)]", False, True, "4x8x32xf32 [S(2)]"),
    # multi-axis: Megatron MLP with data parallelism; 2-D tensor parallelism
    ("8x16xf32 [S(0), R]", "16x32xf32 [R, S(1)]", False, False, "8x32xf32 [S(0), S(1)]"),
    ("8x32xf32 [S(0), S(1)]", "32x16xf32 [R, S(0)]", False, False, "8x16xf32 [S(0), P(sum)]"),
    ("8x16xf32 [S(1), S(1)]", "16x32xf32 [S(0), S(0)]", False, False, "8x32xf32 [P(sum), P(sum)]"),
    ("8x16xf32 [S(0), S(1)]", "16x32xf32 [S(1), R]", False, False, None),  # rejected on axis 0
    ("4x8x16xf32 [V, S(0)]", "16x32xf32 [R, R]", False, False, "4x8x32xf32 [V, S(0)]"),
]
# fmt: on


@pytest.mark.parametrize(("lhs", "rhs", "tl", "tr", "expected"), MATMUL_LEGAL)
def test_matmul_legal(lhs: str, rhs: str, tl: bool, tr: bool, expected: str | None):
    if expected is None:
        rejects(lambda: inf.infer_matmul(dt(lhs), dt(rhs), tl, tr), "no signature", 0)
        return
    assert inf.infer_matmul(dt(lhs), dt(rhs), tl, tr).summary() == expected


# fmt: off
MATMUL_REJECTED = [
    # lhs, rhs, transpose_lhs, transpose_rhs, message, axis
    ("8x16xf32 [S(0)]", "16x32xf32 [S(0)]", False, False, "no signature for operand #0 S(0) x operand #1 S(0)", 0),
    ("8x16xf32 [S(1)]", "16x32xf32 [R]", False, False, "no signature for operand #0 S(1) x operand #1 R", 0),
    ("8x16xf32 [R]", "16x32xf32 [S(0)]", False, False, "operand #0 R x operand #1 S(0)", 0),
    ("8x16xf32 [S(0)]", "16x32xf32 [S(1)]", False, False, "operand #0 S(0) x operand #1 S(1)", 0),
    ("8x16xf32 [P(sum)]", "16x32xf32 [P(sum)]", False, False, "operand #0 P(sum) x operand #1 P(sum)", 0),
    ("8x16xf32 [P(max)]", "16x32xf32 [R]", False, False, "operand #0 P(max) x operand #1 R", 0),
    ("8x16xf32 [P(sum)]", "16x32xf32 [S(1)]", False, False, "operand #0 P(sum) x operand #1 S(1)", 0),
    ("8x16xf32 [V]", "16x32xf32 [S(0)]", False, False, "operand #0 V x operand #1 S(0)", 0),
    ("8x16xf32 [V]", "16x32xf32 [P(sum)]", False, False, "operand #0 V x operand #1 P(sum)", 0),
    # transposes move the contraction dimension
    ("8x16xf32 [S(1)]", "32x16xf32 [S(0)]", False, True, "operand #0 S(1) x operand #1 S(0)", 0),
    ("16x8xf32 [S(0)]", "16x32xf32 [R]", True, False, "operand #0 S(0) x operand #1 R", 0),
    # batch dimensions
    ("4x8x16xf32 [S(0)]", "4x16x32xf32 [R]", False, False, "operand #0 S(0) x operand #1 R", 0),
    ("4x8x16xf32 [S(0)]", "4x16x32xf32 [S(1)]", False, False, "operand #0 S(0) x operand #1 S(1)", 0),
    ("4x8x16xf32 [R]", "4x16x32xf32 [S(0)]", False, False, "operand #0 R x operand #1 S(0)", 0),
    # a rank-2 rhs has no batch dimension: its S(0) is the contraction dim, not the batch
    ("4x8x16xf32 [S(0)]", "16x32xf32 [S(0)]", False, False, "operand #0 S(0) x operand #1 S(0)", 0),
    ("4x8x16xf32 [S(1)]", "16x32xf32 [S(1)]", False, False, "operand #0 S(1) x operand #1 S(1)", 0),
    # the failing axis is reported
    ("8x16xf32 [R, S(1)]", "16x32xf32 [R, R]", False, False, "operand #0 S(1) x operand #1 R", 1),
    # shapes and element types
    ("8x16xf32 [R]", "17x32xf32 [R]", False, False, "contraction sizes differ: operand #0 has 16 (dim 1), operand #1 has 17 (dim 0)", None),
    ("8x16xf32 [R]", "16x32xf32 [R]", True, False, "contraction sizes differ: operand #0 has 8 (dim 0), operand #1 has 16 (dim 0)", None),
    ("4x8x16xf32 [R]", "3x16x32xf32 [R]", False, False, "operand #1 has batch dimensions 3 but operand #0 has 4", None),
    ("8x16xf32 [R]", "4x16x32xf32 [R]", False, False, "operand #1 has batch dimensions 4 but operand #0 has", None),
    ("16xf32 [R]", "16x32xf32 [R]", False, False, "matmul needs operands of rank >= 2, got 16 and 16x32", None),
    ("8x16xf32 [R]", "16x32xf16 [R]", False, False, "operand #1 has element type f16 but operand #0 has f32", None),
    ("8x16xi1 [R]", "16x32xi1 [R]", False, False, "matmul is not defined on i1 operand #0", None),
    ("8x16xf32 [R]", "16x32xf32 [R, R]", False, False, "operand #1 has 2 placements but operand #0 has 1", None),
]
# fmt: on


@pytest.mark.parametrize(("lhs", "rhs", "tl", "tr", "message", "axis"), MATMUL_REJECTED)
def test_matmul_rejected(lhs, rhs, tl, tr, message, axis):
    err = rejects(lambda: inf.infer_matmul(dt(lhs), dt(rhs), tl, tr), message, axis)
    if "no signature" in message or " x operand #1 " in message:
        assert "legal: " in err.message  # the message lists the signatures that exist


def test_matmul_rejects_other_mesh():
    rejects(
        lambda: inf.infer_matmul(dt("8x16xf32 [R]"), dt("16x8xf32 [R]", "n"), False, False),
        "operand #1 is on mesh @n",
    )


# ============================================================================================
# reductions and normalizations
# ============================================================================================

# fmt: off
REDUCE_LEGAL = [
    # input, kind, dims, keepdim, result
    ("8x16xf32 [S(0)]", "sum", [0], False, "16xf32 [P(sum)]"),
    ("8x16xf32 [S(0)]", "sum", [0], True, "1x16xf32 [P(sum)]"),
    ("8x16xf32 [S(0)]", "sum", [1], False, "8xf32 [S(0)]"),
    ("8x16xf32 [S(1)]", "sum", [0], False, "16xf32 [S(0)]"),  # the split dim moves down
    ("8x16xf32 [S(1)]", "sum", [0], True, "1x16xf32 [S(1)]"),
    ("8x16xf32 [S(1)]", "sum", [-1], False, "8xf32 [P(sum)]"),
    ("8x16xf32 [S(1)]", "sum", [0, 1], False, "f32 [P(sum)]"),
    ("8x16xf32 [S(1)]", "sum", [1, 0], True, "1x1xf32 [P(sum)]"),
    ("8x16xf32 [S(0)]", "mean", [0], False, "16xf32 [P(sum)]"),  # mean divides by global count
    ("8x16xf32 [S(0)]", "max", [0], False, "16xf32 [P(max)]"),
    ("8x16xf32 [S(0)]", "min", [0], False, "16xf32 [P(min)]"),
    ("8x16xf32 [S(0)]", "prod", [0], False, "16xf32 [P(prod)]"),
    ("8x16xf32 [S(0)]", "max", [1], False, "8xf32 [S(0)]"),
    ("2x3x4xf32 [S(2)]", "sum", [0, 1], False, "4xf32 [S(0)]"),
    # partial inputs of the same kind stay partial
    ("8x16xf32 [P(sum)]", "sum", [1], False, "8xf32 [P(sum)]"),
    ("8x16xf32 [P(sum)]", "mean", [0, 1], False, "f32 [P(sum)]"),
    ("8x16xf32 [P(max)]", "max", [1], False, "8xf32 [P(max)]"),
    ("8x16xf32 [P(min)]", "min", [1], True, "8x1xf32 [P(min)]"),
    ("8x16xf32 [P(prod)]", "prod", [0], False, "16xf32 [P(prod)]"),
    ("8x16xf32 [R]", "sum", [0], False, "16xf32 [R]"),
    ("8x16xf32 [V]", "max", [0], False, "16xf32 [V]"),
    ("8x16xf32 [R]", "sum", [], False, "8x16xf32 [R]"),
    ("f32 [R]", "sum", [], False, "f32 [R]"),
    ("8xi1 [S(0)]", "max", [0], False, "i1 [P(max)]"),  # max/min are defined on i1
    ("8xi32 [S(0)]", "sum", [0], False, "i32 [P(sum)]"),
    # multi-axis
    ("8x16xf32 [S(0), S(1)]", "sum", [1], False, "8xf32 [S(0), P(sum)]"),
    ("8x16xf32 [S(0), S(0)]", "sum", [0], False, "16xf32 [P(sum), P(sum)]"),
    ("8x16xf32 [S(1), P(sum)]", "sum", [1], False, "8xf32 [P(sum), P(sum)]"),
    ("8x16xf32 [S(1), V, R]", "max", [0], True, "1x16xf32 [S(1), V, R]"),
]
# fmt: on


@pytest.mark.parametrize(("t", "kind", "dims", "keepdim", "expected"), REDUCE_LEGAL)
def test_reduce_legal(t: str, kind: str, dims: list[int], keepdim: bool, expected: str):
    assert inf.infer_reduce(dt(t), kind, dims, keepdim).summary() == expected


# fmt: off
REDUCE_REJECTED = [
    ("8x16xf32 [P(max)]", "sum", [0], "reduce sum does not distribute over P(max)", 0),
    ("8x16xf32 [P(sum)]", "max", [0], "reduce max does not distribute over P(sum)", 0),
    ("8x16xf32 [P(sum)]", "prod", [0], "reduce prod does not distribute over P(sum)", 0),
    ("8x16xf32 [S(0), P(max)]", "sum", [0], "reduce sum does not distribute over P(max)", 1),
    ("8x16xf32 [R]", "sum", [2], "reduce sum: dimension 2 is out of range for rank 2", None),
    ("8x16xf32 [R]", "sum", [-3], "reduce sum: dimension -3 is out of range for rank 2", None),
    ("8x16xf32 [R]", "sum", [1, -1], "reduce sum: dimension -1 is listed twice", None),
    ("f32 [R]", "sum", [0], "out of range for rank 0", None),
    ("8xi1 [R]", "sum", [0], "reduce sum is not defined on i1 operand #0", None),
    ("8xi1 [R]", "mean", [0], "reduce mean is not defined on i1 operand #0", None),
]
# fmt: on


@pytest.mark.parametrize(("t", "kind", "dims", "message", "axis"), REDUCE_REJECTED)
def test_reduce_rejected(t, kind, dims, message, axis):
    rejects(lambda: inf.infer_reduce(dt(t), kind, dims, False), message, axis)


def test_norm():
    assert inf.infer_norm(dt("8x16xf32 [R]")).summary() == "f32 [R]"
    assert inf.infer_norm(dt("8x16xbf16 [R, V]")).summary() == "bf16 [R, V]"
    rejects(lambda: inf.infer_norm(dt("8x16xf32 [S(1)]")), "split along dimension 1", 0)
    rejects(lambda: inf.infer_norm(dt("8x16xf32 [R, S(0)]")), "cross-rank reduction", 1)
    rejects(lambda: inf.infer_norm(dt("8x16xf32 [P(sum)]")), "operand #0 is P(sum)", 0)
    rejects(lambda: inf.infer_norm(dt("8x16xi32 [R]")), "operand #0 is i32")


# fmt: off
SOFTMAX = [
    ("4x8xf32 [S(0)]", 1, "4x8xf32 [S(0)]"),
    ("4x8xf32 [S(0)]", -1, "4x8xf32 [S(0)]"),
    ("4x8xf32 [S(1), V]", 0, "4x8xf32 [S(1), V]"),
    ("2x4x8xf16 [S(0), S(1)]", 2, "2x4x8xf16 [S(0), S(1)]"),
    ("4x8xf32 [S(1)]", 1, ("dimension 1, which operand #0 splits; all-gather it first", 0)),
    ("4x8xf32 [R, S(1)]", -1, ("dimension 1, which operand #0 splits", 1)),
    ("4x8xf32 [P(sum)]", 1, ("softmax is not linear: operand #0 is P(sum)", 0)),
    ("4x8xi32 [R]", 1, ("softmax needs a floating-point operand, operand #0 is i32", None)),
    ("4x8xf32 [R]", 2, ("softmax: dimension 2 is out of range for rank 2", None)),
]
# fmt: on


@pytest.mark.parametrize(("t", "dim", "expected"), SOFTMAX)
def test_softmax(t: str, dim: int, expected):
    if isinstance(expected, str):
        assert inf.infer_softmax(dt(t), dim).summary() == expected
    else:
        rejects(lambda: inf.infer_softmax(dt(t), dim), *expected)


# fmt: off
LAYERNORM = [
    ("4x8x16xf32 [S(0)]", ["16xf32 [R]", "16xf32 [R]"], "4x8x16xf32 [S(0)]"),
    ("4x8x16xf32 [S(1)]", [], "4x8x16xf32 [S(1)]"),
    ("4x8x16xf32 [S(0), V]", ["16xf32 [R, V]"], "4x8x16xf32 [S(0), V]"),
    ("16xbf16 [R]", ["16xbf16 [R]"], "16xbf16 [R]"),
    ("4x16xf32 [S(1)]", [], ("layernorm works along dimension 1, which operand #0 splits", 0)),
    ("4x16xf32 [P(sum)]", [], ("layernorm is not linear: operand #0 is P(sum)", 0)),
    ("4x16xf32 [S(0)]", ["16xf32 [S(0)]"], ("operand #1 must be R, got S(0)", 0)),
    ("4x16xf32 [R, S(0)]", ["16xf32 [R, R]", "16xf32 [R, P(sum)]"], ("operand #2 must be R, got P(sum)", 1)),
    ("4x16xf32 [R]", ["16xf32 [V]"], ("operand #1 must be R, got V", 0)),
    ("4x16xf32 [R]", ["16xf32 [R]", "8xf32 [R]"], ("operand #2 must have shape 16, got 8", None)),
    ("4x16xf32 [R]", ["4x16xf32 [R]"], ("operand #1 must have shape 16, got 4x16", None)),
    ("4x16xf32 [R]", ["16xf32 [R]", "16xf16 [R]"], ("operand #2 has element type f16 but operand #0 has f32", None)),
    ("4x16xf32 [R]", ["16xf32 [R, R]"], ("operand #1 has 2 placements but operand #0 has 1", None)),
    ("4x16xi32 [R]", [], ("layernorm needs a floating-point operand, operand #0 is i32", None)),
    ("f32 [R]", [], ("layernorm needs an operand of rank >= 1", None)),
]
# fmt: on


@pytest.mark.parametrize(("x", "params", "expected"), LAYERNORM)
def test_layernorm(x: str, params: list[str], expected):
    call = lambda: inf.infer_layernorm(dt(x), [dt(p) for p in params])  # noqa: E731
    if isinstance(expected, str):
        assert call().summary() == expected
    else:
        rejects(call, *expected)


def test_layernorm_params_on_other_mesh():
    rejects(
        lambda: inf.infer_layernorm(dt("4x16xf32 [R]"), [dt("16xf32 [R]", "n")]),
        "operand #1 is on mesh @n",
    )


# ============================================================================================
# data movement
# ============================================================================================

# fmt: off
SLICE = [
    ("8x16xf32 [S(0)]", [0, 4], [8, 8], "8x8xf32 [S(0)]"),
    ("8x16xf32 [R]", [2, 4], [3, 8], "3x8xf32 [R]"),
    ("8x16xf32 [P(sum), V]", [2, 0], [0, 16], "0x16xf32 [P(sum), V]"),
    ("8x16xf32 [S(1), S(0)]", [0, 0], [8, 16], "8x16xf32 [S(1), S(0)]"),
    ("f32 [R]", [], [], "f32 [R]"),
    ("8x16xf32 [S(0)]", [1, 0], [7, 16], ("slice cuts dimension 0, which operand #0 splits", 0)),
    ("8x16xf32 [R, S(1)]", [0, 0], [8, 15], ("slice cuts dimension 1, which operand #0 splits", 1)),
    ("8x16xf32 [R]", [0, 10], [8, 8], ("slice [10, 18) is out of bounds for dimension 1 of size 16", None)),
    ("8x16xf32 [R]", [-1, 0], [2, 16], ("slice [-1, 1) is out of bounds for dimension 0 of size 8", None)),
    ("8x16xf32 [R]", [0, 4], [8, -1], ("out of bounds for dimension 1", None)),
    ("8x16xf32 [R]", [0], [8], ("slice needs 2 offsets and sizes, got 1 and 1", None)),
    ("8x16xf32 [R]", [0, 0], [8, 16, 1], ("slice needs 2 offsets and sizes, got 2 and 3", None)),
]
# fmt: on


@pytest.mark.parametrize(("t", "offsets", "sizes", "expected"), SLICE)
def test_slice(t: str, offsets, sizes, expected):
    if isinstance(expected, str):
        assert inf.infer_slice(dt(t), offsets, sizes).summary() == expected
    else:
        rejects(lambda: inf.infer_slice(dt(t), offsets, sizes), *expected)


# fmt: off
CONCAT = [
    (["4x8xf32 [S(1)]", "2x8xf32 [S(1)]"], 0, "6x8xf32 [S(1)]"),
    (["4x8xf32 [S(1)]", "2x8xf32 [S(1)]"], -2, "6x8xf32 [S(1)]"),
    (["4x8xf32 [P(sum)]", "4x1xf32 [P(sum)]", "4x3xf32 [P(sum)]"], 1, "4x12xf32 [P(sum)]"),
    (["4x8xf32 [R, V]"], 1, "4x8xf32 [R, V]"),
    (["4x8xf32 [S(0)]", "4x8xf32 [S(0)]"], 0, ("concat along dimension 0, which the operands split", 0)),
    (["4x8xf32 [R, S(1)]", "4x8xf32 [R, S(1)]"], -1, ("concat along dimension 1, which the operands split", 1)),
    (["4x8xf32 [R]", "4x8xf32 [S(0)]"], 1, ("operand #1 is [S(0)] but operand #0 is [R]", None)),
    (["4x8xf32 [R]", "4x8xf32 [R]", "4x7xf32 [R]"], 0, ("operand #2 of shape 4x7 does not concatenate with 4x8 along dimension 0", None)),
    (["4x8xf32 [R]", "4x8x1xf32 [R]"], 0, ("operand #1 of shape 4x8x1 does not concatenate", None)),
    (["4x8xf32 [R]", "4x8xf16 [R]"], 0, ("operand #1 has element type f16 but operand #0 has f32", None)),
    (["4x8xf32 [R]", "4x8xf32 [R]"], 2, ("concat: dimension 2 is out of range for rank 2", None)),
    (["f32 [R]"], 0, ("concat: dimension 0 is out of range for rank 0", None)),
]
# fmt: on


@pytest.mark.parametrize(("types", "dim", "expected"), CONCAT)
def test_concat(types: list[str], dim: int, expected):
    call = lambda: inf.infer_concat([dt(t) for t in types], dim)  # noqa: E731
    if isinstance(expected, str):
        assert call().summary() == expected
    else:
        rejects(call, *expected)


def test_concat_other_mesh():
    rejects(
        lambda: inf.infer_concat([dt("4xf32 [R]"), dt("4xf32 [R]", "n")], 0),
        "operand #1 is on mesh @n",
    )


def test_concat_of_nothing():
    rejects(lambda: inf.infer_concat([], 0), "")


# fmt: off
TRANSPOSE = [
    ("4x8x16xf32 [S(0), S(2)]", [2, 0, 1], "16x4x8xf32 [S(1), S(0)]"),
    ("4x8xf32 [S(1)]", [1, 0], "8x4xf32 [S(0)]"),
    ("4x8xf32 [P(max), V, R]", [1, 0], "8x4xf32 [P(max), V, R]"),
    ("4x8x16xf32 [S(1), S(1)]", [0, 1, 2], "4x8x16xf32 [S(1), S(1)]"),
    ("f32 [R]", [], "f32 [R]"),
    ("4x8xf32 [R]", [0, 0], ("permutation [0, 0] is not a permutation of 2 dimensions", None)),
    ("4x8xf32 [R]", [0, 1, 2], ("permutation [0, 1, 2] is not a permutation of 2 dimensions", None)),
    ("4x8xf32 [R]", [1, 2], ("is not a permutation of 2 dimensions", None)),
]
# fmt: on


@pytest.mark.parametrize(("t", "perm", "expected"), TRANSPOSE)
def test_transpose(t: str, perm: list[int], expected):
    if isinstance(expected, str):
        assert inf.infer_transpose(dt(t), perm).summary() == expected
    else:
        rejects(lambda: inf.infer_transpose(dt(t), perm), *expected)


# fmt: off
RESHAPE = [
    ("8x16xf32 [S(0)]", [8, 4, 4], "8x4x4xf32 [S(0)]"),
    ("8x16xf32 [S(1)]", [2, 4, 16], "2x4x16xf32 [S(2)]"),
    ("2x3x4xf32 [S(1)]", [2, 3, 2, 2], "2x3x2x2xf32 [S(1)]"),
    ("2x3x4xf32 [S(2)]", [6, 4], "6x4xf32 [S(1)]"),
    ("4x1xf32 [S(0)]", [1, 4], "1x4xf32 [S(1)]"),
    ("8x16xf32 [S(0), S(1)]", [8, 16, 1], "8x16x1xf32 [S(0), S(1)]"),
    ("8x16xf32 [R]", [128], "128xf32 [R]"),
    ("8x16xf32 [P(sum), V]", [4, 32], "4x32xf32 [P(sum), V]"),
    ("f32 [R]", [1, 1], "1x1xf32 [R]"),
    ("2x3x4xf32 [S(1)]", [6, 4], ("reshape to 6x4 breaks dimension 1, which operand #0 splits", 0)),
    ("8x16xf32 [S(0), S(1)]", [128], ("breaks dimension 0, which operand #0 splits", 0)),
    ("8x16xf32 [R, S(1)]", [16, 8], ("breaks dimension 1, which operand #0 splits", 1)),
    ("8x16xf32 [R]", [8, 15], ("reshape from 8x16 to 8x15 changes the element count", None)),
]
# fmt: on

# Given the mesh's axis sizes, a split dimension may be factored or merged as the leading
# dimension of its group when its leading size divides by the ranks splitting it (attention heads).
# fmt: off
RESHAPE_ON_MESH = [
    ("2x3x16xf32 [R, S(2)]", [2, 4], [2, 3, 4, 4], "2x3x4x4xf32 [R, S(2)]"),
    ("2x3x4x4xf32 [S(0), S(2)]", [2, 4], [2, 3, 16], "2x3x16xf32 [S(0), S(2)]"),
    ("6x16xf32 [S(0), S(0)]", [2, 3], [3, 2, 16], ("breaks dimension 0, which operand #0 splits", 0)),
    ("12x16xf32 [S(0), S(0)]", [2, 3], [6, 2, 16], "6x2x16xf32 [S(0), S(0)]"),
    ("2x3x16xf32 [R, S(2)]", [2, 4], [2, 3, 2, 8], ("breaks dimension 2, which operand #0 splits", 1)),
    ("2x3x2x8xf32 [R, S(2)]", [2, 4], [2, 3, 16], ("breaks dimension 2, which operand #0 splits", 1)),
    ("4x6xf32 [S(1)]", [3], [4, 3, 2], "4x3x2xf32 [S(1)]"),
    ("4x6xf32 [S(1)]", [3], [4, 2, 3], ("breaks dimension 1, which operand #0 splits", 0)),
    # a size-1 dimension before the heads holds no split (seq 1 on a size-1 axis chose it)
    ("4x1x48xf32 [S(2)]", [1], [4, 1, 4, 12], "4x1x4x12xf32 [S(2)]"),
    ("4x1x48xf32 [S(2)]", [2], [4, 1, 4, 12], "4x1x4x12xf32 [S(2)]"),
]
# fmt: on


@pytest.mark.parametrize(("t", "sizes", "shape", "expected"), RESHAPE_ON_MESH)
def test_reshape_on_a_mesh(t: str, sizes: list[int], shape: list[int], expected):
    if isinstance(expected, str):
        assert inf.infer_reshape(dt(t), shape, sizes).summary() == expected
    else:
        rejects(lambda: inf.infer_reshape(dt(t), shape, sizes), *expected)


@pytest.mark.parametrize(("t", "shape", "expected"), RESHAPE)
def test_reshape(t: str, shape: list[int], expected):
    if isinstance(expected, str):
        assert inf.infer_reshape(dt(t), shape).summary() == expected
    else:
        rejects(lambda: inf.infer_reshape(dt(t), shape), *expected)


def test_reshape_to_negative_shape():
    rejects(lambda: inf.infer_reshape(dt("16xf32 [R]"), [-2, -8]), "")


def test_cast():
    assert inf.infer_cast(dt("8xf32 [S(0), R]"), f16).summary() == "8xf16 [S(0), R]"
    assert inf.infer_cast(dt("8xf32 [V]"), i32).summary() == "8xi32 [V]"
    rejects(
        lambda: inf.infer_cast(dt("8xf32 [R, P(sum)]"), f16),
        "cast rounds, so it does not distribute over P(sum)",
        1,
    )


def test_cast_to_unsupported_element_type():
    rejects(lambda: inf.infer_cast(dt("8xf32 [R]"), i8), "i8")


def test_check_materializable():
    for spec in ("8xf32 [R]", "8xf32 [S(0), V]"):
        inf.check_materializable(dt(spec), "a constant")
    rejects(
        lambda: inf.check_materializable(dt("8xf32 [R, P(max)]"), "a constant"),
        "a constant cannot be P(max)",
        1,
    )


# ============================================================================================
# property tests: a simulated mesh
# ============================================================================================

SIM_MESHES = [(1,), (2,), (3,), (4,), (2, 2), (2, 3), (3, 2), (2, 1, 2), (2, 2, 2)]


def _decompose(rng: np.random.Generator, x: np.ndarray, kind: ReductionKind, n: int):
    """n full-shaped values whose `kind`-reduction is x."""
    if n == 1:
        return [x]
    shape = x.shape
    if kind is ReductionKind.SUM:
        parts = [rng.uniform(-1, 1, shape) for _ in range(n - 1)]
        return [*parts, x - sum(parts)]
    if kind is ReductionKind.PROD:
        parts = [rng.uniform(0.5, 2, shape) for _ in range(n - 1)]
        return [*parts, x / np.prod(parts, axis=0)]
    winner = rng.integers(0, n, shape)
    sign = -1 if kind is ReductionKind.MAX else 1
    return [np.where(winner == c, x, x + sign * rng.uniform(0.1, 1, shape)) for c in range(n)]


def distribute(rng: np.random.Generator, x: np.ndarray, t: DTensorType, mesh: Mesh) -> dict:
    """Every rank's local value of the global value x laid out as t says."""
    values: dict[tuple[int, ...], np.ndarray] = {(): x}
    for a, p in enumerate(t.placement_list):
        n = mesh.axis_sizes[a]
        out = {}
        for key, v in values.items():
            if isinstance(p, PartialAttr):
                for c, part in enumerate(_decompose(rng, v, p.partial_kind, n)):
                    out[(*key, c)] = part
            else:
                for c in range(n):
                    out[(*key, c)] = v
        values = out
    return {c: v[t.local_slices(mesh, c)] for c, v in values.items()}


REDUCERS = {
    ReductionKind.SUM: lambda xs: np.sum(xs, axis=0),
    ReductionKind.MAX: lambda xs: np.max(xs, axis=0),
    ReductionKind.MIN: lambda xs: np.min(xs, axis=0),
    ReductionKind.PROD: lambda xs: np.prod(xs, axis=0),
}


def assert_combines_to(local: dict, t: DTensorType, expected: np.ndarray, mesh: Mesh) -> None:
    """The ranks' local results, combined as t's placements say, are `expected`."""
    assert t.get_shape() == expected.shape
    for c, v in local.items():
        assert v.shape == t.local_shape(mesh, c), (c, v.shape, t.local_shape(mesh, c))
    values = dict(local)
    # partial axes combine innermost first: [P(sum), P(max)] is the sum over axis 0 of the max
    # over axis 1
    for a in reversed(range(mesh.ndim)):
        p = t.placement_list[a]
        if not isinstance(p, PartialAttr):
            continue
        combined = {}
        for key in values:
            if key[a] == 0:
                group = [values[(*key[:a], i, *key[a + 1 :])] for i in range(mesh.axis_sizes[a])]
                combined[key] = REDUCERS[p.partial_kind](np.stack(group))
        values = combined
    for c, v in values.items():
        want = expected[local_slices(expected.shape, t.split_dims(), mesh.axis_sizes, c)]
        if v.dtype == bool:
            assert np.array_equal(v, want), c
        else:
            np.testing.assert_allclose(v, want, rtol=1e-9, atol=1e-9, err_msg=str(c))


def simulate(
    rng: np.random.Generator,
    mesh: Mesh,
    fn: Callable[..., np.ndarray],
    inputs: Sequence[tuple[np.ndarray, DTensorType]],
    result: DTensorType,
) -> None:
    local_inputs = [distribute(rng, x, t, mesh) for x, t in inputs]
    local = {c: fn(*[li[c] for li in local_inputs]) for c in mesh.all_coords()}
    assert_combines_to(local, result, fn(*[x for x, _ in inputs]), mesh)


def _values(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Values bounded away from zero (divisors) and of either sign."""
    return rng.uniform(0.5, 2, shape) * rng.choice([-1.0, 1.0], shape)


ELEMENTWISE_FNS: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "add": (2, np.add),
    "sub": (2, np.subtract),
    "mul": (2, np.multiply),
    "div": (2, np.divide),
    "max": (2, np.maximum),
    "min": (2, np.minimum),
    "pow": (2, lambda a, b: np.power(np.abs(a), b)),
    "cmp": (2, np.less),
    "select": (3, np.where),
    "neg": (1, np.negative),
    "scale": (1, lambda a: 2.5 * a),
    "exp": (1, np.exp),
    "relu": (1, lambda a: np.maximum(a, 0)),
    "abs": (1, np.abs),
    "tanh": (1, np.tanh),
}

KINDS = list(ReductionKind)


@st.composite
def placement_for(draw: st.DrawFn, rank: int, mode: str, out_dim: int | None, offset: int, kind):
    """One operand's placement on one axis; `mode` makes legal combinations likely."""
    own = None if out_dim is None else out_dim - offset
    if mode == "R":
        return R
    if mode == "S" and own is not None and own >= 0:
        return draw(st.sampled_from([S(own), R]))
    if mode == "P":
        return draw(st.sampled_from([P(kind), R]))
    if mode == "V":
        return draw(st.sampled_from([V, R]))
    options: list[Placement] = [R, V, *(P(k) for k in KINDS)]
    options += [S(d) for d in range(rank)]
    return draw(st.sampled_from(options))


@st.composite
def elementwise_cases(draw: st.DrawFn):
    op = draw(st.sampled_from(sorted(ELEMENTWISE_FNS)))
    arity = ELEMENTWISE_FNS[op][0]
    sizes = draw(st.sampled_from(SIM_MESHES))
    mesh = Mesh("m", tuple(f"a{i}" for i in range(len(sizes))), sizes)
    out_shape = draw(
        st.lists(st.integers(1, 5), min_size=draw(st.sampled_from([0, 1, 1])), max_size=3)
    )
    shapes = []
    for _ in range(arity):
        # mostly full rank and full size; sometimes a lower-rank or size-1 (broadcast) operand
        rank = draw(st.sampled_from([len(out_shape)] * 3 + list(range(len(out_shape) + 1))))
        shape = [draw(st.sampled_from([d, d, d, 1])) for d in out_shape[len(out_shape) - rank :]]
        if shape and draw(st.integers(0, 19)) == 0:  # occasionally not broadcastable
            shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(1, 6))
        shapes.append(shape)
    placements: list[list[Placement]] = [[] for _ in range(arity)]
    for _ in sizes:
        mode = draw(st.sampled_from(["R", "S", "S", "S", "P", "P", "P", "V", "any", "any"]))
        out_dim = draw(st.integers(0, len(out_shape) - 1)) if out_shape else None
        kind = draw(st.sampled_from([*KINDS, ReductionKind.SUM, ReductionKind.SUM]))
        for i, shape in enumerate(shapes):
            offset = len(out_shape) - len(shape)
            placements[i].append(draw(placement_for(len(shape), mode, out_dim, offset, kind)))
    elements = [f64] * arity
    if op == "select":
        elements[0] = i1
    types = [
        DTensorType(shape, e, "m", p)
        for shape, e, p in zip(shapes, elements, placements, strict=True)
    ]
    return op, mesh, types, draw(st.integers(0, 2**32 - 1))


def _infer_elementwise(op: str, types: Sequence[DTensorType]) -> DTensorType:
    if op == "cmp":
        return inf.infer_elementwise(op, types, i1)
    if op == "select":
        return inf.infer_elementwise(op, types, types[1].element_type)
    return inf.infer_elementwise(op, types)


def _single_axis(t: DTensorType, a: int) -> DTensorType:
    return t.with_placements([t.placement_list[a]])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_cases())
def test_elementwise_property(case):
    op, mesh, types, seed = case
    try:
        out = _infer_elementwise(op, types)
    except InferenceError as e:
        # multi-axis meshes: the axis the error names rejects on its own too
        if e.axis is not None:
            with pytest.raises(InferenceError):
                _infer_elementwise(op, [_single_axis(t, e.axis) for t in types])
        # replicated operands are always accepted: only shapes or partials can be at fault
        if all(p == R for t in types for p in t.placement_list):
            with pytest.raises(ValueError):
                np.broadcast_shapes(*(t.get_shape() for t in types))
        return

    out_shape = np.broadcast_shapes(*(t.get_shape() for t in types))
    assert out.get_shape() == out_shape
    assert out.mesh == types[0].mesh
    for a, q in enumerate(out.placement_list):
        ps = [t.placement_list[a] for t in types]
        # per-axis independence: the same op on this axis alone gives the same placement
        assert _infer_elementwise(op, [_single_axis(t, a) for t in types]).placement_list == (q,)
        if isinstance(q, SplitAttr):
            # some operand splits the corresponding dimension (in full), none is partial or V
            assert any(
                isinstance(p, SplitAttr)
                and p.split_dim + len(out_shape) - t.rank == q.split_dim
                and t.get_shape()[p.split_dim] == out_shape[q.split_dim]
                for p, t in zip(ps, types, strict=True)
            )
            assert all(isinstance(p, SplitAttr | ReplicatedAttr) for p in ps)
        elif isinstance(q, PartialAttr):
            assert op in inf.PARTIAL_RULES
            assert any(isinstance(p, PartialAttr) for p in ps)
            assert all(isinstance(p, PartialAttr | ReplicatedAttr) for p in ps)
        elif isinstance(q, VaryingAttr):
            assert any(isinstance(p, VaryingAttr) for p in ps)
            assert all(isinstance(p, VaryingAttr | ReplicatedAttr) for p in ps)
        else:
            assert all(isinstance(p, ReplicatedAttr) for p in ps)

    if any(p == V for t in types for p in t.placement_list):
        return  # varying values have no global value to compare with
    rng = np.random.default_rng(seed)
    arrays = [
        rng.random(t.get_shape()) < 0.5 if t.element_type == i1 else _values(rng, t.get_shape())
        for t in types
    ]
    simulate(rng, mesh, ELEMENTWISE_FNS[op][1], list(zip(arrays, types, strict=True)), out)


def test_simulator_catches_a_wrong_signature():
    """The simulated mesh is what gives the property tests teeth: a replicated operand that is
    not sliced along the other's split dimension gives wrong blocks."""
    mesh = Mesh("m", ("tp",), (2,))
    rng = np.random.default_rng(0)
    x, y = _values(rng, (4, 3)), _values(rng, (4, 3))
    wrong = dt("4x3xf64 [S(0)]")
    with pytest.raises(AssertionError):
        simulate(
            rng, mesh, lambda a, b: a + b[: a.shape[0]], [(x, wrong), (y, dt("4x3xf64 [R]"))], wrong
        )


# --- matmul, reductions and data movement on the simulated mesh ---------------------------------


def _random_placement(draw: st.DrawFn, rank: int) -> Placement:
    options: list[Placement] = [R, R, P("sum"), P("max"), *(S(d) for d in range(rank))]
    return draw(st.sampled_from(options))


@st.composite
def matmul_cases(draw: st.DrawFn):
    sizes = draw(st.sampled_from(SIM_MESHES))
    mesh = Mesh("m", tuple(f"a{i}" for i in range(len(sizes))), sizes)
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    tl, tr = draw(st.booleans()), draw(st.booleans())
    lhs_shape = [*batch, *((k, m) if tl else (m, k))]
    rhs_batch = batch if draw(st.booleans()) else []
    rhs_shape = [*rhs_batch, *((n, k) if tr else (k, n))]
    lp = [_random_placement(draw, len(lhs_shape)) for _ in sizes]
    rp = [_random_placement(draw, len(rhs_shape)) for _ in sizes]
    lhs = DTensorType(lhs_shape, f64, "m", lp)
    rhs = DTensorType(rhs_shape, f64, "m", rp)
    return mesh, lhs, rhs, tl, tr, draw(st.integers(0, 2**32 - 1))


def _matmul_fn(tl: bool, tr: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(np.swapaxes(a, -1, -2) if tl else a, np.swapaxes(b, -1, -2) if tr else b)

    return fn


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matmul_cases())
def test_matmul_property(case):
    mesh, lhs, rhs, tl, tr, seed = case
    try:
        out = inf.infer_matmul(lhs, rhs, tl, tr)
    except InferenceError as e:
        assert e.axis is not None  # shapes are consistent by construction
        with pytest.raises(InferenceError):
            inf.infer_matmul(_single_axis(lhs, e.axis), _single_axis(rhs, e.axis), tl, tr)
        return
    for a, q in enumerate(out.placement_list):
        single = inf.infer_matmul(_single_axis(lhs, a), _single_axis(rhs, a), tl, tr)
        assert single.placement_list == (q,)
        # P only when both operands split the contraction dim, or one is P(sum) and other R
        if isinstance(q, PartialAttr):
            pl, pr = lhs.placement_list[a], rhs.placement_list[a]
            assert q == P("sum")
            assert isinstance(pl, PartialAttr | SplitAttr) or isinstance(pr, PartialAttr)
    rng = np.random.default_rng(seed)
    x, y = _values(rng, lhs.get_shape()), _values(rng, rhs.get_shape())
    simulate(rng, mesh, _matmul_fn(tl, tr), [(x, lhs), (y, rhs)], out)


def _reduce_fn(kind: str, dims: tuple[int, ...], keepdim: bool, shape) -> Callable:
    count = int(np.prod([shape[d] for d in dims])) if dims else 1

    def fn(x: np.ndarray) -> np.ndarray:
        if kind == "max":
            return np.max(x, axis=dims, keepdims=keepdim, initial=-np.inf)
        if kind == "min":
            return np.min(x, axis=dims, keepdims=keepdim, initial=np.inf)
        if kind == "prod":
            return np.prod(x, axis=dims, keepdims=keepdim)
        total = np.sum(x, axis=dims, keepdims=keepdim)
        return total / count if kind == "mean" else total  # mean: divide by the *global* count

    return fn


@st.composite
def unary_cases(draw: st.DrawFn, min_rank: int = 0):
    sizes = draw(st.sampled_from(SIM_MESHES))
    mesh = Mesh("m", tuple(f"a{i}" for i in range(len(sizes))), sizes)
    shape = draw(st.lists(st.integers(1, 5), min_size=min_rank, max_size=3))
    placements = [
        draw(st.sampled_from([R, V, *(P(k) for k in KINDS), *(S(d) for d in range(len(shape)))]))
        for _ in sizes
    ]
    return mesh, DTensorType(shape, f64, "m", placements), draw(st.integers(0, 2**32 - 1))


def _no_varying(t: DTensorType) -> bool:
    return V not in t.placement_list


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_cases(), st.sampled_from(["sum", "mean", "max", "min", "prod"]), st.data())
def test_reduce_property(case, kind: str, data: st.DataObject):
    mesh, t, seed = case
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, max(t.rank - 1, 0)), max_size=t.rank))))
    dims = tuple(d for d in dims if d < t.rank)
    keepdim = data.draw(st.booleans())
    try:
        out = inf.infer_reduce(t, kind, dims, keepdim)
    except InferenceError as e:
        assert e.axis is not None
        assert isinstance(t.placement_list[e.axis], PartialAttr)
        return
    for a, (p, q) in enumerate(zip(t.placement_list, out.placement_list, strict=True)):
        if isinstance(p, SplitAttr) and p.split_dim in dims:
            assert isinstance(q, PartialAttr), a
        else:
            assert type(p) is type(q), a
    if _no_varying(t):
        rng = np.random.default_rng(seed)
        x = rng.uniform(0.5, 2, t.get_shape())  # positive: prod partials divide by values
        simulate(rng, mesh, _reduce_fn(kind, dims, keepdim, t.get_shape()), [(x, t)], out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_cases(), st.data())
def test_transpose_property(case, data: st.DataObject):
    mesh, t, seed = case
    perm = data.draw(st.permutations(range(t.rank)))
    out = inf.infer_transpose(t, perm)
    if _no_varying(t):
        rng = np.random.default_rng(seed)
        x = _values(rng, t.get_shape())
        simulate(rng, mesh, lambda a: np.transpose(a, perm), [(x, t)], out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_cases(), st.data())
def test_reshape_property(case, data: st.DataObject):
    mesh, t, seed = case
    total = int(np.prod(t.get_shape()))
    new_shape: list[int] = []
    rest = total
    while rest > 1 and len(new_shape) < 3:
        d = data.draw(st.sampled_from([f for f in range(1, rest + 1) if rest % f == 0]))
        new_shape.append(d)
        rest //= d
    new_shape.append(rest)
    new_shape = data.draw(st.permutations(new_shape))
    try:
        out = inf.infer_reshape(t, new_shape, mesh.axis_sizes)
    except InferenceError as e:
        assert isinstance(t.placement_list[e.axis], SplitAttr)
        return
    assert out.get_shape() == tuple(new_shape)
    if _no_varying(t):
        rng = np.random.default_rng(seed)
        x = _values(rng, t.get_shape())
        local_shapes = {c: out.local_shape(mesh, c) for c in mesh.all_coords()}
        # each rank reshapes its block to its block of the result: the blocks must agree
        local_inputs = distribute(rng, x, t, mesh)
        local = {c: v.reshape(local_shapes[c]) for c, v in local_inputs.items()}
        assert_combines_to(local, out, x.reshape(new_shape), mesh)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_cases(min_rank=1), st.data())
def test_slice_property(case, data: st.DataObject):
    mesh, t, seed = case
    offsets, sizes = [], []
    for full in t.get_shape():
        o = data.draw(st.integers(0, full))
        offsets.append(o)
        sizes.append(data.draw(st.integers(0, full - o)))
    try:
        out = inf.infer_slice(t, offsets, sizes)
    except InferenceError as e:
        d = t.placement_list[e.axis].split_dim
        assert d is not None and (offsets[d], sizes[d]) != (0, t.get_shape()[d])
        return
    if _no_varying(t):
        rng = np.random.default_rng(seed)
        x = _values(rng, t.get_shape())
        box = tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))
        simulate(rng, mesh, lambda a: a[box], [(x, t)], out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unary_cases(min_rank=1), st.data())
def test_concat_property(case, data: st.DataObject):
    mesh, t, seed = case
    dim = data.draw(st.integers(0, t.rank - 1))
    other = list(t.get_shape())
    other[dim] = data.draw(st.integers(0, 4))
    u = t.with_shape(other)
    try:
        out = inf.infer_concat([t, u], dim)
    except InferenceError as e:
        assert t.placement_list[e.axis].split_dim == dim
        return
    if _no_varying(t):
        rng = np.random.default_rng(seed)
        x, y = _values(rng, t.get_shape()), _values(rng, u.get_shape())
        simulate(rng, mesh, lambda a, b: np.concatenate([a, b], axis=dim), [(x, t), (y, u)], out)


# --- collectives on the simulated mesh ------------------------------------------------------------
# coll.py's placement conversions are inference rules too: each accepted conversion, carried out
# on every group of ranks, must produce exactly the blocks that the inferred type describes.

IDENTITY = {
    ReductionKind.SUM: 0.0,
    ReductionKind.MAX: -np.inf,
    ReductionKind.MIN: np.inf,
    ReductionKind.PROD: 1.0,
}


def _block(x: np.ndarray, dim: int, parts: int, index: int) -> np.ndarray:
    start, stop = block_range(x.shape[dim], parts, index)
    return x[(slice(None),) * dim + (slice(start, stop),)]


def run_collective(op: str, props: dict, mesh: Mesh, axes: Sequence[int], local: dict) -> dict:
    """The collective's effect on every group of ranks over `axes`, from semantics.md."""
    out = {}
    for group in mesh.groups(axes):
        p = len(group)
        values = [local[c] for c in group]
        kind = props.get("kind")
        for i, c in enumerate(group):
            if op == "all_reduce":
                out[c] = REDUCERS[kind](np.stack(values))
            elif op == "reduce_scatter":
                out[c] = _block(REDUCERS[kind](np.stack(values)), props["dim"], p, i)
            elif op == "all_gather":
                out[c] = np.concatenate(values, axis=props["gathered"])
            elif op == "all_to_all":
                parts = [_block(v, props["dim"], p, i) for v in values]
                out[c] = np.concatenate(parts, axis=props["gathered"])
            elif op == "slice":
                out[c] = _block(values[i], props["dim"], p, i)
            elif op == "broadcast":
                out[c] = values[props["root"]]
            elif op == "reduce":
                red = REDUCERS[kind](np.stack(values))
                out[c] = red if i == props["root"] else np.full_like(red, IDENTITY[kind])
    return out


@st.composite
def collective_cases(draw: st.DrawFn):
    sizes = draw(st.sampled_from(SIM_MESHES))
    mesh = Mesh("m", tuple(f"a{i}" for i in range(len(sizes))), sizes)
    shape = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8, 12]), min_size=1, max_size=3))
    op = draw(
        st.sampled_from(
            [
                "all_reduce",
                "reduce_scatter",
                "all_gather",
                "all_to_all",
                "slice",
                "broadcast",
                "reduce",
            ]
        )
    )
    axes = sorted(draw(st.sets(st.integers(0, len(sizes) - 1), min_size=1)))
    kind = draw(st.sampled_from([ReductionKind.SUM, ReductionKind.MAX, ReductionKind.MIN]))
    dim = draw(st.integers(0, len(shape) - 1))
    src = draw(st.integers(0, len(shape) - 1))
    if op == "all_to_all" and len(shape) > 1 and src == dim:
        src = (dim + 1) % len(shape)
    placements = []
    for a in range(len(sizes)):
        if a in axes:  # mostly what the op expects, sometimes anything
            likely = {
                "all_reduce": P(kind), "reduce_scatter": P(kind), "reduce": P(kind),
                "all_gather": S(src), "all_to_all": S(src), "slice": R,
                "broadcast": draw(st.sampled_from([R, P(kind)])),
            }[op]  # fmt: skip
            options = [likely] * 4 + [R, P(kind), S(src), S(dim)]
        else:
            options = [R, P(kind), S(src), S(dim)]
        placements.append(draw(st.sampled_from(options)))
    t = DTensorType(shape, f64, "m", placements)
    group_size = prod(sizes[a] for a in axes)
    props = {"kind": kind, "dim": dim, "root": draw(st.integers(0, group_size - 1))}
    return mesh, t, op, axes, props, draw(st.integers(0, 2**32 - 1))


def _build_collective(op: str, mesh: Mesh, t: DTensorType, axes: list[str], props: dict):
    (x,) = Block(arg_types=[t]).args
    kind, dim, root = props["kind"], props["dim"], props["root"]
    return {
        "all_reduce": lambda: coll.AllReduceOp(x, mesh, axes, kind),
        "reduce_scatter": lambda: coll.ReduceScatterOp(x, mesh, axes, dim, kind),
        "all_gather": lambda: coll.AllGatherOp(x, mesh, axes),
        "all_to_all": lambda: coll.AllToAllOp(x, mesh, axes, dim),
        "slice": lambda: coll.SliceOp(x, mesh, axes, dim),
        "broadcast": lambda: coll.BroadcastOp(x, mesh, axes, root),
        "reduce": lambda: coll.ReduceOp(x, mesh, axes, root, kind),
    }[op]()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collective_cases())
def test_collective_property(case):
    mesh, t, op, axes, props, seed = case
    names = [mesh.axis_names[a] for a in axes]
    try:
        built = _build_collective(op, mesh, t, names, props)
    except VerifyException:
        return
    out = built.results[0].type
    assert isinstance(out, DTensorType)
    # axes outside the group keep their placements
    for a in range(mesh.ndim):
        if a not in axes:
            assert out.placement_list[a] == t.placement_list[a]
    if op == "broadcast" and any(isinstance(t.placement_list[a], PartialAttr) for a in axes):
        # broadcasting a partial value hands out the root's summand (after coll.reduce, the
        # whole value): the logical value changes by design
        assert all(out.placement_list[a] == R for a in axes)
        return
    if op in ("all_gather", "all_to_all"):
        props = {**props, "gathered": t.placement_list[axes[0]].split_dim}
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2, t.get_shape())
    local = run_collective(op, props, mesh, axes, distribute(rng, x, t, mesh))
    assert_combines_to(local, out, x, mesh)
