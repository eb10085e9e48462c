"""`ccopt.check_pipeline` with pipelines a researcher writes: the pipeline must be text, a pass
that changes what the entry function takes is named (one set of inputs cannot run both
versions), and the report prints as a verdict, not as every array of both runs."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

import ccopt
from ccopt.passes import PASSES, register_pass
from ccopt.program import InputError
from ccopt.runner import RunResult, compare, judge_rounding

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd.mlir"
MLP = ROOT / "examples" / "megatron_mlp.mlir"


def functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    return (op for op in module.walk() if isinstance(op, func.FuncOp))


@dataclass(frozen=True)
class RenameArguments(ModulePass):
    name = "test-api-rename-arguments"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in functions(op):
            for arg in f.body.blocks[0].args:
                arg.name_hint = f"renamed{arg.index}"


@dataclass(frozen=True)
class AddArgument(ModulePass):
    name = "test-api-add-argument"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in functions(op):
            block = f.body.blocks[0]
            block.insert_arg(block.args[0].type, len(block.args))
            f.update_function_type()


@dataclass(frozen=True)
class RenameFunction(ModulePass):
    name = "test-api-rename-function"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in functions(op):
            f.sym_name = StringAttr(f.sym_name.data + "_v2")


@dataclass(frozen=True)
class ReverseArguments(ModulePass):
    """Take the arguments in the other order, names kept: inputs go by name, so this runs."""

    name = "test-api-reverse-arguments"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in functions(op):
            block = f.body.blocks[0]
            old = list(block.args)
            for arg in reversed(old):
                new = block.insert_arg(arg.type, len(block.args))
                new.name_hint = arg.name_hint
                arg.replace_all_uses_with(new)
            for arg in old:
                block.erase_arg(arg)
            f.update_function_type()


TEST_PASSES = (RenameArguments, AddArgument, RenameFunction, ReverseArguments)


@pytest.fixture
def test_passes() -> Iterator[None]:
    for pass_class in TEST_PASSES:
        register_pass(pass_class)
    yield
    for pass_class in TEST_PASSES:
        PASSES.pop(pass_class.name)


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        (
            "test-api-rename-arguments",
            "after pipeline 'test-api-rename-arguments', @sgd takes the arguments "
            "(renamed0, renamed1, renamed2) instead of (g, w, lr): one set of inputs cannot "
            "run both versions",
        ),
        (
            "test-api-add-argument",
            "after pipeline 'test-api-add-argument', @sgd takes the arguments (g, w, lr, arg3)",
        ),
        (
            "test-api-rename-function",
            "after pipeline 'test-api-rename-function': no function @sgd (functions: @sgd_v2)",
        ),
    ],
    ids=["renamed", "added", "function-renamed"],
)
def test_a_pass_that_changes_the_signature_is_named(
    test_passes: None, pipeline: str, message: str
) -> None:
    with pytest.raises(InputError, match="^" + re.escape(message)):
        ccopt.check_pipeline(SGD, pipeline)


def test_reordered_arguments_still_take_the_inputs_by_name(test_passes: None) -> None:
    report = ccopt.check_pipeline(SGD, "test-api-reverse-arguments")
    assert report.ok and [c.name for c in report.comparisons] == ["w"]


def test_an_argument_in_another_element_type_gets_the_inputs_in_that_type() -> None:
    """A mixed-precision rewrite: the same arrays reach the f16 version in f16."""
    from ccopt.runner import compare_modules

    module = ccopt.load_program(SGD)
    half = ccopt.load_program(SGD.read_text().replace("f32", "f16"))
    report = compare_modules(module, half, rtol=1e-2)
    assert report.optimized.inputs["w"].dtype == np.float16
    assert report.optimized.outputs["w"].dtype == np.float16
    assert report.ok, str(report)


@pytest.mark.parametrize("pipeline", [None, ["cse"], 3])
def test_a_pipeline_that_is_not_text_is_refused(pipeline: object) -> None:
    message = f"pipeline must be a string like 'split-all-reduce,overlap{{chunks=2}}', got {type(pipeline).__name__}"
    with pytest.raises(InputError, match="^" + re.escape(message) + "$"):
        ccopt.check_pipeline(SGD, pipeline)  # type: ignore[arg-type]


def test_tolerances_of_the_wrong_kind_are_refused() -> None:
    with pytest.raises(InputError, match=r"^rtol must be a finite number >= 0, got '1e-3'$"):
        ccopt.check_pipeline(SGD, "cse", rtol="1e-3")  # type: ignore[arg-type]


def test_a_huge_rtol_passes_without_a_numpy_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ccopt.check_pipeline(SGD, "split-all-reduce", rtol=1e308).ok


def test_the_report_prints_as_a_verdict_per_output() -> None:
    report = ccopt.check_pipeline(MLP, "split-all-reduce,reorder-elementwise")
    assert str(report).splitlines() == [
        "pipeline 'split-all-reduce,reorder-elementwise' on @mlp: ok",
        "  result0      max abs error 0.000e+00  max rel error 0.000e+00  ok (rtol 1e-05)",
    ]
    report.comparisons[0].ok = False
    report.comparisons[0].note = "shape [2] != [3]"
    assert str(report).splitlines()[0].endswith(": MISMATCH")
    assert str(report).splitlines()[1].endswith("MISMATCH (rtol 1e-05)  (shape [2] != [3])")


def _result(**outputs: np.ndarray) -> RunResult:
    return RunResult("f", {}, {}, outputs, {})


def test_a_narrow_mismatch_within_the_references_own_rounding_passes() -> None:
    """The f64 reference decides: a result after the pipeline that is as close to it as the
    f32 reference (reordered sums of a deep stack) passes, with a note; one much further (a
    wrong rewrite) stays a mismatch, and says how far each is."""
    exact = np.array([1.0, 2.0, 3.0])
    before = (exact + [3e-4, 0, 0]).astype(np.float32)
    close = (exact - [2e-4, 0, 0]).astype(np.float32)
    far = (exact + [5e-3, 0, 0]).astype(np.float32)
    for got, ok in ((close, True), (far, False)):
        c = compare("x", got, before, None, None)
        assert not c.ok
        judged = judge_rounding(c, _result(x=got), _result(x=before), _result(x=exact))
        assert judged.ok is ok
        assert ("rounding: " in judged.note) is ok and "f64 reference" in judged.note


def test_a_deep_f32_stack_passes_where_only_rounding_differs() -> None:
    """16 GPT layers in f32 (random N(0, 1) weights: activations grow layer by layer): the
    first layers' gradients differed by 2.4e-5 relative after split-all-reduce and
    reorder-elementwise, past f32's 1e-5, while the f64 reference is as far from both."""
    from ccopt.frontend.gpt import gpt_step

    step = gpt_step("tiny", {"dp": 2, "tp": 2}, layers=16)
    report = ccopt.check_pipeline(str(step), "split-all-reduce,reorder-elementwise")
    assert report.ok, [c for c in report.comparisons if not c.ok]
