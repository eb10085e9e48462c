"""ccopt: a multi-level compiler for distributed deep-learning programs.

The package root stays import-cheap: the public functions load their machinery on first use.

    ccopt.run(program, inputs=None, *, entry=None, mesh=None, seed=0, steps=1,
              memory_limit=None) -> RunResult
    ccopt.check_pipeline(program, pipeline, inputs=None, *, entry=None, mesh=None, seed=0,
                         steps=1, rtol=None, atol=None, memory_limit=None) -> CheckReport
    ccopt.load_program(program) -> ModuleOp
    ccopt.build(program, pipeline="", *, mesh=None, entry=None, archs=("sm_80", "sm_90"))
        -> pybind11 module
    ccopt.simulate(program, machine="dgx-a100", model="ccopt", *, mesh=None, pipeline="",
                   entry=None) -> Report

`program` is a path, IR text, a ModuleOp or a front-end program; `inputs` maps argument names
to global arrays; `mesh` resizes axes ("dp=8" or {"dp": 8}). What does not fit raises a
`ccopt.diagnostics.CcoptError` that says why. Plugins extend all of them:
`ccopt.passes.load_plugin(path)` (see README, "Extending ccopt").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ccopt.backends.cuda.build import build
    from ccopt.program import load_program
    from ccopt.runner import check_pipeline, run
    from ccopt.simulation import simulate

__all__ = ["run", "check_pipeline", "load_program", "build", "simulate"]

_LAZY = {
    "run": "ccopt.runner",
    "check_pipeline": "ccopt.runner",
    "load_program": "ccopt.program",
    "build": "ccopt.backends.cuda.build",
    "simulate": "ccopt.simulation",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ccopt' has no attribute '{name}'")
