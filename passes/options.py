"""How passes declare their options, and what `ccopt --help` shows of them (a module of its own,
so that the generated catalog of built-in passes can use it without importing the registry)."""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple, TypeVar

T = TypeVar("T")


def option(default: T, meaning: str) -> T:
    """A pass option: a dataclass field with its default and a one-sentence meaning, which
    `ccopt --help` shows (`chunks: int = option(4, "Number of chunks.")`)."""
    return field(default=default, metadata={"meaning": meaning})  # type: ignore[no-any-return]


class OptionInfo(NamedTuple):
    """One option as `--help` shows it: `name=<kind>`, its meaning and its default ("" when
    leaving it out means "none" or "all")."""

    name: str
    kind: str
    default: str
    meaning: str


class PassInfo(NamedTuple):
    summary: str
    options: tuple[OptionInfo, ...]
