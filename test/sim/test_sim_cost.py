"""ccopt mode's collective costs against the closed forms of collectives.md, and the roofline."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccopt.sim import cost
from ccopt.sim.cost import Link

A, B, G = 1000.0, 0.01, 0.002  # α ns, β ns/byte, γ ns/byte
N = 1 << 20


def ring(p: int, topology: str = "Switch", algorithm: str = "ring") -> Link:
    return Link(p, A, B, topology, algorithm)


@pytest.mark.parametrize("p", [2, 3, 4, 8, 16])
def test_ring_closed_forms(p: int) -> None:
    f = (p - 1) / p
    link = ring(p)
    assert cost.collective_ns("all_reduce", N, [link], G) == pytest.approx(
        2 * (p - 1) * A + 2 * f * N * B + f * N * G
    )
    assert cost.collective_ns("reduce_scatter", N, [link], G) == pytest.approx(
        (p - 1) * A + f * N * B + f * N * G
    )
    assert cost.collective_ns("all_gather", N, [link], G) == pytest.approx((p - 1) * A + f * N * B)
    assert cost.collective_ns("all_to_all", N, [link], G) == pytest.approx(
        (p - 1) * (A + N / p * B)
    )


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_halving_doubling_closed_forms(p: int) -> None:
    f, k = (p - 1) / p, math.log2(p)
    link = ring(p, algorithm="halving_doubling")
    assert cost.collective_ns("all_reduce", N, [link], G) == pytest.approx(
        2 * k * A + 2 * f * N * B + f * N * G
    )
    assert cost.collective_ns("reduce_scatter", N, [link], G) == pytest.approx(
        k * A + f * N * B + f * N * G
    )
    assert cost.collective_ns("all_gather", N, [link], G) == pytest.approx(k * A + f * N * B)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_direct_fully_connected_closed_forms(p: int) -> None:
    f = (p - 1) / p
    link = ring(p, "FullyConnected", "direct")
    assert cost.collective_ns("all_reduce", N, [link], G) == pytest.approx(
        2 * (A + N / p * B) + f * N * G
    )
    assert cost.collective_ns("all_to_all", N, [link], G) == pytest.approx(A + N / p * B)


def test_direct_through_a_switch_serializes_the_peers() -> None:
    """One port to the switch: sending to p - 1 peers at once takes (p - 1) times as long."""
    p = 8
    link = ring(p, "Switch", "direct")
    assert cost.collective_ns("all_gather", N, [link], G) == pytest.approx(A + (p - 1) * N / p * B)


def test_tree_closed_form_with_its_best_chunk_count() -> None:
    p = 16
    link = ring(p, algorithm="tree")
    depth = 4
    k = round(math.sqrt((depth - 1) * N * B / A))
    expected = 2 * (depth + k - 1) * (A + N / k * B) + (p - 1) / p * N * G
    assert cost.collective_ns("all_reduce", N, [link], G) == pytest.approx(expected)


def test_broadcast_is_the_faster_of_a_pipelined_tree_and_scatter_gather() -> None:
    p, depth = 8, 3
    k = round(math.sqrt((depth - 1) * N * B / A))
    tree = (depth + k - 1) * (A + N / k * B)
    scatter_gather = (3 + p - 1) * A + 2 * (p - 1) / p * N * B
    assert cost.collective_ns("broadcast", N, [ring(p)], G) == pytest.approx(
        min(tree, scatter_gather)
    )
    assert cost.collective_ns("reduce", N, [ring(p)], G) == pytest.approx(
        min(tree, scatter_gather) + (p - 1) / p * N * G
    )


_LINKS = st.builds(
    Link,
    st.integers(2, 16),
    st.floats(0.0, 1e4),
    st.floats(1e-5, 1.0),
    st.sampled_from(["Switch", "Ring", "FullyConnected"]),
    st.sampled_from(
        ["ring", "direct", "halving_doubling", "tree", "recursive_doubling", "pairwise", "bruck"]
    ),
)


@given(st.lists(_LINKS, min_size=1, max_size=3), st.floats(1.0, 1e9))
@settings(max_examples=300, deadline=None)
def test_broadcast_and_reduce_are_never_slower_than_an_all_reduce(
    dims: list[Link], n: float
) -> None:
    """A broadcast or reduce moves what one all-reduce phase moves: over any dimensions and
    algorithms it never takes longer than an all-reduce of the same bytes (the scatter and
    gather inside a node let every NIC carry its share across the outer dimensions)."""
    all_reduce = cost.collective_ns("all_reduce", n, dims, G)
    assert cost.collective_ns("broadcast", n, dims, G) <= all_reduce * (1 + 1e-9)
    assert cost.collective_ns("reduce", n, dims, G) <= all_reduce * (1 + 1e-9)


def test_a_shift_pays_the_slowest_link_it_crosses() -> None:
    """Ranks at a node's edge send to the next node: a shift over a group spanning nodes takes
    the outer link's time, whichever dimension is slower."""
    fast, slow = Link(8, 500.0, 0.004), Link(2, 3000.0, 0.04)
    assert cost.collective_ns("shift", N, [fast], G) == pytest.approx(500.0 + N * 0.004)
    assert cost.collective_ns("shift", N, [fast, slow], G) == pytest.approx(3000.0 + N * 0.04)


def test_hierarchical_all_reduce_matches_the_two_level_formula() -> None:
    """collectives.md: RS over level 1 on n, AR over level 2 on n/p1, AG over level 1 on n
    (without γ, as the reference formula has none)."""
    p1, p2 = 8, 4
    a1, b1, a2, b2 = 500.0, 0.004, 3000.0, 0.04
    inner, outer = Link(p1, a1, b1), Link(p2, a2, b2)
    expected = (
        2 * (p1 - 1) * a1
        + 2 * (p1 - 1) / p1 * N * b1
        + 2 * (p2 - 1) * a2
        + 2 * (p2 - 1) / p2 * (N / p1) * b2
    )
    assert cost.collective_ns("all_reduce", N, [inner, outer], 0.0) == pytest.approx(expected)


def test_fused_all_reduce_is_reduce_scatter_body_all_gather() -> None:
    link = ring(4)
    plain = cost.collective_ns("all_reduce", N, [link], G)
    assert cost.collective_ns("fused_all_reduce", N, [link], G, body_ns=123.0) == pytest.approx(
        plain + 123.0
    )


def test_no_group_costs_nothing() -> None:
    assert cost.collective_ns("all_reduce", N, [], G) == 0.0


def test_roofline_takes_the_slower_bound() -> None:
    assert cost.roofline_ns(1e6, 1e3, 1e3, 1.0) == 1e3  # compute bound
    assert cost.roofline_ns(1e3, 1e6, 1e3, 1.0) == 1e6  # memory bound


def test_contention_slows_only_while_the_collective_runs() -> None:
    assert cost.contended_ns(100.0, 0.0, 0.0, 0.2) == 100.0
    assert cost.contended_ns(100.0, 0.0, 1000.0, 0.2) == pytest.approx(125.0)
    # 50 ns at 80% speed do 40 ns of work; the remaining 60 ns run at full speed
    assert cost.contended_ns(100.0, 0.0, 50.0, 0.2) == pytest.approx(110.0)


def test_nic_sharing_and_concurrent_collectives_divide_bandwidth() -> None:
    from ccopt.sim.machine import load_machine

    frontier = load_machine("frontier")
    alone = cost.links(frontier, (1, 4))[0]
    shared = cost.links(frontier, (1, 4), sharing=2)[0]
    bw = frontier.network.dims[1].bytes_per_ns()
    assert alone.beta == pytest.approx(2 / bw)  # two GCDs per NIC
    assert shared.beta == pytest.approx(4 / bw)


@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_log_step_and_pairwise_closed_forms(p: int) -> None:
    """The hints an op may carry beyond ring, tree, direct and halving-doubling: recursive
    doubling (all-reduce, all-gather), Bruck (all-gather, all-to-all) and pairwise."""
    f, k = (p - 1) / p, math.log2(p)
    rd, bruck, pairwise = (
        ring(p, algorithm=a) for a in ("recursive_doubling", "bruck", "pairwise")
    )
    assert cost.collective_ns("all_reduce", N, [rd], G) == pytest.approx(k * (A + N * B + N * G))
    for link in (rd, bruck):
        assert cost.collective_ns("all_gather", N, [link], G) == pytest.approx(k * A + f * N * B)
    assert cost.collective_ns("all_to_all", N, [bruck], G) == pytest.approx(k * (A + N / 2 * B))
    assert cost.collective_ns("all_to_all", N, [pairwise], G) == pytest.approx(
        (p - 1) * (A + N / p * B)
    )
