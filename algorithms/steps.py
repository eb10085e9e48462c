"""Running an algorithm's steps on numbers: the loop the interpreter (`ccopt.interpreters.algo`)
and the passes' analyses (`ccopt.algorithms.fused_body`, a layer below the interpreter) share."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from ccopt.dialects.algo import (
    CNT,
    DSTBUF,
    DSTOFF,
    SRCBUF,
    SRCOFF,
    TYPE,
    Schedule,
    Step,
    order_edges,
    step_error,
)

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]
Apply = Callable[[int, int, np.ndarray], np.ndarray]
"""A fused body on chunks: (rank, first output chunk, their rows) -> the rows it leaves."""
Observe = Callable[[int, np.ndarray], None]
"""Told every value a reduction step produces: (flat step index, the rows)."""

COMBINING = (
    Step.RECV_REDUCE_COPY,
    Step.RECV_REDUCE_SEND,
    Step.RECV_REDUCE_COPY_SEND,
    Step.REDUCE,
)


def run_steps(
    sched: Schedule,
    storage: Sequence[Sequence[np.ndarray]],
    order: np.ndarray,
    combine: Combine,
    apply: Apply | None = None,
    observe: Observe | None = None,
) -> None:
    """Run the steps in `order` on every rank's (input, output, scratch) buffers, in place."""
    flat = sched.flat
    send_of = np.full(len(flat.tb), -1, dtype=np.int64)
    send_of[sched.recvs] = sched.sends
    mail: dict[int, np.ndarray] = {}
    col = flat.col
    fields = np.stack(
        [
            col[TYPE],
            col[SRCBUF],
            col[SRCOFF],
            col[DSTBUF],
            col[DSTOFF],
            col[CNT],
            flat.rank,
            send_of,
        ]
    )[:, order].T.tolist()
    for i, (kind, sb, so, db, do, cnt, rank, sender) in zip(order.tolist(), fields, strict=True):
        bufs = storage[rank]
        if kind == Step.NOP:
            continue
        if kind == Step.SEND:
            mail[i] = bufs[sb][so : so + cnt].copy()
        elif kind == Step.RECV:
            bufs[db][do : do + cnt] = mail.pop(sender)
        elif kind == Step.RECV_COPY_SEND:
            value = mail.pop(sender)
            bufs[db][do : do + cnt] = value
            mail[i] = value
        elif kind == Step.COPY:
            bufs[db][do : do + cnt] = bufs[sb][so : so + cnt].copy()
        elif kind == Step.APPLY:
            if apply is None:
                raise step_error(sched.flat, i, "applies a fused body, but none is given")
            bufs[db][do : do + cnt] = apply(rank, so, bufs[db][do : do + cnt].copy())
        else:
            own = bufs[db if kind == Step.REDUCE else sb]
            at = do if kind == Step.REDUCE else so
            other = bufs[sb][so : so + cnt] if kind == Step.REDUCE else mail.pop(sender)
            value = combine(own[at : at + cnt], other)
            if observe is not None:
                observe(i, value)
            if kind != Step.RECV_REDUCE_SEND:
                bufs[db][do : do + cnt] = value
            if kind in (Step.RECV_REDUCE_SEND, Step.RECV_REDUCE_COPY_SEND):
                mail[i] = value


def random_order(sched: Schedule, seed: int) -> np.ndarray:
    """A random topological order of the steps (Kahn's algorithm with random priorities): a
    result that changes with it has a race."""
    flat = sched.flat
    n = len(flat.tb)
    src, dst = order_edges(flat)
    src, dst = np.concatenate([src, sched.sends]), np.concatenate([dst, sched.recvs])
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        succ[a].append(b)
    indeg = np.bincount(dst, minlength=n).tolist()
    priority = np.random.default_rng(seed).random(n).tolist()
    ready = [(priority[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if not indeg[j]:
                heapq.heappush(ready, (priority[j], j))
    return np.array(order, dtype=np.int64)
