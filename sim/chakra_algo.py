"""Collective algorithms as Chakra traces, and their time as ASTRA-sim runs them.

An `algo` algorithm becomes one trace per rank in the form of ASTRA-sim's custom collectives:
every step becomes its nodes in order - a receive (COMM_RECV), a local reduction or copy (COMP),
a send (COMM_SEND) - chained in thread-block order, with a step's cross-block dependency on the
last node of the step it waits for. A send and its receive share a tag (the message's number in
the algorithm: never reused) and carry chunk bytes x count. COMP durations follow ASTRA-sim's
own local-memory model (a reduction reads two operands and writes one: 3 x floor(bytes /
local-mem-bw)), in whole microseconds as the format stores them.

What ASTRA-sim does not need but an importer does rides along: each node carries its step
(`msccl_step`: thread block, index, type, source and destination buffer and offset, count) and
each file's metadata the algorithm's header, the rank's buffers and thread blocks and the
local-mem-bw the COMP durations were priced at, so that traces -> algorithm gives back the
algorithm (dependencies are read back from data_deps).

`simulate_algorithm` times an algorithm without writing anything: the critical path of those
same nodes (a send completes when its message arrives, a receive when it has arrived, a COMP
after its duration, 1 ns if zero), which is what ASTRA-sim's analytical backend computes for a
custom collective, a whole level of steps at a time with numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ccopt.dialects.algo import (
    CNT,
    DEPID,
    DEPS,
    FIELDS,
    IS_RECV,
    IS_SEND,
    MAX_BYTES,
    TYPE,
    Algorithm,
    AlgorithmError,
    Flat,
    Gpu,
    Schedule,
    Step,
    ThreadBlock,
    schedule,
    steps_array,
)
from ccopt.sim.chakra import (
    METADATA_VERSION,
    Trace,
    TraceError,
    attribute_value,
    trace_set_output,
)
from ccopt.sim.network import ConfigError, Network
from ccopt.sim.system import SystemConfig

PRODUCER = "ccopt algo"
STEP_ATTRIBUTE = "msccl_step"
"""int32_list on every node: tb, index, type, srcbuf, srcoff, dstbuf, dstoff, count."""

COMP, SEND, RECV = 4, 5, 6
REDUCTIONS = (Step.RECV_REDUCE_COPY, Step.RECV_REDUCE_SEND, Step.RECV_REDUCE_COPY_SEND, Step.REDUCE)


def _table(kinds: tuple[Step, ...]) -> np.ndarray:
    t = np.zeros(len(Step), dtype=bool)
    t[list(kinds)] = True
    return t


IS_REDUCE = _table(REDUCTIONS)
IS_COMP = _table((*REDUCTIONS, Step.COPY, Step.NOP, Step.APPLY))


# ---------------------------------------------------------------------------------------------
# costs


def chunk_bytes(alg: Algorithm, size: int) -> int:
    """Bytes of one chunk when the collective moves `size` bytes per rank (ASTRA-sim's
    comm_size: the input buffer, for all-gather too)."""
    chunks = max(g.in_chunks for g in alg.gpus)
    if chunks < 1 or size < chunks:
        raise AlgorithmError(
            f"a size of {size} bytes is less than one byte per chunk ({chunks} input chunks)"
        )
    return size // chunks


def comp_micros(
    kind: np.ndarray, nbytes: np.ndarray, local_mem_bw: float, body_passes: int = 0
) -> np.ndarray:
    """COMP durations in whole µs: a reduction moves 3 x its bytes through local memory, a copy
    2 x, a nop nothing (ASTRA-sim's reduce cost: 3 x floor(bytes / local-mem-bw) ns), a fused
    body's `fn` `body_passes` x (its operands and results: Adam reads 4 and writes 3)."""
    if local_mem_bw <= 0:
        return np.zeros(len(kind), np.int64)
    one = np.floor(nbytes.astype(np.float64) / (local_mem_bw * 1e9) * 1e9).astype(np.int64)
    passes = np.where(
        IS_REDUCE[kind],
        3,
        np.where(kind == Step.COPY, 2, np.where(kind == Step.APPLY, body_passes, 0)),
    )
    return passes * one // 1000


# ---------------------------------------------------------------------------------------------
# export


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [_varint(v) for v in range(1 << 14)]


_large_varint = functools.lru_cache(maxsize=1 << 16)(_varint)


def varint(value: int) -> bytes:
    """A protobuf varint of a value >= 0 (looked up: the same few values recur)."""
    return _SMALL[value] if value < 16384 else _large_varint(value)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


INT32, INT64, BOOL, STRING = 7, 9, 27, 29
_MEMBER = {m: varint(m << 3) for m in (INT32, INT64, BOOL)}
_NAMES: dict[str, bytes] = {}


def _int_attr(name: str, member: int, value: int) -> bytes:
    """An AttributeProto holding an integer `member`, as a Node's attr field (10)."""
    prefix = _NAMES.get(name)
    if prefix is None:
        prefix = _NAMES[name] = _field(1, name.encode())
    body = prefix + _MEMBER[member] + varint(value)
    return b"\x52" + varint(len(body)) + body


_NOT_CPU = _int_attr("is_cpu_op", BOOL, 0)


_STEP_NAME = _field(1, STEP_ATTRIBUTE.encode())


def encode_metadata(fields: dict[str, str], head: bytes = b"") -> bytes:
    """A GlobalMetadata with string attributes, length-prefixed (as `metadata_message` builds
    it and protobuf serializes it); `head`: the encoded attributes that come first (the same
    in every file of a set, encoded once)."""
    body = b"".join([_field(1, METADATA_VERSION.encode()), head, _string_attrs(fields)])
    return varint(len(body)) + body


def _string_attrs(fields: dict[str, str]) -> bytes:
    """GlobalMetadata attr fields (2) holding strings."""
    return b"".join(
        _field(
            2,
            _field(1, k.encode()) + varint(STRING << 3 | 2) + varint(len(v.encode())) + v.encode(),
        )
        for k, v in fields.items()
    )


@dataclass
class StepNodes:
    """Where each step's nodes lie in its rank's file."""

    first: np.ndarray  # id of the step's first node
    last: np.ndarray  # id of its last node
    partner: np.ndarray  # for a receiving step, the sending step (flat index); else -1
    send_tag: np.ndarray  # message number of its send, else -1
    recv_tag: np.ndarray  # message number of its receive, else -1
    dep: np.ndarray  # the step it waits for across blocks (flat index), else -1


def step_nodes(sched: Schedule) -> StepNodes:
    """Node ids per step: a rank's steps in file order (thread blocks, then steps)."""
    flat = sched.flat
    kind = flat.col[TYPE]
    count = IS_RECV[kind].astype(np.int64) + IS_COMP[kind] + IS_SEND[kind]
    n = len(kind)
    ends = np.cumsum(count)
    rank_start = np.zeros(len(flat.gpu_tb_start) + 1, np.int64)
    if n:
        first_step = np.searchsorted(flat.rank, np.arange(len(flat.gpu_tb_start)), "left")
        base = np.concatenate([[0], ends])[first_step]
        rank_start[:-1] = base
    first = ends - count - rank_start[flat.rank]
    partner = np.full(n, -1, np.int64)
    partner[sched.recvs] = sched.sends
    send_tag, recv_tag = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    messages = np.arange(len(sched.sends), dtype=np.int64)
    send_tag[sched.sends] = messages
    recv_tag[sched.recvs] = messages
    dep = np.full(n, -1, np.int64)
    has = np.flatnonzero(flat.col[DEPID] >= 0)
    dep[has] = (
        flat.tb_start[flat.gpu_tb_start[flat.rank[has]] + flat.col[DEPID, has]]
        + flat.col[DEPS, has]
    )
    return StepNodes(first, first + count - 1, partner, send_tag, recv_tag, dep)


def header(alg: Algorithm, chunk: int, local_mem_bw: float) -> dict[str, str]:
    """The algorithm-wide metadata every file carries (strings, as GlobalMetadata's)."""
    return {
        "producer": PRODUCER,
        "algorithm": alg.name,
        "collective": alg.collective,
        "ranks": str(alg.ranks),
        "root": str(alg.root),
        "proto": alg.proto,
        "nchannels": str(alg.nchannels),
        "nchunksperloop": str(alg.chunks_per_loop),
        "inplace": str(int(alg.inplace)),
        "outofplace": str(int(alg.outofplace)),
        "minBytes": str(alg.min_bytes),
        "maxBytes": "max" if alg.max_bytes == MAX_BYTES else str(alg.max_bytes),
        "chunk_bytes": str(chunk),
        "local_mem_bw": repr(float(local_mem_bw)),
    }


def rank_fields(alg: Algorithm, rank: int) -> dict[str, str]:
    """What a rank's metadata adds to the header (which comes first): the rank, its buffers
    and its thread blocks."""
    g = alg.gpus[rank]
    return {
        "rank": str(rank),
        "buffers": f"{g.in_chunks} {g.out_chunks} {g.scratch_chunks}",
        "thread_blocks": ";".join(f"{tb.send} {tb.recv} {tb.chan}" for tb in g.tbs),
    }


class Varints:
    """The varints of many integers, not yet spelled: spelled only once a row's shape (and so
    each varint's width) is known, a shape at a time."""

    def __init__(self, values: np.ndarray, by_shape: bool = False, one: bool = False):
        self.values = values if isinstance(values, np.ndarray) else np.asarray(values, np.int64)
        self.by_shape = by_shape  # a length of other parts: the same in every row of a shape
        self.one = one  # one value in every row (spelled once per shape, where its length is)

    @staticmethod
    def spell(value: np.ndarray, width: int, into: np.ndarray) -> None:
        """Write varints of `value`, each `width` bytes, into the (n, width) `into` (a negative
        one as its 64-bit two's complement: ten bytes, as protobuf writes an int32 or int64 -1;
        one value: the same in every row)."""
        if width == 1:
            into[:, 0] = value
            return
        if width > 3 and value.min() == value.max():  # (a wide column is often one value)
            into[:] = np.frombuffer(varint(int(value[0]) & _WORD), np.uint8)
            return
        if width == 2:  # (most varints: 14 bits, the low 7 and the high 7 a byte each)
            low = value.astype(np.uint16)
            pair = low << np.uint16(1)
            pair &= np.uint16(0x7F00)
            low &= np.uint16(0x7F)
            pair |= low
            pair |= np.uint16(0x80)
            into[:, :2].view("<u2")[:, 0] = pair
            return
        # two bytes at a time, from that table
        rest = value.view(np.uint64) if value.dtype == np.int64 else value.astype(np.uint64)
        pairs = into[:, : width - width % 2].view("<u2")
        for k in range(width // 2):
            low = rest if k == 0 and width <= 3 else rest >> np.uint64(14 * k)
            pair = _PAIRS[low & np.uint64(0x3FFF)]
            pairs[:, k] = pair | np.uint16(0x8000) if 2 * k + 2 < width else pair
        if width % 2:
            into[:, width - 1] = rest >> np.uint64(7 * (width - 1))


class Rows:
    """Bytes of many rows picked from a table: row i is table[pick[i]] (its first `length`
    bytes count), gathered only when a shape's rows are written (a part that is the same for
    all the nodes of a step is spelled once per step, then picked for each node). `by_shape`:
    the same row wherever the other parts have the same lengths (a node's kind, which the
    attributes it has tell); `one`: the same row everywhere (both: spelled once per shape)."""

    def __init__(self, table: np.ndarray, pick: np.ndarray, by_shape: bool = False):
        self.table, self.pick, self.by_shape = table, pick, by_shape
        self.one = bool(len(pick)) and int(pick.min()) == int(pick.max())


def _same_in_every_row(m: Any) -> bool:
    """Whether a part's bytes are the same in every row (where it is there): a constant, or a
    varint of one value or of lengths of other parts (which a row's shape fixes)."""
    if isinstance(m, Varints | Rows):
        return m.by_shape or isinstance(m, Varints) and _fixed(m.values)
    return _fixed(m)


def _spelled_per_shape(m: Any) -> bool:
    """Whether a part's bytes in a shape's rows are one row's (spelled in the shape's template,
    no column written): the same in every row of a shape, or one value everywhere."""
    return _same_in_every_row(m) or isinstance(m, Varints | Rows) and m.one


_PAIRS = (np.arange(1 << 14) & 0x7F | 0x80 | (np.arange(1 << 14) >> 7) << 8).astype("<u2")
"""The two bytes of the varint of a value in [128, 16384) (the first two of a larger one, by
its low 14 bits, once the second byte's continuation bit is set)."""

Segment = tuple[Any, np.ndarray]
"""Bytes of one part of many messages at once: an (n, width) uint8 matrix, of which each row's
first `length` bytes count, or Varints (no Python object per message). A message is a list of
segments, joined once, at the end."""

_VARINT_LIMITS = [1 << (7 * k) for k in range(1, 10)]


def varints(values: np.ndarray, by_shape: bool = False) -> Segment:
    """Protobuf varints of many integers, and their lengths (ten bytes for a negative one);
    `by_shape`: the values are lengths of other parts of the rows."""
    v = np.asarray(values, np.int64)
    if len(v) and _fixed(v):  # (one value: one length)
        size = len(varint(int(v[0]) & _WORD))
        return Varints(v, by_shape), np.broadcast_to(np.int64(size), (len(v),))
    top, low = (int(v.max()), int(v.min())) if len(v) else (0, 0)
    if len(v) and top == low:  # (one value, where it is there)
        size = len(varint(top & _WORD))
        return Varints(v, by_shape, one=True), np.broadcast_to(np.int64(size), (len(v),))
    if low >= 0:  # (kept in the narrowest type: the values are reordered and read again)
        v = v.astype(next(t for t in _NARROW if top <= np.iinfo(t).max))
    if top < 128 and low >= 0:  # (a byte each: no array of lengths)
        return Varints(v, by_shape), np.broadcast_to(np.int64(1), (len(v),))
    length = np.ones(len(v), np.int8)
    for limit in _VARINT_LIMITS:
        if limit > top:
            break
        length += v >= limit
    if low < 0:
        length[v < 0] = 10
    return Varints(v, by_shape), length


_NARROW = (np.uint8, np.uint16, np.uint32, np.int64)
_WORD = (1 << 64) - 1
"""A negative number's varint is that of its 64-bit two's complement (ten bytes)."""


def constant(data: bytes, n: int) -> Segment:
    row = np.frombuffer(data, np.uint8)
    return np.broadcast_to(row, (n, len(row))), np.broadcast_to(np.int64(len(row)), (n,))


def _fixed(length: np.ndarray) -> bool:
    """Whether a column of lengths is one length for every row (a broadcast scalar)."""
    return length.strides[0] == 0


class Parts(list):
    """Segments of many messages side by side, with the rows' lengths summed once (a field's
    length is its parts' sum, and a node's the sum of its fields': summed level by level)."""

    length: np.ndarray | None = None


def total(parts: list[Segment]) -> np.ndarray:
    """The rows' lengths summed over the parts (one array, added to in place; the parts of
    one length in every row summed as numbers)."""
    known = getattr(parts, "length", None)
    if known is not None:
        return known
    n, fixed, acc = len(parts[0][1]), 0, None
    for _, length in parts:
        if _fixed(length):
            fixed += int(length[0]) if n else 0
        elif acc is None:
            acc = length.astype(np.int64)
        else:
            acc += length
    if acc is None:
        return np.broadcast_to(np.int64(fixed), (n,))
    if fixed:
        acc += fixed
    return acc


def _parts(segments: list[Segment], length: np.ndarray) -> Parts:
    out = Parts(segments)
    out.length = length
    return out


def concat(*groups: list[Segment]) -> Parts:
    """The groups' parts one after the other."""
    return _parts([s for g in groups for s in g], total([(None, total(g)) for g in groups]))


def only(parts: list[Segment], present: np.ndarray) -> Parts:
    """The parts where `present`, nothing elsewhere (a part of one length as a byte a row)."""
    flags = present.view(np.int8)
    return _parts(
        [
            (
                m,
                flags * np.int8(length[0])
                if _fixed(length) and length[0] < 128
                else length * present,
            )
            for m, length in parts
        ],
        total(parts) * present,
    )


def field(tag: bytes, parts: list[Segment]) -> Parts:
    """A length-delimited field: `tag`, the length of the parts, the parts."""
    inner = total(parts)
    size = varints(inner, True)
    return _parts(
        [constant(tag, len(parts[0][1])), size, *parts],
        total([(None, inner), size, (None, np.broadcast_to(np.int64(len(tag)), inner.shape))]),
    )


def varint_field(tag: bytes, values: np.ndarray) -> Parts:
    return Parts([constant(tag, len(values)), varints(values)])


def shapes(parts: list[Segment]) -> np.ndarray:
    """A number per row naming its shape (the length of every part), from 0: rows of one
    shape have every part at the same place. Only the lengths of the values (varints of
    values, spelled numbers) are looked at: the others follow from them (a constant is there
    when the values it goes with are, a length is the sum of lengths)."""
    n = len(parts[0][1])
    key, span = np.zeros(n, np.int32), 1  # (in place, 32 bits: below 2^16 x a length's range)
    for m, length in parts:
        if _same_in_every_row(m) or not length.strides[0]:
            continue
        low, high = int(length.min(initial=0)), int(length.max(initial=0))
        if low == high:
            continue
        if span * (high - low + 1) > 1 << 16:  # renumber the shapes seen so far (counting:
            # a span of a few shapes' numbers, not of millions, where counting costs the span)
            key, span = _renumbered(key, span)
        key *= np.int32(high - low + 1)
        np.add(key, length, out=key, casting="unsafe")
        if low:
            key -= np.int32(low)
        span *= high - low + 1
    return _renumbered(key, span)[0]


def _renumbered(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """`key` (values in [0, span)) renumbered from 0 in the order of its values, and how many
    distinct values it has (by counting where the span allows: no sort)."""
    if span > 1 << 24:
        _, key = np.unique(key, return_inverse=True)
        return key.reshape(-1).astype(np.int32), int(key.max(initial=-1)) + 1
    present = np.bincount(key, minlength=span) > 0
    return (np.cumsum(present, dtype=np.int32) - 1)[key], int(present.sum())


class Scratch:
    """Byte buffers kept from one piece of a trace set to the next. Memory written before is
    written again at memory speed, while fresh memory costs a page fault per page: spelling a
    fresh 670 MB costs more than spelling the same bytes twice into memory already touched."""

    def __init__(self) -> None:
        self.buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int) -> np.ndarray:
        """`size` bytes of the buffer `name` (its contents are whatever was left there)."""
        buf = self.buffers.get(name)
        if buf is None or len(buf) < size:
            grown = size if buf is None else max(size, len(buf) + len(buf) // 4)
            buf = self.buffers[name] = np.empty(grown, np.uint8)
        return buf[:size]


def write_rows(
    parts: list[Segment], out: np.ndarray, at: np.ndarray, scratch: Scratch, compare: bool = False
) -> bool:
    """Write every row's bytes into `out`, row i from out[at[i]]: the rows of one shape are one
    matrix (the parts side by side, the bytes they share written once), which goes into `out`
    a row at a time as one fixed-size item each (no Python object per row). `compare`: write
    nothing, but say whether `out` holds those bytes there (the matrix against the same rows
    gathered from `out`)."""
    n = len(parts[0][1])
    if not n:
        return True
    group = shapes(parts)
    order = np.argsort(group.astype(np.uint16) if group.max() < 1 << 16 else group, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(group))]).tolist()
    # what varies from row to row (read a shape's rows at a time: no reordered copy)
    ordered = [not _spelled_per_shape(m) for m, _ in parts]
    fixed = [
        None if isinstance(m, Varints | Rows) or varying else m[0].tobytes()
        for (m, _), varying in zip(parts, ordered, strict=True)
    ]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        one = int(order[a])
        rows = slice(None) if b - a == n else order[a:b]  # (one shape: every row, in order)
        template, fills = bytearray(), []  # the bytes that a shape's rows share; the others
        for (m, length), varying, same in zip(parts, ordered, fixed, strict=True):
            width = int(length[one])
            if width == 0:
                continue
            if varying:
                fills.append((len(template), width, m))
                template += bytes(width)
            elif same is not None:
                template += same[:width]
            elif isinstance(m, Rows):
                template += m.table[m.pick[one], :width].tobytes()
            else:
                template += varint(int(m.values[one]) & _WORD)
        size = len(template)
        matrix = scratch.get("rows", (b - a) * size).reshape(b - a, size)
        matrix[:] = np.frombuffer(template, np.uint8)
        gathered: dict[tuple[int, int], np.ndarray] = {}  # (a part that recurs in a row)
        for start, width, m in fills:
            into = matrix[:, start : start + width]
            if isinstance(m, Varints):
                Varints.spell(m.values[rows], width, into)
            elif isinstance(m, Rows):  # (a row's first bytes as one item: no copy between)
                place = np.ndarray((b - a,), f"V{width}", matrix, start, (size,))
                again = gathered.get((id(m), width))
                if again is not None:  # (the same bytes as where it is first: copied)
                    place[:] = again
                    continue
                table = np.ascontiguousarray(m.table)
                items = np.ndarray((len(table),), f"V{width}", table, 0, (table.strides[0],))
                place[:] = items[m.pick[rows]]  # (fancy indexing: np.take copies V slowly)
                gathered[id(m), width] = place
            else:
                into[:] = m[rows, :width]
        items = np.ndarray((len(out) - size + 1,), f"V{size}", out, 0, (1,))
        if not compare:
            items[at[rows]] = matrix.view(f"V{size}").reshape(-1)
        elif not _same_bytes(matrix.reshape(-1), items[at[rows]].view(np.uint8)):
            return False
    return True


def int_attribute(name: str, member: int, values: np.ndarray) -> Parts:
    """A Node's attr field (10) holding an integer attribute."""
    head = constant(_field(1, name.encode()) + varint(member << 3), len(values))
    return field(b"\x52", [head, varints(values)])


def decimal(values: np.ndarray) -> Segment:
    """Decimal spellings of integers >= 0."""
    if not len(values):
        return np.zeros((0, 1), np.uint8), np.zeros(0, np.int64)
    table = [b"%d" % v for v in range(int(values.max()) + 1)]
    spelled = np.array(table)
    lengths = np.array([len(t) for t in table], np.int64)[values]
    return Rows(spelled.view(np.uint8).reshape(len(table), -1), values), lengths


STEPS_PER_PIECE = 1 << 17
"""Steps whose nodes are encoded at once (bounds the byte matrices: ~100 MB)."""


def algorithm_traces(alg: Algorithm, size: int, local_mem_bw: float) -> list[bytes]:
    """Every rank's .et file contents for `alg` moving `size` bytes per rank (verified first)."""
    files: list[bytes] = []
    for piece, bounds in encoded_pieces(alg, size, local_mem_bw):
        files.extend(piece[a:b].tobytes() for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    return files


@dataclass
class Piece:
    """Some whole ranks' files, not yet spelled: each file's metadata, then its steps' nodes as
    rows of parts, a family of steps at a time (row i of a family's parts is its step rows[i],
    which goes at byte at[rows[i]]), the files one after the other from file_start."""

    metadata: list[bytes]
    families: list[tuple[list[Segment], np.ndarray]]
    at: np.ndarray
    file_start: list[int]

    def write(self, out: np.ndarray, scratch: Scratch) -> None:
        """Spell the piece's files into out[:file_start[-1]]."""
        for start, data in zip(self.file_start, self.metadata, strict=False):
            out[start : start + len(data)] = np.frombuffer(data, np.uint8)
        for parts, rows in self.families:
            write_rows(parts, out, self.at[rows], scratch)

    def matches(self, files: np.ndarray, scratch: Scratch) -> bool:
        """Whether `files` (at least file_start[-1] bytes) is the piece's files, byte for byte:
        every byte lies in a file's metadata or in exactly one row (the rows follow each other
        from the end of their file's metadata to the end of the file), each compared in place
        (no bytes spelled into a copy of the files)."""
        for start, data in zip(self.file_start, self.metadata, strict=False):
            if files[start : start + len(data)].tobytes() != data:
                return False
        return all(
            write_rows(parts, files, self.at[rows], scratch, compare=True)
            for parts, rows in self.families
        )


def _same_bytes(mine: np.ndarray, got: np.ndarray) -> bool:
    """Whether two byte arrays are equal, compared 8 bytes at a time."""
    whole = len(mine) - len(mine) % 8
    return np.array_equal(got[:whole].view(np.uint64), mine[:whole].view(np.uint64)) and (
        np.array_equal(got[whole:], mine[whole:])
    )


def encoded_pieces(
    alg: Algorithm, size: int, local_mem_bw: float
) -> Iterator[tuple[np.ndarray, list[int]]]:
    """The trace set of `alg` (verified first), whole ranks at a time: the bytes of about
    STEPS_PER_PIECE steps' files one after the other, and where each file starts and ends in
    them (the next piece reuses the buffer: copy what is kept)."""
    scratch = Scratch()
    for piece in pieces(alg, size, local_mem_bw):
        out = scratch.get("piece", piece.file_start[-1])
        piece.write(out, scratch)
        yield out, piece.file_start


def pieces(
    alg: Algorithm, size: int, local_mem_bw: float, columns: np.ndarray | None = None
) -> Iterator[Piece]:
    """The trace set of `alg` (verified first), about STEPS_PER_PIECE steps' whole ranks at a
    time.

    A piece's nodes are encoded at once, byte for byte as protobuf serializes a Node (fields
    in number order, defaults left out), a row per step (its nodes one after the other): the
    steps of one family (kinds of nodes) whose fields all have the same lengths (a shape: a
    ring has about sixty a piece) are one byte matrix, the bytes they share written once and
    each varying field a column at a time, then put in their place in the files.
    `columns`: the steps by column, where the caller has them (`schedule`'s)."""
    sched = schedule(alg, columns)
    chunk = chunk_bytes(alg, size)
    flat = sched.flat
    steps = step_nodes(sched)
    micros = comp_micros(flat.col[TYPE], flat.col[CNT] * chunk, local_mem_bw)
    rank_start = np.searchsorted(flat.rank, np.arange(alg.ranks + 1)).tolist()
    head = _string_attrs(header(alg, chunk, local_mem_bw))  # (every file's first fields)
    lo = 0
    while lo < alg.ranks:
        hi = lo + 1
        while hi < alg.ranks and rank_start[hi + 1] - rank_start[lo] <= STEPS_PER_PIECE:
            hi += 1
        families = _nodes(flat, steps, micros, chunk, rank_start[lo], rank_start[hi])
        rank = flat.rank[rank_start[lo] : rank_start[hi]]
        metadata = [encode_metadata(rank_fields(alg, r), head) for r in range(lo, hi)]
        meta = np.array([len(m) for m in metadata], np.int64)
        length = np.zeros(len(rank), np.int64)
        for parts, rows in families:
            length[rows] = total(parts)
        ends = np.cumsum(length)
        node_bounds = np.searchsorted(rank, np.arange(lo, hi + 1))
        node_bytes = np.diff(np.concatenate([[0], ends])[node_bounds])
        file_start = np.concatenate([[0], np.cumsum(meta + node_bytes)])
        local = rank - lo
        before = np.concatenate([[0], ends])[node_bounds[local]]  # the rank's nodes before
        at = file_start[local] + meta[local] + (ends - length - before)
        yield Piece(metadata, families, at, file_start.tolist())
        lo = hi


_KIND_NAME = (b"RECV_", b"COMP_", b"SEND_")
_KIND_TYPE = (RECV, COMP, SEND)


def _nodes(
    flat: Flat, steps: StepNodes, micros: np.ndarray, chunk: int, lo: int, hi: int
) -> list[tuple[list[Segment], np.ndarray]]:
    """The framed nodes of steps [lo, hi) (whole ranks), a row per step: its RECV, COMP and
    SEND nodes (those it has), which follow each other in the file. A row per step, not per
    node: what a step's nodes share (their name's numbers, comm_size, the packed msccl_step)
    is a column once. The steps come in families, those with the same kinds of nodes (a send,
    a receive and reduce, ...): a family's parts are its rows' nodes, none left out of some
    rows. Each family's parts, and its steps (from lo) in order."""
    kind = flat.col[TYPE, lo:hi]
    kinds = IS_RECV[kind] * np.int8(1) | IS_COMP[kind] * np.int8(2) | IS_SEND[kind] * np.int8(4)
    row, length = _step_rows(flat, lo, hi)
    families = []
    for family in np.flatnonzero(np.bincount(kinds, minlength=8)).tolist():
        rows = np.flatnonzero(kinds == family)
        has = [bool(family >> which & 1) for which in range(3)]
        parts = _family_nodes(flat, steps, micros, chunk, lo + rows, has, (row, length, rows))
        families.append((parts, rows))
    return families


def _family_nodes(
    flat: Flat,
    steps: StepNodes,
    micros: np.ndarray,
    chunk: int,
    step: np.ndarray,
    has: list[bool],
    packed: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> list[Segment]:
    """The nodes of `step`s that all have the nodes `has` (a RECV, a COMP, a SEND) as parts,
    a row per step; `packed`: the piece's msccl_step rows, their lengths, and these steps'
    rows among them."""
    n = len(step)
    index = flat.index[step]
    block = flat.tb[step]
    # a step's first node's parents: the last node of the step before in its thread block
    # and of the step it waits for across blocks; a later node's, the node before it
    before = np.where(index > 0, steps.last[np.maximum(step - 1, 0)], -1)
    dep = steps.dep[step]
    other = np.where(dep >= 0, steps.last[np.maximum(dep, 0)], -1)
    numbers = [
        constant(b"tb", n),
        decimal(flat.tb_local[block]),
        constant(b"_step", n),
        decimal(index),
    ]
    row, length, mine = packed
    step_attr = field(
        b"\x52",
        concat(
            [constant(_STEP_NAME, n)],
            field(b"\x42", field(b"\x0a", [(Rows(row, mine), length[mine])])),
        ),
    )
    sizes = flat.col[CNT, step] * chunk
    size = int_attribute("comm_size", INT64, sizes) if has[0] or has[2] else None
    message = {
        0: ("comm_src", flat.tb_recv, steps.recv_tag),
        2: ("comm_dst", flat.tb_send, steps.send_tag),
    }
    node_id = steps.first[step]
    nodes = []
    for which in range(3):
        if not has[which]:
            continue
        if which == 1:
            mic = micros[step]
            middle = [only(varint_field(b"\x38", mic), mic > 0)]
        else:
            peer_key, peer, tag = message[which]
            middle = [
                size,
                int_attribute(peer_key, INT32, peer[block]),
                int_attribute("comm_tag", INT32, tag[step]),
            ]
        parents = [
            (m, np.where(p >= 0, k, 0))
            for p in (before, other)
            for m, k in [varints(np.maximum(p, 0))]
        ]
        node = concat(
            only(varint_field(b"\x08", node_id), node_id > 0),
            field(b"\x12", [constant(_KIND_NAME[which], n), *numbers]),
            [constant(b"\x18" + varint(_KIND_TYPE[which]), n)],
            only(field(b"\x2a", parents), (before >= 0) | (other >= 0)),
            *middle,
            [constant(_NOT_CPU, n)],
            step_attr,
        )
        nodes.append(concat([varints(total(node), True)], node))
        # the step's next node: after this one
        before, other = node_id, np.full(n, -1, np.int64)
        node_id = node_id + 1
    return concat(*nodes)


def _step_rows(flat: Flat, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The packed msccl_step values of steps [lo, hi), a row of bytes each, and their lengths:
    spelled once per step, where a step has up to three nodes that carry them."""
    block = flat.tb[lo:hi]
    parts = [
        varints(c) for c in (flat.tb_local[block], flat.index[lo:hi], *flat.col[TYPE:DEPID, lo:hi])
    ]
    length = total(parts)
    width = int(length.max(initial=1))
    out = np.zeros((hi - lo, width), np.uint8)
    write_rows(parts, out.reshape(-1), np.arange(hi - lo) * width, Scratch())
    return out, length


def write_algorithm_traces(
    prefix: str | Path, alg: Algorithm, size: int, local_mem_bw: float
) -> list[Path]:
    """Write PREFIX.<rank>.et for every rank, all or none (see `trace_set_output`)."""
    with trace_set_output(prefix) as output:
        for piece, bounds in encoded_pieces(alg, size, local_mem_bw):
            data = memoryview(piece)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                output.add(data[a:b])
    return output.paths


# ---------------------------------------------------------------------------------------------
# import

STEP_NODE_TYPES = {
    kind: tuple(
        t
        for t, present in ((RECV, IS_RECV[kind]), (COMP, IS_COMP[kind]), (SEND, IS_SEND[kind]))
        if present
    )
    for kind in Step
}
"""The node types of each step type, in order."""

ALGORITHM_KEYS = ("algorithm", "collective", "ranks", "buffers", "thread_blocks", "rank")


def _metadata(trace: Trace, source: str) -> dict[str, str]:
    fields = {a.name: attribute_value(a) for a in trace.metadata.attr}
    missing = [k for k in ALGORITHM_KEYS if k not in fields]
    if missing:
        raise TraceError(
            f"{source}: error: not an algorithm trace written by ccopt: its metadata lacks "
            f"{', '.join(missing)} (ASTRA-sim's custom-collective traces keep no buffers and "
            "offsets, which an algorithm needs)"
        )
    return {k: str(v) for k, v in fields.items()}


def _number(fields: dict[str, str], key: str, source: str) -> int:
    text = fields.get(key, "")
    if key == "maxBytes" and text == "max":
        return MAX_BYTES
    try:
        return int(text)
    except ValueError:
        raise TraceError(f"{source}: error: metadata '{key}' is not a number: {text!r}") from None


def _rank_gpu(fields: dict[str, str], source: str) -> Gpu:
    try:
        sizes = [int(v) for v in fields["buffers"].split()]
        tbs = [
            ThreadBlock(*(int(v) for v in entry.split()))
            for entry in fields["thread_blocks"].split(";")
            if entry.strip()
        ]
    except (TypeError, ValueError):
        raise TraceError(
            f"{source}: error: metadata 'buffers' / 'thread_blocks' are not 'in out scratch' / "
            "'send recv chan;...'"
        ) from None
    if len(sizes) != 3:
        raise TraceError(f"{source}: error: metadata 'buffers' needs 3 numbers (in out scratch)")
    return Gpu(*sizes, tbs)


MESSAGE_MEMBERS = {
    "comm_size": "int64_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
}


def step_node_attributes(node: Any) -> dict[str, Any]:
    """The attributes an algorithm's node needs, each read from the member ASTRA-sim reads
    (another member reads as 0, as in `node_attributes`, which this is a fast subset of)."""
    out: dict[str, Any] = {}
    for attr in node.attr:
        name = attr.name
        if name == STEP_ATTRIBUTE:
            out[name] = list(attr.int32_list.values)
        elif name in MESSAGE_MEMBERS:
            out[name] = getattr(attr, MESSAGE_MEMBERS[name])
    return out


class _RankReader:
    """One rank's nodes back into thread blocks of steps."""

    def __init__(self, trace: Trace, gpu: Gpu, chunk: int, source: str):
        self.gpu, self.chunk, self.source = gpu, chunk, source
        self.by_id: dict[int, tuple[int, int]] = {}  # node -> (tb, step)
        self.groups: dict[tuple[int, int], list[Any]] = {}
        for node in trace.nodes:
            attrs = step_node_attributes(node)
            row = attrs.get(STEP_ATTRIBUTE)
            if not isinstance(row, list) or len(row) != FIELDS:
                raise self.error(node, f"has no {STEP_ATTRIBUTE} attribute of {FIELDS} numbers")
            key = (row[0], row[1])
            if not 0 <= key[0] < len(gpu.tbs):
                raise self.error(node, f"names thread block {key[0]}, which the rank lacks")
            self.groups.setdefault(key, []).append((node, attrs, row))
            self.by_id[node.id] = key

    def error(self, node: Any, message: str) -> TraceError:
        return TraceError(f"{self.source}: error: node {node.id} ({node.name}) {message}")

    def gpu_with_steps(self) -> Gpu:
        per_tb: list[list[list[int]]] = [[] for _ in self.gpu.tbs]
        for (tb, index), nodes in sorted(self.groups.items()):
            if index != len(per_tb[tb]):
                raise self.error(
                    nodes[0][0],
                    f"is step {index} of tb {tb}, but that thread "
                    f"block has {len(per_tb[tb])} steps before it",
                )
            per_tb[tb].append(self.step(tb, index, nodes))
        tbs = [
            ThreadBlock(tb.send, tb.recv, tb.chan, steps_array(rows))
            for tb, rows in zip(self.gpu.tbs, per_tb, strict=True)
        ]
        return Gpu(self.gpu.in_chunks, self.gpu.out_chunks, self.gpu.scratch_chunks, tbs)

    def step(self, tb: int, index: int, nodes: list[tuple[Any, dict, list[int]]]) -> list[int]:
        """A step's row from its nodes: their types, peers and sizes checked, its cross-block
        dependency read from the first node's data_deps."""
        node, _, row = nodes[0]
        kind = row[2]
        if not 0 <= kind < len(Step):
            raise self.error(node, f"has unknown step type {kind}")
        types = tuple(n.type for n, _, _ in nodes)
        if types != STEP_NODE_TYPES[Step(kind)]:
            raise self.error(
                node,
                f"starts step {index} of tb {tb} with node types {types}, "
                f"not those of its step type {STEP_NODE_TYPES[Step(kind)]}",
            )
        for n, attrs, other in nodes:
            if other != row:
                raise self.error(n, "disagrees with the other nodes of its step")
            self.check_message(n, attrs, self.gpu.tbs[tb], row[7])
        depid, deps = -1, -1
        parents = list(node.data_deps)
        for parent in parents:
            if parent not in self.by_id:
                raise self.error(node, f"depends on node {parent}, which the file does not have")
        owners = [self.by_id[p] for p in parents]
        if index and (tb, index - 1) in owners:  # thread-block order (a repeat is a dependency)
            del parents[owners.index((tb, index - 1))]
        elif index:
            raise self.error(node, f"does not depend on step {index - 1} of its thread block")
        if len(parents) > 1:
            raise self.error(
                node,
                f"depends on nodes {parents}: a step waits only for the step before it in its "
                "thread block and for one other step",
            )
        if parents:
            depid, deps = self.by_id[parents[0]]
        for n, _, _ in nodes[1:]:
            if list(n.data_deps) != [n.id - 1]:
                raise self.error(n, "must depend on exactly the node before it in its step")
        return [*row[2:8], depid, deps]

    def check_message(self, node: Any, attrs: dict, tb: ThreadBlock, count: int) -> None:
        if node.type == COMP:
            return
        peer_key, peer = ("comm_dst", tb.send) if node.type == SEND else ("comm_src", tb.recv)
        if attrs.get(peer_key) != peer:
            raise self.error(
                node, f"has {peer_key} {attrs.get(peer_key)}, but its thread block's peer is {peer}"
            )
        if attrs.get("comm_size") != count * self.chunk:
            raise self.error(
                node,
                f"has comm_size {attrs.get('comm_size')}, not {count} chunks of {self.chunk} bytes",
            )


def _header_algorithm(head: dict[str, str], gpus: list[Gpu], source0: str) -> Algorithm:
    """The algorithm of `gpus` with the header rank 0's metadata gives."""
    return Algorithm(
        name=head["algorithm"],
        collective=head["collective"],
        gpus=gpus,
        proto=head.get("proto", "Simple"),
        nchannels=_number(head, "nchannels", source0),
        chunks_per_loop=_number(head, "nchunksperloop", source0),
        inplace=bool(_number(head, "inplace", source0)),
        outofplace=bool(_number(head, "outofplace", source0)),
        min_bytes=_number(head, "minBytes", source0),
        max_bytes=_number(head, "maxBytes", source0),
        root=_number(head, "root", source0),
    )


def trace_set_bytes(prefix: str | Path, alg: Algorithm) -> int:
    """The bytes per rank the trace set `alg` was read from was exported for (ASTRA-sim's
    comm_size): its chunk bytes (first file's metadata) times the input chunks of a rank."""
    from ccopt.sim.chakra import read_trace, trace_paths

    first = trace_paths(prefix)[0]
    return traces_bytes(read_trace(first), alg, str(first))


def traces_bytes(first: Trace, alg: Algorithm, source: str) -> int:
    """`trace_set_bytes` from the set's first trace (named `source` in errors)."""
    chunk = _number(_metadata(first, source), "chunk_bytes", source)
    return chunk * max(g.in_chunks for g in alg.gpus)


def algorithm_from_traces(traces: list[Trace], prefix: str | Path) -> Algorithm:
    """The algorithm a trace set written by `algorithm_traces` holds (verified)."""
    fields = [_metadata(t, f"{prefix}.{r}.et") for r, t in enumerate(traces)]
    head = fields[0]
    source0 = f"{prefix}.0.et"
    ranks = _number(head, "ranks", source0)
    if ranks != len(traces):
        raise TraceError(
            f"{source0}: error: the algorithm has {ranks} ranks, but "
            f"{len(traces)} trace files were found"
        )
    chunk = _number(head, "chunk_bytes", source0)
    gpus = []
    for r, (trace, meta) in enumerate(zip(traces, fields, strict=True)):
        source = f"{prefix}.{r}.et"
        if _number(meta, "rank", source) != r:
            raise TraceError(f"{source}: error: holds rank {meta['rank']}, not {r}")
        gpus.append(_RankReader(trace, _rank_gpu(meta, source), chunk, source).gpu_with_steps())
    alg = _header_algorithm(head, gpus, source0)
    try:
        schedule(alg)
    except AlgorithmError as e:
        raise TraceError(f"{prefix}.{e.rank or 0}.et: error: {e}") from None
    return alg


def trace_prefix(name: str) -> str:
    """DIR/PREFIX of `DIR/PREFIX` or of one of its files `DIR/PREFIX.<rank>.et`."""
    import re

    match = re.fullmatch(r"(.+)\.\d+\.et", name)
    return match.group(1) if match else name


def read_algorithm_traces(prefix: str | Path) -> Algorithm:
    """The algorithm of a trace set written by `algorithm_traces` (verified); a trace set that
    the fast reader does not prove is read node by node, which names what is wrong."""
    from ccopt.sim.chakra import read_trace_set

    fast = fast_algorithm_traces(prefix)
    if fast is not None:
        return fast
    return algorithm_from_traces(read_trace_set(prefix), prefix)


# The fast reader: nodes decoded from the bytes, a field at a time over the nodes of a group
# of files with numpy (protobuf objects cost microseconds per attribute read), into the
# algorithm they would be if ccopt wrote them: only each step's fields and its cross-block
# dependency are read, assuming the rest is as ccopt writes it. What proves it is that
# exporting that algorithm gives the same files byte for byte (which also verifies it, once:
# the decoding verifies nothing), compared with the files read again a piece at a time, each
# shape's byte matrix against the same rows gathered from the files (the export's bytes are
# never put together); anything else is left to the checked reader. Every byte of the files
# lies in a file's metadata or in exactly one node row, and every one is compared, the bytes
# the decoding skips as much as those it reads. The export is the expensive half: reading what
# it will check anyway would only cost more.

_STEP_MARK = b"\x0a\x0a" + STEP_ATTRIBUTE.encode() + b"\x42"


_PAD = 16
"""Zero bytes after the trace set's bytes (a window may start at any of its bytes)."""


def _words(a: np.ndarray) -> np.ndarray:
    """The 8 bytes from every position of `a` as a little-endian word (a view: no copy)."""
    return np.ndarray((len(a) - 7,), "<u8", a, 0, (1,))


_SEARCH = 1 << 22
"""Bytes compared at a time when searching (the flags then stay in cache)."""


def _find_byte(a: np.ndarray, byte: int, start: int, stop: int) -> np.ndarray:
    """Where a[start:stop] holds `byte`, a piece at a time into one buffer of flags (a flag per
    byte of the whole range would be fresh memory the size of the range)."""
    flags = np.empty(max(min(_SEARCH, stop - start), 0), bool)
    found = [np.zeros(0, np.int64)]
    for lo in range(start, stop, _SEARCH):
        piece = a[lo : min(lo + _SEARCH, stop)]
        hit = np.equal(piece, byte, out=flags[: len(piece)])
        found.append(np.flatnonzero(hit) + lo)
    return np.concatenate(found)


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_TOPS = np.uint64(0x8080808080808080)


def _varints_at(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_varint_at` a word at a time: the 8 bytes at each position read at once, the varint's
    end found from the continuation bits and its 7-bit groups packed by shifts (a varint
    longer than 8 bytes, a negative one, read byte by byte)."""
    at = np.asarray(at, np.int64)
    if len(a) < 8:
        return _varint_at(a, at)
    word = _words(a)[np.minimum(at, len(a) - 8)]
    stops = ~word & _TOPS  # the top bit of each byte that ends a varint
    last = stops & (~stops + np.uint64(1))  # the first of them
    keep = (last << np.uint64(1)) - np.uint64(1)  # (all ones when it is the eighth byte)
    end = at + (np.bitwise_count(keep) >> np.uint8(3))
    x = word & keep & _LOW7
    for mask, shift in _PACKS:
        high = x & ~mask
        x &= mask
        high >>= shift
        x |= high
    long = np.flatnonzero((stops == 0) | (at > len(a) - 10))
    if len(long):  # (nine or ten bytes: a negative number's ten, as int64)
        if long[-1] > len(a) - 10:
            value, stop = _varint_at(a, at[long])
        else:
            b8, b9 = a[at[long] + 8].astype(np.uint64), a[at[long] + 9].astype(np.uint64)
            ten = b8 >= 0x80
            value = x[long] | (b8 & np.uint64(0x7F)) << np.uint64(56)
            value |= np.where(ten, b9 << np.uint64(63), np.uint64(0))
            stop = at[long] + 9 + ten
        x[long], end[long] = value.view(np.uint64), stop
    return x.view(np.int64), end


_PACKS = [
    (np.uint64(m), np.uint64(k))
    for m, k in ((0x007F007F007F007F, 1), (0x00003FFF00003FFF, 2), (0x000000000FFFFFFF, 4))
]
"""Packing 7-bit groups: pairs of bytes into 14 bits, then pairs of those into 28, then 56."""


def _varint_at(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protobuf varints starting at `at` (as int64: 64-bit negatives come back negative) and
    where each ends, all at once (each further byte read only for the varints that go on)."""
    at = np.asarray(at, np.int64)
    byte = a[at]
    value = (byte & 0x7F).astype(np.uint64)
    end = at + 1
    live = np.flatnonzero(byte >= 0x80)
    for k in range(1, 10):
        if not len(live):
            break
        where = np.minimum(at[live] + k, len(a) - 1)
        byte = a[where]
        value[live] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        end[live] = where + 1
        live = live[byte >= 0x80]
    return value.view(np.int64), end


def _split(data: bytes, offset: int, most: int = -1) -> tuple[list[int], list[int]]:
    """Starts (plus `offset`) and lengths of a file's length-prefixed messages (the first
    `most` of them when given)."""
    starts, lengths, at, n = [], [], 0, len(data)
    while at < n and len(starts) != most:
        byte = data[at]
        if byte < 0x80:  # (a node's length takes one or two bytes)
            length, at = byte, at + 1
        elif data[at + 1] < 0x80:
            length, at = (byte & 0x7F) | data[at + 1] << 7, at + 2
        else:
            length, shift = 0, 0
            while True:
                byte = data[at]
                at += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
        starts.append(at + offset)
        lengths.append(length)
        at += length
    if most < 0 and at != n:
        raise ValueError("truncated")
    return starts, lengths


def _node_frames(
    a: np.ndarray, regions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where the nodes of every file's node region (data[start:end]) are framed (their length
    prefix), where their msccl_step attribute is, how many each file has and where each node
    ends: found from the attribute, which ends every node ccopt writes (its length says where
    the node ends, and the next node's length prefix follows), with no loop over nodes.
    Nothing here proves that the nodes are framed so: exporting what they decode to does."""
    letter = _STEP_MARK.index(b"l")  # a byte found once per node: the l of msccl
    marks = _find_byte(a, ord("l"), int(regions[0, 0]), int(regions[-1, 1])) - letter
    marks = marks[(marks >= 0) & (marks + 16 <= len(a))]
    # its last 8 bytes, the l among them, tell a mark well enough (the proof checks them all)
    tail = np.frombuffer(_STEP_MARK[-8:], "<u8")[0]
    marks = marks[_words(a)[marks + len(_STEP_MARK) - 8] == tail]
    file = np.searchsorted(regions[:, 0], marks, "right") - 1
    inside = (file >= 0) & (marks < regions[np.maximum(file, 0), 1])
    marks, file = marks[inside], file[inside]
    end = marks + len(_STEP_MARK) + 3 + a[marks + len(_STEP_MARK) + 2]  # (packed < 128 bytes)
    first = np.ones(len(marks), bool)
    first[1:] = file[1:] != file[:-1]
    frame = np.where(first, regions[file, 0], np.roll(end, 1))
    per_file = np.bincount(file, minlength=len(regions))
    last = np.cumsum(per_file)[per_file > 0] - 1
    if not np.array_equal(end[last], regions[per_file > 0, 1]):
        raise ValueError("a file goes on after its last node")
    return frame, marks, per_file, end


class _TraceFiles:
    """A trace set's files, read some at a time into one reused buffer: what decoding and
    proving a set needs of it at once, not the whole set (670 MB for a 1024-rank ring)."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        sizes = [p.stat().st_size for p in paths]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
        self.scratch = Scratch()

    def groups(self) -> Iterator[tuple[int, int]]:
        """Ranges of files of about DECODE_BYTES (one file at least)."""
        lo, starts = 0, self.starts
        while lo < len(self.paths):
            hi = lo + 1
            while hi < len(self.paths) and starts[hi + 1] - starts[lo] <= DECODE_BYTES:
                hi += 1
            yield lo, hi
            lo = hi

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Files [lo, hi) one after the other, then _PAD zero bytes (valid until the next
        read): read straight into the buffer, no bytes object each."""
        base = self.starts[lo]
        a = self.scratch.get("files", self.starts[hi] - base + _PAD)
        a[len(a) - _PAD :] = 0
        view = memoryview(a)
        for path, start, stop in zip(
            self.paths[lo:hi], self.starts[lo:hi], self.starts[lo + 1 : hi + 1], strict=True
        ):
            with open(path, "rb") as f:
                at = start - base
                while at < stop - base:
                    got = f.readinto(view[at : stop - base])
                    if not got:
                        raise ValueError("a file shrank while it was read")
                    at += got
                if f.read(1):
                    raise ValueError("a file grew while it was read")
        return a


def _file_metadata(a: np.ndarray, starts: list[int]) -> tuple[np.ndarray, list[dict[str, str]]]:
    """The node regions (a row per file: where its nodes start and end in `a`) and metadata
    of the files that start at `starts` (and end at the next)."""
    from ccopt.sim.chakra import schema

    regions, metadata = [], []
    for lo, hi in zip(starts[:-1], starts[1:], strict=True):
        head = a[lo : min(lo + 12, hi)].tobytes()
        if head[:2] == b"\x1f\x8b":
            raise ValueError("gzipped")
        (meta_start,), (meta_length,) = _split(head, 0, 1)
        data = a[lo + meta_start : lo + meta_start + meta_length].tobytes()
        meta = schema().GlobalMetadata.FromString(data)
        metadata.append({m.name: str(attribute_value(m)) for m in meta.attr})
        regions.append((lo + meta_start + meta_length, hi))
    return np.array(regions, np.int64).reshape(-1, 2), metadata


def fast_algorithm_traces(prefix: str | Path) -> Algorithm | None:
    """The algorithm of a trace set exactly as `algorithm_traces` writes it, else None."""
    from ccopt.sim.chakra import trace_paths

    paths = trace_paths(prefix)
    try:
        if not paths:
            return None
        files = _TraceFiles(paths)
        alg, size, local_mem_bw, columns = _decoded(files, str(prefix))
        if not _exports_to(alg, size, local_mem_bw, files, columns):
            return None
    except (ValueError, IndexError, KeyError, TypeError, AlgorithmError, TraceError):
        return None
    except Exception as e:  # protobuf's DecodeError, without importing protobuf first
        if type(e).__name__ == "DecodeError":
            return None
        raise
    return alg


def _exports_to(
    alg: Algorithm, size: int, local_mem_bw: float, files: _TraceFiles, columns: np.ndarray
) -> bool:
    """Whether exporting `alg` gives `files`: the same bytes, cut into the same files (read
    again, a piece's files at a time). This is what proves an import (and verifies it).
    `columns`: the steps by column, of which the thread blocks' tables are views."""
    rank, starts, scratch = 0, files.starts, Scratch()
    for piece in pieces(alg, size, local_mem_bw, columns):
        bounds = piece.file_start
        last = rank + len(bounds) - 1
        if last >= len(starts) or [starts[rank] + b for b in bounds] != starts[rank : last + 1]:
            return False
        if not piece.matches(files.read(rank, last)[: bounds[-1]], scratch):
            return False
        rank = last
    return rank == len(starts) - 1


_WINDOW = 32
"""Bytes read at once from where a step's packed fields start (eight varints: 8 to 32 bytes
as ccopt writes them, two of ten for a -1)."""


def _step_fields(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The FIELDS varints one after the other from each of `at`, a column each: the _WINDOW bytes
    from each position read at once, the rows grouped by which of those bytes go on (their
    continuation bits), which puts each field of a group's rows at one place and width (a few
    groups, a column at a time each); a row whose fields do not end within the window is read a
    varint at a time."""
    n = len(at)
    column = np.empty((FIELDS, n), np.int64)
    if len(a) < _WINDOW or not n:  # (nothing to read: every varint is past the end)
        for k in range(FIELDS):
            column[k], at = _read_varints(a, at)
        return column
    items = np.ndarray((len(a) - _WINDOW + 1,), f"V{_WINDOW}", a, 0, (1,))
    window = items[np.minimum(at, len(items) - 1)].view(np.uint8).reshape(n, _WINDOW)
    key = np.packbits(window >= 0x80, axis=1, bitorder="little").view("<u4")[:, 0]
    key[at >= len(items)] = 0xFFFFFFFF  # (too near the end: a varint at a time)
    order = np.argsort(key, kind="stable")  # (one sort: the groups and their patterns)
    ordered = key[order]
    cuts = (np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist()
    bounds = [0, *cuts, n]
    patterns = ordered[bounds[:-1]]
    window = window[order]  # (a group's rows one after the other)
    fields = np.empty((FIELDS, n), np.int64)  # (in that order)
    for pattern, lo, hi in zip(patterns.tolist(), bounds[:-1], bounds[1:], strict=True):
        layout = _layout(pattern)
        if layout is None:
            where = at[order[lo:hi]]
            for k in range(FIELDS):
                fields[k, lo:hi], where = _read_varints(a, where)
            continue
        for k, (start, width) in enumerate(layout):
            fields[k, lo:hi] = _column_varint(window[lo:hi], start, width)
    column[:, order] = fields
    return column


@functools.lru_cache(maxsize=1 << 10)
def _layout(pattern: int) -> tuple[tuple[int, int], ...] | None:
    """Where the FIELDS varints start and how long each is, from the continuation bits of the
    bytes of a window (bit i: byte i goes on); None if they do not all end in the window."""
    fields, start = [], 0
    for _ in range(FIELDS):
        end = start
        while end < _WINDOW and pattern >> end & 1:
            end += 1
        if end >= _WINDOW or end - start >= 10:
            return None
        fields.append((start, end + 1 - start))
        start = end + 1
    return tuple(fields)


def _column_varint(window: np.ndarray, start: int, width: int) -> np.ndarray:
    """The varints of `width` bytes from column `start` of every row (as int64; ten bytes, a
    negative number's, read as the -1 ccopt writes there: the proof refuses any other)."""
    if width == 1:
        return window[:, start]
    if width == 2:
        return (window[:, start] & 0x7F) | window[:, start + 1].astype(np.int64) << 7
    if width == 10:  # (what ccopt writes ten bytes for: -1; another is refused by the proof)
        return np.broadcast_to(np.int64(-1), (len(window),))
    value = np.zeros(len(window), np.uint64)
    for k in range(width):
        byte = (window[:, start + k] & (0x7F if k < 9 else 1)).astype(np.uint64)
        value |= byte << np.uint64(7 * k)
    return value.view(np.int64)


def _read_varints(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_varints_at`, the varints of one or two bytes (most of a trace's) read as bytes."""
    byte = a[at]
    value, end = byte.astype(np.int64), at + 1
    more = np.flatnonzero(byte >= 0x80)
    if len(more):
        second = a[at[more] + 1]
        value[more] = (value[more] & 0x7F) | second.astype(np.int64) << 7
        end[more] += 1
        longer = more[second >= 0x80]
        if len(longer):
            value[longer], end[longer] = _varints_at(a, at[longer])
    return value, end


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of the varints of values >= 0."""
    size, top = np.ones(len(values), np.int64), int(values.max(initial=0))
    for limit in _VARINT_LIMITS:
        if limit > top:
            break
        size += values >= limit
    return size


def _cross_deps(
    a: np.ndarray, frame: np.ndarray, end: np.ndarray, node: np.ndarray, index: np.ndarray
) -> np.ndarray:
    """The cross-block dependency (a node id, -1 where none) of steps' first nodes, framed at
    `frame` and ending at `end`, each node `node` of its file and starting step `index` of its
    thread block. As ccopt writes them, a node's id is its place in its file, its length
    prefix as long as its length needs, and the first dependency of a step past its block's
    first is the node before; read as if so (the re-export proves it)."""
    framed = end - frame  # (the prefix and the node: 1 byte of prefix up to 128, then 2)
    at = frame + 1 + (framed > 128) + (framed > 16385)
    at = at + np.where(node > 0, 1 + _varint_sizes(node), 0)  # [1 id]
    at = at + 2 + a[at + 1]  # 2 name
    at = at + 2  # 3 type
    has_deps = a[at] == 0x2A  # [5 data_deps]
    deps_end = at + 2 + a[at + 1]
    at = at + 2 + np.where(index > 0, _varint_sizes(np.maximum(node - 1, 0)), 0)
    dep, _ = _read_varints(a, at)
    return np.where(has_deps & (at < deps_end), dep, -1)


DECODE_BYTES = 1 << 24
"""Bytes of files decoded at once (whole files): the arrays of a piece stay small enough to be
reused, where arrays of a whole trace set's nodes would be fresh memory each."""


def _decoded(files: _TraceFiles, prefix: str) -> tuple[Algorithm, int, float, np.ndarray]:
    """The algorithm, size and local memory bandwidth the files would have been written for,
    some files at a time, and the algorithm's steps by column (as `flatten` makes them of the
    thread blocks' tables, which are views of them)."""
    gpus, head_fields, columns = [], None, []
    for lo, hi in files.groups():
        a = files.read(lo, hi)
        regions, metadata = _file_metadata(
            a, [s - files.starts[lo] for s in files.starts[lo : hi + 1]]
        )
        mine = [_rank_gpu(fields, f"{prefix}.{lo + r}.et") for r, fields in enumerate(metadata)]
        frame, marks, per_file, end = _node_frames(a, regions)
        columns.append(_read_steps(a, frame, end, marks, per_file, mine))
        gpus += mine
        head_fields = head_fields or metadata[0]
    if head_fields is None:
        raise ValueError("no files")
    alg = _header_algorithm(head_fields, gpus, f"{prefix}.0.et")
    chunk = _number(head_fields, "chunk_bytes", prefix)
    size = chunk * max(g.in_chunks for g in gpus)
    return (
        alg,
        size,
        float(head_fields["local_mem_bw"]),
        np.concatenate(columns, 1).astype(np.int64),
    )


def _read_steps(
    a: np.ndarray,
    frame: np.ndarray,
    end: np.ndarray,
    marks: np.ndarray,
    per_file: np.ndarray,
    gpus: list[Gpu],
) -> np.ndarray:
    """Set the steps of the thread blocks of `gpus` from their files' nodes: views of the
    steps by column (int32, each a row of the table returned)."""
    # Node: [1 id], 2 name, 3 type, [5 data_deps], [7 duration], 10 attrs (msccl_step last);
    # only what makes the algorithm is read (the re-export proves the rest)
    packed = marks + len(_STEP_MARK) + 3
    rank = np.repeat(np.arange(len(per_file)), per_file)
    rank_start = np.concatenate([[0], np.cumsum(per_file)])[rank]
    # a step's nodes carry the same msccl_step: a node whose first 8 bytes of it (its thread
    # block and index) differ from the node before's starts a step
    word = _words(a)[packed]
    first = np.ones(len(frame), bool)
    first[1:] = (np.diff(rank) != 0) | (word[1:] != word[:-1])
    head = np.flatnonzero(first)
    column = _step_fields(a, packed[head])
    step_tb, index = column[0], column[1]
    other = _cross_deps(a, frame[head], end[head], head - rank_start[head], index)
    owner = np.clip(rank_start[head] + other, 0, len(frame) - 1)
    owner = (np.cumsum(first) - 1)[owner]  # (its step)
    steps = np.empty((FIELDS, len(head)), np.int32)  # (by column: flatten's, as they are)
    steps[:6] = column[2:8]
    steps[6] = np.where(other >= 0, step_tb[owner], -1)
    steps[7] = np.where(other >= 0, index[owner], -1)
    step_rank = rank[head]
    most = max(len(g.tbs) for g in gpus)
    if len(head) and (step_tb.min() < 0 or step_tb.max() >= most):
        raise ValueError("a thread block number no rank has")  # (before counting them)
    bounds = np.searchsorted(step_rank, np.arange(len(gpus) + 1)).tolist()  # rank order
    for r, gpu in enumerate(gpus):
        mine = slice(bounds[r], bounds[r + 1])
        counts = np.bincount(step_tb[mine], minlength=len(gpu.tbs))
        tables = np.split(steps.T[mine], np.cumsum(counts)[:-1]) if gpu.tbs else []
        for tb, table in zip(gpu.tbs, tables, strict=True):
            tb.steps = table  # (a view of the columns: the rows of a transposed table)
    return steps


# ---------------------------------------------------------------------------------------------
# simulation


@dataclass(frozen=True)
class AlgorithmTime:
    """An algorithm's time as ASTRA-sim's custom collective: the latest rank's finish."""

    time_ns: int
    rank_finish_ns: list[int]
    chunk_bytes: int
    messages: int
    levels: int


def _message_ns(network: Network, src: np.ndarray, dst: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """Delays of many messages, each distinct (src, dst, bytes) priced once."""
    if not len(src):
        return np.zeros(0, np.int64)
    keys = np.stack([src, dst, nb])
    unique, back = np.unique(keys, axis=1, return_inverse=True)
    priced = np.array([network.send_ns(*map(int, k)) for k in unique.T], np.int64)
    return priced[back.reshape(-1)]


@dataclass
class _Ports:
    """The injection ports of a network that has them (ccopt mode's `GroupNetwork.link`): a
    send step holds its GPU's link on one dimension while its bytes leave, so a GPU's sends on
    that link go one after another. `port[i]` numbers step i's link (-1: no send), `hold[i]` is
    how long it holds it, `free` when each link is free again."""

    port: np.ndarray
    hold: np.ndarray
    free: np.ndarray

    @classmethod
    def of(
        cls, network: Any, flat: Any, senders: np.ndarray, nbytes: np.ndarray, n: int
    ) -> _Ports | None:
        if not hasattr(network, "link") or not len(senders):
            return None
        src = flat.rank[senders].astype(np.int64)
        pair = src * network.npus + flat.tb_send[flat.tb[senders]]
        unique, back = np.unique(pair, return_inverse=True)
        links = [network.link(*divmod(int(p), network.npus)) for p in unique]
        dim = np.array([d for d, _ in links], np.int64)[back]
        speed = np.array([s for _, s in links], np.float64)[back]
        _, dense = np.unique(src * 64 + dim, return_inverse=True)
        port, hold = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        port[senders] = dense
        hold[senders] = (nbytes[senders].astype(np.float64) / speed).astype(np.int64)
        return cls(port, hold, np.zeros(int(dense.max()) + 1, np.int64))

    def queue(
        self, idx: np.ndarray, ready: np.ndarray, send: np.ndarray, finish: np.ndarray
    ) -> None:
        """Delay one level's sends on busy links: in step order per link, each begins when it
        is ready and its link is free, and arrives `send` ns after it began."""
        sending = self.port[idx] >= 0
        idx, ready = idx[sending], ready[sending]
        if not len(idx):
            return
        by_link = np.lexsort((idx, self.port[idx]))
        idx, ready, link = idx[by_link], ready[by_link], self.port[idx[by_link]]
        first = np.r_[True, link[1:] != link[:-1]]
        place = np.arange(len(idx)) - np.maximum.accumulate(np.where(first, np.arange(len(idx)), 0))
        for k in range(int(place.max()) + 1):
            at = place == k  # the k-th send of every link: at most one per link
            steps, links = idx[at], link[at]
            begin = np.maximum(ready[at], self.free[links])
            self.free[links] = begin + self.hold[steps]
            finish[steps] = begin + send[steps]


def simulate_algorithm(
    alg: Algorithm, network: Network, system: SystemConfig, size: int, body_passes: int = 0
) -> AlgorithmTime:
    """Time `alg` moving `size` bytes per rank as ASTRA-sim times its Chakra export run as a
    custom collective (one dataset split): the critical path of the steps' nodes, a level of
    the verified schedule at a time. A fused body's `fn` steps are COMP nodes of `body_passes`
    passes over their chunks, on their thread block: each chunk's body waits for its reduction
    and delays only the steps that carry its results, so the pipelining is what the critical
    path shows. A network with injection links (ccopt mode's `GroupNetwork`) also queues each
    GPU's sends on a link one after another (`_Ports`); ASTRA-sim's does not."""
    if alg.ranks != network.npus:
        raise ConfigError(
            network.source,
            "npus_count",
            f"the network has {network.npus} NPUs, the algorithm {alg.ranks} ranks",
        )
    if system.preferred_dataset_splits != 1:
        raise ConfigError(
            system.source,
            "preferred-dataset-splits",
            "must be 1 to time an algorithm (ASTRA-sim reruns a custom trace per split)",
        )
    sched = schedule(alg)
    chunk = chunk_bytes(alg, size)
    flat = sched.flat
    nodes = step_nodes(sched)
    kind, n = flat.col[TYPE], len(flat.col[TYPE])
    nbytes = flat.col[CNT] * chunk
    comp = np.where(
        IS_COMP[kind],
        np.maximum(comp_micros(kind, nbytes, system.local_mem_bw, body_passes) * 1000, 1),
        0,
    )
    send = np.zeros(n, np.int64)
    senders = np.flatnonzero(IS_SEND[kind])
    send[senders] = _message_ns(
        network, flat.rank[senders], flat.tb_send[flat.tb[senders]], nbytes[senders]
    )
    ports = _Ports.of(network, flat, senders, nbytes, n)
    previous = np.where(flat.index > 0, np.arange(n) - 1, -1)
    finish = np.zeros(n + 1, np.int64)  # finish[-1] = 0 stands for "no such step"
    order = np.argsort(sched.level, kind="stable")
    bounds = np.searchsorted(sched.level[order], np.arange(int(sched.level.max(initial=-1)) + 2))
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        idx = order[lo:hi]
        start = np.maximum(finish[previous[idx]], finish[nodes.dep[idx]])
        start = np.maximum(start, finish[nodes.partner[idx]])  # arrival of what it receives
        finish[idx] = start + comp[idx] + send[idx]
        if ports is not None:
            ports.queue(idx, start + comp[idx], send, finish)
    per_rank = np.zeros(alg.ranks, np.int64)
    np.maximum.at(per_rank, flat.rank, finish[:n])
    return AlgorithmTime(
        int(per_rank.max(initial=0)), per_rank.tolist(), chunk, len(sched.sends), len(bounds) - 1
    )
