"""Random programs (test/passes/test_random_programs.py's generator: meshes of 1-3 axes, uneven
blocks, broadcast biases, partial sums, in-place updates, f32/f64/f16/bf16) under a random
CoCoNeT schedule or collective algorithm, lowered to the kernel level, emitted as CUDA and run
on the CPU harness against the interpreter running the same kernel-level program. The emitter's
index math - the dimensions it merges per operand, split reductions, tiled copies, per-rank
tables, the NCCL calls every rank must issue alike - meets shapes no example has. About a third
of `CCOPT_HYPOTHESIS_EXAMPLES` programs: each is a C++ build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cuda import assert_same_shards

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.passes.pipeline import apply_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
from test_random_programs import FUSE, REORDER, SPLIT, Program, programs  # noqa: E402

SCHEDULES = [
    "",
    f"{SPLIT},{REORDER},{FUSE}",
    f"{SPLIT},{REORDER},{FUSE},fuse-collective,overlap{{chunks=2}}",
    f"pipeline-p2p,{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE},overlap{{chunks=3}}",
    # collectives as chunk-level algorithms (send/recv/reduce steps), the fused body inside
    "lower-collectives{algorithm=halving_doubling chunk_factor=2}",
    f"{SPLIT},{REORDER},{FUSE},fuse-collective,lower-collectives{{fused_body=in-algorithm}}",
]


@settings(
    max_examples=max(1, int(os.environ.get("CCOPT_HYPOTHESIS_EXAMPLES", "60")) // 3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=bool(os.environ.get("CI")),
)
@given(
    prog=programs(),
    schedule=st.sampled_from(SCHEDULES),
    order=st.sampled_from(["low", "high"]),
)
def test_generated_code_computes_what_the_interpreter_does(
    prog: Program, schedule: str, order: str
) -> None:
    """`order`: which ready stream the harness runs first. Overlap's streams meet only at their
    events, so a missing wait shows in one order or the other."""
    lowering = "convert-to-kernel,plan-memory"
    low = apply_pipeline(prog.module, f"{schedule},{lowering}" if schedule else lowering)
    reference = ccopt.run(low, prog.inputs)
    shards = run_on_host(low, reference.inputs, schedule=order, timeout_s=20)
    assert_same_shards(shards, reference.shards, rtol=prog.rtol)
