"""Reading and checking ccopt IR: the context, a parser that records op locations, a verifier
that reports the failing op.

xDSL's parser leaves ops without locations and its verifier raises with the whole module attached;
ccopt users need `file:line:col` of the op at fault, so both are wrapped here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyDenseElement,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    LocationAttr,
    RankedStructure,
    ModuleOp,
    StringAttr,
    UnknownLoc,
    UnregisteredAttr,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Position
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from ccopt.diagnostics import LocatedError, OpError, SourceText, first_line
from ccopt.mesh import Mesh


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


class LinearTimeLexer(MLIRLexer):
    """xDSL 0.74's string-literal pattern (`"(?:[^"...]+|escape)*"`) backtracks exponentially on
    an unterminated string followed by a long line; this one consumes each character once."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class LocatingParser(Parser):
    """A parser that stamps every op it reads with its `file:line:col` (MLIR does the same)."""

    def __init__(self, ctx: Context, source: SourceText):
        super().__init__(ctx, "", source.name)
        self._parser_state = ParserState(LinearTimeLexer(Input(source.text, source.name)))
        self.source = source
        self._filename = StringAttr(source.name)
        self._types: dict[str, TypeAttribute] = {}

    def parse_optional_type(self) -> TypeAttribute | None:
        """Distributed tensor types repeat on almost every line: parse each spelling once."""
        token = self._current_token
        if token.kind is not MLIRTokenKind.EXCLAMATION_IDENT or token.text != "!dtensor.tensor":
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
            self.raise_error(f"unknown operation '{name}'", at, at + len(name))
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
            line, col = self.source.line_col(start)
            op.location = FileLineColLoc(self._filename, IntAttr(line), IntAttr(col))
        return op


def parse_module(ctx: Context, source: SourceText) -> ModuleOp:
    """Parse a module; a syntax error becomes a LocatedError."""
    parser: LocatingParser | None = None
    try:
        parser = LocatingParser(ctx, source)  # lexes the first token: may already fail
        return parser.parse_module()
    except ParseError as e:
        line, col = source.line_col(e.span.start)
        raise LocatedError(lexer_message(e, source.text), source.name, line, col) from None
    except VerifyException as e:  # an attribute rejected its parameters while being parsed
        line, col = source.line_col(parser.pos if parser is not None else 0)
        raise LocatedError(first_line(e), source.name, line, col) from None


def lexer_message(error: ParseError, text: str) -> str:
    """xDSL 0.74's lexer forgets to format one of its messages (`after {first_char}`) and
    calls a string that ends with its line one that reaches the end of the file."""
    if "{first_char}" in error.msg:
        sigil = text[error.span.start : error.span.start + 1]
        return f"expected an identifier after '{sigil}'"
    if error.msg == "End of file reached before closing string literal.":
        return "unterminated string literal (a string ends on the line it starts on)"
    return error.msg


def verify_module(module: Operation) -> None:
    """Verify every op, then SSA dominance; the first failure becomes an OpError."""
    for op in module.walk(reverse=False):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise OpError(op, first_line(e).removeprefix("Operation does not verify: ")) from None
    check_tensor_types(module)
    check_dominance(module)
    check_call_updates(module)
    check_memory_plans(module)


def check_tensor_types(module: Operation) -> None:
    """Every distributed tensor type - of a result, a block argument or a function signature,
    also inside futures and buffers - names a declared mesh and has one placement per mesh axis.
    Op verifiers check the values they touch; this catches the rest (an argument nobody reads, a
    declaration). Each distinct type is checked once."""
    meshes = {op.sym_name.data: op.mesh for op in module.walk() if op.name == "dtensor.mesh"}  # type: ignore[attr-defined]
    verdicts: dict[Attribute, str | None] = {}

    def check(op: Operation, labelled: Iterable[tuple[str, Attribute]]) -> None:
        for label, t in labelled:
            if t not in verdicts:
                verdicts[t] = tensor_type_problem(t, meshes)
            if verdicts[t] is not None:
                raise OpError(op, f"{label}: {verdicts[t]}")

    for op in module.walk():
        check(op, ((f"result #{r.index}", r.type) for r in op.results))
        for region in op.regions:
            for block in region.blocks:
                check(op, ((f"block argument #{a.index}", a.type) for a in block.args))
        if op.name == "func.func":  # (by name: importing func would slow every start-up)
            check(op, [("signature", op.function_type)])  # type: ignore[attr-defined]


def tensor_type_problem(t: Attribute, meshes: dict[str, Mesh]) -> str | None:
    """What is wrong with the distributed tensor types inside `t`, if anything."""
    from ccopt.dialects.dtensor_type import DTensorType

    if isinstance(t, DTensorType):
        mesh = meshes.get(t.mesh_name)
        if mesh is None:
            return f"{t} names mesh @{t.mesh_name}, which no dtensor.mesh declares"
        if len(t.placement_list) != mesh.ndim:
            return (
                f"{t} has {len(t.placement_list)} placements but mesh {mesh} has {mesh.ndim} "
                f"ax{'is' if mesh.ndim == 1 else 'es'}"
            )
        return None
    nested: Iterable[Attribute] = ()
    if isinstance(t, ParametrizedAttribute):
        nested = t.parameters
    elif isinstance(t, ArrayAttr):
        nested = t.data
    for inner in nested:
        problem = tensor_type_problem(inner, meshes)
        if problem is not None:
            return problem
    return None


def inherit_locations(module: Operation) -> None:
    """Give every op a pass created without a location (UnknownLoc) the location of the located
    op before it in its block, else of its parent: diagnostics about it then point at the source
    line it came from. Passes pass on the location of the op they rewrite where they know it
    (`ccopt.passes.common.derive`); this covers the rest in one linear walk."""

    def visit(op: Operation, enclosing: LocationAttr) -> None:
        for region in op.regions:
            for block in region.blocks:
                previous = enclosing
                for inner in block.ops:
                    if isinstance(inner.location, UnknownLoc):
                        inner.location = previous
                    previous = inner.location
                    visit(inner, inner.location)

    visit(module, module.location)


def check_dominance(op: Operation) -> None:
    """Every operand is defined before its use, in its block or an enclosing one, and every
    block of an op that needs terminators has one, as MLIR's verifier requires (xDSL's checks
    neither: the parser accepts forward references, and `func.func @f(%x: t) {}` makes an empty
    entry block). One walk with a scoped set of visible values: linear in the program size."""
    from xdsl.traits import NoTerminator

    visible: set[SSAValue] = set()

    def visit(op: Operation) -> None:
        for i, v in enumerate(op.operands):
            if v not in visible:
                raise OpError(op, f"operand #{i} does not dominate this use")
        for r, region in enumerate(op.regions):
            blocks = list(region.blocks)
            if any(b.first_op is None for b in blocks) and not op.has_trait(NoTerminator):
                raise OpError(op, f"region #{r} has an empty block: a block needs a terminator")
            scoped = [v for b in blocks for v in b.args]
            if (
                len(blocks) > 1
            ):  # no CFG dominance analysis: a multi-block region sees all its values
                scoped += [r for b in blocks for o in b.ops for r in o.results]
            visible.update(scoped)
            for block in blocks:
                for inner in block.ops:
                    visit(inner)
                    if len(blocks) == 1:
                        scoped.extend(inner.results)
                        visible.update(inner.results)
            visible.difference_update(scoped)

    visit(op)


def check_call_updates(module: Operation) -> None:
    """A call that updates operands in place (its callee has `dtensor.update`s) writes into
    storage the caller owns: each such operand is an argument of the caller, with no other
    updater (an update or another call)."""
    if not any(op.name == "func.call" for op in module.walk()):
        return  # (by name: importing the func dialect would slow every start-up)
    from ccopt.dialects.dtensor import CallUpdates, UpdateOp, enclosing_function, is_entry_argument

    updates = CallUpdates(module)
    updater: dict[SSAValue, Operation] = {
        op.target: op for op in module.walk() if isinstance(op, UpdateOp)
    }
    for callee, calls in updates.calls.items():
        for call in calls:
            caller = enclosing_function(call).sym_name.data
            for i in updates.updated_operands(call):
                operand = call.operands[i]
                if not is_entry_argument(operand, enclosing_function(call)):
                    raise OpError(
                        call,
                        f"operand #{i} is updated in place by @{callee}, so it must be an "
                        f"argument of @{caller}",
                    )
                if operand in updater:
                    raise OpError(
                        call,
                        f"operand #{i} is updated in place by @{callee}, but argument "
                        f"#{operand.index} of @{caller} is also updated by "
                        f"'{updater[operand].name}'",
                    )
                updater[operand] = call


def check_memory_plans(module: Operation) -> None:
    """Kernel-level functions with a planned workspace (`kernel.workspace`, bytes) keep every
    buffer inside it and never let two buffers share bytes while both may be in use."""
    from xdsl.dialects.builtin import IntegerAttr

    functions = module.ops if isinstance(module, ModuleOp) else module.walk()
    for f in functions:
        workspace = f.attributes.get("kernel.workspace") if f.name == "func.func" else None
        if workspace is None:
            continue
        if not isinstance(workspace, IntegerAttr) or workspace.value.data < 0:
            raise OpError(f, "kernel.workspace must be a non-negative integer (bytes)")
        from ccopt.streams import check_memory_plan

        check_memory_plan(f, workspace.value.data)
