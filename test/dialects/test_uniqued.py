"""Uniqued attributes (`ccopt.dialects.attrs.uniqued`, `DTensorType`'s table): equal attributes
built any way - constructor, xDSL's generic `new`, the parser - are one object, and that object
is exactly what a fresh, uncached build gives."""

from __future__ import annotations

import copy
import pickle

import pytest
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, f32
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import SourceText
from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    OpenAttr,
    PartialAttr,
    ReductionKind,
    ReductionKindAttr,
    ReplicatedAttr,
    SplitAttr,
    VaryingAttr,
)
from ccopt.dialects.kernel import BufferType, EventType
from ccopt.dialects.sched import FutureType, TokenType
from ccopt.ir import make_context, parse_module


def fresh(cls: type[Attribute], *args: object) -> Attribute:
    """A build of `cls(*args)` that bypasses the table (what the constructor did before)."""
    attr = object.__new__(cls)
    cls.__init__.__wrapped__(attr, *args)  # type: ignore[misc]
    return attr


TENSOR = DTensorType([8, 4], f32, "m", [SplitAttr(0)])
CASES = [
    (SplitAttr, (1,)),
    (SplitAttr, (IntAttr(2),)),
    (ReplicatedAttr, ()),
    (VaryingAttr, ()),
    (OpenAttr, ()),
    (PartialAttr, ("max",)),
    (ReductionKindAttr, (ReductionKind.SUM,)),
    (MeshAxesAttr, (["dp", "tp"],)),
    (MeshAxesAttr, ((StringAttr("tp"),),)),
    (TokenType, ()),
    (FutureType, (TENSOR,)),
    (EventType, ()),
    (BufferType, (TENSOR,)),
]


@pytest.mark.parametrize(("cls", "args"), CASES)
def test_equal_builds_are_one_object_equal_to_a_fresh_build(cls, args) -> None:  # noqa: ANN001
    built = cls(*args)
    assert cls(*args) is built
    uncached = fresh(cls, *args)
    assert uncached is not built and uncached == built and str(uncached) == str(built)
    params = (built.data,) if not isinstance(built, ParametrizedAttribute) else built.parameters
    generic = cls.new(params[0] if not isinstance(built, ParametrizedAttribute) else params)
    assert generic is built


def test_generic_builds_share_the_constructor_object() -> None:
    """A value first built by `new` (the parser's path) is the constructor's object too."""
    axes = MeshAxesAttr.new((ArrayAttr([StringAttr("uniq_a")]),))
    assert MeshAxesAttr(["uniq_a"]) is axes
    first = FutureType.new((DTensorType([3, 3], f32, "uniq", [ReplicatedAttr()]),))
    assert FutureType(DTensorType([3, 3], f32, "uniq", [ReplicatedAttr()])) is first


def test_parsed_types_are_the_built_ones() -> None:
    """Types and attributes in parsed IR are the objects passes build: verification keys
    compare them by identity."""
    text = """
        dtensor.mesh @m [tp=2]
        func.func @f(%x: !dtensor.tensor<8x4xf32, @m[S(0)]>) -> !dtensor.tensor<8x4xf32, @m[R]> {
          %y = coll.all_gather %x over [tp] : !dtensor.tensor<8x4xf32, @m[S(0)]> -> !dtensor.tensor<8x4xf32, @m[R]>
          func.return %y : !dtensor.tensor<8x4xf32, @m[R]>
        }
        """
    module = parse_module(make_context(), SourceText("<test>", text))
    f = module.ops.last
    gather = f.body.blocks[0].first_op
    assert f.args[0].type is TENSOR
    assert gather.results[0].type is DTensorType([8, 4], f32, "m", [ReplicatedAttr()])
    assert gather.properties["axes"] is MeshAxesAttr(["tp"])


def test_a_failed_build_is_not_remembered() -> None:
    for _ in range(2):
        with pytest.raises(VerifyException):
            SplitAttr(StringAttr("not a dimension"))  # type: ignore[arg-type]


def test_arguments_that_are_not_values_build_afresh() -> None:
    """A generator (hashed by identity, used once) is not a key: the build is equal, not
    remembered."""
    built = MeshAxesAttr(a for a in ["x_gen"])
    assert built == MeshAxesAttr(["x_gen"]) and built is not MeshAxesAttr(["x_gen"])
    assert SplitAttr(True) is not SplitAttr(1)  # (with its type: 1 and True differ)
    assert SplitAttr(IntAttr(True)) is not SplitAttr(IntAttr(1))
    assert SplitAttr(IntAttr(1)) is SplitAttr(1)  # (equal parameters: one object)


def test_copies_and_pickles_leave_the_table_alone() -> None:
    """`copy`/`pickle` build through `cls.__new__(cls)`: a fresh object (for a class with
    parameters), so restoring its state never overwrites the shared one."""
    axes = MeshAxesAttr(["dp"])
    for clone in (copy.copy(axes), copy.deepcopy(axes), pickle.loads(pickle.dumps(axes))):
        assert clone == axes
    assert MeshAxesAttr(["dp"]) is axes and axes.names == ("dp",)
    assert pickle.loads(pickle.dumps(ReplicatedAttr())) == ReplicatedAttr()


def test_types_inside_are_keyed_by_identity_and_kept_alive() -> None:
    """A buffer or future of a tensor type names the (uniqued) tensor type by identity; the
    tables keep the arguments they are keyed by alive, so an identity is never reused."""
    import gc

    tensor = DTensorType([5, 7], f32, "m_alive", [SplitAttr(1)])
    buffer = BufferType(tensor)
    assert BufferType(DTensorType.new(tensor.parameters)) is buffer
    assert FutureType.new((tensor,)) is FutureType(tensor)
    del tensor
    gc.collect()
    other = DTensorType([7, 5], f32, "m_alive", [SplitAttr(0)])
    assert BufferType(other) is not buffer and BufferType(other).tensor is other
