"""Recursive halving-doubling (Rabenseifner) and recursive doubling.

On p = 2^k ranks, round d pairs rank v with v xor d. All-reduce halves the range each rank
reduces (reduce-scatter by recursive halving) and doubles it back (all-gather by recursive
doubling): 2 log p messages, 2(p-1)/p of the vector each way. Recursive doubling all-reduce
exchanges the whole vector every round instead.

Other p use the standard fix: with p' the largest power of two below p and r = p - p', ranks
2j and 2j+1 (j < r) first combine on the odd one, the p' remaining ranks ("virtual ranks") run
the power-of-two algorithm, and the odd ranks hand the result back. A virtual rank that stands
for two ranks owns both their blocks, so the blocks of a virtual rank stay contiguous.
"""

from __future__ import annotations

from collections.abc import Callable

from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import Algorithm


class Fold:
    """The non-power-of-two fix: which real rank plays virtual rank v and which blocks it
    owns."""

    def __init__(self, ranks: int):
        self.ranks = ranks
        self.virtual = 1 << (ranks.bit_length() - 1)
        self.extra = ranks - self.virtual
        self.real = [2 * j + 1 for j in range(self.extra)] + list(range(2 * self.extra, ranks))

    def first_block(self, v: int) -> int:
        """The first real block of virtual rank v (v = virtual count gives the end)."""
        return 2 * v if v < self.extra else v + self.extra

    def pairs(self) -> list[tuple[int, int]]:
        """(dropped even rank, its odd representative)."""
        return [(2 * j, 2 * j + 1) for j in range(self.extra)]


Span = Callable[[int, int], tuple[int, int]]


def _halving(b: Builder, f: Fold, span: Span, buf: str) -> None:
    """Reduce-scatter by recursive halving over virtual ranks, in `buf`. span(a, z) = (offset,
    count) of virtual blocks a..z-1."""
    for v, r in enumerate(f.real):
        lo, hi, d = 0, f.virtual, f.virtual // 2
        while d >= 1:
            q = f.real[v ^ d]
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if v & d else ((lo, mid), (mid, hi))
            tb = b.tb(r, q, q)
            off, cnt = span(*give)
            b.step(r, tb, "s", (buf, off), None, cnt)
            off, cnt = span(*keep)
            b.step(r, tb, "rrc", (buf, off), (buf, off), cnt)
            lo, hi = keep
            d //= 2


def _doubling(b: Builder, f: Fold, span: Span, buf: str) -> None:
    """All-gather by recursive doubling over virtual ranks, in `buf`."""
    for v, r in enumerate(f.real):
        d = 1
        while d < f.virtual:
            q = f.real[v ^ d]
            mine, theirs = (v // d) * d, ((v ^ d) // d) * d
            tb = b.tb(r, q, q)
            b.step(r, tb, "s", (buf, span(mine, mine + d)[0]), None, span(mine, mine + d)[1])
            b.step(
                r, tb, "r", None, (buf, span(theirs, theirs + d)[0]), span(theirs, theirs + d)[1]
            )
            d *= 2


def _span(f: Fold, c: int) -> Span:
    def span(a: int, z: int) -> tuple[int, int]:
        start = f.first_block(a) * c
        return start, f.first_block(z) * c - start

    return span


def _fold_in(b: Builder, f: Fold, src: str, dst: str, n: int, reduce: bool = True) -> None:
    """Dropped ranks hand their data to their representative."""
    for even, odd in f.pairs():
        b.step(even, b.tb(even, odd, odd), "s", (src, 0), None, n)
        if reduce:
            b.step(odd, b.tb(odd, even, even), "rrc", (src, 0), (dst, 0), n)


def _fold_out(b: Builder, f: Fold, buf: str, n: int) -> None:
    """Representatives hand the result back to their dropped ranks."""
    for even, odd in f.pairs():
        b.step(odd, b.tb(odd, even, even), "s", (buf, 0), None, n)
        b.step(even, b.tb(even, odd, odd), "r", None, (buf, 0), n)


def halving_doubling_allreduce(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    n = ranks * chunk_factor
    b = Builder("allreduce_halving_doubling", "allreduce", ranks, n, n, inplace=True, chain=True)
    f = Fold(ranks)
    _fold_in(b, f, "i", "i", n)
    _halving(b, f, _span(f, chunk_factor), "i")
    _doubling(b, f, _span(f, chunk_factor), "i")
    _fold_out(b, f, "i", n)
    return b.build()


def halving_reduce_scatter(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    """Recursive halving in scratch, then every rank copies its block out (a representative
    also sends its partner's block)."""
    c = chunk_factor
    n = ranks * c
    b = Builder("reduce_scatter_halving", "reduce_scatter", ranks, n, c, chain=True)
    f = Fold(ranks)
    if ranks == 1:
        b.step(0, b.tb(0), "cpy", ("i", 0), ("o", 0), c)
        return b.build()
    _fold_in(b, f, "i", "s", n)
    for r in range(2 * f.extra, ranks):
        b.step(r, b.tb(r), "cpy", ("i", 0), ("s", 0), n)
    _halving(b, f, _span(f, c), "s")
    for r in f.real:
        b.step(r, b.tb(r), "cpy", ("s", r * c), ("o", 0), c)
    for even, odd in f.pairs():
        b.step(odd, b.tb(odd, even, even), "s", ("s", even * c), None, c)
        b.step(even, b.tb(even, odd, odd), "r", None, ("o", 0), c)
    return b.build()


def doubling_allgather(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    c = chunk_factor
    b = Builder("allgather_recursive_doubling", "allgather", ranks, c, ranks * c, chain=True)
    f = Fold(ranks)
    for r in range(ranks):
        b.step(r, b.tb(r), "cpy", ("i", 0), ("o", r * c), c)
    for even, odd in f.pairs():
        b.step(even, b.tb(even, odd, odd), "s", ("i", 0), None, c)
        b.step(odd, b.tb(odd, even, even), "r", None, ("o", even * c), c)
    _doubling(b, f, _span(f, c), "o")
    _fold_out(b, f, "o", ranks * c)
    return b.build()


def doubling_allreduce(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    """Whole-vector recursive doubling: log p rounds, each exchanging and adding everything."""
    n = ranks * chunk_factor
    b = Builder("allreduce_recursive_doubling", "allreduce", ranks, n, n, inplace=True, chain=True)
    f = Fold(ranks)
    _fold_in(b, f, "i", "i", n)
    for v, r in enumerate(f.real):
        d = 1
        while d < f.virtual:
            q = f.real[v ^ d]
            tb = b.tb(r, q, q)
            b.step(r, tb, "s", ("i", 0), None, n)
            b.step(r, tb, "rrc", ("i", 0), ("i", 0), n)
            d *= 2
    _fold_out(b, f, "i", n)
    return b.build()
