"""Every program the pass FileCheck suite rewrites also runs before and after its RUN pipeline on
the simulated ranks, function by function, and the results agree: the IR checked by filecheck is
also numerically right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.dialects import func

import ccopt
from ccopt.runner import load_program

SUITE = Path(__file__).parent.parent / "filecheck" / "passes"
PIPELINE = re.compile(r"^// RUN: ccopt %s -p '([^']+)'(.*)\|")


def cases() -> list[tuple[str, str, str]]:
    """(file, pipeline, function) for each RUN line that rewrites (not a diagnostics test)."""
    out = []
    for path in sorted(SUITE.glob("*.mlir")):
        text = path.read_text()
        pipelines = [
            m.group(1)
            for m in map(PIPELINE.match, text.splitlines())
            if m and "--verify-diagnostics" not in m.group(2)
        ]
        if not pipelines:
            continue
        module = load_program(text)
        names = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
        out += [(path.name, p, f) for p in dict.fromkeys(pipelines) for f in names]
    return out


@pytest.mark.parametrize(("file", "pipeline", "entry"), cases())
def test_filecheck_program_agrees(file: str, pipeline: str, entry: str) -> None:
    text = (SUITE / file).read_text()
    report = ccopt.check_pipeline(text, pipeline, entry=entry, seed=7)
    assert report.ok, report.comparisons
