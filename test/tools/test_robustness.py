"""Inputs that once crashed ccopt with a Python traceback, output files that were not what a user
expects, and pass errors without a location: each is a regression test (issue 10)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import ROOT, SGD, assert_user_error, ccopt, ccopt_run, run_tool
from fuzz.fuzz_tools import PIPELINES

DECLARATION = """\
dtensor.mesh @tp [tp=4]
func.func @f(%x: !dtensor.tensor<8xf32, @tp[R]>)
"""


@pytest.mark.parametrize("sigil", ["!", "#", "^", "%"])
def test_a_file_of_one_sigil_is_a_located_error_in_both_tools(tmp_path: Path, sigil: str) -> None:
    bad = tmp_path / "sigil.mlir"
    bad.write_text(sigil)
    message = f"{bad}:1:1: error: expected an identifier after '{sigil}'"
    assert_user_error(ccopt(str(bad)), message)
    result = ccopt_run(str(bad))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "expected an identifier after" in result.stderr


@pytest.mark.parametrize("pipeline", sorted({p for p in PIPELINES} | {"slice-state"}))
def test_every_pass_accepts_a_module_of_declarations(tmp_path: Path, pipeline: str) -> None:
    """slice-state indexed the body of a declaration (IndexError); no pass may assume a body."""
    src = tmp_path / "declaration.mlir"
    src.write_text(DECLARATION)
    result = ccopt(str(src), "-p", pipeline)
    assert "Traceback" not in result.stderr
    if "plan-memory" in pipeline:  # nothing to plan: a clear refusal
        assert_user_error(result, "plan-memory: no kernel-level function")
    else:
        assert result.returncode == 0, result.stderr
        assert "func.func @f" in result.stdout


def test_a_refused_op_that_a_pass_created_points_at_the_line_it_came_from() -> None:
    """The reduce_scatter that split-all-reduce made from line 11's all_reduce is blamed on
    line 11, with the source line and a caret; pass-level errors name the file and the pass."""
    example = ROOT / "examples" / "fusion_legality.mlir"
    result = ccopt(
        str(example), "-p", 'split-all-reduce,reorder-elementwise,fuse-collective{group="g1.rs",o1}'
    )
    assert_user_error(
        result,
        f"{example}:11:3: error: 'coll.reduce_scatter' op cannot fuse g1.rs+o1",
        "  %g1 = coll.all_reduce sum %g over [dp]",
        "  ^",
    )
    assert_user_error(
        ccopt(str(example), "-p", "fuse-collective{group=zz}"),
        f"{example}: error: fuse-collective: no op is tagged zz",
    )


# --- -o --------------------------------------------------------------------------------------


def test_output_into_a_missing_folder_a_directory_or_proc_is_a_one_line_error(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "nowhere" / "out.mlir"
    assert_user_error(
        ccopt(str(SGD), "-o", str(missing)),
        f"error: cannot write '{missing}': folder '{missing.parent}' does not exist",
    )
    assert_user_error(
        ccopt(str(SGD), "-o", str(tmp_path)),
        f"error: cannot write '{tmp_path}': it is a directory",
    )
    result = ccopt(str(SGD), "-o", "/proc/x")
    assert_user_error(result, "error: cannot write '/proc/x'")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob(".*")), "no temporary file is left behind"


def test_output_files_respect_the_umask_and_keep_their_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    previous = os.umask(0o027)
    try:
        result = ccopt(str(SGD), "-o", str(out))
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    out.chmod(0o604)
    assert ccopt(str(SGD), "-o", str(out)).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o604


def test_output_through_a_symlink_writes_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target.mlir"
    target.write_text("old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert ccopt(str(SGD), "-o", str(link)).returncode == 0
    assert link.is_symlink()
    assert "dtensor.mesh" in target.read_text()


def test_output_to_a_fifo_writes_into_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    result = ccopt(str(SGD), "-o", str(fifo))
    out, _ = reader.communicate(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert "dtensor.mesh" in out


def test_output_to_dev_stdout_appends_to_a_redirected_stdout(tmp_path: Path) -> None:
    """`/dev/stdout` is the tool's own fd 1: opening it anew would truncate a redirected file
    (and renaming over it would detach the shell's redirection)."""
    log = tmp_path / "log.txt"
    script = (
        f"echo before; {sys.executable} -m ccopt.tools.ccopt_opt {SGD} -o /dev/stdout; echo after"
    )
    with open(log, "w") as f:
        subprocess.run(["bash", "-c", script], stdout=f, cwd=ROOT, check=True)
    text = log.read_text()
    assert text.startswith("before\n") and text.rstrip().endswith("after")
    assert "dtensor.mesh" in text


@pytest.mark.parametrize(
    "tool, args",
    [
        ("ccopt.tools.ccopt_opt", [str(SGD)]),
        ("ccopt.frontend.gpt", ["--model", "tiny", "--layers", "1", "--mesh", "dp=2"]),
    ],
)
def test_dash_as_output_is_stdout_not_a_file_named_dash(
    tmp_path: Path, tool: str, args: list[str]
) -> None:
    """`-o -` is standard output, as for mlir-opt (xdsl-opt writes a file named `-`; one was
    once committed to this repository by accident)."""
    result = run_tool(tool, *args, "-o", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "dtensor.mesh" in result.stdout
    assert not (tmp_path / "-").exists()


def test_dash_as_input_is_stdin(tmp_path: Path) -> None:
    """`ccopt -`, `ccopt-run -`: standard input, even where a file named `-` exists; errors name
    `<stdin>`."""
    (tmp_path / "-").write_text("not this file\n")
    text = SGD.read_text()
    opt = run_tool("ccopt.tools.ccopt_opt", "-", stdin=text, cwd=tmp_path)
    assert opt.returncode == 0 and "dtensor.mesh" in opt.stdout, opt.stderr
    run = run_tool("ccopt.tools.ccopt_run", "-", stdin=text, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("@sgd on @dp"), run.stderr
    bad = run_tool("ccopt.tools.ccopt_opt", "-", stdin="func.func @f(", cwd=tmp_path)
    assert_user_error(bad, "<stdin>:1:")


def test_a_byte_order_mark_is_not_part_of_the_program(tmp_path: Path) -> None:
    """Editors on Windows start UTF-8 files with U+FEFF; the lexer called it an unexpected
    character."""
    marked = tmp_path / "bom.mlir"
    marked.write_bytes(b"\xef\xbb\xbf" + SGD.read_bytes())
    result = ccopt(str(marked))
    assert result.returncode == 0 and "dtensor.mesh" in result.stdout, result.stderr
    piped = ccopt("-", stdin="\ufeff" + SGD.read_text())
    assert piped.returncode == 0, piped.stderr


def test_chakra_traces_cannot_go_to_stdout() -> None:
    assert_user_error(
        ccopt(str(SGD), "-t", "chakra", "-o", "-"),
        "-t chakra writes one file per rank: give -o DIR/PREFIX",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write read-only files")
def test_output_to_a_read_only_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "ro.mlir"
    out.write_text("keep\n")
    out.chmod(0o444)
    assert_user_error(ccopt(str(SGD), "-o", str(out)), "permission denied")
    assert out.read_text() == "keep\n"


@pytest.mark.parametrize("tool", ["ccopt.tools.ccopt_opt", "ccopt.tools.ccopt_run"])
def test_a_reader_that_stops_early_gets_no_traceback(tool: str) -> None:
    """`ccopt FILE | head -1`: the pipe closes before the tool writes."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the tool prints anything
    with os.fdopen(write, "w") as stdout:
        result = subprocess.run(
            [sys.executable, "-m", tool, str(SGD)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 141


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("module", "args", "tool"),
    [
        ("ccopt.tools.ccopt_opt", [SGD], "ccopt"),
        ("ccopt.tools.ccopt_opt", ["--help"], "ccopt"),
        ("ccopt.tools.ccopt_run", [SGD], "ccopt-run"),
        ("ccopt.tools.ccopt_plan", ["--help"], "ccopt-plan"),
    ],
)
def test_unwritable_stdout_is_a_one_line_error(module: str, args: list, tool: str) -> None:
    """`> /dev/full` (a full disk): the output error as `-o` reports it, not a traceback (nor,
    where argparse swallows the failed write of --help, a silent success)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", module, *map(str, args)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr.strip()
        == f"{tool}: error: cannot write standard output: No space left on device"
    )


def test_outputs_are_written_before_a_reader_of_the_report_goes(tmp_path: Path) -> None:
    """`ccopt-run P --outputs o.npz | head -1`: the report's reader closing the pipe early lost
    the .npz (written after the report)."""
    out = tmp_path / "o.npz"
    done = subprocess.Popen(
        [sys.executable, "-m", "ccopt.tools.ccopt_run", str(SGD), "--outputs", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert done.stdout is not None
    done.stdout.close()  # (before the run has printed anything)
    done.wait(timeout=120)
    assert out.exists()


def test_an_unwritable_output_is_refused_before_the_work(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "o.npz"
    result = ccopt_run(str(SGD), "--outputs", str(missing))
    assert_user_error(result, f"cannot write '{missing}': folder '{missing.parent}' does not exist")
    assert result.stdout == ""  # (nothing ran: the report was printed first)


def test_build_writes_no_output_file_and_a_bad_cache_is_named(tmp_path: Path) -> None:
    assert_user_error(
        ccopt(str(SGD), "--build", "-t", "cuda", "-o", str(tmp_path / "x.cu")),
        "--build prints the path of the module it built",
    )
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "ccopt.tools.ccopt_opt", str(SGD), "--build"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "CCOPT_CACHE": str(not_a_folder)},
    )
    assert_user_error(
        done, f"cannot use the build cache '{not_a_folder}' ($CCOPT_CACHE): it is not a folder"
    )
