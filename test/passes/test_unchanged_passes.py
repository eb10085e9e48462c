"""A pass that changed nothing says so (`mark_unchanged`) and is then not verified again, as in
mlir-opt: the claim must be true - the module prints as it did - and the pipeline must skip
exactly the verifications after such passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from test_random_programs import SETTINGS, Program, programs
from xdsl.dialects.builtin import ModuleOp

from ccopt.diagnostics import SourceText
from ccopt.ir import make_context, parse_module
from ccopt.passes import parse_pipeline, pipeline
from ccopt.passes.unchanged import take_unchanged

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MARKING = ["split-all-reduce", "sliced-norm", "inline", "inline{max-ops=0}", "cse", "dce"]
"""The passes that mark a module they did not change."""


def example(name: str) -> ModuleOp:
    return parse_module(make_context(), SourceText(name, (EXAMPLES / name).read_text()))


def apply_alone(module: ModuleOp, spec: str) -> bool:
    """Apply one pass to `module` without verification; whether it marked it unchanged."""
    parse_pipeline(spec).apply(make_context(), module)
    return take_unchanged(module)


def assert_claim_holds(module: ModuleOp, spec: str) -> bool:
    """Apply `spec` to a copy of `module`; a copy marked unchanged prints as `module`."""
    before = str(module)
    copy = module.clone()
    unchanged = apply_alone(copy, spec)
    if unchanged:
        assert str(copy) == before, f"{spec} marked a changed module unchanged"
    return unchanged


@pytest.mark.parametrize("spec", MARKING)
@SETTINGS
@given(prog=programs())
def test_unchanged_claim_on_random_programs(spec: str, prog: Program) -> None:
    assert_claim_holds(prog.module, spec)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.mlir")))
@pytest.mark.parametrize("spec", MARKING)
def test_unchanged_claim_on_examples(spec: str, name: str) -> None:
    assert_claim_holds(example(name), spec)


def test_work_done_is_not_marked() -> None:
    """The GPT stack has calls to inline and all_reduces to split; the Megatron MLP neither
    calls nor norms."""
    gpt = example("gpt_stack.mlir")
    assert not assert_claim_holds(gpt, "inline")
    assert not assert_claim_holds(gpt, "split-all-reduce")
    mlp = example("megatron_mlp.mlir")
    assert assert_claim_holds(mlp, "inline")
    assert assert_claim_holds(mlp, "sliced-norm")


@pytest.fixture
def verified(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per verification the pass manager runs (`pipeline.verify_module`)."""
    calls: list[int] = []
    real = pipeline.verify_module
    monkeypatch.setattr(
        pipeline, "verify_module", lambda m, **kw: (calls.append(1), real(m, **kw))[1]
    )
    return calls


def test_pipeline_skips_verification_after_unchanged_passes(verified: list[int]) -> None:
    mlp = example("megatron_mlp.mlir")
    times = pipeline.StepTimes()
    passes = pipeline.checked_pipeline("split-all-reduce,inline,sliced-norm", times=times)
    passes.apply(make_context(), mlp)
    assert len(verified) == 1  # after split-all-reduce only
    steps = [name for name, _ in times.steps]
    assert steps == ["split-all-reduce", "  verify after split-all-reduce", "inline", "sliced-norm"]
    # passes that all find nothing (no all_reduce is left, no call) are verified by none
    verified.clear()
    pipeline.checked_pipeline("split-all-reduce,inline").apply(make_context(), mlp)
    assert verified == []


def test_a_mark_left_outside_a_pipeline_is_dropped(verified: list[int]) -> None:
    """A pass applied on its own (no pipeline takes its mark) must not stop the verification
    after the first pass of a later pipeline."""
    mlp = example("megatron_mlp.mlir")
    assert apply_alone(mlp, "inline")  # (inline marks this module; apply_alone takes the mark)
    parse_pipeline("inline").apply(make_context(), mlp)  # marks it again and leaves the mark
    pipeline.checked_pipeline("split-all-reduce").apply(make_context(), mlp)
    assert verified == [1]
