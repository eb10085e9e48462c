"""auto-shard's OAG credit end to end where both operands of a matmul need an all-gather
(FileCheck, with the derivation: test/filecheck/passes/auto-shard-overlap-both-gathered.mlir).
The search credits only the gather the `overlap` pass pipelines; that choice differs from the
one a double credit (every gathered edge credited as if its gather were the one pipelined)
makes; the credit it reports is the saving the simulator predicts for the chosen program after
overlap{chunks=4}; the chosen program after the pass is faster, by the simulator, than the
double credit's; and the search then the pass is proven equal to the input on the 8 simulated
ranks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ccopt
import ccopt.passes.overlap_credit as overlap_credit
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program
from ccopt.runner import compare_modules
from ccopt.sim.program import predicted_step_time_ns

HERE = Path(__file__).parents[1] / "filecheck/passes"
SMALL = (HERE / "auto-shard-overlap-both-gathered.mlir").read_text()
SCALED = str(HERE / "inputs/dgx-a100-by-64.yml")
# The same program at the sizes the scaled machine stands for, on a DGX A100.
LARGE = SMALL.replace("8x64x64", "8x4096x4096")


def search(text: str, machine: str, strategy: str = "exhaustive", double: bool = False) -> str:
    """The program auto-shard{objective=time overlap=4} chooses; `double`: with every gathered
    edge credited as if its gather were the one pipelined (`gather_wins` always true: the OAG
    credit before the pass pipelined one gather per matmul)."""
    overlap_credit.forget()
    chosen = f'auto-shard{{machine="{machine}" strategy={strategy} objective=time overlap=4}}'
    if not double:
        return str(apply_pipeline(load_program(text), chosen))
    wins = overlap_credit.gather_wins
    overlap_credit.gather_wins = lambda *args, **kwargs: True
    try:
        return str(apply_pipeline(load_program(text), chosen))
    finally:
        overlap_credit.gather_wins = wins
        overlap_credit.forget()


def report(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in re.findall(r"(cost|overlap_credit) = ([-+0-9.e]+)", text)}


def both_gathered(text: str) -> bool:
    """x gathered over tp, w over dp, into the matmul (A of the derivation)."""
    return (
        "coll.all_gather %x over [tp]" in text
        and "coll.all_gather %w over [dp]" in text
        and "all_to_all" not in text
    )


def stepped(text: str, machine: str) -> tuple[float, float]:
    """Simulated step times (s) of `text` before and after overlap{chunks=4}."""
    before = predicted_step_time_ns(load_program(text), machine)
    after = apply_pipeline(load_program(text), "overlap{chunks=4}")
    return before * 1e-9, predicted_step_time_ns(after, machine) * 1e-9


@pytest.mark.parametrize(
    ("text", "machine", "credit", "cost"),
    [
        (SMALL, SCALED, 119.127e-6, 1070.611e-6),
        (LARGE, "dgx-a100", 66.766e-6, 1122.972e-6),
    ],
    ids=["scaled", "dgx-a100"],
)
def test_the_one_pipeline_credit_picks_another_program_than_a_double_credit(
    text, machine, credit, cost
):
    """Both gathered (A) with the credit of x's pipelined gather, where the double credit's
    penalty on w's edge (w's gather pipelined alone loses time) picks batch-parallel (B); A's
    reported credit is what overlap{chunks=4} saves on it by the simulator, and after the pass
    A is the faster program there too."""
    right = search(text, machine)
    double = search(text, machine, double=True)
    assert both_gathered(right)
    assert not both_gathered(double) and double.count("all_to_all") == 3
    got = report(right)
    assert got["overlap_credit"] == pytest.approx(credit, abs=1e-9)
    assert got["cost"] == pytest.approx(cost, abs=1e-9)
    before, after = stepped(right, machine)
    # the pair's and the whole program's step times are each rounded to whole ns
    assert before - after == pytest.approx(got["overlap_credit"], abs=1.01e-9)
    assert after < stepped(double, machine)[1]


@pytest.mark.parametrize("strategy", ["dp", "ilp", "cd"])
def test_every_strategy_takes_the_same_program(strategy):
    def program(text: str) -> str:
        return re.sub(r'strategy = "\w+"', "", text)

    assert program(search(SMALL, SCALED, strategy)) == program(search(SMALL, SCALED))


def test_the_chosen_program_then_overlap_is_proven_equal():
    """On the 8 simulated ranks: the search then the pass, as ccopt-run --check-pipeline does,
    and the chosen program after the pass against the open input directly."""
    pipeline = (
        f'auto-shard{{machine="{SCALED}" strategy=dp objective=time overlap=4}},overlap{{chunks=4}}'
    )
    checked = ccopt.check_pipeline(SMALL, pipeline, seed=2)
    assert checked.comparisons and all(c.ok for c in checked.comparisons)
    chosen = apply_pipeline(load_program(search(SMALL, SCALED)), "overlap{chunks=4}")
    assert sum(op.name == "sched.execute" for op in chosen.walk()) == 4
    direct = compare_modules(load_program(SMALL), chosen, seed=5)
    assert direct.comparisons and all(c.ok for c in direct.comparisons)
