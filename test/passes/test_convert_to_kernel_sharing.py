"""convert-to-kernel shares the bodies of kernels that compute alike while it lowers
(`Lowering.body_of`): the L1 body of every later alike op is released at once and its kernel
names the first one's `kernel.body`. A lowering that fails still leaves the L1 function whole."""

from __future__ import annotations

import pytest
from test_fused_body_cache import blocks

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


def test_a_failed_lowering_leaves_every_fused_body_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = fused_program([7, 7, 7])
    before = str(module)
    lower = ck.lower_op
    matmuls = 0

    def failing(low: ck.Lowering, op) -> None:  # noqa: ANN001
        nonlocal matmuls
        if isinstance(op, dt.MatmulOp):
            matmuls += 1
            if matmuls == 3:  # after the second and third alike bodies were released
                raise OpError(op, "refused for the test")
        lower(low, op)

    monkeypatch.setattr(ck, "lower_op", failing)
    with pytest.raises(Exception, match="refused for the test"):
        run_pipeline(module, "convert-to-kernel")
    verify_module(module)
    assert str(module) == before
