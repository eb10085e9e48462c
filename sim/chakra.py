"""Chakra execution traces: per-rank files `PREFIX.<rank>.et`, read and written with protobuf.

A file is a GlobalMetadata message followed by Node messages, each preceded by its length as a
varint (gzip allowed when reading). Attribute value types are part of the format - a reader takes
one member of the `value` oneof and sees 0 for any other - so writers here always use the types
ASTRA-sim reads (`ATTRIBUTE_TYPES`). Dependencies go in `data_deps`, the only ones ASTRA-sim
follows.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccopt.diagnostics import CcoptError
from ccopt.files import OutputError, write_atomic

# value member of AttributeProto for each attribute ASTRA-sim and Chakra's feeder read
ATTRIBUTE_TYPES = {
    "comm_type": "int64_val",
    "comm_size": "int64_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "comm_priority": "int32_val",
    "pg_name": "string_val",
    "involved_dim": "bool_list",
    "is_cpu_op": "bool_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
}
COLLECTIVE_TYPES = {
    "all-reduce": 0,
    "reduce": 1,
    "all-gather": 2,
    "gather": 3,
    "scatter": 4,
    "broadcast": 5,
    "all-to-all": 6,
    "reduce-scatter": 7,
    "reduce-scatter-block": 8,
    "barrier": 9,
}


METADATA_VERSION = "0.0.4"
"""The schema version ccopt writes (Chakra's et_def.proto 0.0.4, which ASTRA-sim reads)."""


class TraceError(CcoptError):
    """A trace file that cannot be read, or a node it cannot express; names file and node."""

    def render(self, source: object = None) -> str:
        return str(self)


_SCHEMA: list[Any] = []


def schema():
    """The generated protobuf module (imported on first use: protobuf is slow to load)."""
    if not _SCHEMA:
        from ccopt.sim import et_def_pb2

        _SCHEMA.append(et_def_pb2)
    return _SCHEMA[0]


@dataclass
class Trace:
    """One rank's trace: its metadata and its nodes in file order."""

    metadata: Any
    nodes: list[Any]


def attribute(name: str, value: Any, kind: str | None = None) -> Any:
    """An AttributeProto with the value member ASTRA-sim expects for `name` (or `kind`)."""
    kind = kind or ATTRIBUTE_TYPES.get(name)
    if kind is None:
        raise ValueError(f"attribute {name!r} needs an explicit value type")
    if kind.endswith("_list"):
        return schema().AttributeProto(name=name, **{kind: {"values": list(value)}})
    return schema().AttributeProto(name=name, **{kind: value})


def attribute_value(attr: Any) -> Any:
    """The value of an AttributeProto, whichever member holds it (lists as Python lists)."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(attr, kind)
    return list(value.values) if kind.endswith("_list") else value


def node_attributes(node: Any) -> dict[str, Any]:
    """name -> value of a node's attributes; a value of the wrong type reads as ASTRA-sim reads
    it (0 / False / empty)."""
    out = {}
    for attr in node.attr:
        expected = ATTRIBUTE_TYPES.get(attr.name)
        if expected is not None and attr.WhichOneof("value") != expected:
            value = getattr(attr, expected)
            out[attr.name] = list(value.values) if expected.endswith("_list") else value
        else:
            out[attr.name] = attribute_value(attr)
    return out


def make_node(
    node_id: int,
    name: str,
    node_type: str,
    deps: Iterable[int] = (),
    duration_micros: int = 0,
    **attrs: Any,
) -> Any:
    """A Node; `node_type` is COMP_NODE, COMM_SEND_NODE, ...; attributes typed as ASTRA-sim
    reads them (`comm_type` may be given as a collective name, e.g. "all-reduce")."""
    if isinstance(attrs.get("comm_type"), str):
        attrs["comm_type"] = COLLECTIVE_TYPES[attrs["comm_type"]]
    attrs.setdefault("is_cpu_op", False)
    node = schema().Node(
        id=node_id, name=name, type=node_type, duration_micros=duration_micros, data_deps=deps
    )
    add = node.attr.add
    for key, value in attrs.items():
        kind = ATTRIBUTE_TYPES.get(key)
        if kind is None:
            raise ValueError(f"attribute {key!r} needs an explicit value type (use `attribute`)")
        if kind.endswith("_list"):
            add(name=key, **{kind: {"values": list(value)}})
        else:
            add(name=key, **{kind: value})
    return node


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_trace(metadata: Any, nodes: Iterable[Any]) -> bytes:
    """Bytes of one .et file: metadata then nodes, each length-prefixed."""
    parts = []
    for message in (metadata, *nodes):
        payload = message.SerializeToString()
        parts += [_varint(len(payload)), payload]
    return b"".join(parts)


def _messages(data: bytes, source: str):
    at = 0
    while at < len(data):
        length, shift = 0, 0
        while True:
            if at >= len(data) or shift > 35:
                raise TraceError(f"{source}: error: truncated length prefix at byte {at}")
            byte = data[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if at + length > len(data):
            raise TraceError(f"{source}: error: message at byte {at} runs past the end")
        yield data[at : at + length]
        at += length


def read_trace(path: str | Path) -> Trace:
    """Read one .et file (plain or gzip)."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"{source}: error: cannot read: {e.strerror or e}") from None
    return parse_trace(data, source)


def parse_trace(data: bytes, source: str) -> Trace:
    """One .et file's bytes (plain or gzip) as a Trace; `source` names it in errors."""
    from google.protobuf.message import DecodeError

    pb = schema()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    messages = _messages(data, source)
    metadata = pb.GlobalMetadata()
    nodes = []
    try:
        first = next(messages, None)
        if first is None:
            raise TraceError(f"{source}: error: empty trace (no GlobalMetadata)")
        metadata.ParseFromString(first)
        for payload in messages:
            node = pb.Node()
            node.ParseFromString(payload)
            nodes.append(node)
    except DecodeError as e:
        where = f"node {len(nodes)}" if nodes or first else "metadata"
        raise TraceError(f"{source}: error: {where} is not a Chakra message: {e}") from None
    return Trace(metadata, nodes)


def trace_paths(prefix: str | Path) -> list[Path]:
    """PREFIX.0.et, PREFIX.1.et, ... as far as they go; a set with a rank missing in the middle
    is refused (read up to the gap, it would look complete)."""
    paths = []
    while True:
        path = Path(f"{prefix}.{len(paths)}.et")
        if not path.exists():
            break
        paths.append(path)
    later = [r for r in _file_ranks(prefix) if r > len(paths)]
    if later:
        raise TraceError(
            f"{prefix}.{len(paths)}.et: error: rank {len(paths)} is missing from the trace set "
            f"'{prefix}' (it has {prefix}.{min(later)}.et)"
        )
    return paths


def _file_ranks(prefix: str | Path) -> list[int]:
    """The ranks r of the files PREFIX.<r>.et in the prefix's folder."""
    import re

    folder, name = Path(prefix).parent, Path(prefix).name
    pattern = re.compile(re.escape(name) + r"\.(\d+)\.et")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [int(m.group(1)) for m in map(pattern.fullmatch, names) if m]


def read_trace_set(prefix: str | Path, ranks: int | None = None) -> list[Trace]:
    """Every rank's trace of a set; with `ranks`, exactly that many files must exist."""
    if ranks is None:
        paths = trace_paths(prefix)
    else:
        paths = [Path(f"{prefix}.{r}.et") for r in range(ranks)]
        present = trace_paths(prefix)
        if 0 < len(present) < ranks:
            files = (
                f"1 file ({prefix}.0.et)"
                if len(present) == 1
                else f"{len(present)} files (one per rank, {prefix}.0.et to "
                f"{prefix}.{len(present) - 1}.et)"
            )
            raise TraceError(
                f"{prefix}.{len(present)}.et: error: missing: the trace set '{prefix}' has "
                f"{files} and the network {ranks} NPUs"
            )
    if not paths:
        raise TraceError(f"{prefix}.0.et: error: no trace files with prefix '{prefix}'")
    return [read_trace(p) for p in paths]


def metadata_message(metadata: Any = None) -> Any:
    """A GlobalMetadata from a message, a {name: value} mapping of string attributes, or None."""
    pb = schema()
    if isinstance(metadata, pb.GlobalMetadata):
        return metadata
    message = pb.GlobalMetadata(version=METADATA_VERSION)
    for name, value in (metadata or {}).items():
        message.attr.append(attribute(name, str(value), "string_val"))
    return message


def write_trace_set(
    prefix: str | Path,
    per_rank_nodes: Sequence[Iterable[Any]],
    metadata: Any | Mapping[str, Any] = None,
) -> list[Path]:
    """Write PREFIX.<rank>.et for every rank (all or none, directories created; see
    `trace_set_output`); nodes are Node messages (see `make_node`); metadata a GlobalMetadata
    or a mapping of string attributes."""
    meta = metadata_message(metadata)
    with trace_set_output(prefix) as output:
        for nodes in per_rank_nodes:
            output.add(encode_trace(meta, nodes))
    return output.paths


def _trace_folder(prefix: str) -> list[Path]:
    """Create the folder of a trace set; the folders created, deepest first (a failed export
    removes them). A prefix without a file name part (`DIR/`) would write hidden `.0.et` files,
    and a file standing where a folder must be is named."""
    if Path(prefix).name in ("", ".", "..") or prefix.endswith(("/", os.sep)):
        raise OutputError(
            f"cannot write the trace set '{prefix}': give DIR/PREFIX (files PREFIX.<rank>.et)"
        )
    folder = Path(prefix).parent
    for above in (folder, *folder.parents):
        if above.exists() and not above.is_dir():
            raise OutputError(f"cannot write the trace set '{prefix}': '{above}' is not a folder")
    missing = [above for above in (folder, *folder.parents) if not above.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create folder '{folder}': {e.strerror or e}") from None
    return missing


class TraceSetOutput:
    """A trace set being written: each rank's file is staged beside its destination and all are
    renamed into place at the end, so a failed export leaves no partial set."""

    def __init__(self, prefix: str | Path):
        self.prefix = str(prefix)
        self.created = _trace_folder(self.prefix)
        self.staged: list[tuple[Path, Path]] = []
        self.paths: list[Path] = []

    def add(self, data: bytes | memoryview) -> Path:
        """Stage the next rank's file."""
        path = Path(f"{self.prefix}.{len(self.staged)}.et")
        if path.is_dir():
            raise OutputError(f"cannot write '{path}': it is a directory")
        part = path.with_name(f".{path.name}.{os.getpid()}.part")
        self.staged.append((part, path))
        write_atomic(part, data)  # type: ignore[arg-type]  (a view of a larger piece)
        return path

    def commit(self) -> None:
        """Rename every staged file into place, then remove the ranks of an older, larger set
        under the same prefix: left there they would be read as part of this one."""
        for part, path in self.staged:
            try:
                os.replace(part, path)
            except OSError as e:
                raise OutputError(f"cannot write '{path}': {e.strerror or e}") from None
        self.paths = [path for _, path in self.staged]
        rank = len(self.paths)
        while Path(f"{self.prefix}.{rank}.et").is_file():
            Path(f"{self.prefix}.{rank}.et").unlink()
            rank += 1

    def discard(self) -> None:
        for part, _ in self.staged:
            part.unlink(missing_ok=True)

    def remove_created(self) -> None:
        """Remove the folders this export created (a failed export leaves nothing behind)."""
        for folder in self.created:
            try:
                folder.rmdir()
            except OSError:
                return  # (not empty: something else wrote there meanwhile)


@contextmanager
def trace_set_output(prefix: str | Path) -> Iterator[TraceSetOutput]:
    """Write a trace set all or nothing: the files added in the block replace PREFIX.<r>.et
    (and any higher ranks of an older set) only when the block finishes without an error."""
    output = TraceSetOutput(prefix)
    try:
        yield output
    except BaseException:
        output.discard()
        output.remove_created()
        raise
    try:
        output.commit()
    finally:
        output.discard()


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """A JSON-ready view of one trace (as chakra_jsonizer shows it, plus typed attributes)."""
    from google.protobuf.json_format import MessageToDict

    def convert(message: Any) -> dict[str, Any]:
        return MessageToDict(message, preserving_proto_field_name=True)

    return {
        "metadata": convert(trace.metadata),
        "nodes": [convert(n) for n in trace.nodes],
    }
