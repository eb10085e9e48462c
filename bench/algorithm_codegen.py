"""Size and compile time of the CUDA emitted for collectives run through their algorithms.

A program of 8 all-reduces (4096 f32 each) on 8 ranks, emitted three ways: as NCCL calls (the
baseline), lowered to one algorithm (`lower-collectives`: ring, its row table emitted once for all
8), and lowered to 8 different algorithms (ring, 2-channel ring, direct, halving-doubling,
recursive doubling, double binary tree, hierarchical 2x4, chunked ring): 8 tables. Columns: .cu
lines and bytes, executor rows (all ranks), and `nvcc -c` seconds for sm_90 (wall time, best of
one; skipped without nvcc or with --no-nvcc), each with its ratio to the baseline measured in the
same run. Nothing asserts on time.

A second table times convert-to-kernel plus emission of two all-reduces through a 128-rank
algorithm (ring, halving-doubling): the executor rows are built once per algorithm and shared by
both passes (`ccopt.algorithms.executor.cached_plan`); the baseline clears that cache before
each use, so every pass and call builds them again.

    python bench/algorithm_codegen.py [--no-nvcc]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 8

VARIANTS = {
    "nccl calls": "",
    "1 algorithm (ring)": "lower-collectives",
    "8 algorithms": ",".join(
        [
            "lower-collectives{tags=t0}",
            "lower-collectives{tags=t1 channels=2}",
            "lower-collectives{tags=t2 algorithm=direct}",
            "lower-collectives{tags=t3 algorithm=halving_doubling}",
            "lower-collectives{tags=t4 algorithm=recursive_doubling}",
            "lower-collectives{tags=t5 algorithm=tree}",
            "lower-collectives{tags=t6 algorithm=hierarchical}",
            "lower-collectives{tags=t7 chunk_factor=4}",
        ]
    ),
}


def program() -> str:
    """8 independent all-reduces over both axes of a 2x4 mesh (8 ranks)."""
    p = "!dtensor.tensor<4096xf32, @m[P(sum), P(sum)]>"
    r = "!dtensor.tensor<4096xf32, @m[R, R]>"
    args = ", ".join(f"%g{i}: {p}" for i in range(N))
    lines = [
        "dtensor.mesh @m [node=2, gpu=4]",
        f"func.func @step({args}) -> ({', '.join([r] * N)}) {{",
    ]
    for i in range(N):
        lines.append(
            f'  %r{i} = coll.all_reduce sum %g{i} over [node, gpu] {{tag = "t{i}"}} : {p} -> {r}'
        )
    lines.append(f"  func.return {', '.join(f'%r{i}' for i in range(N))} : {', '.join([r] * N)}")
    return "\n".join([*lines, "}", ""])


def emit(pipeline: str) -> tuple[str, int]:
    from ccopt.algorithms.executor import plan
    from ccopt.backends.cuda.emit import emit_cuda
    from ccopt.dialects.algo import AlgorithmOp
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import load_program

    module = load_program(program())
    run_pipeline(module, ",".join(p for p in (pipeline, "convert-to-kernel", "plan-memory") if p))
    rows = sum(plan(op.algorithm()).count for op in module.ops if isinstance(op, AlgorithmOp))
    return emit_cuda(module), rows


def nvcc_seconds(source: str) -> float:
    from ccopt.backends.cuda.build import nvidia_dirs

    nccl_include, _ = nvidia_dirs("nccl")
    blas_include, _ = nvidia_dirs("cu13")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "program.cu"
        path.write_text(source)
        start = time.perf_counter()
        subprocess.run(
            [
                "nvcc",
                "-c",
                "-O2",
                "-std=c++17",
                "-gencode=arch=compute_90,code=sm_90",
                f"-I{nccl_include}",
                f"-I{blas_include}",
                str(path),
                "-o",
                str(Path(d) / "p.o"),
            ],
            check=True,
        )
        return time.perf_counter() - start


def large_program(ranks: int) -> str:
    """Two all-reduces of 1M f32 over a one-axis mesh of `ranks`."""
    p = "!dtensor.tensor<1048576xf32, @dp[P(sum)]>"
    r = "!dtensor.tensor<1048576xf32, @dp[R]>"
    return "\n".join(
        [
            f"dtensor.mesh @dp [dp={ranks}]",
            f"func.func @two(%a: {p}, %b: {p}) -> ({r}, {r}) {{",
            f"  %x = coll.all_reduce sum %a over [dp] : {p} -> {r}",
            f"  %y = coll.all_reduce sum %b over [dp] : {p} -> {r}",
            f"  func.return %x, %y : {r}, {r}",
            "}",
            "",
        ]
    )


def lower_and_emit(algorithm: str, cached: bool) -> float:
    """Seconds of convert-to-kernel, plan-memory and emission (the algorithm already chosen)."""
    from unittest import mock

    from ccopt.algorithms import executor
    from ccopt.backends.cuda.emit import emit_cuda
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import load_program

    module = load_program(large_program(128))
    run_pipeline(module, f"lower-collectives{{algorithm={algorithm}}}")
    executor.PLANS.clear()
    uncached = mock.patch.object(executor, "PLANS_KEPT", -1)  # evicted as soon as built
    start = time.perf_counter()
    with mock.patch.object(executor, "PLANS_KEPT", executor.PLANS_KEPT) if cached else uncached:
        run_pipeline(module, "convert-to-kernel,plan-memory")
        emit_cuda(module)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-nvcc", action="store_true")
    args = parser.parse_args()
    timed = not args.no_nvcc and shutil.which("nvcc") is not None
    base: tuple[int, int, float] | None = None
    print(
        f"{'variant':<22}{'lines':>8}{'bytes':>10}{'rows':>7}{'nvcc s':>9}   ratios (lines, bytes, nvcc)"
    )
    for name, pipeline in VARIANTS.items():
        source, rows = emit(pipeline)
        lines, size = source.count("\n"), len(source.encode())
        seconds = nvcc_seconds(source) if timed else float("nan")
        base = base or (lines, size, seconds)
        print(
            f"{name:<22}{lines:>8}{size:>10}{rows:>7}{seconds:>9.1f}   "
            f"{lines / base[0]:.2f}x {size / base[1]:.2f}x {seconds / base[2]:.2f}x"
        )
    print(f"\n{'128 ranks, 2 all-reduces':<28}{'rebuilt s':>10}{'cached s':>10}   ratio")
    for algorithm in ("ring", "halving_doubling"):
        rebuilt, cached = lower_and_emit(algorithm, False), lower_and_emit(algorithm, True)
        print(f"{algorithm:<28}{rebuilt:>10.2f}{cached:>10.2f}   {cached / rebuilt:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
