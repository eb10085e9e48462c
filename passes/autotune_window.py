"""The part of a program that `autotune` tries one collective's schedules on: its window.

Trying a candidate on the whole program (a clone, the passes, a verification, a simulation)
made autotune quadratic in the program's size: a GPT step inlined into one function has a few
collectives per layer, and each was tried on every layer. A window is the ops around the
collective in its block (`reach` on each side, widened to the ops its schedules rewrite: the
matmul producing its operand, its first reader, the elementwise ops computing on its result;
for a pipeline transfer, the all-reduces or the all-gather that pipeline-p2p rewrites with it;
and both ends of every async value that would cross the cut) copied into a module of its own: one
function whose arguments are the values the window reads from before it and whose results are
the values read after it, beside copies of the meshes, scalar bodies and called functions it
needs. The candidates are tried and simulated on copies of that module, and the winner's
window is spliced back in place of the ops it stands for (`splice`), so the work per
collective is bounded by the window, not the program.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from ccopt.dialects import coll, sched
from ccopt.dialects.body import ModuleBodyOp, NamedBodyOp, body_key, walk_outside_bodies
from ccopt.dialects.symbols import lookup_symbol, note_symbols, symbol_name
from ccopt.ir import clone
from ccopt.passes.common import is_elementwise, release

WIDEN = 4
"""How far (in multiples of the reach) a window widens to take in the elementwise ops that
compute on a collective's result: one farther away stays outside (fuse-collective fuses fewer).
(A model's optimizer may read a gradient many layers later.)"""


@dataclass
class Window:
    module: ModuleOp
    """The window as a module: one function (named as the program's) and the symbols it uses."""
    function: func.FuncOp
    """That function."""
    block: Block
    """The program's block the window's ops lie in."""
    ops: list[Operation]
    """The program's ops the window stands for, in order."""
    inputs: list[SSAValue]
    """The program's values the window reads from before it: the function's arguments."""
    outputs: list[SSAValue]
    """The window's values read after it: the function's results."""
    copies: set[Operation] = field(default_factory=set)
    """The copies of the program's symbols in the module (what a pass adds is not one of them,
    though it may take the name of one it dropped)."""

    @property
    def name(self) -> str:
        return self.function.sym_name.data


def window_around(target: Operation, reach: int, symbols: ProgramSymbols) -> Window:
    """The window of `target` (a collective) in the program `symbols` holds: `reach` ops of its
    block on each side, widened as the module docstring says; its function's body when `reach`
    is 0."""
    top, block = _top_level(target)
    terminator = block.last_op
    if reach == 0:
        first, last = block.first_op, terminator.prev_op if terminator else None
        assert first is not None and last is not None
    else:
        first, last = _span(target, top, block, reach)
    ops, inputs, outputs = _close_async(first, last, block)
    return _outline(block, ops, inputs, outputs, symbols)


def _top_level(op: Operation) -> tuple[Operation, Block]:
    """The op of a function's body that holds `op` (or is it), and that body."""
    while not isinstance(op.parent_op(), func.FuncOp):
        parent = op.parent_op()
        assert parent is not None, "a collective inside a function"
        op = parent
    assert op.parent is not None
    return op, op.parent


def _span(
    target: Operation, top: Operation, block: Block, reach: int
) -> tuple[Operation, Operation]:
    """First and last op of the window around `top` (holding `target`): `reach` ops on each
    side, and wherever they lie the op producing its (first) operand, which overlap chunks with
    it, the collectives pipeline-p2p rewrites with a shift (`_rewritten_before`), and its first
    reader, which overlap chunks an all-gather with and which receives what a shift sent;
    within `reach * WIDEN` ops after it, the elementwise ops computing on its result, which
    fuse-collective and reorder-elementwise rewrite with it (a consumer farther away stays
    outside: that schedule sees fewer)."""
    earlier = [o for v in top.operands[:1] if (o := _owner_in(v, block)) is not None]
    earlier += [o for r in _rewritten_before(target) if (o := _ancestor_in(r, block)) is not None]
    first = _reach_back(top, reach, set(earlier))
    readers = {
        u for r in top.results for use in r.uses if (u := _ancestor_in(use.operation, block))
    }
    last = _reach_forward(top, reach, readers, reach * WIDEN)
    return first, last


def _owner_in(value: SSAValue, block: Block) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) and owner.parent is block else None


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    """`op` or the op holding it that lies in `block`; None when neither does."""
    o: Operation | None = op
    while o is not None and o.parent is not block:
        o = o.parent_op()
    return o


def _rewritten_before(target: Operation) -> list[Operation]:
    """For a shift, the all-reduces feeding it or the all-gather it reads: its pipeline-p2p
    schedule rewrites them, and the window must hold the sending stage's side of the transfer
    (what it computes on the slice) as well as the receiving one's."""
    if not isinstance(target, coll.ShiftOp):
        return []
    from ccopt.passes.pipeline_p2p import rewritten_with

    return rewritten_with(target)


def _reach_back(top: Operation, reach: int, wanted: set[Operation]) -> Operation:
    """`reach` ops before `top`, or back to the farthest of `wanted` where that is farther."""
    first = top
    o, steps = top.prev_op, 0
    while o is not None and (steps < reach or wanted):
        steps += 1
        first = o
        wanted.discard(o)
        o = o.prev_op
    return first


def _reach_forward(top: Operation, reach: int, readers: set[Operation], limit: int) -> Operation:
    """`reach` ops after `top`, or on to its first reader (of `readers`) where that is farther,
    and to the last elementwise op computing on its result (transitively) met within `limit`
    ops; never the block's terminator. Consumers are found on the way (an elementwise op reading
    a value `top` or a consumer made), so a residual stream running on through every later
    layer costs nothing past `limit`."""
    last = top
    made: set[SSAValue] = set(top.results)
    unread = bool(readers)
    o, steps = top.next_op, 0
    while o is not None and o.next_op is not None:  # (the terminator is last)
        if steps >= reach and not unread and steps >= limit:
            break
        steps += 1
        consumer = steps <= limit and is_elementwise(o) and any(v in made for v in o.operands)
        if consumer:
            made.update(o.results)
        if steps <= reach or unread or consumer:
            last = o
        unread = unread and o not in readers
        o = o.next_op
    return last


def _between(first: Operation, last: Operation) -> list[Operation]:
    ops = [first]
    o = first
    while o is not last:
        o = o.next_op
        assert o is not None, "the window's last op follows its first"
        ops.append(o)
    return ops


_ASYNC = (sched.FutureType, sched.TokenType)


def _close_async(
    first: Operation, last: Operation, block: Block
) -> tuple[list[Operation], list[SSAValue], list[SSAValue]]:
    """The window's ops, inputs and outputs (`_crossing`), widened until no future or token
    crosses its ends (an execute and the awaits of its results stay together: a function
    cannot take or return them)."""
    while True:
        ops = _between(first, last)
        inputs, outputs = _crossing(ops, block)
        early = [o for v in inputs if isinstance(v.type, _ASYNC) and (o := _owner_in(v, block))]
        late = {
            u
            for v in outputs
            if isinstance(v.type, _ASYNC)
            for use in v.uses
            if (u := _ancestor_in(use.operation, block)) is not None
        }
        if not early and not late:
            return ops, inputs, outputs
        before = (first, last)
        inside = set(ops)
        o = first
        while early and o is not None:
            o = o.prev_op
            if o in early:
                first = o
                early.remove(o)
        o = last
        late -= inside
        while late and o is not None:
            o = o.next_op
            if o in late:
                last = o
                late.discard(o)
        assert (first, last) != before, "an async value's other end lies in the block"


def _crossing(ops: list[Operation], block: Block) -> tuple[list[SSAValue], list[SSAValue]]:
    """The values the ops read from before them (in first-read order), and the values of
    theirs read after them (in definition order)."""
    inside = set(ops)
    defined: set[SSAValue] = set()
    inputs: dict[SSAValue, None] = {}
    outputs: list[SSAValue] = []
    for top in ops:
        for o in top.walk():
            for v in o.operands:
                if v not in defined and v not in inputs:
                    inputs[v] = None
            defined.update(o.results)
            for region in o.regions:
                for b in region.blocks:
                    defined.update(b.args)
        for r in top.results:
            if any(_ancestor_in(u.operation, block) not in inside for u in r.uses):
                outputs.append(r)
    return list(inputs), outputs


def _outline(
    block: Block,
    ops: list[Operation],
    inputs: list[SSAValue],
    outputs: list[SSAValue],
    symbols: ProgramSymbols,
) -> Window:
    """Copy the window's ops into a module of their own (see the module docstring)."""
    function = block.parent_op()
    assert isinstance(function, func.FuncOp)
    name = function.sym_name.data
    body = Block(arg_types=[v.type for v in inputs])
    mapper: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args, strict=True))
    for op in ops:
        body.add_op(op.clone(value_mapper=mapper))
    body.add_op(func.ReturnOp(*(mapper[v] for v in outputs)))
    copy = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in outputs]), Region(body))
    copy.location = function.location
    copies = [clone(o) for o in symbols.needed_by(ops, name)]
    return Window(ModuleOp([*copies, copy]), copy, block, ops, inputs, outputs, set(copies))


class ProgramSymbols:
    """The program's module-level symbols as windows are spliced into it: the names taken, and
    its scalar bodies by structure (`body_key`), so that a body a pass made in one window that
    equals one the program has (made in an earlier window, or there before) is not kept twice."""

    def __init__(self, program: ModuleOp) -> None:
        self.program = program
        self.taken: set[str] | None = None
        self.bodies: dict[object, str] = {}
        self.others: list[Operation] | None = None

    def needed_by(self, ops: list[Operation], name: str) -> list[Operation]:
        """The program's top-level ops a window of `ops` (in function `name`) needs: those that
        are neither functions nor scalar bodies (its meshes), the bodies its ops name and the
        functions its calls reach, with what they need in turn."""
        if self.others is None:
            self.others = [
                o for o in self.program.ops if not isinstance(o, func.FuncOp | ModuleBodyOp)
            ]
        wanted: dict[str, None] = {}
        todo = list(ops)
        while todo:
            for o in walk_outside_bodies(todo.pop()):
                if isinstance(o, func.CallOp):
                    callee = o.callee.root_reference.data
                elif isinstance(o, NamedBodyOp):
                    callee = o.body_name()
                else:
                    continue
                if callee is None or callee in wanted or callee == name:
                    continue
                wanted[callee] = None
                found = lookup_symbol(self.program, callee)
                if isinstance(found, func.FuncOp):
                    todo.append(found)
        found = [lookup_symbol(self.program, w) for w in wanted]
        return [*self.others, *(o for o in found if o is not None)]

    def names(self) -> set[str]:
        if self.taken is None:
            self.taken = set()
            for o in self.program.ops:
                if (sym := symbol_name(o)) is not None:
                    self.taken.add(sym)
                    self._note_body(o, sym)
        return self.taken

    def _note_body(self, op: Operation, name: str) -> None:
        if isinstance(op, ModuleBodyOp) and (key := body_key(op.body_block())) is not None:
            self.bodies.setdefault(key, name)

    def adopt(self, window: Window) -> dict[str, str]:
        """Move the symbols the passes made in the window to the program's end (where passes
        put them): a body the program has already is dropped for it, a name the program has
        already is made unique. The names that changed (old -> new)."""
        renamed: dict[str, str] = {}
        for o in list(window.module.ops):
            sym = symbol_name(o)
            if o in window.copies or o is window.function or sym is None:
                continue
            taken = self.names()
            key = body_key(o.body_block()) if isinstance(o, ModuleBodyOp) else None
            same = self.bodies.get(key) if key is not None else None
            window.module.body.block.detach_op(o)
            if same is not None:
                renamed[sym] = same
                release(o)
                continue
            new, counter = sym, 0
            while new in taken:
                new = f"{sym}_{counter}"
                counter += 1
            if new != sym:
                o.properties["sym_name"] = StringAttr(new)
                renamed[sym] = new
            taken.add(new)
            self._note_body(o, new)
            if self.others is not None and not isinstance(o, func.FuncOp | ModuleBodyOp):
                self.others.append(o)
            self.program.body.block.add_op(o)
            note_symbols(self.program, [o])
        return renamed


def splice(window: Window, symbols: ProgramSymbols) -> list[Operation]:
    """Put the window's ops (as the passes left them) in place of the ops it stands for, and
    the symbols the passes made into the program (`ProgramSymbols.adopt`); the window module
    is freed. Returns the ops now in the program."""
    function = window.function
    renamed = symbols.adopt(window)
    body = function.body.block
    ret = body.last_op
    assert isinstance(ret, func.ReturnOp)
    for arg, value in zip(body.args, window.inputs, strict=True):
        arg.replace_all_uses_with(value)
    results = list(ret.operands)
    body.erase_op(ret)
    anchor = window.ops[0]
    moved: list[Operation] = []
    while (op := body.first_op) is not None:
        body.detach_op(op)
        window.block.insert_op_before(op, anchor)
        moved.append(op)
    for old, new in zip(window.outputs, results, strict=True):
        old.replace_all_uses_with(new)
    for op in reversed(window.ops):
        window.block.erase_op(op, safe_erase=False)
        release(op)
    if renamed:
        _rename_bodies(moved, renamed)
    _forget_keys(moved)
    release(window.module)
    return moved


def _rename_bodies(ops: list[Operation], renamed: dict[str, str]) -> None:
    for top in ops:
        for o in walk_outside_bodies(top):
            if isinstance(o, NamedBodyOp) and (name := o.body_name()) in renamed:
                o.properties["body_ref"] = SymbolRefAttr(renamed[name])


def _forget_keys(ops: list[Operation]) -> None:
    """Verification keys made in the window module: verified again in the program."""
    from ccopt.verifier import forget_verifications

    for op in ops:
        forget_verifications(op)
