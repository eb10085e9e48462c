"""The backend's shape-dependent kernels on random shapes and placements, run on the CPU harness
against the interpreter: the reduction layouts `reduce_layout` picks (a thread per output and
range of the reduced elements or not, a block per output or row; the zoo's norms cover blocks
split per output, which need thousands of elements a row), copies that transpose
(`tiled_copy`: edges off the 32x32 tiles, batches) or not, and elementwise kernels whose
operands broadcast (the dimensions `merge_dims` folds). Shapes reach 70 per dimension, past the
thresholds (a warp of outputs, 16 elements a tile side) the fixed examples sit beside; blocks
are uneven across ranks and may be empty. A sixth of `CCOPT_HYPOTHESIS_EXAMPLES` programs:
each is a C++ build."""

from __future__ import annotations

import os
from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_cuda import assert_same_shards

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.frontend import Program, R, S
from ccopt.passes.pipeline import apply_pipeline

MESHES = [{"a": 2}, {"a": 3}, {"a": 2, "b": 3}]
TOLERANCE = {"f32": 1e-5, "bf16": 1e-2}  # bf16 sums round to one ulp either side


@st.composite
def programs(draw: st.DrawFn) -> tuple[Program, str]:
    axes = draw(st.sampled_from(MESHES))
    rank = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    big = st.integers(16, 70)
    size = st.one_of(st.integers(1, 6), big, big)  # below and (mostly) past the thresholds
    shape = draw(st.lists(size, min_size=rank, max_size=rank))
    assume(prod(shape) <= 150_000)
    split = [draw(st.integers(-1, rank - 1)) for _ in axes]  # per axis: the dimension, or R
    placements = [S(d) if d >= 0 else R for d in split]
    dtype = draw(st.sampled_from(sorted(TOLERANCE)))
    p = Program("f", **axes)
    x = p.input("x", shape, dtype, *placements)
    kind = draw(st.sampled_from(["reduce", "transpose", "broadcast"]))
    if kind == "reduce":  # leading dimensions only (a bias gradient) half the time
        last = rank - 1 if rank == 1 or draw(st.booleans()) else rank - 2
        dims = draw(st.sets(st.integers(0, last), min_size=1))
        how = draw(st.sampled_from(["sum", "mean", "max"]))
        p.returns(x.reduce(how, sorted(dims)))
    elif kind == "transpose":
        perm = draw(st.permutations(range(rank)))
        if rank > 1 and perm[-1] == rank - 1 and draw(st.booleans()):
            perm[-1], perm[0] = perm[0], perm[-1]  # the sides contiguous along different dims
        p.returns(x.transpose(perm))
    else:  # a bias along the trailing dimensions, and a product of dense operands
        start = draw(st.integers(0, rank - 1))
        along = [S(d - start) if d >= start else R for d in split]
        bias = p.input("bias", shape[start:], dtype, *along)  # split as x is where it has x's dims
        p.returns(x + bias, x * x)
    return p, dtype


@settings(
    max_examples=max(1, int(os.environ.get("CCOPT_HYPOTHESIS_EXAMPLES", "60")) // 6),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    derandomize=bool(os.environ.get("CI")),
)
@given(case=programs(), order=st.sampled_from(["low", "high"]))
def test_shape_dependent_kernels_compute_what_the_interpreter_does(
    case: tuple[Program, str], order: str
) -> None:
    program, dtype = case
    low = apply_pipeline(program.module, "convert-to-kernel,plan-memory")
    reference = ccopt.run(low, seed=7)
    shards = run_on_host(low, reference.inputs, schedule=order, timeout_s=20)
    assert_same_shards(shards, reference.shards, rtol=TOLERANCE[dtype])
