"""`overlap`: pipeline a matmul and a collective chunk by chunk on two streams (L1 -> L2).

A matmul whose output is all-reduced (or reduce-scattered) is cut into `chunks` along an output
dimension that is not split and not scattered; each chunk's collective runs asynchronously on the
communication stream while the next chunk's matmul runs on the compute stream (CoCoNeT's
overlap, without spin-waiting kernels):

```mlir
%y = dtensor.matmul %x, %w : ... -> ...[P(sum)]
%r = coll.all_reduce sum %y over [tp] : ...[P(sum)] -> ...[R]
// becomes, for 2 chunks along dimension 0
%x0 = dtensor.slice %x offsets [0, 0] sizes [4, 40] ...
%y0 = dtensor.matmul %x0, %w ...
%t0, %f0 = sched.execute stream 1 ins(%y0) ... { coll.all_reduce ... }
%x1 = dtensor.slice %x offsets [4, 0] sizes [4, 40] ...
%y1 = dtensor.matmul %x1, %w ...                           // overlaps chunk 0's all_reduce
%t1, %f1 = sched.execute stream 1 ins(%y1) ... { coll.all_reduce ... }
%r0 = sched.await %f0 ...
%r1 = sched.await %f1 ...
%r = dtensor.concat %r0, %r1 dim 0 ...
```
The other direction (AxoNN's overlapped all-gather, async tensor parallelism): an all_gather
feeding a matmul is chunked along a dimension that is not gathered; all chunk gathers are issued
on the communication stream and each chunk's matmul waits only for its own gather.

Chunks are ceil-div blocks (the last may be shorter); each chunk computes exactly the elements of
the unchunked op, so the result does not depend on the chunk count. A collective's own `chunks`
attribute overrides the pass option.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError
from ccopt.dialects import coll, sched
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.dialects.inference import InferenceError
from ccopt.mesh import Mesh, block_range
from ccopt.passes.common import Refusal, derived_tag, is_selected, require_tagged, set_tag, tag_of

COMM_STREAM = 1


def owners(mm: dt.MatmulOp) -> list[list[tuple[int, int]]]:
    """For each result dimension, the (operand, operand dimension) pairs that carry it."""
    lhs, rhs = mm.lhs.type, mm.rhs.type
    assert isinstance(lhs, DTensorType) and isinstance(rhs, DTensorType)
    nbatch = lhs.rank - 2
    lm = lhs.rank - 1 if mm.transpose_lhs is not None else lhs.rank - 2
    rn = rhs.rank - 2 if mm.transpose_rhs is not None else rhs.rank - 1
    out: list[list[tuple[int, int]]] = [
        [(0, b)] + ([(1, b)] if rhs.rank > 2 else []) for b in range(nbatch)
    ]
    return [*out, [(0, lm)], [(1, rn)]]


def is_split(t: DTensorType, dim: int) -> bool:
    return any(p.split_dim == dim for p in t.placement_list)


def chunk_ranges(size: int, chunks: int) -> list[tuple[int, int]]:
    ranges = [block_range(size, chunks, c) for c in range(chunks)]
    return [(a, b) for a, b in ranges if b > a]


def slice_dim(value: SSAValue, dim: int, start: int, stop: int) -> dt.SliceOp:
    t = value.type
    assert isinstance(t, DTensorType)
    offsets = [start if d == dim else 0 for d in range(t.rank)]
    sizes = [stop - start if d == dim else s for d, s in enumerate(t.get_shape())]
    return dt.SliceOp(value, offsets, sizes)


def async_region(
    stream: int, inputs: Sequence[SSAValue], build: Callable[[Sequence[SSAValue]], Operation]
) -> sched.ExecuteOp:
    """`sched.execute` whose body is the one op `build` makes from the region's arguments."""
    block = Block(arg_types=[v.type for v in inputs])
    inner = build(block.args)
    block.add_ops([inner, sched.YieldOp(*inner.results)])
    return sched.ExecuteOp(stream, inputs, [r.type for r in inner.results], Region(block))


def rebuild_collective(op: coll.CollectiveOp, value: SSAValue, mesh: Mesh) -> coll.CollectiveOp:
    """The same collective (kind, axes, algorithm) on another operand; the `chunks` request is
    consumed by chunking."""
    props = {k: v for k, v in op.properties.items() if k != "chunks"}
    t = value.type
    assert isinstance(t, DTensorType)
    try:
        result = type(op).infer(t, props, mesh)
    except InferenceError as e:
        raise VerifyException(e.located(mesh.axis_names)) from None
    return type(op).create(
        operands=[value], result_types=[result], properties=props, attributes=dict(op.attributes)
    )


@dataclass
class Plan:
    dim: int  # result dimension the chunks cut
    ranges: list[tuple[int, int]]


def plan_matmul_then_collective(
    mm: dt.MatmulOp, op: coll.CollectiveOp, chunks: int, mesh: Mesh
) -> Plan:
    y = mm.result.type
    assert isinstance(y, DTensorType)
    scatter = op.dim.value.data if isinstance(op, coll.ReduceScatterOp) else None
    reasons = []
    for d, carriers in enumerate(owners(mm)):
        if d == scatter or is_split(y, d) or y.get_shape()[d] < 2:
            reasons.append(f"dimension {d} is split, scattered or too small")
            continue
        if any(is_split(mm.operands[i].type, od) for i, od in carriers):  # type: ignore[arg-type]
            reasons.append(f"dimension {d} is split in an operand")
            continue
        ranges = chunk_ranges(y.get_shape()[d], min(chunks, y.get_shape()[d]))
        props = {k: v for k, v in op.properties.items() if k != "chunks"}
        try:
            for a, b in ranges:
                shape = [b - a if e == d else s for e, s in enumerate(y.get_shape())]
                type(op).infer(y.with_shape(shape), props, mesh)
        except InferenceError as e:
            reasons.append(f"dimension {d}: {e.located(mesh.axis_names)}")
            continue
        return Plan(d, ranges)
    raise Refusal("no dimension of the matmul output can be chunked (" + "; ".join(reasons) + ")")


def overlap_matmul_then_collective(op: coll.CollectiveOp, chunks: int) -> None:
    mm = op.input.owner
    if not isinstance(mm, dt.MatmulOp):
        raise Refusal("its operand is not produced by a dtensor.matmul")
    if mm.result.uses.get_length() != 1 or mm.parent_block() is not op.parent_block():
        raise Refusal("the matmul's result has other uses or lives in another block")
    mesh = mesh_of(op)
    plan = plan_matmul_then_collective(mm, op, chunks, mesh)
    carriers = owners(mm)[plan.dim]
    new_ops: list[Operation] = []
    futures = []
    for c, (a, b) in enumerate(plan.ranges):
        operands = list(mm.operands)
        for i, od in carriers:
            piece = slice_dim(operands[i], od, a, b)
            new_ops.append(piece)
            operands[i] = piece.result
        part = dt.MatmulOp(
            operands[0], operands[1], mm.transpose_lhs is not None, mm.transpose_rhs is not None
        )
        part.attributes.update(mm.attributes)
        task = async_region(
            COMM_STREAM, [part.result], lambda args: rebuild_collective(op, args[0], mesh)
        )
        set_tag(task, derived_tag(op, f"chunk{c}"))
        new_ops += [part, task]
        futures.append(task.futures[0])
    finish(op, new_ops, futures, plan.dim)
    Rewriter.erase_op(mm)


def plan_gather_then_matmul(
    mm: dt.MatmulOp, ag: coll.AllGatherOp, operand: int, chunks: int
) -> Plan:
    x = ag.input.type
    y = mm.result.type
    assert isinstance(x, DTensorType) and isinstance(y, DTensorType)
    for d, carriers in enumerate(owners(mm)):
        dims = dict(carriers)
        if operand not in dims or is_split(y, d) or y.get_shape()[d] < 2:
            continue
        if is_split(x, dims[operand]) or any(
            is_split(mm.operands[i].type, od)
            for i, od in carriers
            if i != operand  # type: ignore[arg-type]
        ):
            continue
        return Plan(d, chunk_ranges(y.get_shape()[d], min(chunks, y.get_shape()[d])))
    raise Refusal(
        "no output dimension of the matmul can be chunked without cutting the gathered dimension"
    )


def overlap_gather_then_matmul(mm: dt.MatmulOp, chunks: int) -> None:
    gathered = [
        i
        for i, v in enumerate(mm.operands)
        if isinstance(v.owner, coll.AllGatherOp) and v.uses.get_length() == 1
    ]
    if not gathered:
        raise Refusal("no operand is an all_gather used only by this matmul")
    operand = gathered[0]
    ag = mm.operands[operand].owner
    assert isinstance(ag, coll.AllGatherOp)
    mesh = mesh_of(mm)
    plan = plan_gather_then_matmul(mm, ag, operand, chunks)
    carriers = dict(owners(mm)[plan.dim])
    new_ops: list[Operation] = []
    gathers = []
    for c, (a, b) in enumerate(plan.ranges):
        piece = slice_dim(ag.input, carriers[operand], a, b)
        task = async_region(
            COMM_STREAM, [piece.result], lambda args: rebuild_collective(ag, args[0], mesh)
        )
        set_tag(task, derived_tag(ag, f"chunk{c}"))
        new_ops += [piece, task]
        gathers.append(task.futures[0])
    parts = []
    for (a, b), future in zip(plan.ranges, gathers, strict=True):
        ready = sched.AwaitOp(future)
        operands = list(mm.operands)
        operands[operand] = ready.result
        new_ops.append(ready)
        for i, od in carriers.items():
            if i != operand:
                other = slice_dim(operands[i], od, a, b)
                new_ops.append(other)
                operands[i] = other.result
        part = dt.MatmulOp(
            operands[0], operands[1], mm.transpose_lhs is not None, mm.transpose_rhs is not None
        )
        part.attributes.update(mm.attributes)
        new_ops.append(part)
        parts.append(part.result)
    concat(mm, new_ops, parts, plan.dim)
    Rewriter.erase_op(ag)


def finish(op: Operation, new_ops: list[Operation], futures: Sequence[SSAValue], dim: int) -> None:
    """Await every chunk (after all chunks were issued) and concatenate them in place of `op`."""
    values = []
    for f in futures:
        ready = sched.AwaitOp(f)
        new_ops.append(ready)
        values.append(ready.result)
    concat(op, new_ops, values, dim)


def concat(op: Operation, new_ops: list[Operation], values: Sequence[SSAValue], dim: int) -> None:
    if len(values) > 1:
        joined = dt.ConcatOp(values, dim)
        new_ops.append(joined)
        result = joined.result
    else:
        result = values[0]
    Rewriter.insert_op(new_ops, InsertPoint.before(op))
    result.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(result)
    Rewriter.erase_op(op)


def chunk_count(op: Operation, default: int) -> int:
    chunks = getattr(op, "chunks", None)
    return chunks.value.data if chunks is not None else default


@dataclass(frozen=True)
class Overlap(ModulePass):
    """Pipeline matmul -> all_reduce/reduce_scatter, and all_gather -> matmul, in chunks on two streams."""

    name = "overlap"

    chunks: int = 4
    """Number of chunks (a collective's own `chunks` attribute takes precedence)."""

    tags: tuple[str, ...] = ()
    """Only overlap collectives with one of these `tag` attributes (then refusals are errors)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_tagged(op, self.tags, self.name)
        if self.chunks < 1:
            raise OpError(op, f"overlap needs chunks >= 1, got {self.chunks}")
        for candidate in list(op.walk()):
            if candidate.parent is None or not is_selected(candidate, self.tags):
                continue
            try:
                if isinstance(candidate, coll.AllReduceOp | coll.ReduceScatterOp):
                    overlap_matmul_then_collective(candidate, chunk_count(candidate, self.chunks))
                elif isinstance(candidate, coll.AllGatherOp) and self._gathers_into_matmul(
                    candidate
                ):
                    users = [u.operation for u in candidate.result.uses]
                    overlap_gather_then_matmul(users[0], chunk_count(candidate, self.chunks))  # type: ignore[arg-type]
                elif self.tags:
                    raise Refusal(
                        "only all_reduce or reduce_scatter after a matmul, or all_gather before one, can be overlapped"
                    )
            except Refusal as why:
                if self.tags and tag_of(candidate) in self.tags:
                    raise OpError(candidate, f"cannot overlap: {why}") from None

    @staticmethod
    def _gathers_into_matmul(ag: coll.AllGatherOp) -> bool:
        uses = list(ag.result.uses)
        return len(uses) == 1 and isinstance(uses[0].operation, dt.MatmulOp)
