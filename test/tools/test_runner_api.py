"""The Python API's programs and options: `ccopt.run` / `ccopt.check_pipeline` take a path, IR
text, a module or a front-end `Program`; a string is a path when it can only be one; options out
of range are errors, not silently odd runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.frontend import P, Program, R
from ccopt.program import is_ir_text, load_program

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd.mlir"
MESH_ONLY = "dtensor.mesh @dp [dp=2]"


def sgd_program() -> Program:
    p = Program("sgd", dp=2)
    g = p.input("g", [10], "f32", P())
    w = p.input("w", [10], "f32", R)
    p.update(w, w - 0.5 * p.all_reduce(g, "dp"))
    return p


def test_front_end_program_runs_and_checks() -> None:
    """A `Program` is taken as it stands (its scheduled module), like `Program.run`."""
    p = sgd_program()
    rng = np.random.default_rng(3)
    inputs = {"g": rng.standard_normal((2, 10)).astype(np.float32), "w": np.ones(10, np.float32)}
    result = ccopt.run(p, inputs)
    np.testing.assert_allclose(result.outputs["w"], 1 - 0.5 * inputs["g"].sum(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(result.outputs["w"], p.run(inputs).outputs["w"])
    report = ccopt.check_pipeline(p, "split-all-reduce,reorder-elementwise", inputs)
    assert report.ok and [c.name for c in report.comparisons] == ["w"]
    assert str(load_program(p)) == str(p.module)


def test_strings_are_ir_unless_they_name_a_file(tmp_path: Path) -> None:
    assert is_ir_text(MESH_ONLY) and is_ir_text("") and is_ir_text("a\nb.mlir")
    assert not is_ir_text(str(SGD)) and not is_ir_text("absent.mlir")
    assert not is_ir_text(str(tmp_path))  # a directory is a path, whatever its name
    assert len(load_program(MESH_ONLY).ops) == 1
    assert len(load_program("").ops) == 0
    plain = tmp_path / "program.txt"  # a file is a path, whatever its suffix
    plain.write_text(SGD.read_text())
    assert str(load_program(str(plain))) == str(load_program(SGD))


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("{tmp}", "cannot read input file '{tmp}': Is a directory"),
        ("{tmp}/absent.mlir", "cannot read input file '{tmp}/absent.mlir': No such file"),
        ("{tmp}/latin1.mlir", "input file '{tmp}/latin1.mlir' is not UTF-8 text"),
    ],
)
def test_unreadable_paths_are_named(tmp_path: Path, program: str, message: str) -> None:
    (tmp_path / "latin1.mlir").write_bytes(b"// caf\xe9\n")
    for given in (program.format(tmp=tmp_path), Path(program.format(tmp=tmp_path))):
        with pytest.raises(CcoptError, match="^" + message.format(tmp=tmp_path)):
            ccopt.run(given)


def test_other_objects_are_not_programs() -> None:
    with pytest.raises(TypeError, match="cannot load a program from a int"):
        load_program(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"steps": 0}, "steps must be >= 1, got 0"),
        ({"seed": -1}, "seed must be >= 0, got -1"),
        ({"rtol": -1.0}, "rtol must be a finite number >= 0, got -1.0"),
        ({"atol": math.nan}, "atol must be a finite number >= 0, got nan"),
        ({"rtol": math.inf}, "rtol must be a finite number >= 0, got inf"),
    ],
)
def test_options_out_of_range_are_errors(options: dict[str, float], message: str) -> None:
    if "rtol" not in options and "atol" not in options:
        with pytest.raises(CcoptError, match=f"^{message}$"):
            ccopt.run(SGD, **options)  # type: ignore[arg-type]
    with pytest.raises(CcoptError, match=f"^{message}$"):
        ccopt.check_pipeline(SGD, "cse", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({"dp": 0}, "mesh axis 'dp' has size 0; sizes must be >= 1"),
        ({"dp": 2, "tp": -1}, "mesh axis 'tp' has size -1; sizes must be >= 1"),
        ({"dp": 1 << 11, "tp": 1 << 10}, r"mesh @m has 2097152 ranks; ccopt handles at most"),
    ],
)
def test_a_front_end_mesh_is_checked_as_the_verifier_checks_it(
    axes: dict[str, int], message: str
) -> None:
    """A mesh `dtensor.mesh` would refuse is refused when the program is made, not by the
    first op that divides by its size."""
    with pytest.raises(CcoptError, match=f"^{message}"):
        Program("f", **axes)
