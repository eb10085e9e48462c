"""Choosing one candidate per node of a graph with node and edge costs: the search under
`auto-shard`.

A node is an op, its candidates the op's legal placement signatures; an edge joins a producer to
a consumer and costs what converting the producer's result to the consumer's operand placement
costs under each pair of choices; a per-device memory limit bounds the sum of the chosen
candidates' memory. Four strategies, each reporting its cost, the optimum or a lower bound, and
the gap:

* `exhaustive`: every combination (the ground truth for small graphs);
* `dp`: dynamic programming over a chain or a forest (exact; a graph with a cycle, or a memory
  limit, is solved by `ilp` instead, and the solution says so);
* `ilp`: an exact integer program solved by HiGHS (`highspy`): one binary per candidate, the
  standard linearization of each edge's pairwise cost, the memory limit as one row;
* `cd`: AutoDDL's coordinate descent from several starting points, each node re-chosen given its
  neighbours until a full sweep changes nothing; its lower bound is the sum of the nodes' cheapest
  own costs (edges cost at least 0).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import product

STRATEGIES = ("cd", "dp", "ilp", "exhaustive")


@dataclass
class Problem:
    """Candidates per node, their own costs and memory, and pairwise edge costs."""

    node_cost: list[list[float]]
    edges: list[tuple[int, int, list[list[float]]]] = field(default_factory=list)
    """(u, v, cost[choice of u][choice of v]); math.inf forbids a pair."""
    memory: list[list[float]] | None = None
    memory_limit: float | None = None

    @property
    def size(self) -> int:
        return len(self.node_cost)

    def cost(self, choice: Sequence[int]) -> float:
        total = sum(self.node_cost[n][c] for n, c in enumerate(choice))
        for u, v, table in self.edges:
            total += table[choice[u]][choice[v]]
        return total

    def fits(self, choice: Sequence[int]) -> bool:
        if self.memory is None or self.memory_limit is None:
            return True
        return sum(self.memory[n][c] for n, c in enumerate(choice)) <= self.memory_limit + 1e-9


@dataclass
class Solution:
    choice: list[int]
    cost: float
    strategy: str
    """The strategy that produced it (`ilp` where `dp` could not apply)."""
    lower_bound: float
    note: str = ""

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
    return Problem(node_cost, edges, problem.memory, problem.memory_limit)


def dynamic_programming(problem: Problem) -> Solution:
    """Exact DP over a chain or, more generally, a forest: each node's table of the cheapest
    subtree cost per choice, children folded into parents (O(N * S^2))."""
    problem = fold_fixed(problem)
    order = tree_order(problem)
    if order is None or problem.memory_limit is not None:
        why = "the graph has a cycle" if order is None else "a memory limit couples all nodes"
        solution = integer_program(problem)
        solution.note = f"dp: {why}; solved by ilp instead"
        return solution
    tables = {(u, v): t for u, v, t in problem.edges}

    def edge(child: int, parent: int, cc: int, cp: int) -> float:
        if (child, parent) in tables:
            return tables[(child, parent)][cc][cp]
        return tables[(parent, child)][cp][cc]

    subtree = [list(costs) for costs in problem.node_cost]
    pick: dict[int, list[int]] = {}
    for node, parent in order:
        if parent is None:
            continue
        best_for_parent = []
        for cp in range(len(subtree[parent])):
            c = min(
                range(len(subtree[node])),
                key=lambda cc: subtree[node][cc] + edge(node, parent, cc, cp),
            )
            best_for_parent.append(c)
            subtree[parent][cp] += subtree[node][c] + edge(node, parent, c, cp)
        pick[node] = best_for_parent
    choice = [0] * problem.size
    parents = dict(order)
    total = 0.0
    for node, parent in reversed(order):
        if parent is None:
            choice[node] = min(range(len(subtree[node])), key=subtree[node].__getitem__)
            total += subtree[node][choice[node]]
        else:
            choice[node] = pick[node][choice[parents[node]]]  # type: ignore[index]
    if math.isinf(total):
        raise NoSolution("every combination uses a forbidden pair")
    return Solution(choice, total, "dp", total)


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
    import highspy

    with _quiet_stdout():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("mip_rel_gap", 0.0)
        x = [[h.addBinary(obj=cost) for cost in costs] for costs in problem.node_cost]
        for row in x:
            h.addConstr(sum(row) == 1)
        for u, v, table in problem.edges:
            # candidates with equal rows (columns) of the table are one class: a pair of
            # classes costs what a pair of their members does, so one variable per class pair
            # (conversions depend on the placements only, and many signatures share them)
            rows, cols = _classes(table), _classes(list(zip(*table, strict=True)))
            in_row = [sum(x[u][a] for a in members) for members in rows]
            in_col = [sum(x[v][b] for b in members) for members in cols]
            for (i, ru), (j, cv) in product(enumerate(rows), enumerate(cols)):
                c = table[ru[0]][cv[0]]
                if math.isinf(c):
                    h.addConstr(in_row[i] + in_col[j] <= 1)
                elif c > 0:
                    y = h.addVariable(lb=0, obj=c)
                    h.addConstr(y - in_row[i] - in_col[j] >= -1)
        if problem.memory is not None and problem.memory_limit is not None:
            h.addConstr(
                sum(
                    m * var
                    for ms, row in zip(problem.memory, x, strict=True)
                    for m, var in zip(ms, row, strict=True)
                )
                <= problem.memory_limit
            )
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise NoSolution(
                f"the integer program has no solution ({h.modelStatusToString(status)})"
            )
        values = h.getSolution().col_value
    choice = [max(range(len(row)), key=lambda c, row=row: values[row[c].index]) for row in x]
    cost = problem.cost(choice)
    return Solution(choice, cost, "ilp", cost)


def _classes(rows: Sequence[Sequence[float]]) -> list[list[int]]:
    """Indices of equal rows, grouped in order of first appearance."""
    groups: dict[tuple[float, ...], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(tuple(row), []).append(i)
    return list(groups.values())


def coordinate_descent(problem: Problem, starts: int = 4, seed: int = 0) -> Solution:
    """Several starts (each node's cheapest own candidate, then random ones); each sweep
    re-chooses every node given its neighbours; stop when a sweep changes nothing."""
    rng = random.Random(seed)
    neighbours: dict[int, list[tuple[int, list[list[float]], bool]]] = {
        i: [] for i in range(problem.size)
    }
    for u, v, table in problem.edges:
        neighbours[u].append((v, table, True))
        neighbours[v].append((u, table, False))

    def local(choice: list[int], node: int, c: int) -> float:
        total = problem.node_cost[node][c]
        for other, table, forward in neighbours[node]:
            total += table[c][choice[other]] if forward else table[choice[other]][c]
        return total

    best: Solution | None = None
    for start in range(starts):
        if start == 0:
            choice = [min(range(len(cs)), key=cs.__getitem__) for cs in problem.node_cost]
        else:
            choice = [rng.randrange(len(cs)) for cs in problem.node_cost]
        changed = True
        while changed:
            changed = False
            for node in range(problem.size):
                options = sorted(
                    range(len(problem.node_cost[node])), key=lambda c: local(choice, node, c)
                )
                for c in options:
                    trial = [*choice[:node], c, *choice[node + 1 :]]
                    if problem.fits(trial):
                        if local(choice, node, c) < local(choice, node, choice[node]) - 1e-12:
                            choice, changed = trial, True
                        break
        if not problem.fits(choice):
            continue
        cost = problem.cost(choice)
        if best is None or cost < best.cost:
            best = Solution(list(choice), cost, "cd", lower_bound(problem))
    if best is None or math.isinf(best.cost):
        raise NoSolution("coordinate descent found no combination within the memory limit")
    return best


def lower_bound(problem: Problem) -> float:
    """Every node pays at least its cheapest own cost; edges cost at least nothing."""
    return sum(min(cs) for cs in problem.node_cost)
