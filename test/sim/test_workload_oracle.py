"""`ccopt-sim --workload` equals ASTRA-sim c459ab6 on whole Chakra workloads: compute (GPU and
CPU, zero-length nodes skipped), native collectives on some or all dimensions, sends and
receives between rank pairs, and all-reduces run from a custom-collective trace - all drawn by
`make_astra_oracle.py` and recorded from ASTRA-sim's analytical backends (congestion-unaware,
and congestion-aware on 1-D networks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from make_astra_oracle import workload_traces

from ccopt.sim.chakra import write_trace_set
from ccopt.sim.chakra_sim import simulate_workload
from ccopt.sim.network import network_from_dict
from ccopt.sim.system import system_from_dict

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples" / "astra"
CASES = json.loads((HERE / "workload_oracle.json").read_text())["cases"]


def case_id(case: dict) -> str:
    shape = "x".join(map(str, case["network"]["npus_count"]))
    kinds = "".join(n["type"][0] for n in case["nodes"])
    custom = "-custom" if "all-reduce-implementation-custom" in case["system"] else ""
    return f"{shape}-{kinds}{custom}-{case['backend']}-{case['time_ns']}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_workload_equals_astra_sim(case: dict, tmp_path) -> None:
    write_trace_set(tmp_path / "w", workload_traces(case))
    network = network_from_dict(case["network"], "net.yml")
    # the custom trace prefix is found beside the system file, as a path relative to it
    system = system_from_dict(case["system"], str(EXAMPLES / "sys.json"))
    report = simulate_workload(network, system, tmp_path / "w", congestion=case["backend"])
    assert report.time_ns == case["time_ns"]


def test_workload_table_covers_what_the_workload_layer_does() -> None:
    kinds = {n["type"] for c in CASES for n in c["nodes"]}
    assert kinds == {"COMP", "COLL", "PAIR"}
    assert any("all-reduce-implementation-custom" in c["system"] for c in CASES)
    assert any(not all(n.get("dims", [True])) for c in CASES for n in c["nodes"])
    assert any(n.get("cpu") for c in CASES for n in c["nodes"])
    assert any(n.get("us") == 0 for c in CASES for n in c["nodes"])
    assert {c["backend"] for c in CASES} == {"aware", "unaware"}
    assert len(CASES) >= 100
