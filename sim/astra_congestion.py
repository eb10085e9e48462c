"""ASTRA-sim's congestion-aware analytical backend (1-D): messages are stored and forwarded
link by link, and a link sends one message at a time (the others wait in its FIFO).

A link is busy for the serialization time `floor(size / B)` and the message reaches the next
device after `floor(latency + size / B)`; a Ring routes the short way round, a Switch goes through
one switch device, FullyConnected is one link. The system layer is the same as the
congestion-unaware one (`astra_engine`); only how a message travels changes, so every rank is
simulated (links shared between ranks break the one-rank symmetry).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ccopt.sim.astra import CollectiveResult, run_collective
from ccopt.sim.astra_engine import EventLoop, FullNetwork, Handler
from ccopt.sim.network import ConfigError, Network, NetworkDim
from ccopt.sim.system import SystemConfig


class Link:
    """One direction of one link: busy while serializing, FIFO of waiting messages."""

    __slots__ = ("dim", "busy", "pending")

    def __init__(self, dim: NetworkDim):
        self.dim = dim
        self.busy = False
        self.pending: deque[tuple[int, list[int], Handler]] = deque()


class LinkNetwork(FullNetwork):
    """Messages routed hop by hop over per-direction links (ASTRA-sim's congestion-aware
    Topology/Device/Link/Chunk)."""

    def __init__(self, loop: EventLoop, network: Network):
        super().__init__(loop, network, lambda s, d, n: 0)
        if len(network.dims) != 1:
            message = "the congestion-aware backend supports 1-D networks only"
            raise ConfigError(network.source, "topology", message)
        self.dim = network.dims[0]
        self.links: dict[tuple[int, int], Link] = {}

    def route(self, src: int, dst: int) -> list[int]:
        """Devices visited from src to dst; a Switch is device `npus`."""
        d = self.dim
        if d.topology == "Switch":
            return [src, d.npus, dst]
        if d.topology == "FullyConnected":
            return [src, dst]
        clockwise = (dst - src) % d.npus
        step = -1 if d.npus - clockwise < clockwise else 1
        path, here = [src], src
        while here != dst:
            here = (here + step) % d.npus
            path.append(here)
        return path

    def _link(self, a: int, b: int) -> Link:
        link = self.links.get((a, b))
        if link is None:
            link = self.links[(a, b)] = Link(self.dim)
        return link

    def send(
        self,
        src: int,
        dst: int,
        size: int,
        tag: Any,
        mirror_src: int,
        on_sent: Handler | None = None,
    ) -> None:
        entry = self._numbered(self._sent, (tag, src, dst, size))
        self._forward(size, self.route(src, dst), lambda: self._arrive(entry, on_sent))

    def _forward(self, size: int, path: list[int], done: Handler) -> None:
        link = self._link(path[0], path[1])
        if link.busy:
            link.pending.append((size, path, done))
        else:
            self._transmit(link, size, path, done)

    def _transmit(self, link: Link, size: int, path: list[int], done: Handler) -> None:
        link.busy = True
        d = link.dim
        rate = d.bytes_per_ns()
        rest = path[1:]

        def arrived() -> None:
            if len(rest) == 1:
                done()
            else:
                self._forward(size, rest, done)

        def free() -> None:
            link.busy = False
            if link.pending:
                self._transmit(link, *link.pending.popleft())

        self.loop.schedule(int(d.latency_ns + float(size) / rate), arrived)
        self.loop.schedule(int(float(size) / rate), free)


def simulate_collective_aware(
    network: Network, system: SystemConfig, kind: str, size: int
) -> CollectiveResult:
    """Time one collective on ASTRA-sim's congestion-aware backend (every rank simulated)."""
    return run_collective(
        network, system, kind, size, lambda loop: LinkNetwork(loop, network), symmetric=False
    )
