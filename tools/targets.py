"""Output targets of `ccopt -t`, each loaded on first use.

* `mlir` - the IR (xDSL's printer, writing tokens straight to the stream);
* `cuda` - the program as one self-contained CUDA C++ file;
* `pybind11` - the Python binding of that program, a separate file;
* `msccl-xml` - an `algo.algorithm` as the MSCCL runtime's XML (`-t msccl-xml{name=ring}` picks
  one where the module holds several);
* `chakra` - Chakra execution traces, one file per rank (`-o DIR/PREFIX` writes PREFIX.<r>.et):
  an algorithm as ASTRA-sim custom-collective traces (`-t 'chakra{size=1048576}'`), or a
  program as a workload (`-t 'chakra{machine=dgx-a100}'`).

`cuda` and `pybind11` lower the result first where it needs it (inline{max-ops=32},
convert-to-kernel, plan-memory: larger callees stay functions), as `--build` and `ccopt.build` do, so all of them emit the same program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


def _mlir() -> type[Target]:
    from io import StringIO

    from xdsl.ir import Attribute
    from xdsl.printer import Printer
    from xdsl.targets.mlir import MLIRTarget

    spelled_types = frozenset({"dtensor.tensor", "kernel.buffer"})  # (by name: no import)
    spellings: dict[int, tuple[Attribute, str]] = {}
    """Each spelled type's text, by the type's identity (types print alike in every module;
    equal types are one object: they are uniqued). The entry keeps the type alive, so its
    identity is not reused while the entry exists; equality would not do as a key (`==`
    merges values that print differently, `IntAttr(True) == IntAttr(1)`)."""

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

        def print_attribute(self, attribute: Attribute) -> None:
            """Distributed tensor and buffer types are most of a lowered module's text and
            a few dozen distinct ones: each is rendered once, then written as it was."""
            entry = spellings.get(id(attribute))
            if entry is not None:
                text = entry[1]
                self._current_column += len(text)
                self.stream.write(text)  # type: ignore[union-attr]  # (no newline in a type)
                return
            if getattr(type(attribute), "name", None) not in spelled_types:
                super().print_attribute(attribute)
                return
            stream, column = self.stream, self._current_column
            self.stream = StringIO()
            try:
                super().print_attribute(attribute)
                text = self.stream.getvalue()
            finally:
                self.stream, self._current_column = stream, column
            if len(spellings) >= 4096:  # (types made per op, never printed again)
                spellings.clear()
            spellings[id(attribute)] = (attribute, text)
            self.print_string(text)

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
    """CUDA C++ with NCCL and cuBLAS calls for the kernel-level function `entry`; `inline`:
    whether lowering inlines small callees first (`ccopt` turns it off where the pipeline ran
    `inline` itself)."""

    name = "cuda"
    entry: str | None = None
    inline: bool = True

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.build import lower
        from ccopt.backends.cuda.emit import emit_cuda

        output.write(_emitted(lambda: emit_cuda(module, lower(module, self.entry, self.inline))))


@dataclass(frozen=True)
class BindingTarget(Target):
    """The pybind11 binding of the program that `-t cuda` emits (the same options)."""

    name = "pybind11"
    entry: str | None = None
    inline: bool = True

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.cuda.build import lower
        from ccopt.backends.cuda.emit import emit_binding

        output.write(_emitted(lambda: emit_binding(module, lower(module, self.entry, self.inline))))


@dataclass(frozen=True)
class MscclXmlTarget(Target):
    """An algorithm of the algo dialect as MSCCL XML."""

    name = "msccl-xml"
    algorithm: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.backends.msccl_xml import write_xml
        from ccopt.diagnostics import CcoptError
        from ccopt.dialects.algo import AlgorithmOp

        found = [op for op in module.walk() if isinstance(op, AlgorithmOp)]
        names = ", ".join(op.sym_name.data for op in found)
        if self.algorithm is not None:
            wanted = self.algorithm.removeprefix("@")
            found = [op for op in found if op.sym_name.data == wanted]
            if not found:
                raise CcoptError(
                    f"-t msccl-xml: the module has no algo.algorithm @{wanted} "
                    + (f"(it has {names})" if names else "(it has none)")
                )
        if len(found) != 1:
            raise CcoptError(
                "-t msccl-xml writes one algo.algorithm; "
                + (
                    f"choose one with -t 'msccl-xml{{algorithm=NAME}}' ({names})"
                    if names
                    else "the module has none"
                )
            )
        import sys

        from ccopt.backends.msccl_xml import runtime_limits
        from ccopt.diagnostics import OpError
        from ccopt.dialects.algo import AlgorithmError

        alg = found[0].algorithm()
        try:
            text = write_xml(alg)
        except AlgorithmError as e:
            raise OpError(found[0].blame(e), f"-t msccl-xml: @{alg.name}: {e}") from None
        for problem in runtime_limits(alg):
            print(f"ccopt: warning: @{alg.name}: {problem}", file=sys.stderr)
        output.write(text)


@dataclass(frozen=True)
class ChakraTarget(Target):
    """Chakra traces of an algorithm (`size`: bytes per rank, `local_mem_bw`: GB/s for COMP
    durations, as ASTRA-sim's system key) or of a program (COMP durations from `machine`).

    The set is written all or nothing and replaces the set under the same prefix: files of
    ranks beyond the new count (PREFIX.<r>.et) are removed, since a reader would take them as
    part of the new set."""

    name = "chakra"
    size: int | None = None  # (defaults: ccopt.backends.chakra, per form)
    local_mem_bw: int | float | None = None
    algorithm: str | None = None
    machine: str | None = None
    entry: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from ccopt.diagnostics import CcoptError

        raise CcoptError("-t chakra writes one file per rank: give -o DIR/PREFIX")

    def write(self, module: ModuleOp, prefix: str) -> str:
        """Write the trace set; returns what `ccopt` prints (one line per file). `-o` naming a
        file of the set (`DIR/PREFIX.0.et`, as ccopt-sim takes it) means its prefix: it wrote
        `PREFIX.0.et.0.et`."""
        from ccopt.backends.chakra import export
        from ccopt.sim.chakra_algo import trace_prefix

        paths = export(module, trace_prefix(prefix) if isinstance(prefix, str) else prefix, self)
        return "".join(f"{p}\n" for p in paths)


def _emitted(make: Callable[[], str]) -> str:
    from ccopt.backends.cuda.scalar import EmitError, OpEmitError
    from ccopt.diagnostics import CcoptError, OpError

    try:
        return make()
    except OpEmitError as e:
        raise OpError(e.op, f"cannot emit CUDA: {e.message}") from None
    except EmitError as e:
        raise CcoptError(f"cannot emit CUDA: {e}") from None


TARGET_HELP = (
    "output: mlir (the IR, default), cuda (the program as one CUDA C++ file with NCCL and "
    "cuBLAS calls), pybind11 (its Python binding), msccl-xml (an algo.algorithm as MSCCL "
    "XML) or chakra (Chakra traces, one file per rank, -o DIR/PREFIX, written all or "
    "nothing and replacing the set there); cuda and pybind11 "
    "first lower the result with inline{max-ops=32},convert-to-kernel,plan-memory "
    "where it is not lowered yet, as --build does"
)

TARGETS: dict[str, Callable[[], type[Target]]] = {
    "mlir": _mlir,
    "cuda": lambda: CudaTarget,
    "pybind11": lambda: BindingTarget,
    "msccl-xml": lambda: MscclXmlTarget,
    "chakra": lambda: ChakraTarget,
}
