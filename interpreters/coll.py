"""Reference semantics of the coll dialect: the collectives, group by group.

Each collective runs independently in every group of ranks that share their coordinates on the
axes the op does not span. Reductions combine the members in group order (= rank order), so all
members of a group get bitwise the same result. Data movement (all_gather, all_to_all, slice) is one
routine: every rank assembles its output block from the input blocks of its group that overlap it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np
from xdsl.dialects.builtin import IntegerAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, Block, Operation

from ccopt.dialects import coll
from ccopt.dialects.algo import Algorithm
from ccopt.dialects.dtensor_type import DTensorType, MeshAxesAttr, ReductionKind, ReductionKindAttr
from ccopt.interpreters.distributed import (
    DistTensor,
    InterpreterError,
    identity,
    impl_each,
    intersect,
    reduce_in_order,
    relative,
)
from ccopt.mesh import Mesh


def _result_type(op: coll.CollectiveOp) -> DTensorType:
    t = op.result.type
    assert isinstance(t, DTensorType)
    return t


class FusedOp(Protocol):
    """What running a fused all-reduce through its algorithm needs of its op (the coll op or
    the kernel level's)."""

    name: str
    kind: ReductionKindAttr

    def iteration_type(self, mesh: Mesh) -> DTensorType: ...
    def group(self, mesh: Mesh) -> tuple[int, ...]: ...
    def body_block(self) -> Block: ...


GroupFn = Callable[[list[int], DistTensor, DTensorType], dict[int, np.ndarray]]
"""Given the ranks of one group (in group order), the input and the result type: each member's
output shard."""


def run_groups(
    x: DistTensor, result: DTensorType, axes: tuple[int, ...], fn: GroupFn
) -> DistTensor:
    mesh = x.mesh
    shards: list[np.ndarray | None] = [None] * mesh.rank_count
    for group in mesh.groups(axes):
        ranks = [mesh.rank(c) for c in group]
        for rank, shard in fn(ranks, x, result).items():
            shards[rank] = shard
    assert all(s is not None for s in shards)
    return DistTensor(result, mesh, shards)  # type: ignore[arg-type]


def reduced(kind: ReductionKind) -> Callable[[list[int], DistTensor], np.ndarray]:
    def run(ranks: list[int], x: DistTensor) -> np.ndarray:
        return reduce_in_order(kind, [x.shards[r] for r in ranks])

    return run


def all_reduce(kind: ReductionKind) -> GroupFn:
    def run(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
        total = reduced(kind)(ranks, x)
        return {r: total.copy() for r in ranks}

    return run


def reduce_scatter(kind: ReductionKind) -> GroupFn:
    def run(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
        total = reduced(kind)(ranks, x)
        return {
            r: np.array(total[relative(result.local_slices(x.mesh, x.mesh.coords(r)), x.region(r))])
            for r in ranks
        }

    return run


def assemble(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
    """Every member's output block, copied from the overlapping input blocks of the group."""
    out: dict[int, np.ndarray] = {}
    for r in ranks:
        target = result.local_slices(x.mesh, x.mesh.coords(r))
        block = np.empty([s.stop - s.start for s in target], dtype=x.dtype)
        sources = [r] + [k for k in ranks if k != r]
        filled = np.zeros(block.shape, dtype=bool)
        for k in sources:
            overlap = intersect(target, x.region(k)) if block.size else None
            if overlap is None:
                continue
            into = relative(overlap, target)
            if filled[into].all():
                continue
            block[into] = x.shards[k][relative(overlap, x.region(k))]
            filled[into] = True
        assert filled.all(), f"rank {r}: output block not covered by its group"
        out[r] = block
    return out


def broadcast(root: int) -> GroupFn:
    def run(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
        return {r: x.shards[ranks[root]].copy() for r in ranks}

    return run


def reduce_to_root(kind: ReductionKind, root: int) -> GroupFn:
    def run(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
        total = reduced(kind)(ranks, x)
        rest = np.full(total.shape, identity(kind, x.dtype), dtype=x.dtype)
        return {r: total if i == root else rest.copy() for i, r in enumerate(ranks)}

    return run


def shift(offset: int, cyclic: bool) -> GroupFn:
    def run(ranks: list[int], x: DistTensor, result: DTensorType) -> dict[int, np.ndarray]:
        n = len(ranks)
        out = {}
        for i, r in enumerate(ranks):
            src = i - offset
            if cyclic:
                src %= n
            out[r] = x.shards[ranks[src]].copy() if 0 <= src < n else np.zeros_like(x.shards[r])
        return out

    return run


def group_function(op_type: type[coll.CollectiveOp], props: Mapping[str, Attribute]) -> GroupFn:
    """What one group of ranks does for a collective with these properties."""

    def integer(name: str) -> int:
        attr = props[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def kind() -> ReductionKind:
        attr = props["kind"]
        assert isinstance(attr, ReductionKindAttr)
        return attr.data

    if op_type is coll.AllReduceOp:
        return all_reduce(kind())
    if op_type is coll.ReduceScatterOp:
        return reduce_scatter(kind())
    if op_type in (coll.AllGatherOp, coll.AllToAllOp, coll.SliceOp):
        return assemble
    if op_type is coll.BroadcastOp:
        return broadcast(integer("root"))
    if op_type is coll.ReduceOp:
        return reduce_to_root(kind(), integer("root"))
    if op_type is coll.ShiftOp:
        return shift(integer("offset"), "cyclic" in props)
    raise TypeError(f"no semantics for {op_type.name}")


def collective(
    op_type: type[coll.CollectiveOp],
    props: Mapping[str, Attribute],
    x: DistTensor,
    result: DTensorType,
) -> DistTensor:
    """Run a collective (given by its op class and properties) on a distributed value."""
    axes = props["axes"]
    assert isinstance(axes, MeshAxesAttr)
    group = coll.group_axes(x.mesh, axes.names)
    return run_groups(x, result, group, group_function(op_type, props))


def algorithm_run_by(op: Operation) -> Algorithm | None:
    """The algorithm a collective (of any level) names, proven to compute its collective
    (`proven`), or None where it names none."""
    from ccopt.dialects.algo import chosen_algorithm
    from ccopt.interpreters.algo import proven

    chosen = chosen_algorithm(op)
    return None if chosen is None else proven(chosen)


def through(
    alg: Algorithm,
    op_type: type[coll.CollectiveOp],
    props: Mapping[str, Attribute],
    x: DistTensor,
    result: DTensorType,
) -> DistTensor:
    """Run a collective by executing its algorithm on every group's data."""
    from ccopt.interpreters.algo import through_algorithm

    kind = props.get("kind")
    root = props.get("root")
    fn = through_algorithm(
        alg,
        kind.data if isinstance(kind, ReductionKindAttr) else None,
        root.value.data if isinstance(root, IntegerAttr) else 0,
    )
    axes = props["axes"]
    assert isinstance(axes, MeshAxesAttr)
    return run_groups(x, result, coll.group_axes(x.mesh, axes.names), fn)  # type: ignore[arg-type]


def fused_through(
    op: FusedOp,
    alg: Algorithm,
    partial: DistTensor,
    inputs: Sequence[DistTensor],
    types: Sequence[DTensorType],
) -> list[DistTensor]:
    """A fused all-reduce (of the coll or the kernel level: `types` are its results') run chunk
    by chunk through its algorithm, group by group (see `FusedGroup`)."""
    from ccopt.algorithms.fused_body import body_owners

    mesh = partial.mesh
    iteration = op.iteration_type(mesh)
    owners = body_owners(alg)
    shards: list[list[np.ndarray]] = [[np.empty(0)] * mesh.rank_count for _ in types]
    for group in mesh.groups(op.group(mesh)):
        run = FusedGroup(op, iteration, types, owners, partial, inputs, group)
        for i, per_rank in enumerate(run.results(alg)):
            for r, shard in per_rank.items():
                shards[i][r] = shard
    return [DistTensor(t, mesh, s) for t, s in zip(types, shards, strict=True)]  # type: ignore[arg-type]


class FusedGroup:
    """One group of a fused all-reduce run through its algorithm: the members' slices laid into
    the chunks (`chunk_layout`), the body applied by each `fn` step to the chunks it names on
    the rank that runs it, the algorithm's later steps carrying the results that are gathered
    (one slot per such result beside the chunk's sum), and the results that stay split kept
    where the body ran."""

    def __init__(
        self,
        op: FusedOp,
        iteration: DTensorType,
        types: Sequence[DTensorType],
        owners: np.ndarray,
        partial: DistTensor,
        inputs: Sequence[DistTensor],
        group: list[tuple[int, ...]],
    ):
        from ccopt.algorithms.fused_body import chunk_layout
        from ccopt.passes.lower_collectives import split_body

        self.op, self.iteration, self.partial, self.inputs = op, iteration, partial, inputs
        mesh = partial.mesh
        self.ranks = [mesh.rank(c) for c in group]
        self.targets = [iteration.local_slices(mesh, c) for c in group]
        self.shapes = [tuple(s.stop - s.start for s in t) for t in self.targets]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.types = list(types)
        owner = split_body(iteration, [x.type for x in inputs], self.types, op.group(mesh))
        try:
            self.layout = chunk_layout(owners, self.sizes, owner)
        except ValueError as e:
            raise InterpreterError(f"{op.name}: {e}") from None
        gathered = [i for i, t in enumerate(self.types) if t != iteration]
        self.slot = {i: s for s, i in enumerate(gathered)}
        self.slots = max(1, len(gathered))
        self.kept = [[np.empty(n, partial.dtype) for n in self.sizes] for _ in self.types]

    def chunks(self, rank: int) -> np.ndarray:
        """A member's partial sums of every slice, as (chunks, slots, width) rows."""
        p, lay = self.partial, self.layout
        flat = np.concatenate(
            [p.shards[rank][relative(t, p.region(rank))].ravel() for t in self.targets]
        )
        starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        laid = lay.block >= 0  # (none where every member's slice is empty: a split of 2 by 4)
        fill = identity(self.op.kind.data, p.dtype)
        rows = np.full((len(lay.block), self.slots, lay.width), fill, p.dtype)
        rows[:, 0, :][laid] = flat[starts[lay.block[laid]] + lay.pos[laid]]
        return rows

    def body(self, member: int, first: int, rows: np.ndarray) -> np.ndarray:
        """What an `fn` step does to chunks first.. : the body on their elements, with the
        operands of the members whose slices they are (the body's own member, where the body
        has split operands: `chunk_layout` sees to that)."""
        from ccopt.interpreters.body import evaluate_body
        from ccopt.interpreters.dtensor import global_indices

        for q in range(len(rows)):
            block, pos = self.layout.block[first + q], self.layout.pos[first + q]
            for j in np.unique(block[block >= 0]).tolist():
                cols = np.flatnonzero(block == j)
                at, r = pos[cols], self.ranks[j]
                index = global_indices(
                    self.iteration, self.targets[j], self.op.index_box()
                ).ravel()[at]
                args = [
                    np.broadcast_to(x.shards[r], self.shapes[j]).ravel()[at] for x in self.inputs
                ]
                values = evaluate_body(self.op.body_block(), index, [rows[q, 0, cols], *args])
                for i, v in enumerate(values):
                    v = np.broadcast_to(v, index.shape)
                    if i in self.slot:
                        rows[q, self.slot[i], cols] = v
                    else:
                        self.kept[i][j][at] = v
        return rows

    def results(self, alg: Algorithm) -> list[dict[int, np.ndarray]]:
        """Per result of the op, every member's shard."""
        from ccopt.interpreters.algo import execute
        from ccopt.interpreters.distributed import combine

        p = self.partial
        fill = identity(self.op.kind.data, p.dtype)
        data = [self.chunks(r) for r in self.ranks]
        reduce = combine(self.op.kind.data)
        outs = execute(alg, data, reduce, not alg.outofplace, fill=fill, apply=self.body)
        out: list[dict[int, np.ndarray]] = []
        for i, t in enumerate(self.types):
            if i not in self.slot:
                out.append(
                    {r: self.kept[i][m].reshape(self.shapes[m]) for m, r in enumerate(self.ranks)}
                )
                continue
            out.append(
                {
                    r: self.gathered(t, r, outs[m][:, self.slot[i], :])
                    for m, r in enumerate(self.ranks)
                }
            )
        return out

    def gathered(self, t: DTensorType, rank: int, values: np.ndarray) -> np.ndarray:
        """A member's shard of a gathered result, from the chunks its algorithm output holds."""
        mesh = self.partial.mesh
        region = t.local_slices(mesh, mesh.coords(rank))
        block = np.empty([s.stop - s.start for s in region], dtype=values.dtype)
        for j, target in enumerate(self.targets):
            piece = np.empty(self.sizes[j], dtype=values.dtype)
            mask = self.layout.block == j
            piece[self.layout.pos[mask]] = values[mask]
            block[relative(target, region)] = piece.reshape(self.shapes[j])
        return block


class CollFunctions(InterpreterFunctions):
    """Interpreter functions of the coll dialect."""

    def run_collective(
        self, interpreter: Interpreter, op: coll.CollectiveOp, args: PythonValues
    ) -> PythonValues:
        alg = algorithm_run_by(op)  # lower-collectives chose it (or an import): run the steps
        if alg is not None:
            return (through(alg, type(op), op.properties, args[0], _result_type(op)),)
        return (collective(type(op), op.properties, args[0], _result_type(op)),)

    @impl(coll.FusedAllReduceOp)
    def run_fused_all_reduce(
        self, interpreter: Interpreter, op: coll.FusedAllReduceOp, args: PythonValues
    ) -> PythonValues:
        """Reduce-scatter, the body on every rank's slice, all-gather of the replicated results."""
        from ccopt.interpreters.dtensor import run_body

        alg = algorithm_run_by(op)  # lower-collectives put the body inside the algorithm
        if alg is not None:
            types = [r.type for r in op.outputs]
            return tuple(fused_through(op, alg, args[0], args[1:], types))  # type: ignore[arg-type]
        partial, *inputs = args
        mesh = partial.mesh
        group = op.group(mesh)
        iteration = op.iteration_type(mesh)
        reduced = run_groups(partial, iteration, group, reduce_scatter(op.kind.data))
        outputs = run_body(op.body_block(), iteration, mesh, [reduced, *inputs], op.index_box())
        results = []
        for result, shards in zip(op.outputs, outputs, strict=True):
            sliced = DistTensor(iteration, mesh, shards)
            if result.type != iteration:
                sliced = run_groups(sliced, result.type, group, assemble)  # type: ignore[arg-type]
            results.append(sliced)
        return tuple(results)


impl_each(
    CollFunctions,
    (
        coll.AllReduceOp,
        coll.ReduceScatterOp,
        coll.AllGatherOp,
        coll.AllToAllOp,
        coll.SliceOp,
        coll.BroadcastOp,
        coll.ReduceOp,
        coll.ShiftOp,
    ),
    CollFunctions.run_collective,
)
register_impls(CollFunctions)
