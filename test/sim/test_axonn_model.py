"""AxoNN's 4D model reproduced exactly: values computed by hand from the formula of
`autoparallel.md` (its `comm_model.py`), its enumeration and its quirks; Megatron TP, FSDP and
pure data parallelism as special cases."""

from __future__ import annotations

import pytest

from ccopt.sim.axonn import (
    GPT_MODELS,
    TRANSFORMER_LINEARS,
    Grid,
    axonn_estimate,
    count_grids,
    data_parallel_grid,
    enumerate_grids,
    frontier_bandwidth,
    fsdp_grid,
    linear_volumes,
    megatron_grid,
    perlmutter_bandwidth,
    rank_axonn,
)

M5B = GPT_MODELS["5B"]  # 24 layers, H = 4096


@pytest.mark.parametrize(
    "stride,size,gbps",
    [
        (1, 2, 76),
        (1, 4, 225),
        (1, 8, 80),
        (1, 1024, 80),
        (2, 2, 76),
        (2, 4, 40),
        (2, 64, 40),
        (4, 2, 20),
        (16, 8, 20),
    ],
)
def test_perlmutter_table(stride, size, gbps):
    assert perlmutter_bandwidth(stride, size) == gbps


@pytest.mark.parametrize(
    "stride,size,gbps",
    [
        (1, 2, 129),
        (1, 4, 52),
        (1, 8, 135),
        (1, 16, 40),
        (2, 2, 50),
        (2, 4, 72),
        (2, 8, 20),
        (4, 2, 36),
        (4, 4, 10),
        (8, 2, 5),
        (64, 16, 5),
    ],
)
def test_frontier_table(stride, size, gbps):
    assert frontier_bandwidth(stride, size) == gbps


def test_row_and_column_terms_by_hand():
    """5B, B = 8, S = 2048, Gr = Gc = 2 on Perlmutter. B/Gdata/Gd*S = 2^14 rows, H/2 = 2^11:
    plain layer: col = 2*2*(1/2)*2^14*K*2^11*2 B = K/8 GiB, row = 2*(1/2)*2^14*2^11*2 B = 1/16 GiB;
    transposed: row = K/8 GiB, col = 1/16 GiB (K on the row group: AxoNN's quirk). Over
    K = 3, 1, 4, 4: 7/8 + 1/8 + 5/8 + 1/8 = 1.75 GiB, all at 76 GB/s (stride 1 and 2, size 2)."""
    grid = Grid(2, 2, 1, 1)
    qkv, out = TRANSFORMER_LINEARS[0], TRANSFORMER_LINEARS[1]
    assert linear_volumes(8, 2048, 4096, qkv, grid) == pytest.approx(
        {"col": 3 / 8, "row": 1 / 16, "depth": 0, "data": 0}, abs=0
    )
    assert linear_volumes(8, 2048, 4096, out, grid) == {
        "col": 1 / 16,
        "row": 1 / 8,
        "depth": 0.0,
        "data": 0.0,
    }
    e = axonn_estimate(M5B, grid, 8, 2048, "perlmutter")
    assert e is not None
    assert e.layer_seconds == pytest.approx(1.75 / 76, rel=1e-15)
    assert e.seconds == pytest.approx(24 * 1.75 / 76, rel=1e-15)
    assert e.by_group["col"] == pytest.approx((1 / 16 + 1 / 16 + 3 / 8 + 4 / 8) / 76)


def test_depth_and_data_terms_by_hand():
    """Gd = Gdata = 2: depth = 3/2*2*(1/2)*K*H^2*2 B = 3K/64 GiB at stride 1 (76 GB/s), data =
    4*(1/2)*K*H^2/2*2 B = K/32 GiB at stride 2 (76 GB/s); over K = 12: 36/64 + 12/32 GiB. The
    activations' terms vanish (Gr = Gc = 1). Gradient accumulation multiplies the depth term."""
    grid = Grid(1, 1, 2, 2)
    e = axonn_estimate(M5B, grid, 8, 2048, "perlmutter")
    assert e is not None
    assert e.by_group == pytest.approx(
        {"col": 0, "row": 0, "depth": 36 / 64 / 76, "data": 12 / 32 / 76}
    )
    acc = axonn_estimate(M5B, grid, 8, 2048, "perlmutter", grad_acc=4)
    assert acc is not None
    assert acc.by_group["depth"] == pytest.approx(4 * 36 / 64 / 76)


def test_frontier_prices_strided_groups_at_halved_network_bandwidth():
    """Gc = 8, Gr = 2 on Frontier: the row group's stride 8 gets 10/2 = 5 GB/s. Row term of the
    plain layers: 2*(1/2)*(8*2048*4096/8)*2 B = 1/64 GiB each; transposed: 2*2*(1/2)*(8*2048*K*512)*2 B
    = K/32 GiB. Column (stride 1, size 8: 135 GB/s): plain 2*2*(7/8)*(2^14*K*2048)*2 B = 7K/32 GiB,
    transposed 2*(7/8)*2^25*2 B = 7/64 GiB."""
    e = axonn_estimate(M5B, Grid(2, 8, 1, 1), 8, 2048, "frontier")
    assert e is not None
    assert e.by_group["row"] == pytest.approx((2 / 64 + 5 / 32) / 5)
    assert e.by_group["col"] == pytest.approx((7 * 7 / 32 + 2 * 7 / 64) / 135)


def test_enumeration_follows_axonns_rules_and_order():
    """Powers of two with product G, Gc outermost, then Gr, Gd; Gr*Gc*Gd >= the minimum; the
    batch divisible by Gdata*Gd (here 2: Gd*Gdata = 4 is out)."""
    grids = [g.as_list() for g in enumerate_grids(4, batch=2, min_tensor_parallel=2)]
    assert grids == [
        [2, 1, 1, 2],
        [2, 1, 2, 1],
        [4, 1, 1, 1],
        [1, 2, 1, 2],
        [1, 2, 2, 1],
        [2, 2, 1, 1],
        [1, 4, 1, 1],
    ]
    assert len(list(enumerate_grids(4096, 4096, 1))) == count_grids(4096) == 455
    assert list(enumerate_grids(12, 12, 1)) == [] and count_grids(12) == 0
    assert [g.as_list() for g in enumerate_grids(8, 8, 1, no_data_parallel=True)][:2] == [
        [1, 1, 8, 1],
        [2, 1, 4, 1],
    ]


def test_ranking_is_stable_on_ties():
    """5B on 16 Frontier GCDs, B = 16: [2, 1, 4, 2] and [2, 1, 8, 1] cost exactly the same in
    AxoNN's model (depth over 4 at 72 GB/s plus data over 2 at 5 GB/s against depth over 8 at
    20 GB/s); AxoNN's stable sort keeps its enumeration order (Gd = 4 before Gd = 8)."""
    ranked = [e.grid.as_list() for e in rank_axonn(M5B, 16, 16, 2048, "frontier")]
    i = ranked.index([2, 1, 4, 2])
    assert ranked[i + 1] == [2, 1, 8, 1]
    a, b = (axonn_estimate(M5B, Grid(*g), 16, 2048, "frontier") for g in ranked[i : i + 2])
    assert a is not None and b is not None and a.layer_seconds == b.layer_seconds


def test_axonn_picks_by_its_own_formula():
    """The first row minimizes the formula over every candidate, and prints layers * sum."""
    ranked = rank_axonn(GPT_MODELS["80B"], 1024, 1024, 2048, "perlmutter")
    best = min(
        (
            axonn_estimate(GPT_MODELS["80B"], g, 1024, 2048, "perlmutter")
            for g in enumerate_grids(1024, 1024, 64)
        ),
        key=lambda e: e.layer_seconds,  # type: ignore[union-attr]
    )
    assert ranked[0] == best
    assert ranked[0].seconds == ranked[0].layer_seconds * 42
    assert all(e.grid.tensor_parallel >= 64 for e in ranked)


def test_megatron_tensor_parallelism_is_gr_t():
    """Megatron TP of degree t: only the row group talks inside the tensor-parallel group - the
    forward all-reduce after the row-parallel (transposed) layers and dX's after the column-
    parallel ones - plus data parallelism over the rest."""
    grid = megatron_grid(4, 16)
    assert grid.as_list() == [4, 1, 1, 4]
    e = axonn_estimate(M5B, grid, 16, 2048, "perlmutter")
    assert e is not None
    assert e.by_group["col"] == 0 and e.by_group["depth"] == 0
    # plain: 2*(3/4)*(16/4*2048*4096)*2 B per layer; transposed: 2*2*(3/4)*(4*2048*K*4096)*2 B
    rows = 4 * 2048 * 4096 * 2 / 2**30
    row = (2 * 1.5 * rows + 2 * 2 * 0.75 * rows * (1 + 4)) / 225  # stride 1, size 4
    assert e.by_group["row"] == pytest.approx(row)


def test_fsdp_is_gd_p():
    """FSDP / ZeRO-3: depth only - three ring passes over the weights (gather forward, gather
    backward, reduce-scatter): 3*(p-1)/p*12*H^2*2 B per layer."""
    grid = fsdp_grid(8)
    assert grid.as_list() == [1, 1, 8, 1]
    e = axonn_estimate(M5B, grid, 8, 2048, "perlmutter")
    assert e is not None
    assert e.by_group == pytest.approx(
        {"col": 0, "row": 0, "depth": 3 * 7 / 8 * 12 * 4096**2 * 2 / 2**30 / 80, "data": 0}
    )


def test_pure_data_parallelism():
    """Data only: AxoNN counts 4 (p-1)/p volumes of the weights (fp32 gradients all-reduced)."""
    grid = data_parallel_grid(4)
    e = axonn_estimate(M5B, grid, 8, 2048, "perlmutter")
    assert e is not None
    assert e.by_group == pytest.approx(
        {"col": 0, "row": 0, "depth": 0, "data": 4 * 3 / 4 * 12 * 4096**2 * 2 / 2**30 / 225}
    )
