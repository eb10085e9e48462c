"""Python builders of every dtensor and coll op.

Each op is built inside a module that declares `dtensor.mesh @m [dp=2, tp=4]`, in a `func.func`
whose arguments carry the operand types; the builder's inferred result type is checked, the module
must verify, and it must survive a print/parse round trip in custom and generic form. Builders
given illegal operands raise a `VerifyException` that says what is wrong (never an internal
AttributeError, KeyError, IndexError or TypeError).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from io import StringIO

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    ModuleOp,
    TensorType,
    f16,
    f32,
    i8,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt_ops
from ccopt.dialects.coll import Coll
from ccopt.dialects.dtensor import Dtensor, MeshOp
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.ir import make_context, verify_module
from ccopt.mesh import Mesh

CTX = make_context()
MESH = Mesh("m", ("dp", "tp"), (2, 4))


def dt(spec: str, mesh: str = "m") -> DTensorType:
    """`"8x16xf32 [S(0), R]"` -> the type on `@mesh`."""
    body, placements = spec.split(" [", 1)
    t = Parser(CTX, f"!dtensor.tensor<{body}, @{mesh}[{placements}>").parse_attribute()
    assert isinstance(t, DTensorType)
    return t


def arg_type(spec: str | Attribute) -> Attribute:
    return dt(spec) if isinstance(spec, str) else spec


Body = Callable[..., Sequence[Operation]]


def build_module(args: Sequence[str | Attribute], body: Body) -> tuple[ModuleOp, list[Operation]]:
    """A module with the mesh and `func.func @f(args)` whose body is `body(*block_args)`; the last
    op's result (if any) is returned."""
    types = [arg_type(a) for a in args]
    block = Block(arg_types=types)
    ops = list(body(*block.args))
    block.add_ops(ops)
    returned = [ops[-1].results[0]] if ops and ops[-1].results else []
    block.add_op(func.ReturnOp(*returned))
    f = func.FuncOp("f", FunctionType.from_lists(types, [v.type for v in returned]), Region(block))
    return ModuleOp([MeshOp("m", [("dp", 2), ("tp", 4)]), f]), ops


def printed(op: Operation, generic: bool = False) -> str:
    out = StringIO()
    Printer(out, print_generic_format=generic).print_op(op)
    return out.getvalue()


def const(shape: list[int], values: list[float]) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(TensorType(f32, shape), values)


X = "8x16xf32 [S(0), R]"  # activations, data parallel
BIAS = "16xf32 [R, R]"

# name, argument types, builder, expected result type (summary) or None for ops without results
# fmt: off
LEGAL: list[tuple[str, list, Body, str | None]] = [
    ("neg", ["8xi32 [S(0), P(sum)]"], lambda x: [dt_ops.NegOp(x)], "8xi32 [S(0), P(sum)]"),
    ("abs", ["8xi32 [S(0), R]"], lambda x: [dt_ops.AbsOp(x)], "8xi32 [S(0), R]"),
    ("relu", [X], lambda x: [dt_ops.ReluOp(x)], X),
    ("exp", [X], lambda x: [dt_ops.ExpOp(x)], X),
    ("log", [X], lambda x: [dt_ops.LogOp(x)], X),
    ("sqrt", [X], lambda x: [dt_ops.SqrtOp(x)], X),
    ("rsqrt", [X], lambda x: [dt_ops.RsqrtOp(x)], X),
    ("tanh", ["8x16xf32 [V, S(1)]"], lambda x: [dt_ops.TanhOp(x)], "8x16xf32 [V, S(1)]"),
    ("gelu", [X], lambda x: [dt_ops.GeluOp(x)], X),
    ("add", [X, BIAS], lambda x, b: [dt_ops.AddOp(x, b)], X),
    ("sub", ["8xf32 [P(sum), R]", "8xf32 [P(sum), R]"], lambda x, y: [dt_ops.SubOp(x, y)], "8xf32 [P(sum), R]"),
    ("mul", ["8xf32 [P(sum), S(0)]", "8xf32 [R, S(0)]"], lambda x, y: [dt_ops.MulOp(x, y)], "8xf32 [P(sum), S(0)]"),
    ("div", [X, "f32 [R, R]"], lambda x, y: [dt_ops.DivOp(x, y)], X),
    ("max", ["8xf32 [P(max), R]", "8xf32 [R, R]"], lambda x, y: [dt_ops.MaxOp(x, y)], "8xf32 [P(max), R]"),
    ("min", [X, BIAS], lambda x, b: [dt_ops.MinOp(x, b)], X),
    ("pow", [X, "f32 [R, R]"], lambda x, y: [dt_ops.PowOp(x, y)], X),
    ("cmp", [X, BIAS], lambda x, b: [dt_ops.CmpOp("lt", x, b)], "8x16xi1 [S(0), R]"),
    (
        "select",
        ["8x16xi1 [S(0), R]", X, BIAS],
        lambda c, x, b: [dt_ops.SelectOp(c, x, b)],
        X,
    ),
    ("scale", ["8xf32 [P(sum), R]"], lambda x: [dt_ops.ScaleOp(x, 0.5)], "8xf32 [P(sum), R]"),
    ("cast", [X], lambda x: [dt_ops.CastOp(x, f16)], "8x16xf16 [S(0), R]"),
    ("dropout", [X], lambda x: [dt_ops.DropoutOp(x, seed=7, prob=0.1)], X),
    (
        "matmul",
        [X, "32x16xf32 [R, S(0)]"],
        lambda x, w: [dt_ops.MatmulOp(x, w, transpose_rhs=True)],
        "8x32xf32 [S(0), S(1)]",
    ),
    (
        "matmul_row_parallel",
        ["8x32xf32 [S(0), S(1)]", "32x16xf32 [R, S(0)]"],
        lambda x, w: [dt_ops.MatmulOp(x, w)],
        "8x16xf32 [S(0), P(sum)]",
    ),
    (
        "matmul_transpose_lhs",
        ["16x8xf32 [S(1), R]", "16x32xf32 [R, R]"],
        lambda x, w: [dt_ops.MatmulOp(x, w, transpose_lhs=True)],
        "8x32xf32 [S(0), R]",
    ),
    (
        "reduce",
        ["8x16xf32 [S(0), S(1)]"],
        lambda x: [dt_ops.ReduceOp("mean", x, [1], keepdim=True)],
        "8x1xf32 [S(0), P(sum)]",
    ),
    ("reduce_max", [X], lambda x: [dt_ops.ReduceOp("max", x, [0, -1])], "f32 [P(max), R]"),
    ("norm", ["8x16xf32 [R, R]"], lambda x: [dt_ops.NormOp(x)], "f32 [R, R]"),
    ("softmax", [X], lambda x: [dt_ops.SoftmaxOp(x, -1)], X),
    (
        "layernorm",
        [X, BIAS, BIAS],
        lambda x, w, b: [dt_ops.LayerNormOp(x, w, b, eps=1e-6)],
        X,
    ),
    ("layernorm_plain", [X], lambda x: [dt_ops.LayerNormOp(x)], X),
    ("layernorm_bias_only", [X, BIAS], lambda x, b: [dt_ops.LayerNormOp(x, bias=b)], X),
    ("slice", [X], lambda x: [dt_ops.SliceOp(x, [0, 4], [8, 8])], "8x8xf32 [S(0), R]"),
    (
        "concat",
        [X, "8x4xf32 [S(0), R]"],
        lambda x, y: [dt_ops.ConcatOp([x, y], 1)],
        "8x20xf32 [S(0), R]",
    ),
    ("transpose", [X], lambda x: [dt_ops.TransposeOp(x, [1, 0])], "16x8xf32 [S(1), R]"),
    ("reshape", [X], lambda x: [dt_ops.ReshapeOp(x, [8, 4, 4])], "8x4x4xf32 [S(0), R]"),
    (
        "constant",
        [],
        lambda: [dt_ops.ConstantOp(const([2, 2], [1, 2, 3, 4]), dt("2x2xf32 [R, S(1)]"))],
        "2x2xf32 [R, S(1)]",
    ),
    ("fill", [], lambda: [dt_ops.FillOp(0.5, dt("4xf32 [V, R]"))], "4xf32 [V, R]"),
    (
        "update",
        [X],
        lambda x: (s := dt_ops.ScaleOp(x, 0.9), dt_ops.UpdateOp(x, s)),
        None,
    ),
    # collectives
    (
        "all_reduce",
        ["8xf32 [R, P(sum)]"],
        lambda x: [coll.AllReduceOp(x, MESH, ["tp"], algorithm="ring", chunks=2)],
        "8xf32 [R, R]",
    ),
    (
        "all_reduce_two_axes",
        ["8xf32 [P(max), P(max)]"],
        lambda x: [coll.AllReduceOp(x, MESH, ["dp", "tp"], "max")],
        "8xf32 [R, R]",
    ),
    (
        "reduce_scatter",
        ["8x16xf32 [R, P(sum)]"],
        lambda x: [coll.ReduceScatterOp(x, MESH, ["tp"], 1)],
        "8x16xf32 [R, S(1)]",
    ),
    (
        "reduce_scatter_nested",
        ["8x16xf32 [S(0), P(sum)]"],
        lambda x: [coll.ReduceScatterOp(x, MESH, ["tp"], 0, algorithm="halving_doubling")],
        "8x16xf32 [S(0), S(0)]",
    ),
    (
        "all_gather",
        ["8x16xf32 [S(0), S(0)]"],
        lambda x: [coll.AllGatherOp(x, MESH, ["dp", "tp"])],
        "8x16xf32 [R, R]",
    ),
    (
        "all_gather_inner",
        ["8x16xf32 [S(0), S(0)]"],
        lambda x: [coll.AllGatherOp(x, MESH, ["tp"])],
        "8x16xf32 [S(0), R]",
    ),
    (
        "all_to_all",
        ["8x16xf32 [R, S(0)]"],
        lambda x: [coll.AllToAllOp(x, MESH, ["tp"], 1)],
        "8x16xf32 [R, S(1)]",
    ),
    (
        "coll_slice",
        ["8x16xf32 [R, R]"],
        lambda x: [coll.SliceOp(x, MESH, ["tp"], 1)],
        "8x16xf32 [R, S(1)]",
    ),
    (
        "broadcast",
        ["8xf32 [R, V]"],
        lambda x: [coll.BroadcastOp(x, MESH, ["tp"], root=3)],
        "8xf32 [R, R]",
    ),
    (
        "reduce",
        ["8xf32 [R, P(max)]"],
        lambda x: [coll.ReduceOp(x, MESH, ["tp"], root=1, kind="max")],
        "8xf32 [R, P(max)]",
    ),
    (
        "shift",
        ["8xf32 [V, R]"],
        lambda x: [coll.ShiftOp(x, MESH, "dp", 1, cyclic=True)],
        "8xf32 [V, R]",
    ),
    ("shift_from_replicated", ["8xf32 [R, R]"], lambda x: [coll.ShiftOp(x, MESH, "dp", -1)], "8xf32 [V, R]"),
]
# fmt: on

LEGAL_IDS = [f"{case[0]}-{i}" for i, case in enumerate(LEGAL)]


def test_every_op_has_a_legal_case():
    built: set[str] = set()
    for _, args, body, _ in LEGAL:
        _, ops = build_module(args, body)
        built.update(op.name for op in ops)
    everything = {op.name for op in (*Dtensor.operations, *Coll.operations)}
    # ops with scalar bodies are built by the fusion passes and tested with them (test/passes)
    bodies = {"dtensor.fused", "dtensor.yield", "dtensor.uniform", "coll.fused_all_reduce"}
    assert everything - {"dtensor.mesh"} - bodies <= built


@pytest.mark.parametrize(("name", "args", "body", "expected"), LEGAL, ids=LEGAL_IDS)
def test_builder_infers_and_module_verifies(name: str, args, body: Body, expected: str | None):
    module, ops = build_module(args, body)
    op = ops[-1]
    if expected is None:
        assert not op.results
    else:
        assert isinstance(op.results[0].type, DTensorType)
        assert op.results[0].type.summary() == expected
        assert op.results[0].type.mesh_name == "m"
    verify_module(module)


@pytest.mark.parametrize(("name", "args", "body", "expected"), LEGAL, ids=LEGAL_IDS)
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_round_trip(name: str, args, body: Body, expected: str | None, generic: bool):
    module, _ = build_module(args, body)
    text = printed(module, generic)
    parsed = Parser(CTX, text).parse_module()
    verify_module(parsed)
    assert printed(parsed, generic) == text
    assert printed(parsed) == printed(module)


def test_mesh_op():
    mesh_op = MeshOp("m", [("dp", 2), ("tp", 4)])
    assert mesh_op.mesh == MESH
    assert printed(mesh_op) == "dtensor.mesh @m [dp=2, tp=4]"


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ([], "a mesh needs at least one axis"),
        ([("dp", 2), ("dp", 4)], "mesh axis names must be unique, got ['dp', 'dp']"),
        ([("dp", 2), ("tp", 0)], "mesh axis 'tp' has size 0; sizes must be >= 1"),
    ],
)
def test_bad_mesh_is_rejected(axes, message: str):
    with pytest.raises(VerifyException) as info:
        MeshOp("m", axes).verify()
    assert message in str(info.value)


# --- illegal operands ---------------------------------------------------------------------------

# fmt: off
ILLEGAL: list[tuple[str, list, Callable[..., object], str]] = [
    ("neg_i1", ["8xi1 [R, R]"], dt_ops.NegOp, "neg is not defined on i1 operand #0"),
    ("exp_i32", ["8xi32 [R, R]"], dt_ops.ExpOp, "exp needs a floating-point operand, operand #0 is i32"),
    ("gelu_partial", ["8xf32 [R, P(sum)]"], dt_ops.GeluOp, "on mesh axis #1: 'gelu' is not linear: operand #0 is P(sum)"),
    ("exp_not_dtensor", [i32], dt_ops.ExpOp, "expected a !dtensor.tensor value, got i32"),
    ("add_unsliced", [X, "8x16xf32 [R, R]"], dt_ops.AddOp, "on mesh axis #0: operand #1 is R but operand #0 is S(0)"),
    ("add_f16", [X, "16xf16 [R, R]"], dt_ops.AddOp, "operand #1 has element type f16 but operand #0 has f32"),
    ("add_i1", ["8xi1 [R, R]", "8xi1 [R, R]"], dt_ops.AddOp, "add is not defined on i1 operand #0"),
    ("add_shapes", ["8xf32 [R, R]", "4xf32 [R, R]"], dt_ops.AddOp, "operand #1 of shape 4 does not broadcast with shape 8"),
    ("add_not_dtensor", [X, i32], dt_ops.AddOp, "expected a !dtensor.tensor value, got i32"),
    ("add_other_mesh", [X, dt(BIAS, "n")], dt_ops.AddOp, "operand #1 is on mesh @n but operand #0 is on @m"),
    ("mul_two_partials", ["8xf32 [P(sum), R]", "8xf32 [P(sum), R]"], dt_ops.MulOp, "operands #0 and #1 cannot both be partial"),
    ("cmp_f16", [X, "16xf16 [R, R]"], lambda a, b: dt_ops.CmpOp("eq", a, b), "operand #1 has element type f16"),
    ("select_cond_f32", [X, X, X], dt_ops.SelectOp, "the condition (operand #0) must be i1, got f32"),
    ("select_f16", ["8xi1 [R, R]", "8xf32 [R, R]", "8xf16 [R, R]"], dt_ops.SelectOp, "operand #2 has element type f16 but operand #1 has f32"),
    ("scale_i1", ["8xi1 [R, R]"], lambda x: dt_ops.ScaleOp(x, 2.0), "scale is not defined on i1 operand #0"),
    ("cast_partial", ["8xf32 [R, P(sum)]"], lambda x: dt_ops.CastOp(x, f16), "cast rounds, so it does not distribute over P(sum)"),
    ("cast_i8", [X], lambda x: dt_ops.CastOp(x, i8), "cannot cast to i8: not a distributed tensor element type"),
    ("dropout_prob", [X], lambda x: dt_ops.DropoutOp(x, 1, 1.0), "dropout probability must be in [0, 1), got 1.0"),
    ("dropout_i32", ["8xi32 [R, R]"], lambda x: dt_ops.DropoutOp(x, 1, 0.5), "dropout needs a floating-point operand"),
    ("matmul_no_signature", [X, "16x32xf32 [S(0), R]"], dt_ops.MatmulOp, "on mesh axis #0: matmul has no signature for operand #0 S(0) x operand #1 S(0)"),
    ("matmul_sizes", [X, "8x32xf32 [R, R]"], dt_ops.MatmulOp, "contraction sizes differ"),
    ("reduce_dims", [X], lambda x: dt_ops.ReduceOp("sum", x, [2]), "reduce sum: dimension 2 is out of range for rank 2"),
    ("reduce_partial", ["8xf32 [R, P(max)]"], lambda x: dt_ops.ReduceOp("sum", x, [0]), "on mesh axis #1: reduce sum does not distribute over P(max)"),
    ("norm_split", [X], dt_ops.NormOp, "cross-rank reduction"),
    ("softmax_split", ["8x16xf32 [R, S(1)]"], lambda x: dt_ops.SoftmaxOp(x, 1), "which operand #0 splits; all-gather it first"),
    ("layernorm_weight", [X, "8xf32 [R, R]"], dt_ops.LayerNormOp, "operand #1 must have shape 16, got 8"),
    ("layernorm_not_dtensor", [i32], dt_ops.LayerNormOp, "expected a !dtensor.tensor value, got i32"),
    ("slice_split", [X], lambda x: dt_ops.SliceOp(x, [1, 0], [4, 16]), "slice cuts dimension 0, which operand #0 splits"),
    ("concat_placements", [X, "8x16xf32 [R, R]"], lambda x, y: dt_ops.ConcatOp([x, y], 1), "operand #1 is [R, R] but operand #0 is [S(0), R]"),
    ("transpose_perm", [X], lambda x: dt_ops.TransposeOp(x, [0, 0]), "not a permutation of 2 dimensions"),
    ("reshape_count", [X], lambda x: dt_ops.ReshapeOp(x, [8, 8]), "changes the element count"),
    ("reshape_split", ["8x16xf32 [R, S(1)]"], lambda x: dt_ops.ReshapeOp(x, [16, 8]), "breaks dimension 1, which operand #0 splits"),
    # collectives name the axis by its name
    ("all_reduce_of_r", ["8xf32 [R, R]"], lambda x: coll.AllReduceOp(x, MESH, ["tp"]), "on mesh axis 'tp': operand #0 must be partial P(sum), got R"),
    ("all_reduce_kind", ["8xf32 [R, P(sum)]"], lambda x: coll.AllReduceOp(x, MESH, ["tp"], "max"), "reduces with max but operand #0 is P(sum)"),
    ("unknown_axis", ["8xf32 [R, P(sum)]"], lambda x: coll.AllReduceOp(x, MESH, ["pp"]), "mesh @m has no axis 'pp' (axes: dp, tp)"),
    ("axes_order", ["8xf32 [P(sum), P(sum)]"], lambda x: coll.AllReduceOp(x, MESH, ["tp", "dp"]), "must be listed in mesh order ['dp', 'tp']"),
    ("axes_twice", ["8xf32 [P(sum), P(sum)]"], lambda x: coll.AllReduceOp(x, MESH, ["tp", "tp"]), "mesh axis listed twice"),
    ("no_axes", ["8xf32 [P(sum), P(sum)]"], lambda x: coll.AllReduceOp(x, MESH, []), "a collective needs at least one mesh axis"),
    ("coll_not_dtensor", [i32], lambda x: coll.AllGatherOp(x, MESH, ["tp"]), "'coll.all_gather' needs a !dtensor.tensor operand, got i32"),
    ("reduce_scatter_dim", ["8xf32 [R, P(sum)]"], lambda x: coll.ReduceScatterOp(x, MESH, ["tp"], 1), "dimension 1 is out of range for operand #0 of rank 1"),
    ("reduce_scatter_nesting", ["8xf32 [P(sum), S(0)]"], lambda x: coll.ReduceScatterOp(x, MESH, ["dp"], 0), "which the inner mesh axis 'tp' also splits"),
    ("all_gather_of_r", ["8xf32 [R, R]"], lambda x: coll.AllGatherOp(x, MESH, ["tp"]), "on mesh axis 'tp': operand #0 must be split S(d), got R"),
    ("all_gather_two_dims", ["8x16xf32 [S(0), S(1)]"], lambda x: coll.AllGatherOp(x, MESH, ["dp", "tp"]), "split along one dimension on all listed axes, got S(0), S(1)"),
    ("all_gather_divisible", ["10xf32 [S(0), S(0)]"], lambda x: coll.AllGatherOp(x, MESH, ["tp"]), "needs the size divisible by 8"),
    ("all_to_all_same", ["8x16xf32 [R, S(0)]"], lambda x: coll.AllToAllOp(x, MESH, ["tp"], 0), "operand #0 is already S(0): nothing to re-split"),
    ("coll_slice_partial", ["8xf32 [R, P(sum)]"], lambda x: coll.SliceOp(x, MESH, ["tp"], 0), "operand #0 must be replicated R, got P(sum)"),
    ("broadcast_split", ["8xf32 [R, S(0)]"], lambda x: coll.BroadcastOp(x, MESH, ["tp"]), "operand #0 must be full-shaped (R, P or V), got S(0)"),
    ("broadcast_root", ["8xf32 [R, R]"], lambda x: coll.BroadcastOp(x, MESH, ["tp"], root=4), "root 4 is not a rank of a group of 4"),
    ("coll_reduce_of_r", ["8xf32 [R, R]"], lambda x: coll.ReduceOp(x, MESH, ["dp"]), "on mesh axis 'dp': operand #0 must be partial P(sum), got R"),
    ("shift_split", ["8xf32 [S(0), R]"], lambda x: coll.ShiftOp(x, MESH, "dp"), "operand #0 must be V or R, got S(0)"),
    ("shift_axis", ["8xf32 [V, R]"], lambda x: coll.ShiftOp(x, MESH, "pp"), "mesh @m has no axis 'pp'"),
]
# fmt: on


@pytest.mark.parametrize(
    ("name", "args", "builder", "message"), ILLEGAL, ids=[c[0] for c in ILLEGAL]
)
def test_builder_rejects_illegal_operands(name: str, args, builder, message: str):
    block = Block(arg_types=[arg_type(a) for a in args])
    with pytest.raises(VerifyException) as info:
        builder(*block.args)
    assert message in str(info.value)


def test_concat_builder_without_inputs():
    with pytest.raises(VerifyException, match="at least one operand"):
        dt_ops.ConcatOp([], 0)


def test_collective_builder_with_too_few_placements():
    block = Block(arg_types=[dt("8xf32 [P(sum)]")])
    with pytest.raises(VerifyException, match="placements"):
        coll.AllReduceOp(block.args[0], MESH, ["tp"])  # one placement on a 2-axis mesh


def test_collective_builder_with_operand_on_another_mesh():
    block = Block(arg_types=[dt("8xf32 [R, P(sum)]", "n")])
    with pytest.raises(VerifyException, match="@n"):
        coll.AllReduceOp(block.args[0], MESH, ["tp"])  # one placement on a 2-axis mesh


# --- the verifier re-infers ---------------------------------------------------------------------


def _verify_error(module: ModuleOp) -> OpError:
    with pytest.raises(OpError) as info:
        verify_module(module)
    return info.value


def test_verifier_rejects_a_wrong_result_type():
    def body(x: SSAValue, b: SSAValue) -> list[Operation]:
        return [dt_ops.AddOp.create(operands=[x, b], result_types=[dt("8x16xf32 [R, R]")])]

    err = _verify_error(build_module([X, BIAS], body)[0])
    assert err.op.name == "dtensor.add"
    assert "does not match the inferred type !dtensor.tensor<8x16xf32, @m[S(0), R]>" in err.message


def test_verifier_names_the_axis():
    def body(x: SSAValue, y: SSAValue) -> list[Operation]:
        return [dt_ops.AddOp.create(operands=[x, y], result_types=[x.type])]

    err = _verify_error(build_module(["8xf32 [R, P(sum)]", "8xf32 [R, R]"], body)[0])
    assert err.message.startswith("on mesh axis 'tp': ")
    assert "operand #1 is R" in err.message


def test_verifier_rejects_an_undeclared_mesh():
    err = _verify_error(build_module([dt("8xf32 [R, R]", "n")], lambda x: [dt_ops.NegOp(x)])[0])
    assert "unknown mesh @n" in err.message


def test_verifier_rejects_placements_that_do_not_match_the_mesh():
    err = _verify_error(build_module(["8xf32 [R]"], lambda x: [dt_ops.NegOp(x)])[0])
    assert "has 1 placements but mesh @m has 2 axes ['dp', 'tp']" in err.message


def test_verifier_rejects_a_collective_with_a_wrong_result():
    def body(x: SSAValue) -> list[Operation]:
        op = coll.AllReduceOp(x, MESH, ["tp"])
        return [
            coll.AllReduceOp.create(
                operands=[x], result_types=[dt("8xf32 [R, P(sum)]")], properties=dict(op.properties)
            )
        ]

    err = _verify_error(build_module(["8xf32 [R, P(sum)]"], body)[0])
    assert "does not match the inferred type !dtensor.tensor<8xf32, @m[R, R]>" in err.message


def test_verifier_rejects_chunks_below_one():
    err = _verify_error(
        build_module(
            ["8xf32 [R, P(sum)]"], lambda x: [coll.AllReduceOp(x, MESH, ["tp"], chunks=0)]
        )[0]
    )
    assert "chunks must be >= 1, got 0" in err.message


def test_fill_cannot_be_partial():
    err = _verify_error(build_module([], lambda: [dt_ops.FillOp(1.0, dt("4xf32 [R, P(sum)]"))])[0])
    assert "on mesh axis 'tp': a fill cannot be P(sum)" in err.message


def test_constant_must_match_its_type():
    def body() -> list[Operation]:
        return [dt_ops.ConstantOp(const([2, 2], [1, 2, 3, 4]), dt("4xf32 [R, R]"))]

    err = _verify_error(build_module([], body)[0])
    assert "does not match the global shape and element type" in err.message


def test_update_target_must_be_a_function_argument():
    def body(x: SSAValue) -> list[Operation]:
        s = dt_ops.ScaleOp(x, 2.0)
        return [s, dt_ops.UpdateOp(s.result, x)]

    err = _verify_error(build_module([X], body)[0])
    assert "must be an argument of the enclosing function" in err.message


def test_update_twice_is_rejected():
    def body(x: SSAValue) -> list[Operation]:
        return [dt_ops.UpdateOp(x, x), dt_ops.UpdateOp(x, x)]

    err = _verify_error(build_module([X], body)[0])
    assert "function argument #0 is updated twice" in err.message


def test_update_value_must_have_the_target_type():
    def body(x: SSAValue, y: SSAValue) -> list[Operation]:
        return [dt_ops.UpdateOp(x, y)]

    err = _verify_error(build_module([X, "8x16xf32 [R, R]"], body)[0])
    assert err.op.name == "dtensor.update"
    assert "operand 'value' at position 1 does not verify" in err.message


def test_verifier_rejects_a_mesh_name_that_is_not_a_mesh():
    err = _verify_error(build_module([dt("8xf32 [R, R]", "f")], lambda x: [dt_ops.NegOp(x)])[0])
    assert "unknown mesh @f (@f is a func.func)" in err.message
