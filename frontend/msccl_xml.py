"""MSCCL XML in: the files MSCCLang compiles to and the MSCCL runtime executes, read into the
algorithm level (`algo.algorithm`).

```xml
<algo name="ring" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce"
      inplace="1" outofplace="0" minBytes="0" maxBytes="9223372036854775807">
  <gpu id="0" i_chunks="4" o_chunks="4" s_chunks="0">
    <tb id="0" send="1" recv="3" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="3" dstbuf="o" dstoff="-1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      ...
```

Reading is fast (a million steps in seconds): ElementTree's C parser builds the tree and every
thread block's steps become one numpy table. Only when something is wrong is the file read again
with expat, which tracks lines, so that the error names the element and its line.
An attribute the file leaves out reads as the value `-t msccl-xml` writes for it.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr

from ccopt.diagnostics import LocatedError, SourceText
from ccopt.dialects.algo import (
    DEPID,
    DEPS,
    FIELDS,
    INT32_MAX,
    MAX_BYTES,
    MSCCL_STEP_CODES,
    MSCCL_STEP_NAMES,
    Algorithm,
    AlgorithmError,
    AlgorithmOp,
    Gpu,
    ThreadBlock,
    schedule,
)

Path = tuple[int, ...]
"""An element by position: () the algo, (g,) a gpu, (g, t) a thread block, (g, t, s) a step."""

STEP_ATTRIBUTES = ("type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps")
BUFFER_CODES = {"i": 0, "o": 1, "s": 2}
TAGS = ("algo", "gpu", "tb", "step")


class XmlError(Exception):
    """A fault at an element (by path); turned into a located error by `read_algorithm`."""

    def __init__(self, message: str, path: Path = ()):
        super().__init__(message)
        self.message, self.path = message, path


def _int(element: ET.Element, name: str, path: Path, default: int | None = None) -> int:
    text = element.get(name)
    if text is None:
        if default is None:
            raise XmlError(f"<{element.tag}> needs attribute '{name}'", path)
        return default
    try:
        return int(text)
    except ValueError:
        raise XmlError(
            f'<{element.tag}> attribute {name}="{text}" is not an integer', path
        ) from None


def _flag(element: ET.Element, name: str, path: Path, default: bool) -> bool:
    value = _int(element, name, path, int(default))
    if value not in (0, 1):
        raise XmlError(f"<{element.tag}> attribute {name} must be 0 or 1, got {value}", path)
    return bool(value)


def _children(element: ET.Element, tag: str, path: Path) -> list[ET.Element]:
    children = list(element)
    for k, child in enumerate(children):
        if child.tag != tag:
            raise XmlError(f"<{element.tag}> holds <{tag}> elements, not <{child.tag}>", (*path, k))
    return children


def _steps(tb: ET.Element, path: Path) -> np.ndarray:
    """A thread block's steps as one table, converted column by column."""
    steps = _children(tb, "step", path)
    n = len(steps)
    table = np.empty((n, FIELDS), dtype=np.int32)
    if not n:
        return table
    for col, name in enumerate(STEP_ATTRIBUTES):
        values = [s.get(name) for s in steps]
        if None in values:
            k = values.index(None)
            default = {"depid": "-1", "deps": "-1", "srcbuf": "i", "dstbuf": "o"}.get(name)
            if default is None and name in ("srcoff", "dstoff"):
                default = "-1"
            if default is None:
                raise XmlError(f"<step> needs attribute '{name}'", (*path, k))
            values = [default if v is None else v for v in values]
        if name == "type":
            codes = [MSCCL_STEP_CODES.get(v, -1) for v in values]
            if -1 in codes:
                k = codes.index(-1)
                raise XmlError(
                    f'<step> has unknown type "{values[k]}" (s, r, rrc, rcs, rrs, rrcs, cpy, '
                    "re, nop)",
                    (*path, k),
                )
            table[:, col] = codes
        elif name.endswith("buf"):
            codes = [BUFFER_CODES.get(v, -1) for v in values]
            if -1 in codes:
                k = codes.index(-1)
                raise XmlError(f'<step> {name}="{values[k]}" is not a buffer (i, o, s)', (*path, k))
            table[:, col] = codes
        else:
            try:
                numbers = np.array(values).astype(np.int64)
                if len(numbers) and np.abs(numbers).max() > INT32_MAX:
                    k = int(np.argmax(np.abs(numbers)))
                    raise XmlError(
                        f'<step> attribute {name}="{values[k]}" is out of range', (*path, k)
                    )
                table[:, col] = numbers
            except (ValueError, OverflowError):
                k = next(i for i, v in enumerate(values) if not re.fullmatch(r"-?\d+", v.strip()))
                raise XmlError(
                    f'<step> attribute {name}="{values[k]}" is not an integer', (*path, k)
                ) from None
    index = [s.get("s") for s in steps]
    if index != [str(k) for k in range(n)] and None not in index:
        k = next(k for k, v in enumerate(index) if v != str(k))
        raise XmlError(
            f'<step s="{index[k]}"> is step {k} of its thread block: s must count from 0',
            (*path, k),
        )
    for buf, off in ((1, 2), (3, 4)):  # an offset of -1 is no buffer, whatever the letter
        none = table[:, off] < 0
        table[none, buf] = -1
        table[none, off] = -1
    return table


# The fast path: files laid out exactly as `-t msccl-xml` (and msccl-tools) write them are read
# without building a tree. One `bytes.translate` turns the letters of step types and buffers
# into digits (and every other character but digits and '-' into a space), one numpy call parses
# every number of the body, and the values sit at fixed places among the numbers that attribute
# names produce. What is left when numbers and those letters are deleted (the skeleton) must be
# the canonical layout, else the general reader takes over.

GPU_OPEN = '\n  <gpu id="{}" i_chunks="{}" o_chunks="{}" s_chunks="{}">'
TB_OPEN = '\n    <tb id="{}" send="{}" recv="{}" chan="{}">'
STEP_LINE = (
    '\n      <step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="{}" dstoff="{}" cnt="{}" '
    'depid="{}" deps="{}" hasdep="{}"/>'
)
TB_CLOSE = "\n    </tb>"
GPU_CLOSE = "\n  </gpu>"
_LETTERS = b"srcpyenoi"  # the letters of step types and buffers, read as digits
_NUMERIC = bytes(
    (b"3124567890"[_LETTERS.index(c)] if c in _LETTERS else c if chr(c) in "0123456789-" else 32)
    for c in range(256)
)
_REMOVED = b"0123456789-" + _LETTERS


def _numbers(text: bytes) -> np.ndarray:
    spaced = text.translate(_NUMERIC)
    if re.search(rb"\d", spaced) is None:  # (numpy reads a number from nothing)
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(spaced, dtype=np.int64, sep=" ")  # type: ignore[call-overload]


def _layout(template: str) -> tuple[bytes, int, list[int]]:
    """A fragment's skeleton, how many numbers it yields and where its values are among them."""
    marks = [str(900000001 + k) for k in range(template.count("{}"))]
    numbers = _numbers(template.format(*marks).encode()).tolist()
    return (
        template.format(*[""] * len(marks)).encode().translate(None, _REMOVED),
        len(numbers),
        [numbers.index(int(m)) for m in marks],
    )


LAYOUTS = {
    name: _layout(t)
    for name, t in (
        ("gpu", GPU_OPEN),
        ("tb", TB_OPEN),
        ("step", STEP_LINE),
        ("tb_end", TB_CLOSE),
        ("gpu_end", GPU_CLOSE),
    )
}
TYPE_CODES = {int(n.encode().translate(_NUMERIC)): c for c, n in enumerate(MSCCL_STEP_NAMES)}
BUFFER_NUMBERS = {int(b.encode().translate(_NUMERIC)): c for c, b in enumerate("ios")}


def _table(table: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(table)
    return np.array(keys, dtype=np.int64), np.array([table[k] for k in keys], dtype=np.int32)


TYPE_TABLE, BUFFER_TABLE = _table(TYPE_CODES), _table(BUFFER_NUMBERS)


def _lookup(values: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
    """Map numbers through a sorted (keys, codes) table (None if one is not a key)."""
    keys, codes = table
    where = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    if not np.array_equal(keys[where], values):
        return None
    return codes[where]


def fast_algorithm(text: str, name: str) -> tuple[Algorithm, list[np.ndarray]] | None:
    """The algorithm of a canonically laid out file, with each thread block's hasdep column;
    None if the file is laid out otherwise (or is wrong: the general reader says where)."""
    data = text.encode()
    head_end = data.find(b">")
    if not data.startswith(b"<algo ") or head_end < 0 or data[head_end - 1 : head_end] == b"/":
        return None
    try:
        header = ET.fromstring(data[: head_end + 1] + b"</algo>")
    except ET.ParseError:
        return None
    k = min(len(data), 64)  # strip trailing space from the end only (no copy of the file)
    end = len(data) - k + len(data[len(data) - k :].rstrip(b" \t\r\n"))
    if not data.endswith(b"\n</algo>", 0, end):
        return None
    body = data[head_end + 1 : end - len(b"\n</algo>")]  # (one copy of a large file)
    skeleton = body.translate(None, _REMOVED)
    numbers = _numbers(body)
    go, to, st, tc, gc = (LAYOUTS[k] for k in ("gpu", "tb", "step", "tb_end", "gpu_end"))
    parts = skeleton.split(go[0])
    if parts[0] != b"":
        return None
    # walk the skeleton: where every gpu's and tb's numbers start, and how many steps each tb has
    heads: list[tuple[int, list[int]]] = []  # (gpu numbers start, [tb numbers starts])
    first_row: list[int] = []
    counts: list[int] = []
    at = 0
    for part in parts[1:]:
        if not part.endswith(gc[0]):
            return None
        blocks = part[: -len(gc[0])].split(to[0])
        if blocks[0] != b"":
            return None
        gpu_at, tb_ats = at, []
        at += go[1]
        for tb in blocks[1:]:
            count, rest = divmod(len(tb) - len(tc[0]), len(st[0]))
            if rest or tb != st[0] * count + tc[0]:
                return None
            tb_ats.append(at)
            first_row.append(at + to[1])
            counts.append(count)
            at += to[1] + st[1] * count + tc[1]
        heads.append((gpu_at, tb_ats))
        at += gc[1]
    if at != len(numbers):
        return None
    # every step's values in one gather, checked and decoded at once
    lengths = np.array(counts, dtype=np.int64)
    within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    )
    rows = np.repeat(np.array(first_row, dtype=np.int64), lengths) + within * st[1]
    table = numbers[rows[:, None] + np.array(st[2], dtype=np.int64)[None, :]]
    kinds = _lookup(table[:, 1], TYPE_TABLE)
    srcbuf = _lookup(table[:, 2], BUFFER_TABLE)
    dstbuf = _lookup(table[:, 4], BUFFER_TABLE)
    if kinds is None or srcbuf is None or dstbuf is None or not np.array_equal(table[:, 0], within):
        return None
    if len(table) and np.abs(table).max() > INT32_MAX:
        return None  # the general reader names the number
    steps = np.stack(
        [kinds, srcbuf, table[:, 3], dstbuf, table[:, 5], table[:, 6], table[:, 7], table[:, 8]],
        axis=1,
    ).astype(np.int32)
    for buf, off in ((1, 2), (3, 4)):  # an offset of -1 is no buffer, whatever the letter
        none = steps[:, off] < 0
        steps[none, buf] = -1
        steps[none, off] = -1
    cuts = np.cumsum(lengths)[:-1]
    per_tb = np.split(steps, cuts)
    hasdeps = np.split(table[:, 9], cuts)
    gpus: list[Gpu] = []
    k = 0
    for g, (gpu_at, tb_ats) in enumerate(heads):
        rank, ic, oc, sc = numbers[gpu_at + np.array(go[2])].tolist()
        if rank != g:
            return None
        tbs = []
        for t, tb_at in enumerate(tb_ats):
            tid, send, recv, chan = numbers[tb_at + np.array(to[2])].tolist()
            if tid != t:
                return None
            tbs.append(ThreadBlock(send, recv, chan, per_tb[k]))
            k += 1
        gpus.append(Gpu(ic, oc, sc, tbs))
    return _with_header(header, gpus, name), hasdeps


def _with_header(root: ET.Element, gpus: list[Gpu], name: str) -> Algorithm:
    """The algorithm of `gpus` with the <algo> element's attributes (absent ones read as the
    writer's defaults)."""
    ngpus = _int(root, "ngpus", (), len(gpus))
    if ngpus != len(gpus):
        raise XmlError(f'<algo> says ngpus="{ngpus}" but holds {len(gpus)} <gpu> elements')
    coll = root.get("coll")
    if coll is None:
        raise XmlError("<algo> needs attribute 'coll'")
    inplace = _flag(root, "inplace", (), False)
    channels = max((tb.chan for g in gpus for tb in g.tbs), default=0) + 1
    chunks = max((max(g.in_chunks, g.out_chunks) for g in gpus), default=1)
    return Algorithm(
        name=root.get("name") or name,
        collective=coll,
        gpus=gpus,
        proto=root.get("proto", "Simple"),
        nchannels=_int(root, "nchannels", (), channels),
        chunks_per_loop=_int(root, "nchunksperloop", (), chunks),
        inplace=inplace,
        outofplace=_flag(root, "outofplace", (), not inplace),
        min_bytes=_int(root, "minBytes", (), 0),
        max_bytes=_int(root, "maxBytes", (), MAX_BYTES),
        root=_int(root, "root", (), 0),
    )


def hasdep_ok(alg: Algorithm, hasdeps: list[np.ndarray]) -> bool:
    """Whether every step another step waits for is marked hasdep="1" (vectorized)."""
    k = 0
    for gpu in alg.gpus:
        marks = hasdeps[k : k + len(gpu.tbs)]
        k += len(gpu.tbs)
        for tb in gpu.tbs:
            waits = tb.steps[tb.steps[:, DEPID] >= 0]
            for t, s in waits[:, [DEPID, DEPS]].tolist():
                if t >= len(marks) or s >= len(marks[t]) or marks[t][s] != 1:
                    return False
    return True


def parse_algorithm(text: str, name: str) -> tuple[Algorithm, ET.Element]:
    """The algorithm of an MSCCL XML text (XmlError at the faulty element)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        line, col = e.position
        raise LocatedError(f"malformed XML: {str(e).split(':')[0]}", name, line, col + 1) from None
    if root.tag != "algo":
        raise XmlError(f"an MSCCL algorithm file starts with <algo>, not <{root.tag}>")
    gpus_xml = _children(root, "gpu", ())
    ngpus = _int(root, "ngpus", (), len(gpus_xml))
    if ngpus != len(gpus_xml):
        raise XmlError(f'<algo> says ngpus="{ngpus}" but holds {len(gpus_xml)} <gpu> elements')
    gpus = []
    for g, gpu in enumerate(gpus_xml):
        path = (g,)
        if _int(gpu, "id", path) != g:
            raise XmlError(f'<gpu id="{gpu.get("id")}"> is gpu #{g}: ids must count from 0', path)
        tbs = []
        for t, tb in enumerate(_children(gpu, "tb", path)):
            tpath = (g, t)
            if _int(tb, "id", tpath) != t:
                raise XmlError(
                    f'<tb id="{tb.get("id")}"> is tb #{t} of its gpu: ids must count from 0', tpath
                )
            tbs.append(
                ThreadBlock(
                    _int(tb, "send", tpath, -1),
                    _int(tb, "recv", tpath, -1),
                    _int(tb, "chan", tpath, 0),
                    _steps(tb, tpath),
                )
            )
        gpus.append(
            Gpu(
                _int(gpu, "i_chunks", path),
                _int(gpu, "o_chunks", path),
                _int(gpu, "s_chunks", path, 0),
                tbs,
            )
        )
    return _with_header(root, gpus, "algorithm"), root


def check_hasdep(alg: Algorithm, root: ET.Element) -> None:
    """The runtime signals only steps marked hasdep="1": a step others wait for must be marked,
    or the waiting step hangs."""
    for g, gpu in enumerate(alg.gpus):
        needed = {
            (int(d), int(s)) for tb in gpu.tbs for d, s in tb.steps[:, [DEPID, DEPS]] if d >= 0
        }
        if not needed:
            continue
        tbs = root[g]
        for t, s in sorted(needed):
            if t < len(tbs) and s < len(tbs[t]) and tbs[t][s].get("hasdep", "1") != "1":
                raise XmlError(
                    f'<step s="{s}"> has hasdep="0" but another step depends on it (the MSCCL '
                    "runtime would never signal it)",
                    (g, t, s),
                )


def element_lines(text: str) -> dict[Path, tuple[int, int]]:
    """Line and column of every algo/gpu/tb/step element, by path (expat tracks them)."""
    import xml.parsers.expat

    lines: dict[Path, tuple[int, int]] = {}
    path: list[int] = []
    counters: list[int] = []  # children seen so far at each open element
    parser = xml.parsers.expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        if counters:
            counters[-1] += 1
            path.append(counters[-1])
        lines[tuple(path)] = (parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        counters.append(-1)

    def end(tag: str) -> None:
        counters.pop()
        if path and len(counters) == len(path):
            path.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.Parse(text, True)
    return lines


def _located(message: str, source: SourceText, path: Path) -> LocatedError:
    lines = element_lines(source.text)
    while path and path not in lines:
        path = path[:-1]
    line, col = lines.get(path, (1, 1))
    return LocatedError(message, source.name, line, col)


def read_algorithm(source: SourceText, verify: bool = True) -> Algorithm:
    """Read and verify an MSCCL XML algorithm; errors are located at the element at fault."""
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(source.name))[0]) or "algorithm"
    try:
        fast = fast_algorithm(source.text, stem)
        if fast is not None and hasdep_ok(*fast):
            alg = fast[0]
        else:
            alg, root = parse_algorithm(source.text, source.name)
            if root.get("name") is None:
                alg.name = stem
            check_hasdep(alg, root)
        if verify:
            schedule(alg)
    except XmlError as e:
        raise _located(e.message, source, e.path) from None
    except AlgorithmError as e:
        path = tuple(x for x in (e.rank, e.tb, e.step) if x is not None)
        raise _located(str(e), source, path) from None
    return alg


def read_module(source: SourceText, verify: bool = True) -> ModuleOp:
    """An MSCCL XML file as a module holding its `algo.algorithm`, located at the <algo>."""
    alg = read_algorithm(source, verify)
    op = AlgorithmOp(alg)
    op.location = FileLineColLoc(StringAttr(source.name), IntAttr(1), IntAttr(1))
    _locate_blocks(op, source)
    return ModuleOp([op])


def _locate_blocks(op: AlgorithmOp, source: SourceText) -> None:
    """Give gpu and tb ops the lines of their elements (found by scanning for their tags: far
    cheaper than a second parse; skipped if comments make the count differ)."""
    positions = [(m.group(1), m.start()) for m in re.finditer(r"<(gpu|tb|algo)\b", source.text)]
    ops: list[tuple[str, object]] = [("algo", op)]
    for gpu in op.gpu_ops():
        ops.append(("gpu", gpu))
        ops.extend(("tb", tb) for tb in gpu.tb_ops())
    if [tag for tag, _ in positions] != [tag for tag, _ in ops]:
        return
    filename = StringAttr(source.name)
    for (_, at), (_, target) in zip(positions, ops, strict=True):
        line, col = source.line_col(at)
        target.location = FileLineColLoc(filename, IntAttr(line), IntAttr(col))  # type: ignore[attr-defined]
