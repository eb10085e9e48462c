"""Reading and checking ccopt IR: the context, a parser that records op locations, a verifier
that reports the failing op.

xDSL's parser leaves ops without locations and its verifier raises with the whole module attached;
ccopt users need `file:line:col` of the op at fault, so both are wrapped here.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from ccopt.diagnostics import LocatedError, OpError, SourceText, first_line


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


class LocatingParser(Parser):
    """A parser that stamps every op it reads with its `file:line:col` (MLIR does the same)."""

    def __init__(self, ctx: Context, source: SourceText):
        super().__init__(ctx, source.text, source.name)
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
    parser = LocatingParser(ctx, source)
    try:
        return parser.parse_module()
    except ParseError as e:
        line, col = source.line_col(e.span.start)
        raise LocatedError(e.msg, source.name, line, col) from None
    except VerifyException as e:  # an attribute rejected its parameters while being parsed
        line, col = source.line_col(parser.pos)
        raise LocatedError(first_line(e), source.name, line, col) from None


def verify_module(module: Operation) -> None:
    """Verify every op, then SSA dominance; the first failure becomes an OpError."""
    for op in module.walk(reverse=False):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise OpError(op, first_line(e).removeprefix("Operation does not verify: ")) from None
    check_dominance(module)
    check_call_updates(module)
    check_memory_plans(module)


def check_dominance(op: Operation) -> None:
    """Every operand is defined before its use, in its block or an enclosing one, as MLIR's
    verifier requires (xDSL's does not check it, and the parser accepts forward references).
    One walk with a scoped set of visible values: linear in the program size."""
    visible: set[SSAValue] = set()

    def visit(op: Operation) -> None:
        for i, v in enumerate(op.operands):
            if v not in visible:
                raise OpError(op, f"operand #{i} does not dominate this use")
        for region in op.regions:
            blocks = list(region.blocks)
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
