"""A program as the simulator sees it: a list of tasks in issue order, each on a stream, with
the tasks it must wait for.

Every level reads the same way. Ops run on stream 0 unless a `sched.execute` (L2) or a kernel
op's `stream` (L3) says otherwise; a stream runs its tasks in issue order (FIFO). What else
orders tasks is exactly what the interpreter and the GPU respect:
- L1/L2: an op waits for the producers of its operands; `sched.execute` waits for its tokens
  and inputs; `sched.await` / `sched.wait` make their stream wait for the region;
- L3: only streams and events: `kernel.event_wait` waits for its `kernel.event_record`, which
  completes once everything issued before it on its stream has (buffers add no edges: the GPU
  does not see them, and `ccopt.streams.StreamOrder` proves plans against exactly these edges).
Calls are expanded at each call site (a repeated layer costs what it costs each time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import kernel, sched
from ccopt.sim.work import COLLECTIVE_KINDS, FREE, tensor_type

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
        self.streams: set[int] = {sched.COMPUTE_STREAM}
        self._ready: dict[SSAValue, tuple[int, ...]] = {}
        self._callers: list[str] = []
        self._module = entry.parent_op()
        self._function(entry, sched.COMPUTE_STREAM, [() for _ in entry.args])
        for t in self.tasks:
            for d in t.deps:
                self.tasks[d].dependents.append(t.index)

    def _add(self, op: Operation, stream: int, kind: str, deps: set[int], name: str = "") -> int:
        task = Task(len(self.tasks), op, stream, kind, tuple(sorted(deps)), name or op.name)
        self.tasks.append(task)
        self.streams.add(stream)
        return task.index

    def _deps(self, values: tuple[SSAValue, ...] | list[SSAValue]) -> set[int]:
        return {d for v in values for d in self._ready.get(v, ())}

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
        if isinstance(op, sched.ExecuteOp):
            return self._execute(op)
        if isinstance(op, sched.AwaitOp | sched.WaitOp):
            t = self._add(op, stream, SYNC, self._deps(list(op.operands)))
            return self._define(op, (t,))
        if isinstance(op, func.CallOp):
            return self._call(op, stream)
        if isinstance(op, kernel.EventRecordOp | kernel.EventWaitOp):
            deps = self._deps(list(op.operands))
            t = self._add(op, op.stream_index(), SYNC, deps)
            return self._define(op, (t,))
        if isinstance(op, kernel.DeviceOp):
            if isinstance(op, FREE):
                return None
            self._add(op, op.stream_index(), _kind(op), set())
            return None
        if isinstance(op, FREE) or not _is_priced(op):
            # storage, views, scalars: free, and ready when their operands are
            return self._define(op, tuple(self._deps(list(op.operands))))
        t = self._add(op, stream, _kind(op), self._deps(list(op.operands)))
        return self._define(op, (t,))

    def _define(self, op: Operation, ready: tuple[int, ...]) -> None:
        for r in op.results:
            self._ready[r] = ready

    def _execute(self, op: sched.ExecuteOp) -> None:
        """The region runs on its stream after its tokens and inputs; its token and futures are
        ready when a marker after the region's last task (and after what it yields) is."""
        s = op.stream.value.data
        start = self._add(op, s, SYNC, self._deps(list(op.operands)), "sched.execute")
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


def _is_priced(op: Operation) -> bool:
    """Ops with a cost: distributed-tensor computation and collectives (scalar and control ops
    outside bodies are free)."""
    if type(op) in COLLECTIVE_KINDS:
        return True
    return any(tensor_type(v) is not None for v in (*op.results, *op.operands))


def _kind(op: Operation) -> str:
    from ccopt.sim.work import COPIES

    if type(op) in COLLECTIVE_KINDS:
        return COMM
    if isinstance(op, COPIES):
        return COPY
    return COMPUTE


def check_simulable(module: Operation) -> None:
    """Refuse what the engine cannot time, at the op: control flow other than calls."""
    for op in module.walk():
        if op.name.startswith("scf.") or op.name.startswith("cf."):
            raise OpError(op, "the simulator times straight-line programs; unroll the loop first")


class SimulationError(CcoptError):
    """A program or request the simulator cannot handle."""
