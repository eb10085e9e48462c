"""Regenerate `astra_oracle.json`: ASTRA-sim c459ab6's answers on configurations of our own.

Not a test: it needs an ASTRA-sim build (see ../shared/reference/astra-sim-oracle.md), which CI
never has. Each case is a network, a system file and one collective (written as a one-node
Chakra workload per rank with ccopt's own trace writer); the recorded time is the largest
`sys[i] finished, T cycles`. Cases are drawn from a fixed seed, so a rerun gives the same table.

    python test/sim/make_astra_oracle.py --astra-sim .oracle/src/build/astra_analytical/build/bin

A second table, `workload_oracle.json`, holds whole Chakra workloads (compute, collectives with
some dimensions left out, sends and receives, custom-collective all-reduces) for ccopt-sim's
--workload form.
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


def targeted_cases(count: int = 40) -> list[dict]:
    """Corners the random draw visits rarely: oneHalvingDoubling and windowed oneDirect over
    all ranks, and double binary trees mixed with other algorithms across dimensions."""
    rng = random.Random(99)
    out = []
    for i in range(count):
        case = draw_case(rng, i)
        dims = len(case["network"]["npus_count"])
        kind = case["collective"]
        if i % 3 == 0:
            one = ["oneHalvingDoubling"] if kind != "all-to-all" else ["oneDirect4"]
            case["system"][f"{kind}-implementation"] = one
            case["network"]["npus_count"] = [2 ** rng.randint(1, 2) for _ in range(dims)]
        elif i % 3 == 1:
            case["collective"] = kind = "all-reduce"
            case["network"]["npus_count"] = [2 ** rng.randint(1, 2) for _ in range(dims)]
            case["system"][f"{kind}-implementation"] = [
                rng.choice(["doubleBinaryTree", "ring", "halvingDoubling"]) for _ in range(dims)
            ]
        else:
            case["system"][f"{kind}-implementation"] = ["oneDirect3"]
        out.append(case)
    return out


def run_astra(binaries: Path, case: dict, per_rank_nodes: list[list], folder: Path) -> int | None:
    """ASTRA-sim's time (largest `sys[i] finished`) for a network, a system and a trace set
    written into `folder`, which is also its working directory; None if it fails or hangs."""
    import yaml

    from ccopt.sim.chakra import write_trace_set

    (folder / "net.yml").write_text(yaml.safe_dump(case["network"]))
    (folder / "sys.json").write_text(json.dumps(case["system"]))
    (folder / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    write_trace_set(folder / "w", per_rank_nodes)
    backend = "Aware" if case["backend"] == "aware" else "Unaware"
    try:
        done = subprocess.run(
            [
                str(binaries / f"AstraSim_Analytical_Congestion_{backend}"),
                f"--workload-configuration={folder / 'w'}",
                f"--system-configuration={folder / 'sys.json'}",
                f"--network-configuration={folder / 'net.yml'}",
                f"--remote-memory-configuration={folder / 'mem.json'}",
            ],
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return None
    times = [int(t) for t in re.findall(r"sys\[\d+\] finished, (\d+) cycles", done.stdout)]
    return max(times) if len(times) == len(per_rank_nodes) else None


def ranks_of(case: dict) -> int:
    npus = 1
    for n in case["network"]["npus_count"]:
        npus *= n
    return npus


def run_case(case: dict, binaries: Path) -> int | None:
    """ASTRA-sim's time for one collective: one COMM_COLL node on every rank."""
    from ccopt.sim.chakra import make_node

    node = make_node(
        0,
        "coll",
        "COMM_COLL_NODE",
        comm_type=case["collective"],
        comm_size=case["size"],
        involved_dim=[True] * len(case["network"]["npus_count"]),
    )
    with tempfile.TemporaryDirectory() as tmp:
        return run_astra(binaries, case, [[node]] * ranks_of(case), Path(tmp))


def draw_workload(rng: random.Random, index: int) -> dict:
    """A workload case: a small network and system, and one node list that every rank runs
    (peers of sends and receives given as rank offsets); every fourth case runs its
    all-reduces with the custom ring trace of examples/astra."""
    custom = index % 4 == 3
    case = draw_case(rng, index)
    if custom:
        case["network"] = {
            "topology": [rng.choice(["Ring", "Switch", "FullyConnected"])],
            "npus_count": [8],
            "bandwidth": [rng.choice([25.0, 50.0])],
            "latency": [rng.choice([100.0, 500.0])],
        }
        for c in COLLECTIVES:
            case["system"][f"{c}-implementation"] = ["ring"]
        case["system"]["all-reduce-implementation-custom"] = ["custom_ring_allreduce"]
    else:
        npus = [min(n, 4) for n in case["network"]["npus_count"]]
        case["network"]["npus_count"] = npus
        for c in COLLECTIVES:
            case["system"][f"{c}-implementation"] = [implementation(rng, c, n) for n in npus]
    case.pop("collective"), case.pop("size")
    case["backend"] = "unaware"
    dims = len(case["network"]["npus_count"])
    npus = ranks_of(case)
    nodes = []
    for node_id in range(rng.randint(2, 7)):
        deps = sorted(rng.sample(range(node_id), min(node_id, rng.choice([0, 1, 1, 2]))))
        kind = rng.choice(["COMP", "COMP", "COLL", "COLL", "PAIR"])
        node = {"id": node_id, "deps": deps}
        if kind == "COMP":
            node.update(type="COMP", us=rng.choice([0, 1, 3, 7, 20]), cpu=rng.random() < 0.2)
        elif kind == "COLL":
            involved = [rng.random() < 0.8 for _ in range(dims)]
            node.update(
                type="COLL",
                comm="all-reduce" if custom else rng.choice(COLLECTIVES),
                size=rng.choice([4096, 65536, 1 << 20]),
                dims=involved if any(involved) else [True] * dims,
            )
        else:
            node.update(
                type="PAIR",
                shift=rng.randint(1, npus - 1),
                tag=node_id,
                size=rng.choice([1000, 65536]),
            )
        nodes.append(node)
    case["nodes"] = nodes
    return case


def aware_workloads(count: int = 40) -> list[dict]:
    """Workloads on the congestion-aware backend: 1-D networks only, and no 2-rank Ring
    (ASTRA-sim's congestion-aware Ring of 2 connects the same pair twice and aborts)."""
    rng = random.Random(21)
    out = []
    for i in range(count):
        case = draw_workload(rng, i)
        net = case["network"]
        if len(net["topology"]) == 1 and not (net["topology"] == ["Ring"] and ranks_of(case) == 2):
            out.append(dict(case, backend="aware"))
    return out


def workload_traces(case: dict) -> list[list]:
    """Every rank's Chakra nodes for a workload case (a PAIR is a send to rank+shift and a
    receive from rank-shift, one node id each: 2*id and 2*id+1)."""
    from ccopt.sim.chakra import make_node

    npus = ranks_of(case)
    ids = {
        n["id"]: [2 * n["id"]] + ([2 * n["id"] + 1] if n["type"] == "PAIR" else [])
        for n in case["nodes"]
    }
    per_rank = []
    for rank in range(npus):
        out = []
        for n in case["nodes"]:
            deps = [d for parent in n["deps"] for d in ids[parent]]
            if n["type"] == "COMP":
                out.append(
                    make_node(
                        2 * n["id"],
                        f"comp{n['id']}",
                        "COMP_NODE",
                        deps=deps,
                        duration_micros=n["us"],
                        is_cpu_op=n["cpu"],
                    )
                )
            elif n["type"] == "COLL":
                out.append(
                    make_node(
                        2 * n["id"],
                        f"coll{n['id']}",
                        "COMM_COLL_NODE",
                        deps=deps,
                        comm_type=n["comm"],
                        comm_size=n["size"],
                        involved_dim=n["dims"],
                    )
                )
            else:
                out.append(
                    make_node(
                        2 * n["id"],
                        f"send{n['id']}",
                        "COMM_SEND_NODE",
                        deps=deps,
                        comm_dst=(rank + n["shift"]) % npus,
                        comm_tag=n["tag"],
                        comm_size=n["size"],
                    )
                )
                out.append(
                    make_node(
                        2 * n["id"] + 1,
                        f"recv{n['id']}",
                        "COMM_RECV_NODE",
                        deps=deps,
                        comm_src=(rank - n["shift"]) % npus,
                        comm_tag=n["tag"],
                        comm_size=n["size"],
                    )
                )
        per_rank.append(out)
    return per_rank


def run_workload_case(case: dict, binaries: Path) -> int | None:
    examples = HERE.parents[1] / "examples" / "astra"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for path in examples.glob("custom_ring_allreduce.*.et"):
            (folder / path.name).write_bytes(path.read_bytes())
        return run_astra(binaries, case, workload_traces(case), folder)


def compact_json(table: dict) -> str:
    """One case per line: small, and a changed case is a one-line diff."""
    head = {k: v for k, v in table.items() if k != "cases"}
    lines = [json.dumps(c, separators=(",", ":")) for c in table["cases"]]
    body = json.dumps(head)[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n"
    return body


def record(name: str, cases: list[dict], run, binaries: Path, jobs: int, seed: int) -> None:
    """Run every case in ASTRA-sim and write the ones it finishes to HERE/name."""
    with ThreadPoolExecutor(jobs) as pool:
        times = list(pool.map(lambda c: run(c, binaries), cases))
    kept = [dict(case, time_ns=t) for case, t in zip(cases, times, strict=True) if t is not None]
    out = {
        "astra_sim": "c459ab6 (analytical backends)",
        "generator": f"test/sim/make_astra_oracle.py (seed {seed})",
        "dropped": len(cases) - len(kept),
        "cases": kept,
    }
    (HERE / name).write_text(compact_json(out))
    print(f"{name}: {len(kept)} cases recorded, {out['dropped']} failed in ASTRA-sim")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--astra-sim", required=True, type=Path, help="folder of the ASTRA-sim binaries")
    p.add_argument("--cases", type=int, default=400, help="collective cases")
    p.add_argument("--workloads", type=int, default=120, help="workload cases")
    p.add_argument("--only", choices=("collectives", "workloads"), help="regenerate one table")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    binaries = args.astra_sim.resolve()
    if args.only != "workloads":
        rng = random.Random(11)
        cases = reference_cases() + [draw_case(rng, i) for i in range(args.cases)]
        cases += targeted_cases()
        record("astra_oracle.json", cases, run_case, binaries, args.jobs, 11)
    if args.only != "collectives":
        rng = random.Random(13)
        cases = [draw_workload(rng, i) for i in range(args.workloads)] + aware_workloads()
        record("workload_oracle.json", cases, run_workload_case, binaries, args.jobs, 13)


if __name__ == "__main__":
    main()
