"""Overlapping a matmul with the fused collective after it, on random Megatron-style blocks.

Random random-program DAGs rarely put a fused collective right after a matmul, so this draws
that shape directly: a row-parallel matmul (batched or not, uneven sizes, 1-8 ranks), its
all-reduce, then a random chain of bias, gelu, dropout and residual; split along a random
dimension, reordered, fused into one collective and overlapped in a random number of chunks -
sometimes lowered to the kernel level with planned memory. The result must match the
unoptimized program (inputs positive so chunked dot products do not cancel), dropout must drop
the same elements whatever the chunking, and wherever a dimension other than the scattered one
can be cut, the fused collective must really be chunked.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, event, given
from hypothesis import strategies as st
from test_random_programs import SETTINGS

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll, sched
from ccopt.passes.pipeline import apply_pipeline


def tensor(shape: list[int], placement: str) -> str:
    return f"!dtensor.tensor<{'x'.join(map(str, shape))}xf32, @tp[{placement}]>"


@st.composite
def blocks(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], list[int]]:
    """A block's text, its inputs and the matmul output shape."""
    tp = draw(st.integers(1, 8))
    lead = draw(st.lists(st.integers(1, 7), min_size=1, max_size=2))
    k, h = draw(st.integers(1, 3 * tp + 2)), draw(st.integers(1, 11))
    out = [*lead, h]
    x, w = tensor([*lead, k], f"S({len(lead)})"), tensor([k, h], "S(0)")
    p, r = tensor(out, "P(sum)"), tensor(out, "R")
    body = [
        f"%y = dtensor.matmul %x, %w : ({x}, {w}) -> {p}",
        f"%v0 = coll.all_reduce sum %y over [tp] : {p} -> {r}",
    ]
    steps = draw(st.lists(st.sampled_from(["bias", "gelu", "dropout", "residual"]), max_size=4))
    for i, step in enumerate(steps, start=1):
        prev = f"%v{i - 1}"
        body.append(
            {
                "bias": f"%v{i} = dtensor.add {prev}, %b : ({r}, {tensor([h], 'R')}) -> {r}",
                "gelu": f"%v{i} = dtensor.gelu {prev} : {r}",
                "dropout": f"%v{i} = dtensor.dropout {prev} seed {draw(st.integers(0, 99))} "
                f"prob {draw(st.sampled_from([0.1, 0.5]))} : {r}",
                "residual": f"%v{i} = dtensor.add {prev}, %res : ({r}, {r}) -> {r}",
            }[step]
        )
    body.append(f"func.return %v{len(steps)} : {r}")
    args = f"%x: {x}, %w: {w}, %b: {tensor([h], 'R')}, %res: {r}"
    lines = "\n  ".join(body)
    text = f"dtensor.mesh @tp [tp={tp}]\nfunc.func @block({args}) -> {r} {{\n  {lines}\n}}\n"
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inputs = {
        "x": rng.uniform(0.5, 1.5, (*lead, k)).astype(np.float32),
        "w": rng.uniform(0.5, 1.5, (k, h)).astype(np.float32),
        "b": rng.uniform(0.5, 1.5, (h,)).astype(np.float32),
        "res": rng.uniform(0.5, 1.5, out).astype(np.float32),
    }
    return text, inputs, out


@SETTINGS
@given(block=blocks(), data=st.data())
def test_overlapped_fused_collective_keeps_the_results(
    block: tuple[str, dict[str, np.ndarray], list[int]], data: st.DataObject
) -> None:
    text, inputs, shape = block
    dim = data.draw(st.integers(0, len(shape) - 1))
    chunks = data.draw(st.integers(1, 5))
    fused = f"split-all-reduce{{dim={dim}}},reorder-elementwise,fuse-collective"
    try:
        before = apply_pipeline(ccopt.load_program(text), fused)
    except CcoptError:
        assume(False)  # this dimension cannot be scattered on this mesh
    assume(any(isinstance(op, coll.FusedAllReduceOp) for op in before.walk()))
    pipeline = f"{fused},overlap{{chunks={chunks}}}"
    overlapped = apply_pipeline(ccopt.load_program(text), pipeline)
    chunked = [
        op
        for op in overlapped.walk()
        if isinstance(op, coll.FusedAllReduceOp) and isinstance(op.parent_op(), sched.ExecuteOp)
    ]
    cuttable = any(d != dim and n >= 2 for d, n in enumerate(shape))
    if chunks > 1 and cuttable:
        assert chunked, "a fused collective after a matmul with a free dimension is chunked"
    event(f"chunked into {len(chunked)}" if chunked else "left whole")
    if data.draw(st.booleans()):
        pipeline += ",convert-to-kernel,plan-memory"
    report = ccopt.check_pipeline(text, pipeline, inputs, rtol=1e-5)
    assert report.ok, (pipeline, report.comparisons)
