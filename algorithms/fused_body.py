"""A fused collective's body inside its all-reduce algorithm, at the step where each chunk's
reduction completes (what CoCoNeT's hand-written fused NCCL kernels do).

`completions` finds, from the algorithm's data flow alone (no generator names), the step at
which every output chunk first holds its full sum: the algorithm runs on 64-bit fingerprints
(every input chunk a random number, sums modulo 2^64), and a reduction step that produces the
sum of all ranks' chunk k completes chunk k. `with_body_steps` then clones the algorithm with an
`fn` step right after each completion (a completing `rrcs` becomes `rrc`, `fn`, `s` on its
thread block, so the send carries the body's results), and `check_body_placement` proves the
clone: the body replaced by a mixing function of the chunk, every rank must end with the mixed
full sum of every chunk, which holds only if each chunk's body ran once, on the full sum, and
every later step only copied its result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ccopt.algorithms.steps import random_order, run_steps
from ccopt.dialects.algo import (
    CNT,
    DEPID,
    DEPS,
    DSTBUF,
    DSTOFF,
    TYPE,
    Algorithm,
    AlgorithmError,
    Gpu,
    Schedule,
    Step,
    ThreadBlock,
    body_steps,
    describe_step,
    schedule,
    step_error,
    steps_array,
)


def fingerprint_buffers(
    alg: Algorithm, rng: np.random.Generator
) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Every rank's buffers, in place (an all-reduce's output is its input), holding random
    64-bit fingerprints, unwritten chunks a random poison; and each output chunk's full sum."""
    poison = rng.integers(0, 2**63, dtype=np.uint64)
    prints = [rng.integers(0, 2**63, size=(g.in_chunks, 1), dtype=np.uint64) for g in alg.gpus]
    storage = []
    for g, data in zip(alg.gpus, prints, strict=True):
        inp = data.copy()
        scratch = np.full((g.scratch_chunks, 1), poison, dtype=np.uint64)
        storage.append([inp, inp, scratch])
    total = np.sum(np.stack(prints), axis=0, dtype=np.uint64)[:, 0]
    return storage, total


@dataclass(frozen=True)
class Completion:
    """Output chunk `chunk` first holds its full sum at flat step `step`, row `row` of the value
    that step produces."""

    chunk: int
    step: int
    row: int


def completions(alg: Algorithm, seed: int = 0) -> list[Completion]:
    """Per output chunk of an all-reduce, the one reduction step that completes its sum;
    AlgorithmError (naming the step) where a chunk completes nowhere or more than once (then the
    body would not run exactly once per chunk)."""
    if alg.collective != "allreduce":
        raise AlgorithmError(f"a fused body needs an allreduce algorithm, not {alg.collective}")
    sched = schedule(alg)
    storage, total = fingerprint_buffers(alg, np.random.default_rng(seed))
    chunk_of = {int(v): k for k, v in enumerate(total.tolist())}
    found: dict[int, list[Completion]] = {}

    def observe(i: int, value: np.ndarray) -> None:
        for row, v in enumerate(value[:, 0].tolist()):
            if (k := chunk_of.get(int(v))) is not None:
                found.setdefault(k, []).append(Completion(k, i, row))

    order = np.argsort(sched.level, kind="stable")
    with np.errstate(over="ignore"):
        run_steps(sched, storage, order, np.add, observe=observe)
    out: list[Completion] = []
    for k in range(len(total)):
        places = found.get(k, [])
        if not places:
            raise AlgorithmError(
                f"no reduction step completes output chunk {k}: the body has no step to run at"
            )
        if len(places) > 1:
            shown = ", ".join(_where(sched, c.step) for c in places[:4])
            raise step_error(
                sched.flat,
                places[1].step,
                f"completes output chunk {k} again ({len(places)} places: {shown}): the body would "
                "run more than once per chunk",
            )
        out.append(places[0])
    return out


def _where(sched: Schedule, i: int) -> str:
    return describe_step(sched.flat, i)


def with_body_steps(alg: Algorithm, name: str) -> Algorithm:
    """A copy of the all-reduce `alg` with an `fn` step after each chunk's completion (see the
    module docstring); AlgorithmError, located, where that placement does not exist."""
    if alg.ranks == 1:
        return _single_rank(alg, name)
    sched = schedule(alg)
    flat = sched.flat
    places = completions(alg)
    by_step: dict[int, list[Completion]] = {}
    for c in places:
        by_step.setdefault(c.step, []).append(c)
    gpus = []
    for r, g in enumerate(alg.gpus):
        tbs = []
        for t, tb in enumerate(g.tbs):
            first = int(flat.tb_start[flat.gpu_tb_start[r] + t])
            tbs.append(
                ThreadBlock(tb.send, tb.recv, tb.chan, _expand(sched, first, tb.steps, by_step))
            )
        gpus.append(Gpu(g.in_chunks, g.out_chunks, g.scratch_chunks, tbs))
    fused = replace(alg, name=name, gpus=_renumber_dependencies(alg, gpus, sched, by_step))
    check_body_placement(fused)
    return fused


def _apply_rows(step: np.ndarray, done: list[Completion]) -> list[list[int]]:
    """The `fn` steps for the completed rows of one step: one per run of rows contiguous both
    in the buffer and in chunk numbers."""
    rows = sorted(done, key=lambda c: c.row)
    out: list[list[int]] = []
    for c in rows:
        buf, off = int(step[DSTBUF]), int(step[DSTOFF]) + c.row
        last = out[-1] if out else None
        if last is not None and last[4] + last[5] == off and last[2] + last[5] == c.chunk:
            last[5] += 1
            continue
        out.append([Step.APPLY, 1, c.chunk, buf, off, 1, -1, -1])
    return out


def _expansion(
    sched: Schedule, i: int, step: np.ndarray, done: list[Completion]
) -> list[list[int]]:
    """What completing step `i` becomes: itself then its `fn`s, or, when it also sends, a
    reduce-copy, the `fn`s, and the send of the results."""
    kind = int(step[TYPE])
    if kind == Step.RECV_REDUCE_SEND:
        raise step_error(
            sched.flat,
            i,
            f"completes output chunk {done[0].chunk} but only sends it on (rrs stores nothing): "
            "there is no chunk for the body to run on",
        )
    applies = _apply_rows(step, done)
    row = step.tolist()
    if kind != Step.RECV_REDUCE_COPY_SEND:
        return [row, *applies]
    reduce = [Step.RECV_REDUCE_COPY, *row[1:]]
    send = [Step.SEND, row[DSTBUF], row[DSTOFF], -1, -1, row[CNT], -1, -1]
    return [reduce, *applies, send]


def _expand(
    sched: Schedule, first: int, steps: np.ndarray, by_step: dict[int, list[Completion]]
) -> np.ndarray:
    rows: list[list[int]] = []
    for j, step in enumerate(steps):
        done = by_step.get(first + j)
        rows.extend(_expansion(sched, first + j, step, done) if done else [step.tolist()])
    return steps_array(rows)


def _renumber_dependencies(
    alg: Algorithm, gpus: list[Gpu], sched: Schedule, by_step: dict[int, list[Completion]]
) -> list[Gpu]:
    """Dependencies on a thread block's steps point at their new positions; one on a completing
    step waits for its last replacement, so whoever read the chunk reads the body's results."""
    flat = sched.flat
    for r, (old, new) in enumerate(zip(alg.gpus, gpus, strict=True)):
        last: list[np.ndarray] = []
        for t, tb in enumerate(old.tbs):
            first = int(flat.tb_start[flat.gpu_tb_start[r] + t])
            grow = np.ones(len(tb.steps), dtype=np.int64)
            for i in by_step:
                if first <= i < first + len(tb.steps):
                    grow[i - first] = _grown(sched, i, tb.steps[i - first], by_step[i])
            last.append(np.cumsum(grow) - 1)
        for tb in new.tbs:
            has = tb.steps[:, DEPID] >= 0
            if has.any():
                steps = tb.steps.copy()
                targets = [int(last[d][s]) for d, s in steps[has][:, [DEPID, DEPS]].tolist()]
                steps[np.flatnonzero(has), DEPS] = targets
                tb.steps = steps
    return gpus


def _grown(sched: Schedule, i: int, step: np.ndarray, done: list[Completion]) -> int:
    return len(_expansion(sched, i, step, done))


def _single_rank(alg: Algorithm, name: str) -> Algorithm:
    """One rank's input is already the full sum: the body runs on every output chunk after
    whatever the algorithm does (a thread block of its own, waiting for the others' last steps
    through `nop`s)."""
    g = alg.gpus[0]
    waits = [[Step.NOP, -1, -1, -1, -1, 0, t, len(tb.steps) - 1] for t, tb in enumerate(g.tbs)]
    waits = [w for w, tb in zip(waits, g.tbs, strict=True) if len(tb.steps)]
    body = [Step.APPLY, 1, 0, 1, 0, g.out_chunks, -1, -1]
    tb = ThreadBlock(-1, -1, 0, steps_array([*waits, body]))
    gpu = Gpu(g.in_chunks, g.out_chunks, g.scratch_chunks, [*g.tbs, tb])
    return replace(alg, name=name, gpus=[gpu])


def mix(values: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    """A stand-in body that no later reduction can undo or imitate: splitmix64 of the value and
    its chunk number (so a body run on a partial sum, twice, or on the wrong chunk shows)."""
    x = values + (chunk.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def check_body_placement(alg: Algorithm, seed: int = 1, orders: int = 2) -> None:
    """Prove an all-reduce with `fn` steps: with the body a mixing function of the chunk, every
    rank must end with mix(full sum) in every output chunk, in place and out of place, in the
    level order and in random step orders; AlgorithmError names the first wrong chunk."""
    sched = schedule(alg)
    owner = body_steps(alg, sched.flat)
    rng = np.random.default_rng(seed)
    for inplace in [m for m, on in ((True, alg.inplace), (False, alg.outofplace)) if on]:
        for k in range(orders):
            storage, total = fingerprint_buffers(alg, rng)
            if not inplace:
                for bufs, g in zip(storage, alg.gpus, strict=True):
                    bufs[0] = bufs[0].copy()
                    bufs[1] = np.full((g.out_chunks, 1), rng.integers(0, 2**63), np.uint64)

            def body(rank: int, first: int, rows: np.ndarray) -> np.ndarray:
                return mix(rows, np.arange(first, first + len(rows))[:, None])

            order = (
                np.argsort(sched.level, kind="stable") if k == 0 else random_order(sched, seed + k)
            )
            with np.errstate(over="ignore"):
                run_steps(sched, storage, order, np.add, apply=body)
                want = mix(total[:, None], np.arange(len(total))[:, None])[:, 0]
            mode = "in place" if inplace else "out of place"
            for r, bufs in enumerate(storage):
                bad = np.flatnonzero(bufs[1][:, 0] != want)
                if bad.size:
                    j = int(bad[0])
                    raise step_error(
                        sched.flat,
                        int(owner[j]),
                        f"{mode}: rank {r} ends with output chunk {j} not the body's result on its "
                        "full sum (the body runs before the chunk's reduction completes, or a "
                        "later step reduces or overwrites its result)",
                    )


@dataclass(frozen=True)
class ChunkLayout:
    """Where the elements of a fused all-reduce's slices sit in the algorithm's chunks: chunk k,
    column w holds element `pos[k, w]` of member `block[k, w]`'s slice (-1: padding)."""

    block: np.ndarray
    pos: np.ndarray

    @property
    def width(self) -> int:
        return int(self.block.shape[1])


def chunk_layout(owner: np.ndarray, sizes: list[int], on_owner: bool) -> ChunkLayout:
    """The layout for chunks completed by group members `owner[k]` and slices of `sizes`
    elements per member. Each member's slice goes into the chunks it completes, so the body runs
    where its split operands and results live; where some member with a slice completes no
    chunk (a tree reduces everything at its roots), the slices are laid end to end, which only
    a body without split operands or results can use (`on_owner`: ValueError says why not)."""
    chunks = len(owner)
    mine = [np.flatnonzero(owner == m) for m in range(len(sizes))]
    idle = [m for m, n in enumerate(sizes) if n and not mine[m].size]
    if not idle:
        width = max([1, *(-(-n // len(c)) for n, c in zip(sizes, mine, strict=True) if c.size)])
        block = np.full((chunks, width), -1, dtype=np.int64)
        pos = np.full((chunks, width), -1, dtype=np.int64)
        for m, (n, c) in enumerate(zip(sizes, mine, strict=True)):
            e = np.arange(n)
            block[c[e // width], e % width] = m
            pos[c[e // width], e % width] = e
        return ChunkLayout(block, pos)
    if on_owner:
        done = sorted({int(r) for r in owner.tolist()})
        raise ValueError(
            f"group member {idle[0]} holds a slice but completes no chunk (all complete at "
            f"members {', '.join(map(str, done))}), and the body has split operands or results, "
            "which live only there"
        )
    total = sum(sizes)
    width = max(1, -(-total // chunks))
    flat_block = np.full(chunks * width, -1, dtype=np.int64)
    flat_pos = np.full(chunks * width, -1, dtype=np.int64)
    flat_block[:total] = np.repeat(np.arange(len(sizes)), sizes)
    flat_pos[:total] = np.concatenate([np.arange(n) for n in sizes]) if sizes else []
    return ChunkLayout(flat_block.reshape(chunks, width), flat_pos.reshape(chunks, width))


def body_owners(alg: Algorithm) -> np.ndarray:
    """The group member (rank of the algorithm) that runs the body on each output chunk."""
    sched = schedule(alg)
    return sched.flat.rank[body_steps(alg, sched.flat)]


@dataclass(frozen=True)
class FusedChunks:
    """One group of a fused all-reduce in its algorithm's chunks, as generated code runs it:
    a chunk is `slots` rows of `layout.width` elements (the sum, then one row per gathered
    result), and `segments` are its runs of consecutive elements of one member's slice, rows
    (chunk, column, member, first element, count) in chunk order: what the pack, the body's
    kernel at each `fn` step and the unpack of the gathered results launch over."""

    layout: ChunkLayout
    slots: int
    segments: np.ndarray

    @property
    def chunk_elements(self) -> int:
        return self.slots * self.layout.width

    def chunk_starts(self) -> np.ndarray:
        """Per chunk, its first segment row (and the row count last)."""
        chunks = len(self.layout.block)
        return np.searchsorted(self.segments[:, 0], np.arange(chunks + 1), side="left")


def fused_chunks(alg: Algorithm, sizes: list[int], on_owner: bool, gathered: int) -> FusedChunks:
    """The chunks of a group whose members' slices have `sizes` elements (ValueError where the
    layout does not exist: see `chunk_layout`)."""
    layout = chunk_layout(body_owners(alg), sizes, on_owner)
    return FusedChunks(layout, max(1, gathered), segments(layout))


def segments(layout: ChunkLayout) -> np.ndarray:
    """The runs of a layout: consecutive columns of a chunk holding consecutive elements of
    one member's slice."""
    block, pos = layout.block, layout.pos
    chunks, width = block.shape
    valid = block >= 0
    start = valid.copy()
    start[:, 1:] &= ~(
        valid[:, :-1] & (block[:, 1:] == block[:, :-1]) & (pos[:, 1:] == pos[:, :-1] + 1)
    )
    flat_start = np.flatnonzero(start.ravel())
    breaks = np.flatnonzero((start | ~valid).ravel() | (np.arange(chunks * width) % width == 0))
    breaks = np.append(breaks, chunks * width)
    ends = breaks[np.searchsorted(breaks, flat_start, side="right")]
    ends = np.minimum(ends, (flat_start // width + 1) * width)
    k, w = flat_start // width, flat_start % width
    return (
        np.stack(
            [k, w, block.ravel()[flat_start], pos.ravel()[flat_start], ends - flat_start], axis=1
        )
        .astype(np.int64)
        .reshape(-1, 5)
    )
