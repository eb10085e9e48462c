"""auto-shard's reported bound is a lower bound of the whole problem - every boundary a call
could have, not only its callee's transfer table entries - and the strategies' programs cost
at least the true optimum. The ground truth is the exhaustive search over complete transfer
tables: every boundary (argument and result layouts) of the callee is an entry."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

from ccopt.diagnostics import CcoptError
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.dialects.open_placements import candidates
from ccopt.passes import auto_shard
from ccopt.passes.auto_shard import AutoShard
from ccopt.passes.auto_shard import reported_total as total
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program

OPEN = "!dtensor.tensor<8x8xf32, @m[?]>"
FIXED = {"R": "!dtensor.tensor<8x8xf32, @m[R]>", "S1": "!dtensor.tensor<8x8xf32, @m[S(1)]>"}


def complete_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transfer table holds every boundary of its function: its open optimum first
    (the relaxation's floor), then each combination of argument and result placements (an
    argument never partial) that some program has."""
    own = AutoShard.transfer_table

    def every(self, f, memo, tables):  # noqa: ANN001, ANN202
        entries, *others = own(self, f, memo, tables)
        for other in others:  # remade below with every other boundary
            self.drop(f, other.name)
        entries = [entries]

        def layouts(t, partial: bool):  # noqa: ANN001, ANN202
            if not isinstance(t, DTensorType) or not t.is_open:
                return [t]
            return [
                t.with_placements([p])
                for p in candidates(t)
                if partial or p.name != "dtensor.partial"
            ]

        ins = [layouts(t, False) for t in f.function_type.inputs.data]
        outs = [layouts(t, True) for t in f.function_type.outputs.data]
        for inputs, outputs in product(product(*ins), product(*outs)):
            try:
                entries.append(
                    self.variant(f, len(entries), list(inputs), list(outputs), memo, tables)
                )
            except CcoptError:  # no program has this boundary
                continue
        return entries

    monkeypatch.setattr(AutoShard, "transfer_table", every)
    monkeypatch.setattr(auto_shard, "REFINE_ROUNDS", 0)


OPS = st.sampled_from(["gelu", "add", "matmul"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A layer of one to three ops over its one or two open arguments, called twice in a
    chain from a step whose input is open, replicated or split by columns, with an add or a
    matmul before the calls and maybe an op between them."""

    def op(name: str, target: str, a: str, b: str) -> str:
        if name == "gelu":
            return f"  {target} = dtensor.gelu {a} : {OPEN}"
        if name == "add":
            return f"  {target} = dtensor.add {a}, {b} : ({OPEN}, {OPEN}) -> {OPEN}"
        return f"  {target} = dtensor.matmul {a}, {b} : ({OPEN}, {OPEN}) -> {OPEN}"

    two = draw(st.booleans())
    args = ["%a", "%b"] if two else ["%a"]
    body, values = [], list(args)
    for i, name in enumerate(draw(st.lists(OPS, min_size=1, max_size=3))):
        picks = draw(st.lists(st.sampled_from(values), min_size=2, max_size=2))
        body.append(op(name, f"%v{i}", *picks))
        values.append(f"%v{i}")
    signature = ", ".join(f"{a}: {OPEN}" for a in args)
    x = FIXED.get(draw(st.sampled_from(["open", "R", "S1"])), OPEN)
    before = draw(st.sampled_from(["add", "matmul"]))
    between = draw(st.one_of(st.none(), OPS))
    operands = lambda v: f"{v}, %w" if two else v  # noqa: E731
    types = f"({OPEN}, {OPEN})" if two else f"({OPEN})"
    step = [
        op(before, "%s", "%x", "%x").replace(f"({OPEN}, {OPEN})", f"({x}, {x})"),
        f"  %h = func.call @layer({operands('%s')}) : {types} -> {OPEN}",
    ]
    last = "%h"
    if between is not None:
        step.append(op(between, "%g", "%h", "%h"))
        last = "%g"
    step += [
        f"  %y = func.call @layer({operands(last)}) : {types} -> {OPEN}",
        f"  func.return %y : {OPEN}",
    ]
    return "\n".join(
        [
            "dtensor.mesh @m [x=2]",
            f"func.func @layer({signature}) -> {OPEN} {{",
            *body,
            f"  func.return {values[-1]} : {OPEN}",
            "}",
            f"func.func @step(%x: {x}, %w: {OPEN}) -> {OPEN} {{",
            *step,
            "}",
        ]
    )


def truth(text: str, memory: float = 0.0) -> float:
    """The optimum over every boundary of the calls: exhaustive over complete tables."""
    with pytest.MonkeyPatch.context() as patch:
        complete_tables(patch)
        module = apply_pipeline(
            load_program(text), f"auto-shard{{strategy=exhaustive memory={memory}}}"
        )
    return total(module, "cost")


@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(programs(), st.sampled_from([0.0, 1.15e-6, 1.1e-6, 1.05e-6]))
def test_bound_is_below_the_optimum_over_every_boundary(text: str, memory: float) -> None:
    """Every strategy's total bound is at most the true optimum, its cost at least it (the
    exact ones: on their tables, which may lack the optimum's boundaries), and its gap is
    the difference - without a memory limit and under limits of 1.05 to 1.15 * 2^30 / 10^6
    bytes (1127 to 1235) per device, which bind on some of these programs and leave others
    no program (a callee's open optimum under the limit bounds it at every boundary)."""
    try:
        best = truth(text, memory)
    except CcoptError:  # a drawn program no placement runs (e.g. a matmul of partials)
        return
    slack = 1e-9 * max(1.0, abs(best))
    for strategy in ("dp", "ilp", "cd", "exhaustive"):
        try:
            module = apply_pipeline(
                load_program(text), f"auto-shard{{strategy={strategy} memory={memory}}}"
            )
        except CcoptError:  # no program of the tables fits: the limit binds (cd: none found)
            if not memory:
                raise
            continue
        bound, cost = total(module, "bound"), total(module, "cost")
        assert bound <= best + slack, (strategy, bound, best)
        assert cost >= best - slack, (strategy, cost, best)
        step = next(
            f for f in module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == "step"
        )
        report = step.attributes["auto_shard"].data
        assert report["gap"].value.data >= -slack


def test_a_cheaper_boundary_outside_the_tables_opens_the_gap() -> None:
    """Without refinement the tables hold the layer's own optimum (S(0)) and R only; the step
    holds its input split by columns, so the best table program converts it, while the
    S(1) boundary no table has converts nothing: the bound (calls free to take any boundary)
    is the true optimum, below the cost, and the gap is reported honestly."""
    text = "\n".join(
        [
            "dtensor.mesh @m [x=2]",
            f"func.func @layer(%a: {OPEN}) -> {OPEN} {{",
            f"  %y = dtensor.gelu %a : {OPEN}",
            f"  func.return %y : {OPEN}",
            "}",
            f"func.func @step(%x: {FIXED['S1']}) -> {OPEN} {{",
            f"  %s = dtensor.add %x, %x : ({FIXED['S1']}, {FIXED['S1']}) -> {OPEN}",
            f"  %h = func.call @layer(%s) : ({OPEN}) -> {OPEN}",
            f"  %y = func.call @layer(%h) : ({OPEN}) -> {OPEN}",
            f"  func.return %y : {OPEN}",
            "}",
        ]
    )
    best = truth(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(auto_shard, "REFINE_ROUNDS", 0)
        patch.setattr(auto_shard, "COMPLETE_TABLE", 0)  # else its 9 boundaries are all entries
        module = apply_pipeline(load_program(text), "auto-shard{strategy=dp}")
    cost, bound = total(module, "cost"), total(module, "bound")
    assert cost > best * (1 + 1e-6)
    assert bound == pytest.approx(best, rel=1e-9)
    step = next(
        f for f in module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == "step"
    )
    report = step.attributes["auto_shard"].data
    assert report["gap"].value.data == pytest.approx(cost - bound, rel=1e-9)
    assert "its optimum leaves the tables at" in report["note"].data
    # the issue's ask: dp says what it is exact over (the layer's 3 x 4 boundaries, not all
    # entries here as `COMPLETE_TABLE` is patched to 0)
    assert "dp is exact over the transfer tables only (boundaries per callee: @layer 12;" in (
        report["note"].data
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(auto_shard, "COMPLETE_TABLE", 0)
        refined = apply_pipeline(load_program(text), "auto-shard{strategy=dp}")  # S(1) wished
    assert total(refined, "cost") == pytest.approx(best, rel=1e-9)
    assert "meet it (gap 0: proven optimal)" in next(
        f.attributes["auto_shard"].data["note"].data
        for f in refined.walk()
        if isinstance(f, func.FuncOp) and f.sym_name.data == "step"
    )


def test_dp_and_ilp_agree_on_the_open_gpt_stack_and_bound_each_other() -> None:
    """The tiny GPT step on a dp x tp mesh, objective=time: dp and ilp, both exact over the
    same tables (refinement continues from the latest solution, so it no longer stops where
    one strategy's tie-breaking gained nothing), find programs of one cost; each one's bound
    is at most the other's cost (before, dp reported its table optimum as a bound above a
    program ilp found)."""
    from ccopt.frontend.gpt import Layout, gpt_step

    mesh = {"dp": 2, "tp": 2}
    text = str(gpt_step("tiny", mesh, layers=2, layout=Layout.open(list(mesh))).module)
    got = {
        s: apply_pipeline(load_program(text), f"auto-shard{{strategy={s} objective=time}}")
        for s in ("dp", "ilp")
    }
    costs = {s: total(m, "cost") for s, m in got.items()}
    bounds = {s: total(m, "bound") for s, m in got.items()}
    assert costs["dp"] == pytest.approx(costs["ilp"], rel=1e-9)
    for s in got:
        assert 0 < bounds[s] <= min(costs.values()) * (1 + 1e-9)
