"""The benchmark scripts still run and print a ratio for every row (tiny sizes; no timing asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

SMOKE_RUNS = {
    "startup.py": ["--ops", "40", "--repeat", "1"],
    "passes.py": ["--ops", "24", "--repeat", "1"],
    "schedules.py": ["--repeat", "1"],
    "gpu_ops.py": [],
    "compile_speed.py": ["--blocks", "2,20", "--repeat", "1"],
    "gpt_build.py": ["--layers", "2", "--mesh", "dp=2,tp=2", "--blocks", "2,3"]
    + ["--inlined-up-to", "2"],
    "algorithms.py": ["--ranks", "8", "--repeat", "1"],
    "plan_axonn.py": ["--model", "20B", "--gpus", "64", "--batch", "64", "--repeat", "1"],
    "auto_shard.py": ["--layers", "2", "--repeat", "1"],
}


def run_bench(script: str, *extra: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *SMOKE_RUNS[script], *extra],
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
    assert len(rows) == len(bench_passes.CASES)
    for row, (program, _, timed) in zip(rows, bench_passes.CASES, strict=True):
        assert row.split()[0] == program and row.split(None, 1)[1].startswith(timed), row


def test_schedules_bench_compares_each_schedule() -> None:
    rows = ratio_rows(run_bench("schedules.py"))
    assert len(rows) >= 10
    assert all("x" in row for row in rows)


def test_gpu_ops_bench_counts_every_example_and_schedule() -> None:
    """A row per example x schedule (the unoptimized program too), each ending in its ratio to
    the unoptimized program; the predicted column is the simulator's step time on dgx-h100."""
    from ccopt.frontend.workloads import PIPELINES

    rows = ratio_rows(run_bench("gpu_ops.py"))
    expected = [(n, s) for n, schedules in PIPELINES.items() for s in ["unoptimized", *schedules]]
    assert [tuple(row.split()[:2]) for row in rows] == expected
    mlp = next(
        row.split()
        for row in rows
        if row.split()[:2] == ["megatron_mlp", "fused-collective-overlap"]
    )
    ops, copies, copied_per_gemm_input = int(mlp[2]), int(mlp[7]), float(mlp[10])
    assert copies <= ops / 10  # copies at most 10% of the GPU ops of a call
    assert copied_per_gemm_input <= 0.10  # and at most 10% of the bytes the gemms read


TEXT = re.compile(r"^(\w+: \S+).* (\d+\.\d+)x$")
"""A compile_speed row: its label and its last column (output text over parse+print's)."""


def test_compile_speed_bench_rates_every_pipeline() -> None:
    lines = run_bench("compile_speed.py")
    rows = [m.group(1) for m in map(re.compile(r"^(\w+: \S+)").match, lines) if m]
    assert rows == [
        "megatron_mlp: parse+print",
        "megatron_mlp: pipeline",
        "megatron_mlp: +fuse-collective",
        "megatron_mlp: cse,dce",
        "adam: parse+print",
        "adam: adam",
        "lamb: parse+print",
        "lamb: lamb",
    ]
    assert any(line.startswith("--help start-up") and line.endswith("x") for line in lines)
    texts = {m.group(1): float(m.group(2)) for m in map(TEXT.match, lines) if m}
    assert texts["megatron_mlp: parse+print"] == 1.0
    assert texts["megatron_mlp: pipeline"] > 1.0  # overlap's chunks: more IR out than in


def test_compile_speed_bounds_rate_the_pipelines_without_chunk_copies() -> None:
    lines = run_bench("compile_speed.py", "--only", "megatron_mlp", "--bounds")
    bounds = [line for line in lines if line.startswith("megatron_mlp: bound: ")]
    assert [line.split("  ")[0] for line in bounds] == [
        "megatron_mlp: bound: chunks=1",
        "megatron_mlp: bound: +fuse-collective, chunks=1",
        "megatron_mlp: bound: no overlap",
    ]
    assert all(line.rstrip().endswith("x") for line in bounds)  # seconds, ratios, memory, text
    assert not any(line.startswith("adam:") for line in lines)


def test_gpt_build_prints_stage_ratios_and_code_per_block() -> None:
    lines = run_bench("gpt_build.py")
    stages = ratio_rows(lines)
    assert [row.split("  ")[0] for row in stages][:2] == [
        "parse+print of the step's IR",
        "front end (build + verify)",
    ]
    assert any(" calls " in line and line.rstrip().endswith("x") for line in lines)


def test_algorithms_prints_a_ratio_per_measurement() -> None:
    rows = ratio_rows(run_bench("algorithms.py"))
    assert [" ".join(row.split()[:3]) for row in rows] == [
        f"{name} 8 {what}"
        for name in ("ring", "halving_doubling")
        for what in ("expat,", "import", "verify", "export", "tool:")
    ]
    assert all(row.rstrip().endswith("x") and " 1.00x" in row for row in rows if "expat" in row)


def test_plan_axonn_bench_times_both_models() -> None:
    rows = ratio_rows(run_bench("plan_axonn.py"))
    assert [row.split("  ")[0] for row in rows] == [
        "AxoNN's model",
        "ccopt plan",
        "ccopt plan, cold",
    ]


def test_auto_shard_bench_times_every_strategy() -> None:
    rows = ratio_rows(run_bench("auto_shard.py"))
    assert [row[7:35].strip() for row in rows] == [
        "parse+verify",
        "auto-shard dp",
        "auto-shard cd",
        "auto-shard ilp, memory-bound",
    ]


BAD_OPTIONS = [
    ("compile_speed.py", ["--blocks", "100,x"], "argument --blocks"),
    ("compile_speed.py", ["--repeat", "0"], "argument --repeat"),
    ("gpt_build.py", ["--mesh", "dp=x", "--no-gpt"], "argument --mesh: bad mesh 'dp=x'"),
    ("gpt_build.py", ["--blocks", "0", "--no-gpt"], "argument --blocks"),
    ("algorithms.py", ["--ranks", "0"], "argument --ranks"),
    ("chakra_export.py", ["--ranks", "-1"], "argument --ranks"),
    ("plan_axonn.py", ["--model", "1.3B"], "argument --model"),
    ("plan_axonn.py", ["--machine", "dgx-h100"], "argument --machine"),
    ("auto_shard.py", ["--gpt", "1.3B", "--layers", "2"], "unknown model '1.3B'"),
    ("auto_shard.py", ["--gpt", "tiny", "--mesh", "dp=x"], "argument --mesh"),
    ("sim_astra.py", ["--ranks", "x"], "argument --ranks"),
    ("fused_in_algorithm.py", ["--size", "3"], "less than one byte per chunk"),
]


def test_bad_options_are_one_line_errors() -> None:
    """A bad value is argparse's `script.py: error: ...` and exit status 2, not a traceback."""
    for script, argv, message in BAD_OPTIONS:
        done = subprocess.run(
            [sys.executable, str(BENCH / script), *argv],
            capture_output=True,
            text=True,
            cwd=BENCH,
            timeout=300,
        )
        assert done.returncode == 2, (script, argv, done.stderr)
        assert "Traceback" not in done.stderr, (script, argv)
        assert f"{script}: error: " in done.stderr and message in done.stderr, (script, done.stderr)
