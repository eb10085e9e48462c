"""Programs for the simulator's tests: the CoCoNeT workloads of bench/sim_program.py (one
generator, shared with the benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))

from sim_program import matmul_all_reduce, mlp_layers, row_parallel  # noqa: E402

__all__ = ["matmul_all_reduce", "mlp_layers", "row_parallel"]
