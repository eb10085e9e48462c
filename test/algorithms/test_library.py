"""Every generator of the library, proven by the interpreter on many sizes: random data and exact
chunk tracking agree with the collective, also in random orders of the steps (no races), and the
verifier accepts every program."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccopt.algorithms import LIBRARY, MULTI_CHANNEL, ROOTED, generate, hierarchical
from ccopt.interpreters.algo import check

CASES = [(coll, name) for coll, table in LIBRARY.items() for name in table]


@pytest.mark.parametrize(("collective", "name"), CASES)
@settings(max_examples=12, deadline=None)
@given(ranks=st.integers(1, 12), chunk_factor=st.integers(1, 3), data=st.data())
def test_generator_computes_its_collective(
    collective: str, name: str, ranks: int, chunk_factor: int, data: st.DataObject
) -> None:
    channels = data.draw(st.integers(1, 3)) if name in MULTI_CHANNEL else 1
    root = data.draw(st.integers(0, ranks - 1)) if collective in ROOTED else 0
    alg = generate(collective, name, ranks, channels, chunk_factor, root)
    verdict = check(alg, seed=ranks, orders=2)
    assert verdict.exact and alg.collective == collective


@pytest.mark.parametrize(("ranks", "inner"), [(6, 2), (6, 3), (8, 4), (12, 3), (12, 4), (9, 3)])
def test_hierarchical_any_inner_group(ranks: int, inner: int) -> None:
    alg = hierarchical.allreduce(ranks, 1, 2, inner=inner)
    assert check(alg, orders=2).exact


@pytest.mark.parametrize("ranks", [16, 17, 32])
def test_larger_sizes(ranks: int) -> None:
    for collective, name in [
        ("allreduce", "ring"),
        ("allreduce", "halving_doubling"),
        ("allreduce", "double_binary_tree"),
        ("alltoall", "bruck"),
        ("allgather", "bruck"),
        ("reduce_scatter", "halving_doubling"),
    ]:
        assert check(generate(collective, name, ranks)).steps > 0


def test_generate_refuses_what_it_cannot_do() -> None:
    with pytest.raises(ValueError, match="no bruck algorithm for allreduce"):
        generate("allreduce", "bruck", 4)
    with pytest.raises(ValueError, match="takes no channels"):
        generate("allreduce", "direct", 4, channels=2)
    with pytest.raises(ValueError, match="root 5"):
        generate("broadcast", "tree", 4, root=5)


def test_tree_is_the_double_binary_tree_for_allreduce() -> None:
    assert generate("allreduce", "tree", 5).name == "allreduce_double_binary_tree"
