"""Reference semantics of the coll dialect: the collectives, group by group.

Each collective runs independently in every group of ranks that share their coordinates on the
axes the op does not span. Reductions combine the members in group order (= rank order), so all
members of a group get bitwise the same result. Data movement (all_gather, all_to_all, slice) is one
routine: every rank assembles its output block from the input blocks of its group that overlap it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from xdsl.dialects.builtin import IntegerAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute

from ccopt.dialects import coll
from ccopt.dialects.algo import Algorithm
from ccopt.dialects.dtensor_type import DTensorType, MeshAxesAttr, ReductionKind, ReductionKindAttr
from ccopt.interpreters.distributed import (
    DistTensor,
    identity,
    impl_each,
    intersect,
    reduce_in_order,
    relative,
)


def _result_type(op: coll.CollectiveOp) -> DTensorType:
    t = op.result.type
    assert isinstance(t, DTensorType)
    return t


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


class CollFunctions(InterpreterFunctions):
    """Interpreter functions of the coll dialect."""

    def run_collective(
        self, interpreter: Interpreter, op: coll.CollectiveOp, args: PythonValues
    ) -> PythonValues:
        from ccopt.dialects.algo import chosen_algorithm

        chosen = chosen_algorithm(op)  # lower-collectives chose it: run the steps
        if chosen is not None:
            return (
                through(chosen.algorithm(), type(op), op.properties, args[0], _result_type(op)),
            )
        return (collective(type(op), op.properties, args[0], _result_type(op)),)

    @impl(coll.FusedAllReduceOp)
    def run_fused_all_reduce(
        self, interpreter: Interpreter, op: coll.FusedAllReduceOp, args: PythonValues
    ) -> PythonValues:
        """Reduce-scatter, the body on every rank's slice, all-gather of the replicated results."""
        from ccopt.interpreters.dtensor import run_body

        partial, *inputs = args
        mesh = partial.mesh
        group = op.group(mesh)
        iteration = op.iteration_type(mesh)
        reduced = run_groups(partial, iteration, group, reduce_scatter(op.kind.data))
        outputs = run_body(op.body_block(), iteration, mesh, [reduced, *inputs])
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
