"""`autotune`: choose each collective's schedule by simulated step time (CoCoNeT's autotuner).

CoCoNeT enumerated its schedules and measured them; ccopt ranks them with its simulator
(`ccopt.sim`, ccopt mode) on a machine. For each `coll.all_reduce` of the program, in program
order, the candidates are:

| candidate | passes applied to that all-reduce |
|---|---|
| `leave` | none |
| `split+reorder+fuse` | split-all-reduce, reorder-elementwise, fuse-elementwise |
| `fused` | fuse-collective (the all-reduce and the elementwise ops that consume it), fuse-elementwise |
| `overlap k` | overlap{chunks=k} (the matmul that produces it, chunk by chunk) |
| `split+reorder+fuse, overlap k` | the second row, then overlap{chunks=k} of its reduce-scatter |
| `fused, overlap k` | the third row, then overlap{chunks=k} of the fused collective |

A candidate that a pass refuses (no matmul to overlap with, nothing to fuse) is left out. The
fastest candidate wins (the earlier one on a tie), is applied, and the next collective is tuned
on the result (greedy, one collective at a time). A `coll.reduce_scatter` is tried with the
rows that do not split (leave, fused, overlap k, fused + overlap k), a `coll.all_gather` with
leave and overlap k (with the matmul it feeds). Every overlap candidate chunks each rank's
block of a split dimension where no whole dimension can be chunked (`overlap{per-rank=true}`):
the simulator decides whether that pays. A `coll.fused_all_reduce` that fuse-collective made
before autotune runs is tried with leave and overlap k. Every candidate is made of ccopt's own
verified passes, so the result passes `ccopt-run --check-pipeline 'autotune{...}'` as they do.

A pipeline transfer (`coll.shift`) is tried with leave and `pipeline-p2p` (send the tensor-
parallel slice, gather in the next stage): it pays where the stages talk over a slower network
than the tensor-parallel group (pp across nodes), and costs a gather, a slice and launches where
bytes are cheap (a small, launch-bound boundary) or where the sending stage reads the activation
too and gathers it anyway. A shift is tuned before the collectives that row rewrites (the
all-reduces feeding it through elementwise ops, or the all-gather it reads), not after them in
program order: tuned first, an all-reduce fused with its elementwise consumers or overlapped
with its matmul would hide from pipeline-p2p, and the shift could only be left. Both of the
shift's rows leave those collectives untuned, so they compare alike; the collectives are then
tuned in their turn on what the shift's choice left. An all-reduce that pipeline-p2p made a
reduce-scatter is tried with the reduce-scatter's rows (labelled as the all-reduce), so p2p
followed by a fused or overlapped reduce-scatter is reached greedily, one collective at a time,
as every other combination is; a gather it moved into the receiving stage is tried there (with
the matmul it now feeds), and a gather it made there (of a split all-reduce, or beside a gather
the sending stage still reads) is tried after every collective known before (`%n gather` in the
table), so the receiving stage's gather can be overlapped with its matmul too.

Each collective's candidates are tried on its window (`ccopt.passes.autotune_window`): the
`window` ops on each side of it in its function, widened to the matmul producing it, its first
reader and the elementwise ops computing on its result, cut out as a function of its own. The
times compared (and printed) are that function's simulated step times, and the winner's window
is spliced back. So tuning costs the same per collective however long the program is (trying
every candidate on the whole function made autotune quadratic in it: a GPT step's optimizer
alone has a fused collective per parameter); `window=0` tries them on the whole function.

```mlir
%y = dtensor.matmul %x, %w : ... -> ...[P(sum)]
%r = coll.all_reduce sum %y over [tp] : ...[P(sum)] -> ...[R]
// autotune{machine=dgx2-v100 chunks=1,2,4,8} on GPT-2 8.3B's row-parallel layer picks
// fused, overlap 4: chunked matmuls and fused collectives on two streams
```
`print=true` prints the table of candidates and their simulated step times on stderr. A
collective the user tagged (`{tag = "g"}`) passes its tag on to what the chosen candidate made of
it (`g`, `g.rs`, `g.ag`, `g.rs.chunk0`: `_untag`), so later passes can still select it.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ccopt.diagnostics import CcoptError, OpWarning
from ccopt.dialects import coll, sched
from ccopt.passes.autotune_window import ProgramSymbols, Window, splice, window_around
from ccopt.passes.common import TAG, is_elementwise, release, tag_of
from ccopt.passes.options import option

if TYPE_CHECKING:
    from ccopt.sim.machine import Machine

TUNED = "autotune."
"""Prefix of the temporary tags that point the passes at the collective being tuned."""

Step = Callable[[tuple[str, ...]], ModulePass]
"""A candidate's pass, made for the temporary tags of the ops being tuned (`_present`)."""


@dataclass(frozen=True)
class Candidate:
    name: str
    steps: tuple[Step, ...]
    whole_consumers: bool = False  # tag the elementwise consumers too (for fuse-collective)


def _split(tags: tuple[str, ...]) -> ModulePass:
    from ccopt.passes.split_all_reduce import SplitAllReduce

    return SplitAllReduce(tags=tags)


def _reorder(tags: tuple[str, ...]) -> ModulePass:
    from ccopt.passes.reorder_elementwise import ReorderElementwise

    return ReorderElementwise(tags=tags)


def _fuse_elementwise(_tags: tuple[str, ...]) -> ModulePass:
    from ccopt.passes.fuse_elementwise import FuseElementwise

    return FuseElementwise()


def _fuse_collective(tags: tuple[str, ...]) -> ModulePass:
    from ccopt.passes.fuse_collective import FuseCollective

    return FuseCollective(group=tags)


def _overlap(chunks: int) -> Step:
    def step(tags: tuple[str, ...]) -> ModulePass:
        from ccopt.passes.overlap import Overlap

        return Overlap(chunks=chunks, tags=tags, per_rank=True)  # (the simulator decides)

    return step


def _pipeline_p2p(tags: tuple[str, ...]) -> ModulePass:
    from ccopt.passes.pipeline_p2p import PipelineP2P

    return PipelineP2P(tags=tags)


def candidates(op: Operation, chunks: Sequence[int]) -> list[Candidate]:
    """The schedules tried for one collective, simplest first: for an all-reduce every row of
    the table above; for a reduce-scatter those without the split; for an all-gather, leaving
    it or overlapping it with the matmul it feeds; for a shift, leaving it or sending a slice."""
    split = (_split, _reorder, _fuse_elementwise)
    fused = (_fuse_collective, _fuse_elementwise)
    out = [Candidate("leave", ())]
    if isinstance(op, coll.ShiftOp):
        return [*out, Candidate("pipeline-p2p", (_pipeline_p2p,))]
    fusable = isinstance(op, coll.AllReduceOp | coll.ReduceScatterOp)
    if isinstance(op, coll.AllReduceOp):
        out.append(Candidate("split+reorder+fuse", split))
    if fusable:
        out.append(Candidate("fused", fused, whole_consumers=True))
    for k in chunks:
        out.append(Candidate(f"overlap {k}", (_overlap(k),)))
        if isinstance(op, coll.AllReduceOp):
            out.append(Candidate(f"split+reorder+fuse, overlap {k}", (*split, _overlap(k))))
        if fusable:
            out.append(
                Candidate(f"fused, overlap {k}", (*fused, _overlap(k)), whole_consumers=True)
            )
    return out


TUNED_OPS = (
    coll.AllReduceOp,
    coll.ReduceScatterOp,
    coll.AllGatherOp,
    coll.FusedAllReduceOp,
    coll.ShiftOp,
)
"""The collectives autotune chooses a schedule for (those the program has before it runs;
what an earlier choice makes of a collective belongs to that choice, but for the all-reduces
pipeline-p2p turns into reduce-scatters): a fused collective that fuse-collective made before
autotune runs (a model's optimizer steps) is left or overlapped."""


def _tuning_order(ops: list[Operation]) -> list[Operation]:
    """The collectives in program order, but each shift before the first collective its
    pipeline-p2p row rewrites (see the module docstring)."""
    from ccopt.passes.pipeline_p2p import rewritten_with

    position = {o: i for i, o in enumerate(ops)}

    def key(i: int) -> tuple[int, int, int]:
        o = ops[i]
        if not isinstance(o, coll.ShiftOp):
            return (i, 1, i)
        return (min([i, *(position.get(r, i) for r in rewritten_with(o))]), 0, i)

    return [ops[i] for i in sorted(range(len(ops)), key=key)]


@dataclass(frozen=True)
class Autotune(ModulePass):
    """Choose each collective's schedule (leave, split+reorder+fuse, fused collective, overlap with k chunks; a pipeline transfer: leave or pipeline-p2p) by the simulated step time of the ops around it."""

    name = "autotune"

    machine: str = option("dgx2-v100", "Machine preset or machine YAML file to simulate on.")
    chunks: tuple[int, ...] = option((1, 2, 4, 8), "Chunk counts tried for overlap.")
    print: bool = option(False, "Print every candidate's simulated step time on stderr.")
    window: int = option(
        64,
        "Ops on each side of a collective that its candidates are simulated with (0: its whole function).",
    )

    def __post_init__(self) -> None:
        if not self.chunks or any(k < 1 for k in self.chunks):
            raise ValueError(f"autotune: chunks must be >= 1, got {list(self.chunks)}")
        if self.window < 0:
            raise ValueError(f"autotune: window must be >= 0, got {self.window}")
        from ccopt.sim.machine import load_machine

        try:  # a bad machine fails the pipeline when it is read, as a bad option does
            load_machine(self.machine)
        except CcoptError as e:
            raise ValueError(f"autotune: {e}") from None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ccopt.sim.machine import load_machine

        machine = load_machine(self.machine)
        targets = _tuning_order([o for o in op.walk() if isinstance(o, TUNED_OPS)])
        tuned: dict[int, Operation] = {}
        for n, target in enumerate(targets):
            target.attributes[ID] = IntegerAttr(n, i64)
            tuned[n] = target
        labels = [_label(o, n) for n, o in enumerate(targets)]
        del targets  # (what an earlier choice rewrites is found again through `tuned`)

        def fresh(o: Operation) -> int:
            """Number a collective that a choice made (tuned after those known so far)."""
            labels.append(f"{_label(o, len(labels))} gather")
            return len(labels) - 1

        rows: list[tuple[str, str, int | None]] = []
        symbols = ProgramSymbols(op)
        try:
            for n, label in enumerate(labels):
                target = tuned.get(n)
                if target is None:  # an earlier choice fused it away
                    continue
                window = window_around(target, self.window, symbols)
                tried = candidates(target, self.chunks)  # (p2p may have made it a reduce-scatter)
                timed = [(c, _time(window, n, c, machine)) for c in tried]
                rows += [(label, c.name, t) for c, t in timed]
                best = min((x for x in timed if x[1] is not None), key=lambda x: x[1])[0]  # type: ignore[arg-type,return-value]
                _apply(window.module, n, best, fresh)
                stale = _numbered(window.ops)
                moved = splice(window, symbols)
                for k in stale:
                    tuned.pop(k, None)
                tuned.update(_numbered(moved))
                rows.append((label, f"-> {best.name}", None))
        finally:
            for o in op.walk():
                if ID in o.attributes:
                    del o.attributes[ID]
        if self.print:
            _print_table(rows, machine.name, self.window)


ID = "autotune.id"
"""A temporary attribute that numbers the program's collectives while they are tuned."""


def _find(module: Operation, n: int) -> Operation | None:
    for o in module.walk():
        if isinstance(o, TUNED_OPS) and _number(o) == n:
            return o
    return None


def _numbered(ops: list[Operation]) -> dict[int, Operation]:
    """The collectives among `ops` (and inside them) that carry a number, by number."""
    out: dict[int, Operation] = {}
    for top in ops:
        for o in top.walk():
            if (n := _number(o)) is not None:
                out[n] = o
    return out


def _label(op: Operation, n: int) -> str:
    name = op.results[0].name_hint
    return f"%{name}" if name else f"{op.name.removeprefix('coll.')} #{n}"


def _time(window: Window, n: int, candidate: Candidate, machine: Machine) -> int | None:
    """The simulated step time of the window with `candidate` applied to its n-th collective,
    or None when a pass refuses it."""
    from xdsl.utils.exceptions import DiagnosticException

    from ccopt.ir import clone
    from ccopt.sim.program import simulate_module

    trial = clone(window.module)
    try:
        try:
            _apply(trial, n, candidate)
        except (CcoptError, DiagnosticException, ValueError):
            return None
        return simulate_module(trial, machine, entry=window.name).step_time_ns
    finally:
        release(trial)  # (a trial per candidate: freed now, not at a full collection)


def _apply(
    module: ModuleOp, n: int, candidate: Candidate, fresh: Callable[[Operation], int] | None = None
) -> None:
    """Apply a candidate's passes to the n-th collective only, through a temporary tag that
    follows the collectives the passes make from it; a pass that refuses raises. `fresh`
    numbers the gathers pipeline-p2p makes, to be tuned in their turn (None: a trial). The
    collectives made from a collective the user tagged take its tag as the passes derive tags
    (`_untag`)."""
    from ccopt.ir import inherit_locations, verify_module

    target = _find(module, n)
    assert target is not None
    tag = f"{TUNED}{n}"
    gather = isinstance(target, coll.AllGatherOp)
    saved = {o: tag_of(o) for o in _targets(target, candidate.whole_consumers)}
    for o in saved:
        o.attributes[TAG] = StringAttr(tag)
    trace = _Trace(tag, saved[target])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OpWarning)  # fewer chunks than asked: still valid
            for step in candidate.steps:
                p = step(_present(module, trace))
                if p.name == "overlap":
                    _narrow(module, trace, gather)
                    p = step(_present(module, trace))
                before = set(module.walk())
                p.apply(Context(), module)
                if p.name == "pipeline-p2p":
                    _renumber(module, before, fresh)
                _follow(module, before, p, trace)
                inherit_locations(module)  # as every pipeline does after each pass
                verify_module(module)
    finally:
        _untag(module, saved, trace)


def _targets(target: Operation, consumers: bool) -> list[Operation]:
    """The collective, and with `consumers` the elementwise ops that compute on its result
    (transitively) - the group fuse-collective fuses."""
    out: list[Operation] = [target]
    if not consumers:
        return out
    frontier = [target]
    seen: set[Operation] = {target}
    while frontier:
        for r in frontier.pop().results:
            for use in r.uses:
                user = use.operation
                if user not in seen and is_elementwise(user) and user.parent is target.parent:
                    seen.add(user)
                    out.append(user)
                    frontier.append(user)
    return out


def _renumber(
    module: ModuleOp, before: set[Operation], fresh: Callable[[Operation], int] | None
) -> None:
    """pipeline-p2p rewrites more than the shift it is pointed at: each all-reduce it split
    hands its number to the reduce-scatter that replaced it (same operand, same axes), to be
    tuned in its turn. A collective it copied (the gather moved past the shift takes the
    original's attributes) keeps the number only where the original is gone. Every other
    gather it made in the receiving stage (of a split all-reduce, or beside a gather the
    sending stage still reads) gets a `fresh` number: it may feed a matmul there, to be
    overlapped with it."""
    split = {
        (o.input, o.axes): n
        for o in before
        if isinstance(o, coll.AllReduceOp) and o.parent is None and (n := _number(o)) is not None
    }
    kept = {_number(o) for o in module.walk() if o in before}
    for o in module.walk():
        if o in before:
            continue
        n = _number(o)
        if n is not None and n in kept:
            del o.attributes[ID]
        elif (
            isinstance(o, coll.ReduceScatterOp) and (n := split.get((o.input, o.axes))) is not None
        ):
            o.attributes[ID] = IntegerAttr(n, i64)
        if fresh is not None and isinstance(o, coll.AllGatherOp) and _number(o) is None:
            o.attributes[ID] = IntegerAttr(fresh(o), i64)


def _number(op: Operation) -> int | None:
    attr = op.attributes.get(ID)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


@dataclass
class _Trace:
    """What the passes of one candidate made of the tuned ops. They carry temporary tags: `tag`
    (the tuned collective, and what a pass made in its place) and one `tag#k` per tag a pass
    derived (`t.rs`, then `t#1.chunk0`); `chains` gives each its derived part along the chain
    (`t#2` -> `.rs.chunk0`), so a pass deriving from one of several tuned ops continues that
    op's chain. `heir` is the user's tag of the tuned collective (None: untagged), `made` the
    ops only `_follow` tagged."""

    tag: str
    heir: str | None
    chains: dict[str, str] = field(default_factory=dict)
    made: set[Operation] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.chains.setdefault(self.tag, "")

    def split(self, old: str) -> tuple[str, str] | None:
        """(temporary tag, derived part) of a tag a pass gave, or None where it is not one of
        the tuned ops' (`t` -> (t, ""), `t#2.ag` -> (t#2, ".ag"), `t.rs` -> (t, ".rs"))."""
        tag = self.tag
        if old == tag:
            return tag, ""
        if old.startswith(tag + "."):
            return tag, old[len(tag) :]
        if old.startswith(tag + "#"):
            dot = old.find(".", len(tag))
            return (old, "") if dot < 0 else (old[:dot], old[dot:])
        return None


def _present(module: ModuleOp, trace: _Trace) -> tuple[str, ...]:
    """The temporary tags the module's ops carry, for the next pass (the tuned collective's
    own where none is left: the pass then refuses, as it does for a tag nothing carries)."""
    found = {t: None for o in module.walk() if (t := tag_of(o)) in trace.chains}
    return tuple(found) or (trace.tag,)


def _follow(module: ModuleOp, before: set[Operation], p: ModulePass, trace: _Trace) -> None:
    """Give what a tagged pass derived from the tuned ops (`t#2.ag`) a temporary tag of its own
    that remembers the chain (`t#3`: `.rs.ag`), and tag the new collectives and regions it made
    `t`, so that the next pass finds them all. (A copy keeps its tag: overlap's chunk
    collectives keep the reduce-scatter's.)"""
    renamed: dict[str, str] = {}
    for o in module.walk():
        old = tag_of(o)
        if old is None:
            if o not in before and p.name != "fuse-elementwise" and isinstance(o, _SCHEDULED):
                trace.made.add(o)
                o.attributes[TAG] = StringAttr(trace.tag)
            continue
        parts = trace.split(old)
        if parts is None or not parts[1] or parts[0] not in trace.chains:
            continue
        new = renamed.get(old)
        if new is None:
            new = renamed[old] = f"{trace.tag}#{len(trace.chains)}"
            trace.chains[new] = trace.chains[parts[0]] + parts[1]
        o.attributes[TAG] = StringAttr(new)


_SCHEDULED = (coll.CollectiveOp, coll.FusedAllReduceOp, sched.ExecuteOp)
_HEIRS = (coll.CollectiveOp, coll.FusedAllReduceOp)


def _narrow(module: ModuleOp, trace: _Trace, gather: bool) -> None:
    """Overlap refuses a tagged op it cannot chunk: leave the tag on the collective to overlap
    (the all-gather being tuned, or the reduction an all-reduce became - not its all-gather)."""
    keep = coll.AllGatherOp if gather else _OVERLAPPABLE
    for o in module.walk():
        old = tag_of(o)
        if old in trace.chains and not isinstance(o, keep):
            o.attributes[TAG] = StringAttr(old + "~")


_OVERLAPPABLE = (coll.AllReduceOp, coll.ReduceScatterOp, coll.FusedAllReduceOp)


def _untag(module: ModuleOp, saved: dict[Operation, str | None], trace: _Trace) -> None:
    """Drop the temporary tags and give the tuned ops their users' tags back. Where the user
    tagged the tuned collective `g`, a collective a pass made in its place keeps `g` (the shift
    pipeline-p2p rebuilt, the chunks overlap copied), and an op a pass derived keeps its chain
    on `g` (`g.rs`, `g.ag.ag`, `g.rs.chunk0`), as the passes run by hand with `tags=g` name
    them. Regions and ops only `_follow` tagged get none."""
    for o in module.walk():
        old = tag_of(o)
        parts = None if old is None else trace.split(old.removesuffix("~"))
        if parts is None:
            continue
        del o.attributes[TAG]
        if trace.heir is None or o in saved or parts[0] not in trace.chains:
            continue
        chain = trace.chains[parts[0]] + parts[1]
        if chain:
            o.attributes[TAG] = StringAttr(trace.heir + chain)
        elif o not in trace.made and isinstance(o, _HEIRS):
            o.attributes[TAG] = StringAttr(trace.heir)
    for o, old in saved.items():
        if old is not None and o.parent is not None:
            o.attributes[TAG] = StringAttr(old)


def _print_table(rows: list[tuple[str, str, int | None]], machine: str, window: int) -> None:
    width = max((len(c) for _, c, _ in rows), default=10)
    span = f"window={window}: the ops around each collective" if window else "whole function"
    print(f"autotune on {machine}: simulated step time per candidate ({span})", file=sys.stderr)
    for collective, name, ns in rows:
        if ns is None and name.startswith("->"):
            print(f"  {collective:<16} {name}", file=sys.stderr)
            continue
        shown = "refused" if ns is None else f"{ns:>12,} ns"
        print(f"  {collective:<16} {name:<{width}} {shown}", file=sys.stderr)
