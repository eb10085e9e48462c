"""autotune tunes pipeline transfers: each `coll.shift` is left or sent as a tensor-parallel slice
(pipeline-p2p), before the all-reduces or the all-gather that rewrite touches, which are tuned
after it on what it left.

On a machine where communication dominates and the stages talk over a ten times slower network
than each tensor-parallel group, it sends slices (the stage boundary example, uneven blocks
included; several all-reduces feeding one transfer; a gathered activation, alone or also read by
the sending stage; the activation sent also read by the sending stage), and the tuned program
computes what the program did on every rank.
The collectives pipeline-p2p made are tuned in their turn: the reduce-scatters with the
reduce-scatter's rows, under the label of the all-reduce they replace, and the gathers it made in
the receiving stage last (labelled `%<shift> gather`), beside the matmul they feed there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from test_pass_numerics import boundary, boundary_inputs, shift_bytes
from xdsl.dialects.builtin import ModuleOp

import ccopt
from ccopt.dialects import coll

NODES = """\
network: {{topology: [Ring, Ring], npus_count: [{tp}, {pp}], bandwidth: [0.01, 0.001], latency: [10, 10]}}
gpu: {{peak-tflops: {{f32: 0.001}}, hbm-tbps: 0.001, launch-overhead-ns: 0, collective-sm-share: 0.1, matmul-efficiency: [[1, 1.0]]}}
mesh-axes: [tp, pp]
"""
"""comm-bound.yml with each tensor-parallel group on a node and the stages on different nodes."""


def tune(tmp_path: Path, pp: int, tp: int, extra: str = "") -> str:
    machine = tmp_path / f"nodes-{pp}x{tp}.yml"
    machine.write_text(NODES.format(pp=pp, tp=tp))
    return f'autotune{{machine="{machine}" chunks=1,2{extra}}}'


def tuned_and_checked(
    check_shards: Callable,
    optimize: Callable,
    tmp_path: Path,
    text: str,
    mesh: tuple[int, int],
    inputs: dict | None = None,
) -> tuple[ModuleOp, ModuleOp]:
    """(program, tuned program) on a pp x tp mesh, after checking that they compute the same on
    every rank."""
    pp, tp = mesh
    spec, pipeline = f"pp={pp},tp={tp}", tune(tmp_path, pp, tp)
    report = ccopt.check_pipeline(text, pipeline, inputs, mesh=spec, seed=11, rtol=1e-5, atol=1e-6)
    assert report.ok, [(c.name, c.max_rel_error) for c in report.comparisons if not c.ok]
    reference, tuned = optimize(text, pipeline, spec)
    check_shards(report.optimized, tuned)
    return reference, tuned


def sends_slices(reference: ModuleOp, tuned: ModuleOp, tp: int) -> bool:
    """Every element crosses the boundary once per tensor-parallel group, not once per rank."""
    return sum(shift_bytes(reference)) == tp * sum(shift_bytes(tuned))


@pytest.mark.parametrize("shape", [(8, 48, 36), (5, 7, 3), (10, 6, 12)])
@pytest.mark.parametrize(("pp", "tp"), [(2, 2), (2, 3), (2, 4), (3, 2)])
def test_autotuned_stage_boundary_sends_slices(
    check_shards: Callable,
    optimize: Callable,
    tmp_path: Path,
    pp: int,
    tp: int,
    shape: tuple[int, int, int],
) -> None:
    text = boundary(shape)
    inputs = boundary_inputs(shape, pp, pp * 10 + tp)
    reference, tuned = tuned_and_checked(check_shards, optimize, tmp_path, text, (pp, tp), inputs)
    assert sends_slices(reference, tuned, tp)
    assert not [o for o in tuned.walk() if isinstance(o, coll.AllReduceOp)]


MESH = "dtensor.mesh @pm [pp=2, tp=4]\n"
P = "!dtensor.tensor<12x16xf32, @pm[V, P(sum)]>"
A = "!dtensor.tensor<12x16xf32, @pm[V, R]>"
X = "!dtensor.tensor<12x8xf32, @pm[V, S(1)]>"
W = "!dtensor.tensor<8x16xf32, @pm[V, S(0)]>"
S = "!dtensor.tensor<12x16xf32, @pm[V, S(0)]>"
W2 = "!dtensor.tensor<16x4xf32, @pm[V, R]>"
H = "!dtensor.tensor<12x4xf32, @pm[V, R]>"

TWO_PARTIALS = f"""{MESH}func.func @main(%x: {X}, %w: {W}, %v: {W}) -> {A} {{
  %y = dtensor.matmul %x, %w : ({X}, {W}) -> {P}
  %z = dtensor.matmul %x, %v : ({X}, {W}) -> {P}
  %s = coll.all_reduce sum %y over [tp] : {P} -> {A}
  %t = coll.all_reduce sum %z over [tp] : {P} -> {A}
  %u = dtensor.add %s, %t : ({A}, {A}) -> {A}
  %n = coll.shift %u over [pp] by 1 : {A} -> {A}
  func.return %n : {A}
}}
"""
"""Two all-reduces feed one transfer: both become reduce-scatters, each tuned in its turn."""

GATHERED = f"""{MESH}func.func @main(%x: {S}, %w: {W2}) -> ({H}, {A}) {{
  %g = coll.all_gather %x over [tp] : {S} -> {A}
  %n = coll.shift %g over [pp] by 1 cyclic : {A} -> {A}
  %h = dtensor.matmul %n, %w : ({A}, {W2}) -> {H}
  %e = dtensor.exp %g : {A}
  func.return %h, %e : {H}, {A}
}}
"""
"""A gathered activation also read by the sending stage: the gather stays for that reader and
the receiving stage gathers what it got (the copy does not take the original's number)."""

GATHERED_ONLY_SENT = f"""{MESH}func.func @main(%x: {S}, %w: {W2}) -> {H} {{
  %g = coll.all_gather %x over [tp] : {S} -> {A}
  %n = coll.shift %g over [pp] by 1 : {A} -> {A}
  %h = dtensor.matmul %n, %w : ({A}, {W2}) -> {H}
  func.return %h : {H}
}}
"""
"""A gathered activation only sent: the gather moves into the receiving stage."""

SENT_AND_KEPT = f"""{MESH}func.func @main(%x: {X}, %w: {W}, %b: {A}) -> ({A}, {A}) {{
  %y = dtensor.matmul %x, %w : ({X}, {W}) -> {P}
  %s = coll.all_reduce sum %y over [tp] : {P} -> {A}
  %o = dtensor.add %s, %b : ({A}, {A}) -> {A}
  %n = coll.shift %o over [pp] by -1 : {A} -> {A}
  %k = dtensor.tanh %o : {A}
  func.return %n, %k : {A}, {A}
}}
"""
"""The activation sent is read by the sending stage too (it is gathered there anyway)."""

FEEDS = f"""{MESH}func.func @main(%x: {X}, %w: {W}, %w2: {W2}) -> {H} {{
  %y = dtensor.matmul %x, %w : ({X}, {W}) -> {P}
  %s = coll.all_reduce sum %y over [tp] : {P} -> {A}
  %n = coll.shift %s over [pp] by 1 : {A} -> {A}
  %h = dtensor.matmul %n, %w2 : ({A}, {W2}) -> {H}
  func.return %h : {H}
}}
"""
"""The transfer feeds the receiving stage's matmul: the gather pipeline-p2p makes there is tuned
too, and overlapped with that matmul."""


@pytest.mark.parametrize("mesh", [(2, 4), (2, 3), (3, 2)])
@pytest.mark.parametrize("text", [TWO_PARTIALS, GATHERED, GATHERED_ONLY_SENT, SENT_AND_KEPT, FEEDS])
def test_autotuned_transfers_compute_the_same(
    check_shards: Callable, optimize: Callable, tmp_path: Path, text: str, mesh: tuple[int, int]
) -> None:
    reference, tuned = tuned_and_checked(check_shards, optimize, tmp_path, text, mesh)
    assert sends_slices(reference, tuned, mesh[1])
    assert "autotune" not in str(tuned) and "tag" not in str(tuned)


def table(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, list[str]]:
    """The candidates autotune printed for each collective (pp=2 x tp=4), in order, the choice
    last; a refused one marked so."""
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    apply_pipeline(load_program(text), tune(tmp_path, 2, 4, " print=true"))
    rows: dict[str, list[str]] = {}
    for line in capsys.readouterr().err.splitlines()[1:]:
        m = re.match(r"\s*(%\w+(?: gather)?)\s+(.*?)(\s+[\d,]+ ns|\s+refused)?$", line)
        assert m, line
        refused = " refused" if m.group(3) and "refused" in m.group(3) else ""
        rows.setdefault(m.group(1), []).append(m.group(2) + refused)
    return rows


def test_shift_is_tuned_first_and_its_reduce_scatters_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shift's rows come before the all-reduces feeding it; pipeline-p2p made them
    reduce-scatters, which get the reduce-scatter's rows (no split) under their old labels."""
    rows = table(TWO_PARTIALS, tmp_path, capsys)
    assert list(rows) == ["%n", "%s", "%t", "%n gather"]
    assert rows["%n"] == ["leave", "pipeline-p2p", "-> pipeline-p2p"]
    # the gather pipeline-p2p made in the receiving stage is tuned last; nothing there to
    # overlap it with (the function returns it)
    assert rows["%n gather"] == ["leave", "overlap 1 refused", "overlap 2 refused", "-> leave"]
    for label in ("%s", "%t"):
        assert rows[label][:-1] == [
            "leave",
            "fused",
            "overlap 1",
            "fused, overlap 1",
            "overlap 2",
            "fused, overlap 2",
        ]


def test_a_gather_moved_past_the_shift_is_tuned_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gather that only the shift read moves into the receiving stage with its number: it is
    tuned after the shift, beside the matmul it now feeds."""
    rows = table(GATHERED_ONLY_SENT, tmp_path, capsys)
    assert list(rows) == ["%n", "%g"]
    assert rows["%n"][-1] == "-> pipeline-p2p"
    assert rows["%g"][:-1] == ["leave", "overlap 1", "overlap 2"]


def test_a_gather_kept_for_the_sending_stage_keeps_its_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sending stage still reads the gather: it stays and is tuned after the shift (no
    matmul reads it there, so it has no overlap); the gather pipeline-p2p made in the receiving
    stage, which feeds a matmul, is tuned in its turn (a number of its own)."""
    rows = table(GATHERED, tmp_path, capsys)
    assert list(rows) == ["%n", "%g", "%n gather"]
    assert rows["%n"][-1] == "-> pipeline-p2p"
    assert rows["%g"] == ["leave", "overlap 1 refused", "overlap 2 refused", "-> leave"]
    assert rows["%n gather"][:-1] == ["leave", "overlap 1", "overlap 2"]


def test_the_gather_of_a_split_all_reduce_is_overlapped_with_the_matmul_it_feeds(
    check_shards: Callable, optimize: Callable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pipeline-p2p splits the all-reduce feeding the transfer: the reduce-scatter is tuned
    under the all-reduce's label, then the gather it made in the receiving stage, which feeds
    the next matmul there; on this machine overlapping them pays."""
    rows = table(FEEDS, tmp_path, capsys)
    assert list(rows) == ["%n", "%s", "%n gather"]
    assert rows["%n gather"] == ["leave", "overlap 1", "overlap 2", "-> overlap 2"]
    _, tuned = tuned_and_checked(check_shards, optimize, tmp_path, FEEDS, (2, 4))
    gathers = [o for o in tuned.walk() if isinstance(o, coll.AllGatherOp)]
    assert len(gathers) == 2 and all(g.parent_op().name == "sched.execute" for g in gathers)


def test_the_users_tags_follow_the_collectives_made_from_them(tmp_path: Path) -> None:
    """Tags the user gave the transfer and the all-reduce name what autotune made of them, as
    the passes run by hand with those tags name them: the rebuilt shift keeps `boundary`, the
    gather made in the receiving stage is `boundary.ag`, the reduce-scatter the all-reduce
    became is `ar.rs`, and the overlapped chunks derive from those (autotune's own temporary
    tags are gone). The tagged program still computes what it did."""
    text = FEEDS.replace(
        f"over [tp] : {P} -> {A}", f'over [tp] {{tag = "ar"}} : {P} -> {A}'
    ).replace(
        f"coll.shift %s over [pp] by 1 : {A}",
        f'coll.shift %s over [pp] by 1 {{tag = "boundary"}} : {A}',
    )
    assert text.count("tag =") == 2
    pipeline = tune(tmp_path, 2, 4)
    report = ccopt.check_pipeline(text, pipeline, mesh="pp=2,tp=4", seed=3)
    assert report.ok
    from ccopt.passes.common import tag_of
    from ccopt.passes.pipeline import apply_pipeline
    from ccopt.program import load_program

    tags: dict[str, set[str]] = {}
    for o in apply_pipeline(load_program(text), pipeline).walk():
        if (t := tag_of(o)) is not None:
            tags.setdefault(o.name, set()).add(t)
    assert tags["coll.shift"] == {"boundary"}
    assert tags["coll.reduce_scatter"] == {"ar.rs"}
    assert tags["coll.all_gather"] == {"boundary.ag"}
    assert tags["sched.execute"] == {"boundary.ag.chunk0", "boundary.ag.chunk1"}
    assert not [t for ts in tags.values() for t in ts if "autotune" in t]
