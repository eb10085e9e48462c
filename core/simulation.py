"""`ccopt.simulate`: predict the time of one step of a program on a machine.

The façade over `ccopt.sim` that `ccopt-sim` and Python users share: it loads the program,
resizes its mesh, applies a pass pipeline (the simulator itself never rewrites IR) and runs the
ccopt-mode simulation.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ccopt.program import ProgramSource
    from ccopt.sim.machine import Machine
    from ccopt.sim.program import Report

MODELS = ("ccopt",)


def simulate(
    program: ProgramSource,
    machine: str | os.PathLike[str] | Machine = "dgx-a100",
    model: str = "ccopt",
    *,
    mesh: dict[str, int] | str | None = None,
    pipeline: str = "",
    entry: str | None = None,
    symmetric: bool = True,
) -> Report:
    """Predict one step of `program` (a path, IR text, a module or a front-end program) on
    `machine` (a preset name, a machine file or a `ccopt.sim.machine.Machine`), after resizing
    its mesh (`{"dp": 8}` or `"dp=8"`) and applying `pipeline`. `model="ccopt"` is the cost
    model of `ccopt.sim.cost`; ASTRA-sim's model times single collectives
    (`ccopt-sim --network NET.yml --system SYS.json --collective ...`), not programs."""
    from ccopt.program import bind_mesh, check_pipeline_text, load_program
    from ccopt.sim.machine import Machine, load_machine
    from ccopt.sim.program import simulate_module
    from ccopt.sim.tasks import SimulationError

    if model not in MODELS:
        raise SimulationError(
            f"model '{model}': programs are simulated with the ccopt model; ASTRA-sim's model "
            "times one collective at a time (ccopt-sim --network ... --system ...)"
        )
    if not isinstance(machine, str | os.PathLike | Machine):
        raise SimulationError(
            f"machine must be a preset name, a machine file or a Machine, got "
            f"{type(machine).__name__}"
        )
    if pipeline is not None:  # (None: no pipeline, as "")
        check_pipeline_text(pipeline)
    module = load_program(program)
    bind_mesh(module, mesh)
    if pipeline:
        from ccopt.passes.pipeline import run_pipeline

        run_pipeline(module, pipeline)
    m = machine if isinstance(machine, Machine) else load_machine(machine)
    return simulate_module(module, m, entry=entry, symmetric=symmetric)
