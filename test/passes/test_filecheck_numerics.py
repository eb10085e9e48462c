"""Every program the pass FileCheck suite rewrites also runs before and after its RUN pipeline on
the simulated ranks, function by function, and the results agree: the IR checked by filecheck is
also numerically right. A file whose tensors are too large for the interpreter says so on a line
`// NO-NUMERICS: <where its rewrite is proven instead>`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.ir import Operation

import ccopt
from ccopt.program import load_program

SUITE = Path(__file__).parent.parent / "filecheck" / "passes"
PIPELINE = re.compile(r"^// RUN: ccopt %s -p '([^']+)'(.*)\|")
NO_NUMERICS = re.compile(r"^// NO-NUMERICS: \S", re.MULTILINE)


def cases() -> list[tuple[str, int, str, str]]:
    """(file, input chunk, pipeline, function) for each RUN line that rewrites (not a
    diagnostics test); chunks are what `--split-input-file` splits at `// -----`."""
    out = []
    for path in sorted(SUITE.glob("*.mlir")):
        text = path.read_text()
        pipelines = [  # lit's %S (the test's folder) in a pass option, e.g. a machine file
            m.group(1).replace("%S", str(SUITE))
            for m in map(PIPELINE.match, text.splitlines())
            if m and "--verify-diagnostics" not in m.group(2)
        ]
        if NO_NUMERICS.search(text):
            continue
        for i, chunk in enumerate(chunks(text) if pipelines else []):
            module = load_program(chunk)
            names = [op.sym_name.data for op in module.ops if is_runnable_entry(op)]
            out += [(path.name, i, p, f) for p in dict.fromkeys(pipelines) for f in names]
    return out


def chunks(text: str) -> list[str]:
    return re.split(r"^// -----\s*$", text, flags=re.MULTILINE)


def is_runnable_entry(op: Operation) -> bool:
    """A public function whose calls, transitively, reach only single-block functions without
    recursion (a private one is a helper that `inline` may erase; a declaration, a multi-block
    body or a recursion without an exit cannot run)."""
    if not isinstance(op, func.FuncOp) or op.sym_visibility is not None:
        return False
    module = op.parent_op()
    assert module is not None
    functions = {f.sym_name.data: f for f in module.walk() if isinstance(f, func.FuncOp)}

    def runs(f: func.FuncOp, path: frozenset[str]) -> bool:
        if len(f.body.blocks) != 1 or f.sym_name.data in path:
            return False
        inner = path | {f.sym_name.data}
        callees = {c.callee.root_reference.data for c in f.walk() if isinstance(c, func.CallOp)}
        return all(runs(functions[name], inner) for name in callees)

    return runs(op, frozenset())


@pytest.mark.parametrize(("file", "chunk", "pipeline", "entry"), cases())
def test_filecheck_program_agrees(file: str, chunk: int, pipeline: str, entry: str) -> None:
    text = chunks((SUITE / file).read_text())[chunk]
    report = ccopt.check_pipeline(text, pipeline, entry=entry, seed=7)
    assert report.ok, report.comparisons
