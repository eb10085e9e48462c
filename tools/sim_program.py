"""The program form of `ccopt-sim`: predict one step of a program on a machine (ccopt mode).

    ccopt-sim examples/megatron_mlp.mlir -p 'split-all-reduce,overlap{chunks=3}' --machine dgx-a100
    ccopt-sim PROGRAM.mlir --machine my-machine.yml --mesh dp=8 --trace out.json --plot out.png --json

`--json` prints one object with at least "step_time_ns", "exposed_comm_ns" and "compute_ns";
`--trace` writes Chrome/Perfetto trace-event JSON, `--plot` a timeline (matplotlib, the `plot`
extra) as PNG, SVG or PDF by its extension; both are checked before the simulation runs and
written after it. The ASTRA-sim forms (`--network ... --system ...`) live in `ccopt.tools.ccopt_sim`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ccopt.diagnostics import CcoptError, SourceText, printing_op_warnings
from ccopt.files import STDIO, report_stream

if TYPE_CHECKING:
    from ccopt.sim.program import Report

PROGRESS_TASKS = 20_000
"""Programs with more tasks than this show a progress spinner on stderr while simulating."""


def add_program_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the program form (the program itself is the positional argument)."""
    g = p.add_argument_group("program simulation (ccopt mode)")
    g.add_argument("--machine", metavar="PRESET|FILE", help="a machine preset or YAML file")
    g.add_argument("-p", "--pipeline", default="", help="a pass pipeline to apply first")
    g.add_argument("--mesh", help="resize mesh axes, e.g. dp=8,tp=4 (default: as declared)")
    g.add_argument("--entry", help="function to simulate (default: the only public one)")
    g.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    g.add_argument(
        "--plot",
        metavar="OUT.png",
        help="write a timeline, PNG, SVG or PDF by the extension (needs matplotlib)",
    )
    g.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="PLUGIN",
        help="import a .py file or module that registers passes and dialects (repeatable)",
    )


def program_arguments_given(args: argparse.Namespace) -> bool:
    return any(
        getattr(args, k, None)
        for k in ("machine", "pipeline", "mesh", "entry", "trace", "plot", "load_plugin")
    )


def run_program(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Simulate `args.program`; errors are printed like the rest of ccopt's (exit 1)."""
    if args.machine is None:
        p.error(f"simulating the program '{args.program}' needs --machine PRESET|FILE")
    names = ("network", "system", "collective", "size", "workload", "body_passes")
    astra = [f"--{k.replace('_', '-')}" for k in names if getattr(args, k, None) is not None]
    if astra or getattr(args, "congestion", "unaware") != "unaware":
        p.error(
            f"{', '.join(astra) or '--congestion'}: ASTRA-sim mode times one collective or a "
            "Chakra trace, not a PROGRAM.mlir (give one or the other)"
        )
    if args.program.lower().endswith(".xml"):
        p.error(
            f"'{args.program}' is an algorithm: time it with --network NET.yml --system "
            "SYS.json --size BYTES (ASTRA-sim mode), not --machine"
        )
    if args.program.lower().endswith(".et"):
        p.error(
            f"'{args.program}' is a Chakra trace: time an algorithm's trace set with --network "
            "NET.yml --system SYS.json, or a workload's with --workload PREFIX (ASTRA-sim mode), "
            "not --machine"
        )
    check_output_options(p, args)
    source: SourceText | None = None
    try:
        from ccopt.passes import load_plugin
        from ccopt.program import program_source

        for plugin in args.load_plugin:
            load_plugin(plugin)
        outputs = _outputs(args)
        source = program_source(Path(args.program))
        with printing_op_warnings(source):
            report = _simulate(source, args)
        _write_outputs(report, outputs)
    except CcoptError as e:
        print(f"ccopt-sim: {e.render(source)}", file=sys.stderr)
        return 1
    stream = report_stream(args.trace, args.plot)
    if args.json:
        print(json.dumps(report.to_json()), file=stream)
    else:
        print_report(report, stream)
    return 0


def check_output_options(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--trace and --plot must be two different destinations."""
    if args.trace == STDIO and args.plot == STDIO:
        p.error("--trace and --plot cannot both be standard output ('-')")
    if args.trace and args.plot and STDIO not in (args.trace, args.plot):
        if os.path.realpath(args.trace) == os.path.realpath(args.plot):
            p.error(f"--trace and --plot name the same file '{args.plot}'")


def _outputs(args: argparse.Namespace) -> dict[str, str]:
    """The output options given, each destination checked before the simulation runs so
    that a bad one fails it before any file is written."""
    outputs = {k: getattr(args, k) for k in ("trace", "plot") if getattr(args, k)}
    if "plot" in outputs:
        from ccopt.sim.trace import plot_format

        plot_format(outputs["plot"])
    for option, path in outputs.items():
        _check_destination(option, path)
    return outputs


def _check_destination(option: str, path: str) -> None:
    """A file that `write_atomic` will be able to create or replace (standard output aside)."""
    if path == STDIO:
        return
    target, folder = Path(path), Path(path).parent
    if not folder.is_dir():
        problem = f"folder '{folder}' does not exist"
    elif target.is_dir():
        problem = "it is a directory"
    elif not os.access(target if target.exists() else folder, os.W_OK):
        problem = "permission denied"
    else:
        return
    raise CcoptError(f"cannot write '{path}' (--{option}): {problem}")


def _write_outputs(report: Report, outputs: dict[str, str]) -> None:
    """Render every output, then write them: a failure leaves none half-done."""
    from ccopt.files import write_atomic
    from ccopt.sim.trace import plot_format, plot_image, trace_text

    payloads: dict[str, str | bytes] = {}
    if "trace" in outputs:
        payloads[outputs["trace"]] = trace_text(report)
    if "plot" in outputs:
        payloads[outputs["plot"]] = plot_image(report, plot_format(outputs["plot"]))
    for path, payload in payloads.items():
        write_atomic(path, payload)


def _simulate(source: SourceText, args: argparse.Namespace) -> Report:
    from ccopt.program import bind_mesh, load_program
    from ccopt.sim.machine import load_machine
    from ccopt.sim.program import simulate_module

    machine = load_machine(args.machine)
    module = load_program(source)
    bind_mesh(module, args.mesh)
    if args.pipeline:
        from ccopt.passes.pipeline import run_pipeline

        run_pipeline(module, args.pipeline)
    symmetric = not getattr(args, "full", False)
    with _progress(module) as update:
        return simulate_module(
            module, machine, entry=_entry(args.entry), symmetric=symmetric, progress=update
        )


def _entry(name: str | None) -> str | None:
    """--entry names a function with or without its `@`, as IR spells it."""
    return name.removeprefix("@") if name else name


def _progress(module: object) -> AbstractContextManager:
    """A rich status line on stderr for long runs (a terminal only), else nothing."""
    from xdsl.dialects.builtin import ModuleOp

    assert isinstance(module, ModuleOp)
    if not sys.stderr.isatty() or sum(1 for _ in module.walk()) < PROGRESS_TASKS:
        return nullcontext(None)
    from contextlib import contextmanager

    from rich.console import Console

    @contextmanager
    def status():  # noqa: ANN202
        with Console(stderr=True).status("simulating") as s:
            yield lambda message: s.update(f"simulating: {message}")

    return status()


def print_report(report: Report, stream: TextIO = sys.stdout) -> None:
    """A short table; the last line is `step time: <int> ns`."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    rows = [
        ("machine", report.machine),
        ("mesh", f"{report.mesh} ({report.ranks} ranks, {len(report.classes)} rank classes)"),
        ("compute", f"{report.compute_ns} ns"),
        ("communication", f"{report.comm_ns} ns"),
        ("exposed communication", f"{report.exposed_comm_ns} ns"),
        ("overlap", f"{report.overlap_percent:.1f}%"),
        ("bytes copied", str(report.copy_bytes)),
    ]
    rows += [(f"stream {s} busy", f"{v} ns") for s, v in sorted(report.stream_busy_ns.items())]
    for key, value in rows:
        table.add_row(key, escape(value))
    console = Console(file=stream, highlight=False, soft_wrap=True)
    console.print(table)
    if report.critical_path:
        console.print(escape("critical path: " + " -> ".join(report.critical_path[-8:])))
    print(f"step time: {report.step_time_ns} ns", file=stream)
