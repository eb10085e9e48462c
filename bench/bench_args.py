"""Argument types for the benchmarks' command lines: a bad value is argparse's one-line error
(`script.py: error: argument --blocks: ...`, exit 2), not a traceback from deep inside a run."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An integer >= 1 (a count, a size, a repetition)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positives(text: str) -> list[int]:
    """Comma-separated integers >= 1 (`100,400,1000`)."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated positive integers")
    return [positive(p.strip()) for p in parts]


def mesh(text: str) -> str:
    """A mesh spec `axis=size,...` (checked as `ccopt --mesh` checks it; kept as text)."""
    from ccopt.diagnostics import CcoptError
    from ccopt.program import parse_mesh_spec

    try:
        parse_mesh_spec(text)
    except CcoptError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text
