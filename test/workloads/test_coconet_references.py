"""The unoptimized CoCoNeT acceptance programs (examples/*.mlir) against independent numpy
references, on groups of 1, 2, 3, 4 and 8 ranks, with sizes divisible and not divisible by the
group, per-rank gradients for P(sum) inputs and bitwise-equal replicas.

The references are written here from the math (float64), not from the interpreter; only the
Philox `uniform` is imported, to know which elements dropout keeps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from example_text import program

import ccopt
from ccopt.interpreters.philox import uniform
from ccopt.runner import RunResult

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RANKS = [1, 2, 3, 4, 8]
RTOL, ATOL = 1e-5, 1e-6


def f32(a: np.ndarray | float) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert got.dtype == np.float32
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def assert_replicated(result: RunResult, name: str) -> None:
    """Every rank holds bitwise the global value."""
    value = result.outputs[name]
    shards = result.shards[name]
    for shard in shards:
        assert shard.shape == value.shape and shard.dtype == value.dtype
        assert shard.tobytes() == value.tobytes()


def dropout_ref(y: np.ndarray, seed: int, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Dropout of a logical tensor: element i (row-major global index) kept iff u_i >= p."""
    index = np.arange(y.size, dtype=np.int64).reshape(y.shape)
    keep = uniform(seed, index) >= prob
    return np.where(keep, y / (1.0 - prob), 0.0), keep


def gelu_ref(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def d(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# --- 1. SGD ------------------------------------------------------------------------------------
SGD_SIZES = [1030, 24, 13]  # 1030: not divisible by 3, 4, 8; 24: by all groups; 13: by none


@pytest.mark.parametrize("n", SGD_SIZES)
@pytest.mark.parametrize("p", RANKS)
def test_sgd(p: int, n: int) -> None:
    rng = np.random.default_rng(100 * p + n)
    g = f32(rng.standard_normal((p, n)))  # rank r's own gradient in row r
    w = f32(rng.standard_normal(n))
    lr = f32(0.05)
    result = ccopt.run(program("sgd", {"1030": str(n)}), {"g": g, "w": w, "lr": lr}, mesh=f"dp={p}")
    assert set(result.outputs) == {"w"}
    close(result.outputs["w"], d(w) - 0.05 * d(g).sum(axis=0))
    assert_replicated(result, "w")
    assert len(result.shards["w"]) == p


def test_sgd_gradients_differ_per_rank_and_are_summed() -> None:
    # rank r holds r+1 everywhere: the all-reduce must add 1 + 2 + 3 = 6, not use one rank's
    g = f32(np.arange(1, 4)[:, None] * np.ones((3, 1030)))
    w = f32(np.full(1030, 10.0))
    result = ccopt.run(EXAMPLES / "sgd.mlir", {"g": g, "w": w, "lr": f32(0.5)}, mesh="dp=3")
    assert np.array_equal(result.outputs["w"], np.full(1030, 7.0, np.float32))
    # a logical (unstacked) gradient is rank 0's, the other ranks hold zeros
    result = ccopt.run(EXAMPLES / "sgd.mlir", {"g": g[1], "w": w, "lr": f32(0.5)}, mesh="dp=3")
    assert np.array_equal(result.outputs["w"], np.full(1030, 9.0, np.float32))


def test_all_reduce_combines_in_rank_order() -> None:
    # f32: (1 + 1e8) - 1e8 = 0 in rank order 0, 1, 2; the reverse order would give 1
    g = np.zeros((3, 1030), np.float32)
    g[:, 0] = [1.0, 1e8, -1e8]
    g[:, 1] = [-1e8, 1e8, 1.0]  # (-1e8 + 1e8) + 1 = 1
    result = ccopt.run(
        EXAMPLES / "sgd.mlir", {"g": g, "w": f32(np.zeros(1030)), "lr": f32(1.0)}, mesh="dp=3"
    )
    assert result.outputs["w"][0] == 0.0
    assert result.outputs["w"][1] == -1.0
    assert_replicated(result, "w")


def test_sgd_three_steps() -> None:
    rng = np.random.default_rng(3)
    g, w = f32(rng.standard_normal((4, 1030))), f32(rng.standard_normal(1030))
    result = ccopt.run(
        EXAMPLES / "sgd.mlir", {"g": g, "w": w, "lr": f32(0.01)}, mesh="dp=4", steps=3
    )
    close(result.outputs["w"], d(w) - 3 * 0.01 * d(g).sum(axis=0))
    assert_replicated(result, "w")


# --- 2. Adam -----------------------------------------------------------------------------------
def adam_ref(g_sum, w, m, v, lr, t):
    m = 0.9 * m + 0.1 * g_sum
    v = 0.999 * v + 0.001 * g_sum * g_sum
    m_hat = m / (1 - 0.9**t)
    v_hat = v / (1 - 0.999**t)
    w = w - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
    return w, m, v


@pytest.mark.parametrize("shape", [(515, 7), (16, 8), (5, 3)])
@pytest.mark.parametrize("p", RANKS)
def test_adam_three_steps_with_bias_correction(p: int, shape: tuple[int, int]) -> None:
    text = program("adam", {"515x7": "x".join(map(str, shape))})
    rng = np.random.default_rng(p * 1000 + shape[0])
    w = f32(rng.standard_normal(shape))
    m = f32(0.1 * rng.standard_normal(shape))
    v = f32(0.01 * np.abs(rng.standard_normal(shape)))  # second moments are non-negative
    lr = f32(1e-2)
    ref_w, ref_m, ref_v = d(w), d(m), d(v)
    for t in (1, 2, 3):
        g = f32(rng.standard_normal((p, *shape)) / p)
        result = ccopt.run(
            text, {"g": g, "w": w, "m": m, "v": v, "lr": lr, "t": f32(t)}, mesh=f"dp={p}"
        )
        assert set(result.outputs) == {"w", "m", "v"}
        ref_w, ref_m, ref_v = adam_ref(d(g).sum(axis=0), ref_w, ref_m, ref_v, 1e-2, t)
        w, m, v = result.outputs["w"], result.outputs["m"], result.outputs["v"]
        close(m, ref_m)
        close(v, ref_v)
        close(w, ref_w)
        assert np.all(v >= 0)
        for name in ("w", "m", "v"):
            assert_replicated(result, name)


def test_adam_first_step_from_zero_state_is_sign_of_gradient() -> None:
    # m = v = 0, t = 1: m_hat = g, v_hat = g^2, so w' = w - lr * g / (|g| + eps) ~ w - lr * sign(g)
    rng = np.random.default_rng(5)
    g = f32(rng.standard_normal((3, 515, 7)))
    zeros = f32(np.zeros((515, 7)))
    result = ccopt.run(
        EXAMPLES / "adam.mlir",
        {"g": g, "w": zeros, "m": zeros, "v": zeros, "lr": f32(0.001), "t": f32(1)},
        mesh="dp=3",
    )
    g_sum = d(g).sum(axis=0)
    close(result.outputs["w"], -0.001 * g_sum / (np.abs(g_sum) + 1e-8))
    close(result.outputs["m"], 0.1 * g_sum)
    close(result.outputs["v"], 0.001 * g_sum**2)


# --- 3. LAMB -----------------------------------------------------------------------------------
def lamb_ref(g_sum, w, m, v, lr, t):
    m = 0.9 * m + 0.1 * g_sum
    v = 0.999 * v + 0.001 * g_sum * g_sum
    m_hat = m / (1 - 0.9**t)
    v_hat = v / (1 - 0.999**t)
    u = m_hat / (np.sqrt(v_hat) + 1e-6) + 0.01 * w
    w_norm = np.sqrt(np.sum(w * w))  # global norms over the whole tensor
    u_norm = np.sqrt(np.sum(u * u))
    trust = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return w - lr * trust * u, m, v, trust


@pytest.mark.parametrize("shape", [(300, 11), (24, 4), (7, 5)])
@pytest.mark.parametrize("p", RANKS)
def test_lamb_global_norms(p: int, shape: tuple[int, int]) -> None:
    text = program("lamb", {"300x11": "x".join(map(str, shape))})
    rng = np.random.default_rng(p * 77 + shape[1])
    w = f32(rng.standard_normal(shape))
    m = f32(0.1 * rng.standard_normal(shape))
    v = f32(0.01 * np.abs(rng.standard_normal(shape)))
    for t in (1, 2):
        g = f32(rng.standard_normal((p, *shape)))
        inputs = {"g": g, "w": w, "m": m, "v": v, "lr": f32(0.01), "t": f32(t)}
        result = ccopt.run(text, inputs, mesh=f"dp={p}")
        ref_w, ref_m, ref_v, trust = lamb_ref(d(g).sum(axis=0), d(w), d(m), d(v), 0.01, t)
        assert 0 < trust and abs(trust - 1) > 0.05  # the trust ratio matters here
        close(result.outputs["m"], ref_m)
        close(result.outputs["v"], ref_v)
        close(result.outputs["w"], ref_w)
        for name in ("w", "m", "v"):
            assert_replicated(result, name)
        w, m, v = result.outputs["w"], result.outputs["m"], result.outputs["v"]


@pytest.mark.parametrize("p", RANKS)
def test_lamb_zero_update_norm_gives_trust_one_and_no_nan(p: int) -> None:
    # w = 0 and gradients that cancel across ranks (a on rank 0, -a on rank 1): the update u and
    # both norms are exactly 0; the select must give trust 1 and no 0/0
    shape = (300, 11)
    a = f32(np.random.default_rng(p).standard_normal(shape))
    g = np.zeros((p, *shape), np.float32)
    if p > 1:
        g[0], g[1] = a, -a
    zeros = f32(np.zeros(shape))
    inputs = {"g": g, "w": zeros, "m": zeros, "v": zeros, "lr": f32(0.1), "t": f32(1)}
    result = ccopt.run(EXAMPLES / "lamb.mlir", inputs, mesh=f"dp={p}")
    for name in ("w", "m", "v"):
        out = result.outputs[name]
        assert not np.any(np.isnan(out))
        assert np.array_equal(out, zeros)
        assert_replicated(result, name)


@pytest.mark.parametrize("p", [1, 3, 8])
def test_lamb_zero_weight_norm_gives_trust_one(p: int) -> None:
    # ||w|| = 0, ||u|| > 0: trust ratio 1 (not ||w||/||u|| = 0), so w' = -lr * u
    shape = (300, 11)
    rng = np.random.default_rng(17 + p)
    g = f32(rng.standard_normal((p, *shape)))
    zeros = f32(np.zeros(shape))
    inputs = {"g": g, "w": zeros, "m": zeros, "v": zeros, "lr": f32(0.1), "t": f32(1)}
    result = ccopt.run(EXAMPLES / "lamb.mlir", inputs, mesh=f"dp={p}")
    g_sum = d(g).sum(axis=0)
    ref_w, _, _, trust = lamb_ref(g_sum, d(zeros), d(zeros), d(zeros), 0.1, 1)
    assert trust == 1.0
    close(result.outputs["w"], ref_w)
    close(result.outputs["w"], -0.1 * g_sum / (np.abs(g_sum) + 1e-6))
    assert_replicated(result, "w")


# --- 4. Megatron row-parallel layer ------------------------------------------------------------
ROW_SHAPES = {
    "example": None,  # x 4x6x40, w 40x34: K = 40 divisible by 1, 2, 4, 8, not 3
    "odd": {"4x6x40": "3x5x37", "40x34": "37x13", "4x6x34": "3x5x13", "34": "13"},
    "tiny": {"4x6x40": "2x3x5", "40x34": "5x7", "4x6x34": "2x3x7", "34": "7"},  # empty blocks
}


def _row_shape(shapes: dict[str, str] | None) -> tuple[int, int, int, int]:
    b, s, k = map(int, (shapes or {}).get("4x6x40", "4x6x40").split("x"))
    n = int((shapes or {}).get("34", "34"))
    return b, s, k, n


@pytest.mark.parametrize("prob", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("variant", list(ROW_SHAPES))
@pytest.mark.parametrize("p", RANKS)
def test_megatron_row_parallel(p: int, variant: str, prob: float) -> None:
    shapes = ROW_SHAPES[variant]
    text = program("megatron_row_parallel", shapes, **{"prob 0.1": f"prob {prob}"})
    b_, s_, k, n = _row_shape(shapes)
    rng = np.random.default_rng(p * 31 + k)
    x = f32(0.5 * rng.standard_normal((b_, s_, k)))
    w = f32(0.5 * rng.standard_normal((k, n)))
    b = f32(rng.standard_normal(n))
    r = f32(rng.standard_normal((b_, s_, n)))
    result = ccopt.run(text, {"x": x, "w": w, "b": b, "r": r}, mesh=f"tp={p}")
    y = d(x) @ d(w) + d(b)
    dropped, keep = dropout_ref(y, 1234, prob)
    out = result.outputs["result0"]
    close(out, dropped + d(r))
    # dropped elements are exactly the residual; with p = 0 nothing is dropped
    assert np.array_equal(out[~keep], r[~keep])
    if prob == 0.0:
        assert keep.all()
    else:
        assert 0 < np.count_nonzero(~keep) < keep.size
    assert_replicated(result, "result0")
    assert len(result.shards["result0"]) == p


def test_row_parallel_dropout_mask_is_elementwise_not_one_draw() -> None:
    # CoCoNeT's defect: one random number for all elements. Here the kept fraction is ~ 1 - p.
    text = program("megatron_row_parallel", **{"prob 0.1": "prob 0.5"})
    # x = w = r = 0 and b = 1: every element of the dropout input is 1
    inputs = {
        "x": f32(np.zeros((4, 6, 40))),
        "w": f32(np.zeros((40, 34))),
        "b": f32(np.ones(34)),
        "r": f32(np.zeros((4, 6, 34))),
    }
    result = ccopt.run(text, inputs, mesh="tp=3")
    out = result.outputs["result0"]
    _, keep = dropout_ref(np.ones((4, 6, 34)), 1234, 0.5)
    assert set(np.unique(out).tolist()) == {0.0, 2.0}
    assert np.array_equal(out == 2.0, keep)
    assert 0.4 < keep.mean() < 0.6


# --- 5. Pipeline stage boundary ----------------------------------------------------------------
PIPE_SHAPES = {
    "example": None,  # x 8x48, w 48x36
    "odd": {"8x48": "5x19", "48x36": "19x11", "8x36": "5x11", "36": "11"},
}


@pytest.mark.parametrize("variant", list(PIPE_SHAPES))
@pytest.mark.parametrize("pp,tp", [(2, 1), (3, 1), (2, 2), (4, 1), (2, 3), (2, 4), (4, 2), (8, 1)])
def test_pipeline_boundary(pp: int, tp: int, variant: str) -> None:
    shapes = PIPE_SHAPES[variant]
    text = program("pipeline_boundary", shapes)
    rows, k = map(int, (shapes or {}).get("8x48", "8x48").split("x"))
    n = int((shapes or {}).get("36", "36"))
    rng = np.random.default_rng(pp * 10 + tp)
    # every stage has its own values: global arrays are stacked over pp
    x = f32(0.5 * rng.standard_normal((pp, rows, k)))
    w = f32(0.5 * rng.standard_normal((pp, k, n)))
    b = f32(rng.standard_normal((pp, n)))
    r = f32(rng.standard_normal((pp, rows, n)))
    result = ccopt.run(text, {"x": x, "w": w, "b": b, "r": r}, mesh=f"pp={pp},tp={tp}")
    out = result.outputs["result0"]
    assert out.shape == (pp, rows, n)
    stage = np.stack(
        [dropout_ref(d(x[s]) @ d(w[s]) + d(b[s]), 99, 0.1)[0] + d(r[s]) for s in range(pp)]
    )
    # stage s + 1 receives stage s's activation; stage 0 receives zeros
    # (one stage, pp = 1, is rejected by the verifier: the shift would send nothing)
    expected = np.concatenate([np.zeros((1, rows, n)), stage[:-1]])
    assert np.array_equal(out[0], np.zeros((rows, n), np.float32))
    close(out, expected)
    # replicated over tp: every rank of stage s holds bitwise the same value
    shards = result.shards["result0"]
    assert len(shards) == pp * tp
    for rank, shard in enumerate(shards):
        assert shard.tobytes() == out[rank // tp].tobytes()


# --- 6. Fusion legality ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [777, 16])
@pytest.mark.parametrize("p", RANKS)
def test_fusion_legality_program(p: int, n: int) -> None:
    rng = np.random.default_rng(p + n)
    g = f32(rng.standard_normal((p, n)))
    w = f32(rng.standard_normal(n))
    o = f32(rng.standard_normal(n))
    result = ccopt.run(
        program("fusion_legality", {"777": str(n)}),
        {"g": g, "w": w, "o": o, "lr": f32(0.25)},
        mesh=f"dp={p}",
    )
    w1 = d(w) - 0.25 * d(g).sum(axis=0)
    assert set(result.outputs) == {"result0", "result1"}
    close(result.outputs["result0"], w1)
    close(result.outputs["result1"], d(o) - w1)
    assert_replicated(result, "result0")
    assert_replicated(result, "result1")


# --- Megatron MLP block on a 2-axis mesh -------------------------------------------------------
MLP_SHAPES = {
    "example": None,  # x 6x10x24, hidden 96
    "odd": {
        "6x10x24": "5x3x10",
        "24x96": "10x22",
        "96": "22",
        "6x10x96": "5x3x22",
        "96x24": "22x10",
        "24": "10",
    },
}


@pytest.mark.parametrize("variant", list(MLP_SHAPES))
@pytest.mark.parametrize(
    "dp,tp", [(1, 1), (1, 2), (2, 1), (1, 3), (3, 1), (2, 2), (4, 1), (2, 4), (4, 2), (1, 8)]
)
def test_megatron_mlp(dp: int, tp: int, variant: str) -> None:
    shapes = MLP_SHAPES[variant]
    text = program("megatron_mlp", shapes)
    bsz, seq, dim = map(int, (shapes or {}).get("6x10x24", "6x10x24").split("x"))
    hid = int((shapes or {}).get("96", "96"))
    rng = np.random.default_rng(dp * 8 + tp)
    x = f32(rng.standard_normal((bsz, seq, dim)))
    w1 = f32(rng.standard_normal((dim, hid)) / np.sqrt(dim))
    b1 = f32(0.1 * rng.standard_normal(hid))
    w2 = f32(rng.standard_normal((hid, dim)) / np.sqrt(hid))
    b2 = f32(0.1 * rng.standard_normal(dim))
    result = ccopt.run(
        text, {"x": x, "w1": w1, "b1": b1, "w2": w2, "b2": b2}, mesh=f"dp={dp},tp={tp}"
    )
    h = gelu_ref(d(x) @ d(w1) + d(b1))
    dropped, keep = dropout_ref(h @ d(w2) + d(b2), 7, 0.1)
    out = result.outputs["result0"]
    close(out, dropped + d(x))
    assert np.array_equal(out[~keep], x[~keep])
    # [S(0), R]: ranks of one dp block hold bitwise the same block; the blocks (ceil-div,
    # possibly empty) concatenate to the global value
    shards = result.shards["result0"]
    assert len(shards) == dp * tp
    per_dp = [shards[i * tp] for i in range(dp)]
    for rank, shard in enumerate(shards):
        assert shard.tobytes() == per_dp[rank // tp].tobytes()
    block = -(-bsz // dp)
    assert [s.shape[0] for s in per_dp] == [max(0, min(block, bsz - i * block)) for i in range(dp)]
    assert np.concatenate(per_dp).tobytes() == out.tobytes()


def test_mlp_result_is_independent_of_the_mesh() -> None:
    # the same global inputs on different meshes: equal up to float reassociation
    rng = np.random.default_rng(1)
    inputs = {
        "x": f32(rng.standard_normal((6, 10, 24))),
        "w1": f32(rng.standard_normal((24, 96)) / 5),
        "b1": f32(rng.standard_normal(96) / 10),
        "w2": f32(rng.standard_normal((96, 24)) / 10),
        "b2": f32(rng.standard_normal(24) / 10),
    }
    base = ccopt.run(EXAMPLES / "megatron_mlp.mlir", inputs, mesh="dp=1,tp=1").outputs["result0"]
    for mesh in ("dp=2,tp=4", "dp=3,tp=1", "dp=1,tp=3", "dp=4,tp=2"):
        other = ccopt.run(EXAMPLES / "megatron_mlp.mlir", inputs, mesh=mesh).outputs["result0"]
        np.testing.assert_allclose(other, base, rtol=RTOL, atol=ATOL)
