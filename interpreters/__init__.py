"""The reference interpreter: xDSL's interpreter with ccopt's dialects, on N simulated ranks.

Plugins give their own ops semantics with `register_interpreter_functions`; an op that nothing
gives semantics to, and any error while an op runs, is reported at that op's location.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from ccopt.diagnostics import CcoptError, OpError, render_at_op

if TYPE_CHECKING:
    from collections.abc import Mapping

    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from ccopt.interpreters.distributed import DistTensor
    from ccopt.mesh import Mesh

PLUGIN_FUNCTIONS: dict[str, type[InterpreterFunctions]] = {}
"""Interpreter functions of plugins' ops, by the class's qualified name (a plugin loaded again
replaces its own)."""


def register_interpreter_functions(
    functions: type[InterpreterFunctions],
) -> type[InterpreterFunctions]:
    """Give a researcher's own ops their semantics in `ccopt-run` and `check_pipeline`: an xDSL
    `InterpreterFunctions` class (with `@register_impls`, constructed without arguments) whose
    `@impl` functions take and return the interpreter's values (a `DistTensor` per
    `!dtensor.tensor`); usable as a class decorator in a plugin (see `ccopt.passes.load_plugin`).
    """
    PLUGIN_FUNCTIONS[f"{functions.__module__}.{functions.__qualname__}"] = functions
    return functions


def check_plugin_results(op: Operation, results: PythonValues) -> None:
    """A plugin's interpreter function gives a `DistTensor` for each `!dtensor.tensor` result
    (a numpy array broke the next op, deep inside ccopt)."""
    from ccopt.dialects.dtensor_type import DTensorType
    from ccopt.interpreters.distributed import DistTensor

    if len(results) != len(op.results):
        raise OpError(
            op, f"its interpreter function gave {len(results)} results for {len(op.results)}"
        )
    for i, (value, result) in enumerate(zip(results, op.results, strict=True)):
        if isinstance(result.type, DTensorType) and not isinstance(value, DistTensor):
            raise OpError(
                op,
                f"its interpreter function gave a {type(value).__name__} for result #{i} "
                f"({result.type}): a !dtensor.tensor is a ccopt.interpreters.distributed."
                "DistTensor",
            )


class RunningOps(Interpreter.Listener):
    """The ops being interpreted, innermost last, so that an error is reported at the op that
    raised it; an op that no interpreter functions implement is refused when it is reached."""

    def __init__(self, functions: Sequence[InterpreterFunctions]):
        # xDSL's Interpreter reads the same per-class table (`_impls`) when functions register
        self.implemented = {op for f in functions for op, _ in type(f)._impls()}  # pyright: ignore[reportPrivateUsage]
        self.from_plugins = {
            op
            for f in functions
            if type(f) in PLUGIN_FUNCTIONS.values()
            for op, _ in type(f)._impls()  # pyright: ignore[reportPrivateUsage]
        }
        self.stack: list[Operation] = []

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        if type(op) not in self.implemented:
            raise OpError(
                op,
                "has no semantics in the interpreter: no interpreter functions implement it "
                "(a plugin registers them with ccopt.interpreters.register_interpreter_functions)",
            )
        self.stack.append(op)

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        if type(op) in self.from_plugins:
            check_plugin_results(op, results)
        self.stack.pop()

    def note_op(self, error: BaseException) -> None:
        """Add the running op and its location to an unexpected exception's display: the
        traceback stays whole, and says which op of the user's program it was running."""
        notes = getattr(error, "__notes__", [])
        # xDSL's note prints the whole module once per enclosing op: megabytes for a model
        notes[:] = [n for n in notes if "Error while interpreting op" not in n]
        if self.stack:
            where = render_at_op(self.stack[-1], "was being interpreted", None, "note")
            error.add_note(where.split("\n")[0])

    def located(self, error: Exception) -> Exception:
        """The error at the op that was running when it was raised (unchanged outside ops)."""
        return OpError(self.stack[-1], str(error)) if self.stack else error


class ReferenceInterpreter:
    """Runs functions of a module with func, cf, arith, math, scf, every ccopt dialect and the
    plugins' ops, and reports which arguments the call updated in place (`dtensor.update`)."""

    def __init__(self, module: ModuleOp, meshes: Mapping[str, Mesh]):
        from xdsl.interpreters.arith import ArithFunctions
        from xdsl.interpreters.builtin import BuiltinFunctions
        from xdsl.interpreters.cf import CfFunctions
        from xdsl.interpreters.func import FuncFunctions
        from xdsl.interpreters.math import MathFunctions
        from xdsl.interpreters.scf import ScfFunctions

        from ccopt.interpreters.coll import CollFunctions
        from ccopt.interpreters.dtensor import CallFunctions, DtensorFunctions
        from ccopt.interpreters.kernel import KernelFunctions
        from ccopt.interpreters.sched import SchedFunctions

        self.dtensor = DtensorFunctions(meshes)
        self.kernel = KernelFunctions(self.dtensor)
        functions = [
            BuiltinFunctions(),
            FuncFunctions(),
            CfFunctions(),
            ArithFunctions(),
            MathFunctions(),
            ScfFunctions(),
            self.dtensor,
            CollFunctions(),
            SchedFunctions(),
            self.kernel,
            *(plugin() for plugin in PLUGIN_FUNCTIONS.values()),
        ]
        self.running = RunningOps(functions)
        self.interpreter = Interpreter(module, listeners=(self.running,))
        for f in functions:
            self.register(f)
        self.interpreter.register_implementations(
            CallFunctions(module, self.dtensor), override=True
        )

    def register(self, functions: InterpreterFunctions) -> None:
        """Register one set of functions; a plugin's that implement an op again are refused
        (the reference semantics stay the reference)."""
        try:
            self.interpreter.register_implementations(functions)
        except ValueError as e:
            raise CcoptError(f"interpreter functions {type(functions).__name__}: {e}") from None

    def call(
        self, f: func.FuncOp, args: Sequence[DistTensor]
    ) -> tuple[tuple[DistTensor, ...], dict[int, DistTensor]]:
        """The function's results and its in-place updates (argument index -> new value)."""
        if "kernel.results" in f.attributes:
            return self.call_kernel_level(f, args)
        self.dtensor.updates.clear()
        results = self.run(f, args)
        entry = f.body.blocks.first
        updates = {
            v.index: value
            for v, value in self.dtensor.updates.items()
            if getattr(v, "block", None) is entry
        }
        return tuple(results), updates

    def call_kernel_level(
        self, f: func.FuncOp, args: Sequence[DistTensor]
    ) -> tuple[tuple[DistTensor, ...], dict[int, DistTensor]]:
        """An L3 function writes its results into output buffers passed last and updates
        arguments in their own buffers (`kernel.updated`)."""
        from ccopt.dialects.kernel import BufferType
        from ccopt.interpreters.distributed import DistTensor, garbage, numpy_dtype

        block = f.body.blocks[0]
        outputs = []
        for arg in block.args[len(args) :]:
            assert isinstance(arg.type, BufferType)
            t = arg.type.tensor
            mesh = self.dtensor.mesh(t)
            dtype = numpy_dtype(t.element_type)
            outputs.append(
                DistTensor(
                    t, mesh, [garbage(t.local_shape(mesh, c), dtype) for c in mesh.all_coords()]
                )
            )
        self.kernel.workspaces.clear()  # each call starts from fresh (garbage) device memory
        self.run(f, (*args, *outputs))
        updated = f.attributes["kernel.updated"].get_values()  # type: ignore[union-attr]
        return tuple(outputs), {i: args[i] for i in updated}

    def run(self, f: func.FuncOp, args: Sequence[object]) -> PythonValues:
        """Call `f`; an error raised while an op runs is reported at that op."""
        from ccopt.interpreters.distributed import InterpreterError

        self.running.stack.clear()
        try:
            with np.errstate(all="ignore"):  # IEEE semantics: inf and NaN are values, not errors
                return self.interpreter.call_op(f.sym_name.data, tuple(args))
        except (InterpreterError, InterpretationError) as e:
            raise self.running.located(e) from None
        except MemoryError:  # numpy could not allocate a block: the machine's limit, not a bug
            raise self.running.located(
                InterpreterError(
                    "out of memory: the interpreter holds every rank's blocks in this process "
                    "(run it on a smaller mesh with --mesh: global shapes stay the same)"
                )
            ) from None
        except Exception as e:  # a plugin's error: at the op; ccopt's defect: whole, naming it
            from ccopt.passes import plugin_error

            from_plugin = plugin_error(e)
            if from_plugin is not None:
                raise self.running.located(from_plugin) from None
            self.running.note_op(e)
            raise
