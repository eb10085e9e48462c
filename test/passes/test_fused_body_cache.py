"""Fused bodies are built once per group signature in a pass application
(`ccopt.passes.fusion_groups.SharedBodies`): groups that read and compute alike name one
module-level body (`kernel.body`), which an op about to change its body first copies
(`own_body`); a group that differs in anything its body reads (a dropout seed, an element type)
gets its own body, inline when no other op computes it."""

from __future__ import annotations

from xdsl.ir import Operation

from ccopt.dialects import dtensor as dt
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.verifier import region_structure

T = "!dtensor.tensor<8x4xf32, @m[S(0)]>"
W = "!dtensor.tensor<4x4xf32, @m[R]>"


def blocks(seeds: list[int]) -> str:
    """Chained blocks - gelu, dropout with a seed, a residual add, a matmul - one per seed."""
    lines, x = [], "%x"
    for i, seed in enumerate(seeds):
        lines.append(
            f"  %g{i} = dtensor.gelu {x} : {T}\n"
            f"  %d{i} = dtensor.dropout %g{i} seed {seed} prob 0.1 : {T}\n"
            f"  %r{i} = dtensor.add %d{i}, {x} : ({T}, {T}) -> {T}\n"
            f"  %m{i} = dtensor.matmul %r{i}, %w : ({T}, {W}) -> {T}\n"
        )
        x = f"%m{i}"
    return (
        f"dtensor.mesh @m [tp=4]\nfunc.func @f(%x: {T}, %w: {W}) -> {T} {{\n"
        + "".join(lines)
        + f"  func.return {x} : {T}\n}}\n"
    )


def fused_bodies(seeds: list[int]) -> list[Operation]:
    """The fused ops of chained `blocks` (the matmul ends each group) after fuse-elementwise."""
    program = blocks(seeds)
    module = load_program(program)
    run_pipeline(module, "fuse-elementwise")
    return [op for op in module.walk() if isinstance(op, dt.FusedOp)]


def test_alike_groups_name_one_body_and_own_body_copies_it() -> None:
    first, second = fused_bodies([7, 7])
    assert not first.regions and not second.regions
    assert first.body_name() == second.body_name() is not None
    assert first.body_block() is second.body_block()
    shared = first.body_block()
    mine = second.own_body()  # a copy of its own, to change
    assert second.body_name() is None and mine is not shared
    assert not {op for op in mine.walk()} & {op for op in shared.walk()}
    mine.first_op.detach()  # editing one body leaves the other
    assert len(list(mine.ops)) == len(list(shared.ops)) - 1


def test_a_different_seed_gets_its_own_body() -> None:
    first, second, third = fused_bodies([7, 9, 7])
    assert first.body_name() == third.body_name() is not None
    assert second.body_name() is None and second.regions  # used once: inline
    seeds = [
        [op.properties["seed"] for op in f.body_block().walk() if op.name == "dtensor.uniform"]
        for f in (first, second, third)
    ]
    assert seeds[0] == seeds[2] != seeds[1]


def test_structure_tells_where_a_block_ends_and_which_outside_values_repeat() -> None:
    """Two ops whose nested ops read alike but sit differently - the last op inside the nested
    block, or after it in the outer one - or read one outside value twice rather than two of
    the same type, get different structures (an equal structure skips the verifier)."""
    from xdsl.dialects.builtin import i32
    from xdsl.dialects.test import TestOp
    from xdsl.ir import Block, Region

    def nested(inside: int, outside: int) -> TestOp:
        inner = TestOp(regions=[Region(Block([TestOp() for _ in range(inside)]))])
        return TestOp(regions=[Region(Block([inner, *[TestOp() for _ in range(outside)]]))])

    assert region_structure(nested(2, 0)) == region_structure(nested(2, 0))
    assert region_structure(nested(2, 0)) != region_structure(nested(1, 1))
    a, b = TestOp(result_types=[i32]), TestOp(result_types=[i32])

    def reading(x: TestOp, y: TestOp) -> TestOp:
        return TestOp(regions=[Region(Block([TestOp((x.results[0], y.results[0]))]))])

    assert region_structure(reading(a, b)) == region_structure(reading(b, a))
    assert region_structure(reading(a, a)) != region_structure(reading(a, b))
