"""Output targets of `ccopt -t`, each loaded on first use.

* `mlir` - the IR (xDSL's printer, writing tokens straight to the stream);
* `cuda` - the program as one self-contained CUDA C++ file;
* `pybind11` - the Python binding of that program, a separate file.

`cuda` and `pybind11` lower the result first where it needs it (inline, convert-to-kernel,
plan-memory), as `--build` and `ccopt.build` do, so all of them emit the same program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


def _mlir() -> type[Target]:
    from xdsl.printer import Printer
    from xdsl.targets.mlir import MLIRTarget

    class WritingPrinter(Printer):
        """xDSL's printer hands every token to `print(..., file=stream)`; a token without a
        newline (nearly all) is written directly, which makes printing large IR a fifth
        faster. Tokens with newlines keep xDSL's indentation handling."""

        def print_string(self, text: str, *, indent: int | None = None) -> None:
            if "\n" in text:
                super().print_string(text, indent=indent)
                return
            self._current_column += len(text)
            self.stream.write(text)  # type: ignore[union-attr]

    @dataclass(frozen=True)
    class IRTarget(MLIRTarget):
        """xDSL's `mlir` target with the writing printer (the syntax-highlighting printer
        where asked)."""

        def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
            if self.syntax_highlight:
                super().emit(ctx, module, output)
                return
            printer = WritingPrinter(
                stream=output,
                print_generic_format=self.print_generic_format,
                print_properties_as_attributes=self.print_properties_as_attributes,
                print_debuginfo=self.print_debuginfo,
            )
            printer.print_op(module)
            printer.print_metadata(ctx.loaded_dialects)
            print("\n", file=output)

    return IRTarget


@dataclass(frozen=True)
class CudaTarget(Target):
    """CUDA C++ with NCCL and cuBLAS calls for the kernel-level function `entry`."""

    name = "cuda"
    entry: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.build import lower
        from ccopt.backends.cuda.emit import emit_cuda

        output.write(_emitted(lambda: emit_cuda(module, lower(module, self.entry))))


@dataclass(frozen=True)
class BindingTarget(Target):
    """The pybind11 binding of the program that `-t cuda` emits."""

    name = "pybind11"
    entry: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.build import lower
        from ccopt.backends.cuda.emit import emit_binding

        output.write(_emitted(lambda: emit_binding(module, lower(module, self.entry))))


def _emitted(make: Callable[[], str]) -> str:
    from ccopt.backends.cuda.scalar import EmitError
    from ccopt.diagnostics import CcoptError

    try:
        return make()
    except EmitError as e:
        raise CcoptError(f"cannot emit CUDA: {e}") from None


TARGET_HELP = (
    "output: mlir (the IR, default), cuda (the program as one CUDA C++ file with NCCL and "
    "cuBLAS calls) or pybind11 (its Python binding); cuda and pybind11 first lower the result "
    "with inline,convert-to-kernel,plan-memory where it is not lowered yet, as --build does"
)

TARGETS: dict[str, Callable[[], type[Target]]] = {
    "mlir": _mlir,
    "cuda": lambda: CudaTarget,
    "pybind11": lambda: BindingTarget,
}
