"""What runs before what at the kernel level, and how long each workspace buffer lives.

The host issues device ops in program order; each stream runs its ops in issue order; an
`event_wait` makes later work on its stream wait for everything its `event_record` marked (a
`stream_wait` is a record on the stream it names and its wait, in one op). So op `a` surely
completes before op `b` starts exactly when `a` is on `b`'s stream and issued earlier, or a
chain of record/wait pairs leads from after `a` to before `b`. Vector clocks give
that in one pass: for every op, how many ops of each stream are known complete when it starts.

Buffer lives are what memory planning (`plan-memory`) and its checker need: a buffer's bytes
may be reused by a later buffer only once every op touching it - through any view - has
completed before the later buffer's first writer starts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, Block, Operation, SSAValue

from ccopt.dialects import kernel as k
from ccopt.mesh import Mesh

if TYPE_CHECKING:
    from ccopt.kernel_function import Placements

CALL = "func.call"
"""A call at the kernel level runs as one op of the compute stream: the callee's other streams
start after an event recorded on it and join it before the callee returns (convert-to-kernel)."""


_DEVICE_KINDS: dict[type, bool] = {}
"""Whether ops of a class are device ops: `isinstance` against the op classes' metaclass cost
more than the rest of a stream-order walk."""


def stream_of(op: Operation) -> int | None:
    """The stream a device op (or a call) runs on; None for host-side ops (allocs, views)."""
    kind = type(op)
    device = _DEVICE_KINDS.get(kind)
    if device is None:
        device = _DEVICE_KINDS[kind] = issubclass(kind, k.DeviceOp)
    if device:  # (`stream_index`, without the property's descriptor)
        return op.properties["stream"].value.data  # type: ignore[attr-defined]
    if op.name == CALL:
        return 0  # sched.COMPUTE_STREAM
    return None


class StreamOrder:
    """Happens-before between the device ops of one block (vector clocks).

    An op's clock is how many ops of each stream are known complete when it starts: its own
    stream's count is its index there (`place`), the other streams' counts change only at an
    `event_wait` or a `stream_wait`, so consecutive ops of a stream share one dict of them (`others`), copied
    when a wait changes it: a lowered model has tens of thousands of device ops, and a dict per
    op was most of plan-memory's memory."""

    def __init__(self, ops: Iterable[Operation]):
        self.place: dict[Operation, tuple[int, int]] = {}  # op -> (stream, index on it)
        self.others: dict[Operation, dict[int, int]] = {}  # op -> other stream -> complete
        issued: dict[int, int] = {}
        known: dict[int, dict[int, int]] = {}  # stream -> what its next op may assume of others
        events: dict[SSAValue, dict[int, int]] = {}
        kinds = _DEVICE_KINDS
        for op in ops:
            if kinds.get(type(op)):  # (`stream_of`, inlined for device ops)
                s = op.properties["stream"].value.data  # type: ignore[attr-defined]
            else:
                s = stream_of(op)
                if s is None:
                    continue
            own = issued.get(s, 0)  # a stream runs its ops in order
            others = known.get(s)
            if others is None:
                others = known[s] = {}
            kind = type(op)
            if kind is k.EventWaitOp:
                seen = events.get(op.event)  # type: ignore[attr-defined]
            elif kind is k.StreamWaitOp:  # (a record on `on` just now, and its wait)
                on = op.properties["on"].value.data  # type: ignore[attr-defined]
                seen = {**known.get(on, {}), on: issued.get(on, 0)}
            else:
                seen = None
            if seen:
                others = known[s] = dict(others)  # (earlier ops keep the old one)
                for t, n in seen.items():
                    if t == s:
                        own = max(own, n)
                    else:
                        others[t] = max(others.get(t, 0), n)
            self.place[op] = (s, own)
            self.others[op] = others
            issued[s] = own + 1
            if kind is k.EventRecordOp:
                events[op.event] = {**others, s: issued[s]}  # type: ignore[attr-defined]

    def clock(self, op: Operation) -> dict[int, int]:
        """Per stream, how many of its ops are known complete when `op` starts."""
        s, own = self.place[op]
        return {**self.others[op], s: own}

    def before(self, stream: int, index: int, op: Operation) -> bool:
        """Whether the `index`-th op of `stream` has completed when `op` starts."""
        s, own = self.place[op]
        return (own if stream == s else self.others[op].get(stream, 0)) > index


@dataclass(slots=True)  # (one per buffer: a lowered model has thousands)
class BufferLife:
    """A workspace buffer (a `kernel.alloc`) and the device ops that touch it. Most buffers
    are touched on one stream: their last op there is `index` on stream `on`, with no
    dictionary per buffer (they were a third of plan-memory's memory)."""

    alloc: k.AllocOp
    first: Operation | None = None  # its first device op in program order: the writer
    at: int = -1  # program position of `first`
    on: int = -1  # stream of `first`
    place: int = -1  # index of `first` on its stream
    last: int = -1  # program position of its last device op
    index: int = -1  # index of its last op on stream `on`, while all its ops are on `on`
    more: dict[int, int] | None = None  # stream -> index of its last op there, once on two
    escapes: Operation | None = None  # a non-device op using it: its bytes are never shared

    @property
    def last_on(self) -> dict[int, int]:
        """Per stream its device ops ran on, the index of the last of them there."""
        if self.more is not None:
            return dict(self.more)
        return {} if self.first is None else {self.on: self.index}

    def bytes(self, sizes: dict[Attribute, int] | None = None) -> int:
        """The buffer's workspace bytes; `sizes`: the bytes of buffer types already sized in
        the same function (a model has a few dozen buffer types and thousands of buffers; each
        size is a mesh lookup and a local shape)."""
        buffer_type = _item(self.alloc.results, 0).type
        if sizes is not None and (known := sizes.get(buffer_type)) is not None:
            return known
        from ccopt.dialects.dtensor import lookup_mesh  # (imported when sizing: not per buffer)

        t = k.tensor_of(self.alloc.result)
        mesh = lookup_mesh(self.alloc, t.mesh_name)
        assert mesh is not None, "a verified alloc sits on a declared mesh"
        size = k.buffer_bytes(t, mesh)
        if sizes is not None:
            sizes[buffer_type] = size
        return size

    def dead_before(self, op: Operation, order: StreamOrder, position: int) -> bool:
        """Every op touching this buffer has completed before `op` (at `position`) starts."""
        return self.escapes is None and (
            self.first is None
            or (
                self.last < position
                and all(order.before(s, i, op) for s, i in self.last_on.items())
            )
        )


_VIEWS = frozenset({k.ViewOp, k.BlockViewOp, k.SubviewOp})
_item = tuple.__getitem__  # (xDSL's SSAValues indexes in Python code)


class StreamIssue:
    """Per stream, its device ops in issue order with their program positions and the counts of
    the other streams' ops known complete when each starts (`StreamOrder`'s clocks): what buffer
    lives and memory plans ask, in two lists per stream. `StreamOrder` keeps a dictionary
    entry, a tuple and an integer per op (keyed by op): a lowered model's tens of thousands of
    device ops made them most of plan-memory's memory, and these walks go in program order,
    where an op's index on its stream is where it is appended. (An `event_wait` never raises
    its own stream's count: what a record on the same stream saw was issued before it.)"""

    def __init__(self) -> None:
        self.positions: dict[int, list[int]] = {}  # stream -> its ops' program positions
        self.others: dict[int, list[dict[int, int]]] = {}  # stream -> its ops' other counts
        self._known: dict[int, dict[int, int]] = {}  # stream -> what its next op may assume
        self._events: dict[int, tuple[dict[int, int], int, int]] = {}
        """Per recorded event (by `id`: values hash in Python code), what its record saw: the
        other streams' counts, its stream and how many of that stream's ops it follows (no
        merged dictionary per record)."""

    def clock(self, stream: int, index: int) -> dict[int, int]:
        """Per stream, how many of its ops are known complete when the `index`-th op of
        `stream` starts (`StreamOrder.clock`)."""
        return {**self.others[stream][index], stream: index}


def buffer_lives(block: Block) -> tuple[list[BufferLife], StreamIssue]:
    """The life of every alloc of `block` (views count as their buffer), in allocation order
    (values by `id`: they hash in Python code, and this walk looks up every operand of every
    op), and the block's device ops per stream (`StreamIssue`, filled here: one walk, no call
    per op)."""
    lives: dict[int, BufferLife] = {}  # id(value) -> its buffer's life
    allocated: list[BufferLife] = []
    issue = StreamIssue()
    all_positions, all_others, known, events = (
        issue.positions,
        issue.others,
        issue._known,  # pyright: ignore[reportPrivateUsage]
        issue._events,  # pyright: ignore[reportPrivateUsage]
    )
    kinds = _DEVICE_KINDS
    alloc, wait, record = k.AllocOp, k.EventWaitOp, k.EventRecordOp
    stream_wait = k.StreamWaitOp
    position = -1
    following = block.first_op
    while following is not None:  # (the linked list: no iterator object stepped per op)
        op = following
        following = op._next_op  # pyright: ignore[reportPrivateUsage]
        position += 1
        kind = type(op)
        if kind is alloc:
            life = lives[id(_item(op.results, 0))] = BufferLife(op)  # type: ignore[arg-type]
            allocated.append(life)
            continue
        if kind in _VIEWS:
            life = lives.get(id(_item(op._operands, 0)))  # pyright: ignore[reportPrivateUsage]
            if life is not None:
                lives[id(_item(op.results, 0))] = life
            continue
        if kinds.get(kind):  # (`stream_of`, inlined for device ops)
            stream = op.properties["stream"].value.data  # type: ignore[attr-defined]
        else:
            stream = stream_of(op)
        index = -1
        if stream is not None:  # (`StreamIssue`: the op appended to its stream)
            positions = all_positions.get(stream)
            if positions is None:
                positions = all_positions[stream] = []
                all_others[stream] = []
                known[stream] = {}
            index = len(positions)
            others = known[stream]
            if kind is wait:
                seen = events.get(id(_item(op._operands, 0)))  # pyright: ignore[reportPrivateUsage]
            elif kind is stream_wait:  # (a record on `on` just now, and its wait)
                on = op.properties["on"].value.data  # type: ignore[attr-defined]
                seen = (known.get(on, {}), on, len(all_positions.get(on, ())))
            else:
                seen = None
            if seen is not None:
                recorded, on, count = seen
                others = known[stream] = dict(others)  # (earlier ops keep the old one)
                for t, n in (*recorded.items(), (on, count)):
                    if t != stream:
                        others[t] = max(others.get(t, 0), n)
            positions.append(position)
            all_others[stream].append(others)
            if kind is record:
                events[id(_item(op.results, 0))] = (others, stream, index + 1)
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        if len(operands) == 1:
            life = lives.get(id(_item(operands, 0)))
            if life is None:
                continue
            touched = [life]
        else:
            touched = []
            for v in operands:
                life = lives.get(id(v))
                if life is not None and not _holds(touched, life):
                    touched.append(life)
            if not touched:
                continue
        if stream is None:
            for life in touched:
                life.escapes = life.escapes or op
            continue
        for life in touched:  # (the op is the last on its stream to use it, so far)
            if life.first is None:
                life.first, life.at, life.on, life.place = op, position, stream, index
                life.index = index
            elif life.more is not None:
                life.more[stream] = index
            elif stream == life.on:
                life.index = index
            else:  # (a second stream: its last index on each, from now on)
                life.more = {life.on: life.index, stream: index}
            life.last = position
    return allocated, issue


def _holds(lives: list[BufferLife], life: BufferLife) -> bool:
    """Whether `life` itself is in `lives` (by identity: lives compare by their fields)."""
    for other in lives:
        if other is life:
            return True
    return False


def dead(life: BufferLife, position: int, stream: int, index: int, others: dict[int, int]) -> bool:
    """Whether every op touching `life` has completed before the `index`-th op of `stream`,
    at program `position`, starts (`others`: the other streams' counts known complete then,
    `StreamIssue.others`; `life.dead_before`, without a clock per op asked)."""
    if life.escapes is not None:
        return False
    if life.first is None:
        return True
    if life.last >= position:
        return False
    more = life.more
    if more is None:
        s = life.on
        return (index if s == stream else others.get(s, 0)) > life.index
    for s, i in more.items():  # (a loop: `all` over a generator cost more than it)
        if (index if s == stream else others.get(s, 0)) <= i:
            return False
    return True


class LiveBuffers:
    """The placed buffers that may still be in use, asked at the first writers of new buffers
    in program order. A buffer leaves once it is dead before the next op of every stream, so
    the set stays as small as what is really live."""

    def __init__(self, issue: StreamIssue):
        self.issue = issue
        self.cursor = dict.fromkeys(issue.positions, 0)
        self.placed: list[tuple[BufferLife, int, int]] = []  # life, first byte, end byte

    def in_use_at(self, life: BufferLife) -> list[tuple[BufferLife, int, int]]:
        """The placed buffers that the first writer of `life` must not overwrite."""
        issue = self.issue
        stream, index, position = life.on, life.place, life.at
        upcoming = []  # (the next op of every other stream: what later writers follow)
        for s, at in issue.positions.items():
            i = self.cursor[s] = bisect_left(at, position, self.cursor[s])  # (in program order)
            if s != stream and i < len(at):
                upcoming.append((at[i], s, i, issue.others[s][i]))
        others = issue.others[stream][index]
        kept = []
        in_use = []
        for p in self.placed:
            life = p[0]  # (`dead` at the writer, inlined for a buffer used on one stream)
            if life.escapes is not None or life.last >= position:
                live = True
            elif life.more is None:
                on = life.on
                live = (index if on == stream else others.get(on, 0)) <= life.index
            else:
                live = not dead(life, position, stream, index, others)
            if live:
                kept.append(p)
                in_use.append(p)
                continue
            for at, s, i, seen in upcoming:  # (dead before every stream's next op: it leaves)
                if not dead(life, at, s, i, seen):
                    kept.append(p)
                    break
        self.placed = kept
        return in_use

    def add(self, life: BufferLife, start: int, stop: int) -> None:
        self.placed.append((life, start, stop))


def lives_in_order(
    f: Operation,
) -> tuple[list[BufferLife], LiveBuffers] | None:
    """The function's buffers by first use, with the live set to place them against."""
    block = f.regions[0].blocks.first
    if block is None:
        return None
    lives, issue = buffer_lives(block)
    return sorted(lives, key=_first_at), LiveBuffers(issue)


def _first_at(life: BufferLife) -> int:
    return life.at


def check_memory_plan(f: Operation, workspace: int) -> None:
    """A planned function's buffers fit its workspace and never share bytes while both may be
    in use (on any stream); raises OpError at the buffer whose bytes are taken."""
    from ccopt.diagnostics import OpError

    found = lives_in_order(f)
    if found is None:
        return
    lives, live = found
    sizes: dict[Attribute, int] = {}
    for life in lives:
        offset = life.alloc.byte_offset()
        if offset is None:
            raise OpError(life.alloc, "has no offset, but the function's memory is planned")
        end = offset + life.bytes(sizes)
        if end > workspace:
            raise OpError(life.alloc, f"bytes [{offset}, {end}) exceed the workspace ({workspace})")
        if life.first is None:
            continue
        for other, start, stop in live.in_use_at(life):
            if start < end and offset < stop:
                raise OpError(
                    life.alloc,
                    f"bytes [{offset}, {end}) overlap those of %{name(other.alloc.result)} "
                    f"[{start}, {stop}), which may still be in use when this buffer is first "
                    f"written (not every op on it is ordered before that '{life.first.name}')",
                )
        live.add(life, offset, end)


def name(value: SSAValue) -> str:
    return value.name_hint or "buffer"


class Storages:
    """Where each buffer value's bytes are, for `check_stream_races`: its storage (the shared
    workspace for a planned alloc and its views, else the buffer it views: an argument or an
    unplanned alloc), the bytes it spans there, and per rank the box of its root's elements it
    covers (`ccopt.kernel_function.Placements`). Two accesses conflict where their storage,
    bytes and - on one root - boxes meet: the chunks of one buffer that overlapped streams
    write side by side do not."""

    def __init__(self) -> None:
        self.sizes: dict[Attribute, int] = {}
        self.placements: dict[Mesh, Placements] = {}

    def region(self, value: SSAValue) -> tuple[object, SSAValue, int, float]:
        """(storage, root, first byte, end byte) of a buffer value."""
        from ccopt.kernel_function import storage_root

        root = storage_root(value)
        owner = root.owner
        if isinstance(owner, k.AllocOp) and owner.offset is not None:
            offset = owner.offset.value.data
            return "workspace", root, offset, offset + BufferLife(owner).bytes(self.sizes)
        return root, root, 0, float("inf")

    def meet(self, a: SSAValue, b: SSAValue, op: Operation) -> bool:
        """Whether two values of one root, operands of `op`, share an element on some rank."""
        from ccopt.kernel_function import placements_of

        if a is b:
            return True
        placements = placements_of(op, self.placements)
        assert placements is not None, "a verified buffer sits on a declared mesh"
        return placements.meet(a, b)


@dataclass(frozen=True, slots=True)
class Access:
    """A device op touching a buffer value: its place in stream order, whether it writes, and
    where the value's bytes are (`Storages.region`)."""

    op: Operation
    stream: int
    index: int
    writes: bool
    value: SSAValue
    root: SSAValue
    start: int
    end: float


def written_operands(op: k.DeviceOp) -> set[SSAValue]:
    """The buffers a device op writes: its destinations (`outs` of an elementwise kernel, `out`
    of every other op, the outputs of a fused all-reduce, and the scratch of a call that runs
    an algorithm); every other
    buffer operand is read."""
    if isinstance(op, k.ElementwiseOp):
        return set(op.outputs)
    if isinstance(op, k.FusedAllReduceKernelOp):
        return {*op.outputs, *([] if op.scratch is None else [op.scratch])}
    out = getattr(op, "out", None)
    written = {out} if isinstance(out, SSAValue) else set()
    if isinstance(op, k.NcclOp) and op.scratch is not None:
        written.add(op.scratch)
    return written


def check_stream_races(f: Operation) -> None:
    """No storage is written on one stream and read or written on another unless stream order
    and events put one access before the other (what a GPU needs; the host issue order does
    not order streams). Raises OpError at the later access of the first race.

    An earlier access stops being compared once it is ordered before the last op of every
    stream of the function (every later op on a stream follows that stream's last op), so
    the cost grows with what may still run concurrently, not with the program."""
    block = f.regions[0].blocks.first
    if block is None:
        return
    order = StreamOrder(block.ops)
    streams = {s for s, _ in order.place.values()}
    if len(streams) < 2:
        return  # one stream runs in order
    storages = Storages()
    seen: dict[object, list[Access]] = {}
    last: dict[int, Operation] = {}  # stream -> its last op so far
    kept, limit = 0, 256
    for op in block.ops:
        place = order.place.get(op)
        if place is None:
            continue  # (host-side: allocs, views)
        stream, index = place
        writes = written_operands(op) if isinstance(op, k.DeviceOp) else set(op.operands)
        for value in dict.fromkeys(v for v in op.operands if isinstance(v.type, k.BufferType)):
            storage, root, start, end = storages.region(value)
            access = Access(op, stream, index, value in writes, value, root, start, end)
            earlier = seen.setdefault(storage, [])
            for e in earlier:
                if (
                    e.stream != stream
                    and (e.writes or access.writes)
                    and start < e.end
                    and e.start < end
                    and (e.root is not root or storages.meet(e.value, value, op))
                    and not order.before(e.stream, e.index, op)
                ):
                    raise race(access, e)
            earlier.append(access)
            kept += 1
        last[stream] = op
        if kept > limit and len(last) == len(streams):
            kept = prune(seen, order, last)
            limit = max(256, 2 * kept)


def race(access: Access, earlier: Access) -> Exception:
    from ccopt.diagnostics import OpError

    verb = "writes" if access.writes else "reads"
    return OpError(
        access.op,
        f"{verb} %{name(access.value)} on stream {access.stream}, which '{earlier.op.name}' "
        f"{'writes' if earlier.writes else 'reads'} on stream {earlier.stream} "
        "with no event ordering the two",
    )


def prune(seen: dict[object, list[Access]], order: StreamOrder, last: dict[int, Operation]) -> int:
    """Drop the accesses ordered before the last op of every other stream (no later op can race
    them); returns how many are kept."""
    kept = 0
    for storage, accesses in seen.items():
        seen[storage] = [
            a
            for a in accesses
            if not all(s == a.stream or order.before(a.stream, a.index, o) for s, o in last.items())
        ]
        kept += len(seen[storage])
    return kept
