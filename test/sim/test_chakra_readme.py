"""README's "Collective algorithms and programs as Chakra traces" commands work as written (run
where `examples/` is)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"ccopt": "ccopt.tools.ccopt_opt", "ccopt-sim": "ccopt.tools.ccopt_sim"}


def test_chakra_commands(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Collective algorithms and programs as Chakra traces", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)\n```", section.split("\n## ", 1)[0], re.S)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    steps = [
        shlex.split(step)
        for block in blocks
        for line in block.splitlines()
        for step in line.split("&&")
    ]
    assert len(steps) == 5
    outputs = []
    for tool, *args in steps:
        done = subprocess.run(
            [sys.executable, "-m", TOOLS[tool], *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert (tmp_path / "ring.xml").read_text() == (
        ROOT / "examples" / "algorithms" / "allreduce_ring_8.xml"
    ).read_text()
    assert outputs[2].strip().endswith("time: 90174 ns")
    assert '"time_ns": ' in outputs[4] and (tmp_path / "traces" / "stage.7.et").exists()
