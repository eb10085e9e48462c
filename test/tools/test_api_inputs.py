"""What `ccopt.run` takes as inputs, options and mesh sizes: anything it cannot run as given is
an InputError naming it, never a numpy or xDSL exception and never a run on numbers nobody gave
(an integer wrapped around, a finite float turned into inf)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.program import InputError, is_ir_text

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd.mlir"
TWO = """\
!f = !dtensor.tensor<8xf32, @dp[R]>
!i = !dtensor.tensor<8xi32, @dp[R]>
dtensor.mesh @dp [dp=2]
func.func @negate(%x: !f) -> !f {
  %y = dtensor.neg %x : !f
  func.return %y : !f
}
func.func @double(%x: !i) -> !i {
  %y = dtensor.add %x, %x : (!i, !i) -> !i
  func.return %y : !i
}
func.func private @declared(%x: !f) -> !f
"""


def sgd_inputs() -> dict[str, np.ndarray]:
    return {
        "g": np.ones((4, 1030), np.float32),
        "w": np.ones(1030, np.float32),
        "lr": np.array(0.5, np.float32),
    }


def test_lists_scalars_and_strided_arrays_are_taken_as_arrays() -> None:
    """What numpy reads as an array of the right shape and kind is an input."""
    inputs = {"g": np.ones((1030, 4), np.float32).T, "w": [1.0] * 1030, "lr": 0.5}
    result = ccopt.run(SGD, inputs)
    np.testing.assert_array_equal(result.outputs["w"], np.full(1030, -1.0, np.float32))


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([np.ones(8)], "inputs must map argument names to arrays (a dict), got list"),
        (5, "inputs must map argument names to arrays (a dict), got int"),
        ({"w": [[1.0] * 1030, [1.0]]}, "input 'w' is not an array for !dtensor.tensor<1030xf32"),
        ({1: 0, "zz": 0}, "input '1' is not an argument of @sgd (arguments: g, w, lr)"),
    ],
    ids=["list", "int", "ragged", "mixed-keys"],
)
def test_inputs_that_are_not_arrays_by_name_are_refused(inputs: object, message: str) -> None:
    given = {**sgd_inputs(), **inputs} if isinstance(inputs, dict) else inputs
    with pytest.raises(InputError) as error:
        ccopt.run(SGD, given)  # type: ignore[arg-type]
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    ("entry", "value", "message"),
    [
        ("double", np.full(8, 2**40), "input 'x' holds 1099511627776, outside the range of int32"),
        ("double", np.full(8, 2**63, np.uint64), "holds 9223372036854775808, outside the range"),
        ("negate", np.full(8, 1e300), "input 'x' holds 1e+300 at [0], beyond the largest finite"),
        ("negate", np.array([1.0] * 7 + [-1e39]), "holds -1e+39 at [7], beyond the largest"),
    ],
    ids=["int64", "uint64", "float64", "last"],
)
def test_values_the_element_type_cannot_hold_are_refused(
    entry: str, value: np.ndarray, message: str
) -> None:
    """numpy's cast would wrap 2**40 to 0 in i32 and make 1e300 inf in f32, silently."""
    with pytest.raises(InputError, match=re.escape(message)):
        ccopt.run(TWO, {"x": value}, entry=entry)


def test_values_in_range_of_a_narrower_type_are_cast() -> None:
    doubled = ccopt.run(TWO, {"x": np.full(8, 2**30 - 1, np.int64)}, entry="double")
    assert doubled.outputs["result0"].dtype == np.int32
    assert doubled.outputs["result0"][0] == 2**31 - 2
    nan_and_inf = np.array([np.nan, np.inf, -np.inf, 1e300 * 0, 0, 0, 0, 1.5])
    negated = ccopt.run(TWO, {"x": nan_and_inf}, entry="negate").outputs["result0"]
    np.testing.assert_array_equal(negated, -nan_and_inf.astype(np.float32))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"steps": 2.5}, "steps must be an integer >= 1, got 2.5"),
        ({"steps": "2"}, "steps must be an integer >= 1, got '2'"),
        ({"steps": True}, "steps must be an integer >= 1, got True"),
        ({"seed": None}, "seed must be an integer >= 0, got None"),
        ({"seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
        ({"memory_limit": -1}, "memory_limit must be a finite number >= 0, got -1"),
    ],
)
def test_options_of_the_wrong_kind_are_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        ccopt.run(SGD, **options)  # type: ignore[arg-type]


def test_numpy_integers_and_big_seeds_are_seeds() -> None:
    """numpy seeds its generator from any integer >= 0."""
    for seed in (np.int64(3), 2**64):
        assert ccopt.run(SGD, seed=seed).outputs["w"].shape == (1030,)


@pytest.mark.parametrize(
    ("mesh", "message"),
    [
        ({"dp": 2.5}, "mesh axis 'dp' needs an integer size, got 2.5"),
        ({"dp": "2"}, "mesh axis 'dp' needs an integer size, got '2'"),
        ({"dp": True}, "mesh axis 'dp' needs an integer size, got True"),
        ({"dp": 10**30}, "mesh axis 'dp' has size 1000000000000000000000000000000; ccopt handles"),
        ("dp=²", "bad mesh 'dp=²': expected axis=size pairs like dp=2,tp=4"),
        ("dp=2,,tp=1", "bad mesh 'dp=2,,tp=1': an empty axis between commas"),
        ("dp=2,", "bad mesh 'dp=2,': an empty axis between commas"),
        ("", "bad mesh '': expected axis=size pairs like dp=2,tp=4, got none"),
        (["dp", 2], "mesh must be 'dp=2,tp=4' or a dict of axis sizes, got list"),
    ],
)
def test_mesh_sizes_that_are_not_rank_counts_are_errors(mesh: object, message: str) -> None:
    with pytest.raises(InputError, match="^" + re.escape(message)):
        ccopt.run(SGD, mesh=mesh)  # type: ignore[arg-type]


def test_numpy_integer_mesh_sizes_resize_the_mesh() -> None:
    assert ccopt.run(SGD, mesh={"dp": np.int64(2)}).meshes["dp"].axis_sizes == (2,)


def test_entry_may_be_spelled_as_a_symbol_and_a_declaration_is_named() -> None:
    assert ccopt.run(TWO, entry="@negate").entry == "negate"
    with pytest.raises(InputError, match=r"^@declared is a declaration without a body"):
        ccopt.run(TWO, entry="declared")
    with pytest.raises(InputError, match=r"entry= in Python"):
        ccopt.run(TWO)


def test_a_run_result_prints_as_a_summary() -> None:
    text = str(ccopt.run(TWO, entry="negate"))
    assert text.splitlines() == ["@negate on @dp [dp=2]", "  result0      float32   [8]"]


@pytest.mark.parametrize("typo", ["exmples/sgd.ir", "examples/sgd", "sgd.txt"])
def test_a_mistyped_path_is_missing_not_unparsable_ir(typo: str) -> None:
    """A one-line string that cannot be IR (one word, no op punctuation) is a path."""
    with pytest.raises(CcoptError, match=f"^cannot read input file '{re.escape(typo)}': No such"):
        ccopt.run(typo)
    assert is_ir_text("dtensor.mesh @dp [dp=2]") and is_ir_text("")


def test_a_masked_array_with_masked_elements_is_refused() -> None:
    """numpy.asarray dropped the mask: the hidden values were computed with, without a word.
    A masked array with nothing masked is an array."""
    g = np.ma.masked_array(np.ones((4, 1030), np.float32), mask=False)
    g.mask[0, 3] = True
    with pytest.raises(InputError, match="input 'g' is a masked array with 1 masked elements"):
        ccopt.run(SGD, {**sgd_inputs(), "g": g})
    unmasked = np.ma.masked_array(np.ones((4, 1030), np.float32), mask=False)
    assert ccopt.run(SGD, {**sgd_inputs(), "g": unmasked}).outputs["w"].shape == (1030,)
