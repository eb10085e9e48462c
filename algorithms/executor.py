"""An algorithm as rows of a generic executor: what generated code runs for a collective that
refers to an `algo.algorithm`.

Every rank walks the levels of the verifier's schedule (`ccopt.dialects.algo.schedule`: the
steps of a level wait for nothing of that level). A level is its local work first - the copies
and reductions of the steps at that level - then one group of point-to-point calls: every
message whose sending step is at that level, on both of its ends. A message therefore moves in
the same group on the sender and on the receiver (no rank waits for a group another rank has not
reached: levels are the same on every rank), after the local work that produced it and before
the receiving step's level, whose level is later.

A received message lands in its destination when nothing can touch that place in between (a
plain receive, possibly forwarded, at the next level, and no send of that level reads the place);
otherwise in a staging slot of a fourth buffer (`M`) that the receiving step then reduces or
copies from. Staging slots are shared by messages whose lives (from the sending level to the
receiving level, both included) do not overlap.

A row is `level, kind, peer, buf, off, a_buf, a_off, b_buf, b_off, count` in chunks:
  SEND    buf/off on this rank -> peer; a_buf/a_off is where the peer receives it
  RECV    peer -> buf/off on this rank; a_buf/a_off is where the peer sends it from
  COPY    buf/off = a_buf/a_off
  REDUCE  buf/off = a_buf/a_off (op) b_buf/b_off   (the interpreter's operand order)
  APPLY   the fused body in place on the chunks at buf/off, which hold output chunks a_off..
          (an `fn` step of a fused all-reduce: the backend launches the body's kernel there)
Counts in elements are taken at run time from the chunk width, clamped to each buffer's valid
elements (chunks at the end of an uneven buffer are short or empty, as the interpreter's are);
a message's count is the smaller of its two ends', computed the same way on both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from ccopt.dialects.algo import (
    CNT,
    DSTBUF,
    DSTOFF,
    SRCBUF,
    SRCOFF,
    TYPE,
    Algorithm,
    Schedule,
    Step,
    schedule,
)
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.mesh import Mesh
from ccopt.passes.plan_memory import first_fit

SEND, RECV, COPY, REDUCE, APPLY = range(5)
KIND_NAMES = ("send", "recv", "copy", "reduce", "apply")
INPUT, OUTPUT, SCRATCH, STAGING = range(4)
COLUMNS = 10
LEVEL, KIND, PEER, BUF, OFF, A_BUF, A_OFF, B_BUF, B_OFF, COUNT = range(COLUMNS)

FORWARDS = (Step.RECV_COPY_SEND, Step.RECV_REDUCE_SEND, Step.RECV_REDUCE_COPY_SEND)


@dataclass
class ExecutorPlan:
    """Per rank, its rows in execution order; `staging` chunks of the M buffer every rank has."""

    rows: list[np.ndarray]
    staging: int
    levels: int

    @property
    def count(self) -> int:
        return sum(len(r) for r in self.rows)


def _overlaps(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Two (buffer, offset, count) places share a chunk."""
    return a[0] == b[0] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2]


def plan(alg: Algorithm, sched: Schedule | None = None) -> ExecutorPlan:
    """The executor rows of every rank (see the module docstring)."""
    sched = sched or schedule(alg)
    flat = sched.flat
    n = len(flat.tb)
    sender_of = np.full(n, -1, np.int64)
    sender_of[sched.recvs] = sched.sends
    message_of = np.full(n, -1, np.int64)  # a sending step's message id (its send index)
    message_of[sched.sends] = np.arange(len(sched.sends))
    receiver_of = np.full(n, -1, np.int64)
    receiver_of[sched.sends] = sched.recvs
    # plain lists: per-step Python below would spend most of its time boxing numpy scalars
    kinds, counts = flat.col[TYPE].tolist(), flat.col[CNT].tolist()
    srcs = list(zip(flat.col[SRCBUF].tolist(), flat.col[SRCOFF].tolist(), counts, strict=True))
    dsts = list(zip(flat.col[DSTBUF].tolist(), flat.col[DSTOFF].tolist(), counts, strict=True))
    level, ranks = sched.level.tolist(), flat.rank.tolist()
    senders, messages, receivers = sender_of.tolist(), message_of.tolist(), receiver_of.tolist()

    def src(i: int) -> tuple[int, int, int]:
        return srcs[i]

    def dst(i: int) -> tuple[int, int, int]:
        return dsts[i]

    # where every sending step sends from is known once receives are placed; sends that read a
    # buffer place directly (s from src; rcs/rrcs from dst after their local work)
    sends_read: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for i in sched.sends.tolist():
        kind = kinds[i]
        if kind == Step.SEND:
            place = src(i)
        elif kind in (Step.RECV_COPY_SEND, Step.RECV_REDUCE_COPY_SEND):
            place = dst(i)
        else:
            continue  # rrs sends its staging slot, which no direct receive targets
        sends_read.setdefault((ranks[i], level[i]), []).append(place)

    # receive places: direct or a staging slot
    recv_place: dict[int, tuple[int, int, int]] = {}
    staged: dict[int, list[tuple[int, int, int, int]]] = {}  # rank -> (start, end, cnt, step)
    for t in sched.recvs.tolist():
        s = senders[t]
        rank, kind = ranks[t], kinds[t]
        if (
            kind in (Step.RECV, Step.RECV_COPY_SEND)
            and level[t] == level[s] + 1
            and not any(_overlaps(dst(t), p) for p in sends_read.get((rank, level[s]), []))
        ):
            recv_place[t] = dst(t)
        else:
            staged.setdefault(rank, []).append((level[s], level[t], counts[t], t))
    staging = 0
    for lives in staged.values():
        live: list[tuple[int, int, int]] = []  # (end level, offset, stop)
        for start, end, cnt, t in sorted(lives):
            live = [x for x in live if x[0] >= start]
            offset = first_fit([(a, b) for _, a, b in live], cnt)
            live.append((end, offset, offset + cnt))
            recv_place[t] = (STAGING, offset, cnt)
            staging = max(staging, offset + cnt)

    def send_place(i: int) -> tuple[int, int, int]:
        kind = kinds[i]
        if kind == Step.SEND:
            return src(i)
        if kind == Step.RECV_REDUCE_SEND:
            return recv_place[i]
        return dst(i)

    rows: list[list[tuple[int, ...]]] = [[] for _ in range(alg.ranks)]
    for i in np.argsort(sched.level, kind="stable").tolist():
        kind, rank, lv, cnt = kinds[i], ranks[i], level[i], counts[i]
        if cnt == 0:
            continue
        # local work, ordered before this level's messages by the sort key's second field
        work: tuple[int, ...] | None = None
        if kind in (Step.RECV, Step.RECV_COPY_SEND):
            got = recv_place[i]
            if got != dst(i):
                work = (COPY, -1, *dst(i)[:2], *got[:2], -1, -1, cnt)
        elif kind in (Step.RECV_REDUCE_COPY, Step.RECV_REDUCE_COPY_SEND):
            work = (REDUCE, -1, *dst(i)[:2], *src(i)[:2], *recv_place[i][:2], cnt)
        elif kind == Step.RECV_REDUCE_SEND:
            slot = recv_place[i][:2]
            work = (REDUCE, -1, *slot, *src(i)[:2], *slot, cnt)
        elif kind == Step.COPY:
            work = (COPY, -1, *dst(i)[:2], *src(i)[:2], -1, -1, cnt)
        elif kind == Step.REDUCE:
            work = (REDUCE, -1, *dst(i)[:2], *dst(i)[:2], *src(i)[:2], cnt)
        elif kind == Step.APPLY:
            work = (APPLY, -1, *dst(i)[:2], OUTPUT, src(i)[1], -1, -1, cnt)
        if work is not None:
            rows[rank].append((lv, 0, i, *work))
        if messages[i] >= 0:
            r = receivers[i]
            here, there = send_place(i), recv_place[r]
            receiver = ranks[r]
            rows[rank].append(
                (lv, 1, messages[i], SEND, receiver, *here[:2], *there[:2], -1, -1, cnt)
            )
            rows[receiver].append(
                (lv, 1, messages[i], RECV, rank, *there[:2], *here[:2], -1, -1, cnt)
            )
    out = []
    for per_rank in rows:
        per_rank.sort(key=lambda row: row[:3])
        table = np.array([(row[0], *row[3:]) for row in per_rank], dtype=np.int64)
        out.append(table.reshape(-1, COLUMNS))
    return ExecutorPlan(out, staging, int(sched.level.max()) + 1 if n else 0)


def span(buf_numel: list[int], width: int, buf: int, off: int, cnt: int) -> int:
    """Elements of chunks off..off+cnt-1 of a buffer holding `buf_numel[buf]` valid elements."""
    low = off * width
    return max(0, min((off + cnt) * width, buf_numel[buf]) - low)


def run_rows(
    plan_: ExecutorPlan,
    buffers: list[list[np.ndarray]],
    numel: list[list[int]],
    width: int,
    combine=np.add,  # noqa: ANN001 - a numpy binary ufunc
    apply: Callable[[int, int, int, np.ndarray], None] | None = None,
) -> None:
    """Run the rows on flat numpy buffers (per rank: I, O, S, M) as the generated executor does:
    level by level, local work, then the level's messages. What the tests compare with the
    interpreter before any C++ is compiled. `apply(rank, first chunk, chunks, view)` runs a
    fused body in place on the (chunks x width) elements of an APPLY row."""
    mail: dict[tuple[int, int], list[np.ndarray]] = {}
    levels = [[rows[rows[:, LEVEL] == lv] for lv in range(plan_.levels)] for rows in plan_.rows]
    for lv in range(plan_.levels):
        for phase in (COPY, SEND, RECV):  # local work, then the group: sends post, receives land
            for r, bufs in enumerate(buffers):
                for row in levels[r][lv].tolist():
                    _, kind, peer, b, o, ab, ao, bb, bo, cnt = row
                    if kind == APPLY:
                        if phase == COPY:
                            if apply is None:
                                raise ValueError("an APPLY row needs the fused body")
                            apply(r, ao, cnt, bufs[b][o * width : (o + cnt) * width])
                        continue
                    if (kind in (COPY, REDUCE)) != (phase == COPY) or (
                        phase != COPY and kind != phase
                    ):
                        continue
                    count = min(
                        span(numel[r], width, b, o, cnt), span(numel[r], width, ab, ao, cnt)
                    )
                    if kind == REDUCE:
                        count = min(count, span(numel[r], width, bb, bo, cnt))
                    if count <= 0:
                        continue
                    d = bufs[b][o * width : o * width + count]
                    a = bufs[ab][ao * width : ao * width + count]
                    if kind == SEND:
                        mail.setdefault((r, peer), []).append(d.copy())
                    elif kind == RECV:
                        d[...] = mail[(peer, r)].pop(0)
                    elif kind == COPY:
                        d[...] = a
                    else:
                        d[...] = combine(a, bufs[bb][bo * width : bo * width + count])


def chunk_width(largest_piece: int, chunks_per_piece: int) -> int:
    """Elements per chunk: the interpreter's ceil-div of the largest piece (at least 1)."""
    return max(1, -(-largest_piece // chunks_per_piece))


Box = tuple[slice, ...]


def _relative_overlap(inner: Box, outer: Box) -> Box | None:
    """`inner ∩ outer` in `outer`'s own coordinates (None when empty)."""
    box = []
    for a, b in zip(inner, outer, strict=True):
        start, stop = max(a.start, b.start), min(a.stop, b.stop)
        if stop <= start:
            return None
        box.append(slice(start - b.start, stop - b.start))
    return tuple(box)


def box_numel(box: Box | None) -> int:
    return 0 if box is None else prod(b.stop - b.start for b in box)


@dataclass
class Geometry:
    """How one rank's buffers of a collective become the algorithm's chunked input and output:
    piece q of the input (output) is `inputs[q]` (`outputs[q]`), a box of the rank's block of the
    collective's input (output), chunks q*k..q*k+k-1 of the algorithm's buffer, `width` elements
    a chunk (the interpreter's: the group's largest piece in ceil-div chunks)."""

    width: int
    chunks: int
    inputs: list[Box | None]
    outputs: list[Box | None]


def geometry(
    alg: Algorithm,
    x: DTensorType,
    out: DTensorType,
    mesh: Mesh,
    axes: Sequence[int],
    coords: Sequence[int],
) -> Geometry:
    """The rank at `coords`'s pieces and chunk width, as `ccopt.interpreters.algo`'s
    `through_algorithm` cuts them."""
    members = mesh.group(coords, axes)
    p = len(members)
    g = alg.gpus[0]

    def whole(t: DTensorType, c: Sequence[int]) -> Box:
        return tuple(slice(0, s.stop - s.start) for s in t.local_slices(mesh, c))

    def pieces(c: Sequence[int]) -> tuple[list[Box | None], list[Box | None], int]:
        xin, xout = x.local_slices(mesh, c), out.local_slices(mesh, c)
        if alg.collective == "reduce_scatter":
            return (
                [_relative_overlap(out.local_slices(mesh, m), xin) for m in members],
                [whole(out, c)],
                g.out_chunks,
            )
        if alg.collective == "allgather":
            return (
                [whole(x, c)],
                [_relative_overlap(x.local_slices(mesh, m), xout) for m in members],
                g.in_chunks,
            )
        if alg.collective == "alltoall":
            return (
                [_relative_overlap(out.local_slices(mesh, m), xin) for m in members],
                [_relative_overlap(x.local_slices(mesh, m), xout) for m in members],
                g.in_chunks // p,
            )
        return [whole(x, c)], [whole(out, c)], g.in_chunks

    inputs, outputs, k = pieces(coords)
    most = 0
    for m in members:
        ins, outs, _ = pieces(m)
        most = max(most, *(box_numel(b) for b in (*ins, *outs)))
    return Geometry(chunk_width(most, k), k, inputs, outputs)


def workspace_elements(alg: Algorithm, steps: ExecutorPlan, width: int) -> int:
    """Elements of a call's workspace: the algorithm's scratch chunks, then the staging chunks."""
    return (max(g.scratch_chunks for g in alg.gpus) + steps.staging) * width
