"""The benchmark scripts still run and print a ratio for every row (tiny sizes; no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

SMOKE_RUNS = {
    "startup.py": ["--ops", "40", "--repeat", "1"],
    "passes.py": ["--ops", "24", "--repeat", "1"],
    "schedules.py": ["--repeat", "1"],
    "algorithms.py": ["--ranks", "8", "--repeat", "1"],
}


def run_bench(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *SMOKE_RUNS[script]],
        capture_output=True,
        text=True,
        cwd=BENCH,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout.splitlines()


def ratio_rows(lines: list[str]) -> list[str]:
    return [line for line in lines if line.rstrip().endswith("x")]


def test_startup_prints_a_ratio_per_measurement() -> None:
    rows = ratio_rows(run_bench("startup.py"))
    assert [" ".join(row.split()[:2]) for row in rows] == [
        "xdsl-opt start-up",
        "ccopt start-up",
        "xdsl-opt --help",
        "ccopt --help",
        "xdsl-opt parse+print",
        "ccopt parse+print",
        "ccopt parse+print",
        "ccopt -p",
    ]


def test_passes_bench_times_every_case() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import passes as bench_passes  # noqa: PLC0415 - the bench script itself
    finally:
        sys.path.remove(str(BENCH))
    rows = ratio_rows(run_bench("passes.py"))
    assert [tuple(row.split()[:2]) for row in rows] == [
        (program, timed) for program, _, timed in bench_passes.CASES
    ]


def test_schedules_bench_compares_each_schedule() -> None:
    rows = ratio_rows(run_bench("schedules.py"))
    assert len(rows) >= 10
    assert all("x" in row for row in rows)


def test_algorithms_prints_a_ratio_per_measurement() -> None:
    rows = ratio_rows(run_bench("algorithms.py"))
    assert [" ".join(row.split()[:3]) for row in rows] == [
        f"{name} 8 {what}"
        for name in ("ring", "halving_doubling")
        for what in ("ET", "import", "verify", "export")
    ]
