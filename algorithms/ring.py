"""Ring algorithms: every rank sends to its successor and receives from its predecessor.

All-reduce is a reduce-scatter followed by an all-gather around the ring, written with MSCCL's
fused steps (`s, rrs.., rrcs, rcs.., r`) so that each chunk moves 2(p-1) times in one pass.
With k channels the buffer is cut into k parts, each on its own ring (odd channels run the ring
the other way round); a chunk factor c cuts every block into c pipelined chunks. Broadcast and
reduce are pipelined chains from (to) the root.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ccopt.algorithms.builder import Builder, Loc
from ccopt.dialects.algo import (
    BUFFERS,
    CNT,
    DSTBUF,
    DSTOFF,
    FIELDS,
    SRCBUF,
    SRCOFF,
    STEP_CODES,
    TYPE,
    Algorithm,
)

BlockLoc = Callable[[int], Loc]
"""Where block b (a ring position) lies in a rank's buffers."""


def _rings(ranks: int, channels: int) -> list[list[int]]:
    forward = list(range(ranks))
    return [forward if ch % 2 == 0 else forward[::-1] for ch in range(channels)]


def allreduce_on(b: Builder, ring: Sequence[int], chan: int, block: BlockLoc, cnt: int) -> None:
    """In-place ring all-reduce of the blocks `block(0..p-1)` among `ring`. Ring position a runs
    `s, rrs x (p-2), rrcs, rcs x (p-2), r` on blocks a-1, a-2, ..., a+1: the same table for
    every rank but rotated, so it is computed with numpy once per rank."""
    p = len(ring)
    if p == 1:
        return
    code = STEP_CODES
    kinds = np.array(
        [code["s"], *[code["rrs"]] * (p - 2), code["rrcs"], *[code["rcs"]] * (p - 2), code["r"]],
        dtype=np.int32,
    )
    # which block (relative to the rank's position) each step reads and writes
    src_at = np.array([-1, *range(-2, -p, -1), 0, *[0] * (p - 2), 0])
    dst_at = np.array([0, *[0] * (p - 2), 0, *range(-1, -p + 1, -1), 1])
    reads = np.isin(kinds, [code["s"], code["rrs"], code["rrcs"]])
    writes = np.isin(kinds, [code["rrcs"], code["rcs"], code["r"]])
    places = [block(k) for k in range(p)]
    buf = np.array([BUFFERS.index(x) for x, _ in places], dtype=np.int32)
    off = np.array([o for _, o in places], dtype=np.int32)
    table = np.full((len(kinds), FIELDS), -1, dtype=np.int32)
    table[:, TYPE] = kinds
    table[:, CNT] = cnt
    for a, r in enumerate(ring):
        src, dst = (a + src_at) % p, (a + dst_at) % p
        table[:, SRCBUF] = np.where(reads, buf[src], -1)
        table[:, SRCOFF] = np.where(reads, off[src], -1)
        table[:, DSTBUF] = np.where(writes, buf[dst], -1)
        table[:, DSTOFF] = np.where(writes, off[dst], -1)
        b.extend(r, b.tb(r, ring[(a + 1) % p], ring[a - 1], chan), table)


def reduce_scatter_on(
    b: Builder, ring: Sequence[int], chan: int, src: BlockLoc, out: BlockLoc, cnt: int
) -> None:
    """Ring reduce-scatter: ring position a ends with block a reduced, at `out(a)`."""
    p = len(ring)
    for a, r in enumerate(ring):
        if p == 1:
            if src(a) != out(a):
                b.step(r, b.tb(r, chan=chan), "cpy", src(a), out(a), cnt)
            continue
        tb = b.tb(r, ring[(a + 1) % p], ring[a - 1], chan)
        b.step(r, tb, "s", src((a - 1) % p), None, cnt)
        for s in range(p - 2):
            b.step(r, tb, "rrs", src((a - 2 - s) % p), None, cnt)
        b.step(r, tb, "rrc", src(a), out(a), cnt)


def all_gather_on(
    b: Builder, ring: Sequence[int], chan: int, src: BlockLoc, out: BlockLoc, cnt: int
) -> None:
    """Ring all-gather: ring position a contributes `src(a)`; everyone ends with all blocks at
    `out(0..p-1)`."""
    p = len(ring)
    for a, r in enumerate(ring):
        tb = b.tb(r, ring[(a + 1) % p] if p > 1 else -1, ring[a - 1] if p > 1 else -1, chan)
        if src(a) != out(a):
            b.step(r, tb, "cpy", src(a), out(a), cnt)
        if p == 1:
            continue
        b.step(r, tb, "s", src(a), None, cnt)
        for s in range(p - 2):
            b.step(r, tb, "rcs", None, out((a - 1 - s) % p), cnt)
        b.step(r, tb, "r", None, out((a + 1) % p), cnt)


def allreduce(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    width = chunk_factor * channels
    n = ranks * width
    b = Builder("allreduce_ring", "allreduce", ranks, n, n, inplace=True)
    for ch, ring in enumerate(_rings(ranks, channels)):
        for t in range(chunk_factor):
            base = ch * chunk_factor + t
            allreduce_on(
                b, ring, ch, lambda k, base=base, ring=ring: ("i", ring[k] * width + base), 1
            )
    return b.build(channels)


def reduce_scatter(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    width = chunk_factor * channels
    b = Builder("reduce_scatter_ring", "reduce_scatter", ranks, ranks * width, width)
    for ch, ring in enumerate(_rings(ranks, channels)):
        for t in range(chunk_factor):
            base = ch * chunk_factor + t
            reduce_scatter_on(
                b,
                ring,
                ch,
                lambda k, base=base, ring=ring: ("i", ring[k] * width + base),
                lambda k, base=base: ("o", base),
                1,
            )
    return b.build(channels)


def allgather(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    width = chunk_factor * channels
    b = Builder("allgather_ring", "allgather", ranks, width, ranks * width)
    for ch, ring in enumerate(_rings(ranks, channels)):
        for t in range(chunk_factor):
            base = ch * chunk_factor + t
            all_gather_on(
                b,
                ring,
                ch,
                lambda k, base=base: ("i", base),
                lambda k, base=base, ring=ring: ("o", ring[k] * width + base),
                1,
            )
    return b.build(channels)


def _chain(ranks: int, root: int, channels: int) -> list[list[int]]:
    """Chains starting at the root, one per channel (odd channels go the other way round)."""
    return [
        [(root + (k if ch % 2 == 0 else -k)) % ranks for k in range(ranks)]
        for ch in range(channels)
    ]


def broadcast(ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0) -> Algorithm:
    """A pipelined chain from the root: each chunk is received, stored and sent on at once."""
    width = chunk_factor * channels
    b = Builder("broadcast_ring", "broadcast", ranks, width, width, root=root)
    for ch, chain in enumerate(_chain(ranks, root, channels)):
        for a, r in enumerate(chain):
            nxt = chain[a + 1] if a + 1 < ranks else -1
            prv = chain[a - 1] if a > 0 else -1
            tb = b.tb(r, nxt, prv, ch)
            for t in range(ch * chunk_factor, (ch + 1) * chunk_factor):
                if a == 0:
                    b.step(r, tb, "cpy", ("i", t), ("o", t))
                    if nxt >= 0:
                        b.step(r, tb, "s", ("i", t), None)
                else:
                    b.step(r, tb, "rcs" if nxt >= 0 else "r", None, ("o", t))
    return b.build(channels)


def reduce(ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0) -> Algorithm:
    """A pipelined chain into the root: each rank adds its chunk and passes it on."""
    width = chunk_factor * channels
    b = Builder("reduce_ring", "reduce", ranks, width, width, root=root)
    for ch, chain in enumerate(_chain(ranks, root, channels)):
        chain = chain[::-1]  # the root last
        for a, r in enumerate(chain):
            nxt = chain[a + 1] if a + 1 < ranks else -1
            prv = chain[a - 1] if a > 0 else -1
            tb = b.tb(r, nxt, prv, ch)
            for t in range(ch * chunk_factor, (ch + 1) * chunk_factor):
                if a == 0 and nxt >= 0:
                    b.step(r, tb, "s", ("i", t), None)
                elif a == 0:
                    b.step(r, tb, "cpy", ("i", t), ("o", t))
                elif nxt >= 0:
                    b.step(r, tb, "rrs", ("i", t), None)
                else:
                    b.step(r, tb, "rrc", ("i", t), ("o", t))
    return b.build(channels)
