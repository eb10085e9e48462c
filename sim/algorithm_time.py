"""The time of a collective that `lower-collectives` bound to an algorithm, on a machine.

Without an algorithm the program simulator prices a collective with the analytical model of
`ccopt.sim.cost` (NCCL picks its own algorithm). Once a collective names an `algo.algorithm`,
the algorithm is part of the program and its steps are what runs: the collective's group is
placed on the machine's network (each member at the network coordinates its mesh position gets)
and the algorithm's steps are timed there as ASTRA-sim times a custom collective
(`ccopt.sim.chakra_algo.simulate_algorithm`), so a ring, a tree or a hierarchical algorithm
each cost what their messages cost on that network. One difference from ASTRA-sim: a message
between GPUs that differ in several network dimensions (two nodes) pays each one's latency and
the slowest one's bandwidth (`GroupNetwork.send_ns`), where ASTRA-sim charges the first
differing dimension only. Two more: a GPU's sends share its injection bandwidth on each network
dimension (`GroupNetwork.link`): they leave one after another, in step order, where ASTRA-sim
runs them all at link speed at once (which made a direct algorithm's p - 1 sends cost one). Its
receives do not contend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ccopt.sim.network import Network, NetworkDim

if TYPE_CHECKING:
    from ccopt.dialects.algo import Algorithm
    from ccopt.mesh import Mesh
    from ccopt.sim.machine import Machine


@dataclass(frozen=True)
class GroupNetwork:
    """The part of a machine's network a collective's group occupies, addressed by group rank:
    `send_ns(i, j, size)` is what a message between group members i and j costs."""

    network: Network
    position: tuple[int, ...]  # group rank -> rank in `network`
    source: str = "<machine>"

    @property
    def npus(self) -> int:
        return len(self.position)

    def send_ns(self, src: int, dst: int, size_bytes: int) -> int:
        """A message between members that differ in several network dimensions (GPUs on two
        nodes) crosses each of them: it pays every one's latency per hop and the slowest one's
        bandwidth. (ASTRA-sim, and so the ASTRA mode, charges the first differing dimension
        only, which priced a ring's hop between nodes at NVLink speed: a flat ring across nodes
        looked faster than the hierarchical all-reduce.)"""
        network = self.network
        a, b = network.coords(self.position[src]), network.coords(self.position[dst])
        latency, slowest = 0.0, float("inf")
        for dim, x, y in zip(network.dims, a, b, strict=True):
            if x != y:
                latency += dim.hops(x, y) * dim.latency_ns
                slowest = min(slowest, dim.bytes_per_ns())
        if slowest == float("inf"):
            raise ValueError(f"group ranks {src} and {dst} are one rank")
        return int(latency + float(size_bytes) / slowest)

    def link(self, src: int, dst: int) -> tuple[int, float]:
        """(the network dimension whose link from `src` a message to `dst` leaves by, the
        bytes per ns it leaves at): the outermost dimension it crosses (a message to another
        node leaves by the NIC, whatever GPU it reaches there) at the slowest bandwidth it
        meets. A GPU's messages on one link are sent one after another."""
        network = self.network
        a, b = network.coords(self.position[src]), network.coords(self.position[dst])
        crossed = [d for d, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if not crossed:
            raise ValueError(f"group ranks {src} and {dst} are one rank")
        return crossed[-1], min(network.dims[d].bytes_per_ns() for d in crossed)


def group_network(machine: Machine, mesh: Mesh, axes: tuple[int, ...]) -> GroupNetwork:
    """The network of the group over mesh `axes` (in group order, as the interpreter numbers a
    group): every network dimension the group spans keeps its topology, bandwidth and latency
    with as many NPUs as the group has coordinates in it."""
    strides = machine.axis_strides(mesh)
    members = next(iter(mesh.groups(axes)))
    offsets = [sum(c * strides[a] for a, c in enumerate(coords)) for coords in members]
    dims, columns = [], []
    radix = 1
    for d in machine.network.dims:
        column = [(o // radix) % d.npus for o in offsets]
        radix *= d.npus
        used = sorted(set(column))
        if len(used) > 1:
            index = {v: i for i, v in enumerate(used)}
            dims.append(NetworkDim(d.topology, len(used), d.bandwidth_gbps, d.latency_ns))
            columns.append([index[v] for v in column])
    position = []
    for member in range(len(offsets)):
        rank, scale = 0, 1
        for dim, column in zip(dims, columns, strict=True):
            rank += column[member] * scale
            scale *= dim.npus
        position.append(rank)
    network = Network(tuple(dims) or (NetworkDim("Switch", 1, 1.0, 0.0),), machine.source)
    return GroupNetwork(network, tuple(position), machine.source)


def algorithm_ns(
    alg: Algorithm, kind: str, n: int, machine: Machine, mesh: Mesh, axes: tuple[int, ...]
) -> int:
    """Nanoseconds of `alg` implementing a collective of `kind` whose per-rank buffer is `n`
    bytes (the analytical model's n: all-gather's output, every other collective's input)."""
    from ccopt.sim.chakra_algo import simulate_algorithm
    from ccopt.sim.system import SystemConfig

    if n <= 0 or alg.ranks <= 1:
        return 0
    size = n // alg.ranks if kind == "all_gather" else n  # ASTRA's comm_size: the input buffer
    chunks = max(g.in_chunks for g in alg.gpus)
    size = max(size, chunks)  # tiny buffers: one byte per chunk
    system = SystemConfig(local_mem_bw=machine.gpu.hbm_bytes_per_ns, source=machine.source)
    network = group_network(machine, mesh, axes)
    return simulate_algorithm(alg, network, system, size).time_ns  # type: ignore[arg-type]
