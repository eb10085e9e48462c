"""The host driver as calls of shared step functions, with repeated runs re-rolled into loops.

Every host statement the emitter renders (a launch, a cuBLAS or NCCL call, an event record or
wait, a call of another host function) becomes a *step*: the statement's text with the parts that
differ between otherwise identical statements lifted out as integer parameters - where a buffer
lies (a root pointer: the workspace, the constants, or argument i; and a byte offset into it) and
which event it records or waits on. Statements with the same text after lifting share one step
function, emitted once (`int ccopt_stepN(Context* ctx, char* const* roots_, const int64_t* a_)`);
the host function calls it in one line per statement.

A model is mostly one layer many times, so after inlining the step sequence is mostly one run of
steps repeated. `reroll` finds maximal runs of a period repeated back to back and emits them as a
`for` loop: each parameter column that is constant or steps by a constant stride per iteration is
an expression of the loop index, any other column is read from a constant table (one row per
iteration). The loop issues exactly the statements, in exactly the order, of the straight-line
code it replaces (`expand` gives that sequence back; a test compares the two), so stream and
event ordering are unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

ROOTS = ("ctx->workspace", "ctx->constants")
"""Root pointers 0 and 1 of every host function; argument i of the function is root 2 + i."""

_LIFTED = re.compile(r"ctx->(workspace|constants) \+ (\d+)\b|\barg(\d+)\b|ctx->events\[(\d+)\]")
MAX_PERIOD = 512  # longest repeated run of steps looked for (a layer's host statements)
MAX_UNROLL = 4  # a loop body may hold this many periods (buffers planned in a rotation)


@dataclass(frozen=True)
class Step:
    """One host statement: its step function's body and the integers it is called with."""

    body: str
    args: tuple[int, ...]


def lift(statement: str, arg_types: Sequence[str]) -> Step:
    """The statement with buffer roots/offsets and event indices replaced by parameters `a_[k]`
    (`arg_types[i]`: the element type of the function's argument i, whose pointer `argI` is;
    the trailing underscores keep the names apart from a template's own locals)."""
    args: list[int] = []

    def parameter(m: re.Match[str]) -> str:
        k = len(args)
        if m.group(1) is not None:
            args.extend((ROOTS.index(f"ctx->{m.group(1)}"), int(m.group(2))))
            return f"roots_[a_[{k}]] + a_[{k + 1}]"
        if m.group(3) is not None and int(m.group(3)) < len(arg_types):
            i = int(m.group(3))
            args.extend((len(ROOTS) + i, 0))
            return f"reinterpret_cast<{arg_types[i]}*>(roots_[a_[{k}]] + a_[{k + 1}])"
        if m.group(4) is None:
            return m.group(0)  # not one of the function's arguments: a name of the statement's
        args.append(int(m.group(4)))
        return f"ctx->events[a_[{k}]]"

    return Step(_LIFTED.sub(parameter, statement), tuple(args))


@dataclass(frozen=True)
class Call:
    """A step called once, with literal arguments."""

    step: int
    args: tuple[int, ...]


@dataclass(frozen=True)
class Column:
    """One parameter of a step in a loop body: `start + stride * i`, or `start` plus row i of a
    table column (`table` >= 0: the column's index in the loop's table; parameters that move
    together - buffers of one layer planned at a common shift - share a column)."""

    start: int = 0
    stride: int = 0
    table: int = -1


@dataclass(frozen=True)
class Loop:
    """`count` iterations of the steps in `body`, their parameters per iteration in `columns`
    (per step, per parameter); `rows`: the table of the non-affine columns (each as its change
    since the first iteration, distinct ones once), a row per iteration."""

    count: int
    body: tuple[int, ...]
    columns: tuple[tuple[Column, ...], ...]
    rows: np.ndarray = field(compare=False)


def expand(code: Sequence[Call | Loop]) -> Iterator[tuple[int, tuple[int, ...]]]:
    """The (step, arguments) sequence the code issues, loops unrolled."""
    for item in code:
        if isinstance(item, Call):
            yield item.step, item.args
            continue
        for i in range(item.count):
            for step, columns in zip(item.body, item.columns, strict=True):
                yield (
                    step,
                    tuple(
                        c.start + (int(item.rows[i, c.table]) if c.table >= 0 else c.stride * i)
                        for c in columns
                    ),
                )


def reroll(ids: Sequence[int], args: Sequence[tuple[int, ...]]) -> list[Call | Loop]:
    """Straight-line steps `ids[j]` called with `args[j]` as calls and loops (same sequence).

    Greedy from the front: at each position the period whose back-to-back repetition covers the
    most steps (the shortest on a tie); then how many periods one iteration holds (workspace
    planned in a rotation of buffers repeats every few layers) and whether the first or last
    period stays outside the loop, chosen by the bytes emitted."""
    code: list[Call | Loop] = []
    positions: dict[int, list[int]] = {}  # step -> its positions, ascending
    for j, s in enumerate(ids):
        positions.setdefault(s, []).append(j)
    cursor = dict.fromkeys(positions, 0)  # per step: its first position not before i
    n, i = len(ids), 0
    while i < n:
        period, repeats = _longest_repeat(ids, i, positions[ids[i]], cursor)
        if repeats < 2:
            code.append(Call(ids[i], args[i]))
            i += 1
            continue
        code.extend(_loop_of(ids, args, i, period, repeats))
        i += period * repeats
    return code


def _longest_repeat(
    ids: Sequence[int], i: int, positions: list[int], cursor: dict[int, int]
) -> tuple[int, int]:
    """(period, repeats) of the longest run from i of a period repeated back to back."""
    s = ids[i]
    while positions[cursor[s]] < i:
        cursor[s] += 1
    best = (0, 1, 1)  # (steps covered, period, repeats)
    for at in range(cursor[s] + 1, len(positions)):
        p = positions[at] - i
        if p > MAX_PERIOD:
            break
        length = 0  # steps t with ids[i + t] == ids[i + p + t]
        limit = len(ids) - i - p
        while length < limit and ids[i + length] == ids[i + p + length]:
            length += 1
        repeats = 1 + length // p
        if repeats >= 2 and p * repeats > best[0]:
            best = (p * repeats, p, repeats)
    return best[1], best[2]


def _loop_of(
    ids: Sequence[int], args: Sequence[tuple[int, ...]], i: int, period: int, repeats: int
) -> list[Call | Loop]:
    """The cheapest of: the run as straight calls, or a loop of `unroll` periods per iteration
    with the first `front` periods before it and the rest after it as straight calls."""
    straight = [Call(ids[j], args[j]) for j in range(i, i + period * repeats)]
    best: tuple[int, list[Call | Loop]] = (sum(map(_call_bytes, straight)), straight)
    for unroll in range(1, MAX_UNROLL + 1):
        for front in (0, 1):
            for back in (0, 1):
                count = (repeats - front - back) // unroll
                if count < 2:
                    continue
                start = i + front * period
                width = period * unroll
                loop = _affine_loop(ids, args, start, width, count)
                before = straight[: front * period]
                after = straight[front * period + width * count :]
                size = sum(map(_call_bytes, before + after)) + _loop_bytes(loop)
                if size < best[0]:
                    best = (size, [*before, loop, *after])
    return best[1]


def _call_bytes(call: Call) -> int:
    """About the bytes of a straight call: `CCOPT_STEP(ccopt_stepN, args...);`."""
    return 28 + sum(len(str(a)) + 2 for a in call.args)


def _affine_loop(
    ids: Sequence[int], args: Sequence[tuple[int, ...]], start: int, width: int, count: int
) -> Loop:
    body = tuple(ids[start : start + width])
    widths = [len(args[start + j]) for j in range(width)]
    flat = np.array(
        [[v for j in range(width) for v in args[start + t * width + j]] for t in range(count)],
        dtype=np.int64,
    ).reshape(count, sum(widths))
    stride = flat[1] - flat[0]
    affine = np.all(flat == flat[0] + np.outer(np.arange(count), stride), axis=0)
    shifts = flat - flat[0]
    table: dict[bytes, int] = {}  # a non-affine column's shifts -> its column in the table
    for c in np.flatnonzero(~affine):
        table.setdefault(shifts[:, c].tobytes(), int(c))
    kept = list(table.values())
    index = {c: t for t, c in enumerate(kept)}
    columns = []
    at = 0
    for w in widths:
        columns.append(
            tuple(
                Column(int(flat[0, c]), int(stride[c]))
                if affine[c]
                else Column(int(flat[0, c]), table=index[table[shifts[:, c].tobytes()]])
                for c in range(at, at + w)
            )
        )
        at += w
    return Loop(count, body, tuple(columns), shifts[:, kept])


def _loop_bytes(loop: Loop) -> int:
    """About the bytes the loop is emitted as: its header, a call per body step (with index
    arithmetic), and its table."""
    calls = sum(28 + 14 * len(c) for c in loop.columns)
    table = sum(len(str(v)) + 2 for v in loop.rows.flat) + 4 * loop.count if loop.rows.size else 0
    return 60 + calls + table


def column_expression(column: Column, table: str) -> str:
    """The C++ expression of a loop parameter in iteration `i`."""
    if column.table >= 0:
        row = f"{table}[i][{column.table}]"
        return f"{column.start} + {row}" if column.start else row
    if column.stride == 0:
        return str(column.start)
    step = f"{abs(column.stride)} * i"
    if not column.start:
        return step if column.stride > 0 else f"-{step}"
    return f"{column.start} {'+' if column.stride > 0 else '-'} {step}"


class StepLibrary:
    """A program's step functions (one per distinct lifted statement) and the tables of its
    loops; `driver` turns a host function's statements into the lines that call them."""

    def __init__(self, fresh: Callable[[str], str]):
        self.fresh = fresh  # a fresh C++ name for a table
        self.bodies: dict[str, int] = {}  # lifted statement -> step number
        self.tables: list[str] = []

    @staticmethod
    def name(step: int) -> str:
        return f"ccopt_step{step}"

    @property
    def functions(self) -> list[tuple[str, str]]:
        """(name, body) of every step function, in first-use order."""
        return [(self.name(n), body) for body, n in self.bodies.items()]

    def driver(self, statements: Sequence[str], arg_types: Sequence[str]) -> list[str]:
        """The host function's body: one line per straight step, a loop per repeated run."""
        lifted = [lift(s, arg_types) for s in statements]
        ids = [self.bodies.setdefault(s.body, len(self.bodies)) for s in lifted]
        lines = []
        for item in reroll(ids, [s.args for s in lifted]):
            if isinstance(item, Call):
                lines.append(self.call(item.step, [str(a) for a in item.args]))
                continue
            table = ""
            if item.rows.size:
                table = self.fresh("kLoop")
                rows = ",\n  ".join("{" + ", ".join(map(str, r)) + "}" for r in item.rows)
                self.tables.append(
                    f"static const int64_t {table}[{item.count}][{item.rows.shape[1]}] = {{\n"
                    f"  {rows}}};"
                )
            lines.append(f"for (int64_t i = 0; i < {item.count}; ++i) {{")
            for step, columns in zip(item.body, item.columns, strict=True):
                lines.append("  " + self.call(step, [column_expression(c, table) for c in columns]))
            lines.append("}")
        return lines

    def call(self, step: int, args: Sequence[str]) -> str:
        return f"CCOPT_STEP({self.name(step)}, {', '.join(args)});"
