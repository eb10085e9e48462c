"""ccopt's ops parse and print through xDSL's format with shared attributes, direct building
and direct accessors (ccopt.dialects.syntax): the text and the ops are what xDSL's own format
program makes, and equal parsed attributes are one object."""

from __future__ import annotations

from io import StringIO

import pytest
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, ModuleOp, f64, i32, i64
from xdsl.irdl import IRDLOperation
from xdsl.printer import Printer

from ccopt.diagnostics import LocatedError, SourceText
from ccopt.dialects.kernel import (
    AllocOp,
    ConcatKernelOp,
    NcclAllReduceOp,
    SubviewOp,
)
from ccopt.dialects.syntax import SingleAccessor, dense_int_array
from ccopt.ir import make_context, parse_module, verify_module

BUF = "!kernel.buffer<8x16xf32, @m[S(0), R]>"
ROW = "!kernel.buffer<8x8xf32, @m[S(0), R]>"
PART = "!kernel.buffer<8x16xf32, @m[S(0), P(sum)]>"
PROGRAM = f"""builtin.module {{
  dtensor.mesh @m [dp=2, tp=4]
  func.func @f(%x: {BUF}, %y: {BUF}, %p: {PART}) {{
    %a = kernel.alloc : {BUF}
    %b = kernel.alloc {{note = 7 : i64}} : {BUF}
    %v = kernel.subview %x offsets [0, 8] : {BUF} -> {ROW}
    %w = kernel.subview %y offsets [0, 8] : {BUF} -> {ROW}
    kernel.copy %x -> %a stream 1 : {BUF}
    kernel.copy %y -> %b stream 1 {{note = true}} : {BUF}
    kernel.nccl_all_reduce sum %p -> %b over [tp] stream 1 : {PART} -> {BUF}
    func.return
  }}
}}
"""


def parse(text: str) -> ModuleOp:
    return parse_module(make_context(), SourceText("t.mlir", text))


def printed(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def ops_named(module: ModuleOp, name: str) -> list[IRDLOperation]:
    return [op for op in module.walk() if op.name == name]  # type: ignore[misc]


def test_round_trip_is_byte_identical_and_verifies() -> None:
    module = parse(PROGRAM)
    verify_module(module)
    assert printed(module) == PROGRAM
    assert printed(parse(printed(module))) == PROGRAM


def test_equal_parsed_integers_and_arrays_are_one_attribute() -> None:
    module = parse(PROGRAM)
    streams = [op.properties["stream"] for op in module.walk() if "stream" in op.properties]
    assert len(streams) == 3 and all(s is streams[0] for s in streams)
    assert streams[0] == IntegerAttr(1, i64)
    first, second = ops_named(module, "kernel.subview")
    assert first.properties["offsets"] is second.properties["offsets"]
    assert first.properties["offsets"] == DenseArrayBase.from_list(i64, [0, 8])


def test_equal_parsed_floats_are_one_attribute() -> None:
    """`prob 0.1` parsed twice is one `FloatAttr`; `0.0` and `-0.0` (equal numbers, printed
    apart) stay two; the text prints back as it was."""
    text = """dtensor.mesh @m [dp=2]
func.func @f(%x: !dtensor.tensor<8xf32, @m[R]>) {
  %0 = dtensor.dropout %x seed 7 prob 1.000000e-01 : !dtensor.tensor<8xf32, @m[R]>
  %1 = dtensor.dropout %x seed 8 prob 1.000000e-01 : !dtensor.tensor<8xf32, @m[R]>
  %2 = dtensor.scale %x by 0.000000e+00 : !dtensor.tensor<8xf32, @m[R]>
  %3 = dtensor.scale %x by -0.000000e+00 : !dtensor.tensor<8xf32, @m[R]>
  func.return
}
"""
    module = parse(text)
    first, second = ops_named(module, "dtensor.dropout")
    assert first.properties["prob"] is second.properties["prob"]
    assert first.properties["prob"] == FloatAttr(0.1, f64)
    zero, negative = (op.properties["factor"] for op in ops_named(module, "dtensor.scale"))
    assert zero is not negative
    assert "by -0.000000e+00" in printed(module) and "by 0.000000e+00" in printed(module)
    assert printed(module) == printed(parse(printed(module)))


def test_shared_arrays_are_keyed_by_value_and_type() -> None:
    assert dense_int_array(i64, [True, 0]) is dense_int_array(i64, [1, 0])  # (same bytes)
    assert dense_int_array(i64, [1]) is not dense_int_array(i32, [1])
    assert dense_int_array(i32, [1]).elt_type == i32


def test_parsed_ops_are_built_as_irdl_builds_them() -> None:
    module = parse(PROGRAM)
    alloc = ops_named(module, "kernel.alloc")[1]
    assert isinstance(alloc, AllocOp)
    assert alloc.attributes["note"] == IntegerAttr(7, i64)
    assert alloc.result.owner is alloc and alloc.result.type == alloc.results[0].type
    nccl = ops_named(module, "kernel.nccl_all_reduce")[0]
    assert isinstance(nccl, NcclAllReduceOp)
    assert nccl.scratch is None and [u.operation for u in nccl.input.uses] == [nccl]


def test_integer_keeps_its_errors() -> None:
    bad = PROGRAM.replace("stream 1 :", "stream true :", 1)
    with pytest.raises(LocatedError, match="integer"):
        parse(bad)


def test_single_accessors_read_the_defined_element() -> None:
    module = parse(PROGRAM)
    sub = ops_named(module, "kernel.subview")[0]
    assert isinstance(sub, SubviewOp)
    assert sub.source is sub.operands[0] and sub.result is sub.results[0]
    x, y, _ = module.body.block.ops.last.regions[0].blocks.first.args  # type: ignore[union-attr]
    concat = ConcatKernelOp([x, y, x], y, 0)  # a single operand after a variadic one
    assert concat.out is y and list(concat.inputs) == [x, y, x]
    assert isinstance(ConcatKernelOp.__dict__["out"], SingleAccessor)
    with pytest.raises(NotImplementedError):
        concat.out = x  # type: ignore[misc]


@pytest.mark.parametrize("values", [[], [0], [-3, 0, 1 << 40]])
def test_int_arrays_print_as_xdsl_prints_them(values: list[int]) -> None:
    from xdsl.irdl.declarative_assembly_format import DenseArrayAttributeVariable

    from ccopt.dialects.syntax import SharedIntArrayVariable

    attr = DenseArrayBase.from_list(i64, values)
    fields = {"name": "offsets", "is_property": True, "is_optional": False}
    texts = []
    for kind in (DenseArrayAttributeVariable, SharedIntArrayVariable):
        out = StringIO()
        kind(**fields, default_value=None, elt_type=i64).print_attr(Printer(stream=out), attr)
        texts.append(out.getvalue())
    assert texts[0] == texts[1] == f"[{', '.join(map(str, values))}]"


def test_remembered_traits_follow_the_class_traits() -> None:
    from xdsl.ir import Dialect
    from xdsl.irdl import irdl_op_definition, traits_def
    from xdsl.traits import IsTerminator, MemoryEffect, Pure

    from ccopt.dialects.dtensor import AddOp, YieldOp
    from ccopt.dialects.syntax import fast_syntax

    assert YieldOp.has_trait(IsTerminator) and not AddOp.has_trait(IsTerminator)
    assert AddOp.get_traits_of_type(MemoryEffect) == [Pure()]

    @irdl_op_definition
    class ProbeOp(IRDLOperation):
        name = "probe.op"
        traits = traits_def(Pure())

    fast_syntax(Dialect("probe", [ProbeOp]))
    assert ProbeOp.get_trait(Pure) == Pure() and not ProbeOp.has_trait(IsTerminator)
    ProbeOp.traits.add_trait(IsTerminator())  # (a new set of traits: looked up again)
    assert ProbeOp.has_trait(IsTerminator) and ProbeOp.get_trait(Pure) == Pure()
    assert ProbeOp.has_trait(Pure())  # (a trait object: compared, as xDSL compares it)
    traits = ProbeOp.get_traits_of_type(MemoryEffect)
    traits.clear()  # (a fresh list each time, as xDSL's)
    assert ProbeOp.get_traits_of_type(MemoryEffect) == [Pure()]


def test_lazy_traits_are_generated_on_first_question() -> None:
    from xdsl.ir import Dialect
    from xdsl.irdl import irdl_op_definition, lazy_traits_def
    from xdsl.traits import IsTerminator, Pure

    from ccopt.dialects.syntax import fast_syntax

    @irdl_op_definition
    class LazyOp(IRDLOperation):
        name = "probe.lazy"
        traits = lazy_traits_def(lambda: (Pure(),))

    fast_syntax(Dialect("probe", [LazyOp]))
    assert LazyOp.traits._traits is None  # pyright: ignore[reportPrivateUsage]
    assert LazyOp.has_trait(Pure) and not LazyOp.has_trait(IsTerminator)
    assert LazyOp.has_trait(Pure) and LazyOp.get_trait(IsTerminator) is None


def test_ops_hash_by_identity_in_c() -> None:
    """ccopt's ops hash as IRDL's do (by identity), with the C hash: usable in sets and as
    dictionary keys, two equal-looking ops are two keys."""
    from ccopt.dialects.dtensor import AddOp

    module = parse_module(make_context(), SourceText("<test>", PROGRAM))
    ops = [op for op in module.walk() if op.name.startswith("kernel.")]
    assert AddOp.__hash__ is object.__hash__
    assert all(hash(op) == object.__hash__(op) for op in ops)
    table = {op: i for i, op in enumerate(ops)}
    assert len(table) == len(ops) and all(table[op] == i for i, op in enumerate(ops))
    first, second = ops[0], ops[1]  # (two allocs of one type)
    assert first.name == second.name and first != second and first in {first}
