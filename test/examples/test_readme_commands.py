"""README's two set-up commands: the first installs only the compiler and its example runs; the
second installs the test tools and runs both suites. (CI runs the second in a fresh venv.)"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def set_up_commands() -> list[list[str]]:
    """README's ```sh blocks under "Set up", each split at `&&` into argument lists."""
    section = (ROOT / "README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    return [[shlex.split(step) for step in block.split("&&")] for block in blocks]


def test_there_are_two_set_up_commands_and_only_the_second_installs_extras() -> None:
    first, second = set_up_commands()
    assert ["pip", "install", "-e", "."] in first
    assert ["pip", "install", "-e", ".[test]"] in second
    assert second[-2:] == [["pytest"], ["lit", "-v", "test/filecheck"]]


def test_the_first_command_runs_the_compiler_on_the_example() -> None:
    first, _ = set_up_commands()
    tool, *args = first[-1]
    assert tool == "ccopt"
    done = subprocess.run(
        [sys.executable, "-m", "ccopt.tools.ccopt_opt", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "sched.execute" in done.stdout
