"""Fusion groups: which ops may become one kernel, and how a group becomes a scalar body.

A group is legal when it is *convex* - no path leaves the group through another op and comes
back - because the fused op runs all members at once: a member that needs a value computed
outside from another member's result could not be scheduled (CoCoNeT's cycle check, which never
fired). Members share one iteration space (result shape and placements) so that one loop over
elements computes them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr, i64
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import (
    BodyCopier,
    NamedBodyOp,
    clone_body,
    drop_unnamed_bodies,
)
from ccopt.dialects.construct import clone_op
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.dialects.open_placements import has_open_types
from ccopt.passes.common import (
    ProgramOrder,
    Refusal,
    block_ops,
    erase_op,
    is_elementwise,
    ops_outside_bodies,
    release,
    replace_uses,
    tag_of,
)
from ccopt.passes.scalarize import BodyBuilder, emit
from ccopt.verifier import forget_verification, region_structure


def iteration_key(op: Operation) -> tuple[object, ...]:
    t = op.results[0].type
    assert isinstance(t, DTensorType)
    return (t.get_shape(), t.mesh, t.placements)


@dataclass
class _Group:
    """A growing fusion group. Groups are numbered in creation order; a set of groups is an int
    with one bit per number (a merged group keeps the bits of all its parts in `mask`)."""

    key: tuple[object, ...]
    mask: int
    needs: int = 0  # every group this group's kernel waits for, itself excluded
    consumed: bool = False  # an op outside the group has read one of its values


class _Groups:
    """Union-find over group numbers; the data of a merged group lives at its root."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.data: dict[int, _Group] = {}

    def new(self, key: tuple[object, ...]) -> int:
        g = len(self.parent)
        self.parent.append(g)
        self.data[g] = _Group(key, 1 << g)
        return g

    def find(self, g: int) -> int:
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def merge(self, roots: Sequence[int]) -> int:
        """One group of `roots` (already checked legal); returns its root."""
        first, *rest = roots
        kept = self.data[first]
        for g in rest:
            other = self.data.pop(g)
            self.parent[g] = first
            kept.mask |= other.mask
            kept.consumed |= other.consumed
        return first


def find_groups(block: Block) -> list[list[Operation]]:
    """Maximal convex groups of elementwise ops sharing an iteration space, in one pass over the
    block: an op joins (and may merge) the groups of its producers unless one of them depends on
    another, or the op depends on one of them through an op outside it.

    A fused group is one kernel: a value depends on everything its producer's group reads, not
    only on its own operands. So that the dependencies recorded for values computed outside the
    groups stay exact, a group that something outside has already read may only grow by ops
    (and merge with groups) that need nothing it did not need already. A set of groups is one
    int (a bit per group): each step is a few word operations, linear in the block in practice."""
    groups = _Groups()
    data, find = groups.data, groups.find
    group_of: dict[int, int] = {}  # id(op) -> its group (ids: hashing an op runs Python code)
    outside: dict[int, int] = {}  # id(value) -> the groups it needs, for values computed
    # outside all groups (every value keyed is alive meanwhile: its op is in the block)

    for op in block_ops(block):
        # per operand: its producer's group (root) or None, and what the operand depends on
        producers: list[int | None] = []
        deps: list[int] = []
        for v in op._operands:  # pyright: ignore[reportPrivateUsage]
            # (a block argument's owner is never a member: `owner` is a Python property)
            g = group_of.get(id(v.op)) if type(v) is OpResult else None
            if g is None:
                producers.append(None)
                deps.append(outside.get(id(v), 0))
            else:
                g = find(g)
                producers.append(g)
                deps.append(data[g].mask | data[g].needs)
        own: int | None = None
        if is_elementwise(op) and not has_open_types(op):  # (`?`: no layout to fuse in yet)
            key = iteration_key(op)
            chosen: list[int] = []
            for g in sorted({g for g in producers if g is not None}):
                if (
                    data[g].key == key
                    and _needs_if_fused(data, [*chosen, g], producers, deps) is not None
                ):
                    chosen.append(g)
            needs = _needs_if_fused(data, chosen, producers, deps)
            assert needs is not None
            own = groups.merge(chosen) if chosen else groups.new(key)
            data[own].needs = needs
            group_of[id(op)] = own
            for g in producers:  # (the chosen ones are `own` now)
                if g is not None and g not in chosen:
                    data[g].consumed = True
        else:
            needed = 0
            for g, d in zip(producers, deps, strict=True):
                if g is not None:
                    data[g].consumed = True
                needed |= d
            for res in op.results:
                outside[id(res)] = needed

    members: dict[int, list[Operation]] = {}
    for op in block_ops(block):
        g = group_of.get(id(op))
        if g is not None:
            members.setdefault(find(g), []).append(op)
    return list(members.values())


def _needs_if_fused(
    data: dict[int, _Group], roots: Sequence[int], producers: list[int | None], deps: list[int]
) -> int | None:
    """What `roots` + an op (its operands' producer groups and dependencies) as one group
    would wait for, or None if that group is not convex or adds needs to a group already read
    from outside."""
    mask = needs = 0
    for g in roots:
        mask |= data[g].mask
        needs |= data[g].needs
    for g, d in zip(producers, deps, strict=True):
        if g not in roots:
            needs |= d
    if needs & mask:
        return None  # a path leaves the group and comes back
    for g in roots:
        group = data[g]
        if group.consumed and needs & ~group.needs:
            return None
    return needs


def check_convex(ops: Sequence[Operation]) -> None:
    """Raise Refusal naming the outside op on a path that leaves the group and re-enters it."""
    members = set(ops)
    escaped: dict[Operation, Operation] = {}  # outside op -> the first outside op on its path
    block = ops[0].parent_block()
    assert block is not None
    first = min(ops, key=block.get_operation_index)
    op: Operation | None = first
    while op is not None:
        sources = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        via = next((escaped[s] for s in sources if s in escaped), None)
        if op in members:
            if via is not None:
                raise Refusal(
                    f"the group is not convex: '{op.name}'{_tagged(op)} depends on the group through "
                    f"'{via.name}'{_tagged(via)}, which is outside it"
                )
        elif any(s in members for s in sources):
            escaped[op] = op
        elif via is not None:
            escaped[op] = via
        op = op.next_op


def _tagged(op: Operation) -> str:
    tag = tag_of(op)
    return f" (tag {tag!r})" if tag else ""


def interface(ops: Sequence[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
    """Values the group reads from outside, and member results used outside, in program order."""
    members = {id(op) for op in ops}  # (ids: hashing an op or a value runs Python code)
    inputs: dict[int, SSAValue] = {}
    outputs: list[SSAValue] = []
    for op in ops:
        for v in op._operands:  # pyright: ignore[reportPrivateUsage]
            if id(v.owner) not in members:
                inputs.setdefault(id(v), v)
        for res in op.results:
            use = res.first_use
            while use is not None:
                if id(use._operation) not in members:  # pyright: ignore[reportPrivateUsage]
                    outputs.append(res)
                    break
                use = use._next_use  # pyright: ignore[reportPrivateUsage]
    return list(inputs.values()), outputs


def is_fusable(op: Operation) -> bool:
    """Elementwise ops, and kernels already fused from them."""
    return is_elementwise(op) or type(op) is dt.FusedOp  # (no subclasses: ABC isinstance is slow)


def emit_member(
    builder: BodyBuilder, op: Operation, operands: Sequence[SSAValue]
) -> list[SSAValue]:
    """The scalars of a member's results: its scalar form, or a fused member's body inlined."""
    if not isinstance(op, dt.FusedOp):
        return [emit(builder, op, operands)]
    body = op.body_block()
    mapping: dict[SSAValue, SSAValue] = {body.args[0]: builder.index}
    mapping.update(zip(body.args[1:], operands, strict=True))
    for inner in body.ops:
        if isinstance(inner, dt.YieldOp):
            return [mapping[v] for v in inner.values]
        copy = clone_op(inner, mapping)
        builder.add(copy)
        mapping.update(zip(inner.results, copy.results, strict=True))
    raise Refusal("a fused body without dtensor.yield")


BodyCache = dict[tuple[object, ...], tuple[Region, BodyCopier]]
"""Scalar bodies already built in one pass application, by `body_signature`, with their
copier: a model repeats one layer many times, and its groups build the same body (a GELU is
14 scalar ops)."""


def release_bodies(cache: BodyCache) -> None:
    """Free the cache's template bodies (only copies of them went into the IR) at once, not at
    the next full garbage collection (`release`)."""
    for region, _ in cache.values():
        region.drop_all_references()
        release(region)
    cache.clear()


def build_body(
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    yields: Sequence[SSAValue],
    leading: Sequence[SSAValue] = (),
    cache: BodyCache | None = None,
) -> Region:
    """The scalar body computing `yields` from `leading` + `inputs` through the members' scalar
    forms (`leading` are values the enclosing op provides itself, like a reduced operand). With
    a `cache`, a group whose members read and compute alike gets a copy of the body built for
    the first such group."""
    if cache is None:
        return _new_body(ops, inputs, yields, leading)
    signature = body_signature(ops, [*leading, *inputs], yields)
    entry = cache.get(signature)
    if entry is None:
        template = _new_body(ops, inputs, yields, leading)
        entry = cache[signature] = (template, BodyCopier(template))
    return entry[1].copy() or clone_body(entry[0])


def body_signature(
    ops: Sequence[Operation], sources: Sequence[SSAValue], yields: Sequence[SSAValue]
) -> tuple[object, ...]:
    """Everything `_new_body` reads: the sources' element types, and per member its kind,
    properties (factors, seeds, predicates), result element types, a fused member's body up to
    renaming, and where each operand comes from (a source or a member's result, by position);
    then where each yielded value comes from."""
    # values by `id` (hashing a value runs Python code); every value keyed is alive meanwhile
    where: dict[int, tuple[int, int]] = {id(v): (-1, i) for i, v in enumerate(sources)}
    parts: list[object] = [tuple([_element_type(v.type) for v in sources])]
    for m, op in enumerate(ops):
        results = op.results
        parts.append(
            (
                type(op),
                tuple(op.properties.items()),
                tuple([_element_type(r.type) for r in results]),
                tuple([where[id(v)] for v in op._operands]),  # pyright: ignore[reportPrivateUsage]
                region_structure(op) if op.regions else (),
            )
        )
        for i, r in enumerate(results):
            where[id(r)] = (m, i)
    parts.append(tuple([where[id(v)] for v in yields]))
    return tuple(parts)


def _element_type(t: object) -> object:
    return getattr(t, "element_type", t)


def _new_body(
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    yields: Sequence[SSAValue],
    leading: Sequence[SSAValue],
) -> Region:
    sources = [*leading, *inputs]
    arg_types = [i64] + [v.type.element_type for v in sources]  # type: ignore[union-attr]
    block = Block(arg_types=arg_types)
    builder = BodyBuilder(block)
    scalar: dict[SSAValue, SSAValue] = dict(zip(sources, block.args[1:], strict=True))
    for op in ops:
        outs = emit_member(builder, op, [scalar[v] for v in op.operands])
        scalar.update(zip(op.results, outs, strict=True))
    block.add_op(dt.YieldOp(*(scalar[v] for v in yields)))
    return Region(block)


def insert_after_group(
    fused: Operation, ops: Sequence[Operation], order: ProgramOrder | None = None
) -> None:
    """Put `fused` after the group's last member and move the outside ops in between that use
    the group's values (by convexity none of them feeds a member) after it. `order` (shared
    by a pass that fuses many groups) learns which ops moved."""
    order = order or ProgramOrder()
    members = {id(op) for op in ops}  # (ids: hashing an op or a value runs Python code)
    last = max(ops, key=order.__getitem__)
    Rewriter.insert_op(fused, InsertPoint.after(last))
    dependent: list[Operation] = []
    tainted = {id(r) for op in ops for r in op.results}
    op: Operation | None = min(ops, key=order.__getitem__)  # a member: never moved
    while op is not None and op is not last:
        if id(op) not in members and any(id(v) in tainted for v in op._operands):  # pyright: ignore[reportPrivateUsage]
            dependent.append(op)
            tainted.update([id(r) for r in op.results])
        op = op._next_op  # pyright: ignore[reportPrivateUsage]
    anchor: Operation = fused
    for op in dependent:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.after(anchor))
        anchor = op
    order.forget(dependent)


def replace_group(
    ops: Sequence[Operation], replacements: Sequence[tuple[SSAValue, SSAValue]]
) -> None:
    """Route the group's outputs to the fused op's results and erase the members (released:
    freed as soon as nothing refers to them, `release`)."""
    for old, new in replacements:
        replace_uses(old, new)
        new.name_hint = new.name_hint or old.name_hint
    for op in reversed(ops):
        erase_op(op)


def place_fused(
    fused: Operation,
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    order: ProgramOrder | None = None,
) -> None:
    """Replace the group by `fused`, whose results are the group's `outputs` in order."""
    insert_after_group(fused, ops, order)
    replace_group(ops, list(zip(outputs, fused.results, strict=True)))


def joined_tag(ops: Iterable[Operation]) -> str | None:
    tags = list(dict.fromkeys(t for op in ops if (t := tag_of(op)) is not None))
    return "+".join(tags) if tags else None


class SharedBodies:
    """The scalar bodies of a module's `dtensor.fused` ops (or fuse-collective's
    `coll.fused_all_reduce` ops), each kept once: a body that two fused ops compute (a model's
    layers repeat the same few) becomes one module-level `kernel.body` that both name
    (`body @fused_body<N>`), as convert-to-kernel outlines the kernels' bodies; a body used
    once stays inline. The copies were half of a fused model's ops, and the pipeline's peak
    memory.

    Two ways to find alike bodies, both one dict lookup per body: groups that read and compute
    alike (`body_signature`, known before the body is built: the second such group's op names
    the body of the first and none is built for it), then every body left inline and every
    module-level body by `body_key` (`share_inline`: fused ops made before, or alike only once
    built). Names are fresh in the module and given in the order bodies become shared; a body
    is placed after the function of its first op, as the outliner places them."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.taken: set[str] | None = None  # the module's symbols, read on the first name
        self.counter = 0
        self.by_signature: dict[tuple[object, ...], list] = {}  # -> [first op, name | None]
        self.after: dict[Operation, Operation] = {}  # function -> the last body placed after it

    def body(
        self,
        ops: Sequence[Operation],
        inputs: Sequence[SSAValue],
        yields: Sequence[SSAValue],
        leading: Sequence[SSAValue] = (),
    ) -> tuple[Region | str, list]:
        """The body of the group `ops` (a region, or the name of a group alike's), and the
        entry to `note` the fused op under (`leading`: as for `build_body`)."""
        signature = body_signature(ops, [*leading, *inputs] if leading else inputs, yields)
        entry = self.by_signature.get(signature)
        if entry is None:
            entry = self.by_signature[signature] = [None, None]
            return _new_body(ops, inputs, yields, leading), entry
        return self.name_of(entry), entry

    def note(self, fused: NamedBodyOp, entry: list) -> None:
        """`fused` was made with a body from `body` under `entry`."""
        if entry[0] is None:
            entry[0] = fused

    def name_of(self, entry: list) -> str:
        """The name of `entry`'s body, which its first op (inline until now) names from now."""
        if entry[1] is None:
            entry[1] = self.outline(entry[0])
        return entry[1]

    def fresh(self) -> str:
        """`fused_body<N>` for the least N whose name no symbol of the module has."""
        if self.taken is None:
            self.taken = {n for o in self.module.ops if (n := dt.symbol_name(o)) is not None}
        while f"fused_body{self.counter}" in self.taken:
            self.counter += 1
        name = f"fused_body{self.counter}"
        self.taken.add(name)
        return name

    def outline(self, op: NamedBodyOp) -> str:
        """Move `op`'s body into a new module-level `kernel.body` that `op` names; its name."""
        from ccopt.dialects import kernel as k

        name = self.fresh()
        forget_verification(op)  # its verification key held the body's blocks
        region = op.detach_region(op.regions[0])
        op.properties["body_ref"] = SymbolRefAttr(name)
        function = top_level(op)
        body = k.BodyOp(name, region)
        Rewriter.insert_op(body, InsertPoint.after(self.after.get(function, function)))
        self.after[function] = body
        dt.note_symbols(self.module, [body])
        return name

    def share_inline(self, kind: type[NamedBodyOp] = dt.FusedOp) -> None:
        """Name every inline body of a `kind` op (`dtensor.fused`, or fuse-collective's
        `coll.fused_all_reduce`) that an existing module-level body or another such op's body
        equals (`body_key`), in program order."""
        from ccopt.dialects.body import ModuleBodyOp, body_key

        by_key: dict[object, list] = {}
        for o in self.module.ops:
            if isinstance(o, ModuleBodyOp):
                key = body_key(o.body_block())
                if key is not None:
                    by_key.setdefault(key, [None, dt.symbol_name(o)])
        for op in ops_outside_bodies(self.module):
            if type(op) is not kind or not op.regions:
                continue
            key = body_key(op.body_block())  # type: ignore[attr-defined]
            if key is None:
                continue
            entry = by_key.get(key)
            if entry is None:
                by_key[key] = [op, None]
                continue
            name = self.name_of(entry)
            forget_verification(op)
            region = op.detach_region(op.regions[0])
            release(region)  # self-contained (it has a key)
            op.properties["body_ref"] = SymbolRefAttr(name)


def top_level(op: Operation) -> Operation:
    """The op of the module's block that holds `op` (its function)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        op, parent = parent, parent.parent_op()
    return op


def drop_orphan_bodies(module: Operation) -> None:
    """Erase and free the module-level bodies no op names any more (`drop_unnamed_bodies`)."""
    for body in drop_unnamed_bodies(module):
        release(body)


def shares_as_copies(op: Operation) -> bool:
    """Whether `op`'s named body is one the fusion passes shared (`SharedBodies`): later passes
    (overlap's chunks, convert-to-kernel's kernels) treat it as a copy of its own, so that
    what they make does not depend on that sharing. `dtensor.fused` and an unchunked
    `coll.fused_all_reduce` (overlap's chunks carry an index box, and name their body for
    good)."""
    cls = type(op)
    return cls is dt.FusedOp or (
        cls is coll.FusedAllReduceOp and "index_offsets" not in op.properties
    )
