"""Index boxes on chunked fused collectives (`index_offset [..] in [..]`).

`overlap` cuts a fused collective into chunks; dropout inside its body keys on the element's
index in the whole value. Each chunk op carries an index box (its offsets in the whole value)
and the unchunked body unchanged, so: the chunk count does not change which elements dropout
keeps (L1 interpreter and the lowered kernel level alike), the chunks' bodies are equal, and
convert-to-kernel outlines them into one `kernel.body`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ccopt
from ccopt.dialects import coll
from ccopt.dialects import kernel as k
from ccopt.dialects.body import body_key
from ccopt.passes.pipeline import apply_pipeline

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "megatron_mlp.mlir"
FUSED = "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"
LOWER = "inline,convert-to-kernel,plan-memory"


def inputs() -> dict[str, np.ndarray]:
    """Positive inputs: a kept element of `dropout(y + b2) + x` is never exactly x."""
    rng = np.random.default_rng(5)
    shapes = {"x": (6, 10, 24), "w1": (24, 96), "b1": (96,), "w2": (96, 24), "b2": (24,)}
    return {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in shapes.items()}


def output(pipeline: str) -> np.ndarray:
    text = EXAMPLE.read_text()
    module = apply_pipeline(ccopt.load_program(text), pipeline) if pipeline else text
    (out,) = ccopt.run(module, inputs()).outputs.values()
    return out


@pytest.fixture(scope="module")
def unchunked() -> np.ndarray:
    return output(FUSED)


@pytest.mark.parametrize("lowered", [False, True], ids=["L1", "kernel"])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_dropout_keeps_the_same_elements_whatever_the_chunk_count(
    unchunked: np.ndarray, chunks: int, lowered: bool
) -> None:
    pipeline = f"{FUSED},overlap{{chunks={chunks}}}" + (f",{LOWER}" if lowered else "")
    got = output(pipeline)
    x = inputs()["x"]
    dropped = unchunked == x
    assert 0 < dropped.sum() < dropped.size  # prob 0.1: some dropped, most kept
    np.testing.assert_array_equal(got == x, dropped)
    np.testing.assert_allclose(got, unchunked, rtol=1e-5)
    np.testing.assert_allclose(got, output(""), rtol=1e-5)


def test_chunks_name_the_unchunked_body_once_down_to_the_kernels() -> None:
    whole = apply_pipeline(ccopt.load_program(EXAMPLE.read_text()), FUSED)
    (original,) = [op for op in whole.walk() if isinstance(op, coll.FusedAllReduceOp)]
    key = body_key(original.body_block())
    chunked = apply_pipeline(whole, "overlap{chunks=3}")
    ops = [op for op in chunked.walk() if isinstance(op, coll.FusedAllReduceOp)]
    assert [op.index_box() for op in ops] == [
        ((0, 0, 0), (6, 10, 24)),
        ((0, 0, 8), (6, 10, 24)),
        ((0, 0, 16), (6, 10, 24)),
    ]
    (name,) = {op.body_name() for op in ops}  # one body, no copies
    assert not any(op.regions for op in ops)
    (body,) = [o for o in chunked.ops if isinstance(o, k.BodyOp)]
    assert body.sym_name.data == name and body_key(body.body_block()) == key
    lowered = apply_pipeline(chunked, LOWER)
    kernels = [op for op in lowered.walk() if isinstance(op, k.ElementwiseOp) and op.index_box()]
    assert [op.index_box() for op in kernels] == [op.index_box() for op in ops]
    assert {op.body_name() for op in kernels} == {name}


def test_alike_fused_collectives_of_a_module_share_one_chunk_body() -> None:
    """Two blocks of a model: the chunks of both fused collectives name one body."""
    text = EXAMPLE.read_text()
    block = text[text.index("func.func") :]
    second = block.replace("@mlp", "@mlp2")
    module = apply_pipeline(ccopt.load_program(text + second), f"{FUSED},overlap{{chunks=2}}")
    ops = [op for op in module.walk() if isinstance(op, coll.FusedAllReduceOp)]
    assert len(ops) == 4
    names = {op.body_name() for op in ops}
    assert len(names) == 1
    chunk_bodies = [o for o in module.ops if isinstance(o, k.BodyOp) and o.sym_name.data in names]
    assert len(chunk_bodies) == 1  # (the blocks' alike dtensor.fused ops name another one)
