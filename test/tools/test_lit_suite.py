"""The lit suite discovers exactly the FileCheck tests, however it is invoked: inputs of the
pytest suites (test/backends/zoo.mlir) and the examples are not lit tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIT_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "test" / "filecheck").rglob("*.mlir"))


@pytest.mark.parametrize("where", ["test", "test/filecheck"])
def test_lit_discovers_only_the_filecheck_tests(where: str) -> None:
    lit = Path(sys.executable).parent / "lit"
    done = subprocess.run(
        [str(lit), "--show-tests", where], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    shown = sorted(line.split(" :: ")[1] for line in done.stdout.splitlines() if " :: " in line)
    assert shown == LIT_TESTS
    assert "test/backends/zoo.mlir" not in done.stdout
