"""The event machinery of ASTRA-sim's system layer, reproduced for its analytical backends.

ASTRA-sim's answer depends on the order in which its events fire, not only on delays: a rank's
events are grouped per tick and run when the tick's bucket is called, chunks of a collective
(streams) wait in per-dimension queues that admit `active-chunks-per-dimension` at a time, and a
message completes when both its arrival and its receive are registered. This module keeps those
rules; the algorithms that drive them live in `astra_algorithms`.

Symmetry: when every rank runs the same state machine with the same delays, all ranks do the
same thing at the same time, so one rank is simulated and each of its receives is completed by
the mirror image of its own matching send (`MirrorNetwork`).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ccopt.sim.network import Network
from ccopt.sim.system import SystemConfig

Handler = Callable[[], None]
PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("progress", default=None)
PROGRESS_EVERY = 1 << 16


class EventLoop:
    """ASTRA-sim's network event queue: events run by time, then in the order scheduled."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Handler]] = []
        self._seq = 0
        self.events = 0

    def schedule(self, delay: int, handler: Handler) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.now + delay, self._seq, handler))

    def run(self) -> None:
        """Run to the last event; a reporter set in PROGRESS hears (events, now) every
        PROGRESS_EVERY events (a long full simulation shows that it is moving)."""
        heap, pop = self._heap, heapq.heappop
        report = PROGRESS.get()
        while heap:
            for _ in range(PROGRESS_EVERY):
                if not heap:
                    break
                self.now, _, handler = pop(heap)
                handler()
            self.events += PROGRESS_EVERY
            if report is not None:
                report(self.events, self.now)
        self.events = self._seq


class FullNetwork:
    """Sends and receives between real ranks, matched as ASTRA-sim's analytical frontend
    matches them: on (tag, src, dst, size, n-th such message)."""

    def __init__(self, loop: EventLoop, network: Network, delay: Callable[[int, int, int], int]):
        self.loop, self.network, self.delay = loop, network, delay
        self._sent: dict[tuple, int] = defaultdict(int)
        self._posted: dict[tuple, int] = defaultdict(int)
        self._arrived: set[tuple] = set()
        self._waiting: dict[tuple, Handler] = {}

    def send(
        self,
        src: int,
        dst: int,
        size: int,
        tag: Any,
        mirror_src: int,
        on_sent: Handler | None = None,
    ) -> None:
        """Send `size` bytes; `on_sent` runs when the message arrives (ASTRA-sim's send
        handler), before the matching receive completes."""
        entry = self._numbered(self._sent, (tag, src, dst, size))
        self.loop.schedule(self.delay(src, dst, size), lambda: self._arrive(entry, on_sent))

    @staticmethod
    def _numbered(counter: dict[tuple, int], key: tuple) -> tuple:
        """`key` with how many such messages came before it (the n-th of its kind)."""
        n = counter[key]
        counter[key] = n + 1
        return (*key, n)

    def _arrive(self, entry: tuple, on_sent: Handler | None = None) -> None:
        if on_sent is not None:
            on_sent()
        handler = self._waiting.pop(entry, None)
        if handler is None:
            self._arrived.add(entry)
        else:
            handler()

    def recv(self, dst: int, src: int, size: int, tag: Any, handler: Handler) -> None:
        entry = self._numbered(self._posted, (tag, src, dst, size))
        if entry in self._arrived:
            self._arrived.discard(entry)
            self.loop.schedule(0, handler)
        else:
            self._waiting[entry] = handler


class MirrorNetwork(FullNetwork):
    """One simulated rank: its send to `dst` stands for the symmetric send from `mirror_src` to
    itself, which by symmetry leaves at the same time and costs delay(mirror_src -> rank)."""

    def send(
        self,
        src: int,
        dst: int,
        size: int,
        tag: Any,
        mirror_src: int,
        on_sent: Handler | None = None,
    ) -> None:
        entry = self._numbered(self._sent, (tag, mirror_src, src, size))
        self.loop.schedule(self.delay(mirror_src, src, size), lambda: self._arrive(entry, on_sent))


@dataclass
class DataSet:
    """The streams (chunks) of one collective on one rank; done when all have finished."""

    streams: int
    finished: int = 0
    finish_time: int | None = None
    on_finish: Callable[[int], None] | None = None


@dataclass
class Phase:
    """A stream's step through one dimension: an algorithm bound to a queue."""

    queue_id: int
    algorithm: Any


@dataclass
class Stream:
    """One chunk of a collective, moving through its phases (ASTRA-sim's StreamBaseline)."""

    stream_id: int
    priority: int
    phases: deque[Phase]
    dataset: DataSet
    owner: RankSystem
    current: Phase | None = None
    current_queue_id: int = -1
    initialized: bool = False
    steps_finished: int = 0
    running: bool = field(default=False)

    def init(self) -> None:
        self.initialized = True
        if self.current is not None:
            self.current.algorithm.run_init()

    def general(self) -> None:
        self.current.algorithm.run_general()

    def consume(self) -> None:
        self.current.algorithm.run_received()


class RankSystem:
    """One rank's system layer (ASTRA-sim's Sys): per-tick event buckets, the ready list, the
    per-queue active streams and the scheduler that admits them."""

    def __init__(
        self, rank: int, loop: EventLoop, net: FullNetwork, config: SystemConfig, queues: int
    ):
        self.id, self.loop, self.net, self.config = rank, loop, net, config
        self._buckets: dict[int, list[Handler]] = {}
        self.ready_list: list[Stream] = []
        self.active: list[list[Stream]] = [[] for _ in range(queues)]
        self.running = [0] * queues
        self.queue_threshold = config.active_chunks_per_dimension
        self.first_phase_streams = 0
        self.total_running_streams = 0
        self.priority_counter = 0
        self.num_streams = 0
        self.tree_turns: dict[tuple[str, int], int] = {}

    # events -------------------------------------------------------------------------------
    def register(self, delay: int, handler: Handler) -> None:
        """ASTRA-sim's try_register_event: events of one tick run together, in order."""
        when = self.loop.now + delay
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._buckets[when] = []
            self.loop.schedule(delay, lambda: self._call_bucket(when))
        bucket.append(handler)

    def _call_bucket(self, when: int) -> None:
        bucket = self._buckets[when]
        for handler in bucket:
            handler()
        del self._buckets[when]

    # streams ------------------------------------------------------------------------------
    def next_priority(self) -> int:
        if self.config.scheduling_policy == "LIFO":
            self.priority_counter += 1
            return self.priority_counter - 1
        self.priority_counter -= 1
        return self.priority_counter + 1

    @staticmethod
    def insert_stream(queue: list[Stream], stream: Stream) -> None:
        """After every initialized stream and every stream of higher or equal priority. A queue
        holds its initialized streams first (at most active-chunks-per-dimension of them), then
        the waiting ones by falling priority, so the place is found by bisection: a linear scan
        made many dataset splits quadratic (100000 splits took minutes)."""
        at = 0
        while at < len(queue) and queue[at].initialized:
            at += 1
        at = bisect_right(queue, -stream.priority, lo=at, key=lambda s: -s.priority)
        queue.insert(at, stream)

    def insert_into_ready_list(self, stream: Stream) -> None:
        self.insert_stream(self.ready_list, stream)
        self.schedule(len(self.ready_list))

    def schedule(self, count: int) -> None:
        for _ in range(min(count, len(self.ready_list))):
            self.proceed_to_next_phase(self.ready_list[0])
            self.ready_list.pop(0)
            self.first_phase_streams += 1
            self.total_running_streams += 1

    def proceed_to_next_phase(self, stream: Stream) -> None:
        """ASTRA-sim's proceed_to_next_vnet_baseline: leave the current queue, enter the next
        one (or finish the stream), then let both queues admit waiting streams."""
        previous = stream.current_queue_id
        if stream.steps_finished == 1:
            self.first_phase_streams -= 1
        if not stream.phases:
            dataset = stream.dataset
            dataset.finished += 1
            if dataset.finished == dataset.streams:
                dataset.finish_time = self.loop.now
                if dataset.on_finish is not None:
                    dataset.on_finish(self.loop.now)
        if previous >= 0 and stream.current is not None:
            self.active[stream.current.queue_id].remove(stream)
        if not stream.phases:
            self.total_running_streams -= 1
            if previous >= 0:
                self.stream_removed(previous)
            return
        stream.steps_finished += 1
        phase = stream.phases.popleft()
        stream.current_queue_id = phase.queue_id
        stream.current = phase
        phase.algorithm.bind(stream)
        stream.initialized = False
        self.insert_stream(self.active[phase.queue_id], stream)
        if previous >= 0:
            self.stream_removed(previous)
        self.admit(phase.queue_id)

    def admit(self, queue_id: int) -> None:
        """Initialize waiting streams of a queue up to active-chunks-per-dimension."""
        queue = self.active[queue_id]
        at = self.running[queue_id]
        while at < len(queue) and self.running[queue_id] < self.queue_threshold:
            queue[at].init()
            self.running[queue_id] += 1
            at += 1

    def stream_removed(self, queue_id: int) -> None:
        self.running[queue_id] -= 1
        self.schedule(len(self.ready_list))
        self.admit(queue_id)

    # messages -----------------------------------------------------------------------------
    def membus(self, handler: Handler) -> None:
        """Moving a packet between NPU and memory: endpoint-delay ns (no shared-bus model)."""
        self.register(self.config.endpoint_delay, handler)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def log2_floor(n: int) -> int:
    """C++'s int(log2(n)) for the positive sizes ASTRA-sim uses."""
    return int(math.log2(n))
