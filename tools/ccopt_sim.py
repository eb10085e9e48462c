"""`ccopt-sim`: time a collective or a Chakra workload as ASTRA-sim's analytical backend would.

    ccopt-sim --network net.yml --system sys.json --collective all-reduce --size 1048576
    ccopt-sim --network net.yml --system sys.json --workload traces/allreduce --json
    ccopt-sim ring.xml --network net.yml --system sys.json --size 1048576

The third form times an algorithm (MSCCL XML, algo IR or a trace set `ccopt -t chakra` wrote)
as ASTRA-sim times its Chakra export run as a custom collective.

The network YAML and system JSON are ASTRA-sim's own files. The last line printed is
`time: <int> ns`; `--json` prints one object with at least "time_ns".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ccopt.diagnostics import CcoptError, SourceText
from ccopt.files import STDIO, input_name, is_stdin, read_text
from ccopt.tools import quiet_on_closed_pipe
from ccopt.tools.sim_program import add_program_arguments, program_arguments_given, run_program

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")


MAX_BYTES = 2**64 - 1
"""ASTRA-sim's comm_size is a uint64."""


def byte_count(text: str) -> int:
    """An argparse type: a positive whole number of bytes that ASTRA-sim's uint64 holds."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_BYTES:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes from 1 to 2^64-1, got '{text}'"
        )
    return value


def pass_count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got '{text}'")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ccopt-sim",
        description="Simulate a collective or a Chakra workload as ASTRA-sim's analytical "
        "backend does (ASTRA-sim mode).",
    )
    p.add_argument(
        "program",
        nargs="?",
        help="a ccopt program to simulate (needs --machine), or an algorithm (MSCCL XML, algo "
        "IR or PREFIX.0.et) to time in ASTRA-sim mode (needs --network, --system, --size)",
    )
    astra = p.add_argument_group("ASTRA-sim mode")
    astra.add_argument("--network", help="ASTRA-sim network YAML (topology, npus_count, ...)")
    astra.add_argument("--system", help="ASTRA-sim system JSON")
    astra.add_argument("--collective", choices=COLLECTIVES, help="one native collective")
    astra.add_argument(
        "--size",
        type=byte_count,
        help="ASTRA-sim's comm_size in bytes (all-gather: per rank); a trace set holds its own",
    )
    astra.add_argument("--workload", metavar="DIR/PREFIX", help="a Chakra trace set PREFIX.<r>.et")
    astra.add_argument(
        "--body-passes",
        type=pass_count,
        metavar="N",
        help="an algorithm's fn steps (a fused all-reduce's body) move N x their chunk bytes "
        "through local memory (Adam: 7); default 0",
    )
    astra.add_argument(
        "--congestion",
        choices=("unaware", "aware"),
        default="unaware",
        help="analytical backend: congestion-unaware (default) or congestion-aware (1-D)",
    )
    astra.add_argument(
        "--full",
        action="store_true",
        help="simulate every rank even when all ranks behave alike (slower; for checking)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_program_arguments(p)
    return p


def check_astra_arguments(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """ASTRA-sim mode needs a network, a system and exactly one of a collective or a workload."""
    if args.program is not None:
        p.error(f"simulating the program '{args.program}' needs --machine (a ccopt machine)")
    if args.network is None or args.system is None:
        p.error("ASTRA-sim mode needs --network NET.yml and --system SYS.json")
    if (args.collective is None) == (args.workload is None):
        p.error("give either --collective (with --size) or --workload")
    if args.collective is not None and args.size is None:
        p.error("--collective needs --size BYTES")


@contextmanager
def progress(args: argparse.Namespace) -> Iterator[None]:
    """A spinner with the event count on a terminal's stderr while a long simulation runs."""
    if args.json or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from ccopt.sim.astra_engine import PROGRESS

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        transient=True,
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("simulating")

        def report(events: int, now: int) -> None:
            bar.update(task, description=f"simulating: {events:,} events, at {now:,} ns")

        token = PROGRESS.set(report)
        try:
            yield
        finally:
            PROGRESS.reset(token)


def load_algorithm(path: str):
    """The algorithm of an MSCCL XML file, an IR file holding one `algo.algorithm`, or a trace
    set written by `ccopt -t chakra` (given as PREFIX.<r>.et)."""
    from ccopt.frontend.msccl_xml import read_algorithm

    if path.endswith(".et"):
        from ccopt.sim.chakra_algo import read_algorithm_traces, trace_prefix

        return read_algorithm_traces(trace_prefix(path))
    source = SourceText(input_name(path), read_text(path))
    if path.lower().endswith(".xml") or (is_stdin(path) and source.text.lstrip().startswith("<")):
        return read_algorithm(source)
    from ccopt.dialects.algo import AlgorithmOp
    from ccopt.program import load_program

    found = [op for op in load_program(source).walk() if isinstance(op, AlgorithmOp)]
    if len(found) != 1:
        raise CcoptError(f"{path}: expected one algo.algorithm, found {len(found)}")
    return found[0].algorithm()


def run_algorithm(args: argparse.Namespace) -> dict[str, object]:
    from ccopt.dialects.algo import TYPE, AlgorithmError, Step
    from ccopt.sim.chakra_algo import simulate_algorithm
    from ccopt.sim.network import load_network
    from ccopt.sim.system import load_system

    network = load_network(args.network)
    system = load_system(args.system)
    alg = load_algorithm(args.program)
    kind = ASTRA_KINDS.get(alg.collective)
    if args.program.endswith(".et") and kind is not None and not args.body_passes:
        return run_traces(args, alg, network, system, kind)
    if args.body_passes and not any(
        (tb.steps[:, TYPE] == Step.APPLY).any() for g in alg.gpus for tb in g.tbs
    ):
        raise CcoptError(
            f"{args.program}: --body-passes prices a fused body's fn steps, and {alg.name} has none"
        )
    size = args.size
    if size is None:  # (a trace set: `main` lets it leave --size out)
        from ccopt.sim.chakra_algo import trace_prefix, trace_set_bytes

        size = trace_set_bytes(trace_prefix(args.program), alg)
    try:
        result = simulate_algorithm(alg, network, system, size, args.body_passes or 0)
    except AlgorithmError as e:
        raise CcoptError(f"{args.program}: {e}") from None
    return {
        "time_ns": result.time_ns,
        "algorithm": alg.name,
        "collective": alg.collective,
        "size": size,
        "npus": network.npus,
        "chunk_bytes": result.chunk_bytes,
        "messages": result.messages,
        "rank_finish_ns": result.rank_finish_ns,
    }


ASTRA_KINDS = {
    "allreduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "allgather": "all-gather",
    "alltoall": "all-to-all",
}
"""ASTRA-sim's name of each collective it runs custom traces for."""


def run_traces(
    args: argparse.Namespace, alg: object, network: object, system: object, kind: str
) -> dict[str, object]:
    """A trace set timed as it is, as ASTRA-sim runs it when the system file names it as the
    collective's custom implementation: its COMP nodes last what they say (re-deriving the
    algorithm from the traces had priced them from the system's local-mem-bw instead)."""
    import dataclasses

    from ccopt.sim.astra import simulate_collective
    from ccopt.sim.chakra_algo import trace_prefix, trace_set_bytes

    prefix = trace_prefix(args.program)
    size = trace_set_bytes(prefix, alg)  # type: ignore[arg-type]
    if args.size is not None and args.size != size:
        raise CcoptError(
            f"{args.program}: the trace set moves {size} bytes per rank (its chunk_bytes times "
            f"a rank's input chunks), not --size {args.size}: its sends and receives hold their "
            f"sizes; export it again with -t 'chakra{{size={args.size}}}', or leave --size out"
        )
    custom = dataclasses.replace(system, custom={kind: prefix})  # type: ignore[type-var]
    result = simulate_collective(network, custom, kind, size)  # type: ignore[arg-type]
    return {
        "time_ns": result.time_ns,
        "algorithm": alg.name,  # type: ignore[attr-defined]
        "collective": alg.collective,  # type: ignore[attr-defined]
        "size": size,
        "npus": network.npus,  # type: ignore[attr-defined]
        "traces": trace_prefix(args.program),
    }


def run_collective(args: argparse.Namespace) -> dict[str, object]:
    from ccopt.sim.astra import simulate_collective
    from ccopt.sim.network import load_network
    from ccopt.sim.system import load_system

    network = load_network(args.network)
    system = load_system(args.system)
    warn_custom_size(system, args.collective, args.size, network.npus)
    with progress(args):
        if args.congestion == "aware":
            from ccopt.sim.astra_congestion import simulate_collective_aware

            result = simulate_collective_aware(network, system, args.collective, args.size)
        else:
            symmetric = False if args.full else None
            result = simulate_collective(
                network, system, args.collective, args.size, symmetric=symmetric
            )
    return {
        "time_ns": result.time_ns,
        "collective": result.collective,
        "size": result.size,
        "npus": network.npus,
        "chunks": result.chunks,
        "phases": list(result.phases),
        "congestion": args.congestion,
        "symmetric": result.symmetric,
    }


def warn_custom_size(system: object, collective: str, size: int, npus: int) -> None:
    """ASTRA-sim runs a collective the system file implements with custom traces as the traces
    say, whatever comm_size asks (so does ccopt's ASTRA-sim mode): say so where they differ."""
    from ccopt.dialects.algo import AlgorithmError
    from ccopt.sim.astra_custom import custom_traces
    from ccopt.sim.chakra_algo import algorithm_from_traces, traces_bytes

    prefix = system.custom.get(collective)  # type: ignore[attr-defined]
    if prefix is None:
        return
    traces = custom_traces(system, npus, collective).get(collective)  # type: ignore[arg-type]
    if not traces:
        return
    try:
        moved = traces_bytes(traces[0], algorithm_from_traces(traces, prefix), f"{prefix}.0.et")
    except (CcoptError, AlgorithmError):  # (traces ccopt did not write: theirs to say)
        return
    if moved != size:
        print(
            f"warning: {collective} runs the custom traces {prefix}, which move {moved} bytes "
            f"per rank: --size {size} does not change the time (as in ASTRA-sim)",
            file=sys.stderr,
        )


def run_workload(args: argparse.Namespace) -> dict[str, object]:
    from ccopt.sim.chakra_sim import simulate_workload
    from ccopt.sim.network import load_network
    from ccopt.sim.system import load_system

    network = load_network(args.network)
    system = load_system(args.system)
    with progress(args):
        report = simulate_workload(network, system, args.workload, congestion=args.congestion)
    return {
        "time_ns": report.time_ns,
        "workload": args.workload,
        "npus": network.npus,
        "congestion": args.congestion,
        "rank_finish_ns": report.rank_finish_ns,
    }


def print_table(report: dict[str, object]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    for key, value in report.items():
        if key in ("time_ns", "rank_finish_ns"):
            continue
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        table.add_row(key.replace("_", " "), shown)
    Console(highlight=False, soft_wrap=True).print(table)
    print(f"time: {report['time_ns']} ns")


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    readers = [getattr(args, k, None) for k in ("program", "network", "system", "machine")]
    if readers.count(STDIO) > 1:
        p.error("only one input can be standard input ('-')")
    if args.program is not None and args.machine is None and (args.network or args.system):
        traces = args.program.endswith(".et")  # (a trace set holds its sizes)
        if args.network is None or args.system is None or (args.size is None and not traces):
            p.error("timing an algorithm needs --network, --system and --size")
        if args.collective or args.workload:
            p.error("give an algorithm, --collective or --workload, not several")
        unused = ("--congestion", "--full", *PROGRAM_OPTIONS)
        refuse_unused(p, args, "timing an algorithm", unused)
        return report(args, run_algorithm)
    if args.program is not None:
        return run_program(p, args)
    if program_arguments_given(args):
        p.error(
            "--machine, -p, --mesh, --entry, --trace, --plot and --load-plugin need a PROGRAM.mlir"
        )
    check_astra_arguments(p, args)
    if args.collective:
        refuse_unused(p, args, "timing a collective", ("--body-passes",))
        return report(args, run_collective)
    refuse_unused(p, args, "running a workload", ("--size", "--full", "--body-passes"))
    return report(args, run_workload)


PROGRAM_OPTIONS = ("-p", "--mesh", "--entry", "--trace", "--plot", "--load-plugin")
"""Options of the program form besides --machine."""


def refuse_unused(
    p: argparse.ArgumentParser, args: argparse.Namespace, mode: str, options: Sequence[str]
) -> None:
    """Refuse the options a form would ignore: a silently ignored option looks as if it had
    changed the result."""
    given = [option for option in options if option_given(args, option)]
    if given:
        p.error(f"{', '.join(given)}: not used when {mode}")


def option_given(args: argparse.Namespace, option: str) -> bool:
    """Whether `option` was given a value other than its default."""
    dest = "pipeline" if option == "-p" else option.lstrip("-").replace("-", "_")
    value = getattr(args, dest, None)
    if dest == "congestion":
        return value != "unaware"
    return value not in (None, False, "", [])


def report(args: argparse.Namespace, run: Callable[[argparse.Namespace], dict[str, object]]) -> int:
    """Run one ASTRA-sim mode form and print its report (a table, or JSON with --json)."""
    try:
        result = run(args)
    except CcoptError as e:
        print(f"ccopt-sim: {e.render()}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
