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

A file laid out as `-t msccl-xml` and msccl-tools write it (two million steps, 250 MB: about
as long as expat takes to parse it with no handler) is read without a tree, with numpy, and
proven by writing it again (see `fast_algorithm`). Any other file is read by ElementTree's C
parser, every thread block's steps becoming one numpy table. Only when something is wrong is the
file read again with expat, which tracks lines, so that the error names the element and its
line.
An attribute the file leaves out reads as the value `-t msccl-xml` writes for it.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr

from ccopt.backends.msccl_xml import STEP_FIELDS
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
KNOWN_ATTRIBUTES = {
    "algo": (
        "name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace",
        "minBytes", "maxBytes", "redop", "root",
    ),
    "gpu": ("id", "i_chunks", "o_chunks", "s_chunks"),
    "tb": ("id", "send", "recv", "chan"),
    "step": ("s", *STEP_ATTRIBUTES, "hasdep"),
}  # fmt: skip
"""The attributes msccl-tools, TACCL and the MSCCL runtime know: any other is a typo, which
would otherwise read as its default without a word."""
REDUCTIONS = ("sum", "nop")
"""`redop` values read: ccopt's algorithms sum (TACCL writes "nop": the caller's operator)."""
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
    known = KNOWN_ATTRIBUTES[tag]
    for k, child in enumerate(children):
        if child.tag != tag:
            raise XmlError(f"<{element.tag}> holds <{tag}> elements, not <{child.tag}>", (*path, k))
        if len(child.attrib) > len(known) or not all(a in known for a in child.attrib):
            _check_attributes(child, (*path, k))
    return children


def _check_attributes(element: ET.Element, path: Path) -> None:
    """Only attributes MSCCL knows."""
    known = KNOWN_ATTRIBUTES[element.tag]
    for name in element.attrib:
        if name not in known:
            raise XmlError(
                f"<{element.tag}> has unknown attribute '{name}' (one of {', '.join(known)})", path
            )


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
                whole = [re.fullmatch(r"-?\d+", v.strip()) is not None for v in values]
                if all(whole):  # (an integer past int64: numpy's OverflowError)
                    k = max(range(len(values)), key=lambda i: abs(int(values[i])))
                    raise XmlError(
                        f'<step> attribute {name}="{values[k]}" is out of range', (*path, k)
                    ) from None
                k = whole.index(False)
                raise XmlError(
                    f'<step> attribute {name}="{values[k]}" is not an integer', (*path, k)
                ) from None
    flags = [s.get("hasdep", "0") for s in steps]
    if any(f not in ("0", "1") for f in flags):
        k = next(k for k, f in enumerate(flags) if f not in ("0", "1"))
        raise XmlError(f'<step> attribute hasdep="{flags[k]}" must be 0 or 1', (*path, k))
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


# The fast path: a file laid out exactly as `-t msccl-xml` (and msccl-tools) write it is read
# without a tree or a Python object per step. In windows of whole <gpu> elements, numpy finds
# every '<'; the letter after it says what the element is (g, t, s) and its values lie at known
# distances from it and from each other's ends: numbers are parsed digit by digit, over all
# elements of a kind at once, and where a number's digits stop, the next value starts a fixed
# text later. The parse trusts the layout; what proves it is that the writer, given what was
# read, writes the same body byte for byte (else the general reader takes over and says what is
# wrong).

WINDOW = 1 << 24
"""Bytes of <gpu> elements read at once (bounds the index arrays)."""
GPU_TEXT = ('<gpu id="', '" i_chunks="', '" o_chunks="', '" s_chunks="', '">')
TB_TEXT = ('<tb id="', '" send="', '" recv="', '" chan="', '">')
STEP_TEXT = ('<step s="', *(text for text, _ in STEP_FIELDS[1:]))
STEP_KINDS = ("int", "type", "buf", "int", "buf", "int", "int", "int", "int", "int")
"""How each <step> value is spelled (s, type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps,
hasdep)."""
TYPE_KEYS = np.array(sorted(int.from_bytes(n.encode(), "big") for n in MSCCL_STEP_NAMES), np.int64)
TYPE_OF_KEY = np.array(
    [MSCCL_STEP_CODES[k.to_bytes(4, "big").lstrip(b"\0").decode()] for k in TYPE_KEYS.tolist()],
    np.int32,
)
BUFFER_OF_BYTE = np.zeros(256, np.int64)
BUFFER_OF_BYTE[[ord(b) for b in "ios"]] = [0, 1, 2]


class _NotCanonical(Exception):
    """The text is not laid out as the writer lays it out."""


def _int_at(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The decimal integers starting at `at` and where each ends, all at once (one pass per
    digit, each over every value still in its digits)."""
    if not len(at):
        return np.zeros(0, np.int64), at
    if int(at.max()) + 12 > len(a):  # every value is followed by more than 11 bytes
        raise _NotCanonical
    negative = a[at] == 45  # '-'
    at = at + negative
    value = np.zeros(len(at), np.int64)
    width = np.zeros(len(at), np.int64)
    live = np.ones(len(at), bool)
    for j in range(11):
        digit = a[at + j] - np.uint8(48)
        live &= digit < 10
        if not live.any():
            break
        np.multiply(value, 10, out=value, where=live)
        np.add(value, digit, out=value, where=live)
        width += live
    else:
        raise _NotCanonical  # longer than any int32
    if width.min() < 1:
        raise _NotCanonical
    return np.where(negative, -value, value), at + width


def _type_at(a: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step type codes of names starting at `at` (an unknown name reads as nop: the check by
    rewriting then fails) and where each ends."""
    key = np.zeros(len(at), np.int64)
    width = np.zeros(len(at), np.int64)
    live = np.ones(len(at), bool)
    for _ in range(4):
        byte = a[np.minimum(at + width, len(a) - 1)]
        live &= byte != 34  # '"'
        key = np.where(live, key * 256 + byte, key)
        width += live
    where = np.minimum(np.searchsorted(TYPE_KEYS, key), len(TYPE_KEYS) - 1)
    return np.where(TYPE_KEYS[where] == key, TYPE_OF_KEY[where], 0), at + width


def _element_values(
    a: np.ndarray, at: np.ndarray, texts: tuple[str, ...], kinds: tuple[str, ...]
) -> list[np.ndarray]:
    """Values of many elements, column by column, the first starting at `at`: each column
    starts where the previous one ended plus the fixed text between them."""
    columns = []
    for text, kind in zip(texts, kinds, strict=True):
        if kind == "int":
            value, end = _int_at(a, at)
        elif kind == "type":
            value, end = _type_at(a, at)
        else:
            value, end = BUFFER_OF_BYTE[a[np.minimum(at, len(a) - 1)]], at + 1
        columns.append(value)
        at = end + len(text)
    return columns


def _digit_count(values: np.ndarray) -> np.ndarray:
    count = np.ones(len(values), np.int64)
    for power in range(1, 11):
        more = values >= 10**power
        if not more.any():
            break
        count += more
    return count


def _window_gpus(data: bytes, lo: int, hi: int) -> list[Gpu]:
    """The <gpu> elements of data[lo:hi], read as if canonically laid out."""
    a = np.frombuffer(data, np.uint8, hi - lo, lo)
    opens = np.flatnonzero(a == 60)  # '<'
    if not len(opens) or opens[-1] + 1 >= len(a):
        raise _NotCanonical
    kind = a[opens + 1]
    is_gpu, is_tb = kind == ord("g"), kind == ord("t")
    g, t, s = opens[is_gpu], opens[is_tb], opens[kind == ord("s")]
    tb_of_step = (np.cumsum(is_tb) - 1)[kind == ord("s")]
    gpu_of_tb = (np.cumsum(is_gpu) - 1)[is_tb]
    if (len(s) and tb_of_step[0] < 0) or (len(t) and gpu_of_tb[0] < 0):
        raise _NotCanonical
    lengths = np.bincount(tb_of_step, minlength=len(t))
    # a step's s="..." is its index in its thread block (the rewrite checks it): skip it
    index = np.arange(len(s)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    after_s = s + len(STEP_TEXT[0]) + _digit_count(index) + len(STEP_TEXT[1])
    gpu_head = np.stack(
        _element_values(a, g + len(GPU_TEXT[0]), GPU_TEXT[1:], ("int",) * 4)[1:], axis=1
    ).tolist()
    tb_head = np.stack(
        _element_values(a, t + len(TB_TEXT[0]), TB_TEXT[1:], ("int",) * 4)[1:], axis=1
    ).tolist()
    # hasdep="..." is what the rewrite writes for the dependencies read: not read
    values = _element_values(a, after_s, STEP_TEXT[2:-1], STEP_KINDS[1:-1])
    steps = np.stack(values, axis=1) if len(s) else np.zeros((0, FIELDS), np.int64)
    if len(steps) and np.abs(steps).max() > INT32_MAX:
        raise _NotCanonical
    table = steps.astype(np.int32)
    for buf, off in ((1, 2), (3, 4)):  # an offset of -1 is no buffer, whatever the letter
        none = table[:, off] < 0
        table[none, buf] = -1
        table[none, off] = -1
    per_tb = np.split(table, np.cumsum(lengths)[:-1])
    tbs_of_gpu = np.bincount(gpu_of_tb, minlength=len(g)).tolist()
    gpus, k = [], 0
    for (ic, oc, sc), count in zip(gpu_head, tbs_of_gpu, strict=True):
        tbs = [ThreadBlock(*tb_head[k + j], per_tb[k + j]) for j in range(count)]
        gpus.append(Gpu(ic, oc, sc, tbs))
        k += count
    return gpus


def _windows(data: bytes, lo: int, hi: int) -> list[tuple[int, int]]:
    """Spans of whole <gpu> elements of about WINDOW bytes covering data[lo:hi]."""
    mark = b"\n  <gpu "
    if not data.startswith(mark, lo):
        raise _NotCanonical
    spans, start, at = [], lo, lo
    while True:
        at = data.find(mark, at + 1, hi)
        if at < 0:
            spans.append((start, hi))
            return spans
        if at - start >= WINDOW:
            spans.append((start, at))
            start = at


def fast_algorithm(text: str, name: str) -> Algorithm | None:
    """The algorithm of a canonically laid out file; None if the file is laid out otherwise
    (or is wrong: the general reader says where)."""
    from ccopt.backends.msccl_xml import body_pieces

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
    lo, hi = head_end + 1, end - len(b"\n</algo>")
    try:
        gpus = (
            [] if lo == hi else [g for w in _windows(data, lo, hi) for g in _window_gpus(data, *w)]
        )
    except (_NotCanonical, ValueError, IndexError):
        return None
    at = lo
    for piece in body_pieces(Algorithm(name, "", gpus)):
        if not data.startswith(piece, at):
            return None
        at += len(piece)
    if at != hi:
        return None
    return _with_header(header, gpus, name)


def _with_header(root: ET.Element, gpus: list[Gpu], name: str) -> Algorithm:
    """The algorithm of `gpus` with the <algo> element's attributes (absent ones read as the
    writer's defaults)."""
    _check_attributes(root, ())
    ngpus = _int(root, "ngpus", (), len(gpus))
    if ngpus != len(gpus):
        raise XmlError(f'<algo> says ngpus="{ngpus}" but holds {len(gpus)} <gpu> elements')
    if root.get("redop", "sum") not in REDUCTIONS:
        raise XmlError(
            f'<algo> has redop="{root.get("redop")}": ccopt reads algorithms that sum '
            f"({' or '.join(REDUCTIONS)})"
        )
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
        if fast is not None:
            alg = fast
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
    if verify:
        op.note_verified()
    op.location = FileLineColLoc(StringAttr(source.name), IntAttr(1), IntAttr(1))
    _locate_blocks(op, source)
    return ModuleOp([op])


def _tag_positions(text: str) -> list[tuple[str, int]]:
    """Where the <algo>, <gpu> and <tb> tags start, in order (str.find per tag: a regex over a
    250 MB file costs a second)."""
    found = []
    for tag in ("algo", "gpu", "tb"):
        at = text.find("<" + tag)
        while at >= 0:
            after = text[at + len(tag) + 1 : at + len(tag) + 2]
            if not (after.isalnum() or after in ("_", "-", ".", ":")):
                found.append((at, tag))
            at = text.find("<" + tag, at + 1)
    return [(tag, at) for at, tag in sorted(found)]


def _locate_blocks(op: AlgorithmOp, source: SourceText) -> None:
    """Give gpu and tb ops the lines of their elements (found by scanning for their tags: far
    cheaper than a second parse; skipped if comments make the count differ)."""
    positions = _tag_positions(source.text)
    ops: list[tuple[str, object]] = [("algo", op)]
    for gpu in op.gpu_ops():
        ops.append(("gpu", gpu))
        ops.extend(("tb", tb) for tb in gpu.tb_ops())
    if [tag for tag, _ in positions] != [tag for tag, _ in ops]:
        return
    filename = StringAttr(source.name)
    text, line, seen = source.text, 1 + source.line_offset, 0
    for (_, at), (_, target) in zip(positions, ops, strict=True):
        line += text.count("\n", seen, at)  # lines counted between tags: no index of lines
        seen = at
        col = at - text.rfind("\n", 0, at)
        target.location = FileLineColLoc(filename, IntAttr(line), IntAttr(col))  # type: ignore[attr-defined]
