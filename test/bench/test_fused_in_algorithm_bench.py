"""bench/fused_in_algorithm.py still runs and prints a ratio for every row (small sizes; no
timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_fused_in_algorithm_prints_a_ratio_per_case() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "fused_in_algorithm.py"), "--size", str(1 << 24)]
        + ["--elements", "65536"],
        capture_output=True,
        text=True,
        cwd=BENCH,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.rstrip().endswith("x")]
    assert len(rows) == 8 + 3
    assert all(float(row.split()[-1][:-1]) > 0 for row in rows)
