"""convert-to-kernel builds what it keeps: a slice read in place is a subview from the start
(no buffer and copy built to be erased), and optimizer steps alike copy and fold their bodies
once (later steps name the body the first one was outlined to); what it prints is unchanged."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from bench_programs import bench_module

from ccopt.dialects import kernel as k
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.runner import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEP_PIPELINE = (
    "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,fuse-collective,"
    "convert-to-kernel"
)

R = "!dtensor.tensor<8x6xf32, @t[S(0)]>"
S = "!dtensor.tensor<8x2xf32, @t[S(0)]>"


def built(monkeypatch: pytest.MonkeyPatch, classes: list[type]) -> Counter:
    """Counts of the ops of `classes` built from now on."""
    counts: Counter = Counter()
    for cls in classes:
        init = cls.__init__

        def counting(self, *args, _init=init, _cls=cls, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
            counts[_cls] += 1
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    return counts


def test_a_slice_read_in_place_builds_no_buffer_or_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    module = load_program(
        f"dtensor.mesh @t [tp=2]\nfunc.func @f(%x: {R}) -> {S} {{\n"
        f"  %s = dtensor.slice %x offsets [0, 1] sizes [8, 2] : {R} -> {S}\n"
        f"  %n = dtensor.neg %s : {S}\n"
        f"  func.return %n : {S}\n}}\n"
    )
    want = run(module.clone(), seed=1)
    counts = built(monkeypatch, [k.AllocOp, k.SliceKernelOp, k.SubviewOp])
    run_pipeline(module, "convert-to-kernel")
    assert counts == {k.SubviewOp: 1}
    np.testing.assert_allclose(run(module, seed=1).outputs["result0"], want.outputs["result0"])


def test_a_slice_whose_source_changes_before_its_reader_stays_a_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The source is updated in place while the slice is still read: the subview made while
    lowering becomes the buffer and the copy again, where they would have been."""
    module = load_program(
        f"dtensor.mesh @t [tp=2]\nfunc.func @f(%x: {R}) -> {S} {{\n"
        f"  %s = dtensor.slice %x offsets [0, 1] sizes [8, 2] : {R} -> {S}\n"
        f"  %y = dtensor.neg %x : {R}\n"
        f"  dtensor.update %x with %y : {R}\n"
        f"  %n = dtensor.neg %s : {S}\n"
        f"  func.return %n : {S}\n}}\n"
    )
    want = run(module.clone(), seed=1)
    run_pipeline(module, "convert-to-kernel")
    ops = [type(op) for op in module.walk()]
    if k.SliceKernelOp in ops:  # (the update went in place: the copy stayed)
        assert k.SubviewOp not in ops
        assert ops.index(k.AllocOp) + 1 == ops.index(k.SliceKernelOp)
    got = run(module, seed=1)
    np.testing.assert_allclose(got.outputs["result0"], want.outputs["result0"])


def steps(count: int) -> str:
    """`count` copies of the Adam example's step, as the compile-speed benchmark makes them."""
    return bench_module("compile_speed").optimizer_copies("adam", count)


def lowered_steps(count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """The printed kernel level of `count` Adam steps, and how many bodies were copied."""
    import ccopt.passes.convert_to_kernel as c2k
    import ccopt.passes.kernel_views as views

    copies = [0]
    for module_ in (c2k, views):
        clone = module_.clone_body

        def counting(body, _clone=clone):  # noqa: ANN001, ANN202
            copies[0] += 1
            return _clone(body)

        monkeypatch.setattr(module_, "clone_body", counting)
    module = load_program(steps(count))
    run_pipeline(module, STEP_PIPELINE)
    return str(module), copies[0]


def test_optimizer_steps_alike_copy_their_bodies_once(monkeypatch: pytest.MonkeyPatch) -> None:
    two, copied_two = lowered_steps(2, monkeypatch)
    six, copied_six = lowered_steps(6, monkeypatch)
    assert copied_two == copied_six > 0  # the first step's; the others name its bodies
    bodies_two = [line for line in two.splitlines() if "kernel.body @" in line]
    bodies_six = [line for line in six.splitlines() if "kernel.body @" in line]
    assert bodies_two == bodies_six
