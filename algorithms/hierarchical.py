"""Hierarchical 2-D all-reduce on p = inner x outer ranks (rank = a + inner * b): a ring
reduce-scatter among the `inner` ranks of each group, a ring all-reduce of each rank's reduced
block among the `outer` ranks that hold the same block, and a ring all-gather back in the group.
The fast inner links carry full-size traffic, the slow outer ones 1/inner of it."""

from __future__ import annotations

import math

from ccopt.algorithms import ring
from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import Algorithm


def default_inner(ranks: int) -> int:
    """The largest divisor of `ranks` not above its square root."""
    return max(d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0)


def allreduce(
    ranks: int, channels: int = 1, chunk_factor: int = 1, inner: int | None = None
) -> Algorithm:
    inner = inner or default_inner(ranks)
    if ranks % inner:
        raise ValueError(f"inner group size {inner} does not divide {ranks} ranks")
    outer = ranks // inner
    n = ranks * chunk_factor
    part = n // inner  # the block each rank reduces within its group
    b = Builder("allreduce_hierarchical", "allreduce", ranks, n, n, inplace=True, chain=True)
    groups = [[a + inner * g for a in range(inner)] for g in range(outer)]
    columns = [[a + inner * g for g in range(outer)] for a in range(inner)]
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
