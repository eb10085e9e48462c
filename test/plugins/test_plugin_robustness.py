"""What a researcher's plugin may get wrong, told as errors that say what and where: a name that
shadows a built-in pass or dialect or another plugin's pass, a pass without a name, code that
raises while a pipeline runs, an interpreter function that gives a numpy array for a tensor;
and what it may rightly do: `from __future__ import annotations` with options, a float option
written as a whole number, a plugin given as a Path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SGD = "examples/sgd.mlir"

HEADER = """from __future__ import annotations
from dataclasses import dataclass
from xdsl.passes import ModulePass
from ccopt.passes import option, register_pass
"""

SCALE = (
    HEADER
    + """
@register_pass
@dataclass(frozen=True)
class Scale(ModulePass):
    \"\"\"Holds float options; raises when factor is 13.\"\"\"

    name = "{name}"
    factor: float = option(1.0, "A factor.")
    factors: tuple[float, ...] = option((), "More factors.")

    def apply(self, ctx, op):
        if self.factor == 13:
            raise RuntimeError("unlucky factor")
        import sys
        print("factor", self.factor, self.factors, file=sys.stderr)
"""
)


def tool(*argv: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / argv[0]
    return subprocess.run(
        [str(exe), *argv[1:]], capture_output=True, text=True, cwd=ROOT, env=dict(os.environ)
    )


def plugin(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return str(path)


def test_future_annotations_and_whole_numbers_for_float_options(tmp_path: Path) -> None:
    """With `from __future__ import annotations` a plugin pass with options failed to load
    (dataclasses looked its module up in sys.modules); `factor=2` was "given (2,), expected
    float"."""
    path = plugin(tmp_path, "scale", SCALE.format(name="my-scale"))
    result = tool("ccopt", "--load-plugin", path, SGD, "-p", "my-scale{factor=2 factors=1,2.5}")
    assert result.returncode == 0, result.stderr
    assert "factor 2.0 (1.0, 2.5)" in result.stderr


def test_code_a_plugin_runs_in_a_pipeline_is_reported_at_its_line(tmp_path: Path) -> None:
    path = plugin(tmp_path, "scale", SCALE.format(name="my-scale"))
    line = next(i for i, t in enumerate(SCALE.splitlines(), 1) if "raise RuntimeError" in t)
    for argv in (
        ("ccopt", "--load-plugin", path, SGD, "-p", "my-scale{factor=13}"),
        ("ccopt-run", "--load-plugin", path, SGD, "--check-pipeline", "my-scale{factor=13}"),
    ):
        result = tool(*argv)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"plugin code failed: RuntimeError: unlucky factor ({path}:{line})" in result.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("cse", "'cse' is a built-in pass; choose another name"),
        ("overlap", "'overlap' is a built-in pass; choose another name"),
    ],
)
def test_a_plugin_cannot_replace_a_built_in_pass(tmp_path: Path, name: str, message: str) -> None:
    path = plugin(tmp_path, "shadow", SCALE.format(name=name))
    result = tool("ccopt", "--load-plugin", path, SGD, "-p", name)
    assert result.returncode == 1 and message in result.stderr, result.stderr


def test_two_plugins_cannot_take_one_pass_name(tmp_path: Path) -> None:
    first = plugin(tmp_path, "first", SCALE.format(name="my-scale"))
    second = plugin(tmp_path, "second", SCALE.format(name="my-scale"))
    result = tool("ccopt", "--load-plugin", first, "--load-plugin", second, SGD)
    assert result.returncode == 1, result.stderr
    assert "register_pass: 'my-scale' is already Scale (from ccopt_plugin_first)" in result.stderr


def test_the_same_plugin_twice_is_fine(tmp_path: Path) -> None:
    path = plugin(tmp_path, "scale", SCALE.format(name="my-scale"))
    result = tool("ccopt", "--load-plugin", path, "--load-plugin", path, SGD, "-p", "my-scale")
    assert result.returncode == 0, result.stderr


def test_a_pass_without_a_name_is_refused(tmp_path: Path) -> None:
    text = SCALE.format(name="x").replace('    name = "x"\n', "")
    path = plugin(tmp_path, "nameless", text)
    result = tool("ccopt", "--load-plugin", path, SGD)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "register_pass: 'Scale' has no `name`" in result.stderr


def test_a_plugin_cannot_replace_a_dialect(tmp_path: Path) -> None:
    text = """from xdsl.ir import Dialect
from ccopt.dialects import register_dialect
register_dialect("dtensor", lambda: Dialect("dtensor", []))
"""
    result = tool("ccopt", "--load-plugin", plugin(tmp_path, "dialect", text), SGD)
    assert result.returncode == 1, result.stderr
    assert "'dtensor' is a dialect ccopt already has" in result.stderr


def test_load_plugin_takes_a_path(tmp_path: Path) -> None:
    from ccopt.passes import PASSES, load_plugin

    path = Path(plugin(tmp_path, "pathplugin", SCALE.format(name="path-scale")))
    try:
        load_plugin(path)
        assert "path-scale" in PASSES
    finally:
        PASSES.pop("path-scale", None)
        sys.modules.pop("ccopt_plugin_pathplugin", None)


ARRAY_RESULT = """import numpy as np
from xdsl.interpreter import InterpreterFunctions, impl, register_impls
from ccopt.interpreters import register_interpreter_functions
import importlib.util, pathlib
spec = importlib.util.spec_from_file_location(
    "opaque_dialect", pathlib.Path({dialect!r}))
dialect = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dialect)


@register_interpreter_functions
@register_impls
class ArrayResult(InterpreterFunctions):
    @impl(dialect.OpaqueOp)
    def run_opaque(self, interpreter, op, args):
        return (np.zeros(3),)
"""


def test_an_interpreter_function_must_give_a_dist_tensor(tmp_path: Path) -> None:
    """A numpy array for a `!dtensor.tensor` result broke the next op with "'numpy.ndarray'
    object has no attribute 'mesh'", inside ccopt."""
    dialect = ROOT / "test" / "plugins" / "unimplemented_op.py"
    path = plugin(tmp_path, "array_result", ARRAY_RESULT.format(dialect=str(dialect)))
    program = tmp_path / "opaque.mlir"
    program.write_text(
        "dtensor.mesh @m [dp=2]\n"
        "func.func @f(%x: !dtensor.tensor<4xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]> {\n"
        "  %y = opaque.op %x : !dtensor.tensor<4xf32, @m[R]>\n"
        "  %z = dtensor.add %y, %x : (!dtensor.tensor<4xf32, @m[R]>, "
        "!dtensor.tensor<4xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]>\n"
        "  func.return %z : !dtensor.tensor<4xf32, @m[R]>\n}\n"
    )
    result = tool("ccopt-run", "--load-plugin", path, str(program))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "its interpreter function gave a ndarray for result #0" in result.stderr


OPAQUE_ONLY = (
    "dtensor.mesh @m [dp=2]\n"
    "func.func @f(%x: !dtensor.tensor<4xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]> {\n"
    "  %y = opaque.op %x : !dtensor.tensor<4xf32, @m[R]>\n"
    "  func.return %y : !dtensor.tensor<4xf32, @m[R]>\n}\n"
)
"""A program of one plugin op (test/plugins/unimplemented_op.py's), at line 3."""


def test_an_interpreter_function_that_raises_is_reported_at_the_plugin_line(
    tmp_path: Path,
) -> None:
    """The README promises the plugin's line for what its code raises while the interpreter
    runs; an interpreter function's exception was a traceback through ccopt and xDSL."""
    dialect = ROOT / "test" / "plugins" / "unimplemented_op.py"
    text = ARRAY_RESULT.format(dialect=str(dialect)).replace(
        "return (np.zeros(3),)", 'raise ValueError("boom in semantics")'
    )
    path = plugin(tmp_path, "raising", text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "boom in semantics" in t)
    program = tmp_path / "opaque.mlir"
    program.write_text(OPAQUE_ONLY)
    for argv in (
        ("ccopt-run", "--load-plugin", path, str(program)),
        ("ccopt-run", "--load-plugin", path, str(program), "--check-pipeline", "cse"),
    ):
        result = tool(*argv)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"{program}:3:" in result.stderr
        assert f"plugin code failed: ValueError: boom in semantics ({path}:{line})" in (
            result.stderr
        )


POST_INIT = (
    HEADER
    + """
@register_pass
@dataclass(frozen=True)
class Checked(ModulePass):
    name = "my-checked"
    k: int = option(1, "Must not be 7.")

    def __post_init__(self):
        if self.k == 7:
            raise TypeError("seven")
        assert self.k != 8, "eight"

    def apply(self, ctx, op):
        pass
"""
)


@pytest.mark.parametrize(("k", "message"), [(7, "TypeError: seven"), (8, "AssertionError: eight")])
def test_a_pass_whose_constructor_raises_is_reported_at_the_plugin_line(
    tmp_path: Path, k: int, message: str
) -> None:
    """A ValueError from `__post_init__` was an invalid pipeline; any other exception (a
    TypeError, an assert) was a traceback."""
    path = plugin(tmp_path, "checked", POST_INIT)
    for argv in (
        ("ccopt", "--load-plugin", path, SGD, "-p", f"my-checked{{k={k}}}"),
        ("ccopt-run", "--load-plugin", path, SGD, "--check-pipeline", f"my-checked{{k={k}}}"),
    ):
        result = tool(*argv)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"plugin code failed: {message} ({path}:" in result.stderr


def test_two_plugins_cannot_take_one_dialect_name(tmp_path: Path) -> None:
    """The last one had silently won: the first plugin's ops were unknown."""
    text = """from xdsl.ir import Dialect
from ccopt.dialects import register_dialect
register_dialect("myq", lambda: Dialect("myq", []))
"""
    first, second = plugin(tmp_path, "first", text), plugin(tmp_path, "second", text)
    result = tool("ccopt", "--load-plugin", first, "--load-plugin", second, SGD)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "register_dialect: 'myq' is already a dialect of ccopt_plugin_first" in result.stderr
    again = tool("ccopt", "--load-plugin", first, "--load-plugin", first, SGD)
    assert again.returncode == 0, again.stderr


def test_a_plugin_op_that_reaches_convert_to_kernel_is_named_as_a_plugin_op(
    tmp_path: Path,
) -> None:
    """Lowering has no plugin hook: the refusal says what to do instead."""
    dialect = str(ROOT / "test" / "plugins" / "unimplemented_op.py")
    program = tmp_path / "opaque.mlir"
    program.write_text(OPAQUE_ONLY)
    result = tool("ccopt", "--load-plugin", dialect, str(program), "-p", "convert-to-kernel")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert (
        f"{program}:3:3: error: 'opaque.op' op has no lowering to the kernel level: ops of a "
        in (result.stderr)
    )
    assert "a pass of the plugin rewrites them into ccopt's ops" in result.stderr


def test_help_reads_an_option_meaning_without_a_full_stop_apart_from_its_default(
    tmp_path: Path,
) -> None:
    text = POST_INIT.replace('option(1, "Must not be 7.")', 'option(1, "how many")')
    result = tool("ccopt", "--load-plugin", plugin(tmp_path, "helped", text), "--help")
    assert result.returncode == 0, result.stderr
    assert "how many. Default: 1." in " ".join(result.stdout.split())


BREAKER = (
    HEADER
    + """from xdsl.dialects.builtin import IntegerAttr, i64


@register_pass
@dataclass(frozen=True)
class Breaker(ModulePass):
    \"\"\"Leaves IR that does not verify.\"\"\"

    name = "my-breaker"

    def apply(self, ctx, op):
        for f in op.walk():
            if f.name == "func.func":
                f.attributes["kernel.workspace"] = IntegerAttr(-1, i64)
"""
)


def test_ir_that_does_not_verify_after_a_pass_names_the_pass(tmp_path: Path) -> None:
    """The verifier's error points at the op; which pass left it was not said (a researcher's
    new pass in a long pipeline)."""
    path = plugin(tmp_path, "breaker", BREAKER)
    for argv in (
        ("ccopt", "--load-plugin", path, SGD, "-p", "cse,my-breaker"),
        ("ccopt-run", "--load-plugin", path, SGD, "--check-pipeline", "my-breaker"),
        ("ccopt-sim", "--load-plugin", path, SGD, "-p", "my-breaker", "--machine", "dgx-a100"),
    ):
        result = tool(*argv)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert "'func.func' op kernel.workspace must be a non-negative integer" in result.stderr
        assert result.stderr.rstrip().endswith(
            "note: the IR does not verify after pass 'my-breaker'"
        )
