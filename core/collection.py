"""How the cyclic garbage collector runs while ccopt builds and rewrites IR.

A compiler run builds a large, long-lived object graph (the IR) and drops little of it:
CPython's default collector thresholds (a young collection every 700 allocations, full ones as
the heap grows) then rescan the IR over and over, which cost a third of a pipeline's time at
400 Megatron blocks in `ccopt`, and a fifth of `apply_pipeline`'s in Python. Inside
`batched_collection`, young objects are collected every 100,000 allocations instead; the
settings and the collector's state are restored afterwards (the caller's process keeps its
own). Cyclic garbage from rewrites is still collected. The thresholds are process-wide: a
thread allocating meanwhile sees them too."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BATCHED_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def batched_collection() -> Iterator[None]:
    """Collect young objects rarely for the duration (also a decorator); nests."""
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(*BATCHED_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()
