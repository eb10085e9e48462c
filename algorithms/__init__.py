"""The library of collective algorithms: generators of `algo` programs, parameterized by ranks,
channels (rings) and chunk factor (pipelining), each proven by the interpreter
(`ccopt.interpreters.algo.check`) on many sizes in the tests.

    from ccopt.algorithms import generate
    alg = generate("allreduce", "ring", ranks=8, channels=2, chunk_factor=4)
"""

from __future__ import annotations

from collections.abc import Callable

from ccopt.algorithms import direct, exchange, hierarchical, recursive, ring, tree
from ccopt.dialects.algo import Algorithm

Generator = Callable[..., Algorithm]

LIBRARY: dict[str, dict[str, Generator]] = {
    "allreduce": {
        "ring": ring.allreduce,
        "direct": direct.allreduce,
        "halving_doubling": recursive.halving_doubling_allreduce,
        "recursive_doubling": recursive.doubling_allreduce,
        "double_binary_tree": tree.double_binary_tree_allreduce,
        "hierarchical": hierarchical.allreduce,
    },
    "reduce_scatter": {
        "ring": ring.reduce_scatter,
        "direct": direct.reduce_scatter,
        "halving_doubling": recursive.halving_reduce_scatter,
        "hierarchical": hierarchical.reduce_scatter,
    },
    "allgather": {
        "ring": ring.allgather,
        "direct": direct.allgather,
        "halving_doubling": recursive.doubling_allgather,
        "recursive_doubling": recursive.doubling_allgather,
        "pairwise": exchange.pairwise_allgather,
        "bruck": exchange.bruck_allgather,
        "hierarchical": hierarchical.allgather,
    },
    "alltoall": {
        "direct": direct.alltoall,
        "pairwise": exchange.pairwise_alltoall,
        "bruck": exchange.bruck_alltoall,
    },
    "broadcast": {"ring": ring.broadcast, "direct": direct.broadcast, "tree": tree.tree_broadcast},
    "reduce": {"ring": ring.reduce, "direct": direct.reduce, "tree": tree.tree_reduce},
}
"""Generators by collective (MSCCL's spelling) and algorithm name."""

ALIASES = {"tree": "double_binary_tree"}
"""coll's algorithm names where the library's differ (all-reduce's tree is the double tree)."""

MULTI_CHANNEL = {"ring"}
"""Algorithms that spread over several channels (the others use what their structure needs)."""

ROOTED = ("broadcast", "reduce")


def names(collective: str) -> list[str]:
    return sorted(LIBRARY.get(collective, {}))


def generate(
    collective: str,
    algorithm: str,
    ranks: int,
    channels: int = 1,
    chunk_factor: int = 1,
    root: int = 0,
    **options: int,
) -> Algorithm:
    """The named algorithm for `collective` on `ranks` ranks; ValueError says what is wrong."""
    table = LIBRARY.get(collective)
    if table is None:
        raise ValueError(f"unknown collective '{collective}' (one of {', '.join(LIBRARY)})")
    name = algorithm if algorithm in table else ALIASES.get(algorithm, algorithm)
    if name not in table:
        raise ValueError(
            f"no {algorithm} algorithm for {collective} (available: {', '.join(names(collective))})"
        )
    if ranks < 1 or channels < 1 or chunk_factor < 1:
        raise ValueError("ranks, channels and chunk factor must be >= 1")
    if channels > 1 and name not in MULTI_CHANNEL:
        raise ValueError(f"{name} takes no channels option (only {', '.join(MULTI_CHANNEL)} does)")
    if collective in ROOTED:
        if not 0 <= root < ranks:
            raise ValueError(f"root {root} is not one of {ranks} ranks")
        options["root"] = root
    return table[name](ranks, channels, chunk_factor, **options)
