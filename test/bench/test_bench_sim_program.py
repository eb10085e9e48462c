"""bench/sim_program.py still runs: a CoCoNeT row per workload with both speedups, and the
simulator's speed rows (tiny sizes; no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_sim_program_bench_prints_every_row() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "sim_program.py"), "--quick", "--repeat", "1"],
        capture_output=True,
        text=True,
        cwd=BENCH,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    coconet = [line for line in lines if "x  " in line and "published" not in line]
    assert len(coconet) == 8
    assert all(float(line.split("x  ")[0].split()[-1]) > 0 for line in coconet)
    speed = [line for line in lines if line.rstrip().endswith("x") and line.split()[0].isdigit()]
    assert len(speed) == 4
