"""`fuse-elementwise`: groups of elementwise ops become one `dtensor.fused` kernel.

Each elementwise op on its own reads its operands from memory and writes its result back; fused,
a group reads its inputs once and writes only the values used outside it. The pass finds maximal
convex groups of elementwise ops with one iteration space (same result shape and placements) and
replaces each group of two or more with a `dtensor.fused` whose body is their per-element
`arith`/`math` computation:

```mlir
%step = dtensor.mul %lr, %g : (...) -> !t
%w1 = dtensor.sub %w, %step : (!t, !t) -> !t
// becomes
%w1 = dtensor.fused (%lr, %g, %w) : (...) -> !t {
^bb0(%i: i64, %a: f32, %b: f32, %c: f32):
  %0 = arith.mulf %a, %b : f32
  %1 = arith.subf %c, %0 : f32
  dtensor.yield %1 : f32
}
```
A body that another fused op of the module computes too (a model repeats its layers) is kept
once, as a module-level `kernel.body` that the fused ops name (`dtensor.fused ins(...) body
@fused_body0 : ...`, see `SharedBodies`); a body used once stays inline. A function alike one
fused before that named only bodies already shared (a model's optimizer steps from the third
on) gets that one's ops, copied in place (`AlikeFunctions`).

With `group=t1,t2` it fuses exactly the ops carrying those tags, and refuses with the reason when
they are not all elementwise, do not share an iteration space, or are not convex (fusing would
create a cycle).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ccopt.diagnostics import OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.open_placements import has_open_types
from ccopt.passes.alike_functions import AlikeFunctions
from ccopt.passes.common import (
    ProgramOrder,
    Refusal,
    derive,
    is_elementwise,
    ops_outside_bodies,
    require_tagged,
    set_tag,
    tag_of,
    warn_kernel_level,
)
from ccopt.passes.fusion_groups import (
    SharedBodies,
    build_body,
    check_convex,
    drop_orphan_bodies,
    find_groups,
    interface,
    iteration_key,
    joined_tag,
    place_fused,
    top_level,
)
from ccopt.passes.options import option


def fuse(
    ops: Sequence[Operation],
    order: ProgramOrder | None = None,
    bodies: SharedBodies | None = None,
    known: tuple[list[SSAValue], list[SSAValue]] | None = None,
) -> dt.FusedOp:
    """Replace a legal group (in an order its members can run in) with one dtensor.fused op;
    with `bodies`, one naming the body of a group alike made before (`SharedBodies`);
    `known`: the group's `interface`, when the caller has it."""
    inputs, outputs = interface(ops) if known is None else known
    if bodies is None:
        body: Region | str = build_body(ops, inputs, outputs)
        entry = None
    else:
        body, entry = bodies.body(ops, inputs, outputs)
    fused = dt.FusedOp(inputs, [v.type for v in outputs], body)  # type: ignore[misc]
    if entry is not None:
        bodies.note(fused, entry)  # type: ignore[union-attr]
    set_tag(derive(fused, ops[0]), joined_tag(ops))
    place_fused(fused, ops, outputs, order)
    return fused


def check_group(ops: Sequence[Operation]) -> None:
    for op in ops:
        if not is_elementwise(op):
            raise Refusal(
                f"'{op.name}' (tag {tag_of(op)!r}) is not elementwise; fuse collectives with fuse-collective"
            )
        if has_open_types(op):
            raise Refusal(
                f"'{op.name}' (tag {tag_of(op)!r}) has open placements (?): run "
                "propagate-placements or auto-shard first"
            )
    blocks = {op.parent_block() for op in ops}
    if len(blocks) != 1:
        raise Refusal("the tagged ops are in different blocks")
    keys = {iteration_key(op) for op in ops}
    if len(keys) != 1:
        shapes = ", ".join(f"{op.results[0].type}" for op in ops)
        raise Refusal(f"the ops do not share one iteration space: {shapes}")
    check_convex(ops)
    if not interface(ops)[1]:
        raise Refusal("no result of the group is used outside it: it is dead code (run dce)")


def by_function(blocks: Iterable[Block]) -> Iterator[tuple[Operation, list[Block]]]:
    """The blocks (in program order) by the op of the module's block holding them, in order."""
    function: Operation | None = None
    inner: list[Block] = []
    for block in blocks:
        holder = top_level(block.parent_op())  # type: ignore[arg-type]
        if holder is not function:
            if inner:
                yield function, inner  # type: ignore[misc]
            function, inner = holder, []
        inner.append(block)
    if inner:
        yield function, inner  # type: ignore[misc]


def shared_so_far(bodies: SharedBodies) -> tuple[int, int]:
    """How many group signatures `bodies` knows and names it gave (each body it outlines takes
    a fresh name): a function fused without changing either named only bodies shared before
    (its groups each computing like an earlier function's), as an alike function will
    (`AlikeFunctions`). Two counts: no walk of what is shared per function."""
    taken = bodies.taken
    return len(bodies.by_signature), 0 if taken is None else len(taken)


@dataclass(frozen=True)
class FuseElementwise(ModulePass):
    """Fuse maximal convex groups of elementwise ops into dtensor.fused kernels."""

    name = "fuse-elementwise"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    group: tuple[str, ...] = option(
        (),
        "Tags of the ops to fuse into one kernel (then an illegal group is an error); default: "
        "all maximal convex groups.",
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "chains of dtensor elementwise ops")
        if self.group:
            self.fuse_tagged(op)
            return
        # (blocks in program order: bodies are named in the order they become shared)
        blocks = dict.fromkeys(
            o.parent_block() for o in ops_outside_bodies(op) if is_elementwise(o)
        )
        order = ProgramOrder()
        bodies = SharedBodies(op)
        alike = AlikeFunctions([o for o in op.ops if type(o) is func.FuncOp])
        for function, inner in by_function(blocks):
            key = alike.key(function) if type(function) is func.FuncOp else None
            if key is not None and alike.replace(key, function, True) is not None:  # type: ignore[arg-type]
                continue  # (alike a function fused before, which named only bodies shared)
            shared = shared_so_far(bodies) if key is not None else None
            for block in inner:
                for members in find_groups(block):
                    if len(members) < 2:
                        continue
                    known = interface(members)
                    if known[1]:  # dead groups stay for dce
                        fuse(members, order, bodies, known)
            if key is None:
                continue
            if shared_so_far(bodies) == shared:  # an alike function would fuse as this one
                alike.settle(key, function, function)  # type: ignore[arg-type]
            else:
                alike.forget(function)  # type: ignore[arg-type]
        bodies.share_inline()
        drop_orphan_bodies(op)  # fused ops that named a body may have been fused again

    def fuse_tagged(self, module: ModuleOp) -> None:
        require_tagged(module, self.group, self.name)
        ops = [o for o in module.walk() if tag_of(o) in self.group]
        try:
            check_group(ops)
        except Refusal as why:
            raise OpError(ops[0], f"cannot fuse {'+'.join(self.group)}: {why}") from None
        fuse(ops)
        SharedBodies(module).share_inline()
        drop_orphan_bodies(module)
