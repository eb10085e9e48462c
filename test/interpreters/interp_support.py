"""Helpers of the reference-interpreter tests: meshes, legal placements, programs as IR text,
global inputs and the logical values they stand for, per-dtype comparisons.

The block arithmetic here (`block_slices`, `shard_of`) is written again from the semantics
(`shared/reference/semantics.md`) instead of importing `ccopt.mesh`, so that the interpreter and
its tests do not share a mistake.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

import ml_dtypes
import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, i1, i32, i64
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

import ccopt
from ccopt.dialects.dtensor_type import (
    DTensorType,
    P,
    PartialAttr,
    Placement,
    R,
    ReductionKind,
    ReplicatedAttr,
    S,
    V,
    VaryingAttr,
)
from ccopt.interpreters.distributed import numpy_dtype
from ccopt.mesh import Mesh
from ccopt.runner import RunResult

F16, BF16, F32, F64 = Float16Type(), BFloat16Type(), Float32Type(), Float64Type()
I1, I32, I64 = i1, i32, i64
FLOATS = (F32, F64, F16, BF16)
HALF = (F16, BF16)
INTS = (I32, I64)

# --- meshes ---------------------------------------------------------------------------------

MESH_SHAPES: tuple[tuple[int, ...], ...] = (
    (1,),
    (2,),
    (3,),
    (4,),
    (8,),
    (2, 1),
    (1, 3),
    (2, 2),
    (3, 1),
    (2, 4),
    (4, 2),
    (2, 1, 2),
    (2, 2, 2),
    (1, 2, 4),
)
"""1, 2, 3, 4 and 8 ranks on 1 to 3 axes."""

AXES = ("x", "y", "z")


def make_mesh(sizes: Sequence[int]) -> Mesh:
    return Mesh("m", AXES[: len(sizes)], tuple(sizes))


meshes = st.sampled_from(MESH_SHAPES).map(make_mesh)


def all_coords(mesh: Mesh) -> list[tuple[int, ...]]:
    """Mesh coordinates of every rank, in linear (row-major) rank order."""
    return list(itertools.product(*(range(n) for n in mesh.axis_sizes)))


# --- shapes and dtypes ------------------------------------------------------------------------

dims = st.integers(1, 9)


def shapes(min_rank: int = 0, max_rank: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(dims, min_size=min_rank, max_size=max_rank).map(tuple)


float_types = st.sampled_from([F32, F32, F32, F64, F16, BF16])


def is_float_dtype(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == np.dtype(ml_dtypes.bfloat16)


# --- placements -------------------------------------------------------------------------------

PARTIALS: tuple[Placement, ...] = tuple(P(k) for k in ReductionKind)


def candidates(
    rank: int, *, split: bool = True, partial: bool = True, varying: bool = True
) -> list[Placement]:
    """Placements an operand of `rank` may have on one mesh axis."""
    out: list[Placement] = [R]
    if split:
        out += [S(d) for d in range(rank)]
    if partial:
        out += PARTIALS
    if varying:
        out.append(V)
    return out


def one_partial_kind(t: DTensorType) -> bool:
    """At most one reduction over the partial axes (otherwise the logical value is ambiguous)."""
    return len({p.partial_kind for p in t.placement_list if isinstance(p, PartialAttr)}) <= 1


Operand = tuple[Sequence[int], Attribute, Sequence[Placement]]
"""(global shape, element type, candidate placements on one mesh axis)."""


def draw_placements(
    draw: Callable,
    mesh: Mesh,
    operands: Sequence[Operand],
    infer: Callable[[list[DTensorType]], DTensorType],
) -> tuple[list[DTensorType], DTensorType]:
    """Operand types with legal placements and the inferred result type.

    Placement signatures compose over mesh axes, so the legal per-axis combinations are found once
    on a one-axis mesh (whatever `infer` accepts), and each axis of `mesh` draws one of them.
    """
    single = [[DTensorType(s, e, "m", [p]) for p in cands] for s, e, cands in operands]
    legal = []
    for combo in itertools.product(*(range(len(c)) for c in single)):
        try:
            infer([single[i][j] for i, j in enumerate(combo)])
        except VerifyException:
            continue
        legal.append(combo)
    assume(legal)
    # varying combinations would crowd out the others on multi-axis meshes: 1 axis in 10 has one
    plain = [
        c
        for c in legal
        if not any(isinstance(single[i][j].placement_list[0], VaryingAttr) for i, j in enumerate(c))
    ]
    varying = [c for c in legal if c not in plain]

    def pick() -> tuple[int, ...]:
        if varying and (not plain or draw(st.integers(0, 9)) == 0):
            return draw(st.sampled_from(varying))
        return draw(st.sampled_from(plain))

    per_axis = [pick() for _ in range(mesh.ndim)]
    types = [
        DTensorType(s, e, "m", [cands[per_axis[a][i]] for a in range(mesh.ndim)])
        for i, (s, e, cands) in enumerate(operands)
    ]
    assume(all(one_partial_kind(t) for t in types))
    try:
        result = infer(types)
    except VerifyException:
        assume(False)
        raise  # unreachable
    assume(one_partial_kind(result))
    return types, result


# --- programs ---------------------------------------------------------------------------------


def mesh_decl(mesh: Mesh) -> str:
    axes = ", ".join(f"{n}={s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    return f"dtensor.mesh @{mesh.name} [{axes}]"


def program(
    mesh: Mesh,
    args: Sequence[DTensorType],
    body: Sequence[str] | str,
    results: Sequence[tuple[str, DTensorType]] = (),
) -> str:
    """A module with `mesh` and `func.func @f(%a0, %a1, ...)` running `body`, returning `results`
    (SSA name, type)."""
    body = [body] if isinstance(body, str) else list(body)
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    rtypes = ", ".join(str(t) for _, t in results)
    lines = [mesh_decl(mesh), f"func.func @f({params})" + (f" -> ({rtypes})" if results else "")]
    lines[-1] += " {"
    lines += [f"  {line}" for line in body]
    ret = ", ".join(v for v, _ in results)
    lines.append(f"  func.return {ret} : {rtypes}" if results else "  func.return")
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(text: str, inputs: Sequence[np.ndarray], **kwargs) -> RunResult:
    return ccopt.run(text, inputs={f"a{i}": x for i, x in enumerate(inputs)}, **kwargs)


# --- global values ----------------------------------------------------------------------------


def stacked_axes(t: DTensorType) -> list[int]:
    """Mesh axes with one leading dimension in the global array (P and V, in mesh order)."""
    return [a for a, p in enumerate(t.placement_list) if isinstance(p, PartialAttr | VaryingAttr)]


def stacked_shape(t: DTensorType, mesh: Mesh) -> tuple[int, ...]:
    return (*(mesh.axis_sizes[a] for a in stacked_axes(t)), *t.get_shape())


def block_slices(t: DTensorType, mesh: Mesh, coords: Sequence[int]) -> tuple[slice, ...]:
    """The block of the global value that the rank at `coords` holds: ceil-div blocks, several
    axes splitting one dimension compose in mesh order."""
    out = []
    for d, size in enumerate(t.get_shape()):
        index, parts = 0, 1
        for a, p in enumerate(t.placement_list):
            if p.split_dim == d:
                index = index * mesh.axis_sizes[a] + coords[a]
                parts *= mesh.axis_sizes[a]
        block = -(-size // parts)
        lo = min(index * block, size)
        out.append(slice(lo, min(lo + block, size)))
    return tuple(out)


def shard_of(x: np.ndarray, t: DTensorType, mesh: Mesh, coords: Sequence[int]) -> np.ndarray:
    """What the rank at `coords` holds of the global (stacked) array `x` of type `t`."""
    lead = tuple(coords[a] for a in stacked_axes(t))
    return x[lead][block_slices(t, mesh, coords)]


COMBINE = {
    ReductionKind.SUM: np.add,
    ReductionKind.PROD: np.multiply,
    ReductionKind.MAX: np.maximum,
    ReductionKind.MIN: np.minimum,
}


def fold(kind: ReductionKind, parts: Sequence[np.ndarray]) -> np.ndarray:
    """Left fold in the parts' dtype, in the given (rank) order."""
    acc = np.array(parts[0])
    with np.errstate(all="ignore"):
        for p in parts[1:]:
            acc = COMBINE[kind](acc, p).astype(acc.dtype)
    return acc


def identity_of(kind: ReductionKind, dtype: np.dtype) -> np.ndarray:
    if kind is ReductionKind.SUM:
        return np.zeros((), dtype)
    if kind is ReductionKind.PROD:
        return np.ones((), dtype)
    if dtype == np.dtype(np.bool_):
        return np.array(kind is ReductionKind.MIN)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.array(info.min if kind is ReductionKind.MAX else info.max, dtype)
    return np.array(-np.inf if kind is ReductionKind.MAX else np.inf).astype(dtype)


def logical(
    x: np.ndarray, t: DTensorType, mesh: Mesh, vsel: Mapping[int, int], absolute: bool = False
) -> np.ndarray:
    """The logical value of global array `x` at the V coordinates `vsel`: the partials reduced in
    rank order (with `absolute`, the float64 sum of their magnitudes: an error scale)."""
    index: list[int | slice] = []
    p_axes = []
    for a in stacked_axes(t):
        if isinstance(t.placement_list[a], VaryingAttr):
            index.append(vsel[a])
        else:
            index.append(slice(None))
            p_axes.append(a)
    y = x[tuple(index)]
    if absolute:
        y = np.abs(y.astype(np.float64))
    if not p_axes:
        return y
    parts = list(y.reshape(int(np.prod(y.shape[: len(p_axes)])), *t.get_shape()))
    if absolute:
        return np.sum(parts, axis=0)
    (kind,) = {t.placement_list[a].partial_kind for a in p_axes}
    return fold(kind, parts)


Domain = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape)


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(0.25, 4.0, shape)


def ints(lo: int, hi: int) -> Domain:
    return lambda rng, shape: rng.integers(lo, hi + 1, size=shape)


def choice(values: Sequence[float]) -> Domain:
    return lambda rng, shape: rng.choice(np.asarray(values, dtype=np.float64), size=shape)


def bools(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.random(shape) < 0.5


def default_domain(element_type: Attribute) -> Domain:
    dtype = numpy_dtype(element_type)
    if dtype == np.dtype(np.bool_):
        return bools
    if np.issubdtype(dtype, np.integer):
        return ints(-8, 8)
    return normal


def global_input(
    rng: np.random.Generator, t: DTensorType, mesh: Mesh, domain: Domain | None = None
) -> np.ndarray:
    """A random global array for `t`, one full-shaped value per coordinate of its P and V axes."""
    domain = domain or default_domain(t.element_type)
    with np.errstate(all="ignore"):
        return np.asarray(domain(rng, stacked_shape(t, mesh))).astype(numpy_dtype(t.element_type))


def expected(
    result: DTensorType,
    mesh: Mesh,
    inputs: Sequence[tuple[np.ndarray, DTensorType]],
    reference: Callable[..., np.ndarray],
    absolute: bool = False,
) -> np.ndarray:
    """`reference` on the logical inputs, once per coordinate of the result's V axes (stacked in
    front, as `gather` does)."""
    v_axes = [a for a, p in enumerate(result.placement_list) if isinstance(p, VaryingAttr)]
    for _, t in inputs:
        extra = set(stacked_axes(t)) - set(v_axes)
        assert not any(isinstance(t.placement_list[a], VaryingAttr) for a in extra)
    outs = []
    for combo in itertools.product(*(range(mesh.axis_sizes[a]) for a in v_axes)):
        vsel = dict(zip(v_axes, combo, strict=True))
        with np.errstate(all="ignore"):
            outs.append(
                np.asarray(reference(*(logical(x, t, mesh, vsel, absolute) for x, t in inputs)))
            )
    if not v_axes:
        return outs[0]
    return np.stack(outs).reshape(*(mesh.axis_sizes[a] for a in v_axes), *outs[0].shape)


# --- comparisons ------------------------------------------------------------------------------

TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float64): (1e-12, 1e-13),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (2e-3, 1e-3),
    np.dtype(ml_dtypes.bfloat16): (1.6e-2, 1e-2),
}
"""(rtol, atol) per float dtype: |got - want| <= atol + rtol * (|want| + scale)."""


def assert_close(
    got: np.ndarray,
    want: np.ndarray,
    dtype: np.dtype,
    scale: np.ndarray | float = 0.0,
    what: str = "",
) -> None:
    """Floats within the dtype's tolerance (want rounded to dtype first; NaN matches NaN, inf the
    same inf); integers and booleans exactly."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, expected {dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if not is_float_dtype(dtype):
        with np.errstate(all="ignore"):
            w = want.astype(dtype)
        assert np.array_equal(got, w), f"{what}: got\n{got}\nexpected\n{w}"
        return
    rtol, atol = TOLERANCES[dtype]
    with np.errstate(all="ignore"):
        w = want.astype(np.float64).astype(dtype).astype(np.float64)
        g = got.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        diff = np.where(same, 0.0, np.abs(g - w))
        diff = np.where(np.isnan(diff), np.inf, diff)
        scale = np.where(np.isfinite(scale), scale, 0.0)
        bound = atol + rtol * (np.where(np.isfinite(w), np.abs(w), 0.0) + scale)
    bad = ~(diff <= bound)
    assert not bad.any(), (
        f"{what}: {int(bad.sum())} of {bad.size} elements differ; first at "
        f"{tuple(int(i) for i in np.argwhere(bad)[0])}: got {g[bad][0]!r}, expected {w[bad][0]!r}"
        f"\ngot\n{got}\nexpected\n{want}"
    )


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_replicas_bitwise_equal(shards: Sequence[np.ndarray], t: DTensorType, mesh: Mesh) -> None:
    """Ranks that differ only in coordinates on R axes hold bitwise the same shard."""
    coords = all_coords(mesh)
    r_axes = [a for a, p in enumerate(t.placement_list) if isinstance(p, ReplicatedAttr)]
    for rank, c in enumerate(coords):
        canonical = coords.index(tuple(0 if a in r_axes else x for a, x in enumerate(c)))
        assert bitwise_equal(shards[rank], shards[canonical]), (
            f"replicas of {t} differ: rank {rank} {shards[rank]} vs rank {canonical} "
            f"{shards[canonical]}"
        )


def check_op(
    mesh: Mesh,
    args: Sequence[DTensorType],
    result: DTensorType,
    op_line: str,
    inputs: Sequence[np.ndarray],
    reference: Callable[..., np.ndarray],
    scale: Callable[..., np.ndarray] | None = None,
) -> RunResult:
    """Run `op_line` (defining `%r` from `%a0`, `%a1`, ...) through the interpreter and compare
    the gathered result with `reference` on the logical inputs (`scale`, on the inputs' partial
    magnitudes, widens the tolerance where partials are summed in a different order)."""
    res = run(program(mesh, args, [op_line], [("%r", result)]), inputs)
    pairs = list(zip(inputs, args, strict=True))
    want = expected(result, mesh, pairs, reference)
    bound = expected(result, mesh, pairs, scale, absolute=True) if scale else 0.0
    assert_close(
        res.outputs["result0"], want, numpy_dtype(result.element_type), bound, what=op_line
    )
    assert_replicas_bitwise_equal(res.shards["result0"], result, mesh)
    for c, shard in zip(all_coords(mesh), res.shards["result0"], strict=True):
        shape = tuple(s.stop - s.start for s in block_slices(result, mesh, c))
        assert shard.shape == shape, f"rank {c} holds {shard.shape}, its block is {shape}"
    return res


def as_f64(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Run a reference in float64."""
    return lambda *xs: fn(*(np.asarray(x).astype(np.float64) for x in xs))


def fmt_float(value: float) -> str:
    """A float literal the IR parser reads back exactly."""
    return f"{float(value):.17e}"
