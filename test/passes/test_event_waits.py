"""convert-to-kernel's waits: a stream runs in order, so one wait for its latest event stands for
the waits for its earlier ones (`Lowering.wait`). Over random joins - regions on two
communication streams, awaited in any order, with work between some awaits and none between
others - the kernel-level program has no race between streams (`check_stream_races`, every
interleaving a GPU may choose), computes what the scheduled program computes on every rank, and
waits at most once per stream for what it awaits together; a region that depends on an
earlier one of its own stream waits for nothing of it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

import ccopt
from ccopt.dialects import kernel as k
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.streams import check_stream_races

P = "!dtensor.tensor<4x8xf32, @tp[P(sum)]>"
R = "!dtensor.tensor<4x8xf32, @tp[R]>"


def join_program(
    streams: list[int],
    order: list[int],
    work_after: list[bool],
    deps: list[int | None] | None = None,
) -> str:
    """Region i all-reduces argument i on stream `streams[i]`, after region `deps[i]` (an
    earlier one) where that is given; the awaits follow `order`, and an add folds each awaited
    value into the sum right after its await when `work_after` says so, else at the end."""
    lines = []
    for i, s in enumerate(streams):
        dep = deps[i] if deps else None
        after = f" deps(%t{dep})" if dep is not None else ""
        lines += [
            f"  %t{i}, %f{i} = sched.execute stream {s}{after} ins(%a{i}) : ({P}) -> !sched.future<{R}> {{",
            f"  ^bb0(%x: {P}):",
            f"    %s = coll.all_reduce sum %x over [tp] : {P} -> {R}",
            f"    sched.yield %s : {R}",
            "  }",
        ]
    acc, pending = None, []
    for i, now in zip(order, work_after, strict=True):
        lines.append(f"  %v{i} = sched.await %f{i} : !sched.future<{R}> -> {R}")
        pending.append(f"%v{i}")
        if now or i == order[-1]:
            for v in pending:
                if acc is None:
                    acc = v
                    continue
                lines.append(f"  %acc{v[1:]} = dtensor.add {acc}, {v} : ({R}, {R}) -> {R}")
                acc = f"%acc{v[1:]}"
            pending = []
    args = ", ".join(f"%a{i}: {P}" for i in range(len(streams)))
    body = "\n".join(lines)
    return f"dtensor.mesh @tp [tp=2]\nfunc.func @join({args}) -> {R} {{\n{body}\n  func.return {acc} : {R}\n}}\n"


Join = tuple[list[int], list[int], list[bool], list[int | None]]


@st.composite
def joins(draw: st.DrawFn) -> Join:
    n = draw(st.integers(1, 5))
    streams = draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    work_after = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    deps = [draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None for i in range(n)]
    return streams, list(order), work_after, deps


@settings(max_examples=40, deadline=None)
@given(joins())
def test_merged_waits_leave_no_race_and_keep_the_values(join: Join) -> None:
    text = join_program(*join)
    report = ccopt.check_pipeline(text, "convert-to-kernel,plan-memory", entry="join", seed=3)
    assert report.ok, report.comparisons
    module = load_program(text)
    run_pipeline(module, "convert-to-kernel,plan-memory")
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    check_stream_races(f)
    ops = list(f.body.blocks[0].ops)
    for a, b in zip(ops, ops[1:], strict=False):  # no two waits in a row for one stream's events
        if isinstance(a, k.EventWaitOp) and isinstance(b, k.EventWaitOp):
            assert a.event.owner.properties["stream"] != b.event.owner.properties["stream"]  # type: ignore[union-attr]
    records = [op for op in ops if isinstance(op, k.EventRecordOp)]
    assert all(r.event.uses for r in records)  # every record left is waited for
    for wait in (op for op in ops if isinstance(op, k.EventWaitOp)):  # never for its own stream
        assert wait.event.owner.properties["stream"] != wait.properties["stream"]  # type: ignore[union-attr]


def test_awaits_together_wait_once() -> None:
    """Five regions on one stream awaited together (overlap's join): one wait, for the last."""
    module = load_program(join_program([1] * 5, [0, 1, 2, 3, 4], [False] * 5))
    run_pipeline(module, "convert-to-kernel")
    waits = [op for op in module.walk() if isinstance(op, k.EventWaitOp)]
    assert [w.properties["stream"].value.data for w in waits].count(0) == 1  # type: ignore[attr-defined]
