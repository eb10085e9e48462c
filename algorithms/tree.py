"""Tree algorithms, pipelined chunk by chunk.

Double binary tree all-reduce (NCCL's): two binary trees over the ranks, the second the mirror
image of the first, so a rank that is a leaf in one is an inner node in the other; each tree
reduces half of the chunks up to its root and broadcasts them back down, on its own channel.
A node has one thread block per tree neighbour; a chunk leaves for the parent once both children's
contributions are in, and goes down to a child once it came back from the parent.
Broadcast and reduce use one binary tree rooted at the root.
"""

from __future__ import annotations

from collections.abc import Sequence

from ccopt.algorithms.builder import Builder, Ref
from ccopt.dialects.algo import Algorithm


def _tree(order: Sequence[int]) -> tuple[dict[int, int], dict[int, list[int]]]:
    """A binary heap over `order` (order[0] the root): parent and children of every rank."""
    parent = {order[k]: order[(k - 1) // 2] for k in range(1, len(order))}
    children = {
        r: [order[c] for c in (2 * k + 1, 2 * k + 2) if c < len(order)] for k, r in enumerate(order)
    }
    return parent, children


def _reduce_up(
    b: Builder,
    order: Sequence[int],
    chan: int,
    chunks: Sequence[int],
    buf: str,
    src: str,
    final: str | None,
) -> dict[tuple[int, int], Ref]:
    """Reduce `chunks` up the tree; returns, per (rank, chunk), the step after which the rank's
    subtree sum is in `buf` (at the root: the total, copied into `final` if given)."""
    parent, children = _tree(order)
    done: dict[tuple[int, int], Ref] = {}
    for r in order:
        kids = children[r]
        for t in chunks:
            last: Ref | None = None
            for k, child in enumerate(kids):
                tb = b.tb(r, child, child, chan)
                last = b.step(r, tb, "rrc", (src if k == 0 else buf, t), (buf, t), after=last)
            holder = buf if kids else src
            if r in parent:
                p = parent[r]
                b.step(r, b.tb(r, p, p, chan), "s", (holder, t), None, after=last)
            elif final is not None and final != holder:
                last = b.step(r, b.tb(r, chan=chan), "cpy", (holder, t), (final, t), after=last)
            if last is not None:
                done[r, t] = last
    return done


def _broadcast_down(
    b: Builder,
    order: Sequence[int],
    chan: int,
    chunks: Sequence[int],
    buf: str,
    ready: dict[tuple[int, int], Ref],
    root_src: str,
) -> None:
    """Send `chunks` down the tree: the root's from `root_src` once `ready`, the others' as they
    arrive from the parent (stored in `buf`)."""
    parent, children = _tree(order)
    for r in order:
        for t in chunks:
            after = ready.get((r, t))
            src = root_src if r not in parent else buf
            if r in parent:
                p = parent[r]
                after = b.step(r, b.tb(r, p, p, chan), "r", None, (buf, t))
            for child in children[r]:
                b.step(r, b.tb(r, child, child, chan), "s", (src, t), None, after=after)


def double_binary_tree_allreduce(ranks: int, channels: int = 1, chunk_factor: int = 1) -> Algorithm:
    n = ranks * chunk_factor
    b = Builder("allreduce_double_binary_tree", "allreduce", ranks, n, n, inplace=True)
    if ranks > 1:
        orders = [list(range(ranks)), list(range(ranks))[::-1]]
        halves = [range(0, n // 2), range(n // 2, n)]
        for chan, (order, chunks) in enumerate(zip(orders, halves, strict=True)):
            done = _reduce_up(b, order, chan, chunks, "i", "i", None)
            root = order[0]
            _broadcast_down(
                b,
                order,
                chan,
                chunks,
                "i",
                {(root, t): done[root, t] for t in chunks if (root, t) in done},
                "i",
            )
    return b.build()


def _rooted(ranks: int, root: int) -> list[int]:
    return [(root + k) % ranks for k in range(ranks)]


def tree_broadcast(
    ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0
) -> Algorithm:
    c = chunk_factor
    b = Builder("broadcast_tree", "broadcast", ranks, c, c, root=root)
    b.step(root, b.tb(root), "cpy", ("i", 0), ("o", 0), c)
    _broadcast_down(b, _rooted(ranks, root), 0, range(c), "o", {}, "i")
    return b.build()


def tree_reduce(ranks: int, channels: int = 1, chunk_factor: int = 1, root: int = 0) -> Algorithm:
    c = chunk_factor
    b = Builder("reduce_tree", "reduce", ranks, c, c, root=root)
    _reduce_up(b, _rooted(ranks, root), 0, range(c), "s", "i", "o")
    return b.build()
