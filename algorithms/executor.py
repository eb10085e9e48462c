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

import hashlib
from collections import OrderedDict
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


@dataclass
class ExecutorPlan:
    """Per rank, its rows in execution order; `staging` chunks of the M buffer every rank has."""

    rows: list[np.ndarray]
    staging: int
    levels: int

    @property
    def count(self) -> int:
        return sum(len(r) for r in self.rows)


def plan(alg: Algorithm, sched: Schedule | None = None) -> ExecutorPlan:
    """The executor rows of every rank (see the module docstring), built with whole-array numpy
    (a 128-rank ring has 32k steps): receive places, then every local-work row and every
    message's two rows, sorted per rank by (level, local work before messages, step or message)."""
    sched = sched or schedule(alg)
    n = len(sched.flat.tb)
    col = sched.flat.col
    sends, recvs = sched.sends, sched.recvs
    sender_of = np.full(n, -1, np.int64)
    sender_of[recvs] = sends
    place_buf, place_off = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    direct = _direct_receives(sched, sender_of)
    place_buf[recvs[direct]] = col[DSTBUF, recvs[direct]]
    place_off[recvs[direct]] = col[DSTOFF, recvs[direct]]
    staging = _stage(sched, sender_of, recvs[~direct], place_buf, place_off)
    rows = [_work_rows(sched, place_buf, place_off), *_message_rows(sched, place_buf, place_off)]
    table = np.concatenate(rows)
    table = table[table[:, 4 + COUNT] > 0]  # after the 4 sort keys: rank, level, phase, id
    order = np.lexsort((table[:, 3], table[:, 2], table[:, 1], table[:, 0]))
    table = table[order]
    cuts = np.searchsorted(table[:, 0], np.arange(alg.ranks + 1))
    body = table[:, 4:]
    out = [np.ascontiguousarray(body[cuts[r] : cuts[r + 1]]) for r in range(alg.ranks)]
    return ExecutorPlan(out, staging, int(sched.level.max()) + 1 if n else 0)


PLANS: OrderedDict[bytes, ExecutorPlan] = OrderedDict()
"""The plans of the algorithms seen last, by content: convert-to-kernel sizes every call's
workspace from its algorithm's plan and emission writes the same plan's rows."""

PLANS_KEPT = 32


def cached_plan(alg: Algorithm) -> ExecutorPlan:
    """`plan(alg)`, built once per algorithm content (its name aside) however many passes,
    functions and collectives ask; the rows are read-only."""
    key = algorithm_key(alg)
    found = PLANS.get(key)
    if found is not None:
        PLANS.move_to_end(key)
        return found
    found = plan(alg)
    for rows in found.rows:
        rows.flags.writeable = False
    PLANS[key] = found
    while len(PLANS) > max(PLANS_KEPT, 0):
        PLANS.popitem(last=False)
    return found


def algorithm_key(alg: Algorithm) -> bytes:
    """A digest of everything the rows depend on: buffer sizes, thread blocks and their steps."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(repr((alg.collective, alg.ranks, alg.inplace, alg.outofplace)).encode())
    for g in alg.gpus:
        digest.update(repr((g.in_chunks, g.out_chunks, g.scratch_chunks, len(g.tbs))).encode())
        for tb in g.tbs:
            digest.update(repr((tb.send, tb.recv, tb.chan, tb.steps.shape)).encode())
            digest.update(np.ascontiguousarray(tb.steps, dtype=np.int64).tobytes())
    return digest.digest()


def _direct_receives(sched: Schedule, sender_of: np.ndarray) -> np.ndarray:
    """Per receiving step (`sched.recvs` order), whether its message lands in its destination:
    a plain receive (possibly forwarded) at the level after its send, whose destination no send
    of the sending level on its rank reads (those read their place after the group lands)."""
    flat, col, level = sched.flat, sched.flat.col, sched.level
    recvs = sched.recvs
    s = sender_of[recvs]
    kinds = col[TYPE, recvs]
    ok = np.isin(kinds, (Step.RECV, Step.RECV_COPY_SEND)) & (level[recvs] == level[s] + 1)
    # the places sends read directly: s from src, rcs/rrcs from dst (rrs sends its staging slot)
    readers = sched.sends[
        np.isin(
            col[TYPE, sched.sends], (Step.SEND, Step.RECV_COPY_SEND, Step.RECV_REDUCE_COPY_SEND)
        )
    ]
    from_src = col[TYPE, readers] == Step.SEND
    r_buf = np.where(from_src, col[SRCBUF, readers], col[DSTBUF, readers])
    r_off = np.where(from_src, col[SRCOFF, readers], col[DSTOFF, readers])
    r_cnt = col[CNT, readers]
    key = flat.rank[readers] * (int(level.max(initial=0)) + 1) + level[readers]
    by_key = np.argsort(key, kind="stable")
    key = key[by_key]
    want = flat.rank[recvs] * (int(level.max(initial=0)) + 1) + level[s]
    lo = np.searchsorted(key, want, side="left")
    hi = np.searchsorted(key, want, side="right")
    d_buf, d_off, d_cnt = col[DSTBUF, recvs], col[DSTOFF, recvs], col[CNT, recvs]
    clash = np.zeros(len(recvs), dtype=bool)
    for j in range(int((hi - lo).max(initial=0))):  # the few sends of one rank and level
        has = ok & (lo + j < hi)
        k = by_key[np.minimum(lo + j, len(by_key) - 1)]
        clash |= (
            has & (r_buf[k] == d_buf) & (d_off < r_off[k] + r_cnt[k]) & (r_off[k] < d_off + d_cnt)
        )
    return ok & ~clash


def _stage(
    sched: Schedule,
    sender_of: np.ndarray,
    staged: np.ndarray,
    place_buf: np.ndarray,
    place_off: np.ndarray,
) -> int:
    """Give every staged receive a slot of the staging buffer (M), shared by messages whose
    lives (sending level to receiving level) do not overlap; returns the chunks M needs."""
    level, cnt, rank = sched.level, sched.flat.col[CNT], sched.flat.rank
    start = level[sender_of[staged]]
    order = np.lexsort((staged, cnt[staged], level[staged], start, rank[staged]))
    staging = 0
    live: list[tuple[int, int, int]] = []  # (end level, offset, stop)
    current = -1
    for t, r, s, e, c in zip(
        staged[order].tolist(),
        rank[staged][order].tolist(),
        start[order].tolist(),
        level[staged][order].tolist(),
        cnt[staged][order].tolist(),
        strict=True,
    ):
        if r != current:
            current, live = r, []
        live = [x for x in live if x[0] >= s]
        offset = first_fit([(a, b) for _, a, b in live], c) if live else 0
        live.append((e, offset, offset + c))
        place_buf[t], place_off[t] = STAGING, offset
        staging = max(staging, offset + c)
    return staging


def _work_rows(sched: Schedule, place_buf: np.ndarray, place_off: np.ndarray) -> np.ndarray:
    """The local copies, reductions and fused-body applications, as rows after their sort keys
    (rank, level, 0, step)."""
    flat, col = sched.flat, sched.flat.col
    kind = col[TYPE]
    n = len(kind)
    i = np.arange(n)
    dst_buf, dst_off, src_buf, src_off = col[DSTBUF], col[DSTOFF], col[SRCBUF], col[SRCOFF]
    parts = []

    def rows(mask: np.ndarray, what: int, a: tuple, b: tuple, c: tuple) -> None:
        m = np.flatnonzero(mask)
        fields = [
            flat.rank[m], sched.level[m], np.zeros(len(m), np.int64), i[m],
            sched.level[m], np.full(len(m), what), np.full(len(m), -1),
            *(np.broadcast_to(x[m] if isinstance(x, np.ndarray) else x, m.shape) for x in (*a, *b, *c)),
            col[CNT, m],
        ]  # fmt: skip
        parts.append(np.stack(fields, axis=1).astype(np.int64))

    none = (-1, -1)
    moved = np.isin(kind, (Step.RECV, Step.RECV_COPY_SEND)) & (
        (place_buf != dst_buf) | (place_off != dst_off)
    )
    rows(moved, COPY, (dst_buf, dst_off), (place_buf, place_off), none)
    rows(
        np.isin(kind, (Step.RECV_REDUCE_COPY, Step.RECV_REDUCE_COPY_SEND)),
        REDUCE,
        (dst_buf, dst_off),
        (src_buf, src_off),
        (place_buf, place_off),
    )
    slot = (place_buf, place_off)
    rows(kind == Step.RECV_REDUCE_SEND, REDUCE, slot, (src_buf, src_off), slot)
    rows(kind == Step.COPY, COPY, (dst_buf, dst_off), (src_buf, src_off), none)
    rows(kind == Step.REDUCE, REDUCE, (dst_buf, dst_off), (dst_buf, dst_off), (src_buf, src_off))
    rows(kind == Step.APPLY, APPLY, (dst_buf, dst_off), (OUTPUT, src_off), none)
    return np.concatenate(parts)


def _message_rows(
    sched: Schedule, place_buf: np.ndarray, place_off: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every message's send row on its sender and receive row on its receiver, after their sort
    keys (rank, sending level, 1, message)."""
    flat, col = sched.flat, sched.flat.col
    s, t = sched.sends, sched.recvs
    kind = col[TYPE, s]
    here_buf = np.select(
        [kind == Step.SEND, kind == Step.RECV_REDUCE_SEND],
        [col[SRCBUF, s], place_buf[s]],
        col[DSTBUF, s],
    )
    here_off = np.select(
        [kind == Step.SEND, kind == Step.RECV_REDUCE_SEND],
        [col[SRCOFF, s], place_off[s]],
        col[DSTOFF, s],
    )
    there_buf, there_off = place_buf[t], place_off[t]
    lv, msg, cnt = sched.level[s], np.arange(len(s)), col[CNT, s]
    one, minus = np.ones(len(s), np.int64), np.full(len(s), -1, np.int64)
    sender, receiver = flat.rank[s], flat.rank[t]
    send = np.stack(
        [sender, lv, one, msg, lv, np.full(len(s), SEND), receiver,
         here_buf, here_off, there_buf, there_off, minus, minus, cnt],
        axis=1,
    )  # fmt: skip
    recv = np.stack(
        [receiver, lv, one, msg, lv, np.full(len(s), RECV), sender,
         there_buf, there_off, here_buf, here_off, minus, minus, cnt],
        axis=1,
    )  # fmt: skip
    return send.astype(np.int64), recv.astype(np.int64)


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


def geometries(
    alg: Algorithm, x: DTensorType, out: DTensorType, mesh: Mesh, axes: Sequence[int]
) -> list[Geometry]:
    """Every rank's pieces and chunk width (in rank order), as `ccopt.interpreters.algo`'s
    `through_algorithm` cuts them: each member's pieces once per group, and the group's
    largest piece once (a rank's own pieces are one per member at most)."""
    found: list[Geometry | None] = [None] * mesh.rank_count
    for members in mesh.groups(tuple(axes)):
        cut = _group_pieces(
            alg,
            [x.local_slices(mesh, m) for m in members],
            [out.local_slices(mesh, m) for m in members],
        )
        most = max(box_numel(b) for ins, outs, _ in cut for b in (*ins, *outs))
        for m, (inputs, outputs, k) in zip(members, cut, strict=True):
            found[mesh.rank(m)] = Geometry(chunk_width(most, k), k, inputs, outputs)
    return found  # type: ignore[return-value]


def _group_pieces(
    alg: Algorithm, boxes_x: list[Box], boxes_out: list[Box]
) -> list[tuple[list[Box | None], list[Box | None], int]]:
    """Per member of a group (its blocks of the input and the output), its input and output
    pieces and chunks per piece."""
    g, p = alg.gpus[0], len(boxes_x)

    def whole(boxes: Box) -> Box:
        return tuple(slice(0, s.stop - s.start) for s in boxes)

    out: list[tuple[list[Box | None], list[Box | None], int]] = []
    for xin, xout in zip(boxes_x, boxes_out, strict=True):
        if alg.collective == "reduce_scatter":
            out.append(
                ([_relative_overlap(o, xin) for o in boxes_out], [whole(xout)], g.out_chunks)
            )
        elif alg.collective == "allgather":
            out.append(([whole(xin)], [_relative_overlap(i, xout) for i in boxes_x], g.in_chunks))
        elif alg.collective == "alltoall":
            out.append(
                (
                    [_relative_overlap(o, xin) for o in boxes_out],
                    [_relative_overlap(i, xout) for i in boxes_x],
                    g.in_chunks // p,
                )
            )
        else:
            out.append(([whole(xin)], [whole(xout)], g.in_chunks))
    return out


def workspace_elements(alg: Algorithm, steps: ExecutorPlan, width: int) -> int:
    """Elements of a call's workspace: the algorithm's scratch chunks, then the staging chunks."""
    return (max(g.scratch_chunks for g in alg.gpus) + steps.staging) * width
