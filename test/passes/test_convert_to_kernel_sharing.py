"""convert-to-kernel shares the bodies of kernels that compute alike while it lowers
(`Lowering.body_of`): the L1 body of every later alike op is released at once and its kernel
names the first one's `kernel.body`. A refused lowering leaves the L1 function whole: it is
checked before any op is lowered and freed."""

from __future__ import annotations

import pytest
from test_fused_body_cache import blocks
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, f32

from ccopt.diagnostics import OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects import kernel as k
from ccopt.passes import convert_to_kernel as ck
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.verifier import verify_module


def fused_program(seeds: list[int]):
    module = load_program(blocks(seeds))
    run_pipeline(module, "fuse-elementwise")
    return module


def test_alike_kernels_name_one_body_and_each_kernel_has_one() -> None:
    module = fused_program([7, 7, 7, 9])
    run_pipeline(module, "convert-to-kernel")
    kernels = [o for o in module.walk() if isinstance(o, k.ElementwiseOp)]
    assert len(kernels) == 4
    assert all(not o.regions and o.body_name() is not None for o in kernels)
    names = [o.body_name() for o in kernels]
    assert names[0] == names[1] == names[2] != names[3]
    assert sorted(b.sym_name.data for b in module.ops if isinstance(b, k.BodyOp)) == sorted(
        set(names)
    )


def test_a_refused_lowering_leaves_every_fused_body_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The function is checked before anything is lowered (`check_function`), so a refusal
    after alike bodies leaves all of them, and every op, in place."""
    module = fused_program([7, 7, 7])
    before = str(module)
    check = ck.check_op
    matmuls = 0

    def refusing(low: ck.Lowering, op) -> None:  # noqa: ANN001
        nonlocal matmuls
        if isinstance(op, dt.MatmulOp):
            matmuls += 1
            if matmuls == 3:  # after the alike fused ops before it
                raise OpError(op, "refused for the test")
        check(low, op)

    monkeypatch.setattr(ck, "check_op", refusing)
    with pytest.raises(Exception, match="refused for the test"):
        run_pipeline(module, "convert-to-kernel")
    verify_module(module)
    assert str(module) == before


def test_a_refusal_late_in_a_function_leaves_it_whole() -> None:
    """An op with no lowering after alike fused ops: the error, and the L1 function as it was
    (the lowering would have freed the ops before it)."""
    module = fused_program([7, 7, 7])
    f = next(o for o in module.ops if o.name == "func.func")
    ret = f.body.blocks[0].last_op
    ret.parent_block().insert_op_before(arith.ConstantOp(FloatAttr(1.0, f32)), ret)
    before = str(module)
    with pytest.raises(Exception, match="has no lowering to the kernel level"):
        run_pipeline(module, "convert-to-kernel")
    assert str(module) == before


def test_lowering_frees_the_l1_ops_as_it_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each L1 op is freed once it and every op reading it are lowered (`Lowering.done`): by
    the time the last op is lowered, only what it and the return read is left."""
    module = fused_program([7, 7, 7, 9])
    lower = ck.lower_op
    left: list[int] = []

    def counting(low: ck.Lowering, op) -> None:  # noqa: ANN001
        assert low.source is not None
        left.append(len(list(low.source.ops)))
        lower(low, op)

    monkeypatch.setattr(ck, "lower_op", counting)
    run_pipeline(module, "convert-to-kernel")
    assert left[0] == len(left) + 1  # every op but the return is lowered
    assert left[-1] <= 3  # the last op, what it reads, the return
