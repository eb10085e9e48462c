"""convert-to-kernel's waits: a stream runs in order, so one wait for its latest event stands for
the waits for its earlier ones (`Lowering.wait`). Over random joins - regions on two
communication streams, awaited in any order, with work between some awaits and none between
others - the kernel-level program has no race between streams (`check_stream_races`, every
interleaving a GPU may choose), computes what the scheduled program computes on every rank, and
waits at most once per stream for what it awaits together; a region that depends on an
earlier one of its own stream waits for nothing of it; and a record whose one wait follows it
with nothing issued on its stream in between is one `kernel.stream_wait`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

import ccopt
from ccopt.dialects import kernel as k
from ccopt.passes.convert_to_kernel import pair_stream_waits
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program
from ccopt.streams import StreamOrder, buffer_lives, check_stream_races, stream_of

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


def waited_for(op: object) -> int | None:
    """The stream whose work a wait (an event wait or a stream wait) waits for, else None."""
    if isinstance(op, k.StreamWaitOp):
        return op.on_index()
    if isinstance(op, k.EventWaitOp):
        return op.event.owner.properties["stream"].value.data  # type: ignore[union-attr]
    return None


def assert_waits_minimal(ops: list) -> None:  # noqa: ANN001
    """No two waits in a row of one stream for one stream's work, none for its own stream, no
    record that nothing waits for, and no record whose one wait could be a stream wait."""
    for a, b in zip(ops, ops[1:], strict=False):
        if waited_for(a) is not None and waited_for(a) == waited_for(b):
            assert stream_of(a) != stream_of(b)
    for op in ops:
        assert waited_for(op) is None or waited_for(op) != stream_of(op)
    assert all(op.event.uses for op in ops if isinstance(op, k.EventRecordOp))  # all waited for
    assert_records_unpairable(ops)


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
    assert_waits_minimal(list(f.body.blocks[0].ops))


def test_awaits_together_wait_once() -> None:
    """Five regions on one stream awaited together (overlap's join): one wait, for the last,
    and no event: each wait follows what it waits for."""
    module = load_program(join_program([1] * 5, [0, 1, 2, 3, 4], [False] * 5))
    run_pipeline(module, "convert-to-kernel")
    waits = [op for op in module.walk() if waited_for(op) is not None]
    assert [stream_of(w) for w in waits].count(0) == 1
    assert all(isinstance(w, k.StreamWaitOp) for w in waits)


BUFFER = "!kernel.buffer<4xf32, @t[R]>"


@st.composite
def stream_programs(draw: st.DrawFn) -> str:
    """A kernel-level function of fills on streams 0-2, event records, waits (each on a stream
    other than its event's) for events recorded earlier, some waited for twice, and stream
    waits."""
    lines, events = [], []  # events: (name, recording stream)
    for _ in range(draw(st.integers(1, 14))):
        step = draw(st.sampled_from(["work", "work", "record", "wait", "stream_wait"]))
        if step == "stream_wait":
            on, stream = draw(st.permutations(range(3)))[:2]
            lines.append(f"  kernel.stream_wait for {on} stream {stream}")
        elif step == "wait" and events:
            name, on = draw(st.sampled_from(events))
            stream = draw(st.sampled_from([s for s in range(3) if s != on]))
            lines.append(f"  kernel.event_wait {name} stream {stream}")
        elif step == "record":
            name = f"%e{len(events)}"
            stream = draw(st.integers(0, 2))
            events.append((name, stream))
            lines.append(f"  {name} = kernel.event_record stream {stream}")
        else:
            stream = draw(st.integers(0, 2))
            lines.append(f"  kernel.fill 1.0 -> %o stream {stream} : {BUFFER}")
    body = "\n".join(lines)
    return f"dtensor.mesh @t [tp=2]\nfunc.func @f(%o: {BUFFER}) {{\n{body}\n  func.return\n}}\n"


def happens_before(block, work: list) -> list[list[bool]]:  # noqa: ANN001
    """For every two fills, whether the first surely completes before the second starts."""
    order = StreamOrder(block.ops)
    _, issue = buffer_lives(block)
    for op in block.ops:  # buffer_lives's clocks are StreamOrder's, stream waits included
        if stream_of(op) is not None:
            s, index = order.place[op]
            assert issue.clock(s, index) == order.clock(op)
    return [[a is not b and order.before(*order.place[a], b) for b in work] for a in work]


@settings(max_examples=200, deadline=None)
@given(stream_programs())
def test_stream_waits_keep_the_order_of_the_work(text: str) -> None:
    """Pairing records with their one wait (`pair_stream_waits`) leaves every fill ordered
    after exactly the fills it was ordered after, and no pair that could be paired."""
    module = load_program(text)
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    block = f.body.blocks[0]
    work = [op for op in block.ops if isinstance(op, k.FillKernelOp)]
    before = happens_before(block, work)
    pair_stream_waits(block)
    assert happens_before(block, work) == before
    assert_records_unpairable(list(block.ops))


def assert_records_unpairable(ops: list) -> None:  # noqa: ANN001
    """Every record left that one wait reads has work on its stream before that wait."""
    for i, record in enumerate(ops):
        uses = list(record.event.uses) if isinstance(record, k.EventRecordOp) else []
        if len(uses) == 1:
            between = ops[i + 1 : ops.index(uses[0].operation)]
            assert any(stream_of(op) == record.stream_index() for op in between)
