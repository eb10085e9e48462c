"""`init_op` builds ops as IRDL's builder does - single, optional and variadic definitions,
segment sizes - and leaves the rest (other argument forms, wrong counts) to IRDL's builder."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Block
from xdsl.irdl import IRDLOperation

from ccopt.dialects import kernel as k
from ccopt.dialects.construct import fixed_counts, init_op, link_ops
from ccopt.dialects.dtensor_type import DTensorType, R
from ccopt.program import load_program


def tensor() -> DTensorType:
    from xdsl.dialects.builtin import f32

    return DTensorType([8], f32, "m", [R])


def test_a_fixed_op_is_built_as_irdl_builds_it() -> None:
    fast = k.AllocOp(tensor(), offset=256)
    slow = k.AllocOp.__new__(k.AllocOp)
    IRDLOperation.__init__(slow, result_types=[k.BufferType(tensor())], properties=fast.properties)
    assert fixed_counts(k.AllocOp) == (0, 1, 0)
    assert fast.result_types == slow.result_types
    assert fast.properties == slow.properties and fast.attributes == slow.attributes
    record = k.EventRecordOp(1)  # a DeviceOp: its stream property, as given
    assert record.stream_index() == 1
    wait = k.EventWaitOp(record.event, 1)
    assert tuple(wait.operands) == (record.event,) and wait.event is record.event


def test_ops_without_values_share_one_empty_tuple() -> None:
    """Kernel-level ops mostly have no results (they write their operands) and allocs have no
    operands: one shared empty tuple each, which setting operands replaces, never changes."""
    a, b = k.StreamWaitOp(0, 1), k.StreamWaitOp(1, 0)
    empty = a._operands  # pyright: ignore[reportPrivateUsage]
    assert a.results is b.results is empty and b._operands is empty and not empty  # pyright: ignore[reportPrivateUsage]
    alloc = k.AllocOp(tensor())
    assert alloc._operands is empty and len(alloc.results) == 1  # pyright: ignore[reportPrivateUsage]
    a.operands = [alloc.result]
    assert tuple(a.operands) == (alloc.result,) and not b.operands and not empty
    assert [use.operation for use in alloc.result.uses] == [a]


def test_none_properties_are_dropped() -> None:
    assert "offset" not in k.AllocOp(tensor()).properties


def both_built(cls: type[IRDLOperation], **arguments: object) -> IRDLOperation:
    """The op built by `init_op`, checked against IRDL's builder's (each with fresh regions)."""
    from xdsl.ir import Region

    built = []
    for build in (init_op, IRDLOperation.__init__):
        op = cls.__new__(cls)
        build(op, **arguments, regions=[Region() for _ in cls.get_irdl_definition().regions])  # type: ignore[operator]
        built.append(op)
    fast, slow = built
    assert tuple(fast.operands) == tuple(slow.operands)
    assert fast.result_types == slow.result_types
    assert fast.properties == slow.properties and fast.attributes == slow.attributes
    assert len(fast.regions) == len(slow.regions)
    return fast


def test_variadic_and_optional_operands_get_irdl_segment_sizes() -> None:
    a, b, out, scratch = (k.AllocOp(tensor()).results[0] for _ in range(4))
    assert fixed_counts(k.ElementwiseOp) is None
    for inputs in ([a, b], [], (a,)):
        fast = both_built(k.ElementwiseOp, operands=[inputs, [out]])
        sizes = fast.properties["operandSegmentSizes"]
        assert sizes.get_values() == (len(inputs), 1)  # type: ignore[attr-defined]
    for optional in ([], [scratch], None, scratch):  # every form IRDL takes for an optional
        fast = both_built(
            k.FusedAllReduceKernelOp,
            operands=[a, [b], [out], optional],
            properties={"dim": IntegerAttr(0, i64), "stream": None},
        )
        assert "stream" not in fast.properties  # None properties dropped, as IRDL drops them


def test_flat_arguments_build_the_op_init_op_builds() -> None:
    """`fill_op` on flat operands with their group sizes makes what `init_op` makes from the
    groups: the same operands, result types, properties and segment sizes."""
    from xdsl.ir import Region

    from ccopt.dialects import sched
    from ccopt.dialects.construct import fill_op

    a, b, token = (k.AllocOp(tensor()).results[0] for _ in range(3))
    futures = [sched.FutureType(a.type), sched.FutureType(b.type)]
    for deps, inputs in (([], [a, b]), ([token], [a])):
        fast = sched.ExecuteOp.__new__(sched.ExecuteOp)
        fill_op(
            fast,
            [*deps, *inputs],
            (len(deps), len(inputs)),
            [sched.TokenType(), *futures[: len(inputs)]],
            {"stream": IntegerAttr(1, i64)},
            [Region()],
        )
        slow = sched.ExecuteOp.__new__(sched.ExecuteOp)
        init_op(
            slow,
            operands=[deps, inputs],
            result_types=[sched.TokenType(), futures[: len(inputs)]],
            properties={"stream": IntegerAttr(1, i64)},
            regions=[Region()],
        )
        assert tuple(fast.operands) == tuple(slow.operands)
        assert tuple(fast.inputs) == tuple(inputs) and tuple(fast.deps) == tuple(deps)
        assert fast.result_types == slow.result_types
        assert fast.properties == slow.properties and fast.attributes == slow.attributes
    done = sched.YieldOp.__new__(sched.YieldOp)
    fill_op(done, [a], (1,), [], {}, [])
    assert tuple(done.values) == (a,) and not done.properties


def test_other_forms_and_wrong_counts_go_to_irdl() -> None:
    op = k.AllocOp.__new__(k.AllocOp)
    with pytest.raises(ValueError, match="Expected 1 result"):
        init_op(op, result_types=[])  # one result expected: IRDL's builder says so
    a = k.AllocOp(tensor())
    op = k.ElementwiseOp.__new__(k.ElementwiseOp)
    init_op(op, operands=[[a], [a.results[0]]], regions=[[Block()]])  # an op, a block list
    assert tuple(op.operands) == (a.results[0], a.results[0])
    op = k.ElementwiseOp.__new__(k.ElementwiseOp)
    with pytest.raises(ValueError, match="Expected 2 operand"):
        init_op(op, operands=[[a.results[0]]])


def test_a_module_with_fast_built_ops_prints_and_verifies() -> None:
    module = load_program(
        "dtensor.mesh @m [tp=2]\n"
        "func.func @f(%x: !kernel.buffer<8xf32, @m[R]>) {\n"
        "  %a = kernel.alloc : !kernel.buffer<8xf32, @m[R]>\n"
        "  kernel.copy %x -> %a stream 0 : !kernel.buffer<8xf32, @m[R]>\n"
        "  func.return\n}\n"
    )
    module.verify()


def test_clone_op_copies_as_xdsl_clones() -> None:
    """`clone_op` gives what `op.clone(value_mapper=...)` gives - mapped operands, types,
    properties, attributes, location, name hints (through xDSL's setter: `h_0_1` becomes
    `h_0` on every copy) - and records the results in the mapper; an op with regions is cloned
    by xDSL."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import f32

    from ccopt.dialects.construct import clone_op

    outer = Block(arg_types=[f32, f32])
    add = arith.AddfOp(outer.args[0], outer.args[1])
    add.attributes["test.tag"] = IntegerAttr(3, i64)
    add.result.name_hint = "h_0_1"
    outer.add_op(add)
    other = Block(arg_types=[f32])
    fast_map = {outer.args[0]: other.args[0]}
    slow_map = dict(fast_map)
    fast, slow = clone_op(add, fast_map), add.clone(value_mapper=slow_map)
    assert type(fast) is type(slow) and fast is not add
    assert tuple(fast.operands) == (other.args[0], outer.args[1]) == tuple(slow.operands)
    assert fast.result_types == slow.result_types
    assert fast.properties == slow.properties and fast.properties is not add.properties
    assert fast.attributes == slow.attributes and fast.location == slow.location
    assert fast.result.name_hint == slow.result.name_hint
    assert fast_map[add.result] is fast.result and fast.parent is None
    assert {id(u.operation) for u in other.args[0].uses} == {id(fast), id(slow)}

    module = load_program(
        """
        dtensor.mesh @m [tp=2]
        func.func @f(%x: !dtensor.tensor<8xf32, @m[R]>) -> !dtensor.tensor<8xf32, @m[R]> {
          func.return %x : !dtensor.tensor<8xf32, @m[R]>
        }
        """
    )
    f = module.ops.last
    copy = clone_op(f, {})
    assert copy is not f and str(copy) == str(f)  # (regions: xDSL's clone)


def test_link_ops_appends_and_inserts_as_xdsl_does() -> None:
    """`link_ops` leaves a block as `add_ops` / `insert_ops_before` would: order, both links
    of every op, first and last op, each op's parent."""
    block, expected = Block(), Block()
    a, b, c, d = (k.EventRecordOp(s) for s in range(4))
    link_ops(block, [a, b])  # appended to an empty block
    link_ops(block, [c], a)  # before the first op
    link_ops(block, [d])  # appended after the last
    link_ops(block, [])  # nothing
    ea, eb, ec, ed = (k.EventRecordOp(s) for s in range(4))
    expected.add_ops([ea, eb])
    expected.insert_ops_before([ec], ea)
    expected.add_op(ed)
    assert [op.stream.value.data for op in block.ops] == [
        op.stream.value.data for op in expected.ops
    ]
    assert [op.stream.value.data for op in reversed(block.ops)] == [2, 0, 1, 3][::-1]
    assert block.first_op is c and block.last_op is d
    assert all(op.parent is block for op in block.ops)
