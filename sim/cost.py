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
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def gamma(machine: Machine) -> float:
    """ns per byte of local reduction: two reads and a write through HBM."""
    return 3.0 / machine.gpu.hbm_bytes_per_ns


# --- one dimension ------------------------------------------------------------------------------


def _log2(p: int) -> int:
    return max(1, math.ceil(math.log2(p)))


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


def all_gather_1d(link: Link, n: float) -> float:
    """All-gather producing n bytes (the full per-rank output) on one dimension."""
    p, a, b = link.p, link.alpha, link.beta
    frac = (p - 1) / p
    if link.algorithm == "halving_doubling":
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
        k = max(1, round(math.sqrt(max(depth - 1, 1) * n * b / a))) if a > 0 else 1
        return 2 * (depth + k - 1) * (a + n / k * b) + frac * n * g
    if link.algorithm == "direct":
        return 2 * (a + n / p * _direct_beta(link)) + frac * n * g
    return reduce_scatter_1d(link, n, g) + all_gather_1d(link, n)


def all_to_all_1d(link: Link, n: float) -> float:
    """All-to-all of n bytes per rank: pairwise exchange, or all peers at once when direct."""
    if link.algorithm == "direct" or link.topology == "FullyConnected":
        return link.alpha + n / link.p * _direct_beta(link)
    return (link.p - 1) * (link.alpha + n / link.p * link.beta)


def broadcast_1d(link: Link, n: float) -> float:
    """Broadcast of n bytes: the faster of a binomial tree and scatter + ring all-gather."""
    p, a, b = link.p, link.alpha, link.beta
    tree = _log2(p) * (a + n * b)
    scatter_gather = (_log2(p) + p - 1) * a + 2 * (p - 1) / p * n * b
    return min(tree, scatter_gather)


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
        return sum(broadcast_1d(d, n) for d in dims)
    if kind == "reduce":
        return sum(broadcast_1d(d, n) + n * g for d in dims)
    if kind == "shift":
        return inner.alpha + n * inner.beta
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
