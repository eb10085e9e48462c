"""auto-shard's per-repetition lower bound and its column generation: the calls of one
repetition (sharing the caller's arguments) are bounded together, inlined with a node per
call boundary, instead of each call alone; their optima's boundaries become transfer table
entries; a callee with few boundaries gets them all (the search is then exact). The ground
truth is the exact search (dp) over complete transfer tables: every boundary an entry."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_auto_shard_bound import complete_tables, total
from xdsl.dialects import func

from ccopt.diagnostics import CcoptError
from ccopt.passes import auto_shard
from ccopt.passes.auto_shard import AutoShard
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program

OPEN = "!dtensor.tensor<8x8xf32, @m[?]>"
S0 = "!dtensor.tensor<8x8xf32, @m[S(0)]>"
RESPLIT = 64.0 + 1.0
"""An all-to-all re-splitting an 8x8 f32 tensor (256 bytes) split in two: a device sends
half its half, 64 bytes, plus the byte model's one byte per collective."""


def shared_weight() -> str:
    """@use reads the weight `w` with a row-split `x` (x.w: w whole, or gathered at the call
    or inside); @step_w updates `w` in place with a row-split `d` (w - d: w split by rows as
    d is, or `d` or the difference gathered). Each call alone is free at its own boundary (w
    replicated, w split by rows); together, with one placement of `w`, one of them gathers."""
    return "\n".join(
        [
            "dtensor.mesh @m [x=2]",
            f"func.func private @use(%x: {S0}, %w: {OPEN}) -> {OPEN} {{",
            f"  %y = dtensor.matmul %x, %w : ({S0}, {OPEN}) -> {OPEN}",
            f"  func.return %y : {OPEN}",
            "}",
            f"func.func private @step_w(%w: {OPEN}, %d: {S0}) {{",
            f"  %n = dtensor.sub %w, %d : ({OPEN}, {S0}) -> {OPEN}",
            f"  dtensor.update %w with %n : {OPEN}",
            "  func.return",
            "}",
            f"func.func @step(%x: {S0}, %w: {OPEN}, %d: {S0}) -> {OPEN} {{",
            f"  %y = func.call @use(%x, %w) : ({S0}, {OPEN}) -> {OPEN}",
            f"  func.call @step_w(%w, %d) : ({OPEN}, {S0}) -> ()",
            f"  func.return %y : {OPEN}",
            "}",
        ]
    )


def step_report(module) -> dict:  # noqa: ANN001 - a ModuleOp
    f = next(f for f in module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == "step")
    return f.attributes["auto_shard"].data


def searched(  # noqa: ANN201
    text: str,
    strategy: str = "dp",
    per_call: bool = False,
    objective: str = "bytes",
    **patches: int,
):
    with pytest.MonkeyPatch.context() as patch:
        for name, value in patches.items():
            patch.setattr(auto_shard, name, value)
        if per_call:
            patch.setattr(AutoShard, "repetition_relaxation", lambda *_: None)
        return apply_pipeline(
            load_program(text), f"auto-shard{{strategy={strategy} objective={objective}}}"
        )


def truth(text: str, objective: str = "bytes") -> float:
    """The optimum over every boundary of the calls: dp (exact variable elimination; ilp
    stops within HiGHS's relative gap of 1e-4) over complete tables."""
    with pytest.MonkeyPatch.context() as patch:
        complete_tables(patch)
        patch.setattr(auto_shard, "GAP_ROUNDS", 0)
        module = apply_pipeline(
            load_program(text), f"auto-shard{{strategy=dp objective={objective}}}"
        )
    return total(module, "cost")


def test_the_repetition_bound_couples_the_calls_sharing_a_weight():
    """Hand-derived (bytes): @use's own optimum (w replicated: x.w stays split by rows) and
    @step_w's (w split by rows, as d: the update is local) each cost 0 but for the arguments'
    1e-9-per-byte tie-break, and each call's boundary is free to reach from w's placement,
    so the per-call bound is about 0. One w serves both: at R the update gathers d or the
    difference (128 + 1 B); at S(0) @use re-splits x by columns (`RESPLIT`, 65 B: x.w is
    then a partial sum, returned as it is); at S(1) both pay. The per-repetition bound is
    65 B, the true optimum, and the tables (not complete here) meet it after column
    generation: gap 0."""
    text = shared_weight()
    best = truth(text)
    assert best == pytest.approx(RESPLIT, rel=1e-6)  # the tie-break: 1e-9 per byte
    per_call = searched(text, per_call=True, COMPLETE_TABLE=0)
    per_rep = searched(text, COMPLETE_TABLE=0)
    assert total(per_call, "bound") < 1e-5  # four 256-byte arguments at most: 1e-6
    assert total(per_rep, "bound") == pytest.approx(best, rel=1e-9)
    assert total(per_rep, "cost") == pytest.approx(best, rel=1e-9)
    report = step_report(per_rep)
    assert report["gap"].value.data == pytest.approx(0.0, abs=1e-12)
    assert "per repetition (1 repetitions)" in report["note"].data
    assert "gap 0: proven optimal" in report["note"].data


def test_complete_tables_make_dp_exact_on_a_chain():
    """A chain of calls sharing no argument: @layer has 3 x 3 x 4 = 36 boundaries (two
    arguments at R, S(0), S(1); a result partial too), at most `COMPLETE_TABLE`, so every one
    is an entry and dp over the tables is the optimum over every boundary (gap 0, the note
    says why); without them the per-call bound is below it."""
    t, s1 = OPEN, "!dtensor.tensor<8x8xf32, @m[S(1)]>"
    text = "\n".join(
        [
            "dtensor.mesh @m [x=2]",
            f"func.func private @layer(%a: {t}, %b: {t}) -> {t} {{",
            f"  %y = dtensor.matmul %a, %b : ({t}, {t}) -> {t}",
            f"  %g = dtensor.gelu %y : {t}",
            f"  func.return %g : {t}",
            "}",
            f"func.func @step(%x: {s1}, %w0: {t}, %w1: {t}, %w2: {t}) -> {t} {{",
            f"  %s = dtensor.add %x, %x : ({s1}, {s1}) -> {t}",
            *(
                f"  %h{i} = func.call @layer({a}, %w{i}) : ({t}, {t}) -> {t}"
                for i, a in enumerate(["%s", "%h0", "%h1"])
            ),
            f"  func.return %h2 : {t}",
            "}",
        ]
    )
    best = truth(text)
    module = searched(text)
    assert total(module, "cost") == pytest.approx(best, rel=1e-9)
    report = step_report(module)
    assert report["gap"].value.data == 0.0
    assert "transfer table is complete" in report["note"].data
    assert "@layer 27" in report["note"].data  # 36 boundaries, 27 distinct programs


OPS = st.sampled_from(["gelu", "add", "matmul"])


@st.composite
def layers(draw: st.DrawFn) -> str:
    """Two repetitions of a layer: @f(a, w) of one or two ops, and @g(w, d) reading the
    weight with f's result (an add or sub, in place or returned), called as f, g per weight
    from a step whose input is open, replicated or split by columns, maybe with an op after
    them (bounded with the last repetition: `repetition_items`)."""

    def op(name: str, target: str, a: str, b: str) -> str:
        if name == "gelu":
            return f"  {target} = dtensor.gelu {a} : {OPEN}"
        return f"  {target} = dtensor.{name} {a}, {b} : ({OPEN}, {OPEN}) -> {OPEN}"

    body, values = [], ["%a", "%w"]
    for i, name in enumerate(draw(st.lists(OPS, min_size=1, max_size=2))):
        picks = draw(st.lists(st.sampled_from(values), min_size=2, max_size=2))
        body.append(op(name, f"%v{i}", *picks))
        values.append(f"%v{i}")
    in_place = draw(st.booleans())
    after = draw(st.one_of(st.none(), OPS))  # an op of the step reading the last layer
    kind = draw(st.sampled_from(["add", "sub"]))
    x = {"R": "!dtensor.tensor<8x8xf32, @m[R]>", "S1": "!dtensor.tensor<8x8xf32, @m[S(1)]>"}.get(
        draw(st.sampled_from(["open", "R", "S1"])), OPEN
    )
    g_type = "()" if in_place else OPEN
    g_body = [f"  %n = dtensor.{kind} %w, %d : ({OPEN}, {OPEN}) -> {OPEN}"]
    g_body += (
        [f"  dtensor.update %w with %n : {OPEN}", "  func.return"]
        if in_place
        else [f"  func.return %n : {OPEN}"]
    )

    def g_call(w: str, d: str, out: str) -> str:
        target = "" if in_place else f"{out} = "
        return f"  {target}func.call @g({w}, {d}) : ({OPEN}, {OPEN}) -> {g_type}"

    return "\n".join(
        [
            "dtensor.mesh @m [x=2]",
            f"func.func private @f(%a: {OPEN}, %w: {OPEN}) -> {OPEN} {{",
            *body,
            f"  func.return {values[-1]} : {OPEN}",
            "}",
            f"func.func private @g(%w: {OPEN}, %d: {OPEN}) -> {g_type} {{",
            *g_body,
            "}",
            f"func.func @step(%x: {x}, %w0: {OPEN}, %w1: {OPEN}) -> {OPEN} {{",
            f"  %s = dtensor.add %x, %x : ({x}, {x}) -> {OPEN}",
            f"  %h = func.call @f(%s, %w0) : ({OPEN}, {OPEN}) -> {OPEN}",
            g_call("%w0", "%h", "%e0"),
            f"  %k = func.call @f(%h, %w1) : ({OPEN}, {OPEN}) -> {OPEN}",
            g_call("%w1", "%k", "%e1"),
            *([op(after, "%z", "%k", "%k")] if after else []),
            f"  func.return {'%z' if after else '%k'} : {OPEN}",
            "}",
        ]
    )


@settings(
    max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(layers(), st.sampled_from(["dp", "cd"]), st.sampled_from(["bytes", "time"]))
def test_the_bound_is_below_the_optimum_below_the_cost(
    text: str, strategy: str, objective: str
) -> None:
    """bound <= the optimum over every boundary <= the cost, with the relaxation and column
    generation at work (tables not complete) and without (complete: dp meets the optimum),
    in bytes and in seconds."""
    try:
        best = truth(text, objective)
    except CcoptError:  # a drawn program no placement runs
        return
    slack = 1e-9 * max(1.0, abs(best))
    module = searched(text, strategy, objective=objective, COMPLETE_TABLE=0)
    assert total(module, "bound") <= best + slack
    assert total(module, "cost") >= best - slack
    assert "per repetition (2 repetitions)" in step_report(module).get("note").data
    if strategy == "dp":
        exact = searched(text, objective=objective)
        assert total(exact, "cost") == pytest.approx(best, rel=1e-9, abs=1e-12)
