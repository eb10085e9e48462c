"""`ccopt.ir.clone`: the same module as xDSL's `Operation.clone`, built in linear time."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from ccopt.diagnostics import SourceText
from ccopt.ir import clone, make_context, parse_module, verify_module

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.mlir"))

BRANCHES = """
func.func @loop(%n: i64, %a: f32) -> f32 {
  %zero = arith.constant 0 : i64
  cf.br ^head(%zero, %a : i64, f32)
^head(%i: i64, %acc: f32):
  %more = arith.cmpi slt, %i, %n : i64
  cf.cond_br %more, ^body, ^done(%acc : f32)
^body:
  %one = arith.constant 1 : i64
  %next = arith.addi %i, %one : i64
  %twice = arith.addf %acc, %acc : f32
  cf.br ^head(%next, %twice : i64, f32)
^done(%out: f32):
  func.return %out : f32
}
"""


def text(module: ModuleOp, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=True).print_op(module)
    return out.getvalue()


def load(source: str, name: str = "<test>") -> ModuleOp:
    return parse_module(make_context(), SourceText(name, source))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_clone_prints_as_xdsl_clone(path: Path) -> None:
    module = load(path.read_text(), str(path))
    copy = clone(module)
    verify_module(copy)
    assert text(copy) == text(module.clone()) == text(module)
    assert text(copy, generic=True) == text(module, generic=True)


def test_clone_keeps_blocks_successors_and_argument_locations() -> None:
    module = load(BRANCHES)
    copy = clone(module)
    verify_module(copy)
    assert text(copy) == text(module)
    old_blocks = [b for op in module.walk() for r in op.regions for b in r.blocks]
    new_blocks = [b for op in copy.walk() for r in op.regions for b in r.blocks]
    assert len(old_blocks) == len(new_blocks)
    for old, new in zip(old_blocks, new_blocks, strict=True):
        assert [a.index for a in new.args] == list(range(len(old.args)))
        assert all(a.block is new for a in new.args)
        assert [a.location for a in new.args] == [a.location for a in old.args]
        assert [a.name_hint for a in new.args] == [a.name_hint for a in old.args]
    # successors name the copy's blocks, never the original's
    originals = set(map(id, old_blocks))
    for op in copy.walk():
        assert not any(id(s) in originals for s in op.successors)


def test_clone_is_independent_of_the_original() -> None:
    module = load(EXAMPLES[0].read_text())
    before = text(module)
    copy = clone(module)
    originals = {id(v) for op in module.walk() for v in (*op.results, *op.operands)}
    for op in copy.walk():
        assert not any(id(v) in originals for v in (*op.results, *op.operands))
        for region in op.regions:
            for block in region.blocks:
                assert not any(id(a) in originals for a in block.args)
    for op in list(copy.walk()):
        if op.name == "func.func":
            op.detach()
    assert text(module) == before
    # the original's values have exactly their own uses
    for op in module.walk():
        for value in op.results:
            assert all(use.operation in set(module.walk()) for use in value.uses)


def test_clone_of_a_wide_function() -> None:
    """A block with thousands of arguments (a model step's function) keeps them in order."""
    n = 3000
    args = ", ".join(f"%a{i}: f32" for i in range(n))
    sums = "\n".join(f"  %s{i} = arith.addf %a{i}, %a{n - 1 - i} : f32" for i in range(n))
    module = load(f"func.func @wide({args}) -> f32 {{\n{sums}\n  func.return %s0 : f32\n}}\n")
    copy = clone(module)
    assert text(copy) == text(module)
    (body,) = next(op for op in copy.walk() if op.name == "func.func").regions[0].blocks
    assert [a.index for a in body.args] == list(range(n))
