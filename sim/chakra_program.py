"""A program (L2 or L3) as a Chakra workload: one trace per rank of the machine's network.

Each task of the simulator's task graph (`ccopt.sim.tasks`) becomes nodes of every rank's file:
- compute and copies: a COMP node lasting what ccopt's cost model gives the rank's blocks
  (roofline on the machine's GPU, rounded to whole µs as the format stores it), with `num_ops`
  (FLOPs) and `tensor_size` (bytes moved);
- collectives: a COMM_COLL node with comm_type, comm_size in ASTRA-sim's convention (the per-rank
  buffer; all-gather's input), involved_dim (one flag per network dimension the group spans) and
  pg_name (its mesh axes); a fused all-reduce is its reduce-scatter, its body (COMP) and its
  all-gather, as the cost model prices it;
- `coll.shift` (a pipeline stage transfer): COMM_SEND to the next stage and COMM_RECV from the
  previous one, matched by tag (the task's number);
- synchronization (sched.execute markers, waits, events) adds no node: what waits on it waits
  on what it waited for.
Dependencies (all in data_deps) are the task graph's: data flow at L1/L2, events at L3, and each
stream's order. File r is network rank r: mesh coordinates are placed as the machine places
them (`Machine.axis_strides`), so the files run on the machine's network in `ccopt-sim
--workload`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccopt.sim.chakra import make_node, write_trace_set
from ccopt.sim.tasks import COMM, SYNC, Task, TaskGraph
from ccopt.sim.work import COLLECTIVE_KINDS, collective_axes, tensor_type, tensors

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from ccopt.mesh import Mesh
    from ccopt.sim.machine import Machine
    from ccopt.sim.program import Engine

COMM_TYPES = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "all_to_all": "all-to-all",
    "broadcast": "broadcast",
    "reduce": "reduce",
}


def micros(ns: float) -> int:
    return int(round(ns / 1000.0))


class RankExporter:
    """The nodes of one network rank."""

    def __init__(self, engine: Engine, machine: Machine, mesh: Mesh, coords: tuple[int, ...]):
        self.engine, self.machine, self.mesh, self.coords = engine, machine, mesh, coords
        self.strides = machine.axis_strides(mesh)
        self.rank = sum(c * self.strides[a] for a, c in enumerate(coords))
        self.nodes: list[Any] = []
        self.ends: dict[int, list[int]] = {}  # task -> the nodes its dependents wait for

    def node(self, name: str, kind: str, deps: list[int], **fields: Any) -> int:
        node_id = len(self.nodes)
        self.nodes.append(make_node(node_id, name, kind, sorted(set(deps)), **fields))
        return node_id

    def run(self, cls: int, tasks: list[Task]) -> list[Any]:
        last_on: dict[int, int] = {}
        for task in tasks:
            deps = [n for d in task.deps for n in self.ends[d]]
            if task.stream in last_on:
                deps += self.ends[last_on[task.stream]]
            last_on[task.stream] = task.index
            if task.kind == SYNC:
                self.ends[task.index] = sorted(set(deps))
            elif task.kind == COMM:
                self.ends[task.index] = self.communication(cls, task, deps)
            else:
                self.ends[task.index] = [self.compute(cls, task, deps)]
        return self.nodes

    def compute(self, cls: int, task: Task, deps: list[int]) -> int:
        flops, moved, ns = self.engine.work_of(cls, task)
        return self.node(
            f"{task.name}#{task.index}",
            "COMP_NODE",
            deps,
            duration_micros=micros(ns),
            num_ops=int(flops),
            tensor_size=int(moved),
        )

    def communication(self, cls: int, task: Task, deps: list[int]) -> list[int]:
        kind = COLLECTIVE_KINDS[type(task.op)]
        axes = collective_axes(task.op, self.mesh)
        if kind == "shift":
            return self.shift(task, axes[0], deps)
        blocks = self.engine.blocks
        coords = tuple(0 if a in axes else x for a, x in enumerate(self.coords))
        size = blocks.bytes(tensors(task.op)[0], coords)
        span = self.machine.span(self.mesh, axes)
        group = {
            "involved_dim": [s > 1 for s in span],
            "pg_name": ",".join(self.mesh.axis_names[a] for a in axes),
        }
        name = f"{task.name}#{task.index}"
        if kind != "fused_all_reduce":
            return [
                self.node(
                    name,
                    "COMM_COLL_NODE",
                    deps,
                    comm_type=COMM_TYPES[kind],
                    comm_size=size,
                    **group,
                )
            ]
        from ccopt.sim.work import fused_body_work

        scatter = self.node(
            f"{name}.reduce_scatter",
            "COMM_COLL_NODE",
            deps,
            comm_type="reduce-scatter",
            comm_size=size,
            **group,
        )
        work = fused_body_work(task.op, blocks, coords)  # type: ignore[arg-type]
        body = self.node(
            f"{name}.body",
            "COMP_NODE",
            [scatter],
            duration_micros=micros(self.engine._roofline(work)),  # pyright: ignore[reportPrivateUsage]
            num_ops=int(work.flops),
            tensor_size=int(work.bytes),
        )
        parts = self.mesh.group_size(axes)
        return [
            self.node(
                f"{name}.all_gather",
                "COMM_COLL_NODE",
                [body],
                comm_type="all-gather",
                comm_size=max(size // parts, 1),
                **group,
            )
        ]

    def shift(self, task: Task, axis: int, deps: list[int]) -> list[int]:
        """SEND to coordinate c + offset and RECV from c - offset along `axis` (wrapping if
        cyclic; a stage at the end has no peer on that side)."""
        offset = task.op.properties["offset"].value.data  # type: ignore[attr-defined]
        cyclic = "cyclic" in task.op.properties
        size = self.engine.blocks.bytes(tensor_type(task.op.operands[0]), self.coords)  # type: ignore[arg-type]
        n, c = self.mesh.axis_sizes[axis], self.coords[axis]
        ends = []
        for peer, kind, key in ((c + offset, "COMM_SEND_NODE", "comm_dst"),
                                (c - offset, "COMM_RECV_NODE", "comm_src")):  # fmt: skip
            if cyclic:
                peer %= n
            if not 0 <= peer < n or peer == c:
                continue
            rank = self.rank + (peer - c) * self.strides[axis]
            fields = {key: rank, "comm_size": size, "comm_tag": task.index}
            ends.append(
                self.node(f"{task.name}#{task.index}.{kind[5:9].lower()}", kind, deps, **fields)
            )
        return ends or sorted(set(deps))


def program_traces(module: ModuleOp, machine: Machine, entry: str | None = None) -> list[list[Any]]:
    """Every network rank's nodes for the entry function of a verified module."""
    from ccopt.program import find_entry, module_meshes
    from ccopt.sim.program import Engine, program_mesh, rank_classes

    graph = TaskGraph(find_entry(module, entry))
    mesh, types = program_mesh(graph, module_meshes(module))
    machine = machine.fit(mesh.rank_count)
    classes, per_axis = rank_classes(types, mesh)
    class_of = {c.key: i for i, c in enumerate(classes)}
    engine = Engine(graph, machine, mesh, classes)
    out: list[list[Any]] = [[] for _ in range(mesh.rank_count)]
    for coords in mesh.all_coords():
        exporter = RankExporter(engine, machine, mesh, coords)
        key = tuple(per_axis[a][c] for a, c in enumerate(coords))
        out[exporter.rank] = exporter.run(class_of[key], graph.tasks)
    return out


def write_program_traces(
    prefix: str | Path, module: ModuleOp, machine: Machine, entry: str | None = None
) -> list[Path]:
    """Write the workload PREFIX.<rank>.et of a program (each file atomically)."""
    metadata = {"producer": "ccopt program", "machine": machine.name}
    return write_trace_set(prefix, program_traces(module, machine, entry), metadata)
