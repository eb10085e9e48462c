"""MSCCL XML out: an `algo.algorithm` as the file the MSCCL runtime loads.

Every attribute the runtime reads is written (it rejects files without `outofplace`, `minBytes`
and `maxBytes`); a step without a source or destination gets MSCCL's `i`/`o` with offset -1, and
`hasdep="1"` marks the steps others wait for. Reading the output back gives the same IR.
"""

from __future__ import annotations

from collections.abc import Iterator
from xml.sax.saxutils import quoteattr

import numpy as np

from ccopt.dialects.algo import (
    DEPID,
    DEPS,
    MSCCL_STEP_NAMES,
    TYPE,
    Algorithm,
    AlgorithmError,
    Flat,
    Step,
    flatten,
)

STEP_FIELDS = (
    ('\n      <step s="', "s"),
    ('" type="', "type"),
    ('" srcbuf="', "srcbuf"),
    ('" srcoff="', "srcoff"),
    ('" dstbuf="', "dstbuf"),
    ('" dstoff="', "dstoff"),
    ('" cnt="', "cnt"),
    ('" depid="', "depid"),
    ('" deps="', "deps"),
    ('" hasdep="', "hasdep"),
    ('"/>', None),
)
"""A <step> line: constant text, then the field written after it."""

TYPE_NAMES = np.array([n.encode() for n in MSCCL_STEP_NAMES])
SRC_NAMES = np.array([b"i", b"i", b"o", b"s"])  # index buffer + 1: none is written "i"
DST_NAMES = np.array([b"o", b"i", b"o", b"s"])  # and "o", with offset -1, as MSCCL does
ROWS_PER_PIECE = 1 << 18
"""Steps formatted at once (bounds the memory of the byte matrix: ~20 MB)."""


def decimal(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal spellings of integers as a NUL-padded bytes array and their lengths (small
    ranges through a table: numpy's own int -> bytes conversion is 25x slower)."""
    if not len(values):
        return np.zeros(0, "S1"), np.zeros(0, np.int64)
    low, high = int(values.min()), int(values.max())
    if high - low < 1 << 16:
        table = [b"%d" % v for v in range(low, high + 1)]
        at = values - low
        return np.array(table)[at], np.array([len(t) for t in table], np.int64)[at]
    spelled = values.astype("S")
    return spelled, np.char.str_len(spelled).astype(np.int64)


def step_text(steps: np.ndarray, index: np.ndarray, marked: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The <step> lines of many steps at once and each line's length. Every field is a
    fixed-width NUL-padded column of one byte matrix, whose bytes less their NULs are the text
    (no Python object per step)."""
    n = len(steps)
    columns = steps.T
    values = {
        "s": decimal(index),
        "type": _names(TYPE_NAMES, columns[TYPE]),
        "srcbuf": _names(SRC_NAMES, columns[1] + 1),
        "srcoff": decimal(columns[2]),
        "dstbuf": _names(DST_NAMES, columns[3] + 1),
        "dstoff": decimal(columns[4]),
        "cnt": decimal(columns[5]),
        "depid": decimal(columns[DEPID]),
        "deps": decimal(columns[DEPS]),
        "hasdep": (np.where(marked, b"1", b"0"), np.ones(n, np.int64)),
    }
    spelled = [values[name] for _, name in STEP_FIELDS if name is not None]
    widths = [v.dtype.itemsize for v, _ in spelled]
    template = b"".join(
        text.encode() + b"\0" * width
        for (text, _), width in zip(STEP_FIELDS, [*widths, 0], strict=True)
    )
    # every row starts as the constant text with NULs where the fields go
    matrix = np.tile(np.frombuffer(template, np.uint8), (n, 1))
    at = 0
    for (text, _), (value, _), width in zip(STEP_FIELDS, spelled, widths, strict=False):
        at += len(text)
        matrix[:, at : at + width] = value.view(np.uint8).reshape(-1, width)
        at += width
    lengths = sum(length for _, length in spelled) + sum(len(t) for t, _ in STEP_FIELDS)
    return matrix.tobytes().translate(None, b"\0"), lengths


def _names(table: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    spelled = table[np.clip(codes, 0, len(table) - 1)]
    lengths = np.array([len(t) for t in table.tolist()], np.int64)
    return spelled, lengths[np.clip(codes, 0, len(table) - 1)]


def hasdep_marks(alg: Algorithm, flat: Flat) -> np.ndarray:
    """Per step (flat order): whether another step waits for it (MSCCL's hasdep)."""
    marked = np.zeros(flat.col.shape[1], bool)
    depid, deps = flat.col[DEPID], flat.col[DEPS]
    ntbs = np.array([len(g.tbs) for g in alg.gpus], np.int64)[flat.rank]
    waits = np.flatnonzero((depid >= 0) & (depid < ntbs))
    target = flat.gpu_tb_start[flat.rank[waits]] + depid[waits]
    ok = (deps[waits] >= 0) & (deps[waits] < flat.tb_len[target])
    marked[flat.tb_start[target[ok]] + deps[waits][ok]] = True
    return marked


def header_line(alg: Algorithm) -> str:
    return (
        f'<algo name={quoteattr(alg.name)} proto="{alg.proto}" nchannels="{alg.nchannels}" '
        f'nchunksperloop="{alg.chunks_per_loop}" ngpus="{alg.ranks}" coll="{alg.collective}" '
        f'inplace="{int(alg.inplace)}" outofplace="{int(alg.outofplace)}" '
        f'minBytes="{alg.min_bytes}" maxBytes="{alg.max_bytes}"'
        + (f' root="{alg.root}"' if alg.collective in ("broadcast", "reduce") else "")
        + ">"
    )


def body_pieces(alg: Algorithm) -> Iterator[bytes]:
    """The text between the <algo> line and the closing </algo> line, in pieces of about
    ROWS_PER_PIECE steps, each ending at a thread block's end."""
    flat = flatten(alg)
    marked = hasdep_marks(alg, flat)
    # units: every thread block, and a rank without thread blocks: text before, steps, text after
    pre: list[bytes] = []
    post: list[bytes] = []
    lengths: list[int] = []
    for r, gpu in enumerate(alg.gpus):
        opening = (
            f'\n  <gpu id="{r}" i_chunks="{gpu.in_chunks}" o_chunks="{gpu.out_chunks}" '
            f's_chunks="{gpu.scratch_chunks}">'
        ).encode()
        if not gpu.tbs:
            pre.append(opening)
            post.append(b"\n  </gpu>")
            lengths.append(0)
        for t, tb in enumerate(gpu.tbs):
            line = f'\n    <tb id="{t}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">'
            pre.append((opening if t == 0 else b"") + line.encode())
            post.append(b"\n    </tb>" + (b"\n  </gpu>" if t == len(gpu.tbs) - 1 else b""))
            lengths.append(len(tb.steps))
    if not lengths:
        return
    units = np.array(lengths, np.int64)
    ends = np.cumsum(units)
    cuts = np.searchsorted(ends, np.arange(ROWS_PER_PIECE, int(ends[-1]), ROWS_PER_PIECE), "right")
    bounds = sorted({0, *cuts.tolist(), len(units)})
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        a = int(ends[lo] - units[lo])
        b = int(ends[hi - 1])
        text, line_lengths = step_text(flat.col[:, a:b].T, flat.index[a:b], marked[a:b])
        view = memoryview(text)
        offsets = np.concatenate([[0], np.cumsum(line_lengths)])
        unit_ends = offsets[ends[lo:hi] - a].tolist()
        unit_starts = offsets[ends[lo:hi] - units[lo:hi] - a].tolist()
        parts = []
        for u, start, end in zip(range(lo, hi), unit_starts, unit_ends, strict=True):
            parts += [pre[u], view[start:end], post[u]]
        yield b"".join(parts)


def refuse_fused_body(alg: Algorithm) -> None:
    """MSCCL has no step that runs a computation: an `fn` step (a fused all-reduce's body) is
    refused where it is, rather than dropped (the file would compute another thing)."""
    for r, g in enumerate(alg.gpus):
        for t, tb in enumerate(g.tbs):
            hit = np.flatnonzero(tb.steps[:, TYPE] == Step.APPLY)
            if hit.size:
                raise AlgorithmError(
                    "applies a fused body, which MSCCL XML cannot express (no step type runs a "
                    "computation); export the plain algorithm it was made from",
                    r,
                    t,
                    int(hit[0]),
                    Step.APPLY,
                )


def xml_pieces(alg: Algorithm) -> Iterator[bytes]:
    """The file as UTF-8 pieces: the <algo> line, the body in pieces, the </algo> line
    (AlgorithmError for ccopt's own `fn` steps)."""
    refuse_fused_body(alg)
    yield header_line(alg).encode()
    yield from body_pieces(alg)
    yield b"\n</algo>\n"


MAX_STEPS = 256
"""Steps per thread block the MSCCL runtime (microsoft/msccl, MSCCL_MAX_NUM_STEPS) takes."""
MAX_TBS_PER_CHANNEL = 32
"""Thread blocks per channel per rank it takes (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL)."""


def runtime_limits(alg: Algorithm) -> list[str]:
    """Where an algorithm exceeds the MSCCL runtime's compile-time limits (its file is still
    valid MSCCL XML, but that runtime build refuses to load it)."""
    problems = []
    longest = max(
        ((len(tb.steps), r, t) for r, g in enumerate(alg.gpus) for t, tb in enumerate(g.tbs)),
        default=None,
    )
    if longest is not None and longest[0] > MAX_STEPS:
        problems.append(
            f"rank {longest[1]} tb {longest[2]} has {longest[0]} steps; the MSCCL runtime takes "
            f"at most {MAX_STEPS} per thread block"
        )
    for r, g in enumerate(alg.gpus):
        per_channel = np.bincount([tb.chan for tb in g.tbs], minlength=1)
        if per_channel.max() > MAX_TBS_PER_CHANNEL:
            problems.append(
                f"rank {r} has {int(per_channel.max())} thread blocks on channel "
                f"{int(per_channel.argmax())}; the MSCCL runtime takes at most "
                f"{MAX_TBS_PER_CHANNEL} per channel"
            )
            break
    return problems


def write_xml(alg: Algorithm) -> str:
    """The algorithm as MSCCL XML text (AlgorithmError for ccopt's own `fn` steps)."""
    return b"".join(xml_pieces(alg)).decode()
