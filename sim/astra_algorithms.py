"""ASTRA-sim's native collective algorithms as state machines over `astra_engine`.

Each algorithm keeps ASTRA-sim's counting: a packet is injected on stream start and on every
receive, crosses the memory bus (endpoint-delay), is reduced when ASTRA-sim reduces it (3 x the
local-memory time), and then frees a send slot; `stream_count` sends make a phase. The number of
steps, which packets are reduced and when the phase exits are what ASTRA-sim's answer is made of,
so they follow its Ring, AllToAll (direct) and HalvingDoubling classes rule for rule.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ccopt.sim.astra_engine import RankSystem, Stream, log2_floor

CLOCKWISE, ANTICLOCKWISE = 0, 1


@dataclass(frozen=True)
class LogicalRing:
    """The ranks of one dimension as ASTRA-sim's RingTopology sees them: `nodes` ranks `offset`
    apart, this rank at `index`."""

    rank: int
    nodes: int
    index: int
    offset: int

    def _at(self, index: int) -> int:
        return self.rank + (index - self.index) * self.offset

    def _index_of(self, rank: int) -> int:
        return self.index + (rank - self.rank) // self.offset

    def receiver(self, rank: int, direction: int) -> int:
        step = 1 if direction == CLOCKWISE else -1
        return self._at((self._index_of(rank) + step) % self.nodes)

    def sender(self, rank: int, direction: int) -> int:
        return self.receiver(rank, ANTICLOCKWISE if direction == CLOCKWISE else CLOCKWISE)


@dataclass
class Packet:
    src: int
    dst: int
    size: int


class RingAlgorithm:
    """ASTRA-sim's Ring: one message to the next rank per step, 2(p-1) steps for all-reduce
    (the first p-1 reduced), p-1 for the others."""

    def __init__(self, kind: str, ring: LogicalRing, data_size: int, direction: int):
        p = ring.nodes
        self.kind, self.ring, self.data_size, self.direction = kind, ring, data_size, direction
        self.id = ring.rank
        self.receiver = ring.receiver(self.id, direction)
        self.sender = ring.sender(self.id, direction)
        self.parallel_reduce = 1
        self.stream_count = {"all-reduce": 2 * (p - 1), "all-to-all": (p - 1) * p // 2}.get(
            kind, p - 1
        )
        self.msg_size, self.final_data_size = {
            "all-reduce": (data_size // p, data_size),
            "all-gather": (data_size, data_size * p),
            "reduce-scatter": (data_size // p, data_size // p),
            "all-to-all": (data_size // p, data_size),
        }[kind]
        self.packets: deque[Packet] = deque()
        self.free_packets = 0
        self.zero_latency = 0
        self.non_zero_latency = 0
        self.toggle = False
        self.total_received = 0
        self.stream: Stream | None = None
        self.sys: RankSystem | None = None

    def bind(self, stream: Stream) -> None:
        self.stream, self.sys = stream, stream.owner

    # events ---------------------------------------------------------------------------------
    def run_init(self) -> None:
        for _ in range(self.parallel_reduce):
            self.insert_packet()

    def run_general(self) -> None:
        self.free_packets += 1
        self.ready()
        self.iteratable()

    def run_received(self) -> None:
        self.total_received += 1
        self.insert_packet()

    # ASTRA-sim's rules ----------------------------------------------------------------------
    def non_zero_latency_packets(self) -> int:
        return (self.ring.nodes - 1) * self.parallel_reduce

    def new_packet(self) -> Packet:
        return Packet(self.sender, self.receiver, self.msg_size)

    def insert_packet(self) -> None:
        if self.zero_latency == 0 and self.non_zero_latency == 0:
            self.zero_latency = self.parallel_reduce
            self.non_zero_latency = self.non_zero_latency_packets()
            self.toggle = not self.toggle
        self.packets.append(self.new_packet())
        if self.zero_latency > 0:
            processed = False
            self.zero_latency -= 1
        elif self.non_zero_latency > 0:
            processed = self.kind == "reduce-scatter" or (self.kind == "all-reduce" and self.toggle)
            self.non_zero_latency -= 1
        else:
            raise AssertionError("ASTRA-sim: should not inject nothing")
        self.release(processed)

    def release(self, processed: bool) -> None:
        """The packet crosses the memory bus, is reduced if it must be, then frees a slot."""
        size = self.msg_size
        sys = self.sys

        def arrived() -> None:
            if processed:
                sys.register(sys.config.reduction_ns(size), self.stream.general)
            else:
                self.stream.general()

        sys.membus(arrived)
        self.advance_peers()

    def advance_peers(self) -> None:
        """Ring keeps its peers; subclasses move to the next ones after each release."""

    def ready(self) -> bool:
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        packet = self.packets[0]
        sys, tag = self.sys, self.stream.stream_id
        sys.net.send(self.id, packet.dst, packet.size, tag, packet.src)
        sys.net.recv(self.id, packet.src, packet.size, tag, self.stream.consume)
        self.stream_count -= 1
        self.packets.popleft()
        self.free_packets -= 1
        return True

    def iteratable(self) -> bool:
        if self.stream_count == 0 and self.free_packets == self.parallel_reduce:
            self.packets.clear()
            self.sys.proceed_to_next_phase(self.stream)
            return False
        return True


class DirectAlgorithm(RingAlgorithm):
    """ASTRA-sim's AllToAll ("direct"): up to `window` messages in flight, each to the next
    peer around the ring; an all-reduce waits for its reduce-scatter half to arrive."""

    def __init__(self, kind: str, ring: LogicalRing, data_size: int, direction: int, window: int):
        super().__init__(kind, ring, data_size, direction)
        p = ring.nodes
        self.middle_point = p - 1
        self.parallel_reduce = p - 1 if window == -1 else min(window, p - 1)
        if kind == "all-to-all":
            self.stream_count = p - 1

    def run_general(self) -> None:
        self.free_packets += 1
        if self.kind == "all-reduce" and self.stream_count <= self.middle_point:
            if self.total_received < self.middle_point:
                return
            for _ in range(self.parallel_reduce):
                self.ready()
        else:
            self.ready()
        self.iteratable()

    def non_zero_latency_packets(self) -> int:
        return self.parallel_reduce

    def advance_peers(self) -> None:
        ring, d = self.ring, self.direction
        self.receiver = ring.receiver(self.receiver, d)
        if self.receiver == self.id:
            self.receiver = ring.receiver(self.receiver, d)
        self.sender = ring.sender(self.sender, d)
        if self.sender == self.id:
            self.sender = ring.sender(self.sender, d)


class HalvingDoublingAlgorithm(RingAlgorithm):
    """ASTRA-sim's HalvingDoubling: log2(p) exchanges with peers 1, 2, 4, ... apart (halving the
    message), then back (doubling) for all-reduce; all-gather starts p/2 apart."""

    def __init__(self, kind: str, ring: LogicalRing, data_size: int):
        if kind == "all-to-all":
            raise ValueError("halvingDoubling does not implement all-to-all")
        super().__init__(kind, ring, data_size, CLOCKWISE)
        p = ring.nodes
        steps = log2_floor(p)
        self.stream_count = 2 * steps if kind == "all-reduce" else steps
        if kind == "all-gather":
            self.msg_size, self.rank_offset, self.multiplier = data_size, p // 2, 0.5
            self.final_data_size = data_size * p
        else:
            self.msg_size, self.rank_offset, self.multiplier = data_size // 2, 1, 2.0
            self.final_data_size = data_size if kind == "all-reduce" else data_size // p
        self._aim()

    def _aim(self) -> None:
        """Peer `rank_offset` away, clockwise when this rank is in the lower half of its pair."""
        direction = CLOCKWISE
        if self.rank_offset != 0 and (self.ring.index // self.rank_offset) % 2 == 1:
            direction = ANTICLOCKWISE
        peer = self.id
        for _ in range(self.rank_offset):
            peer = self.ring.receiver(peer, direction)
        self.receiver = self.sender = peer

    def non_zero_latency_packets(self) -> int:
        return log2_floor(self.ring.nodes) - self.parallel_reduce

    def new_packet(self) -> Packet:
        return Packet(self.sender, self.receiver, self.msg_size)

    def advance_peers(self) -> None:
        self.rank_offset = int(self.rank_offset * self.multiplier)
        self.msg_size = int(self.msg_size / self.multiplier)
        if self.rank_offset == self.ring.nodes and self.kind == "all-reduce":
            self.multiplier = 0.5
            self.rank_offset = int(self.rank_offset * self.multiplier)
            self.msg_size = int(self.msg_size / self.multiplier)
        self._aim()
