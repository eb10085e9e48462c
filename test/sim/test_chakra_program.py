"""Programs as Chakra workloads: compute priced by ccopt's cost model, collectives as COMM_COLL
nodes on the machine's network dimensions, stage transfers as sends and receives, dependencies
from data flow and stream order; the files replay in `ccopt-sim --workload`."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccopt.diagnostics import SourceText
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.sim.chakra import node_attributes, read_trace_set
from ccopt.sim.chakra_program import micros, program_traces, write_program_traces
from ccopt.sim.chakra_sim import simulate_workload
from ccopt.sim.machine import load_machine
from ccopt.sim.network import network_from_dict
from ccopt.sim.system import system_from_dict

ROOT = Path(__file__).resolve().parents[2]
MACHINE = load_machine("dgx-a100")


def module_of(path: Path):
    module = parse_module(make_context(), SourceText(str(path), path.read_text()))
    verify_module(module)
    return module


def kinds(nodes) -> list[str]:
    return [n.name.split("#")[0] + ":" + str(n.type) for n in nodes]


def test_pipeline_boundary_collectives_and_stage_transfers() -> None:
    """pm = [pp=2, tp=4]; tp is innermost on the machine, so rank = 4 pp + tp; the all-reduce
    over tp spans network dimension 0 only; the shift over pp sends stage 0 -> stage 1."""
    files = program_traces(module_of(ROOT / "examples" / "pipeline_boundary.mlir"), MACHINE)
    assert len(files) == 8
    first, last = files[1], files[5]
    names = [n.name.split("#")[0] for n in first]
    assert names == [
        "dtensor.matmul", "coll.all_reduce", "dtensor.add", "dtensor.dropout", "dtensor.add",
        "coll.shift",
    ]  # fmt: skip
    coll = node_attributes(first[1])
    assert coll["comm_type"] == 0 and coll["pg_name"] == "tp"
    assert coll["involved_dim"] == [True, False]
    assert coll["comm_size"] == 8 * 36 * 4
    send, recv = first[-1], last[-1]
    assert (send.type, recv.type) == (5, 6)
    assert node_attributes(send)["comm_dst"] == 5 and node_attributes(recv)["comm_src"] == 1
    tag = node_attributes(send)["comm_tag"]
    assert node_attributes(recv)["comm_tag"] == tag
    assert node_attributes(send)["comm_size"] == node_attributes(recv)["comm_size"]
    assert all(list(n.data_deps) == ([n.id - 1] if n.id else []) for n in first)


def test_compute_durations_are_the_cost_models(tmp_path) -> None:
    """A matmul big enough to take microseconds: its COMP lasts the roofline time rounded to
    whole microseconds, and carries its FLOPs."""
    text = """
    dtensor.mesh @m [tp=2]
    func.func @f(%a: !dtensor.tensor<4096x4096xf16, @m[R]>, %b: !dtensor.tensor<4096x8192xf16, @m[S(1)]>) -> !dtensor.tensor<4096x8192xf16, @m[S(1)]> {
      %c = dtensor.matmul %a, %b : (!dtensor.tensor<4096x4096xf16, @m[R]>, !dtensor.tensor<4096x8192xf16, @m[S(1)]>) -> !dtensor.tensor<4096x8192xf16, @m[S(1)]>
      func.return %c : !dtensor.tensor<4096x8192xf16, @m[S(1)]>
    }
    """
    module = parse_module(make_context(), SourceText("mm.mlir", text))
    verify_module(module)
    (node,) = program_traces(module, MACHINE)[0]
    flops = 2 * 4096 * 4096 * 4096
    assert node_attributes(node)["num_ops"] == flops
    from ccopt.sim.program import simulate_module

    report = simulate_module(module, MACHINE)
    assert node.duration_micros == micros(report.compute_ns) > 100


def test_workload_replays_and_levels_agree(tmp_path) -> None:
    """The L2 program and its kernel-level lowering give the same workload time."""
    from ccopt.passes.pipeline import run_pipeline

    network = network_from_dict(
        {"topology": ["Switch", "Switch"], "npus_count": [4, 2], "bandwidth": [279.4, 23.28],
         "latency": [700, 2500]},
        "net.yml",
    )  # fmt: skip
    impl = {f"{c}-implementation": ["ring", "ring"] for c in ("all-reduce", "all-gather")}
    system = system_from_dict({"local-mem-bw": 1600, **impl}, "sys.json")
    module = module_of(ROOT / "examples" / "megatron_mlp.mlir")
    write_program_traces(tmp_path / "l2", module, MACHINE)
    run_pipeline(module, "convert-to-kernel")
    write_program_traces(tmp_path / "l3", module, MACHINE)
    l2 = simulate_workload(network, system, tmp_path / "l2")
    l3 = simulate_workload(network, system, tmp_path / "l3")
    assert l2.time_ns == l3.time_ns > 0
    assert {n.type for t in read_trace_set(tmp_path / "l3") for n in t.nodes} == {4, 7}


def test_a_loop_is_refused_at_the_op() -> None:
    from ccopt.diagnostics import CcoptError

    text = """
    func.func @f(%n: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
      }
      func.return
    }
    """
    module = parse_module(make_context(), SourceText("loop.mlir", text))
    with pytest.raises(CcoptError, match="straight-line code"):
        program_traces(module, MACHINE)
