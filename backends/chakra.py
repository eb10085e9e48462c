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
    size: int
    local_mem_bw: int | float
    algorithm: str | None
    machine: str
    entry: str | None


def export(module: ModuleOp, prefix: str | None, options: ChakraOptions) -> list[Path]:
    """Write PREFIX.<rank>.et for every rank; the paths written."""
    from ccopt.dialects.algo import AlgorithmError, AlgorithmOp

    if not prefix or prefix == STDIO:
        raise CcoptError("-t chakra writes one file per rank: give -o DIR/PREFIX")
    algorithms = [op for op in module.walk() if isinstance(op, AlgorithmOp)]
    if options.algorithm is not None:
        algorithms = [op for op in algorithms if op.sym_name.data == options.algorithm]
        if not algorithms:
            raise CcoptError(f"-t chakra: the module has no algorithm @{options.algorithm}")
    if len(algorithms) > 1:
        names = ", ".join("@" + op.sym_name.data for op in algorithms)
        raise CcoptError(
            f"-t chakra writes one algo.algorithm; choose one with -t 'chakra{{algorithm=NAME}}' "
            f"({names})"
        )
    if algorithms:
        from ccopt.sim.chakra_algo import write_algorithm_traces

        if options.size < 1 or options.local_mem_bw < 0:
            raise CcoptError("-t chakra: size must be >= 1 byte and local_mem_bw >= 0 GB/s")
        try:
            alg = algorithms[0].algorithm()
            return write_algorithm_traces(prefix, alg, options.size, options.local_mem_bw)
        except AlgorithmError as e:
            raise CcoptError(f"-t chakra: {e}") from None
    from ccopt.sim.chakra_program import write_program_traces
    from ccopt.sim.machine import load_machine

    return write_program_traces(prefix, module, load_machine(options.machine), options.entry)
