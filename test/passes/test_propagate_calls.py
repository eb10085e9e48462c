"""propagate-placements across calls: callees are placed first and every call reads and gives
what its callee's signature then says, so a GPT step with every placement open is completed
(it stopped at the first call result, "still open") and stays equal to the open program."""

from __future__ import annotations

import pytest

import ccopt
from ccopt.frontend.gpt import Layout, gpt_step
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program


@pytest.mark.parametrize("mesh", [{"dp": 2}, {"dp": 2, "tp": 2}])
def test_open_gpt_step_is_completed_through_its_calls(mesh: dict[str, int]) -> None:
    text = str(gpt_step("tiny", mesh, layers=2, layout=Layout.open(list(mesh))).module)
    placed = str(apply_pipeline(load_program(text), "propagate-placements"))
    assert "?" not in placed
    assert placed.count("func.call @layer_forward") == 2  # (the calls stay calls)
    report = ccopt.check_pipeline(text, "propagate-placements")
    assert report.ok, [c for c in report.comparisons if not c.ok]


def test_a_callee_after_its_caller_is_placed_first() -> None:
    """Module order puts the caller first; the callee's choice must reach the call anyway."""
    text = """
dtensor.mesh @m [tp=2]
func.func @caller(%x: !dtensor.tensor<4x6xf32, @m[?]>, %w: !dtensor.tensor<6x8xf32, @m[?]>) -> !dtensor.tensor<4x8xf32, @m[R]> {
  %y = func.call @row(%x, %w) : (!dtensor.tensor<4x6xf32, @m[?]>, !dtensor.tensor<6x8xf32, @m[?]>) -> !dtensor.tensor<4x8xf32, @m[R]>
  func.return %y : !dtensor.tensor<4x8xf32, @m[R]>
}
func.func private @row(%x: !dtensor.tensor<4x6xf32, @m[?]>, %w: !dtensor.tensor<6x8xf32, @m[?]>) -> !dtensor.tensor<4x8xf32, @m[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x6xf32, @m[?]>, !dtensor.tensor<6x8xf32, @m[?]>) -> !dtensor.tensor<4x8xf32, @m[?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x8xf32, @m[?]> -> !dtensor.tensor<4x8xf32, @m[R]>
  func.return %r : !dtensor.tensor<4x8xf32, @m[R]>
}
"""
    placed = str(apply_pipeline(load_program(text), "propagate-placements"))
    assert (
        "func.func @caller(%x: !dtensor.tensor<4x6xf32, @m[S(1)]>, "
        "%w: !dtensor.tensor<6x8xf32, @m[S(0)]>)" in placed
    )
    assert "coll." not in placed.split("func.func private @row")[0]  # (no conversion needed)
    assert ccopt.check_pipeline(text, "propagate-placements").ok
