"""The Python API refuses what it cannot build, by name and as a CcoptError (or ValueError),
never with an error from deep inside ccopt or xDSL, and never by building something else."""

from __future__ import annotations

import numpy as np
import pytest

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects.dtensor_type import R, S
from ccopt.frontend.gpt import gpt_step
from ccopt.frontend.program import Program


def test_a_float_dimension_is_refused_and_leaves_later_types_alone() -> None:
    """`[8 / 2, 4]` was taken, and its type (4.0x4), uniqued under a key equal to (4, 4), was
    handed to every later 4x4 tensor of the process, which then did not run or parse."""
    p = Program("f", dp=2)
    with pytest.raises(CcoptError, match=r"a shape is a list of whole numbers.*\[4\.0, 4\]"):
        p.input("x", [8 / 2, 4], "f32", R)
    q = Program("g", dp=2)
    y = q.input("y", [4, 4], "f32", R)
    with pytest.raises(CcoptError, match="whole number"):
        y.slice([0.0, 0.0], [2.0, 3.0])
    q.returns(y.slice([0, 0], [2, 3]) * 2.0)
    assert "2x3xf32" in str(q)
    result = ccopt.run(q, {"y": np.ones((4, 4), np.float32)})
    assert result.outputs["result0"].shape == (2, 3)


def test_a_fraction_on_an_integer_tensor_is_refused() -> None:
    p = Program("f", dp=2)
    x = p.input("x", [4], "i32", R)
    with pytest.raises(CcoptError, match="2.5 is not a whole number, and the tensor holds i32"):
        x + 2.5
    with pytest.raises(CcoptError, match="2.5 is not a whole number"):
        x * 2.5  # (a float factor was a dtensor.scale, truncated: [0, 2, 5, 7])
    p.returns(x * 3.0)  # (a whole float is that integer)
    assert ccopt.run(p, {"x": np.arange(4, dtype=np.int32)}).outputs["result0"].tolist() == [
        0,
        3,
        6,
        9,
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda p: (p.input("x", [4], "f32", R), p.input("x", [4], "f32", R)), "argument 'x'"),
        (lambda p: p.input("my x", [4], "f32", R), "an argument's name is an identifier"),
        (lambda p: p.returns([p.input("x", [4], "f32", R)]), "returns takes Tensors"),
        (lambda p: p.input("x", [4], "f32", R).dropout(7, 0.1), "dropout probability"),
        (lambda p: p.input("x", [4, 4], "f32", R).softmax(5), "softmax: dimension 5"),
        (lambda p: p.input("x", [4], "f32", R).sum(0), "cannot build the op"),
    ],
)
def test_builder_misuse_is_a_ccopt_error(build, message: str) -> None:  # noqa: ANN001
    with pytest.raises(CcoptError, match=message):
        build(Program("f", dp=2))


def test_operands_of_two_programs_and_a_second_returns_are_refused() -> None:
    p, q = Program("f", dp=2), Program("g", dp=2)
    x, y = p.input("x", [4], "f32", R), q.input("y", [4], "f32", R)
    with pytest.raises(CcoptError, match="two programs"):
        x + y
    p.returns(x)
    with pytest.raises(CcoptError, match="has its results already"):
        p.returns(x)


def test_a_negative_split_is_refused() -> None:
    with pytest.raises(ValueError, match=r"S\(-1\): a split dimension is a whole number >= 0"):
        S(-1)


@pytest.mark.parametrize("size", [2.0, "2", True, None])
def test_mesh_sizes_are_integers(size: object) -> None:
    with pytest.raises(CcoptError, match="mesh axis 'dp' needs an integer size"):
        Program("f", dp=size)  # type: ignore[arg-type]


def test_an_error_building_a_module_is_not_read_as_no_module() -> None:
    """`isinstance(program, HasModule)` evaluated the property and swallowed its error: a
    Program whose results were a list was "not a program"."""
    p = Program("f", dp=2)
    p.results = [[p.input("x", [4], "f32", R)]]  # type: ignore[list-item]  (past `returns`)
    with pytest.raises(AttributeError):
        ccopt.run(p)


def test_pipelines_are_strings() -> None:
    with pytest.raises(CcoptError, match="a pass pipeline is a string"):
        ccopt.build("examples/sgd.mlir", 3)  # type: ignore[arg-type]


def test_gpt_step_takes_a_mesh_string_and_checks_its_numbers() -> None:
    assert "@m [dp=2, tp=2]" in str(gpt_step("tiny", "dp=2,tp=2"))
    with pytest.raises(CcoptError, match="a GPT's layers is a whole number, got 2.0"):
        gpt_step("tiny", {"dp": 2, "tp": 2}, layers=2.0)  # type: ignore[arg-type]


def test_run_on_host_checks_its_inputs_before_compiling() -> None:
    from ccopt.backends.cuda.cpu import run_on_host

    p = Program("f", dp=2)
    p.returns(p.input("x", [4], "f32", S(0)) * 2.0)
    with pytest.raises(CcoptError, match="missing input for argument 'x'"):
        run_on_host(p, {})
    with pytest.raises(CcoptError, match="input 'x' has dtype int32, argument needs float32"):
        run_on_host(p, {"x": np.ones(4, np.int32)})
    with pytest.raises(CcoptError, match=r"input 'x': expected an array of shape \[4\]"):
        run_on_host(p, {"x": np.ones(5)})  # (float64: converted, as ccopt.run converts it)
