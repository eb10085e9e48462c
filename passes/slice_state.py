"""`slice-state`: keep in-place-updated state permanently sliced (ZeRO-style optimizer state).

After split-all-reduce and reorder-elementwise, Adam's moments are read only through slices and
written back through an all_gather that rebuilds the replicated tensor just to store it:

```mlir
%m_s = coll.slice %m over [dp] dim 0 : ...[R] -> ...[S(0)]
...
%m_new = coll.all_gather %m_new_s over [dp] : ...[S(0)] -> ...[R]
dtensor.update %m with %m_new : ...[R]
```
This pass makes the argument itself `S(0)` - each rank stores 1/p of it - replaces the slices by
the argument and updates it with the split value, deleting the all_gather:

```mlir
func.func @adam(..., %m: !dtensor.tensor<515x7xf32, @dp[S(0)]>, ...)
dtensor.update %m with %m_new_s : ...[S(0)]
```
A state that is also used unsliced (returned, normed, read whole) must stay replicated: asked for
it by name (`args=m,v`), the pass refuses with the offending use.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import BlockArgument, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor import mesh_of
from ccopt.passes.common import (
    Refusal,
    erase_op,
    ops_outside_bodies,
    replace_uses,
    warn_kernel_level,
)
from ccopt.passes.options import option
from ccopt.passes.reorder_elementwise import gathered_dim


def argument_name(arg: BlockArgument) -> str:
    return arg.name_hint or f"arg{arg.index}"


def check_sliceable(update: dt.UpdateOp, f: func.FuncOp, called: set[str]) -> coll.AllGatherOp:
    """The all_gather that only rebuilds the state, or Refusal saying why the state must stay."""
    arg = update.target
    assert isinstance(arg, BlockArgument)
    gather = update.value.owner
    if not isinstance(gather, coll.AllGatherOp):
        raise Refusal(
            f"state %{argument_name(arg)} is updated with a value that is not all-gathered "
            f"({update.value.type}); run split-all-reduce and reorder-elementwise first"
        )
    dim = gathered_dim(gather, mesh_of(gather))
    for use in arg.uses:
        user = use.operation
        if user is update:
            continue
        if not (
            isinstance(user, coll.SliceOp)
            and user.axes == gather.axes
            and user.dim.value.data == dim
        ):
            raise Refusal(
                f"state %{argument_name(arg)} is also used unsliced by '{user.name}', so it must stay "
                f"{arg.type}"
            )
    if f.sym_name.data in called:
        raise CalledRefusal(
            f"@{f.sym_name.data} is called from elsewhere; its signature cannot change (run "
            "inline first)"
        )
    return gather


class CalledRefusal(Refusal):
    """The state could be sliced but its function is called: only `inline` lets it change."""


def slice_state(update: dt.UpdateOp, gather: coll.AllGatherOp, f: func.FuncOp) -> None:
    arg = update.target
    assert isinstance(arg, BlockArgument)
    split_type = gather.input.type
    slices: list[Operation] = [u.operation for u in arg.uses if u.operation is not update]
    new_arg = Rewriter.replace_value_with_new_type(arg, split_type)
    for piece in slices:
        replace_uses(piece.results[0], new_arg)
        erase_op(piece)
    update.operands[1] = gather.input
    if gather.result.first_use is None:
        erase_op(gather)


def warn_called(update: dt.UpdateOp, f: func.FuncOp) -> None:
    """A GPT step's optimizer is a callee before `inline`: its state, sliceable, stayed whole
    without a word."""
    import warnings

    from ccopt.diagnostics import OpWarning

    arg = update.target
    assert isinstance(arg, BlockArgument)
    message = (
        f"state %{argument_name(arg)} stays {arg.type}: @{f.sym_name.data} is called, so its "
        "signature cannot change; run inline before slice-state to slice it"
    )
    warnings.warn(OpWarning(update, message), stacklevel=2)


def retype(f: func.FuncOp) -> None:
    """The function type after arguments changed type."""
    inputs = [a.type for a in f.body.blocks[0].args]
    f.function_type = FunctionType.from_lists(inputs, f.function_type.outputs.data)


@dataclass(frozen=True)
class SliceState(ModulePass):
    """Keep in-place-updated state (optimizer moments) permanently sliced across ranks."""

    name = "slice-state"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    args: tuple[str, ...] = option(
        (),
        "Names of the state arguments to slice (then a refusal is an error); default: all that "
        "can be.",
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "the optimizer state arguments it names")
        called, functions = scan(op)
        warned: set[func.FuncOp] = set()
        for f, updates in functions.items():
            sliced = False
            for update in updates:
                arg = update.target
                if not isinstance(arg, BlockArgument):
                    continue
                asked = argument_name(arg) in self.args
                if self.args and not asked:
                    continue
                try:
                    gather = check_sliceable(update, f, called)
                except Refusal as why:
                    if asked:
                        raise OpError(update, str(why)) from None
                    if isinstance(why, CalledRefusal) and f not in warned:
                        warned.add(f)
                        warn_called(update, f)
                    continue
                slice_state(update, gather, f)
                sliced = True
            if sliced:
                retype(f)
        missing = set(self.args) - {  # (the updates stay: only their operands change)
            argument_name(u.target)
            for updates in functions.values()
            for u in updates
            if isinstance(u.target, BlockArgument)
        }
        if missing:
            raise CcoptError(
                f"{self.name}: no in-place-updated argument named {', '.join(sorted(missing))}"
            )


def scan(module: ModuleOp) -> tuple[set[str], dict[func.FuncOp, list[dt.UpdateOp]]]:
    """The names of called functions, and the functions with a body, each with its updates,
    in program order: one walk of the module (outside scalar bodies, which hold neither),
    where a walk per question and per function was most of the pass."""
    called: set[str] = set()
    functions: dict[func.FuncOp, list[dt.UpdateOp]] = {}
    for o in ops_outside_bodies(module):
        kind = type(o)
        if kind is dt.UpdateOp:
            owner = o.parent_op()
            while owner is not None and type(owner) is not func.FuncOp:
                owner = owner.parent_op()
            if owner in functions:  # (an update's verifier asks for an enclosing function)
                functions[owner].append(o)  # type: ignore[index,arg-type]
        elif kind is func.CallOp:
            called.add(o.callee.root_reference.data)  # type: ignore[attr-defined]
        elif kind is func.FuncOp and o.body.blocks:  # type: ignore[attr-defined]
            functions[o] = []  # type: ignore[index]
    return called, functions
