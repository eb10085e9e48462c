"""User errors in ccopt-sim's ASTRA-sim mode, ccopt-et and `-t chakra` found by a sweep: each
ends in one line naming the file, field or option and exit status 1, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import ROOT, assert_user_error, run_tool

from ccopt.sim.astra_engine import RankSystem
from ccopt.sim.chakra import make_node, write_trace_set

ASTRA = ROOT / "examples" / "astra"
RING8 = ASTRA / "ring_8.yml"


def ccopt_sim(*args: str | Path):
    return run_tool("ccopt.tools.ccopt_sim", *args)


def collective(system: Path, kind: str = "all-reduce", size: str = "1048576"):
    return ccopt_sim("--network", RING8, "--system", system, "--collective", kind, "--size", size)


def test_reduction_without_local_mem_bw_is_refused(tmp_path) -> None:
    """ASTRA-sim divides by local-mem-bw to time a reduction; without it there is no answer."""
    system = tmp_path / "s.json"
    system.write_text('{"all-reduce-implementation": ["ring"]}')
    assert_user_error(collective(system), "s.json: error: 'local-mem-bw'", "missing or 0")
    system.write_text('{"all-reduce-implementation": ["ring"], "local-mem-bw": 0}')
    assert_user_error(collective(system), "s.json: error: 'local-mem-bw'")


def test_all_gather_needs_no_local_mem_bw(tmp_path) -> None:
    system = tmp_path / "s.json"
    system.write_text('{"all-gather-implementation": ["ring"]}')
    done = collective(system, "all-gather")
    assert done.returncode == 0, done.stderr


def workload(prefix: Path, node_of_rank3, ranks: int = 8) -> Path:
    """An 8-rank workload: one compute node per rank, and `node_of_rank3` on rank 3."""
    nodes = [[make_node(0, "work", "COMP_NODE", duration_micros=1)] for _ in range(ranks)]
    nodes[3] = [node_of_rank3]
    write_trace_set(prefix, nodes)
    return prefix


def run_workload(prefix: Path):
    return ccopt_sim("--network", RING8, "--system", ASTRA / "ring.json", "--workload", prefix)


@pytest.mark.parametrize("peer", [99, -1, 3])
def test_send_to_a_rank_outside_the_network_or_to_itself(tmp_path, peer: int) -> None:
    send = make_node(0, "send", "COMM_SEND_NODE", comm_dst=peer, comm_size=64, comm_tag=1)
    done = run_workload(workload(tmp_path / "w", send))
    assert_user_error(done, "w.3.et: error: node 0 (send): 'comm_dst'", "8-rank network")


def test_receive_from_a_rank_outside_the_network(tmp_path) -> None:
    recv = make_node(0, "recv", "COMM_RECV_NODE", comm_src=8, comm_size=64, comm_tag=1)
    done = run_workload(workload(tmp_path / "w", recv))
    assert_user_error(done, "w.3.et: error: node 0 (recv): 'comm_src' 8")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"comm_type": "all-reduce", "comm_size": -5}, "'comm_size' is negative (-5)"),
        ({"comm_type": "all-reduce"}, "no 'comm_size' attribute"),
        ({"comm_size": 1024}, "no 'comm_type' attribute"),
        (
            {"comm_type": "all-reduce", "comm_size": 1024, "involved_dim": [True, True]},
            "'involved_dim' involves dimension 1, which the 1-dimensional network does not have",
        ),
    ],
)
def test_collective_fields_are_not_defaulted(tmp_path, fields: dict, message: str) -> None:
    """Chakra's feeder throws on an absent comm_size or comm_type; ASTRA-sim reads a negative
    size as a huge unsigned one."""
    coll = make_node(0, "ar", "COMM_COLL_NODE", **fields)
    done = run_workload(workload(tmp_path / "w", coll))
    assert_user_error(done, "w.3.et: error: node 0 (ar): " + message)


def test_trace_files_beyond_the_network_are_refused(tmp_path) -> None:
    prefix = workload(tmp_path / "w", make_node(0, "work", "COMP_NODE", duration_micros=1), 9)
    assert_user_error(run_workload(prefix), "w.8.et: error: the workload has more trace files")


@pytest.mark.parametrize(
    "key", ["endpoint-delay", "preferred-dataset-splits", "active-chunks-per-dimension"]
)
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_integer_keys_are_refused(tmp_path, key: str, value: str) -> None:
    system = tmp_path / "s.json"
    system.write_text(f'{{"all-reduce-implementation": ["ring"], "{key}": {value}}}')
    assert_user_error(collective(system), f"s.json: error: '{key}': expected an integer")


@pytest.mark.parametrize("which", ["--network", "--system"])
def test_binary_configuration_file_is_refused(tmp_path, which: str) -> None:
    image = tmp_path / "x.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    files = {"--network": RING8, "--system": ASTRA / "ring.json", which: image}
    options = [a for pair in files.items() for a in pair]
    done = ccopt_sim(*options, "--collective", "all-reduce", "--size", "64")
    assert_user_error(done, "x.png: error: not UTF-8 text")


class CountedStream:
    """A stream that counts how often its priority is read."""

    reads = 0

    def __init__(self, priority: int, initialized: bool = False):
        self._priority, self.initialized = priority, initialized

    @property
    def priority(self) -> int:
        CountedStream.reads += 1
        return self._priority


def test_inserting_a_stream_reads_few_priorities() -> None:
    """Every dataset split is a stream: 100000 splits ran for minutes when each insertion
    read every waiting stream's priority."""
    queue = [CountedStream(0, True), *(CountedStream(0) for _ in range(20000))]
    queue += [CountedStream(-1) for _ in range(100)]
    CountedStream.reads = 0
    new = CountedStream(0)
    RankSystem.insert_stream(queue, new)  # type: ignore[arg-type]
    assert CountedStream.reads < 64
    assert queue.index(new) == 20001


def ccopt_et(*args: str | Path, stdin: str | None = None):
    return run_tool("ccopt.tools.ccopt_et", *args, stdin=stdin)


def copy_set(folder: Path, skip: int | None = None) -> Path:
    """ASTRA-sim's shipped 8-rank all-reduce workload, without rank `skip`."""
    for rank in range(8):
        if rank != skip:
            name = f"all_reduce_8.{rank}.et"
            (folder / name).write_bytes((ASTRA / name).read_bytes())
    return folder / "all_reduce_8"


def test_ccopt_et_names_a_missing_rank(tmp_path) -> None:
    done = ccopt_et(copy_set(tmp_path, skip=3))
    assert_user_error(done, "all_reduce_8.3.et: error: rank 3 is missing from the trace set")


def test_ccopt_et_rank_of_one_file_must_match(tmp_path) -> None:
    prefix = copy_set(tmp_path)
    assert_user_error(ccopt_et(f"{prefix}.3.et", "--rank", "5"), "--rank 5", "is one file")
    (shown,) = json.loads(ccopt_et(f"{prefix}.3.et", "--rank", "3").stdout)
    assert shown["rank"] == 3


def test_ccopt_et_refuses_a_file_that_is_not_a_trace() -> None:
    done = ccopt_et(ROOT / "README.md")
    assert_user_error(done, "README.md: error: not a Chakra trace: give a .et file or the prefix")


def test_ccopt_et_reads_one_file_from_standard_input() -> None:
    data = (ASTRA / "all_reduce_8.2.et").read_bytes()
    command = [sys.executable, "-m", "ccopt.tools.ccopt_et", "-"]
    done = subprocess.run(command, input=data, capture_output=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (shown,) = json.loads(done.stdout)
    assert shown["file"] == "-" and shown["nodes"]
    assert_user_error(ccopt_et("-", "--rank", "1", stdin=""), "standard input holds one file")


ALGORITHM = [
    ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml",
    "--network",
    RING8,
    "--system",
    ASTRA / "custom_ring.json",
    "--size",
    "1048576",
]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--congestion", "aware"], "--congestion: not used when timing an algorithm"),
        (["--full"], "--full: not used when timing an algorithm"),
        (["--trace", "t.json"], "--trace: not used when timing an algorithm"),
        (["--plot", "t.png"], "--plot: not used when timing an algorithm"),
        (["--mesh", "dp=8"], "--mesh: not used when timing an algorithm"),
        (["-p", "cse"], "-p: not used when timing an algorithm"),
        (["--entry", "f"], "--entry: not used when timing an algorithm"),
        (["--body-passes", "-3"], "--body-passes: expected a whole number >= 0, got '-3'"),
    ],
)
def test_algorithm_form_refuses_options_it_does_not_use(extra: list[str], message: str) -> None:
    done = ccopt_sim(*ALGORITHM, *extra)
    assert done.returncode == 2 and message in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workload", ASTRA / "all_reduce_8", "--size", "64"], "--size: not used when running"),
        (["--workload", ASTRA / "all_reduce_8", "--full"], "--full: not used when running"),
        (["--workload", ASTRA / "all_reduce_8", "--body-passes", "2"], "--body-passes: not used"),
        (
            ["--collective", "all-reduce", "--size", "64", "--body-passes", "2"],
            "--body-passes: not used when timing a collective",
        ),
    ],
)
def test_astra_forms_refuse_options_they_do_not_use(extra: list, message: str) -> None:
    done = ccopt_sim("--network", RING8, "--system", ASTRA / "custom_ring.json", *extra)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_program_form_refuses_body_passes() -> None:
    program = ROOT / "examples" / "megatron_row_parallel.mlir"
    done = ccopt_sim(program, "--machine", "dgx-a100", "--body-passes", "3")
    assert done.returncode == 2 and "--body-passes: ASTRA-sim mode" in done.stderr


def test_collective_form_keeps_congestion_and_full() -> None:
    args = ["--collective", "all-reduce", "--size", "1048576", "--full", "--congestion", "aware"]
    done = ccopt_sim("--network", RING8, "--system", ASTRA / "custom_ring.json", *args)
    assert done.returncode == 0, done.stderr


def test_machine_network_section_refuses_unknown_and_duplicate_keys(tmp_path) -> None:
    preset = (ROOT / "sim" / "machines" / "dgx-a100.yml").read_text()
    program = ROOT / "examples" / "megatron_row_parallel.mlir"
    misspelt = tmp_path / "m.yml"
    misspelt.write_text(preset.replace("  latency:", "  bandwith: [1, 2]\n  latency:"))
    done = ccopt_sim(program, "--machine", misspelt)
    assert_user_error(done, "m.yml: network: error: 'bandwith': unknown key")
    twice = tmp_path / "t.yml"
    twice.write_text(preset.replace("gpu:", "nic-sharing: [1, 1]\ngpu:", 1))
    assert_user_error(ccopt_sim(program, "--machine", twice), "duplicate key 'nic-sharing'")


def test_network_file_refuses_unknown_and_duplicate_keys(tmp_path) -> None:
    net = tmp_path / "n.yml"
    net.write_text(
        "topology: [Ring]\nnpus_count: [8]\nbandwith: [1]\nbandwidth: [50]\nlatency: [5]\n"
    )
    done = ccopt_sim(
        "--network",
        net,
        "--system",
        ASTRA / "ring.json",
        "--collective",
        "all-reduce",
        "--size",
        "64",
    )
    assert_user_error(done, "n.yml: error: 'bandwith': unknown key (keys: topology, npus_count")


@pytest.mark.parametrize(
    ("key", "value"),
    [("intra-dimension-scheduling", "smallestFirst"), ("inter-dimension-scheduling", "themis")],
)
def test_schedulers_other_than_the_default_are_refused(tmp_path, key: str, value: str) -> None:
    system = tmp_path / "s.json"
    system.write_text(f'{{"all-reduce-implementation": ["ring"], "{key}": "{value}"}}')
    assert_user_error(collective(system), f"s.json: error: '{key}': '{value}' is not modelled")


def test_halving_doubling_hang_names_the_dimension(tmp_path) -> None:
    net, system = tmp_path / "r6.yml", tmp_path / "hd.json"
    net.write_text("topology: [Ring]\nnpus_count: [6]\nbandwidth: [50]\nlatency: [500]\n")
    system.write_text('{"all-reduce-implementation": ["halvingDoubling"], "local-mem-bw": 50}')
    done = ccopt_sim(
        "--network", net, "--system", system, "--collective", "all-reduce", "--size", "1048576"
    )
    assert_user_error(done, "halvingDoubling needs a power-of-two dimension; dimension 0 has 6")


def test_size_beyond_uint64_is_refused() -> None:
    done = collective(ASTRA / "ring.json", size=str(2**64))
    assert done.returncode == 2 and "from 1 to 2^64-1" in done.stderr


def test_entry_may_be_spelt_with_its_at_sign() -> None:
    program = ROOT / "examples" / "megatron_row_parallel.mlir"
    done = ccopt_sim(program, "--machine", "dgx-a100", "--entry", "@row_parallel")
    assert done.returncode == 0, done.stderr
    done = ccopt_sim(program, "--machine", "dgx-a100", "--entry", "@nope")
    assert_user_error(done, "@nope")
    assert "@@" not in done.stderr


def test_an_algorithm_with_machine_is_told_to_use_astra_mode() -> None:
    xml = ROOT / "examples" / "algorithms" / "allreduce_ring_4.xml"
    done = ccopt_sim(xml, "--machine", "dgx-a100")
    assert done.returncode == 2 and "is an algorithm: time it with --network" in done.stderr


def test_a_trace_with_machine_is_told_to_use_astra_mode(tmp_path) -> None:
    """A .et file given with --machine was read as program text: "not UTF-8 text"."""
    trace = tmp_path / "ring.0.et"
    trace.write_bytes(b"\x0a\x80\xff")
    done = ccopt_sim(trace, "--machine", "dgx-a100")
    assert (
        done.returncode == 2 and "is a Chakra trace: time an algorithm's trace set" in done.stderr
    )


def test_body_passes_on_an_algorithm_without_a_body_are_refused() -> None:
    """--body-passes prices `fn` steps: on a plain ring it was accepted and did nothing."""
    done = ccopt_sim(*ALGORITHM, "--body-passes", "7")
    assert_user_error(
        done, "--body-passes prices a fused body's fn steps, and allreduce_ring has none"
    )
