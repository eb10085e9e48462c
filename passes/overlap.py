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
A fused collective (`coll.fused_all_reduce`, from fuse-collective) after a matmul is chunked the
same way - CoCoNeT's best Megatron schedule: each chunk runs reduce-scatter, the body on its
slice and all-gather on the communication stream; the body's other inputs are cut along the
chunk dimension unless they broadcast along it, and a body that draws random numbers (dropout)
sees the whole value's element indices (each chunk op carries an index box, `index_offset
[..] in [..]`: the chunk's place in the whole value), so it drops the same elements and every
chunk's body is the unchunked op's. The chunks name that body (`body @chunk_body0`), kept once
at module level as a `kernel.body` for all alike fused collectives of the module
(`ChunkBodies`), instead of each carrying a copy; convert-to-kernel's kernels name it too.

The other direction (AxoNN's overlapped all-gather, async tensor parallelism): an all_gather
feeding a matmul is chunked along a dimension that is not gathered; all chunk gathers are issued
on the communication stream and each chunk's matmul waits only for its own gather. Where both
operands are gathered, the larger gather (bytes per device; a tie: the first operand) is
pipelined and the other runs whole before it (`gather_to_pipeline`). A gathered value read
again after the matmul (a forward activation the backward pass reuses, a gradient that is also
reduced) is pipelined with the matmul that reads it first; its later uses read the gathered
chunks joined (`dtensor.concat` along the chunked dimension, which convert-to-kernel writes in
place), so nothing is gathered twice (`matmul_fed_by`).

Sequence- or batch-parallel activations (Megatron's sequence parallelism) leave no whole
dimension to chunk: the batch is split over `dp`, the sequence is the gathered dimension and
the columns are split over `tp`. With `per-rank=true` the chunks cut each rank's block of a
split dimension instead (TransformerEngine's all-gather + GEMM overlap): the dimension is seen
as [ranks, block] (`dtensor.reshape`, no data moved), chunk c takes rows [a, b) of every rank's
block, the chunk matmuls write their rows of the result seen the same way, and a reshape
gives back the result's own type:

```mlir
%xg = coll.all_gather %x over [tp] : <8x2048x4096, [S(0), S(1)]> -> <8x2048x4096, [S(0), R]>
%y = dtensor.matmul %xg, %w : ... -> <8x2048x16384, [S(0), S(2)]>
// becomes, per-rank=true, 2 chunks of each dp rank's 4 samples
%x4 = dtensor.reshape %x : <8x2048x4096, ...> -> <2x4x2048x4096, [S(0), S(2)]>
%x0 = dtensor.slice %x4 offsets [0, 0, 0, 0] sizes [2, 2, 2048, 4096] ...
%t0, %f0 = sched.execute stream 1 ins(%x0) ... { coll.all_gather ... over [tp] }
...                                  // chunk 1 likewise, then each chunk's matmul on its gather
%y4 = dtensor.concat %y0, %y1 dim 1 : ... -> <2x4x2048x16384, [S(0), S(3)]>
%y = dtensor.reshape %y4 : ... -> <8x2048x16384, [S(0), S(2)]>
```
The reduction direction has the same gap: a weight gradient reduce-scattered over `dp` (or
fused with its optimizer step: reduce-scatter, body, all-gather) has its rows scattered and
its columns split over `tp`. With `per-rank=true` the chunks are rows [a, b) of every rank's
block of a dimension the reduction leaves split: each operand that carries it, and each input
of a fused body, is reshaped to [ranks, block], sliced and merged back (`PerRankPieces`), so
the reduce-scatter of a chunk hands every rank its own block's rows; the chunks' results are
joined the same way (`per_rank_join`). A body that reads element indices (dropout) is left
whole: a rank's rows are no box of the whole value.

It is off by default because smaller gemms cost time as well (the simulator's gemm model
charges each chunk): on an f32 GPT-5B step the gathers it hides are smaller than that cost,
while on the bf16 step (optimizer state sliced) it saves 9% (README, "Predicting a program's
time"); `autotune` tries it, collective by collective, against leaving the collective whole.

Chunks are ceil-div blocks (the last may be shorter), rounded up to 16 bytes where they cut the
innermost dimension and that keeps the chunk count (`chunk_ranges`); each chunk computes exactly
the elements of the unchunked op, so the result does not depend on the chunk count. A collective's own `chunks`
attribute overrides the pass option. A dimension too short for the count asked for gets fewer
chunks (8 rows make 8 chunks of 99999999 requested; 4 rows in blocks of 2 make 2 of 3), and a
located warning (`OpWarning`) says so. One chunk reads its operands whole (no slice, which
would be a copy): the collective only moves to the communication stream.

Layers that chunk one weight alike share its chunks: a chunk of a value already sliced in the
block is read again (`Slices`, while rewriting), and after rewriting the identical slices left
(gathered chunks, the user's own) become the first of them (`share_slices`), so a model of N
layers slices each weight once, not N times.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError, OpWarning
from ccopt.dialects import coll, sched
from ccopt.dialects import dtensor as dt
from ccopt.dialects import inference as infer
from ccopt.dialects import kernel as k
from ccopt.dialects.attrs import i64_array, i64_attr
from ccopt.dialects.body import (
    ModuleBodyOp,
    body_key,
    clone_body,
    drop_unnamed_bodies,
    index_box_props,
    named_only_by,
    walk_outside_bodies,
)
from ccopt.dialects.construct import build_op, fill_op, fixed_counts, init_op, link_ops
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.dialects.inference import InferenceError
from ccopt.mesh import Mesh, block_range
from ccopt.passes.common import (
    Refusal,
    derive,
    is_selected,
    release,
    replace_uses,
    require_tagged,
    tag_of,
    warn_kernel_level,
)
from ccopt.passes.fusion_groups import shares_as_copies
from ccopt.passes.options import option

COMM_STREAM = 1
_TOKEN = sched.TokenType()
_CANDIDATES = (coll.AllReduceOp, coll.ReduceScatterOp, coll.FusedAllReduceOp, coll.AllGatherOp)


_IS_CANDIDATE: dict[type, bool] = {}


def is_candidate(op: Operation) -> bool:
    """Whether `op` is of a class the pass rewrites (`isinstance` on IRDL classes runs ABCMeta's
    Python check, for each of the classes, for every op of the module)."""
    found = _IS_CANDIDATE.get(type(op))
    if found is None:
        found = _IS_CANDIDATE[type(op)] = isinstance(op, _CANDIDATES)
    return found


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


ALIGNMENT_BYTES = 16
"""Where a chunk of the innermost dimension starts: tensor-core gemms want 16-byte aligned
operands, and on an H200 a bf16 gemm whose rows are not a multiple of 8 elements ran at 115
TFLOP/s against 764 (`bench/gemm_calibration.py`)."""


def chunk_ranges(size: int, chunks: int, align: int = 1) -> list[tuple[int, int]]:
    """Ceil-div blocks of a dimension; with `align` > 1 (elements), blocks rounded up to a
    multiple of it, unless that would make fewer chunks."""
    ranges = [block_range(size, chunks, c) for c in range(chunks)]
    ranges = [(a, b) for a, b in ranges if b > a]
    if align > 1:
        block = -(-ranges[0][1] // align) * align
        aligned = [(min(c * block, size), min((c + 1) * block, size)) for c in range(chunks)]
        aligned = [(a, b) for a, b in aligned if b > a]
        if len(aligned) == len(ranges):
            return aligned
    return ranges


def chunk_alignment(y: DTensorType, dim: int) -> int:
    """Elements per ALIGNMENT_BYTES where chunks of `dim` start in memory: the innermost
    dimension's (an outer one's chunks start at multiples of whole rows)."""
    if dim != len(y.get_shape()) - 1:
        return 1
    return max(1, ALIGNMENT_BYTES // k.element_bytes(y))


_INFERRED: dict[tuple, tuple] = {}
"""Result types of the ops chunks are made of, by their operands' types (by `id`, the types
kept in the entry so an id stays theirs) and the op's parameters: every layer of a model
chunks the same shapes, and each op's builder inferred its type again (`built`)."""


def built(
    cls: type,
    values: Sequence[SSAValue],
    operands: list,
    key: tuple,
    props: dict[str, Attribute],
    make: Callable[[], Operation],
) -> Operation:
    """An op of class `cls` on `values` (given to its builder as `operands`, one entry per
    operand definition) with properties `props`, as `make()` builds it, its result type
    inferred only the first time `key` (the parameters that decide it besides the operands'
    types) meets these operand types."""
    types = tuple([v.type for v in values])
    full = (cls, *[id(t) for t in types], *key)
    entry = _INFERRED.get(full)
    if entry is not None and entry[0] == types:  # (equal, not just the same ids)
        return build_op(cls, operands=operands, result_types=[entry[1]], properties=props)
    op = make()
    if len(_INFERRED) > 4096:
        _INFERRED.clear()
    _INFERRED[full] = (types, op.results[0].type)
    return op


def slice_dim(value: SSAValue, dim: int, start: int, stop: int) -> dt.SliceOp:
    t = value.type
    assert isinstance(t, DTensorType)
    offsets = [start if d == dim else 0 for d in range(t.rank)]
    sizes = [stop - start if d == dim else s for d, s in enumerate(t.get_shape())]
    props = {"offsets": i64_array(offsets), "sizes": i64_array(sizes)}
    return built(
        dt.SliceOp,
        [value],
        [value],
        (tuple(offsets), tuple(sizes)),
        props,
        lambda: dt.SliceOp(value, offsets, sizes),
    )  # type: ignore[return-value]


def whole(value: SSAValue, dim: int, start: int, stop: int) -> bool:
    """Whether rows [start, stop) are all of `value`'s dimension `dim`: one chunk reads the
    value itself (a slice of everything would be a copy the simulator and kernels pay for)."""
    t = value.type
    assert isinstance(t, DTensorType)
    return start == 0 and stop == t.get_shape()[dim]


class Slices:
    """The chunk slices made so far, by block, value and box: a later chunk of the same value
    in the same block reads the earlier slice (a slice is a pure function of its operand and
    box), so layers that chunk one weight alike slice it once. Only rewrites that insert their
    ops right before the op they replace use it: ops are rewritten in program order, so an
    earlier slice precedes every later one's position."""

    def __init__(self) -> None:
        self.made: dict[tuple, dt.SliceOp] = {}

    def get(
        self, value: SSAValue, dim: int, start: int, stop: int, block: Block, new_ops: list
    ) -> SSAValue:
        """`value`'s rows [start, stop) along `dim`: an earlier slice, or a new one in
        `new_ops` (to be inserted in `block`)."""
        if whole(value, dim, start, stop):
            return value
        key = (id(block), value, dim, start, stop)
        piece = self.made.get(key)
        if piece is None or piece.parent is not block:
            piece = self.made[key] = slice_dim(value, dim, start, stop)
            new_ops.append(piece)
        return piece.result


def chunk_of(
    value: SSAValue,
    dim: int,
    start: int,
    stop: int,
    new_ops: list[Operation],
    slices: Slices | None = None,
    block: Block | None = None,
) -> SSAValue:
    """`value`'s rows [start, stop) along `dim`: an earlier slice in `block` (`slices`), or a
    new one in `new_ops`."""
    if slices is not None and block is not None:
        return slices.get(value, dim, start, stop, block, new_ops)
    if whole(value, dim, start, stop):
        return value
    piece = slice_dim(value, dim, start, stop)
    new_ops.append(piece)
    return piece.result


def matmul(lhs: SSAValue, rhs: SSAValue, transpose_lhs: bool, transpose_rhs: bool) -> dt.MatmulOp:
    """`dt.MatmulOp(lhs, rhs, transpose_lhs, transpose_rhs)` (its type inferred once, `built`)."""
    props: dict[str, Attribute] = {}
    if transpose_lhs:
        props["transpose_lhs"] = UnitAttr()
    if transpose_rhs:
        props["transpose_rhs"] = UnitAttr()
    return built(
        dt.MatmulOp,
        [lhs, rhs],
        [lhs, rhs],
        (transpose_lhs, transpose_rhs),
        props,
        lambda: dt.MatmulOp(lhs, rhs, transpose_lhs, transpose_rhs),
    )  # type: ignore[return-value]


def concat_op(values: Sequence[SSAValue], dim: int) -> dt.ConcatOp:
    """`dt.ConcatOp(values, dim)` (its type inferred once, `built`)."""
    return built(
        dt.ConcatOp,
        values,
        [list(values)],
        (dim,),
        {"dim": i64_attr(dim)},
        lambda: dt.ConcatOp(values, dim),
    )  # type: ignore[return-value]


_FUTURES: dict[int, tuple[Attribute, sched.FutureType]] = {}
"""`sched.FutureType(t)` by `id(t)` (with `t`, so the id stays its): a model's chunks await
the same few types, and building a uniqued type still hashes its parameters."""


def future_type(t: Attribute) -> sched.FutureType:
    """`sched.FutureType(t)`, shared (`_FUTURES`)."""
    entry = _FUTURES.get(id(t))
    if entry is None or entry[0] is not t:
        if len(_FUTURES) > 4096:
            _FUTURES.clear()
        entry = _FUTURES[id(t)] = (t, sched.FutureType(t))
    return entry[1]


def async_region(
    stream: int, inputs: Sequence[SSAValue], build: Callable[[Sequence[SSAValue]], Operation]
) -> sched.ExecuteOp:
    """`sched.execute` whose body is the one op `build` makes from the region's arguments
    (built as `sched.ExecuteOp(stream, inputs, types, body)` builds it, with its types and
    stream attribute shared: every chunk of a model makes one)."""
    block = Block(arg_types=[v.type for v in inputs])
    inner = build(block.args)
    done = sched.YieldOp.__new__(sched.YieldOp)
    values = list(inner.results)
    fill_op(done, values, (len(values),), [], {}, [])
    link_ops(block, [inner, done])
    task = sched.ExecuteOp.__new__(sched.ExecuteOp)
    fill_op(
        task,
        list(inputs),
        (0, len(inputs)),
        [_TOKEN, *[future_type(r.type) for r in inner.results]],
        {"stream": k.stream_attr(stream)},
        [Region(block)],
    )
    return task


def rebuild_collective(
    op: coll.CollectiveOp,
    value: SSAValue,
    mesh: Mesh,
    inferred: dict[DTensorType, DTensorType] | None = None,
) -> coll.CollectiveOp:
    """The same collective (kind, axes, algorithm) on another operand; the `chunks` request is
    consumed by chunking. `inferred`: result types planning already inferred, by operand type."""
    props = {k: v for k, v in op.properties.items() if k != "chunks"}
    t = value.type
    assert isinstance(t, DTensorType)
    result = None if inferred is None else inferred.get(t)
    if result is None:
        try:
            result = type(op).infer(t, props, mesh)
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names)) from None
    cls = type(op)
    if fixed_counts(cls) == (1, 1, 0):  # (one operand and result: built without xDSL's generic
        new = cls.__new__(cls)  # `Operation.__init__`, as `create` builds it)
        init_op(
            new,
            operands=[value],
            result_types=[result],
            properties=props,
            attributes=dict(op.attributes),
        )
        return new
    return cls.create(
        operands=[value], result_types=[result], properties=props, attributes=dict(op.attributes)
    )


@dataclass
class Plan:
    dim: int  # result dimension the chunks cut
    ranges: list[tuple[int, int]]
    factor: int | None = None
    """Ranks that split the cut dimension where the chunks cut each rank's block of it (the
    dimension seen as [factor, block], `per_rank_plan`; `ranges` are then within a block);
    None: the chunks cut the whole dimension."""


class Plans:
    """What one run of the pass planned (or refused), by everything a plan depends on - the
    types of the ops involved, the collective's class and properties, the chunk count and the
    mesh: a model's layers chunk the same shapes, and each was planned again (every candidate
    dimension tried, each chunk's collective inferred). Values: (plan, what the rewrite reads
    of the planning, e.g. inferred types) or the refusal's message."""

    def __init__(self) -> None:
        self.known: dict[tuple, tuple[Plan, object] | str] = {}

    def get(self, key: tuple, plan: Callable[[], tuple[Plan, object]]) -> tuple[Plan, object]:
        """The plan for `key`, made by `plan()` the first time (a Refusal is remembered too)."""
        found = self.known.get(key)
        if found is None:
            try:
                found = plan()
            except Refusal as why:
                found = str(why)
            self.known[key] = found
        if isinstance(found, str):
            raise Refusal(found)
        return found


def matmul_key(mm: dt.MatmulOp) -> tuple:
    """What of a matmul decides its chunking: its operand and result types, its transposes."""
    return (
        mm.lhs.type,
        mm.rhs.type,
        mm.result.type,
        mm.transpose_lhs is not None,
        mm.transpose_rhs is not None,
    )


def plan_matmul_chunks(
    mm: dt.MatmulOp,
    scatter: int | None,
    chunks: int,
    mesh: Mesh,
    fits: Callable[[DTensorType], object],
    cut_elsewhere: Callable[[int], bool] = lambda d: False,
) -> Plan:
    """The first matmul output dimension that is not split (in the output or an operand), not
    scattered, not cut in some other input (`cut_elsewhere`), and whose every chunk the
    consumer accepts (`fits` raises InferenceError otherwise): the outermost, whose chunks are
    contiguous, even where an inner one would make more (`warn_fewer_chunks` says so)."""
    y = mm.result.type
    assert isinstance(y, DTensorType)
    reasons = []
    for d, carriers in enumerate(owners(mm)):
        if d == scatter or is_split(y, d) or y.get_shape()[d] < 2:
            reasons.append(f"dimension {d} is split, scattered or too small")
            continue
        if any(is_split(mm.operands[i].type, od) for i, od in carriers):  # type: ignore[arg-type]
            reasons.append(f"dimension {d} is split in an operand")
            continue
        if cut_elsewhere(d):
            reasons.append(f"dimension {d} is split in an input of the body")
            continue
        ranges = chunk_ranges(
            y.get_shape()[d], min(chunks, y.get_shape()[d]), chunk_alignment(y, d)
        )
        try:
            for a, b in ranges:
                fits(y.with_shape(chunk_shape(y, d, a, b)))
        except InferenceError as e:
            reasons.append(f"dimension {d}: {e.located(mesh.axis_names)}")
            continue
        return Plan(d, ranges)
    raise Refusal("no dimension of the matmul output can be chunked (" + "; ".join(reasons) + ")")


def plan_matmul_then_collective(
    mm: dt.MatmulOp,
    op: coll.CollectiveOp,
    chunks: int,
    mesh: Mesh,
    inferred: dict[DTensorType, DTensorType] | None = None,
    per_rank: bool = False,
) -> Plan:
    """The chunks of a matmul that feeds collective `op`; the collective's result type on
    each chunk tried goes into `inferred` (the rewrite builds those collectives). Where no
    whole dimension can be chunked and `per_rank`, chunks of each rank's block of one
    (`per_rank_reduction_plan`)."""
    scatter = op.dim.value.data if isinstance(op, coll.ReduceScatterOp) else None
    props = {k: v for k, v in op.properties.items() if k != "chunks"}
    known = {} if inferred is None else inferred

    def fits(t: DTensorType) -> DTensorType:
        result = known.get(t)  # (chunks of equal length have one type)
        if result is None:
            result = known[t] = type(op).infer(t, props, mesh)
        return result

    try:
        return plan_matmul_chunks(mm, scatter, chunks, mesh, fits)
    except Refusal as why:
        if not per_rank:
            raise
        result = op.results[0].type
        assert isinstance(result, DTensorType)
        plan = per_rank_reduction_plan(mm, chunks, mesh, result, lambda t: [fits(t)], [result])
        if plan is None:
            raise Refusal(f"{why}, nor each rank's block of one") from None
        return plan


def per_rank_reduction_plan(
    mm: dt.MatmulOp,
    chunks: int,
    mesh: Mesh,
    reduced: DTensorType,
    chunk_results: Callable[[DTensorType], Sequence[DTensorType]],
    outputs: Sequence[DTensorType],
    inputs: Sequence[SSAValue] = (),
) -> Plan | None:
    """Chunks of each rank's block of a matmul output dimension that the reduction leaves split
    (`reduced`: its result, or a fused collective's iteration space), where every dimension is
    split or scattered (a weight gradient reduce-scattered over `dp`, its columns split over
    `tp`): the dimension is seen as [n, size / n] for the n ranks that end up holding its
    blocks, and chunk c is rows [a, b) of every block - the carrying operands' rows, and the
    fused body's inputs', taken the same way (`PerRankPieces`), so each rank's reduced chunk
    is its own block's rows. `chunk_results`: the reduction's result types on a partial chunk;
    `outputs`: its results, which the chunks joined (`per_rank_join`) must give back. Every
    type on the way is inferred first. None: no such dimension."""
    y = mm.result.type
    assert isinstance(y, DTensorType)
    sizes = mesh.axis_sizes
    tl, tr = mm.transpose_lhs is not None, mm.transpose_rhs is not None
    for d, carriers in enumerate(owners(mm)):
        n = prod(s for s, p in zip(sizes, reduced.placement_list, strict=True) if p.split_dim == d)
        size = y.get_shape()[d]
        if n < 2 or size % n or size // n < 2:
            continue
        ranges = chunk_ranges(size // n, min(chunks, size // n))
        dims = [(v.type, input_dim(v, d, y)) for v in inputs]
        try:
            parts = []
            for a, b in ranges:
                operands = [v.type for v in mm.operands]
                for i, od in carriers:
                    operands[i] = per_rank_piece_type(operands[i], od, n, a, b, sizes)  # type: ignore[arg-type]
                for t, e in dims:
                    if e is not None:
                        per_rank_piece_type(t, e, n, a, b, sizes)  # type: ignore[arg-type]
                part = infer.infer_matmul(operands[0], operands[1], tl, tr)  # type: ignore[arg-type]
                parts.append(chunk_results(part))
            for r, whole in enumerate(outputs):
                per_rank_join_type([p[r] for p in parts], d, n, whole, sizes)
        except InferenceError:
            continue
        return Plan(d, ranges, n)
    return None


def per_rank_piece_type(
    t: DTensorType, dim: int, n: int, a: int, b: int, sizes: Sequence[int]
) -> DTensorType:
    """The type of `PerRankPieces.piece` (InferenceError where a step breaks)."""
    shaped = infer.infer_reshape(t, per_rank_shape(t, dim, n), sizes)
    offsets = [a if i == dim + 1 else 0 for i in range(shaped.rank)]
    box = [b - a if i == dim + 1 else s for i, s in enumerate(shaped.get_shape())]
    piece = infer.infer_slice(shaped, offsets, box)
    return infer.infer_reshape(piece, chunk_shape(t, dim, 0, n * (b - a)), sizes)


def per_rank_join_type(
    types: Sequence[DTensorType], dim: int, n: int, whole: DTensorType, sizes: Sequence[int]
) -> None:
    """Check that `per_rank_join` of chunks of these types gives `whole` (InferenceError)."""
    shaped = [infer.infer_reshape(t, per_rank_shape(t, dim, n), sizes) for t in types]
    together = infer.infer_concat(shaped, dim + 1) if len(shaped) > 1 else shaped[0]
    if infer.infer_reshape(together, whole.get_shape(), sizes) != whole:
        raise InferenceError(f"the chunks joined are not {whole}")


class PerRankPieces:
    """The per-rank pieces of one rewrite: rows [a, b) of each of the `n` blocks of a
    dimension, for the ops made into `new_ops` (`piece`, `matmul`); the reshape of a value to
    [n, size / n] is made once per value and dimension."""

    def __init__(self, n: int, new_ops: list[Operation], mesh: Mesh) -> None:
        self.n, self.new_ops, self.mesh = n, new_ops, mesh
        self.shaped: dict[tuple[SSAValue, int], SSAValue] = {}

    def piece(self, value: SSAValue, dim: int, a: int, b: int) -> SSAValue:
        """Rows [a, b) of each block of `value`'s dimension `dim`, as one dimension of
        n * (b - a) rows: `value` seen as [n, size / n] there (a reshape), sliced, and merged
        back - a split dimension keeps its split, each rank holding its own block's rows."""
        t = value.type
        assert isinstance(t, DTensorType)
        if a == 0 and b * self.n == t.get_shape()[dim]:
            return value
        shaped = self.shaped.get((value, dim))
        if shaped is None:
            reshape = dt.ReshapeOp(value, per_rank_shape(t, dim, self.n), self.mesh)
            self.new_ops.append(reshape)
            shaped = self.shaped[(value, dim)] = reshape.result
        piece = slice_dim(shaped, dim + 1, a, b)
        merged = dt.ReshapeOp(piece.result, chunk_shape(t, dim, 0, self.n * (b - a)), self.mesh)
        self.new_ops += [piece, merged]
        return merged.result

    def matmul(
        self, mm: dt.MatmulOp, carriers: Sequence[tuple[int, int]], a: int, b: int
    ) -> dt.MatmulOp:
        """`mm` on rows [a, b) of each block of its carrying operands' dimension."""
        operands = list(mm.operands)
        for i, od in carriers:
            operands[i] = self.piece(operands[i], od, a, b)
        part = matmul(
            operands[0], operands[1], mm.transpose_lhs is not None, mm.transpose_rhs is not None
        )
        part.attributes.update(mm.attributes)
        self.new_ops.append(part)
        return part


def per_rank_join(
    values: Sequence[SSAValue],
    dim: int,
    n: int,
    whole: Attribute,
    new_ops: list[Operation],
    mesh: Mesh,
) -> SSAValue:
    """The inverse of `PerRankPieces.piece` over all chunks: each chunk seen as [n, rows], the
    chunks concatenated along the rows, and the result reshaped to the type `whole`."""
    shaped = []
    for v in values:
        t = v.type
        assert isinstance(t, DTensorType)
        r = dt.ReshapeOp(v, per_rank_shape(t, dim, n), mesh)
        new_ops.append(r)
        shaped.append(r.result)
    return joined(shaped, dim + 1, whole, new_ops, mesh)


def producing_matmul(op: Operation, value: SSAValue, what: str) -> dt.MatmulOp:
    """The matmul whose only use is `op` (in its block), or Refusal."""
    mm = value.owner
    if not isinstance(mm, dt.MatmulOp):
        raise Refusal(f"{what} is not produced by a dtensor.matmul")
    if mm.result.uses.get_length() != 1 or mm.parent_block() is not op.parent_block():
        raise Refusal("the matmul's result has other uses or lives in another block")
    return mm


def overlap_matmul_then_collective(
    op: coll.CollectiveOp,
    chunks: int,
    plans: Plans | None = None,
    slices: Slices | None = None,
    per_rank: bool = False,
) -> Plan:
    mm = producing_matmul(op, op.input, "its operand")
    mesh = mesh_of(op)

    def plan_it() -> tuple[Plan, dict[DTensorType, DTensorType]]:
        inferred: dict[DTensorType, DTensorType] = {}
        return plan_matmul_then_collective(mm, op, chunks, mesh, inferred, per_rank), inferred

    if plans is None:
        plan, inferred = plan_it()
    else:
        key = (type(op), *matmul_key(mm), tuple(op.properties.items()), chunks, mesh, per_rank)
        plan, inferred = plans.get(key, plan_it)  # type: ignore[assignment]
    carriers = owners(mm)[plan.dim]
    new_ops: list[Operation] = []
    futures = []
    block = op.parent
    pieces = None if plan.factor is None else PerRankPieces(plan.factor, new_ops, mesh)
    for c, (a, b) in enumerate(plan.ranges):
        if pieces is not None:
            part = pieces.matmul(mm, carriers, a, b)
        else:
            part = chunk_matmul(mm, carriers, a, b, new_ops, None, slices, block)
        task = async_region(
            COMM_STREAM,
            [part.result],
            lambda args: rebuild_collective(op, args[0], mesh, inferred),
        )
        derive(task, op, f"chunk{c}")
        new_ops.append(task)
        futures.append(task.results[1])  # (its first future: the token comes first)
    finish(op, new_ops, futures, plan, mesh)
    Rewriter.erase_op(mm)
    release(mm)
    return plan


def plan_matmul_then_fused(
    mm: dt.MatmulOp,
    op: coll.FusedAllReduceOp,
    chunks: int,
    mesh: Mesh,
    types: Callable[[DTensorType], object] | None = None,
    per_rank: bool = False,
) -> Plan:
    """As for a reduce-scatter, and every other input of the body must be cut along the chunk
    dimension too (or broadcast along it). `types`: the chunks' result types (`ChunkTypes`)."""
    y = mm.result.type
    assert isinstance(y, DTensorType)

    def cut_elsewhere(d: int) -> bool:
        dims = [(v, input_dim(v, d, y)) for v in op.inputs]
        return any(e is not None and is_split(v.type, e) for v, e in dims)  # type: ignore[arg-type]

    chunk_types = types if types is not None else lambda t: chunk_result_types(op, t, mesh)
    try:
        return plan_matmul_chunks(mm, op.dim.value.data, chunks, mesh, chunk_types, cut_elsewhere)
    except Refusal as why:
        if not per_rank:
            raise
        if op.body_block().args[0].uses:  # (dropout: an index box cannot hold a rank's block)
            raise Refusal(
                f"{why}, nor each rank's block of one: the body reads element indices"
            ) from None
        plan = per_rank_reduction_plan(
            mm,
            chunks,
            mesh,
            op.iteration_type(mesh),
            chunk_types,  # type: ignore[arg-type]
            [r.type for r in op.outputs],  # type: ignore[misc]
            op.inputs,
        )
        if plan is None:
            raise Refusal(f"{why}, nor each rank's block of one") from None
        return plan


def chunk_shape(t: DTensorType, dim: int, start: int, stop: int) -> list[int]:
    return [stop - start if e == dim else s for e, s in enumerate(t.get_shape())]


def input_dim(value: SSAValue, dim: int, iteration: DTensorType) -> int | None:
    """The dimension of a body input that `dim` of the iteration space runs along, or None
    when the input is broadcast along it (it lacks the dimension or has size 1 there)."""
    t = value.type
    assert isinstance(t, DTensorType)
    d = dim - (iteration.rank - t.rank)
    if d < 0 or (t.get_shape()[d] == 1 and iteration.get_shape()[dim] != 1):
        return None
    return d


def chunk_result_types(
    op: coll.FusedAllReduceOp, partial: DTensorType, mesh: Mesh
) -> list[DTensorType]:
    """The fused op's result types on a chunk of its partial operand: slice or gathered."""
    whole = op.iteration_type(mesh)
    iteration = coll.ReduceScatterOp.infer(partial, op.properties, mesh)
    gathered = coll.AllGatherOp.infer(iteration, {"axes": op.axes}, mesh)
    return [iteration if r.type == whole else gathered for r in op.outputs]  # type: ignore[misc]


class ChunkTypes:
    """`chunk_result_types` of one fused op, by chunk type: planning tries every chunk and the
    rewrite builds every chunk, and chunks of equal length have one type (each inference
    hashes the types and properties)."""

    def __init__(self, op: coll.FusedAllReduceOp, mesh: Mesh) -> None:
        self.mesh = mesh
        self.properties = dict(op.properties)
        self.axes = {"axes": op.axes}
        whole = op.iteration_type(mesh)
        self.sliced = [r.type == whole for r in op.outputs]  # (kept whole per chunk, or gathered)
        self.known: dict[DTensorType, list[DTensorType]] = {}

    def __call__(self, partial: DTensorType) -> list[DTensorType]:
        """`chunk_result_types(op, partial, mesh)`."""
        found = self.known.get(partial)
        if found is None:
            iteration = coll.ReduceScatterOp.infer(partial, self.properties, self.mesh)
            gathered = coll.AllGatherOp.infer(iteration, self.axes, self.mesh)
            found = [iteration if s else gathered for s in self.sliced]
            self.known[partial] = found
        return found


def chunk_index_box(
    op: coll.FusedAllReduceOp, shape: Sequence[int], dim: int, start: int
) -> dict[str, Attribute]:
    """A chunk's body sees element indices of the chunk; dropout keys on the element's index in
    the whole value, so the chunk op gets an index box: the chunk at `start` along `dim` of the
    whole value (or of the box the unchunked op already had). Every chunk then runs the
    unchunked op's body unchanged."""
    box = op.index_box()
    offsets, whole = ([0] * len(shape), list(shape)) if box is None else map(list, box)
    offsets[dim] += start
    return index_box_props(offsets, whole)


class ChunkBodies:
    """The module-level bodies (`kernel.body`) that chunks of fused collectives name: one per
    distinct body (`body_key`), so the chunks of one op, and of every alike op of the module (a
    model's layers), share one body instead of each carrying a copy - the copies were most of
    the overlapped module, the pipeline's peak memory. A body that is not self-contained
    (`body_key` None) is copied per chunk."""

    def __init__(self, module: ModuleOp) -> None:
        from ccopt.passes.convert_to_kernel import BodyNames

        self.module = module
        self.names = BodyNames(module, "chunk_body")
        self.by_key: dict[object, str] = {}
        self.last: tuple[object, str | None] = (None, None)  # the last key looked up, its name
        # (chunks name their own, as without: `shares_as_copies`)
        self.skipped = named_only_by(module, shares_as_copies)
        self.copied: set[str] = set()  # skipped bodies copied for chunks: orphans, maybe
        for o in module.ops:
            if isinstance(o, ModuleBodyOp) and o.sym_name.data not in self.skipped:  # type: ignore[attr-defined]
                key = body_key(o.body_block())
                if key is not None:
                    self.by_key.setdefault(key, o.sym_name.data)  # type: ignore[attr-defined]

    def name_of(self, op: coll.FusedAllReduceOp) -> str | None:
        """The name of the body `op`'s chunks run; `op`'s own body (it is erased after its
        chunks) becomes that body or is released. None for a body to copy per chunk. A body
        fuse-collective shared (`skipped`) counts as `op`'s own: its copy, if one is needed."""
        named = op.body_name()
        if named is not None and named not in self.skipped:
            return named
        key = body_key(op.body_block())
        if key is None:
            return named
        last_key, name = self.last
        if key != last_key:  # (alike ops come in a row: equal keys compare faster than they hash)
            name = self.by_key.get(key)
        if named is not None:
            region = None
        else:
            region = op.detach_region(op.regions[0])
        if name is not None:
            if region is not None:
                release(region)  # (self-contained, as it has a key: nothing outside uses it)
            self.last = (key, name)
            return name
        if region is None:
            region = clone_body(op.body_block().parent)  # type: ignore[arg-type]
            self.copied.add(named)  # type: ignore[arg-type]
        name = self.by_key[key] = self.names.fresh()
        self.last = (key, name)
        self.module.body.block.add_op(k.BodyOp(name, region))
        return name

    def drop_copied(self) -> None:
        """Erase and free the shared bodies copied for chunks that no op names any more."""
        if self.copied:
            for body in drop_unnamed_bodies(self.module, self.copied):
                release(body)


def overlap_matmul_then_fused(
    op: coll.FusedAllReduceOp,
    chunks: int,
    bodies: ChunkBodies | None = None,
    plans: Plans | None = None,
    slices: Slices | None = None,
    per_rank: bool = False,
) -> Plan:
    """Each chunk of the matmul feeds its own fused collective (reduce-scatter, body on the
    slice, all-gather) on the communication stream; the outputs are joined chunk by chunk.
    With `bodies` the chunks name one shared body (`ChunkBodies`), else each has a copy."""
    mm = producing_matmul(op, op.partial, "its partial operand")
    mesh = mesh_of(op)

    def plan_it() -> tuple[Plan, ChunkTypes]:
        types = ChunkTypes(op, mesh)
        return plan_matmul_then_fused(mm, op, chunks, mesh, types, per_rank), types

    if plans is None:
        plan, result_types = plan_it()
    else:
        key = (
            type(op),
            *matmul_key(mm),
            tuple(op.properties.items()),
            tuple([v.type for v in op.inputs]),
            tuple([r.type for r in op.outputs]),
            chunks,
            mesh,
            per_rank,
        )
        plan, result_types = plans.get(key, plan_it)  # type: ignore[assignment]
    y = mm.result.type
    assert isinstance(y, DTensorType)
    carriers = owners(mm)[plan.dim]
    new_ops: list[Operation] = []
    futures: list[Sequence[SSAValue]] = []
    shared = bodies.name_of(op) if bodies is not None else op.body_name()
    ref = None if shared is None else SymbolRefAttr(shared)
    dims = [input_dim(v, plan.dim, y) for v in op.inputs]
    block = op.parent
    n = plan.factor
    pieces = None if n is None else PerRankPieces(n, new_ops, mesh)
    for c, (a, b) in enumerate(plan.ranges):
        inputs = []
        if n is None:
            part = chunk_matmul(mm, carriers, a, b, new_ops, None, slices, block)
            for v, d in zip(op.inputs, dims, strict=True):
                inputs.append(v if d is None else chunk_of(v, d, a, b, new_ops, slices, block))
            box = chunk_index_box(op, y.get_shape(), plan.dim, a)
        else:  # (each rank's block's rows; the body reads no index: no box)
            assert pieces is not None
            part = pieces.matmul(mm, carriers, a, b)
            for v, d in zip(op.inputs, dims, strict=True):
                inputs.append(v if d is None else pieces.piece(v, d, a, b))
            box = {}
        types = result_types(part.result.type)  # type: ignore[arg-type]
        body = ref if ref is not None else chunk_body(op, c == len(plan.ranges) - 1)
        props = chunk_properties(op, box, body)

        def build(
            args: Sequence[SSAValue],
            types: list[DTensorType] = types,
            body: Attribute | Region = body,
            props: dict[str, Attribute] = props,
        ) -> Operation:
            return fused_chunk(op, args, types, props, body)

        task = async_region(COMM_STREAM, [part.result, *inputs], build)
        derive(task, op, f"chunk{c}")
        new_ops.append(task)
        futures.append(task.results[1:])  # (its futures: the token comes first)
    ready: list[list[SSAValue]] = [[] for _ in op.outputs]
    for chunk_futures in futures:
        for r, f in enumerate(chunk_futures):
            wait = sched.AwaitOp(f)
            new_ops.append(wait)
            ready[r].append(wait.result)
    if n is not None:
        ready = [
            [per_rank_join(values, plan.dim, n, r.type, new_ops, mesh)]
            for values, r in zip(ready, op.outputs, strict=True)
        ]
    join(op, new_ops, ready, plan.dim)
    Rewriter.erase_op(mm)
    release(mm)
    return plan


def chunk_properties(
    op: coll.FusedAllReduceOp, box: dict[str, Attribute], body: Attribute | Region
) -> dict[str, Attribute]:
    """The properties of a chunk of `op` (as `coll.FusedAllReduceOp(...)` builds them from
    `op`'s kind, axes, dim and algorithm): `op`'s own attributes, not new equal ones; the
    `chunks` request is consumed. `body`: the reference to the named body, or the region."""
    props: dict[str, Attribute] = {"kind": op.kind, "axes": op.axes, "dim": op.dim, **box}
    if op.algorithm is not None:
        props["algorithm"] = op.algorithm
    if not isinstance(body, Region):
        props["body_ref"] = body
    return props


def fused_chunk(
    op: coll.FusedAllReduceOp,
    args: Sequence[SSAValue],
    types: Sequence[DTensorType],
    props: dict[str, Attribute],
    body: Attribute | Region,
) -> coll.FusedAllReduceOp:
    """A chunk of `op` on `args` (the partial chunk, then the other inputs)."""
    fused = coll.FusedAllReduceOp.__new__(coll.FusedAllReduceOp)
    init_op(
        fused,
        operands=[args[0], list(args[1:])],
        result_types=[list(types)],
        properties=props,
        attributes=dict(op.attributes),
        regions=[body if isinstance(body, Region) else None],
    )
    return fused


def chunk_body(op: coll.FusedAllReduceOp, last: bool) -> Region:
    """The body for one chunk of `op`: a copy, except that the last chunk takes the original
    (`op` is erased after it), so a body of n chunks is copied n - 1 times, not n."""
    if not last:
        return clone_body(op.body)
    body = Region()
    op.body.move_blocks(body)
    return body


def chunk_matmul(
    mm: dt.MatmulOp,
    carriers: Sequence[tuple[int, int]],
    a: int,
    b: int,
    new_ops: list[Operation],
    given: dict[int, SSAValue] | None = None,
    slices: Slices | None = None,
    block: Block | None = None,
) -> dt.MatmulOp:
    """The matmul on rows (or columns, or batches) [a, b) of the carrying operands; operands in
    `given` are already that chunk (a gathered piece); `slices`: earlier chunks of an operand in
    `block` are read again."""
    given = given or {}
    operands = [given.get(i, v) for i, v in enumerate(mm.operands)]
    for i, od in carriers:
        if i in given:
            continue
        operands[i] = chunk_of(operands[i], od, a, b, new_ops, slices, block)
    part = matmul(
        operands[0], operands[1], mm.transpose_lhs is not None, mm.transpose_rhs is not None
    )
    part.attributes.update(mm.attributes)
    new_ops.append(part)
    return part


def plan_gather_then_matmul(
    mm: dt.MatmulOp, ag: coll.AllGatherOp, operand: int, chunks: int, per_rank: bool = False
) -> Plan:
    """Chunks of an output dimension of `mm` that the gathered operand carries whole (not
    split before the gather, nor split in any operand or the result); where there is none and
    `per_rank`, chunks of each rank's block of one (`per_rank_plan`)."""
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
        size = y.get_shape()[d]
        return Plan(d, chunk_ranges(size, min(chunks, size), chunk_alignment(y, d)))
    why = "no output dimension of the matmul can be chunked without cutting the gathered dimension"
    if not per_rank:
        raise Refusal(f"{why} (per-rank=true chunks each rank's block of a split one)")
    plan = per_rank_plan(mm, ag, operand, chunks, mesh_of(mm))
    if plan is None:
        raise Refusal(
            f"{why}, nor each rank's block of one: that needs the left operand gathered, a "
            "rank-2 right operand, and a batch or row dimension split into blocks of 2 or more"
        )
    return plan


def per_rank_plan(
    mm: dt.MatmulOp, ag: coll.AllGatherOp, operand: int, chunks: int, mesh: Mesh
) -> Plan | None:
    """Chunks of each rank's block of a split dimension (Megatron's sequence-parallel
    activations: split along the sequence or the batch, gathered before the matmul), where no
    whole dimension can be cut: a dimension `e` of the gathered operand split over n ranks is
    seen as [n, size / n] (`dtensor.reshape` keeps each rank's block whole), and the chunks cut
    the second factor - chunk c is the c-th part of every rank's block, gathered from all of
    them (TransformerEngine's all-gather + GEMM overlap). Only the left operand, under a rank-2
    right one (it broadcasts over the extra dimension), along a batch dimension or its rows.
    Every type on the way is inferred first, so the rewrite cannot fail. None: no such dimension."""
    lhs, rhs, x = mm.lhs.type, mm.rhs.type, ag.input.type
    y = mm.result.type
    assert isinstance(x, DTensorType) and isinstance(y, DTensorType)
    assert isinstance(lhs, DTensorType) and isinstance(rhs, DTensorType)
    if operand != 0 or rhs.rank != 2:
        return None
    rows = lhs.rank - 2
    sizes = mesh.axis_sizes
    for d, carriers in enumerate(owners(mm)):
        if carriers != [(0, d)] or d > rows or (d == rows and mm.transpose_lhs is not None):
            continue
        n = prod(s for s, p in zip(sizes, x.placement_list, strict=True) if p.split_dim == d)
        size = x.get_shape()[d]
        if n < 2 or size % n or size // n < 2:
            continue
        ranges = chunk_ranges(size // n, min(chunks, size // n))
        try:
            infer_per_rank_chunks(mm, ag, d, n, ranges, mesh)
        except InferenceError:
            continue
        return Plan(d, ranges, n)
    return None


def per_rank_shape(t: DTensorType, dim: int, n: int) -> list[int]:
    """`t`'s shape with dimension `dim` seen as [n, size / n]."""
    shape = list(t.get_shape())
    return [*shape[:dim], n, shape[dim] // n, *shape[dim + 1 :]]


def infer_per_rank_chunks(
    mm: dt.MatmulOp,
    ag: coll.AllGatherOp,
    dim: int,
    n: int,
    ranges: Sequence[tuple[int, int]],
    mesh: Mesh,
) -> None:
    """Infer every type of `per_rank_plan`'s rewrite (InferenceError where one breaks): the
    reshaped gather input, each chunk's slice, gather and matmul, and the joined result (and
    gathered value) reshaped back to the matmul's (and the gather's) own types."""
    x, xg, y, rhs = ag.input.type, ag.result.type, mm.result.type, mm.rhs.type
    assert isinstance(x, DTensorType) and isinstance(xg, DTensorType)
    assert isinstance(y, DTensorType) and isinstance(rhs, DTensorType)
    sizes = mesh.axis_sizes
    shaped = infer.infer_reshape(x, per_rank_shape(x, dim, n), sizes)
    props = {k: v for k, v in ag.properties.items() if k != "chunks"}
    parts, gathered = [], []
    for a, b in ranges:
        offsets = [a if i == dim + 1 else 0 for i in range(shaped.rank)]
        box = [b - a if i == dim + 1 else s for i, s in enumerate(shaped.get_shape())]
        piece = type(ag).infer(infer.infer_slice(shaped, offsets, box), props, mesh)
        gathered.append(piece)
        parts.append(
            infer.infer_matmul(
                piece, rhs, mm.transpose_lhs is not None, mm.transpose_rhs is not None
            )
        )
    for chunks, whole in ((parts, y), (gathered, xg)):
        joined = infer.infer_concat(chunks, dim + 1) if len(chunks) > 1 else chunks[0]
        if infer.infer_reshape(joined, whole.get_shape(), sizes) != whole:
            raise InferenceError(f"the chunks joined are not {whole}")


def gathered_bytes(before: DTensorType, after: DTensorType, mesh: Mesh) -> Fraction:
    """Bytes an all-gather from `before` to `after` brings to each device (its output block
    less its input block, by the byte model: the global bytes over the shards), exactly, so
    the pass and `auto-shard`'s credit (`ccopt.passes.overlap_credit`) break ties alike."""
    from ccopt.dialects.kernel import element_bytes

    def shards(t: DTensorType) -> int:
        return prod(
            n for n, p in zip(mesh.axis_sizes, t.split_dims(), strict=True) if p is not None
        )

    whole = prod(before.get_shape()) * element_bytes(before)
    return Fraction(whole, shards(after)) - Fraction(whole, shards(before))


def first_user(ag: coll.AllGatherOp) -> Operation | None:
    """The op of the gather's block that first reads its result (itself or an op it nests),
    found by walking forward from the gather: the walk ends at the first use, usually the next
    op, so it costs the distance to that use, not the block's length."""
    block = ag.parent
    if block is None:
        return None
    users = {block.find_ancestor_op_in_block(use.operation) for use in ag.result.uses}
    op = ag.next_op
    while op is not None and op not in users:
        op = op.next_op
    return op


def matmul_fed_by(ag: coll.AllGatherOp) -> dt.MatmulOp | None:
    """The matmul the pass may pipeline `ag` with: its only use, or - a value read again later
    - its first user, in its block, reading it as one operand (the later uses then read the
    chunks joined, which exist only once every chunk arrived). None: no such matmul, e.g.
    where another op reads the whole gathered value before any matmul."""
    uses = ag.result.uses
    if uses.get_length() == 1:
        (use,) = uses
        return use.operation if isinstance(use.operation, dt.MatmulOp) else None
    mm = first_user(ag)
    if not isinstance(mm, dt.MatmulOp) or tuple(mm.operands).count(ag.result) != 1:
        return None
    return mm


def has_matmul_use(ag: coll.AllGatherOp) -> bool:
    return any(isinstance(use.operation, dt.MatmulOp) for use in ag.result.uses)


def gather_to_pipeline(
    mm: dt.MatmulOp,
    chunks: Callable[[coll.AllGatherOp], int],
    selected: Callable[[Operation], bool],
    plans: Plans | None = None,
    per_rank: bool = False,
) -> tuple[int, coll.AllGatherOp, int, Plan]:
    """Which gathered operand of `mm` the pass pipelines: of the operands that are an
    all_gather (`selected`) that `mm` may pipeline (`matmul_fed_by`) and can be chunked, the
    one whose gather
    brings the most bytes (`gathered_bytes`; a tie: the first operand) - the larger gather
    has the more to hide, and the pass pipelines one collective per matmul. Returns (operand,
    gather, chunk count asked for, plan), or Refusal."""
    mesh: Mesh | None = None  # (looked up once a gather can be pipelined: most cannot)
    best: tuple[Fraction, int, coll.AllGatherOp, int, Plan] | None = None
    why = "no operand is an all_gather whose first use is this matmul"
    for i, v in enumerate(mm.operands):
        ag = v.owner
        if not isinstance(ag, coll.AllGatherOp) or not selected(ag) or matmul_fed_by(ag) is not mm:
            continue
        requested = chunks(ag)
        try:
            if plans is None:
                plan = plan_gather_then_matmul(mm, ag, i, requested, per_rank)
            else:
                key = (
                    "gather",
                    ag.input.type,
                    tuple(ag.properties.items()),
                    *matmul_key(mm),
                    i,
                    requested,
                    per_rank,
                )
                plan, _ = plans.get(
                    key,
                    lambda ag=ag, i=i, n=requested: (
                        plan_gather_then_matmul(mm, ag, i, n, per_rank),
                        None,
                    ),
                )
        except Refusal as e:
            why = str(e)
            continue
        if mesh is None:
            mesh = mesh_of(mm)
        moved = gathered_bytes(ag.input.type, ag.result.type, mesh)  # type: ignore[arg-type]
        if best is None or moved > best[0]:
            best = (moved, i, ag, requested, plan)
    if best is None:
        raise Refusal(why)
    return best[1:]


def overlap_gather_then_matmul(
    mm: dt.MatmulOp,
    chunks: Callable[[coll.AllGatherOp], int],
    selected: Callable[[Operation], bool] = lambda op: True,
    plans: Plans | None = None,
    per_rank: bool = False,
) -> tuple[coll.AllGatherOp, int, Plan]:
    """Chunk `mm` with the gather of one operand (`gather_to_pipeline`); the gather's later
    uses read its chunks joined. Returns that gather (erased), the chunk count asked for and
    the plan."""
    operand, ag, requested, plan = gather_to_pipeline(mm, chunks, selected, plans, per_rank)
    mesh = mesh_of(mm)
    carriers = dict(owners(mm)[plan.dim])
    new_ops: list[Operation] = []
    gathers = []
    source, cut = ag.input, carriers[operand]
    if plan.factor is not None:  # (chunks of each rank's block: `per_rank_plan`)
        x = ag.input.type
        assert isinstance(x, DTensorType)
        shaped = dt.ReshapeOp(ag.input, per_rank_shape(x, cut, plan.factor), mesh)
        new_ops.append(shaped)
        source, cut = shaped.result, cut + 1
    for c, (a, b) in enumerate(plan.ranges):
        piece = chunk_of(source, cut, a, b, new_ops)
        task = async_region(
            COMM_STREAM, [piece], lambda args: rebuild_collective(ag, args[0], mesh)
        )
        derive(task, ag, f"chunk{c}")
        new_ops.append(task)
        gathers.append(task.results[1])  # (its first future: the token comes first)
    parts = []
    arrived = []
    for (a, b), future in zip(plan.ranges, gathers, strict=True):
        ready = sched.AwaitOp(future)
        new_ops.append(ready)
        arrived.append(ready.result)
        if plan.factor is not None:  # (the whole right operand: rank 2, it broadcasts)
            part = matmul(
                ready.result, mm.rhs, mm.transpose_lhs is not None, mm.transpose_rhs is not None
            )
            part.attributes.update(mm.attributes)
            new_ops.append(part)
        else:
            part = chunk_matmul(mm, list(carriers.items()), a, b, new_ops, {operand: ready.result})
        parts.append(part.result)
    if ag.result.uses.get_length() > 1:  # (read again after `mm`: the chunks, joined)
        whole = joined(arrived, cut, ag.result.type, new_ops, mesh)
        whole.name_hint = ag.result.name_hint
        replace_uses(ag.result, whole)
    if plan.factor is not None:
        join(mm, new_ops, [[joined(parts, plan.dim + 1, mm.result.type, new_ops, mesh)]], 0)
    else:
        concat(mm, new_ops, parts, plan.dim)
    Rewriter.erase_op(ag)
    release(ag)  # the caller reads only its name and location (a warning)
    return ag, requested, plan


def joined(
    values: Sequence[SSAValue], dim: int, whole: Attribute, new_ops: list[Operation], mesh: Mesh
) -> SSAValue:
    """`values` concatenated along `dim` (in `new_ops`), reshaped to the type `whole` where
    they are chunks of each rank's block (a per-rank plan: one more dimension)."""
    value = values[0]
    if len(values) > 1:
        together = concat_op(values, dim)
        new_ops.append(together)
        value = together.result
    assert isinstance(whole, DTensorType)
    if value.type != whole:
        back = dt.ReshapeOp(value, whole.get_shape(), mesh)
        new_ops.append(back)
        value = back.result
    return value


def finish(
    op: Operation, new_ops: list[Operation], futures: Sequence[SSAValue], plan: Plan, mesh: Mesh
) -> None:
    """Await every chunk (after all chunks were issued) and join them in place of `op`."""
    values = []
    for f in futures:
        ready = sched.AwaitOp(f)
        new_ops.append(ready)
        values.append(ready.result)
    if plan.factor is None:
        concat(op, new_ops, values, plan.dim)
    else:
        whole = per_rank_join(values, plan.dim, plan.factor, op.results[0].type, new_ops, mesh)
        join(op, new_ops, [[whole]], plan.dim)


def concat(op: Operation, new_ops: list[Operation], values: Sequence[SSAValue], dim: int) -> None:
    join(op, new_ops, [values], dim)


def join(
    op: Operation, new_ops: list[Operation], chunks: Sequence[Sequence[SSAValue]], dim: int
) -> None:
    """Replace each result of `op` by its chunks concatenated along `dim`, after `new_ops`;
    `op` is erased and released (`release`): the caller reads only its name and location."""
    results = []
    for values in chunks:
        if len(values) > 1:
            joined = concat_op(values, dim)
            new_ops.append(joined)
            results.append(joined.result)
        else:
            results.append(values[0])
    block = op.parent
    assert block is not None
    link_ops(block, new_ops, op)
    for old, new in zip(op.results, results, strict=True):
        new.name_hint = old.name_hint
        replace_uses(old, new)
    Rewriter.erase_op(op)
    release(op)


def share_slices(module: ModuleOp) -> None:
    """Identical slices of one value in one block become the first of them (a slice is a pure
    function of its operand and box): every layer chunks the same weights alike, and each layer's
    copy of a weight's chunks would be another op at every level below (a view per chunk and
    layer at the kernel level)."""
    first: dict[tuple, dt.SliceOp] = {}
    for op in [o for o in walk_outside_bodies(module) if type(o) is dt.SliceOp]:
        key = (id(op.parent), op.input, op.offsets, op.sizes)
        kept = first.setdefault(key, op)
        if kept is not op:
            replace_uses(op.result, kept.result)
            Rewriter.erase_op(op)
            release(op)


def warn_fewer_chunks(op: Operation, plan: Plan, requested: int) -> None:
    """Say so when a dimension is too short for the chunk count asked for: ceil-div blocks of it
    make fewer chunks (99999999 chunks of 8 rows are 8 chunks; 3 chunks of 4 rows are 2)."""
    size = plan.ranges[-1][1]
    what = f"the chunked dimension {plan.dim} of the matmul output"
    if plan.factor is not None:
        what = f"each rank's block of {what} ({plan.factor} blocks)"
    warnings.warn(
        OpWarning(
            op,
            f"overlap made {len(plan.ranges)} chunks, not the {requested} requested: {what} "
            f"has {size} elements, cut into blocks of {plan.ranges[0][1] - plan.ranges[0][0]}"
            f"{_block_reason(size, requested, plan.ranges[0][1] - plan.ranges[0][0])}; overlap "
            "cuts the outermost dimension it can (contiguous chunks)",
        ),
        stacklevel=2,
    )


def _block_reason(size: int, requested: int, block: int) -> str:
    """Why the blocks are as long as they are, where the dimension is not simply shorter than
    the count asked for: ceil-div blocks, and their rounding up to aligned starts."""
    if size <= requested:
        return ""
    ceil = -(-size // requested)
    reason = f" (ceil({size}/{requested}) = {ceil} elements a block"
    if block != ceil:
        reason += f", rounded up to {block} so that chunks start {ALIGNMENT_BYTES}-byte aligned"
    return reason + ")"


def chunk_count(op: Operation, default: int) -> int:
    chunks = getattr(op, "chunks", None)
    return chunks.value.data if chunks is not None else default


@dataclass(frozen=True)
class Overlap(ModulePass):
    """Pipeline matmul -> all_reduce/reduce_scatter/fused_all_reduce, and all_gather -> matmul, in chunks on two streams."""

    name = "overlap"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    chunks: int = option(
        4,
        "Number of chunks (a collective's own `chunks` attribute takes precedence); a "
        "dimension too short for them is cut into fewer, with a warning.",
    )

    tags: tuple[str, ...] = option(
        (),
        "Only overlap collectives with one of these `tag` attributes (then refusals are errors).",
    )

    per_rank: bool = option(
        False,
        "Where a matmul has no whole output dimension to chunk (activations split along the "
        "sequence or the batch and gathered, Megatron's sequence parallelism; weight gradients "
        "reduce-scattered over dp), chunk each rank's block of a split one (TransformerEngine's "
        "all-gather + GEMM overlap). Off by default: smaller gemms cost time too, and "
        "`autotune` tries it by simulation.",
    )

    def __post_init__(self) -> None:
        if self.chunks < 1:  # a bad option fails the pipeline before anything is rewritten
            raise ValueError(f"overlap: chunks must be >= 1, got {self.chunks}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "matmuls and the collectives around them")
        require_tagged(op, self.tags, self.name)
        declined: set[Operation] = set()  # gathers into a matmul pipelined with another gather
        rewritten = False
        bodies: ChunkBodies | None = None
        plans = Plans()
        slices = Slices()
        for candidate in self._candidates(op):
            if candidate.parent is None:
                continue
            if candidate in declined:
                continue
            requested = chunk_count(candidate, self.chunks)
            try:
                if isinstance(candidate, coll.AllReduceOp | coll.ReduceScatterOp):
                    plan = overlap_matmul_then_collective(
                        candidate, requested, plans, slices, self.per_rank
                    )
                elif isinstance(candidate, coll.FusedAllReduceOp):
                    if bodies is None:
                        bodies = ChunkBodies(op)
                    plan = overlap_matmul_then_fused(
                        candidate, requested, bodies, plans, slices, self.per_rank
                    )
                elif (
                    isinstance(candidate, coll.AllGatherOp)
                    and (mm := matmul_fed_by(candidate)) is not None
                ):
                    gathers = {
                        v.owner for v in mm.operands if isinstance(v.owner, coll.AllGatherOp)
                    }
                    candidate, requested, plan = overlap_gather_then_matmul(
                        mm,
                        lambda g: chunk_count(g, self.chunks),
                        lambda g: is_selected(g, self.tags),
                        plans,
                        self.per_rank,
                    )
                    declined |= gathers - {candidate}
                elif (
                    self.tags
                    and isinstance(candidate, coll.AllGatherOp)
                    and has_matmul_use(candidate)
                ):
                    raise Refusal(
                        "the gathered value is read before any matmul reads it (that use needs "
                        "the whole gather first)"
                    )
                elif self.tags:
                    raise Refusal(
                        "only all_reduce, reduce_scatter or fused_all_reduce after a matmul, or "
                        "all_gather before one, can be overlapped"
                    )
                else:
                    continue
            except Refusal as why:
                if self.tags and tag_of(candidate) in self.tags:
                    raise OpError(candidate, f"cannot overlap: {why}") from None
                continue
            rewritten = True
            if len(plan.ranges) < requested:
                warn_fewer_chunks(candidate, plan, requested)
        if bodies is not None:
            bodies.drop_copied()
        if rewritten:
            share_slices(op)

    def _candidates(self, module: ModuleOp) -> list[Operation]:
        """The selected ops the pass may rewrite (any selected op when tags were given: a
        tagged op it cannot rewrite is an error). Not every op of the module: the list would
        keep erased ops and bodies alive until the pass ends."""
        if self.tags:
            return [o for o in module.walk() if is_selected(o, self.tags)]
        # (collectives are never inside scalar bodies, most of a fused module's ops)
        return [o for o in walk_outside_bodies(module) if is_candidate(o)]
