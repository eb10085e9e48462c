"""The algo dialect: a collective algorithm as a chunk-level program (MSCCL-IR's level).

An algorithm says, for one collective on `ranks` ranks, what every rank does: its thread blocks
(each sends to one peer and receives from one peer on a channel) run ordered steps over the rank's
input (`i`), output (`o`) and scratch (`s`) buffers, addressed in chunks. A step may also wait for
a step of another thread block of its rank (`after tb.step`).

```mlir
algo.algorithm @ring allreduce ranks 4 channels 1 chunksperloop 4 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 4 out 4 scratch 0 {
    algo.tb 0 send 1 recv 3 chan 0 {
      0: s i[3] -> i[3] x1
      1: rrs i[2] -> _ x1
      2: rrs i[1] -> _ x1
      3: rrcs i[0] -> i[0] x1
      ...
    }
  }
  ...
}
```

Step types (MSCCL's): `s` send `src`; `r` receive into `dst`; `rrc` receive, reduce with `src`,
store into `dst`; `rcs` receive, store into `dst` and send on; `rrs` receive, reduce with `src`,
send on; `rrcs` receive, reduce with `src`, store into `dst` and send on; `cpy` `dst = src`;
`re` `dst = dst + src`; `nop` (only waits). `_` is no buffer (an offset of -1 in MSCCL XML).

One step is ccopt's own, not MSCCL's: `fn o[K] -> B[J] xN` applies a fused collective's
elementwise body to the N chunks at `B[J]` in place, which hold output chunks K..K+N-1 (the
source names the chunks, it is not read). `fuse-collective` + `lower-collectives{fused_body=
in-algorithm}` put it at the step where each chunk's reduction completes, so the body runs once
per chunk on the rank that completes it while the other chunks are still moving; the steps after
it carry the body's results. Only an all-reduce that a `coll.fused_all_reduce` names may hold
one, each output chunk in exactly one `fn`; MSCCL XML cannot express it and refuses.

Steps live in one dense i32 array per thread block (8 numbers a step), so that a 1024-rank
algorithm with two million steps stays a few thousand ops: the verifier and the interpreter work
on them with numpy. The verifier proves what can be proven without data: every send has its
receive (same order and size on every channel), dependencies are acyclic and no rank can wait
forever (the blocking semantics simulated symbolically, sends buffered). A refusal names the rank,
thread block and step.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
from xdsl.dialects.builtin import (
    I32,
    I64,
    BytesAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError
from ccopt.dialects.attrs import ALGORITHM_ATTRIBUTE, parse_i64

INT32_MAX = 2**31 - 1
"""Offsets, counts and ids are stored as i32."""

MAX_BYTES = 2**63 - 1
"""`maxBytes` of an algorithm good for every size (printed `max`)."""

MAX_CHANNELS = 2**16
"""Channels an algorithm may declare: far above any runtime's (NCCL runs at most 64), and low
enough that the verifier's (rank, peer, channel) keys stay within 64 bits."""


class Step(IntEnum):
    """Step types, numbered as stored; `STEP_NAMES` are their MSCCL spellings."""

    NOP = 0
    SEND = 1
    RECV = 2
    RECV_REDUCE_COPY = 3
    RECV_COPY_SEND = 4
    RECV_REDUCE_SEND = 5
    RECV_REDUCE_COPY_SEND = 6
    COPY = 7
    REDUCE = 8
    APPLY = 9


MSCCL_STEP_NAMES = ("nop", "s", "r", "rrc", "rcs", "rrs", "rrcs", "cpy", "re")
"""The step types MSCCL's runtime and XML know."""
MSCCL_STEP_CODES = {n: i for i, n in enumerate(MSCCL_STEP_NAMES)}
STEP_NAMES = (*MSCCL_STEP_NAMES, "fn")
STEP_CODES = {n: i for i, n in enumerate(STEP_NAMES)}
SENDS = (Step.SEND, Step.RECV_COPY_SEND, Step.RECV_REDUCE_SEND, Step.RECV_REDUCE_COPY_SEND)
RECEIVES = (
    Step.RECV,
    Step.RECV_REDUCE_COPY,
    Step.RECV_COPY_SEND,
    Step.RECV_REDUCE_SEND,
    Step.RECV_REDUCE_COPY_SEND,
)
READS_SRC = (
    Step.SEND,
    Step.RECV_REDUCE_COPY,
    Step.RECV_REDUCE_SEND,
    Step.RECV_REDUCE_COPY_SEND,
    Step.COPY,
    Step.REDUCE,
    Step.APPLY,
)
WRITES_DST = (
    Step.RECV,
    Step.RECV_REDUCE_COPY,
    Step.RECV_COPY_SEND,
    Step.RECV_REDUCE_COPY_SEND,
    Step.COPY,
    Step.REDUCE,
    Step.APPLY,
)

BUFFERS = ("i", "o", "s")
"""Input, output, scratch; -1 is no buffer."""

# columns of a thread block's step table
TYPE, SRCBUF, SRCOFF, DSTBUF, DSTOFF, CNT, DEPID, DEPS = range(8)
FIELDS = 8

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce")
ROOTED = ("broadcast", "reduce")
"""The collectives that have a root rank."""
"""The collectives an algorithm can implement, in the MSCCL runtime's spelling."""

PROTOCOLS = ("Simple", "LL", "LL128")


def steps_array(rows: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """A step table: one row of 8 int32 per step (see the column names above)."""
    a = np.asarray(rows, dtype=np.int32)
    return a.reshape(-1, FIELDS)


@dataclass
class ThreadBlock:
    """A thread block: sends to `send`, receives from `recv` (-1: none) on channel `chan`."""

    send: int
    recv: int
    chan: int
    steps: np.ndarray = field(default_factory=lambda: steps_array([]))


@dataclass
class Gpu:
    """One rank: its buffer sizes in chunks and its thread blocks (ids are positions)."""

    in_chunks: int
    out_chunks: int
    scratch_chunks: int
    tbs: list[ThreadBlock] = field(default_factory=list)


@dataclass
class Algorithm:
    """An algorithm as plain data: what readers, generators, the verifier and the interpreter
    share (the IR op converts to and from it without touching single steps)."""

    name: str
    collective: str
    gpus: list[Gpu]
    proto: str = "Simple"
    nchannels: int = 1
    chunks_per_loop: int = 1
    inplace: bool = False
    outofplace: bool = True
    min_bytes: int = 0
    max_bytes: int = MAX_BYTES
    root: int = 0

    @property
    def ranks(self) -> int:
        return len(self.gpus)

    def step_count(self) -> int:
        return sum(len(tb.steps) for g in self.gpus for tb in g.tbs)


class AlgorithmError(Exception):
    """A fault of an algorithm, at a rank, thread block and step (of type `kind`) where it has
    one."""

    def __init__(
        self,
        message: str,
        rank: int | None = None,
        tb: int | None = None,
        step: int | None = None,
        kind: int | None = None,
    ):
        super().__init__(message)
        self.message, self.rank, self.tb, self.step, self.kind = message, rank, tb, step, kind

    def __str__(self) -> str:
        if self.rank is None:
            return self.message
        return f"{where(self.rank, self.tb, self.step, self.kind)}: {self.message}"


def where(
    rank: int | None, tb: int | None = None, step: int | None = None, kind: int | None = None
) -> str:
    """`rank 2 tb 0 step 3 (rrc)`."""
    out = f"rank {rank}"
    if tb is not None:
        out += f" tb {tb}"
    if step is not None:
        out += f" step {step}"
    if kind is not None:
        out += f" ({STEP_NAMES[kind] if 0 <= kind < len(STEP_NAMES) else kind})"
    return out


# ---------------------------------------------------------------------------------------------
# verification


@dataclass
class Flat:
    """Every step of an algorithm in one table (thread blocks in rank order, steps in order)."""

    col: np.ndarray  # (8, N): every step's fields, by column (C order: each column contiguous)
    rank: np.ndarray  # (N,) rank of each step
    tb: np.ndarray  # (N,) global thread-block index of each step
    index: np.ndarray  # (N,) position in its thread block
    tb_rank: np.ndarray  # per global thread block
    tb_local: np.ndarray  # its id within its rank
    tb_send: np.ndarray
    tb_recv: np.ndarray
    tb_chan: np.ndarray
    tb_start: np.ndarray  # index of its first step
    tb_len: np.ndarray
    gpu_tb_start: np.ndarray  # global index of each rank's thread block 0


COPY_PIECE = 1 << 15
"""Steps transposed at a time by `_columns` (a piece's rows and columns stay in cache)."""


def _columns(blocks: list[np.ndarray], n: int) -> np.ndarray:
    """The step tables one after another, as one contiguous row per field: every check reads a
    column, and a strided column (a transpose's own layout) costs as much to read as the whole
    table. Transposed a piece at a time: one transpose of the whole is 3-5x slower."""
    out = np.empty((FIELDS, n), np.int64)
    at, piece, size = 0, [], 0
    for block in [*blocks, None]:
        if block is not None:
            piece.append(block)
            size += len(block)
        if size and (size >= COPY_PIECE or block is None):
            out[:, at : at + size] = (piece[0] if len(piece) == 1 else np.concatenate(piece)).T
            at, piece, size = at + size, [], 0
    return out


def _huge_thread_block_field(alg: Algorithm) -> AlgorithmError:
    """The error for a thread block whose send, recv or chan does not fit in 64 bits (found
    only when numpy could not hold them: no loop over the thread blocks otherwise)."""
    for r, g in enumerate(alg.gpus):
        for t, tb in enumerate(g.tbs):
            for what, value in (("send", tb.send), ("recv", tb.recv), ("chan", tb.chan)):
                if not -1 <= value <= INT32_MAX:
                    return AlgorithmError(f"{what} {value} is out of range", r, t)
    return AlgorithmError("a thread block's send, recv or chan is out of range")


def flatten(alg: Algorithm, columns: np.ndarray | None = None) -> Flat:
    """The algorithm's steps as columns. `columns`: what `_columns` makes of the thread blocks'
    tables, where the caller has it already (a reader that made the tables as views of it)."""
    tbs = [tb for g in alg.gpus for tb in g.tbs]
    counts = np.array([len(g.tbs) for g in alg.gpus], dtype=np.int64)
    try:
        info = np.array(
            [(tb.send, tb.recv, tb.chan, len(tb.steps)) for tb in tbs], dtype=np.int64
        ).reshape(-1, 4)
    except OverflowError:
        raise _huge_thread_block_field(alg) from None
    lens = info[:, 3].copy()
    starts = np.cumsum(lens) - lens
    gpu_tb_start = np.cumsum(counts) - counts
    tb_rank = np.repeat(np.arange(len(alg.gpus), dtype=np.int64), counts)
    if columns is None:
        columns = _columns([tb.steps for tb in tbs], int(lens.sum()))
    elif columns.shape != (FIELDS, int(lens.sum())):
        raise ValueError("the columns given are not the thread blocks' steps")
    n = columns.shape[1]
    tb_index = np.repeat(np.arange(len(tbs), dtype=np.int64), lens)
    return Flat(
        col=columns,
        rank=tb_rank[tb_index],
        tb=tb_index,
        index=np.arange(n, dtype=np.int64) - np.repeat(starts, lens),
        tb_rank=tb_rank,
        tb_local=np.arange(len(tbs), dtype=np.int64) - gpu_tb_start[tb_rank],
        tb_send=info[:, 0].copy(),
        tb_recv=info[:, 1].copy(),
        tb_chan=info[:, 2].copy(),
        tb_start=starts,
        tb_len=lens,
        gpu_tb_start=gpu_tb_start,
    )


def describe_step(flat: Flat, i: int) -> str:
    return where(
        int(flat.rank[i]),
        int(flat.tb_local[flat.tb[i]]),
        int(flat.index[i]),
        int(flat.col[TYPE, i]),
    )


def step_error(flat: Flat, i: int, message: str) -> AlgorithmError:
    kind = int(flat.col[TYPE, i])
    return AlgorithmError(
        message,
        int(flat.rank[i]),
        int(flat.tb_local[flat.tb[i]]),
        int(flat.index[i]),
        kind if 0 <= kind < len(STEP_NAMES) else None,
    )


def check_header(alg: Algorithm) -> None:
    if alg.collective not in COLLECTIVES:
        raise AlgorithmError(
            f"unknown collective '{alg.collective}' (one of {', '.join(COLLECTIVES)})"
        )
    if alg.proto not in PROTOCOLS:
        raise AlgorithmError(f"unknown protocol '{alg.proto}' (one of {', '.join(PROTOCOLS)})")
    if not alg.gpus:
        raise AlgorithmError("an algorithm needs at least one rank")
    if not 0 <= alg.root < alg.ranks:
        raise AlgorithmError(f"root {alg.root} is not one of the {alg.ranks} ranks")
    if alg.root and alg.collective not in ROOTED:
        raise AlgorithmError(f"{alg.collective} has no root (only {' and '.join(ROOTED)} do)")
    if not 1 <= alg.nchannels <= MAX_CHANNELS:
        raise AlgorithmError(f"nchannels {alg.nchannels} is not between 1 and {MAX_CHANNELS}")
    check_buffer_sizes(alg)
    if not 0 <= alg.min_bytes <= alg.max_bytes <= MAX_BYTES:
        raise AlgorithmError(
            f"bytes range [{alg.min_bytes}, {alg.max_bytes}] is not within [0, {MAX_BYTES}]"
            if alg.min_bytes < 0 or alg.max_bytes > MAX_BYTES
            else f"bytes range [{alg.min_bytes}, {alg.max_bytes}] is empty"
        )
    if not (alg.inplace or alg.outofplace):
        raise AlgorithmError("an algorithm must be usable in place, out of place or both")


def check_buffer_sizes(alg: Algorithm) -> None:
    """Every rank's chunk counts fit the step tables' i32 offsets, and nchunksperloop is the
    largest of them: the MSCCL runtime cuts a loop's data into that many chunks (msccl-tools
    writes max(i_chunks, o_chunks) over the ranks), so a smaller one has steps address chunks
    past the buffers and a larger one leaves part of every loop's data untouched."""
    largest = 1
    for r, g in enumerate(alg.gpus):
        for what, count in (("i_chunks", g.in_chunks), ("o_chunks", g.out_chunks)):
            if not 0 <= count <= INT32_MAX:
                raise AlgorithmError(f"{what} {count} is not between 0 and {INT32_MAX}", r)
            largest = max(largest, count)
        if not 0 <= g.scratch_chunks <= INT32_MAX:
            raise AlgorithmError(f"s_chunks {g.scratch_chunks} is not between 0 and {INT32_MAX}", r)
    if alg.chunks_per_loop != largest:
        raise AlgorithmError(
            f"nchunksperloop is {alg.chunks_per_loop} but the largest buffer holds {largest} "
            "chunks: the runtime cuts each loop's data into nchunksperloop chunks"
        )


def check_thread_blocks(alg: Algorithm) -> None:
    """Peers and channels of every thread block; each (peer, channel) connection is served by one
    thread block per direction, as the MSCCL runtime requires."""
    for r, g in enumerate(alg.gpus):
        sends: dict[tuple[int, int], int] = {}
        recvs: dict[tuple[int, int], int] = {}
        for t, tb in enumerate(g.tbs):
            for peer, what, seen in ((tb.send, "send", sends), (tb.recv, "recv", recvs)):
                if peer == -1:
                    continue
                if not 0 <= peer < alg.ranks or peer == r:
                    raise AlgorithmError(f"{what} peer {peer} is not another rank", r, t)
                if (peer, tb.chan) in seen:
                    raise AlgorithmError(
                        f"tb {seen[peer, tb.chan]} already has {what} peer {peer} on channel "
                        f"{tb.chan}",
                        r,
                        t,
                    )
                seen[peer, tb.chan] = t
            if not 0 <= tb.chan < alg.nchannels:
                raise AlgorithmError(
                    f"channel {tb.chan} is not below nchannels {alg.nchannels}", r, t
                )


def thread_blocks_plausible(alg: Algorithm, flat: Flat) -> bool:
    """Whether `check_thread_blocks` finds nothing, tested over all thread blocks at once (a
    halving-doubling algorithm has ten thousand: the exact check's loop is then most of the
    verifier's time). It runs only when this says no, so refusals stay the same."""
    chan, rank, n = flat.tb_chan, flat.tb_rank, alg.ranks
    if ((chan < 0) | (chan >= alg.nchannels)).any():
        return False
    for peer in (flat.tb_send, flat.tb_recv):
        has = peer != -1
        if (has & ((peer < 0) | (peer >= n) | (peer == rank))).any():
            return False
        keys = ((rank * n + peer) * alg.nchannels + chan)[has]
        if len(np.unique(keys)) != len(keys):
            return False
    return True


def _table(kinds: Sequence[Step]) -> np.ndarray:
    """A lookup table: step type -> whether it is one of `kinds`."""
    t = np.zeros(len(STEP_NAMES), dtype=bool)
    t[list(kinds)] = True
    return t


IS_SEND, IS_RECV = _table(SENDS), _table(RECEIVES)
USES_SRC, USES_DST = _table(READS_SRC), _table(WRITES_DST)


def _first(mask: np.ndarray) -> int | None:
    hit = np.flatnonzero(mask)
    return int(hit[0]) if hit.size else None


def _unsigned(a: np.ndarray) -> np.ndarray:
    """An int64 column as uint64, so that one `max` finds negative values too (they wrap)."""
    return a.view(np.uint64)


def check_steps(alg: Algorithm, flat: Flat) -> None:
    """Types, buffers, bounds and dependency targets of every step (vectorized). Each check is
    first a cheap test over the whole table (a reduction, no index list); only when it fails
    does the exact one find the first faulty step, so refusals name the same step."""
    c = flat.col
    if not c.shape[1]:
        return
    kind, cnt = c[TYPE], c[CNT]
    if _unsigned(kind).max() >= len(STEP_NAMES):
        i = int(np.flatnonzero((kind < 0) | (kind >= len(STEP_NAMES)))[0])
        raise step_error(flat, i, f"unknown step type {int(kind[i])}")
    if cnt.min() < 0:
        i = int(np.flatnonzero(cnt < 0)[0])
        raise step_error(flat, i, "count must be >= 0")
    sizes = np.array([[g.in_chunks, g.out_chunks, g.scratch_chunks] for g in alg.gpus], np.int64)
    uniform = bool((sizes == sizes[0]).all())
    for used, buf, off, what in (
        (USES_SRC[kind], c[SRCBUF], c[SRCOFF], "source"),
        (USES_DST[kind], c[DSTBUF], c[DSTOFF], "destination"),
    ):
        if (used & ((_unsigned(buf) > 2) | (off < 0))).any():
            i = int(np.flatnonzero(used & ((buf < 0) | (buf > 2) | (off < 0)))[0])
            raise step_error(flat, i, f"needs a {what} buffer and offset")
        # the used steps' buffers are 0..2 now; the others' limits do not matter
        if uniform:
            limit = sizes[0].take(buf, mode="clip")
        else:
            limit = sizes[flat.rank, np.clip(buf, 0, 2)]
        if (used & (off + cnt > limit)).any():
            i = int(np.flatnonzero(used & (off + cnt > limit))[0])
            raise step_error(
                flat,
                i,
                f"{what} {BUFFERS[int(buf[i])]}[{int(off[i])}] x{int(cnt[i])} is outside the "
                f"buffer of {int(limit[i])} chunks",
            )
    for peers, kinds, message in (
        (flat.tb_send, IS_SEND, "sends, but its thread block has no send peer"),
        (flat.tb_recv, IS_RECV, "receives, but its thread block has no recv peer"),
    ):
        if (peers < 0).any() and (i := _first(kinds[kind] & (peers[flat.tb] < 0))) is not None:
            raise step_error(flat, i, message)
    check_dependencies(alg, flat)
    if (kind == Step.APPLY).any():
        body_steps(alg, flat)


def check_dependencies(alg: Algorithm, flat: Flat) -> None:
    """Every `after tb.step` names a step of the rank; a step without one has -1 in both
    fields. Only the steps with something there are looked at (most have nothing)."""
    depid, deps = flat.col[DEPID], flat.col[DEPS]
    named = np.flatnonzero((depid != -1) | (deps != -1))
    if not named.size:
        return
    depid, deps, rank = depid[named], deps[named], flat.rank[named]
    has = depid >= 0
    ntbs = np.array([len(g.tbs) for g in alg.gpus], np.int64)[rank]
    target = flat.gpu_tb_start[rank] + np.where(has & (depid < ntbs), depid, 0)
    bad = (depid < -1) | (has & (depid >= ntbs)) | ((depid == -1) & (deps != -1))
    bad |= has & ((deps < 0) | (deps >= flat.tb_len[target]))
    if (j := _first(bad)) is not None:
        i = int(named[j])
        raise step_error(
            flat, i, f"depends on tb {int(depid[j])} step {int(deps[j])}, which does not exist"
        )


def body_steps(alg: Algorithm, flat: Flat) -> np.ndarray:
    """Per output chunk, the `fn` step (flat index) that applies the fused body to it: an
    all-reduce's body runs once per chunk, so each chunk needs exactly one."""
    c = flat.col
    applies = np.flatnonzero(c[TYPE] == Step.APPLY)
    if alg.collective != "allreduce":
        raise step_error(flat, int(applies[0]), "applies a fused body: only an allreduce may")
    if (i := _first(c[SRCBUF, applies] != 1)) is not None:
        raise step_error(
            flat, int(applies[i]), "names the output chunks it computes: its source must be o[K]"
        )
    chunks = alg.gpus[0].out_chunks
    owner = np.full(chunks, -1, dtype=np.int64)
    for i in applies.tolist():
        first, count = int(c[SRCOFF, i]), int(c[CNT, i])
        if first + count > chunks:
            raise step_error(flat, i, f"names chunks beyond the {chunks} output chunks")
        if (twice := _first(owner[first : first + count] >= 0)) is not None:
            k = first + twice
            raise step_error(
                flat,
                i,
                f"applies the body to output chunk {k} again (first at "
                f"{describe_step(flat, int(owner[k]))})",
            )
        owner[first : first + count] = i
    if (k := _first(owner < 0)) is not None:
        raise AlgorithmError(f"no fn step applies the fused body to output chunk {k}")
    return owner


def _unmatched(
    alg: Algorithm,
    flat: Flat,
    send_i: np.ndarray,
    recv_i: np.ndarray,
    tb_send_key: np.ndarray,
    tb_recv_key: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Name the first send without its receive or receive without its send (connections in key
    order); the orders of sends and receives by connection if every message has both."""
    n, c = alg.ranks, alg.nchannels
    send_key, recv_key = tb_send_key[flat.tb[send_i]], tb_recv_key[flat.tb[recv_i]]
    so = np.argsort(send_key, kind="stable")
    ro = np.argsort(recv_key, kind="stable")
    sk, rk = send_key[so], recv_key[ro]
    if np.array_equal(sk, rk):
        return so, ro
    keys = np.union1d(sk, rk)
    ns = np.searchsorted(sk, keys, "right") - np.searchsorted(sk, keys, "left")
    nr = np.searchsorted(rk, keys, "right") - np.searchsorted(rk, keys, "left")
    j = int(np.flatnonzero(ns != nr)[0])
    k, got_s, got_r = int(keys[j]), int(ns[j]), int(nr[j])
    chan, pair = k % c, k // c
    src, dst = pair // n, pair % n
    if got_s > got_r:  # name the first send without a receive
        i = int(send_i[so][sk == k][got_r])
        raise step_error(
            flat,
            i,
            f"sends to rank {dst} on channel {chan}, but rank {dst} receives only {got_r} of "
            f"the {got_s} messages rank {src} sends it there",
        )
    i = int(recv_i[ro][rk == k][got_s])
    raise step_error(
        flat,
        i,
        f"receives from rank {src} on channel {chan}, but rank {src} sends only {got_s} of "
        f"the {got_r} messages rank {dst} receives there",
    )


def match_messages(alg: Algorithm, flat: Flat) -> tuple[np.ndarray, np.ndarray]:
    """Pair every sending step with its receiving step: the k-th send on a connection (sender,
    receiver, channel) with the k-th receive there, and check that they carry as many chunks.
    Returns (send steps, their receive steps), flat indices."""
    kind = flat.col[TYPE]
    send_i = np.flatnonzero(IS_SEND[kind])
    recv_i = np.flatnonzero(IS_RECV[kind])
    n, c = alg.ranks, alg.nchannels
    # a connection is served by one thread block on each side: key its steps by thread block
    tb_send_key = (flat.tb_rank * n + flat.tb_send) * c + flat.tb_chan
    tb_recv_key = (flat.tb_recv * n + flat.tb_rank) * c + flat.tb_chan
    so, s_keys, s_counts = _grouped_order(flat.tb[send_i], tb_send_key)
    ro, r_keys, r_counts = _grouped_order(flat.tb[recv_i], tb_recv_key)
    if not (np.array_equal(s_keys, r_keys) and np.array_equal(s_counts, r_counts)):
        so, ro = _unmatched(alg, flat, send_i, recv_i, tb_send_key, tb_recv_key)
    sends, recvs = send_i[so], recv_i[ro]
    cnt = flat.col[CNT]
    if (j := _first(cnt[sends] != cnt[recvs])) is not None:
        a, b = int(sends[j]), int(recvs[j])
        raise step_error(
            flat,
            b,
            f"receives {int(cnt[b])} chunks but its send, {describe_step(flat, a)}, sends "
            f"{int(cnt[a])}",
        )
    return sends, recvs


MAX_PADDED_DEGREE = 8
"""Up to this many other successors a step, `levels` keeps them in padded rows (one gather each a
level); beyond it, in compressed rows."""


def _grouped_order(
    step_tb: np.ndarray, tb_key: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stable sort of steps (given by their thread blocks, in thread-block order) by their
    thread block's key, without sorting the steps: the thread blocks sorted, each one's steps
    kept together in order. Also the keys of the thread blocks that have steps, in that order,
    and how many steps each has."""
    per_tb = np.bincount(step_tb, minlength=len(tb_key))
    tb_order = np.argsort(tb_key, kind="stable")
    tb_order = tb_order[per_tb[tb_order] > 0]
    counts = per_tb[tb_order]
    first = (np.cumsum(per_tb) - per_tb)[tb_order] - (np.cumsum(counts) - counts)
    order = np.repeat(first, counts) + np.arange(len(step_tb))
    return order, tb_key[tb_order], counts


def levels(n: int, has_next: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Kahn's algorithm, a whole frontier at a time: each step's level (the length of the longest
    chain of edges before it), -1 for steps on or behind a cycle. Linear in steps and edges.

    The edges are i -> i + 1 where `has_next[i]` (a thread block's order, not stored) and
    `src -> dst`. A ring's levels are thousands of frontiers of a thousand steps, so the cost is
    a level's numpy calls and the gathers they make: the other successors sit in D rows padded
    with a step n that never becomes ready (D is a step's most, 1 or 2 for the library's
    algorithms), a gather each."""
    src, dst = np.asarray(src, np.intp), np.asarray(dst, np.intp)
    out_count = np.bincount(src, minlength=n)
    degree = int(out_count.max(initial=0))
    if degree > MAX_PADDED_DEGREE:
        return _levels_csr(n, has_next, src, dst, out_count)
    rows = np.full((degree, n + 1), n, dtype=np.intp)
    if degree == 1:
        rows[0, src] = dst
    elif degree:
        order = np.argsort(src, kind="stable")
        sorted_src = src[order]
        slot = np.arange(len(src)) - (np.cumsum(out_count) - out_count)[sorted_src]
        rows[slot, sorted_src] = dst[order]
    indeg = np.bincount(dst, minlength=n + 1)
    indeg[1:n] += has_next[: n - 1]
    indeg[n] = np.iinfo(np.intp).max // 2  # the padding step: never ready
    next_ok = np.append(has_next, False)
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    depth = 0
    while frontier.size:
        level[frontier] = depth
        chained = frontier[next_ok.take(frontier)] + 1
        reached = np.concatenate([chained, *(r.take(frontier) for r in rows)])
        np.subtract.at(indeg, reached, 1)
        frontier = reached[indeg.take(reached) == 0]
        if frontier.size > 1:  # a step reached twice in one level (np.unique hashes: slower)
            frontier.sort()
            keep = np.empty(frontier.size, dtype=bool)
            keep[0] = True
            np.not_equal(frontier[1:], frontier[:-1], out=keep[1:])
            frontier = frontier[keep]
        depth += 1
    return level


def _levels_csr(
    n: int, has_next: np.ndarray, src: np.ndarray, dst: np.ndarray, out_count: np.ndarray
) -> np.ndarray:
    """`levels` with the other successors in compressed rows, for a step of many successors."""
    after = np.flatnonzero(has_next)
    src, dst = np.concatenate([after, src]), np.concatenate([after + 1, dst])
    out_count = out_count + has_next
    order = np.argsort(src, kind="stable")
    targets = dst[order]
    out_start = np.cumsum(out_count) - out_count
    indeg = np.bincount(dst, minlength=n)
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    depth = 0
    while frontier.size:
        level[frontier] = depth
        counts = out_count[frontier]
        first = out_start[frontier] - (np.cumsum(counts) - counts)
        reached = targets[np.repeat(first, counts) + np.arange(int(counts.sum()))]
        np.subtract.at(indeg, reached, 1)
        frontier = reached[indeg[reached] == 0]
        if frontier.size > 1:
            frontier.sort()
            frontier = frontier[np.concatenate([[True], frontier[1:] != frontier[:-1]])]
        depth += 1
    return level


@dataclass
class Schedule:
    """What the verifier proves and the interpreter and simulators use: message pairs and a
    level per step (steps of one level can run in any order)."""

    flat: Flat
    sends: np.ndarray
    recvs: np.ndarray
    level: np.ndarray


def chained(flat: Flat) -> np.ndarray:
    """Per step, whether the next step is of its thread block (the edge i -> i + 1)."""
    has_next = np.zeros(len(flat.tb), dtype=bool)
    np.equal(flat.tb[1:], flat.tb[:-1], out=has_next[:-1])
    return has_next


def dependency_edges(flat: Flat) -> tuple[np.ndarray, np.ndarray]:
    """Cross-block dependencies as edges (before, after)."""
    dep = np.flatnonzero(flat.col[DEPID] >= 0)
    dep_src = (
        flat.tb_start[flat.gpu_tb_start[flat.rank[dep]] + flat.col[DEPID, dep]]
        + flat.col[DEPS, dep]
    )
    return dep_src, dep


def order_edges(flat: Flat) -> tuple[np.ndarray, np.ndarray]:
    """Thread-block order and cross-block dependencies as edges (before, after)."""
    after = np.flatnonzero(chained(flat))
    dep_src, dep = dependency_edges(flat)
    return np.concatenate([after, dep_src]), np.concatenate([after + 1, dep])


def stuck_chain(level: np.ndarray, src: np.ndarray, dst: np.ndarray) -> list[int]:
    """Steps that wait for each other forever: from the first blocked step, follow what each
    waits for until a step repeats."""
    blocked = np.flatnonzero(level < 0)
    mask = (level[dst] < 0) & (level[src] < 0)
    preds: dict[int, int] = {}
    for a, b in zip(src[mask].tolist(), dst[mask].tolist(), strict=True):
        if b not in preds or a != b - 1:  # prefer the cross-block wait over tb order
            preds[b] = a
    chain = [int(blocked[0])]
    seen = {chain[0]}
    while chain[-1] in preds:
        step = preds[chain[-1]]
        chain.append(step)
        if step in seen:
            break
        seen.add(step)
    return chain


def schedule(alg: Algorithm, columns: np.ndarray | None = None) -> Schedule:
    """Verify an algorithm and return its schedule; raise AlgorithmError naming the step.
    `columns`: its steps as `flatten` takes them, where the caller has them already."""
    check_header(alg)
    flat = flatten(alg, columns)
    if not thread_blocks_plausible(alg, flat):
        check_thread_blocks(alg)
    check_steps(alg, flat)
    n = len(flat.tb)
    has_next = chained(flat)
    dep_src, dep = dependency_edges(flat)
    sends, recvs = match_messages(alg, flat)
    level = levels(n, has_next, np.concatenate([dep_src, sends]), np.concatenate([dep, recvs]))
    if (level < 0).any():
        order_level = levels(n, has_next, dep_src, dep)
        src, dst = order_edges(flat)
        if (order_level < 0).any():
            chain = stuck_chain(order_level, src, dst)
            what = "dependencies form a cycle: it waits for"
        else:
            src, dst = np.concatenate([src, sends]), np.concatenate([dst, recvs])
            chain = stuck_chain(level, src, dst)
            what = "can never run (deadlock): it waits for"
        waits = " -> ".join(describe_step(flat, i) for i in chain[1:8])
        raise step_error(flat, chain[0], f"{what} {waits}")
    return Schedule(flat, sends, recvs, level)


# ---------------------------------------------------------------------------------------------
# IR


@functools.lru_cache(maxsize=4096)
def _int(v: int) -> IntegerAttr:
    """An i64 attribute (cached: attributes are immutable, and building one verifies it, which
    costs more than everything else when a thousand-rank algorithm becomes IR)."""
    return IntegerAttr(v, i64)


STEP_LINE = re.compile(
    r"(?:(\d+)\s*:\s*)?(nop|s|r|rrc|rcs|rrs|rrcs|cpy|re|fn)\s+(_|[ios]\[\d+\])\s*->\s*"
    r"(_|[ios]\[\d+\])\s+x(\d+)(?:\s+after\s+(\d+)\.(\d+))?"
)


def _operand(text: str) -> tuple[int, int]:
    if text == "_":
        return -1, -1
    return BUFFERS.index(text[0]), int(text[2:-1])


def _print_operand(buf: int, off: int) -> str:
    return "_" if buf < 0 or off < 0 else f"{BUFFERS[buf]}[{off}]"


def format_steps(steps: np.ndarray) -> list[str]:
    """One line per step: `3: rrc i[3] -> i[3] x1 after 1.2`."""
    lines = []
    for k, (t, sb, so, db, do, cnt, di, ds) in enumerate(steps.tolist()):
        line = f"{k}: {STEP_NAMES[t]} {_print_operand(sb, so)} -> {_print_operand(db, do)} x{cnt}"
        if di >= 0:
            line += f" after {di}.{ds}"
        lines.append(line)
    return lines


STEP_LINES = re.compile(
    r"^[ \t]*(?:(\d+)[ \t]*:[ \t]*)?(nop|s|r|rrc|rcs|rrs|rrcs|cpy|re|fn)[ \t]+(?:([ios])\[(\d+)\]|_)"
    r"[ \t]*->[ \t]*(?:([ios])\[(\d+)\]|_)[ \t]+x(\d+)(?:[ \t]+after[ \t]+(\d+)\.(\d+))?"
    r"[ \t]*(?://[^\n]*)?$",
    re.M,
)


def fast_steps(body: str) -> np.ndarray | None:
    """All steps of a block in one regex pass and column-wise conversion; None when some line
    does not fit (then `parse_steps` reads line by line and says where)."""
    found = STEP_LINES.findall(body)
    lines = sum(1 for line in body.split("\n") if line.split("//", 1)[0].strip())
    if len(found) != lines:
        return None
    if not found:
        return steps_array([])
    cols = np.array(found, dtype=str).T
    if np.char.str_len(cols[[0, 3, 5, 6, 7, 8]]).max() > 10:
        return None  # a number past int32 (and maybe int64): `parse_steps` says where

    def number(col: np.ndarray) -> np.ndarray:
        return np.where(col == "", "-1", col).astype(np.int64)

    index = number(cols[0])
    numbered = index >= 0
    if not np.array_equal(index[numbered], np.flatnonzero(numbered)):
        return None
    kinds, inverse = np.unique(cols[1], return_inverse=True)
    table = np.empty((len(found), FIELDS), dtype=np.int64)
    table[:, TYPE] = np.array([STEP_CODES[k] for k in kinds.tolist()])[inverse]
    for buf_col, off_col, buf, off in ((2, 3, SRCBUF, SRCOFF), (4, 5, DSTBUF, DSTOFF)):
        letters = cols[buf_col]
        table[:, buf] = np.select([letters == "i", letters == "o", letters == "s"], [0, 1, 2], -1)
        table[:, off] = number(cols[off_col])
    table[:, CNT] = number(cols[6])
    table[:, DEPID] = number(cols[7])
    table[:, DEPS] = number(cols[8])
    if table.max() > INT32_MAX:
        return None
    return table.astype(np.int32)


def parse_steps(parser: Parser) -> np.ndarray:
    """Read `{ step lines }` straight from the source text (a step is not an op: going through
    the token stream would make a million-step algorithm take minutes), then resume after `}`."""
    text = parser.lexer.input.content
    start = parser.pos
    parser.parse_punctuation("{")
    end = text.find("}", start)
    if end < 0:
        parser.raise_error("expected '}' after the steps", start, start + 1)
    fast = fast_steps(text[start + 1 : end])
    if fast is not None:
        parser._resume_from(end + 1)  # pyright: ignore[reportPrivateUsage]
        return fast
    rows: list[tuple[int, ...]] = []
    pos = start + 1
    for line in text[start + 1 : end].split("\n"):
        stripped = line.split("//", 1)[0].strip()
        if stripped:
            m = STEP_LINE.fullmatch(stripped)
            at = pos + line.index(stripped[0])
            if m is None:
                parser.raise_error(
                    "expected a step: [N:] TYPE SRC -> DST xCOUNT [after TB.STEP], e.g. "
                    "'rrc i[3] -> i[3] x1'",
                    at,
                    at + len(stripped),
                )
            if m.group(1) is not None and int(m.group(1)) != len(rows):
                parser.raise_error(
                    f"step {m.group(1)} is numbered out of order (expected {len(rows)})",
                    at,
                    at + len(stripped),
                )
            sb, so = _operand(m.group(3))
            db, do = _operand(m.group(4))
            dep = (int(m.group(6)), int(m.group(7))) if m.group(6) is not None else (-1, -1)
            row = (STEP_CODES[m.group(2)], sb, so, db, do, int(m.group(5)), *dep)
            if max(row) > INT32_MAX:
                parser.raise_error(
                    f"a number of this step exceeds {INT32_MAX}", at, at + len(stripped)
                )
            rows.append(row)
        pos += len(line) + 1
    parser._resume_from(end + 1)  # pyright: ignore[reportPrivateUsage]
    return steps_array(rows)


def dense_steps(steps: np.ndarray) -> DenseArrayBase:
    return DenseArrayBase(i32, BytesAttr(np.ascontiguousarray(steps, dtype="<i4").tobytes()))


def _parse_body(parser: Parser) -> Region:
    """A region of ops; `{}` gets its (empty) block, as a single-block region needs."""
    region = parser.parse_region()
    if not region.blocks:
        region.add_block(Block())
    return region


def _keyword(parser: Parser, word: str) -> None:
    parser.parse_keyword(word)


def _parse_int(parser: Parser) -> int:
    return parse_i64(parser)


@irdl_op_definition
class TbOp(IRDLOperation):
    """A thread block of a rank: its steps run in order; it sends to `send` and receives from
    `recv` (-1 for none) on channel `chan`."""

    name = "algo.tb"
    tb_id = prop_def(IntegerAttr[I64])
    send = prop_def(IntegerAttr[I64])
    recv = prop_def(IntegerAttr[I64])
    chan = prop_def(IntegerAttr[I64])
    steps = prop_def(DenseArrayBase[I32])

    def __init__(self, tb_id: int, tb: ThreadBlock):
        super().__init__(
            properties={
                "tb_id": _int(tb_id),
                "send": _int(tb.send),
                "recv": _int(tb.recv),
                "chan": _int(tb.chan),
                "steps": dense_steps(tb.steps),
            }
        )

    def thread_block(self) -> ThreadBlock:
        data = np.frombuffer(self.steps.data.data, dtype="<i4").reshape(-1, FIELDS)
        return ThreadBlock(self.send.value.data, self.recv.value.data, self.chan.value.data, data)

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), GpuOp):
            raise VerifyException("must be inside an algo.gpu")
        if len(self.steps.data.data) % (4 * FIELDS):
            raise VerifyException(f"steps must hold {FIELDS} numbers per step")

    @classmethod
    def parse(cls, parser: Parser) -> TbOp:
        tb_id = _parse_int(parser)
        _keyword(parser, "send")
        send = _parse_int(parser)
        _keyword(parser, "recv")
        recv = _parse_int(parser)
        _keyword(parser, "chan")
        chan = _parse_int(parser)
        return cls(tb_id, ThreadBlock(send, recv, chan, parse_steps(parser)))

    def print(self, printer: Printer) -> None:
        tb = self.thread_block()
        printer.print_string(
            f" {self.tb_id.value.data} send {tb.send} recv {tb.recv} chan {tb.chan} {{"
        )
        # one string for all steps (a printer call per line costs minutes at a million steps)
        indent = printer._indent * printer.indent_num_spaces  # pyright: ignore[reportPrivateUsage]
        inner = "\n" + " " * (indent + printer.indent_num_spaces)
        lines = "".join(inner + line for line in format_steps(tb.steps))
        printer.print_string(lines + "\n" + " " * indent + "}", indent=0)


@irdl_op_definition
class GpuOp(IRDLOperation):
    """One rank of an algorithm: buffer sizes in chunks and its thread blocks."""

    name = "algo.gpu"
    rank = prop_def(IntegerAttr[I64])
    in_chunks = prop_def(IntegerAttr[I64])
    out_chunks = prop_def(IntegerAttr[I64])
    scratch_chunks = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, rank: int, gpu: Gpu, body: Region | None = None):
        super().__init__(
            properties={
                "rank": _int(rank),
                "in_chunks": _int(gpu.in_chunks),
                "out_chunks": _int(gpu.out_chunks),
                "scratch_chunks": _int(gpu.scratch_chunks),
            },
            regions=[body or Region(Block([TbOp(t, tb) for t, tb in enumerate(gpu.tbs)]))],
        )

    def tb_ops(self) -> list[TbOp]:
        return [op for op in self.body.block.ops if isinstance(op, TbOp)]

    def gpu(self) -> Gpu:
        return Gpu(
            self.in_chunks.value.data,
            self.out_chunks.value.data,
            self.scratch_chunks.value.data,
            [op.thread_block() for op in self.tb_ops()],
        )

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), AlgorithmOp):
            raise VerifyException("must be inside an algo.algorithm")
        for t, op in enumerate(self.body.block.ops):
            if not isinstance(op, TbOp):
                raise VerifyException(f"holds only algo.tb ops, got '{op.name}'")
            if op.tb_id.value.data != t:
                raise VerifyException(
                    f"thread block #{t} has id {op.tb_id.value.data}: ids are positions"
                )

    @classmethod
    def parse(cls, parser: Parser) -> GpuOp:
        rank = _parse_int(parser)
        sizes = []
        for word in ("in", "out", "scratch"):
            _keyword(parser, word)
            sizes.append(_parse_int(parser))
        return cls(rank, Gpu(*sizes), _parse_body(parser))

    def print(self, printer: Printer) -> None:
        printer.print_string(
            f" {self.rank.value.data} in {self.in_chunks.value.data} out "
            f"{self.out_chunks.value.data} scratch {self.scratch_chunks.value.data} "
        )
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


@irdl_op_definition
class AlgorithmOp(IRDLOperation):
    """A collective algorithm over `ranks` ranks, one `algo.gpu` per rank in rank order.

    `inplace`/`outofplace` say which calls it serves (in place, the output buffer is the input
    buffer: for allgather the input is block `rank` of the output, for reduce_scatter the output
    is block `rank` of the input). `proto`, `channels`, `chunksperloop` and `bytes` are MSCCL's
    runtime attributes; `root` is the root of broadcast and reduce.
    """

    name = "algo.algorithm"
    sym_name = prop_def(StringAttr)
    collective = prop_def(StringAttr)
    root = prop_def(IntegerAttr[I64])
    proto = prop_def(StringAttr)
    nchannels = prop_def(IntegerAttr[I64])
    chunks_per_loop = prop_def(IntegerAttr[I64])
    inplace = prop_def(IntegerAttr[I64])
    outofplace = prop_def(IntegerAttr[I64])
    min_bytes = prop_def(IntegerAttr[I64])
    max_bytes = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())

    def __init__(self, alg: Algorithm, body: Region | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(alg.name),
                "collective": StringAttr(alg.collective),
                "root": _int(alg.root),
                "proto": StringAttr(alg.proto),
                "nchannels": _int(alg.nchannels),
                "chunks_per_loop": _int(alg.chunks_per_loop),
                "inplace": _int(int(alg.inplace)),
                "outofplace": _int(int(alg.outofplace)),
                "min_bytes": _int(alg.min_bytes),
                "max_bytes": _int(alg.max_bytes),
            },
            regions=[body or Region(Block([GpuOp(r, g) for r, g in enumerate(alg.gpus)]))],
        )

    def gpu_ops(self) -> list[GpuOp]:
        return [op for op in self.body.block.ops if isinstance(op, GpuOp)]

    def algorithm(self) -> Algorithm:
        return Algorithm(
            name=self.sym_name.data,
            collective=self.collective.data,
            gpus=[op.gpu() for op in self.gpu_ops()],
            proto=self.proto.data,
            nchannels=self.nchannels.value.data,
            chunks_per_loop=self.chunks_per_loop.value.data,
            inplace=bool(self.inplace.value.data),
            outofplace=bool(self.outofplace.value.data),
            min_bytes=self.min_bytes.value.data,
            max_bytes=self.max_bytes.value.data,
            root=self.root.value.data,
        )

    def applies_body(self) -> bool:
        """Whether some step is an `fn`: the algorithm of a fused all-reduce."""
        return any(
            (op.thread_block().steps[:, TYPE] == Step.APPLY).any()
            for gpu in self.gpu_ops()
            for op in gpu.tb_ops()
        )

    def verify_(self) -> None:
        gpus = list(self.body.block.ops)
        for r, op in enumerate(gpus):
            if not isinstance(op, GpuOp):
                raise VerifyException(f"holds only algo.gpu ops, got '{op.name}'")
            if op.rank.value.data != r:
                raise VerifyException(
                    f"gpu #{r} has rank {op.rank.value.data}: ranks are positions"
                )
        for op in self.walk():  # the parts first: the whole is read from them
            if op is not self:
                try:
                    op.verify(verify_nested_ops=False)
                except VerifyException as e:
                    message = str(e).removeprefix("Operation does not verify: ")
                    raise OpError(op, message.split("\n")[0]) from None
        content = self._content()
        if content == getattr(self, "_verified", None):
            return  # proven already (a 2-million-step schedule takes seconds)
        try:
            schedule(self.algorithm())
        except AlgorithmError as e:
            raise OpError(self.blame(e), str(e)) from None
        self._verified = content

    def _content(self) -> list[tuple[str, dict[str, Attribute]]]:
        """Everything `algorithm()` reads, op by op (compared attribute by attribute, identity
        first: cheap while nothing changed)."""
        return [(op.name, dict(op.properties)) for op in self.walk()]

    def note_verified(self) -> None:
        """Record that the algorithm as it stands passed `schedule` (a reader that just
        verified it, with errors located in its own file, spares the module verifier)."""
        self._verified = self._content()

    def blame(self, error: AlgorithmError) -> Operation:
        """The op an error is about: the thread block, else the rank, else the algorithm."""
        if error.rank is None:
            return self
        gpu = self.gpu_ops()[error.rank]
        return gpu if error.tb is None else gpu.tb_ops()[error.tb]

    @classmethod
    def parse(cls, parser: Parser) -> AlgorithmOp:
        name = parser.parse_symbol_name().data
        collective = parser.parse_identifier(" (the collective, e.g. allreduce)")
        _keyword(parser, "ranks")
        ranks_at = parser.pos
        ranks = _parse_int(parser)
        ranks_end = parser.pos
        root = 0
        if parser.parse_optional_keyword("root"):
            root = _parse_int(parser)
        _keyword(parser, "channels")
        nchannels = _parse_int(parser)
        _keyword(parser, "chunksperloop")
        per_loop = _parse_int(parser)
        _keyword(parser, "proto")
        proto = parser.parse_identifier(" (Simple, LL or LL128)")
        inplace = parser.parse_optional_keyword("inplace") is not None
        outofplace = parser.parse_optional_keyword("outofplace") is not None
        _keyword(parser, "bytes")
        low = _parse_int(parser)
        _keyword(parser, "to")
        high = MAX_BYTES if parser.parse_optional_keyword("max") else _parse_int(parser)
        alg = Algorithm(
            name, collective, [], proto, nchannels, per_loop, inplace, outofplace, low, high, root
        )
        body = _parse_body(parser)
        held = sum(1 for block in body.blocks for _ in block.ops)
        if held != ranks:
            parser.raise_error(
                f"the algorithm says ranks {ranks} but holds {held} algo.gpu ops",
                ranks_at,
                ranks_end,
            )
        return cls(alg, body)

    def print(self, printer: Printer) -> None:
        alg = self
        coll = alg.collective.data
        head = f" @{alg.sym_name.data} {coll} ranks {len(alg.body.block.ops)}"
        if coll in ("broadcast", "reduce"):
            head += f" root {alg.root.value.data}"
        head += (
            f" channels {alg.nchannels.value.data} chunksperloop {alg.chunks_per_loop.value.data}"
            f" proto {alg.proto.data}"
        )
        if alg.inplace.value.data:
            head += " inplace"
        if alg.outofplace.value.data:
            head += " outofplace"
        high = alg.max_bytes.value.data
        head += f" bytes {alg.min_bytes.value.data} to {'max' if high == MAX_BYTES else high} "
        printer.print_string(head)
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


def chosen_algorithm(op: Operation) -> AlgorithmOp | None:
    """The algorithm a collective names (None if it names none); VerifyException if the name
    is not an algorithm of the enclosing symbol table."""
    attr = op.attributes.get(ALGORITHM_ATTRIBUTE)
    if attr is None:
        return None
    if not isinstance(attr, SymbolRefAttr):
        raise VerifyException(f"{ALGORITHM_ATTRIBUTE} must name an algo.algorithm (@name)")
    anchor = op.parent_op()
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    found = SymbolTable.lookup_symbol(anchor, attr) if anchor is not None else None
    if not isinstance(found, AlgorithmOp):
        raise VerifyException(
            f"{ALGORITHM_ATTRIBUTE} names @{attr.root_reference.data}, which is not an algo.algorithm"
        )
    return found


Algo = Dialect("algo", [AlgorithmOp, GpuOp, TbOp], [])
