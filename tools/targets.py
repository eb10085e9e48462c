"""Output targets of `ccopt -t`, each loaded on first use.

* `mlir` - the IR (xDSL's printer);
* `cuda` - the program as one self-contained CUDA C++ file (kernel level: run convert-to-kernel);
* `pybind11` - the Python binding of that program, a separate file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


def _mlir() -> type[Target]:
    from xdsl.universe import Universe

    return Universe.get_multiverse().all_targets["mlir"]()


@dataclass(frozen=True)
class CudaTarget(Target):
    """CUDA C++ with NCCL and cuBLAS calls for the kernel-level function `entry`."""

    name = "cuda"
    entry: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.emit import emit_cuda

        output.write(_emitted(lambda: emit_cuda(module, self.entry)))


@dataclass(frozen=True)
class BindingTarget(Target):
    """The pybind11 binding of the program that `-t cuda` emits."""

    name = "pybind11"
    entry: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.emit import emit_binding

        output.write(_emitted(lambda: emit_binding(module, self.entry)))


def _emitted(make: Callable[[], str]) -> str:
    from ccopt.backends.cuda.scalar import EmitError
    from ccopt.diagnostics import CcoptError

    try:
        return make()
    except EmitError as e:
        raise CcoptError(f"cannot emit CUDA: {e}") from None


TARGETS: dict[str, Callable[[], type[Target]]] = {
    "mlir": _mlir,
    "cuda": lambda: CudaTarget,
    "pybind11": lambda: BindingTarget,
}
