"""AxoNN's 4D planner and its communication model, reproduced exactly.

AxoNN (Singh, Bhatele et al.) lays a transformer out on a grid G = Gr x Gc x Gd x Gdata: row,
column and depth tensor parallelism and data parallelism, ranks numbered column innermost, then
row, depth and data. It chooses the grid by enumerating every factorization into powers of two and
ranking it with a bandwidth-only model of the collectives (the authors' `comm_model.py`,
Megatron-AxoNN, 2024-03; `../shared/reference/autoparallel.md`, "AxoNN's analytical model, term by
term"). This module is that model, quirks included, so that ccopt can show where a model with
latency, compute, memory and overlap ranks the same grids differently (`ccopt.sim.grid4d`):

* volumes in GiB (bytes / 1024**3) divided by bandwidths in GB/s;
* the transposed layers' width factor K sits on the other group than the collective that moves
  it in AxoNN's code (the model is reproduced, not corrected);
* the depth term counts 3/2 ring all-reduces (all-gather forward, all-gather backward,
  reduce-scatter) and is multiplied by the gradient-accumulation steps;
* the column (non-transposed) or row (transposed) term is doubled for activation recomputation;
* the data term is 4 (not 2) ring volumes of the weight shard;
* no latency, compute, memory or overlap term; the only memory rule is Gr*Gc*Gd >= a minimum per
  model; ties keep AxoNN's enumeration order (Gc outermost, then Gr, Gd, Gdata).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

GIB = 1024**3
"""AxoNN divides byte volumes by 1024**3 and then by bandwidths quoted in GB/s."""

BYTES_PER_ELEMENT = 2
"""Every volume in the model is bf16."""


@dataclass(frozen=True)
class GptShape:
    """One row of AxoNN's GPT model table (`autoparallel.md`)."""

    name: str
    layers: int
    hidden: int
    heads: int
    min_tensor_parallel: int
    """AxoNN's memory rule: Gr*Gc*Gd must be at least this for the model to fit."""

    @property
    def parameters(self) -> int:
        """Weights of the transformer layers: four linear layers of K*H*H each (K = 3, 1, 4, 4)."""
        return 12 * self.hidden * self.hidden * self.layers


GPT_MODELS: dict[str, GptShape] = {
    s.name: s
    for s in (
        GptShape("5B", 24, 4096, 32, 4),
        GptShape("10B", 32, 5120, 40, 8),
        GptShape("20B", 32, 7168, 56, 16),
        GptShape("40B", 38, 9216, 72, 32),
        GptShape("60B", 56, 9216, 72, 64),
        GptShape("80B", 42, 12288, 96, 64),
        GptShape("160B", 84, 12288, 96, 128),
        GptShape("320B", 96, 16384, 128, 256),
        GptShape("640B", 192, 16384, 128, 512),
    )
}


@dataclass(frozen=True)
class Grid:
    """A 4D layout: row, column and depth tensor parallelism, data parallelism."""

    gr: int
    gc: int
    gd: int
    gdata: int

    @property
    def gpus(self) -> int:
        return self.gr * self.gc * self.gd * self.gdata

    @property
    def tensor_parallel(self) -> int:
        """The GPUs one copy of the model is spread over (AxoNN's memory rule bounds it)."""
        return self.gr * self.gc * self.gd

    def as_list(self) -> list[int]:
        """[Gr, Gc, Gd, Gdata], the order `ccopt-plan` prints."""
        return [self.gr, self.gc, self.gd, self.gdata]

    def group_sizes(self) -> dict[str, int]:
        return {"col": self.gc, "row": self.gr, "depth": self.gd, "data": self.gdata}

    def strides(self) -> dict[str, int]:
        """Rank distance between consecutive members of each group (column innermost)."""
        return {
            "col": 1,
            "row": self.gc,
            "depth": self.gc * self.gr,
            "data": self.gc * self.gr * self.gd,
        }

    def __str__(self) -> str:
        return f"{self.gr}x{self.gc}x{self.gd}x{self.gdata}"


GROUPS = ("col", "row", "depth", "data")
"""AxoNN's groups in the order its model adds their times."""


# --- AxoNN's bandwidth tables (GB/s, by rank stride and group size) ---------------------------


def perlmutter_bandwidth(stride: int, size: int) -> float | None:
    """Perlmutter (4 A100 per node). None where AxoNN's table has no entry (it then drops the grid)."""
    if stride == 1:
        return {2: 76.0, 4: 225.0}.get(size, 80.0 if size >= 8 else None)
    if stride == 2:
        return 76.0 if size == 2 else (40.0 if size >= 4 else None)
    if stride >= 4:
        return 20.0
    return None


def frontier_bandwidth(stride: int, size: int) -> float | None:
    """Frontier (8 MI250X GCDs per node); AxoNN halves its measured inter-node figures."""
    if stride == 1:
        return {2: 129.0, 4: 52.0, 8: 135.0}.get(size, 80.0 / 2)
    if stride == 2:
        return {2: 50.0, 4: 72.0}.get(size, 40.0 / 2)
    if stride == 4:
        return 36.0 if size == 2 else 20.0 / 2
    if stride >= 8:
        return 10.0 / 2
    return None


AXONN_BANDWIDTH: dict[str, Callable[[int, int], float | None]] = {
    "perlmutter": perlmutter_bandwidth,
    "frontier": frontier_bandwidth,
}


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearLayer:
    """One of a transformer layer's four linear layers: width factor K and orientation."""

    name: str
    k: int
    transposed: bool


TRANSFORMER_LINEARS = (
    LinearLayer("qkv", 3, False),
    LinearLayer("attn_out", 1, True),
    LinearLayer("fc1", 4, False),
    LinearLayer("fc2", 4, True),
)


def linear_volumes(
    batch: int, seq: int, hidden: int, layer: LinearLayer, grid: Grid, grad_acc: int = 1
) -> dict[str, float]:
    """AxoNN's per-group communication volume of one linear layer, in GiB (its `model_v2`)."""
    gr, gc, gd, gdata = grid.gr, grid.gc, grid.gd, grid.gdata
    k, h = layer.k, hidden
    scale = BYTES_PER_ELEMENT / 1024 / 1024 / 1024
    data = 4 * (gdata - 1) / gdata * k * h * h / (gc * gr * gd) * scale
    depth = 3 / 2 * 2 * (gd - 1) / gd * k * h * h / (gc * gr) * scale * grad_acc
    local_rows = batch / gdata / gd * seq
    if layer.transposed:
        row = 2 * 2 * (gr - 1) / gr * (local_rows * k * h / gc) * scale
        col = 2 * (gc - 1) / gc * (local_rows * h / gr) * scale
    else:
        row = 2 * (gr - 1) / gr * (local_rows * h / gc) * scale
        col = 2 * 2 * (gc - 1) / gc * (local_rows * k * h / gr) * scale
    return {"col": col, "row": row, "depth": depth, "data": data}


def linear_times(
    batch: int,
    seq: int,
    hidden: int,
    layer: LinearLayer,
    grid: Grid,
    machine: str,
    grad_acc: int = 1,
) -> dict[str, float] | None:
    """Seconds per group for one linear layer; None where the bandwidth table has no entry."""
    bandwidth = AXONN_BANDWIDTH[machine]
    volumes = linear_volumes(batch, seq, hidden, layer, grid, grad_acc)
    sizes, strides = grid.group_sizes(), grid.strides()
    times: dict[str, float] = {}
    for group in GROUPS:
        if sizes[group] == 1:
            times[group] = 0.0
            continue
        bw = bandwidth(strides[group], sizes[group])
        if bw is None:
            return None
        times[group] = volumes[group] / bw
    return times


@dataclass(frozen=True)
class AxonnEstimate:
    """AxoNN's prediction for one grid: per-layer seconds by group, and the whole model's."""

    grid: Grid
    layer_seconds: float
    """The sum AxoNN sorts by (one transformer layer)."""
    seconds: float
    """`layer_seconds * layers`, the figure AxoNN prints."""
    by_group: dict[str, float]
    """Per-layer seconds of each group, summed over the four linear layers."""


def axonn_estimate(
    model: GptShape,
    grid: Grid,
    batch: int,
    seq: int,
    machine: str,
    grad_acc: int = 1,
) -> AxonnEstimate | None:
    """AxoNN's time for one grid (None where its bandwidth table cannot price a group)."""
    layer_total = 0.0
    by_group = dict.fromkeys(GROUPS, 0.0)
    for linear in TRANSFORMER_LINEARS:
        times = linear_times(batch, seq, model.hidden, linear, grid, machine, grad_acc)
        if times is None:
            return None
        linear_total = 0.0
        for group in GROUPS:
            linear_total += times[group]
            by_group[group] += times[group]
        layer_total += linear_total
    return AxonnEstimate(grid, layer_total, layer_total * model.layers, by_group)


def powers_of_two_up_to(n: int) -> list[int]:
    out, p = [], 1
    while p <= n:
        out.append(p)
        p *= 2
    return out


def enumerate_grids(
    gpus: int,
    batch: int,
    min_tensor_parallel: int,
    no_data_parallel: bool = False,
    hidden: int | None = None,
) -> Iterator[Grid]:
    """AxoNN's candidates in its own order: powers of two with product `gpus`, Gr*Gc*Gd at least
    the model's minimum, the batch divisible by Gdata*Gd (each depth x data rank gets whole
    samples), and with `hidden`, Gr and Gc dividing it (a weight's row or column shard of less
    than one element is no layout). A GPU count that is not a power of two has no candidate,
    as in AxoNN."""
    powers = powers_of_two_up_to(gpus)
    for gc in powers:
        for gr in powers:
            if gpus % (gc * gr):
                continue
            if hidden is not None and (hidden % gc or hidden % gr):
                continue
            for gd in powers:
                if gpus % (gc * gr * gd):
                    continue
                gdata = gpus // (gc * gr * gd)
                if gdata & (gdata - 1):
                    continue
                if gc * gr * gd < min_tensor_parallel or batch % (gdata * gd):
                    continue
                if no_data_parallel and gdata != 1:
                    continue
                yield Grid(gr, gc, gd, gdata)


def count_grids(gpus: int) -> int:
    """How many 4-way power-of-two factorizations `gpus` has (the enumeration's length bound)."""
    if gpus < 1 or gpus & (gpus - 1):
        return 0
    e = gpus.bit_length() - 1
    return (e + 3) * (e + 2) * (e + 1) // 6


def rank_axonn(
    model: GptShape,
    gpus: int,
    batch: int,
    seq: int,
    machine: str,
    grad_acc: int = 1,
    no_data_parallel: bool = False,
) -> list[AxonnEstimate]:
    """Every candidate grid, best first by AxoNN's model (a stable sort: ties keep its order)."""
    estimates = []
    for grid in enumerate_grids(
        gpus, batch, model.min_tensor_parallel, no_data_parallel, model.hidden
    ):
        estimate = axonn_estimate(model, grid, batch, seq, machine, grad_acc)
        if estimate is not None:
            estimates.append(estimate)
    return sorted(estimates, key=lambda e: e.layer_seconds)


def megatron_grid(tensor_parallel: int, gpus: int) -> Grid:
    """Megatron-LM tensor parallelism of degree t with data parallelism over the rest."""
    return Grid(tensor_parallel, 1, 1, gpus // tensor_parallel)


def fsdp_grid(gpus: int) -> Grid:
    """FSDP / ZeRO-3: every GPU holds 1/p of every weight and a 1/p share of the batch."""
    return Grid(1, 1, gpus, 1)


def data_parallel_grid(gpus: int) -> Grid:
    return Grid(1, 1, 1, gpus)
