"""Verification after every pass re-checks only what changed (ccopt.verifier): these change one
thing in a verified module, the way a pass would, and expect the next verification to see it."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ArrayAttr, FunctionType, IntAttr, StringAttr
from xdsl.ir import Operation

from ccopt.diagnostics import OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType, R, S
from ccopt.ir import verify_module
from ccopt.program import load_program

T = "!dtensor.tensor<8x4xf32, @m[S(0)]>"
PROGRAM = f"""
dtensor.mesh @m [tp=4]
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %a = dtensor.add %x, %y : ({T}, {T}) -> {T}
  %b = dtensor.add %a, %y : ({T}, {T}) -> {T}
  %c = dtensor.relu %b : {T}
  func.return %c : {T}
}}
"""


def verified() -> tuple[Operation, list[Operation]]:
    module = load_program(PROGRAM)
    verify_module(module)  # a second time: everything is remembered as verified
    return module, [op for op in module.walk() if op.name.startswith("dtensor.") and op.results]


def expect_error(module: Operation, message: str) -> None:
    with pytest.raises(OpError, match=message):
        verify_module(module)


def test_a_result_type_changed_in_place_is_verified_again() -> None:
    module, (_, b, _) = verified()
    b.results[0]._type = DTensorType([8, 4], b.results[0].type.element_type, "m", [R])  # type: ignore[attr-defined]
    expect_error(module, "does not match the inferred type")


def test_a_block_argument_retyped_is_verified_again() -> None:
    module, _ = verified()
    f = module.ops.last  # type: ignore[attr-defined]
    arg = f.body.blocks.first.args[0]
    arg._type = DTensorType([8, 4], arg.type.element_type, "m", [S(1)])
    expect_error(module, "entry block arguments")


def test_an_operand_replaced_is_verified_again() -> None:
    """The relu's operand becomes a value of another shape: the relu is verified again (the new
    op, earlier in the walk, is reported first: its own type is wrong too)."""
    module, (a, _, c) = verified()
    wide = dt.ReluOp(a)
    wide.results[0]._type = DTensorType([8, 8], a.results[0].type.element_type, "m", [S(0)])  # type: ignore[attr-defined]
    a.parent.insert_op_after(wide, a)  # type: ignore[union-attr]
    c.operands[0] = wide.results[0]
    expect_error(module, "8x8xf32")
    wide.detach()
    c.operands[0] = a.results[0]
    verify_module(module)  # back to a valid module


def test_a_mesh_changed_reverifies_every_op() -> None:
    """A mesh with two axes: every type with one placement is now wrong."""
    module, _ = verified()
    mesh = next(op for op in module.walk() if isinstance(op, dt.MeshOp))
    mesh.properties["axis_names"] = ArrayAttr([StringAttr("dp"), StringAttr("tp")])
    mesh.properties["axis_sizes"] = type(mesh.axis_sizes).from_list(
        mesh.axis_sizes.elt_type, [2, 4]
    )
    expect_error(module, "placements but mesh")


def test_a_property_changed_in_place_is_verified_again() -> None:
    module, _ = verified()
    mesh = next(op for op in module.walk() if isinstance(op, dt.MeshOp))
    mesh.properties["axis_sizes"] = type(mesh.axis_sizes).from_list(mesh.axis_sizes.elt_type, [0])
    expect_error(module, "sizes must be >= 1")


def test_a_function_signature_changed_is_verified_again() -> None:
    module, (_, _, c) = verified()
    f = module.ops.last  # type: ignore[attr-defined]
    t = c.results[0].type
    f.properties["function_type"] = FunctionType.from_lists([t], [t])
    expect_error(module, "entry block arguments")


def test_a_moved_op_is_checked_for_dominance() -> None:
    """Moving the first add after its user changes only the add; the user's operand no longer
    dominates it."""
    module, (a, b, _) = verified()
    a.detach()
    b.parent.insert_op_after(a, b)  # type: ignore[union-attr]
    expect_error(module, "does not dominate")


def test_an_erased_terminator_is_noticed() -> None:
    module, (_, _, c) = verified()
    f = module.ops.last  # type: ignore[attr-defined]
    f.body.blocks.first.erase_op(f.body.blocks.first.last_op)
    expect_error(module, "terminat")


def test_an_identical_twin_does_not_hide_an_error() -> None:
    """Structurally equal ops verify alike; a changed op is a different structure."""
    module, (a, b, _) = verified()
    b.attributes["note"] = IntAttr(1)
    verify_module(module)  # an attribute nobody reads: still fine
    b.results[0]._type = DTensorType([8, 4], b.results[0].type.element_type, "m", [R])  # type: ignore[attr-defined]
    expect_error(module, "does not match the inferred type")
