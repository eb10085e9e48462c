"""ccopt's ASTRA mode equals ASTRA-sim c459ab6 to the nanosecond.

The published figures (collectives.md, issue 11) and a table of ASTRA-sim's own answers on
configurations drawn by `make_astra_oracle.py` (topologies, sizes, every implementation, chunking,
multi-dimensional baseline and localBWAware, both analytical backends) are checked for exact
equality; symmetric (one-rank) and full simulation must agree.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ccopt.sim.astra import simulate_collective
from ccopt.sim.astra_congestion import simulate_collective_aware
from ccopt.sim.network import ConfigError, network_from_dict
from ccopt.sim.system import system_from_dict

HERE = Path(__file__).resolve().parent
ORACLE = json.loads((HERE / "astra_oracle.json").read_text())["cases"]


def network(topology: str, npus: int, bandwidth: float = 50.0, latency: float = 500.0):
    return network_from_dict(
        {
            "topology": [topology],
            "npus_count": [npus],
            "bandwidth": [bandwidth],
            "latency": [latency],
        },
        "net.yml",
    )


def system(implementation: str, **overrides):
    data = {
        "scheduling-policy": "LIFO",
        "endpoint-delay": 1,
        "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 1,
        "local-mem-bw": 1600,
        **{
            f"{c}-implementation": [implementation]
            for c in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
        },
    }
    data.update(overrides)
    return system_from_dict(data, "sys.json")


@pytest.mark.parametrize(
    ("topology", "npus", "implementation", "expected"),
    [
        ("Ring", 16, "ring", 53431),
        ("Ring", 16, "halvingDoubling", 52477),
        ("FullyConnected", 16, "direct", 3563),
        ("Ring", 256, "ring", 295801),
        ("Ring", 1024, "ring", 1063921),
        ("Ring", 4096, "ring", 4135951),
    ],
)
def test_published_all_reduce_figures(topology, npus, implementation, expected) -> None:
    result = simulate_collective(
        network(topology, npus), system(implementation), "all-reduce", 1 << 20
    )
    assert result.time_ns == expected


def test_shipped_reduce_scatter_example_gives_22240() -> None:
    """ASTRA-sim's examples: Ring_4npus.yml, Ring_4chunks.json, reduce_scatter 4npus_1MB."""
    sys_config = system(
        "ring",
        **{
            "endpoint-delay": 10,
            "preferred-dataset-splits": 4,
            "collective-optimization": "localBWAware",
        },
    )
    result = simulate_collective(network("Ring", 4), sys_config, "reduce-scatter", 1 << 20)
    assert (result.time_ns, result.chunks) == (22240, 4)


def case_id(case: dict) -> str:
    net = case["network"]
    shape = "x".join(f"{t[0]}{n}" for t, n in zip(net["topology"], net["npus_count"], strict=True))
    impl = ",".join(case["system"][f"{case['collective']}-implementation"])
    return f"{case['collective']}-{shape}-{impl}-{case['size']}-{case['backend']}"


@pytest.mark.parametrize("case", ORACLE, ids=case_id)
def test_equals_astra_sim_on_oracle_case(case: dict) -> None:
    net = network_from_dict(case["network"], "net.yml")
    sys_config = system_from_dict(case["system"], "sys.json")
    if case["backend"] == "aware":
        result = simulate_collective_aware(net, sys_config, case["collective"], case["size"])
    else:
        result = simulate_collective(net, sys_config, case["collective"], case["size"])
    assert result.time_ns == case["time_ns"]


def test_oracle_table_covers_the_configuration_space() -> None:
    """The fixture must keep exercising what the issue lists, not drift to one corner."""
    implementations = {
        i
        for c in ORACLE
        for k, v in c["system"].items()
        if k.endswith("-implementation")
        for i in v
    }
    assert {
        "ring",
        "direct",
        "direct2",
        "halvingDoubling",
        "doubleBinaryTree",
        "oneRing",
        "oneDirect",
    } <= implementations
    assert {c["collective"] for c in ORACLE} == {
        "all-reduce",
        "reduce-scatter",
        "all-gather",
        "all-to-all",
    }
    assert {len(c["network"]["topology"]) for c in ORACLE} == {1, 2, 3}
    assert {c["system"].get("collective-optimization", "baseline") for c in ORACLE} == {
        "baseline",
        "localBWAware",
    }
    assert {c["backend"] for c in ORACLE} == {"aware", "unaware"}
    assert len(ORACLE) >= 200


def ranks(case: dict) -> int:
    return math.prod(case["network"]["npus_count"])


@pytest.mark.parametrize(
    "case", [c for c in ORACLE if c["backend"] == "unaware" and ranks(c) <= 64][:60], ids=case_id
)
def test_full_simulation_agrees_with_symmetric(case: dict) -> None:
    net = network_from_dict(case["network"], "net.yml")
    sys_config = system_from_dict(case["system"], "sys.json")
    full = simulate_collective(net, sys_config, case["collective"], case["size"], symmetric=False)
    assert full.time_ns == case["time_ns"]


def test_halving_doubling_has_no_all_to_all() -> None:
    with pytest.raises(ConfigError, match="all-to-all-implementation"):
        simulate_collective(network("Ring", 8), system("halvingDoubling"), "all-to-all", 4096)


def test_double_binary_tree_needs_a_power_of_two() -> None:
    with pytest.raises(ConfigError, match="power-of-two"):
        simulate_collective(network("Ring", 6), system("doubleBinaryTree"), "all-reduce", 4096)


def test_endpoint_delay_zero_is_refused_as_astra_sim_aborts() -> None:
    with pytest.raises(ConfigError, match="endpoint-delay"):
        simulate_collective(
            network("Ring", 4), system("ring", **{"endpoint-delay": 0}), "all-reduce", 4096
        )


def test_congestion_aware_backend_is_one_dimensional() -> None:
    net = network_from_dict(
        {
            "topology": ["Ring", "Ring"],
            "npus_count": [2, 2],
            "bandwidth": [1, 1],
            "latency": [1, 1],
        },
        "net2d.yml",
    )
    with pytest.raises(ConfigError, match="net2d.yml: error: 'topology': .*1-D"):
        simulate_collective_aware(net, system("ring"), "all-reduce", 64)


def test_congestion_aware_backend_queues_messages_on_a_shared_link() -> None:
    """Direct all-to-all on a 4-ring: the two-hop messages share links with the one-hop ones,
    so the congestion-aware backend is slower than the congestion-unaware one."""
    net, sys_config = network("Ring", 4), system("direct")
    aware = simulate_collective_aware(net, sys_config, "all-to-all", 1 << 20).time_ns
    unaware = simulate_collective(net, sys_config, "all-to-all", 1 << 20).time_ns
    assert aware > unaware


def test_progress_reporter_hears_growing_event_counts(monkeypatch) -> None:
    from ccopt.sim import astra_engine

    heard: list[tuple[int, int]] = []
    monkeypatch.setattr(astra_engine, "PROGRESS_EVERY", 50)
    token = astra_engine.PROGRESS.set(lambda events, now: heard.append((events, now)))
    try:
        result = simulate_collective(
            network("Ring", 8), system("ring"), "all-reduce", 1 << 20, symmetric=False
        )
    finally:
        astra_engine.PROGRESS.reset(token)
    assert len(heard) > 3 and heard == sorted(heard)
    assert heard[-1][1] <= result.time_ns
