"""Choosing one candidate per node of a graph with node and edge costs: the search under
`auto-shard`.

A node is an op, its candidates the op's legal placement signatures; an edge joins a producer to
a consumer and costs what converting the producer's result to the consumer's operand placement
costs under each pair of choices; a per-device memory limit bounds the peak over program points
of the chosen candidates' memory live there (`Problem.points`: the nodes whose values are live
at a point, the nodes whose transient memory - a call's callee peak - counts there, and the
conversions whose outputs are held there, `Problem.conversions`, priced per pair of choices;
without points, one point holding every node: the sum). Four strategies, each reporting its
cost, the optimum or a lower bound, and the gap:

* `exhaustive`: every combination (the ground truth for small graphs);
* `dp`: exact dynamic programming as variable elimination - on a chain or a forest the classic
  DP, on a graph with cycles over the tree decomposition its elimination order builds (the note
  gives its width); under a memory limit its unconstrained optimum is the answer when its peak
  fits (no cheaper choice exists at all), else the peak couples the nodes and `ilp` solves it,
  as it does a decomposition too wide to tabulate - the solution says so;
* `ilp`: an exact integer program solved by HiGHS (`highspy`), on what is left once the nodes
  of at most two neighbours are eliminated (`Series`, without a memory limit): one binary per
  candidate, the local-polytope formulation of each edge's pairwise cost (without a memory
  limit its LP relaxation is tried first: integral on the layer bodies, hence optimal), the
  memory limit as one row per program point whose live set no other point's contains
  (`maximal_points`), the conversions' bytes linear in the edges' joint variables; past its
  time limit it answers with the best program found and the largest valid lower bound of
  HiGHS's dual bound, its LP relaxation, the forest relaxation and that of the candidates
  fitting the memory limit (the note names it and the gap relative to the cost);
* `cd`: AutoDDL's coordinate descent from several starting points (one the optimum of its
  bound's relaxation, one a look-ahead greedy pass), each node re-chosen given its neighbours
  until a full sweep changes nothing, then block moves without a memory limit (`_tree_blocks`:
  one end of each edge off a spanning forest held, every other node re-chosen at once,
  exactly), which move a chain of ops where no single node can move alone; its lower bound
  (`lower_bound`) is the optimum of a spanning forest of the edges with the others folded in at their cheapest; a move never lifts
  a point's memory past the limit (one start is a program of few bytes: it fits whenever
  anything does, calls aside).

Both exact strategies first fold nodes of one candidate into their neighbours and drop
dominated candidates (`prune`). `least_peak` finds the least peak any program reaches (an
integer program minimizing the fullest point), `least_memory` fast a program of little memory
and as cheap as that allows (a called layer's least-memory transfer table entry).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import count, product
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

STRATEGIES = ("cd", "dp", "ilp", "exhaustive")
TIME_LIMIT = 60.0
"""Seconds an integer program may search before it answers with its best program and bound: a
safety net behind `NODE_LIMIT`, the budget that binds first wherever branching is slow."""

NODE_LIMIT = 10_000
"""Branch-and-bound nodes an integer program may explore before it answers with its best
program and bound: a budget of work, not of seconds, so that where it stops a search its
answer is the same on a busy machine as on an idle one (HiGHS branches deterministically).
The layers' programs close at the root node; their runs never reach it."""

Point = tuple[tuple[int, ...], ...]
"""A program point: the nodes whose values are live there (`Problem.memory`), the nodes whose
transient memory counts there (`Problem.transient`: a call's callee peak, at the call), and
optionally third the conversions whose outputs are live there (indices into
`Problem.conversions`: the op reading them runs there)."""


def parts(point: Point) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A point's live nodes, running nodes and conversions (none when it names two parts)."""
    return point[0], point[1], point[2] if len(point) > 2 else ()


@dataclass
class Problem:
    """Candidates per node, their own costs and memory, and pairwise edge costs."""

    node_cost: list[list[float]]
    edges: list[tuple[int, int, list[list[float]]]] = field(default_factory=list)
    """(u, v, cost[choice of u][choice of v]); math.inf forbids a pair."""
    memory: list[list[float]] | None = None
    """Bytes per device of each node's value under each candidate."""
    memory_limit: float | None = None
    transient: list[list[float]] | None = None
    """Bytes a node needs only while it runs (a call: its callee entry's own peak)."""
    points: list[Point] | None = None
    """The program points the limit bounds; None: one point holding every node (the sum)."""
    conversions: list[tuple[int, int | None, list]] | None = None
    """Bytes a conversion's output holds while the op reading it runs: (u, v, bytes[choice of
    u][choice of v]) for converting u's value to what v reads (0 where they agree), (u, None,
    bytes[choice of u]) for converting it to a fixed placement; the points say where each
    counts."""

    @property
    def size(self) -> int:
        return len(self.node_cost)

    def memory_points(self) -> list[Point]:
        if self.points is None:
            return [(tuple(range(self.size)), ())]
        return self.points

    def point_memory(self, choice: Sequence[int]) -> list[float]:
        """The bytes per device live at each point under `choice`."""
        memory = self.memory or [[0.0] * len(c) for c in self.node_cost]
        transient = self.transient
        out = []
        for point in self.memory_points():
            live, running, converted = parts(point)
            total = sum(memory[n][choice[n]] for n in live)
            if transient is not None:
                total += sum(transient[n][choice[n]] for n in running)
            for c in converted:
                total += self.converted_bytes(c, choice)
            out.append(total)
        return out

    def converted_bytes(self, c: int, choice: Sequence[int]) -> float:
        """The bytes conversion `c`'s output holds under `choice`."""
        assert self.conversions is not None
        u, v, table = self.conversions[c]
        return float(table[choice[u]] if v is None else table[choice[u]][choice[v]])

    def peak(self, choice: Sequence[int]) -> float:
        """The most bytes per device live at any point under `choice`."""
        return max(self.point_memory(choice), default=0.0)

    def cost(self, choice: Sequence[int]) -> float:
        total = sum(self.node_cost[n][c] for n, c in enumerate(choice))
        for u, v, table in self.edges:
            total += table[choice[u]][choice[v]]
        return total

    def fits(self, choice: Sequence[int]) -> bool:
        if self.memory is None or self.memory_limit is None:
            return True
        return self.peak(choice) <= _slack(self.memory_limit)


def _slack(limit: float) -> float:
    """The limit with room for rounding in sums of large byte counts."""
    return limit * (1 + 1e-9) + 1e-9


def maximal_points(points: Sequence[Point]) -> list[Point]:
    """The points whose memory can be the peak: repeats dropped, and every point whose live set
    (with its transients) a neighbouring point's contains - values live on intervals of the
    program order, so a point contained in any other point is contained in a neighbour, or in a
    chain of contained neighbours ending at a kept point. Linear in the points' sizes."""
    sets = [
        frozenset(live) | frozenset(-1 - n for n in running) | frozenset(("c", c) for c in conv)
        for live, running, conv in map(parts, points)
    ]
    order = [i for i in range(len(sets)) if i == 0 or sets[i] != sets[i - 1]]
    kept: dict[frozenset, Point] = {}
    for k, i in enumerate(order):
        before = sets[order[k - 1]] if k > 0 else None
        after = sets[order[k + 1]] if k + 1 < len(order) else None
        if (before is not None and sets[i] < before) or (after is not None and sets[i] < after):
            continue
        kept.setdefault(sets[i], points[i])
    return list(kept.values())


@dataclass
class Solution:
    choice: list[int]
    cost: float
    strategy: str
    """The strategy that produced it (`ilp` where `dp` could not apply)."""
    lower_bound: float
    note: str = ""
    peak: float = 0.0
    """Bytes per device live at the fullest program point (set where a limit applies)."""

    @property
    def gap(self) -> float:
        if math.isinf(self.cost):
            return math.inf
        return self.cost - self.lower_bound

    @property
    def optimal(self) -> bool:
        return self.gap <= 1e-9 * max(1.0, abs(self.cost))


class NoSolution(Exception):
    """Every combination breaks the memory limit or a forbidden pair."""


class NoSolutionYet(NoSolution):
    """The integer program stopped (time or node limit) before it found any program: one may
    still exist."""


def solve(
    problem: Problem, strategy: str, seed: int = 0, time_limit: float | None = None
) -> Solution:
    """`strategy`'s solution; `time_limit` bounds each integer program's seconds (`ilp`, and
    `dp` where it hands over to ilp)."""
    limit = TIME_LIMIT if time_limit is None else time_limit
    if strategy == "exhaustive":
        return exhaustive(problem, limit)
    if strategy == "dp":
        return dynamic_programming(problem, limit)
    if strategy == "ilp":
        return integer_program(problem, limit)
    if strategy == "cd":
        return coordinate_descent(problem, seed=seed)
    raise ValueError(f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})")


EXHAUSTIVE_LIMIT = 1_000_000
"""Combinations `exhaustive` tries at most (dp and ilp are exact too, on any size)."""


def exhaustive(problem: Problem, time_limit: float = TIME_LIMIT) -> Solution:
    """Every combination, the cheapest that fits: a check of the other strategies on small
    problems. A problem of more than `EXHAUSTIVE_LIMIT` combinations is refused before it
    starts (it had run for minutes), and the search stops at `time_limit` seconds."""
    import time

    count = math.prod(len(c) for c in problem.node_cost)
    if count > EXHAUSTIVE_LIMIT:
        raise NoSolutionYet(
            f"exhaustive would try {count:.3g} combinations (at most {EXHAUSTIVE_LIMIT:,}); "
            "dp and ilp are exact too"
        )
    ends = time.perf_counter() + time_limit
    best: tuple[float, list[int]] | None = None
    for k, choice in enumerate(product(*(range(len(c)) for c in problem.node_cost))):
        if k % 4096 == 4095 and time.perf_counter() > ends:
            raise NoSolutionYet(f"exhaustive stopped at time-limit={time_limit:g}s")
        if not problem.fits(choice):
            continue
        cost = problem.cost(choice)
        if best is None or cost < best[0]:
            best = (cost, list(choice))
    if best is None or math.isinf(best[0]):
        raise NoSolution(
            "no combination of candidates fits the memory limit"
            if problem.memory_limit is not None
            else "every combination uses a forbidden pair"
        )
    return Solution(best[1], best[0], "exhaustive", best[0])


def tree_order(problem: Problem) -> list[tuple[int, int | None]] | None:
    """(node, parent) pairs, every child before its parent, when the edges form a forest (a
    chain is one); None when they close a cycle or repeat a pair."""
    links: dict[int, list[int]] = {i: [] for i in range(problem.size)}
    seen: set[tuple[int, int]] = set()
    for u, v, _ in problem.edges:
        key = (min(u, v), max(u, v))
        if u == v or key in seen:
            return None
        seen.add(key)
        links[u].append(v)
        links[v].append(u)
    order: list[tuple[int, int | None]] = []
    visited: set[int] = set()
    for root in range(problem.size):
        if root in visited:
            continue
        stack: list[tuple[int, int | None]] = [(root, None)]
        component: list[tuple[int, int | None]] = []
        while stack:
            node, parent = stack.pop()
            if node in visited:
                return None  # reached twice: a cycle
            visited.add(node)
            component.append((node, parent))
            stack.extend((n, node) for n in links[node] if n != parent)
        order.extend(reversed(component))
    return order


def fold_fixed(problem: Problem) -> Problem:
    """The same problem with every edge at a node of one candidate (a call of a function
    already solved, a given argument) folded into the other end's own costs: conditioning on
    a fixed node cuts the cycles through it (a stack of layer calls sharing the mask and the
    saved inputs is a forest once its calls are fixed). Costs of every choice are unchanged."""
    fixed = {n for n, cs in enumerate(problem.node_cost) if len(cs) == 1}
    if not fixed:
        return problem
    node_cost = [list(cs) for cs in problem.node_cost]
    edges = []
    for u, v, table in problem.edges:
        if u in fixed:
            for b in range(len(node_cost[v])):
                node_cost[v][b] += table[0][b]
        elif v in fixed:
            for a in range(len(node_cost[u])):
                node_cost[u][a] += table[a][0]
        else:
            edges.append((u, v, table))
    return replace(problem, node_cost=node_cost, edges=edges)


def dynamic_programming(problem: Problem, time_limit: float = TIME_LIMIT) -> Solution:
    """Exact dynamic programming: fixed nodes folded into their neighbours, dominated
    candidates dropped, then variable elimination (`eliminate`) - on a chain or a forest the
    classic DP, on a graph with cycles (residual and attention branches) the DP over a tree
    decomposition its elimination order builds. A memory peak is no sum over the tables:
    the unconstrained optimum is the answer when its peak fits the limit (nothing cheaper
    exists at all); otherwise the peak couples the nodes and, as a decomposition too wide to
    tabulate, goes to `ilp` - the solution says so."""
    if problem.memory is not None and problem.memory_limit is not None:
        unlimited = replace(problem, memory=None, memory_limit=None, conversions=None)
        free = dynamic_programming(unlimited, time_limit)
        if problem.fits(free.choice):
            fits = "dp: the optimum without a memory limit fits it"
            free.note = fits if not free.note else f"{free.note}; {fits}"
            return free
        solution = integer_program(problem, time_limit)
        solution.note = _joined(
            solution.note,
            "dp: the memory peak couples the nodes (the optimum without a limit breaks it); "
            "solved by ilp instead",
        )
        return solution
    folded = fold_fixed(problem)
    reduced, keep = prune(folded)
    # pruning leaves nodes of one candidate: folded too, or a hub of many is eliminated into
    # a table over all its neighbours (past numpy's 64 dimensions)
    eliminated = eliminate(fold_fixed(reduced))
    if eliminated is None:
        solution = integer_program(problem, time_limit, (reduced, keep))
        solution.note = _joined(
            "dp: the graph's tree decomposition is too wide; solved by ilp instead", solution.note
        )
        return solution
    picked, width = eliminated
    choice = [keep[n][c] for n, c in enumerate(picked)]
    cost = problem.cost(choice)
    if math.isinf(cost):
        raise NoSolution("every combination uses a forbidden pair")
    note = "" if width <= 1 else f"dp: the graph has cycles; tree decomposition of width {width}"
    return Solution(choice, cost, "dp", cost, note)


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


HINTED = 1000
"""Nodes up to which coordinate descent's program starts HiGHS's branching."""

MAX_SCOPE = 32
"""Nodes a table of variable elimination may span (numpy allows 64 axes)."""

MAX_TABLE = 1 << 21
"""Entries of the largest table variable elimination may build before it hands over to ilp."""


def prune(problem: Problem) -> tuple[Problem, list[list[int]]]:
    """The problem without dominated candidates, and the original index of every kept one.

    Candidate a of a node is dominated by b when b costs no more on its own, on every edge
    against every choice of the other end, and in memory: swapping a for b never makes a
    solution dearer or break the limit, so an optimum survives. Many signatures of an op
    differ only where no edge looks (or are equal outright): the DP's tables shrink by the
    square of what is dropped. Repeated for the neighbours of every pruned node until nothing
    changes (pruning one end shortens the other end's rows)."""
    import numpy as np

    keep = [list(range(len(c))) for c in problem.node_cost]
    node_cost = [np.asarray(c, dtype=float) for c in problem.node_cost]
    memory = (
        None if problem.memory is None else [np.asarray(m, dtype=float) for m in problem.memory]
    )
    transient = (
        None
        if problem.transient is None
        else [np.asarray(m, dtype=float) for m in problem.transient]
    )
    edges = [
        (u, v, np.asarray(t, dtype=float).reshape(len(keep[u]), len(keep[v])))
        for u, v, t in problem.edges
    ]
    # a conversion's bytes look like an edge's cost to dominance (less is better); one to a
    # fixed placement is an edge to itself whose diagonal is the bytes
    conversions = [
        (u, u, np.diag(np.asarray(t, dtype=float)))
        if v is None
        else (u, v, np.asarray(t, dtype=float).reshape(len(keep[u]), len(keep[v])))
        for u, v, t in problem.conversions or []
    ]
    edges += conversions
    incident: dict[int, list[tuple[int, bool]]] = {n: [] for n in range(problem.size)}
    for e, (u, v, _) in enumerate(edges):
        incident[u].append((e, True))
        if v != u:
            incident[v].append((e, False))
    pending = set(range(problem.size))
    seen = _DOMINANCE  # across calls: a layer's entries show the same nodes again
    if sum(len(key[1]) for key in seen) > MAX_DOMINANCE_BYTES:
        seen.clear()
    while pending:
        n = pending.pop()
        if len(keep[n]) >= 2:
            columns = [node_cost[n][:, None]]
            if memory is not None:
                columns.append(memory[n][:, None])
            if transient is not None:
                columns.append(transient[n][:, None])
            for e, forward in incident[n]:
                u, v, t = edges[e]
                if u == v:
                    columns.append(np.diagonal(t)[:, None])
                else:
                    columns.append(t if forward else t.T)
            vectors = np.concatenate(columns, axis=1)
            dominated = _dominated(vectors, seen)
            if not dominated.any():
                continue
            kept = np.nonzero(~dominated)[0]
            pending.update(  # shorter rows at the other ends: look at those again
                edges[e][1] if forward else edges[e][0] for e, forward in incident[n]
            )
            keep[n] = [keep[n][i] for i in kept]
            node_cost[n] = node_cost[n][kept]
            if memory is not None:
                memory[n] = memory[n][kept]
            if transient is not None:
                transient[n] = transient[n][kept]
            for e, forward in incident[n]:
                u, v, t = edges[e]
                if u == v:
                    t = t[np.ix_(kept, kept)]
                elif forward:
                    t = t[kept, :]
                else:
                    t = t[:, kept]
                edges[e] = (u, v, t)
    kinds = [v for _, v, _ in problem.conversions or []]
    converted = edges[len(problem.edges) :]
    reduced = replace(
        problem,
        node_cost=[c.tolist() for c in node_cost],
        edges=[(u, v, t) for u, v, t in edges[: len(problem.edges)]],  # arrays, as ilp reads
        conversions=None
        if problem.conversions is None
        else [
            (u, None, np.diagonal(t).copy()) if kind is None else (u, v, t)
            for (u, v, t), kind in zip(converted, kinds, strict=True)
        ],
        memory=None if memory is None else [m.tolist() for m in memory],
        transient=None if transient is None else [m.tolist() for m in transient],
    )
    return reduced, keep


_DOMINANCE: dict[tuple, np.ndarray] = {}
"""Which candidates `_dominated` found dominated, by the vectors' shape and bytes, kept across
`prune` calls: the transfer-table entries of a layer are searches of the same function at
other boundaries, and most of its nodes present the same vectors in every one (on GPT-3's
96-layer step, 658 distinct vectors among 42,000 looked at, 5.7 MB)."""

MAX_DOMINANCE_BYTES = 1 << 26
"""Bytes of vectors `_DOMINANCE` holds before it starts again."""


DOMINANCE_BLOCK = 1 << 24
"""Comparisons `_dominated` makes at once (bytes of its temporary arrays): a node of 1,652
candidates against 2,768 columns (a layer on a three-axis mesh) needed 7 GiB in one piece."""


def _dominated(vectors: np.ndarray, seen: dict[tuple, np.ndarray] | None = None) -> np.ndarray:
    """Which rows (candidates) of `vectors` another row dominates: no worse in every column and
    better in one, or equal and earlier. Remembered in `seen` by the rows' bytes: the nodes of a
    stack of layers present the same vectors once per layer (`prune`). Rows are compared a block
    at a time, within `DOMINANCE_BLOCK`; equal columns are one column to dominance, so a large
    problem compares its distinct columns only."""
    import numpy as np

    key = None
    if seen is not None:
        key = (vectors.shape, vectors.tobytes())
        known = seen.get(key)
        if known is not None:
            return known
    n = len(vectors)
    if n * n * vectors.shape[1] > DOMINANCE_BLOCK:
        vectors = np.unique(vectors, axis=1)
    rows = max(1, DOMINANCE_BLOCK // max(1, n * vectors.shape[1]))
    dominated = np.zeros(n, dtype=bool)
    others = vectors[None, :, :]
    for start in range(0, n, rows):
        block = vectors[start : start + rows, None, :]  # [a, b]: does b dominate a?
        no_worse = (others <= block).all(axis=2)
        better = (others < block).any(axis=2)
        earlier = np.arange(n)[None, :] < np.arange(start, start + len(block))[:, None]
        dominated[start : start + len(block)] = (no_worse & (better | earlier)).any(axis=1)
    if key is not None:
        seen[key] = dominated
    return dominated


def elimination_order(sizes: Sequence[int], edges: Sequence[tuple[int, int]]) -> list[int] | None:
    """The order variable elimination takes, worked out on the graph alone: each time the node
    whose table (its candidates times its neighbours') is smallest, its neighbours then joined
    to each other. None when some table would pass `MAX_TABLE` (found before any is built)."""
    import heapq

    links: list[set[int]] = [set() for _ in sizes]
    for u, v in edges:
        if u != v:
            links[u].add(v)
            links[v].add(u)

    size_of = sizes.__getitem__
    # each node's weight kept current as its links change: a popped entry whose weight is no
    # longer its node's is stale (the node was pushed again with its new weight)
    weights = [math.prod(map(size_of, links[x])) * sizes[x] for x in range(len(sizes))]
    heap = [(w, x) for x, w in enumerate(weights)]
    heapq.heapify(heap)
    done = [False] * len(sizes)
    order = []
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        w, x = pop(heap)
        if done[x] or w != weights[x]:
            continue
        if w > MAX_TABLE:
            return None
        done[x] = True
        order.append(x)
        near = links[x]
        for y in near:
            joined = links[y]
            joined.discard(x)
            joined |= near
            joined.discard(y)
        for y in near:
            weights[y] = math.prod(map(size_of, links[y])) * sizes[y]
            push(heap, (weights[y], y))
    return order


def eliminate(problem: Problem) -> tuple[list[int], int] | None:
    """Min-sum variable elimination: each node in turn (`elimination_order`) is minimized out
    of the sum of the tables that mention it, leaving one table over its neighbours and, for
    the way back, its best choice per neighbour choice. Exact on any graph; the work is the
    size of the largest table, the product of the candidates of a node and its neighbours at
    elimination (a chain: S^2 per node, a layer's residual and attention branches: a few
    S^3). Returns the choice and the decomposition's width (the most neighbours a node had),
    or None when a table would pass `MAX_TABLE`."""
    import numpy as np

    sizes = [len(c) for c in problem.node_cost]
    order = elimination_order(sizes, [(u, v) for u, v, _ in problem.edges])
    if order is None:
        return None
    tables: dict[int, tuple[tuple[int, ...], np.ndarray]] = {}
    mentions: list[set[int]] = [set() for _ in sizes]
    keys = count()

    def add(scope: tuple[int, ...], table: np.ndarray) -> None:
        key = next(keys)
        tables[key] = (scope, table)
        for x in scope:
            mentions[x].add(key)

    for x, c in enumerate(problem.node_cost):
        add((x,), np.asarray(c, dtype=float))
    pairs: dict[tuple[int, int], np.ndarray] = {}
    for u, v, t in problem.edges:
        table = np.asarray(t, dtype=float).reshape(sizes[u], sizes[v])
        if u == v:
            add((u,), np.diagonal(table).copy())
            continue
        if u > v:
            u, v, table = v, u, table.T
        pairs[(u, v)] = pairs[(u, v)] + table if (u, v) in pairs else table
    for scope, table in pairs.items():
        add(scope, table)
    steps: list[tuple[int, tuple[int, ...], np.ndarray]] = []
    width = 0
    for x in order:
        held = list(mentions[x])
        parts = [tables.pop(key) for key in held]
        scope = tuple(sorted({y for s, _ in parts for y in s}))
        width = max(width, len(scope) - 1)
        if len(scope) > MAX_SCOPE:  # nodes of one candidate widen no table, but numpy's axes
            return None
        # summed in the order the tables are held (no zeros first: only a zero's sign differs)
        total = None
        for key, (s, table) in zip(held, parts, strict=True):
            if s != scope:
                table = table.reshape([sizes[y] if y in s else 1 for y in scope])
            total = table if total is None else total + table
            for y in s:
                mentions[y].discard(key)
        assert total is not None  # x's own costs at least
        axis = scope.index(x)
        rest = scope[:axis] + scope[axis + 1 :]
        steps.append((x, rest, total.argmin(axis=axis)))
        add(rest, total.min(axis=axis))
    choice = [0] * len(sizes)
    for x, rest, best in reversed(steps):
        choice[x] = int(best[tuple(choice[y] for y in rest)])
    return choice, width


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """HiGHS prints a banner on file descriptor 1 when created: keep it out of the IR a tool
    prints there."""
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def integer_program(
    problem: Problem,
    time_limit: float = TIME_LIMIT,
    pruned: tuple[Problem, list[list[int]]] | None = None,
) -> Solution:
    """The integer program, on the problem with fixed nodes folded in and dominated
    candidates dropped (`prune`, an optimum survives; `pruned`: what that gave already, as
    `dynamic_programming` has it) and, without a memory limit, its chains eliminated (`Series`:
    exact, and the LP HiGHS solves shrinks by half to three quarters on GPT layers): the
    solution maps back to the input.
    Exact when HiGHS proves its optimum within `time_limit` seconds; otherwise its best
    program and the best valid lower bound (`best_bound`) of HiGHS's dual bound, the LP
    relaxation's optimum (solved after the stop where it was not before, within
    `RELAXATION_ITERATIONS`) and the forest relaxation (`lower_bound`,
    at least the nodes' cheapest own costs summed, known without HiGHS), with the memory limit:
    of the candidates that fit it (`fitting_bound`); the note names it and the gap relative to
    the cost."""
    reduced, keep = pruned if pruned is not None else prune(fold_fixed(problem))
    series = Series.of(reduced)
    if series.problem.size == 0:  # a forest: the elimination solved it
        choice = [keep[n][c] for n, c in enumerate(series.expand([]))]
        cost = problem.cost(choice)
        if math.isinf(cost):
            raise NoSolution("every combination uses a forbidden pair")
        return Solution(choice, cost, "ilp", cost)
    found = _Model(series.problem).solve(time_limit)
    choice = [keep[n][c] for n, c in enumerate(series.expand(found.choice))]
    cost = problem.cost(choice)
    if found.proven:
        return Solution(choice, cost, "ilp", cost)
    bounds = {
        **found.bounds,
        "the forest relaxation": lower_bound(problem),
        "the forest relaxation of the candidates that fit": fitting_bound(problem),
    }
    bound, which = best_bound(bounds, cost)
    limit = (
        f"node limit ({NODE_LIMIT} nodes)" if found.nodes else f"time limit ({time_limit:.3g} s)"
    )
    note = (
        f"ilp: stopped at its {limit} with HiGHS's best program; "
        f"bound: {which}, gap {relative_gap(cost, bound):.3%} of the cost"
    )
    return Solution(choice, cost, "ilp", bound, note)


@dataclass
class Series:
    """A problem with its nodes of at most two neighbours eliminated (`Series.of`): the smaller
    problem left over the others, which node of the input each of its nodes is, and the steps
    that choose the eliminated nodes given the rest (`expand`)."""

    problem: Problem
    kept: list[int]
    steps: list[tuple[int, tuple[int, ...], np.ndarray]]
    size: int

    @staticmethod
    def of(problem: Problem) -> Series:
        """Variable elimination (as `eliminate`) of the nodes that have at most two
        neighbours, while any has (a leaf folds into its neighbour's own costs, a node between
        two into one edge joining them, summed with one they have already; eliminating one
        lowers its neighbours' degree), every table within `MAX_TABLE`. The optimum of what is
        left, expanded, is the input's optimum, and any choice of what is left costs there
        what its best expansion costs in the input (each eliminated node takes its best
        candidate given its neighbours), so an integer program's bounds hold for both. Why: a
        layer's backward pass is too wide for `eliminate`, but most of its nodes sit on chains
        (an elementwise op between two others); its integer program's LP, a joint variable per
        pair of candidate classes per edge, shrinks by the chains' edges (GPT-3's backward
        layer at dp=2 x tp=2: 152 nodes to 62, 70,820 columns to 43,873, HiGHS's simplex 2.5x
        faster; a layer's forward, backward and update inlined: 532 nodes to 105, 4x).
        A problem under a memory limit is kept whole (its points name the nodes)."""
        import numpy as np

        every = list(range(problem.size))
        if problem.memory_limit is not None or problem.conversions:
            return Series(problem, every, [], problem.size)
        problem = fold_fixed(problem)  # a node of one candidate: its edges are own costs
        sizes = [len(c) for c in problem.node_cost]
        own = [np.asarray(c, dtype=float) for c in problem.node_cost]
        pairs: dict[tuple[int, int], np.ndarray] = {}
        for u, v, t in problem.edges:
            table = np.asarray(t, dtype=float).reshape(sizes[u], sizes[v])
            if u == v:
                own[u] = own[u] + np.diagonal(table)
                continue
            if u > v:
                u, v, table = v, u, table.T
            pairs[(u, v)] = pairs[(u, v)] + table if (u, v) in pairs else table
        links: list[set[int]] = [set() for _ in sizes]
        for u, v in pairs:
            links[u].add(v)
            links[v].add(u)

        def table(a: int, b: int) -> np.ndarray:
            return pairs[(a, b)] if a < b else pairs[(b, a)].T

        alive = [True] * problem.size
        steps: list[tuple[int, tuple[int, ...], np.ndarray]] = []
        todo = [x for x in reversed(every) if len(links[x]) <= 2]
        while todo:
            x = todo.pop()
            near = sorted(links[x])
            if not alive[x] or len(near) > 2:
                continue
            if len(near) == 2 and sizes[x] * sizes[near[0]] * sizes[near[1]] > MAX_TABLE:
                continue
            if not near:
                steps.append((x, (), np.array(int(np.argmin(own[x])))))
            elif len(near) == 1:
                (a,) = near
                total = table(a, x) + own[x][None, :]
                steps.append((x, (a,), total.argmin(axis=1)))
                own[a] = own[a] + total.min(axis=1)
            else:
                a, b = near
                total = table(a, x)[:, :, None] + own[x][None, :, None] + table(x, b)[None, :, :]
                steps.append((x, (a, b), total.argmin(axis=1)))
                least = total.min(axis=1)
                pairs[(a, b)] = pairs[(a, b)] + least if (a, b) in pairs else least
                links[a].add(b)
                links[b].add(a)
            for y in near:
                pairs.pop((min(x, y), max(x, y)))
                links[y].discard(x)
                if len(links[y]) <= 2:
                    todo.append(y)
            alive[x], links[x] = False, set()
        kept = [x for x in every if alive[x]]
        index = {x: i for i, x in enumerate(kept)}
        left = Problem(
            [own[x].tolist() for x in kept],
            [(index[u], index[v], t) for (u, v), t in pairs.items()],
        )
        return Series(left, kept, steps, problem.size)

    def expand(self, choice: Sequence[int]) -> list[int]:
        """The input's choice: `choice` of the nodes left, the eliminated ones at their best
        given their neighbours (the last eliminated first: its neighbours are chosen then)."""
        full = [0] * self.size
        for x, c in zip(self.kept, choice, strict=True):
            full[x] = c
        for x, near, best in reversed(self.steps):
            full[x] = int(best[tuple(full[y] for y in near)])
        return full


def fitting_bound(problem: Problem) -> float:
    """A lower bound on the cost of every program that fits the memory limit: the forest
    relaxation (`lower_bound`) of the problem without the candidates no such program takes -
    those that break the limit at some program point even with every other value and transient
    live there at its smallest (`_floor`'s minima; conversions hold at least nothing). Without
    a limit, the forest relaxation itself. Under a tight limit it is the one of the two that
    sees the limit: bytes under a memory limit cost nothing where every tensor is replicated,
    so the plain relaxation is near 0. inf: some node has no candidate that fits."""
    import numpy as np

    if problem.memory is None or problem.memory_limit is None:
        return lower_bound(problem)
    limit = _slack(problem.memory_limit)
    memory = [np.asarray(m, dtype=float) for m in problem.memory]
    transient = [
        np.asarray(t, dtype=float)
        for t in (problem.transient or [[0.0] * len(c) for c in problem.node_cost])
    ]
    least = np.array([m.min() if m.size else 0.0 for m in memory])
    running = np.array([t.min() if t.size else 0.0 for t in transient])
    fits = [np.ones(len(c), dtype=bool) for c in problem.node_cost]
    for point in problem.memory_points():
        live, run, _ = parts(point)
        base = float(least[list(live)].sum() + running[list(run)].sum())
        here: dict[int, np.ndarray] = {}
        for n in live:
            here[n] = memory[n] - least[n]
        for n in run:
            extra = transient[n] - running[n]
            here[n] = here[n] + extra if n in here else extra
        for n, extra in here.items():
            fits[n] &= base + extra <= limit
    node_cost = [
        [c if ok else math.inf for c, ok in zip(cs, fit, strict=True)]
        for cs, fit in zip(problem.node_cost, fits, strict=True)
    ]
    if any(not fit.any() for fit in fits):
        return math.inf
    return lower_bound(Problem(node_cost, problem.edges))


def best_bound(bounds: dict[str, float], value: float) -> tuple[float, str]:
    """The largest valid lower bound on `value` (a stopped search's cost or peak) of `bounds`
    (by name), and its name. A bound is valid when finite and not above `value` beyond
    rounding (1e-9 relative): one above it contradicts the program that reaches `value` (a
    solver's numerical slip), and taking it would report a gap of 0 - an optimum nothing
    proved - so it is left out; one within rounding is `value`. None valid: -inf."""
    slack = 1e-9 * max(1.0, abs(value))
    valid = {k: b for k, b in bounds.items() if math.isfinite(b) and b <= value + slack}
    if not valid:
        return -math.inf, "none"
    which = max(valid, key=valid.__getitem__)
    return min(valid[which], value), which


def relative_gap(cost: float, bound: float) -> float:
    """(cost - bound) / cost: the share of the cost the bound cannot rule out (inf where
    nothing bounds it, 0 at a cost of 0)."""
    if cost == 0.0 or math.isinf(cost):
        return 0.0 if cost == bound else math.inf
    return (cost - bound) / abs(cost)


def least_peak(
    problem: Problem, time_limit: float = TIME_LIMIT
) -> tuple[float, bool, list[int] | None]:
    """The least memory peak any combination reaches, whether it is proven (else a lower
    bound: HiGHS stopped at `time_limit`), and a combination reaching it (None when none was
    found). Where each node's smallest candidate reaches the lower bound `_floor` (no point
    holding more than its values' and transients' smallest bytes) and uses no forbidden pair
    its peak is the least, else an integer program minimizes the peak (the fullest point)
    outright."""
    if problem.memory is None:
        return 0.0, True, None
    smallest = _smallest(problem)
    floor = _floor(problem)
    if not math.isinf(problem.cost(smallest)) and problem.peak(smallest) <= floor:
        return problem.peak(smallest), True, smallest
    unlimited = replace(problem, memory_limit=None)
    reduced, keep = prune(fold_fixed(unlimited))
    try:
        found = _Model(reduced).solve(time_limit, minimize_peak=True)
    except NoSolutionYet:  # stopped before any program: the floor is what is known
        return floor, False, None
    except NoSolution:  # every combination uses a forbidden pair
        return math.inf, True, None
    choice = [keep[n][c] for n, c in enumerate(found.choice)]
    if found.proven:
        return problem.peak(choice), True, choice
    bound, _ = best_bound({**found.bounds, "the floor": floor}, problem.peak(choice))
    return bound, False, choice


def least_memory(problem: Problem, time_limit: float = TIME_LIMIT) -> Solution:
    """A program holding little memory and as cheap as that allows, fast: each node's
    smallest candidate (where that uses a forbidden pair or converts, the program of fewest
    bytes, `_fewest_bytes`), then coordinate descent from it under its own peak (no move lifts
    a point past it). Its peak is the least any program reaches where it meets `_floor` (the
    note says so); `least_peak` minimizes the peak outright, at an integer program's price."""
    start = _smallest(problem)
    if math.isinf(problem.cost(start)) or problem.conversions:
        start = _fewest_bytes(problem, time_limit)
    peak = problem.peak(start)
    proven = peak <= _floor(problem)
    if problem.memory_limit is not None and peak > _slack(problem.memory_limit):
        raise NoSolution("no combination of candidates fits the memory limit")
    solution = coordinate_descent(replace(problem, memory_limit=peak), start=start)
    solution.note = _joined(
        solution.note,
        "least memory: coordinate descent from the smallest candidates under their peak"
        + (" (the least any program reaches)" if proven else ""),
    )
    return solution


def _fewest_bytes(problem: Problem, time_limit: float) -> list[int]:
    """A program holding few bytes summed over the program points (a stand-in for the peak:
    a value counts once per point it is live at, a weight read once counts everywhere while
    its gathered copy counts where it is read) among those using no forbidden pair."""
    import numpy as np

    sizes = [len(c) for c in problem.node_cost]
    memory = problem.memory or [[0.0] * k for k in sizes]
    transient = problem.transient or [[0.0] * k for k in sizes]
    lives, runs, holds = [0] * problem.size, [0] * problem.size, Counter()
    for point in problem.memory_points():
        live, running, converted = parts(point)
        for n in live:
            lives[n] += 1
        for n in running:
            runs[n] += 1
        holds.update(converted)
    node_cost = [
        np.where(np.isinf(c), math.inf, np.multiply(m, lives[n]) + np.multiply(t, runs[n]))
        for n, (c, m, t) in enumerate(zip(problem.node_cost, memory, transient, strict=True))
    ]
    edges = []
    for u, v, t in problem.edges:
        table = np.asarray(t, dtype=float).reshape(sizes[u], sizes[v])
        if np.isinf(table).any():
            edges.append((u, v, np.where(np.isinf(table), math.inf, 0.0)))
    for c, (u, v, t) in enumerate(problem.conversions or []):
        held = np.asarray(t, dtype=float) * holds[c]
        if v is None:
            node_cost[u] = node_cost[u] + held
        elif holds[c]:
            edges.append((u, v, held.reshape(sizes[u], sizes[v])))
    # bytes times points reach 1e12: scaled to about 1 for HiGHS's tolerances
    scale = max(
        [float(np.max(c[np.isfinite(c)], initial=0.0)) for c in node_cost]
        + [float(np.max(t[np.isfinite(t)], initial=0.0)) for _, _, t in edges]
        + [1.0]
    )
    node_cost = [c / scale for c in node_cost]
    edges = [(u, v, t / scale) for u, v, t in edges]
    proxy = Problem([c.tolist() for c in node_cost], edges)
    # coordinate descent from the greedy choice (fast, and on the layers it leaves no
    # forbidden pair); the exact dp where it does
    try:
        return coordinate_descent(proxy, start=_greedy(proxy)).choice
    except NoSolution:
        return dynamic_programming(proxy, time_limit).choice


def _greedy(problem: Problem) -> list[int]:
    """Each node in turn (a function's nodes come in program order: producers first) at its
    cheapest candidate given the nodes chosen before it, over the edges to them - among the
    candidates arc consistency keeps (each has a finite partner on every edge, `_consistent`),
    so that a choice rarely leaves a later node only forbidden pairs."""
    import numpy as np

    alive = _consistent(problem)
    links: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(problem.size)]
    for u, v, t in problem.edges:
        table = np.asarray(t, dtype=float).reshape(len(problem.node_cost[u]), -1)
        links[max(u, v)].append((min(u, v), table if u < v else table.T))
    choice: list[int] = []
    for n, own in enumerate(problem.node_cost):
        total = np.where(alive[n], np.asarray(own, dtype=float), math.inf)
        for m, table in links[n]:
            total = total + (table[choice[m]] if m != n else np.diagonal(table))
        choice.append(int(np.argmin(total)))
    return choice


def _consistent(problem: Problem) -> list[np.ndarray]:
    """Per node, which candidates have on every edge a partner the same holds of with a finite
    cost (arc consistency: a candidate without one is in no program of finite cost)."""
    import numpy as np

    alive = [np.isfinite(np.asarray(c, dtype=float)) for c in problem.node_cost]
    finite = [
        (u, v, np.isfinite(np.asarray(t, dtype=float)).reshape(len(alive[u]), -1))
        for u, v, t in problem.edges
        if u != v
    ]
    changed = True
    while changed:
        changed = False
        for u, v, ok in finite:
            for x, support in ((u, (ok & alive[v][None, :]).any(axis=1)), (v, None)):
                if support is None:
                    support = (ok & alive[u][:, None]).any(axis=0)
                kept = alive[x] & support
                if kept.sum() < alive[x].sum() and kept.any():
                    alive[x], changed = kept, True
    return alive


def _floor(problem: Problem) -> float:
    """A lower bound on any combination's peak: the fullest point with each of its values
    and transients at its smallest candidate, and its conversions holding nothing."""
    memory = problem.memory or [[0.0] * len(c) for c in problem.node_cost]
    transient = problem.transient or [[0.0] * len(c) for c in problem.node_cost]
    least = [min(m, default=0.0) for m in memory]
    running = [min(m, default=0.0) for m in transient]
    return max(
        (
            sum(least[n] for n in live) + sum(running[n] for n in run)
            for live, run, _ in map(parts, problem.memory_points())
        ),
        default=0.0,
    )


_CLASSES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
"""The candidate classes of an edge's table (with its conversions), by their bytes: the
transfer-table entries of a layer are models of the same tables, one per boundary (`_Model`).
"""

MAX_CLASSES = 1 << 12
"""Tables `_CLASSES` holds before it starts again."""


@dataclass
class _Rows:
    """A block of constraint rows `lower <= sum(values * x[index]) <= upper`, each row's
    entries `lengths[r]` long, one after the other in `index` and `values` (`_Model` builds
    tens of thousands of rows: as arrays per block, not a tuple per row)."""

    lower: np.ndarray
    upper: np.ndarray
    lengths: np.ndarray
    index: np.ndarray
    values: np.ndarray


def _ties(ids: np.ndarray, first: int, class_of: np.ndarray) -> _Rows:
    """Per class `i` of one end's candidates (`class_of`, the candidate at column `first +
    c` in class `class_of[c]`), the row `sum(joints of row i of ids) - sum(class i's
    candidates) = 0` (ids: joint columns per pair of classes, -1 where forbidden). Each row
    holds its joints in order, then its candidates in ascending order."""
    import numpy as np

    n = ids.shape[0]
    valid = ids >= 0
    joined = ids[valid]  # row-major: row i's joints, in order
    members = np.argsort(class_of, kind="stable")  # class i's candidates, ascending
    # sort by (class, joints before candidates); stable keeps each part's order
    key = np.concatenate([2 * np.nonzero(valid)[0], 2 * class_of[members] + 1])
    order = np.argsort(key, kind="stable")
    index = np.concatenate([joined, first + members])[order]
    values = np.concatenate([np.ones(len(joined)), -np.ones(len(members))])[order]
    lengths = valid.sum(axis=1) + np.bincount(class_of, minlength=n)
    return _Rows(np.zeros(n), np.zeros(n), lengths, index, values)


def _row_block(rows: list[tuple[float, float, np.ndarray, np.ndarray]]) -> _Rows:
    """One-row tuples (lower, upper, index, values) as a block."""
    import numpy as np

    return _Rows(
        np.array([r[0] for r in rows], dtype=float),
        np.array([r[1] for r in rows], dtype=float),
        np.array([len(r[2]) for r in rows], dtype=np.int64),
        np.concatenate([np.asarray(r[2]) for r in rows] or [np.zeros(0, dtype=np.int64)]),
        np.concatenate([np.asarray(r[3], dtype=float) for r in rows] or [np.zeros(0)]),
    )


@dataclass
class _Found:
    choice: list[int]
    bound: float
    """HiGHS's dual bound on the objective (the optimum when proven)."""
    proven: bool
    peak: float = 0.0
    bounds: dict[str, float] = field(default_factory=dict)
    """Where HiGHS stopped: the lower bounds it gave, by name (`STOPPED_BOUNDS`; -inf: none)."""
    nodes: bool = False
    """Whether `NODE_LIMIT` stopped it (else, where not proven, the time limit)."""


STOPPED_BOUNDS = ("HiGHS's dual bound", "the LP relaxation")
"""The bounds a stopped integer program has from HiGHS: the dual bound its branching reached
and the optimum of its LP relaxation (solved first without memory rows; after the stop, within
`RELAXATION_ITERATIONS`, where it was not)."""

RELAXATION_ITERATIONS = 5_000
"""Simplex iterations the LP relaxation of an integer program stopped at its node or time limit
may take after the stop, for its bound - a fixed price of work per stopped program, whatever
the limit, so that the bound is the same on a busy machine as on an idle one (as `NODE_LIMIT`
makes the program): under a tight limit HiGHS's dual bound is -inf or far below it (a 12 x 12
grid of 4 candidates under a memory limit, stopped at 1 ms: HiGHS none, the relaxation 701.6 in
about 2,000 iterations, 0.1 s, the optimum 706). Where the relaxation itself needs more (a
tiny GPT layer inlined, 27,000 candidates under a memory limit: over 8,000 iterations) the
bound stays the others'."""

RELAXATION_SECONDS = 5.0
"""Seconds that re-solve may take: a safety net behind `RELAXATION_ITERATIONS` (5,000
iterations of the largest models above take about half a second)."""


class _Model:
    """HiGHS's model of a problem, the local-polytope formulation: a binary per candidate (one
    per node), and per edge a continuous joint variable per pair of candidate classes
    (candidates with equal rows, or columns, of the edge's table and of the conversions between
    the same two nodes) whose row and column sums equal the classes' indicators. With integral
    candidates the joint is the one chosen pair; its LP relaxation is exact on trees and tight
    on the layers' few short cycles, so HiGHS closes the gap at the root where the classic
    `y >= x_u + x_v - 1` linearization branched for minutes. A forbidden pair has no variable.
    A conversion's bytes are linear in the joints (or, to a fixed placement, in the
    candidates), so a point's row counts them with its live values. The model goes to HiGHS
    as arrays in one call per kind."""

    def __init__(self, problem: Problem) -> None:
        import numpy as np

        self.problem = problem
        node_cost = [np.asarray(c, dtype=float) for c in problem.node_cost]
        self.start = start = np.cumsum([0] + [len(c) for c in node_cost])
        cost = list(node_cost)
        self.binary = ncol = int(start[-1])
        sizes = np.diff(start)
        self.rows: list[_Rows] = [  # one candidate per node
            _Rows(
                np.ones(len(node_cost)),
                np.ones(len(node_cost)),
                sizes,
                np.arange(ncol),
                np.ones(ncol),
            )
        ]
        """The constraints, in blocks of rows (`_Rows`): HiGHS gets their concatenation."""
        self.joints: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []
        """(u, v, row class per u candidate, column class per v candidate, joint ids)."""
        self.converted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        """Per conversion: the columns and coefficients whose sum is its bytes."""
        classes = _CLASSES
        if len(classes) > MAX_CLASSES:
            classes.clear()
        for u, v, table, attached in self._pairs():
            if u == v:
                cost[u] = cost[u] + np.diagonal(table)
                continue
            stacked = [table] + [t for _, t in attached]
            key = (table.shape, b"".join(t.tobytes() for t in stacked))
            if key not in classes:  # a stack of layers repeats the same few tables
                _, row_of = np.unique(np.hstack(stacked), axis=0, return_inverse=True)
                _, col_of = np.unique(np.vstack(stacked), axis=1, return_inverse=True)
                classes[key] = (row_of.reshape(-1), col_of.reshape(-1))
            row_of, col_of = classes[key]
            nr, nc = int(row_of.max()) + 1, int(col_of.max()) + 1
            joint = np.full((nr, nc), np.nan)
            joint[row_of[:, None], col_of[None, :]] = table
            if not attached and not np.isinf(joint).any() and (joint == 0).all():
                continue
            ids = np.full((nr, nc), -1)
            finite = np.isfinite(joint)
            ids[finite] = ncol + np.arange(int(finite.sum()))
            ncol += int(finite.sum())
            cost.append(joint[finite])
            self.joints.append((u, v, row_of, col_of, ids))
            for c, t in attached:
                held = np.zeros((nr, nc))
                held[row_of[:, None], col_of[None, :]] = t
                self.converted[c] = (ids[finite], held[finite])
            # a row (column) class's joint mass is its indicator
            self.rows.append(_ties(ids, start[u], row_of))
            self.rows.append(_ties(ids.T, start[v], col_of))
        for c, (u, v, t) in enumerate(problem.conversions or []):
            if v is None:
                self.converted[c] = (start[u] + np.arange(len(node_cost[u])), np.asarray(t))
        self.ncol = ncol
        self.objective = np.concatenate(cost)

    def _pairs(self) -> list[tuple[int, int, np.ndarray, list[tuple[int, np.ndarray]]]]:
        """Each edge with the conversions between its two nodes, and a cost-free pair for
        conversions between nodes no edge joins (an edge folded into a fixed node)."""
        import numpy as np

        sizes = [len(c) for c in self.problem.node_cost]
        pairs: list[tuple[int, int, np.ndarray, list[tuple[int, np.ndarray]]]] = []
        where: dict[tuple[int, int], int] = {}
        for u, v, t in self.problem.edges:
            where.setdefault((u, v), len(pairs))
            pairs.append((u, v, np.asarray(t, dtype=float).reshape(sizes[u], sizes[v]), []))
        for c, (u, v, t) in enumerate(self.problem.conversions or []):
            if v is None:
                continue
            held = np.asarray(t, dtype=float).reshape(sizes[u], sizes[v])
            if (u, v) in where:
                pairs[where[(u, v)]][3].append((c, held))
            elif (v, u) in where:
                pairs[where[(v, u)]][3].append((c, held.T))
            else:
                where[(u, v)] = len(pairs)
                pairs.append((u, v, np.zeros((sizes[u], sizes[v])), [(c, held)]))
        return pairs

    def points(self) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """Per program point the columns, coefficients and constant whose sum is its bytes.
        Nodes of one candidate (and nodes whose every candidate holds as much) are constants."""
        import numpy as np

        problem = self.problem
        # per node once: its smallest bytes (a constant of every point it is in) and, where
        # its candidates differ, their columns and bytes above that
        shares: dict[str, tuple[list[float], list[tuple[np.ndarray, np.ndarray] | None]]] = {}
        for kind, table in (("m", problem.memory), ("t", problem.transient)):
            if table is None:
                continue
            lows: list[float] = []
            above: list[tuple[np.ndarray, np.ndarray] | None] = []
            for n, held in enumerate(table):
                m = np.asarray(held, dtype=float)
                low = float(m.min()) if len(m) else 0.0
                lows.append(low)
                varies = len(m) > 1 and bool((m > low).any())
                above.append((self.start[n] + np.arange(len(m)), m - low) if varies else None)
            shares[kind] = (lows, above)
        out = []
        for point in problem.memory_points():
            live, running, converted = parts(point)
            constant = 0.0
            columns: list[np.ndarray] = [np.zeros(0, dtype=int)]
            values: list[np.ndarray] = [np.zeros(0)]
            for kind, members in (("m", live), ("t", running)):
                if kind not in shares:
                    continue
                lows, above = shares[kind]
                constant += sum(lows[n] for n in members)
                for n in members:
                    if above[n] is not None:
                        columns.append(above[n][0])  # type: ignore[index]
                        values.append(above[n][1])  # type: ignore[index]
            for c in converted:
                columns.append(self.converted[c][0])
                values.append(self.converted[c][1])
            index, where = np.unique(np.concatenate(columns), return_inverse=True)
            merged = np.bincount(
                where.reshape(-1), weights=np.concatenate(values), minlength=len(index)
            )
            out.append((index, merged, constant))
        return out

    def solve(self, time_limit: float, minimize_peak: bool = False) -> _Found:
        """HiGHS's answer: under the problem's memory limit its least cost, or with
        `minimize_peak` its least peak (a column bounding every point's bytes, the objective)."""
        import time

        import highspy
        import numpy as np

        problem = self.problem
        rows: list[tuple[float, float, np.ndarray, np.ndarray]] = []  # memory rows
        objective, ncol = self.objective, self.ncol
        bounded = problem.memory_limit is not None and (
            problem.memory is not None or problem.conversions is not None
        )
        points = self.points() if minimize_peak or bounded else []
        scale = 1.0
        unit = 1.0  # seconds are small beside HiGHS's absolute tolerances: costs up to about 1
        finite = np.abs(objective[np.isfinite(objective)])
        if not minimize_peak and finite.size and 0.0 < finite.max() < 1.0:
            unit = float(finite.max())
            objective = objective / unit
        if minimize_peak:
            scale = max([c + float(v.max(initial=0.0)) for _, v, c in points] + [1.0])
            objective = np.concatenate([np.zeros(ncol), [1.0]])
            for index, values, constant in points:
                rows.append(
                    (
                        -math.inf,
                        -constant / scale,
                        np.append(index, ncol),
                        np.append(values / scale, -1.0),
                    )
                )
            ncol += 1
        elif bounded:
            assert problem.memory_limit is not None
            scale = max(problem.memory_limit, 1.0)
            for index, values, constant in points:
                rhs = (_slack(problem.memory_limit) - constant) / scale
                if not len(index):
                    if rhs < 0:
                        raise NoSolution("no combination of candidates fits the memory limit")
                    continue
                rows.append((-math.inf, rhs, index, values / scale))
        began = time.perf_counter()
        with _quiet_stdout():
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("mip_rel_gap", 0.0)
            h.setOptionValue("mip_abs_gap", 0.0)
            h.setOptionValue("time_limit", float(time_limit))
            upper = np.ones(ncol)
            if minimize_peak:
                upper[-1] = math.inf
            forbidden = np.isinf(objective)  # a candidate of infinite own cost: never chosen
            upper[forbidden] = 0.0
            objective = np.where(forbidden, 0.0, objective)
            h.addCols(
                ncol,
                objective,
                np.zeros(ncol),
                upper,
                0,
                np.zeros(0, np.int32),
                np.zeros(0, np.int32),
                np.zeros(0),
            )
            blocks = self.rows + ([_row_block(rows)] if rows else [])
            lengths = np.concatenate([b.lengths for b in blocks])
            starts = np.cumsum(np.concatenate([[0], lengths[:-1]])).astype(np.int32)
            h.addRows(
                len(lengths),
                np.concatenate([b.lower for b in blocks]),
                np.concatenate([b.upper for b in blocks]),
                int(lengths.sum()),
                starts,
                np.concatenate([b.index for b in blocks]).astype(np.int32),
                np.concatenate([b.values for b in blocks]).astype(float),
            )
            values, proven, bound, infeasible = None, False, -math.inf, False
            lp = dual = -math.inf
            if not rows:
                # without memory rows the relaxation first, without presolve (its simplex
                # alone is fast): on the layers its optimum is integral, hence the integer
                # optimum; else branch on it (memory rows make it fractional: branch at once)
                h.setOptionValue("presolve", "off")
                h.run()
                values = self._values(h)
                proven = values is not None and bool(
                    np.allclose(values, np.round(values), atol=1e-7)
                )
                # the relaxation's optimum bounds the integer one even when fractional
                relaxed = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
                bound = lp = h.getInfo().objective_function_value if relaxed else -math.inf
                infeasible = h.getModelStatus() == highspy.HighsModelStatus.kInfeasible
            if not proven and not infeasible:
                # presolve only with memory rows: without them it spent most of the time on a
                # relaxation that is already tight (GPT-3's joint repetition under the overlap
                # credit, 64,543 columns: 54 s with it, 17 s without, the same optimum at the root)
                h.setOptionValue("presolve", "on" if rows else "off")
                h.setOptionValue("mip_max_nodes", NODE_LIMIT)
                h.setOptionValue("time_limit", max(0.0, time_limit - (time.perf_counter() - began)))
                h.changeColsIntegrality(
                    self.binary,
                    np.arange(self.binary, dtype=np.int32),
                    np.full(self.binary, highspy.HighsVarType.kInteger.value, np.uint8),
                )
                self._hint(h, minimize_peak, scale)
                h.run()
                if self._stale(h, objective):
                    h.clearSolver()  # forget the hint and solve again
                    h.run()
                values = self._values(h)
                info = h.getInfo()
                proven = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
                dual = info.objective_function_value if proven else info.mip_dual_bound
                bound = dual if proven else max(bound, dual)
                status = h.modelStatusToString(h.getModelStatus())
                if not proven and values is not None and lp == -math.inf:
                    lp = self._relaxed(h, RELAXATION_ITERATIONS, RELAXATION_SECONDS)
            else:
                status = h.modelStatusToString(h.getModelStatus())
        if values is None:
            if status == "Infeasible":
                raise NoSolution(
                    "no combination of candidates fits the memory limit"
                    if problem.memory_limit is not None
                    else "every combination uses a forbidden pair"
                )
            within = (
                f"{NODE_LIMIT} branch-and-bound nodes"
                if status == "Solution limit reached"
                else f"time-limit={time_limit:g}s"
            )
            raise NoSolutionYet(
                f"the integer program found no program within {within} (HiGHS: {status})"
            )
        choice = [
            int(np.argmax(values[self.start[n] : self.start[n + 1]]))
            for n in range(len(self.start) - 1)
        ]
        unit = scale if minimize_peak else unit
        found = _Found(choice, bound * unit, proven)
        found.nodes = not proven and status == "Solution limit reached"
        if not proven:
            found.bounds = {
                name: b * unit for name, b in zip(STOPPED_BOUNDS, (dual, lp), strict=True)
            }
        if minimize_peak:
            found.peak = problem.peak(choice)
        return found

    def _relaxed(self, h: object, iterations: int, time_limit: float) -> float:
        """The optimum of the LP relaxation of the model `h` holds (its integrality dropped),
        solved within `iterations` simplex iterations (the budget: the same answer however busy
        the machine) and `time_limit` seconds of its own (a safety net): after HiGHS stopped
        branching, a bound its dual bound may not reach yet (-inf where the LP did not finish
        either)."""
        import highspy
        import numpy as np

        # HiGHS's clock runs across the runs of one instance: its own seconds on top
        spent = h.getRunTime()  # type: ignore[attr-defined]
        h.setOptionValue("time_limit", spent + float(time_limit))  # type: ignore[attr-defined]
        # counted per run, and only in LPs (not a MIP's sub-problems): this run's own budget
        h.setOptionValue("solver", "simplex")  # type: ignore[attr-defined]
        h.setOptionValue("simplex_iteration_limit", int(iterations))  # type: ignore[attr-defined]
        h.changeColsIntegrality(  # type: ignore[attr-defined]
            self.binary,
            np.arange(self.binary, dtype=np.int32),
            np.full(self.binary, highspy.HighsVarType.kContinuous.value, np.uint8),
        )
        h.run()  # type: ignore[attr-defined]
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:  # type: ignore[attr-defined]
            return -math.inf
        return h.getInfo().objective_function_value  # type: ignore[attr-defined]

    @staticmethod
    def _stale(h: object, objective: np.ndarray) -> bool:
        """Whether HiGHS (1.16) reports an optimum its columns do not reach: when presolve
        solves a hinted program outright, it can answer with the better objective and the
        hint's columns."""
        import highspy
        import numpy as np

        info = h.getInfo()  # type: ignore[attr-defined]
        if info.primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible.value:
            return False
        columns = np.asarray(h.getSolution().col_value)  # type: ignore[attr-defined]
        reached = float(objective @ columns)
        reported = info.objective_function_value
        return abs(reached - reported) > 1e-7 * max(1.0, abs(reported))

    def _values(self, h: object) -> np.ndarray | None:
        """The candidates' values of HiGHS's best program, None when it has none."""
        import highspy
        import numpy as np

        info = h.getInfo()  # type: ignore[attr-defined]
        if info.primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible.value:
            return None
        return np.asarray(h.getSolution().col_value[: self.binary])  # type: ignore[attr-defined]

    def _hint(self, h: object, minimize_peak: bool, scale: float) -> None:
        """Start HiGHS's branching from the cheaper of coordinate descent's program (on
        problems of up to `HINTED` nodes: on a 96-layer step it takes longer than HiGHS) and
        each node's smallest candidate, where they fit: under a time limit there is then a
        program to answer with whenever they find one."""
        import numpy as np

        problem = self.problem
        found = [_smallest(problem)]
        if not minimize_peak and problem.size <= HINTED:
            with contextlib.suppress(NoSolution):
                found.append(coordinate_descent(problem).choice)
        fitting = [
            c
            for c in found
            if not math.isinf(problem.cost(c)) and (minimize_peak or problem.fits(c))
        ]
        if not fitting:
            return
        choice = min(fitting, key=problem.cost)
        values = np.zeros(self.ncol + (1 if minimize_peak else 0))
        for n, c in enumerate(choice):
            values[self.start[n] + c] = 1.0
        for u, v, row_of, col_of, ids in self.joints:
            values[ids[row_of[choice[u]], col_of[choice[v]]]] = 1.0
        if minimize_peak:
            values[-1] = problem.peak(choice) / scale
        h.setSolution(len(values), np.arange(len(values), dtype=np.int32), values)  # type: ignore[attr-defined]


def coordinate_descent(
    problem: Problem, starts: int = 4, seed: int = 0, start: list[int] | None = None
) -> Solution:
    """`starts` starts (the optimum of the bound's relaxation - `forest_relaxation` -, a greedy
    pass in node order - `_lookahead_greedy` -, each node's cheapest own candidate, then random
    ones; under a memory limit also a program of few bytes - `_fewest_bytes` - and one more
    random start; or only `start`, with the nodes' cheapest own costs as its bound); each sweep
    re-chooses every node given its neighbours, among the moves that lift no program point's
    memory past the limit (`_Held`); stop when a sweep changes nothing. Without a limit, tree
    block moves (`_tree_blocks`) follow from each distinct end of the sweeps (up to
    `BLOCK_ROUNDS` idle rounds; 2 past `BLOCK_NODES`), never leaving a start dearer, so cd
    never ends above its sweeps alone (more rounds from the best gained nothing on GPT-3). On
    GPT-3's 96-layer step (objective=time) the sweeps alone stopped at 23.0 s, 4x dp's optimum
    (5.68 s): the layer functions' entries, an Adam update 20x its optimum, were stuck where
    only a chain of ops could move; with the block moves cd ends at 5.73 s."""
    rng = random.Random(seed)
    blocks = random.Random(seed + 1)  # apart: the starts stay those of the sweeps alone
    neighbours: dict[int, list[tuple[int, list[list[float]], bool]]] = {
        i: [] for i in range(problem.size)
    }
    for u, v, table in problem.edges:
        table = table.tolist() if hasattr(table, "tolist") else table  # lists index faster
        neighbours[u].append((v, table, True))
        neighbours[v].append((u, table, False))

    bounded = problem.memory is not None and problem.memory_limit is not None
    layout = _Layout(problem) if bounded else None
    if start is None:
        bound, relaxed = forest_relaxation(problem)
    else:  # one given start (a least-memory entry's): the cheap bound
        bound, relaxed = sum(min(cs) for cs in problem.node_cost), None
    first = -2 if relaxed is not None else -1
    best: Solution | None = None
    extra = 2 if bounded else 0  # a limit: two more random starts
    polished: set[tuple[int, ...]] = set()
    stuck = True  # every start's sweeps ended in a forbidden pair
    patience = BLOCK_ROUNDS if problem.size <= BLOCK_NODES else 2
    arrays: _Arrays | None = None  # the block moves' costs, built at their first use
    for k in range(1) if start is not None else range(first, starts - 2 + extra):
        if start is not None:
            choice = list(start)
        elif k == -2:  # the bound's own choice: optimal where the edges form a forest
            choice = list(relaxed)  # type: ignore[arg-type]
        elif k == -1:
            choice = _lookahead_greedy(problem)
        elif k == 0:
            choice = [min(range(len(cs)), key=cs.__getitem__) for cs in problem.node_cost]
        elif k == 1 and bounded:
            choice = _fewest_bytes(problem, TIME_LIMIT)
        else:
            choice = [rng.randrange(len(cs)) for cs in problem.node_cost]
        held = _Held(problem, choice, layout) if layout is not None else None
        _descend(problem, neighbours, choice, held)
        stuck = stuck and math.isinf(problem.cost(choice))
        if held is None and tuple(choice) not in polished:  # starts often meet
            polished.add(tuple(choice))
            if arrays is None:
                arrays = _Arrays(problem)
            _tree_blocks(problem, arrays, neighbours, choice, blocks, patience)
        if not problem.fits(choice):
            continue
        cost = problem.cost(choice)
        if best is None or cost < best.cost:
            best = Solution(list(choice), cost, "cd", 0.0)
    if stuck and start is None and not bounded:
        # every start's sweeps ran into forbidden pairs (a call's ties, an in-place operand):
        # start once more from a program that has none (`_fewest_bytes` finds one exactly)
        choice = _fewest_bytes(problem, TIME_LIMIT)
        _descend(problem, neighbours, choice, None)
        cost = problem.cost(choice)
        if best is None or cost < best.cost:
            best = Solution(list(choice), cost, "cd", 0.0)
    if best is None or math.isinf(best.cost):
        raise NoSolution(
            "coordinate descent found no combination within the memory limit"
            if bounded
            else "coordinate descent found no combination without a forbidden pair"
        )
    best.lower_bound = min(bound, best.cost)
    return best


def _descend(
    problem: Problem,
    neighbours: dict[int, list[tuple[int, list[list[float]], bool]]],
    choice: list[int],
    held: _Held | None,
    track: bool = True,
) -> None:
    """Coordinate descent's sweeps from `choice` (changed in place): each node in turn moves
    to its cheapest candidate given its neighbours (among those `held` allows), until a sweep
    moves nothing. With `track` and no memory limit a node none of whose neighbours moved
    since it was last looked at is skipped (`stale`): its costs are the same, so it would stay;
    the moves, and the answer, are those of the full sweeps (`track=False`), in less time on a
    96-layer step. Under a limit any move changes what the others are allowed: every node is
    looked at."""

    def local(node: int, c: int) -> float:
        total = problem.node_cost[node][c]
        for other, table, forward in neighbours[node]:
            total += table[c][choice[other]] if forward else table[choice[other]][c]
        return total

    every = held is not None or not track
    stale = [True] * problem.size
    changed = True
    while changed:
        changed = False
        for node in range(problem.size):
            if not stale[node]:
                continue
            stale[node] = every
            costs = [local(node, c) for c in range(len(problem.node_cost[node]))]
            for c in sorted(range(len(costs)), key=costs.__getitem__):
                if held is None or held.allows(node, choice[node], c):
                    if costs[c] < costs[choice[node]] - 1e-12:
                        if held is not None:
                            held.move(node, choice[node], c)
                        choice[node], changed = c, True
                        stale[node] = True  # a self-edge reads its own choice
                        for other, _, _ in neighbours[node]:
                            stale[other] = True
                    break


BLOCK_ROUNDS = 8
"""Most tree-block moves (`_tree_blocks`) coordinate descent tries in a row without a gain."""
BLOCK_NODES = 2000
"""Nodes past which it tries two: a round solves the whole problem (on GPT-3's 96-layer step,
4,906 nodes: 10-13 ms peeled leaf by leaf, 76 ms by variable elimination before; rounds gained
1.7% at most there: the calls' entries move jointly, `AutoShard.joint_start`)."""


def _tree_blocks(
    problem: Problem,
    arrays: _Arrays,
    neighbours: dict[int, list[tuple[int, list[list[float]], bool]]],
    choice: list[int],
    rng: random.Random,
    patience: int,
) -> None:
    """Block moves after the single-node sweeps (`choice` changed in place): hold one end of
    every edge outside a spanning forest at its choice, and re-choose all the other nodes at
    once, exactly (`_exact_over`: what is left is a forest, the held nodes folded into their
    neighbours; the ends of a forbidden pair are never held); keep the result where it is
    cheaper, sweep again, and repeat with other ends held (each end in turn, then other
    spanning forests, their ends at random) until `patience` moves in a row gain nothing. A
    single-node sweep cannot move a chain of elementwise ops from one placement to another:
    each step alone pays a conversion the whole move avoids. Without a memory limit only: the
    peak couples the nodes the move frees."""
    cut = _edges_off_forest(problem)
    cost = problem.cost(choice)
    rounds = idle = 0
    while idle < (patience if cut else 1):  # a forest: one exact move frees every node
        if rounds >= 2:  # another spanning forest, other ends held
            cut = _edges_off_forest(problem, rng)
        held = {edge[rounds if rounds < 2 else rng.randrange(2)] for edge in cut}
        held -= _forbidden_ends(problem, choice)  # a forbidden pair moves both its ends
        rounds += 1
        moved = _exact_over(arrays, choice, held)
        if moved is None or not _cheaper(problem.cost(moved), cost):
            idle += 1
            continue
        choice[:] = moved
        _descend(problem, neighbours, choice, None)
        cost, idle = problem.cost(choice), 0


def _forbidden_ends(problem: Problem, choice: list[int]) -> set[int]:
    """The nodes at either end of an edge whose pair `choice` forbids (costs inf)."""
    return {
        n
        for u, v, table in problem.edges
        if math.isinf(table[choice[u]][choice[v]])
        for n in (u, v)
    }


def _cheaper(new: float, old: float) -> bool:
    """`new` below `old` by more than rounding (any finite cost is below a forbidden one)."""
    return new < old and (math.isinf(old) or new < old - 1e-12 * max(1.0, abs(old)))


def _edges_off_forest(problem: Problem, rng: random.Random | None = None) -> list[tuple[int, int]]:
    """The edges a spanning forest of the problem's graph leaves out (self-edges aside): the
    forest takes the edges in their order, or in a random one with `rng`."""
    edges = problem.edges if rng is None else rng.sample(problem.edges, len(problem.edges))
    return [
        (u, v)
        for (u, v, _), kept in zip(edges, _in_forest(problem.size, edges), strict=True)
        if u != v and not kept
    ]


def _in_forest(size: int, edges: Sequence[tuple[int, int, object]]) -> list[bool]:
    """Per edge, in order, whether a spanning forest taking the edges in that order (Kruskal,
    union-find) keeps it; a self-edge never."""
    root = list(range(size))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    kept = []
    for u, v, _ in edges:
        a, b = find(u), find(v)
        kept.append(a != b)
        if a != b:
            root[a] = b
    return kept


class _Arrays:
    """A problem's own and edge costs as numpy arrays, an edge's as [u's candidate, v's],
    built once for the many exact solves of coordinate descent's block moves."""

    def __init__(self, problem: Problem) -> None:
        import numpy as np

        self.node_cost = [np.asarray(c, dtype=float) for c in problem.node_cost]
        sizes = [len(c) for c in self.node_cost]
        self.edges = [
            (u, v, np.asarray(t, dtype=float).reshape(sizes[u], sizes[v]))
            for u, v, t in problem.edges
        ]


def _exact_over(arrays: _Arrays, choice: list[int], held: set[int]) -> list[int] | None:
    """The best choice with the `held` nodes at `choice` and every other node free (None
    where the rest is too wide to eliminate): the held nodes' edges folded into their free
    ends' costs, then the free nodes solved exactly (`_peeled`)."""
    own = [c if n in held else c.copy() for n, c in enumerate(arrays.node_cost)]
    links: list[dict[int, np.ndarray]] = [{} for _ in own]  # [this node's candidate, other's]
    for u, v, table in arrays.edges:
        if u in held:
            if v not in held:
                own[v] += table[choice[u]]
        elif v in held:
            own[u] += table[:, choice[v]]
        elif u == v:
            own[u] += table.diagonal()
        else:
            links[u][v] = links[u][v] + table if v in links[u] else table
            links[v][u] = links[u][v].T
    return _peeled(own, links, choice, held)


def _peeled(
    own: list[np.ndarray],
    links: list[dict[int, np.ndarray]],
    choice: list[int],
    held: set[int],
) -> list[int] | None:
    """The free nodes' best choice, their costs `own` and edges `links` (both changed): a node
    of at most one free neighbour is minimized out into that neighbour's costs (min-sum
    message passing from the leaves in), until none is left; with one end of every edge off a
    spanning forest held that is every node. What remains (the cycles a forbidden pair's freed
    ends close) goes to variable elimination. Variable elimination over the whole forest
    built and tracked a table per step: it was most of cd's time on GPT-3's steps. `Series.of`
    folds leaves the same way for the integer program, but works on the problem's lists (its
    `fold_fixed` per element, its result converted back to lists) and also joins nodes between
    two into new tables: as the block moves' solver, in one run on GPT-3's 96-layer step, it
    took cd 43.7 s against 22-34 s for this."""
    picked = list(choice)
    steps: list[tuple[int, int, np.ndarray | int]] = []  # (node, its neighbour or -1, best)
    done = [n in held for n in range(len(own))]
    todo = [n for n in range(len(own)) if not done[n] and len(links[n]) <= 1]
    while todo:
        x = todo.pop()
        if done[x] or len(links[x]) > 1:
            continue
        done[x] = True
        if not links[x]:  # a tree's last node: the rest is folded into its costs
            steps.append((x, -1, int(own[x].argmin())))
            continue
        ((y, table),) = links[x].items()
        total = table.T + own[x]  # [y's candidate, x's]
        steps.append((x, y, total.argmin(axis=1)))
        own[y] += total.min(axis=1)
        links[x] = {}
        del links[y][x]
        if len(links[y]) <= 1:
            todo.append(y)
    core = [n for n in range(len(own)) if not done[n]]
    if core:
        at = {n: i for i, n in enumerate(core)}
        edges = [(at[u], at[v], t) for u in core for v, t in links[u].items() if u < v]
        eliminated = eliminate(Problem([own[n] for n in core], edges))  # type: ignore[misc]
        if eliminated is None:
            return None
        for n, c in zip(core, eliminated[0], strict=True):
            picked[n] = c
    for x, y, best in reversed(steps):  # each after the neighbour it was folded into
        picked[x] = best if y < 0 else int(best[picked[y]])  # type: ignore[index]
    return picked


def _smallest(problem: Problem) -> list[int]:
    """Each node's candidate holding the fewest bytes (its value and its transient)."""
    memory = problem.memory or [[0.0] * len(c) for c in problem.node_cost]
    transient = problem.transient or [[0.0] * len(c) for c in problem.node_cost]
    return [
        min(range(len(cs)), key=lambda c, n=n: (memory[n][c] + transient[n][c], cs[c]))
        for n, cs in enumerate(problem.node_cost)
    ]


class _Layout:
    """Where each node counts, for `_Held` (built once per coordinate descent, for all its
    starts): the points its value is live at, those it runs at, and the conversions from or
    to it with their points."""

    def __init__(self, problem: Problem) -> None:
        self.live: list[list[int]] = [[] for _ in range(problem.size)]
        self.running: list[list[int]] = [[] for _ in range(problem.size)]
        self.converted: list[list[tuple[int, int]]] = [[] for _ in range(problem.size)]
        for p, point in enumerate(problem.memory_points()):
            live, running, converted = parts(point)
            for n in live:
                self.live[n].append(p)
            for n in running:
                self.running[n].append(p)
            for c in converted:
                u, v, _ = problem.conversions[c]  # type: ignore[index]
                self.converted[u].append((p, c))
                if v is not None and v != u:
                    self.converted[v].append((p, c))


class _Held:
    """The bytes live at every program point under coordinate descent's current choice, kept
    as running sums: moving a node touches only the points it is live or runs at, and those
    where a conversion from or to it is held."""

    def __init__(self, problem: Problem, choice: list[int], layout: _Layout) -> None:
        assert problem.memory is not None and problem.memory_limit is not None
        self.problem, self.choice, self.layout = problem, choice, layout  # cd moves choice
        self.limit = _slack(problem.memory_limit)
        self.totals = problem.point_memory(choice)
        self.transient = problem.transient

    def deltas(self, node: int, old: int, new: int) -> tuple[float, float, dict[int, float]]:
        """How the bytes change when `node` moves from `old` to `new`: at every point its
        value is live, at every point it runs, and at each point a conversion of it is held."""
        memory = self.problem.memory
        assert memory is not None
        live = memory[node][new] - memory[node][old]
        running = (
            0.0 if self.transient is None else self.transient[node][new] - self.transient[node][old]
        )
        held: dict[int, float] = {}
        for p, c in self.layout.converted[node]:
            held[p] = held.get(p, 0.0) + self._held(c, node, new) - self._held(c, node, old)
        return live, running, held

    def _held(self, c: int, node: int, candidate: int) -> float:
        """Conversion `c`'s bytes with `node` at `candidate`, the other end as chosen."""
        u, v, table = self.problem.conversions[c]  # type: ignore[index]
        a = candidate if u == node else self.choice[u]
        if v is None:
            return float(table[a])
        return float(table[a][candidate if v == node else self.choice[v]])

    def _changes(self, node: int, old: int, new: int) -> dict[int, float]:
        live, running, out = self.deltas(node, old, new)
        for points, delta in ((self.layout.live[node], live), (self.layout.running[node], running)):
            if delta:
                for p in points:
                    out[p] = out.get(p, 0.0) + delta
        return out

    def allows(self, node: int, old: int, new: int) -> bool:
        """Whether moving `node` from `old` to `new` keeps each point it touches within the
        limit (or, from a start beyond it, no fuller than it was): at once where nothing
        grows (a weight live at every point, moved to a smaller layout)."""
        live, running, held = self.deltas(node, old, new)
        if live <= 0 and running <= 0 and all(d <= 0 for d in held.values()):
            return True
        for p, delta in self._changes(node, old, new).items():
            if self.totals[p] + delta > max(self.limit, self.totals[p]):
                return False
        return True

    def move(self, node: int, old: int, new: int) -> None:
        for p, delta in self._changes(node, old, new).items():
            self.totals[p] += delta


def _lookahead_greedy(problem: Problem) -> list[int]:
    """Each node in order, its candidate cheapest given its neighbours: those chosen before it
    at their choice, the others at their best for it (each edge's row or column minimum). A
    start that keeps clear of forbidden pairs (conversions that break split nesting) where the
    others can be stuck on them: no node takes a candidate some neighbour cannot follow."""
    import numpy as np

    near: list[list[tuple[int, np.ndarray, np.ndarray, bool]]] = [[] for _ in range(problem.size)]
    for u, v, table in problem.edges:
        if u == v:
            continue
        t = np.asarray(table, dtype=float)
        near[u].append((v, t, t.min(axis=1), True))
        near[v].append((u, t, t.min(axis=0), False))
    choice = [-1] * problem.size
    for node, own in enumerate(problem.node_cost):
        total = np.array(own, dtype=float)
        for other, t, best, forward in near[node]:
            if choice[other] < 0:
                total += best
            else:
                total += t[:, choice[other]] if forward else t[choice[other], :]
        choice[node] = int(np.argmin(total))
    return choice


def lower_bound(problem: Problem) -> float:
    """`forest_relaxation`'s bound."""
    return forest_relaxation(problem)[0]


def forest_relaxation(problem: Problem) -> tuple[float, list[int] | None]:
    """A lower bound on every choice's cost (the memory limit relaxed): a spanning forest of
    the edges solved exactly (`eliminate` on a forest is the classic DP), each edge left out
    folded into one endpoint's own costs at its cheapest given that endpoint's candidate (row
    or column minima: a consumer pays at least the cheapest conversion its reading costs from
    any producer candidate). Any choice pays the forest's costs, which the DP minimizes, plus
    at least those minima, so the bound holds; on a chain or a tree it is the optimum. The
    forest takes the edges whose minima say least first (Kruskal, by the spread of each
    table's finite entries), so the folded ones lose little. Never below the sum of the nodes'
    cheapest own costs (edges cost at least 0): the bound cd reported before. With it, the
    relaxation's optimal choice (None where there is none), a start for cd."""
    import numpy as np

    simple = sum(min(cs) for cs in problem.node_cost)
    node_cost = [np.asarray(cs, dtype=float) for cs in problem.node_cost]
    tables = [(u, v, np.asarray(t, dtype=float)) for u, v, t in problem.edges]

    def spread(t: np.ndarray) -> float:
        finite = t[np.isfinite(t)]
        return float(finite.max() - finite.min()) if finite.size else 0.0

    tables.sort(key=lambda e: -spread(e[2]))
    forest: list[tuple[int, int, np.ndarray]] = []
    for (u, v, t), kept in zip(tables, _in_forest(problem.size, tables), strict=True):
        if kept:
            forest.append((u, v, t))
        elif u == v:
            node_cost[u] = node_cost[u] + np.diag(t)
        else:
            rows, cols = t.min(axis=1), t.min(axis=0)
            if _finite_min(rows) >= _finite_min(cols):  # the endpoint it binds more
                node_cost[u] = node_cost[u] + rows
            else:
                node_cost[v] = node_cost[v] + cols
    relaxed = Problem([list(c) for c in node_cost], forest)
    reduced, keep = prune(fold_fixed(relaxed))
    # pruning leaves nodes of one candidate: fold them too, or a hub of many (an argument
    # every layer call reads) is eliminated first into a table over all its neighbours
    eliminated = eliminate(fold_fixed(reduced))
    if eliminated is None:  # a forest is never too wide; kept for safety
        return simple, None
    choice = [keep[n][c] for n, c in enumerate(eliminated[0])]
    return max(simple, relaxed.cost(choice)), choice


def _finite_min(values: np.ndarray) -> float:
    import numpy as np

    finite = values[np.isfinite(values)]
    return float(finite.min()) if finite.size else math.inf
