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
`fuse-collective`'s fused bodies are not part of a pair (the search costs no elementwise body
on the communication stream), so the credit is that of the plain reduction.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects import coll, sched
from ccopt.dialects.dtensor import MatmulOp, MeshOp
from ccopt.dialects.dtensor_type import DTensorType, PartialAttr, Placement, R
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
) -> ModuleOp:
    """The minimal program of one pair: `mm`'s shapes and transposes on arguments placed at
    `operands`, giving `result`, converted to `goal`; then, for a written collective, that
    collective's kind and properties from `goal` (its result at `final`)."""
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
    ret.operands = [value]
    f.function_type = FunctionType.from_lists(inputs, [value.type])
    return module


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


def simulated_times(module: ModuleOp, machine: Machine, chunks: int) -> tuple[float, float]:
    """(before, after) step times in seconds of `module` and of `module` after
    `overlap{chunks=chunks}` (`module` is left as it is). Where the pass refuses (no dimension
    can be chunked, or no collective it pipelines) one simulation gives both."""
    from ccopt.passes.overlap import Overlap
    from ccopt.sim.program import simulate_module

    chunked = module.clone()
    with warnings.catch_warnings():  # fewer chunks than asked on a short dimension: as the pass
        warnings.simplefilter("ignore")
        Overlap(chunks=chunks).apply(Context(), chunked)
    before = simulate_module(module, machine).step_time_ns * 1e-9
    if not any(isinstance(op, sched.ExecuteOp) for op in chunked.walk()):
        return before, before
    return before, simulate_module(chunked, machine).step_time_ns * 1e-9


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


class OverlapCredit:
    """Simulated overlap credits on one machine and mesh for one chunk count, remembered per
    distinct pipelined step (`pipelined_step`) of a matmul signature (in `KNOWN`)."""

    def __init__(self, machine: Machine, mesh: Mesh, chunks: int):
        self.machine, self.mesh, self.chunks = machine, mesh, chunks
        self.known = KNOWN.setdefault((repr(machine), mesh, chunks), {})
        self.simulated = 0
        """How many distinct pairs were simulated (each: the pass and one or two simulations)."""

    def table(
        self,
        mm: MatmulOp,
        producers: Sequence[tuple[Sequence[Placements], Placements]],
        goals: Sequence[Placements],
        collective: Operation | None = None,
        finals: Sequence[Placements | None] | None = None,
        needed: np.ndarray | None = None,
    ) -> np.ndarray:
        """`credit` for each producer (operand placements, result placements) of `mm` and
        each goal (with a written `collective`: and its result at `finals`, goal by goal) where
        `needed` says so (None: everywhere), the matmul's own key hashed once (xDSL types hash
        slowly). A goal no collectives reach from the result gets 0 (the search forbids it)."""
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
                key = (operands_key, result, step[0], step[2])
                known = per_matmul.get(key)
                if known is None:
                    try:
                        program = pair_program(
                            mm, operands, result, step[0], self.mesh, step[1], step[2]
                        )
                    except PlacementConflict:
                        continue
                    known = per_matmul[key] = simulated_times(program, self.machine, self.chunks)
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
    ) -> float:
        """The seconds `overlap{chunks=C}` saves (negative: loses) on the pair's pipelined step
        (`pipelined_step`: the matmul under `operands` and `result` and the collective after
        it): its simulated step time before minus after; 0 where nothing is pipelined."""
        table = self.table(mm, [(operands, result)], [goal], collective, [final])
        return float(table[0, 0])
