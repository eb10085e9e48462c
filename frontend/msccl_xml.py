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
    MAX_BYTES,
    STEP_CODES,
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
            codes = [STEP_CODES.get(v, -1) for v in values]
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
                table[:, col] = np.array(values).astype(np.int64)
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
    coll = root.get("coll")
    if coll is None:
        raise XmlError("<algo> needs attribute 'coll'")
    inplace = _flag(root, "inplace", (), False)
    channels = max((tb.chan for g in gpus for tb in g.tbs), default=0) + 1
    chunks = max((max(g.in_chunks, g.out_chunks) for g in gpus), default=1)
    alg = Algorithm(
        name=root.get("name") or "algorithm",
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
    return alg, root


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
    name = os.path.splitext(os.path.basename(source.name))[0]
    try:
        alg, root = parse_algorithm(source.text, source.name)
        if root.get("name") is None:
            alg.name = re.sub(r"\W", "_", name) or "algorithm"
        if verify:
            check_hasdep(alg, root)
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


def looks_like_xml(name: str | None) -> bool:
    return name is not None and name.lower().endswith(".xml")
