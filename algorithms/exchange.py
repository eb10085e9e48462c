"""Pairwise and Bruck exchanges for all-to-all and all-gather.

Pairwise: in round i (1..p-1) rank r sends to r+i and receives from r-i, one thread block per
round; the rounds touch different blocks, so they need no order among them.

Bruck: log p rounds. All-gather: in the round of distance h, rank r sends the blocks it holds
(r .. r+h-1) to r-h and receives r+h .. from r+h. All-to-all: the block rank q sends to rank
q+d moves in the rounds of the set bits of d; a rank keeps a block in transit in scratch slot d
(at any time one block per distance d is there), and a block that has arrived goes to the output.
"""

from __future__ import annotations

from collections.abc import Callable

from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import Algorithm

Partners = Callable[[int, int], list[tuple[int, int]]]
"""Given rank and ranks: the (send-to, receive-from) pair of each of the rank's thread blocks."""


def one_to_each(
    name: str, collective: str, ranks: int, chunk_factor: int, partners: Partners
) -> Algorithm:
    """All-gather or all-to-all as one exchange per partner pair and a local copy: what the
    direct and the pairwise algorithms share (they differ in who pairs with whom)."""
    c = chunk_factor
    gather = collective == "allgather"
    n = ranks * c
    b = Builder(name, collective, ranks, c if gather else n, n)
    for r in range(ranks):
        b.step(r, b.tb(r), "cpy", ("i", 0 if gather else r * c), ("o", r * c), c)
        for to, frm in partners(r, ranks):
            tb = b.tb(r, to, frm)
            b.step(r, tb, "s", ("i", 0 if gather else to * c), None, c)
            b.step(r, tb, "r", None, ("o", frm * c), c)
    return b.build()


def _pairwise(r: int, ranks: int) -> list[tuple[int, int]]:
    return [((r + i) % ranks, (r - i) % ranks) for i in range(1, ranks)]


def pairwise_alltoall(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    return one_to_each("alltoall_pairwise", "alltoall", ranks, chunk_factor, _pairwise)


def pairwise_allgather(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    return one_to_each("allgather_pairwise", "allgather", ranks, chunk_factor, _pairwise)


def _runs(first: int, count: int, ranks: int) -> list[tuple[int, int]]:
    """Blocks first .. first+count-1 (mod ranks) as contiguous (start, length) runs."""
    first %= ranks
    head = min(count, ranks - first)
    return [(first, head)] + ([(0, count - head)] if count > head else [])


def bruck_allgather(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    c = chunk_factor
    b = Builder("allgather_bruck", "allgather", ranks, c, ranks * c, chain=True)
    for r in range(ranks):
        b.step(r, b.tb(r), "cpy", ("i", 0), ("o", r * c), c)
        held = 1
        while held < ranks:
            count = min(held, ranks - held)
            tb = b.tb(r, (r - held) % ranks, (r + held) % ranks)
            for start, length in _runs(r, count, ranks):
                b.step(r, tb, "s", ("o", start * c), None, length * c)
            for start, length in _runs(r + held, count, ranks):
                b.step(r, tb, "r", None, ("o", start * c), length * c)
            held += count
    return b.build()


def bruck_alltoall(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    c = chunk_factor
    n = ranks * c
    b = Builder("alltoall_bruck", "alltoall", ranks, n, n, chain=True)
    for h in range(ranks):
        b.step(h, b.tb(h), "cpy", ("i", h * c), ("o", h * c), c)
        bit = 1
        while bit < ranks:
            tb = b.tb(h, (h + bit) % ranks, (h - bit) % ranks)
            moving = [d for d in range(ranks) if d & bit]
            for d in moving:  # where this rank holds the block of distance d now
                moved = d & (bit - 1)
                src = ("s", d * c) if moved else ("i", (h + d) % ranks * c)
                b.step(h, tb, "s", src, None, c)
            for d in moving:  # what arrives from h - bit
                if d >> (bit.bit_length()):
                    dst = ("s", d * c)
                else:  # last hop: it came from rank h - d
                    dst = ("o", (h - d) % ranks * c)
                b.step(h, tb, "r", None, dst, c)
            bit *= 2
    return b.build()
