"""`fuse-collective`: reduce_scatter -> elementwise -> all_gather becomes one fused collective.

After split-all-reduce and reorder-elementwise, an optimizer step is a reduce-scatter, elementwise
work on the slice and all-gathers of the results. `coll.fused_all_reduce` does all of it in one
collective (CoCoNeT's FusedAllReduce): the body runs on each rank's reduced slice between the
two phases, the gather phase carries the results that are all-gathered (the updated weights),
and results used in split form (sliced optimizer state) stay split:

```mlir
%g_s = coll.reduce_scatter sum %g over [dp] dim 0 : ...
%w1_s = dtensor.fused ins(%lr, %g_s, %w_s) ... { ... }
%w1 = coll.all_gather %w1_s over [dp] : ...
// becomes
%w1 = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [dp] dim 0 : (...) -> ...[R] { ... }
```
A value used both ways (a residual stream: gathered for the next matmul, split for the next
residual add) is yielded once and gathered; its split uses read `coll.slice` of the gathered
result, a view of its own block at the kernel level. Only a value returned or stored split
keeps a result of its own, written where the caller reads it.

Fused collectives that compute alike (an optimizer step per parameter group, a model's
layers) name one module-level `kernel.body` (`body @fused_body<N>`, see `SharedBodies`), built
once; a body used once stays inline. Later passes treat a shared body as each op's own copy
(`shares_as_copies`): overlap's chunks and the kernels name what they named with copies.

With `group=t1,t2` it fuses the tagged collective (an all_reduce, or a reduce_scatter) with
exactly the tagged elementwise ops, and refuses with the reason when the group is not convex or
the ops do not consume the collective. The reduce-scatter's `algorithm` hint and `chunks` request
(the count `overlap` pipelines the fused collective in; auto-shard's `overlap-tries` writes it)
carry over to the fused collective.

`lower-collectives{fused_body=in-algorithm}` then puts the body inside the all-reduce algorithm,
at the step where each chunk's reduction completes (`fn` steps), pipelined with the gather of the
other chunks.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.diagnostics import OpError, OpWarning
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE, i64_attr
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.inference import InferenceError
from ccopt.mesh import Mesh
from ccopt.passes.common import (
    ProgramOrder,
    Refusal,
    UserWalk,
    derive,
    erase_op,
    of_class,
    ops_outside_bodies,
    replace_uses,
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
    insert_after_group,
    interface,
    is_fusable,
    iteration_key,
    joined_tag,
    replace_group,
)
from ccopt.passes.options import option
from ccopt.passes.reorder_elementwise import gathered_dim, plan_region, rewrite_region
from ccopt.passes.split_all_reduce import split


def plan_members(
    rs: coll.ReduceScatterOp, allowed: set[Operation] | None, order: ProgramOrder | None = None
) -> list[Operation]:
    """Ops after `rs` that compute on its slice in its iteration space and element type (the
    fused collective's results are the slice or its gather), in program order; an op that
    depends on them through a non-member cannot join (convexity)."""
    key = iteration_key(rs)
    element = rs.result.type.element_type  # type: ignore[union-attr]
    inside: set[SSAValue] = {rs.result}
    members: list[Operation] = []
    block = rs.parent_block()
    assert block is not None
    order = order or ProgramOrder()
    walk = UserWalk(order, block, [rs.result])
    last_user = _last_user(rs.result, block, order, -1.0)
    for op in walk:  # every op reached uses the group or a value tainted by it
        if order[op] > last_user:
            break  # past every op that reads the group: no member can follow
        if (
            all(v in inside or not _reached(v, walk) for v in op.operands)
            and is_fusable(op)
            and (allowed is None or op in allowed)
            and iteration_key(op) == key
            and all(r.type.element_type == element for r in op.results)  # type: ignore[union-attr]
        ):
            members.append(op)
            inside.update(op.results)
            for r in op.results:
                last_user = _last_user(r, block, order, last_user)
        walk.follow(op.results)
    return members


def _last_user(value: SSAValue, block: Block, order: ProgramOrder, start: float) -> float:
    """The position of the last op in `block` that uses `value` (at least `start`)."""
    return max(
        [start, *(order[u.operation] for u in value.uses if u.operation.parent_block() is block)]
    )


def _reached(value: SSAValue, walk: UserWalk) -> bool:
    """`value` comes from an op the walk went through (a member or an op tainted by one)."""
    return value.owner in walk.seen


def gathers_of(
    value: SSAValue, rs: coll.ReduceScatterOp, dim: int, mesh: Mesh | None = None
) -> list[coll.AllGatherOp]:
    """The all_gathers of `value` over `rs`'s axes along `dim` (`mesh`: `rs`'s, when known)."""
    found = []
    for u in value.uses:
        op = u.operation
        if type(op) is coll.AllGatherOp and op.axes == rs.axes:  # (no subclasses)
            if gathered_dim(op, mesh if mesh is not None else mesh_of(rs)) == dim:
                found.append(op)
    return found


def lowered_part(rs: coll.ReduceScatterOp, members: Sequence[Operation]) -> str | None:
    """Why the group cannot fuse when `lower-collectives` bound its reduce_scatter or a gather
    of its results to an algorithm (the fused op would drop it, left unreferenced); None."""
    mesh = mesh_of(rs)
    dim = rs.dim.value.data
    parts: list[Operation] = [rs]
    for value in [rs.result, *(r for m in members for r in m.results)]:
        parts += gathers_of(value, rs, dim, mesh)
    for part in parts:
        bound = part.attributes.get(ALGORITHM_ATTRIBUTE)
        if bound is not None:
            which = "it" if part is rs else f"its {part.name}"
            return f"{which} runs {bound} (lower-collectives); fuse it before lowering"
    return None


def has_live_results(rs: coll.ReduceScatterOp, members: Sequence[Operation]) -> bool:
    """Some value the group computes is used outside it; otherwise the fused op would have no
    results: the group is dead code, for dce to remove."""
    group = set(members)
    values = [rs.result, *(r for m in members for r in m.results)]
    return any(u.operation not in group for v in values for u in v.uses)


def fuse_into_collective(
    rs: coll.ReduceScatterOp,
    members: Sequence[Operation],
    order: ProgramOrder | None = None,
    bodies: SharedBodies | None = None,
) -> coll.FusedAllReduceOp:
    """Replace `rs`, its member ops and the all_gathers of their results with one op; with
    `bodies`, one naming the body of a group alike fused before (`SharedBodies`)."""
    dim = rs.dim.value.data
    inputs, outputs = interface(members)
    inputs = [v for v in inputs if v is not rs.result]
    if any(u.operation not in members for u in rs.result.uses):
        outputs = [rs.result, *outputs]
    mesh = mesh_of(rs)
    yields: list[SSAValue] = []
    result_types = []
    replaced: list[tuple[SSAValue, list[coll.AllGatherOp] | None]] = []  # (value, its gathers)
    resliced: list[tuple[SSAValue, list[Use]]] = []  # (value, its split uses): sliced back
    for v in outputs:
        gathers = gathers_of(v, rs, dim, mesh)
        rest = [u for u in v.uses if u.operation not in members and u.operation not in gathers]
        if rest and gathers and reslices_freely(v, gathers[0], rest, dim, mesh):
            resliced.append((v, rest))
        elif rest:
            yields.append(v)
            result_types.append(v.type)
            replaced.append((v, None))
        if gathers:
            yields.append(v)
            result_types.append(gathers[0].result.type)
            replaced.append((v, gathers))
    if bodies is None:
        body: Region | str = build_body(members, inputs, yields, leading=[rs.result])
        entry = None
    else:
        body, entry = bodies.body(members, inputs, yields, leading=[rs.result])
    fused = coll.FusedAllReduceOp(
        rs.input,
        inputs,
        rs.axes,
        dim,
        rs.kind,
        result_types,
        body,
        None if rs.algorithm is None else rs.algorithm.data.value,
        None if rs.chunks is None else rs.chunks.value.data,  # overlap's count for the pair
    )
    if entry is not None:
        bodies.note(fused, entry)  # type: ignore[union-attr]
    set_tag(derive(fused, rs), joined_tag([rs, *members]))
    ops = [rs, *members]
    insert_after_group(fused, ops, order)
    slice_back(resliced, fused, replaced, rs, dim, mesh)
    sliced: list[tuple[SSAValue, SSAValue]] = []
    for (v, gathers), result in zip(replaced, fused.results, strict=True):
        if gathers is None:
            sliced.append((v, result))
            continue
        for g in gathers:
            result.name_hint = result.name_hint or g.result.name_hint
            replace_uses(g.result, result)
            erase_op(g)  # (released: else a reference cycle, kept until a full collection)
    replace_group(ops, sliced)
    return fused


def reslices_freely(
    v: SSAValue, gather: coll.AllGatherOp, rest: Sequence[Use], dim: int, mesh: Mesh
) -> bool:
    """`v`, used both split and gathered, can be the gathered result's own block
    (`coll.slice`, a view at the kernel level) rather than a second result the body yields
    again: a second write of each element and a second buffer. Not where the split value is
    returned or stored (a copy out of the view would replace the write into place)."""
    if any(isinstance(u.operation, func.ReturnOp | dt.UpdateOp) for u in rest):
        return False
    props = {"axes": gather.axes, "dim": i64_attr(dim)}
    try:
        return coll.SliceOp.infer(gather.result.type, props, mesh) == v.type  # type: ignore[arg-type]
    except InferenceError:
        return False


def slice_back(
    resliced: Sequence[tuple[SSAValue, list[Use]]],
    fused: coll.FusedAllReduceOp,
    replaced: Sequence[tuple[SSAValue, list[coll.AllGatherOp] | None]],
    rs: coll.ReduceScatterOp,
    dim: int,
    mesh: Mesh,
) -> None:
    """The split uses of each value in `resliced` read a `coll.slice` of its gathered result,
    placed right after `fused` (before the ops `insert_after_group` moved after it); its other
    uses (members, gathers) go with the group."""
    if not resliced:
        return
    gathered = {
        id(v): result
        for (v, gathers), result in zip(replaced, fused.results, strict=True)
        if gathers
    }
    anchor: Operation = fused
    for v, uses in resliced:
        piece = coll.SliceOp(gathered[id(v)], mesh, rs.axes.names, dim)
        Rewriter.insert_op(piece, InsertPoint.after(anchor))
        anchor = piece
        piece.result.name_hint = v.name_hint
        for use in uses:
            use.operation.operands[use.index] = piece.result


def split_and_reorder(
    ar: coll.AllReduceOp, allowed: set[Operation]
) -> tuple[coll.ReduceScatterOp, set[Operation]]:
    """all_reduce -> reduce_scatter + all_gather moved below the allowed ops; returns the
    reduce_scatter and the sliced versions of those ops."""
    pair = split(ar, None)
    if isinstance(pair, str):
        raise Refusal(f"cannot split the all_reduce: {pair}")
    rs, ag = pair
    Rewriter.insert_op([rs, ag], _before(ar))
    ar.result.replace_all_uses_with(ag.result)
    Rewriter.erase_op(ar)
    region = plan_region(ag, strict=False, allowed=allowed)
    moved = {planned[0] for planned in region.planned}  # (rewritten in place)
    if len(moved) != len(allowed):
        raise Refusal("some of the tagged ops cannot run on the reduced slice")
    rewrite_region(region)
    return rs, moved


def _before(op: Operation) -> InsertPoint:
    return InsertPoint.before(op)


@dataclass(frozen=True)
class FuseCollective(ModulePass):
    """Fuse reduce_scatter + elementwise ops + all_gather into one coll.fused_all_reduce."""

    name = "fuse-collective"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    group: tuple[str, ...] = option(
        (),
        "Tags of one collective and the elementwise ops to fuse into it (then an illegal group "
        "is an error); default: every reduce_scatter with the elementwise ops on its slice.",
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "reduce_scatters and the elementwise ops on their slices")
        if self.group:
            self.fuse_tagged(op)
            return
        order = ProgramOrder()
        bodies = SharedBodies(op)
        for rs in of_class(ops_outside_bodies(op), coll.ReduceScatterOp):
            members = plan_members(rs, None, order)
            if not members or not has_live_results(rs, members):
                continue
            lowered = lowered_part(rs, members)
            if lowered is not None:
                warnings.warn(OpWarning(rs, f"not fused: {lowered}"), stacklevel=2)
                continue
            fuse_into_collective(rs, members, order, bodies)
        drop_orphan_bodies(op)  # of fused members that named a body (fuse-elementwise)
        bodies.share_inline(coll.FusedAllReduceOp)  # (after: no orphan is named again)

    def fuse_tagged(self, module: ModuleOp) -> None:
        require_tagged(module, self.group, self.name)
        ops = [o for o in module.walk() if tag_of(o) in self.group]
        collectives = [o for o in ops if isinstance(o, coll.AllReduceOp | coll.ReduceScatterOp)]
        try:
            if len(collectives) != 1:
                raise Refusal(
                    f"the group needs exactly one all_reduce or reduce_scatter, it has {len(collectives)}"
                )
            others = [o for o in ops if o not in collectives]
            strays = [o for o in others if not is_fusable(o)]
            if strays:
                raise Refusal(f"'{strays[0].name}' (tag {tag_of(strays[0])!r}) is not elementwise")
            check_convex(ops)
            (collective,) = collectives
            bound = collective.attributes.get(ALGORITHM_ATTRIBUTE)
            if bound is not None:
                raise Refusal(f"it runs {bound} (lower-collectives); fuse it before lowering")
            if isinstance(collective, coll.AllReduceOp):
                rs, allowed = split_and_reorder(collective, set(others))
            else:
                rs, allowed = collective, set(others)
            members = plan_members(rs, allowed)
            if len(members) != len(allowed):
                raise Refusal("some of the tagged ops do not compute on the collective's slice")
            if not has_live_results(rs, members):
                raise Refusal(
                    "no result of the group is used outside it: it is dead code (run dce)"
                )
            lowered = lowered_part(rs, members)
            if lowered is not None:
                raise Refusal(lowered)
        except Refusal as why:
            raise OpError(ops[0], f"cannot fuse {'+'.join(self.group)}: {why}") from None
        fuse_into_collective(rs, members)
        drop_orphan_bodies(module)
