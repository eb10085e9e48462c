"""A body verified once stands for the bodies of the same structure (ccopt.verifier.DeepShapes):
a model repeats one fused body per layer, and its nested ops are checked once per distinct
structure. These check that the memo is as strict as checking every body: a body that differs
from a verified one only in the detail a verifier looks at is checked, and rejected."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation

from ccopt.diagnostics import OpError, SourceText
from ccopt.dialects import dtensor as dt
from ccopt.ir import make_context, parse_module, verify_module

T = "!dtensor.tensor<8x4xf32, @m[S(0)]>"
GOOD = """^bb0(%i: i64, %p: f32, %q: f32):
    %s = arith.addf %p, %q : f32
    %t = arith.mulf %s, %q : f32
    dtensor.yield %t : f32"""


def program(bodies: list[str]) -> Operation:
    """A function of chained fused ops, one per body, parsed without verifying it."""
    lines, x = [], "%x"
    for n, body in enumerate(bodies):
        lines.append(f"  %f{n} = dtensor.fused ins({x}, %y) : ({T}, {T}) -> {T} {{\n  {body}\n  }}")
        x = f"%f{n}"
    text = (
        f"dtensor.mesh @m [tp=4]\nfunc.func @f(%x: {T}, %y: {T}) -> {T} {{\n"
        + "\n".join(lines)
        + f"\n  func.return {x} : {T}\n}}\n"
    )
    return parse_module(make_context(), SourceText("<test>", text))


def fused(module: Operation) -> list[Operation]:
    return [op for op in module.walk() if isinstance(op, dt.FusedOp)]


def test_alike_bodies_run_their_nested_verifiers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three bodies of one structure in one verification: the nested ops' verifiers run for
    the first only (the memo is used, so the tests below test it)."""
    from xdsl.dialects.arith import AddfOp

    runs: list[Operation] = []
    check = AddfOp.verify_

    def counted(op: AddfOp) -> None:
        runs.append(op)
        check(op)

    monkeypatch.setattr(AddfOp, "verify_", counted)
    verify_module(program([GOOD, GOOD, GOOD]))
    assert len(runs) == 1


def test_a_body_yielding_the_wrong_value_after_good_ones_is_rejected() -> None:
    """The third body yields the index (i64) where the good ones yield the product (f32): one
    operand of one nested op differs, in the same verification that learned the good body."""
    bad = GOOD.replace("dtensor.yield %t : f32", "dtensor.yield %i : i64")
    with pytest.raises(OpError, match="yield"):
        verify_module(program([GOOD, GOOD, bad]))


def test_a_nested_result_type_differing_after_good_ones_is_rejected() -> None:
    """The third body's add gets an f64 result before the first verification: only a nested
    result type differs from the good bodies."""
    module = program([GOOD, GOOD, GOOD])
    add = next(op for op in fused(module)[2].walk() if op.name == "arith.addf")
    add.results[0]._type = f64  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(OpError) as error:
        verify_module(module)
    assert error.value.op in (add, *fused(module)[2].walk())


def test_a_nested_op_retyped_in_a_verified_body_is_rejected() -> None:
    """A later verification: one nested op of the second of three verified, alike bodies gets
    a wrong result type in place. Its body no longer has the verified structure."""
    module = program([GOOD, GOOD, GOOD])
    verify_module(module)
    add = next(op for op in fused(module)[1].walk() if op.name == "arith.addf")
    add.results[0]._type = f64  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(OpError):
        verify_module(module)


def test_a_copy_of_a_verified_body_edited_before_its_first_verification_is_rejected() -> None:
    """A pass copies a verified fused op (as passes copy bodies per layer) and edits one nested
    op of the copy before the next verification: the copy is new and differs from the
    verified structure in that op alone."""
    module = program([GOOD, GOOD])
    verify_module(module)
    first, second = fused(module)
    copy = first.clone()
    second.parent.insert_op_after(copy, second)  # type: ignore[union-attr]
    verify_module(module)  # an unedited copy verifies (by the memo)
    copy2 = first.clone()
    second.parent.insert_op_after(copy2, second)  # type: ignore[union-attr]
    body = copy2.regions[0].blocks.first
    yield_op = body.last_op
    yield_op.operands = (body.args[0],)  # type: ignore[union-attr]
    with pytest.raises(OpError, match="yield"):
        verify_module(module)


def test_a_body_reading_one_value_twice_is_told_from_one_reading_two() -> None:
    """Bodies alike but for which block argument an op reads: `%p + %p` and `%p + %q` have
    different structures, so the memo of one says nothing about the other (the second here is
    wrong: an i64 read as f32)."""
    good = GOOD.replace("arith.addf %p, %q", "arith.addf %p, %p")
    bad = GOOD.replace(
        "%s = arith.addf %p, %q : f32", '%s = "arith.addf"(%p, %i) : (f32, i64) -> f32'
    )
    verify_module(program([good, good]))
    with pytest.raises(OpError):
        verify_module(program([good, good, bad]))
