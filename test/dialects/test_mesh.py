"""Mesh coordinates, groups and block arithmetic (`ccopt.mesh`).

The interpreter, the backends and the cost model all ask this module which rank holds which block;
the property tests check the one invariant they all rely on: within each replica group the ranks'
blocks tile the global array exactly once, in mesh order.
"""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccopt.mesh import Mesh, block_range, local_slices

MESH_2x4 = Mesh("m", ("dp", "tp"), (2, 4))


def _mesh_sizes() -> list[tuple[int, ...]]:
    """Every mesh of 1, 2, 3, 4 or 8 ranks with 1 to 3 axes (axis sizes 1, 2, 3, 4, 8)."""
    out = []
    for ndim in (1, 2, 3):
        for sizes in product((1, 2, 3, 4, 8), repeat=ndim):
            if prod(sizes) in (1, 2, 3, 4, 8):
                out.append(sizes)
    return out


MESH_SIZES = _mesh_sizes()
meshes = st.sampled_from(MESH_SIZES).map(
    lambda sizes: Mesh("m", tuple(f"a{i}" for i in range(len(sizes))), sizes)
)


# --- coordinates ----------------------------------------------------------------------------


def test_rank_count_and_ndim():
    assert MESH_2x4.rank_count == 8
    assert MESH_2x4.ndim == 2
    assert Mesh("one", ("x",), (1,)).rank_count == 1


def test_coords_are_row_major():
    assert MESH_2x4.coords(0) == (0, 0)
    assert MESH_2x4.coords(3) == (0, 3)
    assert MESH_2x4.coords(5) == (1, 1)
    assert MESH_2x4.coords(7) == (1, 3)
    assert MESH_2x4.rank((1, 1)) == 5
    assert list(MESH_2x4.all_coords()) == [(d, t) for d in range(2) for t in range(4)]


def test_coords_three_axes():
    mesh = Mesh("m", ("pp", "dp", "tp"), (2, 3, 2))
    assert mesh.coords(7) == (1, 0, 1)
    assert mesh.rank((1, 2, 1)) == 11


def test_axis_index():
    assert MESH_2x4.axis_index("dp") == 0
    assert MESH_2x4.axis_index("tp") == 1
    with pytest.raises(KeyError, match="mesh @m has no axis 'pp'"):
        MESH_2x4.axis_index("pp")


def test_str():
    assert str(MESH_2x4) == "@m [dp=2, tp=4]"


@settings(max_examples=60, deadline=None)
@given(meshes)
def test_coords_rank_round_trip(mesh: Mesh):
    seen = set()
    for r in range(mesh.rank_count):
        c = mesh.coords(r)
        assert len(c) == mesh.ndim
        assert all(0 <= ci < n for ci, n in zip(c, mesh.axis_sizes, strict=True))
        assert mesh.rank(c) == r
        seen.add(c)
    assert len(seen) == mesh.rank_count
    assert [mesh.rank(c) for c in mesh.all_coords()] == list(range(mesh.rank_count))


# --- groups ---------------------------------------------------------------------------------


def test_groups_over_inner_axis():
    assert MESH_2x4.groups([1]) == [
        [(0, 0), (0, 1), (0, 2), (0, 3)],
        [(1, 0), (1, 1), (1, 2), (1, 3)],
    ]


def test_groups_over_outer_axis():
    assert MESH_2x4.groups([0]) == [[(0, t), (1, t)] for t in range(4)]


def test_groups_over_all_axes_is_one_group_in_rank_order():
    assert MESH_2x4.groups([0, 1]) == [list(MESH_2x4.all_coords())]


def test_groups_over_no_axes_are_singletons():
    assert MESH_2x4.groups([]) == [[c] for c in MESH_2x4.all_coords()]


def test_group_index_and_size():
    assert MESH_2x4.group_size([0]) == 2
    assert MESH_2x4.group_size([1]) == 4
    assert MESH_2x4.group_size([0, 1]) == 8
    assert MESH_2x4.group_index((1, 2), [1]) == 2
    assert MESH_2x4.group_index((1, 2), [0]) == 1
    assert MESH_2x4.group_index((1, 2), [0, 1]) == 6
    assert MESH_2x4.group((1, 2), [0]) == [(0, 2), (1, 2)]


def test_group_index_three_axes_outer_and_inner():
    mesh = Mesh("m", ("pp", "dp", "tp"), (2, 3, 2))
    # axes 0 and 2 form a mixed-radix number (pp, tp) in mesh order
    assert mesh.group_index((1, 2, 1), [0, 2]) == 3
    assert mesh.group((1, 2, 1), [0, 2]) == [(0, 2, 0), (0, 2, 1), (1, 2, 0), (1, 2, 1)]


@settings(max_examples=60, deadline=None)
@given(meshes, st.data())
def test_groups_partition_the_mesh(mesh: Mesh, data: st.DataObject):
    axes = sorted(data.draw(st.sets(st.integers(0, mesh.ndim - 1))))
    groups = mesh.groups(axes)
    members = [c for g in groups for c in g]
    assert sorted(members) == sorted(mesh.all_coords())
    assert len(groups) == mesh.rank_count // mesh.group_size(axes)
    others = [a for a in range(mesh.ndim) if a not in axes]
    for g in groups:
        assert len(g) == mesh.group_size(axes)
        # a group varies only over `axes`, and is ordered by group index 0..p-1
        assert len({tuple(c[a] for a in others) for c in g}) == 1
        assert [mesh.group_index(c, axes) for c in g] == list(range(len(g)))
        for c in g:
            assert mesh.group(c, axes) == g


# --- blocks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "parts", "blocks"),
    [
        (8, 4, [(0, 2), (2, 4), (4, 6), (6, 8)]),
        (10, 4, [(0, 3), (3, 6), (6, 9), (9, 10)]),
        (5, 4, [(0, 2), (2, 4), (4, 5), (5, 5)]),
        (2, 4, [(0, 1), (1, 2), (2, 2), (2, 2)]),
        (9, 8, [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9), (9, 9), (9, 9), (9, 9)]),
        (7, 8, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 7)]),
        (0, 3, [(0, 0), (0, 0), (0, 0)]),
        (6, 1, [(0, 6)]),
        (1, 3, [(0, 1), (1, 1), (1, 1)]),
    ],
)
def test_block_range_ceil_div(size: int, parts: int, blocks: list[tuple[int, int]]):
    assert [block_range(size, parts, i) for i in range(parts)] == blocks


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(1, 16))
def test_block_range_tiles_the_dimension(size: int, parts: int):
    blocks = [block_range(size, parts, i) for i in range(parts)]
    block = -(-size // parts)
    assert blocks[0][0] == 0
    assert blocks[-1][1] == size
    for (_, stop), (start, _) in zip(blocks, blocks[1:], strict=False):
        assert stop == start
    lengths = [b - a for a, b in blocks]
    assert all(0 <= n <= block for n in lengths)
    # full blocks first, then at most one short one, then empty ones
    assert lengths == sorted(lengths, reverse=True)
    assert sum(1 for n in lengths if 0 < n < block) <= 1


def test_local_slices_single_axis_uneven():
    shape = (10, 6)
    assert local_slices(shape, [0], [4], [3]) == (slice(9, 10), slice(0, 6))
    assert local_slices(shape, [1], [4], [2]) == (slice(0, 10), slice(4, 6))
    assert local_slices(shape, [1], [4], [3]) == (slice(0, 10), slice(6, 6))


def test_local_slices_unsplit_axes_hold_everything():
    assert local_slices((10, 6), [None, None], [2, 4], [1, 3]) == (slice(0, 10), slice(0, 6))


def test_local_slices_two_dims_two_axes():
    # [S(1), S(0)] on dp=2, tp=4 of a 10x6 tensor: dp splits columns in 3s, tp rows in 3s
    assert local_slices((10, 6), [1, 0], [2, 4], [1, 2]) == (slice(6, 9), slice(3, 6))


def test_local_slices_composite_split_in_mesh_order():
    # [S(0), S(0)] on 2x4: 8 blocks of ceil(10/8)=2 rows, block index dp*4 + tp
    shape = (10, 3)
    got = [local_slices(shape, [0, 0], [2, 4], c)[0] for c in MESH_2x4.all_coords()]
    assert got == [
        slice(0, 2),
        slice(2, 4),
        slice(4, 6),
        slice(6, 8),
        slice(8, 10),
        slice(10, 10),
        slice(10, 10),
        slice(10, 10),
    ]


def test_local_slices_composite_over_outer_and_inner_axis_of_three():
    # axes 0 and 2 split dim 0 (4 blocks, index pp*2 + tp), axis 1 replicates
    sl = local_slices((8,), [0, None, 0], [2, 3, 2], (1, 2, 0))
    assert sl == (slice(4, 6),)


def test_local_slices_scalar():
    assert local_slices((), [None, None], [2, 4], (1, 3)) == ()


@st.composite
def layouts(draw: st.DrawFn) -> tuple[Mesh, tuple[int, ...], tuple[int | None, ...]]:
    mesh = draw(meshes)
    shape = tuple(draw(st.lists(st.integers(0, 10), min_size=0, max_size=3)))
    dim = st.none() | st.integers(0, len(shape) - 1) if shape else st.none()
    split_dims = tuple(draw(dim) for _ in range(mesh.ndim))
    return mesh, shape, split_dims


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_blocks_tile_the_array_once_per_replica_group(layout):
    """Fixing the coordinates on the axes that do not split, the blocks of the ranks that vary
    over the splitting axes cover every element exactly once; ranks that differ only on
    non-splitting axes hold the same block."""
    mesh, shape, split_dims = layout
    split_axes = [a for a, d in enumerate(split_dims) if d is not None]
    blocks = {c: local_slices(shape, split_dims, mesh.axis_sizes, c) for c in mesh.all_coords()}
    for group in mesh.groups(split_axes):
        count = np.zeros(shape, dtype=np.int64)
        for c in group:
            count[blocks[c]] += 1
        assert np.all(count == 1)
    for group in mesh.groups([a for a in range(mesh.ndim) if a not in split_axes]):
        assert len({tuple((s.start, s.stop) for s in blocks[c]) for c in group}) == 1


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_blocks_follow_mesh_order_with_ceil_div_size(layout):
    """Along each split dimension, the composite group index orders the blocks and every block
    is at most ceil(D / parts) long."""
    mesh, shape, split_dims = layout
    for d, size in enumerate(shape):
        axes = [a for a, s in enumerate(split_dims) if s == d]
        if not axes:
            continue
        parts = mesh.group_size(axes)
        for c in mesh.all_coords():
            sl = local_slices(shape, split_dims, mesh.axis_sizes, c)[d]
            assert (sl.start, sl.stop) == block_range(size, parts, mesh.group_index(c, axes))
            assert sl.stop - sl.start <= -(-size // parts)
