"""convert-to-kernel outlines scalar bodies (`outline_bodies`): identical bodies of a program's
repeated blocks become one module-level `kernel.body` that the kernels name; a body that
differs in anything (a dropout seed) gets its own; every kernel names a body and the kernel
level computes what the distributed program computes."""

from __future__ import annotations

import numpy as np
from test_fused_body_cache import blocks
from xdsl.dialects.builtin import ModuleOp

from ccopt.dialects import kernel as k
from ccopt.passes.convert_to_kernel import outline_bodies
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.runner import run


def lowered(seeds: list[int]) -> ModuleOp:
    module = load_program(blocks(seeds))
    run_pipeline(module, "fuse-elementwise,convert-to-kernel")
    return module


def named(module: ModuleOp) -> list[str]:
    """The body each elementwise kernel names, in program order."""
    kernels = [op for op in module.walk() if isinstance(op, k.ElementwiseOp)]
    assert kernels and all(not op.regions and op.body_ref is not None for op in kernels)
    return [op.body_ref.root_reference.data for op in kernels if op.body_ref is not None]


def bodies(module: ModuleOp) -> list[k.BodyOp]:
    return [op for op in module.ops if isinstance(op, k.BodyOp)]


def test_repeated_blocks_share_one_body_and_another_seed_gets_its_own() -> None:
    module = lowered([5, 5, 5, 9])
    names = named(module)
    assert len(names) == 4
    assert names[0] == names[1] == names[2] != names[3]
    assert sorted(b.sym_name.data for b in bodies(module)) == sorted(set(names))


def test_bodies_are_placed_after_their_function_and_reused_when_outlining_again() -> None:
    module = lowered([1, 2])
    kinds = [type(op) for op in module.ops]
    assert kinds.index(k.BodyOp) > max(i for i, t in enumerate(kinds) if t.__name__ == "FuncOp")
    before = [b.sym_name.data for b in bodies(module)]
    outline_bodies(module)  # nothing left inline: the same bodies, no new ones
    assert [b.sym_name.data for b in bodies(module)] == before


def test_the_kernel_level_computes_what_the_program_computes() -> None:
    program = blocks([3, 3, 4])
    module = lowered([3, 3, 4])
    want = run(program, seed=1)
    got = run(module, seed=1)
    for name, value in want.outputs.items():
        np.testing.assert_allclose(got.outputs[name], value, rtol=1e-5, atol=1e-6)


def test_a_fill_folded_into_a_named_body_copies_it_and_the_unused_body_goes() -> None:
    """fold_fills on a kernel that names a shared body changes a copy; outlining again names
    the copy and drops the body no kernel names any more."""
    from xdsl.dialects import func

    from ccopt.passes.kernel_views import fold_fills

    r = "!dtensor.tensor<8xf32, @t[R]>"
    module = load_program(
        f"dtensor.mesh @t [tp=4]\nfunc.func @f(%x: {r}) -> {r} {{\n"
        f"  %f = dtensor.fill 1.5 : {r}\n"
        f"  %y = dtensor.add %x, %f : ({r}, {r}) -> {r}\n"
        f"  func.return %y : {r}\n}}\n"
    )
    want = run(module.clone(), seed=2)
    run_pipeline(module, "convert-to-kernel{views=false}")
    (shared,) = bodies(module)
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    assert fold_fills(f.body.blocks[0]) == 1
    outline_bodies(module)
    (copy,) = bodies(module)
    assert copy is not shared and named(module) == [copy.sym_name.data]
    module.verify()
    np.testing.assert_allclose(run(module, seed=2).outputs["result0"], want.outputs["result0"])
