"""Compile speed at model scale: pass pipelines against `ccopt FILE` parse+print, in one process.

The program is N chained Megatron MLP blocks of examples/megatron_mlp.mlir (8 ops per block, the
output of one block is the input of the next), or N copies of an optimizer step
(examples/adam.mlir, examples/lamb.mlir: one function per parameter group). Every row runs
ccopt's own `main` in this process (CPU seconds, best of K, output to a discarded buffer) and is
printed as a ratio to `ccopt FILE` (parse, verify, print) on the same input, measured in the same
run. Verification after every pass stays on, as `ccopt -p` does by default.

Columns: seconds and ratio per size; `growth` is time(10N) / time(N) for the smallest and the
largest size 10x apart (10.0 is linear); `memory` is the peak of Python allocations
(tracemalloc) while compiling the largest size below 1000 blocks, over that of parse+print;
`output text` the size of what ccopt printed there, over what parse+print printed.
Two more tables compare with xDSL: ccopt's parse+print of the dtensor program against
`xdsl-opt`'s parse+print of a plain arith program with the same op count (per op), and `--help`
start-up of both tools (subprocesses, CPU time of the child; see bench/startup.py for more
start-up rows).

Targets (issue 12): pipelines <= 2x parse+print, growth <= 10.5x, memory <= 2x, `-p cse,dce`
<= 1.2x, dtensor parse+print <= 1.3x xdsl-opt's per op, `--help` <= 1.2x. Nothing asserts on time.

`--bounds` adds rows that bound what fewer ops could give: the Megatron pipelines with
`overlap{chunks=1}` (what a chunk loop, one body for all chunks, would cost at best: the same
passes without overlap's per-chunk copies) and without `overlap` at all.

    python bench/compile_speed.py [--blocks 100,400,1000] [--repeat K] [--huge] [--bounds]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import re
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_args import positive, positives
from startup import best_cpu_time, plain_program, tool

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_MLP_PIPELINE = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},inline,"
    "convert-to-kernel,plan-memory"
)
_FUSED_PIPELINE = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=3},"
    "inline,convert-to-kernel,plan-memory"
)
_ADAM_PIPELINE = (
    "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,fuse-collective,"
    "convert-to-kernel,plan-memory"
)
_LAMB_PIPELINE = (
    "split-all-reduce,reorder-elementwise,sliced-norm,slice-state{args=m,v},fuse-elementwise,"
    "fuse-collective,convert-to-kernel,plan-memory"
)


def _split_example(name: str) -> tuple[str, str, str]:
    """(type aliases and mesh, function header, body lines) of examples/<name>.mlir, whose one
    function ends the file."""
    text = (EXAMPLES / f"{name}.mlir").read_text()
    lines = [line for line in text.splitlines() if line and not line.lstrip().startswith("//")]
    start = next(i for i, line in enumerate(lines) if line.startswith("func.func"))
    prelude = "\n".join(lines[:start])
    body = "\n".join(lines[start + 1 : -1])
    return prelude, lines[start], body


def megatron_blocks(n: int) -> str:
    """`n` chained copies of examples/megatron_mlp.mlir's block in one function (8n + 1 ops):
    block i reads block i-1's output, the weights are shared."""
    prelude, header, body = _split_example("megatron_mlp")
    ret = re.search(r"func\.return (%\w+)", body)
    assert ret is not None
    out = ret.group(1)
    body = body[: ret.start()].rstrip()
    names = set(re.findall(r"%(\w+) =", body))
    chained, x = [], "%x"
    for i in range(n):

        def rename(m: re.Match[str], i: int = i, x: str = x) -> str:
            name = m.group(1)
            return f"%{name}_{i}" if name in names else x if name == "x" else m.group(0)

        chained.append(re.sub(r"%(\w+)\b", rename, body))
        x = f"{out}_{i}"
    return f"{prelude}\n{header}\n" + "\n".join(chained) + f"\n  func.return {x} : !x\n}}\n"


def optimizer_copies(name: str, n: int) -> str:
    """`n` copies of examples/<name>.mlir's optimizer step, one function per parameter group."""
    prelude, header, body = _split_example(name)
    functions = [
        header.replace(f"@{name}(", f"@{name}_{i}(") + "\n" + body + "\n}" for i in range(n)
    ]
    return prelude + "\n" + "\n".join(functions) + "\n"


@dataclass(frozen=True)
class Workload:
    name: str
    program: Callable[[int], str]
    pipelines: dict[str, str]
    bounds: dict[str, str] | None = None


WORKLOADS = [
    Workload(
        "megatron_mlp",
        megatron_blocks,
        {"pipeline": _MLP_PIPELINE, "+fuse-collective": _FUSED_PIPELINE, "cse,dce": "cse,dce"},
        {
            "bound: chunks=1": _MLP_PIPELINE.replace("chunks=3", "chunks=1"),
            "bound: +fuse-collective, chunks=1": _FUSED_PIPELINE.replace("chunks=3", "chunks=1"),
            "bound: no overlap": _MLP_PIPELINE.replace("overlap{chunks=3},", ""),
        },
    ),
    Workload("adam", lambda n: optimizer_copies("adam", n), {"adam pipeline": _ADAM_PIPELINE}),
    Workload("lamb", lambda n: optimizer_copies("lamb", n), {"lamb pipeline": _LAMB_PIPELINE}),
]


def run_ccopt(argv: Sequence[str]) -> int:
    """ccopt's `main` in this process, its output discarded; the output's length."""
    from ccopt.tools.ccopt_opt import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    if code != 0:
        sys.exit(f"compile_speed.py: ccopt {' '.join(argv)} failed")
    return out.tell()


def cpu_seconds(argv: Sequence[str], repeat: int) -> float:
    """Best CPU time of `repeat` in-process runs (garbage collected between runs)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        run_ccopt(argv)
        best = min(best, time.process_time() - start)
    return best


def peak_bytes(argv: Sequence[str]) -> tuple[int, int]:
    """Peak Python allocation (tracemalloc) while ccopt runs `argv`, and its output's length."""
    gc.collect()
    tracemalloc.start()
    try:
        printed = run_ccopt(argv)
        return tracemalloc.get_traced_memory()[1], printed
    finally:
        tracemalloc.stop()


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    table = [list(header), *map(list, rows)]
    widths = [max(len(line[c]) for line in table) for c in range(len(header))]
    for k, line in enumerate(table):
        print(
            "  ".join(
                [line[0].ljust(widths[0])]
                + [s.rjust(w) for s, w in zip(line[1:], widths[1:], strict=True)]
            )
        )
        if k == 0:
            print("  ".join("-" * w for w in widths))


def growth(times: dict[int, float]) -> str:
    """time(10N) / time(N) for the first size that has its 10x in the table."""
    for n in sorted(times):
        if 10 * n in times:
            return f"{times[10 * n] / times[n]:.1f}x ({n}->{10 * n})"
    return "-"


def bench_workload(
    work: Workload, sizes: Sequence[int], repeat: int, tmp: Path, bounds: bool = False
) -> list[list[str]]:
    """One row for parse+print and one per pipeline: seconds and ratio per size, growth,
    memory ratio, and the output text's size against parse+print's (what the pipeline's
    result is made of: its printing and much of its passes' work grow with it). `bounds`: also
    the workload's bound rows."""
    files = {}
    for n in sizes:
        files[n] = tmp / f"{work.name}_{n}.mlir"
        files[n].write_text(work.program(n))
    pipelines = {**work.pipelines, **((work.bounds or {}) if bounds else {})}
    runs = {"parse+print": [], **{label: ["-p", p] for label, p in pipelines.items()}}
    seconds: dict[str, dict[int, float]] = {label: {} for label in runs}
    for flags in runs.values():  # imports and first-use caches are start-up, not compiling
        run_ccopt([*flags, str(files[min(sizes)])])
    for n in sizes:
        for label, flags in runs.items():
            seconds[label][n] = cpu_seconds([*flags, str(files[n])], repeat)
    mem_n = max((n for n in sizes if n < 1000), default=min(sizes))
    base_mem, base_text = peak_bytes([str(files[mem_n])])
    rows = []
    for label, flags in runs.items():
        cells = [f"{work.name}: {label}"]
        for n in sizes:
            base = seconds["parse+print"][n]
            cells.append(f"{seconds[label][n]:.2f}s {seconds[label][n] / base:.2f}x")
        mem, text = peak_bytes([*flags, str(files[mem_n])]) if flags else (base_mem, base_text)
        cells += [growth(seconds[label]), f"{mem / base_mem:.2f}x @{mem_n}"]
        cells.append(f"{text / base_text:.2f}x")
        rows.append(cells)
    return rows


def xdsl_rows(ops: int, repeat: int, tmp: Path) -> list[list[str]]:
    """ccopt parse+print of dtensor IR vs xdsl-opt on plain IR of the same op count, and
    `--help` of both (CPU time of subprocesses)."""
    plain, dist = tmp / "plain.mlir", tmp / "dist.mlir"
    blocks = max(1, ops // 8)
    dist.write_text(megatron_blocks(blocks))
    plain.write_text(plain_program(8 * blocks + 1))
    xdsl_opt, ccopt = tool("xdsl-opt"), tool("ccopt")
    x_pp = best_cpu_time([xdsl_opt, str(plain)], repeat)
    c_pp = best_cpu_time([ccopt, str(dist)], repeat)
    x_help = best_cpu_time([xdsl_opt, "--help"], repeat)
    c_help = best_cpu_time([ccopt, "--help"], repeat)
    n = 8 * blocks + 1
    return [
        [
            f"parse+print, {n} ops (dtensor vs plain)",
            f"{c_pp:.2f}s",
            f"{x_pp:.2f}s",
            f"{c_pp / x_pp:.2f}x",
        ],
        ["--help start-up", f"{c_help:.3f}s", f"{x_help:.3f}s", f"{c_help / x_help:.2f}x"],
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--blocks", type=positives, default="100,400,1000", help="comma-separated block counts"
    )
    parser.add_argument(
        "--xdsl-ops", type=int, default=0, help="op count of the xDSL rows (default 8 x largest)"
    )
    parser.add_argument("--huge", action="store_true", help="also 10,000 blocks (minutes)")
    parser.add_argument(
        "--repeat", type=positive, default=1, help="runs per measurement (best kept)"
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="also the bound rows: the pipelines with one chunk and without overlap",
    )
    parser.add_argument(
        "--only", default="", help="comma-separated workloads (megatron_mlp, adam, lamb)"
    )
    args = parser.parse_args()
    sizes = args.blocks + ([10_000] if args.huge else [])
    chosen = [w for w in WORKLOADS if not args.only or w.name in args.only.split(",")]
    with tempfile.TemporaryDirectory(prefix="ccopt-compile-") as tmp:
        rows = [
            r for w in chosen for r in bench_workload(w, sizes, args.repeat, Path(tmp), args.bounds)
        ]
        print("CPU seconds and ratio to `ccopt FILE` (parse+print) on the same input, this run")
        print_table(["blocks", *map(str, sizes), "growth", "peak memory", "output text"], rows)
        print()
        print_table(
            ["vs xDSL (CPU s, subprocess)", "ccopt", "xdsl-opt", "ratio"],
            xdsl_rows(args.xdsl_ops or 8 * max(sizes), max(args.repeat, 3), Path(tmp)),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
