"""Every pass and pipeline on random valid programs, checked numerically.

A hypothesis strategy builds random programs with the dialects' Python builders (which infer
every result type): a mesh of 1-3 axes and 1-8 ranks, arguments of random shapes (sizes not
divisible by, or smaller than, the groups) and placements - per-rank partial gradients `P(sum)`,
replicated weights `R`, broadcast-shaped biases and scalars, values split along some axes, `V`
on a pipeline-stage axis - then a random DAG of elementwise ops around collectives (all_reduce,
reduce_scatter, all_gather, slice, shift), matmuls feeding collectives or fed by all_gathers,
norms, in-place updates of arguments, and a few results; mostly f32, some f64, f16 and bf16.
Every pass and every CoCoNeT pipeline must keep the program's outputs (`check_pipeline(...).ok`
at rtol 1e-5 / atol 1e-6 for f32 and f64, 1e-2 for f16, 5e-2 for bf16 - whose chunked matmuls
may round one ulp apart), every rank must hold bitwise its block of every output, and the IR
must be valid (verified, every value defined before use). A pass asked for a rewrite by tag may
refuse, but only with a `CcoptError` that says why - never another exception or invalid IR.

Numerics: elementwise passes (split, reorder, slicing, fusion, p2p) must be bitwise exact;
chunking a matmul (overlap) and summing squares by slices (sliced-norm) round differently. Values
downstream of a matmul or a norm are therefore "inexact", and the generator keeps them
well-conditioned: matmul operands are positive, and inexact values only go through ops that do
not amplify relative error (no cancelling add/sub, no comparisons, casts or exp of them).

`CCOPT_HYPOTHESIS_EXAMPLES` (default 60, which keeps CI under its time budget) sets the number
of programs per pass; the long property run outside CI uses 400 (README.md, "Long property runs").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects import inference as infer
from ccopt.dialects.dtensor_type import (
    DTensorType,
    P,
    PartialAttr,
    Placement,
    R,
    ReplicatedAttr,
    S,
    SplitAttr,
    V,
    VaryingAttr,
)
from ccopt.interpreters.distributed import global_shape
from ccopt.ir import verify_module
from ccopt.mesh import Mesh
from ccopt.runner import CheckReport

EXAMPLES = int(os.environ.get("CCOPT_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
F32 = Float32Type()
ELEMENT_TYPES = [F32] * 5 + [Float64Type(), Float16Type(), BFloat16Type()]
TOLERANCE = {"f32": (1e-5, 1e-6), "f64": (1e-5, 1e-6), "f16": (1e-2, 1e-3), "bf16": (5e-2, 1e-2)}
MESH = "m"
AXIS_NAMES = ("a", "b", "c")
MAX_ELEMENTS = 96  # per tensor: keep programs cheap to run


# --- values and the program under construction ----------------------------------------------------
@dataclass
class Value:
    """A pool entry: an SSA value and how exactly passes must reproduce it."""

    ssa: SSAValue
    exact: bool = True  # bitwise reproduced by every pass
    sign: str = "?"  # of an inexact value: "+", "-" or "?" (unknown)

    @property
    def type(self) -> DTensorType:
        t = self.ssa.type
        assert isinstance(t, DTensorType)
        return t


class Program:
    """A random program, its inputs, and what tagged requests can name."""

    def __init__(
        self,
        module: ModuleOp,
        inputs: dict[str, np.ndarray],
        tags: list[str],
        args: list[str],
        tolerance: tuple[float, float],
    ):
        self.module, self.inputs, self.tags, self.args = module, inputs, tags, args
        self.rtol, self.atol = tolerance
        self.text = str(module)

    def check(self, pipeline: str) -> CheckReport:
        return ccopt.check_pipeline(
            self.module, pipeline, self.inputs, rtol=self.rtol, atol=self.atol
        )

    def __repr__(self) -> str:  # hypothesis prints failing examples: show the IR
        return f"<program\n{self.text}\n>"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(repr(self))  # type: ignore[attr-defined]


class Builder:
    """Appends ops to the function body; an op the builders reject is simply not added."""

    def __init__(self, mesh: Mesh, roles: list[str], main: tuple[int, ...]):
        self.mesh, self.roles, self.main = mesh, roles, main
        self.block = Block()
        self.pool: list[Value] = []
        self.args: list[tuple[str, DTensorType, str]] = []  # name, type, input kind
        self.tags: list[str] = []

    # -- structure ---------------------------------------------------------------------------------
    def axes_with(self, role: str) -> list[int]:
        return [a for a, r in enumerate(self.roles) if r == role]

    def placements(self, by_role: dict[str, Placement]) -> list[Placement]:
        return [by_role[r] for r in self.roles]

    def add_arg(self, name: str, t: DTensorType, kind: str = "normal") -> Value:
        arg = self.block.insert_arg(t, len(self.block.args))
        arg.name_hint = name
        self.args.append((name, t, kind))
        return Value(arg)

    def add(self, op: Operation, tag: str | None = None) -> Operation:
        if tag is not None:
            op.attributes["tag"] = StringAttr(tag)
            self.tags.append(tag)
        self.block.add_op(op)
        return op


def try_build(build: Callable[..., Operation], *args: object) -> Operation | None:
    """`build(*args)`, or None when the builders reject the operands (no legal signature)."""
    try:
        return build(*args)
    except VerifyException:
        return None


def subsets(axes: Sequence[int]) -> list[tuple[int, ...]]:
    """Non-empty subsets of `axes` in mesh order."""
    out = []
    for mask in range(1, 1 << len(axes)):
        out.append(tuple(a for i, a in enumerate(axes) if mask >> i & 1))
    return out


def reaches_all_reduce(value: SSAValue) -> bool:
    """`value` is computed from an all_reduce through elementwise ops (pipeline-p2p's pattern)."""
    stack, seen = [value], set()
    while stack:
        op = stack.pop().owner
        if not isinstance(op, Operation) or op in seen:
            continue
        seen.add(op)
        if isinstance(op, coll.AllReduceOp):
            return True
        if not isinstance(op, coll.CollectiveOp | dt.MatmulOp | dt.NormOp):
            stack.extend(op.operands)
    return False


def size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --- the strategy ------------------------------------------------------------------------------------
UNARY = ["neg", "abs", "relu", "exp", "tanh", "gelu", "scale", "dropout"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
BINARY_OPS = {
    "add": dt.AddOp,
    "sub": dt.SubOp,
    "mul": dt.MulOp,
    "div": dt.DivOp,
    "max": dt.MaxOp,
    "min": dt.MinOp,
}
STEPS = ["unary", "binary", "binary", "binary", "collective", "collective", "select", "cast"]


def unary_op(kind: str, x: SSAValue, factor: float, seed: int) -> Operation:
    match kind:
        case "neg":
            return dt.NegOp(x)
        case "abs":
            return dt.AbsOp(x)
        case "relu":
            return dt.ReluOp(x)
        case "exp":
            return dt.ExpOp(x)
        case "tanh":
            return dt.TanhOp(x)
        case "gelu":
            return dt.GeluOp(x)
        case "scale":
            return dt.ScaleOp(x, factor)
        case "dropout":
            return dt.DropoutOp(x, seed, 0.25)
    raise AssertionError(kind)


def unary_sign(kind: str, sign: str, factor: float) -> str | None:
    """The sign of an inexact value after `kind`, or None if `kind` may amplify its error."""
    flip = {"+": "-", "-": "+", "?": "?"}
    match kind:
        case "neg":
            return flip[sign]
        case "abs" | "relu":
            return "+"
        case "tanh" | "dropout":
            return sign
        case "gelu":
            return "+" if sign == "+" else None
        case "scale":
            return sign if factor > 0 else flip[sign]
    return None  # exp: the error of x becomes a relative error |x| times larger


def binary_sign(kind: str, a: Value, b: Value) -> str | None:
    """The sign of the result when an operand is inexact, or None if `kind` could cancel."""
    sa = a.sign if not a.exact else "?"
    sb = b.sign if not b.exact else "?"
    if kind in ("mul", "div"):
        if sa != "?" and sb != "?":
            return "+" if sa == sb else "-"
        return "?"
    if kind in ("max", "min"):
        return "?"
    if a.exact or b.exact:
        return None  # an exact operand of unknown size could cancel the inexact one
    if kind == "add" and sa == sb and sa != "?":
        return sa
    if kind == "sub" and sa != "?" and sb != "?" and sa != sb:
        return sa
    return None


@st.composite
def programs(draw: st.DrawFn, max_steps: int = 10) -> Program:
    """A random valid program with up to `max_steps` body steps (an op or a short chain)."""
    # mesh: 1-3 axes, 1-8 ranks; roles: a pipeline-stage axis (V), data-parallel split axes
    # (values S(0) on them) and reduce axes (where partial values live)
    sizes: list[int] = []
    budget = 8
    for _ in range(draw(st.integers(1, 3))):
        s = draw(st.integers(1, budget))
        sizes.append(s)
        budget //= s
    sizes = draw(st.permutations(sizes))
    names = AXIS_NAMES[: len(sizes)]
    mesh = Mesh(MESH, names, tuple(sizes))
    rank = draw(st.integers(0, 3))
    roles = []
    for a, s in enumerate(sizes):
        if a == 0 and s >= 2 and len(sizes) > 1 and draw(st.booleans()):
            roles.append("stage")
        elif rank >= 1 and draw(st.integers(0, 4)) == 0:
            roles.append("split")
        else:
            roles.append("reduce")
    main: list[int] = []
    for _ in range(rank):
        main.append(draw(st.integers(1, max(1, min(9, MAX_ELEMENTS // max(1, size(main)))))))
    elt = draw(st.sampled_from(ELEMENT_TYPES))
    b = Builder(mesh, roles, tuple(main))
    reduce_axes = b.axes_with("reduce")

    def dtype(shape: Sequence[int], by_role: dict[str, Placement]) -> DTensorType:
        return DTensorType(shape, elt, MESH, b.placements(by_role))

    base = {"stage": V, "split": S(0), "reduce": R}

    # --- arguments ---
    for i in range(draw(st.integers(1, 2))):  # gradients: partial on some reduce axes
        placements = b.placements(base)
        partial = [a for a in reduce_axes if draw(st.booleans())] or reduce_axes[:1]
        kind = "max" if draw(st.integers(0, 5)) == 0 else "sum"
        for a in partial:
            placements[a] = P(kind)
        t = DTensorType(main, elt, MESH, placements)
        b.pool.append(b.add_arg(f"g{i}", t))
    for i in range(draw(st.integers(1, 2))):  # weights
        b.pool.append(b.add_arg(f"w{i}", dtype(main, base)))
    if rank and draw(st.booleans()):  # a bias: broadcast along the leading dimensions
        cut = draw(st.integers(1, rank))
        shape = list(main[cut:]) if draw(st.booleans()) else [1] * cut + list(main[cut:])
        pl = {**base, "split": R} if len(shape) < rank or shape[0] == 1 else base
        b.pool.append(b.add_arg("bias", dtype(shape, pl)))
    if draw(st.booleans()):  # a scalar
        b.pool.append(b.add_arg("lr", dtype((), {**base, "split": R})))
    if rank and reduce_axes and draw(st.booleans()):  # a value split along some reduce axes
        axes = draw(st.sampled_from(subsets(reduce_axes)))
        dim = draw(st.integers(0, rank - 1))
        placements = b.placements(base)
        for a in axes:
            placements[a] = S(dim)
        t = DTensorType(main, elt, MESH, placements)
        b.pool.append(b.add_arg("xs", t))

    # matmuls: a row-parallel one (partial output feeding a collective) and one fed by an
    # all_gather; either operand may be transposed, a rank-3 one may have a batched rhs
    def matmul_types(gathered: tuple[int, ...] = ()) -> tuple[DTensorType, DTensorType, bool, bool]:
        k = draw(st.integers(1, 6))
        tl, tr = draw(st.booleans()), draw(st.booleans())
        batch = tuple(main[:-2]) if rank == 3 and draw(st.booleans()) else ()
        lhs_m, lhs_k = (rank - 1, rank - 2) if tl else (rank - 2, rank - 1)
        rhs_k = len(batch) + (1 if tr else 0)
        lhs_shape = [*main[:-2], 0, 0]
        lhs_shape[lhs_m], lhs_shape[lhs_k] = main[-2], k
        rhs_shape = (*batch, main[-1], k) if tr else (*batch, k, main[-1])
        lhs_pl = b.placements({**base, "split": S(0 if rank == 3 else lhs_m)})
        rhs_pl = b.placements({**base, "split": S(0) if batch else R})
        for a in reduce_axes:
            if a in gathered:
                lhs_pl[a] = S(draw(st.sampled_from([lhs_m, lhs_k])))
            elif not gathered and draw(st.booleans()):
                lhs_pl[a], rhs_pl[a] = S(lhs_k), S(rhs_k)
        lhs = DTensorType(lhs_shape, elt, MESH, lhs_pl)
        return lhs, DTensorType(rhs_shape, elt, MESH, rhs_pl), tl, tr

    matmul_args: list[tuple[str, Value, Value, bool, bool]] = []
    if rank >= 2 and draw(st.booleans()):
        lhs, rhs, tl, tr = matmul_types()
        x, w = b.add_arg("x", lhs, "positive"), b.add_arg("wx", rhs, "positive")
        matmul_args.append(("row", x, w, tl, tr))
    if rank >= 2 and reduce_axes and draw(st.booleans()):
        lhs, rhs, tl, tr = matmul_types(draw(st.sampled_from(subsets(reduce_axes))))
        x, w = b.add_arg("xg", lhs, "positive"), b.add_arg("wg", rhs, "positive")
        matmul_args.append(("gather", x, w, tl, tr))

    # --- the body ---
    counter = [0]

    def tag() -> str | None:
        counter[0] += 1
        return f"t{counter[0]}" if draw(st.integers(0, 2)) == 0 else None

    def pick(candidates: Sequence[Value] | None = None) -> Value:
        pool = b.pool if candidates is None else candidates
        # recent values are likelier: the DAG grows around what was just computed
        i = draw(st.integers(0, len(pool) - 1))
        j = draw(st.integers(0, len(pool) - 1))
        return pool[max(i, j)]

    def emit(op: Operation | None, exact: bool, sign: str = "?") -> Value | None:
        if op is None:
            return None
        b.add(op, tag())
        value = Value(op.results[0], exact, sign)
        b.pool.append(value)
        return value

    def collective_options(t: DTensorType) -> list[tuple[str, tuple[int, ...]]]:
        pl = t.placement_list
        partial = [a for a, p in enumerate(pl) if isinstance(p, PartialAttr)]
        split = [a for a, p in enumerate(pl) if isinstance(p, SplitAttr)]
        repl = [a for a in reduce_axes if isinstance(pl[a], ReplicatedAttr)]
        options = [("all_reduce", s) for s in subsets(partial)] * 2
        options += [("reduce_scatter", s) for s in subsets(partial) if t.rank]
        options += [("all_gather", s) for s in subsets(split)]
        options += [("slice", s) for s in subsets(repl) if t.rank]
        stage = b.axes_with("stage")
        if stage and isinstance(pl[stage[0]], VaryingAttr | ReplicatedAttr):
            options.append(("shift", (stage[0],)))
        return options

    def collective(x: Value) -> Operation | None:
        t = x.type
        options = collective_options(t)
        if not options:
            return None
        kind, axes = draw(st.sampled_from(options))
        names = [mesh.axis_names[a] for a in axes]
        dim = draw(st.integers(0, max(0, t.rank - 1)))
        reduction = next(
            (p.partial_kind for p in t.placement_list if isinstance(p, PartialAttr)), "sum"
        )
        match kind:
            case "all_reduce":
                return try_build(coll.AllReduceOp, x.ssa, mesh, names, reduction)
            case "reduce_scatter":
                return try_build(coll.ReduceScatterOp, x.ssa, mesh, names, dim, reduction)
            case "all_gather":
                return try_build(coll.AllGatherOp, x.ssa, mesh, names)
            case "slice":
                return try_build(coll.SliceOp, x.ssa, mesh, names, dim)
            case _:
                offset = draw(st.sampled_from([1, -1]))
                cyclic = draw(st.booleans())
                return try_build(coll.ShiftOp, x.ssa, mesh, names[0], offset, cyclic)

    def partner(
        kind: str, x: Value, floats: Sequence[Value], first: Sequence[DTensorType] = ()
    ) -> Value | None:
        """An operand that `kind` accepts next to `x` (types checked up front)."""
        fits = []
        for y in floats:
            try:
                infer.infer_elementwise(kind, [*first, x.type, y.type])
            except VerifyException:
                continue
            fits.append(y)
        return pick(fits) if fits else None

    # optimizer-like programs start by all-reducing their gradients
    for g in [v for v in b.pool if any(isinstance(p, PartialAttr) for p in v.type.placement_list)]:
        if draw(st.integers(0, 3)):
            pl = g.type.placement_list
            partial = [mesh.axis_names[a] for a, p in enumerate(pl) if isinstance(p, PartialAttr)]
            kind = next(p.partial_kind for p in pl if isinstance(p, PartialAttr))
            if rank and draw(st.integers(0, 3)) == 0:  # RS: compute on the reduced slice
                dim = draw(st.integers(0, rank - 1))
                emit(try_build(coll.ReduceScatterOp, g.ssa, mesh, partial, dim, kind), True)
            else:
                emit(try_build(coll.AllReduceOp, g.ssa, mesh, partial, kind), True)

    for _ in range(draw(st.integers(1, max_steps))):
        if matmul_args and draw(st.integers(0, 3)) == 0:
            kind, lhs, rhs, tl, tr = matmul_args.pop(0)
            if kind == "row":
                mm = try_build(dt.MatmulOp, lhs.ssa, rhs.ssa, tl, tr)
                if mm is None:
                    continue
                b.add(mm)
                product = Value(mm.results[0], False, "+")
                partial = [
                    mesh.axis_names[a]
                    for a, p in enumerate(product.type.placement_list)
                    if isinstance(p, PartialAttr)
                ]
                if partial and draw(st.integers(0, 4)):
                    if draw(st.booleans()):
                        reduced = collective(product)
                    else:
                        reduced = try_build(coll.AllReduceOp, mm.results[0], mesh, partial)
                    if reduced is not None and reduced.operands[0] is mm.results[0]:
                        emit(reduced, False, "+")
                        continue
                b.pool.append(product)
            else:
                gathered_axes = [
                    mesh.axis_names[a]
                    for a, p in enumerate(lhs.type.placement_list)
                    if isinstance(p, SplitAttr) and a in reduce_axes
                ]
                ag = try_build(coll.AllGatherOp, lhs.ssa, mesh, gathered_axes)
                if ag is None or not gathered_axes:
                    continue
                mm = try_build(dt.MatmulOp, ag.results[0], rhs.ssa, tl, tr)
                if mm is None:
                    continue
                b.add(ag, tag())
                emit(mm, False, "+")
            continue
        step = draw(st.sampled_from(STEPS + (["norm"] if rank else [])))
        floats = [v for v in b.pool if v.type.element_type == elt]
        if step == "collective":
            movable = [v for v in floats if collective_options(v.type)]
            if movable:
                x = pick(movable)
                emit(collective(x), x.exact, x.sign)
        elif step == "unary":
            x = pick(floats)
            kind = draw(st.sampled_from(UNARY))
            factor = draw(st.sampled_from([0.5, -2.0, 3.0]))
            sign = "?" if x.exact else unary_sign(kind, x.sign, factor)
            if sign is None:
                continue
            emit(try_build(unary_op, kind, x.ssa, factor, draw(st.integers(0, 9))), x.exact, sign)
        elif step == "binary":
            kind = draw(st.sampled_from(BINARY))
            x = pick(floats)
            y = partner(kind, x, floats)
            if y is None:
                continue
            if draw(st.booleans()):
                x, y = y, x
            if x.exact and y.exact:
                emit(try_build(BINARY_OPS[kind], x.ssa, y.ssa), True)
                continue
            sign = binary_sign(kind, x, y)
            if sign is not None:
                emit(try_build(BINARY_OPS[kind], x.ssa, y.ssa), False, sign)
        elif step == "select":
            exact = [v for v in floats if v.exact]
            if not exact:
                continue
            c1 = pick(exact)
            c2 = partner("cmp", c1, exact)
            if c2 is None:
                continue
            pred = draw(st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]))
            cond = try_build(dt.CmpOp, pred, c1.ssa, c2.ssa)
            if cond is None:
                continue
            x = pick(floats)
            y = partner("select", x, floats, [cond.results[0].type])
            if y is None:
                continue
            chosen = try_build(dt.SelectOp, cond.results[0], x.ssa, y.ssa)
            if chosen is None:
                continue
            b.add(cond, tag())
            both = x.sign if x.sign == y.sign else "?"
            emit(chosen, x.exact and y.exact, both)
        elif step == "cast":
            exact = [v for v in floats if v.exact]
            if not exact:
                continue
            x = pick(exact)
            to = draw(st.sampled_from([t for t in ELEMENT_TYPES[4:] if t != elt]))
            there = try_build(dt.CastOp, x.ssa, to)
            if there is None:
                continue
            b.add(there, tag())
            inner = there.results[0]
            if draw(st.booleans()):
                kind = draw(st.sampled_from(["neg", "tanh", "exp", "scale"]))
                op = try_build(unary_op, kind, inner, 0.5, 0)
                if op is not None:
                    b.add(op, tag())
                    inner = op.results[0]
            emit(try_build(dt.CastOp, inner, elt), True)
        elif step == "norm":
            x = pick(floats)
            if not x.exact and x.sign == "?":
                continue  # keep inexact values far from cancellation
            split = [
                mesh.axis_names[a]
                for a, p in enumerate(x.type.placement_list)
                if isinstance(p, SplitAttr) and a in reduce_axes
            ]
            if split and draw(st.booleans()):  # the norm of a gathered value (sliced-norm)
                gathered = try_build(coll.AllGatherOp, x.ssa, mesh, split)
                if gathered is None:
                    continue
                b.add(gathered, tag())
                x = Value(gathered.results[0], x.exact, x.sign)
            emit(try_build(dt.NormOp, x.ssa), False, "+")

    # --- a pipeline stage sends its last value to the next stage ---
    stage = b.axes_with("stage")
    if stage and draw(st.integers(0, 3)):
        reduced = [v for v in b.pool if reaches_all_reduce(v.ssa)]
        x = pick(reduced) if reduced and draw(st.integers(0, 3)) else b.pool[-1]
        offset = draw(st.sampled_from([1, 1, -1]))
        emit(
            try_build(coll.ShiftOp, x.ssa, mesh, mesh.axis_names[stage[0]], offset), x.exact, x.sign
        )

    # --- in-place updates of arguments (optimizer state) ---
    arg_values = {a.name_hint: a for a in b.block.args}
    for name, t, _ in list(b.args):
        if name.startswith("g") or not draw(st.integers(0, 2)) == 0:
            continue
        replicated = [a for a in reduce_axes if isinstance(t.placement_list[a], ReplicatedAttr)]
        if t.rank and replicated and draw(st.booleans()):
            # state read only through slices and written back gathered (slice-state's pattern)
            axes = [mesh.axis_names[a] for a in draw(st.sampled_from(subsets(replicated)))]
            dim = draw(st.integers(0, t.rank - 1))
            piece = try_build(coll.SliceOp, arg_values[name], mesh, axes, dim)
            if piece is None:
                continue
            b.add(piece, tag())
            sliced = piece.results[0]
            same = [v for v in b.pool if v.type == sliced.type and v.exact]
            decayed = b.add(dt.ScaleOp(sliced, 0.9), tag())
            new_s = decayed
            if same:
                new_s = b.add(dt.AddOp(decayed.results[0], pick(same).ssa), tag())
            gathered = b.add(coll.AllGatherOp(new_s.results[0], mesh, axes), tag())
            if gathered.results[0].type == t:
                b.add(dt.UpdateOp(arg_values[name], gathered.results[0]))
            continue
        same = [v for v in b.pool if v.type == t and v.ssa is not arg_values[name]]
        if not same:
            continue
        u = pick(same)
        state = Value(arg_values[name])
        if draw(st.booleans()):
            decayed = b.add(dt.ScaleOp(state.ssa, 0.9), tag())
            state = Value(decayed.results[0])
        kind = draw(st.sampled_from(["add", "sub", "mul", "max"] if u.exact else ["mul", "max"]))
        new = try_build(BINARY_OPS[kind], state.ssa, u.ssa)
        if new is None or new.results[0].type != t:
            continue
        b.add(new, tag())
        b.add(dt.UpdateOp(arg_values[name], new.results[0]))

    # --- results ---
    computed = [v for v in b.pool if v.ssa not in b.block.args] or b.pool
    sinks = [v for v in computed if not v.ssa.uses] or computed
    count = draw(st.integers(1, min(3, len(sinks))))
    results = [pick(sinks).ssa for _ in range(count)]
    b.block.add_op(func.ReturnOp(*results))
    f = func.FuncOp(
        "prog",
        FunctionType.from_lists([a.type for a in b.block.args], [r.type for r in results]),
        Region(b.block),
    )
    module = ModuleOp([dt.MeshOp(MESH, list(zip(names, sizes, strict=True))), f])
    verify_module(module)

    # --- inputs: per-rank partials and stage values stacked in front ---
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inputs = {}
    for name, t, kind in b.args:
        shape = global_shape(t, mesh)
        if kind == "positive":
            inputs[name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            inputs[name] = rng.standard_normal(shape).astype(np.float32)
    tags = list(dict.fromkeys(b.tags))
    return Program(module, inputs, tags, [a[0] for a in b.args], TOLERANCE[str(elt)])


# --- the tests ------------------------------------------------------------------------------------------
SPLIT = "split-all-reduce"
COMM_BOUND = '"' + str(Path(__file__).parents[1] / "filecheck/passes/inputs/comm-bound.yml") + '"'
REORDER = "reorder-elementwise"
FUSE = "fuse-elementwise"

PASSES = [
    SPLIT,
    f"{SPLIT}{{dim=1}}",
    REORDER,
    f"{SPLIT},{REORDER}",
    "slice-state",
    f"{SPLIT},{REORDER},slice-state",
    "sliced-norm",
    f"{SPLIT},{REORDER},sliced-norm",
    "pipeline-p2p",
    FUSE,
    "fuse-collective",
    f"{SPLIT},{REORDER},fuse-collective",
    "overlap{chunks=1}",
    "overlap{chunks=3}",
    # the CoCoNeT schedules
    f"{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE}",
    f"{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE},fuse-collective",
    f"{SPLIT},{REORDER},{FUSE},overlap{{chunks=2}}",
    f"{SPLIT},{REORDER},fuse-collective,overlap{{chunks=3}}",
    f"pipeline-p2p,{FUSE}",
    f"pipeline-p2p,{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE},fuse-collective,overlap{{chunks=3}}",
    # down to the kernel level (buffers, streams, NCCL calls), memory planned or not
    "convert-to-kernel",
    "convert-to-kernel,plan-memory",
    f"{SPLIT},{REORDER},{FUSE},fuse-collective,overlap{{chunks=2}},convert-to-kernel,plan-memory",
    f"pipeline-p2p,{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE},overlap{{chunks=2}},convert-to-kernel,plan-memory",
    # autotune on windows of one and two ops around each collective (cut between any two ops)
    f"autotune{{machine={COMM_BOUND} chunks=1,2 window=1}}",
    f"{SPLIT},{REORDER},autotune{{machine={COMM_BOUND} chunks=2 window=2}}",
]


def describe(report: CheckReport) -> str:
    return "; ".join(
        f"{c.name}: abs {c.max_abs_error:.3g} rel {c.max_rel_error:.3g} {c.note}"
        for c in report.comparisons
        if not c.ok
    )


@pytest.mark.parametrize("pipeline", PASSES)
@SETTINGS
@given(prog=programs())
def test_pass_keeps_outputs(
    check_shards: Callable, optimize: Callable, pipeline: str, prog: Program
) -> None:
    report = prog.check(pipeline)
    assert report.ok, f"{pipeline}: {describe(report)}"
    check_shards(report.optimized, level_above_kernels(optimize, prog.module, pipeline))


def level_above_kernels(optimize: Callable, module: ModuleOp, pipeline: str) -> ModuleOp:
    """The program after `pipeline` but before convert-to-kernel: its function type still says
    how each output is distributed (buffers at the kernel level do not)."""
    passes = pipeline.removesuffix(",plan-memory").removesuffix("convert-to-kernel").rstrip(",")
    return optimize(module, passes)[1] if passes else module


FUSIONS = [
    FUSE,
    f"{FUSE},{FUSE}",
    f"{SPLIT},{REORDER},{FUSE},fuse-collective",
    f"{SPLIT},{REORDER},fuse-collective,{FUSE}",
]


@pytest.mark.parametrize("pipeline", FUSIONS)
@SETTINGS
@given(prog=programs(max_steps=24))
def test_fusion_of_long_elementwise_dags(
    check_shards: Callable, optimize: Callable, pipeline: str, prog: Program
) -> None:
    """Long DAGs give fusion many overlapping candidate groups: every fused op must be placeable
    (no cycle between kernels, every operand defined before use) and compute the same values."""
    report = prog.check(pipeline)
    assert report.ok, f"{pipeline}: {describe(report)}"
    _, optimized = optimize(prog.module, pipeline)
    check_shards(report.optimized, optimized)


def downstream_tags(module: ModuleOp, start: str) -> list[str]:
    """Tags of the ops that use, transitively, the results of the op tagged `start`."""
    ops = [op for op in module.walk() if isinstance(op.attributes.get("tag"), StringAttr)]
    first = next(op for op in ops if op.attributes["tag"].data == start)  # type: ignore[union-attr]
    found: list[str] = []
    stack, seen = [first], {first}
    while stack:
        for result in stack.pop().results:
            for use in result.uses:
                user = use.operation
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
                    tag = user.attributes.get("tag")
                    if isinstance(tag, StringAttr) and tag.data != start:
                        found.append(tag.data)
    return list(dict.fromkeys(found))


TAGGED = [
    "split-all-reduce{{tags={}}}",
    "reorder-elementwise{{tags={}}}",
    "sliced-norm{{tags={}}}",
    "pipeline-p2p{{tags={}}}",
    "overlap{{tags={}}}",
    "fuse-elementwise{{group={}}}",
    "fuse-collective{{group={}}}",
    "slice-state{{args={}}}",
]


@pytest.mark.parametrize("template", TAGGED, ids=[t.split("{")[0] for t in TAGGED])
@SETTINGS
@given(prog=programs(), data=st.data())
def test_tagged_requests_rewrite_or_refuse_cleanly(
    check_shards: Callable, optimize: Callable, template: str, prog: Program, data: st.DataObject
) -> None:
    """A pass asked for a rewrite by tag (or slice-state by argument name) rewrites correctly or
    refuses with a CcoptError that says why."""
    names = prog.args if template.startswith("slice-state") else prog.tags
    if not names:
        return
    if template.startswith("fuse") and data.draw(st.booleans()):
        # a tagged op and tagged ops downstream of it: groups that are often legal
        start = data.draw(st.sampled_from(names))
        cone = downstream_tags(prog.module, start)
        chosen = (
            [start, *data.draw(st.lists(st.sampled_from(cone), max_size=3, unique=True))]
            if cone
            else [start]
        )
    else:
        chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    prefix = data.draw(st.sampled_from(["", f"{SPLIT},{REORDER},"]))
    pipeline = prefix + template.format(",".join(chosen))
    try:
        _, optimized = optimize(prog.module, pipeline)
    except CcoptError as e:
        assert str(e).strip() and e.render(), "a refusal must say why"
        return
    report = prog.check(pipeline)
    assert report.ok, f"{pipeline}: {describe(report)}"
    check_shards(report.optimized, optimized)


@SETTINGS
@given(prog=programs())
def test_programs_run(prog: Program) -> None:
    """The generator's programs are valid and run (a baseline for the pass tests)."""
    result = ccopt.run(prog.module, prog.inputs)
    assert result.outputs


# --- calls: outlined pieces of random programs, inlined back -------------------------------------
def outline(f: func.FuncOp, start: int, stop: int, name: str) -> func.FuncOp:
    """Move ops [start, stop) of `f`'s body into a new private function @name that takes the
    values they read from outside and returns the values read after them; a call replaces
    them. In-place updates move along: the callee updates its argument (the caller's)."""
    block = f.body.blocks[0]
    piece = list(block.ops)[start:stop]
    inside = set(piece)
    free: dict[SSAValue, None] = {}
    for op in piece:
        for nested in op.walk():
            for v in nested.operands:
                if v.owner not in inside and not (
                    isinstance(v.owner, Operation) and v.owner.parent_op() in inside
                ):
                    free.setdefault(v)
    outputs = [
        r for op in piece for r in op.results if any(u.operation not in inside for u in r.uses)
    ]
    body = Block(arg_types=[v.type for v in free])
    values: dict[SSAValue, SSAValue] = dict(zip(free, body.args, strict=True))
    for op in piece:
        body.add_op(op.clone(value_mapper=values))
    body.add_op(func.ReturnOp(*[values[r] for r in outputs]))
    callee = func.FuncOp(
        name,
        FunctionType.from_lists([v.type for v in free], [r.type for r in outputs]),
        Region(body),
        visibility="private",
    )
    f.parent_block().insert_op_before(callee, f)  # type: ignore[union-attr]
    call = func.CallOp(name, list(free), [r.type for r in outputs])
    block.insert_op_before(call, piece[0])
    for old, new in zip(outputs, call.results, strict=True):
        old.replace_all_uses_with(new)
    for op in reversed(piece):
        block.erase_op(op)
    return callee


@SETTINGS
@given(prog=programs(), data=st.data())
def test_outlined_programs_run_and_inline_back(prog: Program, data: st.DataObject) -> None:
    """Pieces of a random program moved into (nested) private functions run to the same values
    - in-place updates travel out of calls - and `inline` restores a call-free program that
    every pipeline then handles."""
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.runner import compare_modules

    module = prog.module.clone()
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    for depth in range(data.draw(st.integers(1, 2))):
        n = len(f.body.blocks[0].ops) - 1  # without the return
        if n < 1:
            break
        start = data.draw(st.integers(0, n - 1))
        f = outline(f, start, data.draw(st.integers(start + 1, n)), f"part{depth}")
    verify_module(module)
    assume(any(isinstance(op, func.CallOp) for op in module.walk()))  # not an empty program

    same = compare_modules(prog.module, module, prog.inputs, rtol=0.0, atol=0.0)
    assert same.ok, describe(same)
    inlined = apply_pipeline(module, "inline")
    assert [type(op) for op in inlined.walk()] == [type(op) for op in prog.module.walk()]
    pipeline = f"inline,{SPLIT},{REORDER},sliced-norm,slice-state,{FUSE},convert-to-kernel"
    report = ccopt.check_pipeline(module, pipeline, prog.inputs, rtol=prog.rtol, atol=prog.atol)
    assert report.ok, f"{pipeline}: {describe(report)}"


# --- memory plans: the checker accepts only plans that compute the same values ----------------------
@SETTINGS
@given(prog=programs(), data=st.data())
def test_memory_plans_the_verifier_accepts_compute_the_same(
    prog: Program, data: st.DataObject
) -> None:
    """Moving buffers of a planned program to other offsets: the verifier either rejects the
    plan (buffers sharing bytes while both are in use) or the program - whose buffers the
    interpreter places in one workspace per rank - still computes the same values."""
    from ccopt.diagnostics import OpError
    from ccopt.dialects import kernel as k
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.runner import compare_modules

    planned = apply_pipeline(prog.module, "convert-to-kernel,plan-memory")
    allocs = [op for op in planned.walk() if isinstance(op, k.AllocOp)]
    assume(len(allocs) >= 2)
    offsets = sorted({a.byte_offset() for a in allocs})
    for alloc in data.draw(st.lists(st.sampled_from(allocs), min_size=1, max_size=3)):
        alloc.offset = IntegerAttr(data.draw(st.sampled_from(offsets)), i64)
    f = next(op for op in planned.ops if isinstance(op, func.FuncOp))
    top = max(a.byte_offset() + buffer_size(a) for a in allocs)  # type: ignore[operator]
    f.attributes["kernel.workspace"] = IntegerAttr(top, i64)
    try:
        verify_module(planned)
    except OpError as e:
        assert "overlap" in e.message
        event("the verifier rejects the plan")
        return
    event("the verifier accepts the plan")
    same = compare_modules(prog.module, planned, prog.inputs, rtol=prog.rtol, atol=prog.atol)
    assert same.ok, describe(same)


def buffer_size(alloc: Operation) -> int:
    from ccopt.dialects import kernel as k
    from ccopt.dialects.dtensor import lookup_mesh

    t = k.tensor_of(alloc.results[0])
    mesh = lookup_mesh(alloc, t.mesh_name)
    assert mesh is not None
    return k.buffer_bytes(t, mesh)
