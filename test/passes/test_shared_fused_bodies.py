"""Fused ops that name one module-level body (`fuse-elementwise` shares the bodies a model's
layers repeat) compute what they computed with copies: the interpreter runs each program of
bench/compile_speed.py (3 Megatron blocks, with and without fuse-collective; 3 copies of Adam
and of LAMB) before and after its pipeline - cut after fuse-elementwise, after the pass that
follows it, and whole - on all ranks of the program's mesh, on random inputs, and the outputs
agree. The cut programs do share bodies (else this would test nothing)."""

from __future__ import annotations

import pytest
from bench_programs import bench_module

import ccopt
from ccopt.dialects import dtensor as dt
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import load_program

bench = bench_module("compile_speed")

CASES = {
    "megatron": (bench.megatron_blocks(3), bench._MLP_PIPELINE, [None]),
    "megatron+fuse-collective": (bench.megatron_blocks(3), bench._FUSED_PIPELINE, [None]),
    "adam": (bench.optimizer_copies("adam", 3), bench._ADAM_PIPELINE, ["adam_0", "adam_2"]),
    "lamb": (bench.optimizer_copies("lamb", 3), bench._LAMB_PIPELINE, ["lamb_0", "lamb_2"]),
}


def cuts(pipeline: str) -> list[str]:
    """The pipeline up to fuse-elementwise, up to the pass after it, and whole."""
    passes = pipeline.split(",")
    at = passes.index("fuse-elementwise")
    return [",".join(passes[: at + 1]), ",".join(passes[: at + 2]), pipeline]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_ops_sharing_a_body_agree_with_the_program(name: str) -> None:
    program, pipeline, entries = CASES[name]
    fused = apply_pipeline(load_program(program), cuts(pipeline)[0])
    named = [o for o in fused.walk() if isinstance(o, dt.FusedOp) and o.body_name()]
    assert len(named) >= 2  # the repeated bodies are shared
    for cut in cuts(pipeline):
        for entry in entries:
            for seed in (0, 1):
                report = ccopt.check_pipeline(
                    program, cut, entry=entry, seed=seed, rtol=1e-4, atol=1e-5
                )
                bad = [c.name for c in report.comparisons if not c.ok]
                assert report.comparisons and not bad, (cut, entry, seed, bad)
