"""`split-all-reduce`: all_reduce -> reduce_scatter + all_gather.

Same bytes on the wire (a ring all-reduce *is* a reduce-scatter then an all-gather), but the value
between the two is split, so computation moved there (reorder-elementwise) runs on 1/p of it:

```mlir
%r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<1030xf32, @m[P(sum)]> -> !dtensor.tensor<1030xf32, @m[R]>
// becomes
%s = coll.reduce_scatter sum %g over [dp] dim 0 : ... -> !dtensor.tensor<1030xf32, @m[S(0)]>
%r = coll.all_gather %s over [dp] : ... -> !dtensor.tensor<1030xf32, @m[R]>
```
Options: `dim` (the scatter dimension; default the first one the mesh allows), `tags`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpWarning
from ccopt.dialects import coll
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType
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


def split(
    op: coll.AllReduceOp, dim: int | None
) -> tuple[coll.ReduceScatterOp, coll.AllGatherOp] | str:
    """The reduce_scatter + all_gather pair replacing `op`, or why there is none."""
    t = op.input.type
    assert isinstance(t, DTensorType)
    mesh = mesh_of(op)
    candidates = [dim] if dim is not None else list(range(t.rank))
    if not candidates:
        return "a rank-0 value has no dimension to scatter"
    reasons = []
    algorithm = _algorithm(op)
    for d in candidates:
        try:
            rs = coll.ReduceScatterOp(
                op.input, mesh, op.axes, d, op.kind.data, algorithm, _chunks(op)
            )
            ag = coll.AllGatherOp(rs.result, mesh, op.axes, algorithm, _chunks(op))
        except VerifyException as e:
            reasons.append((d, str(e)))
            continue
        derive(rs, op, "rs")
        derive(ag, op, "ag")
        return rs, ag
    if dim is not None:
        return f"dimension {dim} cannot be scattered ({reasons[0][1]})"
    return (
        "no dimension can be scattered ("
        + "; ".join(f"dimension {d}: {e}" for d, e in reasons)
        + ")"
    )


def _algorithm(op: coll.AllReduceOp) -> str | None:
    """The all-reduce's hint for both halves, where they take it. A tree all-reduce (reduce up,
    broadcast down) has no halves of its kind: they get no hint, and a warning says so."""
    if op.algorithm is None:
        return None
    hint = op.algorithm.data
    if coll.takes_algorithm(coll.ReduceScatterOp.name, hint) and coll.takes_algorithm(
        coll.AllGatherOp.name, hint
    ):
        return hint.value
    warnings.warn(
        OpWarning(
            op,
            f"its {hint.value} algorithm has no reduce-scatter and all-gather of its kind: "
            "the halves are left to lower-collectives and the backend to choose",
        ),
        stacklevel=2,
    )
    return None


def _chunks(op: coll.CollectiveOp) -> int | None:
    return None if op.chunks is None else op.chunks.value.data


@dataclass
class SplitPattern(RewritePattern):
    dim: int | None
    tags: tuple[str, ...]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coll.AllReduceOp, rewriter: PatternRewriter) -> None:
        if not is_selected(op, self.tags):
            return
        bound = op.attributes.get(ALGORITHM_ATTRIBUTE)
        if bound is not None:  # (its halves would lose the algorithm, left unreferenced)
            reason = f"it runs {bound} (lower-collectives); split it before lowering"
            refuse_if_selected(op, self.tags, f"cannot split this all_reduce: {reason}")
            warnings.warn(OpWarning(op, f"not split: {reason}"), stacklevel=2)
            return
        pair = split(op, self.dim)
        if isinstance(pair, str):
            refuse_if_selected(op, self.tags, f"cannot split this all_reduce: {pair}")
            if self.dim is not None:  # (a dimension asked for by name: say why it was not)
                warnings.warn(
                    OpWarning(op, f"not split along dim={self.dim}: {pair}"), stacklevel=2
                )
            return
        rs, ag = pair
        rewriter.replace(op, [rs, ag], [ag.result])
        release(op)  # (else a reference cycle that only a full collection frees)


@dataclass(frozen=True)
class SplitAllReduce(ModulePass):
    """Split all_reduce into reduce_scatter + all_gather (so computation can run on slices)."""

    name = "split-all-reduce"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    dim: int | None = option(
        None, "Tensor dimension to scatter; default: the first one the mesh allows."
    )

    tags: tuple[str, ...] = option(
        (),
        "Only split all_reduce ops with one of these `tag` attributes (then refusals are errors).",
    )

    def __post_init__(self) -> None:
        if self.dim is not None and self.dim < 0:
            raise ValueError(f"split-all-reduce: dim must be >= 0, got {self.dim}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "all_reduce ops")
        require_tagged(op, self.tags, self.name, (coll.AllReduceOp,))
        if not rewrite_each(op, coll.AllReduceOp, SplitPattern(self.dim, self.tags)):
            mark_unchanged(op)
