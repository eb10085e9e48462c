"""auto-shard's objective=time prices a lone collective or conversion as the program simulator
times a program of it alone: the same hierarchical schedule over the network dimensions the
group spans, the machine's algorithm per dimension, its NIC sharing, γ for reductions, the
largest block's bytes and the host's launch (the search priced an all-reduce as one ring over
2(p-1)/p of the bytes, with one α per rank and no γ: 8192x8192 bf16 over tp=8 of a DGX A100
at 796 us against the simulator's 982 us, and on a Megatron MLP of that size it picked, under
the fused overlap credit, a layout the simulator found 19% slower). That the searches' choices
on test/filecheck/passes/auto-shard-overlap*.mlir agree with the simulator is checked beside
their credits (test_overlap_credit.py, test_overlap_fused_credit.py, test_overlap_tries.py)."""

from __future__ import annotations

import pytest
from xdsl.dialects import func

from ccopt.dialects import coll
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.passes.auto_shard import Cost, Signature, collective_cost
from ccopt.program import load_program, module_meshes
from ccopt.sim.program import predicted_step_time_ns

ALGORITHMS = """\
network: {{topology: [Switch, Switch], npus_count: [4, 4], bandwidth: [100, 10], latency: [500, 2000]}}
gpu: {{peak-tflops: {{bf16: 312, f32: 19.5}}, hbm-tbps: 2.0, launch-overhead-ns: 2000,
      collective-sm-share: 0.1, matmul-efficiency: [[64, 0.1], [8192, 0.8]]}}
nic-sharing: [1, 2]
collective-algorithm: [{inner}, {outer}]
"""
"""A machine of two dimensions with the algorithms chosen per test (and 2 GPUs per NIC)."""


def lone(mesh: str, start: str, goal: str) -> str:
    """The op text of the one collective that converts `start` to `goal`, which differ on one
    axis of `mesh`."""
    names = [axis.split("=")[0].strip() for axis in mesh.split(",")]
    pairs = zip(names, start.split(", "), goal.split(", "), strict=True)
    ((axis, given, wanted),) = [(n, g, w) for n, g, w in pairs if g != w]
    split = "" if wanted == "R" else f" dim {wanted[2]}"
    kind = {
        "P": "all_reduce sum" if wanted == "R" else "reduce_scatter sum",
        "S": "all_gather" if wanted == "R" else "all_to_all",
        "R": "slice",
    }[given[0]]
    return f"coll.{kind} %x over [{axis}]{split}"


def program(mesh: str, shape: str, start: str, goal: str, op: str) -> str:
    a = f"!dtensor.tensor<{shape}, @m[{start}]>"
    b = f"!dtensor.tensor<{shape}, @m[{goal}]>"
    return (
        f"dtensor.mesh @m [{mesh}]\n"
        f"func.func @f(%x: {a}) -> {b} {{\n"
        f"  %y = {op} : {a} -> {b}\n"
        f"  func.return %y : {b}\n}}\n"
    )


def prices(text: str, machine: str) -> tuple[float, float, float]:
    """The search's price of the program's collective as a conversion between its placements
    and as the written op, and the simulated step time of the program, in seconds."""
    module = load_program(text)
    (mesh,) = module_meshes(module).values()
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    op = next(op for op in f.walk() if isinstance(op, coll.CollectiveOp))
    t, out = op.operands[0].type, op.results[0].type
    assert isinstance(t, DTensorType) and isinstance(out, DTensorType)
    cost = Cost("time", machine, mesh)
    start, goal = t.placement_list, out.placement_list
    written = collective_cost(op, Signature((start,), goal), cost)
    return cost.conversion(t, start, goal), written, predicted_step_time_ns(module, machine) * 1e-9


GROUPS = [
    # machine, mesh, tensor, then conversions start>goal (placements joined by ",")
    ("dgx-a100", "tp=8", "8192x8192xbf16", "P(sum)>R P(sum)>S(1) S(0)>R S(1)>S(0) R>S(0)"),
    ("dgx-a100", "tp=8", "64x64xf32", "P(sum)>R"),
    ("dgx-a100", "tp=16", "4096x1024xf16", "P(sum)>R P(sum)>S(0) S(1)>R S(0)>S(1)"),
    ("dgx-a100", "dp=4, tp=8", "1000x384xf32", "P(sum),S(1)>R,S(1) S(0),R>R,R R,P(sum)>R,S(0)"),
    ("dgx-h100", "dp=2, tp=8", "12288x4096xbf16", "R,P(sum)>R,R S(0),R>R,R"),
    ("perlmutter", "dp=2, tp=4", "2048x2048xbf16", "R,P(sum)>R,R P(sum),R>R,R R,S(0)>R,S(1)"),
    ("frontier", "tp=8", "3000x512xf32", "P(sum)>R S(0)>S(1)"),
    ("dgx2-v100", "tp=16", "1024x1024xf16", "S(1)>R"),
]
CASES = [
    (machine, mesh, shape, *conversion.replace(",", ", ").split(">"))
    for machine, mesh, shape, conversions in GROUPS
    for conversion in conversions.split()
]


@pytest.mark.parametrize(("machine", "mesh", "shape", "start", "goal"), CASES)
def test_a_lone_conversion_is_priced_as_simulated(machine, mesh, shape, start, goal):
    converted, written, simulated = prices(
        program(mesh, shape, start, goal, lone(mesh, start, goal)), machine
    )
    assert converted == pytest.approx(simulated, rel=0.02)
    assert written == pytest.approx(simulated, rel=0.02)


@pytest.mark.parametrize(
    ("inner", "outer"),
    [
        ("ring", "ring"),
        ("tree", "halving_doubling"),
        ("direct", "tree"),
        ("halving_doubling", "direct"),
    ],
)
@pytest.mark.parametrize(
    ("start", "goal"), [("P(sum)", "R"), ("P(sum)", "S(0)"), ("S(0)", "R"), ("S(0)", "S(1)")]
)
def test_the_machines_algorithms_are_priced(tmp_path, inner, outer, start, goal):
    """A group over both dimensions of a machine with these algorithms (tp=16 on 4 x 4)."""
    machine = tmp_path / "m.yml"
    machine.write_text(ALGORITHMS.format(inner=inner, outer=outer))
    text = program("tp=16", "2048x1024xf32", start, goal, lone("tp=16", start, goal))
    converted, written, simulated = prices(text, str(machine))
    assert converted == pytest.approx(simulated, rel=0.02)
    assert written == pytest.approx(simulated, rel=0.02)


@pytest.mark.parametrize(
    ("mesh", "start", "goal", "op"),
    [
        ("dp=4, tp=8", "P(sum), P(sum)", "R, R", "coll.all_reduce sum %x over [dp, tp]"),
        ("dp=4, tp=8", "S(0), S(0)", "R, R", "coll.all_gather %x over [dp, tp]"),
        ("pp=4, tp=8", "V, S(0)", "V, S(0)", "coll.shift %x over [pp] by 1"),
        ("dp=2, tp=8", "R, R", "R, R", "coll.broadcast %x over [dp, tp] root 3"),
    ],
)
def test_a_written_collective_is_priced_as_one_collective(mesh, start, goal, op):
    """Over several axes one hierarchical collective, not one per axis; a shift's message,
    which no conversion between its equal placements moves."""
    _, written, simulated = prices(program(mesh, "4096x4096xbf16", start, goal, op), "dgx-a100")
    assert written == pytest.approx(simulated, rel=0.02)
