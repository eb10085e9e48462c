"""Simulating a Chakra workload as ASTRA-sim's analytical backend does.

Every rank replays its trace (`PREFIX.<rank>.et`) like ASTRA-sim's Workload: a node is issued
when its data_deps have finished, dependency-free nodes go out smallest id first, and a rank runs
one compute node and one communication node (collective or send) at a time - receives are not
limited. COMP nodes last `duration_micros` x 1000 ns (a node with no duration and no ops is
skipped), COMM_COLL nodes run ASTRA-sim's native collectives (or the custom-collective trace named
by the system file), a SEND completes when its message arrives and a RECV when it has arrived.
The workload's time is the latest rank's finish.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccopt.sim.astra import start_collective
from ccopt.sim.astra_custom import (
    COLL,
    COMP,
    RECV,
    SEND,
    NodeFeeder,
    callback,
    check_trace,
    custom_traces,
)
from ccopt.sim.astra_engine import EventLoop, FullNetwork, RankSystem
from ccopt.sim.chakra import Trace, TraceError, read_trace_set
from ccopt.sim.network import Network
from ccopt.sim.system import SystemConfig

COMM_KINDS = {0: "all-reduce", 2: "all-gather", 6: "all-to-all", 7: "reduce-scatter"}
BROADCAST = 5
INVALID = 0


@dataclass(frozen=True)
class WorkloadReport:
    """Time of a simulated workload: the latest rank's finish, and each rank's."""

    time_ns: int
    rank_finish_ns: list[int]
    events: int


def compute_ns(node: Any, attrs: dict[str, Any]) -> int | None:
    """ASTRA-sim's replay time of a compute node; None when it is skipped (no time, no ops)."""
    if node.duration_micros == 0 and not attrs.get("num_ops", 0):
        return None
    return node.duration_micros * 1000 if node.duration_micros else 1


class RankWorkload:
    """One rank's replay of its trace (ASTRA-sim's Workload with its HardwareResource)."""

    def __init__(
        self,
        sys: RankSystem,
        trace: Trace,
        source: str,
        network: Network,
        system: SystemConfig,
        custom_traces: dict[str, list[Trace]],
    ):
        self.sys, self.source, self.network, self.system = sys, source, network, system
        self.custom_traces = custom_traces
        self.feeder = NodeFeeder(trace, source)
        self.busy = {"cpu": False, "comp": False, "comm": False}
        self.finish_ns: int | None = None

    def start(self) -> None:
        self.issue_ready()
        self.check_finished()

    def resource(self, node: Any, attrs: dict[str, Any]) -> str | None:
        if attrs.get("is_cpu_op", False):
            return "cpu"
        if node.type == COMP:
            return "comp"
        return None if node.type == RECV else "comm"

    def issue_ready(self) -> None:
        deferred = []
        node_id = self.feeder.pop()
        while node_id is not None:
            node, attrs = self.feeder.nodes[node_id], self.feeder.attrs[node_id]
            unit = self.resource(node, attrs)
            if unit is not None and self.busy[unit]:
                deferred.append(node_id)
            else:
                self.issue(node_id, node, attrs, unit)
            node_id = self.feeder.pop()
        for node_id in deferred:
            self.feeder.push(node_id)

    def issue(self, node_id: int, node: Any, attrs: dict[str, Any], unit: str | None) -> None:
        done = callback(self.done, node_id)
        if node.type == INVALID or (unit in ("cpu", "comp") and compute_ns(node, attrs) is None):
            self.feeder.finish(node_id)
            return
        if unit in ("cpu", "comp"):
            self.busy[unit] = True
            self.sys.register(compute_ns(node, attrs), done)
        elif node.type == COLL:
            self.busy["comm"] = True
            self.collective(node, attrs, done)
        elif node.type == SEND:
            self.busy["comm"] = True
            tag = ("native", attrs.get("comm_tag", 0))
            self.sys.net.send(
                self.sys.id,
                attrs.get("comm_dst", 0),
                attrs.get("comm_size", 0),
                tag,
                -1,
                on_sent=done,
            )
        elif node.type == RECV:
            tag = ("native", attrs.get("comm_tag", 0))
            self.sys.net.recv(
                self.sys.id, attrs.get("comm_src", 0), attrs.get("comm_size", 0), tag, done
            )
        else:
            raise TraceError(
                f"{self.source}: error: node {node_id} ({node.name}): node type {node.type} "
                "is not simulated (ASTRA-sim's analytical backend runs COMP, COMM_COLL, "
                "COMM_SEND and COMM_RECV)"
            )

    def collective(self, node: Any, attrs: dict[str, Any], done: Callable[[], None]) -> None:
        comm_type = attrs["comm_type"]
        if comm_type == BROADCAST:
            self.sys.register(node.duration_micros * 1000 if node.duration_micros else 1, done)
            return
        kind = COMM_KINDS.get(comm_type)
        if kind is None:
            raise TraceError(
                f"{self.source}: error: node {node.id} ({node.name}): collective type "
                f"{comm_type} is not one ASTRA-sim runs (all-reduce 0, all-gather 2, "
                "broadcast 5, all-to-all 6, reduce-scatter 7)"
            )
        involved = attrs.get("involved_dim")
        dataset = start_collective(
            self.sys,
            kind,
            attrs["comm_size"],
            self.network,
            self.system,
            involved=involved,
            custom=self.custom_traces.get(kind),
        )
        if dataset.finish_time is not None:
            done()
        else:
            dataset.on_finish = lambda _time: done()

    def done(self, node_id: int) -> None:
        node, attrs = self.feeder.nodes[node_id], self.feeder.attrs[node_id]
        unit = self.resource(node, attrs)
        if unit is not None:
            self.busy[unit] = False
        self.feeder.finish(node_id)
        self.issue_ready()
        self.check_finished()

    def check_finished(self) -> None:
        if self.finish_ns is None and self.feeder.empty() and not any(self.busy.values()):
            self.finish_ns = self.sys.loop.now


def simulate_workload(
    network: Network, system: SystemConfig, prefix: str | Path, congestion: str = "unaware"
) -> WorkloadReport:
    """Replay the trace set PREFIX.<rank>.et on every rank; time = the latest rank's finish."""
    traces = read_trace_set(prefix, network.npus)
    extra = Path(f"{prefix}.{network.npus}.et")
    if extra.exists():
        raise TraceError(
            f"{extra}: error: the workload has more trace files than the network's "
            f"{network.npus} ranks ({network.source})"
        )
    for rank, trace in enumerate(traces):
        check_trace(trace, rank, network.npus, len(network.dims), f"{prefix}.{rank}.et")
    custom = custom_traces(system, network.npus)
    loop = EventLoop()
    if congestion == "aware":
        from ccopt.sim.astra_congestion import LinkNetwork

        net: FullNetwork = LinkNetwork(loop, network)
    else:
        net = FullNetwork(loop, network, lambda s, d, n: network.send_ns(s, d, n))
    queues = max(len(network.dims), 1)
    workloads = []
    for rank, trace in enumerate(traces):
        sys = RankSystem(rank, loop, net, system, queues)
        workloads.append(RankWorkload(sys, trace, f"{prefix}.{rank}.et", network, system, custom))
    for workload in workloads:
        workload.start()
    loop.run()
    stuck = [w.sys.id for w in workloads if w.finish_ns is None]
    if stuck:
        raise TraceError(
            f"{prefix}.{stuck[0]}.et: error: ranks {stuck[:8]} never finish: a receive has no "
            "matching send (same src, dst, tag and size), or ranks wait on each other (a rank "
            "runs one collective or send at a time, as in ASTRA-sim, which hangs here too)"
        )
    finish = [w.finish_ns for w in workloads]
    return WorkloadReport(max(finish), finish, loop.events)
