"""ccopt's model of a 4D (row x column x depth x data) transformer layout.

AxoNN ranks grids by bandwidth alone (`ccopt.sim.axonn`). This model prices the same collectives
as AxoNN's code actually issues them (the transposed layers' width factor on the group that moves
it) and adds what AxoNN's model leaves out:

* **latency**: a ring collective over p ranks takes p-1 (all-gather, reduce-scatter) or 2(p-1)
  (all-reduce) steps of an alpha that depends on whether the group leaves the node;
* **compute**: every linear layer's GEMMs (forward, recomputation, two backward GEMMs) and the
  attention core, at a sustained fraction of the GPU's bf16 peak;
* **memory feasibility**: optimizer state sharded over Gr*Gc*Gd, two gathered weight blocks (the
  current one and the one prefetched), activation checkpoints and one recomputed layer;
* **overlap** as AxoNN's runtime does it: OAR (the backward dX all-reduce hides behind the dW
  GEMM), ORS (weight-gradient reduce-scatters run until the end of the backward pass), OAG (weight
  all-gathers prefetched one linear layer ahead);
* **NIC sharing**: a group that spans nodes shares its node's NICs with the other groups of the
  same kind on that node, all of which run the same collective at the same time.

Machine figures come from `../shared/reference/hardware.md`; they sit in `MACHINE_FIGURES` below,
the one place to switch to `ccopt.sim.machine`'s presets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ccopt.sim.axonn import TRANSFORMER_LINEARS, GptShape, Grid, LinearLayer

BF16 = 2
FP32 = 4


@dataclass(frozen=True)
class MachineFigures:
    """What the 4D model needs to know about a machine (per GPU unless stated)."""

    name: str
    gpus_per_node: int
    peak_flops: float
    """bf16 dense tensor FLOP/s."""
    sustained_fraction: float
    """Fraction of peak large GEMMs sustain (hardware.md: 790 of 989 TFLOP/s on an H100)."""
    memory_bytes: float
    link_bandwidth: float
    """Bytes/s per direction between two GPUs of a node (one direct link group)."""
    nvlink_bandwidth: float
    """Bytes/s per direction over all of a GPU's intra-node links."""
    package_size: int
    """GPUs sharing a package with a faster link (2 GCDs per MI250X); 1 where none."""
    package_bandwidth: float
    nic_bandwidth_per_node: float
    """Bytes/s per direction over all of a node's NICs."""
    intra_node_latency: float
    """Seconds per ring step inside a node."""
    inter_node_latency: float
    """Seconds per ring step across nodes."""
    memory_reserve: float = 0.1
    """Fraction of device memory left for the allocator, NCCL buffers and the CUDA context."""


# --- machine figures: the one place to switch to ccopt.sim.machine presets ----------------------
# Perlmutter: 4 A100 per node, each pair joined by 4 NVLink-3 links (100 GB/s per direction; 300
# over all of a GPU's links, hardware.md), 4 x 25 GB/s Slingshot NICs per node; the standard GPU
# nodes carry the 40 GB A100. Frontier: 8 MI250X GCDs per node (191.5 bf16 TFLOP/s and 64 GB per
# GCD, vendor datasheet; not in hardware.md), 200 GB/s between the two GCDs of a package and 50
# GB/s over other Infinity Fabric links, 4 x 25 GB/s NICs per node. Latencies are NCCL/RCCL's
# usual per-step figures (a few microseconds on a node, about 10 us across the network).
MACHINE_FIGURES: dict[str, MachineFigures] = {
    "perlmutter": MachineFigures(
        name="perlmutter",
        gpus_per_node=4,
        peak_flops=312e12,
        sustained_fraction=790 / 989,
        memory_bytes=40e9,
        link_bandwidth=100e9,
        nvlink_bandwidth=300e9,
        package_size=1,
        package_bandwidth=100e9,
        nic_bandwidth_per_node=4 * 25e9,
        intra_node_latency=5e-6,
        inter_node_latency=10e-6,
    ),
    "frontier": MachineFigures(
        name="frontier",
        gpus_per_node=8,
        peak_flops=191.5e12,
        sustained_fraction=790 / 989,
        memory_bytes=64e9,
        link_bandwidth=50e9,
        nvlink_bandwidth=200e9,
        package_size=2,
        package_bandwidth=200e9,
        nic_bandwidth_per_node=4 * 25e9,
        intra_node_latency=5e-6,
        inter_node_latency=10e-6,
    ),
}


# --- collectives ----------------------------------------------------------------------------------


def members_per_node(stride: int, size: int, gpus_per_node: int) -> int:
    """How many members of one group share a node (ranks are numbered node by node)."""
    if stride >= gpus_per_node:
        return 1
    return min(size, gpus_per_node // stride)


def group_bandwidth(stride: int, size: int, m: MachineFigures) -> float:
    """Per-rank ring bandwidth of a group of `size` ranks `stride` apart, in bytes/s.

    Inside a node, NCCL builds one ring per link, so a group gets a link per peer (capped by the
    GPU's links). A group that leaves the node is bounded by its share of the node's NICs: every
    GPU of the node is in some group of the same kind running the same collective now."""
    inside = members_per_node(stride, size, m.gpus_per_node)
    if inside == 2 and stride < m.package_size:
        intra = m.package_bandwidth
    else:
        intra = min(m.nvlink_bandwidth, m.link_bandwidth * max(inside - 1, 1))
    if inside == size:
        return intra
    groups_sharing_nics = m.gpus_per_node // inside
    return min(intra, m.nic_bandwidth_per_node / groups_sharing_nics)


def ring_time(kind: str, nbytes: float, stride: int, size: int, m: MachineFigures) -> float:
    """Seconds for an all-reduce / all-gather / reduce-scatter of `nbytes` (the full buffer)."""
    if size == 1:
        return 0.0
    steps = (2 if kind == "all_reduce" else 1) * (size - 1)
    crosses = members_per_node(stride, size, m.gpus_per_node) < size
    alpha = m.inter_node_latency if crosses else m.intra_node_latency
    return steps * alpha + steps * (nbytes / size) / group_bandwidth(stride, size, m)


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
    model: GptShape, linear: LinearLayer, grid: Grid, batch: int, seq: int, m: MachineFigures
) -> LinearCosts:
    h, k = model.hidden, linear.k
    rows = batch * seq / (grid.gdata * grid.gd)
    block = k * h * h / (grid.gr * grid.gc)
    flops = 2 * rows * block
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
        gemm=flops / (m.peak_flops * m.sustained_fraction),
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
    machine: MachineFigures,
    overlap: bool = True,
) -> CcoptEstimate:
    """Step time of the 4D layout with AxoNN's overlaps (OAR, ORS, OAG) or without them."""
    costs = [linear_costs(model, lin, grid, batch, seq, machine) for lin in TRANSFORMER_LINEARS]
    n = len(costs)
    h, L = model.hidden, model.layers
    local_batch = batch / (grid.gdata * grid.gd)
    attention_flops = 4 * 2 * local_batch * seq * seq * h / (grid.gr * grid.gc)
    attention = attention_flops / (machine.peak_flops * machine.sustained_fraction)
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
    usable = machine.memory_bytes * (1 - machine.memory_reserve)
    return CcoptEstimate(grid, seconds, memory <= usable, memory, terms)


def latency_seconds(
    model: GptShape, grid: Grid, batch: int, seq: int, machine: MachineFigures
) -> float:
    """The part of the step's collective time that is per-step latency (for explaining ranks)."""
    zero = replace(machine, intra_node_latency=0.0, inter_node_latency=0.0)
    with_alpha = ccopt_estimate(model, grid, batch, seq, machine, overlap=False).seconds
    without = ccopt_estimate(model, grid, batch, seq, zero, overlap=False).seconds
    return with_alpha - without
