"""Choosing one candidate per node of a graph with node and edge costs: the search under
`auto-shard`.

A node is an op, its candidates the op's legal placement signatures; an edge joins a producer to
a consumer and costs what converting the producer's result to the consumer's operand placement
costs under each pair of choices; a per-device memory limit bounds the peak over program points
of the chosen candidates' memory live there (`Problem.points`: the nodes whose values are live
at a point, and the nodes whose transient memory - a call's callee peak - counts there; without
points, one point holding every node: the sum). Four strategies, each reporting its cost, the
optimum or a lower bound, and the gap:

* `exhaustive`: every combination (the ground truth for small graphs);
* `dp`: exact dynamic programming as variable elimination - on a chain or a forest the classic
  DP, on a graph with cycles over the tree decomposition its elimination order builds (the note
  gives its width); under a memory limit its unconstrained optimum is the answer when its peak
  fits (no cheaper choice exists at all), else the peak couples the nodes and `ilp` solves it,
  as it does a decomposition too wide to tabulate - the solution says so;
* `ilp`: an exact integer program solved by HiGHS (`highspy`): one binary per candidate, the
  local-polytope formulation of each edge's pairwise cost (its LP relaxation is tried first:
  integral on the layer bodies, hence optimal), the memory limit as one row per program point
  whose live set no other point's contains (`maximal_points`);
* `cd`: AutoDDL's coordinate descent from several starting points (one the optimum of its
  bound's relaxation), each node re-chosen given its neighbours until a full sweep changes
  nothing; its lower bound (`lower_bound`) is the optimum of a spanning forest of the edges
  with the others folded in at their cheapest; a move never lifts a point's memory past the
  limit (one start takes each node's smallest candidate: it fits whenever anything does, calls
  aside).

Both exact strategies first fold nodes of one candidate into their neighbours and drop
dominated candidates (`prune`).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import count, product
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

STRATEGIES = ("cd", "dp", "ilp", "exhaustive")

Point = tuple[tuple[int, ...], tuple[int, ...]]
"""A program point: the nodes whose values are live there (`Problem.memory`), and the nodes
whose transient memory counts there (`Problem.transient`: a call's callee peak, at the call)."""


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
        return [
            sum(memory[n][choice[n]] for n in live)
            + (0.0 if transient is None else sum(transient[n][choice[n]] for n in running))
            for live, running in self.memory_points()
        ]

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
    sets = [frozenset(live) | frozenset(-1 - n for n in running) for live, running in points]
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


def solve(problem: Problem, strategy: str, seed: int = 0) -> Solution:
    if strategy == "exhaustive":
        return exhaustive(problem)
    if strategy == "dp":
        return dynamic_programming(problem)
    if strategy == "ilp":
        return integer_program(problem)
    if strategy == "cd":
        return coordinate_descent(problem, seed=seed)
    raise ValueError(f"unknown strategy '{strategy}' (known: {', '.join(STRATEGIES)})")


def exhaustive(problem: Problem) -> Solution:
    best: tuple[float, list[int]] | None = None
    for choice in product(*(range(len(c)) for c in problem.node_cost)):
        if not problem.fits(choice):
            continue
        cost = problem.cost(choice)
        if best is None or cost < best[0]:
            best = (cost, list(choice))
    if best is None or math.isinf(best[0]):
        raise NoSolution("no combination of candidates fits the memory limit")
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


def dynamic_programming(problem: Problem) -> Solution:
    """Exact dynamic programming: fixed nodes folded into their neighbours, dominated
    candidates dropped, then variable elimination (`eliminate`) - on a chain or a forest the
    classic DP, on a graph with cycles (residual and attention branches) the DP over a tree
    decomposition its elimination order builds. A memory peak is no sum over the tables:
    the unconstrained optimum is the answer when its peak fits the limit (nothing cheaper
    exists at all); otherwise the peak couples the nodes and, as a decomposition too wide to
    tabulate, goes to `ilp` - the solution says so."""
    if problem.memory is not None and problem.memory_limit is not None:
        free = dynamic_programming(replace(problem, memory=None, memory_limit=None))
        if problem.fits(free.choice):
            fits = "dp: the optimum without a memory limit fits it"
            free.note = fits if not free.note else f"{free.note}; {fits}"
            return free
        solution = integer_program(problem)
        solution.note = (
            "dp: the memory peak couples the nodes (the optimum without a limit breaks it); "
            "solved by ilp instead"
        )
        return solution
    folded = fold_fixed(problem)
    reduced, keep = prune(folded)
    eliminated = eliminate(reduced)
    if eliminated is None:
        solution = integer_program(problem)
        solution.note = "dp: the graph's tree decomposition is too wide; solved by ilp instead"
        return solution
    picked, width = eliminated
    choice = [keep[n][c] for n, c in enumerate(picked)]
    cost = problem.cost(choice)
    if math.isinf(cost):
        raise NoSolution("every combination uses a forbidden pair")
    note = "" if width <= 1 else f"dp: the graph has cycles; tree decomposition of width {width}"
    return Solution(choice, cost, "dp", cost, note)


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
    incident: dict[int, list[tuple[int, bool]]] = {n: [] for n in range(problem.size)}
    for e, (u, v, _) in enumerate(edges):
        incident[u].append((e, True))
        if v != u:
            incident[v].append((e, False))
    pending = set(range(problem.size))
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
            vectors = np.hstack(columns)
            no_worse = (vectors[None, :, :] <= vectors[:, None, :]).all(axis=2)  # [a, b]: b <= a
            better = (vectors[None, :, :] < vectors[:, None, :]).any(axis=2)
            earlier = np.tri(len(keep[n]), k=-1, dtype=bool)  # [a, b]: b < a
            dominated = (no_worse & (better | earlier)).any(axis=1)
            if not dominated.any():
                continue
            kept = np.flatnonzero(~dominated)
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
    reduced = replace(
        problem,
        node_cost=[c.tolist() for c in node_cost],
        edges=[(u, v, t) for u, v, t in edges],  # arrays: what eliminate and ilp read
        memory=None if memory is None else [m.tolist() for m in memory],
        transient=None if transient is None else [m.tolist() for m in transient],
    )
    return reduced, keep


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

    def weight(x: int) -> int:
        return math.prod(sizes[y] for y in links[x]) * sizes[x]

    heap = [(weight(x), x) for x in range(len(sizes))]
    heapq.heapify(heap)
    done = [False] * len(sizes)
    order = []
    while heap:
        w, x = heapq.heappop(heap)
        if done[x]:
            continue
        if w != weight(x):  # stale: a neighbour's elimination changed it
            heapq.heappush(heap, (weight(x), x))
            continue
        if w > MAX_TABLE:
            return None
        done[x] = True
        order.append(x)
        for y in links[x]:
            links[y].discard(x)
            links[y] |= links[x] - {y}
        for y in links[x]:
            heapq.heappush(heap, (weight(y), y))
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
        scope = tuple(sorted({y for key in mentions[x] for y in tables[key][0]}))
        width = max(width, len(scope) - 1)
        total = np.zeros([sizes[y] for y in scope])
        for key in list(mentions[x]):
            s, table = tables.pop(key)
            total = total + table.reshape([sizes[y] if y in s else 1 for y in scope])
            for y in s:
                mentions[y].discard(key)
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


def integer_program(problem: Problem) -> Solution:
    """The exact integer program, on the problem with fixed nodes folded in and dominated
    candidates dropped (`prune`, an optimum survives): the solution maps back to the input."""
    reduced, keep = prune(fold_fixed(problem))
    picked = _solve_integer_program(reduced)
    choice = [keep[n][c] for n, c in enumerate(picked)]
    cost = problem.cost(choice)
    return Solution(choice, cost, "ilp", cost)


def _solve_integer_program(problem: Problem) -> list[int]:
    """HiGHS on the local-polytope formulation: a binary per candidate (one per node), and
    per edge a continuous joint variable per pair of candidate classes (candidates with equal
    rows, or columns, of the edge's table) whose row and column sums equal the classes'
    indicators. With integral candidates the joint is the one chosen pair; its LP relaxation
    is exact on trees and tight on the layers' few short cycles, so HiGHS closes the gap at
    the root where the classic `y >= x_u + x_v - 1` linearization branched for minutes. A
    forbidden pair has no variable. The model goes to HiGHS as arrays in one call per kind."""
    import highspy
    import numpy as np

    node_cost = [np.asarray(c, dtype=float) for c in problem.node_cost]
    start = np.cumsum([0] + [len(c) for c in node_cost])
    cost = list(node_cost)
    ncol = int(start[-1])
    rows: list[tuple[float, float, np.ndarray, np.ndarray]] = [
        (1.0, 1.0, np.arange(start[n], start[n + 1]), np.ones(len(c)))
        for n, c in enumerate(node_cost)
    ]
    for u, v, t in problem.edges:
        table = np.asarray(t, dtype=float).reshape(len(node_cost[u]), len(node_cost[v]))
        if u == v:
            cost[u] = cost[u] + np.diagonal(table)
            continue
        _, row_of = np.unique(table, axis=0, return_inverse=True)
        _, col_of = np.unique(table, axis=1, return_inverse=True)
        row_of, col_of = row_of.reshape(-1), col_of.reshape(-1)
        nr, nc = int(row_of.max()) + 1, int(col_of.max()) + 1
        joint = np.full((nr, nc), np.nan)
        joint[row_of[:, None], col_of[None, :]] = table
        if not np.isinf(joint).any() and (joint == 0).all():
            continue
        ids = np.full((nr, nc), -1)
        finite = np.isfinite(joint)
        ids[finite] = ncol + np.arange(int(finite.sum()))
        ncol += int(finite.sum())
        cost.append(joint[finite])
        for i in range(nr):  # a row class's joint mass is its indicator
            members = start[u] + np.flatnonzero(row_of == i)
            joined = ids[i][ids[i] >= 0]
            rows.append(
                (
                    0.0,
                    0.0,
                    np.concatenate([joined, members]),
                    np.concatenate([np.ones(len(joined)), -np.ones(len(members))]),
                )
            )
        for j in range(nc):
            members = start[v] + np.flatnonzero(col_of == j)
            joined = ids[:, j][ids[:, j] >= 0]
            rows.append(
                (
                    0.0,
                    0.0,
                    np.concatenate([joined, members]),
                    np.concatenate([np.ones(len(joined)), -np.ones(len(members))]),
                )
            )
    rows.extend(_memory_rows(problem, start))
    objective = np.concatenate(cost)
    with _quiet_stdout():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("mip_rel_gap", 0.0)
        h.addCols(
            ncol,
            objective,
            np.zeros(ncol),
            np.ones(ncol),
            0,
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0),
        )
        binary = int(start[-1])
        h.changeColsIntegrality(
            binary,
            np.arange(binary, dtype=np.int32),
            np.full(binary, highspy.HighsVarType.kInteger.value, np.uint8),
        )
        starts = np.cumsum([0] + [len(r[2]) for r in rows[:-1]]).astype(np.int32)
        h.addRows(
            len(rows),
            np.array([r[0] for r in rows]),
            np.array([r[1] for r in rows]),
            int(sum(len(r[2]) for r in rows)),
            starts,
            np.concatenate([r[2] for r in rows]).astype(np.int32),
            np.concatenate([r[3] for r in rows]).astype(float),
        )
        # the relaxation first, without presolve (its simplex alone is fast): on these
        # layers its optimum is integral, hence the integer optimum; else branch on it
        h.setOptionValue("presolve", "off")
        h.run()
        values = _values(h, binary := int(start[-1]))
        if values is None or not np.allclose(values, np.round(values), atol=1e-7):
            h.setOptionValue("presolve", "on")
            h.changeColsIntegrality(
                binary,
                np.arange(binary, dtype=np.int32),
                np.full(binary, highspy.HighsVarType.kInteger.value, np.uint8),
            )
            h.run()
            values = _values(h, binary)
        if values is None:
            raise NoSolution(
                f"the integer program has no solution ({h.modelStatusToString(h.getModelStatus())})"
            )
    return [int(np.argmax(values[start[n] : start[n + 1]])) for n in range(len(node_cost))]


def _memory_rows(
    problem: Problem, start: np.ndarray
) -> list[tuple[float, float, np.ndarray, np.ndarray]]:
    """One row per program point: its live bytes at most the limit. Nodes of one candidate
    (and nodes whose every candidate holds as much) are constants on the right-hand side; the
    rows are scaled by the limit (bytes of 1e11 next to HiGHS's tolerances)."""
    import numpy as np

    if problem.memory is None or problem.memory_limit is None:
        return []
    limit = max(problem.memory_limit, 1.0)
    tables = [("m", problem.memory)] + (
        [] if problem.transient is None else [("t", problem.transient)]
    )
    arrays = {kind: [np.asarray(m, dtype=float) for m in table] for kind, table in tables}
    rows = []
    for live, running in problem.memory_points():
        constant = 0.0
        columns: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for kind, members in (("m", live), ("t", running)):
            if kind not in arrays:
                continue
            for n in members:
                m = arrays[kind][n]
                low = float(m.min()) if len(m) else 0.0
                constant += low
                if len(m) > 1 and (m > low).any():
                    columns.append(start[n] + np.arange(len(m)))
                    values.append(m - low)
        if not columns:
            if constant > _slack(problem.memory_limit):
                raise NoSolution("no combination of candidates fits the memory limit")
            continue
        index, where = np.unique(np.concatenate(columns), return_inverse=True)
        merged = np.bincount(where.reshape(-1), weights=np.concatenate(values))
        rhs = (_slack(problem.memory_limit) - constant) / limit
        rows.append((-math.inf, rhs, index, merged / limit))
    return rows


def _values(h: object, binary: int) -> object:
    """The candidates' values of HiGHS's optimum, None when it found none."""
    import highspy
    import numpy as np

    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:  # type: ignore[attr-defined]
        return None
    return np.asarray(h.getSolution().col_value[:binary])  # type: ignore[attr-defined]


def coordinate_descent(problem: Problem, starts: int = 4, seed: int = 0) -> Solution:
    """`starts` starts (the optimum of the bound's relaxation - `forest_relaxation` -, a greedy
    pass in node order - `_greedy` -, each node's cheapest own candidate, under a memory limit
    each node's smallest, then random ones, in that order); each sweep re-chooses every node given its
    neighbours, among the moves that lift no program point's memory past the limit (`_Held`);
    stop when a sweep changes nothing."""
    rng = random.Random(seed)
    neighbours: dict[int, list[tuple[int, list[list[float]], bool]]] = {
        i: [] for i in range(problem.size)
    }
    for u, v, table in problem.edges:
        table = table.tolist() if hasattr(table, "tolist") else table  # lists index faster
        neighbours[u].append((v, table, True))
        neighbours[v].append((u, table, False))

    def local(choice: list[int], node: int, c: int) -> float:
        total = problem.node_cost[node][c]
        for other, table, forward in neighbours[node]:
            total += table[c][choice[other]] if forward else table[choice[other]][c]
        return total

    bounded = problem.memory is not None and problem.memory_limit is not None
    bound, relaxed = forest_relaxation(problem)
    best: Solution | None = None
    for start in range(-2 if relaxed is not None else -1, starts - 2):  # 4 starts in all
        if start == -2:  # the bound's own choice: optimal where the edges form a forest
            choice = list(relaxed)  # type: ignore[arg-type]
        elif start == -1:
            choice = _greedy(problem)
        elif start == 0:
            choice = [min(range(len(cs)), key=cs.__getitem__) for cs in problem.node_cost]
        elif start == 1 and bounded:
            choice = _smallest(problem)
        else:
            choice = [rng.randrange(len(cs)) for cs in problem.node_cost]
        held = _Held(problem, choice) if bounded else None
        changed = True
        while changed:
            changed = False
            for node in range(problem.size):
                costs = [local(choice, node, c) for c in range(len(problem.node_cost[node]))]
                for c in sorted(range(len(costs)), key=costs.__getitem__):
                    if held is None or held.allows(node, choice[node], c):
                        if costs[c] < costs[choice[node]] - 1e-12:
                            if held is not None:
                                held.move(node, choice[node], c)
                            choice[node], changed = c, True
                        break
        if not problem.fits(choice):
            continue
        cost = problem.cost(choice)
        if best is None or cost < best.cost:
            best = Solution(list(choice), cost, "cd", 0.0)
    if best is None or math.isinf(best.cost):
        raise NoSolution("coordinate descent found no combination within the memory limit")
    best.lower_bound = min(bound, best.cost)
    return best


def _greedy(problem: Problem) -> list[int]:
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


def _smallest(problem: Problem) -> list[int]:
    """Each node's candidate holding the fewest bytes (its value and its transient)."""
    memory = problem.memory or [[0.0] * len(c) for c in problem.node_cost]
    transient = problem.transient or [[0.0] * len(c) for c in problem.node_cost]
    return [
        min(range(len(cs)), key=lambda c, n=n: (memory[n][c] + transient[n][c], cs[c]))
        for n, cs in enumerate(problem.node_cost)
    ]


class _Held:
    """The bytes live at every program point under coordinate descent's current choice, kept
    as running sums: moving a node touches only the points it is live or runs at."""

    def __init__(self, problem: Problem, choice: list[int]) -> None:
        assert problem.memory is not None and problem.memory_limit is not None
        self.limit = _slack(problem.memory_limit)
        self.totals = problem.point_memory(choice)
        self.at: list[list[tuple[int, list[float]]]] = [[] for _ in range(problem.size)]
        for p, (live, running) in enumerate(problem.memory_points()):
            for n in live:
                self.at[n].append((p, problem.memory[n]))
            if problem.transient is not None:
                for n in running:
                    self.at[n].append((p, problem.transient[n]))

    def allows(self, node: int, old: int, new: int) -> bool:
        """Whether moving `node` from `old` to `new` keeps each point it touches within the
        limit (or, from a start beyond it, no fuller than it was)."""
        for p, table in self.at[node]:
            after = self.totals[p] + table[new] - table[old]
            if after > max(self.limit, self.totals[p]):
                return False
        return True

    def move(self, node: int, old: int, new: int) -> None:
        for p, table in self.at[node]:
            self.totals[p] += table[new] - table[old]


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
    root = list(range(problem.size))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    def spread(t: np.ndarray) -> float:
        finite = t[np.isfinite(t)]
        return float(finite.max() - finite.min()) if finite.size else 0.0

    forest: list[tuple[int, int, np.ndarray]] = []
    for u, v, t in sorted(tables, key=lambda e: -spread(e[2])):
        a, b = find(u), find(v)
        if u != v and a != b:
            root[a] = b
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
