"""ccopt mode's cost functions: a compute roofline and α-β-γ collectives per network dimension.

Compute: `max(flops / (peak · efficiency(shape)), bytes / HBM bandwidth)`; the engine adds the
host's launch overhead per kernel and slows compute while a collective holds SMs.

Communication (`../shared/reference/collectives.md`): one network dimension is an α-β link with
α = latency · hops and β = 1 / bandwidth (times the ranks sharing a NIC, times the collectives
of the same rank running at once on it); γ = 3 / HBM bandwidth per reduced byte (read two
operands, write one). A group that spans several dimensions runs hierarchically, innermost
first: reduce-scatter inside, the rest of the collective on 1/p of the data outside, all-gather
inside (NCCL's and ASTRA-sim's localBWAware schedule).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ccopt.mesh import Mesh
    from ccopt.sim.machine import Gpu, Machine
    from ccopt.sim.work import Work

KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce",
         "shift", "fused_all_reduce")  # fmt: skip


@dataclass(frozen=True)
class Link:
    """One network dimension as a collective on it sees it: `p` ranks, α (ns), β (ns per byte)."""

    p: int
    alpha: float
    beta: float
    topology: str = "Switch"
    algorithm: str = "ring"


def links(
    machine: Machine, span: Sequence[int], algorithm: str | None = None, sharing: float = 1.0
) -> list[Link]:
    """The dimensions a group spans (`span[d]` ranks in dimension d), innermost first; `sharing`
    is how many collectives of the rank use the network at once."""
    out = []
    for d, p in enumerate(span):
        if p <= 1:
            continue
        dim = machine.network.dims[d]
        algo = algorithm if algorithm not in (None, "hierarchical") else machine.algorithms[d]
        hops = {"Ring": 1 if algo == "ring" else max(1, p // 4), "Switch": 2}.get(dim.topology, 1)
        beta = machine.nic_sharing[d] * sharing / dim.bytes_per_ns()
        out.append(Link(p, dim.latency_ns * hops, beta, dim.topology, algo or "ring"))
    return out


def group_links(
    machine: Machine,
    mesh: Mesh,
    axes: Sequence[int],
    algorithm: str | None = None,
    sharing: float = 1.0,
) -> list[Link]:
    """The links of a group over mesh `axes` (`links` of its span); a group that is not a full
    grid on the network (`Machine.is_grid`: 9 ranks on nodes of 8) runs flat, every rank one
    step of a ring or tree whose slowest hop is the outermost dimension it spans."""
    span = machine.span(mesh, axes)
    dims = links(machine, span, algorithm, sharing)
    if len(dims) < 2 or machine.is_grid(mesh, axes):
        return dims
    ranks = math.prod(mesh.axis_sizes[a] for a in axes)
    return [replace(dims[-1], p=ranks)]


def gamma(machine: Machine) -> float:
    """ns per byte of local reduction: two reads and a write through HBM."""
    return 3.0 / machine.gpu.hbm_bytes_per_ns


# --- one dimension ------------------------------------------------------------------------------


def _log2(p: int) -> int:
    return max(1, math.ceil(math.log2(p)))


def _tree_chunks(depth: int, n: float, link: Link) -> int:
    """The best chunk count of a pipeline `depth` links deep, sqrt((depth - 1) n β / α), at
    most one per byte (without latency, or of nothing: one chunk, as before)."""
    if n < 1:
        return 1
    if link.alpha <= 0:
        return 1
    best = math.sqrt(max(depth - 1, 1) * n * link.beta / link.alpha)
    return max(1, int(min(best, n) + 0.5))


def _direct_beta(link: Link) -> float:
    """β of sending to all peers at once: free in parallel on dedicated links (FullyConnected),
    serialized through one port otherwise."""
    return link.beta if link.topology == "FullyConnected" else link.beta * (link.p - 1)


def reduce_scatter_1d(link: Link, n: float, g: float) -> float:
    """Reduce-scatter of n bytes (the full per-rank input) on one dimension."""
    p, a, b = link.p, link.alpha, link.beta
    frac = (p - 1) / p
    if link.algorithm == "halving_doubling":
        return _log2(p) * a + frac * n * b + frac * n * g
    if link.algorithm == "direct":
        return a + n / p * _direct_beta(link) + frac * n * g
    return (p - 1) * a + frac * n * b + frac * n * g


_LOG_STEPS = ("halving_doubling", "recursive_doubling", "bruck")
"""All-gathers in ceil(log2 p) steps, doubling what each sends (Bruck's too, by rotation)."""


def all_gather_1d(link: Link, n: float) -> float:
    """All-gather producing n bytes (the full per-rank output) on one dimension."""
    p, a, b = link.p, link.alpha, link.beta
    frac = (p - 1) / p
    if link.algorithm in _LOG_STEPS:
        return _log2(p) * a + frac * n * b
    if link.algorithm == "direct":
        return a + n / p * _direct_beta(link)
    return (p - 1) * a + frac * n * b


def all_reduce_1d(link: Link, n: float, g: float) -> float:
    """All-reduce of n bytes on one dimension."""
    p, a, b = link.p, link.alpha, link.beta
    frac = (p - 1) / p
    if link.algorithm == "tree":
        # a pipelined binary tree (reduce up, broadcast down) with the best chunk count
        depth = _log2(p)
        k = _tree_chunks(depth, n, link)
        return 2 * (depth + k - 1) * (a + n / k * b) + frac * n * g
    if link.algorithm == "direct":
        return 2 * (a + n / p * _direct_beta(link)) + frac * n * g
    if link.algorithm == "recursive_doubling":  # every step exchanges and reduces all n bytes
        return _log2(p) * (a + n * b + n * g)
    return reduce_scatter_1d(link, n, g) + all_gather_1d(link, n)


def all_to_all_1d(link: Link, n: float) -> float:
    """All-to-all of n bytes per rank: pairwise exchange, all peers at once when direct, or
    Bruck's log2 p rounds."""
    if link.algorithm == "bruck":  # log2 p steps, each sending half of the rotated buffer
        return _log2(link.p) * (link.alpha + n / 2 * link.beta)
    if link.algorithm == "direct" or link.topology == "FullyConnected":
        return link.alpha + n / link.p * _direct_beta(link)
    return (link.p - 1) * (link.alpha + n / link.p * link.beta)


def scatter_1d(link: Link, n: float) -> float:
    """The root's n bytes scattered, 1/p to each rank (or gathered to the root: the mirror):
    the root's port sends (p-1)/p of them, down a binomial tree or to all peers at once."""
    p, a = link.p, link.alpha
    if link.algorithm == "direct":
        return a + n / p * _direct_beta(link)
    return _log2(p) * a + (p - 1) / p * n * link.beta


def broadcast_1d(link: Link, n: float) -> float:
    """Broadcast of n bytes: the faster of a pipelined binary tree (its best chunk count) and
    scatter + all-gather (the link's algorithm) - as fast as an all-reduce's own phases, so
    never slower than an all-reduce of the same bytes."""
    p, a, b = link.p, link.alpha, link.beta
    depth = _log2(p)
    k = _tree_chunks(depth, n, link)
    tree = (depth + k - 1) * (a + n / k * b)
    return min(tree, scatter_1d(link, n) + all_gather_1d(link, n))


def reduce_1d(link: Link, n: float, g: float) -> float:
    """Reduce of n bytes to a root: a broadcast's traffic reversed, each byte reduced on one of
    the p ranks (reduce-scatter + gather, or a tree whose levels split the work)."""
    return broadcast_1d(link, n) + (link.p - 1) / link.p * n * g


# --- a whole group ------------------------------------------------------------------------------


def collective_ns(
    kind: str,
    n: float,
    dims: Sequence[Link],
    g: float,
    body_ns: float = 0.0,
    gathers: Sequence[float] | None = None,
) -> float:
    """Time of one collective over the dimensions `dims` (innermost first). `n` is the full
    per-rank buffer: the input of all-reduce, reduce-scatter, all-to-all, broadcast and reduce,
    the *output* of all-gather, the message of a shift. `body_ns` is a fused collective's
    computation on its slice; `gathers` the bytes of each all-gather of its gather phase (None:
    one of `n`; empty when every result stays on the reduced slice, as fuse-collective leaves a
    reduce-scatter's)."""
    if not dims or n <= 0:
        return body_ns if kind == "fused_all_reduce" else 0.0
    inner, outer = dims[0], list(dims[1:])
    if kind == "all_reduce":
        if not outer:
            return all_reduce_1d(inner, n, g)
        return (
            reduce_scatter_1d(inner, n, g)
            + collective_ns("all_reduce", n / inner.p, outer, g)
            + all_gather_1d(inner, n)
        )
    if kind == "reduce_scatter":
        return reduce_scatter_1d(inner, n, g) + collective_ns(
            "reduce_scatter", n / inner.p, outer, g
        )
    if kind == "all_gather":
        return collective_ns("all_gather", n / inner.p, outer, g) + all_gather_1d(inner, n)
    if kind == "fused_all_reduce":
        gather = sum(collective_ns("all_gather", b, dims, g) for b in gathers or [])
        if gathers is None:
            gather = collective_ns("all_gather", n, dims, g)
        return collective_ns("reduce_scatter", n, dims, g) + body_ns + gather
    if kind == "all_to_all":
        return sum(all_to_all_1d(d, n) for d in dims)
    if kind == "broadcast":
        if not outer:
            return broadcast_1d(inner, n)
        # all of it over each dimension in turn, or scattered inside the root's node first so
        # that every NIC carries its 1/p across the outer dimensions, then gathered inside
        return min(
            sum(broadcast_1d(d, n) for d in dims),
            scatter_1d(inner, n)
            + collective_ns("broadcast", n / inner.p, outer, g)
            + all_gather_1d(inner, n),
        )
    if kind == "reduce":
        if not outer:
            return reduce_1d(inner, n, g)
        return min(
            sum(reduce_1d(d, n, g) for d in dims),
            reduce_scatter_1d(inner, n, g)
            + collective_ns("reduce", n / inner.p, outer, g)
            + scatter_1d(inner, n),
        )
    if kind == "shift":  # (every rank sends at once: the slowest link a message crosses)
        return max(d.alpha + n * d.beta for d in dims)
    raise ValueError(f"no cost for collective kind '{kind}' (known: {', '.join(KINDS)})")


# --- compute ------------------------------------------------------------------------------------


def roofline_ns(
    flops: float, bytes_moved: float, flops_per_ns: float, bytes_per_ns: float
) -> float:
    """The longer of doing the arithmetic and moving the bytes."""
    return max(flops / flops_per_ns if flops else 0.0, bytes_moved / bytes_per_ns)


def kernel_ns(work: Work, gpu: Gpu) -> float:
    """A compute or copy kernel's uncontended time, launch aside: the roofline of its work at
    its element type's peak, a matmul's at the share of it its shape reaches (and only the
    misaligned share of that where its rows are off 16 bytes): the program simulator's figure,
    and `auto-shard`'s price of an op."""
    peak = gpu.peak(work.element) / 1e9
    if work.matmul is not None:
        share = 1.0 if work.aligned else gpu.misaligned(work.element)
        peak *= gpu.efficiency(*work.matmul) * share
    return roofline_ns(work.flops, work.bytes, peak, gpu.hbm_bytes_per_ns)


def contended_ns(work_ns: float, start: float, busy_until: float, share: float) -> float:
    """Duration of `work_ns` of compute that starts at `start` while a collective holds `share`
    of the SMs until `busy_until` (it runs at 1 - share of its speed until then)."""
    slow = busy_until - start
    if slow <= 0 or share <= 0:
        return work_ns
    rate = 1.0 - share
    if work_ns <= slow * rate:
        return work_ns / rate
    return slow + (work_ns - slow * rate)
