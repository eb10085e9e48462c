"""autotune at model scale: candidates tried on windows against candidates tried on the whole function.

A GPT training step (`ccopt.frontend.gpt`: forward, backward and Adam per layer) inlined into one
function, prepared as the README's GPT pipeline prepares it (split-all-reduce,
reorder-elementwise, slice-state, fuse-elementwise, fuse-collective), then tuned by
`autotune{machine=M chunks=2,4 window=W}`: with `window=0` every candidate of every collective is
tried and simulated on the whole function (autotune before windows), with the default window on
the ops around the collective. Both run in this process on the same input; the table prints
CPU seconds, their ratio, each one's growth over the layer counts (time(L) / time(smallest L),
against L / smallest L for linear work) and the simulated step time of what each chose (ccopt-sim
of the tuned program, lowered).

    python bench/autotune_scale.py [--model gpt-5b] [--mesh dp=2,tp=8] [--layers 1,2,4]
        [--window 64] [--machine dgx-a100] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import time

from bench_args import mesh, positives

from ccopt.diagnostics import CcoptError

PREPARE = "inline,split-all-reduce,reorder-elementwise,slice-state,fuse-elementwise,fuse-collective"


def prepared(model: str, mesh_spec: str, layers: int, dtype: str) -> str:
    """The step's IR after `PREPARE`, as text (each run parses its own copy)."""
    from ccopt.frontend.gpt import gpt_step
    from ccopt.passes.pipeline import run_pipeline

    axes = {k: int(v) for k, v in (a.split("=") for a in mesh_spec.split(","))}
    module = gpt_step(model, axes, layers=layers, dtype=dtype).module
    run_pipeline(module, PREPARE)
    return str(module)


def tuned(text: str, machine: str, window: int) -> tuple[float, int, int]:
    """(CPU seconds of autotune, collectives tuned, simulated step time in ns of the result)."""
    from ccopt.passes.autotune import TUNED_OPS
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import load_program
    from ccopt.sim.machine import load_machine
    from ccopt.sim.program import simulate_module

    module = load_program(text)
    collectives = sum(1 for o in module.walk() if isinstance(o, TUNED_OPS))
    start = time.process_time()
    run_pipeline(module, f"autotune{{machine={machine} chunks=2,4 window={window}}}")
    seconds = time.process_time() - start
    run_pipeline(module, "convert-to-kernel")
    return seconds, collectives, simulate_module(module, load_machine(machine)).step_time_ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-5b")
    parser.add_argument("--mesh", type=mesh, default="dp=2,tp=8")
    parser.add_argument("--layers", type=positives, default=[1, 2, 4])
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--machine", default="dgx-a100")
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    if args.window < 0:
        parser.error(f"argument --window: expected an integer >= 0, got {args.window}")
    try:
        run(args)
    except CcoptError as e:  # a bad model, machine or dtype: one line, as ccopt says it
        parser.error(str(e))


def run(args: argparse.Namespace) -> None:
    print(
        f"autotune on {args.model} ({args.dtype}, {args.mesh}) inlined, machine {args.machine}: "
        f"whole function (window=0) against window={args.window}"
    )
    header = (
        "layers  collectives   whole s   window s   ratio   growth whole/window   "
        "step ms whole / window"
    )
    print(header)
    first: tuple[int, float, float] | None = None
    for layers in args.layers:
        text = prepared(args.model, args.mesh, layers, args.dtype)
        whole_s, count, whole_ns = tuned(text, args.machine, 0)
        window_s, _, window_ns = tuned(text, args.machine, args.window)
        if first is None:
            first = (layers, whole_s, window_s)
        growth = (
            f"{whole_s / first[1]:.2f}x / {window_s / first[2]:.2f}x (L {layers / first[0]:.0f}x)"
        )
        print(
            f"{layers:>6}  {count:>11}  {whole_s:>8.1f}  {window_s:>9.1f}  "
            f"{whole_s / window_s:>5.2f}x   {growth:<24}  "
            f"{whole_ns / 1e6:.3f} / {window_ns / 1e6:.3f}"
        )


if __name__ == "__main__":
    main()
