"""The `ccopt` driver: options, located diagnostics on bad input, exit codes, atomic output."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from cli_support import ROOT, SGD, assert_user_error, ccopt

EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_examples_verify_and_round_trip_in_generic_form(example: Path) -> None:
    custom = ccopt(str(example))
    assert custom.returncode == 0, custom.stderr
    generic = ccopt(str(example), "--print-op-generic")
    assert generic.returncode == 0, generic.stderr
    assert '"dtensor.' in generic.stdout or '"coll.' in generic.stdout
    again = ccopt(stdin=generic.stdout)
    assert again.returncode == 0, again.stderr
    assert again.stdout == custom.stdout


def test_garbage_file_gives_a_located_parse_error(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.mlir"
    bad.write_text("dtensor.mesh @m [tp=2]\nthis is not IR %%\n")
    assert_user_error(
        ccopt(str(bad)), f"{bad}:2:1: error: unknown operation 'this'", "this is not IR"
    )


def test_placement_error_is_located_at_the_op(tmp_path: Path) -> None:
    text = SGD.read_text().replace("coll.all_reduce sum %g", "coll.all_reduce max %g")
    bad = tmp_path / "sgd.mlir"
    bad.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "coll.all_reduce" in t)
    assert_user_error(
        ccopt(str(bad)),
        f"{bad}:{line}:3: error: 'coll.all_reduce' op on mesh axis 'dp': reduces with max but operand #0 is P(sum)",
    )


def test_unknown_op(tmp_path: Path) -> None:
    bad = tmp_path / "unknown.mlir"
    bad.write_text("dtensor.mesh @m [tp=2]\ndtensor.frobnicate\n")
    assert_user_error(ccopt(str(bad)), f"{bad}:2:1: error: unknown operation 'dtensor.frobnicate'")


def test_missing_file() -> None:
    assert_user_error(ccopt("no/such/file.mlir"), "cannot read input file 'no/such/file.mlir'")


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("no-such-pass", "Unrecognized passes: ['no-such-pass']"),
        ("cse{bogus=1}", "cse: unknown option 'bogus' (options: none)"),
        ("cse{", "Expected argument name"),
        ("split-all-reduce,", "a pass name must follow the last ','"),
        ("cse, ", "a pass name must follow the last ','"),
        # an option given twice: xDSL kept the last value, silently
        ("overlap{chunks=2 chunks=3}", "overlap is given its option 'chunks' twice"),
        ("inline{max-ops=3 max_ops=4}", "inline is given its option 'max_ops' twice"),
    ],
)
def test_bad_pass_pipeline(pipeline: str, message: str) -> None:
    assert_user_error(ccopt(str(SGD), "-p", pipeline), "invalid pass pipeline", message)


def test_option_values_may_have_exponents() -> None:
    """`memory=7e-7` reads as mlir-opt reads it, the number 0.0000007 (xDSL's lexer took it for a
    word, which no float option takes); a quoted value is left as written."""
    from ccopt.passes import _decimal_exponents

    open_mlp = str(ROOT / "examples" / "open_mlp.mlir")
    with_exponent = ccopt(open_mlp, "-p", "auto-shard{strategy=ilp memory=7e-7}")
    decimal = ccopt(open_mlp, "-p", "auto-shard{strategy=ilp memory=0.0000007}")
    assert with_exponent.returncode == 0, with_exponent.stderr
    assert with_exponent.stdout == decimal.stdout
    assert _decimal_exponents('t{a=1E3,2.5e-1 b="x/1e5" c=2}') == 't{a=1000.0,0.25 b="x/1e5" c=2}'


def test_overlap_says_when_it_makes_fewer_chunks_than_requested() -> None:
    """`overlap{chunks=99999999}` on 4 rows makes 4 chunks: a located warning (with the source
    line, as MLIR prints one) says so, and the compilation succeeds."""
    path = ROOT / "examples" / "megatron_row_parallel.mlir"
    result = ccopt(str(path), "-p", "overlap{chunks=99999999}")
    assert result.returncode == 0, result.stderr
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "coll.all_reduce" in t)
    warning, source, caret = result.stderr.splitlines()
    assert warning == (
        f"{path}:{line}:3: warning: 'coll.all_reduce' op overlap made 4 chunks, not the 99999999 "
        "requested: the chunked dimension 0 of the matmul output has 4 elements, cut into blocks of 1"
        "; overlap cuts the outermost dimension it can (contiguous chunks)"
    )
    aligned = ccopt(str(path), "-p", "overlap{chunks=3}")  # (4 rows: ceil-div blocks of 2)
    assert "has 4 elements, cut into blocks of 2 (ceil(4/3) = 2 elements a block)" in aligned.stderr
    assert "coll.all_reduce" in source and caret == "  ^"
    assert result.stdout.count("sched.execute") == 4


def test_overlap_warns_library_users_too() -> None:
    from ccopt.diagnostics import OpWarning
    from ccopt.runner import check_pipeline

    path = ROOT / "examples" / "megatron_row_parallel.mlir"
    with pytest.warns(OpWarning, match=r"megatron_row_parallel.mlir:\d+:3: warning: .* 4 chunks"):
        assert check_pipeline(path, "overlap{chunks=99999999}").ok
    with warnings.catch_warnings():
        warnings.simplefilter("error", OpWarning)
        assert check_pipeline(path, "overlap{chunks=4}").ok  # as many as asked: no warning


@pytest.mark.parametrize(
    ("dim", "why"),
    [(7, "dimension 7 is out of range for operand #0 of rank 3"), (0, "needs the size divisible")],
)
def test_split_all_reduce_says_why_the_dimension_asked_for_was_not_split(
    dim: int, why: str
) -> None:
    """`split-all-reduce{dim=7}` on a rank-3 value left the all_reduce as it was, silently (the
    default dimension, which the pass chooses, still skips quietly where none can be split)."""
    path = ROOT / "examples" / "megatron_mlp.mlir"
    result = ccopt(str(path), "-p", f"split-all-reduce{{dim={dim}}}")
    assert result.returncode == 0 and "coll.all_reduce" in result.stdout, result.stderr
    assert f"warning: 'coll.all_reduce' op not split along dim={dim}: " in result.stderr
    assert why in result.stderr
    quiet = ccopt(str(ROOT / "examples" / "megatron_row_parallel.mlir"), "-p", "split-all-reduce")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_cuda_target_says_when_an_algorithm_hint_is_not_applied(tmp_path: Path) -> None:
    """`-t cuda` emits an NCCL call for a collective whose own `algorithm tree` no pass applied
    (lower-collectives does): NCCL chooses its algorithm, and a located warning says so once,
    at the hint's source line (the warnings of the target's own lowering were Python's)."""
    text = (ROOT / "examples" / "megatron_mlp.mlir").read_text()
    path = tmp_path / "tree.mlir"
    path.write_text(text.replace("sum %y over [tp] :", "sum %y over [tp] algorithm tree :"))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "algorithm tree" in t)
    result = ccopt(path, "-t", "cuda")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"{path}:{line}:3: warning: 'kernel.nccl_all_reduce' op its tree algorithm hint is not "
        "applied: NCCL chooses its own algorithm; run lower-collectives before convert-to-kernel "
        "to run the library's"
    )
    assert result.stderr.count("warning:") == 1
    lowered = ccopt(path, "-p", "lower-collectives", "-t", "cuda")
    assert lowered.returncode == 0 and lowered.stderr == "", lowered.stderr


def test_tf32_on_a_program_without_f32_gemms_says_it_does_nothing(tmp_path: Path) -> None:
    """`convert-to-kernel{tf32=true}` on a bf16 model marked nothing, silently."""
    path = tmp_path / "bf16.mlir"
    path.write_text((ROOT / "examples" / "megatron_mlp.mlir").read_text().replace("f32", "bf16"))
    result = ccopt(path, "-p", "convert-to-kernel{tf32=true}")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("warning:") == 1
    assert (
        "warning: 'kernel.gemm' op tf32=true has no effect: no gemm of the program is f32 "
        "(this one is bf16)" in result.stderr
    )
    f32 = ccopt(ROOT / "examples" / "megatron_mlp.mlir", "-p", "convert-to-kernel{tf32=true}")
    assert f32.returncode == 0 and f32.stderr == "" and " tf32 " in f32.stdout


def test_the_same_option_in_two_passes_is_not_repeated() -> None:
    pipeline = 'overlap{chunks=2},overlap{chunks=3},lower-collectives{axes="tp:ring,dp:tree"}'
    result = ccopt(ROOT / "examples" / "megatron_mlp.mlir", "-p", pipeline)
    assert result.returncode == 0, result.stderr


def test_tags_a_pass_derived_are_named_without_quotes() -> None:
    """split-all-reduce tags its halves `g.rs` and `g.ag`; a later pass takes them as written
    (xDSL's option tokens have no dots: they needed quotes), and numbers stay numbers."""
    pipeline = "split-all-reduce{tags=g},lower-collectives{tags=g.ag,g.rs}"
    text = SGD.read_text().replace("over [dp] :", 'over [dp] {tag = "g"} :', 1)
    result = ccopt("-", "-p", pipeline, stdin=text)
    assert result.returncode == 0, result.stderr
    assert "@allgather_ring_4" in result.stdout and "@reduce_scatter_ring_4" in result.stdout
    from ccopt.passes import parse_pipeline

    (auto_shard,) = parse_pipeline("auto-shard{memory=1.5 time-limit=2.5}").passes
    assert auto_shard.memory == 1.5 and auto_shard.time_limit == 2.5  # type: ignore[attr-defined]


def test_the_runner_reads_pipelines_as_ccopt_does() -> None:
    """`ccopt.check_pipeline` and `ccopt-run --check-pipeline` reject what `ccopt -p` rejects
    (xDSL's parser alone ignores a trailing comma)."""
    from ccopt.diagnostics import CcoptError
    from ccopt.runner import check_pipeline

    with pytest.raises(CcoptError, match="a pass name must follow the last ','"):
        check_pipeline(SGD, "split-all-reduce,")


def test_unknown_target() -> None:
    assert_user_error(ccopt(str(SGD), "-t", "nope"), "unknown target 'nope'")


@pytest.mark.parametrize(
    "target, message",
    [
        ("cuda{x=1}", "cuda: unknown option 'x' (options: entry, inline)"),
        ("pybind11{x=1}", "pybind11: unknown option 'x'"),
        ("msccl-xml{x=1}", "(options: algorithm)"),
        ("mlir{x=1}", "mlir: unknown option 'x'"),
        ("chakra{size=abc}", "chakra: option 'size' takes an integer, got abc"),
        ("cuda{inline}", "cuda: option 'inline' takes true or false, got nothing"),
        ("cuda{", "Expected argument name here"),
    ],
)
def test_bad_target_options_are_refused_before_reading_the_input(
    tmp_path: Path, target: str, message: str
) -> None:
    """xDSL checks `-t`'s options only when the output is due, with a ValueError traceback."""
    result = ccopt(str(tmp_path / "missing.mlir"), "-t", target)
    assert_user_error(result, f"invalid target '{target}'", message)


LOWERING = "inline,convert-to-kernel,plan-memory"


@pytest.mark.parametrize("target", ["cuda", "pybind11"])
@pytest.mark.parametrize(
    "example, pipeline",
    [("sgd", ""), ("megatron_mlp", "split-all-reduce,fuse-elementwise,overlap{chunks=2}")],
)
def test_cuda_targets_lower_the_program_themselves(
    target: str, example: str, pipeline: str
) -> None:
    """`-t cuda` and `-t pybind11` lower as `--build` does: the same output as lowering
    explicitly, and lowering twice changes nothing."""
    path = str(ROOT / "examples" / f"{example}.mlir")
    implicit = ccopt(path, "-p", pipeline, "-t", target)
    assert implicit.returncode == 0, implicit.stderr
    explicit = ccopt(path, "-p", ",".join(p for p in (pipeline, LOWERING) if p), "-t", target)
    assert explicit.returncode == 0, explicit.stderr
    assert implicit.stdout == explicit.stdout
    assert "ccopt_" in implicit.stdout


def test_help_lists_every_pass_with_its_options() -> None:
    from ccopt.passes.catalog import CATALOG

    result = ccopt("--help")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    for name, info in CATALOG.items():
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {name} "))
        assert lines[at].split()[1:3] == info.summary.split()[:2], f"pass {name} has no summary"
        listed = [
            line.split()[0] for line in lines[at + 1 :] if line.startswith("    ") and "=<" in line
        ]
        wanted = [f"{o.name.replace('_', '-')}=<{o.kind}>" for o in info.options]
        assert listed[: len(wanted)] == wanted
    assert "Number of chunks" in result.stdout and "Default: 4." in result.stdout


def test_help_lists_a_plugin_pass() -> None:
    result = ccopt("--load-plugin", "test/plugins/wrong_pass.py", "--help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  test-wrong-scale "))
    entry = " ".join(" ".join(line.split()) for line in lines[at:])  # unwrapped
    assert entry.startswith("test-wrong-scale Test only: multiplies every dtensor.scale factor")
    assert "by=<float> What every scale factor is multiplied by. Default: 2.0." in entry


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_names_ccopt_and_xdsl(flag: str) -> None:
    from importlib.metadata import version

    result = ccopt(flag)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ccopt {version('ccopt')} (xDSL {version('xdsl')})\n"


HELP_PROBE = """
import sys
sys.argv = ["ccopt", "--help"]
from ccopt.tools.ccopt_opt import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write(repr(sorted(m for m in sys.modules if m.startswith(("ccopt.passes.", "ccopt.dialects.")))))
"""


def test_help_imports_no_pass_or_dialect_module() -> None:
    """`--help` lists passes from the generated catalog, so it starts as fast as xdsl-opt's
    (bench/startup.py measures it)."""
    result = subprocess.run([sys.executable, "-c", HELP_PROBE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("['ccopt.passes.catalog', 'ccopt.passes.options']"), (
        result.stderr
    )


def test_output_file_is_written_only_on_success(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    assert ccopt(str(SGD), "-o", str(out)).returncode == 0
    assert "coll.all_reduce" in out.read_text()
    bad = tmp_path / "bad.mlir"
    bad.write_text("garbage")
    out.write_text("previous")
    assert ccopt(str(bad), "-o", str(out)).returncode == 1
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.mlir")] == []


def test_split_input_file_reports_each_chunk_at_its_own_line(tmp_path: Path) -> None:
    text = "dtensor.mesh @m [tp=2]\n// -----\ndtensor.mesh @m [tp=0]\n// -----\ndtensor.mesh @n [a=1, a=2]\n"
    src = tmp_path / "chunks.mlir"
    src.write_text(text)
    result = ccopt(str(src), "--split-input-file", "--verify-diagnostics")
    assert result.returncode == 0
    chunks = result.stdout.split("// -----\n")
    assert len(chunks) == 3
    assert "dtensor.mesh @m [tp=2]" in chunks[0]
    assert f"{src}:3:1: error: 'dtensor.mesh' op mesh axis 'tp' has size 0" in chunks[1]
    assert f"{src}:5:1: error: 'dtensor.mesh' op mesh axis names must be unique" in chunks[2]


LAZY_PROBE = """
import sys
sys.argv = ["ccopt", sys.argv[1]]
from ccopt.tools.ccopt_opt import main
main()
heavy = [m for m in ("numpy", "xdsl.dialects.func", "ccopt.dialects.dtensor", "ccopt.passes.overlap")
         if m in sys.modules]
sys.stderr.write(repr(heavy))
"""


def test_start_up_stays_lazy(tmp_path: Path) -> None:
    """An empty module loads no dialect, pass or numpy: what a program does not use costs
    nothing at start-up (bench/startup.py measures the time)."""
    empty = tmp_path / "empty.mlir"
    empty.write_text("builtin.module {}\n")
    result = subprocess.run(
        [sys.executable, "-c", LAZY_PROBE, str(empty)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("[]"), result.stderr


NUMPY_PROBE = """
import sys
sys.argv = ["ccopt", *sys.argv[1:], "-o", "/dev/null"]
from ccopt.tools.ccopt_opt import main
main()
sys.stderr.write(repr([m for m in ("numpy", "ccopt.dialects.algo") if m in sys.modules]))
"""


@pytest.mark.parametrize(
    "pipeline",
    [
        [],
        [
            "-p",
            "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3},inline,"
            "convert-to-kernel,plan-memory",
        ],
    ],
    ids=["parse", "lowered"],
)
def test_collectives_without_algorithms_load_neither_numpy_nor_algo(pipeline: list[str]) -> None:
    """Verifying and lowering a collective that names no `algo.algorithm` loads neither the
    algo dialect nor numpy (a fifth of `ccopt FILE`'s start-up when the verifier imported them
    for every collective)."""
    example = str(ROOT / "examples" / "megatron_mlp.mlir")
    result = subprocess.run(
        [sys.executable, "-c", NUMPY_PROBE, example, *pipeline], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("[]"), result.stderr


def test_time_passes_reports_every_pass_and_its_verification_on_stderr() -> None:
    """`--time-passes` (as mlir-opt's -mlir-timing) times parsing, each pass, the checks after
    it and the output, in pipeline order, without touching the program on stdout."""
    plain = ccopt("-p", "split-all-reduce,fuse-elementwise", SGD)
    timed = ccopt("-p", "split-all-reduce,fuse-elementwise", "--time-passes", SGD)
    assert timed.returncode == 0, timed.stderr
    assert timed.stdout == plain.stdout
    steps = [line.split("%  ", 1)[1] for line in timed.stderr.splitlines() if "%  " in line]
    assert steps == [
        "parse",
        "  verify input",
        "split-all-reduce",
        "  verify after split-all-reduce",
        "fuse-elementwise",
        "  verify after fuse-elementwise",
        "output (mlir)",
        "total",
    ]
    shares = [float(line.split()[1].rstrip("%")) for line in timed.stderr.splitlines()[2:-1]]
    assert abs(sum(shares) - 100) < 1


CALLS = """dtensor.mesh @dp [dp=2]
func.func private @step(%a: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
  %s = coll.all_reduce sum %a over [dp] : !dtensor.tensor<64xf32, @dp[P(sum)]> -> !dtensor.tensor<64xf32, @dp[R]>
  func.return %s : !dtensor.tensor<64xf32, @dp[R]>
}
func.func @main(%x: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
  %a = func.call @step(%x) : (!dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]>
  func.return %a : !dtensor.tensor<64xf32, @dp[R]>
}
func.func @other(%x: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
  %a = coll.all_reduce sum %x over [dp] : !dtensor.tensor<64xf32, @dp[P(sum)]> -> !dtensor.tensor<64xf32, @dp[R]>
  %b = dtensor.exp %a : !dtensor.tensor<64xf32, @dp[R]>
  func.return %b : !dtensor.tensor<64xf32, @dp[R]>
}
"""


def test_entry_picks_the_function_the_cuda_targets_emit() -> None:
    """The error asked for --entry, which only ccopt-run and ccopt-sim had."""
    assert_user_error(ccopt("-t", "cuda", stdin=CALLS), "choose the entry function with --entry")
    done = ccopt("--entry", "other", "-t", "cuda", stdin=CALLS)
    assert done.returncode == 0 and "ccopt_other" in done.stdout, done.stderr
    assert ccopt("--entry", "@other", "-t", "pybind11", stdin=CALLS).returncode == 0
    assert_user_error(ccopt("--entry", "other", stdin=CALLS), "--entry: -t mlir emits the whole")
    assert_user_error(
        ccopt("--entry", "main", "-t", "cuda{entry=other}", stdin=CALLS), "both name the entry"
    )


def test_build_goes_with_the_cuda_targets_only() -> None:
    """`--build -t msccl-xml` built the module and ignored -t."""
    assert_user_error(
        ccopt(str(SGD), "--build", "-t", "msccl-xml"),
        "--build compiles what -t cuda emits: -t msccl-xml cannot go with it",
    )


def test_an_explicit_inline_decides_which_calls_the_cuda_target_keeps() -> None:
    """`-p 'inline{max-ops=0}' -t cuda` gave the same code as no pipeline: the target's own
    inline{max-ops=32} inlined the call the user kept."""
    kept = ccopt("--entry", "main", "-p", "inline{max-ops=0}", "-t", "cuda", stdin=CALLS)
    assert kept.returncode == 0 and "ccopt_step_fn(" in kept.stdout, kept.stderr
    default = ccopt("--entry", "main", "-t", "cuda", stdin=CALLS)
    assert default.returncode == 0 and "ccopt_step_fn(" not in default.stdout
    forced = ccopt("-p", "inline{max-ops=0}", "-t", "cuda{entry=main inline=true}", stdin=CALLS)
    assert forced.stdout == default.stdout


def test_convert_to_kernel_twice_is_once() -> None:
    """The second run refused the first one's buffers ("only !dtensor.tensor arguments become
    kernel-level buffers"); a module lowered already is left as it is, as -t cuda leaves it."""
    once = ccopt(str(SGD), "-p", "convert-to-kernel")
    twice = ccopt(str(SGD), "-p", "convert-to-kernel,convert-to-kernel")
    assert once.returncode == twice.returncode == 0, twice.stderr
    assert once.stdout == twice.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--build", "--arch", "90"],
            "--arch 90: expected a GPU architecture like sm_80 or sm_90a",
        ),
        (["--arch", "sm_90"], "--arch: only --build compiles"),
    ],
)
def test_arch_is_checked_before_anything_is_generated(args: list[str], message: str) -> None:
    """`--arch 90` surfaced as nvcc's fatal error after the CUDA was generated; without
    --build it was ignored."""
    assert_user_error(ccopt(str(SGD), *args), message)


def test_mlir_target_options_are_honoured() -> None:
    """xDSL overwrote `-t mlir{...}`'s options with its printing flags: generic form was asked
    for and the pretty form printed."""
    result = ccopt(str(SGD), "-t", "mlir{print-generic-format=true}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('"builtin.module"() ({')
    assert ccopt(str(SGD), "-t", "mlir").stdout.startswith("builtin.module {")
