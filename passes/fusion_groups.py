"""Fusion groups: which ops may become one kernel, and how a group becomes a scalar body.

A group is legal when it is *convex* - no path leaves the group through another op and comes
back - because the fused op runs all members at once: a member that needs a value computed
outside from another member's result could not be scheduled (CoCoNeT's cycle check, which never
fired). Members share one iteration space (result shape and placements) so that one loop over
elements computes them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.passes.common import Refusal, is_elementwise, tag_of
from ccopt.passes.scalarize import BodyBuilder, emit


def iteration_key(op: Operation) -> tuple[object, ...]:
    t = op.results[0].type
    assert isinstance(t, DTensorType)
    return (t.get_shape(), t.mesh, t.placements)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, g: int) -> int:
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        self.parent[b] = a
        return a


def find_groups(block: Block) -> list[list[Operation]]:
    """Maximal convex groups of elementwise ops sharing an iteration space, in one pass over the
    block: an op joins (and may merge) the groups of its producers unless it depends on one of
    them through an op outside that group.

    A fused group is one kernel: its results exist only once all of its inputs do, so a value
    depends on everything its producer's group reads (`needs`), not only on its own operands -
    otherwise two groups could each wait for the other."""
    groups = _UnionFind()
    group_of: dict[Operation, int] = {}
    key_of: dict[int, tuple[object, ...]] = {}
    reach: dict[SSAValue, frozenset[int]] = {}
    left: dict[SSAValue, frozenset[int]] = {}
    left_by_group: dict[int, set[int]] = {}
    needs: dict[int, set[int]] = {}  # groups whose values a group's members read
    empty: frozenset[int] = frozenset()

    def closed(ids: Iterable[int]) -> set[int]:
        """`ids` and, transitively, every group they need (group ids as of now)."""
        out: set[int] = set()
        stack = [groups.find(g) for g in ids]
        while stack:
            g = stack.pop()
            if g not in out:
                out.add(g)
                stack.extend(groups.find(h) for h in needs.get(g, ()))
        return out

    def left_of(v: SSAValue) -> set[int]:
        """Groups `v` depends on through an op outside them. A member's direct dependencies on
        other groups are recorded too; once those groups merged into its own, the path is
        internal and no longer counts."""
        if not (isinstance(v.owner, Operation) and v.owner in group_of):
            return closed(left.get(v, empty))
        own = groups.find(group_of[v.owner])
        return closed({*left.get(v, empty), *needs[own]}) - {own}

    for op in block.ops:
        r_in = frozenset(closed(g for v in op.operands for g in reach.get(v, empty)))
        e_in = frozenset(g for v in op.operands for g in left_of(v))
        if not is_elementwise(op):
            for res in op.results:
                reach[res], left[res] = r_in, r_in | e_in
            continue
        key = iteration_key(op)
        producers = {
            groups.find(group_of[v.owner])
            for v in op.operands
            if isinstance(v.owner, Operation) and v.owner in group_of
        }
        chosen: int | None = None
        for g in sorted(p for p in producers if p not in e_in and key_of[p] == key):
            if chosen is None:
                chosen = g
            elif _mergeable(closed(left_by_group[chosen]), closed(left_by_group[g]), chosen, g):
                left_by_group[chosen] = left_by_group[chosen] | left_by_group.pop(g)
                merged = needs[chosen] | needs.pop(g)
                chosen = groups.union(chosen, g)
                needs[chosen] = merged
        if chosen is None:
            chosen = groups.new()
            key_of[chosen] = key
            left_by_group[chosen] = set()
            needs[chosen] = set()
        group_of[op] = chosen
        left_by_group[chosen] |= e_in
        needs[chosen] |= r_in - {chosen}
        for res in op.results:
            reach[res] = r_in | {chosen}
            left[res] = e_in | (r_in - {chosen})

    members: dict[int, list[Operation]] = {}
    for op in block.ops:
        if op in group_of:
            members.setdefault(groups.find(group_of[op]), []).append(op)
    return list(members.values())


def _mergeable(a_left: set[int], b_left: set[int], a: int, b: int) -> bool:
    """Neither group reaches the other through an outside op."""
    return a not in b_left and b not in a_left


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
    members = set(ops)
    inputs: dict[SSAValue, None] = {}
    outputs: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v.owner not in members:
                inputs.setdefault(v)
        for res in op.results:
            if any(u.operation not in members for u in res.uses):
                outputs.append(res)
    return list(inputs), outputs


def is_fusable(op: Operation) -> bool:
    """Elementwise ops, and kernels already fused from them."""
    return is_elementwise(op) or isinstance(op, dt.FusedOp)


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
        copy = inner.clone(value_mapper=mapping)
        builder.add(copy)
        mapping.update(zip(inner.results, copy.results, strict=True))
    raise Refusal("a fused body without dtensor.yield")


def build_body(
    ops: Sequence[Operation],
    inputs: Sequence[SSAValue],
    yields: Sequence[SSAValue],
    leading: Sequence[SSAValue] = (),
) -> Region:
    """The scalar body computing `yields` from `leading` + `inputs` through the members' scalar
    forms (`leading` are values the enclosing op provides itself, like a reduced operand)."""
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


def insert_after_group(fused: Operation, ops: Sequence[Operation]) -> None:
    """Put `fused` after the group's last member and move the outside ops in between that use
    the group's values (by convexity none of them feeds a member) after it."""
    block = ops[0].parent_block()
    assert block is not None
    members = set(ops)
    last = max(ops, key=block.get_operation_index)
    Rewriter.insert_op(fused, InsertPoint.after(last))
    dependent: list[Operation] = []
    tainted = {r for op in ops for r in op.results}
    op: Operation | None = min(ops, key=block.get_operation_index)  # a member: never moved
    while op is not None and op is not last:
        if op not in members and any(v in tainted for v in op.operands):
            dependent.append(op)
            tainted.update(op.results)
        op = op.next_op
    anchor: Operation = fused
    for op in dependent:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.after(anchor))
        anchor = op


def replace_group(
    ops: Sequence[Operation], replacements: Sequence[tuple[SSAValue, SSAValue]]
) -> None:
    """Route the group's outputs to the fused op's results and erase the members."""
    for old, new in replacements:
        old.replace_all_uses_with(new)
        new.name_hint = new.name_hint or old.name_hint
    for op in reversed(ops):
        Rewriter.erase_op(op)


def place_fused(fused: Operation, ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> None:
    """Replace the group by `fused`, whose results are the group's `outputs` in order."""
    insert_after_group(fused, ops)
    replace_group(ops, list(zip(outputs, fused.results, strict=True)))


def joined_tag(ops: Iterable[Operation]) -> str | None:
    tags = list(dict.fromkeys(t for op in ops if (t := tag_of(op)) is not None))
    return "+".join(tags) if tags else None
