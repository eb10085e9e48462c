"""Extending ccopt with a plugin: the README's commands run as written, the example plugin's
passes and semantics work in both tools, and an op without semantics is named where it stands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "examples/plugins/profile_marker.py"
OPAQUE = """\
!t = !dtensor.tensor<8xf32, @dp[R]>
dtensor.mesh @dp [dp=2]
func.func @f(%x: !t) -> !t {
  %y = dtensor.neg %x : !t
  %z = opaque.op %y : !t
  func.return %z : !t
}
"""


def readme_commands(section: str) -> list[str]:
    """The commands of the ```sh blocks in one section of README.md."""
    text = (ROOT / "README.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", body, re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def shell(command: str) -> subprocess.CompletedProcess[str]:
    """Run a command as a reader would, with this environment's `ccopt` tools on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PATH": path},
    )


def test_readme_extending_commands_run_as_written() -> None:
    commands = readme_commands("Extending ccopt")
    assert [c.split()[0] for c in commands] == ["ccopt", "ccopt-run"]
    for command in commands:
        assert f"--load-plugin {MARKER}" in command
    marked, checked = (shell(c) for c in commands)
    assert marked.returncode == 0 and marked.stderr == "", marked.stderr
    assert re.search(r'= prof\.marker "coll\.all_reduce" %y_sum : ', marked.stdout)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
    assert checked.stdout.splitlines()[1:] == [
        "pipeline 'prof-mark-collectives' (rtol by element type, atol scaled):",
        "  result0      max abs error 0.000e+00  max rel error 0.000e+00  ok",
        "PASS: 1 of 1 outputs agree",
    ]


def test_markers_strip_back_to_the_original() -> None:
    original = shell("ccopt examples/megatron_mlp.mlir")
    both = shell(
        f"ccopt --load-plugin {MARKER} examples/megatron_mlp.mlir "
        "-p prof-mark-collectives,prof-strip-markers"
    )
    assert both.returncode == 0, both.stderr
    assert both.stdout == original.stdout


def test_op_without_semantics_is_named_at_its_location(tmp_path: Path) -> None:
    """`ccopt` takes the plugin's op; `ccopt-run` says which op it cannot run, and where."""
    program = tmp_path / "opaque.mlir"
    program.write_text(OPAQUE)
    plugin = "--load-plugin test/plugins/unimplemented_op.py"
    assert shell(f"ccopt {plugin} {program}").returncode == 0
    result = shell(f"ccopt-run {plugin} {program}")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"ccopt-run: {program}:5:3: error: 'opaque.op' op has no semantics in the interpreter: "
        "no interpreter functions implement it (a plugin registers them with "
        "ccopt.interpreters.register_interpreter_functions)\n"
        "  %z = opaque.op %y : !t\n"
        "  ^\n"
    )


@pytest.mark.parametrize(
    "code, message",
    [
        ("x = (\n", "broken.py:1:5: error: cannot load plugin '{path}': '(' was never closed"),
        (
            "\nraise RuntimeError('boom')\n",
            "error: cannot load plugin '{path}': RuntimeError: boom ({path}:2)",
        ),
        ("import no_such_module_here\n", "No module named 'no_such_module_here'"),
    ],
    ids=["syntax", "raises", "imports"],
)
def test_a_broken_plugin_is_one_clear_error_in_both_tools(
    tmp_path: Path, code: str, message: str
) -> None:
    path = tmp_path / "broken.py"
    path.write_text(code)
    for tool in ("ccopt", "ccopt-run"):
        result = shell(f"{tool} --load-plugin {path} examples/sgd.mlir")
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert message.format(path=path) in result.stderr


def test_ccopt_sim_loads_plugins_for_its_pipeline() -> None:
    marked = shell(
        f"ccopt-sim --load-plugin {MARKER} examples/megatron_mlp.mlir -p prof-mark-collectives "
        "--machine dgx-a100 --json"
    )
    assert marked.returncode == 0, marked.stderr
    assert '"step_time_ns"' in marked.stdout
    without = shell(
        "ccopt-sim examples/megatron_mlp.mlir -p prof-mark-collectives --machine dgx-a100"
    )
    assert without.returncode == 1 and "a plugin's passes need --load-plugin" in without.stderr


def test_an_op_of_a_dialect_not_loaded_points_at_load_plugin(tmp_path: Path) -> None:
    program = tmp_path / "opaque.mlir"
    program.write_text(OPAQUE)
    result = shell(f"ccopt {program}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        f"{program}:5:8: error: unknown operation 'opaque.op' (no dialect 'opaque' is known: a "
        "plugin's dialect needs --load-plugin)"
    ) in result.stderr


def test_register_pass_takes_a_class_with_options_a_pipeline_can_write() -> None:
    from dataclasses import dataclass as _dataclass

    from xdsl.passes import ModulePass as _ModulePass

    from ccopt.diagnostics import CcoptError as _CcoptError
    from ccopt.passes import option as _option
    from ccopt.passes import register_pass as _register_pass

    @_dataclass(frozen=True)
    class ListOption(_ModulePass):
        name = "list-option-pass"
        shape: list = _option((), "a list")  # type: ignore[type-arg, assignment]

        def apply(self, ctx, op) -> None:  # noqa: ANN001
            pass

    with pytest.raises(_CcoptError, match=r"ListOption.shape is a list: an option is an int"):
        _register_pass(ListOption)

    @_dataclass(frozen=True)
    class Fine(_ModulePass):
        name = "fine-pass-instance"

        def apply(self, ctx, op) -> None:  # noqa: ANN001
            pass

    with pytest.raises(_CcoptError, match="register_pass takes the pass class"):
        _register_pass(Fine())  # type: ignore[arg-type]
