"""The reference interpreter: xDSL's interpreter with ccopt's dialects, on N simulated ranks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter

from ccopt.mesh import Mesh

if TYPE_CHECKING:
    from ccopt.interpreters.distributed import DistTensor


class ReferenceInterpreter:
    """Runs functions of a module with func, arith, math, scf and every ccopt dialect, and
    reports which arguments the call updated in place (`dtensor.update`)."""

    def __init__(self, module: ModuleOp, meshes: Mapping[str, Mesh]):
        from xdsl.interpreters.arith import ArithFunctions
        from xdsl.interpreters.builtin import BuiltinFunctions
        from xdsl.interpreters.func import FuncFunctions
        from xdsl.interpreters.math import MathFunctions
        from xdsl.interpreters.scf import ScfFunctions

        from ccopt.interpreters.coll import CollFunctions
        from ccopt.interpreters.dtensor import CallFunctions, DtensorFunctions
        from ccopt.interpreters.kernel import KernelFunctions
        from ccopt.interpreters.sched import SchedFunctions

        self.dtensor = DtensorFunctions(meshes)
        self.kernel = KernelFunctions(self.dtensor)
        self.interpreter = Interpreter(module)
        for functions in (
            BuiltinFunctions(),
            FuncFunctions(),
            ArithFunctions(),
            MathFunctions(),
            ScfFunctions(),
            self.dtensor,
            CollFunctions(),
            SchedFunctions(),
            self.kernel,
        ):
            self.interpreter.register_implementations(functions)
        self.interpreter.register_implementations(
            CallFunctions(module, self.dtensor), override=True
        )

    def call(
        self, f: func.FuncOp, args: Sequence[DistTensor]
    ) -> tuple[tuple[DistTensor, ...], dict[int, DistTensor]]:
        """The function's results and its in-place updates (argument index -> new value)."""
        if "kernel.results" in f.attributes:
            return self.call_kernel_level(f, args)
        self.dtensor.updates.clear()
        with np.errstate(all="ignore"):  # IEEE semantics: inf and NaN are values, not errors
            results = self.interpreter.call_op(f.sym_name.data, tuple(args))
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
        with np.errstate(all="ignore"):
            self.interpreter.call_op(f.sym_name.data, (*args, *outputs))
        updated = f.attributes["kernel.updated"].get_values()  # type: ignore[union-attr]
        return tuple(outputs), {i: args[i] for i in updated}
