"""How every ccopt pass scales with program size, against `cse` in the same process.

Each pass runs (in process, parse excluded) at N and 4N ops on a program it rewrites: the
chained tensor-parallel MLP of `startup.py`, momentum SGD with norms over many parameters,
chained pipeline-stage boundaries, and a chain of small called functions; best of K runs. Two
ratios per pass:

- scaling: time(4N) / (4 * time(N)); 1.00x is linear, 4.00x would be quadratic;
- vs cse: the pass's time at 4N divided by `cse` on the same program (one walk with a hash per op:
  xDSL's driver with ccopt's cheaper keys, ccopt.passes.cse), so a pass that does real planning
  shows how much more it costs per op.

Prerequisite passes (e.g. split-all-reduce before fuse-collective) run outside the timed part;
the garbage collector is off while timing, as in `timeit`.
Nothing here asserts on time.

    python bench/passes.py [--ops N] [--repeat K]
"""

from __future__ import annotations

import argparse
import gc
import time

from startup import ccopt_program
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from ccopt.ir import make_context, verify_module
from ccopt.passes import PASSES
from ccopt.program import load_program

REP = "!dtensor.tensor<64x8xf32, @dp[R]>"
GRAD = "!dtensor.tensor<64x8xf32, @dp[P(sum)]>"
SCALAR = "!dtensor.tensor<f32, @dp[R]>"


def optimizer_program(n_ops: int) -> str:
    """Momentum SGD scaled by the momentum's norm, over many parameters (9 ops each): all_reduce
    of the gradient, state update, norm, in-place updates; what slice-state and sliced-norm
    rewrite."""
    params = max(1, n_ops // 9)
    args, body = [], []
    for i in range(params):
        args += [f"%g{i}: {GRAD}", f"%w{i}: {REP}", f"%m{i}: {REP}"]
        body += [
            f"%gs{i} = coll.all_reduce sum %g{i} over [dp] : {GRAD} -> {REP}",
            f"%mo{i} = dtensor.scale %m{i} by 0.9 : {REP}",
            f"%mg{i} = dtensor.scale %gs{i} by 0.1 : {REP}",
            f"%mn{i} = dtensor.add %mo{i}, %mg{i} : ({REP}, {REP}) -> {REP}",
            f"%wn{i} = dtensor.norm %mn{i} : {REP} -> {SCALAR}",
            f"%st{i} = dtensor.mul %wn{i}, %mn{i} : ({SCALAR}, {REP}) -> {REP}",
            f"%wu{i} = dtensor.sub %w{i}, %st{i} : ({REP}, {REP}) -> {REP}",
            f"dtensor.update %m{i} with %mn{i} : {REP}",
            f"dtensor.update %w{i} with %wu{i} : {REP}",
        ]
    lines = "\n  ".join([*body, "func.return"])
    return f"dtensor.mesh @dp [dp=4]\nfunc.func @opt({', '.join(args)}) {{\n  {lines}\n}}\n"


X = "!dtensor.tensor<8x48xf32, @pm[V, S(1)]>"
W = "!dtensor.tensor<48x48xf32, @pm[V, S(0)]>"
PARTIAL_ACT = "!dtensor.tensor<8x48xf32, @pm[V, P(sum)]>"
ACT = "!dtensor.tensor<8x48xf32, @pm[V, R]>"


def pipeline_program(n_ops: int) -> str:
    """Chained pipeline-stage boundaries (6 ops each): row-parallel matmul, all_reduce, bias,
    shift to the next stage, re-split; what pipeline-p2p rewrites."""
    body, x = [], "%x"
    for i in range(max(1, n_ops // 6)):
        body += [
            f"%y{i} = dtensor.matmul {x}, %w : ({X}, {W}) -> {PARTIAL_ACT}",
            f"%s{i} = coll.all_reduce sum %y{i} over [tp] : {PARTIAL_ACT} -> {ACT}",
            f"%a{i} = dtensor.add %s{i}, %r : ({ACT}, {ACT}) -> {ACT}",
            f"%h{i} = dtensor.relu %a{i} : {ACT}",
            f"%t{i} = coll.shift %h{i} over [pp] by 1 : {ACT} -> {ACT}",
            f"%x{i} = coll.slice %t{i} over [tp] dim 1 : {ACT} -> {X}",
        ]
        x = f"%x{i}"
    lines = "\n  ".join([*body, f"func.return {x} : {X}"])
    return (
        f"dtensor.mesh @pm [pp=2, tp=4]\nfunc.func @stages(%x: {X}, %w: {W}, %r: {ACT}) -> {X} "
        f"{{\n  {lines}\n}}\n"
    )


def calls_program(n_ops: int) -> str:
    """Many small private functions (a chain of layers, 5 ops each with its call), each called
    once from the entry: what `inline` rewrites."""
    layers = max(1, n_ops // 5)
    funcs, body, x = [], [], "%x"
    for i in range(layers):
        funcs.append(
            f"func.func private @layer{i}(%a: {REP}, %b: {REP}) -> {REP} {{\n"
            f"  %s = dtensor.add %a, %b : ({REP}, {REP}) -> {REP}\n"
            f"  %t = dtensor.relu %s : {REP}\n"
            f"  %u = dtensor.scale %t by 0.5 : {REP}\n"
            f"  func.return %u : {REP}\n}}"
        )
        body.append(f"%y{i} = func.call @layer{i}({x}, %b) : ({REP}, {REP}) -> {REP}")
        x = f"%y{i}"
    lines = "\n  ".join([*body, f"func.return {x} : {REP}"])
    entry = f"func.func @net(%x: {REP}, %b: {REP}) -> {REP} {{\n  {lines}\n}}"
    return "dtensor.mesh @dp [dp=4]\n" + "\n".join([*funcs, entry]) + "\n"


PROGRAMS = {
    "mlp": ccopt_program,
    "optimizer": optimizer_program,
    "pipeline": pipeline_program,
    "calls": calls_program,
}
SPLIT_REORDER = "split-all-reduce,reorder-elementwise"

# (program, prerequisites, the timed pass)
CASES = [
    ("mlp", "", "cse"),
    ("mlp", "", "split-all-reduce"),
    ("mlp", "split-all-reduce", "reorder-elementwise"),
    ("mlp", "", "fuse-elementwise"),
    ("mlp", SPLIT_REORDER, "fuse-collective"),
    ("mlp", "", "overlap{chunks=4}"),
    ("mlp", f"{SPLIT_REORDER},fuse-elementwise,overlap{{chunks=2}}", "convert-to-kernel"),
    (
        "mlp",
        f"{SPLIT_REORDER},fuse-elementwise,overlap{{chunks=2}},convert-to-kernel",
        "plan-memory",
    ),
    ("optimizer", "", "cse"),
    ("optimizer", SPLIT_REORDER, "sliced-norm"),
    ("optimizer", SPLIT_REORDER, "slice-state"),
    ("optimizer", f"{SPLIT_REORDER},sliced-norm,slice-state", "fuse-elementwise"),
    ("optimizer", f"{SPLIT_REORDER},sliced-norm,slice-state,fuse-elementwise", "fuse-collective"),
    ("optimizer", f"{SPLIT_REORDER},sliced-norm,slice-state", "convert-to-kernel"),
    ("optimizer", f"{SPLIT_REORDER},sliced-norm,slice-state,convert-to-kernel", "plan-memory"),
    ("pipeline", "", "cse"),
    ("pipeline", "", "pipeline-p2p"),
    ("pipeline", "pipeline-p2p", "fuse-elementwise"),
    ("pipeline", "pipeline-p2p,fuse-elementwise", "convert-to-kernel"),
    ("calls", "", "cse"),
    ("calls", "", "inline"),
    ("mlp", "", "autotune{machine=dgx-a100 chunks=2 window=8}"),
]


def apply(module: ModuleOp, pipeline: str) -> None:
    if pipeline:
        PassPipeline.parse_spec(PASSES, pipeline).apply(make_context(), module)


def best_time(base: ModuleOp, before: str, timed: str, repeat: int) -> float:
    """Best wall-clock time of `timed` on fresh copies of `base` with `before` applied."""
    prepared = base.clone()
    apply(prepared, before)
    best = float("inf")
    for _ in range(repeat):
        module = prepared.clone()
        gc.collect()
        gc.disable()  # as timeit does: collections scale with the whole heap, not the pass
        start = time.perf_counter()
        apply(module, timed)
        best = min(best, time.perf_counter() - start)
        gc.enable()
        verify_module(module)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000, help="the smaller program's op count")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = {
        name: (load_program(make(args.ops)), load_program(make(4 * args.ops)))
        for name, make in PROGRAMS.items()
    }
    print(f"{'program':<11}{'pass':<22}{'N':>10}{'4N':>10}{'scaling':>10}{'vs cse':>9}")
    cse: dict[str, float] = {}
    for program, before, timed in CASES:
        small, large = sizes[program]
        t_small = best_time(small, before, timed, args.repeat)
        t_large = best_time(large, before, timed, args.repeat)
        cse.setdefault(program, t_large)  # each program's first case is cse
        print(
            f"{program:<11}{timed:<22}{t_small * 1e3:>8.1f}ms{t_large * 1e3:>8.1f}ms"
            f"{t_large / (4 * t_small):>9.2f}x{t_large / cse[program]:>8.2f}x"
        )


if __name__ == "__main__":
    main()
