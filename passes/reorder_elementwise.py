"""`reorder-elementwise`: move an all_gather below the elementwise ops that consume it.

Elementwise ops commute with slicing, so instead of gathering and then computing on the whole
tensor on every rank, each rank computes on its block and the results are gathered:

```mlir
%w1 = dtensor.sub %w, coll.all_gather(%g_s) ...          // every rank: 1030 elements
// becomes
%w_s = coll.slice %w over [dp] dim 0                      // local, no traffic
%w1_s = dtensor.sub %w_s, %g_s                            // every rank: 1030/p elements
%w1 = coll.all_gather %w1_s over [dp]                     // one all_gather per live-out
```
The region grows greedily through elementwise ops in the same block whose other operands can be
sliced: replicated operands are sliced along the gathered dimension - never along a dimension a
broadcast operand does not have (`b[H]` stays whole when `[B,S,H]` is split along 0) - and values
gathered over the same axes and dimension are used in their split form. Ops along other
dimensions join too, each rank computing on its own rows: a `dtensor.reduce` that keeps the
gathered dimension (a layernorm's mean over the hidden dimension of a sequence-split
activation), and a `dtensor.softmax` or `dtensor.layernorm` along another dimension (Megatron's
sequence-parallel layernorm). A reduction over the gathered dimension reduces each block into a
partial result that an all_reduce completes, where nothing else needs the whole value; it ends
the region. A partial (P) or varying (V) operand, or a softmax along the gathered dimension,
stops the region. Every region value used outside the region gets one all_gather. Then slices move up through
elementwise ops on replicated values whose results are only sliced (`slice(0.9 * m)` becomes
`0.9 * slice(m)`), so optimizer state ends up used only through slices (see slice-state).
Options: `tags` (all_gathers to move; then a consumer that cannot follow is an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue, SSAValues
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects import inference as infer
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import (
    DTensorType,
    PartialAttr,
    ReductionKind,
    ReductionKindAttr,
    ReplicatedAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.mesh import Mesh
from ccopt.passes.common import (
    ProgramOrder,
    Refusal,
    UserWalk,
    copy_name,
    derive,
    derived_tag,
    elementwise_type,
    erase_op,
    insert_before,
    is_elementwise,
    is_selected,
    of_class,
    ops_outside_bodies,
    replace_uses,
    require_tagged,
    set_tag,
    tag_of,
    warn_kernel_level,
)
from ccopt.passes.options import option
from ccopt.verifier import forget_verification


def gathered_dim(ag: coll.AllGatherOp, mesh: Mesh) -> int:
    t = ag.input.type
    assert isinstance(t, DTensorType)
    dim = split_dim(t, ag.group(mesh))
    assert dim is not None
    return dim


def split_dim(t: DTensorType, axes: Sequence[int]) -> int | None:
    """The dimension `t` is split along on the first of `axes` (None if it is not split)."""
    return t.placement_list[axes[0]].split_dim


class RegionBuilder:
    """Slices operands for one all_gather's region; new ops go before the op they replace.

    Every region value has a split form, split over the all_gather's axes along some dimension of
    its own; an op's split operands must agree on one dimension of the op's result (a gathered
    operand of lower rank is broadcast into the result, so its dimension shifts)."""

    def __init__(self, ag: coll.AllGatherOp):
        self.mesh = mesh_of(ag)
        self.ag = ag
        self.group = ag.group(self.mesh)
        self.split: dict[SSAValue, SSAValue] = {ag.result: ag.input}
        self.axes = ag.axes
        self.mesh_attr = ag.result.type.mesh  # type: ignore[union-attr]
        # per op planned, in program order: the op, the slices it needs (built, not inserted),
        # its operands on blocks, its result now and its result on blocks (not yet the op's)
        self.planned: list[tuple[Operation, list[Operation], list[SSAValue], OpResult, OpResult]]
        self.planned = []
        self.other_gathers: dict[coll.AllGatherOp, None] = {}  # ordered set
        # reductions over the gathered dimension: (op, its operand on blocks, its partial
        # result on blocks, the all_reduce kind that completes it); each ends the region
        self.partials: list[tuple[dt.ReduceOp, SSAValue, OpResult, str]] = []

    def split_form(self, value: SSAValue) -> SSAValue | None:
        """`value` on blocks, when the region already has it: a region value, or an all_gather
        over the same axes (its input)."""
        found = self.split.get(value)
        if found is not None:
            return found
        other = value.owner
        if (
            type(other) is coll.AllGatherOp  # (no subclasses: `isinstance` on an ABC is slow)
            and other.axes == self.axes
            and other.result.type.mesh == self.mesh_attr  # type: ignore[union-attr]
        ):
            return other.input
        return None

    def result_dim(
        self, op: Operation, out_shape: tuple[int, ...], pieces: Sequence[SSAValue | None]
    ) -> int:
        """The result dimension the op's split operands (`pieces`: their split forms, None for
        the others) are split along."""
        dims: set[int] = set()
        for v, piece in zip(op._operands, pieces, strict=True):  # pyright: ignore[reportPrivateUsage]
            if piece is None:
                continue
            t: DTensorType = v.type  # type: ignore[assignment]
            own = split_dim(piece.type, self.group)  # type: ignore[arg-type]
            assert own is not None
            dim = own + len(out_shape) - t.rank
            if t.get_shape()[own] != out_shape[dim]:
                raise Refusal(f"operand {_name(v)} is broadcast along its gathered dimension")
            dims.add(dim)
        if len(dims) != 1:
            raise Refusal(f"its operands are gathered along result dimensions {sorted(dims)}")
        return dims.pop()

    def slice_operand(
        self, value: SSAValue, out_shape: tuple[int, ...], dim: int
    ) -> tuple[SSAValue, coll.SliceOp | None]:
        """A replicated operand's form on blocks of result dimension `dim`: itself when it is
        broadcast along `dim` (every block uses all of it), else a coll.slice of it."""
        t: DTensorType = value.type  # type: ignore[assignment]
        if broadcasts_along(t, out_shape, dim):
            return value, None
        for a in self.group:
            p = t.placement_list[a]
            if type(p) is not ReplicatedAttr:
                raise Refusal(
                    f"operand {_name(value)} is {p.short} on mesh axis "
                    f"'{self.mesh.axis_names[a]}' and cannot be sliced"
                )
        own = dim - (len(out_shape) - t.rank)
        try:
            piece = coll.SliceOp(value, self.mesh, self.ag.axes, own)
        except VerifyException as e:
            raise Refusal(f"operand {_name(value)} cannot be sliced: {e}") from None
        name_split(piece.result, value)
        return piece.result, piece

    def try_add(self, op: Operation) -> None:
        """Plan `op` on blocks; raises Refusal with the reason it cannot be (and then leaves no
        new op behind holding uses of existing values)."""
        out_shape = op.results[0].type.get_shape()  # type: ignore[union-attr]
        pieces = [self.split_form(v) for v in op._operands]  # pyright: ignore[reportPrivateUsage]
        dim = self.result_dim(op, out_shape, pieces)
        operands: list[SSAValue] = []
        slices: list[Operation] = []
        try:
            for v, piece in zip(op._operands, pieces, strict=True):  # pyright: ignore[reportPrivateUsage]
                if piece is None:
                    piece, made = self.slice_operand(v, out_shape, dim)
                    slices.extend([made] if made is not None else [])
                operands.append(piece)
            new = OpResult(type_on(op, operands), op, 0)
        except Refusal:
            discard(slices)
            raise
        self.plan(op, slices, operands, new)

    def plan(
        self, op: Operation, slices: list[Operation], operands: list[SSAValue], new: OpResult
    ) -> None:
        """`op` on blocks, computing `new` from `operands` (after `slices`): a region value."""
        name_split(new, op.results[0])
        self.split[op.results[0]] = new
        self.planned.append((op, slices, operands, op.results[0], new))
        self.note_gathers(op)

    def note_gathers(self, op: Operation) -> None:
        """The other all_gathers `op` reads (dropped at the end when nothing reads them)."""
        for v in op._operands:  # pyright: ignore[reportPrivateUsage]
            owner = v.owner
            if type(owner) is coll.AllGatherOp and owner is not self.ag:
                self.other_gathers[owner] = None

    def try_add_reduce(self, op: dt.ReduceOp) -> bool:
        """Plan a reduction of a region value; returns whether the region goes on through it.
        Over dimensions the value is not split along, each rank reduces its block whole along
        them (a mean divides by the same count) and the result stays split along the same
        dimension (a row's layernorm statistics, on its rows). Over the gathered dimension,
        each rank reduces its block into a partial result that an all_reduce completes: the
        reduced values travel instead of the whole tensor (a layernorm's weight gradient, a
        bias gradient), and the region ends there."""
        piece = self.split_form(op.input)
        if piece is None:
            raise Refusal("its operand is not gathered here")
        t: DTensorType = piece.type  # type: ignore[assignment]
        own = split_dim(t, self.group)
        assert own is not None
        try:
            result_type = infer.infer_reduce(
                t, op.kind.data.value, op.dims.get_values(), op.keepdim is not None
            )
        except InferenceError as e:
            raise Refusal(e.located(None)) from None
        new = OpResult(result_type, op, 0)
        if own not in {d % t.rank for d in op.dims.get_values()}:
            self.plan(op, [], [piece], new)
            return True
        kind = self.completion(result_type, op.results[0].type)  # type: ignore[arg-type]
        self.partials.append((op, piece, new, kind))
        self.note_gathers(op)
        return False

    def try_add_along_rows(self, op: Operation) -> None:
        """Plan a softmax or layernorm of a region value along a dimension it is not split
        along: each rank normalizes its own rows (weight and bias stay whole); the result is
        split as its operand."""
        piece = self.split_form(op.operands[0])
        if piece is None:
            raise Refusal("its operand is not gathered here")
        rest = list(op.operands[1:])
        if any(self.split_form(v) is not None for v in rest):
            raise Refusal("its weight or bias is gathered here")
        t: DTensorType = piece.type  # type: ignore[assignment]
        try:
            if type(op) is dt.SoftmaxOp:
                result_type = infer.infer_softmax(t, op.dim.value.data)
            else:
                result_type = infer.infer_layernorm(t, [v.type for v in rest])  # type: ignore[misc]
        except InferenceError:
            raise Refusal("it normalizes along the gathered dimension") from None
        self.plan(op, [], [piece, *rest], OpResult(result_type, op, 0))

    def completion(self, partial: DTensorType, whole: DTensorType) -> str:
        """The reduction kind of the all_reduce over the gather's axes that turns the partial
        result of reducing blocks into the whole one (Refusal when none does)."""
        kinds = {
            p.kind.data.value
            for a, p in enumerate(partial.placement_list)
            if a in self.group and isinstance(p, PartialAttr)
        }
        if len(kinds) != 1:
            raise Refusal("its blocks do not reduce to one partial result")
        (kind,) = kinds
        try:
            props = {"axes": self.axes, "kind": ReductionKindAttr(ReductionKind(kind))}
            done = coll.AllReduceOp.infer(partial, props, self.mesh)
        except InferenceError as e:
            raise Refusal(e.located(None)) from None
        if done != whole:
            raise Refusal("an all_reduce of its partial blocks would not give its result's type")
        return kind


_ALONG_ROWS = (dt.ReduceOp, dt.SoftmaxOp, dt.LayerNormOp)
"""Ops that reduce or normalize along some dimensions: they run on blocks of the others."""

_SPLIT_NAMES: dict[str, str | None] = {}
"""`<name>_s` as xDSL's name setter keeps it (two regular expressions per call), by name."""


def name_split(to: SSAValue, source: SSAValue) -> None:
    """Name `to`, the split form of `source`, `<source's name>_s` (nothing when unnamed)."""
    name = source._name  # pyright: ignore[reportPrivateUsage]
    if not name:
        return
    if name not in _SPLIT_NAMES:
        if len(_SPLIT_NAMES) > 4096:
            _SPLIT_NAMES.clear()
        to.name_hint = f"{name}_s"
        _SPLIT_NAMES[name] = to._name  # pyright: ignore[reportPrivateUsage]
        return
    to._name = _SPLIT_NAMES[name]  # pyright: ignore[reportPrivateUsage]


def discard(ops: Sequence[Operation]) -> None:
    """Drop ops that were built but never inserted, with the uses they hold."""
    for op in reversed(ops):
        op.erase()


def broadcasts_along(t: DTensorType, out_shape: tuple[int, ...], dim: int) -> bool:
    """An operand of type `t` is broadcast along result dimension `dim`: it lacks the dimension
    or has size 1 there where the result does not (a size-1 dimension of a size-1 result is
    split like any other)."""
    own = dim - (len(out_shape) - t.rank)
    return own < 0 or t.get_shape()[own] != out_shape[dim]


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else f"of type {value.type}"


def plan_region(
    ag: coll.AllGatherOp,
    strict: bool,
    allowed: set[Operation] | None = None,
    order: ProgramOrder | None = None,
) -> RegionBuilder:
    """Grow the region in program order through the users, in the all_gather's block, of the
    values it already holds (only through `allowed` ops, when given)."""
    builder = RegionBuilder(ag)
    block = ag.parent_block()
    assert isinstance(block, Block)
    walk = UserWalk(order or ProgramOrder(), block, [ag.result])
    for op in walk:
        kind = type(op)
        if not (kind in _ALONG_ROWS or is_elementwise(op)) or (
            allowed is not None and op not in allowed
        ):
            continue
        try:
            if kind is dt.ReduceOp:
                if not builder.try_add_reduce(op):  # type: ignore[arg-type]
                    continue  # (its result is whole again: the region ends)
            elif kind in _ALONG_ROWS:
                builder.try_add_along_rows(op)
            else:
                builder.try_add(op)
        except Refusal as why:
            if strict and ag.result in op.operands:
                raise Refusal(f"cannot move it below '{op.name}': {why}") from None
            continue
        walk.follow(op.results)
    return builder


def rewrite_region(builder: RegionBuilder) -> list[coll.SliceOp]:
    """Turn each planned op into its block version in place (operands and result on blocks,
    its slices inserted before it), reduce blocks into partial results completed by an
    all_reduce where nothing else needs the whole value, gather every value used outside the
    region, drop the all_gathers left unused; returns the slices of replicated operands it made.

    In place, not by building an op alike and erasing this one: that was a third of the pass.
    The ops end where the built ones went, and each value's uses in the same order."""
    for op, slices, operands, _, new in builder.planned:
        insert_before(slices, op)
        retarget(op, operands, new)
    partial = {id(op) for op, _, _, _ in builder.partials}
    for op, piece, new, kind in builder.partials:
        if not all(id(u.operation) in partial for u in op.input.uses):
            continue  # the whole value is gathered anyway: its reduction adds no collective
        old = op.results[0]
        retarget(op, [piece], new)
        done = coll.AllReduceOp(new, builder.mesh, builder.ag.axes.names, kind)
        set_tag(derive(done, op), derived_tag(op, "ar"))
        copy_name(done.result, old)
        new.name_hint = f"{old.name_hint}_p" if old.name_hint else None
        insert_after(done, op)
        replace_uses(old, done.result)
    for op, _, _, old, new in builder.planned:
        if old.first_use is None:  # (region ops use `new` now: what is left is outside)
            continue
        gathered = coll.AllGatherOp(new, builder.mesh, builder.ag.axes)
        keep_algorithm(gathered, builder.ag)
        located = derive(gathered, builder.ag)  # (where the all_gather it moves was)
        set_tag(located, derived_tag(op, "ag") or derived_tag(builder.ag, "ag"))
        copy_name(gathered.result, old)
        insert_after(gathered, op)
        replace_uses(old, gathered.result)
    for ag in [builder.ag, *builder.other_gathers]:
        if ag.result.first_use is None:
            erase_op(ag)
    return [piece for _, slices, _, _, _ in builder.planned for piece in slices]  # type: ignore[misc]


def keep_algorithm(gathered: coll.AllGatherOp, moved: coll.AllGatherOp) -> None:
    """The gather below the elementwise ops runs as the one it moves did: its `algorithm` hint,
    `chunks` request and the algorithm `lower-collectives` bound it to (an algorithm is a
    chunk program for its ranks, whatever the bytes; dropped, it was left unreferenced)."""
    gathered.properties.update(
        (name, moved.properties[name])
        for name in ("algorithm", "chunks")
        if name in moved.properties
    )
    bound = moved.attributes.get(ALGORITHM_ATTRIBUTE)
    if bound is not None:
        gathered.attributes[ALGORITHM_ATTRIBUTE] = bound


def type_on(op: Operation, operands: Sequence[SSAValue]) -> DTensorType:
    """The result type of elementwise `op` on these operands; Refusal (with the reason its
    builder gives) when they have no legal signature."""
    try:
        return elementwise_type(op, [v.type for v in operands])  # type: ignore[misc]
    except InferenceError as e:
        raise Refusal(e.located(None)) from None


def retarget(op: Operation, operands: Sequence[SSAValue], result: OpResult) -> None:
    """`op` computes on `operands` now, into `result` (a fresh value of it): its uses move to
    the new operands, each put first in its value's use list, in operand order (as building
    the op would)."""
    uses = op._operand_uses  # pyright: ignore[reportPrivateUsage]
    for value, use in zip(op._operands, uses, strict=True):  # pyright: ignore[reportPrivateUsage]
        value.remove_use(use)
    for value, use in zip(operands, uses, strict=True):
        value.add_use(use)
    op._operands = SSAValues(operands)  # pyright: ignore[reportPrivateUsage]
    op.results = SSAValues((result,))
    forget_verification(op)  # its verification key held its old operands and type


def insert_after(new: Operation, op: Operation) -> None:
    following = op._next_op  # pyright: ignore[reportPrivateUsage]
    if following is None:
        Rewriter.insert_op(new, InsertPoint.after(op))
    else:
        insert_before([new], following)


def hoist_slice(piece: coll.SliceOp) -> list[coll.SliceOp]:
    """slice(f(a, b)) -> f(slice(a), slice(b)) when every use of f's result is that same slice:
    then the replicated computation was only needed on blocks. Returns the new slices.
    slice(all_gather(x)) -> x (`take_back`)."""
    producer = piece.input.owner
    if type(producer) is coll.AllGatherOp:
        take_back(piece, producer)
        return []
    if not is_elementwise(producer) or not isinstance(producer, Operation):
        return []
    uses = [u.operation for u in producer.results[0].uses]
    if not all(
        isinstance(u, coll.SliceOp) and u.axes == piece.axes and u.dim == piece.dim for u in uses
    ):
        return []
    mesh = mesh_of(piece)
    out_shape = piece.result.type.get_shape()  # type: ignore[union-attr]
    dim = piece.dim.value.data
    operands, new_slices = [], []
    for v in producer.operands:
        t = v.type
        assert isinstance(t, DTensorType)
        if broadcasts_along(t, out_shape, dim):
            operands.append(v)
            continue
        own = dim - (len(out_shape) - t.rank)
        try:
            sliced = coll.SliceOp(v, mesh, piece.axes, own)
        except VerifyException:
            discard(new_slices)
            return []
        name_split(sliced.result, v)
        new_slices.append(sliced)
        operands.append(sliced.result)
    try:
        result_type = type_on(producer, operands)
    except Refusal:
        discard(new_slices)
        return []
    if result_type != piece.result.type:
        discard(new_slices)  # the op on blocks would not be the slice
        return []
    new = OpResult(result_type, producer, 0)
    copy_name(new, piece.result if piece.result.name_hint else producer.results[0])
    insert_before(new_slices, producer)
    retarget(producer, operands, new)  # (in place, as rewrite_region)
    for use in uses:
        replace_uses(use.results[0], new)
        erase_op(use)
    return new_slices


def take_back(piece: coll.SliceOp, ag: coll.AllGatherOp) -> None:
    """A slice that takes back exactly the blocks an all_gather joined reads the gather's input
    instead (and the gather goes when nothing else reads it). A chain of layers makes these: a
    region planned first slices a value that a later region's all_gather then produces (the
    residual of one block is the dropout of the next), which would gather a value only to
    slice it again, and keep the residual out of the next fused collective."""
    if piece.axes != ag.axes or ag.input.type != piece.result.type:
        return
    replace_uses(piece.result, ag.input)
    erase_op(piece)
    if ag.result.first_use is None:
        erase_op(ag)


def hoist_slices(slices: list[coll.SliceOp]) -> None:
    """Move these coll.slices (and the ones they create) up through the elementwise ops whose
    results only they use."""
    worklist = list(slices)
    while worklist:
        piece = worklist.pop()
        if piece.parent is not None:
            worklist.extend(hoist_slice(piece))


@dataclass(frozen=True)
class ReorderElementwise(ModulePass):
    """Move all_gathers below the elementwise, reduction and normalization ops that consume them (compute on slices)."""

    name = "reorder-elementwise"
    releases_erased_ir = True  # frees what it erases (common.release): no old cyclic garbage

    tags: tuple[str, ...] = option(
        (), "Only move all_gathers with one of these `tag` attributes (then refusals are errors)."
    )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warn_kernel_level(op, self.name, "all_gathers and the elementwise ops after them")
        from ccopt.diagnostics import OpError

        require_tagged(op, self.tags, self.name, (coll.AllGatherOp,))
        order = ProgramOrder()
        for ag in of_class(ops_outside_bodies(op), coll.AllGatherOp):
            if ag.parent is None or not is_selected(ag, self.tags):
                continue
            strict = bool(self.tags)
            try:
                builder = plan_region(ag, strict, order=order)
            except Refusal as why:
                raise OpError(ag, str(why)) from None
            if not builder.planned and not builder.partials:
                if strict:
                    fused = any(type(u.operation) is dt.FusedOp for u in ag.result.uses)
                    raise OpError(
                        ag,
                        f"nothing to reorder: no elementwise op consumes {tag_of(ag)!r}"
                        + (
                            " (a dtensor.fused reads it: reorder-elementwise moves gathers "
                            "below single elementwise ops; run it before fuse-elementwise)"
                            if fused
                            else ""
                        ),
                    )
                continue
            made = rewrite_region(builder)
            if self.tags:
                hoist_slices(made)
        if not self.tags:
            hoist_slices(of_class(ops_outside_bodies(op), coll.SliceOp))
