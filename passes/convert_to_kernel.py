"""`convert-to-kernel`: lower L1/L2 (dtensor, coll, sched) to L3 (kernel) for one rank.

Every value gets a buffer and every op becomes a kernel, a library call or an NCCL call that
writes into its destination:

* function results become trailing output-buffer arguments (`kernel.results` counts them) and
  are written directly where possible; `dtensor.update` writes the new value straight into the
  argument's buffer when no later op reads the old value (`kernel.updated` lists those
  arguments), else copies it there at the end;
* elementwise ops and `dtensor.fused` become `kernel.elementwise` (one kernel, scalar body);
  every kernel's body is then outlined: identical bodies become one module-level `kernel.body`
  that the kernels name (`body @name`, `outline_bodies`), so a model's repeated layers share
  them (kernels alike share one already while the function is lowered, and the L1 copies of
  their bodies are freed then);
* `coll.fused_all_reduce` becomes NCCL reduce-scatter, one kernel on the slice and NCCL
  all-gathers - in place when the gathered dimension is the leading one and divides evenly, so
  the kernel writes the updated weights straight into the gather buffer (no extra pass);
* a `coll.fused_all_reduce` whose body runs inside its algorithm (`lower-collectives{fused_body=
  in-algorithm}`) becomes one `kernel.fused_all_reduce` that keeps the body and the algorithm and
  writes its results straight into their destinations, with a workspace like the calls below;
* a collective that refers to an `algo.algorithm` (`lower-collectives`) stays one NCCL op that
  keeps the reference and gets a `scratch` workspace buffer (the algorithm's scratch chunks and
  the staging of received chunks, planned like any buffer); backends run the algorithm;
* `sched.execute` regions run on their stream between event record/wait pairs and
  `sched.await` waits on the compute stream: overlap schedules keep their concurrency;
* the function is checked first (`check_function`: every refusal the lowering would make,
  in its order), then lowered op by op, each L1 op freed once it and its readers are lowered
  (`Lowering.done`): the L1 and kernel forms of a function no longer coexist in full (they
  were the pipeline's peak memory), and a refused function is left whole;
* a function alike an earlier one (the same L1 form under another name: a model's optimizer
  steps, one per parameter) becomes a copy of that one's kernel level (`AlikeFunctions`);
* calls stay calls: each callee is lowered once, its results become output buffers the caller
  passes, its updates write the operands' buffers (the caller's arguments), and a called
  function joins its streams before returning, so a call is one op of the compute stream.

```mlir
func.func @sgd(%g: !kernel.buffer<1030xf32, @dp[P(sum)]>, %w: !kernel.buffer<1030xf32, @dp[R]>, ...)
    attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 1>}
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    FunctionType,
    LocationAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    UnknownLoc,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError
from ccopt.dialects import coll, sched
from ccopt.dialects import dtensor as dt
from ccopt.dialects import kernel as k
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE, i64_array, i64_attr
from ccopt.dialects.body import body_key, clone_body, named_only_by, walk_outside_bodies
from ccopt.dialects.construct import build_op
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType, ReplicatedAttr
from ccopt.passes.alike_functions import AlikeFunctions
from ccopt.passes.common import (
    ProgramOrder,
    append_op,
    copy_name,
    is_a,
    is_elementwise,
    of_class,
    ops_outside_bodies,
    release,
)
from ccopt.passes.fusion_groups import (
    BodyCache,
    body_signature,
    build_body,
    release_bodies,
    shares_as_copies,
)
from ccopt.passes.kernel_views import (
    FoldMemo,
    Speculated,
    concat_in_place,
    fold_fills,
    view_in_place,
)
from ccopt.passes.options import option
from ccopt.passes.scalarize import BodyBuilder
from ccopt.passes.unchanged import mark_unchanged
from ccopt.streams import stream_of
from ccopt.verifier import forget_verification

if TYPE_CHECKING:
    from ccopt.algorithms.executor import ExecutorPlan
    from ccopt.algorithms.fused_body import FusedChunks
    from ccopt.dialects.algo import Algorithm, AlgorithmOp

RESULTS_ATTR = "kernel.results"
UPDATED_ATTR = "kernel.updated"


def tensor(value: SSAValue) -> DTensorType:
    t = value.type
    assert isinstance(t, DTensorType)
    return t


class BodyNames:
    """Fresh `<prefix><N>` symbol names, none already taken in the module: `shared<N>` for the
    bodies shared while lowering, which outlining (`Outliner.place`) renames `body<N>` in the
    order kernels use them."""

    def __init__(self, module: ModuleOp, prefix: str = "shared") -> None:
        self.taken = {name for o in module.ops if (name := dt.symbol_name(o)) is not None}
        self.prefix = prefix
        self.counter = 0

    def fresh(self) -> str:
        while f"{self.prefix}{self.counter}" in self.taken:
            self.counter += 1
        name = f"{self.prefix}{self.counter}"
        self.taken.add(name)
        return name


@dataclass
class Lowering:
    """State of lowering one function: buffers of L1 values, the block being filled, streams."""

    block: Block
    source: Block | None = None  # the L1 function's block, whose ops are freed once lowered
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    destinations: dict[SSAValue, SSAValue] = field(default_factory=dict)
    futures: dict[SSAValue, tuple[SSAValue, SSAValue]] = field(default_factory=dict)
    tokens: dict[SSAValue, SSAValue] = field(default_factory=dict)
    deferred_copies: list[tuple[SSAValue, SSAValue]] = field(default_factory=list)
    regions_done: list[SSAValue] = field(default_factory=list)
    # event -> (the stream that records it, how many events that stream recorded before it)
    recorded: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)
    # (waiting stream, recording stream) -> the latest of the recording stream's events waited
    waited: dict[tuple[int, int], int] = field(default_factory=dict)
    unwaited: list[SSAValue] = field(default_factory=list)  # events whose waits were merged
    stream: int = sched.COMPUTE_STREAM
    calls: dt.CallUpdates | None = None
    order: ProgramOrder = field(default_factory=ProgramOrder)
    algorithms: dict[Operation, tuple[Algorithm, ExecutorPlan]] = field(default_factory=dict)
    bodies: BodyCache = field(default_factory=dict)  # scalar bodies of lone elementwise ops
    names: BodyNames | None = None  # given: kernels computing alike share a body right away
    # body -> [its first kernel's region, the name its kernels use once another one is alike]
    # (one lookup per kernel: a body's key is a deep tuple, hashed anew each time)
    alike: dict[object, list] = field(default_factory=dict)
    shared: list[list] = field(default_factory=list)  # the entries of `alike` named, in order
    # copies made subviews right away (`speculate`), for `view_in_place` to confirm; None: views
    # off (`ConvertToKernel.views`)
    speculative: Speculated | None = None
    memo: FoldMemo | None = None  # given: the origins of kernels' bodies are noted for it
    # given: the first kernel copying an L1 body names it until it needs the copy (`claim`)
    lazy: list[list] | None = None
    claiming: list | None = None  # the `lazy` entry of the kernel being built
    # the classes of the kernels that the rewrites after lowering look for, made (`rewrites`)
    made: set[type] = field(default_factory=set)
    concats: list[Operation] = field(default_factory=list)  # in order, for `concat_in_place`
    # where the L1 op being lowered is: the kernels made for it are located there
    location: LocationAttr = field(default_factory=UnknownLoc)

    def body_of(self, op: Operation, shareable: bool = False) -> Region | str:
        """A region for the kernel that runs `op`'s body, holding `op`'s blocks: the L1 op is
        freed once lowered (`done`), so its body moves instead of being copied (copying bodies
        was a fifth of the pass).

        A `shareable` body (its kernel may name a `kernel.body`) that an earlier op of the
        function computes alike (`body_key`) is not kept: its kernel gets the name that the
        first one's body will have (`move_bodies`) and its L1 blocks are released at once. Such
        bodies are most of a model's L1 form (every layer, every overlap chunk repeats them).
        An op that names a body (overlap's chunks: `coll.NamedBodyOp`) gets its kernel to name
        the same one; an op naming one that fusion shared (`shares_as_copies`) counts as the
        first op computing it alike, so kernels share and outlining names bodies as if the L1
        ops had carried copies (an unshareable one gets a copy)."""
        if is_a(op, coll.NamedBodyOp) and (named := op.body_name()) is not None:  # type: ignore[attr-defined]
            if not shares_as_copies(op):
                return named
            if shareable and self.names is not None:
                return self.named_alike(op, named)  # type: ignore[arg-type]
            if type(op) is dt.FusedOp:
                return named
            return clone_body(op.named_body().body)  # type: ignore[attr-defined]
        source = op.regions[0]
        block = source.blocks.first
        key = body_key(block) if shareable and self.names and block is not None else None
        entry = self.alike.get(key) if key is not None else None
        if entry is not None:
            released = Region()
            source.move_blocks(released)
            release(released)  # self-contained (it has a key): nothing to drop
            forget_verification(op)  # its verification key held the released blocks
            return self.name_of(entry)
        region = Region()
        source.move_blocks(region)
        if key is not None:
            self.alike[key] = [region, None]
            self.note_origin(region, key)
        return region

    def note_origin(self, region: Region | str, key: object) -> None:
        """`region`, a kernel's, is a body shared under `key` (`FoldMemo`)."""
        if self.memo is not None and isinstance(region, Region):
            self.memo.regions[id(region)] = (region, key)

    def named_alike(self, op: coll.NamedBodyOp, named: str) -> Region | str:
        """The body of a kernel for `op`, which names the L1 body `named`: a copy for the first
        such kernel (the L1 body is dropped once no op names it: `Outliner.finish`), the
        name the kernels computing alike share for the others."""
        key = ("named", named)
        entry = self.alike.get(key)
        if entry is not None:
            return self.name_of(entry)
        if self.lazy is not None:  # (the kernel, then its copy if it needs one: `claim`)
            self.claiming = self.alike[key] = [None, None, op.named_body()]
            return named
        region = clone_body(op.named_body().body)  # type: ignore[union-attr]
        self.alike[key] = [region, None]
        self.note_origin(region, key)
        return region

    def claim(self, kernel: Operation) -> None:
        """`kernel` is the one `named_alike` gave the L1 body's name for now: the copy it
        needs is made once folding is done (`copy_named_bodies`), or by `move_bodies`."""
        if self.claiming is not None:
            assert self.lazy is not None
            self.claiming[0] = kernel
            self.lazy.append(self.claiming)
            self.claiming = None

    def name_of(self, entry: list) -> str:
        """The name the kernels computing like `entry`'s first kernel use (`alike`)."""
        if entry[1] is None:
            assert self.names is not None
            entry[1] = self.names.fresh()
            self.shared.append(entry)
        return entry[1]

    def move_bodies(self) -> list[k.BodyOp]:
        """The bodies other kernels name become `kernel.body` ops (returned, in the order
        named), their first kernel naming them too."""
        named = []
        for entry in self.shared:
            region, name = entry[0], entry[1]
            if len(entry) == 3:  # a kernel naming an L1 body for now (`named_alike`)
                kernel, l1 = entry[0], entry[2]
                if self.memo is not None:
                    self.memo.names[name] = ("named", l1.sym_name.data)
                del kernel.properties["body_ref"]
                kernel.properties["body_ref"] = SymbolRefAttr(name)
                # its copy of `l1` is made once a kernel needs it (`lazy_bodies`)
                named.append(k.BodyOp(name, Region()))
                continue
            if self.memo is not None and (found := self.memo.regions.get(id(region))):
                self.memo.names[name] = found[1]
            kernel = region.parent
            assert isinstance(kernel, k.NamedBodyOp)
            kernel.detach_region(region)
            kernel.properties["body_ref"] = SymbolRefAttr(name)
            named.append(k.BodyOp(name, region))
        return named

    def done(self, op: Operation) -> None:
        """`op` is lowered: the L1 ops it read that nothing unlowered reads any more, and
        `op` itself if nothing reads it, are freed (`free`), so that the L1 form of the
        function shrinks while its kernel form grows (they coexisted: the pipeline's peak
        memory). `op`'s uses are dropped first; updates keep theirs (the lowering of a later
        call asks whether an update reads its operand: `read_after`), so what they read stays
        until the end. Only a function that `check_op` accepted is lowered this way: nothing
        can fail after the first op is freed."""
        if type(op) is dt.UpdateOp:
            return
        source = self.source
        producers: list[Operation] = []
        for inner in ops_outside_bodies(op) if op.regions else (op,):
            uses = inner._operand_uses  # pyright: ignore[reportPrivateUsage]
            if not uses:
                continue
            for value, use in zip(inner._operands, uses, strict=True):  # pyright: ignore[reportPrivateUsage]
                unlink_use(value, use)
                if value.first_use is None and type(value) is OpResult:
                    owner = value.op
                    if owner.parent is source:
                        producers.append(owner)
            inner._operand_uses = ()  # pyright: ignore[reportPrivateUsage]
        for producer in [op, *producers]:
            if producer.parent is not None and unused(producer):
                self.free(producer)

    def free(self, op: Operation) -> None:
        """Forget a lowered L1 op's values and release it (`release`). (Destinations keep
        theirs: a few results and updated values.)"""
        buffers = self.buffers
        for inner in ops_outside_bodies(op) if op.regions else (op,):
            for r in inner.results:
                buffers.pop(r, None)
            for region in inner.regions:
                for block in region.blocks:
                    for arg in block.args:
                        buffers.pop(arg, None)
        if type(op) is sched.ExecuteOp:
            for r in op.results:
                self.futures.pop(r, None)
                self.tokens.pop(r, None)
        if self.order.position:
            self.order.forget([op])
        assert self.source is not None
        self.source.detach_op(op)
        release(op)

    def record(self, stream: int) -> SSAValue:
        """A new event marking what `stream` has been issued so far."""
        event = self.add(k.EventRecordOp(stream)).results[0]
        self.recorded[event] = (stream, len(self.recorded))
        return event

    def wait(self, event: SSAValue) -> None:
        """The current stream waits for `event`, unless the event is its own (recorded on it
        earlier: a stream runs in order) or it already waited for that event or a later one of
        the same stream (the later event implies it). The
        waits for earlier events of that stream just before it are dropped, for the same
        reason: a region joining chunks awaits each chunk's event, and one wait does."""
        stream, seq = self.recorded[event]
        key = (self.stream, stream)
        if stream == self.stream or self.waited.get(key, -1) >= seq:
            self.unwaited.append(event)  # (its record may have no wait left)
            return
        self.waited[key] = seq
        last = self.block.last_op
        while (
            type(last) is k.EventWaitOp
            and last.properties["stream"].value.data == self.stream  # type: ignore[attr-defined]
            and self.recorded[last.operands[0]][0] == stream
        ):
            earlier = last.prev_op
            self.unwaited.append(last.operands[0])
            self.block.erase_op(last)
            release(last)
            last = earlier
        self.add(k.EventWaitOp(event, self.stream))

    def drop_unwaited_events(self) -> None:
        """Erase the records of events that no wait reads any more (`wait` merged theirs)."""
        for event in self.unwaited:
            record = event.owner
            if record.parent is not None and event.first_use is None:
                assert isinstance(record, Operation)
                self.block.erase_op(record)
                release(record)

    def add(self, op: Operation) -> Operation:
        """Append a new op to the function's block (on the current stream if it runs on one)."""
        if on_device(op):
            op.properties["stream"] = k.stream_attr(self.stream)
        if type(op.location) is UnknownLoc:
            op.location = self.location
        append_op(self.block, op)
        return op

    def buffer(self, value: SSAValue) -> SSAValue:
        return self.buffers[value]

    def destination(self, value: SSAValue) -> SSAValue:
        """Where an op writes `value`: an output or argument buffer chosen in advance, else a
        fresh allocation."""
        dest = self.destinations.get(value)
        if dest is None:
            dest = self.add(k.AllocOp(tensor(value))).result
            copy_name(dest, value)
        self.buffers[value] = dest
        return dest


def unlink_use(value: SSAValue, use: Use) -> None:
    """`value.remove_use(use)`, inlined: `done` drops every operand use of a function."""
    prev, following = use._prev_use, use._next_use  # pyright: ignore[reportPrivateUsage]
    if prev is None:
        value.first_use = following
    else:
        prev._next_use = following  # pyright: ignore[reportPrivateUsage]
    if following is not None:
        following._prev_use = prev  # pyright: ignore[reportPrivateUsage]


def unused(op: Operation) -> bool:
    """Whether no result of `op` has a use."""
    for r in op.results:
        if r.first_use is not None:
            return False
    return True


_ON_DEVICE: dict[type, bool] = {}


def pair_stream_waits(block: Block) -> None:
    """Make each event record whose one wait follows it with nothing issued on the recording
    stream in between a `kernel.stream_wait` at the wait: the same order for one op and no
    event value (most joins of overlap's chunks are such pairs). Records in between do not
    count: they change nothing a later record would mark."""
    fresh: dict[int, list[SSAValue]] = {}  # stream -> events recorded since its last other op
    roles = _PAIRING_ROLES
    op = block.first_op
    while op is not None:
        following = op._next_op  # pyright: ignore[reportPrivateUsage]
        role = roles.get(type(op))
        if role is None:
            role = roles[type(op)] = _pairing_role(op)
        if role is _RECORD:
            stream = op.properties["stream"].value.data  # type: ignore[attr-defined]
            fresh.setdefault(stream, []).append(op.results[0])
        elif role is not _HOST and fresh:
            stream = 0 if role is _CALL else op.properties["stream"].value.data  # type: ignore[attr-defined]
            fresh.pop(stream, None)
            if role is _WAIT:
                pair_if_fresh(block, op, fresh)  # type: ignore[arg-type]
        op = following


_HOST, _RECORD, _WAIT, _CALL, _WORK = "host", "record", "wait", "call", "work"
_PAIRING_ROLES: dict[type, str] = {}


def _pairing_role(op: Operation) -> str:
    """What an op of this class is to `pair_stream_waits` (`ccopt.streams.stream_of`)."""
    if isinstance(op, k.EventRecordOp):
        return _RECORD
    if isinstance(op, k.EventWaitOp):
        return _WAIT
    if isinstance(op, k.DeviceOp):
        return _WORK
    return _CALL if stream_of(op) is not None else _HOST


def pair_if_fresh(block: Block, wait: k.EventWaitOp, fresh: dict[int, list[SSAValue]]) -> None:
    """`wait` and its record as one `kernel.stream_wait`, if the record is `fresh` on its
    stream and `wait` is its only wait."""
    event = wait.event
    record = event.owner
    assert isinstance(record, k.EventRecordOp)
    on = record.stream_index()
    recorded = fresh.get(on, ())
    use = event.first_use
    if event not in recorded or use is None or use._next_use is not None:  # pyright: ignore[reportPrivateUsage]
        return
    recorded.remove(event)  # type: ignore[union-attr]
    joined = k.StreamWaitOp(on, wait.stream_index())
    joined.location = wait.location
    block.insert_op_before(joined, wait)
    for dead in (wait, record):
        block.erase_op(dead)
        release(dead)


def on_device(op: Operation) -> bool:
    """Whether `op` runs on a stream (a `kernel.DeviceOp`), remembered per op class."""
    found = _ON_DEVICE.get(type(op))
    if found is None:
        found = _ON_DEVICE[type(op)] = isinstance(op, k.DeviceOp)
    return found


# --- choosing destinations ---------------------------------------------------------------------


def aliases(value: SSAValue) -> list[SSAValue]:
    """The L1 values that share `value`'s buffer: reshapes (kernel.view) and the block arguments
    of the regions it is passed to."""
    out, todo = [], [value]
    while todo:
        v = todo.pop()
        out.append(v)
        for use in v.uses:
            reader = use.operation
            if isinstance(reader, dt.ReshapeOp):
                todo.append(reader.result)
            elif isinstance(reader, sched.ExecuteOp) and use.index >= len(reader.deps):
                block = reader.body.blocks.first
                assert block is not None
                todo.append(block.args[use.index - len(reader.deps)])
    return out


def in_place_update(update: dt.UpdateOp, f: func.FuncOp, order: ProgramOrder) -> bool:
    """Can the op producing the new value write straight into the argument's buffer? Only if
    nothing reads the old value (through the argument or a view of it) after it - reads in the
    same elementwise kernel are fine: each element is read before it is written - nothing reads
    it asynchronously (inside a region), and nothing reads it at the end of the function (a
    return or another update, which copy after all kernels)."""
    arg, value = update.target, update.value
    producer = value.owner
    body = f.body.blocks.first
    if not isinstance(producer, Operation) or producer.parent_block() is not body:
        return False
    if any(isinstance(u.operation, func.ReturnOp) for u in value.uses):
        return False
    elementwise = is_elementwise(producer) or isinstance(
        producer, dt.FusedOp | coll.FusedAllReduceOp
    )
    position = order[producer]
    for alias in aliases(arg):
        for use in alias.uses:
            reader = use.operation
            if reader is update:
                continue
            if reader is producer:
                if elementwise and alias.type == arg.type:
                    continue
                return False
            if isinstance(reader, func.ReturnOp | dt.UpdateOp) or reader.parent_block() is not body:
                return False
            if isinstance(reader, dt.ReshapeOp | sched.ExecuteOp):
                continue  # a view or a region: their readers are the alias's
            if order[reader] >= position:
                return False
    return True


def plan_destinations(
    f: func.FuncOp,
    outputs: Sequence[BlockArgument],
    buffers: dict[SSAValue, SSAValue],
    any_updates: bool = True,
) -> tuple[dict[SSAValue, SSAValue], list[int]]:
    """Values written directly into output or argument buffers, and the updated arguments
    (`any_updates` False: `f` has no `dtensor.update`, per `dt.CallUpdates`)."""
    destinations: dict[SSAValue, SSAValue] = {}
    returned = f.body.blocks[0].last_op
    assert isinstance(returned, func.ReturnOp)
    for value, out in zip(returned.arguments, outputs, strict=True):
        if isinstance(value.owner, Operation) and value not in destinations:
            destinations[value] = out
    updated: list[int] = []
    if not any_updates:
        return destinations, updated  # (no walk of the function: most models update nothing)
    order = ProgramOrder()
    for update in [o for o in walk_outside_bodies(f) if type(o) is dt.UpdateOp]:
        arg = update.target
        assert isinstance(arg, BlockArgument)
        updated.append(arg.index)
        if update.value not in destinations and in_place_update(update, f, order):
            destinations[update.value] = buffers[arg]
    return destinations, sorted(updated)


# --- ops -------------------------------------------------------------------------------------------


def lower_elementwise(low: Lowering, op: Operation) -> None:
    inputs = list(dict.fromkeys(op.operands))
    yields = [op.results[0]]
    if low.names is None:
        body: Region | str = build_body([op], inputs, yields, cache=low.bodies)
    else:
        key = ("lone", body_signature([op], inputs, yields))
        entry = low.alike.get(key)
        if entry is not None:
            body = low.name_of(entry)
        else:  # the first kernel computing it: a copy of the body (`build_body`)
            body = build_body([op], inputs, yields, cache=low.bodies)
            low.alike[key] = [body, None]
            low.note_origin(body, key)
    out = low.destination(op.results[0])
    low.add(k.ElementwiseOp([low.buffer(v) for v in inputs], [out], body))


def lower_fused(low: Lowering, op: dt.FusedOp) -> None:
    outs = [low.destination(r) for r in op.results]
    body = low.body_of(op, True)
    low.claim(
        low.add(
            k.ElementwiseOp(
                [low.buffer(v) for v in op.inputs], outs, body, index_box=op.index_box_props()
            )
        )
    )


def lower_fused_all_reduce(low: Lowering, op: coll.FusedAllReduceOp) -> None:
    """reduce-scatter, the body on the slice, all-gathers (in place when the blocks are the
    leading dimension's and equal). The first result gathered out of a buffer of its own is
    written over the reduced slice: the body reads each element of it once, where it writes
    that element, and nothing else reads it (a buffer less per fused collective)."""
    if ALGORITHM_ATTRIBUTE in op.attributes:
        lower_fused_in_algorithm(low, op)
        return
    mesh = mesh_of(op)
    iteration = op.iteration_type(mesh)
    axes = op.axes.names
    reduced = low.add(k.AllocOp(iteration)).results[0]
    with_hint(
        low.add(
            k.NcclReduceScatterOp(
                low.buffer(op.partial), reduced, axes, op.dim.value.data, op.kind.data
            )
        ),
        op,
    )
    outs, gathers = [], []
    in_place = (
        op.dim.value.data == 0 and iteration.get_shape()[0] % mesh.group_size(op.group(mesh)) == 0
    )
    spare: SSAValue | None = reduced  # (the reduced slice, until a gathered result takes it)
    for result in op.outputs:
        if result.type == iteration:
            outs.append(low.destination(result))
            continue
        full = low.destination(result)
        if in_place and not _outer_split(iteration, op.group(mesh)):
            block = low.add(k.BlockViewOp(full, axes, iteration)).results[0]
        elif spare is not None:
            block, spare = spare, None
        else:
            block = low.add(k.AllocOp(iteration)).results[0]
        outs.append(block)
        gathers.append((block, full))
    body = low.body_of(op, True)
    inputs = [reduced, *(low.buffer(v) for v in op.inputs)]
    low.claim(low.add(k.ElementwiseOp(inputs, outs, body, index_box=op.index_box_props())))
    for block, full in gathers:
        with_hint(low.add(k.NcclAllGatherOp(block, full, axes)), op)


def lower_fused_in_algorithm(low: Lowering, op: coll.FusedAllReduceOp) -> None:
    """One `kernel.fused_all_reduce` that keeps the algorithm (its `fn` steps run the body):
    results written straight into their destinations, a workspace for the algorithm's scratch
    and staging chunks at the chunk width of the sums and the gathered results together."""
    from ccopt.algorithms.executor import cached_plan, workspace_elements

    found = _chosen(op)
    assert found is not None
    alg = low.algorithms.get(found)
    if alg is None:
        algorithm = found.algorithm()
        alg = low.algorithms[found] = (algorithm, cached_plan(algorithm))
    mesh = mesh_of(op)
    elements = max(
        workspace_elements(alg[0], alg[1], chunks.chunk_elements)
        for chunks in fused_groups(op, alg[0])
    )
    scratch = None
    if elements:
        x = tensor(op.partial)
        t = DTensorType([elements], x.element_type, x.mesh, [ReplicatedAttr()] * mesh.ndim)
        scratch = low.add(k.AllocOp(t)).results[0]
        scratch.name_hint = "algo_scratch"
    outs = [low.destination(r) for r in op.outputs]
    call = k.FusedAllReduceKernelOp(
        low.buffer(op.partial),
        [low.buffer(v) for v in op.inputs],
        outs,
        scratch,
        op.axes.names,
        op.dim.value.data,
        op.kind.data,
        low.body_of(op),
        index_box=op.index_box_props(),
    )
    call.attributes[ALGORITHM_ATTRIBUTE] = op.attributes[ALGORITHM_ATTRIBUTE]
    low.add(with_hint(call, op))


def fused_groups(op: coll.FusedAllReduceOp, alg: Algorithm) -> list[FusedChunks]:
    """Every group's chunks (`ccopt.algorithms.fused_body.FusedChunks`); OpError where the body
    cannot run inside the algorithm: no layout puts every split slice where its body runs (the
    body reads a member's elements with the operands' blocks of the rank that runs it, which the
    verifier's placement rules make broadcasts or that member's own slices)."""
    from ccopt.algorithms.fused_body import fused_chunks
    from ccopt.passes.lower_collectives import split_body

    mesh = mesh_of(op)
    iteration = op.iteration_type(mesh)
    group = op.group(mesh)
    results = [tensor(r) for r in op.outputs]
    split = split_body(iteration, [tensor(v) for v in op.inputs], results, group)
    gathered = sum(t != iteration for t in results)
    out = []
    for members in mesh.groups(group):
        shapes = [iteration.local_shape(mesh, c) for c in members]
        try:
            out.append(fused_chunks(alg, [prod(s) for s in shapes], split, gathered))
        except ValueError as e:
            raise OpError(op, f"the body cannot run inside @{alg.name}: {e}") from None
    return out


def _chosen(op: Operation) -> AlgorithmOp | None:
    """The algorithm a collective names; the algo dialect (and numpy) load only where one does."""
    if ALGORITHM_ATTRIBUTE not in op.attributes:
        return None
    from ccopt.dialects.algo import chosen_algorithm

    try:
        return chosen_algorithm(op)
    except VerifyException as e:
        raise OpError(op, str(e)) from None


def _outer_split(t: DTensorType, group: Sequence[int]) -> bool:
    """Another mesh axis also splits the leading dimension: the block is not contiguous in
    the gathered buffer's own layout."""
    return any(p.split_dim == 0 for a, p in enumerate(t.placement_list) if a not in group)


def lower_collective(low: Lowering, op: coll.CollectiveOp) -> None:
    """One NCCL call; a collective that refers to an `algo.algorithm` keeps the reference and
    gets a workspace buffer for the algorithm's scratch and staging chunks (planned by
    plan-memory like any buffer), and the backend runs the algorithm instead of the library."""
    scratch = algorithm_workspace(low, op)
    cls = k.NCCL_OPS[type(op)]
    props = {k_: v for k_, v in op.properties.items() if k_ not in ("algorithm", "chunks")}
    attrs = {}
    if ALGORITHM_ATTRIBUTE in op.attributes:
        attrs[ALGORITHM_ATTRIBUTE] = op.attributes[ALGORITHM_ATTRIBUTE]
    if op.algorithm is not None:  # (`with_hint`)
        attrs["algorithm"] = op.algorithm

    def call(source: SSAValue, out: SSAValue, scratch: SSAValue | None = None) -> Operation:
        made = build_op(cls, operands=[source, out, scratch], properties=dict(props))
        made.attributes.update(attrs)
        return made

    if (
        cls is k.LocalBlockOp
        and scratch is None
        and low.speculative is not None
        and op.result not in low.destinations
    ):
        speculate(low, op.result, low.buffer(op.input), [0] * tensor(op.result).rank, call)
        return
    out = low.destination(op.result)
    low.add(call(low.buffer(op.input), out, scratch))


def algorithm_workspace(low: Lowering, op: coll.CollectiveOp) -> SSAValue | None:
    """The workspace buffer of a collective run through its algorithm (None: it names none, or
    needs no scratch): the largest over the ranks, a replicated 1-D buffer."""
    if ALGORITHM_ATTRIBUTE not in op.attributes:
        return None  # (most collectives: `_chosen` finds nothing)
    from ccopt.algorithms.executor import cached_plan, geometries, workspace_elements

    found = _chosen(op)
    if found is None:
        return None
    alg = low.algorithms.get(found)
    if alg is None:
        algorithm = found.algorithm()
        alg = low.algorithms[found] = (algorithm, cached_plan(algorithm))
    mesh = mesh_of(op)
    x, out = tensor(op.input), tensor(op.result)
    axes = op.group(mesh)
    elements = max(
        workspace_elements(alg[0], alg[1], g.width) for g in geometries(alg[0], x, out, mesh, axes)
    )
    if not elements:
        return None
    t = DTensorType([elements], x.element_type, x.mesh, [ReplicatedAttr()] * len(x.placement_list))
    buffer = low.add(k.AllocOp(t)).results[0]
    buffer.name_hint = "algo_scratch"
    return buffer


def with_hint(call: Operation, op: coll.CollectiveOp | coll.FusedAllReduceOp) -> Operation:
    """The collective's algorithm hint stays on the NCCL call, for the cost model and for
    backends that implement algorithms (NCCL picks its own)."""
    if op.algorithm is not None:
        call.attributes["algorithm"] = op.algorithm
    return call


def scalar_kernel(low: Lowering, inputs: Sequence[SSAValue], out: SSAValue, fn) -> None:  # noqa: ANN001
    """A kernel whose body is `fn(builder, input scalars) -> result scalar`."""
    block = Block(arg_types=[i64, *(k.tensor_of(v).element_type for v in inputs)])
    builder = BodyBuilder(block)
    block.add_op(dt.YieldOp(fn(builder, block.args[1:])))
    low.add(k.ElementwiseOp(list(inputs), [out], Region(block)))


def lower_norm(low: Lowering, op: dt.NormOp) -> None:
    """sqrt(sum(x * x)): a squaring kernel, a reduction over every dimension, a sqrt kernel."""
    x = tensor(op.input)
    squares = low.add(k.AllocOp(x)).results[0]
    scalar_kernel(
        low, [low.buffer(op.input)], squares, lambda b, v: b.add(arith.MulfOp(v[0], v[0]))
    )
    total_type = dt.infer.infer_reduce(x, "sum", list(range(x.rank)), False)
    total = low.add(k.AllocOp(total_type)).results[0]
    low.add(
        k.ReduceKernelOp(
            dt.ReduceKindAttr(dt.ReduceKind.SUM), squares, total, list(range(x.rank)), False
        )
    )
    out = low.destination(op.result)
    scalar_kernel(
        low, [total], out, lambda b, v: b.in_accumulation(v, lambda u: b.add(math.SqrtOp(u)))
    )


def lower_op(low: Lowering, op: Operation) -> None:
    """Emit the L3 form of one L1/L2 op (the lowering of its class, `lowering_of`)."""
    lowering = _LOWERINGS.get(type(op))
    if lowering is None:
        lowering = _LOWERINGS[type(op)] = lowering_of(op)
    lowering(low, op)


Lower = Callable[[Lowering, Any], None]
_LOWERINGS: dict[type, Lower] = {}
"""Per op class, its lowering (`lowering_of`): a `match` on op classes runs ABCMeta's Python
`isinstance` check for every case tried, for every op lowered."""


def lowering_of(op: Operation) -> Lower:
    """The function lowering ops of `op`'s class; the order of the cases matters (a class
    pattern matches subclasses too)."""
    match op:
        case _ if is_elementwise(op):
            return lower_elementwise
        case dt.FusedOp():
            return lower_fused
        case dt.MatmulOp():
            return lower_matmul
        case dt.ReduceOp():
            return lower_reduce
        case dt.NormOp():
            return lower_norm
        case dt.SoftmaxOp():
            return lower_softmax
        case dt.LayerNormOp():
            return lower_layer_norm
        case dt.SliceOp():
            return lower_slice
        case dt.ConcatOp():
            return lower_concat
        case dt.TransposeOp():
            return lower_transpose
        case dt.ReshapeOp():
            return lower_reshape
        case dt.ConstantOp():
            return lower_constant
        case dt.FillOp():
            return lower_fill
        case dt.UpdateOp():
            return lower_update
        case coll.FusedAllReduceOp():
            return lower_fused_all_reduce
        case coll.CollectiveOp():
            return lower_collective
        case func.CallOp():
            return lower_call
        case sched.ExecuteOp():
            return lower_execute
        case sched.AwaitOp():
            return lower_await
        case sched.WaitOp():
            return lower_wait
        case _:
            return no_lowering


def no_lowering(low: Lowering, op: Operation) -> None:
    from ccopt.dialects import BUILTIN_DIALECTS, DIALECTS

    dialect = op.name.split(".", 1)[0]
    if dialect in DIALECTS and dialect not in BUILTIN_DIALECTS:
        raise OpError(
            op,
            f"has no lowering to the kernel level: ops of a plugin's dialect ('{dialect}') are "
            "not lowered; a pass of the plugin rewrites them into ccopt's ops before "
            "convert-to-kernel",
        )
    raise OpError(op, "has no lowering to the kernel level")


def lower_matmul(low: Lowering, op: dt.MatmulOp) -> None:
    b = low.buffer
    low.add(
        k.GemmOp(
            b(op.lhs),
            b(op.rhs),
            low.destination(op.result),
            op.transpose_lhs is not None,
            op.transpose_rhs is not None,
        )
    )


def lower_reduce(low: Lowering, op: dt.ReduceOp) -> None:
    low.add(
        k.ReduceKernelOp(
            op.kind,
            low.buffer(op.input),
            low.destination(op.result),
            op.dims.get_values(),
            op.keepdim is not None,
        )
    )


def lower_softmax(low: Lowering, op: dt.SoftmaxOp) -> None:
    low.add(k.SoftmaxKernelOp(low.buffer(op.input), low.destination(op.result), op.dim.value.data))


def lower_layer_norm(low: Lowering, op: dt.LayerNormOp) -> None:
    b = low.buffer
    weight = b(op.weight) if op.weight is not None else None
    bias = b(op.bias) if op.bias is not None else None
    low.add(
        k.LayerNormKernelOp(
            b(op.input), weight, bias, low.destination(op.result), op.eps.value.data
        )
    )


def lower_slice(low: Lowering, op: dt.SliceOp) -> None:
    offsets = op.offsets.get_values()
    if low.speculative is not None and op.result not in low.destinations:
        speculate(
            low,
            op.result,
            low.buffer(op.input),
            offsets,
            lambda source, out: k.SliceKernelOp(source, out, offsets),
        )
        return
    low.add(k.SliceKernelOp(low.buffer(op.input), low.destination(op.result), offsets))


def speculate(
    low: Lowering,
    value: SSAValue,
    source: SSAValue,
    offsets: Sequence[int],
    copy: Callable[[SSAValue, SSAValue], Operation],
) -> None:
    """`value`, a box of its operand's buffer that a copy into a fresh buffer would hold, as a
    subview of that buffer right away: `view_in_place` would make the copy one in nearly every
    case (a model's chunks and local blocks), and building the buffer and the copy only to
    erase them was a fifth of the ops lowered. `view_in_place` confirms each such view as it
    would have made it, or puts back the buffer and the copy (`copy(source, buffer)`, issued
    on the stream of now)."""
    assert low.speculative is not None
    view = k.SubviewOp(source, offsets, tensor(value))
    copy_name(view.result, value)  # the buffer's name,
    name = view.result.name_hint
    copy_name(view.result, view.result)  # and the view's, named after the buffer (xDSL's setter)
    append_op(low.block, view)
    low.buffers[value] = view.result
    low.speculative[id(view)] = (view, list(offsets), low.stream, copy, name)


def lower_concat(low: Lowering, op: dt.ConcatOp) -> None:
    low.concats.append(
        low.add(
            k.ConcatKernelOp(
                [low.buffer(v) for v in op.inputs], low.destination(op.result), op.dim.value.data
            )
        )
    )


def lower_transpose(low: Lowering, op: dt.TransposeOp) -> None:
    low.add(
        k.TransposeKernelOp(low.buffer(op.input), low.destination(op.result), op.perm.get_values())
    )


def lower_reshape(low: Lowering, op: dt.ReshapeOp) -> None:
    view = low.add(k.ViewOp(low.buffer(op.input), tensor(op.result))).results[0]
    low.buffers[op.result] = view
    if op.result in low.destinations:
        low.add(k.CopyOp(view, low.destinations[op.result]))
        low.buffers[op.result] = low.destinations[op.result]


def lower_constant(low: Lowering, op: dt.ConstantOp) -> None:
    low.add(k.ConstantKernelOp(op.value, low.destination(op.result)))


def lower_fill(low: Lowering, op: dt.FillOp) -> None:
    low.made.add(k.FillKernelOp)
    low.add(k.FillKernelOp(op.value, low.destination(op.result)))


def lower_update(low: Lowering, op: dt.UpdateOp) -> None:
    if low.buffer(op.value) is not low.buffer(op.target):
        low.deferred_copies.append((low.buffer(op.value), low.buffer(op.target)))


def lower_await(low: Lowering, op: sched.AwaitOp) -> None:
    buffer, done = low.futures[op.future]
    low.wait(done)
    low.buffers[op.result] = buffer


def lower_wait(low: Lowering, op: sched.WaitOp) -> None:
    for token in op.tokens:
        low.wait(low.tokens[token])


def lower_call(low: Lowering, op: func.CallOp) -> None:
    """A call of the callee's kernel-level function: the operands' buffers, then destinations
    for its results (the callee writes them, as it writes its updates into the operands'
    buffers). An updated operand that the caller still reads afterwards is saved first: at L1
    the caller's later reads see the value from before the call."""
    check_call_site(low, op)
    operands = [low.buffer(v) for v in op.arguments]
    assert low.calls is not None
    for i in low.calls.updated_operands(op):
        operand = op.arguments[i]
        if read_after(low, operand, op):
            saved = low.add(k.AllocOp(tensor(operand))).results[0]
            saved.name_hint = operand.name_hint
            low.add(k.CopyOp(operands[i], saved))
            low.buffers[operand] = saved
    outs = [low.destination(r) for r in op.results]
    low.add(func.CallOp(op.callee, [*operands, *outs], []))


def check_call_site(low: Lowering, op: func.CallOp) -> None:
    if low.stream != sched.COMPUTE_STREAM:
        raise OpError(op, "a call inside a region on another stream is not lowered")
    require_tensors(op, op.arguments, "operand", "passed to a call")
    require_tensors(op, op.results, "result", "returned by a call")


def read_after(low: Lowering, operand: SSAValue, call: func.CallOp) -> bool:
    """Whether the caller reads `operand` after `call`; through a view it is refused (the view
    would still see the updated buffer)."""
    later = False
    for alias in aliases(operand):
        for use in alias.uses:
            reader = use.operation
            if reader is call or reader.parent_block() is not call.parent_block():
                if reader is not call and alias is operand:
                    raise OpError(call, "an operand it updates is read inside a region")
                continue
            if (
                isinstance(reader, func.ReturnOp | dt.UpdateOp)
                or low.order[reader] > low.order[call]
            ):
                if alias is not operand:
                    raise OpError(call, "an operand it updates is read after it through a reshape")
                later = True
    return later


def require_tensors(op: Operation, values: Sequence[SSAValue], what: str, how: str) -> None:
    """Regions at the kernel level exchange buffers only: every value must be a tensor."""
    for i, value in enumerate(values):
        if not isinstance(value.type, DTensorType):
            raise OpError(
                op,
                f"{what} #{i} is {value.type}: only !dtensor.tensor values are {how} "
                "at the kernel level",
            )


def execute_parts(
    op: sched.ExecuteOp,
) -> tuple[Block, Sequence[SSAValue], Sequence[SSAValue], Sequence[SSAValue]]:
    """(body block, deps, inputs, futures) of a verified `sched.execute`: its inputs are the
    last operands, one per block argument (the verifier compares their types), its futures
    the results after the token. IRDL's accessors of variadic operands unpack the segment
    sizes on every read, and each region was read several times."""
    block = op.regions[0].first_block
    assert block is not None
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    split = len(operands) - len(block._args)  # pyright: ignore[reportPrivateUsage]
    part = tuple.__getitem__  # (SSAValues slices in Python code)
    return (
        block,
        part(operands, slice(None, split)),
        part(operands, slice(split, None)),
        part(op.results, slice(1, None)),
    )


def lower_execute(low: Lowering, op: sched.ExecuteOp) -> None:
    """The region on its stream: wait for the inputs (and deps) recorded on the issuing stream,
    run, record completion for the awaits."""
    issuing, stream = low.stream, op.stream.value.data
    block, deps, inputs, futures = execute_parts(op)
    require_tensors(op, inputs, "input", "passed to a region")
    ready = low.record(issuing)
    low.stream = stream
    low.wait(ready)
    for dep in deps:
        low.wait(low.tokens[dep])
    buffers = low.buffers
    for arg, value in zip(block._args, inputs, strict=True):  # pyright: ignore[reportPrivateUsage]
        buffers[arg] = buffers[value]
    for inner in block.ops:
        if type(inner) is sched.YieldOp:
            values = inner._operands  # pyright: ignore[reportPrivateUsage]
            require_tensors(inner, values, "value", "yielded")
            done = low.record(stream)
            low.regions_done.append(done)
            for future, value in zip(futures, values, strict=True):
                low.futures[future] = (buffers[value], done)
            low.tokens[op.results[0]] = done
        else:
            lower_op(low, inner)
    low.stream = issuing


# --- checking before lowering ---------------------------------------------------------------


def check_function(f: func.FuncOp, calls: dt.CallUpdates) -> None:
    """Raise the OpError that lowering `f` would raise, before anything is lowered: lowering
    frees each L1 op once it is lowered (`Lowering.done`), so a refusal met halfway could no
    longer leave the function whole. The checks are the lowering's own, in its order (ops in
    program order, regions' ops where their region is lowered), so the first refusal is the
    one lowering would have made."""
    block = f.body.blocks[0]
    check_placements_chosen(f)
    low = Lowering(Block(), calls=calls)
    for op in block.ops:
        if type(op) is not func.ReturnOp:
            check_op(low, op)


def check_placements_chosen(f: func.FuncOp) -> None:
    """A value whose placement is still open (`?`) has no layout to lower: say what chooses one
    (lowering met it at the first kernel that read it, in the kernel op's words)."""
    advice = "run propagate-placements or auto-shard first"
    for i, a in enumerate(f.body.blocks[0].args):
        if isinstance(a.type, DTensorType) and a.type.is_open:
            raise OpError(f, f"argument #{i} has an open placement (?): {advice}")
    for op in f.walk():
        for r in op.results:
            if isinstance(r.type, DTensorType) and r.type.is_open:
                raise OpError(op, f"result #{r.index} has an open placement (?): {advice}")


def check_op(low: Lowering, op: Operation) -> None:
    """What lowering `op` would refuse (`lowering_of`)."""
    lowering = _LOWERINGS.get(type(op))
    if lowering is None:
        lowering = _LOWERINGS[type(op)] = lowering_of(op)
    check = _CHECKS.get(lowering)
    if check is not None:
        check(low, op)


def check_fused_all_reduce(low: Lowering, op: coll.FusedAllReduceOp) -> None:
    if ALGORITHM_ATTRIBUTE in op.attributes:
        found = _chosen(op)
        assert found is not None
        fused_groups(op, found.algorithm())


def check_collective(low: Lowering, op: coll.CollectiveOp) -> None:
    _chosen(op)


def check_call(low: Lowering, op: func.CallOp) -> None:
    check_call_site(low, op)
    assert low.calls is not None
    for i in low.calls.updated_operands(op):
        read_after(low, op.arguments[i], op)


def check_execute(low: Lowering, op: sched.ExecuteOp) -> None:
    block, _, inputs, _ = execute_parts(op)
    require_tensors(op, inputs, "input", "passed to a region")
    issuing, low.stream = low.stream, op.stream.value.data
    for inner in block.ops:
        if type(inner) is sched.YieldOp:
            require_tensors(inner, inner._operands, "value", "yielded")  # pyright: ignore[reportPrivateUsage]
        else:
            check_op(low, inner)
    low.stream = issuing


_CHECKS: dict[Lower, Lower] = {
    no_lowering: no_lowering,
    lower_fused_all_reduce: check_fused_all_reduce,
    lower_collective: check_collective,
    lower_call: check_call,
    lower_execute: check_execute,
}
"""Per lowering, the checks that raise its refusals (`check_op`); the others refuse nothing."""


# --- functions ---------------------------------------------------------------------------------


def root_buffer(buffer: SSAValue, speculative: Speculated | None = None) -> SSAValue:
    """The buffer whose storage `buffer` is (through views and block views; a `speculative`
    view is the buffer its copy would fill)."""
    while isinstance(owner := buffer.owner, k.ViewOp | k.BlockViewOp | k.SubviewOp):
        if speculative and id(owner) in speculative:
            break
        buffer = owner.source
    return buffer


def finish(
    low: Lowering, returned: func.ReturnOp, outputs: Sequence[SSAValue], join: bool = False
) -> None:
    """The copies after all kernels, on the compute stream: results that were not written in
    place first (they read the values the function computed, before updates overwrite
    arguments), then updates that could not be done in place, each reading the value from
    before any of them (a source that an earlier copy overwrites is saved first)."""
    results = [
        (low.buffer(value), out)
        for value, out in zip(returned.arguments, outputs, strict=True)
        if low.buffer(value) is not out
    ]
    if not results and not low.deferred_copies and not join:
        return
    for done in low.regions_done:
        low.wait(done)  # a region nobody awaited may still write a source or read a target
    for source, out in results:
        low.add(k.CopyOp(source, out))
    written: set[SSAValue] = set()
    copies = []
    spec = low.speculative
    for source, target in low.deferred_copies:
        if root_buffer(source, spec) is target and k.tensor_of(source) == k.tensor_of(target):
            continue  # a view of the target itself: the value is already there
        if root_buffer(source, spec) in written:
            saved = low.add(k.AllocOp(k.tensor_of(source))).results[0]
            low.add(k.CopyOp(source, saved))
            source = saved
        copies.append((source, target))
        written.add(root_buffer(target, spec))
    for source, target in copies:
        low.add(k.CopyOp(source, target))


def check_signature(f: func.FuncOp) -> None:
    """What the lowering needs: one block, and !dtensor.tensor arguments and results."""
    if len(f.body.blocks) != 1:
        raise OpError(
            f,
            f"has {len(f.body.blocks)} blocks: only single-block functions are lowered to the "
            "kernel level",
        )
    block = f.body.blocks[0]
    for arg in block.args:
        if not isinstance(arg.type, DTensorType):
            raise OpError(
                f,
                f"argument #{arg.index} is {arg.type}: only !dtensor.tensor arguments become "
                "kernel-level buffers",
            )
    returned = block.last_op
    if not isinstance(returned, func.ReturnOp):
        raise OpError(f, "the body must end with func.return")
    for i, value in enumerate(returned.arguments):
        if not isinstance(value.type, DTensorType):
            raise OpError(
                returned,
                f"result #{i} is {value.type}: only !dtensor.tensor results become kernel-level "
                "buffers",
            )


def lower_function(
    f: func.FuncOp,
    calls: dt.CallUpdates,
    called: bool = False,
    names: BodyNames | None = None,
    speculative: Speculated | None = None,
    memo: FoldMemo | None = None,
    lazy: list[list] | None = None,
    made: set[type] | None = None,
    concats: list[Operation] | None = None,
) -> tuple[func.FuncOp, list[k.BodyOp]]:
    """The kernel-level form of `f`, and the `kernel.body` ops its kernels name. A function
    that is `called` joins its streams into the compute stream before it returns, so that a
    call is one op of the caller's compute stream (`ccopt.streams`). With `names`, kernels
    that compute alike share their body as they are made (`Lowering.body_of`). `f` must have
    passed `check_function`: its L1 ops are freed as they are lowered (`Lowering.done`), and
    what is left of it afterwards is for the caller to erase."""
    old = f.body.blocks[0]
    returned = old.last_op
    assert isinstance(returned, func.ReturnOp)
    arg_types = [k.buffer_type(tensor(a)) for a in old.args]
    out_types = [k.buffer_type(tensor(v)) for v in returned.arguments]
    block = Block(arg_types=[*arg_types, *out_types])
    for new, a in zip(block.args, old.args, strict=False):
        new.name_hint = a.name_hint
    outputs = list(block.args[len(old.args) :])
    for i, out in enumerate(outputs):
        out.name_hint = f"result{i}"
    low = Lowering(
        block,
        source=old,
        calls=calls,
        names=names,
        speculative=speculative,
        memo=memo,
        lazy=lazy,
        made=set() if made is None else made,
        concats=[] if concats is None else concats,
    )
    low.buffers.update(zip(old.args, block.args, strict=False))
    updated = sorted(calls.updated[f.sym_name.data])  # directly or through calls
    low.destinations, _ = plan_destinations(f, outputs, low.buffers, bool(updated))
    op = old.first_op
    while op is not None:
        following = op.next_op  # (`done` may free `op`)
        if type(op) is not func.ReturnOp:
            low.location = op.location
            lower_op(low, op)
            low.done(op)
        op = following
    finish(low, returned, outputs, join=called)
    low.drop_unwaited_events()
    bodies = low.move_bodies()
    release_bodies(low.bodies)
    block.add_op(func.ReturnOp())
    lowered = func.FuncOp(
        f.sym_name.data, FunctionType.from_lists(list(block.arg_types), []), Region(block)
    )
    lowered.location = f.location
    if f.arg_attrs is not None:  # (`{ccopt.positive}`: the runner's inputs at either level)
        empty = DictionaryAttr({})
        lowered.arg_attrs = ArrayAttr([*f.arg_attrs.data, *(empty for _ in outputs)])
    lowered.attributes[RESULTS_ATTR] = i64_attr(len(outputs))
    lowered.attributes[UPDATED_ATTR] = i64_array(updated)
    if f.sym_visibility is not None:
        lowered.sym_visibility = StringAttr(f.sym_visibility.data)
    return lowered, bodies


def copy_named_bodies(lazy: list[list], memo: FoldMemo | None) -> None:
    """The kernels that `named_alike` let name an L1 body (`Lowering.claim`) get the copy they
    would have had, unless folding gave them a body (`fold_fills`) or other kernels computed
    alike (they name a body `move_bodies` made: `lazy_bodies`); with a `memo`, a kernel whose copy an earlier
    function's alike kernel had names the body outlining made of that one (`FoldMemo`). Copies
    made at lowering were mostly folded or outlined away again."""
    for kernel, shared, l1 in lazy:
        if shared is not None or (memo is not None and id(kernel) in memo.changed):
            continue  # (it names the body `move_bodies` made, or folding gave it one)
        origin = (("named", l1.sym_name.data),)
        ref = memo.refs.get(origin) if memo is not None else None
        del kernel.properties["body_ref"]
        if ref is not None:
            kernel.properties["body_ref"] = ref  # (where outlining puts it)
        else:
            kernel.add_region(clone_body(l1.body))
            if memo is not None:
                memo.made.append((kernel, origin))
        forget_verification(kernel)


def lazy_bodies(lazy: list[list]) -> dict[str, k.BodyOp]:
    """The bodies shared while lowering that are an L1 body's copy to be (`move_bodies` left
    them empty), by name -> that L1 body: folding copies the L1 body for a kernel naming one
    (`fold_inputs`), outlining fills one that a kernel still names (`Outliner.function`), and
    one that no kernel names any more (optimizer steps alike: all fold) is never copied."""
    return {shared: l1 for _, shared, l1 in lazy if shared is not None}


def allow_tf32(f: func.FuncOp, others: list[k.GemmOp]) -> int:
    """Mark every f32 gemm of a lowered function as allowed to compute in TF32; how many there
    were (the other gemms go to `others`)."""
    marked = 0
    for op in f.walk():
        if not isinstance(op, k.GemmOp):
            continue
        if isinstance(k.tensor_of(op.out).element_type, Float32Type):
            op.tf32 = UnitAttr()
            marked += 1
        else:
            others.append(op)
    return marked


def warn_tf32_unused(module: ModuleOp, others: Sequence[k.GemmOp]) -> None:
    """`tf32=true` on a program without an f32 gemm (a bf16 model) does nothing: say so, at its
    first gemm, rather than let the user believe TF32 is on."""
    import warnings

    from ccopt.diagnostics import OpWarning

    if others:
        kind = k.tensor_of(others[0].out).element_type
        message = f"tf32=true has no effect: no gemm of the program is f32 (this one is {kind})"
        warnings.warn(OpWarning(others[0], message), stacklevel=2)
    else:
        message = "tf32=true has no effect: the program has no gemm"
        warnings.warn(OpWarning(module, message), stacklevel=2)


def outline_bodies(module: ModuleOp) -> None:
    """Give every kernel's scalar body a name: identical bodies (same ops, types and attributes,
    dropout seeds included; `body_key`, one pass per body) become one module-level
    `kernel.body`, placed after the function that first uses it, and the kernels name it. The
    kernel level of a model otherwise repeats the same few bodies in every layer - most of its
    ops - and everything reading it (printing, verifying, the CUDA backend) paid for each copy.
    Bodies already named in the module are reused; those no kernel names any more are dropped."""
    outliner = Outliner(module)
    for f in [o for o in module.ops if isinstance(o, func.FuncOp)]:
        outliner.function(f)
    outliner.finish()


class Outliner:
    """`outline_bodies`, one function at a time (convert-to-kernel outlines each function as
    soon as it is lowered, its `early` bodies - shared while lowering, `Lowering.body_of` -
    taking the names and places that outlining gives bodies in the order kernels use them)."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.shared: dict[object, k.BodyOp] = {}
        self.refs: dict[k.BodyOp, SymbolRefAttr] = {}  # one attribute per body
        self.names = BodyNames(module, "body")
        skipped = named_only_by(module, shares_as_copies)  # their kernels share as if inline
        for o in module.ops:
            if isinstance(o, k.BodyOp) and o.sym_name.data not in skipped:
                key = body_key(o.body_block())
                if key is not None:
                    self.shared.setdefault(key, o)
        self.used: set[str] = set()

    def fresh(self) -> str:
        return self.names.fresh()

    def ref(self, named: k.BodyOp) -> SymbolRefAttr:
        ref = self.refs.get(named)
        if ref is None:
            ref = self.refs[named] = SymbolRefAttr(named.sym_name)
        self.used.add(named.sym_name.data)
        return ref

    def function(
        self,
        f: func.FuncOp,
        early: Sequence[k.BodyOp] = (),
        empty: Mapping[str, k.BodyOp] | None = None,
    ) -> None:
        """Outline `f`'s bodies; `early` are those shared while lowering it, `empty` those of
        them still to be copied from an L1 body (`lazy_bodies`)."""
        after: Operation = f
        pending = {b.sym_name.data: b for b in early}
        placed: dict[str, k.BodyOp] = {}  # early name -> the body its kernels name now
        for op in of_class(ops_outside_bodies(f), k.NamedBodyOp):
            if not op.regions:
                name = op.body_name()
                if name is None:
                    continue
                if name not in pending:  # named before this pass
                    self.used.add(name)
                    continue
                named = placed.get(name)
                if named is None:
                    if empty and name in empty:  # its copy, needed now
                        clone_body(empty[name].body).move_blocks(pending[name].body)
                    named = placed[name] = self.place(pending[name], after)
                    if named is pending[name]:
                        after = named
                op.properties["body_ref"] = self.ref(named)
                continue
            key = body_key(op.body_block())
            if key is None:
                continue
            named = self.shared.get(key)
            region = op.detach_region(op.regions[0])
            if named is not None:
                release(region)  # self-contained (it has a key): nothing to drop
            else:
                named = self.shared[key] = k.BodyOp(self.fresh(), region)
                Rewriter.insert_op(named, InsertPoint.after(after))
                dt.note_symbols(self.module, [named])
                after = named
            op.properties["body_ref"] = self.ref(named)
        for name, body in pending.items():
            if name not in placed:  # its kernels' bodies were all changed (`fold_fills`)
                Rewriter.erase_op(body)
                release(body)

    def place(self, body: k.BodyOp, after: Operation) -> k.BodyOp:
        """A body shared while lowering, at its first use: the body already named alike, or
        itself, renamed and moved after `after`."""
        key = body_key(body.body_block())
        named = self.shared.get(key) if key is not None else None
        if named is not None:
            Rewriter.erase_op(body)
            release(body)
            return named
        body.sym_name = StringAttr(self.fresh())
        body.detach()
        Rewriter.insert_op(body, InsertPoint.after(after))
        dt.note_symbols(self.module, [body])
        if key is not None:
            self.shared[key] = body
        return body

    def finish(self) -> None:
        """Drop the bodies no kernel names any more."""
        for o in [o for o in self.module.ops if isinstance(o, k.BodyOp)]:
            if o.sym_name.data not in self.used:  # its kernels now carry a body of their own
                Rewriter.erase_op(o)
                release(o)


def call_context(f: func.FuncOp, calls: dt.CallUpdates) -> tuple:
    """What lowering reads of how calls see `f`: the arguments it updates, whether it is
    called (it joins its streams then)."""
    name = f.sym_name.data
    return (tuple(sorted(calls.updated[name])), name in calls.calls)


def first_of_kind(keys: Sequence[tuple | None]) -> list[bool]:
    """Per key, whether no earlier one is the same (None: always)."""
    seen: set[int] = set()  # (by `id`: alike functions share their key, `AlikeFunctions.key`)
    out = []
    for key in keys:
        out.append(key is None or id(key) not in seen)
        if key is not None:
            seen.add(id(key))
    return out


@dataclass(frozen=True)
class ConvertToKernel(ModulePass):
    """Lower dtensor/coll/sched to the kernel level: buffers, kernels, gemm, NCCL calls, events."""

    name = "convert-to-kernel"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    views: bool = option(
        True,
        "Read slices and ranks' blocks in place (kernel.subview: strided rows for cuBLAS and "
        "elementwise kernels), let collectives write chunks into their concatenation and fold "
        "fills read only by elementwise kernels into their bodies; false keeps every copy.",
    )
    tf32: bool = option(
        False,
        "Let f32 gemms round their inputs to TF32 on tensor cores (cuBLAS "
        "CUBLAS_COMPUTE_32F_FAST_TF32): faster, about 10 mantissa bits; off keeps full f32.",
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [o for o in op.ops if isinstance(o, func.FuncOp)]
        lowered = [f for f in functions if "kernel.results" in f.attributes]
        if lowered:
            if len(lowered) == sum(1 for f in functions if f.body.blocks):
                mark_unchanged(op)  # (lowered before: nothing left to do, as -t cuda expects)
                return
            raise OpError(
                lowered[0],
                "is at the kernel level already but other functions are not: convert-to-kernel "
                "lowers a module's functions together (their calls change form)",
            )
        calls = dt.CallUpdates(op)
        bodies = {f.sym_name.data for f in functions if f.body.blocks}
        for callee, sites in calls.calls.items():
            if callee not in bodies:
                raise OpError(sites[0], f"calls @{callee}, which has no body to lower")
        lowerable = [f for f in functions if f.body.blocks]
        # A function alike an earlier one (`AlikeFunctions`: its L1 form the same, and how
        # calls see it) is lowered to a copy of that one's kernel-level form, folded and
        # outlined as it is: its kernels name the bodies that one's name (outlining gives a
        # body alike the name it gave the first; none is left inline in a function copied).
        # Nor is it checked: it passes or fails as the earlier one, checked first. A model's
        # optimizer steps are such functions, one per parameter.
        alike = AlikeFunctions(lowerable)
        keys = [alike.key(f, call_context(f, calls)) for f in lowerable]
        firsts = first_of_kind(keys)  # (one alike an earlier function passes as that one)
        for f, first in zip(lowerable, firsts, strict=True):
            if first:
                check_signature(f)
        for f, first in zip(lowerable, firsts, strict=True):
            if first:
                check_function(f, calls)  # every refusal before anything is lowered
        names = BodyNames(op)
        outliner = Outliner(op)
        memo = FoldMemo() if self.views else None
        tf32_marked, not_f32 = 0, []
        for f, key in zip(lowerable, keys, strict=True):
            if key is not None and alike.replace(key, f) is not None:
                continue  # (an alike function's lowering, copied)
            speculative: Speculated | None = {} if self.views else None
            lazy: list[list] = []
            made: set[type] = set()  # (no concat or fill made: no block scan looking for one)
            concats: list[Operation] = []
            lowered, bodies = lower_function(
                f,
                calls,
                called=f.sym_name.data in calls.calls,
                names=names,
                speculative=speculative,
                memo=memo,
                lazy=lazy,
                made=made,
                concats=concats,
            )
            # in the module before the rewrites below (its kernels may name bodies), and the
            # L1 function freed first: they need transient memory of their own
            Rewriter.insert_op([lowered, *bodies], InsertPoint.after(f))
            f.detach()
            dt.note_symbols(op, [lowered, *bodies])  # (its kernels look their bodies up)
            release(f)  # isolated from above: nothing outside uses it, nor it anything outside
            if self.views:
                view_in_place(lowered.body.blocks[0], speculative)
                if concats:
                    concat_in_place(lowered.body.blocks[0], concats)
            empty = lazy_bodies(lazy)
            if self.views:
                if k.FillKernelOp in made:
                    fold_fills(
                        lowered.body.blocks[0], {b.sym_name.data for b in bodies}, memo, empty
                    )
            pair_stream_waits(lowered.body.blocks[0])  # (after the views' copies: the final order)
            copy_named_bodies(lazy, memo)
            if self.tf32:
                tf32_marked += allow_tf32(lowered, not_f32)
            outliner.function(lowered, bodies, empty)
            if memo is not None:
                memo.record()
            if key is not None:
                alike.settle(key, f, lowered)
        outliner.finish()
        if self.tf32 and not tf32_marked:
            warn_tf32_unused(op, not_f32)
