"""ASTRA-sim's analytical network: per-dimension topologies and the cost of one message.

The numbers follow ASTRA-sim's analytical backend (astra-network-analytical) exactly, because
ccopt's ASTRA mode must agree with it to the nanosecond: bandwidth is GB/s with GB = 2^30 bytes,
a message costs `floor(hops * latency + size / bytes_per_ns)` computed in IEEE doubles, and a
message between ranks that differ in several dimensions is charged on the first differing one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ccopt.diagnostics import CcoptError
from ccopt.files import is_stdin, read_text

TOPOLOGIES = ("Ring", "Switch", "FullyConnected")


class ConfigError(CcoptError):
    """A bad value in an ASTRA-sim network or system file: names the file and the key."""

    def __init__(self, source: str, key: str | None, message: str):
        where = f"'{key}': " if key else ""
        super().__init__(f"{source}: error: {where}{message}")
        self.source, self.key = source, key

    def render(self, source: object = None) -> str:
        return str(self)


@dataclass(frozen=True)
class NetworkDim:
    """One network dimension: `npus` ranks joined by a Ring, a Switch or full connectivity."""

    topology: str
    npus: int
    bandwidth_gbps: float
    latency_ns: float

    def bytes_per_ns(self) -> float:
        """Link bandwidth in bytes per ns, rounded as ASTRA-sim's double arithmetic rounds it."""
        return self.bandwidth_gbps * (1 << 30) / 1_000_000_000

    def hops(self, a: int, b: int) -> int:
        """Links crossed from index `a` to index `b` inside this dimension (a != b)."""
        if self.topology == "Ring":
            clockwise = (b - a) % self.npus
            return min(clockwise, self.npus - clockwise)
        return 2 if self.topology == "Switch" else 1

    def message_ns(self, size_bytes: int, hops: int) -> int:
        """Delay of one message (link latency per hop plus serialization), truncated to ns."""
        return int(hops * self.latency_ns + float(size_bytes) / self.bytes_per_ns())


@dataclass(frozen=True)
class Network:
    """A multi-dimensional network; rank coordinates put dimension 0 fastest."""

    dims: tuple[NetworkDim, ...]
    source: str = field(default="<network>", compare=False)

    @property
    def npus(self) -> int:
        return math.prod(d.npus for d in self.dims)

    def coords(self, rank: int) -> tuple[int, ...]:
        out = []
        for d in self.dims:
            rank, index = divmod(rank, d.npus)
            out.append(index)
        return tuple(out)

    def first_differing_dim(self, src: int, dst: int) -> int:
        """The dimension a message between two ranks is charged on (ASTRA-sim's rule)."""
        for dim, (a, b) in enumerate(zip(self.coords(src), self.coords(dst), strict=True)):
            if a != b:
                return dim
        raise ValueError(f"ranks {src} and {dst} are the same")

    def send_ns(self, src: int, dst: int, size_bytes: int) -> int:
        """What ASTRA-sim's congestion-unaware backend charges for one message src -> dst."""
        dim = self.first_differing_dim(src, dst)
        d = self.dims[dim]
        a, b = self.coords(src)[dim], self.coords(dst)[dim]
        return d.message_ns(size_bytes, d.hops(a, b))


def _list(data: dict[str, Any], key: str, source: str) -> list[Any]:
    """A per-dimension list from the YAML (a scalar is one dimension, as yaml-cpp allows)."""
    if key not in data:
        raise ConfigError(source, key, "missing")
    value = data[key]
    if not isinstance(value, list):
        value = [value]
    if not value:
        raise ConfigError(source, key, "empty list")
    return value


def _number(value: Any, key: str, source: str, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(source, key, f"expected a number, got {value!r}")
    if integer and value != int(value):
        raise ConfigError(source, key, f"expected an integer, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(source, key, f"expected a finite number, got {value!r}")
    return value


KEYS = ("topology", "npus_count", "bandwidth", "latency")


def network_from_dict(data: dict[str, Any], source: str) -> Network:
    """A Network from an ASTRA-sim network YAML mapping (keys topology, npus_count, bandwidth,
    latency; one entry per dimension). ASTRA-sim ignores other keys; here they are refused, as
    a misspelt key (`bandwith`) would otherwise leave its value unused without a word."""
    if not isinstance(data, dict):
        raise ConfigError(
            source, None, "expected a mapping with topology, npus_count, bandwidth, latency"
        )
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise ConfigError(source, str(unknown[0]), f"unknown key (keys: {', '.join(KEYS)})")
    topologies = _list(data, "topology", source)
    for t in topologies:
        if t not in TOPOLOGIES:
            expected = ", ".join(TOPOLOGIES)
            raise ConfigError(source, "topology", f"unknown topology {t!r} (expected {expected})")
    columns = {k: _list(data, k, source) for k in ("npus_count", "bandwidth", "latency")}
    for key, values in columns.items():
        if len(values) != len(topologies):
            count = f"{len(values)} entries for {len(topologies)} dimensions"
            raise ConfigError(source, key, f"{count} (one per topology)")
    dims = []
    for t, n, bw, lat in zip(topologies, *columns.values(), strict=True):
        n = int(_number(n, "npus_count", source, integer=True))
        bw = float(_number(bw, "bandwidth", source))
        lat = float(_number(lat, "latency", source))
        if n <= 1:
            raise ConfigError(source, "npus_count", f"must be larger than 1, got {n}")
        if bw <= 0:
            raise ConfigError(source, "bandwidth", f"must be larger than 0, got {bw:g}")
        if lat < 0:
            raise ConfigError(source, "latency", f"must be non-negative, got {lat:g}")
        dims.append(NetworkDim(t, n, bw, lat))
    return Network(tuple(dims), source)


def read_config_text(path: str | Path) -> str:
    """A configuration file's text (standard input for `-`); an unreadable or binary file is a
    ConfigError naming it."""
    if is_stdin(path):
        return read_text(None)
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ConfigError(str(path), None, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), None, "not UTF-8 text (a YAML or JSON file?)") from None


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, except that a key given twice in one mapping is an error: PyYAML
    keeps the last silently, so the first would look as if it counted."""
    import yaml

    return yaml.load(text, Loader=_unique_key_loader())


@cache
def _unique_key_loader() -> type:
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    continue
                if key in seen:
                    problem = f"duplicate key '{key}'"
                    raise yaml.constructor.ConstructorError(
                        None, None, problem, key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def load_network(path: str | Path) -> Network:
    """Read an ASTRA-sim network YAML file."""
    import yaml

    source, text = str(path), read_config_text(path)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(e, "problem", e)
        raise ConfigError(source, None, f"not valid YAML{where}: {problem}") from None
    return network_from_dict(data, source)
