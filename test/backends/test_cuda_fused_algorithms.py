"""A fused all-reduce with its body inside its algorithm (`lower-collectives{fused_body=in-algorithm}`)
in the generated CUDA: the executor's fn rows launch the body's elementwise kernel on the runs of
the chunks each completing step names, gathered results ride in the chunks' slots, split results
are written where the body ran. On the CPU harness every output equals what the interpreter
gives stepping through the same algorithm chunk by chunk: bit for bit where only the sums and
IEEE-exact operations make it (the moments m, v; SGD's weights; a scaled sum), within rounding
where libm and numpy may differ by an ulp (powf of Adam's bias corrections, exp) - the examples
on ring, direct and halving-doubling algorithms and several rank counts, and a body of the sum
alone on a tree (whose roots run the body on runs of several members' slices) over a 2-D mesh,
5 elements on 7 ranks (empty slices and chunks), and two fused all-reduces on a 2x3 mesh (over
both axes, and over one axis of blocks the other splits).
In f16 and bf16 too (the examples' f32 spelled so): the bodies then run on half-precision chunks,
each operation rounded to the type as the interpreter rounds it; what is exact in f32 is exact
there, the rest within a few units in the last place of the type, NaNs at the same places.
One g++ build per case; the default run builds five."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from optimizer_pipelines import FUSED
from test_cuda import assert_same_shards, nvcc_available, nvcc_compile

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.backends.cuda.emit import emit_cuda
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PREFIX = {
    **FUSED,
    "scaled": "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective",
    "tiny": "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective",
    "two_axes": "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective",
}

SCALED = """
!p = !dtensor.tensor<37x3xf32, @m[P(sum), P(sum)]>
!r = !dtensor.tensor<37x3xf32, @m[R, R]>
dtensor.mesh @m [node=2, gpu=2]
func.func @scaled(%g: !p) -> (!r, !r) {
  %s = coll.all_reduce sum %g over [node, gpu] : !p -> !r
  %h = dtensor.scale %s by 0.5 : !r
  %e = dtensor.exp %h : !r
  func.return %e, %h : !r, !r
}
"""


TINY = """
!p = !dtensor.tensor<5xf32, @dp[P(sum)]>
!r = !dtensor.tensor<5xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp=7]
func.func @step(%g: !p, %w: !r, %lr: !scalar) -> (!r, !r) {
  %s = coll.all_reduce sum %g over [dp] : !p -> !r
  %u = dtensor.mul %lr, %s : (!scalar, !r) -> !r
  %w1 = dtensor.sub %w, %u : (!r, !r) -> !r
  %h = dtensor.scale %s by 0.5 : !r
  func.return %w1, %h : !r, !r
}
"""
"""5 elements on 7 ranks: two members' slices are empty, and so are their chunks."""

TWO_AXES = """
!p = !dtensor.tensor<37x3xf32, @m[P(sum), P(sum)]>
!q = !dtensor.tensor<37x3xf32, @m[S(1), P(sum)]>
!r = !dtensor.tensor<37x3xf32, @m[R, R]>
!h = !dtensor.tensor<37x3xf32, @m[S(1), R]>
!scalar = !dtensor.tensor<f32, @m[R, R]>
dtensor.mesh @m [node=2, gpu=3]
func.func @step(%g: !p, %w: !r, %lr: !scalar, %k: !q, %x: !h) -> (!r, !h) {
  %s = coll.all_reduce sum %g over [node, gpu] : !p -> !r
  %u = dtensor.mul %lr, %s : (!scalar, !r) -> !r
  %w1 = dtensor.sub %w, %u : (!r, !r) -> !r
  %t = coll.all_reduce sum %k over [gpu] : !q -> !h
  %v = dtensor.mul %t, %x : (!h, !h) -> !h
  func.return %w1, %v : !r, !h
}
"""
"""SGD over both axes of a 2x3 mesh, and a product over one axis of blocks the other axis
splits (each node's group its own layout)."""

SOURCES = {"scaled": SCALED, "tiny": TINY, "two_axes": TWO_AXES}


def source(example: str, dtype: str) -> str:
    """The example's text with its element type spelled `dtype` (f32 as written)."""
    text = SOURCES.get(example) or (EXAMPLES / example).read_text()
    return text if dtype == "f32" else text.replace("f32", dtype)


def lowered(example: str, options: str, mesh: str | None, dtype: str = "f32"):
    module = load_program(source(example, dtype))
    if mesh is not None:
        bind_mesh(module, mesh)
    run_pipeline(
        module, f"{PREFIX[example]},lower-collectives{{fused_body=in-algorithm {options}}}"
    )
    return module


EXACT = {
    "adam.mlir": ("m", "v"),
    "lamb.mlir": ("m", "v"),
    "sgd.mlir": ("w",),
    "scaled": ("result1",),
    "tiny": ("result0", "result1"),
    "two_axes": ("result0", "result1"),
}


RTOL = {"f32": 1e-5, "f16": 4 * 2.0**-11, "bf16": 4 * 2.0**-8}
"""Four units in the last place of each type (a unit of roundoff is 2^-11 for f16's 11-bit
significand, 2^-8 for bf16's 8): libm and numpy may differ by one in powf or exp, and a result
that is computed from another inherits its rounding."""

NUMPY_TYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def check_on_host(example: str, options: str, mesh: str | None, dtype: str = "f32") -> None:
    module = lowered(example, options, mesh, dtype)
    stepped = ccopt.run(module, seed=3)  # the interpreter, chunk by chunk through the algorithm
    run_pipeline(module, "convert-to-kernel,plan-memory")
    host = run_on_host(module, stepped.inputs)
    assert host.keys() == stepped.shards.keys()
    for name, shards in host.items():
        for rank, (got, want) in enumerate(zip(shards, stepped.shards[name], strict=True)):
            assert got.dtype == want.dtype, (name, rank, got.dtype, want.dtype)
            assert str(got.dtype) == NUMPY_TYPE[dtype], (name, rank, got.dtype)
    for name in EXACT[example]:
        for rank, (got, want) in enumerate(zip(host[name], stepped.shards[name], strict=True)):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on rank {rank}")
    assert_same_shards(host, stepped.shards, rtol=RTOL[dtype])


@pytest.mark.parametrize(
    ("example", "options", "mesh"),
    [
        ("adam.mlir", "chunk_factor=2", "dp=4"),
        ("lamb.mlir", "algorithm=halving_doubling", "dp=4"),
        ("scaled", "algorithm=tree", None),
    ],
)
def test_fused_body_inside_the_algorithm_on_the_cpu_harness(
    example: str, options: str, mesh: str | None
) -> None:
    check_on_host(example, options, mesh)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "options", "mesh"),
    [
        ("adam.mlir", "algorithm=direct chunk_factor=2", "dp=5"),
        ("adam.mlir", "algorithm=halving_doubling chunk_factor=2", "dp=8"),
        ("adam.mlir", "channels=2", "dp=1"),
        ("sgd.mlir", "channels=3 chunk_factor=2", "dp=3"),
        ("sgd.mlir", "algorithm=halving_doubling chunk_factor=2", "dp=2"),
        ("lamb.mlir", "", "dp=3"),
        ("lamb.mlir", "algorithm=direct", "dp=2"),
        ("scaled", "algorithm=hierarchical", None),
        ("scaled", "algorithm=ring chunk_factor=3", None),
        ("tiny", "channels=2", None),
        ("tiny", "algorithm=direct chunk_factor=2", None),
        ("two_axes", "algorithm=hierarchical chunk_factor=2", None),
        ("two_axes", "channels=2", None),
    ],
)
def test_more_algorithms_and_rank_counts(example: str, options: str, mesh: str | None) -> None:
    check_on_host(example, options, mesh)


@pytest.mark.parametrize(
    ("dtype", "example", "options", "mesh"),
    [
        ("f16", "adam.mlir", "chunk_factor=2", "dp=4"),
        ("bf16", "tiny", "channels=2", None),
    ],
)
def test_half_precision_bodies_inside_the_algorithm_on_the_cpu_harness(
    dtype: str, example: str, options: str, mesh: str | None
) -> None:
    """f16 and bf16 fused bodies (half-precision chunks summed, the body's operations on them,
    results gathered in the chunks' slots) give what the interpreter gives."""
    check_on_host(example, options, mesh, dtype)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dtype", "example", "options", "mesh"),
    [
        ("bf16", "adam.mlir", "algorithm=halving_doubling chunk_factor=2", "dp=8"),
        ("f16", "lamb.mlir", "algorithm=direct", "dp=2"),
        ("bf16", "lamb.mlir", "algorithm=halving_doubling", "dp=4"),
        ("f16", "sgd.mlir", "channels=3 chunk_factor=2", "dp=3"),
        ("f16", "scaled", "algorithm=tree", None),
        ("bf16", "scaled", "algorithm=ring chunk_factor=3", None),
        ("f16", "tiny", "algorithm=direct chunk_factor=2", None),
        ("bf16", "two_axes", "algorithm=hierarchical chunk_factor=2", None),
        ("f16", "two_axes", "channels=2", None),
    ],
)
def test_more_half_precision_algorithms(
    dtype: str, example: str, options: str, mesh: str | None
) -> None:
    check_on_host(example, options, mesh, dtype)


def test_the_kernel_level_interpreter_agrees() -> None:
    """The kernel level's `kernel.fused_all_reduce` runs through the same algorithm in the
    interpreter (every pass checked on numbers)."""
    pipeline = (
        f"{PREFIX['adam.mlir']},lower-collectives{{fused_body=in-algorithm "
        "algorithm=halving_doubling},convert-to-kernel,plan-memory"
    )
    report = ccopt.check_pipeline(EXAMPLES / "adam.mlir", pipeline, mesh="dp=4", seed=5)
    assert report.ok, [c for c in report.comparisons if not c.ok]


@pytest.mark.slow
def test_nvcc_compiles_the_fused_executor() -> None:
    """The executor with its fn rows' lambda, the body's ranged kernel and the pack and unpack
    kernels compile for the GPU too."""
    nvcc_available()
    module = lowered("lamb.mlir", "algorithm=halving_doubling", "dp=4")
    run_pipeline(module, "convert-to-kernel,plan-memory")
    assert nvcc_compile(emit_cuda(module), "ccopt_fused_algo") == ""
