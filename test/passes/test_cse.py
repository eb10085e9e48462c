"""`cse` (ccopt.passes.cse): xDSL's driver with cheaper keys rewrites exactly as xDSL's own pass
does, its keys hash equal for equal ops, and the program computes the same before and after."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, f64, i64
from xdsl.ir import Operation
from xdsl.printer import Printer
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination as XdslCSE,
)
from xdsl.transforms.common_subexpression_elimination import OperationInfo

import ccopt
from ccopt.ir import make_context
from ccopt.passes import PASSES
from ccopt.passes.cse import CommonSubexpressionElimination, CseKeys
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LIT_INPUT = ROOT / "test" / "filecheck" / "passes" / "cse.mlir"

DUPLICATES = """
!x = !dtensor.tensor<8x16xf32, @m[S(0), R]>
dtensor.mesh @m [dp=2, tp=2]
func.func @f(%a: !x) -> (!x, !x, !x) {
  %d = dtensor.dropout %a seed 7 prob 0.1 : !x
  %d2 = dtensor.dropout %a seed 7 prob 0.1 : !x
  %e = dtensor.dropout %a seed 8 prob 0.1 : !x
  func.return %d, %d2, %e : !x, !x, !x
}
"""


def printed(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def programs() -> list[tuple[str, str, str]]:
    """(name, program, pipeline run before cse): the examples, the lit test's input, and
    Megatron after fusion (bodies) and after lowering to kernels (L3)."""
    cases = [(p.stem, str(p), "") for p in sorted(EXAMPLES.glob("*.mlir"))]
    cases.append(("lit", str(LIT_INPUT), ""))
    mlp = str(EXAMPLES / "megatron_mlp.mlir")
    cases.append(("fused", mlp, "split-all-reduce,reorder-elementwise,fuse-elementwise"))
    cases.append(
        (
            "kernels",
            mlp,
            "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},"
            "convert-to-kernel,plan-memory",
        )
    )
    return cases


@pytest.mark.parametrize(("name", "program", "before"), programs(), ids=lambda v: str(v)[:40])
def test_rewrites_as_xdsl_cse(name: str, program: str, before: str) -> None:
    module = load_program(program)
    if before:
        run_pipeline(module, before)
    ours, theirs = module.clone(), module.clone()
    CommonSubexpressionElimination().apply(make_context(), ours)
    XdslCSE().apply(make_context(), theirs)
    assert printed(ours) == printed(theirs)


def test_registered_under_xdsl_name() -> None:
    assert PASSES["cse"]() is CommonSubexpressionElimination
    assert issubclass(CommonSubexpressionElimination, XdslCSE)
    assert CommonSubexpressionElimination.name == "cse"


def dropouts() -> list[Operation]:
    module = load_program(DUPLICATES)
    return [op for op in module.walk() if op.name == "dtensor.dropout"]


def test_equal_ops_hash_equal() -> None:
    """Equal properties made of other objects, in another order, hash alike; the key's
    equality (xDSL's) agrees."""
    d, d2, e = dropouts()
    d2.properties = {"prob": FloatAttr(0.1, f64), "seed": IntegerAttr(7, i64)}
    assert d.properties["prob"] is not d2.properties["prob"]
    assert d.properties["seed"] is not d2.properties["seed"]
    assert list(d.properties) != list(d2.properties)
    keys = CseKeys()
    assert keys.op_hash(d) == keys.op_hash(d2) == CseKeys().op_hash(d2)
    assert OperationInfo(d) == OperationInfo(d2)
    assert OperationInfo(d) != OperationInfo(e)
    assert keys.op_hash(d) != keys.op_hash(e)  # (a seed of another value: another key)


def test_key_follows_operand_change() -> None:
    """A key hashes the op as it is now: an op whose operand was replaced hashes anew."""
    d, d2, _ = dropouts()
    keys = CseKeys()
    before = keys.op_hash(d2)
    d2.operands = [d.results[0]]
    assert keys.op_hash(d2) != before
    d2.operands = list(d.operands)
    assert keys.op_hash(d2) == before == keys.op_hash(d)


def test_merges_and_computes_the_same() -> None:
    module = load_program(DUPLICATES)
    run_pipeline(module, "cse")
    assert [op.name for op in module.walk()].count("dtensor.dropout") == 2
    for entry, outputs in (("flat", 9), ("nested", 2)):
        report = ccopt.check_pipeline(LIT_INPUT, "cse", entry=entry)
        assert report.ok and len(report.comparisons) == outputs
