"""Open placements (`?`): the interpreter runs a program with them as its all-R twin, which has
the same global meaning as any concrete choice."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type

import ccopt
from ccopt.dialects.dtensor_type import OPEN, DTensorType, SplitAttr
from ccopt.program import load_program
from ccopt.runner import compare_modules

OPEN_PROGRAM = """
dtensor.mesh @m [dp=2, tp=2]
func.func @f(%x: !dtensor.tensor<4x8xf32, @m[S(0), ?]>, %w: !dtensor.tensor<8x6xf32, @m[?, ?]>)
    -> !dtensor.tensor<4x6xf32, @m[S(0), R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @m[S(0), ?]>, !dtensor.tensor<8x6xf32, @m[?, ?]>) -> !dtensor.tensor<4x6xf32, @m[S(0), ?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x6xf32, @m[S(0), ?]> -> !dtensor.tensor<4x6xf32, @m[S(0), R]>
  %g = dtensor.gelu %r : !dtensor.tensor<4x6xf32, @m[S(0), R]>
  func.return %g : !dtensor.tensor<4x6xf32, @m[S(0), R]>
}
"""

# the same program with the open placements chosen: x split by k on tp, w by k on tp
CHOSEN = (
    OPEN_PROGRAM.replace("4x8xf32, @m[S(0), ?]", "4x8xf32, @m[S(0), S(1)]")
    .replace("8x6xf32, @m[?, ?]", "8x6xf32, @m[R, S(0)]")
    .replace("4x6xf32, @m[S(0), ?]", "4x6xf32, @m[S(0), P(sum)]")
)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def test_open_placement_type_round_trips():
    module = load_program(OPEN_PROGRAM)
    assert "@m[?, ?]" in str(module)
    assert load_program(str(module)).is_structurally_equivalent(module)
    t = DTensorType((4, 6), Float32Type(), "m", [SplitAttr(0), OPEN])
    assert t.is_open and t.summary() == "4x6xf32 [S(0), ?]"


def test_open_program_runs_as_all_replicated():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8)), rng.standard_normal((8, 6))
    result = ccopt.run(OPEN_PROGRAM, {"x": x.astype(np.float32), "w": w.astype(np.float32)})
    np.testing.assert_allclose(result.outputs["result0"], gelu(x @ w), rtol=1e-4, atol=1e-5)


def test_open_program_equals_a_concrete_choice():
    report = compare_modules(load_program(OPEN_PROGRAM), load_program(CHOSEN), seed=3)
    assert all(c.ok for c in report.comparisons) and report.comparisons


@pytest.mark.parametrize("placement", ["R", "S(0)", "S(1)"])
def test_open_argument_accepts_any_legal_choice(placement):
    """An elementwise op on open operands verifies whatever concrete result placement is
    declared, since the operands could have it; it runs as the all-R program."""
    text = f"""
    dtensor.mesh @m [tp=2]
    func.func @f(%x: !dtensor.tensor<4x6xf32, @m[?]>) -> !dtensor.tensor<4x6xf32, @m[{placement}]> {{
      %y = dtensor.add %x, %x : (!dtensor.tensor<4x6xf32, @m[?]>, !dtensor.tensor<4x6xf32, @m[?]>) -> !dtensor.tensor<4x6xf32, @m[{placement}]>
      func.return %y : !dtensor.tensor<4x6xf32, @m[{placement}]>
    }}
    """
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 24
    out = ccopt.run(text, {"x": x}).outputs["result0"]
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)


def test_an_argument_split_on_every_axis_gathers_one_axis_at_a_time():
    """Fuzzer finding: a given argument split on both axes is replicated on entry by one
    all-gather per axis, the first one's result still split on the other axis (it was typed
    all-R, and the interpreter's gather found its output block uncovered)."""
    program = OPEN_PROGRAM.replace("4x8xf32, @m[S(0), ?]", "4x8xf32, @m[S(0), S(1)]")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 8)), rng.standard_normal((8, 6))
    result = ccopt.run(program, {"x": x.astype(np.float32), "w": w.astype(np.float32)})
    np.testing.assert_allclose(result.outputs["result0"], gelu(x @ w), rtol=1e-4, atol=1e-5)
