"""The `!dtensor.tensor` type and its placements: construction, equality, syntax, local shapes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import (
    BFloat16Type,
    IntegerType,
    Signedness,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    P,
    PartialAttr,
    R,
    ReductionKind,
    ReductionKindAttr,
    ReplicatedAttr,
    S,
    SplitAttr,
    V,
    VaryingAttr,
    format_placements,
    is_bool,
    is_float,
)
from ccopt.ir import make_context
from ccopt.mesh import Mesh

CTX = make_context()
bf16 = BFloat16Type()


def parse(text: str) -> Attribute:
    return Parser(CTX, text).parse_attribute()


# --- placements -----------------------------------------------------------------------------


def test_placement_equality():
    assert S(0) == SplitAttr(0)
    assert S(0) != S(1)
    assert P() == P("sum") == PartialAttr(ReductionKind.SUM)
    assert P("max") == PartialAttr(ReductionKindAttr(ReductionKind.MAX))
    assert P("max") != P("sum")
    assert R == ReplicatedAttr()
    assert V == VaryingAttr()
    assert R != V
    assert len({S(0), SplitAttr(0), R, ReplicatedAttr(), P(), P("sum")}) == 3


def test_placement_accessors():
    assert (S(2).short, S(2).split_dim, S(2).partial_kind) == ("S(2)", 2, None)
    assert (R.short, R.split_dim, R.partial_kind) == ("R", None, None)
    assert (V.short, V.split_dim, V.partial_kind) == ("V", None, None)
    assert (P("min").short, P("min").split_dim) == ("P(min)", None)
    assert P("prod").partial_kind is ReductionKind.PROD
    assert format_placements([S(0), R, P("max"), V]) == "[S(0), R, P(max), V]"


def test_unknown_reduction_kind_is_rejected():
    with pytest.raises(ValueError):
        P("avg")


@pytest.mark.parametrize(
    ("attr", "text"),
    [
        (S(1), "#dtensor.split<1>"),
        (P("max"), "#dtensor.partial<max>"),
        (R, "#dtensor.replicated"),
        (V, "#dtensor.varying"),
        (ReductionKindAttr(ReductionKind.MIN), "#dtensor<reduction min>"),
        (MeshAxesAttr(["dp", "tp"]), "#dtensor.axes[dp, tp]"),
    ],
)
def test_placement_attribute_round_trip(attr: Attribute, text: str):
    assert str(attr) == text
    assert parse(text) == attr


def test_mesh_axes_names():
    assert MeshAxesAttr(["dp", "tp"]).names == ("dp", "tp")


def test_element_type_predicates():
    assert all(is_float(t) for t in (f16, bf16, f32, f64))
    assert not any(is_float(t) for t in (i1, i32, i64))
    assert is_bool(i1) and not is_bool(i32) and not is_bool(f32)


# --- the tensor type ------------------------------------------------------------------------


def test_construction_and_accessors():
    t = DTensorType([8, 16], f32, "m", [S(0), R])
    assert t.get_shape() == (8, 16)
    assert t.get_num_dims() == t.rank == 2
    assert t.element_type == t.get_element_type() == f32
    assert t.mesh_name == "m"
    assert t.placement_list == (S(0), R)
    assert t.split_dims() == (0, None)
    assert t.summary() == "8x16xf32 [S(0), R]"


def test_scalar_type():
    t = DTensorType([], f64, "m", [R, P("sum")])
    assert t.get_shape() == ()
    assert t.rank == 0
    assert t.summary() == "f64 [R, P(sum)]"
    assert str(t) == "!dtensor.tensor<f64, @m[R, P(sum)]>"


def test_equality_and_hash():
    a = DTensorType([8, 16], f32, "m", [S(0), R])
    b = DTensorType((8, 16), f32, "m", (SplitAttr(0), ReplicatedAttr()))
    assert a == b
    assert hash(a) == hash(b)
    assert a != DTensorType([8, 17], f32, "m", [S(0), R])
    assert a != DTensorType([8, 16], f16, "m", [S(0), R])
    assert a != DTensorType([8, 16], f32, "n", [S(0), R])
    assert a != DTensorType([8, 16], f32, "m", [S(1), R])
    assert a != DTensorType([8, 16], f32, "m", [R, S(0)])
    assert a != DTensorType([8, 16], f32, "m", [S(0)])


def test_with_helpers_change_one_thing():
    t = DTensorType([8, 16], f32, "m", [S(0), R])
    assert t.with_placements([R, S(1)]) == DTensorType([8, 16], f32, "m", [R, S(1)])
    assert t.with_shape([8, 4]) == DTensorType([8, 4], f32, "m", [S(0), R])
    assert t.with_element_type(bf16) == DTensorType([8, 16], bf16, "m", [S(0), R])
    assert t == DTensorType([8, 16], f32, "m", [S(0), R])  # immutable


@pytest.mark.parametrize(
    "text",
    [
        "!dtensor.tensor<8x16xf32, @m[S(0), R]>",
        "!dtensor.tensor<f32, @m[R]>",
        "!dtensor.tensor<0x3xbf16, @mesh[S(0), V, P(prod)]>",
        "!dtensor.tensor<3xi1, @m[P(max)]>",
        "!dtensor.tensor<2x3x4xi64, @m[S(2), S(2), P(min)]>",
        "!dtensor.tensor<7xf16, @m[V]>",
        "!dtensor.tensor<7xi32, @m[P(sum), R]>",
    ],
)
def test_type_round_trip(text: str):
    t = parse(text)
    assert isinstance(t, DTensorType)
    assert str(t) == text
    assert parse(str(t)) == t


def test_parse_builds_the_expected_type():
    assert parse("!dtensor.tensor<8x16xf32, @m[P( sum ),  S(1)]>") == DTensorType(
        [8, 16], f32, "m", [P("sum"), S(1)]
    )


ELEMENTS = [f16, bf16, f32, f64, i1, i32, i64]
PLACEMENT_KINDS = st.sampled_from(["S", "R", "P", "V"])


@st.composite
def dtensor_types(draw: st.DrawFn) -> DTensorType:
    shape = draw(st.lists(st.integers(0, 64), max_size=4))
    placements = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(PLACEMENT_KINDS)
        if kind == "S" and shape:
            placements.append(S(draw(st.integers(0, len(shape) - 1))))
        elif kind == "P":
            placements.append(P(draw(st.sampled_from(list(ReductionKind)))))
        elif kind == "V":
            placements.append(V)
        else:
            placements.append(R)
    mesh = draw(st.sampled_from(["m", "mesh0", "tp_mesh"]))
    return DTensorType(shape, draw(st.sampled_from(ELEMENTS)), mesh, placements)


@settings(max_examples=100, deadline=None)
@given(dtensor_types())
def test_type_round_trip_property(t: DTensorType):
    text = str(t)
    back = parse(text)
    assert back == t
    assert str(back) == text


# --- rejected parameters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "element", "placements", "message"),
    [
        ([8], i8, [R], "element type i8 is not one of f16, bf16, f32, f64, i1, i32, i64"),
        ([8], IntegerType(32, Signedness.SIGNED), [R], "element type si32 is not one of"),
        ([8, -1], f32, [R], "tensor dimensions must be static and non-negative"),
        ([8], f32, [], "needs one placement per mesh axis"),
        ([8, 4], f32, [R, S(2)], "placement S(2) splits dimension 2 of a rank-2 tensor"),
        ([], f32, [S(0)], "placement S(0) splits dimension 0 of a rank-0 tensor"),
    ],
)
def test_bad_parameters_are_rejected(shape, element, placements, message):
    with pytest.raises(VerifyException) as info:
        DTensorType(shape, element, "m", placements)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "!dtensor.tensor<8xf32, @m[S(1)]>",
            "placement S(1) splits dimension 1 of a rank-1 tensor",
        ),
        ("!dtensor.tensor<8xf32, @m[]>", "needs one placement per mesh axis"),
        ("!dtensor.tensor<8xf32, @m[Q]>", "unknown placement 'Q'"),
        ("!dtensor.tensor<8xf32, @m[S(-1)]>", "Expected integer literal"),
        ("!dtensor.tensor<8xf32, @m[P(avg)]>", "`sum`, `max`, `min`, or `prod`"),
        ("!dtensor.tensor<8xi8, @m[R]>", "element type i8 is not one of"),
        ("!dtensor.tensor<?x8xf32, @m[R]>", "static and non-negative"),
        ("!dtensor.tensor<8xf32, m[R]>", "symbol name"),
        ("!dtensor.tensor<8xf32, @m[S]>", "'(' expected"),
    ],
)
def test_bad_syntax_is_a_parse_error(text: str, message: str):
    with pytest.raises(ParseError) as info:
        parse(text)
    assert message in str(info.value)


# --- local shapes ---------------------------------------------------------------------------

MESH = Mesh("m", ("dp", "tp"), (2, 4))


@pytest.mark.parametrize(
    ("shape", "placements", "coords", "local"),
    [
        ([8, 16], [S(0), S(1)], (1, 3), (4, 4)),
        ([8, 16], [R, R], (1, 3), (8, 16)),
        ([8, 16], [P("sum"), V], (1, 3), (8, 16)),
        ([10, 6], [R, S(0)], (0, 0), (3, 6)),
        ([10, 6], [R, S(0)], (0, 3), (1, 6)),  # short last block
        ([2, 6], [R, S(0)], (1, 1), (1, 6)),
        ([2, 6], [R, S(0)], (1, 2), (0, 6)),  # empty trailing block
        ([10, 6], [S(0), S(0)], (0, 3), (2, 6)),  # composite: block 3 of 8
        ([10, 6], [S(0), S(0)], (1, 0), (2, 6)),  # block 4
        ([10, 6], [S(0), S(0)], (1, 1), (0, 6)),  # block 5 is empty
        ([10, 6], [S(1), S(0)], (1, 2), (3, 3)),
        ([], [R, R], (1, 1), ()),
    ],
)
def test_local_shape(shape, placements, coords, local):
    t = DTensorType(shape, f32, "m", placements)
    assert t.local_shape(MESH, coords) == local


def test_local_slices_of_type():
    t = DTensorType([10, 6], f32, "m", [S(1), S(0)])
    assert t.local_slices(MESH, (1, 2)) == (slice(6, 9), slice(3, 6))
