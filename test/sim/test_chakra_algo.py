"""Algorithms as Chakra custom-collective traces: the written bytes are protobuf's, traces give
back the algorithm, and an algorithm timed directly takes what ASTRA-sim's run of its traces
takes (ccopt-sim's custom collective is exact against ASTRA-sim's shipped example)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccopt.algorithms import LIBRARY, generate
from ccopt.backends.msccl_xml import write_xml
from ccopt.diagnostics import SourceText
from ccopt.dialects.algo import AlgorithmOp
from ccopt.frontend.msccl_xml import read_algorithm
from ccopt.sim.astra import simulate_collective
from ccopt.sim.chakra import (
    TraceError,
    make_node,
    node_attributes,
    read_trace_set,
    write_trace_set,
)
from ccopt.sim.chakra_algo import (
    algorithm_traces,
    read_algorithm_traces,
    simulate_algorithm,
    trace_prefix,
    write_algorithm_traces,
)
from ccopt.sim.chakra_sim import simulate_workload
from ccopt.sim.network import ConfigError, network_from_dict
from ccopt.sim.system import load_system, system_from_dict

ROOT = Path(__file__).resolve().parents[2]
ASTRA = ROOT / "examples" / "astra"
MiB = 1 << 20


def network(topology: str, npus: int):
    return network_from_dict(
        {"topology": [topology], "npus_count": [npus], "bandwidth": [50], "latency": [500]}, "net"
    )


def custom_system(prefix: Path, local_mem_bw: float = 50.0):
    return system_from_dict(
        {
            "preferred-dataset-splits": 1,
            "local-mem-bw": local_mem_bw,
            "all-reduce-implementation-custom": [str(prefix)],
        },
        "sys.json",
    )


def same(a, b) -> bool:
    return str(AlgorithmOp(a)) == str(AlgorithmOp(b))


def test_msccl_xml_to_traces_to_ccopt_sim_equals_the_algorithm_timed_directly(tmp_path) -> None:
    """The issue's chain on the 8-rank ring all-reduce of ASTRA-sim's custom example (1 MiB,
    128 KiB messages, 7 us reductions at local-mem-bw 50): both give ASTRA-sim's 90174 ns."""
    text = write_xml(generate("allreduce", "ring", 8))
    alg = read_algorithm(SourceText("ring.xml", text))
    write_algorithm_traces(tmp_path / "ring", alg, MiB, 50.0)
    system = custom_system(tmp_path / "ring")
    replayed = simulate_collective(network("Ring", 8), system, "all-reduce", MiB, symmetric=False)
    direct = simulate_algorithm(alg, network("Ring", 8), system, MiB)
    assert replayed.time_ns == direct.time_ns == 90174
    assert direct.chunk_bytes == 128 * 1024 and direct.messages == 8 * 14


def test_exported_ring_times_as_astra_sims_own_custom_ring_trace(tmp_path, monkeypatch) -> None:
    """ASTRA-sim's shipped trace and ccopt's export of the library ring, run the same way as a
    workload of one all-reduce per rank, take the same time (send-reduce pairs vs fused steps
    have the same critical path)."""
    monkeypatch.chdir(ROOT)
    shipped = simulate_workload(
        network("Ring", 8), load_system(ASTRA / "custom_ring.json"), ASTRA / "all_reduce_8"
    )
    write_algorithm_traces(tmp_path / "ring", generate("allreduce", "ring", 8), MiB, 50.0)
    ours = simulate_workload(
        network("Ring", 8), custom_system(tmp_path / "ring"), ASTRA / "all_reduce_8"
    )
    assert shipped.time_ns == ours.time_ns == 90174


def library_cases() -> list[tuple[str, str, dict[str, int]]]:
    cases = []
    for collective, table in LIBRARY.items():
        for name in table:
            cases.append((collective, name, {}))
            cases.append((collective, name, {"chunk_factor": 2}))
        cases.append((collective, "ring", {"channels": 2}) if "ring" in table else None)
    return [c for c in cases if c is not None]


@pytest.mark.parametrize(("topology", "npus"), [("Ring", 8), ("Switch", 6), ("FullyConnected", 5)])
def test_every_library_algorithm_round_trips_and_times_alike(tmp_path, topology, npus) -> None:
    """Every generator (with a chunk factor and with channels): traces -> the same algorithm,
    and the direct time equals the event simulation of its traces as a custom collective
    (cross-block dependencies, several thread blocks and channels, copies and nops included)."""
    net = network(topology, npus)
    checked = 0
    for i, (collective, name, options) in enumerate(library_cases()):
        try:
            alg = generate(collective, name, npus, **options)
        except ValueError:
            continue  # e.g. a power-of-two-only algorithm
        size = 4096 * max(g.in_chunks for g in alg.gpus)
        prefix = tmp_path / f"case{i}"
        write_algorithm_traces(prefix, alg, size, 0.5)
        system = custom_system(prefix, 0.5)
        direct = simulate_algorithm(alg, net, system, size).time_ns
        replayed = simulate_collective(net, system, "all-reduce", size, symmetric=False).time_ns
        assert direct == replayed, (collective, name, options)
        assert same(read_algorithm_traces(prefix), alg), (collective, name, options)
        checked += 1
    assert checked >= 40


def test_nodes_are_written_byte_for_byte_as_protobuf_writes_them() -> None:
    """The hand encoder (fast enough for millions of nodes) agrees with protobuf's serializer
    on every node of an algorithm with dependencies, copies and nops."""
    alg = generate("allreduce", "double_binary_tree", 6, chunk_factor=2)
    for data in algorithm_traces(alg, 1 << 16, 10.0):
        from ccopt.sim.chakra import _messages, schema

        messages = list(_messages(data, "x"))
        for payload in messages[1:]:
            node = schema().Node()
            node.ParseFromString(payload)
            assert node.SerializeToString() == payload


def test_trace_shape_send_recv_comp_and_dependencies(tmp_path) -> None:
    alg = generate("allreduce", "ring", 4)
    write_algorithm_traces(tmp_path / "r", alg, 4096, 1.0)
    nodes = read_trace_set(tmp_path / "r")[1].nodes
    kinds = [n.type for n in nodes]
    # s, then (recv, reduce, send) x 3 for rrs,rrs,rrcs, (recv, send) x 2, recv
    assert kinds == [5] + [6, 4, 5] * 3 + [6, 5] * 2 + [6]
    assert all(list(n.data_deps) == ([n.id - 1] if n.id else []) for n in nodes)
    first = node_attributes(nodes[0])
    assert (first["comm_dst"], first["comm_size"]) == (2, 1024)
    assert nodes[2].duration_micros == 3  # 3 passes x 1024 B at 1 GB/s = 3072 ns, whole us
    assert node_attributes(nodes[1])["comm_src"] == 0


def test_tags_pair_each_send_with_its_receive_and_are_never_reused(tmp_path) -> None:
    alg = generate("allreduce", "direct", 4)
    write_algorithm_traces(tmp_path / "d", alg, 4096, 1.0)
    sends, recvs = {}, {}
    for rank, trace in enumerate(read_trace_set(tmp_path / "d")):
        for n in trace.nodes:
            a = node_attributes(n)
            if n.type == 5:
                sends[a["comm_tag"]] = (rank, a["comm_dst"], a["comm_size"])
            elif n.type == 6:
                recvs[a["comm_tag"]] = (a["comm_src"], rank, a["comm_size"])
    assert sends == recvs and len(sends) == 4 * 3 * 2


def test_import_refuses_astra_sims_own_trace_naming_what_is_missing() -> None:
    with pytest.raises(TraceError, match=r"custom_ring_allreduce\.0\.et: error: not an algorithm"):
        read_algorithm_traces(ASTRA / "custom_ring_allreduce")


def test_import_names_the_node_that_disagrees(tmp_path) -> None:
    alg = generate("allreduce", "ring", 4)
    write_algorithm_traces(tmp_path / "r", alg, 4096, 1.0)
    traces = read_trace_set(tmp_path / "r")
    node = traces[2].nodes[0]
    for attr in node.attr:
        if attr.name == "comm_size":
            attr.int64_val = 999
    write_trace_set(tmp_path / "bad", [t.nodes for t in traces], None)
    # metadata of each file is rank-specific: rewrite it as it was
    from ccopt.sim.chakra import encode_trace

    for r, t in enumerate(traces):
        (tmp_path / f"bad.{r}.et").write_bytes(encode_trace(t.metadata, t.nodes))
    with pytest.raises(
        TraceError, match=r"bad\.2\.et: error: node 0 \(SEND_tb0_step0\) has comm_size 999"
    ):
        read_algorithm_traces(tmp_path / "bad")


def test_a_missing_rank_file_is_an_error(tmp_path) -> None:
    write_algorithm_traces(tmp_path / "r", generate("allgather", "ring", 4), 4096, 1.0)
    (tmp_path / "r.3.et").unlink()
    with pytest.raises(TraceError, match="4 ranks, but 3 trace files"):
        read_algorithm_traces(tmp_path / "r")


def test_direct_timing_refuses_a_network_of_another_size() -> None:
    system = system_from_dict({"local-mem-bw": 50}, "sys.json")
    with pytest.raises(ConfigError, match="8 NPUs, the algorithm 4 ranks"):
        simulate_algorithm(generate("allreduce", "ring", 4), network("Ring", 8), system, MiB)


def test_trace_prefix_of_a_file_or_a_prefix() -> None:
    assert trace_prefix("out/ring.3.et") == "out/ring"
    assert trace_prefix("out/ring") == "out/ring"


def test_make_node_and_workload_replay_still_read_exported_files(tmp_path) -> None:
    """An exported set is an ordinary Chakra trace set: ccopt-et and the workload reader read
    it, and a hand-made workload can name it as its all-reduce."""
    write_algorithm_traces(tmp_path / "hd", generate("allreduce", "halving_doubling", 8), MiB, 50)
    nodes = [[make_node(0, "ar", "COMM_COLL_NODE", comm_type="all-reduce", comm_size=MiB)]] * 8
    write_trace_set(tmp_path / "w", nodes)
    system = custom_system(tmp_path / "hd")
    replay = simulate_workload(network("Ring", 8), system, tmp_path / "w")
    direct = simulate_algorithm(
        read_algorithm_traces(tmp_path / "hd"), network("Ring", 8), system, MiB
    )
    assert replay.time_ns == direct.time_ns


def test_fast_import_is_proven_by_exporting_again(tmp_path) -> None:
    """The bulk reader's algorithm exports to the very files it read; a set it cannot prove
    (here: metadata rewritten without local_mem_bw, as older exports lack it) is read node by
    node, to the same algorithm."""
    from ccopt.sim.chakra import encode_trace
    from ccopt.sim.chakra_algo import fast_algorithm_traces

    alg = generate("allreduce", "halving_doubling", 8)
    write_algorithm_traces(tmp_path / "hd", alg, MiB, 12.5)
    fast = fast_algorithm_traces(tmp_path / "hd")
    assert fast is not None and same(fast, alg)
    for r, trace in enumerate(read_trace_set(tmp_path / "hd")):
        kept = [a for a in trace.metadata.attr if a.name != "local_mem_bw"]
        del trace.metadata.attr[:]
        trace.metadata.attr.extend(kept)
        (tmp_path / f"old.{r}.et").write_bytes(encode_trace(trace.metadata, trace.nodes))
    assert fast_algorithm_traces(tmp_path / "old") is None
    assert same(read_algorithm_traces(tmp_path / "old"), alg)


@pytest.mark.parametrize(
    ("collective", "name", "ranks", "options"),
    [
        ("allreduce", "ring", 16, {"channels": 2}),
        ("allreduce", "halving_doubling", 8, {}),
        ("allreduce", "double_binary_tree", 6, {"chunk_factor": 2}),
        ("allgather", "direct", 5, {}),
        ("allreduce", "ring", 1, {}),
    ],
)
def test_whole_files_are_protobufs_encoding(collective, name, ranks, options, tmp_path) -> None:
    """Every file the buffer encoder writes is, byte for byte, what protobuf's serializer writes
    for the messages it holds (metadata and every node, framed), and the written files are the
    encoded ones; reading them gives the algorithm back (a one-rank ring: a file with no node).
    Sizes and bandwidths make some varints long (comm_size past 2^28) and COMP durations
    present or absent."""
    from ccopt.sim.chakra import encode_trace

    alg = generate(collective, name, ranks, **options)
    for size, bw in [(1 << 16, 10.0), (1 << 40, 0.001)]:
        size *= max(g.in_chunks for g in alg.gpus)
        files = algorithm_traces(alg, size, bw)
        write_algorithm_traces(tmp_path / "t", alg, size, bw)
        traces = read_trace_set(tmp_path / "t")
        assert len(traces) == ranks
        for r, (data, trace) in enumerate(zip(files, traces, strict=True)):
            assert (tmp_path / f"t.{r}.et").read_bytes() == data
            assert encode_trace(trace.metadata, trace.nodes) == data
        assert same(read_algorithm_traces(tmp_path / "t"), alg)


def test_fast_import_refuses_a_byte_it_does_not_read(tmp_path) -> None:
    """The bulk reader decodes only the steps; a byte changed anywhere else (here a letter of a
    node's name) makes the re-export differ, so the set goes to the checked reader."""
    from ccopt.sim.chakra_algo import fast_algorithm_traces

    alg = generate("allreduce", "ring", 4)
    write_algorithm_traces(tmp_path / "r", alg, MiB, 1.0)
    assert fast_algorithm_traces(tmp_path / "r") is not None
    path = tmp_path / "r.2.et"
    data = path.read_bytes()
    at = data.index(b"SEND_tb0_step")
    path.write_bytes(data[:at] + b"X" + data[at + 1 :])
    assert fast_algorithm_traces(tmp_path / "r") is None


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_fast_import_refuses_every_changed_byte(tmp_path, flip) -> None:
    """Every byte of a file changed (its low bit: a value; its top bit: where a varint ends),
    the fast reader gives no algorithm (the set then goes to the checked reader), or one that
    the checked reader also reads there and that exports to exactly the changed files (a
    step's offset changed to another valid one): the bytes it skips (names, parents,
    attributes, lengths, metadata) are proven as much as those it reads."""
    from ccopt.sim.chakra_algo import (
        _metadata,
        algorithm_from_traces,
        algorithm_traces,
        fast_algorithm_traces,
    )

    alg = generate("allreduce", "ring", 2)
    write_algorithm_traces(tmp_path / "r", alg, MiB, 1.0)
    files = [(tmp_path / f"r.{r}.et").read_bytes() for r in range(2)]
    path, data = tmp_path / "r.1.et", files[1]
    accepted = 0
    for at in range(len(data)):
        changed = data[:at] + bytes([data[at] ^ flip]) + data[at + 1 :]
        path.write_bytes(changed)
        fast = fast_algorithm_traces(tmp_path / "r")
        if fast is None:
            continue
        accepted += 1
        traces = read_trace_set(tmp_path / "r")
        assert same(fast, algorithm_from_traces(traces, tmp_path / "r"))
        head = _metadata(traces[0], "r.0.et")
        size = int(head["chunk_bytes"]) * max(g.in_chunks for g in fast.gpus)
        assert algorithm_traces(fast, size, float(head["local_mem_bw"])) == [files[0], changed]
    assert accepted < len(data) // 50
    path.write_bytes(data)
    assert same(fast_algorithm_traces(tmp_path / "r"), alg)


def test_varints_read_a_word_at_a_time_as_byte_by_byte() -> None:
    """The word-at-a-time varint reader agrees with the byte-by-byte one on every length from
    one byte to ten (negative numbers), also where a varint ends the array."""
    import numpy as np

    from ccopt.sim.chakra_algo import _varint, _varint_at, _varints_at

    values = [0, 1, 127, 128, 300, 16383, 16384, 1 << 21, (1 << 28) + 3, (1 << 35) + 5]
    values += [(1 << 49) + 7, (1 << 56) - 1, 1 << 56, 1 << 62, (1 << 63) - 1, -1, -5, -(1 << 63)]
    spelled = [_varint(v & (1 << 64) - 1) for v in values]
    at = np.cumsum([0] + [len(s) for s in spelled[:-1]])
    for pad in (0, 16):
        a = np.frombuffer(b"".join(spelled) + bytes(pad), np.uint8)
        value, end = _varints_at(a, at)
        assert value.tolist() == values
        assert end.tolist() == (at + [len(s) for s in spelled]).tolist()
        assert [x.tolist() for x in _varint_at(a, at)] == [value.tolist(), end.tolist()]


def test_rows_spell_one_value_and_negative_columns_as_varints() -> None:
    """A column of one value goes in a shape's template, spelled as protobuf spells it (a
    negative one in ten bytes), next to varying columns of every varint length."""
    import numpy as np

    from ccopt.sim import chakra_algo as ca

    varying = [1, 200, 3, -1, 1 << 40]
    for value in (-1, 5, 300, -7):
        one = np.broadcast_to(np.int64(value), (len(varying),))
        parts = ca.concat(
            [ca.constant(b"\x10", len(varying))],
            [ca.varints(one)],
            [ca.varints(np.array(varying))],
        )
        length = ca.total(parts)
        out = np.zeros(int(length.sum()), np.uint8)
        ca.write_rows(parts, out, np.cumsum(length) - length, ca.Scratch())
        spelled = [ca._varint(x & (1 << 64) - 1) for x in varying]
        assert out.tobytes() == b"".join(
            b"\x10" + ca._varint(value & (1 << 64) - 1) + s for s in spelled
        )
