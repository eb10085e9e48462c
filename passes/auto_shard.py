"""`auto-shard`: choose a placement signature per op, and the conversions between them.

Every open placement (`?`) of a function is decided at once by a search instead of op by op
(`propagate-placements`): each dtensor op and collective is a node whose candidates are its
legal placement signatures (the operands' and the result's placements, chosen per mesh axis and
combined), restricted to the placements the program annotates; each function argument is a node
whose candidates are replicated or split layouts; an edge from a producer to a consumer costs
the conversion of the producer's result to the placement the consumer's signature reads, except
where the producer's candidate converts its result once, right after it, for every read at that
placement (`Signature.shared`: an op's or an argument's candidates include such a conversion of
its value to each placement two of its reads may take, reducing partial sums or gathering
splits - a sharded weight gathered once for the forward and the backward matmul; an argument's
is written before its first reader; not for a call's results; not under a memory limit, where
each read's conversion lives only while its reader runs). The
objective is the byte model of `autoparallel.md` (`objective=bytes`) or the step's time
(`objective=time`: each conversion, collective and op's kernel as the program simulator times
it alone on `machine` - `Cost.collective`, `Cost.compute`: a matmul at the efficiency of its
local shape and dtype, an elementwise op, a reduction or a copy at HBM bandwidth on the rank's
block, so a replicated layout pays for the whole tensor on every rank; `overlap=C` credits
the reduction of a matmul's result with what the `overlap{chunks=C}` pass saves on it as the
program simulator predicts - `ccopt.passes.overlap_credit` simulates the pair's minimal
program before and after the pass, once per distinct pair - and an all-gather
converting a matmul's operand with what the pass saves chunking the two (AxoNN's OAG);
`overlap-pipeline=fused` simulates CoCoNeT's fused pipeline instead, the reduction's elementwise
consumer fused into it by `fuse-collective` and pipelined too; `overlap-tries=N,...` credits
each pair with the best of C and those chunk counts and writes it as the `chunks` of the
collective the pass pipelines, `annotate_chunks`); `memory=GiB` bounds
the per-device peak:
the most bytes live at any program point (`live_points`: values defined there or before and
used there or after, arguments throughout, and the outputs of the conversions the op there reads,
`conversion_held`; a call holds what lives across it plus its callee entry's own peak, and just
before it, while its operands are converted, what lives there with the conversions' outputs). When no
program fits, the error is at the op where the least peak any program reaches is held, and says
how much that is. `strategy` picks the solver (`ccopt.passes.placement_search`): `cd`, `dp`,
`ilp` or `exhaustive`; `time-limit` bounds the seconds its integer programs take together (past
it each keeps its best program, the best valid bound and the gap are reported).

A called function gets a transfer table (`Variant`): copies of it solved per boundary entry
(its own optimum, its open boundary replicated, under a memory limit a least-memory program at
the smallest boundary layouts, the boundaries its callers wish, and the boundaries its calls
take in the exact program of one repetition of the calls sharing the caller's arguments,
inlined - `joint_entries`: a layer's forward, backward and update calls splitting their
weights together), each at its cost for that boundary; a call chooses its entry like an op its
signature, so the callee boundaries are co-optimized with the caller over the table. The
entries some call uses stay in
the module (one entry keeps the function's name; more are `name`, `name_1`, ...).

The chosen program is an ordinary L1 program (`ccopt-run --check-pipeline auto-shard` proves it
equal to the input). The function gets an attribute `auto_shard` with the strategy used, the
cost, the lower bound (the optimum when exact, else e.g. the largest valid of HiGHS's dual
bound, the LP relaxation and the forest relaxations when the time limit stopped it, which the
note names with the gap relative to the cost) and the gap (with `overlap=C`: also C as
`overlap_chunks` and the credit the solution takes, in seconds, as `overlap_credit`). A
function calling transfer tables is bounded over every boundary its calls could have, not
only the tables' (`AutoShard.relaxed_bound`): per repetition of the calls sharing its
arguments (`repetition_relaxation`: each repetition inlined with a node per call boundary,
what enters it from outside free), or per call where there are none; its gap is what the
tables may miss too, 0 only where they provably miss nothing (the note says so - "gap 0:
proven optimal" - and how many entries each callee had). The boundaries the repetitions'
optima take are added to the tables and the callers searched again while the gap is open
(`close_gap`, column generation, `GAP_ROUNDS` rounds). A callee of at most `COMPLETE_TABLE`
boundaries gets every one as an entry (`complete_table`): dp over the tables is then exact
over every boundary; elsewhere the note says dp is exact over the tables only.
A function's cost and bound leave out its calls' entries' (each reports its own), so the
step's totals are every function's once per run of it:

```mlir
func.func @f(...) attributes {auto_shard = {strategy = "ilp", objective = "bytes", cost = 0.0, bound = 0.0, gap = 0.0}}
```
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import product
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import coll
from ccopt.dialects.dtensor import DTensorOp, MatmulOp, UpdateOp, lookup_mesh, mesh_of
from ccopt.dialects.dtensor_type import (
    DTensorType,
    OpenAttr,
    PartialAttr,
    Placement,
    R,
    SplitAttr,
    V,
    VaryingAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.open_placements import candidates
from ccopt.ir import clone
from ccopt.mesh import Mesh, local_slices
from ccopt.passes.common import release
from ccopt.passes.options import option
from ccopt.passes.placement_search import (
    NODE_LIMIT,
    RELAXATION_ITERATIONS,
    STRATEGIES,
    NoSolution,
    Point,
    Problem,
    Solution,
    coordinate_descent,
    least_memory,
    least_peak,
    maximal_points,
    solve,
)
from ccopt.passes.propagate_placements import (
    FunctionPlacer,
    PropagatePlacements,
    callees_first,
    conversion_collectives,
    conversion_order,
    conversion_steps,
    element_bytes,
)

if TYPE_CHECKING:
    import numpy as np

    from ccopt.passes.overlap_credit import OverlapCredit
    from ccopt.sim.machine import Machine

Placements = tuple[Placement, ...]
TIE_BREAK = 1e-9
"""Cost per byte an argument holds on a device (objective=bytes): prefers split inputs among
equal layouts."""
TIME_TIE_BREAK = 1e-19
"""The same in seconds per byte (objective=time): a device's 80 GiB of arguments weigh 9 ns,
below any collective's latency. At `TIE_BREAK` (1 s per GB) the arguments' bytes outweighed
every communication time of a GPT-3 step."""
REFINE_ROUNDS = 3
"""Rounds of growing the callees' transfer tables with the boundaries their callers wish."""
JOINT_ROUNDS = 1
"""Rounds of refinement from the program the joint entries give (GPT-3's 2-layer step at
dp=8 x tp=8, objective=time: 0.12376 s after none, 0.12339 s after one, and after three)."""
GAP_ROUNDS = 2
"""Rounds of column generation (`AutoShard.close_gap`): the boundaries of the per-repetition
relaxation's optima added to the tables, the roots searched again."""
COMPLETE_TABLE = 64
"""Boundaries (argument and result layouts combined) up to which a callee's transfer table
holds every one (`AutoShard.transfer_table`: dp over it is exact over every boundary)."""
ENTRIES_PER_ROUND = 2
"""New transfer table entries per callee and round."""
SLICES = 20
"""An integer program past the run's time budget still gets this fraction of it."""
MAX_SIGNATURES = 256
"""Candidates kept per op (the cheapest-to-reach first) when axes multiply into more."""
MAX_SIGNATURES_MANY_AXES = 32
"""The same on a mesh of three or more axes, where nearly every op has over 32: a tiny GPT
layer on dp=2 x tp=2 x pp=2 took 8 s with 32, 46 s with 64 and over 400 s (4.4 GB) with 256,
the conversion tables and dominance tests growing with the square of the candidates."""


def signature_limit(mesh: Mesh) -> int:
    return MAX_SIGNATURES if mesh.ndim <= 2 else MAX_SIGNATURES_MANY_AXES


def by_index_sum(lengths: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """The index tuples of a product of lists of `lengths`, in order of their sum (ties in
    product order): every axis moves off its first (cheapest) option early, where product
    order would vary only the last axes before a cap is reached."""

    def summing_to(k: int, total: int) -> Iterator[tuple[int, ...]]:
        if k == len(lengths) - 1:
            if total < lengths[k]:
                yield (total,)
            return
        for first in range(min(total, lengths[k] - 1) + 1):
            for rest in summing_to(k + 1, total - first):
                yield (first, *rest)

    for total in range(sum(n - 1 for n in lengths) + 1):
        yield from summing_to(0, total)


@dataclass
class Signature:
    """One way to run an op: what it reads per operand and what it gives."""

    operands: tuple[Placements | None, ...]
    result: Placements
    variant: int | None = None
    """For a call: which entry of the callee's transfer table (`Variant`) it runs."""
    callee_cost: float = 0.0
    """For a call: that entry's cost, the callee's optimum for these boundary placements."""
    callee_peak: float = 0.0
    """For a call: that entry's own memory peak per device (its arguments included)."""
    callee_bound: float = 0.0
    """For a call: that entry's lower bound (its cost where its search was exact)."""
    shared: Placements | None = None
    """A placement the result is converted to once, right after the op, for every reader
    that reads it there (`AutoShard.share_conversions`): a gradient reduced once for Adam's
    three uses, not once per use."""
    shared_cost: float = 0.0
    """What that conversion costs, less `shared_credit`."""
    shared_credit: float = 0.0
    """What the `overlap` pass saves pipelining that conversion with the matmul (`overlap=C`),
    as simulated; then every read takes the conversion (`only_shared`)."""
    only_shared: bool = False
    """Every read takes the shared conversion: the matmul's one use, which `overlap` needs."""


@dataclass
class Variant:
    """One entry of a called function's transfer table: a copy of the function solved with
    its boundary (argument and result placements) fixed, and its optimal internal cost
    there. Calls choose among the entries as an op chooses among its signatures."""

    name: str
    function_type: FunctionType
    cost: float
    peak: float = 0.0
    """The entry's memory peak per device (bytes; 0 when no limit is set)."""
    bound: float | None = None
    """A lower bound on the entry's cost (`cost` where its search was exact; None: `cost`).
    Entry 0's (the open boundary's) bounds the function's cost at every boundary."""

    @property
    def floor(self) -> float:
        return self.cost if self.bound is None else self.bound


@dataclass
class Node:
    op: Operation | None
    """None for a function argument."""
    value: SSAValue | None
    """The value the node defines (an op's result or the argument); None for a call that
    returns no tensor."""
    signatures: list[Signature]
    primary: bool = True
    """False for a call's second and later results: the first result's node carries the
    call's operand edges."""
    outside: bool = False
    """A value from outside a repetition's piece (`AutoShard.repetition_optimum`): any layout
    at no cost, so never converted once for its reads (that would make a second layout free)."""


@dataclass
class Memo:
    """What one run of the pass works out once for all its functions and boundary trials:
    each kind of op's signatures (a forward, backward and update layer share many) and each
    mesh's conversion costs."""

    signatures: dict[tuple, list[Signature]] = field(default_factory=dict)
    costs: dict[Mesh, Cost] = field(default_factory=dict)
    moves: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, object]] = field(
        default_factory=dict
    )
    """Conversion tables per pair of signature lists, operand and type (`conversion_table`)."""
    tried: set[tuple] = field(default_factory=set)
    """Boundaries a callee was already solved for at a caller's wish."""
    credited: dict[func.FuncOp, float] = field(default_factory=dict)
    """The simulated overlap credit (seconds) each function's solution takes (overlap=C)."""
    problems: dict[int, tuple[Problem, Solution]] = field(default_factory=dict)
    """Each solution's search problem, by the solution's id (`relaxed_bound` relaxes it at
    its calls; the solution is kept alive beside it)."""
    entering: dict[tuple, tuple[np.ndarray, list[Signature]]] = field(default_factory=dict)
    """`AutoShard.entering`'s least conversions per producer signature list and operand."""
    callees: dict[str, tuple[FunctionType, set[int]]] = field(default_factory=dict)
    """Each called function's type and the arguments it updates in place (`entering`)."""
    joint: dict[str, int] = field(default_factory=dict)
    """Per callee, the index of its first joint entry (`AutoShard.joint_entries`): where
    coordinate descent starts its calls once more (`AutoShard.joint_start`)."""
    repetitions: dict[tuple, tuple[float, list[tuple[str, tuple, tuple]]] | None] = field(
        default_factory=dict
    )
    """`AutoShard.repetition_optimum` per shape of repetition (`repetition_key`)."""
    columns: dict[int, list[tuple[str, tuple, tuple]]] = field(default_factory=dict)
    """Per solution (by id), the boundaries its per-repetition relaxation's optima take."""
    bounds: dict[int, tuple[float, str] | None] = field(default_factory=dict)
    """`AutoShard.relaxed_bound` per solution (by id; the solution kept alive in `problems`)."""
    complete: set[str] = field(default_factory=set)
    boundaries: dict[str, int] = field(default_factory=dict)
    """How many boundaries each callee has (`AutoShard.complete_table`)."""
    """The callees whose transfer table holds every boundary (`AutoShard.transfer_table`)."""
    began: float = field(default_factory=time.monotonic)

    def seconds(self, budget: float) -> float:
        """What is left of the run's `budget` of seconds for the next integer program, and at
        least a `SLICES`th of it (a layer's exact program takes a second at most)."""
        return max(budget - (time.monotonic() - self.began), budget / SLICES)


def _remembered_table(
    cache: dict[object, np.ndarray],
    entry: Callable[[DTensorType, Placements, Placements], float],
    t: DTensorType,
    starts: tuple[Placements, ...],
    goals: tuple[Placements, ...],
) -> np.ndarray:
    """`entry` from each of `starts` to each of `goals`, kept in `cache`: the op pairs of a
    layer see the same few sets of placements of the same few types."""
    import numpy as np

    key = (t, starts, goals)
    known = cache.get(key)
    if known is None:
        known = cache[key] = np.array([[entry(t, a, b) for b in goals] for a in starts]).reshape(
            len(starts), len(goals)
        )
    return known


class Cost:
    """Conversion and compute costs in the chosen objective's unit."""

    def __init__(self, objective: str, machine_name: str, mesh: Mesh):
        self.objective, self.mesh = objective, mesh
        self.known: dict[tuple[DTensorType, Placements, Placements], float] = {}
        self.matrices: dict[tuple, np.ndarray] = {}
        self.held_matrices: dict[tuple, np.ndarray] = {}
        self.holding: dict[tuple[DTensorType, Placements, Placements], float] = {}
        self.machine: Machine | None = None
        self.collectives: dict[tuple[str, int, tuple[int, ...], str | None], float] = {}
        self.kernels: dict[tuple, float] = {}
        self.credit: OverlapCredit | None = None
        self.tie_break = TIME_TIE_BREAK if objective == "time" else TIE_BREAK
        if objective == "time":
            from ccopt.sim.machine import load_machine

            self.machine = load_machine(machine_name).fit(math.prod(mesh.axis_sizes))

    def overlap_credit(
        self, chunks: int, pipeline: str = "overlap", tries: tuple[int, ...] = ()
    ) -> OverlapCredit:
        """The simulated overlap credits on this machine and mesh, remembered per pair."""
        from ccopt.passes.overlap_credit import OverlapCredit

        assert self.machine is not None
        c = self.credit
        if c is None or (c.chunks, c.pipeline, c.counts) != (
            chunks,
            pipeline,
            tuple(dict.fromkeys((chunks, *tries))),
        ):
            self.credit = OverlapCredit(self.machine, self.mesh, chunks, pipeline, tries)
        return self.credit

    def conversion(self, t: DTensorType, start: Placements, goal: Placements) -> float:
        """`convert`'s cost, remembered: a stack of layers asks for the same few many times."""
        key = (t, start, goal)
        known = self.known.get(key)
        if known is None:
            known = self.known[key] = self.convert(t, start, goal)
        return known

    def matrix(
        self, t: DTensorType, starts: tuple[Placements, ...], goals: tuple[Placements, ...]
    ) -> np.ndarray:
        """`conversion` from each of `starts` to each of `goals`, remembered: the op pairs of
        a layer see the same few sets of placements of the same few types."""
        return _remembered_table(self.matrices, self.conversion, t, starts, goals)

    def held_matrix(
        self, t: DTensorType, starts: tuple[Placements, ...], goals: tuple[Placements, ...]
    ) -> np.ndarray:
        """`held` from each of `starts` to each of `goals`, remembered as `matrix` is: a
        call's entries grow with every refinement, and each new table of its edges asks for
        the same few placements again."""
        return _remembered_table(self.held_matrices, self.held, t, starts, goals)

    def held(self, t: DTensorType, start: Placements, goal: Placements) -> float:
        """`conversion_held`, remembered."""
        key = (t, start, goal)
        known = self.holding.get(key)
        if known is None:
            known = self.holding[key] = conversion_held(t, start, goal, self.mesh)
        return known

    def convert(self, t: DTensorType, start: Placements, goal: Placements) -> float:
        """Each changed axis is one collective: its bytes plus one byte for its launch, so
        that among equal traffic fewer ops win (a local slice is free of traffic, not of
        work); with a machine, what the program simulator gives a program of that collective
        alone (`collective`)."""
        if not nests(t, start, goal, self.mesh):
            return math.inf
        if self.machine is None:
            return sum(
                nbytes + 1.0 for _, nbytes in conversion_collectives(t, start, goal, self.mesh)
            )
        total, current = 0.0, start
        for axis in conversion_order(start, goal):
            kind = step_kind(current[axis], goal[axis])
            after = (*current[:axis], goal[axis], *current[axis + 1 :])
            if kind is None:
                return math.inf
            if kind:  # an open axis takes the goal for free
                moved = after if kind in ("all_gather", "slice") else current
                total += self.collective(kind, block_bytes(t, moved, self.mesh), (axis,))
            current = after
        return total

    def collective(
        self, kind: str, nbytes: int, axes: tuple[int, ...], algorithm: str | None = None
    ) -> float:
        """Seconds of one collective of `kind` (a `ccopt.sim.cost` kind, or "slice": a local
        copy) of `nbytes` (`ccopt.sim.work.collective_bytes`' n; a slice's output) over mesh
        `axes`, as the program simulator times a program of it alone: the host's launch, then
        `collective_ns` on the network dimensions the group spans (hierarchical across them,
        the machine's algorithm per dimension, its NIC sharing, γ for reductions), or a copy
        at HBM bandwidth. Remembered per (kind, bytes, axes, algorithm): the search asks for
        the same few thousands of times."""
        from ccopt.sim import cost

        key = (kind, nbytes, axes, algorithm)
        known = self.collectives.get(key)
        if known is not None:
            return known
        machine = self.machine
        assert machine is not None
        if kind == "slice":
            ns = cost.roofline_ns(0.0, 2.0 * nbytes, 1.0, machine.gpu.hbm_bytes_per_ns)
        else:
            dims = cost.group_links(machine, self.mesh, axes, algorithm)
            ns = cost.collective_ns(kind, float(nbytes), dims, cost.gamma(machine))
        known = self.collectives[key] = (ns + machine.gpu.launch_ns) * 1e-9
        return known

    def compute(self, op: Operation, signature: Signature) -> float:
        """Seconds of `op`'s kernel under `signature` as the program simulator times a program
        of that op alone (`kernel_seconds`): a matmul at the efficiency of its local shape and
        dtype, an elementwise op, a reduction or a copy at HBM bandwidth - a replicated layout
        runs it on the whole tensor on every rank, a split one on its block. 0 for the bytes
        objective, for views (`ccopt.sim.work.FREE`: no kernel), and for collectives and calls
        (priced on their own). Remembered per op kind and the layouts of its tensors
        (`kernel_key`): the layers of a step repeat the same few."""
        from ccopt.sim.work import FREE

        if self.machine is None or not isinstance(op, DTensorOp | UpdateOp) or isinstance(op, FREE):
            return 0.0
        key = kernel_key(op, signature)
        known = self.kernels.get(key)
        if known is None:
            known = self.kernels[key] = kernel_seconds(op, signature, self.machine, self.mesh)
        return known


def placed(op: Operation, signature: Signature) -> list[tuple[SSAValue, Placements | None]]:
    """`op`'s operands and results with the placements `signature` gives each (None: not a
    distributed tensor, or a constant's missing operand list)."""
    operands = (*signature.operands, *[None] * (len(op.operands) - len(signature.operands)))
    return [
        *zip(op.operands, operands, strict=True),
        *((r, signature.result) for r in op.results),
    ]


def kernel_key(op: Operation, signature: Signature) -> tuple:
    """What the simulator's price of `op` under `signature` depends on: its kind and properties
    (transposes, a reduction's dims) and each tensor's shape, element type and split dims."""
    layouts = tuple(
        (t.get_shape(), t.element_type, tuple(p.split_dim for p in placements))
        for t, placements in ((v.type, p) for v, p in placed(op, signature))
        if isinstance(t, DTensorType) and placements is not None
    )
    return (op.name, tuple(sorted(op.properties.items())), layouts)


def kernel_seconds(op: Operation, signature: Signature, machine: Machine, mesh: Mesh) -> float:
    """What the program simulator gives a program of `op` alone, its tensors at `signature`'s
    placements: the host's launch, then `op_work` on each rank class's blocks at the roofline
    (`ccopt.sim.cost.kernel_ns`), the slowest class's (an uneven split's largest block sets the
    step)."""
    from ccopt.sim.cost import kernel_ns
    from ccopt.sim.program import rank_classes
    from ccopt.sim.work import Blocks, op_work

    alone = retyped(op, signature)
    values = (*alone.operands, *alone.results)
    classes, _ = rank_classes([v.type for v in values if isinstance(v.type, DTensorType)], mesh)
    blocks = Blocks(mesh)
    ns = max(kernel_ns(op_work(alone, blocks, c.coords), machine.gpu) for c in classes)
    return (ns + machine.gpu.launch_ns) * 1e-9


def retyped(op: Operation, signature: Signature) -> Operation:
    """A detached copy of `op` on fresh values whose distributed types take `signature`'s
    placements (the program's own values get no new use)."""
    from xdsl.ir import Block

    types = [
        v.type.with_placements(p) if isinstance(v.type, DTensorType) and p is not None else v.type
        for v, p in placed(op, signature)
    ]
    scratch = Block(arg_types=types[: len(op.operands)])
    return type(op).create(
        operands=list(scratch.args),
        result_types=types[len(op.operands) :],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        regions=[r.clone() for r in op.regions],
    )


def step_kind(current: Placement, target: Placement) -> str | None:
    """The collective `convert` writes to change one mesh axis from `current` to `target`, by
    its `ccopt.sim.cost` kind ("slice": a local slice; "": nothing to do); None where no
    collective does it."""
    if current == target or isinstance(current, OpenAttr):
        return ""
    if isinstance(target, PartialAttr | VaryingAttr | OpenAttr) or isinstance(current, VaryingAttr):
        return None
    if isinstance(current, PartialAttr):
        return "all_reduce" if target == R else "reduce_scatter"
    if isinstance(current, SplitAttr):
        return "all_gather" if target == R else "all_to_all"
    return "slice"


@lru_cache(maxsize=1 << 16)
def block_bytes(t: DTensorType, placements: Placements, mesh: Mesh) -> int:
    """Bytes of the largest block of `t` under `placements` (the first: ceil-div blocks), the
    one the simulator prices a collective by (NCCL moves equal counts)."""
    split = [p.split_dim if isinstance(p, SplitAttr) else None for p in placements]
    blocks = local_slices(t.get_shape(), split, mesh.axis_sizes, [0] * len(placements))
    return math.prod(b.stop - b.start for b in blocks) * element_bytes(t)


def collective_cost(op: Operation, signature: Signature, cost: Cost) -> float:
    """A written collective's own cost under a signature (0 for other ops): with a machine,
    the collective itself over its axes (`Cost.collective`: one hierarchical collective over
    several axes, a shift's message, which a conversion between its placements misses)."""
    if not isinstance(op, coll.CollectiveOp):
        return 0.0
    t, start = op.operands[0].type, signature.operands[0]
    assert isinstance(t, DTensorType) and start is not None
    from ccopt.sim.work import COLLECTIVE_KINDS, collective_algorithm, collective_axes

    kind = "slice" if isinstance(op, coll.SliceOp) else COLLECTIVE_KINDS.get(type(op))
    if cost.machine is None or kind is None:
        return cost.conversion(t, start, signature.result)
    moved = signature.result if kind in ("all_gather", "slice") else start
    axes = collective_axes(op, cost.mesh)
    return cost.collective(kind, block_bytes(t, moved, cost.mesh), axes, collective_algorithm(op))


def nests(t: DTensorType, start: Placements, goal: Placements, mesh: Mesh) -> bool:
    """Whether `convert`'s collectives (innermost axis widened first, then slices outermost
    first) keep every split of a dimension nested in mesh order: [S(0), S(0)] to [R, S(0)]
    would gather over the outer axis a dimension the inner one still splits, which no
    collective does (the rewrite would fail where the cost said it was cheap)."""
    current = list(start)
    for axis in conversion_order(start, goal):
        dims = {p.split_dim for p in (current[axis], goal[axis])} - {None}
        try:
            for dim in dims:
                # no other axis splitting `dim`: nested whatever the type (the check's own
                # first test), without building the type - a step costs 11,000 conversions
                if any(a != axis and p.split_dim == dim for a, p in enumerate(current)):
                    coll.check_split_nesting(t.with_placements(current), dim, [axis], mesh)
        except InferenceError:
            return False
        current[axis] = goal[axis]
    return True


def size(nbytes: float) -> str:
    """Bytes in the largest binary unit they fill (`56 KiB`, `89.27 GiB`)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:.4g} bytes"


def conversion_held(t: DTensorType, start: Placements, goal: Placements, mesh: Mesh) -> float:
    """The most bytes per device `convert`'s outputs hold at once beside its input: each
    collective's output while it is made, with the output it reads when that is no input (a
    chain through a wider placement holds the wider one), and the last output while the op
    reading it runs. An all-gather of 16 KiB from [S(0)] over 4 ranks holds 16 KiB; [S(0), R]
    to [R, S(1)] holds the whole tensor and its quarter while slicing. 0 when nothing
    changes."""
    sizes = [local_bytes(t, s, mesh) for s in conversion_steps(start, goal)]
    return max((b + (sizes[i - 1] if i else 0.0) for i, b in enumerate(sizes)), default=0.0)


@lru_cache(maxsize=1 << 16)
def local_bytes(t: DTensorType, placements: Placements, mesh: Mesh) -> float:
    """Bytes per device of `t` under `placements`, remembered: a 96-layer step's searches ask
    for the same few (type, placements) pairs a hundred thousand times."""
    shards = math.prod(
        n for n, p in zip(mesh.axis_sizes, placements, strict=True) if isinstance(p, SplitAttr)
    )
    return math.prod(t.get_shape()) * element_bytes(t) / shards


class Held:
    """The conversions whose outputs a function holds while the ops reading them run
    (`Problem.conversions`), and where: at an op, what converting its operand costs in bytes
    (`conversion_held`); at a call, the operand itself where it is converted and outlives the
    call (the converted copy is the callee's argument, inside the callee's peak, while the
    operand, no longer the callee's, must still be counted)."""

    def __init__(self, f: func.FuncOp) -> None:
        self.conversions: list[tuple[int, int | None, object]] = []
        self.at: dict[Operation, list[int]] = {}
        self.before: dict[Operation, list[int]] = {}
        """Per call, the conversions of its operands as they are made, before it runs: their
        outputs beside everything live then, the operands themselves included (an operand
        that dies at the call is no longer counted at the call's own point)."""
        self.position = {op: i for i, op in enumerate(f.body.block.ops)}
        self.block = f.body.block

    def add(
        self, op: Operation, u: int, v: int | None, holds: object, before: bool = False
    ) -> None:
        """Conversion `holds` counted at `op`'s point, or with `before` at the point just
        before the call `op`."""
        import numpy as np

        if not np.any(np.asarray(holds)):
            return
        (self.before if before else self.at).setdefault(op, []).append(len(self.conversions))
        self.conversions.append((u, v, holds))

    def source(
        self,
        operand: SSAValue,
        call: func.CallOp,
        differs: np.ndarray,
        producer: Node,
        t: DTensorType,
        mesh: Mesh,
    ) -> np.ndarray:
        """At a call: the operand's own bytes where it is converted and read after the call."""
        import numpy as np

        here = self.position[call]
        outlives = not isinstance(operand.owner, Operation) or any(
            (user := self.block.find_ancestor_op_in_block(use.operation)) is not None
            and self.position[user] > here
            for use in operand.uses
        )
        if not outlives:
            return np.zeros(differs.shape)
        own = np.array([local_bytes(t, s.result, mesh) for s in producer.signatures])
        return np.where(differs, own[:, None], 0.0)


def live_points(
    f: func.FuncOp,
    nodes: Sequence[Node],
    held: dict[Operation, list[int]] | None = None,
    before: dict[Operation, list[int]] | None = None,
    positions: list[int] | None = None,
) -> list[Point]:
    """The program points of `f`'s body, one per op, with the nodes live there: a value from
    the op that defines it (an argument: throughout) to its last use (a returned value: the
    end; a value an update stores into its argument: the update, after which the argument's
    storage, counted throughout, holds it). At a call of a function with a transfer table the
    point holds what lives across the call (defined before, used after, not an operand: the
    operands are the callee's arguments) and the callee entry's own peak, as a transient of
    the call's first node. `held` names the conversions (`Held`) whose outputs each op holds;
    `before` those a call's operands are converted by, held at a point of their own just before
    the call with what lives there (the operands too: one that dies at the call is not at the
    call's point, and was missed while its converted copy was made). `positions` (a list)
    receives each point's op position. Linear in the ops plus the uses, times the live set's
    size."""
    block = f.body.block
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    end = len(ops) - 1
    index = {n.value: i for i, n in enumerate(nodes) if n.value is not None}
    first = [0] * len(nodes)
    last = [0] * len(nodes)
    for value, i in index.items():
        if nodes[i].op is None:
            first[i], last[i] = -1, end
            continue
        first[i] = last[i] = position[nodes[i].op]  # type: ignore[index]
        for use in value.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is not None:
                last[i] = max(last[i], position[user])
    calls = {
        position[n.op]: i  # type: ignore[index]
        for i, n in enumerate(nodes)
        if n.primary and isinstance(n.op, func.CallOp) and n.signatures[0].variant is not None
    }
    starting: list[list[int]] = [[] for _ in range(len(ops) + 1)]  # arguments at 0, op k: k+1
    ending: list[list[int]] = [[] for _ in ops]
    for i in index.values():
        starting[first[i] + 1].append(i)
        ending[last[i]].append(i)
    live: set[int] = set(starting[0])
    points: list[Point] = []
    for k, op in enumerate(ops):
        if before and op in before:  # the call's operands converted: nothing it defines yet
            points.append((tuple(sorted(live)), (), tuple(before[op])))
            if positions is not None:
                positions.append(k)
        live.update(starting[k + 1])
        if positions is not None:
            positions.append(k)
        if k in calls:
            operands = {index[v] for v in op.operands if v in index}
            across = tuple(sorted(i for i in live if first[i] < k < last[i] and i not in operands))
            points.append((across, (calls[k],), tuple(held.get(op, ())) if held else ()))
        else:
            points.append((tuple(sorted(live)), (), tuple(held.get(op, ())) if held else ()))
        live.difference_update(ending[k])
    return points


def _fits(annotated: Placements, chosen: Placements) -> bool:
    return all(isinstance(a, OpenAttr) or a == c for a, c in zip(annotated, chosen, strict=True))


def argument_signatures(t: DTensorType, mesh: Mesh) -> list[Signature]:
    per_axis = [
        [p]
        if not isinstance(p, OpenAttr)
        else [R]
        if n == 1  # (one rank: every placement holds the same data)
        else [c for c in candidates(t) if not isinstance(c, PartialAttr)]
        for p, n in zip(t.placement_list, mesh.axis_sizes, strict=True)
    ]
    out = []
    for combo in product(*per_axis):
        try:
            DTensorType.check_parameters(t.get_shape(), t.element_type, combo)
        except VerifyException:
            continue
        out.append(Signature((), tuple(combo)))
    return out


def capped_ops(nodes: Sequence[Node]) -> str:
    """What the note says when ops kept only `signature_limit` signatures: the search (and its
    bound) is exact over those, not over every placement."""
    ops = [
        n
        for n in nodes
        if isinstance(n.op, DTensorOp | coll.CollectiveOp) and n.op.operands  # (not constants)
    ]
    mesh = mesh_of(ops[0].op) if ops else None  # type: ignore[arg-type]
    if mesh is None or mesh.ndim <= 2:
        return ""
    limit = signature_limit(mesh)
    at_limit = sum(len(n.signatures) >= limit for n in ops)
    if not at_limit:
        return ""
    return (
        f"{at_limit} of {len(ops)} ops kept their first {limit} signatures on this "
        f"{mesh.ndim}-axis mesh (exact over those)"
    )


def op_signatures(op: Operation, mesh: Mesh) -> list[Signature]:
    """Legal signatures of a dtensor op or collective agreeing with its annotations."""
    types = [v.type for v in op.operands]
    dist = [i for i, t in enumerate(types) if isinstance(t, DTensorType)]
    declared = op.results[0].type
    assert isinstance(declared, DTensorType)
    per_axis: list[list[tuple[tuple[Placement, ...], Placement]]] = []
    # a dtensor op's rule on one axis (the others R) depends on that axis's size only: axes of
    # one size share the inference (a collective's depends on its group)
    inferred: dict[tuple, list[tuple[tuple[Placement, ...], Placement | None]]] = {}
    for axis in range(mesh.ndim):
        options = []
        size = mesh.axis_sizes[axis]
        choices = axis_choices(op, types, dist, axis)
        key = (size, choices)
        if isinstance(op, coll.CollectiveOp) or key not in inferred:
            inferred[key] = [
                (combo, _infer_axis(op, types, dist, axis, combo, mesh))
                for combo in product(*choices)
            ]
        for combo, got in inferred[key]:
            if got is None:
                continue
            want = declared.placement_list[axis]
            if isinstance(want, OpenAttr) or want == got:
                options.append((combo, got))
        if not options:
            raise OpError(
                op,
                f"on mesh axis '{mesh.axis_names[axis]}': no placement signature agrees with the annotations",
            )
        if size == 1:
            options = _replicated_where_alike(options)
        per_axis.append(options)
    limit = signature_limit(mesh)
    if mesh.ndim <= 2:
        combos: Iterable[tuple] = product(*per_axis)
    else:
        combos = (
            tuple(o[i] for o, i in zip(per_axis, index, strict=True))
            for index in by_index_sum([len(o) for o in per_axis])
        )
    out = []
    for parts in combos:
        operands: list[Placements | None] = [None] * len(types)
        for k, i in enumerate(dist):
            operands[i] = tuple(p[0][k] for p in parts)
        result = tuple(p[1] for p in parts)
        if _whole_type_legal(op, types, operands, result):
            out.append(Signature(tuple(operands), result))
        if len(out) >= limit:
            break
    return out


def _replicated_where_alike(
    options: list[tuple[tuple[Placement, ...], Placement]],
) -> list[tuple[tuple[Placement, ...], Placement]]:
    """On an axis of one rank every placement holds the same data: only the all-R options
    (where the annotations allow one). A split there had the search place conversions that move
    nothing - an all-gather over the one rank - which cost launches, and with an overlap credit
    could look like a gain."""
    plain = [o for o in options if o[1] == R and all(p == R for p in o[0])]
    return plain or options


def axis_choices(
    op: Operation, types: Sequence[Attribute], dist: list[int], axis: int
) -> tuple[tuple[Placement, ...], ...]:
    """What each distributed operand may be read at on `axis`: what the producer gives may
    differ, the edge converts (`candidates`); and V where the op holds pipeline stages there
    (an operand, or its result, annotated V on the axis): no collective makes or undoes V, so
    a value at V is read at V and an open one beside it may be too."""
    values = [types[i] for i in dist] + [op.results[0].type]
    varying = any(
        isinstance(t, DTensorType) and isinstance(t.placement_list[axis], VaryingAttr)
        for t in values
    )
    out = []
    for i in dist:
        t = types[i]
        assert isinstance(t, DTensorType)
        given = t.placement_list[axis]
        if isinstance(given, VaryingAttr):
            out.append((given,))
        else:
            out.append((*candidates(t), *((V,) if varying else ())))
    return tuple(out)


def _infer_axis(
    op: Operation,
    types: Sequence[Attribute],
    dist: list[int],
    axis: int,
    combo: Sequence[Placement],
    mesh: Mesh,
) -> Placement | None:
    """The result placement on `axis` when the operands read `combo` there (other axes R; a
    collective passes the axes it does not span through)."""
    if isinstance(op, coll.CollectiveOp):
        if axis not in op.group(mesh):
            return combo[0]
        try:
            return op.convert(op.properties, combo[0])
        except InferenceError:
            return None
    trial = [
        t.with_placements(combo[dist.index(i)] if a == axis else R for a in range(mesh.ndim))
        if i in dist
        else t
        for i, t in enumerate(types)
    ]
    try:
        got = _infer(op, trial, mesh)
    except (InferenceError, VerifyException):
        return None
    return got.placement_list[axis]


def _infer(op: Operation, types: Sequence[Attribute], mesh: Mesh) -> DTensorType:
    if isinstance(op, DTensorOp):
        return op.inferred_type_for(types)
    assert isinstance(op, coll.CollectiveOp)
    return op.infer(types[0], op.properties, mesh)


def _whole_type_legal(
    op: Operation,
    types: Sequence[Attribute],
    operands: Sequence[Placements | None],
    result: Placements,
) -> bool:
    trial = [
        t.with_placements(operands[i]) if operands[i] is not None else t
        for i, t in enumerate(types)
    ]
    try:
        got = _infer(op, trial, mesh_of(op))
    except (InferenceError, VerifyException):
        return False
    return got.placement_list == result


_DEFAULT_MACHINE = "dgx-a100"


@dataclass(frozen=True)
class AutoShard(ModulePass):
    """Choose every open placement by a search over the ops' placement signatures (cd, dp, ilp
    or exhaustive) minimizing bytes moved or step time under a per-device memory limit."""

    name = "auto-shard"

    strategy: str = option(
        "dp",
        "Search: cd (coordinate descent), dp (variable elimination; ilp if too wide), ilp (HiGHS) "
        "or exhaustive.",
    )
    objective: str = option(
        "bytes",
        "What to minimize: bytes (conversion bytes per device) or time (seconds on machine).",
    )
    memory: float | int = option(
        0.0,
        "Per-device memory limit in GiB on the peak of the bytes live at any program point "
        "(a call: what lives across it plus its callee's peak; 0: none).",
    )
    machine: str = option(_DEFAULT_MACHINE, "Machine preset or file for objective=time.")
    time_limit: float | int = option(
        60.0,
        "Seconds the search's integer programs (ilp, and dp where it hands over to ilp, for every "
        "function and transfer table entry) may take together, each at least a twentieth of it; "
        "past it each keeps the best program it found, with the largest valid lower bound (HiGHS's, "
        f"the LP relaxation's - up to {RELAXATION_ITERATIONS:,} simplex iterations more each -, "
        "the forest relaxations') and the gap "
        "reported. A safety net: each stops first after "
        f"{NODE_LIMIT:,} branch-and-bound nodes, a budget of work that answers alike however "
        "busy the machine is.",
    )
    overlap: int = option(
        0,
        "Chunks in which the overlap pass will pipeline each matmul with the reduction of its "
        "result (objective=time): such traffic is credited with the step time the simulator "
        "predicts overlap{chunks=C} saves on the pair; 0 charges it in full.",
    )
    overlap_pipeline: str = option(
        "overlap",
        "What runs after the search, for overlap=C's credit: overlap (overlap{chunks=C} alone: "
        "reductions after matmuls, all-gathers into them) or fused (split-all-reduce, "
        "reorder-elementwise, fuse-elementwise, fuse-collective, overlap{chunks=C}: a "
        "reduction's elementwise consumer fused into it and pipelined too).",
    )
    overlap_tries: tuple[int, ...] = option(
        (),
        "Chunk counts tried per pair besides overlap's C: each pair is credited with the best "
        "simulated count (under overlap-pipeline's passes), written as the `chunks` of the "
        "collective the overlap pass pipelines (which it, and fuse-collective, follow).",
    )

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"auto-shard: strategy must be one of {', '.join(STRATEGIES)}, got '{self.strategy}'"
            )
        if self.objective not in ("bytes", "time"):
            raise ValueError(f"auto-shard: objective must be bytes or time, got '{self.objective}'")
        if self.overlap < 0:
            raise ValueError(f"auto-shard: overlap must be >= 0 chunks, got {self.overlap}")
        if self.overlap and self.objective != "time":
            raise ValueError(
                f"auto-shard: overlap={self.overlap} credits simulated time and needs "
                f"objective=time, got objective={self.objective}"
            )
        if self.objective == "bytes" and self.machine != _DEFAULT_MACHINE:
            raise ValueError(
                f"auto-shard: machine={self.machine} prices time and needs objective=time, got "
                "objective=bytes (a machine left out of the search, unchecked)"
            )
        if self.overlap_pipeline not in ("overlap", "fused"):
            raise ValueError(
                "auto-shard: overlap-pipeline must be overlap or fused, "
                f"got '{self.overlap_pipeline}'"
            )
        if self.overlap_pipeline == "fused" and self.overlap == 0:
            raise ValueError(
                "auto-shard: overlap-pipeline=fused says which passes earn overlap=C's credit "
                "and needs overlap=C > 0"
            )
        if self.overlap_tries and (self.overlap == 0 or min(self.overlap_tries) < 1):
            raise ValueError(
                "auto-shard: overlap-tries needs overlap=C > 0 and counts >= 1, got "
                f"{','.join(map(str, self.overlap_tries))}"
            )
        if self.memory < 0:
            raise ValueError(f"auto-shard: memory must be >= 0 GiB, got {self.memory}")
        if self.time_limit <= 0:
            raise ValueError(f"auto-shard: time-limit must be > 0 seconds, got {self.time_limit}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Callees first: each called function gets a transfer table (`transfer_table`), the
        functions nobody calls are searched with every call choosing its table entry, the
        tables grow where those callers wish other boundaries (`refine`), and only then is
        anything outside the tables rewritten (`settle_variants` names what was used)."""
        seeds = self.uncredited_boundaries(op)
        tables, roots, found, memo = self.plan(op, seeds)
        for f, (nodes, solution) in found.items():
            self.finish(f, nodes, solution, tables, memo.credited.get(f), memo)
        if tables:
            settle_variants(op, tables)
        if self.overlap_tries and self.objective == "time":
            from ccopt.passes.overlap_credit import annotate_chunks

            for cost in memo.costs.values():
                if cost.credit is not None:
                    annotate_chunks(op, cost.credit)

    def plan(
        self, op: ModuleOp, seeds: Sequence[tuple[str, FunctionType]] = ()
    ) -> tuple[
        dict[str, list[Variant]],
        list[func.FuncOp],
        dict[func.FuncOp, tuple[list[Node], Solution | None]],
        Memo,
    ]:
        """The transfer tables (with entries at the `seeds` boundaries too), the functions
        nobody calls and their solutions: everything `apply` writes, nothing written yet."""
        order = refuse_recursion(op)
        for f in order:
            if "kernel.results" in f.attributes:
                raise OpError(
                    f,
                    "auto-shard: the function is at the kernel level (its placements are "
                    "fixed in its buffers): run auto-shard before convert-to-kernel",
                )
        for f in order:
            if len(f.body.blocks) > 1:
                raise OpError(
                    f,
                    f"auto-shard: @{f.sym_name.data} has {len(f.body.blocks)} blocks; only "
                    "functions of one block (straight-line code) can be searched",
                )
        memo = Memo()
        targets = called(order)
        tables: dict[str, list[Variant]] = {}
        for f in order:
            if f.body.blocks and f.sym_name.data in targets:
                tables[f.sym_name.data] = self.transfer_table(f, memo, tables)
        roots = [f for f in order if f.body.blocks and f.sym_name.data not in targets]
        found = latest = {f: self.search(f, memo, tables) for f in roots}
        found, latest = self.grow(roots, found, latest, tables, memo)
        # the joint entries after the single-call refinement, which then goes on from their
        # program: added first, they changed the wishes refinement followed, and on a small
        # forward/backward/update step dp then ended dearer than without them
        added = sum(self.joint_entries(f, tables, memo) for f in roots) if tables else 0
        added += self.seed_entries(op, seeds, tables, memo)
        if added or (self.strategy == "cd" and self.joint_pays(found, memo)):
            latest = {f: self.search(f, memo, tables) for f in roots}
            if total(latest) < total(found) - 1e-12 * max(1.0, abs(total(found))):
                found = latest
            found, latest = self.grow(roots, found, latest, tables, memo, JOINT_ROUNDS)
        if tables:
            found = self.close_gap(roots, found, tables, memo)
        return tables, roots, found, memo

    def uncredited_boundaries(self, op: ModuleOp) -> list[tuple[str, FunctionType]]:
        """Under the overlap credit, the callee boundaries the search without it chooses (on a
        copy of the module): seeds for the credited tables. The credit changes what a call
        boundary is worth (a matmul's reduction pipelined inside the callee, or not), and the
        credited tables, which the joint repetitions do not grow (`repetition_relaxation`),
        missed boundaries the uncredited search finds: on GPT-3's 96-layer step its program
        cost 5.31 s with the credit, the credited search's own about 10 s. With them the credited
        search is never dearer than that program, where `dp` is exact over the tables."""
        if not (self.overlap > 0 and self.objective == "time"):
            return []
        from dataclasses import replace

        copy = clone(op)
        try:
            tables, roots, found, _ = replace(
                self, overlap=0, overlap_pipeline="overlap", overlap_tries=()
            ).plan(copy)
        except CcoptError:
            return []
        out: dict[tuple[str, FunctionType], None] = {}
        for nodes, solution in found.values():
            if solution is None:
                continue
            for n, c in zip(nodes, solution.choice, strict=True):
                signature = n.signatures[c]
                if n.primary and isinstance(n.op, func.CallOp) and signature.variant is not None:
                    name = n.op.callee.root_reference.data
                    out[(name, tables[name][signature.variant].function_type)] = None
        return list(out)

    def seed_entries(
        self,
        op: ModuleOp,
        seeds: Sequence[tuple[str, FunctionType]],
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> int:
        """Add an entry at each seed boundary (`uncredited_boundaries`); how many were new."""
        added = 0
        for name, ft in seeds:
            if name not in tables:
                continue
            callee = SymbolTable.lookup_symbol(op, name)
            assert isinstance(callee, func.FuncOp)
            before = len(tables[name])
            self.add_entry(callee, tuple(ft.inputs.data), tuple(ft.outputs.data), tables, memo)
            added += len(tables[name]) - before
        return added

    def grow(
        self,
        roots: list[func.FuncOp],
        found: dict[func.FuncOp, tuple[list[Node], Solution | None]],
        latest: dict[func.FuncOp, tuple[list[Node], Solution | None]],
        tables: dict[str, list[Variant]],
        memo: Memo,
        rounds: int | None = None,
    ) -> tuple[
        dict[func.FuncOp, tuple[list[Node], Solution | None]],
        dict[func.FuncOp, tuple[list[Node], Solution | None]],
    ]:
        """Up to `rounds` (`REFINE_ROUNDS`) rounds of `refine` from `latest`, each searching
        the roots again; the cheapest solutions seen (`found` among them) and the latest."""
        for _ in range(REFINE_ROUNDS if rounds is None else rounds):
            # the wishes of the latest solution, better or not: an entry may pay only once a
            # later round adds its neighbour's (a backward entry matching a forward one), and
            # stopping at the first round that gains nothing made the tables depend on how
            # the strategy broke ties (dp and ilp stopped at different rounds)
            if not self.refine(latest, tables, memo):
                break
            latest = {f: self.search(f, memo, tables) for f in roots}
            if total(latest) < total(found) - 1e-12 * max(1.0, abs(total(found))):
                found = latest  # more entries: never dearer for the exact strategies
        return found, latest

    def transfer_table(
        self, f: func.FuncOp, memo: Memo, tables: dict[str, list[Variant]]
    ) -> list[Variant]:
        """The called function's first entries: its own optimum with an open boundary, its
        optimum with the open boundary replicated (what a caller that keeps whole tensors
        wants), and under a memory limit a least-memory program (`least_memory`, its open
        boundary at the smallest layouts, `smallest`: a caller holding much across its calls
        can fit where the others' peaks break the limit).
        `refine` adds entries its callers ask for. The least-memory entry without a memory
        limit was measured and left out: on GPT-3's step (2 and 96 layers, bytes and time,
        dp and cd) no total got cheaper, and the 96-layer search took 1.5x to 1.9x as long."""
        entries = [self.variant(f, 0, None, None, memo, tables)]
        if self.complete_table(f, entries, memo, tables):
            return entries
        inputs = list(f.function_type.inputs.data)
        outputs = list(f.function_type.outputs.data)
        replicated = (
            [_replicated(t) for t in inputs],
            [_replicated(t) for t in outputs],
        )
        own = entries[0].function_type
        if replicated != (list(own.inputs.data), list(own.outputs.data)):
            try:
                entries.append(self.variant(f, 1, *replicated, memo, tables))
            except CcoptError:  # e.g. whole tensors break the memory limit: not an entry
                pass
        if self.memory > 0:  # without a limit: measured, no cheaper program (docstring)
            smallest = (
                [self.smallest(t, f) for t in inputs],
                [self.smallest(t, f) for t in outputs],
            )
            try:
                least = self.variant(f, len(entries), *smallest, memo, tables, least=True)
            except CcoptError:  # no program has that boundary: not an entry
                return entries
            if all(least.function_type != e.function_type or least.peak < e.peak for e in entries):
                entries.append(least)
            else:  # the own optimum is already the least peak
                self.drop(f, least.name)
        return entries

    def complete_table(
        self,
        f: func.FuncOp,
        entries: list[Variant],
        memo: Memo,
        tables: dict[str, list[Variant]],
    ) -> bool:
        """Fill `entries` (the open optimum first) with every boundary of `f` - each argument
        at each of its layouts (never partial), each result at each (partial sums too) - where
        there are at most `COMPLETE_TABLE` and the strategy is exact (dp, ilp, exhaustive) and
        no memory limit is set (under one, a call holding more than the entry's own peak may
        need a leaner program at the same boundary): the search over the tables is then the
        whole problem, exact at every boundary (`relaxed_bound` says so). Whether it did."""
        ft = f.function_type
        name, n = f.sym_name.data, len(ft.inputs.data)
        mesh = None
        each: list[tuple[Attribute, list[Signature] | None]] = []
        for k, t in enumerate((*ft.inputs.data, *ft.outputs.data)):
            if not isinstance(t, DTensorType):
                each.append((t, None))
                continue
            mesh = mesh or lookup_mesh(f, t.mesh_name)
            if mesh is None:
                return False
            each.append((t, boundary_signatures(t, mesh, k < n, memo.signatures)))
        memo.boundaries[name] = math.prod(len(s) for _, s in each if s is not None)
        if memo.boundaries[name] > COMPLETE_TABLE or self.memory > 0 or self.strategy == "cd":
            return False
        layouts = [
            [t] if s is None else [t.with_placements(g.result) for g in s]  # type: ignore[union-attr]
            for t, s in each
        ]
        known = {entries[0].function_type}
        for combo in product(*layouts):
            inputs, outputs = tuple(combo[:n]), tuple(combo[n:])
            memo.tried.add((name, inputs, outputs))
            try:
                entry = self.variant(f, len(entries), inputs, outputs, memo, tables)
            except CcoptError:  # no program has this boundary
                continue
            if entry.function_type in known:
                self.drop(f, entry.name)
                continue
            known.add(entry.function_type)
            entries.append(entry)
        memo.complete.add(name)
        return True

    @staticmethod
    def original(f: func.FuncOp) -> func.FuncOp:
        """The function a transfer table entry (`variant`) copies, whose ops the source
        locates (the copy's ops are in the same order); `f` itself otherwise."""
        name = f.sym_name.data
        if "__entry" not in name:
            return f
        found = SymbolTable.lookup_symbol(f, name.rsplit("__entry", 1)[0])
        return found if isinstance(found, func.FuncOp) else f

    @staticmethod
    def smallest(t: Attribute, f: func.FuncOp) -> Attribute:
        """`t` with its open placements at the layout holding the fewest bytes (among those the
        one splitting distinct dimensions, then the first in `argument_signatures`' order: a
        dimension split twice, batch 8 over 64 ranks, is unusable): every least-memory entry agrees on the boundary
        placements of a type, so that a weight the forward, backward and optimizer layers
        share passes between their least entries without a conversion (an optimizer updates it
        in place: it could not convert it)."""
        if not isinstance(t, DTensorType) or not t.is_open:
            return t
        mesh = lookup_mesh(f, t.mesh_name)
        assert mesh is not None

        def nested(placements: Placements) -> int:  # axes splitting a dim split already
            dims = [p.split_dim for p in placements if isinstance(p, SplitAttr)]
            return len(dims) - len(set(dims))

        layouts = argument_signatures(t, mesh)
        best = min(layouts, key=lambda s: (local_bytes(t, s.result, mesh), nested(s.result)))
        return t.with_placements(best.result)

    @staticmethod
    def drop(f: func.FuncOp, name: str) -> None:
        copy = SymbolTable.lookup_symbol(f, name)
        assert copy is not None
        copy.detach()
        copy.erase()

    def variant(
        self,
        f: func.FuncOp,
        k: int,
        inputs: Sequence[Attribute] | None,
        outputs: Sequence[Attribute] | None,
        memo: Memo,
        tables: dict[str, list[Variant]],
        least: bool = False,
    ) -> Variant:
        """Entry `k` of `f`'s transfer table: a copy of `f` beside it, searched and rewritten
        with its argument placements restricted to `inputs` and its results to `outputs`
        (None: as `f` has them); with `least`, under its least memory peak."""
        name = f"{f.sym_name.data}__entry{k}"
        copy = clone(f)
        copy.sym_name = StringAttr(name)
        block = f.parent_block()
        assert block is not None
        block.insert_op_after(copy, f)
        if outputs is not None:
            copy.function_type = FunctionType.from_lists(
                list(copy.function_type.inputs.data), list(outputs)
            )
        try:
            nodes, solution = self.search(copy, memo, tables, inputs, least)
        except CcoptError:
            copy.detach()
            copy.erase()
            raise
        bound = self.finish(copy, nodes, solution, tables, memo.credited.get(copy), memo)
        if solution is None:
            return Variant(name, copy.function_type, 0.0)
        return Variant(name, copy.function_type, solution.cost, solution.peak, bound)

    def search(
        self,
        f: func.FuncOp,
        memo: Memo,
        tables: dict[str, list[Variant]],
        inputs: Sequence[Attribute] | None = None,
        least: bool = False,
        strategy: str | None = None,
    ) -> tuple[list[Node], Solution | None]:
        """`f`'s nodes and the strategy's solution (None when nothing is a tensor); with
        `least`, the cheapest solution at the least memory peak any program of `f` reaches."""
        nodes = self.nodes(f, inputs, memo.signatures, tables)
        if not any(n.value is not None or len(n.signatures) > 1 for n in nodes):
            return nodes, None
        mesh = self.mesh_of_nodes(f, nodes)
        cost = memo.costs.get(mesh)
        if cost is None:
            cost = memo.costs[mesh] = Cost(self.objective, self.machine, mesh)
        credited: list[tuple[int, int, np.ndarray]] = []
        problem = self.problem(f, nodes, cost, mesh, memo.moves, credited)
        try:
            if least and problem.memory_limit is not None:
                solution = least_memory(problem, memo.seconds(self.time_limit))
            else:
                solution = solve(
                    problem, strategy or self.strategy, time_limit=memo.seconds(self.time_limit)
                )
        except NoSolution as e:
            if least:  # a least-memory entry is left out, not diagnosed
                raise OpError(f, f"auto-shard: {e}") from None
            least = None
            if (strategy or self.strategy) == "cd" and problem.memory_limit is not None:
                least = least_peak(problem, self.time_limit / SLICES)
            solution = self.descend_from(problem, least) if least is not None else None
            if solution is None:
                raise self.no_solution(f, nodes, problem, str(e), least) from None
        if (strategy or self.strategy) == "cd" and memo.joint:
            solution = self.joint_start(nodes, problem, solution, memo)
        if self.overlap > 0 and self.objective == "time":
            memo.credited[f] = sum(
                float(c[solution.choice[u], solution.choice[v]]) for u, v, c in credited
            ) + sum(
                n.signatures[c].shared_credit for n, c in zip(nodes, solution.choice, strict=True)
            )
        if problem.memory_limit is not None:
            solution.peak = problem.peak(solution.choice)
        memo.problems[id(solution)] = (problem, solution)
        return nodes, solution

    @staticmethod
    def descend_from(
        problem: Problem, least: tuple[float, bool, list[int] | None]
    ) -> Solution | None:
        """cd whose starts all broke the memory limit, started again from the program of the
        least peak (`least_peak`'s answer) where that fits (dp and ilp found one where cd gave
        up); None otherwise."""
        assert problem.memory_limit is not None
        peak, _, choice = least
        if choice is None or peak > problem.memory_limit * (1 + 1e-9):
            return None
        try:
            solution = coordinate_descent(problem, start=choice)
        except NoSolution:
            return None
        started = "cd: every start broke the memory limit; started from a least-peak program"
        solution.note = f"{solution.note}; {started}" if solution.note else started
        return solution

    def op_at_fault(self, f: func.FuncOp, why: str) -> OpError | None:
        """Where every combination uses a forbidden pair, the op that cannot give what its
        readers need, as propagate-placements finds it op by op (the search's error named only
        the function); None where propagation gets through."""
        module = self.original(f).parent_op()
        if not isinstance(module, ModuleOp):
            return None
        trial = clone(module)
        try:
            PropagatePlacements().apply(Context(), trial)
        except OpError as e:
            return OpError(
                e.op, f"auto-shard: {why}; here, as propagate-placements finds: {e.message}"
            )
        except CcoptError:
            return None
        finally:
            release(trial)
        return None

    def no_solution(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        problem: Problem,
        why: str,
        least: tuple[float, bool, list[int] | None] | None = None,
    ) -> CcoptError:
        """The error for a function no program of which the search found: under a memory
        limit, the least peak any program reaches (`least`, where the caller has it already)
        and the op where it is reached (the error's location) when that is over the limit."""
        capped = self.mesh_of_nodes(f, nodes).ndim > 2
        forbidden = "forbidden pair" in why
        if capped and forbidden:
            why += (
                f" among the signatures kept (on three or more mesh axes each op keeps its "
                f"first {MAX_SIGNATURES_MANY_AXES}, which can leave every program out; "
                "propagate-placements places such a mesh op by op)"
            )
        if problem.memory_limit is None:
            at_fault = self.op_at_fault(f, why) if forbidden and not capped else None
            return at_fault or OpError(f, f"auto-shard: {why}")
        limit = problem.memory_limit
        if least is None:
            least = least_peak(problem, self.time_limit / SLICES)
        peak, proven, choice = least
        if math.isinf(peak):  # no program at all, whatever the limit
            return OpError(f, f"auto-shard: {why}; no program of it is valid at any memory")
        if peak <= limit * (1 + 1e-9):
            return OpError(
                f,
                f"auto-shard: {why}; the least peak a program reaches is {size(peak)}, within "
                f"memory={self.memory:g} GiB",
            )
        at: Operation = f
        if choice is not None:
            points: list[Point] = []
            positions: list[int] = []
            mesh = self.mesh_of_nodes(f, nodes)
            self.problem(
                f,
                nodes,
                Cost(self.objective, self.machine, mesh),
                mesh,
                None,
                points=points,
                positions=positions,
            )
            full = Problem(
                problem.node_cost,
                memory=problem.memory,
                transient=problem.transient,
                conversions=problem.conversions,
                points=points,
            )
            fullest = max(range(len(points)), key=full.point_memory(choice).__getitem__)
            at = list(self.original(f).body.block.ops)[positions[fullest]]
        least = "is" if proven else "is at least"
        return OpError(
            at,
            f"auto-shard: no program of @{self.original(f).sym_name.data} fits "
            f"memory={self.memory:g} GiB "
            f"({size(limit)}): the least peak any program reaches {least} {size(peak)}, here",
        )

    def finish(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        solution: Solution | None,
        tables: dict[str, list[Variant]],
        credit: float | None = None,
        memo: Memo | None = None,
    ) -> float:
        """Rewrite `f` as solved and report: its cost and bound leave out what its calls'
        entries cost and bound (each callee reports its own), so a step's total is every
        function's cost once per run of it, and its total bound is `f`'s whole bound
        (`relaxed_bound`: over every boundary its calls could have, not only the tables'); the
        gap is the whole search's. With overlap=C the report says C and the simulated overlap
        credit (seconds) the solution took (`credit`). Returns the whole lower bound."""
        if solution is None:
            return 0.0
        searched = memo.problems.get(id(solution)) if memo is not None else None
        problem = searched[0] if searched is not None else None
        bound, note = solution.lower_bound, solution.note
        if problem is not None and tables:
            relaxed = self.relaxed_bound(f, nodes, problem, solution, tables, memo)  # type: ignore[arg-type]
            if relaxed is not None:
                bound, why = relaxed
                note = f"{note}; {why}" if note else why
        capped = capped_ops(nodes)
        if capped:
            note = f"{note}; {capped}" if note else capped
        self.rewrite(f, nodes, solution.choice, tables)
        chosen = [n.signatures[c] for n, c in zip(nodes, solution.choice, strict=True) if n.primary]
        callees = sum(s.callee_cost for s in chosen)
        floors = sum(s.callee_bound for s in chosen)
        f.attributes["auto_shard"] = DictionaryAttr(
            {
                "strategy": StringAttr(solution.strategy),
                "objective": StringAttr(self.objective),
                "cost": FloatAttr(solution.cost - callees, f64),
                "bound": FloatAttr(bound - floors, f64),
                "gap": FloatAttr(solution.cost - bound, f64),
                **({"peak": IntegerAttr(round(solution.peak), i64)} if self.memory > 0 else {}),
                **({"note": StringAttr(note)} if note else {}),
                **(
                    {
                        "overlap_chunks": IntegerAttr(self.overlap, i64),
                        "overlap_credit": FloatAttr(credit, f64),
                    }
                    if credit is not None
                    else {}
                ),
            }
        )
        return bound

    def relaxed_bound(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        problem: Problem,
        solution: Solution,
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> tuple[float, str] | None:
        """A lower bound on `f`'s cost over every boundary its calls could have, not only its
        callees' table entries (None where `f` calls no function with a table), and a note.

        The table solution's own bound is the optimum over the entries only: a boundary no
        entry has might be cheaper. Derivation: a call at boundary b costs the callee's
        optimum at b, opt(b), plus the conversions of its operands to b's argument placements
        and of b's results to what their readers read. opt(b) >= L, the callee's lower bound
        at its open boundary (entry 0: its search is over every boundary, under a memory limit
        over every program whose own peak fits - a call holds more, so fewer fit), and every
        conversion costs >= 0 (an overlap credit never pays an edge back). So each call node
        gets one more candidate, "any boundary": L on its own, on an edge into the call the
        cheapest conversion of what the producer gives to any placement the callee's argument
        may take (`entering`: a partial sum is reduced at least once), 0 on an edge out of it
        (its results may take any placement) - tied to the same candidate at the call's other
        results - and the entries keep their candidates at their own lower bounds. Every program of `f` over all boundaries costs at least one of
        this problem's choices (a call at a table boundary: that entry's candidate; elsewhere:
        the new one), and the memory limit is dropped (a relaxation too), so its optimum (dp,
        whatever the strategy) bounds them all. The candidate is tight where it matters
        least: a producer's non-partial placement is a legal argument boundary, so a call free
        to take any boundary converts nothing. Where the relaxed optimum takes no new
        candidate it equals the table optimum: the tables proved it optimal (gap 0).

        Tried and left out: a bound separable over each call's boundary placements, priced by
        the reduced costs of the callee's open LP (Lagrangian duality, valid for any
        multipliers). On the 2-layer GPT-3 step (dp=2 x tp=2, objective=time) it gained nothing
        over this one (each placement forced alone is free at the margin: the interactions are
        what costs) and took 2.5 s, the backward layer's LP unpruned. That step's true optimum
        (inlined, ilp) is 0.53196 s against this bound's 0.51001 s and the tables' 0.53851 s;
        on dp=8 x tp=8 0.1209 s against 0.0597 s and 0.1469 s: the tables, not only the
        bound, were far from it there, until the joint entries (`joint_entries`) brought
        them to 0.1234 s."""
        if id(solution) not in memo.bounds:  # close_gap bounds the roots before finish does
            memo.bounds[id(solution)] = self.relax(f, nodes, problem, solution, tables, memo)
        return memo.bounds[id(solution)]

    def relax(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        problem: Problem,
        solution: Solution,
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> tuple[float, str] | None:
        """`relaxed_bound`, not remembered."""
        import numpy as np

        from ccopt.passes.placement_search import dynamic_programming

        calls = [
            i
            for i, n in enumerate(nodes)
            if isinstance(n.op, func.CallOp) and n.signatures[0].variant is not None
        ]
        if not calls:
            return None
        wild = set(calls)
        primary = [i for i in calls if nodes[i].primary]
        node_cost = []
        for i, (n, costs) in enumerate(zip(nodes, problem.node_cost, strict=True)):
            if i not in wild:
                node_cost.append(list(costs))
                continue
            if not n.primary:
                node_cost.append([*costs, 0.0])
                continue
            entries = tables[n.op.callee.root_reference.data]  # type: ignore[union-attr]
            lowered = [
                c - s.callee_cost + s.callee_bound for c, s in zip(costs, n.signatures, strict=True)
            ]
            node_cost.append([*lowered, entries[0].floor])
        tied_pairs = set(tied(nodes))
        index = {n.value: i for i, n in enumerate(nodes) if n.value is not None}
        entered: dict[int, dict[int, np.ndarray]] = {}
        cost = memo.costs[self.mesh_of_nodes(f, nodes)]
        edges = []
        for u, v, table in problem.edges:
            t = np.asarray(table, dtype=float)
            if (u, v) in tied_pairs:
                k = t.shape[0] + 1
                edges.append((u, v, np.where(np.eye(k, dtype=bool), 0.0, math.inf)))
                continue
            if u in wild:
                t = np.vstack([t, np.zeros((1, t.shape[1]))])
            if v in wild:
                if v not in entered and nodes[v].primary:
                    entered[v] = self.entering(nodes, index, v, memo, cost)
                column = np.zeros(t.shape[0])
                least = entered.get(v, {}).get(u)
                if least is not None:
                    column[: len(least)] = least  # a wild producer's own candidate: 0
                t = np.hstack([t, column[:, None]])
            edges.append((u, v, t))
        names = sorted({nodes[i].op.callee.root_reference.data for i in primary})  # type: ignore[union-attr]
        entries = "transfer table entries: " + ", ".join(
            f"@{name} {len(tables[name])}" for name in names
        )
        if self.memory <= 0 and all(
            name in memo.complete
            and all(abs(v.floor - v.cost) <= 1e-9 * abs(v.cost) for v in tables[name])
            for name in names
        ):
            # every boundary is an entry: the search over the tables is the whole problem
            return solution.lower_bound, (
                "every callee's transfer table is complete (each boundary an entry): the "
                "search over the tables is exact over every boundary; " + entries
            )
        repeated = self.repetition_relaxation(f, nodes, node_cost, edges, tied_pairs, tables, memo)
        kind, choice = "per call", None
        if repeated is not None:  # the per-call bound left out: far below it on layer stacks
            memo.columns[id(solution)] = repeated[1]
            found, kind = repeated[0], f"per repetition ({repeated[2]} repetitions)"
        else:
            # solved exactly whatever the strategy (cd too): the calls make the relaxation a
            # chain of few candidates, a fraction of the search's own time
            exact = dynamic_programming(Problem(node_cost, edges), memo.seconds(self.time_limit))
            found, choice = exact.lower_bound, exact.choice
        sizes = [len(n.signatures) for n in nodes]
        free = 0 if choice is None else sum(1 for i in primary if choice[i] == sizes[i])
        # the per-repetition bound holds over every program whatever the search found (cd's
        # own bound only bounds the tables' optimum, and lies below it)
        bound = found if repeated is not None else min(found, solution.lower_bound)
        if solution.cost - bound <= 1e-9 * abs(solution.cost):  # relative: 1e-9 s is a lot
            return solution.cost, (
                f"bound over every boundary of the calls ({kind}): the transfer tables meet it "
                "(gap 0: proven optimal); " + entries
            )
        if kind == "per call":
            why = "bound over every boundary of the calls (per call: each callee at least its "
            why += "open optimum, conversions at calls at their least)"
            if choice is not None:
                why += f"; its optimum leaves the tables at {free} of {len(primary)} calls"
        else:
            why = f"bound over every boundary of the calls ({kind}: each repetition at its "
            why += "inlined optimum, conversions between repetitions at their least)"
        if self.strategy == "dp":  # the issue's ask: say what dp is exact over
            counts = ", ".join(f"@{n} {memo.boundaries.get(n, 0):.3g}" for n in names)
            why += (
                f"; dp is exact over the transfer tables only (boundaries per callee: {counts}; "
                f"complete tables up to {COMPLETE_TABLE}), grown by refinement, joint entries "
                "and column generation"
            )
        return bound, f"{why}; {entries}"

    def repetition_relaxation(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        node_cost: list[list[float]],
        edges: list[tuple[int, int, np.ndarray]],
        tied_pairs: set[tuple[int, int]],
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> tuple[float, list[tuple[str, tuple, tuple]], int] | None:
        """The per-repetition bound of `relaxed_bound`, the boundaries its repetitions' optima
        take (`repetition_optimum`: columns for the tables) and how many repetitions there
        are; None where `f` has none (or one cannot be inlined, or overlap=C credits edges by
        the uses a call boundary changes).

        Derivation: split `f`'s cost at any program x (every call at any boundary, at its
        callee's optimum there) into I_k(x), per repetition k, what its nodes (its calls and
        the arguments only they read) cost - the callees' optima at their boundaries, those
        arguments' own costs - and the edges into them (from inside or outside the
        repetition), and the rest E(x): the other nodes, and the edges into them. Every node
        and edge is in one part. J_k, the optimum of repetition k inlined with a node per call
        boundary (`boundary_piece`: a conversion at a call is paid once for all its readers,
        as in the call) and each value from outside a node of any layout costing 0 (its
        producer's cost is in E), is <= I_k(x) for every x: x's choices restricted to the
        repetition, the outside values at the layouts their producers give in x, are a
        program of the piece costing exactly I_k(x). E(x) is bounded as the per-call
        relaxation bounds it (the problem `relaxed_bound` builds, the nodes of repetitions at
        cost 0 and the edges into them dropped: an edge out of a call at a table entry costs
        what it costs, out of one at any other boundary at least 0). So
        sum_k J_k + min E_relaxed <= min_x (sum_k I_k(x) + E(x)), the optimum over every
        boundary. Each J_k couples a layer's forward, backward and update calls over their
        shared weights, and its saved input's readers, which the per-call relaxation lets
        each call place alone (GPT-3's 96-layer step, objective=bytes: 1528 B against a cost
        of 6499 B). What it still frees: a value passed between repetitions is at its
        producer's cheapest layout in one and at the reader's in the other."""
        if self.overlap > 0 and self.objective == "time":
            return None  # the credits depend on the uses a call boundary gathers
        groups = repetition_items(f, repetition_groups(f, tables))
        if not groups:
            return None
        from ccopt.passes.placement_search import dynamic_programming

        at: dict[int, list[int]] = {}
        for i, n in enumerate(nodes):
            key = id(n.op) if n.op is not None else id(n.value)
            at.setdefault(key, []).append(i)
        where: dict[int, int] = {}
        whole, columns = 0.0, []
        for k, (group, exclusive) in enumerate(
            zip(groups, exclusive_arguments(f, groups), strict=True)
        ):
            got = self.repetition_optimum(f, group, exclusive, memo)
            if got is None:
                return None
            whole += got[0]
            columns.extend(got[1])
            for item in (*group, *exclusive):
                for i in at.get(id(item), []):
                    where[i] = k
        rest = Problem(
            [[0.0] * len(c) if i in where else c for i, c in enumerate(node_cost)],
            [(u, v, t) for u, v, t in edges if (u, v) in tied_pairs or v not in where],
        )
        least = dynamic_programming(rest, memo.seconds(self.time_limit))
        return whole + least.lower_bound, list(dict.fromkeys(columns)), len(groups)

    def repetition_optimum(
        self, f: func.FuncOp, group: list[Operation], exclusive: list[SSAValue], memo: Memo
    ) -> tuple[float, list[tuple[str, tuple, tuple]]] | None:
        """J_k of `repetition_relaxation`: the least cost of `group`'s calls inlined, with a
        boundary node (`boundary_piece`) per call argument and result and the values from
        outside free, solved exactly (dp; ilp where too wide, its dual bound kept), and each
        call's boundary in that optimum (callee, argument and result types: a column for the
        tables). Remembered per shape of repetition (`repetition_key`): a 96-layer step has
        three (its first, middle and last layers)."""
        key = repetition_key(group, exclusive)
        if key in memo.repetitions:
            return memo.repetitions[key]
        from dataclasses import replace

        from ccopt.passes.placement_search import dynamic_programming

        memo.repetitions[key] = None
        made = boundary_piece(f, group, exclusive)
        if made is None:
            return None
        piece, markers, kept, sources, boundaries = made
        outside = {id(v) for v in sources}
        try:
            plain = replace(self, memory=0.0)  # the relaxation drops the memory limit
            nodes = plain.nodes(piece, None, memo.signatures, {})
            mesh = self.mesh_of_nodes(piece, nodes)
            cost = memo.costs.get(mesh) or memo.costs.setdefault(
                mesh, Cost(self.objective, self.machine, mesh)
            )
            for n in nodes:
                if n.op is None and id(n.value) in outside:  # any layout, its cost outside
                    n.outside = True
                    n.signatures = boundary_signatures(
                        n.value.type,  # type: ignore[union-attr, arg-type]
                        mesh,
                        False,
                        memo.signatures,
                    )
                elif id(n.op) in markers:
                    n.signatures = boundary_signatures(
                        markers[id(n.op)][1], mesh, markers[id(n.op)][0], memo.signatures
                    )
            index = {n.value: i for i, n in enumerate(nodes) if n.value is not None}
            plain.share_conversions(piece, nodes, index, cost, memo.moves)  # rows match
            rows: dict[int, list[float]] = {}
            for i, n in enumerate(nodes):
                if n.op is None and id(n.value) in outside:
                    rows[i] = [0.0] * len(n.signatures)
                elif id(n.op) in markers:
                    given, t = markers[id(n.op)]
                    rows[i] = [
                        math.inf
                        if given and any(isinstance(p, PartialAttr) for p in s.result)
                        else cost.tie_break * local_bytes(t, s.result, mesh)
                        if given
                        else 0.0
                        for s in n.signatures
                    ]
                    for a, s in enumerate(n.signatures):  # converting the marked value once
                        rows[i][a] += s.shared_cost
            for arg, t in kept:  # an argument updated in place: the callee's argument too
                i = next(i for i, n in enumerate(nodes) if n.value is arg)
                row = rows.setdefault(i, [0.0] * len(nodes[i].signatures))
                for a, sig in enumerate(nodes[i].signatures):
                    row[a] += cost.tie_break * local_bytes(t, sig.result, mesh)
            problem = plain.problem(piece, nodes, cost, mesh, memo.moves)
            for i, row in rows.items():
                if nodes[i].op is None and id(nodes[i].value) not in outside:  # and the callee's
                    row = [a + b for a, b in zip(problem.node_cost[i], row, strict=True)]
                problem.node_cost[i] = row
            solved = dynamic_programming(problem, memo.seconds(self.time_limit))
        except (CcoptError, NoSolution):
            return None
        finally:
            piece.detach()
            piece.erase()
        placed = {
            n.value: n.signatures[c].result
            for n, c in zip(nodes, solved.choice, strict=True)
            if n.value is not None
        }
        columns = []
        for name, ft, operands, results in boundaries:
            inputs = placed_types(placed, operands, ft.inputs.data)
            outputs = placed_types(placed, results, ft.outputs.data)
            columns.append((name, inputs, outputs))
        memo.repetitions[key] = (solved.lower_bound, columns)
        return memo.repetitions[key]

    def close_gap(
        self,
        roots: list[func.FuncOp],
        found: dict[func.FuncOp, tuple[list[Node], Solution | None]],
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> dict[func.FuncOp, tuple[list[Node], Solution | None]]:
        """Column generation: while a root's cost is above its bound (`relaxed_bound`), add to
        the tables the boundaries the per-repetition relaxation's optima take
        (`repetition_optimum`), search the roots again and keep the cheaper programs; at most
        `GAP_ROUNDS` rounds, ending early where the bound is met (gap 0: proven optimal) or
        no boundary is new. The cheapest solutions seen."""
        for _ in range(GAP_ROUNDS):
            columns: list[tuple[str, tuple, tuple]] = []
            for f, (nodes, solution) in found.items():
                searched = None if solution is None else memo.problems.get(id(solution))
                if searched is None:
                    continue
                got = self.relaxed_bound(f, nodes, searched[0], searched[1], tables, memo)
                if got is None or solution.cost - got[0] <= 1e-9 * abs(solution.cost):  # type: ignore[union-attr]
                    continue
                columns.extend(memo.columns.get(id(solution), []))
            added = 0
            for name, inputs, outputs in dict.fromkeys(columns):
                callee = SymbolTable.lookup_symbol(roots[0], name)
                assert isinstance(callee, func.FuncOp)
                before = len(tables[name])
                k = self.add_entry(callee, inputs, outputs, tables, memo)
                if k is not None:
                    memo.joint.setdefault(name, k)
                added += len(tables[name]) - before
            if not added:
                break
            latest = {f: self.search(f, memo, tables) for f in roots}
            if total(latest) < total(found) - 1e-12 * max(1.0, abs(total(found))):
                found = latest
        return found

    def entering(
        self, nodes: list[Node], index: dict[SSAValue, int], v: int, memo: Memo, cost: Cost
    ) -> dict[int, np.ndarray]:
        """What reaching call `v`'s operands costs at least when the call may take any
        boundary, per producer node and candidate of it: per operand, the cheapest conversion
        of what the producer gives to a placement the callee's argument may have (none
        partial: a partial sum is reduced at least once; in place, only no conversion: 0
        where the producer's placement is such a placement, else no program)."""
        call = nodes[v].op
        assert isinstance(call, func.CallOp)
        name = call.callee.root_reference.data
        if name not in memo.callees:  # once per callee: a 96-layer step has 288 calls
            callee = SymbolTable.lookup_symbol(call, call.callee)
            assert isinstance(callee, func.FuncOp)
            memo.callees[name] = (callee.function_type, updated_arguments(call))
        function_type, in_place = memo.callees[name]
        out: dict[int, np.ndarray] = {}
        for k, operand in enumerate(call.operands):
            t = function_type.inputs.data[k]
            u = index.get(operand)
            if u is None or not isinstance(t, DTensorType):
                continue
            signatures = nodes[u].signatures
            known = (id(signatures), t, k in in_place, self.overlaps(nodes[u]))
            if known not in memo.entering:  # every layer's call: the same few pairs
                key = ("argument", t, cost.mesh)
                if key not in memo.signatures:
                    memo.signatures[key] = argument_signatures(t, cost.mesh)
                goals = [s.result for s in memo.signatures[key]]
                starts = [s.result for s in signatures]
                import numpy as np

                moved = self.moves(cost, nodes[u], operand, starts, goals, k in in_place)
                for i, s in enumerate(signatures):  # the shared conversion: paid by the op
                    if s.shared is not None:
                        other = math.inf if s.only_shared else moved[i]
                        moved[i] = np.where([g == s.shared for g in goals], 0.0, other)
                memo.entering[known] = (moved.min(axis=1), signatures)  # alive: its id is key
            least = memo.entering[known][0]
            out[u] = out[u] + least if u in out else least
        return out

    def moves(
        self,
        cost: Cost,
        producer: Node,
        value: SSAValue,
        starts: list[Placements],
        goals: list[Placements],
        in_place: bool = False,
    ) -> np.ndarray:
        """Converting `value` from each of `starts` to each of `goals` (each distinct pair
        costed once); in place, only no conversion; 0 where the overlap credit may hide it."""
        import numpy as np

        if self.overlaps(producer):
            return np.zeros((len(starts), len(goals)))
        t = value.type
        assert isinstance(t, DTensorType)
        a: dict[Placements, int] = {}
        b: dict[Placements, int] = {}
        rows = np.array([a.setdefault(p, len(a)) for p in starts])
        cols = np.array([b.setdefault(p, len(b)) for p in goals])
        table = cost.matrix(t, tuple(a), tuple(b))[np.ix_(rows, cols)]
        if in_place:
            same = np.array([[p == q for q in goals] for p in starts]).reshape(table.shape)
            table = np.where(same, table, math.inf)
        return table

    def joint_entries(self, f: func.FuncOp, tables: dict[str, list[Variant]], memo: Memo) -> int:
        """Add to the tables the boundaries of `f`'s calls that a program of one repetition of
        them (`repetitions`: the calls sharing arguments of `f`, a layer's forward, backward
        and optimizer calls sharing its weights) takes jointly.

        Why: an entry is solved for one call's boundary, and `refine` changes one call's
        boundary at a time; where the best program splits the weights the three calls share
        (on GPT-3's 2-layer step at dp=8 x tp=8, objective=time: the inlined optimum 0.1209 s
        against the tables' 0.1469 s, every entry's weights replicated), changing one call
        alone costs conversions at the others, so no single wish pays. Here the repetition's
        calls are inlined into a small function of their own (`slice_function`, what they
        read from outside its arguments, their results returned), searched exactly (ilp where
        the run's strategy is, else dp: exhaustive would not scale to three layers' ops, and cd
        on GPT-3's repetition kept every weight replicated, as the tables do - before its block
        moves, and not measured since) and each call's boundary read off its solution:
        an argument at the placement its producer gives, a result at the placement its
        returned value has (a partial sum left open). Each such boundary is then solved as
        every entry is (`variant`). One repetition per distinct sequence of callees (the
        middle one: it reads what other repetitions give, not the step's inputs). How many
        entries were added."""
        added = 0
        for group in repetitions(f, tables):
            try:
                made = self.slice_function(f, group)
            except CcoptError:
                continue
            if made is None:
                continue
            piece, boundaries = made
            try:
                strategy = "ilp" if self.strategy == "ilp" else "dp"  # exact, and scales
                nodes, solution = self.search(piece, memo, tables, strategy=strategy)
            except CcoptError:  # e.g. one repetition alone breaks the memory limit
                solution = None
            if solution is not None:
                placed = {
                    n.value: n.signatures[c].result
                    for n, c in zip(nodes, solution.choice, strict=True)
                    if n.value is not None
                }
                for call, operands, results in boundaries:
                    name = call.callee.root_reference.data
                    callee = SymbolTable.lookup_symbol(f, name)
                    assert isinstance(callee, func.FuncOp)
                    ft = callee.function_type
                    inputs = placed_types(placed, operands, ft.inputs.data)
                    outputs = placed_types(placed, results, ft.outputs.data)
                    before = len(tables[name])
                    k = self.add_entry(callee, inputs, outputs, tables, memo)
                    if k is not None:
                        memo.joint.setdefault(name, k)
                    added += len(tables[name]) - before
            memo.problems = {k: v for k, v in memo.problems.items() if v[1] is not solution}
            memo.bounds.pop(id(solution), None)  # its id may be reused once it is freed
            memo.columns.pop(id(solution), None)
            memo.credited.pop(piece, None)
            piece.detach()
            piece.erase()
        return added

    def joint_pays(
        self, found: dict[func.FuncOp, tuple[list[Node], Solution | None]], memo: Memo
    ) -> bool:
        """Whether coordinate descent from the joint entries (`joint_start`) improves a
        root's program where no joint entry is new (their boundaries were in the tables):
        only then are the roots searched again (a 96-layer step's search costs a second)."""
        for nodes, solution in found.values():
            if solution is None or id(solution) not in memo.problems:
                continue
            problem = memo.problems[id(solution)][0]
            if self.joint_start(nodes, problem, solution, memo) is not solution:
                return True
        return False

    @staticmethod
    def joint_start(
        nodes: list[Node], problem: Problem, solution: Solution, memo: Memo
    ) -> Solution:
        """Coordinate descent once more, from `solution` with every call of a callee that has
        a joint entry at that entry, all at once (the sweep then moves the arguments to what
        those entries read): cd changes one node at a time, and moving one call of a
        repetition alone to its joint entry costs the conversions the others' entries
        avoid. The cheaper of the two, at the first's bound."""
        from ccopt.passes.placement_search import coordinate_descent

        start = list(solution.choice)
        moved = False
        for i, n in enumerate(nodes):
            if isinstance(n.op, func.CallOp) and n.signatures[0].variant is not None:
                k = memo.joint.get(n.op.callee.root_reference.data)
                if k is not None and k < len(n.signatures) and start[i] != k:
                    start[i], moved = k, True
        if not moved:
            return solution
        try:
            other = coordinate_descent(problem, start=start)
        except NoSolution:
            return solution
        if other.cost >= solution.cost - 1e-12 * abs(solution.cost):
            return solution
        other.lower_bound = min(solution.lower_bound, other.cost)
        other.note = solution.note
        return other

    def add_entry(
        self,
        f: func.FuncOp,
        inputs: tuple[Attribute, ...],
        outputs: tuple[Attribute, ...],
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> int | None:
        """Solve `f` at this boundary and add it to its table unless the table has the
        boundary it ends at; that entry's index (None: tried already, or no program has it)."""
        name = f.sym_name.data
        if (name, inputs, outputs) in memo.tried:
            return None
        memo.tried.add((name, inputs, outputs))
        try:
            entry = self.variant(f, len(tables[name]), inputs, outputs, memo, tables)
        except CcoptError:  # no program has this boundary
            return None
        known = [v.function_type for v in tables[name]]
        if entry.function_type in known:
            self.drop(f, entry.name)
            return known.index(entry.function_type)
        tables[name].append(entry)
        return len(known)

    @staticmethod
    def slice_function(
        f: func.FuncOp, group: list[func.CallOp]
    ) -> tuple[func.FuncOp, list[tuple[func.CallOp, list[SSAValue], list[SSAValue]]]] | None:
        """A function of `group`'s calls inlined (inserted after `f`): what they read from
        outside are its arguments, every result of theirs is returned; per call, the values
        its operands and results became. None where a callee updates a value that is not an
        argument here (an update's target must be one)."""
        from xdsl.ir import Block, Region

        inside = {r for call in group for r in call.results}
        outer: list[SSAValue] = []
        for call in group:
            outer.extend(v for v in call.operands if v not in inside and v not in outer)
        block = Block(arg_types=[v.type for v in outer])
        mapped: dict[SSAValue, SSAValue] = dict(zip(outer, block.args, strict=True))
        boundaries = []
        returned: list[SSAValue] = []
        for call in group:
            callee = SymbolTable.lookup_symbol(f, call.callee)
            if not isinstance(callee, func.FuncOp) or len(callee.body.blocks) != 1:
                return None
            operands = [mapped[v] for v in call.operands]
            inner: dict[SSAValue, SSAValue] = dict(
                zip(callee.body.block.args, operands, strict=True)
            )
            results: list[SSAValue] = []
            for op in callee.body.block.ops:
                if isinstance(op, func.ReturnOp):
                    results = [inner.get(v, v) for v in op.operands]
                    break
                if isinstance(op, UpdateOp) and inner.get(op.target) not in block.args:
                    return None
                block.add_op(op.clone(value_mapper=inner))
            mapped.update(zip(call.results, results, strict=True))
            returned.extend(results)
            boundaries.append((call, operands, results))
        block.add_op(func.ReturnOp(*returned))
        piece = func.FuncOp(
            f"{f.sym_name.data}__joint",
            FunctionType.from_lists([v.type for v in outer], [v.type for v in returned]),
            Region(block),
        )
        parent = f.parent_block()
        assert parent is not None
        parent.insert_op_after(piece, f)
        return piece, boundaries

    def refine(
        self,
        found: dict[func.FuncOp, tuple[list[Node], Solution | None]],
        tables: dict[str, list[Variant]],
        memo: Memo,
    ) -> bool:
        """Grow each callee's table with the boundaries its callers wish: where a call's
        operand is produced, or its result read, at another placement than the chosen entry
        has (a conversion the caller pays per call), the callee solved with its arguments at
        the producers' placements (results open), or its results at the readers' (arguments
        open) - each solution an exact entry for the boundary it ends at. The most frequent
        wishes first, at most `ENTRIES_PER_ROUND` new boundaries per callee; whether any was
        added."""
        wishes: dict[str, Counter] = {}
        for f, (nodes, solution) in found.items():
            if solution is not None:
                for name, wish in call_wishes(f, nodes, solution.choice, tables):
                    wishes.setdefault(name, Counter())[wish] += 1
        added = False
        for name, counted in wishes.items():
            known = {v.function_type for v in tables[name]}
            fresh = 0
            for (inputs, outputs), _ in counted.most_common():
                if fresh == ENTRIES_PER_ROUND or (name, inputs, outputs) in memo.tried:
                    continue
                memo.tried.add((name, inputs, outputs))
                f = SymbolTable.lookup_symbol(next(iter(found)), name)
                assert isinstance(f, func.FuncOp)
                try:
                    entry = self.variant(f, len(tables[name]), inputs, outputs, memo, tables)
                except CcoptError:  # no program has this boundary
                    continue
                if entry.function_type in known:  # the wish ends at a boundary known already
                    copy = SymbolTable.lookup_symbol(f, entry.name)
                    assert copy is not None
                    copy.detach()
                    copy.erase()
                    continue
                known.add(entry.function_type)
                tables[name].append(entry)
                added, fresh = True, fresh + 1
        return added

    def nodes(
        self,
        f: func.FuncOp,
        inputs: Sequence[Attribute] | None = None,
        signatures: dict[tuple, list[Signature]] | None = None,
        tables: dict[str, list[Variant]] | None = None,
    ) -> list[Node]:
        """The search's nodes; `inputs` (a transfer table's boundary) replaces the argument
        types the candidates agree with, `tables` gives the calls their callees' entries."""
        block = f.body.block
        out: list[Node] = []
        signatures = {} if signatures is None else signatures
        meshes: dict[str, Mesh | None] = {}  # a step has thousands of arguments, one mesh
        for i, arg in enumerate(block.args):
            if isinstance(arg.type, DTensorType):
                name = arg.type.mesh_name
                if name not in meshes:
                    meshes[name] = lookup_mesh(f, name)
                mesh = meshes[name]
                if mesh is None:
                    raise OpError(f, f"@{arg.type.mesh_name} is not declared")
                t = arg.type if inputs is None else inputs[i]
                assert isinstance(t, DTensorType)
                key = ("argument", t, mesh)
                if key not in signatures:
                    signatures[key] = argument_signatures(t, mesh)
                out.append(Node(None, arg, signatures[key]))
        for op in block.ops:
            if isinstance(op, func.CallOp):
                out.extend(call_nodes(op, tables or {}, signatures))
            elif isinstance(op, UpdateOp):
                continue  # an edge from the value to the argument it updates (problem())
            elif (
                isinstance(op, DTensorOp)
                and not op.operands
                and len(op.results) == 1
                and isinstance(op.results[0].type, DTensorType)
            ):  # a constant: made locally in any unreduced layout, like an argument
                t = op.results[0].type
                out.append(Node(op, op.results[0], argument_signatures(t, mesh_of(op))))
            elif (
                isinstance(op, DTensorOp | coll.CollectiveOp)
                and len(op.operands) >= 1
                and len(op.results) == 1
            ):
                key = (
                    mesh_of(op),
                    op.name,
                    tuple(v.type for v in op.operands),
                    op.results[0].type,
                    tuple(sorted(op.properties.items())),
                )
                if key not in signatures:  # repeated layers: one enumeration per kind of op
                    signatures[key] = op_signatures(op, mesh_of(op))
                out.append(Node(op, op.results[0], signatures[key]))
            elif not isinstance(op, func.ReturnOp) and any(
                isinstance(v.type, DTensorType) for v in (*op.operands, *op.results)
            ):
                raise OpError(
                    op, "auto-shard: only dtensor ops and one-input collectives can be searched"
                )
        return out

    @staticmethod
    def mesh_of_nodes(f: func.FuncOp, nodes: list[Node]) -> Mesh:
        valued = [n for n in nodes if n.value is not None]
        t = valued[0].value.type  # type: ignore[union-attr]
        assert isinstance(t, DTensorType)
        names = {n.value.type.mesh_name for n in valued}  # type: ignore[union-attr]
        if len(names) != 1:
            raise OpError(f, f"auto-shard: one mesh per function, got {sorted(names)}")
        mesh = lookup_mesh(f, t.mesh_name)
        assert mesh is not None
        return mesh

    def problem(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        cost: Cost,
        mesh: Mesh,
        moves: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, object]] | None = None,
        credited: list[tuple[int, int, np.ndarray]] | None = None,
        points: list[Point] | None = None,
        positions: list[int] | None = None,
    ) -> Problem:
        """The search problem of `f`'s nodes: node costs, edge tables (conversions, less the
        simulated overlap credit where a matmul's reduction is pipelined: appended to `credited`
        per edge) and memory rows; `points` (a list) receives every program point of the memory
        peak, before `maximal_points` drops those another point contains, and `positions` the
        position of each one's op in `f`'s body."""
        import numpy as np

        index = {n.value: i for i, n in enumerate(nodes) if n.value is not None}
        pipelined = self.pipelined(nodes, index)
        # compute where the objective has it, a written collective's own traffic; ties go to
        # the layout holding fewer bytes (an argument's local size, weighted so lightly that it
        # never outweighs a real cost)
        moves = {} if moves is None else moves
        self.share_conversions(f, nodes, index, cost, moves)
        node_cost = [own_costs(n, i in pipelined, cost, mesh, moves) for i, n in enumerate(nodes)]
        tables: dict[tuple[int, int], np.ndarray] = {}
        held = Held(f) if self.memory > 0 else None
        updates: dict[Attribute, set[int]] = {}  # per callee: a layer is called 96 times
        for v, node in enumerate(nodes):
            if node.op is None or not node.primary:
                continue
            if isinstance(node.op, func.CallOp):
                in_place = updates.get(node.op.callee)
                if in_place is None:
                    in_place = updates[node.op.callee] = updated_arguments(node.op)
            else:
                in_place = set()
            for k, operand in enumerate(node.op.operands):
                u = index.get(operand)
                if u is None:
                    continue
                t = operand.type
                assert isinstance(t, DTensorType)
                key = (id(nodes[u].signatures), id(node.signatures), k, t)
                if key not in moves:  # shared by every repetition of the same op pair
                    moves[key] = (
                        *conversion_table(
                            t, nodes[u].signatures, node.signatures, k, cost, held is not None
                        ),
                        (nodes[u].signatures, node.signatures),  # alive: their ids are the key
                    )
                moved, differs, holds, _ = moves[key]
                if k in in_place:
                    moved = np.where(differs, math.inf, moved)  # the callee's storage as it is
                elif held is not None:
                    if isinstance(node.op, func.CallOp):  # the converted copy is the callee's
                        held.add(node.op, u, v, holds, before=True)
                        holds = held.source(operand, node.op, differs, nodes[u], t, mesh)
                    held.add(node.op, u, v, holds)
                if v in pipelined:
                    moved = moved + np.array(
                        [collective_cost(node.op, sv, cost) for sv in node.signatures]
                    )
                if self.overlaps(nodes[u]) or self.gathers(node):
                    rival = self.rival(node, k, index, nodes)
                    reader = self.fused_reader_key(node, v in pipelined)
                    ckey = ("credit", *key, v in pipelined, id(rival), reader)
                    if ckey not in moves:  # for every pair a conversion allows, in place or not
                        moves[ckey] = (
                            self.edge_credits(
                                nodes[u], node, k, v in pipelined, moves[key][0], cost, rival
                            ),
                            None,
                            None,
                            (nodes[u].signatures, node.signatures, rival),
                        )
                    credit = moves[ckey][0]
                    charged = np.maximum(moved - credit, 0.0)  # an edge never pays back
                    if credited is not None:
                        credited.append((u, v, np.minimum(credit, moved)))
                    moved = charged
                if (u, v) in tables:
                    tables[(u, v)] = tables[(u, v)] + moved
                else:
                    tables[(u, v)] = moved
        for u, v in tied(nodes):  # a call's results come from the same table entry
            k = len(nodes[u].signatures)
            tables[(u, v)] = np.where(np.eye(k, dtype=bool), 0.0, math.inf)
        self.update_costs(f, nodes, index, tables, cost, held, credited)
        self.return_costs(f, nodes, index, node_cost, cost, held, credited)
        problem = Problem(node_cost, [(u, v, t) for (u, v), t in tables.items()])
        if held is not None:
            problem.memory = [
                [
                    0.0 if n.value is None else local_bytes(n.value.type, s.result, mesh)  # type: ignore[arg-type]
                    for s in n.signatures
                ]
                for n in nodes
            ]
            problem.memory_limit = self.memory * 1024**3
            problem.transient = [
                [s.callee_peak if n.primary else 0.0 for s in n.signatures] for n in nodes
            ]
            problem.conversions = held.conversions
            every = live_points(f, nodes, held.at, held.before, positions)
            if points is not None:
                points.extend(every)
            problem.points = maximal_points(every)
        return problem

    def fused_reader_key(self, consumer: Node, pipelined: bool) -> tuple | None:
        """What of the elementwise reader that `credits` fuses under `overlap-pipeline=fused`
        the simulation sees - a written reduction's reader, or the consumer itself -: part of
        the credit's cache key, since ops alike in type share their signature lists but not
        their readers, nor a fused op its body."""
        if self.overlap_pipeline != "fused":
            return None
        from ccopt.passes.overlap_credit import consumer_key, fusable_reader, fused_reader

        if not pipelined:
            return consumer_key(consumer.op) if fusable_reader(consumer.op) else None
        reader = fused_reader(consumer.op)  # type: ignore[arg-type]
        return None if reader is None else (reader.key(), reader.operands, reader.result)

    def overlaps(self, producer: Node) -> bool:
        """Whether the `overlap` pass may pipeline this matmul with the reduction of its
        result: overlap is on, and the result has one use (the pass leaves a matmul whose
        result feeds several ops as it is)."""
        return (
            self.overlap > 0
            and self.objective == "time"
            and isinstance(producer.op, MatmulOp)
            and producer.value is not None
            and producer.value.uses.get_length() == 1
        )

    def gathers(self, consumer: Node) -> bool:
        """Whether the `overlap` pass may pipeline an all-gather converting an operand with
        this matmul (AxoNN's OAG): overlap is on and the consumer is a matmul."""
        return self.overlap > 0 and self.objective == "time" and isinstance(consumer.op, MatmulOp)

    def rival(
        self, consumer: Node, k: int, index: dict[SSAValue, int], nodes: list[Node]
    ) -> list[Signature] | None:
        """For a matmul's operand k, the signatures of the node producing its other operand:
        the placements that operand can come in at, so operand k's OAG credit is given only
        where the pass pipelines k's gather whatever the other brings (`gather_wins`). None:
        not a matmul, or the other operand is no node (any placement is assumed)."""
        if not isinstance(consumer.op, MatmulOp):
            return None
        u = index.get(consumer.op.operands[1 - k])
        return None if u is None else nodes[u].signatures

    def edge_credits(
        self,
        producer: Node,
        consumer: Node,
        k: int,
        pipelined: bool,
        allowed: np.ndarray,
        cost: Cost,
        rival: list[Signature] | None = None,
    ) -> np.ndarray:
        """The simulated credit per pair of signatures on one edge: the reduction of a matmul's
        result pipelined with it (`credits`) and an all-gather into a matmul's operand
        pipelined with it (`gather_credits`); a pair has at most one (the overlap pass chunks
        a matmul with one collective, and `gather_table` credits no partial result)."""
        import numpy as np

        out = np.zeros(allowed.shape)
        if self.overlaps(producer):
            out = out + self.credits(producer, consumer, k, pipelined, allowed, cost)
        if self.gathers(consumer):
            out = out + self.gather_credits(producer, consumer, k, allowed, cost, rival)
        return out

    def gather_credits(
        self,
        producer: Node,
        consumer: Node,
        k: int,
        allowed: np.ndarray,
        cost: Cost,
        rival: list[Signature] | None = None,
    ) -> np.ndarray:
        """The simulated OAG credit (`OverlapCredit.gather_table`) per pair of the producer's
        and the matmul's signatures, each distinct pair simulated once; 0 where the conversion
        table has none (inf)."""
        import numpy as np

        mm = consumer.op
        assert isinstance(mm, MatmulOp)
        starts: dict[Placements, int] = {}
        rows = np.array([starts.setdefault(su.result, len(starts)) for su in producer.signatures])
        sigs: dict[tuple, int] = {}
        cols = np.array(
            [
                sigs.setdefault(
                    (tuple(p for p in sv.operands if p is not None), sv.result), len(sigs)
                )
                for sv in consumer.signatures
            ]
        )
        needed = np.zeros((len(starts), len(sigs)), dtype=bool)
        a, b = np.nonzero(np.isfinite(allowed))
        needed[rows[a], cols[b]] = True
        small = cost.overlap_credit(
            self.overlap, self.overlap_pipeline, self.overlap_tries
        ).gather_table(
            mm,
            k,
            list(starts),
            list(sigs),
            needed,
            None if rival is None else list(dict.fromkeys(s.result for s in rival)),
        )
        return np.where(np.isfinite(allowed), small[np.ix_(rows, cols)], 0.0)

    def credits(
        self,
        producer: Node,
        consumer: Node,
        k: int,
        pipelined: bool,
        allowed: np.ndarray,
        cost: Cost,
    ) -> np.ndarray:
        """The simulated overlap credit (`ccopt.passes.overlap_credit`) per pair of the
        matmul's and the consumer's signatures: for a matmul result reduced on some axis (a
        partial result) and converted to what the consumer reads (a written collective
        consumer: and reduced by it), the step time of the pair's program before minus after
        `overlap{chunks=C}`; 0 where nothing is reduced or the conversion table (`allowed`) has
        no conversion for the pair (inf: never simulated)."""
        import numpy as np

        mm = producer.op
        assert isinstance(mm, MatmulOp)
        starts: dict[tuple, int] = {}  # many signatures share their placements: each once
        rows = np.array(
            [
                starts.setdefault((su.operands, su.result), len(starts))
                if any(isinstance(p, PartialAttr) for p in su.result)
                else -1
                for su in producer.signatures
            ]
        )
        credit = np.zeros(allowed.shape)
        if not starts:
            return credit
        from ccopt.passes.overlap_credit import Reader, fusable_reader, fused_reader

        fused = self.overlap_pipeline == "fused" and not pipelined and fusable_reader(consumer.op)
        written = None  # a written reduction's placed elementwise reader, fused with it
        if self.overlap_pipeline == "fused" and pipelined:
            written = fused_reader(consumer.op)  # type: ignore[arg-type]
            if written is not None and any(
                isinstance(p, OpenAttr)
                for placed in (*written.operands, written.result)
                for p in placed or ()
            ):
                written = None  # its placements are still being chosen: credited unfused
        goals: dict[tuple, int] = {}
        cols = np.array(
            [
                goals.setdefault(
                    (sv.operands[k], sv.result if pipelined else None)
                    if not fused
                    else (sv.operands[k], (sv.operands, sv.result)),
                    len(goals),
                )
                for sv in consumer.signatures
            ]
        )
        have = rows >= 0
        needed = np.zeros((len(starts), len(goals)), dtype=bool)
        a, b = np.nonzero(np.isfinite(allowed) & have[:, None])
        needed[rows[a], cols[b]] = True  # forbidden pairs (inf) are never simulated
        small = cost.overlap_credit(self.overlap, self.overlap_pipeline, self.overlap_tries).table(
            mm,
            [([p for p in ops if p is not None], result) for ops, result in starts],
            [goal for goal, _ in goals],
            consumer.op if pipelined else None,
            [final for _, final in goals] if pipelined else None,
            needed,
            [Reader(consumer.op, k, *read) for _, read in goals]  # type: ignore[arg-type]
            if fused
            else [written] * len(goals)
            if written is not None
            else None,
        )
        credit[have] = small[np.ix_(rows[have], cols)]
        return np.where(np.isfinite(allowed), credit, 0.0)

    def pipelined(self, nodes: list[Node], index: dict[SSAValue, int]) -> set[int]:
        """Written collectives that reduce a matmul's result directly: their traffic is charged
        on the edge from the matmul, where the overlap credit applies."""
        if self.overlap == 0 or self.objective != "time":
            return set()
        return {
            v
            for v, n in enumerate(nodes)
            if isinstance(n.op, coll.CollectiveOp)
            and (u := index.get(n.op.operands[0])) is not None
            and isinstance(nodes[u].op, MatmulOp)
        }

    def share_conversions(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        index: dict[SSAValue, int],
        cost: Cost,
        moves: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, object]],
    ) -> None:
        """Give each op or argument whose value several operands may read at one placement the
        choice of converting it there once (`Signature.shared`), so that an all-reduce feeding
        three reads, or a weight's all-gather read by the forward and the backward matmul, is
        paid once, as the program `rewrite` writes pays it: the candidates grow by one copy per
        such placement, costing the conversion. Not under a memory limit: there each reader's
        conversion lives only while that reader runs, as `Held` counts it. Not for a value from
        outside a repetition's piece (`Node.outside`), nor a call's results (their candidates
        are the callee's table entries, by index). The enlarged lists are remembered in `moves`
        per signature list and goals, so every repetition of a layer shares them (and the edge
        tables keyed by their ids)."""
        if self.memory > 0:
            return
        slots = reader_goals(f, nodes, index, moves)
        for u, goal_sets in slots.items():
            node = nodes[u]
            if (
                len(goal_sets) < 2
                or node.outside
                or isinstance(node.op, func.CallOp)
                or ("enlarged", id(node.signatures)) in moves
                or self.overlaps(node)
            ):
                continue
            counts = Counter(g for goals in goal_sets for g in goals)
            common = frozenset(g for g, n in counts.items() if n >= 2)
            t = node.value.type  # type: ignore[union-attr]
            key = ("shared", id(node.signatures), t, common)
            if key not in moves:
                enlarged = with_shared(node, common, t, cost, self.shared_credits(node, cost))
                if len(enlarged) == len(node.signatures):
                    enlarged = node.signatures  # nothing worth sharing
                else:
                    moves[("enlarged", id(enlarged))] = (None, None, None, enlarged)  # type: ignore[assignment]
                moves[key] = (enlarged, None, None, node.signatures)  # type: ignore[assignment]
            node.signatures = moves[key][0]  # type: ignore[assignment]

    def return_credits(self, node: Node, goal: Placements, cost: Cost) -> list[float]:
        """Per signature of a matmul whose one use is the return (or an in-place update),
        what `overlap` saves pipelining it with the reduction of its partial result to `goal`,
        the placement returned (or stored): as on an edge, the pass pipelines the collective
        wherever the conversion is written."""
        if not self.overlaps(node):
            return [0.0] * len(node.signatures)
        credits = cost.overlap_credit(self.overlap, self.overlap_pipeline, self.overlap_tries)
        out = []
        for s in node.signatures:
            if s.result == goal or not any(isinstance(p, PartialAttr) for p in s.result):
                out.append(0.0)
                continue
            operands = [p for p in s.operands if p is not None]
            out.append(credits.credit(node.op, operands, s.result, goal))  # type: ignore[arg-type]
        return out

    def shared_credits(self, node: Node, cost: Cost) -> OverlapCredit | None:
        """The simulated credits of pipelining a matmul with its result's shared conversion,
        where the search credits overlap (`with_shared`)."""
        if self.overlap > 0 and self.objective == "time" and isinstance(node.op, MatmulOp):
            return cost.overlap_credit(self.overlap, self.overlap_pipeline, self.overlap_tries)
        return None

    def update_costs(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        index: dict[SSAValue, int],
        tables: dict[tuple[int, int], np.ndarray],
        cost: Cost,
        held: Held | None = None,
        credited: list[tuple[int, int, np.ndarray]] | None = None,
    ) -> None:
        """An in-place update stores its value at the placement of the argument it updates:
        an edge from the value to the argument, costing the conversion (whose output `held`
        counts at the update), less the overlap credit where it reduces a matmul's result the
        update alone reads (`return_credits`; appended to `credited`), plus the update's own
        copy at the argument's layout (`Cost.compute`: a replicated weight is copied whole)."""
        for op in f.body.block.ops:
            if not isinstance(op, UpdateOp):
                continue
            u, v = index.get(op.value), index.get(op.target)
            if u is None or v is None:
                continue
            t = op.value.type
            assert isinstance(t, DTensorType)
            import numpy as np

            moved = np.array(
                [
                    [
                        0.0
                        if su.shared == sv.result
                        else math.inf
                        if su.only_shared
                        else cost.conversion(t, su.result, sv.result)
                        for sv in nodes[v].signatures
                    ]
                    for su in nodes[u].signatures
                ]
            )
            if self.overlaps(nodes[u]):
                goals = list(dict.fromkeys(sv.result for sv in nodes[v].signatures))
                per_goal = {g: self.return_credits(nodes[u], g, cost) for g in goals}
                credit = np.array(
                    [
                        [per_goal[sv.result][a] for sv in nodes[v].signatures]
                        for a in range(len(nodes[u].signatures))
                    ]
                )
                saved = np.minimum(credit, moved)
                moved = moved - np.where(np.isfinite(moved), saved, 0.0)
                if credited is not None:
                    credited.append((u, v, np.where(np.isfinite(saved), saved, 0.0)))
            # the update's copy into the argument's storage, at the argument's layout
            moved = moved + np.array(
                [
                    cost.compute(op, Signature((sv.result, sv.result), ()))
                    for sv in nodes[v].signatures
                ]
            )
            tables[(u, v)] = tables[(u, v)] + moved if (u, v) in tables else moved
            if held is not None:
                holds = np.array(
                    [
                        [cost.held(t, su.result, sv.result) for sv in nodes[v].signatures]
                        for su in nodes[u].signatures
                    ]
                )
                held.add(op, u, v, holds)

    def return_costs(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        index: dict[SSAValue, int],
        node_cost: list[list[float]],
        cost: Cost,
        held: Held | None = None,
        credited: list[tuple[int, int, np.ndarray]] | None = None,
    ) -> None:
        """A value returned with a concrete function result type pays its conversion there
        (and `held` counts its output at the return), less the overlap credit where it reduces
        a matmul's result the return alone reads (`return_credits`; appended to `credited` as
        a diagonal)."""
        import numpy as np

        ret = f.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        for v, t in zip(ret.operands, f.function_type.outputs.data, strict=True):
            u = index.get(v)
            if u is None or not isinstance(t, DTensorType) or t.is_open:
                continue
            credits = self.return_credits(nodes[u], t.placement_list, cost)
            saved = []
            for a, s in enumerate(nodes[u].signatures):
                moved = 0.0
                if s.shared != t.placement_list:
                    moved = (
                        math.inf
                        if s.only_shared
                        else cost.conversion(t, s.result, t.placement_list)
                    )
                saved.append(min(credits[a], moved))
                node_cost[u][a] += moved - saved[a]
            if credited is not None and any(saved):
                credited.append((u, u, np.diag(saved)))
            if held is not None:
                holds = [cost.held(t, s.result, t.placement_list) for s in nodes[u].signatures]
                held.add(ret, u, None, holds)

    def rewrite(
        self,
        f: func.FuncOp,
        nodes: list[Node],
        choice: list[int],
        tables: dict[str, list[Variant]] | None = None,
    ) -> None:
        """`f` with the chosen signatures, conversions where they disagree, and every call of
        a function with a transfer table calling the chosen entry's copy."""
        state = FunctionPlacer(f, Rewriter(), {}, {})
        mesh = self.mesh_of_nodes(f, nodes)
        shared = SharedConversions(state, mesh)
        for node, c in zip(nodes, choice, strict=True):
            signature = node.signatures[c]
            if node.op is None:
                t = node.value.type
                assert isinstance(t, DTensorType)
                value = node.value
                if t.placement_list != signature.result:  # the function type: once, below
                    value = state.rewriter.replace_value_with_new_type(
                        value, t.with_placements(signature.result)
                    )
                if signature.shared is not None:
                    shared.offer(value, signature.shared, None)
                continue
            op = node.op
            if node.primary and signature.variant is not None:
                assert isinstance(op, func.CallOp) and tables is not None
                entry = tables[op.callee.root_reference.data][signature.variant]
                op.properties["callee"] = SymbolRefAttr(entry.name)
            if node.primary:
                for i, goal in enumerate(signature.operands):
                    if goal is not None:
                        op.operands[i] = shared.reach(op.operands[i], goal, op)
            if node.value is None:
                continue
            result = node.value
            t = result.type
            assert isinstance(t, DTensorType)
            if t.placement_list != signature.result:
                result = state.rewriter.replace_value_with_new_type(
                    result, t.with_placements(signature.result)
                )
            if signature.shared is not None:
                shared.offer(result, signature.shared, op)
        f.function_type = FunctionType.from_lists(
            [a.type for a in f.body.block.args], list(f.function_type.outputs.data)
        )
        for op in list(f.body.block.ops):
            if isinstance(op, UpdateOp):
                goal = op.target.type.placement_list  # type: ignore[union-attr]
                op.operands[1] = shared.reach(op.value, goal, op)
        ret = f.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            for i, (v, t) in enumerate(
                zip(ret.operands, f.function_type.outputs.data, strict=True)
            ):
                if isinstance(t, DTensorType) and not t.is_open:
                    ret.operands[i] = shared.reach(v, t.placement_list, ret)
            state.place_return(ret)
        # no verification here: the pipeline verifies the module after every pass (a function
        # of a 96-layer step verified twice cost seconds)


class SharedConversions:
    """`rewrite`'s conversions of values whose chosen signature converts them once
    (`Signature.shared`): the conversion written right after the producer (an argument's:
    before its first reader), at its first read there, and every read there takes it; other
    reads convert before the reader."""

    def __init__(self, state: FunctionPlacer, mesh: Mesh) -> None:
        self.state, self.mesh = state, mesh
        self.offers: dict[SSAValue, tuple[Placements, Operation]] = {}
        self.made: dict[SSAValue, SSAValue] = {}
        self.positions: dict[Operation, int] | None = None

    def offer(self, value: SSAValue, goal: Placements, producer: Operation | None) -> None:
        """`producer` None: `value` is an argument, offered before `rewrite` converts any of
        its reads (its readers are still the program's own ops)."""
        self.offers[value] = (goal, producer if producer is not None else self.first_reader(value))

    def first_reader(self, argument: SSAValue) -> Operation:
        """The op of the function's block reading `argument` first (an op inside a region
        counts as the op holding it)."""
        block = self.state.f.body.block
        if self.positions is None:
            self.positions = {op: i for i, op in enumerate(block.ops)}
        readers = (block.find_ancestor_op_in_block(use.operation) for use in argument.uses)
        return min((op for op in readers if op is not None), key=self.positions.__getitem__)

    def reach(self, value: SSAValue, goal: Placements, reader: Operation) -> SSAValue:
        offered = self.offers.get(value)
        if offered is None or offered[0] != goal:
            return self.state.reach(value, goal, self.mesh, reader)
        made = self.made.get(value)
        if made is None:
            made = self.made[value] = self.convert_once(value, goal, offered[1])
        return made

    def convert_once(self, value: SSAValue, goal: Placements, at: Operation) -> SSAValue:
        """An op's result converted right after it; an argument's before its first reader."""
        if isinstance(value, BlockArgument):
            return self.state.reach(value, goal, self.mesh, at)
        return self.state.reach_after(value, goal, self.mesh, at)


def reader_goals(
    f: func.FuncOp,
    nodes: list[Node],
    index: dict[SSAValue, int],
    moves: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, object]],
) -> dict[int, list[frozenset[Placements]]]:
    """Per producer node, the placements each read of its value may take: an op's or call's
    operand (its signatures'), an update's target (the argument's), a concrete result of the
    function. The sets are remembered per signature list and operand in `moves`."""
    out: dict[int, list[frozenset[Placements]]] = {}
    for node in nodes:
        if node.op is None or not node.primary:
            continue
        for k, operand in enumerate(node.op.operands):
            u = index.get(operand)
            if u is None:
                continue
            key = ("reads", id(node.signatures), k)
            if key not in moves:
                goals = frozenset(s.operands[k] for s in node.signatures)
                moves[key] = (goals - {None}, None, None, node.signatures)  # type: ignore[assignment]
            out.setdefault(u, []).append(moves[key][0])  # type: ignore[arg-type]
    for op in f.body.block.ops:
        if isinstance(op, UpdateOp):
            u, v = index.get(op.value), index.get(op.target)
            if u is not None and v is not None:
                out.setdefault(u, []).append(frozenset(s.result for s in nodes[v].signatures))
    ret = f.body.block.last_op
    if isinstance(ret, func.ReturnOp):
        for value, t in zip(ret.operands, f.function_type.outputs.data, strict=True):
            u = index.get(value)
            if u is not None and isinstance(t, DTensorType) and not t.is_open:
                out.setdefault(u, []).append(frozenset([t.placement_list]))
    return out


def with_shared(
    node: Node,
    goals: frozenset[Placements],
    t: DTensorType,
    cost: Cost,
    credits: OverlapCredit | None = None,
) -> list[Signature]:
    """The node's signatures and, after each, its copies converting the result once to each of
    `goals` that moves bytes from there (a local slice is free whoever reads it); with
    `credits` (a matmul under `overlap=C`) a partial result's conversion is credited with what
    the pass saves pipelining it, and every read must take it (`only_shared`)."""
    from dataclasses import replace

    out = []
    for s in node.signatures:
        out.append(s)
        for g in sorted(goals, key=str):
            if not (resolves(s.result, g) and moves_bytes(t, s.result, g, cost.mesh)):
                continue
            moved = cost.conversion(t, s.result, g)
            if credits is None or not any(isinstance(p, PartialAttr) for p in s.result):
                out.append(replace(s, shared=g, shared_cost=moved))
                continue
            operands = [p for p in s.operands if p is not None]
            credit = credits.credit(node.op, operands, s.result, g)  # type: ignore[arg-type]
            saved = min(credit, moved)  # as on an edge: a conversion never pays back
            out.append(
                replace(
                    s,
                    shared=g,
                    shared_cost=moved - saved,
                    shared_credit=saved,
                    only_shared=True,
                )
            )
    return out


def resolves(start: Placements, goal: Placements) -> bool:
    """Whether `goal` only reduces `start`'s partial sums (to replicas or splits) and gathers
    its splits: the conversions several readers of one value need alike (a gradient's
    all-reduce), unlike re-splits or conversions to a partial sum, which one reader's
    layout asks for."""
    changed = [(a, b) for a, b in zip(start, goal, strict=True) if a != b]
    if len(changed) > 1:  # over several axes: only to replicas (an all-reduce of a sum)
        return all(b == R for _, b in changed)
    return bool(changed) and all(
        isinstance(a, PartialAttr)
        and not isinstance(b, PartialAttr)
        or isinstance(a, SplitAttr)
        and b == R
        for a, b in changed
    )


def moves_bytes(t: DTensorType, start: Placements, goal: Placements, mesh: Mesh) -> bool:
    """Whether converting `start` to `goal` is possible and sends bytes between devices."""
    if not nests(t, start, goal, mesh):
        return False
    steps = conversion_collectives(t, start, goal, mesh)
    return any(nbytes > 0 for _, nbytes in steps) and not any(math.isinf(b) for _, b in steps)


def conversion_table(
    t: DTensorType,
    producers: list[Signature],
    consumers: list[Signature],
    k: int,
    cost: Cost,
    holding: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """What converting the producer's result to the consumer's operand `k` costs, per pair of
    signatures, where the two placements differ, and the bytes the conversion's outputs hold
    (`conversion_held`; None unless `holding`: only a memory limit reads them). Many signatures share a placement: each distinct pair of placements
    is costed once and the table gathered from those."""
    import numpy as np

    starts: dict[Placements, int] = {}
    goals: dict[Placements, int] = {}
    given = np.array([starts.setdefault(s.result, len(starts)) for s in producers])
    wanted = np.array(
        [goals.setdefault(s.operands[k], len(goals)) for s in consumers]  # type: ignore[arg-type]
    )
    small = cost.matrix(t, tuple(starts), tuple(goals))
    same = np.array([[a == b for b in goals] for a in starts]).reshape(len(starts), len(goals))
    pick = np.ix_(given, wanted)
    moved, differs = small[pick], ~same[pick]
    if any(s.shared is not None for s in producers):  # read at the shared conversion: paid
        shared = np.array([goals.get(s.shared, -1) for s in producers])  # type: ignore[arg-type]
        hit = shared[:, None] == wanted[None, :]
        alone = np.array([s.only_shared for s in producers])[:, None] & ~hit
        moved, differs = np.where(hit, 0.0, np.where(alone, math.inf, moved)), differs & ~hit
    if not holding:
        return moved, differs, None
    held = cost.held_matrix(t, tuple(starts), tuple(goals))
    return moved, differs, held[pick]


def own_costs(
    n: Node,
    pipelined: bool,
    cost: Cost,
    mesh: Mesh,
    moves: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, object]],
) -> list[float]:
    """A node's own cost per signature (an argument's tie-break on its local bytes; an op's
    compute, its written collective's traffic unless pipelined, a call entry's callee cost),
    remembered in `moves` per signature list: every repetition of an op in a stack of layers
    shares its list (`nodes` enumerates one per kind), and a 96-layer step is searched again
    after every refinement. A copy: callers add to their rows."""
    bytes_of = n.value.type if n.op is None and n.value is not None else None
    key = ("own", id(n.signatures), n.op is None, pipelined, n.primary, bytes_of)
    known = moves.get(key)
    if known is None:
        if n.op is None:
            row = [
                cost.tie_break * local_bytes(n.value.type, s.result, mesh)  # type: ignore[arg-type,union-attr]
                + s.shared_cost
                for s in n.signatures
            ]
        else:
            op = n.op
            row = [
                cost.compute(op, s)
                + (0.0 if pipelined or not n.primary else collective_cost(op, s, cost))
                + (s.callee_cost if n.primary else 0.0)
                + s.shared_cost
                for s in n.signatures
            ]
        known = moves[key] = (row, None, None, n.signatures)  # alive: its id is the key
    return list(known[0])  # type: ignore[arg-type]


def functions_of(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {f.sym_name.data: f for f in module.walk() if isinstance(f, func.FuncOp)}


def refuse_recursion(module: ModuleOp) -> list[func.FuncOp]:
    """`callees_first`, refusing a call cycle at the call that closes it: a function's table
    needs its callees' tables first, and every function of a cycle is called, so none would be
    a root whose program is kept."""
    cycles: list[tuple[func.CallOp, tuple[str, ...]]] = []
    order = callees_first(functions_of(module), cycles)
    if cycles:
        call, names = cycles[0]
        loop = " -> ".join(f"@{n}" for n in (*names, names[0]))
        raise OpError(
            call,
            f"auto-shard: the call closes a cycle ({loop}); recursive functions are not searched",
        )
    return order


def call_nodes(
    op: func.CallOp, tables: dict[str, list[Variant]], signatures: dict[tuple, list[Signature]]
) -> list[Node]:
    """A call's candidates are its callee's transfer table entries (`Variant`): what each reads
    and gives at the boundary, at the entry's cost. One node per tensor result (the first
    carries the operand edges and the cost; the others are tied to its choice), or one node
    without a value. A callee without a table (not searched here) is fixed at its types. The
    signature lists are kept in `signatures`, one per callee and result, so every call of a
    layer shares its conversion tables."""
    callee = SymbolTable.lookup_symbol(op, op.callee)
    if not isinstance(callee, func.FuncOp):
        raise OpError(op, f"auto-shard: no function {op.callee}")
    name = callee.sym_name.data
    variants = tables.get(name) or [Variant(name, callee.function_type, 0.0)]
    for t in (*callee.function_type.inputs.data, *callee.function_type.outputs.data):
        if name not in tables and isinstance(t, DTensorType) and t.is_open:
            raise OpError(op, f"auto-shard: @{name} still has open types")
    outputs = callee.function_type.outputs.data
    slots = [k for k, t in enumerate(outputs) if isinstance(t, DTensorType)]

    def entries(slot: int | None) -> list[Signature]:
        key = ("call", name, slot, tuple(v.name for v in variants))
        if key not in signatures:
            signatures[key] = [
                Signature(
                    tuple(
                        t.placement_list if isinstance(t, DTensorType) else None
                        for t in v.function_type.inputs.data
                    ),
                    () if slot is None else v.function_type.outputs.data[slot].placement_list,  # type: ignore[attr-defined]
                    variant=k if name in tables else None,
                    callee_cost=v.cost,
                    callee_peak=v.peak,
                    callee_bound=v.floor,
                )
                for k, v in enumerate(variants)
            ]
        return signatures[key]

    if not slots:
        return [Node(op, None, entries(None))]
    return [
        Node(op, op.results[slot], entries(slot), primary=k == 0) for k, slot in enumerate(slots)
    ]


def call_wishes(
    f: func.FuncOp, nodes: list[Node], choice: list[int], tables: dict[str, list[Variant]]
) -> list[tuple[str, tuple[tuple[Attribute, ...], tuple[Attribute, ...]]]]:
    """Per call with a transfer table whose chosen entry disagrees with its neighbours: the
    callee and the boundaries (argument and result types; open where the callee is) that
    would spare the conversions - the arguments at the placements their producers give, or
    the results at the placements their first readers read (partial placements stay out of
    boundaries)."""
    index = {n.value: i for i, n in enumerate(nodes) if n.value is not None}
    reads: dict[SSAValue, Placements] = {}
    for v, n in enumerate(nodes):
        if n.op is not None and n.primary:
            for k, operand in enumerate(n.op.operands):
                goal = n.signatures[choice[v]].operands[k]
                if goal is not None and isinstance(operand.owner, func.CallOp):
                    reads.setdefault(operand, goal)
    out = []
    callees: dict[str, func.FuncOp] = {}  # a layer is called once per layer
    for v, n in enumerate(nodes):
        signature = n.signatures[choice[v]]
        if not (n.primary and isinstance(n.op, func.CallOp) and signature.variant is not None):
            continue
        name = n.op.callee.root_reference.data
        callee = callees.get(name)
        if callee is None:
            callee = callees[name] = SymbolTable.lookup_symbol(f, name)  # type: ignore[assignment]
        assert isinstance(callee, func.FuncOp)
        given = (tuple(callee.function_type.inputs.data), tuple(callee.function_type.outputs.data))
        entry = tables[name][signature.variant].function_type
        inputs, outputs = list(entry.inputs.data), list(entry.outputs.data)
        for i, operand in enumerate(n.op.operands):
            u = index.get(operand)
            if u is not None and isinstance(inputs[i], DTensorType):
                inputs[i] = _unreduced(inputs[i], nodes[u].signatures[choice[u]].result)
        for slot, r in enumerate(n.op.results):
            if r in reads and isinstance(outputs[slot], DTensorType):
                outputs[slot] = _unreduced(outputs[slot], reads[r])
        if tuple(inputs) != tuple(entry.inputs.data):
            out.append((name, (tuple(inputs), given[1])))
        if tuple(outputs) != tuple(entry.outputs.data):
            out.append((name, (given[0], tuple(outputs))))
    return out


@lru_cache(maxsize=1 << 12)
def _unreduced(t: DTensorType, placements: Placements) -> DTensorType:
    """`t` at `placements`, except where those are partial sums (kept as `t` has them);
    remembered: every call of a 96-layer step asks for the same few."""
    return t.with_placements(
        old if isinstance(new, PartialAttr) else new
        for old, new in zip(t.placement_list, placements, strict=True)
    )


def total(found: dict[func.FuncOp, tuple[list[Node], Solution | None]]) -> float:
    return sum(s.cost for _, s in found.values() if s is not None)


def settle_variants(module: ModuleOp, tables: dict[str, list[Variant]]) -> None:
    """Keep the transfer table entries some call reaches from the functions nobody calls,
    drop the rest and the open originals, and name what is kept: a function whose calls all
    chose one entry keeps its name, otherwise its entries are `name`, `name_1`, ..."""
    functions = {f.sym_name.data: f for f in module.walk() if isinstance(f, func.FuncOp)}
    entries = {v.name for vs in tables.values() for v in vs}
    live: set[str] = set()
    stack = [n for n in functions if n not in tables and n not in entries]
    while stack:
        name = stack.pop()
        if name in live or name not in functions:
            continue
        live.add(name)
        stack.extend(
            c.callee.root_reference.data
            for c in functions[name].walk()
            if isinstance(c, func.CallOp)
        )
    renamed: dict[str, str] = {}
    for name, variants in tables.items():
        used = [v.name for v in variants if v.name in live]
        for v in variants:
            if v.name not in live:
                functions[v.name].detach()
                functions[v.name].erase()
        functions[name].detach()
        functions[name].erase()
        for j, old in enumerate(used):
            renamed[old] = name if j == 0 else f"{name}_{j}"
            functions[old].sym_name = StringAttr(renamed[old])
    for c in module.walk():
        if isinstance(c, func.CallOp) and c.callee.root_reference.data in renamed:
            c.properties["callee"] = SymbolRefAttr(renamed[c.callee.root_reference.data])


def tied(nodes: Sequence[Node]) -> list[tuple[int, int]]:
    """(first, later) node pairs of the results of one call with several entries."""
    out, first = [], None
    for i, n in enumerate(nodes):
        if isinstance(n.op, func.CallOp) and len(n.signatures) > 1:
            if n.primary:
                first = i
            else:
                assert first is not None and nodes[first].op is n.op
                out.append((first, i))
    return out


def updated_arguments(op: Operation) -> set[int]:
    """The operands of a call that its callee updates in place (none for other ops)."""
    if not isinstance(op, func.CallOp):
        return set()
    callee = SymbolTable.lookup_symbol(op, op.callee)
    if not isinstance(callee, func.FuncOp) or not callee.body.blocks:
        return set()
    args = list(callee.body.block.args)
    return {
        args.index(u.target)
        for u in callee.body.block.ops
        if isinstance(u, UpdateOp) and u.target in args
    }


def _replicated(t: Attribute) -> Attribute:
    """`t` with its open placements replicated."""
    if not isinstance(t, DTensorType) or not t.is_open:
        return t
    return t.with_placements(R if isinstance(p, OpenAttr) else p for p in t.placement_list)


def called(order: Sequence[func.FuncOp]) -> set[str]:
    return {
        call.callee.root_reference.data
        for f in order
        for call in f.walk()
        if isinstance(call, func.CallOp)
    }


def reported_total(module: ModuleOp, key: str = "cost") -> float:
    """What the `auto_shard` attributes of a searched module report for a whole run of it:
    every function's `key` (its cost, or its bound) once per run of it, a layer function once
    per call (each function's report leaves its calls' out)."""
    counts = call_counts(callees_first(functions_of(module)))
    return sum(
        counts[f.sym_name.data] * f.attributes["auto_shard"].data[key].value.data  # type: ignore[attr-defined]
        for f in module.walk()
        if isinstance(f, func.FuncOp) and "auto_shard" in f.attributes
    )


def call_counts(order: Sequence[func.FuncOp]) -> dict[str, int]:
    """How many times each function runs per run of the functions nobody calls (a layer
    called from a loop-free step once per layer)."""
    counts = {f.sym_name.data: 0 for f in order}
    targets = called(order)
    for f in reversed(order):  # callers first
        name = f.sym_name.data
        if name not in targets:
            counts[name] = 1
        for call in f.walk():
            if isinstance(call, func.CallOp):
                callee = call.callee.root_reference.data
                if callee in counts:
                    counts[callee] += counts[name]
    return counts


def repetitions(f: func.FuncOp, tables: dict[str, list[Variant]]) -> list[list[func.CallOp]]:
    """One repetition of `f`'s calls to functions with a transfer table per distinct sequence
    of callees (the middle one of those of the sequence): the calls joined by the arguments of
    `f` they share, each argument read by at most one call per callee (a mask every layer's
    forward reads joins no layers; a layer's weights join its forward, backward and update
    calls). Groups of a single call are left out: its table has its own optimum already."""
    kinds: dict[tuple[str, ...], list[list[func.CallOp]]] = {}
    for g in repetition_groups(f, tables):
        kinds.setdefault(tuple(c.callee.root_reference.data for c in g), []).append(g)
    return [same[len(same) // 2] for same in kinds.values()]


def repetition_groups(f: func.FuncOp, tables: dict[str, list[Variant]]) -> list[list[func.CallOp]]:
    """Every repetition of `f`'s calls (`repetitions`: the calls joined by the arguments of
    `f` they share), in program order; groups of one call left out."""
    calls = [
        op
        for op in f.body.block.ops
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in tables
    ]
    parent = list(range(len(calls)))
    position = {id(c): i for i, c in enumerate(calls)}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for arg in f.body.block.args:
        users = sorted({position[id(u.operation)] for u in arg.uses if id(u.operation) in position})
        names = [calls[i].callee.root_reference.data for i in users]
        if len(users) < 2 or len(set(names)) != len(names):
            continue
        for i in users[1:]:
            parent[root(i)] = root(users[0])
    groups: dict[int, list[func.CallOp]] = {}
    for i, c in enumerate(calls):
        groups.setdefault(root(i), []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def placed_types(
    placed: dict[SSAValue, Placements], values: Sequence[SSAValue], types: Sequence[Attribute]
) -> tuple[Attribute, ...]:
    """`types` at the placements their `values` have in a solution (`_unreduced`)."""
    return tuple(
        _unreduced(t, placed[v]) if isinstance(t, DTensorType) and v in placed else t
        for v, t in zip(values, types, strict=True)
    )


def exclusive_arguments(f: func.FuncOp, groups: list[list[func.CallOp]]) -> list[list[SSAValue]]:
    """Per group, the arguments of `f` only its calls read (a layer's weights and optimizer
    state): nodes of the repetition in `AutoShard.repetition_relaxation`. One pass over the
    arguments' uses (a 96-layer step has thousands of arguments)."""
    group_of = {id(c): k for k, g in enumerate(groups) for c in g}
    out: list[list[SSAValue]] = [[] for _ in groups]
    for a in f.body.block.args:
        readers = {group_of.get(id(u.operation), -1) for u in a.uses}
        if len(readers) == 1 and -1 not in readers:
            out[readers.pop()].append(a)
    return out


def repetition_items(f: func.FuncOp, groups: list[list[func.CallOp]]) -> list[list[Operation]]:
    """Each repetition's calls and the ops of `f` that read its values and no other
    repetition's (a step's loss reading the last forward layer's output, the gradient it
    gives the last backward layer), in program order: bounded with the repetition, their
    conversions are not free on both sides. Any partition of the nodes gives a valid bound
    (`repetition_relaxation`); this one only makes it tighter."""
    group_of: dict[int, int] = {id(c): k for k, g in enumerate(groups) for c in g}
    out: list[list[Operation]] = [[] for _ in groups]
    owner: dict[int, int] = {}  # value id -> repetition
    for op in f.body.block.ops:
        k = group_of.get(id(op))
        if k is None and isinstance(op, DTensorOp | coll.CollectiveOp) and op.results:
            readers = {owner[id(v)] for v in op.operands if id(v) in owner}
            k = readers.pop() if len(readers) == 1 else None
        if k is not None:
            out[k].append(op)
            owner.update((id(r), k) for r in op.results)
    return out


def repetition_key(group: list[Operation], exclusive: list[SSAValue]) -> tuple:
    """What a repetition's inlined optimum depends on: its callees and ops, and where each
    operand comes from (an exclusive argument of that type, another item's result,
    outside)."""
    position = {id(c): i for i, c in enumerate(group)}
    slots = {id(a): i for i, a in enumerate(exclusive)}
    outer: dict[int, int] = {}
    parts = []
    for c in group:
        sources: list[tuple] = []
        for v in c.operands:
            owner = v.owner
            if id(v) in slots:
                sources.append(("argument", slots[id(v)], v.type))
            elif isinstance(owner, Operation) and id(owner) in position:
                sources.append(("result", position[id(owner)], list(owner.results).index(v)))
            else:
                sources.append(("outside", outer.setdefault(id(v), len(outer)), v.type))
        if isinstance(c, func.CallOp):
            parts.append((c.callee.root_reference.data, tuple(sources)))
        else:  # an op of the step: what it is, as `nodes` keys its signatures
            parts.append(
                (
                    c.name,
                    tuple(sources),
                    tuple(r.type for r in c.results),
                    tuple(sorted(c.properties.items())),
                )
            )
    return tuple(parts)


def boundary_piece(
    f: func.FuncOp, group: list[Operation], exclusive: list[SSAValue]
) -> (
    tuple[
        func.FuncOp,
        dict[int, tuple[bool, DTensorType]],
        list[tuple[SSAValue, DTensorType]],
        list[SSAValue],
        list[tuple[str, FunctionType, list[SSAValue], list[SSAValue]]],
    ]
    | None
):
    """`group`'s calls inlined into a function inserted after `f`, each call's boundary a node
    of its own: the exclusive arguments are its arguments, and so is each value from outside
    (`repetition_optimum` gives it every layout, partial sums too, at cost 0), and between a
    value and the
    callee ops reading it, or a callee's returned value and its readers, an identity marker
    (`dtensor.scale` by 1, whose candidates `repetition_optimum` replaces with the boundary's
    layouts: argument ones for an argument, any for a result). An argument the callee updates
    in place is read as it is (no conversion at the call). Returns the function, the markers
    (whether each is an argument boundary, and the callee's type there), the arguments updated
    in place with the callee's type (the callee's argument's tie-break is theirs), the
    arguments standing for values from outside, and per call its
    callee, its type, and the values its operands and results became; None where a callee is
    not one block of dtensor ops or updates a value that is not an argument here."""
    from xdsl.ir import Block, Region

    from ccopt.dialects.dtensor import ScaleOp

    block = Block(arg_types=[a.type for a in exclusive])
    mapped: dict[SSAValue, SSAValue] = dict(zip(exclusive, block.args, strict=True))
    markers: dict[int, tuple[bool, DTensorType]] = {}  # by id: the ops live in the piece
    kept: list[tuple[SSAValue, DTensorType]] = []
    sources: list[SSAValue] = []
    boundaries = []

    def marker(value: SSAValue, given: bool, t: DTensorType) -> SSAValue:
        op = ScaleOp.create(
            operands=[value], result_types=[value.type], properties={"factor": FloatAttr(1.0, f64)}
        )
        block.add_op(op)
        markers[id(op)] = (given, t)
        return op.results[0]

    for call in group:
        if not isinstance(call, func.CallOp):  # an op of `f` joining the repetition
            for v in call.operands:
                if v not in mapped:
                    mapped[v] = block.insert_arg(v.type, len(block.args))
                    sources.append(mapped[v])
            copy = call.clone(value_mapper=dict(mapped))
            block.add_op(copy)
            mapped.update(zip(call.results, copy.results, strict=True))
            continue
        callee = SymbolTable.lookup_symbol(f, call.callee)
        if (
            not isinstance(callee, func.FuncOp)
            or len(callee.body.blocks) != 1
            or any(isinstance(o, func.CallOp) for o in callee.body.block.ops)
        ):
            return None
        ft = callee.function_type
        in_place = updated_arguments(call)
        operands: list[SSAValue] = []
        for k, (v, t) in enumerate(zip(call.operands, ft.inputs.data, strict=True)):
            source = mapped.get(v)
            if source is None:  # from outside: at a layout of its own, free
                source = mapped[v] = block.insert_arg(v.type, len(block.args))
                sources.append(source)
            if k in in_place or not isinstance(t, DTensorType):
                if k in in_place and source not in block.args:
                    return None
                if k in in_place:  # the argument is the boundary: its tie-break is the callee's
                    kept.append((source, t))  # type: ignore[arg-type]
                operands.append(source)
            else:
                operands.append(marker(source, True, t))
        inner: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, operands, strict=True))
        results: list[SSAValue] = []
        for op in callee.body.block.ops:
            if isinstance(op, func.ReturnOp):
                results = [inner.get(v, v) for v in op.operands]
                break
            if not isinstance(op, DTensorOp | UpdateOp | coll.CollectiveOp):
                return None
            block.add_op(op.clone(value_mapper=inner))
        results = [
            marker(r, False, t) if isinstance(t, DTensorType) else r
            for r, t in zip(results, ft.outputs.data, strict=True)
        ]
        mapped.update(zip(call.results, results, strict=True))
        boundaries.append((callee.sym_name.data, ft, operands, results))
    block.add_op(func.ReturnOp())
    piece = func.FuncOp(
        f"{f.sym_name.data}__bound",
        FunctionType.from_lists([a.type for a in block.args], []),
        Region(block),
    )
    parent = f.parent_block()
    assert parent is not None
    parent.insert_op_after(piece, f)
    return piece, markers, kept, sources, boundaries


def boundary_signatures(
    t: DTensorType, mesh: Mesh, given: bool, known: dict[tuple, list[Signature]]
) -> list[Signature]:
    """A call boundary's layouts as identity signatures: an argument's (`argument_signatures`,
    never partial), or every layout a result may have (partial sums too); kept in `known`."""
    key = ("boundary", given, t, mesh)
    if key not in known:
        if given:
            layouts = [s.result for s in argument_signatures(t, mesh)]
        else:
            per_axis = [
                list(candidates(t)) if isinstance(p, OpenAttr) else [p] for p in t.placement_list
            ]
            layouts = []
            for combo in product(*per_axis):
                try:
                    DTensorType.check_parameters(t.get_shape(), t.element_type, combo)
                except VerifyException:
                    continue
                layouts.append(tuple(combo))
        known[key] = [Signature((p,), p) for p in layouts]
    return known[key]
