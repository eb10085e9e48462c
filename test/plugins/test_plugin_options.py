"""A plugin pass with options, as a researcher writes one (`ccopt.passes.option` fields of a
frozen dataclass): `ccopt -p 'pass{opt=val}'`, `ccopt-run --check-pipeline` and
`ccopt.check_pipeline` take the options, `--help` explains them, and a bad value is refused
when the pipeline is read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "examples/plugins/profile_marker.py"
MLP = "examples/megatron_mlp.mlir"
SPLIT = "split-all-reduce,reorder-elementwise"


def tool(*argv: str) -> subprocess.CompletedProcess[str]:
    """A ccopt tool of this environment, run from the checkout's root."""
    exe = Path(sys.executable).parent / argv[0]
    return subprocess.run(
        [str(exe), *argv[1:]], capture_output=True, text=True, cwd=ROOT, env=dict(os.environ)
    )


def test_an_option_picks_the_collectives_to_mark() -> None:
    """After split-all-reduce the block has a reduce-scatter, a slice and an all-gather: `only`
    marks the one it names."""
    marked = tool("ccopt", "--load-plugin", MARKER, MLP, "-p", f"{SPLIT},prof-mark-collectives")
    gathered = tool(
        "ccopt",
        "--load-plugin",
        MARKER,
        MLP,
        "-p",
        f"{SPLIT},prof-mark-collectives{{only=all_gather}}",
    )
    assert marked.returncode == 0 and gathered.returncode == 0, marked.stderr + gathered.stderr
    labels = [line.split('"')[1] for line in marked.stdout.splitlines() if "prof.marker" in line]
    assert labels == ["coll.reduce_scatter", "coll.slice", "coll.all_gather"]
    only = [line.split('"')[1] for line in gathered.stdout.splitlines() if "prof.marker" in line]
    assert only == ["coll.all_gather"]


def test_the_option_in_check_pipeline_from_both_the_tool_and_python() -> None:
    pipeline = f"{SPLIT},prof-mark-collectives{{only=reduce_scatter,all_gather}}"
    checked = tool("ccopt-run", "--load-plugin", MARKER, MLP, "--check-pipeline", pipeline)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    assert checked.stdout.splitlines()[-2].endswith("ok")
    assert checked.stdout.splitlines()[-1] == "PASS: 1 of 1 outputs agree"
    script = (
        "import ccopt\n"
        "from ccopt.passes import load_plugin\n"
        f"load_plugin({MARKER!r})\n"
        f"report = ccopt.check_pipeline({MLP!r}, {pipeline!r})\n"
        "print(report)\n"
        "print(str(ccopt.load_program(" + repr(MLP) + ")).count('prof.marker'))\n"
    )
    api = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert api.returncode == 0, api.stderr
    assert api.stdout.splitlines() == [
        f"pipeline '{pipeline}' on @mlp: ok",
        "  result0      max abs error 0.000e+00  max rel error 0.000e+00  ok (rtol 1e-05)",
        "0",
    ]


def test_help_explains_the_option_and_a_bad_value_is_refused() -> None:
    helped = tool("ccopt", "--load-plugin", MARKER, "--help")
    assert "    only=<str,...>" in helped.stdout
    refused = tool(
        "ccopt", "--load-plugin", MARKER, MLP, "-p", "prof-mark-collectives{only=allreduce}"
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(
        "ccopt: error: invalid pass pipeline 'prof-mark-collectives{only=allreduce}': "
        "prof-mark-collectives: 'allreduce' is not a collective (collectives: all_gather, "
    )
