"""README's "Collective algorithms" commands work as written (run where `examples/` is)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"ccopt": "ccopt.tools.ccopt_opt", "ccopt-run": "ccopt.tools.ccopt_run"}


def test_collective_algorithm_commands(tmp_path: Path) -> None:
    section = (ROOT / "README.md").read_text().split("## Collective algorithms", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)\n```", section.split("\n## ", 1)[0], re.S)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    steps = [shlex.split(step) for block in blocks for step in block.split("&&")]
    assert len(steps) == 6
    for tool, *args in steps:
        done = subprocess.run(
            [sys.executable, "-m", TOOLS[tool], *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
    assert "<algo " in (tmp_path / "bruck.xml").read_text()
    assert "ccopt_algo::run<float, float>" in (tmp_path / "sgd.cu").read_text()
