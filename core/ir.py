"""Reading and checking ccopt IR: the context, a parser that records op locations, a verifier
that reports the failing op.

xDSL's parser leaves ops without locations and its verifier raises with the whole module attached;
ccopt users need `file:line:col` of the op at fault, so both are wrapped here.
"""

from __future__ import annotations

import re
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    LocationAttr,
    ModuleOp,
    RankedStructure,
    StringAttr,
    UnknownLoc,
    UnregisteredAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position, Span, Token
from xdsl.utils.mlir_lexer import (
    KIND_BY_PUNCTUATION_SPELLING,
    MLIRLexer,
    MLIRTokenKind,
    PunctuationSpelling,
)

from ccopt.diagnostics import LocatedError, SourceText, first_line
from ccopt.verifier import verify_module

__all__ = ["clone", "make_context", "parse_module", "verify_module", "inherit_locations"]


def make_context(allow_unregistered: bool = False) -> Context:
    """A context that knows xDSL's dialects and ccopt's, all loaded on first use."""
    from xdsl.universe import Universe

    from ccopt.dialects import DIALECTS

    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in Universe.get_multiverse().all_dialects.items():
        if name not in DIALECTS:
            ctx.register_dialect(name, factory)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


_SUFFIX_ID = r"(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)"
_COMMON_TOKEN = re.compile(
    r"(?:(?://[^\n]*\n?)|\s+)*+"  # whitespace and comments, as MLIRLexer skips them (no backtracking)
    r"(?:([a-zA-Z_][a-zA-Z0-9_$.]*)"  # 1: bare identifier
    rf"|(%{_SUFFIX_ID})|(!{_SUFFIX_ID})|(\^{_SUFFIX_ID})|(#(?!-\}})" + _SUFFIX_ID + ")"
    r"|(@[a-zA-Z_][a-zA-Z0-9_$.]*)"  # 6: at-identifier
    r"|(->)"  # 7
    r"|([:,()}\[\]<>=+/*?|]|\{(?!-#)))",  # 8: one-character punctuation
    re.ASCII,
)
_GROUP_KINDS: tuple[MLIRTokenKind | None, ...] = (
    None,
    MLIRTokenKind.BARE_IDENT,
    MLIRTokenKind.PERCENT_IDENT,
    MLIRTokenKind.EXCLAMATION_IDENT,
    MLIRTokenKind.CARET_IDENT,
    MLIRTokenKind.HASH_IDENT,
    MLIRTokenKind.AT_IDENT,
    MLIRTokenKind.ARROW,
)
_PUNCTUATION = {
    **{c: KIND_BY_PUNCTUATION_SPELLING[c] for c in ":,()}[]<>=+/*?|"},
    "{": MLIRTokenKind.L_BRACE,
}


_CACHED_TYPES = frozenset({"!dtensor.tensor", "!kernel.buffer"})
"""Types whose spelling has no nested `<`: `LocatingParser` parses each distinct one once."""


class TextToken(Token[MLIRTokenKind, str]):
    """A token that keeps its text (`text`, set by `LinearTimeLexer`): xDSL's `Token.text` slices
    the input through three properties on every read, and the parser reads a token's text
    several times (each keyword or punctuation it tries) - a tenth of parsing a lowered
    module."""

    text: str = ""  # (a plain class attribute: the instance's own value shadows it)


class LinearTimeLexer(MLIRLexer):
    """xDSL 0.74's string-literal pattern (`"(?:[^"...]+|escape)*"`) backtracks exponentially on
    an unterminated string followed by a long line; this one consumes each character once.

    Lexing was 40% of parsing ccopt IR (xDSL's lexer calls half a dozen methods per token):
    identifiers and punctuation - nearly every token - are matched here by one regular
    expression, with the same spans and kinds; anything else (numbers, strings, `...`, `-`,
    file metadata, errors) goes to MLIRLexer."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

    def lex(self) -> Token[MLIRTokenKind, str]:
        m = _COMMON_TOKEN.match(self.input.content, self.pos)
        if m is None:
            return super().lex()
        group = m.lastindex
        if group is None:
            return super().lex()
        start, self.pos = m.span(group)
        text = m.group(group)
        token = TextToken(
            _GROUP_KINDS[group] if group < 8 else _PUNCTUATION[text],
            Span(start, self.pos, self.input),
        )
        token.text = text
        return token


class LocatingParser(Parser):
    """A parser that stamps every op it reads with its `file:line:col` (MLIR does the same)."""

    def __init__(self, ctx: Context, source: SourceText):
        super().__init__(ctx, "", source.name)
        self._parser_state = ParserState(LinearTimeLexer(Input(source.text, source.name)))
        self.source = source
        self._filename = StringAttr(source.name)
        self._types: dict[str, TypeAttribute] = {}
        self._columns: dict[int, IntAttr] = {}

    # Token-level steps without xDSL's property lookups and spelling checks: the parser
    # consumes, tries and compares tokens a dozen times per op (a fifth of parsing).
    def _consume_token(self, expected_kind: MLIRTokenKind | None = None) -> Token:
        state = self._parser_state
        token = state.current_token
        assert expected_kind is None or token.kind == expected_kind, (
            f"Unexpected token {token}, expected {expected_kind}"
        )
        state.current_token = state.lexer.lex()
        return token

    def _parse_optional_token(self, expected_kind: MLIRTokenKind) -> Token | None:
        state = self._parser_state
        token = state.current_token
        if token.kind != expected_kind:
            return None
        state.current_token = state.lexer.lex()
        return token

    def parse_optional_punctuation(
        self, punctuation: PunctuationSpelling
    ) -> PunctuationSpelling | None:
        kind = KIND_BY_PUNCTUATION_SPELLING.get(punctuation)
        if kind is None:  # (xDSL's assertion)
            return super().parse_optional_punctuation(punctuation)
        state = self._parser_state
        if state.current_token.kind != kind:
            return None
        state.current_token = state.lexer.lex()
        return punctuation

    def parse_punctuation(
        self, punctuation: PunctuationSpelling, context_msg: str = ""
    ) -> PunctuationSpelling:
        kind = KIND_BY_PUNCTUATION_SPELLING.get(punctuation)
        state = self._parser_state
        if kind is None or state.current_token.kind != kind:  # (xDSL's error)
            return super().parse_punctuation(punctuation, context_msg)
        state.current_token = state.lexer.lex()
        return punctuation

    def parse_optional_keyword(self, keyword: str) -> str | None:
        state = self._parser_state
        token = state.current_token
        if token.kind != MLIRTokenKind.BARE_IDENT or token.text != keyword:
            return None
        state.current_token = state.lexer.lex()
        return keyword

    def parse_optional_type(self) -> TypeAttribute | None:
        """Distributed tensor and buffer types repeat on almost every line: parse each spelling
        once (a lowered module spells a few dozen buffer types on thousands of lines)."""
        token = self._current_token
        if token.kind is not MLIRTokenKind.EXCLAMATION_IDENT or token.text not in _CACHED_TYPES:
            return super().parse_optional_type()
        text = self.source.text
        end = text.find(">", token.span.end)
        spelling = text[token.span.start : end + 1]
        cached = self._types.get(spelling)
        if cached is not None:
            self._resume_from(end + 1)
            return cached
        parsed = super().parse_optional_type()
        if parsed is not None and spelling.count("<") == 1 and self.pos > end:
            self._types[spelling] = parsed
        return parsed

    def _parse_dialect_type_or_attribute_body(
        self,
        attr_name: str,
        is_type: bool,
        is_opaque: bool,
        starting_opaque_pos: Position | None,
    ) -> Attribute:
        """Check the parameter count of a parametrized attribute or type: xDSL 0.74 builds it
        with `zip(..., strict=True)` and crashes with a ValueError (`!sched.future<>`)."""
        lookup = self.ctx.get_optional_type if is_type else self.ctx.get_optional_attr
        definition = lookup(attr_name) if "." in attr_name else None
        if (
            definition is None
            or not issubclass(definition, ParametrizedAttribute)
            or issubclass(definition, UnregisteredAttr)
        ):
            return super()._parse_dialect_type_or_attribute_body(
                attr_name, is_type, is_opaque, starting_opaque_pos
            )
        sigil = "!" if is_type else "#"
        start = self.source.text.rfind(sigil + attr_name, 0, self._current_token.span.start + 1)
        parameters = definition.parse_parameters(self)
        expected = [name for name, _ in definition.get_irdl_definition().parameters]
        if len(parameters) != len(expected):
            takes = (
                f"takes {len(expected)} parameter{'s' if len(expected) > 1 else ''} "
                f"<{', '.join(expected)}>"
                if expected
                else "takes no parameters"
            )
            self.raise_error(f"{sigil}{attr_name} {takes}, got {len(parameters)}", start, self.pos)
        return definition.new(parameters)

    def parse_dense_int_or_fp_elements_attr(
        self, type: RankedStructure[AnyDenseElement] | None
    ) -> DenseIntOrFPElementsAttr:
        """A literal too large for the element type is an error at the literal: xDSL 0.74 lets
        `struct.pack` raise OverflowError (`dense<1.0e64> : tensor<4xf32>`)."""
        start = self._current_token.span.start
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except OverflowError as e:
            self.raise_error(f"a value of this dense literal does not fit its type ({e})", start)

    def _parse_block(self) -> Block:
        """Remember where a block was defined: xDSL 0.74 forgets it for a block that was
        referenced before its label, and then crashes (KeyError) on a second `^bb1:`."""
        label = self._current_token.span
        name = label.text[1:]
        if label.text.startswith("^") and not (
            Block.is_valid_name(name) or Block.is_default_block_name(name)
        ):  # xDSL 0.74 raises a ValueError on such names (MLIR accepts `^0`)
            self.raise_error(
                f"block label '{label.text}' is not supported: use letters, digits, and "
                "[$._-], not starting with a digit",
                label.start,
                label.end,
            )
        block = super()._parse_block()
        self.blocks[label.text[1:]] = (block, label)
        return block

    def _get_op_by_name(self, name: str) -> type[Operation]:
        """Report an unknown op at its name, not at the token after it."""
        op_type = self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)
        if op_type is None:
            at = self.source.text.rfind(name, 0, self.pos)
            dialect = name.split(".", 1)[0]
            hint = (
                f" (no dialect '{dialect}' is known: a plugin's dialect needs --load-plugin)"
                if "." in name and dialect not in self.ctx.registered_dialect_names
                else ""
            )
            self.raise_error(f"unknown operation '{name}'{hint}", at, at + len(name))
        return op_type

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """An input without operations (empty, or only comments) is an empty module, as in MLIR
        (xDSL calls it an error)."""
        if self._current_token.kind is MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            op.location = self._location(*self.source.line_col(start))
        return op

    def _location(self, line: int, col: int) -> FileLineColLoc:
        """`FileLineColLoc(file, line, col)` without xDSL's check of its parameters (a string
        and two integers by construction): building and verifying one cost as much as lexing
        an op. Columns repeat (indentation): each is built once."""
        column = self._columns.get(col)
        if column is None:
            column = self._columns[col] = IntAttr(col)
        loc = FileLineColLoc.__new__(FileLineColLoc)
        object.__setattr__(loc, "filename", self._filename)
        object.__setattr__(loc, "line", IntAttr(line))
        object.__setattr__(loc, "column", column)
        return loc


def parse_module(ctx: Context, source: SourceText, implicit_module: bool = True) -> ModuleOp:
    """Parse a module; a syntax error becomes a LocatedError. Without `implicit_module`
    (`--no-implicit-module`) the input must be one builtin.module, as xdsl-opt requires."""
    parser: LocatingParser | None = None
    try:
        parser = LocatingParser(ctx, source)  # lexes the first token: may already fail
        module = parser.parse_module()
    except ParseError as e:
        line, col = source.line_col(e.span.start)
        raise LocatedError(lexer_message(e, source.text), source.name, line, col) from None
    except VerifyException as e:  # an attribute rejected its parameters while being parsed
        line, col = source.line_col(parser.pos if parser is not None else 0)
        raise LocatedError(first_line(e), source.name, line, col) from None
    if not implicit_module and isinstance(module.location, UnknownLoc):  # (xDSL wrapped it)
        first = next(iter(module.ops), module)
        at = first.location
        line, col = (at.line.data, at.column.data) if isinstance(at, FileLineColLoc) else (1, 1)
        raise LocatedError(
            "expected one builtin.module operation (--no-implicit-module)", source.name, line, col
        )
    return module


def lexer_message(error: ParseError, text: str) -> str:
    """xDSL 0.74's lexer forgets to format one of its messages (`after {first_char}`), calls a
    string that ends with its line one that reaches the end of the file, and says only
    " in block definition" where a region holds neither an op nor a block label."""
    if "{first_char}" in error.msg:
        sigil = text[error.span.start : error.span.start + 1]
        return f"expected an identifier after '{sigil}'"
    if error.msg == "End of file reached before closing string literal.":
        return "unterminated string literal (a string ends on the line it starts on)"
    if error.msg == " in block definition":  # (xDSL names the context, not what it expected)
        found = text[error.span.start : error.span.end]
        return (
            f"expected an operation or a block label, got '{found}' (the operation before it "
            "ends there: is its syntax right?)"
        )
    return error.msg


def inherit_locations(module: Operation) -> None:
    """Give every op a pass created without a location (UnknownLoc) the location of the located
    op before it in its block, else of its parent: diagnostics about it then point at the source
    line it came from. Passes pass on the location of the op they rewrite where they know it
    (`ccopt.passes.common.derive`); this covers the rest in one linear walk."""

    def visit(op: Operation, enclosing: LocationAttr) -> None:
        for region in op.regions:
            for block in region.blocks:
                previous = enclosing
                inner = block.first_op
                while inner is not None:  # (runs after every pass: no generator per block)
                    if type(inner.location) is UnknownLoc:
                        inner.location = previous
                    previous = inner.location
                    if inner.regions:
                        visit(inner, previous)
                    inner = inner._next_op  # pyright: ignore[reportPrivateUsage]

    visit(module, module.location)


_Op = TypeVar("_Op", bound=Operation)


def clone(op: _Op) -> _Op:
    """`op.clone()`, in time linear in the arguments of its blocks. xDSL 0.74's
    `Region.clone_into` adds a cloned block's arguments one at a time, each copying the tuple of
    those before it: a 1,000-layer GPT step (36,000 arguments) took 8.4 s to clone against 3.4 s
    to parse. Names, locations, attributes and properties are copied as xDSL copies them, and
    blocks keep their names (`^head`), which xDSL's clone renumbers."""
    values: dict[SSAValue, SSAValue] = {}
    blocks: dict[Block, Block] = {}
    copy = _clone_shell(op, values, blocks)
    # operands last: a graph region, or a successor's block, may use a value before it is made
    for old, new in zip(op.walk(), copy.walk(), strict=True):
        if old.operands:
            new.operands = tuple(values.get(v, v) for v in old.operands)
    return copy


def _clone_shell(op: _Op, values: dict[SSAValue, SSAValue], blocks: dict[Block, Block]) -> _Op:
    """`op` with its regions' blocks and ops cloned, without operands (`clone` sets them)."""
    copy = op.clone_without_regions(values, blocks, clone_operands=False)
    for region, into in zip(op.regions, copy.regions, strict=True):
        _clone_region(region, into, values, blocks)
    return copy


def _clone_region(
    region: Region, into: Region, values: dict[SSAValue, SSAValue], blocks: dict[Block, Block]
) -> None:
    """The blocks of `region` added to the empty `into`: every block first (a branch may name a
    later block), then each one's arguments in one tuple and its ops."""
    pairs = [(block, Block()) for block in region.blocks]
    for block, new in pairs:
        blocks[block] = new
        new.name_hint = block.name_hint  # (xDSL's clone drops it: `^head` printed as `^bb1`)
    into.add_block([new for _, new in pairs])
    for block, new in pairs:
        args = tuple(
            BlockArgument(arg.type, new, i, arg.location) for i, arg in enumerate(block.args)
        )
        new._args = args  # pyright: ignore[reportPrivateUsage]
        for arg, copied in zip(block.args, args, strict=True):
            copied.name_hint = arg.name_hint
            values[arg] = copied
        new.add_ops([_clone_shell(inner, values, blocks) for inner in block.ops])
