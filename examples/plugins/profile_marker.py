"""A ccopt plugin: a tiny `prof` dialect, two passes and the dialect's semantics.

`prof.marker "label" %x` marks a value for a profiler and passes it through unchanged (a backend
could time the code between markers). `prof-mark-collectives` follows every collective's result
with a marker named after the collective (`prof-mark-collectives{only=all_reduce,all_gather}`:
those collectives only; an option, like a built-in pass's, is a dataclass field declared with
`ccopt.passes.option`, which `ccopt --help` shows); `prof-strip-markers` removes them again.
Because the plugin also registers interpreter functions for `prof.marker`, `ccopt-run` runs
marked programs and `--check-pipeline` proves that marking changes no result:

    ccopt --load-plugin examples/plugins/profile_marker.py examples/megatron_mlp.mlir -p prof-mark-collectives
    ccopt-run --load-plugin examples/plugins/profile_marker.py examples/megatron_mlp.mlir --check-pipeline prof-mark-collectives
"""

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import Pure

from ccopt.dialects import register_dialect
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.interpreters import register_interpreter_functions
from ccopt.passes import option, register_pass

# --- the dialect ---------------------------------------------------------------------------


@irdl_op_definition
class MarkerOp(IRDLOperation):
    """A profiling mark on a distributed tensor; its result is its operand."""

    name = "prof.marker"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    label = prop_def(StringAttr)
    input = operand_def(T)
    output = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$label $input attr-dict `:` type($input)"

    def __init__(self, label: str, value: SSAValue):
        super().__init__(
            operands=[value], result_types=[value.type], properties={"label": StringAttr(label)}
        )


Prof = Dialect("prof", [MarkerOp])
register_dialect("prof", lambda: Prof)


# --- its semantics (what ccopt-run and check_pipeline execute) ------------------------------


@register_interpreter_functions
@register_impls
class ProfFunctions(InterpreterFunctions):
    @impl(MarkerOp)
    def run_marker(
        self, interpreter: Interpreter, op: MarkerOp, args: PythonValues
    ) -> PythonValues:
        return args  # the operand's value (a DistTensor: one shard per rank), unchanged


# --- the passes ----------------------------------------------------------------------------


def mark(op: Operation, result: SSAValue, rewriter: PatternRewriter) -> None:
    """Insert a marker of `op`'s `result` after `op` and let every other use read the marker."""
    marker = MarkerOp(op.name, result)
    rewriter.insert_op(marker, InsertPoint.after(op))
    rewriter.replace_uses_with_if(result, marker.output, lambda use: use.operation is not marker)


class MarkCollective(RewritePattern):
    """Follow each tensor result of a `coll` op with a marker labelled with the op's name (of the
    ops named in `only`, when it names any)."""

    def __init__(self, only: tuple[str, ...] = ()):
        self.only = {f"coll.{name}" for name in only}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() != "coll" or (self.only and op.name not in self.only):
            return
        for result in op.results:
            marked = any(isinstance(use.operation, MarkerOp) for use in result.uses)
            if isinstance(result.type, DTensorType) and not marked:
                mark(op, result, rewriter)


class StripMarker(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MarkerOp, rewriter: PatternRewriter) -> None:
        rewriter.replace_op(op, [], [op.input])


@register_pass
@dataclass(frozen=True)
class MarkCollectives(ModulePass):
    """Mark the result of every collective with a `prof.marker` named after it."""

    name = "prof-mark-collectives"

    only: tuple[str, ...] = option(
        (), "Mark only these collectives (all_reduce, reduce_scatter, ...); all when empty."
    )

    def __post_init__(self) -> None:
        """A name that is no collective would mark nothing without a word: refuse it when the
        pipeline is read (a ValueError there is reported as a bad pipeline)."""
        from ccopt.dialects.coll import Coll

        known = sorted(o.name.removeprefix("coll.") for o in Coll.operations)
        unknown = [name for name in self.only if name not in known]
        if unknown:
            raise ValueError(
                f"{self.name}: '{unknown[0]}' is not a collective (collectives: {', '.join(known)})"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MarkCollective(self.only)).rewrite_module(op)


@register_pass
@dataclass(frozen=True)
class StripMarkers(ModulePass):
    """Remove every `prof.marker`, using the marked values directly."""

    name = "prof-strip-markers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(StripMarker()).rewrite_module(op)
