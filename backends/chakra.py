"""`-t chakra`: a module as Chakra execution traces, one file per rank.

A module holding an `algo.algorithm` is exported as ASTRA-sim's custom-collective traces of that
algorithm (`ccopt.sim.chakra_algo`); any other module is a program, exported as a workload
(`ccopt.sim.chakra_program`): compute with durations from ccopt's cost model, collectives as
COMM_COLL nodes, stage transfers as sends and receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp

from ccopt.diagnostics import CcoptError
from ccopt.files import STDIO


class ChakraOptions(Protocol):
    """`-t chakra`'s options; None where not given (each form has its defaults below)."""

    size: int | None
    local_mem_bw: int | float | None
    algorithm: str | None
    machine: str | None
    entry: str | None


ALGORITHM_DEFAULTS = {"size": 1048576, "local_mem_bw": 50}
"""Bytes per rank (ASTRA-sim's comm_size) and local-memory GB/s of an algorithm's traces."""
PROGRAM_DEFAULTS = {"machine": "dgx-a100"}
"""The machine whose cost model times a program's compute nodes."""
MAX_COMM_SIZE = 2**64 - 1
"""ASTRA-sim's comm_size is a uint64."""


def refuse_unused(options: ChakraOptions, names: tuple[str, ...], form: str) -> None:
    """An option the exported form does not read would look as if it had shaped the traces."""
    given = [n for n in names if getattr(options, n) is not None]
    if given:
        raise CcoptError(f"-t chakra: {', '.join(given)}: not used when exporting {form}")


def export(module: ModuleOp, prefix: str | None, options: ChakraOptions) -> list[Path]:
    """Write PREFIX.<rank>.et for every rank; the paths written."""
    from ccopt.dialects.algo import AlgorithmError, AlgorithmOp

    if not prefix or prefix == STDIO:
        raise CcoptError("-t chakra writes one file per rank: give -o DIR/PREFIX")
    algorithms = [op for op in module.walk() if isinstance(op, AlgorithmOp)]
    names = ", ".join(op.sym_name.data for op in algorithms)
    if options.algorithm is not None:
        wanted = options.algorithm.removeprefix("@")
        algorithms = [op for op in algorithms if op.sym_name.data == wanted]
        if not algorithms:
            raise CcoptError(
                f"-t chakra: the module has no algorithm @{wanted} (it has {names or 'none'})"
            )
    if len(algorithms) > 1:
        raise CcoptError(
            f"-t chakra writes one algo.algorithm; choose one with -t 'chakra{{algorithm=NAME}}' "
            f"({names})"
        )
    if algorithms:
        from ccopt.sim.chakra_algo import write_algorithm_traces

        refuse_unused(options, ("machine", "entry"), "an algorithm")
        size = ALGORITHM_DEFAULTS["size"] if options.size is None else options.size
        bw = (
            ALGORITHM_DEFAULTS["local_mem_bw"]
            if options.local_mem_bw is None
            else options.local_mem_bw
        )
        if not 1 <= size <= MAX_COMM_SIZE or not 0 <= bw < float("inf"):
            raise CcoptError(
                "-t chakra: size must be 1 to 2^64-1 bytes and local_mem_bw a finite GB/s >= 0"
            )
        try:
            alg = algorithms[0].algorithm()
            return write_algorithm_traces(prefix, alg, size, bw)
        except AlgorithmError as e:
            raise CcoptError(f"-t chakra: {e}") from None
    from ccopt.sim.chakra_program import write_program_traces
    from ccopt.sim.machine import load_machine

    refuse_unused(options, ("size", "local_mem_bw"), "a program")
    machine = load_machine(options.machine or PROGRAM_DEFAULTS["machine"])
    entry = options.entry.removeprefix("@") if options.entry else None
    return write_program_traces(prefix, module, machine, entry)
