"""Ranks' blocks handed to a driver that runs every rank of a program in one process (the CPU
harness, or the shared-GPU harness): numpy and ctypes only, so a GPU machine without the
compiler installed can run a library built elsewhere."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


def block_table(per_arg: list[list[np.ndarray]]) -> tuple[ctypes.Array, ctypes.Array]:
    """The drivers' `host` and `bytes` arrays: world x num_args pointers and sizes, rank-major."""
    ranks = len(per_arg[0]) if per_arg else 0
    count = ranks * len(per_arg)
    pointers = (ctypes.c_void_p * count)()
    sizes = (ctypes.c_int64 * count)()
    for rank in range(ranks):
        for i, shards in enumerate(per_arg):
            pointers[rank * len(per_arg) + i] = shards[rank].ctypes.data
            sizes[rank * len(per_arg) + i] = shards[rank].nbytes
    return pointers, sizes


def failed_ranks(report: bytes) -> dict[int, str]:
    """A driver's report ("rank R: ..." per failed rank) by rank."""
    lines = report.decode().splitlines()
    return {int(line.split(":")[0].removeprefix("rank ")): line for line in lines if line}


@contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set (or, for None, unset) environment variables a driver reads, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        _set_environment(values)
        yield
    finally:
        _set_environment(saved)


def _set_environment(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
