"""A pass that changed nothing says so, and the pass manager (`ccopt.passes.pipeline`) then
does not verify the module again, as mlir-opt skips its verifier after a pass that preserved
all analyses. Apart from the pipeline (which imports every pass) so that passes can import it."""

from __future__ import annotations

from xdsl.ir import Operation

_UNCHANGED = "_ccopt_unchanged"
"""Where a module notes that the last pass changed nothing in it (`mark_unchanged`)."""


def mark_unchanged(module: Operation) -> None:
    """The pass that ran on `module` changed nothing in it (MLIR's `markAllAnalysesPreserved`):
    the pass manager then skips the verification after it, as mlir-opt's does, since the module
    is the one verified before the pass. Call it only where the pass knows it did nothing - a
    pass that called it and changed the module leaves its changes unverified."""
    module.__dict__[_UNCHANGED] = True


def take_unchanged(module: Operation) -> bool:
    """Whether the pass that just ran marked `module` unchanged (`mark_unchanged`); the mark is
    dropped, so it holds for one pass."""
    return module.__dict__.pop(_UNCHANGED, False)
