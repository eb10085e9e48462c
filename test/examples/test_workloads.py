"""The bundled workloads: Python front end and .mlir files agree, every schedule keeps the
numbers (on several meshes), and examples/README.md shows the compiler's current output."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import ccopt
from ccopt.frontend.workloads import BUILDERS, PIPELINES, SCHEDULES

ROOT = Path(__file__).resolve().parents[2]
MESHES = {
    "sgd": ["dp=1", "dp=3", "dp=8"],
    "adam": ["dp=2", "dp=3"],
    "lamb": ["dp=2", "dp=4"],
    "megatron_row_parallel": ["tp=1", "tp=3", "tp=4"],
    "pipeline_boundary": ["pp=2,tp=3", "pp=4,tp=2"],
    "fusion_legality": ["dp=3", "dp=8"],
    "megatron_mlp": ["dp=2,tp=3", "dp=1,tp=4"],
}
CASES = [(name, schedule) for name in BUILDERS for schedule in SCHEDULES[name]]


@pytest.mark.parametrize("name", BUILDERS)
def test_python_program_equals_the_mlir_file(name: str) -> None:
    """Same inputs, bitwise the same outputs: the two spellings are one program."""
    from_python = ccopt.run(BUILDERS[name]().module, seed=3)
    from_file = ccopt.run(ROOT / "examples" / f"{name}.mlir", from_python.inputs)
    assert from_python.outputs.keys() == from_file.outputs.keys()
    for key, value in from_python.outputs.items():
        np.testing.assert_array_equal(value, from_file.outputs[key])


@pytest.mark.parametrize(("name", "schedule"), CASES)
def test_schedule_in_python_keeps_the_results(name: str, schedule: str) -> None:
    program = BUILDERS[name]()
    SCHEDULES[name][schedule](program)
    for mesh in MESHES[name]:
        report = program.check(mesh=mesh, seed=1)
        assert report.ok, (mesh, report.comparisons)


@pytest.mark.parametrize(("name", "schedule"), CASES)
def test_schedule_as_pipeline_keeps_the_results(name: str, schedule: str) -> None:
    for mesh in MESHES[name]:
        report = ccopt.check_pipeline(
            ROOT / "examples" / f"{name}.mlir", PIPELINES[name][schedule], mesh=mesh, seed=2
        )
        assert report.ok, (mesh, report.comparisons)


@pytest.mark.parametrize(("name", "schedule"), CASES)
def test_both_routes_give_the_same_numbers(name: str, schedule: str) -> None:
    program = BUILDERS[name]()
    SCHEDULES[name][schedule](program)
    scheduled = ccopt.run(program.module, seed=4)
    module = ccopt.load_program(ROOT / "examples" / f"{name}.mlir")
    from ccopt.passes.pipeline import run_pipeline

    run_pipeline(module, PIPELINES[name][schedule])
    piped = ccopt.run(module, scheduled.inputs)
    for key, value in scheduled.outputs.items():
        np.testing.assert_allclose(piped.outputs[key], value, rtol=1e-5, atol=1e-6)


def make_readme() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_readme", ROOT / "examples" / "make_readme.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("readme", ["README.md", "examples/README.md"])
def test_every_mlir_block_of_the_readmes_parses_and_verifies(readme: str) -> None:
    """IR pasted from the documentation into a file must be accepted by ccopt."""
    tool = make_readme()
    text = (ROOT / readme).read_text()
    assert tool.mlir_blocks(text), f"{readme} has no mlir block"
    assert tool.unparsable_blocks(text, readme) == []


def test_readme_check_rejects_an_ir_block_that_does_not_parse() -> None:
    tool = make_readme()
    broken = "text\n\n```mlir\nModuleOp(\n\tbuiltin.module {}\n)\n```\n"
    assert tool.mlir_blocks(broken) == [(4, "ModuleOp(\n\tbuiltin.module {}\n)\n")]
    (error,) = tool.unparsable_blocks(broken, "doc.md")
    assert error.startswith("doc.md:4:1: error: unknown operation 'ModuleOp'")


def test_examples_readme_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "make_readme.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_the_python_example_of_readme_runs() -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "examples" / "python_api.py")],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    assert "w after one step: [-0.5 -0.5 -0.5]" in done.stdout
    assert "coll.reduce_scatter" in done.stdout and "predicted step:" in done.stdout
