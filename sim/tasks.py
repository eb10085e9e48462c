"""A program as the simulator sees it: a list of tasks in issue order, each on a stream, with
the tasks it must wait for.

Every level reads the same way. Ops run on stream 0 unless a `sched.execute` (L2) or a kernel
op's `stream` (L3) says otherwise; a stream runs its tasks in issue order (FIFO). What else
orders tasks is exactly what the interpreter and the GPU respect:
- L1/L2: an op waits for the producers of its operands; `sched.execute` waits for its tokens
  and inputs; `sched.await` / `sched.wait` make their stream wait for the region;
- L3: only streams and events: `kernel.event_wait` waits for its `kernel.event_record`, which
  completes once everything issued before it on its stream has (`kernel.stream_wait` is both
  tasks, the record on the stream it names); buffers add no edges (the GPU does not see them,
  and `ccopt.streams.StreamOrder` proves plans against exactly these edges).
Calls are expanded at each call site (a repeated layer costs what it costs each time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import kernel, sched
from ccopt.sim.work import COLLECTIVE_KINDS, COPIES, FREE, tensor_type

COMPUTE, COMM, COPY, SYNC = "compute", "comm", "copy", "sync"


@dataclass
class Task:
    """One op (or one synchronization point) of the program on one stream."""

    index: int
    op: Operation
    stream: int
    kind: str  # compute | comm | copy | sync
    deps: tuple[int, ...] = ()
    name: str = ""
    dependents: list[int] = field(default_factory=list)

    @property
    def device(self) -> bool:
        """Whether the host launches it (a kernel or an NCCL call), paying the launch overhead."""
        return self.kind != SYNC


class TaskGraph:
    """The tasks of one entry function, its callees expanded."""

    def __init__(self, entry: func.FuncOp):
        self.tasks: list[Task] = []
        self._ready: dict[SSAValue, tuple[int, ...]] = {}
        self._callers: list[str] = []
        self._function(entry, sched.COMPUTE_STREAM, [() for _ in entry.args])
        for t in self.tasks:
            for d in t.deps:
                self.tasks[d].dependents.append(t.index)

    def _add(self, op: Operation, stream: int, kind: str, deps: set[int], name: str = "") -> int:
        task = Task(len(self.tasks), op, stream, kind, tuple(sorted(deps)), name or op.name)
        self.tasks.append(task)
        return task.index

    def _deps(self, values: Sequence[SSAValue]) -> set[int]:
        ready = self._ready
        return {d for v in values for d in ready.get(v, ())}

    def _function(
        self, f: func.FuncOp, stream: int, args: list[tuple[int, ...]]
    ) -> list[tuple[int, ...]]:
        block = f.body.blocks.first
        assert block is not None
        for arg, ready in zip(block.args, args, strict=True):
            self._ready[arg] = ready
        return self._block(block, stream)

    def _block(self, block: Block, stream: int) -> list[tuple[int, ...]]:
        """Tasks of a block; returns the readiness of the values its terminator passes on."""
        for op in block.ops:
            if isinstance(op, func.ReturnOp | sched.YieldOp):
                return [self._ready.get(v, ()) for v in op.operands]
            self._op(op, stream)
        return []

    def _op(self, op: Operation, stream: int) -> None:
        role = _role(type(op))
        if role == EXECUTE:
            return self._execute(op)  # type: ignore[arg-type]
        if role == CALL:
            return self._call(op, stream)  # type: ignore[arg-type]
        if role == CONTROL:
            raise OpError(op, "the simulator times straight-line code: no loops or branches")
        if role == STREAM_WAIT:  # kernel.stream_wait: a record on `on` and its wait
            recorded = self._add(op, op.on_index(), SYNC, set(), "kernel.event_record")  # type: ignore[attr-defined]
            self._add(op, op.stream_index(), SYNC, {recorded}, "kernel.event_wait")  # type: ignore[attr-defined]
            return None
        if role == WAIT:  # sched.await / sched.wait, kernel.event_record / event_wait
            s = op.stream_index() if isinstance(op, kernel.DeviceOp) else stream
            t = self._add(op, s, SYNC, self._deps(op.operands))
            return self._define(op, (t,))
        if role == DEVICE:  # ordered by its stream and events only, as on the GPU
            self._add(op, op.stream_index(), _kind(type(op)), set())  # type: ignore[attr-defined]
            return None
        if role == FREE_OP or (role == OTHER and not _has_tensors(op)):
            # storage, views, scalars: free, and ready when their operands are
            return self._define(op, tuple(self._deps(op.operands)))
        t = self._add(op, stream, _kind(type(op)), self._deps(op.operands))
        return self._define(op, (t,))

    def _define(self, op: Operation, ready: tuple[int, ...]) -> None:
        for r in op.results:
            self._ready[r] = ready

    def _execute(self, op: sched.ExecuteOp) -> None:
        """The region runs on its stream after its tokens and inputs; its token and futures are
        ready when a marker after the region's last task (and after what it yields) is."""
        s = op.stream.value.data
        start = self._add(op, s, SYNC, self._deps(op.operands), "sched.execute")
        block = op.body.blocks.first
        assert block is not None
        for arg in block.args:
            self._ready[arg] = (start,)
        yielded = self._block(block, s)
        end = self._add(op, s, SYNC, {d for y in yielded for d in y} | {start}, "sched.yield")
        self._define(op, (end,))

    def _call(self, op: func.CallOp, stream: int) -> None:
        from xdsl.traits import SymbolTable

        callee = SymbolTable.lookup_symbol(op, op.callee)
        if not isinstance(callee, func.FuncOp) or not callee.body.blocks:
            raise OpError(op, f"calls @{op.callee.string_value()}, which has no body to simulate")
        name = callee.sym_name.data
        if name in self._callers:
            raise OpError(op, f"calls @{name} recursively; the simulator expands calls")
        self._callers.append(name)
        results = self._function(callee, stream, [tuple(self._deps([v])) for v in op.operands])
        self._callers.pop()
        for r, ready in zip(op.results, results, strict=False):
            self._ready[r] = ready


EXECUTE, CALL, WAIT, STREAM_WAIT, DEVICE, FREE_OP, PRICED, CONTROL, OTHER = range(9)
_ROLES: dict[type[Operation], int] = {}


def _role(t: type[Operation]) -> int:
    """How the task graph treats ops of a type (decided once per type: `isinstance` against
    xDSL's abstract op classes is slow, and programs repeat few op types)."""
    role = _ROLES.get(t)
    if role is None:
        role = _ROLES[t] = _classify(t)
    return role


def _classify(t: type[Operation]) -> int:
    if issubclass(t, sched.ExecuteOp):
        return EXECUTE
    if issubclass(t, func.CallOp):
        return CALL
    if issubclass(t, sched.AwaitOp | sched.WaitOp | kernel.EventRecordOp | kernel.EventWaitOp):
        return WAIT
    if issubclass(t, kernel.StreamWaitOp):
        return STREAM_WAIT
    if issubclass(t, FREE):
        return FREE_OP
    if issubclass(t, kernel.DeviceOp):
        return DEVICE
    if t in COLLECTIVE_KINDS:
        return PRICED
    if t.name.startswith(("scf.", "cf.")):
        return CONTROL
    return OTHER


def _has_tensors(op: Operation) -> bool:
    """Whether an op of no known role computes on distributed tensors (then it costs a kernel;
    scalar and control ops outside bodies are free)."""
    return any(tensor_type(v) is not None for v in (*op.results, *op.operands))


_KINDS: dict[type[Operation], str] = {}


def _kind(t: type[Operation]) -> str:
    kind = _KINDS.get(t)
    if kind is None:
        if t in COLLECTIVE_KINDS:
            kind = COMM
        elif issubclass(t, COPIES):
            kind = COPY
        else:
            kind = COMPUTE
        _KINDS[t] = kind
    return kind


class SimulationError(CcoptError):
    """A program or request the simulator cannot handle."""
