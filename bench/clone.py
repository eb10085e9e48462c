"""Cloning a model-scale module: `ccopt.ir.clone` against xDSL's `Operation.clone`.

The Python API clones every program it loads or checks (`ccopt.run`, `check_pipeline`,
`apply_pipeline`), auto-shard and autotune clone functions and windows. A GPT step built by the
front end (`ccopt.frontend.gpt`, one function per layer kind, called per layer) has an entry
block with ~36 arguments per layer. Printed per layer count: CPU seconds to parse the step (the
baseline), to clone it with xDSL and with ccopt, as ratios to the parse. xDSL 0.74
adds a cloned block's arguments one at a time, each copying the tuple before it: quadratic in
the layers. Nothing asserts on time.

    python bench/clone.py [--layers 96,400,1000] [--model tiny]
"""

from __future__ import annotations

import argparse
import gc
import io
import time

from bench_args import positives


def cpu(run):  # type: ignore[no-untyped-def]
    """(result, CPU seconds) of one call, garbage collected first."""
    gc.collect()
    start = time.process_time()
    result = run()
    return result, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=positives, default=[96, 400, 1000])
    parser.add_argument("--model", default="tiny")
    args = parser.parse_args()

    from xdsl.printer import Printer

    from ccopt.diagnostics import SourceText
    from ccopt.frontend.gpt import gpt_step
    from ccopt.ir import clone, make_context, parse_module, verify_module

    print(f"{'layers':>6}  {'arguments':>9}  {'parse':>7}  {'xDSL clone':>15}  {'ccopt clone':>15}")
    for layers in args.layers:
        out = io.StringIO()
        Printer(stream=out).print_op(gpt_step(args.model, {"dp": 2, "tp": 2}, layers=layers).module)
        text = out.getvalue()
        module, parse = cpu(lambda t=text: parse_module(make_context(), SourceText("gpt", t)))
        verify_module(module)
        arguments = max(len(b.args) for op in module.walk() for r in op.regions for b in r.blocks)
        _, xdsl = cpu(module.clone)
        _, ours = cpu(lambda m=module: clone(m))
        print(
            f"{layers:>6}  {arguments:>9}  {parse:>11.2f}s  {xdsl:>6.2f}s {xdsl / parse:>6.2f}x"
            f"  {ours:>6.2f}s {ours / parse:>6.2f}x"
        )


if __name__ == "__main__":
    main()
