"""Chakra execution traces: the on-disk format ASTRA-sim reads (metadata first, varint-delimited
nodes, typed attributes, data_deps), and workloads simulated as ASTRA-sim's Workload runs them."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ccopt.sim.chakra import (
    TraceError,
    encode_trace,
    make_node,
    metadata_message,
    node_attributes,
    read_trace,
    read_trace_set,
    write_trace_set,
)
from ccopt.sim.chakra_sim import simulate_workload
from ccopt.sim.network import network_from_dict
from ccopt.sim.system import load_system, system_from_dict

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "astra"


def ring(npus: int):
    return network_from_dict(
        {"topology": ["Ring"], "npus_count": [npus], "bandwidth": [50], "latency": [500]}, "net"
    )


SYSTEM = system_from_dict(
    {
        "scheduling-policy": "LIFO",
        "endpoint-delay": 1,
        "local-mem-bw": 1600,
        **{
            f"{c}-implementation": ["ring"]
            for c in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
        },
    },
    "sys.json",
)


def test_written_file_is_metadata_then_length_prefixed_nodes(tmp_path) -> None:
    node = make_node(
        3, "send", "COMM_SEND_NODE", deps=[1, 2], comm_dst=1, comm_tag=7, comm_size=4096
    )
    (path,) = write_trace_set(tmp_path / "t", [[node]], {"producer": "ccopt"})
    data = path.read_bytes()
    meta = metadata_message({"producer": "ccopt"}).SerializeToString()
    assert data[0] == len(meta) and data[1 : 1 + len(meta)] == meta
    loaded = read_trace(path)
    assert [n.id for n in loaded.nodes] == [3]
    assert list(loaded.nodes[0].data_deps) == [1, 2] and not loaded.nodes[0].ctrl_deps


def test_attribute_value_types_are_the_ones_astra_sim_reads() -> None:
    node = make_node(
        0,
        "c",
        "COMM_COLL_NODE",
        comm_type="reduce-scatter",
        comm_size=1 << 40,
        involved_dim=[True, False],
        pg_name="dp",
        comm_priority=2,
    )
    kinds = {a.name: a.WhichOneof("value") for a in node.attr}
    assert kinds == {
        "comm_type": "int64_val",
        "comm_size": "int64_val",
        "involved_dim": "bool_list",
        "pg_name": "string_val",
        "comm_priority": "int32_val",
        "is_cpu_op": "bool_val",
    }
    assert node_attributes(node)["comm_type"] == 7


def test_attribute_of_the_wrong_type_reads_as_zero() -> None:
    """ASTRA-sim takes one oneof member: a comm_size written as uint64 reads as 0."""
    from ccopt.sim.chakra import attribute

    node = make_node(0, "c", "COMM_COLL_NODE")
    node.attr.append(attribute("comm_size", 4096, "uint64_val"))
    assert node_attributes(node)["comm_size"] == 0


def test_gzip_trace_and_truncated_trace(tmp_path) -> None:
    payload = encode_trace(metadata_message(), [make_node(1, "x", "COMP_NODE", duration_micros=2)])
    (tmp_path / "z.0.et").write_bytes(gzip.compress(payload))
    assert read_trace_set(tmp_path / "z")[0].nodes[0].duration_micros == 2
    (tmp_path / "bad.0.et").write_bytes(payload[:-3])
    with pytest.raises(TraceError, match=r"bad\.0\.et: error: .*runs past the end"):
        read_trace_set(tmp_path / "bad")


def test_missing_files_are_named(tmp_path) -> None:
    with pytest.raises(TraceError, match="no trace files"):
        read_trace_set(tmp_path / "none")
    write_trace_set(tmp_path / "w", [[], []])
    with pytest.raises(
        TraceError,
        match=r"w\.2\.et: error: missing: the trace set '.*w' has 2 files .* and the network 3 NPUs",
    ):
        read_trace_set(tmp_path / "w", 3)
    write_trace_set(tmp_path / "one", [[]])
    with pytest.raises(TraceError, match=r"has 1 file \(.*one\.0\.et\) and the network 2 NPUs"):
        read_trace_set(tmp_path / "one", 2)


def test_shipped_custom_ring_all_reduce_gives_90174(monkeypatch) -> None:
    """ASTRA-sim's custom 8-rank ring all-reduce (128 KiB messages, 7 us reductions); the trace
    path in the system file is relative to the working directory, as in ASTRA-sim."""
    monkeypatch.chdir(ROOT)
    system = load_system(EXAMPLES / "custom_ring.json")
    report = simulate_workload(ring(8), system, EXAMPLES / "all_reduce_8")
    assert report.time_ns == 90174


def test_native_collective_workload_equals_the_collective(tmp_path) -> None:
    from ccopt.sim.astra import simulate_collective

    node = make_node(
        0, "ar", "COMM_COLL_NODE", comm_type="all-reduce", comm_size=1 << 20, involved_dim=[True]
    )
    write_trace_set(tmp_path / "w", [[node]] * 16)
    direct = simulate_collective(ring(16), SYSTEM, "all-reduce", 1 << 20).time_ns
    assert simulate_workload(ring(16), SYSTEM, tmp_path / "w").time_ns == direct == 53431


def test_compute_then_collective_then_compute(tmp_path) -> None:
    """Nodes run in dependency order; COMP costs duration x 1000 ns."""
    per_rank = [
        [
            make_node(0, "fwd", "COMP_NODE", duration_micros=5),
            make_node(
                1,
                "ar",
                "COMM_COLL_NODE",
                deps=[0],
                comm_type="all-reduce",
                comm_size=1 << 20,
                involved_dim=[True],
            ),
            make_node(2, "opt", "COMP_NODE", deps=[1], duration_micros=3),
        ]
    ] * 16
    write_trace_set(tmp_path / "w", per_rank)
    assert simulate_workload(ring(16), SYSTEM, tmp_path / "w").time_ns == 5000 + 53431 + 3000


def test_one_compute_at_a_time_and_independent_send_recv(tmp_path) -> None:
    """Two independent COMP nodes serialize (one GPU compute slot); a send completes when its
    message arrives; the receiver finishes at arrival."""
    size = 1 << 20
    arrival = ring(2).send_ns(0, 1, size)
    rank0 = [
        make_node(0, "a", "COMP_NODE", duration_micros=2),
        make_node(1, "b", "COMP_NODE", duration_micros=2),
        make_node(2, "s", "COMM_SEND_NODE", deps=[0, 1], comm_dst=1, comm_tag=3, comm_size=size),
    ]
    rank1 = [make_node(0, "r", "COMM_RECV_NODE", comm_src=0, comm_tag=3, comm_size=size)]
    write_trace_set(tmp_path / "w", [rank0, rank1])
    report = simulate_workload(ring(2), SYSTEM, tmp_path / "w")
    assert report.rank_finish_ns == [4000 + arrival, 4000 + arrival]


def test_unmatched_receive_is_reported(tmp_path) -> None:
    rank0 = [make_node(0, "r", "COMM_RECV_NODE", comm_src=1, comm_tag=1, comm_size=8)]
    rank1 = [make_node(0, "s", "COMM_SEND_NODE", comm_dst=0, comm_tag=1, comm_size=16)]
    write_trace_set(tmp_path / "w", [rank0, rank1])
    with pytest.raises(TraceError, match="never finish"):
        simulate_workload(ring(2), SYSTEM, tmp_path / "w")


def test_dependency_on_a_missing_node_is_reported(tmp_path) -> None:
    write_trace_set(
        tmp_path / "w", [[make_node(0, "x", "COMP_NODE", deps=[9], duration_micros=1)]] * 2
    )
    with pytest.raises(TraceError, match=r"w\.0\.et: error: node 0 \(x\) depends on node 9"):
        simulate_workload(ring(2), SYSTEM, tmp_path / "w")
