"""Running ccopt's command-line tools from tests: as a user would (a subprocess), with the checks
every user-error test makes (exit status 1, the message on stderr, never a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SGD = ROOT / "examples" / "sgd.mlir"


def run_tool(
    module: str, *args: str | Path, stdin: str | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def ccopt(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_tool("ccopt.tools.ccopt_opt", *args, stdin=stdin)


def ccopt_run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_tool("ccopt.tools.ccopt_run", *args, cwd=cwd)


def assert_user_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit status 1, the message on stderr, and never a Python traceback."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
