"""The GPT layer stack of the front end: sharded equals unsharded, gradients equal finite
differences, one function per layer kind, and examples/gpt_stack.mlir is the generator's output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects.dtensor_type import S
from ccopt.frontend.gpt import (
    MODELS,
    PARAMETERS,
    GPTShape,
    Layout,
    causal_mask,
    gpt_step,
    main,
)

ROOT = Path(__file__).resolve().parents[2]


def inputs_for(program: ccopt.frontend.Program, dtype: str, seed: int = 0) -> dict:
    """Well-scaled inputs: layernorm gains near 1, the causal mask, Adam's step t = 1."""
    rng = np.random.default_rng(seed)
    out = {}
    for a in program.function().body.blocks[0].args:
        shape, name = a.type.get_shape(), a.name_hint
        if name == "mask":
            out[name] = causal_mask(shape[0], dtype)
        elif name == "t":
            out[name] = np.array(1.0, dtype)
        elif name == "lr":
            out[name] = np.array(1e-2, dtype)
        elif "_v_" in name:
            out[name] = np.abs(rng.standard_normal(shape)).astype(dtype) * 0.01
        else:
            gain = name.endswith("_g") and "_m_" not in name
            out[name] = ((1.0 if gain else 0.0) + 0.3 * rng.standard_normal(shape)).astype(dtype)
    return out


@pytest.mark.parametrize("mesh", [{"dp": 2, "tp": 2}, {"dp": 1, "tp": 4}, {"dp": 4, "tp": 1}])
def test_sharded_step_equals_the_replicated_step(mesh: dict[str, int]) -> None:
    """Megatron TP + DP and every tensor replicated are the same training step: the same loss
    and the same updated parameters and Adam state."""
    sharded = gpt_step("tiny", mesh)
    reference = gpt_step("tiny", mesh, layout=Layout.replicated_everywhere(list(mesh)))
    inputs = inputs_for(sharded, "float32")
    a, b = ccopt.run(sharded.module, inputs), ccopt.run(reference.module, inputs)
    assert a.outputs.keys() == b.outputs.keys()
    assert len(a.outputs) == 1 + 3 * 12 * 2  # loss, then w, m, v of 12 parameters x 2 layers
    for key, value in a.outputs.items():
        np.testing.assert_allclose(value, b.outputs[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert not np.allclose(a.outputs["l0_wqkv"], inputs["l0_wqkv"])  # the step moved it


def test_gradients_equal_finite_differences() -> None:
    """Directional derivatives of the loss (f64, central differences) match the backward
    functions' gradients for the input and parameters of both layers."""
    step = gpt_step("tiny", {"dp": 2, "tp": 2}, dtype="f64", with_optimizer=False)
    inputs = inputs_for(step, "float64", seed=1)
    outputs = ccopt.run(step.module, inputs).outputs
    rng = np.random.default_rng(2)
    eps = 1e-6
    names = ["x", "l0_ln1_g", "l0_wqkv", "l0_bqkv", "l0_wo", "l0_bo", "l1_w1", "l1_b1", "l1_w2"]
    for name in names:
        u = rng.standard_normal(inputs[name].shape)
        plus = {**inputs, name: inputs[name] + eps * u}
        minus = {**inputs, name: inputs[name] - eps * u}
        loss = [ccopt.run(step.module, i).outputs["result0"] for i in (plus, minus)]
        numeric = float(loss[0] - loss[1]) / (2 * eps)
        index = 1 if name == "x" else 2 + 12 * int(name[1]) + PARAMETERS.index(name[3:])
        analytic = float(np.sum(outputs[f"result{index}"] * u))
        assert numeric == pytest.approx(analytic, rel=1e-6, abs=1e-9), name


def test_one_function_per_layer_kind_called_per_layer() -> None:
    step = gpt_step("tiny", {"dp": 2, "tp": 2}, layers=5)
    functions = [op for op in step.module.ops if isinstance(op, func.FuncOp)]
    assert [f.sym_name.data for f in functions] == [
        "layer_forward",
        "layer_backward",
        "layer_adam",
        "gpt_step",
    ]
    calls = [
        op.callee.root_reference.data
        for op in step.function().walk()
        if isinstance(op, func.CallOp)
    ]
    assert calls == ["layer_forward"] * 5 + ["layer_backward", "layer_adam"] * 5


def test_gpt3_shapes_build_without_allocating() -> None:
    """A 96-layer GPT-3 step on a 8x8 mesh is only IR: it builds in seconds."""
    step = gpt_step("gpt3-175b", {"dp": 8, "tp": 8}, batch=64, layers=96, dtype="bf16")
    args = step.function().body.blocks[0].args
    assert len(args) == 3 + 3 * 12 * 96 + 2
    assert MODELS["gpt3-175b"] == GPTShape(96, 12288, 96)


def test_an_integer_dtype_is_refused_before_building() -> None:
    """layernorm's verifier refused the built step with a VerifyException."""
    with pytest.raises(CcoptError, match=r"a GPT computes in a float type \(f16, bf16, f32, f64\)"):
        gpt_step("tiny", dtype="i32")


def test_heads_must_split_evenly() -> None:
    with pytest.raises(CcoptError, match="heads must divide the hidden size and split evenly"):
        gpt_step("tiny", {"dp": 1, "tp": 3})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layers", "0"], "error: a GPT needs layers >= 1, got 0"),
        (["--layers", "-3"], "error: a GPT needs layers >= 1, got -3"),
        (["--batch", "0"], "error: a GPT needs batch >= 1, got 0"),
        (["--seq", "0"], "error: a GPT needs seq >= 1, got 0"),
        (["--batch", "3"], "error: batch 3 does not split evenly over the 2 ranks of axes ['dp']"),
        (["--mesh", "dp=0,tp=2"], "error: mesh axis 'dp' has size 0; sizes must be >= 1"),
        (["--mesh", "dp=2,dp=2"], "error: --mesh: bad mesh 'dp=2,dp=2': axis 'dp' is named twice"),
        (["--mesh", "dp=2,tp"], "error: --mesh: bad mesh 'dp=2,tp': expected axis=size pairs"),
        (["--mesh", "dp=2,,tp=2"], "error: --mesh: bad mesh 'dp=2,,tp=2': an empty axis"),
        (["--data", "dp,,tp"], "error: --data/--tensor: an empty axis in 'dp,,tp'"),
        (
            ["--mesh", ""],
            "error: --mesh: bad mesh '': expected axis=size pairs like dp=2,tp=4, got none",
        ),
        (["--dtype", "i32"], "argument --dtype: invalid choice: 'i32'"),
        (["--data", "zz"], "error: --data/--tensor: no mesh axis zz (axes: dp, tp)"),
        (["--data", "dp", "--tensor", "dp"], "error: --data/--tensor: dp named in both"),
        (
            ["--data", "dp,tp"],
            "error: --data names tp, which --tensor takes by default: give --tensor too",
        ),
        (["--open", "--tensor", "tp"], "error: --open leaves every placement to auto-shard"),
    ],
)
def test_bad_command_lines_get_one_line_errors(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sizes the step cannot be built with are refused up front with what is wrong, not as a
    traceback or as a verifier error on an op deep inside the step; nothing is written."""
    out = tmp_path / "gpt.mlir"
    with pytest.raises(SystemExit) as exit_:
        main(["--model", "tiny", *args, "-o", str(out)])
    assert exit_.value.code != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_a_parameter_must_split_evenly_too() -> None:
    """An uneven split of a weight (the FFN width over the tensor ranks) is named by the
    parameter, before any op is built."""
    shape = GPTShape(1, 16, 4, seq=4, batch=2, ffn=30)
    with pytest.raises(CcoptError, match=r"w1's dimension 1 \(30\) does not split evenly"):
        gpt_step(shape, {"tp": 4})


def test_unknown_axis_is_an_error() -> None:
    with pytest.raises(CcoptError, match="no mesh axis tp"):
        gpt_step("tiny", {"dp": 2, "mp": 2}, tensor_axes=["tp"])


def test_any_mesh_axes_may_be_data_or_tensor_parallel() -> None:
    """Two data-parallel axes (nodes x GPUs), tensor parallel over a third; an axis in neither
    role holds everything replicated. Same step as all replicated."""
    mesh = {"node": 2, "gpu": 2, "tp": 2}
    sharded = gpt_step("tiny", mesh, data_axes=["node", "gpu"], tensor_axes=["tp"], layers=1)
    reference = gpt_step("tiny", mesh, layout=Layout.replicated_everywhere(list(mesh)), layers=1)
    inputs = inputs_for(sharded, "float32")
    a, b = ccopt.run(sharded.module, inputs), ccopt.run(reference.module, inputs)
    for key, value in a.outputs.items():
        np.testing.assert_allclose(value, b.outputs[key], rtol=1e-4, atol=1e-5, err_msg=key)
    only_data = gpt_step("tiny", {"dp": 4}, layers=1)  # no 'tp' axis: data parallel only
    assert only_data.function().body.blocks[0].args[0].type.placement_list == (S(0),)


def test_the_command_line_names_data_and_tensor_axes_and_warns_of_idle_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--mesh dp=2,tp=2,pp=2` replicated everything over pp without a word, and the command
    line could not name other axes' roles as `gpt_step` can."""
    out = tmp_path / "gpt.mlir"
    assert (
        main(["--model", "tiny", "--layers", "1", "--mesh", "dp=2,tp=2,pp=2", "-o", str(out)]) == 0
    )
    assert "warning: mesh axes pp are neither data- nor tensor-parallel" in capsys.readouterr().err
    mesh = ["--mesh", "node=2,gpu=2,tp=2", "--data", "node,gpu", "--layers", "1", "-o", str(out)]
    assert main(["--model", "tiny", *mesh]) == 0
    assert capsys.readouterr().err == ""
    assert "!dtensor.tensor<4x8x16xf32, @m[S(0), S(0), R]>" in out.read_text()


def test_the_example_is_the_generators_output(tmp_path: Path) -> None:
    """examples/gpt_stack.mlir: `python -m ccopt.frontend.gpt --model tiny --mesh dp=2,tp=2
    --layers 2 -o examples/gpt_stack.mlir`."""
    out = tmp_path / "gpt.mlir"
    assert main(["--model", "tiny", "--mesh", "dp=2,tp=2", "--layers", "2", "-o", str(out)]) == 0
    assert out.read_text() == (ROOT / "examples" / "gpt_stack.mlir").read_text()


def test_open_on_the_command_line_leaves_every_placement_open(tmp_path: Path) -> None:
    """`--open` is the auto-parallel issue's way in (README's auto-shard commands start there)."""
    out = tmp_path / "open.mlir"
    assert (
        main(["--model", "tiny", "--mesh", "dp=2,tp=2", "--layers", "2", "--open", "-o", str(out)])
        == 0
    )
    text = out.read_text()
    assert "@m[?, ?]" in text and "@m[S(" not in text
