"""Hand-written programs against numpy on global tensors: uneven splits, empty blocks,
rank-0 values, several placements of one computation, and calls, loops and in-place updates
around the ops. The expected values are computed here from the ops' meaning, never with
ccopt's helpers, so that the interpreter and its check cannot share a mistake."""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
import pytest

import ccopt

MESH = "dtensor.mesh @m [dp=2, tp=3]"


def ty(shape: Sequence[int], element: str, placements: Sequence[str]) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"!dtensor.tensor<{dims}{element}, @m[{', '.join(placements)}]>"


def program(args: Sequence[tuple[str, str]], body: str, result: tuple[str, str]) -> str:
    params = ", ".join(f"%{n}: {t}" for n, t in args)
    name, t = result
    return f"{MESH}\nfunc.func @f({params}) -> {t} {{\n{body}\n  func.return %{name} : {t}\n}}\n"


def run(text: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    (out,) = ccopt.run(text, inputs).outputs.values()
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


rng = np.random.default_rng(0)


def normal(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(
    ("element", "dtype", "tol"),
    [("f32", np.float32, 1e-5), ("f16", np.float16, 2e-2), ("bf16", ml_dtypes.bfloat16, 5e-2)],
)
def test_batched_matmul_transposed_rhs_split_contraction(element: str, dtype: type, tol: float):
    """Batch split over dp, the contraction (7, uneven over 3) over tp: a partial sum."""
    a, b = normal(5, 3, 7, dtype=dtype), normal(5, 4, 7, dtype=dtype)
    ta, tb = ty([5, 3, 7], element, ["S(0)", "S(2)"]), ty([5, 4, 7], element, ["S(0)", "S(2)"])
    tr = ty([5, 3, 4], element, ["S(0)", "P(sum)"])
    body = f"  %y = dtensor.matmul %a, %b transpose_rhs : ({ta}, {tb}) -> {tr}"
    got = run(program([("a", ta), ("b", tb)], body, ("y", tr)), {"a": a, "b": b})
    want = a.astype(np.float64) @ np.swapaxes(b.astype(np.float64), -1, -2)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 4)


@pytest.mark.parametrize(
    ("op", "fn"),
    [
        ("add", np.add),
        ("sub", np.subtract),
        ("mul", np.multiply),
        ("div", np.divide),
        ("max", np.maximum),
        ("min", np.minimum),
    ],
)
def test_binary_broadcasts_lower_rank_split_operand(op: str, fn: np.ufunc):
    """A [7] operand split with the [5, 7] one's dim 1, both uneven, as the left operand."""
    x, b = normal(5, 7), normal(7)
    tx, tb = ty([5, 7], "f32", ["S(0)", "S(1)"]), ty([7], "f32", ["R", "S(0)"])
    body = f"  %y = dtensor.{op} %b, %x : ({tb}, {tx}) -> {tx}"
    got = run(program([("x", tx), ("b", tb)], body, ("y", tx)), {"x": x, "b": b})
    np.testing.assert_allclose(got, fn(b, x), rtol=1e-6)


@pytest.mark.parametrize(
    ("kind", "partial", "empty"),
    [("sum", "sum", 0.0), ("mean", "sum", np.nan), ("prod", "prod", 1.0)]
    + [("max", "max", -np.inf), ("min", "min", np.inf)],
)
def test_reduction_over_split_dim_with_empty_blocks(kind: str, partial: str, empty: float):
    """Rows 5 over dp=2 and 0 rows (every block empty) give the partial reduction and its
    identity; after the all-reduce both equal numpy's."""
    for rows, want_fn in [(5, getattr(np, kind)), (0, None)]:
        x = normal(rows, 4)
        tx = ty([rows, 4], "f32", ["S(0)", "S(1)"])
        tp, tr = ty([4], "f32", [f"P({partial})", "S(0)"]), ty([4], "f32", ["R", "S(0)"])
        body = (
            f"  %y = dtensor.reduce {kind} %x dims [0] : {tx} -> {tp}\n"
            f"  %z = coll.all_reduce {partial} %y over [dp] : {tp} -> {tr}"
        )
        got = run(program([("x", tx)], body, ("z", tr)), {"x": x})
        want = want_fn(x, axis=0) if want_fn else np.full(4, empty)
        np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def test_integer_division_truncates_toward_zero():
    x = np.array([-7, 7, -7, 7, 5, 0], np.int32)
    y = np.array([2, -2, -2, 2, 3, 1], np.int32)
    t = ty([6], "i32", ["S(0)", "S(0)"])
    got = run(
        program([("x", t), ("y", t)], f"  %z = dtensor.div %x, %y : ({t}, {t}) -> {t}", ("z", t)),
        {"x": x, "y": y},
    )
    np.testing.assert_array_equal(got, [-3, -3, 3, 3, 1, 0])


@pytest.mark.parametrize(
    ("element", "dtype"),
    [("f32", np.float32), ("f64", np.float64), ("i32", np.int32), ("i64", np.int64)]
    + [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)],
)
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_all_reduce_of_per_rank_partials(element: str, dtype: type, kind: str):
    """Each tp coordinate's own partial (input stacked over tp), reduced over the group."""
    x = rng.integers(-3, 4, (3, 5, 4)).astype(dtype)
    tx, tr = ty([5, 4], element, ["S(1)", f"P({kind})"]), ty([5, 4], element, ["S(1)", "R"])
    body = f"  %y = coll.all_reduce {kind} %x over [tp] : {tx} -> {tr}"
    got = run(program([("x", tx)], body, ("y", tr)), {"x": x})
    want = getattr(np, kind)(x.astype(np.float64), axis=0)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2 if element[0] == "f" else 0)


def test_reduce_scatter_then_all_gather_uneven_is_all_reduce():
    x = normal(2, 3, 7, 2)
    tp, ts = ty([7, 2], "f32", ["P(max)", "P(max)"]), ty([7, 2], "f32", ["S(0)", "S(0)"])
    tr = ty([7, 2], "f32", ["R", "R"])
    body = (
        f"  %y = coll.reduce_scatter max %x over [dp, tp] dim 0 : {tp} -> {ts}\n"
        f"  %z = coll.all_gather %y over [dp, tp] : {ts} -> {tr}"
    )
    got = run(program([("x", tp)], body, ("z", tr)), {"x": x})
    np.testing.assert_array_equal(got, x.max(axis=(0, 1)))


@pytest.mark.parametrize("root", range(6))
def test_broadcast_root_in_group_order(root: int):
    x = normal(2, 3, 4)
    tv, tr = ty([4], "f32", ["V", "V"]), ty([4], "f32", ["R", "R"])
    body = f"  %y = coll.broadcast %x over [dp, tp] root {root} : {tv} -> {tr}"
    got = run(program([("x", tv)], body, ("y", tr)), {"x": x})
    np.testing.assert_array_equal(got, x.reshape(6, 4)[root])


@pytest.mark.parametrize(("offset", "cyclic"), [(1, False), (-1, False), (2, False), (1, True)])
def test_shift_along_tp(offset: int, cyclic: bool):
    """Coordinate i receives i - offset's value (modulo the axis when cyclic, else zeros)."""
    x = normal(2, 3, 4)
    tv = ty([4], "f32", ["V", "V"])
    flag = " cyclic" if cyclic else ""
    body = f"  %y = coll.shift %x over [tp] by {offset}{flag} : {tv} -> {tv}"
    got = run(program([("x", tv)], body, ("y", tv)), {"x": x})
    want = np.zeros_like(x)
    for i in range(3):
        src = (i - offset) % 3 if cyclic else i - offset
        if 0 <= src < 3:
            want[:, i] = x[:, src]
    np.testing.assert_array_equal(got, want)


def test_dropout_mask_does_not_depend_on_placement():
    x = normal(5, 7)
    outs = []
    for placements in (["R", "R"], ["S(0)", "R"], ["S(1)", "S(0)"], ["S(0)", "S(0)"]):
        t = ty([5, 7], "f32", placements)
        body = f"  %y = dtensor.dropout %x seed 11 prob 3.000000e-01 : {t}"
        outs.append(run(program([("x", t)], body, ("y", t)), {"x": x}))
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    kept = outs[0] != 0
    np.testing.assert_allclose(outs[0][kept], x[kept] / np.float32(0.7), rtol=1e-6)


def mlp_reference(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    y = gelu(x @ w1 + b1) @ w2
    e = np.exp(y - y.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    centered = s - s.mean(axis=-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + 1e-5)


def test_mlp_block_gives_the_same_global_result_under_both_placements():
    """All replicated vs Megatron-style (batch over dp, columns then rows over tp, uneven),
    converted back with collectives; both equal numpy."""
    b, s, h, f = 5, 7, 8, 10
    x3, xr = ty([b, s, h], "f32", ["S(0)", "R"]), ty([b, s, h], "f32", ["R", "R"])
    rr = lambda shape: ty(shape, "f32", ["R", "R"])  # noqa: E731
    replicated = program(
        [("x", xr), ("w1", rr([h, f])), ("b1", rr([f])), ("w2", rr([f, h]))],
        f"  %h0 = dtensor.matmul %x, %w1 : ({xr}, {rr([h, f])}) -> {rr([b, s, f])}\n"
        f"  %h1 = dtensor.add %h0, %b1 : ({rr([b, s, f])}, {rr([f])}) -> {rr([b, s, f])}\n"
        f"  %h2 = dtensor.gelu %h1 : {rr([b, s, f])}\n"
        f"  %y = dtensor.matmul %h2, %w2 : ({rr([b, s, f])}, {rr([f, h])}) -> {xr}\n"
        f"  %sm = dtensor.softmax %y dim 1 : {xr}\n"
        f"  %o = dtensor.layernorm %sm eps 1.000000e-05 : {xr} -> {xr}",
        ("o", xr),
    )
    w1t, b1t, w2t = (
        ty([h, f], "f32", ["R", "S(1)"]),
        ty([f], "f32", ["R", "S(0)"]),
        ty([f, h], "f32", ["R", "S(0)"]),
    )
    hidden, partial = (
        ty([b, s, f], "f32", ["S(0)", "S(2)"]),
        ty([b, s, h], "f32", ["S(0)", "P(sum)"]),
    )
    by_h, by_s = ty([b, s, h], "f32", ["S(0)", "S(2)"]), ty([b, s, h], "f32", ["S(0)", "S(1)"])
    sharded = program(
        [("x", x3), ("w1", w1t), ("b1", b1t), ("w2", w2t)],
        f"  %h0 = dtensor.matmul %x, %w1 : ({x3}, {w1t}) -> {hidden}\n"
        f"  %h1 = dtensor.add %h0, %b1 : ({hidden}, {b1t}) -> {hidden}\n"
        f"  %h2 = dtensor.gelu %h1 : {hidden}\n"
        f"  %y = dtensor.matmul %h2, %w2 : ({hidden}, {w2t}) -> {partial}\n"
        f"  %ys = coll.reduce_scatter sum %y over [tp] dim 2 : {partial} -> {by_h}\n"
        f"  %sm = dtensor.softmax %ys dim 1 : {by_h}\n"
        f"  %sa = coll.all_to_all %sm over [tp] dim 1 : {by_h} -> {by_s}\n"
        f"  %ln = dtensor.layernorm %sa eps 1.000000e-05 : {by_s} -> {by_s}\n"
        f"  %g = coll.all_gather %ln over [tp] : {by_s} -> {x3}\n"
        f"  %o = coll.all_gather %g over [dp] : {x3} -> {xr}",
        ("o", xr),
    )
    inputs = {"x": normal(b, s, h), "w1": normal(h, f), "b1": normal(f), "w2": normal(f, h)}
    want = mlp_reference(*(v.astype(np.float64) for v in inputs.values()))
    for text in (replicated, sharded):
        np.testing.assert_allclose(run(text, inputs), want, rtol=1e-4, atol=1e-5)


def test_loop_call_and_in_place_update_over_steps():
    """scf.for accumulates w three times; a callee all-reduces g and updates w in place
    (the caller's argument); a second step reads the updated w."""
    tw, tg = ty([7, 3], "f32", ["S(0)", "R"]), ty([7, 3], "f32", ["S(0)", "P(sum)"])
    text = f"""{MESH}
func.func private @sgd(%w: {tw}, %g: {tg}) -> {tw} {{
  %r = coll.all_reduce sum %g over [tp] : {tg} -> {tw}
  %s = dtensor.scale %r by 1.000000e-01 : {tw}
  %n = dtensor.sub %w, %s : ({tw}, {tw}) -> {tw}
  dtensor.update %w with %n : {tw}
  func.return %r : {tw}
}}
func.func @f(%w: {tw}, %g: {tg}) -> {tw} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = dtensor.fill 0.000000e+00 : {tw}
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %zero) -> ({tw}) {{
    %next = dtensor.add %a, %w : ({tw}, {tw}) -> {tw}
    scf.yield %next : {tw}
  }}
  %q = func.call @sgd(%w, %g) : ({tw}, {tg}) -> {tw}
  %o = dtensor.add %acc, %q : ({tw}, {tw}) -> {tw}
  func.return %o : {tw}
}}
"""
    w, g = normal(7, 3), normal(3, 7, 3)
    total = g.sum(axis=0)
    out = ccopt.run(text, {"w": w, "g": g}, steps=2).outputs
    np.testing.assert_allclose(out["w"], w - 0.2 * total, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["result0"], 3 * (w - 0.1 * total) + total, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("element", "dtype"), [("f32", np.float32), ("i64", np.int64)])
def test_rank0_partials_all_reduced_then_shifted(element: str, dtype: type):
    x = np.arange(1, 7, dtype=dtype).reshape(2, 3)
    tp, tr, tv = (
        ty([], element, ["P(sum)", "P(sum)"]),
        ty([], element, ["R", "R"]),
        ty([], element, ["R", "V"]),
    )
    body = (
        f"  %y = coll.all_reduce sum %x over [dp, tp] : {tp} -> {tr}\n"
        f"  %z = coll.shift %y over [tp] by 1 : {tr} -> {tv}"
    )
    got = run(program([("x", tp)], body, ("z", tv)), {"x": x})
    np.testing.assert_array_equal(got, [0, 21, 21])
