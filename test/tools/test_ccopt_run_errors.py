"""`ccopt-run` on inputs that `ccopt` accepts or that are not programs at all: each one runs, or
is one located diagnostic (the source line and a caret where there is a source) and a non-zero
exit - never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_support import ROOT, ccopt_run

import ccopt
from ccopt.diagnostics import CcoptError


def error_of(result: subprocess.CompletedProcess[str], status: int = 1) -> str:
    """The diagnostic of a run that failed as a user error (no traceback, nothing on stdout)."""
    assert result.returncode == status, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return result.stderr


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- programs that ccopt accepts -----------------------------------------------------------------

BRANCHES = """\
!t = !dtensor.tensor<6xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=3]
func.func @branches(%x: !t) -> !t {
  %c = arith.constant true
  cf.cond_br %c, ^negate(%x : !t), ^keep(%x : !t)
^negate(%a: !t):
  %n = dtensor.neg %a : !t
  cf.br ^keep(%n : !t)
^keep(%b: !t):
  func.return %b : !t
}
"""


def test_multi_block_function_runs(tmp_path: Path) -> None:
    """Branches between blocks are xDSL's cf semantics: the taken branch decides the value."""
    x = np.arange(6, dtype=np.float32)
    result = ccopt.run(BRANCHES, {"x": x})
    np.testing.assert_array_equal(result.outputs["result0"], -x)
    run = ccopt_run(write(tmp_path, "branches.mlir", BRANCHES))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "@branches on @dp [dp=3] (1 step)"


FUTURE = """\
!t = !dtensor.tensor<4xf32, @dp[R]>
dtensor.mesh @dp [dp=2]
func.func @f(%x: !t) -> !sched.future<!t> {
  %tok, %fut = sched.execute stream 1 ins(%x) : (!t) -> !sched.future<!t> {
  ^bb0(%a: !t):
    sched.yield %a : !t
  }
  func.return %fut : !sched.future<!t>
}
"""


def test_function_returning_a_future_is_refused_at_the_function(tmp_path: Path) -> None:
    path = write(tmp_path, "future.mlir", FUTURE)
    assert error_of(ccopt_run(path)) == (
        f"ccopt-run: {path}:3:1: error: 'func.func' op result #0 of @f has type "
        "!sched.future<!dtensor.tensor<4xf32, @dp[R]>>; ccopt-run runs functions that take and "
        "return !dtensor.tensor values\n"
        "func.func @f(%x: !t) -> !sched.future<!t> {\n"
        "^\n"
    )


UNDECLARED_MESH = """\
func.func @f(%x: !dtensor.tensor<4xf32, @nowhere[R]>) -> !dtensor.tensor<4xf32, @nowhere[R]> {
  func.return %x : !dtensor.tensor<4xf32, @nowhere[R]>
}
"""


def test_undeclared_mesh_is_a_located_error(tmp_path: Path) -> None:
    """Whoever refuses it (the verifier, or the runner for a module it is handed unverified)
    names the mesh at the function's line."""
    from ccopt.diagnostics import OpError, SourceText
    from ccopt.ir import make_context, parse_module
    from ccopt.runner import entry_function

    path = write(tmp_path, "nomesh.mlir", UNDECLARED_MESH)
    stderr = error_of(ccopt_run(path))
    assert stderr.startswith(f"ccopt-run: {path}:1:"), stderr
    assert "@nowhere" in stderr

    module = parse_module(make_context(), SourceText("nomesh.mlir", UNDECLARED_MESH))
    with pytest.raises(OpError) as e:
        entry_function(module, None, {})
    assert e.value.render() == (
        "nomesh.mlir:1:1: error: 'func.func' op argument 'x' of @f is on mesh @nowhere, which "
        "the program does not declare"
    )


def test_errors_at_an_op_show_its_line_and_a_caret(tmp_path: Path) -> None:
    """A parse error and an error while an op runs both point into the source."""
    path = write(
        tmp_path, "typo.mlir", "dtensor.mesh @dp [dp=2]\nfunc.func @f() {\n  dtensor.bogus\n}\n"
    )
    assert error_of(ccopt_run(path)) == (
        f"ccopt-run: {path}:3:3: error: unknown operation 'dtensor.bogus'\n  dtensor.bogus\n  ^\n"
    )


# --- paths are paths -------------------------------------------------------------------------


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.mlir"
    path.write_bytes("// caf\xe9\ndtensor.mesh @dp [dp=2]\n".encode("latin-1"))
    assert error_of(ccopt_run(path)) == f"ccopt-run: error: input file '{path}' is not UTF-8 text\n"


def test_directory_is_not_parsed_as_ir(tmp_path: Path) -> None:
    assert error_of(ccopt_run(tmp_path)) == (
        f"ccopt-run: error: cannot read input file '{tmp_path}': Is a directory\n"
    )


@pytest.mark.parametrize("name", ["/dev/null", "empty.mlir", "comments.mlir"])
def test_empty_program_has_nothing_to_run(tmp_path: Path, name: str) -> None:
    """An empty file (or one of comments) is an empty module, as in MLIR: nothing to run."""
    (tmp_path / "empty.mlir").write_text("")
    (tmp_path / "comments.mlir").write_text("// nothing here\n")
    path = name if name.startswith("/") else tmp_path / name
    assert (
        error_of(ccopt_run(path))
        == f"ccopt-run: {path}: error: the program defines no function to run\n"
    )


def test_a_file_named_like_ir_is_still_a_path(tmp_path: Path) -> None:
    """The command line's program is always a file: a missing one is reported missing."""
    assert error_of(ccopt_run("dtensor.mesh @dp [dp=2]")) == (
        "ccopt-run: error: cannot read input file 'dtensor.mesh @dp [dp=2]': No such file or "
        "directory\n"
    )


# --- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--rtol", "-1", "a finite number >= 0"),
        ("--rtol", "inf", "a finite number >= 0"),
        ("--atol", "-0.5", "a finite number >= 0"),
        ("--atol", "nan", "a finite number >= 0"),
        ("--steps", "0", "an integer >= 1"),
        ("--steps", "1.5", "an integer >= 1"),
        ("--seed", "-1", "an integer >= 0"),
    ],
)
def test_out_of_range_options_are_refused(option: str, value: str, expected: str) -> None:
    result = ccopt_run(ROOT / "examples" / "sgd.mlir", f"{option}={value}")
    stderr = error_of(result, status=2)
    assert stderr.endswith(
        f"ccopt-run: error: argument {option}: expected {expected}, got '{value}'\n"
    ), stderr


def test_both_tools_read_input_files_alike(tmp_path: Path) -> None:
    """`ccopt` reports the same file problems in the same words, standard input included."""
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\n")
    ccopt = [sys.executable, "-m", "ccopt.tools.ccopt_opt"]
    from_file = subprocess.run([*ccopt, str(path)], capture_output=True, text=True)
    assert error_of(from_file) == f"ccopt: error: input file '{path}' is not UTF-8 text\n"
    from_stdin = subprocess.run(ccopt, input=b"// caf\xe9\n", capture_output=True)
    assert from_stdin.returncode == 1
    assert from_stdin.stderr == b"ccopt: error: input file '<stdin>' is not UTF-8 text\n"


def test_meshes_and_values_too_large_to_interpret_are_refused_before_allocating(
    tmp_path: Path,
) -> None:
    """A million ranks (or petabytes on two) would hang or die in numpy: a located refusal."""
    sgd = ROOT / "examples" / "sgd.mlir"
    message = error_of(ccopt_run(sgd, "--mesh", "dp=1000000"))
    assert "mesh @dp [dp=1000000] has 1000000 ranks; the interpreter runs at most 4096" in message
    huge = "100000x100000x100000xf32, @m[R]"
    path = write(
        tmp_path,
        "huge.mlir",
        f"dtensor.mesh @m [dp=2]\nfunc.func @f(%x: !dtensor.tensor<{huge}>) -> "
        f"!dtensor.tensor<{huge}> {{\n  func.return %x : !dtensor.tensor<{huge}>\n}}\n",
    )
    message = error_of(ccopt_run(path))
    assert f"{path}:2:1: error: 'func.func' op argument 'x' of @f" in message
    assert "more than half of this machine's memory" in message


# --- programs too large to interpret -------------------------------------------------------------

GROWS = """\
!a = !dtensor.tensor<300000x1xf32, @tp[R]>
!b = !dtensor.tensor<1x300000xf32, @tp[R]>
!big = !dtensor.tensor<300000x300000xf32, @tp[R]>
!sum = !dtensor.tensor<f32, @tp[R]>
dtensor.mesh @tp [tp=4]
func.func @grows(%a: !a, %b: !b) -> !sum {
  %outer = dtensor.matmul %a, %b : (!a, !b) -> !big
  %s = dtensor.reduce sum %outer dims [0, 1] : !big -> !sum
  func.return %s : !sum
}
"""


def test_a_program_whose_values_outgrow_memory_is_refused_before_its_inputs(
    tmp_path: Path,
) -> None:
    """Small arguments and result, but an outer product of 300000^2 f32 replicated on 4 ranks
    (1.3 TiB): refused at the function, with what it holds and what there is, instead of
    drawing inputs and paging for minutes (or dying in numpy)."""
    path = write(tmp_path, "grows.mlir", GROWS)
    message = error_of(ccopt_run(path))
    assert f"{path}:6:1: error: 'func.func' op @grows holds about 1341.1 GiB" in message
    assert "of tensors on 4 ranks" in message and "available now" in message
    checked = error_of(ccopt_run(path, "--check-pipeline", "cse,dce"))
    assert "@grows holds about 1341.1 GiB" in checked


def test_the_memory_limit_is_an_option(tmp_path: Path) -> None:
    """`--max-memory GIB` sets the limit (0: none); the same for the Python API in bytes."""
    small = ROOT / "examples" / "megatron_mlp.mlir"  # 240 KiB on its 8 ranks
    message = error_of(ccopt_run(small, "--max-memory", "0.0001"))
    assert "@mlp holds about 240.0 KiB of tensors on 8 ranks" in message
    assert "more than the limit of 104.9 KiB" in message
    assert ccopt_run(small, "--max-memory", "0").returncode == 0
    assert ccopt_run(small, "--max-memory", "0.001").returncode == 0
    with pytest.raises(CcoptError, match="more than the limit of 1000 bytes"):
        ccopt.run(small, memory_limit=1000)
    assert ccopt.check_pipeline(small, "cse,dce", memory_limit=0).ok


def test_held_bytes_counts_every_value_on_every_rank() -> None:
    """An argument and a result of 8x16 f32 split in 4 blocks: 2x16x4 bytes on each of 4 ranks,
    twice; a replicated one counts its whole copy on every rank."""
    from ccopt.program import bind_mesh, find_entry, load_program
    from ccopt.runner import held_bytes

    for placement, expected in (("S(0)", 2 * 128 * 4), ("R", 2 * 512 * 4)):
        t = f"!dtensor.tensor<8x16xf32, @tp[{placement}]>"
        text = (
            f"dtensor.mesh @tp [tp=4]\nfunc.func @f(%x: {t}) -> {t} {{\n"
            f"  %y = dtensor.relu %x : {t}\n  func.return %y : {t}\n}}\n"
        )
        module = load_program(text)
        assert held_bytes(find_entry(module, None), bind_mesh(module, None)) == expected
