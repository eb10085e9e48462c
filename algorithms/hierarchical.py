"""Hierarchical 2-D algorithms on p = inner x outer ranks (rank = a + inner * b): groups of
`inner` consecutive ranks (a node's GPUs) and columns of the `outer` ranks that share a position
in their group (one NIC's peers across nodes).

- All-reduce: a ring reduce-scatter in each group, a ring all-reduce of each rank's reduced block
  in its column, and a ring all-gather back in the group. The fast inner links carry full-size
  traffic, the slow outer ones 1/inner of it.
- All-gather: a ring all-gather of each rank's own chunks in its column first, then of the
  column's blocks in each group; reduce-scatter is its mirror (each group first, into scratch,
  then each column). The slow outer links carry 1/inner of a flat ring's bytes, in outer - 1
  steps instead of p - 1, as NCCL's and ASTRA-sim's hierarchical schedule of a group over two
  network dimensions (the slow dimension sees the smallest data: last in a reduce-scatter,
  first in an all-gather).
"""

from __future__ import annotations

import math

from ccopt.algorithms import ring
from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import Algorithm


def default_inner(ranks: int) -> int:
    """The largest divisor of `ranks` not above its square root."""
    return max(d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0)


def _shape(ranks: int, inner: int | None) -> tuple[int, int, list[list[int]], list[list[int]]]:
    """inner, outer, the groups (consecutive ranks) and the columns (stride `inner`)."""
    inner = inner or default_inner(ranks)
    if inner < 1 or ranks % inner:
        raise ValueError(f"inner group size {inner} does not divide {ranks} ranks")
    outer = ranks // inner
    groups = [[a + inner * g for a in range(inner)] for g in range(outer)]
    columns = [[a + inner * g for g in range(outer)] for a in range(inner)]
    return inner, outer, groups, columns


def allreduce(
    ranks: int, channels: int = 1, chunk_factor: int = 1, inner: int | None = None
) -> Algorithm:
    inner, outer, groups, columns = _shape(ranks, inner)
    n = ranks * chunk_factor
    part = n // inner  # the block each rank reduces within its group
    b = Builder("allreduce_hierarchical", "allreduce", ranks, n, n, inplace=True, chain=True)
    for group in groups:
        ring.reduce_scatter_on(
            b, group, 0, lambda k: ("i", k * part), lambda k: ("i", k * part), part
        )
    for a, column in enumerate(columns):
        ring.allreduce_on(
            b, column, 0, lambda k, a=a: ("i", a * part + k * chunk_factor), chunk_factor
        )
    for group in groups:
        ring.all_gather_on(b, group, 0, lambda k: ("i", k * part), lambda k: ("i", k * part), part)
    return b.build()


def allgather(
    ranks: int, channels: int = 1, chunk_factor: int = 1, inner: int | None = None
) -> Algorithm:
    """Rank r's c input chunks end at output chunks r*c..: first gathered in r's column (the
    slow links carry each rank's own c chunks once per other node), then in r's group, one
    ring per column member's block (they lie `inner` blocks apart)."""
    inner, outer, groups, columns = _shape(ranks, inner)
    c = chunk_factor
    b = Builder("allgather_hierarchical", "allgather", ranks, c, ranks * c, chain=True)
    for a, column in enumerate(columns):
        ring.all_gather_on(
            b, column, 0, lambda k: ("i", 0), lambda k, a=a: ("o", (a + inner * k) * c), c
        )
    for group in groups:
        for g in range(outer):

            def block(k: int, g: int = g) -> tuple[str, int]:
                return ("o", (k + inner * g) * c)

            ring.all_gather_on(b, group, 0, block, block, c)
    return b.build()


def reduce_scatter(
    ranks: int, channels: int = 1, chunk_factor: int = 1, inner: int | None = None
) -> Algorithm:
    """Rank r ends with chunks r*c.. reduced, the all-gather's mirror: each group first
    reduce-scatters, one ring per node's share, the chunks of every rank of the column of each
    member into its scratch (the fast links carry the full buffer); then each column
    reduce-scatters those (the slow links carry 1/inner of it)."""
    inner, outer, groups, columns = _shape(ranks, inner)
    c = chunk_factor
    b = Builder("reduce_scatter_hierarchical", "reduce_scatter", ranks, ranks * c, c, chain=True)
    for group in groups:
        for g in range(outer):
            ring.reduce_scatter_on(
                b,
                group,
                0,
                lambda k, g=g: ("i", (k + inner * g) * c),
                lambda k, g=g: ("s", g * c),
                c,
            )
    for column in columns:
        ring.reduce_scatter_on(b, column, 0, lambda k: ("s", k * c), lambda k: ("o", 0), c)
    return b.build()
