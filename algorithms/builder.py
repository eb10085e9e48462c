"""Building algorithms step by step: what every generator of the library uses.

A generator asks for thread blocks by their (send peer, recv peer, channel) and appends steps to
them; `Builder.build` returns the `Algorithm` data that the verifier, the interpreter and the
writers take. With `chain=True`, every step of a rank also waits for the rank's previous step
when that one is in another thread block: the rank's steps then run in the order written, which
is what algorithms that hand data from one round's peer to the next need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ccopt.dialects.algo import (
    BUFFERS,
    CNT,
    DEPID,
    DEPS,
    DSTBUF,
    DSTOFF,
    SRCBUF,
    SRCOFF,
    STEP_CODES,
    Algorithm,
    Gpu,
    ThreadBlock,
    steps_array,
)

Loc = tuple[str, int]
"""A place in a rank's buffers: ('i' | 'o' | 's', chunk offset)."""


@dataclass(frozen=True)
class Ref:
    """A step of a rank, by thread block and position."""

    tb: int
    index: int


@dataclass
class _Tb:
    send: int
    recv: int
    chan: int
    rows: list[tuple[int, ...]] = field(default_factory=list)  # steps not yet in `parts`
    parts: list[np.ndarray] = field(default_factory=list)
    count: int = 0

    def steps(self) -> np.ndarray:
        self.flush()
        return np.concatenate(self.parts) if self.parts else steps_array([])

    def flush(self) -> None:
        if self.rows:
            self.parts.append(steps_array(self.rows))
            self.rows = []


class Builder:
    def __init__(
        self,
        name: str,
        collective: str,
        ranks: int,
        in_chunks: int,
        out_chunks: int,
        *,
        inplace: bool = False,
        root: int = 0,
        chain: bool = False,
    ):
        self.name, self.collective, self.ranks = name, collective, ranks
        self.in_chunks, self.out_chunks = in_chunks, out_chunks
        self.inplace, self.root, self.chain = inplace, root, chain
        self.tbs: list[list[_Tb]] = [[] for _ in range(ranks)]
        self.scratch = [0] * ranks
        self.last: list[Ref | None] = [None] * ranks

    def tb(self, rank: int, send: int = -1, recv: int = -1, chan: int = 0) -> int:
        """The thread block of `rank` with these peers and channel (made on first use)."""
        for t, tb in enumerate(self.tbs[rank]):
            if (tb.send, tb.recv, tb.chan) == (send, recv, chan):
                return t
        self.tbs[rank].append(_Tb(send, recv, chan))
        return len(self.tbs[rank]) - 1

    def step(
        self,
        rank: int,
        tb: int,
        kind: str,
        src: Loc | None = None,
        dst: Loc | None = None,
        cnt: int = 1,
        after: Ref | None = None,
    ) -> Ref:
        """Append a step (`kind` in MSCCL's spelling); it waits for `after` if given."""
        last = self.last[rank]
        if after is None and self.chain and last is not None and last.tb != tb:
            after = last
        for loc in (src, dst):
            if loc is not None and loc[0] == "s":
                self.scratch[rank] = max(self.scratch[rank], loc[1] + cnt)
        block = self.tbs[rank][tb]
        block.rows.append(
            (
                STEP_CODES[kind],
                *(_loc(src)),
                *(_loc(dst)),
                cnt,
                *((after.tb, after.index) if after is not None else (-1, -1)),
            )
        )
        block.count += 1
        ref = Ref(tb, block.count - 1)
        self.last[rank] = ref
        return ref

    def extend(self, rank: int, tb: int, steps: np.ndarray) -> None:
        """Append a whole step table (generators that compute steps with numpy: a 1024-rank
        ring is two million steps)."""
        if not len(steps):
            return
        steps = steps_array(steps).copy()
        last = self.last[rank]
        if self.chain and last is not None and last.tb != tb and steps[0, DEPID] < 0:
            steps[0, DEPID], steps[0, DEPS] = last.tb, last.index
        for buf, off in ((SRCBUF, SRCOFF), (DSTBUF, DSTOFF)):
            used = steps[:, buf] == BUFFERS.index("s")
            if used.any():
                end = int((steps[used, off] + steps[used, CNT]).max())
                self.scratch[rank] = max(self.scratch[rank], end)
        block = self.tbs[rank][tb]
        block.flush()
        block.parts.append(steps)
        block.count += len(steps)
        self.last[rank] = Ref(tb, block.count - 1)

    def last_step(self, rank: int, tb: int) -> Ref | None:
        count = self.tbs[rank][tb].count
        return Ref(tb, count - 1) if count else None

    def build(self, channels: int | None = None, chunks_per_loop: int | None = None) -> Algorithm:
        used = max((tb.chan for tbs in self.tbs for tb in tbs), default=0) + 1
        return Algorithm(
            name=self.name,
            collective=self.collective,
            gpus=[
                Gpu(
                    self.in_chunks,
                    self.out_chunks,
                    self.scratch[r],
                    [ThreadBlock(tb.send, tb.recv, tb.chan, tb.steps()) for tb in tbs],
                )
                for r, tbs in enumerate(self.tbs)
            ],
            nchannels=channels or used,
            chunks_per_loop=chunks_per_loop or max(self.in_chunks, self.out_chunks, 1),
            inplace=self.inplace,
            outofplace=not self.inplace,
            root=self.root,
        )


def _loc(loc: Loc | None) -> tuple[int, int]:
    return (-1, -1) if loc is None else (BUFFERS.index(loc[0]), loc[1])
