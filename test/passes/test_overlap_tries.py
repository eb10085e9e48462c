"""auto-shard's `overlap-tries`: each pair is credited with the best of the chunk counts tried,
as the simulator says (checked against programs written out by hand), and that count is written
as the `chunks` of the collective the overlap pass pipelines, which the pass follows."""

from __future__ import annotations

import pytest
from test_overlap_credit import SMALL  # the credited pair on a 2x2 mesh
from test_overlap_fused_credit import SMALL as FUSED_SMALL  # its fused row-parallel pair
from xdsl.dialects import func

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll
from ccopt.dialects.dtensor import MatmulOp
from ccopt.dialects.dtensor_type import PartialAttr, R, SplitAttr
from ccopt.mesh import Mesh
from ccopt.passes.overlap_credit import FUSED_PIPELINE, OverlapCredit, best_times, pair_program
from ccopt.passes.pipeline import apply_pipeline, run_pipeline
from ccopt.program import load_program
from ccopt.sim.machine import load_machine
from ccopt.sim.program import predicted_step_time_ns

P = PartialAttr("sum")
S0, S1 = SplitAttr(0), SplitAttr(1)
TP = Mesh("t", ("tp",), (8,))


def t(shape: str, placement: str) -> str:
    return f"!dtensor.tensor<{shape}xbf16, @t[{placement}]>"


# The row-parallel second matmul of auto-shard-overlap.mlir and its all-reduce.
ROW = f"""
dtensor.mesh @t [tp=8]
func.func @f(%h: {t("8192x12288", "S(1)")}, %w2: {t("12288x8192", "S(0)")}) -> {t("8192x8192", "R")} {{
  %y = dtensor.matmul %h, %w2 : ({t("8192x12288", "S(1)")}, {t("12288x8192", "S(0)")}) -> {t("8192x8192", "P(sum)")}
  %r = coll.all_reduce sum %y over [tp] : {t("8192x8192", "P(sum)")} -> {t("8192x8192", "R")}
  func.return %r : {t("8192x8192", "R")}
}}
"""


def saved(chunks: int) -> float:
    before = predicted_step_time_ns(load_program(ROW), "dgx-a100")
    after = load_program(ROW)
    run_pipeline(after, f"overlap{{chunks={chunks}}}")
    return (before - predicted_step_time_ns(after, "dgx-a100")) * 1e-9


def test_the_credit_is_the_best_count_the_simulator_finds():
    """224, 383, 430 and 344 us for 2, 4, 8 and 16 chunks: the credit with C=4 and tries 2, 8,
    16 is the 8 chunks' saving, and `best_times` names 8."""
    savings = {c: saved(c) for c in (2, 4, 8, 16)}
    assert max(savings, key=savings.__getitem__) == 8
    assert savings[8] == pytest.approx(430.428e-6, abs=1e-9)
    mm = next(op for op in load_program(ROW).walk() if isinstance(op, MatmulOp))
    machine = load_machine("dgx-a100").fit(8)
    credit = OverlapCredit(machine, TP, 4, tries=(2, 8, 16))
    assert credit.counts == (4, 2, 8, 16)
    got = credit.credit(mm, [(S1,), (S0,)], (P,), (R,))
    assert got == pytest.approx(savings[8], abs=1e-12)
    program = pair_program(mm, [(S1,), (S0,)], (P,), (R,), TP)
    assert best_times(program, machine, (2, 4, 8, 16))[2] == 8


FLIP = open(  # noqa: SIM115
    __file__.replace(
        "test/passes/test_overlap_tries.py", "test/filecheck/passes/auto-shard-overlap-tries.mlir"
    )
).read()


def reductions(module) -> list[coll.AllReduceOp]:  # noqa: ANN001
    return [op for op in module.walk() if isinstance(op, coll.AllReduceOp)]


@pytest.mark.parametrize("strategy", ["exhaustive", "dp", "cd"])
def test_the_best_count_is_written_on_the_pipelined_collective(strategy):
    module = apply_pipeline(
        load_program(FLIP),
        f"auto-shard{{strategy={strategy} objective=time overlap=4 overlap-tries=2,8,16}}",
    )
    (ar,) = reductions(module)
    assert ar.chunks is not None and ar.chunks.value.data == 8
    plain = apply_pipeline(
        load_program(FLIP), f"auto-shard{{strategy={strategy} objective=time overlap=4}}"
    )
    assert all(op.chunks is None for op in reductions(plain))


def test_a_collective_with_its_own_count_keeps_it():
    text = FLIP.replace(
        "%z = dtensor.add %y, %b",
        "%r = coll.all_reduce sum %y over [tp] chunks 2 : "
        "!dtensor.tensor<8192x8192xbf16, @t[?]> -> !dtensor.tensor<8192x8192xbf16, @t[R]>\n"
        "  %z = dtensor.add %r, %b",
    ).replace(
        "(!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>)",
        "(!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x8192xbf16, @t[R]>)",
    )
    module = apply_pipeline(
        load_program(text), "auto-shard{strategy=dp objective=time overlap=4 overlap-tries=8}"
    )
    assert [op.chunks.value.data for op in reductions(module) if op.chunks is not None] == [2]


@pytest.mark.parametrize(
    "options",
    [
        "overlap=0 overlap-tries=2",
        "overlap=4 overlap-tries=0",
    ],
)
def test_unusable_tries_are_refused(options):
    with pytest.raises(CcoptError, match="overlap-tries needs overlap=C > 0"):
        apply_pipeline(load_program(FLIP), f"auto-shard{{objective=time {options}}}")


def test_a_fused_overlap_pipeline_without_overlap_is_refused():
    """overlap-pipeline only says which passes earn overlap=C's credit: without C it was
    accepted and did nothing."""
    with pytest.raises(CcoptError, match="overlap-pipeline=fused .* needs overlap=C > 0"):
        apply_pipeline(load_program(FLIP), "auto-shard{objective=time overlap-pipeline=fused}")


@pytest.mark.parametrize("strategy", ["dp", "cd"])
def test_a_search_with_tries_then_overlap_is_proven_equal(strategy):
    """The counts written on the collectives, then the overlap pass following them, on the
    simulated ranks (the interpreter agrees before and after)."""
    pipeline = (
        f"auto-shard{{strategy={strategy} objective=time overlap=2 overlap-tries=1,4}},"
        "overlap{chunks=2}"
    )
    report = ccopt.check_pipeline(SMALL, pipeline, seed=1)
    assert report.comparisons and all(c.ok for c in report.comparisons)
    searched = apply_pipeline(
        load_program(SMALL),
        f"auto-shard{{strategy={strategy} objective=time overlap=2 overlap-tries=1,4}}",
    )
    f = next(op for op in searched.walk() if isinstance(op, func.FuncOp))
    assert any(
        getattr(op, "chunks", None) is not None
        for op in f.walk()
        if isinstance(op, coll.CollectiveOp)
    )


# overlap-tries with overlap-pipeline=fused (FileCheck:
# test/filecheck/passes/auto-shard-overlap-fused-tries.mlir): the fused pipeline simulated per
# count, the best written on the all-reduce and followed through split-all-reduce,
# fuse-collective and overlap.
FUSED_FLIP = open(  # noqa: SIM115
    __file__.replace(
        "test/passes/test_overlap_tries.py",
        "test/filecheck/passes/auto-shard-overlap-fused-tries.mlir",
    )
).read()
FUSED_TRIES = "objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8"


def fused_saved(text: str, chunks: int) -> float:
    """Seconds the fused pipeline with overlap{chunks=...} saves on `text` (DGX A100)."""
    before = predicted_step_time_ns(load_program(text), "dgx-a100")
    after = load_program(text)
    run_pipeline(after, f"{FUSED_PIPELINE}{{chunks={chunks}}}")
    return (before - predicted_step_time_ns(after, "dgx-a100")) * 1e-9


def w2_placement(module) -> str:  # noqa: ANN001
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return str(f.body.block.args[2].type).rsplit("@t", 1)[1]


@pytest.mark.parametrize("strategy", ["exhaustive", "dp", "ilp", "cd"])
def test_fused_tries_credit_the_best_count_and_the_pipeline_follows_it(strategy):
    """The row-parallel program the search keeps: the fused pipeline saves 680.3, 978.1, 1051.2
    and 1075.4 us with 2, 4, 6 and 8 chunks; the credit taken is the 8 chunks' (C=2 alone
    takes none: 680.3 us < the 734.2 us row-parallel costs more), 8 is written on the
    all-reduce, and the pipeline run with overlap{chunks=2} saves on the whole program exactly
    the credit the search reported."""
    module = apply_pipeline(
        load_program(FUSED_FLIP), f"auto-shard{{strategy={strategy} {FUSED_TRIES}}}"
    )
    assert w2_placement(module) == "[S(0)]>"
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    credit = f.attributes["auto_shard"].data["overlap_credit"].value.data
    (ar,) = reductions(module)
    assert ar.chunks is not None and ar.chunks.value.data == 8
    chosen = str(module)
    savings = {c: fused_saved(chosen.replace(" chunks 8", ""), c) for c in (2, 4, 6, 8)}
    assert max(savings, key=savings.__getitem__) == 8
    assert savings[8] == pytest.approx(1075.420e-6, abs=2e-9)
    # the pair's and the whole program's step times are each rounded to whole ns
    assert credit == pytest.approx(savings[8], abs=1.01e-9)
    assert fused_saved(chosen, 2) == pytest.approx(credit, abs=1.01e-9)  # 8 followed, not 2
    fused = [
        op
        for op in apply_pipeline(load_program(chosen), FUSED_PIPELINE.rsplit(",", 1)[0]).walk()
        if isinstance(op, coll.FusedAllReduceOp)
    ]
    assert [op.chunks.value.data for op in fused if op.chunks is not None] == [8]
    plain = apply_pipeline(
        load_program(FUSED_FLIP),
        f"auto-shard{{strategy={strategy} objective=time overlap=2 overlap-pipeline=fused}}",
    )
    assert w2_placement(plain) == "[R]>"


def test_the_fused_tries_choices_agree_with_the_simulator():
    """After the fused pipeline (overlap{chunks=2}) the replicated w2 that overlap=2 keeps takes
    3.770 ms, below row-parallel in 2 chunks (4.096 ms); the row-parallel w2 the tries choose,
    in the 8 chunks written, takes 3.701 ms."""
    pipeline = f"{FUSED_PIPELINE}{{chunks=2}}"
    search = "auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused"
    kept = apply_pipeline(load_program(FUSED_FLIP), f"{search}}},{pipeline}")
    tried = apply_pipeline(load_program(FUSED_FLIP), f"{search} overlap-tries=4,6,8}}")
    two = load_program(str(tried).replace(" chunks 8", ""))
    times = [
        predicted_step_time_ns(m, "dgx-a100") * 1e-6
        for m in (kept, apply_pipeline(two, pipeline), apply_pipeline(tried, pipeline))
    ]
    assert times == pytest.approx([3.770, 4.096, 3.701], abs=1e-3)


@pytest.mark.parametrize("strategy", ["dp", "cd"])
def test_a_fused_search_with_tries_then_the_fused_pipeline_is_proven_equal(strategy):
    """test_overlap_fused_credit's small row-parallel pair (a memory limit keeps the partial
    product): the counts tried (1 and 4 besides C=2) simulated under the fused pipeline, the
    best written on the all-reduce, carried to the fused collective and followed by overlap;
    the interpreter agrees before and after on the 4 simulated ranks."""
    search = (
        f"auto-shard{{strategy={strategy} objective=time overlap=2 overlap-pipeline=fused "
        "overlap-tries=1,4 memory=0.000001}"
    )
    searched = apply_pipeline(load_program(FUSED_SMALL), search)
    (ar,) = reductions(searched)
    assert ar.chunks is not None
    count = ar.chunks.value.data
    assert count in (1, 2, 4)
    pipeline = f"{search},{FUSED_PIPELINE}{{chunks=2}}"
    report = ccopt.check_pipeline(FUSED_SMALL, pipeline, seed=1)
    assert report.comparisons and all(c.ok for c in report.comparisons)
    module = apply_pipeline(load_program(FUSED_SMALL), pipeline)
    assert sum(op.name == "coll.fused_all_reduce" for op in module.walk()) == count
