"""Collectives that refer to an `algo.algorithm` run it in the generated CUDA (one executor over
per-algorithm row tables: grouped ncclSend/ncclRecv per level, reduction kernels): on the CPU
harness every library algorithm gives, bit for bit, what the interpreter gives stepping through
the same algorithm (same chunks, same reduction order), and the collectives' own results.

`algorithms.mlir` holds 28 collectives of every kind on uneven 13x5 tensors; tags pick each
one's algorithm (25 distinct; max, f16 and i32 all-reduces share three of them). Two meshes:
8 ranks (groups of 4 and 8) and 6 ranks (3 and 6: recursive algorithms' non-power-of-two fix,
hierarchical 2x3). One g++ build per mesh."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_cuda import assert_same_shards, nvcc_available, nvcc_compile

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.dialects.algo import AlgorithmOp
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program

PROGRAM = Path(__file__).resolve().parent / "algorithms.mlir"

PIPELINE = ",".join(
    [
        "lower-collectives{tags=ring}",
        "lower-collectives{tags=ring2 channels=2 chunk_factor=2}",
        "lower-collectives{tags=direct algorithm=direct}",
        "lower-collectives{tags=rd algorithm=recursive_doubling}",
        "lower-collectives{tags=hd algorithm=halving_doubling chunk_factor=2}",
        "lower-collectives{tags=tree algorithm=tree}",
        "lower-collectives{tags=hier algorithm=hierarchical}",
        "lower-collectives{tags=pairwise algorithm=pairwise}",
        "lower-collectives{tags=bruck algorithm=bruck}",
    ]
)


@pytest.mark.parametrize("mesh", ["node=2,gpu=4", "node=2,gpu=3"])
def test_every_library_algorithm_runs_on_the_cpu_harness(mesh: str) -> None:
    module = load_program(PROGRAM)
    bind_mesh(module, mesh)
    plain = ccopt.run(module, seed=3)  # the collectives themselves
    run_pipeline(module, PIPELINE)
    algorithms = {op.sym_name.data for op in module.ops if isinstance(op, AlgorithmOp)}
    assert len(algorithms) == 25, sorted(algorithms)
    stepped = ccopt.run(module, plain.inputs)  # the interpreter, step by step through each
    run_pipeline(module, "convert-to-kernel,plan-memory")
    host = run_on_host(module, stepped.inputs)
    assert host.keys() == stepped.shards.keys()
    for name, shards in host.items():
        for rank, (got, want) in enumerate(zip(shards, stepped.shards[name], strict=True)):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on rank {rank}")
    # another reduction order than the collective's own: equal within rounding (f16: 2^-8)
    for name, shards in host.items():
        rtol = 1e-2 if shards[0].dtype == np.float16 else 1e-5
        assert_same_shards({name: shards}, plain.shards, rtol=rtol)


def test_nvcc_compiles_the_algorithm_executor() -> None:
    """The executor, its reduction kernel and the row tables compile for the GPU too."""
    nvcc_available()
    module = load_program(PROGRAM)
    bind_mesh(module, "node=2,gpu=3")
    run_pipeline(module, f"{PIPELINE},convert-to-kernel,plan-memory")
    assert nvcc_compile(emit_cuda(module), "ccopt_algorithms") == ""


def test_an_algorithm_without_its_workspace_is_refused() -> None:
    """Hand-written kernel IR that names an algorithm but gives its call no scratch buffer (or
    one too small) is refused at emission rather than run out of bounds."""
    from ccopt.backends.cuda.scalar import EmitError

    examples = Path(__file__).resolve().parents[2] / "examples"
    module = load_program(examples / "sgd.mlir")
    run_pipeline(module, "lower-collectives,convert-to-kernel")
    text = str(module)
    assert " scratch %algo_scratch : !kernel.buffer<516xf32, @dp[R]>" in text
    stripped = load_program(
        text.replace(" scratch %algo_scratch : !kernel.buffer<516xf32, @dp[R]>", "")
    )
    with pytest.raises(EmitError, match="needs a scratch buffer of 516 elements, got 0"):
        emit_cuda(stripped)
