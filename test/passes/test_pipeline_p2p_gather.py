"""pipeline-p2p moves an all_gather past the stage transfer that reads it (CoCoNeT's fusion of
send/recv with all-gather): `shift(all_gather(x)) -> all_gather(shift(x))`.

* After split-all-reduce and reorder-elementwise, the stage boundary example sends 1/tp of the
  activation and computes the same values, on the meshes and shapes of test_pass_numerics.
* On random programs (meshes of 2-3 axes with the pipeline axis anywhere, shapes smaller than or
  not divisible by the groups, any gathered dimension, one or two gathered axes, V or R over the
  stages, offsets and cyclic shifts, four element types, a gather with another user, two
  transfers of one gather): no shift reads an all_gather afterwards, the outputs are bitwise
  those before (the rewrite only moves data), and every group of gathering ranks sends each
  element once instead of once per rank. A gather that also spans the pipeline axis leaves the
  program unchanged, and asked for by tag it is refused with a located diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_pass_numerics import PIPE_MESHES, PIPE_SHAPES, boundary, boundary_inputs, shift_bytes
from test_random_programs import SETTINGS

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll

STEPS = "split-all-reduce,reorder-elementwise"


@pytest.mark.parametrize("shape", PIPE_SHAPES)
@pytest.mark.parametrize("mesh", PIPE_MESHES)
def test_boundary_after_split_sends_slices(
    check_shards: Callable, optimize: Callable, mesh: tuple[int, int], shape: tuple
) -> None:
    pp, tp = mesh
    spec = f"pp={pp},tp={tp}"
    text = boundary(shape)
    pipeline = f"{STEPS},pipeline-p2p"
    report = ccopt.check_pipeline(
        text, pipeline, boundary_inputs(shape, pp, pp * 10 + tp), mesh=spec, rtol=1e-5, atol=1e-6
    )
    assert report.ok, report.comparisons
    _, split = optimize(text, STEPS, spec)
    _, optimized = optimize(text, pipeline, spec)
    check_shards(report.optimized, optimized)
    # split and reordered, the transfer still carried the whole activation
    assert sum(shift_bytes(split)) == tp * sum(shift_bytes(optimized))
    (shift,) = [op for op in optimized.walk() if isinstance(op, coll.ShiftOp)]
    assert type(shift.input.owner) is not coll.AllGatherOp
    assert [type(u.operation) for u in shift.result.uses] == [coll.AllGatherOp]


@dataclass(frozen=True)
class Case:
    """shift(s) over `pp` of an all_gather over `gathered` axes along `dim` (and over `pp`
    too when `over_stages`: then the pass must leave the program alone)."""

    sizes: tuple[int, ...]
    pp: int  # the pipeline axis
    gathered: tuple[int, ...]
    others: tuple[str, ...]  # the placements of the other axes, R or S(d') with d' != dim
    shape: tuple[int, ...]
    dim: int
    stages: str  # V or R
    offsets: tuple[int, ...]
    cyclic: bool
    element: str
    other_user: bool
    over_stages: bool

    def placements(self, *, gathered: str, stages: str) -> str:
        out, others = [], iter(self.others)
        for a in range(len(self.sizes)):
            if a == self.pp:
                out.append(stages)
            elif a in self.gathered:
                out.append(gathered)
            else:
                out.append(next(others))
        return ", ".join(out)

    def text(self, tag: str | None = None) -> str:
        names = [f"a{a}" if a != self.pp else "pp" for a in range(len(self.sizes))]
        mesh = ", ".join(f"{n}={s}" for n, s in zip(names, self.sizes, strict=True))
        shape = "x".join(map(str, self.shape))

        def ty(gathered: str, stages: str) -> str:
            where = self.placements(gathered=gathered, stages=stages)
            return f"!dtensor.tensor<{shape}x{self.element}, @m[{where}]>"

        split = f"S({self.dim})"
        if self.over_stages:
            x, g = ty(split, split), ty("R", "R")
        else:
            x, g = ty(split, self.stages), ty("R", self.stages)
        n = ty("R", "V")
        spanned = sorted({*self.gathered, *([self.pp] if self.over_stages else [])})
        axes = ", ".join(names[a] for a in spanned)
        options = " cyclic" if self.cyclic else ""
        if tag is not None:
            options += f' {{tag = "{tag}"}}'
        lines = [f"%g = coll.all_gather %x over [{axes}] : {x} -> {g}"]
        results = []
        for i, offset in enumerate(self.offsets):
            lines.append(f"%n{i} = coll.shift %g over [pp] by {offset}{options} : {g} -> {n}")
            results.append((f"%n{i}", n))
        if self.other_user:
            lines.append(f"%e = dtensor.neg %g : {g}")
            results.append(("%e", g))
        body = "\n  ".join(lines)
        values = ", ".join(v for v, _ in results)
        types = ", ".join(t for _, t in results)
        return (
            f"dtensor.mesh @m [{mesh}]\n"
            f"func.func @main(%x: {x}) -> ({types}) {{\n  {body}\n"
            f"  func.return {values} : {types}\n}}\n"
        )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    ndim = draw(st.integers(2, 3))
    pp = draw(st.integers(0, ndim - 1))
    sizes = tuple(
        draw(st.integers(2, 3)) if a == pp else draw(st.integers(1, 3)) for a in range(ndim)
    )
    assume(prod(sizes) <= 12)
    rest = [a for a in range(ndim) if a != pp]
    gathered = tuple(a for a in rest if draw(st.booleans())) or (draw(st.sampled_from(rest)),)
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    dim = draw(st.integers(0, rank - 1))
    other_dims = [d for d in range(rank) if d != dim]
    others = tuple(
        draw(st.sampled_from(["R", *(f"S({d})" for d in other_dims)]))
        for a in rest
        if a not in gathered
    )
    cyclic = draw(st.booleans())
    span = sizes[pp] if cyclic else sizes[pp] - 1
    offset = st.builds(lambda m, sign: m * sign, st.integers(1, span), st.sampled_from([1, -1]))
    offsets = tuple(draw(st.lists(offset, min_size=1, max_size=2)))
    return Case(
        sizes,
        pp,
        gathered,
        others,
        shape,
        dim,
        draw(st.sampled_from(["V", "R"])),
        offsets,
        cyclic,
        draw(st.sampled_from(["f32", "f64", "f16", "bf16"])),
        draw(st.booleans()),
        draw(st.integers(0, 4)) == 0,
    )


@SETTINGS
@given(case=cases())
def test_gather_commutes_with_shift(check_shards: Callable, optimize: Callable, case: Case) -> None:
    text = case.text()
    reference, optimized = optimize(text, "pipeline-p2p")
    if case.over_stages:
        assert str(optimized) == str(reference)
        with pytest.raises(CcoptError, match="gathered over pp itself") as refused:
            optimize(case.text(tag="send"), "pipeline-p2p{tags=send}")
        assert ":4:3: error: 'coll.shift' op" in refused.value.render()  # the first shift
        return
    shifts = [op for op in optimized.walk() if isinstance(op, coll.ShiftOp)]
    assert len(shifts) == len(case.offsets)
    assert all(type(s.input.owner) is not coll.AllGatherOp for s in shifts), optimized
    gathers = [op for op in optimized.walk() if isinstance(op, coll.AllGatherOp)]
    assert len(gathers) == len(case.offsets) + case.other_user  # the original only if still read
    report = ccopt.check_pipeline(text, "pipeline-p2p", seed=len(text), rtol=0, atol=0)
    assert report.ok, report.comparisons
    check_shards(report.optimized, optimized)
    group = prod(case.sizes[a] for a in case.gathered)
    assert sum(shift_bytes(reference)) == group * sum(shift_bytes(optimized))
