"""A matmul whose two operands are all-gathered: `overlap` pipelines the larger gather (bytes per
device; a tie: the first operand), the result equals the unscheduled program's on every rank,
and auto-shard's OAG credit counts that one pipeline only - the two edges' credits add up to
the saving the simulator predicts for the program after the pass
(FileCheck: test/filecheck/passes/overlap-both-gathered.mlir)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ccopt
from ccopt.dialects.dtensor import MatmulOp
from ccopt.dialects.dtensor_type import R, SplitAttr
from ccopt.mesh import Mesh
from ccopt.passes.overlap_credit import OverlapCredit, gather_bound, gather_wins
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.sim.machine import load_machine
from ccopt.sim.program import predicted_step_time_ns

S0, S1 = SplitAttr(0), SplitAttr(1)
SMALL = (Path(__file__).parents[1] / "filecheck/passes/overlap-both-gathered.mlir").read_text()
TP = Mesh("t", ("tp",), (8,))
MACHINE = "dgx-a100"


def t(shape: str, placement: str) -> str:
    return f"!dtensor.tensor<{shape}xbf16, @t[{placement}]>"


# x (4096x8192, 64 MiB) gathered from its columns, w (8192x8192, 128 MiB) from its rows: w's
# gather is the larger, so the pass pipelines it and gathers x whole first.
X, W, Y = "4096x8192", "8192x8192", "4096x8192"
BOTH = f"""
dtensor.mesh @t [tp=8]
func.func @f(%x: {t(X, "S(1)")}, %w: {t(W, "S(0)")}) -> {t(Y, "R")} {{
  %xg = coll.all_gather %x over [tp] : {t(X, "S(1)")} -> {t(X, "R")}
  %wg = coll.all_gather %w over [tp] : {t(W, "S(0)")} -> {t(W, "R")}
  %y = dtensor.matmul %xg, %wg : ({t(X, "R")}, {t(W, "R")}) -> {t(Y, "R")}
  func.return %y : {t(Y, "R")}
}}
"""


def saved(text: str) -> float:
    """Seconds overlap{chunks=4} saves on the program, by the simulator (DGX A100)."""
    before = predicted_step_time_ns(load_program(text), MACHINE)
    after = load_program(text)
    run_pipeline(after, "overlap{chunks=4}")
    return (before - predicted_step_time_ns(after, MACHINE)) * 1e-9


@pytest.mark.parametrize("entry", ["second_gather_larger", "equal_gathers"])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_pipelining_the_larger_gather_keeps_the_result(entry, chunks):
    """Before and after the pass, on the 4 ranks of the FileCheck programs, agree."""
    report = ccopt.check_pipeline(SMALL, f"overlap{{chunks={chunks}}}", entry=entry, seed=3)
    assert report.ok
    assert report.reference.outputs


def test_the_pass_pipelines_the_larger_gather():
    module = load_program(BOTH)
    run_pipeline(module, "overlap{chunks=4}")
    text = str(module)
    assert f"coll.all_gather %x over [tp] : {t(X, 'S(1)')} -> {t(X, 'R')}" in text
    assert text.count("sched.execute") == 4
    assert f"-> {t('8192x2048', 'R')}" in text  # w's column chunks gathered


def test_the_credit_counts_the_one_pipeline_the_pass_runs():
    """Both edges of the matmul credited, each told where the other operand can come in: x's
    gather loses to w's (so gets 0), w's wins, and their sum is the simulated saving of the
    program after the pass - where each edge used to be credited alone, twice the pipelines."""
    module = load_program(BOTH)
    mm = next(op for op in module.walk() if isinstance(op, MatmulOp))
    credit = OverlapCredit(load_machine(MACHINE).fit(8), TP, 4)
    sig = [([(R,), (R,)], (R,))]
    on_x = credit.gather_table(mm, 0, [(S1,)], sig, rivals=[(S0,)])[0, 0]
    on_w = credit.gather_table(mm, 1, [(S0,)], sig, rivals=[(S1,)])[0, 0]
    assert on_x == 0.0
    assert on_w > 0.0
    assert on_x + on_w == pytest.approx(saved(BOTH), rel=1e-9, abs=1e-12)
    # x gathered alone (w given at R) is pipelined and credited: the credit the old model
    # added on top of w's
    alone = credit.gather_table(mm, 0, [(S1,)], sig, rivals=[(R,)])[0, 0]
    assert alone > 0.0
    # with nothing known of w's producer, w may be gathered: x's edge is never credited
    assert credit.gather_table(mm, 0, [(S1,)], sig)[0, 0] == 0.0


def test_gather_wins_decides_as_the_pass_does():
    """Operand 0 wins a tie, operand 1 only a strict win; no rival gather: a win outright."""
    module = load_program(SMALL)
    mesh = Mesh("tp", ("tp",), (4,))
    small, equal = (op for op in module.walk() if isinstance(op, MatmulOp))
    both = [(R,), (R,)]
    assert not gather_wins(small, 0, (S1,), both, mesh, [(S0,)])
    assert gather_wins(small, 1, (S0,), both, mesh, [(S1,)])
    assert gather_wins(equal, 0, (S1,), both, mesh, [(S0,)])
    assert not gather_wins(equal, 1, (S0,), both, mesh, [(S1,)])
    assert gather_wins(small, 0, (S1,), [(R,), (S0,)], mesh)  # w split: nothing gathers into it
    assert gather_wins(small, 0, (S1,), both, mesh, [(R,)])
    w = small.rhs.type
    assert gather_bound(w, (R,), mesh) == 16 * 64 * 4 * 3 // 4
    assert gather_bound(w, (S0,), mesh) is None
