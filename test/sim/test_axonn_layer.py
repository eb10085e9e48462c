"""The emitted AxoNN layer (ccopt-plan axonn --emit) computes the unsharded layer: forward and
backward on a 2x2x2x2 grid (16 ranks) equal numpy's, whose backward is checked by finite
differences."""

from __future__ import annotations

import numpy as np
import pytest

import ccopt
from ccopt.frontend.axonn_layer import LINEARS, LayerShape, emit_layer, weight_shape
from ccopt.sim.axonn import Grid

TOKENS, HIDDEN = 8, 4


def reference(x, dy, w):
    """The layer and its gradients in float64: y, dx, dW per linear layer."""
    q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]
    a = q * k + v
    h = x + a @ w["o"]
    t = np.tanh(h @ w["fc1"])
    y = h + t @ w["fc2"]
    dt = dy @ w["fc2"].T
    df = dt * (1 - t * t)
    dh = dy + df @ w["fc1"].T
    da = dh @ w["o"].T
    dq, dk = da * k, da * q
    dx = dh + dq @ w["q"].T + dk @ w["k"].T + da @ w["v"].T
    grads = {
        "fc2": t.T @ dy,
        "fc1": h.T @ df,
        "o": a.T @ dh,
        "q": x.T @ dq,
        "k": x.T @ dk,
        "v": x.T @ da,
    }
    return y, dx, grads


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {
        "x": rng.standard_normal((TOKENS, HIDDEN)),
        "dy": rng.standard_normal((TOKENS, HIDDEN)),
    }
    for name, k, transposed in LINEARS:
        arrays[f"w_{name}"] = rng.standard_normal(weight_shape(HIDDEN, k, transposed)) * 0.5
    return arrays


def test_reference_backward_is_the_gradient():
    """Finite differences of <y, dy> agree with the hand-written backward of `reference`."""
    a = inputs(1)
    w = {name: a[f"w_{name}"] for name, _, _ in LINEARS}
    _, dx, grads = reference(a["x"], a["dy"], w)
    eps = 1e-6

    def loss(x, weights):
        return float(np.sum(reference(x, a["dy"], weights)[0] * a["dy"]))

    for i, j in [(0, 0), (3, 2), (7, 3)]:
        bumped = a["x"].copy()
        bumped[i, j] += eps
        lowered = a["x"].copy()
        lowered[i, j] -= eps
        assert (loss(bumped, w) - loss(lowered, w)) / (2 * eps) == pytest.approx(dx[i, j], rel=1e-5)
    for name in ("q", "o", "fc1"):
        up, down = dict(w), dict(w)
        up[name] = w[name].copy()
        up[name][1, 2] += eps
        down[name] = w[name].copy()
        down[name][1, 2] -= eps
        fd = (loss(a["x"], up) - loss(a["x"], down)) / (2 * eps)
        assert fd == pytest.approx(grads[name][1, 2], rel=1e-5)


@pytest.mark.parametrize("grid", [Grid(2, 2, 2, 2), Grid(1, 1, 1, 1), Grid(4, 1, 1, 2)])
def test_emitted_layer_equals_the_unsharded_layer(grid):
    """Every rank's shards, run with AxoNN's collectives and the OAG/OAR/ORS schedule, assemble
    into the unsharded layer's output, input gradient and weight gradients."""
    a = inputs()
    text = emit_layer(grid, LayerShape(TOKENS, HIDDEN, "f32"))
    result = ccopt.run(text, {k: v.astype(np.float32) for k, v in a.items()})
    w = {name: a[f"w_{name}"] for name, _, _ in LINEARS}
    y, dx, grads = reference(a["x"], a["dy"], w)
    want = [y, dx, *(grads[name] for name, _, _ in LINEARS)]
    got = [result.outputs[f"result{i}"] for i in range(len(want))]
    for g, expected in zip(got, want, strict=True):
        np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_emitted_layer_has_axonns_collectives_and_schedules():
    text = emit_layer(Grid(2, 2, 2, 2), LayerShape(TOKENS, HIDDEN, "f32"))
    assert text.count("coll.all_gather") == 6  # one per weight, over depth, prefetched (OAG)
    assert text.count("over [depth] dim 0") == 6  # dW reduce-scatter over depth (ORS)
    assert text.count("over [data]") == 6  # dW shard all-reduce over data
    assert text.count("sched.execute stream 2") == 6  # dX all-reduce behind the dW GEMM (OAR)
    assert text.count("sched.execute stream 3") == 6
    # forward all-reduces: column after the 4 plain layers, row after the 2 transposed ones
    assert text.count("over [col]") == 4 + 2
    assert text.count("over [row]") == 2 + 4
