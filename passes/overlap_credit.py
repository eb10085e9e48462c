"""What the `overlap` pass saves on a matmul and the reduction of its result, as the program
simulator predicts: `auto-shard`'s overlap-aware objective (`objective=time overlap=C`).

For one pair the search weighs - a matmul under one placement signature whose partial result
is converted (and, where the program writes one, reduced by its collective) to the placement
its consumer reads - the credit is built from the pair alone. The pass pipelines the matmul
with the collective right after it, so the pair's minimal L1 program (`pair_program`) is the
matmul on arguments at the signature's operand placements and that first collective: the
first of the conversion `propagate-placements`' `convert` inserts (the same one `auto-shard`
writes) when it reduces the partial result, or the written collective when nothing is
converted (`pipelined_step`). The collectives after it run after the pipeline's concat as they
ran after the unchunked reduction and drop out of the difference. The program is simulated
(`ccopt.sim.program`, ccopt mode, on the search's machine) as it is and after the actual
`overlap{chunks=C}` pass, and

    credit = step time before - step time after          (seconds)

so it holds whatever the simulator knows and a closed form does not: the slices and the concat
the chunks cost, per-chunk launches and collective latency, SMs the collective takes from the
concurrent matmul, and chunk counts the pass lowers on short dimensions. It may be negative
(chunking costs more than it hides: the pass would still run, so the search is told). Where the
pass refuses (no dimension can be chunked) nothing changes and the credit is 0; a first
collective that gathers or re-splits is not pipelined (credit 0, nothing simulated).

Credits are remembered for the process per distinct pair (`KNOWN`: the machine, the mesh and C;
the matmul's operand and result types - shapes, dtype - and transposes, the written collective;
the operand placements as the simulator sees them - `operand_key` -, the result's, the
pipelined step's), so a stack of 96 layers, or a second search, simulates each pair once.

With `pipeline="fused"` (`auto-shard`'s `overlap-pipeline=fused`) the scheduled program is the
one the CoCoNeT pipeline `FUSED_PIPELINE` makes: where the pipelined reduction is the whole
conversion and the consumer reading its result is elementwise (`reader`), the pair program
includes that consumer (its other operands as arguments at its signature's placements, its
result at the signature's), so `fuse-collective` puts its body on the reduced slice inside the
collective and `overlap` chunks the fused collective with the matmul; the credit is again the
simulated difference, and holds the elementwise work the fused body no longer does on the whole
value. Elsewhere (a written collective, whose own consumer is not part of the pair; a
conversion of several steps, whose last step the consumer reads; a consumer that is not
elementwise) the pair is the one without a consumer, and the fused pipeline runs on it as on
the program: `split-all-reduce` splits a lone all-reduce too, so the credit is that of its
reduce-scatter pipelined with the matmul and its all-gather after the concat.

The other direction, AxoNN's OAG (`gather_credit`): an all-gather that is the last step of the
conversion into a matmul operand is chunked with the matmul by the same `overlap` pass, so the
edge into the matmul is credited with the simulated difference of the all-gather and the matmul
before and after `overlap{chunks=C}` (the steps before the gather run before it either way).
With `tries` (`auto-shard`'s `overlap-tries`) each pair is simulated for C and every count
tried and credited with the best (`best_times`, under the credit's pipeline); `annotate_chunks`
writes that count on the collective the pass pipelines in the searched program, as its `chunks`,
which the pass follows. With the fused pipeline the count goes on the reduction:
`split-all-reduce` gives it to the reduce-scatter, `fuse-collective` to the fused collective
(`coll.fused_all_reduce ... chunks N`), which `overlap` chunks in that many.

The pass pipelines one gathered operand per matmul: of those it can chunk, the one whose
gather brings the most bytes (`overlap.gathered_bytes`; a tie: the first operand). An edge sees
one operand's producer, not the other's, so it cannot know whether the other operand is
gathered too; crediting both edges would count two pipelines where the pass runs one. So
operand k's gather is credited only where it wins against any gather the other operand could
have under the matmul's signature (`gather_wins`), coming in at any placement its producer's
signatures give (`rivals`; `auto-shard` passes them): the pass would pipeline it whatever the
other edge brings, and the two edges never both hold credit. This stays pairwise - the rivals
are a fixed set, not the other edge's choice - and it is exact where no rival placement ends
in a gather at the signature's placement of the other operand (a weight argument given at R, a
signature that splits the other operand on every axis): then the other operand is never
gathered. Elsewhere the model under-credits: a gather that loses the comparison gets 0 even
when the other operand's producer picks a placement needing no gather and the pass pipelines
the first gather alone (the saving it is denied is the simulated one, usually positive; where
chunking loses time the 0 over-states it, as for any pair the search leaves uncredited).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import coll, sched
from ccopt.dialects.dtensor import MatmulOp, MeshOp
from ccopt.dialects.dtensor_type import (
    DTensorType,
    PartialAttr,
    Placement,
    R,
    ReplicatedAttr,
    SplitAttr,
)
from ccopt.mesh import Mesh
from ccopt.passes.propagate_placements import PlacementConflict, conversion_order, convert

if TYPE_CHECKING:
    import numpy as np

    from ccopt.sim.machine import Machine

Placements = tuple[Placement, ...]


def pair_program(
    mm: MatmulOp,
    operands: Sequence[Placements],
    result: Placements,
    goal: Placements,
    mesh: Mesh,
    collective: Operation | None = None,
    final: Placements | None = None,
    reader: Reader | None = None,
) -> ModuleOp:
    """The minimal program of one pair: `mm`'s shapes and transposes on arguments placed at
    `operands`, giving `result`, converted to `goal`; then, for a written collective, that
    collective's kind and properties from `goal` (its result at `final`); then, with a
    `reader`, the elementwise consumer reading it (`Reader.build`)."""
    lhs, rhs, out = mm.lhs.type, mm.rhs.type, mm.result.type
    assert isinstance(lhs, DTensorType) and isinstance(rhs, DTensorType)
    assert isinstance(out, DTensorType)
    inputs = [lhs.with_placements(operands[0]), rhs.with_placements(operands[1])]
    f = func.FuncOp("pair", FunctionType.from_lists(inputs, []))
    module = ModuleOp(
        [MeshOp(mesh.name, list(zip(mesh.axis_names, mesh.axis_sizes, strict=True))), f]
    )
    a, b = f.body.block.args
    product = MatmulOp.create(
        operands=[a, b],
        result_types=[out.with_placements(result)],
        properties=dict(mm.properties),
    )
    ret = func.ReturnOp(product.result)
    f.body.block.add_ops([product, ret])
    value = convert(product.result, goal, mesh, Rewriter(), InsertPoint.before(ret), mm)
    if collective is not None:
        assert isinstance(collective, coll.CollectiveOp) and final is not None
        t = value.type
        assert isinstance(t, DTensorType)
        written = type(collective).create(
            operands=[value],
            result_types=[t.with_placements(final)],
            properties={k: v for k, v in collective.properties.items() if k != "chunks"},
        )
        Rewriter.insert_op(written, InsertPoint.before(ret))
        value = written.results[0]
    if reader is not None:
        value = reader.build(value, f, InsertPoint.before(ret))
        inputs = [a.type for a in f.body.block.args]
    ret.operands = [value]
    f.function_type = FunctionType.from_lists(inputs, [value.type])
    return module


class Reader(NamedTuple):
    """An elementwise consumer of the pair's reduction under one of its signatures: `op`
    reads the reduced value at operand `k`; `operands` and `result` are the signature's
    placements (None: an operand that is not a distributed tensor)."""

    op: Operation
    k: int
    operands: tuple[Placements | None, ...]
    result: Placements

    def build(self, value: SSAValue, f: func.FuncOp, where: InsertPoint) -> SSAValue:
        """A copy of `op` reading `value` at operand k and new arguments of `f` (at the
        signature's placements) elsewhere, its result at the signature's placements."""
        block = f.body.block
        operands: list[SSAValue] = []
        for i, (v, placed) in enumerate(zip(self.op.operands, self.operands, strict=True)):
            t = v.type
            if i == self.k:
                operands.append(value)
                continue
            if isinstance(t, DTensorType) and placed is not None:
                t = t.with_placements(placed)
            operands.append(block.insert_arg(t, len(block.args)))
        (r,) = self.op.results
        t = r.type
        assert isinstance(t, DTensorType)
        copy = type(self.op).create(
            operands=operands,
            result_types=[t.with_placements(self.result)],
            properties=dict(self.op.properties),
            regions=[region.clone() for region in self.op.regions],
        )
        Rewriter.insert_op(copy, where)
        return copy.results[0]

    def key(self) -> tuple:
        """What of the consumer the simulation sees, besides the placements."""
        return (self.k, *consumer_key(self.op))


def consumer_key(op: Operation) -> tuple:
    """An elementwise consumer as the simulation sees it: its name, properties, types and the
    body a fused op computes (two `dtensor.fused` ops alike in type need not do alike work)."""
    from ccopt.dialects.body import body_key

    bodies = tuple(body_key(r.blocks[0]) if len(r.blocks) == 1 else None for r in op.regions)
    if None in bodies:  # (a body that is not self-contained: its text)
        bodies = (str(op),)
    return (
        op.name,
        tuple(sorted(op.properties.items())),
        tuple(v.type for v in op.operands),
        tuple(r.type for r in op.results),
        bodies,
    )


def fusable_reader(op: Operation | None) -> bool:
    """Whether `fuse-collective` can put `op` in the body of the reduction it reads: an
    elementwise op (or an already fused one) with one result."""
    from ccopt.passes.fusion_groups import is_fusable

    return op is not None and is_fusable(op) and len(op.results) == 1 and not op.regions[1:]


def pipelined_step(
    result: Placements,
    goal: Placements,
    collective: Operation | None = None,
    final: Placements | None = None,
) -> tuple[Placements, Operation | None, Placements | None] | None:
    """The part of a pair the `overlap` pass pipelines with the matmul: the first collective
    `convert` puts after it (`conversion_order`), when it reduces the partial result, as a
    one-axis goal; or, with nothing to convert, the written collective. None: the first
    collective gathers or re-splits (the pass pipelines no matmul with those) or there is none.
    The rest of the chain runs after the pipeline's concat as it runs after the unchunked
    reduction - the same collectives on the same values, nothing beside them -, so it adds the
    same time before and after and drops out of the credit."""
    order = conversion_order(result, goal)
    if not order:
        return None if collective is None else (result, collective, final)
    axis = order[0]
    if not isinstance(result[axis], PartialAttr):
        return None
    step = tuple(goal[axis] if a == axis else p for a, p in enumerate(result))
    return step, None, None


PIPELINES = ("overlap", "fused")
"""What the credit assumes runs after the search: `overlap{chunks=C}` alone, or CoCoNeT's
fused pipeline (`FUSED_PIPELINE`)."""

FUSED_PIPELINE = "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap"
"""The passes `pipeline="fused"` runs on a pair (overlap with the search's C chunks): the
all-reduce split, the consumer moved onto the reduced slice and fused into the collective,
the fused collective chunked with the matmul - as README's CoCoNeT pipelines write them."""


def scheduled(module: ModuleOp, chunks: int, pipeline: str = "overlap") -> ModuleOp:
    """A copy of `module` after the passes `pipeline` names (`PIPELINES`) with C = `chunks`."""
    from ccopt.ir import clone, inherit_locations
    from ccopt.passes.fuse_collective import FuseCollective
    from ccopt.passes.fuse_elementwise import FuseElementwise
    from ccopt.passes.overlap import Overlap
    from ccopt.passes.reorder_elementwise import ReorderElementwise
    from ccopt.passes.split_all_reduce import SplitAllReduce

    passes: list = [Overlap(chunks=chunks)]
    if pipeline == "fused":
        passes = [SplitAllReduce(), ReorderElementwise(), FuseElementwise(), FuseCollective()]
        passes.append(Overlap(chunks=chunks))
    out = clone(module)
    with warnings.catch_warnings():  # fewer chunks than asked on a short dimension: as the pass
        warnings.simplefilter("ignore")
        for p in passes:
            p.apply(Context(), out)
            inherit_locations(out)  # as every pipeline does after each pass
    return out


def simulated_times(
    module: ModuleOp, machine: Machine, chunks: int, pipeline: str = "overlap"
) -> tuple[float, float]:
    """(before, after) step times in seconds of `module` and of `module` after the passes
    `pipeline` names (`scheduled`; `module` is left as it is). Where they change nothing (no
    dimension can be chunked, nothing to fuse) one simulation gives both."""
    from ccopt.sim.program import simulate_module

    after = scheduled(module, chunks, pipeline)
    before = simulate_module(module, machine).step_time_ns * 1e-9
    if not any(isinstance(op, sched.ExecuteOp | coll.FusedAllReduceOp) for op in after.walk()):
        return before, before
    return before, simulate_module(after, machine).step_time_ns * 1e-9


def best_times(
    module: ModuleOp, machine: Machine, counts: Sequence[int], pipeline: str = "overlap"
) -> tuple[float, float, int]:
    """(before, after, count): `module`'s step time, and the least step time after the passes
    with one of `counts` chunks, with that count (the first on a tie; where no count changes
    anything, the first count and `before`)."""
    before = after = -1.0
    best = counts[0]
    for c in counts:
        b, a = simulated_times(module, machine, c, pipeline)
        before = b
        if after < 0 or a < after:
            after, best = a, c
    return before, after, best


KNOWN: dict[tuple, dict[tuple, tuple[float, float]]] = {}
"""Simulated (before, after) times per (machine, mesh, chunks) and pair, for the process: a
search of a forward and a backward step, or a second strategy, asks for the same pairs."""


def forget() -> None:
    """Drop the remembered credits (benchmarks time a search from nothing known)."""
    KNOWN.clear()


def remembered() -> int:
    """How many pairs were simulated since `forget`."""
    return sum(len(pairs) for per_matmul in KNOWN.values() for pairs in per_matmul.values())


def operand_key(operands: Sequence[Placements]) -> tuple[Placements, ...]:
    """The operand placements as the simulator sees them: a partial operand holds a block of
    the same shape as a replicated one, and the simulator times local blocks (and the `overlap`
    pass chunks dimensions no placement splits), so both read as R - the lhs-partial and the
    rhs-partial signature of a matmul share one simulation."""
    return tuple(tuple(R if isinstance(p, PartialAttr) else p for p in o) for o in operands)


def gather_step(start: Placements, goal: Placements) -> tuple[Placements, int] | None:
    """Where the conversion from `start` to `goal` ends with an all-gather (the last axis
    `convert` changes goes from split to replicated): the placements that gather reads and its
    axis. The overlap pass chunks such a gather with the matmul it feeds (OAG); the steps
    before it run before it either way and drop out of the credit. None: no such gather."""
    order = conversion_order(start, goal)
    if not order:
        return None
    axis = order[-1]
    if not (isinstance(start[axis], SplitAttr) and isinstance(goal[axis], ReplicatedAttr)):
        return None
    return tuple(start[a] if a == axis else p for a, p in enumerate(goal)), axis


def gather_program(
    mm: MatmulOp,
    k: int,
    gathered: Placements,
    operands: Sequence[Placements],
    result: Placements,
    mesh: Mesh,
) -> ModuleOp:
    """The minimal program of an OAG pair: operand `k` of `mm` an argument at `gathered`,
    converted (one all-gather) to `operands[k]`, the other an argument at its placements, then
    the matmul giving `result`."""
    lhs, rhs, out = mm.lhs.type, mm.rhs.type, mm.result.type
    assert isinstance(lhs, DTensorType) and isinstance(rhs, DTensorType)
    assert isinstance(out, DTensorType)
    placed = [list(operands[0]), list(operands[1])]
    placed[k] = list(gathered)
    inputs = [lhs.with_placements(placed[0]), rhs.with_placements(placed[1])]
    product_type = out.with_placements(result)
    f = func.FuncOp("pair", FunctionType.from_lists(inputs, [product_type]))
    module = ModuleOp(
        [MeshOp(mesh.name, list(zip(mesh.axis_names, mesh.axis_sizes, strict=True))), f]
    )
    args = list(f.body.block.args)
    ret = func.ReturnOp()
    f.body.block.add_op(ret)
    args[k] = convert(args[k], operands[k], mesh, Rewriter(), InsertPoint.before(ret), mm)
    product = MatmulOp.create(
        operands=args, result_types=[product_type], properties=dict(mm.properties)
    )
    Rewriter.insert_op(product, InsertPoint.before(ret))
    ret.operands = [product.result]
    return module


def gather_bound(
    t: DTensorType, placed: Placements, mesh: Mesh, rivals: Sequence[Placements] | None = None
) -> Fraction | None:
    """The most bytes an all-gather into `t` at `placed` can bring (`overlap.gathered_bytes`):
    from each of `rivals` (the placements the value can come in at) whose conversion to
    `placed` ends with a gather (`gather_step`); with None, from any placement (one replicated
    axis of `placed` gathered from a split of any dimension). None: no gather ends at
    `placed`."""
    from ccopt.passes.overlap import gathered_bytes

    if rivals is None:
        starts = [
            tuple(SplitAttr(d) if a == axis else q for a, q in enumerate(placed))
            for axis, p in enumerate(placed)
            if isinstance(p, ReplicatedAttr)
            for d in range(t.rank)
        ]
    else:
        steps = (gather_step(r, placed) for r in rivals)
        starts = [step[0] for step in steps if step is not None]
    after = t.with_placements(placed)
    return max((gathered_bytes(t.with_placements(s), after, mesh) for s in starts), default=None)


def gather_wins(
    mm: MatmulOp,
    k: int,
    gathered: Placements,
    operands: Sequence[Placements],
    mesh: Mesh,
    rivals: Sequence[Placements] | None = None,
    bounds: dict[Placements, Fraction | None] | None = None,
) -> bool:
    """Whether the `overlap` pass pipelines operand `k`'s gather (from `gathered` to
    `operands[k]`) with `mm` whatever the other operand's edge brings: its bytes beat
    (operand 1) or equal (operand 0: the pass's tie goes to the first) the largest gather the
    other operand could have at `operands[1 - k]` coming from one of `rivals` (None: from
    anywhere; `gather_bound`). Both edges never win at once, and the one that wins is the one
    the pass picks when both are gathered; where the other operand can have no gather, it
    wins outright and the credit is exact. `bounds` remembers the bound per placement of the
    other operand (for one `rivals`)."""
    from ccopt.passes.overlap import gathered_bytes

    t, other = mm.operands[k].type, mm.operands[1 - k].type
    assert isinstance(t, DTensorType) and isinstance(other, DTensorType)
    if bounds is None:
        bounds = {}
    placed = operands[1 - k]
    if placed not in bounds:  # a table asks per start and signature, the bound is per signature
        bounds[placed] = gather_bound(other, placed, mesh, rivals)
    bound = bounds[placed]
    if bound is None:
        return True
    moved = gathered_bytes(t.with_placements(gathered), t.with_placements(operands[k]), mesh)
    return moved >= bound if k == 0 else moved > bound


class OverlapCredit:
    """Simulated overlap credits on one machine and mesh for one chunk count and pipeline
    (`PIPELINES`), remembered per distinct pipelined step (`pipelined_step`, `gather_step`) of
    a matmul signature (in `KNOWN`)."""

    def __init__(
        self,
        machine: Machine,
        mesh: Mesh,
        chunks: int,
        pipeline: str = "overlap",
        tries: Sequence[int] = (),
    ):
        assert pipeline in PIPELINES
        self.machine, self.mesh, self.chunks, self.pipeline = machine, mesh, chunks, pipeline
        self.counts = tuple(dict.fromkeys((chunks, *tries)))
        """The chunk counts tried per pair (C first): each pair is credited with the best."""
        self.known = KNOWN.setdefault((repr(machine), mesh, self.counts, pipeline), {})
        self.simulated = 0
        """How many distinct pairs were simulated (each: the passes and one or two simulations)."""

    def table(
        self,
        mm: MatmulOp,
        producers: Sequence[tuple[Sequence[Placements], Placements]],
        goals: Sequence[Placements],
        collective: Operation | None = None,
        finals: Sequence[Placements | None] | None = None,
        needed: np.ndarray | None = None,
        readers: Sequence[Reader | None] | None = None,
    ) -> np.ndarray:
        """`credit` for each producer (operand placements, result placements) of `mm` and
        each goal (with a written `collective`: and its result at `finals`, goal by goal) where
        `needed` says so (None: everywhere), the matmul's own key hashed once (xDSL types hash
        slowly). A goal no collectives reach from the result gets 0 (the search forbids it).
        With the fused pipeline, `readers` gives per goal the elementwise consumer reading the
        reduction (`Reader`; None: none), which joins the pair where the reduction is the whole
        conversion."""
        import numpy as np

        per_matmul = self.known.setdefault(
            (
                mm.lhs.type,
                mm.rhs.type,
                mm.result.type,
                tuple(sorted(mm.properties)),
                None
                if collective is None
                else (collective.name, tuple(sorted(collective.properties.items()))),
            ),
            {},
        )
        fused = self.pipeline == "fused" and readers is not None
        reader_key = None
        if fused:
            first = next((r for r in readers if r is not None), None)  # type: ignore[union-attr]
            fused = first is not None and fusable_reader(first.op)
            reader_key = first.key() if fused else None  # type: ignore[union-attr]
        out = np.zeros((len(producers), len(goals)))
        for a, (operands, result) in enumerate(producers):
            operands_key = operand_key(operands)
            for b, goal in enumerate(goals):
                if needed is not None and not needed[a, b]:
                    continue
                final = None if finals is None else finals[b]
                step = pipelined_step(result, goal, collective, final)
                if step is None:
                    continue
                reader = readers[b] if fused and step[0] == goal else None  # type: ignore[index]
                key = (operands_key, result, step[0], step[2])
                if reader is not None:
                    key = (*key, reader_key, reader.operands, reader.result)
                known = per_matmul.get(key)
                if known is None:
                    try:
                        program = pair_program(
                            mm, operands, result, step[0], self.mesh, step[1], step[2], reader
                        )
                    except PlacementConflict:
                        continue
                    known = per_matmul[key] = self.times(program, self.pipeline)
                    self.simulated += 1
                out[a, b] = known[0] - known[1]
        return out

    def times(self, program: ModuleOp, pipeline: str = "overlap") -> tuple[float, float]:
        """(before, after) of a pair's program, after with the best of the counts tried."""
        if len(self.counts) == 1:
            return simulated_times(program, self.machine, self.chunks, pipeline)
        before, after, _ = best_times(program, self.machine, self.counts, pipeline)
        return before, after

    def gather_table(
        self,
        mm: MatmulOp,
        k: int,
        starts: Sequence[Placements],
        signatures: Sequence[tuple[Sequence[Placements], Placements]],
        needed: np.ndarray | None = None,
        rivals: Sequence[Placements] | None = None,
    ) -> np.ndarray:
        """The OAG credit for each placement operand `k` of `mm` comes in at (`starts`) and
        each signature (operand placements, result placements) of `mm` where `needed` says so:
        where the conversion ends with an all-gather (`gather_step`) and the matmul's result is
        not partial (the overlap pass pipelines a matmul with one collective; a gathered
        operand comes first in program order), the simulated step time of that gather and the
        matmul before minus after `overlap{chunks=C}`, where that gather is the one the pass
        pipelines whatever the other operand brings in at one of `rivals` (None: at any
        placement; `gather_wins`); 0 elsewhere."""
        import numpy as np

        per_matmul = self.known.setdefault(
            ("gather", k, mm.lhs.type, mm.rhs.type, mm.result.type, tuple(sorted(mm.properties))),
            {},
        )
        out = np.zeros((len(starts), len(signatures)))
        bounds: dict[Placements, Fraction | None] = {}
        for a, start in enumerate(starts):
            for b, (operands, result) in enumerate(signatures):
                if needed is not None and not needed[a, b]:
                    continue
                if any(isinstance(p, PartialAttr) for p in result):
                    continue
                step = gather_step(start, operands[k])
                if step is None or not gather_wins(
                    mm, k, step[0], operands, self.mesh, rivals, bounds
                ):
                    continue
                key = (step[0], operand_key(operands), result)
                known = per_matmul.get(key)
                if known is None:
                    try:
                        program = gather_program(mm, k, step[0], operands, result, self.mesh)
                    except PlacementConflict:
                        continue
                    known = per_matmul[key] = self.times(program)
                    self.simulated += 1
                out[a, b] = known[0] - known[1]
        return out

    def credit(
        self,
        mm: MatmulOp,
        operands: Sequence[Placements],
        result: Placements,
        goal: Placements,
        collective: Operation | None = None,
        final: Placements | None = None,
        reader: Reader | None = None,
    ) -> float:
        """The seconds the pipeline saves (negative: loses) on the pair's pipelined step
        (`pipelined_step`: the matmul under `operands` and `result` and the collective after
        it, with the fused pipeline and an elementwise `reader`: and that consumer): its
        simulated step time before minus after; 0 where nothing is pipelined."""
        table = self.table(
            mm,
            [(operands, result)],
            [goal],
            collective,
            [final],
            None,
            None if reader is None else [reader],
        )
        return float(table[0, 0])


def annotate_chunks(module: ModuleOp, credit: OverlapCredit) -> int:
    """Write on each collective of `credit`'s mesh that the `overlap` pass will pipeline with a
    matmul - a reduction of a matmul's result, the all-gather feeding one that the pass
    pipelines (`gather_to_pipeline`) - the chunk count of `credit.counts` the simulator finds
    best for the pair, as its `chunks` (which the pass follows); a collective that has one keeps
    it. The pairs are those the search credited, rebuilt from the program (`pair_program`,
    `gather_program`) and simulated under the credit's pipeline: with the fused one a
    reduction's elementwise reader joins its pair (`fused_reader`), as `fuse-collective` fuses
    it, and the count written on the reduction reaches the fused collective (`split-all-reduce`
    and `fuse-collective` carry it). Returns how many were set."""
    from ccopt.passes.common import Refusal
    from ccopt.passes.overlap import gather_to_pipeline, matmul_fed_by

    written = 0
    for op in list(module.walk()):
        if isinstance(op, coll.AllGatherOp) and (mm := matmul_fed_by(op)) is not None:
            k = tuple(mm.operands).index(op.result)
            try:
                if gather_to_pipeline(mm, lambda _: credit.chunks, lambda _: True)[1] is not op:
                    continue  # the pass pipelines the matmul's other gathered operand
            except Refusal:
                continue
            ops = [placements_of(v) for v in mm.operands]
            pipeline = "overlap"  # as `gather_table` simulates it
            program = gather_program(
                mm, k, placements_of(op.input), ops, placements_of(mm.result), credit.mesh
            )
        elif isinstance(op, coll.AllReduceOp | coll.ReduceScatterOp) and isinstance(
            op.input.owner, MatmulOp
        ):
            mm = op.input.owner
            if mm.result.uses.get_length() != 1 or any(
                isinstance(v.owner, coll.AllGatherOp) for v in mm.operands
            ):
                continue
            result = placements_of(mm.result)
            pipeline = credit.pipeline
            program = pair_program(
                mm,
                [placements_of(v) for v in mm.operands],
                result,
                result,
                credit.mesh,
                op,
                placements_of(op.results[0]),
                fused_reader(op) if pipeline == "fused" else None,
            )
        else:
            continue
        if op.chunks is not None or mesh_name(op) != credit.mesh.name:
            continue
        _, _, best = best_times(program, credit.machine, credit.counts, pipeline)
        op.properties["chunks"] = IntegerAttr(best, i64)
        written += 1
    return written


def fused_reader(op: Operation) -> Reader | None:
    """With the fused pipeline, the consumer `fuse-collective` puts in the body of the
    reduction `op` (the search's `Reader` for the pair): its one reader where that is
    elementwise (`fusable_reader`); None: the pair has none and is simulated without."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not fusable_reader(uses[0].operation):
        return None
    reader = uses[0].operation
    placed = tuple(
        placements_of(v) if isinstance(v.type, DTensorType) else None for v in reader.operands
    )
    return Reader(reader, uses[0].index, placed, placements_of(reader.results[0]))


def placements_of(value: SSAValue) -> Placements:
    t = value.type
    assert isinstance(t, DTensorType)
    return tuple(t.placement_list)


def mesh_name(op: Operation) -> str:
    t = op.results[0].type
    assert isinstance(t, DTensorType)
    return t.mesh.data
