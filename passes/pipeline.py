"""Pass pipelines as `ccopt -p`, the Python API and the backends apply them: `ccopt -p` syntax,
every pass followed by what mlir-opt's -verify-each does; a bad pipeline and a refused rewrite
are CcoptErrors."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException

from ccopt.diagnostics import CcoptError, first_line
from ccopt.ir import inherit_locations, make_context, verify_module
from ccopt.passes import parse_pipeline


def after_each_pass(module: ModuleOp, verify: bool = True) -> None:
    """Ops the pass created without a location get one (so diagnostics point at source lines),
    then the module is verified."""
    inherit_locations(module)
    if verify:
        verify_module(module)


def checked_pipeline(pipeline: str, verify: bool = True) -> PassPipeline:
    """The parsed pipeline, with `after_each_pass` after every pass."""

    def after(previous: ModulePass | None, module: ModuleOp, _next: ModulePass | None) -> None:
        if previous is not None:
            after_each_pass(module, verify)

    return parse_pipeline(pipeline, after)


def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """A verified copy of `module` after the pass pipeline (the module itself is untouched)."""
    optimized = module.clone()
    run_pipeline(optimized, pipeline)
    return optimized


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
