"""The simulators on a fused all-reduce whose body runs inside its algorithm: `fn` steps are
COMP nodes (`ccopt-sim --body-passes`), they survive the Chakra export and import, and the
program simulator counts the thread blocks that run the body side by side."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import ROOT, run_tool

from ccopt.algorithms import generate
from ccopt.algorithms.fused_body import with_body_steps
from ccopt.dialects.algo import AlgorithmOp, Step
from ccopt.sim.chakra_algo import (
    read_algorithm_traces,
    simulate_algorithm,
    write_algorithm_traces,
)
from ccopt.sim.network import load_network
from ccopt.sim.system import load_system

ASTRA = ROOT / "examples" / "astra"
SIZE = 1 << 28


def test_fn_steps_are_comp_nodes_of_the_body_passes() -> None:
    """With zero passes the body costs a nanosecond a step (as every COMP node does), with
    passes its chunks' bytes through local memory; on one channel every chunk's body lies on
    the ring's path, so the time grows by at least one chunk's body."""
    network, system = load_network(ASTRA / "ring_8.yml"), load_system(ASTRA / "ring.json")
    fused = with_body_steps(generate("allreduce", "ring", 8), "f")
    free = simulate_algorithm(fused, network, system, SIZE).time_ns
    costly = simulate_algorithm(fused, network, system, SIZE, body_passes=3)
    chunk_body_ns = 3 * costly.chunk_bytes / system.local_mem_bw
    assert costly.time_ns >= free + chunk_body_ns - 1000  # COMP times are whole microseconds


def test_ccopt_sim_body_passes_flag(tmp_path: Path) -> None:
    fused = with_body_steps(generate("allreduce", "ring", 8, channels=2), "f")
    path = tmp_path / "fused.mlir"
    path.write_text("builtin.module {\n" + str(AlgorithmOp(fused)) + "\n}\n")
    times = []
    for passes in ("0", "3"):
        done = run_tool(
            "ccopt.tools.ccopt_sim",
            path,
            "--network",
            ASTRA / "ring_8.yml",
            "--system",
            ASTRA / "ring.json",
            "--size",
            str(SIZE),
            "--body-passes",
            passes,
            "--json",
        )
        assert done.returncode == 0, done.stderr
        times.append(json.loads(done.stdout)["time_ns"])
    assert times[1] > times[0]


def test_fn_steps_survive_chakra_export_and_import(tmp_path: Path) -> None:
    fused = with_body_steps(generate("allreduce", "halving_doubling", 4), "hd_fused")
    write_algorithm_traces(tmp_path / "hd", fused, 1 << 20, 1600.0)
    back = read_algorithm_traces(tmp_path / "hd")
    assert str(AlgorithmOp(back)) == str(AlgorithmOp(fused))
    assert any((tb.steps[:, 0] == Step.APPLY).any() for g in back.gpus for tb in g.tbs)


def test_program_simulator_counts_body_lanes() -> None:
    import ccopt
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.sim.work import body_lanes

    text = (ROOT / "examples" / "sgd.mlir").read_text()
    fuse = "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"
    for lower, lanes in (
        ("", 1),
        (",lower-collectives{fused_body=in-algorithm}", 1),
        (",lower-collectives{fused_body=in-algorithm channels=3}", 3),
    ):
        module = apply_pipeline(ccopt.load_program(text), fuse + lower)
        fused = [op for op in module.walk() if op.name == "coll.fused_all_reduce"]
        assert [body_lanes(op) for op in fused] == [lanes]
