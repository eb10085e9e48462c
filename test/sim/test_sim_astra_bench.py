"""bench/sim_astra.py still runs and prints one row per rank count (tiny sizes, no ASTRA-sim
build, no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sim_astra.py"


def test_bench_prints_a_row_per_rank_count(tmp_path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--ranks",
            "8,16",
            "--repeat",
            "1",
            "--astra-sim",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [("8", "42890"), ("16", "53431")]
