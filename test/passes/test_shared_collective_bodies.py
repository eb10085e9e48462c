"""Fused collectives that compute alike name one module-level body (`fuse-collective` shares
them as `fuse-elementwise` shares its fused ops', `SharedBodies`): a model's optimizer steps
repeat one per parameter group. Later passes treat such a body as each op's own copy
(`shares_as_copies`): the kernel level is what it was with copies, and the programs compute
what they computed - checked here on copies of SGD, Adam and LAMB (bench/compile_speed.py) and on
Megatron blocks with fused collectives and overlap, on random inputs on every rank of meshes of
two sizes."""

from __future__ import annotations

import pytest
from bench_programs import bench_module
from xdsl.dialects import func

import ccopt
from ccopt.dialects import coll
from ccopt.dialects import kernel as k
from ccopt.dialects.body import drop_unnamed_bodies
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program

bench = bench_module("compile_speed")

CASES = {
    "adam": (bench.optimizer_copies("adam", 3), bench._ADAM_PIPELINE),
    "lamb": (bench.optimizer_copies("lamb", 3), bench._LAMB_PIPELINE),
    "megatron+fuse-collective": (bench.megatron_blocks(3), bench._FUSED_PIPELINE),
    "sgd": (  # (nothing to fold: the kernels' bodies are the L1 one)
        bench.optimizer_copies("sgd", 3),
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        "convert-to-kernel,plan-memory",
    ),
    "sgd in-algorithm": (  # (the body runs inside the all-reduce algorithm's steps)
        bench.optimizer_copies("sgd", 3),
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        "lower-collectives{fused_body=in-algorithm},convert-to-kernel,plan-memory",
    ),
}


def split_at_fuse_collective(pipeline: str) -> tuple[str, str]:
    """The pipeline up to fuse-collective, and the rest."""
    passes = pipeline.split(",")
    at = passes.index("fuse-collective") + 1
    return ",".join(passes[:at]), ",".join(passes[at:])


def fused_collectives(module) -> list[coll.FusedAllReduceOp]:  # noqa: ANN001
    return [o for o in module.walk() if isinstance(o, coll.FusedAllReduceOp)]


@pytest.mark.parametrize("name", ["adam", "lamb", "sgd"])
def test_each_functions_fused_collectives_name_the_bodies_of_the_first(name: str) -> None:
    program, pipeline = CASES[name]
    module = apply_pipeline(load_program(program), split_at_fuse_collective(pipeline)[0])
    per_function: dict[str, list[str | None]] = {}
    for op in fused_collectives(module):
        assert not op.regions
        assert isinstance(op.named_body(), k.BodyOp)
        function = op.parent_op()
        assert isinstance(function, func.FuncOp)
        per_function.setdefault(function.sym_name.data, []).append(op.body_name())
    names = list(per_function.values())
    assert len(names) == 3 and names[0] and all(n == names[0] for n in names)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_as_if_each_collective_carried_a_copy(name: str) -> None:
    """The rest of the pipeline (overlap, convert-to-kernel, plan-memory) prints the same
    program from the shared bodies as from a copy per fused collective."""
    program, pipeline = CASES[name]
    head, rest = split_at_fuse_collective(pipeline)
    shared = apply_pipeline(load_program(program), head)
    copies = shared.clone()
    named = [op for op in fused_collectives(copies) if op.body_name() is not None]
    assert len(named) >= 2  # the repeated bodies are shared (else this tests nothing)
    for op in named:
        op.own_body()
    assert drop_unnamed_bodies(copies)
    assert str(apply_pipeline(shared, rest)) == str(apply_pipeline(copies, rest))


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_shared_collective_bodies_compute_what_the_program_does(name: str, ranks: int) -> None:
    program, pipeline = CASES[name]
    axis = "tp" if name.startswith("megatron") else "dp"
    entry = None if name.startswith("megatron") else f"{name.split()[0]}_2"
    for cut in (split_at_fuse_collective(pipeline)[0], pipeline):
        # atol scaled to each output (check_pipeline's default): the chained blocks' values reach
        # 2.5e5 (seed 2), where float32 sums in another order differ by 0.0625, a unit in the last
        # place (it failed with numpy 2.4.6's matmul)
        report = ccopt.check_pipeline(
            program, cut, entry=entry, mesh={axis: ranks}, seed=ranks, rtol=1e-4
        )
        bad = [c.name for c in report.comparisons if not c.ok]
        assert report.comparisons and not bad, (cut, bad)
