"""Alike ops keep one shape (ccopt.verifier.KeySharing.compact_shape): a verified op's key is
its operands, its place (block and the properties of the op around, one per block) and a shape
shared with every alike op, found by the identities of the objects it is made of. These check
that the sharing is as strict as a key per op: an op that differs from verified alike ops in
one detail - operand, type, property, attribute, position, block, named body - is verified
again and rejected."""

from __future__ import annotations

import gc
import weakref

import pytest
from verify_support import expect_error, negf_becomes_exp
from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.ir import Operation

from ccopt import verifier
from ccopt.diagnostics import OpError
from ccopt.dialects.attrs import i64_attr
from ccopt.dialects.dtensor_type import DTensorType, R
from ccopt.ir import verify_module
from ccopt.program import load_program

T = "!dtensor.tensor<8x4xf32, @m[S(0)]>"
W = "!dtensor.tensor<8x8xf32, @m[S(0)]>"
ALIKE = f"""
dtensor.mesh @m [tp=4]
func.func @f(%x: {T}, %y: {T}) -> {W} {{
  %a = dtensor.add %x, %y : ({T}, {T}) -> {T}
  %b = dtensor.add %a, %y : ({T}, {T}) -> {T}
  %c = dtensor.add %b, %y : ({T}, {T}) -> {T}
  %d = dtensor.add %c, %y : ({T}, {T}) -> {T}
  %j = dtensor.concat %a, %b dim 1 : ({T}, {T}) -> {W}
  %k = dtensor.concat %c, %d dim 1 : ({T}, {T}) -> {W}
  func.return %k : {W}
}}
"""


def verified() -> tuple[Operation, list[Operation]]:
    """The program, verified twice (everything remembered), and its dtensor ops in order."""
    module = load_program(ALIKE)
    verify_module(module)
    return module, [op for op in module.walk() if op.name in ("dtensor.add", "dtensor.concat")]


def memo(op: Operation) -> tuple[object, ...]:
    return getattr(op, verifier._VERIFIED)  # pyright: ignore[reportPrivateUsage]


def test_alike_ops_share_one_shape_and_one_place() -> None:
    """The memo these tests test is in use: the four adds keep one shape and one place."""
    module, (a, b, c, d, j, k) = verified()
    assert len({id(memo(op)[2]) for op in (a, b, c, d)}) == 1
    assert len({id(memo(op)[1]) for op in (a, b, c, d, j, k)}) == 1
    assert memo(j)[2] is memo(k)[2]
    assert memo(a)[2] is not memo(j)[2]


def test_an_operand_of_another_type_in_an_alike_op_is_rejected() -> None:
    """The third add reads the first concat (8x8) instead of the second add: only an operand
    differs from its alike neighbours."""
    module, (_, b, c, _, j, _) = verified()
    j.detach()
    b.parent.insert_op_after(j, b)  # type: ignore[union-attr]
    c.operands[0] = j.results[0]
    with pytest.raises(OpError, match="does not broadcast") as error:
        verify_module(module)
    assert error.value.op is c


def test_a_result_type_changed_in_an_alike_op_is_rejected() -> None:
    module, (_, _, c, *_) = verified()
    c.results[0]._type = DTensorType([8, 4], c.results[0].type.element_type, "m", [R])  # type: ignore[attr-defined]
    expect_error(module, "does not match the inferred type")


def test_a_property_changed_in_an_alike_op_is_rejected() -> None:
    """The second concat joins along dimension 0, which its operands split."""
    module, (*_, k) = verified()
    k.properties["dim"] = i64_attr(0)
    with pytest.raises(OpError, match="concat along dimension 0") as error:
        verify_module(module)
    assert error.value.op is k


def test_an_attribute_changed_in_an_alike_function_is_rejected() -> None:
    """A second, alike function gets a negative workspace: only an attribute differs."""
    module, _ = verified()
    g = module.ops.last.clone()  # type: ignore[attr-defined]
    g.properties["sym_name"] = StringAttr("g")
    module.body.block.add_op(g)  # type: ignore[attr-defined]
    verify_module(module)
    g.attributes["kernel.workspace"] = i64_attr(-1)
    expect_error(module, "kernel.workspace must be a non-negative integer")


def test_an_alike_op_moved_to_the_end_of_its_block_is_rejected() -> None:
    """The last add moves after the return: it now ends the block (part of its shape), and
    the block no longer ends with its terminator."""
    module, (_, _, _, d, _, _) = verified()
    d.detach()
    f = module.ops.last  # type: ignore[attr-defined]
    f.body.blocks.first.add_op(d)
    with pytest.raises(OpError):
        verify_module(module)


def test_an_alike_op_moved_to_an_alike_block_is_rejected() -> None:
    """Two functions alike but for their names: an add moved from the second into the first
    keeps its shape; its place (another block) differs, and its operands come from outside."""
    module, (a, *_) = verified()
    g = module.ops.last.clone()  # type: ignore[attr-defined]
    g.properties["sym_name"] = StringAttr("g")
    module.body.block.add_op(g)  # type: ignore[attr-defined]
    verify_module(module)
    moved = next(op for op in g.walk() if op.name == "dtensor.add")
    moved.detach()
    a.parent.insert_op_after(moved, a)  # type: ignore[union-attr]
    expect_error(module, "does not dominate")


P = "!kernel.buffer<8xf32, @t[P(sum)]>"
TWO_BODIES = f"""
dtensor.mesh @t [tp=4]
func.func @twice(%x: {P}, %o: {P}, %p: {P}) {{
  kernel.elementwise ins(%x) outs(%o) body @neg stream 0 : {P} -> {P}
  kernel.elementwise ins(%o) outs(%p) body @neg2 stream 0 : {P} -> {P}
  func.return
}}
kernel.body @neg {{
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
  dtensor.yield %n : f32
}}
kernel.body @neg2 {{
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
  dtensor.yield %n : f32
}}
"""


def test_an_alike_kernel_whose_named_body_changed_is_rejected() -> None:
    """Two kernels alike but for the body they name (kept outside the shared shape): the
    second body becomes non-linear, and only the second kernel's body differs."""
    module = load_program(TWO_BODIES)
    verify_module(module)
    body = [op for op in module.walk() if op.name == "kernel.body"][1]
    negf = next(op for op in body.walk() if op.name == "arith.negf")
    negf_becomes_exp(negf)
    expect_error(module, "'exp' is not linear")


def test_kept_shapes_keep_their_objects_alive() -> None:
    """Shapes are found by the identities of their objects: the table holds the shape it was
    made from, so an identity is never reused by an unequal object while it is in use."""
    from ccopt.verifier import KeySharing

    sharing = KeySharing()
    attr = IntAttr(7)
    shape = (Operation, False, (), (), (("n", attr),), ())
    kept = sharing.compact_shape(shape, None)
    assert kept == shape
    alive = weakref.ref(attr)
    del attr, shape
    gc.collect()
    assert alive() is not None
    assert sharing.compact_shape((Operation, False, (), (), (("n", IntAttr(7)),), ()), None) is kept
    other = sharing.compact_shape((Operation, False, (), (), (("n", IntAttr(8)),), ()), None)
    assert other != kept
    assert sharing.compact_shape((Operation, True, (), (), (("n", IntAttr(7)),), ()), None) != kept


UPDATES = f"""
dtensor.mesh @m [tp=4]
func.func @step(%x: {T}, %y: {T}, %z: {T}) {{
  %a = dtensor.add %x, %y : ({T}, {T}) -> {T}
  dtensor.update %x with %a : {T}
  dtensor.update %y with %a : {T}
  func.return
}}
"""


def updates_verified() -> tuple[Operation, Operation, Operation]:
    """The program above, verified (its two updates alike), its add and its last update."""
    module = load_program(UPDATES)
    verify_module(module)
    ops = list(module.walk())
    add = next(op for op in ops if op.name == "dtensor.add")
    last = [op for op in ops if op.name == "dtensor.update"][-1]
    return module, add, last


def test_alike_updates_verify_their_structure_once() -> None:
    """An update's verifier reads the op (checked once per structure, as for alike ops of
    other kinds) and, in `verify_context`, the function and the other updates."""
    from ccopt.dialects.dtensor import UpdateOp

    module, _, last = updates_verified()
    structure = verifier.structural_key(last, verifier.verification_key(last))
    assert structure is not None
    calls: list[Operation] = []
    full, context = UpdateOp.verify_, UpdateOp.verify_context

    def counted(name: str, check: object):  # noqa: ANN202
        def run(op: Operation) -> None:
            calls.append(name)  # type: ignore[arg-type]
            check(op)  # type: ignore[operator]

        return run

    z = last.parent.parent.blocks.first.args[2]  # type: ignore[union-attr]
    alike = UpdateOp(z, last.operands[1])
    last.parent.insert_op_after(alike, last)  # type: ignore[union-attr]
    try:
        UpdateOp.verify_ = counted("full", full)  # type: ignore[method-assign]
        UpdateOp.verify_context = counted("context", context)  # type: ignore[method-assign]
        verify_module(module)
    finally:
        UpdateOp.verify_, UpdateOp.verify_context = full, context  # type: ignore[method-assign]
    assert calls == ["context"]


def test_an_alike_update_of_an_updated_argument_is_rejected() -> None:
    """A third update, alike to the verified ones, updates %x again: only the uses of its
    target differ."""
    from ccopt.dialects.dtensor import UpdateOp

    module, _, last = updates_verified()
    x = last.parent.parent.blocks.first.args[0]  # type: ignore[union-attr]
    last.parent.insert_op_after(UpdateOp(x, last.operands[1]), last)  # type: ignore[union-attr]
    expect_error(module, "function argument #0 is updated twice")


def test_an_alike_update_of_a_value_that_is_no_argument_is_rejected() -> None:
    """A third update, alike to the verified ones, updates the add's result: only where its
    target comes from differs."""
    from ccopt.dialects.dtensor import UpdateOp

    module, add, last = updates_verified()
    y = last.parent.parent.blocks.first.args[1]  # type: ignore[union-attr]
    last.parent.insert_op_after(UpdateOp(add.results[0], y), last)  # type: ignore[union-attr]
    expect_error(module, r"the updated value \(operand #0\) must be an argument")


def test_an_alike_update_nested_in_an_alike_op_checks_its_context() -> None:
    """Two alike updates inside ops with regions whose structure verified whole (`DeepShapes`):
    the second one's context still counts."""
    from ccopt.verifier import DeepShapes, verify_ops

    module, _, last = updates_verified()
    covered = DeepShapes(set(), None, {})
    covered.covered_until = 10  # every op below sits inside a verified structure
    x = last.parent.parent.blocks.first.args[0]  # type: ignore[union-attr]
    from ccopt.dialects.dtensor import UpdateOp

    again = UpdateOp(x, last.operands[1])
    last.parent.insert_op_after(again, last)  # type: ignore[union-attr]
    with pytest.raises(OpError, match="updated twice"):
        verify_ops([again], [verifier.verification_key(again)], set(), None, covered)


def test_the_leaf_memo_holds_only_structures_that_verified() -> None:
    """`verify_ops` skips an op without regions when its shape object, named body object,
    operand pattern and surroundings were seen with a verified structural key (`leaves`):
    after a lowering pipeline, every op the memo would skip has its structural key among the
    verified ones - the memo answers exactly as `structural_key` and `shapes` would."""
    from pathlib import Path

    from ccopt.passes.pipeline import run_pipeline

    example = Path(__file__).parents[2] / "examples" / "megatron_mlp.mlir"
    module = load_program(example.read_text())
    run_pipeline(
        module,
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        "overlap{chunks=3},inline,convert-to-kernel,plan-memory",
    )
    state = module.__dict__[verifier._MODULE_STATE]  # pyright: ignore[reportPrivateUsage]
    shapes, kept, leaves = state[1], state[2].kept, state[6]
    assert leaves
    skipped = 0
    for op in module.walk():
        key = memo(op)
        if op.regions or len(key) not in (3, 5) or (len(key) == 5 and key[3]):
            continue
        named = key[4] if len(key) == 5 else None
        around = verifier.region_around(op.parent)
        same = verifier.same_values(key[0])  # type: ignore[arg-type]
        found = leaves.get((id(key[2]), same, around, id(named)))
        if found is not None and found[0] is key[2] and found[1] is named:
            assert verifier.structural_key(op, key, kept) in shapes
            skipped += 1
    assert skipped
