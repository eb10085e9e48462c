"""Passes free what they erase by reference counting (`ccopt.passes.common.release`): a compiler
run collects young objects only now and then and old ones almost never (`ccopt.tools.batch_gc`),
and not at all when every pass of its pipeline frees what it erases
(`ccopt.tools.pause_collection`), so erased IR left in reference cycles would stay in memory
until the run ends."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest
from bench_programs import bench_module

from ccopt.diagnostics import SourceText
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.passes.pipeline import checked_pipeline

bench = bench_module("compile_speed")  # the benchmark's programs and pipelines
_ADAM_PIPELINE, _LAMB_PIPELINE = bench._ADAM_PIPELINE, bench._LAMB_PIPELINE
_MLP_PIPELINE, _FUSED_PIPELINE = bench._MLP_PIPELINE, bench._FUSED_PIPELINE
megatron_blocks, optimizer_copies = bench.megatron_blocks, bench.optimizer_copies


ALGORITHM_PIPELINE = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,"
    "lower-collectives{algorithm=halving_doubling chunk_factor=2},convert-to-kernel,plan-memory"
)
"""The collectives as chunk-level algorithms (`algo.algorithm`), down to the kernel level."""


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
        (megatron_blocks, ALGORITHM_PIPELINE),
    ],
    ids=["megatron", "megatron+fuse-collective", "adam", "lamb", "gpt-stack inlined", "algorithms"],
)
def test_pipelines_leave_no_cyclic_garbage_that_grows_with_the_program(
    program: Callable[[int], str], pipeline: str
) -> None:
    cyclic_garbage(program(2), pipeline)  # (warm-up: imports and caches)
    small, large = cyclic_garbage(program(2), pipeline), cyclic_garbage(program(6), pipeline)
    assert large - small < 4, (small, large)  # less than one object per added copy


CHECKED_PIPELINES = (
    _MLP_PIPELINE,
    _FUSED_PIPELINE,
    _ADAM_PIPELINE,
    _LAMB_PIPELINE,
    ALGORITHM_PIPELINE,
)


def test_every_pass_that_claims_to_free_what_it_erases_is_checked_above() -> None:
    """`ccopt` switches the collector off when every pass of its pipeline says it frees what it
    erases (`ccopt.tools.pause_collection`): a pass may say so only once the test above runs
    it."""
    from ccopt.passes import BUILTIN_PASSES

    claimed = {
        n
        for n, load_class in BUILTIN_PASSES.items()
        if getattr(load_class(), "releases_erased_ir", False)
    }
    checked = {p.split("{")[0] for pipeline in CHECKED_PIPELINES for p in pipeline.split(",")}
    assert claimed <= checked, claimed - checked
    assert "cse" not in claimed and "auto-shard" not in claimed


@pytest.mark.parametrize(
    ("pipeline", "paused"),
    [
        (_FUSED_PIPELINE, True),
        ("", True),  # parse and print: nothing erased
        ("split-all-reduce,cse", False),  # xDSL's cse leaves what it erases to the collector
        ("auto-shard", False),
    ],
)
def test_ccopt_pauses_the_collector_only_when_every_pass_frees_what_it_erases(
    pipeline: str, paused: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ccopt.tools import ccopt_opt

    seen: list[bool] = []
    apply = ccopt_opt.CcoptMain.process

    def process(self, source):  # noqa: ANN001, ANN202 - records the collector's settings
        seen.append(gc.isenabled())
        return apply(self, source)

    monkeypatch.setattr(ccopt_opt.CcoptMain, "process", process)
    program = tmp_path / "mlp.mlir"
    program.write_text(megatron_blocks(1))
    before = gc.get_threshold(), gc.isenabled()
    args = [str(program), "-o", str(tmp_path / "out.mlir")]
    assert ccopt_opt.main([*args, "-p", pipeline] if pipeline else args) == 0
    assert (gc.get_threshold(), gc.isenabled()) == before  # restored after the run
    assert seen == [not paused]
