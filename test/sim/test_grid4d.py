"""ccopt's model of AxoNN's 4D layout: NIC sharing, latency, overlap, memory, and the planner
that sets it beside AxoNN's."""

from __future__ import annotations

import pytest

from ccopt.sim.axonn import GPT_MODELS, Grid, rank_axonn
from ccopt.sim.grid4d import (
    MACHINE_FIGURES,
    ccopt_estimate,
    group_bandwidth,
    memory_per_gpu,
    ring_time,
)
from ccopt.sim.plan4d import plan

PERLMUTTER = MACHINE_FIGURES["perlmutter"]
FRONTIER = MACHINE_FIGURES["frontier"]


@pytest.mark.parametrize(
    "stride,size,gbps",
    [
        (1, 2, 100),  # one NVLink-3 pair
        (1, 4, 300),  # a ring per link over the whole node
        (1, 8, 100),  # leaves the node: one group per node owns its 4 NICs
        (2, 4, 50),  # two groups per node share the NICs
        (4, 2, 25),  # every GPU of the node in its own group
        (64, 16, 25),
    ],
)
def test_perlmutter_bandwidth_shares_nics(stride, size, gbps):
    assert group_bandwidth(stride, size, PERLMUTTER) == pytest.approx(gbps * 1e9)


def test_frontier_package_pairs_are_faster():
    assert group_bandwidth(1, 2, FRONTIER) == pytest.approx(200e9)
    assert group_bandwidth(2, 2, FRONTIER) == pytest.approx(50e9)
    assert group_bandwidth(8, 4, FRONTIER) == pytest.approx(100e9 / 8)


def test_ring_time_counts_steps_and_bytes():
    n = 1 << 30
    assert ring_time("all_reduce", n, 1, 1, PERLMUTTER) == 0
    assert ring_time("all_reduce", n, 1, 4, PERLMUTTER) == pytest.approx(6 * 5e-6 + 6 * n / 4 / 300e9)
    assert ring_time("all_gather", n, 4, 8, PERLMUTTER) == pytest.approx(7 * 10e-6 + 7 * n / 8 / 25e9)


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


def test_compute_is_the_same_for_every_grid_of_a_gpu_count():
    model = GPT_MODELS["10B"]
    computes = {
        round(ccopt_estimate(model, Grid(*g), 64, 2048, PERLMUTTER).terms["compute"], 12)
        for g in ([8, 1, 1, 8], [1, 8, 8, 1], [2, 2, 2, 8])
    }
    assert len(computes) == 1


def test_memory_rules_out_what_axonns_minimum_allows():
    """80B with Gr*Gc*Gd = 64 satisfies AxoNN's rule, but 64 samples per depth x data rank of
    2048 tokens do not fit a 40 GB A100 next to the sharded optimizer state."""
    model = GPT_MODELS["80B"]
    heavy = Grid(8, 8, 1, 16)
    assert heavy.tensor_parallel >= model.min_tensor_parallel
    estimate = ccopt_estimate(model, heavy, 1024, 2048, PERLMUTTER)
    assert not estimate.feasible
    assert estimate.memory_bytes == memory_per_gpu(model, heavy, 1024, 2048) > 36e9
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
