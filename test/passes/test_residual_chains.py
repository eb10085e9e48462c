"""Chains of Megatron-style blocks on random meshes: each block's output is the next block's
input and its residual, so reorder-elementwise meets a value a region sliced before another
region's all_gather produced it, and fuse-collective meets a value used both split (the next
residual) and gathered (the next matmul).

After split-all-reduce and reorder-elementwise no slice takes back what an all_gather joined
(`take_back`: the gather would only be undone), and every block keeps exactly one all_gather;
after fuse-collective no fused body yields one value twice (the split use reads the gathered
result's block). Every pipeline, down to the kernel level with planned memory, keeps the
program's result.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_overlap_fused import tensor
from test_random_programs import SETTINGS

import ccopt
from ccopt.dialects import coll
from ccopt.dialects.body import YieldOp
from ccopt.passes.pipeline import apply_pipeline


@st.composite
def chains(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray], int]:
    """A chain's text, its inputs and its number of blocks."""
    tp = draw(st.integers(1, 6))
    lead = draw(st.lists(st.integers(1, 5), min_size=1, max_size=2))
    d, f = draw(st.integers(1, 9)), draw(st.integers(1, 2 * tp + 3))
    n = draw(st.integers(2, 4))
    r = tensor([*lead, d], "R")
    h = tensor([*lead, f], f"S({len(lead)})")
    p = tensor([*lead, d], "P(sum)")
    w1, w2, b = tensor([d, f], "S(1)"), tensor([f, d], "S(0)"), tensor([d], "R")
    body, x = [], "%x"
    for i in range(n):
        body += [
            f"%h{i} = dtensor.matmul {x}, %w1 : ({r}, {w1}) -> {h}",
            f"%g{i} = dtensor.gelu %h{i} : {h}",
            f"%y{i} = dtensor.matmul %g{i}, %w2 : ({h}, {w2}) -> {p}",
            f"%a{i} = coll.all_reduce sum %y{i} over [tp] : {p} -> {r}",
        ]
        v = f"%a{i}"
        for j, step in enumerate(draw(st.lists(st.sampled_from(["bias", "dropout"]), max_size=2))):
            body.append(
                f"%s{i}_{j} = dtensor.add {v}, %b : ({r}, {b}) -> {r}"
                if step == "bias"
                else f"%s{i}_{j} = dtensor.dropout {v} seed {i} prob 0.25 : {r}"
            )
            v = f"%s{i}_{j}"
        body.append(f"%o{i} = dtensor.add {v}, {x} : ({r}, {r}) -> {r}")
        x = f"%o{i}"
    body.append(f"func.return {x} : {r}")
    args = f"%x: {r}, %w1: {w1}, %w2: {w2}, %b: {b}"
    lines = "\n  ".join(body)
    text = f"dtensor.mesh @tp [tp={tp}]\nfunc.func @chain({args}) -> {r} {{\n  {lines}\n}}\n"
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inputs = {
        "x": rng.uniform(0.5, 1.5, (*lead, d)).astype(np.float32),
        "w1": rng.uniform(0.5, 1.5, (d, f)).astype(np.float32),
        "w2": rng.uniform(0.5, 1.5, (f, d)).astype(np.float32),
        "b": rng.uniform(0.5, 1.5, (d,)).astype(np.float32),
    }
    return text, inputs, n


def undone_gathers(module) -> list[coll.SliceOp]:  # noqa: ANN001
    """Slices that take back exactly what an all_gather over their axes joined."""
    return [
        op
        for op in module.walk()
        if isinstance(op, coll.SliceOp)
        and isinstance(g := op.input.owner, coll.AllGatherOp)
        and g.axes == op.axes
        and g.input.type == op.result.type
    ]


@SETTINGS
@given(chain=chains(), data=st.data())
def test_chained_blocks_gather_once_and_keep_the_result(
    chain: tuple[str, dict[str, np.ndarray], int], data: st.DataObject
) -> None:
    text, inputs, blocks = chain
    reordered = apply_pipeline(ccopt.load_program(text), "split-all-reduce,reorder-elementwise")
    assert not undone_gathers(reordered)
    gathers = [op for op in reordered.walk() if isinstance(op, coll.AllGatherOp)]
    assert len(gathers) == blocks, "one all_gather per block"
    fused = apply_pipeline(
        ccopt.load_program(text), "split-all-reduce,reorder-elementwise,fuse-collective"
    )
    for op in fused.walk():
        if isinstance(op, coll.FusedAllReduceOp):
            for y in op.walk():
                if isinstance(y, YieldOp):
                    assert len(set(y.operands)) == len(y.operands), "a value yielded twice"
    pipeline = "split-all-reduce,reorder-elementwise,fuse-elementwise"
    if data.draw(st.booleans()):
        pipeline += ",fuse-collective"
    chunks = data.draw(st.integers(0, 3))
    if chunks:
        pipeline += f",overlap{{chunks={chunks}}}"
    if data.draw(st.booleans()):
        pipeline += ",convert-to-kernel,plan-memory"
    report = ccopt.check_pipeline(text, pipeline, inputs, rtol=1e-5)
    assert report.ok, (pipeline, report.comparisons)
