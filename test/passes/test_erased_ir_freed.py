"""Passes free what they erase by reference counting (`ccopt.passes.common.release`): a compiler
run collects young objects only now and then and old ones almost never (`ccopt.tools.batch_gc`),
so erased IR left in reference cycles would stay in memory until the run ends."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ccopt.diagnostics import SourceText
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.passes.pipeline import checked_pipeline

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
try:
    from compile_speed import (  # noqa: E402 - the benchmark's programs and pipelines
        _ADAM_PIPELINE,
        _FUSED_PIPELINE,
        _LAMB_PIPELINE,
        _MLP_PIPELINE,
        megatron_blocks,
        optimizer_copies,
    )
finally:
    sys.path.remove(str(BENCH))


def gpt_layers(n: int) -> str:
    """A GPT stack of `n` layers (the front end's tiny model): a function per layer kind,
    called per layer, which `inline` inlines and erases."""
    from ccopt.frontend.gpt import gpt_step

    return str(gpt_step("tiny", {"dp": 2, "tp": 2}, layers=n).module)


def cyclic_garbage(program: str, pipeline: str) -> int:
    """Objects the pipeline leaves unreachable in reference cycles (only a collection frees
    them), counted while the module is still alive."""
    ctx = make_context()
    gc.collect()
    gc.disable()
    try:
        module = parse_module(ctx, SourceText("<program>", program))
        verify_module(module)
        checked_pipeline(pipeline).apply(ctx, module)
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("program", "pipeline"),
    [
        (megatron_blocks, _MLP_PIPELINE),
        (megatron_blocks, _FUSED_PIPELINE),
        (lambda n: optimizer_copies("adam", n), _ADAM_PIPELINE),
        (lambda n: optimizer_copies("lamb", n), _LAMB_PIPELINE),
        (gpt_layers, "inline," + _FUSED_PIPELINE.replace(",inline", "")),
    ],
    ids=["megatron", "megatron+fuse-collective", "adam", "lamb", "gpt-stack inlined"],
)
def test_pipelines_leave_no_cyclic_garbage_that_grows_with_the_program(
    program: Callable[[int], str], pipeline: str
) -> None:
    cyclic_garbage(program(2), pipeline)  # (warm-up: imports and caches)
    small, large = cyclic_garbage(program(2), pipeline), cyclic_garbage(program(6), pipeline)
    assert large - small < 4, (small, large)  # less than one object per added copy
