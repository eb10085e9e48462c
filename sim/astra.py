"""ASTRA-sim mode: one native collective timed as ASTRA-sim's analytical backend times it.

`simulate_collective(network, system, "all-reduce", size)` splits the buffer into chunks as
ASTRA-sim does (preferred-dataset-splits, at least one byte per rank), turns each chunk into a
stream of phases (one per network dimension; reduce-scatter -> all-reduce -> all-gather across
dimensions with localBWAware), and runs the streams through `astra_engine`. The answer is the
latest rank's finish in ns, equal to ASTRA-sim c459ab6's `sys[i] finished, T cycles`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ccopt.sim.astra_algorithms import (
    ANTICLOCKWISE,
    CLOCKWISE,
    DirectAlgorithm,
    DoubleBinaryTreeAlgorithm,
    HalvingDoublingAlgorithm,
    LogicalRing,
    RingAlgorithm,
    tree_position,
)
from ccopt.sim.astra_custom import CustomAlgorithm, custom_traces
from ccopt.sim.astra_engine import (
    DataSet,
    EventLoop,
    FullNetwork,
    MirrorNetwork,
    Phase,
    RankSystem,
    Stream,
)
from ccopt.sim.chakra import Trace
from ccopt.sim.network import ConfigError, Network
from ccopt.sim.system import COLLECTIVES, Implementation, SystemConfig


@dataclass(frozen=True)
class CollectiveResult:
    """What one simulated collective reports."""

    collective: str
    size: int
    time_ns: int
    chunks: int
    phases: tuple[str, ...]
    symmetric: bool
    events: int


@dataclass(frozen=True)
class _PhasePlan:
    """A phase before it is bound to a rank: collective kind, logical dimension, queue (one per
    dimension) and ring direction (localBWAware's all-gathers run anticlockwise)."""

    kind: str
    dim: int
    queue: int
    direction: int


def _logical_dims(network: Network, impls: tuple[Implementation, ...]) -> list[tuple[int, int]]:
    """(nodes, offset) of each logical dimension; a one* implementation is one ring of all."""
    dims, offset = [], 1
    for dim, impl in enumerate(impls):
        if impl.single_ring:
            return [(network.npus, 1)]
        nodes = network.dims[dim].npus
        dims.append((nodes, offset))
        offset *= nodes
    return dims


def _implementations(network: Network, system: SystemConfig, kind: str):
    """Per-dimension implementations of `kind`, checked; a custom trace is one dimension."""
    if kind in system.custom:
        return (Implementation("custom"),)
    impls = system.implementation(kind)
    key = f"{kind}-implementation"
    if not impls:
        raise ConfigError(system.source, key, f"missing: needed to run {kind}")
    if len(impls) > len(network.dims):
        shape = f"{len(impls)} entries for a {len(network.dims)}-dimensional network"
        raise ConfigError(system.source, key, shape)
    dims = _logical_dims(network, impls)
    for dim, impl in enumerate(impls):
        nodes = dims[min(dim, len(dims) - 1)][0]
        if impl.base == "doubleBinaryTree" and nodes & (nodes - 1):
            message = f"doubleBinaryTree needs a power-of-two dimension ({dim} has {nodes})"
            raise ConfigError(system.source, key, message)
        if impl.base == "halvingDoubling" and kind == "all-to-all":
            raise ConfigError(system.source, key, "halvingDoubling does not implement all-to-all")
    return impls


def plan_phases(
    kind: str, ndims: int, nodes: list[int], optimization: str, involved: list[bool] | None = None
) -> list[_PhasePlan]:
    """The phases of one chunk, in ASTRA-sim's order (Sys::generate_collective); dimensions of
    one rank or not involved are skipped."""
    order = list(range(ndims))
    if kind == "all-gather":
        order.reverse()
    flags = list(involved) if involved is not None else [True] * ndims
    flags += [involved is None] * (ndims - len(flags))
    active = [d for d in order if nodes[d] > 1 and flags[d]]
    if kind != "all-reduce" or optimization == "baseline" or not active:
        return [_PhasePlan(kind, d, d, CLOCKWISE) for d in active]
    last = active[-1]
    plans = [_PhasePlan("reduce-scatter", d, d, CLOCKWISE) for d in active[:-1]]
    plans.append(_PhasePlan("all-reduce", last, last, CLOCKWISE))
    plans += [_PhasePlan("all-gather", d, d, ANTICLOCKWISE) for d in reversed(active[:-1])]
    return plans


def _algorithm(
    plan: _PhasePlan,
    impl: Implementation,
    sys: RankSystem,
    dims,
    size: int,
    collective: str,
    custom: list[Trace] | None,
):
    """The algorithm object of one phase on one rank (Sys::generate_collective_phase)."""
    nodes, offset = dims[plan.dim]
    rank = sys.id
    if impl.name == "custom":
        return CustomAlgorithm(custom[rank], rank, f"{collective} custom trace of rank {rank}")
    if impl.base == "doubleBinaryTree":
        key = (collective, plan.dim)
        turn = sys.tree_turns.get(key, 0)
        sys.tree_turns[key] = turn + 1
        last = plan.dim == len(dims) - 1
        start = rank % offset if last else rank - rank % (offset * nodes) + rank % offset
        position = tree_position(rank, nodes, start, offset, root_min=turn % 2 == 1)
        return DoubleBinaryTreeAlgorithm(position, rank, size)
    ring = LogicalRing(rank, nodes, (rank // offset) % nodes, offset)
    if impl.base == "ring":
        return RingAlgorithm(plan.kind, ring, size, plan.direction)
    if impl.base == "direct":
        return DirectAlgorithm(plan.kind, ring, size, plan.direction, impl.window)
    return HalvingDoublingAlgorithm(plan.kind, ring, size)


def chunking(size: int, kind: str, splits: int, npus: int) -> tuple[int, int]:
    """(chunk size, total bytes) as Sys::determine_chunk_size rounds them: a chunk is at least
    one byte per rank except for all-gather, and then the total grows to splits chunks."""
    chunk = size // splits
    if kind != "all-gather" and npus > chunk:
        chunk = npus
        size = splits * chunk
    return chunk, size


def start_collective(
    sys: RankSystem,
    kind: str,
    size: int,
    network: Network,
    system: SystemConfig,
    involved: list[bool] | None = None,
    custom: list[Trace] | None = None,
) -> DataSet:
    """Issue one collective on one rank (ASTRA-sim's Sys::generate_collective); `custom` is
    the trace set when the system file names one for `kind`."""
    impls = _implementations(network, system, kind)
    dims = _logical_dims(network, impls)
    plans = plan_phases(
        kind, len(dims), [n for n, _ in dims], system.collective_optimization, involved
    )
    chunk, remaining = chunking(size, kind, system.preferred_dataset_splits, network.npus)
    dataset = DataSet(math.ceil(remaining / chunk) if chunk else 0)
    if not plans or chunk == 0:
        dataset.finish_time = sys.loop.now
        return dataset
    priority = sys.next_priority()
    while remaining > 0:
        remaining = 0 if chunk > remaining else remaining - chunk
        phases, data = deque(), chunk
        for plan in plans:
            impl = impls[0] if impls[0].single_ring else impls[plan.dim]
            algorithm = _algorithm(plan, impl, sys, dims, data, kind, custom)
            phases.append(Phase(plan.queue, algorithm))
            data = algorithm.final_data_size
        stream = Stream(sys.num_streams, priority, phases, dataset, sys)
        sys.num_streams += 1
        sys.insert_into_ready_list(stream)
    return dataset


def is_symmetric(network: Network, system: SystemConfig, kind: str) -> bool:
    """Every rank runs the same state machine with the same delays: ring and direct always,
    halving-doubling when each of its rings has a power-of-two size."""
    impls = _implementations(network, system, kind)
    if any(i.base in ("doubleBinaryTree", "custom") for i in impls):
        return False
    for nodes, _ in _logical_dims(network, impls):
        if any(i.base == "halvingDoubling" for i in impls) and nodes & (nodes - 1):
            return False
    return True


def _halving_doubling_hint(network: Network, system: SystemConfig, kind: str) -> str:
    """Why a collective hangs when halvingDoubling runs on a dimension that is not a power of
    two (its partners do not pair up; only all-gather survives that)."""
    impls = _implementations(network, system, kind)
    for dim, (nodes, _) in enumerate(_logical_dims(network, impls)):
        impl = impls[0] if impls[0].single_ring else impls[dim]
        if impl.base == "halvingDoubling" and nodes & (nodes - 1):
            return f" (halvingDoubling needs a power-of-two dimension; dimension {dim} has {nodes})"
    return ""


def simulate_collective(
    network: Network, system: SystemConfig, kind: str, size: int, symmetric: bool | None = None
) -> CollectiveResult:
    """Time one collective of `size` bytes (ASTRA-sim's comm_size) on the congestion-unaware
    backend; one rank stands for all when they behave alike (unless `symmetric=False`)."""
    if symmetric is None:
        symmetric = is_symmetric(network, system, kind)
    elif symmetric and not is_symmetric(network, system, kind):
        raise ValueError("this collective is not symmetric across ranks")
    cache: dict[tuple[int, int, int], int] = {}

    def delay(src: int, dst: int, nbytes: int) -> int:
        key = (src, dst, nbytes)
        value = cache.get(key)
        if value is None:
            value = cache[key] = network.send_ns(src, dst, nbytes)
        return value

    network_class = MirrorNetwork if symmetric else FullNetwork
    return run_collective(
        network, system, kind, size, lambda loop: network_class(loop, network, delay), symmetric
    )


def run_collective(
    network: Network,
    system: SystemConfig,
    kind: str,
    size: int,
    make_net: Callable[[EventLoop], FullNetwork],
    symmetric: bool,
) -> CollectiveResult:
    """Issue the collective on every simulated rank at time 0 and run to completion."""
    if kind not in COLLECTIVES:
        raise ValueError(f"unknown collective {kind!r}")
    if system.endpoint_delay == 0:
        message = "must be at least 1 for native collectives (ASTRA-sim aborts on 0)"
        raise ConfigError(system.source, "endpoint-delay", message)
    loop = EventLoop()
    net = make_net(loop)
    queues = max(len(network.dims), 1)
    ranks = [0] if symmetric else range(network.npus)
    systems = [RankSystem(r, loop, net, system, queues) for r in ranks]
    custom = custom_traces(system, network.npus, kind).get(kind)
    datasets = [start_collective(s, kind, size, network, system, custom=custom) for s in systems]
    loop.run()
    unfinished = [s.id for s, d in zip(systems, datasets, strict=True) if d.finish_time is None]
    if unfinished:
        message = f"ranks {unfinished[:8]} never finish: their sends and receives do not match"
        raise ConfigError(
            system.source, None, message + _halving_doubling_hint(network, system, kind)
        )
    impls = _implementations(network, system, kind)
    dims = _logical_dims(network, impls)
    plans = plan_phases(kind, len(dims), [n for n, _ in dims], system.collective_optimization)
    chunk, remaining = chunking(size, kind, system.preferred_dataset_splits, network.npus)
    return CollectiveResult(
        collective=kind,
        size=size,
        time_ns=max(d.finish_time for d in datasets),
        chunks=math.ceil(remaining / chunk) if chunk else 0,
        phases=tuple(f"{p.kind}@dim{p.dim}" for p in plans),
        symmetric=symmetric,
        events=loop.events,
    )
