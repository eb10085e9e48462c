"""Helpers of the verifier tests: the expected diagnostic, and an edit a memo must notice."""

from __future__ import annotations

import pytest
from xdsl.ir import Operation

from ccopt.diagnostics import OpError
from ccopt.ir import verify_module


def expect_error(module: Operation, message: str) -> None:
    with pytest.raises(OpError, match=message):
        verify_module(module)


def negf_becomes_exp(negf: Operation) -> None:
    """Replace `negf` in place by `math.exp` of its operand: a body edit that keeps every type
    but makes the body non-linear (a partial sum may not meet it)."""
    from xdsl.dialects import math

    exp = math.ExpOp(negf.operands[0])
    negf.parent.insert_op_before(exp, negf)  # type: ignore[union-attr]
    negf.results[0].replace_all_uses_with(exp.results[0])
    negf.detach()
    negf.erase()
