"""ccopt's lexer (`ccopt.ir.LinearTimeLexer`) matches common tokens with one regular expression:
it must cut every input into the same tokens as xDSL's MLIRLexer, including after comments and
at the points where it hands over to xDSL's (numbers, strings, `-`, `...`, errors)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from ccopt.ir import LinearTimeLexer

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [
    "%x = dtensor.add %a, %b : (!x, !x) -> !x // a comment -> x1\n  0: 1.5e3 -7 ...",
    '^bb0(%a#1: !t) "op"() {a = #dtensor<r>, b = @f, c = @"q"} {-# x #-} [<>] ? | * / + =',
    "%0abc !_ #-} ^1 @_x.y$z // last line without newline",
    "func.func @f() {\n  %é = x\n}",
    "// only a comment\n",
    "",
]


def tokens(lexer: MLIRLexer) -> list[tuple[object, int, int] | str]:
    """Every token as (kind, start, end), and the error message that ends the input if any."""
    out: list[tuple[object, int, int] | str] = []
    while True:
        try:
            token = lexer.lex()
        except ParseError as e:
            return [*out, e.msg]
        out.append((token.kind, token.span.start, token.span.end))
        if token.kind is MLIRTokenKind.EOF:
            return out


@pytest.mark.parametrize("text", SAMPLES)
def test_same_tokens_as_xdsl(text: str):
    assert tokens(LinearTimeLexer(Input(text, "t"))) == tokens(MLIRLexer(Input(text, "t")))


@pytest.mark.parametrize("name", ["megatron_mlp.mlir", "adam.mlir", "gpt_stack.mlir"])
def test_same_tokens_on_examples(name: str):
    text = (ROOT / "examples" / name).read_text()
    found = tokens(LinearTimeLexer(Input(text, name)))
    assert len(found) > 100
    assert found == tokens(MLIRLexer(Input(text, name)))
