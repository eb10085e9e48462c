"""`ccopt-sim` (ASTRA-sim mode) and `ccopt-et` as a user runs them: the spelled-out flags, the
`time: <int> ns` last line, the JSON keys, errors with file and key and no traceback, and the
README's commands word for word."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from cli_support import ROOT, assert_user_error, ccopt, run_tool

ASTRA = ROOT / "examples" / "astra"
NET16, RING = ASTRA / "ring_16.yml", ASTRA / "ring.json"


def ccopt_sim(*args: str | Path):
    return run_tool("ccopt.tools.ccopt_sim", *args)


def ccopt_et(*args: str | Path):
    return run_tool("ccopt.tools.ccopt_et", *args)


def test_collective_table_ends_with_time() -> None:
    done = ccopt_sim(
        "--network", NET16, "--system", RING, "--collective", "all-reduce", "--size", "1048576"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "time: 53431 ns"


def test_collective_json_has_time_ns() -> None:
    done = ccopt_sim(
        "--network",
        NET16,
        "--system",
        RING,
        "--collective",
        "reduce-scatter",
        "--size",
        "1048576",
        "--json",
    )
    report = json.loads(done.stdout)
    assert isinstance(report["time_ns"], int) and report["collective"] == "reduce-scatter"


def test_any_one_input_can_be_standard_input() -> None:
    """`-` reads the network, the system, the machine or the algorithm (XML or IR, told apart by
    its first character) from stdin; two at once are refused."""
    xml = ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml"
    ring8 = ASTRA / "ring_8.yml"
    base = ["--size", "1000", "--json"]
    on_files = ccopt_sim("--network", ring8, "--system", RING, *base, xml)
    expected = json.loads(on_files.stdout)["time_ns"]
    cases = [
        (["--network", ring8, "--system", RING, *base, "-"], xml),
        (["--network", "-", "--system", RING, *base, xml], ring8),
        (["--network", ring8, "--system", "-", *base, xml], RING),
    ]
    for args, stdin in cases:
        done = run_tool("ccopt.tools.ccopt_sim", *args, stdin=stdin.read_text())
        assert done.returncode == 0, (args, done.stderr)
        assert json.loads(done.stdout)["time_ns"] == expected
    machine = ROOT / "sim" / "machines" / "dgx-a100.yml"
    sgd = ROOT / "examples" / "sgd.mlir"
    by_name = ccopt_sim(sgd, "--machine", "dgx-a100", "--json")
    piped = run_tool("ccopt.tools.ccopt_sim", sgd, "--machine", "-", "--json",
                     stdin=machine.read_text())  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["step_time_ns"] == json.loads(by_name.stdout)["step_time_ns"]
    two = ccopt_sim("--network", "-", "--system", "-", "--collective", "all-reduce", "--size", "8")
    assert two.returncode == 2 and "only one input can be standard input" in two.stderr


def test_full_simulation_flag_gives_the_same_time() -> None:
    args = [
        "--network",
        NET16,
        "--system",
        RING,
        "--collective",
        "all-gather",
        "--size",
        "4096",
        "--json",
    ]
    assert (
        json.loads(ccopt_sim(*args).stdout)["time_ns"]
        == json.loads(ccopt_sim(*args, "--full").stdout)["time_ns"]
    )


def test_congestion_aware_backend() -> None:
    done = ccopt_sim(
        "--network",
        NET16,
        "--system",
        RING,
        "--collective",
        "all-reduce",
        "--size",
        "1048576",
        "--congestion",
        "aware",
        "--json",
    )
    report = json.loads(done.stdout)
    assert report["congestion"] == "aware" and report["time_ns"] == 53431


def test_workload_json() -> None:
    done = ccopt_sim(
        "--network",
        ASTRA / "ring_8.yml",
        "--system",
        ASTRA / "custom_ring.json",
        "--workload",
        ASTRA / "all_reduce_8",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["time_ns"] == 90174


def test_bad_network_value_names_file_and_key(tmp_path) -> None:
    net = tmp_path / "net.yml"
    net.write_text("topology: [Ring]\nnpus_count: [4]\nbandwidth: [0]\nlatency: [1]\n")
    done = ccopt_sim(
        "--network", net, "--system", RING, "--collective", "all-reduce", "--size", "64"
    )
    assert_user_error(done, "net.yml: error: 'bandwidth'")


def test_bad_system_value_names_file_and_key(tmp_path) -> None:
    sys_file = tmp_path / "sys.json"
    sys_file.write_text('{"all-reduce-implementation": ["butterfly"]}')
    done = ccopt_sim(
        "--network", NET16, "--system", sys_file, "--collective", "all-reduce", "--size", "64"
    )
    assert_user_error(done, "sys.json: error: 'all-reduce-implementation'", "butterfly")


def test_missing_workload_is_named(tmp_path) -> None:
    done = ccopt_sim("--network", NET16, "--system", RING, "--workload", tmp_path / "none")
    assert_user_error(done, "none.0.et: error: cannot read")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "needs --network"),
        (["--network", "n.yml", "--system", "s.json"], "either --collective"),
        (["--network", "n.yml", "--system", "s.json", "--collective", "all-reduce"], "--size"),
        (["prog.mlir"], "needs --machine"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    done = ccopt_sim(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_ccopt_et_dumps_typed_attributes() -> None:
    done = ccopt_et(ASTRA / "custom_ring_allreduce", "--rank", "0")
    (rank,) = json.loads(done.stdout)
    assert rank["rank"] == 0 and rank["metadata"]["attr"]
    send = rank["nodes"][0]
    assert send["type"] == "COMM_SEND_NODE"
    assert send["attributes"]["comm_dst"] == 1 and send["attributes"]["comm_size"] == 131072


def test_ccopt_et_whole_set_and_errors(tmp_path) -> None:
    assert len(json.loads(ccopt_et(ASTRA / "all_reduce_8").stdout)) == 8
    bad = tmp_path / "x.0.et"
    bad.write_bytes(b"\xff\xff\xff")
    assert_user_error(ccopt_et(bad), "x.0.et: error")


def readme_commands() -> list[str]:
    """The ccopt-sim / ccopt-et lines of README's ASTRA-sim section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Timing collectives as ASTRA-sim does", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    return [line for b in blocks for line in b.splitlines() if line.startswith("ccopt-")]


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_works_as_written(command: str) -> None:
    tool, *args = shlex.split(command)
    module = {"ccopt-sim": "ccopt.tools.ccopt_sim", "ccopt-et": "ccopt.tools.ccopt_et"}[tool]
    done = run_tool(module, *args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_collective_from_a_custom_trace() -> None:
    """--collective runs the trace a system file names in *-implementation-custom."""
    done = ccopt_sim(
        "--network",
        ASTRA / "ring_8.yml",
        "--system",
        ASTRA / "custom_ring.json",
        "--collective",
        "all-reduce",
        "--size",
        "1048576",
    )
    assert done.stdout.splitlines()[-1] == "time: 90174 ns"
    missing = ccopt_sim(
        "--network",
        ASTRA / "ring_8.yml",
        "--system",
        ASTRA / "custom_ring.json",
        "--collective",
        "reduce-scatter",
        "--size",
        "8",
    )
    assert_user_error(missing, "custom_ring.json: error: 'reduce-scatter-implementation': missing")


def test_a_trace_set_is_timed_as_its_traces_say(tmp_path: Path) -> None:
    """Given as PREFIX.0.et, the set was read back into an algorithm and its COMP nodes priced
    from the system's local-mem-bw: traces written with other COMP durations timed otherwise
    than as the custom collective ASTRA-sim runs from the same files."""
    xml = ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml"
    prefix = tmp_path / "z"
    written = ccopt(xml, "-t", "chakra{size=1048576 local_mem_bw=0}", "-o", prefix)
    assert written.returncode == 0, written.stderr
    system = tmp_path / "sys.json"
    system.write_text(
        json.dumps({"all-reduce-implementation-custom": [str(prefix)], "local-mem-bw": 50})
    )
    net = ASTRA / "ring_8.yml"
    custom = ccopt_sim(
        "--network", net, "--system", system, "--collective", "all-reduce", "--size", "1048576"
    )
    traces = ccopt_sim(
        f"{prefix}.0.et", "--network", net, "--system", system, "--size", "1048576", "--json"
    )
    assert custom.returncode == 0 and traces.returncode == 0, custom.stderr + traces.stderr
    report = json.loads(traces.stdout)
    assert custom.stdout.splitlines()[-1] == f"time: {report['time_ns']} ns"
    assert report["traces"] == str(prefix)
    assert report["time_ns"] < 90174  # (the same ring with COMP at 50 GB/s, README's figure)


def test_an_output_naming_a_file_of_the_set_means_its_prefix(tmp_path: Path) -> None:
    """`-o DIR/a.0.et` wrote `a.0.et.0.et`, `a.0.et.1.et`, ..."""
    xml = ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml"
    written = ccopt(xml, "-t", "chakra{size=1048576}", "-o", tmp_path / "a.0.et")
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"a.{r}.et" for r in range(8)]
