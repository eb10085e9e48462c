"""Reductions across a moved all_gather, on random shapes and meshes.

reorder-elementwise moves an all_gather below a `dtensor.reduce`: a reduction that keeps the
gathered dimension (a layernorm's statistics over the hidden dimension of a sequence-split
activation) runs on each rank's rows and stays split; one over the gathered dimension (a
layernorm's weight gradient) reduces each block into a partial result that an all_reduce
completes, when nothing else needs the whole value. Hypothesis draws the rank, the gathered
dimension, the reduced dimensions (with or without keepdim), the kind and an elementwise use
of the statistic; the reduction must run on the block, an all_reduce must appear exactly when
it reduces the gathered dimension, and the program's result must not change (a partial sum
adds in another order: rtol 1e-5).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_random_programs import SETTINGS

import ccopt
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.passes.pipeline import apply_pipeline


def tensor(shape: list[int], placement: str) -> str:
    dims = "".join(f"{n}x" for n in shape)
    return f"!dtensor.tensor<{dims}f32, @dp[{placement}]>"


@SETTINGS
@given(data=st.data())
def test_reductions_run_on_blocks(data: st.DataObject) -> None:
    ranks = data.draw(st.integers(1, 6))
    shape = data.draw(st.lists(st.integers(1, 7), min_size=2, max_size=3))
    split = data.draw(st.integers(0, len(shape) - 1))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    keepdim = data.draw(st.booleans())
    kind = data.draw(st.sampled_from(["sum", "mean", "max", "min"]))
    out = (
        [1 if d in dims else n for d, n in enumerate(shape)]
        if keepdim
        else [n for d, n in enumerate(shape) if d not in dims]
    )
    s, r = tensor(shape, f"S({split})"), tensor(shape, "R")
    o = tensor(out, "R")
    use = (
        "%y = dtensor.exp %m : " + o
        if not out or not keepdim
        else (f"%y = dtensor.sub %x, %m : ({r}, {o}) -> {r}")
    )
    y = r if keepdim and out else o
    text = (
        f"dtensor.mesh @dp [dp={ranks}]\n"
        f"func.func @f(%x_s: {s}) -> {y} {{\n"
        f"  %x = coll.all_gather %x_s over [dp] : {s} -> {r}\n"
        f"  %m = dtensor.reduce {kind} %x dims [{', '.join(map(str, dims))}]"
        f"{' keepdim' if keepdim else ''} : {r} -> {o}\n"
        f"  {use}\n"
        f"  func.return %y : {y}\n"
        "}\n"
    )
    moved = apply_pipeline(ccopt.load_program(text), "reorder-elementwise")
    (reduce,) = [op for op in moved.walk() if isinstance(op, dt.ReduceOp)]
    assert not isinstance(reduce.input.owner, coll.AllGatherOp), moved
    completed = [op for op in moved.walk() if isinstance(op, coll.AllReduceOp)]
    assert bool(completed) == (split in dims), moved
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    inputs = {"x_s": rng.uniform(0.5, 1.5, shape).astype(np.float32)}
    report = ccopt.check_pipeline(text, "reorder-elementwise,fuse-elementwise", inputs, rtol=1e-5)
    assert report.ok, (text, report.comparisons)


@SETTINGS
@given(data=st.data())
def test_softmax_and_layernorm_run_on_rows(data: st.DataObject) -> None:
    """A softmax or layernorm along a dimension other than the gathered one runs on each rank's
    rows (the gather moves after it); along the gathered one the gather stays before it. The
    rows are computed alike either way: the result is bitwise the same."""
    ranks = data.draw(st.integers(1, 6))
    shape = data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    split = data.draw(st.integers(0, len(shape) - 1))
    s, r = tensor(shape, f"S({split})"), tensor(shape, "R")
    last = tensor(shape[-1:], "R")
    if data.draw(st.booleans()):
        along = data.draw(st.integers(0, len(shape) - 1))
        op = f"%y = dtensor.softmax %x dim {along} : {r}"
        args = f"%x_s: {s}"
    else:
        along = len(shape) - 1
        params = data.draw(st.sampled_from(["", "weight", "bias", "weight bias"])).split()
        op = "%y = dtensor.layernorm %x" + "".join(f" {p} %{p} : {last}" for p in params)
        op += f" eps 1.000000e-05 : {r} -> {r}"
        args = ", ".join([f"%x_s: {s}", *(f"%{p}: {last}" for p in params)])
    text = (
        f"dtensor.mesh @dp [dp={ranks}]\n"
        f"func.func @f({args}) -> {r} {{\n"
        f"  %x = coll.all_gather %x_s over [dp] : {s} -> {r}\n"
        f"  {op}\n"
        f"  func.return %y : {r}\n"
        "}\n"
    )
    moved = apply_pipeline(ccopt.load_program(text), "reorder-elementwise")
    (row_op,) = [o for o in moved.walk() if isinstance(o, dt.SoftmaxOp | dt.LayerNormOp)]
    gathered_first = isinstance(row_op.operands[0].owner, coll.AllGatherOp)
    assert gathered_first == (along == split), moved
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    inputs = {
        "x_s": rng.uniform(0.5, 1.5, shape).astype(np.float32),
        "weight": rng.uniform(0.5, 1.5, shape[-1:]).astype(np.float32),
        "bias": rng.uniform(0.5, 1.5, shape[-1:]).astype(np.float32),
    }
    names = {"x_s", *(n for n in ("weight", "bias") if f"%{n}:" in args)}
    report = ccopt.check_pipeline(
        text, "reorder-elementwise", {n: v for n, v in inputs.items() if n in names}, rtol=0
    )
    assert report.ok, (text, report.comparisons)
