"""A fused all-reduce's body inside its algorithm vs after its reduce-scatter, in simulated time
(CoCoNeT's fused NCCL kernels run the optimizer on each chunk as its reduction completes).

Two views, each a ratio against the fused-after time computed in the same run:

- step level (`ccopt.sim.chakra_algo.simulate_algorithm`, ASTRA-sim's analytical model of a
  custom collective on `examples/astra/ring_8.yml` + `ring.json`): after = the plain algorithm's
  time + the body over the whole slice (`--passes` x slice bytes through local memory: Adam reads
  g, w, m, v and writes w, m, v: 7); inside = the algorithm that `lower-collectives{fused_body=
  in-algorithm}` makes, its `fn` steps COMP nodes of the same passes over their chunks, so only
  what the critical path shows of the body counts;
- program level (`ccopt.simulate` on the `dgx-h100` preset): Adam (`examples/adam.mlir` with its
  515x7 tensors scaled to `--elements`) fused by fuse-collective, then lowered with the body
  after or inside the algorithm.

A thread block runs its steps in order, so a body on a one-channel ring sits on the ring's
critical path whichever chunk it is on (ratio 1.0): the gain comes from the channels (each
thread block runs the body on its own chunks while the others move theirs). The step-level model
gives concurrent COMP nodes the full local memory bandwidth each, and neither view charges the
extra passes a separate body kernel costs (reading the reduced slice back), so the gain of
CoCoNeT's real kernels is larger than what these ratios show. Nothing here asserts on time.

    python bench/fused_in_algorithm.py [--size BYTES] [--passes 7] [--elements N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_args import positive

from ccopt.algorithms import generate
from ccopt.algorithms.fused_body import with_body_steps
from ccopt.sim.chakra_algo import simulate_algorithm
from ccopt.sim.network import load_network
from ccopt.sim.system import load_system

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "examples" / "astra"
FUSE = "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,fuse-collective"
CASES = [
    ("ring", 1, 1),
    ("ring", 1, 4),
    ("ring", 2, 1),
    ("ring", 4, 1),
    ("ring", 4, 4),
    ("direct", 1, 1),
    ("halving_doubling", 1, 1),
    ("double_binary_tree", 1, 2),
]


def step_level(size: int, passes: int) -> None:
    network = load_network(ASTRA / "ring_8.yml")
    system = load_system(ASTRA / "ring.json")
    body_ns = size / network.npus * passes / system.local_mem_bw  # GB/s = bytes/ns
    print(
        f"step level: 8 ranks, {size / 2**20:.0f} MiB per rank, body {passes} passes "
        f"({body_ns / 1000:.1f} us over a rank's slice)"
    )
    print(
        f"{'algorithm':>20} {'ch':>3} {'cf':>3} {'after ns':>12} {'inside ns':>12} {'after/inside':>13}"
    )
    for name, channels, chunk_factor in CASES:
        plain = generate("allreduce", name, network.npus, channels, chunk_factor)
        fused = with_body_steps(plain, f"{plain.name}_fused")
        after = simulate_algorithm(plain, network, system, size).time_ns + body_ns
        inside = simulate_algorithm(fused, network, system, size, body_passes=passes).time_ns
        print(
            f"{name:>20} {channels:>3} {chunk_factor:>3} {after:>12.0f} {inside:>12} "
            f"{after / inside:>12.3f}x"
        )


def program_level(elements: int) -> None:
    import ccopt

    rows = max(1, elements // 64)
    text = (ROOT / "examples" / "adam.mlir").read_text().replace("515x7", f"{rows}x64")
    print(f"\nprogram level: Adam on {rows}x64 f32, dp=8, dgx-h100")
    print(f"{'lowering':>40} {'step ns':>12} {'after/this':>11}")
    base = None
    for lower in (
        "",
        "lower-collectives{fused_body=in-algorithm}",
        "lower-collectives{fused_body=in-algorithm channels=4}",
    ):
        pipeline = FUSE + ("," + lower if lower else "")
        ns = ccopt.simulate(text, "dgx-h100", pipeline=pipeline, mesh="dp=8").step_time_ns
        base = base or ns
        print(f"{lower or 'fused after (no algorithm)':>40} {ns:>12} {base / ns:>10.3f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=positive, default=256 << 20, help="bytes per rank")
    p.add_argument("--passes", type=positive, default=7, help="body's passes over its bytes")
    p.add_argument("--elements", type=positive, default=1 << 24, help="Adam's parameter count")
    args = p.parse_args()
    from ccopt.dialects.algo import AlgorithmError

    try:
        step_level(args.size, args.passes)
        program_level(args.elements)
    except AlgorithmError as e:  # a size the algorithm cannot cut in chunks: said, not raised
        p.error(str(e))


if __name__ == "__main__":
    main()
