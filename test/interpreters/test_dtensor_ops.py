"""The reference interpreter's dtensor ops against numpy on global values.

Every test builds a one-op program for a drawn mesh (1 to 8 ranks on 1 to 3 axes), drawn shapes
(sizes smaller than or not divisible by the group, so that some ranks hold short or empty blocks)
and drawn placements that the op's inference accepts (composite splits, partial and varying
values included). The interpreter runs it rank by rank; the gathered result must equal the op
applied with numpy to the logical inputs (partials reduced in rank order), within a per-dtype
tolerance (integers and booleans exactly), and replicas must be bitwise identical.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from interp_support import (
    BF16,
    F16,
    F32,
    F64,
    FLOATS,
    HALF,
    I1,
    I32,
    I64,
    INTS,
    as_f64,
    assert_replicas_bitwise_equal,
    bitwise_equal,
    bools,
    candidates,
    check_op,
    choice,
    dims,
    draw_placements,
    expected,
    float_types,
    fmt_float,
    global_input,
    ints,
    make_mesh,
    meshes,
    normal,
    positive,
    program,
    run,
    shapes,
)
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType

import ccopt
from ccopt.dialects import dtensor as dt
from ccopt.dialects import inference as infer
from ccopt.dialects.dtensor_type import DTensorType, P, R, S, V
from ccopt.interpreters.distributed import numpy_dtype
from ccopt.interpreters.philox import uniform

SETTINGS = settings(max_examples=40, deadline=None)
FEW = settings(max_examples=25, deadline=None)

seeds = st.integers(0, 2**32 - 1)


def rng_of(data: st.DataObject) -> np.random.Generator:
    return np.random.default_rng(data.draw(seeds, label="rng seed"))


def cands_for(rank: int, element_type, partial: bool = True) -> list:
    """Candidate placements; half-precision values are not partial (their partial sums round)."""
    return candidates(rank, partial=partial and element_type not in HALF)


@st.composite
def broadcast_shapes(draw, n: int, max_rank: int = 3) -> list[tuple[int, ...]]:
    """`n` shapes that broadcast together: suffixes of one shape with some dims set to 1."""
    out = draw(shapes(0, max_rank))
    result = []
    for _ in range(n):
        rank = draw(st.integers(0, len(out)))
        suffix = out[len(out) - rank :]
        result.append(tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in suffix))
    return result


def dense_array(values) -> str:
    """An i64 array property in the ops' short form: `[1, 2]`."""
    return "[" + ", ".join(str(v) for v in values) + "]"


def gelu64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


# --- unary ------------------------------------------------------------------------------------

UNARY: dict[str, tuple[type, Callable, Callable]] = {
    # op: (class, float64 reference, input domain)
    "neg": (dt.NegOp, np.negative, normal),
    "abs": (dt.AbsOp, np.abs, normal),
    "relu": (dt.ReluOp, lambda x: np.maximum(x, 0), normal),
    "exp": (dt.ExpOp, np.exp, lambda rng, s: rng.uniform(-6, 6, s)),
    "log": (dt.LogOp, np.log, positive),
    "sqrt": (dt.SqrtOp, np.sqrt, choice([0.0, 0.25, 1.0, 2.0, 3.5, 100.0])),
    "rsqrt": (dt.RsqrtOp, lambda x: 1.0 / np.sqrt(x), positive),
    "tanh": (dt.TanhOp, np.tanh, lambda rng, s: rng.uniform(-4, 4, s)),
    "gelu": (dt.GeluOp, gelu64, lambda rng, s: rng.uniform(-5, 5, s)),
}


@pytest.mark.parametrize("name", list(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary(name: str, data: st.DataObject) -> None:
    cls, ref, domain = UNARY[name]
    int_ok = not cls.FLOAT_ONLY
    elt = data.draw(st.sampled_from([F32, F32, F64, F16, BF16] + ([I32, I64] if int_ok else [])))
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    (t,), result = draw_placements(
        data.draw, mesh, [(shape, elt, cands_for(len(shape), elt))], lambda ts: cls._infer(ts[0])
    )
    rng = rng_of(data)
    if elt in INTS:
        x = global_input(rng, t, mesh, ints(-50, 50))
        check_op(mesh, [t], result, f"%r = dtensor.{name} %a0 : {t}", [x], ref)
    else:
        x = global_input(rng, t, mesh, domain)
        check_op(mesh, [t], result, f"%r = dtensor.{name} %a0 : {t}", [x], as_f64(ref))


# --- binary -----------------------------------------------------------------------------------

BINARY: dict[str, tuple[type, Callable, Callable | None]] = {
    # op: (class, float64 reference, error scale on partial magnitudes)
    "add": (dt.AddOp, np.add, np.add),
    "sub": (dt.SubOp, np.subtract, np.add),
    "mul": (dt.MulOp, np.multiply, np.multiply),
    "div": (dt.DivOp, np.divide, np.divide),
    "max": (dt.MaxOp, np.maximum, None),
    "min": (dt.MinOp, np.minimum, None),
    "pow": (dt.PowOp, np.power, None),
}


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: the quotient truncated toward zero."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def binary_domains(name: str, integer: bool) -> tuple[Callable, Callable]:
    if name == "div":
        if integer:
            return ints(-40, 40), choice([-7, -3, -2, -1, 1, 2, 3, 5])
        return normal, lambda rng, s: rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 4, s)
    if name == "pow":
        if integer:
            return ints(-4, 4), ints(0, 4)
        return positive, lambda rng, s: rng.uniform(-2.5, 2.5, s)
    return (ints(-9, 9), ints(-9, 9)) if integer else (normal, normal)


@pytest.mark.parametrize("name", list(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary(name: str, data: st.DataObject) -> None:
    cls, ref, scale = BINARY[name]
    elt = data.draw(st.sampled_from([F32, F32, F64, F16, BF16, I32, I64]))
    integer = elt in INTS
    mesh = data.draw(meshes)
    sa, sb = data.draw(broadcast_shapes(2))
    # integer division is not linear: a P(sum) dividend is tested (xfail) further down
    partial = not (integer and name == "div")
    (ta, tb), result = draw_placements(
        data.draw,
        mesh,
        [(s, elt, cands_for(len(s), elt, partial)) for s in (sa, sb)],
        lambda ts: cls._infer(*ts),
    )
    rng = rng_of(data)
    da, db = binary_domains(name, integer)
    a, b = global_input(rng, ta, mesh, da), global_input(rng, tb, mesh, db)
    line = f"%r = dtensor.{name} %a0, %a1 : ({ta}, {tb}) -> {result}"
    if integer:
        int_ref = int_div if name == "div" else ref
        check_op(mesh, [ta, tb], result, line, [a, b], int_ref)
    else:
        check_op(mesh, [ta, tb], result, line, [a, b], as_f64(ref), scale and as_f64(scale))


def test_int_div_truncates_toward_zero() -> None:
    mesh = make_mesh((2,))
    t = DTensorType((6,), I32, "m", [S(0)])
    a = np.array([7, -7, 7, -7, 0, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 2], np.int32)
    res = run(
        program(mesh, [t, t], f"%r = dtensor.div %a0, %a1 : ({t}, {t}) -> {t}", [("%r", t)]), [a, b]
    )
    assert res.outputs["result0"].tolist() == [3, -3, -3, 3, 0, 0]


# --- cmp and select -----------------------------------------------------------------------------

CMP_REF = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def compare_domain(elt) -> Callable:
    """Few distinct values, so that equal elements are common (NaN and infinities included)."""
    if elt == I1:
        return bools
    if elt in INTS:
        return ints(-2, 2)
    return choice([-np.inf, -1.0, -0.0, 0.0, 0.5, 1.0, np.inf, np.nan])


@pytest.mark.parametrize("predicate", list(CMP_REF))
@FEW
@given(data=st.data())
def test_cmp(predicate: str, data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, F64, F16, BF16, I32, I64, I1]))
    mesh = data.draw(meshes)
    sa, sb = data.draw(broadcast_shapes(2))
    (ta, tb), result = draw_placements(
        data.draw,
        mesh,
        [(s, elt, candidates(len(s))) for s in (sa, sb)],
        lambda ts: dt.CmpOp._infer(*ts),
    )
    assert result.element_type == I1
    rng = rng_of(data)
    a, b = (global_input(rng, t, mesh, compare_domain(elt)) for t in (ta, tb))
    line = f"%r = dtensor.cmp {predicate} %a0, %a1 : ({ta}, {tb}) -> {result}"
    check_op(mesh, [ta, tb], result, line, [a, b], CMP_REF[predicate])


@SETTINGS
@given(data=st.data())
def test_select(data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, F64, F16, I32, I1]))
    mesh = data.draw(meshes)
    sc, sa, sb = data.draw(broadcast_shapes(3))
    (tc, ta, tb), result = draw_placements(
        data.draw,
        mesh,
        [(sc, I1, candidates(len(sc), partial=False))]
        + [(s, elt, cands_for(len(s), elt)) for s in (sa, sb)],
        lambda ts: dt.SelectOp._infer(*ts),
    )
    rng = rng_of(data)
    c, a, b = (global_input(rng, t, mesh) for t in (tc, ta, tb))
    line = f"%r = dtensor.select %a0, %a1, %a2 : ({tc}, {ta}, {tb}) -> {result}"
    check_op(mesh, [tc, ta, tb], result, line, [c, a, b], np.where)


# --- scale, cast, dropout ---------------------------------------------------------------------

factors = st.sampled_from([0.5, -2.0, 0.1, 3.0, 0.0, 1.0, -0.75])


@SETTINGS
@given(data=st.data(), factor=factors)
def test_scale(data: st.DataObject, factor: float) -> None:
    elt = data.draw(st.sampled_from([F32, F32, F64, F16, BF16, I32, I64]))
    integer = elt in INTS
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    # integer scaling truncates, so it is not linear: a P(sum) operand is tested (xfail) below
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, cands_for(len(shape), elt, partial=not integer))],
        lambda ts: dt.ScaleOp._infer(ts[0]),
    )
    x = global_input(rng_of(data), t, mesh, ints(-20, 20) if integer else normal)
    line = f"%r = dtensor.scale %a0 by {fmt_float(factor)} : {t}"
    if integer:
        check_op(mesh, [t], result, line, [x], lambda v: np.trunc(v * factor).astype(np.int64))
    else:
        check_op(
            mesh,
            [t],
            result,
            line,
            [x],
            as_f64(lambda v: v * factor),
            as_f64(lambda v: v * abs(factor)),
        )


def cast_domain(elt) -> Callable:
    if elt == I1:
        return bools
    if elt in INTS:
        return ints(-300, 300)
    # in range of every type, with zeros (for i1), halves (ties) and fractions (truncation)
    return lambda rng, s: (
        np.where(
            rng.random(s) < 0.2, 0.0, rng.choice([1.0, 0.5, 0.25], s) * rng.integers(-600, 600, s)
        )
        + np.where(rng.random(s) < 0.3, rng.standard_normal(s), 0.0)
    )


def bf16_round_nearest_even(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 by bit manipulation: round to nearest, ties to even."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.view(ml_dtypes.bfloat16)


def cast_reference(src, dst) -> Callable:
    def ref(x: np.ndarray) -> np.ndarray:
        if dst == I1:
            return x != 0
        if dst in INTS:
            return np.trunc(x.astype(np.float64)).astype(numpy_dtype(dst))
        if dst == BF16 and src == F32:
            return bf16_round_nearest_even(x)
        return x.astype(np.float64).astype(numpy_dtype(dst))

    return ref


ALL_TYPES = [F32, F64, F16, BF16, I32, I64, I1]


@pytest.mark.parametrize("src", ALL_TYPES, ids=str)
@FEW
@given(data=st.data())
def test_cast(src, data: st.DataObject) -> None:
    dst = data.draw(st.sampled_from(ALL_TYPES))
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, src, candidates(len(shape)))],
        lambda ts: infer.infer_cast(ts[0], dst),
    )
    x = global_input(rng_of(data), t, mesh, cast_domain(src))
    res = check_op(
        mesh, [t], result, f"%r = dtensor.cast %a0 : {t} -> {result}", [x], cast_reference(src, dst)
    )
    if dst in FLOATS:  # casts round exactly (to nearest even): compare bits, not within tolerance
        want = np.asarray(cast_reference(src, dst)(x), numpy_dtype(dst))
        assert bitwise_equal(res.outputs["result0"], want)


def test_cast_rounds_to_nearest_even_and_truncates() -> None:
    mesh = make_mesh((3,))
    t = DTensorType((6,), F32, "m", [S(0)])
    x = np.array([2.5, -2.5, 1.5, -1.9, 2049.0, 2051.0], np.float32)
    for dst, want in [
        (I32, [2, -2, 1, -1, 2049, 2051]),
        (F16, [2.5, -2.5, 1.5, -1.900390625, 2048.0, 2052.0]),
        (I1, [True] * 6),
    ]:
        rt = t.with_element_type(dst)
        res = run(program(mesh, [t], f"%r = dtensor.cast %a0 : {t} -> {rt}", [("%r", rt)]), [x])
        assert res.outputs["result0"].tolist() == want


def dropout_reference(x: np.ndarray, seed: int, prob: float) -> np.ndarray:
    """The semantics: element i (global row-major index) is kept iff philox_uniform(seed, i) >= p,
    kept values are scaled by 1/(1-p)."""
    index = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    keep = uniform(seed, index) >= np.float32(prob)
    return np.where(keep, x.astype(np.float64) / (1.0 - prob), 0.0)


probs = st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.999])
dropout_seeds = st.one_of(st.integers(0, 2**32 - 1), st.integers(2**32, 2**63 - 1))


@SETTINGS
@given(data=st.data(), prob=probs, seed=dropout_seeds)
def test_dropout(data: st.DataObject, prob: float, seed: int) -> None:
    elt = data.draw(float_types)
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, cands_for(len(shape), elt))],
        lambda ts: dt.DropoutOp._infer(ts[0], prob),
    )
    x = global_input(rng_of(data), t, mesh)
    line = f"%r = dtensor.dropout %a0 seed {seed} prob {fmt_float(prob)} : {t}"
    check_op(
        mesh,
        [t],
        result,
        line,
        [x],
        lambda v: dropout_reference(v, seed, prob),
        lambda v: v / (1.0 - prob),
    )


DROPOUT_LAYOUTS = [
    ((1,), [R]),
    ((2,), [S(0)]),
    ((3,), [S(1)]),
    ((8,), [S(0)]),
    ((8,), [S(1)]),
    ((4,), [R]),
    ((2, 4), [S(0), S(1)]),
    ((2, 4), [S(1), S(1)]),
    ((2, 2, 2), [S(1), R, S(0)]),
    ((4, 2), [S(0), S(0)]),
]


@settings(max_examples=15, deadline=None)
@given(shape=shapes(2, 2), seed=dropout_seeds, prob=st.sampled_from([0.1, 0.5, 0.8]))
def test_dropout_mask_is_independent_of_placement(shape, seed: int, prob: float) -> None:
    x = np.random.default_rng(seed % 2**32).uniform(1.0, 2.0, shape).astype(np.float32)
    outputs = []
    for sizes, placements in DROPOUT_LAYOUTS:
        mesh = make_mesh(sizes)
        t = DTensorType(shape, F32, "m", placements)
        line = f"%r = dtensor.dropout %a0 seed {seed} prob {fmt_float(prob)} : {t}"
        outputs.append(run(program(mesh, [t], line, [("%r", t)]), [x]).outputs["result0"])
    for out in outputs[1:]:
        assert bitwise_equal(out, outputs[0])
    # and the same mask on every stage of a varying value
    mesh = make_mesh((3,))
    t = DTensorType(shape, F32, "m", [V])
    line = f"%r = dtensor.dropout %a0 seed {seed} prob {fmt_float(prob)} : {t}"
    staged = run(program(mesh, [t], line, [("%r", t)]), [np.stack([x] * 3)]).outputs["result0"]
    for stage in staged:
        assert bitwise_equal(stage, outputs[0])


@pytest.mark.parametrize("prob", [0.1, 0.3, 0.5, 0.9])
def test_dropout_keeps_one_minus_p_and_scales(prob: float) -> None:
    shape = (256, 300)
    mesh = make_mesh((2, 4))
    t = DTensorType(shape, F32, "m", [S(0), S(1)])
    x = np.random.default_rng(7).uniform(0.5, 2.0, shape).astype(np.float32)
    line = f"%r = dtensor.dropout %a0 seed 1234 prob {fmt_float(prob)} : {t}"
    out = run(program(mesh, [t], line, [("%r", t)]), [x]).outputs["result0"]
    kept = out != 0
    n = kept.size
    assert abs(kept.mean() - (1 - prob)) < 5 * np.sqrt(prob * (1 - prob) / n)
    scale = np.float32(1.0 / (1.0 - prob))
    assert bitwise_equal(out[kept], x[kept] * scale)
    # another seed drops other elements
    other = run(
        program(mesh, [t], line.replace("seed 1234", "seed 1235"), [("%r", t)]), [x]
    ).outputs["result0"]
    assert not np.array_equal(other != 0, kept)


# --- matmul -----------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_matmul(data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, F32, F64, F16, BF16, I32]))
    mesh = data.draw(meshes)
    batch = data.draw(shapes(0, 2))
    m, k, n = (data.draw(dims) for _ in range(3))
    ta_, tb_ = data.draw(st.booleans()), data.draw(st.booleans())
    rhs_batch = batch if batch and data.draw(st.booleans()) else ()
    sa = (*batch, *((k, m) if ta_ else (m, k)))
    sb = (*rhs_batch, *((n, k) if tb_ else (k, n)))
    (ta, tb), result = draw_placements(
        data.draw,
        mesh,
        [(s, elt, cands_for(len(s), elt)) for s in (sa, sb)],
        lambda ts: infer.infer_matmul(ts[0], ts[1], ta_, tb_),
    )
    rng = rng_of(data)
    domain = ints(-5, 5) if elt == I32 else normal
    a, b = global_input(rng, ta, mesh, domain), global_input(rng, tb, mesh, domain)
    flags = (" transpose_lhs" if ta_ else "") + (" transpose_rhs" if tb_ else "")
    line = f"%r = dtensor.matmul %a0, %a1{flags} : ({ta}, {tb}) -> {result}"

    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = np.swapaxes(x, -1, -2) if ta_ else x
        y = np.swapaxes(y, -1, -2) if tb_ else y
        return np.matmul(x.astype(np.int64), y.astype(np.int64)) if elt == I32 else x @ y

    check_op(
        mesh,
        [ta, tb],
        result,
        line,
        [a, b],
        ref if elt == I32 else as_f64(ref),
        None if elt == I32 else as_f64(ref),
    )


def test_matmul_signatures_by_hand() -> None:
    """Row parallel (S(1) x S(0) -> P(sum)) then column parallel on a 2x3 mesh, uneven sizes."""
    mesh = make_mesh((2, 3))
    x = DTensorType((5, 7), F32, "m", [S(0), S(1)])
    w = DTensorType((7, 4), F32, "m", [R, S(0)])
    y = DTensorType((5, 4), F32, "m", [S(0), P()])
    rng = np.random.default_rng(0)
    a, b = (
        rng.standard_normal((5, 7)).astype(np.float32),
        rng.standard_normal((7, 4)).astype(np.float32),
    )
    res = run(
        program(mesh, [x, w], f"%r = dtensor.matmul %a0, %a1 : ({x}, {w}) -> {y}", [("%r", y)]),
        [a, b],
    )
    np.testing.assert_allclose(
        res.outputs["result0"], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5
    )
    # rank (1, 2) holds rows 3..4 and columns 5..6 of the contraction: its partial product
    shard = res.shards["result0"][5]
    np.testing.assert_allclose(shard, a[3:5, 6:7] @ b[6:7, :], rtol=1e-6)


# --- reductions and normalizations ------------------------------------------------------------

REDUCE_KINDS = ["sum", "mean", "max", "min", "prod"]


def reduce_reference(kind: str, dims: tuple[int, ...], keepdim: bool, integer: bool) -> Callable:
    def ref(x: np.ndarray) -> np.ndarray:
        if integer:
            x = x.astype(np.int64)
            total = np.sum(x, axis=dims, keepdims=keepdim)
            match kind:
                case "sum":
                    return total
                case "mean":
                    count = int(np.prod([x.shape[d] for d in dims]))
                    return int_div(total, np.int64(count))
                case "prod":
                    return np.prod(x, axis=dims, keepdims=keepdim)
        match kind:
            case "sum":
                return np.sum(x, axis=dims, keepdims=keepdim)
            case "mean":
                return np.mean(x, axis=dims, keepdims=keepdim)
            case "prod":
                return np.prod(x, axis=dims, keepdims=keepdim)
            case "max":
                return np.max(x, axis=dims, keepdims=keepdim)
            case "min":
                return np.min(x, axis=dims, keepdims=keepdim)
        raise AssertionError(kind)

    return ref


@pytest.mark.parametrize("kind", REDUCE_KINDS)
@SETTINGS
@given(data=st.data())
def test_reduce(kind: str, data: st.DataObject) -> None:
    types = [F32, F32, F64, F16, BF16, I32, I64] + ([I1] if kind in ("max", "min") else [])
    elt = data.draw(st.sampled_from(types))
    integer = elt in (*INTS, I1)
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    rank = len(shape)
    dims = data.draw(st.lists(st.integers(0, max(rank - 1, 0)), unique=True, max_size=rank))
    dims = [d - rank if data.draw(st.booleans()) else d for d in dims]  # negative spellings too
    keepdim = data.draw(st.booleans())
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, cands_for(rank, elt))],
        lambda ts: infer.infer_reduce(ts[0], kind, dims, keepdim),
    )
    if integer and kind == "mean":
        # a truncating integer mean is not linear: over a split dimension it is tested (xfail) below
        assume(not any(p.partial_kind for p in result.placement_list))
    norm_dims = tuple(sorted(d % rank for d in dims)) if rank else ()
    domain = {
        "prod": ints(-2, 2)
        if integer
        else lambda rng, s: rng.uniform(0.5, 1.5, s) * rng.choice([-1, 1], s),
    }.get(kind)
    x = global_input(rng_of(data), t, mesh, domain if elt != I1 else None)
    spelled = dense_array(dims)
    line = f"%r = dtensor.reduce {kind} %a0 dims {spelled}{' keepdim' if keepdim else ''} : {t} -> {result}"
    ref = reduce_reference(kind, norm_dims, keepdim, integer)
    if integer:
        check_op(
            mesh, [t], result, line, [x], (lambda v: ref(v).astype(bool)) if elt == I1 else ref
        )
    else:
        abs_kind = kind if kind in ("sum", "mean", "prod") else "sum"
        abs_ref = reduce_reference(abs_kind, norm_dims, keepdim, False)
        check_op(
            mesh,
            [t],
            result,
            line,
            [x],
            as_f64(ref),
            None if kind in ("max", "min") else as_f64(lambda v: abs_ref(np.abs(v))),
        )


def test_reduce_over_empty_blocks() -> None:
    """8 ranks split 3 rows: ranks 3.. hold no rows and contribute the identity of the reduction."""
    mesh = make_mesh((8,))
    for elt, x in [
        (F32, np.array([[1.0, -2.0], [3.0, -4.0], [-5.0, 6.0]], np.float32)),
        (I32, np.array([[1, -2], [3, -4], [-5, 6]], np.int32)),
        (I1, np.array([[False, False], [False, True], [False, False]])),
    ]:
        t = DTensorType((3, 2), elt, "m", [S(0)])
        for kind in ["sum", "mean", "max", "min", "prod"]:
            if (elt == I1 and kind not in ("max", "min")) or (elt == I32 and kind == "mean"):
                continue  # i1 has no sum; an integer mean over a split dim: xfail below
            kinds = {"mean": "sum"}
            rt = DTensorType((2,), elt, "m", [P(kinds.get(kind, kind))])
            line = f"%r = dtensor.reduce {kind} %a0 dims [0] : {t} -> {rt}"
            got = run(program(mesh, [t], line, [("%r", rt)]), [x]).outputs["result0"]
            want = reduce_reference(kind, (0,), False, elt != F32)(x)
            if elt == F32:  # the local means are summands of the mean, rounded apart
                np.testing.assert_allclose(got, want, rtol=1e-6)
            else:
                assert got.tolist() == want.astype(got.dtype).tolist(), (elt, kind)


@FEW
@given(data=st.data())
def test_norm(data: st.DataObject) -> None:
    elt = data.draw(float_types)
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    (t,), result = draw_placements(
        data.draw, mesh, [(shape, elt, candidates(len(shape)))], lambda ts: infer.infer_norm(ts[0])
    )
    x = global_input(rng_of(data), t, mesh)
    check_op(
        mesh,
        [t],
        result,
        f"%r = dtensor.norm %a0 : {t} -> {result}",
        [x],
        as_f64(lambda v: np.sqrt(np.sum(v * v))),
    )


def softmax64(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


@SETTINGS
@given(data=st.data())
def test_softmax(data: st.DataObject) -> None:
    elt = data.draw(float_types)
    mesh = data.draw(meshes)
    shape = data.draw(shapes(1, 3))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, candidates(len(shape)))],
        lambda ts: infer.infer_softmax(ts[0], dim),
    )
    x = global_input(rng_of(data), t, mesh, lambda rng, s: rng.uniform(-30, 30, s))
    check_op(
        mesh,
        [t],
        result,
        f"%r = dtensor.softmax %a0 dim {dim} : {t}",
        [x],
        as_f64(lambda v: softmax64(v, dim)),
    )


def layernorm64(x, eps, w=None, b=None):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@SETTINGS
@given(
    data=st.data(), has_w=st.booleans(), has_b=st.booleans(), eps=st.sampled_from([1e-5, 1e-3, 0.5])
)
def test_layernorm(data: st.DataObject, has_w: bool, has_b: bool, eps: float) -> None:
    elt = data.draw(float_types)
    mesh = data.draw(meshes)
    shape = data.draw(shapes(1, 3))
    n = 1 + has_w + has_b
    operands = [(shape, elt, candidates(len(shape)))] + [((shape[-1],), elt, [R, V])] * (n - 1)
    ts, result = draw_placements(
        data.draw, mesh, operands, lambda ts: infer.infer_layernorm(ts[0], ts[1:])
    )
    rng = rng_of(data)
    inputs = [global_input(rng, t, mesh) for t in ts]
    names = iter(range(1, n))
    w = f" weight %a{next(names)} : {ts[1]}" if has_w else ""
    b = f" bias %a{next(names)} : {ts[-1]}" if has_b else ""
    line = f"%r = dtensor.layernorm %a0{w}{b} eps {fmt_float(eps)} : {ts[0]} -> {result}"

    def ref(x, *p):
        it = iter(p)
        return layernorm64(x, eps, next(it) if has_w else None, next(it) if has_b else None)

    def scale(x, *p):  # |normalized| * |w| + |b| and one more unit of |w|
        it = iter(p)
        wa = next(it) if has_w else 1.0
        ba = next(it) if has_b else 0.0
        return (np.abs(layernorm64(x, eps)) + 1.0) * wa + ba

    check_op(mesh, ts, result, line, inputs, as_f64(ref), as_f64(scale))


# --- shape and data movement ------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_slice(data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, I32, I1, BF16]))
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    offsets, sizes = [], []
    for d in shape:
        if data.draw(st.booleans()):
            offsets.append(0)
            sizes.append(d)
        else:
            o = data.draw(st.integers(0, d))
            offsets.append(o)
            sizes.append(data.draw(st.integers(0, d - o)))
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, candidates(len(shape)))],
        lambda ts: infer.infer_slice(ts[0], offsets, sizes),
    )
    x = global_input(rng_of(data), t, mesh)
    box = tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))
    line = (
        f"%r = dtensor.slice %a0 offsets {dense_array(offsets)} sizes {dense_array(sizes)} : "
        f"{t} -> {result}"
    )
    check_op(mesh, [t], result, line, [x], lambda v: v[box])


@SETTINGS
@given(data=st.data())
def test_concat(data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, I32, I1, F16]))
    mesh = data.draw(meshes)
    shape = data.draw(shapes(1, 3))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    count = data.draw(st.integers(1, 3))
    pieces = [
        tuple(data.draw(dims) if d == dim % len(shape) else s for d, s in enumerate(shape))
        for _ in range(count)
    ]
    (t0,), result = draw_placements(
        data.draw,
        mesh,
        [(pieces[0], elt, candidates(len(shape)))],
        lambda ts: infer.infer_concat([ts[0].with_shape(p) for p in pieces], dim),
    )
    ts = [t0.with_shape(p) for p in pieces]
    rng = rng_of(data)
    inputs = [global_input(rng, t, mesh) for t in ts]
    operands = ", ".join(f"%a{i}" for i in range(count))
    line = f"%r = dtensor.concat {operands} dim {dim} : ({', '.join(map(str, ts))}) -> {result}"
    check_op(mesh, ts, result, line, inputs, lambda *xs: np.concatenate(xs, axis=dim))


@SETTINGS
@given(data=st.data())
def test_transpose(data: st.DataObject) -> None:
    elt = data.draw(st.sampled_from([F32, I64, I1]))
    mesh = data.draw(meshes)
    shape = data.draw(shapes(0, 4))
    perm = data.draw(st.permutations(range(len(shape))))
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(shape, elt, candidates(len(shape)))],
        lambda ts: infer.infer_transpose(ts[0], perm),
    )
    x = global_input(rng_of(data), t, mesh)
    line = f"%r = dtensor.transpose %a0 perm {dense_array(perm)} : {t} -> {result}"
    check_op(mesh, [t], result, line, [x], lambda v: np.transpose(v, perm))


@st.composite
def reshapes(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A shape and another with the same element count: adjacent dims merged or split, unit
    dims inserted or dropped."""
    old = list(draw(shapes(0, 4)))
    new = list(old)
    for _ in range(draw(st.integers(0, 3))):
        move = draw(st.sampled_from(["merge", "split", "unit", "drop"]))
        if move == "merge" and len(new) >= 2:
            i = draw(st.integers(0, len(new) - 2))
            new[i : i + 2] = [new[i] * new[i + 1]]
        elif move == "split" and new:
            i = draw(st.integers(0, len(new) - 1))
            divisors = [f for f in range(1, new[i] + 1) if new[i] % f == 0]
            f = draw(st.sampled_from(divisors))
            new[i : i + 1] = [f, new[i] // f]
        elif move == "unit":
            new.insert(draw(st.integers(0, len(new))), 1)
        elif move == "drop" and 1 in new:
            new.remove(1)
    return tuple(old), tuple(new)


@SETTINGS
@given(data=st.data(), shapes_=reshapes())
def test_reshape(data: st.DataObject, shapes_) -> None:
    old, new = shapes_
    elt = data.draw(st.sampled_from([F32, I32]))
    mesh = data.draw(meshes)
    (t,), result = draw_placements(
        data.draw,
        mesh,
        [(old, elt, candidates(len(old)))],
        lambda ts: infer.infer_reshape(ts[0], new),
    )
    x = global_input(rng_of(data), t, mesh)
    check_op(
        mesh,
        [t],
        result,
        f"%r = dtensor.reshape %a0 : {t} -> {result}",
        [x],
        lambda v: v.reshape(new),
    )


# --- values -----------------------------------------------------------------------------------


def dense_literal(values: np.ndarray, elt) -> str:
    def item(v) -> str:
        if elt == I1:
            return "true" if v else "false"
        if elt in INTS:
            return str(int(v))
        return fmt_float(float(v))

    def nest(a: np.ndarray) -> str:
        if a.ndim == 0:
            return item(a[()])
        return "[" + ", ".join(nest(s) for s in a) + "]"

    return nest(values)


@SETTINGS
@given(data=st.data(), splat=st.booleans())
def test_constant(data: st.DataObject, splat: bool) -> None:
    elt = data.draw(st.sampled_from([F32, F64, F16, BF16, I32, I64, I1]))
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    placements = data.draw(
        st.lists(
            st.sampled_from(candidates(len(shape), partial=False)),
            min_size=mesh.ndim,
            max_size=mesh.ndim,
        )
    )
    t = DTensorType(shape, elt, "m", placements)
    dtype = numpy_dtype(elt)
    rng = rng_of(data)
    values = np.asarray(
        global_input(rng, DTensorType(() if splat else shape, elt, "m", [R]), mesh), dtype
    )
    text = program(
        mesh,
        [],
        f"%r = dtensor.constant dense<{dense_literal(values, elt)}> : "
        f"tensor<{''.join(f'{d}x' for d in shape)}{elt}> : {t}",
        [("%r", t)],
    )
    res = run(text, [])
    n_v = [mesh.axis_sizes[a] for a, p in enumerate(placements) if p == V]
    want = np.array(np.broadcast_to(values, (*n_v, *shape)))
    assert bitwise_equal(res.outputs["result0"], want)
    assert_replicas_bitwise_equal(res.shards["result0"], t, mesh)


def test_constant_builder_matches_text() -> None:
    """The same constant built with the op builder (S(0) over 3 ranks, 2 rows: one empty block)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    import ccopt

    t = DTensorType((2, 3), F32, "m", [S(0)])
    values = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    attr = DenseIntOrFPElementsAttr.from_list(TensorType(F32, [2, 3]), values.ravel().tolist())
    const = dt.ConstantOp(attr, t)
    block = Block([const, func.ReturnOp(const.result)])
    f = func.FuncOp("f", ((), (t,)), Region(block))
    module = ModuleOp([dt.MeshOp("m", [("x", 3)]), f])
    res = ccopt.run(module)
    assert bitwise_equal(res.outputs["result0"], values)
    assert [s.shape for s in res.shards["result0"]] == [(1, 3), (1, 3), (0, 3)]


@SETTINGS
@given(data=st.data(), value=st.sampled_from([0.0, 1.0, -2.7, 2.5, 0.1, 1e30, -0.0, 3.9]))
def test_fill(data: st.DataObject, value: float) -> None:
    elt = data.draw(st.sampled_from([F32, F64, F16, BF16, I32, I64, I1]))
    if elt in INTS:
        value = value if abs(value) < 1e4 else 5.5
    mesh = data.draw(meshes)
    shape = data.draw(shapes())
    placements = data.draw(
        st.lists(
            st.sampled_from(candidates(len(shape), partial=False)),
            min_size=mesh.ndim,
            max_size=mesh.ndim,
        )
    )
    t = DTensorType(shape, elt, "m", placements)
    res = run(program(mesh, [], f"%r = dtensor.fill {fmt_float(value)} : {t}", [("%r", t)]), [])
    dtype = numpy_dtype(elt)
    if elt == I1:
        scalar = np.array(value != 0)
    elif elt in INTS:
        scalar = np.array(int(value), dtype)  # truncation toward zero
    else:
        with np.errstate(over="ignore"):
            scalar = np.array(value).astype(dtype)  # 1e30 -> inf in f16
    n_v = [mesh.axis_sizes[a] for a, p in enumerate(placements) if p == V]
    assert bitwise_equal(res.outputs["result0"], np.full((*n_v, *shape), scalar, dtype))
    assert_replicas_bitwise_equal(res.shards["result0"], t, mesh)


@FEW
@given(data=st.data(), steps=st.integers(1, 3))
def test_update(data: st.DataObject, steps: int) -> None:
    """`w <- w - g` in place (a plain SGD step) with a result that reads the old `w`."""
    mesh = data.draw(meshes)
    shape = data.draw(shapes(1, 3))
    (tw, tg), result = draw_placements(
        data.draw,
        mesh,
        [(shape, F32, candidates(len(shape), partial=False))] * 2,
        lambda ts: dt.SubOp._infer(*ts),
    )
    assume(result == tw)
    rng = rng_of(data)
    w, g = global_input(rng, tw, mesh), global_input(rng, tg, mesh, ints(-4, 4))
    body = [
        f"%new = dtensor.sub %a0, %a1 : ({tw}, {tg}) -> {tw}",
        f"%old = dtensor.neg %a0 : {tw}",
        f"dtensor.update %a0 with %new : {tw}",
    ]
    res = run(program(mesh, [tw, tg], body, [("%old", tw)]), [w, g], steps=steps)
    assert set(res.outputs) == {"result0", "a0"}

    def after(updates: int) -> Callable:
        def ref(w_: np.ndarray, g_: np.ndarray) -> np.ndarray:
            for _ in range(updates):
                w_ = w_ - g_  # float32, as the interpreter computes it
            return w_

        return ref

    pairs = [(w, tw), (g, tg)]
    old = expected(tw, mesh, pairs, after(steps - 1))
    assert bitwise_equal(res.outputs["result0"], np.array(-old))
    assert bitwise_equal(res.outputs["a0"], np.array(expected(tw, mesh, pairs, after(steps))))


# --- replication, directly on the shards --------------------------------------------------------


def test_replicated_results_are_bitwise_equal_on_every_rank() -> None:
    """Ops on replicated values, and a matmul of P(sum) after an all-reduce, on a 2x4 mesh."""
    mesh = make_mesh((2, 4))
    rep = DTensorType((5, 3), F32, "m", [R, R])
    part = DTensorType((5, 3), F32, "m", [R, P()])
    w = DTensorType((3, 3), F32, "m", [R, R])
    body = [
        f"%s = coll.all_reduce sum %a0 over [y] : {part} -> {rep}",
        f"%m = dtensor.matmul %s, %a1 : ({rep}, {w}) -> {rep}",
        f"%g = dtensor.gelu %m : {rep}",
        f"%n = dtensor.softmax %g dim 1 : {rep}",
        f"%d = dtensor.dropout %n seed 3 prob 0.25 : {rep}",
    ]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    res = run(program(mesh, [part, w], body, [("%d", rep), ("%g", rep)]), [x, y])
    for name in ("result0", "result1"):
        shards = res.shards[name]
        assert len(shards) == 8
        for s in shards[1:]:
            assert bitwise_equal(s, shards[0])
    want = gelu64(x.astype(np.float64).sum(axis=0) @ y)
    np.testing.assert_allclose(res.outputs["result1"], want, rtol=1e-5, atol=1e-6)


# --- integer ops that truncate: never accepted on partial values --------------------------------


def rejected(body: str, args: list[DTensorType], rt: DTensorType) -> str:
    """The verifier's message for a program that must not verify."""
    from ccopt.diagnostics import CcoptError

    mesh = make_mesh((2,))
    with pytest.raises(CcoptError) as info:
        ccopt.load_program(program(mesh, args, body, [("%r", rt)]))
    return info.value.render()


def test_int_scale_of_partial_sum() -> None:
    t = DTensorType((3,), I32, "m", [P()])
    # partials [1, 1, 3] + [1, 1, 3]: scaling each by 0.5 truncates to 0, 0, 1 - not linear
    assert "scale of integers" in rejected(f"%r = dtensor.scale %a0 by 0.5 : {t}", [t], t)


def test_int_div_of_partial_sum() -> None:
    t = DTensorType((3,), I32, "m", [P()])
    two = DTensorType((3,), I32, "m", [R])
    body = f"%r = dtensor.div %a0, %a1 : ({t}, {two}) -> {t}"
    assert "div of integers" in rejected(body, [t, two], t)


def test_int_mean_over_split_dim() -> None:
    t = DTensorType((2,), I32, "m", [S(0)])
    rt = DTensorType((), I32, "m", [P()])
    body = f"%r = dtensor.reduce mean %a0 dims [0] : {t} -> {rt}"
    assert "an integer mean truncates" in rejected(body, [t], rt)


# --- half precision ---------------------------------------------------------------------------


@pytest.mark.parametrize("elt", [F16, BF16], ids=str)
@pytest.mark.parametrize("split", [False, True], ids=["replicated", "split"])
def test_half_precision_accumulates_in_f32(elt, split: bool) -> None:
    """Sums of 8192 ones (4096 per rank when split): a half-precision accumulator would stall
    (f16 at 2048, bf16 at 256)."""
    mesh = make_mesh((2,))
    n = 8192
    col = DTensorType((n, 2), elt, "m", [S(0) if split else R])
    row = DTensorType((2, n), elt, "m", [S(1) if split else R])
    vec = DTensorType((2,), elt, "m", [P() if split else R])
    mat = DTensorType((2, 2), elt, "m", [P() if split else R])
    scalar = DTensorType((), elt, "m", [R])
    body = [
        f"%sum = dtensor.reduce sum %a0 dims [0] : {col} -> {vec}",
        f"%mean = dtensor.reduce mean %a0 dims [0] : {col} -> {vec}",
        f"%mm = dtensor.matmul %a1, %a0 : ({row}, {col}) -> {mat}",
    ]
    results = [("%sum", vec), ("%mean", vec), ("%mm", mat)]
    if not split:
        body += [
            f"%soft = dtensor.softmax %a1 dim 1 : {row}",
            f"%norm = dtensor.norm %a0 : {col} -> {scalar}",
        ]
        results += [("%soft", row), ("%norm", scalar)]
    dtype = numpy_dtype(elt)
    ones = np.ones((n, 2), dtype)
    out = run(program(mesh, [col, row], body, results), [ones, ones.T.copy()]).outputs
    assert out["result0"].astype(np.float64).tolist() == [n, n]
    assert out["result1"].astype(np.float64).tolist() == [1.0, 1.0]
    assert out["result2"].astype(np.float64).tolist() == [[n, n], [n, n]]
    if not split:
        assert (out["result3"].astype(np.float64) == 1.0 / n).all()
        assert out["result4"] == np.array(np.sqrt(2.0 * n)).astype(dtype)
