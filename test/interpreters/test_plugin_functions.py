"""Interpreter functions registered by plugins: they run with the reference interpreter, a plugin
loaded again replaces its own, and they cannot silently redefine a built-in op's semantics."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

import ccopt
import ccopt.interpreters
from ccopt.diagnostics import CcoptError
from ccopt.dialects import dtensor as dt
from ccopt.interpreters import register_interpreter_functions

NEG = """\
!t = !dtensor.tensor<4xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=2]
func.func @f(%x: !t) -> !t {
  %y = dtensor.neg %x : !t
  func.return %y : !t
}
"""


def identity_functions() -> type[InterpreterFunctions]:
    """A new class object each call, with the same qualified name (as when a plugin file is
    imported again)."""

    @register_impls
    class PluginNeg(InterpreterFunctions):
        @impl(dt.NegOp)
        def run_neg(
            self, interpreter: Interpreter, op: dt.NegOp, args: PythonValues
        ) -> PythonValues:
            return args

    return PluginNeg


def test_registering_again_replaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ccopt.interpreters, "PLUGIN_FUNCTIONS", {})
    first, second = identity_functions(), identity_functions()
    assert register_interpreter_functions(first) is first
    register_interpreter_functions(second)
    assert list(ccopt.interpreters.PLUGIN_FUNCTIONS.values()) == [second]


def test_a_plugin_cannot_redefine_a_built_in_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """`dtensor.neg` already has reference semantics: a plugin's other ones are refused."""
    monkeypatch.setattr(ccopt.interpreters, "PLUGIN_FUNCTIONS", {})
    register_interpreter_functions(identity_functions())
    with pytest.raises(CcoptError, match="^interpreter functions PluginNeg: .*already registered"):
        ccopt.run(NEG)
    monkeypatch.setattr(ccopt.interpreters, "PLUGIN_FUNCTIONS", {})
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(ccopt.run(NEG, {"x": x}).outputs["result0"], -x)


def test_an_interpreter_defect_names_the_op_it_was_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in ccopt's own semantics is not the user's error: its traceback stays whole (a
    defect to see), with a note saying which op of the program was being interpreted."""
    import ccopt.interpreters.dtensor as semantics

    def broken(x: np.ndarray) -> np.ndarray:
        raise IndexError("index 3 is out of bounds")

    monkeypatch.setitem(semantics.UNARY, dt.NegOp, broken)
    with pytest.raises(IndexError, match="index 3") as raised:
        ccopt.run(NEG, {"x": np.arange(4, dtype=np.float32)})
    assert raised.value.__notes__ == ["<string>:4:3: note: 'dtensor.neg' op was being interpreted"]
