"""ASTRA-sim's network YAML and system JSON, read as ASTRA-sim reads them: its units and
rounding, its defaults, unknown system keys ignored, and bad values refused with file and key named."""

from __future__ import annotations

import pytest

from ccopt.sim.network import ConfigError, Network, NetworkDim, load_network, network_from_dict
from ccopt.sim.system import load_system, system_from_dict

RING = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50], "latency": [500]}


def test_message_cost_is_astra_sims() -> None:
    """1 MiB / 16 over 50 GB/s (GB = 2^30) plus one 500 ns hop, truncated: 1720 ns."""
    dim = NetworkDim("Ring", 16, 50.0, 500.0)
    assert dim.bytes_per_ns() == 50 * 2**30 / 1e9
    assert dim.message_ns(65536, 1) == 1720


@pytest.mark.parametrize(
    ("topology", "a", "b", "hops"),
    [
        ("Ring", 0, 1, 1),
        ("Ring", 0, 7, 1),
        ("Ring", 1, 5, 4),
        ("Ring", 6, 2, 4),
        ("Switch", 0, 5, 2),
        ("FullyConnected", 3, 6, 1),
    ],
)
def test_hops(topology: str, a: int, b: int, hops: int) -> None:
    assert NetworkDim(topology, 8, 1.0, 1.0).hops(a, b) == hops


def test_multi_dimensional_message_is_charged_on_first_differing_dimension() -> None:
    net = Network((NetworkDim("Ring", 4, 50.0, 500.0), NetworkDim("Switch", 2, 25.0, 100.0)))
    assert net.npus == 8 and net.coords(6) == (2, 1)
    assert net.send_ns(0, 4, 1000) == net.dims[1].message_ns(1000, 2)
    assert net.send_ns(0, 6, 1000) == net.dims[0].message_ns(1000, 2)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"npus_count": [1]}, "npus_count"),
        ({"bandwidth": [0]}, "bandwidth"),
        ({"latency": [-1]}, "latency"),
        ({"topology": ["Torus"]}, "topology"),
        ({"bandwidth": [1, 2]}, "bandwidth"),
        ({"latency": ["fast"]}, "latency"),
    ],
)
def test_bad_network_values_name_file_and_key(change: dict, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        network_from_dict({**RING, **change}, "net.yml")
    assert str(e.value).startswith(f"net.yml: error: '{key}'")


def test_missing_key_and_bad_yaml(tmp_path) -> None:
    with pytest.raises(ConfigError, match="'latency': missing"):
        network_from_dict({k: v for k, v in RING.items() if k != "latency"}, "net.yml")
    bad = tmp_path / "net.yml"
    bad.write_text("topology: [Ring\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_network(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_network(tmp_path / "absent.yml")


def test_unknown_network_keys_are_refused() -> None:
    """ASTRA-sim ignores them, but a misspelt key would leave its value unused silently."""
    with pytest.raises(ConfigError, match="'bandwith': unknown key .keys: topology, npus_count"):
        network_from_dict({**RING, "bandwith": [1]}, "n")


def test_duplicate_network_keys_are_refused(tmp_path) -> None:
    net = tmp_path / "net.yml"
    net.write_text(
        "topology: [Ring]\nnpus_count: [8]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [1]\n"
    )
    with pytest.raises(ConfigError, match=r"line 3\): duplicate key 'npus_count'"):
        load_network(net)


def test_system_defaults_are_astra_sims() -> None:
    config = system_from_dict({"all-reduce-implementation": ["ring"]}, "sys.json")
    assert (
        config.endpoint_delay,
        config.active_chunks_per_dimension,
        config.preferred_dataset_splits,
        config.collective_optimization,
    ) == (10, 1, 1, "baseline")


def test_system_reads_implementations_windows_and_custom_traces() -> None:
    config = system_from_dict(
        {
            "all-reduce-implementation": ["ring", "direct4", "oneHalvingDoubling"],
            "all-gather-implementation-custom": ["traces/ag"],
            "boost-mode": 1,
        },
        "sys.json",
    )
    ring, direct, one_hd = config.implementation("all-reduce")
    assert (direct.base, direct.window) == ("direct", 4)
    assert one_hd.single_ring and one_hd.base == "halvingDoubling"
    assert config.custom == {"all-gather": "traces/ag"}


def test_reduction_cost_truncates_each_pass() -> None:
    """3 x floor(size / (local-mem-bw * 1e9) * 1e9): 65536 B at 1600 GB/s -> 3 x 40."""
    config = system_from_dict({"local-mem-bw": 1600}, "s")
    assert config.reduction_ns(65536) == 120


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"all-reduce-implementation": ["tree"]}, "all-reduce-implementation"),
        ({"all-reduce-implementation": []}, "all-reduce-implementation"),
        ({"all-to-all-implementation": ["directX"]}, "all-to-all-implementation"),
        ({"scheduling-policy": "RANDOM"}, "scheduling-policy"),
        ({"collective-optimization": "fast"}, "collective-optimization"),
        ({"endpoint-delay": -1}, "endpoint-delay"),
        ({"active-chunks-per-dimension": 0}, "active-chunks-per-dimension"),
        ({"preferred-dataset-splits": 1.5}, "preferred-dataset-splits"),
        ({"local-mem-bw": "fast"}, "local-mem-bw"),
        ({"model-shared-bus": 1}, "model-shared-bus"),
        ({"roofline-enabled": 1}, "roofline-enabled"),
        ({"replay-only": 1}, "replay-only"),
        ({"local-reduction-delay": 3}, "local-reduction-delay"),
        # a key ASTRA-sim does not read either: a typo both would have ignored
        ({"endpoint_delay": 100000}, "endpoint_delay"),
        ({"unknown-key": 1}, "unknown-key"),
    ],
)
def test_bad_system_values_name_the_key(data: dict, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        system_from_dict(data, "sys.json")
    assert str(e.value).startswith(f"sys.json: error: '{key}'")


def test_bad_json_names_the_line(tmp_path) -> None:
    path = tmp_path / "sys.json"
    path.write_text('{\n "endpoint-delay": 1,\n}')
    with pytest.raises(ConfigError, match=r"sys.json: error: not valid JSON \(line 3\)"):
        load_system(path)


def test_a_system_key_ccopt_does_not_know_is_refused_with_the_likely_one() -> None:
    with pytest.raises(
        ConfigError, match="'endpoint_delay': unknown key .*did you mean 'endpoint-delay'"
    ):
        system_from_dict({"endpoint_delay": 5}, "sys.json")


def test_keys_astra_sim_reads_that_change_no_modelled_time_are_taken() -> None:
    config = system_from_dict(
        {
            "L": 0,
            "o": 0,
            "g": 0,
            "G": 0.0,
            "peak-perf": 900,
            "trace-enabled": 1,
            "local-reduction-delay": 1,
        },
        "sys.json",
    )
    assert config.endpoint_delay == 10


def test_a_system_key_given_twice_is_refused(tmp_path) -> None:
    """JSON keeps the last value of a key given twice: the first was dropped without a word."""
    path = tmp_path / "sys.json"
    path.write_text('{"endpoint-delay": 10, "endpoint-delay": 99999}')
    with pytest.raises(ConfigError, match="sys.json: error: 'endpoint-delay': given twice"):
        load_system(path)
