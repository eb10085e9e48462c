"""Pass pipelines as the Python API and the backends apply them: `ccopt -p` syntax, the result
verified; a bad pipeline and a refused rewrite are CcoptErrors."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import DiagnosticException

from ccopt.diagnostics import CcoptError, first_line
from ccopt.ir import make_context, verify_module
from ccopt.passes import PASSES


def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """A verified copy of `module` after the pass pipeline (the module itself is untouched)."""
    optimized = module.clone()
    run_pipeline(optimized, pipeline)
    return optimized


def run_pipeline(module: ModuleOp, pipeline: str) -> None:
    """Apply a pass pipeline to `module` in place and verify the result; bad pipelines and
    refused rewrites are CcoptErrors."""
    try:
        passes = PassPipeline.parse_spec(PASSES, pipeline)
    except (ValueError, BaseException) as e:  # xDSL raises ArgSpecParseError, a BaseException
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        raise CcoptError(f"invalid pass pipeline '{pipeline}': {first_line(e)}") from None
    try:
        passes.apply(make_context(), module)
    except CcoptError:
        raise
    except DiagnosticException as e:
        raise CcoptError(f"pipeline '{pipeline}' failed: {first_line(e)}") from None
    verify_module(module)
