"""Hierarchical 2-D algorithms on p = inner x outer ranks (rank = a + inner * b): groups of
`inner` consecutive ranks (a node's GPUs) and columns of the `outer` ranks that share a position
in their group (one NIC's peers across nodes).

- All-reduce: a ring reduce-scatter in each group, a ring all-reduce of each rank's reduced block
  in its column, and a ring all-gather back in the group. The fast inner links carry full-size
  traffic, the slow outer ones 1/inner of it.
- All-gather: a ring all-gather in each group, then one of the groups' gathered blocks in each
  column; reduce-scatter is its mirror (columns first, on blocks of `inner` chunks, into scratch,
  then each group). The outer links carry the same bytes as a flat ring, in outer - 1 steps
  instead of p - 1: fewer slow-link latencies, as NCCL's and ASTRA-sim's hierarchical schedule of
  a group over two network dimensions.
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
    """Rank r's c input chunks end at output chunks r*c..: first gathered in r's group (whose
    output blocks are then contiguous, inner*c chunks at inner*g*c), then across the column."""
    inner, _, groups, columns = _shape(ranks, inner)
    c = chunk_factor
    b = Builder("allgather_hierarchical", "allgather", ranks, c, ranks * c, chain=True)
    for g, group in enumerate(groups):
        ring.all_gather_on(
            b, group, 0, lambda k: ("i", 0), lambda k, g=g: ("o", (k + inner * g) * c), c
        )
    block = inner * c
    for column in columns:
        ring.all_gather_on(
            b, column, 0, lambda k: ("o", k * block), lambda k: ("o", k * block), block
        )
    return b.build()


def reduce_scatter(
    ranks: int, channels: int = 1, chunk_factor: int = 1, inner: int | None = None
) -> Algorithm:
    """Rank r ends with chunks r*c.. reduced: each column reduce-scatters the groups' blocks
    (inner*c chunks) into scratch, then each group reduce-scatters its block."""
    inner, _, groups, columns = _shape(ranks, inner)
    c = chunk_factor
    block = inner * c
    b = Builder("reduce_scatter_hierarchical", "reduce_scatter", ranks, ranks * c, c, chain=True)
    for column in columns:
        ring.reduce_scatter_on(b, column, 0, lambda k: ("i", k * block), lambda k: ("s", 0), block)
    for group in groups:
        ring.reduce_scatter_on(b, group, 0, lambda k: ("s", k * c), lambda k: ("o", 0), c)
    return b.build()
