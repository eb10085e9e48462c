"""The compact host driver (backends/cuda/steps.py): statements lifted into shared step
functions, repeated runs re-rolled into loops that issue exactly the straight-line sequence."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench_programs import bench_module
from hypothesis import given, settings
from hypothesis import strategies as st

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.backends.cuda.emit import emit_cuda, host_statements
from ccopt.backends.cuda.steps import Call, Loop, expand, lift, reroll
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "backends"))
from test_cuda import assert_same_shards  # noqa: E402

PIPELINE = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},inline,"
    "convert-to-kernel,plan-memory"
)


def chained_blocks(n: int):  # noqa: ANN201
    """n chained Megatron MLP blocks (examples/megatron_mlp.mlir), inlined and planned."""
    module = load_program(bench_module("compile_speed").megatron_blocks(n))
    run_pipeline(module, PIPELINE)
    return module


def test_a_workspace_buffer_and_an_argument_lift_to_the_same_step() -> None:
    """The first layer reads the program's argument where later layers read the workspace:
    lifted, both are a root and an offset, so the layers share their steps."""
    a = lift("f(arg1, ctx->events[3], ctx->streams[1]);", ["int32_t", "float"])
    b = lift(
        "f(reinterpret_cast<float*>(ctx->workspace + 1024), ctx->events[9], ctx->streams[1]);", []
    )
    assert a.args == (3, 0, 3) and b.args == (0, 1024, 9)
    assert (
        a.body
        == "f(reinterpret_cast<float*>(roots_[a_[0]] + a_[1]), ctx->events[a_[2]], ctx->streams[1]);"
    )
    assert b.body == a.body  # streams stay literal: NCCL's bookkeeping reads them from the text


runs = st.lists(
    st.tuples(
        st.lists(st.integers(0, 3), min_size=1, max_size=5),  # a period of step ids
        st.integers(1, 9),  # repeats
        st.sampled_from(["constant", "affine", "rotation", "random"]),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(runs, st.randoms(use_true_random=False))
def test_reroll_issues_exactly_the_straight_line_sequence(runs, rng) -> None:  # noqa: ANN001
    ids, args = [], []
    for period, repeats, kind in runs:
        for t in range(repeats):
            for j, s in enumerate(period):
                value = {
                    "constant": 64 * j,
                    "affine": 100 + 6 * t + j,
                    "rotation": 1024 * ((t + j) % 3),
                    "random": rng.randrange(5000),
                }[kind]
                ids.append(s)
                args.append((s % 2, value, 7) if s % 2 else (value,))
    code = reroll(ids, args)
    assert list(expand(code)) == list(zip(ids, args, strict=True))


def test_repeated_layers_become_one_loop() -> None:
    """Twenty chained MLP blocks: the entry issues its statements through one loop (its table,
    if any, holds a few numbers per block) and the re-rolled code issues exactly them."""
    module = chained_blocks(20)
    (statements,) = host_statements(module).values()
    lifted = [lift(s, ["float"] * 6) for s in statements]
    names: dict[str, int] = {}
    ids = [names.setdefault(s.body, len(names)) for s in lifted]
    code = reroll(ids, [s.args for s in lifted])
    assert list(expand(code)) == [(i, s.args) for i, s in zip(ids, lifted, strict=True)]
    loops = [c for c in code if isinstance(c, Loop)]
    assert len(loops) == 1 and loops[0].count * len(loops[0].body) > 0.8 * len(statements)
    assert sum(isinstance(c, Call) for c in code) < len(statements) / 10
    assert len(names) < len(statements) / 10  # the steps are shared across blocks


def test_code_per_block_stays_under_two_kilobytes() -> None:
    """Issue 12's target (1000 blocks under 2 MB), measured between 10 and 30 blocks."""
    small, large = (emit_cuda(chained_blocks(n)) for n in (10, 30))
    assert (len(large) - len(small)) / 20 < 2000
    assert large.count("CCOPT_STEP(") < 3 * small.count("CCOPT_STEP(")


def test_rerolled_blocks_equal_the_interpreter_on_the_cpu_harness() -> None:
    """Seven blocks: a loop whose offsets rotate through the planned buffers, events indexed
    by the loop, the first and last blocks outside it; both stream orders of the harness."""
    module = chained_blocks(7)
    source = emit_cuda(module)
    assert re.search(r"for \(int64_t i = 0; i < \d+; \+\+i\)", source)
    reference = ccopt.run(module, seed=3)
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, reference.inputs, schedule=order), reference.shards)


def test_inlined_gpt_layers_equal_the_interpreter_on_the_cpu_harness() -> None:
    """Three GPT layers inlined (forward, backward, Adam): loops whose buffers move by table
    shifts and by negative strides (the backward pass walks the layers in reverse)."""
    sys.path.insert(0, str(ROOT / "test" / "frontend"))
    from test_gpt import inputs_for

    from ccopt.frontend.gpt import gpt_step

    step = gpt_step("tiny", {"dp": 2, "tp": 2}, layers=3)
    module = step.module.clone()
    run_pipeline(module, PIPELINE.replace("chunks=3", "chunks=2"))
    source = emit_cuda(module)
    assert re.search(r"\d+ \+ kLoop\d+\[i\]\[\d+\]", source) and re.search(
        r"\d+ - \d+ \* i", source
    )
    inputs = inputs_for(step, "float32")
    reference = ccopt.run(module, inputs)
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, inputs, schedule=order), reference.shards)
