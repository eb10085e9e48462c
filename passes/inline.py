"""`inline`: replace calls by the callee's body, callees first, as MLIR's inliner does.

The kernel level has no calling convention yet, and the transformations see one function at a
time, so a program built from functions is inlined before `convert-to-kernel`. A callee's
in-place updates become updates of the caller's arguments (a call writes the callee's updates
into its operands' storage, see `ccopt.ir.check_call_updates`):

```mlir
func.func private @step(%m: !r, %g: !r) {
  %m1 = dtensor.add %m, %g : (!r, !r) -> !r
  dtensor.update %m with %m1 : !r
  func.return
}
func.func @train(%m: !r, %g: !r) {
  func.call @step(%m, %g) : (!r, !r) -> ()
  func.return
}
// becomes (@step is private and no longer called, so it is erased)
func.func @train(%m: !r, %g: !r) {
  %m1 = dtensor.add %m, %g : (!r, !r) -> !r
  dtensor.update %m with %m1 : !r
  func.return
}
```
Options: `callees` (inline only calls to these functions; default every single-block function)
and `max-ops` (inline only callees of at most this many ops, counted after their own calls are
inlined: a model's repeated layers stay functions that every later pass, the memory plan and the
generated code handle once, while small helpers disappear). A call marked `no_inline` (MLIR's
spelling) always stays a call. Greedily, calls that close a recursion and calls to multi-block
functions or declarations stay calls; naming such a callee in `callees` is an error. Public
callees stay (other modules may call them); private ones left without calls are erased.

```mlir
func.call @layer(%x) {no_inline} : (!r) -> !r   // stays, whatever the options
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects.body import walk_outside_bodies
from ccopt.passes.common import erase_op
from ccopt.passes.options import option
from ccopt.passes.unchanged import mark_unchanged


@dataclass(frozen=True)
class Inline(ModulePass):
    """Replace calls by the callee's body, callees first; erase private callees left uncalled."""

    name = "inline"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    callees: tuple[str, ...] = option(
        (), "Functions whose calls are inlined; default: every function with a body."
    )

    max_ops: int | None = option(
        None,
        "Inline only callees of at most this many ops (nested ops counted, the return not); "
        "default: any size.",
    )

    def __post_init__(self) -> None:
        if self.max_ops is not None and self.max_ops < 0:  # refused when the pipeline is read
            raise ValueError(f"inline: max-ops must be >= 0, got {self.max_ops}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not apply_inline(op, self.callees, self.max_ops):
            mark_unchanged(op)


NO_INLINE = "no_inline"
"""A call with this attribute stays a call (MLIR's func.call `no_inline`)."""


def calls_in(f: Operation) -> list[func.CallOp]:
    """The calls in `f`, in walk order; scalar bodies are not looked into (they hold only
    arith and math ops, and are most of a fused module's ops)."""
    return [op for op in walk_outside_bodies(f) if is_call(op)]


_IS_CALL: dict[type, bool] = {}


def is_call(op: Operation) -> bool:
    """`isinstance(op, func.CallOp)`, once per class (`isinstance` on an IRDL class runs
    Python code, and this asks it of every op of the module)."""
    found = _IS_CALL.get(type(op))
    if found is None:
        found = _IS_CALL[type(op)] = isinstance(op, func.CallOp)
    return found


def bottom_up(
    functions: dict[str, func.FuncOp],
    inlinable: set[str],
    strict: bool,
    calls_of: Callable[[func.FuncOp], list[func.CallOp]] = calls_in,
) -> list[tuple[func.FuncOp, list[func.CallOp]]]:
    """Every function with its calls to inline, callees before callers. A call that closes a
    cycle of inlinable calls would be inlined forever: it stays a call, or - when `strict`,
    the user having named the callees - it is refused."""
    order: list[tuple[func.FuncOp, list[func.CallOp]]] = []
    state: dict[str, str] = {}  # name -> "open" while on the DFS stack, then "done"
    recursive: set[func.CallOp] = set()
    for root in functions:
        if root in state:
            continue
        state[root] = "open"
        root_calls = [c for c in calls_of(functions[root]) if callee_name(c) in inlinable]
        stack = [(root, root_calls, iter(root_calls))]
        while stack:
            name, calls, pending = stack[-1]
            call = next(pending, None)
            if call is None:
                stack.pop()
                state[name] = "done"
                order.append((functions[name], [c for c in calls if c not in recursive]))
                continue
            callee = callee_name(call)
            if state.get(callee) == "open":
                if strict:
                    raise OpError(call, f"recursive call to @{callee} cannot be inlined")
                recursive.add(call)
            elif callee not in state:
                state[callee] = "open"
                inner = [c for c in calls_of(functions[callee]) if callee_name(c) in inlinable]
                stack.append((callee, inner, iter(inner)))
    return order


def callee_name(call: func.CallOp) -> str:
    return call.callee.root_reference.data


def inline_call(call: func.CallOp, callee: func.FuncOp) -> None:
    """Clone the callee's body before the call (arguments mapped to the call's operands) and
    replace the call's results by what the callee returns."""
    body = callee.body.blocks.first
    assert body is not None
    values: dict[SSAValue, SSAValue] = dict(zip(body.args, call.arguments, strict=True))
    terminator = body.last_op
    assert isinstance(terminator, func.ReturnOp)
    for op in body.ops:
        if op is not terminator:
            Rewriter.insert_op(op.clone(value_mapper=values), InsertPoint.before(call))
    results = [values.get(v, v) for v in terminator.arguments]
    for old, new in zip(call.results, results, strict=True):
        old.replace_all_uses_with(new)
    erase_op(call)  # (released: freed now, not at a full collection)


def inlinable_functions(module: ModuleOp, asked: tuple[str, ...]) -> dict[str, func.FuncOp]:
    """The module's functions whose calls are inlined: those with a single-block body. Named in
    `callees`, a function that is unknown, bodiless or multi-block is an error; otherwise such
    functions are simply not inlined (their calls stay)."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    for name in asked:
        if name not in functions:
            raise CcoptError(f"inline: no function @{name} in the module")
        f = functions[name]
        if not f.body.blocks:
            raise CcoptError(f"inline: @{name} is a declaration; it has no body to inline")
        if len(f.body.blocks) > 1:
            raise OpError(f, f"has {len(f.body.blocks)} blocks; only single-block functions inline")
    chosen = asked or tuple(functions)
    return {n: functions[n] for n in chosen if len(functions[n].body.blocks) == 1}


def body_size(f: func.FuncOp) -> int:
    """Ops of the body, nested ones included, the terminator not."""
    return sum(1 for _ in f.walk()) - 2  # the function itself and its return


def apply_inline(module: ModuleOp, asked: tuple[str, ...], max_ops: int | None = None) -> bool:
    """Inline the chosen calls, callees first, and erase private callees left uncalled;
    returns whether anything was inlined or erased."""
    inlinable = inlinable_functions(module, asked)
    sizes: dict[str, int] = {}  # measured once a callee's own calls are inlined (bottom-up)

    def chosen(call: func.CallOp) -> bool:
        if NO_INLINE in call.attributes:
            return False
        if max_ops is None:
            return True
        name = callee_name(call)
        if name not in sizes:
            sizes[name] = body_size(inlinable[name])
        return sizes[name] <= max_ops

    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    found: dict[Operation, list[func.CallOp]] = {}  # top-level op -> the calls in it
    remaining: dict[str, int] = {}  # callee -> calls to it not inlined
    for top in module.ops:  # (one walk of the module: these calls are also the functions')
        found[top] = calls_in(top)
        for op in found[top]:
            remaining[callee_name(op)] = remaining.get(callee_name(op), 0) + 1
    order = bottom_up(functions, set(inlinable), bool(asked), lambda f: found[f])
    changed = False
    for _, calls in order:
        for call in calls:
            if chosen(call):
                remaining[callee_name(call)] -= 1
                inline_call(call, inlinable[callee_name(call)])
                changed = True
    for name, f in inlinable.items():
        if remaining.get(name) == 0 and is_private(f):
            erase_op(f)  # (released with its body)
            changed = True
    return changed


def is_private(f: Operation) -> bool:
    assert isinstance(f, func.FuncOp)
    return f.sym_visibility is not None and f.sym_visibility.data == "private"
