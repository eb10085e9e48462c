"""Result types of dtensor ops: shapes by numpy rules, placements by per-axis signatures.

Every op's builder and verifier call the same function here, so a program that verifies is exactly
a program whose types a builder would have produced. Placements are inferred one mesh axis at a
time (SBP signatures compose over axes). A rule that fails raises `InferenceError`, which names the
offending operand; the op's verifier adds the mesh axis name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects.dtensor_type import (
    ELEMENT_TYPES,
    DTensorType,
    PartialAttr,
    Placement,
    R,
    ReductionKind,
    ReplicatedAttr,
    SplitAttr,
    V,
    VaryingAttr,
    format_placements,
    is_bool,
    is_float,
)


class InferenceError(VerifyException):
    """A type or placement that no signature of the op accepts."""

    def __init__(self, message: str, axis: int | None = None):
        super().__init__(message)
        self.message = message
        self.axis = axis

    def located(self, axis_names: Sequence[str] | None) -> str:
        if self.axis is None:
            return self.message
        if axis_names is not None and self.axis < len(axis_names):
            return f"on mesh axis '{axis_names[self.axis]}': {self.message}"
        return f"on mesh axis #{self.axis}: {self.message}"


PartialRule = Callable[[Sequence[Placement]], Placement]
"""Given the per-axis placements of all operands (each R or P), the result's, or raise."""


def _fmt_shape(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def check_same_mesh(types: Sequence[DTensorType]) -> None:
    first = types[0]
    for i, t in enumerate(types[1:], 1):
        if t.mesh != first.mesh:
            raise InferenceError(
                f"operand #{i} is on mesh @{t.mesh_name} but operand #0 is on @{first.mesh_name}"
            )
        if len(t.placement_list) != len(first.placement_list):
            raise InferenceError(
                f"operand #{i} has {len(t.placement_list)} placements but operand #0 has "
                f"{len(first.placement_list)}"
            )


def check_same_element_type(types: Sequence[DTensorType], first_index: int = 0) -> Attribute:
    element = types[0].element_type
    for i, t in enumerate(types[1:], first_index + 1):
        if t.element_type != element:
            raise InferenceError(
                f"operand #{i} has element type {t.element_type} but operand #{first_index} "
                f"has {element}"
            )
    return element


def require_float(t: DTensorType, what: str, index: int = 0) -> None:
    if not is_float(t.element_type):
        raise InferenceError(
            f"{what} needs a floating-point operand, operand #{index} is {t.element_type}"
        )


def require_numeric(t: DTensorType, what: str, index: int = 0) -> None:
    if is_bool(t.element_type):
        raise InferenceError(f"{what} is not defined on i1 operand #{index}")


def broadcast_shapes(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for i, shape in enumerate(shapes):
        offset = rank - len(shape)
        for d, size in enumerate(shape):
            cur = out[offset + d]
            if size == cur or size == 1:
                continue
            if cur == 1:
                out[offset + d] = size
                continue
            raise InferenceError(
                f"operand #{i} of shape {_fmt_shape(shape)} does not broadcast with shape "
                f"{_fmt_shape(out)}"
            )
    return tuple(out)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """`shape` broadcasts (numpy rules) to exactly `target`."""
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(s in (1, target[offset + d]) for d, s in enumerate(shape))


# --- elementwise ---------------------------------------------------------------------------


def _partials_only(op: str, kinds: dict[ReductionKind, str]) -> PartialRule:
    """Rule for ops linear in every operand under the listed partial kinds (add: P+P->P)."""

    def rule(placements: Sequence[Placement]) -> Placement:
        first = next(p for p in placements if isinstance(p, PartialAttr))
        for i, p in enumerate(placements):
            if not isinstance(p, PartialAttr):
                raise InferenceError(
                    f"'{op}' of a partial value needs every operand partial, operand #{i} is {p.short}"
                )
            if p != first:
                raise InferenceError(
                    f"operand #{i} is {p.short} but another operand is {first.short}"
                )
        if first.partial_kind not in kinds:
            raise InferenceError(f"'{op}' does not distribute over {first.short}")
        return first

    return rule


def _one_partial(op: str, kinds: Sequence[ReductionKind], positions: Sequence[int]) -> PartialRule:
    """Rule for ops linear in one operand with the others replicated (mul: P*R->P)."""

    def rule(placements: Sequence[Placement]) -> Placement:
        partial = [i for i, p in enumerate(placements) if isinstance(p, PartialAttr)]
        if len(partial) != 1:
            raise InferenceError(
                f"'{op}' is linear in one operand only: operands #{partial[0]} and #{partial[1]} "
                "cannot both be partial; reduce one of them first"
            )
        (i,) = partial
        p = placements[i]
        assert isinstance(p, PartialAttr)
        if i not in positions or p.partial_kind not in kinds:
            raise InferenceError(f"'{op}' does not distribute over {p.short} in operand #{i}")
        return p

    return rule


def _monotone_partial(op: str, kind: ReductionKind) -> PartialRule:
    """Rule for max/min: max(P(max), R) = P(max) since max distributes over max."""

    def rule(placements: Sequence[Placement]) -> Placement:
        for i, p in enumerate(placements):
            if isinstance(p, PartialAttr) and p.partial_kind != kind:
                raise InferenceError(f"'{op}' does not distribute over {p.short} in operand #{i}")
        return PartialAttr(kind)

    return rule


def _no_partial(op: str) -> PartialRule:
    def rule(placements: Sequence[Placement]) -> Placement:
        i, p = next((i, p) for i, p in enumerate(placements) if isinstance(p, PartialAttr))
        raise InferenceError(
            f"'{op}' is not linear: operand #{i} is {p.short}; all-reduce it before applying '{op}'"
        )

    return rule


def _select_partial(placements: Sequence[Placement]) -> Placement:
    """select(c, a, b) picks elementwise, so it commutes with any reduction of a and b."""
    cond, a, b = placements
    if isinstance(cond, PartialAttr):
        raise InferenceError(f"the condition (operand #0) of 'select' cannot be {cond.short}")
    if a != b:
        raise InferenceError(
            f"'select' of partial values needs operands #1 and #2 equally partial, got "
            f"{a.short} and {b.short}"
        )
    return a


SUM, MAX, MIN, PROD = ReductionKind.SUM, ReductionKind.MAX, ReductionKind.MIN, ReductionKind.PROD

PARTIAL_RULES: dict[str, PartialRule] = {
    "add": _partials_only("add", {SUM: "sum"}),
    "sub": _partials_only("sub", {SUM: "sum"}),
    "mul": _one_partial("mul", (SUM,), (0, 1)),
    "div": _one_partial("div", (SUM,), (0,)),
    "max": _monotone_partial("max", MAX),
    "min": _monotone_partial("min", MIN),
    "select": _select_partial,
    "neg": _partials_only("neg", {SUM: "sum"}),
    "scale": _partials_only("scale", {SUM: "sum"}),
    "dropout": _partials_only("dropout", {SUM: "sum"}),
    "convert": _partials_only("convert", {SUM: "sum"}),
}


TRUNCATING = {"scale", "div"}
"""Ops that round their result on integers: trunc(a/2) + trunc(b/2) != trunc((a+b)/2), so on
integer tensors they do not distribute over partial sums."""


def partial_rule(op: str, element_type: Attribute | None = None) -> PartialRule:
    if op in TRUNCATING and element_type is not None and not is_float(element_type):
        return _no_partial(f"{op} of integers")
    return PARTIAL_RULES.get(op) or _no_partial(op)


def _elementwise_axis(
    op: str,
    axis: int,
    types: Sequence[DTensorType],
    out_shape: Sequence[int],
) -> Placement:
    out_rank = len(out_shape)
    placements = [t.placement_list[axis] for t in types]

    if any(isinstance(p, VaryingAttr) for p in placements):
        for i, p in enumerate(placements):
            if not isinstance(p, VaryingAttr | ReplicatedAttr):
                raise InferenceError(
                    f"operand #{i} is {p.short} but another operand is V (varying)", axis
                )
        return V

    split: tuple[int, int] | None = None  # (operand, output dim)
    for i, (t, p) in enumerate(zip(types, placements, strict=True)):
        if not isinstance(p, SplitAttr):
            continue
        d = p.split_dim + out_rank - t.rank
        if t.get_shape()[p.split_dim] != out_shape[d]:
            raise InferenceError(f"operand #{i} is {p.short} along a dimension it broadcasts", axis)
        if split is not None and split[1] != d:
            raise InferenceError(
                f"operand #{i} is split along result dimension {d} but operand #{split[0]} "
                f"along result dimension {split[1]}; re-split one of them with coll.all_to_all",
                axis,
            )
        split = (i, d)

    if split is not None:
        src, d = split
        for i, (t, p) in enumerate(zip(types, placements, strict=True)):
            if isinstance(p, PartialAttr):
                raise InferenceError(
                    f"operand #{i} is {p.short} but operand #{src} is split; reduce-scatter "
                    "it first",
                    axis,
                )
            if isinstance(p, ReplicatedAttr):
                own = d - (out_rank - t.rank)
                if own >= 0 and t.get_shape()[own] != 1:
                    raise InferenceError(
                        f"operand #{i} is R but operand #{src} is S({types[src].placement_list[axis].split_dim}); "
                        f"slice operand #{i} with coll.slice first",
                        axis,
                    )
        return SplitAttr(d)

    if any(isinstance(p, PartialAttr) for p in placements):
        try:
            return partial_rule(op, types[0].element_type)(placements)
        except InferenceError as e:
            raise InferenceError(e.message, axis) from None
    return R


def infer_elementwise(
    op: str,
    types: Sequence[DTensorType],
    element_type: Attribute | None = None,
) -> DTensorType:
    """Numpy broadcasting of shapes; per axis, the placement signature of an elementwise op.
    Remembered for the last few thousand signatures (`_infer_elementwise`): every op built or
    verified infers its type, and a program repeats the same few signatures in every layer
    (types are uniqued and hash at once; a refusal is not remembered, it is raised anew)."""
    return _infer_elementwise(op, tuple(types), element_type)


@lru_cache(maxsize=4096)
def _infer_elementwise(
    op: str,
    types: tuple[DTensorType, ...],
    element_type: Attribute | None,
) -> DTensorType:
    check_same_mesh(types)
    out_shape = broadcast_shapes([t.get_shape() for t in types])
    placements = [
        _elementwise_axis(op, a, types, out_shape) for a in range(len(types[0].placement_list))
    ]
    return DTensorType(
        out_shape,
        element_type if element_type is not None else types[0].element_type,
        types[0].mesh,
        placements,
    )


# --- matmul --------------------------------------------------------------------------------


def infer_matmul(
    lhs: DTensorType, rhs: DTensorType, transpose_lhs: bool, transpose_rhs: bool
) -> DTensorType:
    """`lhs[..., m, k] @ rhs[..., k, n]`; a rank-2 rhs broadcasts over the batch dims of lhs."""
    check_same_mesh([lhs, rhs])
    check_same_element_type([lhs, rhs])
    require_numeric(lhs, "matmul")
    if lhs.rank < 2 or rhs.rank < 2:
        raise InferenceError(
            f"matmul needs operands of rank >= 2, got {_fmt_shape(lhs.get_shape())} and "
            f"{_fmt_shape(rhs.get_shape())}"
        )
    ls, rs = lhs.get_shape(), rhs.get_shape()
    batch = ls[:-2]
    if rhs.rank != 2 and rs[:-2] != batch:
        raise InferenceError(
            f"operand #1 has batch dimensions {_fmt_shape(rs[:-2])} but operand #0 has "
            f"{_fmt_shape(batch) if batch else 'none'}; a rank-2 operand #1 broadcasts"
        )
    lm, lk = (lhs.rank - 1, lhs.rank - 2) if transpose_lhs else (lhs.rank - 2, lhs.rank - 1)
    rk, rn = (rhs.rank - 1, rhs.rank - 2) if transpose_rhs else (rhs.rank - 2, rhs.rank - 1)
    if ls[lk] != rs[rk]:
        raise InferenceError(
            f"contraction sizes differ: operand #0 has {ls[lk]} (dim {lk}), operand #1 has "
            f"{rs[rk]} (dim {rk})"
        )
    out_shape = (*batch, ls[lm], rs[rn])
    dims = _MatmulDims(len(batch), lm, lk, rk, rn, rhs.rank == 2)
    placements = [
        _matmul_axis(a, lhs.placement_list[a], rhs.placement_list[a], dims)
        for a in range(len(lhs.placement_list))
    ]
    return DTensorType(out_shape, lhs.element_type, lhs.mesh, placements)


class _MatmulDims:
    def __init__(self, nbatch: int, lm: int, lk: int, rk: int, rn: int, rhs_broadcast: bool):
        self.nbatch, self.lm, self.lk, self.rk, self.rn = nbatch, lm, lk, rk, rn
        self.rhs_broadcast = rhs_broadcast


MATMUL_SIGNATURES = (
    "S(m) x R -> S(m), R x S(n) -> S(n), S(k) x S(k) -> P(sum), S(b) x S(b) -> S(b), "
    "P(sum) x R -> P(sum), R x P(sum) -> P(sum), R x R -> R, V x V|R -> V"
)


def _matmul_axis(axis: int, pl: Placement, pr: Placement, d: _MatmulDims) -> Placement:
    def fail() -> InferenceError:
        return InferenceError(
            f"matmul has no signature for operand #0 {pl.short} x operand #1 {pr.short} "
            f"(legal: {MATMUL_SIGNATURES})",
            axis,
        )

    if isinstance(pl, VaryingAttr) or isinstance(pr, VaryingAttr):
        if isinstance(pl, VaryingAttr | ReplicatedAttr) and isinstance(
            pr, VaryingAttr | ReplicatedAttr
        ):
            return V
        raise fail()
    if isinstance(pl, ReplicatedAttr) and isinstance(pr, ReplicatedAttr):
        return R
    if isinstance(pl, PartialAttr) or isinstance(pr, PartialAttr):
        other = pr if isinstance(pl, PartialAttr) else pl
        partial = pl if isinstance(pl, PartialAttr) else pr
        if partial.partial_kind == ReductionKind.SUM and isinstance(other, ReplicatedAttr):
            return partial
        raise fail()
    ld, rd = pl.split_dim, pr.split_dim
    if ld is not None and ld < d.nbatch:
        if d.rhs_broadcast and isinstance(pr, ReplicatedAttr):
            return SplitAttr(ld)
        if rd == ld and not d.rhs_broadcast:
            return SplitAttr(ld)
        raise fail()
    if ld == d.lm and isinstance(pr, ReplicatedAttr):
        return SplitAttr(d.nbatch)
    if rd == d.rn and isinstance(pl, ReplicatedAttr):
        return SplitAttr(d.nbatch + 1)
    if ld == d.lk and rd == d.rk:
        return PartialAttr(ReductionKind.SUM)
    raise fail()


# --- reductions and normalizations ----------------------------------------------------------

REDUCE_PARTIAL = {
    "sum": ReductionKind.SUM,
    "mean": ReductionKind.SUM,
    "max": ReductionKind.MAX,
    "min": ReductionKind.MIN,
    "prod": ReductionKind.PROD,
}


def _normalize_dims(dims: Sequence[int], rank: int, what: str) -> tuple[int, ...]:
    out: list[int] = []
    for d in dims:
        if not -rank <= d < rank:
            raise InferenceError(f"{what}: dimension {d} is out of range for rank {rank}")
        nd = d % rank if rank else d
        if nd in out:
            raise InferenceError(f"{what}: dimension {d} is listed twice")
        out.append(nd)
    return tuple(sorted(out))


def infer_reduce(t: DTensorType, kind: str, dims: Sequence[int], keepdim: bool) -> DTensorType:
    """Reducing over a split dimension leaves a partial result (mean divides by the global
    count, so it is P(sum) too)."""
    if kind != "max" and kind != "min":
        require_numeric(t, f"reduce {kind}")
    dims = _normalize_dims(dims, t.rank, f"reduce {kind}")
    shape = t.get_shape()
    out_shape = [1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims]
    new_index = {}
    for d in range(t.rank):
        if d not in dims or keepdim:
            new_index[d] = len(new_index)
    truncates = kind == "mean" and not is_float(t.element_type)
    placements: list[Placement] = []
    for a, p in enumerate(t.placement_list):
        if truncates and (isinstance(p, PartialAttr) or p.split_dim in dims):
            raise InferenceError(
                f"an integer mean truncates, so it cannot be split into partial means ({p.short})",
                a,
            )
        if isinstance(p, SplitAttr):
            placements.append(
                PartialAttr(REDUCE_PARTIAL[kind])
                if p.split_dim in dims
                else SplitAttr(new_index[p.split_dim])
            )
        elif isinstance(p, PartialAttr):
            if p.partial_kind != REDUCE_PARTIAL[kind]:
                raise InferenceError(f"reduce {kind} does not distribute over {p.short}", a)
            placements.append(p)
        else:
            placements.append(p)
    return DTensorType(out_shape, t.element_type, t.mesh, placements)


def infer_norm(t: DTensorType) -> DTensorType:
    require_float(t, "norm")
    for a, p in enumerate(t.placement_list):
        if isinstance(p, SplitAttr):
            raise InferenceError(
                f"the global norm of a tensor split along dimension {p.split_dim} needs a "
                "cross-rank reduction: square it, reduce sum (P(sum)), coll.all_reduce, then sqrt",
                a,
            )
        if isinstance(p, PartialAttr):
            raise InferenceError(f"the norm is not linear: operand #0 is {p.short}", a)
    return DTensorType((), t.element_type, t.mesh, t.placement_list)


def require_unsplit_dim(t: DTensorType, dim: int, what: str) -> None:
    for a, p in enumerate(t.placement_list):
        if p.split_dim == dim:
            raise InferenceError(
                f"{what} works along dimension {dim}, which operand #0 splits; all-gather it first",
                a,
            )
        if isinstance(p, PartialAttr):
            raise InferenceError(f"{what} is not linear: operand #0 is {p.short}", a)


def infer_softmax(t: DTensorType, dim: int) -> DTensorType:
    require_float(t, "softmax")
    (dim,) = _normalize_dims([dim], t.rank, "softmax")
    require_unsplit_dim(t, dim, "softmax")
    return t


def infer_layernorm(x: DTensorType, params: Sequence[DTensorType]) -> DTensorType:
    """Normalizes over the last dimension; weight and bias have shape [last]."""
    require_float(x, "layernorm")
    if x.rank < 1:
        raise InferenceError("layernorm needs an operand of rank >= 1")
    require_unsplit_dim(x, x.rank - 1, "layernorm")
    check_same_mesh([x, *params])
    check_same_element_type([x, *params])
    for i, p in enumerate(params, 1):
        if p.get_shape() != x.get_shape()[-1:]:
            raise InferenceError(
                f"operand #{i} must have shape {x.get_shape()[-1]}, got {_fmt_shape(p.get_shape())}"
            )
        for a, (xp, pp) in enumerate(zip(x.placement_list, p.placement_list, strict=True)):
            if not isinstance(pp, ReplicatedAttr) and not (
                isinstance(pp, VaryingAttr) and isinstance(xp, VaryingAttr)
            ):
                raise InferenceError(f"operand #{i} must be R, got {pp.short}", a)
    return x


# --- data movement --------------------------------------------------------------------------


def infer_slice(t: DTensorType, offsets: Sequence[int], sizes: Sequence[int]) -> DTensorType:
    shape = t.get_shape()
    if len(offsets) != t.rank or len(sizes) != t.rank:
        raise InferenceError(
            f"slice needs {t.rank} offsets and sizes, got {len(offsets)} and {len(sizes)}"
        )
    for d, (o, s, full) in enumerate(zip(offsets, sizes, shape, strict=True)):
        if o < 0 or s < 0 or o + s > full:
            raise InferenceError(
                f"slice [{o}, {o + s}) is out of bounds for dimension {d} of size {full}"
            )
    for a, p in enumerate(t.placement_list):
        d = p.split_dim
        if d is not None and (offsets[d] != 0 or sizes[d] != shape[d]):
            raise InferenceError(
                f"slice cuts dimension {d}, which operand #0 splits; all-gather it first", a
            )
    return t.with_shape(sizes)


def infer_concat(types: Sequence[DTensorType], dim: int) -> DTensorType:
    if not types:
        raise InferenceError("concat needs at least one operand")
    check_same_mesh(types)
    check_same_element_type(types)
    first = types[0]
    (dim,) = _normalize_dims([dim], first.rank, "concat")
    for i, t in enumerate(types[1:], 1):
        if t.rank != first.rank or any(
            a != b
            for d, (a, b) in enumerate(zip(t.get_shape(), first.get_shape(), strict=True))
            if d != dim
        ):
            raise InferenceError(
                f"operand #{i} of shape {_fmt_shape(t.get_shape())} does not concatenate with "
                f"{_fmt_shape(first.get_shape())} along dimension {dim}"
            )
        if t.placements != first.placements:
            raise InferenceError(
                f"operand #{i} is {format_placements(t.placement_list)} but operand #0 is "
                f"{format_placements(first.placement_list)}"
            )
    for a, p in enumerate(first.placement_list):
        if p.split_dim == dim:
            raise InferenceError(f"concat along dimension {dim}, which the operands split", a)
    shape = list(first.get_shape())
    shape[dim] = sum(t.get_shape()[dim] for t in types)
    return first.with_shape(shape)


def infer_transpose(t: DTensorType, perm: Sequence[int]) -> DTensorType:
    if sorted(perm) != list(range(t.rank)):
        raise InferenceError(
            f"permutation {list(perm)} is not a permutation of {t.rank} dimensions"
        )
    shape = t.get_shape()
    placements = [
        SplitAttr(list(perm).index(p.split_dim)) if p.split_dim is not None else p
        for p in t.placement_list
    ]
    return DTensorType([shape[i] for i in perm], t.element_type, t.mesh, placements)


def infer_reshape(
    t: DTensorType, shape: Sequence[int], axis_sizes: Sequence[int] | None = None
) -> DTensorType:
    """A split dimension survives a reshape when it stays whole with the same number of
    elements before it, or - given the mesh's `axis_sizes` - when it is the leading dimension of
    a group that is factored or merged (heads: [.., h] -> [.., nh, hd] and back) and its leading
    size divides by the ranks that split it: then every rank's block is still one contiguous
    block of whole trailing groups, and a local reshape is the global one."""
    old = t.get_shape()
    if any(d < 0 for d in shape):
        raise InferenceError(f"reshape to negative dimensions {list(shape)}")
    if _product(old) != _product(shape):
        raise InferenceError(
            f"reshape from {_fmt_shape(old)} to {_fmt_shape(shape)} changes the element count"
        )
    placements: list[Placement] = []
    for a, p in enumerate(t.placement_list):
        d = p.split_dim
        if d is None:
            placements.append(p)
            continue
        target = _reshaped_split(t, shape, d, axis_sizes)
        if target is None:
            raise InferenceError(
                f"reshape to {_fmt_shape(shape)} breaks dimension {d}, which operand #0 splits", a
            )
        placements.append(SplitAttr(target))
    return DTensorType(shape, t.element_type, t.mesh, placements)


def _reshaped_split(
    t: DTensorType, shape: Sequence[int], d: int, axis_sizes: Sequence[int] | None
) -> int | None:
    """The result dimension that split dimension `d` becomes, or None if the blocks break."""
    old = t.get_shape()
    before = _product(old[:d])
    starts = [nd for nd in range(len(shape)) if _product(shape[:nd]) == before]
    for nd in starts:
        if nd < len(shape) and shape[nd] == old[d]:
            return nd
    if axis_sizes is None or len(axis_sizes) != len(t.placement_list):
        return None
    splitting = zip(axis_sizes, t.placement_list, strict=True)
    ranks = _product([s for s, q in splitting if q.split_dim == d])
    for nd in starts:
        if nd >= len(shape) or shape[nd] == 0 or old[d] == 0:
            continue
        if shape[nd] == 1 != old[d]:
            continue  # (a size-1 dimension before the group holds no split: the next start)
        if old[d] % shape[nd] == 0 and _group_ends(shape, nd, old[d]) and shape[nd] % ranks == 0:
            return nd  # factored: old[d] = shape[nd] * shape[nd + 1] * ...
        if shape[nd] % old[d] == 0 and _group_ends(old, d, shape[nd]) and old[d] % ranks == 0:
            return nd  # merged: shape[nd] = old[d] * old[d + 1] * ...
    return None


def _group_ends(dims: Sequence[int], start: int, size: int) -> bool:
    """`dims[start:]` begins with a run of dimensions whose product is exactly `size`."""
    total = 1
    for s in dims[start:]:
        total *= s
        if total == size:
            return True
        if total > size:
            return False
    return False


def _product(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def infer_cast(t: DTensorType, element_type: Attribute) -> DTensorType:
    if element_type not in ELEMENT_TYPES:
        raise InferenceError(
            f"cannot cast to {element_type}: not a distributed tensor element type"
        )
    for a, p in enumerate(t.placement_list):
        if isinstance(p, PartialAttr):
            raise InferenceError(f"cast rounds, so it does not distribute over {p.short}", a)
    return t.with_element_type(element_type)


def check_materializable(t: DTensorType, what: str) -> None:
    """Constants are global values; a partial placement would not say which rank holds what."""
    for a, p in enumerate(t.placement_list):
        if isinstance(p, PartialAttr):
            raise InferenceError(f"{what} cannot be {p.short}", a)
