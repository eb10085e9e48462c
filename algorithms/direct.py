"""Direct (all-pairs) algorithms: every rank talks to every other rank at once, one thread block
per peer, on a fully connected network. Reductions land in scratch slots (one per peer) and a
local thread block adds them in, each `re` waiting for its slot's receive; all-reduce is a direct
reduce-scatter then a direct all-gather, in place."""

from __future__ import annotations

from ccopt.algorithms.builder import Builder
from ccopt.algorithms.exchange import one_to_each
from ccopt.dialects.algo import Algorithm


def _peers(rank: int, ranks: int) -> list[int]:
    return [q for q in range(ranks) if q != rank]


def _reduce_slots(
    b: Builder, rank: int, block: int, c: int, into: str, into_off: int, src: str, src_off: int
) -> None:
    """Receive every peer's `block` (c chunks) into scratch and add them, with the rank's own
    `src` chunks, into `into`: the sum lands in `into` after one `re` per peer."""
    ranks = b.ranks
    local = b.tb(rank)
    if (into, into_off) != (src, src_off):
        b.step(rank, local, "cpy", (src, src_off), (into, into_off), c)
    for k, q in enumerate(_peers(rank, ranks)):
        tb = b.tb(rank, q, q)
        got = b.step(rank, tb, "r", None, ("s", k * c), c)
        b.step(rank, local, "re", ("s", k * c), (into, into_off), c, after=got)


def reduce_scatter(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    c = chunk_factor
    b = Builder("reduce_scatter_direct", "reduce_scatter", ranks, ranks * c, c)
    for r in range(ranks):
        for q in _peers(r, ranks):
            b.step(r, b.tb(r, q, q), "s", ("i", q * c), None, c)
        _reduce_slots(b, r, r, c, "o", 0, "i", r * c)
    return b.build()


def allreduce(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    c = chunk_factor
    n = ranks * c
    b = Builder("allreduce_direct", "allreduce", ranks, n, n, inplace=True)
    for r in range(ranks):
        for q in _peers(r, ranks):
            b.step(r, b.tb(r, q, q), "s", ("i", q * c), None, c)
        _reduce_slots(b, r, r, c, "i", r * c, "i", r * c)
    for r in range(ranks):
        done = b.last_step(r, b.tb(r))
        for q in _peers(r, ranks):
            tb = b.tb(r, q, q)
            b.step(r, tb, "s", ("i", r * c), None, c, after=done)
            b.step(r, tb, "r", None, ("i", q * c), c)
    return b.build()


def _all_pairs(r: int, ranks: int) -> list[tuple[int, int]]:
    return [(q, q) for q in _peers(r, ranks)]


def allgather(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    return one_to_each("allgather_direct", "allgather", ranks, chunk_factor, _all_pairs)


def alltoall(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    return one_to_each("alltoall_direct", "alltoall", ranks, chunk_factor, _all_pairs)


def broadcast(ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0) -> Algorithm:
    c = chunk_factor
    b = Builder("broadcast_direct", "broadcast", ranks, c, c, root=root)
    b.step(root, b.tb(root), "cpy", ("i", 0), ("o", 0), c)
    for q in _peers(root, ranks):
        tb = b.tb(root, q)
        peer = b.tb(q, recv=root)
        for t in range(c):
            b.step(root, tb, "s", ("i", t), None)
            b.step(q, peer, "r", None, ("o", t))
    return b.build()


def reduce(ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0) -> Algorithm:
    c = chunk_factor
    b = Builder("reduce_direct", "reduce", ranks, c, c, root=root)
    for q in _peers(root, ranks):
        b.step(q, b.tb(q, root, root), "s", ("i", 0), None, c)
    _reduce_slots(b, root, root, c, "o", 0, "i", 0)
    return b.build()
