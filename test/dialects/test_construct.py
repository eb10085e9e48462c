"""`init_op` builds an op with single definitions as IRDL's builder does, and leaves the rest
(variadic definitions, wrong counts) to IRDL's builder."""

from __future__ import annotations

import pytest
from xdsl.irdl import IRDLOperation

from ccopt.dialects import kernel as k
from ccopt.dialects.construct import fixed_counts, init_op
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


def test_none_properties_are_dropped() -> None:
    assert "offset" not in k.AllocOp(tensor()).properties


def test_variadic_ops_and_wrong_counts_go_to_irdl() -> None:
    assert fixed_counts(k.ElementwiseOp) is None
    op = k.AllocOp.__new__(k.AllocOp)
    with pytest.raises(ValueError, match="Expected 1 result"):
        init_op(op, result_types=[])  # one result expected: IRDL's builder says so


def test_a_module_with_fast_built_ops_prints_and_verifies() -> None:
    module = load_program(
        "dtensor.mesh @m [tp=2]\n"
        "func.func @f(%x: !kernel.buffer<8xf32, @m[R]>) {\n"
        "  %a = kernel.alloc : !kernel.buffer<8xf32, @m[R]>\n"
        "  kernel.copy %x -> %a stream 0 : !kernel.buffer<8xf32, @m[R]>\n"
        "  func.return\n}\n"
    )
    module.verify()
