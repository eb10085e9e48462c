"""The reference interpreter's collectives against numpy on global values, and the identities
between collectives that the passes rely on.

A collective's effect is a function of the global (stacked) array: all_reduce and reduce_scatter
reduce the partial dimensions of the group's axes, reduce puts that reduction at the root and
the identity elsewhere, broadcast picks the root's coordinate, shift moves coordinates along an
axis, and all_gather, all_to_all and slice leave the global array alone and only change which
block a rank holds. Each test computes that global array with numpy and checks every rank's shard
bitwise: reductions combine in rank order, so they are reproducible exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from interp_support import (
    BF16,
    F16,
    F32,
    F64,
    I1,
    I32,
    I64,
    MESH_SHAPES,
    all_coords,
    bitwise_equal,
    candidates,
    fold,
    global_input,
    identity_of,
    ints,
    make_mesh,
    meshes,
    one_partial_kind,
    program,
    run,
    shard_of,
    stacked_axes,
)
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i64
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects import coll
from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    P,
    PartialAttr,
    Placement,
    R,
    ReductionKind,
    ReductionKindAttr,
    S,
    V,
)
from ccopt.interpreters.distributed import numpy_dtype
from ccopt.mesh import Mesh

SETTINGS = settings(max_examples=50, deadline=None)
IDENTITY = settings(max_examples=40, deadline=None)

KINDS = list(ReductionKind)
OPS = {
    "all_reduce": coll.AllReduceOp,
    "reduce_scatter": coll.ReduceScatterOp,
    "all_gather": coll.AllGatherOp,
    "all_to_all": coll.AllToAllOp,
    "slice": coll.SliceOp,
    "broadcast": coll.BroadcastOp,
    "reduce": coll.ReduceOp,
    "shift": coll.ShiftOp,
}
TAKES_OPTIONS = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce"}

# sizes that are often divisible by the group (nested splits need it) and often not
coll_dims = st.one_of(st.integers(1, 9), st.sampled_from([4, 8, 12, 16, 24]))


@dataclass
class Coll:
    """One collective: op name, mesh axes (indices, mesh order) and its properties."""

    op: str
    group: tuple[int, ...]
    kind: ReductionKind | None = None
    dim: int | None = None
    root: int | None = None
    offset: int | None = None
    cyclic: bool = False
    options: str = ""
    extra: dict = field(default_factory=dict)

    def props(self, mesh: Mesh) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {
            "axes": MeshAxesAttr([mesh.axis_names[a] for a in self.group])
        }
        if self.kind is not None:
            props["kind"] = ReductionKindAttr(self.kind)
        for name in ("dim", "root", "offset"):
            if getattr(self, name) is not None:
                props[name] = IntegerAttr(getattr(self, name), i64)
        if self.cyclic:
            props["cyclic"] = UnitAttr()
        return props

    def infer(self, t: DTensorType, mesh: Mesh) -> DTensorType:
        return OPS[self.op].infer(t, self.props(mesh), mesh)

    def line(
        self, mesh: Mesh, src: str, tin: DTensorType, tout: DTensorType, dst: str = "%r"
    ) -> str:
        axes = ", ".join(mesh.axis_names[a] for a in self.group)
        kind = f" {self.kind.value}" if self.kind is not None else ""
        attrs = {
            "reduce_scatter": f" dim {self.dim}",
            "all_to_all": f" dim {self.dim}",
            "slice": f" dim {self.dim}",
            "broadcast": f" root {self.root}",
            "reduce": f" root {self.root}",
            "shift": f" by {self.offset}" + (" cyclic" if self.cyclic else ""),
        }.get(self.op, "")
        return (
            f"{dst} = coll.{self.op}{kind} {src} over [{axes}]{attrs}{self.options} : "
            f"{tin} -> {tout}"
        )


# --- the collectives on global arrays ---------------------------------------------------------


def group_size(mesh: Mesh, group: Sequence[int]) -> int:
    return int(np.prod([mesh.axis_sizes[a] for a in group]))


def group_coords(mesh: Mesh, group: Sequence[int], index: int) -> dict[int, int]:
    """Mesh coordinates on the group's axes of group member `index` (mixed radix, mesh order)."""
    out = {}
    for a in reversed(group):
        out[a] = index % mesh.axis_sizes[a]
        index //= mesh.axis_sizes[a]
    return out


def reduce_dims(
    x: np.ndarray, t: DTensorType, axes: Sequence[int], kind: ReductionKind
) -> np.ndarray:
    """Fold the leading dims of `x` (stacked per `t`) that belong to mesh `axes`, in group order."""
    lead = stacked_axes(t)
    pos = [lead.index(a) for a in axes]
    rest = [i for i in range(x.ndim) if i not in pos]
    moved = np.transpose(x, pos + rest)
    parts = moved.reshape(int(np.prod(moved.shape[: len(pos)])), *moved.shape[len(pos) :])
    return fold(kind, list(parts))


def apply_global(
    c: Coll, x: np.ndarray, tin: DTensorType, tout: DTensorType, mesh: Mesh
) -> np.ndarray:
    """The result's global (stacked) array."""
    lead = stacked_axes(tin)
    if c.op in ("all_reduce", "reduce_scatter"):
        return reduce_dims(x, tin, c.group, c.kind)
    if c.op in ("all_gather", "all_to_all", "slice"):
        return x
    if c.op == "broadcast":
        at = group_coords(mesh, c.group, c.root)
        return x[tuple(at[a] if a in at else slice(None) for a in lead)]
    if c.op == "reduce":
        total = reduce_dims(x, tin, c.group, c.kind)
        out = np.empty_like(x)
        out[...] = identity_of(c.kind, x.dtype)
        at = group_coords(mesh, c.group, c.root)
        out[tuple(at[a] if a in at else slice(None) for a in lead)] = total
        return out
    if c.op == "shift":
        (axis,) = c.group
        n = mesh.axis_sizes[axis]
        out_lead = stacked_axes(tout)
        pos = out_lead.index(axis)
        if axis not in lead:  # R -> V: every coordinate starts with the same value
            x = np.stack([x] * n, axis=pos)
        out = np.zeros_like(x)
        for i in range(n):
            src = i - c.offset
            if c.cyclic:
                src %= n
            if 0 <= src < n:
                out[(slice(None),) * pos + (i,)] = x[(slice(None),) * pos + (src,)]
        return out
    raise AssertionError(c.op)


def gathered(y: np.ndarray, t: DTensorType) -> np.ndarray:
    """The logical value of a stacked array: partial dims folded in rank order, V dims kept."""
    lead = stacked_axes(t)
    p_axes = [a for a in lead if isinstance(t.placement_list[a], PartialAttr)]
    if not p_axes:
        return y
    (kind,) = {t.placement_list[a].partial_kind for a in p_axes}
    return reduce_dims(y, t, p_axes, kind)


def check_shards(
    res_shards: Sequence[np.ndarray], y: np.ndarray, t: DTensorType, mesh: Mesh
) -> None:
    for rank, c in enumerate(all_coords(mesh)):
        want = shard_of(y, t, mesh, c)
        assert bitwise_equal(res_shards[rank], np.array(want)), (
            f"rank {rank} {c}: got\n{res_shards[rank]}\nexpected\n{want}"
        )


# --- drawing legal collectives ------------------------------------------------------------------


def data_type(kind: ReductionKind | None) -> st.SearchStrategy:
    types = [F32, F32, F64, F16, BF16, I32, I64]
    if kind in (None, ReductionKind.MAX, ReductionKind.MIN):
        types.append(I1)
    return st.sampled_from(types)


def domain_for(kind: ReductionKind | None, elt) -> object:
    if kind is ReductionKind.PROD:
        if elt in (I32, I64):
            return ints(-2, 2)
        return lambda rng, s: rng.uniform(0.5, 1.5, s) * rng.choice([-1.0, 1.0], s)
    return None


@st.composite
def group_of(draw, mesh: Mesh, size: int | None = None) -> tuple[int, ...]:
    axes = range(mesh.ndim)
    if size is None:
        size = draw(st.integers(1, mesh.ndim))
    return tuple(sorted(draw(st.permutations(axes))[:size]))


@st.composite
def collective_cases(draw, op: str, mesh_shapes=None):
    """(mesh, collective, operand type, result type) with placements the op's inference accepts."""
    mesh = draw(meshes if mesh_shapes is None else st.sampled_from(mesh_shapes).map(make_mesh))
    group = draw(group_of(mesh, 1 if op == "shift" else None))
    kind = (
        draw(st.sampled_from(KINDS)) if op in ("all_reduce", "reduce_scatter", "reduce") else None
    )
    elt = draw(data_type(kind))
    min_rank = {"all_reduce": 0, "broadcast": 0, "reduce": 0, "shift": 0, "all_to_all": 2}.get(
        op, 1
    )
    shape = tuple(draw(st.lists(coll_dims, min_size=min_rank, max_size=3)))
    rank = len(shape)
    c = Coll(op, group, kind)
    n = group_size(mesh, group)
    on_group: Placement | None = None
    if op in ("all_reduce", "reduce_scatter", "reduce"):
        on_group = P(kind)
    elif op in ("all_gather", "all_to_all"):
        on_group = S(draw(st.integers(0, rank - 1)))
    elif op == "slice":
        on_group = R
    if op in ("reduce_scatter", "slice"):
        c.dim = draw(st.integers(0, rank - 1))
    if op == "all_to_all":
        others = [d for d in range(rank) if d != on_group.split_dim]
        assume(others)
        c.dim = draw(st.sampled_from(others))
    if op in ("broadcast", "reduce"):
        c.root = draw(st.integers(0, n - 1))
    if op == "shift":
        size = mesh.axis_sizes[group[0]]
        c.cyclic = draw(st.booleans())
        bound = 2 * size + 1 if c.cyclic else size - 1
        offsets = [o for o in range(-bound, bound + 1) if o != 0]
        assume(offsets)
        c.offset = draw(st.sampled_from(offsets))
    if op in TAKES_OPTIONS:
        hints = [h.value for h in coll.ALGORITHM_HINTS[f"coll.{op}"]]  # (those it takes)
        algorithm = draw(st.sampled_from(["", *(f" algorithm {h}" for h in hints)]))
        chunks = draw(st.sampled_from(["", "", " chunks 2"]))
        c.options = algorithm + chunks
    placements = []
    cands = candidates(rank)
    for a in range(mesh.ndim):
        if a not in group:
            placements.append(draw(st.sampled_from(cands)))
        elif on_group is not None:
            placements.append(on_group)
        elif op == "broadcast":
            placements.append(draw(st.sampled_from([R, V, *(P(k) for k in KINDS)])))
        else:  # shift
            placements.append(draw(st.sampled_from([V, R])))
    outer = [a for a in range(mesh.ndim) if a < min(group)]
    if (
        op in ("reduce_scatter", "all_gather", "all_to_all", "slice")
        and outer
        and draw(st.booleans())
    ):
        # a composite split: outer axes split the dimension the op splits or unsplits, nested
        d = c.dim if op in ("reduce_scatter", "slice") else on_group.split_dim
        if op == "all_to_all" and draw(st.booleans()):
            d = c.dim
        nest = [a for a in outer if draw(st.booleans())] or outer[-1:]
        for a in nest:
            placements[a] = S(d)
        parts = group_size(mesh, (*nest, *group))
        shape = tuple(parts * draw(st.integers(1, 3)) if e == d else s for e, s in enumerate(shape))
    tin = DTensorType(shape, elt, "m", placements)
    try:
        tout = c.infer(tin, mesh)
    except VerifyException:
        # most often another axis splits the same dimension out of order: keep it replicated
        tin = DTensorType(
            shape,
            elt,
            "m",
            [p if a in group or p.split_dim is None else R for a, p in enumerate(placements)],
        )
        try:
            tout = c.infer(tin, mesh)
        except VerifyException:
            assume(False)
            raise
    assume(one_partial_kind(tout))
    return mesh, c, tin, tout


@pytest.mark.parametrize("op", list(OPS))
@SETTINGS
@given(data=st.data())
def test_collective(op: str, data: st.DataObject) -> None:
    mesh, c, tin, tout = data.draw(collective_cases(op))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="rng seed"))
    x = global_input(rng, tin, mesh, domain_for(c.kind, tin.element_type))
    res = run(program(mesh, [tin], c.line(mesh, "%a0", tin, tout), [("%r", tout)]), [x])
    y = apply_global(c, x, tin, tout, mesh)
    check_shards(res.shards["result0"], y, tout, mesh)
    assert bitwise_equal(res.outputs["result0"], np.array(gathered(y, tout)))


def test_all_reduce_sums_in_rank_order() -> None:
    """Float addition is not associative: the partials combine as ((x0 + x1) + x2) + x3."""
    mesh = make_mesh((4,))
    t, rt = DTensorType((1,), F32, "m", [P()]), DTensorType((1,), F32, "m", [R])
    x = np.array([[1e8], [1.0], [-1e8], [1.0]], np.float32)
    res = run(
        program(mesh, [t], f"%r = coll.all_reduce sum %a0 over [x] : {t} -> {rt}", [("%r", rt)]),
        [x],
    )
    assert all(s.tolist() == [1.0] for s in res.shards["result0"])  # ((1e8 + 1) - 1e8) + 1


def test_shift_by_hand() -> None:
    """Stage s sends to stage s + 1: stage 0 gets zeros; cyclic, it gets the last stage's value."""
    mesh = make_mesh((3, 2))
    t = DTensorType((2,), I32, "m", [V, R])
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int32)
    for cyclic, first in [("", [0, 0]), (" cyclic", [5, 6])]:
        line = f"%r = coll.shift %a0 over [x] by 1{cyclic} : {t} -> {t}"
        out = run(program(mesh, [t], line, [("%r", t)]), [x]).outputs["result0"]
        assert out.tolist() == [first, [1, 2], [3, 4]]


# --- identities -----------------------------------------------------------------------------------


def seed_rng(data: st.DataObject) -> np.random.Generator:
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="rng seed"))


def legal(c: Coll, t: DTensorType, mesh: Mesh) -> DTensorType:
    try:
        return c.infer(t, mesh)
    except VerifyException:
        assume(False)
        raise


def assert_same_shards(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> None:
    assert len(a) == len(b)
    for rank, (x, y) in enumerate(zip(a, b, strict=True)):
        assert bitwise_equal(x, y), f"rank {rank}: {x} != {y}"


@IDENTITY
@given(data=st.data())
def test_all_gather_of_reduce_scatter_is_all_reduce(data: st.DataObject) -> None:
    mesh, rs, tin, trs = data.draw(collective_cases("reduce_scatter"))
    ag = Coll("all_gather", rs.group)
    tag = legal(ag, trs, mesh)
    ar = Coll("all_reduce", rs.group, rs.kind)
    tar = legal(ar, tin, mesh)
    assert tag == tar
    body = [
        rs.line(mesh, "%a0", tin, trs, "%rs"),
        ag.line(mesh, "%rs", trs, tag, "%ag"),
        ar.line(mesh, "%a0", tin, tar, "%ar"),
    ]
    x = global_input(seed_rng(data), tin, mesh, domain_for(rs.kind, tin.element_type))
    res = run(program(mesh, [tin], body, [("%ag", tag), ("%ar", tar)]), [x])
    assert_same_shards(res.shards["result0"], res.shards["result1"])


@IDENTITY
@given(data=st.data())
def test_all_gather_of_slice_is_identity(data: st.DataObject) -> None:
    mesh, sl, tin, tsl = data.draw(collective_cases("slice"))
    ag = Coll("all_gather", sl.group)
    tag = legal(ag, tsl, mesh)
    assert tag == tin
    body = [sl.line(mesh, "%a0", tin, tsl, "%s"), ag.line(mesh, "%s", tsl, tag, "%g")]
    x = global_input(seed_rng(data), tin, mesh)
    res = run(program(mesh, [tin], body, [("%g", tag), ("%a0", tin)]), [x])
    assert_same_shards(res.shards["result0"], res.shards["result1"])


@IDENTITY
@given(data=st.data())
def test_all_to_all_round_trip_is_identity(data: st.DataObject) -> None:
    mesh, there, tin, tmid = data.draw(collective_cases("all_to_all"))
    (i,) = {tin.placement_list[a].split_dim for a in there.group}
    back = Coll("all_to_all", there.group, dim=i)
    tback = legal(back, tmid, mesh)
    assert tback == tin
    body = [there.line(mesh, "%a0", tin, tmid, "%t"), back.line(mesh, "%t", tmid, tback, "%b")]
    x = global_input(seed_rng(data), tin, mesh)
    res = run(program(mesh, [tin], body, [("%b", tback), ("%a0", tin)]), [x])
    assert_same_shards(res.shards["result0"], res.shards["result1"])


@IDENTITY
@given(data=st.data())
def test_broadcast_of_reduce_is_all_reduce(data: st.DataObject) -> None:
    mesh, red, tin, tred = data.draw(collective_cases("reduce"))
    assert tred == tin
    bc = Coll("broadcast", red.group, root=red.root)
    tbc = legal(bc, tred, mesh)
    ar = Coll("all_reduce", red.group, red.kind)
    tar = legal(ar, tin, mesh)
    assert tbc == tar
    body = [
        red.line(mesh, "%a0", tin, tred, "%red"),
        bc.line(mesh, "%red", tred, tbc, "%bc"),
        ar.line(mesh, "%a0", tin, tar, "%ar"),
    ]
    x = global_input(seed_rng(data), tin, mesh, domain_for(red.kind, tin.element_type))
    res = run(program(mesh, [tin], body, [("%bc", tbc), ("%ar", tar)]), [x])
    assert_same_shards(res.shards["result0"], res.shards["result1"])


@IDENTITY
@given(data=st.data())
def test_reduce_keeps_the_logical_value(data: st.DataObject) -> None:
    """The root holds the group's reduction, every other member the identity: still P(op), and
    the logical value is the operand's."""
    mesh, red, tin, tred = data.draw(collective_cases("reduce"))
    body = [red.line(mesh, "%a0", tin, tred, "%red")]
    # small integers (in float types too): reduced over the group first, or over all partial axes
    # in rank order, the logical value is then the same exactly
    domain = ints(-2, 2) if red.kind is ReductionKind.PROD else ints(-9, 9)
    x = global_input(seed_rng(data), tin, mesh, domain)
    res = run(program(mesh, [tin], body, [("%red", tred), ("%a0", tin)]), [x])
    dtype = numpy_dtype(tin.element_type)
    ident = identity_of(red.kind, dtype)
    for rank, c in enumerate(all_coords(mesh)):
        index = 0
        for a in red.group:
            index = index * mesh.axis_sizes[a] + c[a]
        if index != red.root:
            shard = res.shards["result0"][rank]
            assert bitwise_equal(shard, np.full(shard.shape, ident, dtype)), (rank, shard)
    # the same logical value
    assert np.array_equal(
        res.outputs["result0"], res.outputs["result1"], equal_nan=dtype.kind == "f"
    )


TWO_AXES = [s for s in MESH_SHAPES if len(s) == 2]


@IDENTITY
@given(
    data=st.data(),
    sizes=st.sampled_from(TWO_AXES),
    kind=st.sampled_from(KINDS),
    elt=st.sampled_from([F32, F64, I32, BF16]),
)
def test_reduce_scatter_then_all_gather_over_two_axes(data, sizes, kind, elt) -> None:
    """On a 2-axis mesh, P(op) on both axes: reduce-scatter over [x, y] then all-gather over
    [x, y]; and the same one axis at a time (the second split nests inside the first, or splits
    another dimension), gathering in reverse order. All equal all_reduce over [x, y]."""
    mesh = make_mesh(sizes)
    n = mesh.rank_count
    rank = data.draw(st.integers(1, 3))
    shape = list(data.draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    d0 = data.draw(st.integers(0, rank - 1))
    d1 = data.draw(st.integers(0, rank - 1))
    if d1 == d0:
        shape[d0] = n * data.draw(st.integers(1, 3))  # nested splits need divisible sizes
    t = DTensorType(shape, elt, "m", [P(kind), P(kind)])
    joint_rs = Coll("reduce_scatter", (0, 1), kind, dim=d0)
    t_joint = legal(joint_rs, t, mesh)
    joint_ag = Coll("all_gather", (0, 1))
    ar = Coll("all_reduce", (0, 1), kind)
    tr = legal(ar, t, mesh)
    rs_x = Coll("reduce_scatter", (0,), kind, dim=d0)
    t1 = legal(rs_x, t, mesh)
    rs_y = Coll("reduce_scatter", (1,), kind, dim=d1)
    t2 = legal(rs_y, t1, mesh)
    ag_y = Coll("all_gather", (1,))
    t3 = legal(ag_y, t2, mesh)
    ag_x = Coll("all_gather", (0,))
    assert legal(ag_x, t3, mesh) == tr == legal(joint_ag, t_joint, mesh)
    body = [
        joint_rs.line(mesh, "%a0", t, t_joint, "%j"),
        joint_ag.line(mesh, "%j", t_joint, tr, "%jg"),
        rs_x.line(mesh, "%a0", t, t1, "%s1"),
        rs_y.line(mesh, "%s1", t1, t2, "%s2"),
        ag_y.line(mesh, "%s2", t2, t3, "%g1"),
        ag_x.line(mesh, "%g1", t3, tr, "%g2"),
        ar.line(mesh, "%a0", t, tr, "%ar"),
    ]
    # small integers (in float types too) so that every order of reduction is exact
    domain = ints(-2, 2) if kind is ReductionKind.PROD else ints(-9, 9)
    x = global_input(seed_rng(data), t, mesh, domain)
    res = run(program(mesh, [t], body, [("%jg", tr), ("%g2", tr), ("%ar", tr)]), [x])
    assert_same_shards(res.shards["result0"], res.shards["result2"])
    assert_same_shards(res.shards["result1"], res.shards["result2"])
    want = reduce_dims(x, t, (0, 1), kind)
    assert bitwise_equal(res.outputs["result2"], want)


def test_every_group_reduces_separately() -> None:
    """all_reduce over [y] on a 2x4 mesh: the x = 0 and x = 1 rows are separate groups."""
    mesh = make_mesh((2, 4))
    t, rt = DTensorType((3,), I32, "m", [V, P()]), DTensorType((3,), I32, "m", [V, R])
    x = np.arange(2 * 4 * 3, dtype=np.int32).reshape(2, 4, 3)
    res = run(
        program(mesh, [t], f"%r = coll.all_reduce sum %a0 over [y] : {t} -> {rt}", [("%r", rt)]),
        [x],
    )
    for rank, (cx, _) in enumerate(itertools.product(range(2), range(4))):
        assert res.shards["result0"][rank].tolist() == x[cx].sum(axis=0).tolist()


def test_nested_splits_by_hand() -> None:
    """On a 2x3 mesh, 12 rows replicated over y are sliced into 6 blocks of 2 ordered (x, y); an
    all_to_all over y then re-splits x's 6-row block by columns (5 columns: 2, 2, 1)."""
    mesh = make_mesh((2, 3))
    t0 = DTensorType((12, 5), I32, "m", [S(0), R])
    t1 = DTensorType((12, 5), I32, "m", [S(0), S(0)])
    t2 = DTensorType((12, 5), I32, "m", [S(0), S(1)])
    body = [
        f"%s = coll.slice %a0 over [y] dim 0 : {t0} -> {t1}",
        f"%t = coll.all_to_all %s over [y] dim 1 : {t1} -> {t2}",
        f"%g = coll.all_gather %s over [y] : {t1} -> {t0}",
    ]
    x = np.arange(60, dtype=np.int32).reshape(12, 5)
    res = run(program(mesh, [t0], body, [("%s", t1), ("%t", t2), ("%g", t0)]), [x])
    columns = [slice(0, 2), slice(2, 4), slice(4, 5)]
    for rank, (cx, cy) in enumerate(itertools.product(range(2), range(3))):
        block = 3 * cx + cy
        assert res.shards["result0"][rank].tolist() == x[2 * block : 2 * block + 2].tolist()
        assert res.shards["result1"][rank].tolist() == x[6 * cx : 6 * cx + 6, columns[cy]].tolist()
        assert res.shards["result2"][rank].tolist() == x[6 * cx : 6 * cx + 6].tolist()


@pytest.mark.parametrize("kind", KINDS)
def test_logical_input_of_a_partial_value(kind: ReductionKind) -> None:
    """An input given as the logical value (no leading partial dims): the first coordinate of
    each P axis holds it, the others the identity, so the value is unchanged."""
    mesh = make_mesh((2, 3))
    t = DTensorType((4,), F32, "m", [P(kind), S(0)])
    rt = DTensorType((4,), F32, "m", [R, S(0)])
    x = np.array([1.5, -2.0, 0.25, 3.0], np.float32)
    line = f"%r = coll.all_reduce {kind.value} %a0 over [x] : {t} -> {rt}"
    res = run(program(mesh, [t], line, [("%r", rt), ("%a0", t)]), [x])
    assert bitwise_equal(res.outputs["result0"], x)
    assert bitwise_equal(res.outputs["result1"], x)
    ident = identity_of(kind, np.dtype(np.float32))
    for rank, (cx, cy) in enumerate(itertools.product(range(2), range(3))):
        block = x[2 * cy : 2 * cy + 2]
        want = block if cx == 0 else np.full(block.shape, ident, np.float32)
        assert bitwise_equal(res.shards["result1"][rank], want)


@pytest.mark.parametrize("sizes", ["x=1", "x=2", "x=3", "x=8", "x=5"])
def test_program_runs_on_any_mesh_size(sizes: str) -> None:
    """The shapes are global: resizing the mesh (ccopt.run(mesh=...)) changes the blocks, not
    the result. 7 rows on up to 8 ranks leave some ranks empty."""
    mesh = make_mesh((4,))
    t, rt = DTensorType((7, 3), F32, "m", [S(0)]), DTensorType((7, 3), F32, "m", [R])
    body = [
        f"%e = dtensor.exp %a0 : {t}",
        f"%d = dtensor.dropout %e seed 11 prob 0.5 : {t}",
        f"%g = coll.all_gather %d over [x] : {t} -> {rt}",
    ]
    x = np.linspace(-2, 2, 21, dtype=np.float32).reshape(7, 3)
    text = program(mesh, [t], body, [("%g", rt)])
    want = run(text, [x]).outputs["result0"]
    res = run(text, [x], mesh=sizes)
    assert len(res.shards["result0"]) == int(sizes[2:])
    assert bitwise_equal(res.outputs["result0"], want)
    for shard in res.shards["result0"]:
        assert bitwise_equal(shard, want)
