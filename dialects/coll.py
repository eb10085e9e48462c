"""The coll dialect: collectives as placement conversions over mesh axes (L1).

Each op changes the placements of its operand on a set of mesh axes (`over [dp, tp]`, in mesh
order) and leaves the other axes alone:

| op | on each listed axis |
|---|---|
| `coll.all_reduce` | `P(op) -> R` |
| `coll.reduce_scatter` | `P(op) -> S(dim)` |
| `coll.all_gather` | `S(d) -> R` |
| `coll.all_to_all` | `S(d) -> S(dim)` |
| `coll.slice` | `R -> S(dim)` (local, no traffic) |
| `coll.broadcast` | `R`, `P` or `V -> R`: every rank gets the root's local value |
| `coll.reduce` | `P(op) -> P(op)`: the root holds the reduction, the others the identity |
| `coll.shift` | `V` or `R -> V`: rank c receives from rank c - offset (pipeline stages) |

```mlir
%r = coll.all_reduce sum %g over [tp] algorithm ring : !dtensor.tensor<1024xf32, @m[P(sum)]> -> !dtensor.tensor<1024xf32, @m[R]>
```
Verifiers check the transition and name the operand placement that does not fit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import lru_cache
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, SymbolRefAttr, UnitAttr, i1, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_region_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE, i64_attr
from ccopt.dialects.body import (  # noqa: F401 - NamedBodyOp re-exported (kernel, passes)
    INDEX_FORMAT,
    NamedBodyOp,
    ScalarBodyOp,
)
from ccopt.dialects.construct import init_op, value_of
from ccopt.dialects.dtensor import verify_mesh_types
from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    PartialAttr,
    Placement,
    R,
    ReductionKind,
    ReductionKindAttr,
    ReplicatedAttr,
    SplitAttr,
    V,
    VaryingAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.open_placements import has_open_types, verify_open
from ccopt.dialects.syntax import fast_syntax
from ccopt.mesh import Mesh


class Algorithm(StrEnum):
    """Which algorithm implements a collective (a hint for backends and the cost model)."""

    RING = "ring"
    TREE = "tree"
    DIRECT = "direct"
    HALVING_DOUBLING = "halving_doubling"
    HIERARCHICAL = "hierarchical"
    RECURSIVE_DOUBLING = "recursive_doubling"
    PAIRWISE = "pairwise"
    BRUCK = "bruck"


@irdl_attr_definition
class AlgorithmAttr(EnumAttribute[Algorithm], SpacedOpaqueSyntaxAttribute):
    name = "coll.algorithm"


NO_I1_REDUCTION = (ReductionKind.SUM, ReductionKind.PROD)
"""Reductions a collective refuses on i1: the interpreter's sum of booleans was OR, MLIR's addi
on i1 is XOR and an NCCL sum of bytes wraps; a product would be min (all)."""


def group_axes(mesh: Mesh, axes: Sequence[str]) -> tuple[int, ...]:
    """Mesh indices of `axes`, which must exist, be distinct and follow mesh order."""
    if not axes:
        raise InferenceError("a collective needs at least one mesh axis")
    indices: list[int] = []
    for a in axes:
        if a not in mesh.axis_names:
            raise InferenceError(
                f"mesh @{mesh.name} has no axis '{a}' (axes: {', '.join(mesh.axis_names)})"
            )
        indices.append(mesh.axis_index(a))
    if len(set(indices)) != len(indices):
        raise InferenceError(f"mesh axis listed twice in {list(axes)}")
    if indices != sorted(indices):
        raise InferenceError(
            f"mesh axes {list(axes)} must be listed in mesh order {list(mesh.axis_names)}"
        )
    return tuple(indices)


def check_split_nesting(t: DTensorType, dim: int, group: Sequence[int], mesh: Mesh) -> None:
    """A collective that splits or unsplits `dim` on `group` must nest inside the other axes that
    split `dim`: those come first in mesh order and the sizes divide, so that the group's blocks
    are the mesh-order composite blocks."""
    others = [a for a, p in enumerate(t.placement_list) if a not in group and p.split_dim == dim]
    if not others:
        return
    if max(others) > min(group):
        raise InferenceError(
            f"over '{mesh.axis_names[min(group)]}' it changes the split of dimension {dim}, "
            f"which the inner mesh axis '{mesh.axis_names[max(others)]}' also splits"
        )
    parts = prod(mesh.axis_sizes[a] for a in (*others, *group))
    size = t.get_shape()[dim]
    if size % parts:
        raise InferenceError(
            f"dimension {dim} of size {size}, also split by mesh axis "
            f"'{mesh.axis_names[others[0]]}', needs the size divisible by {parts}"
        )


class CollectiveOp(IRDLOperation, ABC):
    """A placement conversion of `input` over the mesh axes `axes`.

    Subclasses say what happens on one listed axis (`convert`) and what else the mesh must allow
    (`check`); both read the op's properties from a mapping, so that a builder can infer the result
    type before the op exists and a verifier can re-infer it afterwards.
    """

    input = operand_def(DTensorType)
    result = result_def(DTensorType)
    axes = prop_def(MeshAxesAttr)
    algorithm = opt_prop_def(AlgorithmAttr)
    chunks = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    TYPES_FORMAT: ClassVar[str] = "attr-dict `:` type($input) `->` type($result)"
    OPTIONS_FORMAT: ClassVar[str] = (
        "(`algorithm` $algorithm^)? (`chunks` $chunks^)? " + TYPES_FORMAT
    )
    TAKES_OPTIONS: ClassVar[bool] = True

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str] | MeshAxesAttr,
        properties: dict[str, Attribute],
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        v = value_of(input)
        # (an op's own `axes` attribute may be passed as it is: no attribute built and uniqued)
        axes_attr = axes if type(axes) is MeshAxesAttr else MeshAxesAttr(axes)
        props = {**properties, "axes": axes_attr}
        if algorithm is not None:
            props["algorithm"] = AlgorithmAttr(Algorithm(algorithm))
        if chunks is not None:
            props["chunks"] = i64_attr(chunks)
        if not isinstance(v.type, DTensorType):
            raise VerifyException(f"'{self.name}' needs a !dtensor.tensor operand, got {v.type}")
        if v.type.mesh_name != mesh.name:
            raise VerifyException(
                f"'{self.name}': operand {v.type} is on @{v.type.mesh_name}, not {mesh}"
            )
        if len(v.type.placement_list) != mesh.ndim:
            raise VerifyException(
                f"'{self.name}': operand {v.type} has {len(v.type.placement_list)} placements but "
                f"mesh {mesh} has {mesh.ndim} axes"
            )
        try:
            result_type = self.infer(v.type, props, mesh)
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names)) from None
        init_op(self, operands=[v], result_types=[result_type], properties=props)

    @classmethod
    @abstractmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        """The result placement on one listed axis, or raise InferenceError."""

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        """Checks that need the whole type and the mesh."""

    @classmethod
    def result_shape(cls, props: Mapping[str, Attribute], t: DTensorType) -> DTensorType:
        return t

    @classmethod
    def infer(cls, t: DTensorType, props: Mapping[str, Attribute], mesh: Mesh) -> DTensorType:
        """The result type on an operand of type `t`, or InferenceError. Remembered for the
        last few thousand (class, type, properties, mesh) (`_infer_collective`): every
        collective built or verified infers its type, and a program repeats the same few (a
        refusal is not remembered, it is raised anew)."""
        try:  # (the cache hashes the key: hashing it here first too hashed every type twice)
            return _infer_collective((cls, t, tuple(props.items()), mesh))
        except TypeError:  # (a property that is not a value; else raised again below)
            return cls.infer_type(t, props, mesh)

    @classmethod
    def infer_type(cls, t: DTensorType, props: Mapping[str, Attribute], mesh: Mesh) -> DTensorType:
        """`infer`, computed."""
        axes = props["axes"]
        assert isinstance(axes, MeshAxesAttr)
        kind = props.get("kind")
        if kind is not None and t.element_type == i1 and _reduction(props) in NO_I1_REDUCTION:
            raise InferenceError(
                f"i1 has no {_reduction(props).value}: reduce i1 values with max (any) or min (all)"
            )
        group = group_axes(mesh, axes.names)
        placements = list(t.placement_list)
        for a in group:
            try:
                placements[a] = cls.convert(props, placements[a])
            except InferenceError as e:
                raise InferenceError(e.message, a) from None
        cls.check(props, t, group, mesh)
        return cls.result_shape(props, t).with_placements(placements)

    def group(self, mesh: Mesh) -> tuple[int, ...]:
        """Mesh indices of the axes this collective spans."""
        return group_axes(mesh, self.axes.names)

    def verify_(self) -> None:
        if not self.TAKES_OPTIONS and (self.algorithm is not None or self.chunks is not None):
            raise VerifyException("takes no algorithm or chunks: it is not a collective algorithm")
        if self.chunks is not None and self.chunks.value.data < 1:
            raise VerifyException(f"chunks must be >= 1, got {self.chunks.value.data}")
        if self.algorithm is not None and not takes_algorithm(self.name, self.algorithm.data):
            raise VerifyException(
                f"has no {self.algorithm.data.value} algorithm (a {self.name} takes "
                + ", ".join(a.value for a in ALGORITHM_HINTS[self.name])
                + ")"
            )
        mesh = verify_mesh_types(self)
        if mesh is None:
            return
        if has_open_types(self):
            verify_open(self, mesh, lambda types: self.infer(types[0], self.properties, mesh))
            return
        t = self.input.type
        assert isinstance(t, DTensorType)
        try:
            expected = self.infer(t, self.properties, mesh)
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names)) from None
        if self.result.type != expected:
            raise VerifyException(
                f"result type {self.result.type} does not match the inferred type {expected}"
            )
        self.verify_chosen_algorithm(mesh)

    def verify_chosen_algorithm(self, mesh: Mesh) -> None:
        """An `algo.algorithm` the op names (lower-collectives) must be for its collective and
        its group size."""
        if ALGORITHM_ATTRIBUTE not in self.attributes:
            return
        from ccopt.dialects.algo import chosen_algorithm

        found = chosen_algorithm(self)
        assert found is not None
        want = COLLECTIVE_NAMES.get(self.name)
        check_named_algorithm(found, want, mesh.group_size(self.group(mesh)), fused=False)


@lru_cache(maxsize=4096)
def _infer_collective(key: tuple) -> DTensorType:
    cls, t, props, mesh = key
    return cls.infer_type(t, dict(props), mesh)


def _article(word: str | None) -> str:
    return "an" if word and word[0] in "aeiou" else "a"


def check_named_algorithm(found: Operation, want: str | None, ranks: int, fused: bool) -> None:
    """The algorithm a collective names is for its collective and group size, with `fn` steps
    (the body's places) exactly when the op is a fused all-reduce."""
    from ccopt.dialects.algo import AlgorithmOp

    assert isinstance(found, AlgorithmOp)
    got, size = found.collective.data, len(found.body.block.ops)
    if want != got or size != ranks:
        raise VerifyException(
            f"names @{found.sym_name.data}, {_article(got)} {got} on {size} ranks; it needs "
            f"{_article(want)} {want} on {ranks} ranks"
        )
    if found.applies_body() != fused:
        raise VerifyException(
            f"names @{found.sym_name.data}, which "
            + (
                "has no fn steps: the fused body has no place to run"
                if fused
                else "applies a fused body (fn steps): only a coll.fused_all_reduce may name it"
            )
        )


def _int(props: Mapping[str, Attribute], name: str) -> int:
    attr = props[name]
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _reduction(props: Mapping[str, Attribute]) -> ReductionKind:
    attr = props["kind"]
    assert isinstance(attr, ReductionKindAttr)
    return attr.data


def _kind_prop(kind: ReductionKind | str) -> dict[str, Attribute]:
    return {"kind": ReductionKindAttr(ReductionKind(kind))}


def _require_partial(placement: Placement, kind: ReductionKind) -> None:
    if not isinstance(placement, PartialAttr):
        raise InferenceError(f"operand #0 must be partial P({kind.value}), got {placement.short}")
    if placement.partial_kind != kind:
        raise InferenceError(f"reduces with {kind.value} but operand #0 is {placement.short}")


def _require_split(placement: Placement) -> None:
    if not isinstance(placement, SplitAttr):
        raise InferenceError(f"operand #0 must be split S(d), got {placement.short}")


def _check_dim(t: DTensorType, dim: int) -> None:
    if not 0 <= dim < t.rank:
        raise InferenceError(f"dimension {dim} is out of range for operand #0 of rank {t.rank}")


def _check_root(root: int, size: int) -> None:
    if not 0 <= root < size:
        raise InferenceError(f"root {root} is not a rank of a group of {size}")


def _common_split(t: DTensorType, group: Sequence[int]) -> int:
    dims = {t.placement_list[a].split_dim for a in group}
    if len(dims) != 1:
        got = ", ".join(t.placement_list[a].short for a in group)
        raise InferenceError(
            f"operand #0 must be split along one dimension on all listed axes, got {got}"
        )
    (d,) = dims
    assert d is not None
    return d


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """Every rank of each group gets the reduction of the group's partial values."""

    name = "coll.all_reduce"
    kind = prop_def(ReductionKindAttr)
    assembly_format = "$kind $input `over` $axes " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        kind: ReductionKind | str = ReductionKind.SUM,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        super().__init__(input, mesh, axes, _kind_prop(kind), algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        _require_partial(placement, _reduction(props))
        return R


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """Rank c of each group gets block c (along `dim`) of the group's reduction."""

    name = "coll.reduce_scatter"
    kind = prop_def(ReductionKindAttr)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$kind $input `over` $axes `dim` $dim " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        dim: int,
        kind: ReductionKind | str = ReductionKind.SUM,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        props = {**_kind_prop(kind), "dim": i64_attr(dim)}
        super().__init__(input, mesh, axes, props, algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        _require_partial(placement, _reduction(props))
        return SplitAttr(_int(props, "dim"))

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        _check_dim(t, _int(props, "dim"))
        check_split_nesting(t, _int(props, "dim"), group, mesh)


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """Every rank of each group gets the concatenation of the group's blocks."""

    name = "coll.all_gather"
    assembly_format = "$input `over` $axes " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        super().__init__(input, mesh, axes, {}, algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        _require_split(placement)
        return R

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        check_split_nesting(t, _common_split(t, group), group, mesh)


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Re-split: the blocks along the operand's split dimension become blocks along `dim`."""

    name = "coll.all_to_all"
    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$input `over` $axes `dim` $dim " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        dim: int,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        super().__init__(input, mesh, axes, {"dim": i64_attr(dim)}, algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        _require_split(placement)
        dim = _int(props, "dim")
        if placement.split_dim == dim:
            raise InferenceError(f"operand #0 is already {placement.short}: nothing to re-split")
        return SplitAttr(dim)

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        dim = _int(props, "dim")
        _check_dim(t, dim)
        check_split_nesting(t, _common_split(t, group), group, mesh)
        check_split_nesting(t, dim, group, mesh)


@irdl_op_definition
class SliceOp(CollectiveOp):
    """Each rank keeps its block of a replicated value: local, no communication."""

    name = "coll.slice"
    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$input `over` $axes `dim` $dim " + CollectiveOp.TYPES_FORMAT
    TAKES_OPTIONS: ClassVar[bool] = False
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, input: SSAValue | Operation, mesh: Mesh, axes: Sequence[str], dim: int):
        super().__init__(input, mesh, axes, {"dim": i64_attr(dim)})

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        if not isinstance(placement, ReplicatedAttr):
            raise InferenceError(f"operand #0 must be replicated R, got {placement.short}")
        return SplitAttr(_int(props, "dim"))

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        _check_dim(t, _int(props, "dim"))
        check_split_nesting(t, _int(props, "dim"), group, mesh)


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Every rank of each group gets the local value of the group's rank `root`."""

    name = "coll.broadcast"
    root = prop_def(IntegerAttr[I64])
    assembly_format = "$input `over` $axes `root` $root " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        root: int = 0,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        super().__init__(input, mesh, axes, {"root": i64_attr(root)}, algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        if isinstance(placement, SplitAttr):
            raise InferenceError(
                f"operand #0 must be full-shaped (R, P or V), got {placement.short}"
            )
        return R

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        _check_root(_int(props, "root"), mesh.group_size(group))


@irdl_op_definition
class ReduceOp(CollectiveOp):
    """The group's rank `root` gets the reduction and the others the reduction's identity, so the
    value stays P(op) with the same logical value."""

    name = "coll.reduce"
    kind = prop_def(ReductionKindAttr)
    root = prop_def(IntegerAttr[I64])
    assembly_format = "$kind $input `over` $axes `root` $root " + CollectiveOp.OPTIONS_FORMAT

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axes: Sequence[str],
        root: int = 0,
        kind: ReductionKind | str = ReductionKind.SUM,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
    ):
        props = {**_kind_prop(kind), "root": i64_attr(root)}
        super().__init__(input, mesh, axes, props, algorithm, chunks)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        _require_partial(placement, _reduction(props))
        return placement

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        _check_root(_int(props, "root"), mesh.group_size(group))


@irdl_op_definition
class ShiftOp(CollectiveOp):
    """Point-to-point along one axis: rank c sends to rank c + offset (pipeline stages). Ranks
    with no sender receive zeros unless `cyclic`. The sends and receives form one grouped
    exchange, so no rank order can deadlock."""

    name = "coll.shift"
    offset = prop_def(IntegerAttr[I64])
    cyclic = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input `over` $axes `by` $offset (`cyclic` $cyclic^)? " + CollectiveOp.TYPES_FORMAT
    )
    TAKES_OPTIONS: ClassVar[bool] = False
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        input: SSAValue | Operation,
        mesh: Mesh,
        axis: str,
        offset: int = 1,
        cyclic: bool = False,
    ):
        props: dict[str, Attribute] = {"offset": i64_attr(offset)}
        if cyclic:
            props["cyclic"] = UnitAttr()
        super().__init__(input, mesh, [axis], props)

    @classmethod
    def convert(cls, props: Mapping[str, Attribute], placement: Placement) -> Placement:
        if not isinstance(placement, VaryingAttr | ReplicatedAttr):
            raise InferenceError(
                f"moves whole per-rank values: operand #0 must be V or R, got {placement.short}"
            )
        return V

    @classmethod
    def check(
        cls, props: Mapping[str, Attribute], t: DTensorType, group: Sequence[int], mesh: Mesh
    ) -> None:
        if len(group) != 1:
            raise InferenceError(f"works along exactly one mesh axis, got {len(group)}")
        offset, size = _int(props, "offset"), mesh.axis_sizes[group[0]]
        if offset == 0:
            raise InferenceError("offset 0 moves nothing")
        if "cyclic" not in props and abs(offset) >= size:
            raise InferenceError(
                f"offset {offset} along an axis of size {size} sends nothing (every rank gets zeros)"
            )


@irdl_op_definition
class FusedAllReduceOp(NamedBodyOp):
    """CoCoNeT's fused collective: reduce-scatter `partial` along `dim`, run the scalar body on
    each rank's slice (with the other inputs, already split or broadcast), all-gather the results
    whose type is replicated on the axes and keep the others split.

    One kernel pass over the slice between the two phases of a ring all-reduce: the optimizer
    runs inside the collective, the gather phase carries the updated weights, and state (m, v)
    stays sliced.

    ```mlir
    %w1, %m1 = coll.fused_all_reduce sum %g, (%w_s, %m_s) over [dp] dim 0 : (...) -> (...[R], ...[S(0)]) {
    ^bb0(%i: i64, %gsum: f32, %w: f32, %m: f32): ...
      dtensor.yield %w_new, %m_new : f32, f32
    }
    ```
    A chunk of a larger op (overlap) carries an index box and names a module-level body:
    `coll.fused_all_reduce sum %g0, ins(...) over [tp] dim 1 index_offset [0, 8] in [6, 24]
    body @chunk_body0 : ...` (see `ScalarBodyOp`, `NamedBodyOp`).
    """

    name = "coll.fused_all_reduce"
    kind = prop_def(ReductionKindAttr)
    partial = operand_def(DTensorType)
    inputs = var_operand_def(DTensorType)
    axes = prop_def(MeshAxesAttr)
    dim = prop_def(IntegerAttr[I64])
    algorithm = opt_prop_def(AlgorithmAttr)
    chunks = opt_prop_def(IntegerAttr[I64])
    """Chunks the `overlap` pass pipelines it in with the matmul producing `partial` (its own
    `chunks` option otherwise); `fuse-collective` carries the reduce-scatter's."""
    index_offsets = opt_prop_def(DenseArrayBase.constr(i64))
    index_shape = opt_prop_def(DenseArrayBase.constr(i64))
    body_ref = opt_prop_def(SymbolRefAttr)
    outputs = var_result_def(DTensorType)
    body = opt_region_def("single_block")
    traits = traits_def(Pure())
    assembly_format = (
        "$kind $partial `,` `ins` `(` $inputs `)` `over` $axes `dim` $dim (`algorithm` $algorithm^)? "
        "(`chunks` $chunks^)? "
        + INDEX_FORMAT
        + " (`body` $body_ref^)? attr-dict `:` functional-type(operands, $outputs) $body"
    )

    def __init__(
        self,
        partial: SSAValue,
        inputs: Sequence[SSAValue],
        axes: Sequence[str] | MeshAxesAttr,
        dim: int,
        kind: ReductionKind | str | ReductionKindAttr,
        result_types: Sequence[DTensorType],
        body: Region | str,
        algorithm: Algorithm | str | None = None,
        chunks: int | None = None,
        index_box: Mapping[str, Attribute] | None = None,
    ):
        """`body`: the region, or the name of the `kernel.body` to run; `index_box`: the
        index-box properties (`index_box_props`), if any."""
        props: dict[str, Attribute] = {  # (attributes of another op may be passed as they are)
            "kind": kind
            if type(kind) is ReductionKindAttr
            else ReductionKindAttr(ReductionKind(kind)),
            "axes": axes if type(axes) is MeshAxesAttr else MeshAxesAttr(axes),
            "dim": i64_attr(dim),
            **(index_box or {}),
        }
        if algorithm is not None:
            props["algorithm"] = AlgorithmAttr(Algorithm(algorithm))
        if chunks is not None:
            props["chunks"] = i64_attr(chunks)
        if isinstance(body, str):
            props["body_ref"] = SymbolRefAttr(body)
        init_op(
            self,
            operands=[partial, list(inputs)],
            result_types=[list(result_types)],
            properties=props,
            regions=[body if isinstance(body, Region) else None],
        )

    def iteration_type(self, mesh: Mesh) -> DTensorType:
        """The reduce-scattered value: the space the body iterates over."""
        t = self.partial.type
        assert isinstance(t, DTensorType)
        return ReduceScatterOp.infer(t, self.properties, mesh)

    def gathered_type(self, iteration: DTensorType, mesh: Mesh) -> DTensorType:
        return AllGatherOp.infer(iteration, {"axes": self.axes}, mesh)

    def group(self, mesh: Mesh) -> tuple[int, ...]:
        return group_axes(mesh, self.axes.names)

    def verify_(self) -> None:
        if self.chunks is not None and self.chunks.value.data < 1:
            raise VerifyException(f"chunks must be >= 1, got {self.chunks.value.data}")
        self.check_one_body()
        mesh = verify_mesh_types(self)
        if mesh is None:
            return
        try:
            iteration = self.iteration_type(mesh)
            gathered = self.gathered_type(iteration, mesh)
            results = [r.type for r in self.outputs]
            for i, r in enumerate(results):
                if r != iteration and r != gathered:
                    raise InferenceError(
                        f"result #{i} is {r}; it must be the slice {iteration} or the gathered {gathered}"
                    )
            inputs = [v.type for v in self.inputs]
            self.check_body_against(
                [iteration, *inputs], iteration, [iteration] * len(results), implicit=1
            )
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names)) from None
        if ALGORITHM_ATTRIBUTE in self.attributes:
            from ccopt.dialects.algo import chosen_algorithm

            found = chosen_algorithm(self)
            assert found is not None
            check_named_algorithm(found, "allreduce", mesh.group_size(self.group(mesh)), True)


ALGORITHM_HINTS: dict[str, tuple[Algorithm, ...]] = {
    "coll.all_reduce": (Algorithm.RING, Algorithm.TREE, Algorithm.DIRECT,
                        Algorithm.HALVING_DOUBLING, Algorithm.HIERARCHICAL,
                        Algorithm.RECURSIVE_DOUBLING),
    "coll.reduce_scatter": (Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
                            Algorithm.HIERARCHICAL),
    "coll.all_gather": (Algorithm.RING, Algorithm.DIRECT, Algorithm.HALVING_DOUBLING,
                        Algorithm.HIERARCHICAL, Algorithm.RECURSIVE_DOUBLING, Algorithm.PAIRWISE,
                        Algorithm.BRUCK),
    "coll.all_to_all": (Algorithm.DIRECT, Algorithm.PAIRWISE, Algorithm.BRUCK),
    "coll.broadcast": (Algorithm.RING, Algorithm.TREE, Algorithm.DIRECT),
    "coll.reduce": (Algorithm.RING, Algorithm.TREE, Algorithm.DIRECT),
}  # fmt: skip
"""The algorithm hints each collective takes: those the library (`ccopt.algorithms`, which
`lower-collectives` applies) has for it. A hint it lacks had passed the verifier and was then
refused by lower-collectives (`all_gather ... algorithm tree`), or read as ring by the cost
model."""


def takes_algorithm(op_name: str, algorithm: Algorithm) -> bool:
    """Whether a collective op named `op_name` takes the hint `algorithm`."""
    return algorithm in ALGORITHM_HINTS.get(op_name, tuple(Algorithm))


COLLECTIVE_NAMES = {
    "coll.all_reduce": "allreduce",
    "coll.reduce_scatter": "reduce_scatter",
    "coll.all_gather": "allgather",
    "coll.all_to_all": "alltoall",
    "coll.broadcast": "broadcast",
    "coll.reduce": "reduce",
}
"""The algo dialect's collective (MSCCL's name) that implements each coll op."""

Coll = Dialect(
    "coll",
    [
        AllReduceOp,
        ReduceScatterOp,
        AllGatherOp,
        AllToAllOp,
        SliceOp,
        BroadcastOp,
        ReduceOp,
        ShiftOp,
        FusedAllReduceOp,
    ],
    [AlgorithmAttr],
)
fast_syntax(Coll)  # (cheaper parsing of its ops: ccopt.dialects.syntax)
