"""`sliced-norm`: the norm of a gathered tensor from its slices.

`norm(all_gather(x_s))` moves the whole tensor to every rank to compute one number. The norm is
the square root of a sum, and sums split: each rank squares and sums its block (a partial sum),
one scalar all_reduce adds them, and the square root is taken on the replicated scalar:

```mlir
%n = dtensor.norm %u : !dtensor.tensor<300x11xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
// with %u = coll.all_gather %u_s, becomes
%sq = dtensor.mul %u_s, %u_s : ... -> ...[S(0)]
%ss = dtensor.reduce sum %sq dims [0, 1] : ...[S(0)] -> !dtensor.tensor<f32, @dp[P(sum)]>
%tot = coll.all_reduce sum %ss over [dp] : ... -> !dtensor.tensor<f32, @dp[R]>
%n = dtensor.sqrt %tot : !dtensor.tensor<f32, @dp[R]>
```
This is how LAMB's trust ratio stays global when its tensors are sliced (CoCoNeT computed a
rank-local norm there). The all_gather goes away if nothing else uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp, f32
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType, PartialAttr
from ccopt.passes.common import (
    derive,
    is_selected,
    refuse_if_selected,
    release,
    require_tagged,
    rewrite_each,
    warn_kernel_level,
)
from ccopt.passes.options import option
from ccopt.passes.unchanged import mark_unchanged


@dataclass
class SlicedNormPattern(RewritePattern):
    tags: tuple[str, ...]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: dt.NormOp, rewriter: PatternRewriter) -> None:
        if not is_selected(op, self.tags):
            return
        gather = op.input.owner
        if not isinstance(gather, coll.AllGatherOp):
            refuse_if_selected(op, self.tags, "its operand is not an all_gather: nothing is sliced")
            return
        mesh = mesh_of(op)
        part = gather.input
        t = part.type
        assert isinstance(t, DTensorType)
        ops: list[Operation] = []
        if isinstance(t.element_type, Float16Type | BFloat16Type):
            # dtensor.norm accumulates half precision in f32: so do the partial sums
            widened = dt.CastOp(part, f32)
            ops.append(widened)
            part = widened.result
        square = dt.MulOp(part, part)
        total = dt.ReduceOp("sum", square, list(range(t.rank)))
        partial_axes = [
            mesh.axis_names[a]
            for a, p in enumerate(total.result.type.placement_list)  # type: ignore[union-attr]
            if isinstance(p, PartialAttr)
        ]
        reduced = coll.AllReduceOp(total, mesh, partial_axes, "sum")
        root = dt.SqrtOp(reduced)
        for new, suffix in ((square, "sq"), (total, "sum"), (reduced, "ar"), (root, "sqrt")):
            derive(new, op, suffix)
        ops += [square, total, reduced, root]
        if root.result.type != op.result.type:
            ops.append(dt.CastOp(root, t.element_type))
        rewriter.replace(op, ops, [ops[-1].results[0]])
        release(op)  # (else cyclic garbage: a compiler run collects only young objects)
        if not gather.result.uses:
            rewriter.erase(gather)
            release(gather)


@dataclass(frozen=True)
class SlicedNorm(ModulePass):
    """Compute norms of gathered tensors from their slices: sum of squares, scalar all_reduce, sqrt."""

    name = "sliced-norm"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    tags: tuple[str, ...] = option(
        (), "Only rewrite norms with one of these `tag` attributes (then refusals are errors)."
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "dtensor.norm ops")
        require_tagged(op, self.tags, self.name, (dt.NormOp,))
        if not rewrite_each(op, dt.NormOp, SlicedNormPattern(self.tags)):
            mark_unchanged(op)
