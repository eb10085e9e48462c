"""ccopt's model of AxoNN's 4D layout: NIC sharing, latency, overlap, memory, and the planner
that sets it beside AxoNN's."""

from __future__ import annotations

import pytest

from ccopt.sim.axonn import GPT_MODELS, Grid, rank_axonn
from ccopt.sim.grid4d import (
    ccopt_estimate,
    group_span,
    machine_for,
    memory_per_gpu,
    ring_time,
    usable_memory,
)
from ccopt.sim.plan4d import plan

PERLMUTTER = machine_for("perlmutter", 1024)  # 4 A100 per node, 256 nodes
FRONTIER = machine_for("frontier", 1024)  # 8 GCDs per node, 128 nodes


@pytest.mark.parametrize(
    "stride,size,span",
    [
        (1, 2, (2, 1)),  # inside a node
        (1, 4, (4, 1)),
        (1, 8, (4, 2)),  # leaves the node: hierarchical, 4 per node
        (2, 4, (2, 2)),  # two groups per node share its NICs
        (4, 2, (1, 2)),  # one member per node
        (64, 16, (1, 16)),
        (1, 1024, (4, 256)),
    ],
)
def test_groups_sit_on_the_network_by_their_stride(stride, size, span):
    assert group_span(stride, size, PERLMUTTER) == span


def test_frontier_nodes_hold_eight():
    assert group_span(1, 8, FRONTIER) == (8, 1)
    assert group_span(8, 4, FRONTIER) == (1, 4)
    assert group_span(2, 8, FRONTIER) == (4, 2)


def test_ring_time_by_hand():
    """All-reduce of 1e9 bytes over the 4 A100 of a node: a ring reduce-scatter and all-gather,
    3 steps each of 700 ns, 3/4 of the bytes each way at 100 GB/s, and the reduction's 3/4 of
    the bytes read twice and written once through 1.555 TB/s of HBM."""
    n = 1e9
    assert ring_time("all_reduce", n, 1, 1, PERLMUTTER) == 0
    rs = 3 * 700 + 0.75 * n / 100 + 0.75 * n * 3 / 1555
    ag = 3 * 700 + 0.75 * n / 100
    # (the preset quotes 93.13 GiB/s, 100 GB/s to 4 digits)
    assert ring_time("all_reduce", n, 1, 4, PERLMUTTER) == pytest.approx((rs + ag) * 1e-9, rel=1e-4)
    # one member per node: 1 step over the switch (2 hops of 3 us), 25 GB/s per GPU
    assert ring_time("all_gather", n, 4, 2, PERLMUTTER) == pytest.approx(
        (2 * 3000 + 0.5 * n / 25) * 1e-9, rel=1e-3
    )


def test_overlap_only_hides_communication():
    model = GPT_MODELS["20B"]
    for grid in (Grid(2, 2, 4, 2), Grid(4, 1, 16, 1), Grid(1, 1, 64, 1)):
        with_overlap = ccopt_estimate(model, grid, 64, 2048, PERLMUTTER)
        without = ccopt_estimate(model, grid, 64, 2048, PERLMUTTER, overlap=False)
        assert with_overlap.terms["compute"] == without.terms["compute"]
        assert with_overlap.seconds <= without.seconds
        assert with_overlap.seconds >= with_overlap.terms["compute"]
        assert with_overlap.seconds - with_overlap.terms["hidden_by_overlap"] == pytest.approx(
            without.seconds
        )


def test_compute_does_not_reorder_grids_of_one_gpu_count():
    """Every grid gives a GPU the same share of FLOPs, and the preset's matmul efficiency depends
    on a GEMM's volume m*n*k (its geometric mean), which the split leaves unchanged: compute is
    the same for every grid, so only communication ranks them (as in AxoNN, but priced fully)."""
    model = GPT_MODELS["10B"]
    computes = [
        ccopt_estimate(model, Grid(*g), 64, 2048, PERLMUTTER).terms["compute"]
        for g in ([1, 1, 8, 8], [8, 8, 1, 1], [2, 2, 2, 8])
    ]
    assert computes == pytest.approx([computes[0]] * 3)


def test_memory_rules_out_what_axonns_minimum_allows():
    """80B with Gr*Gc*Gd = 64 satisfies AxoNN's rule, but 64 samples per depth x data rank of
    2048 tokens do not fit a 40 GB A100 next to the sharded optimizer state."""
    model = GPT_MODELS["80B"]
    heavy = Grid(8, 8, 1, 16)
    assert heavy.tensor_parallel >= model.min_tensor_parallel
    estimate = ccopt_estimate(model, heavy, 1024, 2048, PERLMUTTER)
    assert not estimate.feasible
    assert estimate.memory_bytes == memory_per_gpu(model, heavy, 1024, 2048)
    assert estimate.memory_bytes > usable_memory(PERLMUTTER)
    assert ccopt_estimate(model, Grid(1, 1, 1024, 1), 1024, 2048, PERLMUTTER).feasible


def test_plan_ranks_feasible_grids_first_and_explains_disagreement():
    model = GPT_MODELS["80B"]
    result = plan(model, 1024, 1024, 2048, "perlmutter")
    axonn_order = [e.grid for e in rank_axonn(model, 1024, 1024, 2048, "perlmutter")]
    assert sorted(result.rows, key=lambda r: r.axonn_rank)[0].grid == axonn_order[0]
    assert [r.ccopt_rank for r in result.rows] == list(range(1, len(result.rows) + 1))
    feasible = [r.ccopt.feasible for r in result.rows]
    assert feasible == sorted(feasible, reverse=True)
    for r in result.rows[:10]:
        assert (r.why == "") == (r.ccopt_rank == r.axonn_rank and r.ccopt.feasible)
    axonn_pick = next(r for r in result.rows if r.axonn_rank == 1)
    assert axonn_pick.why  # the models disagree here, and the table says why
    only = plan(model, 1024, 1024, 2048, "perlmutter", model_only="axonn")
    assert [r.grid for r in only.rows] == axonn_order
    assert all(r.ccopt is None for r in only.rows)
