"""Pass pipelines as `ccopt -p`, the Python API and the backends apply them: `ccopt -p` syntax,
every pass followed by what mlir-opt's -verify-each does; a bad pipeline and a refused rewrite
are CcoptErrors."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException

from ccopt.collection import batched_collection
from ccopt.diagnostics import CcoptError, OpError, first_line
from ccopt.ir import clone, inherit_locations, make_context, verify_module
from ccopt.passes import parse_pipeline, plugin_error
from ccopt.passes.unchanged import take_unchanged


def after_each_pass(module: ModuleOp, verify: bool = True) -> None:
    """Ops the pass created without a location get one (so diagnostics point at source lines),
    then the module is verified."""
    if verify:
        verify_module(module, locate=True)  # (locations first, in the verifier's walk)
    else:
        inherit_locations(module)


class StepTimes:
    """Wall seconds of each step of a run, in order (parsing, every pass and the checks after
    it, printing), for `ccopt --time-passes`; a step's clock starts where the last one stopped."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []
        self.start = perf_counter()

    def restart(self) -> None:
        self.start = perf_counter()

    def stop(self, name: str) -> None:
        now = perf_counter()
        self.steps.append((name, now - self.start))
        self.start = now

    def report(self) -> str:
        """A table in the spirit of mlir-opt's `-mlir-timing` report."""
        total = sum(seconds for _, seconds in self.steps) or 1.0
        lines = ["===- ccopt execution time report (wall seconds) -===", "   seconds  share  step"]
        for name, seconds in self.steps:
            lines.append(f"{seconds:10.4f} {100 * seconds / total:5.1f}%  {name}")
        lines.append(f"{total:10.4f} 100.0%  total")
        return "\n".join(lines)


def checked_pipeline(
    pipeline: str,
    verify: bool = True,
    times: StepTimes | None = None,
    between: Callable[[ModulePass, ModuleOp], None] | None = None,
) -> PassPipeline:
    """The parsed pipeline, with `after_each_pass` after every pass that changed the module
    (one that marked it unchanged, `mark_unchanged`, leaves the module it was given: verified);
    `times`, when given, gets each pass's time and its checks' time as separate steps;
    `between(pass, module)` sees the checked module after every pass but the last
    (`--print-between-passes`)."""

    def after(previous: ModulePass | None, module: ModuleOp, next_: ModulePass | None) -> None:
        check(previous, module)
        if previous is not None and next_ is not None and between is not None:
            between(previous, module)
            if times is not None:
                times.restart()  # (printing is not the next pass's time)

    def check(previous: ModulePass | None, module: ModuleOp) -> None:
        if previous is None:
            take_unchanged(module)  # (a mark left by a pass applied outside a pipeline)
            if times is not None:
                times.restart()
            return
        if times is not None:
            times.stop(previous.name)
        if take_unchanged(module):
            return  # (as mlir-opt: a pass that preserved everything is not verified again)
        try:
            after_each_pass(module, verify)
        except OpError as e:  # which pass broke the IR: a researcher's new pass, most often
            e.context = f"the IR does not verify after pass '{previous.name}'"
            raise
        if times is not None:
            times.stop(f"  {'verify' if verify else 'locations'} after {previous.name}")

    return parse_pipeline(pipeline, after)


@batched_collection()
def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """A verified copy of `module` after the pass pipeline (the module itself is untouched)."""
    optimized = clone(module)
    run_pipeline(optimized, pipeline)
    return optimized


@batched_collection()
def run_pipeline(module: ModuleOp, pipeline: str) -> None:
    """Apply a pass pipeline to `module` in place, verifying after every pass; bad pipelines
    and refused rewrites are CcoptErrors."""
    passes = checked_pipeline(pipeline)
    try:
        passes.apply(make_context(), module)
    except CcoptError:
        raise
    except DiagnosticException as e:
        raise CcoptError(f"pipeline '{pipeline}' failed: {first_line(e)}") from None
    except Exception as e:
        from_plugin = plugin_error(e)
        if from_plugin is None:
            raise
        raise from_plugin from None
