"""Properties of ASTRA mode on drawn configurations: a collective never gets faster when its
size grows or a link's bandwidth shrinks, and the one-rank (symmetric) simulation gives the same
time as simulating every rank.

Sizes grow in whole multiples of `preferred-dataset-splits`: ASTRA-sim cuts a buffer into
chunks of size // splits and sends ceil(size / chunk) of them, so 5 bytes in 2 splits make three
2-byte chunks and take longer than 6 bytes in two 3-byte chunks - ccopt reproduces that too."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccopt.sim.astra import is_symmetric, simulate_collective
from ccopt.sim.network import network_from_dict
from ccopt.sim.system import system_from_dict

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def configurations(draw):
    dims = draw(st.integers(1, 2))
    topologies = draw(
        st.lists(
            st.sampled_from(["Ring", "Switch", "FullyConnected"]), min_size=dims, max_size=dims
        )
    )
    npus = draw(st.lists(st.sampled_from([2, 3, 4, 8]), min_size=dims, max_size=dims))
    kind = draw(st.sampled_from(COLLECTIVES))
    choices = ["ring", "direct", "direct3"]
    if kind != "all-to-all" and all(n & (n - 1) == 0 for n in npus):
        choices.append("halvingDoubling")
    impls = draw(st.lists(st.sampled_from(choices), min_size=dims, max_size=dims))
    net = {
        "topology": topologies,
        "npus_count": npus,
        "bandwidth": draw(
            st.lists(st.sampled_from([12.5, 25.0, 50.0, 100.0]), min_size=dims, max_size=dims)
        ),
        "latency": draw(
            st.lists(st.sampled_from([0.0, 10.0, 500.0]), min_size=dims, max_size=dims)
        ),
    }
    system = {
        "scheduling-policy": draw(st.sampled_from(["LIFO", "FIFO"])),
        "endpoint-delay": draw(st.integers(1, 30)),
        "active-chunks-per-dimension": draw(st.sampled_from([1, 2, 4])),
        "preferred-dataset-splits": draw(st.sampled_from([1, 2, 4])),
        "local-mem-bw": draw(st.sampled_from([50, 1600])),
        "collective-optimization": draw(st.sampled_from(["baseline", "localBWAware"])),
        **{f"{c}-implementation": impls for c in COLLECTIVES},
    }
    size = draw(st.integers(1, 1 << 20))
    return net, system, kind, size


def time_of(net: dict, system: dict, kind: str, size: int, symmetric=None) -> int:
    return simulate_collective(
        network_from_dict(net, "net"),
        system_from_dict(system, "sys"),
        kind,
        size,
        symmetric=symmetric,
    ).time_ns


@SETTINGS
@given(configurations(), st.integers(1, 1 << 18))
def test_time_never_decreases_when_size_grows(config, extra: int) -> None:
    net, system, kind, size = config
    splits = system["preferred-dataset-splits"]
    size, extra = size * splits, extra * splits
    assert time_of(net, system, kind, size + extra) >= time_of(net, system, kind, size)


def test_astra_sims_chunk_rounding_is_reproduced() -> None:
    net = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [12.5], "latency": [0.0]}
    system = {
        "endpoint-delay": 1,
        "preferred-dataset-splits": 2,
        "local-mem-bw": 50,
        "all-reduce-implementation": ["ring"],
    }
    assert time_of(net, system, "all-reduce", 6) < time_of(net, system, "all-reduce", 5)


@SETTINGS
@given(configurations(), st.sampled_from([0.5, 0.25, 0.1]), st.data())
def test_time_never_decreases_when_a_bandwidth_shrinks(config, factor: float, data) -> None:
    net, system, kind, size = config
    dim = data.draw(st.integers(0, len(net["bandwidth"]) - 1))
    slower = dict(
        net, bandwidth=[b * factor if i == dim else b for i, b in enumerate(net["bandwidth"])]
    )
    assert time_of(slower, system, kind, size) >= time_of(net, system, kind, size)


@SETTINGS
@given(configurations())
def test_symmetric_and_full_simulation_agree(config) -> None:
    net, system, kind, size = config
    if not is_symmetric(network_from_dict(net, "net"), system_from_dict(system, "sys"), kind):
        return
    assert time_of(net, system, kind, size, symmetric=True) == time_of(
        net, system, kind, size, symmetric=False
    )
