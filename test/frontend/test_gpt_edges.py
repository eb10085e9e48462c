"""The GPT front end at its edges: command lines and API arguments that used to produce a
traceback, a hang or a silently different program, and the step checked against a transformer
written independently in numpy (the other tests compare the step only with itself)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from test_gpt import inputs_for

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects.dtensor_type import S
from ccopt.frontend.gpt import (
    ATTENTION_DROPOUT,
    EPS,
    HIDDEN_DROPOUT,
    MAX_LAYERS,
    PARAMETERS,
    SEEDS,
    Layout,
    causal_mask,
    gpt_step,
    main,
)
from ccopt.frontend.program import Program
from ccopt.interpreters.dtensor import dropout, gelu


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(args)
    except SystemExit as e:
        code = int(e.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("mesh", ["d-p=2", "1x=2", "dp=2,tp=2,x y=1", "éé=2"])
def test_an_axis_name_that_would_not_parse_back_is_refused(
    mesh: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--mesh d-p=2` wrote `dtensor.mesh @m [d-p=2]`, which no ccopt tool could read."""
    out = tmp_path / "gpt.mlir"
    code, err = run_main(["--layers", "1", "--mesh", mesh, "-o", str(out)], capsys)
    assert code == 1 and "is not an identifier" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("axis", ["a.b", "_x", "x$1", "é"])
def test_unusual_axis_names_that_parse_are_kept(axis: str) -> None:
    p = Program("f", **{axis: 2})
    x = p.input("x", [4], "f32", S(0))
    p.returns(x + x)
    assert ccopt.run(str(p.module), {"x": np.arange(4, dtype="float32")}).outputs["result0"][
        3
    ] == pytest.approx(6.0)


def test_arguments_are_the_blocks_while_building() -> None:
    """`input` adds block arguments in one go (xDSL copies its tuple per added argument);
    the block still shows every input, in order, before the function is finished."""
    p = Program("f", dp=2)
    a = p.input("a", [4], "f32", S(0))
    b = p.input("b", [4], "f32", S(0))
    assert [x.name_hint for x in p.block.args] == ["a", "b"]
    assert [x.index for x in p.block.args] == [0, 1]
    p.returns(a * b)
    assert [x.name_hint for x in p.function().body.blocks[0].args] == ["a", "b"]


@pytest.mark.parametrize("where", ["directory", "missing folder"])
def test_an_output_that_cannot_be_written_is_a_one_line_error(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o /tmp` and `-o /no/such/dir/x.mlir` ended in an OutputError traceback."""
    target = tmp_path if where == "directory" else tmp_path / "missing" / "gpt.mlir"
    code, err = run_main(["--layers", "1", "-o", str(target)], capsys)
    assert code == 1 and f"error: cannot write '{target}'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layers", "99999999999999999999"], f"at most {MAX_LAYERS} are built"),
        (
            ["--batch", "4611686018427387904", "--mesh", "tp=2"],
            "batch x seq = 36893488147419103232 tokens do not fit in a 64-bit dimension",
        ),
    ],
)
def test_huge_sizes_are_refused_at_once(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped layer count built for hours (the step is a call per layer), and a batch
    whose tokens overflow was reported as a dimension the user never wrote."""
    code, err = run_main(["--model", "tiny", *args], capsys)
    assert code == 1 and message in err and "Traceback" not in err


def test_an_axis_in_both_roles_is_refused_by_the_api_too() -> None:
    """The command line refused `--data dp --tensor dp`; `gpt_step` silently made dp data
    parallel only."""
    with pytest.raises(CcoptError, match="dp named both data- and tensor-parallel"):
        gpt_step("tiny", {"dp": 2, "tp": 2}, data_axes=["dp"], tensor_axes=["dp", "tp"])


def test_axis_roles_given_with_a_layout_are_refused() -> None:
    """A layout places every tensor: the axis roles were ignored without a word."""
    with pytest.raises(CcoptError, match="data_axes and tensor_axes apply only without one"):
        gpt_step("tiny", {"dp": 2, "tp": 2}, layout=Layout.open(["dp", "tp"]), data_axes=["tp"])


@pytest.mark.parametrize("layout", [Layout.open(["dp"]), Layout.megatron(["dp"], tensor=())])
def test_a_layout_for_another_mesh_is_named(layout: Layout) -> None:
    """An open layout of one axis on a 2-axis mesh failed in the verifier (an OpError on a
    type), a Megatron one with 'no mesh axis tp'."""
    with pytest.raises(
        CcoptError, match=r"layout gives 1 placements .* mesh has 2 axes \(dp, tp\)"
    ):
        gpt_step("tiny", {"dp": 2, "tp": 2}, layout=layout)


def test_one_axis_name_is_that_axis_not_its_letters() -> None:
    """`data_axes="dp"` was read as the axes 'd' and 'p'."""
    by_name = gpt_step("tiny", {"dp": 2, "tp": 2}, layers=1, data_axes="dp", tensor_axes="tp")
    by_list = gpt_step("tiny", {"dp": 2, "tp": 2}, layers=1, data_axes=["dp"], tensor_axes=["tp"])
    assert str(by_name.module) == str(by_list.module)


@pytest.mark.parametrize(("dtype", "expected"), [("f16", np.float16), ("float16", np.float16)])
def test_the_f16_causal_mask_is_finite(dtype: str, expected: type) -> None:
    """-1e9 overflowed f16 to -inf (with a RuntimeWarning), and `"f16"`, the GPT's own name
    for the type, was numpy's 16-byte float."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mask = causal_mask(4, dtype)
    assert mask.dtype == expected
    assert np.isfinite(mask).all() and mask[0, 3] < -1e4 and mask[3, 0] == 0
    assert np.isfinite(mask[0, 3] - np.float16(30000))
    assert causal_mask(3, "f32")[0, 2] == np.float32(-1e9)


# --- an independent numpy transformer --------------------------------------------------------


def numpy_dropout(x: np.ndarray, prob: float, seed: int) -> np.ndarray:
    """dtensor.dropout's mask: a function of the seed and the element's global index."""
    return dropout(x, np.arange(x.size).reshape(x.shape), seed, prob)


def numpy_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(-1, keepdims=True) + EPS) * gamma + beta


def numpy_layer(x: np.ndarray, w: dict[str, np.ndarray], mask: np.ndarray, heads: int):  # noqa: ANN201
    b, s, h = x.shape
    hd = h // heads
    qkv = numpy_layernorm(x, w["ln1_g"], w["ln1_b"]) @ w["wqkv"] + w["bqkv"]
    q, k, v = (qkv.reshape(b, s, heads, 3, hd)[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + mask
    e = np.exp(scores - scores.max(-1, keepdims=True))
    probs = numpy_dropout(e / e.sum(-1, keepdims=True), ATTENTION_DROPOUT, SEEDS["attention"])
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    attn = context @ w["wo"] + w["bo"]
    x1 = x + numpy_dropout(attn, HIDDEN_DROPOUT, SEEDS["attention_out"])
    f = numpy_layernorm(x1, w["ln2_g"], w["ln2_b"]) @ w["w1"] + w["b1"]
    return x1 + numpy_dropout(gelu(f) @ w["w2"] + w["b2"], HIDDEN_DROPOUT, SEEDS["mlp_out"])


def test_the_loss_and_adam_step_equal_a_numpy_transformer() -> None:
    """Pre-layernorm attention (heads interleaved per head in QKV, causal mask, dropout) and
    MLP, twice, then half the mean squared error; Adam (t = 3) on the step's own gradients.
    Sharded on dp=2 x tp=2, f64."""
    mesh = {"dp": 2, "tp": 2}
    grads_step = gpt_step("tiny", mesh, dtype="f64", with_optimizer=False)
    step = gpt_step("tiny", mesh, dtype="f64")
    inputs = {**inputs_for(step, "float64", seed=4), "t": np.array(3.0)}
    x = inputs["x"]
    for i in range(2):
        x = numpy_layer(x, {n: inputs[f"l{i}_{n}"] for n in PARAMETERS}, inputs["mask"], 4)
    loss = 0.5 * np.mean((x - inputs["target"]) ** 2)
    grad_names = [a.name_hint for a in grads_step.function().body.blocks[0].args]
    grads = ccopt.run(grads_step.module, {n: inputs[n] for n in grad_names}).outputs
    assert float(grads["result0"]) == pytest.approx(loss, rel=1e-12)
    updated = ccopt.run(step.module, inputs).outputs
    assert float(updated["result0"]) == pytest.approx(loss, rel=1e-12)
    for i in range(2):
        for j, n in enumerate(PARAMETERS):
            g = grads[f"result{2 + 12 * i + j}"]
            m = 0.9 * inputs[f"l{i}_m_{n}"] + 0.1 * g
            v = 0.999 * inputs[f"l{i}_v_{n}"] + 0.001 * g * g
            direction = (m / (1 - 0.9**3)) / (np.sqrt(v / (1 - 0.999**3)) + 1e-8)
            w = inputs[f"l{i}_{n}"] - inputs["lr"] * direction
            np.testing.assert_allclose(updated[f"l{i}_{n}"], w, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(updated[f"l{i}_m_{n}"], m, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(updated[f"l{i}_v_{n}"], v, rtol=1e-12, atol=1e-14)
