"""Regenerate `astra_oracle.json`: ASTRA-sim c459ab6's answers on configurations of our own.

Not a test: it needs an ASTRA-sim build (see ../shared/reference/astra-sim-oracle.md), which CI
never has. Each case is a network, a system file and one collective (written as a one-node
Chakra workload per rank with ccopt's own trace writer); the recorded time is the largest
`sys[i] finished, T cycles`. Cases are drawn from a fixed seed, so a rerun gives the same table.

    python test/sim/make_astra_oracle.py --astra-sim .oracle/src/build/astra_analytical/build/bin
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
SHAPES = [
    ["Ring"],
    ["Switch"],
    ["FullyConnected"],
    ["Ring", "Switch"],
    ["Switch", "Ring"],
    ["FullyConnected", "Ring"],
    ["Ring", "Ring"],
    ["Ring", "FullyConnected", "Switch"],
]
SIZES_1D = [2, 3, 4, 5, 7, 8, 16, 32]
SIZES_ND = [2, 3, 4, 8]


def power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


def implementation(rng: random.Random, kind: str, nodes: int) -> str:
    options = ["ring", "direct", "direct2"]
    if kind != "all-to-all" and power_of_two(nodes):
        options.append("halvingDoubling")
    if kind == "all-reduce" and power_of_two(nodes):
        options.append("doubleBinaryTree")
    return rng.choice(options)


def draw_case(rng: random.Random, index: int) -> dict:
    shape = rng.choice(SHAPES)
    npus = [rng.choice(SIZES_1D if len(shape) == 1 else SIZES_ND) for _ in shape]
    kind = COLLECTIVES[index % len(COLLECTIVES)]
    one = rng.random() < 0.12
    impls = (
        [rng.choice(["oneRing", "oneDirect"])]
        if one
        else [implementation(rng, kind, n) for n in npus]
    )
    system = {
        "scheduling-policy": rng.choice(["LIFO", "FIFO"]),
        "endpoint-delay": rng.choice([1, 1, 10, 25]),
        "active-chunks-per-dimension": rng.choice([1, 1, 2, 4]),
        "preferred-dataset-splits": rng.choice([1, 1, 2, 4, 8]),
        "local-mem-bw": rng.choice([50, 1600, 333.3]),
        "collective-optimization": rng.choice(["baseline", "localBWAware"]),
    }
    for c in COLLECTIVES:
        system[f"{c}-implementation"] = impls if c == kind else ["ring"] * len(impls)
    return {
        "network": {
            "topology": shape,
            "npus_count": npus,
            "bandwidth": [rng.choice([25.0, 50.0, 100.0, 37.5]) for _ in shape],
            "latency": [rng.choice([0.0, 100.0, 500.0, 700.5]) for _ in shape],
        },
        "system": system,
        "collective": kind,
        "size": rng.choice([1000, 4096, 65536, 1 << 20, 3_000_007, 16 << 20]),
        "backend": "aware" if len(shape) == 1 and rng.random() < 0.2 else "unaware",
    }


def reference_cases() -> list[dict]:
    """The ring figures of issue 11 and collectives.md, re-measured here."""
    out = []
    for topology, n, impl in [
        ("Ring", 16, "ring"),
        ("Ring", 16, "halvingDoubling"),
        ("FullyConnected", 16, "direct"),
        ("Ring", 256, "ring"),
        ("Ring", 1024, "ring"),
    ]:
        system = {
            "scheduling-policy": "LIFO",
            "endpoint-delay": 1,
            "active-chunks-per-dimension": 1,
            "preferred-dataset-splits": 1,
            "local-mem-bw": 1600,
        }
        for c in COLLECTIVES:
            system[f"{c}-implementation"] = [impl]
        out.append(
            {
                "network": {
                    "topology": [topology],
                    "npus_count": [n],
                    "bandwidth": [50.0],
                    "latency": [500.0],
                },
                "system": system,
                "collective": "all-reduce",
                "size": 1 << 20,
                "backend": "unaware",
            }
        )
    return out


def run_case(case: dict, binaries: Path) -> int | None:
    """ASTRA-sim's time for one case (None when it fails or never finishes)."""
    import yaml

    from ccopt.sim.chakra import make_node, write_trace_set

    npus = 1
    for n in case["network"]["npus_count"]:
        npus *= n
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "net.yml").write_text(yaml.safe_dump(case["network"]))
        (d / "sys.json").write_text(json.dumps(case["system"]))
        (d / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
        node = make_node(
            0,
            "coll",
            "COMM_COLL_NODE",
            comm_type=case["collective"],
            comm_size=case["size"],
            involved_dim=[True] * len(case["network"]["npus_count"]),
        )
        write_trace_set(d / "w", [[node]] * npus)
        binary = binaries / (
            "AstraSim_Analytical_Congestion_Aware"
            if case["backend"] == "aware"
            else "AstraSim_Analytical_Congestion_Unaware"
        )
        try:
            done = subprocess.run(
                [
                    str(binary),
                    f"--workload-configuration={d / 'w'}",
                    f"--system-configuration={d / 'sys.json'}",
                    f"--network-configuration={d / 'net.yml'}",
                    f"--remote-memory-configuration={d / 'mem.json'}",
                ],
                capture_output=True,
                text=True,
                cwd=d,
                timeout=120,
            )
        except subprocess.TimeoutExpired:
            return None
        times = [int(t) for t in re.findall(r"sys\[\d+\] finished, (\d+) cycles", done.stdout)]
        return max(times) if len(times) == npus else None


def compact_json(table: dict) -> str:
    """One case per line: small, and a changed case is a one-line diff."""
    head = {k: v for k, v in table.items() if k != "cases"}
    lines = [json.dumps(c, separators=(",", ":")) for c in table["cases"]]
    body = json.dumps(head)[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n"
    return body


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--astra-sim", required=True, type=Path, help="folder of the ASTRA-sim binaries")
    p.add_argument("--cases", type=int, default=400)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    rng = random.Random(11)
    cases = reference_cases() + [draw_case(rng, i) for i in range(args.cases)]
    with ThreadPoolExecutor(args.jobs) as pool:
        binaries = args.astra_sim.resolve()
        times = list(pool.map(lambda c: run_case(c, binaries), cases))
    kept = [dict(case, time_ns=t) for case, t in zip(cases, times, strict=True) if t is not None]
    dropped = len(cases) - len(kept)
    out = {
        "astra_sim": "c459ab6 (analytical backends)",
        "generator": "test/sim/make_astra_oracle.py (seed 11)",
        "dropped": dropped,
        "cases": kept,
    }
    (HERE / "astra_oracle.json").write_text(compact_json(out))
    print(f"{len(kept)} cases recorded, {dropped} failed in ASTRA-sim")


if __name__ == "__main__":
    main()
