"""The benchmarks' modules (their program generators and pipelines) for tests: bench/ is no
package, and its modules import one another by plain name, so each is imported with bench/ on
the path, which is then restored."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> ModuleType:
    """bench/<name>.py as a module (imported once)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
