"""auto-shard's transfer tables: a called function is solved per boundary entry, and its calls
choose their entries together with the caller's own placements. The optimum here is derived
by hand; the chosen program is proven equal to the open one on simulated ranks."""

from __future__ import annotations

import pytest
from xdsl.dialects import func

import ccopt
from ccopt.passes import auto_shard
from ccopt.passes.auto_shard import TIE_BREAK, AutoShard, Memo
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program

OPEN = "!dtensor.tensor<16x8xf32, @m[?]>"
COLS = "!dtensor.tensor<16x8xf32, @m[S(1)]>"

# A layer `gelu` with an open boundary, called twice in a chain from a step whose input is
# split by columns (and doubled, into an open value the calls take).
CHAIN = f"""
dtensor.mesh @m [x=2]
func.func @layer(%a: {OPEN}) -> {OPEN} {{
  %y = dtensor.gelu %a : {OPEN}
  func.return %y : {OPEN}
}}
func.func @step(%x: {COLS}) -> {OPEN} {{
  %s = dtensor.add %x, %x : ({COLS}, {COLS}) -> {OPEN}
  %h = func.call @layer(%s) : ({OPEN}) -> {OPEN}
  %y = func.call @layer(%h) : ({OPEN}) -> {OPEN}
  func.return %y : {OPEN}
}}
"""

LOCAL = 16 * 8 * 4 / 2
"""Bytes of a 16x8 f32 tensor split in two: what the tie-break charges a split argument."""


def reports(module) -> dict[str, dict]:  # noqa: ANN001 - a ModuleOp
    return {
        f.sym_name.data: {
            k: getattr(v, "value", v).data for k, v in f.attributes["auto_shard"].data.items()
        }
        for f in module.walk()
        if isinstance(f, func.FuncOp) and "auto_shard" in f.attributes
    }


def test_first_entries_are_the_callees_own_optimum_and_replicated(monkeypatch):
    """Alone, the layer's argument is best split (the tie-break prefers fewer bytes held; S(0)
    and S(1) hold as many, and S(0) comes first): its own entry is S(0) -> S(0), and the
    replicated entry R -> R. Neither fits the step, which holds S(1). (The layer's 3 x 4
    boundaries would otherwise all be entries: `COMPLETE_TABLE`, tested in
    test_auto_shard_repetition_bound.py.)"""
    monkeypatch.setattr(auto_shard, "COMPLETE_TABLE", 0)
    module = load_program(CHAIN)
    layer = next(f for f in module.walk() if isinstance(f, func.FuncOp))
    entries = AutoShard(strategy="dp").transfer_table(layer, Memo(), {})
    boundaries = [
        [
            str(t.placement_list[0].short)
            for t in (*v.function_type.inputs, *v.function_type.outputs)
        ]
        for v in entries
    ]
    assert boundaries == [["S(0)", "S(0)"], ["R", "R"]]
    assert entries[0].cost == pytest.approx(TIE_BREAK * LOCAL)
    assert entries[1].cost == pytest.approx(TIE_BREAK * 2 * LOCAL)


@pytest.mark.parametrize("strategy", ["dp", "ilp", "exhaustive"])
def test_calls_and_callee_boundaries_are_co_optimized(strategy):
    """By hand: with the layer's boundary at S(1) nothing is converted anywhere - the step
    doubles its S(1) input in place and passes it through both calls - so the whole program costs
    only the tie-break of the split arguments it holds: the step's x and the layer's a, each
    LOCAL bytes, the layer once per call. Any other boundary converts the chain at least
    at least once (into the first call), at least a byte and a launch. The tables start
    with S(0) and R only (above); the S(1) entry is the one the step's calls wish for."""
    module = apply_pipeline(load_program(CHAIN), f"auto-shard{{strategy={strategy}}}")
    assert not [op for op in module.walk() if op.name.startswith("coll.")]
    names = sorted(f.sym_name.data for f in module.walk() if isinstance(f, func.FuncOp))
    assert names == ["layer", "step"]  # one entry used: it keeps the function's name
    got = reports(module)
    assert got["layer"]["cost"] == pytest.approx(TIE_BREAK * LOCAL)
    assert got["step"]["cost"] == pytest.approx(TIE_BREAK * LOCAL)
    for r in got.values():
        assert r["gap"] == pytest.approx(0, abs=1e-12)
    layer = next(
        f for f in module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == "layer"
    )
    assert str(layer.function_type) == f"({COLS}) -> {COLS}"


def test_the_co_optimized_chain_is_proven_equal():
    report = ccopt.check_pipeline(CHAIN, "auto-shard{strategy=dp}", entry="step", seed=2)
    assert report.comparisons and all(c.ok for c in report.comparisons)


def test_calls_wishing_different_boundaries_get_their_own_entries():
    """Two calls of the layer, one fed S(1), the other R (each doubled first): by hand the optimum converts nothing, so the calls run different entries - two copies
    of the layer, `layer` and `layer_1` - each at its own tie-break."""
    rows = "!dtensor.tensor<16x8xf32, @m[R]>"
    text = f"""
dtensor.mesh @m [x=2]
func.func @layer(%a: {OPEN}) -> {OPEN} {{
  %y = dtensor.gelu %a : {OPEN}
  func.return %y : {OPEN}
}}
func.func @step(%x: {COLS}, %r: {rows}) -> ({OPEN}, {OPEN}) {{
  %s = dtensor.add %x, %x : ({COLS}, {COLS}) -> {OPEN}
  %t = dtensor.add %r, %r : ({rows}, {rows}) -> {OPEN}
  %h = func.call @layer(%s) : ({OPEN}) -> {OPEN}
  %g = func.call @layer(%t) : ({OPEN}) -> {OPEN}
  func.return %h, %g : {OPEN}, {OPEN}
}}
"""
    module = apply_pipeline(load_program(text), "auto-shard{strategy=dp}")
    assert not [op for op in module.walk() if op.name.startswith("coll.")]
    names = sorted(f.sym_name.data for f in module.walk() if isinstance(f, func.FuncOp))
    assert names == ["layer", "layer_1", "step"]
    got = reports(module)
    assert sorted(round(got[n]["cost"] / TIE_BREAK) for n in ("layer", "layer_1")) == [
        LOCAL,
        2 * LOCAL,
    ]
    report = ccopt.check_pipeline(text, "auto-shard{strategy=dp}", entry="step", seed=2)
    assert report.comparisons and all(c.ok for c in report.comparisons)
