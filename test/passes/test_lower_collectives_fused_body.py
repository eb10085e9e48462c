"""lower-collectives{fused_body=in-algorithm} on numbers: the optimizer examples, fused by
fuse-collective, then run chunk by chunk through an all-reduce algorithm with the body at each
chunk's completing step, give the results of the unfused programs, on several meshes and
algorithms; where no such place exists the pass refuses with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from optimizer_pipelines import FUSED

import ccopt
from ccopt.diagnostics import CcoptError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PREFIX = FUSED


@pytest.mark.parametrize(
    ("example", "options", "mesh"),
    [
        ("adam.mlir", "", "dp=4"),
        ("adam.mlir", "chunk_factor=3", "dp=3"),
        ("adam.mlir", "algorithm=direct", "dp=5"),
        ("adam.mlir", "algorithm=halving_doubling chunk_factor=2", "dp=8"),
        ("adam.mlir", "channels=2", "dp=1"),
        ("sgd.mlir", "channels=3 chunk_factor=2", "dp=4"),
        ("sgd.mlir", "algorithm=direct", "dp=2"),
        ("lamb.mlir", "", "dp=3"),
        ("lamb.mlir", "algorithm=halving_doubling", "dp=4"),
    ],
)
def test_body_inside_the_algorithm_computes_the_same(example: str, options: str, mesh: str) -> None:
    pipeline = f"{PREFIX[example]},lower-collectives{{fused_body=in-algorithm {options}}}"
    report = ccopt.check_pipeline(EXAMPLES / example, pipeline, mesh=mesh, seed=5)
    assert report.ok, [c for c in report.comparisons if not c.ok]


SCALED = """
!p = !dtensor.tensor<37x3xf32, @m[P(sum), P(sum)]>
!r = !dtensor.tensor<37x3xf32, @m[R, R]>
dtensor.mesh @m [node=2, gpu=2]
func.func @scaled(%g: !p) -> !r {
  %s = coll.all_reduce sum %g over [node, gpu] : !p -> !r
  %h = dtensor.scale %s by 0.5 : !r
  %e = dtensor.exp %h : !r
  func.return %e : !r
}
"""


@pytest.mark.parametrize("algorithm", ["tree", "hierarchical", "ring", "halving_doubling"])
def test_a_body_of_the_sum_alone_runs_anywhere(algorithm: str) -> None:
    """A body with no split operands or results (scale, exp of the sum): a tree completes every
    chunk at its roots and runs the body there, on elements of every member's slice; the 2-D
    hierarchical algorithm over both axes completes each chunk once too."""
    pipeline = (
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        f"lower-collectives{{fused_body=in-algorithm algorithm={algorithm}}}"
    )
    report = ccopt.check_pipeline(SCALED, pipeline, entry="scaled", seed=2)
    assert report.ok, [c for c in report.comparisons if not c.ok]


TWO_AXES = """
!p = !dtensor.tensor<37x3xf32, @m[P(sum), P(sum)]>
!r = !dtensor.tensor<37x3xf32, @m[R, R]>
!scalar = !dtensor.tensor<f32, @m[R, R]>
dtensor.mesh @m [node=2, gpu=3]
func.func @step(%g: !p, %w: !r, %lr: !scalar) -> !r {
  %s = coll.all_reduce sum %g over [node, gpu] : !p -> !r
  %u = dtensor.mul %lr, %s : (!scalar, !r) -> !r
  %w1 = dtensor.sub %w, %u : (!r, !r) -> !r
  func.return %w1 : !r
}
"""


@pytest.mark.parametrize("options", ["algorithm=hierarchical chunk_factor=2", "channels=2"])
def test_two_axes_with_a_sliced_operand(options: str) -> None:
    """SGD over both axes of a 2x3 mesh: the 2-D hierarchical algorithm (reduce-scatter within
    a node, all-reduce across, all-gather back) completes each chunk on the rank whose slice of
    w it is, so the body reads w where it lives."""
    pipeline = (
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        f"lower-collectives{{fused_body=in-algorithm {options}}}"
    )
    report = ccopt.check_pipeline(TWO_AXES, pipeline, entry="step", seed=4)
    assert report.ok, [c for c in report.comparisons if not c.ok]


EMPTY_BLOCKS = """
!p = !dtensor.tensor<2x8xf32, @m[S(0), P(sum)]>
!r = !dtensor.tensor<2x8xf32, @m[S(0), R]>
dtensor.mesh @m [b=4, c=1]
func.func @prog(%x: !p, %y: !r) -> !r {
  %0 = coll.all_reduce sum %x over [c] : !p -> !r
  %1 = dtensor.add %0, %y : (!r, !r) -> !r
  func.return %1 : !r
}
"""


@pytest.mark.parametrize("mesh", ["b=4,c=1", "b=4,c=2"])
def test_ranks_whose_slices_are_all_empty(mesh: str) -> None:
    """Two rows split over four ranks: two of them hold nothing, and in their groups every
    member's slice is empty. The interpreter indexed their empty partial sums (an IndexError
    traceback, found by test_random_programs_cuda); they now add nothing."""
    pipeline = (
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        "lower-collectives{fused_body=in-algorithm}"
    )
    report = ccopt.check_pipeline(EMPTY_BLOCKS, pipeline, mesh=mesh, seed=2)
    assert report.ok, [c for c in report.comparisons if not c.ok]


def test_tree_refuses_a_body_with_sliced_state() -> None:
    pipeline = PREFIX["adam.mlir"] + ",lower-collectives{fused_body=in-algorithm algorithm=tree}"
    with pytest.raises(CcoptError, match="group member 1 holds a slice but completes no chunk"):
        ccopt.check_pipeline(EXAMPLES / "adam.mlir", pipeline, mesh="dp=4")


def test_an_unknown_fused_body_mode_is_an_option_error() -> None:
    with pytest.raises(CcoptError, match="fused-body is one of after, in-algorithm"):
        ccopt.check_pipeline(
            EXAMPLES / "sgd.mlir", "lower-collectives{fused_body=inside}", mesh="dp=2"
        )


def _lowered(pipeline: str) -> str:
    import subprocess

    return subprocess.run(
        ["ccopt", str(EXAMPLES / "sgd.mlir"), "-p", pipeline],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_only_a_fused_all_reduce_may_name_an_algorithm_with_a_body() -> None:
    import re

    fused = _lowered(PREFIX["sgd.mlir"] + ",lower-collectives{fused_body=in-algorithm}")
    other = (
        "func.func @other(%x: !dtensor.tensor<8xf32, @dp[P(sum)]>) -> "
        "!dtensor.tensor<8xf32, @dp[R]> {\n"
        "    %y = coll.all_reduce sum %x over [dp] {algo.algorithm = @allreduce_ring_4_fused} : "
        "!dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>\n"
        "    func.return %y : !dtensor.tensor<8xf32, @dp[R]>\n  }\n  func.func @sgd("
    )
    with pytest.raises(CcoptError, match="only a coll.fused_all_reduce may name it"):
        ccopt.run(fused.replace("func.func @sgd(", other), entry="other")
    without = re.sub(r"fn o\[\d+\] -> i\[\d+\] x1", "nop _ -> _ x0", fused)
    with pytest.raises(CcoptError, match="has no fn steps: the fused body has no place to run"):
        ccopt.run(without, entry="sgd")


SGD_SLICED = """
!p = !dtensor.tensor<{n}xf32, @dp[P(sum)]>
!r = !dtensor.tensor<{n}xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp={ranks}]
func.func @step(%g: !p, %w: !r, %lr: !scalar) -> (!r, !r) {{
  %s = coll.all_reduce sum %g over [dp] : !p -> !r
  %u = dtensor.mul %lr, %s : (!scalar, !r) -> !r
  %w1 = dtensor.sub %w, %u : (!r, !r) -> !r
  %e = dtensor.exp %s : !r
  func.return %w1, %e : !r, !r
}}
"""


@settings(max_examples=10, deadline=None)
@given(
    ranks=st.integers(1, 7),
    n=st.integers(1, 40),
    algorithm=st.sampled_from(["ring", "direct", "halving_doubling", "tree"]),
    chunk_factor=st.integers(1, 2),
)
def test_random_sizes_ranks_and_algorithms(
    ranks: int, n: int, algorithm: str, chunk_factor: int
) -> None:
    """SGD with two results (the updated weights, reading w's slice, and exp of the sum) on
    random rank counts and uneven sizes (slices may be empty): inside every algorithm that has a
    place for the body the program computes what it did unfused; elsewhere the refusal says why
    (a member with a slice of w that completes no chunk)."""
    pipeline = (
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        f"lower-collectives{{fused_body=in-algorithm algorithm={algorithm} "
        f"chunk_factor={chunk_factor}}}"
    )
    try:
        report = ccopt.check_pipeline(
            SGD_SLICED.format(n=n, ranks=ranks), pipeline, entry="step", seed=n
        )
    except CcoptError as e:
        assert "holds a slice but completes no chunk" in str(e)
        event(f"refused: {algorithm}")
        return
    assert report.ok, [c for c in report.comparisons if not c.ok]
