"""`ccopt-run`: every example on 1..8 ranks, npz inputs/outputs (global values, per-rank shards),
atomic output, clear errors for bad input, and `--check-pipeline` (passing and failing loudly);
plus the Python API `ccopt.check_pipeline` with a plugin pass."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_support import ROOT, assert_user_error, ccopt_run

import ccopt
from ccopt.tools.ccopt_run import main

EXAMPLES = ROOT / "examples"
PLUGIN = ROOT / "test" / "plugins" / "wrong_pass.py"
NAMES = [
    "sgd",
    "adam",
    "lamb",
    "megatron_row_parallel",
    "pipeline_boundary",
    "fusion_legality",
    "megatron_mlp",
]
EXPECTED_OUTPUTS = {
    "sgd": ["w"],
    "adam": ["w", "m", "v"],
    "lamb": ["w", "m", "v"],
    "megatron_row_parallel": ["result0"],
    "pipeline_boundary": ["result0"],
    "fusion_legality": ["result0", "result1"],
    "megatron_mlp": ["result0"],
}


ENTRIES = {
    "sgd": "sgd",
    "adam": "adam",
    "lamb": "lamb",
    "megatron_row_parallel": "row_parallel",
    "pipeline_boundary": "stage_boundary",
    "fusion_legality": "fusion_legality",
    "megatron_mlp": "mlp",
}


def mesh_for(name: str, ranks: int) -> tuple[str, str]:
    """A mesh spec with `ranks` ranks for an example, and how ccopt-run prints it."""
    if name in ("sgd", "adam", "lamb", "fusion_legality"):
        return f"dp={ranks}", f"@dp [dp={ranks}]"
    if name == "megatron_row_parallel":
        return f"tp={ranks}", f"@tp [tp={ranks}]"
    outer, inner = (2, ranks // 2) if ranks % 2 == 0 else (1, ranks)
    if name == "pipeline_boundary":
        # a shift over a single stage sends nothing and is rejected: odd counts are all stages
        outer, inner = (outer, inner) if outer > 1 else (ranks, 1)
        return f"pp={outer},tp={inner}", f"@pm [pp={outer}, tp={inner}]"
    return f"dp={outer},tp={inner}", f"@m [dp={outer}, tp={inner}]"


def assert_run_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """One clear message from ccopt-run naming the culprit, nothing on stdout."""
    assert_user_error(result, *fragments)
    assert result.stderr.startswith("ccopt-run: "), result.stderr
    assert result.stdout == ""


def stats_line(name: str, value: np.ndarray) -> list[str]:
    """What the output listing shows for a value: name, dtype, shape, min, max, mean."""
    v = value.astype(np.float64)
    return [
        name,
        str(value.dtype),
        str(list(value.shape)),
        f"{np.nanmin(v):.6g}",
        f"{np.nanmax(v):.6g}",
        f"{np.nanmean(v):.6g}",
    ]


def parse_listing(stdout: str) -> dict[str, list[str]]:
    out = {}
    for line in stdout.splitlines()[1:]:
        m = re.fullmatch(
            r"  (\S+)\s+(\S+)\s+(\[[\d, ]*\])\s+min (\S+)\s+max (\S+)\s+mean (\S+)", line
        )
        assert m, line
        out[m.group(1)] = list(m.groups())
    return out


def sgd_inputs(p: int, n: int = 1030, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "g": rng.standard_normal((p, n)).astype(np.float32),  # one gradient per rank
        "w": rng.standard_normal(n).astype(np.float32),
        "lr": np.float32(0.125),
    }


# --- every example on 1..8 ranks ---------------------------------------------------------------
# a stage boundary needs two stages: pipeline_boundary on 1 rank is rejected (tested below)
MATRIX = [(n, r) for n in NAMES for r in range(1, 9) if (n, r) != ("pipeline_boundary", 1)]


@pytest.mark.parametrize("name,ranks", MATRIX)
def test_every_example_on_1_to_8_ranks(name: str, ranks: int, tmp_path: Path, capsys) -> None:
    # in-process `main` (the same code path as the script, without 56 interpreter start-ups)
    spec, shown = mesh_for(name, ranks)
    out_file = tmp_path / "out.npz"
    status = main(
        [str(EXAMPLES / f"{name}.mlir"), "--mesh", spec, "--seed", "3", "--outputs", str(out_file)]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines[0] == f"@{ENTRIES[name]} on {shown} (1 step)"
    listing = parse_listing(captured.out)
    assert list(listing) == EXPECTED_OUTPUTS[name]
    expected = ccopt.run(EXAMPLES / f"{name}.mlir", mesh=spec, seed=3)
    with np.load(out_file) as saved:
        assert sorted(saved.files) == sorted(EXPECTED_OUTPUTS[name])
        for key in EXPECTED_OUTPUTS[name]:
            np.testing.assert_array_equal(saved[key], expected.outputs[key])
            assert listing[key] == stats_line(key, saved[key])


@pytest.mark.parametrize(
    "name,ranks",
    [
        ("sgd", 1),
        ("adam", 2),
        ("lamb", 3),
        ("megatron_row_parallel", 5),
        ("pipeline_boundary", 6),
        ("fusion_legality", 7),
        ("megatron_mlp", 8),
    ],
)
def test_script_runs_example(name: str, ranks: int) -> None:
    spec, shown = mesh_for(name, ranks)
    result = ccopt_run(EXAMPLES / f"{name}.mlir", "--mesh", spec, "--seed", "5")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[0] == f"@{ENTRIES[name]} on {shown} (1 step)"
    expected = ccopt.run(EXAMPLES / f"{name}.mlir", mesh=spec, seed=5).outputs
    listing = parse_listing(result.stdout)
    assert list(listing) == EXPECTED_OUTPUTS[name]
    for key, value in expected.items():
        assert listing[key] == stats_line(key, value)


# --- npz round trip ----------------------------------------------------------------------------
def test_inputs_and_outputs_npz_round_trip(tmp_path: Path) -> None:
    inputs = sgd_inputs(3)
    np.savez(tmp_path / "x.npz", **inputs)
    result = ccopt_run(
        EXAMPLES / "sgd.mlir",
        "--mesh",
        "dp=3",
        "--inputs",
        tmp_path / "x.npz",
        "--outputs",
        tmp_path / "y.npz",
    )
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "y.npz") as y:
        assert y.files == ["w"]
        w = y["w"]
    expected = inputs["w"].astype(np.float64) - 0.125 * inputs["g"].astype(np.float64).sum(axis=0)
    assert w.dtype == np.float32 and w.shape == (1030,)
    np.testing.assert_allclose(w, expected, rtol=1e-5, atol=1e-6)
    # bitwise what the Python API computes
    np.testing.assert_array_equal(
        w, ccopt.run(EXAMPLES / "sgd.mlir", inputs, mesh="dp=3").outputs["w"]
    )
    # feed the output back in: a second step
    np.savez(tmp_path / "x2.npz", **{**inputs, "w": w})
    result = ccopt_run(
        EXAMPLES / "sgd.mlir",
        "--mesh",
        "dp=3",
        "--inputs",
        tmp_path / "x2.npz",
        "--outputs",
        tmp_path / "y2.npz",
    )
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "y2.npz") as y2:
        np.testing.assert_allclose(
            y2["w"],
            inputs["w"] - 2 * 0.125 * inputs["g"].astype(np.float64).sum(axis=0),
            rtol=1e-5,
            atol=1e-6,
        )


def test_per_rank_shards_concatenate_to_the_global_value(tmp_path: Path) -> None:
    # megatron_mlp's result is [S(0), R] on dp=4, tp=2: batch 6 in blocks 2, 2, 2, 0
    result = ccopt_run(
        EXAMPLES / "megatron_mlp.mlir",
        "--mesh",
        "dp=4,tp=2",
        "--outputs",
        tmp_path / "y.npz",
        "--per-rank",
    )
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "y.npz") as y:
        assert sorted(y.files) == sorted(["result0"] + [f"result0@rank{r}" for r in range(8)])
        shards = [y[f"result0@rank{r}"] for r in range(8)]
        value = y["result0"]
    assert value.shape == (6, 10, 24)
    assert [s.shape for s in shards] == [(2, 10, 24)] * 6 + [(0, 10, 24)] * 2
    for r in range(0, 8, 2):
        assert shards[r].tobytes() == shards[r + 1].tobytes()  # replicated over tp
    np.testing.assert_array_equal(np.concatenate(shards[::2]), value)
    np.testing.assert_array_equal(
        value, ccopt.run(EXAMPLES / "megatron_mlp.mlir", mesh="dp=4,tp=2").outputs["result0"]
    )


def test_per_rank_replicated_and_stacked_values(tmp_path: Path) -> None:
    inputs = sgd_inputs(3, seed=9)
    np.savez(tmp_path / "x.npz", **inputs)
    result = ccopt_run(
        EXAMPLES / "sgd.mlir",
        "--mesh",
        "dp=3",
        "--inputs",
        tmp_path / "x.npz",
        "--outputs",
        tmp_path / "y.npz",
        "--per-rank",
    )
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "y.npz") as y:
        assert sorted(y.files) == ["w", "w@rank0", "w@rank1", "w@rank2"]
        for r in range(3):
            assert y[f"w@rank{r}"].tobytes() == y["w"].tobytes()
    # pipeline: [V, R] result, stacked over pp; ranks of stage s hold stage s's value
    result = ccopt_run(
        EXAMPLES / "pipeline_boundary.mlir",
        "--mesh",
        "pp=2,tp=3",
        "--outputs",
        tmp_path / "p.npz",
        "--per-rank",
    )
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "p.npz") as y:
        value = y["result0"]
        assert value.shape == (2, 8, 36)
        assert not value[0].any()  # stage 0 receives zeros
        for r in range(6):
            assert y[f"result0@rank{r}"].tobytes() == value[r // 3].tobytes()


# --- atomic output -----------------------------------------------------------------------------
def test_npz_through_standard_input_and_output(tmp_path: Path) -> None:
    """`--inputs -` reads the .npz from stdin, `--outputs -` writes it to stdout (the summary
    then goes to stderr, so that the archive stays whole)."""
    inputs = sgd_inputs(3)
    buffer = io.BytesIO()
    np.savez(buffer, **inputs)
    command = [sys.executable, "-m", "ccopt.tools.ccopt_run", str(EXAMPLES / "sgd.mlir")]
    result = subprocess.run(
        [*command, "--mesh", "dp=3", "--inputs", "-", "--outputs", "-"],
        input=buffer.getvalue(),
        capture_output=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().startswith("@sgd on @dp [dp=3] (1 step)")
    with np.load(io.BytesIO(result.stdout)) as y:
        expected = ccopt.run(EXAMPLES / "sgd.mlir", inputs, mesh="dp=3").outputs["w"]
        np.testing.assert_array_equal(y["w"], expected)
    assert not (tmp_path / "-").exists()
    both = ccopt_run("-", "--inputs", "-", cwd=tmp_path)
    assert_user_error(both, "the program and --inputs cannot both be standard input ('-')")


def test_output_not_created_when_the_run_fails(tmp_path: Path) -> None:
    inputs = sgd_inputs(4)
    del inputs["lr"]
    np.savez(tmp_path / "x.npz", **inputs)
    result = ccopt_run(
        EXAMPLES / "sgd.mlir", "--inputs", tmp_path / "x.npz", "--outputs", tmp_path / "y.npz"
    )
    assert_run_error(result, "missing input for argument 'lr'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz"]  # no output, no temporary
    # an existing output file is left as it was
    (tmp_path / "y.npz").write_bytes(b"previous")
    result = ccopt_run(
        EXAMPLES / "sgd.mlir", "--inputs", tmp_path / "x.npz", "--outputs", tmp_path / "y.npz"
    )
    assert result.returncode == 1
    assert (tmp_path / "y.npz").read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz", "y.npz"]


def test_output_replaced_whole_without_temporaries(tmp_path: Path, capsys) -> None:
    (tmp_path / "y.npz").write_bytes(b"previous")
    assert main([str(EXAMPLES / "fusion_legality.mlir"), "--outputs", str(tmp_path / "y.npz")]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.npz"]
    with np.load(tmp_path / "y.npz") as y:
        assert y.files == ["result0", "result1"]
        np.testing.assert_array_equal(
            y["result1"], ccopt.run(EXAMPLES / "fusion_legality.mlir").outputs["result1"]
        )


def test_output_into_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    result = ccopt_run(EXAMPLES / "sgd.mlir", "--outputs", tmp_path / "nodir" / "y.npz")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "nodir" in result.stderr


# --- bad input -----------------------------------------------------------------------------------
def _npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def test_bad_input_arrays(tmp_path: Path) -> None:
    good = sgd_inputs(4)
    cases = {
        "missing": (
            {k: v for k, v in good.items() if k != "lr"},
            ["missing input for argument 'lr'"],
        ),
        "misnamed": (
            {**good, "bias": np.zeros(3)},
            ["input 'bias' is not an argument of @sgd", "g, w, lr"],
        ),
        "shape": (
            {**good, "g": np.zeros((4, 1031), np.float32)},
            ["input 'g' has shape [4, 1031]", "[4, 1030] or [1030]"],
        ),
        "dtype": (
            {**good, "g": np.zeros((4, 1030), np.int32)},
            ["input 'g' has dtype int32", "needs float32"],
        ),
    }
    for case, (arrays, fragments) in cases.items():
        path = _npz(tmp_path / f"{case}.npz", **arrays)
        assert_run_error(ccopt_run(EXAMPLES / "sgd.mlir", "--inputs", path), *fragments)


def test_bad_mesh_entry_program_and_inputs_file(tmp_path: Path) -> None:
    sgd = EXAMPLES / "sgd.mlir"
    assert_run_error(
        ccopt_run(sgd, "--mesh", "tq=2"), "mesh axis 'tq' is not in the program", "@dp [dp=4]"
    )
    assert_run_error(
        ccopt_run(EXAMPLES / "pipeline_boundary.mlir", "--mesh", "dp=2"), "mesh axis 'dp'"
    )
    assert_run_error(ccopt_run(sgd, "--mesh", "dp=0"), "mesh axis 'dp' needs a size >= 1, got 0")
    # a mesh the program cannot take: one pipeline stage, so the boundary shift sends nothing
    assert_run_error(
        ccopt_run(EXAMPLES / "pipeline_boundary.mlir", "--mesh", "pp=1"),
        "the program does not fit mesh {'pp': 1}",
        "coll.shift",
    )
    assert_run_error(ccopt_run(sgd, "--mesh", "dp"), "bad mesh 'dp'")
    assert_run_error(ccopt_run(sgd, "--mesh", "dp=2,dp=4"), "axis 'dp' is named twice")
    assert_run_error(ccopt_run(sgd, "--entry", "adam"), "no function @adam", "@sgd")
    assert_run_error(ccopt_run(tmp_path / "absent.mlir"), "cannot read input file", "absent.mlir")
    (tmp_path / "notes.txt").write_text("not an npz\n")
    assert_run_error(ccopt_run(sgd, "--inputs", tmp_path / "notes.txt"), "inputs", "notes.txt")
    assert_run_error(
        ccopt_run(sgd, "--inputs", tmp_path / "absent.npz"), "cannot read inputs", "absent.npz"
    )


def test_npy_file_as_inputs_is_a_clear_error(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros(1030, np.float32))
    assert_run_error(ccopt_run(EXAMPLES / "sgd.mlir", "--inputs", tmp_path / "x.npy"), "x.npy")


# --- --check-pipeline --------------------------------------------------------------------------
def _comparisons(stdout: str) -> dict[str, tuple[float, float, str]]:
    out = {}
    for m in re.finditer(
        r"^  (\S+)\s+max abs error (\S+)\s+max rel error (\S+)\s+(ok|MISMATCH)", stdout, re.M
    ):
        out[m.group(1)] = (float(m.group(2)), float(m.group(3)), m.group(4))
    return out


def test_check_pipeline_cse_dce_passes() -> None:
    result = ccopt_run(EXAMPLES / "lamb.mlir", "--check-pipeline", "cse,dce", "--mesh", "dp=3")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "pipeline 'cse,dce' (rtol by element type, atol scaled):" in result.stdout
    assert _comparisons(result.stdout) == {n: (0.0, 0.0, "ok") for n in ("w", "m", "v")}


def test_check_pipeline_wrong_pass_fails_loudly(tmp_path: Path) -> None:
    result = ccopt_run(
        EXAMPLES / "adam.mlir",
        "--check-pipeline",
        "test-wrong-scale",
        "--load-plugin",
        "test/plugins/wrong_pass.py",
        "--mesh",
        "dp=2",
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "the pipeline changed the program's results" in result.stderr
    comparisons = _comparisons(result.stdout)
    assert set(comparisons) == {"w", "m", "v"}
    assert result.stdout.count("MISMATCH") == 3
    for name, (abs_err, rel_err, verdict) in comparisons.items():
        assert verdict == "MISMATCH" and abs_err > 1e-3 and rel_err > 1e-3, name
    # the doubled factors (0.9 -> 1.8, 0.1 -> 0.2) make m' exactly 2 m': relative error 1
    assert comparisons["m"][1] == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize(("dtype", "rtol"), [("bf16", "0.05"), ("f16", "0.01")])
def test_check_pipeline_holds_16_bit_floats_to_their_precision(
    tmp_path: Path, dtype: str, rtol: str
) -> None:
    """A ring all-reduce sums in another order: in bf16 that moves a result by an ulp (1.0 at
    151), which the f32 default of 1e-5 called a MISMATCH, with a relative error of 7e305
    for an element that was 0."""
    program = tmp_path / "mlp.mlir"
    program.write_text((EXAMPLES / "megatron_mlp.mlir").read_text().replace("f32", dtype))
    result = ccopt_run(program, "--check-pipeline", "lower-collectives", "--seed", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok (rtol {rtol})" in result.stdout
    rel_err = _comparisons(result.stdout)["result0"][1]
    assert rel_err < 1.0
    strict = ccopt_run(program, "--check-pipeline", "lower-collectives", "--rtol", "0")
    assert strict.returncode == 1 and "MISMATCH" in strict.stdout


def test_check_pipeline_unknown_pass_without_plugin() -> None:
    result = ccopt_run(EXAMPLES / "adam.mlir", "--check-pipeline", "test-wrong-scale")
    assert_run_error(result, "invalid pass pipeline 'test-wrong-scale'", "test-wrong-scale")
    result = ccopt_run(EXAMPLES / "adam.mlir", "--load-plugin", "test/plugins/absent.py")
    assert_run_error(result, "cannot load plugin 'test/plugins/absent.py'")


# --- --steps -------------------------------------------------------------------------------------
def test_steps_feed_updates_back(tmp_path: Path) -> None:
    inputs = sgd_inputs(2, n=24, seed=4)
    text = (EXAMPLES / "sgd.mlir").read_text().replace("<1030x", "<24x")
    (tmp_path / "sgd24.mlir").write_text(text)
    np.savez(tmp_path / "x.npz", **inputs)
    result = ccopt_run(
        tmp_path / "sgd24.mlir",
        "--mesh",
        "dp=2",
        "--steps",
        "3",
        "--inputs",
        tmp_path / "x.npz",
        "--outputs",
        tmp_path / "y.npz",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "@sgd on @dp [dp=2] (3 steps)"
    expected = inputs["w"].astype(np.float64) - 3 * 0.125 * inputs["g"].astype(np.float64).sum(
        axis=0
    )
    with np.load(tmp_path / "y.npz") as y:
        np.testing.assert_allclose(y["w"], expected, rtol=1e-5, atol=1e-6)


# --- Python API ----------------------------------------------------------------------------------
def test_python_check_pipeline_with_plugin() -> None:
    from ccopt.passes import PASSES, load_plugin

    load_plugin(str(PLUGIN))
    assert "test-wrong-scale" in PASSES
    rng = np.random.default_rng(21)
    shape = (515, 7)
    inputs = {
        "g": rng.standard_normal((3, *shape)).astype(np.float32),
        "w": rng.standard_normal(shape).astype(np.float32),
        "m": (0.1 * rng.standard_normal(shape)).astype(np.float32),
        "v": (0.01 * np.abs(rng.standard_normal(shape))).astype(np.float32),
        "lr": np.float32(0.01),
        "t": np.float32(2),
    }
    good = ccopt.check_pipeline(EXAMPLES / "adam.mlir", "cse,dce", inputs, mesh="dp=3")
    assert good.ok
    assert [(c.name, c.max_abs_error, c.ok) for c in good.comparisons] == [
        ("w", 0.0, True),
        ("m", 0.0, True),
        ("v", 0.0, True),
    ]

    bad = ccopt.check_pipeline(EXAMPLES / "adam.mlir", "test-wrong-scale", inputs, mesh="dp=3")
    assert not bad.ok
    assert [(c.name, c.ok) for c in bad.comparisons] == [("w", False), ("m", False), ("v", False)]
    g_sum = inputs["g"].astype(np.float64).sum(axis=0)
    m = inputs["m"].astype(np.float64)
    v = inputs["v"].astype(np.float64)
    np.testing.assert_allclose(
        bad.reference.outputs["m"], 0.9 * m + 0.1 * g_sum, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        bad.optimized.outputs["m"], 1.8 * m + 0.2 * g_sum, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        bad.optimized.outputs["v"], 1.998 * v + 0.002 * g_sum**2, rtol=1e-5, atol=1e-6
    )
    by_name = {c.name: c for c in bad.comparisons}
    assert by_name["m"].max_rel_error == pytest.approx(1.0, rel=1e-5)
    # the program has no dtensor.scale ops on this path: the wrong pass changes nothing
    same = ccopt.check_pipeline(EXAMPLES / "fusion_legality.mlir", "test-wrong-scale", mesh="dp=3")
    assert same.ok
    assert all(c.max_abs_error == 0.0 for c in same.comparisons)


RECURSIVE = """
!r = !dtensor.tensor<8xf32, @tp[R]>
dtensor.mesh @tp [tp=2]
func.func private @countdown(%x: !r) -> !r {
  %n = dtensor.neg %x : !r
  %y = func.call @countdown(%n) : (!r) -> !r
  func.return %y : !r
}
func.func @main(%x: !r) -> !r {
  %y = func.call @countdown(%x) : (!r) -> !r
  func.return %y : !r
}
"""


def test_endless_recursion_is_a_clear_error(tmp_path: Path) -> None:
    """Valid IR (MLIR allows recursion) that can never finish: stopped with the call named,
    not a Python RecursionError; the public function is the entry."""
    program = tmp_path / "recursive.mlir"
    program.write_text(RECURSIVE)
    assert_run_error(
        ccopt_run(program),
        "recursive.mlir:6:3: error: 'func.call' op calls nest more than 64 deep at the call of "
        "@countdown",
    )


def test_an_output_that_is_all_nan_is_described_without_numpy_warnings(tmp_path: Path) -> None:
    """The log of a negative number is NaN everywhere: the summary says so, where numpy's
    "All-NaN slice" and "Mean of empty slice" warnings (with their source lines) were printed."""
    program = tmp_path / "nan.mlir"
    program.write_text(
        "dtensor.mesh @dp [dp=2]\n"
        "func.func @nan(%x: !dtensor.tensor<4xf32, @dp[R]>) -> !dtensor.tensor<4xf32, @dp[R]> {\n"
        "  %n = dtensor.fill -1.0 : !dtensor.tensor<4xf32, @dp[R]>\n"
        "  %l = dtensor.log %n : !dtensor.tensor<4xf32, @dp[R]>\n"
        "  func.return %l : !dtensor.tensor<4xf32, @dp[R]>\n"
        "}\n"
    )
    result = ccopt_run(program)
    assert result.returncode == 0, result.stderr
    assert re.search(r"result0\s+float32\s+\[4\]\s+all NaN", result.stdout), result.stdout
    assert "Warning" not in result.stderr, result.stderr


def test_outputs_nan_before_and_after_say_they_were_not_compared() -> None:
    """A NaN input gives NaN outputs on both sides, which match: the comparison said error 0
    and ok without a word."""
    inputs = {
        "g": np.full(1030, np.nan, np.float32),
        "w": np.ones(1030, np.float32),
        "lr": np.array(0.1, np.float32),
    }
    report = ccopt.check_pipeline(EXAMPLES / "sgd.mlir", "split-all-reduce", inputs)
    (w,) = report.comparisons
    assert w.ok and w.note == "all NaN in both: nothing compared"
    inputs["g"][5:] = 1.0
    (w,) = ccopt.check_pipeline(EXAMPLES / "sgd.mlir", "split-all-reduce", inputs).comparisons
    assert w.note == "5 of 1030 elements NaN in both, not compared"


def test_arguments_marked_positive_get_positive_random_inputs() -> None:
    """Adam's second moment and step count are `ccopt.positive`: drawn N(0, 1) they were
    negative half the time, and half of `w` was the NaN of their square root in every check,
    on both sides, so those elements were never compared."""
    report = ccopt.check_pipeline(EXAMPLES / "adam.mlir", "split-all-reduce")
    assert (report.reference.inputs["v"] >= 0).all() and report.reference.inputs["t"] >= 0
    assert (report.reference.inputs["m"] < 0).any()  # (the others as before)
    assert all(c.ok and not c.note for c in report.comparisons), report.comparisons
    assert not np.isnan(report.reference.outputs["w"]).any()


def test_an_output_partly_nan_says_how_many() -> None:
    from ccopt.tools.ccopt_run import describe

    line = describe("x", np.array([1.0, np.nan, 3.0], np.float32))
    assert line.endswith("min 1  max 3  mean 2  (1 NaN)"), line
