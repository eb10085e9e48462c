"""ASTRA-sim's system configuration (the JSON given as --system-configuration).

ccopt reads the file as ASTRA-sim reads it, but stricter: the keys it understands are checked (a
bad value names its key), a key ASTRA-sim reads but that would change what ccopt does not model is
refused unless it has its neutral value, and a key ASTRA-sim does not read either (a typo such as
`endpoint_delay`, which ASTRA-sim would ignore) or a key given twice is refused. The defaults are
ASTRA-sim's own (endpoint-delay 10, active-chunks-per-dimension 1, one dataset split, baseline
multi-dimensional collectives).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccopt.sim.network import ConfigError, read_config_text

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
IMPLEMENTATIONS = (
    "ring",
    "oneRing",
    "direct",
    "oneDirect",
    "halvingDoubling",
    "oneHalvingDoubling",
    "doubleBinaryTree",
)
SCHEDULING_POLICIES = ("LIFO", "FIFO")
OPTIMIZATIONS = ("baseline", "localBWAware")


@dataclass(frozen=True)
class Implementation:
    """One dimension's algorithm; `window` bounds direct's outstanding messages (-1: all)."""

    name: str
    window: int = -1

    @property
    def single_ring(self) -> bool:
        """oneRing/oneDirect/oneHalvingDoubling run over all ranks as one logical ring."""
        return self.name.startswith("one")

    @property
    def base(self) -> str:
        """The algorithm family: ring, direct, halvingDoubling or doubleBinaryTree."""
        name = self.name[3:] if self.single_ring else self.name
        return name[0].lower() + name[1:]


@dataclass(frozen=True)
class SystemConfig:
    """The subset of ASTRA-sim's system file that its analytical backends use."""

    scheduling_policy: str = "FIFO"
    endpoint_delay: int = 10
    active_chunks_per_dimension: int = 1
    preferred_dataset_splits: int = 1
    local_mem_bw: float = 0.0
    collective_optimization: str = "baseline"
    implementations: dict[str, tuple[Implementation, ...]] = field(default_factory=dict)
    custom: dict[str, str] = field(default_factory=dict)
    source: str = "<system>"

    def local_mem_bytes_per_s(self) -> float:
        """ASTRA-sim keeps local-mem-bw as GB/s * 1e9 (decimal GB, unlike the network)."""
        return self.local_mem_bw * 1_000_000_000

    def reduction_ns(self, size: int) -> int:
        """A native reduce of `size` bytes: one write and two reads at local-memory bandwidth,
        each truncated to whole ns as ASTRA-sim's PacketBundle truncates them. Without a
        bandwidth ASTRA-sim divides by zero, so a reduction then is refused."""
        if self.local_mem_bw <= 0:
            message = "missing or 0: needed to time the reductions of this collective (GB/s)"
            raise ConfigError(self.source, "local-mem-bw", message)
        one = int(float(size) / self.local_mem_bytes_per_s() * 1e9)
        return 3 * one

    def implementation(self, collective: str) -> tuple[Implementation, ...]:
        return self.implementations.get(collective, ())


def _parse_implementation(text: Any, key: str, source: str) -> Implementation:
    if not isinstance(text, str):
        raise ConfigError(source, key, f"expected implementation names, got {text!r}")
    for prefix in ("oneDirect", "direct"):
        if text.startswith(prefix) and text != prefix:
            window = text[len(prefix) :]
            if not window.isdigit() or int(window) < 1:
                raise ConfigError(source, key, f"bad window in {text!r} (e.g. {prefix}4)")
            return Implementation(prefix, int(window))
    if text not in IMPLEMENTATIONS:
        raise ConfigError(
            source, key, f"unknown implementation {text!r} (expected {', '.join(IMPLEMENTATIONS)})"
        )
    return Implementation(text)


def _integer(data: dict[str, Any], key: str, source: str, low: int, default: int) -> int:
    value = data.get(key, default)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value != int(value):
        raise ConfigError(source, key, f"expected an integer, got {value!r}")
    if value < low:
        raise ConfigError(source, key, f"must be at least {low}, got {value}")
    return int(value)


def _choice(data: dict[str, Any], key: str, source: str, choices: tuple[str, ...], default: str):
    value = data.get(key, default)
    if value not in choices:
        raise ConfigError(source, key, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


# switches that change what ASTRA-sim computes in ways ccopt's ASTRA mode does not model:
# refused rather than silently ignored
UNMODELLED = {
    "model-shared-bus": "the LogGP shared memory bus",
    "roofline-enabled": "roofline compute times",
    "replay-only": "replaying communication as compute",
}


KNOWN_KEYS = frozenset(
    {
        "scheduling-policy",
        "endpoint-delay",
        "active-chunks-per-dimension",
        "preferred-dataset-splits",
        "collective-optimization",
        "local-mem-bw",
        "local-reduction-delay",
        "intra-dimension-scheduling",
        "inter-dimension-scheduling",
        "boost-mode",
        "peak-perf",
        "trace-enabled",
        "track-local-mem",
        "local-mem-trace-filename",
        "L",
        "o",
        "g",
        "G",
        *(f"{c}-implementation" for c in COLLECTIVES),
        *(f"{c}-implementation-custom" for c in COLLECTIVES),
    }
)
"""The system keys ASTRA-sim reads (its versions together). Those ccopt does not read change no
time it models: the LogGP figures and peak-perf act only with model-shared-bus or
roofline-enabled (refused unless 0), boost-mode simulates fewer NPUs for speed, the rest are
tracing and bookkeeping."""

NEUTRAL = {"local-reduction-delay": (1, "a local reduction delay other than 1 cycle")}
"""Keys ccopt does not model that it takes only with ASTRA-sim's default value."""


# schedulers ccopt's ASTRA mode runs only in ASTRA-sim's default form: another is refused
SCHEDULERS = {"intra-dimension-scheduling": "FIFO", "inter-dimension-scheduling": "baseline"}


def system_from_dict(data: dict[str, Any], source: str) -> SystemConfig:
    """A SystemConfig from ASTRA-sim's system JSON mapping; a key ASTRA-sim does not read is
    refused (a typo would be ignored by both)."""
    if not isinstance(data, dict):
        raise ConfigError(source, None, "expected a JSON object")
    for key in data:
        if key not in KNOWN_KEYS and key not in UNMODELLED:
            import difflib

            close = difflib.get_close_matches(key, sorted(KNOWN_KEYS | UNMODELLED.keys()), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(source, key, f"unknown key (ASTRA-sim does not read it){hint}")
    for key, (neutral, what) in NEUTRAL.items():
        if data.get(key, neutral) != neutral:
            message = f"{what} is not modelled by ccopt's ASTRA mode (use {neutral})"
            raise ConfigError(source, key, message)
    for key, what in UNMODELLED.items():
        if data.get(key, 0) not in (0, False):
            raise ConfigError(source, key, f"{what} is not modelled by ccopt's ASTRA mode (use 0)")
    for key, default in SCHEDULERS.items():
        if data.get(key, default) != default:
            message = f"{data[key]!r} is not modelled by ccopt's ASTRA mode (use {default!r})"
            raise ConfigError(source, key, message)
    implementations = {}
    for collective in COLLECTIVES:
        key = f"{collective}-implementation"
        if key in data:
            names = data[key]
            if not isinstance(names, list) or not names:
                raise ConfigError(source, key, "expected a non-empty list, one entry per dimension")
            parsed = tuple(_parse_implementation(n, key, source) for n in names)
            implementations[collective] = parsed
    custom = {}
    for collective in COLLECTIVES:
        key = f"{collective}-implementation-custom"
        if key in data:
            value = data[key]
            paths = value if isinstance(value, list) else [value]
            if not paths or not all(isinstance(p, str) and p for p in paths):
                raise ConfigError(source, key, "expected a list with a trace prefix")
            custom[collective] = paths[0]
    bandwidth = data.get("local-mem-bw", 0.0)
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)):
        raise ConfigError(source, "local-mem-bw", f"expected a number, got {bandwidth!r}")
    if not math.isfinite(bandwidth) or bandwidth < 0:
        raise ConfigError(source, "local-mem-bw", f"must be a finite number >= 0, got {bandwidth}")
    return SystemConfig(
        scheduling_policy=_choice(data, "scheduling-policy", source, SCHEDULING_POLICIES, "FIFO"),
        endpoint_delay=_integer(data, "endpoint-delay", source, 0, 10),
        active_chunks_per_dimension=_integer(data, "active-chunks-per-dimension", source, 1, 1),
        preferred_dataset_splits=_integer(data, "preferred-dataset-splits", source, 1, 1),
        local_mem_bw=float(bandwidth),
        collective_optimization=_choice(
            data, "collective-optimization", source, OPTIMIZATIONS, "baseline"
        ),
        implementations=implementations,
        custom=custom,
        source=source,
    )


def load_system(path: str | Path) -> SystemConfig:
    """Read an ASTRA-sim system JSON file."""
    source, text = str(path), read_config_text(path)
    try:
        data = json.loads(text, object_pairs_hook=lambda pairs: _once(pairs, source))
    except json.JSONDecodeError as e:
        raise ConfigError(source, None, f"not valid JSON (line {e.lineno}): {e.msg}") from None
    return system_from_dict(data, source)


def _once(pairs: list[tuple[str, Any]], source: str) -> dict[str, Any]:
    """A JSON object whose keys are given once (JSON keeps the last of a key given twice, so
    the first value was dropped without a word)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ConfigError(source, key, "given twice")
        out[key] = value
    return out
