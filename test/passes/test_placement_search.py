"""The searches under auto-shard: `dp` and `ilp` equal `exhaustive` on random graphs of up to 12
nodes (property test), `cd` reaches a local optimum no better than the optimum, and every
solution reports its cost, bound and gap."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccopt.passes import placement_search
from ccopt.passes.placement_search import (
    NoSolution,
    Problem,
    coordinate_descent,
    dynamic_programming,
    exhaustive,
    integer_program,
    prune,
    tree_order,
)


@st.composite
def problems(draw, chain: bool = False, memory: bool = False) -> Problem:
    n = draw(st.integers(1, 12 if chain else 7))
    sizes = [draw(st.integers(1, 3 if n > 8 else 4)) for _ in range(n)]
    cost = st.integers(0, 20).map(float)
    node_cost = [[draw(cost) for _ in range(k)] for k in sizes]
    if chain:
        pairs = [(i, i + 1) for i in range(n - 1)]
    else:
        pairs = draw(
            st.lists(
                st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(
                    lambda p: p[0] < p[1]
                ),
                unique=True,
                max_size=2 * n,
            )
        )
    edges = [
        (u, v, [[draw(cost) for _ in range(sizes[v])] for _ in range(sizes[u])]) for u, v in pairs
    ]
    problem = Problem(node_cost, edges)
    if memory:
        problem.memory = [[draw(cost) for _ in range(k)] for k in sizes]
        problem.memory_limit = float(draw(st.integers(0, 10 * n)))
    return problem


def optimum(problem: Problem) -> float | None:
    try:
        return exhaustive(problem).cost
    except NoSolution:
        return None


@settings(max_examples=40, deadline=None)
@given(problems(chain=True))
def test_dp_equals_exhaustive_on_chains(problem):
    solution = dynamic_programming(problem)
    assert solution.strategy == "dp" and solution.optimal
    assert solution.cost == pytest.approx(optimum(problem))
    assert problem.cost(solution.choice) == pytest.approx(solution.cost)


@st.composite
def forests(draw) -> Problem:
    """Random forests: each node after the first hangs off an earlier one or starts a new tree;
    edges point either way."""
    problem = draw(problems(chain=True))
    sizes = [len(c) for c in problem.node_cost]
    edges = []
    for v in range(1, problem.size):
        u = draw(st.integers(-1, v - 1))
        if u < 0:
            continue
        a, b = (u, v) if draw(st.booleans()) else (v, u)
        table = [
            [float(draw(st.integers(0, 20))) for _ in range(sizes[b])] for _ in range(sizes[a])
        ]
        edges.append((a, b, table))
    problem.edges = edges
    return problem


@settings(max_examples=40, deadline=None)
@given(forests())
def test_dp_equals_exhaustive_on_forests(problem):
    solution = dynamic_programming(problem)
    assert solution.strategy == "dp"
    assert solution.cost == pytest.approx(optimum(problem))
    assert problem.cost(solution.choice) == pytest.approx(solution.cost)


@settings(max_examples=40, deadline=None)
@given(problems(memory=True))
def test_ilp_equals_exhaustive_on_graphs_with_memory_limits(problem):
    best = optimum(problem)
    if best is None:
        with pytest.raises(NoSolution):
            integer_program(problem)
        return
    solution = integer_program(problem)
    assert problem.fits(solution.choice)
    assert solution.cost == pytest.approx(best)
    assert solution.gap == 0


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(0, 3))
def test_ilp_equals_exhaustive_on_graphs_after_eliminating_chains(problem, forbidden):
    """Without a memory limit the integer program runs on what `Series` leaves (nodes of at
    most two neighbours eliminated) and expands its optimum back: still the optimum, at the
    cost it reports, forbidden pairs (inf) included."""
    for k, (_, _, table) in enumerate(problem.edges[:forbidden]):
        table[0][0] = math.inf if k % 2 == 0 else table[0][0]
    best = optimum(problem)
    if best is None or math.isinf(best):
        return
    solution = integer_program(problem)
    assert solution.cost == pytest.approx(best) and solution.gap == 0
    assert problem.cost(solution.choice) == pytest.approx(solution.cost)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_cd_is_a_local_optimum_within_its_bound(problem):
    solution = coordinate_descent(problem)
    best = optimum(problem)
    assert best is not None
    assert solution.lower_bound <= best + 1e-9 <= solution.cost + 1e-9
    assert solution.gap == pytest.approx(solution.cost - solution.lower_bound)


@settings(max_examples=40, deadline=None)
@given(problems())
def test_cds_bound_is_a_bound_and_beats_the_nodes_alone(problem):
    """A spanning forest solved exactly, the other edges folded in at their cheapest: never
    above the optimum, never below the sum of the nodes' cheapest own costs."""
    bound = placement_search.lower_bound(problem)
    best = optimum(problem)
    assert best is not None
    assert sum(min(cs) for cs in problem.node_cost) - 1e-9 <= bound <= best + 1e-9


@settings(max_examples=40, deadline=None)
@given(problems(chain=True))
def test_cds_bound_is_the_optimum_on_chains(problem):
    """A chain is its own spanning forest: cd's bound is the optimum, its gap exact."""
    best = optimum(problem)
    assert placement_search.lower_bound(problem) == pytest.approx(best)
    solution = coordinate_descent(problem)
    assert solution.gap == pytest.approx(solution.cost - best, abs=1e-9)


TRIANGLE = Problem(
    [[1.0, 2.0]] * 3,
    [
        (0, 1, [[0.0, 5.0], [5.0, 0.0]]),
        (1, 2, [[0.0, 5.0], [5.0, 0.0]]),
        (0, 2, [[9.0, 0.0], [0.0, 9.0]]),
    ],
)


def test_cds_greedy_start_keeps_clear_of_forbidden_pairs():
    """From each node's cheapest own candidate (0, 0) no single move leaves the forbidden pairs
    (only 1-1 is allowed); the greedy start weighs each candidate with its neighbour's best
    for it and starts at the one allowed pair."""
    inf = math.inf
    stuck = Problem([[0.0, 1.0], [0.0, 1.0]], [(0, 1, [[inf, inf], [inf, 0.0]])])
    assert placement_search._greedy(stuck) == [1, 1]
    assert coordinate_descent(stuck).cost == 2.0


def test_cds_bound_on_a_cycle_by_hand():
    """The triangle's optimum is 9 (two nodes alike, the third not: 1+1+2 and one 5). The
    forest keeps 0-2 (spread 9) and 0-1, folding 1-2 in at its row minima (0): x0=0, x2=1
    (0-2 unlike: 0), x1=0 (0-1 alike: 0) cost 1+1+2 = 4; the nodes alone say 3."""
    assert placement_search.lower_bound(TRIANGLE) == 4.0
    assert exhaustive(TRIANGLE).cost == 9.0


def test_dp_on_a_cycle_says_it_used_a_tree_decomposition():
    """The triangle is no forest: dp eliminates a node into a table over the other two (width
    2) and says so. By hand: 0 and 1 agree (else 5), 1 and 2 agree (else 5), 0 and 2 disagree
    (else 9) - no choice keeps all three, so the best breaks a 5: (0, 0, 1) costs 1 + 1 + 2
    on the nodes and 0 + 5 + 0 on the edges, 9; breaking the 9 instead costs at least 3 + 9."""
    assert tree_order(TRIANGLE) is None
    solution = dynamic_programming(TRIANGLE)
    assert solution.strategy == "dp" and "width 2" in solution.note
    assert solution.cost == exhaustive(TRIANGLE).cost == 9.0


def test_dp_says_when_it_used_ilp(monkeypatch):
    """A decomposition whose tables would pass the limit goes to ilp, and the note says why."""
    monkeypatch.setattr(placement_search, "MAX_TABLE", 4)
    solution = dynamic_programming(TRIANGLE)
    assert solution.strategy == "ilp" and "too wide" in solution.note
    assert solution.cost == exhaustive(TRIANGLE).cost


@settings(max_examples=40, deadline=None)
@given(problems())
def test_dp_equals_exhaustive_on_graphs_with_cycles(problem):
    solution = dynamic_programming(problem)
    best = optimum(problem)
    assert best is not None and solution.strategy == "dp"
    assert solution.cost == pytest.approx(best)
    assert problem.cost(solution.choice) == pytest.approx(solution.cost)


@settings(max_examples=40, deadline=None)
@given(problems(memory=True))
def test_pruning_keeps_an_optimum(problem):
    """Dropping dominated candidates (memory included) never loses the optimum."""
    reduced, keep = prune(problem)
    best, kept = optimum(problem), optimum(reduced)
    assert best == pytest.approx(kept) if best is not None else kept is None
    assert all(len(k) >= 1 for k in keep)


def test_forbidden_pairs_are_avoided():
    """inf marks a pair no conversion bridges: every exact strategy avoids it."""
    problem = Problem([[0.0, 1.0], [0.0, 0.0]], [(0, 1, [[math.inf, math.inf], [0.0, 2.0]])])
    for solve in (exhaustive, dynamic_programming, integer_program):
        solution = solve(problem)
        assert solution.choice == [1, 0] and solution.cost == 1.0


@st.composite
def peaked(draw) -> Problem:
    """Random problems under a memory peak: each node's value lives on an interval of program
    points (a first and a last), some nodes hold a transient at their first point (a call's
    callee peak), some edges and nodes a conversion's output at some point; the limit bounds
    the fullest point."""
    problem = draw(problems(memory=True))
    n = problem.size
    spans = []
    for _ in range(n):
        first = draw(st.integers(0, n))
        spans.append((first, draw(st.integers(first, n))))
    sizes = [len(c) for c in problem.node_cost]
    cost = st.integers(0, 20).map(float)
    problem.transient = [
        [draw(cost) for _ in range(k)] if draw(st.booleans()) else [0.0] * k for k in sizes
    ]
    # conversions: some edges' (and some nodes', to a fixed placement) outputs held at a point
    problem.conversions = []
    held_at: dict[int, list[int]] = {}
    for u, v, _ in problem.edges:
        if draw(st.booleans()):
            table = [[draw(cost) for _ in range(sizes[v])] for _ in range(sizes[u])]
            held_at.setdefault(draw(st.integers(0, n)), []).append(len(problem.conversions))
            problem.conversions.append((u, v, table))
    for u in range(n):
        if draw(st.integers(0, 3)) == 0:
            held_at.setdefault(draw(st.integers(0, n)), []).append(len(problem.conversions))
            problem.conversions.append((u, None, [draw(cost) for _ in range(sizes[u])]))
    points = [
        (
            tuple(i for i, (a, b) in enumerate(spans) if a <= p <= b),
            tuple(i for i, (a, _) in enumerate(spans) if a == p and any(problem.transient[i])),
            tuple(held_at.get(p, ())),
        )
        for p in range(n + 1)
    ]
    problem.points = placement_search.maximal_points(points) if draw(st.booleans()) else points
    problem.memory_limit = float(draw(st.integers(0, 6 * n)))
    return problem


@settings(max_examples=60, deadline=None)
@given(peaked())
def test_exact_strategies_equal_exhaustive_under_a_memory_peak(problem):
    """ilp (a row per point) and dp (its free optimum when that fits, else ilp) find the
    optimum under the peak; cd's answer, when it has one, fits."""
    best = optimum(problem)
    for solve in (integer_program, dynamic_programming):
        if best is None:
            with pytest.raises(NoSolution):
                solve(problem)
            continue
        solution = solve(problem)
        assert problem.fits(solution.choice)
        assert solution.cost == pytest.approx(best)
    try:
        solution = coordinate_descent(problem)
    except NoSolution:
        return
    assert problem.fits(solution.choice) and solution.cost >= best - 1e-9


@settings(max_examples=60, deadline=None)
@given(peaked(), st.randoms(use_true_random=False))
def test_maximal_points_keep_the_peak(problem, rng):
    """Dropping points contained in a neighbour (and repeats) never changes any choice's peak."""
    kept = replace(problem, points=placement_search.maximal_points(problem.points))
    assert len(kept.points) <= len(problem.points)
    for _ in range(5):
        choice = [rng.randrange(len(c)) for c in problem.node_cost]
        assert kept.peak(choice) == pytest.approx(problem.peak(choice))


def test_maximal_points_by_hand():
    """A chain a -> b -> c with x live throughout: (x,a) is inside (x,a,b), (x,c) inside (x,b,c);
    a call's point (x, its transient) is never inside an ordinary one."""
    x, a, b, c, call = 0, 1, 2, 3, 4
    points = [
        ((x, a), ()),
        ((x, a, b), ()),
        ((x, a, b), ()),
        ((x, b, c), ()),
        ((x,), (call,)),
        ((x, c), ()),
    ]
    assert placement_search.maximal_points(points) == [
        ((x, a, b), ()),
        ((x, b, c), ()),
        ((x,), (call,)),
        ((x, c), ()),
    ]


def test_a_conversion_held_at_a_point_can_break_the_limit():
    """Node 0 gives R (4 bytes) or S (1 byte, 2 cheaper on its own); node 1 reads R (4 bytes), so
    from S a conversion costing 1 makes a replicated copy (4 bytes) held while node 1 runs, at
    the point where both are live: R holds 4 + 4 = 8 there for cost 2, S 1 + 4 + 4 = 9 for
    cost 1. Under 8 only R fits (without the copy S would hold 5 and win); under 9, S."""
    problem = Problem(
        [[2.0, 0.0], [0.0]],
        [(0, 1, [[0.0], [1.0]])],
        memory=[[4.0, 1.0], [4.0]],
        points=[((0,), ()), ((0, 1), (), (0,))],
        conversions=[(0, 1, [[0.0], [4.0]])],
    )
    for limit, choice, cost, peak in ((8.0, [0, 0], 2.0, 8.0), (9.0, [1, 0], 1.0, 9.0)):
        problem.memory_limit = limit
        for strategy in placement_search.STRATEGIES:
            solution = placement_search.solve(problem, strategy)
            assert (solution.choice, solution.cost) == (choice, cost), strategy
            assert problem.peak(solution.choice) == peak
    problem.memory_limit = 7.0
    for strategy in placement_search.STRATEGIES:
        with pytest.raises(NoSolution):
            placement_search.solve(problem, strategy)
    assert placement_search.least_peak(problem)[:2] == (8.0, True)


def test_integer_program_stops_at_its_time_limit():
    """Four nodes, each joined to every other (K4: no node has fewer than three neighbours,
    so `Series` eliminates none), by edges charging 5 where the ends agree: every program
    pays at least two edges (two colours split four nodes at best two and two) and the
    cheapest pays 10 + 0.2 (two nodes at their second candidate). The relaxation (every
    variable 1/2, cost 0.2) is fractional, so HiGHS branches; given no time it answers with
    coordinate descent's program, cost 10.2, and the largest valid bound: the relaxation's 0.2
    (solved after the stop, within `RELAXATION_ITERATIONS`), above the forest relaxation's 0.1 (a
    spanning tree solved exactly, the other edges at their minimum 0) - gap 10, 98.039% of the
    cost. Given time it proves 10.2."""
    agree = [[5.0, 0.0], [0.0, 5.0]]
    problem = Problem([[0.0, 0.1]] * 4, [(i, j, agree) for i in range(4) for j in range(i + 1, 4)])
    assert placement_search.lower_bound(problem) == pytest.approx(0.1)
    stopped = integer_program(problem, time_limit=0.0)
    assert stopped.cost == pytest.approx(10.2) and stopped.lower_bound == pytest.approx(0.2)
    assert stopped.gap == pytest.approx(10.0) and not stopped.optimal
    assert "stopped at its time limit (0 s)" in stopped.note
    assert "bound: the LP relaxation, gap 98.039% of the cost" in stopped.note
    solved = integer_program(problem, time_limit=60.0)
    assert solved.cost == pytest.approx(10.2) and solved.optimal and not solved.note


def _dense(seed: int) -> Problem:
    """Ten nodes of three candidates, each pair joined with probability 0.6 by an edge dearer
    where the ends agree: its LP is fractional and HiGHS branches."""
    import random

    rng = random.Random(seed)

    def agree() -> list[list[float]]:
        return [
            [float(rng.randint(3, 9) if a == b else rng.randint(0, 2)) for b in range(3)]
            for a in range(3)
        ]

    edges = [(i, j, agree()) for i in range(10) for j in range(i + 1, 10) if rng.random() < 0.6]
    return Problem([[float(rng.randint(0, 3)) for _ in range(3)] for _ in range(10)], edges)


def test_integer_program_stops_at_its_node_limit_alike_every_run(monkeypatch):
    """`NODE_LIMIT` is a budget of work, not of seconds: an integer program it stops answers
    with the same program, bound and note every time, however busy the machine (the time
    limit, here a minute, is the safety net behind it). One node: HiGHS's best program at the
    root, its dual bound below it."""
    monkeypatch.setattr(placement_search, "NODE_LIMIT", 1)
    problem = _dense(1)  # seed 0's LP is integral: no branching
    best = exhaustive(problem).cost
    runs = [integer_program(problem, time_limit=60.0) for _ in range(3)]
    first = runs[0]
    assert not first.optimal and "stopped at its node limit (1 nodes)" in first.note
    assert first.lower_bound <= best <= first.cost
    for other in runs[1:]:
        assert (other.choice, other.cost, other.lower_bound, other.note) == (
            first.choice,
            first.cost,
            first.lower_bound,
            first.note,
        )
    monkeypatch.setattr(placement_search, "NODE_LIMIT", 10_000)
    solved = integer_program(problem, time_limit=60.0)
    assert solved.optimal and solved.cost == pytest.approx(best)


def test_integer_program_eliminates_chains_first():
    """The three-node odd cycle of 5-where-the-ends-agree edges (cost 5 + 0.1 at best: one
    edge always agrees) has no node of more than two neighbours: `Series` eliminates it
    whole, so the integer program is exact without HiGHS, even given no time. On a longer
    chain hanging off K4, only the chain's nodes go, and the expanded choice costs in the
    input what HiGHS's optimum of what is left costs."""
    agree = [[5.0, 0.0], [0.0, 5.0]]
    cycle = Problem([[0.0, 0.1]] * 3, [(i, (i + 1) % 3, agree) for i in range(3)])
    series = placement_search.Series.of(cycle)
    assert series.problem.size == 0
    solved = integer_program(cycle, time_limit=0.0)
    assert solved.cost == pytest.approx(5.1) and solved.optimal and not solved.note
    edges = [(i, j, agree) for i in range(4) for j in range(i + 1, 4)]
    edges += [(3, 4, agree), (4, 5, agree), (5, 6, agree), (6, 0, agree)]
    hung = Problem([[0.0, 0.1]] * 7, edges)
    series = placement_search.Series.of(hung)
    assert series.kept == [0, 1, 2, 3] and series.problem.size == 4
    assert integer_program(hung).cost == pytest.approx(exhaustive(hung).cost)


@settings(max_examples=60, deadline=None)
@given(peaked())
def test_least_peak_is_the_least_any_program_reaches(problem):
    """`least_peak` (each node's smallest candidate, else an integer program minimizing the
    fullest point) equals the least peak over every program of finite cost; `least_memory`'s
    program has finite cost and reaches at least that."""
    from itertools import product

    peaks = [
        problem.peak(c)
        for c in product(*(range(len(cs)) for cs in problem.node_cost))
        if not math.isinf(problem.cost(c))
    ]
    problem.memory_limit = None
    peak, proven, choice = placement_search.least_peak(problem)
    if not peaks:
        assert math.isinf(peak) and choice is None
        return
    assert proven and peak == pytest.approx(min(peaks))
    assert problem.peak(choice) == pytest.approx(peak)
    solution = placement_search.least_memory(problem)
    assert not math.isinf(solution.cost)
    assert problem.peak(solution.choice) >= peak - 1e-9


def six_node_peak_problem() -> Problem:
    """Six nodes whose least peak, 3, an integer program finds (found by hypothesis)."""
    zero = [[0.0] * k for k in (1, 2, 2, 3, 4, 3)]
    return Problem(
        [[0.0], [0.0, 1.0], [0.0, 0.0], [0.0] * 3, [0.0] * 4, [0.0] * 3],
        [(0, 1, [[0.0, 0.0]]), (1, 2, [[0.0, 1.0], [0.0, 0.0]])],
        memory=[[3.0], *zero[1:5], [0.0, 0.0, 1.0]],
        transient=[*zero[:5], [2.0, 2.0, 0.0]],
        points=[((1, 2, 3, 4, 5), (5,), (0, 1, 2)), ((0, 5), (), ())],
        conversions=[(0, None, [0.0]), (1, None, [0.0, 0.0]), (2, None, [1.0, 0.0])],
    )


def test_least_peak_is_not_the_hints_when_highs_presolves_it():
    """HiGHS 1.16 answered this one (found by hypothesis) with the better objective, 3, and
    the hinted program's columns (each node's smallest candidate: node 5's second, 1 byte live
    beside node 0's 3 at the second point, peak 4). The least peak is 3: node 5's first
    candidate (0 live, 2 while it runs) with node 2's second (whose conversion holds nothing):
    2 at the first point, 3 at the second."""
    problem = six_node_peak_problem()
    peak, proven, choice = placement_search.least_peak(problem)
    assert (peak, proven) == (3.0, True)
    assert problem.peak(choice) == 3.0 and choice[2] == 1 and choice[5] in (0, 1)


def test_least_peak_stopped_before_any_program_is_the_floor_unproven():
    """HiGHS stopping at its time limit before any program read as "every combination uses a
    forbidden pair": the least peak came out proven infinite ("inf GiB" in auto-shard's
    error), where a program exists. It is the floor, a lower bound."""
    problem = six_node_peak_problem()
    stopped = placement_search.NoSolutionYet("the integer program found no program")
    with mock.patch.object(placement_search._Model, "solve", side_effect=stopped):
        peak, proven, choice = placement_search.least_peak(problem)
    assert (peak, proven, choice) == (placement_search._floor(problem), False, None)
    assert math.isfinite(peak) and peak <= 3.0


def test_coordinate_descent_finds_a_program_where_every_start_meets_a_forbidden_pair():
    """Each of cd's usual starts (the forest relaxation's optimum, the greedy pass, the cheapest
    own candidates, random ones) ends in a forbidden pair here, although programs without one
    exist: cd then starts from one that has none (found exactly), where it used to fail (as it
    did on GPT-3's 2-layer step at dp=2 x tp=2, objective=time)."""
    inf = math.inf
    problem = Problem(
        [[0, 10], [10, 0], [5, 5], [5, 0]],
        [
            (0, 1, [[inf, 0.0], [1.0, inf]]),
            (0, 2, [[inf, 0.0], [3.0, 1.0]]),
            (1, 2, [[inf, 1.0], [0.0, inf]]),
        ],
    )
    best = exhaustive(problem).cost
    found = coordinate_descent(problem)
    assert math.isfinite(found.cost)
    assert found.cost >= best
    assert found.cost == problem.cost(found.choice)


def test_cds_block_moves_leave_a_local_optimum_of_single_moves():
    """Two placements per node, a conversion between unlike neighbours. From every start the
    single-node sweeps stop at 17 (moving any one node pays more conversions than its own cost
    saves); re-choosing every node but one end of the edge off the spanning forest at once
    (`_tree_blocks`) reaches the optimum, 16."""

    def unlike(cost: float) -> list[list[float]]:
        return [[0.0, cost], [cost, 0.0]]

    problem = Problem(
        [[3.0, 0.0], [4.0, 3.0], [3.0, 3.0], [3.0, 1.0], [1.0, 4.0], [0.0, 4.0], [2.0, 3.0]],
        [
            (0, 1, unlike(11.0)),
            (1, 2, unlike(4.0)),
            (0, 3, unlike(3.0)),
            (1, 4, unlike(4.0)),
            (1, 5, unlike(3.0)),
            (5, 6, unlike(8.0)),
            (4, 5, unlike(4.0)),
        ],
    )
    assert exhaustive(problem).cost == 16.0
    found = coordinate_descent(problem)
    assert found.cost == 16.0 == problem.cost(found.choice)
    with mock.patch.object(placement_search, "_tree_blocks"):  # the sweeps alone
        assert coordinate_descent(problem).cost == 17.0


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_a_block_move_is_exact_over_its_free_nodes(problem, data):
    """A block move (`_exact_over`) re-chooses every node it does not hold at their joint
    optimum given the held ones: equal to the best of every combination of the free nodes.
    The held set is one end of each edge off a spanning forest (the free nodes a forest,
    peeled leaf by leaf), less any nodes (the free nodes may then close cycles, as a forbidden
    pair's freed ends do: what is left goes to variable elimination); self-edges, forbidden
    pairs and two edges between one pair of nodes included."""
    sizes = [len(c) for c in problem.node_cost]
    for k, (_, _, table) in enumerate(problem.edges[: data.draw(st.integers(0, 3))]):
        table[k % len(table)][0] = math.inf
    u = data.draw(st.integers(0, problem.size - 1))
    problem.edges.append((u, u, [[float(a + b) for b in range(sizes[u])] for a in range(sizes[u])]))
    if problem.size >= 3 and data.draw(st.booleans()):  # a ring through every node: cycles
        for i in range(problem.size):
            a, b = i, (i + 1) % problem.size
            ring = [[float((x + 2 * y + i) % 5) for y in range(sizes[b])] for x in range(sizes[a])]
            problem.edges.append((a, b, ring))
    if len(problem.edges) > 1:  # a second edge between the first edge's nodes, reversed
        a, b, _ = problem.edges[0]
        problem.edges.append(
            (b, a, [[float(i * j) for j in range(sizes[a])] for i in range(sizes[b])])
        )
    choice = [data.draw(st.integers(0, k - 1)) for k in sizes]
    cut = placement_search._edges_off_forest(problem)
    ends = data.draw(st.lists(st.integers(0, 1), min_size=len(cut), max_size=len(cut)))
    held = {edge[end] for edge, end in zip(cut, ends, strict=True)}
    held -= set(data.draw(st.lists(st.integers(0, problem.size - 1), max_size=problem.size)))
    if data.draw(st.booleans()):  # nothing held: every cycle of the problem left
        held = set()
    moved = placement_search._exact_over(placement_search._Arrays(problem), choice, held)
    assert moved is not None and all(moved[n] == choice[n] for n in held)
    free = [n for n in range(problem.size) if n not in held]
    best = math.inf
    for combination in itertools.product(*(range(sizes[n]) for n in free)):
        candidate = list(choice)
        for n, c in zip(free, combination, strict=True):
            candidate[n] = c
        best = min(best, problem.cost(candidate))
    assert problem.cost(moved) == best or problem.cost(moved) == pytest.approx(best)


@settings(max_examples=150, deadline=None)
@given(problems(), st.integers(0, 4))
def test_cds_block_moves_never_end_above_the_sweeps_alone(problem, forbidden):
    """The block moves run apart from the starts (their own random numbers) and keep only
    what is cheaper, so cd never ends above its single-node sweeps alone; forbidden pairs
    (inf) included, where a start the block moves free must not skip the program without
    forbidden pairs that the sweeps alone fall back to."""
    for k, (_, _, table) in enumerate(problem.edges[:forbidden]):
        table[k % len(table)][0] = math.inf
    best = optimum(problem)
    if best is None or math.isinf(best):
        return
    with mock.patch.object(placement_search, "_tree_blocks"):
        alone = coordinate_descent(problem)
    found = coordinate_descent(problem)
    assert found.cost <= alone.cost + 1e-9
    assert best - 1e-9 <= found.cost == problem.cost(found.choice)


def test_exhaustive_refuses_a_problem_past_its_limit_before_it_starts():
    """On three axes a four-op program had 5e8 combinations: exhaustive ran for minutes, past
    its time limit."""
    problem = Problem([[0.0] * 8 for _ in range(7)], [])  # 8^7 = 2.1e6 combinations
    with pytest.raises(placement_search.NoSolutionYet, match="exhaustive would try 2.1e\\+06"):
        placement_search.solve(problem, "exhaustive")
