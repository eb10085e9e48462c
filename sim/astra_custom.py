"""Custom collectives: a collective phase run from a Chakra trace set, as ASTRA-sim runs the
trace named by a system file's `*-implementation-custom` key (its CustomAlgorithm).

`NodeFeeder` is the dependency bookkeeping shared with workload replay (Chakra's ETFeeder):
only data_deps count, and dependency-free nodes are issued smallest id first.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ccopt.sim.astra_engine import Stream
from ccopt.sim.chakra import Trace, TraceError, node_attributes, read_trace_set
from ccopt.sim.system import SystemConfig

COMP, SEND, RECV, COLL = 4, 5, 6, 7


class NodeFeeder:
    """One trace's dependency graph (Chakra's ETFeeder): data_deps only, ids ascending."""

    def __init__(self, trace: Trace, source: str):
        self.nodes: dict[int, Any] = {}
        for node in trace.nodes:
            if node.id in self.nodes:
                raise TraceError(f"{source}: error: node id {node.id} appears twice")
            self.nodes[node.id] = node
        self.children: dict[int, list[int]] = {i: [] for i in self.nodes}
        self.waiting: dict[int, int] = {}
        for node in trace.nodes:
            for parent in node.data_deps:
                if parent not in self.nodes:
                    raise TraceError(
                        f"{source}: error: node {node.id} ({node.name}) depends on node {parent}, "
                        "which the file does not have"
                    )
                self.children[parent].append(node.id)
            self.waiting[node.id] = len(node.data_deps)
        self.ready = [i for i, n in self.waiting.items() if n == 0]
        heapq.heapify(self.ready)
        self.attrs = {i: node_attributes(n) for i, n in self.nodes.items()}

    def pop(self) -> int | None:
        return heapq.heappop(self.ready) if self.ready else None

    def push(self, node_id: int) -> None:
        heapq.heappush(self.ready, node_id)

    def finish(self, node_id: int) -> None:
        """Free the node's children and forget it."""
        for child in self.children[node_id]:
            self.waiting[child] -= 1
            if self.waiting[child] == 0:
                heapq.heappush(self.ready, child)
        del self.nodes[node_id]

    def empty(self) -> bool:
        return not self.nodes and not self.ready


class CustomAlgorithm:
    """A collective phase run from a custom-collective trace (ASTRA-sim's CustomAlgorithm):
    the rank's nodes run as their dependencies allow; a COMP costs its duration (1 ns if 0)."""

    final_data_size = 0

    def __init__(self, trace: Trace, rank: int, source: str):
        self.trace, self.rank, self.source = trace, rank, source
        self.stream: Stream | None = None

    def bind(self, stream: Stream) -> None:
        self.stream = stream
        self.feeder = NodeFeeder(self.trace, self.source)

    def run_init(self) -> None:
        self.issue_ready()

    def run_general(self) -> None:
        self.issue_ready()

    def run_received(self) -> None:
        self.issue_ready()

    def issue_ready(self) -> None:
        node_id = self.feeder.pop()
        while node_id is not None:
            self.issue(node_id)
            node_id = self.feeder.pop()

    def issue(self, node_id: int) -> None:
        node, attrs = self.feeder.nodes[node_id], self.feeder.attrs[node_id]
        sys = self.stream.owner
        done = callback(self.done, node_id)
        tag = ("native", attrs.get("comm_tag", 0))
        if node.type == SEND:
            sys.net.send(
                self.rank,
                attrs.get("comm_dst", 0),
                attrs.get("comm_size", 0),
                tag,
                -1,
                on_sent=done,
            )
        elif node.type == RECV:
            sys.net.recv(self.rank, attrs.get("comm_src", 0), attrs.get("comm_size", 0), tag, done)
        elif node.type == COMP:
            sys.register(node.duration_micros * 1000 if node.duration_micros else 1, done)

    def done(self, node_id: int) -> None:
        self.feeder.finish(node_id)
        self.issue_ready()
        if self.feeder.empty():
            self.stream.owner.proceed_to_next_phase(self.stream)


# attributes a communication node must have: Chakra's feeder throws when one is asked for and absent
REQUIRED = {
    SEND: ("comm_dst", "comm_size"),
    RECV: ("comm_src", "comm_size"),
    COLL: ("comm_type", "comm_size"),
}


def check_trace(trace: Trace, rank: int, npus: int, ndims: int, source: str) -> None:
    """Refuse communication nodes the network cannot run before any is simulated: a missing
    field, a negative size, a peer outside the network or the rank itself, an involved_dim
    that involves a dimension the network lacks (ASTRA-sim would crash, hang or ignore it;
    extra entries that are false are harmless: a trace written for a larger machine)."""
    for node in trace.nodes:
        attrs = node_attributes(node)
        where = f"{source}: error: node {node.id} ({node.name})"
        for key in REQUIRED.get(node.type, ()):
            if key not in attrs:
                raise TraceError(f"{where}: no '{key}' attribute")
        if attrs.get("comm_size", 0) < 0:
            raise TraceError(f"{where}: 'comm_size' is negative ({attrs['comm_size']})")
        peer = {SEND: "comm_dst", RECV: "comm_src"}.get(node.type)
        if peer is not None and not (0 <= attrs[peer] < npus and attrs[peer] != rank):
            message = f"'{peer}' {attrs[peer]} is not another rank of the {npus}-rank network"
            raise TraceError(f"{where}: {message}")
        dims = attrs.get("involved_dim") or []
        missing = [d for d in range(ndims, len(dims)) if dims[d]]
        if node.type == COLL and missing:
            network = f"the {ndims}-dimensional network does not have"
            raise TraceError(
                f"{where}: 'involved_dim' involves dimension {missing[0]}, which {network}"
            )


def callback(function: Callable[[int], None], node_id: int) -> Callable[[], None]:
    return lambda: function(node_id)


def custom_traces(
    system: SystemConfig, npus: int, kind: str | None = None
) -> dict[str, list[Trace]]:
    """The custom-collective trace sets the system file names (all, or the one for `kind`);
    paths are relative to the working directory, as ASTRA-sim reads them, else to the system
    file's folder."""
    out = {}
    for name, prefix in system.custom.items():
        if kind is not None and name != kind:
            continue
        base = Path(prefix)
        if not Path(f"{base}.0.et").exists() and not base.is_absolute():
            beside = Path(system.source).parent / base
            if Path(f"{beside}.0.et").exists():
                base = beside
        traces = read_trace_set(base, npus)
        for rank, trace in enumerate(traces):
            check_trace(trace, rank, npus, 1, f"{base}.{rank}.et")
        out[name] = traces
    return out
