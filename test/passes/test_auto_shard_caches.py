"""What auto-shard and its searches remember to go faster gives the same answer as working it
out afresh: prune's dominance per vector bytes (within a call and across calls), the integer program's tie rows (built as
blocks) and candidate classes remembered across models, coordinate descent's skip of nodes
no neighbour's move touched, and the node costs, local bytes and conversion tables a pass
run keeps across its searches."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_auto_shard import MLP
from test_placement_search import peaked, problems
from xdsl.dialects import func

from ccopt.passes import placement_search
from ccopt.passes.auto_shard import AutoShard, Cost, Memo, local_bytes
from ccopt.passes.placement_search import (
    Problem,
    _descend,
    _dominated,
    _Model,
    fold_fixed,
    prune,
)
from ccopt.program import load_program


def _layered(problem: Problem, copies: int) -> Problem:
    """`copies` disjoint copies of `problem`: the repeated nodes a stack of layers has, whose
    vectors and tables the caches see again."""
    size = problem.size
    return Problem(
        [list(c) for _ in range(copies) for c in problem.node_cost],
        [(u + k * size, v + k * size, t) for k in range(copies) for u, v, t in problem.edges],
    )


def _dominated_in_one_piece(vectors: np.ndarray) -> np.ndarray:
    no_worse = (vectors[None, :, :] <= vectors[:, None, :]).all(axis=2)
    better = (vectors[None, :, :] < vectors[:, None, :]).any(axis=2)
    earlier = np.tri(len(vectors), k=-1, dtype=bool)
    return (no_worse & (better | earlier)).any(axis=1)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda rows: st.lists(
            st.lists(st.sampled_from([0.0, 1.0, 2.0, np.inf]), min_size=rows, max_size=rows),
            min_size=1,
            max_size=12,
        )
    ),
    st.integers(1, 64),
)
def test_dominance_in_blocks_over_distinct_columns_is_dominance(columns, block) -> None:
    """`_dominated` compares a block of rows at a time over the distinct columns (bounded
    memory: a three-axis mesh's node needed 7 GiB in one piece); the answer is the same."""
    vectors = np.array(columns).T.copy()
    vectors = np.concatenate([vectors, vectors[:, ::2]], axis=1)  # repeated columns
    saved = placement_search.DOMINANCE_BLOCK
    try:
        placement_search.DOMINANCE_BLOCK = block
        got = _dominated(vectors)
    finally:
        placement_search.DOMINANCE_BLOCK = saved
    assert (got == _dominated_in_one_piece(vectors)).all()


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(1, 3))
def test_prune_with_remembered_dominance_is_prune_without(problem, copies):
    problem = _layered(problem, copies)
    assert_prunes_alike(prune(problem), prune_forgetting(problem))


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(0, 6), st.floats(0.0, 30.0))
def test_prune_remembering_dominance_across_calls_is_prune_afresh(problem, node, shift):
    """`prune` keeps what `_dominated` found across calls (`_DOMINANCE`: a layer's transfer
    table entries are the same function at other boundaries). Pruning a problem after one
    that differs in one node's own costs (a boundary placement forced), with every vector
    of the first remembered, gives what pruning it afresh gives."""
    node %= problem.size
    other = Problem(
        [
            [c + shift for c in cs] if n == node else list(cs)
            for n, cs in enumerate(problem.node_cost)
        ],
        problem.edges,
    )
    placement_search._DOMINANCE.clear()
    prune(problem)  # its vectors remembered
    remembered = prune(other)
    if any(len(cs) > 1 for cs in problem.node_cost):  # a node was looked at
        assert placement_search._DOMINANCE
    assert_prunes_alike(remembered, prune_forgetting(other))


def prune_forgetting(problem: Problem) -> tuple:
    """`prune` with `_dominated` remembering nothing: the answer worked out afresh."""
    fresh = placement_search._dominated

    def forgetting(vectors, seen=None):  # noqa: ANN001, ANN202 - _dominated's signature
        return fresh(vectors, None)

    placement_search._dominated = forgetting
    try:
        return prune(problem)
    finally:
        placement_search._dominated = fresh


def assert_prunes_alike(remembered: tuple, afresh: tuple) -> None:
    assert remembered[1] == afresh[1]
    assert remembered[0].node_cost == afresh[0].node_cost
    for (u, v, a), (x, y, b) in zip(remembered[0].edges, afresh[0].edges, strict=True):
        assert (u, v) == (x, y) and np.array_equal(a, b)


def test_dominated_by_hand():
    """Row 1 is no worse than row 0 anywhere and better once; rows 2 and 3 are equal (the
    later one goes); a remembered answer is the same."""
    vectors = np.array([[1.0, 2.0], [1.0, 1.0], [0.0, 5.0], [0.0, 5.0]])
    seen: dict = {}
    assert _dominated(vectors, seen).tolist() == [True, False, False, True]
    assert len(seen) == 1
    assert _dominated(vectors.copy(), seen).tolist() == [True, False, False, True]


def _rows_one_by_one(model: _Model) -> list[tuple[float, float, list[int], list[float]]]:
    """The rows a model must hand HiGHS, one tuple per row as they were built before the
    blocks: a node's candidates sum to 1, then per joint each row class's joints minus its
    candidates, then each column class's."""
    out = [
        (1.0, 1.0, list(range(model.start[n], model.start[n + 1])), [1.0] * int(k))
        for n, k in enumerate(np.diff(model.start))
    ]
    for u, v, row_of, col_of, ids in model.joints:
        for i in range(ids.shape[0]):
            joined = ids[i][ids[i] >= 0].tolist()
            members = (model.start[u] + np.flatnonzero(row_of == i)).tolist()
            out.append((0.0, 0.0, joined + members, [1.0] * len(joined) + [-1.0] * len(members)))
        for j in range(ids.shape[1]):
            joined = ids[:, j][ids[:, j] >= 0].tolist()
            members = (model.start[v] + np.flatnonzero(col_of == j)).tolist()
            out.append((0.0, 0.0, joined + members, [1.0] * len(joined) + [-1.0] * len(members)))
    return out


def _rows_of(model: _Model) -> list[tuple[float, float, list[int], list[float]]]:
    out = []
    for block in model.rows:
        ends = np.cumsum(block.lengths)
        for r, end in enumerate(ends):
            begin = end - block.lengths[r]
            out.append(
                (
                    float(block.lower[r]),
                    float(block.upper[r]),
                    block.index[begin:end].tolist(),
                    block.values[begin:end].tolist(),
                )
            )
    return out


@settings(max_examples=60, deadline=None)
@given(peaked(), st.integers(1, 3))
def test_model_rows_and_remembered_classes_are_those_built_afresh(problem, copies):
    """The blocks of rows are the rows one by one, and a model built with every edge's classes
    remembered (the second time) equals one built with none."""
    reduced, _ = prune(fold_fixed(problem))
    placement_search._CLASSES.clear()
    first = _Model(reduced)
    again = _Model(reduced)  # every class remembered now
    for model in (first, again):
        assert _rows_of(model) == _rows_one_by_one(model)
    assert _rows_of(first) == _rows_of(again)
    assert np.array_equal(first.objective, again.objective)
    assert first.ncol == again.ncol


@settings(max_examples=80, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_descent_skipping_untouched_nodes_moves_as_full_sweeps(problem, rng):
    neighbours: dict = {i: [] for i in range(problem.size)}
    for u, v, table in problem.edges:
        neighbours[u].append((v, table, True))
        neighbours[v].append((u, table, False))
    start = [rng.randrange(len(c)) for c in problem.node_cost]
    tracked, full = list(start), list(start)
    _descend(problem, neighbours, tracked, None, track=True)
    _descend(problem, neighbours, full, None, track=False)
    assert tracked == full


def _function(text: str) -> func.FuncOp:
    module = load_program(text)
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def test_a_runs_remembered_costs_are_those_worked_out_afresh():
    """The node costs (`own_costs`), conversion tables and held bytes one run of the pass
    remembers across its searches give the problem built without them, searched twice."""
    for objective, memory in (("time", 0.0), ("bytes", 1.0)):
        search = AutoShard(objective=objective, memory=memory)
        f = _function(MLP)
        memo = Memo()
        nodes = search.nodes(f, None, memo.signatures)
        mesh = search.mesh_of_nodes(f, nodes)
        cost = Cost(objective, search.machine, mesh)
        remembered = [search.problem(f, nodes, cost, mesh, memo.moves) for _ in range(2)]
        afresh = search.problem(f, nodes, Cost(objective, search.machine, mesh), mesh, None)
        for p in remembered:
            assert p.node_cost == afresh.node_cost
            assert len(p.edges) == len(afresh.edges)
            for (u, v, a), (x, y, b) in zip(p.edges, afresh.edges, strict=True):
                assert (u, v) == (x, y) and np.array_equal(a, b)
            if memory:
                for (u, v, a), (x, y, b) in zip(p.conversions, afresh.conversions, strict=True):
                    assert (u, v) == (x, y) and np.array_equal(a, b)
        t = nodes[0].value.type
        for s in nodes[0].signatures:
            assert local_bytes(t, s.result, mesh) == local_bytes.__wrapped__(t, s.result, mesh)
