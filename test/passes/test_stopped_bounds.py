"""The lower bound of an integer program stopped at its time limit: the largest valid one of
HiGHS's dual bound, its LP relaxation's optimum (solved after the stop when it was not before),
the forest relaxation and, under a memory limit, the forest relaxation of the candidates that
fit (`fitting_bound`, from `_floor`'s per-point minima). It is never above the cost, and the
note gives the gap as (cost - bound) / cost; `Solution.gap` and auto-shard's `gap` stay the
difference."""

from __future__ import annotations

import math
import random
import re

import pytest
from xdsl.dialects import func

from ccopt.frontend.gpt import Layout, gpt_step
from ccopt.passes import placement_search
from ccopt.passes.pipeline import apply_pipeline
from ccopt.passes.placement_search import (
    Problem,
    best_bound,
    fitting_bound,
    integer_program,
    lower_bound,
    relative_gap,
)
from ccopt.program import load_program


def grid(n: int = 12, k: int = 4, seed: int = 1) -> Problem:
    """An n x n grid of nodes of k candidates (own costs in [0, 10), edges charging [0, 20)
    where the ends differ: a Potts model, whose cycles make the relaxation fractional) under a
    memory limit of 5 bytes a node, each candidate holding [0, 10): the limit couples every
    node, so HiGHS branches (it proves the optimum, 705.663, in about 15 s)."""
    rng = random.Random(seed)
    node_cost = [[rng.uniform(0, 10) for _ in range(k)] for _ in range(n * n)]
    edges = []
    for i in range(n):
        for j in range(n):
            for a, b in ((i + 1, j), (i, j + 1)):
                if a < n and b < n:
                    table = [[rng.uniform(0, 20) * (p != q) for q in range(k)] for p in range(k)]
                    edges.append((i * n + j, a * n + b, table))
    problem = Problem(node_cost, edges)
    problem.memory = [[rng.uniform(0, 10) for _ in range(k)] for _ in range(n * n)]
    problem.memory_limit = 5.0 * n * n
    return problem


OPTIMUM = 705.663  # grid()'s, proven by HiGHS given a minute


def noted(note: str) -> tuple[str, float]:
    """The bound a stopped program's note names and the relative gap it gives."""
    found = re.search(r"bound: (.*), gap ([0-9.]+)% of the cost", note)
    assert found, note
    return found[1], float(found[2]) / 100


def test_best_bound_keeps_the_largest_valid_one():
    bounds = {"a": 3.0, "b": 5.0, "above": 7.0, "none": -math.inf, "nan": math.nan}
    assert best_bound(bounds, 6.0) == (5.0, "b")  # 7 > the cost: a solver's slip, left out
    assert best_bound({"a": 6.0 + 1e-12}, 6.0) == (6.0, "a")  # rounding: the cost itself
    assert best_bound({"above": 7.0}, 6.0) == (-math.inf, "none")


def test_relative_gap():
    assert relative_gap(10.0, 4.0) == pytest.approx(0.6)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(8.0, -math.inf) == math.inf


def test_fitting_bound_drops_the_candidates_that_cannot_fit():
    """Node 0's free candidate holds 10 bytes where the limit is 5 (node 1 holds 2 at the same
    point): every fitting program pays 3 for its other candidate, which the plain relaxation,
    blind to the limit, does not see; with a limit of 2 nothing fits."""
    problem = Problem([[0.0, 3.0], [0.0]], memory=[[10.0, 1.0], [2.0]], memory_limit=5.0)
    assert lower_bound(problem) == 0.0
    assert fitting_bound(problem) == 3.0
    problem.memory_limit = 2.0
    assert fitting_bound(problem) == math.inf


@pytest.mark.parametrize(
    ("iterations", "seconds", "which"),
    [(5_000, 30.0, "the LP relaxation"), (0, 30.0, None), (5_000, 0.0, None)],
)
def test_a_tiny_time_limit_on_a_mid_sized_problem(monkeypatch, iterations, seconds, which):
    """144 nodes of 4 candidates under a memory limit, 1 ms: HiGHS has no dual bound yet. Given
    simplex iterations after the stop (about 2,000 needed), the LP relaxation's optimum
    (701.575) is the bound, 4 below the optimum; given none - by the iteration budget, or by
    the wall-clock safety net behind it -, the forest relaxations are (547.159: 22% below).
    Either way it is the largest valid one, at most the cost and the optimum, and the note's
    gap is (cost - bound) / cost. The budget is one of work: every run has the same bound."""
    monkeypatch.setattr(placement_search, "RELAXATION_ITERATIONS", iterations)
    monkeypatch.setattr(placement_search, "RELAXATION_SECONDS", seconds)
    problem = grid()
    solution = integer_program(problem, time_limit=1e-3)
    assert not solution.optimal and "stopped at its time limit (0.001 s)" in solution.note
    again = integer_program(problem, time_limit=1e-3)
    assert again.lower_bound == solution.lower_bound
    cost, bound = solution.cost, solution.lower_bound
    forests = max(lower_bound(problem), fitting_bound(problem))
    assert forests <= bound <= min(cost, OPTIMUM)
    named, gap = noted(solution.note)
    assert gap == pytest.approx((cost - bound) / cost, abs=5e-6)  # the note rounds to 0.001%
    assert solution.gap == pytest.approx(cost - bound)
    if which is not None:
        assert named == which and bound == pytest.approx(701.575, abs=1e-3)
    else:
        assert named.startswith("the forest relaxation") and bound == pytest.approx(forests)
        assert bound == pytest.approx(547.159, abs=1e-3)


def test_auto_shard_reports_the_bound_of_a_stopped_search():
    """auto-shard{strategy=ilp memory=... time-limit=0.001} on a GPT layer inlined (480 ops,
    bytes on dp=2 x tp=2 under 0.0001 GiB): bound <= cost, `gap` is cost - bound and the note's
    gap (cost - bound) / cost."""
    mesh = {"dp": 2, "tp": 2}
    step = gpt_step("tiny", mesh, layers=1, layout=Layout.open(list(mesh))).module
    module = apply_pipeline(
        load_program(str(step)), "inline,auto-shard{strategy=ilp memory=0.0001 time-limit=0.001}"
    )
    (f,) = [
        op for op in module.walk() if isinstance(op, func.FuncOp) and "auto_shard" in op.attributes
    ]
    report = {k: getattr(v, "value", v).data for k, v in f.attributes["auto_shard"].data.items()}
    cost, bound = report["cost"], report["bound"]
    assert 0.0 <= bound <= cost
    assert report["gap"] == pytest.approx(cost - bound)
    _, gap = noted(report["note"])
    assert gap == pytest.approx((cost - bound) / cost, abs=5e-6)
