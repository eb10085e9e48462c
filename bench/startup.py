"""Start-up and parse+print speed of `ccopt` against `xdsl-opt`, measured in the same run.

Every row is the best of K wall-clock runs of one subprocess. The ratio column divides the row's time
by its xDSL baseline from the same run:

- start-up: `ccopt` vs `xdsl-opt` on an empty module (interpreter, imports, registries);
- `--help`: ccopt's (which lists every pass with its options) vs xdsl-opt's;
- plain parse+print: both tools on the same N-op builtin/func/arith program, so the ratio is what
  ccopt's driver (context, verifier, diagnostics) costs on IR both understand;
- ccopt IR parse+print (and `-p cse,dce`): an N-op dtensor/coll program against xdsl-opt on the plain
  program of the same op count; this ratio also includes the price of ccopt's richer types and
  verifiers (placement inference), so > 1 is expected.

ops/s and kB/s are throughput on the input: the dtensor/coll program carries about 3x the text per
op of the plain one (every type spells shape, mesh and placements), so kB/s compares parsing work
more evenly than ops/s. A ratio of 1.00x means as fast as xdsl-opt; 2.00x means twice as slow.
Nothing here asserts on time.

    python bench/startup.py [--ops N] [--repeat K]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

STATE = "!dtensor.tensor<8x16xf32, @m[S(0), R]>"
HIDDEN = "!dtensor.tensor<8x64xf32, @m[S(0), S(1)]>"
PARTIAL = "!dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>"
SCATTERED = "!dtensor.tensor<8x16xf32, @m[S(0), S(1)]>"
GATHERED = "!dtensor.tensor<8x16xf32, @m[R, R]>"
W1 = "!dtensor.tensor<16x64xf32, @m[R, S(1)]>"
W2 = "!dtensor.tensor<64x16xf32, @m[R, S(0)]>"
BIAS = "!dtensor.tensor<16xf32, @m[R, R]>"


def mlp_block(i: int, x: str) -> list[str]:
    """One tensor-parallel MLP step: matmuls, elementwise ops and collectives on both mesh axes.

    It maps `x: STATE` to `%x{i}: STATE`, so blocks chain."""
    return [
        f"%h{i} = dtensor.matmul {x}, %w1 : ({STATE}, {W1}) -> {HIDDEN}",
        f"%g{i} = dtensor.gelu %h{i} : {HIDDEN}",
        f"%y{i} = dtensor.matmul %g{i}, %w2 : ({HIDDEN}, {W2}) -> {PARTIAL}",
        f"%r{i} = coll.all_reduce sum %y{i} over [tp] algorithm ring : {PARTIAL} -> {STATE}",
        f"%o{i} = dtensor.add %r{i}, %b : ({STATE}, {BIAS}) -> {STATE}",
        f"%p{i} = dtensor.matmul %g{i}, %w3 : ({HIDDEN}, {W2}) -> {PARTIAL}",
        f"%s{i} = coll.reduce_scatter sum %p{i} over [tp] dim 1 : {PARTIAL} -> {SCATTERED}",
        f"%a{i} = coll.all_gather %s{i} over [tp] : {SCATTERED} -> {STATE}",
        f"%m{i} = dtensor.mul %o{i}, %a{i} : ({STATE}, {STATE}) -> {STATE}",
        f"%f{i} = coll.all_gather %m{i} over [dp] : {STATE} -> {GATHERED}",
        f"%q{i} = coll.slice %f{i} over [dp] dim 0 : {GATHERED} -> {STATE}",
        f"%x{i} = dtensor.tanh %q{i} : {STATE}",
    ]


def ccopt_body(n_ops: int) -> Iterator[str]:
    """`n_ops` ops: whole MLP blocks, padded with `dtensor.relu` on the state, then the return."""
    block_len = len(mlp_block(0, "%x"))
    x, emitted, i = "%x", 0, 0
    while n_ops - 1 - emitted >= block_len:
        yield from mlp_block(i, x)
        x, emitted, i = f"%x{i}", emitted + block_len, i + 1
    for j in range(n_ops - 1 - emitted):
        yield f"%pad{j} = dtensor.relu {x} : {STATE}"
        x = f"%pad{j}"
    yield f"func.return {x} : {STATE}"


def ccopt_program(n_ops: int) -> str:
    args = f"%x: {STATE}, %w1: {W1}, %w2: {W2}, %w3: {W2}, %b: {BIAS}"
    body = "\n  ".join(ccopt_body(n_ops))
    return f"dtensor.mesh @m [dp=2, tp=4]\nfunc.func @mlp({args}) -> {STATE} {{\n  {body}\n}}\n"


def plain_program(n_ops: int) -> str:
    """`n_ops` ops in a func body: a chain of alternating `arith.addf` / `arith.mulf`, then return."""
    lines, x = [], "%a"
    for i in range(n_ops - 1):
        op = "arith.addf" if i % 2 == 0 else "arith.mulf"
        lines.append(f"%v{i} = {op} {x}, %b : f32")
        x = f"%v{i}"
    lines.append(f"func.return {x} : f32")
    body = "\n    ".join(lines)
    return (
        f"builtin.module {{\n  func.func @chain(%a: f32, %b: f32) -> f32 {{\n    {body}\n  }}\n}}\n"
    )


def tool(name: str) -> str:
    """The tool beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        sys.exit(f"startup.py: cannot find '{name}' (activate the venv)")
    return found


def best_time(cmd: Sequence[str], repeat: int) -> float:
    """Best wall time of `repeat` runs; output goes to /dev/null so printing is still timed."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"startup.py: {' '.join(cmd)} failed:\n{done.stderr}")
        best = min(best, elapsed)
    return best


def best_cpu_time(cmd: Sequence[str], repeat: int) -> float:
    """Best CPU time (user + system) of `repeat` runs of a subprocess, output to /dev/null: on a
    shared machine wall time mostly measures the other processes."""
    import resource

    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"startup.py: {' '.join(cmd)} failed:\n{done.stderr}")
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best = min(best, cpu)
    return best


def check_valid(ccopt: str, path: Path) -> None:
    done = subprocess.run([ccopt, str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"startup.py: the generated ccopt program does not verify:\n{done.stderr}")


@dataclass(frozen=True)
class Row:
    name: str
    seconds: float
    baseline: float
    ops: int = 0
    input_bytes: int = 0

    def cells(self) -> list[str]:
        rate = f"{self.ops / self.seconds:,.0f}" if self.ops else "-"
        throughput = f"{self.input_bytes / self.seconds / 1e3:,.0f}" if self.ops else "-"
        ratio = f"{self.seconds / self.baseline:.2f}x"
        return [self.name, f"{self.seconds:.3f}", rate, throughput, ratio]


def measure(
    name: str,
    cmd: Sequence[str],
    source: Path | None,
    ops: int,
    repeat: int,
    baseline: Row | None = None,
) -> Row:
    """Time `cmd source` (`cmd` alone without a source); without a baseline the row is its own
    (ratio 1.00x)."""
    seconds = best_time([*cmd, str(source)] if source else cmd, repeat)
    reference = baseline.seconds if baseline else seconds
    return Row(name, seconds, reference, ops, source.stat().st_size if source else 0)


def print_table(rows: Sequence[Row]) -> None:
    header = ["measurement", "seconds", "ops/s", "kB/s", "vs xdsl-opt"]
    table = [header, *(r.cells() for r in rows)]
    widths = [max(len(line[c]) for line in table) for c in range(len(header))]
    for k, line in enumerate(table):
        name, *numbers = line
        cells = [name.ljust(widths[0])] + [
            s.rjust(w) for s, w in zip(numbers, widths[1:], strict=True)
        ]
        print("  ".join(cells))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000, help="ops per generated program")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    args = parser.parse_args()
    n, k = args.ops, args.repeat
    xdsl_opt, ccopt = tool("xdsl-opt"), tool("ccopt")

    with tempfile.TemporaryDirectory(prefix="ccopt-bench-") as tmp:
        empty, plain, dist = (
            Path(tmp, "empty.mlir"),
            Path(tmp, "plain.mlir"),
            Path(tmp, "dist.mlir"),
        )
        empty.write_text("builtin.module {}\n")
        plain.write_text(plain_program(n))
        dist.write_text(ccopt_program(n))
        check_valid(ccopt, dist)

        xdsl_start = measure("xdsl-opt start-up (empty module)", [xdsl_opt], empty, 0, k)
        xdsl_help = measure("xdsl-opt --help", [xdsl_opt, "--help"], None, 0, k)
        xdsl_plain = measure(f"xdsl-opt parse+print plain ({n} ops)", [xdsl_opt], plain, n, k)
        rows = [
            xdsl_start,
            measure("ccopt start-up (empty module)", [ccopt], empty, 0, k, xdsl_start),
            xdsl_help,
            measure(
                "ccopt --help (every pass and option)", [ccopt, "--help"], None, 0, k, xdsl_help
            ),
            xdsl_plain,
            measure(f"ccopt parse+print plain ({n} ops)", [ccopt], plain, n, k, xdsl_plain),
            measure(f"ccopt parse+print dtensor/coll ({n} ops)", [ccopt], dist, n, k, xdsl_plain),
            measure(
                f"ccopt -p cse,dce dtensor/coll ({n} ops)",
                [ccopt, "-p", "cse,dce"],
                dist,
                n,
                k,
                xdsl_plain,
            ),
        ]
    print(f"best of {k} runs; ratios against the xdsl-opt row of the same kind, this run")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
