"""ccopt's model of a 4D (row x column x depth x data) transformer layout.

AxoNN ranks grids by bandwidth alone (`ccopt.sim.axonn`). This model prices the same collectives
as AxoNN's code actually issues them (the transposed layers' width factor on the group that moves
it) with ccopt's machine presets and cost functions (`ccopt.sim.machine`, `ccopt.sim.cost`), and
adds what AxoNN's model leaves out:

* **latency**: every collective pays its network dimensions' alpha per step (ring: p-1 steps
  per reduce-scatter or all-gather), hierarchically inside and across nodes;
* **compute**: every linear layer's GEMMs (forward, recomputation, two backward GEMMs) and the
  attention core, at the GPU's bf16 peak times the preset's matmul efficiency for the local shape;
* **memory feasibility**: optimizer state sharded over Gr*Gc*Gd, two gathered weight blocks (the
  current one and the one prefetched), activation checkpoints and one recomputed layer;
* **overlap** as AxoNN's runtime does it: OAR (the backward dX all-reduce hides behind the dW
  GEMM), ORS (weight-gradient reduce-scatters run until the end of the backward pass), OAG (weight
  all-gathers prefetched one linear layer ahead);
* **NIC sharing**: a group that leaves the node runs hierarchically (reduce-scatter inside, the
  rest on 1/p of the data across nodes, all-gather inside), each GPU on its share of the node's
  NICs (the preset's `nic-sharing`).

Ranks are numbered as AxoNN numbers them (column innermost, then row, depth, data) and fill the
machine's nodes in order, so a group's stride says which network dimensions it spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING

from ccopt.sim.axonn import TRANSFORMER_LINEARS, GptShape, Grid, LinearLayer

if TYPE_CHECKING:
    from ccopt.sim.machine import Machine

BF16 = 2
FP32 = 4

# --- device memory: the one figure the machine presets do not carry ------------------------------
# Per-GPU HBM capacity by preset (vendor datasheets): Perlmutter's standard GPU nodes carry the
# 40 GB A100, Frontier's GCD 64 GB (half an MI250X), DGX A100 / H100 80 GB, DGX-2 V100 32 GB.
MEMORY_RESERVE = 0.1
"""Fraction of device memory left for the allocator, NCCL buffers and the runtime context."""


@cache
def machine_for(name: str, gpus: int) -> Machine:
    """The preset, grown to `gpus` ranks."""
    from ccopt.sim.machine import load_machine

    return load_machine(name).fit(gpus)


def usable_memory(machine: Machine) -> float:
    return machine.gpu.memory_bytes * (1 - MEMORY_RESERVE)  # (the presets' `memory-gb`)


# --- collectives ----------------------------------------------------------------------------------


def group_span(stride: int, size: int, machine: Machine) -> tuple[int, ...]:
    """How many distinct coordinates a group of `size` ranks `stride` apart takes in each network
    dimension (innermost first), for power-of-two strides and sizes as AxoNN's grids have."""
    out, radix = [], 1
    for dim in machine.network.dims:
        if stride >= radix * dim.npus:
            out.append(1)
        elif stride >= radix:
            out.append(min(size, radix * dim.npus // stride))
        else:
            out.append(min(dim.npus, max(1, size * stride // radix)))
        radix *= dim.npus
    return tuple(out)


def ring_time(kind: str, nbytes: float, stride: int, size: int, machine: Machine) -> float:
    """Seconds for an all-reduce / all-gather / reduce-scatter of `nbytes` (the full buffer)."""
    from ccopt.sim.cost import collective_ns, gamma, links

    if size == 1:
        return 0.0
    dims = links(machine, group_span(stride, size, machine))
    return collective_ns(kind, nbytes, dims, gamma(machine)) * 1e-9


def gemm_time(m: float, k: float, n: float, machine: Machine) -> float:
    """Seconds of one local bf16 GEMM at the preset's efficiency for its shape."""
    efficiency = machine.gpu.efficiency(int(m), int(n), int(k))
    return 2 * m * k * n / (machine.gpu.peak("bf16") * efficiency)


def without_latency(machine: Machine) -> Machine:
    """The same machine with every network dimension's alpha at zero (to isolate latency)."""
    from ccopt.sim.network import Network

    dims = tuple(replace(d, latency_ns=0.0) for d in machine.network.dims)
    return replace(machine, network=Network(dims))


# --- one linear layer -------------------------------------------------------------------------


@dataclass
class LinearCosts:
    """Seconds of one linear layer's GEMMs and collectives on one GPU."""

    gemm: float
    """One of its GEMMs (forward, recomputation, dX and dW all cost the same)."""
    weight_gather: float
    """All-gather of the weight block over depth."""
    forward_reduce: float
    """All-reduce of the output (over column, or row when transposed)."""
    backward_reduce: float
    """All-reduce of dX (over row, or column when transposed)."""
    grad_scatter: float
    """Reduce-scatter of dW over depth."""
    data_reduce: float
    """All-reduce of the dW shard over data (fp32 gradients)."""


def linear_costs(
    model: GptShape, linear: LinearLayer, grid: Grid, batch: int, seq: int, m: Machine
) -> LinearCosts:
    h, k = model.hidden, linear.k
    rows = batch * seq / (grid.gdata * grid.gd)
    block = k * h * h / (grid.gr * grid.gc)
    fan_in = (k * h / grid.gr) if linear.transposed else (h / grid.gc)
    strides, sizes = grid.strides(), grid.group_sizes()
    # a plain layer splits in-features (H) over column and out-features (K*H) over row; a
    # transposed one the other way round: the forward output is partial over the in-feature group
    # and dX over the out-feature group
    if linear.transposed:
        forward, backward = (rows * h / grid.gc, "row"), (rows * k * h / grid.gr, "col")
    else:
        forward, backward = (rows * k * h / grid.gr, "col"), (rows * h / grid.gc, "row")

    def ring(kind: str, elements: float, group: str, width: int = BF16) -> float:
        return ring_time(kind, elements * width, strides[group], sizes[group], m)

    return LinearCosts(
        gemm=gemm_time(rows, fan_in, block / fan_in, m),
        weight_gather=ring("all_gather", block, "depth"),
        forward_reduce=ring("all_reduce", *forward),
        backward_reduce=ring("all_reduce", *backward),
        grad_scatter=ring("reduce_scatter", block, "depth", FP32),
        data_reduce=ring("all_reduce", block / grid.gd, "data", FP32),
    )


# --- the step ---------------------------------------------------------------------------------


@dataclass
class CcoptEstimate:
    """ccopt's prediction for one grid."""

    grid: Grid
    seconds: float
    feasible: bool
    memory_bytes: float
    terms: dict[str, float] = field(default_factory=dict)
    """Seconds per term over the whole step: compute, exposed collectives by kind, latency, and
    the collective time the overlaps hide (negative: credited)."""


def memory_per_gpu(model: GptShape, grid: Grid, batch: int, seq: int) -> float:
    """Bytes one GPU holds at the peak of a step (mixed-precision Adam, recomputation)."""
    h, tp = model.hidden, grid.tensor_parallel
    local_batch = batch / (grid.gdata * grid.gd)
    state = model.parameters / tp * (BF16 + FP32 + 3 * FP32)
    widest = max(lin.k for lin in TRANSFORMER_LINEARS) * h * h / (grid.gr * grid.gc)
    gathered = 2 * widest * BF16 + widest * FP32
    checkpoints = model.layers * local_batch * seq * h / grid.gc * BF16
    one_layer = local_batch * seq * (34 * h + 5 * model.heads * seq) / (grid.gr * grid.gc)
    return state + gathered + checkpoints + one_layer


def ccopt_estimate(
    model: GptShape,
    grid: Grid,
    batch: int,
    seq: int,
    machine: Machine,
    overlap: bool = True,
) -> CcoptEstimate:
    """Step time of the 4D layout with AxoNN's overlaps (OAR, ORS, OAG) or without them."""
    costs = [linear_costs(model, lin, grid, batch, seq, machine) for lin in TRANSFORMER_LINEARS]
    n = len(costs)
    h, L = model.hidden, model.layers
    local_batch = batch / (grid.gdata * grid.gd)
    # QK^T and softmax(.)V: per sample and head an S x S x (H/heads) GEMM each, heads split over
    # the tensor-parallel row x column groups
    heads = local_batch * model.heads / (grid.gr * grid.gc)
    attention = 2 * heads * gemm_time(seq, h / model.heads, seq, machine)
    gemms = sum(c.gemm for c in costs)
    compute = 4 * gemms + 4 * attention
    gather = sum(c.weight_gather for c in costs)
    forward_reduce = sum(c.forward_reduce for c in costs)
    backward_reduce = sum(c.backward_reduce for c in costs)
    scatter = sum(c.grad_scatter for c in costs)
    if overlap:
        # OAG: each gather (forward, and again for recomputation + backward) is prefetched one
        # linear layer ahead and hides behind that layer's GEMM(s)
        exposed_gather = sum(
            max(0.0, costs[(i + 1) % n].weight_gather - costs[i].gemm) for i in range(n)
        ) + sum(max(0.0, costs[i - 1].weight_gather - 3 * costs[i].gemm) for i in range(n))
        # OAR: dX's all-reduce runs while the same layer's dW GEMM does
        exposed_backward = sum(max(0.0, c.backward_reduce - c.gemm) for c in costs)
        # ORS: reduce-scatters drain on their own stream until the backward pass ends
        backward_compute = L * (3 * gemms + 3 * attention)
        exposed_scatter = max(costs[0].grad_scatter, L * scatter - backward_compute)
    else:
        exposed_gather, exposed_backward = 2 * gather, backward_reduce
        exposed_scatter = L * scatter
    data = L * sum(c.data_reduce for c in costs)
    terms = {
        "compute": L * compute,
        "weight_gather": L * exposed_gather,
        "forward_reduce": L * 2 * forward_reduce,
        "backward_reduce": L * exposed_backward,
        "grad_scatter": exposed_scatter,
        "data_reduce": data,
        "hidden_by_overlap": -(
            L * (2 * gather - exposed_gather + backward_reduce - exposed_backward)
            + L * scatter
            - exposed_scatter
        ),
    }
    seconds = sum(v for k, v in terms.items() if k != "hidden_by_overlap")
    memory = memory_per_gpu(model, grid, batch, seq)
    return CcoptEstimate(grid, seconds, memory <= usable_memory(machine), memory, terms)


def latency_seconds(model: GptShape, grid: Grid, batch: int, seq: int, machine: Machine) -> float:
    """The part of the step's collective time that is per-step latency (for explaining ranks)."""
    zero = without_latency(machine)
    with_alpha = ccopt_estimate(model, grid, batch, seq, machine, overlap=False).seconds
    without = ccopt_estimate(model, grid, batch, seq, zero, overlap=False).seconds
    return with_alpha - without
