"""ccopt's ASTRA mode against the ASTRA-sim binary on issue 11's ring all-reduce.

A 1 MiB ring all-reduce on a Ring of N ranks (50 GB/s, 500 ns, endpoint-delay 1, local-mem-bw
1600, one split), N = 256 ... 16384. For every N: the simulated time from both (they must be
equal), ccopt's wall time in process (best of K) and its peak Python memory in KiB (tracemalloc), the
whole `ccopt-sim` command's wall time (start-up included), and ASTRA-sim c459ab6's wall time and
peak RSS when a build is given and N is within --astra-max-ranks (ASTRA-sim grows about
quadratically: 4096 ranks take it ~90 s and 5 GiB). Ratios are ASTRA-sim time / ccopt time in
the same run. Nothing here asserts on time.

    python bench/sim_astra.py [--ranks 256,1024,4096,16384] [--repeat K]
        [--astra-sim .oracle/src/build/astra_analytical/build/bin] [--astra-max-ranks 1024]
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from bench_args import positive, positives

from ccopt.sim.astra import simulate_collective
from ccopt.sim.network import network_from_dict
from ccopt.sim.system import system_from_dict

ROOT = Path(__file__).resolve().parents[1]
SIZE = 1 << 20
NETWORK = {"topology": ["Ring"], "bandwidth": [50.0], "latency": [500.0]}
SYSTEM = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 1,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "local-mem-bw": 1600,
    **{
        f"{c}-implementation": ["ring"]
        for c in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
    },
}


def ccopt_in_process(ranks: int, repeat: int) -> tuple[int, float, float]:
    """(time_ns, best seconds, peak KiB of Python allocations)."""
    net = network_from_dict({**NETWORK, "npus_count": [ranks]}, "bench")
    sys_config = system_from_dict(SYSTEM, "bench")
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            result = simulate_collective(net, sys_config, "all-reduce", SIZE)
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    tracemalloc.start()
    simulate_collective(net, sys_config, "all-reduce", SIZE)
    peak = tracemalloc.get_traced_memory()[1] / 2**10
    tracemalloc.stop()
    return result.time_ns, best, peak


def write_configs(folder: Path, ranks: int) -> tuple[Path, Path]:
    import yaml

    net, sys_file = folder / "net.yml", folder / "sys.json"
    net.write_text(yaml.safe_dump({**NETWORK, "npus_count": [ranks]}))
    sys_file.write_text(json.dumps(SYSTEM))
    return net, sys_file


def ccopt_command(folder: Path, ranks: int) -> tuple[int, float]:
    """The whole `ccopt-sim ... --json` command: (time_ns, wall seconds)."""
    net, sys_file = write_configs(folder, ranks)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ccopt.tools.ccopt_sim",
            "--network",
            str(net),
            "--system",
            str(sys_file),
            "--collective",
            "all-reduce",
            "--size",
            str(SIZE),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)["time_ns"], time.perf_counter() - start


def astra_sim(binaries: Path, folder: Path, ranks: int) -> tuple[int, float, float]:
    """(time_ns, wall seconds, peak RSS MiB) of ASTRA-sim's congestion-unaware binary."""
    from ccopt.sim.chakra import make_node, write_trace_set

    net, sys_file = write_configs(folder, ranks)
    (folder / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    node = make_node(
        0, "ar", "COMM_COLL_NODE", comm_type="all-reduce", comm_size=SIZE, involved_dim=[True]
    )
    write_trace_set(folder / "w", [[node]] * ranks)
    command = [
        str(binaries / "AstraSim_Analytical_Congestion_Unaware"),
        f"--workload-configuration={folder / 'w'}",
        f"--system-configuration={sys_file}",
        f"--network-configuration={net}",
        f"--remote-memory-configuration={folder / 'mem.json'}",
    ]
    # peak RSS of this child alone: run it under a fresh Python whose only child it is
    probe = (
        "import resource,subprocess,sys,time;s=time.perf_counter();"
        "o=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
        "t=time.perf_counter()-s;"
        "r=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
        "print(t, r); print(o.stdout)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command],
        capture_output=True,
        text=True,
        cwd=folder,
        check=True,
    )
    first, rest = done.stdout.split("\n", 1)
    wall, rss_kib = first.split()
    times = [int(t) for t in re.findall(r"sys\[\d+\] finished, (\d+) cycles", rest)]
    return max(times), float(wall), int(rss_kib) / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=positives, default="256,1024,4096,16384")
    p.add_argument("--repeat", type=positive, default=3)
    p.add_argument(
        "--astra-sim", type=Path, default=ROOT / ".oracle/src/build/astra_analytical/build/bin"
    )
    p.add_argument("--astra-max-ranks", type=positive, default=1024)
    args = p.parse_args()
    have_astra = (args.astra_sim / "AstraSim_Analytical_Congestion_Unaware").exists()
    print(
        f"{'ranks':>6} {'time_ns':>9} {'ccopt s':>8} {'KiB':>6} {'command s':>9} "
        f"{'ASTRA time_ns':>13} {'ASTRA s':>8} {'ASTRA MiB':>9} {'ASTRA/ccopt':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for ranks in args.ranks:
            time_ns, seconds, peak = ccopt_in_process(ranks, args.repeat)
            command_ns, command_s = ccopt_command(folder, ranks)
            assert command_ns == time_ns
            astra = ("-", "-", "-", "-")
            if have_astra and ranks <= args.astra_max_ranks:
                a_ns, a_s, a_mib = astra_sim(args.astra_sim, folder, ranks)
                mark = "" if a_ns == time_ns else " (DIFFERS)"
                astra = (f"{a_ns}{mark}", f"{a_s:.2f}", f"{a_mib:.0f}", f"{a_s / seconds:.1f}x")
            print(
                f"{ranks:>6} {time_ns:>9} {seconds:>8.4f} {peak:>6.0f} {command_s:>9.2f} "
                f"{astra[0]:>13} {astra[1]:>8} {astra[2]:>9} {astra[3]:>11}"
            )


if __name__ == "__main__":
    main()
