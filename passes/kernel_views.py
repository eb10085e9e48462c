"""Read slices and blocks in place: `kernel.slice` / `kernel.local_block` copies become
`kernel.subview`s where every reader can take strided rows (part of convert-to-kernel).

A chunked matmul reads a column slice of its weight, a fused collective's body reads a slice
of the bias and of the residual; copying each slice costs a launch and its bytes every call.
cuBLAS takes a leading dimension and elementwise kernels take a stride per input, so these
readers can read the slice where it lies:

```mlir
%w0 = kernel.alloc : !kernel.buffer<96x8xf32, @m[R, S(0)]>
kernel.slice %w2 -> %w0 offsets [0, 8] stream 0 : ...
kernel.gemm %h, %w0 -> %y stream 0 : ...
// becomes
%w0 = kernel.subview %w2 offsets [0, 8] : !kernel.buffer<96x24xf32, ...> -> !kernel.buffer<96x8xf32, ...>
kernel.gemm %h, %w0 -> %y stream 0 : ...     // ldb = 24 (the weight's row), no copy
```
Other kernels (NCCL, reductions, memcpy) need contiguous memory: they read a view only where
its box is row-major without gaps on every rank (leading-dimension chunks, a rank's block of a
value split on its first dimension) and they write nothing in its source. A copy stays there
otherwise, where the destination is a result the caller sees, or where the source is written
after the copy (a view would see the new values, or race with the writer on another stream).

A fill that only elementwise kernels read (a scalar hyper-parameter, `one`, `eps`) is folded into
their bodies as a constant: no launch, no buffer.

The other direction: a `kernel.concat` of chunks that all-gathers produced (an overlapped
schedule joining its chunks) is written in place - each all-gather receives straight into its
box of the concatenation, and the concat disappears (likewise chunks that reduce-scatters
produced, and chunks that gemms produced where each rank's box is row-major: a chunked
matmul's rows or batches, cuBLAS writing them where they lie). Other kernels may read a chunk
too (the chunk's matmul reading its gathered rows): they then read it in the concatenation,
with strided rows or as a row-major box (`writes_chunk_in_place`, `reads_chunk_in_place`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue, SSAValues
from xdsl.irdl import AttrSizedOperandSegments
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import kernel as k
from ccopt.dialects.body import clone_body
from ccopt.dialects.construct import build_op, op_shape, segments_attr
from ccopt.dialects.dtensor import lookup_mesh
from ccopt.passes.common import block_ops, copy_name, is_a, of_class, release, replace_uses
from ccopt.passes.scalarize import constant_attr
from ccopt.verifier import forget_verification

VIEWS = k.ViewOp | k.BlockViewOp | k.SubviewOp


_item = tuple.__getitem__  # (xDSL's SSAValues indexes in Python code, for slices)


_VIEW_CLASSES = frozenset({k.ViewOp, k.BlockViewOp, k.SubviewOp})  # (VIEWS, no subclasses)


def storage(buffer: SSAValue) -> SSAValue:
    """The buffer whose bytes `buffer` is (through views)."""
    while type(owner := buffer.owner) in _VIEW_CLASSES:
        buffer = _item(owner._operands, 0)  # type: ignore[union-attr] # its source
    return buffer


_WRITES: dict[type, int] = {}
"""Per op class: -1 an elementwise kernel (writes its `outputs`), -2 another device op
(writes its `out`, if it has one), -3 anything else; >= 0: a device op whose `out` is always
that operand (every operand definition before it is single: read without IRDL's descriptor)."""


def _writes(op: Operation) -> int:
    if isinstance(op, k.ElementwiseOp):
        return -1
    if not isinstance(op, k.DeviceOp):
        return -3
    shape = op_shape(type(op))
    names = [name for name, _ in type(op).get_irdl_definition().operands]
    if shape is None or "out" not in names:
        return -2
    at = names.index("out")
    return at if not any(shape.operands[: at + 1]) else -2


def written(op: Operation) -> list[SSAValue]:
    """The buffers a device op writes."""
    kind = _WRITES.get(type(op))
    if kind is None:
        kind = _WRITES[type(op)] = _writes(op)
    if kind >= 0:
        return [_item(op._operands, kind)]  # pyright: ignore[reportPrivateUsage]
    if kind == -1:
        return list(op.outputs)  # type: ignore[attr-defined]
    out = getattr(op, "out", None) if kind == -2 else None
    return [out] if out is not None and is_a(out, SSAValue) else []


def reads_strided(op: Operation, value: SSAValue) -> bool:
    """Whether `op` only reads `value` and can read it with the strides of a box."""
    if value in written(op):
        return False
    match op:
        case k.ElementwiseOp() | k.SubviewOp():
            return True
        case k.GemmOp():
            # batched operands must keep one batch stride: at most one batch dimension
            return k.tensor_of(value).rank <= 3
        case k.SliceKernelOp() | k.ConcatKernelOp() | k.TransposeKernelOp():
            return True  # already strided copies: they read the box where it lies
        case _:
            return False


def reads_dense(op: Operation, value: SSAValue, root: SSAValue) -> bool:
    """Whether `op` is a kernel that only reads `value` and writes nothing in `root`'s bytes
    (the storage a view of `value` would share): it can read a dense view as its own buffer.
    A reshape of `value` (`kernel.view`: a chunk of each rank's block merged back, `overlap`'s
    per-rank pieces) is such a reader where every reader of the reshape is, and so is a box of
    it (`kernel.subview`: made where its own readers could take it, the box of a dense buffer)."""
    if type(op) is k.SubviewOp:
        return True
    if type(op) is k.ViewOp:
        return all(reads_dense(u.operation, op.result, root) for u in op.result.uses)  # type: ignore[attr-defined]
    if not isinstance(op, k.DeviceOp):
        return False
    outs = written(op)
    return all(w is not value and storage(w) is not root for w in outs)


def view_fits(source: SSAValue, dest: SSAValue, readers: list[Operation], at: Operation) -> bool:
    """Whether a copy of a box of `source` into `dest` could be a view that every reader
    takes: the readers read strided rows (`reads_strided`), or they are kernels reading a view
    that is row-major on every rank (`dense_box`)."""
    rest = [r for r in readers if not reads_strided(r, dest)]
    if not rest:
        return True
    if type(source.owner) in _VIEW_CLASSES and not reshaped_dense(source, at):
        return False  # (its rows may already be strided)
    root = storage(source)
    if not all(reads_dense(r, dest, root) for r in rest):
        return False
    return dense_box(source.type, dest.type, at)


def reshaped_dense(buffer: SSAValue, at: Operation | None = None) -> bool:
    """Whether `buffer` is row-major on every rank though it is a view: a buffer of its own seen
    through reshapes (`kernel.view`: a reshape keeps every rank's block one row-major block,
    `infer_reshape`) and, given an op `at` to find the mesh from, through boxes that are
    row-major on every rank (`dense_box`: a rank's block of rows). A box of such a buffer is
    as dense as the same box of a buffer of that shape (per-rank chunks of a split dimension
    are taken from such a reshape)."""
    while type(owner := buffer.owner) in _VIEW_CLASSES:
        source = _item(owner._operands, 0)  # type: ignore[union-attr]
        if type(owner) is not k.ViewOp and (
            at is None or not dense_box(source.type, buffer.type, at)
        ):
            return False
        buffer = source
    return True


def ordered_after(writer: Operation, readers: list[Operation], position: Positions) -> bool:
    """`writer` surely runs after every reader: issued later on the same stream (readers that
    are views themselves are checked through their own readers when they are made; a reshape,
    `kernel.view`, through its readers here)."""
    stream = writer.stream_index() if is_a(writer, k.DeviceOp) else None
    return all(
        is_a(r, k.SubviewOp)
        or (
            type(r) is k.ViewOp
            and ordered_after(writer, [u.operation for u in r.result.uses], position)  # type: ignore[attr-defined]
        )
        or (
            is_a(r, k.DeviceOp)
            and r.stream_index() == stream  # type: ignore[attr-defined]
            and position.of(r, len(position.ops)) < position.of(writer)
        )
        for r in readers
    )


_SCANS_BEFORE_MAPPING = 8
"""Misses of `Positions` answered by a scan of the block before it maps every op."""


class Positions:
    """Program positions (by `id`: ops hash in Python code) of the ops of a block that a rewrite
    asks about (`wanted`), as the block was when it began. A map of every op was most of
    convert-to-kernel's peak memory (an integer key and value per op of a lowered model, tens of
    thousands); an op asked about that is not in it is looked up in the block's list, and past
    a few such misses the whole list is mapped, once (so misses stay linear in the block)."""

    def __init__(self, ops: list[Operation], wanted: set[int]):
        self.ops = ops
        self.at: dict[int, float] = {id(o): i for i, o in enumerate(ops) if id(o) in wanted}
        self.complete = False
        self.misses = 0

    def of(self, op: Operation, default: float | None = None) -> float:
        """`op`'s position; `default` for an op that was not in the block (else KeyError)."""
        found = self.at.get(id(op))
        if found is None and not self.complete:
            self.misses += 1
            if self.misses <= _SCANS_BEFORE_MAPPING:  # (rare: none at 400 Megatron blocks)
                found = next((i for i, o in enumerate(self.ops) if o is op), None)
                if found is not None:
                    self.at[id(op)] = found
            else:  # (then map them all, once: misses never cost a scan per op)
                self.at = {id(o): i for i, o in enumerate(self.ops)} | self.at
                self.complete = True
                found = self.at.get(id(op))
        if found is None:
            if default is None:
                raise KeyError(op)
            return default
        return found


COPIES = k.SliceKernelOp | k.LocalBlockOp
"""The copies a subview may replace (`box_of`)."""


def box_of(op: Operation) -> tuple[SSAValue, SSAValue, list[int]] | None:
    """(source, destination, offsets) of a copy that a subview could replace."""
    if is_a(op, k.SliceKernelOp):
        return op.input, op.out, list(op.offsets.get_values())  # type: ignore[attr-defined]
    if is_a(op, k.LocalBlockOp):
        return op.input, op.out, [0] * k.tensor_of(op.out).rank  # type: ignore[attr-defined]
    return None


Speculated = dict[int, tuple[k.SubviewOp, list[int], int, Callable[..., Operation], str | None]]
"""Subviews that the lowering made of copies right away (`speculate` in convert-to-kernel), by
`id`: (the view, its offsets, the copy's stream, how to build the copy (source, buffer), the
buffer's name). Until `view_in_place` confirms one, its result counts as the buffer the copy
would fill: a storage of its own."""

COPIES_OR_VIEWS = COPIES | k.SubviewOp


def storage_upto(buffer: SSAValue, speculative: Speculated) -> SSAValue:
    """`storage`, a speculative view's result counting as a buffer of its own."""
    while type(owner := buffer.owner) in _VIEW_CLASSES and id(owner) not in speculative:
        buffer = _item(owner._operands, 0)  # type: ignore[union-attr] # its source
    return buffer


def writers_of(root: SSAValue, block: Block, speculative: Speculated) -> list[Operation]:
    """The ops of `block` that write the storage `root` (through views of it), found through
    the uses of `root` and of its views: a scan of the whole block asked every op what it
    writes, for the few buffers sliced."""
    by: list[Operation] = []
    seen: set[int] = set()
    values = [root]
    while values:
        value = values.pop()
        use = value.first_use
        while use is not None:
            op = use.operation
            if type(op) in _VIEW_CLASSES:
                if use.index == 0 and id(op) not in speculative:
                    values.append(op.results[0])
            elif op.parent is block and id(op) not in seen and value in written(op):
                seen.add(id(op))
                by.append(op)
            use = use._next_use  # pyright: ignore[reportPrivateUsage]
    return by


def view_in_place(block: Block, speculative: Speculated | None = None) -> int:
    """Replace every eligible slice/local_block copy of `block` by a subview; returns how many.
    Walks backwards so that a slice of a slice is seen after its readers became views. The
    `speculative` views count as their copies: each is confirmed (counted) or becomes the
    buffer and the copy again, as its copy would have stayed."""
    spec = speculative or {}
    ops = block_ops(block)
    if spec:
        copies = [
            o for o in of_class(ops, COPIES_OR_VIEWS) if type(o) is not k.SubviewOp or id(o) in spec
        ]
    else:
        copies = of_class(ops, COPIES)
    boxes = [
        box_of(o) if type(o) is not k.SubviewOp else (o.source, o.result, spec[id(o)][1])  # type: ignore[attr-defined]
        for o in copies
    ]
    # Only the writers of the copies' sources, and the positions of the copies, their readers
    # and those writers, are asked for (a rewrite below never changes a source's storage: a
    # source is defined before its copy, and copies become views from the last one up).
    sources = {storage_upto(box[0], spec) for box in boxes if box is not None}
    wanted = {id(o) for o in copies}
    for box in boxes:
        if box is not None:
            wanted.update(id(u.operation) for u in box[1].uses)
    by_root = {root: writers_of(root, block, spec) for root in sources}
    for by in by_root.values():
        wanted.update(id(o) for o in by)
    position = Positions(ops, wanted)
    del wanted
    writers: dict[SSAValue, tuple[list[float], list[Operation]]] = {}  # storage -> its writers
    for root, by in by_root.items():
        if by:
            by.sort(key=position.of)
            writers[root] = ([position.of(o) for o in by], by)
    done = 0
    erased: list[Operation] = []  # released at the end (`release`): loops still read them
    for op, found in zip(reversed(copies), reversed(boxes), strict=True):
        assert found is not None
        source, dest, offsets = found
        entry = spec.get(id(op))
        if entry is None:
            alloc = dest.owner
            if not isinstance(alloc, k.AllocOp) or alloc.parent_block() is not block:
                continue  # a result or argument: the caller reads it
            readers = [u.operation for u in dest.uses if u.operation is not op]
        else:
            alloc = None
            readers = [u.operation for u in dest.uses]
        fits = view_fits(source, dest, readers, op)
        if fits:
            at, by = writers.get(storage_upto(source, spec), ((), ()))
            later = by[bisect_right(at, position.of(op)) :]  # (positions ascend)
            # else the source changes while a reader may still need the old values
            fits = all(ordered_after(w, readers, position) for w in later)
        if entry is not None:
            if fits:
                confirm_view(op)  # type: ignore[arg-type]
                done += 1
            else:
                unview(op, entry, block, position)  # type: ignore[arg-type]
                erased.append(op)
            continue
        if not fits:
            continue
        view = k.SubviewOp(source, offsets, k.tensor_of(dest))
        block.insert_op_before(view, op)
        copy_name(view.result, dest)
        replace_uses(dest, view.result)
        drop_operand_uses(op)
        block.detach_op(op)
        erased.append(op)
        block.detach_op(alloc)  # type: ignore[arg-type]
        erased.append(alloc)  # type: ignore[arg-type]
        done += 1
    for op in erased:
        release(op)
    return done


def confirm_view(view: k.SubviewOp) -> None:
    """A speculative view stays: its uses ordered as if it had been made here (`replace_uses`
    of the copy's buffer: reversed; its use of the source the newest)."""
    result = view.results[0]
    use = result.first_use
    result.first_use = None
    while use is not None:  # reverse the list
        following = use._next_use  # pyright: ignore[reportPrivateUsage]
        result.add_use(use)
        use = following
    source = _item(view._operands, 0)  # pyright: ignore[reportPrivateUsage]
    mine = view._operand_uses[0]  # pyright: ignore[reportPrivateUsage]
    source.remove_use(mine)
    source.add_use(mine)


def unview(view: k.SubviewOp, entry: tuple, block: Block, position: Positions) -> None:
    """A speculative view that its copy would not have become: the buffer and the copy as the
    lowering would have made them (uses in the same order, positions where the view was);
    the view is detached (to release)."""
    _, _, stream, make_copy, name = entry
    result = view.results[0]
    source = _item(view._operands, 0)  # pyright: ignore[reportPrivateUsage]
    alloc = k.AllocOp(k.tensor_of(result))
    buffer = alloc.results[0]
    buffer._name = name  # pyright: ignore[reportPrivateUsage]
    copy = make_copy(source, buffer)
    copy.properties["stream"] = k.stream_attr(stream)  # (`Lowering.add`)
    block.insert_op_before(alloc, view)
    block.insert_op_before(copy, view)
    at = position.of(view)
    position.at[id(alloc)] = at - 0.5
    position.at[id(copy)] = at
    # the buffer's uses: the readers' (in their order), then the copy's (made first)
    copy_use = buffer.first_use
    assert copy_use is not None and copy_use._next_use is None  # pyright: ignore[reportPrivateUsage]
    readers = []
    use = result.first_use
    while use is not None:
        readers.append(use)
        use = use._next_use  # pyright: ignore[reportPrivateUsage]
    buffer.first_use = None
    result.first_use = None
    buffer.add_use(copy_use)
    for use in reversed(readers):
        op, i = use._operation, use._index  # pyright: ignore[reportPrivateUsage]
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        op._operands = SSAValues(  # pyright: ignore[reportPrivateUsage]
            (*_item(operands, slice(None, i)), buffer, *_item(operands, slice(i + 1, None)))
        )
        buffer.add_use(use)
    # the source's use by the copy where the view's was
    mine = view._operand_uses[0]  # pyright: ignore[reportPrivateUsage]
    theirs = copy._operand_uses[0]  # pyright: ignore[reportPrivateUsage]
    source.remove_use(theirs)
    theirs._prev_use, theirs._next_use = mine._prev_use, mine._next_use  # pyright: ignore[reportPrivateUsage]
    if mine._prev_use is None:  # pyright: ignore[reportPrivateUsage]
        source.first_use = theirs
    else:
        mine._prev_use._next_use = theirs  # pyright: ignore[reportPrivateUsage]
    if mine._next_use is not None:  # pyright: ignore[reportPrivateUsage]
        mine._next_use._prev_use = theirs  # pyright: ignore[reportPrivateUsage]
    view._operand_uses = ()  # pyright: ignore[reportPrivateUsage]
    block.detach_op(view)


def drop_operand_uses(op: Operation) -> None:
    """Unlink `op`'s operand uses from their values' use lists (what erasing it does first;
    `release` clears the op itself)."""
    for value, use in zip(op._operands, op._operand_uses, strict=True):  # pyright: ignore[reportPrivateUsage]
        value.remove_use(use)
    op._operand_uses = ()  # pyright: ignore[reportPrivateUsage]


def storage_users(root: SSAValue) -> list[Operation]:
    """The ops that have an operand whose storage is `root` (`storage`): the users of `root`
    and of the views of it, views included (a few per buffer, where a scan of the ops between
    two points asked each op for the storage of each operand)."""
    users: list[Operation] = []
    values = [root]
    while values:
        use = values.pop().first_use
        while use is not None:
            op = use.operation
            users.append(op)
            if type(op) in _VIEW_CLASSES and use.index == 0:
                values.append(op.results[0])
            use = use._next_use  # pyright: ignore[reportPrivateUsage]
    return users


def concat_in_place(block: Block, concats: list[Operation] | None = None) -> int:
    """Let the all-gathers (reduce-scatters) whose results are only concatenated write into the concatenation
    (subviews of it) and drop the concat; returns how many concats went. `concats`: the
    block's concats in order, when the caller knows them (else the block is scanned)."""
    done = 0
    erased: list[Operation] = []  # released at the end (`release`): loops still read them
    made: set[int] = set()  # the views made here (`free_between` looks past them)
    if concats is None:
        concats = of_class(block_ops(block), k.ConcatKernelOp)
    for op in concats:
        writers = []
        for v in op.inputs:
            alloc = v.owner
            users = [u.operation for u in v.uses]
            # the op writing it, block views of it (an in-place all-gather's input), and ops that
            # read it where it will lie (a chunk's matmul reading its gathered rows)
            others = [u for u in users if u is not op and not is_a(u, k.BlockViewOp)]
            writer = [u for u in others if v in written(u)]
            if (
                not is_a(alloc, k.AllocOp)
                or alloc.parent is not block
                or len(writer) != 1
                or not writes_chunk_in_place(writer[0], v, op)
                or not all(u in writer or reads_chunk_in_place(u, v, op) for u in others)
            ):
                break
            writers.append(writer[0])
        else:
            first = earliest(op, {id(v.owner) for v in op.inputs})  # the earliest chunk alloc
            if not free_between(first, op, storage(op.out), made):
                continue
            dim = op.dim.value.data % k.tensor_of(op.out).rank
            start = 0
            for v in list(op.inputs):
                t = k.tensor_of(v)
                offsets = [start if d == dim else 0 for d in range(t.rank)]
                view = k.SubviewOp(op.out, offsets, t)
                made.add(id(view))
                alloc = v.owner
                block.insert_op_after(view, alloc)  # type: ignore[arg-type]
                copy_name(view.result, v)
                replace_uses(v, view.result)
                block.detach_op(alloc)  # type: ignore[arg-type] # (no operand, no use left)
                erased.append(alloc)  # type: ignore[arg-type]
                start += t.get_shape()[dim]
            drop_operand_uses(op)
            block.detach_op(op)
            erased.append(op)
            done += 1
    for op in erased:
        release(op)
    return done


def reads_chunk_in_place(reader: Operation, chunk: SSAValue, concat: Operation) -> bool:
    """Whether `reader`, which reads `chunk` but does not write it, can read it as a box of the
    concatenation: with strided rows, or as a buffer of its own where the box is row-major."""
    if not isinstance(reader, k.DeviceOp):
        return False
    return reads_strided(reader, chunk) or dense_chunk(concat, chunk)


def writes_chunk_in_place(writer: Operation, chunk: SSAValue, concat: Operation) -> bool:
    """Whether `writer`, the op that writes `chunk` (a buffer `concat` joins), can write it as a
    box of the concatenation instead: a collective (the emitter stages a strided box for NCCL),
    or a gemm whose box is row-major on every rank (a chunked matmul's rows or batches; cuBLAS
    then writes its rows where they lie)."""
    if getattr(writer, "out", None) is not chunk:
        return False
    if is_a(writer, k.NcclAllGatherOp | k.NcclReduceScatterOp):
        return True
    return is_a(writer, k.GemmOp) and dense_chunk(concat, chunk)


def dense_chunk(concat: Operation, chunk: SSAValue) -> bool:
    """Whether every rank's block of `chunk`, as a box of `concat`'s output, is row-major
    without gaps."""
    return dense_box(concat.out.type, chunk.type, concat)  # type: ignore[attr-defined]


def dense_box(whole: Attribute, part: Attribute, at: Operation) -> bool:
    """Whether a box of type `part` of a buffer of type `whole` is row-major on every rank
    (`k.dense_subview`, on the mesh found from `at`), remembered by the pair of types and the
    mesh's axis sizes (a model repeats a few types; two programs may name different meshes
    alike)."""
    assert isinstance(whole, k.BufferType) and isinstance(part, k.BufferType)
    mesh = lookup_mesh(at, whole.tensor.mesh_name)
    if mesh is None:
        return False
    key = (whole, part, mesh.axis_sizes)
    found = _DENSE_BOXES.get(key)
    if found is None:
        found = k.dense_subview(whole.tensor, part.tensor, mesh)
        if len(_DENSE_BOXES) > 4096:
            _DENSE_BOXES.clear()
        _DENSE_BOXES[key] = found
    return found


_DENSE_BOXES: dict[tuple[Attribute, Attribute, tuple[int, ...]], bool] = {}


def earliest(op: Operation, wanted: set[int]) -> Operation:
    """Of the ops before `op` in its block whose `id`s are `wanted` (all of them there), the
    first: a walk back from `op` over the span they cover."""
    found = op
    o = op.prev_op
    while wanted and o is not None:
        if id(o) in wanted:
            wanted.discard(id(o))
            found = o
        o = o.prev_op
    return found


def free_between(first: Operation, last: Operation, root: SSAValue, made: set[int]) -> bool:
    """No op from `first` to `last` (exclusive) touches the storage `root` (the views made by
    `concat_in_place`, `made`, aside: they are not in the span it checks); `root` is then
    defined before `first` (where the views go), its alloc moved up if need be. A walk over
    the span: no positions of the block's ops."""
    users = {id(o) for o in storage_users(root)}
    owner = root.owner
    after_first = False
    o: Operation | None = first
    while o is not None and o is not last:
        if id(o) in users and id(o) not in made:
            return False
        if o is owner and o is not first:
            after_first = True
        o = o._next_op  # pyright: ignore[reportPrivateUsage]
    if after_first:
        if not isinstance(owner, k.AllocOp):
            return False
        owner.detach()  # an alloc only names bytes: declare it before the chunks
        Rewriter.insert_op(owner, InsertPoint.before(first))
    return True


def fold_fills(
    block: Block,
    own: Collection[str] = (),
    memo: FoldMemo | None = None,
    empty: Mapping[str, Operation] | None = None,
) -> int:
    """Fold every fill that only elementwise kernels read into their bodies; returns how many.
    Each kernel is changed once for all the fills it reads (`fold_inputs`), not once per fill:
    an optimizer step's kernels read several hyper-parameters. `own` names module bodies
    that only this block's kernels name (bodies shared while lowering it): the last of their
    kernels to change takes the body itself instead of a copy (`takers`). With a `memo`, a
    kernel folded as one of an earlier block was names the body that one's became. `empty`:
    bodies of `own` not copied yet, by name -> the (L1) body they are to copy."""
    done = 0
    erased: list[Operation] = []  # released at the end (`release`): loops still read them
    folds: dict[Operation, list[tuple[SSAValue, Attribute, Attribute]]] = {}  # by kernel
    for fill in of_class(block_ops(block), k.FillKernelOp):
        value = fill.out
        alloc = value.owner
        readers = {id(u.operation): u.operation for u in value.uses if u.operation is not fill}
        if (
            type(alloc) is not k.AllocOp
            or alloc.parent is not block
            or not readers
            or not all(
                type(r) is k.ElementwiseOp and value not in elementwise_parts(r)[1]
                for r in readers.values()
            )
        ):
            continue  # (folding others never changes this: a kernel stays one, outputs alike)
        element = k.tensor_of(value).element_type
        attr = constant_value(fill.value.value.data, element)
        for reader in readers.values():
            folds.setdefault(reader, []).append((value, attr, element))
        erased += (fill, alloc)
        done += 1
    keys = {op: memo.key(op, values, own) for op, values in folds.items()} if memo else {}
    named = {op for op, key in keys.items() if key is not None and key in memo.refs}  # type: ignore[union-attr]
    taking = takers(block, folds, own, named) if own else set()
    if memo is not None:
        memo.changed.update(id(op) for op in folds)
    for reader, values in folds.items():
        if reader in named:
            fold_by_name(reader, values, memo.refs[keys[reader]])  # type: ignore[union-attr,arg-type,index]
            continue
        constants = [(value, constant_op(attr, t)) for value, attr, t in values]
        fold_inputs(reader, constants, reader in taking, empty)  # type: ignore[arg-type]
        if keys.get(reader) is not None:
            memo.made.append((reader, keys[reader]))  # type: ignore[union-attr]
    for op in erased:  # (a fill, then its alloc: no use left)
        drop_operand_uses(op)
        block.detach_op(op)
    for op in erased:
        release(op)
    return done


class FoldMemo:
    """The bodies that folding fills made, for kernels of later functions folded alike: by the
    origin of a kernel's body (the L1 body it copies, the key it was shared under while
    lowering: `Lowering.body_of`) and the fold (constants and the inputs they replace), the
    `kernel.body` that outlining named. A model's optimizer steps repeat the same few kernels
    per parameter: each was copied, folded, keyed and released again (`Outliner`)."""

    def __init__(self) -> None:
        self.refs: dict[tuple, SymbolRefAttr] = {}
        self.made: list[tuple[Operation, tuple]] = []  # kernels folded, to `record`
        self.regions: dict[int, tuple[Region, object]] = {}  # by `id`: a kernel's, its origin
        self.names: dict[str, object] = {}  # a body shared while lowering -> its origin
        self.changed: set[int] = set()  # the kernels folded, by `id`

    def origin(self, op: k.ElementwiseOp, own: Collection[str]) -> object | None:
        if op.regions:
            found = self.regions.get(id(op.regions[0]))
            return found[1] if found is not None and found[0] is op.regions[0] else None
        name = op.body_name()
        if name is None:
            return None
        if name in own:  # shared while lowering
            return self.names.get(name)
        return ("named", name)  # a module body of L1: kernels alike copy it

    def key(
        self,
        op: k.ElementwiseOp,
        values: list[tuple[SSAValue, Attribute, Attribute]],
        own: Collection[str],
    ) -> tuple | None:
        """Kernels of equal keys fold into equal bodies (None: the body's origin is unknown)."""
        origin = self.origin(op, own)
        if origin is None:
            return None
        at = {id(value): i for i, (value, _, _) in enumerate(values)}
        return (
            origin,
            tuple((attr, t) for _, attr, t in values),
            tuple(at.get(id(v), -1) for v in elementwise_parts(op)[0]),
        )

    def record(self) -> None:
        """After a function is outlined: the bodies its folded kernels name."""
        for op, key in self.made:
            ref = op.properties.get("body_ref")
            if isinstance(ref, SymbolRefAttr) and not op.regions:
                self.refs.setdefault(key, ref)
        self.made.clear()
        self.regions.clear()
        self.names.clear()
        self.changed.clear()


def fold_by_name(
    op: k.ElementwiseOp, values: list[tuple[SSAValue, Attribute, Attribute]], ref: SymbolRefAttr
) -> None:
    """`fold_inputs` and outlining for a kernel folded as one before (`FoldMemo`): it names
    that one's body, and its own region (self-contained: it has an origin) is released."""
    folded = {id(value) for value, _, _ in values}
    inputs, outputs = elementwise_parts(op)
    kept = [v for v in inputs if id(v) not in folded]
    if op.regions:
        release(op.detach_region(op.regions[0]))
    props = op.properties
    props.pop("body_ref", None)
    op.operands = [*kept, *outputs]
    props[AttrSizedOperandSegments.attribute_name] = segments_attr([len(kept), len(outputs)])
    props["body_ref"] = ref  # (where outlining puts it)
    forget_verification(op)


_SEGMENT_SIZES: dict[int, tuple[Attribute, tuple[int, ...]]] = {}
"""Operand segment sizes by the attribute's `id` (ops built alike share one attribute:
`ccopt.dialects.construct`), the attribute kept so that its `id` stays its own."""


def elementwise_parts(op: k.ElementwiseOp) -> tuple[tuple[SSAValue, ...], tuple[SSAValue, ...]]:
    """(inputs, outputs) of an elementwise kernel, read off its operands with its segment
    sizes: IRDL's accessors unpack the sizes on every read."""
    attr = op.properties[AttrSizedOperandSegments.attribute_name]
    found = _SEGMENT_SIZES.get(id(attr))
    if found is None or found[0] is not attr:
        if len(_SEGMENT_SIZES) > 1024:
            _SEGMENT_SIZES.clear()
        found = _SEGMENT_SIZES[id(attr)] = (attr, tuple(attr.get_values()))  # type: ignore[attr-defined]
    split = found[1][0]
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    return _item(operands, slice(None, split)), _item(operands, slice(split, None))


def constant(value: float, t: Attribute) -> arith.ConstantOp:
    """`value` as an arith.constant of element type `t` (what a body reads for the input),
    built directly (`build_op`) with a shared attribute (`constant_attr`)."""
    return constant_op(constant_value(value, t), t)


def constant_value(value: float, t: Attribute) -> Attribute:
    """The attribute of `constant`."""
    if isinstance(t, IntegerType):
        value = int(value) if t.width.data > 1 else int(bool(value))
    return constant_attr(value, t)


def constant_op(attr: Attribute, t: Attribute) -> arith.ConstantOp:
    return build_op(arith.ConstantOp, result_types=[t], properties={"value": attr})


def takers(
    block: Block,
    folds: Mapping[Operation, object],
    own: Collection[str],
    named: Collection[Operation] = (),
) -> set[Operation]:
    """Of the kernels changed, those that may take the body they name (one of `own`) instead
    of a copy: the last changed kernel naming it, when every kernel naming it changes (each
    gets a body of its own, or names one made before: `named`, which take none; the named
    one is then dropped by outlining)."""
    naming: dict[str, int] = {}  # body -> how many of the block's kernels name it
    for op in block.ops:
        ref = op.properties.get("body_ref")
        if isinstance(ref, SymbolRefAttr) and ref.root_reference.data in own:
            name = ref.root_reference.data
            naming[name] = naming.get(name, 0) + 1
    last: dict[str, Operation] = {}
    changed: dict[str, int] = {}
    for op in folds:
        name = op.body_name()  # type: ignore[attr-defined]
        if name in naming:
            if op not in named:
                last[name] = op
            changed[name] = changed.get(name, 0) + 1
    return {op for name, op in last.items() if changed[name] == naming[name]}


def fold_inputs(
    op: k.ElementwiseOp,
    constants: list[tuple[SSAValue, arith.ConstantOp]],
    take: bool = False,
    empty: Mapping[str, Operation] | None = None,
) -> None:
    """The kernel without the `constants`' values among its inputs (changed in place): its body
    reads each constant instead (the first of them ends up first in the body). A kernel that names a
    shared body (`kernel.body`) gets its own copy to change, or with `take` the body itself
    (no other kernel names it any more); outlining (convert-to-kernel's last step) names it
    again."""
    named = op.regions[0] if op.regions else None
    if named is None:
        l1 = empty.get(op.body_name()) if empty else None  # type: ignore[arg-type]
        if l1 is not None:  # a body not copied yet: the copy is the L1 body's
            named = clone_body(l1.regions[0])
        else:
            shared = op.body_block().parent
            assert shared is not None and shared.parent is not None
            named = shared.parent.detach_region(shared) if take else clone_body(shared)
        del op.properties["body_ref"]
        op.add_region(named)
    block = named.blocks.first
    assert block is not None
    for _, const in constants:
        block.insert_op_before(const, block.first_op) if block.first_op else block.add_op(const)
    inputs, outputs = elementwise_parts(op)
    by_value = {id(value): const for value, const in constants}
    args = block.args
    for i in reversed(range(len(inputs))):
        const = by_value.get(id(inputs[i]))
        if const is not None:
            arg = args[1 + i]  # the first argument is the element index
            replace_uses(arg, const.result)
            block.erase_arg(arg)
    kept = [v for v in inputs if id(v) not in by_value]
    # the kernel changed in place (operands and segment sizes as a new one's would be)
    op.operands = [*kept, *outputs]
    op.properties[AttrSizedOperandSegments.attribute_name] = segments_attr(
        [len(kept), len(outputs)]
    )
    forget_verification(op)
