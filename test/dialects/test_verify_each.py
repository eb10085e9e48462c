"""Verification after every pass re-checks only what changed (ccopt.verifier): these change one
thing in a verified module, the way a pass would, and expect the next verification to see it."""

from __future__ import annotations

from verify_support import expect_error, negf_becomes_exp
from xdsl.dialects.builtin import ArrayAttr, FunctionType, IntAttr, StringAttr
from xdsl.ir import Operation

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


def test_a_value_from_outside_a_function_is_rejected() -> None:
    """A verified function's op starts using another function's value: xDSL's IsolatedFromAbove
    check is left to the walk's dominance check (a fresh scope per function), which must see
    it although only the user changed."""
    module, (a, _, c) = verified()
    other = module.ops.last.clone()  # type: ignore[attr-defined]
    other.properties["sym_name"] = StringAttr("g")
    module.body.block.add_op(other)  # type: ignore[attr-defined]
    verify_module(module)
    c.operands[0] = next(op for op in other.walk() if op.name == "dtensor.add").results[0]
    expect_error(module, "operand #0 does not dominate this use")


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


V = "!kernel.buffer<64xf32, @t[R]>"
KERNELS = f"""
dtensor.mesh @t [tp=4]
func.func @chain(%x: {V}, %result0: {V}) attributes {{kernel.results = 1 : i64, kernel.updated = array<i64>}} {{
  %a = kernel.alloc : {V}
  kernel.copy %x -> %a stream 0 : {V}
  %b = kernel.alloc : {V}
  kernel.copy %a -> %b stream 0 : {V}
  %c = kernel.alloc : {V}
  kernel.copy %b -> %c stream 0 : {V}
  kernel.copy %c -> %result0 stream 0 : {V}
  func.return
}}
"""


def planned() -> tuple[Operation, list[Operation]]:
    """A kernel-level chain after `plan-memory` and its verification (which took the plan the
    pass handed over): %a and %c share bytes, %b has its own."""
    from ccopt.passes.pipeline import run_pipeline

    module = load_program(KERNELS)
    run_pipeline(module, "plan-memory")
    allocs = [op for op in module.walk() if op.name == "kernel.alloc"]
    assert [a.byte_offset() for a in allocs] == [0, 256, 0]  # type: ignore[attr-defined]
    return module, allocs


def test_an_offset_moved_after_plan_memory_is_checked() -> None:
    """Moving %b onto %a's bytes (its writer reads %a) breaks the plan: the plan the pass handed
    over is for the function as it was, so the checker runs again."""
    from ccopt.dialects.attrs import i64_attr

    module, (_, b, _) = planned()
    b.offset = i64_attr(0)  # type: ignore[attr-defined]
    expect_error(module, "overlap those of %a")


def test_a_plan_edited_before_its_first_verification_is_checked() -> None:
    """An edit between `plan-memory` and the next verification (a pass that runs unverified
    after it) is not covered by the plan the pass made."""
    from ccopt.dialects.attrs import i64_attr
    from ccopt.passes.plan_memory import plan_function

    module = load_program(KERNELS)
    f = module.ops.last  # type: ignore[attr-defined]
    plan_function(f, reuse=True)
    b = [op for op in f.walk() if op.name == "kernel.alloc"][1]
    b.offset = i64_attr(0)  # type: ignore[attr-defined]
    expect_error(module, "overlap those of %a")


def test_an_op_moved_after_plan_memory_is_checked() -> None:
    """%c's writer moved before %a's reader: %c may no longer take %a's bytes; nothing but the
    position of one op changed."""
    module, (a, _, c) = planned()
    block = a.parent
    writer_of_c = c.next_op
    reader_of_a = a.next_op.next_op.next_op  # type: ignore[union-attr]
    assert reader_of_a.name == "kernel.copy" and reader_of_a.operands[0] is a.results[0]  # type: ignore[union-attr]
    c.detach()
    writer_of_c.detach()  # type: ignore[union-attr]
    block.insert_ops_before([c, writer_of_c], reader_of_a)  # type: ignore[union-attr, list-item]
    expect_error(module, "overlap those of %a")


def test_a_workspace_shrunk_after_plan_memory_is_checked() -> None:
    from ccopt.dialects.attrs import i64_attr

    module, _ = planned()
    module.ops.last.attributes["kernel.workspace"] = i64_attr(256)  # type: ignore[attr-defined]
    expect_error(module, "exceed the workspace")


def test_a_mesh_resized_after_plan_memory_is_checked() -> None:
    """A buffer's bytes depend on its mesh: four times the rows per rank's share would not fit."""
    module, _ = planned()
    mesh = next(op for op in module.walk() if isinstance(op, dt.MeshOp))
    mesh.properties["axis_sizes"] = type(mesh.axis_sizes).from_list(mesh.axis_sizes.elt_type, [1])
    verify_module(module)  # R placements: the same bytes per rank, the plan still holds


P = "!kernel.buffer<8xf32, @t[P(sum)]>"
NAMED_BODY = f"""
dtensor.mesh @t [tp=4]
func.func @twice(%x: {P}, %o: {P}, %p: {P}) {{
  kernel.elementwise ins(%x) outs(%o) body @neg stream 0 : {P} -> {P}
  kernel.elementwise ins(%o) outs(%p) body @neg stream 0 : {P} -> {P}
  func.return
}}
kernel.body @neg {{
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
  dtensor.yield %n : f32
}}
"""


def test_a_named_body_changed_in_place_reverifies_its_kernels() -> None:
    """The walk looks each named body up once: a body edited after a verification (negf
    becomes exp, which a partial sum may not meet) is seen by the kernels that name it."""
    module = load_program(NAMED_BODY)
    verify_module(module)
    negf = next(op for op in module.walk() if op.name == "arith.negf")
    negf_becomes_exp(negf)
    expect_error(module, "'exp' is not linear")


def test_kept_key_parts_keep_their_objects_alive() -> None:
    """Key parts are found by the identities of their objects: the table that maps them holds
    the objects, so an identity is never reused by an unequal object while it is in use."""
    import gc
    import weakref

    from ccopt.verifier import KeySharing

    sharing = KeySharing()
    attr = IntAttr(7)
    part = (("n", attr),)
    kept = sharing.keep(part, of_types=False)
    assert kept == part
    alive = weakref.ref(attr)
    del attr, part
    gc.collect()
    assert alive() is not None
    assert sharing.keep((("n", IntAttr(7)),), of_types=False) is kept
    assert sharing.keep((("n", IntAttr(8)),), of_types=False) != kept


def test_a_type_judged_fine_is_judged_again_under_another_mesh() -> None:
    """Tensor types keep their verdicts between verifications (`check_tensor_types`), but only
    while the meshes stay: an argument nobody reads is wrong once its mesh gets a second axis."""
    unread = f"""
dtensor.mesh @m [tp=4]
func.func @f(%x: {T}, %unread: {T}) -> {T} {{
  func.return %x : {T}
}}
"""
    module = load_program(unread)
    verify_module(module)
    mesh = next(op for op in module.walk() if isinstance(op, dt.MeshOp))
    mesh.properties["axis_names"] = ArrayAttr([StringAttr("dp"), StringAttr("tp")])
    mesh.properties["axis_sizes"] = type(mesh.axis_sizes).from_list(
        mesh.axis_sizes.elt_type, [2, 4]
    )
    expect_error(module, "placements but mesh")


def test_the_walk_gives_ops_without_a_location_what_inherit_locations_gives() -> None:
    """After a pass, `verify_module(locate=True)` locates new ops in its walk, exactly as
    `inherit_locations` would: by the op before, else the op around (itself just located)."""
    from xdsl.dialects.builtin import UnknownLoc

    from ccopt.ir import inherit_locations

    program = """
dtensor.mesh @t [tp=4]
func.func @f(%x: !kernel.buffer<8xf32, @t[P(sum)]>) {
  func.return
}
kernel.body @neg {
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
  %m = arith.negf %n : f32
  dtensor.yield %m : f32
}
"""

    def unlocated() -> Operation:
        module = load_program(program)
        for op in module.walk():
            if op.name in ("kernel.body", "arith.negf", "func.return"):
                op.location = UnknownLoc()
        return module

    expected, located = unlocated(), unlocated()
    inherit_locations(expected)
    verify_module(located, locate=True)
    wanted = [op.location for op in expected.walk()]
    assert [op.location for op in located.walk()] == wanted
    assert not any(isinstance(loc, UnknownLoc) for loc in wanted[1:])
    assert len(set(map(str, wanted))) > 2
