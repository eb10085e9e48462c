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


class PhaseAlgorithm:
    """What every algorithm shares: the stream it drives (bound when its phase starts) and how
    a packet reaches the NPU - the memory bus, then the reduction if the packet needs one."""

    stream: Stream | None = None
    sys: RankSystem | None = None

    def bind(self, stream: Stream) -> None:
        self.stream, self.sys = stream, stream.owner

    def deliver(self, processed: bool, size: int) -> None:
        """ASTRA-sim's PacketBundle: endpoint-delay on the bus, then 3 local-memory passes when
        `processed`, then the stream's General event."""
        sys = self.sys

        def arrived() -> None:
            if processed:
                sys.register(sys.config.reduction_ns(size), self.stream.general)
            else:
                self.stream.general()

        sys.membus(arrived)


class RingAlgorithm(PhaseAlgorithm):
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
        self.deliver(processed, self.msg_size)
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


@dataclass(frozen=True)
class TreePosition:
    """A rank's place in one binary tree of ASTRA-sim's double binary tree (ids are ranks)."""

    parent: int
    left: int
    right: int

    @property
    def role(self) -> str:
        if self.parent < 0:
            return "root"
        return "leaf" if self.left < 0 and self.right < 0 else "intermediate"


def tree_position(rank: int, nodes: int, start: int, stride: int, root_min: bool) -> TreePosition:
    """ASTRA-sim's BinaryTree: a root with one perfect subtree of nodes-1 ranks, numbered in
    order (`start`, `start+stride`, ...); RootMin puts the root first, RootMax last."""
    if nodes & (nodes - 1):
        raise ValueError("doubleBinaryTree needs a power-of-two number of ranks")
    index = (rank - start) // stride
    root = 0 if root_min else nodes - 1
    lo, hi = (1, nodes - 1) if root_min else (0, nodes - 2)

    def at(i: int) -> int:
        return start + i * stride if i >= 0 else -1

    if index == root:
        child = (lo + hi) // 2
        return TreePosition(-1, -1 if root_min else at(child), at(child) if root_min else -1)
    parent = root
    while True:
        mid = (lo + hi) // 2
        if mid == index:
            left = (lo + mid - 1) // 2 if lo <= mid - 1 else -1
            right = (mid + 1 + hi) // 2 if mid + 1 <= hi else -1
            return TreePosition(at(parent), at(left), at(right))
        parent = mid
        lo, hi = (lo, mid - 1) if index < mid else (mid + 1, hi)


class DoubleBinaryTreeAlgorithm(PhaseAlgorithm):
    """ASTRA-sim's DoubleBinaryTreeAllReduce: reduce the whole chunk up one binary tree and
    broadcast it back down; chunks alternate between the two trees (root last, root first)."""

    def __init__(self, position: TreePosition, rank: int, data_size: int):
        self.position, self.id, self.data_size = position, rank, data_size
        self.final_data_size = data_size
        self.state = "begin"
        self.reductions = 0

    def run_init(self) -> None:
        self.step("init")

    def run_general(self) -> None:
        self.step("general")

    def run_received(self) -> None:
        self.step("received")

    def bundle(self, processed: bool) -> None:
        self.deliver(processed, self.data_size)

    def send(self, peer: int) -> None:
        self.sys.net.send(self.id, peer, self.data_size, self.stream.stream_id, peer)

    def recv(self, peer: int) -> None:
        self.sys.net.recv(self.id, peer, self.data_size, self.stream.stream_id, self.stream.consume)

    def exit(self) -> None:
        self.sys.proceed_to_next_phase(self.stream)

    def step(self, event: str) -> None:
        """ASTRA-sim's run(): the first matching rule fires, in its order."""
        role, state, pos = self.position.role, self.state, self.position
        only_child = pos.left if pos.left >= 0 else pos.right
        if role == "leaf":
            if state == "begin":
                self.bundle(False)
                self.state = "to-parent"
            elif state == "to-parent":
                self.send(pos.parent)
                self.recv(pos.parent)
                self.state = "from-parent"
            elif state == "from-parent":
                self.bundle(False)
                self.state = "end"
            elif state == "end":
                self.exit()
        elif role == "intermediate":
            if state == "begin":
                self.recv(pos.left)
                self.recv(pos.right)
                self.state = "two-children"
            elif state == "two-children" and event == "received":
                self.bundle(True)
                self.state = "one-child"
            elif state == "one-child" and event == "received":
                self.bundle(True)
                self.state = "to-parent"
            elif self.reductions < 1 and event == "general":
                self.reductions += 1
            elif state == "to-parent":
                self.send(pos.parent)
                self.recv(pos.parent)
                self.state = "from-parent"
            elif state == "from-parent" and event == "received":
                self.bundle(True)
                self.state = "to-children"
            elif state == "to-children":
                self.send(pos.left)
                self.send(pos.right)
                self.exit()
        elif state == "begin":
            self.recv(only_child)
            self.state = "one-child"
        elif state == "one-child":
            self.bundle(True)
            self.state = "to-children"
        elif state == "to-children":
            self.send(only_child)
            self.exit()
