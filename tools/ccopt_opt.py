"""`ccopt`: run pass pipelines on ccopt IR, like `xdsl-opt` / `mlir-opt`.

It is xDSL's opt driver with ccopt's dialects and passes registered (lazily), MLIR-style located
diagnostics instead of tracebacks, a `--help` that lists every pass, and atomic `-o` output.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from ccopt.diagnostics import CcoptError, SourceText, first_line, printing_op_warnings
from ccopt.files import check_writable, input_name, read_text, write_atomic
from ccopt.ir import make_context, parse_module, verify_module
from ccopt.tools import batch_gc, pause_collection, quiet_on_closed_pipe
from ccopt.tools.targets import TARGET_HELP, TARGETS
from ccopt.verifier import forget_verifications

if TYPE_CHECKING:
    from xdsl.passes import ModulePass
    from xdsl.utils.arg_spec import ArgSpec
    from xdsl.utils.target import Target

BUILD_TARGETS = ("cuda", "pybind11")
"""The targets whose output --build compiles."""
ENTRY_TARGETS = (*BUILD_TARGETS, "chakra")
"""The targets that emit one function (and so take --entry)."""

SPLIT_MARKER = "// -----"


def read_msccl_xml(source: SourceText) -> ModuleOp:
    from ccopt.frontend.msccl_xml import read_module

    return read_module(source)


def read_chakra(source: SourceText) -> ModuleOp:
    """An algorithm from the custom-collective trace set `source.name` names (a prefix, or one
    of its files PREFIX.<r>.et)."""
    from ccopt.dialects.algo import AlgorithmOp
    from ccopt.sim.chakra_algo import read_algorithm_traces, trace_prefix

    return ModuleOp([AlgorithmOp(read_algorithm_traces(trace_prefix(source.name)))])


class HelpWithPasses(argparse.Action):
    """`--help` that also lists every pass with its summary and options (from the pass catalog:
    no pass module is imported)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object):
        super().__init__(option_strings, dest, nargs=0, help="show this help and every pass")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        import shutil

        from ccopt.passes import pass_help

        usage = "passes (use as -p 'name{option=value},other'; a list option takes a,b,c):"
        width = shutil.get_terminal_size().columns - 2  # as argparse wraps the options above
        print("\n".join([parser.format_help(), usage, pass_help(width)]))
        parser.exit()


class Version(argparse.Action):
    """`--version`: ccopt's version and the xDSL it runs on (xDSL's own action names only xDSL),
    read from the installed packages' metadata when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object):
        super().__init__(option_strings, dest, nargs=0, help="show ccopt's and xDSL's versions")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from importlib.metadata import version

        print(f"ccopt {version('ccopt')} (xDSL {version('xdsl')})")
        parser.exit()


def load_plugins(argv: Sequence[str]) -> list[str]:
    """Import `--load-plugin X` plugins before anything else reads the registries."""
    from ccopt.passes import load_plugin

    rest: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "--load-plugin":
            spec = next(it, None)
            if spec is None:
                raise CcoptError("--load-plugin needs a .py file or a module name")
            load_plugin(spec)
        elif arg.startswith("--load-plugin="):
            load_plugin(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest


class CcoptMain(xDSLOptMain):
    """xDSL's opt driver, with ccopt's registries and error reporting."""

    def __init__(self, args: Sequence[str] | None = None):
        args = load_plugins(sys.argv[1:] if args is None else args)
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = make_context()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()

        parser = argparse.ArgumentParser(
            prog="ccopt",
            description="Optimize distributed deep-learning programs (ccopt IR) with pass pipelines.",
            add_help=False,
            conflict_handler="resolve",  # ccopt's -v/--version replaces xDSL's
        )
        parser.add_argument("-h", "--help", action=HelpWithPasses)
        parser.add_argument(
            "--build",
            action="store_true",
            help="compile the result (lowered as -t cuda lowers it) into a pybind11 module "
            "with nvcc and print its path",
        )
        parser.add_argument(
            "--entry",
            metavar="NAME",
            help="the function -t cuda, -t pybind11, -t chakra and --build emit (default: the "
            "only public one), as ccopt-run's and ccopt-sim's --entry",
        )
        parser.add_argument(
            "--arch",
            action="append",
            metavar="SM",
            help="GPU architecture for --build (repeatable; default sm_80 and sm_90)",
        )
        parser.add_argument(
            "--load-plugin",
            metavar="PLUGIN",
            help="import a .py file or module that registers passes or dialects (repeatable)",
        )
        self.register_all_arguments(parser)
        parser.add_argument("-v", "--version", action=Version)
        parser.add_argument("-t", "--target", default="mlir", help=TARGET_HELP)
        self.args = parser.parse_args(args=args)
        target = self.target_name()
        if target not in self.available_targets:
            raise CcoptError(
                f"unknown target '{target}' (choose from {', '.join(self.available_targets)})"
            )
        if "{" in self.args.target:
            self.check_target_options()
        self.check_build_and_entry(target)
        if self.args.output_file and target != "chakra":  # (-t chakra: a prefix, checked there)
            check_writable(self.args.output_file)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        self.setup_pipeline()

    def check_build_and_entry(self, target: str) -> None:
        """--build compiles what -t cuda emits, so another target cannot go with it; --entry
        means something only where a function is emitted."""
        if self.args.build and target not in ("mlir", *BUILD_TARGETS):
            raise CcoptError(f"--build compiles what -t cuda emits: -t {target} cannot go with it")
        if self.args.build and self.args.output_file not in (None, "-"):
            raise CcoptError(
                "--build prints the path of the module it built (in $CCOPT_CACHE) and writes no "
                f"-o file: for the source, run -t {target if target != 'mlir' else 'cuda'} -o "
                f"{self.args.output_file} without --build"
            )
        if self.args.arch:
            from ccopt.backends.cuda.build import check_archs

            try:
                check_archs(self.args.arch)
            except CcoptError as e:
                raise CcoptError(f"--{e}") from None
        if self.args.arch and not self.args.build:
            raise CcoptError("--arch: only --build compiles (give --build, or leave --arch out)")
        if self.args.entry is None:
            return
        if not self.args.build and target not in ENTRY_TARGETS:
            raise CcoptError(
                f"--entry: -t {target} emits the whole module (--entry is for -t cuda, "
                "-t pybind11, -t chakra and --build)"
            )
        if "entry" in self.target_options():
            raise CcoptError(f"--entry and -t {self.args.target} both name the entry: give one")

    def target_name(self) -> str:
        return self.args.target.split("{", 1)[0]

    def target_spec(self) -> ArgSpec:
        """`-t`'s target and options, the options checked as a pass's are (`check_options`)."""
        import inspect

        from xdsl.utils.arg_spec import ArgSpec, parse_spec

        from ccopt.passes import readable_spec
        from ccopt.passes.options import check_options

        spec = parse_spec(readable_spec(self.args.target))
        factory = self.available_targets.get(spec.name)
        if factory is None or not spec.parameters or inspect.signature(factory).parameters:
            return spec  # (a factory taking arguments: xDSL checks that target's options)
        return ArgSpec(spec.name, check_options(spec.name, factory(), spec.parameters, False))

    def target_options(self) -> set[str]:
        """The options given to -t, by their field names."""
        return set(self.target_spec().normalize_parameter_names().parameters)

    def emitting(self, target: Target) -> Target:
        """The target with ccopt's own choices: --entry, and no implicit inlining where the
        pipeline ran `inline` itself (its `max-ops` has chosen which calls stay)."""
        import dataclasses

        changes: dict[str, object] = {}
        if self.args.entry is not None:
            changes["entry"] = self.args.entry.removeprefix("@")
        if hasattr(target, "inline") and "inline" not in self.target_options():
            changes["inline"] = not self.pipeline_inlines()
        return dataclasses.replace(target, **changes) if changes else target

    def pipeline_inlines(self) -> bool:
        return any(p.name == "inline" for p in self.pipeline.passes)

    def take_mlir_options(self) -> None:
        """xDSL builds `-t mlir{...}` and then overwrites its options with the printing flags
        (`--print-op-generic`, ...): an option given in `-t` turns its flag on instead."""
        flags = {
            "print_generic_format": "print_op_generic",
            "print_properties_as_attributes": "print_no_properties",
            "print_debuginfo": "print_debuginfo",
            "syntax_highlight": "syntax_highlight",
        }
        given = self.target_spec().normalize_parameter_names().parameters
        for option, flag in flags.items():
            if given.get(option) == (True,):
                setattr(self.args, flag, True)

    def check_target_options(self) -> None:
        """`-t cuda{x=1}` is refused before any input is read, as a bad `-p` is (xDSL's own
        check raises a ValueError only once the output is due)."""
        import inspect

        from xdsl.utils.exceptions import ArgSpecParseError

        try:
            spec = self.target_spec()
            factory = self.available_targets[spec.name]
            if not inspect.signature(factory).parameters:
                factory().from_spec(spec)
        except (ArgSpecParseError, ValueError, TypeError) as e:
            from ccopt.passes import spec_hint

            hint = spec_hint(self.args.target, str(e))
            raise CcoptError(
                f"invalid target '{self.args.target}': {first_line(e)}{hint}"
            ) from None

    def register_all_passes(self) -> None:
        from ccopt.passes import PASSES

        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["msccl-xml"] = read_msccl_xml  # (`process` reads it)
        self.available_frontends["chakra"] = read_chakra

    def register_all_targets(self) -> None:
        self.available_targets.update(TARGETS)

    def setup_pipeline(self) -> None:
        from ccopt.passes.pipeline import StepTimes, checked_pipeline

        self.times = StepTimes() if self.args.time_passes else None
        self.pipeline = checked_pipeline(
            self.args.passes,
            verify=not self.args.disable_verify,
            times=self.times,
            between=self.print_between if self.args.print_between_passes else None,
        )
        pause_collection(self.pipeline.passes)

    def print_between(self, previous: ModulePass, module: ModuleOp) -> None:
        """`--print-between-passes`: the IR after every pass but the last, on stdout, as
        xdsl-opt prints it (the result follows as usual)."""
        from xdsl.printer import Printer

        print(f"IR after {previous.name}:")
        Printer(stream=sys.stdout, print_generic_format=self.args.print_op_generic).print_op(module)
        print("\n\n\n")

    def time_step(self, name: str) -> None:
        if self.times is not None:
            self.times.stop(name)

    def read_sources(self) -> list[SourceText]:
        name = input_name(self.args.input_file)
        if self.reads_chakra():
            return [SourceText(name, "")]  # a set of binary files, read by the front end
        text = read_text(self.args.input_file)
        if not self.args.split_input_file:
            return [SourceText(name, text)]
        sources, line = [], 0
        for chunk in text.split(SPLIT_MARKER):
            sources.append(SourceText(name, chunk, line))
            line += chunk.count("\n")
        return sources

    def reads_xml(self) -> bool:
        """MSCCL XML by `-f msccl-xml` or by the input's extension (checked here: importing the
        reader would cost every start-up)."""
        chosen, name = self.args.frontend, self.args.input_file
        return chosen == "msccl-xml" or (chosen is None and (name or "").lower().endswith(".xml"))

    def reads_chakra(self) -> bool:
        """Chakra traces by `-f chakra DIR/PREFIX` or by a `.et` input."""
        chosen, name = self.args.frontend, self.args.input_file or ""
        return chosen == "chakra" or (chosen is None and name.endswith(".et"))

    def chakra_output(self) -> bool:
        return self.target_name() == "chakra"

    def output_resulting_program(self, prog: ModuleOp) -> str:
        name = self.target_name()
        if name not in ENTRY_TARGETS:
            if name == "mlir":
                self.take_mlir_options()
            return super().output_resulting_program(prog)
        from io import StringIO

        from xdsl.utils.exceptions import ArgSpecParseError

        try:
            target = self.emitting(TARGETS[name]().from_spec(self.target_spec()))
        except (ArgSpecParseError, ValueError) as e:
            raise CcoptError(f"-t {self.args.target}: {first_line(e)}") from None
        if self.chakra_output():
            return target.write(prog, self.args.output_file)  # type: ignore[attr-defined]
        output = StringIO()
        target.emit(self.ctx, prog, output)
        return output.getvalue()

    def process(self, source: SourceText) -> str:
        if self.times is not None:
            self.times.restart()
        try:
            module = self.read_module(source)
        except CcoptError as e:
            if not self.args.parsing_diagnostics:
                raise
            return e.render(source) + "\n"  # (as xdsl-opt: the diagnostic is the output)
        chunk = (
            f" (the chunk from line {source.line_offset + 1})" if self.args.split_input_file else ""
        )
        self.time_step(f"parse{chunk}")
        if not self.args.disable_verify:
            verify_module(module)
            self.time_step("  verify input")
        try:
            with printing_op_warnings(source):
                self.pipeline.apply(self.ctx, module)
        except CcoptError:
            raise
        except DiagnosticException as e:
            raise CcoptError(first_line(e)) from None
        except Exception as e:
            from ccopt.passes import plugin_error

            from_plugin = plugin_error(e)
            if from_plugin is None:
                raise
            raise from_plugin from None
        if not self.args.disable_verify:
            forget_verifications(module)  # (nothing verifies it again: memory while printing)
        with printing_op_warnings(source):  # (targets lower and emit: their warnings too)
            output = (
                self.build(module) if self.args.build else self.output_resulting_program(module)
            )
        self.time_step("build" if self.args.build else f"output ({self.args.target})")
        return output

    def read_module(self, source: SourceText) -> ModuleOp:
        if self.reads_chakra():
            return read_chakra(source)
        if self.reads_xml():
            return read_msccl_xml(source)
        return parse_module(self.ctx, source, not self.args.no_implicit_module)

    def build(self, module: ModuleOp) -> str:
        """`--build`: the module lowered as its target (or -t cuda) lowers it, compiled with nvcc
        into a pybind11 module; the module's path."""
        from xdsl.utils.arg_spec import parse_spec

        from ccopt.backends.cuda.build import DEFAULT_ARCHS, build

        spec = self.target_spec() if self.target_name() in BUILD_TARGETS else parse_spec("cuda")
        target = self.emitting(TARGETS[spec.name]().from_spec(spec))
        built = build(
            module,
            archs=tuple(self.args.arch or DEFAULT_ARCHS),
            entry=getattr(target, "entry", None),
            inline=getattr(target, "inline", True),
        )
        return f"{built.__file__}\n"

    def run(self) -> int:  # type: ignore[override]
        outputs: list[str] = []
        for index, source in enumerate(self.read_sources()):
            if index and not gc.isenabled():
                gc.collect()  # the previous chunk's module (`pause_collection`)
            try:
                outputs.append(self.process(source))
            except CcoptError as e:
                if not self.args.verify_diagnostics:
                    print(e.render(source), file=sys.stderr)
                    return 1
                outputs.append(e.render(source) + "\n")
        text = f"{SPLIT_MARKER}\n".join(outputs)
        if self.times is not None:
            print(self.times.report(), file=sys.stderr)
        if self.args.output_file and not self.chakra_output():  # (it wrote its files)
            write_atomic(self.args.output_file, text)
        else:
            sys.stdout.write(text)
        return 0


@quiet_on_closed_pipe
@batch_gc
def main(argv: Sequence[str] | None = None) -> int:
    try:
        return CcoptMain(argv).run()
    except CcoptError as e:
        print(f"ccopt: {e.render()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
