"""`ccopt-plan`: layout planners.

    ccopt-plan axonn --model 80B --gpus 1024 --batch 1024 --machine perlmutter --top 5
    ccopt-plan axonn --model 5B --gpus 16 --batch 32 --json --emit layer.mlir

`axonn` enumerates AxoNN's 4D grids (Gr x Gc x Gd x Gdata, powers of two) and ranks them with
AxoNN's own communication model and, side by side, with ccopt's (latency, compute, memory,
OAR/ORS/OAG overlap, NIC sharing); the table says where the two rankings part and why.
`--emit` writes the chosen grid as a transformer layer program (forward and backward, AxoNN's
collectives, OAG/OAR/ORS at L2).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from ccopt.diagnostics import CcoptError
from ccopt.files import report_stream, write_atomic
from ccopt.tools import quiet_on_closed_pipe

PROGRESS_THRESHOLD = 200
"""Candidates beyond which an interactive run shows a progress bar."""


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got '{text}'")
    return value


def parser() -> argparse.ArgumentParser:
    from ccopt.sim.axonn import AXONN_BANDWIDTH, GPT_MODELS

    p = argparse.ArgumentParser(prog="ccopt-plan", description="Layout planners.")
    sub = p.add_subparsers(dest="planner", required=True)
    a = sub.add_parser(
        "axonn",
        help="AxoNN's 4D grid planner, ranked by AxoNN's model and by ccopt's",
        description="Enumerate AxoNN's 4D grids and rank them by AxoNN's model and ccopt's.",
    )
    a.add_argument("--model", required=True, choices=list(GPT_MODELS), help="GPT size")
    a.add_argument("--gpus", required=True, type=positive, help="GPUs (a power of two)")
    a.add_argument("--batch", required=True, type=positive, help="global batch in samples")
    a.add_argument("--seq", type=positive, default=2048, help="sequence length (default 2048)")
    a.add_argument(
        "--machine",
        choices=list(AXONN_BANDWIDTH),
        default="perlmutter",
        help="machine whose bandwidth table and figures price the grids (default perlmutter)",
    )
    a.add_argument("--top", type=positive, default=10, help="rows to show (default 10)")
    a.add_argument("--json", action="store_true", help="print a JSON list, best first")
    a.add_argument(
        "--model-only",
        choices=["axonn"],
        help="rank by AxoNN's model alone (ccopt_s is null)",
    )
    a.add_argument("--emit", metavar="FILE", help="write the best grid's layer program (.mlir)")
    return p


def progress_bar(total: int):
    """A rich progress bar on stderr for long enumerations at a terminal; None otherwise."""
    if total < PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import Progress

    return Progress(console=Console(stderr=True), transient=True)


def run_axonn(args: argparse.Namespace) -> int:
    from ccopt.sim.axonn import GPT_MODELS, count_grids
    from ccopt.sim.plan4d import plan

    model = GPT_MODELS[args.model]
    check_sizes(args)
    bar = progress_bar(count_grids(args.gpus))
    if bar is None:
        result = plan(
            model, args.gpus, args.batch, args.seq, args.machine, args.model_only, args.top
        )
    else:
        with bar:
            task = bar.add_task("pricing grids", total=count_grids(args.gpus))
            result = plan(
                model,
                args.gpus,
                args.batch,
                args.seq,
                args.machine,
                args.model_only,
                args.top,
                progress=lambda n: bar.advance(task, n),
            )
    if not result.rows:
        raise CcoptError(no_grid_reason(args, model.min_tensor_parallel))
    best = result.rows[0]
    fits = best.ccopt is None or best.ccopt.feasible
    if args.emit and fits:
        emit(best.grid, model, args)
    rows = result.rows[: args.top]
    stream = report_stream(args.emit)
    if args.json:
        print(json.dumps([r.as_json() for r in rows], indent=1), file=stream)
    else:
        print_table(result, rows, stream)
    if not fits:
        raise CcoptError(no_fit_message(result.rows, args.emit))
    return 0


def no_fit_message(rows: list, emit: str | None) -> str:
    """Why no grid is chosen: the grid that needs the least memory, and how much (the
    best-ranked one, named before, needed more than others that do not fit either)."""
    least = min((r for r in rows if r.ccopt is not None), key=lambda r: r.ccopt.memory_bytes)
    return f"no grid fits in memory: the one needing least, {least.grid.as_list()}, {least.why}" + (
        f"; {emit} not written" if emit else ""
    )


def check_sizes(args: argparse.Namespace) -> None:
    """Sizes the emitted program can hold: a mesh of at most 2^20 ranks, and the step's tokens
    (batch x sequence, the layer's first dimension) within 64 bits."""
    from ccopt.mesh import MAX_RANKS

    if args.gpus > MAX_RANKS:
        raise CcoptError(f"--gpus {args.gpus}: ccopt handles meshes of at most {MAX_RANKS} ranks")
    if args.batch * args.seq >= 2**63:
        raise CcoptError(
            f"--batch {args.batch} x --seq {args.seq} tokens do not fit in a 64-bit dimension"
        )


def no_grid_reason(args: argparse.Namespace, min_tp: int) -> str:
    if args.gpus & (args.gpus - 1):
        return f"AxoNN enumerates powers of two: {args.gpus} GPUs have no 4D grid"
    if min_tp > args.gpus:
        return (
            f"the {args.model} model needs Gr*Gc*Gd >= {min_tp} (AxoNN's memory minimum) "
            f"but there are {args.gpus} GPUs"
        )
    return f"no grid has Gr*Gc*Gd >= {min_tp} with the batch divisible by Gdata*Gd"


def emit(grid, model, args: argparse.Namespace) -> None:
    from ccopt.frontend.axonn_layer import LayerShape, emit_layer

    write_atomic(args.emit, emit_layer(grid, LayerShape(args.batch * args.seq, model.hidden)))


def print_table(result, rows, stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    title = (
        f"{result.model.name} GPT on {result.gpus} GPUs of {result.machine}, batch {result.batch}, "
        f"sequence {result.seq}: ranked by {result.ranked_by}'s model"
    )
    table = Table(title=title)
    for name in ("Gr", "Gc", "Gd", "Gdata"):
        table.add_column(name, justify="right")
    table.add_column("AxoNN s (#)", justify="right")
    if result.ranked_by == "ccopt":
        table.add_column("ccopt s (#)", justify="right")
        table.add_column("GiB/GPU", justify="right")
        table.add_column("where the models disagree")
    for r in rows:
        cells = [str(v) for v in r.grid.as_list()] + [f"{r.axonn.seconds:.3f} ({r.axonn_rank})"]
        if r.ccopt is not None:
            fits = "" if r.ccopt.feasible else " !"
            cells += [
                f"{r.ccopt.seconds:.3f} ({r.ccopt_rank})",
                f"{r.ccopt.memory_bytes / 1024**3:.1f}{fits}",
                r.why,
            ]
        table.add_row(*cells)
    console = Console(file=stream, width=160)
    console.print(table)
    if result.ranked_by == "ccopt":
        console.print(summary(result))


def summary(result) -> str:
    axonn_pick = min(result.rows, key=lambda r: r.axonn_rank)
    ccopt_pick = result.rows[0]
    if axonn_pick is ccopt_pick:
        return f"Both models pick {axonn_pick.grid.as_list()}."
    return (
        f"AxoNN picks {axonn_pick.grid.as_list()} (ccopt ranks it #{axonn_pick.ccopt_rank}, "
        f"{axonn_pick.ccopt.seconds:.3f} s); ccopt picks {ccopt_pick.grid.as_list()} "
        f"(AxoNN ranks it #{ccopt_pick.axonn_rank}). "
        + (f"AxoNN's pick: {axonn_pick.why}." if axonn_pick.why else "")
    )


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run_axonn(args)
    except CcoptError as e:
        print(f"ccopt-plan: {e.render()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
