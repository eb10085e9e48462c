"""A collective bound to an algorithm (`lower-collectives`) is timed by its steps on the group's
part of the machine's network: the program simulator gives what the algorithm form of
ccopt-sim gives for the same algorithm, network and size."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccopt.algorithms import generate
from ccopt.dialects.algo import AlgorithmOp
from ccopt.mesh import Mesh
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import bind_mesh, load_program
from ccopt.sim.algorithm_time import GroupNetwork, algorithm_ns, group_network
from ccopt.sim.chakra_algo import simulate_algorithm
from ccopt.sim.machine import load_machine
from ccopt.sim.network import Network, NetworkDim
from ccopt.sim.program import simulate_module
from ccopt.sim.system import SystemConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
H100 = load_machine("dgx-h100")


def test_a_group_inside_a_node_is_one_switch_of_the_nodes_bandwidth() -> None:
    mesh = Mesh("m", ("dp", "tp"), (4, 8))
    net = group_network(H100, mesh, (1,))  # tp: the innermost axis, inside a node
    assert [(d.topology, d.npus, d.bandwidth_gbps) for d in net.network.dims] == [
        ("Switch", 8, 419.1)
    ]
    assert net.position == tuple(range(8))


def test_a_group_across_nodes_uses_the_outer_dimension() -> None:
    mesh = Mesh("m", ("dp", "tp"), (4, 8))
    net = group_network(H100, mesh, (0,))  # dp: one GPU per node
    assert [(d.npus, d.bandwidth_gbps) for d in net.network.dims] == [(4, 46.57)]
    both = group_network(H100, mesh, (0, 1))  # group order: dp outer, tp inner
    assert [d.npus for d in both.network.dims] == [8, 4]
    assert both.position[:3] == (0, 1, 2) and both.position[8] == 8
    assert both.send_ns(0, 1, 1 << 20) < both.send_ns(0, 8, 1 << 20)  # NVLink vs InfiniBand


def test_a_message_between_nodes_pays_the_slowest_dimension_it_crosses() -> None:
    """GPU 7 of one node to GPU 0 of the next differ in both dimensions: ASTRA-sim's rule (the
    first differing one) charged NVLink for it, so a flat ring across nodes never paid
    InfiniBand. Here it pays both latencies and InfiniBand's bandwidth."""
    mesh = Mesh("m", ("dp",), (16,))
    net = group_network(H100, mesh, (0,))
    nvlink, infiniband = net.network.dims
    size = 1 << 20
    crossing = net.send_ns(7, 8, size)
    assert crossing == int(
        nvlink.hops(7, 0) * nvlink.latency_ns
        + infiniband.hops(0, 1) * infiniband.latency_ns
        + size / infiniband.bytes_per_ns()
    )
    assert crossing > net.network.send_ns(7, 8, size)  # (what ASTRA mode charges)
    assert net.send_ns(8, 0, size) == infiniband.message_ns(size, infiniband.hops(1, 0))


def test_a_flat_ring_across_nodes_is_slower_than_the_hierarchical_algorithm() -> None:
    """sgd's all-reduce of 4 MiB over 16 GPUs on two nodes: the ring's two hops between nodes
    run at InfiniBand's speed; hierarchical sends an eighth of the buffer between nodes."""
    text = (EXAMPLES / "sgd.mlir").read_text().replace("1030xf32", "1048576xf32")
    times = {}
    for algorithm in ("ring", "hierarchical"):
        module = load_program(text)
        bind_mesh(module, "dp=16")
        lowered = apply_pipeline(module, f"lower-collectives{{algorithm={algorithm}}}")
        times[algorithm] = simulate_module(lowered, H100).comm_ns
    assert times["hierarchical"] < times["ring"]


def test_hierarchical_halves_cost_about_the_hierarchical_all_reduce() -> None:
    """split-all-reduce, then hierarchical: the reduce-scatter reduces inside the node first and
    the all-gather gathers across nodes first, so the slow links carry 1/8 of the buffer (they
    sent half of it, the pair took 3.5x the all-reduce). Within 10% of ccopt's analytical
    split and of the lowered all-reduce."""
    text = (EXAMPLES / "sgd.mlir").read_text().replace("1030xf32", "16777216xf32")
    lowering = "lower-collectives{algorithm=hierarchical inner=8}"
    times = {}
    for label, pipeline in (
        ("split", "split-all-reduce"),
        ("lowered split", f"split-all-reduce,{lowering}"),
        ("lowered", lowering),
    ):
        module = load_program(text)
        bind_mesh(module, "dp=16")
        times[label] = simulate_module(apply_pipeline(module, pipeline), H100).comm_ns
    assert times["lowered split"] < 1.1 * times["split"]
    assert times["lowered split"] < 1.1 * times["lowered"]


def test_a_mesh_ordered_against_the_network_is_renumbered() -> None:
    machine = load_machine("dgx-h100")
    mesh = Mesh("m", ("tp", "dp"), (8, 4))  # here dp is the innermost (fastest) mesh axis
    net = group_network(machine, mesh, (0, 1))  # group order: tp outer, dp inner
    # members 0 and 1 differ in dp: 8 ranks apart on the network (dp is innermost on the
    # network too, mesh-axes: innermost), so consecutive group ranks sit in one node
    assert net.send_ns(0, 1, 1 << 20) == net.network.send_ns(0, 1, 1 << 20)
    assert sorted(net.position) == list(range(32))


@pytest.mark.parametrize("algorithm", ["ring", "direct", "halving_doubling", "tree"])
def test_program_time_is_the_algorithms_time(algorithm: str) -> None:
    """adam.mlir's one all-reduce on 4 ranks: its communication is the algorithm's steps."""
    module = load_program((EXAMPLES / "adam.mlir").read_text())
    lowered = apply_pipeline(module, f"lower-collectives{{algorithm={algorithm}}}")
    report = simulate_module(lowered, H100)
    algs = [op for op in lowered.body.block.ops if isinstance(op, AlgorithmOp)]
    assert len(algs) == 1
    alg = algs[0].algorithm()
    nbytes = 515 * 7 * 4  # adam's gradient: 515x7 f32 all-reduced over dp=4
    network = GroupNetwork(Network((NetworkDim("Switch", 4, 419.1, 600),)), (0, 1, 2, 3))
    system = SystemConfig(local_mem_bw=H100.gpu.hbm_bytes_per_ns)
    direct = simulate_algorithm(alg, network, system, nbytes).time_ns
    assert direct > 0
    assert report.comm_ns == direct
    mesh = Mesh("dp", ("dp",), (4,))
    assert algorithm_ns(alg, "all_reduce", nbytes, H100, mesh, (0,)) == direct


def test_algorithms_differ_where_their_messages_differ() -> None:
    """On a 4-rank switch a ring sends 6 rounds of quarter buffers and direct 2 rounds: the
    simulator sees the algorithm, which the analytical model (NCCL's choice) does not."""
    module = load_program((EXAMPLES / "adam.mlir").read_text())
    times = {
        a: simulate_module(
            apply_pipeline(module.clone(), f"lower-collectives{{algorithm={a}}}"), H100
        ).comm_ns
        for a in ("ring", "direct")
    }
    assert times["direct"] < times["ring"]


def test_the_kernel_level_keeps_the_algorithms_time() -> None:
    """convert-to-kernel keeps the algorithm on the NCCL call: L3 is timed by the same steps."""
    module = load_program((EXAMPLES / "megatron_mlp.mlir").read_text())
    l2 = apply_pipeline(module.clone(), "lower-collectives{algorithm=direct}")
    l3 = apply_pipeline(l2.clone(), "inline,convert-to-kernel,plan-memory")
    plain = apply_pipeline(module.clone(), "inline,convert-to-kernel,plan-memory")
    assert simulate_module(l3, H100).comm_ns == simulate_module(l2, H100).comm_ns
    assert simulate_module(l3, H100).comm_ns != simulate_module(plain, H100).comm_ns


def _switch(npus: int) -> GroupNetwork:
    return GroupNetwork(Network((NetworkDim("Switch", npus, 400.0, 500),)), tuple(range(npus)))


def _times(algorithm: str, collective: str, net: GroupNetwork, size: int) -> tuple[int, int]:
    """(ccopt mode's time, ASTRA mode's time) of the library's algorithm on `net`."""
    alg = generate(collective, algorithm, net.npus)
    system = SystemConfig(local_mem_bw=3000)
    return (
        simulate_algorithm(alg, net, system, size).time_ns,
        simulate_algorithm(alg, net.network, system, size).time_ns,
    )


def test_a_gpus_sends_share_its_link() -> None:
    """direct all-reduce on 8 GPUs of one switch: each GPU sends 7 messages at once per phase.
    ASTRA-sim's rule ran them all at link speed (as if each GPU had 7 links); here they leave
    one after another, so a large buffer costs what a ring costs (both move 2 (p-1)/p of it
    through every GPU's link), and the ring, one send per GPU at a time, is unchanged."""
    net, size = _switch(8), 64 << 20
    ring, ring_astra = _times("ring", "allreduce", net, size)
    direct, direct_astra = _times("direct", "allreduce", net, size)
    assert ring == ring_astra
    assert direct > 3 * direct_astra
    bandwidth_bound = 2 * 7 / 8 * size / net.network.dims[0].bytes_per_ns()
    assert bandwidth_bound <= direct < 1.25 * bandwidth_bound  # (+ the reductions)
    assert 0.9 < direct / ring < 1.1


def test_sends_on_a_busy_link_wait_in_step_order() -> None:
    """A direct broadcast from rank 0 on 4 GPUs: rank 0 sends the buffer to ranks 1, 2 and 3
    in one level; the last leaves after the other two have (2 x the bytes' time), then takes
    the latency and its own bytes' time."""
    net, size = _switch(4), 1 << 20
    ccopt, astra = _times("direct", "broadcast", net, size)
    dim = net.network.dims[0]
    one = int(size / dim.bytes_per_ns())
    assert astra == dim.message_ns(size, 2)
    assert ccopt == 2 * one + dim.message_ns(size, 2)


def test_messages_to_other_nodes_share_the_nic_not_the_nvlink() -> None:
    """Two nodes of 4 GPUs: GPU 0 sending to GPUs 1-3 (NVLink) and 4-7 (the NIC) queues its
    three NVLink messages on one link and its four NIC messages on another, so the direct
    broadcast takes as long as the four slower NIC messages in a row, not all seven: the last,
    to GPU 7, also crosses NVLink (both latencies)."""
    dims = (NetworkDim("Switch", 4, 400.0, 500), NetworkDim("Switch", 2, 50.0, 2000))
    net, size = GroupNetwork(Network(dims), tuple(range(8))), 1 << 20
    ccopt, _ = _times("direct", "broadcast", net, size)
    nic = int(size / dims[1].bytes_per_ns())
    assert ccopt == 3 * nic + net.send_ns(0, 7, size)
