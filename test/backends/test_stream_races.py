"""No example under any schedule leaves a GPU race between its streams: storage written on one
stream and touched on another always has stream order and events between the two accesses
(`ccopt.streams.check_stream_races`, the happens-before analysis memory planning uses). The
CPU harness can only catch a race its two schedules happen to expose; this check covers every
interleaving a GPU may choose."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cuda import CASES, lowered
from xdsl.dialects import func

from ccopt.diagnostics import OpError
from ccopt.dialects import kernel as k
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program
from ccopt.streams import check_stream_races

ROOT = Path(__file__).resolve().parents[2]


def functions(module) -> list[func.FuncOp]:  # noqa: ANN001
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


@pytest.mark.parametrize("memory", ["plan-memory", ""], ids=["planned", "unplanned"])
@pytest.mark.parametrize(("name", "schedule"), CASES)
def test_no_storage_is_shared_between_streams_without_an_event(
    name: str, schedule: str, memory: str
) -> None:
    """Planned, buffers whose lives do not overlap share workspace bytes: a reuse on another
    stream needs its event too."""
    module = lowered(name, schedule, memory=memory)
    for f in functions(module):
        check_stream_races(f)


def test_the_zoo_has_no_stream_races() -> None:
    module = load_program(ROOT / "test" / "backends" / "zoo.mlir")
    run_pipeline(module, "convert-to-kernel,plan-memory")
    for f in functions(module):
        check_stream_races(f)


def overlapped():  # noqa: ANN201
    module = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    bind_mesh(module, "tp=2")
    run_pipeline(module, "overlap{chunks=2},convert-to-kernel,plan-memory")
    (f,) = functions(module)
    return f


@pytest.mark.parametrize("which", [0, -1], ids=["first-wait", "last-wait"])
def test_a_missing_stream_wait_is_a_race(which: int) -> None:
    """Without the communication stream's wait for a chunk's gemm, its collective may read the
    chunk before it is written; without the compute stream's wait for a collective, the
    result is read before it arrives."""
    f = overlapped()
    check_stream_races(f)
    waits = [op for op in f.walk() if isinstance(op, k.EventWaitOp | k.StreamWaitOp)]
    assert len(waits) >= 2
    waits[which].detach()
    waits[which].erase()
    with pytest.raises(OpError, match="with no event ordering the two"):
        check_stream_races(f)


def test_an_op_moved_to_another_stream_is_a_race() -> None:
    """The first kernel after the chunks' join moved to the communication stream: it then
    reads the join while the compute stream may still be writing it."""
    f = overlapped()
    kernels = [op for op in f.walk() if isinstance(op, k.ElementwiseOp)]
    kernels[0].properties["stream"] = k.IntegerAttr(1, k.i64)
    with pytest.raises(OpError, match="on stream 1"):
        check_stream_races(f)
