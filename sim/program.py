"""ccopt mode: an event-driven simulation of a program's streams on a machine, rank by rank class.

Every rank runs the same program (SPMD); ranks differ only in the blocks they hold, so ranks
whose coordinates give the same block sizes on every mesh axis form a *class* and one
representative per class is simulated (`symmetric=False` simulates every rank, for checking).
Classes meet at collectives: a collective starts when every class in its group has reached it
at the head of its stream.

The engine is a discrete-event loop over task completions (a heap), linear in tasks × classes:
- the host issues device tasks in program order, one launch overhead each;
- a stream runs its tasks in issue order; a task starts once its stream is free, its deps are
  complete, the host has issued it and, for a collective, its whole group has arrived;
- a collective's duration is priced when it starts, with the network bandwidth shared among the
  rank's collectives already running (NIC sharing); compute that starts while a collective runs
  loses the collective's share of SMs until it ends.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ccopt.sim import cost
from ccopt.sim.tasks import COMM, COMPUTE, COPY, SYNC, SimulationError, Task, TaskGraph
from ccopt.sim.work import (
    COLLECTIVE_KINDS,
    Blocks,
    Layout,
    body_lanes,
    collective_algorithm,
    collective_axes,
    collective_bytes,
    fused_body_work,
    fused_gathers,
    op_work,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Operation

    from ccopt.dialects.dtensor_type import DTensorType
    from ccopt.mesh import Mesh
    from ccopt.sim.machine import Machine


@dataclass
class Slice:
    """One task's run on one rank class (what a trace shows)."""

    task: int
    name: str
    stream: int
    kind: str
    start: float
    end: float
    flops: float = 0.0
    bytes: float = 0.0


@dataclass
class RankClass:
    """Ranks simulated as one: their representative's coordinates and how many there are."""

    coords: tuple[int, ...]
    ranks: int
    key: tuple[int, ...]


@dataclass
class Report:
    """What a simulation predicts for one step of the program (times in ns)."""

    step_time_ns: int
    compute_ns: int
    comm_ns: int
    exposed_comm_ns: int
    overlap_percent: float
    stream_busy_ns: dict[int, int]
    critical_path: list[str]
    copy_bytes: int
    flops: float
    machine: str
    mesh: str
    ranks: int
    classes: list[RankClass]
    class_step_ns: list[int]
    slices: list[list[Slice]] = field(repr=False, default_factory=list)
    model: str = "ccopt"

    @property
    def critical_class(self) -> int:
        return max(range(len(self.class_step_ns)), key=lambda c: self.class_step_ns[c])

    def to_json(self) -> dict[str, Any]:
        """The report as `ccopt-sim --json` prints it."""
        return {
            "model": self.model,
            "machine": self.machine,
            "mesh": self.mesh,
            "ranks": self.ranks,
            "rank_classes": len(self.classes),
            "step_time_ns": self.step_time_ns,
            "compute_ns": self.compute_ns,
            "comm_ns": self.comm_ns,
            "exposed_comm_ns": self.exposed_comm_ns,
            "overlap_percent": round(self.overlap_percent, 2),
            "stream_busy_ns": {str(s): v for s, v in sorted(self.stream_busy_ns.items())},
            "copy_bytes": self.copy_bytes,
            "flops": self.flops,
            "critical_path": self.critical_path,
        }


# --- rank classes ---------------------------------------------------------------------------


def rank_classes(
    types: Sequence[DTensorType], mesh: Mesh, symmetric: bool = True
) -> tuple[list[RankClass], list[list[int]]]:
    """The rank classes, and for each mesh axis the class id of each of its coordinates.

    A coordinate's class on an axis is the list of block lengths every distributed tensor of
    the program (`types`) has there (coordinates holding equal blocks cost the same); with
    `symmetric=False` every coordinate is its own class."""
    from itertools import product

    per_axis: list[list[int]] = []
    reps: list[list[int]] = []
    for a, size in enumerate(mesh.axis_sizes):
        ids: dict[Any, int] = {}
        axis_ids, axis_reps = [], []
        split = [t for t in types if t.placement_list[a].split_dim is not None]
        if symmetric and all(_even(t, mesh, a) for t in split):
            per_axis.append([0] * size)  # (every coordinate holds equal blocks: one class)
            reps.append([0])
            continue
        for c in range(size):
            coords = tuple(c if i == a else 0 for i in range(mesh.ndim))
            sig = c if not symmetric else tuple(t.local_shape(mesh, coords) for t in split)
            if sig not in ids:
                ids[sig] = len(ids)
                axis_reps.append(c)
            axis_ids.append(ids[sig])
        per_axis.append(axis_ids)
        reps.append(axis_reps)
    counts = [[ids.count(k) for k in range(len(r))] for ids, r in zip(per_axis, reps, strict=True)]
    classes = []
    for key in product(*(range(len(r)) for r in reps)):
        coords = tuple(reps[a][k] for a, k in enumerate(key))
        ranks = 1
        for a, k in enumerate(key):
            ranks *= counts[a][k]
        classes.append(RankClass(coords, ranks, tuple(key)))
    return classes, per_axis


def _even(t: DTensorType, mesh: Mesh, axis: int) -> bool:
    """Whether the axes splitting `t`'s dimension that `axis` splits divide it evenly: every
    coordinate of `axis` then holds a block of the same shape (the common case, found without
    computing each coordinate's block)."""
    dim = t.placement_list[axis].split_dim
    parts = 1
    for size, p in zip(mesh.axis_sizes, t.placement_list, strict=True):
        if p.split_dim == dim:
            parts *= size
    return t.get_shape()[dim] % parts == 0


FULL_LIMIT = 4096
"""The most ranks a full (`symmetric=False`) simulation takes: it is for checking."""

HOST = -2
"""A task held back by the host's launches rather than by another task."""


# --- the engine -----------------------------------------------------------------------------


class Engine:
    """The event loop over (class, task) pairs."""

    def __init__(self, graph: TaskGraph, machine: Machine, mesh: Mesh, classes: list[RankClass]):
        self.graph, self.machine, self.mesh, self.classes = graph, machine, mesh, classes
        self.blocks = Blocks(mesh)
        self.tasks = graph.tasks
        n, m = len(classes), len(self.tasks)
        self.finish = [[-1.0] * m for _ in range(n)]
        self.start = [[-1.0] * m for _ in range(n)]
        self.duration = [[0.0] * m for _ in range(n)]
        self.waiting = [[len(t.deps) for t in self.tasks] for _ in range(n)]
        self.cause = [[-1] * m for _ in range(n)]  # what held it back: a task, or HOST
        self.queues: dict[int, list[int]] = {}
        for t in self.tasks:
            self.queues.setdefault(t.stream, []).append(t.index)
        self.head = [dict.fromkeys(self.queues, 0) for _ in range(n)]
        self.busy = [dict.fromkeys(self.queues, False) for _ in range(n)]
        self.issue = self._issue_times()
        self.arrived: dict[tuple[int, tuple[int, ...]], set[int]] = {}  # (task, group) -> there
        self.groups: dict[tuple[int, ...], dict[tuple[int, ...], list[int]]] = {}
        self.comm_active: list[list[tuple[float, tuple[int, ...]]]] = [[] for _ in range(n)]
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.spans: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.work: dict[tuple[int, int], tuple[float, float, float]] = {}
        self.stepped: dict[tuple[str, str, int, tuple[int, ...]], float] = {}

    def _issue_times(self) -> list[float]:
        """When the host has launched each task (device tasks cost one launch each, in order)."""
        launch, t, out = self.machine.gpu.launch_ns, 0.0, []
        for task in self.tasks:
            if task.device:
                t += launch
            out.append(t)
        return out

    def run(self) -> None:
        for c in range(len(self.classes)):
            for s in self.queues:
                self._try(c, s, 0.0)
        while self.heap:
            now, _, c, i = heapq.heappop(self.heap)
            if i < 0:  # a wake-up: the host has issued the head of stream -i - 1
                self._try(c, -i - 1, now)
                continue
            self._complete(c, i, now)

    def _push(self, time: float, c: int, i: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq, c, i))

    def _complete(self, c: int, i: int, now: float) -> None:
        task = self.tasks[i]
        self.busy[c][task.stream] = False
        self.head[c][task.stream] += 1
        streams = {task.stream}
        for d in task.dependents:
            self.waiting[c][d] -= 1
            streams.add(self.tasks[d].stream)
        for s in sorted(streams):
            self._try(c, s, now)

    def _try(self, c: int, s: int, now: float) -> None:
        """Start the head of stream `s` of class `c` if nothing holds it back."""
        queue = self.queues[s]
        h = self.head[c][s]
        if self.busy[c][s] or h >= len(queue):
            return
        i = queue[h]
        if self.waiting[c][i] or self.start[c][i] >= 0:
            return
        if self.issue[i] > now:
            self._push(self.issue[i], c, -s - 1)
            return
        task = self.tasks[i]
        if task.kind == COMM:
            self._arrive(c, i, now)
        else:
            self._begin(c, i, now, self._compute_ns(c, task, now))

    def _begin(self, c: int, i: int, now: float, duration: float) -> None:
        task = self.tasks[i]
        self.cause[c][i] = self._cause(c, task)
        self.busy[c][task.stream] = True
        self.start[c][i] = now
        self.duration[c][i] = duration
        self.finish[c][i] = now + duration
        self._push(now + duration, c, i)

    def _cause(self, c: int, task: Task) -> int:
        """The task whose end the start of `task` waited for last (its stream predecessor or a
        dependency), or HOST when the host's launches were later still."""
        best, when = -1, 0.0
        h = self.head[c][task.stream]
        if h > 0:
            best = self.queues[task.stream][h - 1]
            when = self.finish[c][best]
        for d in task.deps:
            if self.finish[c][d] > when:
                best, when = d, self.finish[c][d]
        return HOST if self.issue[task.index] > when else best

    def _group(self, c: int, axes: tuple[int, ...]) -> tuple[tuple[int, ...], list[int]]:
        """The classes meeting in class c's group over `axes` (and the group's identity): the
        classes that agree with c off the group's axes (indexed once per set of axes)."""
        index = self.groups.get(axes)
        if index is None:
            index = self.groups[axes] = {}
            for j, other in enumerate(self.classes):
                index.setdefault(_off_axes(other.key, axes), []).append(j)
        fixed = _off_axes(self.classes[c].key, axes)
        return fixed, index[fixed]

    def _arrive(self, c: int, i: int, now: float) -> None:
        task = self.tasks[i]
        axes = collective_axes(task.op, self.mesh)
        group, members = self._group(c, axes)
        here = self.arrived.setdefault((i, group), set())
        here.add(c)
        if len(here) < len(members):
            return
        del self.arrived[(i, group)]
        # a collective ends together on all its ranks: as late as its slowest member's share
        ns = max(self._comm_ns(m, task, axes, now) for m in members)
        for m in members:
            self.comm_active[m][-1] = (now + ns, self.comm_active[m][-1][1])
            self._begin(m, i, now, ns)

    def _compute_ns(self, c: int, task: Task, now: float) -> float:
        if task.kind == SYNC:
            return 0.0
        flops, moved, work_ns = self.work_of(c, task)
        active = [end for end, _ in self.comm_active[c] if end > now]
        busy_until = max(active, default=now)
        return cost.contended_ns(work_ns, now, busy_until, self.machine.gpu.collective_sm_share)

    def work_of(self, c: int, task: Task) -> tuple[float, float, float]:
        """FLOPs, bytes and uncontended ns of a compute or copy task on class c."""
        key = (c, task.index)
        if key not in self.work:
            w = op_work(task.op, self.blocks, self.classes[c].coords)
            self.work[key] = (w.flops, w.bytes, self._roofline(w))
        return self.work[key]

    def _roofline(self, w: Any) -> float:
        return cost.kernel_ns(w, self.machine.gpu)

    def _comm_ns(self, c: int, task: Task, axes: tuple[int, ...], now: float) -> float:
        coords = tuple(0 if a in axes else x for a, x in enumerate(self.classes[c].coords))
        n = collective_bytes(task.op, self.blocks, coords)
        span = self.spans.get(axes)
        if span is None:
            span = self.spans[axes] = self.machine.span(self.mesh, axes)
        active = [(e, sp) for e, sp in self.comm_active[c] if e > now]
        sharing = 1 + sum(
            1 for _, sp in active if any(a > 1 and b > 1 for a, b in zip(sp, span, strict=True))
        )
        body_ns = 0.0
        gathers: list[float] | None = None
        if _kind_of(task) == "fused_all_reduce":
            body_ns = self._roofline(fused_body_work(task.op, self.blocks, coords))  # type: ignore[arg-type]
            body_ns /= body_lanes(task.op)  # inside its algorithm: the lanes share it
            gathers = fused_gathers(task.op, self.blocks, coords)  # type: ignore[arg-type]
        stepped = self._algorithm_ns(task, axes, n)
        if stepped is not None:
            ns = stepped + body_ns
        else:
            dims = cost.group_links(
                self.machine, self.mesh, axes, collective_algorithm(task.op), sharing
            )
            ns = cost.collective_ns(
                _kind_of(task), float(n), dims, cost.gamma(self.machine), body_ns, gathers
            )
        self.comm_active[c] = [*active, (now + ns, span)]
        self.work[(c, task.index)] = (0.0, float(n), ns)
        return ns

    def _algorithm_ns(self, task: Task, axes: tuple[int, ...], n: int) -> float | None:
        """The time of the algorithm the collective names (`lower-collectives`), its steps
        timed on the group's part of the network; None when it names none."""
        from ccopt.dialects.algo import ALGORITHM_ATTRIBUTE, chosen_algorithm
        from ccopt.sim.algorithm_time import algorithm_ns

        ref = task.op.attributes.get(ALGORITHM_ATTRIBUTE)
        if ref is None:
            return None
        kind = _kind_of(task)
        key = (str(ref), kind, n, axes)
        if key not in self.stepped:
            chosen = chosen_algorithm(task.op)
            assert chosen is not None
            alg = chosen.algorithm()
            self.stepped[key] = float(algorithm_ns(alg, kind, n, self.machine, self.mesh, axes))
        return self.stepped[key]

    def check_finished(self) -> None:
        for c in range(len(self.classes)):
            for t in self.tasks:
                if self.finish[c][t.index] < 0:
                    raise SimulationError(
                        f"'{t.name}' on stream {t.stream} never started: a collective whose "
                        "group never meets, or a wait on an event recorded later"
                    )


def _off_axes(key: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-1 if a in axes else k for a, k in enumerate(key))


def _kind_of(task: Task) -> str:
    return COLLECTIVE_KINDS[type(task.op)]


# --- the report -----------------------------------------------------------------------------


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _measure(intervals: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in intervals)


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of the union `a` outside the union `b` (both sorted and disjoint)."""
    total, j = 0.0, 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                total += b[k][0] - cur
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            total += e - cur
    return total


def _report(engine: Engine, machine: Machine, mesh: Mesh) -> Report:
    tasks = engine.tasks
    classes = engine.classes
    class_step = [max(row, default=0.0) for row in engine.finish]
    c = max(range(len(classes)), key=lambda k: class_step[k])
    compute, comm, busy = [], [], dict.fromkeys(engine.queues, 0.0)
    copy_bytes = flops = 0.0
    for t in tasks:
        span = (engine.start[c][t.index], engine.finish[c][t.index])
        busy[t.stream] += span[1] - span[0]
        if t.kind == COMM:
            comm.append(span)
        elif t.kind in (COMPUTE, COPY):
            compute.append(span)
            f, b, _ = engine.work_of(c, t)
            flops += f
            if t.kind == COPY:
                copy_bytes += b / 2
    compute_u, comm_u = _union(compute), _union(comm)
    comm_ns = _measure(comm_u)
    exposed = _minus(comm_u, compute_u)
    overlap = 100.0 * (comm_ns - exposed) / comm_ns if comm_ns else 0.0
    return Report(
        step_time_ns=round(class_step[c]),
        compute_ns=round(_measure(compute_u)),
        comm_ns=round(comm_ns),
        exposed_comm_ns=round(exposed),
        overlap_percent=overlap,
        stream_busy_ns={s: round(v) for s, v in busy.items()},
        critical_path=_critical_path(engine, c),
        copy_bytes=round(copy_bytes),
        flops=flops,
        machine=machine.name,
        mesh=str(mesh),
        ranks=mesh.rank_count,
        classes=classes,
        class_step_ns=[round(s) for s in class_step],
        slices=[_slices(engine, k) for k in range(len(classes))],
    )


def _critical_path(engine: Engine, c: int) -> list[str]:
    """The chain of tasks that set the step time, first to last (sync markers left out)."""
    finish = engine.finish[c]
    if not finish:
        return []
    i = max(range(len(finish)), key=lambda k: finish[k])
    path: list[str] = []
    seen = set()
    while i >= 0 and i not in seen:
        seen.add(i)
        t = engine.tasks[i]
        if t.kind != SYNC:
            path.append(f"{t.name} (stream {t.stream}, {engine.duration[c][i]:.0f} ns)")
        i = engine.cause[c][i]
        if i == HOST:
            path.append(f"host: kernel launches until {engine.issue[t.index]:.0f} ns")
    return path[::-1]


def _slices(engine: Engine, c: int) -> list[Slice]:
    out = []
    for t in engine.tasks:
        if t.kind == SYNC:
            continue
        f, b, _ = engine.work_of(c, t)
        out.append(
            Slice(
                t.index,
                t.name,
                t.stream,
                t.kind,
                engine.start[c][t.index],
                engine.finish[c][t.index],
                f,
                b,
            )  # fmt: skip
        )
    return out


# --- entry points ---------------------------------------------------------------------------


def simulate_module(
    module: ModuleOp,
    machine: Machine,
    *,
    entry: str | None = None,
    symmetric: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Simulate the entry function of a verified module on `machine` (ccopt mode)."""
    from ccopt.program import find_entry, module_meshes

    graph = TaskGraph(find_entry(module, entry))
    mesh, types = program_mesh(graph, module_meshes(module))
    machine = machine.fit(mesh.rank_count)
    if not symmetric and mesh.rank_count > FULL_LIMIT:
        raise SimulationError(
            f"a full simulation of {mesh.rank_count} ranks is refused (at most {FULL_LIMIT}); "
            "the symmetric one (without --full) simulates one rank per class of alike ranks"
        )
    warn_memory(graph, types, mesh, machine)
    classes, _ = rank_classes(types, mesh, symmetric)
    if progress is not None:
        progress(
            f"{len(graph.tasks)} tasks, {len(classes)} rank classes of {mesh.rank_count} ranks"
        )
    engine = Engine(graph, machine, mesh, classes)
    engine.run()
    engine.check_finished()
    return _report(engine, machine, mesh)


def warn_memory(graph: TaskGraph, types: list[DTensorType], mesh: Mesh, machine: Machine) -> None:
    """Say so where one value's block on a rank is larger than the GPU's memory (`memory-gb`):
    such a step cannot run, and its time was predicted without a word (`ccopt-run` refuses
    such a program for the host's memory)."""
    import warnings

    from ccopt.diagnostics import OpWarning
    from ccopt.dialects.kernel import element_bytes
    from ccopt.sim.work import tensor_type

    capacity = machine.gpu.memory_bytes
    if capacity <= 0 or not types:
        return
    first = tuple(0 for _ in mesh.axis_sizes)  # (rank 0 holds the largest ceil-div blocks)

    def block_bytes(t: DTensorType) -> int:
        return math.prod(t.local_shape(mesh, first)) * element_bytes(t)

    largest = max(types, key=block_bytes)
    size = block_bytes(largest)
    if size <= capacity:
        return
    layout = (largest.get_shape(), largest.split_dims())
    for task in graph.tasks:
        for v in (*task.op.results, *task.op.operands):
            t = tensor_type(v)
            if t is not None and (t.get_shape(), t.split_dims()) == layout:
                warnings.warn(
                    OpWarning(
                        task.op,
                        f"a value of {size / 2**30:,.1f} GiB per rank ({t.summary()}) is larger "
                        f"than the GPU's {capacity / 1e9:g} GB ({machine.gpu.name}): the step "
                        "cannot run as it is, and its time assumes it fits",
                    ),
                    stacklevel=3,
                )
                return


def _warn_open(op: Operation) -> None:
    """A program with open placements (`?`) has not chosen its layouts, nor the collectives
    they need: its time is not a step's (it had been simulated without a word)."""
    import warnings

    from ccopt.diagnostics import OpWarning

    warnings.warn(
        OpWarning(
            op,
            "has open placements (?), simulated as replicated and without the collectives a "
            "choice would add: place them first (-p auto-shard or propagate-placements)",
        ),
        stacklevel=3,
    )


def program_mesh(graph: TaskGraph, meshes: dict[str, Mesh]) -> tuple[Mesh, list[DTensorType]]:
    """The mesh the simulated function runs on (the one its tensors name; a module may declare
    others for other functions) and its distinct tensor layouts, for `rank_classes`."""
    from ccopt.mesh import Mesh
    from ccopt.sim.work import tensor_type

    seen: set[int] = set()
    by_mesh: dict[str, dict[Layout, DTensorType]] = {}
    warned = False
    for task in graph.tasks:
        for v in (*task.op.operands, *task.op.results):
            t = tensor_type(v)
            if t is not None and id(t) not in seen:  # xDSL types hash slowly: go by identity,
                seen.add(id(t))  # then by shape and split (all a block size depends on)
                layouts = by_mesh.setdefault(t.mesh_name, {})
                layouts.setdefault((t.get_shape(), t.split_dims()), t)
                if t.is_open and not warned:
                    warned = True
                    _warn_open(task.op)
    if len(by_mesh) > 1:
        names = ", ".join(f"@{n}" for n in sorted(by_mesh))
        raise SimulationError(f"the simulated function uses several meshes ({names}); use one")
    if not by_mesh:
        return Mesh("none", ("ranks",), (1,)), []
    ((name, layouts),) = by_mesh.items()
    return meshes[name], list(layouts.values())


def predicted_step_time_ns(
    module: ModuleOp | str | os.PathLike[str], machine: str | os.PathLike[str] | Machine
) -> int:
    """The predicted time of one step of `module` (a module, or a program's path or text, as
    `ccopt.simulate` takes) on `machine` (a preset, file or Machine)."""
    from xdsl.dialects.builtin import ModuleOp

    from ccopt.program import load_program
    from ccopt.sim.machine import Machine, load_machine

    m = machine if isinstance(machine, Machine) else load_machine(machine)
    if not isinstance(module, ModuleOp):
        module = load_program(module)  # type: ignore[arg-type]
    return simulate_module(module, m).step_time_ns
