"""The cheap rewriting helpers of the optimizer passes behave like the xDSL steps they replace:
`BodyCopier` copies a scalar body as `clone_body` does, `erase_op` erases and frees an unused op,
`insert_before` links new ops in order, and reorder-elementwise turns the ops of a region into
their block versions in place (the same op objects, verified)."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import f32
from xdsl.ir import Block, Region

from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import BodyCopier, clone_body
from ccopt.ir import verify_module
from ccopt.passes.common import erase_op, insert_before
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

R = "!dtensor.tensor<8x4xf32, @m[R]>"
P = "!dtensor.tensor<8x4xf32, @m[P(sum)]>"

PROGRAM = f"""dtensor.mesh @m [dp=4]
func.func @f(%g: {P}, %w: {R}, %m: {R}) {{
  %g_sum = coll.all_reduce sum %g over [dp] : {P} -> {R}
  %m_old = dtensor.scale %m by 0.9 : {R}
  %m_new = dtensor.add %m_old, %g_sum : ({R}, {R}) -> {R}
  %w_new = dtensor.sub %w, %m_new : ({R}, {R}) -> {R}
  dtensor.update %m with %m_new : {R}
  dtensor.update %w with %w_new : {R}
  func.return
}}
"""


def fused_body() -> Region:
    module = load_program(PROGRAM)
    run_pipeline(module, "fuse-elementwise")
    (fused,) = [op for op in module.walk() if isinstance(op, dt.FusedOp)]
    return fused.regions[0]


def body_text(region: Region) -> str:
    return "\n".join(str(op) for op in region.block.ops)


def test_body_copier_copies_as_clone_body() -> None:
    body = fused_body()
    body.block.args[1].name_hint = "a"
    copier = BodyCopier(body)
    copy = copier.copy()
    assert copy is not None
    assert body_text(copy) == body_text(clone_body(body))
    assert [a.name_hint for a in copy.block.args] == [a.name_hint for a in body.block.args]
    assert not {id(op) for op in copy.block.ops} & {id(op) for op in body.block.ops}
    assert copier.copy() is not copy  # a fresh copy each time


def test_body_copier_declines_a_body_reading_an_outside_value() -> None:
    outside = Block(arg_types=[f32])
    block = Block(arg_types=[f32])
    block.add_op(arith.AddfOp(block.args[0], outside.args[0]))
    assert BodyCopier(Region(block)).copy() is None


def test_erase_op_unlinks_its_operands_and_refuses_a_used_op() -> None:
    block = Block(arg_types=[f32])
    first = arith.AddfOp(block.args[0], block.args[0])
    second = arith.AddfOp(first.result, block.args[0])
    block.add_ops([first, second])
    with pytest.raises(ValueError):
        erase_op(first)
    erase_op(second)
    assert list(block.ops) == [first]
    assert [u.operation for u in first.result.uses] == []
    assert [u.operation for u in block.args[0].uses] == [first, first]


def test_insert_before_links_new_ops_in_order() -> None:
    block = Block(arg_types=[f32])
    anchor = arith.AddfOp(block.args[0], block.args[0])
    block.add_op(anchor)
    a = arith.AddfOp(block.args[0], block.args[0])
    b = arith.AddfOp(a.result, block.args[0])
    insert_before([a, b], anchor)
    assert list(block.ops) == [a, b, anchor]
    c = arith.AddfOp(block.args[0], block.args[0])
    insert_before([c], a)
    assert list(block.ops) == [c, a, b, anchor]
    assert block.first_op is c and block.last_op is anchor and anchor.prev_op is b


def test_reorder_elementwise_rewrites_the_region_ops_in_place() -> None:
    module = load_program(PROGRAM)
    run_pipeline(module, "split-all-reduce")
    before = {id(op) for op in module.walk() if isinstance(op, dt.AddOp | dt.SubOp)}
    run_pipeline(module, "reorder-elementwise")
    verify_module(module)
    ops = [op for op in module.walk() if isinstance(op, dt.AddOp | dt.SubOp)]
    assert {id(op) for op in ops} == before  # the same ops, now on blocks
    assert all("S(0)" in str(op.results[0].type) for op in ops)
    assert [op.results[0].name_hint for op in ops] == ["m_new_s", "w_new_s"]
