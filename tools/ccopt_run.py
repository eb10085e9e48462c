"""`ccopt-run`: execute a ccopt program on N simulated ranks, or check a pass pipeline on numbers.

    ccopt-run examples/sgd.mlir --mesh dp=8 --seed 1 --outputs out.npz
    ccopt-run examples/megatron_mlp.mlir --check-pipeline 'cse,dce' --rtol 1e-5
    ccopt-run examples/algorithms/allreduce_ring_4.xml

A file of collective algorithms (MSCCL XML, or IR holding only `algo.algorithm`s) is proven
instead: each must compute its collective on random data and under exact chunk tracking (exit 1
naming the first wrong output chunk).

Inputs come from `--inputs x.npz` (global arrays named after the entry function's arguments) or
are drawn at random from `--seed`. Outputs (`result0`, ... and in-place-updated arguments by name)
are global logical values; `--per-rank` adds every rank's shard as `name@rank<r>`.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from ccopt.diagnostics import CcoptError, SourceText, printing_op_warnings
from ccopt.files import STDIO, check_writable, is_stdin, report_stream, write_atomic
from ccopt.tools import quiet_on_closed_pipe


def number(convert: Callable[[str], float], low: float, what: str) -> Callable[[str], float]:
    """An argparse type: a finite number >= `low`, else argparse's usage error naming the
    option."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not low <= value < math.inf:
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ccopt-run",
        description="Run a ccopt program on N simulated ranks (numpy reference semantics).",
    )
    p.add_argument("program", help="the .mlir program, or collective algorithms (.xml or .mlir)")
    p.add_argument("--entry", help="function to run (default: the only public one)")
    p.add_argument("--mesh", help="resize mesh axes, e.g. dp=2,tp=4 (default: as declared)")
    p.add_argument("--inputs", help=".npz of global input arrays named after the arguments")
    p.add_argument(
        "--seed",
        type=number(int, 0, "an integer >= 0"),
        default=0,
        help="seed of random inputs (default 0)",
    )
    p.add_argument(
        "--steps",
        type=number(int, 1, "an integer >= 1"),
        default=1,
        help="run the function repeatedly, feeding in-place updates back",
    )
    p.add_argument("--outputs", help="write outputs to this .npz")
    p.add_argument("--per-rank", action="store_true", help="also write every rank's shard")
    p.add_argument(
        "--check-pipeline",
        metavar="PIPELINE",
        help="compare the program before and after this pass pipeline",
    )
    p.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="PLUGIN",
        help="import a .py file or module that registers passes, dialects and their "
        "interpreter functions (repeatable)",
    )
    p.add_argument(
        "--max-memory",
        metavar="GIB",
        type=number(float, 0, "a finite number >= 0"),
        default=None,
        help="refuse a program whose values need more than this many GiB on all simulated "
        "ranks together (default: the memory available now; 0: no limit)",
    )
    p.add_argument(
        "--rtol",
        type=number(float, 0, "a finite number >= 0"),
        default=None,
        help="relative tolerance of --check-pipeline (default: by each output's element type, "
        "1e-5; f16 1e-2; bf16 5e-2; beyond it, a narrow float output as close to the "
        "reference run in f64 as the reference is passes as rounding)",
    )
    p.add_argument(
        "--atol",
        type=number(float, 0, "a finite number >= 0"),
        default=None,
        help="absolute tolerance of --check-pipeline (default: rtol x the output's largest magnitude)",
    )
    return p


def load_inputs(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file (standard input for `-`)."""
    try:
        file = io.BytesIO(sys.stdin.buffer.read()) if is_stdin(path) else path
        data = np.load(file, allow_pickle=False)
    except OSError as e:
        raise CcoptError(f"cannot read inputs '{path}': {e}") from None
    except ValueError:
        raise CcoptError(f"inputs '{path}' is not an .npz archive of arrays") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise CcoptError(
            f"inputs '{path}' is a single array; give an .npz of arrays named after the arguments"
        )
    with data:
        return {k: data[k] for k in data.files}


def save_outputs(
    path: str, outputs: dict[str, np.ndarray], shards: dict[str, list[np.ndarray]] | None
) -> None:
    arrays = dict(outputs)
    for name, per_rank in (shards or {}).items():
        arrays.update({f"{name}@rank{r}": s for r, s in enumerate(per_rank)})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())


def describe(name: str, value: np.ndarray) -> str:
    """One line per output: its statistics over the values that are numbers, and how many are
    NaN (an output that is all NaN says so, where numpy warned on stderr and printed nan)."""
    stats = ""
    if value.size and value.dtype.kind in "fiuV":
        v = value.astype(np.float64)
        nan = int(np.count_nonzero(np.isnan(v)))
        if nan == v.size:
            stats = "  all NaN"
        else:
            stats = f"  min {np.nanmin(v):.6g}  max {np.nanmax(v):.6g}  mean {np.nanmean(v):.6g}"
            stats += f"  ({nan} NaN)" if nan else ""
    return f"  {name:<12} {str(value.dtype):<9} {list(value.shape)}{stats}"


def prove_algorithms(source: SourceText, seed: int) -> list[str] | None:
    """Verdicts on the algorithms of an MSCCL XML file or of IR holding only algorithms; None
    for a program to run."""
    if source.name.lower().endswith(".xml"):
        from ccopt.frontend.msccl_xml import read_module

        module = read_module(source)
    elif "algo.algorithm" in source.text:
        from ccopt.ir import make_context, parse_module, verify_module

        module = parse_module(make_context(), source)
        verify_module(module)
    else:
        return None
    from ccopt.interpreters.algo import algorithms_only, prove

    found = algorithms_only(module)
    return None if found is None else [prove(op, seed) for op in found]


def print_result(args: argparse.Namespace, result, stream: TextIO) -> None:
    """What ran, and each output's summary (without --check-pipeline)."""
    meshes = ", ".join(str(m) for m in result.meshes.values())
    steps = f"{args.steps} step{'s' if args.steps > 1 else ''}"
    print(f"@{result.entry} on {meshes} ({steps})", file=stream)
    if args.check_pipeline is None:
        for name, value in result.outputs.items():
            print(describe(name, value), file=stream)


def print_comparisons(args: argparse.Namespace, report, stream: TextIO) -> int:
    """Each output before and after --check-pipeline; the exit status."""
    from ccopt.runner import DEFAULT_RTOL

    atol = "scaled" if args.atol is None else f"{args.atol:g}"
    rtol = "by element type" if args.rtol is None else f"{args.rtol:g}"
    print(f"pipeline '{args.check_pipeline}' (rtol {rtol}, atol {atol}):", file=stream)
    for c in report.comparisons:
        verdict = "ok" if c.ok else "MISMATCH"
        note = f"  ({c.note})" if c.note else ""
        errors = f"max abs error {c.max_abs_error:.3e}  max rel error {c.max_rel_error:.3e}"
        held = f" (rtol {c.rtol:g})" if args.rtol is None and c.rtol != DEFAULT_RTOL else ""
        print(f"  {c.name:<12} {errors}  {verdict}{held}{note}", file=stream)
    agree = sum(c.ok for c in report.comparisons)
    total = len(report.comparisons)
    print(f"{'PASS' if report.ok else 'FAIL'}: {agree} of {total} outputs agree", file=stream)
    if report.ok:
        return 0
    print("ccopt-run: the pipeline changed the program's results", file=sys.stderr)
    return 1


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    import ccopt

    source: SourceText | None = None  # once read, errors show their line with a caret
    try:
        from ccopt.passes import load_plugin
        from ccopt.program import program_source

        for plugin in args.load_plugin:
            load_plugin(plugin)
        if is_stdin(args.program) and args.inputs == STDIO:
            raise CcoptError("the program and --inputs cannot both be standard input ('-')")
        if args.outputs:
            check_writable(args.outputs)  # (before the run, not after it)
        source = program_source(Path(args.program))
        verdicts = prove_algorithms(source, args.seed)
        if verdicts is not None:
            print("\n".join(verdicts))
            return 0
        inputs = load_inputs(args.inputs) if args.inputs else None
        limit = None if args.max_memory is None else int(args.max_memory * 2**30)
        common = dict(
            entry=args.entry, mesh=args.mesh, seed=args.seed, steps=args.steps, memory_limit=limit
        )
        if args.check_pipeline is None:
            result = ccopt.run(source, inputs, **common)
        else:
            with printing_op_warnings(source):
                report = ccopt.check_pipeline(
                    source, args.check_pipeline, inputs, rtol=args.rtol, atol=args.atol, **common
                )
            result = report.optimized
    except CcoptError as e:
        print(f"ccopt-run: {e.render(source)}", file=sys.stderr)
        return 1

    if args.outputs:  # (first: a reader of the report that stops early must not lose it)
        try:
            save_outputs(args.outputs, result.outputs, result.shards if args.per_rank else None)
        except CcoptError as e:
            print(f"ccopt-run: {e.render()}", file=sys.stderr)
            return 1
    report_to = report_stream(args.outputs)
    print_result(args, result, report_to)
    return 0 if args.check_pipeline is None else print_comparisons(args, report, report_to)


if __name__ == "__main__":
    sys.exit(main())
