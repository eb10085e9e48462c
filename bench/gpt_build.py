"""Model-scale builds: a GPT-3-shaped training step to `.cu`, and generated code per block.

Two tables, each against a baseline measured in the same run (CPU seconds of this process):

1. A 96-layer GPT-3 (175B shapes) training step - forward, backward and Adam, Megatron tensor
   parallel over `tp` and data parallel over `dp` - built by the front end (one function per
   layer kind, called per layer), optimized (`split-all-reduce,reorder-elementwise,
   fuse-elementwise,overlap{chunks=2}`), lowered (`convert-to-kernel,plan-memory`) and emitted
   as CUDA. Seconds per stage, as a ratio to parsing, verifying and printing the step's own IR
   (`ccopt FILE` in this process); the `.cu` bytes and lines; with `--nvcc`, nvcc's seconds to
   compile it (`-c`, sm_90, no GPU needed). Target (issue 12): optimized and lowered to `.cu`
   in under 10 s.
2. Generated code per Megatron block: N chained copies of examples/megatron_mlp.mlir's block
   (8 ops), pipeline `split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},
   inline,convert-to-kernel,plan-memory`, as one function (everything inlined) and as one
   function called per block (`inline{max-ops=0}`). Each emitted two ways: the host driver as
   step calls with repeated runs re-rolled into loops (`steps`, the default), and every host
   statement written out (`straight`, the baseline). `.cu` MB and lines, per block, and ratios:
   the size to the straight form of the same program, and bytes per block to the target's
   2 KB (issue 12: the 1000-block `.cu` under 2 MB; below 1.00x at 1000 blocks meets it).
   With `--nvcc`, nvcc's seconds for the inlined forms up to `--nvcc-up-to` blocks.

Nothing asserts on time.

    python bench/gpt_build.py [--layers 96] [--mesh dp=8,tp=8] [--blocks 100,400,1000]
                              [--inlined-up-to 1000] [--nvcc] [--nvcc-up-to 100] [--no-gpt]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_args import mesh as mesh_spec
from bench_args import positive, positives

from ccopt.backends.cuda.emit import emit_cuda
from ccopt.frontend.gpt import gpt_step
from ccopt.ir import verify_module
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
OPTIMIZE = "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2}"
LOWER = "convert-to-kernel,plan-memory"
BLOCK_PIPELINE = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},{inline},"
    "convert-to-kernel,plan-memory"
)


def timed(fn, clock=time.process_time):  # noqa: ANN001, ANN201 - (seconds, result) of fn()
    """CPU seconds of this process (the machine is shared: wall time measures the others)."""
    start = clock()
    result = fn()
    return clock() - start, result


def parse_print(text: str) -> float:
    """`ccopt FILE` in this process: parse, verify, print."""

    def run() -> str:
        module = load_program(text)
        verify_module(module)
        return str(module)

    run()  # warm: the first parse loads dialects and builds parsers
    return min(timed(run)[0] for _ in range(2))


def gpt_table(layers: int, mesh: dict[str, int], nvcc: bool) -> None:
    build, module = timed(
        lambda: gpt_step("gpt3-175b", mesh, layers=layers, batch=64, dtype="bf16").module
    )
    text = str(module)
    baseline = parse_print(text)
    optimize, _ = timed(lambda: run_pipeline(module, OPTIMIZE))
    lower, _ = timed(lambda: run_pipeline(module, LOWER))
    emit, source = timed(lambda: emit_cuda(module))
    total = optimize + lower + emit
    print(f"GPT-3 175B shapes, {layers} layers, mesh {mesh}, batch 64 x 2048, bf16")
    print(f"{'stage':<40}{'seconds':>9}{'vs parse+print':>16}")
    rows = [
        ("parse+print of the step's IR", baseline),
        ("front end (build + verify)", build),
        ("optimize (" + OPTIMIZE.split(",")[0] + ", ...)", optimize),
        ("lower (" + LOWER + ")", lower),
        ("emit .cu", emit),
        ("optimize + lower + emit", total),
    ]
    for name, seconds in rows:
        print(f"{name:<40}{seconds:>8.2f}s{seconds / baseline:>15.1f}x")
    functions = len(re.findall(r"^int ccopt_\w+_fn\(", source, re.M))
    print(
        f"IR {len(text) / 1e6:.2f} MB; .cu {len(source) / 1e6:.2f} MB, "
        f"{source.count(chr(10))} lines, {source.count('__global__')} kernels, "
        f"{functions} host functions"
    )
    if nvcc:
        nvcc_seconds(source)


def nvcc_seconds(source: str) -> None:
    """nvcc -c of the .cu (headers from the NCCL/cuBLAS wheels when installed)."""
    print(f"nvcc -c: {nvcc_run(source)}")


def nvcc_run(source: str) -> str:
    """nvcc -c of the .cu: its wall seconds and whether it compiled."""
    compiler = shutil.which("nvcc")
    if compiler is None:
        return "not found"
    from ccopt.backends.cuda.build import nvidia_dirs

    includes = [f"-I{nvidia_dirs(lib)[0]}" for lib in ("nccl", "cu13")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "program.cu")
        path.write_text(source)
        command = [compiler, "-c", "-O2", "-std=c++17", "-arch=sm_90", *includes, str(path)]
        command += ["-o", str(Path(tmp, "program.o"))]
        seconds, done = timed(
            lambda: subprocess.run(command, capture_output=True, text=True), time.perf_counter
        )
    status = "ok" if done.returncode == 0 else f"failed: {done.stderr[-300:]}"
    return f"{seconds:.1f}s wall ({status})"


def megatron_blocks(n: int, calls: bool) -> str:
    """`n` chained copies of examples/megatron_mlp.mlir's block: in one function, or as the
    example's function called `n` times from an entry (block i reads block i-1's output)."""
    text = (EXAMPLES / "megatron_mlp.mlir").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("//")]
    start = next(i for i, line in enumerate(lines) if line.startswith("func.func"))
    prelude, header, body = lines[:start], lines[start], lines[start + 1 : -2]
    args = "%w1: !w1, %b1: !b1, %w2: !w2, %b2: !b2"
    chained, x = [], "%x"
    for i in range(n):
        if calls:
            chained.append(
                f"  %x{i} = func.call @mlp({x}, %w1, %b1, %w2, %b2) : "
                "(!x, !w1, !b1, !w2, !b2) -> !x"
            )
        else:
            for line in body:
                line = re.sub(r"%(\w+)", lambda m, i=i: f"%{m.group(1)}_{i}", line)
                line = line.replace(f"%x_{i}", x)
                for w in ("w1", "b1", "w2", "b2"):
                    line = line.replace(f"%{w}_{i}", f"%{w}")
                chained.append(line)
            chained.append("")  # the block's output is %out_{i}
            x = f"%out_{i}"
            continue
        x = f"%x{i}"
    entry = [
        f"func.func @blocks(%x: !x, {args}) -> !x {{",
        *[c for c in chained if c],
        f"  func.return {x} : !x",
        "}",
    ]
    helper = [header.replace("func.func @mlp", "func.func private @mlp"), *lines[start + 1 :]]
    return "\n".join([*prelude, *(helper if calls else []), *entry]) + "\n"


TARGET_BYTES_PER_BLOCK = 2_000  # issue 12: the 1000-block .cu under 2 MB


def blocks_table(sizes: list[int], inlined_up_to: int, nvcc_up_to: int) -> None:
    print()
    print("Generated code per Megatron block (examples/megatron_mlp.mlir chained)")
    header = f"{'blocks':>7}{'form':>9}{'driver':>10}{'seconds':>9}{'.cu MB':>9}{'lines':>9}"
    print(
        header + f"{'lines/block':>13}{'bytes/block':>13}{'vs straight':>13}{'vs 2 KB/block':>15}"
    )
    nvcc = []
    for n in sizes:
        for form, inline in (("inlined", "inline"), ("calls", "inline{max-ops=0}")):
            if form == "inlined" and n > inlined_up_to:
                continue  # the pipeline's time on the inlined program grows with it
            module = load_program(megatron_blocks(n, calls=form == "calls"))
            pipeline = BLOCK_PIPELINE.replace("{inline}", inline)
            lowered, _ = timed(lambda: run_pipeline(module, pipeline))  # noqa: B023
            straight = None
            for driver in ("straight", "steps"):
                emitted, source = timed(lambda: emit_cuda(module, steps=driver == "steps"))  # noqa: B023
                size, lines = len(source), source.count("\n")
                straight = straight or size
                per_block = size / n
                print(
                    f"{n:>7}{form:>9}{driver:>10}{lowered + emitted:>8.1f}s{size / 1e6:>9.2f}"
                    f"{lines:>9}{lines / n:>13.1f}{per_block:>13.0f}{size / straight:>12.2f}x"
                    f"{per_block / TARGET_BYTES_PER_BLOCK:>14.2f}x"
                )
                if form == "inlined" and n <= nvcc_up_to:
                    nvcc.append((n, driver, source))
    for n, driver, source in nvcc:
        print(f"nvcc -c, {n} inlined blocks, {driver} driver: {nvcc_run(source)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=positive, default=96)
    parser.add_argument("--mesh", type=mesh_spec, default="dp=8,tp=8")
    parser.add_argument(
        "--blocks", type=positives, default="100,400,1000", help="sizes of the per-block table"
    )
    parser.add_argument("--inlined-up-to", type=positive, default=1000, help="largest inlined size")
    parser.add_argument("--nvcc", action="store_true", help="also time nvcc -c of the .cu files")
    parser.add_argument(
        "--nvcc-up-to", type=int, default=100, help="largest block count nvcc builds"
    )
    parser.add_argument("--no-gpt", action="store_true", help="only the per-block table")
    args = parser.parse_args()
    from ccopt.program import parse_mesh_spec

    mesh = parse_mesh_spec(args.mesh)
    if not args.no_gpt:
        gpt_table(args.layers, mesh, args.nvcc)
    sizes = args.blocks
    blocks_table(sizes, args.inlined_up_to, args.nvcc_up_to if args.nvcc else 0)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
